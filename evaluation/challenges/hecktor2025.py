"""HECKTOR 2025: head-and-neck cancer in PET/CT (docs/challenges/hecktor2025.md).

Three tasks, three leaderboards, one evaluation image each:
  hecktor2025-task1  GTVp / GTVn segmentation and GTVn detection  (hecktor2025_task1.py)
  hecktor2025-task2  recurrence-free survival: Harrell's C-index with a bootstrap interval
  hecktor2025-task3  HPV status: balanced accuracy, sensitivity, specificity with bootstrap intervals

What the tasks share lives here: the case id of a job (the CT image's name without extension and
modality suffix), the patient CSVs, and the seeded patient bootstrap of tasks 2 and 3.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from evaluation.examples import synthetic
from evaluation.errors import SetupError, SubmissionError, id_list
from evaluation.framework import Evaluation, log
from evaluation.grand_challenge import (
    Case,
    list_submission_files,
    single_ground_truth_file,
    strip_extension,
)
from evaluation.metrics.binary import binary_rates, resampled_rates
from evaluation.metrics.resampling import draw_with_replacement, draws_to_counts
from evaluation.metrics.survival import concordance_index, resampled_concordance
from evaluation.settings import Settings, json_type, setting

PATIENT_COLUMN = "PatientID"
PREDICTION_COLUMN = "Prediction"  # the 2022 predictions-file phase's CSV: PatientID,Prediction
# Bootstrap rows turned into counts at a time: all of them for usual test sets (the C-index builds
# its pair matrices once per block), bounded (~64 MB of counts) for very large ones.
COUNT_ELEMENTS_PER_BLOCK = 1 << 23


@dataclass(frozen=True)
class HecktorSettings(Settings):
    input_socket: str = setting("ct-image", doc="input socket whose image name gives the patient id (the CT)")
    modality_suffixes: list[str] = setting(["__CT", "_CT", "_0000"],
                                           doc="suffixes removed (the first that matches) from the CT image name "
                                               "once its extension is stripped, to get the PatientID")


class HecktorEvaluation(Evaluation):
    """What the three tasks share. No name: not a challenge of its own."""

    settings_class = HecktorSettings
    case_label = "Patient"

    def case_input_socket(self) -> str:
        return self.settings.input_socket

    def case_id_from_image_name(self, name: str) -> str:
        """`CHUM-001__CT.nii.gz` -> `CHUM-001` (spec: strip the extension, then a modality suffix)."""
        return strip_modality_suffix(strip_extension(name), self.settings.modality_suffixes)


def strip_modality_suffix(stem: str, suffixes) -> str:
    """Without the first of `suffixes` it ends with (kept whole if nothing would be left)."""
    for suffix in suffixes:
        if suffix and stem.endswith(suffix):
            return stem[: -len(suffix)] if len(stem) > len(suffix) else stem
    return stem


# ---- CSV files ------------------------------------------------------------------------------


def read_csv_rows(path: Path, columns: tuple[str, ...], what: str, error: type[Exception]) -> list[dict[str, str]]:
    """The rows of a comma-separated file with a header holding `columns` (more are allowed),
    values stripped of surrounding spaces; `what` names the file in the one-line error."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise error(f"{what}: {path.name} is not UTF-8 text.") from None
    except OSError as e:
        raise error(f"{what}: {path.name} cannot be read ({e.strerror}).") from None
    reader = csv.reader(io.StringIO(text))
    try:
        rows = [row for row in reader if any(cell.strip() for cell in row)]
    except csv.Error as e:
        raise error(f"{what}: {path.name} is not a readable CSV file ({e}).") from None
    if not rows:
        raise error(f"{what}: {path.name} is empty; expected a header with the columns {', '.join(columns)}.")
    header = [cell.strip() for cell in rows[0]]
    missing = [c for c in columns if c not in header]
    if missing:
        raise error(f"{what}: {path.name} has no column {', '.join(map(repr, missing))} (columns found: "
                    f"{', '.join(map(repr, header))}); expected the columns {', '.join(columns)}.")
    if len(set(header)) != len(header):
        raise error(f"{what}: {path.name} repeats a column name in its header.")
    records = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise error(f"{what}: row {line} of {path.name} has {len(row)} values for {len(header)} columns.")
        records.append({name: cell.strip() for name, cell in zip(header, row)})
    return records


