#!/usr/bin/env bash
# The virtual environments of the Open edX LMS plugin's tests and benchmark, made and cached by
# scripts/python-env.sh in ~/.cache/course-access-groups/openedx-plugin. Prints its python.
#   3.12 (the default)  integrations/openedx/requirements/test.txt: the libraries' newest releases
#   3.11                integrations/openedx/requirements/lms.txt: the versions edx-platform pins,
#                       on the Python of Tutor's openedx image
# Beside each environment, wheels/ holds the setuptools Tutor pins for source builds, so the
# packaging test builds the plugin with build isolation and that setuptools without the network.
# The plugin itself is not installed there: its tests import it from integrations/openedx/src.
#
#   bash scripts/openedx-plugin.sh [3.11|3.12]   create it if missing; print its python
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${1:-3.12}"
case "$VERSION" in
  3.11) REQUIREMENTS="$ROOT/integrations/openedx/requirements/lms.txt" ;;
  3.12) REQUIREMENTS="$ROOT/integrations/openedx/requirements/test.txt" ;;
  *) echo "openedx-plugin.sh: 3.11 or 3.12, not '$VERSION'" >&2; exit 2 ;;
esac
# Tutor v21's pin for every package it builds from source (tests/test_plugin.py builds with it).
BUILD_SETUPTOOLS="setuptools==69.1.1"
python="$(bash "$ROOT/scripts/python-env.sh" openedx-plugin "$REQUIREMENTS" "$VERSION")"
wheels="$(dirname "$(dirname "$python")")/wheels"
if ! ls "$wheels"/packaging-*.whl "$wheels/${BUILD_SETUPTOOLS/==/-}-py3-none-any.whl" >/dev/null 2>&1; then
  "$python" -m pip download --quiet --disable-pip-version-check --dest "$wheels" "$BUILD_SETUPTOOLS" wheel >&2
fi
echo "$python"
