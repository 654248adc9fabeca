"""The test submissions made for an organizer's own ground truth (Example.submission) of CSV 2026
and HECKTOR 2025 tasks 1-3: on the bundled ground truth and on a synthetic one of another seed,
with a config.json renaming sockets and with a case-mapping.json, each is scored by the command
line without error, every ranked value finite, its scores those of a copy of the truth close to
it but not equal; and the same seed writes the same bytes."""

import json
import math
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import SimpleITK as sitk

from evaluation import examples
from evaluation.challenges import available_challenges

ROOT = Path(__file__).resolve().parent.parent
CHALLENGES = ("csv2026", "hecktor2025-task1", "hecktor2025-task2", "hecktor2025-task3")
# config.json settings renaming every socket the submission uses, and HECKTOR's modality suffix
RENAMED_SOCKETS = {
    "csv2026": {"longitudinal_input_socket": "long-us", "longitudinal_output_socket": "long-seg",
                "transverse_output_socket": "trans-seg", "risk_output_socket": "risk-class"},
    "hecktor2025-task1": {"input_socket": "ct", "output_socket": "the-output", "modality_suffixes": ["_0000"]},
    "hecktor2025-task2": {"input_socket": "ct", "output_socket": "the-output", "modality_suffixes": ["_0000"]},
    "hecktor2025-task3": {"input_socket": "ct", "output_socket": "the-output", "modality_suffixes": ["_0000"]},
}


def make_submission(challenge: str, ground_truth: Path, input_dir: Path, seed: int = 0) -> Path:
    examples.example(challenge).submission(ground_truth, input_dir, seed)
    return input_dir


def scored(evaluate, challenge: str, input_dir: Path, ground_truth: Path) -> dict:
    """metrics.json of a run of the command line that must succeed with every ranked path finite."""
    run = evaluate(challenge, input_dir, ground_truth, "--workers", "1")
    assert run.code == 0, run.stderr
    metrics = json.loads((run.output / "metrics.json").read_text())
    for path in available_challenges()[challenge].ranked_paths:
        value = metrics
        for key in path.split("."):
            value = value[key]
        assert isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value), path
    return metrics


def assert_close_to_the_truth(challenge: str, metrics: dict) -> None:
    """What a slightly perturbed copy of the truth scores: well above chance, below perfect."""
    aggregates = metrics["aggregates"]
    if challenge == "csv2026":
        for view in ("long", "trans"):
            assert 0.7 < aggregates[f"{view}_vessel_dsc"] < 1.0
            assert 0.7 < aggregates[f"{view}_vessel_nsd"] <= 1.0
        assert 0.0 < aggregates["macro_f1"] < 1.0
        assert 0.0 < aggregates["score_time"] <= 100.0  # the durations sum to about the baseline
    elif challenge == "hecktor2025-task1":
        assert 0.6 < aggregates["gtvp_dsc_mean"] < 1.0
        assert metrics["counts"]["gtvn_true_lesions"] > 0
        assert 0.4 < aggregates["gtvn_dsc_agg"] < 1.0
        assert aggregates["gtvn_f1_agg"] > 0.5
    elif challenge == "hecktor2025-task2":
        assert 0.6 < aggregates["c_index"] < 1.0
    else:
        assert 0.6 < aggregates["balanced_accuracy"] < 1.0


def synthetic_ground_truth(challenge: str, folder: Path) -> Path:
    examples.synthesize(challenge, folder, seed=7)
    return folder / "ground-truth"


def copied_ground_truth(challenge: str, folder: Path) -> Path:
    target = folder / "ground-truth"
    shutil.copytree(ROOT / "ground-truth" / challenge, target)
    return target


def jobs_of(input_dir: Path) -> list[dict]:
    return json.loads((input_dir / "predictions.json").read_text())