def patient_table(directory: Path, columns: tuple[str, ...], parse: Callable[[str, str, str], Any],
                  skip_unlabelled: bool) -> dict[str, Any]:
    """{PatientID: parse(patient, column, text) of each value column} from the ground truth's one
    CSV. An empty value is the organizer's error, unless `skip_unlabelled`: then the patient's
    value is None (its prediction is read and checked, but not scored)."""
    path = single_ground_truth_file(directory, ".csv")
    rows = read_csv_rows(path, (PATIENT_COLUMN, *columns), f"Ground truth {path.name}", SetupError)
    table: dict[str, Any] = {}
    for row in rows:
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


def ground_truth_number(path_name: str) -> Callable[[str, str, str], float]:
    def parse(patient: str, column: str, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise SetupError(f"Ground truth {path_name}: {column} of patient {patient} is {text!r}, not a finite number.")
        return value
    return parse


def ground_truth_binary(path_name: str) -> Callable[[str, str, str], int]:
    number = ground_truth_number(path_name)

    def parse(patient: str, column: str, text: str) -> int:
        value = number(patient, column, text)
        if value not in (0.0, 1.0):
            raise SetupError(f"Ground truth {path_name}: {column} of patient {patient} is {text!r}; expected 0 or 1.")
        return int(value)
    return parse


def csv_file_cases(input_dir: Path) -> list[tuple[str, str]]:
    """The 2022-style predictions-file phase: one CSV (PatientID,Prediction) anywhere in /input;
    each case's source is its Prediction text."""
    files = list_submission_files(input_dir)
    csvs = [f for f in files if f.name.lower().endswith(".csv")]
    if len(csvs) != 1:
        names = id_list(f.relative_to(input_dir).as_posix() for f in files) or "no file"
        raise SubmissionError(f"The submission must be one CSV file with the columns {PATIENT_COLUMN},"
                              f"{PREDICTION_COLUMN}; found {names}.")
    rows = read_csv_rows(csvs[0], (PATIENT_COLUMN, PREDICTION_COLUMN), "The predictions file", SubmissionError)
    return [(row[PATIENT_COLUMN], row[PREDICTION_COLUMN]) for row in rows]


def _as_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # a JSON integer beyond the float range
        return math.inf


def shown(value: Any) -> str:
    """A submitted value as written in its file, shortened for a one-line message."""
    text = json.dumps(value)  # "0.5", true, null, NaN: as written in the file
    return text if len(text) <= 40 else f"{json_type(value)} {text[:30]}..."


# ---- the patient bootstrap of tasks 2 and 3 --------------------------------------------------


@dataclass(frozen=True)
class BootstrapSettings(HecktorSettings):
    bootstrap_repetitions: int = setting(1000, minimum=1, doc="bootstrap resamples of the patients (spec: 1000)")
    seed: int = setting(2025, minimum=0, doc="seed of the bootstrap draws (--seed overrides)")
    confidence_level: float = setting(95.0, minimum=1.0, doc="percentile interval, in percent (spec: 95)")
    unlabelled_patients: str = setting("error", choices=("error", "skip"),
                                       doc="a ground-truth row with an empty value: 'error' (stop), or 'skip' "
                                           "(its prediction is read and checked, not scored; counted in metrics.json)")

    def check(self) -> None:
        super().check()
        if not self.confidence_level < 100.0:
            raise SetupError(f"config.json: setting 'confidence_level' is {self.confidence_level!r}; it must be "
                             f"below 100.")


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
    lower, upper = np.percentile(values, [tail, 100.0 - tail])
    return float(lower), float(upper)


class BootstrapTask(HecktorEvaluation):
    """Tasks 2 and 3: one value per patient from a JSON output or a 2022-style CSV."""

    cases_in_workers = False  # a few bytes of JSON per patient: a process pool would cost more than it saves

    def file_cases(self, input_dir: Path) -> list[tuple[str, str]]:
        return csv_file_cases(input_dir)

    def scored_patients(self, results: dict[str, Any]) -> list[str]:
        """Patients with a label, sorted (the bootstrap's patient order)."""
        return [c for c in sorted(results) if self.ground_truth[c] is not None]

    def unlabelled_count(self, results: dict[str, Any]) -> int:
        return sum(1 for c in results if self.ground_truth[c] is None)


# ---- Task 2: recurrence-free survival ---------------------------------------------------------


@dataclass(frozen=True)
class Task2Settings(BootstrapSettings):
    output_socket: str = setting("rfs", doc="output socket read: rfs.json, one number, a risk score (higher = "
                                            "earlier recurrence)")


class HecktorTask2(BootstrapTask):
    name = "hecktor2025-task2"
    title = "HECKTOR 2025 Task 2: recurrence-free survival, Harrell's C-index with a bootstrap 95% interval"
    settings_class = Task2Settings
    ranked_paths = ("aggregates.c_index", "aggregates.c_index_ci_lower", "aggregates.c_index_ci_upper")

    def load_ground_truth(self, directory: Path) -> dict[str, tuple[float, int] | None]:
        """One CSV: PatientID, RFS (days), Relapse (1 event, 0 censored)."""
        name = single_ground_truth_file(directory, ".csv").name
        number, binary = ground_truth_number(name), ground_truth_binary(name)

        def parse(patient, column, text):
            if column == "Relapse":
                return binary(patient, column, text)
            value = number(patient, column, text)
            if value < 0:
                raise SetupError(f"Ground truth {name}: RFS of patient {patient} is negative ({text}).")
            return value

        table = patient_table(directory, ("RFS", "Relapse"), parse, self.settings.unlabelled_patients == "skip")
        labelled = [v for v in table.values() if v is not None]
        times = np.array([t for t, _ in labelled])
        events = np.array([e for _, e in labelled], dtype=bool)
        _, comparable = resampled_concordance(times, events, np.zeros(len(labelled)), np.ones((1, len(labelled))))
        if comparable[0] == 0:
            raise SetupError(f"Ground truth {name} has no comparable pair of patients (a relapse before another "
                             f"patient's time): the C-index is undefined.")
        return table

    def load_prediction(self, case: Case, ground_truth: Any) -> float:
        slug = self.settings.output_socket
        if case.job is None:
            try:
                value = float(case.source)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise SubmissionError(f"{case.name}: the {PREDICTION_COLUMN} is {case.source!r}; it must be a finite "
                                      f"number (a risk score).")
            return value
        value = case.read_json(slug)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(_as_float(value)):
            raise SubmissionError(f"{case.name}: the output {slug!r} is {shown(value)}; it must be one finite number "
                                  f"(a risk score, higher for an earlier recurrence).")
        return float(value)

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

    @classmethod
    def synthesize(cls, out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
        """RFS in days rounded to weeks (tied times), ~35% relapses, risk scores that track the
        time with noise, rounded to 1 decimal (tied risks)."""
        rng = np.random.default_rng(seed)
        patients = synthetic_patients(rng, 40 if cases is None else cases)
        relapse = (rng.random(len(patients)) < 0.35).astype(int)
        rfs = np.round(rng.uniform(60, 1800, len(patients)) / 7) * 7
        risk = np.round(3 * (1 - rfs / 1800) + relapse + rng.normal(0, 1.5, len(patients)), 1)
        rows = [f"{p},{t:g},{e}" for p, t, e in zip(patients, rfs, relapse)]
        write_text(out_dir / "ground-truth" / "hecktor2025_task2_test.csv", "PatientID,RFS,Relapse\n" + "\n".join(rows))
        write_value_jobs(out_dir / "input", rng, patients, "rfs", "rfs.json", "Float", [float(r) for r in risk])

    @classmethod
    def invalid_examples(cls, input_dir: Path) -> dict[str, dict[str, bytes | None]]:
        """The first patient's risk as text, and as NaN."""
        path = first_patient_output(input_dir, "rfs.json")
        return {"text-risk": {path: b'"high"\n'}, "nan-risk": {path: b"NaN\n"}}


# ---- Task 3: HPV status ----------------------------------------------------------------------


@dataclass(frozen=True)
class Task3Settings(BootstrapSettings):
    output_socket: str = setting("hpv-status", doc="output socket read: hpv-status.json, a boolean (true = HPV "
                                                   "positive; 1 and 0 accepted)")


class HecktorTask3(BootstrapTask):
    name = "hecktor2025-task3"
    title = "HECKTOR 2025 Task 3: HPV status, balanced accuracy (ties: specificity) with bootstrap 95% intervals"
    settings_class = Task3Settings
    ranked_paths = ("aggregates.balanced_accuracy", "aggregates.sensitivity", "aggregates.specificity",
                    "aggregates.balanced_accuracy_ci_lower", "aggregates.balanced_accuracy_ci_upper")

    def load_ground_truth(self, directory: Path) -> dict[str, int | None]:
        """One CSV: PatientID, HPV Status (1 positive, 0 negative)."""
        name = single_ground_truth_file(directory, ".csv").name
        table = patient_table(directory, ("HPV Status",), ground_truth_binary(name),
                              self.settings.unlabelled_patients == "skip")
        labels = {v for v in table.values() if v is not None}
        if labels != {0, 1}:
            raise SetupError(f"Ground truth {name} must hold both HPV-positive (1) and HPV-negative (0) patients: "
                             f"balanced accuracy needs both.")
        return table

    def load_prediction(self, case: Case, ground_truth: Any) -> bool:
        slug = self.settings.output_socket
        if case.job is None:
            text = case.source.strip().lower()
            decision = {"1": True, "0": False, "true": True, "false": False, "1.0": True, "0.0": False}.get(text)
            if decision is None:
                raise SubmissionError(f"{case.name}: the {PREDICTION_COLUMN} is {case.source!r}; it must be 1 "
                                      f"(HPV positive) or 0 (HPV negative).")
            return decision
        value = case.read_json(slug)
        if isinstance(value, bool):
            return value
        if isinstance(value, (int, float)) and value in (0, 1):
            return bool(value)
        raise SubmissionError(f"{case.name}: the output {slug!r} is {shown(value)}; it must be true (HPV positive) or "
                              f"false (HPV negative), or 1 or 0.")

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

    @classmethod
    def synthesize(cls, out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
        """~60% HPV positive; the prediction right 80% of the time; outputs as true/false."""
        rng = np.random.default_rng(seed)
        patients = synthetic_patients(rng, 40 if cases is None else cases)
        status = (rng.random(len(patients)) < 0.6).astype(int)
        status[:2] = (1, 0)  # both classes whatever the seed and size
        prediction = np.where(rng.random(len(patients)) < 0.8, status, 1 - status).astype(bool)
        rows = [f"{p},{s}" for p, s in zip(patients, status)]
        write_text(out_dir / "ground-truth" / "hecktor2025_task3_test.csv", "PatientID,HPV Status\n" + "\n".join(rows))
        write_value_jobs(out_dir / "input", rng, patients, "hpv-status", "hpv-status.json", "Bool",
                         [bool(v) for v in prediction])

    @classmethod
    def invalid_examples(cls, input_dir: Path) -> dict[str, dict[str, bytes | None]]:
        """The first patient's status as 0.5, and as "yes"."""
        path = first_patient_output(input_dir, "hpv-status.json")
        return {"half-status": {path: b"0.5\n"}, "text-status": {path: b'"yes"\n'}}


# ---- synthetic data shared by the three tasks ------------------------------------------------

CENTERS = ("CHUM", "CHUP", "CHUV", "HGJ", "HMR", "MDA", "USZ")


def synthetic_patients(rng: np.random.Generator, n: int) -> list[str]:
    """Distinct HECKTOR-like ids (center-number), sorted."""
    ids: set[str] = set()
    while len(ids) < n:
        ids.add(f"{CENTERS[int(rng.integers(len(CENTERS)))]}-{int(rng.integers(1, 1000)):03d}")
    return sorted(ids)


def image_inputs(patient: str) -> list[dict[str, Any]]:
    """The CT (which names the case) and the PET, as HECKTOR's interface lists them."""
    return [synthetic.image_input("ct-image", f"{patient}__CT.nii.gz", "images/ct", pk=1),
            synthetic.image_input("pet-image", f"{patient}__PT.nii.gz", "images/pet", pk=2)]


def write_value_jobs(input_dir: Path, rng, patients, slug: str, relative_path: str, kind: str, values) -> None:
    jobs = []
    for patient, value in zip(patients, values):
        pk = synthetic.job_pk(rng)
        jobs.append(synthetic.job(pk, image_inputs(patient), [synthetic.file_output(slug, relative_path, kind=kind)],
                                  seconds=float(rng.uniform(20, 120))))
        synthetic.write_output(input_dir, pk, relative_path, value)
    order = rng.permutation(len(jobs))  # the platform lists jobs in no particular order
    synthetic.write_predictions(input_dir, [jobs[i] for i in order])


def first_patient_output(input_dir: Path, relative_path: str) -> str:
    """The output path (relative to input_dir) of the job of the first patient by name."""
    jobs = json.loads((input_dir / "predictions.json").read_text())
    first = min(jobs, key=lambda job: job["inputs"][0]["image"]["name"])
    return f"{first['pk']}/output/{relative_path}"


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.rstrip("\n") + "\n", encoding="utf-8")
