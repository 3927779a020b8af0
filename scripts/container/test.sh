#!/usr/bin/env bash
# `npm run test:container`: the project's image, built from its Dockerfile and run as an operator
# would run it (test/container/), against the local stack, on a Docker engine of this script's own.
#   1. the engine: Debian's docker.io (with mmdebstrap and docker-compose), installed when
#      missing, and a dockerd of our own: host networking only (no bridge, no iptables), its
#      images and build cache in $CONTAINER_CACHE, stopped by its pid at the end, whatever happens
#   2. a Node.js 20 base made from Debian's packages (no image registry is reachable here), built
#      once per content of its recipe (scripts/container/base-hook.sh, the suite, npm, CA certificates)
#   3. the image: `docker build` of the Dockerfile with NODE_IMAGE set to that base, from the build
#      context the real tutor renders from the Tutor plugin's wheel (scripts/k8s/tutor-render.sh)
#   4. the checks: jest, test/container/, running the image through testcontainers-node
# Where no container engine can be installed at all (not root, or no apt-get) it says so and
# exits 77, which .ci/run reports loudly.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="$PWD"
source scripts/lib/apt.sh
source scripts/lib/local-stack.sh

CACHE="${CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/course-access-groups/container}"
# Short (dockerd and its containerd put their sockets under it), and one per cache.
EXEC_ROOT="/run/cag-docker-$(echo "$CACHE" | sha256sum | cut -c1-8)"
SUITE=trixie                          # Debian 13: Node.js 20 (Debian 12's nodejs is 18)
BASE_PACKAGES=nodejs,ca-certificates
NPM_VERSION=10.8.2                    # the npm the official node:20 images carry
IMAGE=course-access-groups:test
# What Debian's slim images leave out too: manuals, documentation, translations.
SLIM=(--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/info/*')
started=$SECONDS

say() { echo "[container] $*" >&2; }
phase() { say "$* (at $((SECONDS - started)) s)"; }

if ! command -v dockerd >/dev/null || ! command -v mmdebstrap >/dev/null || ! command -v docker-compose >/dev/null; then
  if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
    say "SKIPPED: no container engine here, and none can be installed (that needs root and apt-get)."
    say "SKIPPED: the image was NOT built, NOT run and NOT checked."
    exit 77
  fi
  phase "installing Debian's docker.io, mmdebstrap and docker-compose"
  apt_install docker.io mmdebstrap docker-compose
fi
if [[ $(id -u) != 0 ]]; then
  say "SKIPPED: dockerd needs root; the image was NOT built, NOT run and NOT checked."
  exit 77
fi

mkdir -p "$CACHE/docker" "$CACHE/client" "$EXEC_ROOT"
# One run at a time per cache (two dockerds cannot share a data root).
exec 9>"$CACHE/lock"
flock -w 900 9 || { say "another container test has held $CACHE/lock for 15 minutes"; exit 1; }

# The client of Debian's docker.io: another one on the PATH may speak a newer API than its dockerd.
DOCKER_BIN=/usr/bin/docker
[[ -x $DOCKER_BIN ]] || DOCKER_BIN="$(command -v docker)"
docker() { "$DOCKER_BIN" "$@"; }
# The legacy builder: BuildKit would fetch its Dockerfile frontend from a registry.
export DOCKER_HOST="unix://$EXEC_ROOT/docker.sock" DOCKER_CONFIG="$CACHE/client" DOCKER_BUILDKIT=0
PIDFILE="$EXEC_ROOT/dockerd.pid"

stop_pid() { # pidfile seconds
  [[ -f $1 ]] || return 0
  local pid
  pid="$(cat "$1")"
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    local i
    for ((i = 0; i < $2 * 4; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$1"
}

# dockerd, then the containerd it started (only if dockerd could not stop it itself), and the
# network namespace it mounted.
stop_engine() {
  stop_pid "$PIDFILE" 30
  stop_pid "$EXEC_ROOT/containerd/containerd.pid" 10
  if mountpoint -q "$EXEC_ROOT/netns/default" 2>/dev/null; then umount "$EXEC_ROOT/netns/default" || true; fi
}

cleanup() {
  local status=$?
  if [[ -S $EXEC_ROOT/docker.sock ]]; then
    docker ps -aq --filter label=course-access-groups.test | xargs -r "$DOCKER_BIN" rm -f >/dev/null 2>&1 || true
  fi
  stop_engine
  stop_local_stack
  [[ -z ${TUTOR_ROOT:-} ]] || rm -rf "$TUTOR_ROOT"
  say "finished in $((SECONDS - started)) s"
  exit "$status"
}
trap cleanup EXIT

# A dockerd left by a run that was killed (this run holds the lock, so it is not another's).
stop_engine
phase "starting dockerd (data in $CACHE/docker)"
dockerd --data-root "$CACHE/docker" --exec-root "$EXEC_ROOT" --pidfile "$PIDFILE" -H "$DOCKER_HOST" \
  --bridge=none --iptables=false --ip-masq=false --ip-forward=false >"$CACHE/dockerd.log" 2>&1 &
dockerd_pid=$!
for _ in $(seq 1 120); do
  if docker info >/dev/null 2>&1; then break; fi
  if ! kill -0 "$dockerd_pid" 2>/dev/null; then say "dockerd exited:"; tail -n 20 "$CACHE/dockerd.log" >&2; exit 1; fi
  sleep 0.5
done
docker info >/dev/null 2>&1 || { say "dockerd does not answer"; exit 1; }

npm_tarball="$CACHE/npm-$NPM_VERSION.tgz"
if [[ ! -f $npm_tarball ]]; then (cd "$CACHE" && npm pack "npm@$NPM_VERSION" --silent >/dev/null); fi
key="$({
  echo "$SUITE $BASE_PACKAGES ${SLIM[*]}"
  cat scripts/container/base-hook.sh "$npm_tarball"
  cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true
} | sha256sum | cut -c1-16)"
BASE="course-access-groups-node-base:$key"
if docker image inspect "$BASE" >/dev/null 2>&1; then
  phase "Node.js base $BASE: cached"
else
  phase "building the Node.js base $BASE from Debian $SUITE"
  mmdebstrap --quiet --variant=minbase --include="$BASE_PACKAGES" "${SLIM[@]}" \
    --customize-hook="'$ROOT/scripts/container/base-hook.sh' \"\$1\" '$npm_tarball'" \
    "$SUITE" - http://deb.debian.org/debian |
    docker import --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' --change 'CMD ["node"]' - "$BASE" >/dev/null
  # Bases of earlier recipes.
  docker images --format '{{.Repository}}:{{.Tag}}' course-access-groups-node-base | grep -vx "$BASE" | xargs -r "$DOCKER_BIN" rmi >/dev/null || true
fi

# The build context as an operator's Tutor renders it from the Tutor plugin's wheel (the same
# files as the repository's, which the Tutor plugin's tests check by hash for Tutor 20, 21 and 22).
phase "rendering the service's build context with Tutor (scripts/k8s/tutor-render.sh)"
TUTOR_ROOT="$(mktemp -d)"
bash scripts/k8s/tutor-render.sh "$TUTOR_ROOT"
CONTEXT="$TUTOR_ROOT/env/plugins/course-access-groups/build/course-access-groups"

phase "building $IMAGE from the Dockerfile Tutor rendered (NODE_IMAGE=$BASE)"
build() {
  if ! docker build --network host --build-arg NODE_IMAGE="$BASE" "$@" "$CONTEXT" >"$CACHE/build.log" 2>&1; then
    tail -n 40 "$CACHE/build.log" >&2
    exit 1
  fi
}
# The build stage is tagged so that its layers (npm ci with the dev dependencies) stay cached
# when what earlier builds left is pruned.
build --target build -t "$IMAGE-build"
build -t "$IMAGE"
docker image prune -f >/dev/null

phase "running the image against the local stack (test/container)"
use_local_stack
# testcontainers runs the containers on this engine (DOCKER_HOST); its reaper, Ryuk, is an image
# that cannot be pulled here, so it is off and the test removes its containers itself. The host
# is named, or it would look for the bridge network's gateway, which this engine has none of.
TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 CAG_DOCKER="$DOCKER_BIN" CAG_IMAGE="$IMAGE" CAG_BASE_IMAGE="$BASE" \
  npx jest --config jest.container.config.js
