"""RARE26's numbers: every frame of the test set, its bootstrap repetitions (the RARE26 image-level
scheme or the RARE25 pack's patient-level one) and the metrics of the whole test set.

The ranked value, Score, is the median PPV at 90% recall over the repetitions (`score`); the final
ranking's statistics use those same repetitions (Rare26.ranking_resamples), so both come from
`repetitions`, with the settings' repetitions and seed. The metrics themselves (AUROC, average
precision, PPV at a recall, on one set or many resamples) are generic: evaluation/metrics/classification.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.errors import SetupError
from evaluation.metrics.classification import (
    RankingCurve,
    average_precision,
    metrics_with_drawn_groups,
    metrics_with_drawn_positives,
    ppv_at_recall,
    ranking_curve,
    roc_auc,
)
from evaluation.metrics.resampling import draw_with_replacement, positives_per_resample

from .truth import StackTruth

TARGET_RECALL = 0.9  # the metric's name says 90: not a setting
# What the metrics functions return, per repetition or for the whole test set: the three metrics.
PPV_AT_RECALL, AUROC, AVERAGE_PRECISION = "ppv_at_recall", "auroc", "average_precision"


@dataclass(frozen=True)
class TestSet:
    """Every frame of the test set, stacks in case order, frames in index order."""

    stacks: tuple[StackTruth, ...]
    y_true: np.ndarray  # 1 neoplasia, 0 NDBE
    y_score: np.ndarray  # the submitted likelihoods

    @classmethod
    def of(cls, ground_truth: dict[str, StackTruth], results: dict[str, np.ndarray]) -> TestSet:
        case_ids = sorted(results)
        return cls(tuple(ground_truth[c] for c in case_ids),
                   np.concatenate([ground_truth[c].labels for c in case_ids]),
                   np.concatenate([results[c] for c in case_ids]))

    def curve(self) -> RankingCurve:
        """The ranking curve of every frame, unweighted (scikit-learn's, bit for bit)."""
        return ranking_curve(self.y_true, self.y_score)

    def counts(self) -> dict[str, int]:
        n_ndbe = int((self.y_true == 0).sum())
        return {"stacks": len(self.stacks), "images": len(self.y_true), "ndbe_images": n_ndbe,
                "neoplasia_images": len(self.y_true) - n_ndbe}


def whole_test_set(test_set: TestSet) -> dict[str, float]:
    """The three metrics on every frame as it is (no resampling)."""
    curve = test_set.curve()
    return {AUROC: float(roc_auc(curve)), AVERAGE_PRECISION: float(average_precision(curve)),
            PPV_AT_RECALL: float(ppv_at_recall(test_set.y_true, test_set.y_score, TARGET_RECALL))}


@dataclass(frozen=True)
class Sampling:
    """The bootstrap scheme and its sizes (the settings of the same names)."""

    scheme: str  # "image" (RARE26 official) or "patient" (RARE25 pack)
    imbalance_ratio: int  # NDBE per neoplasia in a repetition
    patient_sample_size: int  # 'patient': neoplasia patients per repetition


def repetitions(test_set: TestSet, sampling: Sampling, count: int,
                seed: int) -> tuple[dict[str, np.ndarray], dict[str, int]]:
    """The three metrics of each of `count` repetitions of the scheme ({metric: (count,) array}) and
    the draws' sizes for metrics.json's counts. The draws depend only on the seed and the ground
    truth: every submission gets the same ones."""
    rng = np.random.default_rng(seed)
    if sampling.scheme == "image":
        return image_level_bootstrap(test_set.y_true, test_set.y_score, rng, count, sampling.imbalance_ratio)
    patients = np.concatenate([np.asarray(stack.patients, dtype=object) for stack in test_set.stacks])
    return patient_level_bootstrap(test_set.y_true, test_set.y_score, patients, rng, count,
                                   sampling.patient_sample_size, sampling.imbalance_ratio)


def score(values: dict[str, np.ndarray]) -> float:
    """RARE26's ranked value: the median PPV at 90% recall over the repetitions."""
    return float(np.median(values[PPV_AT_RECALL]))


def image_level_bootstrap(y_true, y_score, rng, repetitions: int, imbalance_ratio: int):
    """RARE26 official: every repetition keeps all NDBE images and draws
    max(1, int(n_ndbe / ratio)) neoplasia images uniformly with replacement
    (draws: rng.integers over the neoplasia images, in data order, one row per repetition).
    Only the drawn neoplasia images change between repetitions: the NDBE scores are sorted once
    and each drawn image placed among them (metrics_with_drawn_positives), so the cost follows
    the draws, not repetitions x images."""
    per_resample = positives_per_resample(int((y_true == 0).sum()), imbalance_ratio)
    draws = draw_with_replacement(rng, int((y_true == 1).sum()), repetitions, per_resample)
    return (metrics_with_drawn_positives(y_true, y_score, draws, TARGET_RECALL),
            {"neoplasia_images_per_repetition": per_resample})


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
    extra = {"patients": len(names), "neoplasia_patients": int(is_neoplasia.sum()),
             "neoplasia_patients_per_repetition": n_neo, "ndbe_patients_per_repetition": n_ndbe}
    return metrics_with_drawn_groups(y_true, y_score, patient_of_image, draws, TARGET_RECALL), extra
