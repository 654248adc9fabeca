"""Points and 2D bounding boxes as grand-challenge.org's outputs write them, in world coordinates,
validated and turned into voxel (index) coordinates of the case's image grid.

The two platform kinds read here (grand-challenge.org's ANSWER_TYPE_SCHEMA, "MPOI" and "M2DB";
docs/grand-challenge.md, "Points and boxes"):

    {"type": "Multiple points", "version": {"major": 1, "minor": 0}, "name": "optional text",
     "points": [{"point": [x, y, z], "name": "optional", "probability": 0.9, "type": "Point"}]}

    {"type": "Multiple 2D bounding boxes", "version": {"major": 1, "minor": 0}, "name": "optional",
     "boxes": [{"corners": [[x, y, z], [x, y, z], [x, y, z], [x, y, z]], "name": "optional",
                "probability": 0.9, "type": "2D bounding box"}]}

`type`, `version` ({major, minor}: whole numbers >= 0) and the list are required; every point is
3 numbers, every box 4 corners of 3 numbers; name (text), probability (0 to 1) and an item's own
type are optional; no other key is allowed (the platform's schema says so too: a misspelt
"probabilty" is refused here rather than read as "no probability"). Coordinates are world
coordinates (millimetres, x, y, z), as the platform's viewer and SimpleITK's
TransformContinuousIndexToPhysicalPoint give them.

World to index: physical = origin + direction · (spacing ⊙ index) (index in x, y, z order), so
index = (direction⁻¹ · (physical − origin)) / spacing, exact for oblique directions. The index is
CONTINUOUS (voxel centres are whole numbers) and returned in numpy's order (z, y, x), as arrays
are indexed. On a 2D grid the third coordinate is ignored (the platform always writes three).
A point is inside the image when every index lies within the voxels' extent, −0.5 to size − 0.5
(INSIDE_TOLERANCE voxels more for rounding); any other is refused naming the case and the point.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from evaluation.errors import EvaluationError, SubmissionError, printable
from evaluation.reading.images import Geometry
from evaluation.reading.values import is_finite_number, json_type, shown

if TYPE_CHECKING:
    from evaluation.platform.cases import Case

MULTIPLE_POINTS = "Multiple points"
MULTIPLE_BOXES = "Multiple 2D bounding boxes"
INSIDE_TOLERANCE = 1e-6  # voxels: the world coordinates of an edge voxel, written and read back
_VERSION_KEYS = ("major", "minor")


@dataclass(frozen=True)
class Points:
    """The points of one output, in file order."""

    world: np.ndarray  # (n, 3) float64: x, y, z as written (mm)
    index: np.ndarray | None  # (n, d) continuous voxel index in numpy order (z, y, x); None without a grid
    names: tuple[str | None, ...]
    probabilities: tuple[float | None, ...]  # None where the point gives none

    def __len__(self) -> int:
        return len(self.world)


@dataclass(frozen=True)
class Boxes:
    """The 2D bounding boxes of one output, in file order, by their four corners."""

    world: np.ndarray  # (n, 4, 3) float64: the corners' x, y, z as written (mm)
    index: np.ndarray | None  # (n, 4, d) the corners' continuous voxel index, numpy order (z, y, x)
    names: tuple[str | None, ...]
    probabilities: tuple[float | None, ...]

    def __len__(self) -> int:
        return len(self.world)

    def index_bounds(self) -> np.ndarray:
        """(n, 2, d): the lowest and highest continuous index of each box's corners, per axis
        (numpy order): the axis-aligned box in voxels (exact when the image is not oblique)."""
        if self.index is None:
            raise ValueError("boxes read without a grid have no index")
        return np.stack([self.index.min(axis=1), self.index.max(axis=1)], axis=1)


def _matrix(geometry: Geometry) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = len(geometry.size)
    direction = np.asarray(geometry.direction, dtype=np.float64).reshape(n, n)  # row-major, as SimpleITK's
    return direction, np.asarray(geometry.spacing, dtype=np.float64), np.asarray(geometry.origin, dtype=np.float64)


def world_to_index(world: np.ndarray, geometry: Geometry) -> np.ndarray:
    """Continuous voxel indices, numpy order (z, y, x): (..., d), of world points (..., 3 or d)
    given x, y, z: the inverse of SimpleITK's TransformContinuousIndexToPhysicalPoint (index
    = direction⁻¹ · (point − origin) / spacing). On a 2D grid the third coordinate is ignored."""
    direction, spacing, origin = _matrix(geometry)
    d = len(spacing)
    points = np.asarray(world, dtype=np.float64)[..., :d]
    flat = points.reshape(-1, d) - origin
    index_xyz = np.linalg.solve(direction, flat.T).T / spacing
    return index_xyz[:, ::-1].reshape(*points.shape[:-1], d)


def index_to_world(index: np.ndarray, geometry: Geometry) -> np.ndarray:
    """World points (..., d) in x, y, z order of continuous voxel indices given in numpy order
    (z, y, x): SimpleITK's TransformContinuousIndexToPhysicalPoint."""
    direction, spacing, origin = _matrix(geometry)
    d = len(spacing)
    index_xyz = np.asarray(index, dtype=np.float64)[..., ::-1].reshape(-1, d)
    return (origin + (direction @ (index_xyz * spacing).T).T).reshape(*np.shape(index)[:-1], d)


