"""Making and reading HECKTOR 2025 synthetic data sets for the task tests, without our loaders (the
tests compare our numbers with computations on what is read here), and running the command
line in a process of its own under a memory limit."""

import json
import shutil
from pathlib import Path

from evaluation.challenges.hecktor2025 import examples as hecktor2025
from evaluation.challenges.hecktor2025 import task1_examples as hecktor2025_task1
from tests.cli_runs import Run, run_command_line

SYNTHESIZE = {"hecktor2025-task1": hecktor2025_task1.synthesize, "hecktor2025-task2": hecktor2025.synthesize_task2,
              "hecktor2025-task3": hecktor2025.synthesize_task3}
MEMORY_LIMIT = 1 << 30  # bytes of data (heap and anonymous mappings) the limited run may use


def make_dataset(challenge, root, seed, cases):
    """The challenge's synthetic ground truth (root/ground-truth) and submission (root/input)."""
    SYNTHESIZE[challenge](Path(root), seed=seed, cases=cases)
    return root


def copy_dataset(dataset, tmp_path):
    """A copy of a module-scoped data set that a test may change: (input, ground truth)."""
    shutil.copytree(dataset, tmp_path / "data")
    return tmp_path / "data" / "input", tmp_path / "data" / "ground-truth"


def ground_truth_table(ground_truth):
    """The ground-truth CSV as a pandas table indexed by PatientID, in sorted patient order."""
    import pandas as pd

    (csv,) = ground_truth.glob("*.csv")
    return pd.read_csv(csv).set_index("PatientID").sort_index()


def value_outputs(input_dir, filename):
    """{PatientID: the JSON value of the job's `filename` output}; the patient is the CT image
    name up to its "__CT" suffix, as the synthetic data names them."""
    values = {}
    for job in json.loads((input_dir / "predictions.json").read_text()):
        ct = next(i for i in job["inputs"] if i["socket"]["slug"] == "ct-image")
        output = input_dir / job["pk"] / "output" / filename
        values[ct["image"]["name"].split("__")[0]] = json.loads(output.read_text())
    return values


def evaluate_with_memory_limit(challenge, input_dir, ground_truth, output, limit=MEMORY_LIMIT) -> Run:
    """`python -m evaluation` (one worker) in a new process that may allocate at most `limit`
    bytes of data: reading a file or decoding an image as large as it claims would fail there."""
    return run_command_line(challenge, input_dir, ground_truth, output, "--workers", 1, memory_limit=limit)
