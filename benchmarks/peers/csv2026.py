"""CSV 2026 the usual way: h5py reads each NNNN_label.h5 and NNNN_pred.h5, DeepMind's
surface-distance computes the NSD at 3 px, numpy the Dice, a loop over the cases.

    python -m benchmarks.peers.csv2026 GROUND_TRUTH_DIR INPUT_DIR

Prints {"macro_f1", "<view>_<structure>_dsc", "<view>_<structure>_nsd", "score_without_time"}.
DeepMind's NSD places surface elements at pixel corners: another definition than the
MetricsReloaded one the challenge uses, so its NSD (and the scores built on it) differ; Dice and
F1 must be equal.
"""

import json
import sys
from pathlib import Path

import h5py
import numpy as np
from surface_distance import compute_surface_dice_at_tolerance, compute_surface_distances

VIEWS = ("long", "trans")
STRUCTURE_WEIGHTS = {"vessel": 0.4, "plaque": 0.6}
TOLERANCE = 3.0


def masks(array):
    """{structure: mask} from raw labels (255 vessel, 128 plaque) or indices (2 vessel, 1 plaque)."""
    if set(np.unique(array).tolist()) <= {0, 128, 255}:
        return {"vessel": array == 255, "plaque": array == 128}
    return {"vessel": array == 2, "plaque": array == 1}


def dice(p, t):
    total = p.sum() + t.sum()
    return 1.0 if total == 0 else 2.0 * (p & t).sum() / total


def nsd(p, t):
    if not p.any() and not t.any():
        return 1.0
    if not p.any() or not t.any():
        return 0.0
    return compute_surface_dice_at_tolerance(compute_surface_distances(t, p, (1.0, 1.0)), TOLERANCE)


def f1(y_true, y_pred, label):
    tp = np.sum((y_true == label) & (y_pred == label))
    denominator = np.sum(y_true == label) + np.sum(y_pred == label)
    return 0.0 if denominator == 0 else 2.0 * tp / denominator


def main():
    truth_dir, input_dir = Path(sys.argv[1]), Path(sys.argv[2])
    predictions = {p.name[: -len("_pred.h5")]: p for p in input_dir.rglob("*_pred.h5")}
    values = {f"{v}_{s}_{m}": [] for v in VIEWS for s in STRUCTURE_WEIGHTS for m in ("dsc", "nsd")}
    y_true, y_pred = [], []
    for label_file in sorted(truth_dir.glob("*_label.h5")):
        case = label_file.name[: -len("_label.h5")]
        with h5py.File(label_file, "r") as truth, h5py.File(predictions[case], "r") as prediction:
            y_true.append(int(truth["cls"][()]))
            if "cls_prob" in prediction:
                y_pred.append(int(float(prediction["cls_prob"][()]) >= 0.5))
            else:
                y_pred.append(int(np.asarray(prediction["cls" if "cls" in prediction else "cls_pred"]).ravel()[0]))
            for view in VIEWS:
                t = masks(truth[f"{view}_mask"][:])
                p = masks(prediction[f"{view}_mask"][:] if f"{view}_mask" in prediction
                          else prediction[f"pred_{view}"][:])
                for structure in STRUCTURE_WEIGHTS:
                    values[f"{view}_{structure}_dsc"].append(dice(p[structure], t[structure]))
                    values[f"{view}_{structure}_nsd"].append(nsd(p[structure], t[structure]))
    y_true, y_pred = np.array(y_true), np.array(y_pred)
    result = {"macro_f1": (f1(y_true, y_pred, 0) + f1(y_true, y_pred, 1)) / 2}
    result.update({key: float(np.mean(v)) for key, v in values.items()})
    segmentation = 0.5 * sum(weight * (result[f"{v}_{s}_dsc"] + result[f"{v}_{s}_nsd"]) / 2
                             for v in VIEWS for s, weight in STRUCTURE_WEIGHTS.items())
    result["score_without_time"] = (0.4 * 100 * result["macro_f1"] + 0.4 * 100 * segmentation) / 0.8
    print(json.dumps(result))


if __name__ == "__main__":
    main()
