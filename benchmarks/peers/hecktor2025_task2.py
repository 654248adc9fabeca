"""HECKTOR 2025 Task 2 the usual way: pandas reads the ground truth, a loop reads each job's risk
score, lifelines' concordance_index scores the whole set and each of the bootstrap resamples.

    python -m benchmarks.peers.hecktor2025_task2 GROUND_TRUTH_DIR INPUT_DIR [SEED] [REPETITIONS]

Resamples: patients in sorted order, numpy's default_rng(SEED).integers(0, n, (REPETITIONS, n))
(the documented draws), a resample without a comparable pair left out; the 95% interval is
numpy's percentiles 2.5 and 97.5. Prints {"c_index", "c_index_ci_lower", "c_index_ci_upper"}.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from lifelines.utils import concordance_index

from benchmarks.peers import patient_of


def main():
    truth_dir, input_dir = Path(sys.argv[1]), Path(sys.argv[2])
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 2025
    repetitions = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    truth = pd.read_csv(next(truth_dir.glob("*.csv"))).set_index("PatientID")
    risks = {}
    for job in json.loads((input_dir / "predictions.json").read_text()):
        ct = next(i for i in job["inputs"] if i["socket"]["slug"] == "ct-image")
        output = next(o for o in job["outputs"] if o["socket"]["slug"] == "rfs")
        path = input_dir / job["pk"] / "output" / output["socket"]["relative_path"]
        risks[patient_of(ct["image"]["name"])] = float(json.loads(path.read_text()))
    frame = truth.join(pd.Series(risks, name="risk"), how="inner").sort_index()
    time, event, risk = frame["RFS"].to_numpy(float), frame["Relapse"].to_numpy(bool), frame["risk"].to_numpy(float)
    point = concordance_index(time, -risk, event)
    draws = np.random.default_rng(seed).integers(0, len(frame), size=(repetitions, len(frame)))
    values = []
    for rows in draws:
        try:
            values.append(concordance_index(time[rows], -risk[rows], event[rows]))
        except ZeroDivisionError:  # no comparable pair
            pass
    lower, upper = np.percentile(values, [2.5, 97.5])
    print(json.dumps({"c_index": float(point), "c_index_ci_lower": float(lower), "c_index_ci_upper": float(upper)}))


if __name__ == "__main__":
    main()
