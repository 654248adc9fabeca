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

What is read, all through evaluation.reading: the ground truth's NNNN_label.h5 (listed at
start, each read whole by the worker scoring its case, before the prediction); an algorithm job's
two mask images (header first, decoded only once their shape is the ground truth's) and its
plaque-risk JSON; a predictions-file submission's NNNN_pred.h5 (the file's own datasets only,
masks shape-checked and the class size-checked before a byte is read). The example generators
are in evaluation/challenges/csv2026/examples.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.errors import SetupError, SubmissionError
from evaluation.leaderboard.rules import Key, OrderedRanking
from evaluation.framework import Evaluation, log
from evaluation.grand_challenge import Case, Job, Undefined, ground_truth_files, list_submission_files
from evaluation.phase.columns import ABSOLUTE, Column, Leaderboard, leaderboard_paths
from evaluation.metrics.overlap import dice
from evaluation.metrics.surface import normalized_surface_dice
from evaluation.reading.files import Origin
from evaluation.reading.hdf5 import Hdf5Dataset, Hdf5File, open_hdf5
from evaluation.reading.images import shape_text
from evaluation.reading.values import is_finite_number, one_line_values, shown
from evaluation.settings import CASE_INPUT, IMAGE_OUTPUT, JSON_OUTPUT, Settings, setting

# The packages of requirements.txt this challenge's image installs (its pins stay there), numpy's dependencies
# included: mask images (SimpleITK), NNNN_label.h5 ground truth (h5py), surface distances (cv2). build.sh
# installs these alone; tests/test_image_requirements.py scores the bundled example with every other package
# blocked.
RUNTIME_PACKAGES = ("numpy", "SimpleITK", "h5py", "opencv-python-headless")

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


@dataclass(frozen=True)
class CaseTruth:
    """One case's NNNN_label.h5, read whole in the process scoring the case."""

    high_risk: int  # cls: 0 low risk (Plaque-RADS 2), 1 high risk (Plaque-RADS 3-4)
    labels: dict[str, "LabelMap"]  # view -> its label map

    @property
    def shapes(self) -> tuple[tuple[int, ...], ...]:  # in VIEWS order
        return tuple(self.labels[view].array.shape for view in VIEWS)


@dataclass(frozen=True)
class JobTiming:
    """What a job says of its duration: exec_duration in seconds, or its instants (aware, a
    naive one read as UTC), kept as datetimes so that a span is exact to the microsecond."""

    exec_seconds: float | None
    started: datetime | None
    completed: datetime | None


@dataclass(frozen=True)
class LabelMap:
    """One view's mask as decoded, every pixel checked to be background (0), vessel or plaque.
    Scoring compares the structures in this form, within the box where either label map has a
    label (the rest is background in both), so no full-size boolean mask is ever made."""

    array: np.ndarray  # 2D, the values as read
    vessel: int  # the value of a vessel pixel (255 raw, or a class index)
    plaque: int

    def value(self, structure: str) -> int:
        return self.vessel if structure == "vessel" else self.plaque

    def masks(self) -> tuple[np.ndarray, np.ndarray]:
        """(vessel, plaque) as full-size boolean masks."""
        return self.array == self.vessel, self.array == self.plaque


@dataclass(frozen=True)
class Prediction:
    masks: dict[str, LabelMap]  # view -> its label map
    high_risk: int
    timing: JobTiming | None  # None: a predictions-file submission


@dataclass(frozen=True)
class CaseResult:
    dsc: tuple[float, ...]  # in PAIRS order
    nsd: tuple[float, ...]
    high_risk: int  # predicted
    timing: JobTiming | None  # None: a predictions-file submission
    true_high_risk: int  # the ground truth's cls (read with the case, in its worker)


# ---- pure helpers ----------------------------------------------------------------------------


