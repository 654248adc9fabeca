"""Binary ranking metrics (AUROC, average precision, PPV at a fixed recall), on one data set
and, vectorised, on many resamples of it at once.

Everything here depends only on the order of the scores, ties entering together, exactly as
scikit-learn's curves do: a strictly monotone transform of the scores changes nothing.
"""

from __future__ import annotations

import numpy as np

from evaluation.metrics.classification import ranking_curve
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
        raise ValueError(f"y_true and y_score must be 1-D of equal length, got shapes {y_true.shape} and "
                         f"{y_score.shape}")
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
        for name, values in zip(results, _curve_metrics(tp, fp, recall), strict=True):
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
        for name, part in zip(results, values, strict=True):
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
