"""evaluation.metrics.points against its peers: evalutils' score_detection (its own test cases and
generated ones), scipy's assignment on the dense distance matrix and maximum bipartite matching
(the Hungarian rule), a brute-force greedy by score, and the LUNA16 FROC procedure (scikit-learn's
roc_curve, np.interp) for the FROC and CPM; distances exactly at the radius, ties in scores and
distances, empty images, anisotropic spacing; bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.metrics.points import CPM_FP_RATES, cpm, match_points, point_froc, point_hits, point_pairs

RADIUS = 1.5


def detections(rng, ndim, n, m, spread=1.2, extent=20.0):
    truth = rng.uniform(0, extent, (n, ndim))
    near = truth[rng.integers(0, n, m)] + rng.normal(0, spread, (m, ndim)) if n else rng.uniform(0, extent, (m, ndim))
    return truth, near


def pairs_of(matching):
    return list(zip(matching.truth_index.tolist(), matching.prediction_index.tolist(), strict=True))


# ---- evalutils score_detection: greedy in truth order -------------------------------------------


def evalutils_counts(truth, prediction, radius):
    from evalutils.scorers import score_detection

    score = score_detection(ground_truth=[tuple(p) for p in truth], predictions=[tuple(p) for p in prediction],
                            radius=radius)
    return score.true_positives, score.false_positives, score.false_negatives


def test_evalutils_own_cases():
    """evalutils' tests/test_scorers.py: its targets and predictions, and the multi-hit cases."""
    targets = [(10.0, 10.0), (5.0, 5.0), (2.0, 2.0), (11.2, 11.2)]
    predictions = [(0, 0), (10.5, 10.5), (1.0, 2.0), (2.0 + 0.5 ** 0.5, 2.0 + 0.5 ** 0.5), (30, 30)]
    found = match_points(targets, predictions, 1.0, assignment="greedy_by_truth")
    assert (found.tp, found.fp, found.fn) == (2, 3, 2)
    assert pairs_of(found) == [(0, 1), (2, 3)]  # (2, 3) lies exactly at the radius: inclusive
    assert (lambda m: (m.tp, m.fp, m.fn))(match_points([(0, 0), (0, 0.5), (0, -0.5)], [(0.0, 0.0)], 1.0,
                                                       assignment="greedy_by_truth")) == (1, 0, 2)
    found = match_points([(0, 0), (0, 0.5), (0, -0.5)], [(0.0, 0.0), (0.0, 0.0)], 1.0, assignment="greedy_by_truth")
    assert (found.tp, found.fp, found.fn) == (2, 0, 1)
    assert evalutils_counts(np.array(targets), np.array(predictions, dtype=float), 1.0) == (2, 3, 2)


@pytest.mark.parametrize("ndim", [2, 3])
def test_greedy_by_truth_equals_evalutils(ndim):
    rng = np.random.default_rng(ndim)
    for case in range(60):
        n, m = int(rng.integers(0, 30)), int(rng.integers(0, 40))
        truth, prediction = detections(rng, ndim, n, m)
        radius = float(rng.choice([0.5, 1.0, 2.5]))
        ours = match_points(truth, prediction, radius, assignment="greedy_by_truth")
        assert (ours.tp, ours.fp, ours.fn) == evalutils_counts(truth, prediction, radius), case


def test_greedy_by_truth_is_no_maximum_matching():
    """The first true point takes the prediction the second one needed."""
    truth, prediction = [(0.0, 0.0), (2.0, 0.0)], [(1.0, 0.0), (-1.5, 0.0)]
    assert match_points(truth, prediction, 1.0, assignment="greedy_by_truth").tp == 1
    assert evalutils_counts(np.array(truth), np.array(prediction), 1.0)[0] == 1
    assert match_points(truth, prediction, 1.5, assignment="hungarian").tp == 2


def brute_greedy_by_truth(truth, prediction, radius, inclusive=True):
    """True points in input order, each scanning every prediction for the nearest free one within
    the radius (ties: lower index)."""
    free, pairs = set(range(len(prediction))), []
    for t, point in enumerate(truth):
        best = None
        for p in sorted(free):
            d = float(np.sqrt(((np.asarray(point) - prediction[p]) ** 2).sum()))
            if (d <= radius if inclusive else d < radius) and (best is None or d < best[0]):
                best = (d, p)
        if best is not None:
            free.discard(best[1])
            pairs.append((t, best[1]))
    return pairs


