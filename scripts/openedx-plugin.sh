#!/usr/bin/env bash
# The Python 3.12 virtual environment of the Open edX LMS plugin's tests and benchmark
# (integrations/openedx/requirements/test.txt, every version pinned), made and cached by
# scripts/python-env.sh in ~/.cache/course-access-groups/openedx-plugin. Prints its python.
# The plugin itself is not installed there: its tests import it from integrations/openedx/src.
#
#   bash scripts/openedx-plugin.sh            create it if missing; print its python
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec bash "$ROOT/scripts/python-env.sh" openedx-plugin "$ROOT/integrations/openedx/requirements/test.txt"
