"""Kind "label_maps": f(prediction, truth, labels, ...), two integer label maps of one shape and
the labels to score (a label in neither map, a label only in one, labels the call does not ask
about, a structure touching the image border)."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import no_empties, no_repeat, one_case, pad_images, swap_first_two

ndims = (2, 3)
arrays = (0, 1)
dtypes = (np.uint8, np.uint16, np.int32, np.int64)
swap = swap_first_two
pad = pad_images
empties = no_empties
repeat = no_repeat
n_cases = one_case


def _label_map(rng, shape):
    grid = np.indices(shape, dtype=np.float64)
    labels = np.zeros(shape, dtype=np.uint8)
    for label in (1, 2, 3):
        centre = [rng.uniform(0.2, 0.8) * n for n in shape]
        radii = [rng.uniform(0.12, 0.3) * n for n in shape]
        labels[sum(((g - c) / r) ** 2 for g, c, r in zip(grid, centre, radii, strict=True)) <= 1] = label
    labels[(0,) * len(shape)] = 5  # a label nobody asks about, in the corner
    return labels


def examples(rng, ndim):
    shape = (23, 19) if ndim == 2 else (13, 11, 9)
    cases = []
    for _ in range(2):
        prediction, truth = _label_map(rng, shape), _label_map(rng, shape)
        truth[truth == 3] = 0  # label 3 only in the prediction
        cases.append((prediction, truth, [1, 2, 3, 4]))  # 4 in neither
    edge = np.zeros(shape, dtype=np.uint8)
    edge[(slice(0, 4),) * ndim] = 2  # touching the image border
    cases.append((edge, _label_map(rng, shape), [2, 1]))
    return cases
