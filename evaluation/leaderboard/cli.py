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
import csv
import io
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from evaluation import __version__
from evaluation.challenges import challenge_class, challenge_names
from evaluation.cli import failure, whole_number
from evaluation.errors import EXIT_INTERNAL, EXIT_OK, EXIT_SETUP, SetupError
from evaluation.final_ranking import TIE_METHODS
from evaluation.framework import default_workers, log
from evaluation.grand_challenge import (BAKED_GROUND_TRUTH_DIR, METRICS_FILE, UPLOADED_GROUND_TRUTH_DIR, metrics_json,
                                        resolve_ground_truth_dir)

REPOSITORY_GROUND_TRUTH = Path(__file__).resolve().parents[2] / "ground-truth"  # the images' baked ground truth
RESERVED_NAMES = frozenset({"pairwise", "kendall_tau"})  # keys beside the submissions in statistics
DEFAULT_RESAMPLES = 1000


class UsageError(Exception):
    pass


def _parser(names: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation.leaderboard",
        description="Rank submissions by the challenge's official rule, with paired-bootstrap statistics and a "
                    "report. Each SUBMISSION is a folder laid out like the container's /input (or, with --metrics, "
                    "a metrics.json file or a folder holding one); its folder name names it.",
        epilog=f"Challenges: {', '.join(names)}.")
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
                        help="ranks of tied values inside a Borda count (HECKTOR task 1): mean of their positions "
                             "(average, the default) or the best one (min)")
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


def read_metrics_file(challenge: str, path: Path) -> dict[str, Any]:
    """A metrics.json of --metrics mode, or ValueError saying why it cannot be ranked."""
    file = path / METRICS_FILE if path.is_dir() else path
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{file} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{file} cannot be read as JSON ({error})") from None
    if not isinstance(document, dict):
        raise ValueError(f"{file} is not a JSON object")
    written_by = (document.get("evaluation") or {}).get("challenge") if isinstance(document.get("evaluation"), dict) else None
    if written_by is not None and written_by != challenge:
        raise ValueError(f"{file} was written by the {written_by} evaluation, not {challenge}")
    return document


# ---- outputs ------------------------------------------------------------------------------------


def document_json(document: Any) -> str:
    return json.dumps(document, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.partial")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path


def ranking_csv(leaderboard: dict[str, Any]) -> str:
    """rank,submission,<value columns>,<partial ranks>: the leaderboard's table for people."""
    entries = leaderboard["entries"]
    values = list(dict.fromkeys(path for entry in entries for path in entry["values"]))
    partial = list(dict.fromkeys(name for entry in entries for name in entry["partial_ranks"]))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["rank", "submission", *values, *partial])
    for entry in entries:
        cells = [entry["values"].get(p) for p in values] + [entry["partial_ranks"].get(p) for p in partial]
        writer.writerow([entry["rank"], entry["submission"], *("" if c is None else repr(c) for c in cells)])
    return buffer.getvalue()


