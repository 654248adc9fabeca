"""A challenge as a declaration: its ranked values are declared once, as data, and everything
else is read from them.

A kind (segmentation, lesions, points, classification, ...) subclasses `Declared` and says how
one case is read and scored; a challenge of that kind subclasses the kind and declares, in its
folder's __init__.py, its labels, metrics and settings. Each ranked value is one `Ranked`: its
leaderboard column (metrics.json path, title, direction) and how it comes out of the per-case
results with case weights. From that one tuple the class derives its phase leaderboard, the
paths metrics.json guarantees finite (`ranked_paths`), the final ranking's rule and keys, and
`aggregate`, which serves both metrics.json (the row of ones) and the final ranking's bootstrap
(rows of case counts), so the two are equal by construction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from evaluation.declarations.columns import ABSOLUTE, Column, Leaderboard, leaderboard_paths
from evaluation.declarations.ranking_rules import OrderedRanking
from evaluation.framework import Evaluation
from evaluation.metrics.aggregation import weighted_mean, weighted_median, weighted_sum
from evaluation.platform.outputs import set_at_path

# (per-case results in case-id order, case weights (rows, cases), the ranked values computed so
# far by path) -> one value per row
Compute = Callable[[Sequence[Any], np.ndarray, Mapping[str, np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class Ranked:
    """One ranked value, declared once: its leaderboard column and its computation."""

    column: Column
    compute: Compute

    @property
    def path(self) -> str:
        return self.column.path


def case_values(results: Sequence[Any], key: str) -> np.ndarray:
    """The per-case value `key` of each case's result (a mapping), as a float array (cases,)."""
    return np.array([result[key] for result in results], dtype=np.float64)


def mean_over_cases(key: str, decimals: int | None = None) -> Compute:
    """The weighted mean of each case's `key` (optionally rounded per case first, as some
    challenges do before averaging)."""
    def compute(results, weights, _):
        return np.atleast_1d(weighted_mean(case_values(results, key), weights, decimals=decimals))
    return compute


def median_over_cases(key: str) -> Compute:
    """The weighted median of each case's `key` (a case drawn twice counts twice)."""
    def compute(results, weights, _):
        return np.atleast_1d(weighted_median(case_values(results, key), weights))
    return compute


def pooled_ratio(numerator: str, denominator: str, when_empty: float) -> Compute:
    """Σ numerator / Σ denominator over the cases, weighted (a pooled count metric such as a
    lesion F1's 2TP / (2TP + FP + FN)); `when_empty` when the weighted denominator is 0."""
    def compute(results, weights, _):
        top = weighted_sum(case_values(results, numerator), weights)
        bottom = weighted_sum(case_values(results, denominator), weights)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.atleast_1d(np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), when_empty))
    return compute


def weighted_sum_of(parts: Mapping[str, float]) -> Compute:
    """A composite score: Σ weight · value over ranked values declared before it (by path), as
    challenges that rank on one combined number compute it. A lower-is-better part takes a
    negative weight, or is transformed into a score first by its own declaration."""
    def compute(_, weights, computed):
        total = np.zeros(weights.shape[0], dtype=np.float64)
        for path, weight in parts.items():
            total = total + weight * computed[path]
        return total
    return compute


def ordered_ranking(name: str, columns: tuple[Column, ...]) -> OrderedRanking:
    """The default final ranking: the first ranked value, ties broken by the next ones in turn."""
    return OrderedRanking(name, columns)


class Declared(Evaluation):
    """A challenge whose ranked values are declared once in `ranked`.

    A subclass scores one case into a small result (`score_case`, usually {key: number}) and may
    add to metrics.json what is reported beside the ranked values (`report`); the leaderboards,
    ranked paths and final rankings come from `ranked`, the first value being the score."""

    ranked: ClassVar[tuple[Ranked, ...]] = ()
    decimal_places: ClassVar[int] = 4
    # ABSOLUTE: the platform ranks on the score, the other columns shown (and breaking ties in the
    # final ranking); MEAN_OF_RANKS: the platform ranks on the mean of the columns' ranks.
    scoring_method: ClassVar[str] = ABSOLUTE
    # (leaderboard name, the ranked columns) -> the final ranking's rule
    ranking_rule: ClassVar[Callable[[str, tuple[Column, ...]], Any]] = staticmethod(ordered_ranking)
    leaderboard_name: ClassVar[str] = ""  # default: the last part of the score's path

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.ranked:
            return
        paths = [value.path for value in cls.ranked]
        if len(set(paths)) != len(paths):
            raise TypeError(f"{cls.__name__} declares a ranked value twice: {paths}")
        columns = tuple(value.column for value in cls.ranked)
        if "leaderboards" not in cls.__dict__:
            cls.leaderboards = (Leaderboard(score=columns[0], decimal_places=cls.decimal_places,
                                            scoring_method=cls.scoring_method, extra_columns=columns[1:]),)
        if "ranked_paths" not in cls.__dict__:
            cls.ranked_paths = leaderboard_paths(cls.leaderboards)
        if "final_rankings" not in cls.__dict__:
            name = cls.leaderboard_name or columns[0].path.rsplit(".", 1)[-1]
            cls.final_rankings = (cls.ranking_rule(name, columns),)

    def aggregate(self, results: dict[str, Any], weights: np.ndarray) -> dict[str, np.ndarray]:
        """Every ranked value per row of case weights, in declaration order (a composite reads the
        values before it)."""
        ordered = [results[case_id] for case_id in sorted(results)]
        weights = np.asarray(weights)
        computed: dict[str, np.ndarray] = {}
        for value in self.ranked:
            computed[value.path] = np.asarray(value.compute(ordered, weights, computed), dtype=np.float64)
        return computed

    def report(self, results: dict[str, Any]) -> dict[str, Any]:
        """What metrics.json holds beside the ranked values and the cases (per-label aggregates,
        counts, notes); by default nothing."""
        return {}

    def case_entry(self, result: Any) -> Any:
        """A case's entry under metrics.json's "cases": by default its result."""
        return result

    def score_aggregates(self, results: dict[str, Any]) -> dict[str, Any]:
        """metrics.json: the report with the ranked values set at their (dotted) paths, then every case."""
        document = self.report(results)
        for path, value in self.point_values(results).items():
            set_at_path(document, path, value)
        document["cases"] = {case_id: self.case_entry(result) for case_id, result in results.items()}
        return document
