"""Segmentation: an algorithm job writes one N-D label map (2D or 3D) per case, scored label by
label against the ground truth's label map on the same grid.

A challenge of this kind subclasses `Segmentation` and declares, as class attributes (each
checked when the class is made; a wrong declaration is a TypeError at import):

- `labels`: {label value: name}, e.g. {1: "liver", 2: "spleen"} (annotated ClassVar: a dict).
  Every value of a label map must be 0 (background) or a declared label; the names key
  metrics.json. Required.
- `label_metrics`: the metrics computed for every label, each a declaration with its variant and
  empty policy: `Dice()`, `IoU()`, `Hausdorff(percentile=95, combine="max")`,
  `AverageSurfaceDistance(combine="mean")` ("pooled": ASSD), `NormalizedSurfaceDice(tolerance=2.0
  or {label name: tolerance})`; every surface metric takes `boundary` ("voxels", the default:
  border voxels as medpy and MONAI; "surfels": DeepMind's) and `connectivity` (1, face
  neighbours; up to the maps' dimensionality), and any metric a `key` (its name in metrics.json:
  dice, iou, hd95, hd, masd, assd, nsd, cldice, betti0_error by default). Default: (Dice(),
  Hausdorff(95), NormalizedSurfaceDice(2.0)).
  Topology (metrics.topology; they need scikit-image in the image, BettiError cc3d too: the
  folder's RUNTIME_PACKAGES lists metrics.topology.CLDICE_PACKAGES or BETTI_PACKAGES, checked
  when the class is made; needed_packages): `ClDice(skeleton_empty=0.0,
  axis_order="zyx")`, centreline Dice, the harmonic mean of the predicted skeleton's share inside
  the truth and the true skeleton's inside the prediction (skimage's skeletonize: Zhang's thinning
  in 2D, Lee's in 3D); empty policies as Dice's, `skeleton_empty` the value when a nonempty mask's
  skeleton is empty (0, as TopCoW's scorer; None: undefined); Lee's thinning visits the axes in
  the array's order and its skeleton depends on it: "zyx" thins numpy's order as read, "xyz" the
  reversed (the image's index order, a scorer transposing SimpleITK's arrays: TopCoW 2024).
  `BettiError(dimension=0, connectivity=None)`: |b(P) − b(G)| of the Betti number of `dimension`
  (0 components, 1 holes/tunnels, 2 cavities in 3D) at the foreground connectivity (None: 8 in
  2D, 26 in 3D; 4/8, 6/26 with `dimensions` declared to match), lower is better; no empty policy
  (an empty mask's Betti numbers are 0). Both on each label's box of the union widened by one
  voxel.
  Empty policies (`both_empty`, `truth_empty`, `prediction_empty`): a number, "diagonal" for
  distances (the image's diagonal in the spacing's units: a distance no prediction can exceed),
  or None: undefined (null in metrics.json, left out of the means; never for a ranked metric).
  Defaults: Dice, IoU and clDice 1 / 0 / 0, NSD 1 / 0 / 0, distances 0 / "diagonal" / "diagonal".
- `spacing`: "header" (default: distances and tolerances in the image header's units, mm) or
  "voxels" (every voxel 1 × 1 × 1, whatever the header says).
- `ranked_metrics`: the ranked values, in leaderboard order (the first is the score), each a
  `RankedMetric(metric key, label=None, over_cases="mean")`: label None is the mean over the
  declared labels of each case, then `over_cases` ("mean" or "median") over the cases; a label
  name ranks that label alone. Default: every metric, mean over labels and cases.
- `composite`: optional `Composite({ranked key: weight}, title=..., better=...)` or the plain
  `{ranked key: weight}` (kinds/declared.py, the same in every kind), a weighted sum of ranked
  values, which then is the score (the leaderboard's first column), the ranked values beside it; the final
  ranking orders by it (ranking "ordered"), ties broken by the ranked values in turn.
- `ranking`: the final ranking's rule (evaluation/declarations/ranking_rules.py): "ordered"
  (default: the score, ties broken by the next ranked values in turn), "mean_of_ranks"
  (MeanOfRanks: the mean of the ranked values' ranks; the platform's leaderboard then ranks by
  the mean of the columns' ranks too), "case_rank_then_mean" (MeanOfCaseRanks, challengeR's
  rank-then-aggregate: on each case the submissions ranked on the case's value of each ranked
  metric, `cases.<case>.mean_over_labels.<metric>` or `cases.<case>.<label>.<metric>`, the ranks
  averaged over cases, then over the metrics; the phase's leaderboard cannot rank so and ranks
  by the score).
- `dimensions`: the dimensionalities accepted for the ground truth, default (2, 3).

Settings (config.json next to the ground truth): `input_socket`, `output_socket`
("segmentation"), `geometry_tolerance` (1e-4: spacing, origin and direction of the job's map
must agree with the ground truth's within it; the size exactly; maps are never resampled).

metrics.json: ranked values at their paths (`aggregates.dice_mean`, or for one label
`aggregates.<label>.<metric>.<mean|median>`); per label and metric the description over cases
(`aggregates.<label>.<metric>`: mean, std, min, 25%, median, 75%, max, count), the same for the
per-case means over labels (`aggregates.mean_over_labels.<metric>`); each case's value per label
and metric (`cases.<case>.<label>.<metric>`, and `cases.<case>.mean_over_labels.<metric>`); counts
of the cases in which each label is empty in the truth, the prediction or both.

Reading: evaluation/reading/label_maps.py, the header first (the grid: dimensionality, size,
spacing, origin, direction), then the values (0 or a declared label; whole-number floats are
labels, 0.5 and NaN are not); the ground truth's problems are the organizer's (exit 3).

Computation: one pass over both label maps for every label's voxel counts and bounding box
(metrics.overlap.label_overlap_counts), then surface distances per label on its own crop
(metrics.surface.label_surface_distances), once per surface variant (boundary, connectivity)
that the declared metrics use: the Hausdorff distance, the average surface distance and the NSD
are read off the same distances. The topology metrics take each label's two masks on its box
(from the same pass) widened by one voxel: the skeletons and Betti numbers of the whole masks.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluation.declarations.columns import Column
from evaluation.errors import SetupError
from evaluation.kinds.declared import (
    CaseSettings,
    Composite,
    Declared,
    Ranked,
    composite_of,
    composite_value,
    mean_over_cases,
    median_over_cases,
)
from evaluation.metrics import validation
from evaluation.metrics.aggregation import describe, mean_over_labels
from evaluation.platform.cases import Case
from evaluation.platform.outputs import Undefined
from evaluation.reading.label_maps import GRID_TOLERANCE, read_label_map, read_truth_label_map, truth_label_map_files
from evaluation.settings import IMAGE_OUTPUT, Settings, setting

# Ground-truth label maps: <case id><one of these>.
TRUTH_SUFFIXES = (".nii.gz", ".nii", ".mha", ".nrrd", ".tif", ".tiff")
MEAN_OVER_LABELS = "mean_over_labels"  # the per-case mean over the declared labels, in metrics.json
OVER_CASES = ("mean", "median")
SPACINGS = ("header", "voxels")
DIAGONAL = validation.DIAGONAL
# The per-label description over cases: describe()'s keys, its "50%" named "median" (the same
# key as a ranked per-label median, whose value is then the ranked one).
DESCRIBED = {"mean": "mean", "std": "std", "min": "min", "25%": "25%", "50%": "median", "75%": "75%", "max": "max",
             "count": "count"}


# ---- the metrics a challenge declares -----------------------------------------------------------


def _policy_value(value: Any, what: str, allow_diagonal: bool) -> float | str | None:
    """An empty policy's value as declared: a finite number, "diagonal" (distances) or None."""
    if value is None:
        return None
    if allow_diagonal and value == DIAGONAL:
        return DIAGONAL
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        allowed = 'a finite number, "diagonal" or None' if allow_diagonal else "a finite number or None"
        raise TypeError(f"{what} must be {allowed}, not {value!r}")
    return float(value)


