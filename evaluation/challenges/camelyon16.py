"""CAMELYON16: lymph-node metastases in whole-slide images (docs/challenges/camelyon16.md).

Two leaderboards from one submission: slide-level ROC AUC (tumor vs normal against one
probability per slide), and lesion-level FROC (the mean sensitivity at 1/4 .. 8 false positives
per slide) with the evaluation mask, ITC rule, hit rules and thresholds of the organizers'
2016 script; the later script's threshold rule is a setting.

Per slide, in a worker: the mask is read at level 5 (never level 0), turned into the evaluation
mask, and the detections looked up at once; what comes back is a few numbers per lesion and the
false positives' confidences, never the mask.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.examples import synthetic
from evaluation.errors import SetupError, SubmissionError, id_list
from evaluation.framework import Evaluation, log
from evaluation.grand_challenge import Case, list_submission_files, strip_extension
from evaluation.metrics.evaluation_mask import evaluation_mask
from evaluation.metrics.froc import (
    FP_RATE_TARGETS,
    THRESHOLD_RULES,
    SlideHits,
    froc_curve,
    froc_sensitivities,
    normal_slide_hits,
    slide_hits,
)
from evaluation.settings import Settings, json_type, setting
from evaluation.wsi_masks import MASK_SUFFIXES, read_mask

REFERENCE_FILE = "reference.csv"
MASKS_FOLDER = "masks"
SLIDES_FILE = "slides.csv"  # predictions-file phase: image, probability per slide
EVALUATION_LEVEL = 5  # the 2016 script's EVALUATION_MASK_LEVEL: pyramids are read at level 5
TUMOR, NORMAL = "tumor", "normal"
CURVE_POINTS = 500  # FROC points kept in metrics.json for plots
MM_TO_UM = 1000.0


@dataclass(frozen=True)
class Camelyon16Settings(Settings):
    input_socket: str = setting("whole-slide-image", doc="input socket whose image name (without extension) "
                                                         "is the slide")
    likelihood_socket: str = setting("metastasis-likelihood",
                                     doc="output socket: the slide's metastasis likelihood, a JSON number")
    detections_socket: str = setting("metastasis-detections",
                                     doc="output socket: a 'Multiple points' JSON, a probability per point, "
                                         "coordinates in mm")
    froc_thresholds: str = setting("2016", choices=THRESHOLD_RULES,
                                   doc="'2016': the organizers' 2016 script (float32 lesion slots, thresholds "
                                       "sorted(set(all))[1:]); 'corrected': the later data-release rule (every "
                                       "distinct nonzero confidence, float64)")
    mask_level: int = setting(EVALUATION_LEVEL, minimum=0,
                              doc="pyramid level of single-page masks (pyramidal TIFFs are always read at "
                                  "level 5); the distance and ITC thresholds scale with 2**level")
    pixel_size_um: float = setting(0.243, doc="level-0 pixel size in µm (2016 constant L0_RESOLUTION): the "
                                              "75 µm / 275 µm thresholds in pixels and the mm -> pixel conversion")
    pixel_size_from_tiff: bool = setting(False, doc="use a pyramidal mask's level-0 resolution tags (when "
                                                    "present) instead of pixel_size_um for that slide, as the "
                                                    "later data-release script does")
    excluded_slides: list[str] = setting(["Test_049"], doc="left out of both evaluations (Test_049 is a "
                                                           "duplicate); may still appear in a submission")
    excluded_from_lesion_evaluation: list[str] = setting(["Test_114"], doc="left out of the lesion evaluation "
                                                                           "only (Test_114 is not exhaustively "
                                                                           "annotated)")

    def check(self) -> None:
        super().check()
        if not (math.isfinite(self.pixel_size_um) and self.pixel_size_um > 0):
            raise SetupError(f"config.json: setting 'pixel_size_um' is {self.pixel_size_um!r}; it must be a "
                             f"positive number of micrometres.")


@dataclass(frozen=True)
class SlideTruth:
    is_tumor: bool
    lesion_evaluated: bool
    mask: Path | None  # tumor slides of the lesion evaluation only


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


@dataclass(frozen=True)
class SlideResult:
    probability: float
    hits: SlideHits | None  # None: not in the lesion evaluation


def _target_key(target: float) -> str:
    """0.25 -> '0_25', 1.0 -> '1': a key without dots (leaderboard paths split on dots)."""
    return f"{target:g}".replace(".", "_")


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value


def _shown(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= 30 else text[:27] + "...")


class Camelyon16(Evaluation):
    name = "camelyon16"
    title = "CAMELYON16: slide-level AUC and lesion-level FROC (lymph-node metastases)"
    settings_class = Camelyon16Settings
    case_label = "Slide"
    ranked_paths = ("aggregates.slide_auc", "aggregates.froc_score",
                    *(f"aggregates.froc_sensitivity_at_{_target_key(t)}" for t in FP_RATE_TARGETS),
                    "aggregates.lesions_total", "aggregates.lesions_itc_excluded")

    # ---- ground truth --------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, SlideTruth]:
        """reference.csv (image, type Tumor/Normal; a header row and further columns allowed)
        and masks/<image>.tif (or <image>_Mask.tif, .tiff, .png, .mha) for every tumor slide of
        the lesion evaluation."""
        path = directory / REFERENCE_FILE
        if not path.is_file():
            raise SetupError(f"The ground truth has no {REFERENCE_FILE} (columns image, type).")
        try:
            rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"))))
        except (UnicodeDecodeError, csv.Error) as exc:
            raise SetupError(f"Ground truth {REFERENCE_FILE} cannot be read as CSV ({exc}).") from None
        rows = [(n, row) for n, row in enumerate(rows, start=1) if any(cell.strip() for cell in row)]
        if rows and rows[0][1][0].strip().lower() == "image":
            rows = rows[1:]
        excluded = set(self.settings.excluded_slides)
        lesion_excluded = set(self.settings.excluded_from_lesion_evaluation)
        masks = self._mask_files(directory)
        slides: dict[str, SlideTruth] = {}
        for n, row in rows:
            if len(row) < 2 or row[1].strip().lower() not in (TUMOR, NORMAL):
                raise SetupError(f"Ground truth {REFERENCE_FILE}, row {n}: expected an image name and a type "
                                 f"Tumor or Normal, found {','.join(row)[:80]!r}.")
            slide, kind = strip_extension(row[0].strip()), row[1].strip().lower()
            if slide in slides:
                raise SetupError(f"Ground truth {REFERENCE_FILE}: slide {slide} is listed twice.")
            if slide in excluded:
                slides[slide] = None  # placeholder, dropped below
                continue
            is_tumor = kind == TUMOR
            lesion_evaluated = slide not in lesion_excluded
            mask = masks.get(slide)
            if is_tumor and lesion_evaluated and mask is None:
                raise SetupError(f"Ground truth: tumor slide {slide} has no mask {MASKS_FOLDER}/{slide}.tif.")
            if not is_tumor and mask is not None:
                raise SetupError(f"Ground truth: slide {slide} is Normal in {REFERENCE_FILE} but has a tumor mask "
                                 f"{mask.name}.")
            slides[slide] = SlideTruth(is_tumor, lesion_evaluated, mask if is_tumor and lesion_evaluated else None)
        unknown = sorted(set(masks) - set(slides))
        if unknown:
            raise SetupError(f"Ground truth: mask(s) for slide(s) not in {REFERENCE_FILE}: {id_list(unknown)}.")
        slides = {slide: truth for slide, truth in slides.items() if truth is not None}
        kinds = {truth.is_tumor for truth in slides.values()}
        if kinds != {True, False}:
            raise SetupError(f"Ground truth {REFERENCE_FILE} must hold both tumor and normal slides (besides the "
                             f"excluded ones): the slide-level AUC is undefined otherwise.")
        if not any(t.is_tumor and t.lesion_evaluated for t in slides.values()):
            raise SetupError("Ground truth: no tumor slide is left for the lesion evaluation, so the FROC is "
                             "undefined.")
        return slides

    def _mask_files(self, directory: Path) -> dict[str, Path]:
        folder = directory / MASKS_FOLDER
        found: dict[str, Path] = {}
        if not folder.is_dir():
            return found
        for path in sorted(folder.iterdir()):
            lower = path.name.lower()
            suffix = next((s for s in MASK_SUFFIXES if lower.endswith(s)), None)
            if not path.is_file() or suffix is None or path.name.startswith("."):
                continue
            slide = path.name[: -len(suffix)]
            if slide.lower().endswith("_mask"):  # the CAMELYON16 release names them Test_001_Mask.tif
                slide = slide[: -len("_mask")]
            if slide in found:
                raise SetupError(f"Ground truth: slide {slide} has two masks ({found[slide].name}, {path.name}).")
            found[slide] = path
        return found

    def case_input_socket(self) -> str:
        return self.settings.input_socket

    # ---- matching: excluded slides may be submitted, and are ignored ---------------------

    def check_case_ids(self, found: list[str]) -> None:
        excluded = set(self.settings.excluded_slides)
        super().check_case_ids([c for c in found if c not in excluded])

    def cases(self, input_dir: Path) -> list[Case]:
        excluded = set(self.settings.excluded_slides)
        return [case for case in super().cases(input_dir) if case.case_id not in excluded]

    # ---- predictions-file phase ----------------------------------------------------------

    def file_cases(self, input_dir: Path) -> list[tuple[str, SlideSource]]:
        """slides.csv (image, probability) and one <image>.csv of detections per slide."""
        files = list_submission_files(input_dir)
        tables = [f for f in files if f.name.lower() == SLIDES_FILE]
        if len(tables) != 1:
            raise SubmissionError(f"The submission must hold exactly one {SLIDES_FILE} (image, probability per "
                                  f"slide) beside one <image>.csv of detections per slide; found {len(tables)}.")
        probabilities = self._read_slides_table(tables[0])
        detection_files: dict[str, Path] = {}
        for path in files:
            if path == tables[0]:
                continue
            if not path.name.lower().endswith(".csv"):
                log(f"Ignoring {path.relative_to(input_dir)}: not a CSV file.")
                continue
            slide = strip_extension(path.name)
            if slide in detection_files:
                raise SubmissionError(f"Slide {slide}: two detection files ({detection_files[slide].relative_to(input_dir)}"
                                      f" and {path.relative_to(input_dir)}).")
            detection_files[slide] = path
        known = set(self.ground_truth)
        no_probability = sorted(s for s in detection_files if s in known and s not in probabilities)
        if no_probability:
            raise SubmissionError(f"{SLIDES_FILE} has no probability for {len(no_probability)} slide(s) that have a "
                                  f"detections file ({id_list(no_probability)}).")
        no_detections = sorted(s for s in probabilities if s in known and s not in detection_files
                               and self.ground_truth[s].lesion_evaluated)
        if no_detections:
            raise SubmissionError(f"No detections file for {len(no_detections)} slide(s) of {SLIDES_FILE} "
                                  f"({id_list([s + '.csv' for s in no_detections])}); every slide needs one, "
                                  f"empty when nothing is detected.")
        names = sorted(set(probabilities) | set(detection_files))
        # Excluded slides pass through: the run ignores them (check_case_ids, cases).
        return [(slide, SlideSource(probabilities.get(slide), detection_files.get(slide))) for slide in names]

    def _read_slides_table(self, path: Path) -> dict[str, float]:
        lines = _text_lines(path, SLIDES_FILE, what=f"{SLIDES_FILE}")
        probabilities: dict[str, float] = {}
        for n, line in lines:
            cells = [cell.strip() for cell in line.split(",")]
            if n == lines[0][0] and [c.lower() for c in cells] == ["image", "probability"]:
                continue
            if len(cells) != 2 or not cells[0]:
                raise SubmissionError(f"{SLIDES_FILE}, row {n}: expected 'image, probability', found {_shown(line)}.")
            slide = strip_extension(cells[0])
            value = _number(cells[1])
            if value is None:
                raise SubmissionError(f"Slide {slide}: the probability in row {n} of {SLIDES_FILE} is "
                                      f"{_shown(cells[1])}, not a number.")
            if not math.isfinite(value):
                raise SubmissionError(f"Slide {slide}: the probability in row {n} of {SLIDES_FILE} is {cells[1]}; "
                                      f"it must be a finite number.")
            if slide in probabilities:
                raise SubmissionError(f"Slide {slide}: {SLIDES_FILE} gives it two probabilities (second in row {n}).")
            probabilities[slide] = value
        return probabilities

    # ---- one slide -----------------------------------------------------------------------

    def load_prediction(self, case: Case, ground_truth: SlideTruth) -> SlidePrediction:
        if case.job is None:
            source: SlideSource = case.source
            if source.probability is None:  # only excluded slides come without (filtered earlier)
                raise SubmissionError(f"{case.name}: {SLIDES_FILE} has no probability for it.")
            detections = (_read_detections_csv(source.detections, case.name) if source.detections is not None
                          else Detections(np.zeros(0), np.zeros(0), np.zeros(0), "px", []))
            return SlidePrediction(source.probability, detections)
        likelihood = case.read_json(self.settings.likelihood_socket)
        if isinstance(likelihood, bool) or not isinstance(likelihood, (int, float)) or not math.isfinite(likelihood):
            shown = json.dumps(likelihood)
            raise SubmissionError(f"{case.name}: the output {self.settings.likelihood_socket!r} is "
                                  f"{shown if len(shown) <= 40 else json_type(likelihood)}; it must be a finite number.")
        slug = self.settings.detections_socket
        document = case.read_json(slug)
        return SlidePrediction(float(likelihood), _points_detections(document, case.name, slug))

    def score_case(self, case: Case, prediction: SlidePrediction, ground_truth: SlideTruth) -> SlideResult:
        if not ground_truth.lesion_evaluated:
            return SlideResult(prediction.probability, None)
        detections = prediction.detections
        settings = self.settings
        mask = None
        pixel_size = settings.pixel_size_um
        if ground_truth.is_tumor:
            mask = read_mask(ground_truth.mask, EVALUATION_LEVEL, settings.mask_level, what=f"Mask of slide {case.case_id}")
            if settings.pixel_size_from_tiff and mask.level0_pixel_size_um is not None:
                pixel_size = mask.level0_pixel_size_um
        x, y = detections.x, detections.y
        if detections.unit == "mm":
            # Rounded to 1e-6 pixel so that a point written as pixel * size reads back as that pixel.
            x, y = (np.round(v * MM_TO_UM / pixel_size, 6) for v in (x, y))
        _check_inside(x, y, detections, case.name, mask)
        if mask is None:
            return SlideResult(prediction.probability, normal_slide_hits(detections.confidences))
        if not mask.tumor.any():
            raise SetupError(f"Mask of slide {case.case_id}: {ground_truth.mask.name} has no tumor pixel, yet the "
                             f"slide is Tumor in {REFERENCE_FILE}.")
        lesions = evaluation_mask(mask.tumor, pixel_size, mask.level)
        scale = float(2 ** mask.level)
        labels = lesions.label_at(np.floor(y / scale), np.floor(x / scale))
        return SlideResult(prediction.probability, slide_hits(labels, detections.confidences, lesions.itc))

    # ---- the leaderboards ----------------------------------------------------------------

    def score_aggregates(self, results: dict[str, SlideResult]) -> dict[str, Any]:
        from sklearn.metrics import roc_auc_score

        slides = sorted(results)
        y_true = np.array([self.ground_truth[s].is_tumor for s in slides], dtype=np.int8)
        y_score = np.array([results[s].probability for s in slides])
        auc = float(roc_auc_score(y_true, y_score))

        lesion_slides = [s for s in slides if results[s].hits is not None]
        hits = [results[s].hits for s in lesion_slides]
        lesions = sum(h.lesions for h in hits)
        itc = sum(h.itc_regions for h in hits)
        if lesions == 0:
            raise SetupError("The tumor masks hold no lesion beyond isolated tumor cells, so the FROC sensitivity "
                             "is undefined.")
        curve = froc_curve(hits, self.settings.froc_thresholds)
        sensitivities = froc_sensitivities(curve)
        log(f"Slide AUC {auc:.4f} on {len(slides)} slides; FROC on {len(lesion_slides)} slides, {lesions} lesions "
            f"({itc} ITC regions left out), {len(curve.thresholds)} thresholds.")
        aggregates: dict[str, Any] = {"slide_auc": auc, "froc_score": float(np.mean(sensitivities))}
        for target, value in zip(FP_RATE_TARGETS, sensitivities):
            aggregates[f"froc_sensitivity_at_{_target_key(target)}"] = float(value)
        aggregates.update({
            "lesions_total": lesions,
            "lesions_itc_excluded": itc,
            "slides_evaluated": len(slides),
            "tumor_slides": int(y_true.sum()),
            "normal_slides": int(len(slides) - y_true.sum()),
            "slides_in_lesion_evaluation": len(lesion_slides),
            "detections_false_positive": int(sum(len(h.false_positives) for h in hits)),
            "lesions_detected": int(sum(np.count_nonzero(h.lesion_confidences > 0) for h in hits)),
        })
        fp_rates, sensitivity = compact_curve(curve.fp_rates[::-1], curve.sensitivities[::-1])
        return {"aggregates": aggregates,
                "froc_curve": {"average_false_positives_per_slide": fp_rates, "sensitivity": sensitivity,
                               "thresholds": int(len(curve.thresholds))}}

    # ---- synthetic data ------------------------------------------------------------------

    @classmethod
    def synthesize(cls, out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
        """The bundled example: small slides (level-5 masks of 192 x 288), half tumor, half
        normal, a pyramidal TIFF (pages), a pyramid in SubIFDs and single-page masks, an ITC
        region, plus Test_049 (excluded from both evaluations, still submitted) and Test_114
        (slide level only: no mask, no detections file)."""
        write_synthetic(out_dir, seed=seed, slides=6 if cases is None else cases, mask_shape=(192, 288),
                        pyramids=2, extra_slides=True)

    @classmethod
    def invalid_examples(cls, input_dir: Path) -> dict[str, dict[str, bytes | None]]:
        first = "Test_001.csv"
        rows = (input_dir / first).read_text().splitlines()
        slides = (input_dir / SLIDES_FILE).read_text().splitlines()
        outside = rows[:1] + ["0.9,99999,100"] + rows[1:]
        not_number = rows[:1] + ["0.5,12o4,400"] + rows[1:]
        nan = [slides[0], slides[1].split(",")[0] + ",nan"] + slides[2:]
        return {
            "missing-detections-file": {"Test_002.csv": None},
            "coordinate-outside-slide": {first: ("\n".join(outside) + "\n").encode()},
            "non-numeric-coordinate": {first: ("\n".join(not_number) + "\n").encode()},
            "probability-not-finite": {SLIDES_FILE: ("\n".join(nan) + "\n").encode()},
        }


def compact_curve(fp_rates: np.ndarray, sensitivities: np.ndarray, points: int = CURVE_POINTS):
    """The FROC curve for plots: consecutive repeats dropped, at most `points` points kept
    (evenly spaced along the curve, ends included), values rounded to 6 decimals."""
    fp_rates, sensitivities = np.round(fp_rates, 6), np.round(sensitivities, 6)
    keep = np.ones(len(fp_rates), dtype=bool)
    keep[1:] = (np.diff(fp_rates) != 0) | (np.diff(sensitivities) != 0)
    fp_rates, sensitivities = fp_rates[keep], sensitivities[keep]
    if len(fp_rates) > points:
        index = np.unique(np.round(np.linspace(0, len(fp_rates) - 1, points)).astype(np.int64))
        fp_rates, sensitivities = fp_rates[index], sensitivities[index]
    return fp_rates.tolist(), sensitivities.tolist()


# ---- reading detections -------------------------------------------------------------------


def _text_lines(path: Path, name: str, what: str) -> list[tuple[int, str]]:
    """Non-blank lines of a text file with their 1-based numbers."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise SubmissionError(f"{what}: {name} is not UTF-8 text.") from None
    return [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]


