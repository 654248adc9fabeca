"""The lesions kind (evaluation/kinds/lesions.py) on real files: every metric and aggregation
against an independent computation (scipy's labelling and numpy counts as autoPET and ISLES
compute them; panoptica's one-to-one matching), multi-class masks, empty cases, anisotropic
spacing; the bootstrap rows equal to the point values of the drawn cases; hostile masks refused
in one line naming the case; a noise mask of 10⁵ lesions scored in bounded time."""

from __future__ import annotations

import json
import time
from typing import ClassVar

import numpy as np
import pytest
from scipy import ndimage

from evaluation import run
from evaluation.errors import SetupError, SubmissionError
from evaluation.kinds.declared import ordered_ranking, ranking_rule_named
from evaluation.kinds.lesions import Lesions
from tests.label_kind_files import blobs, write_image, write_submission

SHAPE = (12, 20, 24)
SPACING = (0.7, 0.9, 3.0)  # x, y, z (mm): anisotropic
SOCKET = "lesion-segmentation"


class AnyOverlap(Lesions):
    """Two classes, 6-connected lesions, a hit is any shared voxel, many to many (ISLES, autoPET)."""

    name = "test-lesions-any"
    title = "any overlap"
    labels: ClassVar = {1: "edema", 2: "tumour"}
    connectivity = 6
    ranked_metrics: ClassVar = {"lesion_f1": "pooled", "lesion_precision": "pooled", "lesion_recall": "median",
                      "dice": "pooled", "fp_volume": "mean", "fn_volume": "median", "volume_difference": "mean",
                      "lesion_count_difference": "mean"}
    labels_ranked = "each"


class IouHungarian(Lesions):
    """One class, 26-connected lesions, one to one at IoU > 0.3 (largest total IoU), volumes in mm³,
    and a composite score ranked first."""

    name = "test-lesions-iou"
    title = "IoU"
    connectivity = 26
    hit_criterion = "iou"
    hit_threshold = 0.3
    matching = "hungarian"
    volume_unit = "mm3"
    ranked_metrics: ClassVar = {"lesion_f1": "mean", "fp_volume": "mean", "dice": "median"}
    composite: ClassVar = {"lesion_f1": 1.0, "fp_volume": -0.01}


