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
from types import SimpleNamespace
from typing import NamedTuple

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


class Declared(NamedTuple):
    """A declared final ranking as this test reads it: its kind, its submission-level keys
    ((path, order) each), the fallback keys, and for a rule of per-case values the keys inside
    each case's entry, where the per-case object is, the weights and the tie method."""

    kind: str
    keys: tuple[tuple[str, str], ...]
    fallback: tuple[tuple[str, str], ...] = ()
    case_keys: tuple[tuple[str, str], ...] = ()
    cases_path: str | None = None
    weights: tuple[float, ...] = ()
    tie_method: str | None = None


def declared_rule(rule) -> Declared:
    """The rule's fields by its exact kind: a kind this test has no independent recomputation
    for (expected_ranks) fails here, rather than passing as some other kind."""
    from evaluation.challenges.hecktor2025.ranking import NestedBorda
    from evaluation.declarations.ranking_rules import MeanOfCaseRanks, MeanOfRanks, OrderedRanking

    def pairs(columns):
        return tuple((column.path, column.order) for column in columns)

    kind = type(rule)
    if kind is OrderedRanking:
        return Declared("ordered", pairs(rule.keys), pairs(rule.fallback))
    if kind is NestedBorda:
        return Declared("borda", pairs((rule.gtvp, rule.gtvn_dsc, rule.gtvn_f1)))
    if kind is MeanOfRanks:
        return Declared("mean_of_ranks", pairs(rule.columns), weights=rule.weights, tie_method=rule.tie_method)
    if kind is MeanOfCaseRanks:
        return Declared("mean_of_case_ranks", (), case_keys=pairs(rule.columns), cases_path=rule.cases_path,
                        weights=rule.weights, tie_method=rule.tie_method)
    pytest.fail(f"{rule.name}: {kind.__name__} is a rule kind this test does not recompute; add its independent "
                f"computation to declared_rule and expected_ranks")


def declared_rules(challenge: str) -> dict[str, Declared]:
    """{leaderboard: Declared} of the challenge's declared final_rankings."""
    return {ranking.name: declared_rule(ranking) for ranking in available_challenges()[challenge].final_rankings}


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
    for name, rule in declared_rules(challenge).items():
        # The primary key (every key of the Borda's first ranking; the mean over the cases of a
        # per-case rule's first key) tells team-a, team-b and team-c apart.
        if rule.case_keys:
            primary = [case_values(documents[team], rule)[rule.case_keys[0][0]].mean()
                       for team in ("team-a", "team-b", "team-c")]
        else:
            primary = [float(lookup(documents[team], rule.keys[0][0])) for team in ("team-a", "team-b", "team-c")]
        assert len(set(primary)) == 3, (name, primary)
    for path in SCRIPT.ranked_paths(challenge):
        assert isinstance(lookup(documents["team-a"], path), (int, float)), path


@pytest.mark.parametrize("challenge", CHALLENGES)
def test_ranked_paths_are_those_the_rules_read(challenge):
    rules = declared_rules(challenge).values()
    expected = tuple(dict.fromkeys(path for rule in rules for path, _ in (*rule.keys, *rule.fallback)))
    assert SCRIPT.ranked_paths(challenge) == expected
    assert {order for rule in rules for _, order in (*rule.keys, *rule.fallback, *rule.case_keys)} <= {"asc", "desc"}


@pytest.mark.parametrize("challenge", sorted(OFFICIAL_RULES))
def test_declared_rules_are_the_official_ones(challenge):
    """The per-challenge oracle: the declaration says what the challenge's documentation says."""
    rules = declared_rules(challenge)
    declared = {name: (rule.kind, tuple(path for path, _ in rule.keys)) for name, rule in rules.items()}
    assert declared == OFFICIAL_RULES[challenge]
    assert all(order == "desc" for rule in rules.values() for _, order in rule.keys)
    fallback = {path for rule in rules.values() for path, _ in rule.fallback}
    assert fallback == ({"aggregates.score_without_time"} if challenge == "csv2026" else set())


# ---- the final-ranking command on them (when present) ------------------------------------------


def case_values(document: dict, rule: Declared) -> dict:
    """{case key: values over the document's cases, sorted by case id}, NaN where not a number."""
    import numpy as np

    cases = lookup(document, rule.cases_path, None) or {}
    return {path: np.array([number_or_nan(lookup(cases[case], path, None)) for case in sorted(cases)])
            for path, _ in rule.case_keys}


