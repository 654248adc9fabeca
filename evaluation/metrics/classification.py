"""Ranking metrics of binary scores, every one derived from one intermediate: the weighted ranking
curve.

The curve is made of one sort of the scores (`score_order`, ties in scikit-learn's order) and,
per row of `sample_weight` (the weight of each case; (rows, cases) for many weightings at once,
a bootstrap resample being a row of counts), the cumulative weighted positives (tps) and
negatives (fps) at each distinct score, scores decreasing: scikit-learn's `_binary_clf_curve`.
From it: ROC AUC (partial at `max_fpr`, McClish-standardised as scikit-learn), average precision,
PPV at a recall (RARE26's rule), sensitivity at a specificity and back, ISIC's AUC above a
sensitivity, the ROC and precision-recall points; multi-label and multi-class one-vs-rest AUC
and AP label by label. Everything depends on the order of the scores only, ties entering together.

Names and semantics are scikit-learn's, and so are the floating-point operations of the curve
and of each metric in their order: the numbers are scikit-learn's bit for bit (whole-number
weights; fractional ones follow scikit-learn 1.7, which the ISIC reference pins: see
`roc_auc_of_orders`). Where scikit-learn returns 0 with a warning or raises for an undefined
value (one class only), the value here is NaN; the challenge says what it shows instead.

The bootstrap paths of RARE26 (`resampled_ranking_metrics`, `metrics_with_drawn_positives`,
`metrics_with_drawn_groups`) read the same curve counts with an exact arithmetic for whole
counts: their section says how, and why it exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from evaluation.metrics.registry import metric
from evaluation.metrics.resampling import draws_to_counts, whole_counts
from evaluation.metrics.validation import (
    check_binary,
    check_choice,
    check_classes,
    check_finite,
    check_in_range,
    check_same_length,
    check_sample_weight,
    check_values,
    per_row,
)

SKLEARN = "scikit-learn 1.9 sklearn.metrics"

# ---- the one sort ------------------------------------------------------------------------------


def stable_order(scores: np.ndarray) -> np.ndarray:
    """np.argsort(scores, kind="mergesort") of finite float64 scores, 2-5x sooner. The floats are
    sorted as integers ordered as they are (the IEEE bits, -0.0 made +0.0 as it equals it, the
    other bits of negatives flipped) by numpy's default sort, which is not stable but is several
    times quicker (vectorised); then, where scores tie, each run of equal scores is put back in
    index order: the one permutation a stable sort gives."""
    bits = _sortable_bits(scores)
    order = np.argsort(bits)
    ordered = bits[order]
    tied = ordered[1:] == ordered[:-1]
    if tied.any():
        # The run of each position, times n, plus the index: unique keys, sorted by run and
        # then by index; the runs keep their positions, so subtracting them leaves the indices.
        run = np.zeros(len(bits), dtype=np.int64)
        np.cumsum(~tied, out=run[1:])
        run *= len(bits)
        order = np.sort(run + order) - run
    return order


def _sortable_bits(scores: np.ndarray) -> np.ndarray:
    """Finite float64 scores as int64 in the same order (the IEEE bits, -0.0 made +0.0, the other
    bits of negatives flipped)."""
    bits = (scores + 0.0).view(np.int64)
    if len(bits) and bits.min() < 0:
        bits = np.where(bits < 0, bits ^ np.int64(0x7FFFFFFFFFFFFFFF), bits)
    return bits


def _quick_order(scores: np.ndarray) -> np.ndarray:
    """An ascending order of finite float64 scores, ties in any order (stable_order's sort
    without its repair of ties)."""
    return np.argsort(_sortable_bits(scores))


@dataclass(frozen=True)
class ScoreOrder:
    """One sort of a binary scoring, shared by every row of weights: the cases by decreasing
    score, ties in scikit-learn's order (stable ascending sort, reversed), and the runs of equal
    scores (one curve point each). `item_weights`, if given: the cases' own weights (ISIC's score
    weights), whose curve is made once however often it is asked for."""

    order: np.ndarray  # case indices, scores decreasing
    positive: np.ndarray  # the truth of the cases in that order
    starts: np.ndarray  # first position of each run of equal scores
    ends: np.ndarray  # last position of each run
    thresholds: np.ndarray  # the score of each run
    item_weights: np.ndarray | None = None

    @cached_property
    def positives_through(self) -> np.ndarray:
        """Per run: the positives up to its end."""
        return np.cumsum(self.positive)[self.ends]

    @cached_property
    def negatives_through(self) -> np.ndarray:
        """Per run: the negatives up to its end."""
        return self.ends + 1 - self.positives_through

    @cached_property
    def item_curve(self) -> RankingCurve:
        """The curve of item_weights."""
        if self.item_weights is None:
            raise ValueError("this score order was made without item weights")
        curve = _curve_of_order(self, self.item_weights)
        for values in (curve.fps, curve.tps, curve.thresholds):
            values.flags.writeable = False  # shared by every caller
        return curve


def score_order(y_true, y_score, item_weights=None, *, stable: bool = True) -> ScoreOrder:
    """The one sort of `y_score` (1-D, finite) with the truth `y_true` (0/1), for any weights.
    `stable=False` leaves the cases within a run of equal scores in any order (a quicker sort): the
    same curve for whole-number weights, whose sums within a run are exact in any order."""
    positive = check_binary(y_true)
    scores = check_values(y_score, "y_score")
    check_same_length(y_true=positive, y_score=scores)
    if item_weights is not None:
        item_weights = np.array(item_weights, dtype=np.float64)  # a copy: the caller's may change
        check_same_length(y_true=positive, item_weights=item_weights)
    order = (stable_order(scores) if stable else _quick_order(scores))[::-1]
    scores = scores[order]
    ends = np.r_[np.flatnonzero(np.diff(scores)), len(scores) - 1] if len(scores) else np.zeros(0, dtype=np.intp)
    starts = np.r_[0, ends[:-1] + 1] if len(ends) else ends
    ends = ends.astype(np.intp)
    return ScoreOrder(order, positive[order], starts.astype(np.intp), ends, scores[ends], item_weights)


# ---- the curve of one weighting ---------------------------------------------------------------


@dataclass(frozen=True)
class RankingCurve:
    """Cumulative weighted positives (tps) and negatives (fps) at each distinct score, scores
    decreasing: scikit-learn's _binary_clf_curve, zero-weight cases left out as it does."""

    fps: np.ndarray
    tps: np.ndarray
    thresholds: np.ndarray

    @property
    def has_positives(self) -> bool:
        return len(self.tps) > 0 and self.tps[-1] > 0

    @property
    def has_negatives(self) -> bool:
        return len(self.fps) > 0 and self.fps[-1] > 0


