"""The final ranking across submissions (python -m evaluation.leaderboard) as an organizer waits for
it, and its statistics against the plain way: re-running the container on every resample.

    .venv/bin/python -m benchmarks.leaderboard [--only NAME]... [--repeats 3] [--quick] [--profile]
    .venv/bin/python -m benchmarks.leaderboard --many-teams [TEAMS] [--repeats 1] [--quick]
    .venv/bin/python -m benchmarks.leaderboard --aggregate [--repeats 3]

--aggregate: one submission's share of the statistics alone, in this process: HECKTOR tasks 2 and 3's
`aggregate` on 1000 resamples (counts) of 500 synthetic patients, the best of --repeats, and that
times 50 submissions.

--many-teams: the scale case alone. 1,000 team folders (40 distinct HECKTOR task 2 submissions,
the rest linked to them) x 500 patients, the whole command with 1000 resamples on 1 and 2
workers; prints the wall time and the peak memory of the main process up to the report (scoring,
ranking, statistics, CSV) and of its largest worker, judged against 2 GiB, and the peak with the
report. --until-report stops each command when the report starts (its charts are report.py's).

| challenge | submissions | cases (synthetic) |
|---|---|---|
| hecktor2025-task2 | 50 | 500 patients (the example's synthetic ground truth) |
| hecktor2025-task3 | 50 | 500 patients (likewise) |
| hecktor2025-task1 | 20 | 24 patients of 128 x 384 x 384 voxels (benchmarks/hecktor2025_task1.py's masks) |

Submissions: Example.submission with seed = team number (task 1: the truth shifted by one voxel).

Per challenge:
- the command, started fresh (subprocess) with --workers 1 and --workers 2, interleaved, --repeats
  times (medians): wall seconds, CPU seconds (user + system of the process tree: scoring workers
  included), and peak resident memory of the main process and of the largest worker (each
  process's own VmHWM; fork-started workers count the pages they share with the main process);
  from its progress lines (timestamped as they arrive), the seconds from "Statistics:" to "Wrote"
  (the statistics plus the report: CSV files, charts rendered to SVG). ranking.json must be the
  same bytes with 1 and 2 workers;
- the statistics alone, in this process on the same scored submissions: the command's own
  `_statistics` (every submission's `ranking_resamples` on 1 or 2 workers, as --workers says,
  then `leaderboard_statistics` per leaderboard), 1000 paired resamples, the median of --repeats
  runs (at least 2) and, in brackets, the first one (cold, as the command runs it once). The
  target (issue 12), < 10 s for 50 submissions x 1000 resamples of HECKTOR tasks 2 and 3, is
  judged on the slowest run; --profile prints the heaviest functions of the 1-worker statistics;
- the plain loop: for a sample of submissions x resamples (3 x 5; --quick: 2 x 2), the resample
  written out as a submission and ground-truth folder pair (each patient as many times as drawn,
  duplicates renamed `<patient>~<k>`, files hard-linked) and `python -m evaluation CHALLENGE` run
  on it (default workers: the CPU count). Its ranked values must equal `aggregate`
  on the same draws (1e-9); its mean seconds per run, times submissions x 1000, is the estimate
  of the plain loop (an EXTRAPOLATION; writing the folders and starting a container are not
  counted), and the ratio is that estimate over our statistics' seconds (each worker count).

--quick: a few small submissions, to check that everything runs (the target is not judged).
Not a timed test: run it, read the table.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.measure import ROOT, run_command, tree_rss_bytes

RESAMPLES = 1000
TARGET_SECONDS = 10.0  # statistics of 50 submissions x 1000 resamples, HECKTOR tasks 2 and 3
TOLERANCE = 1e-9  # the aggregate contract


@dataclass(frozen=True)
class Size:
    submissions: int
    cases: int
    shape: tuple[int, int, int] = (0, 0, 0)  # task 1: z, y, x voxels


@dataclass(frozen=True)
class Setup:
    name: str
    full: Size
    quick: Size
    write_ground_truth: Callable[[Path, Size], None]  # (folder, size): folder/ground-truth
    # the plain loop: (evaluation, ground truth, out folder, {case: names of its copies})
    copy_ground_truth: Callable[[Any, Path, Path, dict[str, list[str]]], None]
    target: bool  # judged against TARGET_SECONDS

    def describe(self, size: Size) -> str:
        voxels = f" of {'x'.join(map(str, size.shape))}" if any(size.shape) else ""
        return f"{size.submissions} submissions, {size.cases} patients{voxels}"


# ---- inputs ------------------------------------------------------------------------------------


def example_ground_truth(challenge: str) -> Callable[[Path, Size], None]:
    def write(root: Path, size: Size) -> None:
        from evaluation.examples import synthesize

        synthesize(challenge, root, seed=13, cases=size.cases)  # root/ground-truth (and root/input: unused)
    return write


def task1_ground_truth(root: Path, size: Size) -> None:
    from benchmarks.hecktor2025_task1 import write_dataset

    write_dataset(root, size.cases, size.shape)  # root/ground-truth (and root/input: unused)


def write_submissions(challenge: str, ground_truth: Path, folder: Path, count: int) -> list[Path]:
    """`count` valid submissions for the ground truth, team-00, team-01, ... (seed = team number)."""
    from evaluation.examples import example

    make = example(challenge).submission
    paths = [folder / f"team-{k:02d}" for k in range(count)]
    for seed, path in enumerate(paths):
        make(ground_truth, path, seed)
    return paths


# ---- the command, measured -----------------------------------------------------------------------


@dataclass
class LeaderboardRun:
    seconds: float
    cpu_seconds: float
    main_peak_bytes: int  # the command's own process (VmHWM)
    worker_peak_bytes: int  # the largest of its descendants (0: none started)
    statistics_and_report_seconds: float  # from the log: "Statistics:" to "Wrote"
    before_report_peak_bytes: int = 0  # the main process's VmHWM when "Writing the report" arrived


def run_leaderboard(command: list[str], interval: float = 0.01, until_report: bool = False) -> LeaderboardRun:
    """The command as a user waits for it: wall time, CPU of the process tree (RUSAGE_CHILDREN:
    its workers are waited for), each process's peak memory (/proc VmHWM, sampled), and the
    arrival time of each progress line."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               bufsize=1)
    high_water: dict[int, int] = {}

    def sample():
        while process.poll() is None:
            tree_rss_bytes(process.pid, high_water)
            time.sleep(interval)

    sampler = threading.Thread(target=sample)
    sampler.start()
    stderr_lines: list[str] = []
    reader = threading.Thread(target=lambda: stderr_lines.extend(process.stderr))
    reader.start()
    lines, before_report = [], 0
    for line in process.stdout:  # the command flushes each line
        lines.append((time.perf_counter(), line))
        if line.startswith("Writing the report"):
            before_report = _own_peak_bytes(process.pid)
            if until_report:  # the report's charts are measured on their own: stop here
                process.terminate()
                lines.append((time.perf_counter(), "Wrote (stopped at the report)\n"))
                break
    process.wait()
    seconds = time.perf_counter() - started
    sampler.join()
    reader.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0 and not (until_report and before_report):
        last = stderr_lines[-1].strip() if stderr_lines else "(no message)"
        raise SystemExit(f"{' '.join(command[2:5])} ... failed with exit {process.returncode}: {last}")
    stats_start = next(t for t, line in lines if line.startswith("Statistics:"))
    wrote = next(t for t, line in lines if line.startswith("Wrote "))
    workers = [peak for pid, peak in high_water.items() if pid != process.pid]
    return LeaderboardRun(seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
                          high_water.get(process.pid, 0), max(workers, default=0), wrote - stats_start, before_report)


