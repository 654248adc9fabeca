"""Image registration: a displacement field and landmark pairs, arrays in, numbers out.

A displacement field u is an array (ndim, *shape): component i is the displacement along array
axis i, in the spacing's units (mm for a physical spacing), at every voxel of the fixed image; it
maps a fixed voxel x to x + u(x) in the moving image (Learn2Reg's convention). A field in voxel
units (Learn2Reg's files) is used with `spacing=None`: the Jacobian determinant is the same either
way; for the target registration error multiply component i by spacing_i first.

The intermediates: the Jacobian determinant of x ↦ x + u(x), by central differences,
J = det(I + ∂u_i/∂x_j) with ∂u_i/∂x_j = (u_i(x + e_j) − u_i(x − e_j)) / (2 s_j), at the voxels
where both neighbours exist (SimpleITK's DisplacementFieldJacobianDeterminantFilter computes the
same there); and the moved landmarks, the field interpolated at the fixed landmarks.
Learn2Reg's evaluation code (MDL-UzL/L2R, evaluation/utils.py and evaluation.py) computes J the
same way, leaves out 2 voxels along every border (`border=2`), adds 3 to J before the log
(`offset=3`; MDL-UzL/L2R issue #7 asks why, unanswered) and clips to [1e-9, 1e9] before the log.
"""

from __future__ import annotations

import math

import numpy as np

from evaluation.metrics.aggregation import row_means
from evaluation.metrics.registry import metric
from evaluation.metrics.validation import (
    as_bool,
    check_empty_value,
    check_integer,
    check_number,
    check_numbers,
    check_points,
    check_same_shape,
    check_sample_weight,
    check_spacing,
    per_row,
)

LEARN2REG = "Hering et al., IEEE Transactions on Medical Imaging 42(3), 2023 (Learn2Reg)"
# Learn2Reg's clipping of J (+ offset) before the log: a folding voxel counts as log(1e-9) ≈ −20.7.
LOG_CLIP = (1e-9, 1e9)
# Voxels per slab of Jacobians: about ndim² + 4 float64 temporaries of 8 MiB each, whatever the field.
_SLAB_VOXELS = 1 << 20


def _field(displacement, mask, spacing) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    field = check_numbers(displacement, "displacement")  # converted to float64 slab by slab
    if field.ndim < 2 or field.shape[0] != field.ndim - 1:
        raise ValueError(f"displacement must be (ndim, *shape), one component per axis, got shape {field.shape}")
    if mask is not None:
        mask = as_bool(mask, "mask")
        check_same_shape(mask=mask, **{"displacement's grid": field[0]})
    return field, mask, check_spacing(spacing, field.ndim - 1)


def _jacobian_determinants(field: np.ndarray, spacing: np.ndarray, rows: slice) -> np.ndarray:
    """det(I + ∇u) by central differences at the voxels of `rows` (along the first axis) and
    1 … n − 2 along every other axis; `rows` must keep one voxel from the first axis' ends."""
    ndim = field.shape[0]
    inner = (slice(1, -1),) * (ndim - 1)
    jacobian = np.empty((ndim, ndim, rows.stop - rows.start, *(n - 2 for n in field.shape[2:])))
    for j in range(ndim):
        ahead = [rows, *inner]
        behind = [rows, *inner]
        if j == 0:
            ahead[0] = slice(rows.start + 1, rows.stop + 1)
            behind[0] = slice(rows.start - 1, rows.stop - 1)
        else:
            ahead[j] = slice(2, None)
            behind[j] = slice(0, -2)
        for i in range(ndim):
            difference = field[i][tuple(ahead)].astype(np.float64) - field[i][tuple(behind)]
            jacobian[i, j] = difference / (2.0 * spacing[j])
        jacobian[j, j] += 1.0
    if ndim == 2:
        return jacobian[0, 0] * jacobian[1, 1] - jacobian[0, 1] * jacobian[1, 0]
    if ndim == 3:
        j = jacobian
        return (j[0, 0] * (j[1, 1] * j[2, 2] - j[1, 2] * j[2, 1])
                - j[0, 1] * (j[1, 0] * j[2, 2] - j[1, 2] * j[2, 0])
                + j[0, 2] * (j[1, 0] * j[2, 1] - j[1, 1] * j[2, 0]))
    return np.linalg.det(np.moveaxis(jacobian, (0, 1), (-2, -1)))


