"""Binary decisions against binary labels: sensitivity and specificity of many weightings of the
cases at once (rows of multiplicities: the bootstrap's resamples, or one row of ones for the data
set itself); balanced accuracy is their mean (scikit-learn's balanced_accuracy_score)."""

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