@dataclass(frozen=True)
class _Metric:
    """What every declared metric has: its key in metrics.json, title, order and empty policy
    (keyword arguments; a variant such as the percentile may be given by position)."""

    _: KW_ONLY
    key: str = ""
    both_empty: Any = None
    truth_empty: Any = None
    prediction_empty: Any = None

    order: ClassVar[str] = "desc"
    distance: ClassVar[bool] = False  # a surface metric: its value comes from surface distances
    topology: ClassVar[bool] = False  # computed on each label's two masks, cropped to its box (crop_value)
    unit: ClassVar[bool] = False  # a length: its title says the unit

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", self.default_key())
        if not isinstance(self.key, str) or not self.key.isidentifier():
            raise TypeError(f"metric key {self.key!r} must be a word of letters, digits and '_'")
        for name in ("both_empty", "truth_empty", "prediction_empty"):
            object.__setattr__(self, name, _policy_value(getattr(self, name), f"{self.key} {name}", self.distance))

    def default_key(self) -> str:
        raise NotImplementedError

    def name(self) -> str:
        """The metric's name in titles (Dice, HD95, NSD at 2)."""
        raise NotImplementedError

    @property
    def undefined_when_empty(self) -> tuple[str, ...]:
        """The empty cases this metric leaves undefined (its policy None there)."""
        return tuple(case for case in ("both_empty", "truth_empty", "prediction_empty") if getattr(self, case) is None)

    def policy(self) -> dict[str, Any]:
        """The empty policy as the metric library takes it (None: NaN, undefined)."""
        return {case: math.nan if getattr(self, case) is None else getattr(self, case)
                for case in ("both_empty", "truth_empty", "prediction_empty")}

    @property
    def surface_variant(self) -> tuple[str, int] | None:
        return None


