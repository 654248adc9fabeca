"""Lesion-level FROC: detections to hits, the FROC curve, and the score (CAMELYON16's, and the
points FROC and CPM of evaluation.metrics.points, which build the same per-image hits).

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
- Scores of any sign (rule "every_score", the points FROC): a missed lesion's slot is -inf,
  thresholds are every distinct finite value, counts in float64. A slide's `area` (1 by default)
  is what it adds to the FP rate's denominator: slides, or a unit of area for FPs per mm².
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.metrics.resampling import whole_counts
from evaluation.metrics.validation import check_choice, check_sample_weight, check_values

FP_RATE_TARGETS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)  # FPs per slide: 1/4, 1/2, 1, 2, 4, 8
THRESHOLD_RULES = ("2016", "corrected", "every_score")


@dataclass(frozen=True)
class SlideHits:
    """What one slide contributes to the FROC: small, whatever the mask size."""

    false_positives: np.ndarray  # confidences of the false positives (float64)
    lesion_confidences: np.ndarray  # per lesion (ITC excluded): max(0, largest hit confidence); -inf: missed
    itc_regions: int  # regions left out as ITC (their detections are ignored)
    area: float = 1.0  # what the slide adds to the FP rate's denominator (1: FPs per slide)

    @property
    def lesions(self) -> int:
        return len(self.lesion_confidences)


def slide_hits(hit_labels, confidences, itc) -> SlideHits:
    """Sort one tumor slide's detections, given the region label each falls on (0 background,
    k for region k) and `itc[k - 1]` saying whether region k is ITC."""
    confidences = check_values(confidences, "confidences")
    hit_labels = np.asarray(hit_labels)
    if hit_labels.size and hit_labels.dtype.kind not in "iu":  # a cast would truncate 1.7 to region 1
        raise ValueError(f"hit_labels must be integer region labels, got {hit_labels.dtype}")
    hit_labels = hit_labels.astype(np.int64)
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
    return SlideHits(check_values(confidences, "confidences"), np.zeros(0), 0)


@dataclass(frozen=True)
class FrocCurve:
    thresholds: np.ndarray  # increasing; the last point (0, 0) has no threshold
    fp_rates: np.ndarray  # average false positives per slide, one per threshold, then 0
    sensitivities: np.ndarray  # one per threshold, then 0


def froc_curve(slides: list[SlideHits], rule: str = "2016") -> FrocCurve:
    """The FROC points of a set of slides under the 2016, the corrected or the every_score
    threshold rule, in the scripts' order (thresholds increasing, the point (0, 0) last)."""
    check_choice(rule, "rule", THRESHOLD_RULES)
    if not slides:
        raise ValueError("at least one slide is needed")
    lesions = sum(s.lesions for s in slides)
    if lesions == 0:
        raise ValueError("the slides hold no lesion: sensitivity is undefined")
    false_positives = np.sort(np.concatenate([s.false_positives for s in slides]))
    _check_confidences(false_positives, np.concatenate([s.lesion_confidences for s in slides]), rule)
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
        thresholds = values[values != 0] if rule == "corrected" else values[values != -np.inf]
        slot_counts = len(slots) - np.searchsorted(slots, thresholds, side="left")
    fp_counts = len(false_positives) - np.searchsorted(false_positives, thresholds, side="left")
    fp_rates = np.append(fp_counts, 0) / float(sum(s.area for s in slides))
    sensitivities = np.append(slot_counts, 0) / float(lesions)
    return FrocCurve(thresholds, fp_rates, sensitivities)


def _check_confidences(false_positives: np.ndarray, slots: np.ndarray, rule: str) -> None:
    """Confidences >= 0 (a missed lesion is a 0) under the CAMELYON16 rules; finite, with -inf
    for a missed lesion's slot, under every_score."""
    if rule != "every_score":
        if (false_positives < 0).any() or (slots < 0).any():
            raise ValueError("confidences must be non-negative (a missed lesion is a 0)")
    elif not np.isfinite(false_positives).all() or np.isnan(slots).any() or (slots == np.inf).any():
        raise ValueError("scores must be finite (a missed lesion's slot is -inf)")


