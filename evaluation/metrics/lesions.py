"""Lesion detection by connected components: lesions are the connected components of a binary
mask, a predicted lesion matches a true one when their IoU exceeds a threshold, one to one.

Arrays in, numbers out. The IoU of every overlapping pair comes from one joint histogram over
the voxels where both label maps are nonzero (pairs that do not overlap have IoU 0 and can never
match), so the cost is the labelling plus work proportional to the foreground.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.metrics.overlap import dice_from_counts

MATCHING_METHODS = ("greedy", "hungarian")
CONNECTIVITIES_3D = (6, 18, 26)
_SLAB = 1 << 22  # voxels of the label maps handled at a time


@dataclass(frozen=True)
class LesionCounts:
    """Detection counts of one image: matched pairs (TP), unmatched predicted lesions (FP),
    unmatched true lesions (FN)."""

    true_positives: int
    false_positives: int
    false_negatives: int

    @property
    def true_lesions(self) -> int:
        return self.true_positives + self.false_negatives

    @property
    def predicted_lesions(self) -> int:
        return self.true_positives + self.false_positives


def connected_lesions(mask: np.ndarray, connectivity: int = 26) -> tuple[np.ndarray, int]:
    """(labels, count): the connected components of a binary 3D mask numbered 1..count in scan
    order (cc3d), 0 elsewhere. `connectivity` 6 (faces), 18 (+edges) or 26 (+corners)."""
    import cc3d  # imported here: only the segmentation challenges need it

    mask = np.asarray(mask)
    if mask.ndim != 3:
        raise ValueError(f"a 3D mask is expected, got {mask.ndim} dimensions")
    if connectivity not in CONNECTIVITIES_3D:
        raise ValueError(f"connectivity must be one of {CONNECTIVITIES_3D}, got {connectivity}")
    labels, count = cc3d.connected_components(np.ascontiguousarray(mask, dtype=bool), connectivity=connectivity,
                                              return_N=True)
    return labels, int(count)


def overlapping_pairs(truth_labels: np.ndarray, n_truth: int, prediction_labels: np.ndarray, n_prediction: int):
    """Every (true lesion, predicted lesion) pair that shares a voxel, with its IoU.

    Returns (truth index, prediction index, IoU) arrays (lesions numbered from 1), sorted by
    truth then prediction index."""
    truth_labels = np.asarray(truth_labels).reshape(-1)
    prediction_labels = np.asarray(prediction_labels).reshape(-1)
    if truth_labels.shape != prediction_labels.shape:
        raise ValueError("label maps differ in size")
    truth_sizes = np.zeros(n_truth + 1, dtype=np.int64)
    prediction_sizes = np.zeros(n_prediction + 1, dtype=np.int64)
    keys, counts = [], []
    # In slabs, so that temporaries stay small even when a prediction is lesion almost everywhere;
    # the joint histogram is sparse (one entry per overlapping pair), never n_truth x n_prediction.
    # Only lesion voxels are counted (a label map is mostly background): the sizes from each
    # map's nonzero labels, the pairs from the prediction's labels at the true lesions' voxels.
    for start in range(0, truth_labels.size, _SLAB):
        t, p = truth_labels[start:start + _SLAB], prediction_labels[start:start + _SLAB]
        in_truth = np.flatnonzero(t)
        true_labels, labels_there = t[in_truth], p[in_truth]
        truth_sizes += np.bincount(true_labels, minlength=n_truth + 1)[: n_truth + 1]
        prediction_sizes += np.bincount(p[np.flatnonzero(p)], minlength=n_prediction + 1)[: n_prediction + 1]
        both = labels_there != 0
        slab_keys, slab_counts = np.unique(true_labels[both].astype(np.int64) * (n_prediction + 1) + labels_there[both],
                                           return_counts=True)
        keys.append(slab_keys)
        counts.append(slab_counts)
    pairs, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    intersections = np.bincount(inverse, weights=np.concatenate(counts), minlength=len(pairs)).astype(np.int64)
    truth_index, prediction_index = np.divmod(pairs, n_prediction + 1)
    unions = truth_sizes[truth_index] + prediction_sizes[prediction_index] - intersections
    return truth_index, prediction_index, intersections / unions


def match_pairs(truth_index, prediction_index, iou, iou_threshold: float = 0.3,
                method: str = "greedy") -> np.ndarray:
    """The matched candidate pairs (a boolean per pair): one to one, only pairs with IoU strictly
    above the threshold.

    greedy: pairs by descending IoU (ties: lower truth, then lower prediction index first), each
    taken when neither lesion is matched yet. hungarian: the one-to-one assignment of the
    candidate pairs with the largest sum of IoU (scipy's linear_sum_assignment)."""
    truth_index, prediction_index, iou = (np.asarray(a) for a in (truth_index, prediction_index, iou))
    if method not in MATCHING_METHODS:
        raise ValueError(f"method must be one of {MATCHING_METHODS}, got {method!r}")
    matched = np.zeros(len(iou), dtype=bool)
    candidates = np.flatnonzero(iou > iou_threshold)
    if candidates.size == 0:
        return matched
    if method == "greedy":
        order = candidates[np.lexsort((prediction_index[candidates], truth_index[candidates], -iou[candidates]))]
        used_truth, used_prediction = set(), set()
        for k in order:
            t, p = int(truth_index[k]), int(prediction_index[k])
            if t not in used_truth and p not in used_prediction:
                used_truth.add(t)
                used_prediction.add(p)
                matched[k] = True
        return matched
    from evaluation.machine import load_scipy

    load_scipy()  # SciPy's own OpenBLAS calls exit(1) when it cannot map its buffer: a MemoryError first
    from scipy.optimize import linear_sum_assignment

    rows, row_of = np.unique(truth_index[candidates], return_inverse=True)
    cols, col_of = np.unique(prediction_index[candidates], return_inverse=True)
    weights = np.zeros((len(rows), len(cols)))
    weights[row_of, col_of] = iou[candidates]
    assigned_rows, assigned_cols = linear_sum_assignment(weights, maximize=True)
    chosen = {(int(rows[r]), int(cols[c]))
              for r, c in zip(assigned_rows, assigned_cols, strict=True) if weights[r, c] > 0}
    for k in candidates:
        matched[k] = (int(truth_index[k]), int(prediction_index[k])) in chosen
    return matched


def lesion_detection_counts(truth: np.ndarray, prediction: np.ndarray, connectivity: int = 26,
                            iou_threshold: float = 0.3, method: str = "greedy") -> LesionCounts:
    """TP, FP and FN lesions of two binary 3D masks of the same shape (HECKTOR 2025 GTVn
    detection: 26-connected components, IoU > 0.3, one-to-one greedy matching)."""
    truth, prediction = np.asarray(truth, dtype=bool), np.asarray(prediction, dtype=bool)
    if truth.shape != prediction.shape:
        raise ValueError(f"masks differ in shape: {truth.shape} and {prediction.shape}")
    box = _union_bounding_box(truth, prediction)
    if box is None:
        return LesionCounts(0, 0, 0)
    # Components lie inside the bounding box of all foreground voxels: labelling the box is exact.
    truth_labels, n_truth = connected_lesions(truth[box], connectivity)
    prediction_labels, n_prediction = connected_lesions(prediction[box], connectivity)
    truth_index, prediction_index, iou = overlapping_pairs(truth_labels, n_truth, prediction_labels, n_prediction)
    tp = int(match_pairs(truth_index, prediction_index, iou, iou_threshold, method).sum())
    return LesionCounts(tp, n_prediction - tp, n_truth - tp)


def _union_bounding_box(a: np.ndarray, b: np.ndarray) -> tuple[slice, ...] | None:
    box = []
    for axis in range(a.ndim):
        others = tuple(i for i in range(a.ndim) if i != axis)
        present = np.flatnonzero(a.any(axis=others) | b.any(axis=others))
        if present.size == 0:
            return None
        box.append(slice(int(present[0]), int(present[-1]) + 1))
    return tuple(box)


def f1_from_counts(tp, fp, fn, all_zero: float = 1.0):
    """2TP / (2TP + FP + FN); `all_zero` when TP, FP and FN are all 0 (nothing to find, nothing
    found). Counts may be weighted sums, and arrays (one F1 per element, e.g. per bootstrap row);
    numbers in, a float out."""
    # The Dice of the predicted (TP + FP) and true (TP + FN) lesion counts: the same ratio.
    tp, fp, fn = (np.asarray(count, dtype=np.float64) for count in (tp, fp, fn))
    return dice_from_counts(tp, tp + fp, tp + fn, both_empty=all_zero)
