"""evaluation.metrics.f1 and evaluation.metrics.means, the weighted functions CSV 2026's one
aggregate is built of: per-class F1 against scikit-learn with sample weights, weighted means
against numpy on the materialised samples (each value repeated as often as its weight says)."""

import math

import numpy as np
import pytest
from sklearn.metrics import f1_score

from evaluation.metrics.f1 import per_class_f1
from evaluation.metrics.means import weighted_mean, weighted_sum


@pytest.mark.parametrize("seed", range(12))
def test_per_class_f1_equals_scikit_learn_with_sample_weight(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 25))
    y_true, y_pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
    if seed % 4 == 0:
        y_pred[:] = seed % 2  # one class never predicted
    counts = rng.integers(0, 4, (6, n))
    counts[0] = 1  # the plain score
    counts[1, :] = 0
    counts[1, 0] = n  # one case drawn n times: one class only
    got = per_class_f1(y_true, y_pred, (0, 1), counts)
    assert got.shape == (6, 2)
    for row, weights in zip(got, counts, strict=True):
        if not weights.any():
            continue
        expected = f1_score(y_true, y_pred, labels=[0, 1], average=None, zero_division=0, sample_weight=weights)
        np.testing.assert_allclose(row, expected, rtol=1e-15, atol=1e-15)
    np.testing.assert_array_equal(per_class_f1(y_true, y_pred), got[0])  # no weights: the row of ones
    fractional = rng.random(n)
    expected = f1_score(y_true, y_pred, labels=[0, 1], average=None, zero_division=0, sample_weight=fractional)
    np.testing.assert_allclose(per_class_f1(y_true, y_pred, (0, 1), fractional), expected, rtol=1e-12)


def test_per_class_f1_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="y_true has 3 values, y_pred 2"):
        per_class_f1([0, 1, 0], [0, 1])
    with pytest.raises(ValueError, match="does not weigh 2 cases"):
        per_class_f1([0, 1], [0, 1], sample_weight=np.ones((1, 3)))


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


def test_the_row_of_ones_sums_in_any_order_to_the_same_bits():
    values = np.array([1e16, 1.0, -1e16, 1.0, 3.0])
    ones = np.ones((1, 5), dtype=np.int64)
    assert weighted_sum(values, ones)[0] == 5.0 == weighted_sum(values[::-1], ones)[0]
    assert weighted_sum(values, np.array([[2, 2, 2, 2, 2]]))[0] == pytest.approx(10.0, abs=8.0)  # BLAS: no promise


def test_weighted_sum_refuses_mismatched_weights():
    with pytest.raises(ValueError, match="does not weigh 3 values"):
        weighted_sum(np.ones(3), np.ones((2, 4)))
    with pytest.raises(ValueError, match="does not weigh 3 values"):
        weighted_sum(np.ones(3), np.ones(3))
