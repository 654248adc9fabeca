"""The ISIC ground truth: the organizer's CSV (an image column, one 0/1 column per category,
optional weight columns), read with the submission's reader, and the checks that make every
ranked value a number."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evaluation.challenges.isic import predictions as isic_csv
from evaluation.challenges.isic.multiclass import argmax_labels
from evaluation.challenges.isic.predictions import INDEX_COLUMNS, WEIGHT_COLUMNS
from evaluation.errors import SetupError, id_list
from evaluation.reading.files import MEGABYTE, Origin

THRESHOLD = 0.5  # binary decisions: value > 0.5 (strictly), of the truth and of the confidences
# The organizer's truth CSV: ~60 bytes an image; a million images is ~70 MB.
MAX_TRUTH_BYTES = 512 * MEGABYTE


@dataclass(frozen=True)
class Truth:
    """The whole ground truth, rows sorted by image id."""

    ids: tuple[str, ...]
    categories: tuple[str, ...]
    values: np.ndarray  # (images, categories), 0.0 / 1.0
    score_weight: np.ndarray
    validation_weight: np.ndarray


class TruthRows(dict):
    """What an ISIC challenge's load_ground_truth gives: {image id: its row of the table}, with
    the table itself (`table`), so that the challenge keeps no state of its own beside it."""

    def __init__(self, table: Truth):
        super().__init__(zip(table.ids, range(len(table.ids)), strict=True))
        self.table = table


def read_truth_csv(origin: Origin, path: Path, zero_weight_images: list[str] | tuple[str, ...] = ()) -> Truth:
    """The ground-truth CSV: an image/lesion_id column, one 0/1 column per category (the
    categories are these columns, in file order) and optional weight columns. Messages name
    images and columns, never a value of the file (the participant sees them too)."""
    where = f"Ground truth {path.name}"
    data = origin.read_bytes(path, "Ground truth", MAX_TRUTH_BYTES)
    try:
        text = isic_csv.decode(data)
        table = isic_csv.plain_table(text) or isic_csv.tokenize(text)  # the fast path when the file is plain
    except UnicodeDecodeError as error:
        raise SetupError(f"{where} is not UTF-8 text (byte {error.start + 1} cannot be decoded).") from None
    except isic_csv.CsvError as error:
        raise SetupError(f"{where} cannot be read: {error}.") from None
    header = table.header
    index = next((c for c in INDEX_COLUMNS if c in header), None)
    if index is None:
        raise SetupError(f"{where} has no 'image' (or 'lesion_id') column.")
    duplicated = sorted({c for c in header if header.count(c) > 1})
    if duplicated:
        raise SetupError(f"{where} has duplicate columns: {', '.join(duplicated)}.")
    categories = tuple(c for c in header if c != index and c not in WEIGHT_COLUMNS)
    if len(categories) < 2:
        raise SetupError(f"{where} must have at least two category columns; found {', '.join(categories) or 'none'}.")
    ids = table.column(header.index(index))
    if None in ids or not isic_csv.NA_TOKENS.isdisjoint(ids):
        bad = [n for n, image in enumerate(ids) if image is None or image in isic_csv.NA_TOKENS]
        raise SetupError(f"{where}: data row {bad[0] + 1} has no image id.")
    if len(set(ids)) != len(ids):
        seen, dupes = set(), []
        for image in ids:
            if image in seen:
                dupes.append(image)
            seen.add(image)
        raise SetupError(f"{where} lists images more than once: {id_list(sorted(set(dupes)))}.")
    if not ids:
        raise SetupError(f"{where} has no image rows.")

    # A plain file whose number columns hold only numbers is converted at once (the values
    # parse_numbers gives); any other goes column by column, to name the first bad one.
    numbered = [at for at, name in enumerate(header) if name in categories or name in WEIGHT_COLUMNS]
    plain = table.numbers(numbered) if isinstance(table, isic_csv.PlainTable) else None

    def column(name: str, default: float | None) -> np.ndarray:
        if name not in header:
            return np.full(len(ids), default)
        at = header.index(name)
        if plain is not None:
            return np.ascontiguousarray(plain[0][:, numbered.index(at)])
        tokens = table.column(at)
        values, kinds = isic_csv.parse_numbers([t if t is not None else "" for t in tokens], len(header))
        bad_rows = np.flatnonzero((kinds == isic_csv.NA) | (kinds == isic_csv.TEXT) | ~np.isfinite(values))
        if len(bad_rows):
            row = int(bad_rows[0])
            raise SetupError(f"{where}: column {name} of image {ids[row]} is not a finite number.")
        return values

    values = np.column_stack([column(c, None) for c in categories])
    not_binary = np.argwhere((values != 0) & (values != 1))
    if len(not_binary):
        row, col = map(int, not_binary[0])
        raise SetupError(f"{where}: image {ids[row]} has a value other than 0 and 1 for {categories[col]}; the "
                         f"ground truth must be 0 or 1.")
    weights = {name: column(name, 1.0) for name in WEIGHT_COLUMNS}
    for name, w in weights.items():
        if (w < 0).any():
            row = int(np.flatnonzero(w < 0)[0])
            raise SetupError(f"{where}: {name} of image {ids[row]} is negative.")
    for image in zero_weight_images:
        if image in ids:  # the reference's rule for ISIC_0035068 (2018)
            row = ids.index(image)
            for w in weights.values():
                w[row] = 0.0
    if all(map(str.__lt__, ids, ids[1:])):  # already sorted (the ids are distinct)
        return Truth(ids=tuple(ids), categories=categories, values=values, score_weight=weights["score_weight"],
                     validation_weight=weights["validation_weight"])
    order = sorted(range(len(ids)), key=ids.__getitem__)
    return Truth(ids=tuple([ids[i] for i in order]), categories=categories, values=values[order],
                 score_weight=weights["score_weight"][order], validation_weight=weights["validation_weight"][order])


def check_truth_scorable(truth: Truth) -> None:
    """The ranked values must be numbers: some category needs weighted images of its own and
    weighted images of others (AUC), and the score weights cannot all be zero."""
    w = truth.score_weight
    if not (w > 0).any():
        raise SetupError("Every score_weight of the ground truth is 0: nothing would be scored.")
    positive = ((truth.values > THRESHOLD) & (w[:, None] > 0)).any(axis=0)
    negative = ((truth.values <= THRESHOLD) & (w[:, None] > 0)).any(axis=0)
    if not (positive & negative).any():
        raise SetupError("No category of the ground truth has both positive and negative images with a nonzero "
                         "score_weight: AUC and balanced accuracy would be undefined.")
    labels = argmax_labels(truth.values)
    if not ((labels >= 0) & (w > 0)).any():
        raise SetupError("No ground-truth image has a single category: balanced accuracy would be undefined.")
