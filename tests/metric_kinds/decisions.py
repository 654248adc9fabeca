"""Kind "decisions": f(y_true, y_pred, sample_weight=None, ...), true and predicted classes per
case (0 and 1: the binary defaults of every metric apply)."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import count_cases, no_padding, repeat_case, swap_first_two

ndims = (1,)
arrays = (0, 1)
dtypes = (np.int64, np.int32, np.int8, np.float64, bool)
swap = swap_first_two
pad = no_padding
repeat = repeat_case()
n_cases = count_cases


def examples(rng, ndim):
    cases = []
    for n, agreement in ((30, 0.7), (57, 0.5), (6, 0.8)):
        y_true = (rng.random(n) < 0.4).astype(np.int64)
        y_true[:2] = [0, 1]
        y_pred = np.where(rng.random(n) < agreement, y_true, 1 - y_true)
        y_pred[2:4] = [0, 1]  # both classes predicted
        cases.append((y_true, y_pred))
    return cases


def empties(ndim):
    # No case at all: every count is zero, every ratio's denominator too.
    nothing = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    return {"zero_division": nothing, "replace_undefined_by": nothing}
