"""The final ranking of one leaderboard: the official rule applied to every ranked submission's
metrics.json values (ranking.json's `leaderboards` entries)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.declarations.ranking_rules import FinalRanking, RankedTable
from evaluation.grand_challenge import value_at_path


@dataclass(frozen=True)
class Standing:
    """A leaderboard ranked: the rule as applied, the submissions in alphabetical order (the
    columns of every array) and the ranked table."""

    rule: FinalRanking
    names: tuple[str, ...]
    table: RankedTable

    @property
    def ranks(self) -> np.ndarray:
        return self.table.ranks[0]

    def order(self) -> list[int]:
        """Column indices in rank order; ties alphabetical (the names are sorted already)."""
        return sorted(range(len(self.names)), key=lambda i: (self.ranks[i], self.names[i]))


def number(value: Any) -> float:
    """A metrics.json value as a ranked number: NaN when it is not one (ranks last)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return math.nan
    return float(value)


def json_number(value: float) -> int | float | None:
    """A value for ranking.json: null when undefined, a whole number without ".0"."""
    value = float(value)
    if not math.isfinite(value):
        return None
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def rank_leaderboard(rule: FinalRanking, documents: dict[str, dict[str, Any]], tie_method: str,
                     notes: list[str]) -> Standing:
    """documents: {submission: metrics.json content}, sorted by name."""
    names = tuple(sorted(documents))
    flat = [{path: value_at_path(documents[name], path) for path in rule.paths} for name in names]
    applied = rule.applied(flat)
    if applied is not rule and getattr(applied, "keys", None) != getattr(rule, "keys", None):
        notes.append(f"{rule.name}: no submission has {rule.keys[0].path}, so the ranking reads "
                     f"{applied.keys[0].path} instead.")
    values = {}
    for path in applied.paths:
        column = np.array([number(value_at_path(documents[name], path)) for name in names], dtype=np.float64)
        missing = [name for name, value in zip(names, column, strict=True) if math.isnan(value)]
        if missing:
            notes.append(f"{rule.name}: {', '.join(missing)} ha{'s' if len(missing) == 1 else 've'} no number at "
                         f"{path}; ranked below every submission that has one.")
        values[path] = column[None, :]
    return Standing(applied, names, applied.rank(values, tie_method))


def entries(standing: Standing) -> list[dict[str, Any]]:
    """ranking.json's entries of one leaderboard, in rank order."""
    table = standing.table
    found = []
    for i in standing.order():
        found.append({
            "submission": standing.names[i],
            "rank": int(table.ranks[0, i]),
            "values": {path: json_number(column[0, i]) for path, column in table.values.items()},
            "partial_ranks": {name: json_number(column[0, i]) for name, column in table.partial_ranks.items()},
        })
    return found
