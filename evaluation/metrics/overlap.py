"""Overlap of masks and label maps, N-D: arrays in, numbers out.

One intermediate: the voxel counts of each label (intersection, predicted size, true size), all
labels in one pass over the two label maps (`label_overlap_counts`), with each label's bounding
box of the union so that surface metrics can crop (evaluation.metrics.surface). Dice, Jaccard
(IoU), volume similarity and the absolute volume difference are ratios or products of those
counts.

Empty masks follow the library's empty rule (evaluation.metrics): both empty is 1 for Dice,
Jaccard and volume similarity, one empty what the formula gives (0); each a parameter.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from evaluation.metrics import validation
from evaluation.metrics.registry import metric

_SLAB_VOXELS = 1 << 23  # voxels per slab when scanning whole masks: bounded temporaries

EMPTY_OVERLAP = {"both_empty": 1.0, "truth_empty": 0.0, "prediction_empty": 0.0}


def _all_numbers(*values) -> bool:
    """Whether every value is one real number (a Python or NumPy scalar), not an array."""
    return all(isinstance(value, numbers.Real) for value in values)


def dice_from_counts(intersection, prediction_size, truth_size, both_empty: float = 1.0):
    """2|P∩G| / (|P| + |G|); `both_empty` when neither mask has a voxel (the usual convention is
    1.0: nothing to find, nothing found). Sizes may be weighted (e.g. by voxel volume), and arrays
    (one Dice per element, e.g. per bootstrap row); numbers in, a float out."""
    if _all_numbers(intersection, prediction_size, truth_size):  # one image: Python floats, the same bits
        intersection, total = float(intersection), float(prediction_size) + float(truth_size)
        return 2.0 * intersection / total if total != 0 else float(both_empty)
    intersection, prediction_size, truth_size = (np.asarray(size, dtype=np.float64)
                                                 for size in (intersection, prediction_size, truth_size))
    total = prediction_size + truth_size
    with np.errstate(invalid="ignore", divide="ignore"):
        # != 0, not > 0: a NaN size gives NaN, never the empty masks' score
        dice = np.where(total != 0, 2.0 * intersection / total, float(both_empty))
    return float(dice) if dice.ndim == 0 else dice


def jaccard_from_counts(intersection, prediction_size, truth_size, both_empty: float = 1.0):
    """|P∩G| / |P∪G| = |P∩G| / (|P| + |G| − |P∩G|); `both_empty` when neither has a voxel.
    Numbers or arrays, as dice_from_counts."""
    intersection, prediction_size, truth_size = (np.asarray(size, dtype=np.float64)
                                                 for size in (intersection, prediction_size, truth_size))
    union = prediction_size + truth_size - intersection
    with np.errstate(invalid="ignore", divide="ignore"):
        jaccard = np.where(union != 0, intersection / union, float(both_empty))
    return float(jaccard) if jaccard.ndim == 0 else jaccard


def with_empty_policy(values, prediction_size, truth_size, policy: dict):
    """`values` with each empty case replaced by its value in `policy` (validation.check_empty_policy;
    sizes are counts or volumes)."""
    if _all_numbers(values, prediction_size, truth_size):  # one image: no arrays to build
        if truth_size == 0:
            return float(policy["both_empty" if prediction_size == 0 else "truth_empty"])
        return float(policy["prediction_empty"] if prediction_size == 0 else values)
    values = np.asarray(values, dtype=np.float64)
    prediction_size, truth_size = np.asarray(prediction_size), np.asarray(truth_size)
    result = np.where((prediction_size == 0) & (truth_size == 0), policy["both_empty"],
                      np.where(truth_size == 0, policy["truth_empty"],
                               np.where(prediction_size == 0, policy["prediction_empty"], values)))
    return float(result) if result.ndim == 0 else result


def union_box(prediction: np.ndarray, truth: np.ndarray, margin: int = 0) -> tuple[slice, ...] | None:
    """The bounding box of the voxels nonzero in either of two masks of one shape (any dtype),
    widened by `margin` voxels on every side within the image; None if there is none. Outside it
    both masks are background: a metric that sees a whole mask's neighbourhoods (a skeleton, an
    Euler number) gets those of the whole image from a margin of 1, at the cost of the box."""
    box = _tight_box(prediction, truth)
    if box is None or margin == 0:
        return box
    return tuple(slice(max(0, s.start - margin), min(n, s.stop + margin)) for s, n in zip(box, prediction.shape,
                                                                                            strict=True))


def _tight_box(prediction: np.ndarray, truth: np.ndarray) -> tuple[slice, ...] | None:
    """union_box without margin: slab by slab along the first axis (bounded temporaries), the
    rows holding foreground and the projection of the slab onto the other axes, whose own box is
    read at the end."""
    if prediction.size <= _SLAB_VOXELS:  # one slab: each axis's extent read off the union directly
        either = _nonzero(prediction) | _nonzero(truth)
        rows = np.flatnonzero(either.reshape(len(either), -1).any(axis=1)) if either.size else []
        if len(rows) == 0:
            return None
        box = [slice(int(rows[0]), int(rows[-1]) + 1)]
        within = either[box[0]]  # the other axes' extents, read within the rows that hold any
        for axis in range(1, either.ndim):
            along = np.flatnonzero(within.any(axis=tuple(a for a in range(either.ndim) if a != axis)))
            box.append(slice(int(along[0]), int(along[-1]) + 1))
        return tuple(box)
    rows: list[int] = []
    projection = np.zeros(prediction.shape[1:], dtype=bool)
    rows_per_slab = max(1, _SLAB_VOXELS // max(1, math.prod(prediction.shape[1:])))
    for first in range(0, prediction.shape[0], rows_per_slab):
        either = _nonzero(prediction[first:first + rows_per_slab]) | _nonzero(truth[first:first + rows_per_slab])
        flat = either.reshape(len(either), -1)
        occupied = np.flatnonzero(flat.any(axis=1)) if flat.size else np.zeros(0, dtype=np.int64)
        if occupied.size:
            rows += [first + int(occupied[0]), first + int(occupied[-1])]
            projection |= either.any(axis=0)
    if not rows:
        return None
    box = [slice(min(rows), max(rows) + 1)]
    for axis in range(projection.ndim):
        along = np.flatnonzero(projection.any(axis=tuple(a for a in range(projection.ndim) if a != axis)))
        box.append(slice(int(along[0]), int(along[-1]) + 1))
    return tuple(box)


def _nonzero(array: np.ndarray) -> np.ndarray:
    return array if array.dtype == bool else array != 0


def overlap_counts(prediction: np.ndarray, truth: np.ndarray) -> tuple[int, int, int]:
    """(|P∩G|, |P|, |G|) of two masks of the same shape (nonzero is foreground)."""
    prediction, truth = validation.check_masks(prediction, truth)
    return (int(np.count_nonzero(prediction & truth)), int(np.count_nonzero(prediction)),
            int(np.count_nonzero(truth)))


@metric(kind="masks", better="higher", symmetric=True, empty=EMPTY_OVERLAP,
        equals=("scikit-learn f1_score of the voxels", "medpy.metric.binary.dc",
                "SimpleITK LabelOverlapMeasuresImageFilter.GetDiceCoefficient"),
        citation="Dice, Ecology 26(3), 1945")
def dice(prediction: np.ndarray, truth: np.ndarray, both_empty: float = 1.0, truth_empty: float = 0.0,
         prediction_empty: float = 0.0) -> float:
    """Dice coefficient (F1 of the voxels) of two masks of one shape, N-D.

    2|P∩G| / (|P| + |G|) over the voxels of the masks (any nonzero value is foreground): 1 for
    identical masks, 0 for disjoint ones. Empty masks: `both_empty` (1.0), `truth_empty` and
    `prediction_empty` (0.0, what the formula gives).
    """
    policy = validation.check_empty_policy(both_empty, truth_empty, prediction_empty)
    intersection, predicted, true = overlap_counts(prediction, truth)
    return with_empty_policy(dice_from_counts(intersection, predicted, true), predicted, true, policy)


@metric(kind="masks", better="higher", symmetric=True, empty=EMPTY_OVERLAP,
        equals=("scikit-learn jaccard_score of the voxels",
                "SimpleITK LabelOverlapMeasuresImageFilter.GetJaccardCoefficient", "medpy.metric.binary.jc"),
        citation="Jaccard, New Phytologist 11(2), 1912")
def jaccard(prediction: np.ndarray, truth: np.ndarray, both_empty: float = 1.0, truth_empty: float = 0.0,
            prediction_empty: float = 0.0) -> float:
    """Jaccard index (intersection over union, IoU) of two masks of one shape, N-D.

    |P∩G| / |P∪G| over the voxels (any nonzero value is foreground); equals D / (2 − D) for the
    Dice coefficient D. Empty masks: `both_empty` (1.0), `truth_empty` and `prediction_empty`
    (0.0, what the formula gives).
    """
    policy = validation.check_empty_policy(both_empty, truth_empty, prediction_empty)
    intersection, predicted, true = overlap_counts(prediction, truth)
    return with_empty_policy(jaccard_from_counts(intersection, predicted, true), predicted, true, policy)


@metric(kind="masks", better="higher", symmetric=True, empty=EMPTY_OVERLAP,
        equals=("1 − |SimpleITK LabelOverlapMeasuresImageFilter.GetVolumeSimilarity()| / 2",),
        citation="Taha and Hanbury, BMC Medical Imaging 15:29, 2015 (VS)")
def volume_similarity(prediction: np.ndarray, truth: np.ndarray, both_empty: float = 1.0, truth_empty: float = 0.0,
                      prediction_empty: float = 0.0) -> float:
    """Volume similarity of two masks of one shape: 1 − ||P| − |G|| / (|P| + |G|).

    Compares the sizes only, not where the voxels are (1 for masks of equal size). SimpleITK's
    `GetVolumeSimilarity` is the signed 2(|P| − |G|) / (|P| + |G|): this is 1 − |that| / 2.
    Empty masks: `both_empty` (1.0), `truth_empty` and `prediction_empty` (0.0, what the formula
    gives).
    """
    policy = validation.check_empty_policy(both_empty, truth_empty, prediction_empty)
    _, predicted, true = overlap_counts(prediction, truth)
    total = predicted + true
    value = 1.0 - abs(predicted - true) / total if total else math.nan
    return with_empty_policy(value, predicted, true, policy)


@metric(kind="masks", better="lower", unit="volume", symmetric=True,
        equals=("|Σ prediction − Σ truth| × the voxel volume (numpy)",
                "MetricsReloaded absolute_volume_difference_ratio × the true volume"),
        citation="Taha and Hanbury, BMC Medical Imaging 15:29, 2015 (volumetric distance)")
def absolute_volume_difference(prediction: np.ndarray, truth: np.ndarray, spacing=None) -> float:
    """Absolute volume difference of two masks, in the spacing's units cubed (mm³ for mm).

    ||P| − |G|| × Π spacing: the voxel counts' difference times the volume of one voxel (for
    spacing None, in voxels). Defined for empty masks too (0 when both are empty); divide by
    1000 for millilitres from mm³.
    """
    prediction, truth = validation.check_masks(prediction, truth)
    voxel_volume = math.prod(validation.check_spacing(spacing, prediction.ndim).tolist())
    _, predicted, true = overlap_counts(prediction, truth)
    return abs(predicted - true) * voxel_volume


# ---- label maps: every label in one pass --------------------------------------------------------

# Words of 8 bytes scanned per slab: bounded temporaries (~8 MB per array) whatever the volume.
_WORDS_PER_SLAB = 1 << 20


def foreground_voxels(prediction: np.ndarray, truth: np.ndarray,
                      everything: bool = False) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(flat C-order indices, prediction values, truth values) of the voxels where either map is
    nonzero (every voxel with `everything`), slab by slab along the first axis.

    Two integer or boolean arrays of one shape, any memory order. Each slab is made contiguous
    on its own (bounded memory) and read as 8-byte words, so that the zero words of both maps,
    the background of a segmentation, are skipped 8/itemsize voxels at a time: the cost is one
    streaming read of both maps plus work proportional to the foreground."""
    shape = prediction.shape
    row = math.prod(shape[1:]) if len(shape) > 1 else 1
    n_rows = shape[0] if shape else 1
    itemsize = max(prediction.dtype.itemsize, truth.dtype.itemsize)
    per_word = 8 // itemsize if itemsize <= 8 else 1
    rows_per_slab = max(1, (_WORDS_PER_SLAB * per_word) // max(row, 1))
    for first in range(0, n_rows, rows_per_slab):
        last = min(first + rows_per_slab, n_rows)
        p, t = (_flat_slab(array, first, last) for array in (prediction, truth))
        offset = first * row
        if everything:
            yield np.arange(offset, offset + p.size, dtype=np.int64), p, t
            continue
        if p.dtype != t.dtype or p.dtype.itemsize not in (1, 2, 4, 8):
            voxels = np.flatnonzero((p != 0) | (t != 0))
            yield voxels + offset, p[voxels], t[voxels]
            continue
        n_words = p.size // per_word
        words = np.flatnonzero(p[: n_words * per_word].view(np.uint64) | t[: n_words * per_word].view(np.uint64))
        voxels = (words[:, None] * per_word + np.arange(per_word)).reshape(-1)
        if n_words * per_word < p.size:  # the last few voxels that do not fill a word
            voxels = np.concatenate([voxels, np.arange(n_words * per_word, p.size)])
        p_values, t_values = p[voxels], t[voxels]
        keep = (p_values != 0) | (t_values != 0)  # zero voxels sharing a word with foreground
        yield voxels[keep] + offset, p_values[keep], t_values[keep]


def _flat_slab(array: np.ndarray, first: int, last: int) -> np.ndarray:
    slab = np.ascontiguousarray(array[first:last] if array.ndim else array.reshape(1))
    if slab.dtype == bool:
        slab = slab.view(np.uint8)
    return slab.reshape(-1)


@dataclass(frozen=True)
class LabelOverlapCounts:
    """Voxel counts of each label of two label maps, and each label's bounding box of the union.

    Arrays in the order of `labels`. `boxes[i]` is a tuple of slices (numpy axis order) around
    every voxel having label i in either map, None when neither has it: outside it both masks of
    that label are background, so surface distances computed on the crop are exact."""

    labels: np.ndarray  # int64
    intersection: np.ndarray  # voxels with the label in both maps
    prediction_size: np.ndarray  # voxels with the label in the prediction
    truth_size: np.ndarray  # voxels with the label in the truth
    boxes: tuple

    def dice(self, both_empty: float = 1.0, truth_empty: float = 0.0, prediction_empty: float = 0.0) -> np.ndarray:
        """Each label's Dice coefficient (overlap.dice), with the empty policy of `dice`."""
        policy = validation.check_empty_policy(both_empty, truth_empty, prediction_empty)
        values = dice_from_counts(self.intersection, self.prediction_size, self.truth_size)
        return np.atleast_1d(with_empty_policy(values, self.prediction_size, self.truth_size, policy))

    def jaccard(self, both_empty: float = 1.0, truth_empty: float = 0.0, prediction_empty: float = 0.0) -> np.ndarray:
        """Each label's Jaccard index (overlap.jaccard), with the empty policy of `jaccard`."""
        policy = validation.check_empty_policy(both_empty, truth_empty, prediction_empty)
        values = jaccard_from_counts(self.intersection, self.prediction_size, self.truth_size)
        return np.atleast_1d(with_empty_policy(values, self.prediction_size, self.truth_size, policy))


@metric(kind="label_maps", better=None, returns="LabelOverlapCounts",
        equals=("scikit-learn confusion_matrix of the voxels (its diagonal and margins)",
                "numpy argwhere bounding boxes"),
        citation="the confusion matrix of the voxels (Dice, Ecology 26(3), 1945)")
def label_overlap_counts(prediction: np.ndarray, truth: np.ndarray, labels) -> LabelOverlapCounts:
    """Per label: intersection, predicted size, true size and the bounding box of the union, in one pass.

    For each label l of `labels`: |P=l ∩ G=l|, |P=l|, |G=l| and the box around P=l ∪ G=l, from
    one pass over the two label maps (integers of any dtype, booleans are labels 0 and 1) for all
    labels at once, in bounded memory: slab by slab, looking only at the voxels where either map
    is nonzero (every voxel when 0 is one of `labels`). Values not in `labels` are ignored, so a
    map holding 65,535 labels costs what a map of one label costs.
    """
    prediction, truth = validation.check_label_maps(prediction, truth)
    labels = validation.check_labels(labels)
    n_labels = len(labels)
    intersection = np.zeros(n_labels + 1, dtype=np.int64)
    predicted = np.zeros(n_labels + 1, dtype=np.int64)
    true = np.zeros(n_labels + 1, dtype=np.int64)
    boxes = _LabelBoxes(n_labels, prediction.shape)
    index_of_prediction, index_of_truth = (_label_positions(labels, array.dtype) for array in (prediction, truth))
    everything = bool(n_labels) and bool((labels == 0).any())
    for voxels, p_values, t_values in foreground_voxels(prediction, truth, everything=everything):
        if voxels.size == 0:
            continue
        p_index, t_index = index_of_prediction(p_values), index_of_truth(t_values)
        predicted += np.bincount(p_index, minlength=n_labels + 1)
        true += np.bincount(t_index, minlength=n_labels + 1)
        intersection += np.bincount(p_index[p_values == t_values], minlength=n_labels + 1)
        boxes.add(np.unravel_index(voxels, prediction.shape), p_index, t_index)
    return LabelOverlapCounts(labels=labels, intersection=intersection[:n_labels],
                              prediction_size=predicted[:n_labels], truth_size=true[:n_labels], boxes=boxes.boxes())


def _label_positions(labels: np.ndarray, dtype: np.dtype):
    """A function: values of a label map of `dtype` -> the position of each value in `labels`,
    len(labels) for a value not among them. A lookup table for maps of 8 or 16 bits (one gather
    a voxel), a binary search otherwise."""
    n_labels = len(labels)
    if dtype.kind == "b":
        dtype = np.dtype(np.uint8)  # the slabs of boolean maps are read as bytes (foreground_voxels)
    if dtype.kind in "iu" and dtype.itemsize <= 2:
        low = 0 if dtype.kind == "u" else int(np.iinfo(dtype).min)
        size = 1 << (8 * dtype.itemsize)
        table = np.full(size, n_labels, dtype=np.int64)
        inside = (labels >= low) & (labels < low + size)
        table[labels[inside] - low] = np.flatnonzero(inside)
        if low == 0:
            return lambda values: table[values]
        return lambda values: table[values.astype(np.int64) - low]
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]

    def search(values: np.ndarray) -> np.ndarray:
        values = values.astype(np.int64, copy=False)
        if n_labels == 0:
            return np.zeros(values.shape, dtype=np.int64)
        where = np.searchsorted(sorted_labels, values)
        np.minimum(where, n_labels - 1, out=where)
        return np.where(sorted_labels[where] == values, order[where], n_labels)

    return search


