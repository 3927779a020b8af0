#!/usr/bin/env bash
# `npm run test:container`: the project's image, built from its Dockerfile and run as an operator
# would run it (test/container/), against the local stack, on a Docker engine of this script's own.
#   1. the engine (scripts/lib/docker-engine.sh): Debian's docker.io, installed when missing, and a
#      dockerd of our own, its images and build cache in $CONTAINER_CACHE, stopped at the end
#   2. a Node.js 20 base made from Debian's packages (no image registry is reachable here), built
#      once per content of its recipe (scripts/container/base-hook.sh, the suite, npm, CA certificates)
#   3. the image: with RELEASE_DIR, the release's archive (release/<version>/, written by `npm run
#      release`) `docker load`ed; without it, `docker build` of the Dockerfile on that base
#   3b. for each of Tutor 20, 21 and 22 (the real tutor from PyPI), the Tutor plugin's wheel (with
#      RELEASE_DIR the release's own, else one built as the release builds it) installed into a new
#      TUTOR_ROOT and `tutor config save` run (scripts/k8s/tutor-render.sh, in the background from
#      the start); after the checks of 4, the rendered compose files checked by `docker-compose
#      config -q`, and the image built from the build context that Tutor rendered, on that base,
#      run until /readyz answers 200
#   3c. the git source instead (COURSE_ACCESS_GROUPS_REPOSITORY): this repository's HEAD served by
#      `git daemon`, the Dockerfile Tutor 21 renders for it built (BuildKit's `ADD <git URL>` stage
#      stood in for by `git clone`: see below) and run until /readyz answers 200
#   4. the checks: jest, test/container/, running the image through testcontainers-node
# Where no container engine can be installed at all (not root, or no apt-get) it says so and
# exits 77, which `npm test` (scripts/test.sh) reports loudly.
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

renders=()
cleanup() {
  local status=$?
  if [[ -S $DOCKER_ENGINE_EXEC_ROOT/docker.sock ]]; then
    docker ps -aq --filter label=course-access-groups.test | xargs -r "$DOCKER_BIN" rm -f >/dev/null 2>&1 || true
  fi
  [[ -z ${GIT_DAEMON_PID:-} ]] || kill "$GIT_DAEMON_PID" 2>/dev/null || true
  local pid
  for pid in "${renders[@]}"; do kill "$pid" 2>/dev/null || true; done
  docker_engine_stop
  stop_local_stack
  [[ -z ${TUTOR_WORK:-} ]] || rm -rf "$TUTOR_WORK"
  say "finished in $((SECONDS - started)) s"
  exit "$status"
}
trap cleanup EXIT

# The build contexts as an operator's Tutor renders them from the Tutor plugin's wheel, one per
# Tutor release line, and one for the git source (this repository's HEAD, tagged in a bare clone
# served by git daemon on a free port): rendered in the background (tens of seconds each, tutor and Python alone) while the
# engine starts, the image loads and its checks run; built and run after those checks.
TUTORS=(20 21 22)
TUTOR_WORK="$(mktemp -d)"
git_port="$(node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); })")"
GIT_REPOSITORY="git://127.0.0.1:$git_port/course-access-groups.git"
git_base="$TUTOR_WORK/git"
git clone --quiet --bare "$PWD" "$git_base/course-access-groups.git"
git -C "$git_base/course-access-groups.git" tag cag-git-source HEAD
git daemon --reuseaddr --export-all --base-path="$git_base" --listen=127.0.0.1 --port="$git_port" "$git_base" 2>>"$TUTOR_WORK/git-daemon.log" &
GIT_DAEMON_PID=$!
for tutor in "${TUTORS[@]}" git; do
  if [[ $tutor == git ]]; then
    settings=("COURSE_ACCESS_GROUPS_REPOSITORY=$GIT_REPOSITORY" COURSE_ACCESS_GROUPS_REPOSITORY_VERSION=cag-git-source)
    release=21
  else
    settings=()
    release=$tutor
  fi
  TUTOR_RELEASE="$release" bash scripts/k8s/tutor-render.sh "$TUTOR_WORK/tutor-$tutor" "${settings[@]}" >"$TUTOR_WORK/render-$tutor.log" 2>&1 &
  renders+=($!)
done
phase "rendering with Tutor ${TUTORS[*]} (and Tutor 21 for the git source) in the background (scripts/k8s/tutor-render.sh)"

phase "starting dockerd (data in $DOCKER_ENGINE_CACHE/docker)"
docker_engine_start
node_base_image
if [[ -n ${RELEASE_DIR:-} ]]; then
  # The release's own archive (scripts/release/release.sh), not a build of ours: whatever the
  # engine holds under its tag is removed first, so what runs is what `docker load` read.
  version="$(node -p "require('./package.json').version")"
  archive="$RELEASE_DIR/course-access-groups-$version.docker.tar"
  [[ -f $archive ]] || { say "RELEASE_DIR names no image archive: $archive is missing"; exit 1; }
  IMAGE="course-access-groups:$version"
  docker image rm -f "$IMAGE" >/dev/null 2>&1 || true
  phase "loading $IMAGE from $archive"
  docker load -i "$archive" >&2
else
  phase "building $IMAGE from the Dockerfile"
  build_service_image "$IMAGE"
fi

phase "running the image against the local stack (test/container)"
use_local_stack
# testcontainers runs the containers on this engine (DOCKER_HOST); its reaper, Ryuk, is an image
# that cannot be pulled here, so it is off and the test removes its containers itself. The host
# is named, or it would look for the bridge network's gateway, which this engine has none of.
TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 CAG_DOCKER="$DOCKER_BIN" CAG_IMAGE="$IMAGE" CAG_BASE_IMAGE="$NODE_BASE_IMAGE" \
  npx jest --config jest.container.config.js

