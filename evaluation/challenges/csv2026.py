"""CSV 2026: carotid plaque segmentation and vulnerability in ultrasound (docs/challenges/csv2026.md).

Each case is a longitudinal and a transverse B-mode image; the algorithm segments vessel and
plaque in both and gives one risk class per case. The leaderboard:

    S_total = 0.4 S_cls + 0.4 S_seg + 0.2 S_time       (all on 0-100)
    S_cls   = 100 × macro F1 over the two classes
    S_seg   = 100 × ½ Σ_view (0.4 S_view,vessel + 0.6 S_view,plaque),  S_v,c = (mean DSC + mean NSD) / 2
    S_time  = 100 × (2B − clip(t, 2B/3, 2B)) / (2B − 2B/3)

NSD is the MetricsReloaded one at τ = 3 px with an exact tie rule (evaluation.metrics.surface).
Vessel and plaque are exclusive labels (255 and 128), as the official baseline scores them.
Without timing information (a predictions-file submission) S_time and S_total are null with a
note and `score_without_time` = (0.4 S_cls + 0.4 S_seg) / 0.8 is what to rank on.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.examples import synthetic
from evaluation.errors import SetupError, SubmissionError
from evaluation.framework import Evaluation, log
from evaluation.grand_challenge import Case, Job, Undefined, ground_truth_files, list_submission_files
from evaluation.images import read_image
from evaluation.metrics.overlap import dice
from evaluation.metrics.surface import normalized_surface_dice
from evaluation.settings import Settings, setting

VIEWS = ("long", "trans")
VIEW_NAMES = {"long": "longitudinal", "trans": "transverse"}
STRUCTURES = ("vessel", "plaque")
PAIRS = tuple((view, structure) for view in VIEWS for structure in STRUCTURES)

# Ground truth and raw-encoded predictions: 0 background, 128 plaque, 255 vessel (csv2026.md).
RAW_LABELS = {"plaque": 128, "vessel": 255}
LABEL_SUFFIX = "_label.h5"
PREDICTION_SUFFIX = "_pred.h5"
# Dataset names seen in submissions (csv2026.md), in the order they are looked for.
MASK_KEYS = {"long": ("long_mask", "pred_long"), "trans": ("trans_mask", "pred_trans")}
CLASS_KEYS = ("cls", "cls_pred", "cls_prob")  # the first present is read; cls_prob is a probability
HIGH_RISK_PROBABILITY = 0.5  # "high risk when ≥ 0.5"

# The ranking rule's weights (seed text): not settings.
WEIGHT_CLS, WEIGHT_SEG, WEIGHT_TIME = 0.4, 0.4, 0.2
STRUCTURE_WEIGHTS = {"vessel": 0.4, "plaque": 0.6}


@dataclass(frozen=True)
class Csv2026Settings(Settings):
    nsd_tolerance_px: float = setting(3.0, minimum=0,
                                      doc="NSD tolerance τ in pixels (the official baseline's 3 px); a distance "
                                          "equal to τ counts as within it")
    baseline_time_seconds: float | None = setting(None,
                                                  doc="B, the baseline's total processing time in seconds, shipped "
                                                      "with the ground truth; needed whenever the submission carries "
                                                      "timing (algorithm phase)")
    plaque_index: int = setting(1, choices=(1, 2),
                                doc="masks written as class indices 0/1/2: the index of plaque, vessel being the "
                                    "other (1: the official baseline's 1 = plaque, 2 = vessel)")
    longitudinal_input_socket: str = setting("longitudinal-carotid-ultrasound",
                                             doc="algorithm phase: input whose image name is the case id")
    longitudinal_output_socket: str = setting("longitudinal-carotid-segmentation",
                                              doc="algorithm phase: longitudinal segmentation image output")
    transverse_output_socket: str = setting("transverse-carotid-segmentation",
                                            doc="algorithm phase: transverse segmentation image output")
    risk_output_socket: str = setting("plaque-risk",
                                      doc="algorithm phase: JSON output with the class (0/1, a boolean, or a "
                                          "probability of high risk, high when >= 0.5)")

    def check(self) -> None:
        super().check()
        if not math.isfinite(self.nsd_tolerance_px):
            raise SetupError(f"config.json: setting 'nsd_tolerance_px' is {self.nsd_tolerance_px!r}; it must be a "
                             f"finite number of pixels.")
        baseline = self.baseline_time_seconds
        if baseline is not None and not (math.isfinite(baseline) and baseline > 0):
            raise SetupError(f"config.json: setting 'baseline_time_seconds' is {baseline!r}; it must be a positive "
                             f"number of seconds.")


@dataclass(frozen=True)
class CaseTruth:
    path: Path
    high_risk: int  # cls: 0 low risk (Plaque-RADS 2), 1 high risk (Plaque-RADS 3-4)
    shapes: tuple[tuple[int, ...], tuple[int, ...]]  # (long, trans)


@dataclass(frozen=True)
class JobTiming:
    """What a job says of its duration (seconds; instants as POSIX seconds)."""

    exec_seconds: float | None
    started: float | None
    completed: float | None


@dataclass(frozen=True)
class Prediction:
    masks: dict[str, tuple[np.ndarray, np.ndarray]]  # view -> (vessel, plaque)
    truth_masks: dict[str, tuple[np.ndarray, np.ndarray]]
    high_risk: int


@dataclass(frozen=True)
class CaseResult:
    dsc: tuple[float, ...]  # in PAIRS order
    nsd: tuple[float, ...]
    high_risk: int
    timing: JobTiming | None  # None: a predictions-file submission


# ---- pure helpers ----------------------------------------------------------------------------


def binary_f1_scores(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[float, float]:
    """(F1 of class 0, F1 of class 1), scikit-learn's per-class F1; a class with no true and no
    predicted case has F1 0 (zero_division=0; the ground truth has both classes, so only a
    direct call can meet it)."""
    from sklearn.metrics import f1_score  # imported here: every run imports every challenge module

    low, high = f1_score(np.asarray(y_true, dtype=int), np.asarray(y_pred, dtype=int), labels=[0, 1],
                         average=None, zero_division=0)
    return float(low), float(high)


def time_score(seconds: float, baseline: float) -> float:
    """100 × (2B − t_clip) / (2B − 2B/3), t_clip = clip(t, 2B/3, 2B): 100 at or below 2B/3, 0 at or above 2B."""
    fastest, slowest = 2.0 * baseline / 3.0, 2.0 * baseline
    clipped = min(max(seconds, fastest), slowest)
    return 100.0 * (slowest - clipped) / (slowest - fastest)


def total_processing_time(timings: list[JobTiming | None]) -> tuple[float | None, str]:
    """t and how it was found: the sum of the jobs' exec_duration when every job has one, else
    the span from the earliest started_at to the latest completed_at when every job has both
    (older predictions.json), else None with the reason."""
    if not timings or any(timing is None for timing in timings):
        return None, "a predictions-file submission carries no processing time"
    if all(timing.exec_seconds is not None for timing in timings):
        return math.fsum(timing.exec_seconds for timing in timings), "sum of the jobs' exec_duration"
    if all(timing.started is not None and timing.completed is not None for timing in timings):
        span = max(timing.completed for timing in timings) - min(timing.started for timing in timings)
        if span >= 0:
            return span, "span from the earliest started_at to the latest completed_at"
        return None, "the jobs' completed_at precede their started_at"
    return None, "not every job carries exec_duration, nor started_at and completed_at"


def job_timing(job: Job) -> JobTiming:
    def posix(instant: datetime | None) -> float | None:
        if instant is None:
            return None
        if instant.tzinfo is None:  # the platform writes UTC ("Z"); a naive instant is read as UTC
            instant = instant.replace(tzinfo=timezone.utc)
        return instant.timestamp()

    return JobTiming(job.exec_duration_seconds, posix(job.started_at), posix(job.completed_at))


def split_labels(array: np.ndarray, background: int, vessel: int, plaque: int):
    """(vessel, plaque) when every pixel is background, vessel or plaque, else None. Three
    comparisons, no sort: the distinct values are listed only for an error message."""
    vessel_mask, plaque_mask = array == vessel, array == plaque
    if np.count_nonzero(array == background) + np.count_nonzero(vessel_mask) + np.count_nonzero(plaque_mask) \
            != array.size:
        return None
    return vessel_mask, plaque_mask


def present_values(array: np.ndarray) -> list:
    """The distinct values of a label image, ascending."""
    return np.unique(array).tolist()


def _shown_values(values: list, limit: int = 8) -> str:
    def one(value):
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)
    text = ", ".join(one(v) for v in values[:limit])
    return text + (f" and {len(values) - limit} more" if len(values) > limit else "")


def _shown(value: Any) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _shape_text(shape: tuple[int, ...]) -> str:
    return "x".join(str(n) for n in shape)  # ASCII: the message is the last stderr line, whatever the locale


class Csv2026(Evaluation):
    name = "csv2026"
    title = "CSV 2026: carotid vessel/plaque segmentation and plaque risk in ultrasound (ISBI 2026)"
    settings_class = Csv2026Settings
    case_label = "Case"
    # Always finite. score_total and score_time are null without timing, so they cannot be
    # ranked paths: the algorithm phase ranks on score_total (docs/challenges/csv2026.md).
    ranked_paths = (
        "aggregates.score_without_time", "aggregates.score_cls", "aggregates.score_seg",
        "aggregates.macro_f1", "aggregates.f1_low_risk", "aggregates.f1_high_risk",
        *(f"aggregates.{view}_{structure}_{metric}" for view, structure in PAIRS for metric in ("dsc", "nsd", "score")),
    )

    # ---- ground truth --------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, CaseTruth]:
        """NNNN_label.h5 files: datasets long_mask, trans_mask (0/128/255) and cls (0/1). Only the
        classes and mask shapes are read here; the masks are read case by case in the workers."""
        import h5py

        files = ground_truth_files(directory, LABEL_SUFFIX)
        if not files:
            raise SetupError(f"The ground-truth folder {directory} has no NNNN{LABEL_SUFFIX} files.")
        truths: dict[str, CaseTruth] = {}
        for path in files:
            case_id = path.name[: -len(LABEL_SUFFIX)]
            where = f"Ground truth {path.name}"
            try:
                with h5py.File(path, "r") as handle:
                    shapes = []
                    for view in VIEWS:
                        key = MASK_KEYS[view][0]
                        dataset = handle.get(key)
                        if not isinstance(dataset, h5py.Dataset) or len(dataset.shape) != 2:
                            raise SetupError(f"{where} has no 2D dataset {key}.")
                        shapes.append(tuple(int(n) for n in dataset.shape))
                    dataset = handle.get("cls")
                    if not isinstance(dataset, h5py.Dataset) or dataset.size != 1:
                        raise SetupError(f"{where} has no single-valued dataset cls.")
                    value = np.asarray(dataset[()]).reshape(()).item()
            except OSError as error:
                raise SetupError(f"{where} is not a readable HDF5 file ({error}).") from None
            if isinstance(value, bytes) or value not in (0, 1):
                raise SetupError(f"{where}: cls is {_shown(value)}; it must be 0 (low risk) or 1 (high risk).")
            truths[case_id] = CaseTruth(path, int(value), (shapes[0], shapes[1]))
        classes = {truth.high_risk for truth in truths.values()}
        if classes != {0, 1}:
            raise SetupError(f"The ground truth must hold both low-risk and high-risk cases (macro F1 averages the "
                             f"F1 of both classes); all {len(truths)} case(s) have cls {classes.pop()}.")
        return truths

    def read_truth_masks(self, case: Case, truth: CaseTruth) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        import h5py

        try:
            with h5py.File(truth.path, "r") as handle:
                arrays = {view: handle[MASK_KEYS[view][0]][()] for view in VIEWS}
        except (OSError, KeyError) as error:
            raise SetupError(f"Ground truth {truth.path.name} cannot be read ({error}).") from None
        masks = {}
        for view in VIEWS:
            masks[view] = split_labels(arrays[view], 0, RAW_LABELS["vessel"], RAW_LABELS["plaque"])
            if masks[view] is None:
                raise SetupError(f"Ground truth {truth.path.name}, {MASK_KEYS[view][0]}: values "
                                 f"{_shown_values(present_values(arrays[view]))}; the labels are 0, 128 (plaque) and "
                                 f"255 (vessel).")
        return masks

    # ---- the submission ------------------------------------------------------------------

    def case_input_socket(self) -> str:
        return self.settings.longitudinal_input_socket

    def file_cases(self, input_dir: Path) -> list[tuple[str, Path]]:
        """Predictions-file phase: one NNNN_pred.h5 per case, at any depth of the unpacked archive."""
        found, ignored = [], []
        root = Path(os.path.realpath(input_dir))
        for path in list_submission_files(input_dir):
            if path.name.lower().endswith(PREDICTION_SUFFIX) and len(path.name) > len(PREDICTION_SUFFIX):
                found.append((path.name[: -len(PREDICTION_SUFFIX)], path))
            else:
                ignored.append(path.relative_to(root).as_posix())
        if ignored:
            log(f"Ignored {len(ignored)} file(s) not named <case>{PREDICTION_SUFFIX}: {', '.join(ignored[:10])}"
                + (" ..." if len(ignored) > 10 else ""))
        if not found:
            raise SubmissionError(f"The submission holds no <case>{PREDICTION_SUFFIX} file (e.g. 0048{PREDICTION_SUFFIX}) "
                                  f"and no predictions.json.")
        return found

    def cases(self, input_dir: Path) -> list[Case]:
        cases = super().cases(input_dir)
        if all(case.job is not None for case in cases):
            seconds, _ = total_processing_time([job_timing(case.job) for case in cases])
            if seconds is not None and self.settings.baseline_time_seconds is None:
                raise SetupError("config.json sets no baseline_time_seconds, which the time score of this "
                                 "algorithm phase needs (the submission's jobs carry their processing time).")
        return cases

    def load_prediction(self, case: Case, truth: CaseTruth) -> Prediction:
        truth_masks = self.read_truth_masks(case, truth)
        if case.job is None:
            masks, high_risk = self.read_h5_prediction(case, case.source, truth)
        else:
            masks, high_risk = self.read_job_prediction(case, truth)
        return Prediction(masks, truth_masks, high_risk)

    def read_h5_prediction(self, case: Case, path: Path, truth: CaseTruth):
        import h5py

        try:
            handle = h5py.File(path, "r")
        except OSError:
            raise SubmissionError(f"{case.name}: {path.name} is not a readable HDF5 file.") from None
        with handle:
            names = ", ".join(sorted(handle.keys())) or "none"
            masks = {}
            for view, expected in zip(VIEWS, truth.shapes):
                where = f"{case.name}, {VIEW_NAMES[view]} mask"
                keys = [key for key in MASK_KEYS[view] if key in handle]
                if not keys:
                    raise SubmissionError(f"{where}: {path.name} has no dataset {' or '.join(MASK_KEYS[view])} "
                                          f"(datasets found: {names}).")
                if len(keys) > 1:
                    raise SubmissionError(f"{where}: {path.name} holds both {keys[0]} and {keys[1]}; keep one.")
                dataset = handle[keys[0]]
                if not isinstance(dataset, h5py.Dataset):
                    raise SubmissionError(f"{where}: {keys[0]} in {path.name} is a group, not a dataset.")
                self.check_shape(where, tuple(dataset.shape), expected)
                try:
                    array = dataset[()]
                except (OSError, TypeError, ValueError) as error:
                    raise SubmissionError(f"{where}: {keys[0]} in {path.name} cannot be read ({error}).") from None
                masks[view] = self.decode_mask(where, array)
            high_risk = self.read_h5_class(case, handle, path, names)
        return masks, high_risk

    def read_h5_class(self, case: Case, handle, path: Path, names: str) -> int:
        import h5py

        key = next((key for key in CLASS_KEYS if key in handle), None)
        if key is None:
            raise SubmissionError(f"{case.name}: {path.name} has no class (dataset cls, cls_pred or cls_prob; "
                                  f"datasets found: {names}).")
        where = f"{case.name}: the class (dataset {key} in {path.name})"
        dataset = handle[key]
        if not isinstance(dataset, h5py.Dataset):
            raise SubmissionError(f"{where} is a group, not a dataset.")
        try:
            array = np.asarray(dataset[()])
        except (OSError, TypeError, ValueError) as error:
            raise SubmissionError(f"{where} cannot be read ({error}).") from None
        if array.size != 1:
            raise SubmissionError(f"{where} must hold one value, found {array.size} (shape {_shape_text(array.shape)}).")
        value = array.reshape(()).item()
        if key == "cls_prob":
            if isinstance(value, (bool, bytes, str)) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or not 0 <= value <= 1:
                raise SubmissionError(f"{where} is {_shown(value)}; it must be a probability between 0 and 1.")
            return int(value >= HIGH_RISK_PROBABILITY)
        if isinstance(value, (bytes, str)) or not isinstance(value, (bool, int, float)) or value not in (0, 1):
            raise SubmissionError(f"{where} is {_shown(value)}; it must be 0 (low risk) or 1 (high risk) "
                                  f"(a probability goes in cls_prob).")
        return int(value)

    def read_job_prediction(self, case: Case, truth: CaseTruth):
        settings = self.settings
        masks = {}
        for view, slug, expected in zip(VIEWS, (settings.longitudinal_output_socket, settings.transverse_output_socket),
                                        truth.shapes):
            where = f"{case.name}, {VIEW_NAMES[view]} mask"
            array, _ = read_image(case.image_file(slug), where)  # geometry unused: distances are in pixels
            if array.ndim == len(expected) + 1 and array.shape[0] == 1:
                array = array[0]  # a 2D image stored as one slice
            self.check_shape(where, array.shape, expected)
            masks[view] = self.decode_mask(where, array)
        slug = settings.risk_output_socket
        value = case.read_json(slug)
        if isinstance(value, bool):
            return masks, int(value)
        if isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= 1:
            return masks, int(value >= HIGH_RISK_PROBABILITY)
        raise SubmissionError(f"{case.name}, output {slug!r}: found {_shown(value)}; expected 0, 1, true, false or a "
                              f"probability of high risk between 0 and 1.")

    @staticmethod
    def check_shape(where: str, found: tuple[int, ...], expected: tuple[int, ...]) -> None:
        if tuple(found) != tuple(expected):
            raise SubmissionError(f"{where}: shape {_shape_text(found)}, expected {_shape_text(expected)} as in the "
                                  f"ground truth.")

    def decode_mask(self, where: str, array: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(vessel, plaque) of a mask in raw labels (0/128/255) or class indices (0/1/2, plaque =
        the plaque_index setting); an all-zero mask is both and empty either way."""
        array = np.asarray(array)
        if array.dtype.kind not in "biuf":
            raise SubmissionError(f"{where}: values of type {array.dtype}; expected a numeric label image.")
        plaque = self.settings.plaque_index
        masks = split_labels(array, 0, RAW_LABELS["vessel"], RAW_LABELS["plaque"])
        if masks is None:
            masks = split_labels(array, 0, 3 - plaque, plaque)
        if masks is None:
            raise SubmissionError(f"{where}: values {_shown_values(present_values(array))}; a mask holds either raw "
                                  f"labels (0, 128 plaque, 255 vessel) or class indices (0, {plaque} plaque, "
                                  f"{3 - plaque} vessel).")
        return masks

    def score_case(self, case: Case, prediction: Prediction, truth: CaseTruth) -> CaseResult:
        tolerance = self.settings.nsd_tolerance_px
        dsc, nsd = [], []
        for view, structure in PAIRS:
            index = STRUCTURES.index(structure)
            predicted, true = prediction.masks[view][index], prediction.truth_masks[view][index]
            dsc.append(dice(predicted, true))  # both empty 1.0, one empty 0.0
            nsd.append(normalized_surface_dice(predicted, true, tolerance))
        timing = job_timing(case.job) if case.job is not None else None
        return CaseResult(tuple(dsc), tuple(nsd), prediction.high_risk, timing)

    # ---- the leaderboard -----------------------------------------------------------------

    def score_aggregates(self, results: dict[str, CaseResult]) -> dict[str, Any]:
        case_ids = sorted(results)
        n = len(case_ids)
        y_true = np.array([self.ground_truth[c].high_risk for c in case_ids])
        y_pred = np.array([results[c].high_risk for c in case_ids])
        f1_low, f1_high = binary_f1_scores(y_true, y_pred)
        macro_f1 = (f1_low + f1_high) / 2.0
        score_cls = 100.0 * macro_f1

        components: dict[str, float] = {}
        structure_scores: dict[tuple[str, str], float] = {}
        for index, (view, structure) in enumerate(PAIRS):
            mean_dsc = math.fsum(results[c].dsc[index] for c in case_ids) / n
            mean_nsd = math.fsum(results[c].nsd[index] for c in case_ids) / n
            structure_scores[view, structure] = (mean_dsc + mean_nsd) / 2.0
            components[f"{view}_{structure}_dsc"] = mean_dsc
            components[f"{view}_{structure}_nsd"] = mean_nsd
            components[f"{view}_{structure}_score"] = 100.0 * structure_scores[view, structure]
        score_seg = 100.0 * 0.5 * sum(sum(STRUCTURE_WEIGHTS[s] * structure_scores[v, s] for s in STRUCTURES)
                                      for v in VIEWS)
        score_without_time = (WEIGHT_CLS * score_cls + WEIGHT_SEG * score_seg) / (WEIGHT_CLS + WEIGHT_SEG)

        seconds, source = total_processing_time([results[c].timing for c in case_ids])
        baseline = self.settings.baseline_time_seconds
        if seconds is None:
            reason = f"no timing information ({source}); rank on aggregates.score_without_time"
            score_time = score_total = processing_time = Undefined(reason)
        elif baseline is None:  # cases() stops before scoring; kept for direct calls
            raise SetupError("config.json sets no baseline_time_seconds, which the time score needs.")
        else:
            processing_time = seconds
            score_time = time_score(seconds, baseline)
            score_total = WEIGHT_CLS * score_cls + WEIGHT_SEG * score_seg + WEIGHT_TIME * score_time
        log(f"Processing time: {source}.")

        return {
            "aggregates": {
                "score_total": score_total,
                "score_without_time": score_without_time,
                "score_cls": score_cls,
                "score_seg": score_seg,
                "score_time": score_time,
                "macro_f1": macro_f1,
                "f1_low_risk": f1_low,
                "f1_high_risk": f1_high,
                **components,
                "processing_time_seconds": processing_time,
                "baseline_time_seconds": baseline if baseline is not None else Undefined(
                    "config.json sets no baseline_time_seconds"),
            },
            "timing": {"source": source, "jobs": sum(results[c].timing is not None for c in case_ids)},
            "counts": {"cases": n, "predicted_high_risk": int(y_pred.sum())},
        }

    # ---- synthetic data ------------------------------------------------------------------

    @classmethod
    def synthesize(cls, out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
        """An algorithm-phase submission (images and JSON per job, exec_duration) of 8 small cases;
        write_dataset makes the predictions-file kind and other sizes."""
        write_dataset(out_dir, seed=seed, cases=8 if cases is None else cases, phase="algorithm")

    @classmethod
    def invalid_examples(cls, input_dir: Path) -> dict[str, dict[str, bytes | None]]:
        """For the first case: a longitudinal mask one column short, a stray value in the
        transverse mask, the transverse image removed, the class as text, the class file removed;
        and a job removed from predictions.json."""
        predictions = json.loads((input_dir / "predictions.json").read_text())
        first = min(predictions, key=lambda job: _input_name(job, "longitudinal-carotid-ultrasound"))
        pk = first["pk"]
        outputs = {o["socket"]["slug"]: o for o in first["outputs"]}

        def image_path(slug):
            folder = input_dir / pk / "output" / outputs[slug]["socket"]["relative_path"]
            (path,) = [p for p in folder.iterdir() if p.is_file()]
            return path

        long_path = image_path("longitudinal-carotid-segmentation")
        trans_path = image_path("transverse-carotid-segmentation")
        long_array, _ = read_image(long_path, "example")
        trans_array, _ = read_image(trans_path, "example")
        stray = trans_array.copy()
        stray[stray.shape[0] // 2, stray.shape[1] // 2] = 7
        risk = f"{pk}/output/{outputs['plaque-risk']['socket']['relative_path']}"
        rest = [job for job in predictions if job["pk"] != pk]
        return {
            "wrong-shape": {long_path.relative_to(input_dir).as_posix(): _image_bytes(long_array[:, :-1], long_path.suffix)},
            "unknown-mask-values": {trans_path.relative_to(input_dir).as_posix(): _image_bytes(stray, trans_path.suffix)},
            "missing-view": {trans_path.relative_to(input_dir).as_posix(): None},
            "malformed-class": {risk: b'"high"\n'},
            "missing-class": {risk: None},
            "missing-case": {"predictions.json": (json.dumps(rest, indent=2) + "\n").encode()},
        }


# ---- synthetic data ------------------------------------------------------------------------------


def _input_name(job: dict, slug: str) -> str:
    return next(v["image"]["name"] for v in job["inputs"] if (v.get("socket") or v.get("interface"))["slug"] == slug)


def _image_bytes(array: np.ndarray, suffix: str) -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"image{suffix}"
        _write_image(path, array)
        return path.read_bytes()


def _write_image(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix in (".tif", ".tiff"):
        import tifffile

        tifffile.imwrite(path, array, compression="zlib")
    else:
        import SimpleITK as sitk

        sitk.WriteImage(sitk.GetImageFromArray(array), str(path), True)


def _render_view(view: str, shape: tuple[int, int], geometry: dict[str, float]) -> np.ndarray:
    """A raw label image: the vessel (255) as a wavy band (longitudinal) or an ellipse
    (transverse), the plaque (128) an ellipse on its wall, inside the vessel."""
    height, width = shape
    yy, xx = np.mgrid[:height, :width].astype(np.float64)
    label = np.zeros(shape, dtype=np.uint8)
    if view == "long":
        centre = geometry["cy"] * height + geometry["amp"] * height * np.sin(xx / width * 2 * np.pi * geometry["freq"])
        half = geometry["ry"] * height
        vessel = np.abs(yy - centre) <= half
        wall_y = geometry["cy"] * height + (half if geometry["side"] > 0 else -half)
        plaque_centre = (wall_y, geometry["px"] * width)
    else:
        cy, cx, ry, rx = geometry["cy"] * height, geometry["cx"] * width, geometry["ry"] * height, geometry["rx"] * width
        vessel = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
        angle = geometry["angle"]
        plaque_centre = (cy + ry * np.sin(angle), cx + rx * np.cos(angle))
    label[vessel] = RAW_LABELS["vessel"]
    if geometry["plaque"]:
        py, px = plaque_centre
        plaque = ((yy - py) / (geometry["pry"] * height)) ** 2 + ((xx - px) / (geometry["prx"] * width)) ** 2 <= 1
        label[plaque & vessel] = RAW_LABELS["plaque"]
    return label


def _random_geometry(rng: np.random.Generator, view: str) -> dict[str, float]:
    geometry = {"plaque": float(rng.random() < 0.85), "pry": rng.uniform(0.06, 0.14), "prx": rng.uniform(0.06, 0.2)}
    if view == "long":
        geometry.update(cy=rng.uniform(0.4, 0.6), amp=rng.uniform(0.0, 0.05), freq=rng.uniform(0.3, 1.2),
                        ry=rng.uniform(0.12, 0.22), side=float(rng.choice([-1, 1])), px=rng.uniform(0.25, 0.75))
    else:
        geometry.update(cy=rng.uniform(0.4, 0.6), cx=rng.uniform(0.4, 0.6), ry=rng.uniform(0.2, 0.3),
                        rx=rng.uniform(0.15, 0.25), angle=rng.uniform(0, 2 * np.pi))
    return geometry


def _jitter(rng: np.random.Generator, geometry: dict[str, float]) -> dict[str, float]:
    """A prediction's geometry: every parameter moved a little; the plaque sometimes missed or invented."""
    jittered = {key: value * rng.uniform(0.93, 1.07) if key not in ("plaque", "side") else value
                for key, value in geometry.items()}
    if rng.random() < 0.12:
        jittered["plaque"] = 1.0 - geometry["plaque"]
    return jittered


def write_dataset(out_dir: Path, seed: int = 0, cases: int = 8, phase: str = "algorithm",
                  shape: tuple[int, int] = (96, 128), seconds_per_case: float = 5.0) -> None:
    """Ground truth (NNNN_label.h5 + config.json) and a submission of the given phase:
    "algorithm" (predictions.json; images .mha/.tif in raw labels or indices; the class as 0/1,
    boolean or probability) or "file" (NNNN_pred.h5 at two depths, with every dataset name and
    mask encoding of csv2026.md). Predictions are the truth's geometry jittered; about 75% of
    the classes right."""
    import h5py

    if phase not in ("algorithm", "file"):
        raise ValueError(f"phase must be 'algorithm' or 'file', not {phase!r}")
    rng = np.random.default_rng(seed)
    truth_dir, input_dir = out_dir / "ground-truth", out_dir / "input"
    truth_dir.mkdir(parents=True, exist_ok=True)
    input_dir.mkdir(parents=True, exist_ok=True)
    synthetic.write_json(truth_dir / "config.json", {"baseline_time_seconds": round(seconds_per_case * cases, 3),
                                                     "nsd_tolerance_px": 3})
    risks = rng.random(cases) < 0.35
    risks[0], risks[-1] = False, True  # both classes, always
    jobs = []
    for number in range(cases):
        case_id = f"{number + 1:04d}"
        truth, prediction = {}, {}
        for view in VIEWS:
            geometry = _random_geometry(rng, view)
            truth[view] = _render_view(view, shape, geometry)
            prediction[view] = _render_view(view, shape, _jitter(rng, geometry))
        high_risk = int(risks[number])
        probability = float(np.clip(rng.normal(0.7 if high_risk else 0.3, 0.2), 0, 1).round(3))
        with h5py.File(truth_dir / f"{case_id}{LABEL_SUFFIX}", "w") as handle:
            for view in VIEWS:
                handle.create_dataset(MASK_KEYS[view][0], data=truth[view], compression="gzip")
            handle.create_dataset("cls", data=np.uint8(high_risk))
        encoded = {view: _encode(prediction[view], as_indices=number % 2 == 1) for view in VIEWS}
        if phase == "file":
            folder = input_dir / ("preds" if number % 2 == 0 else "preds/more")
            folder.mkdir(parents=True, exist_ok=True)
            key_set = number % 3  # 0: long_mask + cls; 1: pred_long + cls_pred; 2: long_mask + cls_prob
            with h5py.File(folder / f"{case_id}{PREDICTION_SUFFIX}", "w") as handle:
                for view in VIEWS:
                    handle.create_dataset(MASK_KEYS[view][1 if key_set == 1 else 0], data=encoded[view],
                                          compression="gzip")
                if key_set == 2:
                    handle.create_dataset("cls_prob", data=np.float32(probability))
                else:
                    handle.create_dataset(CLASS_KEYS[key_set], data=np.array([probability >= 0.5], dtype=np.uint8))
            continue
        pk = synthetic.job_pk(rng)
        outputs = []
        for view, slug in zip(VIEWS, ("longitudinal-carotid-segmentation", "transverse-carotid-segmentation")):
            suffix = ".tif" if number % 3 == 2 else ".mha"
            name = f"{uuid.UUID(bytes=rng.bytes(16), version=4)}{suffix}"
            relative = f"images/{slug}"
            _write_image(input_dir / pk / "output" / relative / name, encoded[view])
            outputs.append({"pk": 0, "file": None, "value": None, "image": {"pk": f"image-{slug}", "name": name},
                            "socket": synthetic.socket(slug, "Segmentation", "Image", relative)})
        risk_value = (int(probability >= 0.5), bool(probability >= 0.5), probability)[number % 3]
        synthetic.write_output(input_dir, pk, "plaque-risk.json", risk_value)
        outputs.append(synthetic.file_output("plaque-risk", "plaque-risk.json", kind="Anything"))
        inputs = [synthetic.image_input("longitudinal-carotid-ultrasound", f"{case_id}.mha",
                                        "images/longitudinal-carotid-ultrasound"),
                  synthetic.image_input("transverse-carotid-ultrasound", f"{case_id}_transverse.mha",
                                        "images/transverse-carotid-ultrasound")]
        jobs.append(synthetic.job(pk, inputs, outputs, seconds=float(rng.uniform(0.6, 1.4) * seconds_per_case)))
    if phase == "algorithm":
        order = rng.permutation(len(jobs))  # the platform lists jobs in no particular order
        synthetic.write_predictions(input_dir, [jobs[i] for i in order])


def _encode(label: np.ndarray, as_indices: bool) -> np.ndarray:
    """A raw label image (0/128/255) as the official baseline writes indices (1 plaque, 2 vessel)."""
    if not as_indices:
        return label
    indices = np.zeros_like(label)
    indices[label == RAW_LABELS["plaque"]] = 1
    indices[label == RAW_LABELS["vessel"]] = 2
    return indices
