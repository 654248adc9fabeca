"""NSD (MetricsReloaded definition) against an independent brute force: borders by scipy's
binary erosion, all pairwise border distances by scipy.spatial.distance.cdist, then `d <= τ`
(exact for the integer τ and the 3-4-5 / √5 distances used here)."""

import math

import numpy as np
import pytest
from scipy import ndimage
from scipy.spatial.distance import cdist

from evaluation.metrics.surface import border, normalized_surface_dice, squared_tolerance, surface_counts

CROSS = ndimage.generate_binary_structure(2, 1)


def reference_border(mask):
    mask = np.asarray(mask, dtype=bool)
    return mask & ~ndimage.binary_erosion(mask, structure=CROSS, border_value=0)


def reference_counts(prediction, truth, tolerance):
    bp, bt = reference_border(prediction), reference_border(truth)
    p, t = np.argwhere(bp), np.argwhere(bt)
    if len(p) == 0 or len(t) == 0:
        return 0, len(p), 0, len(t)
    distances = cdist(p, t)  # Euclidean, pixels
    return (int((distances.min(axis=1) <= tolerance).sum()), len(p),
            int((distances.min(axis=0) <= tolerance).sum()), len(t))


def reference_nsd(prediction, truth, tolerance):
    near_p, n_p, near_t, n_t = reference_counts(prediction, truth, tolerance)
    if n_p + n_t == 0:
        return 1.0
    if n_p == 0 or n_t == 0:
        return 0.0
    return (near_p + near_t) / (n_p + n_t)


def random_mask(rng, shape, kind):
    if kind == "noise":
        return rng.random(shape) < rng.uniform(0.05, 0.6)
    if kind == "blobs":
        field = ndimage.gaussian_filter(rng.standard_normal(shape), sigma=rng.uniform(1.5, 4))
        return field > rng.uniform(-0.05, 0.15)
    yy, xx = np.mgrid[:shape[0], :shape[1]]  # an ellipse, possibly cut by the image edge
    cy, cx = rng.uniform(-5, shape[0] + 5), rng.uniform(-5, shape[1] + 5)
    ry, rx = rng.uniform(1, max(1.5, shape[0] / 2)), rng.uniform(1, max(1.5, shape[1] / 2))
    return ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1


@pytest.mark.parametrize("seed", range(40))
def test_border_is_mask_minus_cross_erosion(seed):
    rng = np.random.default_rng(seed)
    mask = random_mask(rng, (int(rng.integers(1, 30)), int(rng.integers(1, 30))),
                       ("noise", "blobs", "ellipse")[seed % 3])
    np.testing.assert_array_equal(border(mask), reference_border(mask))


def test_border_of_a_full_image_is_its_frame():
    expected = np.ones((5, 6), dtype=bool)
    expected[1:-1, 1:-1] = False
    np.testing.assert_array_equal(border(np.ones((5, 6), dtype=bool)), expected)


@pytest.mark.parametrize("seed", range(60))
def test_nsd_equals_brute_force_on_random_masks(seed):
    rng = np.random.default_rng(1000 + seed)
    shape = (int(rng.integers(8, 48)), int(rng.integers(8, 48)))
    kinds = ("noise", "blobs", "ellipse")
    prediction = random_mask(rng, shape, kinds[seed % 3])
    truth = random_mask(rng, shape, kinds[(seed // 3) % 3])
    if seed % 10 == 0:
        truth = np.roll(prediction, int(rng.integers(-4, 5)), axis=int(rng.integers(0, 2)))  # many exact ties
    for tolerance in (0, 1, 2, 3, 4, 5, 1.5, 7.25):
        assert surface_counts(prediction, truth, tolerance) == reference_counts(prediction, truth, tolerance)
        assert normalized_surface_dice(prediction, truth, tolerance) == pytest.approx(
            reference_nsd(prediction, truth, tolerance), abs=1e-15)


def test_shifted_square_puts_many_distances_exactly_on_the_tolerance():
    truth = np.zeros((40, 40), dtype=bool)
    truth[10:25, 10:25] = True
    prediction = np.roll(truth, 3, axis=1)
    # Distances of exactly 3 px occur: at τ = 3 they count, just below they do not.
    assert normalized_surface_dice(prediction, truth, 3) == reference_nsd(prediction, truth, 3) == 1.0
    below = normalized_surface_dice(prediction, truth, 3 - 1e-6)
    assert below == pytest.approx(reference_nsd(prediction, truth, 3 - 1e-6)) and below < 1.0


@pytest.mark.parametrize("offset, tolerance, expected", [
    ((3, 4), 5, 1.0),  # 3-4-5 triangle: exactly at τ
    ((3, 4), 5 * (1 - 1e-12), 1.0),  # τ off by floating-point noise: still a tie
    ((3, 4), 4.999, 0.0),
    ((4, 3), 5, 1.0),
    ((6, 8), 10, 1.0),
    ((1, 2), math.sqrt(5), 1.0),  # √5 as a float
    ((1, 2), 2.2360679775, 1.0),  # √5 rounded to 10 decimals
    ((1, 2), 2.236, 0.0),
    ((0, 3), 3, 1.0),
    ((0, 4), 3, 0.0),
])
def test_single_pixels_at_the_tolerance(offset, tolerance, expected):
    prediction = np.zeros((12, 12), dtype=bool)
    truth = np.zeros((12, 12), dtype=bool)
    prediction[1, 1] = True
    truth[1 + offset[0], 1 + offset[1]] = True
    assert normalized_surface_dice(prediction, truth, tolerance) == expected


def test_squared_tolerance_rounds_down_after_the_relative_slack():
    assert [squared_tolerance(t) for t in (0, 1, 1.5, 2, 3, math.sqrt(2), math.sqrt(5), 2.2360679775, 2.236)] == \
        [0, 1, 2, 4, 9, 2, 5, 5, 4]


def test_empty_masks():
    empty = np.zeros((10, 10), dtype=bool)
    full = np.zeros((10, 10), dtype=bool)
    full[2:5, 2:5] = True
    assert normalized_surface_dice(empty, empty, 3) == 1.0
    assert normalized_surface_dice(full, empty, 3) == 0.0
    assert normalized_surface_dice(empty, full, 3) == 0.0
    assert surface_counts(full, empty, 3) == (0, 8, 0, 0)


def test_cropping_changes_nothing_away_from_the_edge():
    rng = np.random.default_rng(3)
    prediction, truth = random_mask(rng, (30, 30), "blobs"), random_mask(rng, (30, 30), "ellipse")
    big_p, big_t = np.zeros((70, 80), dtype=bool), np.zeros((70, 80), dtype=bool)
    big_p[20:50, 25:55], big_t[20:50, 25:55] = prediction, truth
    # Padding removes the image edge, so compare with the padded brute force, not the small one.
    assert surface_counts(big_p, big_t, 3) == reference_counts(big_p, big_t, 3)


@pytest.mark.parametrize("prediction, truth, tolerance, message", [
    (np.zeros((4, 4)), np.zeros((4, 5)), 3, "differ in shape"),
    (np.zeros((2, 4, 4)), np.zeros((2, 4, 4)), 3, "must be 2D"),
    (np.zeros((4, 4)), np.zeros((4, 4)), -1, "finite number >= 0"),
    (np.zeros((4, 4)), np.zeros((4, 4)), float("nan"), "finite number >= 0"),
])
def test_bad_arguments(prediction, truth, tolerance, message):
    with pytest.raises(ValueError, match=message):
        normalized_surface_dice(prediction, truth, tolerance)