def binary_f1_scores(y_true: np.ndarray, y_pred: np.ndarray) -> tuple[float, float]:
    """(F1 of class 0, F1 of class 1), scikit-learn's per-class F1; a class with no true and no
    predicted case has F1 0 (zero_division=0; the ground truth has both classes, so only a
    direct call can meet it)."""
    y_true, y_pred = np.asarray(y_true, dtype=int), np.asarray(y_pred, dtype=int)

    def f1(label: int) -> float:  # 2 TP / (true + predicted), as scikit-learn divides
        true, predicted = y_true == label, y_pred == label
        denominator = float(true.sum() + predicted.sum())
        return 2.0 * float((true & predicted).sum()) / denominator if denominator else 0.0

    return f1(0), f1(1)


def time_score(seconds: float, baseline: float) -> float:
    """100 × (2B − t_clip) / (2B − 2B/3), t_clip = clip(t, 2B/3, 2B): 100 at or below 2B/3, 0 at or above 2B."""
    fastest, slowest = 2.0 * baseline / 3.0, 2.0 * baseline
    clipped = min(max(seconds, fastest), slowest)
    return 100.0 * (slowest - clipped) / (slowest - fastest)


def total_processing_time(timings: list[JobTiming | None]) -> tuple[float | None, str]:
    """t and how it was found: the sum of the jobs' exec_duration when every job has one, else
    the span from the earliest started_at to the latest completed_at when every job has both
    (older predictions.json), else None with the reason. The span is a difference of instants
    (timedelta, whole microseconds), so it is exact before its one rounding to a float."""
    if not timings or any(timing is None for timing in timings):
        return None, "a predictions-file submission carries no processing time"
    if all(timing.exec_seconds is not None for timing in timings):
        return math.fsum(timing.exec_seconds for timing in timings), "sum of the jobs' exec_duration"
    if all(timing.started is not None and timing.completed is not None for timing in timings):
        span = max(timing.completed for timing in timings) - min(timing.started for timing in timings)
        if span >= timedelta(0):
            return span.total_seconds(), "span from the earliest started_at to the latest completed_at"
        return None, "the jobs' completed_at precede their started_at"
    return None, "not every job carries exec_duration, nor started_at and completed_at"