def _own_peak_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


# ---- the statistics alone, in this process ---------------------------------------------------------


@dataclass
class Scored:
    evaluation: Any
    spec: Any  # the ChallengeSpec workers build the challenge from
    outcomes: dict  # name -> Outcome (per-case results)
    standings: list


def score_in_process(challenge: str, ground_truth: Path, submissions: list[Path], workers: int) -> Scored:
    """Every submission scored by the command's own code (its log silenced), and ranked."""
    from evaluation.challenges import challenge_class
    from evaluation.leaderboard.scoring import score_submissions
    from evaluation.leaderboard.standings import rank_leaderboard
    from evaluation.scheduling import ChallengeSpec

    cls = challenge_class(challenge)
    settings = cls.settings_class.from_ground_truth(ground_truth)
    evaluation = cls(ground_truth, settings)
    spec = ChallengeSpec(challenge, str(ground_truth.resolve()), settings)
    with contextlib.redirect_stdout(io.StringIO()):
        outcomes = score_submissions(evaluation, spec, [(p.name, p) for p in submissions], workers)
    bad = [o for o in outcomes if o.metrics is None]
    if bad:
        raise SystemExit(f"{challenge}: {bad[0].name} was excluded: {bad[0].error}")
    documents = {o.name: o.metrics for o in outcomes}
    standings = [rank_leaderboard(rule, documents, "average", []) for rule in cls.final_rankings]
    return Scored(evaluation, spec, {o.name: o for o in outcomes}, standings)


