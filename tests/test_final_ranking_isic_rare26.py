"""The final ranking's hooks of ISIC and RARE26 (python -m evaluation.leaderboard).

ISIC: one aggregate makes the ranked values of metrics.json (the row of ones) and of every
bootstrap resample (rows of multiplicities); that a resample's values are the point values of the
materialised resample is tests/test_bootstrap_contract.py's (every challenge, ISIC's synthetic
truths with fractional and zero weights among its edges); here, that they do not depend on blocks
or on the previous submission, and the declared rule. RARE26: its own repetitions are the
resamples, their median is metrics.json's Score bit for bit, each repetition the official
procedure's (benchmarks/rare26_official.py, scikit-learn). Both: the ROC curves of the report."""

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from benchmarks.rare26_official import load_arrays, official_image_level, official_patient_level
from evaluation.challenges.isic import BALANCED_ACCURACY, MEAN_AUC, Isic2018, Isic2019, Truth, TruthRows
from evaluation.challenges.rare26 import OVER_REPETITIONS, SCORE, Rare26, Rare26Settings
from evaluation.challenges.rare26 import scoring as rare26_scoring
from evaluation.declarations.ranking_rules import OrderedRanking, ranking_paths
from evaluation.metrics.resampling import draws_to_counts
from evaluation.platform.outputs import Undefined
from evaluation.run import matched_cases, score_case
from tests.bundled import is_bundled
from tests.test_bootstrap_contract import synthetic_isic

ROOT = Path(__file__).resolve().parent.parent
ISIC_PATHS = ranking_paths(Isic2019.final_rankings)


def bundled(evaluation_class, challenge, settings=None):
    """The evaluation of a bundled example's ground truth and its per-case results."""
    evaluation = evaluation_class(ROOT / "ground-truth" / challenge, settings)
    cases = matched_cases(evaluation, ROOT / "test" / challenge / "input")
    results = {case.case_id: score_case(evaluation, case) for case in cases}
    return evaluation, results


def bootstrap_counts(n, resamples, seed):
    rng = np.random.default_rng(seed)
    return draws_to_counts(rng.integers(0, n, size=(resamples, n)), n)


# ---- ISIC: the bootstrap contract itself is tests/test_bootstrap_contract.py ---------------------


def test_isic_values_do_not_depend_on_blocks_or_on_the_previous_submission():
    evaluation, results, _, _ = synthetic_isic(3, True)
    _, other, _, _ = synthetic_isic(4, True)
    counts = bootstrap_counts(len(results), 21, seed=9)
    whole = evaluation.aggregate(results, counts)
    evaluation.aggregate(other, counts)  # another submission in between
    parts = [evaluation.aggregate(results, counts[start:start + 5]) for start in range(0, 21, 5)]
    for path in ISIC_PATHS:
        np.testing.assert_allclose(np.concatenate([p[path] for p in parts]), whole[path], rtol=1e-12, atol=0)
    # The framework's default draws go through it: one value per resample, the same for a seed.
    drawn = evaluation.ranking_resamples(results, 50, 11)
    assert {path: v.shape for path, v in drawn.items()} == dict.fromkeys(ISIC_PATHS, (50,))
    again = evaluation.ranking_resamples(results, 50, 11)
    for path in ISIC_PATHS:
        np.testing.assert_array_equal(drawn[path], again[path])


def test_isic_declares_the_isic_rule():
    assert Isic2018.final_rankings == Isic2019.final_rankings == (
        OrderedRanking("balanced_accuracy", (BALANCED_ACCURACY, MEAN_AUC)),)
    assert ISIC_PATHS == ("aggregate.balanced_accuracy", "aggregate.auc")
    assert all(column.order == "desc" for column in Isic2019.final_rankings[0].keys)


# ---- RARE26: its own repetitions ----------------------------------------------------------------


def test_rare26_repetitions_are_the_resamples_and_their_median_is_the_score():
    evaluation, results = bundled(Rare26, "rare26")
    resamples, seed, note = evaluation.resample_plan(200, 1)
    assert (resamples, seed) == (evaluation.settings.repetitions, evaluation.settings.seed) == (1000, 2026)
    assert "RARE26" in note and "same draws" in note
    values = evaluation.ranking_resamples(results, resamples, seed)
    assert list(values) == [SCORE.path] and values[SCORE.path].shape == (resamples,)
    metrics = evaluation.score_aggregates(results)
    expected = json.loads((ROOT / "test" / "rare26" / "expected_metrics.json").read_text())
    assert float(np.median(values[SCORE.path])) == metrics[SCORE.path] == expected[SCORE.path]  # bit for bit
    lower, upper = np.percentile(values[SCORE.path], [2.5, 97.5])
    _, ppv_lower, ppv_upper = OVER_REPETITIONS[rare26_scoring.PPV_AT_RECALL]
    assert (lower, upper) == (metrics[ppv_lower.path], metrics[ppv_upper.path])
    # One path: the repetitions metrics.json summarises are those the final ranking resamples,
    # every metric's median and interval read off them.
    repetitions, _ = evaluation.repetitions(evaluation.test_set(results), resamples, seed)
    np.testing.assert_array_equal(repetitions[rare26_scoring.PPV_AT_RECALL], values[SCORE.path])
    assert rare26_scoring.score(repetitions) == metrics[SCORE.path]
    for metric, columns in OVER_REPETITIONS.items():
        summary = (np.median(repetitions[metric]), *np.percentile(repetitions[metric], [2.5, 97.5]))
        assert tuple(metrics[column.path] for column in columns) == summary
    # Each repetition is the official procedure's PPV@90 (scikit-learn) on the same draws.
    y, s, _ = load_arrays(ROOT / "test" / "rare26" / "input", ROOT / "ground-truth" / "rare26")
    official = official_image_level(y, s, seed, repetitions=resamples)[:, 2]
    np.testing.assert_allclose(values[SCORE.path], official, rtol=0, atol=1e-12)


