"""Kind "probabilities": f(y_true, y_prob, sample_weight=None, ...), a binary truth and a
probability of the positive class per case."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import count_cases, keep_order, no_empties, no_padding, repeat_case

ndims = (1,)
arrays = (0, 1)
# Probabilities in 64ths and 0/1 truths: float32 holds them exactly.
dtypes = (np.float32, np.float64)
swap = keep_order
pad = no_padding
empties = no_empties
repeat = repeat_case(2)
n_cases = count_cases


def examples(rng, ndim):
    probability = rng.integers(0, 65, size=57) / 64.0
    truth = (rng.random(57) < probability).astype(np.float64)
    edges = np.array([0.0, 0.5, 1.0, 0.25, 0.75, 0.5, 0.125, 0.875])  # on bin edges of 4 and 8 bins, and the ends
    return [
        (truth, probability),
        (np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0]), edges),
        (np.array([1.0, 1.0, 1.0]), np.array([0.75, 0.75, 0.25])),  # a single class present, ties
    ]
