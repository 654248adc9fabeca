"""The instances kind (evaluation/kinds/instances.py) on real files: PQ, SQ and RQ per class,
pooled over the images (CoNIC's multi-class PQ) and as means and medians over the images, against
a direct numpy count by CoNIC's and HoVer-Net's definition, and against panoptica on 3D
class-agnostic maps; empty images; hostile maps refused in one line naming the case."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from evaluation import run
from evaluation.errors import SetupError, SubmissionError
from evaluation.kinds.instances import CLASS_FOLDER, Instances
from tests.label_kind_files import write_image, write_submission

SIZE = (64, 64)
INSTANCES, CLASSES = "instance-segmentation", "instance-classes"


class Nuclei(Instances):
    name = "test-instances-classes"
    title = "classes"
    labels: ClassVar = {1: "epithelial", 2: "lymphocyte"}
    ranked_metrics: ClassVar = {"pq": "pooled", "sq": "mean", "rq": "median"}


class Cells3D(Instances):
    name = "test-instances-3d"
    title = "class-agnostic"
    labels: ClassVar = {1: "cell"}
    iou_threshold = 0.6
    ranked_metrics: ClassVar = {"pq": "mean", "rq": "pooled"}


def discs(rng: np.random.Generator, shape, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(instance map, class map): `count` balls painted in turn (later ones over earlier ones),
    each of class 1 or 2, numbered with gaps."""
    instances = np.zeros(shape, dtype=np.int32)
    classes = np.zeros(shape, dtype=np.uint8)
    grid = np.ogrid[tuple(slice(0, n) for n in shape)]
    for number in range(count):
        centre, radius = rng.uniform(0, shape), rng.uniform(2.0, 6.0)
        inside = sum((axis - c) ** 2 for axis, c in zip(grid, centre, strict=True)) <= radius ** 2
        instances[inside] = 3 * number + 7
        classes[inside] = rng.integers(1, 3)
    return instances, classes


def predicted(rng: np.random.Generator, instances: np.ndarray, classes: np.ndarray):
    """Moved by up to two voxels, some instances dropped, some classes swapped, a few false ones."""
    moved = np.roll(instances, tuple(int(v) for v in rng.integers(-2, 3, instances.ndim)),
                    axis=tuple(range(instances.ndim)))
    moved_classes = np.roll(classes, 0)
    for label in np.unique(moved[moved > 0]).tolist():
        if rng.random() < 0.15:
            moved[moved == label] = 0
        elif rng.random() < 0.1:
            moved_classes[np.roll(instances, 0) == label] = 3 - classes[instances == label].max()
    extra, extra_classes = discs(rng, instances.shape, 3)
    moved = np.where(extra > 0, extra + 1000, moved)
    return moved, np.where(extra > 0, extra_classes, moved_classes)


def conic_counts(truth: np.ndarray, prediction: np.ndarray, threshold: float = 0.5):
    """(TP, FP, FN, IoU sum) by CoNIC's get_pq at a threshold >= 0.5: every pair's IoU, the pairs
    above the threshold matched (unique there)."""
    true_ids = [i for i in np.unique(truth).tolist() if i]
    predicted_ids = [i for i in np.unique(prediction).tolist() if i]
    ious = np.zeros((len(true_ids), len(predicted_ids)))
    for row, t in enumerate(true_ids):
        mask = truth == t
        for column, p in enumerate(predicted_ids):
            other = prediction == p
            ious[row, column] = (mask & other).sum() / (mask | other).sum()
    matched = ious > threshold
    tp = int(matched.sum())
    return tp, len(predicted_ids) - tp, len(true_ids) - tp, float(ious[matched].sum())


def quality(tp, fp, fn, iou_sum):
    """(PQ, SQ, RQ): 1 for nothing on either side."""
    if tp + fp + fn == 0:
        return 1.0, 1.0, 1.0
    rq = tp / (tp + fp / 2 + fn / 2)
    sq = iou_sum / tp if tp else 0.0
    return sq * rq, sq, rq


