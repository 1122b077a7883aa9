# Sourced by scripts/demo and scripts/test: make .venv (Python 3.11+) and install a requirements file.
# Usage: source scripts/_venv.sh requirements.txt
set -euo pipefail
requirements=${1:?requirements file}
if [ ! -x .venv/bin/python ]; then
  python=""
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      python=$candidate
      break
    fi
  done
  [ -n "$python" ] || { echo "Python 3.11 or newer is needed." >&2; exit 1; }
  "$python" -m venv .venv
fi
# Installing is a no-op when everything is already there.
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$requirements" 2>&1 |
  grep -v -E "^WARNING: Location .* is ignored" || true
export PATH="$PWD/.venv/bin:$PATH"