def command_statistics(scored: Scored, workers: int) -> dict | None:
    """The command's own statistics step (cli._statistics: every submission's resamples on the
    workers, then each leaderboard's statistics), with its defaults: 1000 resamples, the phase's
    seed, alpha 0.05, average ties."""
    from evaluation.leaderboard.cli import _statistics

    arguments = argparse.Namespace(seed=None, resamples=RESAMPLES, tie_method="average", alpha=0.05, scheduler=None)
    document, _ = _statistics(scored.evaluation, scored.spec, workers, scored.standings, scored.outcomes, arguments,
                              [])
    return document


def time_statistics(scored: Scored, workers: int) -> float:
    with contextlib.redirect_stdout(io.StringIO()):
        started = time.perf_counter()
        document = command_statistics(scored, workers)
        seconds = time.perf_counter() - started
    if document is None:
        raise SystemExit(f"{scored.evaluation.name}: no statistics computed")
    return seconds


def profile_statistics(scored: Scored, lines: int) -> str:
    """The statistics with 1 worker (everything in this process, so cProfile sees it)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    with contextlib.redirect_stdout(io.StringIO()):
        profiler.enable()
        command_statistics(scored, 1)
        profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(lines)
    body = text.getvalue()
    return body[body.index("   ncalls"):].rstrip() if "   ncalls" in body else body.rstrip()


# ---- the plain loop: one container run per submission and resample ---------------------------------


def copy_names(case_ids: list[str], counts: np.ndarray) -> dict[str, list[str]]:
    """{case: its names in the materialised resample}: drawn c times -> case, case~1, ..., case~(c-1)."""
    return {case: [case if k == 0 else f"{case}~{k}" for k in range(int(c))]
            for case, c in zip(case_ids, counts, strict=True) if c}


def copy_csv_ground_truth(evaluation, ground_truth: Path, out: Path, copies: dict[str, list[str]]) -> None:
    """Tasks 2 and 3: the patient CSV with one row per copy (PatientID renamed); other files as they are."""
    out.mkdir(parents=True)
    for path in sorted(ground_truth.iterdir()):
        if path.suffix.lower() != ".csv":
            shutil.copy2(path, out / path.name)
            continue
        with path.open(newline="", encoding="utf-8") as file:
            rows = list(csv.DictReader(file))
        fields = list(rows[0])
        with (out / path.name).open("w", newline="", encoding="utf-8") as file:
            writer = csv.DictWriter(file, fields, lineterminator="\n")
            writer.writeheader()
            for row in rows:
                for name in copies.get(row["PatientID"], ()):
                    writer.writerow({**row, "PatientID": name})


def copy_mask_ground_truth(evaluation, ground_truth: Path, out: Path, copies: dict[str, list[str]]) -> None:
    """Task 1: one mask per copy, hard-linked under the copy's name; other files as they are."""
    out.mkdir(parents=True)
    masks = {Path(p).resolve() for p in evaluation.ground_truth.values()}
    for path in sorted(ground_truth.iterdir()):
        if path.resolve() not in masks:
            shutil.copy2(path, out / path.name)
    for case, names in copies.items():
        source = Path(evaluation.ground_truth[case])
        extension = source.name[len(case):]
        for name in names:
            os.link(source, out / f"{name}{extension}")


