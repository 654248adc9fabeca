"""Surface distances of two masks, N-D with anisotropic spacing: arrays in, numbers out.

One intermediate, `surface_distances`: for each surface element of the prediction the distance
to the nearest surface element of the truth, and back (with each element's area for surfels).
The Hausdorff distance (at any percentile), the average surface distance (ASSD/MASD) and the
normalized surface Dice (NSD) at a tolerance are read off it, so one call gives all three.

Surfaces, `boundary`:

- `"voxels"`: the border voxels, mask minus its binary erosion, voxels outside the image counting
  as background (a mask touching the image edge has a border there). `connectivity` is scipy's:
  1 (a voxel with a face-neighbour outside the mask; medpy's, MONAI's and MetricsReloaded's
  default) up to ndim (any of the 8/26 neighbours outside: SimpleITK's fully connected contour).
  Distances are between voxel centres, in the spacing's units. medpy, MONAI (without
  subvoxels), MetricsReloaded and SimpleITK-based code measure these.
- `"surfels"`: DeepMind surface-distance's surface elements, on the grid of 2×2(×2) voxel
  neighbourhoods (voxel corners): a neighbourhood whose voxels are neither all in nor all out of
  the mask is one element, weighted by the area (3D; length in 2D) of its marching-cubes surface
  in the spacing's units. Distances are between neighbourhood centres. 2D and 3D only.

Combining the two directions: the Hausdorff distance takes `combine="max"` (the larger of the two
directed percentiles: MONAI, DeepMind's compute_robust_hausdorff, MetricsReloaded) or `"pooled"`
(the percentile of both directions together: medpy's hd95). Border voxels take numpy's default
(linear) percentile; surfels DeepMind's area-weighted one (the smallest distance whose cumulative
area share, sorted by distance then area, reaches the percentile). The average surface distance
takes `combine="mean"` (the mean of the two directed means: MASD, MetricsReloaded's
measured_masd; with surfels, the mean of DeepMind's two area-weighted averages) or `"pooled"`
(all distances together: ASSD as MetricsReloaded's measured_average_distance, MONAI's symmetric
compute_average_surface_distance and medpy 0.5's assd compute it).

The tie rule at the tolerance, one for every boundary: a distance d is within τ when
d² ≤ τ² (1 + 1e-9). Distances on a regular grid often equal τ exactly (1.3% of them in a test of
0.2 mm pixels at τ = 2 mm), and their float rounding must not decide: with this rule a distance
equal to τ always counts, also when τ is the rounded decimal of an irrational distance
(τ = 2.2360679775 counts √5), while any distance 1e-9 beyond τ does not. DeepMind's and
MetricsReloaded's `d <= τ` on rounded distances can differ from it exactly there.

Speed and memory: both masks are cropped to the bounding box of their union (every surface
element lies inside it, so the distances are exact without a margin) and the surfaces extracted on
the crop. Each element then looks for the nearest element of the other surface in the cells
around it, nearest first (two similar surfaces: almost all are found there); those left take a
KD-tree of the other surface's points, or the crop's exact Euclidean distance transform when many
are left. Every way recomputes the length from the integer offset to the nearest element, as
scipy's distance transform computes it: the same bits whichever way was taken. Per label,
`label_surface_distances` crops each label to its own box, all boxes from one pass over the
label maps.

Empty masks follow the library's empty rule (evaluation.metrics): both empty is the best value
(distances 0, NSD 1); one empty gives NaN for distances (nothing to measure to) and 0 for the
NSD; each case is a parameter taking a number, NaN, or for distances "diagonal".
"""

from __future__ import annotations

import itertools
import math
from dataclasses import InitVar, dataclass
from functools import lru_cache

import numpy as np

from evaluation.machine import load_scipy
from evaluation.metrics import validation
from evaluation.metrics.overlap import LabelOverlapCounts, label_overlap_counts, union_box
from evaluation.metrics.registry import metric

RELATIVE_TIE_TOLERANCE = 1e-9  # d is within τ when d² <= τ² (1 + 1e-9): a distance equal to τ counts
BOUNDARIES = ("voxels", "surfels")
EMPTY_DISTANCE = {"both_empty": 0.0, "truth_empty": math.nan, "prediction_empty": math.nan}
EMPTY_NSD = {"both_empty": 1.0, "truth_empty": 0.0, "prediction_empty": 0.0}
# Finding each surface element's nearest element of the other surface (_nearest_distances):
# first the cells up to LOCAL_RADIUS_IN_VOXELS voxels (of the largest spacing) around it, nearest
# first, while that costs at most LOOKUP_BUDGET lookups per cell of the grid; those left take a
# KD-tree searching FAR_BOUND_IN_VOXELS voxels far first (at most FAR_QUERIES found nothing there
# are searched again without a bound), or the distance transform of the whole crop when more than
# KD_TREE_SHARE of its cells are left or found nothing (measured on organs, noise and far planes).
LOCAL_RADIUS_IN_VOXELS = 2
LOOKUP_BUDGET = 2
FAR_BOUND_IN_VOXELS = 12
FAR_QUERIES = 4096
KD_TREE_SHARE = 1 / 16
# 2D NSD: within τ is membership in the other surface dilated by the disk of offsets within τ
# (OpenCV, much faster than nearest distances for small disks), up to this many offsets.
LARGEST_DILATION = 41 * 41

