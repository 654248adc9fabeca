"""The points kind (evaluation/kinds/points.py) against independent computations: scipy's
linear_sum_assignment on the dense distance matrix written here (hungarian), evalutils'
score_detection (greedy_by_truth), a brute-force greedy by score, the FROC by its definition in
numpy (per image or per area), all in world mm computed by the test's own numpy (anisotropic
spacing, a rotated grid, a moved origin) or in pixels; pooled and mean F1; several classes by
name; case weights as a materialised resample; empty images; the radius inclusive or strict.
Hostile submissions as real files through the real command in a scaffolded repository copy:
exit 1, the last stderr line one sentence naming the image, no metrics.json. Ground-truth
problems: exit 3. 10^5 predictions against 10^4 true points on one image stays fast."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from evaluation.errors import SetupError, SubmissionError
from evaluation.kinds.points import Points
from evaluation.platform.outputs import metrics_json
from evaluation.run import matched_cases
from tests.point_kinds import (
    evaluated,
    grid,
    multiple_points,
    scored,
    to_index,
    to_world,
    write_reference,
    write_submission,
)

ROTATED = [[0.0, -1.0], [1.0, 0.0]]  # a 90° rotation: index x runs along world y


def declare(**attributes) -> type[Points]:
    return type("AcmeTest", (Points,), {"name": "acmetest", "title": "acmetest: points", **attributes})


def dataset(seed: int, classes=("cell",), cases: int = 8, spacing=(0.5, 0.25), direction=ROTATED):
    """{case: (grid entry, {class: true world points}, {class: (predicted world points, scores)}}:
    predictions near the true points (a few mm off) and false positives, with an image empty on
    both sides, one with true points only, one with predictions only."""
    rng = np.random.default_rng(seed)
    data = {}
    for number in range(cases):
        entry = grid((120, 90), spacing, origin=rng.uniform(-20, 20, 2), direction=direction)
        truth, predicted = {}, {}
        for name in classes:
            n = 0 if number == 0 else (6 if number == 1 else int(rng.integers(1, 12)))
            m_false = 0 if number in (0, 1) else int(rng.integers(0, 6))
            true_index = rng.uniform(2, np.array([117.0, 87.0]), (n, 2))
            found = rng.random(n) < 0.8
            near = true_index[found] + rng.normal(0, 1.2, (int(found.sum()), 2)) / np.asarray(spacing)
            near = np.clip(near, 0, [119, 89])
            false = rng.uniform(0, [119, 89], (m_false, 2))
            pred_index = np.concatenate([near, false]) if number != 1 else np.zeros((0, 2))
            if number == 2:
                true_index = np.zeros((0, 2))
            truth[name] = to_world(true_index, entry).reshape(-1, 2)
            scores = np.round(rng.uniform(0.01, 1.0, len(pred_index)), 3)
            predicted[name] = (to_world(pred_index, entry).reshape(-1, 2), scores)
        data[f"image-{number:02d}"] = (entry, truth, predicted)
    if all(len(t[name]) == 0 for _, t, _ in data.values() for name in classes):
        raise AssertionError("no true point")
    return data


def write(tmp_path: Path, data, classes=("cell",), socket="points", named=None):
    reference = {case: {"grid": entry, "points": {name: truth[name].tolist() for name in classes}}
                 for case, (entry, truth, _) in data.items()}
    ground_truth = write_reference(tmp_path / "ground-truth", reference)
    outputs = {}
    for case, (_, _, predicted) in data.items():
        points = np.concatenate([predicted[name][0] for name in classes]).reshape(-1, 2)
        scores = np.concatenate([predicted[name][1] for name in classes])
        names = [name for name in classes for _ in range(len(predicted[name][0]))] if named is None else named
        outputs[case] = multiple_points(points, names=names, probabilities=scores)
    return ground_truth, write_submission(tmp_path / "input", outputs, socket)


# ---- independent computations ---------------------------------------------------------------


def distances(truth_world, predicted_world, entry, unit: str) -> np.ndarray:
    """(truth, prediction) distances: world mm, or index steps (the test's own world -> index)."""
    if unit == "pixels":
        truth_world, predicted_world = to_index(truth_world, entry), to_index(predicted_world, entry)
    a, b = np.asarray(truth_world).reshape(-1, 2), np.asarray(predicted_world).reshape(-1, 2)
    return np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2))


