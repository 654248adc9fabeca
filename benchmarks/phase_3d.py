"""A whole 3D segmentation phase, side by side in one run: 100 cases of 512×512×300 label maps with
5 labels (compressed .mha, 0.98×0.98×3 mm voxels), Dice + HD95 + NSD at 2 mm per label.

- ours: `python -m evaluation` on a challenge that is only a declaration of the segmentation kind
  (evaluation/kinds/segmentation.py; written into a snapshot of evaluation/ for the run), 2 workers,
  under a 7 GiB data limit (RLIMIT_DATA), as the default evaluation machine;
- the read-only floor: the same files read and decoded (SimpleITK) by 2 processes, nothing else;
- MONAI 1.6 (/work/venv-bench or --monai-python; skipped when absent): a loop over the cases of
  compute_dice, compute_hausdorff_distance(percentile=95) and compute_surface_dice per label, as an
  organizer writes it, on --peer-cases cases (its time per case is scaled to all cases: the whole
  loop would take about an hour); its numbers are checked equal to ours (same variant: border
  voxels, the larger directed 95th percentile) to 1e-3 relative: MONAI works in float32, its
  percentile's position q·(n−1) included (torch.quantile), and on 3 mm slices two neighbouring
  distances can be half a millimetre apart, so its HD95 can move by 1e-4 relative (ours equals
  numpy's float64 percentile of scipy's distances, tests/test_surface*.py);
- medpy 0.5 (--medpy): dc and hd95 per label on --peer-cases cases, timed the same way (its hd95
  pools both directions, our "pooled" variant; compared too).

    .venv/bin/python -m benchmarks.phase_3d [--cases 100] [--peer-cases 5] [--data DIR] [--medpy] [--quick]

Prints wall and CPU seconds and peak memory of each side, the ratios ours / floor (target ≤ 3) and
peer / ours (target ≥ 10). --data keeps the generated files between runs (they take minutes to
make). The machine is shared and noisy: read the ratios of one run. Not a timed test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.measure import evaluation_snapshot, run_command

SHAPE = (300, 512, 512)  # numpy axis order (z, y, x)
SPACING = (3.0, 0.98, 0.98)  # mm, in the same order
LABELS = {1: "parotid_left", 2: "parotid_right", 3: "brainstem", 4: "larynx", 5: "mandible"}
TOLERANCE = 2.0  # mm
CHALLENGE = "bench3d"
SOCKET = "segmentation"
DATA_LIMIT = 7 << 30
ROOT = Path(__file__).resolve().parent.parent
MONAI_PYTHON = Path("/work/venv-bench/bin/python")


# ---- the data ---------------------------------------------------------------------------------


def case_pair(number: int, shape=SHAPE) -> tuple[np.ndarray, np.ndarray]:
    """(prediction, truth) of one case: five structures (benchmarks/surface_speed.py's), their
    surfaces wobbling by a few voxels with the case's own noise, in (z, y, x) order."""
    from benchmarks import surface_speed

    if shape == SHAPE:
        prediction, truth = surface_speed.five_labels(seed=1000 + number)
        return np.ascontiguousarray(prediction.transpose(2, 1, 0)), np.ascontiguousarray(truth.transpose(2, 1, 0))
    rng = np.random.default_rng(number)  # --quick: small volumes
    truth = np.zeros(shape, dtype=np.uint8)
    prediction = np.zeros(shape, dtype=np.uint8)
    for label in LABELS:
        centre = [n // 2 + int(rng.integers(-n // 5, n // 5)) for n in shape]
        radii = [max(2, n // 8) for n in shape]
        surface_speed._ellipsoid(truth, centre, radii, value=label)
        surface_speed._ellipsoid(prediction, centre, radii, value=label, noise=rng)
    return prediction, truth


def write_image(array: np.ndarray, path: Path) -> None:
    import SimpleITK as sitk

    image = sitk.GetImageFromArray(array)
    image.SetSpacing(tuple(float(s) for s in reversed(SPACING)))  # SimpleITK's (x, y, z)
    path.parent.mkdir(parents=True, exist_ok=True)
    sitk.WriteImage(image, str(path), useCompression=True)


def make_data(root: Path, cases: int, shape) -> None:
    """ground-truth/<case>.mha and input/ (predictions.json and one job folder per case), unless
    `root` holds them already for the same number of cases and shape."""
    from evaluation.platform import synthetic

    stamp = root / "made.json"
    wanted = {"cases": cases, "shape": list(shape)}
    if stamp.is_file() and json.loads(stamp.read_text()) == wanted:
        return
    rng = np.random.default_rng(0)
    jobs = []
    started = time.perf_counter()
    for number in range(cases):
        case_id = f"case-{number:03d}"
        prediction, truth = case_pair(number, shape)
        write_image(truth, root / "ground-truth" / f"{case_id}.mha")
        pk = synthetic.job_pk(rng)
        relative = f"images/{SOCKET}"
        write_image(prediction, root / "input" / pk / "output" / relative / f"{case_id}.mha")
        jobs.append(synthetic.job(pk, [synthetic.image_input("image", f"{case_id}.mha", "images/image")],
                                  [{"pk": 0, "file": None, "image": {"name": f"{case_id}.mha"}, "value": None,
                                    "interface": {"slug": SOCKET, "kind": "Segmentation", "super_kind": "Image",
                                                  "relative_path": relative}}]))
        if number % 10 == 9:
            print(f"  made {number + 1} of {cases} cases ({time.perf_counter() - started:.0f} s)", flush=True)
    synthetic.write_predictions(root / "input", jobs)
    stamp.write_text(json.dumps(wanted))


# ---- the sides ----------------------------------------------------------------------------------


# The benchmark's challenge: only a declaration (MONAI's variants: border voxels, the larger directed
# 95th percentile, NSD on border voxels; and medpy's pooled HD95, shown, not ranked).
DECLARATION = f'''from typing import ClassVar

from evaluation.kinds.segmentation import Dice, Hausdorff, NormalizedSurfaceDice, RankedMetric, Segmentation

RUNTIME_PACKAGES = ("numpy", "SimpleITK", "scipy")


class Bench3d(Segmentation):
    name = "{CHALLENGE}"
    title = "{CHALLENGE}: 5 labels, Dice + HD95 + NSD at {TOLERANCE:g} mm"
    labels: ClassVar[dict[int, str]] = {LABELS!r}
    label_metrics = (Dice(), Hausdorff(95, boundary="voxels", combine="max"),
                     NormalizedSurfaceDice(tolerance={TOLERANCE!r}, boundary="voxels"),
                     Hausdorff(95, boundary="voxels", combine="pooled", key="hd95_pooled"))  # medpy's, read off the
                                                                                           # same distances
    ranked_metrics = (RankedMetric("dice"), RankedMetric("hd95"), RankedMetric("nsd"))
'''


def write_declaration(snapshot: Path) -> None:
    """The benchmark's challenge: a folder holding only a declaration of the segmentation kind."""
    folder = snapshot / "evaluation" / "challenges" / CHALLENGE
    folder.mkdir()
    (folder / "__init__.py").write_text(DECLARATION)


def limited(command: list[str], data_bytes: int = DATA_LIMIT) -> list[str]:
    """`command` started under an RLIMIT_DATA of `data_bytes` (the evaluation machine's memory)."""
    code = ("import os, resource, sys; resource.setrlimit(resource.RLIMIT_DATA, (int(sys.argv[1]),) * 2); "
            "os.execvp(sys.argv[2], sys.argv[2:])")
    return [sys.executable, "-c", code, str(data_bytes), *command]


def read_only_floor(root: Path, workers: int) -> None:
    """Every ground-truth and prediction file read and decoded, nothing else, on `workers` processes."""
    from concurrent.futures import ProcessPoolExecutor

    files = sorted((root / "ground-truth").glob("*.mha")) + sorted((root / "input").glob("*/output/images/*/*.mha"))
    with ProcessPoolExecutor(workers) as pool:
        total = sum(pool.map(_decoded_bytes, files, chunksize=1))
    print(json.dumps({"files": len(files), "bytes": total}))


def _decoded_bytes(path: Path) -> int:
    import SimpleITK as sitk

    return int(sitk.GetArrayViewFromImage(sitk.ReadImage(str(path))).nbytes)


def peer_loop(root: Path, cases: int, peer: str) -> None:
    """MONAI's or medpy's functions in a loop over the first `cases` cases, per label: prints
    {case id: {label: {metric: value}}, "seconds": wall seconds of the loop}."""
    import SimpleITK as sitk

    case_ids = sorted(path.stem for path in (root / "ground-truth").glob("*.mha"))[:cases]
    jobs = json.loads((root / "input" / "predictions.json").read_text())
    predicted = {job["inputs"][0]["image"]["name"][:-4]: job["pk"] for job in jobs}
    results: dict = {}
    started = time.perf_counter()
    for case_id in case_ids:
        truth = sitk.GetArrayFromImage(sitk.ReadImage(str(root / "ground-truth" / f"{case_id}.mha")))
        prediction = sitk.GetArrayFromImage(sitk.ReadImage(
            str(root / "input" / predicted[case_id] / "output" / "images" / SOCKET / f"{case_id}.mha")))
        results[case_id] = {name: (_monai if peer == "monai" else _medpy)(prediction == label, truth == label)
                            for label, name in LABELS.items()}
    print(json.dumps({"cases": results, "seconds": time.perf_counter() - started}))


def _monai(prediction: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    import torch
    from monai.metrics import compute_dice, compute_hausdorff_distance, compute_surface_dice

    p, t = torch.from_numpy(prediction[None, None]), torch.from_numpy(truth[None, None])
    spacing = list(SPACING)
    return {"dice": compute_dice(p, t, include_background=True).item(),
            "hd95": compute_hausdorff_distance(p, t, include_background=True, percentile=95, spacing=spacing).item(),
            "nsd": compute_surface_dice(p, t, [TOLERANCE], include_background=True, spacing=spacing).item()}


def _medpy(prediction: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    from medpy.metric.binary import dc, hd95

    return {"dice": float(dc(prediction, truth)), "hd95_pooled": float(hd95(prediction, truth, SPACING))}


def differences(ours: dict, theirs: dict, metrics: dict[str, str], relative: float) -> list[str]:
    """The per-case values that differ beyond `relative` ({peer metric: our metric})."""
    found = []
    for case_id, labels in theirs.items():
        for label, values in labels.items():
            for peer_metric, our_metric in metrics.items():
                a, b = ours[case_id][label][our_metric], values[peer_metric]
                if not abs(a - b) <= relative * max(abs(a), abs(b), 1e-12):
                    found.append(f"{case_id} {label} {our_metric}: ours {a}, peer {b}")
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--peer-cases", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data", type=Path, help="keep the generated files here")
    parser.add_argument("--medpy", action="store_true", help="also time medpy's dc and hd95")
    parser.add_argument("--monai-python", type=Path, default=MONAI_PYTHON)
    parser.add_argument("--quick", action="store_true", help="8 small cases, to check that everything runs")
    parser.add_argument("--floor", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--peer", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.floor:
        return read_only_floor(args.floor, args.workers)
    if args.peer:
        return peer_loop(Path(args.peer[0]), int(args.peer[1]), args.peer[2])
    shape = (24, 96, 96) if args.quick else SHAPE
    cases = 8 if args.quick else args.cases
    with tempfile.TemporaryDirectory(prefix="phase3d-") as scratch:
        root = args.data or Path(scratch) / "data"
        print(f"Data: {cases} cases of {shape[2]}x{shape[1]}x{shape[0]} voxels, 5 labels, in {root}", flush=True)
        make_data(root, cases, shape)
        snapshot = Path(scratch) / "snapshot"
        env = evaluation_snapshot(snapshot)
        write_declaration(snapshot)
        env = {**env, "PYTHONPATH": f"{snapshot}{os.pathsep}{ROOT}"}
        floor = run_command(limited([sys.executable, "-m", "benchmarks.phase_3d", "--floor", str(root), "--workers",
                                     str(args.workers)]), cwd=snapshot, env=env)
        output = Path(scratch) / "out"
        ours = run_command(limited([sys.executable, "-m", "evaluation", CHALLENGE, "--ground-truth",
                                    str(root / "ground-truth"), "--input", str(root / "input"), "--output",
                                    str(output), "--workers", str(args.workers)]), cwd=snapshot, env=env)
        metrics = json.loads((output / "metrics.json").read_text())
        rows = [("read-only floor", floor), ("ours", ours)]
        print(f"{'side':<24}{'wall s':>10}{'CPU s':>10}{'peak MiB':>10}")
        for name, run in rows:
            print(f"{name:<24}{run.seconds:>10.1f}{run.cpu_seconds:>10.1f}{run.peak_rss_bytes / 2**20:>10.0f}")
        print(f"ours / read-only floor: {ours.seconds / floor.seconds:.2f} (target <= 3)")
        peers = [("monai", args.monai_python, {"dice": "dice", "hd95": "hd95", "nsd": "nsd"}, 1e-3)]
        if args.medpy:
            peers.append(("medpy", Path(sys.executable), {"dice": "dice", "hd95_pooled": "hd95_pooled"}, 1e-9))
        for peer, python, compared, relative in peers:
            if not python.is_file():
                print(f"{peer}: skipped ({python} is absent)")
                continue
            peer_cases = min(args.peer_cases, cases)
            run = subprocess.run([str(python), "-m", "benchmarks.phase_3d", "--peer", str(root), str(peer_cases), peer],
                                 cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{peer}: failed ({run.stderr.strip().splitlines()[-1:]})")
                continue
            result = json.loads(run.stdout)
            per_case = result["seconds"] / peer_cases
            ours_per_case = ours.seconds / cases
            wrong = differences(metrics["cases"], result["cases"], compared, relative)
            print(f"{peer}: {per_case:.1f} s per case over {peer_cases} case(s) (one process), ours "
                  f"{ours_per_case:.2f} s per case with {args.workers} workers: {per_case / ours_per_case:.1f}x; "
                  f"per process {per_case / (ours.cpu_seconds / cases):.1f}x; "
                  + ("same numbers" if not wrong else f"{len(wrong)} values differ, e.g. {wrong[0]}"))


if __name__ == "__main__":
    main()