# The marching-cubes surface of a 2×2×2 neighbourhood, as triangles. Each code (bit 2^(7 − (4a +
# 2b + c)) set when the voxel at corner offset (a, b, c) is in the mask, DeepMind's encoding)
# lists how many triangles of each of nine kinds it has; a kind is the absolute area vector of
# the triangle, in eighths of a unit cube's face, on unit voxels. Its area at spacing (s0, s1, s2)
# is the norm of (v0 s1 s2, v1 s0 s2, v2 s0 s1) / 8. Derived from scikit-image's
# marching_cubes(method="lorensen") on each neighbourhood (a code with more than four voxels in
# takes its complement's triangles); tests/test_surface_peers.py rebuilds it from there and
# checks the areas against DeepMind's table at several spacings.
_TRIANGLE_KINDS = ((1, 1, 1), (2, 2, 2), (3, 3, 3), (2, 2, 0), (2, 0, 2), (0, 2, 2), (4, 0, 0), (0, 4, 0), (0, 0, 4))
_TRIANGLES_OF_CODE = (
    "000000000", "100000000", "100000000", "000200000", "100000000", "000020000", "200000000", "110000100",
    "100000000", "200000000", "000020000", "110000100", "000200000", "110000100", "110000100", "000000200",
    "100000000", "000002000", "200000000", "110000010", "200000000", "110000001", "300000000", "220000000",
    "200000000", "100002000", "100020000", "101011000", "100200000", "101101000", "210000100", "110000100",
    "100000000", "200000000", "000002000", "110000010", "200000000", "100020000", "100002000", "101011000",
    "200000000", "300000000", "110000001", "220000000", "100200000", "210000100", "101101000", "110000100",
    "000200000", "110000010", "110000010", "000000020", "100200000", "101110000", "210000010", "110000010",
    "100200000", "210000010", "101110000", "110000010", "000400000", "100200000", "100200000", "000200000",
    "100000000", "200000000", "200000000", "100200000", "000002000", "110000001", "100002000", "101101000",
    "200000000", "300000000", "100020000", "210000100", "110000010", "220000000", "101011000", "110000100",
    "000020000", "110000001", "100020000", "101110000", "110000001", "000000002", "210000001", "110000001",
    "100020000", "210000001", "000040000", "100020000", "101110000", "110000001", "100020000", "000020000",
    "200000000", "300000000", "100002000", "210000010", "100002000", "210000001", "000004000", "100002000",
    "300000000", "400000000", "210000001", "300000000", "210000010", "300000000", "100002000", "200000000",
    "110000100", "220000000", "101011000", "110000010", "101101000", "110000001", "100002000", "000002000",
    "210000100", "300000000", "100020000", "200000000", "100200000", "200000000", "200000000", "100000000",
    "100000000", "200000000", "200000000", "100200000", "200000000", "100020000", "300000000", "210000100",
    "000002000", "100002000", "110000001", "101101000", "110000010", "101011000", "220000000", "110000100",
    "200000000", "100002000", "300000000", "210000010", "300000000", "210000001", "400000000", "300000000",
    "100002000", "000004000", "210000001", "100002000", "210000010", "100002000", "300000000", "200000000",
    "000020000", "100020000", "110000001", "101110000", "100020000", "000040000", "210000001", "100020000",
    "110000001", "210000001", "000000002", "110000001", "101110000", "100020000", "110000001", "000020000",
    "110000100", "101011000", "220000000", "110000010", "210000100", "100020000", "300000000", "200000000",
    "101101000", "100002000", "110000001", "000002000", "100200000", "200000000", "200000000", "100000000",
    "000200000", "100200000", "100200000", "000400000", "110000010", "101110000", "210000010", "100200000",
    "110000010", "210000010", "101110000", "100200000", "000000020", "110000010", "110000010", "000200000",
    "110000100", "101101000", "210000100", "100200000", "220000000", "110000001", "300000000", "200000000",
    "101011000", "100002000", "100020000", "200000000", "110000010", "000002000", "200000000", "100000000",
    "110000100", "210000100", "101101000", "100200000", "101011000", "100020000", "100002000", "200000000",
    "220000000", "300000000", "110000001", "200000000", "110000010", "200000000", "000002000", "100000000",
    "000000200", "110000100", "110000100", "000200000", "110000100", "000020000", "200000000", "100000000",
    "110000100", "200000000", "000020000", "100000000", "000200000", "100000000", "100000000", "000000000",
)


@lru_cache(maxsize=32)
def surfel_areas(spacing: tuple[float, ...]) -> np.ndarray:
    """The surface element's area (3D) or contour length (2D) of every neighbour code, in the
    spacing's units: an array of 256 (3D) or 16 (2D) values, read-only (it is shared)."""
    if len(spacing) == 3:
        s0, s1, s2 = spacing
        scale = np.array([s1 * s2, s0 * s2, s0 * s1]) / 8.0
        kind_areas = np.array([math.sqrt(float(np.sum((np.array(kind) * scale) ** 2))) for kind in _TRIANGLE_KINDS])
        counts = np.array([[int(digit) for digit in code] for code in _TRIANGLES_OF_CODE], dtype=np.float64)
        areas = counts @ kind_areas
    elif len(spacing) == 2:
        # Marching squares: the contour crosses each side whose two pixels differ, at its middle.
        s0, s1 = spacing
        half_diagonal = 0.5 * math.hypot(s0, s1)
        areas = np.zeros(16)
        for code in range(1, 15):
            inside = [(a, b) for a in (0, 1) for b in (0, 1) if code & (8 >> (2 * a + b))]
            if len(inside) != 2:
                areas[code] = half_diagonal  # one corner cut off (one pixel in, or one out)
            elif inside[0][0] == inside[1][0]:
                areas[code] = s1  # a row in: the contour runs along axis 1
            elif inside[0][1] == inside[1][1]:
                areas[code] = s0  # a column in: along axis 0
            else:
                areas[code] = 2 * half_diagonal  # two opposite corners: two cut-off corners
    else:
        raise ValueError(f'boundary="surfels" is defined in 2D and 3D, got {len(spacing)}D masks')
    areas.flags.writeable = False
    return areas


