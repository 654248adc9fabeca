"""HECKTOR 2025 tasks 2 and 3: synthetic patients, their ground-truth CSV and one JSON value per
algorithm job; and the patients, input sockets and job layout task 1 shares with them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.challenges.hecktor2025 import HecktorTask2, HecktorTask3
from evaluation.challenges.hecktor2025.hpv import Task3Settings
from evaluation.challenges.hecktor2025.survival import Task2Settings
from evaluation.declarations.examples import Example, Lineup
from evaluation.platform import synthetic

CENTERS = ("CHUM", "CHUP", "CHUV", "HGJ", "HMR", "MDA", "USZ")


def synthetic_patients(rng: np.random.Generator, n: int) -> list[str]:
    """Distinct HECKTOR-like ids (center-number), sorted."""
    ids: set[str] = set()
    while len(ids) < n:
        ids.add(f"{CENTERS[int(rng.integers(len(CENTERS)))]}-{int(rng.integers(1, 1000)):03d}")
    return sorted(ids)


def image_inputs(patient: str, ct_socket: str = "ct-image", ct_name: str | None = None) -> list[dict[str, Any]]:
    """The CT (which names the case) and the PET, as HECKTOR's interface lists them."""
    return [synthetic.image_input(ct_socket, ct_name or f"{patient}__CT.nii.gz", "images/ct", pk=1),
            synthetic.image_input("pet-image", f"{patient}__PT.nii.gz", "images/pet", pk=2)]


def organizer_inputs(evaluation, patient: str) -> list[dict[str, Any]]:
    """image_inputs for a patient of an organizer's ground truth: the CT named as its
    case-mapping.json says, else `<PatientID><modality suffix>.nii.gz` with the first of the
    phase's modality_suffixes that gives the patient back."""
    names = [f"{patient}{suffix}.nii.gz" for suffix in evaluation.settings.modality_suffixes] + [f"{patient}.nii.gz"]
    ct_name = synthetic.input_image_name(evaluation, patient, names)
    return image_inputs(patient, synthetic.first_socket(evaluation.settings.input_socket), ct_name)


def write_value_jobs(input_dir: Path, rng, patients, slug: str, relative_path: str, kind: str, values,
                     inputs=image_inputs) -> None:
    """One job per patient with one JSON output, a Value as the platform keeps a Float or Bool
    socket (inline in predictions.json and written to its file); `inputs(patient)` lists the job's
    inputs."""
    jobs = []
    for patient, value in zip(patients, values, strict=True):
        pk = synthetic.job_pk(rng)
        jobs.append(synthetic.job(pk, inputs(patient), [synthetic.value_output(slug, relative_path, kind, value)],
                                  seconds=float(rng.uniform(20, 120))))
        synthetic.write_output(input_dir, pk, relative_path, value)
    order = rng.permutation(len(jobs))  # the platform lists jobs in no particular order
    synthetic.write_predictions(input_dir, [jobs[i] for i in order])


def first_patient_output(input_dir: Path, slug: str) -> str:
    """The path (relative to input_dir) of output `slug` of the job of the first patient by name."""
    jobs = json.loads((input_dir / "predictions.json").read_text())
    first = min(jobs, key=lambda job: job["inputs"][0]["image"]["name"])
    (output,) = [o for o in first["outputs"] if o["socket"]["slug"] == slug]
    return f"{first['pk']}/output/{output['socket']['relative_path']}"


def output_socket(ground_truth_dir: Path, settings_class) -> str:
    """The output socket the phase's config.json names."""
    return settings_class.from_ground_truth(ground_truth_dir).output_socket


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.rstrip("\n") + "\n", encoding="utf-8")


# ---- Task 2: recurrence-free survival ---------------------------------------------------------


