"""Overlap metrics on binary masks: arrays in, numbers out."""

from __future__ import annotations

import numpy as np


def dice_from_counts(intersection: float, prediction_size: float, truth_size: float,
                     both_empty: float = 1.0) -> float:
    """2|P∩G| / (|P| + |G|); `both_empty` when neither mask has a voxel (the usual convention is
    1.0: nothing to find, nothing found). Sizes may be weighted (e.g. by voxel volume)."""
    total = prediction_size + truth_size
    if total == 0:
        return float(both_empty)
    return float(2.0 * intersection / total)


def overlap_counts(prediction: np.ndarray, truth: np.ndarray) -> tuple[int, int, int]:
    """(|P∩G|, |P|, |G|) of two boolean masks of the same shape."""
    prediction = np.asarray(prediction, dtype=bool)
    truth = np.asarray(truth, dtype=bool)
    if prediction.shape != truth.shape:
        raise ValueError(f"masks differ in shape: {prediction.shape} and {truth.shape}")
    return (int(np.count_nonzero(prediction & truth)), int(np.count_nonzero(prediction)),
            int(np.count_nonzero(truth)))


def dice(prediction: np.ndarray, truth: np.ndarray, both_empty: float = 1.0) -> float:
    """Dice coefficient of two boolean masks of the same shape; `both_empty` if both are empty."""
    return dice_from_counts(*overlap_counts(prediction, truth), both_empty=both_empty)
