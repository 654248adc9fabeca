"""HECKTOR 2025 final rankings: the declared rules, and the ranked values on case weights
(aggregate with bootstrap counts) against the point values of each resample materialised as a data
set of its own (tests/test_bootstrap_contract.py's check, which runs it on the bundled examples of
every challenge), here on synthetic sets with HECKTOR's edge cases (patients without GTVp/GTVn,
tied times and risks, censoring, unlabelled patients, one-class resamples) and what each gives."""

import copy
import dataclasses
from pathlib import Path

import numpy as np

from evaluation.challenges.hecktor2025 import (
    BALANCED_ACCURACY,
    C_INDEX,
    GTVN_DSC,
    GTVN_F1,
    GTVP_DSC,
    SPECIFICITY,
    HecktorTask1,
    HecktorTask2,
    HecktorTask3,
)
from evaluation.challenges.hecktor2025.ranking import NestedBorda
from evaluation.challenges.hecktor2025.segmentation import PatientResult
from evaluation.declarations.ranking_rules import OrderedRanking, ranking_paths
from tests.test_bootstrap_contract import assert_resamples_match

ROOT = Path(__file__).resolve().parent.parent
TASKS = {"hecktor2025-task1": HecktorTask1, "hecktor2025-task2": HecktorTask2, "hecktor2025-task3": HecktorTask3}
RESAMPLES = 20
INNER_BOOTSTRAP = 20  # the tasks' own bootstrap intervals are not compared: kept short


def with_ground_truth(evaluation, ground_truth, **settings):
    """A copy of `evaluation` scoring against `ground_truth` ({patient: value}), settings changed."""
    changed = copy.copy(evaluation)
    changed.ground_truth = ground_truth
    changed.settings = dataclasses.replace(evaluation.settings, **settings)
    return changed


def random_counts(rng, n, resamples=RESAMPLES):
    """(resamples x n) multiplicities of n patients drawn n times with replacement, counted by
    np.bincount row by row (not by our draws_to_counts)."""
    draws = rng.integers(0, n, size=(resamples, n))
    return np.array([np.bincount(row, minlength=n) for row in draws], dtype=np.int64)


# ---- the declared rules ------------------------------------------------------------------------


def test_declared_final_rankings():
    assert HecktorTask1.final_rankings == (NestedBorda("borda", gtvp=GTVP_DSC, gtvn_dsc=GTVN_DSC, gtvn_f1=GTVN_F1),)
    assert ranking_paths(HecktorTask1.final_rankings) == ("aggregates.gtvp_dsc_mean", "aggregates.gtvn_dsc_agg",
                                                  "aggregates.gtvn_f1_agg")
    assert HecktorTask2.final_rankings == (OrderedRanking("c_index", (C_INDEX,)),)
    assert ranking_paths(HecktorTask2.final_rankings) == ("aggregates.c_index",)
    assert HecktorTask3.final_rankings == (OrderedRanking("balanced_accuracy", (BALANCED_ACCURACY, SPECIFICITY)),)
    assert ranking_paths(HecktorTask3.final_rankings) == ("aggregates.balanced_accuracy", "aggregates.specificity")


# ---- task 1, synthetic ----------------------------------------------------------------------------


def synthetic_task1(rng, n):
    """Patients with GTVp/GTVn on both sides, one side only, or neither; spacings differ."""
    results = {}
    for i in range(n):
        structures = []
        for _ in range(2):
            kind = rng.integers(0, 4)  # 0 neither, 1 truth only, 2 prediction only, 3 both
            truth = int(rng.integers(1, 5000)) if kind in (1, 3) else 0
            predicted = int(rng.integers(1, 5000)) if kind in (2, 3) else 0
            both = int(rng.integers(0, min(truth, predicted) + 1)) if kind == 3 else 0
            structures.append((both, predicted, truth))
        lesions = tuple(int(x) for x in rng.integers(0, 4, size=3) * (rng.random() < 0.7))
        spacing = rng.choice([0.5, 0.98, 1.0, 1.2]) ** 2 * rng.choice([1.0, 2.0, 3.27])
        results[f"P{i:03d}"] = PatientResult(structures[0], structures[1], float(spacing), lesions)
    return results


def task1(results, **settings):
    """Task 1 scoring synthetic patients (score_aggregates reads only their counts; each
    patient's ground truth, a mask path, is not read again)."""
    evaluation = HecktorTask1(ROOT / "ground-truth" / "hecktor2025-task1")
    return with_ground_truth(evaluation, dict.fromkeys(results), **settings)


def test_task1_synthetic_resamples_with_empty_structures():
    rng = np.random.default_rng(11)
    results = synthetic_task1(rng, 40)
    assert_resamples_match(task1(results), results, random_counts(rng, 40))
    changed = task1(results, gtvp_dsc_both_empty=0.0, gtvn_dsc_agg_all_empty=0.25, gtvn_f1_all_zero=0.5)
    assert_resamples_match(changed, results, random_counts(rng, 40))


def test_task1_resample_without_gtvn_takes_the_empty_set_settings():
    empty = PatientResult((0, 0, 0), (0, 0, 0), 2.0, (0, 0, 0))
    found = PatientResult((10, 20, 30), (5, 8, 9), 1.5, (1, 1, 0))
    results = {"A": empty, "B": found, "C": empty}
    counts = np.array([[3, 0, 0], [2, 0, 1], [0, 3, 0], [1, 1, 1]], dtype=np.int64)
    changed = task1(results, gtvp_dsc_both_empty=0.75, gtvn_dsc_agg_all_empty=0.25, gtvn_f1_all_zero=0.5)
    values = assert_resamples_match(changed, results, counts)
    assert values["aggregates.gtvp_dsc_mean"][0] == 0.75
    assert values["aggregates.gtvn_dsc_agg"][1] == 0.25 and values["aggregates.gtvn_f1_agg"][1] == 0.5


