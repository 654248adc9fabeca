"""evaluation.metrics.surface against the libraries organizers use, on their own test cases and on
generated edge cases (empty and one-empty masks, structures touching the image border, one voxel
thick, shifted copies putting many distances exactly on the grid, 2D and 3D, anisotropic spacing):

- medpy 0.5.2 (border voxels): hd, hd95 (pooled), assd (pooled in 0.5), asd, at connectivity 1..ndim;
- DeepMind surface-distance 0.1 (surfels): the distances and areas themselves, the robust
  Hausdorff distance, the average surface distances and the surface Dice; its own test cases;
  its surfel area table rebuilt from scikit-image's marching cubes (our table's origin);
- MetricsReloaded (not on PyPI): its definitions written out here from its source
  (MetricsReloaded/metrics/pairwise_measures.py, border_distance, measured_distance,
  normalised_surface_distance): border = mask − binary_erosion(mask) with scipy's default cross,
  distance maps by scipy's EDT with the spacing; HD = max, HD at a percentile = the larger of the
  two directed numpy percentiles, ASSD pooled, MASD the mean of the two means, NSD with d <= τ;
- MONAI (optional: skipped with the reason when torch is absent): compute_hausdorff_distance,
  compute_average_surface_distance(symmetric=True) and compute_surface_dice, whose distances
  are float32 (relative tolerance 1e-6 for that rounding).

Tolerances: 1e-12 relative where only the summation order differs (areas summed in another
order than DeepMind's sorted one); exact where the same floats are compared.
"""

import math

import numpy as np
import pytest
from scipy import ndimage

from evaluation.metrics import surface
from evaluation.metrics.surface import (
    average_surface_distance,
    hausdorff_distance,
    normalized_surface_dice,
    surface_distances,
    surfel_areas,
)
from tests.test_surface import mask_pairs

medpy_binary = pytest.importorskip("medpy.metric.binary")
deepmind = pytest.importorskip("surface_distance")
SQRT_SLACK = math.sqrt(1 + surface.RELATIVE_TIE_TOLERANCE)  # our d² <= τ²(1 + 1e-9) is d <= τ √(1 + 1e-9)


@pytest.fixture(autouse=True)
def deepmind_under_numpy_2(monkeypatch):
    """surface-distance 0.1 uses np.Inf, gone in NumPy 2, for a mask without surface: lend it the
    name during the test (the package itself is not changed)."""
    monkeypatch.setattr(np, "Inf", np.inf, raising=False)


def generated_cases(ndim, count, seed):
    """Random pairs plus the edge cases: one voxel thick, touching the border, shifted copies."""
    yield from mask_pairs(seed, ndim, count)
    shape = (24, 20) if ndim == 2 else (14, 12, 10)
    edge = np.zeros(shape, dtype=bool)
    edge[(slice(0, 6),) * ndim] = True  # touching the image border on every axis
    thin = np.zeros(shape, dtype=bool)
    thin[(slice(2, -2),) + (3,) * (ndim - 1)] = True
    plate = np.zeros(shape, dtype=bool)
    plate[(4,) + (slice(1, -1),) * (ndim - 1)] = True
    spacing = (0.98, 0.98, 3.0)[-ndim:] if ndim == 3 else (0.7, 1.3)
    yield edge, np.roll(edge, 2, axis=0), spacing
    yield thin, edge, spacing
    yield plate, np.roll(plate, 1, axis=0), spacing
    yield edge, np.ones(shape, dtype=bool), spacing


def non_empty(cases):
    return [(p, t, s) for p, t, s in cases if p.any() and t.any()]


# ---- medpy (border voxels) ------------------------------------------------------------------------


@pytest.mark.parametrize("ndim", [2, 3])
def test_medpy_border_voxel_distances(ndim):
    compared = 0
    for prediction, truth, spacing in non_empty(generated_cases(ndim, 16, 300 + ndim)):
        for connectivity in range(1, ndim + 1):
            options = {"voxelspacing": spacing, "connectivity": connectivity}
            ours = {"spacing": spacing, "connectivity": connectivity}
            assert hausdorff_distance(prediction, truth, **ours) == pytest.approx(
                medpy_binary.hd(prediction, truth, **options), rel=1e-12)
            assert hausdorff_distance(prediction, truth, percentile=95, combine="pooled", **ours) == pytest.approx(
                medpy_binary.hd95(prediction, truth, **options), rel=1e-12)
            assert average_surface_distance(prediction, truth, combine="pooled", **ours) == pytest.approx(
                medpy_binary.assd(prediction, truth, **options), rel=1e-12)
            directed = surface_distances(prediction, truth, **ours)
            assert directed.prediction_to_truth.mean() == pytest.approx(
                medpy_binary.asd(prediction, truth, **options), rel=1e-12)
            assert directed.truth_to_prediction.mean() == pytest.approx(
                medpy_binary.asd(truth, prediction, **options), rel=1e-12)
            compared += 1
    assert compared >= 30


