"""Kind "points": f(truth, prediction, ...), true and predicted points as (n, ndim) coordinate
arrays (coordinates are multiples of 1/8: exact in float32, and no distance lands on a radius
by accident)."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import no_repeat, one_case, swap_first_two

ndims = (2, 3)
arrays = (0, 1)
dtypes = (np.float32, np.float64)
swap = swap_first_two
repeat = no_repeat
n_cases = one_case


def _points(rng, n, ndim, extent=12.0):
    return np.round(rng.uniform(0, extent, (n, ndim)) * 8) / 8


def examples(rng, ndim):
    cases = []
    for n, m in ((20, 25), (8, 3), (15, 40)):
        truth = _points(rng, n, ndim)
        near = truth[rng.integers(0, n, m)] + np.round(rng.normal(0, 0.9, (m, ndim)) * 8) / 8
        cases.append((truth, near))
    cluster = np.full((6, ndim), 3.0) + np.round(rng.uniform(0, 1.5, (6, ndim)) * 8) / 8
    cases.append((cluster[:3], cluster[3:]))  # every point near every other: the rules differ here
    return cases


def pad(args):
    """Points of the same image with background added before it: every coordinate shifted."""
    offset = np.arange(2, 2 + np.shape(args[0])[1], dtype=np.float64)
    return (np.asarray(args[0]) + offset, np.asarray(args[1]) + offset, *args[2:])


def empties(ndim):
    empty, some = np.zeros((0, ndim)), np.ones((3, ndim))
    return {"both_empty": (empty, empty.copy()), "truth_empty": (empty, some), "prediction_empty": (some, empty)}
