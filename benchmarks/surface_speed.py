"""3D surface metrics side by side with the peers, in one run: HD95 + NSD at 2 mm + ASSD of one
label (an organ with lesions) on 512×512×300 voxels of 0.98×0.98×3 mm, each method in its own
process (its peak memory measured over the two masks it loads), then five labels.

- ours, surfels: ONE call of evaluation.metrics.surface.surface_distances(boundary="surfels"),
  the three metrics read off it; the same numbers as DeepMind's surface-distance;
- ours, border voxels: one call of surface_distances (boundary="voxels"); the same numbers as
  MONAI (HD95 max, NSD, ASSD pooled: float32 there) and medpy (hd95 pooled, assd pooled);
- DeepMind surface-distance 0.1: compute_surface_distances and its three metric functions;
- MONAI 1.6.1 (benchmarks/requirements-monai.txt; skipped when absent): compute_hausdorff_distance,
  compute_surface_dice and compute_average_surface_distance, one call each, as organizers use it;
- medpy 0.5.2: hd95 and assd (it has no NSD), whole-volume distance transforms (--no-medpy to skip:
  it needs about 3 GiB);
- five labels: label_surface_distances (one pass for the boxes, then one crop per label) against
  a loop of surface_distances over the five labels' full-volume masks (five passes).

    .venv/bin/python -m benchmarks.surface_speed [--repeats 3] [--no-medpy]

Prints, per method, the best of the repeated times, the peak memory over the two masks (RSS high
water mark minus the RSS once the masks are loaded), the three numbers, and the ratios to ours.
The machine is shared and noisy: read the ratios of one run, and run it a few times. Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SHAPE = (512, 512, 300)
SPACING = (0.98, 0.98, 3.0)
TOLERANCE = 2.0  # mm
ROOT = Path(__file__).resolve().parent.parent


# ---- the data ---------------------------------------------------------------------------------


def _ellipsoid(mask: np.ndarray, centre, radii, value=True, noise=None) -> None:
    """Sets an ellipsoid (radii in voxels) in `mask`, computed in its own box only; `noise` (a
    generator) wobbles its surface by a smooth random field of a few voxels."""
    from scipy import ndimage

    low = [max(0, int(c - r) - 4) for c, r in zip(centre, radii, strict=True)]
    high = [min(n, int(c + r) + 5) for c, r, n in zip(centre, radii, mask.shape, strict=True)]
    grids = np.ogrid[tuple(slice(lo, hi) for lo, hi in zip(low, high, strict=True))]
    level = sum(((g - c) / r) ** 2 for g, c, r in zip(grids, centre, radii, strict=True))
    if noise is not None:
        field = ndimage.gaussian_filter(noise.standard_normal(level.shape).astype(np.float32), sigma=(6, 6, 2))
        level = level + field * (0.05 / field.std())  # a surface off by 1-3 voxels
    box = tuple(slice(lo, hi) for lo, hi in zip(low, high, strict=True))
    mask[box][level <= 1] = value


def organ_with_lesions(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(prediction, truth): a liver-sized organ with lesions bulging out of it; the prediction's
    surface wobbles by a few voxels, misses a lesion and adds a stray blob."""
    rng = np.random.default_rng(seed)
    truth = np.zeros(SHAPE, dtype=bool)
    prediction = np.zeros(SHAPE, dtype=bool)
    organ = ((256, 230, 150), (110, 90, 45))
    _ellipsoid(truth, *organ)
    _ellipsoid(prediction, *organ, noise=rng)
    lesions = [((150, 200, 140), 9), ((300, 140, 120), 6), ((360, 250, 170), 12), ((230, 320, 160), 5),
               ((200, 150, 180), 7)]
    for k, (centre, radius) in enumerate(lesions):
        radii = (radius, radius, radius * SPACING[0] / SPACING[2])
        _ellipsoid(truth, centre, radii)
        if k != 2:  # the prediction misses one lesion
            _ellipsoid(prediction, centre, radii, noise=rng)
    _ellipsoid(prediction, (420, 420, 60), (8, 8, 3))  # a stray blob far from the organ
    return prediction, truth


