"""RARE26 the official way: one scikit-learn call per metric and bootstrap repetition
(benchmarks/rare26_official.py, the RARE25/26 procedure written plainly), as a command.

    python -m benchmarks.peers.rare26 GROUND_TRUTH_DIR INPUT_DIR [SEED] [REPETITIONS]

Image-level bootstrap (all NDBE images, neoplasia images drawn with replacement, 1 per 100
NDBE), medians and 95% percentile intervals. Prints the 13 keys of the official scorer.
"""

import json
import sys
from pathlib import Path

import numpy as np

from benchmarks.rare26_official import load_arrays, official_image_level, official_metrics


def main():
    truth_dir, input_dir = Path(sys.argv[1]), Path(sys.argv[2])
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 2026
    repetitions = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    y, s, _ = load_arrays(input_dir, truth_dir)
    full_auroc, full_auprc, full_ppv = official_metrics(y, s)
    boot = official_image_level(y, s, seed, repetitions)
    result = {}
    for column, key in enumerate(("AUROC", "AUPRC", "PPV@90RECALL")):
        values = boot[:, column]
        result[key] = float(np.median(values))
        result[f"{key} 95% CI Lower Bound"], result[f"{key} 95% CI Upper Bound"] = map(
            float, np.percentile(values, [2.5, 97.5]))
    result["Score"] = result["PPV@90RECALL"]
    result.update({"AUROC Full Dataset": float(full_auroc), "AUPRC Full Dataset": float(full_auprc),
                   "PPV@90RECALL Full Dataset": float(full_ppv)})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