def _vector(values) -> str:
    return "(" + ", ".join(f"{float(v) + 0:g}" for v in values) + ")"


class _Reader:
    """Validation of one document, every refusal one sentence starting with `where`."""

    def __init__(self, where: str, error: type[EvaluationError]):
        self.where = where
        self.error = error

    def fail(self, text: str):
        raise self.error(f"{self.where}: {text}.")

    def document(self, document: Any, kind: str, items_key: str, item_keys: Sequence[str]) -> list:
        if not isinstance(document, dict):
            self.fail(f"expected a JSON object of type {kind!r}, found {json_type(document)}")
        if document.get("type") != kind:
            found = shown(document["type"]) if "type" in document else "no type"
            self.fail(f"the output's type is {found}; expected {kind!r}")
        self.keys(document, ("type", "version", "name", items_key), "the output")
        if "version" not in document:
            self.fail('the output has no "version" (e.g. {"major": 1, "minor": 0})')
        version = document["version"]
        if not isinstance(version, dict):
            self.fail(f'the output\'s "version" is {shown(version)}; expected {{"major": 1, "minor": 0}}')
        self.keys(version, _VERSION_KEYS, 'the output\'s "version"')
        for key in _VERSION_KEYS:
            value = version.get(key)
            if not is_finite_number(value) or value < 0 or float(value) != int(value):
                self.fail(f'the output\'s version {key} is {shown(value) if key in version else "missing"}; '
                          f"it must be a whole number of at least 0")
        self.name(document, "the output")
        if items_key not in document:
            self.fail(f"the output has no {items_key!r} list")
        items = document[items_key]
        if not isinstance(items, list):
            self.fail(f"the output's {items_key!r} is {json_type(items)}; expected a list")
        for n, item in enumerate(items):
            if not isinstance(item, dict):
                self.fail(f"{items_key[:-1]} {n} is {json_type(item)}; expected an object")
            self.keys(item, item_keys, f"{items_key[:-1]} {n}")
        return items

    def keys(self, mapping: dict, allowed: Sequence[str], what: str) -> None:
        extra = [key for key in mapping if key not in allowed]
        if extra:
            self.fail(f"{what} has the key {shown(extra[0])}, which the platform's schema does not allow "
                      f"(allowed: {', '.join(allowed)})")

    def name(self, mapping: dict, what: str) -> str | None:
        if "name" not in mapping:
            return None
        if not isinstance(mapping["name"], str):
            self.fail(f"the name of {what} is {shown(mapping['name'])}; a name is text")
        return mapping["name"]

    def item_type(self, item: dict, expected: str, what: str) -> None:
        if "type" in item and item["type"] != expected:
            self.fail(f"the type of {what} is {shown(item['type'])}; expected {expected!r} (or no type)")

    def probability(self, item: dict, what: str) -> float | None:
        if "probability" not in item:
            return None
        value = item["probability"]
        if not is_finite_number(value) or not 0 <= value <= 1:
            self.fail(f"the probability of {what} is {shown(value)}; it must be a number from 0 to 1")
        return float(value)

    def coordinates(self, value: Any, what: str) -> list[float]:
        if not isinstance(value, list) or len(value) != 3:
            found = f"a list of {len(value)} numbers" if isinstance(value, list) else json_type(value)
            self.fail(f"{what} is {found}; expected 3 numbers (x, y, z in world coordinates)")
        for axis, number in zip("xyz", value, strict=True):
            if not is_finite_number(number):
                self.fail(f"{what} has {axis} = {shown(number)}; every coordinate must be a finite number")
        return [float(v) for v in value]

    def inside(self, world: np.ndarray, index: np.ndarray, geometry: Geometry, what: Callable[[int], str]) -> None:
        """Refuse the first point (rows of `index`, numpy order) outside the voxels' extent."""
        upper = np.asarray(tuple(reversed(geometry.size)), dtype=np.float64) - 0.5
        outside = ((index < -0.5 - INSIDE_TOLERANCE) | (index > upper + INSIDE_TOLERANCE)).any(axis=-1)
        if outside.any():
            n = int(np.flatnonzero(outside)[0])
            self.fail(f"{what(n)} at {_vector(world[n])} (x, y, z) lies outside the image: its voxel index "
                      f"{_vector(index[n][::-1])} is not within the size {_vector(geometry.size)} (x, y, z)")


