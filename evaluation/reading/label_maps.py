"""Label maps (2D or 3D segmentations) on the ground truth's grid, checked before and after decoding.

A submitted label map is scored voxel by voxel against the ground truth, so it must lie on the
same grid: we never resample (resampling a label map changes the score and hides the
participant's mistake). The order of the checks:

1. `open_image` (evaluation/reading/images.py) reads the header alone;
2. `check_grid` compares it with the ground truth's header: the dimensionality, then size,
   spacing, origin and direction, each within GRID_TOLERANCE, before a voxel is decoded (a header
   claiming 2000^3 voxels is refused in a few bytes);
3. the pixels are decoded, and `label_voxels` refuses a pixel type that is not a label's and any
   value outside the declared labels, in one pass.

Axis order, once and for all: SimpleITK (and every image header) lists size, spacing and origin
as (x, y, z); numpy arrays are indexed [z, y, x]. `LabelMap.voxels` is numpy-ordered,
`LabelMap.geometry` keeps the header's (x, y, z), and `LabelMap.spacing` is the spacing in the
ARRAY's axis order (z, y, x), the order evaluation/metrics expect for `spacing`.

Tolerance (GRID_TOLERANCE, 1e-4): the size must be equal; spacing, origin and direction agree
when |found - expected| <= t + t * |expected| for every element (np.allclose with rtol = atol = t:
relative for millimetre values, absolute near zero, as direction cosines and centred origins
are). Files written by different libraries round these by about 1e-6; 1e-4 of a 1 mm voxel is
0.1 micrometre, far below anything that moves a voxel.

Pixel types: any integer type, boolean, and floating point when every value is a whole number
that is one of the labels (networks often save float32 argmax maps; 1.0 is label 1, 0.5 is
refused as a value that is no label, NaN too). Complex and vector images are refused.

Instance maps (the lesions and instances kinds): their labels are not declared but any
non-negative whole numbers (`whole_labels`: an integer map, or a float map holding whole numbers
only, NaN and 0.5 refused, no negative label), the header checked the same way first.

The ground truth's label maps, one per case (`truth_label_map_files`): <case id><suffix> in the
ground-truth folder, read where each case is scored; any other file is the organizer's error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.errors import SetupError, id_list
from evaluation.platform.locations import RESERVED_GROUND_TRUTH_FILES, check_ground_truth_file, strip_extension
from evaluation.reading.files import Origin
from evaluation.reading.images import Geometry, ImageFile, open_image, shape_text

GRID_TOLERANCE = 1e-4
LABEL_SLAB = 1 << 22  # voxels checked at a time: bounded temporaries (32 MB of intp) whatever the volume
MAX_REPORTED_VOXELS = 1 << 22  # values that are no label, gathered for the message before it stops counting
GRID_ORDER = "x, y, z"  # how headers list size, spacing and origin (messages say so)


@dataclass(frozen=True)
class LabelMap:
    """A decoded label map: `voxels` in numpy order ([z, y, x], or [y, x]), every value one of the
    declared labels, as uint8 when the labels fit (else uint16, else int64); `geometry` as the
    header gives it (x, y, z order; 2D when a single-slice volume was read as 2D)."""

    voxels: np.ndarray
    geometry: Geometry

    @property
    def spacing(self) -> tuple[float, ...]:
        """The spacing in the array's axis order (z, y, x): what metrics take as `spacing`."""
        return tuple(float(s) for s in reversed(self.geometry.spacing))

    @property
    def voxel_volume(self) -> float:
        return self.geometry.voxel_volume


def _vector(values) -> str:
    return "(" + ", ".join(f"{v + 0:g}" for v in values) + ")"  # -0.0 + 0 is 0.0: never "-0"


def fitted_geometry(geometry: Geometry, dimensions: int) -> Geometry:
    """`geometry` with a trailing single slice dropped when a 2D grid is expected (2D images are
    often written as one slice of a volume): size, spacing and origin lose z, the direction its
    z row and column. Any other geometry is returned as it is."""
    if len(geometry.size) == dimensions + 1 and geometry.size[-1] == 1:
        n = len(geometry.size)
        direction = np.asarray(geometry.direction, dtype=np.float64).reshape(n, n)[:dimensions, :dimensions]
        return Geometry(geometry.size[:dimensions], geometry.spacing[:dimensions], geometry.origin[:dimensions],
                        tuple(direction.reshape(-1).tolist()))
    return geometry