@pytest.mark.parametrize("challenge", CHALLENGES)
def test_submission_for_the_bundled_ground_truth(challenge, tmp_path, evaluate):
    ground_truth = ROOT / "ground-truth" / challenge
    input_dir = make_submission(challenge, ground_truth, tmp_path / "input")
    metrics = scored(evaluate, challenge, input_dir, ground_truth)
    assert_close_to_the_truth(challenge, metrics)
    assert len(jobs_of(input_dir)) == len(available_challenges()[challenge](ground_truth).ground_truth)


@pytest.mark.parametrize("challenge", CHALLENGES)
def test_submission_for_another_synthetic_ground_truth(challenge, tmp_path, evaluate):
    ground_truth = synthetic_ground_truth(challenge, tmp_path / "synthetic")
    input_dir = make_submission(challenge, ground_truth, tmp_path / "input", seed=3)
    assert_close_to_the_truth(challenge, scored(evaluate, challenge, input_dir, ground_truth))


def test_hecktor_task1_masks_carry_the_ground_truth_geometry(tmp_path):
    """Read back independently: each prediction is on its patient's grid, bit for bit, and
    is the truth moved by one voxel in the axial plane (same label counts up to the border)."""
    ground_truth = ROOT / "ground-truth" / "hecktor2025-task1"
    input_dir = make_submission("hecktor2025-task1", ground_truth, tmp_path / "input")
    for job in jobs_of(input_dir):
        patient = job["inputs"][0]["image"]["name"].removesuffix("__CT.nii.gz")
        truth = sitk.ReadImage(str(ground_truth / f"{patient}.nii.gz"))
        (path,) = (input_dir / job["pk"] / "output" / "images" / "tumor-lymph-node-segmentation").glob("*.mha")
        prediction = sitk.ReadImage(str(path))
        assert prediction.GetSize() == truth.GetSize()
        assert prediction.GetSpacing() == truth.GetSpacing()
        assert prediction.GetOrigin() == truth.GetOrigin()
        assert prediction.GetDirection() == truth.GetDirection()
        true_labels, predicted = sitk.GetArrayFromImage(truth), sitk.GetArrayFromImage(prediction)
        assert not np.array_equal(true_labels, predicted)
        inner = (slice(None), slice(1, -1), slice(1, -1))
        moves = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)
                 if np.array_equal(np.roll(true_labels, (dy, dx), axis=(1, 2))[inner], predicted[inner])]
        assert len(moves) == 1 and moves[0] != (0, 0)


def test_csv2026_masks_are_the_truth_moved_a_little(tmp_path):
    """Read back independently (h5py for the truth, SimpleITK for the .mha outputs): each view is
    the truth's label map moved by at most 3 pixels per axis, and about one class in six flipped."""
    ground_truth = ROOT / "ground-truth" / "csv2026"
    input_dir = make_submission("csv2026", ground_truth, tmp_path / "input")
    flipped = 0
    for job in jobs_of(input_dir):
        case_id = job["inputs"][0]["image"]["name"].removesuffix(".mha")
        with h5py.File(ground_truth / f"{case_id}_label.h5", "r") as h5:
            truth = {"long": h5["long_mask"][()], "trans": h5["trans_mask"][()]}
            true_class = int(h5["cls"][()])
        for view, slug in (("long", "longitudinal-carotid-segmentation"), ("trans", "transverse-carotid-segmentation")):
            (path,) = (input_dir / job["pk"] / "output" / "images" / slug).glob("*.mha")
            predicted = sitk.GetArrayFromImage(sitk.ReadImage(str(path)))
            inner = (slice(3, -3), slice(3, -3))
            moves = [(dy, dx) for dy in range(-3, 4) for dx in range(-3, 4)
                     if np.array_equal(np.roll(truth[view], (dy, dx), axis=(0, 1))[inner], predicted[inner])]
            assert moves and (0, 0) not in moves
        risk = json.loads((input_dir / job["pk"] / "output" / "plaque-risk.json").read_text())
        flipped += int(risk >= 0.5) != true_class
    assert flipped == round(len(jobs_of(input_dir)) / 6)