@dataclass(frozen=True)
class _OverlapMetric(_Metric):
    """An overlap of the two masks; empty: 1 (both empty) / 0 / 0."""

    _: KW_ONLY
    both_empty: Any = 1.0
    truth_empty: Any = 0.0
    prediction_empty: Any = 0.0


@dataclass(frozen=True)
class Dice(_OverlapMetric):
    """Dice coefficient, 2|P∩G| / (|P| + |G|) (metrics.overlap.dice); empty: 1 / 0 / 0."""

    def default_key(self) -> str:
        return "dice"

    def name(self) -> str:
        return "Dice"

    def values(self, counts, distances) -> np.ndarray:
        return counts.dice(**self.policy())


@dataclass(frozen=True)
class IoU(_OverlapMetric):
    """Jaccard index, |P∩G| / |P∪G| (metrics.overlap.jaccard); empty: 1 / 0 / 0."""

    def default_key(self) -> str:
        return "iou"

    def name(self) -> str:
        return "IoU"

    def values(self, counts, distances) -> np.ndarray:
        return counts.jaccard(**self.policy())


@dataclass(frozen=True)
class _SurfaceMetric(_Metric):
    _: KW_ONLY
    boundary: str = "voxels"
    connectivity: int = 1

    def __post_init__(self) -> None:
        if self.boundary not in ("voxels", "surfels"):
            raise TypeError(f'boundary must be "voxels" or "surfels", not {self.boundary!r}')
        if isinstance(self.connectivity, bool) or not isinstance(self.connectivity, int) or self.connectivity < 1:
            raise TypeError(f"connectivity must be a whole number >= 1, not {self.connectivity!r}")
        if self.boundary == "surfels" and self.connectivity != 1:
            raise TypeError('connectivity applies to boundary="voxels" only')
        super().__post_init__()

    @property
    def surface_variant(self) -> tuple[str, int]:
        return self.boundary, self.connectivity


@dataclass(frozen=True)
class Hausdorff(_SurfaceMetric):
    """Hausdorff distance at `percentile` (100: HD, 95: HD95; metrics.surface.hausdorff_distance):
    `combine` "max" (the larger directed percentile: MONAI, DeepMind, MetricsReloaded) or
    "pooled" (both directions together: medpy's hd95). Empty: 0 / "diagonal" / "diagonal"."""

    percentile: float = 95.0
    combine: str = "max"
    _: KW_ONLY
    both_empty: Any = 0.0
    truth_empty: Any = DIAGONAL
    prediction_empty: Any = DIAGONAL

    distance: ClassVar[bool] = True
    unit: ClassVar[bool] = True
    order: ClassVar[str] = "asc"

    def __post_init__(self) -> None:
        if isinstance(self.percentile, bool) or not isinstance(self.percentile, (int, float)) or \
                not 0 <= self.percentile <= 100:
            raise TypeError(f"percentile must be a number in [0, 100], not {self.percentile!r}")
        if self.combine not in ("max", "pooled"):
            raise TypeError(f'combine must be "max" or "pooled", not {self.combine!r}')
        super().__post_init__()

    def default_key(self) -> str:
        return "hd" if self.percentile == 100 else f"hd{self.percentile:g}".replace(".", "_")

    def name(self) -> str:
        return "HD" if self.percentile == 100 else f"HD{self.percentile:g}"

    def value(self, distances, label: str) -> float:
        return distances.hausdorff_distance(self.percentile, self.combine, **self.policy())


@dataclass(frozen=True)
class AverageSurfaceDistance(_SurfaceMetric):
    """Average surface distance (metrics.surface.average_surface_distance): `combine` "mean"
    (MASD, the mean of the two directed means) or "pooled" (ASSD, all distances together).
    Empty: 0 / "diagonal" / "diagonal"."""

    combine: str = "mean"
    _: KW_ONLY
    both_empty: Any = 0.0
    truth_empty: Any = DIAGONAL
    prediction_empty: Any = DIAGONAL

    distance: ClassVar[bool] = True
    unit: ClassVar[bool] = True
    order: ClassVar[str] = "asc"

    def __post_init__(self) -> None:
        if self.combine not in ("mean", "pooled"):
            raise TypeError(f'combine must be "mean" or "pooled", not {self.combine!r}')
        super().__post_init__()

    def default_key(self) -> str:
        return "masd" if self.combine == "mean" else "assd"

    def name(self) -> str:
        return self.default_key().upper()

    def value(self, distances, label: str) -> float:
        return distances.average_surface_distance(self.combine, **self.policy())


