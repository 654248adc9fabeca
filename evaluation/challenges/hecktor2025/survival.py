"""HECKTOR 2025 Task 2: recurrence-free survival (docs/challenges/hecktor2025.md, "Task 2").

One risk score per patient (rfs.json, or the 2022 predictions CSV); ranked on Harrell's C-index of
the whole test set, with a seeded patient-bootstrap 95% interval. Both, and the final ranking's
bootstrap, are `aggregate`: the counts-based concordance of evaluation/metrics/survival.py.
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
    ground_truth_number,
    patient_table,
    text_number,
)
from evaluation.declarations.columns import Column
from evaluation.errors import SetupError, SubmissionError
from evaluation.metrics.survival import concordance_index, concordance_pairs
from evaluation.platform.cases import Case
from evaluation.platform.locations import single_ground_truth_file
from evaluation.platform.outputs import nest_paths
from evaluation.reading.values import is_finite_number, shown
from evaluation.settings import JSON_OUTPUT, setting


@dataclass(frozen=True)
class Task2Settings(BootstrapSettings):
    output_socket: str = setting("rfs", socket=JSON_OUTPUT, json_value="number",
                                 doc="output socket read: rfs.json, one number, a risk score (higher = earlier "
                                     "recurrence)")


class SurvivalTask(BootstrapTask):
    """Reading the risk scores and scoring them; the declaration (name, columns, leaderboard) is
    HecktorTask2's, in __init__.py."""

    c_index: ClassVar[Column]  # the ranked value
    settings_class = Task2Settings
    skipped_reason = "no comparable pair"

    def load_ground_truth(self, directory: Path) -> dict[str, tuple[float, int] | None]:
        """One CSV: PatientID, RFS (days), Relapse (1 event, 0 censored)."""
        name = single_ground_truth_file(directory, ".csv").name
        number, binary = ground_truth_number(name), ground_truth_binary(name)

        def parse(patient, column, text):
            if column == "Relapse":
                return binary(patient, column, text)
            value = number(patient, column, text)
            if value < 0:
                raise SetupError(f"Ground truth {name}: RFS of patient {patient} is negative.")
            return value

        table = patient_table(self.truth, directory, ("RFS", "Relapse"), parse,
                              self.settings.unlabelled_patients == "skip")
        labelled = [v for v in table.values() if v is not None]
        times = np.array([t for t, _ in labelled])
        events = np.array([e for _, e in labelled], dtype=bool)
        _, comparable = concordance_pairs(times, events, np.zeros(len(labelled)))
        if comparable[0] == 0:
            raise SetupError(f"Ground truth {name} has no comparable pair of patients (a relapse before another "
                             f"patient's time): the C-index is undefined.")
        return table

    def read_job_prediction(self, case: Case, ground_truth: Any) -> float:
        slug = self.settings.output_socket
        value = case.read_json(slug)
        if not is_finite_number(value):
            raise SubmissionError(f"{case.name}: the output {slug!r} is {shown(value)}; it must be one finite number "
                                  f"(a risk score, higher for an earlier recurrence).")
        return float(value)

    def read_file_prediction(self, case: Case, ground_truth: Any) -> float:
        value = text_number(case.source)
        if value is None:
            raise SubmissionError(f"{case.name}: the {PREDICTION_COLUMN} is {shown(case.source)}; it must be a finite "
                                  f"number (a risk score).")
        return value

    def survival_arrays(self, patients: list[str], results: dict[str, float]):
        time = np.array([self.ground_truth[p][0] for p in patients], dtype=np.float64)
        event = np.array([self.ground_truth[p][1] for p in patients], dtype=bool)
        risk = np.array([results[p] for p in patients], dtype=np.float64)
        return time, event, risk

    def aggregate(self, results: dict[str, float], counts: np.ndarray) -> dict[str, np.ndarray]:
        """The C-index of every row of case weights (multiplicities of sorted(results)): concordant
        over comparable pairs, each pair weighted by the product of its patients' weights; NaN
        where a row has no comparable pair. Unlabelled patients are left out. Exact in float64
        (every pair sum is a multiple of 1/2), so no summation order changes a bit."""
        patients, counts = self.labelled_columns(results, counts)
        return {self.c_index.path: concordance_index(*self.survival_arrays(patients, results), counts)}

    def score_aggregates(self, results: dict[str, float]) -> dict[str, Any]:
        patients = self.scored_patients(results)
        time, event, risk = self.survival_arrays(patients, results)
        intervals, skipped = self.bootstrap_intervals(results)
        _, comparable = concordance_pairs(time, event, risk)
        return {
            **nest_paths({**self.point_values(results), **intervals}),
            "counts": {
                "patients": len(patients),
                "relapses": int(event.sum()),
                "comparable_pairs": int(comparable[0]),
                "unlabelled_patients_skipped": self.unlabelled_count(results),
                "bootstrap_resamples": self.settings.bootstrap_repetitions,
                "bootstrap_resamples_skipped": skipped,
            },
        }
