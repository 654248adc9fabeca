"""Overlap metrics on binary masks: arrays in, numbers out."""

from __future__ import annotations

import numpy as np

from evaluation.metrics.registry import metric


def dice_from_counts(intersection, prediction_size, truth_size, both_empty: float = 1.0):
    """2|P∩G| / (|P| + |G|); `both_empty` when neither mask has a voxel (the usual convention is
    1.0: nothing to find, nothing found). Sizes may be weighted (e.g. by voxel volume), and arrays
    (one Dice per element, e.g. per bootstrap row); numbers in, a float out."""
    intersection, prediction_size, truth_size = (np.asarray(size, dtype=np.float64)
                                                 for size in (intersection, prediction_size, truth_size))
    total = prediction_size + truth_size
    with np.errstate(invalid="ignore", divide="ignore"):
        # != 0, not > 0: a NaN size gives NaN, never the empty masks' score
        dice = np.where(total != 0, 2.0 * intersection / total, float(both_empty))
    return float(dice) if dice.ndim == 0 else dice


def overlap_counts(prediction: np.ndarray, truth: np.ndarray) -> tuple[int, int, int]:
    """(|P∩G|, |P|, |G|) of two boolean masks of the same shape."""
    prediction = np.asarray(prediction, dtype=bool)
    truth = np.asarray(truth, dtype=bool)
    if prediction.shape != truth.shape:
        raise ValueError(f"masks differ in shape: {prediction.shape} and {truth.shape}")
    return (int(np.count_nonzero(prediction & truth)), int(np.count_nonzero(prediction)),
            int(np.count_nonzero(truth)))


@metric(kind="masks", better="higher", symmetric=True, empty={"both_empty": 1.0},
        equals=("scikit-learn f1_score of the voxels", "medpy.metric.binary.dc"),
        citation="Dice, Ecology 26(3), 1945")
def dice(prediction: np.ndarray, truth: np.ndarray, both_empty: float = 1.0) -> float:
    """Dice coefficient of two boolean masks of the same shape; `both_empty` if both are empty.

    2|P∩G| / (|P| + |G|) over the voxels of the masks (any nonzero value is foreground).
    """
    return dice_from_counts(*overlap_counts(prediction, truth), both_empty=both_empty)


# Words of 8 uint8 voxels scanned per slab: bounded temporaries (~8 MB per array) whatever the volume.
_WORDS_PER_SLAB = 1 << 20


def label_confusion(truth: np.ndarray, prediction: np.ndarray,
                    box_label: int | None = None) -> tuple[np.ndarray, tuple[slice, ...] | None]:
    """Voxel counts of every (truth label, predicted label) pair of two uint8 label maps of the
    same shape, as a (256, 256) array indexed [truth, prediction], in one pass over both maps.

    Only the 8-voxel words where either map is nonzero are looked at, slab by slab, so the cost
    is one streaming read of both maps plus work proportional to the foreground. With
    `box_label`, also the bounding box (slices, numpy axis order) of the voxels having that label
    in either map, or None if neither has it."""
    truth = np.ascontiguousarray(truth)
    prediction = np.ascontiguousarray(prediction)
    if truth.dtype != np.uint8 or prediction.dtype != np.uint8:
        raise ValueError(f"label maps must be uint8, got {truth.dtype} and {prediction.dtype}")
    if truth.shape != prediction.shape:
        raise ValueError(f"label maps differ in shape: {truth.shape} and {prediction.shape}")
    flat_truth, flat_prediction = truth.reshape(-1), prediction.reshape(-1)
    n_voxels = flat_truth.size
    n_words = n_voxels // 8
    truth_words = flat_truth[: n_words * 8].view(np.uint64)
    prediction_words = flat_prediction[: n_words * 8].view(np.uint64)
    counts = np.zeros(256 * 256, dtype=np.int64)
    low = np.full(truth.ndim, np.iinfo(np.int64).max)
    high = np.full(truth.ndim, -1)
    lanes = np.arange(8, dtype=np.int64)

    def add(voxels: np.ndarray, truth_values: np.ndarray, prediction_values: np.ndarray) -> None:
        keep = (truth_values | prediction_values) != 0  # zero voxels sharing a word with foreground
        voxels, truth_values, prediction_values = voxels[keep], truth_values[keep], prediction_values[keep]
        counts[:] += np.bincount(truth_values.astype(np.int64) * 256 + prediction_values, minlength=256 * 256)
        if box_label is not None:
            selected = voxels[(truth_values == box_label) | (prediction_values == box_label)]
            if selected.size:
                coordinates = np.unravel_index(selected, truth.shape)
                for axis, values in enumerate(coordinates):
                    low[axis] = min(low[axis], int(values.min()))
                    high[axis] = max(high[axis], int(values.max()))

    for start in range(0, n_words, _WORDS_PER_SLAB):
        stop = min(start + _WORDS_PER_SLAB, n_words)
        words = np.flatnonzero(truth_words[start:stop] | prediction_words[start:stop]) + start
        if words.size:
            voxels = (words[:, None] * 8 + lanes).reshape(-1)
            add(voxels, truth_words[words].view(np.uint8), prediction_words[words].view(np.uint8))
    if n_words * 8 < n_voxels:  # the last few voxels that do not fill a word
        voxels = np.arange(n_words * 8, n_voxels, dtype=np.int64)
        add(voxels, flat_truth[voxels], flat_prediction[voxels])
    counts[0] = n_voxels - counts[1:].sum()
    box = None
    if high[0] >= 0:
        box = tuple(slice(int(lo), int(hi) + 1) for lo, hi in zip(low, high, strict=True))
    return counts.reshape(256, 256), box
