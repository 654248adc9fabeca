"""A real Dask cluster for the final-ranking tests: a scheduler and two single-threaded worker
processes started on this machine, stopped (SIGINT, then killed) when the test ends."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def dask_cluster(folder: Path, cwd: Path, env: dict, *, nanny: bool = True) -> Iterator[tuple[str, list]]:
    """(scheduler address, worker processes). Without a nanny, killing a worker's process kills
    the worker (a nanny would restart it)."""
    scheduler_file = folder / "scheduler.json"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": cwd, "env": env}
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)], **quiet)
    workers: list[subprocess.Popen] = []
    try:
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        worker_kind = ["--nworkers", "1"] if nanny else ["--no-nanny"]
        for _ in range(2):
            workers.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", str(scheduler_file),
                 *worker_kind, "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"], **quiet))
        address = json.loads(scheduler_file.read_text())["address"]
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, workers
    finally:
        for process in [*workers, scheduler]:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in [*workers, scheduler]:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
