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

What Declared offers every kind:
- `ranked`: the ranked values in leaderboard order, the first the score.
- aggregations over the cases: `mean_over_cases`, `median_over_cases`, `mean_of_defined` (NaN
  cases skipped), `pooled_ratio`, `ratio_of_counts` (a pooled precision or recall with its empty
  rules).
- a composite score, declared the same way in every kind: `composite = Composite({key: weight},
  title=..., better=...)` or the plain `{key: weight}` (`composite_of` reads either), the keys
  being the kind's names of its values; `composite_value` makes it the score (`composite_score`:
  Σ weight · value by path), declared first and computed after the values it reads; a part that
  is not ranked itself is declared in `composite_parts` ({path: computation}), computed but not
  in metrics.json.
- the final ranking's rule chosen by name, `ranking` = "ordered" (the first ranked value, ties
  by the next), "mean_of_ranks" (MeanOfRanks; the platform's leaderboard then ranks by the mean
  of the columns' ranks too, MEAN_OF_RANKS) or "case_rank_then_mean" (MeanOfCaseRanks,
  challengeR's rank-then-aggregate on the kind's `case_columns`, paths inside a case's entry);
  `ranking_rule_named` checks the name once for every kind (a composite goes with "ordered"
  only). A kind or challenge may still set `ranking_rule` and `scoring_method` itself.
- `CaseSettings`: the input socket that names the case, the base of every kind's settings;
  `settings_with_sockets`: a kind's settings with one JSON output socket per class or target;
  `remade_settings`: a kind's settings with fields dropped or added as its declaration says.
- `reference_document`: the ground truth's one JSON file {case id: entry}, for the kinds whose
  ground truth is JSON.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluation.declarations.columns import ABSOLUTE, MEAN_OF_RANKS, Column, Leaderboard
from evaluation.declarations.ranking_rules import MeanOfCaseRanks, MeanOfRanks, OrderedRanking
from evaluation.framework import Evaluation
from evaluation.metrics.aggregation import weighted_mean, weighted_median, weighted_sum
from evaluation.platform.locations import single_ground_truth_file
from evaluation.platform.outputs import set_at_path
from evaluation.reading.files import Origin
from evaluation.reading.json_files import read_json
from evaluation.settings import CASE_INPUT, JSON_OUTPUT, Settings, setting

# The final-ranking rules a challenge may name (its `ranking` attribute).
RANKINGS = ("ordered", "mean_of_ranks", "case_rank_then_mean")

# (per-case results in case-id order, case weights (rows, cases), the ranked values computed so
# far by path) -> one value per row
Compute = Callable[[Sequence[Any], np.ndarray, Mapping[str, np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class Ranked:
    """One ranked value, declared once: its leaderboard column and its computation."""

    column: Column
    compute: Compute
    # the paths of the values it is computed from (a composite's parts): computed after them,
    # wherever it is listed
    reads: tuple[str, ...] = ()

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


def ratio_of_counts(top, bottom, total, undefined: float, all_zero: float = 1.0) -> np.ndarray:
    """top / bottom of (pooled) counts, a pooled precision TP / (TP + FP) or recall TP / (TP + FN):
    `all_zero` where `total` (TP + FP + FN) is 0, nothing to find and nothing found; `undefined`
    where only the denominator is 0 (a precision of a submission that predicted nothing)."""
    top, bottom, total = (np.asarray(x, dtype=np.float64) for x in (top, bottom, total))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1),
                        np.where(total == 0, all_zero, undefined))


def mean_of_defined(values: np.ndarray, weights: np.ndarray, when_none: float) -> np.ndarray:
    """Per row of case weights, the weighted mean of the defined (not NaN) per-case values;
    `when_none` where a row holds none."""
    defined = ~np.isnan(values)
    top = weights[:, defined] @ values[defined]
    bottom = weights[:, defined].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1), when_none)


def weighted_sum_of(parts: Mapping[str, float]) -> Compute:
    """Σ weight · value over the values computed before it (by path), as challenges that rank on
    one combined number compute it. A lower-is-better part takes a negative weight, or is
    transformed into a score first by its own declaration."""
    def compute(_, weights, computed):
        total = np.zeros(weights.shape[0], dtype=np.float64)
        for path, weight in parts.items():
            total = total + weight * computed[path]
        return total
    return compute