@dataclass(frozen=True)
class SurfaceDistances:
    """The surface distances of two masks in both directions (result of `surface_distances`).

    `prediction_to_truth[i]` is the distance from the prediction's i-th surface element to the
    nearest element of the truth's surface (inf when the truth is empty), `truth_to_prediction`
    the same the other way; with `boundary="surfels"`, `prediction_areas` and `truth_areas` hold
    each element's area (None for border voxels, which count once each). Elements are in the
    C order of their positions. The methods compute the metrics of this module from it, with the
    same parameters and empty policies as the functions of the same names."""

    prediction_to_truth: np.ndarray
    truth_to_prediction: np.ndarray
    prediction_areas: np.ndarray | None = None
    truth_areas: np.ndarray | None = None
    image_diagonal: InitVar[float] = math.nan  # for the "diagonal" empty policy: not a result

    def __post_init__(self, image_diagonal: float) -> None:
        object.__setattr__(self, "diagonal", float(image_diagonal))

    @property
    def empty_case(self) -> str | None:
        """"both_empty", "truth_empty", "prediction_empty", or None when both masks have a surface."""
        prediction_empty, truth_empty = self.prediction_to_truth.size == 0, self.truth_to_prediction.size == 0
        if prediction_empty and truth_empty:
            return "both_empty"
        return "truth_empty" if truth_empty else "prediction_empty" if prediction_empty else None

    def _empty_value(self, both_empty, truth_empty, prediction_empty, allow_diagonal: bool) -> float | None:
        """The policy's value of this empty case (checked), None when both masks have a surface."""
        policy = validation.check_empty_policy(both_empty, truth_empty, prediction_empty, allow_diagonal=allow_diagonal)
        case = self.empty_case
        if case is None:
            return None
        return self.diagonal if policy[case] == validation.DIAGONAL else float(policy[case])

    def hausdorff_distance(self, percentile: float = 100, combine: str = "max", both_empty=0.0,
                           truth_empty=math.nan, prediction_empty=math.nan) -> float:
        """The Hausdorff distance at `percentile` (see the function hausdorff_distance)."""
        percentile = validation.check_in_range(percentile, "percentile", 0, 100)
        validation.check_choice(combine, "combine", ("max", "pooled"))
        empty = self._empty_value(both_empty, truth_empty, prediction_empty, allow_diagonal=True)
        if empty is not None:
            return empty
        if combine == "pooled":
            pairs = [(np.concatenate([self.prediction_to_truth, self.truth_to_prediction]),
                      None if self.prediction_areas is None else
                      np.concatenate([self.prediction_areas, self.truth_areas]))]
        else:
            pairs = [(self.prediction_to_truth, self.prediction_areas), (self.truth_to_prediction, self.truth_areas)]
        return max(_percentile(distances, areas, percentile) for distances, areas in pairs)

    def average_surface_distance(self, combine: str = "mean", both_empty=0.0, truth_empty=math.nan,
                                 prediction_empty=math.nan) -> float:
        """The average surface distance (see the function average_surface_distance)."""
        validation.check_choice(combine, "combine", ("mean", "pooled"))
        empty = self._empty_value(both_empty, truth_empty, prediction_empty, allow_diagonal=True)
        if empty is not None:
            return empty
        sums = [_weighted_sum(self.prediction_to_truth, self.prediction_areas),
                _weighted_sum(self.truth_to_prediction, self.truth_areas)]
        sizes = [_weighted_sum(None, self.prediction_areas, len(self.prediction_to_truth)),
                 _weighted_sum(None, self.truth_areas, len(self.truth_to_prediction))]
        if combine == "pooled":
            return float((sums[0] + sums[1]) / (sizes[0] + sizes[1]))
        return float(0.5 * (sums[0] / sizes[0] + sums[1] / sizes[1]))

    def normalized_surface_dice(self, tolerance: float, both_empty=1.0, truth_empty=0.0,
                                prediction_empty=0.0) -> float:
        """The normalized surface Dice at `tolerance` (see the function normalized_surface_dice)."""
        limit = squared_tolerance(tolerance)
        empty = self._empty_value(both_empty, truth_empty, prediction_empty, allow_diagonal=False)
        if empty is not None:
            return empty
        return _surface_dice(self.prediction_to_truth ** 2 <= limit, self.prediction_areas,
                             self.truth_to_prediction ** 2 <= limit, self.truth_areas)


def _surface_dice(prediction_within: np.ndarray, prediction_areas: np.ndarray | None, truth_within: np.ndarray,
                  truth_areas: np.ndarray | None) -> float:
    """(elements within τ of the other surface, counted or by area) / (all elements of both)."""
    if prediction_areas is None:
        near = np.count_nonzero(prediction_within) + np.count_nonzero(truth_within)
        return float(near / (len(prediction_within) + len(truth_within)))
    near = float(np.sum(prediction_areas[prediction_within])) + float(np.sum(truth_areas[truth_within]))
    return float(near / (float(np.sum(prediction_areas)) + float(np.sum(truth_areas))))


def squared_tolerance(tolerance: float) -> float:
    """τ² (1 + 1e-9): a distance d is within τ when d² is at most this (the module's tie rule)."""
    tolerance = validation.check_nonnegative(tolerance, "tolerance")
    return tolerance * tolerance * (1.0 + RELATIVE_TIE_TOLERANCE)


def _weighted_sum(values, areas, count: int = 0) -> float:
    """Σ values × areas; Σ values without areas; Σ areas without values, or `count` without either."""
    if values is None:
        return float(np.sum(areas)) if areas is not None else float(count)
    return float(np.sum(values * areas)) if areas is not None else float(np.sum(values))


