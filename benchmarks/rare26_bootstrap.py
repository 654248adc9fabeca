"""RARE26 bootstrap: our vectorised resampling against the official way, one scikit-learn call
per metric and repetition, on the same draws, side by side in one run.

    .venv/bin/python -m benchmarks.rare26_bootstrap [--repetitions 1000] [--stacks 8 20]

Prints per data set and scheme: the seconds of each (median of --rounds), the ratio, the largest
difference between the two (PPV@90 must be identical, AUROC/AUPRC within 1e-12), and the peak
memory the vectorised run allocated (tracemalloc). Not a timed test: run it, read the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from benchmarks.rare26_official import load_arrays, official_image_level, official_patient_level
from evaluation.challenges.rare26 import image_level_bootstrap, patient_level_bootstrap
from evaluation.examples.rare26 import synthesize


def synthetic_arrays(stacks: int, seed: int):
    """Labels, scores and patients of a synthetic test set, read back from the files the
    generator writes (the same data the evaluation would see)."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        synthesize(root, seed=seed, cases=stacks)
        return load_arrays(root / "input", root / "ground-truth")


def timed(function, rounds):
    times, result = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def peak_bytes(function):
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=1000)
    parser.add_argument("--stacks", type=int, nargs="+", default=[8, 20], help="synthetic test-set sizes, in stacks")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds of the vectorised run (median)")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()

    print(f"{'data set':>30} {'scheme':>8} {'sklearn loop':>13} {'vectorised':>11} {'ratio':>7} "
          f"{'max |diff| AUROC/AUPRC/PPV':>30} {'peak MB':>8}")
    ratios = []
    for stacks in args.stacks:
        y, s, patients = synthetic_arrays(stacks, seed=stacks)
        label = f"{stacks} stacks, {len(y)} frames ({int(y.sum())} neo)"
        schemes = {
            "image": (lambda: image_level_bootstrap(y, s, np.random.default_rng(args.seed), args.repetitions, 100)[0],
                      lambda: official_image_level(y, s, args.seed, args.repetitions)),
            "patient": (lambda: patient_level_bootstrap(y, s, patients, np.random.default_rng(args.seed),
                                                        args.repetitions, 10, 100)[0],
                        lambda: official_patient_level(y, s, patients, args.seed, args.repetitions)),
        }
        for scheme, (ours, official) in schemes.items():
            ours_seconds, ours_result = timed(ours, args.rounds)
            official_seconds, official_result = timed(official, 1)
            diffs = [np.abs(ours_result[key] - official_result[:, column]).max()
                     for column, key in enumerate(("auroc", "average_precision", "ppv_at_recall"))]
            if diffs[0] > 1e-12 or diffs[1] > 1e-12 or diffs[2] != 0:
                raise SystemExit(f"MISMATCH on {label}, {scheme}: {diffs}")
            ratio = official_seconds / ours_seconds
            ratios.append(ratio)
            print(f"{label:>30} {scheme:>8} {official_seconds:>12.3f}s {ours_seconds:>10.4f}s {ratio:>6.1f}x "
                  f"{'/'.join(f'{d:.0e}' for d in diffs):>30} {peak_bytes(ours) / 2**20:>8.1f}")
    print(f"\n{args.repetitions} repetitions; equal results on the same draws; "
          f"speed-up {min(ratios):.1f}x to {max(ratios):.1f}x (target: at least 20x).")


if __name__ == "__main__":
    main()
