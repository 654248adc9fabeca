"""Kind "case_values": f(values, sample_weight=None, ...), one number per case."""

from __future__ import annotations

import numpy as np

ndims = (1,)
arrays = (0,)
dtypes = (np.float64, np.float32)  # multiples of 1/16: exact in float32


def examples(rng, ndim):
    return [(np.round(rng.normal(0.6, 0.3, n) * 16) / 16,) for n in (25, 8, 2)]


def swap(args):
    return args


def pad(args):
    return None


def empties(ndim):
    return {}


def repeat(args, index):
    values = np.asarray(args[0])
    return (np.insert(values, index, values[index]),)


def n_cases(args):
    return len(args[0])
