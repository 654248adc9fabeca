"""A plain, independent re-implementation of the CAMELYON16 2016 evaluation (the organizers'
Evaluation_FROC.py, read and rewritten, not copied), used as the oracle of the tests and the
baseline of the benchmark. It works the way the 2016 script does:

- evaluation mask: scipy's exact Euclidean distance transform of the whole level-5 mask,
  `distance < 75 / (resolution * 2**level * 2)`, scipy's binary_fill_holes (default structure),
  scikit-image's label with connectivity 2 (8-connected);
- ITC: scikit-image regionprops, major_axis_length < 275 / (resolution * 2**level);
- detections one by one: label at [int(Y / 2**level), int(X / 2**level)]; lesion slots in a
  float32 array of one slot per region, updated when a confidence is larger;
- FROC: a Python set of every confidence, sorted, the first dropped (2016) or the zeros removed
  (corrected: slots in float64), a count of values >= each threshold, the point (0, 0) appended,
  np.interp at 1/4, 1/2, 1, 2, 4, 8 false positives per slide.

The input is our ground-truth folder and a predictions-file submission (slides.csv + one CSV per
slide), read with straightforward code of its own (tifffile series levels, csv module).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from scipy import ndimage
from skimage import measure

TARGETS = [0.25, 0.5, 1, 2, 4, 8]


def read_level5(path: Path, single_page_level: int = 5) -> tuple[np.ndarray, int]:
    """(mask != 0, level) of a pyramidal TIFF (its series level 5) or a single-page raster."""
    import tifffile

    with tifffile.TiffFile(path) as tif:
        levels = tif.series[0].levels
        if len(levels) > 1:
            return np.asarray(levels[5].asarray()) != 0, 5
        pages = list(tif.pages)
        if len(pages) > 1:  # reduced pages not grouped into levels: pick the one at 1/32
            height0, width0 = pages[0].shape[:2]
            for page in pages[1:]:
                if abs(page.shape[0] - height0 / 32) <= 1 and abs(page.shape[1] - width0 / 32) <= 1:
                    return page.asarray() != 0, 5
        return tif.pages[0].asarray() != 0, single_page_level


def evaluation_mask_2016(tumor: np.ndarray, resolution: float, level: int) -> np.ndarray:
    distance = ndimage.distance_transform_edt(~tumor)
    threshold = 75 / (resolution * 2 ** level * 2)
    filled = ndimage.binary_fill_holes(distance < threshold)
    return measure.label(filled, connectivity=2)


def itc_labels_2016(labels: np.ndarray, resolution: float, level: int) -> list[int]:
    threshold = 275 / (resolution * 2 ** level)
    regions = measure.regionprops(labels)
    return [k + 1 for k in range(int(labels.max())) if regions[k].axis_major_length < threshold]


def fp_tp_2016(probs, xs, ys, is_tumor: bool, labels, itc: list[int], level: int, slot_dtype=np.float32):
    """(false-positive confidences, lesion slots, number of non-ITC regions) of one slide."""
    max_label = int(np.amax(labels)) if is_tumor else 0
    fps = []
    tps = np.zeros((max_label,), dtype=slot_dtype)
    for p, x, y in zip(probs, xs, ys, strict=True):
        if not is_tumor:
            fps.append(p)
            continue
        hit = labels[int(y / pow(2, level)), int(x / pow(2, level))]
        if hit == 0:
            fps.append(p)
        elif hit not in itc:
            if p > tps[hit - 1]:
                tps[hit - 1] = p
    return fps, list(tps), max_label - len(itc)


def froc_2016(fp_lists, tp_lists, tumor_counts, corrected: bool = False):
    """(FP rates, sensitivities) in the scripts' order, then (sensitivities at TARGETS, mean)."""
    all_fps = [v for values in fp_lists for v in values]
    all_tps = [v for values in tp_lists for v in values]
    # In 2016 (NumPy 1) a float32 scalar met a Python float by its exact value in the set and the
    # sort; NumPy 2 compares the two in float32, which leaves sorted() inconsistent. Use the
    # exact values, as the script did then. The counts below still compare the float32 array.
    pooled = all_fps + [float(v) for v in all_tps]
    if corrected:
        thresholds = sorted(set(pooled) - {0.0})
    else:
        thresholds = sorted(set(pooled))[1:]
    fps_array, tps_array = np.asarray(all_fps), np.asarray(all_tps)
    fp_counts, tp_counts = [], []
    for threshold in thresholds:
        fp_counts.append((fps_array >= threshold).sum())
        tp_counts.append((tps_array >= threshold).sum())
    fp_counts.append(0)
    tp_counts.append(0)
    fp_rates = np.asarray(fp_counts) / float(len(fp_lists))
    sensitivities = np.asarray(tp_counts) / float(sum(tumor_counts))
    at_targets = np.interp(TARGETS, fp_rates[::-1], sensitivities[::-1])
    return fp_rates, sensitivities, at_targets, float(np.mean(at_targets))


