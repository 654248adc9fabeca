"""Kind "landmarks": f(prediction, truth, spacing=None, ...), predicted and true positions of the
same landmarks, row i of one paired with row i of the other."""

from __future__ import annotations

import numpy as np

ndims = (2, 3)
arrays = (0, 1)
# Whole voxel coordinates: every dtype holds them exactly.
dtypes = (np.int32, np.int64, np.float32, np.float64)


def examples(rng, ndim):
    truth = rng.integers(0, 300, size=(19, ndim)).astype(np.float64)
    near = truth + rng.integers(-6, 7, size=truth.shape)
    exact = truth.copy()
    exact[::3] += rng.integers(-2, 3, size=exact[::3].shape)  # most landmarks exactly found
    one = np.zeros((1, ndim))
    return [(near, truth), (exact, truth), (one + 4, one)]


def swap(args):
    return (args[1], args[0], *args[2:])


def pad(args):
    # Padding an image by k voxels before its first index moves every landmark by k.
    offset = np.arange(2, 2 + np.shape(args[0])[1])
    return (np.asarray(args[0]) + offset, np.asarray(args[1]) + offset, *args[2:])


def empties(ndim):
    return {}


def repeat(args, index):
    return tuple(np.insert(np.asarray(a), index, np.asarray(a)[index], axis=0) for a in args[:2]) + tuple(args[2:])


def n_cases(args):
    return len(args[0])
