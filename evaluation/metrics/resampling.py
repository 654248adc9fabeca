"""Seeded bootstrap draws, as rows of multiplicities (the `sample_weight` rows every weighted
metric takes: a case drawn k times weighs k), and the percentile summary of a bootstrap
distribution."""

from __future__ import annotations

import numpy as np


def draws_to_counts(draws: np.ndarray, n_items: int) -> np.ndarray:
    """(resamples x draws) item indices -> (resamples x n_items) multiplicities."""
    draws = np.asarray(draws, dtype=np.int64)
    rows = draws.shape[0]
    flat = (draws + n_items * np.arange(rows)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * n_items).reshape(rows, n_items)


class CaseDraws:
    """Seeded bootstrap resamples of `cases` cases (each drawing `cases` times with replacement),
    as rows of multiplicities, taken block after block: the rows depend only on the seed and the
    number of cases, whatever the sizes of the blocks (one stream of draws). The final ranking's
    resamples: every submission gets the same rows (paired comparisons)."""

    def __init__(self, cases: int, seed: int):
        self.cases = cases
        self._rng = np.random.default_rng(seed)

    def counts(self, rows: int) -> np.ndarray:
        """The next `rows` resamples: (rows, cases) multiplicities."""
        return draws_to_counts(self._rng.integers(0, self.cases, size=(rows, self.cases)), self.cases)


def whole_counts(sample_weight, what: str = "a slide") -> np.ndarray:
    """Rows of case weights as int64 multiplicities; ValueError if one is not a whole number
    (casting would truncate it silently) or is negative."""
    counts = np.asarray(sample_weight)
    if counts.size and not np.issubdtype(counts.dtype, np.integer) and not np.array_equal(counts, np.round(counts)):
        raise ValueError(f"sample_weight must hold whole numbers ({what} counts a whole number of times)")
    counts = counts.astype(np.int64)
    if (counts < 0).any():
        raise ValueError("sample_weight must be non-negative")
    return counts


def positives_per_resample(n_negative: int, negatives_per_positive: int) -> int:
    """How many positives a resample draws to reach the simulated prevalence, at least one
    (RARE26: max(1, int(n_ndbe / 100)))."""
    return max(1, n_negative // negatives_per_positive)


def draw_with_replacement(rng: np.random.Generator, n_items: int, repetitions: int, size: int) -> np.ndarray:
    """(repetitions x size) indices drawn uniformly with replacement from range(n_items)."""
    if n_items < 1:
        raise ValueError("nothing to draw from")
    return rng.integers(0, n_items, size=(repetitions, size))


def percentile_summary(values: np.ndarray, level: float = 95.0) -> tuple[float, float, float]:
    """Median and the central `level`% interval (numpy's default linear interpolation)."""
    tail = (100.0 - level) / 2.0
    lower, upper = np.percentile(values, [tail, 100.0 - tail])
    return float(np.median(values)), float(lower), float(upper)


def linear_percentiles(values: np.ndarray, percents) -> np.ndarray:
    """np.percentile(values, percents) with its default 'linear' method, for 1-D finite values and
    percents in [0, 100], step for step as numpy 2 computes it (so equal bit for bit): numpy's
    own call goes through np.unique, whose first call imports numpy.ma (~10 ms of start-up)."""
    ordered = np.sort(np.asarray(values, dtype=np.float64))  # the order statistics partition finds
    virtual = (len(ordered) - 1) * np.true_divide(np.asarray(percents, dtype=np.float64), 100)
    previous = np.floor(virtual)
    following = previous + 1
    last = virtual >= len(ordered) - 1
    previous[last], following[last] = -1, -1
    previous, following = previous.astype(np.intp), following.astype(np.intp)
    return numpy_lerp(ordered[previous], ordered[following], virtual - previous)


def numpy_lerp(below: np.ndarray, above: np.ndarray, gamma: np.ndarray) -> np.ndarray:
    """below + (above − below) · gamma as numpy's percentile computes it (its _lerp: from the
    other end when gamma >= 0.5), so that a percentile computed here has numpy's bits."""
    difference = above - below
    result = below + difference * gamma
    np.subtract(above, difference * (1 - gamma), out=result, where=gamma >= 0.5)
    return result