def grid_detections(rng):
    """Points on an integer grid, as pixel coordinates give them: many predictions equally far from
    a true point, some exactly at the radius."""
    n, m = int(rng.integers(0, 8)), int(rng.integers(0, 8))
    return rng.integers(0, 5, (n, 2)).astype(float), rng.integers(0, 5, (m, 2)).astype(float)


@pytest.mark.parametrize("inclusive", [True, False])
def test_greedy_by_truth_equals_brute_force_with_ties(inclusive):
    rng = np.random.default_rng(11)
    for case in range(400):
        truth, prediction = grid_detections(rng)
        radius = float(rng.choice([1.0, 1.5, 2.0, np.sqrt(2.0)]))
        ours = match_points(truth, prediction, radius, inclusive=inclusive, assignment="greedy_by_truth")
        assert pairs_of(ours) == brute_greedy_by_truth(truth, prediction, radius, inclusive), case


def test_greedy_by_truth_equals_evalutils_on_a_grid_without_equal_distances():
    """evalutils breaks a tie in distance as its BallTree lists the points (an order that changes
    with the tree's leaves and the scikit-learn version), not by index: equal counts wherever no
    true point has two predictions at exactly the same distance within the radius. Where one has,
    ours takes the lower index: (3, 3) has three predictions at 1 and takes (2, 3), the one
    (1, 3) needed (evalutils under scikit-learn 1.5.2 takes (3, 4) and finds one more)."""
    rng = np.random.default_rng(7)
    compared = 0
    for case in range(1500):
        truth, prediction = grid_detections(rng)
        radius = float(rng.choice([1.0, 1.5, 2.0, np.sqrt(2.0)]))
        distances = np.sqrt(((truth[:, None] - prediction[None]) ** 2).sum(axis=2))
        if any(len(set(row[row <= radius].tolist())) < int((row <= radius).sum()) for row in distances):
            continue
        compared += 1
        ours = match_points(truth, prediction, radius, assignment="greedy_by_truth")
        assert (ours.tp, ours.fp, ours.fn) == evalutils_counts(truth, prediction, radius), case
    assert compared > 1000
    truth = np.array([(2, 2), (0, 1), (3, 3), (1, 0), (1, 3)], dtype=float)
    prediction = np.array([(2, 3), (0, 0), (3, 2), (2, 2), (3, 4)], dtype=float)
    ours = match_points(truth, prediction, 1.5, assignment="greedy_by_truth")
    assert pairs_of(ours) == [(0, 3), (1, 1), (2, 0)]
    assert (ours.tp, ours.fp, ours.fn) == (3, 2, 2)


# ---- Hungarian: a maximum matching, the least total distance ------------------------------------


@pytest.mark.parametrize("ndim", [2, 3])
def test_hungarian_equals_dense_assignment_and_maximum_matching(ndim):
    from scipy.optimize import linear_sum_assignment
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import maximum_bipartite_matching
    from scipy.spatial.distance import cdist

    rng = np.random.default_rng(10 + ndim)
    spacing = (0.5, 1.5, 1.0)[:ndim]
    for case in range(60):
        n, m = int(rng.integers(1, 25)), int(rng.integers(1, 30))
        truth, prediction = detections(rng, ndim, n, m, spread=1.5)
        ours = match_points(truth, prediction, RADIUS, spacing=spacing)
        distances = cdist(truth * spacing, prediction * spacing)
        within = distances <= RADIUS
        big = 10.0 * (n + m) * RADIUS  # any pair beyond the radius costs more than all distances
        rows, columns = linear_sum_assignment(np.where(within, distances, big))
        real = within[rows, columns]
        graph = csr_array(within.astype(np.int8))
        maximum = int((maximum_bipartite_matching(graph, perm_type="column") >= 0).sum())
        assert ours.tp == real.sum() == maximum, case
        assert (ours.fp, ours.fn) == (m - ours.tp, n - ours.tp)
        ours_total = distances[ours.truth_index, ours.prediction_index].sum()
        assert ours_total == pytest.approx(distances[rows[real], columns[real]].sum(), rel=1e-9, abs=1e-12)
        assert within[ours.truth_index, ours.prediction_index].all()


