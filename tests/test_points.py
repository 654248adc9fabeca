"""evaluation.metrics.points against its peers: evalutils' score_detection (its own test cases and
generated ones), scipy's assignment on the dense distance matrix and maximum bipartite matching
(the Hungarian rule), a brute-force greedy by score, and the LUNA16 FROC procedure (scikit-learn's
roc_curve, np.interp) for the FROC and CPM, with a radius per nodule and excluded findings
(ignored true points); distances exactly at the radius, ties in scores and distances, empty
images, anisotropic spacing; bad arguments."""

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
    radii = np.broadcast_to(radius, (len(truth),))
    for t, point in enumerate(truth):
        best = None
        for p in sorted(free):
            d = float(np.sqrt(((np.asarray(point) - prediction[p]) ** 2).sum()))
            if (d <= radii[t] if inclusive else d < radii[t]) and (best is None or d < best[0]):
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
    radii = np.broadcast_to(radius, (len(truth),))
    for p in sorted(range(len(prediction)), key=lambda j: (-scores[j], j)):
        best = None
        for t in sorted(free):
            d = float(np.sqrt(((np.asarray(truth[t]) - np.asarray(prediction[p])) ** 2).sum()))
            if (d <= radii[t] if inclusive else d < radii[t]) and (best is None or d < best[0]):
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


# ---- a radius per true point, ignored true points -----------------------------------------------


def brute_hungarian_pairs(truth, prediction, radius, inclusive=True):
    """The most pairs within each true point's radius, then the least total distance: scipy's
    assignment on the dense matrix, a pair beyond its radius forbidden."""
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    if len(truth) == 0 or len(prediction) == 0:
        return 0, 0.0
    distances = cdist(truth, prediction)
    radii = np.broadcast_to(radius, (len(truth),))[:, None]
    within = distances <= radii if inclusive else distances < radii
    big = 10.0 * (len(truth) + len(prediction)) * (float(distances.max()) + 1.0)
    rows, columns = linear_sum_assignment(np.where(within, distances, big))
    real = within[rows, columns]
    return int(real.sum()), float(distances[rows[real], columns[real]].sum())


def brute_matching_with_ignored(truth, prediction, scores, radius, ignore, assignment, inclusive=True):
    """LUNA16's excluded findings in a one-to-one matching, from the rule: the matching over the
    counted true points alone (the brute forces above on the points kept), then every unmatched
    prediction within the radius of an ignored point set aside. (TP, FP, FN, set aside)."""
    radii = np.broadcast_to(radius, (len(truth),)).astype(float)
    counted = np.flatnonzero(~ignore)
    kept_truth, kept_radii = truth[counted], radii[counted]
    if assignment == "greedy_by_truth":
        matched = {p for _, p in brute_greedy_by_truth(kept_truth, prediction, kept_radii, inclusive)}
    elif assignment == "greedy_by_score":
        matched = {p for _, p in brute_greedy_by_score(kept_truth, prediction, scores, kept_radii, inclusive)}
    else:
        found = match_points(kept_truth, prediction, kept_radii, inclusive=inclusive)
        assert found.tp == brute_hungarian_pairs(kept_truth, prediction, kept_radii, inclusive)[0]
        matched = set(found.prediction_index.tolist())
    aside = set()
    for t in np.flatnonzero(ignore):
        for p in range(len(prediction)):
            d = float(np.sqrt(((truth[t] - prediction[p]) ** 2).sum()))
            if (d <= radii[t] if inclusive else d < radii[t]) and p not in matched:
                aside.add(p)
    tp = len(matched)
    return tp, len(prediction) - tp - len(aside), len(counted) - tp, sorted(aside)


def grid_points_with_radii(rng):
    """Integer points (ties in distance, distances exactly at a radius) with a radius per true
    point among 0, 1, 1.5, sqrt(2), 2 and 3, and about a third of them ignored."""
    truth, prediction = grid_detections(rng)
    radius = rng.choice([0.0, 1.0, 1.5, np.sqrt(2.0), 2.0, 3.0], len(truth))
    return truth, prediction, radius, rng.random(len(truth)) < 0.35


