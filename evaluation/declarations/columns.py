"""A phase's leaderboard as grand-challenge.org stores it, challenge-agnostic.

The platform's `Phase` model keeps the scoring settings in seven fields: `score_title` (at most
64 characters), `score_jsonpath`, `score_error_jsonpath` (blank: none), `score_default_sort`
("asc" or "desc"), `score_decimal_places` (an integer >= 0), `extra_results_columns` (a list of
{title, path, order, error_path?, exclude_from_ranking?}, checked against a JSON schema that
allows no other key) and `scoring_method_choice`: "abs" ranks on the score column alone, "avg"
and "med" on the mean or median of the ranks of the score and of every extra column not
excluded from ranking. Paths are dot-separated keys of metrics.json (dictionary keys only).

A challenge declares its `Leaderboard`s (evaluation/challenges/<folder>/__init__.py); `phase_fields` gives the
object an organizer pastes (`python -m evaluation.phase CHALLENGE`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

SORT_ORDERS = ("asc", "desc")  # the platform's score_default_sort and column "order" values
# The platform's scoring_method_choice values.
ABSOLUTE, MEAN_OF_RANKS, MEDIAN_OF_RANKS = "abs", "avg", "med"
SCORING_METHODS = (ABSOLUTE, MEAN_OF_RANKS, MEDIAN_OF_RANKS)
SCORE_TITLE_LENGTH = 64  # Phase.score_title is a CharField(max_length=64)
PATH_LENGTH = 255  # Phase.score_jsonpath and score_error_jsonpath are CharField(max_length=255)


def _check_path(path: str, what: str) -> None:
    # The platform splits on dots and looks each part up as a dictionary key: an empty part
    # (a leading, trailing or doubled dot) can never match a key of ours.
    if not isinstance(path, str) or not path or any(not key for key in path.split(".")):
        raise ValueError(f"{what} {path!r} is not a dot-separated path of non-empty keys")
    if len(path) > PATH_LENGTH:
        raise ValueError(f"{what} {path!r} is longer than the platform's {PATH_LENGTH} characters")


@dataclass(frozen=True)
class Column:
    """One leaderboard column: a metrics.json path, its sort order ("desc": higher is better)
    and, optionally, the path of its error (shown as value ± error)."""

    title: str
    path: str
    order: str
    exclude_from_ranking: bool = False
    error_path: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.title, str) or not self.title.strip():
            raise ValueError(f"column {self.path!r} has no title")
        _check_path(self.path, "column path")
        if self.error_path is not None:
            _check_path(self.error_path, "error path")
        if self.order not in SORT_ORDERS:
            raise ValueError(f"column {self.path!r}: order {self.order!r} is not one of {', '.join(SORT_ORDERS)}")
        if not isinstance(self.exclude_from_ranking, bool):
            raise ValueError(f"column {self.path!r}: exclude_from_ranking must be true or false")

    @property
    def paths(self) -> tuple[str, ...]:
        return (self.path,) if self.error_path is None else (self.path, self.error_path)

    def describe(self) -> str:
        """'aggregates.c_index descending': the value as a final-ranking rule names it."""
        return f"{self.path} {'descending' if self.order == 'desc' else 'ascending'}"

    def extra_column(self) -> dict[str, Any]:
        """One item of extra_results_columns: exactly the schema's keys, error_path only when set."""
        item: dict[str, Any] = {"title": self.title, "path": self.path, "order": self.order}
        if self.error_path is not None:
            item["error_path"] = self.error_path
        item["exclude_from_ranking"] = self.exclude_from_ranking
        return item


@dataclass(frozen=True)
class Leaderboard:
    """A phase's scoring settings: the score column, how many decimals it shows, the extra
    columns and how the rank is made (`scoring_method`: abs, avg or med)."""

    score: Column
    decimal_places: int
    scoring_method: str
    extra_columns: tuple[Column, ...] = ()

    def __post_init__(self) -> None:
        if len(self.score.title) > SCORE_TITLE_LENGTH:
            raise ValueError(f"score title {self.score.title!r} is longer than {SCORE_TITLE_LENGTH} characters")
        if self.score.exclude_from_ranking:
            raise ValueError("the score column is always ranked; it cannot be excluded from ranking")
        if isinstance(self.decimal_places, bool) or not isinstance(self.decimal_places, int) or self.decimal_places < 0:
            raise ValueError(f"decimal places {self.decimal_places!r} must be a whole number >= 0")
        if self.scoring_method not in SCORING_METHODS:
            raise ValueError(f"scoring method {self.scoring_method!r} is not one of {', '.join(SCORING_METHODS)}")
        # The platform keys each metric's ranks by its path: a path given twice would be ranked
        # once, so a metric cannot be weighted by listing it twice. One column per path.
        columns = (self.score, *self.extra_columns)
        paths = [column.path for column in columns]
        repeated = sorted({path for path in paths if paths.count(path) > 1})
        if repeated:
            raise ValueError(f"path(s) {', '.join(repeated)} appear in more than one column")

    @property
    def ranked_columns(self) -> tuple[Column, ...]:
        """The columns whose ranks make a submission's rank."""
        if self.scoring_method == ABSOLUTE:
            return (self.score,)
        return (self.score, *(c for c in self.extra_columns if not c.exclude_from_ranking))

    @property
    def paths(self) -> tuple[str, ...]:
        """Every metrics.json path the leaderboard reads (columns and their errors), in order."""
        return leaderboard_paths((self,))

    def phase_fields(self) -> dict[str, Any]:
        """The platform's Phase scoring fields, in the order of its form."""
        return {
            "score_title": self.score.title,
            "score_jsonpath": self.score.path,
            "score_error_jsonpath": self.score.error_path or "",  # blank: no error shown
            "score_default_sort": self.score.order,
            "score_decimal_places": self.decimal_places,
            "extra_results_columns": [column.extra_column() for column in self.extra_columns],
            "scoring_method_choice": self.scoring_method,
        }


def leaderboard_paths(leaderboards: Iterable[Leaderboard], *more: str) -> tuple[str, ...]:
    """Every path the leaderboards read, then `more`, each once, in order: a challenge's
    ranked_paths (the values metrics.json guarantees finite numbers)."""
    found: dict[str, None] = {}
    for leaderboard in leaderboards:
        for column in (leaderboard.score, *leaderboard.extra_columns):
            found.update(dict.fromkeys(column.paths))
    found.update(dict.fromkeys(more))
    return tuple(found)


def ci_title(what: str, level: float, bound: str) -> str:
    """'C-index, 95% CI lower': the title of one bound of a percentile interval."""
    return f"{what}, {level:g}% CI {bound}"
