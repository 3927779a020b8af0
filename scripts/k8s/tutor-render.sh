#!/usr/bin/env bash
# The Tutor plugin (integrations/tutor) rendered by the real tutor, as an operator would: its wheel
# built as the release builds it (scripts/tutor-plugin-wheel.sh) and pip-installed from it, enabled,
# and `tutor config save` run in TUTOR_ROOT (a new folder) with an organization. Tutor's Kubernetes
# manifests are then in TUTOR_ROOT/env/k8s/ and the service's build context in
# TUTOR_ROOT/env/plugins/course-access-groups/build/course-access-groups/. Used by
# test/k8s/tutor-plugin.test.ts and scripts/container/test.sh (which builds the image from that
# context); the tutor is the one of the Tutor plugin's test environment (scripts/tutor-plugin.sh's,
# Tutor 21, without the docker-compose it also installs: nothing here needs it).
#
#   bash scripts/k8s/tutor-render.sh TUTOR_ROOT [KEY=VALUE...]   the KEY=VALUEs go to --set
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TUTOR_ROOT="${1:?usage: tutor-render.sh TUTOR_ROOT [KEY=VALUE...]}"
shift
PYTHON="$(bash "$ROOT/scripts/python-env.sh" tutor-plugin "$ROOT/integrations/tutor/requirements/test.txt" 3.12)"
mkdir -p "$TUTOR_ROOT"
wheel="$(bash "$ROOT/scripts/tutor-plugin-wheel.sh" "$PYTHON" "$TUTOR_ROOT/dist")"
"$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps --no-index --target "$TUTOR_ROOT/site" "$wheel" >&2
export TUTOR_ROOT TUTOR_PLUGINS_ROOT="$TUTOR_ROOT/plugins" PYTHONPATH="$TUTOR_ROOT/site" PYTHONDONTWRITEBYTECODE=1
# The `tutor` command's entry point (the package has no __main__).
tutor() { "$PYTHON" -c "import sys; from tutor.commands.cli import main; sys.argv[0] = 'tutor'; sys.exit(main())" "$@"; }
sets=(--set COURSE_ACCESS_GROUPS_ORGANIZATION=TutorRendered)
for setting in "$@"; do sets+=(--set "$setting"); done
# Quiet unless it fails (tutor warns on every run as root).
out="$(tutor plugins enable course-access-groups 2>&1 && tutor config save "${sets[@]}" 2>&1)" || { echo "$out" >&2; exit 1; }
