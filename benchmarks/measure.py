"""Running our command line the way the platform does, timed, with the memory of every process it
starts (the scoring workers included), for the end-to-end benchmarks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tree_rss_bytes(pid: int, high_water: dict[int, int] | None = None) -> int:
    """Resident memory of a process and all its descendants now (Linux /proc); records each
    process's own peak (VmHWM) in `high_water` when given."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            with open(f"/proc/{current}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                    elif line.startswith("VmHWM:") and high_water is not None:
                        high_water[current] = max(high_water.get(current, 0), int(line.split()[1]) * 1024)
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    stack.extend(int(c) for c in children.read().split())
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


@dataclass
class EvaluationRun:
    seconds: float
    peak_rss_bytes: int  # the largest sampled sum over the process tree
    high_water: dict[int, int] = field(default_factory=dict)  # each process's own peak (VmHWM)
    metrics: dict = field(default_factory=dict)

    @property
    def high_water_bytes(self) -> int:
        """Sum of every process's own peak: an upper bound of the tree's peak."""
        return sum(self.high_water.values())


def run_evaluation(challenge: str, input_dir: Path, ground_truth: Path, output: Path, workers: int,
                   interval: float = 0.01) -> EvaluationRun:
    """`python -m evaluation` on the files, sampling the process tree's memory every `interval`
    seconds; stops the benchmark with the evaluation's last stderr line if it fails."""
    command = [sys.executable, "-m", "evaluation", challenge, "--input", str(input_dir), "--ground-truth",
               str(ground_truth), "--output", str(output), "--workers", str(workers)]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    run = EvaluationRun(0.0, 0)

    def sample():
        while process.poll() is None:
            run.peak_rss_bytes = max(run.peak_rss_bytes, tree_rss_bytes(process.pid, run.high_water))
            time.sleep(interval)

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, stderr = process.communicate()
    run.seconds = time.perf_counter() - started
    sampler.join()
    if process.returncode != 0:
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "(no message)"
        raise SystemExit(f"the {challenge} evaluation failed with exit {process.returncode}: {last}")
    run.metrics = json.loads((output / "metrics.json").read_text())
    return run
