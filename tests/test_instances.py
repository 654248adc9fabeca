"""evaluation.metrics.instances against its peers: panoptica (matching, panoptic quality, its
own test cases), picai_eval (lesion matching and its lesion FROC counts), CoNIC's get_pq rule
(assignment over every overlapping pair, then the threshold), scipy.ndimage.label
(components), and brute force (FP/FN lesion volume as autoPET loops over components, lesion
counts); the edges (empty maps, structures on the border, one-voxel-thick instances, values
exactly at the threshold); bad arguments."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import ndimage

import evaluation.metrics.instances as instances
from evaluation.metrics.froc import SlideHits, froc_curve
from evaluation.metrics.instances import (
    connected_components,
    f1_from_counts,
    false_negative_volume,
    false_positive_volume,
    instance_overlaps,
    lesion_count_difference,
    match_instances,
    panoptic_quality,
    panoptic_quality_from_counts,
)

RANK = {4: 1, 8: 2, 6: 1, 18: 2, 26: 3}  # cc3d connectivity -> scipy structure rank


def scipy_components(mask, connectivity):
    return ndimage.label(mask, ndimage.generate_binary_structure(mask.ndim, RANK[connectivity]))


def boxes(rng, shape, n, first=1, step=1, max_side=6):
    """Label map of `n` random boxes (later ones overwrite earlier ones), labels first, first +
    step, ...: instances touching each other and the border."""
    labels = np.zeros(shape, dtype=np.int32)
    for k in range(n):
        start = [int(rng.integers(0, s)) for s in shape]
        stop = [min(s, a + int(rng.integers(1, max_side))) for a, s in zip(start, shape, strict=True)]
        labels[tuple(slice(a, b) for a, b in zip(start, stop, strict=True))] = first + step * k
    return labels


def jittered(rng, labels, relabel=5):
    """The instances moved by up to a voxel, some voxels dropped, labels changed."""
    shift = tuple(int(rng.integers(-1, 2)) for _ in range(labels.ndim))
    moved = np.roll(labels, shift, axis=tuple(range(labels.ndim)))
    moved[rng.random(labels.shape) < 0.15] = 0
    return np.where(moved > 0, moved + relabel, 0)


def random_pair(rng, ndim):
    shape = (30, 26) if ndim == 2 else (14, 12, 10)
    truth = boxes(rng, shape, int(rng.integers(0, 9)))
    prediction = np.where(rng.random() < 0.8, jittered(rng, truth), 0) + boxes(rng, shape, int(rng.integers(0, 4)), 100)
    return truth, np.where(prediction > 0, prediction, 0)


# ---- connected components ------------------------------------------------------------------------


@pytest.mark.parametrize(("ndim", "connectivity"), [(2, 4), (2, 8), (3, 6), (3, 18), (3, 26)])
def test_components_partition_equals_scipy(ndim, connectivity):
    rng = np.random.default_rng(connectivity)
    shape = (40, 37) if ndim == 2 else (15, 13, 11)
    for density in (0.05, 0.3, 0.6):
        mask = rng.random(shape) < density
        mask[0] = True  # a structure along the border
        ours, n = connected_components(mask, connectivity)
        theirs, m = scipy_components(mask, connectivity)
        assert n == m
        pairs = set(zip(ours[mask].tolist(), theirs[mask].tolist(), strict=True))
        assert len(pairs) == n
        assert (ours[~mask] == 0).all()


def test_cc3d_boolean_2d_bug_is_avoided():
    """cc3d 4.1.1 labels background pixels of a boolean 2D mask at connectivity 8; ours does not."""
    import cc3d

    mask = np.random.default_rng(8).random((40, 37)) < 0.05
    mask[0] = True
    assert (cc3d.connected_components(mask, connectivity=8)[~mask] != 0).any()  # the bug, still there
    assert (connected_components(mask, 8)[0][~mask] == 0).all()


def test_components_of_empty_and_full_masks():
    assert connected_components(np.zeros((4, 5), dtype=bool), 8)[1] == 0
    labels, n = connected_components(np.ones((4, 5, 6)), 6)
    assert n == 1 and (labels == 1).all()


# ---- matching against panoptica ---------------------------------------------------------------


def panoptica_pairs(truth, prediction, matcher_name, criterion, threshold, inclusive):
    """panoptica's matched pairs {(true label, predicted label)} of its matcher."""
    from panoptica import MaxBipartiteMatching, Metric, NaiveThresholdMatching, UnmatchedInstancePair

    metric = {"iou": Metric.IOU, "dice": Metric.DSC}[criterion]
    if matcher_name == "hungarian":
        matcher = MaxBipartiteMatching(metric, threshold, strict_threshold=not inclusive)
    else:
        matcher = NaiveThresholdMatching(metric, threshold, allow_many_to_one=matcher_name == "many_to_one",
                                         strict_threshold=not inclusive)
    pair = UnmatchedInstancePair(prediction.astype(np.uint32), truth.astype(np.uint32))
    labelmap = matcher._match_instances(pair, None, matching_threshold=threshold)
    return {(int(t), int(p)) for p, t in labelmap.get_one_to_one_dictionary().items()}


