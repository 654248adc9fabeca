"""Kind "values": f(y_true, y_pred, sample_weight=None, ...), a true and a predicted number per case."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import count_cases, no_padding, repeat_case, swap_first_two

ndims = (1,)
arrays = (0, 1)
# Whole numbers: every dtype holds them exactly, so a conversion cannot change the result.
dtypes = (np.int32, np.int64, np.float32, np.float64)
swap = swap_first_two
pad = no_padding
repeat = repeat_case(2)
n_cases = count_cases


def examples(rng, ndim):
    truth = rng.integers(1, 200, size=23).astype(np.float64)
    noisy = truth + rng.integers(-30, 31, size=23)
    ties = np.array([5.0, 5.0, 7.0, 1.0, 7.0, 7.0, 3.0, 9.0])
    negative = np.array([-40.0, 12.0, -3.0, 55.0, 8.0, -19.0])
    return [
        (truth, noisy),
        (ties, np.array([4.0, 6.0, 6.0, 2.0, 8.0, 8.0, 3.0, 5.0])),  # ties on both sides
        (negative, np.array([-35.0, 20.0, 4.0, 50.0, -8.0, -21.0])),  # signs differ, values cross zero
        (np.array([3.0, 8.0]), np.array([5.0, 2.0])),  # two cases
    ]


def empties(ndim):
    constant = (np.array([3.0, 3.0, 3.0]), np.array([1.0, 2.0, 4.0]))
    return {
        "zero_truth": (np.array([0.0]), np.array([2.0])),
        "both_zero": (np.array([0.0]), np.array([0.0])),
        "constant_truth": constant,
        "constant_input": constant,
    }
