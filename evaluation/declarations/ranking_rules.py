"""The official rules that rank submissions against each other (python -m evaluation.leaderboard).

grand-challenge.org ranks one number per column; several challenges' rules cannot be said that
way (a tie-break, a mean of ranks, per-case ranks, a nested Borda count), so each challenge
declares its rule as data, next to its `leaderboards`, and the final-ranking command applies it
offline. Every rule is a `RankingRule`: the command knows rules through that interface only. The
generic rules are here: `OrderedRanking` (keys in turn), `MeanOfRanks` (rank on each metric,
then the mean of the ranks) and `MeanOfCaseRanks` (challengeR's rank-then-aggregate: rank on
every case, then the mean); a rule of one challenge lives in its folder (HECKTOR 2025's nested
Borda count: evaluation/challenges/hecktor2025/ranking.py).

Every rule ranks arrays of shape (..., submissions): one row for the final ranking, one row per
bootstrap resample for the statistics, the same code for both. Values within 1e-12 relative of
each other count as tied; an undefined value (NaN, possible in a resample) ranks below every
number and ties with other undefined values.

Ranks are computed pairwise: a submission's competition rank is 1 + the number of submissions
strictly better than it (ties share the best rank of their group: 1, 1, 3), its fractional rank
adds half the number of submissions tied with it (the mean of the positions a tied group
occupies: 1, 2.5, 2.5, 4). Both equal scipy.stats.rankdata's "min" and "average" (tested).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from evaluation.declarations.columns import Column

TIE_RELATIVE = 1e-12  # values this close (relative) count as tied: two runs' rounding is no ranking
TIE_METHODS = ("average", "min")  # fractional ranks, or the best rank of a tied group


# ---- pairwise comparisons -------------------------------------------------------------------


def _comparisons(values: np.ndarray, order: str) -> tuple[np.ndarray, np.ndarray]:
    """(better, tied), each (..., n, n): better[..., i, j] when i is strictly better than j."""
    values = np.asarray(values, dtype=np.float64)
    if order == "asc":
        values = -values
    a, b = values[..., :, None], values[..., None, :]
    undefined_a, undefined_b = np.isnan(a), np.isnan(b)
    with np.errstate(invalid="ignore"):
        # |a - b| <= TIE_RELATIVE * max(|a|, |b|), each float array made once and reused in place:
        # hundreds of submissions make these (..., n, n) arrays the statistics' largest
        distance = np.subtract(a, b)
        np.abs(distance, out=distance)
        scale = np.maximum(np.abs(a), np.abs(b))
        np.multiply(scale, TIE_RELATIVE, out=scale)
        close = distance <= scale
        del distance, scale
        tied = np.where(undefined_a | undefined_b, undefined_a & undefined_b, close | (a == b))
        better = ~tied & (undefined_b | (~undefined_a & (a > b)))
    return better, tied


def competition_ranks(values: np.ndarray, order: str = "desc") -> np.ndarray:
    """1 + the number of strictly better values along the last axis (1, 1, 3): float array."""
    better, _ = _comparisons(values, order)
    return 1.0 + better.sum(axis=-2)


def fractional_ranks(values: np.ndarray, order: str = "desc", tie_method: str = "average") -> np.ndarray:
    """Mean position of each tied group (1, 2.5, 2.5, 4), or its best position with "min"."""
    if tie_method not in TIE_METHODS:
        raise ValueError(f"tie method {tie_method!r} is not one of {', '.join(TIE_METHODS)}")
    better, tied = _comparisons(values, order)
    ranks = 1.0 + better.sum(axis=-2)
    if tie_method == "average":
        ranks = ranks + (tied.sum(axis=-2) - 1) / 2.0  # tied counts itself
    return ranks


def lexicographic_ranks(columns: list[np.ndarray], orders: list[str]) -> np.ndarray:
    """Competition ranks by the first column, ties broken by the next ones in turn."""
    better = np.zeros(np.shape(columns[0])[:-1] + (np.shape(columns[0])[-1],) * 2, dtype=bool)
    still_tied = np.ones_like(better)
    for values, order in zip(columns, orders, strict=True):
        key_better, key_tied = _comparisons(values, order)
        better |= still_tied & key_better
        still_tied &= key_tied
    return 1.0 + better.sum(axis=-2)


def missing_last_ranks(values: np.ndarray, order: str = "desc", tie_method: str = "min") -> np.ndarray:
    """Ranks along the last axis with undefined values (NaN: a missing case) ranked as challengeR's
    rankNA2 ranks them: the defined values ranked among themselves, each undefined one one below
    the worst rank given ("min": that rank + 1; "average": + the mean of 1..k for k undefined),
    so [0.9, 0.5, 0.5, NaN] gives 1, 2, 2, 3 ("min") where NaN-last competition ranks give 4."""
    ranks = fractional_ranks(values, order, tie_method)  # NaN ranks below every number: the others are unaffected
    missing = np.isnan(np.asarray(values, dtype=np.float64))
    if not missing.any():
        return ranks
    worst = np.where(missing, 0.0, ranks).max(axis=-1, keepdims=True)
    below = 1.0 if tie_method == "min" else (missing.sum(axis=-1, keepdims=True) + 1) / 2.0
    return np.where(missing, worst + below, ranks)


COMPARED_CELLS = 4_000_000  # values x submissions^2 compared at once (per-case ranks): memory flat


def case_means(per_case: Mapping[str, np.ndarray], weights: np.ndarray) -> dict[str, np.ndarray]:
    """{name: (rows, n)}: each row's weighted mean over the cases of each (cases, n) array, the
    weights (rows, cases) being how often each case counts in the row (ones: the test set; a
    bootstrap resample's multiplicities). Undefined (NaN) cells are left out of their mean; a
    submission with none defined gets NaN."""
    weights = np.asarray(weights, dtype=np.float64)
    found = {}
    for name, values in per_case.items():
        values = np.asarray(values, dtype=np.float64)
        defined = np.isfinite(values)
        with np.errstate(invalid="ignore", divide="ignore"):
            found[name] = (weights @ np.where(defined, values, 0.0)) / (weights @ defined.astype(np.float64))
    return found


# ---- the rules --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankedTable:
    """One rule applied: `ranks` (..., n) competition ranks, `values` {key: (..., n)} the values
    shown beside them (the metrics.json paths read, or what the rule derives from per-case
    values) and the intermediate ranks and counts {name: (..., n)} (empty for a plain ordering)."""

    ranks: np.ndarray
    values: dict[str, np.ndarray]
    partial_ranks: dict[str, np.ndarray]


class RankingRule(ABC):
    """What every final-ranking rule is to the final-ranking command (evaluation/leaderboard/),
    which knows rules through these members only.

    A rule reads submission-level values at `paths` of every metrics.json (one row: the final
    ranking; the challenge's `aggregate` recomputes them on each bootstrap resample, one row per
    resample) and, when `case_paths` is not empty, per-case values: metrics.json's object at
    `cases_path` is {case id: {...}}, each case's value read at each of `case_paths` inside it.
    `per_case` turns those (cases, n) values into (cases, n) arrays once; the command averages
    them over the cases with each row's case weights (`case_means`) and adds them to the values
    `rank` gets. `rank` ranks every row at once, vectorised: (..., n) arrays in, (..., n) out."""

    name: str
    cases_path: str | None = None  # metrics.json's per-case object ({case id: {key: value}})
    case_paths: tuple[str, ...] = ()  # paths inside each case's entry; () for a rule of aggregates only

    @property
    @abstractmethod
    def paths(self) -> tuple[str, ...]:
        """The metrics.json paths of the submission-level values the rule reads, each once."""

    def applied(self, documents: Iterable[Mapping[str, Any]]) -> RankingRule:
        """The rule as applied to these submissions' values ({path: value or None} each, for
        every path of `paths`): itself unless a fallback applies."""
        return self

    def applied_notes(self, documents: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
        """What `applied` changed, for ranking.json's notes."""
        return ()

    @abstractmethod
    def describe(self, tie_method: str = "average") -> str:
        """The rule as applied, in one sentence (ranking.json's `rule`); `tie_method` is the
        command's --tie-method."""

    def per_case(self, case_values: Mapping[str, np.ndarray], tie_method: str = "average") -> dict[str, np.ndarray]:
        """{name: (cases, n)} from {case path: (cases, n) values, NaN where missing}, computed
        once; `rank` gets each name's weighted mean over the cases. Empty without case_paths."""
        return {}

    @abstractmethod
    def rank(self, values: Mapping[str, np.ndarray], tie_method: str = "average") -> RankedTable:
        """Ranks every row of {path or per-case name: (..., n)} values."""

    @property
    def partial_titles(self) -> dict[str, str]:
        """{partial rank name: its title in the report}; a name without one is shown as it is."""
        return {}

    @property
    def value_titles(self) -> dict[str, str]:
        """{value key: its title in the report} for values that are no metrics.json path."""
        return {}


