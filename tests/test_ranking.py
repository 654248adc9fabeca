"""PPV@recall and RARE26's resampled metrics (evaluation/metrics/classification.py) against
scikit-learn, the official expression and exact rational arithmetic; the fast paths (drawn
positives, drawn groups) against the rows of counts they stand for, bit for bit."""

from fractions import Fraction

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, precision_recall_curve, roc_auc_score

import evaluation.metrics.classification as ranking
from evaluation.metrics.classification import (
    metrics_with_drawn_groups,
    metrics_with_drawn_positives,
    ppv_at_recall,
    resampled_ranking_metrics,
)
from evaluation.metrics.resampling import draws_to_counts, percentile_summary, positives_per_resample


def official_ppv(y, s, recall=0.9):
    """The RARE25/26 scorer's expression (rare26.md)."""
    precision, recalls, _ = precision_recall_curve(y, s)
    return np.interp(recall, recalls[::-1], precision[::-1])


# --- the spec's fixtures --------------------------------------------------------------------


def test_fixture_interpolates_between_points_not_first_threshold():
    positives = np.r_[np.arange(0.95, 0.54, -0.05), 0.20]  # 9 positives 0.95..0.55, one at 0.20
    negatives = np.linspace(0.01, 0.99, 30)
    y = np.r_[np.ones(10), np.zeros(30)]
    s = np.r_[positives, negatives]
    assert ppv_at_recall(y, s) == pytest.approx(9 / 33, abs=1e-6)
    assert ppv_at_recall(y, s) == pytest.approx(0.272727, abs=5e-7)
    assert ppv_at_recall(y, s) != pytest.approx(0.391304, abs=1e-3)  # "first threshold reaching 0.9": wrong


def test_fixture_interleaved_labels():
    y = np.array([1, 1, 1, 1, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0])
    s = np.arange(0.95, 0.24, -0.05)[:15]
    assert ppv_at_recall(y, s) == pytest.approx(0.676667, abs=5e-7)


def test_fixture_tied_scores_enter_together():
    y = np.r_[np.ones(8), np.ones(2), np.zeros(3), np.zeros(17)]
    s = np.r_[np.full(8, 0.9), np.full(5, 0.5), np.linspace(0.0, 0.4, 17)]
    assert ppv_at_recall(y, s) == pytest.approx(0.884615, abs=5e-7)


# --- against the official expression on random data with heavy ties ---------------------------


@pytest.mark.parametrize("seed", range(3))
def test_ppv_at_recall_equals_official_expression(seed):
    rng = np.random.default_rng(seed)
    for _ in range(100):
        n = int(rng.integers(2, 80))
        y = rng.integers(0, 2, n)
        y[:2] = [0, 1]
        # Few distinct values: many ties, and recall exactly 0.9 happens (10 or 20 positives).
        s = rng.integers(0, int(rng.integers(2, 12)), n) / 10
        for recall in (0.9, 0.5, 0.8):
            assert ppv_at_recall(y, s, recall) == official_ppv(y, s, recall)


def test_recall_exactly_at_target_takes_last_point_at_that_recall():
    # 10 positives: 9 above every negative, then 2 tied negatives-only thresholds at recall 0.9.
    y = np.r_[np.ones(9), 0, 0, 1]
    s = np.r_[np.linspace(0.99, 0.91, 9), 0.8, 0.7, 0.1]
    # Points at recall 0.9: precision 1, 9/10, 9/11; the last of them is the rule's value.
    assert ppv_at_recall(y, s) == pytest.approx(9 / 11)
    assert ppv_at_recall(y, s) == official_ppv(y, s)


def test_only_ranks_matter():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    s = rng.random(300).round(2)
    for transform in (lambda v: v * 7 - 3, np.exp, lambda v: v ** 3):
        assert ppv_at_recall(y, transform(s)) == pytest.approx(ppv_at_recall(y, s), abs=1e-15)