BETTER = {"higher": "desc", "lower": "asc"}


@dataclass(frozen=True)
class Composite:
    """A composite score, ranked first (the leaderboard's score): Σ weight × value over declared
    values, by the keys the kind names them with ("dice_mean", "roc_auc", "volume.mae", "f1"); a
    lower-is-better value takes a negative weight. Every kind takes `composite =
    Composite({key: weight}, title=..., better=...)` or the plain {key: weight} (the default
    title, "Score (0.5 dice_mean + 0.5 nsd_mean)", and higher is better). It stands at
    aggregates.<key> of metrics.json."""

    weights: Mapping[str, float]
    title: str = ""
    key: str = "score"
    better: str = "higher"

    def __post_init__(self) -> None:
        if not isinstance(self.weights, Mapping) or not self.weights:
            raise TypeError(f"Composite weights must be a non-empty {{key: weight}}, not {self.weights!r}")
        for key, weight in self.weights.items():
            if not isinstance(key, str) or isinstance(weight, bool) or not isinstance(weight, int | float) \
                    or not np.isfinite(weight):
                raise TypeError(f"Composite weights: {key!r}: {weight!r} is not a key with a finite weight")
        if self.better not in BETTER:
            raise TypeError(f"Composite better={self.better!r}: 'higher' or 'lower'")
        if not re.fullmatch(r"[a-z][a-z0-9_]*", self.key):
            raise TypeError(f"Composite key={self.key!r}: a lower-case identifier (its metrics.json key)")

    def __hash__(self) -> int:
        return hash((self.title, self.key, self.better, tuple(self.weights.items())))

    @property
    def shown_title(self) -> str:
        """The title declared, else the sum itself: "Score (0.5 dice_mean + 0.5 nsd_mean - 0.01 hd95_mean)"."""
        if self.title:
            return self.title
        terms = [f"{'- ' if w < 0 else '+ ' if n else ''}{abs(w):g} {k}" if n or w >= 0 else f"-{abs(w):g} {k}"
                 for n, (k, w) in enumerate(self.weights.items())]
        return f"Score ({' '.join(terms)})"

    @property
    def order(self) -> str:
        return BETTER[self.better]

    @property
    def path(self) -> str:
        return f"aggregates.{self.key}"


def composite_of(declared: Composite | Mapping[str, float] | None, owner: str) -> Composite | None:
    """A kind's `composite` declaration read: a Composite, the plain {key: weight} (the default
    title, higher is better), or None / {} for none."""
    if declared is None or (isinstance(declared, Mapping) and not declared):
        return None
    if isinstance(declared, Composite):
        return declared
    if isinstance(declared, Mapping):
        return Composite(dict(declared))
    raise TypeError(f"{owner}.composite must be Composite({{key: weight}}, ...) or {{key: weight}}, not {declared!r}")


def composite_value(composite: Composite, paths: Mapping[str, str], owner: str) -> Ranked:
    """The composite as the first ranked value, from {key: metrics.json path} of what it may
    weigh (TypeError naming a key that is none of them)."""
    unknown = [key for key in composite.weights if key not in paths]
    if unknown:
        raise TypeError(f"{owner}.composite weighs {unknown}, which are none of its values' keys ({list(paths)})")
    parts = {paths[key]: float(weight) for key, weight in composite.weights.items()}
    return composite_score(Column(composite.shown_title, composite.path, composite.order), parts)


def composite_score(column: Column, parts: Mapping[str, float]) -> Ranked:
    """A composite score, declared first (the leaderboard's score) and computed after the values
    it weighs ({path: weight}: ranked values, or a kind's `composite_parts`)."""
    return Ranked(column, weighted_sum_of(parts), reads=tuple(parts))


def ordered_ranking(name: str, columns: tuple[Column, ...]) -> OrderedRanking:
    """The default final ranking: the first ranked value, ties broken by the next ones in turn."""
    return OrderedRanking(name, columns)