@pytest.mark.parametrize("inclusive", [True, False])
@pytest.mark.parametrize("assignment", ["hungarian", "greedy_by_truth", "greedy_by_score"])
def test_radius_per_true_point_equals_brute_force(assignment, inclusive):
    rng = np.random.default_rng(len(assignment) + 2 * inclusive)
    for case in range(300):
        truth, prediction, radius, _ = grid_points_with_radii(rng)
        scores = rng.integers(0, 4, len(prediction)) / 4
        ours = match_points(truth, prediction, radius, scores=scores, inclusive=inclusive, assignment=assignment)
        if assignment == "greedy_by_truth":
            assert pairs_of(ours) == brute_greedy_by_truth(truth, prediction, radius, inclusive), case
        elif assignment == "greedy_by_score":
            assert pairs_of(ours) == brute_greedy_by_score(truth, prediction, scores, radius, inclusive), case
        else:
            tp, total = brute_hungarian_pairs(truth, prediction, radius, inclusive)
            assert ours.tp == tp, case
            distances = np.sqrt(((truth[ours.truth_index] - prediction[ours.prediction_index]) ** 2).sum(axis=1))
            assert distances.sum() == pytest.approx(total, abs=1e-9)
        assert (ours.fp, ours.fn) == (len(prediction) - ours.tp, len(truth) - ours.tp)


def test_a_radius_per_true_point_of_one_value_is_that_radius():
    rng = np.random.default_rng(21)
    for case in range(40):
        truth, prediction = detections(rng, 3, int(rng.integers(0, 20)), int(rng.integers(0, 25)))
        spacing = (0.7, 1.2, 2.0)
        for assignment in ("hungarian", "greedy_by_truth", "greedy_by_score"):
            one = match_points(truth, prediction, 1.75, scores=np.ones(len(prediction)), spacing=spacing,
                               assignment=assignment)
            each = match_points(truth, prediction, np.full(len(truth), 1.75), scores=np.ones(len(prediction)),
                                spacing=spacing, assignment=assignment)
            assert pairs_of(one) == pairs_of(each), case
        assert [a.tolist() for a in point_pairs(truth, prediction, 1.75, spacing)] == \
            [a.tolist() for a in point_pairs(truth, prediction, np.full(len(truth), 1.75), spacing)]


def test_each_true_point_is_searched_within_its_own_radius():
    """A point of radius 0 takes only a prediction on it (inclusive) or none (strict); a large
    radius on one point does not widen the others'; the spacing applies to every radius."""
    truth = np.array([[0.0, 0.0], [10.0, 0.0], [20.0, 0.0]])
    prediction = np.array([[0.0, 0.0], [10.0, 3.0], [20.0, 4.5], [0.0, 0.5]])
    radius = [0.0, 3.0, 5.0]  # (10, 3) exactly at 3
    found = match_points(truth, prediction, radius)
    assert pairs_of(found) == [(0, 0), (1, 1), (2, 2)] and found.fp == 1
    strict = match_points(truth, prediction, radius, inclusive=False)
    assert pairs_of(strict) == [(2, 2)] and (strict.fp, strict.fn) == (3, 2)
    wide = match_points(truth, prediction, [0.0, 3.0, 50.0])
    assert pairs_of(wide) == [(0, 0), (1, 1), (2, 2)]  # the wide point takes its nearest, the others keep theirs
    assert point_pairs(truth, prediction, [0.0, 3.0, 50.0])[0].tolist() == [0, 1, 2, 2, 2, 2]
    # spacing (2, 1): (10, 3) stays at 3 along the second axis; (20, 4.5) at 4.5
    assert match_points(truth, prediction, radius, spacing=(2.0, 1.0)).tp == 3
    assert match_points(truth, prediction, [0.0, 3.0, 4.0], spacing=(2.0, 1.0)).tp == 2