def _read_detections_csv(path: Path, slide: str) -> Detections:
    """`confidence, X, Y` rows in level-0 pixels; no header, or the header p,x,y; empty = none."""
    name = path.name
    lines = _text_lines(path, name, what=slide)
    values, where = [], []
    for n, line in lines:
        cells = [cell.strip() for cell in line.split(",")]
        if n == lines[0][0] and [c.lower() for c in cells] == ["p", "x", "y"]:
            continue
        if len(cells) != 3:
            raise SubmissionError(f"{slide}: row {n} of {name} has {len(cells)} value(s); expected 3 "
                                  f"(confidence, X, Y), found {_shown(line)}.")
        row = []
        for cell, column in zip(cells, ("confidence", "X", "Y")):
            value = _number(cell)
            if value is None:
                raise SubmissionError(f"{slide}: row {n} of {name} has {column} {_shown(cell)}, not a number.")
            row.append(value)
        values.append(row)
        where.append(f"row {n} of {name}")
    array = np.array(values, dtype=np.float64).reshape(-1, 3)
    detections = Detections(array[:, 0], array[:, 1], array[:, 2], "px", where)
    _check_values(detections, slide)
    return detections


def _points_detections(document: Any, slide: str, slug: str) -> Detections:
    """A grand-challenge 'Multiple points' document: {"points": [{"point": [x, y(, z)],
    "probability": p}, ...]}, coordinates in mm."""
    what = f"{slide}: the output {slug!r}"
    if not isinstance(document, dict) or not isinstance(document.get("points"), list):
        raise SubmissionError(f"{what} must be a 'Multiple points' object with a list of points, found "
                              f"{json_type(document)}.")
    values, where = [], []
    for n, point in enumerate(document["points"]):
        coordinates = point.get("point") if isinstance(point, dict) else None
        probability = point.get("probability") if isinstance(point, dict) else None
        if not isinstance(coordinates, list) or len(coordinates) not in (2, 3):
            raise SubmissionError(f"{what}: point {n} has no 'point' [x, y, z] in mm.")
        for value, column in [(probability, "probability")] + list(zip(coordinates[:2], ("x", "y"))):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                shown = json.dumps(value)
                raise SubmissionError(f"{what}: point {n} has {column} {shown if len(shown) <= 30 else json_type(value)}, "
                                      f"not a number.")
        values.append((float(probability), float(coordinates[0]), float(coordinates[1])))
        where.append(f"point {n} of output {slug!r}")
    array = np.array(values, dtype=np.float64).reshape(-1, 3)
    detections = Detections(array[:, 0], array[:, 1], array[:, 2], "mm", where)
    _check_values(detections, slide)
    return detections


