"""Surface metrics on 2D binary masks, distances in pixels: arrays in, numbers out.

Normalized surface Dice (NSD) as MetricsReloaded defines it, on pixel borders (not DeepMind's
surfels at pixel corners, which give other values):

- the border of a mask is the mask minus its binary erosion by the 3×3 cross, pixels outside
  the image counting as background (so a mask touching the image edge has a border there);
- a border pixel of one mask is within tolerance τ when its Euclidean distance to the nearest
  border pixel of the other mask is at most τ;
- NSD = (pred-border pixels within τ + truth-border pixels within τ) / (all border pixels of both);
  1.0 when both masks are empty, 0.0 when exactly one is.

The tie rule is explicit and exact. Distances between pixels are square roots of integers, so
the comparison is made on squares: a pixel is within τ when its squared distance d² (an integer)
is at most floor(τ² · (1 + 1e-9)). A distance equal to τ therefore always counts, also when τ
is the rounded decimal of an irrational distance (τ = 2.2360679775 counts d = √5), and no
floating-point noise decides a tie.

"Within τ of the other border" is computed as membership in that border dilated by the disk of
integer offsets (dy, dx) with dy² + dx² ≤ floor(τ² · (1 + 1e-9)): the same set as the distance
rule, without a distance transform. Both masks are cropped to the bounding box of their union
first; every border pixel lies inside it, so the counts are unchanged.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

RELATIVE_TIE_TOLERANCE = 1e-9  # a distance equal to τ up to this relative noise counts as within τ


def _check_masks(prediction: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    prediction = np.asarray(prediction, dtype=bool)
    truth = np.asarray(truth, dtype=bool)
    if prediction.ndim != 2 or truth.ndim != 2:
        raise ValueError(f"masks must be 2D, got {prediction.ndim}D and {truth.ndim}D")
    if prediction.shape != truth.shape:
        raise ValueError(f"masks differ in shape: {prediction.shape} and {truth.shape}")
    return prediction, truth


def _check_tolerance(tolerance: float) -> float:
    tolerance = float(tolerance)
    if not math.isfinite(tolerance) or tolerance < 0:
        raise ValueError(f"the tolerance must be a finite number >= 0, got {tolerance!r}")
    return tolerance


def squared_tolerance(tolerance: float) -> int:
    """The largest squared pixel distance (an integer) within tolerance τ: floor(τ² (1 + 1e-9))."""
    tolerance = _check_tolerance(tolerance)
    return math.floor(tolerance * tolerance * (1.0 + RELATIVE_TIE_TOLERANCE))


def border(mask: np.ndarray) -> np.ndarray:
    """mask & ~erosion(mask, 3×3 cross), outside the image counting as background: the pixels
    of the mask with at least one 4-neighbour outside the mask or outside the image."""
    mask = np.asarray(mask, dtype=bool)
    if mask.ndim != 2:
        raise ValueError(f"the mask must be 2D, got {mask.ndim}D")
    # A pixel stays after erosion when it and its four neighbours are in the mask; pixels on the
    # image edge have a neighbour outside, hence never stay: they are border when in the mask.
    surrounded = mask[:-2, 1:-1] & mask[2:, 1:-1]
    surrounded &= mask[1:-1, :-2]
    surrounded &= mask[1:-1, 2:]
    result = mask.copy()
    result[1:-1, 1:-1] &= np.logical_not(surrounded, out=surrounded)
    return result


def disk_offsets(tolerance: float) -> np.ndarray:
    """The disk of integer offsets within τ, as a (2r+1)² uint8 kernel (1 inside the disk)."""
    return _disk(squared_tolerance(tolerance)).copy()


@lru_cache(maxsize=8)
def _disk(limit: int) -> np.ndarray:
    """disk_offsets for d² <= limit, made once per tolerance (read-only: it is shared)."""
    radius = math.isqrt(limit)
    dy, dx = np.mgrid[-radius:radius + 1, -radius:radius + 1]
    kernel = ((dy * dy + dx * dx) <= limit).astype(np.uint8)
    kernel.flags.writeable = False
    return kernel


def _union_box(prediction: np.ndarray, truth: np.ndarray) -> tuple[slice, slice]:
    union = prediction | truth
    rows = np.flatnonzero(union.any(axis=1))
    columns = np.flatnonzero(union.any(axis=0))
    return slice(rows[0], rows[-1] + 1), slice(columns[0], columns[-1] + 1)


def _within(border_pixels: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Pixels within τ of any pixel of `border_pixels` (a C-contiguous boolean array): its
    dilation by the disk kernel, as booleans."""
    import cv2  # imported here: challenges without surface metrics never pay for it

    # A bool array is bytes of 0 and 1: dilated as uint8 without a copy, and the dilation (a
    # maximum of such bytes) is bytes of 0 and 1 again, read back as bool without a copy.
    dilated = cv2.dilate(np.ascontiguousarray(border_pixels).view(np.uint8), kernel,
                         borderType=cv2.BORDER_CONSTANT, borderValue=0)
    return dilated.view(bool)


def surface_counts(prediction: np.ndarray, truth: np.ndarray, tolerance: float) -> tuple[int, int, int, int]:
    """(prediction border pixels within τ of the truth border, prediction border pixels,
    truth border pixels within τ of the prediction border, truth border pixels).
    With one mask empty, nothing is within tolerance of its (empty) border."""
    prediction, truth = _check_masks(prediction, truth)
    kernel = _disk(squared_tolerance(tolerance))
    if not prediction.any() and not truth.any():
        return 0, 0, 0, 0
    box = _union_box(prediction, truth)
    prediction_border, truth_border = border(prediction[box]), border(truth[box])
    n_prediction, n_truth = int(np.count_nonzero(prediction_border)), int(np.count_nonzero(truth_border))
    if n_prediction == 0 or n_truth == 0:
        return 0, n_prediction, 0, n_truth
    prediction_near = int(np.count_nonzero(prediction_border & _within(truth_border, kernel)))
    truth_near = int(np.count_nonzero(truth_border & _within(prediction_border, kernel)))
    return prediction_near, n_prediction, truth_near, n_truth


def normalized_surface_dice(prediction: np.ndarray, truth: np.ndarray, tolerance: float,
                            both_empty: float = 1.0) -> float:
    """NSD at tolerance τ pixels (MetricsReloaded, module docstring); `both_empty` when neither
    mask has a pixel, 0.0 when exactly one is empty."""
    prediction_near, n_prediction, truth_near, n_truth = surface_counts(prediction, truth, tolerance)
    total = n_prediction + n_truth
    if total == 0:
        return float(both_empty)
    return float((prediction_near + truth_near) / total)
