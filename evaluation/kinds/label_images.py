"""Reading label images for the kinds that score them (lesions, instances): a job's image on the
ground truth's grid, and its values checked to be whole labels before any metric sees them.

The prediction's header is compared with the ground truth's before either is decoded (another
grid is refused, never resampled, so a header claiming billions of voxels is never decoded);
then the values: an integer map, or a float map holding whole numbers only (NaN, 0.5 refused),
with no negative label and, when the challenge declares its labels, no other label. Each refusal
is one sentence naming the case (SubmissionError) or the ground-truth file (SetupError).

Until the shared N-D label-map reader of evaluation/reading/ exists, this is the kinds' own.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import numpy as np

from evaluation.errors import id_list
from evaluation.grand_challenge import ground_truth_files, strip_extension
from evaluation.reading.files import Origin
from evaluation.reading.images import FORMATS, Geometry, ImageFile, open_image

SLAB = 1 << 22  # voxels checked at a time: no full-size float temporaries
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


def on_truth_grid(prediction: ImageFile, truth: ImageFile, tolerance: float, case_name: str, what: str) -> None:
    """SubmissionError unless the prediction's header gives the ground truth's grid: the same size
    (hence dimensionality), and spacing, origin and direction within `tolerance` (relative)."""
    different = truth.geometry.differences(prediction.geometry, rtol=tolerance)
    if different:
        verb = "differs" if len(different) == 1 else "differ"
        prediction.origin.fail(f"{case_name}: the {what}'s {' and '.join(different)} {verb} from the ground truth's "
                               f"and images are not resampled: expected {truth.geometry.describe()}; found "
                               f"{prediction.geometry.describe()}.")


def read_pair(prediction: ImageFile, truth_path: Path, truth: Origin, tolerance: float, case_name: str,
              what: str) -> tuple[np.ndarray, np.ndarray, Geometry]:
    """(prediction, ground truth, the grid) decoded once the two headers agree."""
    truth_image = open_image(truth, truth_path, f"Ground truth {truth_path.name}")
    on_truth_grid(prediction, truth_image, tolerance, case_name, what)
    return prediction.read(truth_image.shape), truth_image.read(None), truth_image.geometry


def whole_labels(array: np.ndarray, origin: Origin, what: str, allowed: Collection[int] | None = None) -> np.ndarray:
    """`array` as an integer label map (uint8 when every value fits, else int64), or `origin`'s
    error naming the bad values: a float that is not a whole number (NaN included), a negative
    label, or, with `allowed`, a label not in it (0, the background, always allowed)."""
    if array.dtype == bool:
        return array.view(np.uint8)
    if array.dtype.kind not in "iuf":
        origin.fail(f"{what}: the image holds values of type {array.dtype}; a label image of whole numbers is "
                    f"expected.")
    flat = array.reshape(-1)
    bad = []
    low, high = 0, 0
    for start in range(0, flat.size, SLAB):
        part = flat[start:start + SLAB]
        if array.dtype.kind == "f":
            whole = np.isfinite(part) & (part == np.floor(part))
            if not whole.all():
                bad.append(part[~whole])
                continue
        if part.size:
            low, high = min(low, part.min().item()), max(high, part.max().item())
    if bad:
        values, voxels = np.unique(np.concatenate(bad), return_counts=True)
        origin.fail(f"{what}: the image holds values that are not whole labels: "
                    f"{id_list((_counted(v, n) for v, n in zip(values.tolist(), voxels.tolist(), strict=True)), 5)}.")
    if low < 0:
        values, voxels = np.unique(flat[flat < 0], return_counts=True)
        origin.fail(f"{what}: the image holds negative labels: "
                    f"{id_list((_counted(v, n) for v, n in zip(values.tolist(), voxels.tolist(), strict=True)), 5)}; "
                    f"labels are 0 (background) and positive whole numbers.")
    labels = array.astype(np.uint8 if high <= 255 else np.int64, copy=False)
    if allowed is not None:
        largest = max(high, max(allowed, default=0))
        if largest < 1 << 24:  # a table of the labels: one bincount pass
            permitted = np.zeros(largest + 1, dtype=bool)
            permitted[0] = True
            permitted[list(allowed)] = True
            counts = _label_counts(labels, high)
            stray = np.flatnonzero((counts > 0) & ~permitted[:len(counts)])
            stray_counts = counts[stray]
        else:
            values, voxel_counts = np.unique(labels, return_counts=True)
            keep = ~np.isin(values, [0, *allowed])
            stray, stray_counts = values[keep], voxel_counts[keep]
        if len(stray):
            allowed_text = ", ".join(str(label) for label in sorted({0, *allowed}))
            found = zip(stray.tolist(), stray_counts.tolist(), strict=True)
            origin.fail(f"{what}: the image holds label(s) {id_list((_counted(v, n) for v, n in found), 5)}; only "
                        f"{allowed_text} are allowed.")
    return labels


def _label_counts(labels: np.ndarray, high: int) -> np.ndarray:
    counts = np.zeros(high + 1, dtype=np.int64)
    flat = labels.reshape(-1)
    for start in range(0, flat.size, SLAB):
        counts += np.bincount(flat[start:start + SLAB], minlength=high + 1)
    return counts


def _counted(value, voxels: int) -> str:
    number = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{number} ({voxels} voxel{'s' if voxels != 1 else ''})"
