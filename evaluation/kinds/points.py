"""The points kind: each job writes scored points (grand-challenge's "Multiple points"), matched
to the true points of its image within a radius; F1, precision and recall, the FROC and the CPM.

A challenge of this kind is a declaration (evaluation/challenges/<folder>/__init__.py):

    class Acme(Points):
        name, title = "acme", "acme: mitosis detection"
        classes = ("mitosis",)
        radius, radius_unit = 2.0, "mm"
        ranked_metrics = ("f1", "froc")

What the organizer declares (class attributes; the defaults in brackets):

- `classes` [("point",)]: the classes of points. With one class every point of the job's output
  is of that class (its "name" is free text, not read); with several, each point's "name" is its
  class, one of these (any other name fails the submission, naming the case and the point). One
  output socket holds them all: the platform's interface gets one Multiple points socket, and the
  names are what a reader of the output sees in the viewer.
- `ignored_classes` [()]: names of predicted points that are neither true nor false positives:
  read and checked like every point (schema, inside the image), then left out of the matching,
  the counts and the FROC (MIDOG 2021's "non-mitotic figure" hard negatives, dropped before
  matching). A point without a name is of the scored class (one class) as before; with several
  classes a name must be a class or an ignored one.
- `radius` [5.0] and `radius_unit` ["mm" | "pixels"]: a prediction within `radius` of a true
  point can match it; in mm the distance is physical (the grid's spacing, anisotropic included),
  in pixels it counts index steps of the image grid whatever the spacing.
- `inclusive` [True]: a pair at exactly the radius matches (<=); False: strictly within (<).
- `matching` ["hungarian" | "greedy_by_score" | "greedy_by_truth"]: how predictions are paired
  one to one with true points (evaluation.metrics.points.match_points): the most pairs with the
  least total distance; predictions by descending probability each taking the nearest free true
  point; true points in order each taking the nearest free prediction (evalutils').
- `averaging` ["pooled" | "mean"]: F1, precision and recall from TP, FP and FN summed over the
  images ("pooled": one image with 500 cells weighs 500 times one with a single cell), or the
  mean over the images of each image's value ("mean": every image weighs the same).
- `froc_fp_rates` [1/4, 1/2, 1, 2, 4, 8]: the FROC score's operating points, the mean
  sensitivity at these false-positive rates (CAMELYON16's); `cpm` is the same at LUNA16's 1/8 to
  8 (evaluation.metrics.points.CPM_FP_RATES).
- `fp_rate` ["per_image" | "per_area"] and `area_unit` [1.0]: the FROC's false positives per
  image, or per `area_unit` of the image's physical extent (mm² in 2D, mm³ in 3D: its size ×
  spacing).
- `ranked_metrics` [("f1", "froc")]: the ranked values in order, the first the leaderboard's
  score, the next its tie-breaks, among f1, precision, recall, froc and cpm; each is the mean
  over the classes of the class's value (one class: that class's value), at
  metrics.json's aggregates.<metric>.
- `composite` [{}]: a weighted sum of ranked metrics ({metric: weight}; a metric not ranked
  is computed for it all the same), ranked first as aggregates.score when declared.
- `ranking` ["ordered" | "mean_of_ranks" | "case_rank_then_mean"]: the final ranking's rule:
  ordered by the first ranked value, ties by the next; the mean of the submissions' ranks on the
  ranked values (the phase's leaderboard then ranks by the mean of ranks too); challengeR's
  rank-then-aggregate on each case's value of the ranked metrics (f1, precision, recall only:
  the FROC and the CPM have no per-case value). A composite goes with "ordered" only.
- `ground_truth_file` ["reference.json"]: the ground truth, one JSON object
  {case id: {"grid": {"size": [...], "spacing": [...], "origin": [...], "direction": [...]},
  "points": {class: [[x, y(, z)], ...]}}}, the true points in world coordinates (mm), the grid
  the image's (SimpleITK's order: x first; origin default zeros, direction default identity).
  Every class holds at least one true point over the test set (else its sensitivity is
  undefined: the organizer's error, exit 3).

What a submission is refused for (exit 1, one line naming the case): what the platform's schema
refuses (evaluation/reading/annotations.py: no Multiple points object with its type and version,
a point of other than three coordinates, a coordinate that is not a finite number (NaN), a
probability outside [0, 1], a key the schema does not know), a point outside its image (beyond
half a pixel from the edge pixels' centres; on a 2D image the third coordinate is not read), a
probability missing where the matching or the FROC needs it, an unknown class name, more than
MAX_POINTS points.

metrics.json: aggregates.<metric> the ranked values (classes averaged); aggregates.<class>:
{tp, fp, fn (summed), f1, precision, recall, froc, cpm, sensitivity_at_fp_rate}; cases.<case>:
{f1, precision, recall (the mean over the classes), <class>: {tp, fp, fn, f1, precision,
recall}}; declaration: the declared choices. Undefined
per-case ratios are null with a note (precision of an image with no prediction); ranked values
are always numbers (see `_ratio_policy`).
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
from evaluation.kinds.declared import (
    CaseSettings,
    Composite,
    Compute,
    Declared,
    Ranked,
    case_values,
    composite_of,
    composite_value,
    mean_of_defined,
    ratio_of_counts,
    reference_document,
)
from evaluation.metrics.aggregation import weighted_sum
from evaluation.metrics.froc import FP_RATE_TARGETS, SlideHits, mean_sensitivity, weighted_froc_sensitivities
from evaluation.metrics.instances import f1_from_counts
from evaluation.metrics.points import ASSIGNMENTS, CPM_FP_RATES, match_points, point_hits
from evaluation.platform.cases import Case
from evaluation.reading import annotations
from evaluation.reading.files import Origin
from evaluation.reading.images import Geometry
from evaluation.reading.values import is_finite_number, shown
from evaluation.settings import JSON_OUTPUT, setting

MAX_POINTS = 1_000_000  # per image and output: beyond any detector's output, and ~100 MB of JSON


# ---- reading: the image grid and the Multiple points (evaluation/reading/annotations.py) -------


@dataclass(frozen=True)
class Grid:
    """An image's voxel grid in world coordinates, SimpleITK's order (x first): world = origin +
    direction · (spacing × index). Indices here are x first too (annotations.py's are numpy's)."""

    size: tuple[int, ...]
    spacing: np.ndarray
    origin: np.ndarray
    direction: np.ndarray  # (ndim, ndim), orthonormal

    @property
    def ndim(self) -> int:
        return len(self.size)

    @property
    def extent(self) -> float:
        """The image's physical extent: area (2D, mm²) or volume (3D, mm³)."""
        return float(np.prod(np.asarray(self.size) * self.spacing))

    @property
    def geometry(self) -> Geometry:
        return Geometry(tuple(self.size), tuple(self.spacing.tolist()), tuple(self.origin.tolist()),
                        tuple(self.direction.ravel().tolist()))


