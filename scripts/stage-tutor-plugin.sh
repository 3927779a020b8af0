#!/usr/bin/env bash
# Copies what the Tutor plugin carries into its package, so that its wheel (and sdist) hold it:
#   - the service's build context (what the Dockerfile COPYs: Dockerfile, package.json,
#     package-lock.json, tsconfig*.json, src/, consumers/, scripts/build-console.cjs) into
#     tutorcourse_access_groups/templates/course-access-groups/build/course-access-groups/,
#     rendered by Tutor into env/plugins/course-access-groups/build/course-access-groups/;
#   - the LMS plugin's source (integrations/openedx: pyproject.toml, README.md, src/) into
#     tutorcourse_access_groups/templates/build/openedx/course-access-groups-openedx/, rendered by
#     Tutor into the openedx image's build context (env/build/openedx/).
# Both folders are git-ignored and replaced whole on every run; Tutor copies them byte for byte
# (the plugin's IS_FILE_RENDERED filter). Run by the release before it builds the Tutor plugin's
# wheel, and by the tests that build it.
#
#   bash scripts/stage-tutor-plugin.sh      prints the package folder it staged into
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PACKAGE="$ROOT/integrations/tutor/tutorcourse_access_groups"
SERVICE="$PACKAGE/templates/course-access-groups/build/course-access-groups"
LMS_PLUGIN="$PACKAGE/templates/build/openedx/course-access-groups-openedx"

# Each path the Dockerfile COPYs from the build context, so a new COPY line is not silently missed.
copied="$(sed -n -E 's/^COPY +([^-][^ ]*( +[^ ]+)*) +[^ ]+$/\1/p' "$ROOT/Dockerfile" | tr ' ' '\n' | sort -u)"
expected="$(printf '%s\n' consumers package-lock.json package.json scripts/build-console.cjs src tsconfig.build.json tsconfig.json | sort)"
if [[ $copied != "$expected" ]]; then
  echo "[stage-tutor-plugin] the Dockerfile copies $(echo $copied), not $(echo $expected): update this script" >&2
  exit 1
fi

rm -rf "$SERVICE" "$LMS_PLUGIN"
mkdir -p "$SERVICE/scripts" "$LMS_PLUGIN"
cd "$ROOT"
# Only files git tracks: no build output, caches or local settings.
git ls-files -z --cached --others --exclude-standard -- Dockerfile package.json package-lock.json tsconfig.json tsconfig.build.json src consumers scripts/build-console.cjs |
  xargs -0 cp --parents -t "$SERVICE"
git ls-files -z --cached --others --exclude-standard -- integrations/openedx/pyproject.toml integrations/openedx/README.md integrations/openedx/src |
  xargs -0 cp --parents -t "$LMS_PLUGIN"
# The LMS plugin's files at the top of its folder (cp --parents kept integrations/openedx/).
mv "$LMS_PLUGIN/integrations/openedx/"* "$LMS_PLUGIN/" && rm -rf "$LMS_PLUGIN/integrations"
echo "$PACKAGE"