def synthesize_task2(out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
    """RFS in days rounded to weeks (tied times), ~35% relapses, risk scores that track the
    time with noise, rounded to 1 decimal (tied risks)."""
    rng = np.random.default_rng(seed)
    patients = synthetic_patients(rng, 40 if cases is None else cases)
    relapse = (rng.random(len(patients)) < 0.35).astype(int)
    rfs = np.round(rng.uniform(60, 1800, len(patients)) / 7) * 7
    risk = np.round(3 * (1 - rfs / 1800) + relapse + rng.normal(0, 1.5, len(patients)), 1)
    rows = [f"{p},{t:g},{e}" for p, t, e in zip(patients, rfs, relapse, strict=True)]
    write_text(out_dir / "ground-truth" / "hecktor2025_task2_test.csv", "PatientID,RFS,Relapse\n" + "\n".join(rows))
    write_value_jobs(out_dir / "input", rng, patients, "rfs", "rfs.json", "Float", [float(r) for r in risk])


def submission_task2(ground_truth_dir: Path, input_dir: Path, seed: int = 0) -> None:
    """A valid submission for any task 2 ground truth (the organizer's own): one risk score per
    patient, minus the rank of its RFS (scaled to 0-1) plus Gaussian noise (sd 0.2), so the
    C-index is well above 0.5 but below 1; a patient without a label gets noise alone."""
    evaluation = HecktorTask2(ground_truth_dir)  # its config.json and case-mapping.json apply
    rng = np.random.default_rng(seed)
    patients = sorted(evaluation.ground_truth)
    labelled = [p for p in patients if evaluation.ground_truth[p] is not None]
    times = np.array([evaluation.ground_truth[p][0] for p in labelled])
    rank = dict(zip(labelled, np.argsort(np.argsort(times, kind="stable")) / max(1, len(labelled) - 1), strict=True))
    noise = rng.normal(0, 0.2, len(patients))
    risks = [round(float(-rank.get(p, 0.5) + e), 4) for p, e in zip(patients, noise, strict=True)]
    write_organizer_jobs(evaluation, input_dir, rng, patients, "Float", risks)


def write_organizer_jobs(evaluation, input_dir: Path, rng, patients, kind: str, values) -> None:
    """One job per patient of the organizer's ground truth, its value on the phase's output socket."""
    slug = evaluation.settings.output_socket
    relative = synthetic.checked(f"{slug}.json", synthetic.setting_name("output_socket"))  # before any write
    write_value_jobs(input_dir, rng, patients, slug, relative, kind, values,
                     inputs=lambda patient: organizer_inputs(evaluation, patient))


def invalid_examples_task2(input_dir: Path, slug: str = "rfs") -> dict[str, dict[str, bytes | None]]:
    """The first patient's risk as text, and as NaN."""
    path = first_patient_output(input_dir, slug)
    return {"text-risk": {path: b'"high"\n'}, "nan-risk": {path: b"NaN\n"}}


# ---- Task 3: HPV status ----------------------------------------------------------------------


def synthesize_task3(out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
    """~60% HPV positive; the prediction right 80% of the time; outputs as true/false."""
    rng = np.random.default_rng(seed)
    patients = synthetic_patients(rng, 40 if cases is None else cases)
    status = (rng.random(len(patients)) < 0.6).astype(int)
    status[:2] = (1, 0)  # both classes whatever the seed and size
    prediction = np.where(rng.random(len(patients)) < 0.8, status, 1 - status).astype(bool)
    rows = [f"{p},{s}" for p, s in zip(patients, status, strict=True)]
    write_text(out_dir / "ground-truth" / "hecktor2025_task3_test.csv", "PatientID,HPV Status\n" + "\n".join(rows))
    write_value_jobs(out_dir / "input", rng, patients, "hpv-status", "hpv-status.json", "Bool",
                     [bool(v) for v in prediction])


def submission_task3(ground_truth_dir: Path, input_dir: Path, seed: int = 0) -> None:
    """A valid submission for any task 3 ground truth (the organizer's own): the true HPV status,
    flipped for about 15% of the labelled patients (at least one); a patient without a label gets
    a coin toss."""
    evaluation = HecktorTask3(ground_truth_dir)  # its config.json and case-mapping.json apply
    rng = np.random.default_rng(seed)
    patients = sorted(evaluation.ground_truth)
    labelled = [p for p in patients if evaluation.ground_truth[p] is not None]
    flipped = set(rng.choice(labelled, max(1, round(0.15 * len(labelled))), replace=False).tolist())
    coins = rng.random(len(patients)) < 0.5
    status = [bool(coin) if evaluation.ground_truth[p] is None else bool(evaluation.ground_truth[p]) != (p in flipped)
              for p, coin in zip(patients, coins, strict=True)]
    write_organizer_jobs(evaluation, input_dir, rng, patients, "Bool", status)


def invalid_examples_task3(input_dir: Path, slug: str = "hpv-status") -> dict[str, dict[str, bytes | None]]:
    """The first patient's status as 0.5, and as "yes"."""
    path = first_patient_output(input_dir, slug)
    return {"half-status": {path: b"0.5\n"}, "text-status": {path: b'"yes"\n'}}


EXAMPLES = {
    "hecktor2025-task2": Example(
        synthesize=synthesize_task2, invalid_examples=invalid_examples_task2, submission=submission_task2,
        min_cases=2,  # a comparable pair of patients
        lineup=Lineup(seeds=(0, 1), invalid="nan-risk"),
        invalid_for_ground_truth=lambda ground_truth_dir, input_dir: invalid_examples_task2(
            input_dir, output_socket(ground_truth_dir, Task2Settings))),
    "hecktor2025-task3": Example(
        synthesize=synthesize_task3, invalid_examples=invalid_examples_task3, submission=submission_task3,
        min_cases=2,  # both classes
        lineup=Lineup(seeds=(11, 1), invalid="half-status"),
        invalid_for_ground_truth=lambda ground_truth_dir, input_dir: invalid_examples_task3(
            input_dir, output_socket(ground_truth_dir, Task3Settings))),
}
