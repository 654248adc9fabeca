"""The landmarks kind: each job writes one named point per landmark (grand-challenge's "Multiple
points", each point's "name" a landmark's), scored by its radial error: the mean radial error
(MRE) with its standard deviation and the success detection rates (SDR), per landmark and over
the landmarks.

A challenge of this kind is a declaration (evaluation/challenges/<folder>/__init__.py):

    class Acme(Landmarks):
        name, title = "acme", "acme: cephalometric landmarks"
        landmarks = ("sella", "nasion", "orbitale", "porion", "menton")
        ranked_metrics = ("mre", "sdr_2mm")

What the organizer declares (class attributes; the defaults in brackets):

- `landmarks` [five cephalometric names]: the landmark names, each exactly once in every job's
  output (a missing, unknown or repeated name fails the submission, naming the case).
- `unit` ["mm" | "pixels"]: radial errors in mm (physical: the grid's spacing, anisotropic
  included), or in pixels of the image grid (index steps, whatever the spacing). SDR thresholds
  are in this unit.
- `sdr_thresholds` [2, 2.5, 3, 4] and `sdr_inclusive` [False]: a landmark is a success when its
  radial error is < threshold (strict, ISBI 2015's), or <= with sdr_inclusive.
- `ranked_metrics` [("mre", "sdr_2mm")]: the ranked values in order, the first the score: "mre"
  (ascending), "mre_std" (ascending), or "sdr_<threshold><unit>" (descending; a threshold's "."
  written "_": sdr_2_5mm, sdr_4px), each over every landmark of every case (every case has every
  landmark, so this is also the mean over the cases of each case's value).
- `composite` [{}]: a weighted sum of those ({metric: weight}, e.g. {"sdr_2mm": 1, "mre": -0.1}),
  ranked first as aggregates.score.
- `ranking` ["ordered" | "mean_of_ranks" | "case_rank_then_mean"]: the final ranking's rule:
  ordered by the first ranked value, ties by the next; the mean of the submissions' ranks on the
  ranked values (the phase's leaderboard then ranks by the mean of ranks too); challengeR's
  rank-then-aggregate on each case's own value of the ranked metrics. A composite goes with
  "ordered" only.
- `ground_truth_file` ["reference.json"]: one JSON object {case id: {"grid": {...},
  "landmarks": {name: [x, y(, z)]}}}, the true positions in world coordinates (mm), the grid
  the image's (as the points kind's: size, spacing, origin, direction; x first).

metrics.json: aggregates.mre, aggregates.mre_std, aggregates.sdr_<t><unit> over the landmarks;
aggregates.<landmark>: {mre, mre_std, sdr_<t><unit>}; cases.<case>: {mre, mre_std,
sdr_<t><unit> of the case, <landmark>: {radial_error}}; declaration: the declared choices.
The standard deviation is the population one (ddof 0) of the radial errors, case weights
counting each landmark that often.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluation.declarations.columns import Column
from evaluation.declarations.workload import Workload
from evaluation.kinds.declared import Composite, Declared
from evaluation.kinds.points import (
    Grid,
    PointsSettings,
    declare_metrics,
    read_grid,
    read_multiple_points,
    read_reference,
    true_coordinates,
)
from evaluation.metrics.landmarks import mean_radial_error, radial_errors, success_detection_rate
from evaluation.platform.cases import Case
from evaluation.reading.values import shown
from evaluation.settings import JSON_OUTPUT, setting


@dataclass(frozen=True)
class LandmarksSettings(PointsSettings):
    """What a phase's config.json may change: the sockets. The scoring is the declaration's."""

    output_socket: str = setting("landmarks", socket=JSON_OUTPUT, json_value="points",
                                 doc="output socket read: Multiple points, one per landmark, each {\"name\": the "
                                     "landmark, \"point\": [x, y, z] in mm}")


@dataclass(frozen=True)
class LandmarksTruth:
    grid: Grid
    positions: np.ndarray  # (landmarks, ndim) continuous indices, in the declared order


def threshold_key(threshold: float) -> str:
    """2.5 -> "2_5" (a metrics.json key has no "."), 2.0 -> "2"."""
    return f"{threshold:g}".replace(".", "_")


class Landmarks(Declared):
    """Named landmarks scored by radial error (module docstring: every choice)."""

    landmarks: ClassVar[tuple[str, ...]] = ("sella", "nasion", "orbitale", "porion", "menton")
    unit: ClassVar[str] = "mm"
    sdr_thresholds: ClassVar[tuple[float, ...]] = (2.0, 2.5, 3.0, 4.0)
    sdr_inclusive: ClassVar[bool] = False
    ranked_metrics: ClassVar[tuple[str, ...]] = ("mre", "sdr_2mm")
    composite: ClassVar[Composite | Mapping[str, float] | None] = {}  # kinds/declared.py
    ground_truth_file: ClassVar[str] = "reference.json"
    settings_class = LandmarksSettings
    case_label = "Image"
    workload = Workload(in_workers=False)  # a few landmarks per image

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if "name" in cls.__dict__:
            cls._check_declaration()
            available = cls.metric_names()
            declare_metrics(cls, {metric: Column(title, f"aggregates.{metric}", order)
                                  for metric, (title, order) in available.items()},
                            {metric: cls._computation(metric) for metric in available})
        super().__init_subclass__(**kwargs)

    @classmethod
    def case_columns(cls) -> tuple[Column, ...]:
        """Per case: the same keys at the top of each case's entry (case_entry)."""
        available = cls.metric_names()
        return tuple(Column(available[metric][0], metric, available[metric][1]) for metric in cls.ranked_metrics)

    @classmethod
    def unit_suffix(cls) -> str:
        return "mm" if cls.unit == "mm" else "px"

    @classmethod
    def metric_names(cls) -> dict[str, tuple[str, str]]:
        """{metric: (leaderboard title, order)} of every value the declaration can rank."""
        suffix = cls.unit_suffix()
        names = {"mre": (f"Mean radial error ({suffix})", "asc"),
                 "mre_std": (f"SD of the radial error ({suffix})", "asc")}
        for threshold in cls.sdr_thresholds:
            sign = "<=" if cls.sdr_inclusive else "<"
            names[f"sdr_{threshold_key(threshold)}{suffix}"] = (f"SDR ({sign} {threshold:g} {suffix})", "desc")
        return names

    @classmethod
    def _check_declaration(cls) -> None:
        owner = cls.__name__
        names = cls.landmarks
        if (not isinstance(names, tuple) or not names or len(set(names)) != len(names)
                or not all(isinstance(n, str) and n and "." not in n for n in names)):
            raise TypeError(f"{owner}: landmarks must be a tuple of distinct names without '.', got {names!r}")
        if cls.unit not in ("mm", "pixels"):
            raise TypeError(f"{owner}: unit must be 'mm' or 'pixels', got {cls.unit!r}")
        thresholds = cls.sdr_thresholds
        if not all(isinstance(t, (int, float)) and math.isfinite(t) and t > 0 for t in thresholds):
            raise TypeError(f"{owner}: sdr_thresholds must be numbers > 0, got {thresholds!r}")
        if not isinstance(cls.sdr_inclusive, bool):
            raise TypeError(f"{owner}: sdr_inclusive must be True or False")
        available = cls.metric_names()
        clash = set(names) & {*available, "score"}
        if clash:
            raise TypeError(f"{owner}: landmark name(s) {sorted(clash)} are metric names")

    # ---- reading ----

    def load_ground_truth(self, directory: Path) -> dict[str, LandmarksTruth]:
        truth = self.truth
        path, document = read_reference(truth, directory, self.ground_truth_file, "landmarks")
        cases, dimensions = {}, set()
        for case_id, entry in document.items():
            where = f"Ground truth {path.name}, case {case_id}"
            grid = read_grid(entry["grid"], where, truth.fail)
            dimensions.add(grid.ndim)
            by_name = entry["landmarks"]
            if not isinstance(by_name, dict) or set(by_name) != set(self.landmarks):
                listed = ", ".join(by_name) if isinstance(by_name, dict) else shown(by_name)
                truth.fail(f"{where}: landmarks must be an object with every landmark ({', '.join(self.landmarks)}), "
                           f"found {listed or 'none'}.")
            positions = np.array([true_coordinates(by_name[name], grid, f"{where}, landmark {name}", truth.fail)
                                  for name in self.landmarks])
            cases[case_id] = LandmarksTruth(grid, positions)
        if len(dimensions) > 1:
            truth.fail(f"Ground truth {path.name} mixes 2D and 3D images; every case's grid has one dimension.")
        return cases

    def read_job_prediction(self, case: Case, ground_truth: LandmarksTruth) -> np.ndarray:
        """The predicted positions (continuous indices), in the declared landmark order."""
        slug = self.settings.output_socket
        where = f"{case.name}: the output {slug!r}"
        found = read_multiple_points(case, slug, ground_truth.grid)
        position: dict[str, int] = {}
        for k, name in enumerate(found.names):
            if name not in self.landmarks:
                case.origin.fail(f"{where}: point {k} is named {shown(name)}, which is no landmark; the names are "
                                 f"{', '.join(self.landmarks)}.")
            if name in position:
                case.origin.fail(f"{where}: the landmark {name} is given twice (points {position[name]} and {k}).")
            position[name] = k
        missing = [name for name in self.landmarks if name not in position]
        if missing:
            case.origin.fail(f"{where} has no point named {', '.join(missing)}; every landmark needs one.")
        return found.index[[position[name] for name in self.landmarks]]

    # ---- scoring ----

    def score_case(self, case: Case, prediction: np.ndarray, ground_truth: LandmarksTruth) -> dict[str, Any]:
        """The positions in the error's unit (mm: index × spacing, the direction being a rotation
        that keeps distances; pixels: indices) and each landmark's radial error."""
        scale = ground_truth.grid.spacing if self.unit == "mm" else np.ones(ground_truth.grid.ndim)
        predicted, truth = prediction * scale, ground_truth.positions * scale
        errors = radial_errors(predicted, truth)
        return {"predicted": predicted, "truth": truth, "errors": errors, "mre": float(errors.mean())}

    def case_entry(self, result: dict[str, Any]) -> dict[str, Any]:
        """The case's own MRE, SD and SDRs (what case_rank_then_mean ranks), then each landmark's error."""
        errors = result["errors"]
        rates = np.atleast_1d(success_detection_rate(errors, np.asarray(self.sdr_thresholds, dtype=np.float64),
                                                     inclusive=self.sdr_inclusive))
        own = {"mre": result["mre"], "mre_std": float(np.sqrt(np.mean((errors - errors.mean()) ** 2)))}
        own.update({f"sdr_{threshold_key(t)}{self.unit_suffix()}": float(rate)
                    for t, rate in zip(self.sdr_thresholds, rates, strict=True)})
        each = {name: {"radial_error": float(error)} for name, error in zip(self.landmarks, errors, strict=True)}
        return {**own, **each}

    @classmethod
    def _computation(cls, metric: str, landmark: int | None = None):
        """`metric` per row of case weights over every landmark (or over landmark number
        `landmark` only): each case's landmarks weigh the case's weight."""
        def compute(results, weights, _):
            rows = slice(None) if landmark is None else [landmark]
            predicted = np.concatenate([r["predicted"][rows] for r in results])
            truth = np.concatenate([r["truth"][rows] for r in results])
            each = np.repeat(np.asarray(weights), len(results[0]["errors"][rows]), axis=1)
            if metric == "mre":
                return np.atleast_1d(mean_radial_error(predicted, truth, sample_weight=each))
            errors = radial_errors(predicted, truth)
            if metric == "mre_std":
                mean = np.atleast_1d(mean_radial_error(predicted, truth, sample_weight=each))
                return np.sqrt((each * (errors[None, :] - mean[:, None]) ** 2).sum(axis=1) / each.sum(axis=1))
            threshold = next(t for t in cls.sdr_thresholds
                             if metric == f"sdr_{threshold_key(t)}{cls.unit_suffix()}")
            return np.atleast_1d(success_detection_rate(errors, threshold, inclusive=cls.sdr_inclusive,
                                                        sample_weight=each))
        return compute

    def report(self, results: dict[str, Any]) -> dict[str, Any]:
        ordered = [results[case_id] for case_id in sorted(results)]
        ones = np.ones((1, len(ordered)), dtype=np.int64)
        aggregates: dict[str, Any] = {}
        for metric in self.metric_names():
            aggregates[metric] = float(self._computation(metric)(ordered, ones, {})[0])
        for number, name in enumerate(self.landmarks):
            aggregates[name] = {metric: float(self._computation(metric, number)(ordered, ones, {})[0])
                                for metric in self.metric_names()}
        return {"aggregates": aggregates, "declaration": self.declaration()}

    @classmethod
    def declaration(cls) -> dict[str, Any]:
        return {"landmarks": list(cls.landmarks), "unit": cls.unit, "sdr_thresholds": list(cls.sdr_thresholds),
                "sdr_inclusive": cls.sdr_inclusive, "ranked_metrics": list(cls.ranked_metrics),
                "composite": dict(cls.composite.weights) if cls.composite else {}, "ranking": cls.ranking}