@dataclass(frozen=True)
class NormalizedSurfaceDice(_SurfaceMetric):
    """Normalized surface Dice at a tolerance in the spacing's units (mm), one for every label or
    {label name: tolerance} (metrics.surface.normalized_surface_dice; a distance equal to the
    tolerance counts). Empty: 1 / 0 / 0."""

    tolerance: float | Mapping[str, float] = 2.0
    _: KW_ONLY
    both_empty: Any = 1.0
    truth_empty: Any = 0.0
    prediction_empty: Any = 0.0

    distance: ClassVar[bool] = True  # read off the surface distances ("diagonal" is refused below)

    def __post_init__(self) -> None:
        tolerances = self.tolerance.values() if isinstance(self.tolerance, Mapping) else [self.tolerance]
        for value in tolerances:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
                raise TypeError(f"NSD tolerance must be a finite number >= 0, not {value!r}")
        if isinstance(self.tolerance, Mapping):
            object.__setattr__(self, "tolerance", dict(self.tolerance))
        super().__post_init__()
        if DIAGONAL in (self.both_empty, self.truth_empty, self.prediction_empty):
            raise TypeError(f'{self.key}: "diagonal" is a distance; the NSD takes a number in [0, 1] or None')

    def default_key(self) -> str:
        return "nsd"

    def name(self) -> str:
        if isinstance(self.tolerance, Mapping):
            return "NSD"
        return f"NSD at {self.tolerance:g}"

    def tolerance_of(self, label: str) -> float:
        return float(self.tolerance[label] if isinstance(self.tolerance, Mapping) else self.tolerance)

    def value(self, distances, label: str) -> float:
        return distances.normalized_surface_dice(self.tolerance_of(label), **self.policy())

    def __hash__(self) -> int:  # a dict of tolerances is not hashable
        return hash((self.key, self.boundary, self.connectivity))


AXIS_ORDERS = ("zyx", "xyz")


@dataclass(frozen=True)
class ClDice(_Metric):
    """Centreline Dice (metrics.topology.cldice): the harmonic mean of the share of the predicted
    skeleton inside the truth and of the true skeleton inside the prediction; skeletons by
    scikit-image's skeletonize (Zhang's thinning in 2D, Lee's in 3D). Lee's thinning visits the
    axes in the array's order, so the skeleton depends on it: `axis_order` "zyx" (the default:
    numpy's order as read, slowest axis first) or "xyz" (reversed: the image's index order, as a
    scorer transposing SimpleITK's arrays sees it). `skeleton_empty`: the value when a nonempty
    mask has an empty skeleton (Lee's thinning removes a 2×2×2 cube): 0 by default (TopCoW's
    scorer counts an empty skeleton's share as 0, and so its clDice), None: undefined. Empty:
    1 / 0 / 0."""

    _: KW_ONLY
    both_empty: Any = 1.0
    truth_empty: Any = 0.0
    prediction_empty: Any = 0.0
    skeleton_empty: Any = 0.0
    axis_order: str = "zyx"

    topology: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.axis_order not in AXIS_ORDERS:
            raise TypeError(f'axis_order must be "zyx" or "xyz", not {self.axis_order!r}')
        super().__post_init__()
        object.__setattr__(self, "skeleton_empty",
                           _policy_value(self.skeleton_empty, f"{self.key} skeleton_empty", False))

    def default_key(self) -> str:
        return "cldice"

    def name(self) -> str:
        return "clDice"

    @property
    def undefined_when_empty(self) -> tuple[str, ...]:
        return (*super().undefined_when_empty, *(("skeleton_empty",) if self.skeleton_empty is None else ()))

    def crop_value(self, prediction: np.ndarray, truth: np.ndarray) -> float:
        from evaluation.metrics.topology import cldice

        if self.axis_order == "xyz":
            prediction, truth = prediction.T, truth.T
        skeleton_empty = math.nan if self.skeleton_empty is None else self.skeleton_empty
        return cldice(prediction, truth, **self.policy(), skeleton_empty=skeleton_empty)


@dataclass(frozen=True)
class BettiError(_Metric):
    """Betti number error (metrics.topology.betti_number_errors): |b(P) − b(G)| of the Betti
    number of `dimension` (0: connected components; 1: holes in 2D, tunnels in 3D; 2: cavities,
    3D) at the foreground's `connectivity` (4 or 8 in 2D, 6 or 26 in 3D; None: the full one, 8 or
    26). Defined on empty masks (their Betti numbers are 0): it takes no empty policy. Lower is
    better."""

    dimension: int = 0
    connectivity: int | None = None

    topology: ClassVar[bool] = True
    order: ClassVar[str] = "asc"

    def __post_init__(self) -> None:
        if isinstance(self.dimension, bool) or self.dimension not in (0, 1, 2):
            raise TypeError(f"BettiError dimension must be 0, 1 or 2, not {self.dimension!r}")
        if self.connectivity is not None and (isinstance(self.connectivity, bool)
                                              or self.connectivity not in (4, 8, 6, 26)):
            raise TypeError(f"BettiError connectivity must be None, 4 or 8 (2D), 6 or 26 (3D), "
                            f"not {self.connectivity!r}")
        if any(getattr(self, case) is not None for case in ("both_empty", "truth_empty", "prediction_empty")):
            raise TypeError("BettiError is defined on empty masks (their Betti numbers are 0): it takes no "
                            "empty policy")
        super().__post_init__()

    def default_key(self) -> str:
        return f"betti{self.dimension}_error"

    def name(self) -> str:
        return f"Betti-{self.dimension} error"

    @property
    def undefined_when_empty(self) -> tuple[str, ...]:
        return ()

    def crop_value(self, prediction: np.ndarray, truth: np.ndarray) -> float:
        from evaluation.metrics.topology import betti_number_errors

        return float(betti_number_errors(prediction, truth, self.connectivity)[self.dimension])