@pytest.mark.parametrize("y, s, message", [
    ([0, 1, 2], [0.1, 0.2, 0.3], "only 0 and 1"),
    ([0, 1], [0.1, np.nan], "finite"),
    ([0, 1], [0.1], "one length"),
])
def test_invalid_inputs_are_refused(y, s, message):
    with pytest.raises(ValueError, match=message):
        ppv_at_recall(y, s)
    with pytest.raises(ValueError, match="recall must lie in"):
        ppv_at_recall([0, 1], [0.1, 0.2], recall=1.0)


def test_without_positives_it_is_undefined_and_without_negatives_precision_is_one():
    assert np.isnan(ppv_at_recall([0, 0, 0], [0.1, 0.2, 0.3]))
    assert ppv_at_recall([1, 1, 1], [0.1, 0.2, 0.3]) == 1.0


# --- vectorised resamples == one sklearn call per resample ------------------------------------


def materialised(y, s, counts_row):
    index = np.repeat(np.arange(len(y)), counts_row)
    return y[index], s[index]


@pytest.mark.parametrize("seed", range(4))
def test_resampled_metrics_equal_sklearn_per_resample(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 200))
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    s = rng.integers(0, 15, n) / 14  # ties within and across classes
    counts = rng.integers(0, 3, (60, n))
    counts[:, :2] += 1  # both classes in every resample
    got = resampled_ranking_metrics(y, s, counts)
    for r in range(len(counts)):
        yy, ss = materialised(y, s, counts[r])
        assert got["auroc"][r] == pytest.approx(roc_auc_score(yy, ss), abs=1e-12)
        assert got["average_precision"][r] == pytest.approx(average_precision_score(yy, ss), abs=1e-12)
        assert got["ppv_at_recall"][r] == official_ppv(yy, ss)  # the same floating-point operations


def test_resampled_metrics_with_all_ones_are_the_full_data_metrics():
    rng = np.random.default_rng(11)
    y = rng.integers(0, 2, 500)
    s = rng.random(500).round(2)
    got = resampled_ranking_metrics(y, s, np.ones((1, 500), dtype=int))
    assert got["auroc"][0] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert got["average_precision"][0] == pytest.approx(average_precision_score(y, s), abs=1e-12)
    assert got["ppv_at_recall"][0] == ppv_at_recall(y, s)


def test_resampled_metrics_blocks_do_not_change_results(monkeypatch):
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 100)
    y[:2] = [0, 1]
    s = rng.random(100).round(1)
    counts = rng.integers(1, 3, (37, 100))
    whole = resampled_ranking_metrics(y, s, counts)
    monkeypatch.setattr(ranking, "_BLOCK_ELEMENTS", 250)  # 2 rows per block
    blocked = resampled_ranking_metrics(y, s, counts)
    for key in whole:
        np.testing.assert_array_equal(whole[key], blocked[key])


def test_resample_without_a_class_is_refused():
    y = np.array([0, 1, 0, 1])
    s = np.array([0.1, 0.9, 0.2, 0.8])
    with pytest.raises(ValueError, match="both classes"):
        resampled_ranking_metrics(y, s, np.array([[1, 0, 1, 0]]))


def exact_auc(y, s, weights):
    """The AUC in rational arithmetic: weighted pairs ranked right, ties counting one half."""
    pairs = right = Fraction(0)
    for i in np.flatnonzero(y == 1):
        for j in np.flatnonzero(y == 0):
            pairs += int(weights[i]) * int(weights[j])
            right += Fraction(int(weights[i]) * int(weights[j]) * (2 if s[i] > s[j] else s[i] == s[j]), 2)
    return right / pairs