def test_hungarian_stars_take_the_nearest_then_the_lower_index():
    truth = [(0.0, 0.0)]
    prediction = [(1.0, 0.0), (0.0, 1.0), (0.5, 0.0), (0.0, -0.5)]  # two at 0.5: the lower index wins
    assert pairs_of(match_points(truth, prediction, 1.0)) == [(0, 2)]
    assert pairs_of(match_points(prediction, truth, 1.0)) == [(2, 0)]


# ---- greedy by score --------------------------------------------------------------------------


def brute_greedy_by_score(truth, prediction, scores, radius, inclusive=True):
    """Predictions by descending score (ties: lower index), each scanning every true point for
    the nearest free one within the radius (ties: lower index)."""
    free, pairs = set(range(len(truth))), []
    for p in sorted(range(len(prediction)), key=lambda j: (-scores[j], j)):
        best = None
        for t in sorted(free):
            d = float(np.sqrt(((np.asarray(truth[t]) - np.asarray(prediction[p])) ** 2).sum()))
            if (d <= radius if inclusive else d < radius) and (best is None or d < best[0]):
                best = (d, t)
        if best is not None:
            free.discard(best[1])
            pairs.append((best[1], p))
    return sorted(pairs)


@pytest.mark.parametrize("inclusive", [True, False])
def test_greedy_by_score_equals_brute_force_with_ties(inclusive):
    rng = np.random.default_rng(3)
    for case in range(60):
        n, m = int(rng.integers(0, 15)), int(rng.integers(0, 20))
        truth = rng.integers(0, 8, (n, 2)).astype(float)  # a grid: distances tie, some exactly at the radius
        prediction = rng.integers(0, 8, (m, 2)).astype(float)
        scores = rng.integers(0, 4, m) / 4  # tied scores
        ours = match_points(truth, prediction, 2.0, scores=scores, inclusive=inclusive, assignment="greedy_by_score")
        assert pairs_of(ours) == brute_greedy_by_score(truth, prediction, scores, 2.0, inclusive), case


def test_radius_exactly_at_a_distance_strict_or_inclusive():
    truth, prediction = [(0.0, 0.0, 0.0)], [(3.0, 4.0, 0.0)]  # distance exactly 5
    for assignment in ("hungarian", "greedy_by_truth", "greedy_by_score"):
        assert match_points(truth, prediction, 5.0, scores=[1.0], assignment=assignment).tp == 1
        assert match_points(truth, prediction, 5.0, scores=[1.0], inclusive=False, assignment=assignment).tp == 0
    # spacing (1.5, 2, 1) turns (2, 2, 0) into (3, 4, 0): exactly 5 again
    assert match_points(truth, [(2.0, 2.0, 0.0)], 5.0, spacing=(1.5, 2.0, 1.0)).tp == 1
    assert match_points(truth, [(2.0, 2.0, 0.0)], 5.0, spacing=(1.5, 2.0, 1.0), inclusive=False).tp == 0


def test_spacing_equals_scaled_coordinates():
    rng = np.random.default_rng(9)
    truth, prediction = detections(rng, 3, 20, 30)
    spacing = np.array([0.7, 1.3, 2.9])
    ours = match_points(truth, prediction, 2.0, spacing=spacing)
    scaled = match_points(truth * spacing, prediction * spacing, 2.0)
    assert pairs_of(ours) == pairs_of(scaled)


