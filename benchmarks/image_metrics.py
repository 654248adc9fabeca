"""SSIM within a mask and the std of the log Jacobian determinant on a CT-sized volume, ours against
the peers organizers use, side by side in one run:

- SSIM: evaluation.metrics.image_similarity.structural_similarity against scikit-image's
  structural_similarity(full=True) averaged over the mask (SynthRAD's masked SSIM);
- SDlogJ: evaluation.metrics.registration.sd_log_jacobian_determinant against SimpleITK's
  DisplacementFieldJacobianDeterminant, then numpy's std of the clipped log over the mask.

    .venv/bin/python -m benchmarks.image_metrics [--shape 160 256 256]

Each computation runs in a fresh process; its peak resident memory above the inputs is VmHWM after
resetting it once the inputs are made (Linux, /proc/self/clear_refs). Prints seconds, the ratios,
peak memory and both numbers (they must agree to 1e-12).
Not a timed test: run it, read the ratios.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

CASES = {"ssim": ("ours", "scikit-image"), "sdlogj": ("ours", "SimpleITK")}


def inputs(shape):
    rng = np.random.default_rng(0)
    truth = rng.integers(-1024, 2000, shape).astype(np.int16)
    prediction = (truth + rng.integers(-100, 100, shape)).astype(np.int16)
    mask = np.zeros(shape, dtype=bool)
    mask[tuple(slice(n // 8, n - n // 8) for n in shape)] = True
    field = (rng.normal(size=(3, *shape)) * 0.3).astype(np.float32)
    return prediction, truth, mask, field


def resident(field: str) -> int:
    """This process's resident memory now (VmRSS) or at its peak (VmHWM), in bytes."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(f"{field}:"))


def compute(case: str, side: str, shape) -> dict:
    prediction, truth, mask, field = inputs(shape)
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # the peak (VmHWM) restarts from the memory now held: the inputs
    before = resident("VmRSS")
    started = time.perf_counter()
    if (case, side) == ("ssim", "ours"):
        from evaluation.metrics.image_similarity import structural_similarity

        value = structural_similarity(prediction, truth, mask, data_range=4095)
    elif case == "ssim":
        from skimage.metrics import structural_similarity
        from skimage.util import crop

        _, ssim_map = structural_similarity(prediction.astype(np.float64), truth.astype(np.float64),
                                            data_range=4095, full=True)
        value = crop(ssim_map, 3)[crop(mask, 3)].mean()
    elif side == "ours":
        from evaluation.metrics.registration import sd_log_jacobian_determinant

        value = sd_log_jacobian_determinant(field, mask)
    else:
        import SimpleITK as sitk

        image = sitk.GetImageFromArray(np.moveaxis(field[::-1], 0, -1).astype(np.float64), isVector=True)
        determinants = sitk.GetArrayFromImage(sitk.DisplacementFieldJacobianDeterminant(image))[1:-1, 1:-1, 1:-1]
        value = np.log(np.clip(determinants[mask[1:-1, 1:-1, 1:-1]], 1e-9, 1e9)).std()
    seconds = time.perf_counter() - started
    peak = resident("VmHWM") - before
    return {"value": float(value), "seconds": seconds, "peak_bytes": peak}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", type=int, nargs=3, default=(160, 256, 256))
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)  # case side: run in this process
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(compute(*args.one, tuple(args.shape))))
        return 0
    print(f"volume {tuple(args.shape)}, int16 images, float32 field, a mask of the central box")
    for case, sides in CASES.items():
        runs = {}
        for side in sides:
            command = [sys.executable, "-m", "benchmarks.image_metrics", "--shape", *map(str, args.shape),
                       "--one", case, side]
            runs[side] = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        ours, peer = runs[sides[0]], runs[sides[1]]
        speed, memory = peer["seconds"] / ours["seconds"], peer["peak_bytes"] / max(ours["peak_bytes"], 1)
        print(f"{case}: ours {ours['seconds']:.2f} s, {ours['peak_bytes'] / 2**20:.0f} MiB; {sides[1]} "
              f"{peer['seconds']:.2f} s, {peer['peak_bytes'] / 2**20:.0f} MiB; {speed:.1f}x faster, {memory:.1f}x "
              f"less memory; values {ours['value']!r} and {peer['value']!r} "
              f"(difference {abs(ours['value'] - peer['value']):.1e})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