def test_per_class_pq_equals_conic_counts(tmp_path):
    rng = np.random.default_rng(11)
    cases = {}
    for number in range(5):
        truth, truth_classes = discs(rng, SIZE, int(rng.integers(8, 16)))
        cases[f"image-{number}"] = (truth, truth_classes, *predicted(rng, truth, truth_classes))
    empty = np.zeros(SIZE, np.int32)
    cases["image-empty"] = (empty, empty.astype(np.uint8), empty, empty.astype(np.uint8))
    ground_truth = tmp_path / "ground-truth"
    for case_id, (truth, truth_classes, _, _) in cases.items():
        write_image(ground_truth / f"{case_id}.mha", truth)
        write_image(ground_truth / CLASS_FOLDER / f"{case_id}.mha", truth_classes)
    write_submission(tmp_path / "input", {case_id: {INSTANCES: (p.astype(np.uint16), None), CLASSES: (pc, None)}
                                          for case_id, (_, _, p, pc) in cases.items()})
    metrics = run.evaluate(Nuclei(ground_truth), tmp_path / "input")[0]
    pooled_per_class = []
    for label, name in Nuclei.labels.items():
        counts = {case_id: conic_counts(np.where(tc == label, t, 0), np.where(pc == label, p, 0))
                  for case_id, (t, tc, p, pc) in cases.items()}
        summed = np.sum(list(counts.values()), axis=0)
        pooled_per_class.append(quality(*summed))
        per_image = np.array([quality(*counts[case_id]) for case_id in sorted(cases)])
        reported = metrics["aggregates"][name]
        for column, metric in enumerate(("pq", "sq", "rq")):
            if metric not in Nuclei.ranked_metrics:
                continue
            assert reported[metric]["pooled"] == pytest.approx(pooled_per_class[-1][column], rel=1e-12), metric
            assert reported[metric]["mean"] == pytest.approx(per_image[:, column].mean(), rel=1e-12), metric
            assert reported[metric]["median"] == pytest.approx(np.median(per_image[:, column]), rel=1e-12), metric
        assert [reported["counts"][key] for key in ("tp", "fp", "fn")] == summed[:3].astype(int).tolist()
        for case_id in cases:
            assert metrics["cases"][case_id][name]["tp"] == counts[case_id][0]
    pooled_per_class = np.array(pooled_per_class)
    aggregates = metrics["aggregates"]
    assert aggregates["pq_pooled"] == pytest.approx(pooled_per_class[:, 0].mean(), rel=1e-12)  # CoNIC's mPQ+
    assert metrics["cases"]["image-empty"]["epithelial"]["pq"] == 1.0
    assert Nuclei.ranked_paths == ("aggregates.pq_pooled", "aggregates.sq_mean", "aggregates.rq_median")


def panoptica_quality(truth: np.ndarray, prediction: np.ndarray, threshold: float):
    from panoptica import InputType, Metric, NaiveThresholdMatching, Panoptica_Evaluator
    from panoptica.utils.citation_reminder import disable_citation_reminder

    disable_citation_reminder()
    evaluator = Panoptica_Evaluator(expected_input=InputType.UNMATCHED_INSTANCE,
                                    instance_matcher=NaiveThresholdMatching(Metric.IOU, threshold,
                                                                            strict_threshold=True),
                                    instance_metrics=[Metric.IOU], global_metrics=[Metric.DSC], verbose=False)
    return evaluator.evaluate(prediction.astype(np.uint32), truth.astype(np.uint32), verbose=False)["ungrouped"]


def test_class_agnostic_3d_equals_panoptica(tmp_path):
    pytest.importorskip("panoptica")
    rng = np.random.default_rng(12)
    shape, spacing = (10, 30, 30), (0.5, 0.5, 2.0)
    cases = {}
    for number in range(4):
        truth, classes = discs(rng, shape, 6)
        cases[f"stack-{number}"] = (truth, predicted(rng, truth, classes)[0])
    for case_id, (truth, _) in cases.items():
        write_image(tmp_path / "ground-truth" / f"{case_id}.mha", truth, spacing)
    write_submission(tmp_path / "input", {case_id: {INSTANCES: (p, spacing)} for case_id, (_, p) in cases.items()})
    metrics = run.evaluate(Cells3D(tmp_path / "ground-truth"), tmp_path / "input")[0]
    theirs = {case_id: panoptica_quality(t, p, 0.6) for case_id, (t, p) in cases.items()}
    assert metrics["aggregates"]["pq_mean"] == pytest.approx(np.mean([r.pq for r in theirs.values()]), rel=1e-12)
    tp, fp, fn = (sum(getattr(r, key) for r in theirs.values()) for key in ("tp", "fp", "fn"))
    assert metrics["aggregates"]["rq_pooled"] == pytest.approx(tp / (tp + fp / 2 + fn / 2), rel=1e-12)


