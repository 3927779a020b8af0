#!/usr/bin/env bash
# `npm test`: every test of the project, as CI runs it (.ci/run is `npm ci` and this):
#   1. type-check, lint, the production build (`npm run build`, what the Dockerfile runs), the
#      admin console and the browser test/e2e drives (Debian's Chromium, installed when missing),
#      and the Python environments the tests run (cached in ~/.cache/course-access-groups/: the
#      real Open edX producer's, the LMS plugin's on 3.11 and 3.12, the Tutor plugin's for Tutor 20,
#      21 and 22)
#   2. the release (`npm run release`: release/<version>/), made once; every later step takes its
#      artifacts from RELEASE_DIR (the Tutor test its Tutor plugin's wheel)
#   3. the local stack (unless MONGO_URL and KAFKA_BROKERS name real servers; SCHEMA_REGISTRY_URL
#      likewise for the schema registry), started once for everything below and stopped at the end,
#      whatever happens
#   4. Jest: test/unit, test/integration, test/e2e (ordered by the durations the last run
#      measured: scripts/jest-sequencer.cjs, ~/.cache/course-access-groups/jest)
#   5. the tests of the release's artifacts: `npm run test:k8s` (the packaged chart installed on a
#      real control plane) and `npm run test:release` (the wheels in fresh Python environments)
#      beside Jest (they share nothing with it but the CPU and the stack; their output held back
#      until the end), then `npm run test:container` (the image archive loaded and run, and the
#      image built from the context each of Tutor 20, 21 and 22 rendered)
# No container engine (exit 77 from the release or the image's test): a loud warning saying what
# was NOT tested, last; the run does not fail for it.
#
# The fast path, for developers: `npm test -- <jest arguments>` (e.g. `npm test --
# test/integration/memberships.test.ts`) runs step 1 without the production build, the stack and
# Jest with those arguments only: no release, no artifact tests. `npm run test:jest` does the same
# for every Jest file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
started=$SECONDS
say() { echo "[test] $*" >&2; }

fast=0
if [[ ${1:-} == --jest ]]; then
  fast=1
  shift
elif (($# > 0)); then
  fast=1
fi

npx tsc --noEmit
npm run lint
if [[ $fast == 0 ]]; then
  npm run build # tsc -p tsconfig.build.json and the console, as the Dockerfile builds them
else
  # The admin console (type-checked by its own tsconfig while it builds), for test/e2e.
  node scripts/build-console.cjs
fi
bash scripts/browser.sh
# The real Open edX event bus producer (Python 3.12, from PyPI, cached) that
# test/integration/openedx-producer.test.ts runs.
OPENEDX_PRODUCER_PYTHON="$(bash scripts/openedx-producer.sh)"
export OPENEDX_PRODUCER_PYTHON
# The Open edX LMS plugin's pytest environments (Python 3.11 and 3.12, from PyPI, cached) that
# test/integration/openedx-plugin.test.ts runs against the real service.
bash scripts/openedx-plugin.sh 3.11 >/dev/null
bash scripts/openedx-plugin.sh 3.12 >/dev/null
# The stand-in LMS OAuth2 provider (Python 3.11: Django 4.2, django-oauth-toolkit 1.7.1, cached)
# of the console's sign-in tests (test/lms-oauth).
LMS_OAUTH_PYTHON="$(bash scripts/lms-oauth.sh)"
export LMS_OAUTH_PYTHON
# The Tutor plugin's test environments (Python 3.12, the real tutor 20, 21 and 22; Debian's
# docker-compose when missing) that test/integration/openedx-plugin-tutor.test.ts runs.
for tutor in 20 21 22; do bash scripts/tutor-plugin.sh "$tutor" >/dev/null; done
# The LMS's OAuth2 provider at edx-platform's pins (Python 3.11) that the same test runs the Tutor
# init task's create_dot_application line on.
bash scripts/tutor-lms-oauth.sh >/dev/null

source scripts/lib/local-stack.sh
background=()
logs=()
cleanup() {
  local status=$?
  # An artifact test still running (this run failed or was interrupted): stopped with everything it
  # started, by its process group (setsid below).
  local pid
  for pid in "${background[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  for pid in "${background[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -f "${logs[@]}"
  stop_local_stack
  [[ $fast == 1 ]] || say "finished in $((SECONDS - started)) s (exit $status)"
  exit "$status"
}
trap cleanup EXIT

if [[ $fast == 1 ]]; then
  use_local_stack
  npx jest "$@"
  exit 0
fi

# The release, once: the image build the container test used to make is its, and every later test
# takes its artifacts from RELEASE_DIR.
release=0
npm run release || release=$?
if [[ $release == 0 ]]; then
  RELEASE_DIR="$PWD/release/$(node scripts/release/versions.cjs check)"
  export RELEASE_DIR
elif [[ $release != 77 ]]; then
  exit "$release"
fi

use_local_stack

# The chart's test (etcd, a kube-apiserver and a node on ports of their own) and the wheels' (fresh
# Python environments) share nothing with Jest but the CPU and the stack, and mostly wait: they run
# beside Jest, their output held back until it is done. The image's test (a Docker engine of its
# own, image builds: CPU-bound) runs after Jest.
k8s_log="$(mktemp)" && logs+=("$k8s_log")
setsid npm run test:k8s >"$k8s_log" 2>&1 &
k8s_pid=$! && background+=("$k8s_pid")
wheels=77
if [[ $release == 0 ]]; then
  wheels_log="$(mktemp)" && logs+=("$wheels_log")
  setsid npm run test:release >"$wheels_log" 2>&1 &
  wheels_pid=$! && background+=("$wheels_pid")
fi

npx jest

container=0
npm run test:container || container=$?
k8s=0
wait "$k8s_pid" || k8s=$?
cat "$k8s_log"
if [[ $release == 0 ]]; then
  wheels=0
  wait "$wheels_pid" || wheels=$?
  cat "$wheels_log"
fi
background=()

if [[ $release == 77 ]]; then
  # Exit 77: no container engine for the image, so no release and none of its tests.
  say "################################################################"
  say "WARNING: the release was NOT made (no container engine could be"
  say "installed): its wheels, image archive and packaged chart were"
  say "NOT tested; the chart was tested from its folder."
  say "################################################################"
elif [[ $wheels != 0 ]]; then
  exit "$wheels"
fi
if [[ $container == 77 ]]; then
  # Exit 77: no container engine could be installed here. Said loudly, and last.
  say "################################################################"
  say "WARNING: the container test was SKIPPED: no container engine"
  say "could be installed on this machine. The image was NOT built or run."
  say "################################################################"
elif [[ $container != 0 ]]; then
  exit "$container"
fi
[[ $k8s == 0 || $k8s == 77 ]] || exit "$k8s" # 77: steps 1-2 passed, no node here for step 3 (the script says so loudly)
