# The servers a test run talks to (sourced by scripts/test.sh and scripts/container/test.sh).
# `use_local_stack` exports MONGO_URL, KAFKA_BROKERS and SCHEMA_REGISTRY_URL: those given (real
# servers), else the local stack on its ports (STACK_MONGO_PORT, STACK_KAFKA_PORT,
# STACK_REGISTRY_PORT), started when nothing answers there and otherwise used as it is;
# `stop_local_stack` stops only what `use_local_stack` started. Trap it before calling
# `use_local_stack`: a start that fails half-way still has its half stopped.

started_stack=0
started_registry=0
LOCAL_STACK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

use_local_stack() {
  local root="$LOCAL_STACK_ROOT"
  if [[ -z "${MONGO_URL:-}" || -z "${KAFKA_BROKERS:-}" ]]; then
    export MONGO_URL="mongodb://127.0.0.1:${STACK_MONGO_PORT:-27017}/"
    export KAFKA_BROKERS="127.0.0.1:${STACK_KAFKA_PORT:-9092}"
    # A stack already answering on those ports (started by `npm run dev`, or from another clone)
    # is used as it is, and left running.
    if node "$root/scripts/ping-mongo.cjs" "$MONGO_URL" && node "$root/scripts/ping-kafka.cjs" "$KAFKA_BROKERS"; then
      echo "[test] using the stack already running on $MONGO_URL and $KAFKA_BROKERS" >&2
    else
      started_stack=1
      # Unset for the script: with both set, stack.sh would take them for external servers.
      env -u MONGO_URL -u KAFKA_BROKERS bash "$root/scripts/stack.sh" start
    fi
  fi
  if [[ -z "${SCHEMA_REGISTRY_URL:-}" ]]; then
    export SCHEMA_REGISTRY_URL="http://127.0.0.1:${STACK_REGISTRY_PORT:-8081}/apis/ccompat/v7"
    # `stack.sh start` above brought one up with the rest; else one answering there is used as it is.
    if node "$root/scripts/ping-registry.cjs" "$SCHEMA_REGISTRY_URL"; then
      [[ $started_stack == 1 ]] || echo "[test] using the schema registry already running at $SCHEMA_REGISTRY_URL" >&2
    else
      started_registry=1
      env -u SCHEMA_REGISTRY_URL bash "$root/scripts/stack.sh" start-registry
    fi
  fi
}

stop_local_stack() {
  if [[ $started_stack == 1 ]]; then env -u MONGO_URL -u KAFKA_BROKERS -u SCHEMA_REGISTRY_URL bash "$LOCAL_STACK_ROOT/scripts/stack.sh" stop || true; fi
  if [[ $started_registry == 1 ]]; then bash "$LOCAL_STACK_ROOT/scripts/stack.sh" stop-registry || true; fi
  started_stack=0
  started_registry=0
}