@pytest.mark.parametrize("assignment", ["greedy", "many_to_one", "hungarian"])
@pytest.mark.parametrize("ndim", [2, 3])
def test_matching_equals_panoptica(assignment, ndim):
    from panoptica.utils.citation_reminder import disable_citation_reminder

    disable_citation_reminder()
    rng = np.random.default_rng(ndim * 10 + len(assignment))
    compared = 0
    for case in range(40):
        truth, prediction = random_pair(rng, ndim)
        criterion = ("iou", "dice")[case % 2]
        threshold = float(rng.choice([0.1, 0.25, 0.3, 0.5, 0.7]))
        inclusive = bool(case % 3)
        ours = match_instances(truth, prediction, criterion, threshold, inclusive, assignment)
        if not (truth.any() and prediction.any()):  # panoptica raises on a map without instances
            assert ours.tp == 0 and len(ours.values) == 0
            continue
        theirs = panoptica_pairs(truth, prediction, assignment, criterion, threshold, inclusive)
        assert set(zip(ours.truth_ids.tolist(), ours.prediction_ids.tolist(), strict=True)) == theirs, case
        n_truth, n_prediction = len(np.unique(truth[truth > 0])), len(np.unique(prediction[prediction > 0]))
        found = {t for t, _ in theirs}
        assert (ours.tp, ours.fn) == (len(found), n_truth - len(found))
        assert ours.fp == n_prediction - len({p for _, p in theirs})
        compared += bool(theirs)
    assert compared > 10  # many cases match something


def test_threshold_exactly_at_the_value_strict_or_inclusive():
    truth = np.zeros((1, 10), dtype=np.int32)
    prediction = np.zeros_like(truth)
    truth[0, :3] = 1  # IoU exactly 3/10, Dice exactly 6/13
    prediction[0, :] = 2
    for criterion, value in (("iou", 0.3), ("dice", 6 / 13)):
        assert match_instances(truth, prediction, criterion, value, inclusive=False).tp == 0
        assert match_instances(truth, prediction, criterion, value, inclusive=True).tp == 1
    assert match_instances(truth, prediction, "overlap", 3, inclusive=True).tp == 1
    assert match_instances(truth, prediction, "overlap", 3, inclusive=False).tp == 0


def test_assignments_differ_where_the_definitions_do():
    """One prediction over two true instances (IoU 0.4 each), two predictions splitting a third
    (IoU 0.5 each)."""
    truth = np.zeros((4, 20), dtype=np.int32)
    truth[:, 0:4], truth[:, 6:10], truth[:, 12:20] = 1, 2, 3
    prediction = np.zeros_like(truth)
    prediction[:, 0:10], prediction[:, 12:16], prediction[:, 16:20] = 5, 7, 8
    counts = {a: (m.tp, m.fp, m.fn) for a in instances.ASSIGNMENTS
              for m in [match_instances(truth, prediction, "iou", 0.3, False, a)]}
    assert counts["many_to_many"] == (3, 0, 0)  # one prediction over two lesions finds both
    assert counts["many_to_one"] == (2, 0, 1)  # 5 goes to truth 1 (a tie: the lower label), 7 and 8 to 3
    assert counts["greedy"] == counts["hungarian"] == counts["hungarian_most_matches"] == (2, 1, 1)
    pairs = match_instances(truth, prediction, "iou", 0.3, False, "many_to_one")
    assert list(zip(pairs.truth_ids.tolist(), pairs.prediction_ids.tolist(), strict=True)) == [(1, 5), (3, 7), (3, 8)]


def test_many_to_many_is_isles_any_overlap_rule():
    """A true lesion is found when any predicted voxel touches it; a predicted lesion is false
    when it touches no true voxel (ISLES'22 lesion-wise F1), by brute force."""
    rng = np.random.default_rng(5)
    for _ in range(20):
        truth, prediction = random_pair(rng, 3)
        t, _ = connected_components(truth > 0, 26)
        p, _ = connected_components(prediction > 0, 26)
        ours = match_instances(t, p, "overlap", 0, False, "many_to_many")
        found = sum(bool((p[t == k] > 0).any()) for k in range(1, t.max() + 1))
        false = sum(not (t[p == k] > 0).any() for k in range(1, p.max() + 1))
        assert (ours.tp, ours.fp, ours.fn) == (found, false, t.max() - found)


