"""Segmentation: an algorithm job writes one N-D label map (2D or 3D) per case, scored label by
label against the ground truth's label map on the same grid.

A challenge of this kind subclasses `Segmentation` and declares, as class attributes (each
checked when the class is made; a wrong declaration is a TypeError at import):

- `labels`: {label value: name}, e.g. {1: "liver", 2: "spleen"} (annotated ClassVar: a dict).
  Every value of a label map must be 0 (background) or a declared label; the names key
  metrics.json. Required.
- `groups`: {group name: label values}, e.g. BraTS's regions {"WT": (1, 2, 3), "TC": (1, 3),
  "ET": (3,)} or TopCoW's merged vessels {"vessel": (1, 2, ..., 13)}: each group's union of labels
  (in each map, the voxels holding any of them) scored exactly as a label (every metric, its empty
  policies, an NSD tolerance of its own, per-case values, descriptions, rankable). A region's
  Dice is the Dice of the union masks, not the mean of its labels' Dice: a voxel of label 1
  predicted as 3 counts for the region {1, 3} and against both labels. Default: none.
- `score_labels`: True (default): the labels are scored, and the groups beside them; False: the
  groups only (BraTS; the labels then only say which values a map may hold).
- `label_metrics`: the metrics computed for every label, each a declaration with its variant and
  empty policy: `Dice()`, `IoU()`, `Hausdorff(percentile=95, combine="max")`,
  `AverageSurfaceDistance(combine="mean")` ("pooled": ASSD), `NormalizedSurfaceDice(tolerance=2.0
  or {label or group name: tolerance})`; every surface metric takes `boundary` ("voxels", the default:
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
  `RankedMetric(metric key, label=None, over_cases="mean", *, group=None, over=None,
  over_labels="all", none_present=None)`: a label name ranks that label alone, a group name
  (`group=`) that group; neither is each case's mean over the labels (`over="labels"`) or the
  groups (`"groups"`; None: the labels if scored, else the groups), then `over_cases` ("mean" or
  "median") over the cases. The mean averages every label (group) of the case (`over_labels`
  "all": one absent from both maps brings its both_empty value, Dice 1) or only those present
  in the case's truth or prediction ("present"); a case where none is present takes
  `none_present`, which "present" requires (no default): a number, or "skip" (the case is left
  out of the mean or median over cases, its per-case value null with a note; a test set where
  every case is skipped has no value: exit 3; not with "case_rank_then_mean", which ranks every
  case). A metric ranked so may leave both_empty undefined (None: a label in neither map is
  not present, so never in the mean); every other ranked value needs every empty case
  defined. Default: every metric, mean over labels (or groups) and cases.
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
of the cases in which each label is empty in the truth, the prediction or both
(`counts.empty_cases.<label>`). Groups have a node of their own, so that a group's key is never a
label's (a label may not be named "groups" or after a mean): `cases.<case>.groups.<group>.<metric>`,
`aggregates.groups.<group>.<metric>` (the description; a ranked group's value at
`aggregates.groups.<group>.<metric>.<mean|median>`), `counts.empty_cases.groups.<group>`,
`counts.groups`; their per-case mean `cases.<case>.mean_over_groups.<metric>`, described at
`aggregates.mean_over_groups.<metric>` (ranked: `aggregates.mean_over_groups.<metric>.<mean|median>`).
A ranked mean over present labels (groups) adds `cases.<case>.mean_over_present_labels.<metric>`
(`mean_over_present_groups`) for its metric, described (and ranked) at
`aggregates.mean_over_present_labels.<metric>[.<mean|median>]`, and `counts.none_present.<mean>`:
the cases where none is present. Without groups and present means, nothing of these is written.

Reading: evaluation/reading/label_maps.py, the header first (the grid: dimensionality, size,
spacing, origin, direction), then the values (0 or a declared label; whole-number floats are
labels, 0.5 and NaN are not); the ground truth's problems are the organizer's (exit 3).

Computation: one pass over both label maps for every label's voxel counts and bounding box
(metrics.overlap.label_overlap_counts), then surface distances per label on its own crop
(metrics.surface.label_surface_distances), once per surface variant (boundary, connectivity)
that the declared metrics use: the Hausdorff distance, the average surface distance and the NSD
are read off the same distances. The topology metrics take each label's two masks on its box
(from the same pass) widened by one voxel: the skeletons and Betti numbers of the whole masks. A
group's two masks are made once per case, on the box around its labels' boxes (widened by one
voxel when a topology metric is declared), and every metric is read off them: its sizes are its
labels' sizes summed, its intersection counted on the masks (labels swapped inside the group
still overlap).
"""

