"""Weighted sums and means of per-case values over rows of case weights (a bootstrap resample is
a row of counts; the plain mean is the row of ones)."""

from __future__ import annotations

import math

import numpy as np


def weighted_sum(values, sample_weight) -> np.ndarray:
    """Σ_j w[r, j] x[j, ...] for each row r: values (n,) or (n, k), sample_weight (rows, n); the
    result has shape (rows,) or (rows, k).

    A row of ones is summed with math.fsum (correctly rounded, whatever the order of the cases):
    the plain sum, as metrics.json has always been computed, byte for byte. Any other row is
    one matrix product (BLAS), as the bootstrap has always computed it; the two agree to the
    last bits (a few ulp), not bit for bit."""
    values = np.asarray(values, dtype=np.float64)
    weights = np.asarray(sample_weight)
    if weights.ndim != 2 or weights.shape[1] != values.shape[0]:
        raise ValueError(f"sample_weight of shape {weights.shape} does not weigh {values.shape[0]} values")
    sums = weights.astype(np.float64) @ values
    ones = (weights == 1).all(axis=1)
    if ones.any():
        columns = values.reshape(values.shape[0], -1).T
        plain = np.array([math.fsum(column) for column in columns]).reshape(values.shape[1:])
        sums[ones] = plain
    return sums


def weighted_mean(values, sample_weight) -> np.ndarray:
    """weighted_sum over the sum of the row's weights (NaN for a row of zeros): the mean of the
    values each repeated as many times as its weight says."""
    weights = np.asarray(sample_weight)
    total = weights.sum(axis=1, dtype=np.float64)
    sums = weighted_sum(values, weights)
    total = total if sums.ndim == 1 else total[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / total
