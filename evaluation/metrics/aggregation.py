"""Aggregation of per-case (and per-label) values: weighted sums, means, medians and pandas'
`describe`, over rows of case weights at once.

`sample_weight` is the weight of each case: None (each once), (cases,), or (rows, cases) for
many weightings at once (a bootstrap resample is a row of counts; the plain aggregate is the row
of ones). A case of weight k counts as k copies of it. `decimals` rounds the per-case values first
(numpy.round), as some challenges round before aggregating. Over labels: `mean_over_labels`,
over a fixed list or over the labels present.
"""

from __future__ import annotations

import math

import numpy as np

from evaluation.metrics.registry import metric
from evaluation.metrics.resampling import numpy_lerp, whole_counts
from evaluation.metrics.validation import check_choice, check_integer, check_sample_weight, per_row, weight_totals

PANDAS_DESCRIBE = ("count", "mean", "std", "min", "25%", "50%", "75%", "max")
QUANTILE_METHODS = {
    "linear": "numpy's default and pandas' describe: position q (N − 1) of the sorted values (0-based), "
              "read between its neighbours",
    "exclusive": "Python's statistics.quantiles default (method='exclusive'): position q (N + 1) (1-based), "
                 "clamped to the 1st ... (N − 1)th gap, so that small samples extrapolate beyond min and max",
    "inclusive": "Python's statistics.quantiles(method='inclusive'): position q (N − 1) (0-based), as 'linear', "
                 "but computed as Python does ((a (n − δ) + b δ) / n): its bits",
}


def _check_values(values, sample_weight, decimals):
    """(values as float64 (cases, ...), weights (rows, cases), single)."""
    try:
        values = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("values must hold numbers") from None
    if values.ndim == 0:
        raise ValueError("values must have one value (or one row of values) per case")
    if decimals is not None:
        values = np.round(values, check_integer(decimals, "decimals"))
    weights, single = check_sample_weight(sample_weight, values.shape[0])
    return values, weights, single


def weighted_sum(values, sample_weight=None) -> np.ndarray:
    """Σ_j w[r, j] x[j, ...] for each row r of weights: values (cases,) or (cases, k); the result
    (rows,) or (rows, k), without the rows axis for one weighting given as 1-D or None.

    A row of ones is summed with math.fsum (correctly rounded, whatever the order of the cases):
    the plain sum, as metrics.json has always been computed, byte for byte. Any other row is one
    matrix product (BLAS), as the bootstrap has always computed it; the two agree to the last
    bits (a few ulp), not bit for bit."""
    values, weights, single = _check_values(values, sample_weight, None)
    if np.isfinite(values).all():
        sums = weights @ values
    else:  # a case of weight 0 is absent: its NaN or infinity must not reach the sum (0 × NaN is NaN)
        with np.errstate(invalid="ignore"):  # inf − inf: NaN, as the plain sum gives
            sums = np.stack([row[kept] @ values[kept] for row, kept in zip(weights, weights > 0, strict=True)])
    ones = (weights == 1).all(axis=1)
    if ones.any():
        columns = values.reshape(values.shape[0], math.prod(values.shape[1:])).T
        plain = np.array([math.fsum(column) for column in columns]).reshape(values.shape[1:])
        sums[ones] = plain
    return sums[0] if single else sums


def row_means(values: np.ndarray, weights: np.ndarray, totals: np.ndarray | None = None) -> np.ndarray:
    """Σ_j w[r, j] x[j] / Σ_j w[r, j] for each row r of checked weights (rows, n) and values (n,),
    one matrix product (BLAS): a case of weight 0 is absent, its value (NaN or infinity included)
    not counted; NaN for a row of zero weights. `totals`: the rows' weight_totals, if known."""
    totals = weight_totals(weights) if totals is None else totals
    if not np.isfinite(values).all():
        with np.errstate(invalid="ignore"):  # 0 × inf, left out by the where
            return np.where(weights > 0, weights * values, 0.0).sum(axis=1) / totals
    return weights @ values / totals


@metric(kind="case_values", better=None,
        equals=("numpy.mean of the values each repeated as often as its weight says",
                "numpy.average(values, weights=sample_weight)"),
        citation="the weighted arithmetic mean")
