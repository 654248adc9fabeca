"""HECKTOR 2025 Task 1, per patient: our scoring (one counting pass + cc3d inside the GTVn box +
sparse IoU) against the usual way (SimpleITK's LabelOverlapMeasuresImageFilter for the Dice
counts, scipy.ndimage.label for the lesions, IoU of each true lesion with the predicted lesions it
touches, greedy matching), on the same in-memory masks, side by side; then an end-to-end run of
the command line on masks written to disk, sampling the resident memory of all its processes.

    .venv/bin/python -m benchmarks.hecktor2025_task1 [--cases 100] [--shape 300 512 512]
                                                     [--disk-cases 2 8] [--workers 2]

Per case the masks are generated in memory from the case number (realistic loads: a GTVp of
5-60 mL, 0-8 GTVn nodes of 0.2-8 mL, CT spacing ~1 x 1 x 2-3 mm; the prediction moves and resizes
each structure, misses some nodes and adds false ones). Results are checked equal on every case.
Not a timed test: run it, read the ratio and the peak memory.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from benchmarks.measure import run_evaluation
from evaluation.challenges.hecktor2025 import HecktorTask1
from evaluation.challenges.hecktor2025.segmentation import Task1Settings, score_patient
from evaluation.platform import synthetic
from evaluation.reading.images import Geometry

GTVP, GTVN = 1, 2


def blob(array: np.ndarray, label: int, center, radii, rng=None) -> None:
    """Write an ellipsoid (slightly lumpy if rng) of `label` into `array`, inside its box only."""
    lo = [max(0, int(np.floor(c - r)) - 1) for c, r in zip(center, radii, strict=True)]
    hi = [min(s, int(np.ceil(c + r)) + 2) for c, r, s in zip(center, radii, array.shape, strict=True)]
    grids = np.ogrid[tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))]
    distance = sum(((g - c) / r) ** 2 for g, c, r in zip(grids, center, radii, strict=True))
    if rng is not None:
        distance = distance + rng.normal(0, 0.08, distance.shape)
    region = array[tuple(slice(a, b) for a, b in zip(lo, hi, strict=True))]
    region[(distance <= 1.0) & (region == 0)] = label


def make_case(number: int, shape) -> tuple[np.ndarray, np.ndarray, Geometry]:
    rng = np.random.default_rng(10_000 + number)
    spacing = (float(rng.uniform(0.9, 1.2)),) * 2 + (float(rng.choice([2.0, 3.0])),)  # x, y, z (mm)
    voxel = spacing[0] * spacing[1] * spacing[2]
    truth = np.zeros(shape, dtype=np.uint8)
    prediction = np.zeros(shape, dtype=np.uint8)
    z, y, x = shape

    def radii_for(volume_ml):  # ellipsoid semi-axes in voxels for a volume in mL
        r_mm = (3 * volume_ml * 1000 / (4 * np.pi)) ** (1 / 3)
        return np.array([r_mm / spacing[2], r_mm / spacing[1], r_mm / spacing[0]]) * rng.uniform(0.8, 1.25, 3)

    if rng.random() < 0.95:
        center = np.array([z * 0.5, y * 0.45, x * 0.5]) + rng.normal(0, [z * 0.05, y * 0.03, x * 0.03])
        radii = radii_for(rng.uniform(5, 60))
        blob(truth, GTVP, center, radii, rng)
        blob(prediction, GTVP, center + rng.normal(0, 1.0, 3), radii * rng.uniform(0.85, 1.15, 3), rng)
    for _ in range(int(rng.integers(0, 9))):
        side = rng.choice([0.3, 0.7])
        center = np.array([rng.uniform(0.35, 0.65) * z, rng.uniform(0.35, 0.6) * y, rng.normal(side, 0.04) * x])
        radii = radii_for(rng.uniform(0.2, 8))
        blob(truth, GTVN, center, radii, rng)
        if rng.random() < 0.75:
            blob(prediction, GTVN, center + rng.normal(0, 0.8, 3), radii * rng.uniform(0.8, 1.2, 3), rng)
    for _ in range(int(rng.integers(0, 4))):
        center = np.array([rng.uniform(0.3, 0.7) * z, rng.uniform(0.3, 0.7) * y, rng.uniform(0.2, 0.8) * x])
        blob(prediction, GTVN, center, radii_for(rng.uniform(0.1, 2)), rng)
    geometry = Geometry(tuple(reversed(shape)), spacing, (-250.0, -250.0, -600.0), (1, 0, 0, 0, 1, 0, 0, 0, 1))
    assert abs(geometry.voxel_volume - voxel) < 1e-9
    return truth, prediction, geometry


def reference_case(truth_image, prediction_image, truth: np.ndarray, prediction: np.ndarray):
    """The usual way: SimpleITK overlap counts per label, scipy 26-connected labelling, IoU of each
    true lesion with the predicted lesions it touches (one full-volume mask per true lesion),
    greedy matching by descending IoU."""
    import SimpleITK as sitk

    from benchmarks.peers.hecktor2025_task1 import lesion_counts  # the same greedy IoU matching

    overlap = sitk.LabelOverlapMeasuresImageFilter()
    overlap.Execute(truth_image, prediction_image)
    dice = {label: (overlap.GetDiceCoefficient(label) if (truth == label).any() or (prediction == label).any()
                    else None) for label in (GTVP, GTVN)}
    return dice, tuple(lesion_counts(truth, prediction))


def our_dice(counts):
    intersection, predicted, true = counts
    return None if predicted + true == 0 else 2 * intersection / (predicted + true)


def timed(function):
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def per_case_benchmark(cases: int, shape, reference_every: int) -> None:
    import SimpleITK as sitk

    settings = Task1Settings()
    ours_times, reference_times, ratios, loads = [], [], [], []
    peak_ours = 0
    for number in range(cases):
        truth, prediction, geometry = make_case(number, shape)
        tracemalloc.start()
        ours_seconds, result = timed(functools.partial(score_patient, truth, prediction, geometry, settings))
        peak_ours = max(peak_ours, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        ours_times.append(ours_seconds)
        loads.append((result.gtvp[2] * geometry.voxel_volume / 1000, result.gtvn[2] * geometry.voxel_volume / 1000,
                      result.lesions[0] + result.lesions[2], result.lesions[0] + result.lesions[1]))
        if number % reference_every == 0:
            truth_image, prediction_image = sitk.GetImageFromArray(truth), sitk.GetImageFromArray(prediction)
            reference_seconds, (dice, lesions) = timed(
                functools.partial(reference_case, truth_image, prediction_image, truth, prediction))
            reference_times.append(reference_seconds)
            ratios.append(reference_seconds / ours_seconds)
            ours = {GTVP: our_dice(result.gtvp), GTVN: our_dice(result.gtvn)}
            for label in (GTVP, GTVN):
                if (ours[label] is None) != (dice[label] is None) or (
                        ours[label] is not None and abs(ours[label] - dice[label]) > 1e-6):
                    raise SystemExit(f"MISMATCH case {number}, label {label}: ours {ours[label]}, "
                                     f"SimpleITK {dice[label]}")
            if lesions != result.lesions:
                raise SystemExit(f"MISMATCH case {number}, lesions: ours {result.lesions}, reference {lesions}")
        print(f"case {number:3d}: ours {ours_seconds * 1000:7.1f} ms"
              + (f", reference {reference_times[-1]:6.2f} s, ratio {ratios[-1]:5.1f}x" if number % reference_every == 0
                 else "")
              + f"  (GTVp {loads[-1][0]:5.1f} mL, GTVn {loads[-1][1]:5.1f} mL, {loads[-1][2]} true / {loads[-1][3]} "
                f"predicted nodes)", flush=True)
    print(f"\n{cases} cases of {shape[2]}x{shape[1]}x{shape[0]} voxels (x y z); reference on {len(reference_times)}")
    print(f"ours per case: median {statistics.median(ours_times) * 1000:.0f} ms (min {min(ours_times) * 1000:.0f}, "
          f"max {max(ours_times) * 1000:.0f}); peak allocation during scoring {peak_ours / 2**20:.0f} MB "
          f"(both masks, {2 * np.prod(shape) / 2**20:.0f} MB, are held by the caller)")
    print(f"reference per case: median {statistics.median(reference_times):.2f} s; ratio per case median "
          f"{statistics.median(ratios):.1f}x, min {min(ratios):.1f}x; every compared case equal (Dice within 1e-6, "
          f"TP/FP/FN identical)")


# ---- end to end on disk ---------------------------------------------------------------------


def write_dataset(root: Path, cases: int, shape) -> None:
    import SimpleITK as sitk

    input_dir, ground_truth = root / "input", root / "ground-truth"
    ground_truth.mkdir(parents=True)
    jobs = []
    for number in range(cases):
        truth, prediction, geometry = make_case(number, shape)
        patient = f"BENCH-{number:03d}"
        for array, path in ((truth, ground_truth / f"{patient}.nii.gz"),
                            (prediction, input_dir / f"pk-{number:03d}" / "output" / "images" /
                             "tumor-lymph-node-segmentation" / "mask.mha")):
            image = sitk.GetImageFromArray(array)
            image.SetSpacing(geometry.spacing)
            image.SetOrigin(geometry.origin)
            path.parent.mkdir(parents=True, exist_ok=True)
            sitk.WriteImage(image, str(path), useCompression=True)
        output = {"pk": number, "file": None, "value": None, "image": {"pk": f"i{number}", "name": "mask.mha"},
                  "socket": synthetic.socket("tumor-lymph-node-segmentation", "Segmentation", "Image",
                                             "images/tumor-lymph-node-segmentation")}
        jobs.append(synthetic.job(f"pk-{number:03d}", [synthetic.image_input("ct-image", f"{patient}__CT.nii.gz",
                                                                             "images/ct")], [output]))
    synthetic.write_predictions(input_dir, jobs)


def end_to_end(cases: int, shape, workers: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        started = time.perf_counter()
        write_dataset(root, cases, shape)
        written = time.perf_counter() - started
        run = run_evaluation(HecktorTask1.name, root / "input", root / "ground-truth", root / "out", workers)
        metrics = run.metrics["aggregates"]
        print(f"end to end, {cases} on-disk cases (written in {written:.0f} s), {workers} workers: {run.seconds:.1f} s "
              f"({run.seconds / cases:.2f} s per case, reading included); peak RSS of all evaluation processes "
              f"{run.peak_rss_bytes / 2**30:.2f} GiB sampled every 10 ms (sum of each process's own peak, an upper "
              f"bound: {run.high_water_bytes / 2**30:.2f} GiB over {len(run.high_water)} processes); "
              f"GTVp mean Dice {metrics['gtvp_dsc_mean']:.4f}, GTVn TP/FP/FN {metrics['gtvn_tp']}/"
              f"{metrics['gtvn_fp']}/{metrics['gtvn_fn']}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100, help="in-memory cases timed side by side (issue: 100)")
    parser.add_argument("--shape", type=int, nargs=3, default=[300, 512, 512], help="z y x voxels (issue: 300 512 512)")
    parser.add_argument("--reference-every", type=int, default=1, help="run the reference on every k-th case")
    parser.add_argument("--disk-cases", type=int, nargs="*", default=[2, 8],
                        help="end-to-end runs on this many on-disk cases each (memory must not grow with it)")
    parser.add_argument("--workers", type=int, default=2, help="end-to-end worker processes (grand-challenge: 2 CPUs)")
    args = parser.parse_args()
    shape = tuple(args.shape)
    if args.cases:
        per_case_benchmark(args.cases, shape, max(1, args.reference_every))
    for cases in args.disk_cases:
        end_to_end(cases, shape, args.workers)


if __name__ == "__main__":
    main()