def _selected_determinants(field, mask, spacing, border):
    """The Jacobian determinants of the voxels at least `border` voxels from every border of the
    grid (and in the mask), slab by slab along the first axis."""
    shape = field.shape[1:]
    if any(n < 2 * border + 1 for n in shape):
        raise ValueError(f"the displacement field's grid {shape} needs at least {2 * border + 1} voxels per axis "
                         f"(border={border})")
    keep = tuple(slice(border - 1, n - border - 1) for n in shape[1:])  # voxels border … n − border − 1 of 1 … n − 2
    step = max(1, _SLAB_VOXELS // max(1, math.prod(shape[1:])))
    for start in range(border, shape[0] - border, step):
        rows = slice(start, min(start + step, shape[0] - border))
        determinants = _jacobian_determinants(field, spacing, rows)[(slice(None), *keep)]
        if mask is not None:
            inside = tuple(slice(border, n - border) for n in shape[1:])
            determinants = determinants[mask[(rows, *inside)]]
        yield determinants.ravel()


def jacobian_determinant(displacement, spacing=None) -> np.ndarray:
    """The Jacobian determinant of x ↦ x + u(x) at every voxel one voxel or more from the grid's
    border: an array of shape (n − 2 per axis), by central differences (see the module docstring)."""
    field, _, scale = _field(displacement, None, spacing)
    return np.concatenate(list(_selected_determinants(field, None, scale, 1))).reshape(
        tuple(n - 2 for n in field.shape[1:]))


@metric(kind="displacement", better="lower", empty={"empty_mask": math.nan},
        variants={"offset": "0: log J (the definition); 3: log(J + 3), Learn2Reg's evaluation code",
                  "border": "1: every voxel with both neighbours; 2: Learn2Reg's evaluation code"},
        equals=("SimpleITK.DisplacementFieldJacobianDeterminantFilter (interior voxels), then numpy's std of the "
                "clipped log",
                "Learn2Reg's evaluation sdlogj (offset=3, border=2, the field in voxel units)"),
        citation=LEARN2REG)
def sd_log_jacobian_determinant(displacement, mask=None, spacing=None, border: int = 1, offset: float = 0.0,
                                empty_mask: float = math.nan) -> float:
    """Standard deviation of the log Jacobian determinant of a displacement field (SDlogJ): how
    unevenly the deformation stretches and compresses.

    The population standard deviation (ddof 0) of log(clip(J + offset, 1e-9, 1e9)) over the voxels
    at least `border` voxels from every border of the grid and in `mask` (a boolean array of the
    grid's shape; None: all of them), J = det(I + ∇u) by central differences in the spacing's units.
    Clipping before the log, as Learn2Reg does, makes a folding voxel (J ≤ 0) count as log(1e-9)
    rather than undefined. `offset` 0 is the definition, 3 is what Learn2Reg's evaluation code
    computes. No such voxel in the mask gives `empty_mask` (NaN by default).
    """
    field, mask, scale = _field(displacement, mask, spacing)
    border = check_integer(border, "border", low=1)  # central differences need one neighbour
    empty_mask = check_empty_value(empty_mask, "empty_mask")
    offset = check_number(offset, "offset")
    # Chan et al.'s pairwise merge of (count, mean, sum of squared deviations) over the slabs.
    count, mean, squares = 0, 0.0, 0.0
    for determinants in _selected_determinants(field, mask, scale, border):
        if not determinants.size:
            continue
        logs = np.log(np.clip(determinants + offset, *LOG_CLIP))
        n, m = logs.size, float(logs.mean())
        s = float(((logs - m) ** 2).sum())
        delta = m - mean
        total = count + n
        squares += s + delta * delta * count * n / total
        mean += delta * n / total
        count = total
    return math.sqrt(squares / count) if count else empty_mask


@metric(kind="displacement", better="lower", empty={"empty_mask": math.nan},
        variants={"border": "1: every voxel with both neighbours; 2: Learn2Reg's evaluation code"},
        equals=("SimpleITK.DisplacementFieldJacobianDeterminantFilter (interior voxels), share of J <= 0",),
        citation=LEARN2REG)
def folding_fraction(displacement, mask=None, spacing=None, border: int = 1, empty_mask: float = math.nan) -> float:
    """Share of folding voxels of a displacement field: the fraction of voxels whose Jacobian
    determinant is ≤ 0 (the deformation folds space there).

    |{x : J(x) ≤ 0}| / |{x}| over the voxels at least `border` voxels from every border of the grid
    and in `mask` (None: all of them), J = det(I + ∇u) by central differences. (Learn2Reg's code
    counts J + 3 ≤ 0 after clipping J + 3 to ≥ 1e-9, which is never true; this counts J ≤ 0.) No
    such voxel in the mask gives `empty_mask` (NaN by default).
    """
    field, mask, scale = _field(displacement, mask, spacing)
    border = check_integer(border, "border", low=1)
    empty_mask = check_empty_value(empty_mask, "empty_mask")
    folding, count = 0, 0
    for determinants in _selected_determinants(field, mask, scale, border):
        folding += int(np.count_nonzero(determinants <= 0))
        count += determinants.size
    return folding / count if count else empty_mask


def _registration_errors(fixed_landmarks, moving_landmarks, displacement, spacing, order) -> np.ndarray:
    from scipy.ndimage import map_coordinates

    fixed, moving = check_points(fixed_landmarks, "fixed_landmarks"), check_points(moving_landmarks, "moving_landmarks")
    check_same_shape(fixed_landmarks=fixed, moving_landmarks=moving)
    field, _, scale = _field(displacement, None, spacing)
    if fixed.shape[1] != field.shape[0]:
        raise ValueError(f"landmarks have {fixed.shape[1]} coordinates, the displacement field {field.shape[0]} axes")
    order = check_integer(order, "order", 0, 5)  # a spline order, 1: linear
    grid = np.asarray(field.shape[1:]) - 1
    if ((fixed < 0) | (fixed > grid)).any():
        raise ValueError(f"fixed_landmarks must lie within the displacement field's grid: [0, n − 1] per axis, "
                         f"n − 1 = {tuple(int(g) for g in grid)}")
    # Learn2Reg's compute_tre: map_coordinates with its defaults (order 3, mode 'constant').
    moved = np.stack([map_coordinates(component.astype(np.float64), fixed.T, order=order) for component in field],
                     axis=1)
    return np.sqrt((((fixed - moving) * scale + moved) ** 2).sum(axis=1))


TRE_VARIANTS = {"order": "the spline order interpolating the field at the landmarks: 1 linear (SimpleITK's "
                         "DisplacementFieldTransform); 3 cubic, Learn2Reg's evaluation code (scipy's default)"}


@metric(kind="registration_landmarks", better="lower", unit="length", returns="array", variants=TRE_VARIANTS,
        equals=("SimpleITK.DisplacementFieldTransform.TransformPoint (order=1)",
                "Learn2Reg's compute_tre (order=3, the field in voxel units times the spacing)"),
        citation="Fitzpatrick and West, IEEE Transactions on Medical Imaging 20(9), 2001")
def target_registration_errors(fixed_landmarks, moving_landmarks, displacement, spacing=None,
                               order: int = 1) -> np.ndarray:
    """Target registration error of each landmark pair: the distance between the moved fixed
    landmark and its moving counterpart, in the spacing's units.

    ‖(f_i − m_i) · s + u(f_i)‖₂ for fixed landmark f_i and moving landmark m_i (voxel coordinates
    of their images, which share the spacing s), u(f_i) the field (in the spacing's units)
    interpolated at f_i by a spline of `order` (1: linear). Landmarks outside the field's grid
    are refused.
    """
    return _registration_errors(fixed_landmarks, moving_landmarks, displacement, spacing, order)


@metric(kind="registration_landmarks", better="lower", unit="length", variants=TRE_VARIANTS,
        equals=("SimpleITK.DisplacementFieldTransform.TransformPoint (order=1)",
                "Learn2Reg's mean compute_tre (order=3, the field in voxel units times the spacing)"),
        citation="Fitzpatrick and West, IEEE Transactions on Medical Imaging 20(9), 2001")
def target_registration_error(fixed_landmarks, moving_landmarks, displacement, spacing=None, order: int = 1,
                              sample_weight=None):
    """Mean target registration error (TRE): the weighted mean distance between the moved fixed
    landmarks and their moving counterparts, in the spacing's units.

    Σ w_i ‖(f_i − m_i) · s + u(f_i)‖₂ / Σ w_i over the landmark pairs (see
    `target_registration_errors`); `sample_weight` weighs the pairs.
    """
    errors = _registration_errors(fixed_landmarks, moving_landmarks, displacement, spacing, order)
    weights, single = check_sample_weight(sample_weight, len(errors))
    return per_row(row_means(errors, weights), single)
