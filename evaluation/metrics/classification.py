"""Classification metrics of the ISIC challenges, with the reference scorer's numerics.

Pure functions, arrays in and numbers out. The reference (`isic-challenge-scoring` 5.8.0) calls
scikit-learn 1.7 once per metric, sorting the scores each time; here one sort per category gives
a `RankingCurve` from which ROC AUC, average precision, AUC80 and the ROC points all derive, with
the same floating-point operations in the same order as scikit-learn, so the numbers are equal
bit for bit (tests/test_isic.py checks them against scikit-learn itself).

Undefined values (a category without positives or without negatives) are NaN here; the challenge
turns them into nulls with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

UNDECIDED = -1  # the label of a row whose maximum is tied between categories


def _check_lengths(*arrays: np.ndarray) -> None:
    lengths = {len(a) for a in arrays}
    if len(lengths) != 1:
        raise ValueError(f"arrays of different lengths: {sorted(lengths)}")


# ---- confusion-based metrics ------------------------------------------------------------------


@dataclass(frozen=True)
class Confusion:
    """Weighted counts of one category's binary decision."""

    tp: float
    tn: float
    fp: float
    fn: float


def binary_confusion(truth: np.ndarray, prediction: np.ndarray, weights: np.ndarray) -> Confusion:
    """Weighted TP/TN/FP/FN of boolean arrays; each count is the sum over all rows of
    weight * indicator, as the reference sums them (so the rounding is the same)."""
    truth, prediction = np.asarray(truth, dtype=bool), np.asarray(prediction, dtype=bool)
    weights = np.asarray(weights, dtype=np.float64)
    _check_lengths(truth, prediction, weights)
    return Confusion(
        tp=float(np.sum((truth & prediction) * weights)),
        tn=float(np.sum((~truth & ~prediction) * weights)),
        fp=float(np.sum((~truth & prediction) * weights)),
        fn=float(np.sum((truth & ~prediction) * weights)),
    )


def _ratio_or_one(numerator: float, denominator: float) -> float:
    """ISIC's rule for a zero denominator: the metric is a freebie, 1.0."""
    return 1.0 if denominator == 0 else numerator / denominator


def accuracy(cm: Confusion) -> float:
    return (cm.tp + cm.tn) / (cm.tp + cm.tn + cm.fp + cm.fn)


def sensitivity(cm: Confusion) -> float:
    return _ratio_or_one(cm.tp, cm.tp + cm.fn)


def specificity(cm: Confusion) -> float:
    return _ratio_or_one(cm.tn, cm.tn + cm.fp)


def dice(cm: Confusion) -> float:
    """Dice = F1 = 2TP / (2TP + FP + FN); 1.0 when there is nothing to find and nothing found."""
    if cm.tp + cm.fp + cm.fn == 0:
        return 1.0
    return (2 * cm.tp) / ((2 * cm.tp) + cm.fp + cm.fn)


def ppv(cm: Confusion) -> float:
    return _ratio_or_one(cm.tp, cm.tp + cm.fp)


def npv(cm: Confusion) -> float:
    return _ratio_or_one(cm.tn, cm.tn + cm.fn)


# ---- ranking metrics from one sort ------------------------------------------------------------


@dataclass(frozen=True)
class RankingCurve:
    """Cumulative weighted positives (tps) and negatives (fps) at each distinct score, scores
    decreasing: scikit-learn's _binary_clf_curve, zero-weight rows left out as it does."""

    fps: np.ndarray
    tps: np.ndarray
    thresholds: np.ndarray

    @property
    def has_positives(self) -> bool:
        return len(self.tps) > 0 and self.tps[-1] > 0

    @property
    def has_negatives(self) -> bool:
        return len(self.fps) > 0 and self.fps[-1] > 0


