"""ISIC skin-lesion classification: 2018 Task 3 (`isic2018`) and 2019 (`isic2019`)
(docs/challenges/isic.md).

Ranked by balanced multi-class accuracy (mean per-category recall, labels by argmax, a tied
prediction counts as wrong), ties broken by the mean AUC over categories. Every number is the
reference scorer's (`isic-challenge-scoring` 5.8.0) to the bit on the inputs it accepts; where
it crashes (a category without positives) or writes NaN, ours leaves the undefined value out of
the means and writes null with a note.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import re

import numpy as np

from evaluation.challenges.isic import predictions as isic_csv
from evaluation.errors import SetupError, SubmissionError, id_list
from evaluation.leaderboard.rules import Key, OrderedRanking
from evaluation.framework import Evaluation, log
from evaluation.grand_challenge import Case, Undefined, list_submission_files, single_ground_truth_file
from evaluation.phase.columns import ABSOLUTE, Column, Leaderboard, leaderboard_paths
from evaluation.metrics import classification, ranking
from evaluation.reading.files import MEGABYTE, Origin, shown_path
from evaluation.reading.tables import bytes_for_rows
from evaluation.reading.values import SHOWN_LENGTH, finite_number, json_type, shown
from evaluation.settings import CASE_INPUT, JSON_OUTPUT, Settings, setting

# The packages of requirements.txt this challenge's image installs (its pins stay there), numpy's dependencies
# included: reads CSV and JSON files; scores with numpy alone. build.sh installs these alone;
# tests/test_image_requirements.py scores the bundled example with every other package blocked.
RUNTIME_PACKAGES = {"isic2018": ("numpy",), "isic2019": ("numpy",)}

INDEX_COLUMNS = ("image", "lesion_id")  # the reference's index column, the first one present
WEIGHT_COLUMNS = ("score_weight", "validation_weight")  # optional, default 1.0
THRESHOLD = 0.5  # binary decisions: value > 0.5 (strictly)
AUC80_SENSITIVITY = 0.8  # the metric's name says 80
CONFUSION_METRICS = ("accuracy", "sensitivity", "specificity", "dice", "ppv", "npv")
RANKING_METRICS = ("auc", "auc_sens_80", "ap")
PER_CATEGORY_METRICS = CONFUSION_METRICS + ("auc", "auc_sens_80", "ap")  # the reference's order
TARGET_METRICS = ("balanced_accuracy", "auc", "ap", "dice")
PREDICTIONS_FILE = "predictions.csv"
PREDICTIONS_WHAT = "The predictions CSV"  # how messages about the file itself name it
# The predictions CSV is bounded by the test set before it is read: reading.tables' allowance per
# row (1 kB; a row of 9 full-precision confidences is ~200 bytes) for every test image and a few
# more rows (blank lines, a repeated header), plus its 1 MB for the rest.
SPARE_ROWS = 100
# The organizer's truth CSV: ~60 bytes an image; a million images is ~70 MB.
MAX_TRUTH_BYTES = 512 * MEGABYTE
ROC_EPSILON = 0.001  # curve simplification tolerance for the plotted ROC points
ROC_DECIMALS = 4


@dataclass(frozen=True)
class IsicSettings(Settings):
    target_metric: str = setting("balanced_accuracy", choices=TARGET_METRICS,
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


@dataclass(frozen=True)
class Truth:
    """The whole ground truth, rows sorted by image id."""

    ids: tuple[str, ...]
    categories: tuple[str, ...]
    values: np.ndarray  # (images, categories), 0.0 / 1.0
    score_weight: np.ndarray
    validation_weight: np.ndarray


# What `overall` holds for each target_metric, as the leaderboard's score title.
TARGET_TITLES = {"balanced_accuracy": "Balanced multi-class accuracy", "auc": "Mean AUC over categories",
                 "ap": "Mean average precision over categories", "dice": "Mean Dice over categories"}
TARGET_PATHS = {"balanced_accuracy": "aggregate.balanced_accuracy", "auc": "aggregate.auc",
                "ap": "macro_average.ap", "dice": "macro_average.dice"}  # the same value as `overall`


def isic_leaderboard(target_metric: str) -> Leaderboard:
    """Ranked on `overall` alone (balanced multi-class accuracy by default), ties broken by the
    mean AUC over categories (isic.md). The platform gives tied scores one rank and has no
    tie-break, so mean AUC is a column beside the score, excluded from ranking, read by hand
    for ties. The other columns are shown, excluded; a column repeating `overall` is left out."""
    columns = (
        Column("Balanced multi-class accuracy", "aggregate.balanced_accuracy", "desc", exclude_from_ranking=True),
        Column("Mean AUC (tie-break)" if target_metric == "balanced_accuracy" else "Mean AUC", "aggregate.auc",
               "desc", exclude_from_ranking=True),
        Column("Mean AUC above 80% sensitivity", "macro_average.auc_sens_80", "desc", exclude_from_ranking=True),
        Column("Mean average precision", "macro_average.ap", "desc", exclude_from_ranking=True),
        Column("Mean sensitivity", "macro_average.sensitivity", "desc", exclude_from_ranking=True),
        Column("Mean specificity", "macro_average.specificity", "desc", exclude_from_ranking=True),
        Column("Mean Dice", "macro_average.dice", "desc", exclude_from_ranking=True),
    )
    return Leaderboard(score=Column(TARGET_TITLES[target_metric], "overall", "desc"), decimal_places=4,
                       scoring_method=ABSOLUTE,
                       extra_columns=tuple(c for c in columns if c.path != TARGET_PATHS[target_metric]))


class IsicEvaluation(Evaluation):
    """Both editions; the subclasses only declare their name, categories and defaults."""

    case_label = "Image"
    categories: ClassVar[tuple[str, ...]] = ()  # the edition's categories (examples, docs)
    leaderboards = (isic_leaderboard(IsicSettings().target_metric),)  # python -m evaluation.phase isic2019
    value_titles = {TARGET_PATHS[target]: TARGET_TITLES[target] for target in TARGET_METRICS}
    # The ISIC rule (python -m evaluation.leaderboard): balanced accuracy, ties broken by the mean AUC.
    final_rankings = (OrderedRanking("balanced_accuracy", (Key("aggregate.balanced_accuracy", "desc"),
                                                           Key("aggregate.auc", "desc"))),)
    ranked_paths = leaderboard_paths((isic_leaderboard(target) for target in TARGET_METRICS),
                                     *(f"macro_average.{metric}" for metric in PER_CATEGORY_METRICS))
    # One image is a row of the predictions file, or ~200 bytes of JSON: 25,000 jobs took 7.6 s
    # in one process against 17.6 s with two workers, measured side by side.
    cases_in_workers = False
    table: Truth  # the ground truth's table (self.truth is where it was read from)
    chart_builders = {"roc_chart_file": "roc_chart"}
    # The last submission's ResamplingTable, kept while the final ranking draws its blocks of resamples.
    _resampling: tuple[dict[str, np.ndarray], ResamplingTable] | None = None

    @classmethod
    def phase_leaderboards(cls, settings: IsicSettings) -> tuple[Leaderboard, ...]:
        return (isic_leaderboard(settings.target_metric),)  # `overall` is the target metric

    # ---- ground truth --------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, int]:
        path = single_ground_truth_file(directory, ".csv")
        self.table = read_truth_csv(self.truth, path, self.settings.zero_weight_images)
        categories = self.table.categories
        unknown = [c for c in self.settings.malignant_categories if c not in categories]
        if unknown:
            raise SetupError(f"Setting 'malignant_categories' names {', '.join(unknown)}, not a category of the "
                             f"ground truth ({', '.join(categories)}).")
        if set(categories) != set(self.categories):
            log(f"Note: the ground-truth categories ({', '.join(categories)}) are not the {self.name} ones "
                f"({', '.join(self.categories)}); the ground truth's are used.")
        check_truth_scorable(self.table)
        log(f"Ground truth {path.name}: {len(self.table.ids)} images, categories {', '.join(categories)}.")
        return dict(zip(self.table.ids, range(len(self.table.ids))))  # {image: its row}

    # ---- the submission ------------------------------------------------------------------

    def file_cases(self, input_dir: Path) -> list[tuple[str, Any]]:
        """Predictions-file phase: the ISIC submission CSV, bounded by the size of the test set
        before it is read, then checked whole in the reference's order."""
        origin = Origin.submission(input_dir)
        path = predictions_csv_path(input_dir)
        max_bytes = bytes_for_rows(len(self.table.ids) + SPARE_ROWS)
        data = origin.read_bytes(path, PREDICTIONS_WHAT, max_bytes)  # refuses links out, pipes, folders
        ids, values = read_predictions_csv(data, self.table.categories, self.table.ids)
        return list(zip(ids, values))

    def read_file_prediction(self, case: Case, ground_truth: int) -> np.ndarray:
        return case.source  # the CSV was read and checked whole by file_cases

    def score_one(self, case: Case) -> np.ndarray:
        if case.job is None:  # a row of the CSV, checked whole by file_cases: no hook has work to do
            return case.source
        return super().score_one(case)

    def read_job_prediction(self, case: Case, ground_truth: int) -> np.ndarray:
        slug = self.settings.output_socket
        return confidences_from_json(case.read_json(slug), self.table.categories, f"{case.name}, output {slug!r}")

    # ---- the leaderboard -----------------------------------------------------------------

    def prediction_table(self, results: dict[str, np.ndarray]) -> np.ndarray:
        """The confidences in the truth's row order (one per truth image: check_case_ids saw to it)."""
        predictions = np.empty(self.table.values.shape)
        if results:
            predictions[list(map(self.ground_truth.__getitem__, results))] = np.array(list(results.values()))
        return predictions

    def score_aggregates(self, results: dict[str, np.ndarray]) -> dict[str, Any]:
        return score(self.table, self.prediction_table(results), self.settings.target_metric,
                     self.settings.malignant_categories)

    def roc_chart(self, results: dict[str, np.ndarray], metrics: dict[str, Any]) -> dict:
        return category_roc_chart(self.table, self.prediction_table(results), metrics, self.title)

    # ---- the final ranking (python -m evaluation.leaderboard) ----------------------------

    def aggregate(self, results: dict[str, np.ndarray], counts: np.ndarray) -> dict[str, np.ndarray]:
        """aggregate.balanced_accuracy and aggregate.auc of bootstrap resamples of the images
        (counts over sorted(results)). The sorts they need are made once per submission: kept
        for the next block of resamples of the same results."""
        cached = self._resampling
        if cached is None or cached[0] is not results:
            ids = sorted(results)
            rows = np.fromiter(map(self.ground_truth.__getitem__, ids), dtype=np.intp, count=len(ids))
            predictions = np.array([results[image] for image in ids], dtype=np.float64).reshape(len(ids), -1)
            cached = self._resampling = (results, resampling_table(self.table.values[rows], predictions,
                                                                   self.table.score_weight[rows]))
        return resampled_aggregates(cached[1], counts)

    def ranking_curves(self, results: dict[str, np.ndarray], metrics: dict[str, Any]) -> list[dict]:
        """One ROC curve per category with positive and negative images (score_weight), the points
        of the result page's chart, thinned to the chart's maximum."""
        from evaluation import charts  # here: a run without the final ranking never imports it

        curves, names = [], set()
        for c, (category, points) in enumerate(category_roc_points(self.table, self.prediction_table(results)).items()):
            name = "roc_" + (re.sub(r"[^a-z0-9]+", "_", category.lower()).strip("_") or str(c))
            name = name if name not in names else f"{name}_{c}"  # two categories alike once made a file name
            names.add(name)
            fpr, tpr, _ = points
            drawn = [[charts.rounded(fpr[i]), charts.rounded(tpr[i])] for i in charts.thinned(len(fpr))]
            curves.append({"chart": name, "title": f"ROC, {category}", "x_title": "False positive rate",
                           "y_title": "Sensitivity", "points": drawn})
        return curves


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