def resampled_processing_time(timings: list[JobTiming | None], counts: np.ndarray) -> np.ndarray:
    """total_processing_time of each materialised resample (case j drawn counts[r, j] times),
    NaN where it gives None. Which rule applies depends on the cases drawn: the sum of
    exec_duration when every drawn case has one (each counted as often as drawn), else the span
    from the earliest started_at to the latest completed_at of the drawn cases, exact in
    microseconds before one division (timedelta.total_seconds does the same)."""
    counts = np.asarray(counts, dtype=np.int64)
    drawn = counts > 0
    present = [timing is not None for timing in timings]
    has_exec = np.array([p and t.exec_seconds is not None for p, t in zip(present, timings)], dtype=bool)
    has_span = np.array([p and t.started is not None and t.completed is not None for p, t in zip(present, timings)],
                        dtype=bool)
    seconds = np.full(counts.shape[0], np.nan)
    by_exec = ~(drawn & ~has_exec).any(axis=1)
    exec_seconds = np.array([t.exec_seconds if e else 0.0 for t, e in zip(timings, has_exec)], dtype=np.float64)
    seconds[by_exec] = counts[by_exec] @ exec_seconds
    by_span = ~by_exec & ~(drawn & ~has_span).any(axis=1)
    if by_span.any():
        origin = min(t.started for t, s in zip(timings, has_span) if s)
        microsecond = timedelta(microseconds=1)
        started = np.array([(t.started - origin) // microsecond if s else 0 for t, s in zip(timings, has_span)],
                           dtype=np.int64)
        completed = np.array([(t.completed - origin) // microsecond if s else 0 for t, s in zip(timings, has_span)],
                             dtype=np.int64)
        rows = drawn[by_span]
        span = (np.where(rows, completed, np.iinfo(np.int64).min).max(axis=1)
                - np.where(rows, started, np.iinfo(np.int64).max).min(axis=1))
        seconds[by_span] = np.where(span >= 0, span / 1e6, np.nan)  # negative: None ("precede")
    return seconds


def job_timing(job: Job) -> JobTiming:
    def utc(instant: datetime | None) -> datetime | None:
        if instant is not None and instant.tzinfo is None:  # the platform writes UTC ("Z")
            return instant.replace(tzinfo=timezone.utc)
        return instant

    return JobTiming(job.exec_duration_seconds, utc(job.started_at), utc(job.completed_at))


def label_map(array: np.ndarray, vessel: int, plaque: int) -> LabelMap | None:
    """The label map when every pixel is background (0), vessel or plaque, else None. Three
    comparisons counted (counting booleans is fast, counting other nonzero values is not), no
    sort: the distinct values are listed only for an error message."""
    counted = np.count_nonzero(array == 0) + np.count_nonzero(array == vessel) + np.count_nonzero(array == plaque)
    return LabelMap(array, vessel, plaque) if counted == array.size else None


def labelled_box(first: np.ndarray, second: np.ndarray) -> tuple[slice, slice]:
    """The bounding box of the pixels nonzero in either of two 2D arrays of one shape (an empty
    box when there is none): every vessel or plaque pixel of either lies inside it."""
    if first.dtype == second.dtype == np.uint8:
        either = first | second
    else:
        either = (first != 0) | (second != 0)
    rows, columns = np.flatnonzero(either.any(axis=1)), np.flatnonzero(either.any(axis=0))
    if rows.size == 0:
        return slice(0, 0), slice(0, 0)
    return slice(int(rows[0]), int(rows[-1]) + 1), slice(int(columns[0]), int(columns[-1]) + 1)


def structure_scores(predicted: LabelMap, true: LabelMap, tolerance: float) -> tuple[tuple[float, float], ...]:
    """(DSC, NSD) of each structure (STRUCTURES order) of one view. Both masks are cropped to
    the box where either label map has a label: outside it both are background, so the counts
    of Dice and of the NSD (whose borders treat pixels outside the image as background) are
    those of the whole image."""
    box = labelled_box(predicted.array, true.array)
    predicted_box, true_box = predicted.array[box], true.array[box]
    scores = []
    for structure in STRUCTURES:
        p, t = predicted_box == predicted.value(structure), true_box == true.value(structure)
        scores.append((dice(p, t), normalized_surface_dice(p, t, tolerance)))  # both empty: 1.0; one: 0.0
    return tuple(scores)


# Null without timing (a predictions-file submission, or a job without its time; metrics.json
# notes why): the timed leaderboard reads them, but they cannot be ranked paths.
TIMED_PATHS = ("aggregates.score_total", "aggregates.score_time", "aggregates.processing_time_seconds")


def csv2026_leaderboard(timed: bool) -> Leaderboard:
    """Ranked on S_total when the phase is timed, else on score_without_time (csv2026.md); the
    components and the eight mean DSC/NSD shown beside it, excluded from ranking. A phase is
    timed when its config.json sets baseline_time_seconds: an algorithm phase, whose jobs carry
    their time, cannot run without it, and a phase without timing has no use for it."""
    if timed:
        score = Column("Total score S_total = 0.4 S_cls + 0.4 S_seg + 0.2 S_time", "aggregates.score_total", "desc")
    else:
        score = Column("Score without time = (0.4 S_cls + 0.4 S_seg) / 0.8", "aggregates.score_without_time", "desc")
    timing = (
        Column("Time score S_time", "aggregates.score_time", "desc", exclude_from_ranking=True),
        Column("Score without time", "aggregates.score_without_time", "desc", exclude_from_ranking=True),
        Column("Processing time (s)", "aggregates.processing_time_seconds", "asc", exclude_from_ranking=True),
    )
    return Leaderboard(score=score, decimal_places=2, scoring_method=ABSOLUTE, extra_columns=(
        Column("Classification score S_cls", "aggregates.score_cls", "desc", exclude_from_ranking=True),
        Column("Segmentation score S_seg", "aggregates.score_seg", "desc", exclude_from_ranking=True),
        *(timing if timed else ()),
        Column("Risk class macro F1", "aggregates.macro_f1", "desc", exclude_from_ranking=True),
        *(Column(f"{VIEW_NAMES[view].capitalize()} {structure} {metric.upper()}",
                 f"aggregates.{view}_{structure}_{metric}", "desc", exclude_from_ranking=True)
          for view, structure in PAIRS for metric in ("dsc", "nsd")),
    ))


class Csv2026(Evaluation):
    name = "csv2026"
    title = "CSV 2026: carotid vessel/plaque segmentation and plaque risk in ultrasound (ISBI 2026)"
    settings_class = Csv2026Settings
    case_label = "Case"
    # ~10 ms per case at 512²: two workers were 1.2-1.3x faster on 300 cases, but cost more than
    # they saved on the 8 small cases of the bundled example (benchmarks/workers.py).
    min_cases_per_worker = 16
    leaderboards = (csv2026_leaderboard(timed=Csv2026Settings().baseline_time_seconds is not None),)
    value_titles = {column.path: column.title for timed in (True, False)
                    for column in (csv2026_leaderboard(timed).score, *csv2026_leaderboard(timed).extra_columns)}
    # Always finite: every path of both leaderboards but TIMED_PATHS, and a few more.
    ranked_paths = tuple(path for path in leaderboard_paths(
        (csv2026_leaderboard(timed=True), csv2026_leaderboard(timed=False)),
        "aggregates.f1_low_risk", "aggregates.f1_high_risk",
        *(f"aggregates.{view}_{structure}_score" for view, structure in PAIRS)) if path not in TIMED_PATHS)

    # The rule: S_total; a predictions-file phase (no submission has timing) ranks the score
    # without time (csv2026.md, "Leaderboard").
    final_rankings = (OrderedRanking("score_total", (Key("aggregates.score_total", "desc"),),
                                     fallback=(Key("aggregates.score_without_time", "desc"),)),)

    @classmethod
    def phase_leaderboards(cls, settings: Csv2026Settings) -> tuple[Leaderboard, ...]:
        return (csv2026_leaderboard(timed=settings.baseline_time_seconds is not None),)

    # ---- ground truth --------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, Path]:
        """{case id: its NNNN_label.h5} (datasets long_mask, trans_mask: 0/128/255, and cls: 0/1).
        Only listed here: each file is read by the worker scoring its case (case_truth), and the
        classes are checked to hold both risks once every case is scored (metrics)."""
        files = ground_truth_files(directory, LABEL_SUFFIX)
        if not files:
            raise SetupError(f"The ground-truth folder {directory} has no NNNN{LABEL_SUFFIX} files.")
        return {path.name[: -len(LABEL_SUFFIX)]: path for path in files}

    def case_truth(self, case: Case) -> CaseTruth:
        return self.read_truth(self.ground_truth[case.case_id])

    def read_truth(self, path: Path) -> CaseTruth:
        """A case's ground truth: its class and its two label maps, the file opened once."""
        with open_hdf5(self.truth, path, "Ground truth") as h5:
            labels = {}
            for view in VIEWS:
                dataset = self.truth_mask(h5, view)
                array = dataset.read()
                labels[view] = label_map(array, RAW_LABELS["vessel"], RAW_LABELS["plaque"])
                if labels[view] is None:
                    values = one_line_values(np.unique(array).tolist())
                    self.truth.fail(f"Ground truth {h5.name}, {MASK_KEYS[view][0]}: values {values}; the labels are 0, "
                                    f"128 (plaque) and 255 (vessel).")
            high_risk = self.truth_class(h5)
        return CaseTruth(high_risk, labels)

    def truth_mask(self, h5: Hdf5File, view: str) -> Hdf5Dataset:
        key = MASK_KEYS[view][0]
        if not h5.has(key):
            self.truth.fail(f"Ground truth {h5.name} has no 2D dataset {key}.")
        dataset = h5.dataset(key, "Ground truth")
        if len(dataset.shape) != 2:
            self.truth.fail(f"Ground truth {h5.name} has no 2D dataset {key}.")
        return dataset

    def truth_class(self, h5: Hdf5File) -> int:
        if not h5.has("cls"):
            self.truth.fail(f"Ground truth {h5.name} has no single-valued dataset cls.")
        dataset = h5.dataset("cls", "Ground truth")
        if dataset.size != 1:
            self.truth.fail(f"Ground truth {h5.name} has no single-valued dataset cls.")
        value = dataset.read(max_size=1).reshape(()).item()
        if value not in (0, 1):
            self.truth.fail(f"Ground truth {h5.name}: cls is {shown(value)}; it must be 0 (low risk) or 1 (high risk).")
        return int(value)

    # ---- the submission ------------------------------------------------------------------

    def file_cases(self, input_dir: Path) -> list[tuple[str, Path]]:
        """Predictions-file phase: one NNNN_pred.h5 per case, at any depth of the unpacked archive."""
        found, ignored = [], []
        root = Origin.submission(input_dir).real_root
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
        if all(case.job is not None for case in cases):  # an algorithm phase: the jobs may carry their time
            seconds, _ = total_processing_time([job_timing(case.job) for case in cases])
            if seconds is not None and self.settings.baseline_time_seconds is None:
                raise SetupError("config.json sets no baseline_time_seconds, which the time score of this "
                                 "algorithm phase needs (the submission's jobs carry their processing time).")
        return cases

    def read_job_prediction(self, case: Case, truth: CaseTruth) -> Prediction:
        """Two mask images (header first: decoded only once its shape is the ground truth's; the
        geometry is unused, distances are in pixels) and the risk class from its JSON output."""
        settings = self.settings
        masks = {}
        for view, slug, expected in zip(VIEWS, (settings.longitudinal_output_socket, settings.transverse_output_socket),
                                        truth.shapes):
            where = f"{case.name}, {VIEW_NAMES[view]} mask"
            # case.image(slug), but its messages named by the view, as in the predictions-file phase
            image = case.image(slug, where)
            masks[view] = self.decode_mask(where, image.read(expected))
        slug = settings.risk_output_socket
        value = case.read_json(slug)
        if isinstance(value, bool):
            high_risk = int(value)
        elif is_finite_number(value) and 0 <= value <= 1:
            high_risk = int(value >= HIGH_RISK_PROBABILITY)
        else:
            raise SubmissionError(f"{case.name}, output {slug!r}: found {shown(value)}; expected 0, 1, true, false "
                                  f"or a probability of high risk between 0 and 1.")
        return Prediction(masks, high_risk, job_timing(case.job))

    def read_file_prediction(self, case: Case, truth: CaseTruth) -> Prediction:
        """The case's NNNN_pred.h5: one mask dataset per view, of the ground truth's shape, and
        the class."""
        with open_hdf5(case.origin, case.source, case.name) as h5:
            masks = {view: self.read_h5_mask(case, h5, view, expected) for view, expected in zip(VIEWS, truth.shapes)}
            high_risk = self.read_h5_class(case, h5)
        return Prediction(masks, high_risk, None)

    def read_h5_mask(self, case: Case, h5: Hdf5File, view: str, expected: tuple[int, ...]):
        where = f"{case.name}, {VIEW_NAMES[view]} mask"
        keys = [key for key in MASK_KEYS[view] if h5.has(key)]
        if not keys:
            raise SubmissionError(f"{where}: {h5.name} has no dataset {' or '.join(MASK_KEYS[view])} "
                                  f"(datasets found: {h5.names_text()}).")
        if len(keys) > 1:
            raise SubmissionError(f"{where}: {h5.name} holds both {keys[0]} and {keys[1]}; keep one.")
        return self.decode_mask(where, h5.dataset(keys[0], where).read(expected_shape=expected))

    def read_h5_class(self, case: Case, h5: Hdf5File) -> int:
        key = next((key for key in CLASS_KEYS if h5.has(key)), None)
        if key is None:
            raise SubmissionError(f"{case.name}: {h5.name} has no class (dataset cls, cls_pred or cls_prob; "
                                  f"datasets found: {h5.names_text()}).")
        dataset = h5.dataset(key, f"{case.name}, class")
        array = dataset.read(max_size=1)
        if array.size != 1:  # an empty array; a larger one is refused unread
            raise SubmissionError(f"{dataset.where} must hold one value, found {array.size} (shape "
                                  f"{shape_text(array.shape)}).")
        value = array.reshape(()).item()
        if key == "cls_prob":
            if isinstance(value, bool) or not is_finite_number(value) or not 0 <= value <= 1:
                raise SubmissionError(f"{dataset.where} is {shown(value)}; it must be a probability between 0 and 1.")
            return int(value >= HIGH_RISK_PROBABILITY)
        if value not in (0, 1):
            raise SubmissionError(f"{dataset.where} is {shown(value)}; it must be 0 (low risk) or 1 (high risk) "
                                  f"(a probability goes in cls_prob).")
        return int(value)

    def decode_mask(self, where: str, array: np.ndarray) -> LabelMap:
        """The label map of a mask in raw labels (0/128/255) or class indices (0/1/2, plaque =
        the plaque_index setting); an all-zero mask is both and empty either way."""
        plaque = self.settings.plaque_index
        masks = label_map(array, RAW_LABELS["vessel"], RAW_LABELS["plaque"])
        if masks is None:
            masks = label_map(array, 3 - plaque, plaque)
        if masks is None:
            raise SubmissionError(f"{where}: values {one_line_values(np.unique(array).tolist())}; a mask holds either "
                                  f"raw labels (0, 128 plaque, 255 vessel) or class indices (0, {plaque} plaque, "
                                  f"{3 - plaque} vessel).")
        return masks

    def score_case(self, case: Case, prediction: Prediction, truth: CaseTruth) -> CaseResult:
        tolerance = self.settings.nsd_tolerance_px
        scores = [score for view in VIEWS
                  for score in structure_scores(prediction.masks[view], truth.labels[view], tolerance)]  # PAIRS order
        return CaseResult(tuple(dsc for dsc, _ in scores), tuple(nsd for _, nsd in scores), prediction.high_risk,
                          prediction.timing, truth.high_risk)

    # ---- the leaderboard -----------------------------------------------------------------

    def metrics(self, results: dict[str, CaseResult]) -> dict[str, Any]:
        """The whole ground truth's classes are known once every case is scored: checked here,
        not in score_aggregates, which the final ranking's resamples (one class drawn, F1 0 for
        the other, as scikit-learn's zero_division=0) must be able to reach."""
        classes = {result.true_high_risk for result in results.values()}
        if classes != {0, 1}:
            raise SetupError(f"The ground truth must hold both low-risk and high-risk cases (macro F1 averages the "
                             f"F1 of both classes); all {len(results)} case(s) have cls {next(iter(classes), 'none')}.")
        return super().metrics(results)

    def score_aggregates(self, results: dict[str, CaseResult]) -> dict[str, Any]:
        case_ids = sorted(results)
        n = len(case_ids)
        y_true = np.array([results[c].true_high_risk for c in case_ids])
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

    # ---- the final ranking's statistics -----------------------------------------------------

    def aggregate(self, results: dict[str, CaseResult], counts: np.ndarray) -> dict[str, np.ndarray]:
        """score_without_time, and score_total when metrics.json has it (timing and a baseline),
        on bootstrap resamples of the cases: score_aggregates' expressions with every case
        weighted by counts[r, j]. Means of DSC/NSD are weighted means; the macro F1 comes from
        weighted confusion counts (scikit-learn's per-class F1, 0 for a class neither true nor
        predicted in the resample); the time is total_processing_time on the drawn cases."""
        case_ids = sorted(results)
        counts = np.asarray(counts, dtype=np.int64)
        weights = counts.astype(np.float64)
        cases = weights.sum(axis=1)  # n of the materialised resample

        y_true = np.array([results[c].true_high_risk for c in case_ids], dtype=bool)
        y_pred = np.array([results[c].high_risk for c in case_ids], dtype=bool)
        f1 = []
        for true, predicted in ((~y_true, ~y_pred), (y_true, y_pred)):  # class 0, class 1
            hits = weights @ (true & predicted).astype(np.float64)
            denominator = weights @ true.astype(np.float64) + weights @ predicted.astype(np.float64)
            f1.append(np.divide(2.0 * hits, denominator, out=np.zeros_like(hits), where=denominator > 0))
        score_cls = 100.0 * ((f1[0] + f1[1]) / 2.0)

        mean_dsc = (weights @ np.array([results[c].dsc for c in case_ids], dtype=np.float64)) / cases[:, None]
        mean_nsd = (weights @ np.array([results[c].nsd for c in case_ids], dtype=np.float64)) / cases[:, None]
        structure = (mean_dsc + mean_nsd) / 2.0  # columns in PAIRS order
        views = 0.0
        for view in VIEWS:
            views = views + sum(STRUCTURE_WEIGHTS[s] * structure[:, PAIRS.index((view, s))] for s in STRUCTURES)
        score_seg = 100.0 * 0.5 * views
        values = {"aggregates.score_without_time": (WEIGHT_CLS * score_cls + WEIGHT_SEG * score_seg)
                  / (WEIGHT_CLS + WEIGHT_SEG)}

        timings = [results[c].timing for c in case_ids]
        baseline = self.settings.baseline_time_seconds
        if total_processing_time(timings)[0] is not None and baseline is not None:  # else null in metrics.json
            seconds = resampled_processing_time(timings, counts)
            fastest, slowest = 2.0 * baseline / 3.0, 2.0 * baseline  # time_score, vectorised
            score_time = 100.0 * (slowest - np.clip(seconds, fastest, slowest)) / (slowest - fastest)
            values["aggregates.score_total"] = (WEIGHT_CLS * score_cls + WEIGHT_SEG * score_seg
                                                + WEIGHT_TIME * score_time)
        return values

    # ---- chart (only when structure_chart_file is set) -----------------------------------

    chart_builders = {"structure_chart_file": "structure_chart"}

    def structure_chart(self, results: dict[str, CaseResult], metrics: dict[str, Any]) -> dict:
        return structure_bar_chart(metrics["aggregates"], metrics["counts"]["cases"], self.settings.nsd_tolerance_px)


# ---- chart --------------------------------------------------------------------------------------


def structure_bar_chart(aggregates: dict[str, Any], cases: int, tolerance: float) -> dict:
    """Mean DSC and NSD of each view and structure: the aggregates.<view>_<structure>_dsc/_nsd
    values of metrics.json, as bars."""
    from evaluation import charts

    nsd = f"NSD ({tolerance:g} px)"
    bars = [charts.Bar(f"{VIEW_NAMES[view]} {structure}", metric, aggregates[f"{view}_{structure}_{key}"])
            for view, structure in PAIRS for metric, key in (("Dice", "dsc"), (nsd, "nsd"))]
    subtitle = (f"segmentation score {aggregates['score_seg']:.2f} (per view 0.4 vessel + 0.6 plaque of "
                f"(Dice + NSD) / 2); {cases} cases")
    about = ("Mean over the cases of the Dice similarity coefficient and of the normalised surface Dice of each "
             "view and structure: the aggregates.<view>_<structure>_dsc and _nsd values of metrics.json.")
    return charts.bar_chart(bars, title="CSV 2026: segmentation per view and structure", subtitle=subtitle,
                            x_title="view and structure", y_title="mean over cases", about=about)
