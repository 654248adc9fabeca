"""RARE26 bootstrap: our vectorised resampling against the official way, one scikit-learn call
per metric and repetition, on the same draws, side by side in one run.

    .venv/bin/python -m benchmarks.rare26_bootstrap [--repetitions 1000] [--stacks 8 20]

Prints per data set and scheme: the seconds of each (median of --rounds), the ratio, the largest
difference between the two (PPV@90 must be identical, AUROC/AUPRC within 1e-12), and the peak
memory the vectorised run allocated (tracemalloc). Not a timed test: run it, read the ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from sklearn.metrics import average_precision_score, precision_recall_curve, roc_auc_score

from evaluation.challenges.rare26 import Rare26, image_level_bootstrap, patient_level_bootstrap


def synthetic_arrays(stacks: int, seed: int):
    """Labels, scores and patients of a synthetic test set, read back from the files the
    generator writes (the same data the evaluation would see)."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        Rare26.synthesize(root, seed=seed, cases=stacks)
        metadata = json.loads(next((root / "ground-truth").glob("*.json")).read_text())
        jobs = json.loads((root / "input" / "predictions.json").read_text())
        pk = {job["inputs"][0]["image"]["name"]: job["pk"] for job in jobs}
        y, s, patients = [], [], []
        for stack in sorted(metadata):
            y += [frame["class"] != "ndbe" for frame in metadata[stack]]
            patients += [frame["patient_id"] for frame in metadata[stack]]
            s += json.loads((root / "input" / pk[stack] / "output" /
                             "stacked-neoplastic-lesion-likelihoods.json").read_text())
    return np.array(y, dtype=int), np.array(s), np.array(patients)


def official_metrics(y, s):
    precision, recall, _ = precision_recall_curve(y, s)
    return roc_auc_score(y, s), average_precision_score(y, s), np.interp(0.9, recall[::-1], precision[::-1])


def official_image_level(y, s, seed, repetitions, ratio=100):
    rng = np.random.default_rng(seed)
    neo, ndbe = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    draws = rng.integers(0, len(neo), size=(repetitions, max(1, int(len(ndbe) / ratio))))
    return np.array([official_metrics(y[np.r_[ndbe, neo[d]]], s[np.r_[ndbe, neo[d]]]) for d in draws])


def official_patient_level(y, s, patients, seed, repetitions, sample_size=10, ratio=100):
    rng = np.random.default_rng(seed)
    names = sorted(set(patients))
    images_of = {p: np.flatnonzero(patients == p) for p in names}
    neo = [p for p in names if y[images_of[p]].any()]
    ndbe = [p for p in names if not y[images_of[p]].any()]
    neo_draws = rng.integers(0, len(neo), size=(repetitions, sample_size))
    ndbe_draws = rng.integers(0, len(ndbe), size=(repetitions, sample_size * ratio))
    rows = []
    for r in range(repetitions):
        index = np.concatenate([images_of[neo[i]] for i in neo_draws[r]] + [images_of[ndbe[i]] for i in ndbe_draws[r]])
        rows.append(official_metrics(y[index], s[index]))
    return np.array(rows)


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