def hostile(tmp_path, name: str, instances=None, classes=None, spacing=None, drop_classes=False) -> str:
    """The message of a submission whose first image's maps are these (the truth's otherwise)."""
    rng = np.random.default_rng(13)
    truth, truth_classes = discs(rng, SIZE, 8)
    folder = tmp_path / name
    for case_id in ("image-1", "image-2"):
        write_image(folder / "ground-truth" / f"{case_id}.mha", truth)
        write_image(folder / "ground-truth" / CLASS_FOLDER / f"{case_id}.mha", truth_classes)
    first = {INSTANCES: (truth if instances is None else instances, spacing),
             CLASSES: (truth_classes if classes is None else classes, None)}
    if drop_classes:
        del first[CLASSES]
    write_submission(folder / "input", {"image-1": first, "image-2": {INSTANCES: (truth, None),
                                                                      CLASSES: (truth_classes, None)}})
    with pytest.raises(SubmissionError) as raised:
        run.evaluate(Nuclei(folder / "ground-truth"), folder / "input")[0]
    return str(raised.value)


def test_hostile_maps_are_refused_in_one_line_naming_the_case(tmp_path):
    base = np.zeros(SIZE, np.int32)
    negative, fractional, stray = base.copy(), base.astype(np.float64), base.astype(np.uint8)
    negative[3, 3] = -2
    fractional[0, :2] = (np.inf, 0.25)
    stray[5, 5] = 9
    messages = {
        "negative": hostile(tmp_path, "negative", negative),
        "float": hostile(tmp_path, "float", fractional),
        "class": hostile(tmp_path, "class", classes=stray),
        "grid": hostile(tmp_path, "grid", base, spacing=(1.0, 2.0)),
        "volume": hostile(tmp_path, "volume", np.stack([base, base]), spacing=(1.0, 1.0, 1.0)),
        "no class map": hostile(tmp_path, "missing", drop_classes=True),
    }
    for kind, message in messages.items():
        assert message.startswith("Case image-1") and "\n" not in message, (kind, message)
    assert "instance map holds value(s) -2 (1 voxel); an instance map holds 0" in messages["negative"]
    assert "0.25 (1 voxel), inf (1 voxel)" in messages["float"]
    assert "class map holds label(s) 9 (1 voxel); only 0, 1 and 2" in messages["class"]
    assert "spacing (1, 2) differs from the ground truth's (1, 1)" in messages["grid"]
    assert "the instance map is 3D, size (64, 64, 2), where the ground truth is 2D" in messages["volume"]
    assert "no output 'instance-classes'" in messages["no class map"]


def test_a_missing_class_map_in_the_ground_truth_is_the_organizers(tmp_path):
    write_image(tmp_path / "image-1.mha", np.zeros(SIZE, np.uint8))
    with pytest.raises(SetupError, match=r"no class map classes/<case id>\.mha for case"):
        Nuclei(tmp_path)


def test_declarations_are_checked_at_import():
    def declare(**attributes):
        return type("Bad", (Instances,), {"name": "bad", "ranked_metrics": {"pq": "pooled"}, **attributes})

    with pytest.raises(TypeError, match=r"below 0\.5"):
        declare(iou_threshold=0.3)  # matches are not unique there: the assignment must be named
    assert declare(iou_threshold=0.3, assignment="hungarian_then_threshold").ranked_paths == ("aggregates.pq_pooled",)
    with pytest.raises(TypeError, match="assignment 'many_to_many'"):
        declare(assignment="many_to_many")
    with pytest.raises(TypeError, match="unknown metric 'dice'"):
        declare(ranked_metrics={"dice": "mean"})


