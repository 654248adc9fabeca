"""RARE26: early neoplasia in Barrett's esophagus (docs/challenges/rare26.md).

Ranked by PPV at 90% recall under a simulated 1% prevalence: every repetition keeps all NDBE
images and draws neoplasia images with replacement, 1 per 100 NDBE; the score is the median
over 1000 repetitions. The official scorer sets no seed; ours does, so numbers reproduce.

Reads: the RARE25 metadata (one JSON file: each stack's frames, placed by their `index`, NDBE or
neoplasia by their `class`) and, per algorithm job, one JSON array of likelihoods, element i
for the frame with index i.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

from evaluation.errors import SetupError
from evaluation.framework import Evaluation, log
from evaluation.grand_challenge import Case, single_ground_truth_file, strip_extension
from evaluation.metrics.ranking import ppv_at_recall, resampled_ranking_metrics
from evaluation.metrics.resampling import (
    draw_with_replacement,
    draws_to_counts,
    percentile_summary,
    positives_per_resample,
)
from evaluation.reading.files import Origin
from evaluation.reading.json_files import read_json
from evaluation.reading.values import finite_numbers, json_type, shown
from evaluation.settings import Settings, setting

TARGET_RECALL = 0.9  # the metric's name says 90: not a setting
# The negative class, compared with a frame's class lower-cased and without surrounding blanks
# ("NDBE", " ndbe " are NDBE); any other class is neoplasia (rare26.md).
NEGATIVE_CLASS = "ndbe"
MAX_PATIENT_DRAWS = 50_000_000  # 400 MB of draws
REPETITIONS_PER_BLOCK = 100  # resamples turned into counts at a time: bounded memory


@dataclass(frozen=True)
class Rare26Settings(Settings):
    input_socket: str = setting("stacked-barretts-esophagus-endoscopy-images",
                                doc="input socket whose image name is the stack (case) id")
    output_socket: str = setting("stacked-neoplastic-lesion-likelihoods",
                                 doc="output socket: a JSON array of one likelihood per frame")
    sampling: str = setting("image", choices=("image", "patient"),
                            doc="bootstrap scheme: 'image' (RARE26 official: all NDBE images plus neoplasia "
                                "images drawn with replacement) or 'patient' (RARE25 pack: patients drawn "
                                "with replacement, all images of each)")
    repetitions: int = setting(1000, minimum=1, maximum=100_000, doc="bootstrap repetitions")
    imbalance_ratio: int = setting(100, minimum=1, maximum=100_000, doc="NDBE per neoplasia in a repetition (100: 1% prevalence)")
    patient_sample_size: int = setting(10, minimum=1, maximum=100_000,
                                       doc="'patient' scheme: neoplasia patients per repetition (NDBE patients: "
                                           "this times imbalance_ratio)")
    seed: int = setting(2026, minimum=0, doc="seed of the bootstrap draws (--seed overrides)")

    def check(self) -> None:
        super().check()
        # 'patient' draws every repetition's patients at once: bound them, or memory runs out.
        draws = self.repetitions * self.patient_sample_size * (self.imbalance_ratio + 1)
        if self.sampling == "patient" and draws > MAX_PATIENT_DRAWS:
            raise SetupError(f"config.json: repetitions x patient_sample_size x (imbalance_ratio + 1) is {draws}; "
                             f"the 'patient' sampling draws at most {MAX_PATIENT_DRAWS} patients in all.")


@dataclass(frozen=True)
class StackTruth:
    labels: np.ndarray  # 1 neoplasia, 0 NDBE; element i is the frame with index i
    patients: tuple[str, ...]  # in the same order ('patient' sampling only; empty otherwise)


class Rare26(Evaluation):
    name = "rare26"
    title = "RARE26: PPV at 90% recall, simulated 1% prevalence (endoscopy)"
    settings_class = Rare26Settings
    case_label = "Stack"
    ranked_paths = ("Score", "PPV@90RECALL", "AUROC", "AUPRC",
                    "AUROC Full Dataset", "AUPRC Full Dataset", "PPV@90RECALL Full Dataset")

    # ---- ground truth --------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, StackTruth]:
        """RARE25 metadata: {stack name: [{"filename", "index", "class", "patient_id"}, ...]}; the
        frame with index i is element i of the stack's likelihoods, whatever the list's order."""
        path = single_ground_truth_file(directory, ".json")
        document = read_json(self.truth, path, "The ground truth")
        where = f"Ground truth {path.name}"
        if not isinstance(document, dict) or not document:
            self.truth.fail(f"{where} must be a non-empty object mapping stack names to frames.")
        need_patients = self.settings.sampling == "patient"
        stacks: dict[str, StackTruth] = {}
        classes: Counter[str] = Counter()
        for stack_name, frames in document.items():
            case_id = strip_extension(stack_name)
            if case_id in stacks:
                self.truth.fail(f"{where}: two stacks are named {case_id} once extensions are removed.")
            stacks[case_id] = read_stack(self.truth, frames, f"{where}, stack {stack_name}", need_patients, classes)
        all_labels = np.concatenate([s.labels for s in stacks.values()])
        log(f"Ground truth: {len(all_labels)} frames in {len(stacks)} stacks; frames per class: "
            + ", ".join(f"{shown(name)} {count}{' (negative)' if is_negative(name) else ''}"
                        for name, count in sorted(classes.items())) + ".")
        if all_labels.all() or not all_labels.any():
            self.truth.fail(f"{where} must hold both NDBE and neoplasia frames.")
        return stacks

    def case_input_socket(self) -> str:
        return self.settings.input_socket

    # ---- one stack -----------------------------------------------------------------------

    def read_job_prediction(self, case: Case, ground_truth: StackTruth) -> np.ndarray:
        """The output's JSON array: one finite likelihood per frame, element i for the frame with
        index i (any range: only the order of the likelihoods counts)."""
        slug = self.settings.output_socket
        expected = len(ground_truth.labels)
        values = case.read_json(slug)
        if not isinstance(values, list):
            case.origin.fail(f"{case.name}: the output {slug!r} must be a JSON array of {expected} numbers "
                             f"(one likelihood per frame), found {json_type(values)}.")
        if len(values) != expected:
            case.origin.fail(f"{case.name}: expected {expected} likelihoods (one per frame), found {len(values)}.")
        return finite_numbers(values, expected, case.name, "likelihood", error=case.origin.error)

    # ---- the leaderboard -----------------------------------------------------------------

    def score_aggregates(self, results: dict[str, np.ndarray]) -> dict[str, Any]:
        case_ids = sorted(results)
        y_true = np.concatenate([self.ground_truth[c].labels for c in case_ids])
        y_score = np.concatenate([results[c] for c in case_ids])
        n_ndbe = int((y_true == 0).sum())

        full_auroc = roc_auc_score(y_true, y_score)
        full_auprc = average_precision_score(y_true, y_score)
        full_ppv = ppv_at_recall(y_true, y_score, TARGET_RECALL)

        settings = self.settings
        rng = np.random.default_rng(settings.seed)
        if settings.sampling == "image":
            boot, extra = image_level_bootstrap(y_true, y_score, rng, settings.repetitions, settings.imbalance_ratio)
        else:
            patients = np.concatenate([np.asarray(self.ground_truth[c].patients, dtype=object) for c in case_ids])
            boot, extra = patient_level_bootstrap(y_true, y_score, patients, rng, settings.repetitions,
                                                  settings.patient_sample_size, settings.imbalance_ratio)
        log(f"Bootstrap: {settings.repetitions} repetitions, {settings.sampling}-level sampling, seed {settings.seed}.")

        ppv, auroc, auprc = (percentile_summary(boot[k]) for k in ("ppv_at_recall", "auroc", "average_precision"))
        # The 13 keys of the official scorer, top level, same meaning: leaderboards read them.
        return {
            "Score": ppv[0],
            "PPV@90RECALL": ppv[0],
            "PPV@90RECALL 95% CI Lower Bound": ppv[1],
            "PPV@90RECALL 95% CI Upper Bound": ppv[2],
            "AUROC": auroc[0],
            "AUROC 95% CI Lower Bound": auroc[1],
            "AUROC 95% CI Upper Bound": auroc[2],
            "AUPRC": auprc[0],
            "AUPRC 95% CI Lower Bound": auprc[1],
            "AUPRC 95% CI Upper Bound": auprc[2],
            "AUROC Full Dataset": float(full_auroc),
            "AUPRC Full Dataset": float(full_auprc),
            "PPV@90RECALL Full Dataset": float(full_ppv),
            "counts": {"stacks": len(case_ids), "images": int(len(y_true)), "ndbe_images": n_ndbe,
                       "neoplasia_images": int(len(y_true) - n_ndbe), **extra},
        }


def is_negative(label: str) -> bool:
    return label.strip().lower() == NEGATIVE_CLASS


def read_stack(truth: Origin, frames: Any, where: str, need_patients: bool, classes: Counter[str]) -> StackTruth:
    """One stack's frames, each placed at its `index` (0 to n-1, each once), whatever the order
    of the list. Counts every frame's class, lower-cased, into `classes` (for the log)."""
    if not isinstance(frames, list) or not frames:
        truth.fail(f"{where} must be a non-empty list of frames.")
    size = len(frames)
    labels = np.zeros(size, dtype=np.int8)
    patients = [""] * size
    entry_of_index: dict[int, int] = {}
    for entry, frame in enumerate(frames):
        at = f"{where}, entry {entry}"
        if not isinstance(frame, dict):
            truth.fail(f"{at} must be an object with an index and a class, not {json_type(frame)}.")
        index = frame_index(truth, frame, at, size)
        if index in entry_of_index:
            truth.fail(f"{at} has index {index}, as entry {entry_of_index[index]} does; each index from 0 to "
                       f"{size - 1} must appear once.")
        entry_of_index[index] = entry
        label = frame_class(truth, frame, at)
        classes[label.lower()] += 1
        labels[index] = 0 if is_negative(label) else 1
        if need_patients:
            patients[index] = frame_patient(truth, frame, at)
    return StackTruth(labels, tuple(patients) if need_patients else ())