# ---- reading ------------------------------------------------------------------------------------


def predictions_csv_path(input_dir: Path) -> Path:
    """/input/predictions.csv whatever it is (reading it refuses a link out, a pipe or a folder by
    that name), else the one CSV file of an unpacked ZIP."""
    origin = Origin.submission(input_dir)
    path = input_dir / PREDICTIONS_FILE
    if origin.exists(path):
        return path
    found = [p for p in list_submission_files(input_dir) if p.name.lower().endswith(".csv")]
    if len(found) != 1:
        names = ", ".join(shown_path(p.relative_to(origin.real_root).as_posix())
                          for p in found[:10]) or "none"
        raise SubmissionError(f"The submission must be one CSV file ({PREDICTIONS_FILE}); CSV files found: "
                              f"{names}{f' and {len(found) - 10} more' if len(found) > 10 else ''}.")
    return found[0]


def read_truth_csv(origin: Origin, path: Path, zero_weight_images: list[str] | tuple[str, ...] = ()) -> Truth:
    """The ground-truth CSV: an image/lesion_id column, one 0/1 column per category (the
    categories are these columns, in file order) and optional weight columns. Messages name
    images and columns, never a value of the file (the participant sees them too)."""
    where = f"Ground truth {path.name}"
    data = origin.read_bytes(path, "Ground truth", MAX_TRUTH_BYTES)
    try:
        text = isic_csv.decode(data)
        table = isic_csv.plain_table(text) or isic_csv.tokenize(text)  # the fast path when the file is plain
    except UnicodeDecodeError as error:
        raise SetupError(f"{where} is not UTF-8 text (byte {error.start + 1} cannot be decoded).") from None
    except isic_csv.CsvError as error:
        raise SetupError(f"{where} cannot be read: {error}.") from None
    header = table.header
    index = next((c for c in INDEX_COLUMNS if c in header), None)
    if index is None:
        raise SetupError(f"{where} has no 'image' (or 'lesion_id') column.")
    duplicated = sorted({c for c in header if header.count(c) > 1})
    if duplicated:
        raise SetupError(f"{where} has duplicate columns: {', '.join(duplicated)}.")
    categories = tuple(c for c in header if c != index and c not in WEIGHT_COLUMNS)
    if len(categories) < 2:
        raise SetupError(f"{where} must have at least two category columns; found {', '.join(categories) or 'none'}.")
    ids = table.column(header.index(index))
    if None in ids or not isic_csv.NA_TOKENS.isdisjoint(ids):
        bad = [n for n, image in enumerate(ids) if image is None or image in isic_csv.NA_TOKENS]
        raise SetupError(f"{where}: data row {bad[0] + 1} has no image id.")
    if len(set(ids)) != len(ids):
        seen, dupes = set(), []
        for image in ids:
            if image in seen:
                dupes.append(image)
            seen.add(image)
        raise SetupError(f"{where} lists images more than once: {id_list(sorted(set(dupes)))}.")
    if not ids:
        raise SetupError(f"{where} has no image rows.")

    # A plain file whose number columns hold only numbers is converted at once (the values
    # parse_numbers gives); any other goes column by column, to name the first bad one.
    numbered = [at for at, name in enumerate(header) if name in categories or name in WEIGHT_COLUMNS]
    plain = table.numbers(numbered) if isinstance(table, isic_csv.PlainTable) else None

    def column(name: str, default: float | None) -> np.ndarray:
        if name not in header:
            return np.full(len(ids), default)
        at = header.index(name)
        if plain is not None:
            return np.ascontiguousarray(plain[0][:, numbered.index(at)])
        tokens = table.column(at)
        values, kinds = isic_csv.parse_numbers([t if t is not None else "" for t in tokens], len(header))
        bad_rows = np.flatnonzero((kinds == isic_csv.NA) | (kinds == isic_csv.TEXT) | ~np.isfinite(values))
        if len(bad_rows):
            row = int(bad_rows[0])
            raise SetupError(f"{where}: column {name} of image {ids[row]} is not a finite number.")
        return values

    values = np.column_stack([column(c, None) for c in categories])
    not_binary = np.argwhere((values != 0) & (values != 1))
    if len(not_binary):
        row, col = map(int, not_binary[0])
        raise SetupError(f"{where}: image {ids[row]} has a value other than 0 and 1 for {categories[col]}; the "
                         f"ground truth must be 0 or 1.")
    weights = {name: column(name, 1.0) for name in WEIGHT_COLUMNS}
    for name, w in weights.items():
        if (w < 0).any():
            row = int(np.flatnonzero(w < 0)[0])
            raise SetupError(f"{where}: {name} of image {ids[row]} is negative.")
    for image in zero_weight_images:
        if image in ids:  # the reference's rule for ISIC_0035068 (2018)
            row = ids.index(image)
            for w in weights.values():
                w[row] = 0.0
    if all(map(str.__lt__, ids, ids[1:])):  # already sorted (the ids are distinct)
        return Truth(ids=tuple(ids), categories=categories, values=values, score_weight=weights["score_weight"],
                     validation_weight=weights["validation_weight"])
    order = sorted(range(len(ids)), key=ids.__getitem__)
    return Truth(ids=tuple([ids[i] for i in order]), categories=categories, values=values[order],
                 score_weight=weights["score_weight"][order], validation_weight=weights["validation_weight"][order])


