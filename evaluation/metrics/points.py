"""Points: predicted points matched to true points within a radius; TP, FP, FN, F1, precision
and recall; a FROC over points (false positives per image or per unit area) and the CPM.
Arrays in, numbers out.

One intermediate, `point_pairs`: every (true, predicted) pair within the radius with its
distance, found by a KD-tree (scipy's cKDTree), so the cost follows the number of close pairs,
never true × predicted. A distance is sqrt(Σ ((t_k − p_k) · spacing_k)²) in float64, the
coordinates in the array's axis order (spacing None: 1 per axis, i.e. the coordinates' units).
The matchings are derived from the pairs; the FROC from the hits of each image (a prediction
within the radius of a true point hits it), the per-image intermediate CAMELYON16's FROC uses
(evaluation.metrics.froc). Empty point sets follow the library's empty rule (evaluation.metrics).

The radius is one number, or one per true point (LUNA16: each nodule's own radius, its diameter
/ 2); a pair is within the radius of its true point. `ignore` marks true points that are neither
to be found nor to be missed (LUNA16's excluded findings): a prediction on one of them is set
aside, neither a true nor a false positive (noduleCADEvaluationLUNA16.py, evaluateCAD).
"""

from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass

import numpy as np

from evaluation.machine import load_scipy
from evaluation.metrics._assignment import greedy_matching, is_one_to_one, min_cost_matching
from evaluation.metrics.froc import (
    FrocCurve,
    SlideHits,
    froc_curve,
    mean_sensitivity,
    weighted_froc_sensitivities,
)
from evaluation.metrics.instances import DetectionCounts
from evaluation.metrics.registry import metric
from evaluation.metrics.validation import (
    check_choice,
    check_finite,
    check_flag,
    check_flag_each,
    check_in_range,
    check_nonnegative_each,
    check_points,
    check_sample_weight,
    check_spacing,
    per_row,
)

ASSIGNMENTS = ("hungarian", "greedy_by_score", "greedy_by_truth")
CPM_FP_RATES = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # false positives per scan: 1/8 ... 8 (LUNA16)
EVALUTILS = "evalutils 0.4.2 scorers.score_detection"
_DENSE_CELLS = 1 << 20  # a group of pairs up to this many rows x columns is solved on a dense matrix


def _as_points(points, name: str) -> np.ndarray | None:
    """Coordinates as an (n, ndim) float64 array; None for an empty input of unknown dimension
    (an empty list: no point)."""
    array = check_finite(points, name)
    return None if array.size == 0 and array.ndim <= 1 else check_points(array, name)