def grid_problem(found: Geometry, expected: Geometry, what: str, reference: str,
                 tolerance: float = GRID_TOLERANCE) -> str | None:
    """How `found` differs from the `expected` grid, as the end of one sentence ("the <what>'s
    spacing (1, 1, 2.5) differs from the <reference>'s (0.98, 0.98, 3) ..."), or None when they
    agree within `tolerance` (see the module docstring). The dimensionality is checked first,
    then size, spacing, origin, direction; the first attribute that differs is quoted with both
    values, any other is named."""
    dimensions = len(expected.size)
    found = fitted_geometry(found, dimensions)
    if len(found.size) != dimensions:
        return (f"the {what} is {len(found.size)}D, size {_vector(found.size)}, where the {reference} is "
                f"{dimensions}D, size {_vector(expected.size)}")
    different = []
    if tuple(found.size) != tuple(expected.size):
        different.append("size")
    for name in ("spacing", "origin", "direction"):
        mine, theirs = np.asarray(getattr(expected, name)), np.asarray(getattr(found, name))
        if mine.shape != theirs.shape or not np.allclose(theirs, mine, rtol=tolerance, atol=tolerance):
            different.append(name)
    if not different:
        return None
    first = different[0]
    order = GRID_ORDER[:3 * dimensions - 2] if first != "direction" else "row by row"
    text = (f"the {what}'s {first} {_vector(getattr(found, first))} differs from the {reference}'s "
            f"{_vector(getattr(expected, first))} ({order}")
    text += ")" if first == "size" else f"; tolerance {tolerance:g})"
    if len(different) > 1:
        others = different[1:]
        text += f", and so {'does' if len(others) == 1 else 'do'} its {' and '.join(others)}"
    return text


def check_grid(image: ImageFile, expected: Geometry, name: str, *, what: str = "segmentation",
               reference: str = "ground truth", tolerance: float = GRID_TOLERANCE) -> None:
    """Refuse (image.origin.fail: exit 1 for a submission) an image whose header is not on the
    `expected` grid, in one sentence: "<name>: the <what>'s spacing (...) differs from the
    <reference>'s (...) (x, y, z; tolerance 0.0001); label maps are never resampled." Only the
    header is used: nothing is decoded."""
    problem = grid_problem(image.geometry, expected, what, reference, tolerance)
    if problem is not None:
        image.origin.fail(f"{name}: {problem}; label maps are never resampled.")


def _voxel_count(n: int) -> str:
    return f"{n} voxel" if n == 1 else f"{n} voxels"


def _label_dtype(labels: np.ndarray) -> np.dtype:
    low, high = int(labels.min()), int(labels.max())
    if low >= 0 and high <= 255:
        return np.dtype(np.uint8)
    if low >= 0 and high <= 65535:
        return np.dtype(np.uint16)
    return np.dtype(np.int64)


def label_voxels(array: np.ndarray, labels: Sequence[int], origin: Origin, subject: str, *,
                 labels_text: str | None = None) -> np.ndarray:
    """`array` as a label map whose every value is one of `labels`, as uint8 when they fit (no
    copy when it already is uint8; a boolean array is viewed as uint8), else uint16 or int64.
    Otherwise origin.fail, one sentence: "<subject> holds label(s) 3 (1 voxel), 7 (2 voxels);
    only <labels_text> are allowed." (`subject`: "Case 7: the segmentation", "Ground truth
    7.nii.gz"; a pixel type that holds no labels: "<subject> has pixels of type complex64; ...").

    Cost: one min/max pass when the labels are a whole range (0..K) and every value lies in it
    (floats: and a whole-number test); otherwise one pass in slabs, a lookup table for 8- and
    16-bit integers, np.isin for wider types. Never np.unique of the whole volume (only of the
    values that are no label, for the message)."""
    allowed = np.unique(np.asarray(list(labels), dtype=np.int64))
    if allowed.size == 0:
        raise ValueError("label_voxels needs at least one allowed label")
    allowed_text = labels_text or _labels_text(allowed)
    target = _label_dtype(allowed)
    if array.dtype == bool:
        array = array.view(np.uint8)
    kind = array.dtype.kind
    if kind not in "iuf":
        origin.fail(f"{subject} has pixels of type {array.dtype}; a label map holds whole numbers "
                    f"(only {allowed_text} are allowed).")
    if array.size == 0:
        return array.astype(target, copy=False)
    low, high = array.min(), array.max()
    contiguous = allowed.size == int(allowed[-1]) - int(allowed[0]) + 1
    in_range = bool(low >= allowed[0]) and bool(high <= allowed[-1])  # False for NaN
    if contiguous and in_range and (kind != "f" or _all_whole(array)):
        return array if array.dtype == target else array.astype(target)
    stray = _stray_values(array, allowed)
    if not stray:  # non-contiguous labels, every value among them
        return array if array.dtype == target else array.astype(target)
    values, truncated = stray
    if truncated:  # counts of the first voxels only: not shown
        listed = (", ".join(_number(v) for v, _ in values[:5]) + f" and others (over {MAX_REPORTED_VOXELS} voxels hold "
                  f"values that are no label)")
    else:
        listed = id_list((f"{_number(v)} ({_voxel_count(n)})" for v, n in values), limit=5)
    origin.fail(f"{subject} holds label(s) {listed}; only {allowed_text} are allowed.")