@pytest.mark.parametrize("inclusive", [True, False])
@pytest.mark.parametrize("assignment", ["hungarian", "greedy_by_truth", "greedy_by_score"])
def test_ignored_true_points_equal_brute_force(assignment, inclusive):
    rng = np.random.default_rng(40 + len(assignment) + inclusive)
    aside = 0
    for case in range(300):
        truth, prediction, radius, ignore = grid_points_with_radii(rng)
        scores = rng.integers(0, 4, len(prediction)) / 4
        ours = match_points(truth, prediction, radius, scores=scores, inclusive=inclusive, assignment=assignment,
                            ignore=ignore)
        tp, fp, fn, set_aside = brute_matching_with_ignored(truth, prediction, scores, radius, ignore, assignment,
                                                            inclusive)
        assert (ours.tp, ours.fp, ours.fn) == (tp, fp, fn), case
        assert ours.ignored_prediction_index.tolist() == set_aside, case
        assert not ignore[ours.truth_index].any()
        aside += bool(set_aside)
    assert aside > 50


def test_ignored_true_points_edges():
    truth = np.array([[0.0, 0.0], [4.0, 0.0]])
    # a prediction near both the counted (0, 0) and the ignored (4, 0): the counted point's match
    both = match_points(truth, [[2.0, 0.0]], 2.0, ignore=[False, True])
    assert (both.tp, both.fp, both.fn, both.ignored_prediction_index.tolist()) == (1, 0, 0, [])
    # a second one there is set aside, not a false positive; a far one is a false positive
    two = match_points(truth, [[2.0, 0.0], [3.0, 0.0], [9.0, 9.0]], 2.0, ignore=[False, True])
    assert (two.tp, two.fp, two.fn, two.ignored_prediction_index.tolist()) == (1, 1, 0, [1])
    # every truth ignored: nothing to find; predictions on them set aside, the others false
    every = match_points(truth, [[0.5, 0.0], [4.0, 1.0], [9.0, 9.0]], 2.0, ignore=[True, True])
    assert (every.tp, every.fp, every.fn, every.ignored_prediction_index.tolist()) == (0, 1, 0, [0, 1])
    assert (every.precision, every.f1) == (0.0, 0.0) and np.isnan(every.recall)
    # every prediction on an ignored point: nothing found, nothing false; the counted point missed
    on_ignored = match_points(truth, [[4.0, 0.5], [4.5, 0.0]], 1.0, ignore=[False, True])
    assert (on_ignored.tp, on_ignored.fp, on_ignored.fn) == (0, 0, 1) and on_ignored.recall == 0.0
    # all ignored and all on them: nothing counted on either side, the empty rule's best value
    nothing = match_points(truth, [[0.0, 0.5]], 1.0, ignore=[True, True])
    assert (nothing.tp, nothing.fp, nothing.fn) == (0, 0, 0) and nothing.f1 == 1.0
    # no ignored point changes nothing; an ignored point of radius 0 sets aside only a prediction on it
    plain = match_points(truth, [[2.0, 0.0], [4.0, 0.0]], 2.0)
    assert pairs_of(match_points(truth, [[2.0, 0.0], [4.0, 0.0]], 2.0, ignore=[False, False])) == pairs_of(plain)
    zero = match_points(truth, [[4.0, 0.0], [4.0, 0.1]], [2.0, 0.0], ignore=[False, True])
    assert (zero.tp, zero.fp, zero.ignored_prediction_index.tolist()) == (0, 1, [0])
    assert match_points(np.zeros((0, 2)), [[1.0, 1.0]], 1.0, ignore=[]).fp == 1


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