def frame_index(truth: Origin, frame: dict, at: str, size: int) -> int:
    """The frame's position in the stack's likelihoods: a whole number (not a boolean) below size."""
    if "index" not in frame:
        truth.fail(f"{at} has no index (its position, 0 to {size - 1}, in the stack's likelihoods).")
    index = frame["index"]
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < size:
        truth.fail(f"{at} has index {shown(index)}; it must be a whole number from 0 to {size - 1} (the stack has "
                   f"{size} frames).")
    return index


def frame_class(truth: Origin, frame: dict, at: str) -> str:
    """The frame's class: non-empty text (its value is never quoted: it is a label)."""
    if "class" not in frame:
        truth.fail(f"{at} has no class.")
    label = frame["class"]
    if not isinstance(label, str) or not label.strip():
        found = "blank text" if isinstance(label, str) else json_type(label)
        truth.fail(f"{at} has a class that is {found}; a class must be non-empty text.")
    return label


def frame_patient(truth: Origin, frame: dict, at: str) -> str:
    patient = frame.get("patient_id")
    if isinstance(patient, bool) or not isinstance(patient, (str, int)):
        truth.fail(f"{at} has no patient_id, which the 'patient' sampling needs.")
    return str(patient)


def image_level_bootstrap(y_true, y_score, rng, repetitions: int, imbalance_ratio: int):
    """RARE26 official: every repetition keeps all NDBE images and draws
    max(1, int(n_ndbe / ratio)) neoplasia images uniformly with replacement
    (draws: rng.integers over the neoplasia images, in data order, one row per repetition)."""
    positives = np.flatnonzero(y_true == 1)
    per_resample = positives_per_resample(int((y_true == 0).sum()), imbalance_ratio)
    draws = draw_with_replacement(rng, len(positives), repetitions, per_resample)
    ndbe_counts = (y_true == 0).astype(np.int64)

    def counts(block):
        rows = np.tile(ndbe_counts, (len(block), 1))
        rows[:, positives] = draws_to_counts(block, len(positives))
        return rows

    return _resampled(y_true, y_score, draws, counts), {"neoplasia_images_per_repetition": per_resample}