def _labels_text(allowed: np.ndarray) -> str:
    """'0, 1 and 2'; '0 to 40' for a longer range; the first and the count for any other long set."""
    values = [str(v) for v in allowed.tolist()]
    if len(values) == 1:
        return values[0]
    if len(values) <= 6:
        return ", ".join(values[:-1]) + " and " + values[-1]
    if len(values) == int(allowed[-1]) - int(allowed[0]) + 1:
        return f"{values[0]} to {values[-1]}"
    return ", ".join(values[:5]) + f" and {len(values) - 5} more"


def _number(value: float) -> str:
    if isinstance(value, float) and np.isnan(value):
        return "NaN"
    return f"{value:g}"


def _all_whole(array: np.ndarray) -> bool:
    flat = array.reshape(-1)
    for start in range(0, flat.size, LABEL_SLAB):
        part = flat[start:start + LABEL_SLAB]
        if not np.array_equal(part, np.floor(part)):
            return False
    return True


def _stray_values(array: np.ndarray, allowed: np.ndarray):
    """([(value, voxels)] of the values that are no label, sorted, and whether the list is
    incomplete), or [] when there is none. One pass in slabs. 8- and 16-bit integers are counted
    exactly (np.bincount over the type's range); wider types and floats gather the values that
    are no label, stopping once MAX_REPORTED_VOXELS are seen (a probability map is all such
    values: its first ones are enough to say what is wrong)."""
    flat = array.reshape(-1)
    if array.dtype.kind in "iu" and array.dtype.itemsize <= 2:
        # a table over the type's whole range says which values are no label; only those are counted
        info = np.iinfo(array.dtype)
        offset = int(info.min)
        is_stray = np.ones(int(info.max) - offset + 1, dtype=bool)
        is_stray[allowed[(allowed >= info.min) & (allowed <= info.max)] - offset] = False
        counts = np.zeros(is_stray.size, dtype=np.int64)
        for start in range(0, flat.size, LABEL_SLAB):
            part = flat[start:start + LABEL_SLAB]
            index = part.astype(np.intp) - offset if offset else part
            stray = is_stray[index]
            if stray.any():
                counts += np.bincount(index[stray], minlength=counts.size)
        present = np.flatnonzero(counts)
        if present.size == 0:
            return []
        return [(int(v) + offset, int(counts[v])) for v in present], False
    found: list[np.ndarray] = []
    seen = 0
    for start in range(0, flat.size, LABEL_SLAB):
        part = flat[start:start + LABEL_SLAB]
        stray = ~np.isin(part, allowed)  # floats: 0.5 and NaN are no label
        if stray.any():
            found.append(part[stray])
            seen += found[-1].size
            if seen >= MAX_REPORTED_VOXELS:
                break
    if not found:
        return []
    values, counts = np.unique(np.concatenate(found), return_counts=True, equal_nan=True)
    return [(v.item(), int(n)) for v, n in zip(values, counts, strict=True)], seen >= MAX_REPORTED_VOXELS


def read_label_map(image: ImageFile, expected: Geometry, labels: Sequence[int], name: str, *,
                   what: str = "segmentation", reference: str = "ground truth", labels_text: str | None = None,
                   tolerance: float = GRID_TOLERANCE) -> LabelMap:
    """A submitted label map on the ground truth's grid: `image` (open_image or Case.image: the
    header alone) checked against `expected` (the ground truth's Geometry) by check_grid before
    decoding, then its values by label_voxels. Every refusal is image.origin's (a submission's:
    SubmissionError, exit 1), one sentence starting with `name` (the case: "Case 7")."""
    check_grid(image, expected, name, what=what, reference=reference, tolerance=tolerance)
    voxels = image.read(tuple(reversed(expected.size)))
    geometry = fitted_geometry(image.geometry, len(expected.size))
    subject = f"{name}: the {what}"
    return LabelMap(label_voxels(voxels, labels, image.origin, subject, labels_text=labels_text), geometry)


def read_truth_label_map(ground_truth_dir: Path, path: Path, labels: Sequence[int], *,
                         dimensions: int | tuple[int, ...] | None = None,
                         labels_text: str | None = None) -> LabelMap:
    """The ground truth's label map at `path` (inside `ground_truth_dir`): read with
    Origin.ground_truth, so that any problem is the organizer's (SetupError, exit 3), one
    sentence "Ground truth <file>: ...". `dimensions`: 2, 3 or (2, 3), the dimensionalities the
    challenge accepts (None: any)."""
    origin = Origin.ground_truth(ground_truth_dir)
    where = f"Ground truth {Path(path).name}"
    image = open_image(origin, path, where)
    accepted = (dimensions,) if isinstance(dimensions, int) else dimensions
    if accepted is not None and len(image.geometry.size) not in accepted:
        wanted = " or ".join(f"{d}D" for d in accepted)
        origin.fail(f"{where}: the label map is {len(image.geometry.size)}D ({shape_text(image.geometry.size)}); "
                    f"a {wanted} label map is expected.")
    voxels = image.read(None)
    return LabelMap(label_voxels(voxels, labels, origin, where, labels_text=labels_text),
                    image.geometry)