def _check_columns(kind: str, columns: tuple[Column, ...]) -> None:
    if not columns:
        raise ValueError(f"{kind}: give at least one column")
    paths = [column.path for column in columns]
    repeated = sorted({path for path in paths if paths.count(path) > 1})
    if repeated:
        raise ValueError(f"{kind}: path(s) {', '.join(repeated)} given more than once (weigh a metric with weights)")
    for column in columns:
        if column.order not in ("asc", "desc"):
            raise ValueError(f"{kind}: {column.path} has order {column.order!r}, not asc or desc")


def _check_weights(kind: str, weights: tuple[float, ...], columns: tuple[Column, ...]) -> None:
    if not weights:
        return
    if len(weights) != len(columns):
        raise ValueError(f"{kind}: {len(weights)} weights for {len(columns)} columns")
    for weight in weights:
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight <= 0:
            raise ValueError(f"{kind}: weight {weight!r} is not a finite number > 0")


def _check_tie_method(kind: str, tie_method: str | None) -> None:
    if tie_method is not None and tie_method not in TIE_METHODS:
        raise ValueError(f"{kind}: tie method {tie_method!r} is not one of {', '.join(TIE_METHODS)}")


def _weighted_mean(arrays: list[np.ndarray], weights: tuple[float, ...]) -> np.ndarray:
    """The (weighted) mean of equally shaped arrays, summed in the order given."""
    weights = weights or (1.0,) * len(arrays)
    total = sum(float(w) for w in weights)
    found = np.zeros_like(arrays[0])
    for array, weight in zip(arrays, weights, strict=True):
        found = found + float(weight) * array
    return found / total