def luna16_procedure(scans):
    """LUNA16's noduleCADEvaluationLUNA16.py (evaluateCAD, computeFROC), written from its
    description. Each scan: (nodules, their diameters, excluded findings, their diameters,
    candidates, their scores), coordinates in mm. A diameter below 0 is 10 mm. Findings in order,
    the included nodules first: a candidate whose squared distance to a finding is below (diameter
    / 2)² is, for an included nodule, a hit (the nodule found, with the largest score of its hits)
    and no false positive; for an excluded finding, no false positive (bOtherNodulesAsIrrelevant).
    The candidates left are false positives. Found nodules (label 1) and false positives (label
    0) go to scikit-learn's roc_curve; a missed nodule counts in the sensitivity's denominator
    only. FP rate = fpr × false positives / scans, sensitivity = tpr × found / nodules.
    (FP rates, sensitivities, found, false positives); NaN curves where roc_curve has one class."""
    from sklearn.metrics import roc_curve

    labels, probabilities, nodules = [], [], 0
    for included, diameters, excluded, excluded_diameters, candidates, scores in scans:
        left = set(range(len(candidates)))  # the script deletes marks from a copy of the candidates
        findings = [(c, d, True) for c, d in zip(included, diameters, strict=True)] + \
                   [(c, d, False) for c, d in zip(excluded, excluded_diameters, strict=True)]
        for centre, diameter, counted in findings:
            nodules += counted
            radius_squared = ((diameter if diameter >= 0 else 10.0) / 2.0) ** 2
            matches = []
            for k, candidate in enumerate(candidates):
                if float(((np.asarray(centre) - candidate) ** 2).sum()) < radius_squared:
                    left.discard(k)
                    if counted:
                        matches.append(scores[k])
            if counted and matches:
                labels.append(1)
                probabilities.append(max(matches))
        labels += [0] * len(left)
        probabilities += [scores[k] for k in sorted(left)]
    labels, probabilities = np.array(labels), np.array(probabilities)
    found, false_positives = int(labels.sum()), int(len(labels) - labels.sum())
    if found == 0 or false_positives == 0:
        return np.array([np.nan]), np.array([np.nan]), found, false_positives
    fpr, tpr, _ = roc_curve(labels, probabilities)
    return fpr * false_positives / len(scans), tpr * found / nodules, found, false_positives


def luna16_scans(rng, n_scans):
    """Scans in mm on a 1/8 grid: nodules of diameters 3 ... 29.5 mm (halves: squared radii exact),
    excluded findings (some next to a nodule, some of diameter -1: 10 mm), candidates near both,
    on neither, and scans without nodules or candidates; scores on a 1/16 grid (ties)."""
    def grid(x):
        return np.round(np.asarray(x) * 8) / 8

    scans = []
    for _ in range(n_scans):
        nodules = grid(rng.uniform(0, 200, (int(rng.integers(0, 5)), 3)))
        diameters = rng.integers(6, 60, len(nodules)) / 2
        next_to = nodules[rng.integers(0, len(nodules), 2)] + rng.normal(0, 6, (2, 3)) if len(nodules) else \
            np.zeros((0, 3))
        excluded = grid(np.concatenate([next_to[rng.random(len(next_to)) < 0.6],
                                        rng.uniform(0, 200, (int(rng.integers(0, 3)), 3))]))
        excluded_diameters = np.where(rng.random(len(excluded)) < 0.3, -1.0,
                                      rng.integers(6, 40, len(excluded)) / 2)
        near = [c + rng.normal(0, max(d, 10.0) / 2 * 0.9, (int(rng.integers(0, 4)), 3))
                for c, d in zip(np.concatenate([nodules, excluded]), np.concatenate([diameters, excluded_diameters]),
                                strict=True)]
        candidates = grid(np.concatenate(near + [rng.uniform(0, 200, (int(rng.integers(0, 12)), 3))]))
        if rng.random() < 0.1:
            candidates = np.zeros((0, 3))
        scores = np.round(rng.random(len(candidates)) * 16) / 16
        scans.append((nodules, diameters, excluded, excluded_diameters, candidates, scores))
    return scans


def as_points(scans):
    """The scans as point_froc's arguments: every finding a true point, radius = diameter / 2 (10
    mm for a diameter below 0, as the script), the excluded ones ignored."""
    truth = [np.concatenate([s[0], s[2]]) for s in scans]
    radius = [np.concatenate([s[1], np.where(s[3] < 0, 10.0, s[3])]) / 2 for s in scans]
    ignore = [np.r_[np.zeros(len(s[0]), dtype=bool), np.ones(len(s[2]), dtype=bool)] for s in scans]
    return truth, [s[4] for s in scans], [s[5] for s in scans], radius, ignore


