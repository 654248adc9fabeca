"""Harrell's concordance index for right-censored survival data, on one data set and, vectorised,
on many bootstrap resamples at once.

A pair of patients (i, j) is comparable when i has an event and t_i < t_j, or t_i == t_j and j is
censored (exactly one event at a tied time: the event comes first). It is concordant when the
earlier event has the higher risk; a tied risk (exactly equal) counts 1/2. This is
lifelines.utils.concordance_index(time, -risk, event) and
sksurv.metrics.concordance_index_censored(event, time, risk, tied_tol=0). scikit-survival's
default tied_tol=1e-8 counts risks within 1e-8 (absolute) of each other as tied, so it differs
on risks that close (tests/test_hecktor2025_metrics.py shows a case).

A resample is a row of multiplicities (how many copies of each patient it holds): copy a of i and
copy b of j form w_i * w_j pairs, and copies of one patient are never comparable to each other
(same time, same event). So a resample's C-index is w' S w / w' A w with S the concordance and A
the comparability matrix: one matrix product for all resamples (S and A side by side), exact in
float64 (every term is a multiple of 1/2 far below 2**53, so no order of summation changes a
bit), so equal to the libraries' value bit for bit.
"""

from __future__ import annotations

import numpy as np

# Pair-matrix rows built at a time: temporaries near 32 MB whatever the number of patients.
_PAIR_ELEMENTS = 1 << 22
# float32 holds every multiple of 1/2 up to 2**23 exactly: a product S @ w of whole multiplicities
# below this total per resample is exact in float32 (each partial sum is such a multiple), at half
# the time of float64.
_FLOAT32_EXACT_TOTAL = 1 << 22


def check_survival(time, event, risk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """time and risk as finite float64, event as bool, all 1-D of one length; else ValueError."""
    time = np.asarray(time, dtype=np.float64)
    risk = np.asarray(risk, dtype=np.float64)
    event = np.asarray(event)
    if time.ndim != 1 or risk.shape != time.shape or event.shape != time.shape:
        raise ValueError(f"time, event and risk must be 1-D of equal length, "
                         f"got {time.shape}, {event.shape}, {risk.shape}")
    if not np.isin(event, (0, 1)).all():
        raise ValueError("event must hold only 0 (censored) and 1 (event)")
    if not (np.isfinite(time).all() and np.isfinite(risk).all()):
        raise ValueError("time and risk must be finite")
    return time, event.astype(bool), risk


def concordance_index(time, event, risk) -> float:
    """Harrell's C-index of `risk` (higher = earlier event). ValueError if no pair is comparable."""
    numerators, denominators = resampled_concordance(time, event, risk, np.ones((1, len(np.asarray(time)))))
    if denominators[0] == 0:
        raise ValueError("no comparable pair: the C-index is undefined")
    return float(numerators[0] / denominators[0])


def weighted_concordance_index(time, event, risk, sample_weight) -> np.ndarray:
    """Harrell's C-index under each row of case weights (rows x patients; each pair weighted by
    the product of its patients' weights): concordant over comparable pairs, NaN where a row has
    no comparable pair."""
    numerators, denominators = resampled_concordance(time, event, risk, sample_weight)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominators > 0, numerators / denominators, np.nan)


def resampled_concordance(time, event, risk, counts) -> tuple[np.ndarray, np.ndarray]:
    """(concordant pairs, comparable pairs) of every resample: `counts` is (resamples x patients)
    multiplicities. A resample's C-index is their ratio; a zero denominator means no comparable
    pair (the C-index of that resample is undefined)."""
    time, event, risk = check_survival(time, event, risk)
    counts = np.asarray(counts)
    weights = counts.astype(np.float64)
    if weights.ndim != 2 or weights.shape[1] != len(time):
        raise ValueError(f"counts must be (resamples x {len(time)}), got {weights.shape}")
    n = len(time)
    exact_in_float32 = (np.issubdtype(counts.dtype, np.integer) and weights.size > 0
                        and np.abs(weights).sum(axis=1).max() < _FLOAT32_EXACT_TOTAL)
    product_type = np.float32 if exact_in_float32 else np.float64
    left = weights.astype(product_type, copy=False)
    numerators, denominators = np.zeros(len(weights)), np.zeros(len(weights))
    events = np.flatnonzero(event)  # only a patient with an event can be the earlier of a pair
    censored = ~event
    # Rows of S and A for a block of events at a time: w' S w restricted to rows i is the sum
    # over i of w_i * (S[i] @ w), and A likewise, from one product of the weights with both.
    rows = max(1, _PAIR_ELEMENTS // (2 * n)) if n else 1
    for start in range(0, len(events), rows):
        i = events[start:start + rows]
        t_i, r_i = time[i, None], risk[i, None]
        comparable = (t_i < time) | ((t_i == time) & censored)
        concordant = np.where(comparable, (r_i > risk) + 0.5 * (r_i == risk), 0.0)
        # resamples x (S rows, A rows); the sums of products below are float64
        pairs = left @ np.concatenate([concordant, comparable], dtype=product_type).T
        weights_i = weights[:, i]
        numerators += np.einsum("rk,rk->r", pairs[:, :len(i)], weights_i)
        denominators += np.einsum("rk,rk->r", pairs[:, len(i):], weights_i)
    return numerators, denominators
