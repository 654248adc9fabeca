"""Harrell's concordance index for right-censored survival data, on one data set and, vectorised,
on many bootstrap resamples at once.

A pair of patients (i, j) is comparable when i has an event and t_i < t_j, or t_i == t_j and j is
censored (exactly one event at a tied time: the event comes first). It is concordant when the
earlier event has the higher risk; a tied risk (exactly equal) counts 1/2. This is
lifelines.utils.concordance_index(time, -risk, event) and
sksurv.metrics.concordance_index_censored(event, time, risk, tied_tol=0). scikit-survival's
default tied_tol=1e-8 counts risks within 1e-8 (absolute) of each other as tied, so it differs
on risks that close (tests/test_hecktor2025_metrics.py shows a case).

A row of `sample_weight` (a bootstrap resample: how many copies of each patient it holds): copy a
of i and copy b of j form w_i * w_j pairs, and copies of one patient are never comparable to each
other (same time, same event). So a row's C-index is w' S w / w' A w with S the concordance and A
the comparability matrix: one matrix product for all rows (S and A side by side), exact in float64
for whole-number weights (every term is a multiple of 1/2 far below 2**53, so no order of
summation changes a bit), so equal to the libraries' value bit for bit.
"""

from __future__ import annotations

import numpy as np

from evaluation.metrics.registry import metric
from evaluation.metrics.validation import check_binary, check_same_length, check_sample_weight, check_values

# Pair-matrix rows built at a time: temporaries near 32 MB whatever the number of patients.
_PAIR_ELEMENTS = 1 << 22
# float32 holds every multiple of 1/2 up to 2**23 exactly: a product S @ w of whole multiplicities
# below this total per resample is exact in float32 (each partial sum is such a multiple), at half
# the time of float64.
_FLOAT32_EXACT_TOTAL = 1 << 22


def check_survival(time, event, risk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """time and risk as finite float64, event as bool, all 1-D of one length; else ValueError."""
    time, risk = check_values(time, "time"), check_values(risk, "risk")
    event = check_binary(event, "event")  # 1: an event, 0: censored
    check_same_length(time=time, event=event, risk=risk)
    return time, event, risk


@metric(kind="survival", better="higher",
        equals=("lifelines.utils.concordance_index(time, -risk, event) (bit for bit)",
                "sksurv.metrics.concordance_index_censored(event, time, risk, tied_tol=0) (bit for bit)"),
        citation="Harrell et al., JAMA 247(18), 1982")
def concordance_index(time, event, risk, sample_weight=None):
    """Harrell's concordance index (C-index) of risk scores for right-censored times.

    Over the comparable pairs (i has an event and t_i < t_j, or t_i == t_j and j is censored),
    the share in which the earlier event has the higher risk, an exactly tied risk counting 1/2;
    a higher risk means an earlier event. With `sample_weight` a pair weighs the product of its
    cases' weights (copies of one case are never comparable). NaN without a comparable pair.
    """
    numerators, denominators = concordance_pairs(time, event, risk, sample_weight)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = np.where(denominators > 0, numerators / denominators, np.nan)
    return float(values[0]) if np.ndim(sample_weight) < 2 else values


def concordance_pairs(time, event, risk, sample_weight=None) -> tuple[np.ndarray, np.ndarray]:
    """(concordant pairs, comparable pairs), each (rows,), of every row of `sample_weight`
    (None: every case once): the C-index is their ratio; a zero denominator means no comparable
    pair. Exact in float64 (module docstring)."""
    time, event, risk = check_survival(time, event, risk)
    given = sample_weight
    weights, _ = check_sample_weight(sample_weight, len(time))
    n = len(time)
    exact_in_float32 = (given is not None and np.issubdtype(np.asarray(given).dtype, np.integer) and weights.size > 0
                        and weights.sum(axis=1).max() < _FLOAT32_EXACT_TOTAL)
    product_type = np.float32 if exact_in_float32 else np.float64
    left = weights.astype(product_type, copy=False)
    numerators, denominators = np.zeros(len(weights)), np.zeros(len(weights))
    events = np.flatnonzero(event)  # only a case with an event can be the earlier of a pair
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
