"""HECKTOR 2025: head-and-neck cancer in PET/CT (docs/challenges/hecktor2025.md).

Three tasks, three leaderboards, one evaluation image each:
  hecktor2025-task1  GTVp / GTVn segmentation and GTVn detection  (hecktor2025_task1.py)
  hecktor2025-task2  recurrence-free survival: Harrell's C-index with a bootstrap interval
  hecktor2025-task3  HPV status: balanced accuracy, sensitivity, specificity with bootstrap intervals

What the tasks share lives here: the case id of a job (the CT image's name without extension and
modality suffix), the patient CSVs, and the seeded patient bootstrap of tasks 2 and 3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from evaluation.errors import SetupError, SubmissionError, id_list
from evaluation.leaderboard.rules import Key, OrderedRanking
from evaluation.framework import Evaluation, log
from evaluation.grand_challenge import (
    Case,
    list_submission_files,
    single_ground_truth_file,
    strip_extension,
)
from evaluation.phase.columns import ABSOLUTE, Column, Leaderboard, ci_title, leaderboard_paths
from evaluation.metrics.binary import binary_rates, resampled_rates
from evaluation.metrics.resampling import draw_with_replacement, draws_to_counts, linear_percentiles
from evaluation.metrics.survival import concordance_index, resampled_concordance
from evaluation.reading.files import MEGABYTE, Origin, shown_path
from evaluation.reading.tables import bytes_for_rows, read_csv_records
from evaluation.reading.values import is_finite_number, shown
from evaluation.settings import CASE_INPUT, JSON_OUTPUT, Settings, setting

PATIENT_COLUMN = "PatientID"
PREDICTION_COLUMN = "Prediction"  # the 2022 predictions-file phase's CSV: PatientID,Prediction
# Bootstrap rows turned into counts at a time: all of them for usual test sets (the C-index builds
# its pair matrices once per block), bounded (~64 MB of counts) for very large ones.
COUNT_ELEMENTS_PER_BLOCK = 1 << 23
GROUND_TRUTH_CSV_BYTES = 64 * MEGABYTE  # a patient table of ~a million rows
# A predictions CSV may hold a few more rows than the test set has patients (the extra patients
# are then named), never millions: its size and rows are bounded before it is parsed.
EXTRA_PREDICTION_ROWS = 100


@dataclass(frozen=True)
class HecktorSettings(Settings):
    input_socket: str | list[str] = setting("ct-image", socket=CASE_INPUT, hints=("ct",),
                                            doc="input socket whose image name gives the patient id (the CT; a "
                                                "list: one per interface of the phase; empty: the job's only "
                                                "image input)")
    modality_suffixes: list[str] = setting(["__CT", "_CT", "_0000"],
                                           doc="suffixes removed (the first that matches) from the CT image name "
                                               "once its extension is stripped, to get the PatientID")


class HecktorEvaluation(Evaluation):
    """What the three tasks share. No name: not a challenge of its own."""

    settings_class = HecktorSettings
    case_label = "Patient"

    def case_id_from_image_name(self, name: str) -> str:
        """`CHUM-001__CT.nii.gz` -> `CHUM-001` (spec: strip the extension, then a modality suffix)."""
        return strip_modality_suffix(strip_extension(name), self.settings.modality_suffixes)


def strip_modality_suffix(stem: str, suffixes) -> str:
    """Without the first of `suffixes` it ends with (kept whole if nothing would be left)."""
    for suffix in suffixes:
        if suffix and stem.endswith(suffix):
            return stem[: -len(suffix)] if len(stem) > len(suffix) else stem
    return stem


def submission_name(input_dir: Path, path: Path) -> str:
    """A file found in the submission, named relative to the input folder (as the ZIP named it)."""
    return path.relative_to(Origin.submission(input_dir).real_root).as_posix()


# ---- CSV files ------------------------------------------------------------------------------


def patient_table(truth: Origin, directory: Path, columns: tuple[str, ...], parse: Callable[[str, str, str], Any],
                  skip_unlabelled: bool) -> dict[str, Any]:
    """{PatientID: parse(patient, column, text) of each value column} from the ground truth's one
    CSV. An empty value is the organizer's error, unless `skip_unlabelled`: then the patient's
    value is None (its prediction is read and checked, but not scored)."""
    path = single_ground_truth_file(directory, ".csv")
    records = read_csv_records(truth, path, "Ground truth", (PATIENT_COLUMN, *columns), GROUND_TRUTH_CSV_BYTES)
    table: dict[str, Any] = {}
    for _, row in records:
        patient = row[PATIENT_COLUMN]
        if not patient:
            raise SetupError(f"Ground truth {path.name}: a row has an empty {PATIENT_COLUMN}.")
        if patient in table:
            raise SetupError(f"Ground truth {path.name}: patient {patient} appears twice.")
        if any(row[c] == "" for c in columns):
            if not skip_unlabelled:
                empty = [c for c in columns if row[c] == ""]
                raise SetupError(f"Ground truth {path.name}: patient {patient} has no {', '.join(empty)} (set "
                                 f"unlabelled_patients to \"skip\" to leave such patients out of the scores).")
            table[patient] = None
            continue
        values = tuple(parse(patient, c, row[c]) for c in columns)
        table[patient] = values if len(values) > 1 else values[0]
    return table


# Ground-truth values are never quoted: the participant sees the last line of every failed run.
def ground_truth_number(path_name: str) -> Callable[[str, str, str], float]:
    def parse(patient: str, column: str, text: str) -> float:
        value = text_number(text)
        if value is None:
            raise SetupError(f"Ground truth {path_name}: {column} of patient {patient} is not a finite number.")
        return value
    return parse


def ground_truth_binary(path_name: str) -> Callable[[str, str, str], int]:
    number = ground_truth_number(path_name)

    def parse(patient: str, column: str, text: str) -> int:
        value = number(patient, column, text)
        if value not in (0.0, 1.0):
            raise SetupError(f"Ground truth {path_name}: {column} of patient {patient} is neither 0 nor 1.")
        return int(value)
    return parse


def text_number(text: str) -> float | None:
    """A CSV cell as a finite number, or None ("nan", "inf", "1e999", words)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def csv_file_cases(input_dir: Path, patients: int) -> list[tuple[str, str]]:
    """The 2022-style predictions-file phase: one CSV (PatientID,Prediction) anywhere in /input,
    of at most `patients` (the test set's) rows and a few more; each case's source is its
    Prediction text."""
    files = list_submission_files(input_dir)
    csvs = [f for f in files if f.name.lower().endswith(".csv")]
    if len(csvs) != 1:
        names = id_list(submission_name(input_dir, f) for f in files) or "no file"
        raise SubmissionError(f"The submission must be one CSV file with the columns {PATIENT_COLUMN},"
                              f"{PREDICTION_COLUMN}; found {names}.")
    max_rows = patients + EXTRA_PREDICTION_ROWS
    records = read_csv_records(Origin.submission(input_dir), csvs[0], "The predictions file",
                               (PATIENT_COLUMN, PREDICTION_COLUMN), bytes_for_rows(max_rows), max_rows)
    for line, row in records:
        if not row[PATIENT_COLUMN]:
            raise SubmissionError(f"The predictions file: row {line} of {shown_path(csvs[0].name)} has an empty "
                                  f"{PATIENT_COLUMN}.")
    return [(row[PATIENT_COLUMN], row[PREDICTION_COLUMN]) for _, row in records]