def test_medpy_hd95_pooled_and_max_differ_on_a_stray_blob():
    """The worked example of the two HD95s: a stray blob far away is 1/20 of the prediction's
    surface; pooled with the truth's surface it falls below the 95th percentile."""
    truth = np.zeros((40, 40, 40), dtype=bool)
    truth[8:24, 8:24, 8:24] = True
    prediction = truth.copy()
    prediction[34:37, 34:37, 34:37] = True  # 26 border voxels of 1,178 + 1,352
    spacing = (2.0, 1.0, 1.0)
    pooled = hausdorff_distance(prediction, truth, spacing, 95, combine="pooled")
    larger = hausdorff_distance(prediction, truth, spacing, 95, combine="max")
    assert pooled == pytest.approx(medpy_binary.hd95(prediction, truth, voxelspacing=spacing), rel=1e-12)
    assert pooled == 0.0 and larger == 0.0  # both below the stray share here ...
    prediction[30:39, 30:39, 30:39] = True  # ... a bigger blob: more than 5% of one surface, not of both
    pooled = hausdorff_distance(prediction, truth, spacing, 95, combine="pooled")
    larger = hausdorff_distance(prediction, truth, spacing, 95, combine="max")
    assert pooled == pytest.approx(medpy_binary.hd95(prediction, truth, voxelspacing=spacing), rel=1e-12)
    assert larger > pooled


# ---- MetricsReloaded's definitions (border voxels, scipy's default cross) ------------------------


def metrics_reloaded(prediction, truth, spacing, percentile, tolerance):
    """MetricsReloaded's measured_distance and normalised_surface_distance, written out."""
    border_truth = truth & ~ndimage.binary_erosion(truth)
    border_prediction = prediction & ~ndimage.binary_erosion(prediction)
    to_truth = ndimage.distance_transform_edt(~border_truth, sampling=spacing)[border_prediction]
    to_prediction = ndimage.distance_transform_edt(~border_prediction, sampling=spacing)[border_truth]
    both = np.concatenate([to_truth, to_prediction])
    return {"hd": max(to_truth.max(), to_prediction.max()),
            "hd_perc": max(np.percentile(to_truth, percentile), np.percentile(to_prediction, percentile)),
            "assd": both.sum() / len(both),
            "masd": 0.5 * (to_truth.sum() / len(to_truth) + to_prediction.sum() / len(to_prediction)),
            "nsd": ((to_truth <= tolerance).sum() + (to_prediction <= tolerance).sum()) / len(both)}


@pytest.mark.parametrize("ndim", [2, 3])
def test_metrics_reloaded_definitions(ndim):
    for prediction, truth, spacing in non_empty(generated_cases(ndim, 16, 500 + ndim)):
        for percentile, tolerance in ((95, 1.0), (90, 2.0), (50, 1.37)):
            expected = metrics_reloaded(prediction, truth, spacing, percentile, tolerance)
            assert hausdorff_distance(prediction, truth, spacing) == expected["hd"]
            assert hausdorff_distance(prediction, truth, spacing, percentile) == expected["hd_perc"]
            assert average_surface_distance(prediction, truth, spacing, combine="pooled") == pytest.approx(
                expected["assd"], rel=1e-12)
            assert average_surface_distance(prediction, truth, spacing) == pytest.approx(expected["masd"], rel=1e-12)
            # d <= τ on rounded distances against our d² <= τ² (1 + 1e-9): equal unless a distance
            # sits within 1e-9 of τ, which MetricsReloaded's test τ √(1 + 1e-9) then also counts
            assert normalized_surface_dice(prediction, truth, tolerance, spacing, boundary="voxels") == \
                metrics_reloaded(prediction, truth, spacing, percentile, tolerance * SQRT_SLACK)["nsd"]


# ---- DeepMind surface-distance (surfels) ---------------------------------------------------------


def sorted_pairs(distances, areas):
    order = np.lexsort((areas, distances))
    return distances[order], areas[order]


