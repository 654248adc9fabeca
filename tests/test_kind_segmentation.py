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