# What each Tutor rendered: its compose files checked, the service's image built from its build
# context (the same files as the image's, so the engine's cache builds it in seconds).
for i in "${!TUTORS[@]}"; do
  tutor="${TUTORS[$i]}" root="$TUTOR_WORK/tutor-${TUTORS[$i]}"
  wait "${renders[$i]}" || { say "Tutor $tutor did not render:"; cat "$TUTOR_WORK/render-$tutor.log" >&2; exit 1; }
  tail -n 1 "$TUTOR_WORK/render-$tutor.log" >&2
  (cd "$root/env/local" && docker-compose -f docker-compose.yml -f docker-compose.prod.yml config -q)
  phase "Tutor $tutor: building course-access-groups:tutor-$tutor from the build context it rendered"
  build_service_image "course-access-groups:tutor-$tutor" "$root/env/plugins/course-access-groups/build/course-access-groups"
done
RUN_TAGS=("${TUTORS[@]/#/tutor-}")

# The service's image from a git repository and version instead (COURSE_ACCESS_GROUPS_REPOSITORY,
# COURSE_ACCESS_GROUPS_REPOSITORY_VERSION): this repository's HEAD, tagged in a bare clone served
# by `git daemon` (started above), named to Tutor 21, which renders the carried Dockerfile with a first stage
# `ADD --keep-git-dir=false <repository>#<version> /` and every COPY reading that stage. That stage
# needs BuildKit's Dockerfile syntax 1.6 or later, fetched from a registry, which is not reachable
# here (Debian's docker.io 20.10 has an older one built in): it is stood in for by `git clone
# --branch` of the URL and version the rendered Dockerfile names, its .git removed as
# --keep-git-dir=false does, and the rendered Dockerfile is built without that stage from the
# checkout, its `COPY --from=<the stage>` lines copying from it as the build context (reading the
# stage, every COPY missed the engine's cache: 12 minutes of npm ci and tsc at a load of 50).
root="$TUTOR_WORK/tutor-git"
wait "${renders[3]}" || { say "Tutor 21 did not render the git source:"; cat "$TUTOR_WORK/render-git.log" >&2; exit 1; }
rendered="$root/env/plugins/course-access-groups/build/course-access-groups-git/Dockerfile"
repository="$(sed -n 's/^ARG COURSE_ACCESS_GROUPS_REPOSITORY=//p' "$rendered")"
ref="$(sed -n 's/^ARG COURSE_ACCESS_GROUPS_REPOSITORY_VERSION=//p' "$rendered")"
stage=course-access-groups-sources
add='ADD --keep-git-dir=false $COURSE_ACCESS_GROUPS_REPOSITORY#$COURSE_ACCESS_GROUPS_REPOSITORY_VERSION /'
if [[ $(grep -cxF "$add" "$rendered") != 1 || $repository != "$GIT_REPOSITORY" || $ref != cag-git-source ]] ||
  ! grep -q "^COPY --from=$stage src ./src$" "$rendered"; then
  say "the rendered git Dockerfile does not fetch $GIT_REPOSITORY#cag-git-source into the stage its COPYs read:"
  cat "$rendered" >&2
  exit 1
fi
for _ in $(seq 1 40); do git ls-remote "$repository" >/dev/null 2>&1 && break; sleep 0.25; done
checkout="$TUTOR_WORK/git-checkout"
git -c advice.detachedHead=false clone --quiet --depth 1 --branch "$ref" "$repository" "$checkout"
rm -rf "$checkout/.git"
awk -v stage="$stage" '
  $0 == "FROM scratch AS " stage { skip = 1; next }
  skip && /^FROM / { skip = 0 }
  skip { next }
  { sub("^COPY --from=" stage " ", "COPY "); print }' "$rendered" >"$checkout/Dockerfile"
phase "the git source: building course-access-groups:tutor-git from the Dockerfile Tutor rendered and $repository#$ref"
build_service_image course-access-groups:tutor-git "$checkout"
kill "$GIT_DAEMON_PID" 2>/dev/null || true
RUN_TAGS+=(tutor-git)

# The images Tutor's build contexts gave, run as Tutor runs them (an api process, host network
# here) against the local stack: /readyz must answer 200 (database reachable, stored data current).
tutor_port=18099
for tag in "${RUN_TAGS[@]}"; do
  image="course-access-groups:$tag"
  phase "running $image until /readyz answers 200"
  name="cag-$tag-$$"
  docker run -d --name "$name" --label course-access-groups.test --network host --read-only \
    -e PORT="$tutor_port" -e SERVICE_ROLE=api -e MONGO_URL="$MONGO_URL" -e MONGO_DB="tutor_rendered_${tag/-/_}_$$" \
    -e KAFKA_BROKERS="$KAFKA_BROKERS" -e JWT_SECRET=tutor-rendered-image-check-0123456789 "$image" >/dev/null
  ready=0
  for _ in $(seq 1 120); do
    if [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$tutor_port/readyz") == 200 ]]; then ready=1; break; fi
    sleep 0.5
  done
  if [[ $ready != 1 ]]; then
    say "$image never answered /readyz with 200; its log:"
    docker logs "$name" 2>&1 | tail -n 30 >&2
    exit 1
  fi
  say "$image (built from what Tutor rendered): /readyz 200"
  docker rm -f "$name" >/dev/null
done