def copy_submission(evaluation, submission: Path, out: Path, copies: dict[str, list[str]]) -> None:
    """The submission with one job per copy: the case's job, its pk suffixed, every input image
    named after the patient renamed, its output folder hard-linked."""
    socket = evaluation.case_input_socket()
    jobs = json.loads((submission / "predictions.json").read_text(encoding="utf-8"))
    written = []
    for job in jobs:
        (case_input,) = [i for i in job["inputs"] if (i.get("socket") or i.get("interface"))["slug"] == socket]
        case = evaluation.case_id_from_image_name(case_input["image"]["name"])
        for k, name in enumerate(copies.get(case, ())):
            copy = json.loads(json.dumps(job))
            copy["pk"] = job["pk"] if k == 0 else f"{job['pk']}-{k}"
            for value in copy["inputs"]:
                image = value.get("image") or {}
                if str(image.get("name", "")).startswith(case):
                    image["name"] = name + image["name"][len(case):]
            shutil.copytree(submission / job["pk"], out / copy["pk"], copy_function=os.link)
            written.append(copy)
    (out / "predictions.json").write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")


def value_at(document: dict, path: str) -> float:
    for key in path.split("."):
        document = document[key]
    return float("nan") if document is None else float(document)


@dataclass
class PlainLoop:
    runs: int
    mean_seconds: float
    largest_difference: float  # |container's ranked value - aggregate| over the sample


def plain_loop(setup: Setup, scored: Scored, ground_truth: Path, submissions: list[Path], sample: tuple[int, int],
               seed: int, folder: Path) -> PlainLoop:
    """The container on `sample` = (submissions, resamples) materialised resamples, timed; its
    ranked values checked against aggregate on the same draws."""
    evaluation = scored.evaluation
    chosen, resamples = sample
    seconds, largest = [], 0.0
    rng = np.random.default_rng(seed)
    for submission in submissions[:chosen]:
        results = scored.outcomes[submission.name].results
        case_ids = sorted(results)
        n = len(case_ids)
        draws = rng.integers(0, n, size=(resamples, n))
        counts = np.zeros((resamples, n), dtype=np.int64)
        np.add.at(counts, (np.arange(resamples)[:, None], draws), 1)
        expected = evaluation.aggregate(results, counts)
        for r in range(resamples):
            run = folder / f"{submission.name}-{r}"
            copies = copy_names(case_ids, counts[r])
            setup.copy_ground_truth(evaluation, ground_truth, run / "ground-truth", copies)
            copy_submission(evaluation, submission, run / "input", copies)
            timed = run_command([sys.executable, "-m", "evaluation", setup.name, "--input", str(run / "input"),
                                 "--ground-truth", str(run / "ground-truth"), "--output", str(run / "output")])
            seconds.append(timed.seconds)
            metrics = json.loads((run / "output" / "metrics.json").read_text())
            for path, values in expected.items():
                ours, theirs = float(values[r]), value_at(metrics, path)
                if np.isnan(ours) and np.isnan(theirs):
                    continue
                largest = max(largest, abs(ours - theirs))
            shutil.rmtree(run)
    return PlainLoop(len(seconds), statistics.mean(seconds), largest)


# ---- the table -------------------------------------------------------------------------------------


