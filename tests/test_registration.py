"""evaluation.metrics.registration against independent computations: SimpleITK's
DisplacementFieldJacobianDeterminantFilter (the Jacobian determinant, with anisotropic spacing) and
DisplacementFieldTransform (landmarks moved by a linearly interpolated field), Learn2Reg's
evaluation procedure written from its description (MDL-UzL/L2R: gradients by correlating with
[−0.5, 0, 0.5] and zero padding, 2 voxels cropped, J + 3 clipped to [1e-9, 1e9], log, std; TRE by
scipy's map_coordinates with its defaults), and a per-voxel loop of numpy.linalg.det in 1D and 4D.

Tolerances: 1e-12 on determinants, their logs' std and distances: the same arithmetic in another
order (SimpleITK computes in float64 for float64 fields)."""

import math

import numpy as np
import pytest
import SimpleITK as sitk
from scipy.ndimage import correlate, gaussian_filter, map_coordinates

import evaluation.metrics.registration as module
from evaluation.metrics.registration import (
    folding_fraction,
    jacobian_determinant,
    sd_log_jacobian_determinant,
    target_registration_error,
    target_registration_errors,
)


def smooth_field(rng, shape, amplitude):
    """A smooth random displacement field (ndim, *shape); large amplitudes fold."""
    return np.stack([gaussian_filter(rng.normal(size=shape), 1.2) for _ in shape]) * amplitude


def sitk_field(field, spacing):
    """The field as a SimpleITK displacement image: components and spacing in x, y, z order."""
    image = sitk.GetImageFromArray(np.moveaxis(field[::-1], 0, -1).astype(np.float64), isVector=True)
    image.SetSpacing(tuple(float(s) for s in spacing[::-1]))
    return image


def sitk_interior_determinants(field, spacing):
    determinants = sitk.GetArrayFromImage(sitk.DisplacementFieldJacobianDeterminant(sitk_field(field, spacing)))
    return determinants[(slice(1, -1),) * (field.ndim - 1)]


CASES = [((23, 21), (0.7, 1.3)), ((19, 17), (1.0, 1.0)), ((13, 12, 11), (0.8, 0.8, 2.5)),
         ((11, 14, 9), (1.0, 1.0, 1.0)), ((3, 3, 3), (2.0, 1.0, 0.5))]


@pytest.mark.parametrize(("shape", "spacing"), CASES, ids=str)
@pytest.mark.parametrize("amplitude", [0.5, 4.0, 15.0])
def test_jacobian_determinant_equals_simpleitk(shape, spacing, amplitude):
    rng = np.random.default_rng(len(shape) + int(amplitude))
    field = smooth_field(rng, shape, amplitude)
    expected = sitk_interior_determinants(field, np.asarray(spacing))
    ours = jacobian_determinant(field, spacing)
    assert ours.shape == expected.shape
    assert np.allclose(ours, expected, rtol=1e-12, atol=1e-12)
    mask = rng.random(shape) < 0.6
    inner = mask[(slice(1, -1),) * len(shape)]
    for offset in (0.0, 3.0):
        logs = np.log(np.clip(expected[inner] + offset, 1e-9, 1e9))
        value = sd_log_jacobian_determinant(field, mask, spacing, offset=offset)
        assert value == pytest.approx(logs.std() if logs.size else math.nan, rel=1e-12, abs=1e-14, nan_ok=True)
    assert sd_log_jacobian_determinant(field, None, spacing) == pytest.approx(
        np.log(np.clip(expected, 1e-9, 1e9)).std(), rel=1e-12, abs=1e-14)
    assert folding_fraction(field, None, spacing) == np.mean(expected <= 0)
    if inner.any():
        assert folding_fraction(field, mask, spacing) == np.mean(expected[inner] <= 0)


def test_folds_are_counted_and_clipped():
    field = np.zeros((2, 9, 9))
    field[0, 4, :] = 3.0  # row 4 pushed three rows on: rows 3 and 5 see ∂u/∂x = ∓1.5
    determinants = jacobian_determinant(field)
    assert determinants[2, 0] == 2.5 and determinants[4, 0] == -0.5  # grid rows 3 and 5
    assert folding_fraction(field) == 7 / 49
    logs = np.log(np.clip(determinants, 1e-9, 1e9))
    assert logs.min() == pytest.approx(math.log(1e-9))
    assert sd_log_jacobian_determinant(field) == pytest.approx(logs.std(), rel=1e-14)
    assert sd_log_jacobian_determinant(np.zeros((3, 5, 5, 5))) == 0.0
    assert folding_fraction(np.zeros((3, 5, 5, 5))) == 0.0