def ranking_curve(y_true, y_score, sample_weight=None) -> RankingCurve:
    """The curve of one weighting (1-D `sample_weight`, None: every case once)."""
    order = score_order(y_true, y_score)
    weights, single = check_sample_weight(sample_weight, len(order.order))
    if not single:
        raise ValueError("ranking_curve takes one weighting (1-D sample_weight)")
    return _curve_of_order(order, weights[0])


def ranking_curve_of_order(order: ScoreOrder, sample_weight) -> RankingCurve:
    """The curve of the scoring that `order` sorted, with these weights (one per case, finite and
    non-negative): ranking_curve, bit for bit (cases of weight 0 add +0.0 to the sums and make no
    point), without sorting again; the order's item_curve when these are its item weights."""
    weights, single = check_sample_weight(sample_weight, len(order.order))
    if not single:
        raise ValueError("ranking_curve_of_order takes one weighting (1-D sample_weight)")
    return _curve_of_row(order, weights[0])


def _curve_of_row(order: ScoreOrder, weights: np.ndarray) -> RankingCurve:
    """The order's curve with one row of weights: its item_curve (made once) when these are its
    item weights, bit for bit, else a pass over the order."""
    known = order.item_weights
    if known is not None and np.array_equal(known.view(np.int64), weights.view(np.int64)):
        return order.item_curve
    return _curve_of_order(order, weights)


def _curve_of_order(order: ScoreOrder, weights: np.ndarray) -> RankingCurve:
    w = weights[order.order]
    if not len(w):
        empty = np.zeros(0)
        return RankingCurve(empty, empty, empty)
    if np.count_nonzero(w) == len(w):  # every run has weight: every run is a point
        ends, thresholds = order.ends, order.thresholds
    else:
        points = np.flatnonzero(np.logical_or.reduceat(w != 0, order.starts))
        ends, thresholds = order.ends[points], order.thresholds[points]
    # truth * weights and (1 - truth) * weights, as scikit-learn: the same numbers (+0.0 where the
    # other class is, as weights are not negative), made without the products.
    positive_weights = np.where(order.positive, w, 0.0)
    tps = np.cumsum(positive_weights)[ends]
    fps = np.cumsum(w - positive_weights)[ends]
    return RankingCurve(fps=fps, tps=tps, thresholds=thresholds)


# ---- the curve of many weightings at once ------------------------------------------------------