@pytest.mark.parametrize("seed", range(3))
def test_resampled_auroc_is_the_exact_auc_correctly_rounded(seed):
    """The pair-count AUROC of the resampled paths: the exact AUC of the resample, rounded once
    (Fraction to float), bit for bit; roc_auc_score (scikit-learn's trapezoids) within a few ulp."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 60))
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    s = rng.integers(0, 9, n) / 8
    counts = rng.integers(0, 4, (30, n))
    counts[:, :2] += 1
    got = resampled_ranking_metrics(y, s, counts)["auroc"]
    trapezoids = ranking.roc_auc_score(y, s, counts)
    for r, row in enumerate(counts):
        assert got[r] == float(exact_auc(y, s, row))
        assert got[r] == pytest.approx(trapezoids[r], rel=1e-15, abs=0)


@pytest.mark.parametrize("seed", range(4))
def test_ppv_at_recall_rows_are_each_rows_value(seed):
    """ppv_at_recall with rows of weights: each row's value is the single weighting's, bit for
    bit, and the official expression's on the materialised resample."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 120))
    y = rng.integers(0, 2, n)
    y[0] = 1
    s = rng.integers(0, 12, n) / 11
    counts = rng.integers(0, 3, (25, n))
    counts[:, 0] += 1
    rows = ppv_at_recall(y, s, 0.9, counts)
    for r, row in enumerate(counts):
        assert rows[r] == ppv_at_recall(y, s, 0.9, row) == official_ppv(*materialised(y, s, row))


# --- resampling helpers -------------------------------------------------------------------


def test_draws_to_counts_counts_each_index():
    draws = np.array([[0, 0, 2], [1, 2, 2]])
    np.testing.assert_array_equal(draws_to_counts(draws, 4), [[2, 0, 1, 0], [0, 1, 2, 0]])


@pytest.mark.parametrize("n_ndbe, expected", [(0, 1), (99, 1), (100, 1), (199, 1), (200, 2), (2256, 22)])
def test_positives_per_resample_is_official_floor_at_least_one(n_ndbe, expected):
    assert positives_per_resample(n_ndbe, 100) == expected == max(1, int(n_ndbe / 100))


def test_percentile_summary_is_numpy_median_and_linear_percentiles():
    values = np.random.default_rng(2).random(1000)
    median, lower, upper = percentile_summary(values)
    assert median == np.median(values)
    assert (lower, upper) == tuple(np.percentile(values, [2.5, 97.5]))


# --- all negatives + drawn positives (the RARE26 image-level bootstrap) ------------------------


def with_drawn_positives(y, s, draws_row):
    """The resample written out: every negative once, then the drawn positives (repeats kept)."""
    index = np.r_[np.flatnonzero(y == 0), np.flatnonzero(y == 1)[draws_row]]
    return y[index], s[index]


def dense_counts(y, draws):
    """The same resamples as rows of multiplicities, for `resampled_ranking_metrics`."""
    counts = np.tile((y == 0).astype(np.int64), (len(draws), 1))
    counts[:, y == 1] = draws_to_counts(draws, int(y.sum()))
    return counts


def random_case(rng, decimals, ratio, n=None):
    n = n or int(rng.integers(20, 400))
    y = (rng.random(n) < rng.choice([0.05, 0.2, 0.5])).astype(int)
    y[:2] = [0, 1]
    # Positives score higher on average; rounding makes ties within and across classes.
    s = np.round(rng.random(n) * (0.6 + 0.4 * y), decimals)
    drawn = positives_per_resample(int((y == 0).sum()), ratio)
    draws = rng.integers(0, int(y.sum()), size=(int(rng.integers(1, 40)), drawn))
    return y, s, draws


@pytest.mark.parametrize("decimals", [2, 3])
@pytest.mark.parametrize("ratio", [1, 3, 10])
@pytest.mark.parametrize("seed", range(3))
def test_drawn_positives_equal_sklearn_per_resample(seed, ratio, decimals):
    rng = np.random.default_rng(100 * seed + 10 * ratio + decimals)
    y, s, draws = random_case(rng, decimals, ratio)
    got = metrics_with_drawn_positives(y, s, draws)
    for r in range(len(draws)):
        yy, ss = with_drawn_positives(y, s, draws[r])
        assert got["auroc"][r] == pytest.approx(roc_auc_score(yy, ss), abs=1e-12)
        assert got["average_precision"][r] == pytest.approx(average_precision_score(yy, ss), abs=1e-12)
        assert got["ppv_at_recall"][r] == official_ppv(yy, ss)