def case_masks(rng: np.random.Generator) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{case id: (truth, prediction)} label maps of classes 1 and 2, with the empty cases: both
    empty, only the prediction has lesions (class 1), only the truth has (class 2)."""
    cases = {"a-empty": (np.zeros(SHAPE, np.uint8), np.zeros(SHAPE, np.uint8))}
    only_predicted = np.zeros(SHAPE, np.uint8)
    only_predicted[blobs(rng, SHAPE, 2)] = 1
    cases["b-false-only"] = (np.zeros(SHAPE, np.uint8), only_predicted)
    only_true = np.zeros(SHAPE, np.uint8)
    only_true[blobs(rng, SHAPE, 3)] = 2
    cases["c-missed-only"] = (only_true, np.zeros(SHAPE, np.uint8))
    for number in range(4):
        truth = np.zeros(SHAPE, np.uint8)
        prediction = np.zeros(SHAPE, np.uint8)
        for label in (1, 2):
            true_mask = blobs(rng, SHAPE, int(rng.integers(1, 5)))
            truth[true_mask] = label
            moved = np.roll(true_mask, tuple(int(v) for v in rng.integers(-2, 3, 3)), axis=(0, 1, 2))
            keep = rng.random() < 0.8
            false = blobs(rng, SHAPE, int(rng.integers(0, 3)), 2.5)
            prediction[(moved if keep else np.zeros_like(moved)) | false] = label
        cases[f"d-{number}"] = (truth, prediction)
    return cases


def written(tmp_path, cases, spacing=SPACING):
    ground_truth = tmp_path / "ground-truth"
    for case_id, (truth, _) in cases.items():
        write_image(ground_truth / f"{case_id}.mha", truth, spacing)
    write_submission(tmp_path / "input", {case_id: {SOCKET: (prediction, spacing)}
                                          for case_id, (_, prediction) in cases.items()})
    return ground_truth, tmp_path / "input"


# ---- the independent computation -------------------------------------------------------------


def any_overlap_case(truth: np.ndarray, prediction: np.ndarray, structure, voxel_ml: float) -> dict[str, float]:
    """autoPET's and ISLES's counts: scipy's components, a true lesion found when any predicted
    voxel lies in it, a predicted lesion false when none of its voxels is true."""
    true_lesions, n_true = ndimage.label(truth, structure)
    predicted_lesions, n_predicted = ndimage.label(prediction, structure)
    found = set(np.unique(true_lesions[truth & prediction]).tolist())
    touching = set(np.unique(predicted_lesions[truth & prediction]).tolist())
    tp, fp, fn = len(found), n_predicted - len(touching), n_true - len(found)
    false = [k for k in range(1, n_predicted + 1) if k not in touching]
    missed = [k for k in range(1, n_true + 1) if k not in found]
    total = truth.sum() + prediction.sum()
    nothing = tp + fp + fn == 0
    return {"tp": tp, "fp": fp, "fn": fn,
            "lesion_f1": 1.0 if nothing else 2 * tp / (2 * tp + fp + fn),
            "lesion_precision": 1.0 if nothing else (tp / (tp + fp) if tp + fp else 0.0),
            "lesion_recall": 1.0 if nothing else (tp / (tp + fn) if tp + fn else 0.0),
            "dice": 2 * (truth & prediction).sum() / total if total else 1.0,
            "fp_volume": np.isin(predicted_lesions, false).sum() * voxel_ml,
            "fn_volume": np.isin(true_lesions, missed).sum() * voxel_ml,
            "volume_difference": abs(int(prediction.sum()) - int(truth.sum())) * voxel_ml,
            "lesion_count_difference": abs(n_predicted - n_true),
            "intersection": (truth & prediction).sum() * voxel_ml, "total": total * voxel_ml}


def pooled(cases: list[dict], metric: str) -> float:
    tp, fp, fn = (sum(case[key] for case in cases) for key in ("tp", "fp", "fn"))
    if metric == "dice":
        total = sum(case["total"] for case in cases)
        return 2 * sum(case["intersection"] for case in cases) / total if total else 1.0
    if tp + fp + fn == 0:
        return 1.0
    bottom = {"lesion_f1": 2 * tp + fp + fn, "lesion_precision": tp + fp, "lesion_recall": tp + fn}[metric]
    return (2 * tp if metric == "lesion_f1" else tp) / bottom if bottom else 0.0


def test_any_overlap_equals_scipy_and_numpy_counts(tmp_path):
    cases = case_masks(np.random.default_rng(1))
    ground_truth, input_dir = written(tmp_path, cases)
    metrics = run.evaluate(AnyOverlap(ground_truth), input_dir)[0]
    voxel_ml = float(np.prod(SPACING)) / 1000
    structure = ndimage.generate_binary_structure(3, 1)
    for label, name in AnyOverlap.labels.items():
        theirs = {case_id: any_overlap_case(truth == label, prediction == label, structure, voxel_ml)
                  for case_id, (truth, prediction) in cases.items()}
        for metric in AnyOverlap.ranked_metrics:
            values = [theirs[case_id][metric] for case_id in sorted(cases)]
            reported = metrics["aggregates"][name][metric]
            assert reported["mean"] == pytest.approx(np.mean(values), rel=1e-12, abs=1e-15), (name, metric)
            assert reported["median"] == pytest.approx(np.median(values), rel=1e-12, abs=1e-15), (name, metric)
            if "pooled" in reported:
                assert reported["pooled"] == pytest.approx(pooled(list(theirs.values()), metric), rel=1e-12)
            for case_id in cases:
                assert metrics["cases"][case_id][name][metric] == pytest.approx(theirs[case_id][metric], rel=1e-12,
                                                                                abs=1e-15), (case_id, name, metric)
        counts = metrics["aggregates"][name]["counts"]
        assert [counts[key] for key in ("tp", "fp", "fn")] == [sum(c[key] for c in theirs.values())
                                                               for key in ("tp", "fp", "fn")]
    # labels_ranked "each": one column per class and metric, at the path of its aggregate
    paths = AnyOverlap.ranked_paths
    assert paths[0] == "aggregates.edema.lesion_f1.pooled" and len(paths) == 16
    assert "aggregates.tumour.fn_volume.median" in paths
    assert AnyOverlap.final_rankings[0].name == "edema_lesion_f1_pooled"
    # the empty cases: nothing on either side scores 1 and 0; a false lesion alone scores F1 0
    assert metrics["cases"]["a-empty"]["edema"]["lesion_f1"] == 1.0
    assert metrics["cases"]["b-false-only"]["edema"]["lesion_f1"] == 0.0
    assert metrics["cases"]["b-false-only"]["edema"]["fp_volume"] > 0
    assert metrics["cases"]["c-missed-only"]["tumour"]["fn_volume"] > 0


def panoptica_counts(truth: np.ndarray, prediction: np.ndarray, threshold: float) -> tuple[int, int, int]:
    """panoptica's one-to-one matching of scipy's 26-connected components (largest total IoU above
    the threshold)."""
    from panoptica import MaxBipartiteMatching, Metric, UnmatchedInstancePair
    from panoptica.utils.citation_reminder import disable_citation_reminder

    disable_citation_reminder()
    structure = np.ones((3, 3, 3))
    true_lesions, n_true = ndimage.label(truth, structure)
    predicted_lesions, n_predicted = ndimage.label(prediction, structure)
    if n_true == 0 or n_predicted == 0:
        return 0, n_predicted, n_true
    matcher = MaxBipartiteMatching(Metric.IOU, threshold, strict_threshold=True)
    pair = UnmatchedInstancePair(predicted_lesions.astype(np.uint32), true_lesions.astype(np.uint32))
    tp = len(matcher._match_instances(pair, None, matching_threshold=threshold).get_one_to_one_dictionary())
    return tp, n_predicted - tp, n_true - tp


def test_iou_hungarian_equals_panoptica(tmp_path):
    pytest.importorskip("panoptica")
    cases = {case_id: (truth > 0, prediction > 0) for case_id, (truth, prediction)
             in case_masks(np.random.default_rng(2)).items()}
    ground_truth, input_dir = written(tmp_path, {k: (t.astype(np.uint8), p.astype(np.uint8))
                                                 for k, (t, p) in cases.items()})
    evaluation = IouHungarian(ground_truth)
    metrics = run.evaluate(evaluation, input_dir)[0]
    f1s, fp_volumes, dices = [], [], []
    structure = np.ones((3, 3, 3))
    for case_id in sorted(cases):
        truth, prediction = cases[case_id]
        tp, fp, fn = panoptica_counts(truth, prediction, 0.3)
        assert (metrics["cases"][case_id]["lesion"]["tp"], metrics["cases"][case_id]["lesion"]["fp"],
                metrics["cases"][case_id]["lesion"]["fn"]) == (tp, fp, fn), case_id
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0)
        other = any_overlap_case(truth, prediction, structure, float(np.prod(SPACING)))  # volumes in mm³
        fp_volumes.append(other["fp_volume"])
        dices.append(other["dice"])
    aggregates = metrics["aggregates"]
    assert aggregates["lesion_f1_mean"] == pytest.approx(np.mean(f1s), rel=1e-12)
    assert aggregates["fp_volume_mean"] == pytest.approx(np.mean(fp_volumes), rel=1e-12)
    assert aggregates["dice_median"] == pytest.approx(np.median(dices), rel=1e-12)
    assert aggregates["score"] == pytest.approx(np.mean(f1s) - 0.01 * np.mean(fp_volumes), rel=1e-12)
    board = IouHungarian.leaderboards[0]
    assert board.score.path == "aggregates.score" and [c.path for c in board.extra_columns] == [
        "aggregates.lesion_f1_mean", "aggregates.fp_volume_mean", "aggregates.dice_median"]
    assert metrics["units"]["volume"] == "mm3"


def test_bootstrap_rows_equal_the_drawn_cases(tmp_path):
    """A row of case counts gives the values of the test set holding each case that many times."""
    cases = case_masks(np.random.default_rng(3))
    ground_truth, input_dir = written(tmp_path, cases)
    evaluation = AnyOverlap(ground_truth)
    results = {case.case_id: run.score_case(evaluation, case) for case in run.matched_cases(evaluation, input_dir)}
    ids = sorted(results)
    counts = np.random.default_rng(4).integers(0, 3, size=(5, len(ids)))
    counts[:, 0] += 1  # no empty row
    rows = evaluation.aggregate(results, counts)
    for row, drawn in enumerate(counts):
        repeated = {f"{case_id}#{copy}": results[case_id] for case_id, n in zip(ids, drawn, strict=True)
                    for copy in range(n)}
        for path, value in evaluation.point_values(repeated).items():
            assert rows[path][row] == pytest.approx(value, rel=1e-12, abs=1e-15), path


def hostile(tmp_path, name: str, prediction: np.ndarray, spacing=SPACING) -> str:
    """The message a submission whose first case's mask is `prediction` fails with."""
    rng = np.random.default_rng(5)
    truth = np.zeros(SHAPE, np.uint8)
    truth[blobs(rng, SHAPE, 3)] = 1
    folder = tmp_path / name
    write_image(folder / "ground-truth" / "scan-1.mha", truth, SPACING)
    write_image(folder / "ground-truth" / "scan-2.mha", truth, SPACING)
    write_submission(folder / "input", {"scan-1": {SOCKET: (prediction, spacing)},
                                        "scan-2": {SOCKET: (truth, SPACING)}})
    evaluation = IouHungarian(folder / "ground-truth")
    with pytest.raises(SubmissionError) as raised:
        run.evaluate(evaluation, folder / "input")[0]
    return str(raised.value)