@pytest.mark.parametrize("seed", range(4))
def test_learn2reg_variant_equals_their_procedure(seed):
    rng = np.random.default_rng(seed)
    shape = (14, 13, 12)
    field = smooth_field(rng, shape, 3.0 + 4 * seed)  # in voxel units, as their files
    kernel = np.array([-0.5, 0.0, 0.5])
    gradients = np.empty((3, 3, *shape))  # [axis of the derivative, component]
    for axis in range(3):
        for component in range(3):
            gradients[axis, component] = correlate(field[component], kernel.reshape([3 if a == axis else 1
                                                                                     for a in range(3)]),
                                                   mode="constant", cval=0.0)
    jacobian = (gradients + np.eye(3).reshape(3, 3, 1, 1, 1))[:, :, 2:-2, 2:-2, 2:-2]
    determinants = np.linalg.det(np.moveaxis(jacobian, (0, 1), (-2, -1)))
    log_jacobian = np.log(np.clip(determinants + 3, 0.000000001, 1000000000))
    assert sd_log_jacobian_determinant(field, border=2, offset=3) == pytest.approx(log_jacobian.std(), rel=1e-12)
    mask = rng.random(shape) < 0.5
    masked = np.ma.MaskedArray(log_jacobian, 1 - mask[2:-2, 2:-2, 2:-2]).std()
    assert sd_log_jacobian_determinant(field, mask, border=2, offset=3) == pytest.approx(float(masked), rel=1e-12)
    assert folding_fraction(field, border=2) == np.mean(determinants <= 0)


@pytest.mark.parametrize("shape", [(17,), (5, 4, 6, 5)], ids=str)
def test_other_dimensions_equal_a_loop_of_numpy_det(shape):
    rng = np.random.default_rng(len(shape))
    ndim = len(shape)
    field = rng.normal(size=(ndim, *shape)) * 0.4
    spacing = np.linspace(0.5, 2.0, ndim)
    expected = np.empty(tuple(n - 2 for n in shape))
    for index in np.ndindex(*expected.shape):
        voxel = np.asarray(index) + 1
        matrix = np.eye(ndim)
        for j in range(ndim):
            ahead, behind = voxel.copy(), voxel.copy()
            ahead[j] += 1
            behind[j] -= 1
            for i in range(ndim):
                matrix[i, j] += (field[i][tuple(ahead)] - field[i][tuple(behind)]) / (2 * spacing[j])
        expected[index] = np.linalg.det(matrix)
    assert np.allclose(jacobian_determinant(field, spacing), expected, rtol=1e-12, atol=1e-12)
    assert sd_log_jacobian_determinant(field, spacing=spacing) == pytest.approx(
        np.log(np.clip(expected, 1e-9, 1e9)).std(), rel=1e-12)


@pytest.mark.parametrize("slab_voxels", [1, 40, 1000])
def test_slab_by_slab_equals_simpleitk(slab_voxels, monkeypatch):
    monkeypatch.setattr(module, "_SLAB_VOXELS", slab_voxels)
    rng = np.random.default_rng(slab_voxels)
    field = smooth_field(rng, (15, 12, 10), 8.0)
    spacing = np.array([1.5, 0.9, 0.9])
    expected = sitk_interior_determinants(field, spacing)
    assert np.allclose(jacobian_determinant(field, spacing), expected, rtol=1e-12, atol=1e-12)
    mask = rng.random((15, 12, 10)) < 0.7
    inner = mask[1:-1, 1:-1, 1:-1]
    assert sd_log_jacobian_determinant(field, mask, spacing) == pytest.approx(
        np.log(np.clip(expected[inner], 1e-9, 1e9)).std(), rel=1e-12)
    assert folding_fraction(field, mask, spacing) == np.mean(expected[inner] <= 0)


def test_empty_masks_give_the_declared_value():
    field = smooth_field(np.random.default_rng(0), (9, 9, 9), 2.0)
    border_only = np.zeros((9, 9, 9), dtype=bool)
    border_only[0] = True
    for metric in (sd_log_jacobian_determinant, folding_fraction):
        assert math.isnan(metric(field, np.zeros((9, 9, 9), dtype=bool)))
        assert math.isnan(metric(field, border_only))
        assert metric(field, border_only, empty_mask=0.0) == 0.0