def ranking_rule_named(ranking: str, owner: str, case_columns: tuple[Column, ...] = (),
                       composite: bool = False) -> tuple[Callable[[str, tuple[Column, ...]], Any], str]:
    """(the final ranking's rule, (leaderboard name, ranked columns) -> rule; the platform's scoring
    method) of a ranking named in RANKINGS: "ordered" (the first ranked value, ties by the next),
    "mean_of_ranks" (MeanOfRanks of the ranked values; the platform's leaderboard ranks on the mean
    of the columns' ranks too) or "case_rank_then_mean" (MeanOfCaseRanks, challengeR's
    rank-then-aggregate, on `case_columns`: paths inside each case's entry of metrics.json's
    "cases", which only a kind with per-case values has). A composite score is the one value the
    final ranking orders by: it goes with "ordered" only. TypeError names what is wrong."""
    if ranking not in RANKINGS:
        raise TypeError(f"{owner}.ranking {ranking!r} is not one of {', '.join(RANKINGS)}")
    if ranking == "ordered":
        return ordered_ranking, ABSOLUTE
    if composite:
        raise TypeError(f"{owner}: a composite score is ranked by itself; declare ranking = 'ordered' with it, "
                        f"not {ranking!r}")
    if ranking == "mean_of_ranks":
        return MeanOfRanks, MEAN_OF_RANKS
    if not case_columns:
        raise TypeError(f"{owner}: ranking 'case_rank_then_mean' ranks per-case values, which its ranked values do "
                        f"not have (they are of the whole test set)")

    def per_case(name: str, _columns: tuple[Column, ...]) -> MeanOfCaseRanks:
        return MeanOfCaseRanks(name, case_columns)

    return per_case, ABSOLUTE


# ---- what the kinds read and declare alike ---------------------------------------------------


@dataclass(frozen=True)
class CaseSettings(Settings):
    """What config.json may change in every kind: the input that names the case (each kind's
    settings add its output socket and options)."""

    input_socket: str | list[str] = setting("", socket=CASE_INPUT,
                                            doc="input socket whose image name is the case id (empty: the job's "
                                                "only image input; a list: one per interface of the phase)")


def reference_document(truth: Origin, directory: Path, shape: str, file_name: str = "") -> tuple[Path, dict[str, Any]]:
    """(path, content) of the ground truth's one JSON file, a non-empty object {case id: `shape`}
    (the kinds whose ground truth is JSON read it here); named `file_name` when one is declared."""
    path = single_ground_truth_file(directory, ".json")
    if file_name and path.name != file_name:
        truth.fail(f"The ground truth's JSON file is {path.name}; this challenge reads {file_name}.")
    document = read_json(truth, path, "The ground truth")
    if not isinstance(document, dict) or not document:
        truth.fail(f"Ground truth {path.name} must be a non-empty object mapping case ids to {shape}.")
    return path, document


def remade_settings(base: type[Settings], owner: type, without: Sequence[str],
                    added: Sequence[tuple[str, Any, Any]], doc: str, settings_base: type[Settings] = Settings
                    ) -> type[Settings]:
    """`base`'s settings without the fields `without`, plus `added` ((name, type, setting(...)), in
    order), on `settings_base` (a Settings whose `check` adds rules spanning fields); the class is
    `owner.settings_class` for pickle, its docstring `base`'s and `doc`."""
    hints = typing.get_type_hints(base)
    fields: list[tuple[str, Any, Any]] = []
    for f in dataclasses.fields(base):
        if f.name in without:
            continue
        default = {"default": f.default} if f.default is not dataclasses.MISSING else \
            {"default_factory": f.default_factory}
        fields.append((f.name, hints[f.name], dataclasses.field(metadata=f.metadata, **default)))
    fields.extend(added)
    made = dataclasses.make_dataclass(f"{owner.__name__}Settings", fields, bases=(settings_base,), frozen=True)
    made.__module__, made.__qualname__ = owner.__module__, f"{owner.__qualname__}.settings_class"
    made.__doc__ = f"{base.__doc__}\n\n    {doc}"
    return made


def settings_with_sockets(base: type[Settings], owner: type, names: Sequence[str], slug: Callable[[str], str],
                          what: str, settings_base: type[Settings] = Settings) -> type[Settings]:
    """`base`'s settings without its `output_socket`, plus one JSON output socket per name
    (`<name>_socket`, default `slug(name)`, one number each): a job that writes a socket per class
    or per target. Each is a setting of its own, as the phase pack and config.json name sockets
    (one slug per output setting); the class is `owner.settings_class` for pickle."""
    for name in names:
        if not name.isidentifier():
            raise TypeError(f"{owner.__name__}: {name!r} cannot name a setting ({name}_socket); one socket per "
                            f"{what} needs names that are Python identifiers")
    added = []
    for name in names:
        words = tuple(word for word in re.split(r"[^a-z0-9]+", name.lower()) if word)
        added.append((f"{name}_socket", str, setting(slug(name), socket=JSON_OUTPUT, json_value="number", hints=words,
                                                     doc=f"output socket read: the {what} {name}, one number")))
    return remade_settings(base, owner, ("output_socket",), added, f"One output socket per {what}.", settings_base)


