"""Instances and lesions: connected components, instances matched by overlap, detection counts
(TP, FP, FN, F1), panoptic quality, false-positive and false-negative lesion volume, lesion
count difference. Arrays in, numbers out; masks and label maps are 2D or 3D.

One intermediate, `instance_overlaps`: the sizes of every instance and the shared voxels of
every (true, predicted) pair that shares at least one voxel, from one joint histogram over the
voxels where both label maps are nonzero. Pairs that share no voxel have IoU, Dice and overlap
0 and are never candidates, so the cost is one pass over the label maps plus work
proportional to the foreground and to the overlapping pairs: never a true × predicted matrix,
whatever the number of instances (a noise prediction of 10⁶ components is scored). The lesion
volumes and count difference read the connected components of the masks directly (one side's
components suffice: labelling both to pair them would cost a second labelling for nothing).

Empty maps follow the library's empty rule (evaluation.metrics).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.metrics._assignment import greedy_matching, is_one_to_one, largest_total_matching
from evaluation.metrics.overlap import dice_from_counts, union_box
from evaluation.metrics.registry import metric
from evaluation.metrics.validation import (
    as_bool,
    check_choice,
    check_connectivity,
    check_empty_value,
    check_flag,
    check_in_range,
    check_label_maps,
    check_masks,
    check_nonnegative,
    check_spacing,
)

CRITERIA = ("iou", "dice", "overlap")
# one to one: "hungarian" (largest total criterion), "hungarian_most_matches" (picai_eval's: most
# pairs, then the largest total), "greedy" (best pairs first), "hungarian_then_threshold" (CoNIC's:
# the largest total over every overlapping pair, the threshold after); then the many-to-* rules
ASSIGNMENTS = ("hungarian", "greedy", "many_to_one", "many_to_many", "hungarian_most_matches",
               "hungarian_then_threshold")
ONE_TO_ONE = ("hungarian", "greedy", "hungarian_most_matches", "hungarian_then_threshold")
_SLAB = 1 << 22  # voxels of the label maps handled at a time
_DENSE_LABELS = 1 << 22  # label maps whose largest label is below this are counted by np.bincount
_DENSE_CELLS = 1 << 22  # one-to-one problems up to this many rows x columns are solved on a dense matrix

PEERS_PANOPTICA = "panoptica 2.1.7"
PEERS_PICAI = "picai_eval 1.4.13 evaluate_case"
PEERS_CONIC = "CoNIC (TissueImageAnalytics/CoNIC) metrics/stats_utils.py get_pq"


def connected_components(mask, connectivity) -> tuple[np.ndarray, int]:
    """(labels, count): the connected components of a binary 2D or 3D mask numbered 1..count in
    scan order (cc3d), 0 elsewhere. `connectivity`: 4 or 8 in 2D, 6 (faces), 18 (+ edges) or 26
    (+ corners) in 3D; None is the full one (8, 26)."""
    import cc3d  # imported here: only the challenges that label components need it

    mask = as_bool(mask, "mask")
    connectivity = check_connectivity(connectivity, mask.ndim)
    # As uint8: cc3d 4.1.1 mislabels boolean 2D masks at connectivity 8 (background pixels get a
    # label); its uint8 path equals scipy.ndimage.label (tests/test_instances.py).
    mask = np.ascontiguousarray(mask, dtype=bool).view(np.uint8)
    if not mask.flags.writeable:  # cc3d takes only writeable buffers (it never writes into them)
        mask = mask.copy()
    labels, count = cc3d.connected_components(mask, connectivity=connectivity, return_N=True)
    return labels, int(count)


# ---- the intermediate: sizes and overlaps of the instances -------------------------------------


@dataclass(frozen=True)
class InstanceOverlaps:
    """Every instance of two label maps with its size, and every (true, predicted) pair that
    shares a voxel with the number of voxels it shares. Instances are numbered by their position
    in `truth_ids` / `prediction_ids` (their labels, increasing); pairs are sorted by truth,
    then prediction position."""

    truth_ids: np.ndarray
    truth_sizes: np.ndarray
    prediction_ids: np.ndarray
    prediction_sizes: np.ndarray
    truth_index: np.ndarray  # per pair: position of the true instance
    prediction_index: np.ndarray  # per pair: position of the predicted instance
    intersections: np.ndarray  # per pair: voxels shared

    def values(self, criterion: str) -> np.ndarray:
        """The criterion of every pair: IoU |A∩B| / |A∪B|, Dice 2|A∩B| / (|A| + |B|), or overlap
        |A∩B| (voxels shared)."""
        check_choice(criterion, "criterion", CRITERIA)
        truth_sizes = self.truth_sizes[self.truth_index]
        prediction_sizes = self.prediction_sizes[self.prediction_index]
        if criterion == "iou":
            return self.intersections / (truth_sizes + prediction_sizes - self.intersections)
        if criterion == "dice":
            return 2.0 * self.intersections / (truth_sizes + prediction_sizes)
        return self.intersections.astype(np.float64)


class _Labels:
    """The instances of one flattened label map: their labels, sizes, and a lookup from label to
    position, by np.bincount when the labels are small, else by np.unique of the nonzero voxels."""

    def __init__(self, flat: np.ndarray):
        self.largest = int(flat.max()) if flat.size else 0
        self.dense = self.largest < _DENSE_LABELS
        if self.dense:
            sizes = np.zeros(self.largest + 1, dtype=np.int64)
            for start in range(0, flat.size, _SLAB):
                part = flat[start:start + _SLAB]
                sizes += np.bincount(part[np.flatnonzero(part)].astype(np.intp), minlength=self.largest + 1)
            self.ids = np.flatnonzero(sizes[1:]) + 1
            self.sizes = sizes[self.ids]
            self._position = np.zeros(self.largest + 1, dtype=np.int64)
            self._position[self.ids] = np.arange(len(self.ids))
        else:
            ids, sizes = [], []
            for start in range(0, flat.size, _SLAB):
                part = flat[start:start + _SLAB]
                values, counts = np.unique(part[np.flatnonzero(part)], return_counts=True)
                ids.append(values)
                sizes.append(counts)
            merged = np.concatenate(ids)
            self.ids, inverse = np.unique(merged, return_inverse=True)
            self.sizes = np.bincount(inverse, weights=np.concatenate(sizes), minlength=len(self.ids)).astype(np.int64)

    def position(self, labels: np.ndarray) -> np.ndarray:
        if self.dense:
            return self._position[labels.astype(np.intp)]
        return np.searchsorted(self.ids, labels).astype(np.int64)


def instance_overlaps(truth_labels, prediction_labels) -> InstanceOverlaps:
    """The sizes of the instances of two label maps (0 background, any other integer one
    instance) and the voxels shared by every pair that shares any, in one pass over the maps.

    Only voxels nonzero in the truth are paired, in slabs, so temporaries stay small even when a
    prediction is foreground almost everywhere; the joint histogram is sparse (one entry per
    overlapping pair)."""
    prediction, truth = check_label_maps(prediction_labels, truth_labels, nonnegative=True)
    flat_truth, flat_prediction = truth.reshape(-1), prediction.reshape(-1)
    true_instances, predicted_instances = _Labels(flat_truth), _Labels(flat_prediction)
    n_prediction = len(predicted_instances.ids)
    keys, counts = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for start in range(0, flat_truth.size, _SLAB):
        t, p = flat_truth[start:start + _SLAB], flat_prediction[start:start + _SLAB]
        in_truth = np.flatnonzero(t)
        true_there, predicted_there = t[in_truth], p[in_truth]
        both = predicted_there != 0
        pair_keys = (true_instances.position(true_there[both]) * n_prediction
                     + predicted_instances.position(predicted_there[both]))
        slab_keys, slab_counts = np.unique(pair_keys, return_counts=True)
        keys.append(slab_keys)
        counts.append(slab_counts)
    pairs, inverse = np.unique(np.concatenate(keys), return_inverse=True)
    intersections = np.bincount(inverse, weights=np.concatenate(counts), minlength=len(pairs)).astype(np.int64)
    truth_index, prediction_index = np.divmod(pairs, max(n_prediction, 1))
    return InstanceOverlaps(true_instances.ids, true_instances.sizes, predicted_instances.ids,
                            predicted_instances.sizes, truth_index, prediction_index, intersections)


# ---- matching ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DetectionCounts:
    """TP, FP and FN of one image's matching, and the ratios read off them (the instance and the
    point matchings' results both are such counts). Empty images follow the library's empty rule
    (evaluation.metrics): nothing to find and nothing found (TP = FP = FN = 0) is 1.0 for all
    three; otherwise a ratio is what its formula gives, NaN for 0/0 (precision when nothing was
    predicted, recall when there was nothing to find)."""

    tp: int
    fp: int
    fn: int

    @property
    def f1(self) -> float:
        """2TP / (2TP + FP + FN); 1.0 when all three are 0 (see f1_from_counts)."""
        return f1_from_counts(self.tp, self.fp, self.fn)

    @property
    def precision(self) -> float:
        """TP / (TP + FP); 1.0 for an empty image, NaN when only the truth has instances."""
        return self._ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> float:
        """TP / (TP + FN); 1.0 for an empty image, NaN when only the prediction has instances."""
        return self._ratio(self.tp, self.tp + self.fn)

    def _ratio(self, numerator: int, denominator: int) -> float:
        if denominator:
            return numerator / denominator
        return 1.0 if self.tp + self.fp + self.fn == 0 else float("nan")


@dataclass(frozen=True)
class InstanceMatching(DetectionCounts):
    """Detection counts of one image and the matched pairs.

    tp: true instances found (matched); fp: predicted instances matched to none; fn: true
    instances matched to none. One to one, tp is the number of pairs; many to one or many to
    many, a true instance with several matched predictions counts once. The pairs (labels of
    the true and predicted instance, and the criterion of the pair) are sorted by true, then
    predicted label."""

    truth_ids: np.ndarray
    prediction_ids: np.ndarray
    values: np.ndarray


def check_threshold(threshold, criterion: str) -> float:
    if criterion == "overlap":
        return check_nonnegative(threshold, "threshold")
    return check_in_range(threshold, "threshold", 0.0, 1.0)


@metric(kind="instances", better=None, returns="InstanceMatching",
        variants={"criterion": "'iou' |A∩B|/|A∪B|, 'dice' 2|A∩B|/(|A|+|B|), 'overlap' |A∩B| in voxels",
                  "inclusive": "False: a pair is a candidate when its criterion is > threshold; True: >=",
                  "assignment": "'hungarian': one to one, the largest total criterion among the candidates; "
                                "'hungarian_most_matches': one to one, the largest total of 1 + criterion "
                                "(picai_eval); 'greedy': one to one, pairs by descending criterion; "
                                "'hungarian_then_threshold': one to one, the largest total criterion over every "
                                "overlapping pair, then the pairs not above the threshold dropped (CoNIC, HoVer-Net); "
                                "'many_to_one': each prediction to its best true instance; 'many_to_many': every "
                                "candidate pair"},
        equals=(f"{PEERS_PANOPTICA} NaiveThresholdMatching (assignment='greedy'; allow_many_to_one: 'many_to_one')",
                f"{PEERS_PANOPTICA} MaxBipartiteMatching (assignment='hungarian')",
                f"{PEERS_PICAI} with allow_unmatched_candidates_with_minimal_overlap=False "
                "(assignment='hungarian_most_matches', inclusive=True)",
                f"{PEERS_CONIC} for match_iou < 0.5 (assignment='hungarian_then_threshold', criterion='iou', "
                "inclusive=False: TP, FP, FN and the IoUs of the pairs, where the largest total IoU is reached "
                "by one assignment only)"),
        citation="Maier-Hein et al., Metrics reloaded, Nature Methods 21, 2024 (localization and assignment); "
                 "Graham et al., CoNIC challenge, Medical Image Analysis 92, 2024",
        example={"criterion": "iou", "threshold": 0.3, "assignment": "greedy"},
        checked_variants=({"assignment": "hungarian_then_threshold"},))
def match_instances(truth_labels, prediction_labels, criterion: str = "iou", threshold: float = 0.5,
                    inclusive: bool = False, assignment: str = "hungarian") -> InstanceMatching:
    """Instances of two label maps matched by overlap: TP, FP, FN and the matched pairs.

    Instances are the nonzero labels of each map (each label one instance, e.g. the output of
    `connected_components`). A (true, predicted) pair is a candidate when it shares at least one
    voxel and its criterion is above `threshold` (`inclusive`: at or above). `assignment`:
    - "hungarian": one to one, the candidate pairs with the largest total criterion (scipy's
      linear_sum_assignment; above 2²² cells, each connected group of candidate pairs on its
      own: a true or predicted instance alone in its group takes its best pair, ties to the
      lower label);
    - "hungarian_most_matches": one to one, the largest total of (1 + criterion): more pairs
      first, then the larger total (picai_eval's lesion matching; criterion "iou" or "dice");
    - "greedy": one to one, candidate pairs by descending criterion (ties: lower true, then lower
      predicted label first), each taken when neither instance is matched yet;
    - "hungarian_then_threshold": one to one, the pairs with the largest total criterion among
      every pair that shares a voxel, whatever its criterion (solved as "hungarian"), then the
      pairs not above the threshold (not at or above, `inclusive`) dropped: CoNIC's and
      HoVer-Net's get_pq below an IoU of 0.5. It is no maximum over the candidates: two pairs
      under the threshold can outweigh one above it and take its instances (IoU 0.3 + 0.3 beat
      0.5, and the threshold then drops both). Where several assignments reach the same largest
      total, which one is kept is scipy's choice on the matrix solved (here the instances that
      share a voxel with another; CoNIC's holds every instance), so the counts can differ;
    - "many_to_one": each prediction matches its best true instance (ties: lower label); a true
      instance may be matched by several predictions;
    - "many_to_many": every candidate pair: a true instance is found when any prediction is a
      candidate with it, a prediction is false when it is a candidate with none (one prediction
      over two lesions finds both).
    When no true or predicted instance shares a voxel with two candidates, every rule but
    "hungarian_then_threshold" gives the same pairs (e.g. IoU > 0.5).
    """
    check_choice(criterion, "criterion", CRITERIA)
    threshold = check_threshold(threshold, criterion)
    check_choice(assignment, "assignment", ASSIGNMENTS)
    inclusive = check_flag(inclusive, "inclusive")
    if assignment == "hungarian_most_matches" and criterion == "overlap":
        raise ValueError("assignment 'hungarian_most_matches' needs criterion 'iou' or 'dice' (values in [0, 1])")
    return match_overlaps(instance_overlaps(truth_labels, prediction_labels), criterion, threshold, inclusive,
                          assignment)


def match_overlaps(overlaps: InstanceOverlaps, criterion: str, threshold: float, inclusive: bool,
                   assignment: str) -> InstanceMatching:
    """match_instances on the intermediate (arguments already checked)."""
    values = overlaps.values(criterion)
    if assignment == "hungarian_then_threshold":
        # CoNIC's get_pq: the assignment over every overlapping pair (criterion > 0), the threshold after
        truth_index, prediction_index = overlaps.truth_index, overlaps.prediction_index
        assigned = (np.arange(len(values)) if is_one_to_one(truth_index, prediction_index)
                    else largest_total_matching(truth_index, prediction_index, values, _DENSE_CELLS))
        kept = values[assigned] >= threshold if inclusive else values[assigned] > threshold
        candidates = assigned[kept]
    else:
        candidates = np.flatnonzero(values >= threshold if inclusive else values > threshold)
    truth_index, prediction_index = overlaps.truth_index[candidates], overlaps.prediction_index[candidates]
    values = values[candidates]
    if assignment == "many_to_one":
        # each prediction's best candidate: descending value, then lower true label
        order = np.lexsort((truth_index, -values, prediction_index))
        first = np.ones(len(order), dtype=bool)
        first[1:] = prediction_index[order][1:] != prediction_index[order][:-1]
        chosen = np.sort(order[first])
    elif assignment in ("many_to_many", "hungarian_then_threshold") or is_one_to_one(truth_index, prediction_index):
        chosen = np.arange(len(candidates))  # (hungarian_then_threshold: one to one already)
    elif assignment == "greedy":  # descending value, ties: lower true, then lower predicted label
        chosen = greedy_matching(np.lexsort((prediction_index, truth_index, -values)), truth_index, prediction_index)
    else:
        weights = values + 1.0 if assignment == "hungarian_most_matches" else values
        chosen = largest_total_matching(truth_index, prediction_index, weights, _DENSE_CELLS)
    truth_index, prediction_index, values = truth_index[chosen], prediction_index[chosen], values[chosen]
    found_truth = len(np.unique(truth_index))
    found_prediction = len(np.unique(prediction_index))
    return InstanceMatching(found_truth, len(overlaps.prediction_ids) - found_prediction,
                            len(overlaps.truth_ids) - found_truth, overlaps.truth_ids[truth_index],
                            overlaps.prediction_ids[prediction_index], values)


# ---- counts: F1 and panoptic quality -----------------------------------------------------------


def f1_from_counts(tp, fp, fn, all_zero: float = 1.0):
    """2TP / (2TP + FP + FN); `all_zero` when TP, FP and FN are all 0 (nothing to find, nothing
    found). Counts may be weighted sums, and arrays (one F1 per element, e.g. per bootstrap row);
    numbers in, a float out."""
    # The Dice of the predicted (TP + FP) and true (TP + FN) instance counts: the same ratio.
    tp, fp, fn = (np.asarray(count, dtype=np.float64) for count in (tp, fp, fn))
    return dice_from_counts(tp, tp + fp, tp + fn, both_empty=all_zero)


@dataclass(frozen=True)
class PanopticQuality:
    """PQ = SQ × RQ with the counts they come from: SQ = iou_sum / TP (the mean IoU of the
    matched pairs), RQ = TP / (TP + FP/2 + FN/2). Sum the counts over images (or classes) and
    call panoptic_quality_from_counts for a pooled PQ."""

    pq: float
    sq: float
    rq: float
    tp: float
    fp: float
    fn: float
    iou_sum: float


def panoptic_quality_from_counts(tp, fp, fn, iou_sum, both_empty: float = 1.0) -> PanopticQuality:
    """PQ, SQ and RQ from (summed, possibly weighted) counts: SQ = iou_sum / TP, 0 without a TP
    (as panopticapi); RQ = TP / (TP + FP/2 + FN/2); PQ = iou_sum / (TP + FP/2 + FN/2). When TP,
    FP and FN are all 0 (no instance at all) PQ, SQ and RQ are `both_empty`. Arrays in (e.g. one
    element per bootstrap row), arrays out."""
    both_empty = check_empty_value(both_empty, "both_empty")
    tp, fp, fn, iou_sum = (np.asarray(count, dtype=np.float64) for count in (tp, fp, fn, iou_sum))
    denominator = tp + 0.5 * fp + 0.5 * fn
    with np.errstate(invalid="ignore", divide="ignore"):
        empty = denominator == 0
        rq = np.where(empty, both_empty, tp / denominator)
        sq = np.where(empty, both_empty, np.where(tp > 0, iou_sum / tp, 0.0))
        pq = np.where(empty, both_empty, iou_sum / denominator)

    def number(x):
        return float(x) if np.ndim(x) == 0 else x

    return PanopticQuality(number(pq), number(sq), number(rq), number(tp), number(fp), number(fn), number(iou_sum))


@metric(kind="instances", better=None, returns="PanopticQuality",
        variants={"assignment": "None: a threshold >= 0.5, where matches are unique; a one-to-one rule of "
                                "match_instances ('hungarian_then_threshold' is CoNIC's below 0.5) for any threshold"},
        equals=(f"{PEERS_PANOPTICA} pq, sq, rq, tp, fp, fn (matching_threshold=0.5 strict, IoU)",
                f"{PEERS_CONIC}: tp, fp, fn and the IoU sum (match_iou >= 0.5: assignment=None; below: "
                "'hungarian_then_threshold'; its dq and sq add 1e-6 to their denominators, ours do not)"),
        citation="Kirillov et al., Panoptic segmentation, CVPR 2019; Graham et al., CoNIC challenge, Medical "
                 "Image Analysis 92, 2024",
        checked_variants=({"threshold": 0.3, "assignment": "hungarian_then_threshold"},))
def panoptic_quality(truth_instances, prediction_instances, threshold: float = 0.5, both_empty: float = 1.0,
                     assignment: str | None = None) -> PanopticQuality:
    """Panoptic quality of one image's instances: PQ, SQ, RQ and the counts TP, FP, FN, iou_sum.

    A true and a predicted instance match when their IoU is strictly above `threshold`. With
    `assignment` None the threshold must be >= 0.5, where such matches are unique, so no
    assignment rule is involved. Below 0.5 a true instance can have several candidates: name a
    one-to-one rule of match_instances ("hungarian", "greedy", "hungarian_most_matches" or
    "hungarian_then_threshold", CoNIC's get_pq below 0.5), which then applies at any threshold
    (at >= 0.5 the first three give the unique matches; "hungarian_then_threshold" need not,
    as its assignment runs over every overlapping pair). SQ is the mean IoU of the matches (0
    without a match, as panopticapi), RQ = TP / (TP + FP/2 + FN/2), PQ = SQ × RQ = iou_sum / (TP
    + FP/2 + FN/2). An image without any instance in either map has PQ, SQ and RQ `both_empty`.
    A PQ pooled over images (or per class, as CoNIC's multi-class PQ) comes from the summed
    counts: panoptic_quality_from_counts.
    """
    threshold = check_in_range(threshold, "threshold", 0.0, 1.0)
    if assignment is None:
        if threshold < 0.5:
            raise ValueError(f"threshold {threshold:g} is below 0.5, where matches are not unique: name the "
                             f"assignment, one of {ONE_TO_ONE}")
        assignment = "greedy"  # at >= 0.5 the candidates are one to one: every rule keeps them all
    else:
        check_choice(assignment, "assignment", ONE_TO_ONE)
    both_empty = check_empty_value(both_empty, "both_empty")
    matched = match_overlaps(instance_overlaps(truth_instances, prediction_instances), "iou", threshold, False,
                             assignment)
    return panoptic_quality_from_counts(matched.tp, matched.fp, matched.fn, float(np.sum(matched.values)),
                                        both_empty)


# ---- lesion volumes and counts -----------------------------------------------------------------


@metric(kind="masks", better="lower", symmetric=True,
        equals=("ISLES'22 compute_absolute_lesion_difference (cc3d, connectivity=26)",
                "cc3d.connected_components counts"),
        citation="Hernandez Petzsche et al., ISLES 2022, Scientific Data 9, 2022",
        example={"connectivity": None})
def lesion_count_difference(prediction, truth, connectivity=None) -> float:
    """Absolute difference of the lesion counts of two binary masks.

    |n(P) − n(G)| with n the number of connected components (`connectivity`: 4 or 8 in 2D, 6, 18
    or 26 in 3D; None the full one, 8 or 26). 0 when both are empty.
    """
    prediction, truth = check_masks(prediction, truth)
    connectivity = check_connectivity(connectivity, prediction.ndim)
    box = union_box(prediction, truth)  # every lesion of either lies inside
    if box is None:
        return 0.0
    prediction, truth = prediction[box], truth[box]
    return float(abs(connected_components(prediction, connectivity)[1] - connected_components(truth, connectivity)[1]))


def _untouched_volume(prediction, truth, spacing, connectivity, both_empty, side: str, empty) -> float:
    """The volume of the lesions of one side that share no voxel with the other: the prediction's
    (side "prediction_empty", its value when only the prediction is empty) or the truth's
    ("truth_empty")."""
    prediction, truth = check_masks(prediction, truth)
    spacing = check_spacing(spacing, prediction.ndim)
    connectivity = check_connectivity(connectivity, prediction.ndim)
    both_empty, empty = check_empty_value(both_empty, "both_empty"), check_empty_value(empty, side)
    components, other = (prediction, truth) if side == "prediction_empty" else (truth, prediction)
    if not components.any():
        return both_empty if not other.any() else empty
    box = union_box(components, other)  # every lesion of either lies inside
    components, other = components[box], other[box]
    labels, count = connected_components(components, connectivity)
    touched = np.zeros(count + 1, dtype=bool)
    touched[labels[other]] = True
    sizes = np.bincount(labels.reshape(-1), minlength=count + 1)
    voxels = int(sizes[1:][~touched[1:]].sum())
    return float(voxels * np.prod(spacing))


@metric(kind="masks", better="lower", unit="volume", empty={"both_empty": 0.0, "prediction_empty": 0.0},
        equals=("autoPET false_pos_pix × voxel volume (cc3d, connectivity=18)",),
        citation="Gatidis et al., autoPET, Nature Machine Intelligence 6, 2024",
        example={"connectivity": None})
def false_positive_volume(prediction, truth, spacing=None, connectivity=18, both_empty: float = 0.0,
                          prediction_empty: float = 0.0) -> float:
    """Volume of the predicted lesions that share no voxel with the truth.

    The predicted lesions are the connected components of the prediction (`connectivity` 18 by
    default, as autoPET; 4 or 8 in 2D, 6, 18 or 26 in 3D, None the full one); the volume is
    their voxel count times the voxel volume, the product of `spacing` (the spacing's units
    cubed). An empty truth makes every predicted lesion false. An empty prediction gives
    `prediction_empty` (truth not empty) or `both_empty` (both empty): 0 by default.
    """
    return _untouched_volume(prediction, truth, spacing, connectivity, both_empty, "prediction_empty", prediction_empty)


@metric(kind="masks", better="lower", unit="volume", empty={"both_empty": 0.0, "truth_empty": 0.0},
        equals=("autoPET false_neg_pix × voxel volume (cc3d, connectivity=18)",),
        citation="Gatidis et al., autoPET, Nature Machine Intelligence 6, 2024",
        example={"connectivity": None})
def false_negative_volume(prediction, truth, spacing=None, connectivity=18, both_empty: float = 0.0,
                          truth_empty: float = 0.0) -> float:
    """Volume of the true lesions that no predicted voxel touches.

    The true lesions are the connected components of the truth (`connectivity` 18 by default,
    as autoPET; 4 or 8 in 2D, 6, 18 or 26 in 3D, None the full one); the volume is their voxel
    count times the voxel volume, the product of `spacing`. An empty prediction misses every
    true lesion. An empty truth gives `truth_empty` (prediction not empty) or `both_empty`: 0 by
    default (NaN leaves such a case out of a mean).
    """
    return _untouched_volume(prediction, truth, spacing, connectivity, both_empty, "truth_empty", truth_empty)
