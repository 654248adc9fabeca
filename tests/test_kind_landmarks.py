"""The landmarks kind (evaluation/kinds/landmarks.py) against numpy written here: radial errors as
numpy.linalg.norm of world-coordinate differences (mm; the grids rotated, anisotropic, 2D and
3D) or of index differences (pixels, the test's own world -> index), the MRE, numpy.std and the
SDR strict or inclusive at errors exactly on a threshold, per landmark and over the landmarks;
case weights as a materialised resample. Hostile submissions as real files through the real
command in a scaffolded repository copy: exit 1, one line naming the image, no metrics.json.
Ground-truth problems: exit 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evaluation.errors import SetupError
from evaluation.kinds.landmarks import Landmarks
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
from tests.test_kind_points import first_output

NAMES = ("sella", "nasion", "menton")


def declare(**attributes) -> type[Landmarks]:
    return type("AcmeLand", (Landmarks,), {"name": "acmeland", "title": "acmeland: landmarks",
                                           "landmarks": NAMES, **attributes})


def rotation_3d(seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).normal(size=(3, 3)))
    return q * np.sign(np.diag(r))


def dataset(seed: int, ndim: int, cases: int = 6):
    """{case: (grid entry, true world (L, ndim), predicted world (L, ndim))}."""
    rng = np.random.default_rng(seed)
    size = (300, 200) if ndim == 2 else (80, 90, 40)
    spacing = (0.1, 0.15) if ndim == 2 else (0.8, 0.8, 2.5)
    data = {}
    for number in range(cases):
        direction = np.array([[0.0, 1.0], [-1.0, 0.0]]) if ndim == 2 else rotation_3d(seed + number)
        entry = grid(size, spacing, origin=rng.uniform(-50, 50, ndim), direction=direction)
        true_index = rng.uniform(10, np.array(size) - 10, (len(NAMES), ndim))
        moved = np.clip(true_index + rng.normal(0, 2.5, (len(NAMES), ndim)) / np.asarray(spacing), 0,
                        np.array(size) - 1)
        data[f"image-{number:02d}"] = (entry, to_world(true_index, entry), to_world(moved, entry))
    return data


def write(tmp_path: Path, data, order=None):
    reference = {case: {"grid": entry, "landmarks": dict(zip(NAMES, truth.tolist(), strict=True))}
                 for case, (entry, truth, _) in data.items()}
    ground_truth = write_reference(tmp_path / "ground-truth", reference)
    order = order or list(range(len(NAMES)))
    outputs = {case: multiple_points(predicted[order], names=[NAMES[k] for k in order])
               for case, (_, _, predicted) in data.items()}
    return ground_truth, write_submission(tmp_path / "input", outputs, "landmarks")


def errors_of(data, unit: str) -> np.ndarray:
    """(cases, landmarks) radial errors, by numpy."""
    rows = []
    for entry, truth, predicted in data.values():
        if unit == "pixels":
            truth, predicted = to_index(truth, entry), to_index(predicted, entry)
        rows.append(np.linalg.norm(predicted - truth, axis=1))
    return np.array(rows)


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("unit", ["mm", "pixels"])
def test_mre_std_and_sdr_against_numpy(tmp_path, ndim, unit):
    data = dataset(ndim, ndim)
    ground_truth, input_dir = write(tmp_path, data, order=[2, 0, 1])  # any order of the names
    thresholds = (2.0, 2.5, 3.0, 4.0)
    challenge = declare(unit=unit, sdr_thresholds=thresholds,
                        ranked_metrics=("mre", f"sdr_2{'mm' if unit == 'mm' else 'px'}"))
    metrics = evaluated(challenge(ground_truth), input_dir)
    errors = errors_of(data, unit)
    suffix = "mm" if unit == "mm" else "px"
    aggregates = metrics["aggregates"]
    assert aggregates["mre"] == pytest.approx(errors.mean(), rel=1e-12)
    assert aggregates["mre_std"] == pytest.approx(np.std(errors), rel=1e-9)
    for threshold in thresholds:
        key = f"sdr_{threshold:g}".replace(".", "_") + suffix
        assert aggregates[key] == pytest.approx((errors < threshold).mean(), rel=1e-12), key
    for k, name in enumerate(NAMES):
        assert aggregates[name]["mre"] == pytest.approx(errors[:, k].mean(), rel=1e-12)
        assert aggregates[name]["mre_std"] == pytest.approx(np.std(errors[:, k]), rel=1e-9)
        assert aggregates[name][f"sdr_2{suffix}"] == pytest.approx((errors[:, k] < 2.0).mean(), rel=1e-12)
    for (case, entry), row in zip(sorted(metrics["cases"].items()), errors, strict=True):
        assert entry["mre"] == pytest.approx(row.mean(), rel=1e-12), case
        assert [entry[name]["radial_error"] for name in NAMES] == pytest.approx(row, rel=1e-12)


@pytest.mark.parametrize("inclusive, expected", [(False, 1 / 3), (True, 2 / 3)])
def test_an_error_exactly_on_the_threshold(tmp_path, inclusive, expected):
    """Errors 1, 2 and 3 mm exactly (integer world coordinates): 2 mm is a success only when inclusive."""
    entry = grid((100, 100), (1.0, 1.0))
    truth = {"image-00": {"grid": entry, "landmarks": {"sella": [10.0, 10.0], "nasion": [20.0, 20.0],
                                                       "menton": [30.0, 30.0]}}}
    ground_truth = write_reference(tmp_path / "gt", truth)
    input_dir = write_submission(tmp_path / "in", {"image-00": multiple_points(
        [[11.0, 10.0], [20.0, 22.0], [27.0, 30.0]], names=list(NAMES))}, "landmarks")
    metrics = evaluated(declare(sdr_thresholds=(2.0,), sdr_inclusive=inclusive)(ground_truth), input_dir)
    assert metrics["aggregates"]["sdr_2mm"] == pytest.approx(expected, rel=1e-15)
    assert metrics["aggregates"]["mre"] == pytest.approx(2.0, rel=1e-15)


def test_case_weights_equal_the_materialised_resample(tmp_path):
    data = dataset(5, 2)
    ground_truth, input_dir = write(tmp_path, data)
    challenge = declare(ranked_metrics=("mre", "sdr_2_5mm"), sdr_thresholds=(2.5,))(ground_truth)
    results = scored(challenge, input_dir)
    weights = np.array([[3, 0, 1, 0, 2, 1]])
    values = challenge.aggregate(results, weights)
    errors = np.repeat(errors_of(data, "mm"), weights[0], axis=0)
    assert values["aggregates.mre"][0] == pytest.approx(errors.mean(), rel=1e-12)
    assert values["aggregates.sdr_2_5mm"][0] == pytest.approx((errors < 2.5).mean(), rel=1e-12)


def test_composite_ranks_first(tmp_path):
    data = dataset(6, 2)
    ground_truth, input_dir = write(tmp_path, data)
    challenge = declare(composite={"sdr_2mm": 1.0, "mre": -0.1})
    assert [column.path for column in (challenge.leaderboards[0].score, *challenge.leaderboards[0].extra_columns)] \
        == ["aggregates.score", "aggregates.mre", "aggregates.sdr_2mm"]
    metrics = evaluated(challenge(ground_truth), input_dir)
    errors = errors_of(data, "mm")
    assert metrics["aggregates"]["score"] == pytest.approx((errors < 2).mean() - 0.1 * errors.mean(), rel=1e-12)


@pytest.mark.parametrize("attributes, message", [
    ({"landmarks": ()}, "landmarks"), ({"landmarks": ("a", "a")}, "landmarks"), ({"unit": "cm"}, "unit"),
    ({"ranked_metrics": ("sdr_5mm",)}, "not a metric"), ({"sdr_thresholds": (0.0,)}, "sdr_thresholds"),
    ({"landmarks": ("mre",)}, "metric names"), ({"ranking": "borda"}, "ranking"),
])
def test_a_bad_declaration_is_refused(attributes, message):
    with pytest.raises(TypeError, match=message):
        declare(**attributes)


@pytest.mark.parametrize("reference, message", [
    ({"a": {"grid": grid((10, 10), (1, 1)), "landmarks": {"sella": [1.0, 1.0], "nasion": [2.0, 2.0]}}},
     "every landmark"),
    ({"a": {"grid": grid((10, 10), (1, 1)), "landmarks": {"sella": [1.0, 1.0], "nasion": [2.0, 2.0],
                                                          "menton": [20.0, 2.0]}}}, "outside"),
    ({"a": {"grid": grid((10, 10), (1, 1)), "landmarks": {key: [1.0, 1.0] for key in NAMES}},
      "b": {"grid": grid((10, 10, 10), (1, 1, 1)), "landmarks": {key: [1.0, 1.0, 1.0] for key in NAMES}}},
     "mixes 2D and 3D"),
    ({"a": {"grid": grid((10, 10), (1, 1)), "landmarks": {key: [1.0, 1.0] for key in NAMES}, "extra": 1}},
     "exactly the keys"),
])
def test_ground_truth_problems_are_the_organizers(tmp_path, reference, message):
    with pytest.raises(SetupError, match=message):
        declare()(write_reference(tmp_path / "gt", reference))


# ---- hostile submissions through the real command ----------------------------------------------


@pytest.fixture(scope="module")
def scaffolded_landmarks(tmp_path_factory) -> Path:
    from tests.test_new import scaffolded_copy

    return scaffolded_copy(tmp_path_factory.mktemp("landmarks") / "repo", "acmelmk", "landmarks")


def changed(edit):
    def change(data: bytes) -> bytes:
        document = json.loads(data)
        edit(document["points"])
        return json.dumps(document).encode()
    return change


@pytest.mark.parametrize("change, expected", [
    (changed(lambda points: points.pop()), "has no point named menton"),
    (changed(lambda points: points[1].update(name="Sella")), "point 1 is named \"Sella\", which is no landmark"),
    (changed(lambda points: points.append(dict(points[0]))), "the landmark sella is given twice (points 0 and 5)"),
    (changed(lambda points: points[0].pop("name")), "point 0 is named null, which is no landmark"),
    (changed(lambda points: points[0].update(point=points[0]["point"][:2])),
     "point 0 ('sella') is a list of 2 numbers"),
    (changed(lambda points: points[2].update(point=[1.0e5, 1.0, 0.0])),
     "point 2 ('orbitale') at (100000, 1, 0) (x, y, z) lies outside"),
    (changed(lambda points: points[0].update(probability=2)), "the probability of point 0 ('sella') is 2"),
    (lambda data: data.replace(b'"point": [', b'"point": [NaN, ', 1).replace(b", 0.0]", b"]", 1),
     "point 0 ('sella') has x = NaN"),
])
def test_hostile_submissions_exit_1_naming_the_image(scaffolded_landmarks, tmp_path, change, expected):
    import shutil

    copy, name = scaffolded_landmarks, "acmelmk"
    input_dir = tmp_path / "input"
    shutil.copytree(copy / "test" / name / "input", input_dir)
    path = first_output(input_dir)
    path.write_bytes(change(path.read_bytes()))
    output = tmp_path / "output"
    run = subprocess.run([sys.executable, "-m", "evaluation", name, "--ground-truth", f"ground-truth/{name}",
                          "--input", str(input_dir), "--output", str(output)], cwd=copy, capture_output=True,
                         text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, timeout=120)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 1, run.stderr
    assert lines[-1].startswith("Image image-000: the output 'landmarks'") and expected in lines[-1], lines[-1]
    assert "Traceback" not in run.stderr and not (output / "metrics.json").exists()


def test_case_rank_then_mean_reads_each_cases_own_values(tmp_path):
    from evaluation.declarations.ranking_rules import MeanOfCaseRanks

    data = dataset(8, 2)
    ground_truth, input_dir = write(tmp_path, data)
    challenge = declare(ranked_metrics=("mre", "sdr_2_5mm"), ranking="case_rank_then_mean")
    rule = challenge.final_rankings[0]
    assert isinstance(rule, MeanOfCaseRanks) and rule.case_paths == ("mre", "sdr_2_5mm")
    assert [column.order for column in rule.columns] == ["asc", "desc"]
    metrics = evaluated(challenge(ground_truth), input_dir)
    for (case, entry), row in zip(sorted(metrics["cases"].items()), errors_of(data, "mm"), strict=True):
        assert entry["sdr_2_5mm"] == pytest.approx((row < 2.5).mean(), rel=1e-15), case
        assert entry["mre_std"] == pytest.approx(np.std(row), rel=1e-12), case
