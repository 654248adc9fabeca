"""The classification kind: one job per case writes a likelihood, a list of likelihoods or a class,
and the ranked values are metrics of the whole test set (evaluation/metrics/classification.py
and confusion.py), each computed with the case weights so that metrics.json (a row of ones) and
every bootstrap resample of the final ranking (a row of counts) go through the same call.

A challenge subclasses `Classification` and declares (defaults in brackets):

- `task`: "binary" (the second class is the positive one), "multiclass" (one class per case)
  or "multilabel" (any number of labels per case) ["binary"];
- `classes`: the class names, in the order of the job's list of likelihoods and of the
  ground truth's indices [("negative", "positive")]; each a metrics.json key (no ".");
- `output`: "likelihood" (binary: one number from 0 to 1; otherwise one per class, a JSON list
  in `classes` order) or "class" (a class name; multilabel: a list of them; then only the
  decision metrics apply) ["likelihood"];
- `sockets`: "one" (the setting `output_socket` holds the value) or "per_class" (multi-class and
  multi-label likelihoods: one socket per class, each one number, the settings
  `<class>_socket`, default "<class>-likelihood") ["one"];
- `score_bounds`: the range a likelihood must lie in, a job's value outside it being the
  participant's error [(0.0, 1.0)]; another range, or None for a bound (`(None, None)`: any finite
  number), is for a score whose order alone is ranked (AIROGS's ungradability score): the AUCs,
  average precision and sensitivity at a specificity read only its order; it needs
  `decision_socket` (a threshold from 0 to 1 would decide nothing meaningful of it);
- `per_case`: "one" (a job writes one value for its case) or "list" (a job scores a list of
  items, the frames of a stack or the figures of a slide, binary and multi-class: each socket
  holds a JSON list with one value per item, in the order of the ground truth's list of the
  case's item classes; every ranked value is of all the items of the test set, and the final
  ranking's bootstrap draws whole cases, the items of a case together) ["one"];
- `decision_socket`: "" (the organizer's rule decides: the settings' threshold, or the largest
  likelihood) or the slug of a second output socket where the job writes its own decision beside
  its likelihood(s), the participant choosing the threshold: a class name (binary also 0 or 1,
  false or true; multi-label a list of class names), the default of the setting
  `decision_socket` (config.json may rename it; the setting `threshold` is then gone). The
  ranked values that read likelihoods (AUC, average precision, sensitivity at a specificity)
  read the likelihood socket, those that read decisions (F1, sensitivity, specificity,
  balanced accuracy, kappa, accuracy) the decision socket. Not with output "class" (the class is
  the decision already) [""];
- `ranked_metrics`: the ranked values, the first the leaderboard's score, built by this module's
  constructors: `roc_auc(max_fpr=None)` (a partial AUC up to max_fpr, McClish-standardised;
  multi-class: one-vs-rest macro, multi-label: macro over the labels), `average_precision()`,
  `balanced_accuracy()`, `cohen_kappa(weights=None | "linear" | "quadratic")`,
  `f1(average=None)` (binary: the positive class's; else "macro" by default, or "micro",
  "weighted"), `sensitivity_at_specificity(specificity)` (binary), `sensitivity()` and
  `specificity()` (binary, at the decisions: the positive and the negative class's recall),
  `accuracy()` (multi-label: every label right) [(roc_auc(), balanced_accuracy())];
- `ranking`: the final ranking's rule, "ordered" (the first metric, ties by the next) or
  "mean_of_ranks" (the mean of the metrics' ranks); a per-case rule does not apply, the metrics
  being of the whole test set (evaluation/kinds/tabular.py) ["ordered"];
- `composite`: {key: weight} or a `Composite` (kinds/declared.py: a weighted sum of the metrics by
  key), ranked first [None];
- `excluded_classes`: classes of the ground truth whose cases are left out of every ranked
  value, binary and multi-class (AIROGS's ungradable images, out of its screening metrics): the
  jobs of those cases are read and checked as every other (the participant cannot tell them
  apart), reported per case and counted, never scored; each a class name of the ground truth
  only (never a class the job may answer), a metrics.json key [()];
- `breakdown`: "" or the name of a field of the ground truth's entries naming each case's group
  (its domain, scanner or centre: `breakdown = "domain"` makes every entry {"class": ...,
  "domain": "scanner-a"}); metrics.json then also holds every ranked value of each group's
  cases alone, under breakdown.<group> with the group's case count, never ranked, null with a
  note where a group leaves a value undefined (one class only has no AUC) [""];
- `settings_class`: `ClassificationSettings` (input_socket, output_socket ["likelihood"],
  threshold [0.5]: a likelihood at or above it is a positive decision; multi-class decides by
  the largest likelihood, the first class on a tie); with `decision_socket` declared, the
  setting `decision_socket` in place of `threshold`.

Who decides is a choice with consequences: a threshold the organizer fixes (0.5) makes the
decision metrics rank how well calibrated the likelihoods happen to be around it, a model of
perfect ranking (AUC 1) scoring a balanced accuracy of 0.5 when all its likelihoods lie below
0.5; a decision socket lets each participant pick the operating point, as a clinical use would,
and the AUC still ranks the likelihoods whatever that point.

The ground truth is one JSON file {case id: class}: binary 0 or 1 (or a class name),
multi-class a class name (or its index), multi-label a list of class names (with per_case
"list": a non-empty list of such classes, one per item); every class
present (multi-label: every label present in one case and absent from another), so that every
ranked value of the whole test set is defined.

metrics.json: the ranked values under "aggregates" (e.g. aggregates.roc_auc), each class's
sensitivity and PPV at the decisions under aggregates.<class>, "counts" (cases, and with per_case
"list" items; cases or items per class, the excluded classes' too), and per case the job's
likelihood(s) and decision (per_case "list": "likelihoods" and "decisions", one per item) under
"cases" (never the truth: metrics.json may be shown to the participant).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np

from evaluation.declarations.columns import Column
from evaluation.declarations.workload import Workload
from evaluation.errors import SetupError, SubmissionError
from evaluation.kinds.declared import (
    CaseSettings,
    Composite,
    Declared,
    Ranked,
    composite_of,
    reference_document,
    remade_settings,
    settings_with_sockets,
    socket_slugs,
)
from evaluation.kinds.tabular import Metric, output_number, with_composite
from evaluation.metrics.aggregation import weighted_mean
from evaluation.metrics.classification import (
    average_precision_score,
    roc_auc_score,
)
from evaluation.metrics.classification import (
    sensitivity_at_specificity as sensitivity_at_specificity_score,
)
from evaluation.metrics.confusion import (
    accuracy_score,
    balanced_accuracy_score,
    cohen_kappa_score,
    f1_score,
    precision_score,
    recall_score,
    specificity_score,
)
from evaluation.platform.cases import Case
from evaluation.platform.locations import CONFIG_FILE
from evaluation.platform.outputs import Undefined, set_at_path
from evaluation.reading.values import finite_numbers, json_type, shown
from evaluation.settings import JSON_OUTPUT, Settings, setting

TASKS = ("binary", "multiclass", "multilabel")
OUTPUTS = ("likelihood", "class")
SCORES, DECISIONS = "scores", "decisions"


@dataclass(frozen=True)
class ClassificationSettings(CaseSettings):
    """The defaults; the phase's config.json next to the ground truth may change them (python -m
    evaluation --list lists them with their defaults)."""

    output_socket: str = setting("likelihood", socket=JSON_OUTPUT,
                                 doc="output socket read: a likelihood from 0 to 1 (binary), a list of one per class, "
                                     "or a class")
    threshold: float = setting(0.5, minimum=0.0, maximum=1.0,
                               doc="a likelihood at or above this is a positive decision (binary and multi-label)")


@dataclass(frozen=True)
class DecisionSocketSettings(Settings):
    """The base of the settings of a challenge whose job writes its decision to a socket of its
    own (`decision_socket`): that socket is not one the likelihoods are read from."""

    def check(self) -> None:
        super().check()
        problem = decision_socket_problem(self)
        if problem is not None:
            raise SetupError(f"{CONFIG_FILE}: {problem}.")


def decision_socket_problem(settings: Settings) -> str | None:
    """What is wrong with the decision socket beside the likelihood socket(s), or None."""
    decision = settings.decision_socket
    for name, value in settings.as_dict().items():
        if name.endswith("_socket") and name not in ("decision_socket", "input_socket") and value == decision:
            return (f"setting 'decision_socket' names the socket {decision!r} that {name!r} names; the decision and "
                    f"the likelihood are read from sockets of their own")
    return None


@dataclass(frozen=True)
class Outcomes:
    """The test set as arrays, cases in id order: `truth` and `decisions` (cases,) class indices,
    or (cases, classes) 0/1 for multi-label; `scores` (cases,) the positive class's likelihood
    (binary) or (cases, classes), None when the job writes classes."""

    task: str
    classes: int
    truth: np.ndarray
    decisions: np.ndarray
    scores: np.ndarray | None


def outcomes_of(results: Sequence[dict], task: str, classes: int) -> Outcomes:
    truth = np.array([result["truth"] for result in results], dtype=np.int64)
    decisions = np.array([result["decision"] for result in results], dtype=np.int64)
    scores = None
    if results and results[0].get("scores") is not None:
        scores = np.array([result["scores"] for result in results], dtype=np.float64)
    return Outcomes(task, classes, truth, decisions, scores)


def _metric(key, title, better, reads, tasks, of) -> Metric:
    return Metric(key, title, better, of, reads, tasks)


def _number_key(value: float) -> str:
    """0.9 -> "90", 0.125 -> "12_5": a percentage as a metrics.json key part."""
    return f"{value * 100:g}".replace(".", "_")


def _labels(o: Outcomes) -> np.ndarray:
    return np.arange(o.classes)


def _per_label(o: Outcomes, weights, binary) -> np.ndarray:
    """A binary decision metric of each label of a multi-label task, (rows, labels)."""
    return np.stack([np.asarray(binary(o.truth[:, c], o.decisions[:, c], weights), dtype=np.float64).reshape(-1)
                     for c in range(o.classes)], axis=-1)


def roc_auc(max_fpr: float | None = None, key: str | None = None) -> Metric:
    """ROC AUC of the likelihoods (scikit-learn's roc_auc_score): binary; multi-class one class
    against the rest, the mean over the classes; multi-label the mean over the labels. max_fpr:
    the partial AUC up to that false positive rate, McClish-standardised (binary, multi-label)."""
    partial = max_fpr is not None and max_fpr != 1

    def of(o: Outcomes, weights):
        if o.task == "binary":
            return roc_auc_score(o.truth == 1, o.scores, weights, max_fpr=max_fpr)
        if o.task == "multiclass":
            return roc_auc_score(o.truth, o.scores, weights, multi_class="ovr", average="macro", labels=_labels(o))
        return roc_auc_score(o.truth, o.scores, weights, max_fpr=max_fpr, average="macro")

    if partial:
        return _metric(key or f"partial_roc_auc_{_number_key(max_fpr)}",
                       f"Partial ROC AUC (FPR <= {max_fpr:g}, McClish)", "higher", SCORES, ("binary", "multilabel"), of)
    return _metric(key or "roc_auc", "ROC AUC", "higher", SCORES, TASKS, of)


def average_precision(key: str = "average_precision") -> Metric:
    """Average precision of the likelihoods (scikit-learn's average_precision_score; multi-class
    and multi-label: the mean over the classes, each against the rest)."""
    def of(o: Outcomes, weights):
        if o.task == "binary":
            return average_precision_score(o.truth == 1, o.scores, weights)
        labels = _labels(o) if o.task == "multiclass" else None
        return average_precision_score(o.truth, o.scores, weights, average="macro", labels=labels)

    return _metric(key, "Average precision", "higher", SCORES, TASKS, of)


def sensitivity_at_specificity(specificity: float, key: str | None = None) -> Metric:
    """Binary: the largest sensitivity among the ROC points with at least this specificity."""
    def of(o: Outcomes, weights):
        return sensitivity_at_specificity_score(o.truth == 1, o.scores, specificity, weights)

    return _metric(key or f"sensitivity_at_specificity_{_number_key(specificity)}",
                   f"Sensitivity at {specificity * 100:g}% specificity", "higher", SCORES, ("binary",), of)


def sensitivity(key: str = "sensitivity") -> Metric:
    """Binary: the share of the positive cases decided positive (at the threshold), TP / (TP + FN)."""
    def of(o: Outcomes, weights):
        return recall_score(o.truth, o.decisions, weights, labels=[0, 1], pos_label=1, average="binary")

    return _metric(key, "Sensitivity", "higher", DECISIONS, ("binary",), of)


def specificity(key: str = "specificity") -> Metric:
    """Binary: the share of the negative cases decided negative (at the threshold), TN / (TN + FP)."""
    def of(o: Outcomes, weights):
        return specificity_score(o.truth, o.decisions, weights, labels=[0, 1], pos_label=1, average="binary")

    return _metric(key, "Specificity", "higher", DECISIONS, ("binary",), of)


def balanced_accuracy(key: str = "balanced_accuracy") -> Metric:
    """The mean over the classes of their sensitivity at the decisions (binary: (sensitivity +
    specificity) / 2); multi-label: the mean over the labels of each label's balanced accuracy.
    A class absent from the cases scored is left out of the mean, as scikit-learn leaves it out:
    a breakdown group of one class gets that class's recall, not an undefined value."""
    def of(o: Outcomes, weights):
        if o.task == "multilabel":
            return _per_label(o, weights, lambda t, d, w: balanced_accuracy_score(t, d, w, labels=[0, 1])).mean(axis=1)
        return balanced_accuracy_score(o.truth, o.decisions, weights, labels=_labels(o))

    return _metric(key, "Balanced accuracy", "higher", DECISIONS, TASKS, of)


def cohen_kappa(weights: str | None = None, key: str | None = None) -> Metric:
    """Cohen's kappa of the decisions against the truth; weights None, "linear" or "quadratic"
    (by the distance of the classes' positions in `classes`: ordinal grades)."""
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"cohen_kappa weights must be None, 'linear' or 'quadratic', not {weights!r}")

    def of(o: Outcomes, sample_weight):
        return cohen_kappa_score(o.truth, o.decisions, sample_weight, labels=_labels(o), weights=weights)

    title = "Cohen's kappa" + (f" ({weights} weights)" if weights else "")
    return _metric(key or ("cohen_kappa" + (f"_{weights}" if weights else "")), title, "higher", DECISIONS,
                   ("binary", "multiclass"), of)


