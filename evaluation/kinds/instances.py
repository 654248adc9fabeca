"""The instances kind: the job writes an instance label map (2D or 3D, each instance one distinct
positive integer, 0 background) on the ground truth's grid, and, when the challenge declares
classes, a class map beside it (each voxel its class, 0 background); instances are scored by
panoptic quality.

The organizer declares (class attributes of the challenge; default in brackets):

- `labels` ({1: "instance"}): the classes. One entry: class-agnostic, no class is read.
  Several: the job gives each voxel or each instance its class, and each class is scored on the
  instances of that class (the instance map where the class map has it: CoNIC's per-class PQ, an
  instance split between classes counting in each);
- `class_output` ("map"): how the job gives the classes: "map", a class map image (0
  background, the class labels; output socket `class_output_socket`), or "per_instance", a JSON
  object {instance label: class label} with every instance of the map in it (output socket
  `instance_classes_socket`);
- `iou_threshold` (0.5) and `assignment` (None): a true and a predicted instance match when
  their IoU is strictly above the threshold; at 0.5 or above such matches are unique (PQ's
  convention, no assignment rule involved); below it name a one-to-one rule of
  evaluation.metrics.instances ("hungarian_then_threshold" is CoNIC's and HoVer-Net's);
- `ranked_metrics` ({"pq": "pooled"}): pq, sq, rq -> "pooled" (TP, FP, FN and the IoU sum summed over
  the images, then the ratios: CoNIC's multi-class PQ when averaged over the classes), "mean" or
  "median" (of each image's value); with several classes also class_agnostic_pq, class_agnostic_sq,
  class_agnostic_rq, aggregated alike: the instance maps matched whatever the classes (PanNuke's
  and CoNIC's "binary PQ", bPQ), ranked at aggregates.class_agnostic.<metric>.<aggregation>, in
  the declared order among the per-class values (per_label.py). It is not the mean of the
  per-class values: an instance found with the wrong class is a TP here, a FN and a FP there, and
  an instance the class map splits between classes is one instance here;
- `both_empty` (1.0): PQ, SQ and RQ of an image (or a pooled test set) with no instance on
  either side of a class;
- `labels_ranked`, `composite`, `ranking`: evaluation/kinds/per_label.py.

Settings (config.json): the sockets (`class_output_socket` or `instance_classes_socket` only with
several classes), and
`geometry_tolerance` (relative, on spacing, origin and
direction; the size must be equal; images are never resampled).

metrics.json: per_label.py's; with a class-agnostic metric declared, its report under
aggregates.class_agnostic (mean, median, pooled, the summed counts) and each image's values under
cases.<case id>.class_agnostic.

Ground truth: one instance map per case, `<case id>.mha` (or .nii.gz, .nii, .nrrd), and with
classes a class map per case in `classes/<case id>.mha`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from evaluation.errors import SubmissionError, id_list
from evaluation.kinds.declared import CaseSettings
from evaluation.kinds.per_label import MetricSpec, PerLabel
from evaluation.metrics.instances import ONE_TO_ONE, panoptic_quality, panoptic_quality_from_counts
from evaluation.platform.cases import Case
from evaluation.reading.label_maps import (
    grid_problem,
    read_instance_map,
    read_label_map,
    read_truth_instance_map,
    read_truth_label_map,
    truth_label_map_files,
)
from evaluation.reading.values import shown
from evaluation.settings import IMAGE_OUTPUT, JSON_OUTPUT, setting

CLASS_FOLDER = "classes"  # the ground truth's class maps, one per case
CLASS_OUTPUTS = ("map", "per_instance")


@dataclass(frozen=True)
class InstanceSettings(CaseSettings):
    """What the phase's config.json may change; the scoring rules are the challenge's declaration."""

    output_socket: str = setting("instance-segmentation", socket=IMAGE_OUTPUT,
                                 doc="output socket read: the instance map (0 background, one positive integer "
                                     "per instance)")
    geometry_tolerance: float = setting(1e-4, minimum=0.0,
                                        doc="relative tolerance on spacing, origin and direction; the size must be "
                                            "equal; images are never resampled")


@dataclass(frozen=True)
class ClassInstanceSettings(InstanceSettings):
    """A challenge with several classes reads a class map too."""

    class_output_socket: str = setting("instance-classes", socket=IMAGE_OUTPUT,
                                       hints=("class", "classes", "type", "types", "classification"),
                                       doc="output socket read: the class map (0 background, the declared class "
                                           "labels)")


@dataclass(frozen=True)
class PerInstanceClassSettings(InstanceSettings):
    """A challenge with several classes given per instance reads a JSON object too."""

    instance_classes_socket: str = setting("instance-classes", socket=JSON_OUTPUT, json_value="any",
                                           hints=("class", "classes", "type", "types", "classification"),
                                           doc="output socket read: {instance label: class label} for every "
                                               "instance of the instance map")


def classes_of_instances(instances: np.ndarray, given: Any, labels: tuple[int, ...], case_name: str) -> np.ndarray:
    """The class map of an instance map whose instances' classes are `given` (a job's JSON object
    {"7": 2, ...}), or SubmissionError naming the case: not an object, a key that is no whole
    number, a class not declared, an instance of the map without a class."""
    what = f"{case_name}: the instances' classes"
    if not isinstance(given, dict):
        raise SubmissionError(f"{what} must be a JSON object {{instance label: class label}}, not {shown(given)}.")
    classes: dict[int, int] = {}
    for key, value in given.items():
        if not re.fullmatch(r"[0-9]{1,18}", key) or int(key) == 0:
            raise SubmissionError(f"{what}: the key {shown(key)} is not an instance label (a positive whole number).")
        if isinstance(value, bool) or not isinstance(value, int) or value not in labels:
            raise SubmissionError(f"{what}: instance {key} has the class {shown(value)}; the classes are "
                                  f"{', '.join(str(label) for label in labels)}.")
        classes[int(key)] = value
    present = np.unique(instances[instances > 0])
    missing = [int(label) for label in present if int(label) not in classes]
    if missing:
        raise SubmissionError(f"{what}: {len(missing)} instance(s) of the instance map have no class "
                              f"({id_list(missing, 5)}).")
    dtype = np.min_scalar_type(max(labels))
    table = np.array([classes[int(label)] for label in present], dtype=dtype)
    class_map = np.zeros(instances.shape, dtype=dtype)
    inside = instances > 0
    class_map[inside] = table[np.searchsorted(present, instances[inside])]
    return class_map


def _pooled(part: str, both_empty: float):
    def compute(tp, fp, fn, iou_sum):
        return getattr(panoptic_quality_from_counts(tp, fp, fn, iou_sum, both_empty), part)
    return compute


class Instances(PerLabel):
    """An instance-segmentation challenge (module docstring: what it declares)."""

    settings_class = InstanceSettings
    labels: ClassVar = {1: "instance"}
    iou_threshold: ClassVar[float] = 0.5
    assignment: ClassVar[str | None] = None
    both_empty: ClassVar[float] = 1.0
    class_output: ClassVar[str] = "map"
    # ranked_metrics' "class_agnostic_<metric>": the instance maps scored whatever the classes
    agnostic_entry: ClassVar[str] = "class_agnostic"
    agnostic_title: ClassVar[str] = "class-agnostic"

    def __init_subclass__(cls, **kwargs) -> None:
        # the classes' socket is a setting only when there are classes to read
        if "settings_class" not in cls.__dict__ and len(cls.labels) > 1:
            cls.settings_class = ClassInstanceSettings if cls.class_output == "map" else PerInstanceClassSettings
        super().__init_subclass__(**kwargs)

    @classmethod
    def metric_specs(cls) -> dict[str, MetricSpec]:
        counts = ("tp", "fp", "fn", "iou_sum")
        return {
            "pq": MetricSpec("PQ", "desc", counts, _pooled("pq", cls.both_empty)),
            "sq": MetricSpec("SQ", "desc", counts, _pooled("sq", cls.both_empty)),
            "rq": MetricSpec("RQ", "desc", counts, _pooled("rq", cls.both_empty)),
        }

    @classmethod
    def check_declaration(cls) -> None:
        super().check_declaration()
        if cls.class_output not in CLASS_OUTPUTS:
            raise TypeError(f"{cls.__name__}.class_output {cls.class_output!r} is not one of "
                            f"{', '.join(CLASS_OUTPUTS)}")
        if cls.assignment is not None and cls.assignment not in ONE_TO_ONE:
            raise TypeError(f"{cls.__name__}.assignment {cls.assignment!r} is not None nor one of "
                            f"{', '.join(ONE_TO_ONE)}")
        empty = np.zeros((2, 2), dtype=np.uint8)
        try:  # the library's own checks of the rule: a bad threshold fails the import, not the first case
            panoptic_quality(empty, empty, cls.iou_threshold, cls.both_empty, cls.assignment)
        except ValueError as error:
            raise TypeError(f"{cls.__name__}: {error}") from None

    @classmethod
    def with_classes(cls) -> bool:
        return len(cls.labels) > 1

    # ---- reading ---------------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, Path]:
        found = truth_label_map_files(directory, self.truth_suffixes)
        if self.with_classes():
            folder = directory / CLASS_FOLDER
            classes = truth_label_map_files(folder, self.truth_suffixes) if folder.is_dir() else {}
            missing = sorted(set(found) - set(classes))
            if missing:
                self.truth.fail(f"Ground truth: no class map {CLASS_FOLDER}/<case id>.mha for case(s) "
                                f"{', '.join(missing[:5])}; a challenge with classes needs one per case.")
        return found

    def read_job_prediction(self, case: Case, ground_truth: Path):
        """{class name: (true instances, predicted instances)}, and when a class-agnostic metric is
        declared {"class_agnostic": the two whole instance maps}: the ground truth read first (its
        problems the organizer's), then each job image checked on its grid before decoding."""
        settings = self.settings
        tolerance = settings.geometry_tolerance
        truth, grid = read_truth_instance_map(self.truth, ground_truth)
        image = case.image(settings.output_socket, f"{case.name}, output {settings.output_socket!r}")
        predicted = read_instance_map(image, grid, tolerance, case.name, "instance map")
        if not self.with_classes():
            return {self.label_names()[0]: (truth, predicted)}
        labels = (0, *self.labels)
        classes = self.ground_truth_dir / CLASS_FOLDER / ground_truth.name
        truth_classes = read_truth_label_map(self.ground_truth_dir, classes, labels)
        problem = grid_problem(truth_classes.geometry, grid, "class map", f"instance map {ground_truth.name}")
        if problem is not None:
            self.truth.fail(f"Ground truth {CLASS_FOLDER}/{classes.name}: {problem}.")
        if self.class_output == "map":
            class_image = case.image(settings.class_output_socket,
                                     f"{case.name}, output {settings.class_output_socket!r}")
            predicted_classes = read_label_map(class_image, grid, labels, case.name, what="class map",
                                               tolerance=tolerance).voxels
        else:
            predicted_classes = classes_of_instances(predicted, case.read_json(settings.instance_classes_socket),
                                                     tuple(self.labels), case.name)
        # the instances of each class: the instance map where the class map has that class (CoNIC)
        scored = {self.labels[label]: (np.where(truth_classes.voxels == label, truth, 0),
                                       np.where(predicted_classes == label, predicted, 0))
                  for label in sorted(self.labels)}
        if self.agnostic_declared():  # every instance matched whatever its class (bPQ)
            scored[self.agnostic_entry] = (truth, predicted)
        return scored

    # ---- one case --------------------------------------------------------------------------

    def score_case(self, case: Case, prediction, ground_truth: Path) -> dict[str, dict[str, float]]:
        scored = {}
        for label, (truth, predicted) in prediction.items():
            quality = panoptic_quality(truth, predicted, self.iou_threshold, self.both_empty, self.assignment)
            scored[label] = {"pq": quality.pq, "sq": quality.sq, "rq": quality.rq, "tp": int(quality.tp),
                             "fp": int(quality.fp), "fn": int(quality.fn), "iou_sum": quality.iou_sum}
        return scored
