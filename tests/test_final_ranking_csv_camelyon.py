"""The final ranking's statistics of CSV 2026 and CAMELYON16 beyond the bootstrap contract (that
aggregate on a row of counts is the materialised resample's point values, on the bundled examples
and on synthetic edges, is tests/test_bootstrap_contract.py's): the declared rules, CSV 2026
without a time and with a resample of one class, CAMELYON16's slide AUC against scikit-learn with
weights, the FROC helper alone, the blocks of the default driver, and the curves of the report
against scikit-learn."""

import copy
import math
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

from evaluation.challenges.camelyon16 import (
    FROC_SCORE,
    FROC_SENSITIVITIES,
    LESIONS_ITC_EXCLUDED,
    LESIONS_TOTAL,
    SLIDE_AUC,
    Camelyon16,
    SlideResult,
    SlideTruth,
)
from evaluation.challenges.csv2026 import SCORE_TOTAL, SCORE_WITHOUT_TIME, TIMED, VALUES, Csv2026
from evaluation.challenges.csv2026.examples import write_dataset
from evaluation.declarations.ranking_rules import OrderedRanking
from evaluation.declarations.workload import Workload
from evaluation.metrics.froc import (
    SlideHits,
    froc_curve,
    froc_score,
    froc_sensitivities,
    mean_sensitivity,
    weighted_froc_sensitivities,
)
from evaluation.metrics.resampling import draws_to_counts
from evaluation.platform.outputs import Undefined
from evaluation.run import matched_cases, score_case
from tests.common import lookup
from tests.test_bootstrap_contract import REL, assert_resamples_match, contract_rows, materialised, synthetic_csv

ROOT = Path(__file__).resolve().parent.parent


def random_counts(seed, resamples, cases):
    rng = np.random.default_rng(seed)
    return draws_to_counts(rng.integers(0, cases, size=(resamples, cases)), cases)


def scored(evaluation, input_dir):
    return {case.case_id: score_case(evaluation, case) for case in matched_cases(evaluation, input_dir)}


@pytest.fixture(scope="module")
def csv_example():
    evaluation = Csv2026(ROOT / "ground-truth" / "csv2026")
    return evaluation, scored(evaluation, ROOT / "test" / "csv2026" / "input")


@pytest.fixture(scope="module")
def camelyon_example():
    evaluation = Camelyon16(ROOT / "ground-truth" / "camelyon16")
    return evaluation, scored(evaluation, ROOT / "test" / "camelyon16" / "input")


# ---- declarations ---------------------------------------------------------------------------------


def test_final_rankings_are_the_rules():
    assert Csv2026.final_rankings == (OrderedRanking("score_total", (SCORE_TOTAL,), fallback=(SCORE_WITHOUT_TIME,)),)
    assert [(column.path, column.order) for column in (SCORE_TOTAL, SCORE_WITHOUT_TIME)] == [
        ("aggregates.score_total", "desc"), ("aggregates.score_without_time", "desc")]  # csv2026.md, "Leaderboard"
    assert Camelyon16.final_rankings == (OrderedRanking("slide_auc", (SLIDE_AUC,)),
                                         OrderedRanking("froc", (FROC_SCORE,)))
    assert [(rule.name, [(key.path, key.order) for key in rule.keys]) for rule in Camelyon16.final_rankings] == [
        ("slide_auc", [("aggregates.slide_auc", "desc")]), ("froc", [("aggregates.froc_score", "desc")])]


# ---- CSV 2026 ---------------------------------------------------------------------------------------

UNTIMED_PATHS = tuple(column.path for column in VALUES if column not in TIMED)


def test_csv2026_without_timing_leaves_score_total_out(tmp_path):
    write_dataset(tmp_path, seed=5, cases=7, phase="file")
    evaluation = Csv2026(tmp_path / "ground-truth")
    results = scored(evaluation, tmp_path / "input")
    metrics = evaluation.score_aggregates(results)
    assert all(isinstance(lookup(metrics, column.path), Undefined) for column in TIMED)  # null, with the reason
    got = assert_resamples_match(evaluation, results, contract_rows(7, seed=2))
    assert set(got) == set(UNTIMED_PATHS)