def test_rare26_patient_sampling_repetitions_too():
    settings = Rare26Settings(sampling="patient", repetitions=60, seed=5)
    evaluation, results = bundled(Rare26, "rare26", settings)
    resamples, seed, _ = evaluation.resample_plan(1000, 0)
    assert (resamples, seed) == (60, 5)
    values = evaluation.ranking_resamples(results, resamples, seed)[SCORE.path]
    assert float(np.median(values)) == evaluation.score_aggregates(results)[SCORE.path]
    y, s, patients = load_arrays(ROOT / "test" / "rare26" / "input", ROOT / "ground-truth" / "rare26")
    np.testing.assert_allclose(values, official_patient_level(y, s, patients, seed, repetitions=60)[:, 2],
                               rtol=0, atol=1e-12)


def test_rare26_declares_its_rule():
    """Score descending, the final ranking's key being the leaderboard's own score column."""
    assert Rare26.final_rankings == (OrderedRanking("score", (SCORE,)),)
    assert Rare26.final_rankings[0].keys[0] is Rare26.leaderboards[0].score is SCORE
    assert (SCORE.path, SCORE.order) == ("Score", "desc")


# ---- curves of the report -----------------------------------------------------------------------


def assert_well_formed(curve, chart, title):
    assert (curve["chart"], curve["title"]) == (chart, title)
    assert (curve["x_title"], curve["y_title"]) == ("False positive rate", "Sensitivity")
    points = curve["points"]
    assert 2 <= len(points) <= 500
    assert all(type(x) is float and type(y) is float and 0 <= x <= 1 and 0 <= y <= 1 for x, y in points)
    assert points[0] == [0.0, 0.0] and points[-1] == [1.0, 1.0]
    xs, ys = np.array(points).T
    assert (np.diff(xs) >= 0).all() and (np.diff(ys) >= 0).all()  # a ROC curve only climbs and moves right
    json.dumps(curve, allow_nan=False)


def test_isic_curves_one_per_category_with_both_classes():
    evaluation, results = bundled(Isic2019, "isic2019")
    metrics = evaluation.score_aggregates(results)
    curves = evaluation.ranking_curves(results, metrics)
    drawn = [c for c in evaluation.table.categories if not isinstance(metrics["roc_curves"][c], Undefined)]
    if is_bundled("isic2019"):  # a fact of the synthetic ground truth (tests/bundled.py)
        assert "DF" not in drawn  # its only image has weight 0: no curve, as in metrics.json
    assert [c["chart"] for c in curves] == [f"roc_{c.lower()}" for c in drawn]
    for curve, category in zip(curves, drawn, strict=True):
        assert_well_formed(curve, f"roc_{category.lower()}", f"ROC, {category}")
        # The curve of metrics.json (simplified for it) lies on the drawn one: same ends, same AUC.
        xs, ys = np.array(curve["points"]).T
        area = float(np.sum(np.diff(xs) * (ys[1:] + ys[:-1]) / 2))
        assert area == pytest.approx(metrics["per_category"]["auc"][category], abs=2e-4)


def test_isic_curves_of_many_points_are_thinned_to_500():
    evaluation, _, _, _ = synthetic_isic(5, True, images=40)
    rng = np.random.default_rng(5)
    images = 3000
    categories = evaluation.table.categories
    labels = rng.integers(0, len(categories), images)
    values = np.eye(len(categories))[labels]
    ids = tuple(f"IMG_{n:05d}" for n in range(images))
    evaluation.ground_truth = TruthRows(Truth(ids, categories, values, np.ones(images), np.ones(images)))
    results = {image: rng.random(len(categories)) for image in ids}  # full precision: a point per image
    curves = evaluation.ranking_curves(results, evaluation.score_aggregates(results))
    assert len(curves) == len(categories)
    for curve, category in zip(curves, categories, strict=True):
        assert_well_formed(curve, f"roc_{category.lower()}", f"ROC, {category}")
        assert len(curve["points"]) == 500


def test_rare26_curve_is_the_test_set_roc():
    evaluation, results = bundled(Rare26, "rare26")
    metrics = evaluation.score_aggregates(results)
    (curve,) = evaluation.ranking_curves(results, metrics)
    assert_well_formed(curve, "roc", "ROC, whole test set")
    y, s, _ = load_arrays(ROOT / "test" / "rare26" / "input", ROOT / "ground-truth" / "rare26")
    xs, ys = np.array(curve["points"]).T
    assert float(np.sum(np.diff(xs) * (ys[1:] + ys[:-1]) / 2)) == pytest.approx(roc_auc_score(y, s), abs=2e-3)