def check_truth_scorable(truth: Truth) -> None:
    """The ranked values must be numbers: some category needs weighted images of its own and
    weighted images of others (AUC), and the score weights cannot all be zero."""
    w = truth.score_weight
    if not (w > 0).any():
        raise SetupError("Every score_weight of the ground truth is 0: nothing would be scored.")
    positive = ((truth.values > THRESHOLD) & (w[:, None] > 0)).any(axis=0)
    negative = ((truth.values <= THRESHOLD) & (w[:, None] > 0)).any(axis=0)
    if not (positive & negative).any():
        raise SetupError("No category of the ground truth has both positive and negative images with a nonzero "
                         "score_weight: AUC and balanced accuracy would be undefined.")
    labels = classification.argmax_labels(truth.values)
    if not ((labels >= 0) & (w > 0)).any():
        raise SetupError("No ground-truth image has a single category: balanced accuracy would be undefined.")


def read_predictions_csv(data: bytes, categories: tuple[str, ...], truth_ids: tuple[str, ...]
                         ) -> tuple[list[str], np.ndarray]:
    """The ISIC submission CSV, checked in the reference's order (isic.md, submission checks);
    returns the image ids in sorted order and their confidences in category order."""
    if not data:  # the reference's first check refuses it too ("no newlines")
        raise SubmissionError("The CSV is empty; it must have a header line and one line per image.")
    try:
        text = isic_csv.decode(data)
    except UnicodeDecodeError as error:
        # The reference reads 2000 characters first: a file without newlines there is refused for that.
        prefix = data[:error.start].decode("utf-8", errors="ignore")
        prefix = prefix.replace("\r\n", "\n").replace("\r", "\n")
        if error.start >= 8192 and prefix[:2000].count("\n") < 2:
            raise SubmissionError("The CSV has no line breaks in its first 2000 characters: it must have a header "
                                  "line and one line per image.") from None
        raise SubmissionError(f"The CSV is not UTF-8 text (byte {error.start + 1} cannot be decoded); save it as "
                              f"UTF-8.") from None
    if text[:2000].count("\n") < 2:
        first, newline, rest = text.partition("\n")
        if newline and first.strip() and not rest.strip():  # the reference's first check too, said plainly
            raise SubmissionError("The CSV has a header but no image rows.")
        raise SubmissionError("The CSV has no line breaks in its first 2000 characters: it must have a header line "
                              "and one line per image.")
    # Millions of short lines fit in the size bound but take gigabytes once split into rows: the
    # lines are counted first (a blank line after every row is still allowed, as pandas skips them).
    lines, max_lines = text.count("\n"), 2 * (len(truth_ids) + SPARE_ROWS)
    if lines > max_lines:
        raise SubmissionError(f"The CSV has {lines} lines, more than the {max_lines} allowed for the "
                              f"{len(truth_ids)} images of the test set (a header and one line per image).")
    try:
        table = isic_csv.plain_table(text) or isic_csv.tokenize(text)  # the fast path when the file is plain
    except isic_csv.CsvError as error:
        raise SubmissionError(f"The CSV cannot be parsed: {error}.") from None
    header = table.header
    index = next((c for c in INDEX_COLUMNS if c in header), None)
    if index is None:
        raise SubmissionError(f"The CSV has no 'image' column (nor 'lesion_id'); its header is "
                              f"{', '.join(map(isic_csv.quoted, header[:12]))}{' ...' if len(header) > 12 else ''}.")
    index_at = header.index(index)
    ids = isic_csv.image_ids(table.column(index_at))

    # Duplicate rows, after a trailing .jpg is removed.
    given = set(ids)
    duplicates: list = []
    if len(given) != len(ids):
        seen: set = set()
        for image in ids:
            if image in seen and image not in duplicates:
                duplicates.append(image)
            seen.add(image)
    if duplicates:
        raise SubmissionError(f"The CSV has more than one row for image(s) "
                              f"{id_list(map(isic_csv.image_label, duplicates))}.")

    # Columns: every category, nothing else (in any order).
    first_at: dict[str, int] = {}
    extra_columns: list[str] = []
    for position, name in enumerate(header):
        if position == index_at:
            continue
        if name in categories and name not in first_at:
            first_at[name] = position
        else:
            label = isic_csv.quoted(name)
            extra_columns.append(f"{label} (column {position + 1})" if name in first_at or name == index or not name
                                 else label)
    missing_columns = [c for c in categories if c not in first_at]
    if missing_columns:
        raise SubmissionError(f"The CSV has no column for categor{'y' if len(missing_columns) == 1 else 'ies'} "
                              f"{', '.join(missing_columns)}; the header must be {index} followed by "
                              f"{', '.join(categories)}.")
    if extra_columns:
        raise SubmissionError(f"The CSV has column(s) that are not categories: {id_list(extra_columns)}; the "
                              f"categories are {', '.join(categories)}.")
    if table.truncated_rows:
        log(f"Note: {table.truncated_rows} row(s) have more fields than the header; the surplus fields are ignored "
            f"(as the reference does).")

    columns = [first_at[c] for c in categories]
    plain = table.numbers(columns) if isinstance(table, isic_csv.PlainTable) else None
    if plain is not None:  # every field a number (finite): what parse_numbers gives, at once
        values, is_integer = plain
        kinds = np.where(is_integer, isic_csv.INTEGER, isic_csv.FLOAT).astype(np.int8)
    else:
        parsed = [isic_csv.parse_numbers([t if t is not None else "" for t in table.column(at)], len(header))
                  for at in columns]
        kinds = np.column_stack([k for _, k in parsed]) if ids else np.zeros((0, len(categories)), dtype=np.int8)
        values = np.column_stack([v for v, _ in parsed]) if ids else np.zeros((0, len(categories)))

    def token(position: int, row: int) -> str:  # a field, for a message
        return table.column(columns[position])[row]

    missing_rows = np.flatnonzero((kinds == isic_csv.NA).any(axis=1))
    if len(missing_rows):
        raise SubmissionError(f"The CSV has missing or empty values for image(s) "
                              f"{id_list(isic_csv.image_label(ids[i]) for i in missing_rows)}.")
    if not ids:
        raise SubmissionError("The CSV has a header but no image rows.")
    for position, category in enumerate(categories):
        column_kinds = kinds[:, position]
        if (column_kinds == isic_csv.TEXT).any():
            row = int(np.flatnonzero(column_kinds == isic_csv.TEXT)[0])
            raise SubmissionError(f"Column {category} of the CSV is not all numbers: image "
                                  f"{isic_csv.image_label(ids[row])} has {isic_csv.quoted(token(position, row))}.")
        if (column_kinds == isic_csv.INTEGER).all():
            raise SubmissionError(f"Column {category} of the CSV holds only whole numbers such as "
                                  f"{isic_csv.quoted(token(position, 0).strip())}; confidences must be written as "
                                  f"floating-point numbers (0.0, 1.0, 0.25).")
    out_of_range = np.flatnonzero(((values < 0) | (values > 1)).any(axis=1))
    if len(out_of_range):
        first = int(out_of_range[0])
        category = categories[int(np.flatnonzero((values[first] < 0) | (values[first] > 1))[0])]
        raise SubmissionError(f"The CSV has values outside [0, 1] for image(s) "
                              f"{id_list(isic_csv.image_label(ids[i]) for i in out_of_range)} (e.g. {category} = "
                              f"{shown_path(token(categories.index(category), first).strip(), SHOWN_LENGTH)}).")

    known = set(truth_ids)
    if given != known:
        missing_images = sorted(known - given)
        if missing_images:
            raise SubmissionError(f"The CSV has no row for {len(missing_images)} image(s) of the test set: "
                                  f"{id_list(missing_images)}.")
        extra_images = sorted((image for image in ids if image not in known), key=lambda i: (i is None, i or ""))
        raise SubmissionError(f"The CSV has {len(extra_images)} image(s) that are not in the test set: "
                              f"{id_list(map(isic_csv.image_label, extra_images))}.")
    # The test set's images exactly, once each: their rows in sorted order.
    sorted_ids = list(truth_ids) if all(map(str.__lt__, truth_ids, truth_ids[1:])) else sorted(truth_ids)
    if ids == sorted_ids:  # written in sorted order
        return sorted_ids, values
    row_of = dict(zip(ids, range(len(ids))))
    return sorted_ids, values[np.fromiter(map(row_of.__getitem__, sorted_ids), dtype=np.intp, count=len(ids))]


