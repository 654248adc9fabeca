"""HECKTOR 2025 Task 3: HPV status (docs/challenges/hecktor2025.md, "Task 3").

One decision per patient (hpv-status.json, or the 2022 predictions CSV); ranked on balanced
accuracy, ties to the higher specificity, sensitivity shown, each with a seeded patient-bootstrap
95% interval. All of them, and the final ranking's bootstrap, are `aggregate`: rates of the
confusion counts weighted by the case weights (evaluation/metrics/confusion.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluation.challenges.hecktor2025.common import (
    PREDICTION_COLUMN,
    BootstrapSettings,
    BootstrapTask,
    ground_truth_binary,
    patient_table,
)
from evaluation.declarations.columns import Column
from evaluation.errors import SetupError, SubmissionError
from evaluation.metrics.confusion import recall_score
from evaluation.platform.cases import Case
from evaluation.platform.locations import single_ground_truth_file
from evaluation.platform.outputs import nest_paths
from evaluation.reading.values import is_finite_number, shown
from evaluation.settings import JSON_OUTPUT, setting


@dataclass(frozen=True)
class Task3Settings(BootstrapSettings):
    output_socket: str = setting("hpv-status", socket=JSON_OUTPUT, json_value="bool",
                                 doc="output socket read: hpv-status.json, a boolean (true = HPV positive; 1 and 0 "
                                     "accepted)")


# The predictions CSV's spellings of the HPV status (compared in lower case).
HPV_TEXT = {"1": True, "0": False, "true": True, "false": False, "1.0": True, "0.0": False}


class HpvTask(BootstrapTask):
    """Reading the HPV decisions and scoring them; the declaration (name, columns, leaderboard) is
    HecktorTask3's, in __init__.py."""

    balanced_accuracy: ClassVar[Column]
    sensitivity: ClassVar[Column]
    specificity: ClassVar[Column]
    settings_class = Task3Settings
    skipped_reason = "one class only"

    def load_ground_truth(self, directory: Path) -> dict[str, int | None]:
        """One CSV: PatientID, HPV Status (1 positive, 0 negative)."""
        name = single_ground_truth_file(directory, ".csv").name
        table = patient_table(self.truth, directory, ("HPV Status",), ground_truth_binary(name),
                              self.settings.unlabelled_patients == "skip")
        labels = {v for v in table.values() if v is not None}
        if labels != {0, 1}:
            raise SetupError(f"Ground truth {name} must hold both HPV-positive (1) and HPV-negative (0) patients: "
                             f"balanced accuracy needs both.")
        return table

    def read_job_prediction(self, case: Case, ground_truth: Any) -> bool:
        slug = self.settings.output_socket
        value = case.read_json(slug)
        if isinstance(value, bool):
            return value
        if is_finite_number(value) and value in (0, 1):
            return bool(value)
        raise SubmissionError(f"{case.name}: the output {slug!r} is {shown(value)}; it must be true (HPV positive) or "
                              f"false (HPV negative), or 1 or 0.")

    def read_file_prediction(self, case: Case, ground_truth: Any) -> bool:
        decision = HPV_TEXT.get(case.source.strip().lower())
        if decision is None:
            raise SubmissionError(f"{case.name}: the {PREDICTION_COLUMN} is {shown(case.source)}; it must be 1 "
                                  f"(HPV positive) or 0 (HPV negative).")
        return decision

    def decisions(self, patients: list[str], results: dict[str, bool]) -> tuple[np.ndarray, np.ndarray]:
        y_true = np.array([self.ground_truth[p] for p in patients], dtype=bool)
        y_pred = np.array([results[p] for p in patients], dtype=bool)
        return y_true, y_pred

    def aggregate(self, results: dict[str, bool], counts: np.ndarray) -> dict[str, np.ndarray]:
        """Balanced accuracy, sensitivity and specificity of every row of case weights
        (multiplicities of sorted(results)), from the weighted confusion counts. A row missing a
        class has no balanced accuracy, and then no value at all: NaN for the three (the
        bootstrap skips it). Unlabelled patients are left out. The counts are whole numbers:
        no summation order changes a bit."""
        patients, counts = self.labelled_columns(results, counts)
        # each class's recall: specificity (HPV negative) and sensitivity (positive), NaN without the class
        recalls = recall_score(*self.decisions(patients, results), counts, labels=[False, True], average=None)
        specificity, sensitivity = recalls[:, 0], recalls[:, 1]
        defined = ~(np.isnan(sensitivity) | np.isnan(specificity))
        return {self.balanced_accuracy.path: np.where(defined, (sensitivity + specificity) / 2, np.nan),
                self.sensitivity.path: np.where(defined, sensitivity, np.nan),
                self.specificity.path: np.where(defined, specificity, np.nan)}

    def score_aggregates(self, results: dict[str, bool]) -> dict[str, Any]:
        patients = self.scored_patients(results)
        y_true, y_pred = self.decisions(patients, results)
        intervals, skipped = self.bootstrap_intervals(results)
        return {
            **nest_paths({**self.point_values(results), **intervals}),
            "counts": {
                "patients": len(patients),
                "hpv_positive": int(y_true.sum()),
                "hpv_negative": int((~y_true).sum()),
                "true_positives": int((y_true & y_pred).sum()),
                "false_negatives": int((y_true & ~y_pred).sum()),
                "true_negatives": int((~y_true & ~y_pred).sum()),
                "false_positives": int((~y_true & y_pred).sum()),
                "unlabelled_patients_skipped": self.unlabelled_count(results),
                "bootstrap_resamples": self.settings.bootstrap_repetitions,
                "bootstrap_resamples_skipped": skipped,
            },
        }
