"""evaluation.metrics.calibration against independent computations: a brute-force loop over the
bins written from the expected calibration error's definition (Naeini et al. 2015; Guo et al.
2017, eq. 3: Σ_m |B_m| / n · |acc(B_m) − conf(B_m)|, B_m the cases whose confidence lies in
((m − 1) / M, m / M]), scikit-learn's calibration_curve (its bins' means) and brier_score_loss.

Tolerance: 1e-13: the same sums in another order."""

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss as sklearn_brier

from evaluation.metrics.calibration import bin_indices, brier_score_loss, expected_calibration_error


def ece_by_the_definition(y, p, n_bins, confidence="positive"):
    """Equal-width bins (lower, upper] with the edges of np.linspace (0 in the first), one loop."""
    if confidence == "top_label":
        outcome = [float((pi > 0.5) == bool(yi)) for yi, pi in zip(y, p, strict=True)]
        p = [max(pi, 1 - pi) for pi in p]
    else:
        outcome = list(y)
    edges = np.linspace(0, 1, n_bins + 1)
    total = 0.0
    for m in range(n_bins):
        members = [i for i, pi in enumerate(p) if edges[m] < pi <= edges[m + 1] or (m == 0 and pi == 0)]
        if members:
            accuracy = sum(outcome[i] for i in members) / len(members)
            conf = sum(p[i] for i in members) / len(members)
            total += len(members) / len(p) * abs(accuracy - conf)
    return total


def generated(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 7, 50, 300]))
    if seed % 3 == 0:
        p = rng.integers(0, 21, n) / 20  # many exactly on the edges of 10 and 20 bins, 0 and 1
    elif seed % 3 == 1:
        p = rng.beta(0.5, 0.5, n)
    else:
        p = np.full(n, 0.7)  # one value: ties
    y = (rng.random(n) < (p if seed % 2 else p ** 2)).astype(int)
    if seed % 5 == 0:
        y[:] = 1  # a single class present
    return y, p


@pytest.mark.parametrize("n_bins", [1, 2, 10, 15, 20])
@pytest.mark.parametrize("seed", range(30))
def test_ece_equals_the_definition(seed, n_bins):
    y, p = generated(seed)
    for confidence in ("positive", "top_label"):
        expected = ece_by_the_definition(y, p, n_bins, confidence)
        assert expected_calibration_error(y, p, n_bins=n_bins, confidence=confidence) == pytest.approx(
            expected, rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("seed", range(30))
def test_bins_equal_scikit_learn_calibration_curve(seed):
    y, p = generated(seed)
    for n_bins in (5, 10, 20):
        prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, pos_label=1)  # one class present too
        bins = bin_indices(p, n_bins)
        present = np.unique(bins)
        assert np.allclose(prob_true, [y[bins == b].mean() for b in present], rtol=1e-14, atol=0)
        assert np.allclose(prob_pred, [p[bins == b].mean() for b in present], rtol=1e-14, atol=0)


def test_edge_values_fall_in_the_bin_below():
    p = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 0.55])
    assert list(bin_indices(p, 10)) == [0, 0, 4, 8, 9, 5]
    assert list(bin_indices(p, 1)) == [0] * 6
    # One bin: the ECE is |mean(y) − mean(p)|.
    y = np.array([1, 0, 1, 1, 0, 1])
    assert expected_calibration_error(y, p, n_bins=1) == pytest.approx(abs(y.mean() - p.mean()), rel=1e-15)
    assert expected_calibration_error([1, 0], [1.0, 0.0]) == 0.0  # perfectly calibrated and certain
    assert expected_calibration_error([0, 0], [1.0, 1.0]) == 1.0
    # top_label: a tie p = 0.5 decides negative (argmax takes the first class).
    assert expected_calibration_error([0], [0.5], confidence="top_label") == 0.5
    assert expected_calibration_error([1], [0.5], confidence="top_label") == 0.5


@pytest.mark.parametrize("seed", range(10))
def test_weights_are_repetitions_and_rows_are_separate(seed):
    y, p = generated(seed + 100)
    counts = np.random.default_rng(seed).integers(0, 4, len(y))
    counts[0] = 1
    repeated = np.repeat(np.arange(len(y)), counts)
    for metric in (expected_calibration_error, brier_score_loss):
        assert metric(y, p, sample_weight=counts) == pytest.approx(metric(y[repeated], p[repeated]), rel=1e-13,
                                                                  abs=1e-15)
        rows = np.stack([counts, np.ones(len(y))])
        both = metric(y, p, sample_weight=rows)
        assert both.shape == (2,)
        assert both[1] == pytest.approx(metric(y, p), rel=1e-13, abs=1e-15)


@pytest.mark.parametrize("seed", range(30))
def test_brier_equals_scikit_learn(seed):
    y, p = generated(seed)
    weights = np.random.default_rng(seed).uniform(0.1, 2.0, len(y))
    assert brier_score_loss(y, p) == pytest.approx(sklearn_brier(y, p, pos_label=1), rel=1e-13, abs=1e-15)
    assert brier_score_loss(y, p, sample_weight=weights) == pytest.approx(
        sklearn_brier(y, p, sample_weight=weights, pos_label=1), rel=1e-13, abs=1e-15)


def test_bad_arguments_raise_value_errors_naming_the_problem():
    for metric in (expected_calibration_error, brier_score_loss):
        with pytest.raises(ValueError, match="one length"):
            metric([0, 1], [0.5])
        with pytest.raises(ValueError, match=r"in \[0, 1\]"):
            metric([0, 1], [0.5, 1.5])
        with pytest.raises(ValueError, match="y_prob must be finite"):
            metric([0, 1], [0.5, np.nan])
        with pytest.raises(ValueError, match="only 0 and 1"):
            metric([0, 2], [0.5, 0.5])
        assert np.isnan(metric([], []))  # no case: a mean of nothing, undefined (as every family)
    for n_bins in (0, -3, 2.5, True, "10"):
        with pytest.raises(ValueError, match="n_bins must be an integer >= 1"):
            expected_calibration_error([0, 1], [0.2, 0.8], n_bins=n_bins)
    with pytest.raises(ValueError, match="confidence must be one of"):
        expected_calibration_error([0, 1], [0.2, 0.8], confidence="max")