def confidences_from_json(document: Any, categories: tuple[str, ...], where: str) -> np.ndarray:
    """One image's algorithm output {category: confidence}: exactly the categories, each a
    finite number in [0, 1] (JSON has no integer/float distinction: 0 and 1 are numbers here)."""
    if not isinstance(document, dict):
        raise SubmissionError(f"{where} must be a JSON object {{category: confidence}}, found {json_type(document)}.")
    missing = [c for c in categories if c not in document]
    if missing:
        raise SubmissionError(f"{where} has no confidence for {', '.join(missing)} (the categories are "
                              f"{', '.join(categories)}).")
    extra = [k for k in document if k not in categories]
    if extra:
        raise SubmissionError(f"{where} has keys that are not categories: {id_list(map(shown, extra))} (the "
                              f"categories are {', '.join(categories)}).")
    return np.array([finite_number(document[category], f"{where}: the confidence for {category}", minimum=0.0,
                                   maximum=1.0) for category in categories])


# ---- scoring ------------------------------------------------------------------------------------


def _why_undefined(category: str, weight_name: str, positives: bool, negatives: bool) -> str:
    if not positives:
        return f"no image of category {category} in the ground truth with a nonzero {weight_name}"
    return f"every image with a nonzero {weight_name} is of category {category} (no negatives)"