def read_grid(value: Any, where: str, fail) -> Grid:
    """A ground truth's {"size", "spacing", "origin"?, "direction"?} of a 2D or 3D image."""
    if not isinstance(value, dict) or not {"size", "spacing"} <= set(value):
        fail(f"{where}: the grid is {shown(value)}; it must be an object with size and spacing (origin and "
             f"direction optional).")
    unknown = sorted(set(value) - {"size", "spacing", "origin", "direction"})
    if unknown:
        fail(f"{where}: the grid has unknown key(s) {', '.join(map(shown, unknown))}.")
    size = value["size"]
    if (not isinstance(size, list) or len(size) not in (2, 3)
            or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in size)):
        fail(f"{where}: the grid's size is {shown(size)}; it must be 2 or 3 whole numbers > 0 (x first).")
    ndim = len(size)

    def numbers(key: str, count: int, default: list[float]) -> np.ndarray:
        found = value.get(key, default)
        if not isinstance(found, list) or len(found) != count or not all(is_finite_number(v) for v in found):
            fail(f"{where}: the grid's {key} is {shown(found)}; it must be {count} finite numbers.")
        return np.asarray(found, dtype=np.float64)

    spacing = numbers("spacing", ndim, [])
    if (spacing <= 0).any():
        fail(f"{where}: the grid's spacing is {shown(value['spacing'])}; every spacing must be > 0.")
    origin = numbers("origin", ndim, [0.0] * ndim)
    direction = numbers("direction", ndim * ndim, np.eye(ndim).ravel().tolist()).reshape(ndim, ndim)
    # Orthonormal: distances in index steps × spacing are then world distances (a radius in mm).
    if not np.allclose(direction @ direction.T, np.eye(ndim), atol=1e-6):
        fail(f"{where}: the grid's direction is not orthonormal (a rotation or reflection, row by row).")
    return Grid(tuple(size), spacing, origin, direction)


