#!/usr/bin/env bash
# The Python 3.12 virtual environment of the real Open edX event bus producer
# (edx-event-bus-kafka with openedx-events, scripts/openedx-producer/requirements.txt, every
# version pinned), made and cached by scripts/python-env.sh in
# ~/.cache/course-access-groups/openedx-producer ($OPENEDX_PRODUCER_CACHE). Prints its python.
#
#   bash scripts/openedx-producer.sh            create it if missing; print its python
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON_ENV_CACHE="${OPENEDX_PRODUCER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/course-access-groups/openedx-producer}" \
  exec bash "$ROOT/scripts/python-env.sh" openedx-producer "$ROOT/scripts/openedx-producer/requirements.txt"
