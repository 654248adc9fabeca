"""The one validation helper of the metric library: every public metric checks its arguments
here, at its top, and a bad argument raises ValueError naming the argument and what is wrong.

Names follow scikit-learn's: `y_true`, `y_score`, `y_pred`, `sample_weight` (the weight of each
case; rows of weights at once for a bootstrap: (rows, cases)); masks are `prediction` and
`truth`; `spacing` is one physical size per axis, in the array's axis order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

DIAGONAL = "diagonal"  # an empty policy's value: the image's diagonal in the spacing's units


def check_masks(prediction, truth, *, min_ndim: int = 1, keep_dtype: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Two masks as boolean arrays of one shape (any nonzero value is foreground). With
    `keep_dtype`, checked the same way but returned as given (no full-size boolean copy: a
    function that looks at a crop only converts the crop)."""
    prediction, truth = np.asarray(prediction), np.asarray(truth)
    if prediction.shape != truth.shape:
        raise ValueError(f"prediction and truth differ in shape: {prediction.shape} and {truth.shape}")
    if prediction.ndim < min_ndim:
        raise ValueError(f"masks must have at least {min_ndim} dimension(s), got {prediction.ndim}")
    if keep_dtype:
        for name, mask in (("prediction", prediction), ("truth", truth)):
            check_mask_values(mask, name)
        return prediction, truth
    return as_bool(prediction, "prediction"), as_bool(truth, "truth")


def check_mask_values(mask: np.ndarray, name: str = "mask") -> None:
    """ValueError unless the mask holds booleans or numbers, none NaN (NaN is neither in nor out)."""
    if mask.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold numbers or booleans, got {mask.dtype}")
    if mask.dtype.kind == "f" and np.isnan(mask).any():
        raise ValueError(f"{name} holds NaN")


def as_bool(mask, name: str = "mask") -> np.ndarray:
    """A mask as booleans, nonzero is foreground; NaN refused (it is neither)."""
    mask = np.asarray(mask)
    if mask.dtype == bool:
        return mask
    check_mask_values(mask, name)
    return mask != 0


