"""HECKTOR 2025 Task 1: GTVp and GTVn detection and segmentation in PET/CT
(docs/challenges/hecktor2025.md, "Task 1").

Per patient, one pass over both label maps gives every label count; GTVn lesions are the
26-connected components of label 2, matched one to one by IoU > 0.3. Leaderboard values: the mean
per-patient Dice of GTVp, the aggregated Dice of GTVn (HECKTOR 2022: sums weighted by each
patient's voxel volume) and the aggregated detection F1 of GTVn (TP, FP, FN summed over the test
set). The Borda ranking across submissions is computed from these by `final_rankings`
(ranking.py's NestedBorda), with `aggregate` for its bootstrap statistics.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluation.challenges.hecktor2025.common import HecktorEvaluation, HecktorSettings, submission_name
from evaluation.declarations.charts import Chart
from evaluation.declarations.columns import Column
from evaluation.errors import SubmissionError, id_list
from evaluation.metrics.instances import connected_components, f1_from_counts, match_instances
from evaluation.metrics.overlap import dice_from_counts, label_confusion
from evaluation.platform.cases import Case
from evaluation.platform.locations import (
    list_submission_files,
    strip_extension,
)
from evaluation.platform.outputs import Undefined, nest_paths, value_at_path
from evaluation.reading.files import shown_path
from evaluation.reading.images import Geometry, ImageFile, open_image
from evaluation.reading.label_maps import label_voxels, read_label_map, truth_label_map_files
from evaluation.settings import IMAGE_OUTPUT, setting

BACKGROUND, GTVP, GTVN = 0, 1, 2
LABELS = (BACKGROUND, GTVP, GTVN)
LABEL_NAMES = "0 (background), 1 (GTVp) and 2 (GTVn)"
MASK_SUFFIXES = (".nii.gz", ".mha", ".nii", ".nrrd")  # ground truth: <PatientID>.nii.gz or .mha
LESION_MATCHING = ("greedy", "hungarian")  # one to one, as match_instances names them
GTVN_SUM_ELEMENTS = 1 << 21  # (patients x rows x 3) products summed at a time by aggregate (16 MB)


@dataclass(frozen=True)
class Task1Settings(HecktorSettings):
    output_socket: str = setting("tumor-lymph-node-segmentation", socket=IMAGE_OUTPUT,
                                 doc="image output read: a label map on the CT grid (0 background, 1 GTVp, 2 GTVn)")
    geometry_tolerance: float = setting(1e-4, minimum=0.0,
                                        doc="relative tolerance on spacing, origin and direction (spec: 1e-4); the "
                                            "size must be equal; masks are never resampled")
    gtvp_dsc_both_empty: float = setting(1.0, minimum=0.0, maximum=1.0,
                                         doc="GTVp Dice of a patient with no GTVp in ground truth nor prediction "
                                             "(spec: 1.0)")
    gtvn_dsc_agg_all_empty: float = setting(1.0, minimum=0.0, maximum=1.0,
                                            doc="aggregated GTVn Dice when no patient has GTVn in ground truth or "
                                                "prediction (spec: 1.0)")
    gtvn_f1_all_zero: float = setting(1.0, minimum=0.0, maximum=1.0,
                                      doc="aggregated GTVn F1 when TP, FP and FN are all 0 (spec: 1.0)")
    lesion_connectivity: int = setting(26, choices=(6, 18, 26),
                                       doc="voxel connectivity of a lesion (connected component of label 2; spec: 26)")
    lesion_iou_threshold: float = setting(0.3, minimum=0.0, maximum=1.0,
                                          doc="a predicted and a true lesion match when IoU is strictly above this "
                                              "(spec: 0.3)")
    lesion_matching: str = setting("greedy", choices=LESION_MATCHING,
                                   doc="one-to-one matching: 'greedy' by descending IoU (spec) or 'hungarian' "
                                       "(largest total IoU)")
    case_true_volumes: bool = setting(False, doc="also write each patient's ground-truth GTVp/GTVn volumes under "
                                                 "'case' (participants can read metrics.json: off by default)")
    structure_chart_file: str = setting("", output_file=True,
                                        doc="file (the phase's Chart output relative_path, e.g. structures.json) for "
                                            "a Vega-Lite bar chart of GTVp Dice, GTVn Dice and GTVn detection F1; "
                                            "empty: no chart")


@dataclass(frozen=True)
class PatientResult:
    """What one patient leaves for the aggregates: counts, never voxels."""

    gtvp: tuple[int, int, int]  # (|P ∩ G|, |P|, |G|) in voxels
    gtvn: tuple[int, int, int]
    voxel_volume: float  # mm³
    lesions: tuple[int, int, int]  # GTVn (TP, FP, FN)


class SegmentationTask(HecktorEvaluation):
    """Reading and scoring the label maps; the declaration (name, columns, leaderboard, Borda
    rule) is HecktorTask1's, in __init__.py."""

    # The ranked values (the Borda count's three) and the lesion counts shown beside them.
    gtvp_dsc: ClassVar[Column]
    gtvn_dsc: ClassVar[Column]
    gtvn_f1: ClassVar[Column]
    gtvn_tp: ClassVar[Column]
    gtvn_fp: ClassVar[Column]
    gtvn_fn: ClassVar[Column]
    settings_class = Task1Settings

    # ---- ground truth --------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, Path]:
        """{PatientID: path of its label mask}: `<PatientID>.nii.gz` or `.mha`, read per patient
        in the worker that scores it."""
        return truth_label_map_files(directory, MASK_SUFFIXES, case_label="patient", case_id_text="<PatientID>")

    # ---- one patient ---------------------------------------------------------------------

    def file_cases(self, input_dir: Path) -> list[tuple[str, Path]]:
        """The 2022-style predictions-file phase: an unpacked ZIP of `<PatientID>.nii.gz` masks
        (any folder depth; a link leading out of /input is refused by name)."""
        found = []
        for path in list_submission_files(input_dir):
            if not path.name.lower().endswith(MASK_SUFFIXES):
                raise SubmissionError(f"The submission file {shown_path(submission_name(input_dir, path))} is not a "
                                      f"<PatientID>.nii.gz (or .mha) mask; the ZIP must hold only the masks.")
            found.append((strip_extension(path.name), path))
        if not found:
            raise SubmissionError("The submission holds no <PatientID>.nii.gz mask.")
        return found

    def read_job_prediction(self, case: Case, ground_truth: Path):
        path = case.image_file(self.settings.output_socket)
        return self.read_pair(case, open_image(case.origin, path, f"{case.name}, segmentation"), ground_truth)

    def read_file_prediction(self, case: Case, ground_truth: Path):
        return self.read_pair(case, open_image(case.origin, case.source, f"{case.name}, segmentation"), ground_truth)

    def read_pair(self, case: Case, prediction: ImageFile, ground_truth: Path):
        """Both label maps as uint8 on the same grid, and that grid. The two headers are
        compared before either is decoded (evaluation/reading/label_maps.py): another grid
        (never resampled) is rejected naming what differs and both values, so a header claiming
        billions of voxels is never decoded; then a label outside {0, 1, 2} is rejected naming
        the case."""
        truth = open_image(self.truth, ground_truth, f"Ground truth {ground_truth.name}")
        predicted = read_label_map(prediction, truth.geometry, LABELS, case.name, reference="CT",
                                   labels_text=LABEL_NAMES, tolerance=self.settings.geometry_tolerance)
        truth_voxels = label_voxels(truth.read(None), LABELS, self.truth, f"Ground truth {ground_truth.name}",
                                    labels_text=LABEL_NAMES)
        return truth_voxels, predicted.voxels, truth.geometry

    def score_case(self, case: Case, prediction, ground_truth: Path) -> PatientResult:
        truth, predicted, geometry = prediction
        return score_patient(truth, predicted, geometry, self.settings)

    # ---- the leaderboard -----------------------------------------------------------------

    def score_aggregates(self, results: dict[str, PatientResult]) -> dict[str, Any]:
        settings = self.settings
        patients = sorted(results)
        per_case: dict[str, Any] = {}
        for patient in patients:
            result = results[patient]
            v = result.voxel_volume
            lesion_tp, lesion_fp, lesion_fn = result.lesions
            entry: dict[str, Any] = {
                "gtvp_dsc": dice_from_counts(*result.gtvp, both_empty=settings.gtvp_dsc_both_empty),
                "gtvn_dsc": (dice_from_counts(*result.gtvn) if result.gtvn[1] + result.gtvn[2] else
                             Undefined("no GTVn in ground truth nor prediction")),
                "gtvn_tp": lesion_tp,
                "gtvn_fp": lesion_fp,
                "gtvn_fn": lesion_fn,
                "gtvp_volume_predicted_ml": result.gtvp[1] * v / 1000.0,
                "gtvn_volume_predicted_ml": result.gtvn[1] * v / 1000.0,
            }
            if settings.case_true_volumes:
                entry["gtvp_volume_true_ml"] = result.gtvp[2] * v / 1000.0
                entry["gtvn_volume_true_ml"] = result.gtvn[2] * v / 1000.0
            per_case[patient] = entry
        point = self.point_values(results)
        lesion_counts = (self.gtvn_tp.path, self.gtvn_fp.path, self.gtvn_fn.path)
        # the lesion counts are whole numbers, shown as such (sums of whole floats: exact)
        tp, fp, fn = (int(point[path]) for path in lesion_counts)
        return {
            **nest_paths({path: int(value) if path in lesion_counts else value for path, value in point.items()}),
            "counts": {
                "patients": len(patients),
                "patients_without_gtvp_in_either": sum(1 for p in patients
                                                       if results[p].gtvp[1] + results[p].gtvp[2] == 0),
                "gtvn_true_lesions": tp + fn,
                "gtvn_predicted_lesions": tp + fp,
            },
            "case": per_case,
        }

    def aggregate(self, results: dict[str, PatientResult], counts: np.ndarray) -> dict[str, np.ndarray]:
        """The Borda count's three values and the lesion counts for every row of case weights
        (multiplicities of sorted(results)): the weighted mean of the per-patient GTVp Dice, the
        GTVn Dice of the weighted sums of v|P∩G|, v|P|, v|G| (mm³), the F1 of the weighted sums
        of TP, FP, FN. Never undefined: the empty-set settings apply per row."""
        settings = self.settings
        patients = [results[p] for p in sorted(results)]
        weights = np.asarray(counts, dtype=np.float64)
        gtvp = np.array([r.gtvp for r in patients], dtype=np.float64).reshape(len(patients), 3)  # |P∩G|, |P|, |G|
        gtvp_dice = dice_from_counts(gtvp[:, 0], gtvp[:, 1], gtvp[:, 2], settings.gtvp_dsc_both_empty)
        # per patient: GTVn v|P∩G|, v|P|, v|G| (mm³); lesion TP, FP, FN
        columns = np.array([[*(k * r.voxel_volume for k in r.gtvn), *r.lesions] for r in patients],
                           dtype=np.float64).reshape(len(patients), 6)
        # Summation order matters for the bits of metrics.json (byte-identical to the per-patient
        # loop this replaced, and so to the final ranking's values): the GTVp mean is numpy's
        # pairwise sum along each row, as np.mean of the Dice list was; the GTVn volumes are
        # added patient after patient, as that loop added them: numpy's sum over the first axis
        # of a C-ordered (patients, rows, 3) array adds its slices in order (a matrix product
        # adds them in another order, changing the last bits from about 8 patients on). The
        # lesion counts are whole numbers, exact in any order: one matrix product.
        gtvp_sums = np.add.reduce(weights * gtvp_dice, axis=1)
        sums = np.empty((len(weights), 6))
        block = max(1, GTVN_SUM_ELEMENTS // max(1, 3 * len(patients)))
        for start in range(0, len(weights), block):
            rows = weights[start:start + block]
            products = np.multiply(rows.T[:, :, None], columns[:, None, :3], order="C")
            sums[start:start + block, :3] = np.add.reduce(products, axis=0)
        sums[:, 3:] = weights @ columns[:, 3:]
        intersection, predicted, true = sums[:, 0], sums[:, 1], sums[:, 2]
        tp, fp, fn = sums[:, 3], sums[:, 4], sums[:, 5]
        with np.errstate(invalid="ignore", divide="ignore"):
            gtvp_mean = gtvp_sums / weights.sum(axis=1)  # mean over the drawn patients
        return {
            self.gtvp_dsc.path: gtvp_mean,
            self.gtvn_dsc.path: dice_from_counts(intersection, predicted, true, settings.gtvn_dsc_agg_all_empty),
            self.gtvn_f1.path: f1_from_counts(tp, fp, fn, settings.gtvn_f1_all_zero),
            self.gtvn_tp.path: tp,
            self.gtvn_fp.path: fp,
            self.gtvn_fn.path: fn,
        }

    # ---- chart (only when structure_chart_file is set) -----------------------------------

    def structure_chart(self, results: dict[str, PatientResult], metrics: dict[str, Any]) -> dict:
        return structure_bar_chart(type(self), metrics)

    result_charts = (Chart("structure_chart_file", structure_chart),)


def score_patient(truth: np.ndarray, prediction: np.ndarray, geometry: Geometry,
                  settings: Task1Settings) -> PatientResult:
    """Every count of one patient from two uint8 label maps on one grid: one pass for the label
    counts (and the box around label 2), then lesion matching inside that box only."""
    # Labels outside {0, 1, 2} never get here: the reading refused them (reading/label_maps.py).
    confusion, box = label_confusion(truth, prediction, box_label=GTVN)

    def counts(label):
        return int(confusion[label, label]), int(confusion[:, label].sum()), int(confusion[label, :].sum())

    lesions = (0, 0, 0)
    if box is not None:
        # Lesions lie inside the box of label 2 in either map: labelling the box is exact.
        true_lesions, _ = connected_components(truth[box] == GTVN, settings.lesion_connectivity)
        predicted_lesions, _ = connected_components(prediction[box] == GTVN, settings.lesion_connectivity)
        found = match_instances(true_lesions, predicted_lesions, criterion="iou",
                                threshold=settings.lesion_iou_threshold, inclusive=False,
                                assignment=settings.lesion_matching)
        lesions = (found.tp, found.fp, found.fn)
    return PatientResult(counts(GTVP), counts(GTVN), geometry.voxel_volume, lesions)


def labels_with_counts(labels: list[int], voxels: np.ndarray) -> str:
    return id_list(f"{label} ({voxel_count(int(voxels[label]))})" for label in labels)


def voxel_count(n: int) -> str:
    return f"{n} voxel" if n == 1 else f"{n} voxels"


# ---- chart --------------------------------------------------------------------------------------


def structure_bar_chart(task: type[SegmentationTask], metrics: dict[str, Any]) -> dict:
    """The three leaderboard values (the task's gtvp_dsc, gtvn_dsc and gtvn_f1 columns) as bars,
    each read from metrics.json through its declared column."""
    from evaluation import charts

    def value(column: Column) -> Any:
        return value_at_path(metrics, column.path)

    def key(column: Column) -> str:
        return column.path.rsplit(".", 1)[-1]

    bars = [charts.Bar("GTVp Dice", "score", value(task.gtvp_dsc), "mean of the per-patient Dice"),
            charts.Bar("GTVn Dice", "score", value(task.gtvn_dsc),
                       "aggregated: sums over patients weighted by voxel volume"),
            charts.Bar("GTVn detection F1", "score", value(task.gtvn_f1), "aggregated: TP, FP, FN summed")]
    subtitle = (f"{metrics['counts']['patients']} patients; GTVn lesions: {value(task.gtvn_tp)} TP, "
                f"{value(task.gtvn_fp)} FP, {value(task.gtvn_fn)} FN")
    about = ("The three values of the Task 1 ranking: the mean per-patient GTVp Dice, the aggregated GTVn Dice "
             "(sums over patients weighted by voxel volume) and the aggregated GTVn detection F1 ("
             f"{task.gtvp_dsc.path}, {key(task.gtvn_dsc)} and {key(task.gtvn_f1)} of metrics.json).")
    return charts.bar_chart(bars, title="HECKTOR 2025 Task 1: GTVp and GTVn", subtitle=subtitle,
                            x_title="ranking value", y_title="score", about=about)
