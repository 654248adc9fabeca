"""CAMELYON16 ground truth: reference.csv (image, type Tumor/Normal), the tumor masks of masks/,
and each tumor slide's evaluation mask (docs/challenges/camelyon16.md, "Ground truth" and
"Evaluation mask")."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evaluation.challenges.camelyon16.evaluation_mask import evaluation_mask
from evaluation.challenges.camelyon16.masks import MASK_SUFFIXES, read_mask
from evaluation.errors import SetupError, id_list
from evaluation.platform.locations import strip_extension
from evaluation.reading.files import MEGABYTE, Origin, shown_path
from evaluation.reading.tables import read_csv_rows

REFERENCE_FILE = "reference.csv"
MASKS_FOLDER = "masks"
TUMOR, NORMAL = "tumor", "normal"
EVALUATION_LEVEL = 5  # the 2016 script's EVALUATION_MASK_LEVEL: pyramids are read at level 5
MIN_PIXEL_SIZE_UM = 0.05  # no scanner resolves finer; below it the 75 µm disk would take gigabytes
MAX_MASK_LEVEL = 16  # 2**16: a level-0 slide of 220k pixels is 3 pixels wide there
MAX_REFERENCE_BYTES = 64 * MEGABYTE


@dataclass(frozen=True)
class SlideTruth:
    is_tumor: bool
    lesion_evaluated: bool
    mask: Path | None  # tumor slides of the lesion evaluation only


def read_reference(truth: Origin, directory: Path, excluded: set[str], lesion_excluded: set[str]
                   ) -> dict[str, SlideTruth]:
    """reference.csv (image, type Tumor/Normal; a header row and further columns allowed) and
    masks/<image>.tif (or <image>_Mask.tif, .tiff, .png, .mha) for every tumor slide of the
    lesion evaluation; the `excluded` slides left out."""
    path = directory / REFERENCE_FILE
    if not truth.is_file(path):
        raise SetupError(f"The ground truth has no {REFERENCE_FILE} (columns image, type).")
    rows = read_csv_rows(truth, path, f"Ground truth {REFERENCE_FILE}", MAX_REFERENCE_BYTES)
    if rows and rows[0].cells[0].lower() == "image":
        rows = rows[1:]
    masks = mask_files(truth)
    slides: dict[str, SlideTruth | None] = {}
    for row in rows:
        if len(row.cells) < 2 or not row.cells[0] or row.cells[1].lower() not in (TUMOR, NORMAL):
            raise SetupError(f"Ground truth {REFERENCE_FILE}, row {row.line}: expected an image name and a type "
                             f"Tumor or Normal.")
        slide, kind = strip_extension(row.cells[0]), row.cells[1].lower()
        # A slide's name names the participant's files too (slides.csv rows, detections files):
        # one that is not a plain file name is the ground truth's fault, never the submission's.
        where = f"Ground truth {REFERENCE_FILE}, row {row.line}"
        truth.check_parts(slide, what=where)
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
    kept = {slide: truth for slide, truth in slides.items() if truth is not None}
    kinds = {truth.is_tumor for truth in kept.values()}
    if kinds != {True, False}:
        raise SetupError(f"Ground truth {REFERENCE_FILE} must hold both tumor and normal slides (besides the "
                         f"excluded ones): the slide-level AUC is undefined otherwise.")
    if not any(t.is_tumor and t.lesion_evaluated for t in kept.values()):
        raise SetupError("Ground truth: no tumor slide is left for the lesion evaluation, so the FROC is "
                         "undefined.")
    return kept


def mask_files(truth: Origin) -> dict[str, Path]:
    """{slide: mask file} of the files directly in masks/ (regular files inside the ground
    truth, listed through its Origin)."""
    folder = truth.real_root / MASKS_FOLDER
    found: dict[str, Path] = {}
    for path in truth.list_files("Ground truth file"):
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


def slide_mask(truth: Origin, slide_truth: SlideTruth, slide: str, mask_level: int, pixel_size_um: float,
               pixel_size_from_tiff: bool):
    """A tumor slide's mask, read at level 5 (single-page masks at `mask_level`), and the level-0
    pixel size in µm that applies to it (its resolution tags', when asked and present)."""
    mask = read_mask(slide_truth.mask, EVALUATION_LEVEL, mask_level, what=f"Mask of slide {slide}", origin=truth)
    pixel_size = pixel_size_um
    if pixel_size_from_tiff and mask.level0_pixel_size_um is not None:
        pixel_size = mask.level0_pixel_size_um
        if not pixel_size >= MIN_PIXEL_SIZE_UM:
            raise SetupError(f"Mask of slide {slide}: the resolution tags of {slide_truth.mask.name} give a level-0 "
                             f"pixel size of {pixel_size:g} µm; it must be at least {MIN_PIXEL_SIZE_UM:g} µm (or turn "
                             f"pixel_size_from_tiff off).")
    return mask, pixel_size


def slide_lesions(mask, pixel_size: float, slide: str, slide_truth: SlideTruth):
    """The evaluation mask of a tumor slide's mask: its lesions and ITC regions, labelled."""
    if not mask.tumor.any():
        raise SetupError(f"Mask of slide {slide}: {slide_truth.mask.name} has no tumor pixel, yet the slide is Tumor "
                         f"in {REFERENCE_FILE}.")
    return evaluation_mask(mask.tumor, pixel_size, mask.level)