@pytest.mark.parametrize("seed", range(20))
def test_drawn_positives_equal_the_counts_path_bit_for_bit(seed):
    # Larger sets, the RARE26 ratio too: the same floating-point numbers as the rows of counts.
    rng = np.random.default_rng(seed)
    y, s, draws = random_case(rng, int(rng.integers(1, 4)), int(rng.choice([1, 7, 100])),
                              n=int(rng.integers(200, 5000)))
    got = metrics_with_drawn_positives(y, s, draws)
    dense = resampled_ranking_metrics(y, s, dense_counts(y, draws))
    for key in dense:
        np.testing.assert_array_equal(got[key], dense[key])


@pytest.mark.parametrize("y, s", [
    (np.r_[np.zeros(30, int), np.ones(5, int)], np.full(35, 0.25)),  # every score equal
    (np.r_[np.zeros(30, int), 1], np.r_[np.linspace(0, 1, 30), 0.5]),  # a single positive
    (np.r_[np.zeros(30, int), 1], np.r_[np.linspace(0, 1, 30), 2.0]),  # ... above every negative
    (np.r_[np.zeros(30, int), 1], np.r_[np.linspace(0, 1, 30), -1.0]),  # ... below every negative
    (np.r_[np.zeros(4, int), np.ones(3, int)], np.r_[0.1, 0.2, 0.2, 0.9, 0.2, 0.9, 0.0]),
])
@pytest.mark.parametrize("ratio", [1, 2, 100])
def test_drawn_positives_edge_cases_equal_sklearn(y, s, ratio):
    drawn = positives_per_resample(int((y == 0).sum()), ratio)
    draws = np.random.default_rng(ratio).integers(0, int(y.sum()), size=(25, drawn))
    got = metrics_with_drawn_positives(y, s, draws)
    dense = resampled_ranking_metrics(y, s, dense_counts(y, draws))
    for r in range(len(draws)):
        yy, ss = with_drawn_positives(y, s, draws[r])
        assert got["auroc"][r] == pytest.approx(roc_auc_score(yy, ss), abs=1e-12)
        assert got["average_precision"][r] == pytest.approx(average_precision_score(yy, ss), abs=1e-12)
        assert got["ppv_at_recall"][r] == official_ppv(yy, ss)
    for key in dense:
        np.testing.assert_array_equal(got[key], dense[key])


def test_drawn_positives_at_exactly_the_target_recall():
    # 10 or 20 drawn positives with tied scores: recall lands exactly on 0.9 at some points.
    rng = np.random.default_rng(8)
    y = np.r_[np.zeros(1000, int), np.ones(12, int)]
    s = np.r_[rng.integers(0, 8, 1000), rng.integers(4, 12, 12)] / 10
    for drawn in (10, 20):
        draws = rng.integers(0, 12, size=(200, drawn))
        got = metrics_with_drawn_positives(y, s, draws)
        for r in range(len(draws)):
            assert got["ppv_at_recall"][r] == official_ppv(*with_drawn_positives(y, s, draws[r]))


def test_drawn_positives_blocks_do_not_change_results(monkeypatch):
    y, s, _ = random_case(np.random.default_rng(4), 2, 3, n=300)
    draws = np.random.default_rng(5).integers(0, int(y.sum()), size=(37, 90))
    whole = metrics_with_drawn_positives(y, s, draws)
    monkeypatch.setattr(ranking, "_DRAWS_PER_BLOCK", 200)  # 2 rows per block, the last alone
    blocked = metrics_with_drawn_positives(y, s, draws)
    for key in whole:
        np.testing.assert_array_equal(whole[key], blocked[key])


