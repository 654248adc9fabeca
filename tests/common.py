"""Helpers shared by the test modules (one copy each): the registry's challenges as test
parameters, a folder as {path: bytes}, a metrics.json path looked up, the last stderr line, a
peer library's value without its warnings and a bit-for-bit comparison of numbers.

Fixtures live in tests/conftest.py (which lists what a challenge folder must declare for the
generic tests to run on it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Challenges whose scored runs take seconds (images): their parametrised cases are marked `slow`
# (deselect with -m "not slow"). A marker only: a challenge not named here runs every test too.
SLOW = frozenset({"camelyon16", "csv2026", "hecktor2025-task1"})

_MISSING = object()


def challenges() -> list[str]:
    """Every challenge's name from the registry (evaluation/challenges/<folder>/), sorted."""
    from evaluation.challenges import challenge_names

    return challenge_names()


def params(names) -> list:
    """`names` as pytest parameters, those of SLOW marked slow."""
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in names]


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` by relative POSIX path, with its bytes (small folders only)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(Path(folder).rglob("*")) if p.is_file()}


def lookup(document: Any, path: str, default: Any = _MISSING) -> Any:
    """The value at a dotted metrics.json path (KeyError if absent, unless a default is given)."""
    for key in path.split("."):
        if not isinstance(document, dict) or key not in document:
            if default is _MISSING:
                raise KeyError(path)
            return default
        document = document[key]
    return document


def last_line(text: str) -> str:
    """The last non-empty line of a stream (a run's one-line message is its stderr's last)."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def quietly(function, *args, **kwargs):
    """A peer library's value without its warnings (scikit-learn warns where a value is undefined
    and returns NaN or 0.0 there: the caller compares that value)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def same_bits(ours, theirs) -> None:
    """Numbers (or arrays of them) equal bit for bit, NaN equal to NaN."""
    import numpy as np

    np.testing.assert_array_equal(np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float))
