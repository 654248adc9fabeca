"""Kind "mask": f(mask, ...), one binary mask, N-D (the masks kind's shapes: blobs with holes,
structures touching the border, one-voxel-thick lines)."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds import masks

ndims = masks.ndims
arrays = (0,)
dtypes = masks.dtypes


def examples(rng, ndim):
    return [(pair[0],) for pair in masks.examples(rng, ndim)] + [(masks.examples(rng, ndim)[0][1],)]


def swap(args):
    return None


def pad(args):
    return (np.pad(args[0], [(2, 3)] * np.ndim(args[0])), *args[1:])


def empties(ndim):
    return {"empty": (np.zeros((9, 8) if ndim == 2 else (7, 6, 5), dtype=bool),)}


def repeat(args, index):
    return None


def n_cases(args):
    return 1
