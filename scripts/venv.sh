#!/usr/bin/env bash
# Sourced by run-example.sh and run-tests.sh: makes .venv (once) and installs the
# requirements file given as $1 into it, so that a fresh machine needs only python3.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${EVALUATION_VENV:-$root/.venv}"
requirements="$root/${1:-requirements.txt}"

# Python 3.11 (the bundled expected metrics were made with it; the image runs 3.14 and writes the same
# bytes, which .ci/run checks; the test dependencies are pinned for 3.11): $EVALUATION_PYTHON,
# else python3.11, else python3 if it is 3.11 or newer.
base=""
for candidate in "${EVALUATION_PYTHON:-}" python3.11 python3; do
    if [ -n "$candidate" ] && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        base="$candidate"; break
    fi
done
if [ -z "$base" ]; then
    echo "No Python 3.11 found (python3 is $(python3 --version 2>&1 || echo missing)): install Python 3.11, or set EVALUATION_PYTHON to its path." >&2
    exit 1
fi

if [ ! -x "$venv/bin/python" ]; then
    if ! "$base" -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        # Debian ships venv separately; install it when we may, else say what to run.
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "python3-venv is missing: installing it with apt-get"
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
            "$base" -m venv "$venv"
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
    # One progress line per package (pip's own output, condensed), so a first run that downloads
    # about a gigabyte shows what it is doing.
    files=("$requirements")  # and the files it includes with -r, recursively (requirements-dev.txt's chain)
    next="$requirements"
    while included="$(sed -n 's/^-r \(.*\)$/\1/p' "$next" | head -n 1)" && [ -n "$included" ]; do
        next="$root/$included"; files+=("$next")
    done
    total="$(cat "${files[@]}" | sed 's/#.*//' | grep -c '==' || true)"
    # The pins not installed at their version yet (another requirements file may have installed
    # them all already: then nothing is fetched, and the message must not say otherwise).
    missing="$("$venv/bin/python" - "${files[@]}" <<'PY'
import re, sys
from importlib import metadata
count = 0
for name in sys.argv[1:]:
    for line in open(name, encoding="utf-8"):
        pin = line.split("#")[0].split(";")[0].strip()
        if "==" not in pin:
            continue
        package, version = (part.strip() for part in pin.split("==", 1))
        try:
            count += metadata.version(re.sub(r"\[.*\]", "", package)) != version
        except metadata.PackageNotFoundError:
            count += 1
print(count)
PY
)"
    if [ "$missing" = 0 ]; then
        echo "The $total pinned packages of $(basename "$requirements") are installed in $venv already"
    else
        echo "Installing the pinned packages of $(basename "$requirements") into $venv ($missing of $total not installed at their pinned version: up to a few minutes)"
    fi
    [ "$missing" = 0 ] || "$venv/bin/python" -m pip install --disable-pip-version-check --no-deps --progress-bar off -r "$requirements" 2>&1 \
        | awk -v total="$missing" '
            /^Collecting / { n++; name = $2; printf "  [%d/%d] %s", n, total, name; pending = 1; next }
            /^Processing / { n++; name = $2; sub(/.*\//, "", name); printf "  [%d/%d] %s (local file)\n", n, total, name; fflush(); next }
            /^WARNING: Location .* is ignored/ { next }
            /^ *Downloading / && pending { size = $0; sub(/.*\(/, "", size); sub(/\).*/, "", size); printf " (downloading %s)\n", size; pending = 0; fflush(); next }
            /^ *Using cached / && pending { printf " (cached)\n"; pending = 0; fflush(); next }
            /^Requirement already satisfied/ { next }
            /^Installing collected packages/ { if (pending) printf "\n"; pending = 0; print "  installing..."; fflush(); next }
            /^Successfully installed/ { print "  done"; next }
            /^ *(Obtaining|Preparing|Building|Created|Stored|Attempting|Found existing|Uninstalling|Successfully uninstalled)/ { next }
            { if (pending) printf "\n"; pending = 0; print; fflush() }'
    # A test-only peer pinned with the comment "# peer: unchecked" runs on the project's pins, not on
    # the ranges it declares (it is installed with --no-deps like everything else, and its tests
    # prove it runs): pip check's complaints about what such a peer declares are not errors. Every
    # requirements file counts, not only this one's chain: the venv is shared, and the leaderboard's
    # run after the tests' finds the tests' peers installed.
    unchecked="$(cat "$root"/requirements*.txt | sed -n 's/^\([A-Za-z0-9._-]*\)==[^#]*# *peer: unchecked.*/\1/p' \
        | tr 'A-Z_.' 'a-z--' | paste -sd '|' -)"
    broken="$("$venv/bin/python" -m pip check --disable-pip-version-check 2>&1 | grep -v '^No broken requirements' \
        | { if [ -n "$unchecked" ]; then grep -v -i -E "^($unchecked) " ; else cat; fi; } || true)"
    if [ -n "$broken" ]; then
        echo "$broken" >&2; echo "Pin every dependency named above in $(basename "$requirements")." >&2; exit 1
    fi
    cat "$root"/requirements*.txt > "$stamp"
fi
PYTHON="$venv/bin/python"
export PYTHON
