"""RARE26: early neoplasia in Barrett's esophagus (docs/challenges/rare26.md).

Ranked by PPV at 90% recall under a simulated 1% prevalence: every repetition keeps all NDBE
images and draws neoplasia images with replacement, 1 per 100 NDBE; the score is the median
over 1000 repetitions. The official scorer sets no seed; ours does, so numbers reproduce.

The declaration: settings, the 13 ranked values (metrics.json's keys, the leaderboard's columns and
the final ranking's key, each declared once below) and thin hooks. The parts: truth.py reads the
RARE25 metadata, predictions.py a job's likelihoods, scoring.py the bootstrap and the metrics,
charts.py the curves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.declarations.charts import Chart
from evaluation.declarations.columns import ABSOLUTE, Column, Leaderboard
from evaluation.declarations.ranking_rules import OrderedRanking
from evaluation.declarations.workload import Workload
from evaluation.errors import SetupError
from evaluation.framework import Evaluation, log
from evaluation.metrics.resampling import percentile_summary
from evaluation.platform.cases import Case
from evaluation.settings import CASE_INPUT, JSON_OUTPUT, Settings, setting

from . import charts, scoring
from .predictions import read_likelihoods
from .scoring import AUROC, AVERAGE_PRECISION, PPV_AT_RECALL, TestSet
from .truth import StackTruth, read_metadata

# The packages of requirements.txt this challenge's image installs (its pins stay there), numpy's dependencies
# included: reads JSON files; scores with numpy alone. build.sh installs these alone;
# tests/test_image_requirements.py scores the bundled example with every other package blocked.
RUNTIME_PACKAGES = ("numpy",)

MAX_PATIENT_DRAWS = 50_000_000  # 400 MB of draws


@dataclass(frozen=True)
class Rare26Settings(Settings):
    input_socket: str | list[str] = setting("stacked-barretts-esophagus-endoscopy-images", socket=CASE_INPUT,
                                            doc="input socket whose image name is the stack (case) id (empty: the "
                                                "job's only image input; a list: one per interface of the phase)")
    output_socket: str = setting("stacked-neoplastic-lesion-likelihoods", socket=JSON_OUTPUT,
                                 doc="output socket: a JSON array of one likelihood per frame")
    sampling: str = setting("image", choices=("image", "patient"),
                            doc="bootstrap scheme: 'image' (RARE26 official: all NDBE images plus neoplasia "
                                "images drawn with replacement) or 'patient' (RARE25 pack: patients drawn "
                                "with replacement, all images of each)")
    repetitions: int = setting(1000, minimum=1, maximum=100_000, doc="bootstrap repetitions")
    imbalance_ratio: int = setting(100, minimum=1, maximum=100_000,
                                   doc="NDBE per neoplasia in a repetition (100: 1% prevalence)")
    patient_sample_size: int = setting(10, minimum=1, maximum=100_000,
                                       doc="'patient' scheme: neoplasia patients per repetition (NDBE patients: "
                                           "this times imbalance_ratio)")
    seed: int = setting(2026, minimum=0, doc="seed of the bootstrap draws (--seed overrides)")
    roc_chart_file: str = setting("", output_file=True,
                                  doc="file (the phase's Chart output relative_path, e.g. roc.json) for a Vega-Lite "
                                      "chart of the ROC curve on the whole test set; empty: no chart")
    pr_chart_file: str = setting("", output_file=True,
                                 doc="file (a Chart output relative_path, e.g. precision-recall.json) for a Vega-Lite "
                                     "chart of the precision-recall curve on the whole test set; empty: no chart")

    def check(self) -> None:
        super().check()
        # 'patient' draws every repetition's patients at once: bound them, or memory runs out.
        draws = self.repetitions * self.patient_sample_size * (self.imbalance_ratio + 1)
        if self.sampling == "patient" and draws > MAX_PATIENT_DRAWS:
            raise SetupError(f"config.json: repetitions x patient_sample_size x (imbalance_ratio + 1) is {draws}; "
                             f"the 'patient' sampling draws at most {MAX_PATIENT_DRAWS} patients in all.")

    @property
    def bootstrap_sampling(self) -> scoring.Sampling:
        return scoring.Sampling(self.sampling, self.imbalance_ratio, self.patient_sample_size)


# ---- the ranked values: the official scorer's 13 top-level keys, in its order -------------------


def _shown(title: str, path: str) -> Column:
    """A value shown beside the score, excluded from ranking (higher is better)."""
    return Column(title, path, "desc", exclude_from_ranking=True)


def _over_repetitions(title: str, path: str) -> tuple[Column, Column, Column]:
    """A metric's median over the bootstrap repetitions and the bounds of its 95% interval."""
    return (_shown(title, path), _shown(f"{title}, 95% CI lower", f"{path} 95% CI Lower Bound"),
            _shown(f"{title}, 95% CI upper", f"{path} 95% CI Upper Bound"))


# Ranked on Score alone (rare26.md): the median PPV@90% recall over the repetitions (scoring.score).
SCORE = Column("Score: PPV@90% recall at 1% prevalence (median)", "Score", "desc")
# {metric of scoring: its columns}: the median and 95% interval over the repetitions, then the
# metric on the whole test set (not resampled).
OVER_REPETITIONS = {PPV_AT_RECALL: _over_repetitions("PPV@90% recall", "PPV@90RECALL"),
                    AUROC: _over_repetitions("AUROC", "AUROC"),
                    AVERAGE_PRECISION: _over_repetitions("AUPRC", "AUPRC")}
WHOLE_TEST_SET = {AUROC: _shown("AUROC, whole test set", "AUROC Full Dataset"),
                  AVERAGE_PRECISION: _shown("AUPRC, whole test set", "AUPRC Full Dataset"),
                  PPV_AT_RECALL: _shown("PPV@90% recall, whole test set", "PPV@90RECALL Full Dataset")}


