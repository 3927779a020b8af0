#!/usr/bin/env bash
# The Tutor plugin's test environment (integrations/tutor/requirements/test.txt, Python 3.12),
# made and cached by scripts/python-env.sh in ~/.cache/course-access-groups/tutor-plugin, and
# docker-compose (Debian's package; the tests check the rendered compose file with
# `docker-compose config -q`), installed when missing. Prints the environment's python.
#
#   bash scripts/tutor-plugin.sh        create it if missing; print its python
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
exec bash "$ROOT/scripts/python-env.sh" tutor-plugin "$ROOT/integrations/tutor/requirements/test.txt" 3.12
