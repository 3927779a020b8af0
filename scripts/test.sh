#!/usr/bin/env bash
# `npm test`: type-check, bring up the local stack (unless MONGO_URL and KAFKA_BROKERS name real
# servers; SCHEMA_REGISTRY_URL likewise for the schema registry), make the real Open edX
# producer's Python environment, run every test, and stop what this script started, whatever
# happens.
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

started_stack=0
started_registry=0
# Set before anything starts, so a start that fails half-way still stops what it started.
cleanup() {
  if [[ $started_stack == 1 ]]; then env -u MONGO_URL -u KAFKA_BROKERS -u SCHEMA_REGISTRY_URL bash scripts/stack.sh stop || true; fi
  if [[ $started_registry == 1 ]]; then bash scripts/stack.sh stop-registry || true; fi
}
trap cleanup EXIT
if [[ -z "${MONGO_URL:-}" || -z "${KAFKA_BROKERS:-}" ]]; then
  export MONGO_URL="mongodb://127.0.0.1:${STACK_MONGO_PORT:-27017}/"
  export KAFKA_BROKERS="127.0.0.1:${STACK_KAFKA_PORT:-9092}"
  # A stack already answering on those ports (started by `npm run dev`, or from another clone)
  # is used as it is, and left running.
  if node scripts/ping-mongo.cjs "$MONGO_URL" && node scripts/ping-kafka.cjs "$KAFKA_BROKERS"; then
    echo "[test] using the stack already running on $MONGO_URL and $KAFKA_BROKERS" >&2
  else
    # Unset for the script: with both set, stack.sh would take them for external servers.
    started_stack=1
    env -u MONGO_URL -u KAFKA_BROKERS bash scripts/stack.sh start
  fi
fi
if [[ -z "${SCHEMA_REGISTRY_URL:-}" ]]; then
  export SCHEMA_REGISTRY_URL="http://127.0.0.1:${STACK_REGISTRY_PORT:-8081}/apis/ccompat/v7"
  # `stack.sh start` above brought one up with the rest; else one answering there is used as it is.
  if node scripts/ping-registry.cjs "$SCHEMA_REGISTRY_URL"; then
    [[ $started_stack == 1 ]] || echo "[test] using the schema registry already running at $SCHEMA_REGISTRY_URL" >&2
  else
    started_registry=1
    env -u SCHEMA_REGISTRY_URL bash scripts/stack.sh start-registry
  fi
fi

npx jest "$@"
