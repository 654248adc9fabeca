"""What a RARE26 algorithm job sends: one JSON array of likelihoods per stack, element i for the
frame with index i. Any fault here is the participant's (SubmissionError, exit 1, naming the stack)."""

from __future__ import annotations

import numpy as np

from evaluation.platform.cases import Case
from evaluation.reading.values import finite_numbers, json_type


def read_likelihoods(case: Case, slug: str, expected: int) -> np.ndarray:
    """The output's JSON array: `expected` finite likelihoods, any range (only their order counts)."""
    values = case.read_json(slug)
    if not isinstance(values, list):
        case.origin.fail(f"{case.name}: the output {slug!r} must be a JSON array of {expected} numbers "
                         f"(one likelihood per frame), found {json_type(values)}.")
    if len(values) != expected:
        case.origin.fail(f"{case.name}: expected {expected} likelihoods (one per frame), found {len(values)}.")
    return finite_numbers(values, expected, case.name, "likelihood", error=case.origin.error)
