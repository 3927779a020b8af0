#!/usr/bin/env bash
# `npm test`: type-check, bring up the local stack (unless MONGO_URL and KAFKA_BROKERS name real
# servers; SCHEMA_REGISTRY_URL likewise for the schema registry), make the Python environments of
# the real Open edX producer and of the LMS plugin's tests, run every test, and stop what this
# script started, whatever happens.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

npx tsc --noEmit
npm run lint
# The admin console (type-checked by its own tsconfig while it builds) and the browser that
# test/e2e drives: Debian's Chromium, installed when missing.
node scripts/build-console.cjs
bash scripts/browser.sh
# The real Open edX event bus producer (Python 3.12, from PyPI, cached) that
# test/integration/openedx-producer.test.ts runs.
OPENEDX_PRODUCER_PYTHON="$(bash scripts/openedx-producer.sh)"
export OPENEDX_PRODUCER_PYTHON
# The Open edX LMS plugin's pytest environments (Python 3.11 and 3.12, from PyPI, cached) that
# test/integration/openedx-plugin.test.ts runs against the real service.
bash scripts/openedx-plugin.sh 3.11 >/dev/null
bash scripts/openedx-plugin.sh 3.12 >/dev/null
# The stand-in LMS OAuth2 provider (Python 3.11: Django 4.2, django-oauth-toolkit 1.7.1, cached)
# of the console's sign-in tests (test/lms-oauth).
LMS_OAUTH_PYTHON="$(bash scripts/lms-oauth.sh)"
export LMS_OAUTH_PYTHON
# The Tutor plugin's test environments (Python 3.12, the real tutor 20, 21 and 22; Debian's
# docker-compose when missing) that test/integration/openedx-plugin-tutor.test.ts runs.
for tutor in 20 21 22; do bash scripts/tutor-plugin.sh "$tutor" >/dev/null; done

source scripts/lib/local-stack.sh
trap stop_local_stack EXIT
use_local_stack

npx jest "$@"
