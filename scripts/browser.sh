#!/usr/bin/env bash
# The browser the end-to-end tests drive (test/e2e): Debian's Chromium at /usr/bin/chromium,
# installed from the distribution's packages when it is missing (CI runs as root). Nothing is
# downloaded by Playwright itself: playwright-core only drives this binary.
set -euo pipefail
CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [[ -x "$CHROMIUM" ]]; then exit 0; fi
if [[ $(id -u) != 0 ]]; then
  echo "[browser] $CHROMIUM is missing; install it with: sudo apt-get install -y chromium" >&2
  exit 1
fi
echo "[browser] installing Debian's chromium package (for test/e2e)" >&2
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
apt_install chromium fonts-dejavu-core
"$CHROMIUM" --version >&2