# ---- task 2, synthetic ----------------------------------------------------------------------------


def synthetic_task2(rng, n, unlabelled=0):
    """(ground truth, risks): tied times and risks, ~40% censored, some patients unlabelled (None)."""
    ground_truth, risks = {}, {}
    for i in range(n):
        patient = f"P{i:04d}"
        ground_truth[patient] = (float(rng.integers(30, 120) * 10), int(rng.random() < 0.6))
        risks[patient] = float(np.round(rng.normal(), 1))
    for patient in rng.choice(sorted(ground_truth), size=unlabelled, replace=False):
        ground_truth[patient] = None
    return ground_truth, risks


def on_ground_truth(challenge, ground_truth):
    """The challenge's evaluation (bundled settings) scoring against a synthetic ground truth."""
    evaluation = TASKS[challenge](ROOT / "ground-truth" / challenge)
    return with_ground_truth(evaluation, ground_truth, bootstrap_repetitions=INNER_BOOTSTRAP)


def task2(ground_truth):
    return on_ground_truth("hecktor2025-task2", ground_truth)


def task3(ground_truth):
    return on_ground_truth("hecktor2025-task3", ground_truth)


def test_task2_synthetic_resamples_skip_unlabelled_patients():
    rng = np.random.default_rng(5)
    ground_truth, risks = synthetic_task2(rng, 45, unlabelled=6)
    values = assert_resamples_match(task2(ground_truth), risks, random_counts(rng, 45))
    assert np.isfinite(values["aggregates.c_index"]).all()


def test_task2_resample_without_comparable_pair_is_nan():
    # A and C relapse, B and D are censored early, E is unlabelled.
    ground_truth = {"A": (100.0, 1), "B": (50.0, 0), "C": (300.0, 1), "D": (20.0, 0), "E": None}
    risks = {"A": 0.3, "B": 0.1, "C": 0.2, "D": 0.9, "E": 5.0}
    counts = np.array([
        [0, 3, 0, 1, 1],  # censored patients only (and the unlabelled one): no comparable pair
        [5, 0, 0, 0, 0],  # one relapsed patient, drawn five times: copies are never comparable
        [1, 1, 1, 1, 1],
        [2, 0, 1, 0, 2],
    ], dtype=np.int64)
    values = assert_resamples_match(task2(ground_truth), risks, counts)["aggregates.c_index"]
    assert np.isnan(values[:2]).all() and np.isfinite(values[2:]).all()


# ---- task 3, synthetic ----------------------------------------------------------------------------


def synthetic_task3(rng, n, unlabelled=0):
    ground_truth = {f"P{i:04d}": int(rng.random() < 0.6) for i in range(n)}
    predicted = {p: bool(label) != bool(rng.random() < 0.2) for p, label in ground_truth.items()}
    for patient in rng.choice(sorted(ground_truth), size=unlabelled, replace=False):
        ground_truth[patient] = None
    return ground_truth, predicted


def test_task3_synthetic_resamples_skip_unlabelled_patients():
    rng = np.random.default_rng(9)
    ground_truth, predicted = synthetic_task3(rng, 35, unlabelled=5)
    values = assert_resamples_match(task3(ground_truth), predicted, random_counts(rng, 35))
    assert np.isfinite(values["aggregates.balanced_accuracy"]).all()


def test_task3_resample_with_one_class_is_nan_for_both_values():
    ground_truth = {"A": 1, "B": 0, "C": 1, "D": None}
    predicted = {"A": True, "B": True, "C": False, "D": False}
    counts = np.array([
        [2, 0, 1, 1],  # positives only: no specificity, no balanced accuracy
        [0, 3, 0, 1],  # a negative only: specificity exists, balanced accuracy does not (both NaN)
        [1, 1, 1, 1],
    ], dtype=np.int64)
    values = assert_resamples_match(task3(ground_truth), predicted, counts)
    for path in ("aggregates.balanced_accuracy", "aggregates.specificity"):
        assert np.isnan(values[path][:2]).all() and np.isfinite(values[path][2]), path


def test_task1_point_values_are_the_plain_loops_bit_for_bit():
    # metrics.json's bits: np.mean of the per-patient GTVp Dice, the GTVn volumes added patient after
    # patient (past 8 patients a matrix product or a pairwise sum gives other last bits)
    rng = np.random.default_rng(4)
    for n in (7, 9, 130, 700):
        results = synthetic_task1(rng, n)
        point = task1(results).point_values(results)
        dice, volumes = [], [0.0, 0.0, 0.0]
        for patient in sorted(results):
            result = results[patient]
            both = result.gtvp[1] + result.gtvp[2]
            dice.append(2.0 * result.gtvp[0] / both if both else 1.0)
            for k in range(3):
                volumes[k] += result.gtvn[k] * result.voxel_volume
        assert point["aggregates.gtvp_dsc_mean"] == float(np.mean(dice)), n
        assert point["aggregates.gtvn_dsc_agg"] == 2.0 * volumes[0] / (volumes[1] + volumes[2]), n