Metric = Dice | IoU | Hausdorff | AverageSurfaceDistance | NormalizedSurfaceDice | ClDice | BettiError


# ---- the ranked values a challenge declares -----------------------------------------------------


@dataclass(frozen=True)
class RankedMetric:
    """One ranked value: a metric (its key) over the declared labels (label None: each case's
    mean over them) or of one label (its name), aggregated over the cases by `over_cases`."""

    metric: str
    label: str | None = None
    over_cases: str = "mean"
    title: str | None = None  # default: from the metric, the labels and the aggregation

    def __post_init__(self) -> None:
        if self.over_cases not in OVER_CASES:
            raise TypeError(f"over_cases must be one of {', '.join(OVER_CASES)}, not {self.over_cases!r}")

    @property
    def key(self) -> str:
        """Its path under "aggregates": <metric>_<over_cases>, or <label>.<metric>.<over_cases>."""
        if self.label is None:
            return f"{self.metric}_{self.over_cases}"
        return f"{self.label}.{self.metric}.{self.over_cases}"

    @property
    def case_path(self) -> str:
        """Its per-case value's path inside a case's entry of metrics.json (a per-case rule's)."""
        return f"{self.label or MEAN_OVER_LABELS}.{self.metric}"

    @property
    def case_key(self) -> str:
        """The per-case value it aggregates (a key of a case's result)."""
        return self.metric if self.label is None else f"{self.label}/{self.metric}"


# ---- settings ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SegmentationSettings(CaseSettings):
    """What config.json next to the ground truth may change (python -m evaluation --list)."""

    output_socket: str = setting("segmentation", socket=IMAGE_OUTPUT,
                                 doc="output socket read: a label map on the ground truth's grid (0 background, "
                                     "the declared labels)")
    geometry_tolerance: float = setting(GRID_TOLERANCE, minimum=0.0, maximum=0.1,
                                        doc="relative tolerance on spacing, origin and direction against the ground "
                                            "truth's; the size must be equal; label maps are never resampled")


# ---- one case ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelMapPair:
    """A case's two label maps on one grid, and the spacing the metrics use (numpy axis order)."""

    truth: np.ndarray
    prediction: np.ndarray
    spacing: tuple[float, ...]


def _label_text(labels: Mapping[int, str]) -> str:
    return "0 (background), " + ", ".join(f"{value} ({name})" for value, name in labels.items())