def test_hostile_masks_are_refused_in_one_line_naming_the_case(tmp_path):
    good = np.zeros(SHAPE, np.uint8)
    stray, negative, fractional = good.copy(), good.astype(np.int16), good.astype(np.float32)
    stray[1, 2, 3] = 2
    negative[0, 0, 0] = -3
    fractional[0, 0, :2] = (np.nan, 1.5)
    messages = {
        "grid": hostile(tmp_path, "grid", good, (0.7, 0.9, 1.5)),
        "size": hostile(tmp_path, "size", good[:, :, :-1]),
        "dimensions": hostile(tmp_path, "dimensions", good[0], SPACING[:2]),
        "label": hostile(tmp_path, "label", stray),
        "negative": hostile(tmp_path, "negative", negative),
        "float": hostile(tmp_path, "float", fractional),
    }
    for kind, message in messages.items():
        assert message.startswith("Case scan-1") and "\n" not in message, (kind, message)
    assert "spacing (0.7, 0.9, 1.5) differs from the ground truth's (0.7, 0.9, 3)" in messages["grid"]
    assert "size (23, 20, 12) differs" in messages["size"]
    assert "the lesion mask is 2D, size (24, 20), where the ground truth is 3D" in messages["dimensions"]
    assert "label(s) 2 (1 voxel); only 0 and 1 are allowed" in messages["label"]
    assert "-3 (1 voxel)" in messages["negative"]
    assert "NaN (1 voxel)" in messages["float"] and "1.5 (1 voxel)" in messages["float"]
    # a float mask of whole numbers is a mask
    assert hostile_free(tmp_path, good.astype(np.float32))


