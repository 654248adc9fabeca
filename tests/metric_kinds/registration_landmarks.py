"""Kind "registration_landmarks": f(fixed_landmarks, moving_landmarks, displacement, spacing=None,
...), paired landmarks in voxel coordinates and a displacement field (ndim, *shape) in the
spacing's units."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds._per_case import count_cases, keep_order, no_empties, repeat_case

ndims = (2, 3)
arrays = (0, 1, 2)
# Coordinates and displacements in 8ths: float32 holds them exactly.
dtypes = (np.float32, np.float64)
swap = keep_order
empties = no_empties
repeat = repeat_case(2)
n_cases = count_cases


def examples(rng, ndim):
    shape = (17, 15) if ndim == 2 else (11, 10, 9)
    cases = []
    for amplitude in (1.0, 4.0):
        field = np.round(rng.normal(size=(ndim, *shape)) * amplitude * 8) / 8
        fixed = np.round(rng.uniform(0, np.asarray(shape) - 1, size=(13, ndim)) * 8) / 8
        fixed[0] = np.asarray(shape) - 1  # on the grid's far corner
        fixed[1] = 0
        moving = np.round((fixed + rng.normal(size=fixed.shape)) * 8) / 8
        cases.append((fixed, moving, field))
    return cases


def pad(args):
    # Padding both images by k voxels before index 0 moves every landmark by k; the field gets
    # zero displacement around it.
    ndim = np.shape(args[0])[1]
    offset = np.full(ndim, 2)
    field = np.pad(args[2], [(0, 0)] + [(2, 3)] * ndim)
    return (np.asarray(args[0]) + offset, np.asarray(args[1]) + offset, field, *args[3:])


def scale(args, factor):
    """The field in a unit `factor` times smaller: its displacements, lengths, times `factor`."""
    return (args[0], args[1], np.asarray(args[2]) * factor, *args[3:])
