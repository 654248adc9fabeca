"""The official rules that rank submissions against each other (python -m evaluation.leaderboard).

grand-challenge.org ranks one number per column; several of our challenges' rules cannot be
said that way (a tie-break, a nested Borda count), so each challenge declares its rule here as
data, next to its `leaderboards`, and the final-ranking command applies it offline.

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

from collections.abc import Iterable, Mapping
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


# ---- the rules --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankedTable:
    """One rule applied: `ranks` (..., n) competition ranks, `values` {path: (..., n)} and the
    intermediate ranks and counts {name: (..., n)} (empty for a plain ordering)."""

    ranks: np.ndarray
    values: dict[str, np.ndarray]
    partial_ranks: dict[str, np.ndarray]


@dataclass(frozen=True)
class OrderedRanking:
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

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(key.path for key in (*self.keys, *self.fallback)))

    def rule(self, tie_method: str = "average") -> str:
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
class NestedBorda:
    """HECKTOR 2025 task 1: GTVp rank by mean DSC; GTVn rank = rank of the Borda count of the
    aggregated-DSC and aggregated-F1 ranks; final = competition rank of the Borda count of the
    GTVp and GTVn ranks (a sum of ranks orders as n - rank points do). Intermediate ranks are
    fractional ("average": tied values get the mean of their positions) or "min". The three
    values are the leaderboard's Columns (any object with a path and order "desc")."""

    name: str
    gtvp: Any
    gtvn_dsc: Any
    gtvn_f1: Any

    def __post_init__(self) -> None:
        for key in self.keys:
            if key.order != "desc":
                raise ValueError(f"nested Borda: {key.path} must be ranked descending (higher is better)")

    def applied(self, documents: Iterable[Mapping[str, Any]]) -> NestedBorda:
        return self

    @property
    def keys(self) -> tuple[Any, ...]:
        return (self.gtvp, self.gtvn_dsc, self.gtvn_f1)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(key.path for key in self.keys)

    def rule(self, tie_method: str = "average") -> str:
        convention = ("tied values share the mean of their positions" if tie_method == "average"
                      else "tied values share the best of their positions")
        gtvp, gtvn_dsc, gtvn_f1 = self.paths
        return (f"Nested Borda count: rank by {gtvp} descending (gtvp), by {gtvn_dsc} descending "
                f"(gtvn_dsc) and by {gtvn_f1} descending (gtvn_f1); gtvn_borda = gtvn_dsc + gtvn_f1, "
                f"gtvn = rank of gtvn_borda ascending; borda = gtvp + gtvn; final rank = competition rank of "
                f"borda ascending (1, 1, 3). Intermediate ranks: {convention} (--tie-method {tie_method}).")

    def rank(self, values: Mapping[str, np.ndarray], tie_method: str = "average") -> RankedTable:
        gtvp_values, dsc_values, f1_values = (np.asarray(values[p], dtype=np.float64) for p in self.paths)
        gtvp = fractional_ranks(gtvp_values, "desc", tie_method)
        gtvn_dsc = fractional_ranks(dsc_values, "desc", tie_method)
        gtvn_f1 = fractional_ranks(f1_values, "desc", tie_method)
        gtvn_borda = gtvn_dsc + gtvn_f1
        gtvn = fractional_ranks(gtvn_borda, "asc", tie_method)
        borda = gtvp + gtvn
        partial = {"gtvp": gtvp, "gtvn_dsc": gtvn_dsc, "gtvn_f1": gtvn_f1, "gtvn_borda": gtvn_borda,
                    "gtvn": gtvn, "borda": borda}
        ranked = dict(zip(self.paths, (gtvp_values, dsc_values, f1_values), strict=True))
        return RankedTable(competition_ranks(borda, "asc"), ranked, partial)


FinalRanking = OrderedRanking | NestedBorda