def test_csv2026_one_class_resample_uses_the_empty_class_rule():
    """A resample of low-risk cases predicted low: F1 of class 1 is 0 (zero_division=0), macro 0.5."""
    from sklearn.metrics import f1_score

    evaluation, results, _, _ = synthetic_csv(3, "exec", 100.0, cases=6)
    case_ids = sorted(results)
    low = [j for j, c in enumerate(case_ids) if results[c].true_high_risk == 0 and results[c].high_risk == 0]
    counts = np.zeros((1, 6), dtype=np.int64)
    counts[0, low[0]] = 6
    cls = f1_score([0] * 6, [0] * 6, labels=[0, 1], average="macro", zero_division=0)
    assert cls == 0.5
    _, resampled_results = materialised(evaluation, results, counts[0])
    seg = evaluation.point_values(resampled_results)["aggregates.score_seg"]
    got = evaluation.aggregate(results, counts)
    assert got["aggregates.macro_f1"][0] == cls
    assert got[SCORE_WITHOUT_TIME.path][0] == pytest.approx((0.4 * 100 * cls + 0.4 * seg) / 0.8, rel=REL)


# ---- CAMELYON16 ---------------------------------------------------------------------------------------

CAMELYON_PATHS = Camelyon16.ranked_paths  # every value aggregate returns


def test_camelyon16_aggregates_every_ranked_path_once():
    assert CAMELYON_PATHS == (SLIDE_AUC.path, FROC_SCORE.path, *(c.path for c in FROC_SENSITIVITIES), LESIONS_TOTAL,
                              LESIONS_ITC_EXCLUDED)


def test_camelyon16_slide_auc_equals_scikit_learn_with_weights(camelyon_example):
    evaluation, results = camelyon_example
    slides = sorted(results)
    y = [evaluation.ground_truth[s].is_tumor for s in slides]
    scores = [results[s].probability for s in slides]
    counts = random_counts(11, 40, len(slides))
    got = evaluation.aggregate(results, counts)[SLIDE_AUC.path]
    for row, value in zip(counts, got, strict=True):
        drawn_y = np.repeat(y, row)
        if drawn_y.all() or not drawn_y.any():
            assert math.isnan(value)
        else:  # bit for bit, with the row as sample_weight or materialised
            assert value == roc_auc_score(drawn_y, np.repeat(scores, row))
            assert value == roc_auc_score(y, scores, sample_weight=row)


@pytest.mark.parametrize("rule", ["2016", "corrected"])
def test_weighted_froc_sensitivities_are_bit_identical_to_the_curve(rule):
    """The helper alone, with many resamples and exact float comparisons."""
    rng = np.random.default_rng(len(rule))
    pool = np.array([0.0, 1e-50, 1e-40, 0.1, float(np.float32(0.1)), 0.3, 0.5, 0.7, 1.0, 2.0])
    for trial in range(40):
        n = int(rng.integers(1, 10))
        slides = []
        for _ in range(n):
            count = int(rng.integers(0, 30))
            false_positives = rng.choice(pool, count) if trial % 2 else rng.random(count)
            if rng.random() < 0.6:
                slides.append(SlideHits(false_positives, rng.choice(pool, int(rng.integers(0, 4))),
                                        int(rng.integers(0, 3))))
            else:
                slides.append(SlideHits(false_positives, np.zeros(0), 0))
        counts = random_counts(trial, 30, n)
        sensitivities = weighted_froc_sensitivities(slides, counts, rule)
        scores = mean_sensitivity(sensitivities)
        for row, at_targets, value in zip(counts, sensitivities, scores, strict=True):
            drawn = [s for s, times in zip(slides, row, strict=True) for _ in range(times)]
            if sum(s.lesions for s in drawn) == 0:
                assert math.isnan(value) and np.isnan(at_targets).all()
            else:
                curve = froc_curve(drawn, rule)
                assert value == froc_score(curve)
                assert at_targets.tolist() == froc_sensitivities(curve).tolist()