def _defined(value: float, reason: str) -> float | Undefined:
    return value if np.isfinite(value) else Undefined(reason)


def _mean_of(values: dict[str, Any], what: str) -> float | Undefined:
    numbers = np.array([v if not isinstance(v, Undefined) else np.nan for v in values.values()], dtype=np.float64)
    mean = classification.nan_mean(numbers)
    return mean if np.isfinite(mean) else Undefined(f"{what} is undefined for every category")


def category_scores(truth: np.ndarray, prediction: np.ndarray, weights: np.ndarray, category: str,
                    weight_name: str) -> tuple[dict[str, Any], classification.RankingCurve]:
    """The nine per-category metrics of the reference, for one weight column."""
    positives, decisions = truth > THRESHOLD, prediction > THRESHOLD
    cm = classification.binary_confusion(positives, decisions, weights)
    curve = classification.ranking_curve(positives, prediction, weights)
    reason = _why_undefined(category, weight_name, curve.has_positives, curve.has_negatives)
    scores: dict[str, Any] = {
        "accuracy": classification.accuracy(cm),
        "sensitivity": classification.sensitivity(cm),
        "specificity": classification.specificity(cm),
        "dice": classification.dice(cm),
        "ppv": classification.ppv(cm),
        "npv": classification.npv(cm),
        "auc": _defined(classification.roc_auc(curve), f"AUC: {reason}"),
        "auc_sens_80": _defined(classification.auc_above_sensitivity(curve, AUC80_SENSITIVITY), f"AUC80: {reason}"),
        "ap": _defined(classification.average_precision(curve), f"average precision: {reason}"),
    }
    return scores, curve


