#!/usr/bin/env bash
# The virtual environment of the stand-in LMS OAuth2 provider (test/lms-oauth: Django 4.2,
# django-oauth-toolkit 1.7.1 as the LMS pins it, PyJWT, cryptography) on Python 3.11, made and
# cached by scripts/python-env.sh in ~/.cache/course-access-groups/lms-oauth. Prints its python.
#
#   bash scripts/lms-oauth.sh   create it if missing; print its python
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/python-env.sh" lms-oauth "$ROOT/test/lms-oauth/requirements.txt" 3.11
