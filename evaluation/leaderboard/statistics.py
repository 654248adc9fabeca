"""Paired-bootstrap statistics of a final ranking (ranking.json's `statistics`).

Every submission is resampled with the same draws of cases (the seed and the number of cases
fix them), each challenge recomputes its ranked values on every resample from its per-case
results, and the official rule ranks the submissions again in each resample. From those
rankings, per submission: the 95% percentile interval of each ranked value (`value_ci`) and of
its rank (`rank_ci`), the share of resamples it ranks first (`p_first`, k submissions tied
first getting 1/k each) and its mean rank; per ordered pair, the share of resamples where a
ranks strictly above b plus half the ties (`p_better`), and for pairs adjacent in the final
ranking a one-sided paired-bootstrap test of "a better than b" (p = 1 - p_better),
Holm-adjusted over those pairs; and the mean Kendall's tau-b between each resample's ranking
and the final one (challengeR's ranking stability).

A rule of per-case values (its `case_paths`) is given each resample's case weights: the same
seeded draws of the cases (CaseDraws, the seed and the number of cases), under which its per-case
arrays are averaged, a case drawn k times counting k times.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from evaluation.declarations.ranking_rules import RankedTable, RankingRule, case_means
from evaluation.leaderboard.standings import Standing, json_number
from evaluation.metrics.resampling import CaseDraws

CI_PERCENTS = (2.5, 97.5)
PAIR_CELLS = 4_000_000  # resamples x submissions^2 compared at a time: memory flat for hundreds of submissions
# (a few float arrays of this many cells at once: ~150 MB)


CASE_CELLS = 2_000_000  # resamples x cases of case weights at a time (a rule of per-case values)


def _blocks(resamples: int, n: int, cases: int = 0) -> list[slice]:
    rows = max(1, PAIR_CELLS // max(1, n * n))
    if cases:
        rows = max(1, min(rows, CASE_CELLS // cases))
    return [slice(start, min(resamples, start + rows)) for start in range(0, resamples, rows)]


def resampled_tables(rule: RankingRule, values: dict[str, np.ndarray], tie_method: str, resamples: int, n: int,
                     per_case: dict[str, np.ndarray] | None = None, seed: int = 0) -> RankedTable:
    """The rule applied to each resample (row) of values {path: (resamples, n)}, and of the
    per-case arrays {name: (cases, n)} averaged with each resample's case weights (CaseDraws of
    the seed): the ranks and shown values (resamples, n) of every row."""
    cases = len(next(iter(per_case.values()))) if per_case else 0
    draws = CaseDraws(cases, seed) if cases else None
    ranks, shown = [], {}
    for block in _blocks(resamples, n, cases):
        block_values = {path: column[block] for path, column in values.items()}
        if per_case:
            rows = block.stop - block.start
            block_values.update(case_means(per_case, draws.counts(rows) if draws else np.zeros((rows, 0))))
        table = rule.rank(block_values, tie_method)
        ranks.append(table.ranks)
        for key, column in table.values.items():
            shown.setdefault(key, []).append(column)
    if not ranks:
        return RankedTable(np.empty((0, n)), {}, {})
    return RankedTable(np.concatenate(ranks), {key: np.concatenate(parts) for key, parts in shown.items()}, {})


def holm_rejections(p_values: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's step-down procedure: reject the k-th smallest p (k = 0, 1, ...) while
    p <= alpha / (m - k); the first failure stops it."""
    p_values = np.asarray(p_values, dtype=np.float64)
    m = len(p_values)
    rejected = np.zeros(m, dtype=bool)
    for k, i in enumerate(np.argsort(p_values, kind="stable")):
        if p_values[i] > alpha / (m - k):
            break
        rejected[i] = True
    return rejected


