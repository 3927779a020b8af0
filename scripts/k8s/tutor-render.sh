#!/usr/bin/env bash
# The Tutor plugin (integrations/tutor) rendered by the real tutor, as an operator would: its wheel
# pip-installed into a new folder of TUTOR_ROOT, enabled, and `tutor config save` run in
# TUTOR_ROOT (a new folder) with an organization. Tutor's Kubernetes manifests are then in
# TUTOR_ROOT/env/k8s/, its compose files in TUTOR_ROOT/env/local/ and the service's build context
# in TUTOR_ROOT/env/plugins/course-access-groups/build/course-access-groups/.
#   - the wheel: with RELEASE_DIR, the release's own (release/<version>/, `npm run release`), copied
#     into TUTOR_ROOT first, so nothing is read from the repository; without it, one built as the
#     release builds it (scripts/tutor-plugin-wheel.sh)
#   - the tutor: TUTOR_RELEASE (20, 21 or 22; 21 by default), the Tutor plugin's test environment
#     for that release line (scripts/tutor-plugin.sh's, from PyPI, cached)
# Used by test/k8s/tutor-plugin.test.ts and scripts/container/test.sh (which checks the compose
# files and builds the image from that context for each of Tutor 20, 21 and 22).
#
#   [RELEASE_DIR=...] [TUTOR_RELEASE=20|21|22] bash scripts/k8s/tutor-render.sh TUTOR_ROOT [KEY=VALUE...]
#   the KEY=VALUEs go to --set
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TUTOR_ROOT="$(realpath -m "${1:?usage: tutor-render.sh TUTOR_ROOT [KEY=VALUE...]}")"
shift
case "${TUTOR_RELEASE:-21}" in
  21) requirements=test.txt ;;
  20 | 22) requirements="test-tutor$TUTOR_RELEASE.txt" ;;
  *) echo "[tutor-render] TUTOR_RELEASE=$TUTOR_RELEASE: 20, 21 or 22" >&2; exit 2 ;;
esac
# scripts/tutor-plugin.sh's environment, without the docker-compose it also installs (the callers
# that check the compose files install it themselves).
PYTHON="$(bash "$ROOT/scripts/python-env.sh" tutor-plugin "$ROOT/integrations/tutor/requirements/$requirements" 3.12)"
mkdir -p "$TUTOR_ROOT/dist"
if [[ -n ${RELEASE_DIR:-} ]]; then
  version="$(node -p "require('$ROOT/package.json').version")"
  released="$RELEASE_DIR/tutor_contrib_course_access_groups-$version-py3-none-any.whl"
  [[ -f $released ]] || { echo "[tutor-render] RELEASE_DIR names no Tutor plugin wheel: $released is missing" >&2; exit 1; }
  cp "$released" "$TUTOR_ROOT/dist/"
  wheel="$TUTOR_ROOT/dist/$(basename "$released")"
else
  wheel="$(bash "$ROOT/scripts/tutor-plugin-wheel.sh" "$PYTHON" "$TUTOR_ROOT/dist")"
fi
"$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps --no-index --target "$TUTOR_ROOT/site" "$wheel" >&2
export TUTOR_ROOT TUTOR_PLUGINS_ROOT="$TUTOR_ROOT/plugins" PYTHONPATH="$TUTOR_ROOT/site" PYTHONDONTWRITEBYTECODE=1
# The `tutor` command's entry point (the package has no __main__), run outside the repository.
tutor() { (cd "$TUTOR_ROOT" && "$PYTHON" -c "import sys; from tutor.commands.cli import main; sys.argv[0] = 'tutor'; sys.exit(main())" "$@"); }
sets=(--set COURSE_ACCESS_GROUPS_ORGANIZATION=TutorRendered)
for setting in "$@"; do sets+=(--set "$setting"); done
# Quiet unless it fails (tutor warns on every run as root).
out="$(tutor plugins enable course-access-groups 2>&1 && tutor config save "${sets[@]}" 2>&1)" || { echo "$out" >&2; exit 1; }
# Which wheel and which tutor rendered it, for the callers' logs.
installed="$("$PYTHON" -c "from importlib.metadata import version; print(version('tutor'))")"
echo "[tutor-render] tutor $installed rendered $(basename "$wheel") into $TUTOR_ROOT" >&2
