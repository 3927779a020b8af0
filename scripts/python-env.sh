#!/usr/bin/env bash
# A pinned Python virtual environment, made from PyPI once and cached in
# ${XDG_CACHE_HOME:-~/.cache}/course-access-groups/NAME (or $PYTHON_ENV_CACHE), named after the
# Python version and the requirements' content so a changed pin means a new environment. Prints
# its python on stdout.
#
#   bash scripts/python-env.sh NAME REQUIREMENTS [VERSION]   create it if missing; print its python
#   bash scripts/python-env.sh --interpreter VERSION         print the interpreter itself (no
#                                                            environment: for tests that make fresh ones)
#
# VERSION is a minor version, 3.12 by default. Used by scripts/openedx-producer.sh (the real Open
# edX producer, 3.12) and scripts/openedx-plugin.sh (the LMS plugin's tests, 3.11 and 3.12). pip on
# another minor version quietly installs other releases than the pins mean, so only VERSION is
# accepted. Found as $OPENEDX_PYTHON when it is that version, else `pythonVERSION`, else pyenv's
# newest VERSION.x.
set -euo pipefail
if [[ ${1:-} == --interpreter ]]; then
  NAME=python VERSION="${2:?usage: python-env.sh --interpreter VERSION}" INTERPRETER_ONLY=1
else
  NAME="${1:?usage: python-env.sh NAME REQUIREMENTS [VERSION]}"
  REQUIREMENTS="${2:?usage: python-env.sh NAME REQUIREMENTS [VERSION]}"
  VERSION="${3:-3.12}"
fi
[[ "$VERSION" =~ ^3\.[0-9]+$ ]] || { echo "python-env.sh: VERSION is a minor version such as 3.11, not '$VERSION'" >&2; exit 2; }
CACHE="${PYTHON_ENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/course-access-groups/$NAME}"

say() { echo "[$NAME] $*" >&2; }

is_version() {
  [[ -n "$1" ]] && "$1" -c "import sys; sys.exit('%d.%d' % sys.version_info[:2] != '$VERSION')" 2>/dev/null
}

find_python() {
  if [[ -n "${OPENEDX_PYTHON:-}" ]] && is_version "$OPENEDX_PYTHON"; then echo "$OPENEDX_PYTHON"; return; fi
  # A pyenv shim named python3.12 exists even when 3.12 is not the selected version, so the
  # candidate is run, not just looked up.
  if is_version "python$VERSION"; then command -v "python$VERSION"; return; fi
  local root candidate
  if root="$(pyenv root 2>/dev/null)"; then
    for candidate in $(ls -d "$root/versions/$VERSION".*/bin/python"$VERSION" 2>/dev/null | sort -V -r); do
      is_version "$candidate" && { echo "$candidate"; return; }
    done
  fi
  say "Python $VERSION is needed and none was found: install it (e.g. 'pyenv install $VERSION'"
  say "or Debian's python$VERSION) or set OPENEDX_PYTHON to one"
  return 1
}

if [[ -n ${INTERPRETER_ONLY:-} ]]; then
  find_python
  exit
fi
VENV="$CACHE/venv-py$VERSION-$(sha256sum "$REQUIREMENTS" | cut -c1-12)"
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
