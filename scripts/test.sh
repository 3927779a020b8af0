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

started_stack=0
if [[ -z "${MONGO_URL:-}" || -z "${KAFKA_BROKERS:-}" ]]; then
  export MONGO_URL="mongodb://127.0.0.1:${STACK_MONGO_PORT:-27017}/"
  export KAFKA_BROKERS="127.0.0.1:${STACK_KAFKA_PORT:-9092}"
  # A stack already answering on those ports (started by `npm run dev`, or from another clone)
  # is used as it is, and left running.
  if node scripts/ping-mongo.cjs "$MONGO_URL" && node scripts/ping-kafka.cjs "$KAFKA_BROKERS"; then
    echo "[test] using the stack already running on $MONGO_URL and $KAFKA_BROKERS" >&2
  else
    # Unset for the script: with both set, stack.sh would take them for external servers.
    env -u MONGO_URL -u KAFKA_BROKERS bash scripts/stack.sh start
    started_stack=1
  fi
fi
cleanup() { if [[ $started_stack == 1 ]]; then env -u MONGO_URL -u KAFKA_BROKERS bash scripts/stack.sh stop || true; fi; }
trap cleanup EXIT

npx jest "$@"