def froc_sensitivities(curve: FrocCurve, targets=FP_RATE_TARGETS) -> np.ndarray:
    """Sensitivity at each target FP rate: linear interpolation on the curve read with FP rates
    increasing (np.interp, as the 2016 script); beyond the largest rate, the highest
    sensitivity."""
    return np.interp(np.asarray(targets, dtype=np.float64), curve.fp_rates[::-1], curve.sensitivities[::-1])


def froc_score(curve: FrocCurve, targets=FP_RATE_TARGETS) -> float:
    """The CAMELYON16 lesion score: mean sensitivity at 1/4, 1/2, 1, 2, 4 and 8 FPs per slide."""
    return float(np.mean(froc_sensitivities(curve, targets)))


# ---- the FROC sensitivities over slide weights (point value and bootstrap resamples) -----------


def _by_slide(arrays: list[np.ndarray], dtype) -> tuple[np.ndarray, np.ndarray]:
    """(slide of each value, values) of every slide's array cast to `dtype`, grouped by slide and
    sorted within it."""
    lengths = [len(a) for a in arrays]
    slide = np.repeat(np.arange(len(arrays), dtype=np.int64), lengths)
    values = np.concatenate([np.zeros(0, dtype=dtype)] + [np.asarray(a).astype(dtype) for a in arrays])
    order = np.lexsort((values, slide))
    return slide[order], values[order]