def f1(average: str | None = None, key: str | None = None) -> Metric:
    """F1 of the decisions: binary, the positive class's; otherwise averaged over the classes
    ("macro" by default, "micro": the counts summed first, "weighted": by each class's cases)."""
    if average not in (None, "macro", "micro", "weighted"):
        raise ValueError(f"f1 average must be None, 'macro', 'micro' or 'weighted', not {average!r}")

    def of(o: Outcomes, weights):
        if o.task == "binary":
            return f1_score(o.truth, o.decisions, weights, labels=[0, 1], pos_label=1, average="binary")
        mean = average or "macro"
        if o.task == "multiclass":
            return f1_score(o.truth, o.decisions, weights, labels=_labels(o), average=mean)
        rows = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        if mean == "micro":  # every (case, label) one binary decision
            return f1_score(o.truth.ravel(), o.decisions.ravel(), np.repeat(rows, o.classes, axis=1), labels=[0, 1],
                            average="binary")
        scores = _per_label(o, rows, lambda t, d, w: f1_score(t, d, w, labels=[0, 1], average="binary"))
        if mean == "macro":
            return scores.mean(axis=1)
        support = rows @ o.truth
        with np.errstate(invalid="ignore", divide="ignore"):
            return (np.where(support > 0, scores, 0.0) * support).sum(axis=1) / support.sum(axis=1)

    name = "f1" if average in (None, "macro") else f"f1_{average}"
    title = "F1" + (f" ({average})" if average else "")
    return _metric(key or name, title, "higher", DECISIONS, TASKS, of)


