"""Per-class F1 of hard decisions with case weights, scikit-learn's `f1_score(average=None,
zero_division=0, sample_weight=...)`, vectorised over rows of weights (a bootstrap resample is
a row of counts; the plain score is the row of ones)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from evaluation.metrics.overlap import dice_from_counts


def per_class_f1(y_true, y_pred, labels: Sequence[int] = (0, 1), sample_weight=None) -> np.ndarray:
    """F1 of each label, 2 TP / (true + predicted) with every case counted by its weight, 0 for a
    label neither true nor predicted (zero_division=0). sample_weight: None (every case once),
    (n,) or (rows, n); the result has shape (len(labels),) or (rows, len(labels)). With whole-number
    weights every sum is exact, so a row of counts gives the F1 of the resample it stands for."""
    y_true, y_pred = np.asarray(y_true).ravel(), np.asarray(y_pred).ravel()
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true has {y_true.size} values, y_pred {y_pred.size}")
    weights = np.ones(y_true.size) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if weights.shape[-1] != y_true.size or weights.ndim not in (1, 2):
        raise ValueError(f"sample_weight of shape {weights.shape} does not weigh {y_true.size} cases")
    scores = []
    for label in labels:  # 2 TP / (predicted + true), as scikit-learn divides; 0 when both are empty
        true, predicted = (y_true == label).astype(np.float64), (y_pred == label).astype(np.float64)
        scores.append(np.asarray(dice_from_counts(weights @ (true * predicted), weights @ predicted, weights @ true,
                                                  both_empty=0.0)))
    return np.stack(scores, axis=-1)
