"""What the tabular kinds (classification.py, regression.py, survival.py) share: a ground truth
that is one JSON file {case id: value}, a job that writes one or more JSON values, and ranked
values that are metrics of the whole test set, declared as data (`Metric`), with the final
ranking's rule chosen by name (`ranking_rule_named`: ordered, mean of ranks, or challengeR's
per-case rank-then-mean) and an optional composite score
(`Composite`, a weighted sum of the declared metrics).

Generic parts a lead may hoist next to declared.py: `Metric`, `Composite`, `ranking_rule_named`.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.declarations.columns import ABSOLUTE, MEAN_OF_RANKS, Column
from evaluation.kinds.declared import Ranked, ordered_ranking, weighted_sum_of
from evaluation.platform.cases import Case
from evaluation.platform.locations import single_ground_truth_file
from evaluation.reading.files import Origin
from evaluation.reading.json_files import read_json
from evaluation.reading.values import finite_number
from evaluation.settings import JSON_OUTPUT, Settings, setting

# The final-ranking rules a challenge may name (its `ranking` attribute).
RANKINGS = ("ordered", "mean_of_ranks", "case_rank_then_mean")
BETTER = {"higher": "desc", "lower": "asc"}


@dataclass(frozen=True)
class Metric:
    """One declared metric of the whole test set: its metrics.json key, its leaderboard title,
    which way is better, and `of`, the kind's computation (the kind's arrays and the case
    weights (rows, cases) in, one value per row out). `reads` says what of the job's output it
    needs (classification: "scores" or "decisions"); `tasks` what it is defined for; `over` how
    a regression metric covers the targets."""

    key: str
    title: str
    better: str
    of: Callable[..., np.ndarray] = field(compare=False)
    reads: str = ""
    tasks: tuple[str, ...] = ()  # the kind's variants it is defined for (classification: binary, ...)
    over: str = "each"  # regression: each target its own ranked value, or "mean" over the targets

    def __post_init__(self) -> None:
        if self.better not in BETTER:
            raise ValueError(f"metric {self.key!r}: better must be 'higher' or 'lower', not {self.better!r}")
        if self.over not in ("each", "mean"):
            raise ValueError(f"metric {self.key!r}: over must be 'each' or 'mean', not {self.over!r}")
        if not self.key or "." in self.key:
            raise ValueError(f"metric key {self.key!r} must be a non-empty metrics.json key without '.'")

    @property
    def order(self) -> str:
        return BETTER[self.better]


@dataclass(frozen=True)
class Composite:
    """A composite score ranked first: Σ weight × metric over declared metrics (by key, as the
    kind names its ranked values, e.g. "roc_auc" or "volume.mae"). A lower-is-better metric takes a
    negative weight."""

    title: str
    parts: Mapping[str, float]
    key: str = "score"
    better: str = "higher"


def composite_ranked(composite: Composite, parts: Mapping[str, Ranked], path: str) -> Ranked:
    """The composite as a Ranked value that computes its parts itself (so it can come first, the
    score, before the values it adds up)."""
    unknown = sorted(set(composite.parts) - set(parts))
    if unknown:
        raise TypeError(f"the composite {composite.title!r} adds {unknown}, which are not declared metrics "
                        f"({sorted(parts)})")
    paths = {parts[key].path: float(weight) for key, weight in composite.parts.items()}
    total = weighted_sum_of(paths)

    def compute(results, weights, computed):
        own = dict(computed)
        for key in composite.parts:
            value = parts[key]
            if value.path not in own:
                own[value.path] = np.asarray(value.compute(results, weights, own), dtype=np.float64)
        return total(results, weights, own)

    return Ranked(Column(composite.title, path, BETTER[composite.better]), compute)


def ranking_rule_named(ranking: str, case_columns: tuple[Column, ...] = ()):
    """(the final ranking's rule for Declared.ranking_rule, the platform's scoring method) of a
    ranking named in RANKINGS: "ordered" (the first ranked value, ties by the next), "mean_of_ranks"
    (MeanOfRanks of the ranked values; the platform's leaderboard ranks on the mean of the columns'
    ranks too) or "case_rank_then_mean" (MeanOfCaseRanks, challengeR's rank-then-aggregate, on
    `case_columns`: paths inside each case's entry of metrics.json's "cases", which only a kind
    with per-case values has)."""
    from evaluation.declarations import ranking_rules

    if ranking not in RANKINGS:
        raise TypeError(f"ranking {ranking!r} is not one of {', '.join(RANKINGS)}")
    if ranking == "ordered":
        return staticmethod(ordered_ranking), ABSOLUTE
    if ranking == "mean_of_ranks":
        return staticmethod(ranking_rules.MeanOfRanks), MEAN_OF_RANKS
    if not case_columns:
        raise TypeError("ranking 'case_rank_then_mean' ranks per-case values, which this kind does not have (its "
                        "ranked values are of the whole test set)")

    def per_case(name: str, columns: tuple[Column, ...]):
        return ranking_rules.MeanOfCaseRanks(name, case_columns)

    return staticmethod(per_case), ABSOLUTE


def reference_document(truth: Origin, directory: Path, shape: str) -> tuple[Path, dict[str, Any]]:
    """(path, content) of the ground truth's one JSON file, a non-empty object {case id: `shape`}."""
    path = single_ground_truth_file(directory, ".json")
    document = read_json(truth, path, "The ground truth")
    if not isinstance(document, dict) or not document:
        truth.fail(f"Ground truth {path.name} must be a non-empty object mapping case ids to {shape}.")
    return path, document