SETUPS = [
    Setup("hecktor2025-task2", Size(50, 500), Size(6, 60), example_ground_truth("hecktor2025-task2"),
          copy_csv_ground_truth, target=True),
    Setup("hecktor2025-task3", Size(50, 500), Size(6, 60), example_ground_truth("hecktor2025-task3"),
          copy_csv_ground_truth, target=True),
    Setup("hecktor2025-task1", Size(20, 24, (128, 384, 384)), Size(4, 4, (32, 96, 96)), task1_ground_truth,
          copy_mask_ground_truth, target=False),
]

HEADER = (f"{'challenge':<18} {'subs':>4} {'cases':>5} {'workers':>7} {'wall s':>7} {'CPU s':>7} "
          f"{'peak MiB main/worker':>20} {'stats+report s (log)':>20} {'statistics s (1st)':>18} "
          f"{'plain loop s (est.)':>19} {'ratio':>9}")


def mib(value: float) -> str:
    return f"{value / 2**20:.0f}" if value else "-"


MANY_TEAMS = 1000  # the scale: hundreds of teams, memory must not grow with their square
MANY_CASES = 500
MANY_DISTINCT = 40  # distinct submissions written; the other team folders link to them (a written one
# is 6.5 MB and 1.6 s for 500 HECKTOR task 2 patients); ties do not change what the statistics hold
MANY_TARGET_BYTES = 2 * 2**30


def aggregate_timing(repeats: int, patients: int = 500, resamples: int = RESAMPLES) -> None:
    """HECKTOR tasks 2 and 3: `aggregate` on `resamples` rows of counts over `patients` synthetic
    patients (tied times and risks, ~40% censored; ~60% HPV positive, 20% wrong), best of `repeats`."""
    import copy

    from evaluation.challenges.hecktor2025 import HecktorTask2, HecktorTask3

    rng = np.random.default_rng(1)
    names = [f"P{i:04d}" for i in range(patients)]
    truth2 = {p: (float(rng.integers(30, 120) * 10), int(rng.random() < 0.6)) for p in names}
    risks = {p: float(np.round(rng.normal(), 1)) for p in names}
    truth3 = {p: int(rng.random() < 0.6) for p in names}
    decisions = {p: bool(label) != bool(rng.random() < 0.2) for p, label in truth3.items()}
    draws = rng.integers(0, patients, size=(resamples, patients))
    counts = np.array([np.bincount(row, minlength=patients) for row in draws], dtype=np.int64)
    for task, truth, results in ((HecktorTask2, truth2, risks), (HecktorTask3, truth3, decisions)):
        evaluation = copy.copy(task(ROOT / "ground-truth" / task.name))
        evaluation.ground_truth = truth
        times = []
        for _ in range(max(1, repeats)):
            started = time.perf_counter()
            evaluation.aggregate(results, counts)
            times.append(time.perf_counter() - started)
        print(f"{task.name}: {resamples} resamples of {patients} patients in {min(times) * 1000:.1f} ms "
              f"(x 50 submissions: {min(times) * 50:.2f} s)", flush=True)


