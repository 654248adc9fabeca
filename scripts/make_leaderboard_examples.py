"""Regenerate the bundled example submissions of the final ranking: test/<challenge>/leaderboard/,
one folder per team, each laid out exactly like test/<challenge>/input/ (a container's /input):

    python scripts/make_leaderboard_examples.py rare26 [isic2018 ...] [--force]
    python -m evaluation.leaderboard rare26 test/rare26/leaderboard/* --output DIR

    team-a   Example.submission(ground-truth/<challenge>, seed LINEUPS[challenge].seeds[0])
    team-b   the same with seeds[1]
    team-c   a byte copy of test/<challenge>/input/ (the bundled example submission)
    team-d   a byte copy of team-b: tied with it at every ranked value
    team-x   a byte copy of test/<challenge>/invalid/<LINEUPS[challenge].invalid>/input/: exits 1,
             so the final ranking lists it under `excluded`

The seeds were picked once so that the ranked values of team-a, team-b and team-c clearly differ
(for camelyon16 the slide-AUC and FROC leaderboards even order them in reverse); the same seed
writes the same bytes. Every team is then scored by the evaluation's command line (python -m
evaluation CHALLENGE --input <team> --ground-truth ground-truth/<challenge>): the valid ones must
exit 0, team-x must exit 1 with its bundled expected_error.txt line, and each team's ranked
values are printed.

The ground truth and the bundled example are always read from this repository; `root` (tests use
a temporary one) is where test/<challenge>/leaderboard/ is written. An existing leaderboard/ is
refused unless --force, which replaces that folder only (it holds nothing but what this script
writes). The folders are built in a scratch folder and moved in once every check passed.
"""

import argparse
import json
import math
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation import examples  # noqa: E402
from evaluation.examples.organizer import CommandError, ExamplesBug, generated, run_evaluation  # noqa: E402
from evaluation.grand_challenge import value_at_path  # noqa: E402

LEADERBOARD = "leaderboard"  # test/<challenge>/leaderboard/<team>/
SEEDED_TEAMS = ("team-a", "team-b")  # Example.submission with the lineup's seeds
EXAMPLE_TEAM = "team-c"  # the bundled example submission
TIED_TEAM, TIED_WITH = "team-d", "team-b"  # a byte copy: the tie
INVALID_TEAM = "team-x"  # a bundled invalid submission: excluded from the ranking


@dataclass(frozen=True)
class Lineup:
    seeds: tuple[int, int]  # team-a, team-b
    invalid: str  # the folder of test/<challenge>/invalid/ team-x copies


LINEUPS = {
    "camelyon16": Lineup(seeds=(4, 0), invalid="coordinate-outside-slide"),
    "csv2026": Lineup(seeds=(3, 0), invalid="malformed-class"),
    "hecktor2025-task1": Lineup(seeds=(0, 7), invalid="stray-label"),
    "hecktor2025-task2": Lineup(seeds=(0, 1), invalid="nan-risk"),
    "hecktor2025-task3": Lineup(seeds=(11, 1), invalid="half-status"),
    "isic2018": Lineup(seeds=(7, 4), invalid="missing-image"),
    "isic2019": Lineup(seeds=(0, 1), invalid="missing-category"),
    "rare26": Lineup(seeds=(8, 3), invalid="wrong-length"),
}

# The metrics.json paths each challenge's official final ranking reads, primary key first
# (csv2026 ranks score_without_time only when no submission has timing).
RANKED_PATHS = {
    "camelyon16": ("aggregates.slide_auc", "aggregates.froc_score"),
    "csv2026": ("aggregates.score_total", "aggregates.score_without_time"),
    "hecktor2025-task1": ("aggregates.gtvp_dsc_mean", "aggregates.gtvn_dsc_agg", "aggregates.gtvn_f1_agg"),
    "hecktor2025-task2": ("aggregates.c_index",),
    "hecktor2025-task3": ("aggregates.balanced_accuracy", "aggregates.specificity"),
    "isic2018": ("aggregate.balanced_accuracy", "aggregate.auc"),
    "isic2019": ("aggregate.balanced_accuracy", "aggregate.auc"),
    "rare26": ("Score",),
}