@pytest.mark.parametrize("assignment", ["hungarian", "hungarian_most_matches"])
def test_sparse_assignment_equals_dense(assignment, monkeypatch):
    """Above _DENSE_CELLS the one-to-one problem is solved on a sparse graph: the same optimum."""
    rng = np.random.default_rng(11)
    for case in range(25):
        truth, prediction = random_pair(rng, 2)
        dense = match_instances(truth, prediction, "iou", 0.05, True, assignment)
        with monkeypatch.context() as patch:
            patch.setattr(instances, "_DENSE_CELLS", 0)
            sparse = match_instances(truth, prediction, "iou", 0.05, True, assignment)
        weight = (lambda m: m.values.sum() + len(m.values)) if assignment == "hungarian_most_matches" else \
            (lambda m: m.values.sum())
        assert weight(sparse) == pytest.approx(weight(dense), abs=1e-9), case
        if assignment == "hungarian_most_matches":
            assert sparse.tp == dense.tp


def test_grouped_assignment_equals_one_dense_assignment():
    """Above _DENSE_CELLS each connected group of pairs is solved alone (stars directly, the others
    on their own dense matrix): the same optimum as one assignment on the whole matrix."""
    from scipy.optimize import linear_sum_assignment

    from evaluation.metrics._assignment import min_cost_matching

    rng = np.random.default_rng(12)
    for case in range(40):
        n_rows, n_columns, n_pairs = (int(x) for x in rng.integers(1, 30, 3))
        rows, columns = rng.integers(0, n_rows, n_pairs * 2), rng.integers(0, n_columns, n_pairs * 2)
        _, first = np.unique(rows * 100 + columns, return_index=True)
        rows, columns = rows[first], columns[first]
        costs = -rng.integers(1, 6, len(rows)) / 4  # ties in cost
        matrix = np.zeros((n_rows, n_columns))
        matrix[rows, columns] = costs
        best = matrix[linear_sum_assignment(matrix)].sum()
        chosen = min_cost_matching(rows, columns, costs, dense_cells=1 << 20)
        assert len(set(rows[chosen])) == len(chosen) == len(set(columns[chosen]))
        assert costs[chosen].sum() == pytest.approx(best), case


def test_hungarian_is_the_best_total_by_brute_force():
    rng = np.random.default_rng(2)
    for _ in range(15):
        truth, prediction = random_pair(rng, 2)
        overlaps = instance_overlaps(truth, prediction)
        values = overlaps.values("dice")
        pairs = [(t, p, v) for t, p, v in zip(overlaps.truth_index, overlaps.prediction_index, values, strict=True)
                 if v > 0.1]
        best = 0.0
        for size in range(1, min(len(pairs), 9) + 1):
            for subset in itertools.combinations(pairs, size):
                if len({s[0] for s in subset}) == size == len({s[1] for s in subset}):
                    best = max(best, sum(s[2] for s in subset))
        if len(pairs) <= 9:
            assert match_instances(truth, prediction, "dice", 0.1, False).values.sum() == pytest.approx(best)


# ---- picai_eval -------------------------------------------------------------------------------


def picai_case(rng):
    shape = (12, 16, 16)
    truth = np.zeros(shape, dtype=np.int32)
    grid = np.indices(shape)
    for _ in range(int(rng.integers(1, 5))):
        centre, radius = [rng.uniform(2, s - 2) for s in shape], rng.uniform(1.2, 3.5)
        truth[sum((g - c) ** 2 for g, c in zip(grid, centre, strict=True)) <= radius ** 2] = 1
    moved = np.roll(truth, tuple(int(rng.integers(-1, 2)) for _ in range(3)), axis=(0, 1, 2))
    prediction_mask = (moved > 0) & (rng.random(shape) < 0.9) | (rng.random(shape) < 0.004)
    components, n = connected_components(prediction_mask, 26)
    confidences = rng.permutation(np.arange(1, n + 1)) / (n + 1)  # one distinct confidence per lesion
    detection = np.where(components > 0, confidences[np.maximum(components, 1) - 1], 0).astype(np.float32)
    return truth, components, confidences.astype(np.float32), detection