def test_empty_inputs():
    some = np.ones((3, 2))
    for truth, prediction, counts in (([], [], (0, 0, 0)), ([], some, (0, 3, 0)), (some, np.zeros((0, 2)), (0, 0, 3))):
        for assignment in ("hungarian", "greedy_by_truth", "greedy_by_score"):
            found = match_points(truth, prediction, 1.0, scores=np.ones(len(prediction)), assignment=assignment)
            assert (found.tp, found.fp, found.fn) == counts
    # The library's empty rule: nothing to find and nothing found is the best value; one side
    # empty is what the formula gives (recall 0 of points missed), NaN where it gives none (0/0).
    nothing = match_points([], [], 1.0)
    assert (nothing.f1, nothing.precision, nothing.recall) == (1.0, 1.0, 1.0)
    missed, spurious = match_points(some, [], 1.0), match_points([], some, 1.0)
    assert missed.recall == 0.0 and np.isnan(missed.precision) and missed.f1 == 0.0
    assert spurious.precision == 0.0 and np.isnan(spurious.recall) and spurious.f1 == 0.0
    found = match_points([(0, 0), (5, 5)], [(0, 0.5), (9, 9), (5, 5)], 1.0)
    assert (found.precision, found.recall, found.f1) == (2 / 3, 1.0, 0.8)


# ---- FROC and CPM: the LUNA16 procedure ---------------------------------------------------------


def luna16_froc(truth, prediction, scores, radius):
    """LUNA16's evaluation: per scan, a candidate within the radius (strict) of a nodule hits it;
    a found nodule enters with its largest hit's score, a missed one is left out of the ROC but
    counted in the sensitivity's denominator; candidates hitting nothing are false positives.
    FROC from scikit-learn's roc_curve, as its computeFROC."""
    from sklearn.metrics import roc_curve

    labels, probabilities, total = [], [], 0
    for t, p, s in zip(truth, prediction, scores, strict=True):
        total += len(t)
        if len(t) and len(p):
            distances = np.sqrt(((t[:, None, :] - p[None, :, :]) ** 2).sum(axis=2))
            hits = distances < radius
        else:
            hits = np.zeros((len(t), len(p)), dtype=bool)
        for row in hits:
            if row.any():
                labels.append(1)
                probabilities.append(s[row].max())
        labels += [0] * int((~hits.any(axis=0)).sum())
        probabilities += list(s[~hits.any(axis=0)])
    labels, probabilities = np.array(labels), np.array(probabilities)
    detected, candidates = labels.sum(), len(labels)
    if detected == 0 or detected == candidates:  # roc_curve is undefined there: no case to compare
        return np.array([np.nan]), np.array([np.nan])
    fpr, tpr, _ = roc_curve(labels, probabilities)
    fps = fpr * (candidates - detected) / len(truth)
    return fps, tpr * detected / total


def froc_images(rng, n_images, ndim=3):
    truth, prediction, scores = [], [], []
    for _ in range(n_images):
        t, p = detections(rng, ndim, int(rng.integers(0, 6)), int(rng.integers(0, 25)), spread=2.0, extent=40.0)
        truth.append(t)
        prediction.append(p)
        scores.append(rng.random(len(p)))
    return truth, prediction, scores


def test_cpm_equals_luna16_procedure():
    rng = np.random.default_rng(16)
    compared = 0
    for case in range(30):
        truth, prediction, scores = froc_images(rng, int(rng.integers(3, 12)))
        fps, sensitivities = luna16_froc(truth, prediction, scores, 3.0)
        if np.isnan(sensitivities).any() or sum(len(t) for t in truth) == 0:
            continue
        expected = np.mean(np.interp(CPM_FP_RATES, fps, sensitivities))
        assert cpm(truth, prediction, scores, 3.0, inclusive=False) == pytest.approx(expected, abs=1e-12), case
        curve = point_froc(truth, prediction, scores, 3.0, inclusive=False)
        for x in np.linspace(0, 10, 41):  # the whole curve, not only the CPM's rates
            ours = np.interp(x, curve.fp_rates[::-1], curve.sensitivities[::-1])
            assert ours == pytest.approx(np.interp(x, fps, sensitivities), abs=1e-12)
        compared += 1
    assert compared >= 20