def hostile_free(tmp_path, prediction) -> bool:
    folder = tmp_path / "whole-floats"
    write_image(folder / "ground-truth" / "scan-1.mha", np.zeros(SHAPE, np.uint8), SPACING)
    write_submission(folder / "input", {"scan-1": {SOCKET: (prediction, SPACING)}})
    metrics, _ = run.evaluate(IouHungarian(folder / "ground-truth"), folder / "input")
    return metrics["aggregates"]["lesion_f1_mean"] == 1.0


def test_a_ground_truth_label_out_of_range_is_the_organizers(tmp_path):
    truth = np.zeros(SHAPE, np.uint8)
    truth[0, 0, 0] = 7
    write_image(tmp_path / "ground-truth" / "scan-1.mha", truth, SPACING)
    write_submission(tmp_path / "input", {"scan-1": {SOCKET: (np.zeros(SHAPE, np.uint8), SPACING)}})
    with pytest.raises(SetupError, match=r"^Ground truth scan-1\.mha holds label\(s\) 7 \(1 voxel\); only 0 and 1"):
        run.evaluate(IouHungarian(tmp_path / "ground-truth"), tmp_path / "input")[0]


def test_a_noise_mask_of_many_lesions_is_scored_in_bounded_time():
    """10⁵ and more 6-connected components (a random mask at 15%): scored, not refused, in
    seconds (the matching never forms a lesions × lesions matrix)."""
    from evaluation.metrics.instances import connected_components

    rng = np.random.default_rng(6)
    shape = (100, 160, 160)
    noise = rng.random(shape) < 0.15
    truth = np.zeros(shape, dtype=bool)
    truth[40:60, 60:100, 60:100] = True
    components = connected_components(noise, 6)[1]
    assert components > 100_000

    class Noise(Lesions):
        name = "test-lesions-noise"
        connectivity = 6
        hit_criterion, hit_threshold, matching = "iou", 0.1, "hungarian"
        ranked_metrics: ClassVar = {"lesion_f1": "pooled", "fp_volume": "mean"}

    started = time.perf_counter()
    scored = Noise.score_label(Noise.__new__(Noise), noise, truth, (1.0, 1.0, 1.0))
    elapsed = time.perf_counter() - started
    assert scored["fp"] + scored["tp"] >= components - 1 and scored["tp"] + scored["fn"] == 1
    assert elapsed < 20, elapsed


