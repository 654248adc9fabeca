"""evaluation.metrics.surface against independent brute force: borders by scipy's binary erosion,
neighbour codes by scipy's correlate, all pairwise distances by scipy.spatial.distance.cdist in
the spacing's units, percentiles by numpy. The peers (medpy, DeepMind, MetricsReloaded's
definitions, MONAI) are in tests/test_surface_peers.py."""

import math

import numpy as np
import pytest
from scipy import ndimage
from scipy.spatial.distance import cdist

from evaluation.metrics import surface
from evaluation.metrics.overlap import label_overlap_counts
from evaluation.metrics.surface import (
    average_surface_distance,
    border_voxels,
    hausdorff_distance,
    label_surface_distances,
    neighbour_codes,
    normalized_surface_dice,
    surface_distances,
)

CROSS = ndimage.generate_binary_structure(2, 1)


def reference_border(mask, connectivity=1):
    mask = np.asarray(mask, dtype=bool)
    structure = ndimage.generate_binary_structure(mask.ndim, connectivity)
    return mask & ~ndimage.binary_erosion(mask, structure=structure, border_value=0)


def reference_distances(prediction, truth, spacing=None, connectivity=1):
    """Border voxels' directed distances by brute force (cdist of every pair), C order."""
    bp, bt = reference_border(prediction, connectivity), reference_border(truth, connectivity)
    spacing = np.ones(bp.ndim) if spacing is None else np.asarray(spacing, dtype=float)
    p, t = np.argwhere(bp) * spacing, np.argwhere(bt) * spacing
    if len(p) == 0 or len(t) == 0:
        return np.full(len(p), np.inf), np.full(len(t), np.inf)
    distances = cdist(p, t)
    return distances.min(axis=1), distances.min(axis=0)


def reference_counts(prediction, truth, tolerance):
    """(prediction border pixels within τ, their number, truth border pixels within τ, their number)."""
    to_truth, to_prediction = reference_distances(prediction, truth)
    return (int((to_truth <= tolerance).sum()), len(to_truth), int((to_prediction <= tolerance).sum()),
            len(to_prediction))


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
    grid = np.indices(shape)  # an ellipsoid, possibly cut by the image edge
    centre = [rng.uniform(-5, n + 5) for n in shape]
    radii = [rng.uniform(1, max(1.5, n / 2)) for n in shape]
    return sum(((g - c) / r) ** 2 for g, c, r in zip(grid, centre, radii, strict=True)) <= 1


