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
# The Tutor plugin's test environments (Python 3.12, the real tutor 20, 21 and 22; Debian's
# docker-compose when missing) that test/integration/openedx-plugin-tutor.test.ts runs.
for tutor in 20 21 22; do bash scripts/tutor-plugin.sh "$tutor" >/dev/null; done
# The LMS's OAuth2 provider at edx-platform's pins (Python 3.11) that the same test runs the Tutor
# init task's create_dot_application line on.
bash scripts/lms-oauth.sh >/dev/null

source scripts/lib/local-stack.sh
trap stop_local_stack EXIT
use_local_stack

npx jest "$@"