from __future__ import annotations

import dataclasses
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
    case_values,
    composite_of,
    composite_value,
    mean_over_cases,
    median_over_cases,
)
from evaluation.metrics import validation
from evaluation.metrics.aggregation import describe, mean_over_labels, weighted_mean, weighted_median
from evaluation.platform.cases import Case
from evaluation.platform.outputs import Undefined
from evaluation.reading.label_maps import GRID_TOLERANCE, read_label_map, read_truth_label_map, truth_label_map_files
from evaluation.settings import IMAGE_OUTPUT, Settings, setting

# Ground-truth label maps: <case id><one of these>.
TRUTH_SUFFIXES = (".nii.gz", ".nii", ".mha", ".nrrd", ".tif", ".tiff")
MEAN_OVER_LABELS = "mean_over_labels"  # the per-case mean over the declared labels, in metrics.json
GROUPS = "groups"  # the groups' node in a case's entry, aggregates and counts of metrics.json
MEAN_SETS = ("labels", "groups")  # what a per-case mean averages
OVER_LABELS = ("all", "present")  # every label (group) of the mean, or those present in the case
SKIP = "skip"  # none_present: a case with no label present is left out of the mean over cases
# the per-case means beside the labels in a case's entry and in "aggregates"
MEAN_NAMES = tuple(f"mean_over_{p}{s}" for p in ("", "present_") for s in MEAN_SETS)
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
    """One ranked value: a metric (its key) of one label (`label`, its name), of one group
    (`group`), or each case's mean over the scored labels or groups (`over`), aggregated over the
    cases by `over_cases`. A mean averages every label (or group) of the case (`over_labels`
    "all") or only those present in the case's truth or prediction ("present"); a case where
    none is present takes `none_present`: a number, or "skip" (left out of the mean over cases)."""

    metric: str
    label: str | None = None
    over_cases: str = "mean"
    title: str | None = None  # default: from the metric, the labels and the aggregation
    _: KW_ONLY
    group: str | None = None
    over: str | None = None  # "labels" or "groups"; None: the labels if scored, else the groups
    over_labels: str = "all"
    none_present: float | str | None = None

    def __post_init__(self) -> None:
        if self.over_cases not in OVER_CASES:
            raise TypeError(f"over_cases must be one of {', '.join(OVER_CASES)}, not {self.over_cases!r}")
        if self.over not in (None, *MEAN_SETS):
            raise TypeError(f'over must be "labels" or "groups", not {self.over!r}')
        if self.over_labels not in OVER_LABELS:
            raise TypeError(f"over_labels must be one of {', '.join(OVER_LABELS)}, not {self.over_labels!r}")
        if self.label is not None and self.group is not None:
            raise TypeError(f"{self.metric}: a ranked value names a label or a group, not both")
        if (self.label is not None or self.group is not None) and (self.over is not None or
                                                                   self.over_labels != "all"):
            raise TypeError(f"{self.metric}: over and over_labels choose what a mean averages; a ranked value of "
                            f"one label or group takes neither")
        if self.over_labels == "present":
            # a case with nothing present has no mean: the declaration says what it gets
            if self.none_present is None:
                raise TypeError(f'{self.metric}: over_labels="present" needs none_present, the value of a case '
                                f'where no label is present (a number, or "skip": left out of the mean over cases)')
            if self.none_present != SKIP:
                object.__setattr__(self, "none_present", _policy_value(self.none_present, f"{self.metric} "
                                                                       f'none_present (a number or "skip")', False))
        elif self.none_present is not None:
            raise TypeError(f'{self.metric}: none_present applies to over_labels="present" only')

    @property
    def mean_name(self) -> str | None:
        """The name of the mean it ranks in metrics.json (mean_over_labels, mean_over_groups,
        mean_over_present_labels, mean_over_present_groups), None for one label or group."""
        if self.label is not None or self.group is not None:
            return None
        return mean_name(self.over or "labels", self.over_labels == "present")

    @property
    def key(self) -> str:
        """Its path under "aggregates": <metric>_<over_cases> (the mean over all labels),
        <mean>.<metric>.<over_cases> (another mean), <label>.<metric>.<over_cases>, or
        groups.<group>.<metric>.<over_cases>."""
        if self.label is not None:
            return f"{self.label}.{self.metric}.{self.over_cases}"
        if self.group is not None:
            return f"{GROUPS}.{self.group}.{self.metric}.{self.over_cases}"
        if self.mean_name == MEAN_OVER_LABELS:
            return f"{self.metric}_{self.over_cases}"
        return f"{self.mean_name}.{self.metric}.{self.over_cases}"

    @property
    def case_path(self) -> str:
        """Its per-case value's path inside a case's entry of metrics.json (a per-case rule's)."""
        if self.group is not None:
            return f"{GROUPS}.{self.group}.{self.metric}"
        return f"{self.label or self.mean_name}.{self.metric}"

    @property
    def case_key(self) -> str:
        """The per-case value it aggregates (a key of a case's result)."""
        if self.label is not None:
            return f"{self.label}/{self.metric}"
        if self.group is not None:
            return f"{GROUPS}/{self.group}/{self.metric}"
        return self.metric if self.mean_name == MEAN_OVER_LABELS else f"{self.mean_name}/{self.metric}"