# ---- the patient bootstrap of tasks 2 and 3 --------------------------------------------------


@dataclass(frozen=True)
class BootstrapSettings(HecktorSettings):
    bootstrap_repetitions: int = setting(1000, minimum=1, maximum=100_000, doc="bootstrap resamples of the patients (spec: 1000)")
    seed: int = setting(2025, minimum=0, doc="seed of the bootstrap draws (--seed overrides)")
    confidence_level: float = setting(95.0, minimum=1.0, below=100.0, doc="percentile interval, in percent (spec: 95)")
    unlabelled_patients: str = setting("error", choices=("error", "skip"),
                                       doc="a ground-truth row with an empty value: 'error' (stop), or 'skip' "
                                           "(its prediction is read and checked, not scored; counted in metrics.json)")


def bootstrap_counts(n_patients: int, settings: BootstrapSettings):
    """Blocks of (resamples x patients) multiplicities: patients drawn with replacement, n per
    resample, from numpy's default_rng(seed) (one integers() call for every draw)."""
    rng = np.random.default_rng(settings.seed)
    draws = draw_with_replacement(rng, n_patients, settings.bootstrap_repetitions, n_patients)
    rows = max(1, COUNT_ELEMENTS_PER_BLOCK // n_patients)
    for start in range(0, len(draws), rows):
        yield draws_to_counts(draws[start:start + rows], n_patients)


def percentile_interval(values: np.ndarray, level: float, what: str) -> tuple[float, float]:
    """The central `level`% percentile interval (numpy's linear interpolation) of the defined
    resample values."""
    if len(values) == 0:
        raise SetupError(f"No bootstrap resample has a defined {what}: the test set is too small for a bootstrap.")
    tail = (100.0 - level) / 2.0
    lower, upper = linear_percentiles(values, [tail, 100.0 - tail])
    return float(lower), float(upper)


class BootstrapTask(HecktorEvaluation):
    """Tasks 2 and 3: one value per patient from a JSON output or a 2022-style CSV."""

    cases_in_workers = False  # a few bytes of JSON per patient: a process pool would cost more than it saves

    def file_cases(self, input_dir: Path) -> list[tuple[str, str]]:
        return csv_file_cases(input_dir, len(self.ground_truth))

    def scored_patients(self, results: dict[str, Any]) -> list[str]:
        """Patients with a label, sorted (the bootstrap's patient order)."""
        return [c for c in sorted(results) if self.ground_truth[c] is not None]

    def unlabelled_count(self, results: dict[str, Any]) -> int:
        return sum(1 for c in results if self.ground_truth[c] is None)

    def labelled_columns(self, results: dict[str, Any], counts: np.ndarray) -> tuple[list[str], np.ndarray]:
        """The scored patients and their columns of `counts` (columns: sorted(results)): an
        unlabelled patient drawn into a resample is left out of its scores, as score_aggregates
        leaves it out of the test set's."""
        labelled = np.array([self.ground_truth[c] is not None for c in sorted(results)], dtype=bool)
        return self.scored_patients(results), np.asarray(counts, dtype=np.int64)[:, labelled]


# ---- Task 2: recurrence-free survival ---------------------------------------------------------


@dataclass(frozen=True)
class Task2Settings(BootstrapSettings):
    output_socket: str = setting("rfs", socket=JSON_OUTPUT, json_value="number",
                                 doc="output socket read: rfs.json, one number, a risk score (higher = earlier "
                                     "recurrence)")


def interval_columns(what: str, key: str, level: float) -> tuple[Column, Column]:
    """The bootstrap interval of aggregates.<key> as two columns, excluded from ranking: the
    interval is asymmetric, so it is not the score's ± error."""
    return tuple(Column(ci_title(what, level, bound), f"aggregates.{key}_ci_{bound}", "desc", exclude_from_ranking=True)
                 for bound in ("lower", "upper"))


def task2_leaderboard(level: float) -> Leaderboard:
    """Ranked on the C-index of the whole test set (hecktor2025.md), its interval beside it."""
    return Leaderboard(score=Column("C-index (Harrell)", "aggregates.c_index", "desc"), decimal_places=4,
                       scoring_method=ABSOLUTE, extra_columns=interval_columns("C-index", "c_index", level))


class HecktorTask2(BootstrapTask):
    name = "hecktor2025-task2"
    title = "HECKTOR 2025 Task 2: recurrence-free survival, Harrell's C-index with a bootstrap 95% interval"
    settings_class = Task2Settings
    leaderboards = (task2_leaderboard(Task2Settings().confidence_level),)
    ranked_paths = leaderboard_paths(leaderboards)
    # The final ranking across submissions (python -m evaluation.leaderboard): the C-index alone.
    final_rankings = (OrderedRanking("c_index", (Key("aggregates.c_index", "desc"),)),)

    @classmethod
    def phase_leaderboards(cls, settings: Task2Settings) -> tuple[Leaderboard, ...]:
        return (task2_leaderboard(settings.confidence_level),)  # the interval's titles say its level

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
        _, comparable = resampled_concordance(times, events, np.zeros(len(labelled)), np.ones((1, len(labelled))))
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

    def score_aggregates(self, results: dict[str, float]) -> dict[str, Any]:
        patients = self.scored_patients(results)
        time = np.array([self.ground_truth[p][0] for p in patients])
        event = np.array([self.ground_truth[p][1] for p in patients], dtype=bool)
        risk = np.array([results[p] for p in patients])
        point = concordance_index(time, event, risk)
        settings = self.settings
        values, skipped = [], 0
        for counts in bootstrap_counts(len(patients), settings):
            numerators, denominators = resampled_concordance(time, event, risk, counts)
            defined = denominators > 0
            skipped += int((~defined).sum())
            values.append(numerators[defined] / denominators[defined])
        lower, upper = percentile_interval(np.concatenate(values), settings.confidence_level, "C-index")
        log(f"Bootstrap: {settings.bootstrap_repetitions} resamples, seed {settings.seed}, {skipped} skipped "
            f"(no comparable pair).")
        _, comparable = resampled_concordance(time, event, risk, np.ones((1, len(patients))))
        return {
            "aggregates": {
                "c_index": point,
                "c_index_ci_lower": lower,
                "c_index_ci_upper": upper,
            },
            "counts": {
                "patients": len(patients),
                "relapses": int(event.sum()),
                "comparable_pairs": int(comparable[0]),
                "unlabelled_patients_skipped": self.unlabelled_count(results),
                "bootstrap_resamples": settings.bootstrap_repetitions,
                "bootstrap_resamples_skipped": skipped,
            },
        }

    def aggregate(self, results: dict[str, float], counts: np.ndarray) -> dict[str, np.ndarray]:
        """The C-index of every resample (rows of multiplicities of sorted(results)), from the
        bootstrap's own pair sums; NaN where a resample has no comparable pair."""
        patients, counts = self.labelled_columns(results, counts)
        time = np.array([self.ground_truth[p][0] for p in patients], dtype=np.float64)
        event = np.array([self.ground_truth[p][1] for p in patients], dtype=bool)
        risk = np.array([results[p] for p in patients], dtype=np.float64)
        numerators, denominators = resampled_concordance(time, event, risk, counts)
        with np.errstate(invalid="ignore", divide="ignore"):
            return {"aggregates.c_index": np.where(denominators > 0, numerators / denominators, np.nan)}



# ---- Task 3: HPV status ----------------------------------------------------------------------


@dataclass(frozen=True)
class Task3Settings(BootstrapSettings):
    output_socket: str = setting("hpv-status", socket=JSON_OUTPUT, json_value="bool",
                                 doc="output socket read: hpv-status.json, a boolean (true = HPV positive; 1 and 0 "
                                     "accepted)")


# The predictions CSV's spellings of the HPV status (compared in lower case).
HPV_TEXT = {"1": True, "0": False, "true": True, "false": False, "1.0": True, "0.0": False}


def task3_leaderboard(level: float) -> Leaderboard:
    """Ranked on balanced accuracy, ties to the higher specificity (hecktor2025.md). The platform
    gives tied scores one rank and has no tie-break, so specificity is a column beside the
    score, excluded from ranking, read by hand for ties; the intervals likewise."""
    return Leaderboard(
        score=Column("Balanced accuracy (HPV status)", "aggregates.balanced_accuracy", "desc"),
        decimal_places=4,
        scoring_method=ABSOLUTE,
        extra_columns=(
            Column("Specificity (tie-break)", "aggregates.specificity", "desc", exclude_from_ranking=True),
            Column("Sensitivity", "aggregates.sensitivity", "desc", exclude_from_ranking=True),
            *interval_columns("Balanced accuracy", "balanced_accuracy", level),
            *interval_columns("Specificity", "specificity", level),
            *interval_columns("Sensitivity", "sensitivity", level),
        ),
    )


class HecktorTask3(BootstrapTask):
    name = "hecktor2025-task3"
    title = "HECKTOR 2025 Task 3: HPV status, balanced accuracy (ties: specificity) with bootstrap 95% intervals"
    settings_class = Task3Settings
    leaderboards = (task3_leaderboard(Task3Settings().confidence_level),)
    ranked_paths = leaderboard_paths(leaderboards)
    # The final ranking across submissions: balanced accuracy, ties to the higher specificity (the
    # tie-break the platform cannot apply).
    final_rankings = (OrderedRanking("balanced_accuracy", (Key("aggregates.balanced_accuracy", "desc"),
                                                           Key("aggregates.specificity", "desc"))),)

    @classmethod
    def phase_leaderboards(cls, settings: Task3Settings) -> tuple[Leaderboard, ...]:
        return (task3_leaderboard(settings.confidence_level),)  # the intervals' titles say their level

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

    def score_aggregates(self, results: dict[str, bool]) -> dict[str, Any]:
        patients = self.scored_patients(results)
        y_true = np.array([self.ground_truth[p] for p in patients], dtype=bool)
        y_pred = np.array([results[p] for p in patients], dtype=bool)
        balanced, sensitivity, specificity = binary_rates(y_true, y_pred)
        settings = self.settings
        samples, skipped = {"balanced_accuracy": [], "sensitivity": [], "specificity": []}, 0
        for counts in bootstrap_counts(len(patients), settings):
            sens, spec = resampled_rates(y_true, y_pred, counts)
            # A resample missing a class has no balanced accuracy: skipped for all three metrics,
            # so the three intervals come from the same resamples.
            defined = ~(np.isnan(sens) | np.isnan(spec))
            skipped += int((~defined).sum())
            samples["sensitivity"].append(sens[defined])
            samples["specificity"].append(spec[defined])
            samples["balanced_accuracy"].append((sens[defined] + spec[defined]) / 2)
        log(f"Bootstrap: {settings.bootstrap_repetitions} resamples, seed {settings.seed}, {skipped} skipped "
            f"(one class only).")
        aggregates: dict[str, Any] = {"balanced_accuracy": balanced, "sensitivity": sensitivity,
                                      "specificity": specificity}
        for key, parts in samples.items():
            lower, upper = percentile_interval(np.concatenate(parts), settings.confidence_level, key)
            aggregates[f"{key}_ci_lower"] = lower
            aggregates[f"{key}_ci_upper"] = upper
        return {
            "aggregates": aggregates,
            "counts": {
                "patients": len(patients),
                "hpv_positive": int(y_true.sum()),
                "hpv_negative": int((~y_true).sum()),
                "true_positives": int((y_true & y_pred).sum()),
                "false_negatives": int((y_true & ~y_pred).sum()),
                "true_negatives": int((~y_true & ~y_pred).sum()),
                "false_positives": int((~y_true & y_pred).sum()),
                "unlabelled_patients_skipped": self.unlabelled_count(results),
                "bootstrap_resamples": settings.bootstrap_repetitions,
                "bootstrap_resamples_skipped": skipped,
            },
        }

    def aggregate(self, results: dict[str, bool], counts: np.ndarray) -> dict[str, np.ndarray]:
        """Balanced accuracy and specificity of every resample (rows of multiplicities of
        sorted(results)). A resample missing a class has no balanced accuracy, and then no
        metrics at all (score_aggregates stops): NaN for both, as the bootstrap skips it."""
        patients, counts = self.labelled_columns(results, counts)
        y_true = np.array([self.ground_truth[p] for p in patients], dtype=bool)
        y_pred = np.array([results[p] for p in patients], dtype=bool)
        sensitivity, specificity = resampled_rates(y_true, y_pred, counts)
        defined = ~(np.isnan(sensitivity) | np.isnan(specificity))
        return {"aggregates.balanced_accuracy": np.where(defined, (sensitivity + specificity) / 2, np.nan),
                "aggregates.specificity": np.where(defined, specificity, np.nan)}
