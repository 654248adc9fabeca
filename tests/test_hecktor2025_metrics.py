"""HECKTOR 2025 metric functions against independent computations: scipy.ndimage.label and a
brute-force IoU / matching for lesions, lifelines and scikit-survival for the C-index (also on
explicitly resampled data), scikit-learn for balanced accuracy, sensitivity and specificity."""

import itertools

import numpy as np
import pytest
from lifelines.utils import concordance_index as lifelines_cindex
from scipy import ndimage
from sklearn.metrics import balanced_accuracy_score, recall_score
from sksurv.metrics import concordance_index_censored

from evaluation.metrics.confusion import recall_score as weighted_recall
from evaluation.metrics.instances import (
    InstanceOverlaps,
    connected_components,
    f1_from_counts,
    instance_overlaps,
    match_instances,
    match_overlaps,
)
from evaluation.metrics.resampling import draws_to_counts, linear_percentiles
from evaluation.metrics.survival import concordance_index, concordance_pairs

# ---- lesions --------------------------------------------------------------------------------


def blobs(rng, shape, n, max_radius=3):
    mask = np.zeros(shape, dtype=bool)
    grids = np.ogrid[tuple(slice(0, s) for s in shape)]
    for _ in range(n):
        center = [rng.uniform(0, s) for s in shape]
        radius = rng.uniform(0.8, max_radius)
        mask |= sum((g - c) ** 2 for g, c in zip(grids, center, strict=True)) <= radius ** 2
    return mask


def lesion_detection_counts(truth, prediction, connectivity=26, iou_threshold=0.3, method="greedy"):
    """(TP, FP, FN) as HECKTOR task 1 computes them: components, then IoU > threshold, one to one."""
    true_lesions, predicted_lesions = connected_components(truth, connectivity), connected_components(prediction,
                                                                                                       connectivity)
    found = match_instances(true_lesions[0], predicted_lesions[0], criterion="iou", threshold=iou_threshold,
                            inclusive=False, assignment=method)
    return found.tp, found.fp, found.fn


def match_pairs(truth_index, prediction_index, iou, threshold, method):
    """Which candidate pairs (true label, predicted label, IoU) the one-to-one rule takes: the
    pairs' values are given as they are (criterion "overlap" compares the stored values)."""
    truth_index, prediction_index = np.asarray(truth_index), np.asarray(prediction_index)
    n_truth, n_prediction = truth_index.max(), prediction_index.max()
    overlaps = InstanceOverlaps(np.arange(1, n_truth + 1), np.ones(n_truth, dtype=np.int64),
                                np.arange(1, n_prediction + 1), np.ones(n_prediction, dtype=np.int64),
                                truth_index - 1, prediction_index - 1, np.asarray(iou, dtype=np.float64))
    found = match_overlaps(overlaps, "overlap", threshold, False, method)
    chosen = set(zip(found.truth_ids.tolist(), found.prediction_ids.tolist(), strict=True))
    return np.array([(t, p) in chosen for t, p in zip(truth_index.tolist(), prediction_index.tolist(), strict=True)])


def reference_lesions(truth, prediction, connectivity, threshold, method):
    """scipy labelling, IoU of every pair from the masks themselves, matching by brute force."""
    rank = {6: 1, 18: 2, 26: 3}[connectivity]
    structure = ndimage.generate_binary_structure(3, rank)
    truth_labels, n_truth = ndimage.label(truth, structure)
    prediction_labels, n_prediction = ndimage.label(prediction, structure)
    iou = {}
    for t in range(1, n_truth + 1):
        a = truth_labels == t
        for p in range(1, n_prediction + 1):
            b = prediction_labels == p
            value = (a & b).sum() / (a | b).sum()
            if value > threshold:
                iou[(t, p)] = value
    if method == "greedy":
        used_t, used_p, tp = set(), set(), 0
        for (t, p), _ in sorted(iou.items(), key=lambda item: (-item[1], item[0])):
            if t not in used_t and p not in used_p:
                used_t.add(t), used_p.add(p)
                tp += 1
    else:
        tp = best_matching(iou)[1]
    return tp, n_prediction - tp, n_truth - tp


