"""CSV 2026 speed: a synthetic test set (default 300 cases at 512², NNNN_pred.h5, the
predictions-file phase) evaluated end to end by the command line with 2 workers, then the NSD of
the same 1,200 view-structure pairs three ways, side by side in one run:

- ours (evaluation.metrics.surface, border pixels: cropped, disk dilation, exact tie rule);
- the same definition done plainly (scipy's Euclidean distance transform of the whole image,
  `d <= τ`): the numbers must be identical;
- DeepMind's surface-distance (compute_surface_distances + compute_surface_dice_at_tolerance):
  another definition (surfels at pixel corners), so its numbers differ; the ratio is for speed
  only. surface-distance 0.1 crashes on empty masks under NumPy 2: pairs with an empty mask are
  left out of every per-pair timing.

    .venv/bin/python -m benchmarks.csv2026_speed [--cases 300] [--size 512] [--workers 2]

Prints the end-to-end seconds and peak memory (RSS summed over the process tree, sampled every
10 ms), the per-pair milliseconds and ratios, and checks that metrics.json holds the means of
the per-pair values computed here. Not a timed test: run it, read the numbers.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np
from scipy import ndimage

from benchmarks.measure import run_evaluation
from evaluation.challenges.csv2026.examples import write_dataset
from evaluation.metrics.surface import normalized_surface_dice

PAIRS = [(v, s) for v in ("long", "trans") for s in ("vessel", "plaque")]
CROSS = ndimage.generate_binary_structure(2, 1)


def decode(array: np.ndarray) -> dict[str, np.ndarray]:
    if set(np.unique(array).tolist()) <= {0, 128, 255}:
        return {"vessel": array == 255, "plaque": array == 128}
    return {"vessel": array == 2, "plaque": array == 1}  # the generator's indices: 1 plaque, 2 vessel


def masks_of_case(root: Path, case_id: str):
    with h5py.File(root / "ground-truth" / f"{case_id}_label.h5", "r") as f:
        truth = {view: decode(f[f"{view}_mask"][:]) for view in ("long", "trans")}
    (path,) = (root / "input").rglob(f"{case_id}_pred.h5")
    with h5py.File(path, "r") as f:
        prediction = {view: decode(f[f"{view}_mask"][:] if f"{view}_mask" in f else f[f"pred_{view}"][:])
                      for view in ("long", "trans")}
    return prediction, truth


def plain_nsd(prediction: np.ndarray, truth: np.ndarray, tolerance: float) -> float:
    """The same definition without any shortcut: whole-image EDT, d <= τ."""
    if not prediction.any() and not truth.any():
        return 1.0
    if not prediction.any() or not truth.any():
        return 0.0
    bp = prediction & ~ndimage.binary_erosion(prediction, structure=CROSS, border_value=0)
    bt = truth & ~ndimage.binary_erosion(truth, structure=CROSS, border_value=0)
    to_truth = ndimage.distance_transform_edt(~bt)[bp]
    to_prediction = ndimage.distance_transform_edt(~bp)[bt]
    return float(((to_truth <= tolerance).sum() + (to_prediction <= tolerance).sum()) / (bp.sum() + bt.sum()))


def deepmind_nsd(prediction: np.ndarray, truth: np.ndarray, tolerance: float) -> float:
    from surface_distance import compute_surface_dice_at_tolerance, compute_surface_distances

    distances = compute_surface_distances(truth, prediction, (1.0, 1.0))
    return float(compute_surface_dice_at_tolerance(distances, tolerance))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    tolerance = 3.0

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        start = time.perf_counter()
        write_dataset(root, seed=args.seed, cases=args.cases, phase="file", shape=(args.size, args.size))
        print(f"wrote {args.cases} cases at {args.size}x{args.size} in {time.perf_counter() - start:.1f} s")

        run = run_evaluation("csv2026", root / "input", root / "ground-truth", root / "output", args.workers)
        seconds, peak, metrics = run.seconds, run.peak_rss_bytes, run.metrics
        print(f"end to end (python -m evaluation csv2026 --workers {args.workers}): {seconds:.2f} s, "
              f"peak RSS of the process tree {peak / 2**20:.0f} MiB")

        ours_s = plain_s = deepmind_s = 0.0
        per_pair = {pair: [] for pair in PAIRS}
        timed_pairs = skipped = 0
        largest_plain_difference, deepmind_differences = 0.0, []
        for number in range(args.cases):
            case_id = f"{number + 1:04d}"
            prediction, truth = masks_of_case(root, case_id)
            for view, structure in PAIRS:
                p, t = prediction[view][structure], truth[view][structure]
                value = normalized_surface_dice(p, t, tolerance, boundary="voxels")
                per_pair[view, structure].append(value)
                if not p.any() or not t.any():
                    skipped += 1
                    continue
                timed_pairs += 1
                t0 = time.perf_counter()
                normalized_surface_dice(p, t, tolerance, boundary="voxels")
                t1 = time.perf_counter()
                plain = plain_nsd(p, t, tolerance)
                t2 = time.perf_counter()
                deepmind = deepmind_nsd(p, t, tolerance)
                t3 = time.perf_counter()
                ours_s, plain_s, deepmind_s = ours_s + t1 - t0, plain_s + t2 - t1, deepmind_s + t3 - t2
                largest_plain_difference = max(largest_plain_difference, abs(plain - value))
                deepmind_differences.append(abs(deepmind - value))

        for view, structure in PAIRS:
            mean = math.fsum(per_pair[view, structure]) / args.cases
            reported = metrics["aggregates"][f"{view}_{structure}_nsd"]
            assert abs(mean - reported) <= 1e-15, (view, structure, mean, reported)
        assert largest_plain_difference == 0.0, largest_plain_difference

        n = timed_pairs
        print(f"NSD per pair ({n} non-empty pairs, {skipped} with an empty mask left out), one thread:")
        print(f"  ours                    {1e3 * ours_s / n:7.3f} ms")
        print(f"  plain whole-image EDT   {1e3 * plain_s / n:7.3f} ms   ({plain_s / ours_s:.1f}x ours; "
              f"identical values: largest difference {largest_plain_difference})")
        print(f"  DeepMind surface-dice   {1e3 * deepmind_s / n:7.3f} ms   ({deepmind_s / ours_s:.1f}x ours; other "
              f"definition: mean |difference| {np.mean(deepmind_differences):.4f}, "
              f"largest {np.max(deepmind_differences):.4f})")
        print(f"DeepMind's NSD alone on these pairs takes {deepmind_s:.2f} s: {deepmind_s / seconds:.1f}x our whole "
              f"end-to-end evaluation ({seconds:.2f} s, reading, validation, DSC, NSD, aggregates)")
        print("metrics.json NSD means equal the per-pair values computed here: yes")


if __name__ == "__main__":
    main()
