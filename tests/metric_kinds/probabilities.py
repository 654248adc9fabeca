"""Kind "probabilities": f(y_true, y_prob, sample_weight=None, ...), a binary truth and a
probability of the positive class per case."""

from __future__ import annotations

import numpy as np

ndims = (1,)
arrays = (0, 1)
# Probabilities in 64ths and 0/1 truths: float32 holds them exactly.
dtypes = (np.float32, np.float64)


def examples(rng, ndim):
    probability = rng.integers(0, 65, size=57) / 64.0
    truth = (rng.random(57) < probability).astype(np.float64)
    edges = np.array([0.0, 0.5, 1.0, 0.25, 0.75, 0.5, 0.125, 0.875])  # on bin edges of 4 and 8 bins, and the ends
    return [
        (truth, probability),
        (np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0]), edges),
        (np.array([1.0, 1.0, 1.0]), np.array([0.75, 0.75, 0.25])),  # a single class present, ties
    ]


def swap(args):
    return args


def pad(args):
    return None


def empties(ndim):
    return {}


def repeat(args, index):
    return tuple(np.insert(np.asarray(a), index, np.asarray(a)[index]) for a in args[:2]) + tuple(args[2:])


def n_cases(args):
    return len(args[0])