def read_rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as handle:
        return [row for row in csv.reader(handle) if row]


def reference_scores(input_dir: Path, ground_truth_dir: Path, resolution: float = 0.243, corrected: bool = False,
                     excluded=("Test_049",), lesion_excluded=("Test_114",), single_page_level: int = 5,
                     pixel_size_from_tiff: bool = False) -> dict:
    """Slide AUC (scikit-learn) and the FROC numbers of a predictions-file submission."""
    from sklearn.metrics import roc_auc_score

    reference = {row[0]: row[1].lower() == "tumor" for row in read_rows(ground_truth_dir / "reference.csv")[1:]}
    probabilities = {row[0]: float(row[1]) for row in read_rows(input_dir / "slides.csv")
                     if row[0] != "image"}
    slides = sorted(s for s in reference if s not in excluded)
    auc = roc_auc_score([int(reference[s]) for s in slides], [probabilities[s] for s in slides])
    fp_lists, tp_lists, tumor_counts, itc_total = [], [], [], 0
    for slide in slides:
        if slide in lesion_excluded:
            continue
        rows = [row for row in read_rows(input_dir / f"{slide}.csv") if row[0] != "p"]
        probs = [float(row[0]) for row in rows]
        xs = [float(row[1]) for row in rows]
        ys = [float(row[2]) for row in rows]
        if reference[slide]:
            tumor, level = read_level5(ground_truth_dir / "masks" / f"{slide}.tif", single_page_level)
            size = resolution
            if pixel_size_from_tiff and level == 5:
                size = tiff_pixel_size(ground_truth_dir / "masks" / f"{slide}.tif") or resolution
            labels = evaluation_mask_2016(tumor, size, level)
            itc = itc_labels_2016(labels, size, level)
        else:
            labels, itc, level = None, [], 5
        fps, tps, count = fp_tp_2016(probs, xs, ys, reference[slide], labels, itc, level,
                                     slot_dtype=np.float64 if corrected else np.float32)
        fp_lists.append(fps)
        tp_lists.append(tps)
        tumor_counts.append(count)
        itc_total += len(itc)
    fp_rates, sensitivities, at_targets, score = froc_2016(fp_lists, tp_lists, tumor_counts, corrected)
    return {"slide_auc": float(auc), "froc_score": score, "at_targets": at_targets.tolist(),
            "fp_rates": fp_rates, "sensitivities": sensitivities,
            "lesions_total": int(sum(tumor_counts)), "lesions_itc_excluded": itc_total}


def tiff_pixel_size(path: Path) -> float | None:
    import tifffile

    with tifffile.TiffFile(path) as tif:
        page = tif.pages[0]
        if "XResolution" not in page.tags or page.tags["ResolutionUnit"].value != 3:
            return None
        numerator, denominator = page.tags["XResolution"].value
        return 1e4 * denominator / numerator
