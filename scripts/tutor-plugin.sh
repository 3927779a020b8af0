#!/usr/bin/env bash
# The Tutor plugin's test environment for one Tutor release line (integrations/tutor/requirements/
# test.txt: Tutor 21; test-tutor20.txt, test-tutor22.txt: Tutor 20 and 22; Python 3.12), made and
# cached by scripts/python-env.sh in ~/.cache/course-access-groups/tutor-plugin, and
# docker-compose (Debian's package; the tests check the rendered compose file with
# `docker-compose config -q`), installed when missing. Prints the environment's python.
#
#   bash scripts/tutor-plugin.sh [20|21|22]   create it if missing (21 by default); print its python
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v docker-compose >/dev/null; then
  if [[ $(id -u) != 0 ]]; then
    echo "[tutor-plugin] docker-compose is missing; install it with: sudo apt-get install -y docker-compose" >&2
    exit 1
  fi
  echo "[tutor-plugin] installing Debian's docker-compose package" >&2
  source "$ROOT/scripts/lib/apt.sh"
  apt_install docker-compose
fi
case "${1:-21}" in
  21) requirements=test.txt ;;
  20 | 22) requirements="test-tutor$1.txt" ;;
  *) echo "[tutor-plugin] Tutor $1 is not supported: 20, 21 or 22" >&2; exit 2 ;;
esac
exec bash "$ROOT/scripts/python-env.sh" tutor-plugin "$ROOT/integrations/tutor/requirements/$requirements" 3.12
