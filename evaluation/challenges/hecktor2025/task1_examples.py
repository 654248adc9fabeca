"""HECKTOR 2025 task 1: small synthetic PET/CT-like label maps, a ground truth and an algorithm
job per patient whose mask moves, resizes, misses and adds lesions."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from evaluation.challenges.hecktor2025 import HecktorTask1
from evaluation.challenges.hecktor2025.examples import image_inputs, organizer_inputs, synthetic_patients
from evaluation.challenges.hecktor2025.segmentation import GTVN, GTVP, Task1Settings
from evaluation.declarations.examples import Example, Lineup
from evaluation.platform import synthetic
from evaluation.reading.images import Geometry

OUTPUT_SLUG = "tumor-lymph-node-segmentation"


def synthesize(out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
    """Small PET/CT-like label maps (24 x 48 x 48 voxels, anisotropic spacing that differs
    between patients): an ellipsoidal GTVp (absent in one patient) and 0-3 GTVn nodes; the
    prediction shifts and resizes them, misses some nodes and adds false ones."""
    import SimpleITK as sitk

    rng = np.random.default_rng(seed)
    patients = synthetic_patients(rng, 6 if cases is None else cases)
    input_dir, ground_truth = out_dir / "input", out_dir / "ground-truth"
    ground_truth.mkdir(parents=True, exist_ok=True)
    jobs = []
    for number, patient in enumerate(patients):
        spacing = (float(rng.choice([0.98, 1.17])), ) * 2 + (float(rng.choice([2.0, 3.0])),)
        geometry = Geometry((48, 48, 24), spacing, (-120.0, -110.0, float(rng.uniform(-400, -300))),
                            (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0))
        truth, prediction = synthetic_pair(rng, with_gtvp=number != 1, shape=(24, 48, 48))
        write_mask(sitk, truth, geometry, ground_truth / f"{patient}.nii.gz")
        pk = synthetic.job_pk(rng)
        image_name = f"{synthetic.job_pk(rng)}.mha"
        relative = f"images/{OUTPUT_SLUG}"
        write_mask(sitk, prediction, geometry, input_dir / pk / "output" / relative / image_name)
        output = {"pk": number, "file": None, "value": None, "image": {"pk": f"image-{number}", "name": image_name},
                  "socket": synthetic.socket(OUTPUT_SLUG, "Segmentation", "Image", relative)}
        jobs.append(synthetic.job(pk, image_inputs(patient), [output], seconds=float(rng.uniform(60, 300))))
    order = rng.permutation(len(jobs))
    synthetic.write_predictions(input_dir, [jobs[i] for i in order])


def submission(ground_truth_dir: Path, input_dir: Path, seed: int = 0) -> None:
    """A valid submission for any task 1 ground truth (the organizer's own): per patient, its
    label map shifted by one voxel in the axial plane (GTVp Dice high but below 1, most GTVn
    lesions still matched), written as .mha on the ground truth's own grid (size, spacing,
    origin, direction copied from it). One patient's mask in memory at a time."""
    import SimpleITK as sitk

    evaluation = HecktorTask1(ground_truth_dir)  # its config.json and case-mapping.json apply
    slug = evaluation.settings.output_socket
    relative = synthetic.checked(f"images/{slug}", synthetic.setting_name("output_socket"))  # before any write
    rng = np.random.default_rng(seed)
    jobs = []
    for number, patient in enumerate(sorted(evaluation.ground_truth)):
        truth = sitk.ReadImage(str(evaluation.ground_truth[patient]))  # the organizer's file: trusted
        offsets = (0, 0, 0)
        while offsets == (0, 0, 0):  # array axes (z, y, x): y and x only
            offsets = (0, *(int(v) for v in rng.integers(-1, 2, 2)))
        labels = synthetic.shifted(sitk.GetArrayFromImage(truth).astype(np.uint8), offsets)
        prediction = sitk.GetImageFromArray(labels)
        prediction.CopyInformation(truth)
        pk = synthetic.job_pk(rng)
        image_name = f"{synthetic.job_pk(rng)}.mha"
        path = input_dir / pk / "output" / relative / image_name
        path.parent.mkdir(parents=True, exist_ok=True)
        sitk.WriteImage(prediction, str(path), useCompression=True)
        output = {"pk": number, "file": None, "value": None, "image": {"pk": f"image-{number}", "name": image_name},
                  "socket": synthetic.socket(slug, "Segmentation", "Image", relative)}
        jobs.append(synthetic.job(pk, organizer_inputs(evaluation, patient), [output],
                                  seconds=float(rng.uniform(60, 300))))
    order = rng.permutation(len(jobs))  # the platform lists jobs in no particular order
    synthetic.write_predictions(input_dir, [jobs[i] for i in order])