TEAMS = (*SEEDED_TEAMS, EXAMPLE_TEAM, TIED_TEAM, INVALID_TEAM)


def write_teams(challenge: str, folder: Path) -> None:
    """Every team's submission folder in `folder` (which must exist and be empty)."""
    lineup = LINEUPS[challenge]
    ground_truth = ROOT / "ground-truth" / challenge
    submission = examples.example(challenge).submission
    for team, seed in zip(SEEDED_TEAMS, lineup.seeds):
        (folder / team).mkdir()
        generated(lambda: submission(ground_truth, folder / team, seed), f"Writing {challenge} {team} (seed {seed})")
    shutil.copytree(ROOT / "test" / challenge / "input", folder / EXAMPLE_TEAM)
    shutil.copytree(folder / TIED_WITH, folder / TIED_TEAM)
    shutil.copytree(ROOT / "test" / challenge / "invalid" / lineup.invalid / "input", folder / INVALID_TEAM)


def ranked_values(challenge: str, metrics: bytes) -> dict[str, float | None]:
    document = json.loads(metrics)
    return {path: value_at_path(document, path) for path in RANKED_PATHS[challenge]}


def checked_scores(challenge: str, folder: Path) -> dict[str, dict[str, float | None]]:
    """Each valid team's ranked values; ExamplesBug unless every valid team exits 0 and team-x
    exits 1 with the line its bundled invalid submission expects."""
    ground_truth = ROOT / "ground-truth" / challenge
    values = {}
    for team in TEAMS:
        run = run_evaluation(challenge, folder / team, ground_truth)
        if team == INVALID_TEAM:
            expected = (ROOT / "test" / challenge / "invalid" / LINEUPS[challenge].invalid / "expected_error.txt")
            if run.code != 1 or run.metrics is not None or run.last_error_line != expected.read_text().strip():
                raise ExamplesBug(f"{challenge} {team} exited {run.code}, not 1 with the line of {expected}: "
                                  f"{run.last_error_line or 'no message'}")
            print(f"  {team}: excluded (exit 1): {run.last_error_line}", flush=True)
            continue
        if run.code != 0 or run.metrics is None:
            raise ExamplesBug(f"{challenge} {team} exited {run.code}: {run.last_error_line or 'no message'}")
        values[team] = ranked_values(challenge, run.metrics)
        shown = ", ".join(f"{path} = {value}" for path, value in values[team].items())
        print(f"  {team}: {shown}", flush=True)
    primary = [values[team][RANKED_PATHS[challenge][0]] for team in values]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in primary) or len(set(primary)) < 3:
        raise ExamplesBug(f"{challenge}: the teams' {RANKED_PATHS[challenge][0]} values {primary} do not make a "
                          f"ranking (three distinct finite values expected); pick other seeds in LINEUPS.")
    return values


def main(challenges: list[str], force: bool = False, root: Path = ROOT) -> None:
    targets = {challenge: root / "test" / challenge / LEADERBOARD for challenge in challenges}
    existing = [str(target.relative_to(root)) for target in targets.values() if target.exists()]
    if existing and not force:
        raise CommandError(f"{', '.join(existing)} already exist(s); rerun with --force to replace "
                           f"{'it' if len(existing) == 1 else 'them'}.")
    for challenge, target in targets.items():
        print(f"{challenge}: writing {', '.join(TEAMS)} and scoring them ...", flush=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=".leaderboard-in-progress-", dir=target.parent))
        try:
            write_teams(challenge, scratch)
            checked_scores(challenge, scratch)
            if target.exists():  # --force
                shutil.rmtree(target)
            scratch.rename(target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"  wrote {target}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Regenerate the bundled example submissions of the final ranking "
                                                 "(test/<challenge>/leaderboard/).")
    parser.add_argument("challenges", nargs="+", metavar="challenge", choices=sorted(LINEUPS))
    parser.add_argument("--force", action="store_true", help="replace an existing test/<challenge>/leaderboard/")
    args = parser.parse_args()
    try:
        main(list(dict.fromkeys(args.challenges)), args.force)
    except CommandError as error:
        print(error, file=sys.stderr)
        sys.exit(error.exit_code)