def simplify_curve(x: np.ndarray, y: np.ndarray, epsilon: float) -> np.ndarray:
    """Ramer-Douglas-Peucker: the mask of points to keep so that no dropped point is farther
    than epsilon from the kept polyline (for compact ROC plots; finite points)."""
    return simplify_curves([(x, y)], epsilon)[0]


def simplify_curves(curves: list[tuple[np.ndarray, np.ndarray]], epsilon: float) -> list[np.ndarray]:
    """simplify_curve of each (x, y) curve, all at once: the curves end to end, and every
    segment of a level of the recursion (of every curve) in one pass; each segment's farthest
    point (the first of equals) is kept, and splits it, when it is farther than epsilon."""
    sizes = [len(x) for x, _ in curves]
    x = np.concatenate([x for x, _ in curves]) if curves else np.zeros(0)
    y = np.concatenate([y for _, y in curves]) if curves else np.zeros(0)
    keep = np.zeros(len(x), dtype=bool)
    sizes = np.array(sizes, dtype=np.intp)  # integers even when there is no curve
    ends = np.cumsum(sizes)
    a, b = (ends - sizes)[sizes > 0], ends[sizes > 0] - 1  # each curve's first and last point
    keep[a] = keep[b] = True
    while True:
        wide = b - a >= 2
        a, b = a[wide], b[wide]
        if not len(a):
            return np.split(keep, ends[:-1])
        inside = b - a - 1  # points strictly inside each segment
        first = np.cumsum(inside) - inside  # where each segment's inside points start in the flat arrays
        segment = np.repeat(np.arange(len(a)), inside)
        point = np.arange(int(inside.sum())) - first[segment] + (a + 1)[segment]
        dx, dy = (x[b] - x[a])[segment], (y[b] - y[a])[segment]
        px, py = x[point] - x[a][segment], y[point] - y[a][segment]
        length = np.hypot(dx, dy)
        with np.errstate(divide="ignore", invalid="ignore"):
            distance = np.where(length > 0, np.abs(dy * px - dx * py) / length, np.hypot(px, py))
        farthest = np.maximum.reduceat(distance, first)
        at_max = np.flatnonzero(distance == farthest[segment])
        firsts = at_max[np.r_[True, segment[at_max][1:] != segment[at_max][:-1]]]  # one per segment, in order
        split = farthest > epsilon
        k = point[firsts][split]
        keep[k] = True
        a, b = np.concatenate([a[split], k]), np.concatenate([k, b[split]])


def roc_for_plot(curves: list[classification.RankingCurve]) -> list[dict[str, list[float]]]:
    """The plotted ROC points of each curve (scikit-learn's roc_curve, simplified); every curve
    needs positives and negatives."""
    points = [classification.roc_points(curve, drop_intermediate=True) for curve in curves]
    kept = simplify_curves([(fpr, tpr) for fpr, tpr, _ in points], ROC_EPSILON)
    plotted = []
    for (fpr, tpr, thresholds), keep in zip(points, kept):
        thresholds = np.where(np.isinf(thresholds), 1.0, thresholds)  # the +inf start point, as the reference
        plotted.append({"threshold": np.round(thresholds[keep], 6).tolist(),
                        "fpr": np.round(fpr[keep], ROC_DECIMALS).tolist(),
                        "tpr": np.round(tpr[keep], ROC_DECIMALS).tolist()})
    return plotted


