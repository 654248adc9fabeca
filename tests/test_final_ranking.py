"""The official final-ranking rules and the paired-bootstrap statistics, against independent
computations: scipy's rankdata and kendalltau, and plain loops over materialised rankings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import kendalltau, rankdata

from evaluation.challenges.hecktor2025.ranking import NestedBorda
from evaluation.declarations.columns import Column
from evaluation.declarations.ranking_rules import (
    OrderedRanking,
    competition_ranks,
    fractional_ranks,
    lexicographic_ranks,
)
from evaluation.leaderboard.standings import Standing
from evaluation.leaderboard.statistics import holm_rejections, kendall_tau_b, leaderboard_statistics


def ranked(path: str, order: str = "desc") -> Column:
    """A ranked value declared as a leaderboard Column, titled by its path."""
    return Column(path, path, order)


TASK1 = NestedBorda("borda", gtvp=Column("GTVp", "p", "desc"), gtvn_dsc=Column("GTVn Dice", "d", "desc"),
                    gtvn_f1=Column("GTVn F1", "f", "desc"))


def tied_rows(rng, rows=200, n=7, levels=4):
    """Rows of few distinct values: many two- and three-way ties."""
    return rng.integers(0, levels, size=(rows, n)).astype(float) / levels


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_competition_and_fractional_ranks_equal_scipy_rankdata(order):
    values = tied_rows(np.random.default_rng(1))
    signed = -values if order == "desc" else values
    expected_min = np.array([rankdata(row, method="min") for row in signed])
    expected_average = np.array([rankdata(row, method="average") for row in signed])
    np.testing.assert_array_equal(competition_ranks(values, order), expected_min)
    np.testing.assert_array_equal(fractional_ranks(values, order, "min"), expected_min)
    np.testing.assert_array_equal(fractional_ranks(values, order, "average"), expected_average)


def test_three_way_tie_and_the_spec_examples():
    assert competition_ranks(np.array([0.9, 0.9, 0.5])).tolist() == [1, 1, 3]
    assert competition_ranks(np.array([0.7, 0.7, 0.7, 0.1])).tolist() == [1, 1, 1, 4]
    assert fractional_ranks(np.array([0.9, 0.5, 0.5, 0.1])).tolist() == [1, 2.5, 2.5, 4]
    assert fractional_ranks(np.array([0.5, 0.5, 0.5])).tolist() == [2, 2, 2]


def test_values_within_1e12_relative_are_tied_and_nan_ranks_last():
    assert competition_ranks(np.array([0.3, 0.3 * (1 + 5e-13), 0.29])).tolist() == [1, 1, 3]
    assert competition_ranks(np.array([0.3, 0.3 * (1 + 5e-11)])).tolist() == [2, 1]
    assert competition_ranks(np.array([np.nan, 0.1, np.nan, 0.5])).tolist() == [3, 2, 3, 1]
    assert competition_ranks(np.array([np.nan, 0.1]), "asc").tolist() == [2, 1]


def test_lexicographic_ranks_equal_sorting_by_key_tuples():
    rng = np.random.default_rng(2)
    primary, secondary = tied_rows(rng, levels=3), tied_rows(rng, levels=2)
    ranks = lexicographic_ranks([primary, secondary], ["desc", "asc"])
    for row in range(len(primary)):
        keys = [(-primary[row, i], secondary[row, i]) for i in range(primary.shape[1])]
        expected = [1 + sum(other < key for other in keys) for key in keys]  # strictly better tuples
        assert ranks[row].tolist() == expected


def test_tie_break_breaks_only_what_it_can():
    rule = OrderedRanking("balanced_accuracy", (ranked("ba"), ranked("auc")))
    table = rule.rank({"ba": np.array([0.8, 0.8, 0.8, 0.7]), "auc": np.array([0.9, 0.95, 0.9, 0.99])})
    assert table.ranks.tolist() == [2, 1, 2, 4]  # the tie-break splits 0.95 from the two 0.9s, no more


def test_fallback_applies_only_when_no_submission_has_the_first_value():
    rule = OrderedRanking("score_total", (ranked("total"),), fallback=(ranked("untimed"),))
    assert rule.applied([{"total": None}, {"total": None}]).keys == (ranked("untimed"),)
    assert rule.applied([{"total": 1.0}, {"total": None}]).keys == (ranked("total"),)


def borda_reference(p, d, f, method):
    """HECKTOR task 1's nested Borda count, step by step with scipy."""
    gtvp = rankdata(-p, method=method)
    gtvn_dsc = rankdata(-d, method=method)
    gtvn_f1 = rankdata(-f, method=method)
    gtvn_borda = gtvn_dsc + gtvn_f1
    gtvn = rankdata(gtvn_borda, method=method)
    borda = gtvp + gtvn
    return rankdata(borda, method="min"), dict(gtvp=gtvp, gtvn_dsc=gtvn_dsc, gtvn_f1=gtvn_f1, gtvn_borda=gtvn_borda,
                                               gtvn=gtvn, borda=borda)


@pytest.mark.parametrize("method", ["average", "min"])
def test_nested_borda_equals_a_step_by_step_scipy_computation(method):
    rng = np.random.default_rng(3)
    p, d, f = (tied_rows(rng, levels=3) for _ in range(3))
    table = TASK1.rank({"p": p, "d": d, "f": f}, method)
    for row in range(len(p)):
        final, partial = borda_reference(p[row], d[row], f[row], method)
        np.testing.assert_array_equal(table.ranks[row], final)
        for name, expected in partial.items():
            np.testing.assert_array_equal(table.partial_ranks[name][row], expected, err_msg=name)


