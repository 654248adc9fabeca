"""The survival kind: one job per patient writes a risk score (higher for an earlier event), and
the ranked value is Harrell's C-index of the whole test set (evaluation/metrics/survival.py),
computed with the case weights so that metrics.json (a row of ones) and every bootstrap
resample of the final ranking (a row of counts) go through the same call.

A challenge subclasses `Survival` and declares (defaults in brackets):

- `ranking`: the final ranking's rule, "ordered" or "mean_of_ranks" (one ranked value: the
  same ranking); a per-case rule does not apply, the C-index being of pairs of patients
  (evaluation/kinds/tabular.py) ["ordered"];
- `case_label`: how messages name a case ["Patient"];
- `settings_class`: `SurvivalSettings` (input_socket, output_socket ["risk-score"]: one
  JSON number, any finite value).

The ground truth is one JSON file {case id: {"time": a number >= 0, "event": 1 (event) or 0
(censored at time)}} with at least one comparable pair (an event before another patient's
time), so that the C-index of the whole test set is defined; a resample without one is NaN.
A pair is comparable when the earlier time is an event (at a tied time, an event before a
censoring); a tied risk counts one half: lifelines' and scikit-survival's (tied_tol=0) rule.

metrics.json: aggregates.c_index, "counts" (patients, events) and each patient's risk score
under "cases" (never the outcome: metrics.json may be shown to the participant).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.declarations.columns import Column
from evaluation.declarations.workload import Workload
from evaluation.kinds.declared import CaseSettings, Declared, Ranked, reference_document
from evaluation.kinds.tabular import output_number
from evaluation.metrics.survival import concordance_index
from evaluation.platform.cases import Case
from evaluation.reading.values import is_finite_number, shown
from evaluation.settings import JSON_OUTPUT, setting


@dataclass(frozen=True)
class SurvivalSettings(CaseSettings):
    """The defaults; the phase's config.json next to the ground truth may change them (python -m
    evaluation --list lists them with their defaults)."""

    output_socket: str = setting("risk-score", socket=JSON_OUTPUT, json_value="number",
                                 doc="output socket read: one number, a risk score (higher = earlier event)")


def c_index(results, weights, _) -> np.ndarray:
    """Harrell's C-index per row of case weights."""
    time = np.array([result["time"] for result in results], dtype=np.float64)
    event = np.array([result["event"] for result in results], dtype=bool)
    risk = np.array([result["risk"] for result in results], dtype=np.float64)
    return np.asarray(concordance_index(time, event, risk, np.atleast_2d(weights)), dtype=np.float64).reshape(-1)


C_INDEX = Ranked(Column("C-index (Harrell)", "aggregates.c_index", "desc"), c_index)


class Survival(Declared):
    """A survival challenge, declared (the module docstring lists every choice)."""

    settings_class = SurvivalSettings
    case_label = "Patient"
    workload = Workload(in_workers=False)  # one number per case: a process pool would cost more than it saves

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if "ranked" not in cls.__dict__:
            cls.ranked = (C_INDEX,)
        super().__init_subclass__(**kwargs)

    def load_ground_truth(self, directory: Path) -> dict[str, tuple[float, int]]:
        path, document = reference_document(self.truth, directory, "their outcome")
        outcomes = {}
        for case_id, outcome in document.items():
            time = outcome.get("time") if isinstance(outcome, dict) else None
            event = outcome.get("event") if isinstance(outcome, dict) else None
            if not is_finite_number(time) or time < 0 or isinstance(event, bool) or event not in (0, 1):
                self.truth.fail(f"Ground truth {path.name}: case {case_id} is {shown(outcome)}; it must be "
                                f'{{"time": a number >= 0, "event": 1 or 0}}.')
            outcomes[case_id] = (float(time), int(event))
        times = np.array([t for t, _ in outcomes.values()])
        events = np.array([e for _, e in outcomes.values()], dtype=bool)
        if np.isnan(concordance_index(times, events, np.zeros(len(times)))):
            self.truth.fail(f"Ground truth {path.name} has no comparable pair of patients (an event before another "
                            f"patient's time): the C-index is undefined.")
        return outcomes

    def read_job_prediction(self, case: Case, ground_truth: tuple[float, int]) -> float:
        slug = self.settings.output_socket
        return output_number(case.read_json(slug), case, slug)

    def score_case(self, case: Case, prediction: float, ground_truth: tuple[float, int]) -> dict[str, Any]:
        time, event = ground_truth
        return {"risk": prediction, "time": time, "event": event}

    def case_entry(self, result: dict[str, Any]) -> dict[str, Any]:
        """The job's risk score; never the outcome (metrics.json may be shown)."""
        return {"risk": result["risk"]}

    def report(self, results: dict[str, Any]) -> dict[str, Any]:
        events = sum(result["event"] for result in results.values())
        return {"counts": {"patients": len(results), "events": events}}


__all__ = ["C_INDEX", "Survival", "SurvivalSettings"]
