"""Making and reading HECKTOR 2025 synthetic data sets for the task tests, without our loaders (the
tests compare our numbers with computations on what is read here), and running the command
line in a process of its own under a memory limit."""

import json
import os
import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from evaluation.examples import hecktor2025, hecktor2025_task1

ROOT = Path(__file__).resolve().parent.parent
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
        values[ct["image"]["name"].split("__")[0]] = json.loads((input_dir / job["pk"] / "output" / filename).read_text())
    return values


@dataclass
class LimitedRun:
    code: int
    stdout: str
    stderr: str
    output: Path

    @property
    def last_error_line(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    @property
    def wrote_metrics(self) -> bool:
        return (self.output / "metrics.json").exists()


def evaluate_with_memory_limit(challenge, input_dir, ground_truth, output, limit=MEMORY_LIMIT) -> LimitedRun:
    """`python -m evaluation` in a new process that may allocate at most `limit` bytes of data:
    reading a file or decoding an image as large as it claims would fail there."""

    def limit_memory():
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("EVALUATION_CHALLENGE", None)
    command = [sys.executable, "-m", "evaluation", challenge, "--input", str(input_dir), "--ground-truth",
               str(ground_truth), "--output", str(output), "--workers", "1"]
    done = subprocess.run(command, cwd=ROOT, env=env, preexec_fn=limit_memory, capture_output=True, text=True,
                          timeout=300)
    return LimitedRun(done.returncode, done.stdout, done.stderr, Path(output))
