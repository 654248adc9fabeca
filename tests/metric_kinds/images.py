"""Kind "images": f(prediction, truth, mask=None, ...), two images of one shape and a mask of the
voxels to score.

The masks keep 5 voxels from every border: the SSIM window (radius 3, or 5 for a Gaussian) of a
masked voxel then lies inside the image, so padding the image changes nothing it sees."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import no_repeat, one_case, swap_first_two

ndims = (2, 3)
arrays = (0, 1, 2)
# Whole Hounsfield units in [-1024, 3071]: every dtype holds them exactly.
dtypes = (np.int16, np.int32, np.float32, np.float64)
INSET = 5
swap = swap_first_two
repeat = no_repeat
n_cases = one_case


def _shape(ndim):
    return (26, 23) if ndim == 2 else (17, 15, 14)


def _ct(rng, shape):
    grid = np.indices(shape, dtype=np.float64)
    centre = [n / 2 for n in shape]
    body = sum(((g - c) / (0.4 * n)) ** 2 for g, c, n in zip(grid, centre, shape, strict=True)) <= 1
    image = np.where(body, 40.0, -1000.0) + rng.integers(-60, 61, size=shape)
    image[tuple(slice(n // 3, n // 3 + 3) for n in shape)] = 1200.0  # a bone
    return np.clip(image, -1024, 3071)


def _mask(rng, shape):
    mask = np.zeros(shape, dtype=bool)
    mask[tuple(slice(INSET, n - INSET) for n in shape)] = True
    mask &= rng.random(shape) < 0.8  # holes
    return mask


def examples(rng, ndim):
    shape = _shape(ndim)
    truth = _ct(rng, shape)
    synthetic = np.clip(truth + rng.integers(-150, 151, size=shape), -1024, 3071)
    shifted = np.clip(truth + 200, -1024, 3071)  # a bias
    return [(synthetic, truth, _mask(rng, shape)), (shifted, truth, _mask(rng, shape)),
            (_ct(rng, shape), truth, _mask(rng, shape))]


def pad(args):
    width = [(2, 3)] * np.ndim(args[0])
    return (np.pad(args[0], width, constant_values=-1024), np.pad(args[1], width, constant_values=-1024),
            np.pad(args[2], width), *args[3:])


def empties(ndim):
    rng = np.random.default_rng(7)
    shape = _shape(ndim)
    truth = _ct(rng, shape)
    return {"empty_mask": (truth + 10, truth, np.zeros(shape, dtype=bool)),
            "identical": (truth.copy(), truth, _mask(rng, shape))}