class _LabelBoxes:
    """Each label's bounding box of the voxels where either map has it, gathered slab by slab:
    per axis, which coordinates each label occupies (a labels × axis-length table of booleans,
    one scatter a voxel), or running minima and maxima when that table would be large."""

    _LARGEST_TABLE = 1 << 27  # bytes

    def __init__(self, n_labels: int, shape: tuple[int, ...]):
        self.n_labels, self.shape = n_labels, shape
        self.tables = None
        if (n_labels + 1) * sum(shape) <= self._LARGEST_TABLE:
            self.tables = [np.zeros((n_labels + 1, n), dtype=bool) for n in shape]
        else:
            self.low = np.full((len(shape), n_labels + 1), np.iinfo(np.int64).max)
            self.high = np.full((len(shape), n_labels + 1), -1, dtype=np.int64)

    def add(self, coordinates: tuple[np.ndarray, ...], *indices: np.ndarray) -> None:
        for axis, coordinate in enumerate(coordinates):
            for index in indices:
                if self.tables is not None:
                    self.tables[axis][index, coordinate] = True
                else:
                    np.minimum.at(self.low[axis], index, coordinate)
                    np.maximum.at(self.high[axis], index, coordinate)

    def boxes(self) -> tuple:
        if 0 in self.shape:
            return (None,) * self.n_labels
        if self.tables is not None:
            present = self.tables[0][: self.n_labels].any(axis=1)
            low = [table[: self.n_labels].argmax(axis=1) for table in self.tables]
            high = [n - 1 - table[: self.n_labels, ::-1].argmax(axis=1) for n, table in zip(self.shape, self.tables,
                                                                                              strict=True)]
        else:
            present = self.high[0, : self.n_labels] >= 0
            low, high = self.low, self.high
        return tuple(tuple(slice(int(lo[i]), int(hi[i]) + 1) for lo, hi in zip(low, high, strict=True))
                     if present[i] else None for i in range(self.n_labels))




