#!/usr/bin/env bash
# A pinned Python 3.12 virtual environment, made from PyPI once and cached in
# ${XDG_CACHE_HOME:-~/.cache}/course-access-groups/NAME (or $PYTHON_ENV_CACHE), named after the
# requirements' content so a changed pin means a new environment. Prints its python on stdout.
#
#   bash scripts/python-env.sh NAME REQUIREMENTS    create it if missing; print its python
#
# Used by scripts/openedx-producer.sh (the real Open edX producer) and scripts/openedx-plugin.sh
# (the LMS plugin's tests). openedx-events 11, edx-event-bus-kafka 6 and openedx-filters 3 need
# Python 3.12 (pip on an older Python quietly installs older versions, so none is accepted).
# Found as $OPENEDX_PYTHON, else `python3.12`, else pyenv's newest 3.12.
set -euo pipefail
NAME="${1:?usage: python-env.sh NAME REQUIREMENTS}"
REQUIREMENTS="${2:?usage: python-env.sh NAME REQUIREMENTS}"
CACHE="${PYTHON_ENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/course-access-groups/$NAME}"

say() { echo "[$NAME] $*" >&2; }

is_312() { [[ -n "$1" ]] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; }

find_python() {
  if [[ -n "${OPENEDX_PYTHON:-}" ]]; then
    is_312 "$OPENEDX_PYTHON" && { echo "$OPENEDX_PYTHON"; return; }
    say "OPENEDX_PYTHON=$OPENEDX_PYTHON is not a Python 3.12"; return 1
  fi
  # A pyenv shim named python3.12 exists even when 3.12 is not the selected version, so the
  # candidate is run, not just looked up.
  if is_312 python3.12; then command -v python3.12; return; fi
  local root candidate
  if root="$(pyenv root 2>/dev/null)"; then
    for candidate in $(ls -d "$root"/versions/3.12.*/bin/python3.12 2>/dev/null | sort -V -r); do
      is_312 "$candidate" && { echo "$candidate"; return; }
    done
  fi
  say "Python 3.12 is needed (openedx-events 11, edx-event-bus-kafka 6, openedx-filters 3)"
  say "and none was found: install it (e.g. 'pyenv install 3.12' or Debian's python3.12) or set OPENEDX_PYTHON"
  return 1
}

VENV="$CACHE/venv-$(sha256sum "$REQUIREMENTS" | cut -c1-12)"
if [[ ! -x "$VENV/bin/python" ]]; then
  python="$(find_python)"
  say "creating $VENV with $("$python" --version) from PyPI"
  mkdir -p "$CACHE"
  work="$(mktemp -d "$CACHE/.venv-XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  "$python" -m venv "$work"
  "$work/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$REQUIREMENTS" >&2
  # Named only once complete (another clone may be creating the same one). The environment's
  # python finds its packages from wherever it is run; only pip's own script names the old path.
  mv -T "$work" "$VENV" 2>/dev/null || [[ -x "$VENV/bin/python" ]]
fi
echo "$VENV/bin/python"