def test_matching_and_lesion_froc_equal_picai_eval():
    """picai_eval's evaluate_case (Hungarian on overlap + 1: most matches, then the largest total;
    overlap >= min_overlap) gives the same TP, FP and FN lesions and the same matched confidences,
    and its lesion TP / FP counts per threshold are those of froc_curve's every_score rule on the
    same hits."""
    from picai_eval.eval import evaluate_case

    rng = np.random.default_rng(7)
    cases = []
    for case in range(24):
        truth, components, confidences, detection = picai_case(rng)
        criterion, min_overlap = ("iou", "dice")[case % 2], float(rng.choice([0.1, 0.2, 0.35]))
        y_list, *_ = evaluate_case(detection, truth, min_overlap=min_overlap,
                                   overlap_func={"iou": "IoU", "dice": "DSC"}[criterion],
                                   allow_unmatched_candidates_with_minimal_overlap=False)
        ours = match_instances(connected_components(truth, 26)[0], components, criterion, min_overlap, True,
                               "hungarian_most_matches")
        theirs_tp = sorted(c for is_lesion, c, overlap in y_list if is_lesion and overlap > 0)
        assert ours.tp == len(theirs_tp)
        assert ours.fn == sum(1 for is_lesion, _, overlap in y_list if is_lesion and overlap == 0)
        assert ours.fp == sum(1 for is_lesion, *_ in y_list if not is_lesion)
        assert sorted(confidences[ours.prediction_ids - 1].tolist()) == theirs_tp
        found = np.full(ours.tp + ours.fn, -np.inf)
        found[:ours.tp] = confidences[ours.prediction_ids - 1]
        unmatched = np.setdiff1d(np.arange(1, len(confidences) + 1), ours.prediction_ids)
        cases.append((y_list, SlideHits(confidences[unmatched - 1].astype(np.float64), found, 0)))
    from picai_eval.metrics import Metrics

    metrics = Metrics(lesion_results={str(i): y for i, (y, _) in enumerate(cases)})
    counts = metrics.calculate_counts()
    curve = froc_curve([hits for _, hits in cases], "every_score")
    thresholds = metrics.thresholds
    for threshold, tp, fp in zip(thresholds[:-1], counts["TP"][:-1], counts["FP"][:-1], strict=True):
        if threshold == 0:  # picai's missed lesions (confidence 0) are no threshold of ours
            continue
        at = np.flatnonzero(curve.thresholds == threshold)
        assert at.size == 1
        lesions = sum(h.lesions for _, h in cases)
        assert curve.sensitivities[at[0]] * lesions == pytest.approx(tp)
        assert curve.fp_rates[at[0]] * len(cases) == pytest.approx(fp)


# ---- CoNIC's get_pq: the assignment over every overlapping pair, then the threshold ----------------


def conic_pq_counts(truth, prediction, match_iou, criterion="iou"):
    """CoNIC's get_pq (TissueImageAnalytics/CoNIC, metrics/stats_utils.py), written from its
    description: the IoU of every (true, predicted) instance pair, one by one from their masks,
    in a dense matrix with a row and a column per label of the maps, the background's a row and a
    column of zeros; match_iou >= 0.5: every pair above it; below: scipy's linear_sum_assignment
    of the largest total IoU over the whole matrix, then the pairs above match_iou kept.
    (tp, fp, fn, iou_sum). The same rule on Dice or on voxels shared (`criterion`) where asked."""
    from scipy.optimize import linear_sum_assignment

    true_labels = [int(v) for v in np.unique(truth) if v]
    predicted_labels = [int(v) for v in np.unique(prediction) if v]
    iou = np.zeros((len(true_labels) + 1, len(predicted_labels) + 1))
    for row, t in enumerate(true_labels):
        for column, p in enumerate(predicted_labels):
            shared = int(((truth == t) & (prediction == p)).sum())
            sizes = int((truth == t).sum()) + int((prediction == p).sum())
            if shared:
                iou[row, column] = {"iou": shared / (sizes - shared), "dice": 2 * shared / sizes,
                                    "overlap": shared}[criterion]
    if match_iou >= 0.5 and criterion == "iou":
        rows, columns = np.nonzero(iou > match_iou)
    else:
        rows, columns = linear_sum_assignment(-iou)
        above = iou[rows, columns] > match_iou
        rows, columns = rows[above], columns[above]
    tp = len(rows)
    return tp, len(predicted_labels) - tp, len(true_labels) - tp, float(iou[rows, columns].sum())


def tessellation(rng, seeds, shape):
    """Every voxel labelled by its nearest seed (1, 2, ...): instances packed side by side, as
    nuclei in a histology tile."""
    grid = np.indices(shape).reshape(len(shape), -1).T
    return (((grid[:, None, :] - seeds[None]) ** 2).sum(axis=2).argmin(axis=1) + 1).reshape(shape)