def label_confusion(truth: np.ndarray, prediction: np.ndarray,
                    box_label: int | None = None) -> tuple[np.ndarray, tuple[slice, ...] | None]:
    """Voxel counts of every (truth label, predicted label) pair of two uint8 label maps of the
    same shape, as a (256, 256) array indexed [truth, prediction], in one pass over both maps.

    Only the 8-voxel words where either map is nonzero are looked at, slab by slab, so the cost
    is one streaming read of both maps plus work proportional to the foreground. With
    `box_label`, also the bounding box (slices, numpy axis order) of the voxels having that label
    in either map, or None if neither has it."""
    prediction, truth = validation.check_label_maps(prediction, truth)
    if truth.dtype != np.uint8 or prediction.dtype != np.uint8:
        raise ValueError(f"label maps must be uint8, got {truth.dtype} and {prediction.dtype}")
    counts = np.zeros(256 * 256, dtype=np.int64)
    low = np.full(truth.ndim, np.iinfo(np.int64).max)
    high = np.full(truth.ndim, -1)
    for voxels, truth_values, prediction_values in foreground_voxels(truth, prediction):
        counts += np.bincount(truth_values.astype(np.int64) * 256 + prediction_values, minlength=256 * 256)
        if box_label is not None:
            selected = voxels[(truth_values == box_label) | (prediction_values == box_label)]
            if selected.size:
                coordinates = np.unravel_index(selected, truth.shape)
                for axis, values in enumerate(coordinates):
                    low[axis] = min(low[axis], int(values.min()))
                    high[axis] = max(high[axis], int(values.max()))
    counts[0] = truth.size - counts[1:].sum()
    box = None
    if truth.size and high[0] >= 0:
        box = tuple(slice(int(lo), int(hi) + 1) for lo, hi in zip(low, high, strict=True))
    return counts.reshape(256, 256), box
