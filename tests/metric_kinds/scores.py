"""Kind "scores": f(y_true, y_score, sample_weight=None, ...), binary truth and a score per case."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import count_cases, keep_order, no_empties, no_padding, repeat_case

ndims = (1,)
arrays = (0, 1)
dtypes = (np.float64, np.float32)  # the scores are multiples of 1/64: exact in float32
swap = keep_order
pad = no_padding
empties = no_empties
repeat = repeat_case()
n_cases = count_cases


def examples(rng, ndim):
    cases = []
    for n, levels in ((40, 64), (60, 6), (9, 3)):  # distinct scores, heavy ties, a few cases
        y_true = (rng.random(n) < 0.4).astype(np.int64)
        y_true[:2] = [0, 1]  # both classes
        y_score = np.round(np.clip(rng.normal(0.4 + 0.25 * y_true, 0.25), 0, 1) * levels) / levels
        y_score = np.round(y_score * 64) / 64
        cases.append((y_true, y_score))
    return cases