def kendall_tau_b(ranks: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row of `ranks` (resamples x n) with `reference` (n,), as
    scipy.stats.kendalltau computes it; NaN where a ranking is constant. Counted over all ordered
    pairs and halved (sign(x_i - x_j) * sign(y_i - y_j) is symmetric): no copy of the upper
    triangle, whose index arrays alone are n^2 integers."""
    ranks = np.asarray(ranks, dtype=np.float64)
    reference = np.asarray(reference, dtype=np.float64)
    n = ranks.shape[-1]
    sx = np.subtract(ranks[:, :, None], ranks[:, None, :])
    np.sign(sx, out=sx)
    sy = np.sign(reference[:, None] - reference[None, :])
    pairs = n * (n - 1) // 2
    tied_x = ((sx == 0).sum(axis=(1, 2)) - n) // 2  # the diagonal is no pair
    tied_y = (int((sy == 0).sum()) - n) // 2
    concordance = np.einsum("rij,ij->r", sx, sy) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return concordance / np.sqrt((pairs - tied_x) * float(pairs - tied_y))


def _interval(values: np.ndarray) -> list | None:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return None
    return [json_number(v) for v in np.percentile(finite, CI_PERCENTS)]


def leaderboard_statistics(standing: Standing, resampled: dict[str, dict[str, np.ndarray]], tie_method: str,
                           alpha: float, notes: list[str], resamples: int | None = None,
                           seed: int = 0) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """statistics.leaderboards.<name>, and {submission: [share of resamples with rank 1, rank 2,
    ...]} for the rank-stability chart; resampled is {submission: {path: (resamples,) values}}.
    A rule of per-case values gets `resamples` seeded draws of the standing's cases (`seed`)."""
    rule: RankingRule = standing.rule
    names = standing.names
    values = {path: np.column_stack([resampled[name][path] for name in names]) for path in rule.paths}
    if resamples is None:
        resamples = next(iter(values.values())).shape[0]
    table = resampled_tables(rule, values, tie_method, resamples, len(names), standing.per_case, seed)
    ranks = table.ranks  # (resamples, submissions)
    resamples, n = ranks.shape
    undefined = {path: int(np.isnan(column).sum()) for path, column in values.items()}
    for path, count in undefined.items():
        if count:
            notes.append(f"{rule.name}: {path} is undefined in {count} of {resamples * n} resampled values "
                         f"(ranked last in those resamples; left out of value_ci).")

    first = ranks == 1
    p_first = (first / first.sum(axis=1, keepdims=True)).mean(axis=0)
    document: dict[str, Any] = {}
    for i, name in enumerate(names):
        document[name] = {
            "value_ci": {path: _interval(column[:, i]) for path, column in table.values.items()},
            "rank_ci": [json_number(v) for v in np.percentile(ranks[:, i], CI_PERCENTS)],
            "p_first": json_number(p_first[i]),
            "mean_rank": json_number(ranks[:, i].mean()),
        }

    above, level = np.zeros((n, n)), np.zeros((n, n))
    for block in _blocks(resamples, n):
        above += (ranks[block, :, None] < ranks[block, None, :]).sum(axis=0)
        level += (ranks[block, :, None] == ranks[block, None, :]).sum(axis=0)
    p_better = (above + level / 2.0) / resamples
    order = standing.order()
    adjacent = list(itertools.pairwise(order))  # (upper, lower) in the final ranking
    rejected = holm_rejections(np.array([1.0 - p_better[a, b] for a, b in adjacent]), alpha)
    significant = {pair: bool(r) for pair, r in zip(adjacent, rejected, strict=True)}
    document["pairwise"] = {
        names[a]: {names[b]: {"p_better": json_number(p_better[a, b]), "significant": significant.get((a, b))}
                   for b in range(n) if b != a}
        for a in range(n)
    }
    tau = (np.concatenate([kendall_tau_b(ranks[block], standing.ranks) for block in _blocks(resamples, n)])
           if n > 1 else np.full(resamples, np.nan))
    defined = tau[np.isfinite(tau)]
    if defined.size == 0:
        document["kendall_tau"] = None
        notes.append(f"{rule.name}: Kendall's tau is undefined (fewer than two submissions, or every one tied).")
    else:
        document["kendall_tau"] = json_number(defined.mean())
        if defined.size < resamples:
            notes.append(f"{rule.name}: Kendall's tau is the mean over the {defined.size} of {resamples} resamples "
                         f"whose ranking is not all ties.")
    distributions = {name: [float(v) for v in (ranks[:, i, None] == np.arange(1, n + 1)).mean(axis=0)]
                     for i, name in enumerate(names)}
    return document, distributions
