"""Reading label images for the kinds that score them (lesions, instances), beside the shared
reader of declared labels (evaluation/reading/label_maps.py: a mask or class map whose labels
are declared): the ground truth's images of a folder, one per case, and instance maps, whose
labels are not declared but any non-negative whole numbers.

An instance map's header is compared with the ground truth's before it is decoded (label_maps.
check_grid: another grid is refused, never resampled); then its values: an integer map, or a
float map holding whole numbers only (NaN, 0.5 refused), with no negative label. Each refusal is
one sentence naming the case (SubmissionError) or the ground-truth file (SetupError).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evaluation.errors import id_list
from evaluation.platform.locations import ground_truth_files, strip_extension
from evaluation.reading.files import Origin
from evaluation.reading.images import FORMATS, Geometry, ImageFile, open_image
from evaluation.reading.label_maps import check_grid

SLAB = 1 << 22  # voxels checked at a time: no full-size float temporaries
MAX_REPORTED = 1 << 22  # bad values gathered for the message at most
TRUTH_SUFFIXES = (".mha", ".nii.gz", ".nii", ".nrrd")


def truth_images(truth: Origin, directory: Path) -> dict[str, Path]:
    """{case id: its ground-truth image} in `directory`, one label image per case (.mha, .nii.gz,
    .nii or .nrrd); a case id given twice, or a file of another format, is the organizer's error."""
    found: dict[str, Path] = {}
    every = {path for suffix in FORMATS for path in ground_truth_files(directory, suffix)}
    listed = {path for suffix in TRUTH_SUFFIXES for path in ground_truth_files(directory, suffix)}
    for path in sorted(every - listed):
        truth.fail(f"Ground truth {path.name}: expected label images .mha, .nii.gz, .nii or .nrrd only.")
    for path in sorted(listed):
        case_id = strip_extension(path.name)
        if case_id in found:
            truth.fail(f"Ground truth: case {case_id} has two images ({found[case_id].name} and {path.name}).")
        found[case_id] = path
    return found


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
    values gathered for the message stop at MAX_REPORTED voxels (a probability map is all such)."""
    if array.dtype == bool:
        return array.view(np.uint8)
    if array.dtype.kind not in "iuf":
        origin.fail(f"{subject} has pixels of type {array.dtype}; an instance map holds 0 (background) and positive "
                    f"whole numbers.")
    flat = array.reshape(-1)
    bad: list[np.ndarray] = []
    seen, high = 0, 0
    for start in range(0, flat.size, SLAB):
        part = flat[start:start + SLAB]
        wrong = part < 0
        if array.dtype.kind == "f":
            wrong |= ~np.isfinite(part) | (part != np.floor(part))
        if wrong.any():
            bad.append(part[wrong])
            seen += bad[-1].size
            if seen >= MAX_REPORTED:
                break
        elif part.size:
            high = max(high, part.max().item())
    if bad:
        values, voxels = np.unique(np.concatenate(bad), return_counts=True, equal_nan=True)
        listed = id_list((_counted(v, n) for v, n in zip(values.tolist(), voxels.tolist(), strict=True)), 5)
        origin.fail(f"{subject} holds value(s) {listed}; an instance map holds 0 (background) and positive whole "
                    f"numbers.")
    target = np.uint8 if high <= 255 else np.uint16 if high <= 65535 else np.int64
    return array if array.dtype == target else array.astype(target)


def _counted(value, voxels: int) -> str:
    number = "NaN" if isinstance(value, float) and np.isnan(value) else f"{value:g}"
    return f"{number} ({voxels} voxel{'s' if voxels != 1 else ''})"
