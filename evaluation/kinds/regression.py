"""The regression kind: one job per case writes one or more named numbers (the targets: a volume,
an age), and the ranked values are metrics of the whole test set (evaluation/metrics/
regression.py), each computed with the case weights so that metrics.json (a row of ones) and
every bootstrap resample of the final ranking (a row of counts) go through the same call.

A challenge subclasses `Regression` and declares (defaults in brackets):

- `targets`: {key: title with its unit} of the numbers each case has, in the order of the
  sockets when the setting `output_socket` lists one per target; each key a metrics.json key
  (no ".") [{"value": "Value"}];
- `ranked_metrics`: the ranked values, the first the leaderboard's score, built by this module's
  constructors, each with `over="each"` (every target its own ranked value,
  aggregates.<target>.<metric>) or `over="mean"` (one ranked value, the mean over the targets
  of each target's value, aggregates.<metric>: only for metrics without a unit, or targets of
  one unit): `mae()`, `rmse()`, `mape()` (absolute percentage error, as a fraction),
  `smape(denominator="mean" | "sum")`, `nae()` (normalised absolute error), `r2()`, `pearson()`,
  `spearman()` [(mae(),)];
- `ranking`: the final ranking's rule, "ordered" (the first ranked value, ties by the next),
  "mean_of_ranks" (the mean of the ranked values' ranks) or "case_rank_then_mean"
  (challengeR's: on every case each target's absolute error ranked, the ranks' mean over the
  cases and targets) (evaluation/kinds/tabular.py) ["ordered"];
- `composite`: {key: weight} or a `Composite` (kinds/declared.py; weighted sum of ranked values by
  key: "r2" for an over="mean" metric, "volume.mae" for a target's), ranked first [None];
- `sockets`: "one" (the setting `output_socket` ["prediction"] holds a JSON object {target:
  number}; one target: a bare number too) or "per_target" (one socket per target, each one
  number: the settings `<target>_socket`, default the target's key) ["one"];
- `settings_class`: `RegressionSettings` (input_socket, output_socket), or with one socket per
  target the settings made from it.

Undefined values, decided once: a correlation with a constant prediction is 0 (it explains
nothing; scipy would give NaN); the ground truth must make every declared metric defined on the
whole test set (R², correlations: a target's truth not constant; MAPE: no truth of 0), else it
is refused (exit 3). A resample of the final ranking where a value is undefined is NaN there. A
value beyond ±1e100 is refused, in the ground truth and in a job's output: its square would
overflow an RMSE or R² into a ranked value that is not a number.

The ground truth is one JSON file {case id: {target: number}}. metrics.json: the ranked values,
every declared metric of each target under aggregates.<target> with the mean and median
absolute error, "counts", and per case each target's prediction and absolute error under
"cases" (the absolute error tells the truth up to its sign: keep the phase's "display all
metrics" off if the test set's values are secret).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluation.declarations.columns import Column
from evaluation.declarations.workload import Workload
from evaluation.errors import SubmissionError
from evaluation.kinds.declared import (
    CaseSettings,
    Composite,
    Declared,
    Ranked,
    composite_of,
    reference_document,
    settings_with_sockets,
    socket_slugs,
)
from evaluation.kinds.tabular import Metric, output_number, with_composite
from evaluation.metrics.aggregation import weighted_median
from evaluation.metrics.regression import (
    mean_absolute_error,
    mean_absolute_percentage_error,
    mean_normalized_absolute_error,
    pearson_correlation,
    r2_score,
    root_mean_squared_error,
    spearman_correlation,
    symmetric_mean_absolute_percentage_error,
)
from evaluation.platform.cases import Case
from evaluation.reading.values import finite_number, is_finite_number, json_type, shown
from evaluation.settings import JSON_OUTPUT, setting

# What a metric needs of each target's truth on the whole test set (checked at load).
NOT_CONSTANT, NO_ZERO = "not constant", "no zero"
# The largest magnitude of a value read: squared and summed over any test set it stays finite, so
# no submission makes an RMSE, R² or correlation overflow into a ranked value that is not a number.
LARGEST = 1e100


@dataclass(frozen=True)
class RegressionSettings(CaseSettings):
    """The defaults; the phase's config.json next to the ground truth may change them (python -m
    evaluation --list lists them with their defaults)."""

    output_socket: str = setting("prediction", socket=JSON_OUTPUT,
                                 doc="output socket read: a JSON object {target: number} (one target: a number)")


def _metric(key: str, title: str, better: str, over: str, of, needs: str = "") -> Metric:
    return Metric(key, title, better, of, reads=needs, over=over)


def mae(over: str = "each", key: str = "mae") -> Metric:
    """Mean absolute error, in the target's unit (scikit-learn's mean_absolute_error)."""
    return _metric(key, "MAE", "lower", over, mean_absolute_error)


def rmse(over: str = "each", key: str = "rmse") -> Metric:
    """Root mean squared error, in the target's unit."""
    return _metric(key, "RMSE", "lower", over, root_mean_squared_error)