def test_froc_per_area_and_weights():
    rng = np.random.default_rng(5)
    truth, prediction, scores = froc_images(rng, 6, ndim=2)
    per_image = point_froc(truth, prediction, scores, 3.0)
    per_area = point_froc(truth, prediction, scores, 3.0, areas=np.full(6, 2.5))
    assert np.allclose(per_area.fp_rates * 2.5, per_image.fp_rates, rtol=1e-15)
    assert np.array_equal(per_area.sensitivities, per_image.sensitivities)
    weights = np.array([[1, 0, 2, 1, 1, 3], [1, 1, 1, 1, 1, 1]])
    rows = cpm(truth, prediction, scores, 3.0, sample_weight=weights)
    drawn = np.repeat(np.arange(6), weights[0])
    assert rows[0] == cpm([truth[i] for i in drawn], [prediction[i] for i in drawn], [scores[i] for i in drawn], 3.0)
    assert rows[1] == cpm(truth, prediction, scores, 3.0)
    assert np.isnan(cpm([np.zeros((0, 2))], [np.ones((2, 2))], [np.ones(2)], 1.0))


def test_froc_hit_rule_duplicates_are_no_false_positives():
    truth = [np.array([[0.0, 0.0], [10.0, 10.0]])]
    prediction = [np.array([[0.5, 0.0], [0.0, 0.5], [30.0, 30.0]])]
    curve = point_froc(truth, prediction, [np.array([0.9, 0.8, 0.7])], 1.0)
    # the second hit (0.8) on the first point is neither a false positive nor a threshold
    assert curve.thresholds.tolist() == [0.7, 0.9]
    assert curve.fp_rates.tolist() == [1.0, 0.0, 0.0] and curve.sensitivities.tolist() == [0.5, 0.5, 0.0]


# ---- bad arguments -----------------------------------------------------------------------------


def test_an_image_of_no_area_is_refused():
    """An area of 0 made the FP rate of the whole FROC inf and NaN, silently."""
    with pytest.raises(ValueError, match="area"):
        point_hits(np.ones((1, 2)), np.ones((1, 2)), [0.5], 1.0, area=0.0)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: match_points(np.ones((2, 2)), np.ones((2, 3)), 1.0), "dimension"),
    (lambda: match_points(np.ones((2, 2)), np.ones(4), 1.0), "coordinates"),
    (lambda: match_points([(0, np.nan)], [(0, 0)], 1.0), "NaN"),
    (lambda: match_points([(0, 0)], [(0, 0)], -1.0), "radius"),
    (lambda: match_points([(0, 0)], [(0, 0)], np.nan), "radius"),
    (lambda: match_points([(0, 0)], [(0, 0)], 1.0, spacing=(1.0,)), "spacing"),
    (lambda: match_points([(0, 0)], [(0, 0)], 1.0, spacing=(1.0, 0.0)), "spacing"),
    (lambda: match_points([(0, 0)], [(0, 0)], 1.0, assignment="optimal"), "assignment"),
    (lambda: match_points([(0, 0)], [(0, 0)], 1.0, assignment="greedy_by_score"), "scores"),
    (lambda: match_points([(0, 0)], [(0, 0)], 1.0, scores=[np.nan]), "scores"),
    (lambda: match_points([(0, 0)], [(0, 0)], 1.0, scores=[1.0, 2.0]), "scores"),
    (lambda: match_points([(0, 0)], [(0, 0)], 1.0, inclusive=None), "inclusive"),
    (lambda: point_pairs([(0, 0)], [(0, 0)], "far"), "radius"),
    (lambda: cpm([np.ones((1, 2))], [np.ones((1, 2))], [np.array([np.nan])], 1.0), "scores"),
    (lambda: cpm([np.ones((1, 2))], [np.ones((1, 2)), np.ones((1, 2))], [np.ones(1)], 1.0), "one entry per image"),
    (lambda: cpm([np.ones((1, 2))], [np.ones((1, 2))], [np.ones(1)], 1.0, areas=[0.0]), "areas"),
    (lambda: cpm([np.ones((1, 2))], [np.ones((1, 2))], [np.ones(1)], 1.0, sample_weight=[0.5]), "whole"),
    (lambda: cpm([np.ones((1, 2))], [np.ones((1, 2))], [np.ones(1)], 1.0, fp_rates=[-1]), "fp_rates"),
    (lambda: point_froc([np.zeros((0, 2))], [np.ones((1, 2))], [np.ones(1)], 1.0), "no image holds a true point"),
])
def test_bad_arguments_raise_value_error_naming_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()