def crowded_pair(rng, ndim):
    """Packed true instances and a prediction from their seeds moved, some dropped, some added,
    with holes in both: each instance overlaps several, IoUs spread over (0, 1)."""
    shape = (24, 24) if ndim == 2 else (10, 10, 10)
    seeds = rng.uniform(0, shape[0], (int(rng.integers(3, 16)), ndim))
    moved = seeds + rng.normal(0, 2.0, seeds.shape)
    predicted = np.concatenate([moved[rng.random(len(seeds)) < 0.85],
                                rng.uniform(0, shape[0], (int(rng.integers(1, 5)), ndim))])
    truth = tessellation(rng, seeds, shape).astype(np.int32)
    prediction = tessellation(rng, predicted, shape).astype(np.int32) * 3 + 1  # other labels, gaps between
    truth[rng.random(shape) < 0.15] = 0
    prediction[rng.random(shape) < 0.15] = 0
    return truth, prediction


def test_hungarian_then_threshold_equals_conic_get_pq():
    """TP, FP, FN and the IoU sum of CoNIC's rule below 0.5, bit for bit, on packed instances and
    on the sparse ones of random_pair; the rule differs from "hungarian" on some of them."""
    rng = np.random.default_rng(28)
    differs_from_hungarian = 0
    for case in range(240):
        ndim = 2 + case % 2
        truth, prediction = crowded_pair(rng, ndim) if case % 3 else random_pair(rng, ndim)
        threshold = float(rng.choice([0.0, 0.1, 0.25, 0.3, 0.4, 0.45]))
        ours = match_instances(truth, prediction, "iou", threshold, False, "hungarian_then_threshold")
        tp, fp, fn, iou_sum = conic_pq_counts(truth, prediction, threshold)
        assert (ours.tp, ours.fp, ours.fn) == (tp, fp, fn), case
        assert float(np.sum(ours.values)) == iou_sum, case
        quality = panoptic_quality(truth, prediction, threshold, assignment="hungarian_then_threshold")
        assert (quality.tp, quality.fp, quality.fn, quality.iou_sum) == (tp, fp, fn, iou_sum)
        # CoNIC's dq and sq add 1e-6 to their denominators: its PQ is ours to about 1e-6
        conic_pq = tp / (tp + 0.5 * fp + 0.5 * fn + 1e-6) * iou_sum / (tp + 1e-6)
        assert quality.pq == pytest.approx(conic_pq, abs=2e-6) or tp + fp + fn == 0
        hungarian = match_instances(truth, prediction, "iou", threshold, False, "hungarian")
        differs_from_hungarian += (hungarian.tp, float(np.sum(hungarian.values))) != (tp, iou_sum)
    assert differs_from_hungarian >= 5


@pytest.mark.parametrize("ndim", [2, 3])
def test_panoptic_quality_at_or_above_one_half_equals_conic_get_pq(ndim):
    """CoNIC's get_pq at match_iou >= 0.5 takes every pair above it: assignment None."""
    rng = np.random.default_rng(40 + ndim)
    for case in range(40):
        truth, prediction = crowded_pair(rng, ndim) if case % 2 else random_pair(rng, ndim)
        threshold = float(rng.choice([0.5, 0.6, 0.75]))
        quality = panoptic_quality(truth, prediction, threshold)
        assert (quality.tp, quality.fp, quality.fn, quality.iou_sum) == conic_pq_counts(truth, prediction, threshold)


def test_hungarian_then_threshold_two_weak_pairs_outweigh_a_strong_one():
    """True A = [0, 100), B = [100, 133); predicted X = [33, 133), Y = [0, 33): IoU(A, X) = 67/133
    (above 0.5), IoU(A, Y) = IoU(B, X) = 0.33. The assignment over every pair takes A-Y and B-X
    (0.66 > 0.504); at 0.4 the threshold then drops both, where "hungarian" (over the candidates)
    keeps A-X. At 0.5, PQ's unique matches keep A-X; "hungarian_then_threshold" does not."""
    truth, prediction = np.zeros((1, 140), dtype=np.int32), np.zeros((1, 140), dtype=np.int32)
    truth[0, :100], truth[0, 100:133] = 1, 2
    prediction[0, 33:133], prediction[0, :33] = 7, 9
    then = match_instances(truth, prediction, "iou", 0.4, False, "hungarian_then_threshold")
    assert (then.tp, then.fp, then.fn) == (0, 2, 2) == conic_pq_counts(truth, prediction, 0.4)[:3]
    assert (lambda m: (m.tp, m.truth_ids.tolist(), m.prediction_ids.tolist()))(
        match_instances(truth, prediction, "iou", 0.4, False, "hungarian")) == (1, [1], [7])
    kept = match_instances(truth, prediction, "iou", 0.3, False, "hungarian_then_threshold")
    assert list(zip(kept.truth_ids.tolist(), kept.prediction_ids.tolist(), strict=True)) == [(1, 9), (2, 7)]
    assert kept.values.tolist() == [0.33, 0.33]
    assert panoptic_quality(truth, prediction, 0.5).tp == 1 == conic_pq_counts(truth, prediction, 0.5)[0]
    assert panoptic_quality(truth, prediction, 0.5, assignment="hungarian_then_threshold").tp == 0
    # the threshold after the assignment: strict, or inclusive at exactly 0.33
    assert match_instances(truth, prediction, "iou", 0.33, False, "hungarian_then_threshold").tp == 0
    assert match_instances(truth, prediction, "iou", 0.33, True, "hungarian_then_threshold").tp == 2