def test_counts_path_does_not_depend_on_rows_per_block(monkeypatch):
    # A block of one row used to add average precision's steps in another order than a block of
    # several (numpy sums a C-ordered row pairwise, an F-ordered one left to right).
    rng = np.random.default_rng(6)
    y = (rng.random(3000) < 0.3).astype(int)
    s = rng.random(3000)  # ~3000 distinct scores: long rows
    counts = rng.integers(0, 3, (5, 3000))
    counts[:, :2] = 1
    y[:2] = [0, 1]
    whole = resampled_ranking_metrics(y, s, counts)
    monkeypatch.setattr(ranking, "_BLOCK_ELEMENTS", 3000)  # one row per block
    alone = resampled_ranking_metrics(y, s, counts)
    for key in whole:
        np.testing.assert_array_equal(whole[key], alone[key])


@pytest.mark.parametrize("draws, message", [
    (np.array([[0, 3]]), "index the 3 positives"),
    (np.array([[-1, 0]]), "index the 3 positives"),
    (np.array([0, 1]), "2-D"),
    (np.zeros((2, 0), dtype=int), "2-D"),
    (np.array([[0.0, 1.0]]), "2-D"),
])
def test_bad_draws_are_refused(draws, message):
    y = np.array([0, 1, 0, 1, 1])
    s = np.array([0.1, 0.9, 0.2, 0.8, 0.3])
    with pytest.raises(ValueError, match=message):
        metrics_with_drawn_positives(y, s, draws)


# --- grouped (cluster) bootstrap: every item of a drawn group, once per draw ----------------------


def grouped_case(rng, n_groups=30):
    """Items in groups of 1 to 6, labels and scores with ties within and across classes."""
    groups = np.repeat(np.arange(n_groups), rng.integers(1, 7, n_groups))
    rng.shuffle(groups)
    y = rng.integers(0, 2, len(groups))
    y[:2] = [0, 1]
    s = rng.integers(0, 12, len(groups)) / 11
    return groups, y, s


@pytest.mark.parametrize("seed", range(3))
def test_drawn_groups_equal_sklearn_with_the_group_counts_as_sample_weight(seed):
    rng = np.random.default_rng(seed)
    groups, y, s = grouped_case(rng)
    draws = rng.integers(0, groups.max() + 1, (40, 25))
    draws[:, :2] = [groups[0], groups[1]]  # both classes in every resample
    got = metrics_with_drawn_groups(y, s, groups, draws)
    for r, row in enumerate(draws):
        weights = np.array([np.count_nonzero(row == g) for g in groups])  # an item's group's draws
        assert got["auroc"][r] == pytest.approx(roc_auc_score(y, s, sample_weight=weights), abs=1e-12)
        assert got["average_precision"][r] == pytest.approx(average_precision_score(y, s, sample_weight=weights),
                                                            abs=1e-12)
        assert got["ppv_at_recall"][r] == official_ppv(*materialised(y, s, weights))


def test_drawn_groups_blocks_do_not_change_results(monkeypatch):
    rng = np.random.default_rng(9)
    groups, y, s = grouped_case(rng)
    draws = rng.integers(0, groups.max() + 1, (23, 40))
    draws[:, :2] = [groups[0], groups[1]]
    whole = metrics_with_drawn_groups(y, s, groups, draws)
    monkeypatch.setattr(ranking, "_GROUP_DRAW_ROWS", 4)
    blocked = metrics_with_drawn_groups(y, s, groups, draws)
    for key in whole:
        np.testing.assert_array_equal(whole[key], blocked[key])


@pytest.mark.parametrize("groups, draws, message", [
    (np.array([0, 1, 1, 2]), np.array([[0, 3]]), "index the 3 groups"),
    (np.array([0, 1, 1, 2]), np.array([[-1, 0]]), "index the 3 groups"),
    (np.array([0, 1, 1, 2]), np.array([0, 1]), "2-D"),
    (np.array([0.0, 1.0, 1.0, 2.0]), np.array([[0, 1]]), "group indices"),
    (np.array([0, -1, 1, 2]), np.array([[0, 1]]), "group indices"),
])
def test_bad_groups_or_draws_are_refused(groups, draws, message):
    y = np.array([0, 1, 0, 1])
    s = np.array([0.1, 0.9, 0.2, 0.8])
    with pytest.raises(ValueError, match=message):
        metrics_with_drawn_groups(y, s, groups, draws)
