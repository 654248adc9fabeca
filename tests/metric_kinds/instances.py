"""Kind "instances": f(truth, prediction, ...), two instance label maps of one shape (0
background, every other label one instance; labels need not be consecutive)."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import no_repeat, one_case, pad_images, swap_first_two

ndims = (2, 3)
arrays = (0, 1)
dtypes = (np.uint16, np.int32, np.int64, np.uint32)
swap = swap_first_two
pad = pad_images
repeat = no_repeat
n_cases = one_case


def _instances(rng, shape, n, first_label):
    """`n` boxes, some touching each other or the border, labelled first_label, first_label + 3,
    ... (gaps in the labels); a later box overwrites an earlier one where they cross."""
    labels = np.zeros(shape, dtype=np.int64)
    for k in range(n):
        start = [int(rng.integers(0, s - 1)) for s in shape]
        stop = [min(s, a + int(rng.integers(1, 5))) for a, s in zip(start, shape, strict=True)]
        labels[tuple(slice(a, b) for a, b in zip(start, stop, strict=True))] = first_label + 3 * k
    return labels


def _perturbed(rng, truth):
    """The true instances shifted by up to one voxel on each axis, relabelled: IoUs spread over
    [0, 1], with instances split, merged or missed."""
    shift = tuple(int(rng.integers(-1, 2)) for _ in range(truth.ndim))
    moved = np.roll(truth, shift, axis=tuple(range(truth.ndim)))
    relabelled = np.where(moved > 0, moved * 7 + 2, 0)
    relabelled[rng.random(truth.shape) < 0.1] = 0
    return relabelled


def examples(rng, ndim):
    shape = (23, 19) if ndim == 2 else (13, 11, 9)
    cases = []
    for _ in range(3):
        truth = _instances(rng, shape, 6, 1)
        cases.append((truth, _perturbed(rng, truth)))
    truth = _instances(rng, shape, 5, 4)
    cases.append((truth, _instances(rng, shape, 7, 100)))
    return cases


def empties(ndim):
    shape = (9, 8) if ndim == 2 else (7, 6, 5)
    empty = np.zeros(shape, dtype=np.int64)
    full = empty.copy()
    full[(slice(2, 5),) * ndim] = 3
    return {"both_empty": (empty, empty.copy()), "truth_empty": (empty, full), "prediction_empty": (full, empty)}
