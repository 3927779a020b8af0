# The project's own Docker engine, for the scripts that build or run the service's image
# (scripts/container/test.sh, scripts/release/release.sh); sourced after scripts/lib/apt.sh.
#   docker_engine_install   Debian's docker.io (with mmdebstrap and docker-compose) when missing;
#                           returns 77 where none can be installed (not root, or no apt-get)
#   docker_engine_start     one run at a time per cache (a lock), then a dockerd of our own: host
#                           networking only (no bridge, no iptables), images and build cache in
#                           $DOCKER_ENGINE_CACHE; sets DOCKER_HOST and defines `docker`
#   docker_engine_stop      dockerd, its containerd and its network namespace, by their pids
#   node_base_image         a Node.js 20 base made from Debian's packages (no image registry is
#                           reachable here), built once per content of its recipe; sets NODE_BASE_IMAGE
#   build_service_image TAG the Dockerfile built with NODE_IMAGE=$NODE_BASE_IMAGE
# The base is for building here only: the Dockerfile's default NODE_IMAGE stays the official
# node image, which a real release (the release workflow) builds from.

DOCKER_ENGINE_CACHE="${CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/course-access-groups/container}"
# Short (dockerd and its containerd put their sockets under it), and one per cache.
DOCKER_ENGINE_EXEC_ROOT="/run/cag-docker-$(echo "$DOCKER_ENGINE_CACHE" | sha256sum | cut -c1-8)"
DOCKER_ENGINE_PIDFILE="$DOCKER_ENGINE_EXEC_ROOT/dockerd.pid"
NODE_BASE_SUITE=trixie                # Debian 13: Node.js 20 (Debian 12's nodejs is 18)
NODE_BASE_PACKAGES=nodejs,ca-certificates
NODE_BASE_NPM_VERSION=10.8.2          # the npm the official node:20 images carry
# What Debian's slim images leave out too: manuals, documentation, translations.
NODE_BASE_SLIM=(--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/info/*')
DOCKER_ENGINE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

_engine_say() { echo "[docker-engine] $*" >&2; }

docker_engine_install() {
  if ! command -v dockerd >/dev/null || ! command -v mmdebstrap >/dev/null || ! command -v docker-compose >/dev/null; then
    if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
      _engine_say "no container engine here, and none can be installed (that needs root and apt-get)"
      return 77
    fi
    _engine_say "installing Debian's docker.io, mmdebstrap and docker-compose"
    apt_install docker.io mmdebstrap docker-compose
  fi
  if [[ $(id -u) != 0 ]]; then
    _engine_say "dockerd needs root"
    return 77
  fi
}

_engine_stop_pid() { # pidfile seconds
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
# network namespace it mounted. Only while this shell holds the lock (fd 9): another run's engine
# is never touched.
docker_engine_stop() {
  [[ -n ${DOCKER_ENGINE_LOCKED:-} ]] || return 0
  _engine_stop_pid "$DOCKER_ENGINE_PIDFILE" 30
  _engine_stop_pid "$DOCKER_ENGINE_EXEC_ROOT/containerd/containerd.pid" 10
  if mountpoint -q "$DOCKER_ENGINE_EXEC_ROOT/netns/default" 2>/dev/null; then umount "$DOCKER_ENGINE_EXEC_ROOT/netns/default" || true; fi
}

docker_engine_start() {
  mkdir -p "$DOCKER_ENGINE_CACHE/docker" "$DOCKER_ENGINE_CACHE/client" "$DOCKER_ENGINE_EXEC_ROOT"
  # One run at a time per cache (two dockerds cannot share a data root): a CI run or another
  # clone may hold it, so this waits.
  exec 9>"$DOCKER_ENGINE_CACHE/lock"
  local wait_s="${DOCKER_ENGINE_LOCK_WAIT_S:-900}"
  if ! flock -n 9; then
    _engine_say "waiting (up to $wait_s s) for another run's engine to finish with $DOCKER_ENGINE_CACHE/lock"
    flock -w "$wait_s" 9 || { _engine_say "another run has held $DOCKER_ENGINE_CACHE/lock for $wait_s s"; return 1; }
  fi
  DOCKER_ENGINE_LOCKED=1
  # The client of Debian's docker.io: another one on the PATH may speak a newer API than its dockerd.
  DOCKER_BIN=/usr/bin/docker
  [[ -x $DOCKER_BIN ]] || DOCKER_BIN="$(command -v docker)"
  # The legacy builder: BuildKit would fetch its Dockerfile frontend from a registry.
  export DOCKER_HOST="unix://$DOCKER_ENGINE_EXEC_ROOT/docker.sock" DOCKER_CONFIG="$DOCKER_ENGINE_CACHE/client" DOCKER_BUILDKIT=0
  # A dockerd left by a run that was killed (this run holds the lock, so it is not another's).
  docker_engine_stop
  dockerd --data-root "$DOCKER_ENGINE_CACHE/docker" --exec-root "$DOCKER_ENGINE_EXEC_ROOT" --pidfile "$DOCKER_ENGINE_PIDFILE" \
    -H "$DOCKER_HOST" --bridge=none --iptables=false --ip-masq=false --ip-forward=false >"$DOCKER_ENGINE_CACHE/dockerd.log" 2>&1 &
  local dockerd_pid=$!
  for _ in $(seq 1 120); do
    if docker info >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$dockerd_pid" 2>/dev/null; then _engine_say "dockerd exited:"; tail -n 20 "$DOCKER_ENGINE_CACHE/dockerd.log" >&2; return 1; fi
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { _engine_say "dockerd does not answer"; return 1; }
}

docker() { "$DOCKER_BIN" "$@"; }

node_base_image() {
  local npm_tarball="$DOCKER_ENGINE_CACHE/npm-$NODE_BASE_NPM_VERSION.tgz" key
  if [[ ! -f $npm_tarball ]]; then (cd "$DOCKER_ENGINE_CACHE" && npm pack "npm@$NODE_BASE_NPM_VERSION" --silent >/dev/null); fi
  key="$({
    echo "$NODE_BASE_SUITE $NODE_BASE_PACKAGES ${NODE_BASE_SLIM[*]}"
    cat "$DOCKER_ENGINE_ROOT/scripts/container/base-hook.sh" "$npm_tarball"
    cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true
  } | sha256sum | cut -c1-16)"
  NODE_BASE_IMAGE="course-access-groups-node-base:$key"
  if docker image inspect "$NODE_BASE_IMAGE" >/dev/null 2>&1; then
    _engine_say "Node.js base $NODE_BASE_IMAGE: cached"
    return 0
  fi
  _engine_say "building the Node.js base $NODE_BASE_IMAGE from Debian $NODE_BASE_SUITE"
  mmdebstrap --quiet --variant=minbase --include="$NODE_BASE_PACKAGES" "${NODE_BASE_SLIM[@]}" \
    --customize-hook="'$DOCKER_ENGINE_ROOT/scripts/container/base-hook.sh' \"\$1\" '$npm_tarball'" \
    "$NODE_BASE_SUITE" - http://deb.debian.org/debian |
    docker import --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' --change 'CMD ["node"]' - "$NODE_BASE_IMAGE" >/dev/null
  # Bases of earlier recipes.
  docker images --format '{{.Repository}}:{{.Tag}}' course-access-groups-node-base | grep -vx "$NODE_BASE_IMAGE" | xargs -r "$DOCKER_BIN" rmi >/dev/null || true
}

# build_service_image TAG [CONTEXT]: the Dockerfile of CONTEXT (default: the repository's root) on
# the base above.
build_service_image() {
  local tag="$1" context="${2:-$DOCKER_ENGINE_ROOT}" log="$DOCKER_ENGINE_CACHE/build.log" target
  _engine_say "building $tag from the Dockerfile (NODE_IMAGE=$NODE_BASE_IMAGE)"
  # The build stage is tagged so that its layers (npm ci with the dev dependencies) stay cached
  # when what earlier builds left is pruned.
  for target in build final; do
    local args=(-t "$tag")
    [[ $target == build ]] && args=(--target build -t "course-access-groups:build-stage")
    if ! (cd "$context" && docker build --network host --build-arg NODE_IMAGE="$NODE_BASE_IMAGE" "${args[@]}" . >"$log" 2>&1); then
      tail -n 40 "$log" >&2
      return 1
    fi
  done
  docker image prune -f >/dev/null
}