def _label(n: int, kind: str, names: Sequence[str | None]) -> str:
    name = names[n]
    return f"{kind} {n}" + (f" ({printable(name, 40)!r})" if name else "")


def parse_points(document: Any, geometry: Geometry | None, where: str, *,
                 error: type[EvaluationError] = SubmissionError) -> Points:
    """A "Multiple points" document (the parsed JSON of an output: Case.read_json) as Points,
    with indices on `geometry` (the case's image grid; None: world coordinates only, nothing
    refused as outside). Any problem raises `error` (SubmissionError: exit 1; SetupError for a
    ground truth), one sentence starting with `where` (the case: "Case 7, output 'nodules'")."""
    reader = _Reader(where, error)
    items = reader.document(document, MULTIPLE_POINTS, "points", ("point", "name", "probability", "type"))
    names = tuple(reader.name(item, f"point {n}") for n, item in enumerate(items))
    world = np.zeros((len(items), 3))
    probabilities = []
    for n, item in enumerate(items):
        what = _label(n, "point", names)
        reader.item_type(item, "Point", what)
        if "point" not in item:
            reader.fail(f"{what} has no \"point\" (x, y, z)")
        world[n] = reader.coordinates(item["point"], what)
        probabilities.append(reader.probability(item, what))
    index = None
    if geometry is not None:
        index = world_to_index(world, geometry).reshape(len(items), len(geometry.size))
        reader.inside(world, index, geometry, lambda n: _label(n, "point", names))
    return Points(world, index, names, tuple(probabilities))


def parse_boxes(document: Any, geometry: Geometry | None, where: str, *,
                error: type[EvaluationError] = SubmissionError) -> Boxes:
    """A "Multiple 2D bounding boxes" document as Boxes (see parse_points): four corners of 3
    finite numbers each; a box with a corner outside the image is refused."""
    reader = _Reader(where, error)
    items = reader.document(document, MULTIPLE_BOXES, "boxes", ("corners", "name", "probability", "type"))
    names = tuple(reader.name(item, f"box {n}") for n, item in enumerate(items))
    world = np.zeros((len(items), 4, 3))
    probabilities = []
    for n, item in enumerate(items):
        what = _label(n, "box", names)
        reader.item_type(item, "2D bounding box", what)
        corners = item.get("corners")
        if not isinstance(corners, list) or len(corners) != 4:
            found = (f"{len(corners)} corners" if isinstance(corners, list) else
                     json_type(corners) if "corners" in item else "no corners")
            reader.fail(f"{what} has {found}; expected 4 corners of 3 numbers (x, y, z)")
        for c, corner in enumerate(corners):
            world[n, c] = reader.coordinates(corner, f"corner {c} of {what}")
        probabilities.append(reader.probability(item, what))
    index = None
    if geometry is not None:
        d = len(geometry.size)
        index = world_to_index(world, geometry).reshape(len(items), 4, d)
        flat_world, flat_index = world.reshape(-1, 3), index.reshape(-1, d)
        reader.inside(flat_world, flat_index, geometry,
                      lambda k: f"corner {k % 4} of {_label(k // 4, 'box', names)}")
    return Boxes(world, index, names, tuple(probabilities))


def read_points(case: Case, slug: str, geometry: Geometry | None) -> Points:
    """The "Multiple points" output `slug` of a case's job (Case.read_json), on `geometry`."""
    return parse_points(case.read_json(slug), geometry, f"{case.name}, output {slug!r}")


def read_boxes(case: Case, slug: str, geometry: Geometry | None) -> Boxes:
    """The "Multiple 2D bounding boxes" output `slug` of a case's job, on `geometry`."""
    return parse_boxes(case.read_json(slug), geometry, f"{case.name}, output {slug!r}")
