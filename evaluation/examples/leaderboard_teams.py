"""The bundled example submissions of the final ranking: test/<challenge>/leaderboard/, one folder
per team, each laid out exactly like test/<challenge>/input/ (a container's /input):

    team-a   Example.submission(ground truth, seed lineup(challenge).seeds[0])
    team-b   the same with seeds[1]
    team-c   a byte copy of <example>/input/ (the bundled example submission)
    team-d   a byte copy of team-b: tied with it at every ranked value
    team-x   a byte copy of <example>/invalid/<lineup(challenge).invalid>/input/: exits 1,
             so the final ranking lists it under `excluded`

Written by scripts/make_leaderboard_examples.py for the bundled ground truth, and by the examples
command (`python -m evaluation.examples CHALLENGE --ground-truth GT --output test/CHALLENGE
--force`) for an organizer's own, whenever the output folder has a leaderboard/. The seeds were
picked once so that the ranked values of team-a, team-b and team-c clearly differ on the bundled
ground truth; when they do not on another one, the next seed pairs (SPARE_SEEDS) are tried. The
same ground truth and example write the same bytes. Every team is scored by the evaluation's
command line: the valid ones must exit 0, team-x must exit 1 with its expected_error.txt line.
The folders are built in a scratch folder beside the target and moved in once every check passed.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

from evaluation.declarations.examples import Lineup
from evaluation.declarations.ranking_rules import ranking_paths
from evaluation.errors import InternalError
from evaluation.examples import example
from evaluation.examples.organizer import LEADERBOARD, generated, run_evaluation
from evaluation.interruption import copy_tree, install, scratch_folder

__all__ = ["LEADERBOARD", "write_leaderboard"]  # LEADERBOARD: test/<challenge>/leaderboard/<team>/
SEEDED_TEAMS = ("team-a", "team-b")  # Example.submission with the lineup's seeds
EXAMPLE_TEAM = "team-c"  # the bundled example submission
TIED_TEAM, TIED_WITH = "team-d", "team-b"  # a byte copy: the tie
INVALID_TEAM = "team-x"  # a bundled invalid submission: excluded from the ranking
SPARE_SEEDS = tuple((100 + 2 * k, 101 + 2 * k) for k in range(8))  # when the lineup's seeds make no ranking


TEAMS = (*SEEDED_TEAMS, EXAMPLE_TEAM, TIED_TEAM, INVALID_TEAM)


def lineup(challenge: str) -> Lineup:
    """The seeds and the invalid example of the challenge's teams (its Example's `lineup`)."""
    found = example(challenge).lineup
    if found is None:
        raise InternalError(f"{challenge}: its Example declares no lineup of leaderboard teams")
    return found


def ranked_paths(challenge: str) -> tuple[str, ...]:
    """The metrics.json paths the challenge's official final ranking reads, primary key first
    (csv2026 ranks score_without_time only when no submission has timing): its declaration's; for
    a rule of per-case values only (MeanOfCaseRanks reads no submission-level path), the
    leaderboard's ranked paths, the score first."""
    from evaluation.challenges import challenge_class

    cls = challenge_class(challenge)
    return ranking_paths(cls.final_rankings) or cls.ranked_paths


class NoRanking(InternalError):
    """The valid teams' primary values do not make a ranking."""


def write_teams(challenge: str, folder: Path, ground_truth: Path, example: Path, seeds: tuple[int, int]) -> None:
    """Every team's submission folder in `folder` (which must exist and be empty)."""
    from evaluation import examples

    submission = examples.example(challenge).submission
    for team, seed in zip(SEEDED_TEAMS, seeds, strict=True):
        (folder / team).mkdir()
        generated(functools.partial(submission, ground_truth, folder / team, seed),
                  f"Writing {challenge} {team} (seed {seed})")
    copy_tree(example / "input", folder / EXAMPLE_TEAM)
    copy_tree(folder / TIED_WITH, folder / TIED_TEAM)
    copy_tree(invalid_example(challenge, example) / "input", folder / INVALID_TEAM)


def invalid_example(challenge: str, example: Path) -> Path:
    found = example / "invalid" / lineup(challenge).invalid
    if not (found / "input").is_dir():
        raise InternalError(f"{challenge}: {found} has no input/ for team-x (its Example's lineup.invalid)")
    return found


def ranked_values(challenge: str, metrics: bytes) -> dict[str, float | None]:
    from evaluation.platform.outputs import value_at_path

    document = json.loads(metrics)
    return {path: value_at_path(document, path) for path in ranked_paths(challenge)}


def checked_scores(challenge: str, folder: Path, ground_truth: Path, example: Path) -> dict[str, dict]:
    """Each valid team's ranked values; InternalError unless every valid team exits 0 and team-x
    exits 1 with the line its invalid submission expects; NoRanking unless team-a, team-b and
    team-c have three distinct finite primary values."""
    values = {}
    for team in TEAMS:
        run = run_evaluation(challenge, folder / team, ground_truth)
        if team == INVALID_TEAM:
            expected = invalid_example(challenge, example) / "expected_error.txt"
            if run.code != 1 or run.metrics is not None or run.last_error_line != expected.read_text().strip():
                raise InternalError(f"{challenge} {team} exited {run.code}, not 1 with the line of {expected}: "
                                  f"{run.last_error_line or 'no message'}")
            print(f"  {team}: excluded (exit 1): {run.last_error_line}", flush=True)
            continue
        if run.code != 0 or run.metrics is None:
            raise InternalError(f"{challenge} {team} exited {run.code}: {run.last_error_line or 'no message'}")
        values[team] = ranked_values(challenge, run.metrics)
        shown = ", ".join(f"{path} = {value}" for path, value in values[team].items())
        print(f"  {team}: {shown}", flush=True)
    primary = [values[team][ranked_paths(challenge)[0]] for team in values]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in primary) or len(set(primary)) < 3:
        raise NoRanking(f"{challenge}: the teams' {ranked_paths(challenge)[0]} values {primary} do not make a "
                        f"ranking (three distinct finite values expected)")
    return values


def write_leaderboard(challenge: str, target: Path, ground_truth: Path, example: Path) -> None:
    """test/<challenge>/leaderboard/ (`target`, replaced if present) for this ground truth and the
    example folder holding input/ and invalid/: the lineup's seeds, else the first SPARE_SEEDS
    pair that makes a ranking."""
    print(f"{challenge}: writing {', '.join(TEAMS)} in {target} and scoring them ...", flush=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    tried = []
    for seeds in (lineup(challenge).seeds, *SPARE_SEEDS):
        with scratch_folder(target.parent, ".leaderboard-in-progress-") as scratch:
            (scratch / LEADERBOARD).mkdir()
            write_teams(challenge, scratch / LEADERBOARD, ground_truth, example, seeds)
            try:
                checked_scores(challenge, scratch / LEADERBOARD, ground_truth, example)
            except NoRanking as error:
                tried.append(seeds)
                print(f"  {error}; trying other seeds", flush=True)
                continue
            install([(scratch / LEADERBOARD, target)], scratch)  # an old one (a link itself) ends in the scratch
            print(f"  wrote {target}", flush=True)
            return
    raise NoRanking(f"{challenge}: no seeds of {tried} give team-a, team-b and team-c distinct "
                    f"{ranked_paths(challenge)[0]} values on this ground truth")