class NucleiPerInstance(Nuclei):
    """Nuclei's declaration with the classes given per instance (a JSON object)."""

    name = "test-instances-per-instance"
    class_output = "per_instance"


def test_classes_per_instance_score_as_the_class_map(tmp_path):
    """{instance label: class} scores as the class map painting each instance with its class."""
    rng = np.random.default_rng(14)
    ground_truth = tmp_path / "ground-truth"
    maps, objects = {}, {}
    for number in range(3):
        truth, truth_classes = discs(rng, SIZE, 10)
        write_image(ground_truth / f"image-{number}.mha", truth)
        write_image(ground_truth / CLASS_FOLDER / f"image-{number}.mha", truth_classes)
        prediction = np.roll(truth, 1, axis=0)
        labels = np.unique(prediction[prediction > 0]).tolist()
        given = {label: int(rng.integers(1, 3)) for label in labels}
        painted = np.zeros(SIZE, np.uint8)
        for label, kind in given.items():
            painted[prediction == label] = kind
        maps[f"image-{number}"] = {INSTANCES: (prediction, None), CLASSES: (painted, None)}
        objects[f"image-{number}"] = {INSTANCES: (prediction, None), CLASSES: {str(k): v for k, v in given.items()}}
    write_submission(tmp_path / "maps", maps)
    write_submission(tmp_path / "objects", objects)
    by_map, _ = run.evaluate(Nuclei(ground_truth), tmp_path / "maps")
    by_object, _ = run.evaluate(NucleiPerInstance(ground_truth), tmp_path / "objects")
    assert by_object["aggregates"] == by_map["aggregates"] and by_object["cases"] == by_map["cases"]
    assert [name for name, _ in NucleiPerInstance.settings_class.socket_fields()] == [
        "input_socket", "output_socket", "instance_classes_socket"]
    # hostile objects: one line naming the case
    first = objects["image-0"][CLASSES]
    without_first = dict(list(first.items())[1:])
    for number, (broken, message) in enumerate((
            ({**first, "7x": 1}, 'the key "7x" is not an instance label'),
            ({**first, next(iter(first)): 5}, "has the class 5; the classes are 1, 2"),
            (without_first, "1 instance(s) of the instance map have no class"),
            ([1, 2], "must be a JSON object {instance label: class label}, not a list of 2 items"))):
        folder = tmp_path / f"broken-{number}"
        write_submission(folder, {**objects, "image-0": {INSTANCES: objects["image-0"][INSTANCES], CLASSES: broken}})
        with pytest.raises(SubmissionError) as raised:
            run.evaluate(NucleiPerInstance(ground_truth), folder)
        text = str(raised.value)
        assert text.startswith("Case image-0: the instances' classes") and message in text and "\n" not in text


# ---- the class-agnostic PQ beside the per-class one ----------------------------------------------


class NucleiAgnostic(Nuclei):
    """Nuclei's classes, ranked on the per-class PQ and the class-agnostic PQ, SQ and RQ."""

    name = "test-instances-agnostic"
    ranked_metrics: ClassVar = {"pq": "pooled", "class_agnostic_pq": "pooled", "class_agnostic_sq": "mean",
                                "class_agnostic_rq": "median"}


def swapped_classes(rng: np.random.Generator, count: int):
    """Cases {image id: (truth, truth classes, prediction, predicted classes)}: the prediction moved
    and thinned by `predicted`, each predicted instance of the class of the true instance it was
    moved from (a false one of either), and a third of them given the other class, so that the
    class-agnostic and the per-class values part; one image empty on both sides."""
    cases = {}
    for number in range(count):
        truth, truth_classes = discs(rng, SIZE, int(rng.integers(8, 16)))
        prediction = predicted(rng, truth, truth_classes)[0]
        prediction_classes = np.zeros(SIZE, np.uint8)
        for label in np.unique(prediction[prediction > 0]).tolist():
            inside = prediction == label
            kind = int(truth_classes[truth == label].max()) if (truth == label).any() else int(rng.integers(1, 3))
            prediction_classes[inside] = 3 - kind if rng.random() < 1 / 3 else kind
        cases[f"image-{number}"] = (truth, truth_classes, prediction.astype(np.uint16), prediction_classes)
    empty = np.zeros(SIZE, np.int32)
    cases["image-empty"] = (empty, empty.astype(np.uint8), empty.astype(np.uint16), empty.astype(np.uint8))
    return cases