@pytest.mark.parametrize("ndim", [2, 3])
def test_deepmind_distances_areas_and_metrics(ndim):
    compared = 0
    for prediction, truth, spacing in non_empty(generated_cases(ndim, 16, 700 + ndim)):
        theirs = deepmind.compute_surface_distances(truth, prediction, spacing)
        ours = surface_distances(prediction, truth, spacing, boundary="surfels")
        for distances, areas, key in ((ours.prediction_to_truth, ours.prediction_areas, "pred_to_gt"),
                                      (ours.truth_to_prediction, ours.truth_areas, "gt_to_pred")):
            d, a = sorted_pairs(distances, areas)
            np.testing.assert_array_equal(d, theirs[f"distances_{key}"])  # the same floats
            np.testing.assert_allclose(a, theirs[f"surfel_areas_{key.split('_')[0]}"], rtol=1e-12)
        for percentile in (100, 95, 50, 5):
            assert ours.hausdorff_distance(percentile) == deepmind.compute_robust_hausdorff(theirs, percentile)
        assert ours.average_surface_distance() == pytest.approx(
            np.mean(deepmind.compute_average_surface_distance(theirs)), rel=1e-12)
        for tolerance in (0.0, 1.0, 2.0, 1.37):
            assert ours.normalized_surface_dice(tolerance) == pytest.approx(
                deepmind.compute_surface_dice_at_tolerance(theirs, tolerance * SQRT_SLACK), rel=1e-12)
        compared += 1
    assert compared >= 12


@pytest.mark.parametrize("spacing", [(1.0, 1.0, 1.0), (3.0, 2.0, 1.0), (0.98, 0.98, 3.0), (0.7, 1.3, 2.1),
                                     (5.0, 0.1, 1.7), (1.0, 1.0), (0.5, 2.0)])
def test_surfel_area_table_equals_deepminds(spacing):
    """Our table (triangle kinds per code) against DeepMind's, all 256 (3D) or 16 (2D) codes;
    the sums of triangle areas come in another order: rounding only."""
    from surface_distance import lookup_tables

    if len(spacing) == 3:
        expected = lookup_tables.create_table_neighbour_code_to_surface_area(spacing)
    else:
        expected = lookup_tables.create_table_neighbour_code_to_contour_length(spacing)
    np.testing.assert_allclose(surfel_areas(spacing), expected, rtol=1e-14, atol=1e-15)


def test_surfel_table_is_scikit_images_marching_cubes():
    """The table's origin: scikit-image's Lorensen marching cubes on each 2×2×2 neighbourhood, a
    code with more than four voxels in taking its complement's triangles (as DeepMind's table
    does); each triangle's area vector, in eighths, is one of the nine kinds."""
    measure = pytest.importorskip("skimage.measure")
    kernel = np.array([[[128, 64], [32, 16]], [[8, 4], [2, 1]]])
    for code in range(1, 255):
        base = code if bin(code).count("1") <= 4 else 255 - code
        vertices, faces, _, _ = measure.marching_cubes((kernel & base != 0).astype(float), 0.5, method="lorensen")
        triangles = vertices.astype(np.float64)[faces]
        vectors = np.abs(np.round(4 * np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])))
        counts = [sum(tuple(v) == kind for v in vectors.astype(int).tolist()) for kind in surface._TRIANGLE_KINDS]
        assert "".join(map(str, counts)) == surface._TRIANGLES_OF_CODE[code], code
    assert surface._TRIANGLES_OF_CODE[0] == surface._TRIANGLES_OF_CODE[255] == "0" * 9


def two_points(shape, first, second):
    truth, prediction = np.zeros(shape, dtype=bool), np.zeros(shape, dtype=bool)
    truth[first], prediction[second] = True, True
    return prediction, truth


DEEPMIND_OWN_CASES = [
    # (prediction, truth, spacing, average distances (truth→pred, pred→truth), HD100, HD95,
    #  surface Dice at 1 mm): the expected numbers of DeepMind's surface_distance_test.py
    (*two_points((128, 128), (50, 70), (50, 72)), (2, 1), (1.5, 1.5), 2.0, 2.0, 0.5),
    (*two_points((128, 128, 128), (50, 60, 70), (50, 60, 72)), (3, 2, 1), (1.5, 1.5), 2.0, 2.0, 0.5),
]


@pytest.mark.parametrize("case", range(len(DEEPMIND_OWN_CASES)))
def test_deepminds_own_cases(case):
    prediction, truth, spacing, average, hd100, hd95, surface_dice = DEEPMIND_OWN_CASES[case]
    ours = surface_distances(prediction, truth, spacing, boundary="surfels")
    assert (ours.truth_to_prediction.mean(), ours.prediction_to_truth.mean()) == pytest.approx(average, abs=1e-3)
    assert ours.hausdorff_distance(100) == pytest.approx(hd100, abs=1e-3)
    assert ours.hausdorff_distance(95) == pytest.approx(hd95, abs=1e-3)
    assert ours.normalized_surface_dice(1.0) == pytest.approx(surface_dice, abs=1e-3)