def test_hungarian_then_threshold_edges():
    """Empty maps; a threshold of 0 (every assigned pair that shares a voxel); the rule on Dice and
    on voxels shared, against the same brute force."""
    empty, one = np.zeros((5, 5), dtype=np.int32), np.zeros((5, 5), dtype=np.int32)
    one[1:3, 1:3] = 4
    for truth, prediction, counts in ((empty, empty, (0, 0, 0)), (one, empty, (0, 0, 1)), (empty, one, (0, 1, 0))):
        found = match_instances(truth, prediction, "iou", 0.2, False, "hungarian_then_threshold")
        assert (found.tp, found.fp, found.fn) == counts
    assert panoptic_quality(empty, empty, 0.2, assignment="hungarian_then_threshold").pq == 1.0
    rng = np.random.default_rng(6)
    for case in range(30):
        truth, prediction = crowded_pair(rng, 2 + case % 2)
        for criterion, threshold in (("iou", 0.0), ("dice", 0.0), ("dice", 0.45), ("overlap", 0), ("overlap", 6)):
            found = match_instances(truth, prediction, criterion, threshold, False, "hungarian_then_threshold")
            expected = conic_pq_counts(truth, prediction, threshold, criterion)
            assert (found.tp, found.fp, found.fn) == expected[:3], (case, criterion)
            assert float(np.sum(found.values)) == pytest.approx(expected[3], rel=1e-12)


def test_hungarian_then_threshold_sparse_solver_reaches_the_same_optimum(monkeypatch):
    from evaluation.metrics._assignment import largest_total_matching

    rng = np.random.default_rng(13)
    for case in range(25):
        truth, prediction = crowded_pair(rng, 2)
        overlaps = instance_overlaps(truth, prediction)
        values = overlaps.values("iou")
        dense = largest_total_matching(overlaps.truth_index, overlaps.prediction_index, values, instances._DENSE_CELLS)
        sparse = largest_total_matching(overlaps.truth_index, overlaps.prediction_index, values, 0)
        with monkeypatch.context() as patch:
            patch.setattr(instances, "_DENSE_CELLS", 0)
            grouped = match_instances(truth, prediction, "iou", 0.25, False, "hungarian_then_threshold")
        assert values[sparse].sum() == pytest.approx(values[dense].sum(), abs=1e-12), case
        assert grouped.tp == len(np.flatnonzero(values[sparse] > 0.25))


# ---- panoptic quality -------------------------------------------------------------------------


def panoptica_result(truth, prediction, threshold):
    from panoptica import InputType, Metric, NaiveThresholdMatching, Panoptica_Evaluator
    from panoptica.utils.citation_reminder import disable_citation_reminder

    disable_citation_reminder()
    evaluator = Panoptica_Evaluator(expected_input=InputType.UNMATCHED_INSTANCE,
                                    instance_matcher=NaiveThresholdMatching(Metric.IOU, threshold,
                                                                            strict_threshold=True),
                                    instance_metrics=[Metric.IOU], global_metrics=[Metric.DSC], verbose=False)
    return evaluator.evaluate(prediction.astype(np.uint32), truth.astype(np.uint32), verbose=False)["ungrouped"]


@pytest.mark.parametrize("ndim", [2, 3])
def test_panoptic_quality_equals_panoptica(ndim):
    rng = np.random.default_rng(20 + ndim)
    for case in range(30):
        truth, prediction = random_pair(rng, ndim)
        threshold = float(rng.choice([0.5, 0.6, 0.75]))
        ours = panoptic_quality(truth, prediction, threshold, both_empty=np.nan)
        if not (truth.any() and prediction.any()):  # panoptica raises on a map without instances
            continue
        theirs = panoptica_result(truth, prediction, threshold)
        assert (ours.tp, ours.fp, ours.fn) == (theirs.tp, theirs.fp, theirs.fn), case
        for name in ("pq", "sq", "rq"):  # panoptica's SQ is np.mean of the IoUs, ours their sum / TP
            assert getattr(ours, name) == pytest.approx(getattr(theirs, name), rel=1e-12, nan_ok=True), name


