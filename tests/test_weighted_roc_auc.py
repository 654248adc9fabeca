"""evaluation.metrics.classification.roc_auc_score (roc_auc_of_orders), the one weighted AUC (ISIC's mean AUC and
CAMELYON16's slide AUC, point value and bootstrap): equal bit for bit to scikit-learn's
roc_auc_score with sample_weight, for whole counts (bootstrap resamples), the row of ones, and
real-valued weights, ties and zero weights included; NaN for a row without both classes."""

import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score as sklearn_roc_auc_score

from evaluation.metrics.classification import (
    ranking_curve,
    ranking_curve_of_order,
    roc_auc,
    roc_auc_of_orders,
    roc_auc_score,
    score_order,
)
from evaluation.metrics.resampling import draws_to_counts


def scikit_learn(y, scores, weights):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one class: NaN and a warning
        return sklearn_roc_auc_score(y, scores, sample_weight=weights)


@pytest.mark.parametrize("seed", range(6))
def test_rows_of_counts_equal_scikit_learn_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    for trial in range(60):
        n = int(rng.integers(1, 80))
        y = rng.random(n) < rng.random()
        scores = rng.random(n).round(int(rng.integers(1, 3))) if trial % 2 else rng.random(n)  # ties, or none
        counts = draws_to_counts(rng.integers(0, n, size=(8, n)), n)
        counts = np.vstack([counts, np.ones((1, n), dtype=np.int64), np.eye(n, dtype=np.int64)[:1] * n])
        got = roc_auc_score(y, scores, counts)
        assert got.shape == (len(counts),)
        for row, value in zip(counts, got, strict=True):
            expected = scikit_learn(y, scores, row)
            assert value == expected or (math.isnan(value) and math.isnan(expected))


def test_real_weights_equal_scikit_learn():
    """Fractional weights: the bits of the single-row curve (scikit-learn 1.7's, which ISIC's
    reference pins: tests/test_isic_parity.py); scikit-learn >= 1.8 orders tied scores the other
    way and may differ in the last bit (whole weights are exact either way)."""
    rng = np.random.default_rng(7)
    for trial in range(300):
        n = int(rng.integers(2, 300))
        y = rng.random(n) < 0.4
        scores = rng.random(n).round(1) if trial % 2 else rng.random(n)
        weights = rng.random(n) * (rng.random(n) < 0.8)  # some zero: left out, as scikit-learn does
        value, expected = roc_auc_score(y, scores, weights), scikit_learn(y, scores, weights)
        assert isinstance(value, float)
        if math.isnan(expected):
            assert math.isnan(value)
            continue
        assert value == roc_auc(ranking_curve(y, scores, weights))
        assert value == pytest.approx(expected, rel=0, abs=1e-15)


def test_rows_of_fractional_weights_equal_the_single_row_auc_bit_for_bit():
    """Rows of counts times fractional item weights (ISIC: a resample times the score weights),
    the first the row of ones: each row's value is the single-row curve's AUC and scikit-learn's."""
    rng = np.random.default_rng(11)
    for trial in range(160):
        n = int(rng.integers(1, 150))
        y = rng.random(n) < rng.random()
        scores = np.round(rng.random(n), int(rng.integers(0, 4)))  # ties within and across classes
        weights = rng.integers(0, 3, size=(6, n)).astype(np.float64)
        if trial % 2:
            weights *= np.round(rng.uniform(0, 2, n), 3)  # fractional weights, some zero
        weights[0] = 1.0
        got = roc_auc_score(y, scores, weights)
        for r, row in enumerate(weights):
            expected = roc_auc(ranking_curve(y, scores, row))
            assert got[r] == expected or (math.isnan(got[r]) and math.isnan(expected)), (trial, r)
            sklearn_value = scikit_learn(y, scores, row)
            assert got[r] == pytest.approx(sklearn_value, rel=0, abs=1e-15, nan_ok=True), (trial, r)


def test_the_curve_of_a_kept_sort_is_the_sorted_curve_bit_for_bit():
    """ranking_curve_of_order (ISIC's curves, and the one-row AUC) against ranking_curve, which
    sorts itself (scikit-learn's _binary_clf_curve, tests/test_isic.py): every weight nonzero or
    some zero, whole or fractional, with ties; negative weights refused."""
    rng = np.random.default_rng(12)
    for trial in range(200):
        n = int(rng.integers(0, 400))
        y = rng.random(n) < rng.random()
        scores = np.round(rng.random(n), int(rng.integers(0, 4)))
        weights = np.ones(n) if trial % 4 == 0 else np.round(rng.uniform(0, 2, n), 3 * (trial % 2))
        if trial % 3 == 0:
            weights[rng.random(n) < 0.3] = 0.0
        ours, theirs = ranking_curve_of_order(score_order(y, scores), weights), ranking_curve(y, scores, weights)
        for a, b in ((ours.fps, theirs.fps), (ours.tps, theirs.tps), (ours.thresholds, theirs.thresholds)):
            np.testing.assert_array_equal(a, b)
            assert not np.signbit(a).any()
    with pytest.raises(ValueError, match="finite and >= 0"):
        ranking_curve_of_order(score_order([0, 1], [0.2, 0.4]), [1.0, -1.0])


