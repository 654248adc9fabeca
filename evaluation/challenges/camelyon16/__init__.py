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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.errors import SetupError, SubmissionError, id_list
from evaluation.leaderboard.rules import Key, OrderedRanking
from evaluation.framework import Evaluation, log
from evaluation.grand_challenge import Case, list_submission_files, strip_extension
from evaluation.phase.columns import ABSOLUTE, Column, Leaderboard, leaderboard_paths
from evaluation.metrics.classification import ranking_curve, roc_auc, roc_points, stable_order
from evaluation.metrics.evaluation_mask import evaluation_mask
from evaluation.metrics.froc import (
    FP_RATE_TARGETS,
    THRESHOLD_RULES,
    SlideHits,
    froc_curve,
    froc_sensitivities,
    normal_slide_hits,
    resampled_froc_scores,
    slide_hits,
)
from evaluation.reading.files import MEGABYTE, Origin, shown_path
from evaluation.reading.tables import Row, bytes_for_rows, read_csv_rows
from evaluation.reading.values import finite_number, is_finite_number, json_type, shown
from evaluation.settings import CASE_INPUT, JSON_OUTPUT, Settings, setting
from evaluation.challenges.camelyon16.masks import MASK_SUFFIXES, read_mask

# The packages of requirements.txt this challenge's image installs (its pins stay there), numpy's dependencies
# included: TIFF masks (tifffile; imagecodecs decodes their LZW), .mha masks (SimpleITK), the evaluation mask
# (cv2, cc3d). build.sh installs these alone; tests/test_image_requirements.py scores the bundled example with
# every other package blocked.
RUNTIME_PACKAGES = ("numpy", "SimpleITK", "tifffile", "imagecodecs", "connected-components-3d", "opencv-python-headless")

REFERENCE_FILE = "reference.csv"
MASKS_FOLDER = "masks"
SLIDES_FILE = "slides.csv"  # predictions-file phase: image, probability per slide
SLIDES_HEADER = ["image", "probability"]
DETECTIONS_HEADER = ["p", "x", "y"]
DETECTION_COLUMNS = ("confidence", "X", "Y")
EVALUATION_LEVEL = 5  # the 2016 script's EVALUATION_MASK_LEVEL: pyramids are read at level 5
TUMOR, NORMAL = "tumor", "normal"
CURVE_POINTS = 500  # FROC points kept in metrics.json for plots
MM_TO_UM = 1000.0
MIN_PIXEL_SIZE_UM = 0.05  # no scanner resolves finer; below it the 75 µm disk would take gigabytes
MAX_MASK_LEVEL = 16  # 2**16: a level-0 slide of 220k pixels is 3 pixels wide there
# Sizes checked before a file is parsed. slides.csv: a row per ground-truth slide, plus a header,
# the excluded slides and a few unknown names (named by the case matching, not cut off here).
SLIDES_MARGIN = 16
# A detections file: the rules do not bound the detections of a slide, but a real file holds a
# few thousand rows (a few hundred kB): 64 MiB and 2 million rows are far beyond any, and keep a
# worker's memory for one slide's rows under about 1 GB.
MAX_DETECTIONS_BYTES = 64 * MEGABYTE
MAX_DETECTIONS = 2_000_000
MAX_REFERENCE_BYTES = 64 * MEGABYTE
SEPARATOR_HINT = " It looks separated by semicolons; separate values with commas."


