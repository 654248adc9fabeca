"""CSV 2026 reading by compression: the same synthetic test set (300 cases at 512², predictions
files) with every mask written by h5py with gzip (as evaluation.examples writes it), then
rewritten with compression="lzf" in the submission only and in the ground truth too; the whole
command (`python -m evaluation csv2026 --workers 2`) run on each, interleaved.

    .venv/bin/python -m benchmarks.csv2026_compression [--cases 300] [--size 512] [--repeats 7]

Prints, per variant, wall and CPU seconds (user + system of the command and its workers, from
RUSAGE_CHILDREN), min and median, and checks that every variant writes the same metrics.json
bytes. Gzip masks take the chunk-by-chunk path of evaluation/reading/hdf5.py; LZF masks have
each stored stream walked to its length, then the library's reader. Not a timed test.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py

from evaluation.challenges.csv2026.examples import write_dataset

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = {"gzip": (), "lzf-submission": ("input",), "lzf-both": ("input", "ground-truth")}


def recompress(path: Path, compression: str | None) -> None:
    """Every dataset of more than one value in the HDF5 file at `path` rewritten by h5py with
    `compression` ("lzf", "gzip", None), its values unchanged. No file lock: nothing else has
    the file open, and the hostile tests call this from threads that fork runners meanwhile."""
    with h5py.File(path, "a", locking=False) as handle:
        for name in list(handle):
            data = handle[name][()]
            if data.size > 1:
                del handle[name]
                handle.create_dataset(name, data=data, compression=compression)


def run(folder: Path, output: Path, workers: int) -> tuple[float, float, bytes]:
    """(wall seconds, CPU seconds of the command and its children, metrics.json bytes)."""
    shutil.rmtree(output, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "evaluation", "csv2026", "--input", str(folder / "input"),
                           "--ground-truth", str(folder / "ground-truth"), "--output", str(output),
                           "--workers", str(workers)], cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{folder.name}: exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, (output / "metrics.json").read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        write_dataset(root / "gzip", seed=2026, cases=args.cases, phase="file", shape=(args.size, args.size))
        for name, sides in VARIANTS.items():
            if sides:
                shutil.copytree(root / "gzip", root / name)
            for side in sides:
                for path in sorted((root / name / side).rglob("*.h5")):
                    recompress(path, "lzf")
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
        written: dict[str, bytes] = {}
        for _ in range(args.repeats):
            for name in VARIANTS:
                wall, cpu, metrics = run(root / name, root / f"out-{name}", args.workers)
                times[name].append((wall, cpu))
                written[name] = metrics
        for name, pairs in times.items():
            walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
            size = sum(p.stat().st_size for p in (root / name).rglob("*.h5")) / 2**20
            print(f"{name:15s} {size:5.1f} MiB of .h5  "
                  f"wall min/median {min(walls):.2f}/{statistics.median(walls):.2f} s"
                  f"  CPU min/median {min(cpus):.2f}/{statistics.median(cpus):.2f} s")
        assert len(set(written.values())) == 1, "metrics.json differs between compressions"
        print("metrics.json identical for every variant: yes")


if __name__ == "__main__":
    main()
