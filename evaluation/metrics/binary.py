"""Binary decisions against binary labels: sensitivity, specificity and balanced accuracy, on one
data set and, vectorised, on many bootstrap resamples at once (rows of multiplicities)."""

from __future__ import annotations

import numpy as np


def check_binary_decisions(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    """Both as bool arrays, 1-D of one length, holding only 0/1 (or False/True); else ValueError."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim != 1 or y_pred.shape != y_true.shape:
        raise ValueError(f"y_true and y_pred must be 1-D of equal length, got {y_true.shape} and {y_pred.shape}")
    for name, values in (("y_true", y_true), ("y_pred", y_pred)):
        if not np.isin(values, (0, 1)).all():
            raise ValueError(f"{name} must hold only 0 and 1")
    return y_true.astype(bool), y_pred.astype(bool)


def resampled_rates(y_true, y_pred, counts) -> tuple[np.ndarray, np.ndarray]:
    """(sensitivity, specificity) of every resample; `counts` is (resamples x cases)
    multiplicities. NaN where a resample has no positive (sensitivity) or no negative
    (specificity) case."""
    y_true, y_pred = check_binary_decisions(y_true, y_pred)
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 2 or counts.shape[1] != len(y_true):
        raise ValueError(f"counts must be (resamples x {len(y_true)}), got {counts.shape}")
    positives = counts[:, y_true].sum(axis=1)
    negatives = counts[:, ~y_true].sum(axis=1)
    true_positives = counts[:, y_true & y_pred].sum(axis=1)
    true_negatives = counts[:, ~y_true & ~y_pred].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        sensitivity = np.where(positives > 0, true_positives / positives, np.nan)
        specificity = np.where(negatives > 0, true_negatives / negatives, np.nan)
    return sensitivity, specificity


def binary_rates(y_true, y_pred) -> tuple[float, float, float]:
    """(balanced accuracy, sensitivity, specificity), positive class 1. Balanced accuracy is
    (sensitivity + specificity) / 2 (sklearn's balanced_accuracy_score). ValueError unless both
    classes are present in y_true."""
    sensitivity, specificity = resampled_rates(y_true, y_pred, np.ones((1, len(np.asarray(y_true))), dtype=np.int64))
    if np.isnan(sensitivity[0]) or np.isnan(specificity[0]):
        raise ValueError("y_true must hold both classes")
    return float((sensitivity[0] + specificity[0]) / 2), float(sensitivity[0]), float(specificity[0])
