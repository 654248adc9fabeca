"""CSV 2026 scoring: each case's Dice and NSD per view and structure (per-case results), and the
one weighted aggregate every ranked value comes from, for metrics.json (the row of ones) and
for the final ranking's bootstrap (rows of counts):

    S_total = 0.4 S_cls + 0.4 S_seg + 0.2 S_time       (all on 0-100)
    S_cls   = 100 × macro F1 over the two classes
    S_seg   = 100 × ½ Σ_view (0.4 S_view,vessel + 0.6 S_view,plaque),  S_v,c = (mean DSC + mean NSD) / 2
    S_time  = 100 × (2B − clip(t, 2B/3, 2B)) / (2B − 2B/3)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import numpy as np

from evaluation.metrics.aggregation import weighted_mean, weighted_sum
from evaluation.metrics.confusion import f1_score
from evaluation.metrics.overlap import dice
from evaluation.metrics.resampling import whole_counts
from evaluation.metrics.surface import normalized_surface_dice
from evaluation.platform.predictions import JobTiming, timing_rule

from .predictions import Prediction
from .truth import PAIRS, STRUCTURES, VIEWS, CaseTruth, LabelMap

# The ranking rule's weights (seed text): not settings.
WEIGHT_CLS, WEIGHT_SEG, WEIGHT_TIME = 0.4, 0.4, 0.2
STRUCTURE_WEIGHTS = {"vessel": 0.4, "plaque": 0.6}


@dataclass(frozen=True)
class CaseResult:
    dsc: tuple[float, ...]  # in PAIRS order
    nsd: tuple[float, ...]
    high_risk: int  # predicted
    timing: JobTiming | None  # None: a predictions-file submission
    true_high_risk: int  # the ground truth's cls (read with the case, in its worker)


# ---- per case ----------------------------------------------------------------------------------


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
        # border pixels (MetricsReloaded's NSD); both empty: 1.0, one empty: 0.0
        scores.append((dice(p, t), normalized_surface_dice(p, t, tolerance, boundary="voxels")))
    return tuple(scores)


def score_case(prediction: Prediction, truth: CaseTruth, tolerance: float) -> CaseResult:
    scores = [score for view in VIEWS
              for score in structure_scores(prediction.masks[view], truth.labels[view], tolerance)]  # PAIRS order
    return CaseResult(tuple(dsc for dsc, _ in scores), tuple(nsd for _, nsd in scores), prediction.high_risk,
                      prediction.timing, truth.high_risk)


# ---- the processing time ---------------------------------------------------------------------
# What a job says of its time (JobTiming) and which rule gives t (timing_rule) are the platform's,
# shared by any challenge: evaluation/platform/predictions.py. Here: t on every bootstrap row.


def processing_time(timings: list[JobTiming | None], weights: np.ndarray) -> np.ndarray:
    """t of each row of case weights (case j counted weights[r, j] times), NaN where timing_rule
    finds none on the cases the row draws. The rule depends on the cases drawn: the sum of
    exec_duration when every drawn case has one (each counted as often as drawn; the row of ones
    sums with math.fsum, see weighted_sum), else the span from the earliest started_at to the
    latest completed_at of the drawn cases, exact in microseconds before one division (as
    timedelta.total_seconds divides)."""
    counts = whole_counts(weights, "a case")
    drawn = counts > 0
    present = [timing is not None for timing in timings]
    has_exec = np.array([p and t.exec_seconds is not None for p, t in zip(present, timings, strict=True)], dtype=bool)
    has_span = np.array([p and t.started is not None and t.completed is not None
                         for p, t in zip(present, timings, strict=True)], dtype=bool)
    seconds = np.full(counts.shape[0], np.nan)
    by_exec = ~(drawn & ~has_exec).any(axis=1)
    exec_seconds = np.array([t.exec_seconds if e else 0.0 for t, e in zip(timings, has_exec, strict=True)],
                            dtype=np.float64)
    if by_exec.any():
        seconds[by_exec] = weighted_sum(exec_seconds, counts[by_exec])
    by_span = ~by_exec & ~(drawn & ~has_span).any(axis=1)
    if by_span.any():
        origin = min(t.started for t, s in zip(timings, has_span, strict=True) if s)
        microsecond = timedelta(microseconds=1)
        started = np.array([(t.started - origin) // microsecond if s else 0
                            for t, s in zip(timings, has_span, strict=True)], dtype=np.int64)
        completed = np.array([(t.completed - origin) // microsecond if s else 0
                              for t, s in zip(timings, has_span, strict=True)], dtype=np.int64)
        rows = drawn[by_span]
        span = (np.where(rows, completed, np.iinfo(np.int64).min).max(axis=1)
                - np.where(rows, started, np.iinfo(np.int64).max).min(axis=1))
        seconds[by_span] = np.where(span >= 0, span / 1e6, np.nan)  # negative: none ("precede")
    return seconds


def time_score(seconds, baseline: float):
    """100 × (2B − t_clip) / (2B − 2B/3), t_clip = clip(t, 2B/3, 2B): 100 at or below 2B/3, 0 at
    or above 2B; t a number or an array."""
    fastest, slowest = 2.0 * baseline / 3.0, 2.0 * baseline
    return 100.0 * (slowest - np.clip(seconds, fastest, slowest)) / (slowest - fastest)


# ---- the one aggregate ------------------------------------------------------------------------


@dataclass(frozen=True)
class Scores:
    """Every value of the leaderboard, one entry per row of case weights."""

    f1: np.ndarray  # (rows, 2): F1 of low risk (0), of high risk (1)
    macro_f1: np.ndarray
    score_cls: np.ndarray
    dsc: np.ndarray  # (rows, len(PAIRS)): mean DSC of each view and structure
    nsd: np.ndarray
    structure_scores: np.ndarray  # 100 × (mean DSC + mean NSD) / 2
    score_seg: np.ndarray
    score_without_time: np.ndarray
    processing_time: np.ndarray | None  # None: the submission has no time, or no baseline to score it
    score_time: np.ndarray | None
    score_total: np.ndarray | None


def aggregate(results: list[CaseResult], weights: np.ndarray, baseline: float | None) -> Scores:
    """The scores of each row of case weights (rows, cases), whole numbers: the expressions of the
    rule above with every case counted as often as its weight says. Means of DSC/NSD are weighted
    means, the macro F1 comes from weighted confusion counts (scikit-learn's per-class F1, 0 for
    a class neither true nor predicted in the row), the time from the cases the row draws. The
    time scores are there when the submission has a time (timing_rule) and a baseline, NaN in a
    row without one."""
    weights = whole_counts(weights, "a case")
    f1 = f1_score([r.true_high_risk for r in results], [r.high_risk for r in results], weights, labels=[0, 1],
                  average=None, zero_division=0.0)
    macro_f1 = (f1[:, 0] + f1[:, 1]) / 2.0
    score_cls = 100.0 * macro_f1

    mean_dsc = weighted_mean(np.array([r.dsc for r in results], dtype=np.float64).reshape(-1, len(PAIRS)), weights)
    mean_nsd = weighted_mean(np.array([r.nsd for r in results], dtype=np.float64).reshape(-1, len(PAIRS)), weights)
    structure = (mean_dsc + mean_nsd) / 2.0  # columns in PAIRS order
    views = 0.0
    for view in VIEWS:
        views = views + sum(STRUCTURE_WEIGHTS[s] * structure[:, PAIRS.index((view, s))] for s in STRUCTURES)
    score_seg = 100.0 * 0.5 * views
    score_without_time = (WEIGHT_CLS * score_cls + WEIGHT_SEG * score_seg) / (WEIGHT_CLS + WEIGHT_SEG)

    seconds = score_time = score_total = None
    timings = [r.timing for r in results]
    if timing_rule(timings)[0] and baseline is not None:  # else null in metrics.json, with the reason
        seconds = processing_time(timings, weights)
        score_time = time_score(seconds, baseline)
        score_total = WEIGHT_CLS * score_cls + WEIGHT_SEG * score_seg + WEIGHT_TIME * score_time
    return Scores(f1, macro_f1, score_cls, mean_dsc, mean_nsd, 100.0 * structure, score_seg, score_without_time,
                  seconds, score_time, score_total)
