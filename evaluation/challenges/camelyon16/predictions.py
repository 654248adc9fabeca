"""CAMELYON16 submissions: reading and checking what a participant sends per slide
(docs/challenges/camelyon16.md, "Submission"): slides.csv and one <image>.csv of detections per
slide (predictions-file phase), or the two JSON outputs of an algorithm job (a likelihood, and
'Multiple points' in mm)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.errors import SubmissionError, id_list
from evaluation.framework import log
from evaluation.platform.locations import list_submission_files, strip_extension
from evaluation.reading.files import MEGABYTE, Origin, shown_path
from evaluation.reading.tables import Row, bytes_for_rows, read_csv_rows
from evaluation.reading.values import is_finite_number, json_type, shown

SLIDES_FILE = "slides.csv"  # predictions-file phase: image, probability per slide
SLIDES_HEADER = ["image", "probability"]
DETECTIONS_HEADER = ["p", "x", "y"]
DETECTION_COLUMNS = ("confidence", "X", "Y")
MM_TO_UM = 1000.0
# Sizes checked before a file is parsed. slides.csv: a row per ground-truth slide, plus a header,
# the excluded slides and a few unknown names (named by the case matching, not cut off here).
SLIDES_MARGIN = 16
# A detections file: the rules do not bound the detections of a slide, but a real file holds a
# few thousand rows (a few hundred kB): 64 MiB and 2 million rows are far beyond any, and keep a
# worker's memory for one slide's rows under about 1 GB.
MAX_DETECTIONS_BYTES = 64 * MEGABYTE
MAX_DETECTIONS = 2_000_000
SEPARATOR_HINT = " It looks separated by semicolons; separate values with commas."


@dataclass(frozen=True)
class SlideSource:
    """What a predictions-file submission gave for one slide."""

    probability: float | None
    detections: Path | None


@dataclass(frozen=True)
class Detections:
    confidences: np.ndarray
    x: np.ndarray  # level-0 pixels, or mm (unit "mm") until the slide's pixel size is known
    y: np.ndarray
    unit: str  # "px" or "mm"
    where: list[str]  # per detection, how messages name it: "row 3 of Test_001.csv"


@dataclass(frozen=True)
class SlidePrediction:
    probability: float
    detections: Detections


NO_DETECTIONS = Detections(np.zeros(0), np.zeros(0), np.zeros(0), "px", [])


# ---- predictions-file phase ---------------------------------------------------------------------


def submission_files(input_dir: Path, known: dict[str, bool], table_rows: int) -> list[tuple[str, SlideSource]]:
    """slides.csv (image, probability) and one <image>.csv of detections per slide. `known`:
    {slide of the ground truth: whether it is in the lesion evaluation (needs a detections
    file)}; `table_rows`: the most rows slides.csv may hold."""
    origin = Origin.submission(input_dir)
    files = list_submission_files(input_dir)  # regular files inside /input only, named otherwise
    tables = [f for f in files if f.name.lower() == SLIDES_FILE]
    if not tables:
        refuse_folder(origin, origin.path(SLIDES_FILE, what=SLIDES_FILE), "The slide probabilities")
    if len(tables) != 1:
        raise SubmissionError(f"The submission must hold exactly one {SLIDES_FILE} (image, probability per "
                              f"slide) beside one <image>.csv of detections per slide; found {len(tables)}.")
    probabilities = read_slides_table(origin, tables[0], table_rows)
    detection_files: dict[str, Path] = {}
    for path in files:
        if path == tables[0]:
            continue
        name = shown_path(path.relative_to(origin.real_root).as_posix())
        if not path.name.lower().endswith(".csv"):
            log(f"Ignoring {name}: not a CSV file.")
            continue
        slide = strip_extension(path.name)
        if slide in detection_files:
            first = shown_path(detection_files[slide].relative_to(origin.real_root).as_posix())
            raise SubmissionError(f"Slide {shown_path(slide)}: two detection files ({first} and {name}).")
        detection_files[slide] = path
    no_probability = sorted(s for s in detection_files if s in known and s not in probabilities)
    if no_probability:
        raise SubmissionError(f"{SLIDES_FILE} has no probability for {len(no_probability)} slide(s) that have a "
                              f"detections file ({id_list(no_probability)}).")
    no_detections = sorted(s for s in probabilities if s in known and s not in detection_files and known[s])
    for slide in no_detections:  # a folder in place of the file is named as such
        refuse_folder(origin, tables[0].parent / f"{slide}.csv", f"Slide {slide}")
    if no_detections:
        raise SubmissionError(f"No detections file for {len(no_detections)} slide(s) of {SLIDES_FILE} "
                              f"({id_list([s + '.csv' for s in no_detections])}); every slide needs one, "
                              f"empty when nothing is detected.")
    names = sorted(set(probabilities) | set(detection_files))
    # Excluded slides pass through: the run ignores them (check_case_ids, cases).
    return [(slide, SlideSource(probabilities.get(slide), detection_files.get(slide))) for slide in names]


def read_slides_table(origin: Origin, path: Path, max_rows: int) -> dict[str, float]:
    """`image, probability` rows (the header optional), bounded by `max_rows` before it is parsed."""
    rows = read_csv_rows(origin, path, "The slide probabilities", bytes_for_rows(max_rows), max_rows)
    probabilities: dict[str, float] = {}
    for row in without_header(rows, SLIDES_HEADER):
        cells, n = row.cells, row.line
        if len(cells) != 2 or not cells[0]:
            raise SubmissionError(f"{SLIDES_FILE}, row {n}: expected 'image, probability', found "
                                  f"{shown(','.join(cells))}.{separator_hint(cells)}")
        slide = strip_extension(cells[0])
        named = f"Slide {shown_path(slide)}"
        value = cell_number(cells[1], f"{named}: the probability in row {n} of {SLIDES_FILE} is")
        if slide in probabilities:
            raise SubmissionError(f"{named}: {SLIDES_FILE} gives it two probabilities (second in row {n}).")
        probabilities[slide] = value
    return probabilities


def without_header(rows: list[Row], header: list[str]) -> list[Row]:
    """The rows, without the first when it is the (optional) header."""
    if rows and [cell.lower() for cell in rows[0].cells] == header:
        return rows[1:]
    return rows


def separator_hint(cells: list[str]) -> str:
    return SEPARATOR_HINT if any(";" in cell for cell in cells) else ""


def cell_number(cell: str, what: str) -> float:
    """A CSV cell as a finite number; otherwise "<what> <the cell as written>, not a number." (or
    "...; it must be a finite number." for NaN, inf and numbers beyond the float range)."""
    try:
        value = float(cell)
    except ValueError:
        raise SubmissionError(f"{what} {shown(cell)}, not a number.") from None
    if not np.isfinite(value):
        raise SubmissionError(f"{what} {shown(cell)}; it must be a finite number.")
    return value


def read_detections_csv(origin: Origin, path: Path, slide: str) -> Detections:
    """`confidence, X, Y` rows in level-0 pixels; no header, or the header p,x,y; empty = none."""
    name = shown_path(path.name)
    rows = read_csv_rows(origin, path, slide, MAX_DETECTIONS_BYTES, MAX_DETECTIONS)
    values, where = [], []
    for row in without_header(rows, DETECTIONS_HEADER):
        cells, n = row.cells, row.line
        if len(cells) != 3:
            raise SubmissionError(f"{slide}: row {n} of {name} has {len(cells)} value(s); expected 3 "
                                  f"(confidence, X, Y), found {shown(','.join(cells))}.{separator_hint(cells)}")
        values.append([cell_number(cell, f"{slide}: row {n} of {name} has {column}")
                       for cell, column in zip(cells, DETECTION_COLUMNS, strict=True)])
        where.append(f"row {n} of {name}")
    array = np.array(values, dtype=np.float64).reshape(-1, 3)
    detections = Detections(array[:, 0], array[:, 1], array[:, 2], "px", where)
    check_confidences(detections, slide)
    return detections


def refuse_folder(origin: Origin, path: Path, what: str) -> None:
    """A folder (or anything but a file) where a CSV file the listing did not find is expected,
    named as such by the reading layer; nothing when there is simply no such name."""
    if origin.exists(path):
        origin.regular_file(origin.contains(path, what), what)


# ---- algorithm phase ----------------------------------------------------------------------------


def points_detections(document: Any, slide: str, slug: str) -> Detections:
    """A grand-challenge 'Multiple points' document: {"points": [{"point": [x, y(, z)],
    "probability": p}, ...]}, coordinates in mm."""
    what = f"{slide}: the output {slug!r}"
    if not isinstance(document, dict) or not isinstance(document.get("points"), list):
        raise SubmissionError(f"{what} must be a 'Multiple points' object with a list of points, found "
                              f"{json_type(document)}.")
    points = document["points"]
    if len(points) > MAX_DETECTIONS:
        raise SubmissionError(f"{what} has {len(points)} points; at most {MAX_DETECTIONS} are read per slide.")
    values, where = [], []
    for n, point in enumerate(points):
        coordinates = point.get("point") if isinstance(point, dict) else None
        probability = point.get("probability") if isinstance(point, dict) else None
        if not isinstance(coordinates, list) or len(coordinates) not in (2, 3):
            raise SubmissionError(f"{what}: point {n} has no 'point' [x, y, z] in mm.")
        for value, column in [(probability, "probability")] + list(zip(coordinates[:2], ("x", "y"), strict=True)):
            if not is_finite_number(value):
                number = json_type(value) == "a number"  # NaN, Infinity, or an integer no float holds
                raise SubmissionError(f"{what}: point {n} has {column} {shown(value)}"
                                      f"{'; it must be a finite number' if number else ', not a number'}.")
        values.append((float(probability), float(coordinates[0]), float(coordinates[1])))
        where.append(f"point {n} of output {slug!r}")
    array = np.array(values, dtype=np.float64).reshape(-1, 3)
    detections = Detections(array[:, 0], array[:, 1], array[:, 2], "mm", where)
    check_confidences(detections, slide)
    return detections


# ---- checks of a slide's detections -------------------------------------------------------------


def check_confidences(detections: Detections, slide: str) -> None:
    """Confidences not negative (a missed lesion counts as confidence 0, so a negative one would
    turn every missed lesion into a hit at threshold 0); values are finite already."""
    bad = np.flatnonzero(detections.confidences < 0)
    if len(bad):
        i = bad[0]
        raise SubmissionError(f"{slide}: {detections.where[i]} has confidence "
                              f"{shown(float(detections.confidences[i]))}; confidences must be 0 or more.")


def level0_pixels(detections: Detections, pixel_size_um: float) -> tuple[np.ndarray, np.ndarray]:
    """The detections' X and Y in level-0 pixels (mm converted with the slide's pixel size)."""
    x, y = detections.x, detections.y
    if detections.unit == "mm":
        # Rounded to 1e-6 pixel so that a point written as pixel * size reads back as that pixel.
        x, y = (np.round(v * MM_TO_UM / pixel_size_um, 6) for v in (x, y))
    return x, y


def check_inside(x: np.ndarray, y: np.ndarray, detections: Detections, slide: str, mask) -> None:
    """Every detection on the slide: non-negative, and on a tumor slide inside its mask (the 2016
    script would crash, or wrap a negative index to the other side of the slide)."""
    if mask is None:
        outside = (x < 0) | (y < 0)
        limit = "coordinates must be 0 or more"
    else:
        height, width = mask.tumor.shape
        scale = 2 ** mask.level
        outside = (x < 0) | (y < 0) | (np.floor(x / scale) >= width) | (np.floor(y / scale) >= height)
        limit = f"the slide's mask covers 0 <= X < {width * scale} and 0 <= Y < {height * scale} level-0 pixels"
    bad = np.flatnonzero(outside)
    if len(bad):
        i = bad[0]
        raise SubmissionError(f"{slide}: {detections.where[i]} lies outside the slide "
                              f"(X {x[i]:g}, Y {y[i]:g}; {limit}).")
