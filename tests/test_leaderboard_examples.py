"""The bundled example submissions of the final ranking (test/<challenge>/leaderboard/<team>/,
made by scripts/make_leaderboard_examples.py): the script reproduces them byte for byte and
refuses to overwrite them without --force; every valid team scores, the invalid one exits 1 with
its bundled line; the tied pair scores byte-identical metrics; the valid teams' ranked values make
a real ranking. When the final-ranking command is present, it is run on them and its ranks
checked against ranks recomputed here with scipy.stats.rankdata."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.challenges import available_challenges
from tests.common import lookup, params, tree

ROOT = Path(__file__).resolve().parents[1]


def script_module():
    spec = importlib.util.spec_from_file_location("make_leaderboard_examples",
                                                  ROOT / "scripts" / "make_leaderboard_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = script_module()
CHALLENGES = sorted(SCRIPT.challenges_with_teams())
VALID_TEAMS = ("team-a", "team-b", "team-c", "team-d")
INVALID_TEAM = "team-x"
TIE = ("team-b", "team-d")

# The official rule of a challenge, stated here from its documentation, independently of its
# declaration: {leaderboard: ("ordered", keys) or ("borda", (gtvp, gtvn_dsc, gtvn_f1))}, every key
# descending; csv2026's fallback (score_without_time, when no team has timing) aside. A challenge
# not in this table gets every generic check: its declared rule is recomputed with scipy.
OFFICIAL_RULES = {
    "rare26": {"score": ("ordered", ("Score",))},
    "isic2018": {"balanced_accuracy": ("ordered", ("aggregate.balanced_accuracy", "aggregate.auc"))},
    "isic2019": {"balanced_accuracy": ("ordered", ("aggregate.balanced_accuracy", "aggregate.auc"))},
    "csv2026": {"score_total": ("ordered", ("aggregates.score_total",))},
    "hecktor2025-task1": {"borda": ("borda", ("aggregates.gtvp_dsc_mean", "aggregates.gtvn_dsc_agg",
                                              "aggregates.gtvn_f1_agg"))},
    "hecktor2025-task2": {"c_index": ("ordered", ("aggregates.c_index",))},
    "hecktor2025-task3": {"balanced_accuracy": ("ordered", ("aggregates.balanced_accuracy",
                                                            "aggregates.specificity"))},
    "camelyon16": {"slide_auc": ("ordered", ("aggregates.slide_auc",)),
                   "froc": ("ordered", ("aggregates.froc_score",))},
}


def declared_rules(challenge: str) -> dict[str, tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]]:
    """{leaderboard: (kind, ((path, order) of each key), fallback keys)} of the challenge's
    declared final_rankings, read from their fields."""
    from evaluation.declarations.ranking_rules import NestedBorda

    rules = {}
    for ranking in available_challenges()[challenge].final_rankings:
        if isinstance(ranking, NestedBorda):
            rules[ranking.name] = ("borda", tuple((path, "desc") for path in ranking.paths), ())
        else:
            rules[ranking.name] = ("ordered", tuple((key.path, key.order) for key in ranking.keys),
                                   tuple((key.path, key.order) for key in ranking.fallback))
    return rules


def leaderboard(challenge: str) -> Path:
    return ROOT / "test" / challenge / "leaderboard"


def scored(evaluate, challenge: str, team: str):
    return evaluate(challenge, leaderboard(challenge) / team, ROOT / "ground-truth" / challenge, "--workers", "1")


# ---- the folders ------------------------------------------------------------------------------


def test_every_challenge_has_leaderboard_examples():
    """Every challenge's Example declares its lineup (the folder's examples module) and its class
    the final_rankings the teams are ranked by."""
    assert CHALLENGES == sorted(available_challenges())
    for challenge in CHALLENGES:
        assert declared_rules(challenge), f"{challenge} declares no final_rankings"


@pytest.mark.parametrize("challenge", CHALLENGES)
def test_leaderboard_holds_only_the_team_folders_each_laid_out_as_input(challenge):
    """`test/<challenge>/leaderboard/*` is what organizers pass: nothing but submissions in it."""
    folder, example = leaderboard(challenge), ROOT / "test" / challenge
    assert sorted(p.name for p in folder.iterdir()) == sorted((*VALID_TEAMS, INVALID_TEAM))
    assert all(p.is_dir() for p in folder.iterdir())
    assert tree(folder / "team-c") == tree(example / "input")
    assert tree(folder / "team-d") == tree(folder / "team-b")
    invalid = example / "invalid" / SCRIPT.lineup(challenge).invalid / "input"
    assert tree(folder / INVALID_TEAM) == tree(invalid)
    input_files = tree(example / "input")
    algorithm_phase = "predictions.json" in input_files
    for team in ("team-a", "team-b"):
        files = tree(folder / team)
        assert files != input_files
        if algorithm_phase:  # one job folder per job, as many jobs and files as the bundled example
            jobs = json.loads(files["predictions.json"])
            assert {p.split("/")[0] for p in files if p != "predictions.json"} == {job["pk"] for job in jobs}
            assert len(jobs) == len(json.loads(input_files["predictions.json"]))
            assert len(files) == len(input_files)
        else:  # a predictions-file phase: the example's file names (camelyon16's excluded slide may be left out)
            assert set(files) <= set(input_files)
    empty = [p for p in folder.rglob("*") if p.is_dir() and not any(p.iterdir())]
    assert empty == []  # git keeps no empty folder


@pytest.mark.parametrize("challenge", params(CHALLENGES))
def test_script_reproduces_the_bundled_folders_byte_for_byte(challenge, tmp_path):
    SCRIPT.main([challenge], root=tmp_path)
    assert tree(tmp_path / "test" / challenge / "leaderboard") == tree(leaderboard(challenge))
    assert [p.name for p in (tmp_path / "test" / challenge).iterdir()] == ["leaderboard"]  # no scratch left
    empty = [p for p in tmp_path.rglob("*") if p.is_dir() and not any(p.iterdir())]
    assert empty == []


def test_script_refuses_without_force_then_replaces_the_folder(tmp_path, capsys):
    from evaluation.errors import UsageError

    target = tmp_path / "test" / "rare26" / "leaderboard"
    (target / "old-team").mkdir(parents=True)
    (target / "old-team" / "predictions.json").write_text("[]")
    (tmp_path / "test" / "rare26" / "notes.md").write_text("kept")
    with pytest.raises(UsageError, match="--force"):
        SCRIPT.main(["rare26", "isic2018"], root=tmp_path)
    assert tree(tmp_path) == {"test/rare26/leaderboard/old-team/predictions.json": b"[]",
                              "test/rare26/notes.md": b"kept"}  # nothing written, isic2018 included
    SCRIPT.main(["rare26"], force=True, root=tmp_path)
    assert tree(target) == tree(leaderboard("rare26"))  # the old team is gone
    assert (tmp_path / "test" / "rare26" / "notes.md").read_text() == "kept"
    printed = capsys.readouterr().out
    for team in VALID_TEAMS:
        assert f"  {team}: Score = " in printed
    assert f"  {INVALID_TEAM}: excluded (exit 1): " in printed


# ---- scoring ------------------------------------------------------------------------------------


@pytest.mark.parametrize("challenge", params(CHALLENGES))
def test_valid_teams_score_and_the_invalid_one_exits_1(challenge, evaluate):
    for team in VALID_TEAMS:
        run = scored(evaluate, challenge, team)
        assert run.code == 0, (team, run.stderr)
    run = scored(evaluate, challenge, INVALID_TEAM)
    assert (run.code, run.wrote_metrics) == (1, False)
    expected = ROOT / "test" / challenge / "invalid" / SCRIPT.lineup(challenge).invalid / "expected_error.txt"
    assert run.last_error_line == expected.read_text().strip()


@pytest.mark.parametrize("challenge", params(CHALLENGES))
def test_tied_pair_has_byte_identical_metrics_and_the_ranked_values_differ(challenge, evaluate):
    metrics = {}
    for team in VALID_TEAMS:
        run = scored(evaluate, challenge, team)
        assert run.code == 0, run.stderr
        metrics[team] = (run.output / "metrics.json").read_bytes()
    assert metrics[TIE[0]] == metrics[TIE[1]]
    documents = {team: json.loads(raw) for team, raw in metrics.items()}
    for name, (_, keys, _) in declared_rules(challenge).items():
        # The primary key (every key of the Borda's first ranking) tells team-a, team-b and team-c apart.
        primary = [float(lookup(documents[team], keys[0][0])) for team in ("team-a", "team-b", "team-c")]
        assert len(set(primary)) == 3, (name, primary)
    for path in SCRIPT.ranked_paths(challenge):
        assert isinstance(lookup(documents["team-a"], path), (int, float)), path


@pytest.mark.parametrize("challenge", CHALLENGES)
def test_ranked_paths_are_those_the_rules_read(challenge):
    rules = declared_rules(challenge)
    expected = tuple(dict.fromkeys(path for _, keys, fallback in rules.values() for path, _ in (*keys, *fallback)))
    assert SCRIPT.ranked_paths(challenge) == expected
    assert {order for _, keys, fallback in rules.values() for _, order in (*keys, *fallback)} <= {"asc", "desc"}


@pytest.mark.parametrize("challenge", sorted(OFFICIAL_RULES))
def test_declared_rules_are_the_official_ones(challenge):
    """The per-challenge oracle: the declaration says what the challenge's documentation says."""
    declared = {name: (kind, tuple(path for path, _ in keys))
                for name, (kind, keys, _) in declared_rules(challenge).items()}
    assert declared == OFFICIAL_RULES[challenge]
    assert all(order == "desc" for _, keys, _ in declared_rules(challenge).values() for _, order in keys)
    fallback = {path for _, _, keys in declared_rules(challenge).values() for path, _ in keys}
    assert fallback == ({"aggregates.score_without_time"} if challenge == "csv2026" else set())


