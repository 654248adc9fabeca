"""Metrics of decisions (predicted classes) against true classes, every one derived from one
intermediate: the weighted confusion counts.

Per class c, one against the rest: TP, FP, FN and TN, each the sum over the cases of the case's
weight times its indicator (`sample_weight`: the weight of each case, None for one each; (rows,
cases) for many weightings at once, a bootstrap resample being a row of counts). The sums are
numpy's pairwise sums over every case (np.sum of indicator × weight, the order in which the ISIC
reference sums them); with whole-number weights every sum is exact, so every metric equals
scikit-learn's bit for bit, and fractional weights agree with it to the last bit or so (it adds
the same terms left to right). From the counts: accuracy, balanced accuracy, sensitivity (recall),
specificity, PPV (precision), NPV, F1 per class and averaged, and from the full matrix Cohen's
kappa (unweighted, linear, quadratic).

A ratio whose denominator is zero (a class never true, never predicted) is `zero_division`:
NaN by default (undefined: the caller decides what to show), or a number such as scikit-learn's
0.0 or the ISIC challenges' 1.0. scikit-learn's own default, "warn", is its 0.0 with a warning;
pass zero_division=0.0 for its numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from evaluation.metrics.registry import metric
from evaluation.metrics.validation import (
    check_choice,
    check_classes,
    check_empty_value,
    check_flag,
    check_same_length,
    check_sample_weight,
    per_row,
)

SKLEARN = "scikit-learn 1.9 sklearn.metrics"
AVERAGES = ("binary", None, "macro", "weighted", "micro")
ZERO_DIVISION = {"zero_division": math.nan}  # the declared empty policy: a class never true nor predicted


def check_decisions(y_true, y_pred, labels=None, sample_weight=None):
    """(y_true, y_pred, labels, weights (rows, cases), single): 1-D arrays of one length without
    NaN, `labels` given (distinct, holding every value of both) or the sorted values present."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.ndim != 1 or y_pred.ndim != 1:
        raise ValueError(f"y_true and y_pred must be 1-D (one class per case), got shapes {y_true.shape} and "
                         f"{y_pred.shape}")
    check_same_length(y_true=y_true, y_pred=y_pred)
    for name, values in (("y_true", y_true), ("y_pred", y_pred)):
        if values.dtype.kind == "f" and np.isnan(values).any():
            raise ValueError(f"{name} holds NaN, which is no class")
        if values.dtype.kind not in "biufUS":
            raise ValueError(f"{name} must hold classes (numbers, booleans or strings), got {values.dtype}")
    labels = np.union1d(y_true, y_pred) if labels is None else check_classes(labels, y_true=y_true, y_pred=y_pred)
    weights, single = check_sample_weight(sample_weight, len(y_true))
    return y_true, y_pred, labels, np.ascontiguousarray(weights), single


def _sum(weights: np.ndarray, indicator: np.ndarray) -> np.ndarray:
    """(rows,): each row's Σ weight × indicator over every case, np.sum's pairwise order (a
    C-ordered row sums as the 1-D array would)."""
    return np.sum(weights * indicator, axis=1)