def _check_values(detections: Detections, slide: str) -> None:
    """Finite numbers; confidences not negative (a missed lesion counts as confidence 0, so a
    negative one would turn every missed lesion into a hit at threshold 0)."""
    for values, column in ((detections.confidences, "confidence"), (detections.x, "X"), (detections.y, "Y")):
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            i = bad[0]
            raise SubmissionError(f"{slide}: {detections.where[i]} has {column} {values[i]}; it must be a finite number.")
    bad = np.flatnonzero(detections.confidences < 0)
    if len(bad):
        i = bad[0]
        raise SubmissionError(f"{slide}: {detections.where[i]} has confidence {detections.confidences[i]:g}; "
                              f"confidences must be 0 or more.")


def _check_inside(x: np.ndarray, y: np.ndarray, detections: Detections, slide: str, mask) -> None:
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
        raise SubmissionError(f"{slide}: {detections.where[i]} lies outside the slide (X {x[i]:g}, Y {y[i]:g}; {limit}).")


# ---- synthetic data -----------------------------------------------------------------------


def _draw_lesions(rng: np.random.Generator, shape: tuple[int, int], value: int, count: int, itc: int, ring: bool):
    """A level-5 tumor mask with `count` elliptic lesions (some far above the ITC size), `itc`
    small blobs and optionally a ring (a hole to fill); returns the mask and the lesion centres."""
    import cv2

    mask = np.zeros(shape, dtype=np.uint8)
    height, width = shape
    centres = []
    scale = max(1.0, min(shape) / 192) ** 0.5  # ~4x on a 3000 x 7000 slide: lesions up to ~2 mm
    for k in range(count + itc):
        small = k >= count
        axes = ((int(rng.integers(2, 7)), int(rng.integers(2, 7))) if small else
                (int(rng.integers(14, 30) * scale), int(rng.integers(8, 22) * scale)))
        margin = max(axes) + 8
        centre = (int(rng.integers(margin, width - margin)), int(rng.integers(margin, height - margin)))
        cv2.ellipse(mask, centre, axes, float(rng.uniform(0, 180)), 0, 360, value, -1)
        centres.append((centre, axes, small))
    if ring:
        r = int(20 * scale)
        centre = (int(rng.integers(r + 8, width - r - 8)), int(rng.integers(r + 8, height - r - 8)))
        cv2.circle(mask, centre, r, value, thickness=max(2, r // 4))
        centres.append((centre, (r, r), False))
    return mask, centres


def _write_pyramid(path: Path, level5: np.ndarray, use_subifds: bool, pixel_size_um: float) -> None:
    """A pyramidal TIFF whose level 0 is the level-5 mask upsampled 32 times, with 2x levels
    down to level 5, deflate-compressed."""
    import tifffile

    level0 = np.repeat(np.repeat(level5, 32, axis=0), 32, axis=1)
    resolution = (1e4 / pixel_size_um, 1e4 / pixel_size_um)
    with tifffile.TiffWriter(path) as tif:
        tif.write(level0, tile=(512, 512), compression="zlib", compressionargs={"level": 9}, subifds=5 if use_subifds else None,
                  resolution=resolution, resolutionunit="CENTIMETER")
        for k in range(1, 6):
            tif.write(level0[:: 2 ** k, :: 2 ** k], tile=(16, 16) if k == 5 else (128, 128), compression="zlib", compressionargs={"level": 9},
                      subfiletype=1)


def write_synthetic(out_dir: Path, seed: int = 0, slides: int = 6, mask_shape: tuple[int, int] = (192, 288),
                    pyramids: int = 0, extra_slides: bool = False, detections: tuple[int, int] = (5, 40),
                    phase: str = "files") -> None:
    """A ground truth (reference.csv, masks/) and a submission for `slides` slides (half tumor),
    level-5 masks of `mask_shape`; the first `pyramids` tumor masks are pyramidal TIFFs, the
    others single-page level-5 TIFFs. Detections per slide: uniform in `detections` false
    positives plus a few hits per lesion. `phase`: "files" (slides.csv + CSVs) or "algorithm"
    (predictions.json with the two JSON outputs per slide, coordinates in mm)."""
    import tifffile

    rng = np.random.default_rng(seed)
    truth_dir, input_dir = out_dir / "ground-truth", out_dir / "input"
    (truth_dir / MASKS_FOLDER).mkdir(parents=True, exist_ok=True)
    input_dir.mkdir(parents=True, exist_ok=True)
    pixel_size = 0.243
    names = [f"Test_{n:03d}" for n in range(1, slides + 1)]
    kinds = {name: TUMOR if n % 2 == 0 else NORMAL for n, name in enumerate(names)}
    if extra_slides:
        names += ["Test_049", "Test_114"]
        kinds.update({"Test_049": TUMOR, "Test_114": TUMOR})
    reference = ["image,type"]
    height, width = mask_shape
    submission: dict[str, tuple[float, list[tuple[float, int, int]]]] = {}
    tumor_index = 0
    for name in names:
        kind = kinds[name]
        reference.append(f"{name},{kind.capitalize()}")
        points: list[tuple[float, int, int]] = []
        if kind == TUMOR and not (extra_slides and name in ("Test_049", "Test_114")):
            value = (255, 2, 1)[tumor_index % 3]  # 2016 release, later conversions
            mask, lesions = _draw_lesions(rng, mask_shape, value, count=int(rng.integers(1, 4)), itc=1,
                                          ring=tumor_index == 0)
            if tumor_index < pyramids:
                _write_pyramid(truth_dir / MASKS_FOLDER / f"{name}.tif", mask, use_subifds=tumor_index == 1,
                               pixel_size_um=pixel_size)
            else:
                tifffile.imwrite(truth_dir / MASKS_FOLDER / f"{name}.tif", mask, compression="zlib")
            tumor_index += 1
            for (cx, cy), axes, small in lesions:
                if rng.random() < (0.6 if small else 0.7):
                    for _ in range(int(rng.integers(1, 4))):
                        # level-0 pixel near the centre (inside the ellipse's inner box)
                        dx, dy = (int(rng.integers(-a // 2, a // 2 + 1)) for a in axes)
                        px = (cx + dx) * 32 + int(rng.integers(0, 32))
                        py = (cy + dy) * 32 + int(rng.integers(0, 32))
                        points.append((round(float(rng.beta(3, 2)), 4), px, py))
        for _ in range(int(rng.integers(detections[0], detections[1] + 1))):
            points.append((round(float(rng.beta(1.5, 4)), 4), int(rng.integers(0, width * 32)),
                           int(rng.integers(0, height * 32))))
        order = rng.permutation(len(points))
        probability = round(float(rng.beta(3, 2) if kind == TUMOR else rng.beta(2, 3)), 3)
        submission[name] = (probability, [points[i] for i in order])
    (truth_dir / REFERENCE_FILE).write_text("\n".join(reference) + "\n")

    if phase == "files":
        rows = ["image,probability"] + [f"{name},{p}" for name, (p, _) in submission.items()]
        (input_dir / SLIDES_FILE).write_text("\n".join(rows) + "\n")
        for n, (name, (_, points)) in enumerate(submission.items()):
            if extra_slides and name == "Test_114":
                continue  # slide level only: its detections file may be left out
            header = ["p,x,y"] if n % 2 == 0 else []  # both forms: with and without header
            lines = header + [f"{c},{x},{y}" for c, x, y in points]
            (input_dir / f"{name}.csv").write_text("".join(line + "\n" for line in lines))
        return
    jobs = []
    for name, (probability, points) in submission.items():
        pk = synthetic.job_pk(rng)
        document = {"name": "metastases", "type": "Multiple points", "version": {"major": 1, "minor": 0},
                    "points": [{"name": f"detection {i}", "point": [x * pixel_size / MM_TO_UM, y * pixel_size / MM_TO_UM, 0.0],
                                "probability": c} for i, (c, x, y) in enumerate(points)]}
        jobs.append(synthetic.job(pk, [synthetic.image_input("whole-slide-image", f"{name}.tif", "images/whole-slide-image")],
                                  [synthetic.file_output("metastasis-likelihood", "metastasis-likelihood.json", kind="Float"),
                                   synthetic.file_output("metastasis-detections", "metastasis-detections.json",
                                                         kind="Multiple points")]))
        synthetic.write_output(input_dir, pk, "metastasis-likelihood.json", probability)
        synthetic.write_output(input_dir, pk, "metastasis-detections.json", document)
    order = rng.permutation(len(jobs))
    synthetic.write_predictions(input_dir, [jobs[i] for i in order])
