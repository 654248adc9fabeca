"""Kind "errors": f(errors, ...), one error (a distance >= 0) per landmark or case."""

from __future__ import annotations

import numpy as np

ndims = (1,)
arrays = (0,)
# Errors in quarter millimetres: float32 holds them exactly.
dtypes = (np.float32, np.float64)


def examples(rng, ndim):
    errors = rng.integers(0, 32, size=41) / 4.0  # many exactly on the thresholds 2, 2.5, 3, 4
    return [(errors,), (np.array([0.0, 2.0, 2.5, 3.0, 4.0, 4.25]),), (np.array([1.5]),)]


def swap(args):
    return args


def pad(args):
    return None


def empties(ndim):
    return {}


def repeat(args, index):
    errors = np.asarray(args[0])
    return (np.insert(errors, index, errors[index]), *args[1:])


def n_cases(args):
    return len(args[0])