# ---- the command --------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    from evaluation.leaderboard.standings import entries, rank_leaderboard

    started = time.perf_counter()
    challenge = challenge_class(args.challenge)
    if not challenge.final_rankings:
        raise SetupError(f"{args.challenge} declares no final ranking rule.")
    submissions = named_submissions(args.submissions, args.metrics)
    report_module = _report_module()  # before any scoring: a missing library must not waste the run
    log(f"evaluation {__version__}: final ranking of {len(submissions)} submission(s) for {challenge.title}")
    args.output.mkdir(parents=True, exist_ok=True)
    for stale in sorted((args.output / "charts").glob("*.vl.json")):
        stale.unlink()  # an earlier run's charts: this run's report writes its own
    notes: list[str] = []
    excluded: list[dict[str, Any]] = []
    documents: dict[str, dict[str, Any]] = {}
    outcomes = {}
    evaluation = spec = None
    workers = 1

    if args.metrics:
        for name, path in submissions:
            try:
                documents[name] = read_metrics_file(args.challenge, path)
            except ValueError as error:
                excluded.append({"submission": name, "exit_code": None, "error": str(error)})
    else:
        from evaluation.leaderboard.scoring import ChallengeSpec, score_submissions

        ground_truth_dir = _ground_truth_dir(args.ground_truth, args.challenge)
        settings = challenge.settings_class.from_ground_truth(ground_truth_dir)
        log(f"Ground truth: {ground_truth_dir}")
        evaluation = challenge(ground_truth_dir, settings)
        spec = ChallengeSpec(args.challenge, str(ground_truth_dir.resolve()), settings)
        workers = default_workers(args.workers)
        for outcome in score_submissions(evaluation, spec, submissions, workers, args.scheduler):
            folder = args.output / "submissions" / outcome.name
            if outcome.metrics is None:
                excluded.append({"submission": outcome.name, "exit_code": outcome.exit_code, "error": outcome.error})
                if (folder / METRICS_FILE).is_file():
                    (folder / METRICS_FILE).unlink()  # an earlier run's: this one has none
                log(f"Excluded {outcome.name} (exit {outcome.exit_code}): {outcome.error}")
                continue
            write_text(folder / METRICS_FILE, metrics_json(outcome.metrics, challenge.ranked_paths))
            documents[outcome.name] = outcome.metrics
            outcomes[outcome.name] = outcome

    leaderboards, standings = [], []
    if documents:
        for rule in challenge.final_rankings:
            standing = rank_leaderboard(rule, documents, args.tie_method, notes)
            standings.append(standing)
            leaderboards.append({"name": rule.name, "rule": standing.rule.rule(args.tie_method),
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
        write_text(args.output / f"ranking-{leaderboard['name']}.csv", ranking_csv(leaderboard))
    curves = {}
    if evaluation is not None:
        for name, outcome in outcomes.items():
            curves[name] = evaluation.ranking_curves(outcome.results, outcome.metrics)
    # Columns titled as the leaderboards declare them (this phase's settings first, when scored).
    declared = (*(challenge.phase_leaderboards(settings) if evaluation is not None else ()), *challenge.leaderboards)
    titles = {**challenge.value_titles, **report_module.column_titles(declared)}
    report_module.write_report(args.output, _with_distributions(ranking, distributions), curves, titles)
    path = write_text(args.output / "ranking.json", document_json(ranking))  # last: the success marker
    log(f"Wrote {path} ({len(documents)} ranked, {len(excluded)} excluded) in {time.perf_counter() - started:.1f} s.")
    return EXIT_OK


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
    resampled = resample_submissions(evaluation, spec, {name: o.results for name, o in outcomes.items()},
                                     resamples, seed, workers, args.scheduler)
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
                                                                          args.alpha, notes)
        document["leaderboards"][standing.rule.name] = board
    return document, distributions


def _with_distributions(ranking: dict[str, Any], distributions: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    """A copy of the ranking for the report, with each submission's rank distribution (the
    rank-stability chart); ranking.json keeps the documented keys only."""
    if ranking["statistics"] is None:
        return ranking
    copy = json.loads(json.dumps(ranking))
    for board, shares in distributions.items():
        for name, distribution in shares.items():
            copy["statistics"]["leaderboards"][board][name]["rank_distribution"] = distribution
    return copy


def main(argv: list[str] | None = None) -> int:
    names = challenge_names()
    parser = _parser(names)
    args = parser.parse_args(argv)
    if args.challenge not in names:
        parser.error(f"unknown challenge {args.challenge!r}; known challenges: {', '.join(names)}")
    try:
        return run(args)
    except UsageError as error:
        parser.error(str(error))
    except ModuleNotFoundError as error:
        if not error.name or error.name.partition(".")[0] == "evaluation":
            raise
        from evaluation.launch import missing_dependency

        print(f"The final ranking could not run: {missing_dependency(error.name, 'requirements-leaderboard.txt')}",
              file=sys.stderr, flush=True)
        return EXIT_SETUP
    except Exception as error:
        code, line = failure(error)
        if code == EXIT_INTERNAL:
            traceback.print_exc()
        line = line.replace("through no fault of the submission", "through no fault of the submissions")
        sys.stdout.flush()
        print(line, file=sys.stderr, flush=True)
        return EXIT_SETUP if code == 1 else code
    return EXIT_OK
