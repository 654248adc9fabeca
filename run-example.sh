#!/usr/bin/env bash
# Quick start, command 1: evaluates the bundled example submission of a challenge
# (default rare26) with the bundled ground truth, and prints the metrics.json it wrote.
set -euo pipefail
cd "$(dirname "$0")"
challenge="${1:-rare26}"
source scripts/venv.sh requirements.txt
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$PYTHON" -m evaluation "$challenge" --input "test/$challenge/input" \
    --ground-truth "ground-truth/$challenge" --output "$out"
cat "$out/metrics.json"
echo