class Segmentation(Declared):
    """The segmentation kind: see the module docstring for every declaration and its default."""

    labels: ClassVar[dict[int, str]] = {}
    label_metrics: ClassVar[tuple[Metric, ...]] = ()
    ranked_metrics: ClassVar[tuple[RankedMetric, ...]] = ()
    composite: ClassVar[Composite | Mapping[str, float] | None] = None
    spacing: ClassVar[str] = "header"
    dimensions: ClassVar[tuple[int, ...]] = (2, 3)
    settings_class = SegmentationSettings

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if cls.labels:
            cls._declare()
        super().__init_subclass__(**kwargs)

    # ---- the declaration, checked and turned into ranked values ---------------------------------

    @classmethod
    def _declare(cls) -> None:
        cls.composite = composite_of(cls.composite, cls.__name__)  # a Composite or {key: weight}
        labels = cls.labels
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in labels):
            raise TypeError(f"{cls.__name__}.labels: label values are whole numbers > 0 (0 is the background)")
        names = list(labels.values())
        if len(set(names)) != len(names) or not all(isinstance(n, str) and n.isidentifier() for n in names):
            raise TypeError(f"{cls.__name__}.labels: names must be distinct words of letters, digits and '_'")
        if not cls.label_metrics:
            cls.label_metrics = (Dice(), Hausdorff(95), NormalizedSurfaceDice(2.0))
        keys = [metric.key for metric in cls.label_metrics]
        if len(set(keys)) != len(keys):
            raise TypeError(f"{cls.__name__}.label_metrics: two metrics share a key ({keys}); give one a key=")
        # the names key metrics.json's "aggregates" beside the ranked values and the composite
        reserved = {MEAN_OVER_LABELS, *keys, *(f"{k}_{c}" for k in keys for c in OVER_CASES),
                    *([cls.composite.key] if cls.composite is not None else [])}
        if reserved & set(names):
            raise TypeError(f"{cls.__name__}.labels: {sorted(reserved & set(names))} is a key of metrics.json")
        for metric in cls.label_metrics:
            if isinstance(metric, NormalizedSurfaceDice) and isinstance(metric.tolerance, dict):
                if set(metric.tolerance) != set(names):
                    raise TypeError(f"{cls.__name__}: {metric.key}'s tolerances must name every label ({names}), "
                                    f"found {sorted(metric.tolerance)}")
            if metric.topology and any(d not in (2, 3) for d in cls.dimensions):
                raise TypeError(f"{cls.__name__}: {metric.key} is defined on 2D and 3D label maps only "
                                f"(declare dimensions)")
            if isinstance(metric, BettiError):
                if metric.dimension >= min(cls.dimensions):
                    raise TypeError(f"{cls.__name__}: {metric.key}: a {min(cls.dimensions)}D label map has no "
                                    f"Betti number {metric.dimension} (declare dimensions)")
                if metric.connectivity is not None and any(
                        metric.connectivity not in ((4, 8) if d == 2 else (6, 26)) for d in cls.dimensions):
                    raise TypeError(f"{cls.__name__}: {metric.key}'s connectivity {metric.connectivity} is not one "
                                    f"of every declared dimensionality's (4 or 8 in 2D, 6 or 26 in 3D; declare "
                                    f"dimensions)")
            if metric.surface_variant is not None:
                if metric.boundary == "surfels" and any(d not in (2, 3) for d in cls.dimensions):
                    raise TypeError(f"{cls.__name__}: surfels are defined in 2D and 3D only")
                if metric.connectivity > min(cls.dimensions):
                    raise TypeError(f"{cls.__name__}: {metric.key}'s connectivity {metric.connectivity} exceeds the "
                                    f"dimensionality of a {min(cls.dimensions)}D label map (declare dimensions)")
        if cls.spacing not in SPACINGS:
            raise TypeError(f"{cls.__name__}.spacing must be one of {', '.join(SPACINGS)}")
        ranked = cls.ranked_metrics or tuple(RankedMetric(metric.key) for metric in cls.label_metrics)
        cls.ranked_metrics = ranked
        by_key = {metric.key: metric for metric in cls.label_metrics}
        values = []
        for value in ranked:
            metric = by_key.get(value.metric)
            if metric is None:
                raise TypeError(f"{cls.__name__}: ranked metric {value.metric!r} is not one of the metrics {keys}")
            if value.label is not None and value.label not in names:
                raise TypeError(f"{cls.__name__}: ranked label {value.label!r} is not one of the labels {names}")
            if metric.undefined_when_empty:
                # a ranked value is always a finite number: an undefined case would leave it none
                raise TypeError(f"{cls.__name__}: the ranked metric {metric.key} leaves "
                                f"{', '.join(metric.undefined_when_empty)} undefined (None); declare a number or "
                                f"\"diagonal\" there")
            compute = (mean_over_cases if value.over_cases == "mean" else median_over_cases)(value.case_key)
            values.append(Ranked(Column(value.title or cls._title(metric, value), f"aggregates.{value.key}",
                                        metric.order), compute))
        if cls.composite is not None:
            values.insert(0, composite_value(cls.composite, {value.key: f"aggregates.{value.key}" for value in ranked},
                                             cls.__name__))
        cls.ranked = tuple(values)
        if not cls.__dict__.get("leaderboard_name"):
            cls.leaderboard_name = cls.composite.key if cls.composite is not None else ranked[0].key.replace(".", "_")
        if cls.ranking == "case_rank_then_mean" and any(value.over_cases != "mean" for value in ranked):
            raise TypeError(f"{cls.__name__}: case_rank_then_mean averages each case's ranks; its ranked metrics "
                            f"aggregate over cases by the mean")

    @classmethod
    def topology_declared(cls) -> str:
        """The topology metrics the declaration uses, by class ("ClDice and BettiError"), or ""."""
        return " and ".join(dict.fromkeys(type(metric).__name__ for metric in cls.label_metrics if metric.topology))

    @classmethod
    def needed_packages(cls) -> dict[str, tuple[str, ...]]:
        """The topology metrics need scikit-image and what it needs, BettiError cc3d too
        (metrics.topology.CLDICE_PACKAGES, BETTI_PACKAGES), which the template does not declare."""
        what = cls.topology_declared()
        if not what:
            return {}
        from evaluation.metrics.topology import BETTI_PACKAGES, CLDICE_PACKAGES

        packages = (BETTI_PACKAGES if isinstance(metric, BettiError) else CLDICE_PACKAGES
                    for metric in cls.label_metrics if metric.topology)
        return {what: tuple(dict.fromkeys(package for each in packages for package in each))}

    def __init__(self, ground_truth_dir: Path, settings: Settings | None = None):
        self.import_topology_libraries()
        super().__init__(ground_truth_dir, settings)

    @classmethod
    def import_topology_libraries(cls) -> None:
        """The libraries the declared topology metrics compute with (scikit-image's modules, cc3d
        for BettiError), imported before any case is read (the forked workers inherit them); if
        one cannot be, a SetupError (exit 3, one line) saying what the image lacks, never a case's
        traceback. The image installs only RUNTIME_PACKAGES, and the registry refuses a declaration
        that leaves these out (evaluation.challenges.check_runtime_packages), so here it is a
        Python whose packages are not what the folder declares."""
        # (module, what of it): scikit-image's subpackages load their functions lazily, on first use
        uses = dict.fromkeys(use for metric in cls.label_metrics if metric.topology for use in (
            (("skimage.measure", "euler_number"), ("cc3d", "connected_components")) if isinstance(metric, BettiError)
            else (("skimage.morphology", "skeletonize"),)))
        try:
            for module, name in uses:
                getattr(importlib.import_module(module), name)
        except ImportError as error:
            raise SetupError(cls._topology_libraries_missing(error)) from None

    @classmethod
    def _topology_libraries_missing(cls, error: ImportError) -> str:
        """The one sentence of import_topology_libraries' SetupError. The registry has checked
        that the folder's RUNTIME_PACKAGES list the packages (evaluation.challenges), so this
        Python is not the image the folder declares: rebuilt, or requirements.txt installed."""
        ((what, needed),) = cls.needed_packages().items()
        name = cls.name or cls.__name__
        listed = ", ".join(f'"{package}"' for package in needed)
        return (f"{name} declares {what}, whose libraries this Python cannot import ({type(error).__name__}: "
                f"{error}): rebuild the image (./build.sh {name}), whose RUNTIME_PACKAGES must list {listed}, or "
                f"outside an image install requirements.txt (pip install -r requirements.txt).")

    @classmethod
    def case_columns(cls) -> tuple[Column, ...]:
        """challengeR's rank-then-aggregate ranks each case's own values: the ranked metrics' paths
        inside a case's entry of metrics.json ("mean_over_labels.dice", "kidney.dice")."""
        by_key = {metric.key: metric for metric in cls.label_metrics}
        return tuple(Column(value.title or cls._title(by_key[value.metric], value), value.case_path,
                            by_key[value.metric].order) for value in cls.ranked_metrics)

    @classmethod
    def _title(cls, metric: _Metric, value: RankedMetric) -> str:
        unit = (" (mm)" if cls.spacing == "header" else " (voxels)") if metric.unit else ""
        if isinstance(metric, NormalizedSurfaceDice) and not isinstance(metric.tolerance, dict):
            unit = " mm" if cls.spacing == "header" else " voxels"
        over = "over labels and cases" if value.label is None else "over cases"
        subject = f"{metric.name()}{unit}" if value.label is None else f"{value.label} {metric.name()}{unit}"
        return f"{subject}, {value.over_cases} {over}"

    # ---- reading ---------------------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, Path]:
        """{case id: its label map}: one `<case id>.nii.gz` (or .nii, .mha, .nrrd, .tif) per case,
        read in the worker that scores the case."""
        return truth_label_map_files(directory, TRUTH_SUFFIXES)

    def case_truth(self, case: Case):
        """The case's ground truth, read and checked here, in the process scoring the case."""
        truth = read_truth_label_map(self.ground_truth_dir, self.ground_truth[case.case_id], [0, *self.labels],
                                     dimensions=self.dimensions, labels_text=_label_text(self.labels))
        return truth.voxels, truth.geometry

    def read_job_prediction(self, case: Case, ground_truth) -> LabelMapPair:
        truth_voxels, geometry = ground_truth
        prediction = read_label_map(case.image(self.settings.output_socket), geometry, [0, *self.labels], case.name,
                                    labels_text=_label_text(self.labels), tolerance=self.settings.geometry_tolerance)
        spacing = tuple(float(s) for s in reversed(geometry.spacing)) if self.spacing == "header" else \
            (1.0,) * len(geometry.size)
        return LabelMapPair(truth_voxels, prediction.voxels, spacing)

    # ---- scoring ---------------------------------------------------------------------------------

    def score_case(self, case: Case, prediction: LabelMapPair, ground_truth) -> dict[str, float]:
        return score_label_maps(prediction.prediction, prediction.truth, self.labels, self.label_metrics,
                                prediction.spacing)

    def case_entry(self, result: dict[str, float]) -> dict[str, Any]:
        """{label: {metric: value}}, and the case's mean over labels; null (with a note) where a
        metric's empty policy leaves the value undefined."""
        entry: dict[str, Any] = {}
        for name in self.labels.values():
            entry[name] = {metric.key: _defined(result[f"{name}/{metric.key}"], metric, name, result)
                           for metric in self.label_metrics}
        entry[MEAN_OVER_LABELS] = {metric.key: _defined(result[metric.key], metric, None, result)
                                   for metric in self.label_metrics}
        return entry

    def report(self, results: dict[str, dict[str, float]]) -> dict[str, Any]:
        ordered = [results[case_id] for case_id in sorted(results)]
        aggregates: dict[str, Any] = {}
        for name in [*self.labels.values(), MEAN_OVER_LABELS]:
            aggregates[name] = {}
            for metric in self.label_metrics:
                key = metric.key if name == MEAN_OVER_LABELS else f"{name}/{metric.key}"
                summary = describe(np.array([r[key] for r in ordered], dtype=np.float64))
                aggregates[name][metric.key] = {DESCRIBED[k]: summary[k] for k in DESCRIBED}
                aggregates[name][metric.key]["count"] = int(summary["count"])
        empty = {}
        for name in self.labels.values():
            truth = np.array([r[f"{name}/truth_voxels"] for r in ordered])
            predicted = np.array([r[f"{name}/prediction_voxels"] for r in ordered])
            empty[name] = {"both_empty": int(np.sum((truth == 0) & (predicted == 0))),
                           "truth_empty": int(np.sum((truth == 0) & (predicted > 0))),
                           "prediction_empty": int(np.sum((truth > 0) & (predicted == 0)))}
        return {"aggregates": aggregates, "counts": {"cases": len(ordered), "labels": len(self.labels),
                                                     "empty_cases": empty}}


