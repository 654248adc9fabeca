"""evaluation.metrics.landmarks against brute-force loops of the definitions (math.dist of the
scaled coordinates; counting errors below each threshold), on generated 1D to 4D landmarks with
anisotropic spacing, exact hits, errors exactly on the thresholds, and a bootstrap's rows of counts.

Tolerance: 1e-13 relative: the same sums in another order (and 1e-12 absolute where the loop
scales the coordinates before subtracting them)."""

import math

import numpy as np
import pytest

from evaluation.metrics.landmarks import mean_radial_error, radial_errors, success_detection_rate

ISBI_THRESHOLDS = (2.0, 2.5, 3.0, 4.0)  # mm, the ISBI 2015 cephalometric challenge's


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", range(5))
def test_radial_errors_equal_a_loop_over_math_dist(ndim, seed):
    rng = np.random.default_rng(seed)
    spacing = rng.uniform(0.1, 3.0, ndim)
    truth = rng.uniform(0, 500, (int(rng.integers(1, 40)), ndim))
    prediction = truth + rng.normal(0, 10, truth.shape)
    prediction[0] = truth[0]  # an exact hit
    expected = [math.dist(p * spacing, t * spacing) for p, t in zip(prediction, truth, strict=True)]
    # The loop scales before subtracting: coordinates up to 1500 carry rounding of 1500 × 2^-52.
    assert np.allclose(radial_errors(prediction, truth, spacing), expected, rtol=1e-13, atol=1e-12)
    assert radial_errors(prediction, truth)[1] == pytest.approx(math.dist(prediction[1], truth[1]), rel=1e-15)
    assert mean_radial_error(prediction, truth, spacing) == pytest.approx(np.mean(expected), rel=1e-13)
    weights = rng.uniform(0, 2, len(truth)) + 0.01
    assert mean_radial_error(prediction, truth, spacing, sample_weight=weights) == pytest.approx(
        np.average(expected, weights=weights), rel=1e-13)


def test_isbi_style_success_detection_rate_by_brute_force():
    rng = np.random.default_rng(1)
    pixel = 0.1  # mm, the ISBI 2015 cephalograms'
    truth = rng.uniform(0, 1900, (19 * 25, 2))
    prediction = truth + np.round(rng.normal(0, 15, truth.shape))
    errors = radial_errors(prediction, truth, (pixel, pixel))
    errors[:8] = [2.0, 2.5, 3.0, 4.0, 0.0, 2.0, 4.0, 1.0]  # exactly on thresholds
    for inclusive in (False, True):
        rates = success_detection_rate(errors, ISBI_THRESHOLDS, inclusive=inclusive)
        for rate, threshold in zip(rates, ISBI_THRESHOLDS, strict=True):
            hits = sum(1 for e in errors if (e <= threshold if inclusive else e < threshold))
            assert rate == pytest.approx(hits / len(errors), rel=1e-15)
    assert success_detection_rate([2.0, 1.0], 2.0) == 0.5
    assert success_detection_rate([2.0, 1.0], 2.0, inclusive=True) == 1.0
    assert isinstance(success_detection_rate(errors, 2.0), float)
    assert success_detection_rate(errors, [2.0]).shape == (1,)


def test_weights_and_rows_of_counts_equal_the_resample():
    rng = np.random.default_rng(4)
    errors = rng.integers(0, 24, 30) / 4.0
    rows = rng.multinomial(30, np.full(30, 1 / 30), size=5)
    rates = success_detection_rate(errors, ISBI_THRESHOLDS, sample_weight=rows)
    assert rates.shape == (5, 4)
    for row, rate in zip(rows, rates, strict=True):
        resample = np.repeat(errors, row)
        assert np.allclose(rate, [np.mean(resample < t) for t in ISBI_THRESHOLDS], rtol=1e-14, atol=0)
    assert success_detection_rate(errors, 3.0, sample_weight=rows).shape == (5,)
    points = rng.uniform(0, 99, (30, 3))
    moved = points + rng.normal(0, 2, points.shape)
    values = mean_radial_error(moved, points, (0.5, 0.5, 2.0), sample_weight=rows)
    for row, value in zip(rows, values, strict=True):
        resample = np.repeat(np.arange(30), row)
        assert value == pytest.approx(mean_radial_error(moved[resample], points[resample], (0.5, 0.5, 2.0)),
                                      rel=1e-13)


def test_bad_arguments_raise_value_errors_naming_the_problem():
    points = np.zeros((3, 2))
    with pytest.raises(ValueError, match="one shape"):
        radial_errors(points, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="one shape"):
        radial_errors(points, np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"\(n, ndim\)"):
        radial_errors(np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="prediction must be finite"):
        radial_errors(np.array([[0.0, np.nan]]), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="one number per axis"):
        radial_errors(points, points, spacing=(1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="> 0"):
        mean_radial_error(points, points, spacing=(1.0, 0.0))
    assert np.isnan(mean_radial_error(np.zeros((0, 2)), np.zeros((0, 2))))  # no landmark: a mean of nothing
    with pytest.raises(ValueError, match="thresholds"):
        success_detection_rate([1.0], [-1.0])
    with pytest.raises(ValueError, match="thresholds must be finite"):
        success_detection_rate([1.0], [np.nan])
    with pytest.raises(ValueError, match="thresholds"):
        success_detection_rate([1.0], [[1.0]])
    with pytest.raises(ValueError, match="errors must be >= 0"):
        success_detection_rate([-1.0], 2.0)
    with pytest.raises(ValueError, match="inclusive must be True or False"):
        success_detection_rate([1.0], 2.0, inclusive="yes")
    assert radial_errors(np.zeros((0, 3)), np.zeros((0, 3))).shape == (0,)
