"""The final ranking's statistics of CSV 2026 and CAMELYON16: aggregate against
the values computed on the materialised resamples (each case repeated as often as it is drawn,
as distinct cases; CSV 2026: its point values there, CAMELYON16: score_aggregates, whose values are
its point values), on the bundled examples and on synthetic cases, and the curves of the report
against scikit-learn. CAMELYON16: aggregate on a row of counts equals, bit for bit, the point
values of the materialised resample."""

import copy
import dataclasses
import math
from datetime import UTC, datetime, timedelta
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
from evaluation.challenges.csv2026 import SCORE_TOTAL, SCORE_WITHOUT_TIME, TIMED, VALUES, CaseResult, Csv2026, JobTiming
from evaluation.challenges.csv2026.examples import write_dataset
from evaluation.errors import SetupError
from evaluation.grand_challenge import Undefined
from evaluation.leaderboard.rules import OrderedRanking
from evaluation.metrics.froc import (
    SlideHits,
    froc_curve,
    froc_score,
    froc_sensitivities,
    mean_sensitivity,
    weighted_froc_sensitivities,
)
from evaluation.metrics.resampling import draws_to_counts

ROOT = Path(__file__).resolve().parent.parent
REL = 1e-9


# ---- materialised resamples ---------------------------------------------------------------------


def materialised(evaluation, results, row):
    """(evaluation, results) of one resample: case j of sorted(results) repeated row[j] times,
    each copy a distinct case ("<case>~<k>") with its own ground-truth entry."""
    case_ids = sorted(results)
    copies = [(f"{case}~{k}", case) for case, times in zip(case_ids, row, strict=True) for k in range(times)]
    resampled = copy.copy(evaluation)
    resampled.ground_truth = {name: evaluation.ground_truth[case] for name, case in copies}
    return resampled, {name: results[case] for name, case in copies}


def value_at(metrics, path):
    value = metrics
    for part in path.split("."):
        value = value[part]
    return value


def materialised_values(evaluation, results, counts, paths):
    """{path: (resamples,) array} of score_aggregates on each materialised resample; NaN where it
    refuses the resample (SetupError) or leaves the value null."""
    values = {path: np.full(len(counts), np.nan) for path in paths}
    for r, row in enumerate(counts):
        try:
            resampled, resampled_results = materialised(evaluation, results, row)
            metrics = resampled.score_aggregates(resampled_results)
        except SetupError:
            continue
        for path in paths:
            value = value_at(metrics, path)
            if isinstance(value, (int, float)):
                values[path][r] = value
    return values


def assert_same(got, expected):
    assert set(got) == set(expected)
    for path in expected:
        assert got[path].shape == expected[path].shape, path
        np.testing.assert_array_equal(np.isnan(got[path]), np.isnan(expected[path]), err_msg=path)
        defined = ~np.isnan(expected[path])
        np.testing.assert_allclose(got[path][defined], expected[path][defined], rtol=REL, atol=0, err_msg=path)


def random_counts(seed, resamples, cases):
    rng = np.random.default_rng(seed)
    return draws_to_counts(rng.integers(0, cases, size=(resamples, cases)), cases)


def single_case_rows(cases):
    """Every case drawn n times: a resample of one case (one class only)."""
    return np.eye(cases, dtype=np.int64) * cases


def scored(evaluation, input_dir):
    return {case.case_id: evaluation.score_one(case) for case in evaluation.cases(input_dir)}


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

CSV_PATHS = tuple(column.path for column in VALUES)  # every value; the TIMED ones when there is a time
UNTIMED_PATHS = tuple(column.path for column in VALUES if column not in TIMED)


def materialised_point_values(evaluation, results, counts):
    """{path: (resamples,) array} of point_values on each materialised resample (the submission's
    own values had it been those cases); NaN where a resample leaves a path out or undefined."""
    rows = [evaluation.point_values(materialised(evaluation, results, row)[1]) for row in counts]
    paths = dict.fromkeys(path for row in rows for path in row)
    return {path: np.array([row.get(path, np.nan) for row in rows]) for path in paths}


@pytest.fixture(scope="module")
def csv_example():
    evaluation = Csv2026(ROOT / "ground-truth" / "csv2026")
    return evaluation, scored(evaluation, ROOT / "test" / "csv2026" / "input")


