# The servers a test run talks to (sourced by scripts/test.sh and scripts/container/test.sh).
# `use_local_stack` exports MONGO_URL and KAFKA_BROKERS: those given (real servers), else the
# local stack on its ports (STACK_MONGO_PORT, STACK_KAFKA_PORT), started when nothing answers
# there; `stop_local_stack` stops it again only if `use_local_stack` started it.

started_stack=0

use_local_stack() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  if [[ -n "${MONGO_URL:-}" && -n "${KAFKA_BROKERS:-}" ]]; then return 0; fi
  export MONGO_URL="mongodb://127.0.0.1:${STACK_MONGO_PORT:-27017}/"
  export KAFKA_BROKERS="127.0.0.1:${STACK_KAFKA_PORT:-9092}"
  # A stack already answering on those ports (started by `npm run dev`, or from another clone)
  # is used as it is, and left running.
  if node "$root/scripts/ping-mongo.cjs" "$MONGO_URL" && node "$root/scripts/ping-kafka.cjs" "$KAFKA_BROKERS"; then
    echo "[stack] using the stack already running on $MONGO_URL and $KAFKA_BROKERS" >&2
  else
    # Set first: a start that fails half-way still has its half stopped.
    started_stack=1
    # Unset for the script: with both set, stack.sh would take them for external servers.
    env -u MONGO_URL -u KAFKA_BROKERS bash "$root/scripts/stack.sh" start
  fi
}

stop_local_stack() {
  if [[ $started_stack == 1 ]]; then
    env -u MONGO_URL -u KAFKA_BROKERS bash "$(dirname "${BASH_SOURCE[0]}")/../stack.sh" stop || true
    started_stack=0
  fi
}