class AnyClass(AnyOverlap):
    """AnyOverlap's two classes, ranked also on every lesion whatever its class (the label maps
    as one foreground)."""

    name = "test-lesions-any-class"
    ranked_metrics: ClassVar = {"class_agnostic_lesion_f1": "pooled", "lesion_f1": "pooled",
                                "class_agnostic_dice": "mean", "class_agnostic_fn_volume": "mean_positive"}
    labels_ranked = "mean"


def test_class_agnostic_lesions_equal_scipy_counts_on_the_merged_masks(tmp_path):
    """class_agnostic_<metric>: scipy's components of `label != 0` on both sides; a lesion found
    with the wrong class (case e-swapped) is a hit there, a miss and a false lesion per class."""
    cases = case_masks(np.random.default_rng(3))
    truth = np.zeros(SHAPE, np.uint8)
    truth[2:6, 3:9, 4:10] = 1
    truth[7:10, 12:17, 14:20] = 2
    swapped = np.where(truth == 1, 2, np.where(truth == 2, 1, 0)).astype(np.uint8)  # each found, class wrong
    cases["e-swapped"] = (truth, swapped)
    ground_truth, input_dir = written(tmp_path, cases)
    evaluation = AnyClass(ground_truth)
    metrics = run.evaluate(evaluation, input_dir)[0]
    structure = ndimage.generate_binary_structure(3, 1)
    voxel_ml = float(np.prod(SPACING)) / 1000
    theirs = {case_id: any_overlap_case(t != 0, p != 0, structure, voxel_ml) for case_id, (t, p) in cases.items()}
    aggregates = metrics["aggregates"]
    assert aggregates["class_agnostic"]["lesion_f1"]["pooled"] == pytest.approx(
        pooled(list(theirs.values()), "lesion_f1"), rel=1e-12)
    assert aggregates["class_agnostic"]["dice"]["mean"] == pytest.approx(
        np.mean([t["dice"] for t in theirs.values()]), rel=1e-12)
    positive = [case_id for case_id, (t, _) in cases.items() if t.any()]
    assert aggregates["class_agnostic"]["fn_volume"]["mean_positive"] == pytest.approx(
        np.mean([theirs[c]["fn_volume"] for c in positive]), rel=1e-12)
    for case_id in cases:
        for metric in ("lesion_f1", "dice", "fn_volume", "tp", "fp", "fn"):
            assert metrics["cases"][case_id]["class_agnostic"][metric] == pytest.approx(theirs[case_id][metric],
                                                                                        rel=1e-12, abs=1e-15)
    assert metrics["cases"]["e-swapped"]["class_agnostic"]["lesion_f1"] == 1.0
    assert metrics["cases"]["e-swapped"]["edema"]["lesion_f1"] == 0.0  # per class: missed, and one false
    assert AnyClass.ranked_paths[:2] == ("aggregates.class_agnostic.lesion_f1.pooled", "aggregates.lesion_f1_pooled")
    # a bootstrap row of case counts: the pooled counts of the cases drawn
    results = {case.case_id: run.score_case(evaluation, case) for case in run.matched_cases(evaluation, input_dir)}
    ids = sorted(results)
    counts = np.random.default_rng(5).integers(0, 3, size=(4, len(ids)))
    rows = evaluation.aggregate(results, counts)
    for row, drawn in enumerate(counts):
        repeated = [theirs[case_id] for case_id, n in zip(ids, drawn, strict=True) for _ in range(n)]
        assert rows["aggregates.class_agnostic.lesion_f1.pooled"][row] == pytest.approx(
            pooled(repeated, "lesion_f1"), rel=1e-12)


def test_a_class_agnostic_metric_needs_two_labels():
    with pytest.raises(TypeError, match="with one label"):
        type("Bad", (Lesions,), {"name": "bad", "ranked_metrics": {"class_agnostic_dice": "mean"}})