@dataclass(frozen=True)
class Camelyon16Settings(Settings):
    input_socket: str | list[str] = setting("whole-slide-image", socket=CASE_INPUT,
                                            doc="input socket whose image name (without extension) is the "
                                                "slide (empty: the job's only image input; a list: one per "
                                                "interface of the phase)")
    likelihood_socket: str = setting("metastasis-likelihood", socket=JSON_OUTPUT, json_value="number",
                                     doc="output socket: the slide's metastasis likelihood, a JSON number")
    detections_socket: str = setting("metastasis-detections", socket=JSON_OUTPUT, json_value="points",
                                     doc="output socket: a 'Multiple points' JSON, a probability per point, "
                                         "coordinates in mm")
    froc_thresholds: str = setting("2016", choices=THRESHOLD_RULES,
                                   doc="'2016': the organizers' 2016 script (float32 lesion slots, thresholds "
                                       "sorted(set(all))[1:]); 'corrected': the later data-release rule (every "
                                       "distinct nonzero confidence, float64)")
    mask_level: int = setting(EVALUATION_LEVEL, minimum=0, maximum=MAX_MASK_LEVEL,
                              doc="pyramid level of single-page masks (pyramidal TIFFs are always read at "
                                  "level 5); the distance and ITC thresholds scale with 2**level")
    pixel_size_um: float = setting(0.243, minimum=MIN_PIXEL_SIZE_UM,
                                   doc="level-0 pixel size in µm (2016 constant L0_RESOLUTION): the 75 µm / 275 µm "
                                       "thresholds in pixels and the mm -> pixel conversion")
    pixel_size_from_tiff: bool = setting(False, doc="use a pyramidal mask's level-0 resolution tags (when "
                                                    "present) instead of pixel_size_um for that slide, as the "
                                                    "later data-release script does")
    excluded_slides: list[str] = setting(["Test_049"], doc="left out of both evaluations (Test_049 is a "
                                                           "duplicate); may still appear in a submission")
    excluded_from_lesion_evaluation: list[str] = setting(["Test_114"], doc="left out of the lesion evaluation "
                                                                           "only (Test_114 is not exhaustively "
                                                                           "annotated)")
    froc_chart_file: str = setting("", output_file=True,
                                   doc="file (the phase's Chart output relative_path, e.g. froc.json) for a Vega-Lite "
                                       "chart of the lesion-level FROC curve; empty: no chart")
    roc_chart_file: str = setting("", output_file=True,
                                  doc="file (a Chart output relative_path, e.g. slide-roc.json) for a Vega-Lite chart "
                                      "of the slide-level ROC curve; empty: no chart")


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


