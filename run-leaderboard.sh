#!/usr/bin/env bash
# The final ranking across submissions (README, "Final ranking"): makes .venv on first use with
# requirements-leaderboard.txt (never in the image) and runs python -m evaluation.leaderboard with
# the given arguments, from any folder (relative paths are the caller's).
#   ./run-leaderboard.sh hecktor2025-task1 test/hecktor2025-task1/leaderboard/* --output ranking/
set -euo pipefail
root="$(cd "$(dirname "$0")" && pwd)"
source "$root/scripts/venv.sh" requirements-leaderboard.txt
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" -m evaluation.leaderboard "$@"
