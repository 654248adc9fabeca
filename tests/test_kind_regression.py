"""The regression kind (evaluation/kinds/regression.py): named targets score as scikit-learn and
scipy do, per target and over targets, on the whole test set and on rows of case counts (a case
of weight 2 is the case twice); hostile job outputs, as real files through the real command,
exit 1 naming the case with no metrics.json; a ground truth that leaves a declared metric
undefined exits 3."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import mean_absolute_error, mean_absolute_percentage_error, mean_squared_error, r2_score

from evaluation.errors import SetupError
from evaluation.kinds import regression as kind
from tests.tabular_kinds import (
    assert_one_line_naming,
    case_ids,
    case_results,
    count_rows,
    declared,
    evaluated,
    package_with_declarations,
    run,
    write_ground_truth,
    write_jobs,
)

DECLARED = declared()
TARGETS = ("volume", "age")


def independent(t, p):
    """Every declared metric of one target, by scikit-learn, scipy and the definitions."""
    both = np.abs(t) + np.abs(p)
    return {"mae": mean_absolute_error(t, p), "rmse": float(np.sqrt(mean_squared_error(t, p))),
            "mape": mean_absolute_percentage_error(t, p),
            "smape": float(np.mean(np.where(both > 0, np.abs(p - t) / np.where(both > 0, both / 2, 1), 0.0))),
            "smape_sum": float(np.mean(np.where(both > 0, np.abs(p - t) / np.where(both > 0, both, 1), 0.0))),
            "nae": float(np.mean(np.abs(p - t) / np.maximum(np.abs(p), np.abs(t)))),
            "r2": r2_score(t, p), "pearson": float(pearsonr(t, p).statistic),
            "spearman": float(spearmanr(t, p).statistic)}


def regression_case(tmp_path, n=40, seed=0):
    rng = np.random.default_rng(seed)
    truth = np.column_stack([np.round(rng.lognormal(5, 0.3, n), 1), rng.integers(20, 86, n).astype(float)])
    prediction = np.round(truth * (1 + rng.normal(0, 0.1, (n, 2))), 1)
    prediction[3, 1] = truth[3, 1]  # an exact prediction, a tie for the ranks
    ids = case_ids(n)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: dict(zip(TARGETS, row.tolist(), strict=True))
                                                        for c, row in zip(ids, truth, strict=True)})
    input_dir = write_jobs(tmp_path / "input", {c: {"prediction": dict(zip(TARGETS, row.tolist(), strict=True))}
                                                for c, row in zip(ids, prediction, strict=True)})
    return ground_truth, input_dir, truth, prediction


def test_metrics_per_target_and_over_targets_are_the_references(tmp_path):
    ground_truth, input_dir, truth, prediction = regression_case(tmp_path)
    metrics = evaluated(DECLARED.Targets(ground_truth), input_dir)
    for k, target in enumerate(TARGETS):
        for key, value in independent(truth[:, k], prediction[:, k]).items():
            assert metrics["aggregates"][target][key] == pytest.approx(value, rel=1e-10, abs=1e-12), (target, key)
        errors = np.abs(prediction[:, k] - truth[:, k])
        assert metrics["aggregates"][target]["absolute_error"]["median"] == pytest.approx(np.median(errors))
    r2_mean = np.mean([r2_score(truth[:, k], prediction[:, k]) for k in range(2)])
    assert metrics["aggregates"]["r2_mean"] == pytest.approx(r2_mean, rel=1e-12)
    assert metrics["cases"]["case-000"]["age"]["prediction"] == prediction[0, 1]
    paths = [column.path for column in (DECLARED.Targets.leaderboards[0].score,
                                        *DECLARED.Targets.leaderboards[0].extra_columns)]
    assert paths[:3] == ["aggregates.r2_mean", "aggregates.volume.mae", "aggregates.age.mae"]


def test_weights_are_repeated_cases(tmp_path):
    ground_truth, input_dir, truth, prediction = regression_case(tmp_path, n=30, seed=2)
    evaluation = DECLARED.Targets(ground_truth)
    results = case_results(evaluation, input_dir)
    counts = count_rows(np.random.default_rng(3), len(truth))
    computed = evaluation.aggregate(results, counts)
    for row, weights in enumerate(counts):
        for k, target in enumerate(TARGETS):
            repeated = independent(np.repeat(truth[:, k], weights), np.repeat(prediction[:, k], weights))
            for key, value in repeated.items():
                assert computed[f"aggregates.{target}.{key}"][row] == pytest.approx(value, rel=1e-9, abs=1e-12), \
                    (row, target, key)
            assert mean_absolute_error(truth[:, k], prediction[:, k], sample_weight=weights) == pytest.approx(
                computed[f"aggregates.{target}.mae"][row], rel=1e-12)
        r2_mean = np.mean([r2_score(truth[:, k], prediction[:, k], sample_weight=weights) for k in range(2)])
        assert computed["aggregates.r2_mean"][row] == pytest.approx(r2_mean, rel=1e-10)
    for path, value in evaluation.point_values(results).items():  # the row of ones among others: metrics.json's
        assert computed[path][0] == value, path


def test_a_constant_prediction_correlates_zero(tmp_path):
    ground_truth, *_ = regression_case(tmp_path, n=10)
    input_dir = write_jobs(tmp_path / "constant", {c: {"prediction": {"volume": 100.0, "age": 50.0}}
                                                   for c in case_ids(10)})
    metrics = evaluated(DECLARED.Targets(ground_truth), input_dir)["aggregates"]
    assert metrics["volume"]["pearson"] == 0.0 and metrics["age"]["spearman"] == 0.0


def test_one_socket_per_target(tmp_path):
    ground_truth, _, truth, prediction = regression_case(tmp_path, n=12)
    write_ground_truth(ground_truth, {c: dict(zip(TARGETS, row.tolist(), strict=True))
                                      for c, row in zip(case_ids(12), truth, strict=True)}, {"age_socket": "age-years"})
    input_dir = write_jobs(tmp_path / "sockets", {c: {"volume": row[0], "age-years": row[1]}
                                                  for c, row in zip(case_ids(12), prediction.tolist(), strict=True)})
    metrics = evaluated(DECLARED.TargetSockets(ground_truth), input_dir)["aggregates"]
    assert metrics["age"]["mae"] == pytest.approx(mean_absolute_error(truth[:, 1], prediction[:, 1]), rel=1e-12)
    assert metrics["volume"]["mae"] == pytest.approx(mean_absolute_error(truth[:, 0], prediction[:, 0]), rel=1e-12)


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    return package_with_declarations(tmp_path_factory.mktemp("kindtest"))


@pytest.mark.parametrize("written", [
    b'{"volume": 100.0}', b'{"volume": 100.0, "age": 40, "weight": 70}', b'{"volume": "100 ml", "age": 40}',
    b'{"volume": NaN, "age": 40}', b'{"volume": 100.0, "age": -Infinity}', b"100.0", b"[100.0, 40]",
    b'{"volume": null, "age": 40}', b'{"volume": true, "age": 40}',
    b'{"volume": 1e300, "age": 40}',  # finite, but its square is not: an RMSE would overflow
])
def test_hostile_outputs_fail_naming_the_case(package, tmp_path, written):
    ids = case_ids(5)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: {"volume": 100.0 + i, "age": 30 + i}
                                                        for i, c in enumerate(ids)})
    outputs = {c: {"prediction": {"volume": 101.0, "age": 33}} for c in ids}
    outputs["case-003"] = {"prediction": written}
    result = run(package, "kindtest-regression", ground_truth, write_jobs(tmp_path / "input", outputs),
                 tmp_path / "out")
    assert_one_line_naming(result, "case-003")


def test_the_valid_files_score_through_the_command(package, tmp_path):
    ids = case_ids(5)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: {"volume": 100.0 + i, "age": 30 + i}
                                                        for i, c in enumerate(ids)})
    outputs = {c: {"prediction": {"volume": 101.0 + i, "age": 33}} for i, c in enumerate(ids)}
    result = run(package, "kindtest-regression", ground_truth, write_jobs(tmp_path / "input", outputs),
                 tmp_path / "out")
    assert result.code == 0, result.stderr
    assert result.metrics["aggregates"]["volume"]["mae"] == 1.0


@pytest.mark.parametrize("truth, message", [
    ({"a": {"volume": 5.0, "age": 30}, "b": {"volume": 5.0, "age": 40}}, "every case has the volume 5"),
    ({"a": {"volume": 0.0, "age": 30}, "b": {"volume": 5.0, "age": 40}}, "the volume 0"),
    ({"a": {"volume": 1.0}, "b": {"volume": 5.0, "age": 40}}, "case a"),
    ({"a": {"volume": 1.0, "age": "old"}, "b": {"volume": 5.0, "age": 40}}, "case a"),
])
def test_a_ground_truth_leaving_a_metric_undefined_is_the_organizers(tmp_path, truth, message):
    with pytest.raises(SetupError, match=message):
        DECLARED.Targets(write_ground_truth(tmp_path / "gt", truth))


@pytest.mark.parametrize("attributes, message", [
    ({"targets": {"a.b": "A"}}, "without '.'"),
    ({"targets": {"mae": "MAE"}}, "not a metric's key"),
    ({"ranked_metrics": (kind.mae(), kind.mae(over="mean"))}, "share a key"),
    ({"targets": {}}, "no target"),
])
def test_a_declaration_that_cannot_run_is_refused_at_import(attributes, message):
    with pytest.raises(TypeError, match=message):
        type("Broken", (kind.Regression,), {"name": "kindtest-broken", **attributes})


def test_the_per_case_rule_ranks_each_targets_absolute_error(tmp_path):
    """ranking = "case_rank_then_mean": challengeR's rule on paths every case of metrics.json has."""
    from evaluation.declarations.ranking_rules import MeanOfCaseRanks
    from evaluation.platform.outputs import value_at_path

    per_case = type("PerCase", (DECLARED.Targets,), {"name": "kindtest-percase", "ranking": "case_rank_then_mean"})
    rule = per_case.final_rankings[0]
    assert isinstance(rule, MeanOfCaseRanks) and rule.cases_path == "cases"
    assert rule.case_paths == ("volume.absolute_error", "age.absolute_error")
    assert [column.order for column in rule.columns] == ["asc", "asc"]
    ground_truth, input_dir, truth, prediction = regression_case(tmp_path, n=8)
    metrics = evaluated(per_case(ground_truth), input_dir)
    for n, entry in enumerate(metrics["cases"][c] for c in case_ids(8)):
        for k, path in enumerate(rule.case_paths):
            assert value_at_path(entry, path) == pytest.approx(abs(prediction[n, k] - truth[n, k]), rel=1e-12)
