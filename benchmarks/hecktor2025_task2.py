"""HECKTOR 2025 Task 2: the C-index with its bootstrap, our vectorised way against lifelines'
concordance_index called once per resample, on the same draws, side by side in one run.

    .venv/bin/python -m benchmarks.hecktor2025_task2 [--patients 500] [--repetitions 1000]

Synthetic survival data with tied times (days rounded to weeks), ~35% relapses and tied risks
(rounded to 2 decimals). Prints the seconds of each (ours: median of --rounds), the ratio, the
largest difference over every resample (must be 0: same numbers bit for bit) and the peak memory
our run allocated (tracemalloc). Not a timed test: run it, read the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np
from lifelines.utils import concordance_index as lifelines_cindex

from evaluation.challenges.hecktor2025.common import bootstrap_counts
from evaluation.challenges.hecktor2025.survival import Task2Settings
from evaluation.metrics.survival import concordance_index


def survival_data(n: int, seed: int):
    rng = np.random.default_rng(seed)
    time_ = np.round(rng.uniform(60, 1800, n) / 7) * 7
    event = rng.random(n) < 0.35
    risk = np.round(3 * (1 - time_ / 1800) + event + rng.normal(0, 1.5, n), 2)
    return time_, event, risk


def ours(time_, event, risk, settings):
    """Every resample's C-index (NaN where no pair is comparable), as the challenge computes them."""
    parts = []
    for counts in bootstrap_counts(len(time_), settings):
        parts.append(concordance_index(time_, event, risk, counts))
    return np.concatenate(parts)


def lifelines_loop(time_, event, risk, settings):
    """The same draws (default_rng(seed).integers, one row per resample), lifelines on each."""
    draws = np.random.default_rng(settings.seed).integers(0, len(time_), size=(settings.bootstrap_repetitions,
                                                                                 len(time_)))
    values = np.empty(len(draws))
    for k, rows in enumerate(draws):
        try:
            values[k] = lifelines_cindex(time_[rows], -risk[rows], event[rows])
        except ZeroDivisionError:
            values[k] = np.nan
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patients", type=int, nargs="+", default=[500], help="test-set sizes (issue: 500)")
    parser.add_argument("--repetitions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds of our run (median)")
    parser.add_argument("--seed", type=int, default=2025)
    args = parser.parse_args()
    settings = Task2Settings(bootstrap_repetitions=args.repetitions, seed=args.seed)
    print(f"{'patients':>8} {'lifelines loop':>15} {'vectorised':>11} {'ratio':>7} {'max |diff|':>11} {'peak MB':>8}")
    for n in args.patients:
        time_, event, risk = survival_data(n, seed=n)
        times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            values = ours(time_, event, risk, settings)
            times.append(time.perf_counter() - start)
        tracemalloc.start()
        ours(time_, event, risk, settings)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        start = time.perf_counter()
        reference = lifelines_loop(time_, event, risk, settings)
        reference_seconds = time.perf_counter() - start
        same_nan = np.array_equal(np.isnan(values), np.isnan(reference))
        defined = ~np.isnan(values)
        difference = float(np.abs(values[defined] - reference[defined]).max()) if defined.any() else 0.0
        if not same_nan or difference != 0.0:
            raise SystemExit(f"MISMATCH at n={n}: max difference {difference}, same undefined resamples {same_nan}")
        ours_seconds = statistics.median(times)
        print(f"{n:>8} {reference_seconds:>14.2f}s {ours_seconds:>10.3f}s {reference_seconds / ours_seconds:>6.0f}x "
              f"{difference:>11.1e} {peak / 2**20:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