def _checked_points(truth, prediction, spacing=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(truth, prediction, spacing): two (n, ndim) coordinate arrays of one dimension (an empty
    list is no point) and one spacing > 0 per coordinate."""
    truth_points, predicted_points = _as_points(truth, "truth"), _as_points(prediction, "prediction")
    dimensions = {a.shape[1] for a in (truth_points, predicted_points) if a is not None}
    if len(dimensions) > 1:
        raise ValueError(f"truth and prediction points differ in dimension: {truth_points.shape[1]} and "
                         f"{predicted_points.shape[1]}")
    ndim = dimensions.pop() if dimensions else (len(np.atleast_1d(spacing)) if spacing is not None else 1)
    spacing = check_spacing(spacing, ndim)
    empty = np.zeros((0, ndim))
    return (truth_points if truth_points is not None else empty,
            predicted_points if predicted_points is not None else empty, spacing)


def _checked_scores(scores, n: int, name: str = "scores") -> np.ndarray:
    scores = check_finite(scores, name)
    if scores.shape != (n,):
        raise ValueError(f"{name} must give one number per predicted point ({n}), got shape {scores.shape}")
    return scores


def _checked_radius(radius, n: int) -> float | np.ndarray:
    return check_nonnegative_each(radius, "radius", n, "true point")


def _checked_ignore(ignore, n: int) -> np.ndarray:
    return check_flag_each(ignore, "ignore", n, "true point")


def point_pairs(truth, prediction, radius, spacing=None, inclusive: bool = True):
    """(truth index, prediction index, distance) of every pair within the radius of its true
    point (`radius` one number, or one per true point; inclusive: <=, else <), sorted by truth,
    then prediction index."""
    truth, prediction, spacing = _checked_points(truth, prediction, spacing)
    radius = _checked_radius(radius, len(truth))
    return _pairs(truth, prediction, radius, spacing, check_flag(inclusive, "inclusive"))


def _pairs(truth: np.ndarray, prediction: np.ndarray, radius: float | np.ndarray, spacing: np.ndarray,
           inclusive: bool):
    if len(truth) == 0 or len(prediction) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    load_scipy()  # SciPy's OpenBLAS calls exit(1) when it cannot map its buffer: a MemoryError first
    from scipy.spatial import cKDTree

    scaled_truth, scaled_prediction = truth * spacing, prediction * spacing
    # The tree's distances may differ from ours in the last bits: search a little beyond the
    # radius, then decide with our own distance.
    largest = float(np.max(radius))
    extent = max(float(np.abs(scaled_truth).max()), float(np.abs(scaled_prediction).max()), largest)
    if np.ndim(radius) == 0:
        found = cKDTree(scaled_truth).sparse_distance_matrix(cKDTree(scaled_prediction), radius + 1e-9 * extent,
                                                             output_type="ndarray")
        truth_index, prediction_index = found["i"].astype(np.int64), found["j"].astype(np.int64)
    else:  # each true point searched within its own radius: never the largest radius for all
        within = cKDTree(scaled_prediction).query_ball_point(scaled_truth, radius + 1e-9 * extent)
        counts = np.fromiter(map(len, within), dtype=np.int64, count=len(within))
        truth_index = np.repeat(np.arange(len(truth), dtype=np.int64), counts)
        prediction_index = np.fromiter(itertools.chain.from_iterable(within), dtype=np.int64,
                                       count=int(counts.sum()))
    distances = np.sqrt((((truth[truth_index] - prediction[prediction_index]) * spacing) ** 2).sum(axis=1))
    limit = radius if np.ndim(radius) == 0 else radius[truth_index]
    keep = distances <= limit if inclusive else distances < limit
    truth_index, prediction_index, distances = truth_index[keep], prediction_index[keep], distances[keep]
    order = np.lexsort((prediction_index, truth_index))
    return truth_index[order], prediction_index[order], distances[order]


@dataclass(frozen=True)
class PointMatching(DetectionCounts):
    """Detection counts of one image and the matched pairs (indices into the truth and
    prediction arrays, sorted by truth index): one to one, so TP is the number of pairs, FP =
    predictions − TP − set aside, FN = counted (not ignored) truths − TP; f1, precision and
    recall as DetectionCounts'. `ignored_prediction_index`: the predictions set aside, unmatched
    on an ignored true point (increasing)."""

    truth_index: np.ndarray
    prediction_index: np.ndarray
    ignored_prediction_index: np.ndarray


@metric(kind="points", better=None, returns="PointMatching", scaled=("radius",),
        variants={"radius": "one number for every true point, or one per true point (LUNA16: each nodule's "
                            "diameter / 2)",
                  "ignore": "None, or one boolean per true point: True marks a point neither to find nor to miss "
                            "(LUNA16's excluded findings); an unmatched prediction on one is set aside, neither TP "
                            "nor FP",
                  "inclusive": "True: a pair is within the radius when its distance is <= radius; False: <",
                  "assignment": "'hungarian': a maximum matching, the least total distance among them; "
                                "'greedy_by_score': predictions by descending score each take the nearest free "
                                "true point; 'greedy_by_truth': true points in input order each take the nearest "
                                "free prediction (evalutils' score_detection)"},
        equals=(f"{EVALUTILS} (assignment='greedy_by_truth', inclusive=True) where no true point has two "
                "predictions at exactly the same distance (evalutils orders those as its BallTree lists them, "
                "which depends on the scikit-learn version, not by index)",
                "scipy.optimize.linear_sum_assignment on the distance matrix, pairs beyond the radius "
                "forbidden (assignment='hungarian': TP)"),
        citation="Maier-Hein et al., Metrics reloaded, Nature Methods 21, 2024 (point localization)",
        example={"radius": 2.0, "assignment": "hungarian"})
def match_points(truth, prediction, radius, scores=None, spacing=None, inclusive: bool = True,
                 assignment: str = "hungarian", ignore=None) -> PointMatching:
    """Predicted points matched one to one to true points within a radius: TP, FP, FN and pairs.

    A pair is a candidate when its distance is within the radius of its true point (`inclusive`:
    <=, else <), in the spacing's units: `radius` is one number for every true point, or one per
    true point (LUNA16: each nodule's diameter / 2). `ignore`, one boolean per true point, marks
    the points neither to find nor to miss (LUNA16's excluded findings): the matching runs over
    the other true points as if these were absent (a prediction near a counted and an ignored
    point can match the counted one), then every prediction left unmatched within the radius of
    an ignored point is set aside, neither a TP nor an FP (LUNA16 sets aside every mark on an
    excluded finding); an ignored point is never missed. `assignment`:
    - "hungarian": a maximum matching (the most pairs), and among maximum matchings the least
      total distance: a true point or a prediction alone in its group of pairs (the connected
      components of the graph of pairs) takes its nearest partner (equal distances: lower
      index); the other groups are solved by scipy's linear_sum_assignment (a sparse
      minimum-weight full matching for a group above 2²⁰ cells), which breaks a tie in total
      distance;
    - "greedy_by_score": predictions by descending `scores` (equal scores: lower index first),
      each takes the nearest free true point (equal distances: lower index);
    - "greedy_by_truth": true points in input order, each takes the nearest free prediction
      (equal distances: lower index): evalutils' score_detection, which is not a maximum
      matching (an earlier true point can take the only prediction a later one had). Among
      predictions at exactly the same distance from a true point, evalutils takes the one its
      BallTree lists first, an order that depends on the tree's leaves and on the scikit-learn
      version, not the lower index: on integer pixel coordinates, where such ties are common,
      its counts can differ from these (and between scikit-learn versions).
    F1, precision and recall are properties of the result; sum TP, FP and FN over images and
    call instances.f1_from_counts for a pooled F1. Every truth ignored, or every prediction on
    ignored points, is an image with nothing counted on that side (the library's empty rule).
    """
    truth, prediction, spacing = _checked_points(truth, prediction, spacing)
    radius = _checked_radius(radius, len(truth))
    ignore = _checked_ignore(ignore, len(truth))
    inclusive = check_flag(inclusive, "inclusive")
    check_choice(assignment, "assignment", ASSIGNMENTS)
    if scores is not None:
        scores = _checked_scores(scores, len(prediction))
    elif assignment == "greedy_by_score":
        raise ValueError("assignment 'greedy_by_score' needs scores (one per predicted point)")
    truth_index, prediction_index, distances = _pairs(truth, prediction, radius, spacing, inclusive)
    on_ignored = ignore[truth_index]
    ignored_hits = np.unique(prediction_index[on_ignored])
    truth_index, prediction_index, distances = (truth_index[~on_ignored], prediction_index[~on_ignored],
                                                distances[~on_ignored])
    if is_one_to_one(truth_index, prediction_index):
        chosen = np.arange(len(truth_index))
    elif assignment == "greedy_by_truth":
        chosen = greedy_matching(np.lexsort((prediction_index, distances, truth_index)), truth_index,
                                 prediction_index)
    elif assignment == "greedy_by_score":
        rank = np.empty(len(prediction), dtype=np.int64)
        rank[np.argsort(-scores, kind="stable")] = np.arange(len(prediction))
        chosen = greedy_matching(np.lexsort((truth_index, distances, rank[prediction_index])), truth_index,
                                 prediction_index)
    else:
        chosen = _maximum_matching(truth_index, prediction_index, distances)
    tp = len(chosen)
    set_aside = np.setdiff1d(ignored_hits, prediction_index[chosen])
    return PointMatching(tp, len(prediction) - tp - len(set_aside), int((~ignore).sum()) - tp, truth_index[chosen],
                         prediction_index[chosen], set_aside)


def _maximum_matching(truth_index: np.ndarray, prediction_index: np.ndarray, distances: np.ndarray) -> np.ndarray:
    """The pairs of a maximum matching with the least total distance among maximum matchings,
    group by group (evaluation/metrics/_assignment.py): a pair costs d − B with B above
    (pairs + 1) × the largest distance, so one more pair always lowers the total more than any
    distances can raise it."""
    most_pairs = min(len(np.unique(truth_index)), len(np.unique(prediction_index)))
    bonus = (most_pairs + 1) * (float(distances.max()) + 1.0)
    return min_cost_matching(truth_index, prediction_index, distances - bonus, _DENSE_CELLS)


# ---- FROC over points ----------------------------------------------------------------------------


def point_hits(truth, prediction, scores, radius, spacing=None, inclusive: bool = True,
               area: float = 1.0, ignore=None) -> SlideHits:
    """One image's hits for the FROC: a prediction within the radius of a true point hits it
    (many to many: a prediction may hit several true points, a true point keeps the largest
    score of its hits, the others are no false positives); a prediction within the radius of no
    true point is a false positive. A missed true point's score is -inf. `radius`: one number,
    or one per true point. `ignore`: one boolean per true point, True for a point neither to find
    nor to miss (LUNA16's excluded findings): it is no lesion, and a prediction hitting it is no
    false positive (hitting a counted point too, it is that point's hit). `area`: what the image
    adds to the FP rate's denominator (1: FPs per image)."""
    truth, prediction, spacing = _checked_points(truth, prediction, spacing)
    radius = _checked_radius(radius, len(truth))
    ignore = _checked_ignore(ignore, len(truth))
    scores = _checked_scores(scores, len(prediction))
    area = check_in_range(area, "area", 0.0, math.inf, low_open=True)
    truth_index, prediction_index, _ = _pairs(truth, prediction, radius, spacing, check_flag(inclusive, "inclusive"))
    hit = np.zeros(len(prediction), dtype=bool)
    hit[prediction_index] = True  # on a counted or an ignored point: no false positive
    best = np.full(len(truth), -np.inf)
    np.maximum.at(best, truth_index, scores[prediction_index])
    return SlideHits(scores[~hit], best[~ignore], 0, area)


def _one_value(values) -> bool:
    """Whether `values` is one value (None, a number, a string: checked later) rather than a
    sequence of per-image entries (np.ndim would refuse a ragged list)."""
    return values is None or isinstance(values, (numbers.Number, np.generic, str, bytes)) or (
        isinstance(values, np.ndarray) and values.ndim == 0)


def _per_image(values, n_images: int, name: str) -> list:
    """`values` one entry per image (a sequence), or one value for every image (a number, None)."""
    if _one_value(values):
        return [values] * n_images
    try:
        values = list(values)
    except TypeError:
        raise ValueError(f"{name} must be one value for every image or one entry per image") from None
    if len(values) != n_images:
        raise ValueError(f"{name} must give one entry per image ({n_images}), got {len(values)}")
    return values


def _image_hits(truth, prediction, scores, radius, spacing, inclusive, areas, ignore) -> list[SlideHits]:
    try:
        truth, prediction, scores = list(truth), list(prediction), list(scores)
    except TypeError:
        raise ValueError("truth, prediction and scores must be sequences with one entry per image") from None
    if not len(truth) == len(prediction) == len(scores):
        raise ValueError(f"truth, prediction and scores must have one entry per image, got {len(truth)}, "
                         f"{len(prediction)} and {len(scores)}")
    if areas is None:
        areas = np.ones(len(truth))
    else:
        areas = check_finite(areas, "areas")
        if areas.shape != (len(truth),) or (areas <= 0).any():
            raise ValueError(f"areas must give one number > 0 per image ({len(truth)}), got {areas!r}")
    if ignore is not None and _one_value(ignore):
        raise ValueError("ignore must give one entry per image (one boolean per true point of the image)")
    radii, ignored = _per_image(radius, len(truth), "radius"), _per_image(ignore, len(truth), "ignore")
    return [point_hits(t, p, s, r, spacing, inclusive, float(a), i)
            for t, p, s, r, a, i in zip(truth, prediction, scores, radii, areas, ignored, strict=True)]


_FROC_VARIANTS = {
    "radius": "one number for every true point, or one entry per image: a number, or one per true point of the "
              "image (LUNA16: each nodule's diameter / 2)",
    "ignore": "None, or one entry per image: one boolean per true point, True for a point neither to find nor to "
              "miss (LUNA16's excluded findings): no lesion, and a prediction on it no false positive",
    "areas": "None: false positives per image; one area per image: false positives per unit area",
    "inclusive": "True: a prediction hits a true point within distance <= radius; False: <",
}
_LUNA16 = ("LUNA16 noduleCADEvaluationLUNA16.py (evaluateCAD, computeFROC) with a radius per nodule (diameter / "
           "2; the script takes 10 mm for a diameter < 0) and its excluded findings as `ignore` (its "
           "bOtherNodulesAsIrrelevant=True), strict (inclusive=False), without its maxNumberOfCADMarks cut")


@metric(kind="point_sets", better=None, returns="FrocCurve", scaled=("radius",), variants=_FROC_VARIANTS,
        equals=(f"{_LUNA16}: its FROC curve (duplicate hits ignored)",
                "picai_eval Metrics.lesion_TPR / lesion_FPR (from the same hits)"),
        citation="Setio et al., LUNA16, Medical Image Analysis 42, 2017",
        example={"radius": 2.0})
def point_froc(truth, prediction, scores, radius, spacing=None, inclusive: bool = True, areas=None,
               ignore=None) -> FrocCurve:
    """The FROC curve of scored point detections: sensitivity against false positives per image or per area.

    Per image (truth, prediction, scores: one entry per image), a prediction hits every true
    point within its radius (`radius`: one number, or per image one number or one per true
    point; `inclusive`: <=, else <); a true point is found at threshold t when one of its hits
    scores >= t, a prediction is a false positive when it hits nothing (a second hit on a found
    point is no false positive). True points marked in `ignore` (per image, one boolean per true
    point) are no lesions, and a prediction hitting one is no false positive: LUNA16's excluded
    findings. At every distinct score t: the FP rate is the false positives scoring >= t over
    the number of images (or the sum of `areas`), the sensitivity the found true points over all
    counted true points; the point (0, 0) ends the curve. ValueError when no image holds a
    counted true point (sensitivity undefined).
    """
    hits = _image_hits(truth, prediction, scores, radius, spacing, inclusive, areas, ignore)
    if sum(h.lesions for h in hits) == 0:
        raise ValueError("no image holds a true point (not ignored): the FROC's sensitivity is undefined")
    return froc_curve(hits, "every_score")


@metric(kind="point_sets", better="higher", scaled=("radius",),
        variants={"fp_rates": "the false-positive rates averaged over: LUNA16's 1/8 ... 8 by default; "
                              "CAMELYON16's score is 1/4 ... 8", **_FROC_VARIANTS},
        equals=(f"{_LUNA16}: mean sensitivity at 1/8 ... 8 FPs per scan, np.interp on its FROC",),
        citation="Niemeijer et al., IEEE TMI 30(2), 2011 (CPM); Setio et al., LUNA16, Medical Image Analysis 42, 2017",
        example={"radius": 2.0})
def cpm(truth, prediction, scores, radius, spacing=None, inclusive: bool = True, fp_rates=CPM_FP_RATES, areas=None,
        sample_weight=None, ignore=None):
    """Competition performance metric: mean FROC sensitivity at 1/8, 1/4, 1/2, 1, 2, 4 and 8 FPs per image.

    The sensitivity at each of `fp_rates` is read on point_froc's curve (its `radius`, `ignore`
    and `areas`) by linear interpolation with the FP rates increasing (np.interp; beyond the
    last point, the highest sensitivity); the CPM is their mean. NaN when no image holds a
    counted (not ignored) true point. `sample_weight`: how many times each image counts (whole
    numbers, e.g. a bootstrap resample; rows of them give one CPM per row), in the hits and in
    the FP rate's denominator.
    """
    hits = _image_hits(truth, prediction, scores, radius, spacing, inclusive, areas, ignore)
    rates = check_finite(fp_rates, "fp_rates")
    if rates.ndim != 1 or rates.size == 0 or (rates < 0).any():
        raise ValueError(f"fp_rates must be a non-empty sequence of numbers >= 0, got {fp_rates!r}")
    weights, single = check_sample_weight(sample_weight, len(hits))
    values = mean_sensitivity(weighted_froc_sensitivities(hits, weights, "every_score", rates))
    return per_row(values, single)