def world_to_index(world: np.ndarray, grid: Grid) -> np.ndarray:
    """(n, ndim) world coordinates (mm, x first) to continuous indices of the grid, x first."""
    return annotations.world_to_index(np.asarray(world, dtype=np.float64), grid.geometry)[..., ::-1]


def index_to_world(index: np.ndarray, grid: Grid) -> np.ndarray:
    """(n, ndim) continuous indices (x first) to world coordinates (mm): world_to_index's inverse."""
    return annotations.index_to_world(np.asarray(index, dtype=np.float64)[..., ::-1], grid.geometry)


def outside(index: np.ndarray, grid: Grid) -> np.ndarray:
    """Which points (rows of continuous indices, x first) lie outside the image: further than
    half a pixel beyond the centres of its edge pixels (annotations.py's rule and tolerance)."""
    size = np.asarray(grid.size, dtype=np.float64)
    tolerance = annotations.INSIDE_TOLERANCE
    return ((index < -0.5 - tolerance) | (index > size - 0.5 + tolerance)).any(axis=1)


@dataclass(frozen=True)
class PointSet:
    """A job's Multiple points on one image: continuous indices (n, ndim, x first), each point's
    name (None when absent) and probability (NaN when absent)."""

    index: np.ndarray
    names: tuple[str | None, ...]
    probabilities: np.ndarray

    def scores(self, where: str, fail) -> np.ndarray:
        """The probabilities, every point having one (else `fail` naming the first without)."""
        missing = np.flatnonzero(np.isnan(self.probabilities))
        if missing.size:
            fail(f"{where}: point {int(missing[0])} has no probability; every point needs one (0 to 1), as the "
                 f"matching or the FROC orders the points by it.")
        return self.probabilities


def read_multiple_points(case: Case, slug: str, grid: Grid) -> PointSet:
    """The job's output `slug`, grand-challenge's Multiple points in world coordinates (mm), read
    as the platform's schema says and refused outside the image's grid (evaluation/reading/
    annotations.py: on a 2D grid the third coordinate is not read)."""
    document = case.read_json(slug)
    where = f"{case.name}: the output {slug!r}"
    listed = document.get("points") if isinstance(document, dict) else None
    if isinstance(listed, list) and len(listed) > MAX_POINTS:
        case.origin.fail(f"{where} holds {len(listed)} points; at most {MAX_POINTS} are read.")
    points = annotations.parse_points(document, grid.geometry, where)
    probabilities = np.array([np.nan if p is None else p for p in points.probabilities], dtype=np.float64)
    return PointSet(points.index[:, ::-1].reshape(len(points), grid.ndim), points.names, probabilities)


def read_reference(truth: Origin, directory: Path, file_name: str, entry_key: str) -> tuple[Path, dict[str, Any]]:
    """The ground truth's one JSON file: {case id: {"grid": ..., entry_key: ...}}."""
    path, document = reference_document(truth, directory, f"{{\"grid\": ..., \"{entry_key}\": ...}}", file_name)
    for case_id, entry in document.items():
        if not isinstance(entry, dict) or set(entry) != {"grid", entry_key}:
            truth.fail(f"Ground truth {path.name}: case {case_id} is {shown(entry)}; it must be an object with "
                       f"exactly the keys grid and {entry_key}.")
    return path, document


def true_coordinates(value: Any, grid: Grid, where: str, fail) -> np.ndarray:
    """One true point, [x, y(, z)] world mm of the grid's dimension, inside the image: its index."""
    if (not isinstance(value, list) or len(value) != grid.ndim
            or not all(is_finite_number(v) for v in value)):
        fail(f"{where} is {shown(value)}; it must be {grid.ndim} finite numbers (world mm, x first).")
    index = world_to_index(np.asarray([value], dtype=np.float64), grid)
    if outside(index, grid).any():
        fail(f"{where} {shown(value)} lies outside the case's image grid.")
    return index[0]


