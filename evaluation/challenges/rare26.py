"""RARE26: early neoplasia in Barrett's esophagus (docs/challenges/rare26.md).

Ranked by PPV at 90% recall under a simulated 1% prevalence: every repetition keeps all NDBE
images and draws neoplasia images with replacement, 1 per 100 NDBE; the score is the median
over 1000 repetitions. The official scorer sets no seed; ours does, so numbers reproduce.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

from evaluation.examples import synthetic
from evaluation.errors import SetupError, SubmissionError
from evaluation.framework import Evaluation, log
from evaluation.grand_challenge import Case, read_json_file, single_ground_truth_file, strip_extension
from evaluation.metrics.ranking import ppv_at_recall, resampled_ranking_metrics
from evaluation.metrics.resampling import (
    draw_with_replacement,
    draws_to_counts,
    percentile_summary,
    positives_per_resample,
)
from evaluation.settings import Settings, json_type, setting

TARGET_RECALL = 0.9  # the metric's name says 90: not a setting
NDBE = "ndbe"  # any other class is neoplasia (rare26.md)
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
    repetitions: int = setting(1000, minimum=1, doc="bootstrap repetitions")
    imbalance_ratio: int = setting(100, minimum=1, doc="NDBE per neoplasia in a repetition (100: 1% prevalence)")
    patient_sample_size: int = setting(10, minimum=1,
                                       doc="'patient' scheme: neoplasia patients per repetition (NDBE patients: "
                                           "this times imbalance_ratio)")
    seed: int = setting(2026, minimum=0, doc="seed of the bootstrap draws (--seed overrides)")


@dataclass(frozen=True)
class StackTruth:
    labels: np.ndarray  # 1 neoplasia, 0 NDBE, in frame order
    patients: tuple[str, ...]


class Rare26(Evaluation):
    name = "rare26"
    title = "RARE26: PPV at 90% recall, simulated 1% prevalence (endoscopy)"
    settings_class = Rare26Settings
    case_label = "Stack"
    ranked_paths = ("Score", "PPV@90RECALL", "AUROC", "AUPRC",
                    "AUROC Full Dataset", "AUPRC Full Dataset", "PPV@90RECALL Full Dataset")

    # ---- ground truth --------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, StackTruth]:
        """RARE25 metadata: {stack name: [{"filename", "index", "class", "patient_id"}, ...]},
        frame i of a prediction belonging to entry i."""
        path = single_ground_truth_file(directory, ".json")
        document = read_json_file(path, f"Ground truth {path.name}", error=SetupError)
        if not isinstance(document, dict) or not document:
            raise SetupError(f"Ground truth {path.name} must be a non-empty object mapping stack names to frames.")
        need_patients = self.settings.sampling == "patient"
        stacks: dict[str, StackTruth] = {}
        for stack_name, frames in document.items():
            case_id = strip_extension(stack_name)
            if case_id in stacks:
                raise SetupError(f"Ground truth {path.name}: two stacks are named {case_id} once extensions are removed.")
            if not isinstance(frames, list) or not frames:
                raise SetupError(f"Ground truth {path.name}: stack {stack_name} must be a non-empty list of frames.")
            labels, patients = [], []
            for n, frame in enumerate(frames):
                label = frame.get("class") if isinstance(frame, dict) else None
                patient = frame.get("patient_id") if isinstance(frame, dict) else None
                if not isinstance(label, str):
                    raise SetupError(f"Ground truth {path.name}: frame {n} of stack {stack_name} has no class.")
                if need_patients and not isinstance(patient, (str, int)):
                    raise SetupError(f"Ground truth {path.name}: frame {n} of stack {stack_name} has no patient_id, "
                                     f"which the 'patient' sampling needs.")
                labels.append(0 if label == NDBE else 1)
                patients.append(str(patient))
            stacks[case_id] = StackTruth(np.array(labels, dtype=np.int8), tuple(patients))
        all_labels = np.concatenate([s.labels for s in stacks.values()])
        if all_labels.all() or not all_labels.any():
            raise SetupError(f"Ground truth {path.name} must hold both NDBE and neoplasia frames.")
        return stacks

    def case_input_socket(self) -> str:
        return self.settings.input_socket

    # ---- one stack -----------------------------------------------------------------------

    def load_prediction(self, case: Case, ground_truth: StackTruth) -> np.ndarray:
        slug = self.settings.output_socket
        expected = len(ground_truth.labels)
        values = case.read_json(slug)
        if not isinstance(values, list):
            raise SubmissionError(f"{case.name}: the output {slug!r} must be a JSON array of {expected} numbers "
                                  f"(one likelihood per frame), found {json_type(values)}.")
        if len(values) != expected:
            raise SubmissionError(f"{case.name}: expected {expected} likelihoods (one per frame), found {len(values)}.")
        for index, value in enumerate(values):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                shown = json.dumps(value)  # "0.5", true, null, NaN, Infinity: as written in the file
                shown = shown if len(shown) <= 40 else f"{json_type(value)} {shown[:30]}..."
                raise SubmissionError(f"{case.name}: the likelihood at index {index} is {shown}; every likelihood "
                                      f"must be a finite number.")
        return np.asarray(values, dtype=np.float64)

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

    # ---- synthetic data ------------------------------------------------------------------

    @classmethod
    def synthesize(cls, out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
        """Stacks of 192-384 frames from patients of 4-40 frames; ~12% of patients have
        neoplasia (70% of their frames); likelihoods from two overlapping beta distributions,
        rounded to 3 decimals so that ties occur as with real models."""
        rng = np.random.default_rng(seed)
        n_stacks = 8 if cases is None else cases
        sizes = rng.integers(192, 385, size=n_stacks)
        frames: list[tuple[str, str, int]] = []  # (patient, class, frame number)
        patient = 0
        while len(frames) < sizes.sum():
            neoplastic = rng.random() < 0.12
            for n in range(int(rng.integers(4, 41))):
                label = "neo" if neoplastic and rng.random() < 0.7 else NDBE
                frames.append((f"p{patient:05d}", label, n))
            patient += 1
        frames = [frames[i] for i in rng.permutation(len(frames))[: sizes.sum()]]

        metadata, jobs = {}, []
        start = 0
        input_dir = out_dir / "input"
        for number, size in enumerate(sizes):
            stack_name = f"rare26_stack_{number:04d}.tiff"
            stack = frames[start:start + size]
            start += size
            metadata[stack_name] = [{"filename": f"{p}_frame_{n:03d}.png", "index": i, "class": c, "patient_id": p}
                                    for i, (p, c, n) in enumerate(stack)]
            neo = np.array([c != NDBE for _, c, _ in stack])
            scores = np.where(neo, rng.beta(4.0, 2.0, size), rng.beta(1.5, 5.0, size)).round(3)
            pk = synthetic.job_pk(rng)
            relative_path = "stacked-neoplastic-lesion-likelihoods.json"
            jobs.append(synthetic.job(
                pk,
                [synthetic.image_input("stacked-barretts-esophagus-endoscopy-images", stack_name,
                                       "images/stacked-barretts-esophagus-endoscopy")],
                [synthetic.file_output("stacked-neoplastic-lesion-likelihoods", relative_path)],
                seconds=float(rng.uniform(20, 120)),
            ))
            synthetic.write_output(input_dir, pk, relative_path, scores.tolist())
        synthetic.write_json(out_dir / "ground-truth" / "test_metadata.json", metadata, indent=1)
        order = rng.permutation(len(jobs))  # the platform lists jobs in no particular order
        synthetic.write_predictions(input_dir, [jobs[i] for i in order])

    @classmethod
    def invalid_examples(cls, input_dir: Path) -> dict[str, dict[str, bytes | None]]:
        """The first stack's likelihoods one short, and with a string among them."""
        predictions = json.loads((input_dir / "predictions.json").read_text())
        first = sorted(predictions, key=lambda job: job["inputs"][0]["image"]["name"])[0]
        path = f"{first['pk']}/output/stacked-neoplastic-lesion-likelihoods.json"
        scores = json.loads((input_dir / path).read_text())
        with_string = list(scores)
        with_string[5] = "0.5"
        return {"wrong-length": {path: (json.dumps(scores[:-1]) + "\n").encode()},
                "string-likelihood": {path: (json.dumps(with_string) + "\n").encode()}}


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