def test_declarations_are_checked_at_import():
    def declare(**attributes):
        return type("Bad", (Lesions,), {"name": "bad", **attributes})

    with pytest.raises(TypeError, match="unknown metric 'f1'"):
        declare(ranked_metrics={"f1": "mean"})
    with pytest.raises(TypeError, match="fp_volume has no pooled form"):
        declare(ranked_metrics={"fp_volume": "pooled"})
    with pytest.raises(TypeError, match="'sum' is not one of"):
        declare(ranked_metrics={"dice": "sum"})
    with pytest.raises(TypeError, match="threshold"):
        declare(ranked_metrics={"dice": "mean"}, hit_criterion="iou", hit_threshold=1.5)
    with pytest.raises(TypeError, match="connectivity"):
        declare(ranked_metrics={"dice": "mean"}, connectivity=5)
    with pytest.raises(TypeError, match="not a usable label name"):
        declare(ranked_metrics={"dice": "mean"}, labels={1: "dice"})
    with pytest.raises(TypeError, match="composite weighs 'fn_volume'"):
        declare(ranked_metrics={"dice": "mean"}, composite={"fn_volume": -1.0})


def test_ranking_rules_by_name():
    from evaluation.declarations import ranking_rules

    def declare(ranking):
        return type("Ranked", (Lesions,), {"name": "ranked", "ranking": ranking, "labels": {1: "a", 2: "b"},
                                           "ranked_metrics": {"lesion_f1": "pooled", "fp_volume": "mean"}})

    assert ranking_rule_named("ordered", "Ranked") == (ordered_ranking, "abs")
    assert isinstance(declare("ordered").final_rankings[0], ranking_rules.OrderedRanking)
    mean_of_ranks = declare("mean_of_ranks")
    assert isinstance(mean_of_ranks.final_rankings[0], ranking_rules.MeanOfRanks)
    assert mean_of_ranks.final_rankings[0].paths == ("aggregates.lesion_f1_pooled", "aggregates.fp_volume_mean")
    assert mean_of_ranks.leaderboards[0].scoring_method == "avg"  # the platform ranks alike
    per_case = declare("case_rank_then_mean").final_rankings[0]
    assert isinstance(per_case, ranking_rules.MeanOfCaseRanks) and per_case.cases_path == "cases"
    assert per_case.case_paths == ("a.lesion_f1", "b.lesion_f1", "a.fp_volume", "b.fp_volume")
    with pytest.raises(TypeError, match="ranking 'borda'"):
        declare("borda")


class Flat(Lesions):
    """2D masks of two classes, 8-connected lesions, one to one greedy at Dice >= 0.2, the ranked
    values the mean over the classes."""

    name = "test-lesions-2d"
    labels: ClassVar = {1: "small", 3: "large"}
    connectivity = 8
    hit_criterion, hit_threshold, hit_inclusive, matching = "dice", 0.2, True, "greedy"
    ranked_metrics: ClassVar = {"lesion_recall": "pooled", "lesion_count_difference": "median"}


