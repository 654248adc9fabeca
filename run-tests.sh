#!/usr/bin/env bash
# Quick start, command 2: runs the whole test suite in .venv (made and filled on first use).
# Extra arguments go to pytest, e.g. ./run-tests.sh -k rare26 -x
set -euo pipefail
cd "$(dirname "$0")"
source scripts/venv.sh requirements-dev.txt
exec "$PYTHON" -m pytest "$@"