def weighted_mean(values, sample_weight=None, decimals=None):
    """Mean of per-case values, each case counted as often as its weight says.

    Σ w x / Σ w (NaN for a row of zero weights; a NaN value makes the mean NaN). The row of ones
    sums exactly (math.fsum), so the plain mean does not depend on the order of the cases.
    """
    values, weights, single = _check_values(values, sample_weight, decimals)
    total = weights.sum(axis=1)
    sums = weighted_sum(values, weights)
    total = total.reshape((-1,) + (1,) * (sums.ndim - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / total
    return per_row(means, single)


def _sorted_copies(values: np.ndarray, weights: np.ndarray):
    """(the value at a position of the sorted copies, the total weight): each case repeated as
    often as its weight says, sorted; a case covers the positions from its predecessors' total
    weight up to its own (positions past the last are the last value)."""
    kept = weights > 0
    values, weights = values[kept], weights[kept]
    order = np.argsort(values, kind="stable")
    values, reach = values[order], np.cumsum(weights[order])

    def at(position):
        return values[np.minimum(np.searchsorted(reach, position, side="right"), len(values) - 1)]

    return at, reach[-1]


def _weighted_quantiles(values: np.ndarray, weights: np.ndarray, quantiles) -> np.ndarray:
    """Linear quantiles (numpy's default, pandas' describe) of 1-D values each repeated as often
    as its weight says: the sorted copies indexed 0 to W - 1 (W the total weight), position
    q (W - 1) read between its neighbours with numpy's lerp. Fractional weights: the same, a case
    covering the positions from its predecessors' total weight to its own."""
    at, total = _sorted_copies(values, weights)
    virtual = np.maximum(0.0, (total - 1) * np.asarray(quantiles, dtype=np.float64))
    below = np.floor(virtual)
    return numpy_lerp(at(below), at(below + 1), virtual - below)


def _statistics_quartiles(values: np.ndarray, weights: np.ndarray, method: str) -> list[float]:
    """The quartiles of Python's statistics.quantiles(n=4, method=method) of 1-D values each
    repeated as often as its (whole) weight says, with its integer arithmetic: of N copies, the
    i-th quartile lies at the j-th copy and δ/4 of the way to the next (j, δ from i × m with m =
    N − 1, inclusive, or N + 1, exclusive, clamped there to the 1st ... (N − 1)th gap), read as
    (a (4 − δ) + b δ) / 4. One copy: its value (Python 3.13 returns it; 3.11 and 3.12 raise)."""
    at, total = _sorted_copies(values, weights)
    copies, n = int(total), 4
    if copies == 1:
        return [float(at(0))] * (n - 1)
    quartiles = []
    for i in range(1, n):
        if method == "inclusive":
            j, delta = divmod(i * (copies - 1), n)
            below, above = at(j), at(j + 1)
        else:
            j = min(max(i * (copies + 1) // n, 1), copies - 1)
            delta = i * (copies + 1) - j * n  # beyond [0, n] where clamped: extrapolation, as Python
            below, above = at(j - 1), at(j)
        quartiles.append(float((below * (n - delta) + above * delta) / n))
    return quartiles


@metric(kind="case_values", better=None,
        equals=("numpy.median of the values each repeated as often as its weight says",
                "statistics.median and the middle of statistics.quantiles(n=4), either method (one rule for "
                "the median)"),
        citation="the weighted median (the median of the repeated sample)")
def weighted_median(values, sample_weight=None, decimals=None):
    """Median of per-case values, each case counted as often as its weight says.

    The middle of the sorted copies (the mean of the two middle ones for an even total), as
    numpy.median of the repeated values; NaN for a row of zero weights or with a NaN value.
    """
    values, weights, single = _check_values(values, sample_weight, decimals)
    if values.ndim != 1:
        raise ValueError(f"values must be 1-D (one value per case), got shape {values.shape}")
    medians = np.full(len(weights), np.nan)
    for r, row in enumerate(weights):
        if row.sum() > 0 and not np.isnan(values[row > 0]).any():
            at, total = _sorted_copies(values, row)
            middle = max(0.0, (total - 1) / 2)
            # numpy's median: the middle copy, or the mean of the two middle ones
            medians[r] = np.mean([at(math.floor(middle)), at(math.ceil(middle))])
    return per_row(medians, single)


@metric(kind="case_values", better=None, returns="describe",
        variants={"quantile_method": QUANTILE_METHODS},
        equals=("pandas.Series.describe() of the values each repeated as often as its weight says "
                "(mean and std to rounding: pandas sums pairwise)", "evalutils' aggregates in metrics.json",
                "statistics.quantiles(n=4, method=...) of the repeated values for the quartiles "
                "(quantile_method 'exclusive' or 'inclusive'; ULS23's aggregates use 'exclusive'), bit for bit"),
        citation="pandas 2 Series.describe; Python statistics.quantiles (Hyndman and Fan, The American "
                 "Statistician 50(4), 1996: exclusive is their method 6, inclusive and linear their method 7)",
        checked_variants=({"quantile_method": "exclusive"}, {"quantile_method": "inclusive"}))
def describe(values, sample_weight=None, decimals=None, quantile_method: str = "linear") -> dict | list[dict]:
    """count, mean, std, min, 25%, 50%, 75%, max of per-case values, as pandas' describe.

    The values each counted as often as its weight says, NaN values left out as pandas leaves
    them out; std with ddof 1 (NaN for a count of 1 or less). The quartiles by
    `quantile_method`: "linear" (pandas', numpy's default), or Python's statistics.quantiles
    rule, "exclusive" (its default) or "inclusive", computed as it computes them. Python's rules
    count data points, so with them a weight must be a whole number (a case of weight k is k
    copies of its value; ValueError otherwise); "linear" also reads fractional weights (a case
    covers the positions from its predecessors' total weight to its own). The median (50%) is
    the middle of the copies under every method. A single copy has its value as every quartile
    (Python 3.13's statistics.quantiles; 3.11 and 3.12 raise there). A dict of floats; for rows
    of weights, a list of such dicts, one per row.
    """
    check_choice(quantile_method, "quantile_method", tuple(QUANTILE_METHODS))
    values, weights, single = _check_values(values, sample_weight, decimals)
    if values.ndim != 1:
        raise ValueError(f"values must be 1-D (one value per case), got shape {values.shape}")
    if quantile_method != "linear":
        whole_counts(weights, "a case")  # statistics.quantiles counts data points
    defined = ~np.isnan(values)
    values, weights = values[defined], np.ascontiguousarray(weights[:, defined])
    rows = len(weights)
    summary = {key: np.full(rows, np.nan) for key in PANDAS_DESCRIBE}
    summary["count"] = weights.sum(axis=1)
    means = np.asarray(weighted_mean(values, weights))
    for r, row in enumerate(weights):
        if summary["count"][r] <= 0:
            continue
        mean = means[r]
        summary["mean"][r] = mean
        if summary["count"][r] > 1:
            summary["std"][r] = math.sqrt(float(np.sum(row * (values - mean) ** 2)) / (summary["count"][r] - 1))
        present = values[row > 0]
        summary["min"][r], summary["max"][r] = present.min(), present.max()
        if quantile_method == "linear":
            quartiles = _weighted_quantiles(values, row, [0.25, 0.5, 0.75])
        else:
            quartiles = _statistics_quartiles(values, row, quantile_method)
        summary["25%"][r], summary["50%"][r], summary["75%"][r] = quartiles
    rows_of = [{key: float(value[r]) for key, value in summary.items()} for r in range(rows)]
    return rows_of[0] if single else rows_of


def mean_over_labels(values, present=None, none_present: float = math.nan) -> np.ndarray | float:
    """Mean of per-label values over the last axis (labels): over every label of a fixed list
    (`present` None: labels absent from both images carry their empty policy's value already),
    or over the labels present (`present`, a boolean array of the values' shape, e.g. the labels
    in either image), `none_present` where no label is."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 0:
        raise ValueError("values must have one value per label (last axis)")
    if present is None:
        means = values.mean(axis=-1)
    else:
        present = np.asarray(present)
        if present.shape != values.shape or present.dtype != bool:
            raise ValueError(f"present must be a boolean array of the values' shape {values.shape}, got "
                             f"{present.dtype} {present.shape}")
        count = present.sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(count > 0, np.where(present, values, 0.0).sum(axis=-1) / np.maximum(count, 1),
                             float(none_present))
    return float(means) if np.ndim(means) == 0 else means