def test_deepminds_two_squares_and_two_cubes():
    """DeepMind's 2D squares shifted by a pixel at spacing (2, 1) (surfels listed by hand there),
    and its two 3D slabs touching the image border, spacing (2, 1, 1)."""
    truth = np.zeros((6, 6), dtype=bool)
    truth[1:3, 1:3] = True
    prediction = np.zeros((6, 6), dtype=bool)
    prediction[1:4, 1:3] = True
    ours = surface_distances(prediction, truth, (2, 1), boundary="surfels")
    diagonal = 0.5 * math.hypot(2, 1)
    d, a = sorted_pairs(ours.truth_to_prediction, ours.truth_areas)
    expected_d, expected_a = sorted_pairs(np.array([0.0] * 5 + [1.0] + [0.0] * 2),
                                          np.array([diagonal, 1, diagonal, 2, diagonal, 1, diagonal, 2]))
    np.testing.assert_array_equal(d, expected_d)
    np.testing.assert_allclose(a, expected_a, rtol=1e-15)
    truth = np.zeros((100, 100, 100), dtype=bool)
    prediction = np.zeros((100, 100, 100), dtype=bool)
    truth[0:50] = True
    prediction[0:51] = True
    ours = surface_distances(prediction, truth, (2, 1, 1), boundary="surfels")
    assert (ours.truth_to_prediction @ ours.truth_areas / ours.truth_areas.sum(),
            ours.prediction_to_truth @ ours.prediction_areas / ours.prediction_areas.sum()) == pytest.approx(
        (0.322, 0.339), abs=1e-3)
    assert ours.hausdorff_distance(100) == ours.hausdorff_distance(95) == 2.0
    assert ours.normalized_surface_dice(1.0) == pytest.approx(0.836, abs=1e-3)
    assert ours.normalized_surface_dice(1.0) == pytest.approx(
        deepmind.compute_surface_dice_at_tolerance(deepmind.compute_surface_distances(truth, prediction, (2, 1, 1)),
                                                   1.0 * SQRT_SLACK), rel=1e-12)


@pytest.mark.parametrize("ndim", [2, 3])
def test_deepmind_on_empty_masks_and_our_policies(ndim):
    """DeepMind gives inf distances and a surface Dice of 0 when one mask is empty, NaN when both
    are: our policies' defaults are NaN and 0 (one empty), 0 and 1 (both empty), by choice."""
    shape = (30,) * ndim
    empty = np.zeros(shape, dtype=bool)
    one = empty.copy()
    one[(10,) * ndim] = True
    spacing = (3.0, 2.0, 1.0)[-ndim:]
    for prediction, truth in ((one, empty), (empty, one)):
        theirs = deepmind.compute_surface_distances(truth, prediction, spacing)
        assert deepmind.compute_robust_hausdorff(theirs, 95) == np.inf
        assert deepmind.compute_surface_dice_at_tolerance(theirs, 1.0) == 0.0
        assert normalized_surface_dice(prediction, truth, 1.0, spacing) == 0.0
        assert math.isnan(hausdorff_distance(prediction, truth, spacing, 95, boundary="surfels"))
        assert hausdorff_distance(prediction, truth, spacing, 95, boundary="surfels", truth_empty=np.inf,
                                  prediction_empty=np.inf) == np.inf
    theirs = deepmind.compute_surface_distances(empty, empty, spacing)
    with np.errstate(invalid="ignore"):
        assert math.isnan(deepmind.compute_surface_dice_at_tolerance(theirs, 1.0))
    assert normalized_surface_dice(empty, empty, 1.0, spacing) == 1.0
    assert math.isnan(normalized_surface_dice(empty, empty, 1.0, spacing, both_empty=math.nan))


# ---- MONAI (optional) ----------------------------------------------------------------------------


@pytest.mark.parametrize("ndim", [2, 3])
def test_monai_border_voxels(ndim):
    torch = pytest.importorskip("torch", reason="MONAI needs torch (gigabytes): "
                                                "pip install -r benchmarks/requirements-monai.txt")
    monai_metrics = pytest.importorskip("monai.metrics")
    for prediction, truth, spacing in non_empty(generated_cases(ndim, 10, 900 + ndim)):
        p = torch.from_numpy(prediction[None, None].astype(np.float32))
        t = torch.from_numpy(truth[None, None].astype(np.float32))
        hd95 = monai_metrics.compute_hausdorff_distance(p, t, include_background=True, percentile=95,
                                                        spacing=list(spacing)).item()
        assert hausdorff_distance(prediction, truth, spacing, 95) == pytest.approx(hd95, rel=1e-6)
        assd = monai_metrics.compute_average_surface_distance(p, t, include_background=True, symmetric=True,
                                                              spacing=list(spacing)).item()
        assert average_surface_distance(prediction, truth, spacing, combine="pooled") == pytest.approx(
            assd, rel=1e-6)
        nsd = monai_metrics.compute_surface_dice(p, t, [1.37], include_background=True, spacing=list(spacing)).item()
        assert normalized_surface_dice(prediction, truth, 1.37, spacing, boundary="voxels") == pytest.approx(
            nsd, rel=1e-6)
