#!/usr/bin/env bash
# `npm run test:container`: the project's image, built from its Dockerfile and run as an operator
# would run it (test/container/), against the local stack, on a Docker engine of this script's own.
#   1. the engine (scripts/lib/docker-engine.sh): Debian's docker.io, installed when missing, and a
#      dockerd of our own, its images and build cache in $CONTAINER_CACHE, stopped at the end
#   2. a Node.js 20 base made from Debian's packages (no image registry is reachable here), built
#      once per content of its recipe (scripts/container/base-hook.sh, the suite, npm, CA certificates)
#   3. the image: with RELEASE_DIR, the release's archive (release/<version>/, written by `npm run
#      release`) `docker load`ed; without it, `docker build` of the Dockerfile on that base
#   3b. the build context the real tutor renders from the Tutor plugin's wheel
#      (scripts/k8s/tutor-render.sh): built on that base, run until /readyz answers 200
#   4. the checks: jest, test/container/, running the image through testcontainers-node
# Where no container engine can be installed at all (not root, or no apt-get) it says so and
# exits 77, which .ci/run reports loudly.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/lib/apt.sh
source scripts/lib/local-stack.sh
source scripts/lib/docker-engine.sh

IMAGE=course-access-groups:test
started=$SECONDS

say() { echo "[container] $*" >&2; }
phase() { say "$* (at $((SECONDS - started)) s)"; }

status=0
docker_engine_install || status=$?
if [[ $status == 77 ]]; then
  say "SKIPPED: no container engine here, and none can be installed (that needs root and apt-get)."
  say "SKIPPED: the image was NOT built, NOT run and NOT checked."
  exit 77
elif [[ $status != 0 ]]; then
  exit "$status"
fi

cleanup() {
  local status=$?
  if [[ -S $DOCKER_ENGINE_EXEC_ROOT/docker.sock ]]; then
    docker ps -aq --filter label=course-access-groups.test | xargs -r "$DOCKER_BIN" rm -f >/dev/null 2>&1 || true
  fi
  docker_engine_stop
  stop_local_stack
  [[ -z ${TUTOR_ROOT:-} ]] || rm -rf "$TUTOR_ROOT"
  say "finished in $((SECONDS - started)) s"
  exit "$status"
}
trap cleanup EXIT

phase "starting dockerd (data in $DOCKER_ENGINE_CACHE/docker)"
docker_engine_start
node_base_image
if [[ -n ${RELEASE_DIR:-} ]]; then
  # The release's own archive (scripts/release/release.sh), not a build of ours: whatever the
  # engine holds under its tag is removed first, so what runs is what `docker load` read.
  version="$(node -p "require('./package.json').version")"
  archive="$RELEASE_DIR/course-access-groups-$version.oci.tar"
  [[ -f $archive ]] || { say "RELEASE_DIR names no image archive: $archive is missing"; exit 1; }
  IMAGE="course-access-groups:$version"
  docker image rm -f "$IMAGE" >/dev/null 2>&1 || true
  phase "loading $IMAGE from $archive"
  docker load -i "$archive" >&2
else
  phase "building $IMAGE from the Dockerfile"
  build_service_image "$IMAGE"
fi

# The build context as an operator's Tutor renders it from the Tutor plugin's wheel (the same
# files as the repository's, which the Tutor plugin's tests check by hash for Tutor 20, 21 and 22):
# built (from the same files, the engine's build cache makes it quick) and run until ready below.
phase "rendering the service's build context with Tutor (scripts/k8s/tutor-render.sh)"
TUTOR_ROOT="$(mktemp -d)"
bash scripts/k8s/tutor-render.sh "$TUTOR_ROOT"
TUTOR_IMAGE=course-access-groups:tutor-rendered
phase "building $TUTOR_IMAGE from the build context Tutor rendered"
build_service_image "$TUTOR_IMAGE" "$TUTOR_ROOT/env/plugins/course-access-groups/build/course-access-groups"

phase "running the image against the local stack (test/container)"
use_local_stack
# testcontainers runs the containers on this engine (DOCKER_HOST); its reaper, Ryuk, is an image
# that cannot be pulled here, so it is off and the test removes its containers itself. The host
# is named, or it would look for the bridge network's gateway, which this engine has none of.
TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 CAG_DOCKER="$DOCKER_BIN" CAG_IMAGE="$IMAGE" CAG_BASE_IMAGE="$NODE_BASE_IMAGE" \
  npx jest --config jest.container.config.js

# The image Tutor's build context gave, run as Tutor runs it (an api process, host network here)
# against the local stack: /readyz must answer 200 (database reachable, stored data current).
phase "running $TUTOR_IMAGE until /readyz answers 200"
tutor_port=18099
name="cag-tutor-rendered-$$"
docker run -d --name "$name" --label course-access-groups.test --network host --read-only \
  -e PORT="$tutor_port" -e SERVICE_ROLE=api -e MONGO_URL="$MONGO_URL" -e MONGO_DB="tutor_rendered_$$" \
  -e KAFKA_BROKERS="$KAFKA_BROKERS" -e JWT_SECRET=tutor-rendered-image-check-0123456789 "$TUTOR_IMAGE" >/dev/null
ready=0
for _ in $(seq 1 120); do
  if [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$tutor_port/readyz") == 200 ]]; then ready=1; break; fi
  sleep 0.5
done
if [[ $ready != 1 ]]; then
  say "$TUTOR_IMAGE never answered /readyz with 200; its log:"
  docker logs "$name" 2>&1 | tail -n 30 >&2
  exit 1
fi
say "$TUTOR_IMAGE: /readyz 200"
docker rm -f "$name" >/dev/null