def write_cases(folder, cases) -> tuple:
    ground_truth = folder / "ground-truth"
    for case_id, (truth, truth_classes, _, _) in cases.items():
        write_image(ground_truth / f"{case_id}.mha", truth)
        write_image(ground_truth / CLASS_FOLDER / f"{case_id}.mha", truth_classes)
    write_submission(folder / "input", {case_id: {INSTANCES: (p, None), CLASSES: (pc, None)}
                                        for case_id, (_, _, p, pc) in cases.items()})
    return ground_truth, folder / "input"


def test_class_agnostic_pq_through_the_command_equals_numpy_and_panoptica(tmp_path):
    """A scaffolded instances challenge declaring the class-agnostic PQ, SQ and RQ beside the
    per-class PQ, run by the real command on real files: each image's class-agnostic values are
    CoNIC's counts on the whole instance maps and panoptica's PQ; pooled, mean and median over the
    images as declared; the value differs from the mean of the per-class PQ."""
    pytest.importorskip("panoptica")
    import json
    import os
    import re
    import subprocess
    import sys

    from tests.test_new import repository_copy

    copy = repository_copy(tmp_path / "repo")
    environment = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    name = "acmeagnostic"
    made = subprocess.run([sys.executable, "-m", "evaluation.new", name, "--template", "instances"], cwd=copy,
                          capture_output=True, text=True, env=environment, timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    declaration = copy / "evaluation" / "challenges" / name / "__init__.py"
    text, replaced = re.subn(r"ranked_metrics: ClassVar = \{.*\}",
                             'ranked_metrics: ClassVar = {"pq": "pooled", "class_agnostic_pq": "pooled", '
                             '"class_agnostic_sq": "mean", "class_agnostic_rq": "median"}', declaration.read_text())
    assert replaced == 1
    declaration.write_text(text)
    cases = swapped_classes(np.random.default_rng(21), 5)
    ground_truth, input_dir = write_cases(tmp_path, cases)
    ran = subprocess.run([sys.executable, "-m", "evaluation", name, "--ground-truth", str(ground_truth), "--input",
                          str(input_dir), "--output", str(tmp_path / "out")], cwd=copy, capture_output=True,
                         text=True, env=environment, timeout=300)
    assert ran.returncode == 0, ran.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())

    counts = {case_id: conic_counts(t, p) for case_id, (t, _, p, _) in cases.items()}
    per_image = {case_id: quality(*counted) for case_id, counted in counts.items()}
    for case_id, (t, _, p, _) in cases.items():
        entry = metrics["cases"][case_id]["class_agnostic"]
        assert [entry[key] for key in ("tp", "fp", "fn")] == list(counts[case_id][:3]), case_id
        assert [entry[key] for key in ("pq", "sq", "rq")] == pytest.approx(per_image[case_id], rel=1e-12), case_id
        if t.any():
            assert entry["pq"] == pytest.approx(panoptica_quality(t, p, 0.5).pq, rel=1e-12), case_id
    assert metrics["cases"]["image-empty"]["class_agnostic"]["pq"] == 1.0  # nothing on either side
    table = np.array([per_image[case_id] for case_id in sorted(cases)])
    summed = np.sum(list(counts.values()), axis=0)
    agnostic = metrics["aggregates"]["class_agnostic"]
    assert agnostic["pq"]["pooled"] == pytest.approx(quality(*summed)[0], rel=1e-12)
    assert agnostic["sq"]["mean"] == pytest.approx(table[:, 1].mean(), rel=1e-12)
    assert agnostic["rq"]["median"] == pytest.approx(np.median(table[:, 2]), rel=1e-12)
    assert agnostic["counts"] == {"tp": int(summed[0]), "fp": int(summed[1]), "fn": int(summed[2]),
                                  "iou_sum": pytest.approx(summed[3], rel=1e-12)}
    # the per-class mPQ is still there, and the class-agnostic PQ is not the mean of the per-class ones
    per_class = [quality(*np.sum([conic_counts(np.where(tc == label, t, 0), np.where(pc == label, p, 0))
                                  for t, tc, p, pc in cases.values()], axis=0))[0] for label in (1, 2)]
    assert metrics["aggregates"]["pq_pooled"] == pytest.approx(np.mean(per_class), rel=1e-12)
    assert agnostic["pq"]["pooled"] > np.mean(per_class) + 0.05  # a swapped class is a TP here, a FN and a FP there
    # the phase's leaderboard ranks the declared paths, in the declared order
    phase = subprocess.run([sys.executable, "-m", "evaluation.phase", name], cwd=copy, capture_output=True, text=True,
                           env=environment, timeout=300)
    assert phase.returncode == 0, phase.stderr
    board = json.loads(phase.stdout)[0]
    assert board["score_jsonpath"] == "aggregates.pq_pooled"
    assert [column["path"] for column in board["extra_results_columns"]] == [
        "aggregates.class_agnostic.pq.pooled", "aggregates.class_agnostic.sq.mean",
        "aggregates.class_agnostic.rq.median"]


