"""Kind "errors": f(errors, ...), one error (a distance >= 0) per landmark or case."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import count_cases, keep_order, no_empties, no_padding, repeat_case

ndims = (1,)
arrays = (0,)
# Errors in quarter millimetres: float32 holds them exactly.
dtypes = (np.float32, np.float64)
swap = keep_order
pad = no_padding
empties = no_empties
repeat = repeat_case(1)
n_cases = count_cases


def examples(rng, ndim):
    errors = rng.integers(0, 32, size=41) / 4.0  # many exactly on the thresholds 2, 2.5, 3, 4
    return [(errors,), (np.array([0.0, 2.0, 2.5, 3.0, 4.0, 4.25]),), (np.array([1.5]),)]