def number_or_nan(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else float("nan")


def expected_ranks(challenge: str, documents: dict[str, dict], tie_method: str = "average") -> dict[str, dict]:
    return expected_ranks_of(declared_rules(challenge), documents, tie_method)


def expected_ranks_of(rules: dict[str, Declared], documents: dict[str, dict],
                      tie_method: str = "average") -> dict[str, dict]:
    """{leaderboard: {team: rank}} of the declared rules recomputed with scipy and pandas, each by
    its kind: competition ("min") ranks of the keys taken lexicographically (the fallback keys
    when no team has the first key); the nested Borda count with fractional ranks; the mean of
    the per-metric ranks; challengeR's rank-then-aggregate over the per-case values."""
    import numpy as np
    import pandas as pd
    from scipy.stats import rankdata

    from tests.test_final_ranking_rules import challenger_rank_then_mean

    teams = sorted(documents)
    ranks = {}
    for name, rule in rules.items():
        keys = rule.keys
        if rule.fallback and all(lookup(documents[t], keys[0][0], None) is None for t in teams):
            keys = rule.fallback
        columns = np.array([[float(lookup(documents[t], path)) for t in teams] for path, _ in keys])
        if rule.kind == "ordered":
            # rows sorted lexicographically, best first (a descending key negated): equal rows share an index
            signed = np.array([-c if order == "desc" else c for c, (_, order) in zip(columns, keys, strict=True)])
            _, group = np.unique(signed.T, axis=0, return_inverse=True)
            ranks[name] = dict(zip(teams, rankdata(group.ravel(), method="min"), strict=True))
        elif rule.kind == "borda":
            gtvp, dsc, f1 = (rankdata(-c, method=tie_method) for c in columns)
            borda = gtvp + rankdata(dsc + f1, method=tie_method)
            ranks[name] = dict(zip(teams, rankdata(borda, method="min"), strict=True))
        elif rule.kind == "mean_of_ranks":
            ties = rule.tie_method or tie_method
            weights = np.array(rule.weights or [1.0] * len(keys))
            per_key = [rankdata(-c if order == "desc" else c, method=ties) for c, (_, order) in zip(columns, keys,
                                                                                                  strict=True)]
            mean = sum(w * r for w, r in zip(weights, per_key, strict=True)) / weights.sum()
            ranks[name] = dict(zip(teams, rankdata(np.round(mean, 9), method="min"), strict=True))
        elif rule.kind == "mean_of_case_ranks":
            rows = [{"case": case, "algorithm": team,
                     **{path: number_or_nan(lookup(entry, path, None)) for path, _ in rule.case_keys}}
                    for team in teams for case, entry in (lookup(documents[team], rule.cases_path, None) or {}).items()]
            declared = [SimpleNamespace(path=path, order=order) for path, order in rule.case_keys]
            expected = challenger_rank_then_mean(pd.DataFrame(rows), declared, rule.tie_method, rule.weights)
            ranks[name] = {team: expected.loc[team, "rank"] for team in teams}
        else:
            pytest.fail(f"{name}: no independent recomputation of a {rule.kind} rule")
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


@pytest.mark.parametrize("tie_method", ["average", "min"])
def test_the_recomputation_of_every_rule_kind_agrees_with_the_rules(tie_method):
    """expected_ranks_of, for every kind of rule a challenge may declare, on teams with ties and
    a missing case: what the command's ranking gives, so the example check of a challenge that
    declares one of them is ready (and a kind it cannot recompute fails in declared_rule)."""
    import numpy as np

    from evaluation.challenges.hecktor2025.ranking import NestedBorda
    from evaluation.declarations.columns import Column
    from evaluation.declarations.ranking_rules import MeanOfCaseRanks, MeanOfRanks, OrderedRanking
    from evaluation.leaderboard.standings import rank_leaderboard

    rng = np.random.default_rng(5)
    a, b, c = (Column(k, f"aggregates.{k}", "desc") for k in "abc")
    d = Column("d", "aggregates.d", "asc")
    rules = [OrderedRanking("ordered", (a, d)), NestedBorda("borda", gtvp=a, gtvn_dsc=b, gtvn_f1=c),
             MeanOfRanks("mean", (a, d, c), weights=(2.0, 1.0, 1.0)), MeanOfRanks("mean_min", (b, d), tie_method="min"),
             MeanOfCaseRanks("cases", (Column("x", "x", "desc"), Column("y", "y", "asc"))),
             MeanOfCaseRanks("cases_average", (Column("x", "x", "desc"),), tie_method="average")]
    documents = {f"team-{t}": {"aggregates": {k: float(rng.integers(0, 3)) / 3 for k in "abcd"},
                               "cases": {f"c{i}": {"x": float(rng.integers(0, 3)), "y": float(rng.integers(0, 3))}
                                         for i in range(8)}} for t in "abcdefg"}
    del documents["team-b"]["cases"]["c2"]
    documents["team-c"]["cases"]["c4"]["x"] = None
    expected = expected_ranks_of({rule.name: declared_rule(rule) for rule in rules}, documents, tie_method)
    for rule in rules:
        standing = rank_leaderboard(rule, documents, tie_method, [])
        found = dict(zip(standing.names, standing.table.ranks[0].tolist(), strict=True))
        assert found == pytest.approx(expected[rule.name]), rule.name


def test_a_rule_kind_without_a_recomputation_fails():
    from dataclasses import dataclass

    from evaluation.declarations.ranking_rules import OrderedRanking

    @dataclass(frozen=True)
    class Reordered(OrderedRanking):  # ranks as an ordering, but is not one this test knows
        pass

    with pytest.raises(pytest.fail.Exception, match="Reordered is a rule kind this test does not recompute"):
        declared_rule(Reordered("x", ()))
