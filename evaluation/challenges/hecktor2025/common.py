"""What the three HECKTOR 2025 tasks share: the case id of a job (the CT image's name without
extension and modality suffix), the input socket and settings, the patient CSVs, and the seeded
patient bootstrap of tasks 2 and 3 (its interval columns and their paths)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluation.declarations.columns import Column, Leaderboard, ci_title
from evaluation.declarations.workload import Workload
from evaluation.errors import SetupError, SubmissionError, id_list
from evaluation.framework import Evaluation, log
from evaluation.metrics.resampling import draw_with_replacement, draws_to_counts, linear_percentiles, whole_counts
from evaluation.platform.locations import list_submission_files, single_ground_truth_file, strip_extension
from evaluation.reading.files import MEGABYTE, Origin, shown_path
from evaluation.reading.tables import bytes_for_rows, read_csv_records
from evaluation.settings import CASE_INPUT, Settings, setting

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
    bootstrap_repetitions: int = setting(1000, minimum=1, maximum=100_000,
                                         doc="bootstrap resamples of the patients (spec: 1000)")
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


def interval_path(column: Column, bound: str) -> str:
    """Where metrics.json keeps a bound ("lower", "upper") of the bootstrap interval of `column`."""
    return f"{column.path}_ci_{bound}"


def interval_columns(what: str, column: Column, level: float) -> tuple[Column, Column]:
    """The bootstrap interval of `column` as two columns, excluded from ranking: the interval is
    asymmetric, so it is not the score's ± error."""
    return tuple(Column(ci_title(what, level, bound), interval_path(column, bound), "desc", exclude_from_ranking=True)
                 for bound in ("lower", "upper"))


class BootstrapTask(HecktorEvaluation):
    """Tasks 2 and 3: one value per patient from a JSON output or a 2022-style CSV, and a seeded
    patient bootstrap interval of each ranked value, computed by `aggregate` like the value itself."""

    # (value, name in an error message) of each value given an interval, in metrics.json's order
    interval_values: ClassVar[tuple[tuple[Column, str], ...]] = ()
    skipped_reason: ClassVar[str] = ""  # why a resample has no value: said in the log line
    workload = Workload(in_workers=False)  # a few bytes of JSON per patient: a pool would cost more than it saves
    # The task's leaderboard at a confidence level (its interval columns' titles say the level), built
    # in one place: `leaderboards` is it at the settings' default level, a phase's at its own level.
    leaderboard_at: ClassVar[Callable[[float], Leaderboard] | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if cls.__dict__.get("leaderboard_at") is not None:  # before Evaluation derives ranked_paths from it
            cls.leaderboards = (cls.leaderboard_at(cls.settings_class().confidence_level),)
        super().__init_subclass__(**kwargs)

    @classmethod
    def phase_leaderboards(cls, settings: BootstrapSettings) -> tuple[Leaderboard, ...]:
        if cls.leaderboard_at is None:
            return super().phase_leaderboards(settings)
        return (cls.leaderboard_at(settings.confidence_level),)

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
        return self.scored_patients(results), whole_counts(counts, "a patient")[:, labelled]

    def bootstrap_intervals(self, results: dict[str, Any]) -> tuple[dict[str, float], int]:
        """({interval path: bound}, resamples skipped): `aggregate` on bootstrap resamples of the
        scored patients. A resample leaving any value undefined (NaN) is skipped for every value,
        so all intervals come from the same resamples."""
        settings = self.settings
        scored = {patient: results[patient] for patient in self.scored_patients(results)}
        samples: dict[str, list[np.ndarray]] = {column.path: [] for column, _ in self.interval_values}
        skipped = 0
        for counts in bootstrap_counts(len(scored), settings):
            values = self.aggregate(scored, counts)
            defined = np.logical_and.reduce([~np.isnan(values[path]) for path in samples])
            skipped += int((~defined).sum())
            for path, parts in samples.items():
                parts.append(values[path][defined])
        intervals: dict[str, float] = {}
        for column, what in self.interval_values:
            lower, upper = percentile_interval(np.concatenate(samples[column.path]), settings.confidence_level, what)
            intervals[interval_path(column, "lower")] = lower
            intervals[interval_path(column, "upper")] = upper
        log(f"Bootstrap: {settings.bootstrap_repetitions} resamples, seed {settings.seed}, {skipped} skipped "
            f"({self.skipped_reason}).")
        return intervals, skipped


