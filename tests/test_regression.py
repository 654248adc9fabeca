"""evaluation.metrics.regression against independent computations: scikit-learn's regression
metrics (with their sample_weight), scipy.stats' pearsonr and spearmanr (weights checked as
repetitions, which is what a bootstrap row means), and brute-force loops of the definitions for
the percentage errors scikit-learn does not have.

Tolerance: 1e-12, relative for errors and absolute for correlations (in [−1, 1]): the same
formulas summed in another order (numpy's pairwise sums against a matrix product)."""

import math
import warnings

import numpy as np
import pytest
import sklearn.metrics as skm
from scipy import stats

from evaluation.metrics import regression as r

TOLERANCE = 1e-12
POOLED = [r.mean_absolute_error, r.root_mean_squared_error, r.r2_score, r.pearson_correlation,
          r.spearman_correlation, r.mean_absolute_percentage_error, r.symmetric_mean_absolute_percentage_error,
          r.mean_normalized_absolute_error]


def generated(seed):
    """True and predicted values with what breaks naive code: ties, repeated values, negative
    values, values crossing zero, a few cases; no zero truth (percentage errors)."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([2, 3, 5, 17, 60]))
    kind = seed % 4
    if kind == 0:  # continuous
        truth = rng.normal(50, 20, n)
        prediction = truth + rng.normal(0, 8, n)
    elif kind == 1:  # few distinct values: ties on both sides
        truth = rng.integers(1, 5, n).astype(float)
        prediction = rng.integers(1, 4, n).astype(float)
    elif kind == 2:  # signs differ
        truth = rng.normal(0, 10, n)
        truth[truth == 0] = 1.0
        prediction = -truth + rng.normal(0, 3, n)
    else:  # counts (whole numbers), prediction often exact
        truth = rng.integers(1, 40, n).astype(float)
        prediction = np.where(rng.random(n) < 0.5, truth, truth + rng.integers(-5, 6, n))
    if len(np.unique(truth)) == 1:
        truth[0] += 1.0
    if len(np.unique(prediction)) == 1:
        prediction[-1] += 1.0
    return truth, prediction


SEEDS = range(40)


@pytest.mark.parametrize("seed", SEEDS)
def test_equals_scikit_learn_with_and_without_weights(seed):
    truth, prediction = generated(seed)
    weights = np.random.default_rng(seed + 1000).uniform(0.1, 3.0, len(truth))
    for ours, theirs, extra in [
        (r.mean_absolute_error, skm.mean_absolute_error, {}),
        (r.root_mean_squared_error, skm.root_mean_squared_error, {}),
        (r.r2_score, skm.r2_score, {"force_finite": False}),
        (r.mean_absolute_percentage_error, skm.mean_absolute_percentage_error, {}),
    ]:
        for sample_weight in (None, weights):
            expected = theirs(truth, prediction, sample_weight=sample_weight, **extra)
            assert ours(truth, prediction, sample_weight=sample_weight) == pytest.approx(expected, rel=TOLERANCE,
                                                                                         abs=1e-14)


@pytest.mark.parametrize("seed", SEEDS)
def test_correlations_equal_scipy(seed):
    truth, prediction = generated(seed)
    if len(truth) < 2:
        pytest.skip("scipy needs two cases")
    assert r.pearson_correlation(truth, prediction) == pytest.approx(stats.pearsonr(truth, prediction).statistic,
                                                                     abs=TOLERANCE)
    assert r.spearman_correlation(truth, prediction) == pytest.approx(stats.spearmanr(truth, prediction).statistic,
                                                                      abs=TOLERANCE)


@pytest.mark.parametrize("seed", SEEDS)
def test_integer_weights_equal_scipy_on_the_repeated_cases(seed):
    truth, prediction = generated(seed)
    counts = np.random.default_rng(seed + 7).integers(0, 4, len(truth))
    counts[0] = max(counts[0], 1)
    counts[-1] = max(counts[-1], 1)
    repeated_truth, repeated_prediction = np.repeat(truth, counts), np.repeat(prediction, counts)
    if len(np.unique(repeated_truth)) < 2 or len(np.unique(repeated_prediction)) < 2:
        pytest.skip("the resample is constant")
    pearson = stats.pearsonr(repeated_truth, repeated_prediction).statistic
    spearman = stats.spearmanr(repeated_truth, repeated_prediction).statistic
    assert r.pearson_correlation(truth, prediction, sample_weight=counts) == pytest.approx(pearson, abs=TOLERANCE)
    assert r.spearman_correlation(truth, prediction, sample_weight=counts) == pytest.approx(spearman, abs=TOLERANCE)
    # Weights are frequencies up to a common factor: halves are the doubled counts.
    assert r.spearman_correlation(truth, prediction, sample_weight=counts / 2) == pytest.approx(spearman,
                                                                                                 abs=TOLERANCE)


def test_weighted_pearson_equals_numpy_weighted_covariance():
    rng = np.random.default_rng(5)
    truth, prediction = rng.normal(size=30), rng.normal(size=30)
    weights = rng.uniform(0.01, 5.0, 30)
    covariance = np.cov(truth, prediction, aweights=weights)
    expected = covariance[0, 1] / math.sqrt(covariance[0, 0] * covariance[1, 1])
    assert r.pearson_correlation(truth, prediction, sample_weight=weights) == pytest.approx(expected, abs=TOLERANCE)


def test_weighted_ranks_are_scipy_average_ranks_of_the_repeated_values():
    values = np.array([3.0, 1.0, 3.0, 2.0, 5.0, 1.0, 3.0])
    counts = np.array([[1, 2, 0, 3, 1, 1, 2], [1, 1, 1, 1, 1, 1, 1]])
    ranks = r.weighted_ranks(values, counts.astype(float))
    for row, count in zip(ranks, counts, strict=True):
        repeated = stats.rankdata(np.repeat(values, count))
        expected = {v: repeated[np.repeat(values, count) == v][0] for v in values[count > 0]}
        assert [row[i] for i in range(len(values)) if count[i]] == [expected[v] for v in values[count > 0]]


@pytest.mark.parametrize("metric", POOLED, ids=lambda f: f.__name__)
def test_a_row_of_bootstrap_counts_equals_the_materialised_resample(metric):
    rng = np.random.default_rng(11)
    truth, prediction = rng.normal(40, 10, 25), rng.normal(40, 10, 25)
    rows = rng.multinomial(25, np.full(25, 1 / 25), size=6)
    values = metric(truth, prediction, sample_weight=rows)
    assert values.shape == (6,)
    for row, value in zip(rows, values, strict=True):
        resample = np.repeat(np.arange(25), row)
        assert value == pytest.approx(metric(truth[resample], prediction[resample]), rel=1e-11, abs=1e-12)
        assert value == pytest.approx(metric(truth, prediction, sample_weight=row), rel=1e-13, abs=1e-14)


def test_constant_truth_and_inputs_are_the_declared_values():
    truth, prediction = np.array([2.0, 2.0, 2.0]), np.array([1.0, 2.0, 4.0])
    assert math.isnan(r.r2_score(truth, prediction))
    assert r.r2_score(truth, prediction, constant_truth=0.0) == 0.0
    assert r.r2_score(truth, truth, constant_truth=1.0) == 1.0  # scikit-learn's force_finite value for a perfect one
    assert skm.r2_score(truth, prediction) == 0.0 and skm.r2_score(truth, truth) == 1.0
    assert math.isnan(r.r2_score([7.0], [1.0]))  # a single case: constant
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        for ours, theirs in [(r.pearson_correlation, stats.pearsonr), (r.spearman_correlation, stats.spearmanr)]:
            for x, y in [(truth, prediction), (prediction, truth)]:
                assert math.isnan(ours(x, y)) and math.isnan(theirs(x, y).statistic)
                assert ours(x, y, constant_input=0.0) == 0.0
    assert math.isnan(r.pearson_correlation([1.0], [2.0]))
    # Constant among the cases that count: a case of weight 0 is absent.
    assert math.isnan(r.pearson_correlation([1.0, 1.0, 5.0], [1.0, 2.0, 3.0], sample_weight=[1, 1, 0]))
    assert math.isnan(r.r2_score([1.0, 1.0, 5.0], [1.0, 2.0, 3.0], sample_weight=[2, 1, 0]))
    both = r.r2_score([1.0, 1.0, 5.0], [1.0, 2.0, 3.0], sample_weight=[[2, 1, 0], [1, 1, 1]])
    assert math.isnan(both[0]) and both[1] == pytest.approx(skm.r2_score([1.0, 1.0, 5.0], [1.0, 2.0, 3.0]))


def constant_truth_cases(seed):
    """Whole numbers (their means are exact, as scikit-learn's constant test needs): a constant
    truth half the time, an exact prediction half the time, down to a single case."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 3, 5, 17]))
    truth = np.full(n, float(rng.integers(-5, 40))) if rng.random() < 0.5 else rng.integers(-5, 40, n).astype(float)
    prediction = truth.copy() if rng.random() < 0.5 else truth + rng.integers(-3, 4, n)
    return truth, prediction


@pytest.mark.parametrize("seed", range(60))
def test_constant_truth_sklearn_is_scikit_learns_force_finite_rule(seed):
    """constant_truth="sklearn" against scikit-learn's r2_score with its default force_finite=True,
    constant and non-constant truths, exact and inexact predictions, one case (scikit-learn warns
    and gives NaN), whole-number weights >= 1 on two cases or more (scikit-learn counts rows, we
    count weight: one case of weight 2 is two cases here)."""
    truth, prediction = constant_truth_cases(seed)
    weights = np.random.default_rng(seed + 500).integers(1, 4, len(truth)).astype(float)
    for sample_weight in (None, weights) if len(truth) > 1 else (None,):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn's UndefinedMetricWarning for one sample
            expected = skm.r2_score(truth, prediction, sample_weight=sample_weight)
        ours = r.r2_score(truth, prediction, sample_weight=sample_weight, constant_truth="sklearn")
        assert ours == pytest.approx(expected, rel=TOLERANCE, abs=1e-14, nan_ok=True), (truth, prediction)


def test_constant_truth_sklearn_rows_of_counts_are_their_resamples():
    """A bootstrap row equals scikit-learn on the materialised resample, constant resamples and a
    single case drawn once (NaN) or twice (two samples: 1.0 or 0.0) included."""
    truth, prediction = np.array([4.0, 4.0, 9.0, 4.0]), np.array([4.0, 5.0, 9.0, 4.0])
    rows = np.array([[1, 1, 1, 1], [2, 0, 0, 1], [0, 3, 0, 0], [1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0],
                     [2, 1, 0, 0], [0, 1, 1, 0]])
    values = r.r2_score(truth, prediction, sample_weight=rows, constant_truth="sklearn")
    for row, value in zip(rows, values, strict=True):
        drawn = np.repeat(np.arange(4), row)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = skm.r2_score(truth[drawn], prediction[drawn]) if len(drawn) else math.nan
        assert value == pytest.approx(expected, rel=TOLERANCE, nan_ok=True), row
    assert values[1:6].tolist()[:2] == [1.0, 0.0] and math.isnan(values[3]) and values[4] == 1.0


def test_constant_truth_sklearn_differs_where_documented():
    """Rows given with a total weight below 2: scikit-learn counts two samples, we one case. A
    constant truth whose mean rounds: scikit-learn divides by a total sum of squares of ~6e-34."""
    assert skm.r2_score([3.0, 5.0], [3.0, 4.0], sample_weight=[1.0, 0.0]) == 1.0
    assert math.isnan(r.r2_score([3.0, 5.0], [3.0, 4.0], sample_weight=[1.0, 0.0], constant_truth="sklearn"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert math.isnan(skm.r2_score([3.0], [4.0], sample_weight=[2.0]))
    assert r.r2_score([3.0], [4.0], sample_weight=[2.0], constant_truth="sklearn") == 0.0
    tenths = np.array([0.1, 0.1, 0.1])
    assert skm.r2_score(tenths, [0.1, 0.1, 0.2]) < -1e30
    assert r.r2_score(tenths, [0.1, 0.1, 0.2], constant_truth="sklearn") == 0.0
    assert r.r2_score(tenths, tenths, constant_truth="sklearn") == 1.0 == skm.r2_score(tenths, tenths)
    # the default stays NaN, and a number stays that number
    assert math.isnan(r.r2_score(tenths, [0.1, 0.1, 0.2]))
    assert r.r2_score(tenths, tenths, constant_truth=0.5) == 0.5


def test_perfect_and_anti_correlation_stay_within_one():
    x = np.linspace(0.1, 0.3, 7) * 1e-3
    shifted = 4 * x + 1e6  # the shift costs digits of the deviations: scipy loses the same
    assert r.pearson_correlation(x, shifted) == pytest.approx(stats.pearsonr(x, shifted).statistic, abs=1e-12)
    assert 1.0 - 1e-15 <= r.pearson_correlation(x, 2 * x) <= 1.0
    assert -1.0 <= r.pearson_correlation(x, -x) <= -1.0 + 1e-15
    assert r.spearman_correlation(x, np.exp(x)) == 1.0


def test_percentage_errors_by_brute_force():
    truth = np.array([10.0, -4.0, 0.0, 2.5, 0.0, 100.0])
    prediction = np.array([12.0, 4.0, 3.0, 2.5, 0.0, 50.0])
    ape = r.absolute_percentage_error(truth, prediction)
    smape = r.symmetric_absolute_percentage_error(truth, prediction)
    bounded = r.symmetric_absolute_percentage_error(truth, prediction, denominator="sum")
    nae = r.normalized_absolute_error(truth, prediction)
    for i, (t, p) in enumerate(zip(truth, prediction, strict=True)):
        if t == 0:
            assert math.isnan(ape[i])
        else:
            assert ape[i] == pytest.approx(abs(p - t) / abs(t), rel=1e-15)
        if t == 0 and p == 0:
            assert smape[i] == bounded[i] == nae[i] == 0.0
        else:
            assert smape[i] == pytest.approx(abs(p - t) / ((abs(p) + abs(t)) / 2), rel=1e-15)
            assert bounded[i] == pytest.approx(abs(p - t) / (abs(p) + abs(t)), rel=1e-15)
            assert nae[i] == pytest.approx(abs(p - t) / max(abs(p), abs(t)), rel=1e-15)
    assert list(r.absolute_percentage_error(truth, prediction, zero_truth=1.0)[[2, 4]]) == [1.0, 1.0]
    assert math.isnan(r.mean_absolute_percentage_error(truth, prediction))
    weights = np.array([1.0, 2.0, 0.0, 1.0, 0.0, 1.0])  # the zero truths weigh nothing: absent
    assert r.mean_absolute_percentage_error(truth, prediction, sample_weight=weights) == pytest.approx(
        (0.2 + 2 * 2.0 + 0.0 + 0.5) / 5, rel=1e-15)
    assert r.symmetric_mean_absolute_percentage_error(truth, prediction) == pytest.approx(np.mean(smape), rel=1e-15)
    assert r.symmetric_mean_absolute_percentage_error(truth, prediction, denominator="sum", both_zero=1.0) == (
        pytest.approx(np.mean(np.where((truth == 0) & (prediction == 0), 1.0, bounded)), rel=1e-15))
    assert r.mean_normalized_absolute_error(truth, prediction, sample_weight=weights) == pytest.approx(
        np.average(nae, weights=weights), rel=1e-15)


def test_normalized_absolute_error_is_acouslic_ai_s():
    # ACOUSLIC-AI: |AC_gt − AC_pred| / max(AC_gt, AC_pred, 1e-6) for positive circumferences in mm.
    rng = np.random.default_rng(2)
    truth, prediction = rng.uniform(150, 350, 50), rng.uniform(150, 350, 50)
    theirs = [abs(t - p) / max(t, p, 1e-6) for t, p in zip(truth, prediction, strict=True)]
    assert np.allclose(r.normalized_absolute_error(truth, prediction), theirs, rtol=1e-15, atol=0)
    assert r.mean_normalized_absolute_error(truth, prediction) == pytest.approx(np.mean(theirs), rel=1e-14)


def test_mape_differs_from_scikit_learn_only_at_a_zero_truth():
    truth, prediction = np.array([0.0, 2.0]), np.array([1.0, 3.0])
    assert skm.mean_absolute_percentage_error(truth, prediction) > 1e15  # divides by the machine epsilon
    assert math.isnan(r.mean_absolute_percentage_error(truth, prediction))
    assert r.mean_absolute_percentage_error(truth, prediction, zero_truth=1.0) == 0.75


@pytest.mark.parametrize("metric", POOLED, ids=lambda f: f.__name__)
def test_bad_arguments_raise_value_errors_naming_the_problem(metric):
    good = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="one length"):
        metric(good, good[:2])
    with pytest.raises(ValueError, match="y_pred must be finite"):
        metric(good, np.array([1.0, np.nan, 3.0]))
    with pytest.raises(ValueError, match="y_true must be finite"):
        metric(np.array([1.0, np.inf, 3.0]), good)
    with pytest.raises(ValueError, match="1-D"):
        metric(good[:, None], good[:, None])
    assert np.isnan(metric([], []))  # no case: a mean of nothing, undefined (as every family)
    with pytest.raises(ValueError, match="one weight per case"):
        metric(good, good, sample_weight=[1.0, 1.0])
    with pytest.raises(ValueError, match=">= 0"):
        metric(good, good, sample_weight=[1.0, -1.0, 1.0])
    assert np.isnan(metric(good, good, sample_weight=[[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])[1])
    with pytest.raises(ValueError, match="must hold numbers"):
        metric(good, ["a", "b", "c"])


def test_bad_policy_arguments():
    good = np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="denominator must be one of"):
        r.symmetric_mean_absolute_percentage_error(good, good, denominator="max")
    with pytest.raises(ValueError, match="zero_truth must be a number"):
        r.mean_absolute_percentage_error(good, good, zero_truth="skip")
    with pytest.raises(ValueError, match="constant_truth must be a number"):
        r.r2_score(good, good, constant_truth=None)
    for wrong in ("force_finite", "Sklearn", True):
        with pytest.raises(ValueError, match='constant_truth must be a number, NaN or "sklearn"'):
            r.r2_score(good, good, constant_truth=wrong)


def test_a_case_of_weight_zero_is_absent_whatever_its_error():
    truth, prediction = np.array([0.0, 2.0, 4.0]), np.array([1.0, 3.0, 4.0])
    for zero_truth in (np.inf, np.nan):
        assert r.mean_absolute_percentage_error(truth, prediction, sample_weight=[0, 1, 1],
                                                zero_truth=zero_truth) == 0.25
