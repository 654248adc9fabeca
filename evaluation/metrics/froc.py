"""CAMELYON16 lesion-level FROC: detections to hits, the FROC curve, and the score.

Rules (docs/challenges/camelyon16.md, "Detections" and "FROC and the score"):

- A detection at level-0 pixel (X, Y) falls on evaluation-mask pixel [floor(Y/2**level),
  floor(X/2**level)]. On a tumor slide: background -> false positive; an ITC region -> ignored;
  a lesion -> a hit, the lesion keeping the largest confidence of its hits. On a normal slide
  every detection is a false positive.
- The 2016 script keeps one slot per labelled region, ITC regions included, in a float32 array
  initialised to 0: a lesion's slot is float32(max(0, largest hit confidence)), every other slot
  0. Thresholds are `sorted(set(false positives + slots))[1:]` (the smallest value is dropped,
  meant to be the zeros); a false positive counts at threshold t when >= t (float64), a slot
  when >= t rounded to float32 (numpy compares a float32 array with a float in float32). The
  point (0, 0) is appended.
- The corrected rule (the later data-release script): slots in float64, thresholds every
  distinct nonzero value, counts in float64.
- FP rate = false positives / slides; sensitivity = counted slots / lesions (ITC excluded);
  score = mean of np.interp(targets, FP rates increasing, sensitivities).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FP_RATE_TARGETS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # FPs per slide: 1/4, 1/2, 1, 2, 4, 8
THRESHOLD_RULES = ("2016", "corrected")


def _as_vector(values, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite")
    return array


def mask_pixel(coordinates, level: int) -> np.ndarray:
    """Level-0 pixel coordinates -> index at `level`: floor(coordinate / 2**level)."""
    coordinates = _as_vector(coordinates, "coordinates")
    return np.floor(coordinates / float(2 ** level)).astype(np.int64)


@dataclass(frozen=True)
class SlideHits:
    """What one slide contributes to the FROC: small, whatever the mask size."""

    false_positives: np.ndarray  # confidences of the false positives (float64)
    lesion_confidences: np.ndarray  # per lesion (ITC excluded): max(0, largest hit confidence)
    itc_regions: int  # regions left out as ITC (their detections are ignored)

    @property
    def lesions(self) -> int:
        return int(len(self.lesion_confidences))


def slide_hits(hit_labels, confidences, itc) -> SlideHits:
    """Sort one tumor slide's detections, given the region label each falls on (0 background,
    k for region k) and `itc[k - 1]` saying whether region k is ITC."""
    confidences = _as_vector(confidences, "confidences")
    hit_labels = np.asarray(hit_labels, dtype=np.int64)
    itc = np.asarray(itc, dtype=bool)
    if hit_labels.shape != confidences.shape:
        raise ValueError("hit_labels and confidences must have the same length")
    regions = len(itc)
    if len(hit_labels) and (hit_labels.min() < 0 or hit_labels.max() > regions):
        raise ValueError(f"hit labels must lie in 0..{regions}")
    false_positives = confidences[hit_labels == 0]
    best = np.zeros(regions + 1)  # slot 0 unused; a missed lesion keeps 0
    on_region = hit_labels > 0
    np.maximum.at(best, hit_labels[on_region], confidences[on_region])
    lesion_confidences = best[1:][~itc]
    return SlideHits(false_positives, lesion_confidences, int(itc.sum()))


def normal_slide_hits(confidences) -> SlideHits:
    """A normal slide: every detection is a false positive."""
    return SlideHits(_as_vector(confidences, "confidences"), np.zeros(0), 0)


@dataclass(frozen=True)
class FrocCurve:
    thresholds: np.ndarray  # increasing; the last point (0, 0) has no threshold
    fp_rates: np.ndarray  # average false positives per slide, one per threshold, then 0
    sensitivities: np.ndarray  # one per threshold, then 0


def froc_curve(slides: list[SlideHits], rule: str = "2016") -> FrocCurve:
    """The FROC points of a set of slides under the 2016 or the corrected threshold rule, in
    the scripts' order (thresholds increasing, the point (0, 0) last)."""
    if rule not in THRESHOLD_RULES:
        raise ValueError(f"rule must be one of {THRESHOLD_RULES}, got {rule!r}")
    if not slides:
        raise ValueError("at least one slide is needed")
    lesions = sum(s.lesions for s in slides)
    if lesions == 0:
        raise ValueError("the slides hold no lesion: sensitivity is undefined")
    false_positives = np.sort(np.concatenate([s.false_positives for s in slides]))
    if (false_positives < 0).any() or any((s.lesion_confidences < 0).any() for s in slides):
        raise ValueError("confidences must be non-negative (a missed lesion is a 0)")
    # One slot per region: lesions with their confidence, ITC regions 0.
    slots = np.concatenate([s.lesion_confidences for s in slides] + [np.zeros(sum(s.itc_regions for s in slides))])
    if rule == "2016":
        slots32 = np.sort(slots.astype(np.float32))
        thresholds = np.unique(np.concatenate([false_positives, slots32.astype(np.float64)]))[1:]
        # Slots compare in float32: the threshold is rounded to float32 (nearest) first.
        slot_counts = len(slots32) - np.searchsorted(slots32, thresholds.astype(np.float32), side="left")
    else:
        slots = np.sort(slots)
        values = np.unique(np.concatenate([false_positives, slots]))
        thresholds = values[values != 0]
        slot_counts = len(slots) - np.searchsorted(slots, thresholds, side="left")
    fp_counts = len(false_positives) - np.searchsorted(false_positives, thresholds, side="left")
    fp_rates = np.append(fp_counts, 0) / float(len(slides))
    sensitivities = np.append(slot_counts, 0) / float(lesions)
    return FrocCurve(thresholds, fp_rates, sensitivities)


def froc_sensitivities(curve: FrocCurve, targets=FP_RATE_TARGETS) -> np.ndarray:
    """Sensitivity at each target FP rate: linear interpolation on the curve read with FP rates
    increasing (np.interp, as the 2016 script); beyond the largest rate, the highest
    sensitivity."""
    return np.interp(np.asarray(targets, dtype=np.float64), curve.fp_rates[::-1], curve.sensitivities[::-1])


def froc_score(curve: FrocCurve, targets=FP_RATE_TARGETS) -> float:
    """The CAMELYON16 lesion score: mean sensitivity at 1/4, 1/2, 1, 2, 4 and 8 FPs per slide."""
    return float(np.mean(froc_sensitivities(curve, targets)))
