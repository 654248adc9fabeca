"""RARE26's ground truth: the RARE25 metadata, one JSON file mapping each stack name to its frames
{"filename", "index", "class", "patient_id"}; the frame with index i is element i of the stack's
likelihoods, whatever the list's order. Any fault here is the organizer's (SetupError, exit 3)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.framework import log
from evaluation.platform.locations import single_ground_truth_file, strip_extension
from evaluation.reading.files import Origin
from evaluation.reading.json_files import read_json
from evaluation.reading.values import json_type, shown

# The negative class, compared with a frame's class lower-cased and without surrounding blanks
# ("NDBE", " ndbe " are NDBE); any other class is neoplasia (rare26.md).
NEGATIVE_CLASS = "ndbe"


@dataclass(frozen=True)
class StackTruth:
    labels: np.ndarray  # 1 neoplasia, 0 NDBE; element i is the frame with index i
    patients: tuple[str, ...]  # in the same order ('patient' sampling only; empty otherwise)


def read_metadata(truth: Origin, directory: Path, need_patients: bool) -> dict[str, StackTruth]:
    """{case id (the stack name without extension): its frames' labels (and patients when the
    'patient' sampling needs them)}; both classes must occur."""
    path = single_ground_truth_file(directory, ".json")
    document = read_json(truth, path, "The ground truth")
    where = f"Ground truth {path.name}"
    if not isinstance(document, dict) or not document:
        truth.fail(f"{where} must be a non-empty object mapping stack names to frames.")
    stacks: dict[str, StackTruth] = {}
    classes: Counter[str] = Counter()
    for stack_name, frames in document.items():
        case_id = strip_extension(stack_name)
        if case_id in stacks:
            truth.fail(f"{where}: two stacks are named {case_id} once extensions are removed.")
        stacks[case_id] = read_stack(truth, frames, f"{where}, stack {stack_name}", need_patients, classes)
    all_labels = np.concatenate([s.labels for s in stacks.values()])
    log(f"Ground truth: {len(all_labels)} frames in {len(stacks)} stacks; frames per class: "
        + ", ".join(f"{shown(name)} {count}{' (negative)' if is_negative(name) else ''}"
                    for name, count in sorted(classes.items())) + ".")
    if all_labels.all() or not all_labels.any():
        truth.fail(f"{where} must hold both NDBE and neoplasia frames.")
    return stacks


def is_negative(label: str) -> bool:
    return label.strip().lower() == NEGATIVE_CLASS


def read_stack(truth: Origin, frames: Any, where: str, need_patients: bool, classes: Counter[str]) -> StackTruth:
    """One stack's frames, each placed at its `index` (0 to n-1, each once), whatever the order
    of the list. Counts every frame's class, lower-cased, into `classes` (for the log)."""
    if not isinstance(frames, list) or not frames:
        truth.fail(f"{where} must be a non-empty list of frames.")
    size = len(frames)
    labels = np.zeros(size, dtype=np.int8)
    patients = [""] * size
    entry_of_index: dict[int, int] = {}
    for entry, frame in enumerate(frames):
        at = f"{where}, entry {entry}"
        if not isinstance(frame, dict):
            truth.fail(f"{at} must be an object with an index and a class, not {json_type(frame)}.")
        index = frame_index(truth, frame, at, size)
        if index in entry_of_index:
            truth.fail(f"{at} has index {index}, as entry {entry_of_index[index]} does; each index from 0 to "
                       f"{size - 1} must appear once.")
        entry_of_index[index] = entry
        label = frame_class(truth, frame, at)
        classes[label.lower()] += 1
        labels[index] = 0 if is_negative(label) else 1
        if need_patients:
            patients[index] = frame_patient(truth, frame, at)
    return StackTruth(labels, tuple(patients) if need_patients else ())


def frame_index(truth: Origin, frame: dict, at: str, size: int) -> int:
    """The frame's position in the stack's likelihoods: a whole number (not a boolean) below size."""
    if "index" not in frame:
        truth.fail(f"{at} has no index (its position, 0 to {size - 1}, in the stack's likelihoods).")
    index = frame["index"]
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < size:
        truth.fail(f"{at} has index {shown(index)}; it must be a whole number from 0 to {size - 1} (the stack has "
                   f"{size} frames).")
    return index


def frame_class(truth: Origin, frame: dict, at: str) -> str:
    """The frame's class: non-empty text (its value is never quoted: it is a label)."""
    if "class" not in frame:
        truth.fail(f"{at} has no class.")
    label = frame["class"]
    if not isinstance(label, str) or not label.strip():
        found = "blank text" if isinstance(label, str) else json_type(label)
        truth.fail(f"{at} has a class that is {found}; a class must be non-empty text.")
    return label


def frame_patient(truth: Origin, frame: dict, at: str) -> str:
    patient = frame.get("patient_id")
    if isinstance(patient, bool) or not isinstance(patient, (str, int)):
        truth.fail(f"{at} has no patient_id, which the 'patient' sampling needs.")
    return str(patient)