def score(truth: Truth, predictions: np.ndarray, target_metric: str,
          malignant_categories: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """metrics.json content from the sorted truth and the predictions in the same row order."""
    categories = truth.categories
    per_category: dict[str, dict[str, Any]] = {metric: {} for metric in PER_CATEGORY_METRICS}
    curves: dict[str, classification.RankingCurve] = {}
    for c, category in enumerate(categories):
        scores, curves[category] = category_scores(truth.values[:, c], predictions[:, c], truth.score_weight,
                                                   category, "score_weight")
        for metric, value in scores.items():
            per_category[metric][category] = value
    plotted = [category for category, curve in curves.items() if curve.has_positives and curve.has_negatives]
    points = dict(zip(plotted, roc_for_plot([curves[category] for category in plotted])))  # simplified at once
    roc_curves = {category: points[category] if category in points else
                  Undefined(f"ROC: {_why_undefined(category, 'score_weight', curve.has_positives, curve.has_negatives)}")
                  for category, curve in curves.items()}
    macro_average = {metric: _mean_of(values, metric) for metric, values in per_category.items()}
    labels = classification.argmax_labels(truth.values), classification.argmax_labels(predictions)  # once for all
    balanced = classification.nan_mean(classification.recall_of_labels(*labels, truth.score_weight, len(categories)))
    aggregate = {
        "balanced_accuracy": _defined(balanced, "no category has images with a nonzero score_weight"),
        "auc": macro_average["auc"],  # the leaderboard's tie-break: mean AUC over categories
        "malignant_vs_benign_auc": malignant_vs_benign_auc(truth, predictions, malignant_categories, labels[0]),
    }
    overall = aggregate["balanced_accuracy"] if target_metric == "balanced_accuracy" else macro_average[target_metric]
    validation = validation_score(truth, predictions, target_metric, labels)
    undecided = labels[1] == classification.UNDECIDED
    return {
        "overall": overall,
        "validation": validation,
        "per_category": per_category,
        "macro_average": macro_average,
        "aggregate": aggregate,
        "roc_curves": roc_curves,
        "counts": {
            "images": len(truth.ids),
            "images_scored": int((truth.score_weight > 0).sum()),
            "images_validation": int((truth.validation_weight > 0).sum()),
            "undecided_predictions": int((undecided & (truth.score_weight > 0)).sum()),
        },
    }


def validation_score(truth: Truth, predictions: np.ndarray, target_metric: str,
                     labels: tuple[np.ndarray, np.ndarray] | None = None) -> float | Undefined:
    """The target metric with validation_weight, as the reference computes it (`labels`: the
    argmax labels of the truth and the predictions, when already computed)."""
    w = truth.validation_weight
    if not (w > 0).any():
        return Undefined("every validation_weight of the ground truth is 0")
    if target_metric == "balanced_accuracy":
        if labels is None:
            labels = classification.argmax_labels(truth.values), classification.argmax_labels(predictions)
        value = classification.nan_mean(classification.recall_of_labels(*labels, w, len(truth.categories)))
        return _defined(value, "no category has images with a nonzero validation_weight")
    values = []
    for c in range(len(truth.categories)):
        positives = truth.values[:, c] > THRESHOLD
        if target_metric == "dice":
            values.append(classification.dice(classification.binary_confusion(positives, predictions[:, c] > THRESHOLD, w)))
            continue
        curve = classification.ranking_curve(positives, predictions[:, c], w)
        if target_metric == "auc":
            values.append(classification.roc_auc(curve))
        elif curve.has_positives:
            values.append(classification.average_precision(curve))
        else:
            # The reference (scikit-learn) scores AP 0 for a category without validation positives
            # that has positives elsewhere in the truth; kept for parity (docs/challenges/isic.md).
            values.append(0.0 if positives.any() else np.nan)
    mean = classification.nan_mean(np.asarray(values))
    return _defined(mean, f"{target_metric} is undefined for every category with validation_weight")


def malignant_vs_benign_auc(truth: Truth, predictions: np.ndarray, malignant_categories: list[str] | tuple[str, ...],
                            truth_labels: np.ndarray | None = None) -> float | Undefined:
    """Our definition (the reference has none): truth = the image's category is malignant,
    score = the sum of the confidences of the malignant categories, weighted ROC AUC. Images
    whose truth has no single category are left out."""
    if not malignant_categories:
        return Undefined("no malignant categories are set")
    columns = [truth.categories.index(c) for c in malignant_categories]
    labels = classification.argmax_labels(truth.values) if truth_labels is None else truth_labels
    weights = np.where(labels >= 0, truth.score_weight, 0.0)
    curve = classification.ranking_curve(np.isin(labels, columns), predictions[:, columns].sum(axis=1), weights)
    if not (curve.has_positives and curve.has_negatives):
        return Undefined("the ground truth needs both malignant and benign images with a nonzero score_weight")
    return classification.roc_auc(curve)


# ---- the ranked values on bootstrap resamples (python -m evaluation.leaderboard) ----------------


@dataclass(frozen=True)
class ResamplingTable:
    """What the ranked values of a resample need of one submission, images with a nonzero
    score_weight only (an image of weight 0 adds nothing to any sum, however often drawn)."""

    scored: np.ndarray | None  # columns of the counts kept (None: all)
    weighted_indicators: np.ndarray  # (images, 2 x categories): weight x [correct and of c], weight x [of c]
    weights: np.ndarray | None  # the score weights, None when all are equal (AUC ignores a common factor)
    orders: list[ranking.PairOrder]  # per category; none without images


def resampling_table(truth_values: np.ndarray, predictions: np.ndarray, weights: np.ndarray) -> ResamplingTable:
    """From the truth, the confidences and the score weights of the images in the counts' order."""
    scored = weights > 0
    truth_values, predictions, weights = truth_values[scored], predictions[scored], weights[scored]
    n_categories = truth_values.shape[1]
    # Balanced accuracy (score): labels by argmax; a truth without a single category belongs to no
    # category, an undecided prediction (tied maximum) is wrong.
    truth_labels = classification.argmax_labels(truth_values) if len(truth_values) else np.zeros(0, dtype=np.intp)
    predicted = classification.argmax_labels(predictions) if len(predictions) else np.zeros(0, dtype=np.intp)
    of_category = truth_labels[:, None] == np.arange(n_categories)
    correct = of_category & (predicted == truth_labels)[:, None]
    indicators = weights[:, None] * np.hstack([correct, of_category])
    uniform = len(weights) == 0 or bool((weights == weights[0]).all())
    orders = [ranking.pair_order(truth_values[:, c] > THRESHOLD, predictions[:, c])
              for c in range(n_categories)] if len(weights) else []
    return ResamplingTable(None if scored.all() else np.flatnonzero(scored), indicators,
                           None if uniform else weights, orders)


def resampled_aggregates(table: ResamplingTable, counts: np.ndarray) -> dict[str, np.ndarray]:
    """aggregate.balanced_accuracy and aggregate.auc of every resample (counts[r, j]: how many times
    image j is drawn, so its weight counts that many times), NaN where score() writes null."""
    counts = np.asarray(counts)
    if table.scored is not None:
        counts = counts[:, table.scored]
    n_categories = table.weighted_indicators.shape[1] // 2
    sums = counts.astype(np.float64) @ table.weighted_indicators
    hits, totals = sums[:, :n_categories], sums[:, n_categories:]
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(totals != 0, hits / totals, np.nan)  # NaN: no image of the category drawn
    if table.weights is None:  # equal weights: the counts themselves, summed exactly
        resampled = counts.astype(np.int32) if counts.size and counts.max() < 2**31 else counts.astype(np.int64)
    else:
        resampled = counts * table.weights
    # NaN without positives or without negatives
    auc = ranking.roc_auc_of_weightings(table.orders, resampled) if table.orders else np.full((len(counts), 1), np.nan)
    return {"aggregate.balanced_accuracy": row_nan_means(recall), "aggregate.auc": row_nan_means(auc)}


def row_nan_means(values: np.ndarray) -> np.ndarray:
    """classification.nan_mean of every row: the mean of its defined values, NaN when none is."""
    defined = ~np.isnan(values)
    count = defined.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, np.where(defined, values, 0.0).sum(axis=1) / count, np.nan)