def patient_level_bootstrap(y_true, y_score, patients, rng, repetitions: int, sample_size: int, imbalance_ratio: int):
    """RARE25 pack: patients are neoplastic when any of their frames is; every repetition draws
    sample_size neoplasia patients, then sample_size * ratio NDBE patients, with replacement
    (patients in sorted order), and takes all images of each drawn patient."""
    names, patient_of_image = np.unique(np.asarray(patients).astype(str), return_inverse=True)
    is_neoplasia = np.zeros(len(names), dtype=bool)
    is_neoplasia[patient_of_image[y_true == 1]] = True
    neoplasia_patients, ndbe_patients = np.flatnonzero(is_neoplasia), np.flatnonzero(~is_neoplasia)
    if len(ndbe_patients) == 0:
        raise SetupError("The 'patient' sampling needs at least one patient without neoplasia frames.")
    n_neo, n_ndbe = sample_size, sample_size * imbalance_ratio
    draws = np.hstack([
        neoplasia_patients[draw_with_replacement(rng, len(neoplasia_patients), repetitions, n_neo)],
        ndbe_patients[draw_with_replacement(rng, len(ndbe_patients), repetitions, n_ndbe)],
    ])

    def counts(block):
        return draws_to_counts(block, len(names))[:, patient_of_image]

    extra = {"patients": len(names), "neoplasia_patients": int(is_neoplasia.sum()),
             "neoplasia_patients_per_repetition": n_neo, "ndbe_patients_per_repetition": n_ndbe}
    return _resampled(y_true, y_score, draws, counts), extra


def _resampled(y_true, y_score, draws, counts_of):
    """The three metrics of every repetition, turning draws into counts block by block so that
    memory stays bounded however many repetitions and images."""
    parts = [resampled_ranking_metrics(y_true, y_score, counts_of(draws[start:start + REPETITIONS_PER_BLOCK]),
                                       TARGET_RECALL)
             for start in range(0, len(draws), REPETITIONS_PER_BLOCK)]
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}