def _weights_text(weights: tuple[float, ...], columns: tuple[Column, ...]) -> str:
    if not weights:
        return "mean"
    return "weighted mean (" + ", ".join(f"{column.path} {weight:g}" for column, weight in
                                         zip(columns, weights, strict=True)) + ")"


def _ties_text(tie_method: str) -> str:
    return ("tied values share the mean of their positions" if tie_method == "average"
            else "tied values share the best of their positions")


@dataclass(frozen=True)
class OrderedRanking(RankingRule):
    """Ranked by the first key; ties broken by the next keys in turn; remaining ties share a rank.
    `fallback` replaces `keys` when no submission has a value at the first key's path (csv2026
    without timing ranks the score without time)."""

    name: str
    keys: tuple[Column, ...]  # the leaderboard's own declarations of the ranked values
    fallback: tuple[Column, ...] = ()

    def applied(self, documents: Iterable[Mapping[str, Any]]) -> OrderedRanking:
        """The rule as applied to these submissions' values ({path: value or None} each)."""
        if self.fallback and all(document.get(self.keys[0].path) is None for document in documents):
            return OrderedRanking(self.name, self.fallback)
        return OrderedRanking(self.name, self.keys)

    def applied_notes(self, documents: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
        documents = list(documents)
        if self.applied(documents).keys == self.keys:
            return ()
        return (f"{self.name}: no submission has {self.keys[0].path}, so the ranking reads "
                f"{self.fallback[0].path} instead.",)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(key.path for key in (*self.keys, *self.fallback)))

    def describe(self, tie_method: str = "average") -> str:
        text = f"Ranked by {self.keys[0].describe()}"
        if len(self.keys) > 1:
            text += "; ties broken by " + ", then ".join(key.describe() for key in self.keys[1:])
        if self.fallback:
            text += (f"; when no submission has {self.keys[0].path}, by "
                     + ", then ".join(key.describe() for key in self.fallback))
        return text + "; remaining ties share a rank (competition ranking: 1, 1, 3)."

    def rank(self, values: Mapping[str, np.ndarray], tie_method: str = "average") -> RankedTable:
        columns = [np.asarray(values[key.path], dtype=np.float64) for key in self.keys]
        ranks = lexicographic_ranks(columns, [key.order for key in self.keys])
        return RankedTable(ranks, {key.path: column for key, column in zip(self.keys, columns, strict=True)}, {})


