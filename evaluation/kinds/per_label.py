"""What the label-image kinds (lesions, instances) share: metrics declared per label, each with
how it is aggregated over the cases, from which the ranked values are built.

A challenge of such a kind declares

    labels = {1: "edema", 2: "tumour"}            # the classes scored, each on its own
    ranked_metrics = {"lesion_f1": "pooled", "dice": "mean"}   # metric -> "mean" | "median" | "pooled"
                                                  #  | "mean_positive" (kinds with `positive_key`)
    labels_ranked = "mean"                        # "mean": one column per metric (the mean over the
                                                  #  labels); "each": one column per label and metric
    composite = {}                                # {metric: weight} or Composite(...): ranked first
    ranking = "ordered"                           # "ordered" | "mean_of_ranks" | "case_rank_then_mean"

and the kind says what each metric is (`metric_specs`): its title, direction, its per-case value
(a key of the case's entry) and, for a pooled aggregate, which counts are summed over the cases
and the function of the sums. Every case's result is {label name: {key: number}}.

A kind may also score every case once with all labels' objects together, regardless of their
label (`agnostic_entry`, the key of that entry in a case's result; instances: "class_agnostic",
the class-agnostic PQ): a metric declared as `<agnostic_entry>_<metric>` (e.g.
"class_agnostic_pq": "pooled") ranks that entry's value with the same aggregations, one column
whatever `labels_ranked` says. It is not the mean over the labels of the per-label values: a
matched object whose label is wrong is a true positive there and a miss plus a false object in
the per-label values. With one label it would repeat that label's value, and is refused.

"mean_positive" averages only the cases whose ground truth holds the label (its entry's
`positive_key` above 0), as autoPET averages Dice and FN volume over the cases with a lesion; a
bootstrap row that draws none of them is NaN (undefined), and a test set without any such case
has no value: the run stops with a SetupError (exit 3) naming the label, since the value is ranked.

metrics.json: the ranked values at aggregates.<metric>_<aggregation> (labels_ranked "mean") or
aggregates.<label>.<metric>.<aggregation> ("each"), aggregates.score for a composite (its key); for every
label, aggregates.<label>.<metric> = {"mean", "median"[, "pooled"]} and aggregates.<label>.counts
(the summed counts); each case's entry under cases.<case id>.<label>. A metric of the agnostic
entry is ranked at aggregates.<agnostic_entry>.<metric>.<aggregation>, beside the same report
under aggregates.<agnostic_entry> and each case's entry under cases.<case id>.<agnostic_entry>
(present only when such a metric is declared).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from evaluation.declarations.columns import Column
from evaluation.errors import SetupError
from evaluation.kinds.declared import Composite, Declared, Ranked, case_values, composite_of, composite_value
from evaluation.metrics.aggregation import weighted_mean, weighted_median, weighted_sum
from evaluation.platform.outputs import Undefined

AGGREGATIONS = ("mean", "median", "pooled")  # reported for every ranked metric (the last if it has a pooled form)
POSITIVE_MEAN = "mean_positive"  # reported for the metrics declared with it
DECLARABLE = (*AGGREGATIONS, POSITIVE_MEAN)
AGGREGATION_TITLES = {"mean": "mean over cases", "median": "median over cases", "pooled": "pooled",
                      POSITIVE_MEAN: "mean over positive cases"}
LABELS_RANKED = ("mean", "each")
WHOLE_COUNTS = ("tp", "fp", "fn")


@dataclass(frozen=True)
class MetricSpec:
    """One metric of a kind: its column title, direction ("desc": higher is better), the key of
    its per-case value in a label's entry, and for a pooled aggregate the entry's counts summed
    over the cases with the function turning the sums (one array per count, one element per row
    of case weights) into the value."""

    title: str
    order: str
    counts: tuple[str, ...] = ()
    pooled: Callable[..., np.ndarray] | None = None


class PerLabel(Declared):
    """Metrics declared per label with their aggregation (module docstring); a kind subclasses it,
    sets `metric_specs` and scores a case into {label name: {key: number}}."""

    labels: ClassVar[Mapping[int, str]] = {1: "lesion"}
    # the ground truth: one label image <case id><suffix> per case
    truth_suffixes: ClassVar[tuple[str, ...]] = (".mha", ".nii.gz", ".nii", ".nrrd")
    ranked_metrics: ClassVar[Mapping[str, str]] = {}
    labels_ranked: ClassVar[str] = "mean"
    # {metric: weight} or Composite({metric: weight}, title=..., better=...) (kinds/declared.py):
    # the weighted sum of the metrics' means over the labels, ranked first
    composite: ClassVar[Composite | Mapping[str, float] | None] = {}
    # the key of a label's per-case entry that is above 0 when the case's ground truth holds the
    # label (what "mean_positive" selects); empty: the kind offers no "mean_positive"
    positive_key: ClassVar[str] = ""
    # the key of a case's entry scored with every label's objects together, whatever their label,
    # and how its columns are titled; empty: the kind offers none
    agnostic_entry: ClassVar[str] = ""
    agnostic_title: ClassVar[str] = ""

    @classmethod
    def metric_specs(cls) -> dict[str, MetricSpec]:
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if cls.name and cls.ranked_metrics:  # a challenge's declaration (the kinds themselves declare none)
            cls.composite = composite_of(cls.composite, cls.__name__)
            cls.check_declaration()
            cls.ranked = cls.declared_ranked()
            if cls.composite:
                cls.composite_parts = cls.unranked_composite_parts()
            if not cls.leaderboard_name:  # "edema_lesion_f1_pooled", not the path's last part "pooled"
                cls.leaderboard_name = cls.ranked[0].path.removeprefix("aggregates.").replace(".", "_")
        super().__init_subclass__(**kwargs)

    # ---- the declaration ---------------------------------------------------------------------

    @classmethod
    def label_names(cls) -> tuple[str, ...]:
        return tuple(cls.labels[label] for label in sorted(cls.labels))

    @classmethod
    def split_metric(cls, declared: str) -> tuple[str | None, str]:
        """(the agnostic entry or None, the metric) of a key of ranked_metrics: "class_agnostic_pq"
        -> ("class_agnostic", "pq") when the kind has that entry, "pq" -> (None, "pq")."""
        prefix = f"{cls.agnostic_entry}_"
        if cls.agnostic_entry and declared.startswith(prefix):
            return cls.agnostic_entry, declared.removeprefix(prefix)
        return None, declared

    @classmethod
    def agnostic_declared(cls) -> bool:
        """Whether a metric of the agnostic entry is declared (the kind then scores that entry)."""
        return any(cls.split_metric(declared)[0] for declared in cls.ranked_metrics)

    @classmethod
    def reported_metrics(cls) -> tuple[str, ...]:
        """The metrics declared, of the labels or of the agnostic entry, each once, in order: what
        every entry of the report holds."""
        return tuple(dict.fromkeys(cls.split_metric(declared)[1] for declared in cls.ranked_metrics))

    @classmethod
    def check_declaration(cls) -> None:
        """TypeError naming what is wrong in the challenge's declaration, at import."""
        specs = cls.metric_specs()
        where = cls.__name__
        if not cls.labels or not all(isinstance(k, int) and not isinstance(k, bool) and k > 0 for k in cls.labels):
            raise TypeError(f"{where}.labels must map positive whole labels to names, not {cls.labels!r}")
        names = list(cls.labels.values())
        reserved = {*specs, "counts", "score", *([cls.agnostic_entry] if cls.agnostic_entry else [])}
        for name in names:
            if not isinstance(name, str) or not name.isidentifier() or name in reserved:
                raise TypeError(f"{where}.labels: {name!r} is not a usable label name (an identifier, none of "
                                f"{', '.join(sorted(reserved))})")
        if len(set(names)) != len(names):
            raise TypeError(f"{where}.labels names a label twice: {names}")
        known = [*specs, *(f"{cls.agnostic_entry}_{metric}" for metric in specs if cls.agnostic_entry)]
        for declared, aggregation in cls.ranked_metrics.items():
            entry, metric = cls.split_metric(declared)
            if metric not in specs:
                raise TypeError(f"{where}.ranked_metrics: unknown metric {declared!r}; the kind's are "
                                f"{', '.join(known)}")
            if entry and len(cls.labels) == 1:
                raise TypeError(f"{where}.ranked_metrics: {declared!r} with one label is {metric!r} of that label "
                                f"(declare {metric!r}; the {cls.agnostic_title} value differs with several labels)")
            if aggregation not in DECLARABLE:
                raise TypeError(f"{where}.ranked_metrics[{declared!r}]: {aggregation!r} is not one of "
                                f"{', '.join(DECLARABLE)}")
            if aggregation == POSITIVE_MEAN and not cls.positive_key:
                raise TypeError(f"{where}.ranked_metrics[{declared!r}]: this kind does not tell positive cases apart "
                                f"(no {POSITIVE_MEAN!r}; a mean or a median over cases)")
            if aggregation == "pooled" and specs[metric].pooled is None:
                raise TypeError(f"{where}.ranked_metrics[{declared!r}]: {metric} has no pooled form (a mean or a "
                                f"median over cases)")
        if cls.labels_ranked not in LABELS_RANKED:
            raise TypeError(f"{where}.labels_ranked {cls.labels_ranked!r} is not one of {', '.join(LABELS_RANKED)}")
        for metric in cls.composite.weights if cls.composite else ():
            if metric not in cls.ranked_metrics:
                raise TypeError(f"{where}.composite weighs {metric!r}, which is not one of its metrics")

    @classmethod
    def declared_ranked(cls) -> tuple[Ranked, ...]:
        """The ranked values: the composite first when declared, then every declared metric (per
        label with labels_ranked "each"), in declaration order."""
        specs = cls.metric_specs()
        several = len(cls.labels) > 1
        ranked = []
        for declared, aggregation in cls.ranked_metrics.items():
            entry, metric = cls.split_metric(declared)
            spec = specs[metric]
            if entry:  # one value whatever labels_ranked says: the entry of every label's objects together
                column = Column(f"{spec.title} ({AGGREGATION_TITLES[aggregation]}, {cls.agnostic_title})",
                                f"aggregates.{entry}.{metric}.{aggregation}", spec.order)
                ranked.append(Ranked(column, cls._of_label(metric, aggregation, entry)))
            elif cls.labels_ranked == "mean":
                over = ", mean over classes" if several else ""
                column = Column(f"{spec.title} ({AGGREGATION_TITLES[aggregation]}{over})",
                                f"aggregates.{metric}_{aggregation}", spec.order)
                ranked.append(Ranked(column, cls._over_labels(metric, aggregation)))
            else:
                for label in cls.label_names():
                    column = Column(f"{label}: {spec.title} ({AGGREGATION_TITLES[aggregation]})",
                                    f"aggregates.{label}.{metric}.{aggregation}", spec.order)
                    ranked.append(Ranked(column, cls._of_label(metric, aggregation, label)))
        if cls.composite:  # each metric's mean over the labels, ranked or not (labels_ranked "each")
            paths = {metric: cls._over_labels_path(metric) for metric in cls.ranked_metrics}
            ranked.insert(0, composite_value(cls.composite, paths, cls.__name__))
        return tuple(ranked)

    @classmethod
    def _over_labels_path(cls, declared: str) -> str:
        """Where a declared metric's mean over the labels stands (ranked with labels_ranked
        "mean"); a metric of the agnostic entry: its one ranked value."""
        entry, metric = cls.split_metric(declared)
        if entry:
            return f"aggregates.{entry}.{metric}.{cls.ranked_metrics[declared]}"
        return f"aggregates.{metric}_{cls.ranked_metrics[declared]}"

    @classmethod
    def unranked_composite_parts(cls) -> dict[str, Any]:
        """The composite's parts not ranked themselves (labels_ranked "each"): computed for it."""
        if cls.labels_ranked == "mean":
            return {}
        return {cls._over_labels_path(metric): cls._over_labels(metric, cls.ranked_metrics[metric])
                for metric in cls.composite.weights if not cls.split_metric(metric)[0]}

    @classmethod
    def case_columns(cls) -> tuple[Column, ...]:
        """Each ranked metric of each label as a column of one case's entry (cases.<case id>.<label>.
        <metric>): what a per-case rule ranks the submissions on, case by case."""
        specs = cls.metric_specs()
        columns = []
        for declared in cls.ranked_metrics:
            entry, metric = cls.split_metric(declared)
            spec = specs[metric]
            if entry:
                columns.append(Column(f"{cls.agnostic_title}: {spec.title}", f"{entry}.{metric}", spec.order))
            else:
                columns.extend(Column(f"{label}: {spec.title}", f"{label}.{metric}", spec.order)
                               for label in cls.label_names())
        return tuple(columns)

    @classmethod
    def _of_label(cls, metric: str, aggregation: str, label: str):
        spec = cls.metric_specs()[metric]

        def compute(results: Sequence[Any], weights: np.ndarray, _computed=None) -> np.ndarray:
            entries = [result[label] for result in results]
            if aggregation == "pooled":
                counts = np.array([[entry[key] for key in spec.counts] for entry in entries],
                                  dtype=np.float64).reshape(len(entries), len(spec.counts))
                sums = np.atleast_2d(weighted_sum(counts, weights))
                return np.atleast_1d(np.asarray(spec.pooled(*sums.T), dtype=np.float64))
            values = np.array([entry[metric] for entry in entries], dtype=np.float64)
            if aggregation == POSITIVE_MEAN:  # the cases whose truth holds the label only
                positive = case_values(entries, cls.positive_key) > 0
                if not positive.any():
                    return np.full(weights.shape[0], np.nan)
                return np.atleast_1d(weighted_mean(values[positive], weights[:, positive]))
            average = weighted_mean if aggregation == "mean" else weighted_median
            return np.atleast_1d(average(values, weights))
        return compute

    @classmethod
    def _over_labels(cls, metric: str, aggregation: str):
        """The mean over the labels of each label's value (with one label, that label's)."""
        per_label = [cls._of_label(metric, aggregation, label) for label in cls.label_names()]

        def compute(results: Sequence[Any], weights: np.ndarray, _computed=None) -> np.ndarray:
            total = per_label[0](results, weights)
            for part in per_label[1:]:
                total = total + part(results, weights)
            return total / len(per_label)
        return compute

    # ---- metrics.json beside the ranked values -----------------------------------------------

    def report(self, results: dict[str, Any]) -> dict[str, Any]:
        """Per label (and for the agnostic entry when one of its metrics is declared): each
        declared metric's mean, median (and pooled value) over the cases, and the summed counts;
        the number of cases."""
        specs = self.metric_specs()
        ordered = [results[case_id] for case_id in sorted(results)]
        ones = np.ones((1, len(ordered)), dtype=np.int64)
        aggregates: dict[str, Any] = {}
        entries = [(label, "") for label in self.label_names()]
        if self.agnostic_declared():
            entries.append((self.agnostic_entry, f"{self.agnostic_entry}_"))
        for label, prefix in entries:
            entry: dict[str, Any] = {}
            counted: dict[str, float] = {}
            for metric in self.reported_metrics():
                spec = specs[metric]
                entry[metric] = {aggregation: float(self._of_label(metric, aggregation, label)(ordered, ones)[0])
                                 for aggregation in AGGREGATIONS if aggregation != "pooled" or spec.pooled}
                if self.ranked_metrics.get(prefix + metric) == POSITIVE_MEAN:
                    value = float(self._of_label(metric, POSITIVE_MEAN, label)(ordered, ones)[0])
                    entry[metric][POSITIVE_MEAN] = value if np.isfinite(value) else Undefined(
                        f"no case's ground truth holds {label}: its mean over positive cases is undefined")
                for key in spec.counts:
                    counted[key] = float(weighted_sum(np.array([r[label][key] for r in ordered], dtype=np.float64),
                                                      ones)[0])
            # TP, FP and FN are whole numbers, shown as such (sums of whole floats: exact)
            entry["counts"] = {key: int(value) if key in WHOLE_COUNTS else value for key, value in counted.items()}
            aggregates[label] = entry
        return {"aggregates": aggregates, "counts": {"cases": len(ordered)}}

    def score_aggregates(self, results: dict[str, Any]) -> dict[str, Any]:
        """metrics.json; a ranked mean over positive cases of a label no case's ground truth holds
        has no value, which is the test set's fault: SetupError naming the label."""
        positive_means = [metric for metric, aggregation in self.ranked_metrics.items() if aggregation == POSITIVE_MEAN]
        if positive_means:
            labels = [*self.label_names(), *([self.agnostic_entry] if self.agnostic_declared() else [])]
            for label in labels:
                if not any(result[label][self.positive_key] > 0 for result in results.values()):
                    paths = ", ".join(value.path for value in self.ranked if POSITIVE_MEAN in value.path)
                    raise SetupError(f"No case's ground truth holds {label}: the mean over positive cases of "
                                     f"{', '.join(positive_means)} (ranked: {paths}) is undefined on this test set.")
        return super().score_aggregates(results)