def test_class_agnostic_weights_are_repeated_images(tmp_path):
    """Each row of image counts (the final ranking's bootstrap) gives the class-agnostic values of
    the images repeated that often, by a direct count."""
    cases = swapped_classes(np.random.default_rng(22), 4)
    ground_truth, input_dir = write_cases(tmp_path, cases)
    evaluation = NucleiAgnostic(ground_truth)
    from evaluation.run import matched_cases, score_case

    results = {case.case_id: score_case(evaluation, case) for case in matched_cases(evaluation, input_dir)}
    ids = sorted(cases)
    counts = np.array([[1] * len(ids), [0, 2, 1, 3, 1], [3, 0, 0, 1, 2]])
    computed = evaluation.aggregate(results, counts)
    per_image = np.array([conic_counts(cases[c][0], cases[c][2]) for c in ids], dtype=np.float64)
    qualities = np.array([quality(*row) for row in per_image])
    for row, weights in enumerate(counts):
        assert computed["aggregates.class_agnostic.pq.pooled"][row] == pytest.approx(
            quality(*(weights @ per_image))[0], rel=1e-12)
        assert computed["aggregates.class_agnostic.sq.mean"][row] == pytest.approx(
            np.repeat(qualities[:, 1], weights).mean(), rel=1e-12)
        assert computed["aggregates.class_agnostic.rq.median"][row] == pytest.approx(
            np.median(np.repeat(qualities[:, 2], weights)), rel=1e-12)


def test_class_agnostic_declarations_are_checked_at_import():
    def declare(labels, **ranked):
        return type("Bad", (Instances,), {"name": "bad", "labels": labels, "ranked_metrics": ranked})

    with pytest.raises(TypeError, match="'class_agnostic_pq' with one label is 'pq' of that label"):
        declare({1: "nucleus"}, class_agnostic_pq="pooled")
    with pytest.raises(TypeError, match=r"unknown metric 'class_agnostic_dice'.*class_agnostic_rq"):
        declare({1: "a", 2: "b"}, class_agnostic_dice="mean")
    with pytest.raises(TypeError, match="not a usable label name"):
        declare({1: "class_agnostic", 2: "b"}, pq="pooled")
    composite = type("Composite", (Instances,), {
        "name": "composite", "labels": {1: "a", 2: "b"}, "labels_ranked": "each",
        "ranked_metrics": {"pq": "pooled", "class_agnostic_pq": "pooled"},
        "composite": {"pq": 0.5, "class_agnostic_pq": 0.5}})
    assert composite.ranked_paths == ("aggregates.score", "aggregates.a.pq.pooled", "aggregates.b.pq.pooled",
                                      "aggregates.class_agnostic.pq.pooled")
    assert list(composite.composite_parts) == ["aggregates.pq_pooled"]  # the agnostic part is ranked itself
    assert [c.path for c in composite.case_columns()] == ["a.pq", "b.pq", "class_agnostic.pq"]