def _percentile(distances: np.ndarray, areas: np.ndarray | None, percentile: float) -> float:
    """numpy's linear percentile of border-voxel distances; DeepMind's area-weighted one of
    surfels: sorted by (distance, area), the first distance whose cumulative area share reaches
    percentile / 100."""
    if areas is None:
        return float(np.percentile(distances, percentile))
    order = np.lexsort((areas, distances))
    sorted_distances, sorted_areas = distances[order], areas[order]
    shares = np.cumsum(sorted_areas) / np.sum(sorted_areas)
    index = int(np.searchsorted(shares, percentile / 100.0))
    return float(sorted_distances[min(index, len(sorted_distances) - 1)])


# ---- surfaces ------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)  # one entry per mask shape: a few hundred bytes each
def _neighbour_views(shape: tuple[int, ...], connectivity: int) -> tuple[tuple[slice, ...], ...]:
    """For each neighbour of a voxel at scipy's `connectivity` (offsets in {-1, 0, 1}^ndim with 1
    to `connectivity` nonzero components), the slices that shift the image's inner part (one voxel
    in from every edge) onto that neighbour."""
    return tuple(tuple(slice(1 + o, n - 1 + o) for o, n in zip(offset, shape, strict=True))
                 for offset in itertools.product((-1, 0, 1), repeat=len(shape))
                 if 0 < sum(map(abs, offset)) <= connectivity)


def border_voxels(mask: np.ndarray, connectivity: int = 1) -> np.ndarray:
    """The voxels of a boolean mask with a neighbour (at scipy's `connectivity`) outside the mask
    or outside the image: mask minus its binary erosion with background outside the image."""
    # Voxels on the image's edge have a neighbour outside: never interior. The others are
    # interior when all their neighbours are in the mask (and themselves: the mask's copy below
    # keeps only voxels of the mask, so the voxel itself needs no term).
    result = mask.copy()
    if min(mask.shape) < 3:
        return result
    first, second, *others = _neighbour_views(mask.shape, connectivity)
    interior = mask[first] & mask[second]
    for view in others:
        interior &= mask[view]
    result[tuple(slice(1, n - 1) for n in mask.shape)] &= np.logical_not(interior, out=interior)
    return result


def neighbour_codes(mask: np.ndarray) -> np.ndarray:
    """DeepMind's neighbour code of every 2×2(×2) neighbourhood touching a 2D/3D boolean mask:
    an array one longer than the mask on each axis, cell i covering voxels i − 1 and i (outside
    the image is background); bit 2^(2^ndim − 1 − k) is set when the k-th corner (C order) is in.

    Built one axis at a time, last axis first: pairs of neighbours along an axis make a code of
    twice the bits (the first neighbour's the higher ones), three passes instead of eight."""
    codes = np.pad(mask, 1).view(np.uint8)
    bits = 1
    for axis in reversed(range(mask.ndim)):
        first = codes[(slice(None),) * axis + (slice(None, -1),)]
        second = codes[(slice(None),) * axis + (slice(1, None),)]
        codes = first << np.uint8(bits)
        codes |= second
        bits *= 2
    return codes


def _surface(mask: np.ndarray, boundary: str, connectivity: int,
             spacing: tuple) -> tuple[np.ndarray, np.ndarray | None]:
    """(boolean grid of surface elements, areas of the elements in C order or None)."""
    if boundary == "voxels":
        return border_voxels(mask, connectivity), None
    codes = neighbour_codes(mask)
    full = (1 << (1 << mask.ndim)) - 1
    elements = (codes != 0) & (codes != full)
    return elements, surfel_areas(spacing)[codes[elements]]


def _lengths(offsets, spacing: np.ndarray) -> np.ndarray:
    """Euclidean lengths of integer offsets in the spacing's units, as scipy's
    distance_transform_edt computes them (offset × spacing, squared, summed in axis order).
    `offsets`: an (n, ndim) array, or one array of n offsets per axis (an iterable)."""
    columns = offsets.T if isinstance(offsets, np.ndarray) else offsets
    squares = None
    for axis, column in enumerate(columns):
        component = column.astype(np.float64) * spacing[axis]
        component *= component
        squares = component if squares is None else squares + component
    return np.sqrt(squares)


