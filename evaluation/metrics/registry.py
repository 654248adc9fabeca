"""The registry of every public metric: what it takes, how it behaves, whom it equals.

Each public metric function is declared once, where it is defined, with `@metric(...)`. The
declaration drives three things, so that a metric added later gets them without editing a list:

- the common tests (tests/test_metrics_common.py): symmetry, padding invariance, spacing
  scaling, weight = repetition, the declared empty policy, 2D and 3D, dtype and memory order,
  no input mutated, chosen by the metric's `kind` and properties;
- docs/metrics.md (`python -m evaluation.metrics.docs`), one entry per metric;
- the aggregation over cases a challenge declares (which direction is better, which unit).

Declaring a metric does not change it: the decorator returns the function itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field

# What a metric's arguments are; tests/metric_kinds/<kind>.py makes inputs of each kind.
KINDS = {
    "masks": "two binary masks of one shape, N-D: f(prediction, truth, ...) -> float",
    "label_maps": "two label maps of one shape and the labels to score: f(prediction, truth, labels, ...)",
    "instances": "two instance label maps of one shape (0 background): f(truth, prediction, ...)",
    "mask": "one binary mask, N-D: f(mask, ...)",
    "points": "true and predicted points, (n, ndim) arrays: f(truth, prediction, ...)",
    "point_sets": "true points, predicted points and their scores per image, sequences of (n_i, ndim), (m_i, ndim) "
                  "and (m_i,) arrays: f(truth, prediction, scores, sample_weight=None, ...)",
    "scores": "binary truth and scores per case: f(y_true, y_score, sample_weight=None, ...)",
    "class_scores": "classes and a score per class per case: f(y_true, y_score, sample_weight=None, ...)",
    "decisions": "true and predicted classes per case: f(y_true, y_pred, sample_weight=None, ...)",
    "values": "true and predicted numbers per case: f(y_true, y_pred, sample_weight=None, ...)",
    "probabilities": "binary truth and a probability per case: f(y_true, y_prob, sample_weight=None, ...)",
    "survival": "times, events and risk scores per case: f(time, event, risk, sample_weight=None)",
    "images": "two images of one shape and an optional mask: f(prediction, truth, mask=None, ...)",
    "displacement": "a displacement field (ndim, *shape) in the spacing's units and an optional mask of its shape: "
                    "f(displacement, mask=None, spacing=None, ...)",
    "landmarks": "predicted and true positions of the same landmarks, paired (n, ndim) arrays: "
                 "f(prediction, truth, spacing=None, ...)",
    "errors": "errors (distances >= 0), one per landmark or case: f(errors, ...)",
    "registration_landmarks": "fixed and moving landmarks, paired (n, ndim) arrays in voxel coordinates, and a "
                              "displacement field (ndim, *shape) in the spacing's units: "
                              "f(fixed_landmarks, moving_landmarks, displacement, spacing=None, ...)",
    "case_values": "per-case values and their weights: f(values, sample_weight=None, ...)",
}

# How a value scales when every spacing is multiplied by s: "length" by s, "area" by s², "volume"
# by s^ndim, "none" not at all (a ratio, a count, a score).
UNITS = ("none", "length", "area", "volume")


@dataclass(frozen=True)
class Metric:
    """One public metric, as declared next to its function."""

    name: str
    function: Callable
    module: str  # the family: the module's last name ("surface", "overlap", ...)
    kind: str  # a key of KINDS
    summary: str  # the first line of the docstring
    definition: str  # the rest of the docstring
    better: str | None  # "higher", "lower", or None (not a score: counts, curves)
    unit: str = "none"  # a member of UNITS
    symmetric: bool = False  # f(a, b) == f(b, a)
    empty: dict = field(default_factory=dict)  # empty case -> default value ("both_empty": 1.0, ...)
    variants: dict = field(default_factory=dict)  # parameter -> what its values select
    equals: tuple = ()  # peers whose numbers it equals: "medpy.metric.binary.hd95 (combine='pooled')"
    citation: str = ""
    weighted: bool = False  # takes sample_weight, a (rows, cases) or (cases,) weight of each case
    scaled: tuple = ()  # parameters in the spacing's units (a tolerance, a radius): scaled with it
    example: dict = field(default_factory=dict)  # keyword arguments of the documented (and tested) call
    returns: str = "float"  # "float", or the name of a result object with named fields
    # further keyword arguments, each merged over `example`, that the common tests also call it with:
    # variants whose own rule the common checks (weights, padding, dtype...) must hold for too
    checked_variants: tuple = ()

    @property
    def parameters(self) -> dict[str, inspect.Parameter]:
        return dict(inspect.signature(self.function).parameters)

    @property
    def takes_spacing(self) -> bool:
        return "spacing" in self.parameters


METRICS: dict[str, Metric] = {}


def metric(*, kind: str, better: str | None, unit: str = "none", symmetric: bool = False, empty: dict | None = None,
           variants: dict | None = None, equals: tuple | list = (), citation: str = "", returns: str = "float",
           scaled: tuple | list = (), example: dict | None = None, name: str | None = None,
           checked_variants: tuple | list = ()):
    """Declare the decorated function a public metric (see the module docstring); ValueError on a
    declaration the tests could not act on."""
    if kind not in KINDS:
        raise ValueError(f"unknown metric kind {kind!r}: one of {sorted(KINDS)}")
    if unit not in UNITS:
        raise ValueError(f"unknown unit {unit!r}: one of {UNITS}")
    if better not in ("higher", "lower", None):
        raise ValueError(f"better must be 'higher', 'lower' or None, got {better!r}")

    def declare(function: Callable) -> Callable:
        doc = inspect.getdoc(function) or ""
        if not doc:
            raise ValueError(f"{function.__qualname__}: a registered metric needs a docstring (its definition)")
        summary, _, rest = doc.partition("\n\n")
        key = name or function.__name__
        parameters = inspect.signature(function).parameters
        checked = [parameter for keywords in checked_variants for parameter in keywords]
        for parameter in (*(empty or {}), *(variants or {}), *scaled, *(example or {}), *checked):
            if parameter not in parameters:
                raise ValueError(f"{key}: declares {parameter!r}, which is not one of its parameters")
        if key in METRICS and METRICS[key].function is not function:
            raise ValueError(f"metric {key!r} is declared twice ({METRICS[key].function.__module__} and "
                             f"{function.__module__})")
        METRICS[key] = Metric(
            name=key, function=function, module=function.__module__.rsplit(".", 1)[-1], kind=kind,
            summary=" ".join(summary.split()), definition=rest.strip(), better=better, unit=unit,
            symmetric=symmetric, empty=dict(empty or {}), variants=dict(variants or {}), equals=tuple(equals),
            citation=citation, weighted="sample_weight" in parameters, scaled=tuple(scaled),
            example=dict(example or {}), returns=returns,
            checked_variants=tuple(dict(keywords) for keywords in checked_variants))
        return function

    return declare


def all_metrics() -> dict[str, Metric]:
    """Every registered metric, after importing every module of the package (a module registers
    its metrics when imported)."""
    import importlib
    import pkgutil

    import evaluation.metrics as package

    for module in pkgutil.iter_modules(package.__path__):
        if not module.name.startswith("_") and module.name != "docs":
            importlib.import_module(f"{package.__name__}.{module.name}")
    return dict(sorted(METRICS.items()))
