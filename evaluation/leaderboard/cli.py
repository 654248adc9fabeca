"""python -m evaluation.leaderboard CHALLENGE SUBMISSION... --output DIR [options]

The final ranking across submissions by the challenge's official rule (docs/final-ranking.md):
every submission re-scored against the ground truth as the container scores it (or, with
--metrics, read from metrics.json files), ranked, and compared with paired-bootstrap statistics.

Writes DIR/ranking.json, DIR/ranking-<leaderboard>.csv, DIR/report.html, DIR/charts/*.vl.json
and DIR/submissions/<name>/metrics.json. Exit 0 when ranking.json is written, 2 for a usage
error, 3 for a ground-truth or setup problem; an invalid submission is excluded, never fatal.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import errno
import io
import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evaluation import __version__
from evaluation.challenges import challenge_class, named_challenge
from evaluation.declarations.ranking_rules import TIE_METHODS, ranking_paths
from evaluation.errors import EXIT_OK, SetupError, UsageError, machine_limit
from evaluation.framework import log
from evaluation.interruption import finished, stopped_by_sigterm
from evaluation.launch import CommandParser, run_command, whole_number
from evaluation.leaderboard.scoring import BLAMED
from evaluation.platform.locations import (
    BAKED_GROUND_TRUTH_DIR,
    METRICS_FILE,
    UPLOADED_GROUND_TRUTH_DIR,
    resolve_ground_truth_dir,
)
from evaluation.platform.outputs import metrics_json, value_at_path, write_atomically
from evaluation.run import default_workers
from evaluation.scheduling import stop_workers

REPOSITORY_GROUND_TRUTH = Path(__file__).resolve().parents[2] / "ground-truth"  # the images' baked ground truth
RESERVED_NAMES = frozenset({"pairwise", "kendall_tau"})  # keys beside the submissions in statistics
DEFAULT_RESAMPLES = 1000


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="python -m evaluation.leaderboard",
        description="Rank submissions by the challenge's official rule, with paired-bootstrap statistics and a "
                    "report. Each SUBMISSION is a folder laid out like the container's /input (or, with --metrics, "
                    "a metrics.json file or a folder holding one); its folder name names it.",
        epilog="Challenges: see python -m evaluation --list.")
    parser.add_argument("challenge", help="the challenge whose rule ranks the submissions")
    parser.add_argument("submissions", nargs="+", type=Path, metavar="SUBMISSION")
    parser.add_argument("--output", type=Path, required=True, help="folder for ranking.json, the CSV files, "
                                                                   "report.html, charts/ and submissions/")
    parser.add_argument("--ground-truth", type=Path, default=None,
                        help="ground-truth folder (default: the platform's paths when present, else this "
                             "repository's ground-truth/<challenge>/)")
    parser.add_argument("--metrics", action="store_true", help="rank existing metrics.json files (no re-scoring, "
                                                               "no statistics)")
    parser.add_argument("--resamples", type=whole_number(0), default=DEFAULT_RESAMPLES,
                        help="bootstrap resamples of the statistics (default: %(default)s; 0: no statistics)")
    parser.add_argument("--seed", type=whole_number(0), default=None,
                        help="seed of the resamples (default: the phase's seed setting, else 0)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=whole_number(1), default=None,
                       help="processes scoring on this machine (default: the CPU count)")
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="score on an existing Dask distributed cluster (e.g. tcp://host:8786); its workers "
                            "must see the submissions and the ground truth at the same paths")
    parser.add_argument("--alpha", type=_probability, default=0.05,
                        help="significance level of the adjacent-rank tests, Holm-adjusted (default: %(default)s)")
    parser.add_argument("--tie-method", choices=TIE_METHODS, default="average",
                        help="ranks of tied values inside a rule that ranks then aggregates (HECKTOR task 1's Borda "
                             "count, a mean of ranks that declares no tie method of its own): mean of their "
                             "positions (average, the default) or the best one (min)")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 1")
    return value


# ---- inputs -------------------------------------------------------------------------------------


def submission_name(path: Path, metrics_mode: bool) -> str:
    """The folder's base name; with --metrics, the file's stem unless it is called metrics.json."""
    absolute = Path(os.path.abspath(path))
    if metrics_mode and not absolute.is_dir():
        return absolute.parent.name if absolute.name == METRICS_FILE else absolute.stem
    return absolute.name


def named_submissions(paths: list[Path], metrics_mode: bool) -> list[tuple[str, Path]]:
    named: dict[str, Path] = {}
    for path in paths:
        if not path.exists():
            raise UsageError(f"The submission {path} does not exist.")
        if not metrics_mode and not path.is_dir():
            raise UsageError(f"The submission {path} is not a folder (without --metrics, each submission is a folder "
                             f"laid out like the container's /input).")
        name = submission_name(path, metrics_mode)
        if not name:
            raise UsageError(f"The submission {path} has no name (give its folder, not the root).")
        if name in named:
            raise UsageError(f"Two submissions are named {name!r} ({named[name]} and {path}): each needs its own "
                             f"folder name.")
        if name in RESERVED_NAMES:
            raise UsageError(f"A submission cannot be named {name!r}: the statistics use that key (rename its folder).")
        named[name] = path
    return sorted(named.items())


MAX_METRICS_BYTES = 64 * 2**20  # a metrics.json is kilobytes; more is not one (and must not fill the memory)


def read_metrics_file(challenge: str, path: Path, ranked_paths: tuple[str, ...] = ()) -> dict[str, Any]:
    """A metrics.json of --metrics mode, or ValueError saying why it cannot be ranked."""
    file = path / METRICS_FILE if path.is_dir() else path
    try:
        data = _read_regular_file(file, MAX_METRICS_BYTES)
        if data is None:
            raise ValueError(f"{file} is not a regular file")
        if len(data) > MAX_METRICS_BYTES:
            raise ValueError(f"{file} is larger than {MAX_METRICS_BYTES // 2**20} MiB, too large for a metrics.json")
        document = json.loads(data.decode("utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{file} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"{file} cannot be read as JSON ({error})") from None
    except ValueError as error:  # ours above, or an integer longer than Python converts
        raise ValueError(str(error) if str(error).startswith(str(file)) else
                         f"{file} cannot be read as JSON ({error})") from None
    if not isinstance(document, dict):
        raise ValueError(f"{file} is not a JSON object")
    written = document.get("evaluation")
    written_by = written.get("challenge") if isinstance(written, dict) else None
    if written_by is not None and written_by != challenge:
        raise ValueError(f"{file} was written by the {written_by} evaluation, not {challenge}")
    for ranked in ranked_paths:
        value = value_at_path(document, ranked)
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                float(value)
            except OverflowError:
                raise ValueError(f"{file}: {ranked} is an integer of {len(str(abs(value)))} digits, too large to "
                                 f"rank as a number") from None
    return document


def _read_regular_file(file: Path, max_bytes: int) -> bytes | None:
    """At most max_bytes + 1 bytes of `file`, or None when it is not a regular file: opened
    without waiting (a named pipe with no writer would block the open) and checked before any
    read (a device would be read without end). OSError when it cannot be opened."""
    descriptor = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            return None
        size = info.st_size
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            return handle.read(min(size, max_bytes) + 1)  # read(n) reserves n bytes at once
    finally:
        os.close(descriptor)


def ground_truth_folders(explicit: Path | None) -> list[tuple[str, Path]]:
    """Every ground truth the output must stay apart from, in both modes: this repository's
    ground-truth/ (every challenge's, and what export.sh ships from it), the platform's paths,
    and the --ground-truth given."""
    folders = [("the ground-truth folder", explicit)] if explicit is not None else []
    folders.append(("the repository's ground truth", REPOSITORY_GROUND_TRUTH))
    folders += [("the platform's ground truth", path) for path in (BAKED_GROUND_TRUTH_DIR, UPLOADED_GROUND_TRUTH_DIR)
                if path.is_dir()]
    return folders


def check_output(output: Path, inputs: list[tuple[str, Path]]) -> None:
    """Before anything is written: --output is a folder (or can be one), apart from every input
    (neither equal to, inside nor containing a ground truth or a submission, links followed), and
    none of the paths the command writes through is a link (nothing outside --output is written
    or deleted)."""
    if os.path.lexists(output) and not output.is_dir():
        raise UsageError(f"--output {output} exists and is not a folder: give a folder.")
    resolved = Path(os.path.realpath(output))
    for what, path in inputs:
        other = Path(os.path.realpath(path))
        if resolved == other or other in resolved.parents:
            raise UsageError(f"--output {output} is {'' if resolved == other else 'inside '}{what} ({path}): give a "
                             f"folder apart from the inputs.")
        if resolved in other.parents:
            raise UsageError(f"--output {output} contains {what} ({path}): give a folder apart from the inputs.")
    links = [output / name for name in (CHARTS, "submissions", "report.html", MANIFEST, LOCK)]
    for folder in (output / CHARTS, output / "submissions"):
        if folder.is_dir() and not folder.is_symlink():
            links += sorted(folder.iterdir())
    for path in links:
        if path.is_symlink():
            raise UsageError(f"{path} is a link: the final ranking writes only inside --output {output}; remove the "
                             f"link or give another --output.")


def _team_folder(path: Path, metrics_mode: bool) -> Path:
    return path.parent if metrics_mode and not path.is_dir() else path


# ---- outputs ------------------------------------------------------------------------------------


def document_json(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


CHARTS = "charts"
MANIFEST = ".leaderboard-outputs.json"  # what the last run wrote: the only files a later run may delete
LOCK = ".leaderboard-lock"  # held (flock) by the run writing into the folder; removed when it ends


def write_json(path: Path, document: Any) -> Path:
    """document_json(document) written as write_text writes, streamed: with indentation, json
    builds the text from millions of small pieces (1,000 teams: a million pairwise entries), and
    the whole list of them would be held at once."""
    def write(handle) -> None:
        json.dump(document, handle, indent=2, ensure_ascii=True, allow_nan=False)
        handle.write("\n")

    return write_text(path, write)


def write_text(path: Path, text) -> Path:
    """The whole file or none (the evaluation's platform/outputs.py write_atomically: a new private
    temporary file beside it, never a name a link could be planted at, then renamed); a failed
    write (no space left, say) removes the temporary file and is exit 3 in one line. `text` is
    the text, or a function writing it to the open file. Not forced to disk file by file: a run
    writes one metrics.json per team, and one that a crash cut short is run again."""
    try:
        return write_atomically(path.parent, text, path.name, sync=False)
    except OSError as error:
        if machine_limit(error):
            raise  # too many open files: the command's line about the machine's limit
        raise SetupError(f"{path} could not be written ({error.strerror or error}).") from None


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # OWASP's CSV injection rule


def text_cell(text: Any) -> str:
    """A text cell a spreadsheet shows as text, never runs as a formula: a leading =, +, -, @, tab
    or carriage return gets a single quote before it (a team folder named "=1+2", say)."""
    text = str(text)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _number_cell(value: Any) -> str:
    return "" if value is None else repr(value)


def ranking_csv(leaderboard: dict[str, Any], statistics: dict[str, Any] | None = None,
                excluded: list[dict[str, Any]] = ()) -> str:
    """rank,submission,<value columns>,<partial ranks>,<each value's 95% interval>,exit_code,error:
    the leaderboard's table for people, then the excluded submissions (no rank; their exit code
    and line). Text cells are neutralised against formula injection; numbers stay numbers."""
    entries = leaderboard["entries"]
    values = list(dict.fromkeys(path for entry in entries for path in entry["values"]))
    partial = list(dict.fromkeys(name for entry in entries for name in entry["partial_ranks"]))
    board = ((statistics or {}).get("leaderboards") or {}).get(leaderboard["name"]) or {}
    intervals = [(path, bound) for path in values for bound in ("low", "high")]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([text_cell(c) for c in ["rank", "submission", *values, *partial,
                                            *(f"{path} 95% CI {bound}" for path, bound in intervals),
                                            "exit_code", "error"]])
    for entry in entries:
        cells = [entry["values"].get(p) for p in values] + [entry["partial_ranks"].get(p) for p in partial]
        value_ci = (board.get(entry["submission"]) or {}).get("value_ci") or {}
        bounds = [(value_ci.get(path) or [None, None])[bound == "high"] for path, bound in intervals]
        writer.writerow([entry["rank"], text_cell(entry["submission"]), *map(_number_cell, cells),
                         *map(_number_cell, bounds), "", ""])
    for item in excluded:
        writer.writerow(["", text_cell(item["submission"]), *[""] * (len(values) + len(partial) + len(intervals)),
                         _number_cell(item["exit_code"]), text_cell(item["error"])])
    return buffer.getvalue()


# ---- the command --------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    challenge = challenge_class(args.challenge)
    if not challenge.final_rankings:
        raise SetupError(f"{args.challenge} declares no final ranking rule.")
    submissions = named_submissions(args.submissions, args.metrics)
    ground_truth_dir = None if args.metrics else _ground_truth_dir(args.ground_truth, args.challenge)
    # --ground-truth is kept apart from the output with --metrics too (the ground truth is never written).
    inputs = [*ground_truth_folders(ground_truth_dir or args.ground_truth),
              *((f"the submission {name}", _team_folder(path, args.metrics)) for name, path in submissions)]
    check_output(args.output, inputs)
    report_module = _report_module()  # before any scoring: a missing library must not waste the run
    if args.scheduler is not None and not args.metrics:
        from evaluation.scheduling import probe_scheduler

        probe_scheduler(args.scheduler)
    log(f"evaluation {__version__}: final ranking of {len(submissions)} submission(s) for {challenge.title}")
    try:
        args.output.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SetupError(f"The output folder {args.output} cannot be used ({error.strerror or error}).") from None
    with output_lock(args.output):
        try:
            (args.output / "ranking.json").unlink(missing_ok=True)  # an earlier run's marker: a failed run leaves none
        except OSError as error:
            raise SetupError(f"The output folder {args.output} cannot be used ({error.strerror or error}).") from None
        return _rank(args, challenge, submissions, ground_truth_dir, report_module, started)


def _rank(args: argparse.Namespace, challenge, submissions: list[tuple[str, Path]], ground_truth_dir: Path | None,
          report_module, started: float) -> int:
    """The run once --output is checked and locked: scoring (or reading), ranking, statistics,
    the files, ranking.json last."""
    from evaluation.leaderboard.standings import entries, rank_leaderboard

    previous = _previous_outputs(args.output)
    written: list[Path] = []
    notes: list[str] = []
    excluded: list[dict[str, Any]] = []
    documents: dict[str, dict[str, Any]] = {}
    outcomes = {}
    evaluation = spec = None
    workers = 1

    if args.metrics:
        ranked_paths = ranking_paths(challenge.final_rankings)
        for name, path in submissions:
            try:
                documents[name] = read_metrics_file(args.challenge, path, ranked_paths)
            except ValueError as error:
                excluded.append({"submission": name, "exit_code": None, "error": str(error)})
    else:
        from evaluation.leaderboard.scoring import score_submissions
        from evaluation.scheduling import ChallengeSpec

        settings = challenge.settings_class.from_ground_truth(ground_truth_dir)
        log(f"Ground truth: {ground_truth_dir}")
        evaluation = challenge(ground_truth_dir, settings)
        spec = ChallengeSpec(args.challenge, str(ground_truth_dir.resolve()), settings)
        workers = default_workers(args.workers)
        for outcome in score_submissions(evaluation, spec, submissions, workers, args.scheduler):
            folder = args.output / "submissions" / outcome.name
            if outcome.metrics is None:
                excluded.append({"submission": outcome.name, "exit_code": outcome.exit_code, "error": outcome.error})
                log(f"Excluded {outcome.name} (exit {outcome.exit_code}): {outcome.error}")
                continue
            written.append(write_text(folder / METRICS_FILE, metrics_json(outcome.metrics, challenge.ranked_paths)))
            documents[outcome.name] = outcome.metrics
            outcomes[outcome.name] = outcome

    leaderboards, standings = [], []
    if documents:
        for rule in challenge.final_rankings:
            standing = rank_leaderboard(rule, documents, args.tie_method, notes)
            standings.append(standing)
            leaderboards.append({"name": rule.name, "rule": standing.rule.describe(args.tie_method),
                                 "entries": entries(standing)})
    else:
        notes.append("No submission could be ranked.")

    statistics, distributions = None, {}
    if args.metrics:
        notes.append("Statistics need per-case results: rerun without --metrics to re-score the submissions.")
    elif args.resamples == 0:
        notes.append("Statistics not computed (--resamples 0).")
    elif standings:
        statistics, distributions = _statistics(evaluation, spec, workers, standings, outcomes, args, notes)

    ranking = {"challenge": args.challenge, "leaderboards": leaderboards, "statistics": statistics,
               "excluded": excluded, "notes": notes}
    for leaderboard in leaderboards:
        written.append(write_text(args.output / f"ranking-{leaderboard['name']}.csv",
                                  ranking_csv(leaderboard, statistics, excluded)))
    curves = {}
    if evaluation is not None:
        for name, outcome in outcomes.items():
            curves[name] = evaluation.ranking_curves(outcome.results, outcome.metrics)
    # Columns titled as the leaderboards declare them (this phase's settings first, when scored).
    declared = (*(challenge.phase_leaderboards(settings) if evaluation is not None else ()), *challenge.leaderboards)
    titles = {**challenge.value_titles, **report_module.column_titles(declared)}
    for rule in challenge.final_rankings:  # the values a rule derives (a mean over cases): no column's path
        titles = {**rule.value_titles, **titles}
    partial_titles = {standing.rule.name: standing.rule.partial_titles for standing in standings}
    log(f"Writing the report ({args.output / 'report.html'} and its charts).")
    # Each file whole or not at all (write_text): a full disk leaves no half-written chart or page.
    written += report_module.write_report(args.output, _with_distributions(ranking, distributions), curves, titles,
                                          write=write_text, partial_titles=partial_titles)
    _remove_stale(args.output, previous, written)
    finished()  # from here a SIGTERM is ignored: the run ends with ranking.json, exit 0
    path = write_json(args.output / "ranking.json", ranking)  # last: the success marker
    log(f"Wrote {path} ({len(documents)} ranked, {len(excluded)} excluded) in {time.perf_counter() - started:.1f} s.")
    return EXIT_OK


MAX_MANIFEST_BYTES = 64 * 2**20  # a path per file written: 100,000 teams fit


def _previous_outputs(output: Path) -> list[str]:
    """What the last run in this folder wrote (its manifest), as relative paths; [] without one
    (or with one that is not a regular file, too large or not JSON: nothing is deleted then)."""
    try:
        data = _read_regular_file(output / MANIFEST, MAX_MANIFEST_BYTES)
        if data is None or len(data) > MAX_MANIFEST_BYTES:
            return []
        listed = json.loads(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return []
    return [item for item in listed if isinstance(item, str)] if isinstance(listed, list) else []


def _remove_stale(output: Path, previous: list[str], written: list[Path]) -> None:
    """Deletes what the last run wrote and this one did not (a chart of a team now excluded, an
    excluded team's metrics.json), then records what this run wrote. Only regular files named in
    the last manifest, inside --output and of the kinds the command writes, are ever deleted."""
    now = sorted({path.relative_to(output).as_posix() for path in written} | {"ranking.json"})
    for relative in sorted(set(previous) - set(now)):
        parts = Path(relative).parts
        ours = (len(parts) == 2 and parts[0] == CHARTS and parts[1].endswith(".vl.json")) or \
               (len(parts) == 3 and parts[0] == "submissions" and parts[2] == METRICS_FILE) or \
               (len(parts) == 1 and parts[0].startswith("ranking-") and parts[0].endswith(".csv"))
        path = output / relative
        if not ours or ".." in parts or any(p.is_symlink() for p in [path, *list(path.parents)[: len(parts) - 1]]):
            continue
        if path.is_file():
            path.unlink()
            log(f"Removed {path}: written by the previous run in {output}, not by this one.")
    write_text(output / MANIFEST, document_json(now))


def _ground_truth_dir(explicit: Path | None, challenge: str) -> Path:
    if explicit is None and not BAKED_GROUND_TRUTH_DIR.is_dir() and not UPLOADED_GROUND_TRUTH_DIR.is_dir():
        explicit = REPOSITORY_GROUND_TRUTH / challenge
    return resolve_ground_truth_dir(explicit, challenge)


def _report_module():
    import altair  # noqa: F401  the report's libraries (requirements-leaderboard.txt), checked up front
    import vl_convert  # noqa: F401

    import evaluation.leaderboard.report as report

    return report


def _statistics(evaluation, spec, workers, standings, outcomes, args, notes):
    import numpy as np

    from evaluation.leaderboard.scoring import resample_submissions
    from evaluation.leaderboard.statistics import leaderboard_statistics

    default_seed = getattr(evaluation.settings, "seed", 0)
    requested_seed = args.seed if args.seed is not None else (default_seed if isinstance(default_seed, int) else 0)
    resamples, seed, note = evaluation.resample_plan(args.resamples, requested_seed)
    if note:
        notes.append(note)
    log(f"Statistics: {resamples} paired resamples (seed {seed}) of {len(outcomes)} submission(s).")
    if any(standing.rule.paths for standing in standings):  # the challenge recomputes submission-level values
        resampled = resample_submissions(evaluation, spec, {name: o.results for name, o in outcomes.items()},
                                         resamples, seed, workers, args.scheduler)
    else:  # rules of per-case values only: the case weights are drawn here
        resampled = {name: {} for name in outcomes}
    unavailable = sorted({value for value in resampled.values() if isinstance(value, str)})
    if unavailable:
        notes.append(f"No statistics: {unavailable[0]}.")
        return None, {}
    document = {"resamples": resamples, "seed": seed, "leaderboards": {}}
    distributions = {}
    for standing in standings:
        # A value a submission's metrics.json lacks (csv2026's score_total without timing) is
        # undefined in every resample too: it ranks last there, as in the final ranking.
        have = {name: {path: resampled[name].get(path, np.full(resamples, np.nan)) for path in standing.rule.paths}
                for name in standing.names}
        board, distributions[standing.rule.name] = leaderboard_statistics(standing, have, args.tie_method,
                                                                          args.alpha, notes, resamples, seed)
        document["leaderboards"][standing.rule.name] = board
    return document, distributions


def _with_distributions(ranking: dict[str, Any], distributions: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    """A copy of the ranking for the report, with each submission's rank distribution (the
    rank-stability chart); ranking.json keeps the documented keys only."""
    if ranking["statistics"] is None:
        return ranking
    # Copies of the dicts on the way to each submission's statistics only: the pairwise tables (a
    # million entries for 1,000 teams) are shared, not copied.
    boards = dict(ranking["statistics"]["leaderboards"])
    for board, shares in distributions.items():
        boards[board] = dict(boards[board])
        for name, distribution in shares.items():
            boards[board][name] = {**boards[board][name], "rank_distribution": distribution}
    return {**ranking, "statistics": {**ranking["statistics"], "leaderboards": boards}}


class OutputInUse(SetupError):
    """Another final ranking holds the output folder's lock: exit 3, this line as it is."""

    framed = True