class Camelyon16(Evaluation):
    name = "camelyon16"
    title = "CAMELYON16: slide-level AUC and lesion-level FROC (lymph-node metastases)"
    settings_class = Camelyon16Settings
    case_label = "Slide"
    # Two leaderboards, one phase each (camelyon16.md): slide-level AUC, and lesion-level FROC with
    # its six sensitivities shown beside it, excluded from ranking.
    leaderboards = (
        Leaderboard(score=Column("Slide-level AUC (tumor vs normal)", "aggregates.slide_auc", "desc"),
                    decimal_places=4, scoring_method=ABSOLUTE),
        Leaderboard(score=Column("FROC score: mean sensitivity at 1/4 to 8 FP per slide", "aggregates.froc_score",
                                 "desc"),
                    decimal_places=4, scoring_method=ABSOLUTE,
                    extra_columns=tuple(Column(f"Sensitivity at {t:g} FP per slide",
                                               f"aggregates.froc_sensitivity_at_{_target_key(t)}", "desc",
                                               exclude_from_ranking=True) for t in FP_RATE_TARGETS)),
    )
    ranked_paths = leaderboard_paths(leaderboards, "aggregates.lesions_total", "aggregates.lesions_itc_excluded")
    # The two rules, one per leaderboard: slide AUC, and the FROC score (camelyon16.md).
    final_rankings = (OrderedRanking("slide_auc", (Key("aggregates.slide_auc", "desc"),)),
                      OrderedRanking("froc", (Key("aggregates.froc_score", "desc"),)))

    # ---- ground truth --------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, SlideTruth]:
        """reference.csv (image, type Tumor/Normal; a header row and further columns allowed)
        and masks/<image>.tif (or <image>_Mask.tif, .tiff, .png, .mha) for every tumor slide of
        the lesion evaluation."""
        path = directory / REFERENCE_FILE
        if not self.truth.is_file(path):
            raise SetupError(f"The ground truth has no {REFERENCE_FILE} (columns image, type).")
        rows = read_csv_rows(self.truth, path, f"Ground truth {REFERENCE_FILE}", MAX_REFERENCE_BYTES)
        if rows and rows[0].cells[0].lower() == "image":
            rows = rows[1:]
        excluded = set(self.settings.excluded_slides)
        lesion_excluded = set(self.settings.excluded_from_lesion_evaluation)
        masks = self._mask_files()
        slides: dict[str, SlideTruth] = {}
        for row in rows:
            if len(row.cells) < 2 or not row.cells[0] or row.cells[1].lower() not in (TUMOR, NORMAL):
                raise SetupError(f"Ground truth {REFERENCE_FILE}, row {row.line}: expected an image name and a type "
                                 f"Tumor or Normal.")
            slide, kind = strip_extension(row.cells[0]), row.cells[1].lower()
            # A slide's name names the participant's files too (slides.csv rows, detections files):
            # one that is not a plain file name is the ground truth's fault, never the submission's.
            where = f"Ground truth {REFERENCE_FILE}, row {row.line}"
            self.truth.check_parts(slide, what=where)
            if "/" in slide or slide in (".", ".."):
                raise SetupError(f"{where}: the slide name {shown_path(slide)} is not a plain file name.")
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

    def _mask_files(self) -> dict[str, Path]:
        """{slide: mask file} of the files directly in masks/ (regular files inside the ground
        truth, listed through its Origin)."""
        folder = self.truth.real_root / MASKS_FOLDER
        found: dict[str, Path] = {}
        for path in self.truth.list_files("Ground truth file"):
            lower = path.name.lower()
            suffix = next((s for s in MASK_SUFFIXES if lower.endswith(s)), None)
            if path.parent != folder or suffix is None:
                continue
            slide = path.name[: -len(suffix)]
            if slide.lower().endswith("_mask"):  # the CAMELYON16 release names them Test_001_Mask.tif
                slide = slide[: -len("_mask")]
            if slide in found:
                raise SetupError(f"Ground truth: slide {slide} has two masks ({found[slide].name}, {path.name}).")
            found[slide] = path
        return found

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
        origin = Origin.submission(input_dir)
        files = list_submission_files(input_dir)  # regular files inside /input only, named otherwise
        tables = [f for f in files if f.name.lower() == SLIDES_FILE]
        if not tables:
            _refuse_folder(origin, origin.path(SLIDES_FILE, what=SLIDES_FILE), "The slide probabilities")
        if len(tables) != 1:
            raise SubmissionError(f"The submission must hold exactly one {SLIDES_FILE} (image, probability per "
                                  f"slide) beside one <image>.csv of detections per slide; found {len(tables)}.")
        probabilities = self._read_slides_table(origin, tables[0])
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
        known = set(self.ground_truth)
        no_probability = sorted(s for s in detection_files if s in known and s not in probabilities)
        if no_probability:
            raise SubmissionError(f"{SLIDES_FILE} has no probability for {len(no_probability)} slide(s) that have a "
                                  f"detections file ({id_list(no_probability)}).")
        no_detections = sorted(s for s in probabilities if s in known and s not in detection_files
                               and self.ground_truth[s].lesion_evaluated)
        for slide in no_detections:  # a folder in place of the file is named as such
            _refuse_folder(origin, tables[0].parent / f"{slide}.csv", f"Slide {slide}")
        if no_detections:
            raise SubmissionError(f"No detections file for {len(no_detections)} slide(s) of {SLIDES_FILE} "
                                  f"({id_list([s + '.csv' for s in no_detections])}); every slide needs one, "
                                  f"empty when nothing is detected.")
        names = sorted(set(probabilities) | set(detection_files))
        # Excluded slides pass through: the run ignores them (check_case_ids, cases).
        return [(slide, SlideSource(probabilities.get(slide), detection_files.get(slide))) for slide in names]

    def _read_slides_table(self, origin: Origin, path: Path) -> dict[str, float]:
        """`image, probability` rows (the header optional), bounded by the number of slides of the
        ground truth before it is parsed."""
        max_rows = len(self.ground_truth) + len(self.settings.excluded_slides) + 1 + SLIDES_MARGIN
        rows = read_csv_rows(origin, path, "The slide probabilities", bytes_for_rows(max_rows), max_rows)
        probabilities: dict[str, float] = {}
        for row in _without_header(rows, SLIDES_HEADER):
            cells, n = row.cells, row.line
            if len(cells) != 2 or not cells[0]:
                raise SubmissionError(f"{SLIDES_FILE}, row {n}: expected 'image, probability', found "
                                      f"{shown(','.join(cells))}.{_separator_hint(cells)}")
            slide = strip_extension(cells[0])
            named = f"Slide {shown_path(slide)}"
            value = _cell_number(cells[1], f"{named}: the probability in row {n} of {SLIDES_FILE} is")
            if slide in probabilities:
                raise SubmissionError(f"{named}: {SLIDES_FILE} gives it two probabilities (second in row {n}).")
            probabilities[slide] = value
        return probabilities

    # ---- one slide -----------------------------------------------------------------------

    def read_file_prediction(self, case: Case, ground_truth: SlideTruth) -> SlidePrediction:
        """The probability of slides.csv and the slide's detections file (none: no detections,
        allowed for slides outside the lesion evaluation)."""
        source: SlideSource = case.source
        if source.probability is None:  # only excluded slides come without (filtered earlier)
            raise SubmissionError(f"{case.name}: {SLIDES_FILE} has no probability for it.")
        detections = (_read_detections_csv(case.origin, source.detections, case.name)
                      if source.detections is not None else Detections(np.zeros(0), np.zeros(0), np.zeros(0), "px", []))
        return SlidePrediction(source.probability, detections)

    def read_job_prediction(self, case: Case, ground_truth: SlideTruth) -> SlidePrediction:
        """The two JSON outputs: the likelihood (a number) and the detections (Multiple points, mm)."""
        slug = self.settings.likelihood_socket
        likelihood = finite_number(case.read_json(slug), f"{case.name}: the output {slug!r}", error=case.origin.error)
        slug = self.settings.detections_socket
        return SlidePrediction(likelihood, _points_detections(case.read_json(slug), case.name, slug))

    def score_case(self, case: Case, prediction: SlidePrediction, ground_truth: SlideTruth) -> SlideResult:
        if not ground_truth.lesion_evaluated:
            return SlideResult(prediction.probability, None)
        detections = prediction.detections
        settings = self.settings
        mask = None
        pixel_size = settings.pixel_size_um
        if ground_truth.is_tumor:
            mask = read_mask(ground_truth.mask, EVALUATION_LEVEL, settings.mask_level,
                             what=f"Mask of slide {case.case_id}", origin=self.truth)
            if settings.pixel_size_from_tiff and mask.level0_pixel_size_um is not None:
                pixel_size = mask.level0_pixel_size_um
                if not pixel_size >= MIN_PIXEL_SIZE_UM:
                    raise SetupError(f"Mask of slide {case.case_id}: the resolution tags of {ground_truth.mask.name} "
                                     f"give a level-0 pixel size of {pixel_size:g} µm; it must be at least "
                                     f"{MIN_PIXEL_SIZE_UM:g} µm (or turn pixel_size_from_tiff off).")
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
        slides = sorted(results)
        y_true = np.array([self.ground_truth[s].is_tumor for s in slides], dtype=np.int8)
        y_score = np.array([results[s].probability for s in slides])
        # scikit-learn's roc_auc_score, bit for bit; both classes are there (load_ground_truth)
        auc = roc_auc(ranking_curve(y_true, y_score, np.ones(len(slides))))

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

    # ---- the final ranking's statistics and curves ------------------------------------------

    def aggregate(self, results: dict[str, SlideResult], counts: np.ndarray) -> dict[str, np.ndarray]:
        """Slide AUC and FROC score on bootstrap resamples of the slides (a slide drawn k times
        counts k times: its probability in the AUC, its detections, lesions and place in the FP
        rate's denominator in the FROC); NaN for an AUC without both slide types and a FROC
        without a lesion (score_aggregates refuses those)."""
        slides = sorted(results)
        counts = np.asarray(counts, dtype=np.int64)
        is_tumor = np.array([self.ground_truth[s].is_tumor for s in slides], dtype=bool)
        probabilities = np.array([results[s].probability for s in slides], dtype=np.float64)
        lesion_columns = [j for j, s in enumerate(slides) if results[s].hits is not None]
        froc = resampled_froc_scores([results[slides[j]].hits for j in lesion_columns], counts[:, lesion_columns],
                                     self.settings.froc_thresholds)
        return {"aggregates.slide_auc": resampled_roc_auc(is_tumor, probabilities, counts),
                "aggregates.froc_score": froc}

    def ranking_curves(self, results: dict[str, SlideResult], metrics: dict[str, Any]) -> list[dict]:
        """The lesion-level FROC curve (as metrics.json's froc_curve: FP rates increasing, at most
        500 points) and the slide-level ROC curve (scikit-learn's roc_curve points, thinned as
        the charts thin them)."""
        from evaluation import charts

        slides = sorted(results)
        hits = [results[s].hits for s in slides if results[s].hits is not None]
        curve = froc_curve(hits, self.settings.froc_thresholds)
        fp_rates, sensitivities = compact_curve(curve.fp_rates[::-1], curve.sensitivities[::-1])
        is_tumor = np.array([self.ground_truth[s].is_tumor for s in slides], dtype=bool)
        probabilities = np.array([results[s].probability for s in slides], dtype=np.float64)
        fpr, tpr, _ = roc_points(ranking_curve(is_tumor, probabilities, np.ones(len(slides))))
        kept = charts.thinned(len(fpr))
        return [
            {"chart": "froc", "title": "Lesion-level FROC", "x_title": "Average false positives per slide",
             "y_title": "Sensitivity", "points": [[x, y] for x, y in zip(fp_rates, sensitivities)]},
            {"chart": "slide_roc", "title": "Slide-level ROC (tumor vs normal)", "x_title": "False positive rate",
             "y_title": "Sensitivity", "points": [[float(fpr[i]), float(tpr[i])] for i in kept]},
        ]

    # ---- charts (only when their settings name a file) -----------------------------------

    chart_builders = {"froc_chart_file": "froc_chart", "roc_chart_file": "slide_roc_chart"}

    def froc_chart(self, results: dict[str, SlideResult], metrics: dict[str, Any]) -> dict:
        hits = [results[s].hits for s in sorted(results) if results[s].hits is not None]
        return lesion_froc_chart(froc_curve(hits, self.settings.froc_thresholds), metrics["aggregates"],
                                 self.settings.froc_thresholds)

    def slide_roc_chart(self, results: dict[str, SlideResult], metrics: dict[str, Any]) -> dict:
        slides = sorted(results)
        is_tumor = np.array([self.ground_truth[s].is_tumor for s in slides])
        probabilities = np.array([results[s].probability for s in slides])
        return slide_roc_chart(is_tumor, probabilities, metrics["aggregates"])