def _ratio(numerator, denominator, zero_division: float):
    """numerator / denominator, `zero_division` where the denominator is 0."""
    numerator, denominator = np.asarray(numerator, np.float64), np.asarray(denominator, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        result = np.where(denominator != 0, numerator / np.where(denominator != 0, denominator, 1.0), zero_division)
    return float(result) if result.ndim == 0 else result


@dataclass(frozen=True)
class ConfusionCounts:
    """Weighted TP, FP, FN, TN of one class against the rest: floats for one weighting, arrays
    (rows,) for rows of weights, (rows, classes) or (classes,) for every class at once."""

    tp: np.ndarray | float
    fp: np.ndarray | float
    fn: np.ndarray | float
    tn: np.ndarray | float

    def accuracy(self):
        """(TP + TN) / (TP + TN + FP + FN); NaN without weight."""
        return _ratio(self.tp + self.tn, self.tp + self.tn + self.fp + self.fn, math.nan)

    def sensitivity(self, zero_division: float = math.nan):
        """TP / (TP + FN): recall, the true positive rate."""
        return _ratio(self.tp, self.tp + self.fn, zero_division)

    def specificity(self, zero_division: float = math.nan):
        """TN / (TN + FP): the true negative rate."""
        return _ratio(self.tn, self.tn + self.fp, zero_division)

    def ppv(self, zero_division: float = math.nan):
        """TP / (TP + FP): precision, the positive predictive value."""
        return _ratio(self.tp, self.tp + self.fp, zero_division)

    def npv(self, zero_division: float = math.nan):
        """TN / (TN + FN): the negative predictive value."""
        return _ratio(self.tn, self.tn + self.fn, zero_division)

    def f1(self, zero_division: float = math.nan):
        """2TP / (2TP + FP + FN): F1, the Dice coefficient of the decisions. Added in this order
        (the ISIC reference's); scikit-learn divides by (TP + FN) + (TP + FP), the same number,
        equal to the bit for whole-number weights."""
        return _ratio(2 * self.tp, (2 * self.tp) + self.fp + self.fn, zero_division)


def class_counts(y_true, y_pred, labels, sample_weight: np.ndarray) -> ConfusionCounts:
    """ConfusionCounts of every class of `labels` against the rest, each (rows, classes), from
    checked inputs (check_decisions). Up to _LOOP_CLASSES classes, each count is its own pairwise
    sum over every case (the ISIC reference's); more classes take one pass over the cases
    (_class_counts_in_one_pass), not one per class."""
    if len(labels) > _LOOP_CLASSES:
        return _class_counts_in_one_pass(y_true, y_pred, labels, sample_weight)
    columns = []
    for label in labels:
        true, predicted = y_true == label, y_pred == label
        columns.append([_sum(sample_weight, true & predicted), _sum(sample_weight, ~true & predicted),
                        _sum(sample_weight, true & ~predicted), _sum(sample_weight, ~true & ~predicted)])
    if not columns:
        empty = np.zeros((len(sample_weight), 0))
        return ConfusionCounts(empty, empty, empty, empty)
    tp, fp, fn, tn = (np.stack([column[i] for column in columns], axis=1) for i in range(4))
    return ConfusionCounts(tp, fp, fn, tn)


# Classes whose counts are summed class by class (cases x classes work); more go through bincount.
_LOOP_CLASSES = 16


def _class_positions(values: np.ndarray, labels) -> np.ndarray:
    """The position of each value in `labels`, len(labels) for a value not among them."""
    labels = np.asarray(labels)
    order = np.argsort(labels, kind="stable")
    where = np.minimum(np.searchsorted(labels[order], values), len(labels) - 1)
    return np.where(labels[order][where] == values, order[where], len(labels))


def _class_counts_in_one_pass(y_true, y_pred, labels, sample_weight: np.ndarray) -> ConfusionCounts:
    """class_counts by scikit-learn's multilabel_confusion_matrix arithmetic, in time cases +
    classes per row: the weighted true, predicted and matched cases of every class by np.bincount
    (sums in case order), then FP = predicted − TP, FN = true − TP, TN = total − TP − FP − FN."""
    k = len(labels)
    true, predicted = _class_positions(y_true, labels), _class_positions(y_pred, labels)
    matched = np.where(true == predicted, true, k)
    tp, fp, fn, tn = (np.zeros((len(sample_weight), k)) for _ in range(4))
    for r, weights in enumerate(sample_weight):
        tp[r] = np.bincount(matched, weights, minlength=k + 1)[:k]
        fp[r] = np.bincount(predicted, weights, minlength=k + 1)[:k] - tp[r]
        fn[r] = np.bincount(true, weights, minlength=k + 1)[:k] - tp[r]
        tn[r] = weights.sum() - tp[r] - fp[r] - fn[r]
    return ConfusionCounts(tp, fp, fn, tn)


def binary_confusion(y_true, y_pred, sample_weight=None, *, pos_label=1) -> ConfusionCounts:
    """ConfusionCounts of `pos_label` against the rest: floats for one weighting (1-D or None),
    arrays (rows,) for rows of weights."""
    y_true, y_pred, _, weights, single = check_decisions(y_true, y_pred, None, sample_weight)
    counts = class_counts(y_true, y_pred, [pos_label], weights)
    if single:
        return ConfusionCounts(*(float(getattr(counts, name)[0, 0]) for name in ("tp", "fp", "fn", "tn")))
    return ConfusionCounts(*(getattr(counts, name)[:, 0] for name in ("tp", "fp", "fn", "tn")))


def confusion_matrix(y_true, y_pred, sample_weight=None, *, labels=None) -> np.ndarray:
    """The weighted confusion matrix, scikit-learn's: C[i, j] the weight of the cases of true
    class labels[i] predicted labels[j]; (classes, classes), or (rows, classes, classes)."""
    y_true, y_pred, labels, weights, single = check_decisions(y_true, y_pred, labels, sample_weight)
    k = len(labels)
    if k > _LOOP_CLASSES:  # one pass: each case adds its weight to its cell, in case order
        cells = _class_positions(y_true, labels) * k + _class_positions(y_pred, labels)
        matrix = np.empty((len(weights), k, k))
        for r, row in enumerate(weights):
            matrix[r] = np.bincount(cells, row, minlength=k * k).reshape(k, k)
        return per_row(matrix, single)
    matrix = np.zeros((len(weights), k, k))
    for i, true in enumerate(labels):
        is_true = y_true == true
        for j, predicted in enumerate(labels):
            matrix[:, i, j] = _sum(weights, is_true & (y_pred == predicted))
    return per_row(matrix, single)


def _nan_average(values: np.ndarray, weights: np.ndarray | None = None, *, kept_only: bool = False) -> np.ndarray:
    """Per row of values (rows, classes): the mean (weighted, if weights) of the values that are
    not NaN, as scikit-learn's _nanaverage (np.nanmean; weights all zero: the plain mean), or with
    `kept_only` the mean of those values alone (balanced_accuracy_score's); NaN if none is."""
    averaged = np.full(len(values), np.nan)
    for r, row in enumerate(values):
        defined = ~np.isnan(row)
        if not defined.any():
            continue
        if weights is not None and weights[r][defined].sum() != 0:
            averaged[r] = np.average(row[defined], weights=weights[r][defined])
        else:
            averaged[r] = np.mean(row[defined]) if kept_only else np.nanmean(row)
    return averaged


def _averaged_rate(y_true, y_pred, sample_weight, labels, pos_label, average, zero_division, rate):
    """A rate of ConfusionCounts (`rate(counts, zero_division)`) averaged as scikit-learn's
    precision_recall_fscore_support: "binary" (pos_label's), None (each class's, in `labels`
    order), "macro" (mean of the defined), "weighted" (by each class's weighted true cases),
    "micro" (the counts summed over the classes first)."""
    check_choice(average, "average", AVERAGES)
    zero_division = check_empty_value(zero_division, "zero_division")
    y_true, y_pred, labels, weights, single = check_decisions(y_true, y_pred, labels, sample_weight)
    if average == "binary":
        if len(labels) > 2:
            raise ValueError(f"average='binary' needs two classes, got {len(labels)}: {labels.tolist()}; choose "
                             f"average None, 'macro', 'weighted' or 'micro'")
        if len(labels) == 2 and pos_label not in labels.tolist():
            raise ValueError(f"pos_label={pos_label!r} is not one of the classes {labels.tolist()}")
        labels = [pos_label]
    counts = class_counts(y_true, y_pred, labels, weights)
    if average == "micro":
        summed = ConfusionCounts(*(getattr(counts, name).sum(axis=1, keepdims=True)
                                   for name in ("tp", "fp", "fn", "tn")))
        values = rate(summed, zero_division)[:, 0]
    else:
        per_class = np.asarray(rate(counts, zero_division), dtype=np.float64).reshape(len(weights), len(labels))
        if average is None:
            return per_row(per_class, single)
        if average == "binary":
            values = per_class[:, 0]
        elif average == "macro":
            values = _nan_average(per_class)
        else:
            values = _nan_average(per_class, counts.tp + counts.fn)
    return per_row(values, single)


_AVERAGE_VARIANT = {"average": "'binary' (pos_label's, two classes), None (each class's), 'macro', 'weighted' "
                               "(by true cases), 'micro' (counts summed first), as scikit-learn",
                    "zero_division": "a ratio with a zero denominator: NaN (default), or a number such as 0.0 "
                                     "(scikit-learn's 'warn') or 1.0 (the ISIC challenges)"}


@metric(kind="decisions", better="higher", empty=ZERO_DIVISION, variants=_AVERAGE_VARIANT,
        equals=(f"{SKLEARN}.recall_score (bit for bit with whole-number weights)",),
        citation="Yerushalmy, Public Health Reports 62(40), 1947 (sensitivity)")
def recall_score(y_true, y_pred, sample_weight=None, *, labels=None, pos_label=1, average="binary",
                 zero_division=math.nan):
    """Sensitivity (recall, true positive rate): TP / (TP + FN).

    The weighted share of the cases of a class that are predicted as it; per class one against
    the rest, averaged by `average`. `zero_division` when the class has no (weighted) case.
    """
    return _averaged_rate(y_true, y_pred, sample_weight, labels, pos_label, average, zero_division,
                          ConfusionCounts.sensitivity)


@metric(kind="decisions", better="higher", empty=ZERO_DIVISION, variants=_AVERAGE_VARIANT,
        equals=(f"{SKLEARN}.precision_score (bit for bit with whole-number weights)",),
        citation="Altman & Bland, BMJ 309(6947), 1994 (predictive values)")
def precision_score(y_true, y_pred, sample_weight=None, *, labels=None, pos_label=1, average="binary",
                    zero_division=math.nan):
    """Positive predictive value (precision): TP / (TP + FP).

    The weighted share of the cases predicted as a class that truly are; per class one against
    the rest, averaged by `average`. `zero_division` when nothing is predicted as the class.
    """
    return _averaged_rate(y_true, y_pred, sample_weight, labels, pos_label, average, zero_division,
                          ConfusionCounts.ppv)


@metric(kind="decisions", better="higher", empty=ZERO_DIVISION, variants=_AVERAGE_VARIANT,
        equals=(f"{SKLEARN}.recall_score of the other class (pos_label=0; bit for bit with whole-number weights)",),
        citation="Yerushalmy, Public Health Reports 62(40), 1947 (specificity)")
def specificity_score(y_true, y_pred, sample_weight=None, *, labels=None, pos_label=1, average="binary",
                      zero_division=math.nan):
    """Specificity (true negative rate): TN / (TN + FP).

    The weighted share of the cases not of a class that are not predicted as it; per class one
    against the rest, averaged by `average`. `zero_division` when every case is of the class.
    """
    return _averaged_rate(y_true, y_pred, sample_weight, labels, pos_label, average, zero_division,
                          ConfusionCounts.specificity)


@metric(kind="decisions", better="higher", empty=ZERO_DIVISION, variants=_AVERAGE_VARIANT,
        equals=(f"{SKLEARN}.precision_score of the other class (pos_label=0; bit for bit with whole-number weights)",),
        citation="Altman & Bland, BMJ 309(6947), 1994 (predictive values)")
def npv_score(y_true, y_pred, sample_weight=None, *, labels=None, pos_label=1, average="binary",
              zero_division=math.nan):
    """Negative predictive value: TN / (TN + FN).

    The weighted share of the cases not predicted as a class that truly are not of it; per class
    one against the rest, averaged by `average`. `zero_division` when every case is predicted as it.
    """
    return _averaged_rate(y_true, y_pred, sample_weight, labels, pos_label, average, zero_division,
                          ConfusionCounts.npv)


@metric(kind="decisions", better="higher", symmetric=True, empty=ZERO_DIVISION, variants=_AVERAGE_VARIANT,
        equals=(f"{SKLEARN}.f1_score (bit for bit with whole-number weights)",),
        citation="van Rijsbergen, Information Retrieval, 1979 (F-measure); Dice, Ecology 26(3), 1945")
def f1_score(y_true, y_pred, sample_weight=None, *, labels=None, pos_label=1, average="binary",
             zero_division=math.nan):
    """F1 score: 2TP / (2TP + FP + FN), the harmonic mean of precision and recall.

    Per class one against the rest (the Dice coefficient of its decisions), averaged by
    `average`; `zero_division` when the class is neither true nor predicted.
    """
    return _averaged_rate(y_true, y_pred, sample_weight, labels, pos_label, average, zero_division,
                          ConfusionCounts.f1)


@metric(kind="decisions", better="higher", symmetric=True,
        equals=(f"{SKLEARN}.accuracy_score (bit for bit with whole-number weights)",),
        citation="scikit-learn's accuracy_score (the share of cases classified right)")
def accuracy_score(y_true, y_pred, sample_weight=None, *, labels=None):
    """Accuracy: the weighted share of cases whose predicted class is the true one.

    Σ w [y_pred = y_true] / Σ w; for two classes written (TP + TN) / (TP + TN + FP + FN) of the
    larger one, in that order of additions (the ISIC reference's). NaN without weight.
    """
    y_true, y_pred, labels, weights, single = check_decisions(y_true, y_pred, labels, sample_weight)
    if len(labels) <= 2:
        counts = class_counts(y_true, y_pred, labels[-1:] if len(labels) else [0], weights)
        values = np.asarray(counts.accuracy(), dtype=np.float64).reshape(len(weights))
    else:
        values = _ratio(_sum(weights, y_true == y_pred), np.sum(weights, axis=1), math.nan)
    return per_row(values, single)


@metric(kind="decisions", better="higher",
        variants={"adjusted": "True: rescaled so that chance is 0 and perfect 1, (score - 1/k) / (1 - 1/k)"},
        equals=(f"{SKLEARN}.balanced_accuracy_score (bit for bit with whole-number weights)",),
        citation="Brodersen et al., ICPR 2010, 3121-3124")
def balanced_accuracy_score(y_true, y_pred, sample_weight=None, *, labels=None, adjusted=False):
    """Balanced accuracy: the mean over the classes of their sensitivity (recall).

    Each class present in the (weighted) truth counts once, whatever its size; a class never true
    is left out, as scikit-learn leaves it out. For two classes: (sensitivity + specificity) / 2.
    NaN without weight.
    """
    adjusted = check_flag(adjusted, "adjusted")
    y_true, y_pred, labels, weights, single = check_decisions(y_true, y_pred, labels, sample_weight)
    counts = class_counts(y_true, y_pred, labels, weights)
    recall = np.asarray(counts.sensitivity(math.nan), dtype=np.float64).reshape(len(weights), len(labels))
    values = _nan_average(recall, kept_only=True)
    if adjusted:
        chance = 1 / (~np.isnan(recall)).sum(axis=1)
        values = (values - chance) / (1 - chance)
    return per_row(values, single)


@metric(kind="decisions", better="higher", symmetric=True, empty={"replace_undefined_by": math.nan},
        variants={"weights": "None: every disagreement counts 1; 'linear': |i - j|; 'quadratic': (i - j)², "
                             "i and j the classes' positions in `labels`"},
        equals=(f"{SKLEARN}.cohen_kappa_score (bit for bit with whole-number weights)",),
        citation="Cohen, Educ Psychol Meas 20(1), 1960; Cohen, Psychol Bull 70(4), 1968 (weighted)")
def cohen_kappa_score(y1, y2, sample_weight=None, *, labels=None, weights=None, replace_undefined_by=math.nan):
    """Cohen's kappa: agreement between two raters beyond chance, 1 - Σ W∘C / Σ W∘E.

    C the weighted confusion matrix, E the one expected by chance (the outer product of its
    margins over the total), W the disagreement weights (`weights`). `replace_undefined_by`
    when there is no case or chance agreement is perfect (a denominator of zero).
    """
    check_choice(weights, "weights", (None, "linear", "quadratic"))
    replace_undefined_by = check_empty_value(replace_undefined_by, "replace_undefined_by")
    matrices = confusion_matrix(y1, y2, sample_weight, labels=labels)
    single = matrices.ndim == 2
    values = np.array([_kappa(matrix, weights, replace_undefined_by)
                       for matrix in (matrices[None] if single else matrices)])
    return per_row(values, single)


def _kappa(confusion: np.ndarray, weights: str | None, undefined: float) -> float:
    """scikit-learn's cohen_kappa_score from its confusion matrix, its operations in order."""
    n_classes = confusion.shape[0]
    sum0 = np.sum(confusion, axis=0)
    sum1 = np.sum(confusion, axis=1)
    denominator = np.sum(sum0)
    if denominator == 0:
        return undefined
    expected = np.outer(sum0, sum1) / denominator
    if weights is None:
        w_mat = np.ones([n_classes, n_classes])
        np.fill_diagonal(w_mat, 0)
    else:
        w_mat = np.zeros([n_classes, n_classes])
        w_mat += np.arange(n_classes)
        w_mat = np.abs(w_mat - w_mat.T) if weights == "linear" else (w_mat - w_mat.T) ** 2
    chance = np.sum(w_mat * expected)
    if chance == 0:
        return undefined
    return float(1 - np.sum(w_mat * confusion) / chance)
