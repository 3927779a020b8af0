#!/usr/bin/env bash
# `npm run test:release`: the artifacts `npm run release` wrote (RELEASE_DIR, default
# release/<version>/), checked as a user receives them (test/release/): the checksums, the
# changelog's section, the packaged chart's and the image archive's versions, and both wheels
# installed into fresh Python 3.11 and 3.12 environments under setuptools 69.1.1, from a copy
# outside the repository, their other requirements from PyPI (uv: scripts/release/test-requirements.txt). `npm run test:container` (with
# RELEASE_DIR) runs the image archive, `npm run test:k8s` installs the chart (CAG_CHART_TGZ).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
version="$(node scripts/release/versions.cjs check)"
RELEASE_DIR="$(realpath -m "${RELEASE_DIR:-release/$version}")"
if [[ ! -f $RELEASE_DIR/SHA256SUMS ]]; then
  echo "[release] no release in $RELEASE_DIR: run 'npm run release' first" >&2
  exit 1
fi
RELEASE_PYTHON_311="$(bash scripts/python-env.sh --interpreter 3.11)"
RELEASE_PYTHON_312="$(bash scripts/python-env.sh --interpreter 3.12)"
RELEASE_UV="$(dirname "$(bash scripts/python-env.sh release-test scripts/release/test-requirements.txt 3.12)")/uv"
export RELEASE_DIR RELEASE_PYTHON_311 RELEASE_PYTHON_312 RELEASE_UV
npx jest --config jest.release.config.js
