"""evaluation.metrics.aggregation against numpy and pandas on the materialised samples (each value
repeated as often as its weight says): weighted sums and means (CSV 2026's one aggregate is built
of them), the weighted median, pandas' describe, describe's quartiles against Python's
statistics.quantiles (ULS23's), rounding before aggregating, the mean over labels."""

import math
import statistics

import numpy as np
import pandas as pd
import pytest

from evaluation.metrics.aggregation import describe, mean_over_labels, weighted_mean, weighted_median, weighted_sum


@pytest.mark.parametrize("seed", range(8))
def test_weighted_mean_is_the_mean_of_the_materialised_sample(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    values = rng.random((n, 3)) * 10.0 ** rng.integers(-3, 4, (n, 3))
    counts = rng.integers(0, 5, (10, n))
    counts[0] = 1
    counts[1, 1:] = 0
    counts[1, 0] = 3
    got = weighted_mean(values, counts)
    assert got.shape == (10, 3)
    for row, weights in zip(got, counts, strict=True):
        if weights.sum() == 0:
            assert np.isnan(row).all()
            continue
        np.testing.assert_allclose(row, np.repeat(values, weights, axis=0).mean(axis=0), rtol=1e-13)
    # the row of ones: the correctly rounded sum over n, as metrics.json has it, bit for bit
    assert got[0].tolist() == [math.fsum(values[:, k]) / n for k in range(3)]
    assert weighted_mean(values[:, 0], counts).shape == (10,)
    np.testing.assert_allclose(weighted_mean(values[:, 0], counts), got[:, 0], rtol=1e-14)  # BLAS: gemv, gemm
    assert weighted_mean(values[:, 0]) == math.fsum(values[:, 0]) / n  # no weights: every case once, a float
    np.testing.assert_allclose(weighted_mean(values[:, 0], counts[2]), np.average(values[:, 0], weights=counts[2])
                               if counts[2].sum() else np.nan, rtol=1e-13)


def test_the_row_of_ones_sums_in_any_order_to_the_same_bits():
    values = np.array([1e16, 1.0, -1e16, 1.0, 3.0])
    ones = np.ones((1, 5), dtype=np.int64)
    assert weighted_sum(values, ones)[0] == 5.0 == weighted_sum(values[::-1], ones)[0]
    assert weighted_sum(values, np.array([[2, 2, 2, 2, 2]]))[0] == pytest.approx(10.0, abs=8.0)  # BLAS: no promise


@pytest.mark.parametrize("seed", range(10))
def test_weighted_median_is_numpys_median_of_the_materialised_sample(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    values = np.round(rng.random(n), int(rng.integers(0, 3)))  # ties
    counts = rng.integers(0, 4, (12, n))
    counts[0] = 1
    got = weighted_median(values, counts)
    for median, weights in zip(got, counts, strict=True):
        if weights.sum() == 0:
            assert math.isnan(median)
        else:
            assert median == np.median(np.repeat(values, weights))  # bit for bit
    assert weighted_median(values) == np.median(values)
    assert math.isnan(weighted_median(np.array([1.0, np.nan, 2.0])))


@pytest.mark.parametrize("seed", range(10))
def test_describe_is_pandas_describe_of_the_materialised_sample(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    values = np.round(rng.normal(0.5, 0.3, n), int(rng.integers(1, 4)))
    values[rng.random(n) < 0.1] = np.nan  # pandas leaves NaN out
    counts = rng.integers(0, 4, (8, n))
    counts[0] = 1
    rows = describe(values, counts)
    for summary, weights in zip(rows, counts, strict=True):
        expected = pd.Series(np.repeat(values, weights)).describe()
        if expected["count"] == 0:
            assert summary["count"] == 0 and all(math.isnan(summary[key]) for key in summary if key != "count")
            continue
        assert list(summary) == list(expected.index)
        for key in ("count", "min", "max", "25%", "50%", "75%"):
            assert summary[key] == expected[key] or (math.isnan(summary[key]) and math.isnan(expected[key])), key
        for key in ("mean", "std"):  # pandas sums pairwise, the row of ones here exactly (math.fsum)
            assert summary[key] == pytest.approx(expected[key], rel=1e-12, nan_ok=True), key
    assert describe(values) == rows[0]


@pytest.mark.parametrize("method", ["exclusive", "inclusive"])
@pytest.mark.parametrize("seed", range(12))
def test_describe_quartiles_are_statistics_quantiles_of_the_materialised_sample(seed, method):
    """Bit for bit: statistics.quantiles(n=4, method=...) of the values repeated as often as each
    row of whole-number weights says, samples of 2 and 3 copies (where 'exclusive' extrapolates)
    and ties included; the rest of the summary is the linear method's."""
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 25))
    values = np.round(rng.normal(0.5, 0.3, n), int(rng.integers(1, 4)))
    values[rng.random(n) < 0.1] = np.nan
    counts = rng.integers(0, 4, (10, n))
    counts[0] = 1
    counts[1] = 0
    counts[1, :2] = 1  # two cases, or one
    counts[2] = 0
    counts[2, 0] = 3  # one case three times
    rows = describe(values, counts, quantile_method=method)
    linear = describe(values, counts)
    compared = 0
    for summary, plain, weights in zip(rows, linear, counts, strict=True):
        copies = [float(v) for v in np.repeat(values, weights) if not math.isnan(v)]
        quartiles = [summary["25%"], summary["50%"], summary["75%"]]
        if len(copies) >= 2:
            assert quartiles == statistics.quantiles(copies, n=4, method=method)
            compared += 1
        elif len(copies) == 1:  # Python 3.13's rule (3.11 raises): the one value
            assert quartiles == copies * 3
        else:
            assert all(math.isnan(q) for q in quartiles)
        np.testing.assert_equal({k: v for k, v in summary.items() if k not in ("25%", "50%", "75%")},
                                {k: v for k, v in plain.items() if k not in ("25%", "50%", "75%")})  # NaN == NaN
    assert compared >= 2
    np.testing.assert_equal(describe(values, quantile_method=method), rows[0])


def test_statistics_quantile_methods_on_small_samples():
    """'exclusive' extrapolates beyond the extremes on few points, 'inclusive' stays within and
    equals the linear rule; the median is the same under all three."""
    two = np.array([1.0, 2.0])
    exclusive = describe(two, quantile_method="exclusive")
    assert [exclusive[k] for k in ("25%", "50%", "75%")] == [0.75, 1.5, 2.25] == statistics.quantiles([1.0, 2.0])
    inclusive = describe(two, quantile_method="inclusive")
    assert [inclusive[k] for k in ("25%", "50%", "75%")] == [1.25, 1.5, 1.75] == list(np.percentile(two, [25, 50, 75]))
    ties = np.array([3.0, 3.0, 3.0, 7.0])
    for method in ("exclusive", "inclusive", "linear"):
        assert describe(ties, quantile_method=method)["50%"] == 3.0
    # a case of weight 2 is its value twice
    assert describe(np.array([1.0, 4.0]), [2, 1], quantile_method="exclusive") == \
        describe(np.array([1.0, 1.0, 4.0]), quantile_method="exclusive")
    assert describe(np.array([5.0]), quantile_method="exclusive")["75%"] == 5.0


def test_fractional_weights_describe_the_weighted_sample():
    values = np.array([1.0, 2.0, 4.0])
    summary = describe(values, [0.5, 1.5, 2.0])
    assert summary["count"] == 4.0 and summary["mean"] == (0.5 + 3.0 + 8.0) / 4
    assert summary["min"] == 1.0 and summary["max"] == 4.0
    assert summary == describe(values * 1.0, np.array([0.5, 1.5, 2.0]))


def test_values_are_rounded_before_aggregating():
    values = np.array([0.124, 0.126, 0.5])
    assert weighted_mean(values, decimals=2) == math.fsum([0.12, 0.13, 0.5]) / 3
    assert weighted_median(values, decimals=1) == 0.1
    assert describe(values, decimals=2)["max"] == 0.5


def test_mean_over_labels_fixed_or_present():
    values = np.array([[0.8, 1.0, 0.2], [0.5, 0.0, 1.0]])
    present = np.array([[True, False, True], [False, False, False]])
    np.testing.assert_array_equal(mean_over_labels(values), [2.0 / 3, 0.5])
    np.testing.assert_array_equal(mean_over_labels(values, present), [0.5, np.nan])
    np.testing.assert_array_equal(mean_over_labels(values, present, none_present=1.0), [0.5, 1.0])
    assert mean_over_labels(values[0]) == 2.0 / 3


@pytest.mark.parametrize("call, message", [
    (lambda: weighted_sum(np.ones(3), np.ones((2, 4))), "one weight per case"),
    (lambda: weighted_mean(np.ones(3), [1, -1, 1]), "finite and >= 0"),
    (lambda: weighted_mean(np.ones(3), [1, np.nan, 1]), "finite and >= 0"),
    (lambda: weighted_mean(["a", "b"]), "values must hold numbers"),
    (lambda: weighted_mean(np.ones(3), decimals=1.5), "decimals must be an integer"),
    (lambda: weighted_median(np.ones((3, 2))), "must be 1-D"),
    (lambda: mean_over_labels(np.ones((2, 3)), np.ones((2, 2), dtype=bool)), "present must be a boolean array"),
    (lambda: describe(np.ones(3), quantile_method="nearest"), "quantile_method must be one of"),
    (lambda: describe(np.ones(3), quantile_method=None), "quantile_method must be one of"),
    (lambda: describe(np.ones(3), [0.5, 1, 1], quantile_method="exclusive"), "sample_weight must hold whole numbers"),
    (lambda: describe(np.ones(3), [[1, 1, 1], [1, 2.5, 0]], quantile_method="inclusive"), "whole numbers"),
])
def test_bad_arguments_are_refused_naming_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_case_of_weight_zero_is_absent_even_when_its_value_is_not_finite():
    """Weight 0 is no copy at all: a NaN or infinite value there leaves the weighted sum and mean
    those of the other cases (0 × NaN would make them NaN), as numpy's mean of the repeated
    values, the weighted median and describe have them."""
    from evaluation.metrics.aggregation import describe, weighted_mean, weighted_sum

    values = np.array([1.0, 2.0, np.nan, np.inf, 4.0])
    weights = np.array([[1, 2, 0, 0, 1], [0, 1, 0, 0, 3], [1, 1, 1, 0, 1], [1, 0, 0, 1, 0]])
    for row in weights:
        repeated = np.repeat(values, row)
        with np.errstate(invalid="ignore"):
            assert weighted_sum(values, row) == pytest.approx(np.sum(repeated), nan_ok=True)
            assert weighted_mean(values, row) == pytest.approx(np.mean(repeated), nan_ok=True)
    rows = weighted_mean(values, weights)
    assert rows[0] == pytest.approx(2.25) and rows[1] == pytest.approx(3.5)
    assert np.isnan(rows[2]) and rows[3] == np.inf
    assert describe(values, weights[1])["mean"] == pytest.approx(3.5)