@dataclass(frozen=True)
class MeanOfRanks(RankingRule):
    """Rank, then aggregate over metrics: the submissions ranked on each column's value (its own
    order; ties by `tie_method`: "average" fractional ranks, "min" the best rank of the group;
    None: the command's --tie-method, "average" by default), each submission's score the mean of
    its ranks (weighted by `weights`, one per column, when given), final rank the competition rank
    of that mean, ascending. An undefined value ranks below every number."""

    name: str
    columns: tuple[Column, ...]
    weights: tuple[float, ...] = ()
    tie_method: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))  # a list given: the rule stays hashable
        object.__setattr__(self, "weights", tuple(self.weights))
        _check_columns("mean of ranks", self.columns)
        _check_weights("mean of ranks", self.weights, self.columns)
        _check_tie_method("mean of ranks", self.tie_method)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(column.path for column in self.columns)

    def describe(self, tie_method: str = "average") -> str:
        ties = self.tie_method or tie_method
        setting = "" if self.tie_method else f" (--tie-method {ties})"
        ranked = ", ".join(column.describe() for column in self.columns)
        return (f"Mean of ranks: the submissions ranked on {ranked}, {_ties_text(ties)}{setting}; mean_of_ranks = "
                f"the {_weights_text(self.weights, self.columns)} of those ranks; final rank = competition rank of "
                f"mean_of_ranks ascending (1, 1, 3).")

    def rank(self, values: Mapping[str, np.ndarray], tie_method: str = "average") -> RankedTable:
        ties = self.tie_method or tie_method
        shown = {column.path: np.asarray(values[column.path], dtype=np.float64) for column in self.columns}
        ranks = [fractional_ranks(shown[column.path], column.order, ties) for column in self.columns]
        mean = _weighted_mean(ranks, self.weights)
        partial = {f"{column.path} rank": rank for column, rank in zip(self.columns, ranks, strict=True)}
        partial["mean_of_ranks"] = mean
        return RankedTable(competition_ranks(mean, "asc"), shown, partial)

    @property
    def partial_titles(self) -> dict[str, str]:
        titles = {f"{column.path} rank": f"{column.title}: rank" for column in self.columns}
        titles["mean_of_ranks"] = "mean of metric ranks"
        return titles