def socket_slugs(settings: Settings, names: Sequence[str]) -> list[str]:
    """The sockets of settings_with_sockets' settings, in the order of `names`."""
    return [getattr(settings, f"{name}_socket") for name in names]



class Declared(Evaluation):
    """A challenge whose ranked values are declared once in `ranked`.

    A subclass scores one case into a small result (`score_case`, usually {key: number}) and may
    add to metrics.json what is reported beside the ranked values (`report`); the leaderboards,
    ranked paths and final rankings come from `ranked`, the first value being the score."""

    ranked: ClassVar[tuple[Ranked, ...]] = ()
    # values a composite reads that are not ranked themselves: {path: computation}
    composite_parts: ClassVar[Mapping[str, Compute]] = {}
    decimal_places: ClassVar[int] = 4
    # the final ranking's rule by name (RANKINGS); it also sets the platform's scoring method
    ranking: ClassVar[str] = "ordered"
    # ABSOLUTE: the platform ranks on the score, the other columns shown (and breaking ties in the
    # final ranking); MEAN_OF_RANKS: the platform ranks on the mean of the columns' ranks.
    # Default: the one `ranking` goes with.
    scoring_method: ClassVar[str] = ABSOLUTE
    # (leaderboard name, the ranked columns) -> the final ranking's rule; default: the one
    # `ranking` names
    ranking_rule: ClassVar[Callable[[str, tuple[Column, ...]], Any]] = staticmethod(ordered_ranking)
    leaderboard_name: ClassVar[str] = ""  # default: the last part of the score's path

    @classmethod
    def case_columns(cls) -> tuple[Column, ...]:
        """The ranked values' per-case counterparts, columns of a case's entry under metrics.json's
        "cases" (what ranking "case_rank_then_mean" ranks case by case); by default none."""
        return ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.ranked:
            return
        paths = [value.path for value in cls.ranked]
        if len(set(paths)) != len(paths):
            raise TypeError(f"{cls.__name__} declares a ranked value twice: {paths}")
        if "ranking_rule" not in cls.__dict__:
            composite = any(value.reads for value in cls.ranked)
            rule, method = ranking_rule_named(cls.ranking, cls.__name__,
                                              cls.case_columns() if cls.ranking == "case_rank_then_mean" else (),
                                              composite)
            cls.ranking_rule = staticmethod(rule)
            if "scoring_method" not in cls.__dict__:
                cls.scoring_method = method
        columns = tuple(value.column for value in cls.ranked)
        if "leaderboards" not in cls.__dict__:
            cls.leaderboards = (Leaderboard(score=columns[0], decimal_places=cls.decimal_places,
                                            scoring_method=cls.scoring_method, extra_columns=columns[1:]),)
        cls.derive_ranked_paths()  # from the leaderboards just made
        if "final_rankings" not in cls.__dict__:
            name = cls.leaderboard_name or columns[0].path.rsplit(".", 1)[-1]
            cls.final_rankings = (cls.ranking_rule(name, columns),)

    def aggregate(self, results: dict[str, Any], weights: np.ndarray) -> dict[str, np.ndarray]:
        """Every ranked value per row of case weights, in declaration order; a value that reads
        others (a composite) is computed after them and after `composite_parts`."""
        ordered = [results[case_id] for case_id in sorted(results)]
        weights = np.asarray(weights)
        computed: dict[str, np.ndarray] = {}
        for path, compute in self.composite_parts.items():
            computed[path] = np.asarray(compute(ordered, weights, computed), dtype=np.float64)
        for value in sorted(self.ranked, key=lambda value: bool(value.reads)):  # stable: readers last
            computed[value.path] = np.asarray(value.compute(ordered, weights, computed), dtype=np.float64)
        return {value.path: computed[value.path] for value in self.ranked}

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
