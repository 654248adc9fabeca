"""Harrell's concordance index for right-censored survival data, on one data set and, vectorised,
on many bootstrap resamples at once.

A pair of patients (i, j) is comparable when i has an event and t_i < t_j, or t_i == t_j and j is
censored (exactly one event at a tied time: the event comes first). It is concordant when the
earlier event has the higher risk; a tied risk counts 1/2. This is
lifelines.utils.concordance_index(time, -risk, event) and
sksurv.metrics.concordance_index_censored(event, time, risk).

A resample is a row of multiplicities (how many copies of each patient it holds): copy a of i and
copy b of j form w_i * w_j pairs, and copies of one patient are never comparable to each other
(same time, same event). So a resample's C-index is w' S w / w' A w with S the concordance and A
the comparability matrix: one matrix product for all resamples, exact in float64 (every term is a
multiple of 1/2 far below 2**53), so equal to the libraries' value bit for bit.
"""

from __future__ import annotations

import numpy as np

# Pair-matrix rows built at a time: temporaries near 32 MB whatever the number of patients.
_PAIR_ELEMENTS = 1 << 22


def check_survival(time, event, risk) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """time and risk as finite float64, event as bool, all 1-D of one length; else ValueError."""
    time = np.asarray(time, dtype=np.float64)
    risk = np.asarray(risk, dtype=np.float64)
    event = np.asarray(event)
    if time.ndim != 1 or risk.shape != time.shape or event.shape != time.shape:
        raise ValueError(f"time, event and risk must be 1-D of equal length, got {time.shape}, {event.shape}, {risk.shape}")
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


def resampled_concordance(time, event, risk, counts) -> tuple[np.ndarray, np.ndarray]:
    """(concordant pairs, comparable pairs) of every resample: `counts` is (resamples x patients)
    multiplicities. A resample's C-index is their ratio; a zero denominator means no comparable
    pair (the C-index of that resample is undefined)."""
    time, event, risk = check_survival(time, event, risk)
    weights = np.asarray(counts, dtype=np.float64)
    if weights.ndim != 2 or weights.shape[1] != len(time):
        raise ValueError(f"counts must be (resamples x {len(time)}), got {weights.shape}")
    n = len(time)
    numerators = np.zeros(len(weights))
    events = np.flatnonzero(event)  # only a patient with an event can be the earlier of a pair
    if n == 0 or len(events) == 0:
        return numerators, np.zeros(len(weights))
    # Comparable pairs depend on the times only: per resample, the weight of later times plus
    # censored equal times, by cumulative sums over the time-sorted patients (no pair matrix).
    order = np.argsort(time, kind="stable")
    times, group_of_sorted = np.unique(time[order], return_inverse=True)
    starts = np.flatnonzero(np.r_[True, np.diff(group_of_sorted) != 0])
    ends = np.r_[starts[1:], n] - 1  # last sorted position of each distinct time
    sorted_weights = np.ascontiguousarray(weights[:, order].T)  # patients x resamples: fast cumsum
    cumulative = np.cumsum(sorted_weights, axis=0)
    later = cumulative[-1] - cumulative[ends]  # per distinct time: weight of strictly later times
    censored_cumulative = np.cumsum(sorted_weights * ~event[order, None], axis=0)[ends]
    censored_per_time = np.diff(censored_cumulative, axis=0, prepend=0.0)  # censored at that time
    group = np.empty(n, dtype=np.int64)
    group[order] = group_of_sorted
    partners = later[group[events]] + censored_per_time[group[events]]  # events x resamples
    denominators = np.einsum("kr,rk->r", partners, weights[:, events])
    # Concordance needs the risks too: w' S w, S built for a block of event rows at a time.
    rows = max(1, _PAIR_ELEMENTS // n)
    for start in range(0, len(events), rows):
        i = events[start:start + rows]
        t_i, r_i = time[i, None], risk[i, None]
        comparable = (t_i < time) | ((t_i == time) & ~event)
        concordant = np.where(comparable, (r_i > risk) + 0.5 * (r_i == risk), 0.0)
        # w' S w restricted to rows i: sum over i of w_i * (S[i] @ w)
        numerators += np.einsum("rk,rk->r", weights @ concordant.T, weights[:, i])
    return numerators, denominators