def test_weighted_froc_sensitivities_refuse_bad_input():
    slides = [SlideHits(np.array([0.5]), np.array([0.7]), 0)]
    with pytest.raises(ValueError, match="rule"):
        weighted_froc_sensitivities(slides, np.ones((1, 1), dtype=np.int64), "2017")
    with pytest.raises(ValueError, match="shape"):
        weighted_froc_sensitivities(slides, np.ones((1, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="whole numbers"):
        weighted_froc_sensitivities(slides, np.full((1, 1), 0.5))
    with pytest.raises(ValueError, match=">= 0"):
        weighted_froc_sensitivities(slides, -np.ones((1, 1), dtype=np.int64))


def test_camelyon16_aggregate_refuses_fractional_weights_instead_of_truncating_them(camelyon_example):
    evaluation, results = camelyon_example
    halves = np.full((1, len(results)), 0.5)
    with pytest.raises(ValueError, match="whole numbers"):  # a cast to int64 made them zeros: NaN, silently
        evaluation.aggregate(results, halves)
    ones = evaluation.aggregate(results, np.ones((1, len(results))))
    for path, values in evaluation.aggregate(results, np.ones((1, len(results)), dtype=np.int64)).items():
        np.testing.assert_array_equal(values, ones[path])  # whole floats are counts as they are


def test_camelyon16_ranking_resamples_by_blocks(camelyon_example):
    """The default driver: the same values whatever the block size (paired draws)."""
    evaluation, results = camelyon_example
    whole = evaluation.ranking_resamples(results, 25, seed=3)
    small = copy.copy(evaluation)
    small.workload = Workload(resample_rows=7)
    assert set(whole) == set(CAMELYON_PATHS)
    for path, values in small.ranking_resamples(results, 25, seed=3).items():
        assert values.shape == (25,)
        np.testing.assert_array_equal(values, whole[path])


# ---- curves -------------------------------------------------------------------------------------------


def assert_well_formed(curve, chart):
    assert curve["chart"] == chart
    assert all(isinstance(curve[key], str) and curve[key] for key in ("title", "x_title", "y_title"))
    points = curve["points"]
    assert 2 <= len(points) <= 500
    assert all(len(p) == 2 and all(isinstance(v, float) and math.isfinite(v) for v in p) for p in points)
    x = [p[0] for p in points]
    assert x == sorted(x)


def test_camelyon16_curves(camelyon_example):
    evaluation, results = camelyon_example
    metrics = evaluation.score_aggregates(results)
    curves = evaluation.ranking_curves(results, metrics)
    assert [c["chart"] for c in curves] == ["froc", "slide_roc"]
    froc, roc = curves
    assert_well_formed(froc, "froc")
    assert_well_formed(roc, "slide_roc")
    assert froc["x_title"] == "Average false positives per slide" and froc["y_title"] == "Sensitivity"
    assert [p[0] for p in froc["points"]] == metrics["froc_curve"]["average_false_positives_per_slide"]
    assert [p[1] for p in froc["points"]] == metrics["froc_curve"]["sensitivity"]
    slides = sorted(results)
    fpr, tpr, _ = roc_curve([evaluation.ground_truth[s].is_tumor for s in slides],
                            [results[s].probability for s in slides])
    np.testing.assert_allclose(roc["points"], np.column_stack([fpr, tpr]), rtol=0, atol=1e-12)
    assert roc["points"][0] == [0.0, 0.0] and roc["points"][-1] == [1.0, 1.0]


def test_camelyon16_roc_curve_is_thinned_to_500_points(camelyon_example):
    rng = np.random.default_rng(0)
    names = [f"Test_{j:04d}" for j in range(1500)]
    evaluation = copy.copy(camelyon_example[0])
    evaluation.ground_truth = {name: SlideTruth(bool(j % 2), j % 2 == 1, None) for j, name in enumerate(names)}
    results = {name: SlideResult(float(rng.random()), SlideHits(rng.random(3), rng.random(1), 0) if j % 2 else None)
               for j, name in enumerate(names)}
    for curve in evaluation.ranking_curves(results, {}):
        assert_well_formed(curve, curve["chart"])
        assert len(curve["points"]) == 500 or curve["chart"] == "froc"
    roc = evaluation.ranking_curves(results, {})[1]["points"]
    assert roc[0] == [0.0, 0.0] and roc[-1] == [1.0, 1.0]


def test_csv2026_has_no_curves(csv_example):
    evaluation, results = csv_example
    assert evaluation.ranking_curves(results, evaluation.score_aggregates(results)) == []