# ---- the ground truth's label maps, one per case ------------------------------------------------


def truth_label_map_files(directory: Path, suffixes: Sequence[str], case_label: str = "case",
                          case_id_text: str = "<case id>") -> dict[str, Path]:
    """{case id: its ground-truth label map}: one <case id><one of `suffixes`> per case, read in
    the worker that scores the case; another file (besides config.json and case-mapping.json,
    folders and hidden files) or a case given twice is the organizer's error (SetupError), named
    with the challenge's words for a case (`case_label`: "patient"; `case_id_text`: "<PatientID>")."""
    wanted = tuple(suffix.lower() for suffix in suffixes)
    listed = ", ".join(wanted[:-1]) + f" or {wanted[-1]}" if len(wanted) > 1 else wanted[0]
    maps: dict[str, Path] = {}
    for path in sorted(directory.iterdir()):
        if path.is_dir() or path.name in RESERVED_GROUND_TRUTH_FILES or path.name.startswith("."):
            continue
        check_ground_truth_file(path)  # a named pipe or a link to nothing is refused, not left out
        if not path.name.lower().endswith(wanted):
            raise SetupError(f"Ground truth {path.name}: expected only {case_id_text}{listed} label maps (besides "
                             f"config.json and case-mapping.json).")
        case_id = strip_extension(path.name)
        if case_id in maps:
            raise SetupError(f"Ground truth: {case_label} {case_id} has two label maps ({maps[case_id].name} and "
                             f"{path.name}).")
        maps[case_id] = path
    return maps


# ---- instance maps: labels not declared, any non-negative whole numbers -------------------------


def read_instance_map(image: ImageFile, expected: Geometry, tolerance: float, case_name: str,
                      what: str) -> np.ndarray:
    """A submitted instance map on the ground truth's grid (check_grid, before decoding), its
    values any non-negative whole numbers (whole_labels): an instance map's labels are not declared."""
    check_grid(image, expected, case_name, what=what, tolerance=tolerance)
    return whole_labels(image.read(tuple(reversed(expected.size))), image.origin, f"{case_name}: the {what}")


def read_truth_instance_map(truth: Origin, path: Path) -> tuple[np.ndarray, Geometry]:
    """A ground-truth instance map and its grid (any problem the organizer's)."""
    image = open_image(truth, path, f"Ground truth {path.name}")
    return whole_labels(image.read(None), truth, f"Ground truth {path.name}"), image.geometry


def whole_labels(array: np.ndarray, origin: Origin, subject: str) -> np.ndarray:
    """`array` as a map of non-negative whole numbers (uint8 when they fit, else uint16, else
    int64), or origin.fail, one sentence: "<subject> holds value(s) -1 (3 voxels), NaN (1 voxel);
    an instance map holds 0 (background) and positive whole numbers." One pass in slabs; the bad
    values gathered for the message stop at MAX_REPORTED_VOXELS voxels (a probability map is all such)."""
    if array.dtype == bool:
        return array.view(np.uint8)
    if array.dtype.kind not in "iuf":
        origin.fail(f"{subject} has pixels of type {array.dtype}; an instance map holds 0 (background) and positive "
                    f"whole numbers.")
    flat = array.reshape(-1)
    bad: list[np.ndarray] = []
    seen, high = 0, 0
    for start in range(0, flat.size, LABEL_SLAB):
        part = flat[start:start + LABEL_SLAB]
        wrong = part < 0
        if array.dtype.kind == "f":
            wrong |= ~np.isfinite(part) | (part != np.floor(part))
        if wrong.any():
            bad.append(part[wrong])
            seen += bad[-1].size
            if seen >= MAX_REPORTED_VOXELS:
                break
        elif part.size:
            high = max(high, part.max().item())
    if bad:
        values, voxels = np.unique(np.concatenate(bad), return_counts=True, equal_nan=True)
        listed = id_list((f"{_number(v)} ({_voxel_count(n)})"
                          for v, n in zip(values.tolist(), voxels.tolist(), strict=True)), 5)
        origin.fail(f"{subject} holds value(s) {listed}; an instance map holds 0 (background) and positive whole "
                    f"numbers.")
    target = np.uint8 if high <= 255 else np.uint16 if high <= 65535 else np.int64
    return array if array.dtype == target else array.astype(target)