@contextlib.contextmanager
def output_lock(output: Path) -> Iterator[None]:
    """The run's hold on --output: an exclusive flock on output/.leaderboard-lock (created, never
    through a link), so that a second final ranking into the same folder is refused at once (exit
    3, one line) instead of mixing its files with the first one's. The file is removed at the end,
    the lock still held; a run that waited on a removed file takes the new one."""
    import fcntl

    path = output / LOCK
    while True:
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.EISDIR):
                raise UsageError(f"{path} is {'a link' if error.errno == errno.ELOOP else 'a folder'}: the final "
                                 f"ranking keeps its lock there; remove it or give another --output.") from None
            raise SetupError(f"The output folder {output} cannot be used ({error.strerror or error}).") from None
        try:
            held = os.fstat(descriptor)
            if not stat.S_ISREG(held.st_mode):
                raise UsageError(f"{path} is not a regular file: the final ranking keeps its lock there; remove it or "
                                 f"give another --output.")
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise OutputInUse(f"Another final ranking is writing into {output} (it holds {path}); wait for it "
                                  f"to end, or give another --output.") from None
            except OSError as error:
                raise SetupError(f"The output folder {output} cannot be locked ({error.strerror or error}).") from None
            try:
                now = os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                break
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)  # removed by the run that held it meanwhile: take the new one
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(descriptor)


STOPPED = ("The final ranking was stopped (SIGTERM) before it finished; no ranking.json was written (the files "
           "already replaced are whole).")


def main(argv: list[str] | None = None) -> int:
    # The ground truth or the setup failing stops the whole ranking: no fault of the submissions.
    # SIGTERM: the pool's workers killed at once, then the main thread unwinds (each file being
    # written removed on the way, the lock released), one last line, exit 143.
    with stopped_by_sigterm(STOPPED, on_stop=stop_workers):
        return run_command(_main, argv, blamed=BLAMED, requirements="requirements-leaderboard.txt")


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    named_challenge(args.challenge)  # its folder only; every folder only to name the known ones
    return run(args)