def five_labels(seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(prediction, truth) uint8 label maps of five structures of head-and-neck sizes."""
    rng = np.random.default_rng(seed)
    truth = np.zeros(SHAPE, dtype=np.uint8)
    prediction = np.zeros(SHAPE, dtype=np.uint8)
    structures = [((200, 256, 150), (40, 35, 12)), ((320, 256, 150), (40, 35, 12)), ((256, 200, 100), (25, 25, 30)),
                  ((256, 330, 200), (15, 20, 8)), ((256, 256, 60), (60, 50, 10))]
    for label, (centre, radii) in enumerate(structures, start=1):
        _ellipsoid(truth, centre, radii, value=label)
        _ellipsoid(prediction, centre, radii, value=label, noise=rng)
    return prediction, truth


# ---- the methods, each run in a child process -------------------------------------------------


def ours(prediction, truth, boundary):
    from evaluation.metrics.surface import surface_distances

    distances = surface_distances(prediction, truth, SPACING, boundary=boundary)  # the one call
    values = {"hd95": distances.hausdorff_distance(95), "nsd": distances.normalized_surface_dice(TOLERANCE),
              "assd": distances.average_surface_distance("mean" if boundary == "surfels" else "pooled")}
    if boundary == "voxels":
        values["hd95_pooled"] = distances.hausdorff_distance(95, "pooled")
    return values


def deepmind(prediction, truth):
    import surface_distance

    np.Inf = np.inf  # surface-distance 0.1 still says np.Inf, gone in NumPy 2
    distances = surface_distance.compute_surface_distances(truth, prediction, SPACING)
    return {"hd95": float(surface_distance.compute_robust_hausdorff(distances, 95)),
            "nsd": float(surface_distance.compute_surface_dice_at_tolerance(distances, TOLERANCE)),
            "assd": float(np.mean(surface_distance.compute_average_surface_distance(distances)))}


def monai(prediction, truth):
    import torch
    from monai.metrics import compute_average_surface_distance, compute_hausdorff_distance, compute_surface_dice

    p, t = torch.from_numpy(prediction[None, None]), torch.from_numpy(truth[None, None])
    spacing = list(SPACING)
    return {"hd95": compute_hausdorff_distance(p, t, include_background=True, percentile=95, spacing=spacing).item(),
            "nsd": compute_surface_dice(p, t, [TOLERANCE], include_background=True, spacing=spacing).item(),
            "assd": compute_average_surface_distance(p, t, include_background=True, symmetric=True,
                                                     spacing=spacing).item()}


def medpy(prediction, truth):
    from medpy.metric.binary import assd, hd95

    return {"hd95_pooled": float(hd95(prediction, truth, SPACING)), "assd": float(assd(prediction, truth, SPACING))}


def ours_labels(prediction, truth):
    from evaluation.metrics.surface import label_surface_distances

    per_label = label_surface_distances(prediction, truth, [1, 2, 3, 4, 5], SPACING)
    return {str(label): [d.hausdorff_distance(95), d.normalized_surface_dice(TOLERANCE), d.average_surface_distance()]
            for label, d in per_label.items()}


def ours_label_loop(prediction, truth):
    from evaluation.metrics.surface import surface_distances

    values = {}
    for label in (1, 2, 3, 4, 5):
        d = surface_distances(prediction == label, truth == label, SPACING)
        values[str(label)] = [d.hausdorff_distance(95), d.normalized_surface_dice(TOLERANCE),
                              d.average_surface_distance()]
    return values


def label_counts_only(prediction, truth):
    from evaluation.metrics.overlap import label_overlap_counts

    counts = label_overlap_counts(prediction, truth, [1, 2, 3, 4, 5])
    return {"dice": counts.dice().tolist()}


METHODS = {
    "ours (surfels)": (lambda p, t: ours(p, t, "surfels"), "one"),
    "ours (voxels)": (lambda p, t: ours(p, t, "voxels"), "one"),
    "DeepMind surface-distance": (deepmind, "one"),
    "MONAI": (monai, "one"),
    "medpy": (medpy, "one"),
    "ours, 5 labels (label_surface_distances)": (ours_labels, "five"),
    "ours, 5 labels (a loop over full masks)": (ours_label_loop, "five"),
    "ours, label_overlap_counts alone": (label_counts_only, "five"),
}


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()


def child(name: str, folder: Path, repeats: int) -> None:
    function, data = METHODS[name]
    if name == "MONAI":
        import monai  # its import is not the method's memory
        del monai
    if name == "medpy":
        import medpy.metric.binary
        del medpy
    prediction = np.load(folder / f"{data}_prediction.npy")
    truth = np.load(folder / f"{data}_truth.npy")
    baseline = resident_bytes()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        values = function(prediction, truth)
        seconds.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - baseline
    print(json.dumps({"seconds": seconds, "values": values, "peak_over_masks": peak}))


def run_child(name: str, folder: Path, repeats: int) -> dict | None:
    process = subprocess.run([sys.executable, "-m", "benchmarks.surface_speed", "--child", name, "--data",
                              str(folder), "--repeats", str(repeats)], cwd=ROOT, capture_output=True, text=True)
    if process.returncode != 0:
        last = (process.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {name}: not run ({last})")
        return None
    return json.loads(process.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each of ours (peers: --peer-repeats)")
    parser.add_argument("--peer-repeats", type=int, default=1)
    parser.add_argument("--no-medpy", action="store_true")
    parser.add_argument("--child")
    parser.add_argument("--data", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.data, args.repeats)
        return

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for data, make in (("one", organ_with_lesions), ("five", five_labels)):
            prediction, truth = make()
            np.save(folder / f"{data}_prediction.npy", prediction)
            np.save(folder / f"{data}_truth.npy", truth)
        masks_mib = 2 * np.prod(SHAPE) / 2 ** 20
        print(f"{SHAPE[0]}x{SHAPE[1]}x{SHAPE[2]} voxels of {SPACING} mm; the two boolean masks: {masks_mib:.0f} MiB")
        results = {}
        for method in METHODS:
            if method == "medpy" and args.no_medpy:
                continue
            repeats = args.repeats if method.startswith("ours") else args.peer_repeats
            results[method] = run_child(method, folder, repeats)

    def line(method, reference):
        result = results.get(method)
        if result is None:
            return
        best = min(result["seconds"])
        ratio = "" if reference is None else f"  {best / min(results[reference]['seconds']):6.1f}x {reference}"
        values = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in result["values"].items()}
        print(f"  {method:42s} {best:8.3f} s  peak {result['peak_over_masks'] / 2 ** 20:7.0f} MiB{ratio}  {values}")

    print("one label, HD95 + NSD at 2 mm + ASSD:")
    line("ours (surfels)", None)
    line("DeepMind surface-distance", "ours (surfels)")
    line("ours (voxels)", None)
    line("MONAI", "ours (voxels)")
    line("medpy", "ours (voxels)")
    print("five labels, the same three metrics per label (border voxels):")
    line("ours, label_overlap_counts alone", None)
    line("ours, 5 labels (label_surface_distances)", None)
    line("ours, 5 labels (a loop over full masks)", "ours, 5 labels (label_surface_distances)")
    _check_same_numbers(results)


def _check_same_numbers(results: dict) -> None:
    """The numbers of each pair must agree: exactly with DeepMind (NSD: its d <= τ against our tie
    rule, equal here), to float32 rounding with MONAI, to float64 rounding with medpy."""
    def close(a, b, rtol):
        return abs(a - b) <= rtol * max(abs(a), abs(b), 1e-12)

    pairs = [("ours (surfels)", "DeepMind surface-distance", ("hd95", "nsd", "assd"), 1e-12),
             ("ours (voxels)", "MONAI", ("hd95", "nsd", "assd"), 1e-6),
             ("ours (voxels)", "medpy", ("hd95_pooled", "assd"), 1e-12)]
    for ours_name, peer, keys, rtol in pairs:
        if results.get(ours_name) and results.get(peer):
            differences = {k: (results[ours_name]["values"][k], results[peer]["values"][k]) for k in keys
                           if not close(results[ours_name]["values"][k], results[peer]["values"][k], rtol)}
            print(f"same numbers as {peer}: {'yes' if not differences else differences}")
    crops = results.get("ours, 5 labels (label_surface_distances)")
    passes = results.get("ours, 5 labels (a loop over full masks)")
    if crops and passes:
        same = "yes" if crops["values"] == passes["values"] else "NO"
        print(f"five labels, crops and full passes give the same numbers: {same}")


if __name__ == "__main__":
    main()