def mean_name(over: str, present: bool) -> str:
    """A per-case mean's name in metrics.json: over the labels or the groups, all or present."""
    return f"mean_over_{'present_' if present else ''}{over}"


AVERAGED = {mean_name(over, present): over for over in MEAN_SETS for present in (False, True)}  # name -> set


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
    # {group name: label values}: each group's union of labels scored as one label (BraTS's regions)
    groups: ClassVar[dict[str, tuple[int, ...]]] = {}
    score_labels: ClassVar[bool] = True  # False: the groups only
    label_metrics: ClassVar[tuple[Metric, ...]] = ()
    ranked_metrics: ClassVar[tuple[RankedMetric, ...]] = ()
    composite: ClassVar[Composite | Mapping[str, float] | None] = None
    spacing: ClassVar[str] = "header"
    dimensions: ClassVar[tuple[int, ...]] = (2, 3)
    settings_class = SegmentationSettings
    # the per-case means over present labels (groups) that ranked values read: {mean name: {metric
    # key: none_present}}, made from ranked_metrics
    present_means: ClassVar[dict[str, dict[str, float | str]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if cls.labels:
            cls._declare()
        super().__init_subclass__(**kwargs)

    # ---- the declaration, checked and turned into ranked values ---------------------------------

    @classmethod
    def _declared_groups(cls) -> dict[str, tuple[int, ...]]:
        """The groups as {name: sorted label values}, each checked."""
        if not isinstance(cls.groups, Mapping):
            raise TypeError(f"{cls.__name__}.groups must map group names to label values, not {cls.groups!r}")
        groups = {}
        for name, members in cls.groups.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise TypeError(f"{cls.__name__}.groups: {name!r} must be a word of letters, digits and '_'")
            values = tuple(members) if isinstance(members, (tuple, list, set, frozenset)) else None
            if not values or len(set(values)) != len(values) or any(v not in cls.labels for v in values) or \
                    any(isinstance(v, bool) for v in values):
                raise TypeError(f"{cls.__name__}.groups[{name!r}] must be distinct declared label values "
                                f"({sorted(cls.labels)}), not {members!r}")
            groups[name] = tuple(sorted(values))
        return groups

    @classmethod
    def scored_names(cls) -> list[str]:
        """The names of what is scored: the labels (unless score_labels is False), then the groups."""
        return [*(cls.labels.values() if cls.score_labels else ()), *cls.groups]

    @classmethod
    def _subjects(cls, over: str) -> list[str]:
        """The result prefixes of the labels or of the groups ("liver", "groups/WT")."""
        return list(cls.labels.values()) if over == "labels" else [f"{GROUPS}/{name}" for name in cls.groups]

    @classmethod
    def _declare(cls) -> None:
        cls.composite = composite_of(cls.composite, cls.__name__)  # a Composite or {key: weight}
        labels = cls.labels
        if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in labels):
            raise TypeError(f"{cls.__name__}.labels: label values are whole numbers > 0 (0 is the background)")
        names = list(labels.values())
        if len(set(names)) != len(names) or not all(isinstance(n, str) and n.isidentifier() for n in names):
            raise TypeError(f"{cls.__name__}.labels: names must be distinct words of letters, digits and '_'")
        cls.groups = cls._declared_groups()
        if not isinstance(cls.score_labels, bool):
            raise TypeError(f"{cls.__name__}.score_labels must be True or False, not {cls.score_labels!r}")
        if not cls.score_labels and not cls.groups:
            raise TypeError(f"{cls.__name__}: score_labels = False scores the groups only; declare groups")
        scored = cls.scored_names()
        if len(set(scored)) != len(scored):
            # a tolerance {name: mm} names a label or a group: one name, one of them
            raise TypeError(f"{cls.__name__}.groups: a group's name must differ from every scored label's "
                            f"({sorted(n for n in set(scored) if scored.count(n) > 1)})")
        if not cls.label_metrics:
            cls.label_metrics = (Dice(), Hausdorff(95), NormalizedSurfaceDice(2.0))
        keys = [metric.key for metric in cls.label_metrics]
        if len(set(keys)) != len(keys):
            raise TypeError(f"{cls.__name__}.label_metrics: two metrics share a key ({keys}); give one a key=")
        # the names key metrics.json's "aggregates" beside the ranked values and the composite
        reserved = {*MEAN_NAMES, GROUPS, *keys, *(f"{k}_{c}" for k in keys for c in OVER_CASES),
                    *([cls.composite.key] if cls.composite is not None else [])}
        if reserved & set(names):
            raise TypeError(f"{cls.__name__}.labels: {sorted(reserved & set(names))} is a key of metrics.json")
        for metric in cls.label_metrics:
            if isinstance(metric, NormalizedSurfaceDice) and isinstance(metric.tolerance, dict):
                if set(metric.tolerance) != set(scored):
                    what = "label" if not cls.groups else "label and group scored"
                    raise TypeError(f"{cls.__name__}: {metric.key}'s tolerances must name every {what} ({scored}), "
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
        # a mean over "the scored labels" without `over`: the labels, or the groups when only they are scored
        ranked = tuple(dataclasses.replace(value, over="labels" if cls.score_labels else GROUPS)
                       if value.label is None and value.group is None and value.over is None else value
                       for value in ranked)
        cls.ranked_metrics = ranked
        by_key = {metric.key: metric for metric in cls.label_metrics}
        values = []
        present: dict[str, dict[str, float | str]] = {}
        for value in ranked:
            metric = by_key.get(value.metric)
            if metric is None:
                raise TypeError(f"{cls.__name__}: ranked metric {value.metric!r} is not one of the metrics {keys}")
            if value.label is not None and value.label not in names:
                raise TypeError(f"{cls.__name__}: ranked label {value.label!r} is not one of the labels {names}")
            if value.label is not None and not cls.score_labels:
                raise TypeError(f"{cls.__name__}: ranked label {value.label!r}: the labels are not scored "
                                f"(score_labels = False)")
            if value.group is not None and value.group not in cls.groups:
                raise TypeError(f"{cls.__name__}: ranked group {value.group!r} is not one of the groups "
                                f"{list(cls.groups)}")
            if value.over == "labels" and not cls.score_labels:
                raise TypeError(f"{cls.__name__}: {value.metric}: a mean over the labels, which are not scored "
                                f"(score_labels = False)")
            if value.over == GROUPS and not cls.groups:
                raise TypeError(f"{cls.__name__}: {value.metric}: a mean over the groups; declare groups")
            undefined = metric.undefined_when_empty
            if value.over_labels == "present":  # a label in neither map is not present: never in the mean
                undefined = tuple(empty for empty in undefined if empty != "both_empty")
            if undefined:
                # a ranked value is always a finite number: an undefined case would leave it none
                raise TypeError(f"{cls.__name__}: the ranked metric {metric.key} leaves "
                                f"{', '.join(undefined)} undefined (None); declare a number or "
                                f"\"diagonal\" there")
            if value.over_labels == "present":
                policies = present.setdefault(value.mean_name, {})
                if policies.setdefault(value.metric, value.none_present) != value.none_present:
                    # one per-case value per metric in metrics.json's cases
                    raise TypeError(f"{cls.__name__}: {value.metric} ranked over present {value.over} with two "
                                    f"none_present policies ({policies[value.metric]!r}, {value.none_present!r})")
            if value.none_present == SKIP:
                compute = _over_cases_skipping(value.case_key, value.over_cases)
            else:
                compute = (mean_over_cases if value.over_cases == "mean" else median_over_cases)(value.case_key)
            values.append(Ranked(Column(value.title or cls._title(metric, value), f"aggregates.{value.key}",
                                        metric.order), compute))
        cls.present_means = present
        if cls.composite is not None:
            values.insert(0, composite_value(cls.composite, {value.key: f"aggregates.{value.key}" for value in ranked},
                                             cls.__name__))
        cls.ranked = tuple(values)
        if not cls.__dict__.get("leaderboard_name"):
            cls.leaderboard_name = cls.composite.key if cls.composite is not None else ranked[0].key.replace(".", "_")
        if cls.ranking == "case_rank_then_mean" and any(value.over_cases != "mean" for value in ranked):
            raise TypeError(f"{cls.__name__}: case_rank_then_mean averages each case's ranks; its ranked metrics "
                            f"aggregate over cases by the mean")
        if cls.ranking == "case_rank_then_mean" and any(value.none_present == SKIP for value in ranked):
            # a skipped case would be null for one submission and ranked last, not left out
            raise TypeError(f"{cls.__name__}: case_rank_then_mean ranks every case's value; declare a number for "
                            f"none_present, not \"skip\"")

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
        inside a case's entry of metrics.json ("mean_over_labels.dice", "kidney.dice", "groups.WT.dice")."""
        by_key = {metric.key: metric for metric in cls.label_metrics}
        return tuple(Column(value.title or cls._title(by_key[value.metric], value), value.case_path,
                            by_key[value.metric].order) for value in cls.ranked_metrics)

    @classmethod
    def _title(cls, metric: _Metric, value: RankedMetric) -> str:
        unit = (" (mm)" if cls.spacing == "header" else " (voxels)") if metric.unit else ""
        if isinstance(metric, NormalizedSurfaceDice) and not isinstance(metric.tolerance, dict):
            unit = " mm" if cls.spacing == "header" else " voxels"
        one = value.label if value.label is not None else value.group
        if one is not None:
            return f"{one} {metric.name()}{unit}, {value.over_cases} over cases"
        present = "present " if value.over_labels == "present" else ""
        return f"{metric.name()}{unit}, {value.over_cases} over {present}{value.over} and cases"

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
        result = score_label_maps(prediction.prediction, prediction.truth, self.labels, self.label_metrics,
                                  prediction.spacing, groups=self.groups, score_labels=self.score_labels)
        for name, policies in self.present_means.items():
            subjects = self._subjects(AVERAGED[name])
            result.update(present_means(result, subjects, name, policies))
        return result

    def case_entry(self, result: dict[str, float]) -> dict[str, Any]:
        """{label: {metric: value}} and the case's mean over labels, {"groups": {group: {metric:
        value}}} and the mean over groups, and the means over present labels (groups) ranked; null
        (with a note) where a metric's empty policy leaves the value undefined."""
        entry: dict[str, Any] = {}
        if self.score_labels:
            for name in self.labels.values():
                entry[name] = {metric.key: _defined(result[f"{name}/{metric.key}"], metric, name, result)
                               for metric in self.label_metrics}
            entry[MEAN_OVER_LABELS] = {metric.key: _defined(result[metric.key], metric, None, result)
                                       for metric in self.label_metrics}
        if self.groups:
            entry[GROUPS] = {name: {metric.key: _defined(result[f"{GROUPS}/{name}/{metric.key}"], metric,
                                                         f"{GROUPS}/{name}", result)
                                    for metric in self.label_metrics} for name in self.groups}
            mean = mean_name(GROUPS, False)
            entry[mean] = {metric.key: _defined(result[f"{mean}/{metric.key}"], metric, None, result, GROUPS)
                           for metric in self.label_metrics}
        for name, policies in self.present_means.items():
            over = AVERAGED[name]
            entry[name] = {key: result[f"{name}/{key}"] if not math.isnan(result[f"{name}/{key}"]) else Undefined(
                f"no {over[:-1]} is present in this case's truth or prediction: left out of the aggregate over "
                f"cases (none_present \"skip\")") for key in policies}
        return entry

    def report(self, results: dict[str, dict[str, float]]) -> dict[str, Any]:
        ordered = [results[case_id] for case_id in sorted(results)]

        def described(key: str) -> dict[str, Any]:
            summary = describe(np.array([r[key] for r in ordered], dtype=np.float64))
            return {**{DESCRIBED[k]: summary[k] for k in DESCRIBED}, "count": int(summary["count"])}

        def empty_counts(prefix: str) -> dict[str, int]:
            truth = np.array([r[f"{prefix}/truth_voxels"] for r in ordered])
            predicted = np.array([r[f"{prefix}/prediction_voxels"] for r in ordered])
            return {"both_empty": int(np.sum((truth == 0) & (predicted == 0))),
                    "truth_empty": int(np.sum((truth == 0) & (predicted > 0))),
                    "prediction_empty": int(np.sum((truth > 0) & (predicted == 0)))}

        keys = [metric.key for metric in self.label_metrics]
        aggregates: dict[str, Any] = {}
        empty: dict[str, Any] = {}
        if self.score_labels:
            for name in self.labels.values():
                aggregates[name] = {key: described(f"{name}/{key}") for key in keys}
            aggregates[MEAN_OVER_LABELS] = {key: described(key) for key in keys}
            empty = {name: empty_counts(name) for name in self.labels.values()}
        if self.groups:
            aggregates[GROUPS] = {name: {key: described(f"{GROUPS}/{name}/{key}") for key in keys}
                                  for name in self.groups}
            mean = mean_name(GROUPS, False)
            aggregates[mean] = {key: described(f"{mean}/{key}") for key in keys}
            empty[GROUPS] = {name: empty_counts(f"{GROUPS}/{name}") for name in self.groups}
        for name, policies in self.present_means.items():
            aggregates[name] = {key: described(f"{name}/{key}") for key in policies}
        counts: dict[str, Any] = {"cases": len(ordered), "labels": len(self.labels)}
        if self.groups:
            counts[GROUPS] = len(self.groups)
        counts["empty_cases"] = empty
        if self.present_means:
            # the cases where no label (group) of a mean over present ones is in either map
            counts["none_present"] = {name: sum(r[f"{name}/none_present"] for r in ordered)
                                      for name in self.present_means}
        return {"aggregates": aggregates, "counts": counts}

    def score_aggregates(self, results: dict[str, Any]) -> dict[str, Any]:
        """metrics.json; a ranked mean over present labels (groups) that skips the cases with none
        present has no value when every case has none: the test set's fault, SetupError."""
        for value in self.ranked_metrics:
            if value.none_present == SKIP and all(r[f"{value.mean_name}/none_present"] for r in results.values()):
                over = value.over
                raise SetupError(f"No case has a {over[:-1]} present in its ground truth or the prediction: the mean "
                                 f"over present {over} of {value.metric} (ranked: aggregates.{value.key}, none_present "
                                 f"\"skip\") is undefined on this test set.")
        return super().score_aggregates(results)


def _over_cases_skipping(key: str, over_cases: str):
    """The mean (median) over the cases of each case's `key`, the cases where it is NaN (none
    present, none_present "skip") left out; NaN for a row that draws none of the others."""
    def compute(results, weights, _):
        values = case_values(results, key)
        defined = ~np.isnan(values)
        average = weighted_mean if over_cases == "mean" else weighted_median
        return np.atleast_1d(average(values[defined], np.asarray(weights)[:, defined]))
    return compute


def present_means(result: Mapping[str, float], subjects: list[str], name: str,
                  policies: Mapping[str, float | str]) -> dict[str, float]:
    """A case's means over the subjects (result prefixes of labels or groups) present in its truth
    or prediction, one per metric key of `policies`, "<name>/<key>"; a case where none is present
    takes the metric's none_present (a number; NaN for "skip"), and "<name>/none_present" says so."""
    present = np.array([result[f"{s}/truth_voxels"] > 0 or result[f"{s}/prediction_voxels"] > 0 for s in subjects])
    means: dict[str, float] = {f"{name}/none_present": int(not present.any())}
    for key, policy in policies.items():
        values = np.array([result[f"{s}/{key}"] for s in subjects], dtype=np.float64)
        means[f"{name}/{key}"] = float(mean_over_labels(values, present & ~np.isnan(values),
                                                        math.nan if policy == SKIP else policy))
    return means


def _defined(value: float, metric: _Metric, subject: str | None, result: Mapping[str, float],
             over: str = "labels") -> Any:
    """The value, or Undefined naming why (`subject`: a result prefix, "liver" or "groups/WT";
    None: a mean over `over`)."""
    if not math.isnan(value):
        return value
    if subject is None:
        return Undefined(f"{metric.key} is undefined for every {over[:-1]} of this case (its empty policy)")
    truth, predicted = result[f"{subject}/truth_voxels"], result[f"{subject}/prediction_voxels"]
    named = subject.replace(f"{GROUPS}/", "group ")
    if truth and predicted:  # both masks nonempty: undefined by clDice's skeleton_empty
        return Undefined(f"{metric.key} of {named}: a skeleton is empty, which the declaration leaves undefined")
    case = "both_empty" if truth == 0 and predicted == 0 else "truth_empty" if truth == 0 else "prediction_empty"
    return Undefined(f"{metric.key} of {named}: {case.replace('_', ' ')}, which the declaration leaves undefined")


def _widened(box: tuple[slice, ...] | None, shape: tuple[int, ...], margin: int = 1) -> tuple[slice, ...] | None:
    """A label's box of the union widened by `margin` voxels within the image (as
    metrics.overlap.union_box(margin=1)), None if the label is in neither map."""
    if box is None:
        return None
    return tuple(slice(max(0, s.start - margin), min(n, s.stop + margin)) for s, n in zip(box, shape, strict=True))


def _union_of_boxes(boxes: list[tuple[slice, ...] | None]) -> tuple[slice, ...] | None:
    """The box around several labels' boxes (a group's: the box of its union), None if none has one."""
    found = [box for box in boxes if box is not None]
    if not found:
        return None
    return tuple(slice(min(box[axis].start for box in found), max(box[axis].stop for box in found))
                 for axis in range(len(found[0])))


def _with_means(names: list[str], prefix: str, mean_key, counts, per_metric: Mapping[str, list[float]],
                metrics: tuple[Metric, ...]) -> dict[str, float]:
    """The result's entries of some labels (groups): voxel counts, each metric's values and their
    mean (undefined values left out), keyed "<prefix><name>/<key>" and mean_key(metric key)."""
    result: dict[str, Any] = {}
    for index, name in enumerate(names):
        result[f"{prefix}{name}/truth_voxels"] = int(counts.truth_size[index])
        result[f"{prefix}{name}/prediction_voxels"] = int(counts.prediction_size[index])
    for metric in metrics:  # in declaration order
        values = per_metric[metric.key]
        for name, v in zip(names, values, strict=True):
            result[f"{prefix}{name}/{metric.key}"] = v
        array = np.array(values)
        defined = ~np.isnan(array)
        result[mean_key(metric.key)] = float(mean_over_labels(array, None if defined.all() else defined))
    return result


def score_label_maps(prediction: np.ndarray, truth: np.ndarray, labels: Mapping[int, str],
                     metrics: tuple[Metric, ...], spacing: tuple[float, ...] | None,
                     groups: Mapping[str, tuple[int, ...]] | None = None,
                     score_labels: bool = True) -> dict[str, float]:
    """One case's result: {"<label>/<metric>": value, "<metric>": mean over the labels,
    "<label>/truth_voxels", "<label>/prediction_voxels"} (unless score_labels is False), and per
    group of `groups` ({name: label values}) "groups/<group>/<metric>", its voxel counts and
    "mean_over_groups/<metric>"; NaN where a policy leaves a value undefined. One pass over both
    maps for every label's counts and box; per surface variant, each label's distances on its own
    box (those boxes: no second pass); each group's two masks made once, on the box of its labels'
    boxes."""
    from evaluation.metrics.overlap import label_overlap_counts

    counts = label_overlap_counts(prediction, truth, list(labels))
    result: dict[str, Any] = {}
    if score_labels:
        per_metric = _label_values(prediction, truth, labels, metrics, spacing, counts)
        result.update(_with_means(list(labels.values()), "", lambda key: key, counts, per_metric, metrics))
    if groups:
        group_counts, per_metric = _group_values(prediction, truth, counts, groups, metrics, spacing)
        mean = mean_name(GROUPS, False)
        result.update(_with_means(list(groups), f"{GROUPS}/", lambda key: f"{mean}/{key}", group_counts, per_metric,
                                  metrics))
    return result


def _label_values(prediction: np.ndarray, truth: np.ndarray, labels: Mapping[int, str], metrics: tuple[Metric, ...],
                  spacing: tuple[float, ...] | None, counts) -> dict[str, list[float]]:
    """{metric key: one value per label}, NaN where a policy leaves it undefined."""
    from evaluation.metrics.surface import label_surface_distances

    values = list(labels)
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
    return per_metric


def _group_values(prediction: np.ndarray, truth: np.ndarray, counts, groups: Mapping[str, tuple[int, ...]],
                  metrics: tuple[Metric, ...], spacing: tuple[float, ...] | None):
    """(the groups' overlap counts, {metric key: one value per group}): each group's two masks (its
    labels' union in each map) made once, on the box around its labels' boxes (widened by one
    voxel for the topology metrics), and every metric read off them."""
    from evaluation.metrics.overlap import LabelOverlapCounts
    from evaluation.metrics.surface import SurfaceDistances, surface_distances

    spacing = validation.check_spacing(spacing, prediction.ndim)
    image_diagonal = validation.diagonal(prediction.shape, spacing)  # the "diagonal" policy: the whole image's
    position = {value: index for index, value in enumerate(counts.labels.tolist())}
    topology = [metric for metric in metrics if metric.topology]
    variants = list(dict.fromkeys(metric.surface_variant for metric in metrics if metric.surface_variant))
    n = len(groups)
    intersection = np.zeros(n, dtype=np.int64)
    predicted_size = np.zeros(n, dtype=np.int64)
    true_size = np.zeros(n, dtype=np.int64)
    boxes = []
    per_metric: dict[str, list[float]] = {metric.key: [] for metric in metrics
                                          if metric.topology or metric.surface_variant is not None}
    for index, (name, members) in enumerate(groups.items()):
        at = [position[value] for value in members]
        # a voxel holds one label: a group's size is its labels' sizes summed
        predicted_size[index] = counts.prediction_size[at].sum()
        true_size[index] = counts.truth_size[at].sum()
        box = _union_of_boxes([counts.boxes[i] for i in at])
        boxes.append(box)
        if box is None:  # in neither map: two empty masks
            predicted = true = np.zeros((1,) * prediction.ndim, dtype=bool)
        else:
            crop = _widened(box, prediction.shape) if topology else box
            values = np.array(members, dtype=np.int64)
            predicted, true = np.isin(prediction[crop], values), np.isin(truth[crop], values)
            # not from the labels' counts: a voxel of label 1 predicted 2 is in group {1, 2} in both
            intersection[index] = np.count_nonzero(predicted & true)
        for metric in topology:
            per_metric[metric.key].append(float(metric.crop_value(predicted, true)))
        for boundary, connectivity in variants:
            if box is None:
                areas = np.zeros(0) if boundary == "surfels" else None
                found = SurfaceDistances(np.zeros(0), np.zeros(0), areas, areas, image_diagonal)
            else:
                on_crop = surface_distances(predicted, true, spacing, boundary, connectivity)
                found = SurfaceDistances(on_crop.prediction_to_truth, on_crop.truth_to_prediction,
                                         on_crop.prediction_areas, on_crop.truth_areas, image_diagonal)
            for metric in metrics:
                if metric.surface_variant == (boundary, connectivity):
                    per_metric[metric.key].append(float(metric.value(found, name)))
    group_counts = LabelOverlapCounts(labels=np.arange(n, dtype=np.int64), intersection=intersection,
                                      prediction_size=predicted_size, truth_size=true_size, boxes=tuple(boxes))
    for metric in metrics:
        if metric.surface_variant is None and not metric.topology:
            per_metric[metric.key] = [float(v) for v in metric.values(group_counts, None)]
    return group_counts, per_metric


__all__ = ["AverageSurfaceDistance", "BettiError", "ClDice", "Composite", "Dice", "Hausdorff", "IoU", "LabelMapPair",
           "NormalizedSurfaceDice", "RankedMetric", "Segmentation", "SegmentationSettings"]
