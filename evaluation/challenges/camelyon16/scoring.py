"""CAMELYON16 scores: a slide's result (its probability and, in the lesion evaluation, what its
detections hit), and the one weighted aggregate of the slide AUC and the lesion FROC over slide
weights, the point value (every slide once) and the final ranking's bootstrap resamples (a
slide drawn k times counts k times) alike (docs/challenges/camelyon16.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.challenges.camelyon16.predictions import (
    SlidePrediction,
    check_inside,
    level0_pixels,
)
from evaluation.challenges.camelyon16.truth import SlideTruth, slide_lesions, slide_mask
from evaluation.metrics.classification import roc_auc_score
from evaluation.metrics.froc import (
    FrocCurve,
    SlideHits,
    mean_sensitivity,
    normal_slide_hits,
    slide_hits,
    weighted_froc_sensitivities,
)
from evaluation.metrics.resampling import whole_counts
from evaluation.reading.files import Origin

CURVE_POINTS = 500  # FROC points kept in metrics.json for plots


@dataclass(frozen=True)
class SlideResult:
    probability: float
    hits: SlideHits | None  # None: not in the lesion evaluation


def slide_result(truth: Origin, slide: str, name: str, prediction: SlidePrediction, slide_truth: SlideTruth,
                 mask_level: int, pixel_size_um: float, pixel_size_from_tiff: bool) -> SlideResult:
    """One slide: its detections checked against the slide, then sorted into lesion hits and
    false positives on the evaluation mask (a tumor slide's mask read at level 5; what comes back
    is a few numbers per lesion and the false positives' confidences, never the mask)."""
    if not slide_truth.lesion_evaluated:
        return SlideResult(prediction.probability, None)
    detections = prediction.detections
    mask, pixel_size = None, pixel_size_um
    if slide_truth.is_tumor:
        mask, pixel_size = slide_mask(truth, slide_truth, slide, mask_level, pixel_size_um, pixel_size_from_tiff)
    x, y = level0_pixels(detections, pixel_size)
    check_inside(x, y, detections, name, mask)
    if mask is None:
        return SlideResult(prediction.probability, normal_slide_hits(detections.confidences))
    lesions = slide_lesions(mask, pixel_size, slide, slide_truth)
    scale = float(2 ** mask.level)
    labels = lesions.label_at(np.floor(y / scale), np.floor(x / scale))
    return SlideResult(prediction.probability, slide_hits(labels, detections.confidences, lesions.itc))


@dataclass(frozen=True)
class Aggregates:
    """The ranked values of every row of slide weights, each (rows,): NaN where a row leaves
    one undefined (an AUC without both slide types, a FROC without a lesion)."""

    slide_auc: np.ndarray
    froc_score: np.ndarray
    sensitivities: np.ndarray  # (rows, FP rate targets)
    lesions: np.ndarray  # lesions counted (ITC excluded), weighted
    itc_regions: np.ndarray  # ITC regions left out, weighted


def aggregate(is_tumor: np.ndarray, results: list[SlideResult], weights: np.ndarray, rule: str,
              targets) -> Aggregates:
    """The slide AUC (scikit-learn's roc_auc_score with the row as sample_weight) and the FROC
    sensitivities at `targets` with their mean, the FROC score (the 2016 script's curve of the
    row's weighted slides, `rule`'s thresholds), of every row of `weights` (rows x slides, the
    slides in the order of `results`, whole numbers)."""
    weights = whole_counts(weights)  # a cast would truncate a fractional weight silently
    probabilities = np.array([result.probability for result in results], dtype=np.float64)
    lesion_columns = [j for j, result in enumerate(results) if result.hits is not None]
    hits = [results[j].hits for j in lesion_columns]
    lesion_weights = weights[:, lesion_columns]
    sensitivities = weighted_froc_sensitivities(hits, lesion_weights, rule, targets)
    return Aggregates(
        slide_auc=roc_auc_score(is_tumor, probabilities, weights),
        froc_score=mean_sensitivity(sensitivities),
        sensitivities=sensitivities,
        lesions=(lesion_weights @ np.array([h.lesions for h in hits], dtype=np.int64)).astype(np.float64),
        itc_regions=(lesion_weights @ np.array([h.itc_regions for h in hits], dtype=np.int64)).astype(np.float64),
    )


def compact_curve(fp_rates: np.ndarray, sensitivities: np.ndarray, points: int = CURVE_POINTS):
    """The FROC curve for plots: consecutive repeats dropped, at most `points` points kept
    (evenly spaced along the curve, ends included), values rounded to 6 decimals."""
    fp_rates, sensitivities = np.round(fp_rates, 6), np.round(sensitivities, 6)
    keep = np.ones(len(fp_rates), dtype=bool)
    keep[1:] = (np.diff(fp_rates) != 0) | (np.diff(sensitivities) != 0)
    fp_rates, sensitivities = fp_rates[keep], sensitivities[keep]
    if len(fp_rates) > points:
        index = np.unique(np.round(np.linspace(0, len(fp_rates) - 1, points)).astype(np.int64))
        fp_rates, sensitivities = fp_rates[index], sensitivities[index]
    return fp_rates.tolist(), sensitivities.tolist()


def plotted_curve(curve: FrocCurve) -> tuple[list[float], list[float]]:
    """metrics.json's froc_curve points: FP rates increasing, at most CURVE_POINTS."""
    return compact_curve(curve.fp_rates[::-1], curve.sensitivities[::-1])