def test_csv2026_example_resamples_equal_point_values_of_the_resample(csv_example):
    evaluation, results = csv_example
    n = len(results)
    counts = np.vstack([random_counts(1, 60, n), single_case_rows(n), np.ones((1, n), dtype=np.int64)])
    got = evaluation.aggregate(results, counts)
    assert set(got) == set(CSV_PATHS)  # timed example with a baseline: S_total is there
    assert_same(got, materialised_point_values(evaluation, results, counts))
    # the row drawing every case once is the submission itself: metrics.json's values, bit for bit
    metrics = evaluation.score_aggregates(results)
    for path in CSV_PATHS:
        assert got[path][-1] == value_at(metrics, path), path


def test_csv2026_without_timing_leaves_score_total_out(tmp_path):
    write_dataset(tmp_path, seed=5, cases=7, phase="file")
    evaluation = Csv2026(tmp_path / "ground-truth")
    results = scored(evaluation, tmp_path / "input")
    metrics = evaluation.score_aggregates(results)
    assert all(isinstance(value_at(metrics, column.path), Undefined) for column in TIMED)  # null, with the reason
    counts = np.vstack([random_counts(2, 30, 7), single_case_rows(7)])
    got = evaluation.aggregate(results, counts)
    assert set(got) == set(UNTIMED_PATHS)
    assert_same(got, materialised_point_values(evaluation, results, counts))


def synthetic_csv(seed, cases, timing):
    """Random per-case results and classes; timing "exec" (exec_duration everywhere), "span"
    (instants only, some jobs overlapping), "mixed" (exec_duration on some jobs, instants on
    all), "negative" (one job completed before it started)."""
    rng = np.random.default_rng(seed)
    start = datetime(2026, 1, 5, 12, tzinfo=UTC)
    results = {}
    for j in range(cases):
        case = f"{j:04d}"
        high = int(rng.random() < 0.4)
        predicted = high if rng.random() < 0.7 else 1 - high
        started = start + timedelta(microseconds=int(rng.integers(0, 50_000_000)))
        completed = started + timedelta(microseconds=int(rng.integers(1, 20_000_000)))
        if timing == "negative" and j == 1:
            completed = started - timedelta(seconds=3)
        exec_seconds = float(rng.uniform(1, 20)) if timing == "exec" or (timing == "mixed" and j % 2) else None
        dsc = tuple(float(v) for v in rng.choice([0.0, 1.0, *rng.random(4)], 4))
        nsd = tuple(float(v) for v in rng.choice([0.0, 1.0, *rng.random(4)], 4))
        results[case] = CaseResult(dsc, nsd, predicted, JobTiming(exec_seconds, started, completed), high)
    return results


@pytest.mark.parametrize("timing", ["exec", "span", "mixed", "negative"])
@pytest.mark.parametrize("baseline", [40.0, 100.0, 400.0])
def test_csv2026_synthetic_resamples_equal_point_values_of_the_resample(csv_example, timing, baseline):
    """Baselines putting t below 2B/3, inside the linear part and beyond 2B; resamples holding one
    class only (an F1 of 0 for the class neither true nor predicted); per-resample time rules."""
    results = synthetic_csv(len(timing) + int(baseline), 9, timing)
    evaluation = copy.copy(csv_example[0])
    evaluation.ground_truth = {case: Path(f"{case}_label.h5") for case in results}  # as load_ground_truth lists them
    evaluation.settings = dataclasses.replace(evaluation.settings, baseline_time_seconds=baseline)
    counts = np.vstack([random_counts(int(baseline), 80, 9), single_case_rows(9)])
    got = evaluation.aggregate(results, counts)
    expected = materialised_point_values(evaluation, results, counts)
    assert_same(got, expected)
    if timing == "negative":  # resamples drawing the backwards job (and no exec_duration) have no time
        assert np.isnan(got["aggregates.score_total"]).any() and not np.isnan(got["aggregates.score_total"]).all()
    assert not np.isnan(got["aggregates.score_without_time"]).any()


def test_csv2026_one_class_resample_uses_the_empty_class_rule(csv_example):
    """A resample of low-risk cases predicted low: F1 of class 1 is 0 (zero_division=0), macro 0.5."""
    from sklearn.metrics import f1_score

    results = synthetic_csv(3, 6, "exec")
    evaluation = copy.copy(csv_example[0])
    evaluation.ground_truth = {case: Path(f"{case}_label.h5") for case in results}  # as load_ground_truth lists them
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


