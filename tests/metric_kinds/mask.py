"""Kind "mask": f(mask, ...), one binary mask, N-D (the masks kind's shapes: blobs with holes,
structures touching the border, one-voxel-thick lines)."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds import masks
from tests.metric_kinds._per_case import no_repeat, one_case, pad_images

ndims = masks.ndims
arrays = (0,)
dtypes = masks.dtypes
repeat = no_repeat
n_cases = one_case


def examples(rng, ndim):
    return [(pair[0],) for pair in masks.examples(rng, ndim)] + [(masks.examples(rng, ndim)[0][1],)]


def swap(args):
    return None


def pad(args):
    return pad_images(args, count=1)


def empties(ndim):
    return {"empty": (np.zeros((9, 8) if ndim == 2 else (7, 6, 5), dtype=bool),)}
