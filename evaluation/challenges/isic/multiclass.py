"""ISIC's goal metric, balanced multi-class accuracy, as its reference computes it: labels by
argmax (a prediction whose maximum is tied is undecided, hence wrong; a truth row whose maximum is
tied belongs to no category), per-category recall of the weighted images, the mean over the
categories present in the truth.

Its arithmetic is the reference's (isic-challenge-scoring 5.8.0, tests/test_isic_parity.py): the
hits of a category added left to right (scikit-learn's confusion matrix, filled by scipy), its
totals with Kahan compensation (pandas' groupby sum), the mean as pandas takes it. With
fractional score weights these orders of addition decide the last bit, so they stay here, for
parity, rather than in evaluation/metrics/confusion.py, whose balanced_accuracy_score is the
same number (tests/test_isic.py checks it to the rounding).
"""

from __future__ import annotations

import numpy as np

UNDECIDED = -1  # the label of a row whose maximum is tied between categories


def argmax_labels(scores: np.ndarray) -> np.ndarray:
    """Index of each row's maximum; UNDECIDED (-1) when the maximum is shared by several columns."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[1] == 0:
        raise ValueError("scores must be a 2-D array with at least one column")
    # Column by column (a few long vector operations, not a short reduction per row).
    columns = np.ascontiguousarray(scores.T)
    top = columns[0].copy()
    for column in columns[1:]:
        np.maximum(top, column, out=top)
    if np.isnan(top).any():  # np.argmax takes the first NaN as the maximum
        labels = np.argmax(scores, axis=1)
        labels[(scores == scores.max(axis=1, keepdims=True)).sum(axis=1) > 1] = UNDECIDED
        return labels
    labels = np.empty(len(top), dtype=np.intp)
    maxima = np.zeros(len(top), dtype=np.intp)  # columns holding the row's maximum
    for at in range(len(columns) - 1, -1, -1):  # the first column holding it last: np.argmax's choice
        equal = columns[at] == top
        labels[equal] = at
        maxima += equal
    labels[maxima > 1] = UNDECIDED
    return labels


def kahan_group_sums(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Per-group sums with Kahan compensation in row order (how pandas sums a groupby; equal to
    the plain sum whenever the values are whole numbers). Rows with a group outside
    [0, n_groups) are left out."""
    values = np.asarray(values, dtype=np.float64)
    groups = np.asarray(groups)
    inside = (groups >= 0) & (groups < n_groups)
    values, groups = values[inside], groups[inside]
    if np.all(values == np.round(values)) and np.abs(values).sum() < 2.0 ** 52:
        return np.bincount(groups, weights=values, minlength=n_groups).astype(np.float64)  # exact
    sums = [0.0] * n_groups
    compensation = [0.0] * n_groups
    for value, group in zip(values.tolist(), groups.tolist(), strict=True):
        y = value - compensation[group]
        t = sums[group] + y
        compensation[group] = t - sums[group] - y
        sums[group] = t
    return np.asarray(sums, dtype=np.float64)