def hungarian_tp(d: np.ndarray, radius: float, inclusive: bool = True) -> int:
    from scipy.optimize import linear_sum_assignment

    if d.size == 0:
        return 0
    within = d <= radius if inclusive else d < radius
    rows, columns = linear_sum_assignment(np.where(within, d, 1e9))  # a forbidden pair costs more than all others
    return int(within[rows, columns].sum())


def greedy_by_score_tp(d: np.ndarray, scores: np.ndarray, radius: float) -> int:
    free = np.ones(d.shape[0], dtype=bool)
    tp = 0
    for k in np.argsort(-scores, kind="stable"):
        candidates = np.flatnonzero(free & (d[:, k] <= radius))
        if candidates.size:
            free[candidates[np.argmin(d[candidates, k])]] = False
            tp += 1
    return tp


def froc_by_definition(images, radius, rates, areas=None) -> float:
    """images: [(distance matrix (truth, prediction), scores)]: a prediction hits every true point
    within the radius, a true point keeps its best hit's score (-inf: missed), a prediction
    hitting none is a false positive; every distinct finite score a threshold; the curve read
    with np.interp at `rates` (FPs over images or over the summed areas)."""
    fps, best_all = [], []
    for d, scores in images:
        within = d <= radius
        best = np.full(d.shape[0], -np.inf)
        for k in range(d.shape[1]):
            best[within[:, k]] = np.maximum(best[within[:, k]], scores[k])
            if not within[:, k].any():
                fps.append(scores[k])
        best_all.extend(best)
    fps, best_all = np.array(fps), np.array(best_all)
    denominator = len(images) if areas is None else float(np.sum(areas))
    thresholds = np.unique(np.concatenate([fps, best_all[np.isfinite(best_all)]]))
    fp_rates = [(fps >= t).sum() / denominator for t in thresholds] + [0.0]
    sensitivities = [(best_all >= t).sum() / len(best_all) for t in thresholds] + [0.0]
    return float(np.mean(np.interp(rates, fp_rates[::-1], sensitivities[::-1])))


def counts(data, name, radius, unit="mm", tp_of=None):
    tp = fp = fn = 0
    per_image = []
    for entry, truth, predicted in data.values():
        d = distances(truth[name], predicted[name][0], entry, unit)
        matched = (tp_of or (lambda d, s: hungarian_tp(d, radius)))(d, predicted[name][1])
        counted = (matched, len(predicted[name][0]) - matched, len(truth[name]) - matched)
        per_image.append(counted)
        tp, fp, fn = tp + counted[0], fp + counted[1], fn + counted[2]
    return (tp, fp, fn), per_image


CAMELYON_RATES = [0.25, 0.5, 1, 2, 4, 8]


# ---- the metrics ----------------------------------------------------------------------------