def test_2d_classes_averaged_equal_scipy_counts(tmp_path):
    """Greedy one-to-one at Dice >= 0.2 by its definition (pairs by descending Dice, each taken
    when both are free), on scipy's 8-connected components; the ranked value the mean over the
    classes of each class's pooled recall."""
    rng = np.random.default_rng(7)
    shape, spacing = (40, 48), (0.5, 0.5)
    cases = {}
    for number in range(4):
        truth, prediction = np.zeros(shape, np.uint8), np.zeros(shape, np.uint8)
        for label in (1, 3):
            true_mask = blobs(rng, shape, int(rng.integers(0, 5)), 5.0)
            truth[true_mask] = label
            moved = np.roll(true_mask, tuple(int(v) for v in rng.integers(-3, 4, 2)), axis=(0, 1))
            prediction[moved | blobs(rng, shape, int(rng.integers(0, 3)), 3.0)] = label
        cases[f"slide-{number}"] = (truth, prediction)
    ground_truth, input_dir = written(tmp_path, cases, spacing)
    metrics, _ = run.evaluate(Flat(ground_truth), input_dir)
    structure = np.ones((3, 3))
    recalls, count_differences = [], []
    for label, name in Flat.labels.items():
        found = true_total = 0
        differences = []
        for case_id in sorted(cases):
            truth, prediction = (cases[case_id][0] == label), (cases[case_id][1] == label)
            true_lesions, n_true = ndimage.label(truth, structure)
            predicted_lesions, n_predicted = ndimage.label(prediction, structure)
            pairs = []
            for t in range(1, n_true + 1):
                for p in range(1, n_predicted + 1):
                    a, b = true_lesions == t, predicted_lesions == p
                    score = 2 * (a & b).sum() / (a.sum() + b.sum())
                    if (a & b).any() and score >= 0.2:
                        pairs.append((-score, t, p))
            used_t, used_p = set(), set()
            for _, t, p in sorted(pairs):
                if t not in used_t and p not in used_p:
                    used_t.add(t)
                    used_p.add(p)
            assert metrics["cases"][case_id][name]["tp"] == len(used_t), (case_id, name)
            found, true_total = found + len(used_t), true_total + n_true
            differences.append(abs(n_predicted - n_true))
        fp = sum(metrics["cases"][c][name]["fp"] for c in cases)
        recalls.append(found / true_total if true_total else (1.0 if fp == 0 else 0.0))
        count_differences.append(float(np.median(differences)))
        assert metrics["aggregates"][name]["lesion_recall"]["pooled"] == pytest.approx(recalls[-1], rel=1e-12)
    assert metrics["aggregates"]["lesion_recall_pooled"] == pytest.approx(np.mean(recalls), rel=1e-12)
    assert metrics["aggregates"]["lesion_count_difference_median"] == pytest.approx(np.mean(count_differences))
    assert Flat.leaderboards[0].score.title == "Lesion recall (pooled, mean over classes)"


class AutoPet(Lesions):
    """autoPET's aggregation: Dice and FN volume averaged over the cases whose truth has a lesion,
    FP volume over every case."""

    name = "test-lesions-positive"
    title = "positive cases"
    ranked_metrics: ClassVar = {"dice": "mean_positive", "fp_volume": "mean", "fn_volume": "mean_positive"}


def test_mean_over_positive_cases_equals_numpy_over_the_cases_with_a_lesion(tmp_path):
    cases = {case_id: ((truth > 0).astype(np.uint8), (prediction > 0).astype(np.uint8))
             for case_id, (truth, prediction) in case_masks(np.random.default_rng(7)).items()}
    ground_truth, input_dir = written(tmp_path, cases)
    evaluation = AutoPet(ground_truth)
    metrics = run.evaluate(evaluation, input_dir)[0]
    structure = ndimage.generate_binary_structure(3, 3)
    voxel_ml = float(np.prod(SPACING)) / 1000
    theirs = {case_id: any_overlap_case(truth > 0, prediction > 0, structure, voxel_ml)
              for case_id, (truth, prediction) in cases.items()}
    positive = [case_id for case_id, (truth, _) in cases.items() if truth.any()]
    assert 0 < len(positive) < len(cases)  # the test set has negative cases (a-empty, b-false-only)
    aggregates = metrics["aggregates"]
    for metric in ("dice", "fn_volume"):
        expected = np.mean([theirs[case_id][metric] for case_id in positive])
        assert aggregates[f"{metric}_mean_positive"] == pytest.approx(expected, rel=1e-12)
        assert aggregates["lesion"][metric]["mean_positive"] == aggregates[f"{metric}_mean_positive"]
        # the mean over every case differs: the negative cases' Dice 1 (both empty) or 0 (false only)
        assert aggregates["lesion"][metric]["mean"] == pytest.approx(np.mean([t[metric] for t in theirs.values()]),
                                                                     rel=1e-12)
    assert aggregates["dice_mean_positive"] != aggregates["lesion"]["dice"]["mean"]
    assert aggregates["fp_volume_mean"] == pytest.approx(np.mean([t["fp_volume"] for t in theirs.values()]), rel=1e-12)
    assert AutoPet.ranked_paths == ("aggregates.dice_mean_positive", "aggregates.fp_volume_mean",
                                    "aggregates.fn_volume_mean_positive")
    # the bootstrap: a row of case counts gives the value of the test set drawn (positives only)
    results = {case.case_id: run.score_case(evaluation, case) for case in run.matched_cases(evaluation, input_dir)}
    ids = sorted(results)
    counts = np.random.default_rng(8).integers(0, 3, size=(6, len(ids)))
    counts[:, ids.index(positive[0])] += 1  # every row draws a positive case
    counts[5] = [0 if case_id in positive else 2 for case_id in ids]  # a row of negative cases only
    rows = evaluation.aggregate(results, counts)
    for row, drawn in enumerate(counts[:5]):
        dices = [theirs[case_id]["dice"] for case_id, n in zip(ids, drawn, strict=True) if case_id in positive
                 for _ in range(n)]
        assert rows["aggregates.dice_mean_positive"][row] == pytest.approx(np.mean(dices), rel=1e-12)
    assert np.isnan(rows["aggregates.dice_mean_positive"][5])  # undefined: no positive case drawn
    assert np.isfinite(rows["aggregates.fp_volume_mean"][5])


