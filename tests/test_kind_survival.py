"""The survival kind (evaluation/kinds/survival.py): Harrell's C-index as lifelines computes it,
on the whole test set and on rows of case counts (a case of weight 2 is the case twice, its
copies never compared with each other); hostile risk scores, as real files through the real
command, exit 1 naming the patient with no metrics.json; a ground truth without a comparable
pair exits 3."""

from __future__ import annotations

import numpy as np
import pytest

from evaluation.errors import SetupError
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
lifelines = pytest.importorskip("lifelines.utils")


def pairs_by_definition(time, event, risk):
    """Harrell's C by its pairs: i an event before j's time (or at it, j censored), concordant
    when i's risk is higher, a tie one half."""
    concordant = comparable = 0.0
    for i in range(len(time)):
        for j in range(len(time)):
            if event[i] and (time[i] < time[j] or (time[i] == time[j] and not event[j])):
                comparable += 1
                concordant += 1.0 if risk[i] > risk[j] else 0.5 if risk[i] == risk[j] else 0.0
    return concordant / comparable


def survival_case(tmp_path, n=40, seed=0):
    rng = np.random.default_rng(seed)
    time = np.round(rng.exponential(500, n) + 10, 0)  # whole days: tied times
    event = (rng.random(n) < 0.6).astype(int)
    event[int(np.argmin(time))] = 1
    risk = np.round(-np.log1p(time) + rng.normal(0, 1, n), 1)  # one decimal: tied risks
    ids = case_ids(n)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: {"time": float(t), "event": int(e)}
                                                        for c, t, e in zip(ids, time, event, strict=True)})
    input_dir = write_jobs(tmp_path / "input", {c: {"risk-score": float(r)} for c, r in zip(ids, risk, strict=True)})
    return ground_truth, input_dir, time, event, risk


def test_the_c_index_is_lifelines(tmp_path):
    ground_truth, input_dir, time, event, risk = survival_case(tmp_path)
    metrics = evaluated(DECLARED.Risk(ground_truth), input_dir)
    expected = lifelines.concordance_index(time, -risk, event)
    assert metrics["aggregates"]["c_index"] == pytest.approx(expected, rel=1e-12)
    assert metrics["aggregates"]["c_index"] == pytest.approx(pairs_by_definition(time, event, risk), rel=1e-12)
    assert metrics["counts"] == {"patients": 40, "events": int(event.sum())}
    assert metrics["cases"]["case-000"] == {"risk": float(risk[0])}  # never the outcome


def test_weights_are_repeated_patients(tmp_path):
    ground_truth, input_dir, time, event, risk = survival_case(tmp_path, n=30, seed=4)
    evaluation = DECLARED.Risk(ground_truth)
    results = case_results(evaluation, input_dir)
    counts = count_rows(np.random.default_rng(5), len(time))
    computed = evaluation.aggregate(results, counts)["aggregates.c_index"]
    for row, weights in enumerate(counts):
        expected = lifelines.concordance_index(np.repeat(time, weights), -np.repeat(risk, weights),
                                               np.repeat(event, weights))
        assert computed[row] == pytest.approx(expected, rel=1e-12), row


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    return package_with_declarations(tmp_path_factory.mktemp("kindtest"))


@pytest.mark.parametrize("written", [b'"high"', b"[0.2, 0.4]", b"NaN", b"-Infinity", b"null", b"true", b"{}"])
def test_hostile_risks_fail_naming_the_patient(package, tmp_path, written):
    ids = case_ids(5)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: {"time": 100.0 * (i + 1), "event": 1}
                                                        for i, c in enumerate(ids)})
    outputs = {c: {"risk-score": 1.0 - 0.1 * i} for i, c in enumerate(ids)}
    outputs["case-002"] = {"risk-score": written}
    result = run(package, "kindtest-survival", ground_truth, write_jobs(tmp_path / "input", outputs), tmp_path / "out")
    assert_one_line_naming(result, "Patient case-002")


def test_the_valid_files_score_through_the_command(package, tmp_path):
    ids = case_ids(5)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: {"time": 100.0 * (i + 1), "event": 1}
                                                        for i, c in enumerate(ids)})
    outputs = {c: {"risk-score": 1.0 - 0.1 * i} for i, c in enumerate(ids)}
    result = run(package, "kindtest-survival", ground_truth, write_jobs(tmp_path / "input", outputs), tmp_path / "out")
    assert result.code == 0, result.stderr
    assert result.metrics["aggregates"]["c_index"] == 1.0


@pytest.mark.parametrize("truth, message", [
    ({"a": {"time": 10, "event": 0}, "b": {"time": 20, "event": 0}}, "no comparable pair"),
    ({"a": {"time": -1, "event": 1}, "b": {"time": 20, "event": 0}}, "case a"),
    ({"a": {"time": 10, "event": True}, "b": {"time": 20, "event": 0}}, "case a"),
])
def test_a_ground_truth_without_a_c_index_is_the_organizers(tmp_path, truth, message):
    with pytest.raises(SetupError, match=message):
        DECLARED.Risk(write_ground_truth(tmp_path / "gt", truth))