def _columns(weights: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """weights[:, columns] in the weights' memory order (np.take, quicker, makes C order)."""
    if weights.flags.f_contiguous and not weights.flags.c_contiguous:
        return weights[:, columns]
    return np.take(weights, columns, axis=1)


def _running_sums(weights: np.ndarray, through: np.ndarray) -> np.ndarray:
    """(rows, points): per row of weights (rows, cases), the sum of its first through[g] cases,
    added in order (a cumulative sum along the row, as a 1-D cumsum), 0.0 where through[g] is 0."""
    by_item = weights.flags.f_contiguous and not weights.flags.c_contiguous
    running = np.zeros((weights.shape[0], weights.shape[1] + 1), order="F" if by_item else "C")
    np.cumsum(weights, axis=1, out=running[:, 1:])
    return running[:, through]


def curve_counts(order: ScoreOrder, sample_weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(tps, fps), each (rows, runs): per row of `sample_weight` (rows, cases: checked, finite and >= 0)
    the cumulative weighted positives and negatives at the end of every run of equal scores, the
    sums of the curve of that row (ranking_curve), added in the same order. A run without weight
    in a row repeats the previous run's sums there (a point of zero width)."""
    tps = _running_sums(_columns(sample_weight, order.order[order.positive]), order.positives_through)
    fps = _running_sums(_columns(sample_weight, order.order[~order.positive]), order.negatives_through)
    return tps, fps


def _weights_in_order(weights: np.ndarray) -> np.ndarray:
    """The running sums along every row are fastest with each row's cases together when the
    cases outnumber the rows, else with each case's rows together (an accumulate step per case);
    either order gives each row's sums sequentially."""
    return np.ascontiguousarray(weights) if weights.shape[1] >= len(weights) else np.asfortranarray(weights)


# ---- metrics of one curve (scikit-learn's operations, in its order) ----------------------------


def roc_points(curve: RankingCurve, drop_intermediate: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fpr, tpr, thresholds) as scikit-learn's roc_curve: collinear points dropped when asked,
    then the (0, 0) point with threshold +inf. NaN rates when a class is absent."""
    fps, tps, thresholds = curve.fps, curve.tps, curve.thresholds
    if drop_intermediate and len(fps) > 2:
        keep = np.where(np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True])[0]
        fps, tps, thresholds = fps[keep], tps[keep], thresholds[keep]
    tps = np.r_[0, tps]
    fps = np.r_[0, fps]
    thresholds = np.r_[np.inf, thresholds]
    fpr = fps / fps[-1] if fps[-1] > 0 else np.repeat(np.nan, fps.shape)
    tpr = tps / tps[-1] if tps[-1] > 0 else np.repeat(np.nan, tps.shape)
    return fpr, tpr, thresholds


def trapezoid_area(x: np.ndarray, y: np.ndarray) -> float:
    """Area under y(x) by the trapezoidal rule, x monotone (scikit-learn's auc)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    check_same_length(x=x, y=y)
    if len(x) < 2:
        raise ValueError("at least 2 points are needed to compute an area")
    dx = np.diff(x)
    direction = 1
    if np.any(dx < 0):
        if not np.all(dx <= 0):
            raise ValueError("x is neither increasing nor decreasing")
        direction = -1
    return float(direction * np.add.reduce(dx * (y[1:] + y[:-1]) / 2.0))


def roc_auc(curve: RankingCurve, max_fpr: float | None = None) -> float:
    """ROC AUC of a curve (scikit-learn's roc_auc_score, max_fpr included); NaN without
    positives or without negatives."""
    if not (curve.has_positives and curve.has_negatives):
        return float("nan")
    fpr, tpr, _ = roc_points(curve, drop_intermediate=True)
    if max_fpr is None or max_fpr == 1:
        return trapezoid_area(fpr, tpr)
    # The area up to max_fpr (the segment crossing it interpolated), standardised by McClish's
    # correction so that chance is 0.5 and a perfect ranking 1, as scikit-learn does.
    stop = int(np.searchsorted(fpr, max_fpr, "right"))
    x_interp, y_interp = [fpr[stop - 1], fpr[stop]], [tpr[stop - 1], tpr[stop]]
    tpr = np.append(tpr[:stop], np.interp(max_fpr, x_interp, y_interp))
    fpr = np.append(fpr[:stop], max_fpr)
    partial_auc = trapezoid_area(fpr, tpr)
    min_area = 0.5 * max_fpr**2
    max_area = max_fpr
    return float(0.5 * (1 + (partial_auc - min_area) / (max_area - min_area)))


def precision_at_thresholds(curve: RankingCurve) -> np.ndarray:
    """Precision at each distinct score (0 where nothing is predicted positive, as scikit-learn)."""
    predicted = curve.tps + curve.fps
    precision = np.zeros_like(curve.tps)
    np.divide(curve.tps, predicted, out=precision, where=(predicted != 0))
    return precision


def average_precision(curve: RankingCurve) -> float:
    """Step-wise average precision, no interpolation (scikit-learn's average_precision_score);
    NaN without positives."""
    if not curve.has_positives:
        return float("nan")
    precision = precision_at_thresholds(curve)
    recall = curve.tps / curve.tps[-1]
    precision = np.hstack((precision[::-1], 1))
    recall = np.hstack((recall[::-1], 0))
    return float(max(0.0, -np.sum(np.diff(recall) * precision[:-1])))


def auc_above_sensitivity(curve: RankingCurve, sensitivity: float = 0.8) -> float:
    """ISIC's AUC80 of a curve: the area under the ROC curve (all points kept) between the
    sensitivity and 1, from the point (FPR*, sensitivity), FPR* interpolated on the segment that
    crosses it, to FPR = 1. NaN without positives or without negatives."""
    if not (curve.has_positives and curve.has_negatives):
        return float("nan")
    fpr, tpr, _ = roc_points(curve, drop_intermediate=False)
    index = int(tpr.searchsorted(sensitivity, side="left"))
    fpr_at_threshold = np.interp(sensitivity, tpr[index - 1:index + 1], fpr[index - 1:index + 1])
    return trapezoid_area(np.insert(fpr[index:], 0, fpr_at_threshold), np.insert(tpr[index:], 0, sensitivity))


def _rates(curve: RankingCurve) -> tuple[np.ndarray, np.ndarray]:
    """(sensitivity, specificity) of every ROC point, (0, 0) included: all points kept (a
    collinear point dropped from the curve could be the one a target picks)."""
    tps, fps = np.r_[0.0, curve.tps], np.r_[0.0, curve.fps]
    return tps / tps[-1], (fps[-1] - fps) / fps[-1]


def best_sensitivity(curve: RankingCurve, specificity: float) -> float:
    """The largest sensitivity among the ROC points whose specificity is >= `specificity`;
    NaN without positives or without negatives."""
    if not (curve.has_positives and curve.has_negatives):
        return float("nan")
    sensitivities, specificities = _rates(curve)
    return float(sensitivities[specificities >= specificity].max())  # (0, 0) always qualifies


def best_specificity(curve: RankingCurve, sensitivity: float) -> float:
    """The largest specificity among the ROC points whose sensitivity is >= `sensitivity`;
    NaN without positives or without negatives."""
    if not (curve.has_positives and curve.has_negatives):
        return float("nan")
    sensitivities, specificities = _rates(curve)
    return float(specificities[sensitivities >= sensitivity].max())  # the last point always qualifies


def roc_curve(y_true, y_score, sample_weight=None, drop_intermediate: bool = True):
    """(fpr, tpr, thresholds) of scikit-learn's roc_curve (pos_label 1, one weighting)."""
    return roc_points(ranking_curve(y_true, y_score, sample_weight), drop_intermediate)


def precision_recall_curve(y_true, y_score, sample_weight=None):
    """(precision, recall, thresholds) of scikit-learn's precision_recall_curve (pos_label 1, one
    weighting, drop_intermediate=False): thresholds increasing, the end point (1, 0) appended.
    Needs positives (scikit-learn sets recall to 1 without them, with a warning)."""
    curve = ranking_curve(y_true, y_score, sample_weight)
    recall, precision, thresholds = precision_recall_points(curve)
    return np.r_[precision[:0:-1], 1.0], np.r_[recall[:0:-1], 0.0], thresholds[:0:-1]


def precision_recall_points(curve: RankingCurve) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(recall, precision, thresholds) of every distinct score, thresholds decreasing, after the
    start point (recall 0, precision 1, threshold +inf): scikit-learn's precision_recall_curve
    (drop_intermediate=False) read backwards. Needs positives."""
    if not curve.has_positives:
        raise ValueError("a precision-recall curve needs positives")
    precision = precision_at_thresholds(curve)
    return np.r_[0.0, curve.tps / curve.tps[-1]], np.r_[1.0, precision], np.r_[np.inf, curve.thresholds]


# ---- PPV at a recall: one expression for one curve, many rows and drawn positives ---------------


def _interpolated_ppv(recall_j, precision_j, recall_k, precision_k, recall: float):
    """RARE26's reading of the precision-recall curve at `recall`: j is the last point (by
    decreasing threshold, from the start point recall 0 / precision 1) with recall <= `recall`,
    k the next one; j's precision if its recall is exactly `recall`, else the straight line from
    j to k read there. The expressions of np.interp, which the official scorer calls."""
    slope = (precision_k - precision_j) / (recall_k - recall_j)
    return np.where(recall_j == recall, precision_j, slope * (recall - recall_j) + precision_j)


def _ppv_at_recall_of_counts(tps: np.ndarray, fps: np.ndarray, recall: float) -> np.ndarray:
    """PPV at `recall` of every row of curve counts (rows, points), NaN for a row without
    positives. A point repeated (a run without weight in the row) changes nothing: the reading
    takes the first point past `recall` and the one before it, whose values a repeat shares."""
    n_pos = tps[:, -1]
    with np.errstate(invalid="ignore", divide="ignore"):
        recalls = tps / n_pos[:, None]
    called = tps + fps
    precisions = np.divide(tps, called, out=np.ones_like(tps), where=called > 0)
    # k: the first point past the target recall (the last point has recall 1 in a row with
    # positives); j = k - 1: the last point at or below it, or the start point when k is the first.
    rows = np.arange(tps.shape[0])
    k = np.argmax(recalls > recall, axis=1)
    recall_k, precision_k = recalls[rows, k], precisions[rows, k]
    first = k == 0
    j = np.where(first, 0, k - 1)
    recall_j = np.where(first, 0.0, recalls[rows, j])
    precision_j = np.where(first, 1.0, precisions[rows, j])
    with np.errstate(invalid="ignore", divide="ignore"):
        ppv = _interpolated_ppv(recall_j, precision_j, recall_k, precision_k, recall)
    return np.where(n_pos > 0, ppv, np.nan)


# ---- the public metrics -------------------------------------------------------------------------


def _check_scores(y_true, y_score, sample_weight):
    """(order, weights (rows, cases), single) of a binary scoring; ValueError naming the problem."""
    order = score_order(y_true, y_score)
    weights, single = check_sample_weight(sample_weight, len(order.order))
    return order, weights, single


def _each_row(order: ScoreOrder, weights: np.ndarray, single: bool, of_curve) -> float | np.ndarray:
    """of_curve of each row's curve: a float for one weighting given as 1-D or None, else (rows,)."""
    values = np.array([of_curve(_curve_of_order(order, row)) for row in weights], dtype=np.float64)
    return per_row(values, single)


def _per_label(y_true, y_score, sample_weight, average, labels, multi_class, binary_metric):
    """A binary metric label by label (multi-label indicator, or multi-class one-vs-rest), then
    averaged as scikit-learn's _average_binary_score: None (each label's), "macro" (their mean),
    "weighted" (weighted by each label's weighted positives), "micro" (every case-label pair one
    binary case). Results (labels,) or a float, with a leading rows axis for 2-D weights."""
    y_true, y_score = np.asarray(y_true), check_finite(y_score, "y_score")
    if y_score.ndim != 2:
        raise ValueError(f"y_score must be 2-D (cases, labels) here, got shape {y_score.shape}")
    n, k = y_score.shape
    check_same_length(y_true=y_true, y_score=y_score)
    check_choice(average, "average", (None, "macro", "weighted", "micro"))
    if y_true.ndim == 1:  # multi-class: one score column per class
        check_choice(multi_class, "multi_class", ("ovr", "raise"))
        if multi_class == "raise":
            raise ValueError("y_true holds classes, not 0/1: multi-class scores need multi_class='ovr' (one class "
                             "against the rest)")
        classes = np.unique(y_true) if labels is None else check_classes(labels, y_true=y_true)
        if len(classes) != k:
            raise ValueError(f"y_score has {k} columns, one per class: {len(classes)} classes expected")
        indicator = y_true[:, None] == classes[None, :]
    elif y_true.ndim == 2:
        if y_true.shape != y_score.shape:
            raise ValueError(f"y_true and y_score differ in shape: {y_true.shape} and {y_score.shape}")
        if y_true.size and not np.isin(y_true, (0, 1)).all():
            raise ValueError("y_true must hold only 0 and 1 (a label indicator)")
        indicator = y_true.astype(bool)
    else:
        raise ValueError(f"y_true must be 1-D (classes) or 2-D (a label indicator), got shape {y_true.shape}")
    weights, single = check_sample_weight(sample_weight, n)
    if average == "micro":
        value = binary_metric(indicator.ravel(), y_score.ravel(), np.repeat(weights, k, axis=1))
        return per_row(value, single)
    scores = np.stack([binary_metric(indicator[:, c], y_score[:, c], weights) for c in range(k)], axis=-1)
    if average is None:
        return per_row(scores, single)
    if average == "macro":
        averaged = scores.mean(axis=1)
    else:  # weighted by each label's weighted positives; a label without weight forced to 0
        support = np.stack([(weights * indicator[:, c]).sum(axis=1) for c in range(k)], axis=-1)
        scores = np.where(support == 0, 0.0, scores)
        with np.errstate(invalid="ignore", divide="ignore"):
            averaged = (scores * support).sum(axis=1) / support.sum(axis=1)
    return per_row(averaged, single)


def roc_auc_of_orders(orders, sample_weight) -> np.ndarray:
    """(rows, labels): the ROC AUC of each sorted scoring of `orders` (one score_order per label,
    all of one set of cases) for every row of `sample_weight` (rows, cases, checked), scikit-learn's
    roc_auc_score(y_true, y_score, sample_weight=row), bit for bit: one sort per label for every row.

    One row (the point value) takes the single-row curve; many rows go through
    `_roc_auc_of_rows`. Fractional weights follow scikit-learn 1.7 (the ISIC reference's): ties
    added in reverse case order; 1.8 and later add them the other way, which can move the last bit
    (whole numbers are exact in either order)."""
    weights = _weights_in_order(np.asarray(sample_weight, dtype=np.float64))
    auc = np.empty((len(weights), len(orders)))
    if not weights.size:
        auc[:] = np.nan
        return auc
    whole = len(weights) > 1 and bool((weights == np.round(weights)).all()) \
        and float(weights.sum(axis=1).max()) < 2.0 ** 53
    for label, order in enumerate(orders):
        if len(weights) == 1:  # the point value: the single-row curve, its bits and fewer passes
            auc[0, label] = roc_auc(_curve_of_row(order, weights[0]))
        else:
            auc[:, label] = _roc_auc_of_rows(order, weights, whole)
    return auc


def _roc_auc_of_rows(order: ScoreOrder, weights: np.ndarray, whole: bool) -> np.ndarray:
    """roc_auc of the curve of every row of `weights` (rows, cases), in either memory order. Every
    array below is (rows, runs or cases): cumulative sums run along the rows, sequentially, as a
    1-D cumsum; the trapezoids are summed as np.add.reduce sums a row's kept ones."""
    rows = weights.shape[0]
    if not len(order.order):
        return np.full(rows, np.nan)
    tps, fps = curve_counts(order, weights)
    if whole:  # a run with weight raises a sum of whole numbers (< 2**53): its point moved
        present = np.empty_like(tps, dtype=bool)  # in the weights' memory order, as every array here
        present[:, 0] = (tps[:, 0] > 0) | (fps[:, 0] > 0)
        np.not_equal(tps[:, 1:], tps[:, :-1], out=present[:, 1:])
        present[:, 1:] |= fps[:, 1:] != fps[:, :-1]
    else:
        present = np.maximum.reduceat(_columns(weights, order.order), order.starts, axis=1) > 0
    # roc_points' drop_intermediate: a point is kept when the second difference of fps or tps
    # through its neighbouring points is not zero; the first and last points always. A run
    # without weight repeats the previous run's sums (it added +0.0), so the previous point's value
    # is the previous run's; the sums never decrease, so the next point's is the least value of
    # the points after.
    seen = np.logical_or.accumulate(present, axis=1)
    to_come = np.logical_or.accumulate(present[:, ::-1], axis=1)[:, ::-1]
    inner = present.copy(order="K")
    inner[:, 0] = False
    inner[:, -1] = False
    inner[:, 1:-1] &= seen[:, :-2] & to_come[:, 2:]
    bend = np.zeros_like(present)
    for x in (fps, tps):
        after = np.minimum.accumulate(np.where(present, x, np.inf)[:, ::-1], axis=1)[:, ::-1]
        bend[:, 1:-1] |= ((after[:, 2:] - x[:, 1:-1]) - (x[:, 1:-1] - x[:, :-2])) != 0
    kept = present & (~inner | bend)
    # The trapezoids from the (0, 0) point through the kept points, rates over the row's totals;
    # the rates never decrease, so the last kept point's are the largest kept so far.
    fp_total, tp_total = fps[:, -1:], tps[:, -1:]
    defined = (fp_total > 0) & (tp_total > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        fpr, tpr = fps / fp_total, tps / tp_total
    fpr_before, tpr_before = np.zeros_like(fpr), np.zeros_like(tpr)
    np.maximum.accumulate(np.where(kept, fpr, 0.0)[:, :-1], axis=1, out=fpr_before[:, 1:])
    np.maximum.accumulate(np.where(kept, tpr, 0.0)[:, :-1], axis=1, out=tpr_before[:, 1:])
    with np.errstate(invalid="ignore"):
        terms = (fpr - fpr_before) * (tpr + tpr_before) / 2.0
    area = row_sums_by_length(terms, kept & defined)
    return np.where(defined[:, 0], area, np.nan)


def row_sums_by_length(terms: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Per row, np.add.reduce of its kept terms in order, as a 1-D array of exactly those terms
    would be summed (pairwise summation depends on the length: rows are summed in groups of equal
    length, never padded)."""
    counts = kept.sum(axis=1)
    by_length = np.argsort(counts, kind="stable")
    lengths = counts[by_length]
    flat = terms[by_length][kept[by_length]]  # each row's kept terms, rows of equal length together
    sums = np.zeros(len(terms))
    bounds = np.flatnonzero(np.diff(lengths)) + 1
    starts, ends = np.r_[0, bounds], np.r_[bounds, len(lengths)]
    offset = 0
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        length = int(lengths[start])
        size = (end - start) * length
        if length:
            sums[by_length[start:end]] = np.add.reduce(flat[offset:offset + size].reshape(end - start, length), axis=1)
        offset += size
    return sums


def _roc_auc_rows(order: ScoreOrder, weights: np.ndarray, max_fpr: float | None) -> np.ndarray:
    """(rows,): the ROC AUC of one sorted scoring for every row of weights."""
    if max_fpr is None or max_fpr == 1:
        return roc_auc_of_orders([order], weights)[:, 0]
    return _each_row(order, weights, False, lambda curve: roc_auc(curve, max_fpr))


@metric(kind="scores", better="higher",
        variants={"max_fpr": "None: the whole area; a number in (0, 1]: the area up to that false positive rate, "
                             "standardised by McClish's correction (0.5 chance, 1 perfect), as scikit-learn",
                  "average": "2-D y_true or multi-class: None (each label's), 'macro', 'weighted', 'micro'",
                  "multi_class": "'ovr': each class against the rest (multi-class y_true); 'raise' refuses"},
        equals=(f"{SKLEARN}.roc_auc_score (bit for bit)",),
        citation="Hanley & McNeil, Radiology 143(1), 1982; McClish, Med Decis Making 9(3), 1989 (partial AUC)")
def roc_auc_score(y_true, y_score, sample_weight=None, max_fpr=None, *, average="macro", multi_class="raise",
                  labels=None):
    """Area under the ROC curve of scores against binary truth, scikit-learn's roc_auc_score.

    The trapezoids under the ROC points (false positive rate, sensitivity) of every distinct
    score, ties entering together; with `sample_weight` each case counts as its weight. Undefined
    (NaN) without weighted positives or without weighted negatives. y_true 2-D (a label indicator)
    or 1-D classes with one y_score column per class (`multi_class='ovr'`): each label's AUC, then
    `average`. `sample_weight` (rows, cases): every row at once, one sort for all.
    """
    if max_fpr is not None:
        max_fpr = check_in_range(max_fpr, "max_fpr", 0.0, 1.0, low_open=True)
    if np.ndim(y_score) == 2:
        def binary(positive, scores, weights):
            return _roc_auc_rows(score_order(positive, scores), weights, max_fpr)
        return _per_label(y_true, y_score, sample_weight, average, labels, multi_class, binary)
    order, weights, single = _check_scores(y_true, y_score, sample_weight)
    values = _roc_auc_rows(order, weights, max_fpr)
    return per_row(values, single)


def _binary_average_precision(positive, scores, weights):
    return _each_row(score_order(positive, scores), weights, False, average_precision)


@metric(kind="scores", better="higher",
        variants={"average": "2-D y_true or multi-class: None (each label's), 'macro', 'weighted', 'micro'"},
        equals=(f"{SKLEARN}.average_precision_score (bit for bit)",),
        citation="Zhu, Recall, precision and average precision, University of Waterloo, 2004; scikit-learn's "
                 "definition (no interpolation)")
def average_precision_score(y_true, y_score, sample_weight=None, *, average="macro", labels=None):
    """Average precision of scores against binary truth, scikit-learn's average_precision_score.

    Σ_n (R_n − R_{n−1}) P_n over the distinct scores by decreasing threshold, P_n and R_n the
    precision and recall of calling positive every case scoring at least the n-th: the step-wise
    area under the precision-recall curve, no interpolation. NaN without weighted positives.
    2-D y_true or multi-class y_score: each label's, then `average`, as roc_auc_score.
    """
    if np.ndim(y_score) == 2:
        return _per_label(y_true, y_score, sample_weight, average, labels, "ovr", _binary_average_precision)
    order, weights, single = _check_scores(y_true, y_score, sample_weight)
    return _each_row(order, weights, single, average_precision)


@metric(kind="scores", better="higher", example={"recall": 0.9},
        equals=("the RARE25/RARE26 scorer: np.interp(recall, *precision_recall_curve(...)[1::-1]) "
                "(bit for bit)",),
        citation="RARE26 challenge evaluation (PPV at 90% recall), grand-challenge.org, 2026")
def ppv_at_recall(y_true, y_score, recall: float = 0.9, sample_weight=None):
    """Precision (PPV) at a recall on the precision-recall curve, interpolated linearly (RARE26).

    The curve's points by decreasing threshold, one per distinct score, from the start point
    recall 0 / precision 1: the last point j with recall <= `recall` gives its precision if its
    recall is exactly `recall`, else the straight line from j to the next point is read at
    `recall`. Not "the precision at the first threshold reaching the recall". NaN without
    weighted positives; `recall` in (0, 1).
    """
    recall = check_in_range(recall, "recall", 0.0, 1.0, low_open=True, high_open=True)
    order, weights, single = _check_scores(y_true, y_score, sample_weight)
    if not len(order.order):
        values = np.full(len(weights), np.nan)
    else:
        values = _ppv_at_recall_of_counts(*curve_counts(order, _weights_in_order(weights)), recall)
    return per_row(values, single)


@metric(kind="scores", better="higher", example={"specificity": 0.8},
        equals=("the largest tpr of sklearn.metrics.roc_curve(drop_intermediate=False) with 1 - fpr >= specificity",),
        citation="Pepe, The Statistical Evaluation of Medical Tests for Classification and Prediction, 2003, 4.2")
def sensitivity_at_specificity(y_true, y_score, specificity: float, sample_weight=None):
    """Sensitivity at a specificity: the largest sensitivity among the ROC points whose
    specificity is at least `specificity` (inclusive), no interpolation.

    The ROC points are every distinct score's (calling positive each case scoring at least it)
    and calling nothing positive (sensitivity 0, specificity 1). NaN without weighted positives
    or without weighted negatives.
    """
    specificity = check_in_range(specificity, "specificity", 0.0, 1.0)
    order, weights, single = _check_scores(y_true, y_score, sample_weight)
    return _each_row(order, weights, single, lambda curve: best_sensitivity(curve, specificity))


@metric(kind="scores", better="higher", example={"sensitivity": 0.8},
        equals=("the largest 1 - fpr of sklearn.metrics.roc_curve(drop_intermediate=False) with tpr >= sensitivity",),
        citation="Pepe, The Statistical Evaluation of Medical Tests for Classification and Prediction, 2003, 4.2")
def specificity_at_sensitivity(y_true, y_score, sensitivity: float, sample_weight=None):
    """Specificity at a sensitivity: the largest specificity among the ROC points whose
    sensitivity is at least `sensitivity` (inclusive), no interpolation.

    The converse of sensitivity_at_specificity, on the same ROC points (calling every case
    positive, sensitivity 1, always qualifies). NaN without weighted positives or negatives.
    """
    sensitivity = check_in_range(sensitivity, "sensitivity", 0.0, 1.0)
    order, weights, single = _check_scores(y_true, y_score, sample_weight)
    return _each_row(order, weights, single, lambda curve: best_specificity(curve, sensitivity))


@metric(kind="scores", better="higher", example={"sensitivity": 0.8},
        equals=("isic-challenge-scoring 5.8.0 auc_above_sensitivity (AUC80, bit for bit)",),
        citation="Codella et al., ISIC 2018 challenge, arXiv:1902.03368 (AUC80)")
def roc_auc_above_sensitivity(y_true, y_score, sensitivity: float = 0.8, sample_weight=None):
    """Area under the ROC curve above a sensitivity (ISIC's AUC80), not standardised.

    The area under the ROC curve (every point kept) over the false positive rates where the
    curve's sensitivity is at least `sensitivity`: from the point where it reaches it (its false
    positive rate interpolated on the segment crossing it) to false positive rate 1, the area down
    to sensitivity 0. A perfect ranking scores 1.0, chance (1 - s²) / 2 (0.18 at 0.8). NaN without
    weighted positives or without weighted negatives; `sensitivity` in (0, 1].
    """
    sensitivity = check_in_range(sensitivity, "sensitivity", 0.0, 1.0, low_open=True)
    order, weights, single = _check_scores(y_true, y_score, sample_weight)
    return _each_row(order, weights, single, lambda curve: auc_above_sensitivity(curve, sensitivity))


# ---- bootstraps of whole counts: RARE26's ---------------------------------------------------------
#
# The three RARE26 metrics (AUROC, average precision, PPV at a recall) of many resamples, each a
# row of whole counts. They read the curve counts above (`curve_counts`, or only the drawn
# positives' points of them) with an arithmetic that is exact for whole counts where it can be:
#
# - AUROC as the pair count, Σ Δfp (tp + tp_before) / (2 P N): every term and partial sum is a
#   whole number below 2**53, so the value is the exact AUC correctly rounded (one division);
#   scikit-learn's trapezoids of rates (roc_auc_score) reach the same number within an ulp or two.
# - average precision as scikit-learn's steps (R_n - R_{n-1}) P_n added left to right (a zero
#   step where a row's recall does not move), so that the drawn-positives path, which only visits
#   the steps that are not zero, adds the same numbers in the same order: the same bits.
# - PPV at the recall through `_ppv_at_recall_of_counts` / `_interpolated_ppv`, ppv_at_recall's.
#
# Why the fast paths exist: RARE26 draws 1000 resamples of every NDBE frame plus a few drawn
# neoplasia frames; a row of counts over every frame per resample costs resamples x frames, while
# placing only the drawn positives among the negatives, sorted once, costs the draws. Their bundled
# numbers (test/rare26) were recorded with this arithmetic; scikit-learn's per-resample calls
# (benchmarks/rare26_official.py) agree within 1e-12, PPV at the recall bit for bit.

# Resamples are scored in blocks of rows so that the temporaries stay near 64 MB whatever the
# number of repetitions and images.
_BLOCK_ELEMENTS = 1 << 21
# Drawn positives are placed in blocks of about this many draws: small enough to stay in cache.
_DRAWS_PER_BLOCK = 1 << 16
# Resamples of a grouped bootstrap turned into rows of counts (resamples x cases) at a time.
_GROUP_DRAW_ROWS = 100
RESAMPLED_METRICS = ("auroc", "average_precision", "ppv_at_recall")


def _sum_left_to_right(terms: np.ndarray) -> np.ndarray:
    """Row sums added strictly left to right (numpy's accumulate), whatever the array's memory
    layout: `.sum(axis=1)` would add a C-ordered row pairwise and an F-ordered one left to right,
    so the last bits would depend on how resamples were split into blocks."""
    return np.cumsum(terms, axis=1)[:, -1]


def _pair_count_auc(pairs: np.ndarray, positives, negatives) -> np.ndarray:
    """AUROC from twice the number of (positive, negative) pairs ranked right, ties counting
    one: pairs / (2 P N), exact for whole counts."""
    return pairs / (2.0 * positives * negatives)


def _metrics_of_counts(tps: np.ndarray, fps: np.ndarray, recall: float):
    """AUROC, AP and PPV at `recall` of curve counts (rows, runs), every row with both classes.
    A run absent from a row repeats the previous point, which changes none of the three (steps of
    zero width); before any sampled score the point is (recall 0, precision 1)."""
    n_pos, n_neg = tps[:, -1], fps[:, -1]
    zeros = np.zeros((tps.shape[0], 1))
    tp_before = np.hstack([zeros, tps[:, :-1]])
    fp_before = np.hstack([zeros, fps[:, :-1]])
    auroc = _pair_count_auc(((fps - fp_before) * (tps + tp_before)).sum(axis=1), n_pos, n_neg)
    recalls = tps / n_pos[:, None]
    called = tps + fps
    precisions = np.divide(tps, called, out=np.ones_like(tps), where=called > 0)
    recalls_before = np.hstack([zeros, recalls[:, :-1]])
    average_precision = _sum_left_to_right((recalls - recalls_before) * precisions)
    return auroc, average_precision, _ppv_at_recall_of_counts(tps, fps, recall)


def _check_both_classes(order: ScoreOrder) -> None:
    if order.positive.all() or not order.positive.any():
        raise ValueError("y_true must hold both classes")


def _resampled_metrics_of_order(order: ScoreOrder, counts: np.ndarray, recall: float) -> dict[str, np.ndarray]:
    """The three metrics of every row of whole counts (rows, cases), blocks of rows at a time."""
    rows_per_block = max(1, _BLOCK_ELEMENTS // max(1, len(order.order)))
    results: dict[str, list] = {name: [] for name in RESAMPLED_METRICS}
    for start in range(0, counts.shape[0], rows_per_block):
        # (the block in whatever memory order astype keeps: every sum below is of whole numbers)
        tps, fps = curve_counts(order, np.asarray(counts[start:start + rows_per_block], dtype=np.float64))
        if (tps[:, -1] == 0).any() or (fps[:, -1] == 0).any():
            raise ValueError("every resample (row of sample_weight) must hold both classes")
        for name, values in zip(RESAMPLED_METRICS, _metrics_of_counts(tps, fps, recall), strict=True):
            results[name].append(values)
    return {name: np.concatenate(parts) for name, parts in results.items()}


def resampled_ranking_metrics(y_true, y_score, sample_weight, recall: float = 0.9) -> dict[str, np.ndarray]:
    """{"auroc", "average_precision", "ppv_at_recall": (rows,)} of every row of `sample_weight`
    (rows, cases) of whole numbers: row r counts case j sample_weight[r, j] times (a bootstrap
    resample). One sort; per row, the curve counts at every distinct score (the arithmetic of the
    section above). ValueError for a row without both classes."""
    recall = check_in_range(recall, "recall", 0.0, 1.0, low_open=True, high_open=True)
    order = score_order(y_true, y_score, stable=False)
    if np.ndim(sample_weight) != 2:
        raise ValueError(f"sample_weight must be 2-D (resamples, {len(order.order)}), got shape "
                         f"{np.shape(sample_weight)}")
    counts = np.asarray(sample_weight)
    if np.issubdtype(counts.dtype, np.integer):  # counts as drawn: whole and finite; checked without a copy
        if counts.shape[1] != len(order.order) or (counts < 0).any():
            check_sample_weight(counts, len(order.order))  # raises, naming the problem
    else:
        counts = whole_counts(check_sample_weight(sample_weight, len(order.order))[0], "a case")
    return _resampled_metrics_of_order(order, counts, recall)


def metrics_with_drawn_positives(y_true, y_score, draws, recall: float = 0.9) -> dict[str, np.ndarray]:
    """resampled_ranking_metrics of resamples that each hold every negative once and the positives
    `draws[r]` (indices into the positives, in data order, repeats allowed): the RARE26 image-level
    bootstrap. The same numbers, bit for bit, as resampled_ranking_metrics on the equivalent rows
    of counts (tests/test_ranking.py), in time proportional to the drawn positives instead of
    resamples x cases.

    The negatives never change: one sort gives per run of equal scores g how many negatives score
    at least (`negatives_through[g]`) and exactly (`negatives_at[g]`) that much. A resample's curve
    moves only at its drawn positives' scores, so each is placed among the negatives by its run:
    AUROC counts, per drawn positive, 2 per negative below and 1 per tied negative (whole numbers:
    exact); average precision and PPV are read at the resample's distinct positive scores only
    (recall does not move elsewhere), the steps added left to right as _metrics_of_counts adds them.
    """
    recall = check_in_range(recall, "recall", 0.0, 1.0, low_open=True, high_open=True)
    order = score_order(y_true, y_score, stable=False)  # only runs are read: the order within one is free
    _check_both_classes(order)
    draws = np.asarray(draws)
    n_positives = int(order.positive.sum())
    if draws.ndim != 2 or draws.shape[1] == 0 or not np.issubdtype(draws.dtype, np.integer):
        raise ValueError(f"draws must be a 2-D array of positive indices, got shape {draws.shape} of {draws.dtype}")
    if draws.size and (draws.min() < 0 or draws.max() >= n_positives):
        raise ValueError(f"draws must index the {n_positives} positives")

    negatives_through = order.negatives_through  # negatives scoring at least run g's score
    negatives_at = np.diff(np.r_[0, negatives_through])
    negatives_above = negatives_through - negatives_at
    n_negatives = int(negatives_through[-1])
    # The run of each positive, positives in data order: from their sorted positions (few), not by
    # scattering a run to every case.
    positions = np.flatnonzero(order.positive)
    positive_run = np.searchsorted(order.ends, positions)[np.argsort(order.order[positions], kind="stable")]
    positive_run = positive_run.astype(np.int32 if len(order.ends) < 2**31 else np.int64)
    # Pairs (drawn positive, negative) counted twice when the positive scores higher, once on a tie.
    pair_points = 2 * (n_negatives - negatives_through[positive_run]) + negatives_at[positive_run]

    per_block = max(1, _DRAWS_PER_BLOCK // draws.shape[1])
    results: dict[str, list] = {name: [] for name in RESAMPLED_METRICS}
    for start in range(0, draws.shape[0], per_block):
        block = draws[start:start + per_block]
        values = _drawn_positives_block(block, positive_run, pair_points, negatives_through, negatives_above, recall)
        for name, part in zip(RESAMPLED_METRICS, values, strict=True):
            results[name].append(part)
    return {name: np.concatenate(parts) for name, parts in results.items()}


def _drawn_positives_block(draws, positive_run, pair_points, negatives_through, negatives_above, recall):
    """The three metrics of one block of resamples: _metrics_of_counts' expressions read at the
    points where a resample's true positives change (elsewhere its steps are exact zeros)."""
    n_rows, drawn = draws.shape
    n_pos = float(drawn)
    n_neg = float(negatives_through[-1])
    auroc = _pair_count_auc(pair_points[draws].sum(axis=1), n_pos, n_neg)

    # Each resample's drawn positives by decreasing score; the last of each run of one score is a
    # point of its curve, with as many true positives as positives drawn up to it.
    runs = np.sort(positive_run[draws], axis=1).ravel()
    run_end = np.ones(len(runs), dtype=bool)
    run_end[:-1] = runs[1:] != runs[:-1]
    run_end[drawn - 1::drawn] = True  # a row's last column
    points = np.flatnonzero(run_end)
    row_start = points - points % drawn
    tp = (points - row_start + 1).astype(np.float64)
    tp_before = (np.r_[-1, points[:-1]] + 1 - row_start).astype(np.float64)  # 0 at a row's first point
    run = runs[points]
    recalls = tp / n_pos
    precisions = tp / (tp + negatives_through[run])
    steps = np.zeros(len(runs))
    steps[points] = (recalls - tp_before / n_pos) * precisions
    average_precision = _sum_left_to_right(steps.reshape(n_rows, drawn))

    # k: the first point past the target recall, the one holding the t-th drawn positive for the
    # least t with t / drawn > recall; j: the run just above k's, holding the positives drawn
    # before k and the negatives scoring above it (the start point if none is).
    t = int(np.argmax(np.arange(1, drawn + 1) / n_pos > recall)) + 1
    k = np.searchsorted(points, np.arange(n_rows) * drawn + (t - 1))
    first = run[k] == 0
    tp_j = tp_before[k]
    called_j = tp_j + negatives_above[run[k]]
    recall_j = np.where(first, 0.0, tp_j / n_pos)
    precision_j = np.where(first, 1.0, np.divide(tp_j, called_j, out=np.ones_like(tp_j), where=called_j > 0))
    ppv = _interpolated_ppv(recall_j, precision_j, recalls[k], precisions[k], recall)
    return auroc, average_precision, ppv


def metrics_with_drawn_groups(y_true, y_score, groups, draws, recall: float = 0.9) -> dict[str, np.ndarray]:
    """resampled_ranking_metrics of a grouped (cluster) bootstrap: case i belongs to group
    `groups[i]` (0 to n_groups - 1), resample r draws the groups `draws[r]` (repeats allowed) and
    holds every case of a drawn group once per draw (the RARE25 pack's patient-level bootstrap:
    all images of each drawn patient). One sort; the rows of counts made _GROUP_DRAW_ROWS
    resamples at a time so that memory stays bounded (each row's numbers do not depend on the block)."""

    recall = check_in_range(recall, "recall", 0.0, 1.0, low_open=True, high_open=True)
    order = score_order(y_true, y_score, stable=False)  # whole counts: sums within a run exact in any order
    _check_both_classes(order)
    groups = np.asarray(groups)
    draws = np.asarray(draws)
    if groups.ndim != 1 or not np.issubdtype(groups.dtype, np.integer) or (groups.size and groups.min() < 0):
        raise ValueError("groups must be a 1-D array of non-negative group indices, one per case")
    check_same_length(y_true=order.order, groups=groups)
    n_groups = int(groups.max()) + 1 if groups.size else 0
    if draws.ndim != 2 or not np.issubdtype(draws.dtype, np.integer):
        raise ValueError(f"draws must be a 2-D array of group indices, got shape {draws.shape} of {draws.dtype}")
    if draws.size and (draws.min() < 0 or draws.max() >= n_groups):
        raise ValueError(f"draws must index the {n_groups} groups")
    parts = [_resampled_metrics_of_order(order, draws_to_counts(draws[start:start + _GROUP_DRAW_ROWS],
                                                                n_groups)[:, groups], recall)
             for start in range(0, max(1, len(draws)), _GROUP_DRAW_ROWS)]
    return {key: np.concatenate([part[key] for part in parts]) for key in RESAMPLED_METRICS}
