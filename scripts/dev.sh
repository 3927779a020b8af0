#!/usr/bin/env bash
# `npm run dev`: start the local stack (installing it the first time) and the service on
# port 8000 with a development JWT secret. Ctrl-C stops the service; `npm run stack:stop`
# stops the stack. It builds the admin console first and says how to open it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/stack.sh start
export MONGO_URL="${MONGO_URL:-mongodb://127.0.0.1:${STACK_MONGO_PORT:-27017}/}"
export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:${STACK_KAFKA_PORT:-9092}}"
export SCHEMA_REGISTRY_URL="${SCHEMA_REGISTRY_URL:-http://127.0.0.1:${STACK_REGISTRY_PORT:-8081}/apis/ccompat/v7}"
if [[ -z "${JWT_SECRET:-}${JWT_PUBLIC_KEY:-}${JWT_JWKS_URL:-}" ]]; then
  export JWT_SECRET="dev-secret-change-me-0123456789"
  echo "[dev] JWT_SECRET not set: using the development secret 'dev-secret-change-me-0123456789'" >&2
fi
node scripts/build-console.cjs
echo "[dev] admin console: http://127.0.0.1:${PORT:-8000}/course_access_groups/console/" >&2
echo "[dev] sign in with a development token (another terminal): npm run token -- --site-admin <org>   (or --staff); it prints the link" >&2
exec node --import tsx src/main.ts
