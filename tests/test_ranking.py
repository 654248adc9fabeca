"""PPV@recall and the vectorised resampled metrics against scikit-learn and the official expression."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, precision_recall_curve, roc_auc_score

from evaluation.metrics.ranking import ppv_at_recall, resampled_ranking_metrics
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
    ([0, 0, 0], [0.1, 0.2, 0.3], "both classes"),
    ([0, 1, 2], [0.1, 0.2, 0.3], "only 0 and 1"),
    ([0, 1], [0.1, np.nan], "finite"),
    ([0, 1], [0.1], "equal length"),
])
def test_invalid_inputs_are_refused(y, s, message):
    with pytest.raises(ValueError, match=message):
        ppv_at_recall(y, s)


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
    import evaluation.metrics.ranking as ranking

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
