"""ISIC 2019: ours against the reference scorer, end to end as command lines on the same files.

    scripts/isic_reference_env.sh                  # once: the reference's environment
    .venv/bin/python -m benchmarks.isic_speed [--images 25000] [--repeats 5]

Both sides read the same truth and predictions CSV (full-precision values, shuffled rows and
columns, ties, binary weights) and write their JSON; the numbers are checked equal (the
reference's keys, bit for bit), then the median wall time of each, their ratio, and the peak
resident memory of each process are printed.

First, in this process, the reading of the predictions CSV alone (median of --repeats): the
plain-file fast path (isic_csv.plain_table), the character-level path it replaced (the same
function with the fast path turned off), and pandas' C reader (what the reference calls, with the
time `import pandas` takes in a fresh interpreter beside it), the three checked to give the
same bits. Without the reference's environment only this part runs.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.isic_reference import ROOT, parity_inputs, reference_cli
from evaluation.challenges.isic import predictions as isic_csv
from evaluation.challenges.isic import read_predictions_csv, read_truth_csv
from evaluation.reading.files import Origin

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


def median_seconds(function, repeats: int):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def reading_only(truth_text: str, predictions: str, repeats: int) -> None:
    """The predictions CSV read in this process: fast path, character-level path, pandas."""
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "truth.csv").write_text(truth_text)
        truth = read_truth_csv(Origin.ground_truth(Path(scratch)), Path(scratch) / "truth.csv")
    data = predictions.encode()
    fast_seconds, (fast_ids, fast_values) = median_seconds(
        lambda: read_predictions_csv(data, truth.categories, truth.ids), repeats)
    plain_table = isic_csv.plain_table
    isic_csv.plain_table = lambda text: None
    try:
        slow_seconds, (slow_ids, slow_values) = median_seconds(
            lambda: read_predictions_csv(data, truth.categories, truth.ids), repeats)
    finally:
        isic_csv.plain_table = plain_table
    same = fast_ids == slow_ids and fast_values.tobytes() == slow_values.tobytes()
    print(f"reading predictions.csv ({len(fast_ids)} rows) in-process, median of {repeats}:")
    print(f"  fast path (plain file)     : {fast_seconds:.3f} s")
    print(f"  character-level path       : {slow_seconds:.3f} s   ({slow_seconds / fast_seconds:.1f}x the fast "
          f"path's time; same bits: {'yes' if same else 'NO'})")
    try:
        import pandas as pd
    except ImportError:
        print("  pandas                     : not installed (requirements-dev.txt)")
    else:
        def by_pandas():
            frame = pd.read_csv(io.StringIO(predictions), header=0, index_col=False, dtype={"image": str})
            frame["image"] = frame["image"].str.replace(r"\.jpg$", "", case=False, regex=True)
            frame = frame.set_index("image").sort_index()
            return frame[list(truth.categories)].to_numpy()

        pandas_seconds, pandas_values = median_seconds(by_pandas, repeats)
        import_seconds = float(subprocess.run(
            [sys.executable, "-c", "import time, numpy; t = time.perf_counter(); import pandas; "
                                   "print(time.perf_counter() - t)"], capture_output=True, text=True).stdout)
        print(f"  pandas.read_csv (C parser) : {pandas_seconds:.3f} s, plus {import_seconds:.2f} s to import pandas "
              f"(same bits: {'yes' if pandas_values.tobytes() == fast_values.tobytes() else 'NO'})")
    if not same:
        sys.exit(1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=25000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    case = dict(edition="isic2019", seed=7, images=args.images, metric="balanced_accuracy", weights="binary",
                values="full")
    truth, predictions = parity_inputs(case)
    reading_only(truth, predictions, args.repeats)
    cli = reference_cli()
    if cli is None:
        sys.exit("The reference environment is missing (scripts/isic_reference_env.sh): end-to-end run skipped.")
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
