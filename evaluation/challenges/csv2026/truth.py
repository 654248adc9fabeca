"""CSV 2026 ground truth: the NNNN_label.h5 files (long_mask, trans_mask: 0/128/255, cls: 0/1),
listed at start and each read whole by the worker scoring its case; the label-map form both
the ground truth and the predictions are scored in."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.errors import SetupError
from evaluation.platform.locations import ground_truth_files
from evaluation.reading.files import Origin
from evaluation.reading.hdf5 import Hdf5Dataset, Hdf5File, open_hdf5
from evaluation.reading.values import one_line_values, shown

VIEWS = ("long", "trans")
VIEW_NAMES = {"long": "longitudinal", "trans": "transverse"}
STRUCTURES = ("vessel", "plaque")
PAIRS = tuple((view, structure) for view in VIEWS for structure in STRUCTURES)

# Ground truth and raw-encoded predictions: 0 background, 128 plaque, 255 vessel (csv2026.md).
RAW_LABELS = {"plaque": 128, "vessel": 255}
LABEL_SUFFIX = "_label.h5"
# Dataset names seen in submissions (csv2026.md), in the order they are looked for; the ground
# truth's are the first.
MASK_KEYS = {"long": ("long_mask", "pred_long"), "trans": ("trans_mask", "pred_trans")}


@dataclass(frozen=True)
class LabelMap:
    """One view's mask as decoded, every pixel checked to be background (0), vessel or plaque.
    Scoring compares the structures in this form, within the box where either label map has a
    label (the rest is background in both), so no full-size boolean mask is ever made."""

    array: np.ndarray  # 2D, the values as read
    vessel: int  # the value of a vessel pixel (255 raw, or a class index)
    plaque: int

    def value(self, structure: str) -> int:
        return self.vessel if structure == "vessel" else self.plaque

    def masks(self) -> tuple[np.ndarray, np.ndarray]:
        """(vessel, plaque) as full-size boolean masks."""
        return self.array == self.vessel, self.array == self.plaque


def label_map(array: np.ndarray, vessel: int, plaque: int) -> LabelMap | None:
    """The label map when every pixel is background (0), vessel or plaque, else None. Three
    comparisons counted (counting booleans is fast, counting other nonzero values is not), no
    sort: the distinct values are listed only for an error message."""
    counted = np.count_nonzero(array == 0) + np.count_nonzero(array == vessel) + np.count_nonzero(array == plaque)
    return LabelMap(array, vessel, plaque) if counted == array.size else None


@dataclass(frozen=True)
class CaseTruth:
    """One case's NNNN_label.h5, read whole in the process scoring the case."""

    high_risk: int  # cls: 0 low risk (Plaque-RADS 2), 1 high risk (Plaque-RADS 3-4)
    labels: dict[str, LabelMap]  # view -> its label map

    @property
    def shapes(self) -> tuple[tuple[int, ...], ...]:  # in VIEWS order
        return tuple(self.labels[view].array.shape for view in VIEWS)


def list_ground_truth(directory: Path) -> dict[str, Path]:
    """{case id: its NNNN_label.h5}. Only listed: each file is read by the worker scoring its case."""
    files = ground_truth_files(directory, LABEL_SUFFIX)
    if not files:
        raise SetupError(f"The ground-truth folder {directory} has no NNNN{LABEL_SUFFIX} files.")
    return {path.name[: -len(LABEL_SUFFIX)]: path for path in files}


def read_truth(origin: Origin, path: Path) -> CaseTruth:
    """A case's ground truth: its class and its two label maps, the file opened once."""
    with open_hdf5(origin, path, "Ground truth") as h5:
        labels = {}
        for view in VIEWS:
            dataset = truth_mask(origin, h5, view)
            array = dataset.read()
            labels[view] = label_map(array, RAW_LABELS["vessel"], RAW_LABELS["plaque"])
            if labels[view] is None:
                values = one_line_values(np.unique(array).tolist())
                origin.fail(f"Ground truth {h5.name}, {MASK_KEYS[view][0]}: values {values}; the labels are 0, "
                            f"128 (plaque) and 255 (vessel).")
        high_risk = truth_class(origin, h5)
    return CaseTruth(high_risk, labels)


def truth_mask(origin: Origin, h5: Hdf5File, view: str) -> Hdf5Dataset:
    key = MASK_KEYS[view][0]
    if not h5.has(key):
        origin.fail(f"Ground truth {h5.name} has no 2D dataset {key}.")
    dataset = h5.dataset(key, "Ground truth")
    if len(dataset.shape) != 2:
        origin.fail(f"Ground truth {h5.name} has no 2D dataset {key}.")
    return dataset


def truth_class(origin: Origin, h5: Hdf5File) -> int:
    if not h5.has("cls"):
        origin.fail(f"Ground truth {h5.name} has no single-valued dataset cls.")
    dataset = h5.dataset("cls", "Ground truth")
    if dataset.size != 1:
        origin.fail(f"Ground truth {h5.name} has no single-valued dataset cls.")
    value = dataset.read(max_size=1).reshape(()).item()
    if value not in (0, 1):
        origin.fail(f"Ground truth {h5.name}: cls is {shown(value)}; it must be 0 (low risk) or 1 (high risk).")
    return int(value)


def check_both_classes(true_high_risk: list[int]) -> None:
    """The whole ground truth holds both risks (macro F1 averages the F1 of both classes):
    checked once every case is scored, not in the aggregate, which the final ranking's resamples
    (one class drawn, F1 0 for the other, as scikit-learn's zero_division=0) must be able to reach."""
    classes = set(true_high_risk)
    if classes != {0, 1}:
        raise SetupError(f"The ground truth must hold both low-risk and high-risk cases (macro F1 averages the "
                         f"F1 of both classes); all {len(true_high_risk)} case(s) have cls "
                         f"{next(iter(classes), 'none')}.")