def test_nested_borda_crafted_ties():
    # a: best GTVp; b and c tie on GTVp with a three-way GTVn DSC tie; the final Borda ties b and c.
    values = {"p": np.array([0.9, 0.7, 0.7, 0.5]), "d": np.array([0.5, 0.6, 0.6, 0.6]),
              "f": np.array([0.4, 0.8, 0.8, 0.3])}
    table = TASK1.rank(values, "average")
    final, partial = borda_reference(values["p"], values["d"], values["f"], "average")
    assert table.ranks.tolist() == final.tolist()
    assert partial["gtvn_dsc"].tolist() == [4, 2, 2, 2]
    assert table.ranks.tolist()[1] == table.ranks.tolist()[2]  # a tie the rule does not break


def test_kendall_tau_b_equals_scipy():
    rng = np.random.default_rng(4)
    reference = rankdata(-rng.integers(0, 4, 9), method="min")
    ranks = np.array([rankdata(row, method="min") for row in rng.integers(0, 5, size=(50, 9))])
    expected = [kendalltau(row, reference).statistic for row in ranks]
    np.testing.assert_allclose(kendall_tau_b(ranks, reference), expected, rtol=1e-12)


def holm_reference(p_values, alpha):
    """Holm's adjusted p-values (max over the step-down products, capped at 1) at or below alpha."""
    m = len(p_values)
    order = np.argsort(p_values, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * p_values[i]))
        adjusted[i] = running
    return adjusted <= alpha


def test_holm_equals_the_adjusted_p_values():
    rng = np.random.default_rng(5)
    for _ in range(200):
        p = rng.choice([0.001, 0.01, 0.02, 0.03, 0.2, 0.5], size=rng.integers(1, 7))
        for alpha in (0.05, 0.1):
            assert holm_rejections(p, alpha).tolist() == holm_reference(p, alpha).tolist()


def test_statistics_equal_a_direct_recomputation_on_materialised_rankings():
    rng = np.random.default_rng(6)
    names = ("a", "b", "c", "d", "e")
    rule = OrderedRanking("score", (ranked("s"), ranked("t")))
    # Multiples of 1/8: sums are exact, so ties are exact ties for the direct computation too.
    final = {"s": np.array([[0.875, 0.75, 0.75, 0.5, 0.125]]), "t": np.array([[0.125, 0.5, 0.5, 0.875, 0.125]])}
    standing = Standing(rule, names, rule.rank(final))
    resamples = 300
    resampled = {name: {"s": final["s"][0, i] + rng.integers(-2, 3, resamples) / 8,
                        "t": rng.integers(0, 2, resamples).astype(float)} for i, name in enumerate(names)}
    resampled["e"]["s"][:7] = np.nan  # undefined in a few resamples: ranked last
    notes: list[str] = []
    document, distributions = leaderboard_statistics(standing, resampled, "average", 0.05, notes)

    # Direct: rank each resample with sorted key tuples, NaN last.
    ranks = np.empty((resamples, len(names)))
    for r in range(resamples):
        keys = [(-np.inf if np.isnan(resampled[n]["s"][r]) else resampled[n]["s"][r], resampled[n]["t"][r])
                for n in names]
        ranks[r] = [1 + sum(other > key for other in keys) for key in keys]
    for i, name in enumerate(names):
        entry = document[name]
        first = ranks[:, i] == 1
        expected_p_first = np.mean([1 / (ranks[r] == 1).sum() if first[r] else 0 for r in range(resamples)])
        assert entry["p_first"] == pytest.approx(expected_p_first, abs=1e-12)
        assert entry["mean_rank"] == pytest.approx(ranks[:, i].mean(), abs=1e-12)
        assert entry["rank_ci"] == pytest.approx(np.percentile(ranks[:, i], [2.5, 97.5]).tolist())
        finite = resampled[name]["s"][np.isfinite(resampled[name]["s"])]
        assert entry["value_ci"]["s"] == pytest.approx(np.percentile(finite, [2.5, 97.5]).tolist())
        assert distributions[name] == pytest.approx([(ranks[:, i] == k).mean() for k in range(1, 6)])
    assert sum(document[n]["p_first"] for n in names) == pytest.approx(1.0)
    for (i, a), (j, b) in itertools.permutations(enumerate(names), 2):
        expected = np.mean(ranks[:, i] < ranks[:, j]) + np.mean(ranks[:, i] == ranks[:, j]) / 2
        assert document["pairwise"][a][b]["p_better"] == pytest.approx(expected, abs=1e-12)
    # Adjacent pairs of the final ranking a, b|c (tied: alphabetical), d, e; tested and Holm-adjusted.
    adjacent = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")]
    p = np.array([1 - document["pairwise"][x][y]["p_better"] for x, y in adjacent])
    for (x, y), expected in zip(adjacent, holm_reference(p, 0.05), strict=True):
        assert document["pairwise"][x][y]["significant"] is bool(expected)
        assert document["pairwise"][y][x]["significant"] is None
    assert document["pairwise"]["a"]["c"]["significant"] is None
    taus = [kendalltau(row, standing.ranks).statistic for row in ranks]
    assert document["kendall_tau"] == pytest.approx(np.nanmean(taus), abs=1e-12)
    assert any("undefined in 7" in note for note in notes)


def test_statistics_of_one_submission():
    rule = OrderedRanking("score", (ranked("s"),))
    standing = Standing(rule, ("only",), rule.rank({"s": np.array([[0.5]])}))
    notes: list[str] = []
    document, _ = leaderboard_statistics(standing, {"only": {"s": np.linspace(0, 1, 50)}}, "average", 0.05, notes)
    assert document["only"]["p_first"] == 1 and document["only"]["rank_ci"] == [1, 1]
    assert document["pairwise"] == {"only": {}} and document["kendall_tau"] is None