def _nearest_distances(source: np.ndarray, target: np.ndarray, spacing: np.ndarray,
                       method: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """Distances from each element of `source` to the nearest of `target` and back (boolean grids
    of one shape, elements in C order); inf for every element when the other grid is empty.

    "auto": each element first looks at the grid cells around it, nearest first, up to two
    voxels (of the largest spacing) away: most elements of two similar surfaces find their
    nearest there at once. Those left take a KD-tree of the other surface's points, or, when
    many are left (surfaces far apart, or dense like noise), the exact Euclidean distance
    transform of the grid, whose cost does not depend on the distances. "tree" and "transform"
    force one way (tests: every way gives the same bits, each length recomputed from the integer
    offset to the nearest element as scipy's distance transform computes it)."""
    n_source, n_target = np.count_nonzero(source), np.count_nonzero(target)
    if n_source == 0 or n_target == 0:
        return np.full(n_source, np.inf), np.full(n_target, np.inf)
    if method == "transform":
        return (_distances_by_transform(np.flatnonzero(source), target, spacing),
                _distances_by_transform(np.flatnonzero(target), source, spacing))
    if method == "tree":
        return (_distances_by_tree(np.flatnonzero(source), target, spacing, bounded=False),
                _distances_by_tree(np.flatnonzero(target), source, spacing, bounded=False))
    offsets, lengths = _local_offsets(tuple(float(s) for s in spacing), LOCAL_RADIUS_IN_VOXELS * float(max(spacing)))
    padding = [(int(r), int(r)) for r in np.abs(offsets).max(axis=0)]
    padded_source, padded_target = np.pad(source, padding), np.pad(target, padding)  # no lookup leaves them
    return (_distances_by_lookup(padded_source, padded_target, offsets, lengths, spacing),
            _distances_by_lookup(padded_target, padded_source, offsets, lengths, spacing))


@lru_cache(maxsize=32)
def _local_offsets(spacing: tuple[float, ...], radius: float) -> tuple[np.ndarray, np.ndarray]:
    """The integer offsets whose length (as `_lengths` computes it) is at most `radius`, sorted by
    length (then in C order), and their lengths; read-only (they are shared)."""
    reach = [int(radius / s) for s in spacing]
    offsets = np.indices([2 * r + 1 for r in reach]).reshape(len(spacing), -1).T - np.array(reach)
    lengths = _lengths(offsets, np.asarray(spacing))
    keep = lengths <= radius
    offsets, lengths = offsets[keep], lengths[keep]
    order = np.lexsort((*offsets.T[::-1], lengths))
    offsets, lengths = offsets[order], lengths[order]
    offsets.flags.writeable = lengths.flags.writeable = False
    return offsets, lengths


def _distances_by_lookup(source: np.ndarray, target: np.ndarray, offsets: np.ndarray, lengths: np.ndarray,
                         spacing: np.ndarray) -> np.ndarray:
    """For each element of `source`, the distance to the nearest of `target` (grids padded so that
    no offset leaves them): the first offset, shortest first, at which the target has an element
    is the nearest. Elements with none within the offsets' radius, or all of them once looking
    around would cost more lookups than LOOKUP_BUDGET per cell, are measured by `_far_distances`."""
    strides = _strides(source.shape)
    flat_target = target.reshape(-1)
    elements = np.flatnonzero(source)
    if len(elements) > KD_TREE_SHARE * source.size:  # dense (noise): the distance transform at once
        return _distances_by_transform(elements, target, spacing)
    distances = np.empty(len(elements))
    unresolved = np.arange(len(elements))
    budget = LOOKUP_BUDGET * source.size
    for offset, length in zip(offsets.tolist(), lengths.tolist(), strict=True):
        budget -= unresolved.size
        if budget < 0:
            break
        hit = flat_target[elements[unresolved] + int(np.dot(offset, strides))]
        distances[unresolved[hit]] = length
        unresolved = unresolved[~hit]
        if unresolved.size == 0:
            return distances
    if unresolved.size == len(elements):
        del distances, unresolved
        return _far_distances(elements, source, target, spacing)
    distances[unresolved] = _far_distances(elements[unresolved], source, target, spacing)
    return distances


def _strides(shape: tuple[int, ...]) -> np.ndarray:
    """C-order strides of a shape, in elements."""
    return np.array([math.prod(shape[axis + 1:]) for axis in range(len(shape))], dtype=np.int64)


def _coordinates(elements: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """(n, ndim) coordinates of flat C-order indices."""
    return np.stack(np.unravel_index(elements, shape), axis=1)


def _far_distances(elements: np.ndarray, source: np.ndarray, target: np.ndarray, spacing: np.ndarray) -> np.ndarray:
    """Distances from source `elements` (flat indices) to the nearest target element, when that is
    far: a KD-tree of the target's points for few of them, the distance transform of the grid for
    many (a KD-tree search for a far neighbour is slow: a surface far from a plane of points
    visits much of the plane)."""
    if len(elements) > KD_TREE_SHARE * source.size:
        return _distances_by_transform(elements, target, spacing)
    return _distances_by_tree(elements, target, spacing, bounded=True)


def _mostly_far(tree, points: np.ndarray, spacing: np.ndarray, bound: float, n_target: int) -> bool:
    """Whether more than FAR_QUERIES of `points` would find nothing within the bound, judged on
    an evenly spaced sample of 256 (a bounded search for a far point is itself slow)."""
    if len(points) <= FAR_QUERIES:
        return False
    sample = points[:: max(1, len(points) // 256)]
    _, index = tree.query(sample * spacing, distance_upper_bound=bound, workers=-1)
    return np.mean(index == n_target) * len(points) > FAR_QUERIES


def _distances_by_tree(elements: np.ndarray, target: np.ndarray, spacing: np.ndarray, bounded: bool) -> np.ndarray:
    """By a KD-tree of the target's points: within a bound first, then without for at most
    FAR_QUERIES points that found nothing within it (more: the distance transform)."""
    load_scipy()  # SciPy's OpenBLAS calls exit(1) when it cannot map its buffer: a MemoryError first
    from scipy.spatial import cKDTree  # imported here: challenges without surfaces never pay for it

    points, target_points = _coordinates(elements, target.shape), np.argwhere(target)
    # Unbalanced, uncompacted: built several times faster, queried as fast on surfaces.
    tree = cKDTree(target_points * spacing, balanced_tree=False, compact_nodes=False)
    bound = FAR_BOUND_IN_VOXELS * float(np.max(spacing)) if bounded else np.inf
    if bounded and _mostly_far(tree, points, spacing, bound, len(target_points)):
        return _distances_by_transform(elements, target, spacing)
    _, index = tree.query(points * spacing, distance_upper_bound=bound, workers=-1)
    far = np.flatnonzero(index == len(target_points))
    if len(far) > FAR_QUERIES:
        return _distances_by_transform(elements, target, spacing)
    if len(far):
        _, index[far] = tree.query(points[far] * spacing, workers=-1)
    return _lengths(points - target_points[index], spacing)


def _distances_by_transform(elements: np.ndarray, target: np.ndarray, spacing: np.ndarray) -> np.ndarray:
    """For `elements` (flat indices into the grid), the distance to the nearest element of
    `target`, from the exact Euclidean distance transform's nearest-element indices."""
    from scipy import ndimage

    features = ndimage.distance_transform_edt(~target, sampling=spacing, return_distances=False,
                                              return_indices=True)
    for axis, n in enumerate(target.shape):  # nearest element's index - own index: the offset, in place
        features[axis] -= np.arange(n, dtype=features.dtype).reshape((n,) + (1,) * (target.ndim - axis - 1))
    return _lengths((features[axis].reshape(-1)[elements] for axis in range(target.ndim)), spacing)


def _distances_of_crops(prediction: np.ndarray, truth: np.ndarray, spacing: np.ndarray, boundary: str,
                        connectivity: int, image_diagonal: float, method: str = "auto") -> SurfaceDistances:
    key = tuple(spacing.tolist())  # floats: the kernel cache's key
    prediction_surface, prediction_areas = _surface(prediction, boundary, connectivity, key)
    truth_surface, truth_areas = _surface(truth, boundary, connectivity, key)
    to_truth, to_prediction = _nearest_distances(prediction_surface, truth_surface, spacing, method)
    return SurfaceDistances(to_truth, to_prediction, prediction_areas, truth_areas, image_diagonal)


def _check_surface_arguments(prediction, truth, spacing, boundary, connectivity):
    """Validated (prediction, truth, spacing, boundary, connectivity); masks keep their dtype."""
    prediction, truth = validation.check_masks(prediction, truth, min_ndim=1, keep_dtype=True)
    return (prediction, truth, *_check_geometry(prediction.ndim, spacing, boundary, connectivity))


def _check_geometry(ndim: int, spacing, boundary, connectivity) -> tuple[np.ndarray, str, int]:
    spacing = validation.check_spacing(spacing, ndim)
    validation.check_choice(boundary, "boundary", BOUNDARIES)
    if boundary == "surfels":
        if ndim not in (2, 3):
            raise ValueError(f'boundary="surfels" is defined in 2D and 3D, got {ndim}D masks')
        if connectivity != 1:
            raise ValueError(f'connectivity applies to boundary="voxels" only, got {connectivity!r} with surfels')
    return spacing, boundary, validation.check_integer(connectivity, "connectivity", 1, ndim)


def _no_surfaces(boundary: str, image_diagonal: float) -> SurfaceDistances:
    areas = np.zeros(0) if boundary == "surfels" else None
    return SurfaceDistances(np.zeros(0), np.zeros(0), areas, areas, image_diagonal)


# ---- the public functions ------------------------------------------------------------------------

_VARIANTS = {
    "boundary": '"voxels": border voxels, distances between voxel centres (medpy, MONAI, MetricsReloaded, '
                'SimpleITK); "surfels": DeepMind surface-distance\'s area-weighted surface elements',
    "connectivity": "voxels only: 1 (face neighbours, medpy's default) to ndim (all 8/26 neighbours)",
}
_DISTANCE_PEERS_VOXELS = "border voxels, connectivity 1"


@metric(kind="masks", better=None, unit="length", returns="SurfaceDistances", variants=_VARIANTS,
        equals=("medpy.metric.binary.__surface_distances (boundary='voxels')",
                "surface_distance.compute_surface_distances (boundary='surfels')",
                "MetricsReloaded border_distance (boundary='voxels', connectivity=1)"),
        citation="Nikolov et al., J Med Internet Res 23(7):e26151, 2021 (surfels); Heimann et al., "
                 "IEEE TMI 28(8), 2009 (border voxels)")
def surface_distances(prediction: np.ndarray, truth: np.ndarray, spacing=None, boundary: str = "voxels",
                      connectivity: int = 1) -> SurfaceDistances:
    """Both directed surface distance sets of two masks (and surfel areas), from which every surface metric is read.

    For each surface element of the prediction, the distance to the nearest surface element of
    the truth, and back, in the spacing's units (a SurfaceDistances; its methods give the
    Hausdorff distance, the average surface distance and the NSD of this module without
    recomputing). `boundary` chooses the surface: "voxels" (border voxels at `connectivity`) or
    "surfels" (DeepMind's surface elements with their areas); see the module docstring.
    """
    return _checked_surface_distances(*_check_surface_arguments(prediction, truth, spacing, boundary, connectivity))


def _checked_surface_distances(prediction: np.ndarray, truth: np.ndarray, spacing: np.ndarray, boundary: str,
                               connectivity: int) -> SurfaceDistances:
    """surface_distances of arguments _check_surface_arguments has checked: on the masks' union box."""
    image_diagonal = validation.diagonal(prediction.shape, spacing)
    box = union_box(prediction, truth)
    if box is None:
        return _no_surfaces(boundary, image_diagonal)
    return _distances_of_crops(*_boolean_crops(prediction, truth, box), spacing, boundary, connectivity,
                               image_diagonal)


def _boolean_crops(prediction: np.ndarray, truth: np.ndarray, box: tuple[slice, ...]) -> list[np.ndarray]:
    """Both checked masks cut to `box`, as booleans (nonzero is foreground; NaN was refused already)."""
    return [crop if crop.dtype == bool else crop != 0 for crop in (prediction[box], truth[box])]


@metric(kind="label_maps", better=None, unit="length", returns="dict of SurfaceDistances", variants=_VARIANTS,
        equals=("surface_distances of each label's masks (prediction == label, truth == label)",),
        citation="Nikolov et al., J Med Internet Res 23(7):e26151, 2021; Heimann et al., IEEE TMI 28(8), 2009")
def label_surface_distances(prediction: np.ndarray, truth: np.ndarray, labels, spacing=None,
                            boundary: str = "voxels", connectivity: int = 1,
                            counts: LabelOverlapCounts | None = None) -> dict[int, SurfaceDistances]:
    """Every label's surface distances (label → SurfaceDistances), each label's work on its own crop.

    Equal to surface_distances(prediction == l, truth == l, ...) for each label l of `labels`.
    The labels' bounding boxes come from one pass over the two label maps
    (overlap.label_overlap_counts); each label's surfaces and distances are then computed on its
    box only, so five labels cost five crops, not five passes over the volume. A label in neither
    map has no surfaces (its metrics take the both_empty policy). `counts`: the
    label_overlap_counts of these two maps and labels when the caller has it already (for the
    overlap metrics): its boxes are used and the pass is not made again.
    """
    prediction, truth = np.asarray(prediction), np.asarray(truth)
    spacing, boundary, connectivity = _check_geometry(prediction.ndim, spacing, boundary, connectivity)
    if counts is None:
        counts = label_overlap_counts(prediction, truth, labels)  # checked first: before the pass over the volume
    else:
        validation.check_label_maps(prediction, truth)
        if not np.array_equal(counts.labels, validation.check_labels(labels)) or any(
                box is not None and len(box) != prediction.ndim for box in counts.boxes):
            raise ValueError("counts must be the label_overlap_counts of these label maps and labels")
    image_diagonal = validation.diagonal(prediction.shape, spacing)
    result = {}
    for label, box in zip(counts.labels.tolist(), counts.boxes, strict=True):
        if box is None:
            result[label] = _no_surfaces(boundary, image_diagonal)
        else:
            result[label] = _distances_of_crops(prediction[box] == label, truth[box] == label, spacing, boundary,
                                                connectivity, image_diagonal)
    return result


@metric(kind="masks", better="lower", unit="length", symmetric=True, empty=EMPTY_DISTANCE,
        variants={**_VARIANTS, "percentile": "100: the Hausdorff distance; 95: HD95 (any value in [0, 100])",
                  "combine": '"max": the larger of the two directed percentiles (MONAI, DeepMind, MetricsReloaded); '
                             '"pooled": the percentile of both directions together (medpy\'s hd95)'},
        equals=("medpy.metric.binary.hd and hd95 (boundary='voxels', combine='pooled')",
                "MONAI compute_hausdorff_distance (boundary='voxels', combine='max'; float32)",
                "MetricsReloaded measured_hausdorff_distance(_perc) (boundary='voxels', combine='max')",
                "surface_distance.compute_robust_hausdorff (boundary='surfels', combine='max')"),
        citation="Huttenlocher, Klanderman and Rucklidge, IEEE TPAMI 15(9), 1993",
        example={"percentile": 95})
def hausdorff_distance(prediction: np.ndarray, truth: np.ndarray, spacing=None, percentile: float = 100,
                       boundary: str = "voxels", connectivity: int = 1, combine: str = "max", both_empty=0.0,
                       truth_empty=math.nan, prediction_empty=math.nan) -> float:
    """Hausdorff distance of two masks' surfaces at a percentile (100: HD, 95: HD95), in the spacing's units.

    With combine="max", the larger of the two directed distances' percentiles: the `percentile`-th
    percentile of the distances from the prediction's surface to the truth's, and of the truth's
    to the prediction's; with "pooled", the percentile of both sets together. Border voxels take
    numpy's linear percentile, surfels DeepMind's area-weighted one. Empty masks: `both_empty`
    (0.0), `truth_empty` and `prediction_empty` (NaN: undefined), each a number, NaN or "diagonal".
    """
    prediction, truth, spacing, boundary, connectivity = _check_surface_arguments(
        prediction, truth, spacing, boundary, connectivity)
    validation.check_in_range(percentile, "percentile", 0, 100)
    validation.check_choice(combine, "combine", ("max", "pooled"))
    validation.check_empty_policy(both_empty, truth_empty, prediction_empty, allow_diagonal=True)
    distances = _checked_surface_distances(prediction, truth, spacing, boundary, connectivity)
    return distances.hausdorff_distance(percentile, combine, both_empty, truth_empty, prediction_empty)


@metric(kind="masks", better="lower", unit="length", symmetric=True, empty=EMPTY_DISTANCE,
        variants={**_VARIANTS, "combine": '"mean": the mean of the two directed means (MASD); "pooled": the mean '
                                          'of all distances of both directions (ASSD)'},
        equals=("medpy.metric.binary.assd 0.5 (boundary='voxels', combine='pooled'; medpy 0.4's was 'mean')",
                "MONAI compute_average_surface_distance(symmetric=True) (boundary='voxels', combine='pooled'; "
                "float32)",
                "MetricsReloaded measured_masd / measured_average_distance (boundary='voxels', combine='mean' / "
                "'pooled')",
                "the mean of surface_distance.compute_average_surface_distance (boundary='surfels', combine='mean')"),
        citation="Heimann et al., IEEE TMI 28(8), 2009 (ASSD); Beneš and Zitová, J Microscopy 257(1), 2015 (MASD)")
def average_surface_distance(prediction: np.ndarray, truth: np.ndarray, spacing=None, boundary: str = "voxels",
                             connectivity: int = 1, combine: str = "mean", both_empty=0.0, truth_empty=math.nan,
                             prediction_empty=math.nan) -> float:
    """Average surface distance of two masks (MASD or ASSD), in the spacing's units.

    With combine="mean" (MASD), ½ (mean distance from the prediction's surface to the truth's +
    mean distance from the truth's to the prediction's); with "pooled" (ASSD), the sum of both
    directions' distances over the number of surface elements of both. Surfels weight each
    distance by its element's area. Empty masks: `both_empty` (0.0), `truth_empty` and
    `prediction_empty` (NaN: undefined), each a number, NaN or "diagonal".
    """
    prediction, truth, spacing, boundary, connectivity = _check_surface_arguments(
        prediction, truth, spacing, boundary, connectivity)
    validation.check_choice(combine, "combine", ("mean", "pooled"))
    validation.check_empty_policy(both_empty, truth_empty, prediction_empty, allow_diagonal=True)
    distances = _checked_surface_distances(prediction, truth, spacing, boundary, connectivity)
    return distances.average_surface_distance(combine, both_empty, truth_empty, prediction_empty)


@metric(kind="masks", better="higher", symmetric=True, empty=EMPTY_NSD, scaled=("tolerance",),
        variants={**_VARIANTS, "tolerance": "in the spacing's units; d is within when d² <= τ² (1 + 1e-9)"},
        equals=("surface_distance.compute_surface_dice_at_tolerance (boundary='surfels'; d <= τ on rounded d)",
                "MetricsReloaded normalised_surface_distance (boundary='voxels'; d <= τ on rounded d)",
                "MONAI compute_surface_dice (boundary='voxels', use_subvoxels=False; float32)"),
        citation="Nikolov et al., J Med Internet Res 23(7):e26151, 2021",
        example={"tolerance": 2.0})
def normalized_surface_dice(prediction: np.ndarray, truth: np.ndarray, tolerance: float, spacing=None,
                            boundary: str = "surfels", connectivity: int = 1, both_empty=1.0, truth_empty=0.0,
                            prediction_empty=0.0) -> float:
    """Normalized surface Dice (NSD, surface Dice) at a tolerance τ in the spacing's units.

    The share of both surfaces lying within τ of the other surface: (prediction elements within τ
    of the truth's surface + truth elements within τ of the prediction's) / (all elements of
    both), each element counted once (border voxels) or by its area (surfels, the default:
    DeepMind's compute_surface_dice_at_tolerance). A distance d is within τ when
    d² <= τ² (1 + 1e-9): a distance equal to τ counts (the module's tie rule). Empty masks:
    `both_empty` (1.0), `truth_empty` and `prediction_empty` (0.0, what the formula gives).
    """
    prediction, truth, spacing, boundary, connectivity = _check_surface_arguments(
        prediction, truth, spacing, boundary, connectivity)
    limit = squared_tolerance(tolerance)
    policy = validation.check_empty_policy(both_empty, truth_empty, prediction_empty)
    box = union_box(prediction, truth)
    if box is None:
        return policy["both_empty"]
    prediction, truth = _boolean_crops(prediction, truth, box)
    key = tuple(spacing.tolist())  # floats: the kernel cache's key
    kernel = _disk(key, limit) if prediction.ndim == 2 else None
    if kernel is None:
        distances = _distances_of_crops(prediction, truth, spacing, boundary, connectivity, math.nan)
        return distances.normalized_surface_dice(tolerance, both_empty, truth_empty, prediction_empty)
    prediction_surface, prediction_areas = _surface(prediction, boundary, connectivity, key)
    truth_surface, truth_areas = _surface(truth, boundary, connectivity, key)
    if not prediction_surface.any() or not truth_surface.any():
        return policy["prediction_empty" if truth_surface.any() else "truth_empty"]
    near_truth, near_prediction = _dilated(truth_surface, kernel), _dilated(prediction_surface, kernel)
    if prediction_areas is None:  # border pixels count once each: counted without gathering them
        near = np.count_nonzero(near_truth & prediction_surface) + np.count_nonzero(near_prediction & truth_surface)
        return float(near / (np.count_nonzero(prediction_surface) + np.count_nonzero(truth_surface)))
    return _surface_dice(near_truth[prediction_surface], prediction_areas, near_prediction[truth_surface],
                         truth_areas)


@lru_cache(maxsize=16)
def _disk(spacing: tuple[float, float], limit: float) -> np.ndarray | None:
    """The 2D offsets whose length (as `_lengths` computes it) is within τ (d² <= limit), as a
    uint8 kernel centred on offset 0 (read-only: it is shared); None when it has more than
    LARGEST_DILATION cells in the disk (the distances are then cheaper than the dilation)."""
    radii = [int(math.sqrt(limit) / s) + 1 for s in spacing]  # one more than needed, trimmed below
    if math.prod(2 * r + 1 for r in radii) > 16 * LARGEST_DILATION:
        return None
    offsets = np.indices([2 * r + 1 for r in radii]).reshape(2, -1).T - radii
    lengths = _lengths(offsets, np.asarray(spacing))
    kernel = (lengths * lengths <= limit).astype(np.uint8).reshape([2 * r + 1 for r in radii])
    # The disk is symmetric: its zero rows and columns come in pairs at the ends, and trimming
    # them keeps it centred. OpenCV's dilation pays for every cell of the kernel, zero or not.
    for axis, radius in enumerate(radii):
        used = np.flatnonzero(kernel.any(axis=1 - axis)) - radius
        reach = int(np.abs(used).max())
        kernel = kernel[(slice(None),) * axis + (slice(radius - reach, radius + reach + 1),)]
    if np.count_nonzero(kernel) > LARGEST_DILATION:
        return None
    kernel = np.ascontiguousarray(kernel)
    kernel.flags.writeable = False
    return kernel


def _dilated(surface: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """The grid cells within τ of an element of a 2D surface: its dilation by the disk, as booleans."""
    import cv2  # imported here: challenges without surface metrics never pay for it

    # A bool array is bytes of 0 and 1: dilated as uint8 without a copy, and read back as bool.
    dilated = cv2.dilate(np.ascontiguousarray(surface).view(np.uint8), kernel, borderType=cv2.BORDER_CONSTANT,
                         borderValue=0)
    return dilated.view(bool)
