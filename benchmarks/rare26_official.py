"""The RARE25/26 official procedure written plainly, one scikit-learn call per metric and
repetition: the independent reference that the tests compare our vectorised evaluation with, and
that benchmarks/rare26_bootstrap.py times it against. Uses none of the evaluation package."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from sklearn.metrics import average_precision_score, precision_recall_curve, roc_auc_score

OUTPUT_FILE = "stacked-neoplastic-lesion-likelihoods.json"


def load_arrays(input_dir: Path, ground_truth_dir: Path):
    """Labels (1 neoplasia: any class but NDBE, whatever its case), scores and patients read
    straight from the files, stacks in sorted order of their names without extension, frames in
    the order of their `index` (frame i of a stack: element i of its likelihoods)."""
    metadata = json.loads(next(ground_truth_dir.glob("*.json")).read_text())
    jobs = json.loads((input_dir / "predictions.json").read_text())
    by_stack = {job["inputs"][0]["image"]["name"]: job["pk"] for job in jobs}
    y, s, patients = [], [], []
    for stack in sorted(metadata, key=lambda name: name.rsplit(".", 1)[0]):
        frames = sorted(metadata[stack], key=lambda frame: frame["index"])
        y += [0 if frame["class"].strip().lower() == "ndbe" else 1 for frame in frames]
        patients += [frame["patient_id"] for frame in frames]
        s += json.loads((input_dir / by_stack[stack] / "output" / OUTPUT_FILE).read_text())
    return np.array(y), np.array(s, dtype=float), np.array(patients)


def official_metrics(y, s):
    """(AUROC, AUPRC, PPV@90) as the official scorer computes them."""
    precision, recall, _ = precision_recall_curve(y, s)
    return roc_auc_score(y, s), average_precision_score(y, s), np.interp(0.9, recall[::-1], precision[::-1])


def official_image_level(y, s, seed, repetitions=1000, ratio=100):
    """All NDBE plus max(1, int(n_ndbe / 100)) neoplasia images drawn with replacement, per
    repetition; draws as we document them (default_rng(seed).integers over the neoplasia images)."""
    rng = np.random.default_rng(seed)
    neo, ndbe = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    draws = rng.integers(0, len(neo), size=(repetitions, max(1, int(len(ndbe) / ratio))))
    return np.array([official_metrics(y[np.r_[ndbe, neo[d]]], s[np.r_[ndbe, neo[d]]]) for d in draws])


def official_patient_level(y, s, patients, seed, repetitions=1000, sample_size=10, ratio=100):
    """The RARE25 pack: patients labelled by any neoplasia frame; sample_size neoplasia and
    sample_size * ratio NDBE patients drawn with replacement (sorted names), all their images."""
    rng = np.random.default_rng(seed)
    names = sorted(set(patients))
    images_of = {p: np.flatnonzero(patients == p) for p in names}
    neo = [p for p in names if y[images_of[p]].any()]
    ndbe = [p for p in names if not y[images_of[p]].any()]
    neo_draws = rng.integers(0, len(neo), size=(repetitions, sample_size))
    ndbe_draws = rng.integers(0, len(ndbe), size=(repetitions, sample_size * ratio))
    rows = []
    for r in range(repetitions):
        chosen = [neo[i] for i in neo_draws[r]] + [ndbe[i] for i in ndbe_draws[r]]
        rows.append(official_metrics(*(a[np.concatenate([images_of[p] for p in chosen])] for a in (y, s))))
    return np.array(rows)