def test_panoptica_own_cases():
    """panoptica's unit tests (test_panoptic_evaluator.py): one true box of 20 × 10 and a predicted
    15 × 10 inside it; two true boxes under one prediction."""
    truth = np.zeros((50, 50), dtype=np.uint16)
    prediction = truth.copy()
    truth[20:40, 10:20] = 1
    prediction[20:35, 10:20] = 2
    result = panoptic_quality(truth, prediction)
    assert (result.tp, result.fp, result.sq, result.pq) == (1, 0, 0.75, 0.75)
    truth[20:30, 10:20], truth[30:40, 10:20] = 1, 3
    result = panoptic_quality(truth, prediction)
    assert (result.tp, result.fp, result.fn) == (1, 0, 1)
    assert result.sq == pytest.approx(0.6666666666666666) and result.pq == pytest.approx(0.4444444444444444)


def test_pooled_panoptic_quality_is_that_of_the_images_side_by_side():
    rng = np.random.default_rng(4)
    pairs = [random_pair(rng, 2) for _ in range(6)]
    results = [panoptic_quality(t, p) for t, p in pairs]
    gap = np.zeros((30, 1), dtype=np.int32)  # images apart: no instance spans two
    truth = np.hstack([np.hstack([t + 1000 * i * (t > 0), gap]) for i, (t, _) in enumerate(pairs)])
    prediction = np.hstack([np.hstack([p + 1000 * i * (p > 0), gap]) for i, (_, p) in enumerate(pairs)])
    whole = panoptic_quality(truth, prediction)
    pooled = panoptic_quality_from_counts(*(sum(getattr(r, k) for r in results) for k in ("tp", "fp", "fn",
                                                                                             "iou_sum")))
    assert (pooled.tp, pooled.fp, pooled.fn) == (whole.tp, whole.fp, whole.fn)
    for name in ("pq", "sq", "rq", "iou_sum"):
        assert getattr(pooled, name) == pytest.approx(getattr(whole, name), rel=1e-12)
    rows = panoptic_quality_from_counts(np.array([1.0, 0.0]), np.array([1.0, 0.0]), np.array([0.0, 0.0]),
                                        np.array([0.8, 0.0]), both_empty=0.5)
    assert rows.pq.tolist() == [0.8 / 1.5, 0.5]


def test_detection_counts_follow_the_empty_rule():
    """Both maps without an instance: F1, precision and recall are the best value (1.0), as Dice
    of two empty masks; one side empty: what the formula gives, NaN for 0/0."""
    empty = np.zeros((5, 6), dtype=np.int32)
    one = empty.copy()
    one[1:3, 1:3] = 4
    nothing = match_instances(empty, empty)
    assert (nothing.f1, nothing.precision, nothing.recall) == (1.0, 1.0, 1.0)
    missed, spurious = match_instances(one, empty), match_instances(empty, one)
    assert (missed.fn, missed.recall, missed.f1) == (1, 0.0, 0.0) and np.isnan(missed.precision)
    assert (spurious.fp, spurious.precision, spurious.f1) == (1, 0.0, 0.0) and np.isnan(spurious.recall)


def test_panoptic_quality_empty_policy():
    empty = np.zeros((5, 6), dtype=np.int32)
    one = empty.copy()
    one[1:3, 1:3] = 4
    assert panoptic_quality(empty, empty).pq == 1.0
    assert np.isnan(panoptic_quality(empty, empty, both_empty=np.nan).sq)
    assert (panoptic_quality(one, empty).pq, panoptic_quality(empty, one).sq) == (0.0, 0.0)


# ---- lesion volumes and counts ------------------------------------------------------------------


def untouched_voxels(components_of, other, connectivity):
    """autoPET's loop: every component of one mask sharing no voxel with the other."""
    labels, n = scipy_components(components_of, connectivity)
    return sum(int((labels == k).sum()) for k in range(1, n + 1) if not other[labels == k].any())


@pytest.mark.parametrize(("ndim", "connectivity"), [(2, 4), (2, 8), (3, 6), (3, 18), (3, 26)])
def test_lesion_volumes_and_counts_equal_component_loops(ndim, connectivity):
    rng = np.random.default_rng(connectivity)
    spacing = (0.8, 1.25, 2.5)[:ndim]
    for _ in range(15):
        truth, prediction = (m > 0 for m in random_pair(rng, ndim))
        volume = float(np.prod(spacing))
        fp = false_positive_volume(prediction, truth, spacing, connectivity)
        fn = false_negative_volume(prediction, truth, spacing, connectivity)
        if prediction.any():
            assert fp == untouched_voxels(prediction, truth, connectivity) * volume
        if truth.any():
            assert fn == untouched_voxels(truth, prediction, connectivity) * volume
        difference = abs(scipy_components(prediction, connectivity)[1] - scipy_components(truth, connectivity)[1])
        assert lesion_count_difference(prediction, truth, connectivity) == difference