# ---- the charts: which of the values above each chart shows (charts.py draws them) --------------


def roc_chart(evaluation: Rare26, results: dict[str, np.ndarray], metrics: dict[str, Any]) -> dict:
    return charts.roc_chart(evaluation.test_set(results).curve(), metrics["counts"],
                            metrics[WHOLE_TEST_SET[AUROC].path], metrics[OVER_REPETITIONS[AUROC][0].path])


def precision_recall_chart(evaluation: Rare26, results: dict[str, np.ndarray], metrics: dict[str, Any]) -> dict:
    settings = evaluation.settings
    return charts.precision_recall_chart(
        evaluation.test_set(results).curve(), metrics["counts"], metrics[WHOLE_TEST_SET[AVERAGE_PRECISION].path],
        metrics[WHOLE_TEST_SET[PPV_AT_RECALL].path], metrics[SCORE.path], settings.repetitions,
        settings.imbalance_ratio)


class Rare26(Evaluation):
    name = "rare26"
    title = "RARE26: PPV at 90% recall, simulated 1% prevalence (endoscopy)"
    settings_class = Rare26Settings
    case_label = "Stack"
    # A stack is one JSON array of a few hundred numbers: 32 stacks took 0.53 s with one process and
    # with two workers alike, the workers doubling the memory (benchmarks/workers.py).
    workload = Workload(in_workers=False)
    # The 13 official keys: ranked on Score alone, the other twelve shown beside it, excluded from
    # ranking (python -m evaluation.phase rare26).
    leaderboards = (Leaderboard(
        score=SCORE, decimal_places=4, scoring_method=ABSOLUTE,
        extra_columns=(*(c for columns in OVER_REPETITIONS.values() for c in columns), *WHOLE_TEST_SET.values()),
    ),)
    # The RARE26 rule (python -m evaluation.leaderboard): Score (median PPV@90% recall) descending.
    final_rankings = (OrderedRanking("score", (SCORE,)),)

    # ---- reading -------------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, StackTruth]:
        return read_metadata(self.truth, directory, need_patients=self.settings.sampling == "patient")

    def read_job_prediction(self, case: Case, ground_truth: StackTruth) -> np.ndarray:
        return read_likelihoods(case, self.settings.output_socket, len(ground_truth.labels))

    # ---- scoring -------------------------------------------------------------------------
    # Not the generic aggregate(results, weights): RARE26's ranked value is not a function of
    # case weights. It is itself the median over its own bootstrap (frames, not stacks, drawn at a
    # simulated prevalence), so a case-weight bootstrap of it would be a bootstrap of a bootstrap.
    # The one scoring path is `repetitions`: metrics.json's Score is their median, and the final
    # ranking's statistics are those same repetitions (resample_plan, ranking_resamples).

    def test_set(self, results: dict[str, np.ndarray]) -> TestSet:
        return TestSet.of(self.ground_truth, results)

    def repetitions(self, test_set: TestSet, count: int, seed: int) -> tuple[dict[str, np.ndarray], dict[str, int]]:
        """The three metrics of every bootstrap repetition (scoring.repetitions) and its sizes."""
        return scoring.repetitions(test_set, self.settings.bootstrap_sampling, count, seed)

    def score_aggregates(self, results: dict[str, np.ndarray]) -> dict[str, Any]:
        settings = self.settings
        test_set = self.test_set(results)
        whole = scoring.whole_test_set(test_set)
        values, sizes = self.repetitions(test_set, settings.repetitions, settings.seed)
        log(f"Bootstrap: {settings.repetitions} repetitions, {settings.sampling}-level sampling, seed {settings.seed}.")
        metrics: dict[str, Any] = {SCORE.path: scoring.score(values)}
        for metric, columns in OVER_REPETITIONS.items():
            metrics.update(zip((c.path for c in columns), percentile_summary(values[metric]), strict=True))
        metrics.update({column.path: whole[metric] for metric, column in WHOLE_TEST_SET.items()})
        metrics["counts"] = {**test_set.counts(), **sizes}
        return metrics

    # ---- the final ranking (python -m evaluation.leaderboard) ----------------------------

    def resample_plan(self, resamples: int, seed: int) -> tuple[int, int, str | None]:
        """RARE26's own bootstrap repetitions are the resamples: already the same draws for every
        submission, and Score is their median."""
        settings = self.settings
        note = (f"The statistics use RARE26's own {settings.repetitions} bootstrap repetitions "
                f"({settings.sampling}-level sampling, seed {settings.seed}, from the ground truth's settings), the "
                f"same draws for every submission, Score being the median over them; the requested resamples and "
                f"seed ({resamples}, {seed}) are not used.")
        return settings.repetitions, settings.seed, note

    def ranking_resamples(self, results: dict[str, np.ndarray], resamples: int, seed: int) -> dict[str, np.ndarray]:
        """{Score: PPV@90% recall of every repetition}: with resample_plan's repetitions and seed,
        exactly the repetitions whose median (scoring.score) is metrics.json's Score."""
        values, _ = self.repetitions(self.test_set(results), resamples, seed)
        return {SCORE.path: values[PPV_AT_RECALL]}

    def ranking_curves(self, results: dict[str, np.ndarray], metrics: dict[str, Any]) -> list[dict]:
        """The ROC curve of the whole test set (the result page's chart), thinned to the chart's maximum."""
        return [charts.report_roc_curve(self.test_set(results).curve())]

    # ---- charts (only when their settings name a file) -----------------------------------

    result_charts = (Chart("roc_chart_file", roc_chart), Chart("pr_chart_file", precision_recall_chart))