def ranking_curve(truth: np.ndarray, scores: np.ndarray, weights: np.ndarray) -> RankingCurve:
    truth = np.asarray(truth, dtype=bool)
    scores = np.asarray(scores, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    _check_lengths(truth, scores, weights)
    if not (np.isfinite(scores).all() and np.isfinite(weights).all()):
        raise ValueError("scores and weights must be finite")
    kept = weights != 0
    truth, scores, weights = truth[kept], scores[kept], weights[kept]
    if len(scores) == 0:
        empty = np.zeros(0)
        return RankingCurve(empty, empty, empty)
    order = stable_order(scores)[::-1]  # scikit-learn's order, ties included
    scores, truth, weights = scores[order], truth[order], weights[order]
    ends = np.r_[np.where(np.diff(scores))[0], truth.size - 1]
    tps = np.cumsum(truth * weights, dtype=np.float64)[ends]
    fps = np.cumsum((1 - truth) * weights, dtype=np.float64)[ends]
    return RankingCurve(fps=fps, tps=tps, thresholds=scores[ends])


def stable_order(scores: np.ndarray) -> np.ndarray:
    """np.argsort(scores, kind="mergesort") of finite float64 scores, 2-5x sooner. The floats are
    sorted as integers ordered as they are (the IEEE bits, -0.0 made +0.0 as it equals it, the
    other bits of negatives flipped) by numpy's default sort, which is not stable but is several
    times quicker (vectorised); then, where scores tie, each run of equal scores is put back in
    index order: the one permutation a stable sort gives."""
    bits = (scores + 0.0).view(np.int64)
    if len(bits) and bits.min() < 0:
        bits = np.where(bits < 0, bits ^ np.int64(0x7FFFFFFFFFFFFFFF), bits)
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
    _check_lengths(x, y)
    if len(x) < 2:
        raise ValueError("at least 2 points are needed to compute an area")
    dx = np.diff(x)
    direction = 1
    if np.any(dx < 0):
        if not np.all(dx <= 0):
            raise ValueError("x is neither increasing nor decreasing")
        direction = -1
    return float(direction * np.add.reduce(dx * (y[1:] + y[:-1]) / 2.0))


def roc_auc(curve: RankingCurve) -> float:
    """ROC AUC (scikit-learn's roc_auc_score); NaN without positives or without negatives."""
    if not (curve.has_positives and curve.has_negatives):
        return float("nan")
    fpr, tpr, _ = roc_points(curve, drop_intermediate=True)
    return trapezoid_area(fpr, tpr)


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


def auc_above_sensitivity(curve: RankingCurve, sensitivity_threshold: float = 0.8) -> float:
    """ISIC's AUC80: the area under the ROC curve (all points kept) between the sensitivity
    threshold and 1, from the point (FPR*, threshold) where FPR* is interpolated on the segment
    that crosses it, to FPR = 1. Not normalised: perfect 1.0, chance 0.18 at 0.8. NaN without
    positives or without negatives."""
    if not 0 < sensitivity_threshold <= 1:
        raise ValueError(f"sensitivity_threshold must be in (0, 1], not {sensitivity_threshold}")
    if not (curve.has_positives and curve.has_negatives):
        return float("nan")
    fpr, tpr, _ = roc_points(curve, drop_intermediate=False)
    index = int(tpr.searchsorted(sensitivity_threshold, side="left"))
    fpr_at_threshold = np.interp(sensitivity_threshold, tpr[index - 1:index + 1], fpr[index - 1:index + 1])
    return trapezoid_area(np.insert(fpr[index:], 0, fpr_at_threshold),
                          np.insert(tpr[index:], 0, sensitivity_threshold))


# ---- multi-class ------------------------------------------------------------------------------


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


def per_class_recall(truth_scores: np.ndarray, prediction_scores: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per category: weighted rows whose truth and prediction argmax are that category, over
    weighted rows whose truth argmax is that category. A prediction row with a tied maximum is
    undecided, hence wrong; a truth row with a tied maximum belongs to no category. NaN for a
    category with no (weighted) truth rows."""
    truth_scores = np.asarray(truth_scores, dtype=np.float64)
    prediction_scores = np.asarray(prediction_scores, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    if truth_scores.shape != prediction_scores.shape:
        raise ValueError(f"truth {truth_scores.shape} and prediction {prediction_scores.shape} differ in shape")
    _check_lengths(truth_scores, weights)
    return recall_of_labels(argmax_labels(truth_scores), argmax_labels(prediction_scores), weights,
                            truth_scores.shape[1])


def recall_of_labels(truth_labels: np.ndarray, prediction_labels: np.ndarray, weights: np.ndarray,
                     n: int) -> np.ndarray:
    """per_class_recall from the argmax labels (argmax_labels) of the truth and the prediction,
    for a caller that needs the labels more than once."""
    correct = np.where(truth_labels == prediction_labels, truth_labels, UNDECIDED)
    hits = sequential_group_sums(weights, correct, n)
    totals = kahan_group_sums(weights, truth_labels, n)
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


def balanced_multiclass_accuracy(truth_scores: np.ndarray, prediction_scores: np.ndarray,
                                 weights: np.ndarray) -> float:
    """ISIC's goal metric: mean per-category recall over the categories present in the truth,
    labels by argmax, a tied prediction counting as wrong (see per_class_recall)."""
    return nan_mean(per_class_recall(truth_scores, prediction_scores, weights))


# ---- curve points for charts ------------------------------------------------------------------


def precision_recall_points(curve: RankingCurve) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(recall, precision, thresholds) of every distinct score, thresholds decreasing, after the
    start point (recall 0, precision 1, threshold +inf): scikit-learn's precision_recall_curve
    (drop_intermediate=False) read backwards. Needs positives."""
    if not curve.has_positives:
        raise ValueError("a precision-recall curve needs positives")
    precision = precision_at_thresholds(curve)
    return np.r_[0.0, curve.tps / curve.tps[-1]], np.r_[1.0, precision], np.r_[np.inf, curve.thresholds]


# ---- many rows of sample weights at once (the point value is the row of ones) ------------------
#
# The functions below take `sample_weight` of shape (rows, items): each row is one weighting of
# the same items (a bootstrap resample is a row of counts times the items' own weights; the
# whole data set, a row of those weights). Each row's value is computed with the floating-point
# operations, in the order, of the single-row functions above (scikit-learn's), so that a row
# gives the same bits as them: cumulative sums run along the item axis (numpy's accumulate is
# sequential, as a 1-D cumsum), sums of a row's terms go through np.add.reduce over a contiguous
# row of exactly that row's length (numpy's pairwise summation depends on the length, so rows
# are grouped by length, never padded), and items of weight 0 add +0.0 or are left out as
# scikit-learn leaves them out.


@dataclass(frozen=True)
class ScoreOrder:
    """One sort of a binary scoring, shared by every row of weights: the items by decreasing
    score, ties in scikit-learn's order (stable ascending sort, reversed), and the runs of equal
    scores (one ROC point each). `item_weights`, if given: the items' own weights (ISIC's score
    weights), whose curve is made once however often it is asked for (metrics.json asks for it
    for its per-category metrics and again for the point value of the mean AUC)."""

    order: np.ndarray  # item indices, scores decreasing
    positive: np.ndarray  # the truth of the items in that order
    starts: np.ndarray  # first position of each run of equal scores
    ends: np.ndarray  # last position of each run
    thresholds: np.ndarray  # the score of each run
    item_weights: np.ndarray | None = None

    # The run totals only many rows need (_roc_auc_of_items), made on first use: one row (the
    # point value) goes through ranking_curve_of_order and never reads them.
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


def score_order(y_true: np.ndarray, y_score: np.ndarray, item_weights: np.ndarray | None = None) -> ScoreOrder:
    y_true, y_score = np.asarray(y_true, dtype=bool), np.asarray(y_score, dtype=np.float64)
    _check_lengths(y_true, y_score)
    if not np.isfinite(y_score).all():
        raise ValueError("scores must be finite")
    if item_weights is not None:
        item_weights = np.array(item_weights, dtype=np.float64)  # a copy: the caller's may change
        _check_lengths(y_true, item_weights)
    order = stable_order(y_score)[::-1]
    scores = y_score[order]
    ends = np.r_[np.flatnonzero(np.diff(scores)), len(scores) - 1] if len(scores) else np.zeros(0, dtype=np.intp)
    starts = np.r_[0, ends[:-1] + 1] if len(ends) else ends
    ends = ends.astype(np.intp)
    return ScoreOrder(order, y_true[order], starts.astype(np.intp), ends, scores[ends], item_weights)


def ranking_curve_of_order(order: ScoreOrder, weights: np.ndarray) -> RankingCurve:
    """ranking_curve of the scoring that `order` sorted, with these weights (one per item, finite
    and non-negative): the same curve, bit for bit (items of weight 0 add +0.0 to the sums and
    make no point), without sorting again; the order's item_curve when these are its item
    weights, bit for bit."""
    weights = np.asarray(weights, dtype=np.float64)
    _check_lengths(order.order, weights)
    known = order.item_weights
    if known is not None and np.array_equal(known.view(np.int64), weights.view(np.int64)):
        return order.item_curve
    return _curve_of_order(order, weights)


def _curve_of_order(order: ScoreOrder, weights: np.ndarray) -> RankingCurve:
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("weights must be finite and non-negative")
    w = weights[order.order]
    if not len(w):
        empty = np.zeros(0)
        return RankingCurve(empty, empty, empty)
    if np.count_nonzero(w) == len(w):  # every run has weight: every run is a point
        ends, thresholds = order.ends, order.thresholds
    else:
        points = np.flatnonzero(np.logical_or.reduceat(w != 0, order.starts))
        ends, thresholds = order.ends[points], order.thresholds[points]
    # ranking_curve's truth * weights and (1 - truth) * weights: the same numbers (+0.0 where the
    # other class is, as weights are not negative), made without the products.
    positive_weights = np.where(order.positive, w, 0.0)
    tps = np.cumsum(positive_weights)[ends]
    fps = np.cumsum(w - positive_weights)[ends]
    return RankingCurve(fps=fps, tps=tps, thresholds=thresholds)


def _columns(weights: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """weights[:, columns] in the weights' memory order (np.take, quicker, makes C order)."""
    if weights.flags.f_contiguous and not weights.flags.c_contiguous:
        return weights[:, columns]
    return np.take(weights, columns, axis=1)


def _running_sums(weights: np.ndarray, through: np.ndarray) -> np.ndarray:
    """(rows, points): per row of weights (rows, items), the sum of its first through[g] items,
    added in order (a cumulative sum along the row, as a 1-D cumsum), 0.0 where through[g] is 0."""
    by_item = weights.flags.f_contiguous and not weights.flags.c_contiguous
    running = np.zeros((weights.shape[0], weights.shape[1] + 1), order="F" if by_item else "C")
    np.cumsum(weights, axis=1, out=running[:, 1:])
    return running[:, through]


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


def roc_auc_score(y_true, y_score, sample_weight=None, orders=None) -> np.ndarray:
    """scikit-learn's roc_auc_score(y_true, y_score, sample_weight=w), bit for bit, for every row w
    of `sample_weight` (rows, items; 1-D: one weighting, that axis dropped; None: every item once):
    its curve, collinear points dropped, the trapezoids summed as np.add.reduce sums them. NaN for
    a row without weighted positives or without weighted negatives. A bootstrap resample is a row
    of counts (times the items' own weights, if any); the point value the row of ones (or of those
    weights): both go through this one computation, one sort for every row.

    y_true and y_score (items, labels): each label's AUC, as scikit-learn's average=None on a
    multilabel indicator, the result (rows, labels) (the weights checked and transposed once).
    Fractional weights follow scikit-learn 1.7 (the ISIC reference's): ties added in reverse item
    order; 1.8 and later add them the other way, which can move the last bit (whole numbers are
    exact in either order).

    `orders`: each label's score_order(y_true, y_score) when the caller has made it already (ISIC
    keeps one per category for its curves): the same sort, not made again for every call."""
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    if y_true.ndim not in (1, 2) or y_score.shape != y_true.shape:
        raise ValueError(f"y_true and y_score must be 1-D of equal length (or 2-D, a column per label), "
                         f"got shapes {y_true.shape} and {y_score.shape}")
    if not np.isin(y_true, (0, 1)).all():
        raise ValueError("y_true must hold only 0 and 1")
    if not np.isfinite(y_score).all():
        raise ValueError("y_score must be finite")
    labels = y_true.ndim == 2
    positive, y_score = (y_true.astype(bool), y_score) if labels else (y_true.astype(bool)[:, None], y_score[:, None])
    weights = np.ones(len(y_true)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    single = weights.ndim == 1
    weights = np.atleast_2d(weights)
    if weights.ndim != 2 or weights.shape[1] != len(y_true):
        raise ValueError(f"sample_weight of shape {np.shape(sample_weight)} does not have one column per item")
    # The running sums along every row are fastest with each row's items together when the items
    # outnumber the rows, else with each item's rows together (an accumulate step per item); the
    # arrays below keep that memory order, and each row's sums are sequential either way.
    weights = np.ascontiguousarray(weights) if weights.shape[1] >= len(weights) else np.asfortranarray(weights)
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("sample_weight must be finite and non-negative")
    if not weights.size:
        auc = np.full((len(weights), y_score.shape[1]), np.nan)
    else:
        whole = len(weights) > 1 and bool((weights == np.round(weights)).all()) \
            and float(weights.sum(axis=1).max()) < 2.0 ** 53
        auc = np.empty((len(weights), y_score.shape[1]))
        for label in range(y_score.shape[1]):
            order = orders[label] if orders is not None else score_order(positive[:, label], y_score[:, label])
            if len(weights) == 1:  # one row (the point value): the single-row curve, its bits and fewer passes
                auc[0, label] = roc_auc(ranking_curve_of_order(order, weights[0]))
            else:
                auc[:, label] = _roc_auc_of_items(order, weights, whole)
    if not labels:
        auc = auc[:, 0]
    return auc[0] if single else auc


def _roc_auc_of_items(order: ScoreOrder, weights: np.ndarray, whole: bool) -> np.ndarray:
    """roc_auc_score of one sorted scoring, the weights given as (rows, items), in either memory
    order. Every array below is (rows, points or items): cumulative sums run along the rows,
    sequentially, as a 1-D cumsum."""
    rows = weights.shape[0]
    if not len(order.order):
        return np.full(rows, np.nan)
    # ranking_curve's cumulative sums read at the end of each run of equal scores: the positives'
    # weights added in order (the negatives between them add +0.0 there: left out), and the
    # negatives' likewise; a run is a point of the row's curve when it has weight.
    tps = _running_sums(_columns(weights, order.order[order.positive]), order.positives_through)
    fps = _running_sums(_columns(weights, order.order[~order.positive]), order.negatives_through)
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


def nan_mean_rows(values: np.ndarray) -> np.ndarray:
    """nan_mean of every row (rows, k): the same sum (NaN as 0, np.add.reduce over the row) and
    division; NaN for a row without a defined value."""
    values = np.asarray(values, dtype=np.float64)
    defined = ~np.isnan(values)
    count = defined.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, np.where(defined, values, 0.0).sum(axis=1) / count, np.nan)
