"""Kind "landmarks": f(prediction, truth, spacing=None, ...), predicted and true positions of the
same landmarks, row i of one paired with row i of the other."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import count_cases, no_empties, repeat_case, swap_first_two

ndims = (2, 3)
arrays = (0, 1)
# Whole voxel coordinates: every dtype holds them exactly.
dtypes = (np.int32, np.int64, np.float32, np.float64)
swap = swap_first_two
empties = no_empties
repeat = repeat_case(2)
n_cases = count_cases


def examples(rng, ndim):
    truth = rng.integers(0, 300, size=(19, ndim)).astype(np.float64)
    near = truth + rng.integers(-6, 7, size=truth.shape)
    exact = truth.copy()
    exact[::3] += rng.integers(-2, 3, size=exact[::3].shape)  # most landmarks exactly found
    one = np.zeros((1, ndim))
    return [(near, truth), (exact, truth), (one + 4, one)]


def pad(args):
    # Padding an image by k voxels before its first index moves every landmark by k.
    offset = np.arange(2, 2 + np.shape(args[0])[1])
    return (np.asarray(args[0]) + offset, np.asarray(args[1]) + offset, *args[2:])
