"""CSV 2026: carotid plaque segmentation and vulnerability in ultrasound (docs/challenges/csv2026.md).

Each case is a longitudinal and a transverse B-mode image; the algorithm segments vessel and
plaque in both and gives one risk class per case. The leaderboard (scoring.py):

    S_total = 0.4 S_cls + 0.4 S_seg + 0.2 S_time       (all on 0-100)
    S_cls   = 100 × macro F1 over the two classes
    S_seg   = 100 × ½ Σ_view (0.4 S_view,vessel + 0.6 S_view,plaque),  S_v,c = (mean DSC + mean NSD) / 2
    S_time  = 100 × (2B − clip(t, 2B/3, 2B)) / (2B − 2B/3)

NSD is the MetricsReloaded one at τ = 3 px with an exact tie rule (evaluation.metrics.surface).
Vessel and plaque are exclusive labels (255 and 128), as the official baseline scores them.
Without timing information (a predictions-file submission) S_time and S_total are null with a
note and `score_without_time` = (0.4 S_cls + 0.4 S_seg) / 0.8 is what to rank on.

This module is the declaration: settings, the ranked values (each a Column, declared once), the
leaderboards and the final-ranking rule built from them, and thin hooks. The parts: truth.py
(the NNNN_label.h5 ground truth), predictions.py (a job's mask images, risk JSON and timing; a
predictions file's NNNN_pred.h5), scoring.py (per-case results and the one weighted aggregate),
charts.py, and examples.py (the example generators).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluation.declarations.charts import Chart
from evaluation.declarations.columns import ABSOLUTE, Column, Leaderboard, leaderboard_paths
from evaluation.declarations.ranking_rules import OrderedRanking
from evaluation.declarations.workload import Workload
from evaluation.errors import SetupError
from evaluation.framework import Evaluation, log
from evaluation.platform.cases import Case
from evaluation.platform.outputs import Undefined, set_at_path, value_at_path
from evaluation.settings import CASE_INPUT, IMAGE_OUTPUT, JSON_OUTPUT, Settings, setting

from . import predictions, scoring
from . import truth as truth_files
from .predictions import CLASS_KEYS, PREDICTION_SUFFIX, JobTiming, Prediction, job_timing
from .scoring import CaseResult, time_score
from .truth import (
    LABEL_SUFFIX,
    MASK_KEYS,
    PAIRS,
    RAW_LABELS,
    VIEW_NAMES,
    VIEWS,
    CaseTruth,
)

# The packages of requirements.txt this challenge's image installs (its pins stay there), numpy's dependencies
# included: mask images (SimpleITK), NNNN_label.h5 ground truth (h5py), surface distances (cv2), the length
# each szip chunk of an .h5 mask decodes to (imagecodecs' libaec; evaluation/reading/hdf5.py). build.sh
# installs these alone; tests/test_image_requirements.py scores the bundled example with every other package
# blocked.
RUNTIME_PACKAGES = ("numpy", "SimpleITK", "h5py", "opencv-python-headless", "imagecodecs")


@dataclass(frozen=True)
class Csv2026Settings(Settings):
    nsd_tolerance_px: float = setting(3.0, minimum=0,
                                      doc="NSD tolerance τ in pixels (the official baseline's 3 px); a distance "
                                          "equal to τ counts as within it")
    baseline_time_seconds: float | None = setting(None, above=0,
                                                  doc="B, the baseline's total processing time in seconds, shipped "
                                                      "with the ground truth; needed whenever the submission carries "
                                                      "timing (algorithm phase)")
    plaque_index: int = setting(1, choices=(1, 2),
                                doc="masks written as class indices 0/1/2: the index of plaque, vessel being the "
                                    "other (1: the official baseline's 1 = plaque, 2 = vessel)")
    longitudinal_input_socket: str | list[str] = setting(
        "longitudinal-carotid-ultrasound", socket=CASE_INPUT, hints=("longitudinal", "long"),
        doc="algorithm phase: input whose image name is the case id (empty: the job's only image input; a "
            "list: one per interface of the phase)")
    longitudinal_output_socket: str = setting("longitudinal-carotid-segmentation", socket=IMAGE_OUTPUT,
                                              hints=("longitudinal", "long"),
                                              doc="algorithm phase: longitudinal segmentation image output")
    transverse_output_socket: str = setting("transverse-carotid-segmentation", socket=IMAGE_OUTPUT,
                                            hints=("transverse", "trans"),
                                            doc="algorithm phase: transverse segmentation image output")
    risk_output_socket: str = setting("plaque-risk", socket=JSON_OUTPUT,
                                      doc="algorithm phase: JSON output with the class (0/1, a boolean, or a "
                                          "probability of high risk, high when >= 0.5)")
    structure_chart_file: str = setting("", output_file=True,
                                        doc="file (the phase's Chart output relative_path, e.g. structures.json) for "
                                            "a Vega-Lite bar chart of the mean Dice and NSD per view and structure; "
                                            "empty: no chart")


# ---- the ranked values, each declared once ------------------------------------------------------

SCORE_TOTAL = Column("Total score S_total = 0.4 S_cls + 0.4 S_seg + 0.2 S_time", "aggregates.score_total", "desc")
SCORE_WITHOUT_TIME = Column("Score without time = (0.4 S_cls + 0.4 S_seg) / 0.8", "aggregates.score_without_time",
                            "desc")
SCORE_CLS = Column("Classification score S_cls", "aggregates.score_cls", "desc", exclude_from_ranking=True)
SCORE_SEG = Column("Segmentation score S_seg", "aggregates.score_seg", "desc", exclude_from_ranking=True)
SCORE_TIME = Column("Time score S_time", "aggregates.score_time", "desc", exclude_from_ranking=True)
MACRO_F1 = Column("Risk class macro F1", "aggregates.macro_f1", "desc", exclude_from_ranking=True)
F1_LOW_RISK = Column("Low-risk F1", "aggregates.f1_low_risk", "desc", exclude_from_ranking=True)
F1_HIGH_RISK = Column("High-risk F1", "aggregates.f1_high_risk", "desc", exclude_from_ranking=True)
PAIR_DSC, PAIR_NSD, PAIR_SCORE = (
    {(view, structure): Column(f"{VIEW_NAMES[view].capitalize()} {structure} {title}",
                               f"aggregates.{view}_{structure}_{key}", "desc", exclude_from_ranking=True)
     for view, structure in PAIRS}
    for key, title in (("dsc", "DSC"), ("nsd", "NSD"), ("score", "score S_v,c")))
PROCESSING_TIME = Column("Processing time (s)", "aggregates.processing_time_seconds", "asc",
                         exclude_from_ranking=True)

# metrics.json's aggregates, in its order (baseline_time_seconds, the setting, follows them).
VALUES = (SCORE_TOTAL, SCORE_WITHOUT_TIME, SCORE_CLS, SCORE_SEG, SCORE_TIME, MACRO_F1, F1_LOW_RISK, F1_HIGH_RISK,
          *(column[pair] for pair in PAIRS for column in (PAIR_DSC, PAIR_NSD, PAIR_SCORE)), PROCESSING_TIME)
# Null without timing (a predictions-file submission, or a job without its time; metrics.json
# notes why): the timed leaderboard reads them, but they cannot be ranked paths.
TIMED = (SCORE_TOTAL, SCORE_TIME, PROCESSING_TIME)
TIMED_PATHS = tuple(column.path for column in TIMED)


def csv2026_leaderboard(timed: bool) -> Leaderboard:
    """Ranked on S_total when the phase is timed, else on score_without_time (csv2026.md); the
    components and the eight mean DSC/NSD shown beside it, excluded from ranking. A phase is
    timed when its config.json sets baseline_time_seconds: an algorithm phase, whose jobs carry
    their time, cannot run without it, and a phase without timing has no use for it."""
    shown = dataclasses.replace(SCORE_WITHOUT_TIME, title="Score without time", exclude_from_ranking=True)
    timing = (SCORE_TIME, shown, PROCESSING_TIME)
    return Leaderboard(score=SCORE_TOTAL if timed else SCORE_WITHOUT_TIME, decimal_places=2, scoring_method=ABSOLUTE,
                       extra_columns=(SCORE_CLS, SCORE_SEG, *(timing if timed else ()), MACRO_F1,
                                      *(column[pair] for pair in PAIRS for column in (PAIR_DSC, PAIR_NSD))))


def structure_chart(evaluation: Csv2026, results: dict[str, CaseResult], metrics: dict[str, Any]) -> dict:
    """The mean DSC and NSD of each view and structure, read from metrics.json at their Columns."""
    from .charts import structure_bar_chart

    means = {pair: (value_at_path(metrics, PAIR_DSC[pair].path), value_at_path(metrics, PAIR_NSD[pair].path))
             for pair in PAIRS}
    return structure_bar_chart(means, value_at_path(metrics, SCORE_SEG.path), metrics["counts"]["cases"],
                               evaluation.settings.nsd_tolerance_px)


class Csv2026(Evaluation):
    name = "csv2026"
    title = "CSV 2026: carotid vessel/plaque segmentation and plaque risk in ultrasound (ISBI 2026)"
    settings_class = Csv2026Settings
    case_label = "Case"
    # ~10 ms per case at 512²: two workers were 1.2-1.3x faster on 300 cases, but cost more than
    # they saved on the 8 small cases of the bundled example (benchmarks/workers.py).
    workload = Workload(min_cases_per_worker=16)
    leaderboards = (csv2026_leaderboard(timed=Csv2026Settings().baseline_time_seconds is not None),)
    value_titles: ClassVar[dict] = {
        column.path: column.title for timed in (True, False)
        for column in (csv2026_leaderboard(timed).score, *csv2026_leaderboard(timed).extra_columns)
    }
    # Always finite: both leaderboards' values and every value, but the TIMED ones, which the
    # default leaderboard shows (null without timing).
    extra_ranked_paths = leaderboard_paths((csv2026_leaderboard(timed=True), csv2026_leaderboard(timed=False)),
                                           *(column.path for column in VALUES))
    nullable_paths = TIMED_PATHS

    # The rule: S_total; a predictions-file phase (no submission has timing) ranks the score
    # without time (csv2026.md, "Leaderboard").
    final_rankings = (OrderedRanking("score_total", (SCORE_TOTAL,), fallback=(SCORE_WITHOUT_TIME,)),)

    @classmethod
    def phase_leaderboards(cls, settings: Csv2026Settings) -> tuple[Leaderboard, ...]:
        return (csv2026_leaderboard(timed=settings.baseline_time_seconds is not None),)

    # ---- ground truth and submission (truth.py, predictions.py) ---------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, Path]:
        """{case id: its NNNN_label.h5}, only listed: each file is read by the worker scoring its
        case (case_truth); both risks are checked to be there once every case is scored (metrics)."""
        return truth_files.list_ground_truth(directory)

    def case_truth(self, case: Case) -> CaseTruth:
        return self.read_truth(self.ground_truth[case.case_id])

    def read_truth(self, path: Path) -> CaseTruth:
        return truth_files.read_truth(self.truth, path)

    def file_cases(self, input_dir: Path) -> list[tuple[str, Path]]:
        return predictions.file_cases(input_dir)

    def check_cases(self, cases: list[Case]) -> None:
        if all(case.job is not None for case in cases):  # an algorithm phase: the jobs may carry their time
            timed, _ = scoring.timing_rule([job_timing(case.job) for case in cases])
            if timed and self.settings.baseline_time_seconds is None:
                raise SetupError("config.json sets no baseline_time_seconds, which the time score of this "
                                 "algorithm phase needs (the submission's jobs carry their processing time).")

    def read_job_prediction(self, case: Case, truth: CaseTruth) -> Prediction:
        settings = self.settings
        sockets = (settings.longitudinal_output_socket, settings.transverse_output_socket, settings.risk_output_socket)
        return predictions.read_job_prediction(case, truth, sockets, settings.plaque_index)

    def read_file_prediction(self, case: Case, truth: CaseTruth) -> Prediction:
        return predictions.read_file_prediction(case, truth, self.settings.plaque_index)

    def score_case(self, case: Case, prediction: Prediction, truth: CaseTruth) -> CaseResult:
        return scoring.score_case(prediction, truth, self.settings.nsd_tolerance_px)

    # ---- the ranked values: one aggregate (scoring.py) --------------------------------------

    def aggregate(self, results: dict[str, CaseResult], weights: np.ndarray) -> dict[str, np.ndarray]:
        """Every value of VALUES on each row of case weights; the TIMED ones only when the
        submission has a time and the phase a baseline (null in metrics.json otherwise)."""
        scores = scoring.aggregate([results[case] for case in sorted(results)], weights,
                                   self.settings.baseline_time_seconds)
        values = {SCORE_WITHOUT_TIME: scores.score_without_time, SCORE_CLS: scores.score_cls,
                  SCORE_SEG: scores.score_seg, MACRO_F1: scores.macro_f1, F1_LOW_RISK: scores.f1[:, 0],
                  F1_HIGH_RISK: scores.f1[:, 1]}
        for index, pair in enumerate(PAIRS):
            values.update({PAIR_DSC[pair]: scores.dsc[:, index], PAIR_NSD[pair]: scores.nsd[:, index],
                           PAIR_SCORE[pair]: scores.structure_scores[:, index]})
        if scores.score_total is not None:
            values.update({SCORE_TOTAL: scores.score_total, SCORE_TIME: scores.score_time,
                           PROCESSING_TIME: scores.processing_time})
        return {column.path: np.asarray(array, dtype=np.float64) for column, array in values.items()}

    def score_aggregates(self, results: dict[str, CaseResult]) -> dict[str, Any]:
        """metrics.json: the point values of VALUES (null with the reason where the submission has
        no time), the baseline, how the time was found and the counts."""
        # The whole ground truth's classes are known once every case is scored: checked here, not
        # in the aggregate, which the final ranking's resamples (one class drawn, say) must reach.
        truth_files.check_both_classes([result.true_high_risk for result in results.values()])
        timings = [results[case].timing for case in sorted(results)]
        timed, source = scoring.timing_rule(timings)
        baseline = self.settings.baseline_time_seconds
        if timed and baseline is None:  # cases() stops before scoring; kept for direct calls
            raise SetupError("config.json sets no baseline_time_seconds, which the time score needs.")
        values = self.point_values(results)
        log(f"Processing time: {source}.")
        untimed = Undefined(f"no timing information ({source}); rank on {SCORE_WITHOUT_TIME.path}")
        document: dict[str, Any] = {}
        for column in VALUES:
            set_at_path(document, column.path, values.get(column.path, untimed))
        document["aggregates"]["baseline_time_seconds"] = (
            baseline if baseline is not None else Undefined("config.json sets no baseline_time_seconds"))
        document["timing"] = {"source": source, "jobs": sum(timing is not None for timing in timings)}
        document["counts"] = {"cases": len(results),
                              "predicted_high_risk": sum(result.high_risk for result in results.values())}
        return document

    # ---- chart (only when structure_chart_file is set; charts.py) -------------------------

    result_charts = (Chart("structure_chart_file", structure_chart),)


__all__ = [
    "CLASS_KEYS",
    "LABEL_SUFFIX",
    "MASK_KEYS",
    "PAIRS",
    "PREDICTION_SUFFIX",
    "RAW_LABELS",
    "TIMED_PATHS",
    "VIEWS",
    "VIEW_NAMES",
    "CaseResult",
    "CaseTruth",
    "Csv2026",
    "Csv2026Settings",
    "JobTiming",
    "Prediction",
    "time_score",
]
