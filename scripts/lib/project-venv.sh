# Sourced by scripts/*: make .venv (Python 3.11+) with the project and its test extras installed.
# Re-running is cheap: pip only checks what is already there.
project_venv() {
  local root py
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  if [ ! -x "$root/.venv/bin/python" ]; then
    for py in "${PYTHON:-}" python3.12 python3.11 python3; do
      [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 || continue
      if "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "Creating .venv with $py" >&2
        "$py" -m venv "$root/.venv"
        break
      fi
    done
    [ -x "$root/.venv/bin/python" ] || { echo "error: Python 3.11 or newer is needed" >&2; return 1; }
  fi
  "$root/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$root[test]" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" >&2 || true
  # pip's status is lost in the pipe: check the install for real.
  "$root/.venv/bin/python" -c 'import provisioner, pytest, respx, hypothesis' \
    || { echo "error: installing the project into .venv failed" >&2; return 1; }
}
