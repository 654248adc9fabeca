"""What the tabular kinds (classification.py, regression.py, survival.py) share: a ground truth
that is one JSON file {case id: value}, a job that writes one or more JSON values, and ranked
values that are metrics of the whole test set, declared as data (`Metric`), and an optional
composite score (declared.Composite, or {key: weight}: a weighted sum of the declared metrics).
The final ranking's rule by name, the ground truth's JSON file and one socket per class or target
are declared.py's (ranking_rule_named, reference_document, settings_with_sockets).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evaluation.kinds.declared import BETTER, Composite, Ranked, composite_of, composite_value
from evaluation.platform.cases import Case
from evaluation.reading.values import finite_number


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


def with_composite(composite: Composite | Mapping[str, float] | None, parts: Mapping[str, Ranked],
                   owner: str) -> tuple[Ranked, ...]:
    """The declared metrics' ranked values ({key: Ranked}, in order), with the composite
    (declared.Composite, or {key: weight}) first when declared: the score of the metrics it weighs."""
    declared = composite_of(composite, owner)
    if declared is None:
        return tuple(parts.values())
    return (composite_value(declared, {key: ranked.path for key, ranked in parts.items()}, owner), *parts.values())


def output_number(value: Any, case: Case, slug: str, *, minimum: float | None = None,
                  maximum: float | None = None) -> float:
    """One finite number of a job's output (SubmissionError naming the case and the socket)."""
    return finite_number(value, f"{case.name}: the output {slug!r}", minimum=minimum, maximum=maximum)