@pytest.mark.parametrize("challenge", CHALLENGES)
def test_submission_uses_the_sockets_config_json_names(challenge, tmp_path, evaluate):
    ground_truth = copied_ground_truth(challenge, tmp_path)
    config_path = ground_truth / "config.json"
    config = json.loads(config_path.read_text()) if config_path.exists() else {}
    config_path.write_text(json.dumps({**config, **RENAMED_SOCKETS[challenge]}))
    input_dir = make_submission(challenge, ground_truth, tmp_path / "input")
    if challenge == "csv2026":
        input_slug, output_slugs, input_name_end = "long-us", {"long-seg", "trans-seg", "risk-class"}, ".mha"
    else:
        input_slug, output_slugs, input_name_end = "ct", {"the-output"}, "_0000.nii.gz"
    for job in jobs_of(input_dir):
        inputs = {value["socket"]["slug"]: value for value in job["inputs"]}
        assert inputs[input_slug]["image"]["name"].endswith(input_name_end)
        assert {value["socket"]["slug"] for value in job["outputs"]} == output_slugs
    assert_close_to_the_truth(challenge, scored(evaluate, challenge, input_dir, ground_truth))


@pytest.mark.parametrize("challenge", CHALLENGES)
def test_submission_names_inputs_as_the_case_mapping_says(challenge, tmp_path, evaluate):
    """Every other case mapped to an unrelated image name; the rest keep the naming rule."""
    ground_truth = copied_ground_truth(challenge, tmp_path)
    case_ids = sorted(available_challenges()[challenge](ground_truth).ground_truth)
    mapping = {f"scan-{number:03d}.mha": case_id for number, case_id in enumerate(case_ids) if number % 2 == 0}
    (ground_truth / "case-mapping.json").write_text(json.dumps(mapping))
    input_dir = make_submission(challenge, ground_truth, tmp_path / "input")
    names = sorted(job["inputs"][0]["image"]["name"] for job in jobs_of(input_dir))
    assert [name for name in names if name.startswith("scan-")] == sorted(mapping)
    assert len(names) == len(case_ids)
    assert_close_to_the_truth(challenge, scored(evaluate, challenge, input_dir, ground_truth))


@pytest.mark.parametrize("challenge", CHALLENGES)
def test_same_seed_writes_the_same_bytes(challenge, tmp_path):
    ground_truth = ROOT / "ground-truth" / challenge

    def written(folder: Path) -> dict[str, bytes]:
        return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*"))
                if path.is_file()}

    first = written(make_submission(challenge, ground_truth, tmp_path / "first", seed=5))
    again = written(make_submission(challenge, ground_truth, tmp_path / "again", seed=5))
    other = written(make_submission(challenge, ground_truth, tmp_path / "other", seed=6))
    assert first == again
    assert first["predictions.json"] != other["predictions.json"]


@pytest.mark.parametrize("challenge", ("hecktor2025-task2", "hecktor2025-task3"))
def test_unlabelled_patients_get_a_prediction_too(challenge, tmp_path, evaluate):
    """unlabelled_patients "skip": a patient with an empty value still needs a valid prediction."""
    ground_truth = copied_ground_truth(challenge, tmp_path)
    (csv,) = ground_truth.glob("*.csv")
    header, first, *rest = csv.read_text().splitlines()
    blank = first.split(",")[0] + "," * header.count(",")
    csv.write_text("\n".join([header, blank, *rest]) + "\n")
    (ground_truth / "config.json").write_text(json.dumps({"unlabelled_patients": "skip"}))
    input_dir = make_submission(challenge, ground_truth, tmp_path / "input")
    metrics = scored(evaluate, challenge, input_dir, ground_truth)
    assert metrics["counts"]["unlabelled_patients_skipped"] == 1
    assert_close_to_the_truth(challenge, metrics)


def test_csv2026_without_a_baseline_time_stops_as_the_organizers_error(tmp_path, evaluate):
    """The jobs carry exec_duration, as on the platform: the time score needs the baseline."""
    ground_truth = copied_ground_truth("csv2026", tmp_path)
    (ground_truth / "config.json").write_text(json.dumps({"nsd_tolerance_px": 3}))
    input_dir = make_submission("csv2026", ground_truth, tmp_path / "input")
    run = evaluate("csv2026", input_dir, ground_truth, "--workers", "1")
    assert (run.code, run.wrote_metrics) == (3, False)
    assert "baseline_time_seconds" in run.last_error_line


