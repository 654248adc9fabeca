"""What a run of the command line left behind (`Run`), and `run_command_line`: `python -m
evaluation` in a process of its own, optionally under a data-segment limit, so that reading a
file or decoding an image as large as it claims fails there at once instead of taking the
machine's memory. Nothing here imports the evaluation package."""

import functools
import json
import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DROP_ENV = ("EVALUATION_CHALLENGE", "EVALUATION_WORKERS")  # the developer's own settings


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    output: Path

    @property
    def last_error_line(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    @property
    def metrics(self) -> dict:
        return json.loads((self.output / "metrics.json").read_text())

    @property
    def wrote_metrics(self) -> bool:
        return (self.output / "metrics.json").exists()


def limit_data(limit: int) -> None:
    """Limit this process (and what it executes) to `limit` bytes of data: heap and anonymous
    mappings. Meant to run between fork and exec (preexec_fn) or in a child."""
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def run_command_line(challenge, input_dir, ground_truth, output, *extra, memory_limit: int | None = None,
                     timeout: float = 300) -> Run:
    """`python -m evaluation CHALLENGE --input … --ground-truth … --output … EXTRA…` in a new
    process started from the repository, with at most `memory_limit` bytes of data when given;
    one OpenBLAS thread, and no EVALUATION_* variables of the developer's."""
    env = {name: value for name, value in os.environ.items() if name not in DROP_ENV}
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", "evaluation", challenge, "--input", str(input_dir), "--ground-truth",
               str(ground_truth), "--output", str(output), *map(str, extra)]
    preexec = None if memory_limit is None else functools.partial(limit_data, memory_limit)
    done = subprocess.run(command, cwd=ROOT, env=env, preexec_fn=preexec, capture_output=True, text=True,
                          timeout=timeout)
    return Run(done.returncode, done.stdout, done.stderr, Path(output))