# ---- chart (only when roc_chart_file is set) ----------------------------------------------------


def category_roc_chart(truth: Truth, predictions: np.ndarray, metrics: dict[str, Any], title: str) -> dict:
    """The ROC curve of every category (its images against all others, score_weight), the points
    of scikit-learn's roc_curve (collinear points dropped), its AUC from metrics.json in the legend."""
    from evaluation import charts  # here: a run without the chart never imports it

    curves, missing = [], []
    roc = category_roc_points(truth, predictions)
    for category in truth.categories:
        auc = metrics["per_category"]["auc"][category]
        if category not in roc or isinstance(auc, Undefined):
            missing.append(category)
            continue
        fpr, tpr, thresholds = roc[category]
        curves.append(charts.Curve(category, fpr.tolist(), tpr.tolist(), thresholds.tolist(),
                                   summary=f"AUC {float(auc):.3f}", extra={"auc": charts.rounded(auc)}))
    aggregate = metrics["aggregate"]
    subtitle = [f"mean AUC {_shown_value(aggregate['auc'])}, balanced accuracy "
                f"{_shown_value(aggregate['balanced_accuracy'])} ({metrics['counts']['images_scored']} images scored)"]
    if missing:
        subtitle.append(f"no curve for {', '.join(missing)}: no positive or no negative image with a nonzero "
                        f"score_weight")
    about = ("One ROC curve per category: the images of the category against all others (score_weight as "
             "weights), scored by the submitted confidence for it; the points of scikit-learn's roc_curve "
             "(collinear points dropped). Legend: the category and its AUC (metrics.json per_category.auc).")
    return charts.roc_chart(curves, title=f"{title.split(':')[0]}: ROC curve per category", subtitle=subtitle,
                            line_title="category (AUC)", about=about)


def category_roc_points(truth: Truth, predictions: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """{category: (fpr, tpr, thresholds)} of scikit-learn's roc_curve (collinear points dropped),
    its images against all others, score_weight as weights; only the categories with positive and
    negative weighted images."""
    points = {}
    for c, category in enumerate(truth.categories):
        curve = classification.ranking_curve(truth.values[:, c] > THRESHOLD, predictions[:, c], truth.score_weight)
        if curve.has_positives and curve.has_negatives:
            points[category] = classification.roc_points(curve, drop_intermediate=True)
    return points


def _shown_value(value: Any) -> str:
    return "undefined" if isinstance(value, Undefined) else f"{float(value):.4f}"
