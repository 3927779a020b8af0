#!/usr/bin/env bash
# `npm run release`: every artifact of one version, written into release/<version>/ (git-ignored),
# the version being package.json's (scripts/release/versions.cjs keeps every other place equal):
#   course-access-groups-<version>.docker.tar            the service's image, for `docker load`
#   course-access-groups-<version>.tgz                the Helm chart (`helm package`)
#   course_access_groups_openedx-<version>-*.whl, course-access-groups-openedx-<version>.tar.gz
#                                                     the LMS plugin's wheel and sdist
#   tutor_contrib_course_access_groups-<version>-*.whl, tutor-contrib-course-access-groups-<version>.tar.gz
#                                                     the Tutor plugin's wheel and sdist
#   CHANGELOG.md                                      the version's section of CHANGELOG.md
#   SHA256SUMS                                        every file above (`sha256sum -c SHA256SUMS`)
# The image is built from the Dockerfile on the project's own Docker engine
# (scripts/lib/docker-engine.sh). NODE_IMAGE names its Node.js base: by default the base made from
# Debian's packages that the container test uses (no image registry is reachable here); the
# release workflow (.github/workflows/release.yml) passes the official node image instead.
# Where the workflow runs it: RELEASE_DOCKER=host uses the Docker engine already running (not one of
# the script's own) and HELM names a helm binary (else scripts/k8s/tools.sh builds one).
# Refuses (exit 1, nothing written) a version whose places disagree or that CHANGELOG.md has no
# section for. The whole folder is written anew, into a temporary folder renamed at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT="$PWD"
started=$SECONDS
say() { echo "[release] $*" >&2; }
phase() { say "$* (at $((SECONDS - started)) s)"; }

version="$(node scripts/release/versions.cjs check)" || exit 1
# The version's section: from its heading to the next version's (or the link references).
notes="$(awk -v v="$version" '
  index($0, "## [" v "]") == 1 { on = 1; print; next }
  on && (/^## \[/ || /^\[[^]]+\]: /) { exit }
  on { print }' CHANGELOG.md)"
if [[ -z $notes ]] || [[ -z $(echo "$notes" | sed 1d | tr -d '[:space:]') ]]; then
  say "CHANGELOG.md has no entry for $version: add a '## [$version] - YYYY-MM-DD' section saying what changed"
  exit 1
fi

OUT="release/$version"
WORK="release/.$version.tmp"
rm -rf "$WORK"
mkdir -p "$WORK"
printf '%s\n' "$notes" >"$WORK/CHANGELOG.md"

engine_up=""
finish() {
  local status=$?
  [[ -n $engine_up ]] && docker_engine_stop
  [[ $status == 0 ]] || rm -rf "$WORK"
  say "finished in $((SECONDS - started)) s (exit $status)"
  exit "$status"
}
trap finish EXIT

phase "$version: the Python packages (python -m build, setuptools 69.1.1, Python 3.12)"
python="$(bash scripts/python-env.sh release-build scripts/release/requirements.txt 3.12)"
build_python() { # source folder
  # Without isolation: the pinned setuptools above builds, offline. Build leftovers go with it.
  rm -rf "$1/build"
  "$python" -m build --no-isolation --outdir "$WORK" "$1" >"$WORK/.build.log" 2>&1 || { tail -n 30 "$WORK/.build.log" >&2; exit 1; }
  rm -rf "$1/build" "$WORK/.build.log"
}
build_python integrations/openedx
# What the Tutor plugin carries inside its package (the service's build context, the LMS plugin's
# source), staged right before its wheel is built.
if [[ -f scripts/stage-tutor-plugin.sh ]]; then
  phase "staging the Tutor plugin's contents (scripts/stage-tutor-plugin.sh)"
  bash scripts/stage-tutor-plugin.sh >/dev/null
fi
build_python integrations/tutor

phase "the Helm chart (helm package)"
helm="${HELM:-$(bash scripts/k8s/tools.sh)/helm}"
"$helm" package deploy/helm/course-access-groups --destination "$WORK" >/dev/null

phase "the image (docker build, then docker save)"
source scripts/lib/apt.sh
source scripts/lib/docker-engine.sh
if [[ ${RELEASE_DOCKER:-own} == host ]]; then
  # The engine already running on a CI runner (the release workflow), its client on the PATH.
  DOCKER_BIN="$(command -v docker)"
else
  docker_engine_install
  engine_up=1
  docker_engine_start
fi
image="course-access-groups:$version"
if [[ -n ${NODE_IMAGE:-} ]]; then
  NODE_BASE_IMAGE="$NODE_IMAGE"
else
  node_base_image
fi
build_service_image "$image"
docker save -o "$WORK/course-access-groups-$version.docker.tar" "$image"
chmod 644 "$WORK/course-access-groups-$version.docker.tar" # docker save writes 0600

phase "checksums"
(cd "$WORK" && sha256sum -- *.docker.tar *.tgz *.whl *.tar.gz CHANGELOG.md >SHA256SUMS)
rm -rf "$OUT"
mv "$WORK" "$OUT"
phase "written to $OUT:"
(cd "$OUT" && ls -l --time-style=+ | sed 1d | awk '{ printf "  %10d  %s\n", $5, $NF }' >&2)