def test_lesion_volume_empty_policies_and_border():
    empty = np.zeros((6, 7, 8), dtype=bool)
    full = np.ones_like(empty)  # touches every border
    assert false_positive_volume(full, empty, (1, 2, 3)) == full.size * 6.0
    assert false_negative_volume(empty, full, (1, 2, 3)) == full.size * 6.0
    assert false_positive_volume(empty, full) == 0.0 and false_negative_volume(full, empty) == 0.0
    assert np.isnan(false_negative_volume(full, empty, truth_empty=np.nan))
    assert np.isnan(false_positive_volume(empty, empty, both_empty=np.nan))
    assert false_positive_volume(empty, full, prediction_empty=7) == 7.0
    thin = empty.copy()
    thin[2, :, 3] = True  # one voxel thick
    assert false_positive_volume(thin, empty, connectivity=6) == 7.0
    assert lesion_count_difference(thin, empty) == 1.0


def test_f1_from_counts():
    assert f1_from_counts(0, 0, 0) == 1.0 and f1_from_counts(0, 0, 0, all_zero=0.0) == 0.0
    assert f1_from_counts(3, 1, 2) == pytest.approx(6 / 9)
    matched = match_instances(*random_pair(np.random.default_rng(1), 2), "iou", 0.3)
    assert matched.f1 == f1_from_counts(matched.tp, matched.fp, matched.fn)


# ---- bad arguments -----------------------------------------------------------------------------


@pytest.mark.parametrize(("call", "message"), [
    (lambda: match_instances(np.zeros((3, 3), int), np.zeros((3, 4), int)), "shape"),
    (lambda: match_instances(np.zeros((3, 3)), np.zeros((3, 3), int)), "integers"),
    (lambda: match_instances(-np.ones((3, 3), int), np.zeros((3, 3), int)), "negative"),
    (lambda: match_instances(np.zeros((3, 3), int), np.zeros((3, 3), int), criterion="area"), "criterion"),
    (lambda: match_instances(np.zeros((3, 3), int), np.zeros((3, 3), int), assignment="best"), "assignment"),
    (lambda: match_instances(np.zeros((3, 3), int), np.zeros((3, 3), int), threshold=np.nan), "threshold"),
    (lambda: match_instances(np.zeros((3, 3), int), np.zeros((3, 3), int), threshold=1.5), "threshold"),
    (lambda: match_instances(np.zeros((3, 3), int), np.zeros((3, 3), int), "overlap", -1), "threshold"),
    (lambda: match_instances(np.zeros((3, 3), int), np.zeros((3, 3), int), inclusive="yes"), "inclusive"),
    (lambda: match_instances(np.zeros((3, 3), int), np.zeros((3, 3), int), "overlap",
                             assignment="hungarian_most_matches"), "criterion"),
    (lambda: panoptic_quality(np.zeros((3, 3), int), np.zeros((3, 3), int), threshold=0.3),
     "threshold 0.3 is below 0.5, where matches are not unique: name the assignment"),
    (lambda: panoptic_quality(np.zeros((3, 3), int), np.zeros((3, 3), int), 0.3, assignment="many_to_one"),
     "assignment must be one of"),
    (lambda: panoptic_quality(np.zeros((3, 3), int), np.zeros((3, 3), int), -0.1, assignment="hungarian"),
     "threshold"),
    (lambda: connected_components(np.zeros((3, 3)), 6), "connectivity"),
    (lambda: connected_components(np.zeros((3, 3, 3)), 8), "connectivity"),
    (lambda: connected_components(np.zeros(5), None), "2D or 3D"),
    (lambda: connected_components(np.full((3, 3), np.nan), 8), "NaN"),
    (lambda: false_positive_volume(np.zeros((3, 3)), np.zeros((3, 3)), connectivity=18), "connectivity"),
    (lambda: false_positive_volume(np.zeros((3, 3, 3)), np.zeros((3, 3, 3)), spacing=(1, 1)), "spacing"),
    (lambda: false_negative_volume(np.zeros((3, 3, 3)), np.zeros((3, 3, 3)), spacing=(1, 0, 1)), "spacing"),
    (lambda: lesion_count_difference(np.zeros((3, 3)), np.zeros((3, 4))), "shape"),
])
def test_bad_arguments_raise_value_error_naming_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()
