"""evaluation.metrics.topology against its peers: panoptica's clDice and the clDice authors'
numpy formula on scikit-image skeletons; Betti numbers against scipy.ndimage.label (components,
holes, cavities) and an Euler characteristic counted cell by cell on the cubical complex (an
independent check of scikit-image's euler_number); the edges (empty masks, empty skeletons,
structures on the border, one-voxel-thick lines, axis order); bad arguments."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from evaluation.metrics.topology import betti_number_errors, betti_numbers, cldice, skeleton

RANK = {4: 1, 8: 2, 6: 1, 26: 3}


def tubes(rng, shape, n=3):
    """Random thick and thin segments (vessel-like), some running to the border."""
    mask = np.zeros(shape, dtype=bool)
    grid = np.indices(shape, dtype=np.float64)
    for _ in range(n):
        a, b = (np.array([rng.uniform(0, s - 1) for s in shape]) for _ in range(2))
        direction = (b - a) / max(np.linalg.norm(b - a), 1e-9)
        offset = np.stack([g - c for g, c in zip(grid, a, strict=True)])
        along = np.clip(np.tensordot(direction, offset, axes=1), 0, np.linalg.norm(b - a))
        closest = a[:, None] + direction[:, None] * along.reshape(1, -1)
        distance = np.sqrt(((grid.reshape(len(shape), -1) - closest) ** 2).sum(axis=0)).reshape(shape)
        mask |= distance <= rng.uniform(0.5, 2.5)
    return mask


def masks_pair(rng, ndim):
    shape = (40, 36) if ndim == 2 else (18, 16, 14)
    truth = tubes(rng, shape)
    prediction = np.roll(truth, int(rng.integers(-2, 3)), axis=0) & (rng.random(shape) < 0.95) | tubes(rng, shape, 1)
    return prediction, truth


def authors_cldice(prediction, truth):
    """The clDice authors' numpy evaluation: cl_score(v, s) = Σ v·s / Σ s on skimage skeletons."""
    from skimage.morphology import skeletonize

    def cl_score(volume, skeleton):
        return np.sum(volume * skeleton) / np.sum(skeleton)

    tprec = cl_score(prediction, skeletonize(truth))
    tsens = cl_score(truth, skeletonize(prediction))
    return 2 * tprec * tsens / (tprec + tsens)


@pytest.mark.parametrize("ndim", [2, 3])
def test_cldice_equals_panoptica_and_the_authors_formula(ndim):
    from panoptica.metrics.cldice import _compute_centerline_dice_coefficient

    rng = np.random.default_rng(ndim)
    compared = 0
    for case in range(25):
        prediction, truth = masks_pair(rng, ndim)
        ours = cldice(prediction, truth)
        panoptica = _compute_centerline_dice_coefficient(reference=truth, prediction=prediction)
        with np.errstate(invalid="ignore", divide="ignore"):
            authors = authors_cldice(prediction, truth)
        if np.isnan(authors):  # an empty skeleton: ours gives skeleton_empty
            assert np.isnan(ours)
            continue
        assert ours == pytest.approx(authors, rel=1e-12) and ours == pytest.approx(panoptica, rel=1e-12), case
        compared += 1
    assert compared >= 20


def test_cldice_edges():
    line = np.zeros((9, 12), dtype=bool)
    line[4, :] = True  # one pixel thick, touching both borders
    assert cldice(line, line) == 1.0
    assert cldice(line, np.roll(line, 3, axis=0)) == 0.0
    empty = np.zeros_like(line)
    assert (cldice(empty, empty), cldice(line, empty), cldice(empty, line)) == (1.0, 0.0, 0.0)
    assert cldice(line, empty, truth_empty=0.25) == 0.25 and np.isnan(cldice(empty, empty, both_empty=np.nan))
    cube = np.zeros((6, 6, 6), dtype=bool)
    cube[1:3, 1:3, 1:3] = True  # Lee's thinning removes a 2 × 2 × 2 cube entirely
    assert not skeleton(cube).any()
    assert np.isnan(cldice(cube, cube)) and cldice(cube, cube, skeleton_empty=0.5) == 0.5


def test_skeleton_depends_on_axis_order_as_documented():
    """Lee's thinning visits the axes in the array's order: a transposed mask can thin to a
    different skeleton (the caller transposes both masks to choose)."""
    rng = np.random.default_rng(0)
    grid = np.indices((12, 12, 12))
    differs = 0
    for _ in range(20):
        radii = rng.uniform(4, 20, 3)
        centre = rng.uniform(3, 9, 3)
        mask = sum((g - c) ** 2 / r for g, c, r in zip(grid, centre, radii, strict=True)) <= 1
        differs += not np.array_equal(skeleton(mask), skeleton(mask.T).T)
    assert differs > 0


# ---- Betti numbers ------------------------------------------------------------------------------