def test_froc_and_cpm_equal_luna16_with_nodule_radii_and_excluded_findings():
    rng = np.random.default_rng(2016)
    compared = set_aside = 0
    for case in range(40):
        scans = luna16_scans(rng, int(rng.integers(2, 12)))
        fps, sensitivities, found, false_positives = luna16_procedure(scans)
        truth, prediction, scores, radius, ignore = as_points(scans)
        hits = [point_hits(t, p, s, r, ignore=i, inclusive=False)
                for t, p, s, r, i in zip(truth, prediction, scores, radius, ignore, strict=True)]
        assert sum(int(np.isfinite(h.lesion_confidences).sum()) for h in hits) == found, case
        assert sum(len(h.false_positives) for h in hits) == false_positives, case
        for t, p, r, i in zip(truth, prediction, radius, ignore, strict=True):
            truth_index, prediction_index, _ = point_pairs(t, p, r, inclusive=False)
            on_excluded = set(prediction_index[i[truth_index]].tolist())
            on_nodule = set(prediction_index[~i[truth_index]].tolist())
            set_aside += len(on_excluded - on_nodule)  # marks on excluded findings only: the rule is exercised
        if np.isnan(sensitivities).any():
            continue
        expected = np.mean(np.interp(CPM_FP_RATES, fps, sensitivities))
        ours = cpm(truth, prediction, scores, radius, inclusive=False, ignore=ignore)
        assert ours == pytest.approx(expected, abs=1e-12), case
        curve = point_froc(truth, prediction, scores, radius, inclusive=False, ignore=ignore)
        for x in np.linspace(0, 10, 41):
            assert np.interp(x, curve.fp_rates[::-1], curve.sensitivities[::-1]) == pytest.approx(
                np.interp(x, fps, sensitivities), abs=1e-12), case
        compared += 1
    assert compared >= 25 and set_aside >= 50


def test_luna16_rules_each_change_the_numbers():
    """The per-nodule radius and the excluded findings are not idle on these scans: scoring with
    one radius for all, or counting the excluded findings, gives other numbers than LUNA16's."""
    rng = np.random.default_rng(23)
    scans = luna16_scans(rng, 30)
    fps, sensitivities, _, _ = luna16_procedure(scans)
    truth, prediction, scores, radius, ignore = as_points(scans)
    expected = np.mean(np.interp(CPM_FP_RATES, fps, sensitivities))
    assert cpm(truth, prediction, scores, radius, inclusive=False, ignore=ignore) == pytest.approx(expected, abs=1e-12)
    assert cpm(truth, prediction, scores, 5.0, inclusive=False, ignore=ignore) != pytest.approx(expected, abs=1e-6)
    assert cpm(truth, prediction, scores, radius, inclusive=False) != pytest.approx(expected, abs=1e-6)


