#!/usr/bin/env bash
# Makes the environment of the ISIC reference scorer, isic-challenge-scoring 5.8.0, for the parity
# tests and the benchmark (never a runtime dependency of ours). It needs Python >= 3.13 and the
# versions of its own release lock: with a newer numpy it crashes inside rdp on ROC curves longer
# than 100 points (docs/challenges/isic.md).
#
#   scripts/isic_reference_env.sh [PYTHON3.13]     -> .venv-isic-reference/ (git-ignored)
#
# ISIC_REFERENCE_VENV overrides the folder; the tests and the benchmark read the same variable.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${ISIC_REFERENCE_VENV:-$root/.venv-isic-reference}"
python="${1:-}"
if [ -z "$python" ]; then  # the first Python >= 3.13 that runs (a pyenv shim may not)
    for candidate in python3.14 python3.13 /root/.pyenv/versions/3.13*/bin/python3.13; do
        if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 13))' 2>/dev/null; then
            python="$candidate"; break
        fi
    done
fi
if [ -z "$python" ] || ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 13))' 2>/dev/null; then
    echo "isic-challenge-scoring 5.8.0 needs Python >= 3.13; pass its path as the first argument." >&2
    exit 1
fi
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    isic-challenge-scoring==5.8.0 numpy==2.3.1 pandas==2.3.1 scikit-learn==1.7.0 scipy==1.16.0 \
    click==8.2.1 rdp==0.8
"$venv/bin/isic-challenge-scoring" --help >/dev/null
echo "reference scorer ready: $venv/bin/isic-challenge-scoring"