def mape(over: str = "each", key: str = "mape") -> Metric:
    """Mean absolute percentage error |p - t| / |t|, as a fraction (no truth may be 0)."""
    return _metric(key, "MAPE", "lower", over, mean_absolute_percentage_error, NO_ZERO)


def smape(denominator: str = "mean", over: str = "each", key: str | None = None) -> Metric:
    """Symmetric MAPE: |p - t| over the mean ("mean", in [0, 2]) or the sum ("sum", in [0, 1]) of
    |p| and |t|; a case where both are 0 counts 0."""
    if denominator not in ("mean", "sum"):
        raise ValueError(f"smape denominator must be 'mean' or 'sum', not {denominator!r}")

    def of(truth, prediction, weights):
        return symmetric_mean_absolute_percentage_error(truth, prediction, weights, denominator=denominator)

    return _metric(key or ("smape" if denominator == "mean" else "smape_sum"), "sMAPE", "lower", over, of)


def nae(over: str = "each", key: str = "nae") -> Metric:
    """Mean normalised absolute error |p - t| / max(|p|, |t|), in [0, 1] for values of one sign."""
    return _metric(key, "Normalised absolute error", "lower", over, mean_normalized_absolute_error)


def r2(over: str = "each", key: str = "r2") -> Metric:
    """Coefficient of determination R² (scikit-learn's r2_score)."""
    return _metric(key, "R2", "higher", over, r2_score, NOT_CONSTANT)


def pearson(over: str = "each", key: str = "pearson") -> Metric:
    """Pearson correlation of prediction and truth (scipy's pearsonr); a constant prediction 0."""
    def of(truth, prediction, weights):
        return pearson_correlation(truth, prediction, weights, constant_input=0.0)

    return _metric(key, "Pearson r", "higher", over, of, NOT_CONSTANT)


def spearman(over: str = "each", key: str = "spearman") -> Metric:
    """Spearman rank correlation (scipy's spearmanr); a constant prediction 0."""
    def of(truth, prediction, weights):
        return spearman_correlation(truth, prediction, weights, constant_input=0.0)

    return _metric(key, "Spearman rho", "higher", over, of, NOT_CONSTANT)


def columns_of(results: Sequence[dict], side: str) -> np.ndarray:
    """(cases, targets) of the results' "truth" or "prediction"."""
    return np.array([result[side] for result in results], dtype=np.float64)