def best_matching(iou):
    """(largest total IoU, its number of pairs) over every one-to-one subset of the pairs."""
    pairs = list(iou)
    best = (0.0, 0)
    for size in range(1, len(pairs) + 1):
        for subset in itertools.combinations(pairs, size):
            ts, ps = [t for t, _ in subset], [p for _, p in subset]
            if len(set(ts)) == size and len(set(ps)) == size:
                total = sum(iou[pair] for pair in subset)
                if total > best[0] + 1e-12:
                    best = (total, size)
    return best


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("connectivity", [6, 26])
def test_lesion_counts_equal_scipy_labelling_and_brute_force_greedy(seed, connectivity):
    rng = np.random.default_rng(seed)
    shape = (12, 20, 17)
    truth = blobs(rng, shape, int(rng.integers(0, 7)))
    prediction = blobs(rng, shape, int(rng.integers(0, 7))) | (truth & (rng.random(shape) < 0.7))
    assert lesion_detection_counts(truth, prediction, connectivity, 0.3, "greedy") == \
        reference_lesions(truth, prediction, connectivity, 0.3, "greedy")


@pytest.mark.parametrize("seed", range(8))
def test_hungarian_equals_brute_force_best_matching(seed):
    rng = np.random.default_rng(100 + seed)
    shape = (10, 16, 16)
    truth = blobs(rng, shape, 6, max_radius=4)
    prediction = blobs(rng, shape, 6, max_radius=4)
    assert lesion_detection_counts(truth, prediction, 26, 0.1, "hungarian") == \
        reference_lesions(truth, prediction, 26, 0.1, "hungarian")


def test_greedy_and_hungarian_differ_where_greedy_blocks_a_second_match():
    # true 1 overlaps predicted 1 (0.6) and 2 (0.4); true 2 overlaps predicted 1 (0.5).
    t, p, iou = np.array([1, 1, 2]), np.array([1, 2, 1]), np.array([0.6, 0.4, 0.5])
    assert match_pairs(t, p, iou, 0.3, "greedy").tolist() == [True, False, False]
    assert match_pairs(t, p, iou, 0.3, "hungarian").tolist() == [False, True, True]


def test_iou_threshold_is_strict():
    truth = np.zeros((1, 1, 10), dtype=bool)
    prediction = np.zeros_like(truth)
    truth[0, 0, :3] = True  # IoU exactly 3/10 with the prediction
    prediction[0, 0, :] = True
    assert lesion_detection_counts(truth, prediction, 26, 0.3)[0] == 0
    assert lesion_detection_counts(truth, prediction, 26, 0.29)[0] == 1


def test_26_connectivity_joins_corner_neighbours_6_does_not():
    mask = np.zeros((3, 3, 3), dtype=bool)
    mask[0, 0, 0] = mask[1, 1, 1] = True
    assert connected_components(mask, 26)[1] == 1
    assert connected_components(mask, 18)[1] == 2
    assert connected_components(mask, 6)[1] == 2


@pytest.mark.parametrize("slab", [1 << 22, 97])
def test_overlapping_pairs_iou_equals_mask_iou(slab, monkeypatch):
    import evaluation.metrics.instances as instances

    monkeypatch.setattr(instances, "_SLAB", slab)
    rng = np.random.default_rng(3)
    truth, prediction = blobs(rng, (9, 14, 14), 5), blobs(rng, (9, 14, 14), 5)
    lt, nt = connected_components(truth, 26)
    lp, np_ = connected_components(prediction, 26)
    overlaps = instance_overlaps(lt, lp)
    ti, pi = overlaps.truth_ids[overlaps.truth_index], overlaps.prediction_ids[overlaps.prediction_index]
    for t, p, value in zip(ti, pi, overlaps.values("iou"), strict=True):
        a, b = lt == t, lp == p
        assert value == pytest.approx((a & b).sum() / (a | b).sum(), abs=1e-15)
    expected = {(t, p) for t in range(1, nt + 1) for p in range(1, np_ + 1) if ((lt == t) & (lp == p)).any()}
    assert set(zip(ti.tolist(), pi.tolist(), strict=True)) == expected


def test_empty_masks_and_f1_defaults():
    empty = np.zeros((4, 4, 4), dtype=bool)
    assert lesion_detection_counts(empty, empty) == (0, 0, 0)
    assert f1_from_counts(0, 0, 0) == 1.0 and f1_from_counts(0, 0, 0, all_zero=0.0) == 0.0
    assert f1_from_counts(3, 1, 2) == pytest.approx(6 / 9)
    with pytest.raises(ValueError, match="shape"):
        lesion_detection_counts(empty, np.zeros((4, 4, 5), dtype=bool))


# ---- C-index ----------------------------------------------------------------------------------


def random_survival(rng, n, time_values=15, risk_values=5):
    time = rng.integers(1, time_values, n).astype(float)  # many tied times
    event = rng.integers(0, 2, n)
    risk = rng.integers(0, risk_values, n) / 2.0  # many tied risks
    return time, event, risk


