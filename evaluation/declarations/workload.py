"""How heavy a challenge's case is, for scheduling only (evaluation/run.py, the final ranking's
re-scoring and its bootstrap): apart from what the challenge computes, so that tuning the run
never touches the scientific declaration. Each value is measured per challenge
(benchmarks/workers.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Workload:
    # False when a case is too little work for a process (a few hundred bytes of JSON): the pool
    # would cost more than it saves, so every case is read in the run's own process.
    in_workers: bool = True
    # Fewer cases than this per worker and the pool costs more than it saves (starting the
    # workers, sending the cases): the remaining cases are scored in the run's own process.
    min_cases_per_worker: int = 1
    # About how much memory a worker scoring a case takes: the workers started are at most the
    # memory limit (RLIMIT_DATA, RLIMIT_AS or the cgroup's) over this (evaluation/machine.py).
    worker_memory_bytes: int = 256 << 20
    # The final ranking's bootstrap: resamples of this many rows at a time at most, and no more
    # than resample_cells (rows x cases) in one block, so that memory stays flat.
    resample_rows: int = 1000
    resample_cells: int = 2_000_000