@pytest.mark.parametrize(("shape", "spacing"), CASES[:4], ids=str)
def test_target_registration_error_equals_simpleitk_displacement_field_transform(shape, spacing):
    rng = np.random.default_rng(sum(shape))
    ndim = len(shape)
    spacing = np.asarray(spacing)
    field = smooth_field(rng, shape, 6.0)
    fixed = rng.uniform(0, np.asarray(shape) - 1, (25, ndim))
    fixed[0] = np.asarray(shape) - 1  # the grid's far corner
    fixed[1] = np.round(fixed[1])  # a voxel centre
    moving = fixed + rng.normal(0, 2, fixed.shape)
    transform = sitk.DisplacementFieldTransform(sitk_field(field, spacing))
    expected = []
    for f, m in zip(fixed, moving, strict=True):
        moved = np.asarray(transform.TransformPoint(tuple(float(v) for v in (f * spacing)[::-1])))
        expected.append(math.dist(moved, (m * spacing)[::-1]))
    assert np.allclose(target_registration_errors(fixed, moving, field, spacing), expected, rtol=1e-12, atol=1e-12)
    assert target_registration_error(fixed, moving, field, spacing) == pytest.approx(np.mean(expected), rel=1e-12)
    weights = rng.integers(0, 3, len(fixed))
    weights[0] = 1
    assert target_registration_error(fixed, moving, field, spacing, sample_weight=weights) == pytest.approx(
        np.average(expected, weights=weights), rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_target_registration_error_equals_learn2reg_compute_tre(seed):
    rng = np.random.default_rng(seed)
    shape, spacing = (16, 14, 12), np.array([1.5, 1.5, 2.0])
    voxel_field = smooth_field(rng, shape, 3.0)  # Learn2Reg's files: displacements in voxels
    fixed = rng.uniform(1, np.asarray(shape) - 2, (30, 3))
    moving = fixed + rng.normal(0, 3, fixed.shape)
    # compute_tre: map_coordinates with its defaults per component, fixed + displacement, × spacing
    displacement = np.stack([map_coordinates(voxel_field[i], fixed.T) for i in range(3)], axis=1)
    theirs = np.linalg.norm((fixed + displacement - moving) * spacing, axis=1)
    millimetres = voxel_field * spacing[:, None, None, None]
    ours = target_registration_errors(fixed, moving, millimetres, spacing, order=3)
    assert np.allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    assert target_registration_error(fixed, moving, millimetres, spacing, order=3) == pytest.approx(
        theirs.mean(), rel=1e-12)


def test_zero_field_gives_the_landmark_distances():
    fixed = np.array([[1.0, 2.0], [3.0, 3.0]])
    moving = np.array([[1.0, 5.0], [0.0, -1.0]])
    errors = target_registration_errors(fixed, moving, np.zeros((2, 6, 6)), (2.0, 1.0))
    assert list(errors) == [3.0, math.hypot(6.0, 4.0)]


def test_bad_arguments_raise_value_errors_naming_the_problem():
    field = np.zeros((3, 6, 6, 6))
    with pytest.raises(ValueError, match=r"\(ndim, \*shape\)"):
        sd_log_jacobian_determinant(np.zeros((2, 6, 6, 6)))
    with pytest.raises(ValueError, match=r"\(ndim, \*shape\)"):
        folding_fraction(np.zeros(6))
    with pytest.raises(ValueError, match="displacement must be finite"):
        sd_log_jacobian_determinant(np.full((2, 5, 5), np.nan))
    with pytest.raises(ValueError, match="one shape"):
        sd_log_jacobian_determinant(field, np.ones((6, 6, 5), dtype=bool))
    with pytest.raises(ValueError, match="one number per axis"):
        folding_fraction(field, spacing=(1.0, 1.0))
    with pytest.raises(ValueError, match="> 0"):
        sd_log_jacobian_determinant(field, spacing=(1.0, -1.0, 1.0))
    with pytest.raises(ValueError, match="border"):
        sd_log_jacobian_determinant(field, border=0)
    with pytest.raises(ValueError, match="at least 7 voxels"):
        sd_log_jacobian_determinant(field, border=3)
    with pytest.raises(ValueError, match="offset must be a finite number"):
        sd_log_jacobian_determinant(field, offset=np.inf)
    points = np.array([[1.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="one shape"):
        target_registration_error(points, np.zeros((2, 3)), field)
    with pytest.raises(ValueError, match="3 axes"):
        target_registration_error(np.ones((1, 2)), np.ones((1, 2)), field)
    with pytest.raises(ValueError, match="within the displacement field's grid"):
        target_registration_error(points * 5.5, points, field)
    with pytest.raises(ValueError, match="within the displacement field's grid"):
        target_registration_error(-points, points, field)
    with pytest.raises(ValueError, match="order"):
        target_registration_error(points, points, field, order=7)
    with pytest.raises(ValueError, match="order"):
        target_registration_error(points, points, field, order=1.5)
    with pytest.raises(ValueError, match="moving_landmarks must be finite"):
        target_registration_error(points, points * np.nan, field)
    assert np.isnan(target_registration_error(np.zeros((0, 3)), np.zeros((0, 3)), field))  # no landmark pair