@pytest.mark.parametrize("seed", range(30))
def test_cindex_equals_lifelines_and_sksurv_with_ties_and_censoring(seed):
    rng = np.random.default_rng(seed)
    time, event, risk = random_survival(rng, int(rng.integers(3, 120)))
    event[0] = 1
    time[0] = time.min()  # at least one comparable pair unless every time is tied...
    time[1] = time[0] + 1
    ours = concordance_index(time, event, risk)
    assert ours == lifelines_cindex(time, -risk, event)
    assert ours == concordance_index_censored(event == 1, time, risk)[0]


def test_cindex_continuous_values_equal_lifelines():
    rng = np.random.default_rng(1)
    time, event, risk = rng.exponential(500, 300), rng.random(300) < 0.4, rng.normal(size=300)
    assert concordance_index(time, event, risk) == lifelines_cindex(time, -risk, event)


def test_resampled_cindex_equals_lifelines_on_each_resampled_data_set():
    rng = np.random.default_rng(5)
    time, event, risk = random_survival(rng, 60)
    draws = rng.integers(0, 60, size=(40, 60))
    counts = draws_to_counts(draws, 60)
    numerators, denominators = concordance_pairs(time, event, risk, counts)
    c_indices = concordance_index(time, event, risk, counts)
    for row, num, den, c_index in zip(draws, numerators, denominators, c_indices, strict=True):
        try:
            expected = lifelines_cindex(time[row], -risk[row], event[row])
        except ZeroDivisionError:
            assert den == 0 and np.isnan(c_index)
            continue
        assert num / den == expected == c_index
    # a row without a comparable pair (two censored patients): NaN, not an error
    only_censored = np.zeros((1, 60), dtype=np.int64)
    only_censored[0, np.flatnonzero(np.asarray(event) == 0)[:2]] = 1
    assert np.isnan(concordance_index(time, event, risk, only_censored)[0])


def test_resampled_cindex_blocks_give_the_same_numbers(monkeypatch):
    import evaluation.metrics.survival as survival

    rng = np.random.default_rng(8)
    time, event, risk = random_survival(rng, 200)
    counts = draws_to_counts(rng.integers(0, 200, size=(30, 200)), 200)
    whole = concordance_pairs(time, event, risk, counts)
    monkeypatch.setattr(survival, "_PAIR_ELEMENTS", 1000)  # 5 rows of pairs at a time
    blocked = concordance_pairs(time, event, risk, counts)
    assert np.array_equal(whole[0], blocked[0]) and np.array_equal(whole[1], blocked[1])


def test_resampled_cindex_with_every_kind_of_tie_equals_pairs_counted_one_by_one():
    rng = np.random.default_rng(12)
    n = 40
    time = rng.integers(1, 6, n).astype(float)  # many tied times, events and censorings among them
    event = rng.random(n) < 0.5
    risk = rng.integers(0, 3, n).astype(float)  # many tied risks
    counts = draws_to_counts(rng.integers(0, n, size=(25, n)), n)
    numerators, denominators = concordance_pairs(time, event, risk, counts)
    for row, num, den in zip(counts, numerators, denominators, strict=True):
        concordant = comparable = 0.0
        for i, j in itertools.permutations(range(n), 2):  # copies of one patient never pair
            if event[i] and (time[i] < time[j] or (time[i] == time[j] and not event[j])):
                pairs = row[i] * row[j]
                comparable += pairs
                concordant += pairs * (1.0 if risk[i] > risk[j] else 0.5 if risk[i] == risk[j] else 0.0)
        assert (num, den) == (concordant, comparable)


def test_resampled_cindex_is_the_same_whatever_the_type_or_size_of_the_counts():
    rng = np.random.default_rng(21)
    time, event, risk = random_survival(rng, 300)
    counts = draws_to_counts(rng.integers(0, 300, size=(50, 300)), 300)
    as_integers = concordance_pairs(time, event, risk, counts)  # whole, small: float32 products
    as_floats = concordance_pairs(time, event, risk, counts.astype(float))  # float64 products
    assert np.array_equal(as_integers[0], as_floats[0]) and np.array_equal(as_integers[1], as_floats[1])
    large = counts * 100_003 + 1  # ~3e7 a resample: past what float32 holds exactly
    large_integers = concordance_pairs(time, event, risk, large)
    large_floats = concordance_pairs(time, event, risk, large.astype(float))
    assert np.array_equal(large_integers[0], large_floats[0]) and np.array_equal(large_integers[1], large_floats[1])