def _defined(value: float, metric: _Metric, label: str | None, result: Mapping[str, float]) -> Any:
    if not math.isnan(value):
        return value
    if label is None:
        return Undefined(f"{metric.key} is undefined for every label of this case (its empty policy)")
    truth, predicted = result[f"{label}/truth_voxels"], result[f"{label}/prediction_voxels"]
    if truth and predicted:  # both masks nonempty: undefined by clDice's skeleton_empty
        return Undefined(f"{metric.key} of {label}: a skeleton is empty, which the declaration leaves undefined")
    case = "both_empty" if truth == 0 and predicted == 0 else "truth_empty" if truth == 0 else "prediction_empty"
    return Undefined(f"{metric.key} of {label}: {case.replace('_', ' ')}, which the declaration leaves undefined")


def _widened(box: tuple[slice, ...] | None, shape: tuple[int, ...], margin: int = 1) -> tuple[slice, ...] | None:
    """A label's box of the union widened by `margin` voxels within the image (as
    metrics.overlap.union_box(margin=1)), None if the label is in neither map."""
    if box is None:
        return None
    return tuple(slice(max(0, s.start - margin), min(n, s.stop + margin)) for s, n in zip(box, shape, strict=True))


def score_label_maps(prediction: np.ndarray, truth: np.ndarray, labels: Mapping[int, str],
                     metrics: tuple[Metric, ...], spacing: tuple[float, ...] | None) -> dict[str, float]:
    """One case's result: {"<label>/<metric>": value, "<metric>": mean over the labels,
    "<label>/truth_voxels", "<label>/prediction_voxels"}, NaN where a policy leaves a value
    undefined. One pass over both maps for every label's counts and box; per surface variant,
    each label's distances on its own box (those boxes: no second pass)."""
    from evaluation.metrics.overlap import label_overlap_counts
    from evaluation.metrics.surface import label_surface_distances

    values = list(labels)
    counts = label_overlap_counts(prediction, truth, values)
    result: dict[str, Any] = {}
    for index, name in enumerate(labels.values()):
        result[f"{name}/truth_voxels"] = int(counts.truth_size[index])
        result[f"{name}/prediction_voxels"] = int(counts.prediction_size[index])
    per_metric = {metric.key: [float(v) for v in metric.values(counts, None)]
                  for metric in metrics if metric.surface_variant is None and not metric.topology}
    # topology: each label's two masks on its own box of the union, widened by one voxel (what a
    # skeleton or an Euler number sees of the whole image), made once for every topology metric
    topology = [metric for metric in metrics if metric.topology]
    for metric in topology:
        per_metric[metric.key] = []
    for index, value in enumerate(values if topology else ()):
        crop = _widened(counts.boxes[index], prediction.shape)
        if crop is None:  # in neither map: two empty masks
            predicted = true = np.zeros((1,) * prediction.ndim, dtype=bool)
        else:
            predicted, true = prediction[crop] == value, truth[crop] == value
        for metric in topology:
            per_metric[metric.key].append(float(metric.crop_value(predicted, true)))
    # one variant's distances at a time (a noise map's are large), every metric read off them
    for variant in dict.fromkeys(metric.surface_variant for metric in metrics if metric.surface_variant):
        found = label_surface_distances(prediction, truth, values, spacing, *variant, counts=counts)
        for metric in metrics:
            if metric.surface_variant == variant:
                per_metric[metric.key] = [float(metric.value(found[value], name)) for value, name in labels.items()]
        del found
    for metric in metrics:  # in declaration order
        per_label = per_metric[metric.key]
        for name, v in zip(labels.values(), per_label, strict=True):
            result[f"{name}/{metric.key}"] = v
        array = np.array(per_label)
        defined = ~np.isnan(array)
        result[metric.key] = float(mean_over_labels(array, None if defined.all() else defined))
    return result


__all__ = ["AverageSurfaceDistance", "BettiError", "ClDice", "Composite", "Dice", "Hausdorff", "IoU", "LabelMapPair",
           "NormalizedSurfaceDice", "RankedMetric", "Segmentation", "SegmentationSettings"]
