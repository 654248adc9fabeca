"""ISIC skin-lesion classification: 2018 Task 3 (`isic2018`) and 2019 (`isic2019`)
(docs/challenges/isic.md).

Ranked by balanced multi-class accuracy (mean per-category recall, labels by argmax, a tied
prediction counts as wrong), ties broken by the mean AUC over categories. Every number is the
reference scorer's (`isic-challenge-scoring` 5.8.0) to the bit on the inputs it accepts; where
it crashes (a category without positives) or writes NaN, ours leaves the undefined value out of
the means and writes null with a note.

This module is the declaration: settings, the ranked values and the leaderboard's columns, the
final-ranking rule, and thin hooks. Reading a submission: predictions.py; the ground truth:
truth.py; the numbers: scoring.py; plots: charts.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluation.challenges.isic import charts, scoring
from evaluation.challenges.isic.columns import (
    BALANCED_ACCURACY,
    EXTRA_COLUMNS,
    MEAN_AP,
    MEAN_AUC,
    MEAN_DICE,
    OVERALL,
    PER_CATEGORY_METRICS,
    macro_average_path,
)
from evaluation.challenges.isic.predictions import (
    PREDICTIONS_FILE,
    PREDICTIONS_WHAT,
    SPARE_ROWS,
    confidences_from_json,
    predictions_csv_path,
    read_predictions_csv,
)
from evaluation.challenges.isic.truth import Truth, TruthRows, check_truth_scorable, read_truth_csv
from evaluation.declarations.charts import Chart
from evaluation.declarations.columns import ABSOLUTE, Column, Leaderboard, leaderboard_paths
from evaluation.declarations.ranking_rules import OrderedRanking
from evaluation.declarations.workload import Workload
from evaluation.errors import SetupError
from evaluation.framework import Evaluation, log
from evaluation.platform.cases import Case
from evaluation.platform.locations import single_ground_truth_file
from evaluation.reading.files import Origin
from evaluation.reading.tables import bytes_for_rows
from evaluation.settings import CASE_INPUT, JSON_OUTPUT, Settings, setting

__all__ = [
    "PREDICTIONS_FILE",
    "SPARE_ROWS",
    "Isic2018",
    "Isic2019",
    "Truth",
    "TruthRows",
    "read_predictions_csv",
    "read_truth_csv",
]

# The packages of requirements.txt this challenge's image installs (its pins stay there), numpy's dependencies
# included: reads CSV and JSON files; scores with numpy alone. build.sh installs these alone;
# tests/test_image_requirements.py scores the bundled example with every other package blocked.
RUNTIME_PACKAGES = {"isic2018": ("numpy",), "isic2019": ("numpy",)}

# ---- the ranked values and the leaderboard's columns, each declared once -----------------------

# (columns.py: declared there so scoring.py and charts.py read the same paths)


@dataclass(frozen=True)
class Target:
    """A target_metric: the score's title, and the column holding the same value as `overall`."""

    title: str
    column: Column


TARGETS = {"balanced_accuracy": Target("Balanced multi-class accuracy", BALANCED_ACCURACY),
           "auc": Target("Mean AUC over categories", MEAN_AUC),
           "ap": Target("Mean average precision over categories", MEAN_AP),
           "dice": Target("Mean Dice over categories", MEAN_DICE)}


@dataclass(frozen=True)
class IsicSettings(Settings):
    target_metric: str = setting("balanced_accuracy", choices=tuple(TARGETS),
                                 doc="value of `overall` and `validation`: balanced_accuracy (the ISIC goal "
                                     "metric) or the macro average of auc, ap or dice")
    malignant_categories: list[str] = setting([], doc="categories whose images are malignant, for "
                                                       "aggregate.malignant_vs_benign_auc (our definition)")
    zero_weight_images: list[str] = setting([], doc="images whose score and validation weights are forced to 0")
    output_socket: str = setting("skin-lesion-class-confidences", socket=JSON_OUTPUT,
                                 doc="algorithm output: a JSON object {category: confidence in [0, 1]}")
    input_socket: str | list[str] = setting("", socket=CASE_INPUT,
                                            doc="input socket whose image name is the image id (empty: the job's "
                                                "only image input; a list: one per interface of the phase)")
    roc_chart_file: str = setting("", output_file=True,
                                  doc="file (the phase's Chart output relative_path, e.g. roc-curves.json) for a "
                                      "Vega-Lite chart of the ROC curve of every category; empty: no chart")


