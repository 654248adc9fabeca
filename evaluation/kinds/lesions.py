"""The lesions kind: the job writes a lesion mask, binary or one label per lesion class, 2D or 3D,
on the ground truth's grid; lesions are its connected components, matched to the true ones.

The organizer declares (class attributes of the challenge; default in brackets):

- `labels` ({1: "lesion"}): the lesion classes, each scored on its own (its label's mask);
  the mask holds 0 and these labels only;
- `connectivity` (None: the full one, 8 in 2D, 26 in 3D; or 4, 6, 18): what joins voxels into
  one lesion, for matching, FP/FN volume and the lesion count;
- the hit rule: `hit_criterion` ("overlap": voxels shared; "iou"; "dice"), `hit_threshold`
  (0.0), `hit_inclusive` (False: the criterion must be above the threshold; True: at or above)
  and `matching` ("many_to_many": a true lesion is found by any predicted lesion passing the
  rule, a predicted lesion is false when it passes with none, as ISLES and autoPET count;
  "hungarian", "greedy", "hungarian_most_matches": one to one; "many_to_one"). The default is
  "any overlap", the usual lesion-detection rule;
- `ranked_metrics` ({"lesion_f1": "pooled"}): metric -> aggregation over the cases, in ranking order:
  lesion_f1, lesion_precision, lesion_recall, dice ("mean", "median" or "pooled": from the
  counts summed over the cases, TP/FP/FN or the voxel volumes), fp_volume, fn_volume,
  volume_difference (absolute), lesion_count_difference ("mean" or "median"); any of them may
  be "mean_positive" instead: the mean over the cases whose ground truth holds the label only
  (autoPET: Dice and FN volume over the cases with a lesion, FP volume "mean" over all); a test
  set where no case's truth holds a label stops with exit 3 naming it (the value is undefined);
  with several labels, any metric may also be declared as "class_agnostic_<metric>" (e.g.
  "class_agnostic_lesion_f1": "pooled"): every lesion of any label against every true one,
  whatever its label (a lesion found with the wrong class is a hit there, a miss and a false
  lesion in the per-label values), ranked at aggregates.class_agnostic.<metric>.<aggregation>;
- `volume_unit` ("ml"; or "mm3"): volumes from the ground truth's spacing (mm);
- `undefined_ratio` (0.0): a case's lesion precision when it predicts no lesion while the truth
  has some, and its recall when it predicts some and the truth has none (F1 is 0 there); a case
  with no lesion on either side scores 1.0 on F1, precision, recall and Dice (nothing to find,
  nothing found), 0 on the volumes and the count difference;
- `labels_ranked`, `composite`, `ranking`: evaluation/kinds/per_label.py.

Settings (config.json): the sockets, and `geometry_tolerance` (the relative tolerance on spacing,
origin and direction; the size must be equal; masks are never resampled).

Ground truth: one label image per case, `<case id>.mha` (or .nii.gz, .nii, .nrrd), in mm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluation.kinds.declared import CaseSettings, ratio_of_counts
from evaluation.kinds.per_label import MetricSpec, PerLabel
from evaluation.metrics.instances import (
    ASSIGNMENTS,
    CRITERIA,
    DetectionCounts,
    connected_components,
    f1_from_counts,
    false_negative_volume,
    false_positive_volume,
    lesion_count_difference,
    match_instances,
)
from evaluation.metrics.overlap import absolute_volume_difference, dice, dice_from_counts, overlap_counts, union_box
from evaluation.metrics.validation import check_connectivity
from evaluation.platform.cases import Case
from evaluation.reading.label_maps import read_label_map, read_truth_label_map, truth_label_map_files
from evaluation.settings import IMAGE_OUTPUT, setting

VOLUME_UNITS = {"ml": 1e-3, "mm3": 1.0}  # per mm³


@dataclass(frozen=True)
class LesionSettings(CaseSettings):
    """What the phase's config.json may change; the scoring rules are the challenge's declaration."""

    output_socket: str = setting("lesion-segmentation", socket=IMAGE_OUTPUT,
                                 doc="output socket read: the lesion mask (0 background, the declared labels)")
    geometry_tolerance: float = setting(1e-4, minimum=0.0,
                                        doc="relative tolerance on spacing, origin and direction; the size must be "
                                            "equal; masks are never resampled")


class Lesions(PerLabel):
    """A lesion-mask challenge (module docstring: what it declares)."""

    settings_class = LesionSettings
    labels: ClassVar = {1: "lesion"}
    connectivity: ClassVar[int | None] = None
    hit_criterion: ClassVar[str] = "overlap"
    hit_threshold: ClassVar[float] = 0.0
    hit_inclusive: ClassVar[bool] = False
    matching: ClassVar[str] = "many_to_many"
    volume_unit: ClassVar[str] = "ml"
    undefined_ratio: ClassVar[float] = 0.0
    mask_title: ClassVar[str] = "lesion mask"  # how messages name the job's image
    positive_key: ClassVar[str] = "true_volume"  # "mean_positive": the cases whose truth has a voxel of the label
    # ranked_metrics' "class_agnostic_<metric>": the lesions of all labels as one class
    agnostic_entry: ClassVar[str] = "class_agnostic"
    agnostic_title: ClassVar[str] = "any class"

    @classmethod
    def metric_specs(cls) -> dict[str, MetricSpec]:
        unit = "mm³" if cls.volume_unit == "mm3" else cls.volume_unit
        undefined = cls.undefined_ratio
        return {
            "lesion_f1": MetricSpec("Lesion F1", "desc", ("tp", "fp", "fn"), f1_from_counts),
            "lesion_precision": MetricSpec("Lesion precision", "desc", ("tp", "fp", "fn"),
                                           lambda tp, fp, fn: ratio_of_counts(tp, tp + fp, tp + fp + fn, undefined)),
            "lesion_recall": MetricSpec("Lesion recall", "desc", ("tp", "fp", "fn"),
                                        lambda tp, fp, fn: ratio_of_counts(tp, tp + fn, tp + fp + fn, undefined)),
            "dice": MetricSpec("Dice", "desc", ("intersection_volume", "predicted_volume", "true_volume"),
                               dice_from_counts),
            "fp_volume": MetricSpec(f"FP volume ({unit})", "asc"),
            "fn_volume": MetricSpec(f"FN volume ({unit})", "asc"),
            "volume_difference": MetricSpec(f"Volume difference ({unit})", "asc"),
            "lesion_count_difference": MetricSpec("Lesion count difference", "asc"),
        }

    @classmethod
    def check_declaration(cls) -> None:
        super().check_declaration()
        where = cls.__name__
        if cls.hit_criterion not in CRITERIA:
            raise TypeError(f"{where}.hit_criterion {cls.hit_criterion!r} is not one of {', '.join(CRITERIA)}")
        if cls.matching not in ASSIGNMENTS:
            raise TypeError(f"{where}.matching {cls.matching!r} is not one of {', '.join(ASSIGNMENTS)}")
        if cls.volume_unit not in VOLUME_UNITS:
            raise TypeError(f"{where}.volume_unit {cls.volume_unit!r} is not one of {', '.join(VOLUME_UNITS)}")
        # the library's own checks of the rule, on an empty image (no component library imported:
        # a challenge's import stays light): a bad threshold or connectivity fails the import, not
        # the first case
        dimensions = 3 if cls.connectivity in (6, 18, 26) else 2
        empty = np.zeros((2,) * dimensions, dtype=np.uint8)
        try:
            match_instances(empty, empty, cls.hit_criterion, cls.hit_threshold, cls.hit_inclusive, cls.matching)
            check_connectivity(cls.connectivity, dimensions)
        except ValueError as error:
            raise TypeError(f"{where}: {error}") from None

    # ---- reading ---------------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, Path]:
        # paths: each image is read where its case is scored
        return truth_label_map_files(directory, self.truth_suffixes)

    def read_job_prediction(self, case: Case, ground_truth: Path):
        """(truth, prediction, the grid): the ground truth read first (its problems the
        organizer's), then the job's mask checked on its grid before decoding, then its labels."""
        labels = (0, *self.labels)
        truth = read_truth_label_map(self.ground_truth_dir, ground_truth, labels)
        image = case.image(self.settings.output_socket, f"{case.name}, output {self.settings.output_socket!r}")
        predicted = read_label_map(image, truth.geometry, labels, case.name, what=self.mask_title,
                                   tolerance=self.settings.geometry_tolerance)
        return truth.voxels, predicted.voxels, truth.geometry

    # ---- one case --------------------------------------------------------------------------

    def score_case(self, case: Case, prediction, ground_truth: Path) -> dict[str, dict[str, float]]:
        truth, predicted, geometry = prediction
        spacing = tuple(reversed(geometry.spacing))  # numpy's axis order
        scored = {self.labels[label]: self.score_label(predicted == label, truth == label, spacing)
                  for label in sorted(self.labels)}
        if self.agnostic_declared():  # every lesion, whatever its label
            scored[self.agnostic_entry] = self.score_label(predicted != 0, truth != 0, spacing)
        return scored

    def score_label(self, predicted: np.ndarray, truth: np.ndarray, spacing: tuple[float, ...]) -> dict[str, float]:
        """Every metric of one lesion class in one case, from its two masks (on their union box:
        outside it both are background)."""
        scale = VOLUME_UNITS[self.volume_unit]
        voxel = math.prod(spacing) * scale
        box = union_box(predicted, truth)
        if box is None:
            predicted = truth = np.zeros((1,) * predicted.ndim, dtype=bool)
        else:
            predicted, truth = predicted[box], truth[box]
        true_lesions, _ = connected_components(truth, self.connectivity)
        predicted_lesions, _ = connected_components(predicted, self.connectivity)
        found = match_instances(true_lesions, predicted_lesions, self.hit_criterion, self.hit_threshold,
                                self.hit_inclusive, self.matching)
        counts = DetectionCounts(found.tp, found.fp, found.fn)
        intersection, predicted_size, true_size = overlap_counts(predicted, truth)

        def defined(value: float) -> float:
            return self.undefined_ratio if math.isnan(value) else value

        return {
            "lesion_f1": float(counts.f1),
            "lesion_precision": defined(counts.precision),
            "lesion_recall": defined(counts.recall),
            "dice": dice(predicted, truth),
            "fp_volume": false_positive_volume(predicted, truth, spacing, self.connectivity) * scale,
            "fn_volume": false_negative_volume(predicted, truth, spacing, self.connectivity) * scale,
            "volume_difference": absolute_volume_difference(predicted, truth, spacing) * scale,
            "lesion_count_difference": lesion_count_difference(predicted, truth, self.connectivity),
            "tp": found.tp, "fp": found.fp, "fn": found.fn,
            "intersection_volume": intersection * voxel,
            "predicted_volume": predicted_size * voxel,
            "true_volume": true_size * voxel,
        }

    def report(self, results: dict[str, Any]) -> dict[str, Any]:
        document = super().report(results)
        document["units"] = {"volume": self.volume_unit, "spacing": "the ground truth's (mm)"}
        return document
