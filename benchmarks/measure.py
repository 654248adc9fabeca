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


@dataclass
class CommandRun:
    seconds: float  # wall
    cpu_seconds: float  # user + system of the command and every process it waited for (its workers)
    peak_rss_bytes: int  # the largest sampled sum over the process tree, at least its largest process's peak
    stdout: str = ""


def run_command(command: list[str], cwd: Path = ROOT, env: dict[str, str] | None = None,
                interval: float = 0.005) -> CommandRun:
    """Any command, as a user waits for it: wall time, CPU time of its whole process tree
    (getrusage(RUSAGE_CHILDREN) around it; workers are waited for, so they count) and peak memory
    of the tree (/proc sampled every `interval` s). Stops the benchmark, with the last stderr
    line, if the command fails."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    high_water: dict[int, int] = {}
    peak = [0]

    def sample():
        while process.poll() is None:
            peak[0] = max(peak[0], tree_rss_bytes(process.pid, high_water))
            time.sleep(interval)

    sampler = threading.Thread(target=sample)
    sampler.start()
    stdout, stderr = process.communicate()
    seconds = time.perf_counter() - started
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0:
        last = stderr.strip().splitlines()[-1] if stderr.strip() else "(no message)"
        raise SystemExit(f"{' '.join(command[:4])} ... failed with exit {process.returncode}: {last}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return CommandRun(seconds, cpu, max(peak[0], max(high_water.values(), default=0)), stdout)


def evaluation_snapshot(folder: Path, source: Path = ROOT, compiled: bool = True) -> dict[str, str]:
    """A copy of `source`/evaluation in `folder` (the working tree may change while a benchmark
    runs), compiled to bytecode unless `compiled` is False; returns the environment that runs it
    (PYTHONPATH, and PYTHONDONTWRITEBYTECODE=1 as in the image). Without the bytecode, every run
    compiles each module it imports from source, as the image does when its Dockerfile does not
    compile evaluation/ (read-only, PYTHONDONTWRITEBYTECODE=1)."""
    import compileall
    import shutil

    shutil.copytree(Path(source) / "evaluation", Path(folder) / "evaluation",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if compiled:
        compileall.compile_dir(Path(folder) / "evaluation", quiet=1)
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(folder)}