@dataclass(frozen=True)
class Isic2018Settings(IsicSettings):
    malignant_categories: list[str] = setting(["MEL", "BCC", "AKIEC"],
                                              doc="categories whose images are malignant, for "
                                                  "aggregate.malignant_vs_benign_auc (our definition)")
    zero_weight_images: list[str] = setting(["ISIC_0035068"],
                                            doc="images whose score and validation weights are forced to 0 (the "
                                                "reference does so for the 2018 test image ISIC_0035068)")


@dataclass(frozen=True)
class Isic2019Settings(IsicSettings):
    malignant_categories: list[str] = setting(["MEL", "BCC", "SCC", "AK"],
                                              doc="categories whose images are malignant, for "
                                                  "aggregate.malignant_vs_benign_auc (our definition; AK kept "
                                                  "with the malignant group as 2018's AKIEC)")


def isic_leaderboard(target_metric: str) -> Leaderboard:
    """Ranked on `overall` alone (balanced multi-class accuracy by default), ties broken by the
    mean AUC over categories (isic.md). The platform gives tied scores one rank and has no
    tie-break, so mean AUC is a column beside the score, excluded from ranking, read by hand
    for ties. The other columns are shown, excluded; a column repeating `overall` is left out."""
    target = TARGETS[target_metric]
    columns = EXTRA_COLUMNS if target_metric == "balanced_accuracy" else tuple(
        replace(column, title="Mean AUC") if column is MEAN_AUC else column for column in EXTRA_COLUMNS)
    return Leaderboard(score=Column(target.title, OVERALL, "desc"), decimal_places=4, scoring_method=ABSOLUTE,
                       extra_columns=tuple(c for c in columns if c.path != target.column.path))