def test_hecktor_task1_submission_on_an_oblique_int16_ground_truth(tmp_path, evaluate):
    """A ground truth unlike the synthetic one: int16 masks, .nii.gz and .mha, spacing and origin
    with many digits, a rotated direction; the prediction keeps each grid within the tolerance."""
    ground_truth = tmp_path / "ground-truth"
    ground_truth.mkdir()
    angle = 0.3
    direction = (math.cos(angle), -math.sin(angle), 0.0, math.sin(angle), math.cos(angle), 0.0, 0.0, 0.0, 1.0)
    zz, yy, xx = np.mgrid[:12, :40, :36]
    for number, (patient, suffix) in enumerate((("MDA-001", ".nii.gz"), ("USZ-002", ".mha"))):
        labels = np.zeros((12, 40, 36), dtype=np.int16)
        labels[((zz - 6) / 3.0) ** 2 + ((yy - 20) / 7.0) ** 2 + ((xx - 18) / 6.0) ** 2 <= 1] = 1
        labels[((zz - 5) / 2.0) ** 2 + ((yy - 10 - number) / 3.0) ** 2 + ((xx - 30) / 3.0) ** 2 <= 1] = 2
        image = sitk.GetImageFromArray(labels)
        image.SetSpacing((0.9765625, 0.9765625 + number * 0.1234567, 3.27))
        image.SetOrigin((-249.51171875, -412.30000001, -1021.123456789))
        image.SetDirection(direction)
        sitk.WriteImage(image, str(ground_truth / f"{patient}{suffix}"), True)
    input_dir = make_submission("hecktor2025-task1", ground_truth, tmp_path / "input")
    metrics = scored(evaluate, "hecktor2025-task1", input_dir, ground_truth)
    assert 0.6 < metrics["aggregates"]["gtvp_dsc_mean"] < 1.0
    assert 0.4 < metrics["aggregates"]["gtvn_dsc_agg"] < 1.0


@pytest.mark.parametrize("challenge", CHALLENGES)
def test_invalid_variants_for_the_ground_truth_fail_on_renamed_sockets(challenge, tmp_path, evaluate):
    """invalid_for_ground_truth, applied to the submission for a ground truth whose config.json
    renames the sockets (and, task 1, tolerates a spacing 75% off) and whose case mapping
    renames a case: each variant exits 1, no metrics."""
    ground_truth = copied_ground_truth(challenge, tmp_path)
    config_path = ground_truth / "config.json"
    config = json.loads(config_path.read_text()) if config_path.exists() else {}
    loose = {"geometry_tolerance": 0.75} if challenge == "hecktor2025-task1" else {}
    config_path.write_text(json.dumps({**config, **RENAMED_SOCKETS[challenge], **loose}))
    case_ids = sorted(available_challenges()[challenge](ground_truth).ground_truth)
    (ground_truth / "case-mapping.json").write_text(json.dumps({"a-scan.mha": case_ids[0]}))
    input_dir = make_submission(challenge, ground_truth, tmp_path / "input")
    variants = examples.example(challenge).invalid_for_ground_truth(ground_truth, input_dir)
    assert len(variants) >= 2
    for name, edits in variants.items():
        variant = tmp_path / "invalid" / name
        shutil.copytree(input_dir, variant)
        for relative, content in edits.items():
            if content is None:
                (variant / relative).unlink()
            else:
                (variant / relative).write_bytes(content)
        run = evaluate(challenge, variant, ground_truth, "--workers", "1")
        assert (run.code, run.wrote_metrics) == (1, False), (name, run.stderr)
        named = [case_id for case_id in case_ids if case_id in run.last_error_line]
        assert named or name == "missing-case", (name, run.last_error_line)
