"""Start-up: what the whole command costs on each challenge's smallest input, the bundled example.

    .venv/bin/python -m benchmarks.startup [--repeats 5] [--workers N] [--only NAME] [--no-bytecode-cache]
                                            [--code DIR]

Each run is `python -m evaluation CHALLENGE` on test/CHALLENGE/input with ground-truth/CHALLENGE,
in a fresh interpreter, as the platform starts it. Printed per challenge, median over the
repeats (challenges interleaved, so a busy moment of the machine spreads over all of them): CPU
seconds (user + system of the process tree, workers included), wall seconds and peak resident
memory of the process tree. The target is under 0.5 s of CPU for every challenge; for
reference, the interpreter alone, `import numpy`, `--help` and `--list` (which imports every
challenge) are measured too.

The runs use a copy of evaluation/ in a scratch folder (a snapshot: the working tree may change
meanwhile), compiled to bytecode beforehand (compileall), with PYTHONDONTWRITEBYTECODE=1.
--no-bytecode-cache leaves the copy uncompiled, as the image is when its Dockerfile does not
compile it (read-only, PYTHONDONTWRITEBYTECODE=1): every module a run imports is then compiled
from source on every run. --workers (default: the command's own default, the
CPU count) is passed on when given. --code DIR runs the evaluation/ of another copy of the
repository on the same inputs, e.g. an earlier commit for a before/after table
(`git archive COMMIT | tar -x -C DIR`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.measure import ROOT, CommandRun, evaluation_snapshot, run_command
from evaluation.challenges import challenge_names

TARGET_CPU_SECONDS = 0.5


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--only", action="append", default=None, help="a challenge (repeatable)")
    parser.add_argument("--no-bytecode-cache", action="store_true")
    parser.add_argument("--code", type=Path, default=ROOT, help="folder holding the evaluation/ to run")
    args = parser.parse_args(argv)
    names = args.only or challenge_names()
    unknown = sorted(set(names) - set(challenge_names()))
    if unknown:
        sys.exit(f"unknown challenge(s): {', '.join(unknown)}")

    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        code_root = scratch / "code"
        env = evaluation_snapshot(code_root, args.code, compiled=not args.no_bytecode_cache)
        python = [sys.executable, "-m", "evaluation"]
        workers = [] if args.workers is None else ["--workers", str(args.workers)]

        commands: dict[str, list[str]] = {
            "(python -c pass)": [sys.executable, "-c", "pass"],
            "(import numpy)": [sys.executable, "-c", "import numpy"],
            "(--help)": [*python, "--help"],
            "(--list, imports all)": [*python, "--list"],
        }
        for name in names:
            commands[name] = [*python, name, "--input", str(ROOT / "test" / name / "input"), "--ground-truth",
                              str(ROOT / "ground-truth" / name), "--output", str(scratch / "out" / name), *workers]
        runs: dict[str, list[CommandRun]] = {label: [] for label in commands}
        for _ in range(args.repeats):
            for label, command in commands.items():  # interleaved
                runs[label].append(run_command(command, cwd=code_root, env=env))

    print(f"{args.repeats} repeats, median; workers: {args.workers or 'default (CPU count)'}; "
          f"bytecode cache: {'no' if args.no_bytecode_cache else 'yes'}; code: {args.code}")
    print(f"{'command':<24} {'CPU s':>7} {'wall s':>7} {'peak RSS MiB':>13}")
    missed = []
    for label, measured in runs.items():
        cpu = statistics.median(r.cpu_seconds for r in measured)
        wall = statistics.median(r.seconds for r in measured)
        rss = statistics.median(r.peak_rss_bytes for r in measured) / 2**20
        flag = ""
        if not label.startswith("(") and cpu >= TARGET_CPU_SECONDS:
            flag = f"  over the {TARGET_CPU_SECONDS} s target"
            missed.append(label)
        print(f"{label:<24} {cpu:>7.2f} {wall:>7.2f} {rss:>13.0f}{flag}")
    print(f"target: under {TARGET_CPU_SECONDS} s CPU per challenge; "
          + (f"missed by {', '.join(missed)}" if missed else "met by every challenge measured"))


if __name__ == "__main__":
    main()