# ---- declarations shared by the kinds ---------------------------------------------------------


def declare_metrics(cls: type[Declared], columns: Mapping[str, Column], computations: Mapping[str, Compute]) -> None:
    """cls.ranked from `ranked_metrics` ({metric: its column}, {metric: its computation}), with
    `composite` (declared.Composite, or {metric: weight}) first when declared: the score at
    aggregates.<key>, Σ weight · metric at aggregates.<metric>, a metric it weighs that is not
    ranked computed for it (composite_parts). TypeError when a metric is none of `columns` or
    nothing is ranked."""
    composite = cls.composite = composite_of(cls.composite, cls.__name__)
    weights = composite.weights if composite else {}
    for metric in (*cls.ranked_metrics, *weights):
        if metric not in columns:
            raise TypeError(f"{cls.__name__}: {metric!r} is not a metric of this declaration ({', '.join(columns)})")
    if not cls.ranked_metrics and not composite:
        raise TypeError(f"{cls.__name__}: ranked_metrics declares no ranked value")
    ranked = [Ranked(columns[metric], computations[metric]) for metric in cls.ranked_metrics]
    if composite:
        ranked.insert(0, composite_value(composite, {metric: f"aggregates.{metric}" for metric in columns},
                                         cls.__name__))
        cls.composite_parts = {f"aggregates.{metric}": computations[metric] for metric in weights
                               if metric not in cls.ranked_metrics}
    cls.ranked = tuple(ranked)


# ---- the kind ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PointsSettings(CaseSettings):
    """What a phase's config.json may change: the sockets. The scoring is the declaration's."""

    output_socket: str = setting("points", socket=JSON_OUTPUT, json_value="points",
                                 doc="output socket read: Multiple points, each {\"point\": [x, y, z] in mm, "
                                     "\"probability\": 0 to 1, \"name\": the class when several}")


POINT_METRICS = {  # name: (title, order)
    "f1": ("F1", "desc"), "precision": ("Precision", "desc"), "recall": ("Recall", "desc"),
    "froc": ("FROC score", "desc"), "cpm": ("CPM", "desc"),
}
COUNT_METRICS = ("f1", "precision", "recall")


@dataclass(frozen=True)
class PointsTruth:
    """One case's ground truth: its grid and, per class, the true points' continuous indices."""

    grid: Grid
    points: dict[str, np.ndarray]


