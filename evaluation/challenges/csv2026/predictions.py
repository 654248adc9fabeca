"""Reading and checking a CSV 2026 submission: an algorithm job's two mask images (header first,
decoded only once their shape is the ground truth's), its plaque-risk JSON and its timing; a
predictions-file submission's NNNN_pred.h5 (the file's own datasets only, masks shape-checked and
the class size-checked before a byte is read)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.errors import SubmissionError
from evaluation.framework import log
from evaluation.platform.cases import Case
from evaluation.platform.locations import list_submission_files
from evaluation.platform.predictions import JobTiming, job_timing
from evaluation.reading.files import Origin
from evaluation.reading.hdf5 import Hdf5File, open_hdf5
from evaluation.reading.images import shape_text
from evaluation.reading.values import is_finite_number, one_line_values, shown

from .truth import MASK_KEYS, RAW_LABELS, VIEW_NAMES, VIEWS, CaseTruth, LabelMap, label_map

PREDICTION_SUFFIX = "_pred.h5"
CLASS_KEYS = ("cls", "cls_pred", "cls_prob")  # the first present is read; cls_prob is a probability
HIGH_RISK_PROBABILITY = 0.5  # "high risk when ≥ 0.5"


@dataclass(frozen=True)
class Prediction:
    masks: dict[str, LabelMap]  # view -> its label map
    high_risk: int
    timing: JobTiming | None  # None: a predictions-file submission


def file_cases(input_dir: Path) -> list[tuple[str, Path]]:
    """Predictions-file phase: one NNNN_pred.h5 per case, at any depth of the unpacked archive."""
    found, ignored = [], []
    root = Origin.submission(input_dir).real_root
    for path in list_submission_files(input_dir):
        if path.name.lower().endswith(PREDICTION_SUFFIX) and len(path.name) > len(PREDICTION_SUFFIX):
            found.append((path.name[: -len(PREDICTION_SUFFIX)], path))
        else:
            ignored.append(path.relative_to(root).as_posix())
    if ignored:
        log(f"Ignored {len(ignored)} file(s) not named <case>{PREDICTION_SUFFIX}: {', '.join(ignored[:10])}"
            + (" ..." if len(ignored) > 10 else ""))
    if not found:
        raise SubmissionError(f"The submission holds no <case>{PREDICTION_SUFFIX} file (e.g. 0048{PREDICTION_SUFFIX}) "
                              f"and no predictions.json.")
    return found


def read_job_prediction(case: Case, truth: CaseTruth, sockets: tuple[str, str, str], plaque_index: int) -> Prediction:
    """Two mask images (header first: decoded only once its shape is the ground truth's; the
    geometry is unused, distances are in pixels) and the risk class from its JSON output.
    sockets: the longitudinal and transverse mask outputs and the risk output."""
    masks = {}
    for view, slug, expected in zip(VIEWS, sockets[:2], truth.shapes, strict=True):
        where = f"{case.name}, {VIEW_NAMES[view]} mask"
        # case.image(slug), but its messages named by the view, as in the predictions-file phase
        image = case.image(slug, where)
        masks[view] = decode_mask(where, image.read(expected), plaque_index)
    slug = sockets[2]
    value = case.read_json(slug)
    if isinstance(value, bool):
        high_risk = int(value)
    elif is_finite_number(value) and 0 <= value <= 1:
        high_risk = int(value >= HIGH_RISK_PROBABILITY)
    else:
        raise SubmissionError(f"{case.name}, output {slug!r}: found {shown(value)}; expected 0, 1, true, false "
                              f"or a probability of high risk between 0 and 1.")
    return Prediction(masks, high_risk, job_timing(case.job))


def read_file_prediction(case: Case, truth: CaseTruth, plaque_index: int) -> Prediction:
    """The case's NNNN_pred.h5: one mask dataset per view, of the ground truth's shape, and
    the class."""
    with open_hdf5(case.origin, case.source, case.name) as h5:
        masks = {view: read_h5_mask(case, h5, view, expected, plaque_index)
                 for view, expected in zip(VIEWS, truth.shapes, strict=True)}
        high_risk = read_h5_class(case, h5)
    return Prediction(masks, high_risk, None)


def read_h5_mask(case: Case, h5: Hdf5File, view: str, expected: tuple[int, ...], plaque_index: int) -> LabelMap:
    where = f"{case.name}, {VIEW_NAMES[view]} mask"
    keys = [key for key in MASK_KEYS[view] if h5.has(key)]
    if not keys:
        raise SubmissionError(f"{where}: {h5.name} has no dataset {' or '.join(MASK_KEYS[view])} "
                              f"(datasets found: {h5.names_text()}).")
    if len(keys) > 1:
        raise SubmissionError(f"{where}: {h5.name} holds both {keys[0]} and {keys[1]}; keep one.")
    return decode_mask(where, h5.dataset(keys[0], where).read(expected_shape=expected), plaque_index)


def read_h5_class(case: Case, h5: Hdf5File) -> int:
    key = next((key for key in CLASS_KEYS if h5.has(key)), None)
    if key is None:
        raise SubmissionError(f"{case.name}: {h5.name} has no class (dataset cls, cls_pred or cls_prob; "
                              f"datasets found: {h5.names_text()}).")
    dataset = h5.dataset(key, f"{case.name}, class")
    array = dataset.read(max_size=1)
    if array.size != 1:  # an empty array; a larger one is refused unread
        raise SubmissionError(f"{dataset.where} must hold one value, found {array.size} (shape "
                              f"{shape_text(array.shape)}).")
    value = array.reshape(()).item()
    if key == "cls_prob":
        if isinstance(value, bool) or not is_finite_number(value) or not 0 <= value <= 1:
            raise SubmissionError(f"{dataset.where} is {shown(value)}; it must be a probability between 0 and 1.")
        return int(value >= HIGH_RISK_PROBABILITY)
    if value not in (0, 1):
        raise SubmissionError(f"{dataset.where} is {shown(value)}; it must be 0 (low risk) or 1 (high risk) "
                              f"(a probability goes in cls_prob).")
    return int(value)


def decode_mask(where: str, array: np.ndarray, plaque_index: int) -> LabelMap:
    """The label map of a mask in raw labels (0/128/255) or class indices (0/1/2, plaque =
    plaque_index); an all-zero mask is both and empty either way."""
    masks = label_map(array, RAW_LABELS["vessel"], RAW_LABELS["plaque"])
    if masks is None:
        masks = label_map(array, 3 - plaque_index, plaque_index)
    if masks is None:
        raise SubmissionError(f"{where}: values {one_line_values(np.unique(array).tolist())}; a mask holds either "
                              f"raw labels (0, 128 plaque, 255 vessel) or class indices (0, {plaque_index} plaque, "
                              f"{3 - plaque_index} vessel).")
    return masks