def check_label_maps(prediction, truth, *, nonnegative: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Two integer label maps of one shape, at least 1-D (booleans are labels 0 and 1); with
    `nonnegative`, no label below 0 (instance maps: 0 is the background, every other label one
    instance)."""
    prediction, truth = np.asarray(prediction), np.asarray(truth)
    if prediction.shape != truth.shape:
        raise ValueError(f"prediction and truth differ in shape: {prediction.shape} and {truth.shape}")
    if prediction.ndim < 1:
        raise ValueError("label maps must have at least 1 dimension, got 0")
    for name, labels in (("prediction", prediction), ("truth", truth)):
        if labels.dtype.kind not in "biu":
            raise ValueError(f"{name} must be a label map of integers, got {labels.dtype}")
        if nonnegative and labels.dtype.kind == "i" and labels.size and labels.min() < 0:
            raise ValueError(f"{name} holds negative labels; labels are >= 0 (0 background)")
    return prediction, truth


def check_labels(labels, name: str = "labels") -> np.ndarray:
    """A 1-D sequence of distinct integer labels."""
    array = np.asarray(labels)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iub"):
        raise ValueError(f"{name} must be a 1-D sequence of integers, got {labels!r}")
    if len(np.unique(array)) != len(array):
        raise ValueError(f"{name} must be distinct, got {labels!r}")
    return array.astype(np.int64)


def check_classes(labels, **values) -> np.ndarray:
    """`labels`, the declared classes (numbers, booleans or strings), as a 1-D array of distinct
    values; each array of `values` (y_true=..., y_pred=...) holding only classes among them."""
    classes = np.asarray(labels)
    if classes.ndim != 1 or len(np.unique(classes)) != len(classes):
        raise ValueError(f"labels must be a 1-D sequence of distinct classes, got {labels!r}")
    for name, array in values.items():
        outside = ~np.isin(array, classes)
        if outside.any():
            raise ValueError(f"{name} holds {np.asarray(array)[outside][0].tolist()!r}, outside the declared labels "
                             f"{classes.tolist()}")
    return classes


def check_spacing(spacing, ndim: int) -> np.ndarray:
    """One finite spacing > 0 per axis, as float64; None is 1 per axis (voxel units)."""
    if spacing is None:
        return np.ones(ndim)
    values = np.asarray(spacing, dtype=np.float64) if _numeric(spacing) else None
    if values is None or values.ndim != 1 or len(values) != ndim:
        raise ValueError(f"spacing must give one number per axis ({ndim}), got {spacing!r}")
    if not (np.isfinite(values).all() and (values > 0).all()):
        raise ValueError(f"spacing must be finite and > 0 on every axis, got {spacing!r}")
    return values


def _numeric(value) -> bool:
    try:
        return np.asarray(value, dtype=np.float64) is not None
    except (TypeError, ValueError):
        return False


def _as_number(value, name: str) -> float:
    """A number as a float (booleans and strings refused: True is no tolerance)."""
    if type(value) is float:  # the common case, decided at once
        return value
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None


def check_number(value, name: str) -> float:
    """A finite number (an offset, a shift)."""
    number = _as_number(value, name)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return number


def check_nonnegative(value, name: str) -> float:
    """A finite number >= 0 (a tolerance, a radius, a distance threshold)."""
    number = _as_number(value, name)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return number


def check_nonnegative_each(value, name: str, n: int, items: str) -> float | np.ndarray:
    """One finite number >= 0 for all `n` items, as a float, or one per item (`items` names them:
    "true point"), as a float64 (n,) array: a radius per true point. Booleans and strings refused."""
    if np.ndim(value) == 0:
        return check_nonnegative(value, name)
    array = np.asarray(value)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be one number or one number per {items}, got {array.dtype} values")
    if array.shape != (n,):
        raise ValueError(f"{name} must be one number or one per {items} ({n}), got shape {array.shape}")
    array = array.astype(np.float64)
    if not (np.isfinite(array).all() and (array >= 0).all()):
        raise ValueError(f"{name} must be finite and >= 0 for every {items}")
    return array


def check_flag_each(value, name: str, n: int, items: str) -> np.ndarray:
    """One True or False per item (`items` names them), as a boolean (n,) array; None is False for
    every item. Numbers and strings refused (a 0/1 list would choose silently); an empty sequence
    only for no item."""
    if value is None:
        return np.zeros(n, dtype=bool)
    array = np.asarray(value)
    if array.shape != (n,):
        raise ValueError(f"{name} must be one True or False per {items} ({n}), got shape {array.shape}")
    if array.size and array.dtype != bool:  # [] is float64 to numpy: no value to refuse
        raise ValueError(f"{name} must be one True or False per {items}, got {array.dtype} values")
    return array.astype(bool)


def check_integer(value, name: str, low: int | None = None, high: int | None = None) -> int:
    """A whole number of an integer type (not a boolean, not a float) in [low, high]."""
    whole = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not whole or (low is not None and value < low) or (high is not None and value > high):
        bounds = (f" in [{low}, {high}]" if low is not None and high is not None else
                  f" >= {low}" if low is not None else f" <= {high}" if high is not None else "")
        raise ValueError(f"{name} must be an integer{bounds}, got {value!r}")
    return int(value)


def check_flag(value, name: str) -> bool:
    """True or False (a truthy string or number would choose a variant silently)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_in_range(value, name: str, low: float, high: float, *, low_open: bool = False,
                   high_open: bool = False) -> float:
    """A finite number in [low, high] (either end open when asked)."""
    number = _as_number(value, name)
    below = number <= low if low_open else number < low
    above = number >= high if high_open else number > high
    if not math.isfinite(number) or below or above:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return number


def check_choice(value, name: str, choices: Sequence) -> object:
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def check_empty_value(value, name: str, *, allow_diagonal: bool = False) -> float | str:
    """An empty policy's value (or any value for an undefined case: zero_division...): a number
    (NaN allowed: undefined), or "diagonal" where offered; booleans and other strings refused."""
    if allow_diagonal and isinstance(value, str) and value == DIAGONAL:
        return DIAGONAL
    try:
        return _as_number(value, name)
    except ValueError:
        allowed = "a number, NaN" + (' or "diagonal"' if allow_diagonal else "")
        raise ValueError(f"{name} must be {allowed}, got {value!r}") from None


def check_empty_policy(both_empty, truth_empty, prediction_empty, *, allow_diagonal: bool = False) -> dict:
    """The three values of the library's empty rule (evaluation.metrics), checked, by case:
    {"both_empty": ..., "truth_empty": ..., "prediction_empty": ...}."""
    return {name: check_empty_value(value, name, allow_diagonal=allow_diagonal)
            for name, value in (("both_empty", both_empty), ("truth_empty", truth_empty),
                                ("prediction_empty", prediction_empty))}


def diagonal(shape: Sequence[int], spacing: np.ndarray) -> float:
    """The image's diagonal in the spacing's units: sqrt(Σ (shape_i · spacing_i)²)."""
    return float(math.sqrt(sum((n * s) ** 2 for n, s in zip(shape, spacing, strict=True))))


def check_same_length(**arrays) -> int:
    """The common length of 1-D (or case-major) arrays; ValueError naming them if they differ."""
    lengths = {name: len(np.asarray(array)) for name, array in arrays.items()}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{name} {length}" for name, length in lengths.items())
        raise ValueError(f"arrays must be of one length (one value per case), got {described}")
    return next(iter(lengths.values()), 0)


def check_finite(values, name: str) -> np.ndarray:
    """Numbers as float64, none NaN or infinite."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold numbers") from None
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return array


def check_binary(y_true, name: str = "y_true") -> np.ndarray:
    """1-D labels holding only 0 and 1 (or False and True), as booleans."""
    array = np.asarray(y_true)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    if array.dtype != bool and array.size and not ((array == 0) | (array == 1)).all():  # (np.isin: 30x slower)
        raise ValueError(f"{name} must hold only 0 and 1")
    return array.astype(bool)


def check_sample_weight(sample_weight, n: int) -> tuple[np.ndarray, bool]:
    """(weights as (rows, n) float64, whether one row was given as 1-D or None).

    None is every case once. A row of whole numbers is a bootstrap resample: case j counted
    sample_weight[r, j] times. Weights must be finite and >= 0."""
    if sample_weight is None:
        return np.ones((1, n)), True
    weights = np.asarray(sample_weight, dtype=np.float64)
    single = weights.ndim == 1
    weights = np.atleast_2d(weights)
    if weights.ndim != 2 or weights.shape[1] != n:
        raise ValueError(f"sample_weight of shape {np.shape(sample_weight)} does not give one weight per case ({n})")
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise ValueError("sample_weight must be finite and >= 0")
    return weights, single


def weight_totals(sample_weight: np.ndarray) -> np.ndarray:
    """The total weight of each row of a checked (rows, cases) weight array, NaN where it is 0
    (a row of zeros, or no case at all): a weighted mean over no weight is undefined, NaN in
    every family, and dividing by this total gives that NaN without a warning."""
    totals = sample_weight.sum(axis=1)
    return np.where(totals > 0, totals, np.nan)


def per_row(values: np.ndarray, single: bool):
    """A metric's values, one per row of sample_weight (rows, ...), as the caller gave the
    weights: for one row (1-D weights or None) a float, or that row's array when each row holds
    several values; the array of rows otherwise."""
    if not single:
        return values
    return float(values[0]) if np.ndim(values) == 1 else values[0]


def check_values(values, name: str, *, ndim: int = 1) -> np.ndarray:
    """Finite numbers as a float64 array of `ndim` dimensions (1: one value per case)."""
    array = check_finite(values, name)
    if array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {array.shape}")
    return array


def check_points(points, name: str) -> np.ndarray:
    """Points as a finite float64 (n, ndim) array, one row per point, coordinates in the array's
    axis order (voxel indices; the spacing makes them physical)."""
    array = check_finite(points, name)
    if array.ndim != 2 or array.shape[1] < 1:
        raise ValueError(f"{name} must be an (n, ndim) array of point coordinates, got shape {array.shape}")
    return array


def check_same_shape(**arrays) -> tuple:
    """The common shape of arrays; ValueError naming them if they differ."""
    shapes = {name: np.shape(array) for name, array in arrays.items()}
    if len(set(shapes.values())) > 1:
        described = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"arrays must be of one shape, got {described}")
    return next(iter(shapes.values()))


def check_numbers(values, name: str) -> np.ndarray:
    """An array of real numbers in its own dtype (no float64 copy of a large image), none NaN or
    infinite; booleans and integers pass as they are."""
    array = np.asarray(values)
    if array.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold numbers, got {array.dtype}")
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return array


# Voxel connectivities of a 2D and a 3D mask, as cc3d names them: the number of neighbours.
CONNECTIVITIES = {2: (4, 8), 3: (6, 18, 26)}


def check_connectivity(connectivity, ndim: int, allowed: Sequence[int] | None = None) -> int:
    """A voxel connectivity valid for a mask of `ndim` dimensions (4 or 8 in 2D, 6, 18 or 26 in
    3D, or `allowed`); None is the full one (8 in 2D, 26 in 3D)."""
    if ndim not in CONNECTIVITIES:
        raise ValueError(f"masks must be 2D or 3D to have a voxel connectivity, got {ndim} dimension(s)")
    choices = tuple(allowed) if allowed is not None else CONNECTIVITIES[ndim]
    if connectivity is None:
        return CONNECTIVITIES[ndim][-1]
    if isinstance(connectivity, (bool, np.bool_)) or not isinstance(connectivity, (int, np.integer)) \
            or connectivity not in choices:
        raise ValueError(f"connectivity must be one of {choices} (or None: {CONNECTIVITIES[ndim][-1]}) for a "
                         f"{ndim}D mask, got {connectivity!r}")
    return int(connectivity)
