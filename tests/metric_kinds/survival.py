"""Kind "survival": f(time, event, risk, sample_weight=None), right-censored times, events
(1) or censorings (0) and risk scores (higher: an earlier event)."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import count_cases, keep_order, no_empties, no_padding, repeat_case

ndims = (1,)
arrays = (0, 1, 2)
dtypes = (np.float64, np.float32)  # whole times, events 0/1 and risks in halves: exact in float32
swap = keep_order
pad = no_padding
empties = no_empties
repeat = repeat_case()
n_cases = count_cases


def examples(rng, ndim):
    cases = []
    for n, times, risks in ((40, 1000, 1000), (50, 8, 4), (7, 5, 3)):  # few ties, many ties, few cases
        time = rng.integers(1, times, n).astype(np.float64)
        event = (rng.random(n) < 0.6).astype(np.int64)
        event[0], time[0], time[1] = 1, 0.0, 1.0  # at least one comparable pair
        risk = rng.integers(0, risks, n) / 2.0
        cases.append((time, event, risk))
    return cases