def invalid_examples(input_dir: Path, slug: str = OUTPUT_SLUG,
                     geometry_tolerance: float = 1e-4) -> dict[str, dict[str, bytes | None]]:
    """The first patient's mask (output `slug`) with another spacing (along z, half as large
    again, or more if the tolerance would accept that), and with a voxel labelled 3."""
    import SimpleITK as sitk

    jobs = json.loads((input_dir / "predictions.json").read_text())
    first = min(jobs, key=lambda job: job["inputs"][0]["image"]["name"])
    (output,) = [o for o in first["outputs"] if o["socket"]["slug"] == slug]
    folder = input_dir / first["pk"] / "output" / output["socket"]["relative_path"]
    (path,) = folder.glob("*.mha")
    relative = path.relative_to(input_dir).as_posix()
    image = sitk.ReadImage(str(path))
    array = sitk.GetArrayFromImage(image)
    spacing = list(image.GetSpacing())
    # outside |Δ| <= tol + tol·|s| (the geometry check) by a factor of two at least
    spacing[2] *= 1 + max(0.5, 2 * geometry_tolerance * (1 + 1 / spacing[2]))
    resampled = sitk.GetImageFromArray(array)
    resampled.CopyInformation(image)
    resampled.SetSpacing(spacing)
    stray = array.copy()
    stray[0, 0, 0] = 3
    labelled = sitk.GetImageFromArray(stray)
    labelled.CopyInformation(image)
    return {"other-spacing": {relative: image_bytes(sitk, resampled)},
            "stray-label": {relative: image_bytes(sitk, labelled)}}


# ---- synthetic masks -------------------------------------------------------------------------


def ellipsoid(shape, center, radii) -> np.ndarray:
    grids = np.ogrid[tuple(slice(0, s) for s in shape)]
    return sum(((g - c) / r) ** 2 for g, c, r in zip(grids, center, radii, strict=True)) <= 1.0


def synthetic_pair(rng: np.random.Generator, with_gtvp: bool, shape) -> tuple[np.ndarray, np.ndarray]:
    """(truth, prediction) uint8 label maps with a GTVp near the centre and a few GTVn nodes on
    either side; the prediction moves and resizes each structure, misses ~25% of nodes, adds
    false ones."""
    truth = np.zeros(shape, dtype=np.uint8)
    prediction = np.zeros(shape, dtype=np.uint8)
    z, y, x = shape
    if with_gtvp:
        center = np.array([z / 2, y / 2, x / 2]) + rng.uniform(-2, 2, 3)
        radii = np.array([3.0, 6.0, 6.0]) * rng.uniform(0.8, 1.2, 3)
        truth[ellipsoid(shape, center, radii)] = GTVP
        prediction[ellipsoid(shape, center + rng.normal(0, 0.8, 3), radii * rng.uniform(0.8, 1.2, 3))] = GTVP
    for _ in range(int(rng.integers(0, 5))):
        center = np.array([rng.uniform(4, z - 4), rng.uniform(8, y - 8),
                           rng.choice([rng.uniform(5, 14), rng.uniform(x - 14, x - 5)])])
        radii = np.array([1.5, 2.5, 2.5]) * rng.uniform(0.8, 1.6)
        truth[ellipsoid(shape, center, radii) & (truth == 0)] = GTVN
        if rng.random() < 0.75:
            prediction[ellipsoid(shape, center + rng.normal(0, 0.5, 3), radii * rng.uniform(0.85, 1.2))
                       & (prediction == 0)] = GTVN
    for _ in range(int(rng.integers(0, 2))):
        center = np.array([rng.uniform(4, z - 4), rng.uniform(8, y - 8), rng.uniform(5, x - 5)])
        prediction[ellipsoid(shape, center, np.array([1.2, 2.0, 2.0])) & (prediction == 0)] = GTVN
    return truth, prediction


def write_mask(sitk, array: np.ndarray, geometry: Geometry, path: Path) -> None:
    image = sitk.GetImageFromArray(array)
    image.SetSpacing(geometry.spacing)
    image.SetOrigin(geometry.origin)
    image.SetDirection(geometry.direction)
    path.parent.mkdir(parents=True, exist_ok=True)
    sitk.WriteImage(image, str(path), useCompression=True)


def image_bytes(sitk, image) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mask.mha"
        sitk.WriteImage(image, str(path), useCompression=True)
        return path.read_bytes()


def invalid_for_ground_truth(ground_truth_dir: Path, input_dir: Path) -> dict[str, dict[str, bytes | None]]:
    """invalid_examples of a `submission` for the organizer's ground truth, on its output socket."""
    settings = Task1Settings.from_ground_truth(ground_truth_dir)
    return invalid_examples(input_dir, settings.output_socket, settings.geometry_tolerance)


EXAMPLES = {"hecktor2025-task1": Example(synthesize=synthesize, invalid_examples=invalid_examples,
                                         submission=submission, invalid_for_ground_truth=invalid_for_ground_truth,
                                         lineup=Lineup(seeds=(0, 7), invalid="stray-label"))}
