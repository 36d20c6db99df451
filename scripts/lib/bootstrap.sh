# Shared set-up for scripts/run and scripts/test: a Python 3.11+ virtualenv in .venv with
# the package installed. Sourced, not executed. Works on a fresh Debian machine as root.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${KUBELET_COMPANION_VENV:-$repo_root/.venv}"

apt_install() {
    # Install Debian packages that are missing; a no-op when everything is present.
    local missing=()
    local package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$package")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        if [ "$(id -u)" -ne 0 ]; then
            echo "missing Debian packages: ${missing[*]} (run as root to install them)" >&2
            return 1
        fi
        echo "installing Debian packages: ${missing[*]}" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
}

pick_python() {
    local candidate
    for candidate in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
        [ -n "$candidate" ] || continue
        if command -v "$candidate" >/dev/null 2>&1 \
            && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

ensure_venv() {
    # $1: pip extras spec, e.g. ".[test]" or "."
    local python
    if ! python="$(pick_python)"; then
        apt_install python3 python3-venv
        python="$(pick_python)" || { echo "Python 3.11+ is required" >&2; return 1; }
    fi
    if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
        apt_install python3-venv
    fi
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv"
    fi
    "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$venv/bin/python" -m pip install -q -e "$repo_root$1"
}