def _by_slide_unique(slide: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of each slide, grouped by slide and sorted within it."""
    order = np.lexsort((values, slide))
    slide, values = slide[order], values[order]
    first = np.ones(len(values), dtype=bool)
    first[1:] = (slide[1:] != slide[:-1]) | (values[1:] != values[:-1])
    return slide[first], values[first]


class _PooledIndices:
    """Sorted integer arrays of one range [0, span], one per slide, pooled with an offset per
    slide so that one np.searchsorted answers a query for every (resample, slide) at once (a
    query index lies in [0, span + 1]). A sentinel above every key ends the pool."""

    def __init__(self, keys: np.ndarray, slide: np.ndarray, slides: int, span: int):
        """`keys` of every slide, grouped by slide in order (`slide`: each key's slide, increasing)
        and sorted within it."""
        stride = span + 2
        self.offsets = np.arange(slides, dtype=np.int64) * stride
        self.ends = np.cumsum(np.bincount(slide, minlength=slides)).astype(np.int64)
        self.starts = self.ends - np.bincount(slide, minlength=slides)
        sentinel = np.array([slides * stride], dtype=np.int64)
        self.pooled = np.concatenate([np.asarray(keys, dtype=np.int64) + self.offsets[slide], sentinel])

    def _position(self, index: np.ndarray, side: str) -> np.ndarray:
        return np.searchsorted(self.pooled, index[:, None] + self.offsets, side=side)

    def weighted_count_above(self, index: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Per row r: the sum over slides of counts[r, s] × (entries of slide s above index[r])."""
        return ((self.ends - self._position(index, "right")) * counts).sum(axis=1)

    def first_at_or_above(self, index: np.ndarray, drawn: np.ndarray, none: int) -> np.ndarray:
        """Per row r: the smallest entry >= index[r] among the slides drawn in r, or `none`."""
        position = self._position(index, "left")
        found = drawn & (position < self.ends)
        return np.where(found, self.pooled[position] - self.offsets, none).min(axis=1, initial=none)

    def last_below(self, index: np.ndarray, drawn: np.ndarray) -> np.ndarray:
        """Per row r: the largest entry < index[r] among the slides drawn in r, or -1."""
        position = self._position(index, "left") - 1
        found = drawn & (position >= self.starts)
        return np.where(found, self.pooled[np.maximum(position, 0)] - self.offsets, -1).max(axis=1, initial=-1)


def weighted_froc_sensitivities(slides: list[SlideHits], sample_weight, rule: str = "2016",
                                targets=FP_RATE_TARGETS) -> np.ndarray:
    """froc_sensitivities(froc_curve(weighted slides, rule), targets) of every row of
    `sample_weight` (rows x slides, whole numbers) at once: (rows, targets), NaN where the row
    holds no lesion (froc_curve refuses it). sample_weight[r, s] is how many times slides[s]
    counts in row r (a bootstrap resample: how many times it is drawn; the point value: once):
    its false positives and lesion slots count that many times, and so does the slide in the FP
    rate's denominator. Equal, bit for bit, to the curve of the materialised row.

    The same operations as on the materialised resample, without building its curve:
    - every value a resample can hold lies on one grid U (the distinct values of all slides);
      a false positive counts at threshold U[i] when U[i] <= it, a slot when U[i] (rounded to
      float32 under the 2016 rule) <= it, so each is summarised by its cut, the number of grid
      values at which it counts, and the count at U[i] is the weighted number of cuts above i;
    - the resample's thresholds are the grid values it holds above its smallest one (2016),
      above 0 (corrected) or every finite one (every_score, where a missed lesion's slot is -inf);
    - np.interp(x, FP rates increasing, sensitivities) reads the last point with FP rate <= x,
      i.e. the lowest threshold whose FP rate is <= x, and the point after it (the next lower
      threshold, or nothing after the lowest: its sensitivity), or before every threshold the
      (0, 0) point and the highest threshold. A bisection on the grid finds the lowest grid
      value whose FP rate is <= x (the FP count does not change between held values), then the
      nearest held values give the two points, and the slope is np.interp's expression.
    """
    check_choice(rule, "rule", THRESHOLD_RULES)
    counts = whole_counts(check_sample_weight(sample_weight, len(slides))[0])
    slot_type = np.float32 if rule == "2016" else np.float64
    # Every slide's values pooled, each array sorted within its slide (one sort for all slides).
    n = len(slides)
    fp_slide, false_positives = _by_slide([s.false_positives for s in slides], np.float64)
    slot_slide, slots = _by_slide([np.concatenate([s.lesion_confidences, np.zeros(s.itc_regions)]) for s in slides],
                                  slot_type)
    _check_confidences(false_positives, slots, rule)
    held_slide, held = _by_slide_unique(np.concatenate([fp_slide, slot_slide]),
                                        np.concatenate([false_positives, slots.astype(np.float64)]))
    grid = np.unique(held)
    size = len(grid)
    fp_cuts = _PooledIndices(np.searchsorted(grid, false_positives, side="right"), fp_slide, n, size)
    slot_grid = grid.astype(slot_type)  # a slot compares with the threshold in its own type
    slot_cuts = _PooledIndices(np.searchsorted(slot_grid, slots, side="right"), slot_slide, n, size)
    values = _PooledIndices(np.searchsorted(grid, held), held_slide, n, size)
    targets = np.asarray(targets, dtype=np.float64)
    lesion_counts = np.array([s.lesions for s in slides], dtype=np.int64)
    areas = np.array([s.area for s in slides], dtype=np.float64)
    rows = counts.shape[0]
    sensitivities = np.full((rows, len(targets)), np.nan)
    # One bisection for every (row, target) pair: the rows repeated once per target, a block of
    # rows at a time so that the (pairs x slides) temporaries stay under _PAIR_CELLS.
    block = max(1, _PAIR_CELLS // max(1, len(targets) * len(slides)))
    for start in range(0, rows if len(targets) else 0, block):
        part = counts[start:start + block]
        pairs = np.repeat(part, len(targets), axis=0)
        read = _read_at_targets(pairs, np.tile(targets, len(part)), lesion_counts, areas, grid, values, fp_cuts,
                                slot_cuts, rule)
        sensitivities[start:start + len(part)] = read.reshape(len(part), len(targets))
    lesions = counts @ lesion_counts
    return np.where((lesions > 0)[:, None], sensitivities, np.nan)


# (row, target) pairs x slides per block: 1 MB temporaries stay in cache (measured: 1 << 21 took 2.5x as long)
_PAIR_CELLS = 1 << 17


def _read_at_targets(counts: np.ndarray, target: np.ndarray, lesion_counts: np.ndarray, areas: np.ndarray,
                     grid: np.ndarray, values: _PooledIndices, fp_cuts: _PooledIndices, slot_cuts: _PooledIndices,
                     rule: str) -> np.ndarray:
    """The sensitivity at target[p] on the curve of the slides weighted by counts[p], for every
    pair p (a row of weights and one target), as np.interp reads it (see
    weighted_froc_sensitivities); NaN-free where the pair holds a lesion."""
    size = len(grid)
    drawn = counts > 0
    slide_count = counts @ areas  # whole numbers of slides of area 1: the same float as their count
    lesions = (counts @ lesion_counts).astype(np.float64)
    rows = counts.shape[0]
    if rule == "2016":  # sorted(set(...))[1:]: the smallest value held is no threshold
        floor = values.first_at_or_above(np.zeros(rows, dtype=np.int64), drawn, size)
    elif rule == "corrected":  # every nonzero value (confidences are >= 0)
        floor = np.full(rows, 0 if size and grid[0] == 0 else -1, dtype=np.int64)
    else:  # every finite value (a missed lesion's slot is -inf)
        floor = np.full(rows, 0 if size and grid[0] == -np.inf else -1, dtype=np.int64)
    lowest = values.first_at_or_above(floor + 1, drawn, size)  # the lowest threshold
    highest = values.last_below(np.full(rows, size, dtype=np.int64), drawn)
    no_threshold = highest <= floor

    def fp_rate(index):
        return fp_cuts.weighted_count_above(np.clip(index, 0, max(size - 1, 0)), counts) / slide_count

    def sensitivity(index):
        return slot_cuts.weighted_count_above(np.clip(index, 0, max(size - 1, 0)), counts) / lesions

    with np.errstate(divide="ignore", invalid="ignore"):
        # The lowest grid index whose FP rate is <= target (size: none), by bisection.
        low, high = np.zeros(rows, dtype=np.int64), np.full(rows, size, dtype=np.int64)
        while (active := low < high).any():
            middle = (low + high) // 2
            within = fp_rate(middle) <= target
            high = np.where(active & within, middle, high)
            low = np.where(active & ~within, middle + 1, low)
        first = values.first_at_or_above(low, drawn, size)  # the lowest held value there
        below = values.last_below(first, drawn)  # the next lower threshold
        x_first, y_first = fp_rate(first), sensitivity(first)
        x_below, y_below = fp_rate(below), sensitivity(below)
        between = (y_below - y_first) / (x_below - x_first) * (target - x_first) + y_first
        x_highest, y_highest = fp_rate(highest), sensitivity(highest)
        before_all = (y_highest - 0.0) / (x_highest - 0.0) * (target - 0.0) + 0.0  # from the (0, 0) point
        value = np.where(first <= lowest, sensitivity(lowest), between)
        value = np.where(first == size, before_all, value)
        return np.where(no_threshold, 0.0, value)


def mean_sensitivity(sensitivities: np.ndarray) -> np.ndarray:
    """The FROC score of each row of (rows, targets) sensitivities, as froc_score takes np.mean of
    one curve's: the sum left to right (np.add.reduce adds fewer than 8 values in order), then
    one division by the number of targets. Summing the columns another way (pairwise, or along a
    strided axis) could change the last bit of metrics.json's froc_score."""
    sensitivities = np.asarray(sensitivities, dtype=np.float64)
    total = sensitivities[:, 0]
    for column in range(1, sensitivities.shape[1]):
        total = total + sensitivities[:, column]
    return total / sensitivities.shape[1]