def accuracy(key: str = "accuracy") -> Metric:
    """The share of cases decided right (multi-label: every label right, the subset accuracy)."""
    def of(o: Outcomes, weights):
        if o.task == "multilabel":
            return weighted_mean((o.truth == o.decisions).all(axis=1).astype(np.float64), np.atleast_2d(weights))
        return accuracy_score(o.truth, o.decisions, weights, labels=_labels(o))

    return _metric(key, "Accuracy", "higher", DECISIONS, TASKS, of)


def itemised(results: Sequence[dict], weights: np.ndarray) -> tuple[Sequence[dict], np.ndarray]:
    """Cases of several items (per_case "list": {"items": [...]}) as their items, each item's
    weight column its case's (a case drawn twice by the bootstrap brings its items twice); cases
    of one value as they are."""
    if not results or "items" not in results[0]:
        return results, weights
    counts = [len(result["items"]) for result in results]
    return [item for result in results for item in result["items"]], np.repeat(weights, counts, axis=1)


def scored(results: Sequence[dict], weights: np.ndarray) -> tuple[Sequence[dict], np.ndarray]:
    """The cases (items) a ranked value sees, with their weight columns: those of an excluded
    class (a negative truth, declared `excluded_classes`) left out."""
    results, weights = itemised(results, weights)
    kept = [i for i, result in enumerate(results) if not _excluded(result["truth"])]
    if len(kept) == len(results):
        return results, weights
    return [results[i] for i in kept], weights[:, kept]