# ---- the final-ranking command on them (when present) ------------------------------------------


def expected_ranks(challenge: str, documents: dict[str, dict]) -> dict[str, dict[str, float]]:
    """{leaderboard: {team: rank}} of the declared rules recomputed with scipy: competition
    ("min") ranks of the keys taken lexicographically (the fallback keys when no team has the
    first key), or the nested Borda count with fractional ("average") ranks."""
    import numpy as np
    from scipy.stats import rankdata

    teams = sorted(documents)
    ranks = {}
    for name, (kind, keys, fallback) in declared_rules(challenge).items():
        if fallback and all(lookup(documents[t], keys[0][0], None) is None for t in teams):
            keys = fallback
        columns = np.array([[float(lookup(documents[t], path)) for t in teams] for path, _ in keys])
        if kind == "ordered":
            # rows sorted lexicographically, best first (a descending key negated): equal rows share an index
            signed = np.array([-c if order == "desc" else c for c, (_, order) in zip(columns, keys, strict=True)])
            _, group = np.unique(signed.T, axis=0, return_inverse=True)
            ranks[name] = dict(zip(teams, rankdata(group.ravel(), method="min"), strict=True))
        else:
            gtvp, dsc, f1 = (rankdata(-c, method="average") for c in columns)
            borda = gtvp + rankdata(dsc + f1, method="average")
            ranks[name] = dict(zip(teams, rankdata(borda, method="min"), strict=True))
    return ranks


