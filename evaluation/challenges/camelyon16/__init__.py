"""CAMELYON16: lymph-node metastases in whole-slide images (docs/challenges/camelyon16.md).

Two leaderboards from one submission: slide-level ROC AUC (tumor vs normal against one
probability per slide), and lesion-level FROC (the mean sensitivity at 1/4 .. 8 false positives
per slide) with the evaluation mask, ITC rule, hit rules and thresholds of the organizers'
2016 script; the later script's threshold rule is a setting.

The declaration: settings, the ranked values (declared once below), the leaderboards and
final-ranking rules built from them, and thin hooks over the folder's parts: truth.py (reference
CSV, masks, evaluation masks), predictions.py (a submission's files and outputs), scoring.py (a
slide's result and the one weighted aggregate), charts.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.challenges.camelyon16.charts import (
    lesion_froc_chart,
    ranking_curves,
    slide_roc_chart,
)
from evaluation.challenges.camelyon16.predictions import (
    NO_DETECTIONS,
    SLIDES_FILE,
    SLIDES_MARGIN,
    SlidePrediction,
    SlideSource,
    points_detections,
    read_detections_csv,
    submission_files,
)
from evaluation.challenges.camelyon16.scoring import (
    SlideResult,
    aggregate,
    plotted_curve,
    slide_result,
)
from evaluation.challenges.camelyon16.truth import (
    EVALUATION_LEVEL,
    MAX_MASK_LEVEL,
    MIN_PIXEL_SIZE_UM,
    SlideTruth,
    read_reference,
)
from evaluation.declarations.charts import Chart
from evaluation.declarations.columns import ABSOLUTE, Column, Leaderboard
from evaluation.declarations.ranking_rules import OrderedRanking
from evaluation.errors import SetupError, SubmissionError
from evaluation.framework import Evaluation, log
from evaluation.metrics.froc import FP_RATE_TARGETS, THRESHOLD_RULES, froc_curve
from evaluation.platform.cases import Case
from evaluation.reading.values import finite_number
from evaluation.settings import CASE_INPUT, JSON_OUTPUT, Settings, setting

# The packages of requirements.txt this challenge's image installs (its pins stay there), numpy's dependencies
# included: TIFF masks (tifffile; imagecodecs decodes their LZW), .mha masks (SimpleITK), the evaluation mask
# (cv2, cc3d). build.sh installs these alone; tests/test_image_requirements.py scores the bundled example with
# every other package blocked.
RUNTIME_PACKAGES = (
    "numpy", "SimpleITK", "tifffile", "imagecodecs", "connected-components-3d", "opencv-python-headless",
)


def _target_key(target: float) -> str:
    """0.25 -> '0_25', 1.0 -> '1': a key without dots (leaderboard paths split on dots)."""
    return f"{target:g}".replace(".", "_")


# ---- the ranked values, each declared once -----------------------------------------------------

AGGREGATES = "aggregates"  # metrics.json's object of the ranked values
SLIDE_AUC = Column("Slide-level AUC (tumor vs normal)", f"{AGGREGATES}.slide_auc", "desc")
FROC_SCORE = Column("FROC score: mean sensitivity at 1/4 to 8 FP per slide", f"{AGGREGATES}.froc_score", "desc")
# Shown beside the FROC score, excluded from ranking: the six sensitivities it is the mean of.
FROC_SENSITIVITIES = tuple(Column(f"Sensitivity at {t:g} FP per slide",
                                  f"{AGGREGATES}.froc_sensitivity_at_{_target_key(t)}", "desc",
                                  exclude_from_ranking=True) for t in FP_RATE_TARGETS)
# On no leaderboard, yet guaranteed numbers in metrics.json (ranked_paths): the lesions the FROC
# counts and the ITC regions it leaves out.
LESIONS_TOTAL = f"{AGGREGATES}.lesions_total"
LESIONS_ITC_EXCLUDED = f"{AGGREGATES}.lesions_itc_excluded"


def _key(path: str) -> str:
    """A ranked value's key in metrics.json's aggregates object."""
    return path.removeprefix(f"{AGGREGATES}.")


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


class Camelyon16(Evaluation):
    name = "camelyon16"
    title = "CAMELYON16: slide-level AUC and lesion-level FROC (lymph-node metastases)"
    settings_class = Camelyon16Settings
    case_label = "Slide"
    # Two leaderboards, one phase each (camelyon16.md): slide-level AUC, and lesion-level FROC with
    # its six sensitivities shown beside it, excluded from ranking.
    leaderboards = (
        Leaderboard(score=SLIDE_AUC, decimal_places=4, scoring_method=ABSOLUTE),
        Leaderboard(score=FROC_SCORE, decimal_places=4, scoring_method=ABSOLUTE, extra_columns=FROC_SENSITIVITIES),
    )
    extra_ranked_paths = (LESIONS_TOTAL, LESIONS_ITC_EXCLUDED)
    # The two rules, one per leaderboard: slide AUC, and the FROC score (camelyon16.md).
    final_rankings = (OrderedRanking("slide_auc", (SLIDE_AUC,)), OrderedRanking("froc", (FROC_SCORE,)))

    # ---- ground truth and matching: excluded slides may be submitted, and are ignored -----

    def load_ground_truth(self, directory: Path) -> dict[str, SlideTruth]:
        return read_reference(self.truth, directory, set(self.settings.excluded_slides),
                              set(self.settings.excluded_from_lesion_evaluation))

    def ignored_case_ids(self) -> frozenset[str]:
        return frozenset(self.settings.excluded_slides)

    # ---- a submission --------------------------------------------------------------------

    def file_cases(self, input_dir: Path) -> list[tuple[str, SlideSource]]:
        """slides.csv (image, probability) and one <image>.csv of detections per slide; slides.csv
        is bounded by the number of slides of the ground truth before it is parsed."""
        table_rows = len(self.ground_truth) + len(self.settings.excluded_slides) + 1 + SLIDES_MARGIN
        known = {slide: truth.lesion_evaluated for slide, truth in self.ground_truth.items()}
        return submission_files(input_dir, known, table_rows)

    def read_file_prediction(self, case: Case, ground_truth: SlideTruth) -> SlidePrediction:
        """The probability of slides.csv and the slide's detections file (none: no detections,
        allowed for slides outside the lesion evaluation)."""
        source: SlideSource = case.source
        if source.probability is None:  # only excluded slides come without (filtered earlier)
            raise SubmissionError(f"{case.name}: {SLIDES_FILE} has no probability for it.")
        detections = (read_detections_csv(case.origin, source.detections, case.name)
                      if source.detections is not None else NO_DETECTIONS)
        return SlidePrediction(source.probability, detections)

    def read_job_prediction(self, case: Case, ground_truth: SlideTruth) -> SlidePrediction:
        """The two JSON outputs: the likelihood (a number) and the detections (Multiple points, mm)."""
        slug = self.settings.likelihood_socket
        likelihood = finite_number(case.read_json(slug), f"{case.name}: the output {slug!r}", error=case.origin.error)
        slug = self.settings.detections_socket
        return SlidePrediction(likelihood, points_detections(case.read_json(slug), case.name, slug))

    def score_case(self, case: Case, prediction: SlidePrediction, ground_truth: SlideTruth) -> SlideResult:
        settings = self.settings
        return slide_result(self.truth, case.case_id, case.name, prediction, ground_truth, settings.mask_level,
                            settings.pixel_size_um, settings.pixel_size_from_tiff)

    # ---- the ranked values: one aggregate for metrics.json and the final ranking's bootstrap ---

    def aggregate(self, results: dict[str, SlideResult], weights: np.ndarray) -> dict[str, np.ndarray]:
        """Slide AUC and FROC (score, six sensitivities, lesions and ITC regions counted) over slide
        weights: a slide weighted k counts k times, its probability in the AUC, its detections,
        lesions and place in the FP rate's denominator in the FROC. NaN for an AUC without both
        slide types and a FROC without a lesion (score_aggregates refuses those)."""
        slides = sorted(results)
        is_tumor = np.array([self.ground_truth[s].is_tumor for s in slides], dtype=bool)
        values = aggregate(is_tumor, [results[s] for s in slides], weights, self.settings.froc_thresholds,
                           FP_RATE_TARGETS)
        return {SLIDE_AUC.path: values.slide_auc, FROC_SCORE.path: values.froc_score,
                **{column.path: values.sensitivities[:, k] for k, column in enumerate(FROC_SENSITIVITIES)},
                LESIONS_TOTAL: values.lesions, LESIONS_ITC_EXCLUDED: values.itc_regions}

    def score_aggregates(self, results: dict[str, SlideResult]) -> dict[str, Any]:
        slides = sorted(results)
        values = self.point_values(results)
        lesions, itc = int(values[LESIONS_TOTAL]), int(values[LESIONS_ITC_EXCLUDED])
        if lesions == 0:
            raise SetupError("The tumor masks hold no lesion beyond isolated tumor cells, so the FROC sensitivity "
                             "is undefined.")
        lesion_slides = [s for s in slides if results[s].hits is not None]
        hits = [results[s].hits for s in lesion_slides]
        curve = froc_curve(hits, self.settings.froc_thresholds)  # the points metrics.json keeps for plots
        tumor = sum(1 for s in slides if self.ground_truth[s].is_tumor)
        log(f"Slide AUC {values[SLIDE_AUC.path]:.4f} on {len(slides)} slides; FROC on {len(lesion_slides)} slides, "
            f"{lesions} lesions ({itc} ITC regions left out), {len(curve.thresholds)} thresholds.")
        aggregates: dict[str, Any] = {_key(column.path): values[column.path]
                                      for column in (SLIDE_AUC, FROC_SCORE, *FROC_SENSITIVITIES)}
        aggregates.update({
            _key(LESIONS_TOTAL): lesions,
            _key(LESIONS_ITC_EXCLUDED): itc,
            "slides_evaluated": len(slides),
            "tumor_slides": tumor,
            "normal_slides": len(slides) - tumor,
            "slides_in_lesion_evaluation": len(lesion_slides),
            "detections_false_positive": int(sum(len(h.false_positives) for h in hits)),
            "lesions_detected": int(sum(np.count_nonzero(h.lesion_confidences > 0) for h in hits)),
        })
        fp_rates, sensitivity = plotted_curve(curve)
        return {AGGREGATES: aggregates,
                "froc_curve": {"average_false_positives_per_slide": fp_rates, "sensitivity": sensitivity,
                               "thresholds": len(curve.thresholds)}}

    # ---- curves and charts -------------------------------------------------------------------

    def _slides(self, results: dict[str, SlideResult]) -> tuple[np.ndarray, np.ndarray]:
        slides = sorted(results)
        is_tumor = np.array([self.ground_truth[s].is_tumor for s in slides], dtype=bool)
        probabilities = np.array([results[s].probability for s in slides], dtype=np.float64)
        return is_tumor, probabilities

    def _froc_curve(self, results: dict[str, SlideResult]):
        hits = [results[s].hits for s in sorted(results) if results[s].hits is not None]
        return froc_curve(hits, self.settings.froc_thresholds)

    def ranking_curves(self, results: dict[str, SlideResult], metrics: dict[str, Any]) -> list[dict]:
        fp_rates, sensitivities = plotted_curve(self._froc_curve(results))
        return ranking_curves(fp_rates, sensitivities, *self._slides(results))

    # ---- charts (only when their settings name a file) -----------------------------------

    def froc_chart(self, results: dict[str, SlideResult], metrics: dict[str, Any]) -> dict:
        aggregates = metrics[AGGREGATES]
        marked = [(target, aggregates[_key(column.path)])
                  for target, column in zip(FP_RATE_TARGETS, FROC_SENSITIVITIES, strict=True)]
        return lesion_froc_chart(self._froc_curve(results), aggregates, marked, self.settings.froc_thresholds)

    def slide_roc_chart(self, results: dict[str, SlideResult], metrics: dict[str, Any]) -> dict:
        return slide_roc_chart(*self._slides(results), metrics[AGGREGATES])

    result_charts = (Chart("froc_chart_file", froc_chart), Chart("roc_chart_file", slide_roc_chart))