def _excluded(truth: int | tuple[int, ...]) -> bool:
    return isinstance(truth, int) and truth < 0


def _metric_ranked(metric: Metric, task: str, classes: int) -> Ranked:
    def compute(results, weights, _):
        results, weights = scored(results, np.atleast_2d(weights))
        values = metric.of(outcomes_of(results, task, classes), weights)
        return np.asarray(values, dtype=np.float64).reshape(-1)

    return Ranked(Column(metric.title, f"aggregates.{metric.key}", metric.order), compute)


class Items(tuple):
    """The classes of a case's items, in order (per_case "list")."""


class Grouped(NamedTuple):
    """A case's ground truth with its group (a declaration with a `breakdown`)."""

    truth: int | tuple[int, ...]
    group: str


class Classification(Declared):
    """A classification challenge, declared (the module docstring lists every choice)."""

    task: ClassVar[str] = "binary"
    classes: ClassVar[tuple[str, ...]] = ("negative", "positive")
    output: ClassVar[str] = "likelihood"
    sockets: ClassVar[str] = "one"
    # "list": each job scores a list of items (a stack's frames), the ranked values over all items
    per_case: ClassVar[str] = "one"
    # where a job's likelihoods lie; another range (None: unbounded) for a score ranked by its order
    score_bounds: ClassVar[tuple[float | None, float | None]] = (0.0, 1.0)
    # "" : the threshold (or the largest likelihood) decides; a slug: the job writes its decision there
    decision_socket: ClassVar[str] = ""
    ranked_metrics: ClassVar[tuple[Metric, ...]] = (roc_auc(), balanced_accuracy())
    composite: ClassVar[Composite | Mapping[str, float] | None] = None
    # truth classes whose cases are read and checked, never scored (binary and multi-class)
    excluded_classes: ClassVar[tuple[str, ...]] = ()
    # "" or the ground-truth field naming each case's group: the ranked values per group, reported
    breakdown: ClassVar[str] = ""
    settings_class = ClassificationSettings
    workload = Workload(in_workers=False)  # a few numbers per case: a process pool would cost more than it saves

    def __init_subclass__(cls, **kwargs: Any) -> None:
        cls.composite = composite_of(cls.composite, cls.__name__)  # a Composite or {key: weight}
        cls.check_declaration()
        parts = {metric.key: _metric_ranked(metric, cls.task, len(cls.classes)) for metric in cls.ranked_metrics}
        if "ranked" not in cls.__dict__:
            cls.ranked = with_composite(cls.composite, parts, cls.__name__)
        if (cls.sockets == "per_class" or cls.decision_socket) and "settings_class" not in cls.__dict__:
            cls.settings_class = cls.declared_settings()
            if cls.decision_socket:
                problem = decision_socket_problem(cls.settings_class())
                if problem is not None:
                    raise TypeError(f"{cls.__name__}: {problem}")
        super().__init_subclass__(**kwargs)

    @classmethod
    def declared_settings(cls) -> type[Settings]:
        """ClassificationSettings as the declaration changes them: the setting `decision_socket`
        (default the declared slug) in place of `threshold`; one likelihood socket per class."""
        settings, base = ClassificationSettings, Settings
        if cls.decision_socket:
            base = DecisionSocketSettings
            words = ("decision", "decisions", "class", "classes", "label", "diagnosis")
            decision = setting(cls.decision_socket, socket=JSON_OUTPUT, hints=words,
                               doc="output socket read: the job's decision, a class name (binary also 0 or 1, "
                                   "false or true; multi-label a list of class names)")
            settings = remade_settings(settings, cls, ("threshold",), [("decision_socket", str, decision)],
                                       "The job writes its decision to a socket of its own.", base)
        if cls.sockets == "per_class":
            settings = settings_with_sockets(settings, cls, cls.classes,
                                             lambda name: f"{name.replace('_', '-')}-likelihood", "likelihood of",
                                             base)
        return settings

    @classmethod
    def check_declaration(cls) -> None:
        """TypeError naming what is wrong with the declaration (at import: a challenge that cannot run)."""
        if cls.task not in TASKS:
            raise TypeError(f"{cls.__name__}: task {cls.task!r} is not one of {', '.join(TASKS)}")
        if cls.output not in OUTPUTS:
            raise TypeError(f"{cls.__name__}: output {cls.output!r} is not one of {', '.join(OUTPUTS)}")
        if cls.sockets not in ("one", "per_class"):
            raise TypeError(f"{cls.__name__}: sockets {cls.sockets!r} is not 'one' or 'per_class'")
        bounds = cls.score_bounds
        if not (isinstance(bounds, tuple) and len(bounds) == 2
                and all(b is None or (isinstance(b, (int, float)) and not isinstance(b, bool) and math.isfinite(b))
                        for b in bounds)
                and (None in bounds or bounds[0] < bounds[1])):
            raise TypeError(f"{cls.__name__}: score_bounds {bounds!r} must be (lowest, highest), each a finite number "
                            f"or None, the lowest below the highest")
        if tuple(bounds) != (0.0, 1.0) and cls.output == "likelihood" and not cls.decision_socket:
            raise TypeError(f"{cls.__name__}: scores in {bounds!r} need the job's own decisions (decision_socket): a "
                            f"threshold from 0 to 1 decides likelihoods, not such scores")
        if cls.per_case not in ("one", "list"):
            raise TypeError(f"{cls.__name__}: per_case {cls.per_case!r} is not 'one' or 'list'")
        if cls.per_case == "list" and (cls.task == "multilabel" or cls.sockets == "per_class"):
            raise TypeError(f"{cls.__name__}: per_case 'list' is for binary and multiclass tasks with one socket "
                            f"(a list of values in it, one per item)")
        if cls.sockets == "per_class" and (cls.task == "binary" or cls.output != "likelihood"):
            raise TypeError(f"{cls.__name__}: one socket per class is for the likelihoods of a multiclass or "
                            f"multilabel task")
        if not isinstance(cls.decision_socket, str) or cls.decision_socket != cls.decision_socket.strip():
            raise TypeError(f"{cls.__name__}: decision_socket {cls.decision_socket!r} must be a socket's slug, or "
                            f"'' for the threshold's decisions")
        if cls.decision_socket and cls.output != "likelihood":
            raise TypeError(f"{cls.__name__}: a decision socket goes beside likelihoods; with output 'class' the "
                            f"job's class is its decision already")
        names = list(cls.classes)
        if len(names) < 2 or (cls.task == "binary" and len(names) != 2):
            wanted = "2" if cls.task == "binary" else "2 or more"
            raise TypeError(f"{cls.__name__}: a {cls.task} task declares {wanted} classes, not {names}")
        keys = {metric.key for metric in cls.ranked_metrics} | ({cls.composite.key} if cls.composite else set())
        for name in names:
            if not isinstance(name, str) or not name or "." in name or name in keys or name == "counts":
                raise TypeError(f"{cls.__name__}: class name {name!r} must be a non-empty metrics.json key without "
                                f"'.', and not a metric's key")
        if len(set(names)) != len(names):
            raise TypeError(f"{cls.__name__}: a class is named twice in {names}")
        if not cls.ranked_metrics:
            raise TypeError(f"{cls.__name__} declares no metric")
        excluded = cls.excluded_classes
        if not isinstance(excluded, tuple) or not all(isinstance(name, str) for name in excluded):
            raise TypeError(f"{cls.__name__}: excluded_classes must be a tuple of class names, not {excluded!r}")
        if excluded and cls.task == "multilabel":
            raise TypeError(f"{cls.__name__}: excluded_classes are for binary and multiclass tasks (a multi-label "
                            f"case has no one class)")
        for name in excluded:
            if not name or "." in name or name in keys or name in names or name in ("counts", "cases"):
                raise TypeError(f"{cls.__name__}: excluded class {name!r} must be a non-empty metrics.json key "
                                f"without '.', neither a declared class nor a metric's key")
        if len(set(excluded)) != len(excluded):
            raise TypeError(f"{cls.__name__}: an excluded class is named twice in {list(excluded)}")
        if not isinstance(cls.breakdown, str) or (cls.breakdown and (not cls.breakdown.isidentifier()
                                                                     or cls.breakdown == "class")):
            raise TypeError(f"{cls.__name__}: breakdown {cls.breakdown!r} must be '' or the name of a field of the "
                            f"ground truth's entries (a word, not 'class')")
        if len(keys) != len(cls.ranked_metrics) + (1 if cls.composite else 0):
            raise TypeError(f"{cls.__name__}: two metrics share a key: {[m.key for m in cls.ranked_metrics]}")
        for metric in cls.ranked_metrics:
            if cls.task not in metric.tasks:
                raise TypeError(f"{cls.__name__}: the metric {metric.key!r} is defined for {', '.join(metric.tasks)} "
                                f"tasks, not {cls.task}")
            if metric.reads == SCORES and cls.output == "class":
                raise TypeError(f"{cls.__name__}: the metric {metric.key!r} ranks likelihoods, but the job writes a "
                                f"class (output = 'class')")

    # ---- the ground truth -------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, Any]:
        shape = {"binary": "0 or 1", "multiclass": "a class name", "multilabel": "a list of class names"}[self.task]
        if self.per_case == "list":
            shape = f"a list of {shape.removeprefix('a ')}s, one per item"
        if self.breakdown:
            shape = f'{{"class": {shape}, "{self.breakdown}": its group}}'
        path, document = reference_document(self.truth, directory, shape)
        truth = {case_id: self.entry_of(path, case_id, value) for case_id, value in document.items()}
        classes = [getattr(entry, "truth", entry) for entry in truth.values()]
        self.check_classes_present(path, [c for value in classes for c in (value if isinstance(value, Items)
                                                                            else [value])])
        return truth

    def entry_of(self, path: Path, case_id: str, value: Any) -> int | tuple[int, ...] | Grouped:
        """A case's ground truth: its class(es), with its group when the declaration has a breakdown."""
        if not self.breakdown:
            return self.case_truth_of(path, case_id, value)
        group = value.get(self.breakdown) if isinstance(value, dict) else None
        if not (isinstance(value, dict) and set(value) == {"class", self.breakdown}):
            self.truth.fail(f"Ground truth {path.name}: case {case_id} is {shown(value)}; with a breakdown by "
                            f"{self.breakdown!r} each case is {{\"class\": ..., \"{self.breakdown}\": its group}}.")
        if not (isinstance(group, str) and group and "." not in group and group.strip() == group):
            self.truth.fail(f"Ground truth {path.name}: the {self.breakdown} of case {case_id} is {shown(group)}; it "
                            f"must be a group's name (text without '.').")
        return Grouped(self.case_truth_of(path, case_id, value["class"]), group)

    def case_truth_of(self, path: Path, case_id: str, value: Any) -> int | tuple[int, ...] | Items:
        """A case's class(es); with per_case "list", its items' classes."""
        if self.per_case == "one":
            return self.truth_of(path, case_id, value)
        if not isinstance(value, list) or not value:
            self.truth.fail(f"Ground truth {path.name}: case {case_id} is {shown(value)}; each case is a non-empty "
                            f"list of its items' classes (per_case 'list').")
        return Items(self.truth_of(path, f"{case_id} (item {index})", item) for index, item in enumerate(value))

    def truth_of(self, path: Path, case_id: str, value: Any) -> int | tuple[int, ...]:
        names = list(self.classes)
        if self.task == "multilabel":
            if isinstance(value, list) and all(isinstance(v, str) and v in names for v in value) \
                    and len(set(value)) == len(value):
                return tuple(int(name in value) for name in names)
            self.truth.fail(f"Ground truth {path.name}: case {case_id} is {shown(value)}; it must be a list of "
                            f"distinct class names of {names}.")
        if isinstance(value, str) and value in names:
            return names.index(value)
        if isinstance(value, str) and value in self.excluded_classes:  # -1, -2, ...: read, never scored
            return -1 - self.excluded_classes.index(value)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
            return value
        excluded = f" (or, left out of the ranked values, {list(self.excluded_classes)})" if self.excluded_classes \
            else ""
        self.truth.fail(f"Ground truth {path.name}: the class of case {case_id} is {shown(value)}; it must be one of "
                        f"{names} or its index (0 to {len(names) - 1}){excluded}.")
        raise AssertionError  # fail raises

    def check_classes_present(self, path: Path, truth: Sequence[Any]) -> None:
        """Every class in the ground truth, the truths of its cases or items (multi-label: present
        in one case and absent from another): without it the ranked values of the whole test set
        are undefined."""
        values = np.array([value for value in truth if not _excluded(value)])
        if self.task != "multilabel" and not values.size:
            self.truth.fail(f"Ground truth {path.name}: every case is of an excluded class "
                            f"({', '.join(self.excluded_classes)}); nothing would be scored.")
        if self.task == "multilabel":
            missing = [name for c, name in enumerate(self.classes) if values[:, c].all() or not values[:, c].any()]
            what = "present in at least one case and absent from another"
        else:
            missing = [name for c, name in enumerate(self.classes) if not (values == c).any()]
            what = "the class of at least one case"
        if missing:
            self.truth.fail(f"Ground truth {path.name}: every class must be {what}; {', '.join(missing)} "
                            f"{'is' if len(missing) == 1 else 'are'} not.")

    # ---- the job's output -------------------------------------------------------------------

    def read_job_prediction(self, case: Case, ground_truth: Any) -> dict[str, Any]:
        """{"scores": the likelihood(s) or None, "decision": class index or 0/1 per label}: the
        decision the job's own when it writes one (output "class", or the decision socket), else
        the threshold's (multi-class: the largest likelihood's). per_case "list": {"items": one
        such dict per item}, each socket a list of the items' values."""
        truth = getattr(ground_truth, "truth", ground_truth)
        if isinstance(truth, Items):
            return {"items": self.read_items(case, len(truth))}
        low, high = self.score_bounds
        if self.sockets == "per_class":
            scores: float | tuple[float, ...] = tuple(
                output_number(case.read_json(slug), case, slug, minimum=low, maximum=high)
                for slug in socket_slugs(self.settings, self.classes))
        else:
            slug = self.settings.output_socket
            value = case.read_json(slug)
            if self.output == "class":
                return {"scores": None, "decision": self.read_class(f"{case.name}: the output {slug!r}", value)}
            if self.task == "binary":
                scores = output_number(value, case, slug, minimum=low, maximum=high)
            else:
                scores = tuple(finite_numbers(value, len(self.classes), f"{case.name}: the output {slug!r}",
                                              "likelihood", minimum=low, maximum=high).tolist())
        if self.decision_socket:  # the participant's operating point, not the organizer's threshold
            slug = self.settings.decision_socket
            return {"scores": scores, "decision": self.read_class(f"{case.name}: the output {slug!r}",
                                                                  case.read_json(slug))}
        return {"scores": scores, "decision": self.decided(scores)}

    def decided(self, scores: float | tuple[float, ...]) -> int | tuple[int, ...]:
        """The organizer's decision of likelihoods: the threshold's, multi-class the largest."""
        if self.task == "binary":
            return int(scores >= self.settings.threshold)
        if self.task == "multiclass":
            return int(np.argmax(scores))
        return tuple(int(s >= self.settings.threshold) for s in scores)

    def read_items(self, case: Case, count: int) -> list[dict[str, Any]]:
        """per_case "list": the job's list of `count` values (one per item, the ground truth's
        order) and, with a decision socket, its list of decisions; one dict per item."""
        slug = self.settings.output_socket
        where = f"{case.name}: the output {slug!r}"
        values = self.item_list(where, case.read_json(slug), count)
        low, high = self.score_bounds
        if self.output == "class":
            return [{"scores": None, "decision": self.read_class(f"{where}, item {i},", value)}
                    for i, value in enumerate(values)]
        if self.task == "binary":
            scores: list = finite_numbers(values, count, where, "likelihood", minimum=low, maximum=high).tolist()
        else:
            scores = [tuple(finite_numbers(value, len(self.classes), f"{where}, item {i}", "likelihood", minimum=low,
                                           maximum=high).tolist()) for i, value in enumerate(values)]
        if not self.decision_socket:
            return [{"scores": score, "decision": self.decided(score)} for score in scores]
        decision_slug = self.settings.decision_socket
        where = f"{case.name}: the output {decision_slug!r}"
        decisions = self.item_list(where, case.read_json(decision_slug), count)
        return [{"scores": score, "decision": self.read_class(f"{where}, item {i},", decision)}
                for i, (score, decision) in enumerate(zip(scores, decisions, strict=True))]

    @staticmethod
    def item_list(where: str, value: Any, count: int) -> list:
        if not isinstance(value, list):
            raise SubmissionError(f"{where} must be a JSON array of {count} values (one per item), found "
                                  f"{json_type(value)}.")
        if len(value) != count:
            raise SubmissionError(f"{where}: expected {count} values (one per item), found {len(value)}.")
        return value

    def read_class(self, where: str, value: Any) -> int | tuple[int, ...]:
        """The job's class (output "class", or its decision beside the likelihoods): a class name;
        binary also 0 or 1, false or true (the positive class being the second); multi-label a
        list of class names. SubmissionError naming the case and the socket (`where`) otherwise."""
        names = list(self.classes)
        if self.task == "multilabel":
            if not isinstance(value, list) or not all(isinstance(v, str) and v in names for v in value):
                raise SubmissionError(f"{where} is {shown(value)}; it must be a list of class names of {names}.")
            return tuple(int(name in value) for name in names)
        if self.task == "binary" and (isinstance(value, bool) or (isinstance(value, int) and value in (0, 1))):
            return int(value)
        if not isinstance(value, str) or value not in names:
            found = shown(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) \
                else json_type(value)
            wanted = f"one of the class names {names}" + (", 0 or 1, or false or true" if self.task == "binary" else "")
            raise SubmissionError(f"{where} is {found}; it must be {wanted}.")
        return names.index(value)

    def score_case(self, case: Case, prediction: dict[str, Any], ground_truth: Any) -> dict[str, Any]:
        truth = getattr(ground_truth, "truth", ground_truth)
        if isinstance(truth, Items):
            result: dict[str, Any] = {"items": [{"truth": t, **item}
                                                for t, item in zip(truth, prediction["items"], strict=True)]}
        else:
            result = {"truth": truth, **prediction}
        if isinstance(ground_truth, Grouped):
            result["group"] = ground_truth.group
        return result

    # ---- metrics.json -----------------------------------------------------------------------

    def case_entry(self, result: dict[str, Any]) -> dict[str, Any]:
        """The job's likelihood(s) and decision (per_case "list": a list of each, one per item);
        never the truth (metrics.json may be shown)."""
        if "items" in result:
            entries = [self.case_entry(item) for item in result["items"]]
            plural = {"likelihood": "likelihoods", "likelihoods": "likelihoods", "decision": "decisions"}
            return {plural[key]: [entry[key] for entry in entries] for key in entries[0]}
        names = list(self.classes)
        entry: dict[str, Any] = {}
        if result["scores"] is not None:
            if self.task == "binary":
                entry["likelihood"] = result["scores"]
            else:
                entry["likelihoods"] = dict(zip(names, result["scores"], strict=True))
        if self.task == "multilabel":
            entry["decisions"] = [name for name, on in zip(names, result["decision"], strict=True) if on]
        else:
            entry["decision"] = names[result["decision"]]
        return entry

    def report(self, results: dict[str, Any]) -> dict[str, Any]:
        """Counts, and each class's sensitivity and PPV at the decisions (one against the rest),
        over the scored cases (those of an excluded class counted apart)."""
        everyone, _ = itemised([results[c] for c in sorted(results)], np.ones((1, len(results))))
        kept, _ = scored(everyone, np.ones((1, len(everyone))))
        o = outcomes_of(kept, self.task, len(self.classes))
        if self.task == "multilabel":
            present = o.truth.sum(axis=0)
            sensitivity = [recall_score(o.truth[:, c], o.decisions[:, c], labels=[0, 1]) for c in range(o.classes)]
            ppv = [precision_score(o.truth[:, c], o.decisions[:, c], labels=[0, 1]) for c in range(o.classes)]
        else:
            present = np.bincount(o.truth, minlength=o.classes)
            sensitivity = recall_score(o.truth, o.decisions, labels=_labels(o), average=None)
            ppv = precision_score(o.truth, o.decisions, labels=_labels(o), average=None)
        per_class = {name: {"sensitivity": float(sensitivity[c]), "ppv": float(ppv[c])}
                     for c, name in enumerate(self.classes)}
        counts = {"cases": len(results), **({"items": len(everyone)} if self.per_case == "list" else {}),
                  **{name: int(present[c]) for c, name in enumerate(self.classes)}}
        if self.excluded_classes:  # the cases (items) of each excluded class, out of the ranked values
            truth = [result["truth"] for result in everyone]
            counts.update({name: truth.count(-1 - k) for k, name in enumerate(self.excluded_classes)})
        document: dict[str, Any] = {"aggregates": per_class, "counts": counts}
        if self.breakdown:
            document["breakdown"] = self.group_values(results)
        return document

    def group_values(self, results: dict[str, Any]) -> dict[str, Any]:
        """{group: {"cases": n (its scored cases; per_case "list": its cases, and "items" their scored
        items), every ranked value of the group's cases alone}}: the aggregate
        with the case weights of the group (1 for its cases, 0 for the others), so each value is
        the ranked one's own definition on that subset; NaN (a group of one class has no AUC) is
        null with a note."""
        groups = np.array([results[case]["group"] for case in sorted(results)])
        names = sorted(set(groups.tolist()))
        weights = (groups[None, :] == np.array(names)[:, None]).astype(np.int64)  # a row per group
        _, counted = scored([results[case] for case in sorted(results)], weights)  # a group's scored cases (items)
        found: dict[str, Any] = {name: {"cases": int(row.sum())} for name, row in zip(names, counted, strict=True)}
        if self.per_case == "list":  # the group's cases, and their scored items
            found = {name: {"cases": int(row.sum()), "items": found[name]["cases"]}
                     for name, row in zip(names, weights, strict=True)}
        for path, values in self.aggregate(results, weights).items():
            for name, value in zip(names, values.tolist(), strict=True):
                set_at_path(found[name], path.removeprefix("aggregates."), value if np.isfinite(value) else Undefined(
                    f"undefined on the {found[name]['cases']} case(s) of {self.breakdown} {name} (one class only?)"))
        return found


__all__ = ["Classification", "ClassificationSettings", "Composite", "DecisionSocketSettings", "accuracy",
           "average_precision", "balanced_accuracy", "cohen_kappa", "f1", "roc_auc", "sensitivity",
           "sensitivity_at_specificity", "specificity"]
