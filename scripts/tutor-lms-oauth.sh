#!/usr/bin/env bash
# The LMS's OAuth2 provider at edx-platform's pins (django-oauth-toolkit 1.7.1, django-mysql, Django;
# integrations/tutor/requirements/lms-oauth.txt), on Python 3.11 as in Tutor's openedx image, made
# and cached by scripts/python-env.sh in ~/.cache/course-access-groups/tutor-lms-oauth. The Tutor plugin's
# tests run the init task's create_dot_application line with it (integrations/tutor/tests/lms_oauth/).
# Prints its python.
#
#   bash scripts/tutor-lms-oauth.sh   create it if missing; print its python
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec bash "$ROOT/scripts/python-env.sh" tutor-lms-oauth "$ROOT/integrations/tutor/requirements/lms-oauth.txt" 3.11
