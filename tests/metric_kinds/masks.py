"""Kind "masks": f(prediction, truth, ...), two binary masks of one shape."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import no_repeat, one_case, pad_images, swap_first_two

ndims = (2, 3)
arrays = (0, 1)
dtypes = (bool, np.uint8, np.int32, np.float32, np.float64)
swap = swap_first_two
pad = pad_images
repeat = no_repeat
n_cases = one_case


def _blob(rng, shape):
    """A blob with a hole and a stray voxel: borders, concavities, more than one component."""
    grid = np.indices(shape, dtype=np.float64)
    centre = [rng.uniform(0.35, 0.65) * n for n in shape]
    radii = [rng.uniform(0.15, 0.3) * n for n in shape]
    distance = sum(((g - c) / r) ** 2 for g, c, r in zip(grid, centre, radii, strict=True))
    mask = distance <= 1.0
    mask &= ~(distance <= 0.15)
    stray = tuple(int(rng.integers(0, n)) for n in shape)
    mask[stray] = True
    return mask


def examples(rng, ndim):
    shape = (23, 19) if ndim == 2 else (13, 11, 9)
    cases = []
    for _ in range(3):
        cases.append((_blob(rng, shape), _blob(rng, shape)))
    touching = np.zeros(shape, dtype=bool)
    touching[(slice(0, 4),) * ndim] = True  # a structure touching the image border
    thin = np.zeros(shape, dtype=bool)
    thin[(slice(None), *([1] * (ndim - 1)))] = True  # one voxel thick
    cases.append((touching, _blob(rng, shape)))
    cases.append((thin, touching))
    return cases


def empties(ndim):
    shape = (9, 8) if ndim == 2 else (7, 6, 5)
    empty = np.zeros(shape, dtype=bool)
    full = empty.copy()
    full[(slice(2, 5),) * ndim] = True
    return {"both_empty": (empty, empty.copy()), "truth_empty": (full, empty), "prediction_empty": (empty, full)}
