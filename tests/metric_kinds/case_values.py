"""Kind "case_values": f(values, sample_weight=None, ...), one number per case."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import count_cases, keep_order, no_empties, no_padding, repeat_case

ndims = (1,)
arrays = (0,)
dtypes = (np.float64, np.float32)  # multiples of 1/16: exact in float32
swap = keep_order
pad = no_padding
empties = no_empties
repeat = repeat_case()
n_cases = count_cases


def examples(rng, ndim):
    return [(np.round(rng.normal(0.6, 0.3, n) * 16) / 16,) for n in (25, 8, 2)]