class IsicEvaluation(Evaluation):
    """Both editions; the subclasses only declare their name, categories and defaults."""

    case_label = "Image"
    settings_class = IsicSettings  # each edition's own subclass of it (its defaults)
    categories: ClassVar[tuple[str, ...]] = ()  # the edition's categories (examples, docs)
    leaderboards = (isic_leaderboard(IsicSettings().target_metric),)  # python -m evaluation.phase isic2019
    value_titles: ClassVar[dict] = {target.column.path: target.title for target in TARGETS.values()}
    # The ISIC rule (python -m evaluation.leaderboard): balanced accuracy, ties broken by the mean AUC.
    final_rankings = (OrderedRanking("balanced_accuracy", (BALANCED_ACCURACY, MEAN_AUC)),)
    # Every target_metric's leaderboard, and the macro averages.
    extra_ranked_paths = (*leaderboard_paths(isic_leaderboard(target) for target in TARGETS),
                          *(macro_average_path(metric) for metric in PER_CATEGORY_METRICS))
    # One image is a row of the predictions file, or ~200 bytes of JSON: 25,000 jobs took 7.6 s
    # in one process against 17.6 s with two workers, measured side by side.
    workload = Workload(in_workers=False)
    ground_truth: TruthRows

    @property
    def table(self) -> Truth:
        """The ground truth's table (self.truth is where it was read from)."""
        return self.ground_truth.table

    @classmethod
    def phase_leaderboards(cls, settings: IsicSettings) -> tuple[Leaderboard, ...]:
        return (isic_leaderboard(settings.target_metric),)  # `overall` is the target metric

    # ---- ground truth --------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> TruthRows:
        path = single_ground_truth_file(directory, ".csv")
        table = read_truth_csv(self.truth, path, self.settings.zero_weight_images)
        categories = table.categories
        unknown = [c for c in self.settings.malignant_categories if c not in categories]
        if unknown:
            raise SetupError(f"Setting 'malignant_categories' names {', '.join(unknown)}, not a category of the "
                             f"ground truth ({', '.join(categories)}).")
        if set(categories) != set(self.categories):
            log(f"Note: the ground-truth categories ({', '.join(categories)}) are not the {self.name} ones "
                f"({', '.join(self.categories)}); the ground truth's are used.")
        check_truth_scorable(table)
        log(f"Ground truth {path.name}: {len(table.ids)} images, categories {', '.join(categories)}.")
        return TruthRows(table)

    # ---- the submission ------------------------------------------------------------------

    def file_cases(self, input_dir: Path) -> list[tuple[str, Any]]:
        """Predictions-file phase: the ISIC submission CSV, bounded by the size of the test set
        before it is read, then checked whole in the reference's order."""
        origin = Origin.submission(input_dir)
        path = predictions_csv_path(input_dir)
        max_bytes = bytes_for_rows(len(self.table.ids) + SPARE_ROWS)
        data = origin.read_bytes(path, PREDICTIONS_WHAT, max_bytes)  # refuses links out, pipes, folders
        ids, values = read_predictions_csv(data, self.table.categories, self.table.ids)
        return list(zip(ids, values, strict=True))

    def read_file_prediction(self, case: Case, ground_truth: int) -> np.ndarray:
        return case.source  # the CSV was read and checked whole by file_cases

    def read_job_prediction(self, case: Case, ground_truth: int) -> np.ndarray:
        slug = self.settings.output_socket
        return confidences_from_json(case.read_json(slug), self.table.categories, f"{case.name}, output {slug!r}")

    # ---- the leaderboard -----------------------------------------------------------------

    def prediction_table(self, results: dict[str, np.ndarray]) -> np.ndarray:
        """The confidences in the truth's row order: results has one per truth image
        (check_case_ids saw to it), in sorted order, which is the truth's."""
        ids = sorted(results)
        return np.array([results[image] for image in ids], dtype=np.float64).reshape(
            len(ids), len(self.table.categories))

    def submission(self, results: dict[str, np.ndarray]) -> scoring.Submission:
        """scoring.Submission of these results (images in sorted order): the truth's rows, the
        confidences and each category's sort."""
        rows = np.fromiter(map(self.ground_truth.__getitem__, sorted(results)), dtype=np.intp, count=len(results))
        return scoring.submission(self.table.values[rows], self.prediction_table(results),
                                  self.table.score_weight[rows])

    def aggregator(self, results: dict[str, np.ndarray]):
        """The ranked values as a function of the image weights, the submission's sorts made
        once (the final ranking's blocks of resamples reuse them)."""
        table = self.submission(results)
        return lambda weights: self._ranked(table, weights)

    def aggregate(self, results: dict[str, np.ndarray], weights: np.ndarray) -> dict[str, np.ndarray]:
        """The ranked values of every row of image weights (over sorted(results)): the only
        computation of them, for metrics.json (the row of ones) and the final ranking's bootstrap."""
        return self.aggregator(results)(weights)

    @staticmethod
    def _ranked(table: scoring.Submission, weights: np.ndarray) -> dict[str, np.ndarray]:
        balanced_accuracy, mean_auc = scoring.ranked_values(table, weights)
        return {BALANCED_ACCURACY.path: balanced_accuracy, MEAN_AUC.path: mean_auc}

    def score_aggregates(self, results: dict[str, np.ndarray]) -> dict[str, Any]:
        table = self.submission(results)
        ones = np.ones((1, len(results)), dtype=np.int64)  # the point values: every image once
        point = {path: float(row[0]) for path, row in self._ranked(table, ones).items()}
        return scoring.score(self.table, table.predictions, self.settings.target_metric,
                             self.settings.malignant_categories, table, point[BALANCED_ACCURACY.path],
                             point[MEAN_AUC.path])

    def roc_chart(self, results: dict[str, np.ndarray], metrics: dict[str, Any]) -> dict:
        return charts.category_roc_chart(self.table, self.prediction_table(results), metrics, self.title)

    result_charts = (Chart("roc_chart_file", roc_chart),)

    def ranking_curves(self, results: dict[str, np.ndarray], metrics: dict[str, Any]) -> list[dict]:
        return charts.ranking_curves(self.table, self.prediction_table(results))


class Isic2018(IsicEvaluation):
    name = "isic2018"
    title = "ISIC 2018 Task 3: lesion diagnosis, balanced multi-class accuracy"
    settings_class = Isic2018Settings
    categories = ("MEL", "NV", "BCC", "AKIEC", "BKL", "DF", "VASC")


class Isic2019(IsicEvaluation):
    name = "isic2019"
    title = "ISIC 2019: skin lesion classification, balanced multi-class accuracy"
    settings_class = Isic2019Settings
    categories = ("MEL", "NV", "BCC", "AK", "BKL", "DF", "VASC", "SCC", "UNK")
