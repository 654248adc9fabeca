"""Landmark detection: predicted and true positions of the same landmarks, arrays in, numbers out.

The intermediate is the radial error of each landmark: the Euclidean distance between its
predicted and its true position in the spacing's units (mm for a physical spacing). Points are
(n, ndim) arrays of coordinates in the array's axis order (voxel indices, fractional allowed),
row i of the prediction paired with row i of the truth; `spacing` gives one physical size per
axis (None: voxel units). Missing landmarks are the caller's policy (a penalty distance, say):
every row here is a landmark that was predicted.

Case weights: the pooled metrics take `sample_weight`, one weight per landmark (or rows of
weights, e.g. a bootstrap's counts expanded to the landmarks of each image); a landmark of
weight 2 counts as that landmark twice.
"""

from __future__ import annotations

import numpy as np

from evaluation.metrics.aggregation import row_means
from evaluation.metrics.registry import metric
from evaluation.metrics.validation import (
    check_finite,
    check_flag,
    check_points,
    check_same_shape,
    check_sample_weight,
    check_spacing,
    check_values,
    per_row,
    weight_totals,
)

ISBI_2015 = "Wang et al., Medical Image Analysis 31, 2016 (ISBI 2015 cephalometric landmark challenge)"


def _radial_errors(prediction, truth, spacing) -> np.ndarray:
    prediction, truth = check_points(prediction, "prediction"), check_points(truth, "truth")
    check_same_shape(prediction=prediction, truth=truth)
    scale = check_spacing(spacing, prediction.shape[1])
    return np.sqrt((((prediction - truth) * scale) ** 2).sum(axis=1))


@metric(kind="landmarks", better="lower", unit="length", symmetric=True, returns="array",
        equals=("numpy.linalg.norm of the scaled differences (brute force)",), citation=ISBI_2015)
def radial_errors(prediction, truth, spacing=None) -> np.ndarray:
    """Radial error of each landmark: the distance between its predicted and true positions, in
    the spacing's units.

    ‖(p_i − t_i) · s‖₂ for each row i, s the spacing (one size per axis; None: voxel units).
    """
    return _radial_errors(prediction, truth, spacing)


@metric(kind="landmarks", better="lower", unit="length", symmetric=True,
        equals=("numpy mean of the radial errors (brute force)",), citation=ISBI_2015)
def mean_radial_error(prediction, truth, spacing=None, sample_weight=None):
    """Mean radial error (MRE): the weighted mean distance between predicted and true landmark
    positions, in the spacing's units.

    Σ w_i ‖(p_i − t_i) · s‖₂ / Σ w_i over the landmarks.
    """
    errors = _radial_errors(prediction, truth, spacing)
    weights, single = check_sample_weight(sample_weight, len(errors))
    return per_row(row_means(errors, weights), single)


@metric(kind="errors", better="higher", returns="array", example={"thresholds": (2.0, 2.5, 3.0, 4.0)},
        variants={"inclusive": "False: errors < threshold (strict), True: errors ≤ threshold"},
        equals=("numpy mean of errors < threshold (brute force)",), citation=ISBI_2015)
def success_detection_rate(errors, thresholds, inclusive: bool = False, sample_weight=None):
    """Success detection rate (SDR): the weighted share of landmarks whose radial error is below
    each threshold.

    Σ w_i [e_i < r] / Σ w_i for each threshold r (in the errors' unit, e.g. 2, 2.5, 3 and 4 mm);
    `inclusive=True` counts e_i ≤ r instead. A scalar threshold gives a float (per row of
    weights), a sequence one share per threshold.
    """
    errors = check_values(errors, "errors")
    if (errors < 0).any():
        raise ValueError("errors must be >= 0 (distances)")
    limits = check_finite(thresholds, "thresholds")
    if limits.ndim > 1 or (limits < 0).any():
        raise ValueError(f"thresholds must be one number or a 1-D sequence of numbers >= 0, got {thresholds!r}")
    inclusive = check_flag(inclusive, "inclusive")
    weights, single = check_sample_weight(sample_weight, len(errors))
    totals = weight_totals(weights)
    within = errors[:, None] <= limits.ravel()[None, :] if inclusive else errors[:, None] < limits.ravel()[None, :]
    shares = weights @ within / totals[:, None]  # (rows, thresholds)
    if limits.ndim == 0:
        return per_row(shares[:, 0], single)
    return per_row(shares, single)
