# Sourced by scripts/serve and scripts/test: create .venv if missing and (re)install the project
# with the pinned versions in constraints.txt whenever pyproject.toml or constraints.txt change.
ensure_venv() {
  local extras="$1" python="${PYTHON:-python3}" stamp=".venv/.skillhive-install"
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "error: Python >= 3.11 is required (set PYTHON=/path/to/python3.11)" >&2
    exit 1
  fi
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  local want
  want="$extras $(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "installing skillhive${extras:+[$extras]} into .venv ..." >&2
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -c constraints.txt -e ".${extras:+[$extras]}"
    echo "$want" > "$stamp"
  fi
}