@dataclass(frozen=True)
class MeanOfCaseRanks(RankingRule):
    """challengeR's rank-then-aggregate with the mean (rankThenAggregate(FUN = mean)): on every
    case, the submissions ranked on each column's per-case value (metrics.json's `cases_path`
    object, {case id: {...}}, each column's path read inside a case's entry; ties by `tie_method`,
    "min" by default as in challengeR, or "average"); a submission without a number for a case
    (absent, null) ranks one below the worst rank given on that case, as challengeR's rankNA2;
    each submission's score the mean of its ranks over the cases, then over the columns
    (weighted by `weights` when given); final rank the competition rank of that mean, ascending.
    The bootstrap's resample weighs each case's ranks by how often it was drawn."""

    name: str
    columns: tuple[Column, ...]
    cases_path: str = "cases"
    weights: tuple[float, ...] = ()
    tie_method: str = "min"

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))  # a list given: the rule stays hashable
        object.__setattr__(self, "weights", tuple(self.weights))
        _check_columns("mean of case ranks", self.columns)
        _check_weights("mean of case ranks", self.weights, self.columns)
        _check_tie_method("mean of case ranks", self.tie_method)
        if not isinstance(self.cases_path, str) or not self.cases_path or any(
                not key for key in self.cases_path.split(".")):
            raise ValueError(f"mean of case ranks: cases path {self.cases_path!r} is not a dot-separated path")

    @property
    def paths(self) -> tuple[str, ...]:
        return ()

    @property
    def case_paths(self) -> tuple[str, ...]:
        return tuple(column.path for column in self.columns)

    def value_key(self, column: Column) -> str:
        """The key of a column's mean over the cases in ranking.json's `values`."""
        return f"{self.cases_path}.*.{column.path}"

    def describe(self, tie_method: str = "average") -> str:
        ranked = ", ".join(column.describe() for column in self.columns)
        return (f"Mean of per-case ranks (challengeR's rank-then-aggregate): on every case of metrics.json's "
                f"{self.cases_path}, the submissions ranked on {ranked}, {_ties_text(self.tie_method)}, a submission "
                f"without a value for the case ranked one below the worst rank given; mean_case_rank = the "
                f"{_weights_text(self.weights, self.columns)} over the metrics of each metric's mean rank over the "
                f"cases; final rank = competition rank of mean_case_rank ascending (1, 1, 3).")

    def per_case(self, case_values: Mapping[str, np.ndarray], tie_method: str = "average") -> dict[str, np.ndarray]:
        found = {}
        for column in self.columns:
            values = np.asarray(case_values[column.path], dtype=np.float64)
            cases, n = values.shape
            step = max(1, COMPARED_CELLS // max(1, n * n))
            ranks = [missing_last_ranks(values[start:start + step], column.order, self.tie_method)
                     for start in range(0, cases, step)]
            found[f"{column.path} rank"] = np.concatenate(ranks) if ranks else np.empty((0, n))
            found[self.value_key(column)] = values
        return found

    def rank(self, values: Mapping[str, np.ndarray], tie_method: str = "average") -> RankedTable:
        ranks = [np.asarray(values[f"{column.path} rank"], dtype=np.float64) for column in self.columns]
        mean = _weighted_mean(ranks, self.weights)
        partial = {f"{column.path} rank": rank for column, rank in zip(self.columns, ranks, strict=True)}
        partial["mean_case_rank"] = mean
        shown = {self.value_key(column): np.asarray(values[self.value_key(column)], dtype=np.float64)
                 for column in self.columns}
        return RankedTable(competition_ranks(mean, "asc"), shown, partial)

    @property
    def partial_titles(self) -> dict[str, str]:
        titles = {f"{column.path} rank": f"{column.title}: mean rank over cases" for column in self.columns}
        titles["mean_case_rank"] = "mean of case ranks" + (" over metrics" if len(self.columns) > 1 else "")
        return titles

    @property
    def value_titles(self) -> dict[str, str]:
        return {self.value_key(column): f"{column.title} (mean over cases)" for column in self.columns}


def ranking_paths(rules: Sequence[RankingRule]) -> tuple[str, ...]:
    """Every metrics.json path the final-ranking rules read, each once, the first rule's primary
    key first."""
    return tuple(dict.fromkeys(path for rule in rules for path in rule.paths))
