"""Kind "displacement": f(displacement, mask=None, spacing=None, ...), a displacement field
(ndim, *shape) in the spacing's units and a mask of the voxels to score.

The masks keep 2 voxels from every border, so that padding the field (with zero displacement)
changes no Jacobian they see, with border=1 or 2."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import keep_order, no_repeat, one_case

ndims = (2, 3)
arrays = (0, 1)
# Displacements in 16ths of the spacing's unit: float32 holds them exactly.
dtypes = (np.float32, np.float64)
INSET = 2
swap = keep_order
repeat = no_repeat
n_cases = one_case


def _shape(ndim):
    return (21, 19) if ndim == 2 else (13, 12, 11)


def _smooth(rng, shape, amplitude):
    """A smooth random field with a few folds where the amplitude is large."""
    from scipy.ndimage import gaussian_filter

    field = np.stack([gaussian_filter(rng.normal(size=shape), 1.5) for _ in shape]) * amplitude
    return np.round(field * 16) / 16


def _mask(rng, shape):
    mask = np.zeros(shape, dtype=bool)
    mask[tuple(slice(INSET, n - INSET) for n in shape)] = True
    return mask & (rng.random(shape) < 0.85)


def examples(rng, ndim):
    shape = _shape(ndim)
    return [(_smooth(rng, shape, 3.0), _mask(rng, shape)), (_smooth(rng, shape, 12.0), _mask(rng, shape))]


def pad(args):
    ndim = np.ndim(args[1])
    return (np.pad(args[0], [(0, 0)] + [(2, 3)] * ndim), np.pad(args[1], [(2, 3)] * ndim), *args[2:])


def scale(args, factor):
    """The field in a unit `factor` times smaller: its displacements, lengths, times `factor`."""
    return (np.asarray(args[0]) * factor, *args[1:])


def empties(ndim):
    shape = _shape(ndim)
    return {"empty_mask": (_smooth(np.random.default_rng(3), shape, 3.0), np.zeros(shape, dtype=bool))}
