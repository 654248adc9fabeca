"""Generic test helpers only (challenge-specific fixtures belong in their own test modules)."""

import sys
from pathlib import Path

import pytest

# `pytest` run from anywhere (not only `python -m pytest` from the repository) finds the package.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(autouse=True)
def _no_evaluation_environment(monkeypatch):
    """The developer's own EVALUATION_* variables must not change what a test sees."""
    for name in ("EVALUATION_CHALLENGE", "EVALUATION_WORKERS"):
        monkeypatch.delenv(name, raising=False)
