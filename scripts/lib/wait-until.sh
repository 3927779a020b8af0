# wait_until LOG_DIR WHAT SECONDS COMMAND... (sourced): runs COMMAND every half second until it
# succeeds; after SECONDS, says WHAT did not come up and shows the end of LOG_DIR/WHAT.log.
# The caller defines `say`.

wait_until() {
  local logs="$1" what="$2" seconds="$3"
  shift 3
  for _ in $(seq 1 $((seconds * 2))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  say "$what did not come up within $seconds s; the end of its log:"
  tail -n 30 "$logs/$what.log" >&2 || true
  return 1
}
