#!/usr/bin/env bash
# `npm test`: type-check, bring up the local stack (unless MONGO_URL and KAFKA_BROKERS name real
# servers), run every test, and stop what this script started, whatever happens.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

npx tsc --noEmit
npm run lint
# The admin console (type-checked by its own tsconfig while it builds) and the browser that
# test/e2e drives: Debian's Chromium, installed when missing.
node scripts/build-console.cjs
bash scripts/browser.sh

source scripts/lib/local-stack.sh
trap stop_local_stack EXIT
use_local_stack

npx jest "$@"