def test_froc_with_ignored_points_edges_and_weights():
    rng = np.random.default_rng(8)
    truth, prediction, scores, radius, ignore = as_points(luna16_scans(rng, 8))
    # rows of image counts equal the materialised resample, radii and ignored points repeated along
    rows = np.array([[1, 0, 2, 1, 1, 3, 0, 1], [1] * 8, [0, 0, 0, 0, 0, 0, 0, 0]])
    values = cpm(truth, prediction, scores, radius, inclusive=False, ignore=ignore, sample_weight=rows)
    for row, value in zip(rows[:2], values[:2], strict=True):
        drawn = np.repeat(np.arange(8), row)
        assert value == cpm([truth[i] for i in drawn], [prediction[i] for i in drawn], [scores[i] for i in drawn],
                            [radius[i] for i in drawn], inclusive=False, ignore=[ignore[i] for i in drawn])
    assert np.isnan(values[2])
    # every true point ignored: the sensitivity is undefined
    every = [np.ones(len(t), dtype=bool) for t in truth]
    assert np.isnan(cpm(truth, prediction, scores, radius, ignore=every))
    with pytest.raises(ValueError, match="not ignored"):
        point_froc(truth, prediction, scores, radius, ignore=every)
    # every prediction on an ignored point: no false positive and nothing found
    on_ignored = point_hits([(0.0, 0.0), (9.0, 0.0)], [(9.0, 0.5), (9.5, 0.0)], [0.9, 0.4], 1.0, ignore=[False, True])
    assert on_ignored.false_positives.size == 0 and on_ignored.lesion_confidences.tolist() == [-np.inf]
    # a prediction on a counted and an ignored point is the counted point's hit
    both = point_hits([(0.0, 0.0), (2.0, 0.0)], [(1.0, 0.0)], [0.7], 1.0, ignore=[False, True])
    assert both.false_positives.size == 0 and both.lesion_confidences.tolist() == [0.7]
    # one radius for all images, or one entry per image (a number or one per true point)
    same = point_froc(truth, prediction, scores, 6.0, ignore=ignore)
    per_image = point_froc(truth, prediction, scores, [6.0] * 8, ignore=ignore)
    per_point = point_froc(truth, prediction, scores, [np.full(len(t), 6.0) for t in truth], ignore=ignore)
    for curve in (per_image, per_point):
        assert np.array_equal(curve.fp_rates, same.fp_rates) and np.array_equal(curve.sensitivities,
                                                                                same.sensitivities)


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
    (lambda: match_points([(0, 0)], [(0, 0)], [1.0, 2.0]), r"radius must be one number or one per true point \(1\)"),
    (lambda: match_points([(0, 0), (1, 1)], [(0, 0)], [1.0, -2.0]), "radius must be finite and >= 0 for every"),
    (lambda: match_points([(0, 0), (1, 1)], [(0, 0)], [1.0, np.nan]), "radius must be finite and >= 0 for every"),
    (lambda: match_points([(0, 0), (1, 1)], [(0, 0)], [np.inf, 1.0]), "radius must be finite"),
    (lambda: match_points([(0, 0), (1, 1)], [(0, 0)], [True, False]), "radius must be one number .* got bool"),
    (lambda: match_points([(0, 0), (1, 1)], [(0, 0)], ["1", "2"]), "radius must be one number"),
    (lambda: match_points([(0, 0), (1, 1)], [(0, 0)], [[1.0, 2.0]]), "radius must be one number or one per"),
    (lambda: match_points([(0, 0)], [(0, 0)], 1.0, ignore=[True, False]), r"ignore must be one True or False .*\(1\)"),
    (lambda: match_points([(0, 0)], [(0, 0)], 1.0, ignore=[1]), "ignore must be one True or False .* got int"),
    (lambda: match_points([(0, 0)], [(0, 0)], 1.0, ignore=["yes"]), "ignore must be one True or False"),
    (lambda: match_points([(0, 0)], [(0, 0)], 1.0, ignore=True), "ignore must be one True or False"),
    (lambda: match_points([(0, 0)], [(0, 0)], 1.0, ignore=[]), r"ignore must be one True or False .* got shape \(0,\)"),
    (lambda: cpm([np.ones((1, 2))], [np.ones((1, 2))], [np.ones(1)], [1.0, 2.0]),
     "radius must give one entry per image"),
    (lambda: cpm([np.ones((2, 2))], [np.ones((1, 2))], [np.ones(1)], [[1.0]]), "radius must be one number or one per"),
    (lambda: cpm([np.ones((1, 2))], [np.ones((1, 2))], [np.ones(1)], 1.0, ignore=False), "ignore must give one entry"),
    (lambda: cpm([np.ones((1, 2))], [np.ones((1, 2))], [np.ones(1)], 1.0, ignore=[[True], [False]]),
     "ignore must give one entry per image"),
    (lambda: point_froc([np.ones((2, 2))], [np.ones((1, 2))], [np.ones(1)], 1.0, ignore=[[True]]),
     r"ignore must be one True or False per true point \(2\)"),
])
def test_bad_arguments_raise_value_error_naming_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()
