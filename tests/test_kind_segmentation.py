"""The segmentation kind (evaluation/kinds/segmentation.py): its per-label metrics against the
peers organizers use (medpy's border-voxel distances, hd95 and assd; DeepMind's surface-distance
for surfels; numpy for Dice and IoU; pandas for the description over cases; scikit-image's
skeletonize for clDice as TopCoW's scorer computes it; scipy's and cc3d's connected components for
the Betti-0 error) on anisotropic 3D
and 2D label maps with empty labels; its declaration checks; and whole runs of the evaluation's
command on real files: hostile label maps exit 1 with one line naming the case and no
metrics.json, a noise prediction is scored in bounded time."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from evaluation.kinds.segmentation import (
    AverageSurfaceDistance,
    BettiError,
    ClDice,
    Composite,
    Dice,
    Hausdorff,
    IoU,
    LabelMapPair,
    NormalizedSurfaceDice,
    RankedMetric,
    Segmentation,
    score_label_maps,
)

ROOT = Path(__file__).resolve().parent.parent
LABELS = {1: "liver", 2: "spleen", 3: "kidney"}
SPACING = (3.0, 0.8, 0.8)  # numpy order (z, y, x): thick slices
SHAPE = (24, 40, 40)

medpy_binary = pytest.importorskip("medpy.metric.binary")
surface_distance = pytest.importorskip("surface_distance")  # DeepMind's


def box(shape, low, high) -> np.ndarray:
    mask = np.zeros(shape, dtype=bool)
    mask[tuple(slice(a, b) for a, b in zip(low, high, strict=True))] = True
    return mask


def ball(shape, centre, radii) -> np.ndarray:
    grid = np.indices(shape, sparse=True)
    return sum(((axis - c) / r) ** 2 for axis, c, r in zip(grid, centre, radii, strict=True)) <= 1


def generated_cases(shape=SHAPE, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """(prediction, truth) label maps: every label present; the kidney only predicted (truth
    empty); the spleen only true (prediction empty); the kidney in neither; and two
    random-offset cases."""
    rng = np.random.default_rng(seed)
    cases = []
    for number in range(6):
        truth = np.zeros(shape, dtype=np.uint8)
        prediction = np.zeros(shape, dtype=np.uint8)
        centre = np.array(shape) * 0.4
        liver = ball(shape, centre, np.array(shape) * 0.25)
        truth[liver] = 1
        prediction[ball(shape, centre + rng.integers(-1, 2, len(shape)), np.array(shape) * 0.23)] = 1
        spleen = box(shape, [int(n * 0.7) for n in shape], [int(n * 0.9) for n in shape])
        truth[spleen] = 2
        if number != 2:  # case 2: the spleen is missed (prediction empty)
            prediction[np.roll(spleen, int(rng.integers(-2, 3)), axis=-1)] = 2
        kidney_truth = box(shape, [1] * len(shape), [4] + [6] * (len(shape) - 1))
        kidney_prediction = box(shape, [1] * len(shape), [3] + [7] * (len(shape) - 1))
        if number not in (1, 3):
            truth[kidney_truth] = 3
        if number != 3:  # case 1: the kidney predicted only (truth empty); case 3: in neither
            prediction[kidney_prediction] = 3
        if number >= 4:  # stray voxels: outliers for the Hausdorff distance
            stray = rng.integers(0, np.array(shape), size=(5, len(shape)))
            prediction[tuple(stray.T)] = rng.integers(1, 4, 5)
        cases.append((prediction, truth))
    return cases


def diagonal(shape, spacing) -> float:
    return math.sqrt(sum((n * s) ** 2 for n, s in zip(shape, spacing, strict=True)))


def peer_values(p: np.ndarray, t: np.ndarray, spacing, tolerance: float) -> dict[str, float]:
    """Every variant the tests declare, for one label's masks, from the peers; the empty policies
    of the declarations below applied by hand."""
    if not p.any() or not t.any():
        both = not p.any() and not t.any()
        far = 0.0 if both else diagonal(p.shape, spacing)
        overlap = float(both)
        return {"dice": overlap, "iou": overlap, "hd95": far, "hd": far, "hd95_pooled": far, "hd95_full": far,
                "assd": -1.0 if both else 99.0, "masd": far, "nsd": overlap, "nsd_surfels": overlap,
                "hd95_surfels": far}
    directed = medpy_binary.__surface_distances
    to_t, to_p = directed(p, t, spacing, 1), directed(t, p, spacing, 1)
    to_t3, to_p3 = directed(p, t, spacing, p.ndim), directed(t, p, spacing, p.ndim)  # fully connected
    deepmind = surface_distance.compute_surface_distances(t, p, spacing)
    within = np.count_nonzero(to_t <= tolerance * (1 + 1e-9)) + np.count_nonzero(to_p <= tolerance * (1 + 1e-9))
    return {
        "dice": 2 * np.count_nonzero(p & t) / (np.count_nonzero(p) + np.count_nonzero(t)),
        "iou": np.count_nonzero(p & t) / np.count_nonzero(p | t),
        "hd95": max(np.percentile(to_t, 95), np.percentile(to_p, 95)),  # MONAI's and MetricsReloaded's rule
        "hd": medpy_binary.hd(p, t, spacing),
        "hd95_pooled": medpy_binary.hd95(p, t, spacing),
        "hd95_full": max(np.percentile(to_t3, 95), np.percentile(to_p3, 95)),
        "assd": medpy_binary.assd(p, t, spacing),  # medpy 0.5: all distances of both directions
        "masd": (to_t.mean() + to_p.mean()) / 2,
        "nsd": within / (len(to_t) + len(to_p)),
        "nsd_surfels": surface_distance.compute_surface_dice_at_tolerance(deepmind, tolerance),
        "hd95_surfels": surface_distance.compute_robust_hausdorff(deepmind, 95),
    }


def every_variant(ndim: int) -> tuple:
    """One declaration of each metric and variant (their keys: peer_values')."""
    return (
        Dice(), IoU(),
        Hausdorff(95), Hausdorff(100), Hausdorff(95, combine="pooled", key="hd95_pooled"),
        Hausdorff(95, connectivity=ndim, key="hd95_full"),
        Hausdorff(95, boundary="surfels", key="hd95_surfels"),
        # assd's empty policy: numbers, told apart from the distances' "diagonal"
        AverageSurfaceDistance(combine="pooled", both_empty=-1.0, truth_empty=99.0, prediction_empty=99.0),
        AverageSurfaceDistance(combine="mean"),
        NormalizedSurfaceDice(2.0, boundary="voxels"),
        NormalizedSurfaceDice(2.0, boundary="surfels", key="nsd_surfels"),
    )


@pytest.mark.parametrize("shape, spacing", [(SHAPE, SPACING), ((48, 40), (0.7, 1.9)), (SHAPE, None)],
                         ids=["3d-anisotropic", "2d-anisotropic", "3d-voxel-units"])
def test_every_variant_equals_its_peer_per_label(shape, spacing):
    variants = every_variant(len(shape))
    for prediction, truth in generated_cases(shape):
        result = score_label_maps(prediction, truth, LABELS, variants, spacing)
        for value, name in LABELS.items():
            expected = peer_values(prediction == value, truth == value, spacing or (1.0,) * len(shape), 2.0)
            for key, peer in expected.items():
                # DeepMind's surfels are float32 areas and distances: its values agree to float32's precision
                rel = 1e-6 if key.endswith("surfels") else 1e-12
                assert result[f"{name}/{key}"] == pytest.approx(peer, rel=rel, abs=1e-12), (name, key)
        for metric in variants:  # the case's mean over the declared labels
            per_label = [result[f"{name}/{metric.key}"] for name in LABELS.values()]
            assert result[metric.key] == pytest.approx(np.mean(per_label), rel=1e-15)


def test_a_tolerance_per_label_is_each_labels_own():
    tolerances = {"liver": 0.5, "spleen": 2.0, "kidney": 3.5}
    metric = NormalizedSurfaceDice(tolerances, boundary="voxels")
    for prediction, truth in generated_cases():
        result = score_label_maps(prediction, truth, LABELS, (metric,), SPACING)
        for value, name in LABELS.items():
            peer = peer_values(prediction == value, truth == value, SPACING, tolerances[name])["nsd"]
            assert result[f"{name}/nsd"] == pytest.approx(peer, rel=1e-12)


# ---- whole runs: a challenge declared in a driver script, run by the evaluation's command ---------


DRIVER = '''
import sys
from evaluation import cli
from evaluation.kinds.segmentation import *


class Tiny(Segmentation):
    name = "tiny"
    title = "tiny: a test of the segmentation kind"
    labels = {labels!r}
    label_metrics = (Dice(), Hausdorff(95), NormalizedSurfaceDice(2.0), IoU(both_empty=None))
    ranked_metrics = (RankedMetric("dice"), RankedMetric("hd95"), RankedMetric("nsd"),
                      RankedMetric("dice", label="kidney", over_cases="median"))


cli.named_challenge = lambda name: Tiny  # the command as it is, told where this challenge is
sys.exit(cli.main(sys.argv[1:]))
'''


def write_map(path: Path, voxels: np.ndarray, spacing_xyz, dtype=np.uint8) -> None:
    import SimpleITK as sitk

    path.parent.mkdir(parents=True, exist_ok=True)
    image = sitk.GetImageFromArray(voxels.astype(dtype))
    image.SetSpacing(tuple(float(s) for s in spacing_xyz))
    sitk.WriteImage(image, str(path), True)


def write_submission(input_dir: Path, maps: dict[str, np.ndarray], spacing_xyz, dtype=np.uint8,
                     image_name: str = "out.mha") -> None:
    jobs = []
    for number, (case_id, voxels) in enumerate(sorted(maps.items())):
        pk = f"job-{number}"
        write_map(input_dir / pk / "output" / "images" / "segmentation" / image_name, voxels, spacing_xyz, dtype)
        jobs.append({"pk": pk, "status": "Succeeded",
                     "inputs": [{"pk": 0, "file": None, "value": None,
                                 "image": {"pk": f"i{number}", "name": f"{case_id}.mha"},
                                 "socket": {"slug": "image", "kind": "Image", "super_kind": "Image",
                                            "relative_path": "images/image"}}],
                     "outputs": [{"pk": 0, "file": None, "value": None,
                                  "image": {"pk": f"o{number}", "name": image_name},
                                  "socket": {"slug": "segmentation", "kind": "Segmentation", "super_kind": "Image",
                                             "relative_path": "images/segmentation"}}]})
    (input_dir / "predictions.json").write_text(json.dumps(jobs))


@pytest.fixture(scope="module")
def challenge(tmp_path_factory):
    """A driver script, a ground truth of four cases (.nii.gz and .mha) and a valid submission."""
    folder = tmp_path_factory.mktemp("tiny")
    driver = folder / "driver.py"
    driver.write_text(DRIVER.format(labels=LABELS))
    cases = generated_cases()[:4]
    spacing_xyz = SPACING[::-1]
    for number, (_, truth) in enumerate(cases):
        write_map(folder / "ground-truth" / f"case-{number}{'.nii.gz' if number % 2 else '.mha'}", truth,
                  spacing_xyz)
    write_submission(folder / "input", {f"case-{n}": p for n, (p, _) in enumerate(cases)}, spacing_xyz)
    return folder, cases


def run(folder: Path, input_dir: Path, output: Path, ground_truth: Path | None = None,
        workers: int = 2) -> subprocess.CompletedProcess:
    """The evaluation's command (the driver) on `input_dir`, against the fixture's ground truth or another."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1", "EVALUATION_WORKERS": str(workers)}
    return subprocess.run([sys.executable, str(folder / "driver.py"), "tiny", "--ground-truth",
                           str(ground_truth or folder / "ground-truth"), "--input", str(input_dir), "--output",
                           str(output)], capture_output=True, text=True, env=env, timeout=120, cwd=folder)


def test_a_run_writes_each_label_and_case_and_the_ranked_values(challenge, tmp_path):
    pandas = pytest.importorskip("pandas")
    folder, cases = challenge
    finished = run(folder, folder / "input", tmp_path / "out")
    assert finished.returncode == 0, finished.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    # NIfTI stores the spacing as float32: the .nii.gz cases are scored on that spacing
    spacings = [SPACING if n % 2 == 0 else tuple(float(np.float32(s)) for s in SPACING) for n in range(4)]
    peers = {f"case-{n}": {name: peer_values(p == value, t == value, spacings[n], 2.0)
                           for value, name in LABELS.items()} for n, (p, t) in enumerate(cases)}
    for case_id, per_label in peers.items():
        for name, values in per_label.items():
            for key in ("dice", "hd95", "nsd"):
                assert metrics["cases"][case_id][name][key] == pytest.approx(values[key], rel=1e-12), (case_id, name)
    # IoU of a label in neither map is undefined (declared None): null, a note, left out of the means
    assert metrics["cases"]["case-3"]["kidney"]["iou"] is None
    assert "cases.case-3.kidney.iou" in metrics["notes"]
    assert metrics["aggregates"]["kidney"]["iou"]["count"] == 3
    # the ranked values: each case's mean over labels, then the mean (the median) over cases
    for key in ("dice", "hd95", "nsd"):
        case_means = [np.mean([peers[c][name][key] for name in LABELS.values()]) for c in sorted(peers)]
        assert metrics["aggregates"][f"{key}_mean"] == pytest.approx(np.mean(case_means), rel=1e-12)
    kidney = [peers[c]["kidney"]["dice"] for c in sorted(peers)]
    assert metrics["aggregates"]["kidney"]["dice"]["median"] == pytest.approx(np.median(kidney), rel=1e-12)
    # each label's description over cases is pandas' describe
    for name in LABELS.values():
        for key in ("dice", "hd95", "nsd"):
            described = pandas.Series([peers[c][name][key] for c in sorted(peers)]).describe()
            ours = metrics["aggregates"][name][key]
            for theirs, mine in (("mean", "mean"), ("std", "std"), ("min", "min"), ("25%", "25%"),
                                 ("50%", "median"), ("75%", "75%"), ("max", "max"), ("count", "count")):
                assert ours[mine] == pytest.approx(described[theirs], rel=1e-12, abs=1e-12), (name, key, mine)
    assert metrics["counts"]["empty_cases"]["kidney"] == {"both_empty": 1, "truth_empty": 1, "prediction_empty": 0}
    assert metrics["counts"]["empty_cases"]["spleen"] == {"both_empty": 0, "truth_empty": 0, "prediction_empty": 1}


def test_a_2d_challenge_reads_tif_outputs_against_a_nifti_truth(challenge, tmp_path):
    """2D label maps: the ground truth .nii.gz (its spacing stored as float32), the jobs' .tif
    (TIFF keeps the spacing as a resolution: within the grid's tolerance of it)."""
    folder, _ = challenge
    shape, spacing = (48, 40), (1.9, 0.7)  # numpy order
    cases = generated_cases(shape)
    for number, (_, truth) in enumerate(cases):
        write_map(tmp_path / "gt" / f"case-{number}.nii.gz", truth, spacing[::-1])
    write_submission(tmp_path / "input", {f"case-{n}": p for n, (p, _) in enumerate(cases)}, spacing[::-1],
                     image_name="out.tif")
    finished = run(folder, tmp_path / "input", tmp_path / "out", ground_truth=tmp_path / "gt")
    assert finished.returncode == 0, finished.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    scored = tuple(float(np.float32(s)) for s in spacing)  # the ground truth's header: NIfTI's float32
    for number, (prediction, truth) in enumerate(cases):
        for value, name in LABELS.items():
            peer = peer_values(prediction == value, truth == value, scored, 2.0)
            for key in ("dice", "hd95", "nsd"):
                assert metrics["cases"][f"case-{number}"][name][key] == pytest.approx(peer[key], rel=1e-12), name


def hostile_maps(truth: np.ndarray) -> dict[str, tuple[np.ndarray, tuple, type, str]]:
    """name -> (voxels, spacing (x, y, z), pixel type, what the last line must say)."""
    stray, fraction, undefined = truth.copy(), truth.astype(np.float32), truth.astype(np.float32)
    stray[0, 0, 0] = 9
    fraction[5, 5, 5] = 1.5
    undefined[3, 3, 3] = np.nan
    xyz = SPACING[::-1]
    return {
        "other-spacing": (truth, (0.8, 0.8, 2.5), np.uint8, "spacing"),
        "other-size": (truth[:, :-2], xyz, np.uint8, "size"),
        "two-dimensional": (truth[4], xyz[:2], np.uint8, "2D"),
        "label-out-of-range": (stray, xyz, np.uint8, "9"),
        "fractional-values": (fraction, xyz, np.float32, "1.5"),
        "nan-values": (undefined, xyz, np.float32, "NaN"),
    }


@pytest.mark.parametrize("hostile", ["other-spacing", "other-size", "two-dimensional", "label-out-of-range",
                                     "fractional-values", "nan-values"])
def test_a_hostile_label_map_exits_1_naming_the_case(challenge, tmp_path, hostile):
    folder, cases = challenge
    maps = {f"case-{n}": p for n, (p, _) in enumerate(cases)}
    voxels, spacing, dtype, said = hostile_maps(cases[2][1])[hostile]
    write_submission(tmp_path / "input", {case: maps[case] for case in maps if case != "case-2"}, SPACING[::-1])
    write_submission(tmp_path / "hostile", {"case-2": voxels}, spacing, dtype)
    # the hostile case's job joins the valid ones
    jobs = json.loads((tmp_path / "input" / "predictions.json").read_text())
    hostile_job = json.loads((tmp_path / "hostile" / "predictions.json").read_text())[0]
    hostile_job["pk"] = "job-hostile"
    (tmp_path / "hostile" / "job-0").rename(tmp_path / "input" / "job-hostile")
    (tmp_path / "input" / "predictions.json").write_text(json.dumps([*jobs, hostile_job]))
    finished = run(folder, tmp_path / "input", tmp_path / "out")
    last = finished.stderr.strip().splitlines()[-1]
    assert finished.returncode == 1, finished.stderr
    assert last.startswith("Case case-2: ") and said in last and last.endswith("."), last
    assert last.count(". ") == 0 and "Traceback" not in finished.stderr
    assert not (tmp_path / "out" / "metrics.json").exists()


@pytest.mark.parametrize("spoil", ["nan-value", "nan-offset"])
def test_a_hostile_nifti_ground_truth_exits_3_naming_the_file(challenge, tmp_path, spoil):
    """A float .nii.gz label map holding a NaN (SimpleITK's reader would give 0, background), or
    whose header's data offset is NaN: the organizer's (exit 3), one line naming the file, no
    metrics.json. (A job's image outputs are .mha or .tif; a NIfTI comes from a ground truth or a
    predictions-file phase, as HECKTOR's, read by the same reader.)"""
    import gzip
    import shutil
    import struct

    folder, cases = challenge
    ground_truth = tmp_path / "gt"
    shutil.copytree(folder / "ground-truth", ground_truth)
    path = ground_truth / "case-1.nii.gz"
    voxels = cases[1][1].astype(np.float32)
    if spoil == "nan-value":
        voxels[3, 3, 3] = np.nan
    write_map(path, voxels, SPACING[::-1], np.float32)
    if spoil == "nan-offset":
        head = bytearray(gzip.decompress(path.read_bytes()))
        struct.pack_into("<f", head, 108, float("nan"))
        path.write_bytes(gzip.compress(bytes(head)))
    finished = run(folder, folder / "input", tmp_path / "out", ground_truth=ground_truth)
    last = finished.stderr.strip().splitlines()[-1]
    assert finished.returncode == 3, finished.stderr
    said = "holds NaN or infinite values" if spoil == "nan-value" else "data offset, vox_offset"
    assert "case-1.nii.gz" in last and said in last and "Traceback" not in finished.stderr, last
    assert not (tmp_path / "out" / "metrics.json").exists()


def test_a_noise_prediction_is_scored_in_bounded_time(challenge, tmp_path):
    """Random labels everywhere: every voxel a border voxel of some label, far from the truth's;
    scored (exit 0, the worst values), not refused, within seconds on 64 x 160 x 160 voxels."""
    folder, _ = challenge
    shape = (64, 160, 160)
    truth = np.zeros(shape, dtype=np.uint8)
    truth[ball(shape, np.array(shape) / 2, np.array(shape) / 4)] = 1
    truth[box(shape, (5, 5, 5), (15, 30, 30))] = 2
    noise = np.random.default_rng(7).integers(0, 4, shape).astype(np.uint8)
    ground_truth = tmp_path / "gt"
    write_map(ground_truth / "case-0.mha", truth, SPACING[::-1])
    write_submission(tmp_path / "input", {"case-0": noise}, SPACING[::-1])
    started = time.perf_counter()
    finished = run(folder, tmp_path / "input", tmp_path / "out", ground_truth=ground_truth, workers=1)
    elapsed = time.perf_counter() - started
    assert finished.returncode == 0, finished.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["aggregates"]["dice_mean"] < 0.2 and metrics["aggregates"]["kidney"]["dice"]["mean"] == 0.0
    assert elapsed < 60, f"a noise prediction took {elapsed:.1f} s"


# ---- the declaration ---------------------------------------------------------------------------


def declared(**attributes) -> type[Segmentation]:
    return type("Declared", (Segmentation,), {"name": "x", "title": "x", "labels": dict(LABELS), **attributes})


def test_the_default_declaration_ranks_dice_hd95_and_nsd_in_that_order():
    cls = declared()
    assert [c.path for c in (cls.leaderboards[0].score, *cls.leaderboards[0].extra_columns)] == [
        "aggregates.dice_mean", "aggregates.hd95_mean", "aggregates.nsd_mean"]
    assert [c.order for c in cls.final_rankings[0].keys] == ["desc", "asc", "desc"]
    assert cls.ranked_paths == ("aggregates.dice_mean", "aggregates.hd95_mean", "aggregates.nsd_mean")


def test_a_composite_is_the_score_computed_from_the_values_it_weighs():
    cls = declared(composite=Composite({"dice_mean": 0.5, "nsd_mean": 0.5, "hd95_mean": -0.01}))
    assert cls.leaderboards[0].score.path == "aggregates.score"
    results = {f"c{n}": score_label_maps(p, t, LABELS, cls.label_metrics, SPACING)
               for n, (p, t) in enumerate(generated_cases())}
    values = cls.__new__(cls).point_values(results)  # the ranked values need no ground truth
    expected = 0.5 * values["aggregates.dice_mean"] + 0.5 * values["aggregates.nsd_mean"] \
        - 0.01 * values["aggregates.hd95_mean"]
    assert values["aggregates.score"] == pytest.approx(expected, rel=1e-12)
    assert values["aggregates.dice_mean"] == pytest.approx(np.mean([r["dice"] for r in results.values()]), rel=1e-12)


def test_a_composite_is_declared_as_composite_or_as_its_weights_alone():
    """`composite = {key: weight}` is Composite({key: weight}) with the default title (the sum
    itself), as in every kind (kinds/declared.py); a title and a lower-is-better score are
    Composite's."""
    weights = {"dice_mean": 0.5, "nsd_mean": 0.5, "hd95_mean": -0.01}
    plain, written = declared(composite=weights), declared(composite=Composite(weights))
    assert [(r.column, r.reads) for r in plain.ranked] == [(r.column, r.reads) for r in written.ranked]
    assert plain.composite == written.composite == Composite(weights)
    assert plain.leaderboards[0].score.title == "Score (0.5 dice_mean + 0.5 nsd_mean - 0.01 hd95_mean)"
    lower = declared(composite=Composite({"hd95_mean": 1.0}, title="HD95", better="lower"))
    assert (lower.leaderboards[0].score.title, lower.leaderboards[0].score.order) == ("HD95", "asc")
    assert declared(composite={}).composite is None
    for wrong in ({"dice_mean": "1"}, {"dice_mean": math.inf}):
        with pytest.raises(TypeError, match="is not a key with a finite weight"):
            declared(composite=wrong)
    with pytest.raises(TypeError, match="non-empty"):
        Composite({})
    with pytest.raises(TypeError, match="'higher' or 'lower'"):
        Composite({"dice_mean": 1.0}, better="up")


@pytest.mark.parametrize("attributes, message", [
    ({"label_metrics": (Dice(both_empty=None),)}, "leaves both_empty undefined"),
    ({"ranked_metrics": (RankedMetric("iou"),)}, "not one of the metrics"),
    ({"ranked_metrics": (RankedMetric("dice", label="lung"),)}, "not one of the labels"),
    ({"label_metrics": (NormalizedSurfaceDice({"liver": 1.0}),)}, "must name every label"),
    ({"label_metrics": (Dice(), Dice())}, "share a key"),
    ({"labels": {0: "background"}}, "0 is the background"),
    ({"labels": {1: "dice_mean"}}, "is a key of metrics.json"),
    ({"ranking": "borda"}, "ranking .borda. is not one of"),
    ({"composite": Composite({"dice": 1.0})}, "none of its values' keys"),
    ({"composite": Composite({"dice_mean": 1.0}), "ranking": "mean_of_ranks"}, "declare ranking"),
    ({"labels": {1: "score"}, "composite": Composite({"dice_mean": 1.0})}, "is a key of metrics.json"),
])
def test_a_wrong_declaration_is_refused_when_the_class_is_made(attributes, message):
    with pytest.raises(TypeError, match=message):
        declared(**attributes)


@pytest.mark.parametrize("make, message", [
    (lambda: Hausdorff(95, truth_empty=math.nan), "finite number"),
    (lambda: NormalizedSurfaceDice(2.0, truth_empty="diagonal"), "is a distance"),
    (lambda: Hausdorff(101), "percentile"),
    (lambda: Hausdorff(95, boundary="surfels", connectivity=2), "voxels"),
    (lambda: NormalizedSurfaceDice(-1.0), "tolerance"),
])
def test_a_wrong_metric_is_refused(make, message):
    with pytest.raises(TypeError, match=message):
        make()


def test_each_ranking_rule_is_the_declared_one_and_reads_paths_metrics_json_has():
    from evaluation.declarations.columns import ABSOLUTE, MEAN_OF_RANKS
    from evaluation.declarations.ranking_rules import MeanOfCaseRanks, MeanOfRanks, OrderedRanking
    from evaluation.platform.outputs import value_at_path

    ranked = (RankedMetric("dice"), RankedMetric("hd95"), RankedMetric("nsd", label="kidney"))
    rules = {ranking: declared(ranking=ranking, ranked_metrics=ranked)
             for ranking in ("ordered", "mean_of_ranks", "case_rank_then_mean")}
    assert isinstance(rules["ordered"].final_rankings[0], OrderedRanking)
    assert isinstance(rules["mean_of_ranks"].final_rankings[0], MeanOfRanks)
    assert isinstance(rules["case_rank_then_mean"].final_rankings[0], MeanOfCaseRanks)
    assert rules["mean_of_ranks"].leaderboards[0].scoring_method == MEAN_OF_RANKS
    assert rules["ordered"].leaderboards[0].scoring_method == ABSOLUTE
    # the per-case rule reads each ranked metric's value inside a case's entry of metrics.json
    cls = rules["case_rank_then_mean"]
    prediction, truth = generated_cases()[0]
    entry = cls.__new__(cls).case_entry(score_label_maps(prediction, truth, LABELS, cls.label_metrics, SPACING))
    for path in cls.final_rankings[0].case_paths:
        assert isinstance(value_at_path(entry, path), float), path
    assert cls.final_rankings[0].case_paths == ("mean_over_labels.dice", "mean_over_labels.hd95", "kidney.nsd")


# ---- topology: clDice and the Betti-0 error ------------------------------------------------------

VESSELS = {1: "basilar", 2: "communicating", 3: "nodule"}
VESSEL_SHAPE = (12, 40, 36)  # numpy order (z, y, x), thick slices: SPACING
ndimage = pytest.importorskip("scipy.ndimage")
skimage_morphology = pytest.importorskip("skimage.morphology")
cc3d = pytest.importorskip("cc3d")


def tube(shape, points, radius: int = 1) -> np.ndarray:
    """A polyline through `points`, dilated `radius` times (a vessel)."""
    line = np.zeros(shape, dtype=bool)
    for a, b in itertools.pairwise(points):
        for s in np.linspace(0.0, 1.0, 80):
            line[tuple(np.round(np.add(a, s * np.subtract(b, a))).astype(int))] = True
    return ndimage.binary_dilation(line, iterations=radius) if radius else line  # (0 iterations: until full)


def vessel_cases() -> list[tuple[np.ndarray, np.ndarray]]:
    """(prediction, truth) label maps of vessels: a basilar artery predicted bent, broken in two
    or with stray voxels; a communicating artery absent from the truth (case 1), from the
    prediction (case 2), from both (case 3); a 2×2×2 nodule (Lee's thinning leaves no skeleton)
    against a predicted tube."""
    shape = VESSEL_SHAPE
    cases = []
    for number in range(5):
        truth = np.zeros(shape, dtype=np.uint8)
        prediction = np.zeros(shape, dtype=np.uint8)
        truth[tube(shape, [(2, 5, 5), (6, 20, 18), (9, 35, 30)])] = 1
        predicted = tube(shape, [(3, 5, 6), (6, 21, 18 + number), (9, 34, 31)])
        if number == 2:  # broken in two: its Betti-0 is 2
            predicted[:, 18:22, :] = False
        prediction[predicted] = 1
        if number not in (1, 3):
            truth[tube(shape, [(5, 8, 25), (5, 30, 25)], radius=1)] = 2
        if number not in (2, 3):
            prediction[tube(shape, [(5, 9, 24), (6, 30, 26)], radius=1)] = 2
        truth[1:3, 36:38, 2:4] = 3  # a 2×2×2 cube: an empty skeleton
        if number == 4:
            prediction[tube(shape, [(1, 30, 2), (3, 38, 10)], radius=0)] = 3
            stray = [(0, 0, 35), (11, 39, 0), (11, 0, 20)]  # three isolated basilar voxels
            prediction[tuple(np.array(stray).T)] = 1
        cases.append((prediction, truth))
    return cases


def topcow_cldice(prediction: np.ndarray, truth: np.ndarray) -> float:
    """clDice as TopCoW 2024's clDice.py defines it: skimage's skeletonize of each whole mask (Lee's
    thinning in 3D), a skeleton's share inside the other mask (0 for an empty skeleton), their
    harmonic mean (0 when both are 0)."""
    def share(skeleton, mask):
        return 0.0 if skeleton.sum() == 0 else float((skeleton & mask).sum() / skeleton.sum())

    precision = share(skimage_morphology.skeletonize(prediction), truth)
    sensitivity = share(skimage_morphology.skeletonize(truth), prediction)
    return 0.0 if precision + sensitivity == 0 else 2 * precision * sensitivity / (precision + sensitivity)


def scipy_b0(mask: np.ndarray, rank: int = 3) -> int:
    """Connected components (rank 3: 26 neighbours; 1: 6), 0 for an empty mask (TopCoW's "blank")."""
    return int(ndimage.label(mask, structure=ndimage.generate_binary_structure(3, rank))[1])


def peer_topology(p: np.ndarray, t: np.ndarray) -> dict[str, float]:
    """The independent values of the TOPOLOGY metrics below; clDice's empty masks by the declared
    policy (1 / 0 / 0; TopCoW's formula gives 0 there), its empty skeletons 0 as TopCoW's."""
    if not (p.any() and t.any()):
        cldice = 1.0 if not (p.any() or t.any()) else 0.0
        cldice_xyz = cldice
    else:
        cldice, cldice_xyz = topcow_cldice(p, t), topcow_cldice(p.T, t.T)
    b0 = abs(scipy_b0(p) - scipy_b0(t))
    assert b0 == abs(int(cc3d.connected_components(p, connectivity=26, return_N=True)[1])
                     - int(cc3d.connected_components(t, connectivity=26, return_N=True)[1]))
    return {"cldice": cldice, "cldice_xyz": cldice_xyz, "betti0_error": float(b0),
            "betti0_error_6": float(abs(scipy_b0(p, 1) - scipy_b0(t, 1)))}


TOPOLOGY = (ClDice(), ClDice(axis_order="xyz", key="cldice_xyz"), BettiError(0, 26),
            BettiError(connectivity=6, key="betti0_error_6"))


def test_cldice_and_betti0_through_the_kind_equal_topcows_definitions():
    """Per label, through the kind's computation on each label's crop: clDice as TopCoW's scorer
    (skimage skeletonize on the whole masks, in either axis order) and the Betti-0 error as
    scipy's and cc3d's component counts (26- and 6-connectivity)."""
    seen = {key: [] for key in peer_topology(*(np.zeros((3, 3, 3), dtype=bool),) * 2)}
    for prediction, truth in vessel_cases():
        result = score_label_maps(prediction, truth, VESSELS, TOPOLOGY, SPACING)
        for value, name in VESSELS.items():
            peer = peer_topology(prediction == value, truth == value)
            for key, expected in peer.items():
                assert result[f"{name}/{key}"] == pytest.approx(expected, rel=1e-12, abs=1e-12), (name, key)
                seen[key].append(expected)
        for key in peer:  # each case's mean over the labels
            assert result[key] == pytest.approx(np.mean([result[f"{n}/{key}"] for n in VESSELS.values()]), rel=1e-12)
    # the data exercise what the metrics distinguish: partial overlaps, errors, the axis order
    assert any(0 < v < 1 for v in seen["cldice"]) and max(seen["betti0_error"]) >= 2
    assert seen["cldice"] != seen["cldice_xyz"]  # Lee's thinning depends on the axis order
    assert seen["betti0_error"] != seen["betti0_error_6"]


def test_an_empty_skeleton_is_the_declared_value_and_undefined_is_null_with_a_note():
    from evaluation.platform.outputs import Undefined

    prediction, truth = vessel_cases()[4]  # the nodule: a 2×2×2 cube against a tube
    assert not skimage_morphology.skeletonize(truth == 3).any() and (prediction == 3).any()
    metrics = (ClDice(skeleton_empty=0.5, key="half"), ClDice(skeleton_empty=None, key="undefined"))
    result = score_label_maps(prediction, truth, VESSELS, metrics, SPACING)
    assert result["nodule/half"] == 0.5
    assert math.isnan(result["nodule/undefined"])
    cls = declared(labels=VESSELS, label_metrics=metrics, ranked_metrics=(RankedMetric("half"),))
    entry = cls.__new__(cls).case_entry(result)
    assert isinstance(entry["nodule"]["undefined"], Undefined)
    assert "a skeleton is empty" in entry["nodule"]["undefined"].reason
    assert entry["nodule"]["half"] == 0.5
    # the mean over labels leaves it out
    assert result["undefined"] == pytest.approx(np.mean([result["basilar/undefined"],
                                                         result["communicating/undefined"]]), rel=1e-12)


TOPOLOGY_DRIVER = '''
import sys
from evaluation import cli
from evaluation.kinds.segmentation import *


class Tiny(Segmentation):
    name = "tiny"
    title = "tiny: the topology metrics of the segmentation kind"
    labels = {labels!r}
    dimensions = (3,)
    label_metrics = (Dice(), ClDice(), BettiError(0, 26))
    ranked_metrics = (RankedMetric("cldice"), RankedMetric("betti0_error"), RankedMetric("dice"))


cli.named_challenge = lambda name: Tiny
sys.exit(cli.main(sys.argv[1:]))
'''


def test_a_run_ranks_cldice_and_the_betti0_error(tmp_path):
    folder = tmp_path / "challenge"
    folder.mkdir()
    (folder / "driver.py").write_text(TOPOLOGY_DRIVER.format(labels=VESSELS))
    cases = vessel_cases()
    spacing_xyz = SPACING[::-1]
    for number, (_, truth) in enumerate(cases):
        write_map(folder / "ground-truth" / f"case-{number}.nii.gz", truth, spacing_xyz)
    write_submission(folder / "input", {f"case-{n}": p for n, (p, _) in enumerate(cases)}, spacing_xyz)
    finished = run(folder, folder / "input", tmp_path / "out")
    assert finished.returncode == 0, finished.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    peers = {f"case-{n}": {name: peer_topology(p == value, t == value) for value, name in VESSELS.items()}
             for n, (p, t) in enumerate(cases)}
    for case_id, per_label in peers.items():
        for name, values in per_label.items():
            for key in ("cldice", "betti0_error"):
                assert metrics["cases"][case_id][name][key] == pytest.approx(values[key], rel=1e-12), (case_id, key)
    for key in ("cldice", "betti0_error"):
        case_means = [np.mean([peers[c][name][key] for name in VESSELS.values()]) for c in sorted(peers)]
        assert metrics["aggregates"][f"{key}_mean"] == pytest.approx(np.mean(case_means), rel=1e-12)
        described = metrics["aggregates"]["communicating"][key]
        assert described["count"] == len(cases)
        assert described["max"] == pytest.approx(max(peers[c]["communicating"][key] for c in peers), rel=1e-12)


@pytest.mark.parametrize("attributes, message", [
    ({"label_metrics": (BettiError(2),)}, "no Betti number 2"),
    ({"label_metrics": (BettiError(2),), "dimensions": (3,)}, None),
    ({"label_metrics": (BettiError(connectivity=26),)}, "connectivity 26"),
    ({"label_metrics": (BettiError(connectivity=26),), "dimensions": (3,)}, None),
    ({"label_metrics": (ClDice(skeleton_empty=None),)}, "skeleton_empty"),
    ({"label_metrics": (ClDice(),), "dimensions": (2, 3, 4)}, "2D and 3D"),
])
def test_a_wrong_topology_declaration_is_refused(attributes, message):
    accepted_or_refused(attributes, message)


def accepted_or_refused(attributes: dict, message: str | None) -> None:
    """The declaration with `attributes` is made (message None) or refused with `message`."""
    if message is None:
        assert declared(**attributes).ranked
        return
    with pytest.raises(TypeError, match=message):
        declared(**attributes)


@pytest.mark.parametrize("make, message", [
    (lambda: BettiError(3), "dimension"),
    (lambda: BettiError(connectivity=18), "connectivity"),
    (lambda: BettiError(truth_empty=1.0), "no empty policy"),
    (lambda: ClDice(axis_order="yx"), "axis_order"),
    (lambda: ClDice(skeleton_empty=math.nan), "finite number"),
])
def test_a_wrong_topology_metric_is_refused(make, message):
    with pytest.raises(TypeError, match=message):
        make()


def test_2d_cldice_and_the_betti1_error_equal_skimage_and_scipy():
    """2D: Zhang's thinning (skimage's skeletonize) for clDice; holes counted as scipy's
    4-connected background components enclosed by the mask for the Betti-1 error (8-connected
    foreground)."""
    def holes(mask):
        background = ~np.pad(mask, 1)
        return int(ndimage.label(background, structure=ndimage.generate_binary_structure(2, 1))[1]) - 1

    shape = (40, 48)
    truth = np.zeros(shape, dtype=np.uint8)
    prediction = np.zeros(shape, dtype=np.uint8)
    truth[5:30, 5:40] = 1
    truth[10:15, 10:15] = 0  # two holes
    truth[18:25, 20:30] = 0
    prediction[6:31, 5:41] = 1
    prediction[10:15, 10:15] = 0  # one hole
    prediction[33:36, 2:40] = 2  # a bar only predicted
    result = score_label_maps(prediction, truth, {1: "ring", 2: "bar"}, (ClDice(), BettiError(1)), (1.0, 1.0))
    p, t = prediction == 1, truth == 1
    assert result["ring/cldice"] == pytest.approx(topcow_cldice(p, t), rel=1e-12)
    assert 0 < result["ring/cldice"] < 1
    assert result["ring/betti1_error"] == abs(holes(p) - holes(t)) == 1
    assert result["bar/cldice"] == 0.0 and result["bar/betti1_error"] == 0.0


# ---- label groups (BraTS's regions, TopCoW's merged vessels) and means over present labels ------

TUMOUR = {1: "necrosis", 2: "edema", 3: "enhancing"}
REGIONS = {"WT": (1, 2, 3), "TC": (1, 3), "ET": (3,)}  # BraTS's whole tumour, tumour core, enhancing tumour


def tumour_cases(shape=SHAPE, seed: int = 1) -> list[tuple[np.ndarray, np.ndarray]]:
    """(prediction, truth) nested tumours: edema around a core of necrosis holding an enhancing
    part. Case 1 predicts part of the necrosis as enhancing (the same tumour core, another
    enhancing tumour: a region's intersection is not its labels'); case 2 has no enhancing part
    in the truth, one predicted; case 3 none in either; case 4 is empty in both maps (no label
    present at all)."""
    rng = np.random.default_rng(seed)
    size = np.array(shape)
    cases = []
    for number in range(5):
        truth = np.zeros(shape, dtype=np.uint8)
        prediction = np.zeros(shape, dtype=np.uint8)
        if number == 4:
            cases.append((prediction, truth))
            continue
        centre = size * 0.5
        for target, shift, scale in ((truth, 0, 1.0), (prediction, rng.integers(-1, 2, len(shape)),
                                                        rng.uniform(0.85, 1.1))):
            c = centre + shift
            target[ball(shape, c, size * 0.3 * scale)] = 2
            target[ball(shape, c, size * 0.2 * scale)] = 1
            if not (number == 3 or (number == 2 and target is truth)):
                target[ball(shape, c + [0, 2, 1][: len(shape)], size * 0.1 * scale)] = 3
        if number == 1:  # half of the predicted necrosis called enhancing
            prediction[(prediction == 1) & (np.indices(shape)[-1] < shape[-1] // 2)] = 3
        cases.append((prediction, truth))
    return cases


def union(label_map: np.ndarray, members) -> np.ndarray:
    return np.isin(label_map, members)


@pytest.mark.parametrize("shape, spacing", [(SHAPE, SPACING), ((48, 40), (0.7, 1.9))], ids=["3d", "2d"])
def test_every_variant_of_a_group_equals_its_peer_on_the_union_masks(shape, spacing):
    """Each group scored as medpy, DeepMind's surface-distance and numpy score its union masks,
    every variant and empty case (ET empty in the truth, in both, everything empty); the labels'
    values beside them unchanged; the mean over groups numpy's."""
    variants = every_variant(len(shape))
    for prediction, truth in tumour_cases(shape):
        alone = score_label_maps(prediction, truth, TUMOUR, variants, spacing)
        result = score_label_maps(prediction, truth, TUMOUR, variants, spacing, groups=REGIONS)
        assert {k: v for k, v in result.items() if k in alone} == alone
        for name, members in REGIONS.items():
            expected = peer_values(union(prediction, members), union(truth, members), spacing, 2.0)
            for key, peer in expected.items():
                rel = 1e-6 if key.endswith("surfels") else 1e-12
                assert result[f"groups/{name}/{key}"] == pytest.approx(peer, rel=rel, abs=1e-12), (name, key)
        for metric in variants:
            per_group = [result[f"groups/{name}/{metric.key}"] for name in REGIONS]
            assert result[f"mean_over_groups/{metric.key}"] == pytest.approx(np.mean(per_group), rel=1e-15)
        groups_only = score_label_maps(prediction, truth, TUMOUR, variants, spacing, groups=REGIONS,
                                       score_labels=False)
        assert groups_only == {k: v for k, v in result.items() if k not in alone}


def test_a_group_tolerance_and_topology_are_the_groups_own():
    """An NSD tolerance per group, and clDice and the Betti-0 error of a merged vessel mask
    (TopCoW's "any vessel" class) as skimage's skeletonize and scipy's components give them on
    the union masks."""
    tolerances = {"basilar": 0.5, "communicating": 1.0, "nodule": 2.0, "vessels": 3.0, "pair": 1.5}
    groups = {"vessels": (1, 2, 3), "pair": (1, 2)}
    metrics = (*TOPOLOGY, NormalizedSurfaceDice(tolerances))
    for prediction, truth in vessel_cases():
        result = score_label_maps(prediction, truth, VESSELS, metrics, SPACING, groups=groups)
        for name, members in groups.items():
            p, t = union(prediction, members), union(truth, members)
            for key, expected in peer_topology(p, t).items():
                assert result[f"groups/{name}/{key}"] == pytest.approx(expected, rel=1e-12, abs=1e-12), (name, key)
            peer = peer_values(p, t, SPACING, tolerances[name])["nsd"]
            assert result[f"groups/{name}/nsd"] == pytest.approx(peer, rel=1e-12)


def test_a_regions_dice_is_not_the_mean_of_its_labels_dice():
    """The pitfall groups exist for: BraTS's tumour core Dice is the Dice of the union masks, not
    the mean of necrosis' and enhancing tumour's Dice (case 1 swaps labels inside the core)."""
    prediction, truth = tumour_cases()[1]
    result = score_label_maps(prediction, truth, TUMOUR, (Dice(),), SPACING, groups=REGIONS)
    labels_mean = np.mean([result["necrosis/dice"], result["enhancing/dice"]])
    core = union(prediction, (1, 3)), union(truth, (1, 3))
    assert result["groups/TC/dice"] == pytest.approx(2 * (core[0] & core[1]).sum() / (core[0].sum() + core[1].sum()),
                                                     rel=1e-12)
    assert result["groups/TC/dice"] > labels_mean + 0.1


GROUPS_DRIVER = '''
import sys
from evaluation import cli
from evaluation.kinds.segmentation import *


class Tiny(Segmentation):
    name = "tiny"
    title = "tiny: label groups of the segmentation kind"
    labels = {labels!r}
{body}

cli.named_challenge = lambda name: Tiny
sys.exit(cli.main(sys.argv[1:]))
'''

BRATS_LIKE = '''
    groups = {"WT": (1, 2, 3), "TC": (1, 3), "ET": (3,)}
    score_labels = False
    label_metrics = (Dice(), Hausdorff(95), NormalizedSurfaceDice({"WT": 1.0, "TC": 2.0, "ET": 3.0}),
                     IoU(both_empty=None))
    ranked_metrics = (RankedMetric("dice", group="WT"), RankedMetric("dice", group="TC"),
                      RankedMetric("dice", group="ET"), RankedMetric("hd95", group="ET", over_cases="median"),
                      RankedMetric("dice", over_labels="present", none_present="skip"),
                      RankedMetric("nsd", over_labels="present", none_present=0.25),
                      RankedMetric("hd95", over_labels="present", none_present=0.0, over_cases="median"))
'''

TOPCOW_LIKE = '''
    groups = {"tumour": (1, 2, 3)}
    label_metrics = (Dice(), Hausdorff(95))
    ranked_metrics = (RankedMetric("dice", group="tumour"), RankedMetric("hd95"),
                      RankedMetric("dice", over_labels="present", none_present="skip"),
                      RankedMetric("hd95", over_labels="present", none_present=0.0))
'''


def group_challenge(folder: Path, body: str, cases) -> Path:
    """A driver declaring `body`, its ground truth (.mha) and a submission of `cases`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "driver.py").write_text(GROUPS_DRIVER.format(labels=TUMOUR, body=body))
    spacing_xyz = SPACING[::-1]
    for number, (_, truth) in enumerate(cases):
        write_map(folder / "ground-truth" / f"case-{number}.mha", truth, spacing_xyz)
    write_submission(folder / "input", {f"case-{n}": p for n, (p, _) in enumerate(cases)}, spacing_xyz)
    return folder


def over_present(values: dict[str, dict[str, float]], present: dict[str, dict[str, bool]], policy, over_cases):
    """pandas: each case's mean over the subjects present in its truth or prediction, a case with
    none taking `policy` (a number, or "skip": dropped), then the mean (median) over cases."""
    pandas = pytest.importorskip("pandas")
    table = pandas.DataFrame([{"case": c, "subject": s, "value": v, "present": present[c][s]}
                              for c, row in values.items() for s, v in row.items()])
    per_case = table[table.present].groupby("case")["value"].mean().reindex(sorted(values))
    per_case = per_case.dropna() if policy == "skip" else per_case.fillna(policy)
    return per_case, getattr(per_case, over_cases)()


def test_a_run_scores_brats_regions_only_with_means_over_present_regions(tmp_path):
    """Regions only (score_labels = False): every group's values per case as medpy and numpy give
    them on the union masks (its own NSD tolerance), pandas' description over cases, the ranked
    regions, and the means over the regions present in each case as pandas computes them (case
    4: no region present, skipped or given the declared value)."""
    pandas = pytest.importorskip("pandas")
    cases = tumour_cases()
    folder = group_challenge(tmp_path / "brats", BRATS_LIKE, cases)
    finished = run(folder, folder / "input", tmp_path / "out")
    assert finished.returncode == 0, finished.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    tolerances = {"WT": 1.0, "TC": 2.0, "ET": 3.0}
    peers = {f"case-{n}": {g: peer_values(union(p, m), union(t, m), SPACING, tolerances[g]) for g, m in REGIONS.items()}
             for n, (p, t) in enumerate(cases)}
    present = {f"case-{n}": {g: bool(union(p, m).any() or union(t, m).any()) for g, m in REGIONS.items()}
               for n, (p, t) in enumerate(cases)}
    for case_id, entry in metrics["cases"].items():
        assert set(entry) == {"groups", "mean_over_groups", "mean_over_present_groups"}  # no label scored
        for group, values in peers[case_id].items():
            for key in ("dice", "hd95", "nsd"):
                assert entry["groups"][group][key] == pytest.approx(values[key], rel=1e-12), (case_id, group, key)
    # an IoU left undefined where a region is in neither map: null, a note, left out of the description
    assert metrics["cases"]["case-3"]["groups"]["ET"]["iou"] is None
    assert "cases.case-3.groups.ET.iou" in metrics["notes"]
    assert metrics["aggregates"]["groups"]["ET"]["iou"]["count"] == 3
    for group in REGIONS:
        for key in ("dice", "hd95", "nsd"):
            described = pandas.Series([peers[c][group][key] for c in sorted(peers)]).describe()
            ours = metrics["aggregates"]["groups"][group][key]
            for theirs, mine in (("mean", "mean"), ("std", "std"), ("min", "min"), ("25%", "25%"),
                                 ("50%", "median"), ("75%", "75%"), ("max", "max"), ("count", "count")):
                assert ours[mine] == pytest.approx(described[theirs], rel=1e-12, abs=1e-12), (group, key, mine)
    aggregates = metrics["aggregates"]
    for group in REGIONS:
        assert aggregates["groups"][group]["dice"]["mean"] == pytest.approx(
            np.mean([peers[c][group]["dice"] for c in sorted(peers)]), rel=1e-12)
    assert aggregates["groups"]["ET"]["hd95"]["median"] == pytest.approx(
        np.median([peers[c]["ET"]["hd95"] for c in sorted(peers)]), rel=1e-12)
    # the means over present regions, against pandas
    for key, policy, over_cases in (("dice", "skip", "mean"), ("nsd", 0.25, "mean"), ("hd95", 0.0, "median")):
        values = {c: {g: peers[c][g][key] for g in REGIONS} for c in peers}
        per_case, expected = over_present(values, present, policy, over_cases)
        assert aggregates["mean_over_present_groups"][key][over_cases] == pytest.approx(expected, rel=1e-12), key
        for case_id in peers:
            ours = metrics["cases"][case_id]["mean_over_present_groups"][key]
            if case_id in per_case.index:
                assert ours == pytest.approx(per_case[case_id], rel=1e-12), (case_id, key)
            else:
                assert ours is None and f"cases.{case_id}.mean_over_present_groups.{key}" in metrics["notes"]
    # the skipped case is not in the description's count; a mean over present regions is not the mean over all
    assert aggregates["mean_over_present_groups"]["dice"]["count"] == 4
    assert aggregates["mean_over_present_groups"]["dice"]["mean"] != pytest.approx(
        aggregates["mean_over_groups"]["dice"]["mean"], rel=1e-3)
    assert metrics["counts"]["none_present"] == {"mean_over_present_groups": 1}
    assert metrics["counts"]["empty_cases"]["groups"]["ET"] == {"both_empty": 2, "truth_empty": 1,
                                                                "prediction_empty": 0}


def test_a_run_scores_labels_and_a_merged_group_beside_them(tmp_path):
    """TopCoW's layout: the labels as before, a merged group beside them under "groups" (its
    keys never a label's), and the mean over the labels present in each case against pandas."""
    cases = tumour_cases()
    folder = group_challenge(tmp_path / "merged", TOPCOW_LIKE, cases)
    finished = run(folder, folder / "input", tmp_path / "out")
    assert finished.returncode == 0, finished.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    labels = {f"case-{n}": {name: peer_values(p == v, t == v, SPACING, 2.0) for v, name in TUMOUR.items()}
              for n, (p, t) in enumerate(cases)}
    merged = {f"case-{n}": peer_values(p > 0, t > 0, SPACING, 2.0) for n, (p, t) in enumerate(cases)}
    present = {f"case-{n}": {name: bool((p == v).any() or (t == v).any()) for v, name in TUMOUR.items()}
               for n, (p, t) in enumerate(cases)}
    for case_id, entry in metrics["cases"].items():
        assert list(entry) == [*TUMOUR.values(), "mean_over_labels", "groups", "mean_over_groups",
                               "mean_over_present_labels"]
        for key in ("dice", "hd95"):
            assert entry["groups"]["tumour"][key] == pytest.approx(merged[case_id][key], rel=1e-12)
            for name in TUMOUR.values():
                assert entry[name][key] == pytest.approx(labels[case_id][name][key], rel=1e-12)
    values = metrics["aggregates"]
    assert values["groups"]["tumour"]["dice"]["mean"] == pytest.approx(
        np.mean([merged[c]["dice"] for c in sorted(merged)]), rel=1e-12)
    assert values["hd95_mean"] == pytest.approx(
        np.mean([np.mean([labels[c][n]["hd95"] for n in TUMOUR.values()]) for c in sorted(labels)]), rel=1e-12)
    for key, policy in (("dice", "skip"), ("hd95", 0.0)):
        _, expected = over_present({c: {n: labels[c][n][key] for n in TUMOUR.values()} for c in labels}, present,
                                   policy, "mean")
        assert values["mean_over_present_labels"][key]["mean"] == pytest.approx(expected, rel=1e-12), key
    assert metrics["counts"]["groups"] == 1
    assert "tumour" not in metrics["counts"]["empty_cases"]  # a group's counts are under "groups"
    assert metrics["counts"]["empty_cases"]["groups"]["tumour"]["both_empty"] == 1


def test_a_skipped_mean_over_cases_with_weights_is_pandas_on_the_repeated_cases():
    """The final ranking's bootstrap rows: a case drawn twice counts twice, a skipped case never;
    a row drawing only skipped cases has no value (NaN)."""
    pandas = pytest.importorskip("pandas")
    cls = declared(labels=dict(TUMOUR), label_metrics=(Dice(),),
                   ranked_metrics=(RankedMetric("dice", over_labels="present", none_present="skip"),
                                   RankedMetric("dice", over_labels="present", none_present="skip", over_cases="median",
                                                title="median")))
    evaluation = cls.__new__(cls)
    results = {}
    for n, (p, t) in enumerate(tumour_cases()):
        results[f"c{n}"] = evaluation.score_case(None, LabelMapPair(t, p, SPACING), None)
    weights = np.array([[2, 1, 0, 1, 0], [0, 0, 0, 0, 3], [1, 1, 1, 1, 1], [0, 3, 1, 0, 2]])
    rows = evaluation.aggregate(results, weights)
    per_case = {f"c{n}": np.mean([peer_values(p == v, t == v, SPACING, 2.0)["dice"] for v in TUMOUR
                                  if (p == v).any() or (t == v).any()]) if p.any() or t.any() else None
                for n, (p, t) in enumerate(tumour_cases())}
    for r, row in enumerate(weights):
        repeated = pandas.Series([per_case[c] for c, w in zip(sorted(per_case), row, strict=True)
                                  for _ in range(w)], dtype=float).dropna()
        for path, expected in (("aggregates.mean_over_present_labels.dice.mean", repeated.mean()),
                               ("aggregates.mean_over_present_labels.dice.median", repeated.median())):
            if repeated.empty:
                assert math.isnan(rows[path][r]), (r, path)
            else:
                assert rows[path][r] == pytest.approx(expected, rel=1e-12), (r, path)


def test_a_metric_undefined_when_both_are_empty_ranks_over_present_labels_only():
    """Dice(both_empty=None) ranked over the labels present: a label in neither map never enters
    that mean, so the declaration is accepted and the value is numpy's over the present labels;
    ranked over every label, or per label, it stays refused (a case would leave it undefined)."""
    cls = declared(labels=dict(TUMOUR), label_metrics=(Dice(both_empty=None),),
                   ranked_metrics=(RankedMetric("dice", over_labels="present", none_present=0.5),))
    evaluation = cls.__new__(cls)
    cases = tumour_cases()
    results = {f"c{n}": evaluation.score_case(None, LabelMapPair(t, p, SPACING), None)
               for n, (p, t) in enumerate(cases)}
    expected = [np.mean([peer_values(p == v, t == v, SPACING, 2.0)["dice"] for v in TUMOUR
                         if (p == v).any() or (t == v).any()]) if p.any() or t.any() else 0.5 for p, t in cases]
    assert any(not ((p == v).any() or (t == v).any()) for p, t in cases for v in TUMOUR)  # a label absent: tested
    value = evaluation.aggregate(results, np.ones((1, len(cases))))["aggregates.mean_over_present_labels.dice.mean"]
    assert value[0] == pytest.approx(np.mean(expected), rel=1e-12)
    for ranked in ((RankedMetric("dice"),), (RankedMetric("dice", label=next(iter(TUMOUR.values()))),)):
        with pytest.raises(TypeError, match="leaves both_empty undefined"):
            declared(labels=dict(TUMOUR), label_metrics=(Dice(both_empty=None),), ranked_metrics=ranked)
    with pytest.raises(TypeError, match="leaves truth_empty undefined"):  # a present label may have an empty truth
        declared(labels=dict(TUMOUR), label_metrics=(Dice(truth_empty=None),),
                 ranked_metrics=(RankedMetric("dice", over_labels="present", none_present=0.5),))

def test_a_metric_undefined_when_both_are_empty_ranked_over_present_labels_runs(tmp_path):
    """Through the command: exit 0, the ranked mean a finite number, a label in neither map null
    with a note among the per-label values."""
    body = '''
    label_metrics = (Dice(both_empty=None),)
    ranked_metrics = (RankedMetric("dice", over_labels="present", none_present="skip"),)
'''
    cases = tumour_cases()
    folder = group_challenge(tmp_path / "present", body, cases)
    finished = run(folder, folder / "input", tmp_path / "out")
    assert finished.returncode == 0, finished.stderr
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert math.isfinite(metrics["aggregates"]["mean_over_present_labels"]["dice"]["mean"])
    absent = [(f"case-{n}", name) for n, (p, t) in enumerate(cases) for v, name in TUMOUR.items()
              if not ((p == v).any() or (t == v).any())]
    assert absent
    for case_id, name in absent:
        assert metrics["cases"][case_id][name]["dice"] is None
        assert f"cases.{case_id}.{name}.dice" in metrics["notes"]

def test_a_test_set_with_nothing_present_cannot_skip_every_case(tmp_path):
    """Every case empty in both maps: the skipped mean over present regions has no value; the
    organizer's test set is at fault: exit 3, one line, no metrics.json."""
    empty = np.zeros(SHAPE, dtype=np.uint8)
    folder = group_challenge(tmp_path / "empty", BRATS_LIKE, [(empty, empty), (empty, empty)])
    finished = run(folder, folder / "input", tmp_path / "out")
    last = finished.stderr.strip().splitlines()[-1]
    assert finished.returncode == 3, finished.stderr
    assert "No case has a group present" in last and "undefined on this test set" in last, last
    assert "Traceback" not in finished.stderr
    assert not (tmp_path / "out" / "metrics.json").exists()


@pytest.mark.parametrize("attributes, message", [
    ({"groups": {"WT": (1, 4)}}, "distinct declared label values"),
    ({"groups": {"WT": ()}}, "distinct declared label values"),
    ({"groups": {"WT": (1, 1)}}, "distinct declared label values"),
    ({"groups": {"liver": (1, 2)}}, "must differ from every scored label"),
    ({"groups": {"liver": (1, 2)}, "score_labels": False}, None),  # the labels are not scored: no clash
    ({"score_labels": False}, "declare groups"),
    ({"groups": {"all": (1, 2, 3)}, "label_metrics": (NormalizedSurfaceDice({"liver": 1.0, "spleen": 1.0,
                                                                               "kidney": 1.0}),)},
     "must name every label and group"),
    ({"groups": {"all": (1, 2, 3)}, "ranked_metrics": (RankedMetric("dice", group="none"),)}, "not one of the groups"),
    ({"ranked_metrics": (RankedMetric("dice", over="groups"),)}, "declare groups"),
    ({"groups": {"all": (1, 2, 3)}, "score_labels": False, "ranked_metrics": (RankedMetric("dice", label="liver"),)},
     "not scored"),
    ({"groups": {"all": (1, 2, 3)}, "score_labels": False, "ranked_metrics": (RankedMetric("dice", over="labels"),)},
     "not scored"),
    ({"ranked_metrics": (RankedMetric("dice", over_labels="present", none_present=1.0),
                         RankedMetric("dice", over_labels="present", none_present="skip", over_cases="median"))},
     "two none_present policies"),
    ({"ranked_metrics": (RankedMetric("dice", over_labels="present", none_present="skip"),),
      "ranking": "case_rank_then_mean"}, "declare a number for none_present"),
    ({"labels": {1: "groups"}}, "is a key of metrics.json"),
    ({"labels": {1: "mean_over_present_labels"}}, "is a key of metrics.json"),
])
def test_a_wrong_group_or_present_declaration_is_refused(attributes, message):
    accepted_or_refused(attributes, message)


@pytest.mark.parametrize("make, message", [
    (lambda: RankedMetric("dice", over_labels="present"), "needs none_present"),
    (lambda: RankedMetric("dice", none_present=1.0), "applies to over_labels=\"present\" only"),
    (lambda: RankedMetric("dice", over_labels="present", none_present=math.inf), "a number or \"skip\""),
    (lambda: RankedMetric("dice", over_labels="some"), "over_labels"),
    (lambda: RankedMetric("dice", label="liver", group="WT"), "not both"),
    (lambda: RankedMetric("dice", group="WT", over_labels="present", none_present=1.0), "takes neither"),
])
def test_a_wrong_ranked_metric_is_refused(make, message):
    with pytest.raises(TypeError, match=message):
        make()


def test_ranked_groups_and_present_means_have_their_paths_titles_and_case_columns():
    cls = declared(groups={"WT": (1, 2, 3)}, score_labels=False, ranking="case_rank_then_mean",
                   ranked_metrics=(RankedMetric("dice", group="WT"), RankedMetric("hd95"),
                                   RankedMetric("nsd", over_labels="present", none_present=1.0)))
    columns = (cls.leaderboards[0].score, *cls.leaderboards[0].extra_columns)
    assert [c.path for c in columns] == ["aggregates.groups.WT.dice.mean", "aggregates.mean_over_groups.hd95.mean",
                                         "aggregates.mean_over_present_groups.nsd.mean"]
    assert [c.title for c in columns] == ["WT Dice, mean over cases", "HD95 (mm), mean over groups and cases",
                                          "NSD at 2 mm, mean over present groups and cases"]
    assert cls.final_rankings[0].case_paths == ("groups.WT.dice", "mean_over_groups.hd95",
                                                "mean_over_present_groups.nsd")
    assert cls.leaderboard_name == "groups_WT_dice_mean"
