"""ISIC 2019: ours against the reference scorer, end to end as command lines on the same files.

    scripts/isic_reference_env.sh                  # once: the reference's environment
    .venv/bin/python -m benchmarks.isic_speed [--images 25000] [--repeats 5]

Both sides read the same truth and predictions CSV (full-precision values, shuffled rows and
columns, ties, binary weights) and write their JSON; the numbers are checked equal (the
reference's keys, bit for bit), then the median wall time of each, their ratio, and the peak
resident memory of each process are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.isic_reference import ROOT, parity_inputs, reference_cli

WRAPPER = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
           "sys.stderr.buffer.write(r.stderr); sys.stdout.buffer.write(r.stdout); "
           "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(r.returncode)")


def timed(command: list[str]) -> tuple[float, int, str]:
    """(seconds, peak RSS in MB of the command's process tree, stdout)."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", WRAPPER, *command], capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {result.stderr[-2000:]}")
    peak_kb = int(result.stderr.strip().splitlines()[-1])
    return seconds, peak_kb // 1024, result.stdout


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=25000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    cli = reference_cli()
    if cli is None:
        sys.exit("The reference environment is missing: run scripts/isic_reference_env.sh first.")
    case = dict(edition="isic2019", seed=7, images=args.images, metric="balanced_accuracy", weights="binary",
                values="full")
    truth, predictions = parity_inputs(case)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        (scratch / "gt").mkdir()
        (scratch / "input").mkdir()
        (scratch / "gt" / "truth.csv").write_text(truth)
        (scratch / "input" / "predictions.csv").write_text(predictions)
        size = (scratch / "input" / "predictions.csv").stat().st_size
        print(f"{args.images} images, 9 categories; predictions.csv {size / 1e6:.1f} MB; {args.repeats} repeats")
        ours_cmd = [str(ROOT / ".venv" / "bin" / "python"), "-m", "evaluation", "isic2019", "--input",
                    str(scratch / "input"), "--ground-truth", str(scratch / "gt"), "--output", str(scratch / "out")]
        reference_cmd = [str(cli), "-o", "json", "classification", str(scratch / "gt" / "truth.csv"),
                         str(scratch / "input" / "predictions.csv")]
        ours_runs, reference_runs = [], []
        for _ in range(args.repeats):  # interleaved, so that machine noise hits both alike
            ours_runs.append(timed(ours_cmd))
            reference_runs.append(timed(reference_cmd))
        ours = json.loads((scratch / "out" / "metrics.json").read_text())
        reference = json.loads(reference_runs[-1][2])
        metrics_size = (scratch / "out" / "metrics.json").stat().st_size
    view = {"overall": ours["overall"], "validation": ours["validation"], "per_category": ours["per_category"],
            "macro_average": ours["macro_average"],
            "aggregate": {"balanced_accuracy": ours["aggregate"]["balanced_accuracy"]}}
    equal = view == reference
    ours_time = statistics.median(r[0] for r in ours_runs)
    reference_time = statistics.median(r[0] for r in reference_runs)
    print(f"ours      : median {ours_time:.2f} s, peak RSS {max(r[1] for r in ours_runs)} MB, metrics.json "
          f"{metrics_size / 1e3:.0f} kB")
    print(f"reference : median {reference_time:.2f} s, peak RSS {max(r[1] for r in reference_runs)} MB")
    print(f"ratio     : ours is {reference_time / ours_time:.2f}x the reference's speed")
    print(f"numbers   : {'identical (every key of the reference, bit for bit)' if equal else 'DIFFERENT'}")
    if not equal:
        sys.exit(1)


if __name__ == "__main__":
    main()
