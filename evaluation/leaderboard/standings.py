"""The final ranking of one leaderboard: the official rule applied to every ranked submission's
metrics.json values (ranking.json's `leaderboards` entries). Rules are known through
RankingRule's members only (evaluation/declarations/ranking_rules.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evaluation.declarations.ranking_rules import RankedTable, RankingRule, case_means
from evaluation.platform.outputs import value_at_path


@dataclass(frozen=True)
class Standing:
    """A leaderboard ranked: the rule as applied, the submissions in alphabetical order (the
    columns of every array) and the ranked table; for a rule of per-case values, the case ids
    (sorted) and the rule's per-case arrays {name: (cases, n)}, which the statistics average with
    each resample's case weights."""

    rule: RankingRule
    names: tuple[str, ...]
    table: RankedTable
    cases: tuple[str, ...] = ()
    per_case: dict[str, np.ndarray] = field(default_factory=dict)

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


def rank_leaderboard(rule: RankingRule, documents: dict[str, dict[str, Any]], tie_method: str,
                     notes: list[str]) -> Standing:
    """documents: {submission: metrics.json content}, sorted by name."""
    names = tuple(sorted(documents))
    flat = [{path: value_at_path(documents[name], path) for path in rule.paths} for name in names]
    applied = rule.applied(flat)
    notes.extend(rule.applied_notes(flat))
    values = {}
    for path in applied.paths:
        column = np.array([number(value_at_path(documents[name], path)) for name in names], dtype=np.float64)
        missing = [name for name, value in zip(names, column, strict=True) if math.isnan(value)]
        if missing:
            notes.append(f"{rule.name}: {', '.join(missing)} ha{'s' if len(missing) == 1 else 've'} no number at "
                         f"{path}; ranked below every submission that has one.")
        values[path] = column[None, :]
    cases: tuple[str, ...] = ()
    per_case: dict[str, np.ndarray] = {}
    if applied.case_paths:
        cases, case_values = read_case_values(applied, documents, names, notes)
        per_case = applied.per_case(case_values, tie_method)
        values.update(case_means(per_case, np.ones((1, len(cases)))))
    return Standing(applied, names, applied.rank(values, tie_method), cases, per_case)


def read_case_values(rule: RankingRule, documents: dict[str, dict[str, Any]], names: tuple[str, ...],
                     notes: list[str]) -> tuple[tuple[str, ...], dict[str, np.ndarray]]:
    """(case ids, {case path: (cases, n) values}) of metrics.json's per-case object at the rule's
    cases_path ({case id: {...}}): every case id any submission has, sorted; NaN where a
    submission has no number for a case (the rule ranks it one below the worst rank given)."""
    sections = {}
    for name in names:
        section = value_at_path(documents[name], rule.cases_path)
        sections[name] = section if isinstance(section, dict) else {}
    cases = tuple(sorted({str(case) for section in sections.values() for case in section}))
    if not cases:
        notes.append(f"{rule.name}: no submission has per-case values at {rule.cases_path}; every submission ties.")
    lacking = [name for name in names if not sections[name]]
    if lacking and cases:
        notes.append(f"{rule.name}: {', '.join(lacking)} ha{'s' if len(lacking) == 1 else 've'} no per-case values "
                     f"at {rule.cases_path}; ranked one below the worst rank on every case.")
    found = {}
    for path in rule.case_paths:
        column = np.full((len(cases), len(names)), np.nan)
        for j, name in enumerate(names):
            section = sections[name]
            for i, case in enumerate(cases):
                entry = section.get(case)
                if isinstance(entry, dict):
                    column[i, j] = number(value_at_path(entry, path))
        found[path] = column
        missing = [(name, int(np.isnan(column[:, j]).sum())) for j, name in enumerate(names)
                   if name not in lacking and np.isnan(column[:, j]).any()]
        if missing:
            listed = ", ".join(f"{name} ({count} of {len(cases)})" for name, count in missing)
            notes.append(f"{rule.name}: no number at {rule.cases_path}.<case>.{path} for some cases of {listed}; "
                         f"ranked one below the worst rank on each of those cases.")
    return cases, found


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
