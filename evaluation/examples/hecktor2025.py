"""HECKTOR 2025 tasks 2 and 3: synthetic patients, their ground-truth CSV and one JSON value per
algorithm job; and the patients, input sockets and job layout task 1 shares with them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.examples import Example, synthetic

CENTERS = ("CHUM", "CHUP", "CHUV", "HGJ", "HMR", "MDA", "USZ")


def synthetic_patients(rng: np.random.Generator, n: int) -> list[str]:
    """Distinct HECKTOR-like ids (center-number), sorted."""
    ids: set[str] = set()
    while len(ids) < n:
        ids.add(f"{CENTERS[int(rng.integers(len(CENTERS)))]}-{int(rng.integers(1, 1000)):03d}")
    return sorted(ids)


def image_inputs(patient: str) -> list[dict[str, Any]]:
    """The CT (which names the case) and the PET, as HECKTOR's interface lists them."""
    return [synthetic.image_input("ct-image", f"{patient}__CT.nii.gz", "images/ct", pk=1),
            synthetic.image_input("pet-image", f"{patient}__PT.nii.gz", "images/pet", pk=2)]


def write_value_jobs(input_dir: Path, rng, patients, slug: str, relative_path: str, kind: str, values) -> None:
    jobs = []
    for patient, value in zip(patients, values):
        pk = synthetic.job_pk(rng)
        jobs.append(synthetic.job(pk, image_inputs(patient), [synthetic.file_output(slug, relative_path, kind=kind)],
                                  seconds=float(rng.uniform(20, 120))))
        synthetic.write_output(input_dir, pk, relative_path, value)
    order = rng.permutation(len(jobs))  # the platform lists jobs in no particular order
    synthetic.write_predictions(input_dir, [jobs[i] for i in order])


def first_patient_output(input_dir: Path, relative_path: str) -> str:
    """The output path (relative to input_dir) of the job of the first patient by name."""
    jobs = json.loads((input_dir / "predictions.json").read_text())
    first = min(jobs, key=lambda job: job["inputs"][0]["image"]["name"])
    return f"{first['pk']}/output/{relative_path}"


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
    rows = [f"{p},{t:g},{e}" for p, t, e in zip(patients, rfs, relapse)]
    write_text(out_dir / "ground-truth" / "hecktor2025_task2_test.csv", "PatientID,RFS,Relapse\n" + "\n".join(rows))
    write_value_jobs(out_dir / "input", rng, patients, "rfs", "rfs.json", "Float", [float(r) for r in risk])


def invalid_examples_task2(input_dir: Path) -> dict[str, dict[str, bytes | None]]:
    """The first patient's risk as text, and as NaN."""
    path = first_patient_output(input_dir, "rfs.json")
    return {"text-risk": {path: b'"high"\n'}, "nan-risk": {path: b"NaN\n"}}


# ---- Task 3: HPV status ----------------------------------------------------------------------


def synthesize_task3(out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
    """~60% HPV positive; the prediction right 80% of the time; outputs as true/false."""
    rng = np.random.default_rng(seed)
    patients = synthetic_patients(rng, 40 if cases is None else cases)
    status = (rng.random(len(patients)) < 0.6).astype(int)
    status[:2] = (1, 0)  # both classes whatever the seed and size
    prediction = np.where(rng.random(len(patients)) < 0.8, status, 1 - status).astype(bool)
    rows = [f"{p},{s}" for p, s in zip(patients, status)]
    write_text(out_dir / "ground-truth" / "hecktor2025_task3_test.csv", "PatientID,HPV Status\n" + "\n".join(rows))
    write_value_jobs(out_dir / "input", rng, patients, "hpv-status", "hpv-status.json", "Bool",
                     [bool(v) for v in prediction])


def invalid_examples_task3(input_dir: Path) -> dict[str, dict[str, bytes | None]]:
    """The first patient's status as 0.5, and as "yes"."""
    path = first_patient_output(input_dir, "hpv-status.json")
    return {"half-status": {path: b"0.5\n"}, "text-status": {path: b'"yes"\n'}}


EXAMPLES = {
    "hecktor2025-task2": Example(synthesize=synthesize_task2, invalid_examples=invalid_examples_task2),
    "hecktor2025-task3": Example(synthesize=synthesize_task3, invalid_examples=invalid_examples_task3),
}