def settings_with_sockets(base: type[Settings], owner: type, names: Sequence[str], slug: Callable[[str], str],
                          what: str) -> type[Settings]:
    """`base`'s settings without its `output_socket`, plus one JSON output socket per name
    (`<name>_socket`, default `slug(name)`, one number each): a job that writes a socket per class
    or per target. Each is a setting of its own, as the phase pack and config.json name sockets
    (one slug per output setting); the class is `owner.settings_class` for pickle."""
    for name in names:
        if not name.isidentifier():
            raise TypeError(f"{owner.__name__}: {name!r} cannot name a setting ({name}_socket); one socket per "
                            f"{what} needs names that are Python identifiers")
    hints = typing.get_type_hints(base)
    fields: list[tuple[str, Any, Any]] = []
    for f in dataclasses.fields(base):
        if f.name == "output_socket":
            continue
        default = {"default": f.default} if f.default is not dataclasses.MISSING else \
            {"default_factory": f.default_factory}
        fields.append((f.name, hints[f.name], dataclasses.field(metadata=f.metadata, **default)))
    for name in names:
        words = tuple(word for word in re.split(r"[^a-z0-9]+", name.lower()) if word)
        fields.append((f"{name}_socket", str, setting(slug(name), socket=JSON_OUTPUT, json_value="number", hints=words,
                                                      doc=f"output socket read: the {what} {name}, one number")))
    made = dataclasses.make_dataclass(f"{owner.__name__}Settings", fields, bases=(Settings,), frozen=True)
    made.__module__, made.__qualname__ = owner.__module__, f"{owner.__qualname__}.settings_class"
    made.__doc__ = f"{base.__doc__}\n\n    One output socket per {what}."
    return made


def socket_slugs(settings: Settings, names: Sequence[str]) -> list[str]:
    """The sockets of settings_with_sockets' settings, in the order of `names`."""
    return [getattr(settings, f"{name}_socket") for name in names]


def output_number(value: Any, case: Case, slug: str, *, minimum: float | None = None,
                  maximum: float | None = None) -> float:
    """One finite number of a job's output (SubmissionError naming the case and the socket)."""
    return finite_number(value, f"{case.name}: the output {slug!r}", minimum=minimum, maximum=maximum)
