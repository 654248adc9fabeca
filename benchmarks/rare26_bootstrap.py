"""RARE26 bootstrap: the official way (one scikit-learn call per metric and repetition), our
previous vectorised path (every repetition a row of multiplicities over all images) and the
current one (the NDBE scores sorted once, only the drawn neoplasia frames placed per
repetition), side by side on the same draws.

    .venv/bin/python -m benchmarks.rare26_bootstrap [--repetitions 1000] [--stacks 8 20 253] [--no-official]

Prints per data set (synthetic test sets of `python -m evaluation.examples rare26 --cases N`;
253 stacks are about 74,000 frames) and scheme: the seconds of each (median of --rounds; the
official loop once), the ratios, whether the current numbers equal the previous path's bit for
bit, the largest difference from the official loop (PPV@90 must be identical, AUROC/AUPRC
within 1e-12), and the peak memory each vectorised path allocated (tracemalloc). The 'patient'
scheme (RARE25 pack) still uses rows of multiplicities: its draws cover most images.
Not a timed test: run it, read the ratios.
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
from evaluation.challenges.rare26.examples import synthesize
from evaluation.challenges.rare26.scoring import image_level_bootstrap, patient_level_bootstrap
from evaluation.metrics.classification import resampled_ranking_metrics
from evaluation.metrics.resampling import draw_with_replacement, draws_to_counts, positives_per_resample

KEYS = ("auroc", "average_precision", "ppv_at_recall")
REPETITIONS_PER_BLOCK = 100  # how the previous path turned repetitions into rows of counts


def synthetic_arrays(stacks: int, seed: int):
    """Labels, scores and patients of a synthetic test set, read back from the files the
    generator writes (the same data the evaluation would see)."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        synthesize(root, seed=seed, cases=stacks)
        return load_arrays(root / "input", root / "ground-truth")


def previous_image_level(y, s, seed, repetitions, ratio=100):
    """The image-level bootstrap as it was: 100 repetitions at a time turned into rows of
    multiplicities over every image (all NDBE once, the drawn neoplasia frames), then scored."""
    rng = np.random.default_rng(seed)
    positives = np.flatnonzero(y == 1)
    draws = draw_with_replacement(rng, len(positives), repetitions, positives_per_resample(int((y == 0).sum()), ratio))
    parts = []
    for start in range(0, repetitions, REPETITIONS_PER_BLOCK):
        block = draws[start:start + REPETITIONS_PER_BLOCK]
        counts = np.tile((y == 0).astype(np.int64), (len(block), 1))
        counts[:, positives] = draws_to_counts(block, len(positives))
        parts.append(resampled_ranking_metrics(y, s, counts, 0.9))
    return {key: np.concatenate([part[key] for part in parts]) for key in KEYS}


def timed(function, rounds):
    times, result = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def peak_megabytes(function):
    tracemalloc.start()
    function()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def bootstrap_schemes(y, s, patients, seed: int, reps: int) -> dict:
    """{scheme: (current, previous or None, official)}: the three paths of one data set, as callables."""
    return {
        "image": (lambda: image_level_bootstrap(y, s, np.random.default_rng(seed), reps, 100)[0],
                  lambda: previous_image_level(y, s, seed, reps),
                  lambda: official_image_level(y, s, seed, reps)),
        # Unchanged: the previous path is the current one.
        "patient": (lambda: patient_level_bootstrap(y, s, patients, np.random.default_rng(seed), reps, 10, 100)[0],
                    None,
                    lambda: official_patient_level(y, s, patients, seed, reps)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=1000)
    parser.add_argument("--stacks", type=int, nargs="+", default=[8, 20, 253],
                        help="synthetic test-set sizes, in stacks of 192-384 frames")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds of the vectorised paths (median)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--no-official", action="store_true", help="skip the (slow) scikit-learn loop")
    args = parser.parse_args()
    reps = args.repetitions

    print(f"{'data set':>34} {'scheme':>7} {'official':>9} {'previous':>9} {'current':>9} {'prev/cur':>9} "
          f"{'off/cur':>8} {'= previous':>10} {'max |diff| vs official':>23} {'peak MB prev/cur':>16}")
    for stacks in args.stacks:
        y, s, patients = synthetic_arrays(stacks, seed=stacks)
        label = f"{stacks} stacks, {len(y)} frames ({int(y.sum())} neo)"
        for scheme, (current, previous, official) in bootstrap_schemes(y, s, patients, args.seed, reps).items():
            current_seconds, current_result = timed(current, args.rounds)
            current_peak = peak_megabytes(current)
            if previous is None:
                previous_seconds, previous_peak, same = current_seconds, current_peak, "(same code)"
            else:
                previous_seconds, previous_result = timed(previous, args.rounds)
                previous_peak = peak_megabytes(previous)
                same = all(np.array_equal(current_result[k], previous_result[k]) for k in KEYS)
                if not same:
                    raise SystemExit(f"MISMATCH with the previous path on {label}, {scheme}")
                same = "yes"
            if args.no_official:
                official_text, ratio_text, diff_text = "-", "-", "-"
            else:
                official_seconds, official_result = timed(official, 1)
                diffs = [np.abs(current_result[key] - official_result[:, column]).max()
                         for column, key in enumerate(KEYS)]
                if diffs[0] > 1e-12 or diffs[1] > 1e-12 or diffs[2] != 0:
                    raise SystemExit(f"MISMATCH with the official loop on {label}, {scheme}: {diffs}")
                official_text = f"{official_seconds:.3f}s"
                ratio_text = f"{official_seconds / current_seconds:.0f}x"
                diff_text = "/".join(f"{d:.0e}" for d in diffs)
            print(f"{label:>34} {scheme:>7} {official_text:>9} {previous_seconds:>8.4f}s {current_seconds:>8.4f}s "
                  f"{previous_seconds / current_seconds:>8.1f}x {ratio_text:>8} {same:>10} {diff_text:>23} "
                  f"{previous_peak:>7.1f}/{current_peak:<8.1f}")
    print(f"\n{reps} repetitions, the same draws for all three; max |diff| is AUROC/AUPRC/PPV@90.")


if __name__ == "__main__":
    main()