@pytest.mark.parametrize("unit, radius", [("mm", 2.0), ("pixels", 5.0)])
def test_pooled_f1_and_froc_on_a_rotated_anisotropic_grid(tmp_path, unit, radius):
    data = dataset(1)
    ground_truth, input_dir = write(tmp_path, data)
    challenge = declare(classes=("cell",), radius=radius, radius_unit=unit, ranked_metrics=("f1", "froc", "cpm"))
    metrics = evaluated(challenge(ground_truth), input_dir)
    (tp, fp, fn), per_image = counts(data, "cell", radius, unit)
    assert (tp, fp, fn) == tuple(metrics["aggregates"]["cell"][k] for k in ("tp", "fp", "fn"))
    assert metrics["aggregates"]["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn), rel=1e-12)
    assert metrics["aggregates"]["cell"]["precision"] == pytest.approx(tp / (tp + fp), rel=1e-12)
    assert metrics["aggregates"]["cell"]["recall"] == pytest.approx(tp / (tp + fn), rel=1e-12)
    images = [(distances(t["cell"], p["cell"][0], e, unit), p["cell"][1]) for e, t, p in data.values()]
    assert metrics["aggregates"]["froc"] == pytest.approx(froc_by_definition(images, radius, CAMELYON_RATES),
                                                          rel=1e-12)
    assert metrics["aggregates"]["cpm"] == pytest.approx(
        froc_by_definition(images, radius, [0.125, 0.25, 0.5, 1, 2, 4, 8]), rel=1e-12)
    for (case, entry), counted in zip(metrics["cases"].items(), per_image, strict=True):
        assert (entry["cell"]["tp"], entry["cell"]["fp"], entry["cell"]["fn"]) == counted, case
    # the image with true points and no prediction: its precision is undefined, null with a note
    document = json.loads(metrics_json(metrics, challenge.ranked_paths))
    assert document["cases"]["image-01"]["cell"]["precision"] is None
    assert any("image-01" in note for note in document["notes"])
    assert document["cases"]["image-00"]["cell"] == {"tp": 0, "fp": 0, "fn": 0, "f1": 1.0, "precision": 1.0,
                                                     "recall": 1.0}


@pytest.mark.parametrize("unit, radius", [("mm", 4.0), ("pixels", 3.0)])
def test_3d_points_on_an_oblique_anisotropic_grid(tmp_path, unit, radius):
    """3D images (CT-like spacing 0.7 x 0.7 x 2.5 mm, a random rotation), F1 and FROC against
    scipy's assignment and the FROC by definition on the test's own world <-> index."""
    rng = np.random.default_rng(12)
    data, outputs = {}, {}
    for number in range(5):
        q, r = np.linalg.qr(rng.normal(size=(3, 3)))
        entry = grid((64, 64, 30), (0.7, 0.7, 2.5), origin=rng.uniform(-100, 100, 3), direction=q * np.sign(np.diag(r)))
        true_index = rng.uniform(1, [62, 62, 28], (int(rng.integers(1, 9)), 3))
        near = np.clip(true_index[rng.random(len(true_index)) < 0.8]
                       + rng.normal(0, 1.5, (1, 3)) / np.array([0.7, 0.7, 2.5]), 0, [63, 63, 29])
        predicted_index = np.concatenate([near, rng.uniform(0, [63, 63, 29], (int(rng.integers(0, 4)), 3))])
        truth_world, predicted_world = to_world(true_index, entry), to_world(predicted_index, entry)
        scores = np.round(rng.uniform(0.01, 1, len(predicted_world)), 3)
        data[f"ct-{number}"] = (entry, truth_world, predicted_world, scores)
        outputs[f"ct-{number}"] = multiple_points(predicted_world, probabilities=scores)
    ground_truth = write_reference(tmp_path / "gt", {case: {"grid": entry, "points": {"nodule": truth.tolist()}}
                                                     for case, (entry, truth, _, _) in data.items()})
    input_dir = write_submission(tmp_path / "in", outputs, "points")
    metrics = evaluated(declare(classes=("nodule",), radius=radius, radius_unit=unit)(ground_truth), input_dir)
    tp = fp = fn = 0
    images = []
    for entry, truth, predicted, scores in data.values():
        if unit == "pixels":
            truth, predicted = to_index(truth, entry), to_index(predicted, entry)
        d = np.sqrt(((truth[:, None, :] - predicted[None, :, :]) ** 2).sum(axis=2))
        matched = hungarian_tp(d, radius)
        tp, fp, fn = tp + matched, fp + d.shape[1] - matched, fn + d.shape[0] - matched
        images.append((d, scores))
    assert (metrics["aggregates"]["nodule"]["tp"], metrics["aggregates"]["nodule"]["fp"]) == (tp, fp)
    assert tp > 0 and fp > 0 and fn > 0  # the data exercise every count
    assert metrics["aggregates"]["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn), rel=1e-12)
    assert metrics["aggregates"]["froc"] == pytest.approx(froc_by_definition(images, radius, CAMELYON_RATES),
                                                          rel=1e-12)


def test_mm_and_pixels_differ_on_anisotropic_spacing(tmp_path):
    """A prediction 3 pixels off along the 0.25 mm axis is 0.75 mm away: a hit at 1 mm, a miss at 1 pixel."""
    entry = grid((50, 50), (1.0, 0.25))
    truth = {"image-00": {"grid": entry, "points": {"cell": [[10.0, 5.0]]}}}
    ground_truth = write_reference(tmp_path / "gt", truth)
    input_dir = write_submission(tmp_path / "in", {"image-00": multiple_points([[10.0, 5.75]], probabilities=[0.9])},
                                 "points")
    mm = evaluated(declare(classes=("cell",), radius=1.0, radius_unit="mm")(ground_truth), input_dir)
    pixels = evaluated(declare(classes=("cell",), radius=1.0, radius_unit="pixels")(ground_truth), input_dir)
    assert mm["aggregates"]["cell"]["tp"] == 1 and pixels["aggregates"]["cell"]["tp"] == 0


def test_a_pair_at_exactly_the_radius_matches_only_when_inclusive(tmp_path):
    entry = grid((50, 50), (0.5, 0.5))
    truth = {"image-00": {"grid": entry, "points": {"cell": [[10.0, 10.0]]}}}
    ground_truth = write_reference(tmp_path / "gt", truth)
    input_dir = write_submission(tmp_path / "in", {"image-00": multiple_points([[12.0, 10.0]], probabilities=[0.9])},
                                 "points")
    inclusive = evaluated(declare(classes=("cell",), radius=2.0, inclusive=True)(ground_truth), input_dir)
    strict = evaluated(declare(classes=("cell",), radius=2.0, inclusive=False)(ground_truth), input_dir)
    assert (inclusive["aggregates"]["cell"]["tp"], strict["aggregates"]["cell"]["tp"]) == (1, 0)
    assert strict["aggregates"]["f1"] == 0.0 and inclusive["aggregates"]["f1"] == 1.0


def test_greedy_by_truth_equals_evalutils_score_detection(tmp_path):
    from evalutils.scorers import score_detection

    data = dataset(2, direction=np.eye(2), spacing=(0.5, 0.5))  # evalutils measures in the coordinates given
    ground_truth, input_dir = write(tmp_path, data)
    metrics = evaluated(declare(classes=("cell",), radius=2.0, matching="greedy_by_truth")(ground_truth), input_dir)
    for case, (_, truth, predicted) in data.items():
        theirs = score_detection(ground_truth=[tuple(p) for p in truth["cell"]],
                                 predictions=[tuple(p) for p in predicted["cell"][0]], radius=2.0)
        ours = metrics["cases"][case]["cell"]
        assert (ours["tp"], ours["fp"], ours["fn"]) == (theirs.true_positives, theirs.false_positives,
                                                        theirs.false_negatives), case


def test_greedy_by_score_equals_a_brute_force(tmp_path):
    data = dataset(3)
    ground_truth, input_dir = write(tmp_path, data)
    metrics = evaluated(declare(classes=("cell",), radius=3.0, matching="greedy_by_score")(ground_truth), input_dir)
    _, per_image = counts(data, "cell", 3.0, tp_of=lambda d, s: greedy_by_score_tp(d, s, 3.0))
    assert [tuple(metrics["cases"][c]["cell"][k] for k in ("tp", "fp", "fn")) for c in sorted(data)] == per_image


def test_mean_over_images_leaves_undefined_images_out(tmp_path):
    data = dataset(4)
    ground_truth, input_dir = write(tmp_path, data)
    challenge = declare(classes=("cell",), radius=2.0, averaging="mean", ranked_metrics=("f1", "precision", "recall"))
    metrics = evaluated(challenge(ground_truth), input_dir)
    _, per_image = counts(data, "cell", 2.0)
    f1 = [2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0 for tp, fp, fn in per_image]
    precision = [tp / (tp + fp) if tp + fp else (1.0 if fn == 0 else np.nan) for tp, fp, fn in per_image]
    recall = [tp / (tp + fn) if tp + fn else (1.0 if fp == 0 else np.nan) for tp, fp, fn in per_image]
    assert metrics["aggregates"]["f1"] == pytest.approx(np.mean(f1), rel=1e-12)
    assert metrics["aggregates"]["precision"] == pytest.approx(np.nanmean(precision), rel=1e-12)
    assert metrics["aggregates"]["recall"] == pytest.approx(np.nanmean(recall), rel=1e-12)


def test_froc_per_unit_area(tmp_path):
    data = dataset(5)
    ground_truth, input_dir = write(tmp_path, data)
    challenge = declare(classes=("cell",), radius=2.0, fp_rate="per_area", area_unit=100.0,
                        froc_fp_rates=(0.1, 0.5, 1.0), ranked_metrics=("froc",))
    metrics = evaluated(challenge(ground_truth), input_dir)
    images = [(distances(t["cell"], p["cell"][0], e, "mm"), p["cell"][1]) for e, t, p in data.values()]
    areas = [120 * 0.5 * 90 * 0.25 / 100.0] * len(data)  # size x spacing in mm², per 100 mm²
    assert metrics["aggregates"]["froc"] == pytest.approx(froc_by_definition(images, 2.0, [0.1, 0.5, 1.0], areas),
                                                          rel=1e-12)
    assert set(metrics["aggregates"]["cell"]["sensitivity_at_fp_rate"]) == {"0.1", "0.5", "1"}


def test_several_classes_by_name_mean_over_classes(tmp_path):
    classes = ("mitosis", "imposter")
    data = dataset(6, classes=classes)
    ground_truth, input_dir = write(tmp_path, data, classes=classes)
    metrics = evaluated(declare(classes=classes, radius=2.0)(ground_truth), input_dir)
    f1s = []
    for name in classes:
        (tp, fp, fn), _ = counts(data, name, 2.0)
        f1s.append(2 * tp / (2 * tp + fp + fn))
        assert metrics["aggregates"][name]["f1"] == pytest.approx(f1s[-1], rel=1e-12)
    assert metrics["aggregates"]["f1"] == pytest.approx(np.mean(f1s), rel=1e-12)


def test_case_weights_equal_the_materialised_resample(tmp_path):
    """A bootstrap row (case counts) gives the values of the test set with each case repeated."""
    data = dataset(7)
    ground_truth, input_dir = write(tmp_path, data)
    challenge = declare(classes=("cell",), radius=2.0, ranked_metrics=("f1", "froc"))(ground_truth)
    results = scored(challenge, input_dir)
    weights = np.array([[0, 2, 1, 0, 3, 1, 1, 0], [1] * 8])
    values = challenge.aggregate(results, weights)
    repeated = [case for case, w in zip(sorted(data), weights[0], strict=True) for _ in range(w)]
    tp = fp = fn = 0
    images = []
    for case in repeated:
        entry, truth, predicted = data[case]
        d = distances(truth["cell"], predicted["cell"][0], entry, "mm")
        matched = hungarian_tp(d, 2.0)
        tp, fp, fn = tp + matched, fp + d.shape[1] - matched, fn + d.shape[0] - matched
        images.append((d, predicted["cell"][1]))
    assert values["aggregates.f1"][0] == pytest.approx(2 * tp / (2 * tp + fp + fn), rel=1e-12)
    assert values["aggregates.froc"][0] == pytest.approx(froc_by_definition(images, 2.0, CAMELYON_RATES), rel=1e-12)


def test_composite_is_ranked_first_and_equals_its_weighted_sum(tmp_path):
    data = dataset(8)
    ground_truth, input_dir = write(tmp_path, data)
    challenge = declare(classes=("cell",), radius=2.0, ranked_metrics=("f1",), composite={"f1": 0.5, "froc": 0.5})
    assert challenge.leaderboards[0].score.path == "aggregates.score"
    metrics = evaluated(challenge(ground_truth), input_dir)
    (tp, fp, fn), _ = counts(data, "cell", 2.0)
    images = [(distances(t["cell"], p["cell"][0], e, "mm"), p["cell"][1]) for e, t, p in data.values()]
    expected = 0.5 * 2 * tp / (2 * tp + fp + fn) + 0.5 * froc_by_definition(images, 2.0, CAMELYON_RATES)
    assert metrics["aggregates"]["score"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("attributes, message", [
    ({"radius": 0.0}, "radius"), ({"radius_unit": "cm"}, "radius_unit"), ({"matching": "nearest"}, "matching"),
    ({"ranked_metrics": ("dice",)}, "not a metric"), ({"classes": ("f1",)}, "classes"),
    ({"classes": ("a.b",)}, "classes"), ({"averaging": "median"}, "averaging"), ({"ranking": "borda"}, "ranking"),
    ({"froc_fp_rates": ()}, "froc_fp_rates"),
    ({"ignored_classes": ("point",)}, "ignored_classes"), ({"ignored_classes": "imposter"}, "ignored_classes"),
    ({"composite": {"f1": 1.0}, "ranking": "mean_of_ranks"}, "composite score is ranked by itself"),
])
def test_a_bad_declaration_is_refused_when_the_class_is_made(attributes, message):
    with pytest.raises(TypeError, match=message):
        declare(**attributes)


# ---- the ground truth: the organizer's errors (exit 3) ---------------------------------------


@pytest.mark.parametrize("reference, message", [
    ({"a": {"grid": grid((10, 10), (1, 1)), "points": {"cell": []}}}, "holds no point of cell"),
    ({"a": {"grid": grid((10, 10), (1, 1)), "points": {"cell": [[50.0, 1.0]]}}}, "outside the case's image grid"),
    ({"a": {"grid": grid((10, 10), (1, 1)), "points": {"cell": [[1.0, 1.0, 1.0]]}}}, "must be 2 finite numbers"),
    ({"a": {"grid": grid((10, 10), (1, 1), direction=[[1, 1], [0, 1]]), "points": {"cell": [[1.0, 1.0]]}}},
     "not orthonormal"),
    ({"a": {"grid": grid((10, 10), (1, -1)), "points": {"cell": [[1.0, 1.0]]}}}, "spacing must be > 0"),
    ({"a": {"grid": grid((10, 10), (1, 1)), "points": {"other": [[1.0, 1.0]]}}}, "one list per class"),
])
def test_ground_truth_problems_are_the_organizers(tmp_path, reference, message):
    ground_truth = write_reference(tmp_path / "gt", reference)
    with pytest.raises(SetupError, match=message):
        declare(classes=("cell",))(ground_truth)


def test_an_unknown_class_name_is_the_submissions_fault(tmp_path):
    classes = ("mitosis", "imposter")
    data = dataset(9, classes=classes, cases=3)
    ground_truth, input_dir = write(tmp_path, data, classes=classes)
    challenge = declare(classes=classes, radius=2.0)(ground_truth)
    case = next(c for c in matched_cases(challenge, input_dir) if c.case_id == "image-02")
    path = case.output_path("points")
    document = json.loads(path.read_text())
    document["points"][0]["name"] = "mitotic figure"
    path.write_text(json.dumps(document))
    with pytest.raises(SubmissionError, match=r"^Image image-02: .*point 0 is named \"mitotic figure\""):
        evaluated(challenge, input_dir)


def with_imposters(data, seed: int):
    """Each image's output with MIDOG 2021's hard negatives: the scored points (half without a
    name, half named "mitotic figure") and, near every true point and at random, points named
    "non-mitotic figure" (a third without a probability), all in a shuffled order; with
    {case: (the scored points, their scores)} an original that drops the imposters keeps."""
    rng = np.random.default_rng(seed)
    outputs, kept = {}, {}
    for case, (entry, truth, predicted) in data.items():
        points, scores = predicted["mitotic figure"]
        near = truth["mitotic figure"] + rng.uniform(-0.4, 0.4, truth["mitotic figure"].shape)
        index = to_index(near, entry).reshape(-1, 2)
        near = near[((index >= 0) & (index <= [119, 89])).all(axis=1)]
        far = to_world(rng.uniform(0, [119, 89], (2, 2)), entry).reshape(-1, 2)
        imposters = np.concatenate([near, far])
        every = np.concatenate([points, imposters])
        names = [None if k % 2 else "mitotic figure" for k in range(len(points))] + \
            ["non-mitotic figure"] * len(imposters)
        probabilities = np.concatenate([scores, np.full(len(imposters), 0.99)])
        document = multiple_points(every, probabilities=probabilities)
        for item, name, k in zip(document["points"], names, range(len(names)), strict=True):
            if name is not None:
                item["name"] = name
            if name == "non-mitotic figure" and k % 3 == 0:
                del item["probability"]
        order = rng.permutation(len(names))
        document["points"] = [document["points"][k] for k in order]
        outputs[case] = document
        kept[case] = (points, scores)
    return outputs, kept


def test_ignored_classes_are_neither_tp_nor_fp_as_evalutils_counts_the_rest(tmp_path):
    from evalutils.scorers import score_detection

    classes = ("mitotic figure",)
    data = dataset(12, classes=classes, direction=np.eye(2), spacing=(0.5, 0.5))
    reference = {case: {"grid": entry, "points": {"mitotic figure": truth["mitotic figure"].tolist()}}
                 for case, (entry, truth, _) in data.items()}
    ground_truth = write_reference(tmp_path / "ground-truth", reference)
    outputs, kept = with_imposters(data, 13)
    input_dir = write_submission(tmp_path / "input", outputs, "points")
    ignoring = declare(classes=classes, ignored_classes=("non-mitotic figure",), radius=2.0,
                       matching="greedy_by_truth", ranked_metrics=("f1", "froc"))
    metrics = evaluated(ignoring(ground_truth), input_dir)
    # every point read as the scored class (the default): the imposters near true points are TPs
    every = evaluated(declare(classes=classes, radius=2.0, matching="greedy_by_truth",
                              ranked_metrics=("f1",))(ground_truth), input_dir)
    tp = fp = fn = 0
    images = []
    for case, (_, truth, _) in data.items():
        points, scores = kept[case]
        theirs = score_detection(ground_truth=[tuple(p) for p in truth["mitotic figure"]],
                                 predictions=[tuple(p) for p in points], radius=2.0)
        ours = metrics["cases"][case]["mitotic figure"]
        assert (ours["tp"], ours["fp"], ours["fn"]) == (theirs.true_positives, theirs.false_positives,
                                                        theirs.false_negatives), case
        tp, fp, fn = tp + theirs.true_positives, fp + theirs.false_positives, fn + theirs.false_negatives
        images.append((distances(truth["mitotic figure"], points, data[case][0], "mm"), scores))
    assert metrics["aggregates"]["f1"] == pytest.approx(2 * tp / (2 * tp + fp + fn), rel=1e-12)
    assert metrics["aggregates"]["froc"] == pytest.approx(froc_by_definition(images, 2.0, CAMELYON_RATES), rel=1e-12)
    assert every["aggregates"]["mitotic figure"]["tp"] > tp and every["aggregates"]["mitotic figure"]["fp"] > fp
    assert metrics["declaration"]["ignored_classes"] == ["non-mitotic figure"]
    assert "ignored_classes" not in every["declaration"]  # the default's metrics.json unchanged


def test_an_ignored_point_is_still_checked(tmp_path):
    data = dataset(14, classes=("cell",), cases=3)
    ground_truth, input_dir = write(tmp_path, data)
    challenge = declare(classes=("cell", "other"), ignored_classes=("imposter",), radius=2.0)
    reference = {case: {"grid": entry, "points": {"cell": truth["cell"].tolist(), "other": truth["cell"].tolist()}}
                 for case, (entry, truth, _) in data.items()}
    ground_truth = write_reference(tmp_path / "gt2", reference)
    case = next(c for c in matched_cases(challenge(ground_truth), input_dir) if c.case_id == "image-02")
    path = case.output_path("points")
    document = json.loads(path.read_text())
    document["points"][0]["name"] = "imposter"
    document["points"][0]["point"][0] = 1e6  # outside the image
    path.write_text(json.dumps(document))
    with pytest.raises(SubmissionError, match=r"^Image image-02: .*point 0"):
        evaluated(challenge(ground_truth), input_dir)
    document["points"][0]["point"] = document["points"][1]["point"]
    document["points"][1]["name"] = "mitotic figure"  # neither a class nor ignored
    path.write_text(json.dumps(document))
    with pytest.raises(SubmissionError, match=r"point 1 is named \"mitotic figure\".*one of cell, other, imposter"):
        evaluated(challenge(ground_truth), input_dir)


# ---- hostile submissions through the real command ----------------------------------------------


@pytest.fixture(scope="module")
def scaffolded_points(tmp_path_factory) -> Path:
    from tests.test_new import scaffolded_copy

    return scaffolded_copy(tmp_path_factory.mktemp("points") / "repo", "acmepts", "points")


def first_output(input_dir: Path) -> Path:
    jobs = json.loads((input_dir / "predictions.json").read_text())
    first = min(jobs, key=lambda job: job["inputs"][0]["image"]["name"])
    return input_dir / first["pk"] / "output" / first["outputs"][0]["socket"]["relative_path"]


def run_hostile(copy: Path, name: str, tmp_path: Path, change) -> subprocess.CompletedProcess:
    import shutil

    input_dir = tmp_path / "input"
    shutil.copytree(copy / "test" / name / "input", input_dir)
    path = first_output(input_dir)
    path.write_bytes(change(path.read_bytes()))
    output = tmp_path / "output"
    run = subprocess.run([sys.executable, "-m", "evaluation", name, "--ground-truth", f"ground-truth/{name}",
                          "--input", str(input_dir), "--output", str(output)], cwd=copy, capture_output=True,
                         text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, timeout=120)
    assert not (output / "metrics.json").exists()
    return run


def first_point(**changes):
    def change(data: bytes) -> bytes:
        document = json.loads(data)
        document["points"][0].update(changes)
        return json.dumps(document).encode()
    return change


def drop_probability(data: bytes) -> bytes:
    document = json.loads(data)
    del document["points"][0]["probability"]
    return json.dumps(document).encode()


@pytest.mark.parametrize("label, change, expected", [
    ("outside", first_point(point=[-1.0e4, 3.0, 0.0]), "at (-10000, 3, 0) (x, y, z) lies outside the image"),
    ("nan", lambda data: data.replace(b'"point": [', b'"point": [NaN, ', 1).replace(b", 0.0]", b"]", 1),
     "point 0 ('mitosis 0') has x = NaN"),
    ("two-coordinates", first_point(point=[1.0, 2.0]), "point 0 ('mitosis 0') is a list of 2 numbers"),
    ("probability-above-one", first_point(probability=1.01), "probability of point 0 ('mitosis 0') is 1.01"),
    ("probability-below-zero", first_point(probability=-0.2), "probability of point 0 ('mitosis 0') is -0.2"),
    ("no-probability", drop_probability, "point 0 has no probability"),
    ("misspelt-key", first_point(probabilty=0.5), "has the key \"probabilty\""),
    ("not-points", lambda data: b'{"type": "Multiple points", "version": {"major": 1, "minor": 0}, "points": 3}',
     "'points' is a number; expected a list"),
])
def test_hostile_submissions_exit_1_naming_the_image(scaffolded_points, tmp_path, label, change, expected):
    run = run_hostile(scaffolded_points, "acmepts", tmp_path, change)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1, run.stderr
    assert lines[-1].startswith("Image image-000: the output 'points'") and expected in lines[-1], lines[-1]
    assert "Traceback" not in run.stderr


def test_a_2d_images_third_coordinate_is_not_read(tmp_path):
    """The platform writes three numbers for a point of a 2D image; the shared reader reads x and y."""
    entry = grid((50, 50), (0.5, 0.5))
    ground_truth = write_reference(tmp_path / "gt", {"image-00": {"grid": entry, "points": {"cell": [[10.0, 10.0]]}}})
    document = multiple_points([[10.5, 10.0]], probabilities=[0.9])
    document["points"][0]["point"][2] = 7.0
    input_dir = write_submission(tmp_path / "in", {"image-00": document}, "points")
    metrics = evaluated(declare(classes=("cell",), radius=1.0)(ground_truth), input_dir)
    assert metrics["aggregates"]["cell"]["tp"] == 1


# ---- size ----------------------------------------------------------------------------------------


def test_a_large_image_stays_fast(tmp_path):
    """10^5 predictions against 10^4 true points on one image: read, matched (hungarian) and
    the FROC's hits, end to end through the kind."""
    rng = np.random.default_rng(11)
    entry = grid((4000, 4000), (0.25, 0.25))
    true_index = rng.uniform(0, 3999, (10_000, 2))
    predicted_index = np.concatenate([true_index + rng.normal(0, 2.0, true_index.shape),
                                      rng.uniform(0, 3999, (90_000, 2))]).clip(0, 3999)
    reference = {"big": {"grid": entry, "points": {"cell": to_world(true_index, entry).tolist()}}}
    ground_truth = write_reference(tmp_path / "gt", reference)
    input_dir = write_submission(tmp_path / "in", {"big": multiple_points(
        to_world(predicted_index, entry), probabilities=rng.uniform(0, 1, len(predicted_index)).round(4))}, "points")
    challenge = declare(classes=("cell",), radius=1.0)(ground_truth)
    started = time.perf_counter()
    metrics = evaluated(challenge, input_dir)
    seconds = time.perf_counter() - started
    print(f"10^5 predictions x 10^4 truths: {seconds:.2f} s")
    assert metrics["aggregates"]["cell"]["tp"] > 0
    assert seconds < 30, seconds


# ---- the final ranking's rule ---------------------------------------------------------------------


def test_the_declared_ranking_rules(tmp_path):
    from evaluation.declarations.ranking_rules import MeanOfCaseRanks, MeanOfRanks, OrderedRanking

    ordered = declare(classes=("cell",), ranked_metrics=("f1", "froc"))
    assert isinstance(ordered.final_rankings[0], OrderedRanking)
    means = declare(classes=("cell",), ranked_metrics=("f1", "froc"), ranking="mean_of_ranks")
    rule = means.final_rankings[0]
    assert isinstance(rule, MeanOfRanks) and rule.paths == ("aggregates.f1", "aggregates.froc")
    assert means.leaderboards[0].scoring_method == "avg"
    per_case = declare(classes=("cell", "other"), ranked_metrics=("recall", "precision"),
                       ranking="case_rank_then_mean")
    rule = per_case.final_rankings[0]
    assert isinstance(rule, MeanOfCaseRanks) and rule.case_paths == ("recall", "precision")
    with pytest.raises(TypeError, match="froc is a value of the whole test set"):
        declare(ranked_metrics=("f1", "froc"), ranking="case_rank_then_mean")
    # the per-case values it reads: each case's mean over the classes
    data = dataset(10, classes=("cell", "other"))
    ground_truth, input_dir = write(tmp_path, data, classes=("cell", "other"))
    metrics = evaluated(per_case(ground_truth), input_dir)
    case = metrics["cases"]["image-03"]
    assert case["recall"] == pytest.approx((case["cell"]["recall"] + case["other"]["recall"]) / 2, rel=1e-15)
