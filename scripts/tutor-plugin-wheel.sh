#!/usr/bin/env bash
# The Tutor plugin's wheel, as the release builds it: scripts/stage-tutor-plugin.sh, then
# `python -m build --wheel` of a copy of integrations/tutor (a build in the source tree leaves
# build/ and *.egg-info behind) with the given Python (one with `build` and setuptools: the Tutor
# plugin's test environment). Prints the wheel's path.
#
#   bash scripts/tutor-plugin-wheel.sh PYTHON OUTDIR
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${1:?usage: tutor-plugin-wheel.sh PYTHON OUTDIR}"
OUTDIR="${2:?usage: tutor-plugin-wheel.sh PYTHON OUTDIR}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Staged and copied under a lock: tests that build the wheel at the same time (the Tutor test, and
# test:k8s beside test:container) would otherwise copy a folder another one is replacing.
(
  flock -w 300 9
  bash "$ROOT/scripts/stage-tutor-plugin.sh" >/dev/null
  cp -r "$ROOT/integrations/tutor" "$work/tutor"
) 9>"${TMPDIR:-/tmp}/cag-stage-tutor-plugin-$(echo "$ROOT" | sha256sum | cut -c1-8).lock"
rm -rf "$work/tutor/tests" "$work/tutor/build" "$work/tutor/dist" "$work/tutor/"*.egg-info
mkdir -p "$OUTDIR"
"$PYTHON" -m build --wheel --no-isolation --outdir "$OUTDIR" "$work/tutor" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
ls "$OUTDIR"/tutor_contrib_course_access_groups-*.whl | tail -n 1
