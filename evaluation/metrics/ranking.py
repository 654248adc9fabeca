"""Binary ranking metrics (AUROC, average precision, PPV at a fixed recall), on one data set
and, vectorised, on many resamples of it at once.

Everything here depends only on the order of the scores, ties entering together, exactly as
scikit-learn's curves do: a strictly monotone transform of the scores changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.metrics.classification import ranking_curve, stable_order
from evaluation.metrics.resampling import draws_to_counts

# Resamples are scored in blocks of rows so that the temporaries stay near 64 MB whatever the
# number of repetitions and images.
_BLOCK_ELEMENTS = 1 << 21
# Drawn positives are placed in blocks of about this many draws: small enough to stay in cache.
_DRAWS_PER_BLOCK = 1 << 16
# Resamples of a grouped bootstrap turned into rows of counts (resamples x items) at a time.
_GROUP_DRAW_ROWS = 100


def check_binary_scores(y_true, y_score) -> tuple[np.ndarray, np.ndarray]:
    """Labels as a bool array and scores as float64, or ValueError saying what is wrong."""
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    if y_true.ndim != 1 or y_score.ndim != 1 or len(y_true) != len(y_score):
        raise ValueError(f"y_true and y_score must be 1-D of equal length, got shapes {y_true.shape} and {y_score.shape}")
    if not np.isin(y_true, (0, 1)).all():
        raise ValueError("y_true must hold only 0 and 1")
    if not np.isfinite(y_score).all():
        raise ValueError("y_score must be finite")
    y_true = y_true.astype(bool)
    if y_true.all() or not y_true.any():
        raise ValueError("y_true must hold both classes")
    return y_true, y_score


def ppv_at_recall(y_true, y_score, recall: float = 0.9) -> float:
    """Precision at `recall` on the precision-recall curve, interpolated linearly.

    The RARE26 rule (rare26.md): order the curve's points by decreasing threshold (one point per
    distinct score), starting from recall 0 / precision 1; take the last point j with recall <=
    `recall`: its precision if its recall is exactly `recall`, else the straight line from j to
    j + 1 read at `recall`. Not "the precision at the first threshold reaching `recall`".
    """
    y_true, y_score = check_binary_scores(y_true, y_score)
    if not 0.0 < recall < 1.0:
        raise ValueError("recall must lie strictly between 0 and 1")
    # scikit-learn's precision_recall_curve, by decreasing threshold: the start point (recall 0,
    # precision 1), then one point per distinct score up to the first reaching full recall.
    curve = ranking_curve(y_true, y_score, np.ones(len(y_true)))
    full_recall = int(np.searchsorted(curve.tps, curve.tps[-1])) + 1
    tps, fps = curve.tps[:full_recall], curve.fps[:full_recall]
    recalls = np.r_[0.0, tps / curve.tps[-1]]
    precisions = np.r_[1.0, tps / (tps + fps)]
    j = int(np.searchsorted(recalls, recall, side="right")) - 1
    if recalls[j] == recall:
        return float(precisions[j])
    slope = (precisions[j + 1] - precisions[j]) / (recalls[j + 1] - recalls[j])
    return float(slope * (recall - recalls[j]) + precisions[j])


def resampled_ranking_metrics(y_true, y_score, counts, recall: float = 0.9) -> dict[str, np.ndarray]:
    """AUROC, average precision and PPV at `recall` of every resample at once.

    `counts[r, i]` is how many times item i is in resample r (a bootstrap draw with replacement
    is a row of multiplicities). Scores are sorted once; per resample, cumulative sums of the
    counts give the true and false positives at every distinct score, from which the three
    curves follow: the same numbers as scikit-learn on the materialised resample (AUROC and
    average precision up to summation order, ~1e-15), in one pass instead of a call per row.
    """
    y_true, y_score = check_binary_scores(y_true, y_score)
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != len(y_true):
        raise ValueError(f"counts must have shape (resamples, {len(y_true)}), got {counts.shape}")
    if (counts < 0).any():
        raise ValueError("counts must be non-negative")

    order = np.argsort(-y_score, kind="stable")
    sorted_scores = y_score[order]
    positive = y_true[order]
    # The last position of every run of tied scores: one curve point per distinct score.
    group_ends = np.flatnonzero(np.append(sorted_scores[1:] != sorted_scores[:-1], True))
    positive_columns = order[positive]
    negative_columns = order[~positive]
    # Per distinct score, how many positives / negatives rank at or above it (sorted order).
    positives_through = np.cumsum(positive)[group_ends]
    negatives_through = np.cumsum(~positive)[group_ends]

    rows_per_block = max(1, _BLOCK_ELEMENTS // max(1, len(y_true)))
    results = {"auroc": [], "average_precision": [], "ppv_at_recall": []}
    for start in range(0, counts.shape[0], rows_per_block):
        block = counts[start:start + rows_per_block].astype(np.float64)
        tp = _cumulative_at(block[:, positive_columns], positives_through)
        fp = _cumulative_at(block[:, negative_columns], negatives_through)
        for name, values in zip(results, _curve_metrics(tp, fp, recall)):
            results[name].append(values)
    return {name: np.concatenate(parts) for name, parts in results.items()}


def _cumulative_at(block: np.ndarray, through: np.ndarray) -> np.ndarray:
    """Row-wise running totals of `block` (columns in score order) read after `through[g]` columns."""
    running = np.zeros((block.shape[0], block.shape[1] + 1))
    np.cumsum(block, axis=1, out=running[:, 1:])
    return running[:, through]


def _sum_left_to_right(terms: np.ndarray) -> np.ndarray:
    """Row sums added strictly left to right (numpy's accumulate), whatever the array's memory
    layout: `.sum(axis=1)` would add a C-ordered row pairwise and an F-ordered one left to right,
    so the last bits of average precision would depend on how resamples were split into blocks."""
    return np.cumsum(terms, axis=1)[:, -1]


def _curve_metrics(tp: np.ndarray, fp: np.ndarray, recall: float):
    """AUROC, AP and PPV@recall from cumulative (resamples x distinct scores) TP and FP counts.

    A distinct score absent from a resample repeats the previous point, which changes none of
    the three (zero-width steps); before any sampled score the point is (recall 0, precision 1),
    the start point sklearn prepends.
    """
    n_pos, n_neg = tp[:, -1], fp[:, -1]
    if (n_pos == 0).any() or (n_neg == 0).any():
        raise ValueError("every resample must hold both classes")
    zeros = np.zeros((tp.shape[0], 1))
    tp_before = np.hstack([zeros, tp[:, :-1]])
    fp_before = np.hstack([zeros, fp[:, :-1]])
    # Trapezoids under the ROC curve, counted in pairs: ties between classes score one half.
    auroc = ((fp - fp_before) * (tp + tp_before)).sum(axis=1) / (2.0 * n_pos * n_neg)

    recalls = tp / n_pos[:, None]
    called = tp + fp
    precisions = np.divide(tp, called, out=np.ones_like(tp), where=called > 0)
    recalls_before = np.hstack([zeros, recalls[:, :-1]])
    average_precision = _sum_left_to_right((recalls - recalls_before) * precisions)

    # k: the first point past the target recall (it exists: the last point has recall 1);
    # j = k - 1: the last point at or below it, or the start point when k is the first.
    rows = np.arange(tp.shape[0])
    k = np.argmax(recalls > recall, axis=1)
    recall_k, precision_k = recalls[rows, k], precisions[rows, k]
    first = k == 0
    j = np.where(first, 0, k - 1)
    recall_j = np.where(first, 0.0, recalls[rows, j])
    precision_j = np.where(first, 1.0, precisions[rows, j])
    slope = (precision_k - precision_j) / (recall_k - recall_j)
    ppv = np.where(recall_j == recall, precision_j, slope * (recall - recall_j) + precision_j)
    return auroc, average_precision, ppv


def metrics_with_drawn_positives(y_true, y_score, draws, recall: float = 0.9) -> dict[str, np.ndarray]:
    """AUROC, average precision and PPV at `recall` of resamples that each hold every negative
    once and the positives `draws[r]` (indices into the positives, in data order, repeats allowed):
    the RARE26 image-level bootstrap. The same numbers, bit for bit, as
    `resampled_ranking_metrics` on the equivalent rows of counts, in time proportional to the
    drawn positives instead of resamples x images.

    The negatives never change: sorted once, they give per distinct score g how many negatives
    score at least (`negatives_through[g]`) and exactly (`negatives_at[g]`) that much. A resample's
    curve moves only at its drawn positives' scores, so each is placed among the negatives by its
    score's rank: AUROC counts, per drawn positive, 2 per negative below and 1 per tied negative
    (integers: exact); the precision-recall curve is read at the resample's distinct positive
    scores only (recall does not move elsewhere), and average precision adds its steps left to
    right, as `_curve_metrics` does.
    """
    y_true, y_score = check_binary_scores(y_true, y_score)
    if not 0.0 < recall < 1.0:
        raise ValueError("recall must lie strictly between 0 and 1")
    draws = np.asarray(draws)
    n_positives = int(y_true.sum())
    if draws.ndim != 2 or draws.shape[1] == 0 or not np.issubdtype(draws.dtype, np.integer):
        raise ValueError(f"draws must be a 2-D array of positive indices, got shape {draws.shape} of {draws.dtype}")
    if draws.size and (draws.min() < 0 or draws.max() >= n_positives):
        raise ValueError(f"draws must index the {n_positives} positives")

    # Distinct scores, highest first (0.0 and -0.0 are one score, as in the sort of the dense path).
    distinct, score_rank = np.unique(-y_score, return_inverse=True)
    negatives_at = np.bincount(score_rank[~y_true], minlength=len(distinct))
    negatives_through = np.cumsum(negatives_at)  # negatives scoring at least distinct score g
    negatives_above = negatives_through - negatives_at
    n_negatives = int(negatives_through[-1])
    positive_rank = score_rank[y_true].astype(np.int32 if len(distinct) < 2**31 else np.int64)
    # Pairs (drawn positive, negative) counted twice when the positive scores higher, once on a tie.
    pair_points = 2 * (n_negatives - negatives_through[positive_rank]) + negatives_at[positive_rank]

    per_block = max(1, _DRAWS_PER_BLOCK // draws.shape[1])
    results = {"auroc": [], "average_precision": [], "ppv_at_recall": []}
    for start in range(0, draws.shape[0], per_block):
        block = draws[start:start + per_block]
        values = _drawn_positives_block(block, positive_rank, pair_points, negatives_through, negatives_above, recall)
        for name, part in zip(results, values):
            results[name].append(part)
    return {name: np.concatenate(parts) for name, parts in results.items()}


def metrics_with_drawn_groups(y_true, y_score, groups, draws, recall: float = 0.9) -> dict[str, np.ndarray]:
    """AUROC, average precision and PPV at `recall` of a grouped (cluster) bootstrap: item i
    belongs to group `groups[i]` (0 to n_groups - 1), resample r draws the groups `draws[r]`
    (repeats allowed) and holds every item of a drawn group once per draw (the RARE25 pack's
    patient-level bootstrap: all images of each drawn patient). `resampled_ranking_metrics` on
    those rows of counts, made _GROUP_DRAW_ROWS resamples at a time so that memory stays bounded
    however many resamples and items (each row's numbers do not depend on the block)."""
    groups = np.asarray(groups)
    draws = np.asarray(draws)
    if groups.ndim != 1 or not np.issubdtype(groups.dtype, np.integer) or (groups.size and groups.min() < 0):
        raise ValueError("groups must be a 1-D array of non-negative group indices, one per item")
    n_groups = int(groups.max()) + 1 if groups.size else 0
    if draws.ndim != 2 or not np.issubdtype(draws.dtype, np.integer):
        raise ValueError(f"draws must be a 2-D array of group indices, got shape {draws.shape} of {draws.dtype}")
    if draws.size and (draws.min() < 0 or draws.max() >= n_groups):
        raise ValueError(f"draws must index the {n_groups} groups")
    parts = [resampled_ranking_metrics(y_true, y_score, draws_to_counts(draws[start:start + _GROUP_DRAW_ROWS],
                                                                        n_groups)[:, groups], recall)
             for start in range(0, max(1, len(draws)), _GROUP_DRAW_ROWS)]
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def _drawn_positives_block(draws, positive_rank, pair_points, negatives_through, negatives_above, recall):
    """The three metrics of one block of resamples: the expressions of `_curve_metrics`, read at
    the points where a resample's true positives change (elsewhere its steps are exact zeros)."""
    n_rows, drawn = draws.shape
    n_pos = float(drawn)
    n_neg = float(negatives_through[-1])
    auroc = pair_points[draws].sum(axis=1) / (2.0 * n_pos * n_neg)

    # Each resample's drawn positives by decreasing score; the last of each run of one score is a
    # point of its curve, with as many true positives as positives drawn up to it.
    ranks = np.sort(positive_rank[draws], axis=1).ravel()
    run_end = np.ones(len(ranks), dtype=bool)
    run_end[:-1] = ranks[1:] != ranks[:-1]
    run_end[drawn - 1::drawn] = True  # a row's last column
    points = np.flatnonzero(run_end)
    row_start = points - points % drawn
    tp = (points - row_start + 1).astype(np.float64)
    tp_before = (np.r_[-1, points[:-1]] + 1 - row_start).astype(np.float64)  # 0 at a row's first point
    rank = ranks[points]
    recalls = tp / n_pos
    precisions = tp / (tp + negatives_through[rank])
    steps = np.zeros(len(ranks))
    steps[points] = (recalls - tp_before / n_pos) * precisions
    average_precision = _sum_left_to_right(steps.reshape(n_rows, drawn))

    # k: the first point past the target recall, the one holding the t-th drawn positive for the
    # least t with t / drawn > recall; j: the distinct score just above k's, holding the
    # positives drawn before k and the negatives scoring above it (the start point if none is).
    t = int(np.argmax(np.arange(1, drawn + 1) / n_pos > recall)) + 1
    k = np.searchsorted(points, np.arange(n_rows) * drawn + (t - 1))
    first = rank[k] == 0
    tp_j = tp_before[k]
    called_j = tp_j + negatives_above[rank[k]]
    recall_j = np.where(first, 0.0, tp_j / n_pos)
    precision_j = np.where(first, 1.0, np.divide(tp_j, called_j, out=np.ones_like(tp_j), where=called_j > 0))
    slope = (precisions[k] - precision_j) / (recalls[k] - recall_j)
    ppv = np.where(recall_j == recall, precision_j, slope * (recall - recall_j) + precision_j)
    return auroc, average_precision, ppv


# ---- weighted AUROC of many weightings of one scoring (bootstrap resamples as multiplicities) ----

# Rows of weights handled at a time: their running sums stay in the processor's cache.
_ROWS_IN_CACHE = 8


@dataclass(frozen=True)
class PairOrder:
    """One sort of a binary scoring, for the AUROC of many weightings of it (roc_auc_of_weightings):
    the larger class by increasing score, and where each item of the other class falls among it."""

    cumulated_positive: bool  # True when the positives are the larger class
    cumulated: np.ndarray  # items of the larger class, by increasing score
    other: np.ndarray  # items of the other class
    below: np.ndarray  # per other item: how many cumulated items score less
    through: np.ndarray  # per other item: how many cumulated items score less or equal


def pair_order(y_true, y_score) -> PairOrder:
    y_true = np.asarray(y_true, dtype=bool)
    y_score = np.asarray(y_score, dtype=np.float64)
    if y_true.ndim != 1 or y_true.shape != y_score.shape:
        raise ValueError(f"y_true and y_score must be 1-D of equal length, got {y_true.shape} and {y_score.shape}")
    cumulated_positive = bool(y_true.sum() > (~y_true).sum())
    cumulated = np.flatnonzero(y_true == cumulated_positive)
    cumulated = cumulated[stable_order(y_score[cumulated])]
    other = np.flatnonzero(y_true != cumulated_positive)
    sorted_scores = y_score[cumulated] + 0.0  # -0.0 is 0.0, as in the sort
    return PairOrder(cumulated_positive, cumulated, other, np.searchsorted(sorted_scores, y_score[other], "left"),
                     np.searchsorted(sorted_scores, y_score[other], "right"))


def resampled_roc_auc(y_true, y_score, weights) -> np.ndarray:
    """Weighted ROC AUC of every row of `weights` (resamples x items): roc_auc_of_weightings of
    pair_order(y_true, y_score)."""
    return roc_auc_of_weightings([pair_order(y_true, y_score)], weights)[:, 0]


def roc_auc_of_weightings(orders: list[PairOrder], weights) -> np.ndarray:
    """(rows x scorings) ROC AUC of every scoring of the same items (one pair_order each) under
    every row of `weights` (rows x items: an item's weight in that row, e.g. its sample weight
    times how many times a bootstrap resample draws it), as scikit-learn's roc_auc_score with the
    row as sample_weight: the weighted share of (positive, negative) pairs ordered right, a tie
    counting one half (the trapezoids of the ROC curve). NaN for a row without weighted positives
    or without weighted negatives.

    Per row, the running weight of the larger class (sorted once, by pair_order) read below and
    through each item of the other class gives twice that item's pairs: rows x items of work,
    no sort per row; a few rows at a time, every scoring in turn, so that they stay in cache.
    Integer weights (counts) are summed exactly, in their own type when no sum can overflow it,
    else in int64."""
    weights = np.asarray(weights)
    if weights.ndim != 2 or any(weights.shape[1] != len(o.cumulated) + len(o.other) for o in orders):
        raise ValueError(f"weights of shape {weights.shape} do not have one column per item")
    integer = np.issubdtype(weights.dtype, np.integer)
    dtype = np.dtype(np.int64 if integer else np.float64)
    if integer and weights.size:
        if weights.min() < 0:
            raise ValueError("weights must be non-negative")
        largest_total = int(weights.sum(axis=1, dtype=np.int64).max())
        if 2 * largest_total ** 2 < np.iinfo(weights.dtype).max:  # the largest sum below: 2 x pairs
            dtype = weights.dtype
    auc = np.empty((len(weights), len(orders)))
    for start in range(0, len(weights), _ROWS_IN_CACHE):
        block = weights[start:start + _ROWS_IN_CACHE].astype(dtype, copy=False)
        rows = slice(start, start + len(block))
        for at, order in enumerate(orders):
            running = np.zeros((len(block), len(order.cumulated) + 1), dtype=dtype)
            np.cumsum(np.take(block, order.cumulated, axis=1), axis=1, out=running[:, 1:])
            other_weights = np.take(block, order.other, axis=1)
            # Per other item, 2 x (cumulated weight below) + tied weight = weight below + weight through.
            below_and_through = np.take(running, order.below, axis=1)
            below_and_through += np.take(running, order.through, axis=1)
            doubled = np.einsum("ij,ij->i", other_weights, below_and_through).astype(np.float64)
            both = running[:, -1].astype(np.float64) * other_weights.sum(axis=1, dtype=np.float64)
            if order.cumulated_positive:  # those counted the pairs of a negative below a positive: the others
                doubled = 2.0 * both - doubled
            with np.errstate(divide="ignore", invalid="ignore"):
                auc[rows, at] = np.where(both > 0, doubled / (2.0 * both), np.nan)
    return auc


# ---- scikit-learn's roc_auc_score with sample_weight, of many weightings at once ----------------


def roc_auc_score(y_true, y_score, sample_weight=None) -> np.ndarray:
    """scikit-learn's roc_auc_score(y_true, y_score, sample_weight=w), bit for bit, for every row w
    of `sample_weight` (rows x items; 1-D: one weighting, a 0-d array back; None: every item
    once): the trapezoids of the ROC curve, with scikit-learn's floating-point operations in its
    order. NaN for a row without weighted positives or without weighted negatives. A bootstrap
    resample is a row of counts (how many times each item is drawn); the point value the row of
    ones: both go through this one computation.

    Per row, as scikit-learn on the items of nonzero weight: one point per distinct score present
    (scores decreasing; weights summed left to right by np.cumsum, exact for whole counts), the
    points collinear with their neighbours dropped (np.diff(_, 2) != 0 on the row's own points),
    (0, 0) prepended, the rates divided by the row's totals, then the trapezoids
    ((dx * (y[k] + y[k-1])) / 2.0) added by np.add.reduce. That sum is pairwise, so its rounding
    depends on how many terms there are: rows are summed in groups of equal length, each row a
    contiguous run of its own terms, never padded (a padded row would be added in other pairs)."""
    y_true = np.asarray(y_true)
    y_score = np.asarray(y_score, dtype=np.float64)
    if y_true.ndim != 1 or y_score.shape != y_true.shape:
        raise ValueError(f"y_true and y_score must be 1-D of equal length, got shapes {y_true.shape} and {y_score.shape}")
    if not np.isin(y_true, (0, 1)).all():
        raise ValueError("y_true must hold only 0 and 1")
    if not np.isfinite(y_score).all():
        raise ValueError("y_score must be finite")
    weights = np.ones(len(y_true)) if sample_weight is None else np.asarray(sample_weight)
    single = weights.ndim == 1
    weights = np.atleast_2d(weights)
    if weights.ndim != 2 or weights.shape[1] != len(y_true):
        raise ValueError(f"sample_weight of shape {np.shape(sample_weight)} does not have one column per item")
    weights = weights.astype(np.float64, copy=False)
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("sample_weight must be finite and non-negative")
    rows, n = weights.shape
    auc = np.full(rows, np.nan)
    if n == 0 or rows == 0:
        return auc[0] if single else auc
    order = stable_order(-y_score)  # scores decreasing, ties in item order (scikit-learn's stable sort)
    scores, positive = y_score[order], y_true[order].astype(bool)
    weights = weights[:, order]
    ends = np.r_[np.flatnonzero(np.diff(scores)), n - 1]  # the last item of each distinct score
    starts = np.r_[0, ends[:-1] + 1]
    tps = np.cumsum(weights * positive, axis=1)[:, ends]
    fps = np.cumsum(weights * ~positive, axis=1)[:, ends]
    present = np.add.reduceat(weights > 0, starts, axis=1) > 0  # a score some item of the row carries
    positives, negatives = tps[:, -1], fps[:, -1]
    defined = (positives > 0) & (negatives > 0)

    # Each present point's neighbours among the row's present points (-1 / G: none).
    columns = np.arange(len(ends))
    marked = np.where(present, columns, -1)
    before = np.maximum.accumulate(np.c_[np.full(rows, -1), marked[:, :-1]], axis=1)
    marked = np.where(present, columns, len(ends))
    after = np.minimum.accumulate(np.c_[marked[:, 1:], np.full(rows, len(ends))][:, ::-1], axis=1)[:, ::-1]
    row = np.arange(rows)[:, None]
    inner = (before >= 0) & (after < len(ends))
    prev, next_ = np.clip(before, 0, None), np.clip(after, None, len(ends) - 1)

    def corner(values):  # np.diff(values, 2) != 0 at the point: (next - it) - (it - previous)
        return ((values[row, next_] - values) - (values - values[row, prev])) != 0

    kept = present & (~inner | corner(fps) | corner(tps))
    with np.errstate(divide="ignore", invalid="ignore"):
        fpr, tpr = fps / negatives[:, None], tps / positives[:, None]
    # The previous kept point of each kept point: (0, 0) before the first.
    marked = np.where(kept, columns, -1)
    last_kept = np.maximum.accumulate(np.c_[np.full(rows, -1), marked[:, :-1]], axis=1)
    first = last_kept < 0
    at = np.clip(last_kept, 0, None)
    fpr_before = np.where(first, 0.0, fpr[row, at])
    tpr_before = np.where(first, 0.0, tpr[row, at])
    terms = (fpr - fpr_before) * (tpr + tpr_before) / 2.0
    lengths = kept.sum(axis=1)
    for length in np.unique(lengths[defined]):
        group = np.flatnonzero(defined & (lengths == length))
        # Row by row, the kept terms in curve order: a C-contiguous (rows, length) block whose
        # sum along axis 1 is np.add.reduce of each row alone.
        block = np.ascontiguousarray(terms[group][kept[group]].reshape(len(group), length))
        auc[group] = np.add.reduce(block, axis=1)
    return auc[0] if single else auc