def _rows(metric: Metric, truth: np.ndarray, prediction: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The metric per row of weights. A row of ones among others is computed alone: a weighted
    mean is one matrix product (BLAS), whose last bits depend on the matrix's shape, and the final
    ranking's contract is that the row of ones is metrics.json's value (computed alone) bit for bit."""
    values = np.asarray(metric.of(truth, prediction, weights), dtype=np.float64).reshape(-1)
    ones = (weights == 1).all(axis=1)
    if len(weights) > 1 and ones.any():
        alone = np.ones((1, weights.shape[1]))
        values[ones] = np.asarray(metric.of(truth, prediction, alone), dtype=np.float64).reshape(-1)[0]
    return values


def _target_value(metric: Metric, target: int) -> Any:
    def compute(results, weights, _):
        truth, prediction = columns_of(results, "truth"), columns_of(results, "prediction")
        return _rows(metric, truth[:, target], prediction[:, target], np.atleast_2d(weights))
    return compute


def _mean_over_targets(metric: Metric, targets: int) -> Any:
    def compute(results, weights, _):
        truth, prediction = columns_of(results, "truth"), columns_of(results, "prediction")
        rows = np.atleast_2d(weights)
        return np.mean([_rows(metric, truth[:, t], prediction[:, t], rows) for t in range(targets)], axis=0)
    return compute


class Regression(Declared):
    """A regression challenge, declared (the module docstring lists every choice)."""

    targets: ClassVar[Mapping[str, str]] = {"value": "Value"}
    ranked_metrics: ClassVar[tuple[Metric, ...]] = (mae(),)
    sockets: ClassVar[str] = "one"
    composite: ClassVar[Composite | Mapping[str, float] | None] = None
    settings_class = RegressionSettings
    workload = Workload(in_workers=False)  # a few numbers per case: a process pool would cost more than it saves

    def __init_subclass__(cls, **kwargs: Any) -> None:
        cls.composite = composite_of(cls.composite, cls.__name__)  # a Composite or {key: weight}
        cls.check_declaration()
        parts: dict[str, Ranked] = {}
        names = list(cls.targets)
        for metric in cls.ranked_metrics:
            if metric.over == "mean":
                column = Column(f"{metric.title} (mean over targets)", f"aggregates.{metric.key}", metric.order)
                parts[metric.key] = Ranked(column, _mean_over_targets(metric, len(names)))
                continue
            for t, target in enumerate(names):
                column = Column(f"{metric.title}, {cls.targets[target]}", f"aggregates.{target}.{metric.key}",
                                metric.order)
                parts[f"{target}.{metric.key}"] = Ranked(column, _target_value(metric, t))
        if "ranked" not in cls.__dict__:
            cls.ranked = with_composite(cls.composite, parts, cls.__name__)
        if cls.sockets == "per_target" and "settings_class" not in cls.__dict__:
            cls.settings_class = settings_with_sockets(RegressionSettings, cls, names,
                                                       lambda name: name.replace("_", "-"), "target")
        super().__init_subclass__(**kwargs)

    @classmethod
    def case_columns(cls) -> tuple[Column, ...]:
        """challengeR's per-case rule ranks each target's absolute error case by case."""
        return tuple(Column(f"Absolute error, {cls.targets[target]}", f"{target}.absolute_error", "asc")
                     for target in cls.targets)

    @classmethod
    def check_declaration(cls) -> None:
        names = list(cls.targets)
        keys = [metric.key for metric in cls.ranked_metrics]
        if not names:
            raise TypeError(f"{cls.__name__} declares no target")
        if not keys:
            raise TypeError(f"{cls.__name__} declares no metric")
        if cls.sockets not in ("one", "per_target"):
            raise TypeError(f"{cls.__name__}: sockets {cls.sockets!r} is not 'one' or 'per_target'")
        if len(set(keys)) != len(keys):
            raise TypeError(f"{cls.__name__}: two metrics share a key: {keys}")
        reserved = set(keys) | {"absolute_error", "counts"} | ({cls.composite.key} if cls.composite else set())
        for name in names:
            if not isinstance(name, str) or not name or "." in name or name in reserved:
                raise TypeError(f"{cls.__name__}: target {name!r} must be a non-empty metrics.json key without '.', "
                                f"and not a metric's key")

    # ---- the ground truth -------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, tuple[float, ...]]:
        names = list(self.targets)
        path, document = reference_document(self.truth, directory, "{target: number}")
        truth = {}
        for case_id, values in document.items():
            if not isinstance(values, dict) or set(values) != set(names) \
                    or not all(is_finite_number(values[name]) for name in names):
                self.truth.fail(f"Ground truth {path.name}: case {case_id} is {shown(values)}; it must be an object "
                                f"with a number from -1e100 to 1e100 for each of {', '.join(names)} and nothing else.")
            truth[case_id] = tuple(float(values[name]) for name in names)
        self.check_defined(path, np.array(list(truth.values())))
        return truth

    def check_defined(self, path: Path, truth: np.ndarray) -> None:
        """Every declared metric defined on the whole test set (module docstring)."""
        for metric in self.ranked_metrics:
            for t, name in enumerate(self.targets):
                values = truth[:, t]
                if metric.reads == NOT_CONSTANT and values.min() == values.max():
                    self.truth.fail(f"Ground truth {path.name}: every case has the {name} {values[0]:g}, so the "
                                    f"{metric.title} of {name} is undefined.")
                if metric.reads == NO_ZERO and (values == 0).any():
                    self.truth.fail(f"Ground truth {path.name}: a case has the {name} 0, so its {metric.title} "
                                    f"(a division by the truth) is undefined.")

    # ---- the job's output -------------------------------------------------------------------

    def read_job_prediction(self, case: Case, ground_truth: Any) -> tuple[float, ...]:
        names = list(self.targets)
        if self.sockets == "per_target":
            return tuple(output_number(case.read_json(slug), case, slug, minimum=-LARGEST, maximum=LARGEST)
                         for slug in socket_slugs(self.settings, names))
        sockets = self.settings.output_socket
        value = case.read_json(sockets)
        if len(names) == 1 and not isinstance(value, dict):
            return (output_number(value, case, sockets, minimum=-LARGEST, maximum=LARGEST),)
        if not isinstance(value, dict):
            raise SubmissionError(f"{case.name}: the output {sockets!r} is {json_type(value)}; it must be a JSON "
                                  f"object with a number for each of {', '.join(names)}.")
        missing = [name for name in names if name not in value]
        if missing:
            raise SubmissionError(f"{case.name}: the output {sockets!r} has no value {missing[0]!r}; it must hold a "
                                  f"number for each of {', '.join(names)}.")
        extra = sorted(set(value) - set(names))
        if extra:
            raise SubmissionError(f"{case.name}: the output {sockets!r} holds {shown(extra[0])}, which is not a "
                                  f"target; the targets are {', '.join(names)}.")
        return tuple(finite_number(value[name], f"{case.name}: the {name} in the output {sockets!r}", minimum=-LARGEST,
                                   maximum=LARGEST) for name in names)

    def score_case(self, case: Case, prediction: tuple[float, ...], ground_truth: tuple[float, ...]) -> dict[str, Any]:
        return {"truth": ground_truth, "prediction": prediction}

    # ---- metrics.json -----------------------------------------------------------------------

    def case_entry(self, result: dict[str, Any]) -> dict[str, Any]:
        return {name: {"prediction": p, "absolute_error": abs(p - t)}
                for name, t, p in zip(self.targets, result["truth"], result["prediction"], strict=True)}

    def report(self, results: dict[str, Any]) -> dict[str, Any]:
        """Every declared metric of each target, and its absolute errors' mean and median."""
        ordered = [results[c] for c in sorted(results)]
        truth, prediction = columns_of(ordered, "truth"), columns_of(ordered, "prediction")
        per_target = {}
        for t, name in enumerate(self.targets):
            errors = np.abs(prediction[:, t] - truth[:, t])
            values: dict[str, Any] = {metric.key: float(metric.of(truth[:, t], prediction[:, t], None))
                                      for metric in self.ranked_metrics}
            values["absolute_error"] = {"mean": float(mean_absolute_error(truth[:, t], prediction[:, t])),
                                        "median": float(weighted_median(errors))}
            per_target[name] = values
        return {"aggregates": per_target, "counts": {"cases": len(results)}}


__all__ = ["Composite", "Regression", "RegressionSettings", "mae", "mape", "nae", "pearson", "r2", "rmse",
           "smape", "spearman"]