def many_teams(teams: int, cases: int, distinct: int, repeats: int, until_report: bool = False) -> int:
    """hecktor2025-task2, `teams` team folders x `cases` patients, the whole command (1000
    resamples, 1 and 2 workers): wall seconds and the peak memory of the main process and of its
    largest worker, judged against 2 GiB for the process tree's largest. Returns 1 when missed."""
    challenge = "hecktor2025-task2"
    failed = 0
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        started = time.perf_counter()
        example_ground_truth(challenge)(root / "data", Size(teams, cases))
        ground_truth = root / "data" / "ground-truth"
        written = write_submissions(challenge, ground_truth, root / "written", min(distinct, teams))
        folders = []
        for k in range(teams):
            link = root / "teams" / f"team-{k:04d}"
            link.parent.mkdir(exist_ok=True)
            link.symlink_to(written[k % len(written)])
            folders.append(link)
        print(f"{challenge}: {teams} teams ({len(written)} distinct submissions) x {cases} patients written in "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        for _repeat in range(repeats):
            for workers in (1, 2):
                output = root / f"output-{workers}"
                shutil.rmtree(output, ignore_errors=True)
                measured = run_leaderboard([sys.executable, "-m", "evaluation.leaderboard", challenge,
                                            *map(str, folders), "--ground-truth", str(ground_truth), "--output",
                                            str(output), "--workers", str(workers)], interval=0.05,
                                           until_report=until_report)
                # judged up to the report: its charts (report.py) are measured on their own
                peak = max(measured.before_report_peak_bytes, measured.worker_peak_bytes)
                met = peak <= MANY_TARGET_BYTES
                failed |= not met
                print(f"  --workers {workers}: {measured.seconds:.0f} s wall "
                      f"({measured.statistics_and_report_seconds:.0f} s statistics and report); "
                      f"peak memory up to the report (scoring, ranking, statistics, CSV): "
                      f"{mib(measured.before_report_peak_bytes)} MiB main, "
                      f"{mib(measured.worker_peak_bytes)} MiB largest worker: target <= 2 GiB "
                      f"{'MET' if met else 'NOT MET'}; with the report: "
                      f"{'not run (--until-report)' if until_report else mib(measured.main_peak_bytes) + ' MiB; '}"
                      + ("" if until_report else f"ranking.json {mib((output / 'ranking.json').stat().st_size)} MiB"),
                      flush=True)
    return int(failed)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=None, help="a challenge (repeatable)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each command and of the statistics (medians)")
    parser.add_argument("--quick", action="store_true", help="small inputs: checks that everything runs")
    parser.add_argument("--profile", action="store_true", help="print the statistics' heaviest functions")
    parser.add_argument("--many-teams", type=int, nargs="?", const=MANY_TEAMS, default=None, metavar="TEAMS",
                        help=f"only the scale case: TEAMS (default {MANY_TEAMS}) HECKTOR task 2 teams x {MANY_CASES} "
                             f"patients, the whole command's peak memory against 2 GiB")
    parser.add_argument("--until-report", action="store_true",
                        help="with --many-teams: stop each command when it starts the report (its charts)")
    parser.add_argument("--aggregate", action="store_true",
                        help="only HECKTOR tasks 2 and 3's aggregate on 1000 resamples of 500 patients, "
                             "in this process")
    args = parser.parse_args(argv)
    if args.aggregate:
        aggregate_timing(args.repeats)
        return
    if args.many_teams is not None:
        sys.exit(many_teams(args.many_teams, 20 if args.quick else MANY_CASES, 4 if args.quick else MANY_DISTINCT,
                            args.repeats, args.until_report))
    known = {s.name: s for s in SETUPS}
    unknown = sorted(set(args.only or ()) - set(known))
    if unknown:
        sys.exit(f"unknown: {', '.join(unknown)}; known: {', '.join(known)}")
    chosen = [known[name] for name in args.only] if args.only else SETUPS
    sample = (2, 2) if args.quick else (3, 5)
    print(f"{args.repeats} repeat(s), medians; --workers 1 and 2 interleaved; {RESAMPLES} resamples"
          f"{'; QUICK (small inputs)' if args.quick else ''}", flush=True)

    rows, verdicts, profiles = [], [], []
    for setup in chosen:
        size = setup.quick if args.quick else setup.full
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            started = time.perf_counter()
            setup.write_ground_truth(root / "data", size)
            ground_truth = root / "data" / "ground-truth"
            submissions = write_submissions(setup.name, ground_truth, root / "submissions", size.submissions)
            print(f"{setup.name}: {setup.describe(size)} written in {time.perf_counter() - started:.0f} s", flush=True)

            runs: dict[int, list[LeaderboardRun]] = {1: [], 2: []}
            for _repeat in range(args.repeats):
                for workers in (1, 2):  # interleaved: a busy moment of the machine hits both
                    output = root / f"output-{workers}"
                    shutil.rmtree(output, ignore_errors=True)
                    runs[workers].append(run_leaderboard(
                        [sys.executable, "-m", "evaluation.leaderboard", setup.name, *map(str, submissions),
                         "--ground-truth", str(ground_truth), "--output", str(output), "--workers", str(workers)]))
            if (root / "output-1" / "ranking.json").read_bytes() != (root / "output-2" / "ranking.json").read_bytes():
                sys.exit(f"{setup.name}: ranking.json differs between --workers 1 and 2")

            scored = score_in_process(setup.name, ground_truth, submissions, workers=2)
            stats_times: dict[int, list[float]] = {1: [], 2: []}
            for _ in range(max(2, args.repeats)):  # interleaved; the first run of each is cold
                for workers in (1, 2):
                    stats_times[workers].append(time_statistics(scored, workers))
            stats_seconds = {w: statistics.median(t) for w, t in stats_times.items()}
            slowest = max(max(t) for t in stats_times.values())
            if args.profile:
                profiles.append(f"{setup.name}: the statistics, heaviest functions (cProfile, tottime)\n"
                                + profile_statistics(scored, 12))
            seed = getattr(scored.evaluation.settings, "seed", 0)
            loop = plain_loop(setup, scored, ground_truth, submissions, sample,
                              seed if isinstance(seed, int) else 0, root / "plain-loop")
            if loop.largest_difference > TOLERANCE:
                sys.exit(f"{setup.name}: the container's ranked values on a materialised resample differ from "
                         f"aggregate by {loop.largest_difference:.3g}")
            estimate = loop.mean_seconds * size.submissions * RESAMPLES
        for workers in (1, 2):
            median = {field: statistics.median(getattr(r, field) for r in runs[workers])
                      for field in ("seconds", "cpu_seconds", "main_peak_bytes", "worker_peak_bytes",
                                    "statistics_and_report_seconds")}
            peaks = f"{mib(median['main_peak_bytes'])}/{mib(median['worker_peak_bytes'])}"
            both = f"{stats_seconds[workers]:.2f} ({stats_times[workers][0]:.2f})"
            plain = f" {estimate:>19,.0f} {estimate / stats_seconds[workers]:>8,.0f}x"
            rows.append(f"{setup.name:<18} {size.submissions:>4} {size.cases:>5} {workers:>7} "
                        f"{median['seconds']:>7.1f} {median['cpu_seconds']:>7.1f} {peaks:>20} "
                        f"{median['statistics_and_report_seconds']:>20.2f} "
                        f"{both:>18}{plain}")
            print(rows[-1], flush=True)
        verdicts.append(
            f"{setup.name}: plain loop sampled on {sample[0]} submissions x {sample[1]} resamples = "
            f"{loop.runs} container runs, {loop.mean_seconds:.2f} s each (mean), "
            f"EXTRAPOLATED to {size.submissions} x {RESAMPLES} = "
            f"{estimate:,.0f} s ({estimate / 3600:.1f} h); its ranked values equal aggregate "
            f"(largest difference {loop.largest_difference:.1e})")
        if setup.target:
            met = slowest < TARGET_SECONDS
            judged = ("not judged (--quick)" if args.quick or size.submissions != 50 else
                      f"target < {TARGET_SECONDS:g} s {'MET' if met else 'NOT MET'} (slowest run)")
            verdicts.append(f"{setup.name}: statistics of {size.submissions} submissions x {RESAMPLES} resamples "
                            f"in {stats_seconds[1]:.2f} s with 1 worker, {stats_seconds[2]:.2f} s with 2 (medians "
                            f"of {len(stats_times[1])}; slowest run {slowest:.2f} s): {judged}")

    print()
    print(HEADER)
    print("\n".join(rows))
    print()
    print("\n".join(verdicts))
    if profiles:
        print()
        print("\n\n".join(profiles))


if __name__ == "__main__":
    main()
