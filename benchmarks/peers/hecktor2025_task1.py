"""HECKTOR 2025 Task 1 the usual way: SimpleITK reads each patient's masks and its
LabelOverlapMeasuresImageFilter gives the GTVp Dice, scipy.ndimage.label finds the 26-connected
GTVn lesions, each true lesion's IoU with the predicted lesions it touches is computed on the
whole volume, matched greedily by decreasing IoU (> 0.3).

    python -m benchmarks.peers.hecktor2025_task1 GROUND_TRUTH_DIR INPUT_DIR

Prints {"gtvp_dsc_mean", "gtvn_dsc_agg", "gtvn_f1_agg", "gtvn_tp", "gtvn_fp", "gtvn_fn"}: the mean
per-patient GTVp Dice (1 when both are empty), the GTVn Dice of all patients' voxels weighted by
voxel volume, and the F1 of the summed lesion counts.
"""

import json
import sys
from pathlib import Path

import numpy as np
import SimpleITK as sitk
from scipy import ndimage

from benchmarks.peers import patient_of

GTVP, GTVN = 1, 2


def lesion_counts(truth, prediction):
    structure = np.ones((3, 3, 3), dtype=bool)
    truth_labels, n_truth = ndimage.label(truth == GTVN, structure)
    prediction_labels, n_prediction = ndimage.label(prediction == GTVN, structure)
    prediction_sizes, pairs = {}, []
    for t in range(1, n_truth + 1):
        inside = truth_labels == t
        size = int(inside.sum())
        touched, shared = np.unique(prediction_labels[inside], return_counts=True)
        for p, intersection in zip(touched, shared, strict=True):
            if p:
                if p not in prediction_sizes:
                    prediction_sizes[p] = int(np.count_nonzero(prediction_labels == p))
                iou = intersection / (size + prediction_sizes[p] - intersection)
                if iou > 0.3:
                    pairs.append((-iou, t, int(p)))
    used_t, used_p = set(), set()
    for _, t, p in sorted(pairs):
        if t not in used_t and p not in used_p:
            used_t.add(t)
            used_p.add(p)
    tp = len(used_t)
    return tp, n_prediction - tp, n_truth - tp


def main():
    truth_dir, input_dir = Path(sys.argv[1]), Path(sys.argv[2])
    gtvp_dice, intersection, total, counts = [], 0.0, 0.0, np.zeros(3, dtype=int)
    for job in json.loads((input_dir / "predictions.json").read_text()):
        ct = next(i for i in job["inputs"] if i["socket"]["slug"] == "ct-image")
        output = next(o for o in job["outputs"] if o["socket"]["slug"] == "tumor-lymph-node-segmentation")
        folder = input_dir / job["pk"] / "output" / output["socket"]["relative_path"]
        truth_image = sitk.ReadImage(str(truth_dir / f"{patient_of(ct['image']['name'])}.nii.gz"))
        prediction_image = sitk.ReadImage(str(next(folder.iterdir())))
        truth, prediction = sitk.GetArrayFromImage(truth_image), sitk.GetArrayFromImage(prediction_image)
        overlap = sitk.LabelOverlapMeasuresImageFilter()
        prediction_image = sitk.Cast(prediction_image, truth_image.GetPixelID())
        prediction_image.CopyInformation(truth_image)  # same grid (checked to 1e-4 by the evaluation)
        overlap.Execute(truth_image, prediction_image)
        if (truth == GTVP).any() or (prediction == GTVP).any():
            gtvp_dice.append(overlap.GetDiceCoefficient(GTVP))
        else:
            gtvp_dice.append(1.0)
        voxel = float(np.prod(truth_image.GetSpacing()))
        t, p = truth == GTVN, prediction == GTVN
        intersection += voxel * np.count_nonzero(t & p)
        total += voxel * (np.count_nonzero(t) + np.count_nonzero(p))
        counts += lesion_counts(truth, prediction)
    tp, fp, fn = (int(c) for c in counts)
    print(json.dumps({"gtvp_dsc_mean": float(np.mean(gtvp_dice)),
                      "gtvn_dsc_agg": 1.0 if total == 0 else 2 * intersection / total,
                      "gtvn_f1_agg": 1.0 if tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn),
                      "gtvn_tp": tp, "gtvn_fp": fp, "gtvn_fn": fn}))


if __name__ == "__main__":
    main()