def resampled_roc_auc(is_tumor: np.ndarray, scores: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """roc_auc(ranking_curve(is_tumor, scores, counts[r])) of every row r at once, NaN without
    both classes: the trapezoids of the ROC curve with one point per distinct score (tied scores
    enter together; a score not drawn repeats the previous point, a zero-width step), counted
    in pairs, a tie between a tumor and a normal slide scoring one half. scikit-learn's area up
    to rounding (its collinear points dropped change no trapezoid sum)."""
    order = stable_order(scores)[::-1]  # scores decreasing, as ranking_curve
    ordered = scores[order]
    ends = np.r_[np.flatnonzero(np.diff(ordered)), len(ordered) - 1]  # last slide of each distinct score
    weights = np.asarray(counts, dtype=np.float64)[:, order]
    tumor = is_tumor[order]
    tps = np.cumsum(weights * tumor, axis=1)[:, ends]
    fps = np.cumsum(weights * ~tumor, axis=1)[:, ends]
    zeros = np.zeros((len(weights), 1))
    tps_before, fps_before = np.hstack([zeros, tps[:, :-1]]), np.hstack([zeros, fps[:, :-1]])
    positives, negatives = tps[:, -1], fps[:, -1]
    pairs = 2.0 * positives * negatives
    area = ((fps - fps_before) * (tps + tps_before)).sum(axis=1)
    return np.divide(area, pairs, out=np.full(len(weights), np.nan), where=pairs > 0)


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


def _without_header(rows: list[Row], header: list[str]) -> list[Row]:
    """The rows, without the first when it is the (optional) header."""
    if rows and [cell.lower() for cell in rows[0].cells] == header:
        return rows[1:]
    return rows


def _separator_hint(cells: list[str]) -> str:
    return SEPARATOR_HINT if any(";" in cell for cell in cells) else ""


def _cell_number(cell: str, what: str) -> float:
    """A CSV cell as a finite number; otherwise "<what> <the cell as written>, not a number." (or
    "...; it must be a finite number." for NaN, inf and numbers beyond the float range)."""
    try:
        value = float(cell)
    except ValueError:
        raise SubmissionError(f"{what} {shown(cell)}, not a number.") from None
    if not np.isfinite(value):
        raise SubmissionError(f"{what} {shown(cell)}; it must be a finite number.")
    return value


def _read_detections_csv(origin: Origin, path: Path, slide: str) -> Detections:
    """`confidence, X, Y` rows in level-0 pixels; no header, or the header p,x,y; empty = none."""
    name = shown_path(path.name)
    rows = read_csv_rows(origin, path, slide, MAX_DETECTIONS_BYTES, MAX_DETECTIONS)
    values, where = [], []
    for row in _without_header(rows, DETECTIONS_HEADER):
        cells, n = row.cells, row.line
        if len(cells) != 3:
            raise SubmissionError(f"{slide}: row {n} of {name} has {len(cells)} value(s); expected 3 "
                                  f"(confidence, X, Y), found {shown(','.join(cells))}.{_separator_hint(cells)}")
        values.append([_cell_number(cell, f"{slide}: row {n} of {name} has {column}")
                       for cell, column in zip(cells, DETECTION_COLUMNS)])
        where.append(f"row {n} of {name}")
    array = np.array(values, dtype=np.float64).reshape(-1, 3)
    detections = Detections(array[:, 0], array[:, 1], array[:, 2], "px", where)
    _check_confidences(detections, slide)
    return detections


def _points_detections(document: Any, slide: str, slug: str) -> Detections:
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
        for value, column in [(probability, "probability")] + list(zip(coordinates[:2], ("x", "y"))):
            if not is_finite_number(value):
                number = json_type(value) == "a number"  # NaN, Infinity, or an integer no float holds
                raise SubmissionError(f"{what}: point {n} has {column} {shown(value)}"
                                      f"{'; it must be a finite number' if number else ', not a number'}.")
        values.append((float(probability), float(coordinates[0]), float(coordinates[1])))
        where.append(f"point {n} of output {slug!r}")
    array = np.array(values, dtype=np.float64).reshape(-1, 3)
    detections = Detections(array[:, 0], array[:, 1], array[:, 2], "mm", where)
    _check_confidences(detections, slide)
    return detections


def _check_confidences(detections: Detections, slide: str) -> None:
    """Confidences not negative (a missed lesion counts as confidence 0, so a negative one would
    turn every missed lesion into a hit at threshold 0); values are finite already."""
    bad = np.flatnonzero(detections.confidences < 0)
    if len(bad):
        i = bad[0]
        raise SubmissionError(f"{slide}: {detections.where[i]} has confidence {shown(float(detections.confidences[i]))}; "
                              f"confidences must be 0 or more.")


def _refuse_folder(origin: Origin, path: Path, what: str) -> None:
    """A folder (or anything but a file) where a CSV file the listing did not find is expected,
    named as such by the reading layer; nothing when there is simply no such name."""
    if origin.exists(path):
        origin.regular_file(origin.contains(path, what), what)


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


# ---- charts -------------------------------------------------------------------------------------


def _fp_rate_label(target: float) -> str:
    """0.25 -> '1/4 FP per slide', 2.0 -> '2 FPs per slide'."""
    text = f"1/{round(1 / target)}" if target < 1 else f"{target:g}"
    return f"{text} FP{'s' if target > 1 else ''} per slide"


def lesion_froc_chart(curve, aggregates: dict[str, Any], rule: str) -> dict:
    """The FROC curve of metrics.json's froc_score (FP rates increasing), the sensitivity at each
    of the six official FP rates marked exactly (the values of aggregates.froc_sensitivity_at_*)."""
    from evaluation import charts

    thresholds = [float("inf"), *curve.thresholds[::-1].tolist()]  # the (0, 0) end point has no threshold
    line = charts.Curve("lesion FROC", curve.fp_rates[::-1].tolist(), curve.sensitivities[::-1].tolist(), thresholds)
    marks = [charts.Marked(target, float(value), _fp_rate_label(target))
             for target, value in zip(FP_RATE_TARGETS, froc_sensitivities(curve))]
    subtitle = (f"FROC score {aggregates['froc_score']:.4f} (mean sensitivity at 1/4, 1/2, 1, 2, 4 and 8 FPs per "
                f"slide); {aggregates['lesions_total']} lesions on {aggregates['slides_in_lesion_evaluation']} slides")
    about = (f"Lesion-level FROC: sensitivity (lesions hit, ITC excluded) against the average number of false "
             f"positives per slide, one point per detection threshold ({rule} threshold rule); the red points are "
             f"the six operating points whose mean is the FROC score, interpolated on the curve as the 2016 script "
             f"does.")
    return charts.froc_chart(line, marks, title="CAMELYON16: lesion-level FROC curve", subtitle=subtitle, about=about)


def slide_roc_chart(is_tumor: np.ndarray, probabilities: np.ndarray, aggregates: dict[str, Any]) -> dict:
    """The slide-level ROC curve (tumor against normal slides, by the submitted probability)."""
    from evaluation import charts

    fpr, tpr, thresholds = roc_points(ranking_curve(is_tumor, probabilities, np.ones(len(is_tumor))))
    auc = aggregates["slide_auc"]
    line = charts.Curve("slides", fpr.tolist(), tpr.tolist(), thresholds.tolist(), summary=f"AUC {auc:.3f}")
    subtitle = (f"slide AUC {auc:.4f}: {aggregates['tumor_slides']} tumor and {aggregates['normal_slides']} normal "
                f"slides")
    about = ("Slide-level ROC curve: tumor slides against normal slides, ranked by the submitted metastasis "
             "probability; the points of scikit-learn's roc_curve (collinear points dropped).")
    return charts.roc_chart([line], title="CAMELYON16: slide-level ROC curve", subtitle=subtitle,
                            line_title="curve (AUC)", about=about)
