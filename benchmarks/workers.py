"""Workers only where they pay: the whole command with --workers 1 and --workers 2 on the same
input, interleaved, per challenge that scores its cases in workers (Workload.in_workers).

    .venv/bin/python -m benchmarks.workers [--only NAME]... [--repeats 3] [--quick]

Two inputs per challenge: its bundled example (test/<challenge>/input: a handful of small cases)
and a realistic one (the inputs of benchmarks/whole_command.py: rare26 32 stacks, csv2026 300
cases at 512², hecktor2025-task1 3 patients of 200 x 512 x 512, camelyon16 20 slides). Printed:
the median wall seconds, CPU seconds (process tree) and peak memory (process tree, sampled) of
each worker count, and the wall-time speed-up of 2 workers. Challenges whose cases are a few
bytes of JSON (isic2018/2019, hecktor2025-task2/3: Workload(in_workers=False)) never use workers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.measure import ROOT, run_command
from benchmarks.whole_command import COMPARISONS

IN_WORKERS = ("rare26", "csv2026", "hecktor2025-task1", "camelyon16")


def measure(name: str, truth: Path, inputs: Path, output: Path, repeats: int) -> dict[int, list]:
    runs: dict[int, list] = {1: [], 2: []}
    for _ in range(repeats):
        for workers in (1, 2):  # interleaved
            runs[workers].append(run_command([sys.executable, "-m", "evaluation", name, "--input", str(inputs),
                                              "--ground-truth", str(truth), "--output", str(output),
                                              "--workers", str(workers)]))
    return runs


def row(name: str, size: str, runs: dict[int, list]) -> str:
    wall = {w: statistics.median(r.seconds for r in runs[w]) for w in runs}
    cpu = {w: statistics.median(r.cpu_seconds for r in runs[w]) for w in runs}
    rss = {w: statistics.median(r.peak_rss_bytes for r in runs[w]) / 2**20 for w in runs}
    return (f"{name:<18} {size:<28} {wall[1]:>7.2f} {wall[2]:>7.2f} {wall[1] / wall[2]:>7.2f}x "
            f"{cpu[1]:>6.2f} {cpu[2]:>6.2f} {rss[1]:>7.0f} {rss[2]:>7.0f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small realistic inputs: checks that it runs")
    args = parser.parse_args(argv)
    names = args.only or list(IN_WORKERS)
    makers = {c.name: c for c in COMPARISONS}
    header = (f"{'challenge':<18} {'input':<28} {'wall 1':>7} {'wall 2':>7} {'speed-up':>8} {'CPU 1':>6} "
              f"{'CPU 2':>6} {'MiB 1':>7} {'MiB 2':>7}")
    print(f"{args.repeats} repeats, medians; 1 and 2 workers interleaved", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            scratch = Path(folder) / name
            rows.append(row(name, "bundled example", measure(name, ROOT / "ground-truth" / name,
                                                              ROOT / "test" / name / "input", scratch / "out-small",
                                                              args.repeats)))
            print(rows[-1], flush=True)
            makers[name].make(scratch / "data", args.quick)
            size = "small (--quick)" if args.quick else makers[name].input_text
            rows.append(row(name, size, measure(name, scratch / "data" / "ground-truth", scratch / "data" / "input",
                                                scratch / "out", args.repeats)))
            print(rows[-1], flush=True)
    print()
    print(header)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
