#!/usr/bin/env bash
# Sourced by run-example.sh and run-tests.sh: makes .venv (once) and installs the
# requirements file given as $1 into it, so that a fresh machine needs only python3.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${EVALUATION_VENV:-$root/.venv}"
requirements="$root/${1:-requirements.txt}"

if [ ! -x "$venv/bin/python" ]; then
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        # Debian ships venv separately; install it when we may, else say what to run.
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "python3-venv is missing: installing it with apt-get"
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
            python3 -m venv "$venv"
        else
            echo "Python's venv module is missing: run 'sudo apt-get install python3-venv' and try again." >&2
            exit 1
        fi
    fi
fi

# Reinstall only when the requirements changed since the last install.
stamp="$venv/.installed-$(basename "$requirements")"
if [ ! -f "$stamp" ] || ! cmp -s "$stamp" <(cat "$root"/requirements*.txt); then
    # Exactly the pins, as the image installs them: a dependency missing from the files fails here.
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$requirements"
    "$venv/bin/python" -m pip check --disable-pip-version-check >/dev/null \
        || { "$venv/bin/python" -m pip check >&2; echo "Pin every dependency named above in $(basename "$requirements")." >&2; exit 1; }
    cat "$root"/requirements*.txt > "$stamp"
fi
PYTHON="$venv/bin/python"
export PYTHON
