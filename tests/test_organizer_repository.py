"""The organizer's own repository stays green: after a challenge's ground truth is replaced, the
README's command (`python -m evaluation.examples CHALLENGE --ground-truth ground-truth/CHALLENGE
--output test/CHALLENGE --force`) rewrites the bundled example AND the final ranking's example
teams (test/CHALLENGE/leaderboard/) for it, so that the ranking command ranks them (none
excluded but team-x) and the tests of the bundled examples, which read test/CHALLENGE/, pass.
Here on a copy of test/CHALLENGE/ and a synthetic ground truth of another seed, in real
processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation import examples
from evaluation.examples.leaderboard_teams import INVALID_TEAM, TEAMS, lineup
from tests.common import challenges, params, tree
from tests.test_organizer_examples import command

ROOT = Path(__file__).resolve().parents[1]


def organizer_copy(challenge: str, tmp_path: Path) -> tuple[Path, Path]:
    """(a new ground truth, a copy of test/<challenge>/ as the organizer's repository holds it)."""
    examples.synthesize(challenge, tmp_path / "synthetic", seed=11)
    ground_truth = tmp_path / "ground-truth" / challenge
    shutil.copytree(tmp_path / "synthetic" / "ground-truth", ground_truth)
    example = tmp_path / "test" / challenge
    shutil.copytree(ROOT / "test" / challenge, example)
    return ground_truth, example


@pytest.mark.parametrize("challenge", params(challenges()))
def test_examples_command_rewrites_the_leaderboard_teams_for_the_new_ground_truth(challenge, tmp_path, evaluate):
    ground_truth, example = organizer_copy(challenge, tmp_path)
    before = tree(example / "leaderboard")
    refused = command(challenge, "--ground-truth", ground_truth, "--output", example)
    assert refused.returncode != 0 and "--force" in refused.stderr.strip().splitlines()[-1]
    assert tree(example / "leaderboard") == before  # nothing changed
    done = command(challenge, "--ground-truth", ground_truth, "--output", example, "--force")
    assert done.returncode == 0, done.stdout + done.stderr
    teams = example / "leaderboard"
    assert sorted(p.name for p in teams.iterdir()) == sorted(TEAMS)
    if tree(ground_truth) != tree(ROOT / "ground-truth" / challenge):  # (unless it is the repository's own)
        assert tree(teams) != before
    assert tree(teams / "team-c") == tree(example / "input")
    assert tree(teams / INVALID_TEAM) == tree(example / "invalid" / lineup(challenge).invalid / "input")
    for team in TEAMS:  # each scored against the new ground truth, as the ranking will
        run = evaluate(challenge, teams / team, ground_truth, "--workers", "1")
        assert run.code == (1 if team == INVALID_TEAM else 0), (team, run.stderr)

    # The README's ranking command on them: four ranked, team-x excluded.
    env = {k: v for k, v in os.environ.items() if k not in ("EVALUATION_CHALLENGE", "EVALUATION_WORKERS")}
    env["PYTHONPATH"] = str(ROOT)
    ranked = subprocess.run([sys.executable, "-m", "evaluation.leaderboard", challenge,
                             *sorted(map(str, teams.iterdir())), "--ground-truth", str(ground_truth),
                             "--output", str(tmp_path / "ranking"), "--resamples", "50", "--workers", "1"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert ranked.returncode == 0, ranked.stderr
    ranking = json.loads((tmp_path / "ranking" / "ranking.json").read_text())
    assert [e["submission"] for e in ranking["excluded"]] == [INVALID_TEAM]
    for board in ranking["leaderboards"]:
        assert sorted(e["submission"] for e in board["entries"]) == sorted(set(TEAMS) - {INVALID_TEAM})


def test_the_bundled_ground_truth_rewrites_the_bundled_teams_byte_for_byte(tmp_path):
    """On the bundled ground truth the command writes back exactly the bundled teams (and the
    example it writes is the one the tests check against the synthetic one elsewhere)."""
    example = tmp_path / "test" / "rare26"
    shutil.copytree(ROOT / "test" / "rare26", example)
    done = command("rare26", "--ground-truth", ROOT / "ground-truth" / "rare26", "--output", example, "--force")
    assert done.returncode == 0, done.stderr
    expected = ROOT / "test" / "rare26" / "leaderboard"
    written = example / "leaderboard"
    # team-a, team-b, team-d: the lineup's seeds on the same ground truth give the same bytes
    for team in ("team-a", "team-b", "team-d"):
        assert tree(written / team) == tree(expected / team), team