def euler_by_cells(mask, connectivity):
    """The Euler characteristic counted on the cubical complex of the mask.

    Full connectivity (8, 26): the union of closed pixels / voxels, V − E + F (− C) with a cell
    present when any pixel / voxel around it is. Face connectivity (4, 6): the complex on the
    pixel / voxel centres, pixels − adjacent pairs + 2×2 squares (− 2×2×2 cubes)."""
    padded = np.pad(mask, 1)
    ndim = mask.ndim
    euler = 0
    if connectivity in (8, 26):
        # a cell of dimension k spans 2^(ndim-k) voxels around it: present when any of them is
        for offsets in np.ndindex(*(2,) * ndim):  # which axes the cell extends along
            k = sum(offsets)
            window = padded
            for axis, extends in enumerate(offsets):
                if not extends:  # the cell lies between two voxels on this axis: either one
                    window = np.logical_or(np.take(window, range(window.shape[axis] - 1), axis=axis),
                                           np.take(window, range(1, window.shape[axis]), axis=axis))
            euler += (-1) ** k * int(window.sum())
        return euler
    for offsets in np.ndindex(*(2,) * ndim):  # a k-cell joins the 2^k voxel centres it spans
        k = sum(offsets)
        window = padded
        for axis, extends in enumerate(offsets):
            if extends:
                window = np.logical_and(np.take(window, range(window.shape[axis] - 1), axis=axis),
                                        np.take(window, range(1, window.shape[axis]), axis=axis))
        euler += (-1) ** k * int(window.sum())
    return euler


def reference_betti(mask, connectivity):
    ndim = mask.ndim
    full = 8 if ndim == 2 else 26
    structure = ndimage.generate_binary_structure(ndim, RANK[connectivity])
    b0 = ndimage.label(mask, structure)[1]
    complement = ndimage.generate_binary_structure(ndim, 1 if connectivity == full else ndim)
    enclosed = ndimage.label(~np.pad(mask, 1), complement)[1] - 1
    euler = euler_by_cells(mask, connectivity)
    if ndim == 2:
        assert b0 - enclosed == euler  # holes, two ways
        return b0, enclosed
    return b0, b0 + enclosed - euler, enclosed


@pytest.mark.parametrize(("ndim", "connectivity"), [(2, 4), (2, 8), (3, 6), (3, 26)])
def test_betti_numbers_equal_labelling_and_cell_counts(ndim, connectivity):
    from skimage.measure import euler_number

    rng = np.random.default_rng(connectivity)
    shape = (24, 21) if ndim == 2 else (11, 10, 9)
    for density in (0.2, 0.45, 0.55, 0.8):
        for _ in range(6):
            mask = rng.random(shape) < density
            assert betti_numbers(mask, connectivity) == reference_betti(mask, connectivity)
            assert euler_by_cells(mask, connectivity) == euler_number(mask, 1 if connectivity in (4, 6) else ndim)


def test_betti_numbers_of_known_shapes():
    ring = np.zeros((7, 7), dtype=bool)
    ring[1:6, 1:6] = True
    ring[3, 3] = False
    assert betti_numbers(ring) == (1, 1)
    shell = np.zeros((7, 7, 7), dtype=bool)
    shell[1:6, 1:6, 1:6] = True
    shell[3, 3, 3] = False  # a cavity
    assert betti_numbers(shell) == (1, 0, 1)
    torus = np.zeros((7, 7, 3), dtype=bool)
    torus[1:6, 1:6, 1] = True
    torus[3, 3, 1] = False  # a tunnel through a one-voxel-thick plate
    assert betti_numbers(torus) == (1, 1, 0)
    full = np.ones((4, 5, 6), dtype=bool)  # touches every border: nothing enclosed
    assert betti_numbers(full) == (1, 0, 0)
    diagonal = np.eye(5, dtype=bool)
    assert betti_numbers(diagonal, 4) == (5, 0) and betti_numbers(diagonal, 8) == (1, 0)
    assert betti_number_errors(ring, np.zeros_like(ring)) == (1, 1)
    solid = np.zeros_like(shell)
    solid[1:6, 1:6, 1:6] = True
    assert betti_number_errors(shell, solid) == (0, 0, 1)


# ---- bad arguments -----------------------------------------------------------------------------


@pytest.mark.parametrize(("call", "message"), [
    (lambda: cldice(np.zeros((3, 3)), np.zeros((3, 4))), "shape"),
    (lambda: cldice(np.ones((3, 3)), np.ones((3, 3)), both_empty="one"), "both_empty"),
    (lambda: cldice(np.ones((3, 3, 3)), np.ones((3, 3, 3)), method="zhang"), "2D only"),
    (lambda: cldice(np.ones((3, 3)), np.ones((3, 3)), method="thin"), "method"),
    (lambda: skeleton(np.ones(4)), "2D or 3D"),
    (lambda: betti_numbers(np.ones((3, 3, 3)), 18), "connectivity"),
    (lambda: betti_numbers(np.ones((3, 3)), 6), "connectivity"),
    (lambda: betti_numbers(np.ones((2, 2, 2, 2))), "2D or 3D"),
    (lambda: betti_number_errors(np.ones((3, 3)), np.ones((3, 3, 1))), "shape"),
    (lambda: betti_numbers(np.full((3, 3), np.nan)), "NaN"),
])
def test_bad_arguments_raise_value_error_naming_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()
