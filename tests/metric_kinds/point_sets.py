"""Kind "point_sets": f(truth, prediction, scores, ...), per image true points, predicted
points and one score per prediction (sequences of (n_i, ndim), (m_i, ndim), (m_i,) arrays);
sample_weight weighs the images. The arrays are ragged: no dtype or order variants here (the
"points" kind checks those on one image)."""

from __future__ import annotations

import numpy as np

from tests.metric_kinds import points
from tests.metric_kinds._per_case import count_cases, no_empties, repeat_case

ndims = (2, 3)
arrays = ()
dtypes = ()
empties = no_empties
repeat = repeat_case(3)
n_cases = count_cases


def _image(rng, ndim, n, m):
    truth = points._points(rng, n, ndim)
    near = truth[rng.integers(0, max(n, 1), m)] if n else points._points(rng, m, ndim)
    prediction = near + np.round(rng.normal(0, 1.5, (m, ndim)) * 8) / 8
    scores = np.round(rng.uniform(0, 1, m) * 16) / 16  # tied scores, within and across images
    return truth, prediction, scores


def examples(rng, ndim):
    cases = []
    for sizes in (((6, 9), (3, 2), (0, 4), (5, 12)), ((10, 10), (4, 7)), ((2, 0), (7, 15), (3, 3))):
        images = [_image(rng, ndim, n, m) for n, m in sizes]
        cases.append(tuple([image[k] for image in images] for k in range(3)))
    return cases


def swap(args):
    return None


def pad(args):
    offset = np.arange(2, 2 + np.shape(args[0][0])[1], dtype=np.float64)
    return ([t + offset for t in args[0]], [p + offset for p in args[1]], args[2], *args[3:])
