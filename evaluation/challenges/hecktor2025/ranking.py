"""HECKTOR 2025 task 1's final ranking: the nested Borda count (docs/final-ranking.md), a rule of
this challenge alone, declared in the package's __init__.py and applied by the final-ranking
command through the generic RankingRule interface (evaluation/declarations/ranking_rules.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from evaluation.declarations.columns import Column
from evaluation.declarations.ranking_rules import RankedTable, RankingRule, competition_ranks, fractional_ranks


@dataclass(frozen=True)
class NestedBorda(RankingRule):
    """HECKTOR 2025 task 1: GTVp rank by mean DSC; GTVn rank = rank of the Borda count of the
    aggregated-DSC and aggregated-F1 ranks; final = competition rank of the Borda count of the
    GTVp and GTVn ranks (a sum of ranks orders as n - rank points do). Intermediate ranks are
    fractional ("average": tied values get the mean of their positions) or "min". The three
    values are the leaderboard's Columns, each ranked descending."""

    name: str
    gtvp: Column
    gtvn_dsc: Column
    gtvn_f1: Column

    def __post_init__(self) -> None:
        for key in self.keys:
            if key.order != "desc":
                raise ValueError(f"nested Borda: {key.path} must be ranked descending (higher is better)")

    @property
    def keys(self) -> tuple[Column, ...]:
        return (self.gtvp, self.gtvn_dsc, self.gtvn_f1)

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(key.path for key in self.keys)

    def describe(self, tie_method: str = "average") -> str:
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