def test_a_test_set_without_positive_cases_stops_naming_the_label(tmp_path):
    rng = np.random.default_rng(9)
    prediction = np.zeros(SHAPE, np.uint8)
    prediction[blobs(rng, SHAPE, 2)] = 1
    empty = np.zeros(SHAPE, np.uint8)
    cases = {"n-1": (empty, prediction), "n-2": (empty, empty)}
    ground_truth, input_dir = written(tmp_path, cases)
    with pytest.raises(SetupError) as raised:
        run.evaluate(AutoPet(ground_truth), input_dir)
    message = str(raised.value)
    assert message.startswith("No case's ground truth holds lesion") and "\n" not in message
    assert "aggregates.dice_mean_positive" in message
    # unranked (the per-label report alone): null with a note, never NaN
    evaluation = AutoPet(ground_truth)
    results = {case.case_id: run.score_case(evaluation, case) for case in run.matched_cases(evaluation, input_dir)}
    from evaluation.platform.outputs import Undefined
    reported = evaluation.report(results)["aggregates"]["lesion"]["dice"]["mean_positive"]
    assert isinstance(reported, Undefined) and "no case's ground truth holds lesion" in reported.reason


def test_mean_positive_needs_a_kind_that_tells_positive_cases_apart():
    from evaluation.kinds.instances import Instances

    with pytest.raises(TypeError, match="does not tell positive cases apart"):
        type("NoPositives", (Instances,), {"name": "x", "ranked_metrics": {"pq": "mean_positive"}})


def test_no_positive_case_exits_3_through_the_command(tmp_path):
    """A scaffolded lesions challenge declared with "mean_positive", run by the real command on its
    bundled input: exit 0 with the value; on a ground truth without any lesion, exit 3, the last
    stderr line naming the label, no metrics.json."""
    import os
    import re
    import shutil
    import subprocess
    import sys

    import SimpleITK as sitk

    from tests.test_new import scaffolded_copy

    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    name = "acmepositive"
    copy = scaffolded_copy(tmp_path / "repo", name, "lesions")
    declaration = copy / "evaluation" / "challenges" / name / "__init__.py"
    text, replaced = re.subn(r"ranked_metrics: ClassVar = \{.*\}",
                             'ranked_metrics: ClassVar = {"dice": "mean_positive", "fp_volume": "mean"}',
                             declaration.read_text())
    assert replaced == 1
    declaration.write_text(text)

    def evaluate(ground_truth, output):
        return subprocess.run([sys.executable, "-m", "evaluation", name, "--ground-truth", str(ground_truth),
                               "--input", str(copy / "test" / name / "input"), "--output", str(output)], cwd=copy,
                              capture_output=True, text=True, env=environment, timeout=300)

    ran = evaluate(copy / "ground-truth" / name, tmp_path / "out")
    assert ran.returncode == 0, ran.stderr
    assert isinstance(json.loads((tmp_path / "out" / "metrics.json").read_text())["aggregates"]["dice_mean_positive"],
                      float)
    negative = tmp_path / "negative"
    shutil.copytree(copy / "ground-truth" / name, negative)
    for path in negative.glob("*.mha"):
        image = sitk.ReadImage(str(path))
        empty = sitk.Image(image.GetSize(), image.GetPixelID())
        empty.CopyInformation(image)
        sitk.WriteImage(empty, str(path))
    ran = evaluate(negative, tmp_path / "out-negative")
    assert ran.returncode == 3, ran.stderr
    last = ran.stderr.strip().splitlines()[-1]
    assert "No case's ground truth holds lesion" in last and "aggregates.dice_mean_positive" in last, last
    assert not (tmp_path / "out-negative" / "metrics.json").exists()
