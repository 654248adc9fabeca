"""CAMELYON16 examples: synthetic level-5 tumor masks (pyramidal and single-page TIFFs) with a
reference.csv, a submission of slide probabilities and detections for them (predictions files or
algorithm outputs), and the bundled invalid submissions (test/camelyon16/invalid/)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from evaluation.challenges.camelyon16.predictions import MM_TO_UM, SLIDES_FILE
from evaluation.challenges.camelyon16.truth import (
    MASKS_FOLDER,
    NORMAL,
    REFERENCE_FILE,
    TUMOR,
)
from evaluation.declarations.examples import Example, Lineup
from evaluation.platform import synthetic


def synthesize(out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
    """The bundled example: small slides (level-5 masks of 192 x 288), half tumor, half
    normal, a pyramidal TIFF (pages), a pyramid in SubIFDs and single-page masks, an ITC
    region, plus Test_049 (excluded from both evaluations, still submitted) and Test_114
    (slide level only: no mask, no detections file)."""
    write_synthetic(out_dir, seed=seed, slides=6 if cases is None else cases, mask_shape=(192, 288),
                    pyramids=2, extra_slides=True)


def invalid_examples(input_dir: Path) -> dict[str, dict[str, bytes | None]]:
    """The bundled ones: Test_002's detections file left out, a detection of Test_001 (a tumor
    slide of 288 x 32 level-0 pixels) at X 99999, one with a typo, a NaN slide probability."""
    return invalid_changes(input_dir, missing="Test_002.csv", outside="Test_001.csv", outside_x=99999,
                           non_numeric="Test_001.csv")


def invalid_changes(input_dir: Path, missing: str, outside: str, outside_x: int, non_numeric: str
                    ) -> dict[str, dict[str, bytes | None]]:
    """Detections file `missing` left out; a row at X `outside_x` (beyond the slide: `outside` must
    be a tumor slide's file, normal slides have no known size) and a row '12o4' added after the
    first line; the first slide's probability NaN."""
    def with_row(name: str, row: str) -> bytes:
        rows = (input_dir / name).read_text().splitlines()
        return ("\n".join(rows[:1] + [row] + rows[1:]) + "\n").encode()

    slides = (input_dir / SLIDES_FILE).read_text().splitlines()
    nan = [slides[0], slides[1].split(",")[0] + ",nan"] + slides[2:]
    return {
        "missing-detections-file": {missing: None},
        "coordinate-outside-slide": {outside: with_row(outside, f"0.9,{outside_x},100")},
        "non-numeric-coordinate": {non_numeric: with_row(non_numeric, "0.5,12o4,400")},
        "probability-not-finite": {SLIDES_FILE: ("\n".join(nan) + "\n").encode()},
    }


# ---- a submission for any ground truth (the organizer's own) ----------------------------------

OUTSIDE_ANY_SLIDE = 10**9  # level-0 pixels: a slide is at most a few hundred thousand wide


def submission(ground_truth_dir: Path, input_dir: Path, seed: int = 0) -> None:
    """A valid predictions-file submission (as the bundled example) for any CAMELYON16 ground
    truth: slides.csv (tumor slides' probabilities Beta(3, 2), normal Beta(2, 3)) and, per slide
    of the lesion evaluation, <slide>.csv with 5 to 40 false positives (Beta(1.5, 4)) anywhere on
    the slide plus, for about 70% of the lesions and ITC regions of its evaluation mask, 1 to 3
    hits (Beta(3, 2)) on tumor pixels. Masks are read one at a time by the challenge's loader at
    the evaluation level; the excluded slides are left out."""
    from evaluation.challenges.camelyon16 import Camelyon16
    from evaluation.challenges.camelyon16.masks import read_mask
    from evaluation.challenges.camelyon16.truth import EVALUATION_LEVEL

    evaluation = Camelyon16(ground_truth_dir)  # its config.json applies
    settings = evaluation.settings
    rng = np.random.default_rng(seed)
    slides = sorted(evaluation.ground_truth)
    for slide in slides:  # the names of the detections files, before anything is written
        if evaluation.ground_truth[slide].lesion_evaluated:
            synthetic.checked(f"{slide}.csv", f"Ground truth {REFERENCE_FILE}, the detections file of a slide")
    detections: dict[str, list[tuple[float, int, int]]] = {}
    extents = []
    for slide in slides:
        truth = evaluation.ground_truth[slide]
        if truth.mask is None:
            continue
        mask = read_mask(truth.mask, EVALUATION_LEVEL, settings.mask_level, what=f"Mask of slide {slide}",
                         origin=evaluation.truth)
        scale = 2 ** mask.level
        height, width = mask.tumor.shape
        extents.append((width * scale, height * scale))
        detections[slide] = lesion_hits(mask.tumor, mask.level, settings.pixel_size_um, rng) + \
            false_positives(rng, width * scale, height * scale)
    width, height = max(extents)  # a normal slide's size is unknown: that of the largest mask
    for slide in slides:
        truth = evaluation.ground_truth[slide]
        if truth.lesion_evaluated and truth.mask is None:  # a normal slide
            detections[slide] = false_positives(rng, width, height)
    rows = ["image,probability"]
    for slide in slides:
        tumor = evaluation.ground_truth[slide].is_tumor
        rows.append(f"{slide},{round(float(rng.beta(3, 2) if tumor else rng.beta(2, 3)), 3)}")
    (input_dir / SLIDES_FILE).write_text("\n".join(rows) + "\n")
    for slide, points in detections.items():
        order = rng.permutation(len(points))
        lines = ["p,x,y"] + [f"{points[i][0]},{points[i][1]},{points[i][2]}" for i in order]
        (input_dir / f"{slide}.csv").write_text("\n".join(lines) + "\n")


def lesion_hits(tumor: np.ndarray, level: int, pixel_size_um: float, rng: np.random.Generator
                ) -> list[tuple[float, int, int]]:
    """(confidence, X, Y) in level-0 pixels: for each region of the evaluation mask, with
    probability 0.7, 1 to 3 detections on its tumor pixels."""
    from evaluation.challenges.camelyon16.evaluation_mask import evaluation_mask

    lesions = evaluation_mask(tumor, pixel_size_um, level)
    labels = lesions.labels
    window = tumor[lesions.top:lesions.top + labels.shape[0], lesions.left:lesions.left + labels.shape[1]]
    pixels = np.flatnonzero((window != 0) & (labels > 0))  # tumor pixels, grouped by region below
    regions = labels.ravel()[pixels]
    order = np.argsort(regions, kind="stable")
    pixels, regions = pixels[order], regions[order]
    starts = np.searchsorted(regions, np.arange(1, lesions.regions + 1))
    ends = np.searchsorted(regions, np.arange(1, lesions.regions + 1), side="right")
    scale = 2 ** level
    points = []
    for start, end in zip(starts, ends, strict=True):
        if end == start or rng.random() >= 0.7:
            continue
        for _ in range(int(rng.integers(1, 4))):
            row, col = divmod(int(pixels[rng.integers(start, end)]), labels.shape[1])
            x = (lesions.left + col) * scale + int(rng.integers(0, scale))
            y = (lesions.top + row) * scale + int(rng.integers(0, scale))
            points.append((round(float(rng.beta(3, 2)), 4), x, y))
    return points


def false_positives(rng: np.random.Generator, width: int, height: int) -> list[tuple[float, int, int]]:
    return [(round(float(rng.beta(1.5, 4)), 4), int(rng.integers(0, width)), int(rng.integers(0, height)))
            for _ in range(int(rng.integers(5, 41)))]


def invalid_for_ground_truth(ground_truth_dir: Path, input_dir: Path) -> dict[str, dict[str, bytes | None]]:
    """invalid_changes for any ground truth: the first detections file left out and given a typo,
    the first tumor slide's file given a detection far outside any slide."""
    from evaluation.challenges.camelyon16 import Camelyon16

    evaluation = Camelyon16(ground_truth_dir)
    files = sorted(path.name for path in input_dir.glob("*.csv") if path.name != SLIDES_FILE)
    tumor = next(f"{slide}.csv" for slide in sorted(evaluation.ground_truth)
                 if evaluation.ground_truth[slide].mask is not None)
    return invalid_changes(input_dir, missing=files[0], outside=tumor, outside_x=OUTSIDE_ANY_SLIDE,
                           non_numeric=files[0])


EXAMPLES = {"camelyon16": Example(synthesize=synthesize, invalid_examples=invalid_examples, submission=submission,
                                  invalid_for_ground_truth=invalid_for_ground_truth,
                                  min_cases=2,  # a tumor slide and a normal one
                                  lineup=Lineup(seeds=(4, 0), invalid="coordinate-outside-slide"))}


def _draw_lesions(rng: np.random.Generator, shape: tuple[int, int], value: int, count: int, itc: int, ring: bool):
    """A level-5 tumor mask with `count` elliptic lesions (some far above the ITC size), `itc`
    small blobs and optionally a ring (a hole to fill); returns the mask and the lesion centres."""
    import cv2

    mask = np.zeros(shape, dtype=np.uint8)
    height, width = shape
    centres = []
    scale = max(1.0, min(shape) / 192) ** 0.5  # ~4x on a 3000 x 7000 slide: lesions up to ~2 mm
    for k in range(count + itc):
        small = k >= count
        axes = ((int(rng.integers(2, 7)), int(rng.integers(2, 7))) if small else
                (int(rng.integers(14, 30) * scale), int(rng.integers(8, 22) * scale)))
        margin = max(axes) + 8
        centre = (int(rng.integers(margin, width - margin)), int(rng.integers(margin, height - margin)))
        cv2.ellipse(mask, centre, axes, float(rng.uniform(0, 180)), 0, 360, value, -1)
        centres.append((centre, axes, small))
    if ring:
        r = int(20 * scale)
        centre = (int(rng.integers(r + 8, width - r - 8)), int(rng.integers(r + 8, height - r - 8)))
        cv2.circle(mask, centre, r, value, thickness=max(2, r // 4))
        centres.append((centre, (r, r), False))
    return mask, centres


def _write_pyramid(path: Path, level5: np.ndarray, use_subifds: bool, pixel_size_um: float) -> None:
    """A pyramidal TIFF whose level 0 is the level-5 mask upsampled 32 times, with 2x levels
    down to level 5, deflate-compressed."""
    import tifffile

    level0 = np.repeat(np.repeat(level5, 32, axis=0), 32, axis=1)
    resolution = (1e4 / pixel_size_um, 1e4 / pixel_size_um)
    with tifffile.TiffWriter(path) as tif:
        tif.write(level0, tile=(512, 512), compression="zlib", compressionargs={"level": 9},
                  subifds=5 if use_subifds else None, resolution=resolution, resolutionunit="CENTIMETER")
        for k in range(1, 6):
            tif.write(level0[:: 2 ** k, :: 2 ** k], tile=(16, 16) if k == 5 else (128, 128), compression="zlib",
                      compressionargs={"level": 9}, subfiletype=1)


def write_synthetic(out_dir: Path, seed: int = 0, slides: int = 6, mask_shape: tuple[int, int] = (192, 288),
                    pyramids: int = 0, extra_slides: bool = False, detections: tuple[int, int] = (5, 40),
                    phase: str = "files") -> None:
    """A ground truth (reference.csv, masks/) and a submission for `slides` slides (half tumor),
    level-5 masks of `mask_shape`; the first `pyramids` tumor masks are pyramidal TIFFs, the
    others single-page level-5 TIFFs. Detections per slide: uniform in `detections` false
    positives plus a few hits per lesion. `phase`: "files" (slides.csv + CSVs) or "algorithm"
    (predictions.json with the two JSON outputs per slide, coordinates in mm)."""
    import tifffile

    rng = np.random.default_rng(seed)
    truth_dir, input_dir = out_dir / "ground-truth", out_dir / "input"
    (truth_dir / MASKS_FOLDER).mkdir(parents=True, exist_ok=True)
    input_dir.mkdir(parents=True, exist_ok=True)
    pixel_size = 0.243
    extra = ["Test_049", "Test_114"] if extra_slides else []
    # Numbered from Test_001, skipping the extra slides' names (a 60-slide example would list Test_049 twice).
    numbered = (f"Test_{n:03d}" for n in range(1, slides + len(extra) + 1))
    names = [name for name in numbered if name not in extra][:slides]
    kinds = {name: TUMOR if n % 2 == 0 else NORMAL for n, name in enumerate(names)}
    if extra_slides:
        names += extra
        kinds.update({"Test_049": TUMOR, "Test_114": TUMOR})
    reference = ["image,type"]
    height, width = mask_shape
    submission: dict[str, tuple[float, list[tuple[float, int, int]]]] = {}
    tumor_index = 0
    for name in names:
        kind = kinds[name]
        reference.append(f"{name},{kind.capitalize()}")
        points: list[tuple[float, int, int]] = []
        if kind == TUMOR and not (extra_slides and name in ("Test_049", "Test_114")):
            value = (255, 2, 1)[tumor_index % 3]  # 2016 release, later conversions
            mask, lesions = _draw_lesions(rng, mask_shape, value, count=int(rng.integers(1, 4)), itc=1,
                                          ring=tumor_index == 0)
            if tumor_index < pyramids:
                _write_pyramid(truth_dir / MASKS_FOLDER / f"{name}.tif", mask, use_subifds=tumor_index == 1,
                               pixel_size_um=pixel_size)
            else:
                tifffile.imwrite(truth_dir / MASKS_FOLDER / f"{name}.tif", mask, compression="zlib")
            tumor_index += 1
            for (cx, cy), axes, small in lesions:
                if rng.random() < (0.6 if small else 0.7):
                    for _ in range(int(rng.integers(1, 4))):
                        # level-0 pixel near the centre (inside the ellipse's inner box)
                        dx, dy = (int(rng.integers(-a // 2, a // 2 + 1)) for a in axes)
                        px = (cx + dx) * 32 + int(rng.integers(0, 32))
                        py = (cy + dy) * 32 + int(rng.integers(0, 32))
                        points.append((round(float(rng.beta(3, 2)), 4), px, py))
        for _ in range(int(rng.integers(detections[0], detections[1] + 1))):
            points.append((round(float(rng.beta(1.5, 4)), 4), int(rng.integers(0, width * 32)),
                           int(rng.integers(0, height * 32))))
        order = rng.permutation(len(points))
        probability = round(float(rng.beta(3, 2) if kind == TUMOR else rng.beta(2, 3)), 3)
        submission[name] = (probability, [points[i] for i in order])
    (truth_dir / REFERENCE_FILE).write_text("\n".join(reference) + "\n")

    if phase == "files":
        rows = ["image,probability"] + [f"{name},{p}" for name, (p, _) in submission.items()]
        (input_dir / SLIDES_FILE).write_text("\n".join(rows) + "\n")
        for n, (name, (_, points)) in enumerate(submission.items()):
            if extra_slides and name == "Test_114":
                continue  # slide level only: its detections file may be left out
            header = ["p,x,y"] if n % 2 == 0 else []  # both forms: with and without header
            lines = header + [f"{c},{x},{y}" for c, x, y in points]
            (input_dir / f"{name}.csv").write_text("".join(line + "\n" for line in lines))
        return
    jobs = []
    for name, (probability, points) in submission.items():
        pk = synthetic.job_pk(rng)
        document = {"name": "metastases", "type": "Multiple points", "version": {"major": 1, "minor": 0},
                    "points": [{"name": f"detection {i}",
                                "point": [x * pixel_size / MM_TO_UM, y * pixel_size / MM_TO_UM, 0.0],
                                "probability": c} for i, (c, x, y) in enumerate(points)]}
        jobs.append(synthetic.job(
            pk,
            [synthetic.image_input("whole-slide-image", f"{name}.tif", "images/whole-slide-image")],
            [synthetic.file_output("metastasis-likelihood", "metastasis-likelihood.json", kind="Float"),
             synthetic.file_output("metastasis-detections", "metastasis-detections.json", kind="Multiple points")],
        ))
        synthetic.write_output(input_dir, pk, "metastasis-likelihood.json", probability)
        synthetic.write_output(input_dir, pk, "metastasis-detections.json", document)
    order = rng.permutation(len(jobs))
    synthetic.write_predictions(input_dir, [jobs[i] for i in order])