class Points(Declared):
    """Scored points matched to true points within a radius (module docstring: every choice)."""

    classes: ClassVar[tuple[str, ...]] = ("point",)
    ignored_classes: ClassVar[tuple[str, ...]] = ()
    radius: ClassVar[float] = 5.0
    radius_unit: ClassVar[str] = "mm"
    inclusive: ClassVar[bool] = True
    matching: ClassVar[str] = "hungarian"
    averaging: ClassVar[str] = "pooled"
    froc_fp_rates: ClassVar[tuple[float, ...]] = FP_RATE_TARGETS
    fp_rate: ClassVar[str] = "per_image"
    area_unit: ClassVar[float] = 1.0
    ranked_metrics: ClassVar[tuple[str, ...]] = ("f1", "froc")
    composite: ClassVar[Composite | Mapping[str, float] | None] = {}  # kinds/declared.py
    ground_truth_file: ClassVar[str] = "reference.json"
    settings_class = PointsSettings
    case_label = "Image"
    workload = Workload(in_workers=False)  # a few points per image: a process pool would cost more than it saves

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if "name" in cls.__dict__:  # a challenge: its declaration checked, its ranked values derived
            cls._check_declaration()
            declare_metrics(cls, {metric: Column(cls._title(metric), f"aggregates.{metric}", order)
                                  for metric, (_, order) in POINT_METRICS.items()},
                            {metric: cls._computation(metric) for metric in POINT_METRICS})
        super().__init_subclass__(**kwargs)

    @classmethod
    def case_columns(cls) -> tuple[Column, ...]:
        """The ranked values' per-case counterparts (case_rank_then_mean): each case's F1,
        precision or recall, the mean over the classes; the FROC and the CPM have none."""
        if cls.ranking == "case_rank_then_mean":
            whole_set = [metric for metric in cls.ranked_metrics if metric not in COUNT_METRICS]
            if whole_set:
                raise TypeError(f"{cls.__name__}: ranking 'case_rank_then_mean' ranks per-case values, and "
                                f"{', '.join(whole_set)} is a value of the whole test set; rank "
                                f"{', '.join(COUNT_METRICS)}")
        return tuple(Column(cls._title(metric), metric, POINT_METRICS[metric][1])
                     for metric in cls.ranked_metrics if metric in COUNT_METRICS)

    @classmethod
    def _check_declaration(cls) -> None:
        owner = cls.__name__
        classes = cls.classes
        if (not isinstance(classes, tuple) or not classes or len(set(classes)) != len(classes)
                or not all(isinstance(c, str) and c and "." not in c and c not in POINT_METRICS
                           and c not in ("score", "counts") for c in classes)):
            raise TypeError(f"{owner}: classes must be a tuple of distinct names without '.' (and not a metric's "
                            f"name), got {classes!r}")
        ignored = cls.ignored_classes
        if (not isinstance(ignored, tuple) or len(set(ignored)) != len(ignored)
                or not all(isinstance(c, str) and c and c not in classes for c in ignored)):
            raise TypeError(f"{owner}: ignored_classes must be a tuple of distinct names, none of them a scored "
                            f"class, got {ignored!r}")
        if not (isinstance(cls.radius, (int, float)) and math.isfinite(cls.radius) and cls.radius > 0):
            raise TypeError(f"{owner}: radius must be a number > 0, got {cls.radius!r}")
        choices = {"radius_unit": ("mm", "pixels"), "matching": ASSIGNMENTS, "averaging": ("pooled", "mean"),
                   "fp_rate": ("per_image", "per_area")}
        for attribute, allowed in choices.items():
            if getattr(cls, attribute) not in allowed:
                raise TypeError(f"{owner}: {attribute} must be one of {', '.join(allowed)}, got "
                                f"{getattr(cls, attribute)!r}")
        if not isinstance(cls.inclusive, bool):
            raise TypeError(f"{owner}: inclusive must be True or False")
        rates = cls.froc_fp_rates
        if not rates or not all(isinstance(r, (int, float)) and math.isfinite(r) and r > 0 for r in rates):
            raise TypeError(f"{owner}: froc_fp_rates must be numbers > 0, got {rates!r}")
        if not (isinstance(cls.area_unit, (int, float)) and math.isfinite(cls.area_unit) and cls.area_unit > 0):
            raise TypeError(f"{owner}: area_unit must be a number > 0, got {cls.area_unit!r}")

    @classmethod
    def _title(cls, metric: str) -> str:
        unit = "px" if cls.radius_unit == "pixels" else "mm"
        title = POINT_METRICS[metric][0]
        if metric in COUNT_METRICS:
            return f"{title} ({cls.radius:g} {unit}, {cls.averaging})"
        rates = CPM_FP_RATES if metric == "cpm" else cls.froc_fp_rates
        per = "image" if cls.fp_rate == "per_image" else "area"
        return f"{title} ({cls.radius:g} {unit}, {min(rates):g}-{max(rates):g} FP/{per})"

    @classmethod
    def needs_scores(cls) -> bool:
        """Whether every point needs a probability: the FROC or the CPM is ranked, or the matching
        orders the predictions by it."""
        used = {*cls.ranked_metrics, *(cls.composite.weights if cls.composite else ())}
        return cls.matching == "greedy_by_score" or bool(used & {"froc", "cpm"})

    # ---- reading ----

    def load_ground_truth(self, directory: Path) -> dict[str, PointsTruth]:
        truth = self.truth
        path, document = read_reference(truth, directory, self.ground_truth_file, "points")
        cases, totals = {}, dict.fromkeys(self.classes, 0)
        for case_id, entry in document.items():
            where = f"Ground truth {path.name}, case {case_id}"
            grid = read_grid(entry["grid"], where, truth.fail)
            by_class = entry["points"]
            if not isinstance(by_class, dict) or set(by_class) != set(self.classes):
                truth.fail(f"{where}: points must be an object with one list per class ({', '.join(self.classes)}), "
                           f"found {shown(by_class) if not isinstance(by_class, dict) else ', '.join(by_class)}.")
            points = {}
            for name in self.classes:
                listed = by_class[name]
                if not isinstance(listed, list):
                    truth.fail(f"{where}: the points of {name} are {shown(listed)}; they must be a list.")
                points[name] = np.array([true_coordinates(value, grid, f"{where}, {name} point {k}", truth.fail)
                                         for k, value in enumerate(listed)]).reshape(-1, grid.ndim)
                totals[name] += len(listed)
            cases[case_id] = PointsTruth(grid, points)
        empty = [name for name, total in totals.items() if total == 0]
        if empty:
            truth.fail(f"Ground truth {path.name} holds no point of {', '.join(empty)}: its recall and sensitivity "
                       f"are undefined.")
        return cases

    def read_job_prediction(self, case: Case, ground_truth: PointsTruth) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """{class: (continuous indices (n, ndim), probabilities (n,), NaN when absent)}; the points
        of an ignored class left out."""
        slug = self.settings.output_socket
        found = read_multiple_points(case, slug, ground_truth.grid)
        where = f"{case.name}: the output {slug!r}"
        # an ignored point needs no probability (nothing orders it), and is neither TP nor FP
        kept = np.array([name not in self.ignored_classes for name in found.names], dtype=bool) \
            if self.ignored_classes else np.ones(len(found.names), dtype=bool)
        checked = PointSet(found.index, found.names, np.where(kept, found.probabilities, 0.0)) \
            if self.ignored_classes else found
        scores = checked.scores(where, case.origin.fail) if self.needs_scores() else found.probabilities
        if len(self.classes) > 1:
            unknown = [k for k, name in enumerate(found.names)
                       if name not in self.classes and name not in self.ignored_classes]
            if unknown:
                k = unknown[0]
                case.origin.fail(f"{where}: point {k} is named {shown(found.names[k])}; each point's name must be its "
                                 f"class, one of {', '.join((*self.classes, *self.ignored_classes))}.")
        if not kept.all():  # a point without a name is of the scored class (one class)
            names = tuple(name for name, keep in zip(found.names, kept, strict=True) if keep)
            found, scores = PointSet(found.index[kept], names, found.probabilities[kept]), scores[kept]
        if len(self.classes) == 1:
            return {self.classes[0]: (found.index, scores)}
        names = np.array([name if name is not None else "" for name in found.names], dtype=object)
        return {name: (found.index[names == name], scores[names == name]) for name in self.classes}

    # ---- scoring ----

    def score_case(self, case: Case, prediction, ground_truth: PointsTruth) -> dict[str, Any]:
        grid = ground_truth.grid
        spacing = grid.spacing if self.radius_unit == "mm" else None
        area = 1.0 if self.fp_rate == "per_image" else grid.extent / self.area_unit
        result: dict[str, Any] = {}
        for name in self.classes:
            truth = ground_truth.points[name]
            predicted, scores = prediction[name]
            scored = not np.isnan(scores).any()
            matched = match_points(truth, predicted, self.radius, scores=scores if scored else None, spacing=spacing,
                                   inclusive=self.inclusive, assignment=self.matching)
            result.update({f"{name}.tp": matched.tp, f"{name}.fp": matched.fp, f"{name}.fn": matched.fn,
                           f"{name}.f1": matched.f1, f"{name}.precision": matched.precision,
                           f"{name}.recall": matched.recall})
            result[f"{name}.hits"] = (point_hits(truth, predicted, scores, self.radius, spacing=spacing,
                                                 inclusive=self.inclusive, area=area) if scored else None)
        return result

    def case_entry(self, result: dict[str, Any]) -> dict[str, Any]:
        """{f1, precision, recall: the mean over the classes (null where a class's is undefined),
        class: {tp, fp, fn, f1, precision, recall}}."""
        means = {metric: float(np.mean([result[f"{name}.{metric}"] for name in self.classes]))
                 for metric in COUNT_METRICS}
        return {**means, **{name: {metric: result[f"{name}.{metric}"] for metric in ("tp", "fp", "fn", *COUNT_METRICS)}
                            for name in self.classes}}

    @classmethod
    def _computation(cls, metric: str):
        """The ranked value `metric`: the mean over the classes of each class's value."""
        def compute(results, weights, _):
            return np.mean([cls._class_value(metric, name, results, weights) for name in cls.classes], axis=0)
        return compute

    @classmethod
    def _class_value(cls, metric: str, name: str, results, weights: np.ndarray) -> np.ndarray:
        """One class's value of `metric` per row of case weights."""
        if metric in ("froc", "cpm"):
            return mean_sensitivity(cls._sensitivities(metric, name, results, weights))
        if cls.averaging == "mean":
            # An image where the ratio is undefined (precision: nothing predicted; recall: nothing to
            # find) is left out of the mean; a row where no image defines it: 0 (nothing was found).
            return mean_of_defined(case_values(results, f"{name}.{metric}"), weights, 0.0)
        tp, fp, fn = (weighted_sum(case_values(results, f"{name}.{count}"), weights) for count in ("tp", "fp", "fn"))
        return _ratio_policy(metric, tp, fp, fn)

    @classmethod
    def _sensitivities(cls, metric: str, name: str, results, weights: np.ndarray) -> np.ndarray:
        """(rows, operating points): the FROC's sensitivities at the declared (froc) or LUNA16's
        (cpm) false-positive rates."""
        hits: list[SlideHits | None] = [result[f"{name}.hits"] for result in results]
        if any(h is None for h in hits):  # scores not required and not given: no FROC
            return np.full((weights.shape[0], 1), np.nan)
        rates = CPM_FP_RATES if metric == "cpm" else cls.froc_fp_rates
        return weighted_froc_sensitivities(hits, weights, "every_score", rates)

    def report(self, results: dict[str, Any]) -> dict[str, Any]:
        ordered = [results[case_id] for case_id in sorted(results)]
        ones = np.ones((1, len(ordered)), dtype=np.int64)
        aggregates: dict[str, Any] = {}
        for name in self.classes:
            entry: dict[str, Any] = {count: int(sum(r[f"{name}.{count}"] for r in ordered))
                                     for count in ("tp", "fp", "fn")}
            for metric in POINT_METRICS:
                entry[metric] = float(self._class_value(metric, name, ordered, ones)[0])
            sensitivities = self._sensitivities("froc", name, ordered, ones)[0]
            entry["sensitivity_at_fp_rate"] = ({f"{rate:g}": float(value) for rate, value
                                               in zip(self.froc_fp_rates, sensitivities, strict=True)}
                                               if sensitivities.size == len(self.froc_fp_rates) else None)
            aggregates[name] = entry
        return {"aggregates": aggregates, "declaration": self.declaration()}

    @classmethod
    def declaration(cls) -> dict[str, Any]:
        """The declared choices, echoed into metrics.json beside the settings."""
        return {"classes": list(cls.classes), "radius": cls.radius, "radius_unit": cls.radius_unit,
                "inclusive": cls.inclusive, "matching": cls.matching, "averaging": cls.averaging,
                "froc_fp_rates": list(cls.froc_fp_rates), "fp_rate": cls.fp_rate, "area_unit": cls.area_unit,
                "ranked_metrics": list(cls.ranked_metrics),
                "composite": dict(cls.composite.weights) if cls.composite else {}, "ranking": cls.ranking,
                **({"ignored_classes": list(cls.ignored_classes)} if cls.ignored_classes else {})}  # default: as before


def _ratio_policy(metric: str, tp: np.ndarray, fp: np.ndarray, fn: np.ndarray) -> np.ndarray:
    """Pooled F1, precision or recall from (weighted) counts, always a number: F1 and both ratios
    are 1 when nothing was to find and nothing was found (the library's empty rule); a ratio whose
    denominator alone is 0 while the other side holds points (precision of a submission that
    predicted nothing) is 0, the value that ranks it below any that found something."""
    if metric == "f1":
        return np.asarray(f1_from_counts(tp, fp, fn), dtype=np.float64)
    return ratio_of_counts(tp, tp + fp if metric == "precision" else tp + fn, tp + fp + fn, 0.0)