def sequential_group_sums(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Per-group sums added left to right (how scipy fills a sparse confusion matrix)."""
    values = np.asarray(values, dtype=np.float64)
    sums = np.zeros(n_groups)
    for group in range(n_groups):
        members = values[groups == group]
        if len(members):
            sums[group] = np.cumsum(members)[-1]
    return sums


def per_class_recall(truth_scores: np.ndarray, prediction_scores: np.ndarray, sample_weight: np.ndarray) -> np.ndarray:
    """Per category: weighted rows whose truth and prediction argmax are that category, over
    weighted rows whose truth argmax is that category. A prediction row with a tied maximum is
    undecided, hence wrong; a truth row with a tied maximum belongs to no category. NaN for a
    category with no (weighted) truth rows."""
    truth_scores = np.asarray(truth_scores, dtype=np.float64)
    prediction_scores = np.asarray(prediction_scores, dtype=np.float64)
    weights = np.asarray(sample_weight, dtype=np.float64)
    if truth_scores.shape != prediction_scores.shape:
        raise ValueError(f"truth {truth_scores.shape} and prediction {prediction_scores.shape} differ in shape")
    if len(truth_scores) != len(weights):
        raise ValueError(f"{len(truth_scores)} rows of scores and {len(weights)} weights")
    return recall_of_labels(argmax_labels(truth_scores), argmax_labels(prediction_scores), weights,
                            truth_scores.shape[1])


def recall_of_labels(truth_labels: np.ndarray, prediction_labels: np.ndarray, sample_weight: np.ndarray,
                     n: int) -> np.ndarray:
    """per_class_recall from the argmax labels (argmax_labels) of the truth and the prediction,
    for a caller that needs the labels more than once."""
    correct = np.where(truth_labels == prediction_labels, truth_labels, UNDECIDED)
    hits = sequential_group_sums(sample_weight, correct, n)
    totals = kahan_group_sums(sample_weight, truth_labels, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(totals != 0, hits / np.where(totals != 0, totals, 1.0), np.nan)


def recall_of_labels_rows(truth_labels: np.ndarray, prediction_labels: np.ndarray, sample_weight: np.ndarray,
                          n: int) -> np.ndarray:
    """recall_of_labels of every row of `sample_weight` (rows, items): (rows, n), bit for bit:
    hits added left to right per class (sequential_group_sums), totals exact when every weight
    is a whole number, else Kahan-compensated in item order (kahan_group_sums)."""
    weights = np.asarray(sample_weight, dtype=np.float64)
    rows = len(weights)
    hits = np.zeros((rows, n))
    correct = np.where(truth_labels == prediction_labels, truth_labels, UNDECIDED)
    for label in range(n):
        members = np.flatnonzero(correct == label)
        if len(members):
            hits[:, label] = np.cumsum(weights[:, members], axis=1)[:, -1]
    whole = bool(np.all(weights == np.round(weights))) and (rows == 0 or np.abs(weights).sum(axis=1).max() < 2.0 ** 52)
    if whole:  # whole numbers: exact in any order, as kahan_group_sums' bincount
        inside = (truth_labels >= 0) & (truth_labels < n)
        one_hot = np.zeros((len(truth_labels), n))
        one_hot[np.flatnonzero(inside), truth_labels[inside]] = 1.0
        totals = weights @ one_hot
    else:
        totals = np.array([kahan_group_sums(row, truth_labels, n) for row in weights]).reshape(rows, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(totals != 0, hits / np.where(totals != 0, totals, 1.0), np.nan)


def nan_mean(values: np.ndarray) -> float:
    """Mean of the defined (non-NaN) values, summed as pandas does (NaN as 0, numpy's sum, then
    divided by the count); NaN when none is defined."""
    values = np.asarray(values, dtype=np.float64)
    defined = ~np.isnan(values)
    count = int(defined.sum())
    if count == 0:
        return float("nan")
    return float(np.where(defined, values, 0.0).sum() / count)


def nan_mean_rows(values: np.ndarray) -> np.ndarray:
    """nan_mean of every row (rows, k): the same sum (NaN as 0, np.add.reduce over the row) and
    division; NaN for a row without a defined value."""
    values = np.asarray(values, dtype=np.float64)
    defined = ~np.isnan(values)
    count = defined.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, np.where(defined, values, 0.0).sum(axis=1) / count, np.nan)


def balanced_multiclass_accuracy(truth_scores: np.ndarray, prediction_scores: np.ndarray,
                                 sample_weight: np.ndarray) -> float:
    """ISIC's goal metric: mean per-category recall over the categories present in the truth,
    labels by argmax, a tied prediction counting as wrong (see per_class_recall)."""
    return nan_mean(per_class_recall(truth_scores, prediction_scores, sample_weight))