def test_an_order_made_with_item_weights_gives_their_curve_once_and_others_fresh():
    """ISIC's sorts carry the score weights: their curve is made once (metrics.json and the point
    value share it, whatever array holds those weights) and is the sorted curve; other weights
    give their own; the one-row AUC through it equals the many-row AUC's row, and scikit-learn."""
    rng = np.random.default_rng(13)
    y, scores = rng.random(500) < 0.3, np.round(rng.random(500), 2)
    item_weights = np.where(rng.random(500) < 0.2, 0.0, 1.0)
    order = score_order(y, scores, item_weights)
    item_weights[:] = 7.0  # the order keeps its own copy
    weights = np.where(order.item_weights > 0, 1.0, 0.0)
    first = ranking_curve_of_order(order, weights)
    assert ranking_curve_of_order(order, weights.copy()) is first is order.item_curve
    expected = ranking_curve(y, scores, weights)
    np.testing.assert_array_equal(first.tps, expected.tps)
    np.testing.assert_array_equal(first.fps, expected.fps)
    assert not first.tps.flags.writeable
    other = weights * 2
    assert ranking_curve_of_order(order, other) is not first
    rows = np.vstack([weights, other, np.ones(500)])
    many = roc_auc_of_orders([order], rows)[:, 0]
    for r, row in enumerate(rows):
        assert roc_auc_of_orders([order], row[None, :])[0, 0] == many[r] == scikit_learn(y, scores, row)


def test_integer_counts_of_any_type_and_all_zero_rows():
    """Counts whose pair totals exceed their own type (int32), and rows of zeros: NaN."""
    rng = np.random.default_rng(8)
    y, scores = rng.random(300) < 0.4, rng.random(300)
    counts = rng.integers(0, 40_000, size=(3, 300)).astype(np.int32)
    counts = np.vstack([counts, np.zeros((1, 300), dtype=np.int32)])
    got = roc_auc_score(y, scores, counts)
    for r, row in enumerate(counts[:3]):
        assert got[r] == scikit_learn(y, scores, row.astype(float))
    assert math.isnan(got[3])
    np.testing.assert_array_equal(got, roc_auc_score(y, scores, counts.astype(np.float64)))
    assert roc_auc_score(y, scores, np.zeros((0, 300))).shape == (0,)


def test_unweighted_is_the_curve_auc():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(2, 100))
        y = rng.random(n) < 0.5
        if y.all() or not y.any():
            continue
        scores = rng.random(n).round(2)
        ours = roc_auc_score(y, scores)
        assert ours == roc_auc(ranking_curve(y, scores, np.ones(n))) == sklearn_roc_auc_score(y, scores)


def test_refuses_bad_input():
    with pytest.raises(ValueError, match="one length"):
        roc_auc_score([0, 1], [0.5])
    with pytest.raises(ValueError, match="only 0 and 1"):
        roc_auc_score([0, 2], [0.5, 0.6])
    with pytest.raises(ValueError, match="finite"):
        roc_auc_score([0, 1], [0.5, np.nan])
    with pytest.raises(ValueError, match="one weight per case"):
        roc_auc_score([0, 1], [0.5, 0.6], np.ones((2, 3)))
    for weights in ([1, -1], [1, np.nan]):
        with pytest.raises(ValueError, match="finite and >= 0"):
            roc_auc_score([0, 1], [0.5, 0.6], weights)
    for max_fpr in (0, -0.1, 1.5, np.nan):
        with pytest.raises(ValueError, match="max_fpr must lie in"):
            roc_auc_score([0, 1], [0.5, 0.6], max_fpr=max_fpr)


def test_given_orders_are_the_sorts_it_would_make():
    """ISIC passes the sorts of its categories it keeps for its curves: the same AUCs, to the bit."""
    rng = np.random.default_rng(5)
    y = rng.random((300, 4)) < 0.3
    scores = rng.random((300, 4)).round(2)  # ties
    counts = draws_to_counts(rng.integers(0, 300, size=(20, 300)), 300)
    orders = [score_order(y[:, label], scores[:, label]) for label in range(4)]
    expected = roc_auc_score(y.astype(int), scores, counts, average=None)
    assert np.array_equal(roc_auc_of_orders(orders, counts), expected, equal_nan=True)
    assert np.array_equal(expected[:, 2], roc_auc_score(y[:, 2].astype(int), scores[:, 2], counts), equal_nan=True)
