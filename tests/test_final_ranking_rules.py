"""The generic rank-then-aggregate rules (evaluation/declarations/ranking_rules.py) against
independent computations: MeanOfRanks against scipy.stats.rankdata row by row, MeanOfCaseRanks
against challengeR's rankThenAggregate(FUN = mean) written here with pandas (per-case ranks by
groupby, missing values one below the worst rank as challengeR's rankNA2), on metrics.json files
on disk, and its bootstrap statistics against the resamples materialised case by case."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata

from evaluation.declarations.columns import Column
from evaluation.declarations.ranking_rules import MeanOfCaseRanks, MeanOfRanks, RankingRule, missing_last_ranks
from evaluation.leaderboard.cli import read_metrics_file
from evaluation.leaderboard.standings import entries, rank_leaderboard
from evaluation.leaderboard.statistics import leaderboard_statistics

DSC = Column("Dice", "aggregates.dsc", "desc")
HD = Column("HD95 (mm)", "aggregates.hd95", "asc")
NSD = Column("NSD", "aggregates.nsd", "desc")
CASE_DSC = Column("Dice", "dsc", "desc")
CASE_HD = Column("HD95 (mm)", "hd95", "asc")


def tied_rows(rng, rows=200, n=7, levels=4):
    """Rows of few distinct values: many two- and three-way ties."""
    return rng.integers(0, levels, size=(rows, n)).astype(float) / levels


# ---- MeanOfRanks ------------------------------------------------------------------------------


@pytest.mark.parametrize("tie_method", ["average", "min"])
@pytest.mark.parametrize("weights", [(), (2.0, 1.0, 0.5)])
def test_mean_of_ranks_equals_scipy_rankdata_row_by_row(tie_method, weights):
    rng = np.random.default_rng(11)
    values = {column.path: tied_rows(rng, levels=3) for column in (DSC, HD, NSD)}
    rule = MeanOfRanks("mean", (DSC, HD, NSD), weights=weights, tie_method=tie_method)
    table = rule.rank(values)
    w = np.array(weights or (1.0, 1.0, 1.0))
    for row in range(200):
        ranks = [rankdata(-values[DSC.path][row], method=tie_method), rankdata(values[HD.path][row], method=tie_method),
                 rankdata(-values[NSD.path][row], method=tie_method)]
        mean = sum(wk * r for wk, r in zip(w, ranks, strict=True)) / w.sum()
        np.testing.assert_allclose(table.partial_ranks["mean_of_ranks"][row], mean, rtol=1e-12)
        np.testing.assert_array_equal(table.ranks[row], rankdata(np.round(mean, 9), method="min"))
        for column, expected in zip((DSC, HD, NSD), ranks, strict=True):
            np.testing.assert_array_equal(table.partial_ranks[f"{column.path} rank"][row], expected)
    assert list(table.values) == [DSC.path, HD.path, NSD.path]


def test_mean_of_ranks_follows_the_command_tie_method_unless_it_declares_one():
    values = {DSC.path: np.array([0.9, 0.9, 0.5]), HD.path: np.array([3.0, 1.0, 2.0])}
    follows = MeanOfRanks("mean", (DSC, HD))
    # Dice ranks: average 1.5, 1.5, 3 (min 1, 1, 3); HD95 ranks 3, 1, 2.
    assert follows.rank(values, "average").partial_ranks["mean_of_ranks"].tolist() == [2.25, 1.25, 2.5]
    assert follows.rank(values, "min").partial_ranks["mean_of_ranks"].tolist() == [2.0, 1.0, 2.5]
    fixed = MeanOfRanks("mean", (DSC, HD), tie_method="min")
    assert fixed.rank(values, "average").partial_ranks["mean_of_ranks"].tolist() == [2.0, 1.0, 2.5]
    assert "--tie-method average" in follows.describe("average") and "--tie-method" not in fixed.describe("average")


def test_mean_of_ranks_ranks_an_undefined_value_last_and_ties_share_the_best_rank():
    values = {DSC.path: np.array([0.8, np.nan, 0.8, 0.6]), HD.path: np.array([2.0, 1.0, 2.0, 3.0])}
    table = MeanOfRanks("mean", (DSC, HD)).rank(values, "average")
    assert table.partial_ranks[f"{DSC.path} rank"].tolist() == [1.5, 4, 1.5, 3]
    assert table.ranks.tolist() == [1, 3, 1, 4]  # means 1.75, 2.5, 1.75, 3.5


def test_rules_refuse_what_they_cannot_rank():
    with pytest.raises(ValueError, match="more than once"):
        MeanOfRanks("mean", (DSC, DSC))
    with pytest.raises(ValueError, match="weights for"):
        MeanOfRanks("mean", (DSC, HD), weights=(1.0,))
    with pytest.raises(ValueError, match="finite number > 0"):
        MeanOfCaseRanks("cases", (CASE_DSC,), weights=(0,))
    with pytest.raises(ValueError, match="tie method"):
        MeanOfCaseRanks("cases", (CASE_DSC,), tie_method="dense")
    with pytest.raises(ValueError, match="at least one column"):
        MeanOfRanks("mean", ())
    with pytest.raises(ValueError, match="cases path"):
        MeanOfCaseRanks("cases", (CASE_DSC,), cases_path="case..x")
    assert all(isinstance(rule, RankingRule) for rule in (MeanOfRanks("m", (DSC,)), MeanOfCaseRanks("c", (CASE_DSC,))))


def test_mean_of_ranks_statistics_rank_every_resample_as_scipy():
    rng = np.random.default_rng(8)
    names = ("a", "b", "c", "d", "e")
    rule = MeanOfRanks("mean", (DSC, HD), weights=(1.0, 3.0))
    documents = {name: {"aggregates": {"dsc": float(rng.integers(0, 4)) / 4, "hd95": float(rng.integers(0, 4))}}
                 for name in names}
    standing = rank_leaderboard(rule, documents, "average", [])
    resamples = 150
    resampled = {name: {DSC.path: rng.integers(0, 4, resamples) / 4, HD.path: rng.integers(0, 4, resamples) * 1.0}
                 for name in names}
    document, _ = leaderboard_statistics(standing, resampled, "min", 0.05, [])
    ranks = np.empty((resamples, len(names)))
    for r in range(resamples):
        dsc = rankdata([-resampled[n][DSC.path][r] for n in names], method="min")
        hd = rankdata([resampled[n][HD.path][r] for n in names], method="min")
        ranks[r] = rankdata((dsc + 3 * hd) / 4, method="min")
    for i, name in enumerate(names):
        assert document[name]["mean_rank"] == pytest.approx(ranks[:, i].mean(), abs=1e-12)
        assert document[name]["rank_ci"] == pytest.approx(np.percentile(ranks[:, i], [2.5, 97.5]).tolist())


# ---- MeanOfCaseRanks against challengeR's definition ---------------------------------------------


def challenger_rank_then_mean(frame: pd.DataFrame, columns, ties: str, weights=()) -> pd.DataFrame:
    """challengeR's rankThenAggregate(FUN = mean) per metric, then the (weighted) mean over the
    metrics: `frame` is long (case, algorithm, one column per metric), a missing row or NaN being
    a missing value. Per case, rank(x, ties.method, na.last = "keep") with small better, then
    rankNA2's missing ranks (max rank + 1, or + mean(1..k) for "average"); the mean per algorithm;
    the final rank with ties.method "min". Returns per algorithm each metric's mean rank, the mean
    and the final rank."""
    algorithms, cases = sorted(frame["algorithm"].unique()), sorted(frame["case"].unique())
    grid = pd.MultiIndex.from_product([cases, algorithms], names=["case", "algorithm"]).to_frame(index=False)
    frame = grid.merge(frame, on=["case", "algorithm"], how="left")  # challengeR inserts the missing rows as NA
    result = pd.DataFrame(index=algorithms)
    for column in columns:
        smaller_better = column.order == "asc"
        ranked = frame.groupby("case")[column.path].rank(method=ties, ascending=smaller_better, na_option="keep")
        worst = ranked.groupby(frame["case"]).transform("max").fillna(0.0)
        missing = ranked.isna()
        k = missing.groupby(frame["case"]).transform("sum")
        ranked = ranked.where(~missing, worst + (1.0 if ties == "min" else (k + 1) / 2.0))
        result[column.path] = ranked.groupby(frame["algorithm"]).mean()
    w = np.array(weights or [1.0] * len(columns))
    result["mean"] = sum(wk * result[c.path] for wk, c in zip(w, columns, strict=True)) / w.sum()
    result["rank"] = rankdata(result["mean"].round(9), method="min")
    return result


def case_documents(rng, teams=6, cases=12, levels=4) -> dict[str, dict]:
    """metrics.json contents with a per-case object {case: {dsc, hd95}}, values on a coarse grid
    (many ties), one case missing from one team, one null value and one team without hd95 once."""
    documents = {}
    for t in range(teams):
        per_case = {f"case-{c:02d}": {"dsc": float(rng.integers(0, levels)) / levels,
                                      "hd95": float(rng.integers(0, levels)) * 2.5} for c in range(cases)}
        documents[f"team-{chr(97 + t)}"] = {"aggregates": {"n": cases}, "cases": per_case}
    del documents["team-b"]["cases"]["case-03"]  # a missing case
    documents["team-c"]["cases"]["case-05"]["dsc"] = None  # undefined on a case
    del documents["team-d"]["cases"]["case-07"]["hd95"]  # one value absent
    return documents


def long_frame(documents: dict[str, dict]) -> pd.DataFrame:
    rows = [{"case": case, "algorithm": team, "dsc": entry.get("dsc"), "hd95": entry.get("hd95")}
            for team, document in documents.items() for case, entry in document["cases"].items()]
    frame = pd.DataFrame(rows)
    return frame.astype({"dsc": float, "hd95": float})


def written_and_read(documents: dict[str, dict], tmp_path) -> dict[str, dict]:
    """The documents as metrics.json files on disk, read back as --metrics reads them."""
    found = {}
    for team, document in documents.items():
        (tmp_path / team).mkdir()
        (tmp_path / team / "metrics.json").write_text(json.dumps(document))
        found[team] = read_metrics_file("any", tmp_path / team)
    return found


@pytest.mark.parametrize("tie_method", ["min", "average"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mean_of_case_ranks_equals_challenger_rank_then_aggregate(tie_method, seed, tmp_path):
    documents = written_and_read(case_documents(np.random.default_rng(seed)), tmp_path)
    weights = (3.0, 1.0) if seed == 3 else ()
    rule = MeanOfCaseRanks("case_ranks", (CASE_DSC, CASE_HD), weights=weights, tie_method=tie_method)
    notes: list[str] = []
    standing = rank_leaderboard(rule, documents, "average", notes)
    expected = challenger_rank_then_mean(long_frame(documents), (CASE_DSC, CASE_HD), tie_method, weights)
    found = {entry["submission"]: entry for entry in entries(standing)}
    for team in documents:
        assert found[team]["rank"] == expected.loc[team, "rank"], team
        assert found[team]["partial_ranks"]["mean_case_rank"] == pytest.approx(expected.loc[team, "mean"], abs=1e-12)
        for column in (CASE_DSC, CASE_HD):
            assert found[team]["partial_ranks"][f"{column.path} rank"] == pytest.approx(
                expected.loc[team, column.path], abs=1e-12)
            # the value shown: the mean of the team's defined values over its cases
            mean = np.nanmean([v for v in (e.get(column.path) for e in documents[team]["cases"].values())
                               if v is not None])
            assert found[team]["values"][f"cases.*.{column.path}"] == pytest.approx(mean, abs=1e-12)
    assert standing.cases == tuple(f"case-{c:02d}" for c in range(12))
    assert any("team-b (1 of 12)" in note and ".dsc" in note for note in notes)
    assert any("team-c (1 of 12)" in note for note in notes)
    assert any("team-d (1 of 12)" in note and ".hd95" in note for note in notes)


def test_a_missing_case_ranks_one_below_the_worst_rank_given_as_challenger():
    # challengeR's rankNA2: [0.9, 0.5, 0.5, NA] gives 1, 2, 2, 3 with "min" (a NaN-last
    # competition rank would give 4), and 1, 2.5, 2.5, 3.5 with "average" (2.5 + mean(1:1)).
    values = np.array([[0.9, 0.5, 0.5, np.nan], [np.nan, np.nan, 0.2, 0.1], [np.nan] * 4])
    assert missing_last_ranks(values, "desc", "min").tolist() == [[1, 2, 2, 3], [3, 3, 1, 2], [1, 1, 1, 1]]
    assert missing_last_ranks(values, "desc", "average").tolist() == [[1, 2.5, 2.5, 3.5], [3.5, 3.5, 1, 2],
                                                                      [2.5, 2.5, 2.5, 2.5]]


def test_mean_of_case_ranks_crafted_tie_and_missing_case():
    # Two cases, three teams. Case 1: a 0.9, b 0.9, c 0.5 (ranks 1, 1, 3); case 2: c 0.8, a 0.7, b
    # missing (ranks 2, 3 for b, 1 for c). Means: a 1.5, b 2, c 2: b and c tie, share rank 2.
    documents = {"a": {"cases": {"1": {"dsc": 0.9}, "2": {"dsc": 0.7}}},
                 "b": {"cases": {"1": {"dsc": 0.9}}},
                 "c": {"cases": {"1": {"dsc": 0.5}, "2": {"dsc": 0.8}}}}
    standing = rank_leaderboard(MeanOfCaseRanks("r", (CASE_DSC,)), documents, "average", [])
    assert standing.table.partial_ranks["mean_case_rank"][0].tolist() == [1.5, 2.0, 2.0]
    assert standing.table.ranks[0].tolist() == [1, 2, 2]


def test_mean_of_case_ranks_reads_the_declared_per_case_object():
    # HECKTOR writes its per-patient values under "case": a rule declares where to read them.
    documents = {"a": {"case": {"p1": {"gtvp_dsc": 0.2}}}, "b": {"case": {"p1": {"gtvp_dsc": 0.7}}}}
    rule = MeanOfCaseRanks("r", (Column("GTVp Dice", "gtvp_dsc", "desc"),), cases_path="case")
    assert rank_leaderboard(rule, documents, "average", []).table.ranks[0].tolist() == [2, 1]
    notes: list[str] = []
    standing = rank_leaderboard(MeanOfCaseRanks("r", (CASE_DSC,)), documents, "average", notes)
    assert standing.table.ranks[0].tolist() == [1, 1]
    assert notes == ["r: no submission has per-case values at cases; every submission ties."]


# ---- the statistics of MeanOfCaseRanks ----------------------------------------------------------


def test_case_rank_statistics_equal_the_materialised_resamples(tmp_path):
    documents = written_and_read(case_documents(np.random.default_rng(7), teams=5, cases=9), tmp_path)
    rule = MeanOfCaseRanks("case_ranks", (CASE_DSC, CASE_HD))
    standing = rank_leaderboard(rule, documents, "average", [])
    resamples, seed = 120, 4
    document, distributions = leaderboard_statistics(standing, {name: {} for name in standing.names}, "average",
                                                     0.05, [], resamples, seed)
    # Each resample materialised: the drawn cases (9 draws with replacement of the sorted cases,
    # numpy's default_rng(seed).integers stream), a case drawn twice being two cases, ranked anew.
    frame = long_frame(documents)
    cases = sorted(frame["case"].unique())
    draws = np.random.default_rng(seed).integers(0, len(cases), size=(resamples, len(cases)))
    ranks = np.empty((resamples, len(standing.names)))
    dice_means = np.empty((resamples, len(standing.names)))
    for r, row in enumerate(draws):
        parts = [frame[frame["case"] == cases[j]].assign(case=f"draw-{k}") for k, j in enumerate(row)]
        expected = challenger_rank_then_mean(pd.concat(parts), (CASE_DSC, CASE_HD), "min")
        ranks[r] = expected.loc[list(standing.names), "rank"]
        drawn = pd.concat(parts).set_index("algorithm")["dsc"]
        dice_means[r] = [drawn.loc[[name]].mean() for name in standing.names]  # NaN skipped, as pandas does
    for i, name in enumerate(standing.names):
        assert document[name]["mean_rank"] == pytest.approx(ranks[:, i].mean(), abs=1e-12)
        assert document[name]["rank_ci"] == pytest.approx(np.percentile(ranks[:, i], [2.5, 97.5]).tolist())
        assert distributions[name] == pytest.approx([(ranks[:, i] == k).mean() for k in range(1, 6)])
        assert document[name]["value_ci"]["cases.*.dsc"] == pytest.approx(
            np.percentile(dice_means[:, i], [2.5, 97.5]).tolist(), abs=1e-12)


def test_case_rank_statistics_stay_fast_on_hundreds_of_submissions():
    """300 submissions x 200 cases x 1000 resamples: the per-case ranks once, then a product of
    the case weights with them per block (measured ~1 s; the bound leaves room for slow runners)."""
    import time

    rng = np.random.default_rng(0)
    names = [f"team-{i:03d}" for i in range(300)]
    documents = {name: {"cases": {f"c{c:03d}": {"dsc": float(v)} for c, v in enumerate(rng.random(200))}}
                 for name in names}
    standing = rank_leaderboard(MeanOfCaseRanks("r", (CASE_DSC,)), documents, "average", [])
    started = time.perf_counter()
    document, _ = leaderboard_statistics(standing, {name: {} for name in names}, "average", 0.05, [], 1000, 0)
    assert time.perf_counter() - started < 60
    assert sum(document[name]["p_first"] for name in names) == pytest.approx(1.0)


# ---- the report ---------------------------------------------------------------------------------


def test_report_tells_the_rule_mean_of_ranks_from_the_bootstrap_mean_rank():
    from evaluation.leaderboard.report import report_html

    rule = MeanOfRanks("mean", (DSC, HD))
    rng = np.random.default_rng(2)
    names = ("a", "b", "c")
    documents = {name: {"aggregates": {"dsc": float(rng.random()), "hd95": float(rng.random())}} for name in names}
    standing = rank_leaderboard(rule, documents, "average", [])
    resampled = {name: {DSC.path: rng.random(40), HD.path: rng.random(40)} for name in names}
    board, _ = leaderboard_statistics(standing, resampled, "average", 0.05, [])
    board_entry = {"name": "mean", "rule": rule.describe(), "entries": entries(standing)}
    ranking = {"challenge": "x", "leaderboards": [board_entry],
               "statistics": {"resamples": 40, "seed": 0, "leaderboards": {"mean": board}}, "excluded": [], "notes": []}
    page = report_html(ranking, {}, {DSC.path: DSC.title, HD.path: HD.title}, {"mean": rule.partial_titles})
    header = page[page.index("<tr><th>rank</th>"):].split("</tr>")[0]
    assert '<th title="mean_of_ranks">mean of metric ranks</th>' in header
    assert "<th>mean rank over 40 resamples</th>" in header
    assert '<th title="aggregates.dsc rank">Dice: rank</th>' in header
    assert header.count("mean rank") == 1