@pytest.mark.parametrize("seed", range(6))
def test_linear_percentiles_equal_numpys_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    for size in (1, 2, 3, 7, 100, 999, 1000):
        values = [rng.random(size), np.round(rng.random(size), 2), rng.integers(0, 4, size) / 7,
                  rng.normal(size=size) * 1e3][seed % 4]
        level = [95.0, 90.0, 99.0, 50.0, 1.0, float(rng.uniform(1, 99.99))][seed]
        tail = (100.0 - level) / 2.0
        for percents in ([tail, 100.0 - tail], [0.0, 100.0, 50.0, float(rng.uniform(0, 100))]):
            ours, numpys = linear_percentiles(values, percents), np.percentile(values, percents)
            assert ours.tobytes() == numpys.tobytes()


def test_cindex_undefined_and_bad_input():
    assert np.isnan(concordance_index([5.0, 5.0], [0, 0], [1.0, 2.0]))  # no comparable pair: undefined
    with pytest.raises(ValueError, match="finite"):
        concordance_index([1.0, 2.0], [1, 0], [np.nan, 1.0])
    with pytest.raises(ValueError, match="event"):
        concordance_index([1.0, 2.0], [2, 0], [0.0, 1.0])
    # Tied times, exactly one event: comparable, the event must have the higher risk.
    assert concordance_index([3.0, 3.0], [1, 0], [2.0, 1.0]) == 1.0
    assert np.isnan(concordance_index([3.0, 3.0], [1, 1], [2.0, 1.0]))  # tied times, both events: not comparable
    with pytest.raises(ValueError, match="one length"):
        concordance_index([1.0, 2.0], [1, 0], [0.5])
    with pytest.raises(ValueError, match="finite and >= 0"):
        concordance_index([1.0, 2.0], [1, 0], [0.5, 1.0], [1.0, -1.0])


# ---- balanced accuracy ------------------------------------------------------------------------


def resampled_rates(y_true, y_pred, counts):
    """(sensitivity, specificity) of every row of counts: task 3's (hpv.py), each class's recall."""
    recalls = weighted_recall(y_true, y_pred, counts, labels=[0, 1], average=None)
    return recalls[:, 1], recalls[:, 0]


def test_resampled_rates_equal_sklearn_on_each_resample():
    rng = np.random.default_rng(2)
    y_true, y_pred = rng.random(25) < 0.3, rng.random(25) < 0.4
    draws = rng.integers(0, 25, size=(60, 25))
    sensitivity, specificity = resampled_rates(y_true, y_pred, draws_to_counts(draws, 25))
    for row, sens, spec in zip(draws, sensitivity, specificity, strict=True):
        t, p = y_true[row], y_pred[row]
        if t.all() or not t.any():
            assert np.isnan(sens) or np.isnan(spec)
            continue
        assert (sens + spec) / 2 == balanced_accuracy_score(t, p)
        assert sens == recall_score(t, p) and spec == recall_score(~t, ~p)


def test_resampled_rates_without_a_class_and_of_non_binary_values():
    sensitivity, specificity = resampled_rates([1, 1], [0, 1], [[1, 1]])
    assert sensitivity[0] == 0.5 and np.isnan(specificity[0])
    sensitivity, specificity = resampled_rates([0, 0, 1], [0, 1, 1], [[1, 1, 0]])
    assert np.isnan(sensitivity[0]) and specificity[0] == 0.5
    with pytest.raises(ValueError, match="outside the declared labels"):
        resampled_rates([1, 0], [0.5, 1], [[1, 1]])


def test_cindex_ties_only_exactly_equal_risks_unlike_sksurv_default():
    """Risks 1 + 1e-9 and 1: ours and lifelines count the pair concordant, as does
    scikit-survival with tied_tol=0; its default tied_tol=1e-8 counts it tied (1/2)."""
    time = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    event = np.array([1, 1, 0, 1, 0])
    risk = np.array([1 + 1e-9, 1.0, 0.7, 0.3, 0.1])  # every comparable pair concordant
    ours = concordance_index(time, event, risk)
    assert ours == 1.0
    assert ours == lifelines_cindex(time, -risk, event)
    assert ours == concordance_index_censored(event == 1, time, risk, tied_tol=0)[0]
    # 8 comparable pairs, the first counted 1/2: 7.5 / 8
    assert concordance_index_censored(event == 1, time, risk)[0] == 7.5 / 8 != ours