def camelyon_expected(evaluation, results, counts):
    """score_aggregates on the materialised resamples (its values are the point values of the
    resample); where it refuses a resample for holding no lesion (the FROC is undefined) the
    slide AUC still is defined: scikit-learn's on it, and the lesions counted are none."""
    expected = materialised_values(evaluation, results, counts, CAMELYON_PATHS)
    slides = sorted(results)
    y = np.array([evaluation.ground_truth[s].is_tumor for s in slides])
    scores = np.array([results[s].probability for s in slides])
    itc = np.array([results[s].hits.itc_regions if results[s].hits is not None else 0 for s in slides])
    for r in np.flatnonzero(np.isnan(expected[FROC_SCORE.path])):
        drawn = np.repeat(y, counts[r])
        if drawn.any() and not drawn.all():
            expected[SLIDE_AUC.path][r] = roc_auc_score(drawn, np.repeat(scores, counts[r]))
        expected[LESIONS_TOTAL][r] = 0
        expected[LESIONS_ITC_EXCLUDED][r] = counts[r] @ itc
    return expected


def assert_identical(got, expected):
    """The same values bit for bit (NaN where undefined): one code path, no tolerance."""
    assert set(got) == set(expected)
    for path in expected:
        np.testing.assert_array_equal(got[path], expected[path], err_msg=path, strict=True)


@pytest.fixture(scope="module")
def camelyon_example():
    evaluation = Camelyon16(ROOT / "ground-truth" / "camelyon16")
    return evaluation, scored(evaluation, ROOT / "test" / "camelyon16" / "input")


@pytest.mark.parametrize("rule", ["2016", "corrected"])
def test_camelyon16_example_resamples_equal_score_aggregates(camelyon_example, rule):
    evaluation, results = camelyon_example
    evaluation = copy.copy(evaluation)
    evaluation.settings = dataclasses.replace(evaluation.settings, froc_thresholds=rule)
    n = len(results)
    assert any(result.hits is None for result in results.values())  # Test_114: AUC only
    counts = np.vstack([random_counts(7, 80, n), single_case_rows(n), np.ones((1, n), dtype=np.int64)])
    got = evaluation.aggregate(results, counts)
    expected = camelyon_expected(evaluation, results, counts)
    assert_identical(got, expected)
    assert np.isnan(got[SLIDE_AUC.path][80:80 + n]).all()  # one slide: one class
    metrics = evaluation.score_aggregates(results)
    for path in CAMELYON_PATHS:  # the row of ones: metrics.json's values
        assert got[path][-1] == value_at(metrics, path)


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


def synthetic_camelyon(seed, slides, digits):
    """Tumor slides with lesions (found or missed), ITC regions, false positives; normal slides
    with false positives (some none); excluded-from-lesion slides; tied probabilities."""
    rng = np.random.default_rng(seed)
    pool = np.array([0.0, 1e-50, 0.1, float(np.float32(0.1)), 0.25, 0.5, 1.0])
    truths, results = {}, {}
    for j in range(slides):
        tumor = bool(rng.random() < 0.5)
        lesion_evaluated = j % 7 != 3

        def confidences(k, digits=digits):
            return rng.choice(pool, k) if digits == "pool" else rng.random(k).round(digits) if digits else rng.random(k)

        false_positives = confidences(int(rng.integers(0, 12)))
        if not lesion_evaluated:
            hits = None
        elif tumor:
            lesions = confidences(int(rng.integers(0, 4)))
            lesions[rng.random(len(lesions)) < 0.3] = 0.0
            hits = SlideHits(false_positives, lesions, int(rng.integers(0, 3)))
        else:
            hits = SlideHits(false_positives, np.zeros(0), 0)
        probability = float(rng.choice([0.2, 0.5, 0.8])) if j % 3 == 0 else float(rng.random())
        name = f"Test_{j:03d}"
        truths[name] = SlideTruth(tumor, lesion_evaluated, None)
        results[name] = SlideResult(probability, hits)
    return truths, results


@pytest.mark.parametrize("rule", ["2016", "corrected"])
@pytest.mark.parametrize("digits", [None, 1, "pool"])
@pytest.mark.parametrize("seed", range(4))
def test_camelyon16_synthetic_resamples_equal_score_aggregates(camelyon_example, rule, digits, seed):
    """Tied confidences between false positives and lesions, float32 slots equal-looking to a
    float64 false positive, a confidence rounding to float32 zero (1e-50), FP rates landing
    exactly on the six targets, resamples without a lesion or without a class."""
    truths, results = synthetic_camelyon(seed * 10 + len(rule), 14, digits)
    evaluation = copy.copy(camelyon_example[0])
    evaluation.ground_truth = truths
    evaluation.settings = dataclasses.replace(evaluation.settings, froc_thresholds=rule)
    counts = np.vstack([random_counts(seed, 60, 14), single_case_rows(14)])
    got = evaluation.aggregate(results, counts)
    assert_identical(got, camelyon_expected(evaluation, results, counts))


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
    with pytest.raises(ValueError, match="non-negative"):
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
    small.RESAMPLE_ROWS = 7
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
