"""Calibration of predicted probabilities: a binary truth and a probability of the positive class
per case, arrays in, numbers out.

The intermediate is the binned reliability diagram: the cases put into equal-width bins of
probability, with the (weighted) count, mean probability and positive share of each bin. The
expected calibration error is derived from it; the Brier score needs no bins.

Case weights: `sample_weight` is one weight per case, or rows of weights at once ((rows, cases):
a bootstrap's counts), each row as if given alone; a case of weight 2 counts as the case twice.
"""

from __future__ import annotations

import numpy as np

from evaluation.metrics.aggregation import row_means
from evaluation.metrics.registry import metric
from evaluation.metrics.validation import (
    check_binary,
    check_choice,
    check_integer,
    check_same_length,
    check_sample_weight,
    check_values,
    per_row,
    weight_totals,
)


def _cases(y_true, y_prob) -> tuple[np.ndarray, np.ndarray]:
    truth = check_binary(y_true).astype(np.float64)
    probability = check_values(y_prob, "y_prob")
    check_same_length(y_true=truth, y_prob=probability)
    if ((probability < 0) | (probability > 1)).any():
        raise ValueError("y_prob must hold probabilities in [0, 1]")
    return truth, probability


def bin_indices(probability: np.ndarray, n_bins: int) -> np.ndarray:
    """The bin of each probability among `n_bins` equal-width bins of [0, 1]: bin b is
    (edge_b, edge_b+1], edges np.linspace(0, 1, n_bins + 1), with 0 in the first bin, so a value on
    an edge belongs to the bin below it (scikit-learn's calibration_curve bins the same way)."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    return np.searchsorted(edges[1:-1], probability, side="left")


CONFIDENCES = {
    "positive": "the probability of the positive class against the share of positives in its bin (Naeini et al.; "
                "torchmetrics' binary_calibration_error)",
    "top_label": "the confidence max(p, 1 − p) against the accuracy of the decision p > 0.5 in its bin (Guo et al.'s "
                 "top-label form for two classes; a tie p = 0.5 decides negative, as argmax takes the first class)",
}


@metric(kind="probabilities", better="lower", example={"n_bins": 10},
        variants={"confidence": CONFIDENCES},
        equals=("a brute-force loop over the bins of Naeini et al.'s and Guo et al.'s definition",
                "sklearn.calibration.calibration_curve (its bins' means)"),
        citation="Naeini, Cooper and Hauskrecht, AAAI 2015; Guo et al., ICML 2017")
def expected_calibration_error(y_true, y_prob, n_bins: int = 10, sample_weight=None, confidence: str = "positive"):
    """Expected calibration error (ECE) over equal-width probability bins, each weighted by its
    share of the cases.

    Σ_b (W_b / W) · |acc_b − conf_b| over the `n_bins` bins of [0, 1] (bin b = (b/M, (b+1)/M], 0 in
    the first: a value on an edge falls in the bin below), W_b the weight of the cases in bin b, W
    the total, conf_b their weighted mean confidence and acc_b their weighted mean outcome; empty
    bins count 0. `confidence="positive"`: confidence p, outcome y (the reliability of the positive
    class); `"top_label"`: confidence max(p, 1 − p), outcome [decision (p > 0.5) equals y].
    """
    truth, probability = _cases(y_true, y_prob)
    n_bins = check_integer(n_bins, "n_bins", low=1)
    check_choice(confidence, "confidence", tuple(CONFIDENCES))
    if confidence == "top_label":
        outcome = ((probability > 0.5) == truth.astype(bool)).astype(np.float64)
        probability = np.maximum(probability, 1.0 - probability)
    else:
        outcome = truth
    weights, single = check_sample_weight(sample_weight, len(truth))
    totals = weight_totals(weights)
    if not len(truth):  # no case: no bin, an undefined mean
        return per_row(np.full(len(weights), np.nan), single)
    bins = bin_indices(probability, n_bins)
    order = np.argsort(bins, kind="stable")
    starts = np.flatnonzero(np.r_[True, bins[order][1:] != bins[order][:-1]])
    # W_b · |acc_b − conf_b| = |Σ_{i in b} w_i (outcome_i − confidence_i)|
    gaps = np.add.reduceat(weights[:, order] * (outcome - probability)[order], starts, axis=1)
    return per_row(np.abs(gaps).sum(axis=1) / totals, single)


@metric(kind="probabilities", better="lower",
        equals=("sklearn.metrics.brier_score_loss",), citation="Brier, Monthly Weather Review 78(1), 1950")
def brier_score_loss(y_true, y_prob, sample_weight=None):
    """Brier score: the weighted mean squared difference between the predicted probability and
    the binary outcome.

    Σ w_i (p_i − y_i)² / Σ w_i, in [0, 1]. As scikit-learn's `brier_score_loss` for two classes.
    """
    truth, probability = _cases(y_true, y_prob)
    weights, single = check_sample_weight(sample_weight, len(truth))
    return per_row(row_means((probability - truth) ** 2, weights), single)