def mask_pairs(seed, ndim, count):
    rng = np.random.default_rng(seed)
    kinds = ("noise", "blobs", "ellipse")
    for k in range(count):
        shape = tuple(int(rng.integers(4, 40 if ndim == 2 else 18)) for _ in range(ndim))
        prediction, truth = random_mask(rng, shape, kinds[k % 3]), random_mask(rng, shape, kinds[(k // 3) % 3])
        if k % 5 == 0:  # a shifted copy: many distances exactly on the grid's steps
            truth = np.roll(prediction, int(rng.integers(-3, 4)), axis=int(rng.integers(0, ndim)))
        if k % 7 == 0:  # one voxel thick
            prediction = np.zeros(shape, dtype=bool)
            prediction[(slice(None),) + tuple(int(rng.integers(0, n)) for n in shape[1:])] = True
        yield prediction, truth, tuple(float(s) for s in rng.uniform(0.3, 3.0, ndim))


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", range(8))
def test_border_voxels_are_mask_minus_erosion(ndim, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(rng.integers(1, 12 if ndim < 4 else 6)) for _ in range(ndim))
    mask = random_mask(rng, shape, ("noise", "blobs", "ellipse")[seed % 3])
    for connectivity in range(1, ndim + 1):
        np.testing.assert_array_equal(border_voxels(mask, connectivity), reference_border(mask, connectivity))


def test_border_of_a_full_image_is_its_frame():
    expected = np.ones((5, 6), dtype=bool)
    expected[1:-1, 1:-1] = False
    np.testing.assert_array_equal(border_voxels(np.ones((5, 6), dtype=bool)), expected)


@pytest.mark.parametrize("ndim", [2, 3])
def test_neighbour_codes_are_deepminds_correlation(ndim):
    """Each cell's code is the correlation of the mask, padded with background, with the kernel of
    powers of two (corner (0, 0, 0) the highest bit)."""
    rng = np.random.default_rng(ndim)
    kernel = (2 ** np.arange(2 ** ndim)[::-1]).reshape((2,) * ndim)
    for _ in range(10):
        mask = rng.random(tuple(int(rng.integers(1, 9)) for _ in range(ndim))) < 0.5
        padded = np.pad(mask, [(0, 1)] * ndim).astype(np.int64)
        expected = ndimage.correlate(padded, kernel, mode="constant", cval=0)
        np.testing.assert_array_equal(neighbour_codes(mask), expected)


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_voxel_distances_equal_brute_force_with_spacing(ndim, seed):
    for prediction, truth, spacing in mask_pairs(100 * ndim + seed, ndim, 6):
        for connectivity in (1, ndim):
            result = surface_distances(prediction, truth, spacing, connectivity=connectivity)
            to_truth, to_prediction = reference_distances(prediction, truth, spacing, connectivity)
            np.testing.assert_allclose(result.prediction_to_truth, to_truth, rtol=1e-12)
            np.testing.assert_allclose(result.truth_to_prediction, to_prediction, rtol=1e-12)
            assert result.prediction_areas is None and result.truth_areas is None


@pytest.mark.parametrize("boundary", ["voxels", "surfels"])
@pytest.mark.parametrize("ndim", [2, 3])
def test_every_way_to_the_nearest_element_gives_the_same_bits(boundary, ndim):
    """The three ways to the nearest element (looking around, a KD-tree, a distance transform)
    agree exactly: each recomputes the length from the integer offset to the nearest element."""
    for prediction, truth, spacing in mask_pairs(7 + ndim, ndim, 10):
        if not prediction.any() or not truth.any():
            continue
        crops = (prediction, truth, np.asarray(spacing), boundary, 1, math.nan)
        by_lookup = surface._distances_of_crops(*crops)
        for method in ("tree", "transform"):
            other = surface._distances_of_crops(*crops, method=method)
            np.testing.assert_array_equal(by_lookup.prediction_to_truth, other.prediction_to_truth)
            np.testing.assert_array_equal(by_lookup.truth_to_prediction, other.truth_to_prediction)


@pytest.mark.parametrize("far_points", [10, 3600])
def test_far_surfaces_by_each_way_equal_brute_force(far_points):
    """Surfaces far apart: the KD-tree's bounded search finds nothing near, then searches again
    without a bound (few points) or takes the distance transform (many): still exact."""
    prediction = np.zeros((62, 62, 40), dtype=bool)
    truth = np.zeros((62, 62, 40), dtype=bool)
    side = math.isqrt(far_points)
    prediction[1:1 + side, 1:1 + side, 0] = True  # a plate of `far_points` voxels
    truth[30, 30, 39] = True
    truth[31, 30, 39] = True
    assert surface.KD_TREE_SHARE * prediction.size > 2 * far_points  # the tree is chosen
    spacing = (0.9, 1.1, 1.3)
    result = surface_distances(prediction, truth, spacing)
    to_truth, to_prediction = reference_distances(prediction, truth, spacing)
    np.testing.assert_allclose(result.prediction_to_truth, to_truth, rtol=1e-12)
    np.testing.assert_allclose(result.truth_to_prediction, to_prediction, rtol=1e-12)
    assert to_truth.min() > surface.FAR_BOUND_IN_VOXELS * 1.3


@pytest.mark.parametrize("ndim", [2, 3])
def test_metrics_of_border_voxels_equal_their_brute_force_definitions(ndim):
    for prediction, truth, spacing in mask_pairs(40 + ndim, ndim, 12):
        to_truth, to_prediction = reference_distances(prediction, truth, spacing)
        if len(to_truth) == 0 or len(to_prediction) == 0:
            continue
        both = np.concatenate([to_truth, to_prediction])
        for percentile in (100, 95, 50, 0, 99.5):
            assert hausdorff_distance(prediction, truth, spacing, percentile) == pytest.approx(
                max(np.percentile(to_truth, percentile), np.percentile(to_prediction, percentile)), rel=1e-12)
            assert hausdorff_distance(prediction, truth, spacing, percentile, combine="pooled") == pytest.approx(
                np.percentile(both, percentile), rel=1e-12)
        assert average_surface_distance(prediction, truth, spacing) == pytest.approx(
            (to_truth.mean() + to_prediction.mean()) / 2, rel=1e-12)
        assert average_surface_distance(prediction, truth, spacing, combine="pooled") == pytest.approx(
            both.mean(), rel=1e-12)
        for tolerance in (0.0, 0.5, 1.0, 2.0, 3.3):
            limit = tolerance * tolerance * (1 + 1e-9)
            expected = ((to_truth ** 2 <= limit).sum() + (to_prediction ** 2 <= limit).sum()) / len(both)
            assert normalized_surface_dice(prediction, truth, tolerance, spacing, boundary="voxels") == pytest.approx(
                expected, rel=1e-12)


def test_the_result_object_gives_every_metric_from_one_call():
    prediction, truth, spacing = next(mask_pairs(5, 3, 1))
    distances = surface_distances(prediction, truth, spacing, boundary="surfels")
    assert distances.hausdorff_distance(95) == hausdorff_distance(prediction, truth, spacing, 95, boundary="surfels")
    assert distances.average_surface_distance("pooled") == average_surface_distance(
        prediction, truth, spacing, boundary="surfels", combine="pooled")
    assert distances.normalized_surface_dice(2.0) == normalized_surface_dice(prediction, truth, 2.0, spacing)


@pytest.mark.parametrize("boundary", ["voxels", "surfels"])
def test_2d_nsd_by_dilation_equals_nsd_by_distances(boundary):
    """In 2D the NSD is counted by dilating each surface by the disk of offsets within τ (OpenCV):
    the same decisions, bit for bit, as comparing nearest distances with τ."""
    for k, (prediction, truth, spacing) in enumerate(mask_pairs(77, 2, 30)):
        spacing = (1.0, 1.0) if k % 2 else spacing
        distances = surface_distances(prediction, truth, spacing, boundary=boundary)
        for tolerance in (0.0, 1.0, 1.5, 2.0, 3.0, 2.2360679775, 4.7):
            assert normalized_surface_dice(prediction, truth, tolerance, spacing, boundary=boundary) == \
                distances.normalized_surface_dice(tolerance)


# ---- the 2D NSD of border pixels (CSV 2026's) and its tie rule ------------------------------------


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
        assert normalized_surface_dice(prediction, truth, tolerance, boundary="voxels") == pytest.approx(
            reference_nsd(prediction, truth, tolerance), abs=1e-15)


def test_shifted_square_puts_many_distances_exactly_on_the_tolerance():
    truth = np.zeros((40, 40), dtype=bool)
    truth[10:25, 10:25] = True
    prediction = np.roll(truth, 3, axis=1)
    # Distances of exactly 3 px occur: at τ = 3 they count, just below they do not.
    assert normalized_surface_dice(prediction, truth, 3, boundary="voxels") == reference_nsd(prediction, truth, 3) == 1
    below = normalized_surface_dice(prediction, truth, 3 - 1e-6, boundary="voxels")
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
    assert normalized_surface_dice(prediction, truth, tolerance, boundary="voxels") == expected


@pytest.mark.parametrize("spacing, offset, tolerance", [
    ((0.98, 0.98, 3.0), (0, 2, 0), 1.96),  # 2 voxels of 0.98 mm: 1.96 mm, exactly at τ
    ((0.98, 0.98, 3.0), (0, 0, 1), 3.0),
    ((0.7, 0.7, 0.7), (1, 1, 1), 0.7 * math.sqrt(3)),
    ((0.2, 0.2, 0.2), (0, 6, 8), 2.0),  # 0.2 mm voxels, (1.2, 1.6) mm: 2 mm exactly, rounded otherwise
])
def test_anisotropic_distances_exactly_at_the_tolerance_count(spacing, offset, tolerance):
    prediction = np.zeros((12, 12, 12), dtype=bool)
    truth = np.zeros((12, 12, 12), dtype=bool)
    prediction[2, 2, 2] = True
    truth[2 + offset[0], 2 + offset[1], 2 + offset[2]] = True
    assert normalized_surface_dice(prediction, truth, tolerance, spacing, boundary="voxels") == 1.0
    assert normalized_surface_dice(prediction, truth, tolerance * (1 - 1e-8), spacing, boundary="voxels") == 0.0


@pytest.mark.parametrize("spacing, shift, tolerance", [((0.98, 0.98, 3.0), 2, 1.96), ((0.2, 0.2, 0.2), 10, 2.0),
                                                       ((0.7, 1.1, 0.3), 7, 2.1)])
def test_surfels_exactly_at_the_tolerance_count(spacing, shift, tolerance):
    """A box shifted along the last axis: many surfel distances are shift × spacing exactly."""
    truth = np.zeros((9, 10, 30), dtype=bool)
    truth[2:7, 3:8, 4:15] = True
    prediction = np.roll(truth, shift, axis=2)
    distances = surface_distances(prediction, truth, spacing, boundary="surfels")
    on_tolerance = np.isclose(distances.prediction_to_truth, tolerance, rtol=1e-12, atol=0)
    assert on_tolerance.any()
    at = normalized_surface_dice(prediction, truth, tolerance, spacing)
    assert at == normalized_surface_dice(prediction, truth, tolerance * (1 + 1e-12), spacing)
    assert at > normalized_surface_dice(prediction, truth, tolerance * (1 - 1e-8), spacing)


# ---- empty masks, per label, bad arguments ------------------------------------------------------


def test_empty_masks_take_the_policies():
    empty = np.zeros((10, 12), dtype=bool)
    full = empty.copy()
    full[2:5, 2:5] = True
    spacing = (0.5, 2.0)
    diagonal = math.hypot(10 * 0.5, 12 * 2.0)
    for boundary in ("voxels", "surfels"):
        assert normalized_surface_dice(empty, empty, 3, boundary=boundary) == 1.0
        assert normalized_surface_dice(full, empty, 3, boundary=boundary) == 0.0
        assert normalized_surface_dice(empty, full, 3, boundary=boundary) == 0.0
        assert normalized_surface_dice(full, empty, 3, boundary=boundary, truth_empty=math.nan) != 0.0
        assert hausdorff_distance(empty, empty, spacing, boundary=boundary) == 0.0
        assert math.isnan(hausdorff_distance(full, empty, spacing, boundary=boundary))
        assert math.isnan(average_surface_distance(empty, full, spacing, boundary=boundary))
        assert hausdorff_distance(full, empty, spacing, boundary=boundary, truth_empty="diagonal") == diagonal
        assert hausdorff_distance(empty, full, spacing, boundary=boundary, prediction_empty=373.0) == 373.0
        assert average_surface_distance(empty, empty, spacing, boundary=boundary, both_empty="diagonal") == diagonal
        result = surface_distances(full, empty, spacing, boundary=boundary)
        assert result.empty_case == "truth_empty" and np.isinf(result.prediction_to_truth).all()
        assert result.truth_to_prediction.size == 0


def test_label_surface_distances_equal_each_labels_masks():
    rng = np.random.default_rng(11)
    prediction = rng.integers(0, 5, (14, 12, 10)).astype(np.uint16) * (rng.random((14, 12, 10)) < 0.3)
    truth = ndimage.median_filter(rng.integers(0, 5, (14, 12, 10)), size=3).astype(np.int32)
    truth[0, 0, 0] = 7  # a label nobody asks about
    spacing = (1.5, 0.8, 2.5)
    for boundary in ("voxels", "surfels"):
        per_label = label_surface_distances(prediction, truth, [4, 1, 2, 3, 9], spacing, boundary=boundary)
        assert list(per_label) == [4, 1, 2, 3, 9]
        for label, result in per_label.items():
            expected = surface_distances(prediction == label, truth == label, spacing, boundary=boundary)
            for field in ("prediction_to_truth", "truth_to_prediction", "prediction_areas", "truth_areas"):
                np.testing.assert_array_equal(getattr(result, field), getattr(expected, field))
        assert per_label[9].empty_case == "both_empty"
        # the counts a caller made already for the overlap metrics: the same distances, one pass fewer
        counts = label_overlap_counts(prediction, truth, [4, 1, 2, 3, 9])
        given = label_surface_distances(prediction, truth, [4, 1, 2, 3, 9], spacing, boundary=boundary, counts=counts)
        for label, result in per_label.items():
            for field in ("prediction_to_truth", "truth_to_prediction", "prediction_areas", "truth_areas"):
                np.testing.assert_array_equal(getattr(given[label], field), getattr(result, field))
    with pytest.raises(ValueError, match="label_overlap_counts of these"):
        label_surface_distances(prediction, truth, [1, 2], spacing, counts=label_overlap_counts(prediction, truth, [1]))


@pytest.mark.parametrize("call, message", [
    (lambda p, t: hausdorff_distance(p, t[:, :5]), "differ in shape"),
    (lambda p, t: hausdorff_distance(p, t, spacing=(1.0,)), "one number per axis"),
    (lambda p, t: hausdorff_distance(p, t, spacing=(1.0, 0.0)), "finite and > 0"),
    (lambda p, t: hausdorff_distance(p, t, spacing=(1.0, -2.0)), "finite and > 0"),
    (lambda p, t: hausdorff_distance(p, t, spacing=(1.0, math.nan)), "finite and > 0"),
    (lambda p, t: hausdorff_distance(p, t, spacing="ab"), "one number per axis"),
    (lambda p, t: hausdorff_distance(p, t, percentile=101), r"percentile must lie in \[0, 100\]"),
    (lambda p, t: hausdorff_distance(p, t, percentile=-1), "percentile"),
    (lambda p, t: hausdorff_distance(p, t, percentile=math.nan), "percentile"),
    (lambda p, t: hausdorff_distance(p, t, combine="mean"), "combine must be one of"),
    (lambda p, t: average_surface_distance(p, t, combine="max"), "combine must be one of"),
    (lambda p, t: hausdorff_distance(p, t, boundary="edges"), "boundary must be one of"),
    (lambda p, t: hausdorff_distance(p, t, connectivity=3), r"connectivity must be an integer in \[1, 2\]"),
    (lambda p, t: hausdorff_distance(p, t, connectivity=2.0), "connectivity must be an integer"),
    (lambda p, t: hausdorff_distance(p, t, connectivity=0), "connectivity"),
    (lambda p, t: hausdorff_distance(p, t, boundary="surfels", connectivity=2), "voxels\" only"),
    (lambda p, t: hausdorff_distance(p, t, truth_empty="huge"), "truth_empty must be a number"),
    (lambda p, t: normalized_surface_dice(p, t, -1), "tolerance must be a finite number >= 0"),
    (lambda p, t: normalized_surface_dice(p, t, math.nan), "tolerance"),
    (lambda p, t: normalized_surface_dice(p, t, 1, both_empty="diagonal"), "both_empty must be a number"),
    (lambda p, t: normalized_surface_dice(p[None, None], t[None, None], 1), "surfels\" is defined in 2D and 3D"),
    (lambda p, t: surface_distances(p.astype(float) * math.nan, t), "prediction holds NaN"),
    (lambda p, t: label_surface_distances(p.astype(float), t, [1]), "label map of integers"),
])
def test_bad_arguments_raise_value_errors_naming_the_problem(call, message):
    prediction = np.zeros((6, 6), dtype=bool)
    prediction[1:3, 1:3] = True
    truth = np.roll(prediction, 2, axis=0)
    with pytest.raises(ValueError, match=message):
        call(prediction, truth)