@pytest.mark.parametrize("challenge", params(CHALLENGES))
def test_final_ranking_command_ranks_the_examples(challenge, tmp_path):
    if importlib.util.find_spec("evaluation.leaderboard") is None:
        pytest.skip("python -m evaluation.leaderboard is not there yet")
    if not available_challenges()[challenge].final_rankings:
        pytest.skip(f"{challenge} declares no final_rankings yet")
    env = {k: v for k, v in os.environ.items() if k not in ("EVALUATION_CHALLENGE", "EVALUATION_WORKERS")}
    env["PYTHONPATH"] = str(ROOT)
    teams = sorted(leaderboard(challenge).iterdir())
    done = subprocess.run([sys.executable, "-m", "evaluation.leaderboard", challenge, *map(str, teams),
                           "--output", str(tmp_path / "out"), "--ground-truth", str(ROOT / "ground-truth" / challenge),
                           "--resamples", "20", "--workers", "1"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    ranking = json.loads((tmp_path / "out" / "ranking.json").read_text())
    assert [e["submission"] for e in ranking["excluded"]] == [INVALID_TEAM]
    assert ranking["excluded"][0]["exit_code"] == 1
    documents = {team: json.loads((tmp_path / "out" / "submissions" / team / "metrics.json").read_text())
                 for team in VALID_TEAMS}
    expected = expected_ranks(challenge, documents)
    assert [board["name"] for board in ranking["leaderboards"]] == list(expected)
    for board in ranking["leaderboards"]:
        found = {entry["submission"]: entry["rank"] for entry in board["entries"]}
        assert found == pytest.approx(expected[board["name"]]), board["name"]
        assert found[TIE[0]] == found[TIE[1]]
        assert len(set(found.values())) == 3  # a real ranking: one tie only
