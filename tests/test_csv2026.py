"""CSV 2026 end to end: both submission kinds recomputed independently (h5py/SimpleITK/tifffile
reading, brute-force NSD, scikit-learn F1, the seed text's time formula), the timing rules,
settings, reproducibility, and every bad input of csv2026.md."""

import json
import math
import re
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import SimpleITK as sitk
import tifffile
from sklearn.metrics import f1_score

from evaluation.challenges.csv2026 import Csv2026, time_score
from evaluation.challenges.csv2026.examples import write_dataset
from evaluation.declarations.workload import Workload
from tests.test_surface import reference_nsd

ROOT = Path(__file__).resolve().parent.parent
PAIRS = [(v, s) for v in ("long", "trans") for s in ("vessel", "plaque")]
LONG_IN, LONG_OUT, TRANS_OUT, RISK = ("longitudinal-carotid-ultrasound", "longitudinal-carotid-segmentation",
                                      "transverse-carotid-segmentation", "plaque-risk")


@pytest.fixture(scope="module")
def algorithm_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("csv_algorithm")
    write_dataset(root, seed=3, cases=9, phase="algorithm")
    return root


@pytest.fixture(scope="module")
def file_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("csv_file")
    write_dataset(root, seed=4, cases=9, phase="file")
    return root


def copy_data(data, tmp_path):
    shutil.copytree(data, tmp_path / "data")
    return tmp_path / "data" / "input", tmp_path / "data" / "ground-truth"


# ---- an independent reading and scoring of a submission --------------------------------------


def decode(array, plaque_index=1):
    """(vessel, plaque) from raw 0/128/255 or indices 0/1/2 (plaque = plaque_index)."""
    values = set(np.unique(array).tolist())
    if values <= {0, 128, 255}:
        return array == 255, array == 128
    assert values <= {0, 1, 2}, values
    return array == 3 - plaque_index, array == plaque_index


def read_truth(ground_truth):
    truth = {}
    for path in sorted(ground_truth.glob("*_label.h5")):
        with h5py.File(path, "r") as f:
            truth[path.name[:-len("_label.h5")]] = (
                {"long": decode(f["long_mask"][:]), "trans": decode(f["trans_mask"][:])},
                int(np.asarray(f["cls"][()]).item()))
    return truth


def read_file_submission(input_dir, plaque_index=1):
    predictions = {}
    for path in input_dir.rglob("*_pred.h5"):
        with h5py.File(path, "r") as f:
            masks = {view: decode(f[f"{view}_mask"][:] if f"{view}_mask" in f else f[f"pred_{view}"][:], plaque_index)
                     for view in ("long", "trans")}
            if "cls" in f:
                risk = int(np.asarray(f["cls"][()]).item())
            elif "cls_pred" in f:
                risk = int(np.asarray(f["cls_pred"][()]).item())
            else:
                risk = int(float(np.asarray(f["cls_prob"][()]).item()) >= 0.5)
        predictions[path.name[:-len("_pred.h5")]] = (masks, risk)
    return predictions


def iso_seconds(text):
    match = re.fullmatch(r"P(\d+)DT(\d+)H(\d+)M([\d.]+)S", text)
    days, hours, minutes, seconds = match.groups()
    return int(days) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def read_algorithm_submission(input_dir):
    predictions, seconds = {}, 0.0
    for job in json.loads((input_dir / "predictions.json").read_text()):
        inputs = {v["socket"]["slug"]: v for v in job["inputs"]}
        outputs = {v["socket"]["slug"]: v for v in job["outputs"]}
        case_id = inputs[LONG_IN]["image"]["name"].removesuffix(".mha")
        masks = {}
        for view, slug in (("long", LONG_OUT), ("trans", TRANS_OUT)):
            (path,) = (input_dir / job["pk"] / "output" / outputs[slug]["socket"]["relative_path"]).iterdir()
            array = (tifffile.imread(path) if path.suffix == ".tif"
                     else sitk.GetArrayFromImage(sitk.ReadImage(str(path))))
            masks[view] = decode(array)
        value = json.loads((input_dir / job["pk"] / "output" / "plaque-risk.json").read_text())
        predictions[case_id] = (masks, int(value >= 0.5))
        seconds += iso_seconds(job["exec_duration"])
    return predictions, seconds


def reference_metrics(truth, predictions, tolerance=3.0, seconds=None, baseline=None):
    ids = sorted(truth)
    y_true = [truth[c][1] for c in ids]
    y_pred = [predictions[c][1] for c in ids]
    expected = {"macro_f1": f1_score(y_true, y_pred, average="macro")}
    expected["f1_low_risk"], expected["f1_high_risk"] = f1_score(y_true, y_pred, average=None, labels=[0, 1])
    s = {}
    for view, structure in PAIRS:
        k = 0 if structure == "vessel" else 1
        dsc, nsd = [], []
        for c in ids:
            p, g = predictions[c][0][view][k], truth[c][0][view][k]
            total = p.sum() + g.sum()
            dsc.append(1.0 if total == 0 else 2 * (p & g).sum() / total)
            nsd.append(reference_nsd(p, g, tolerance))
        expected[f"{view}_{structure}_dsc"], expected[f"{view}_{structure}_nsd"] = np.mean(dsc), np.mean(nsd)
        s[view, structure] = (np.mean(dsc) + np.mean(nsd)) / 2
        expected[f"{view}_{structure}_score"] = 100 * s[view, structure]
    expected["score_cls"] = 100 * expected["macro_f1"]
    expected["score_seg"] = 100 * 0.5 * sum(0.4 * s[v, "vessel"] + 0.6 * s[v, "plaque"] for v in ("long", "trans"))
    expected["score_without_time"] = (0.4 * expected["score_cls"] + 0.4 * expected["score_seg"]) / 0.8
    if seconds is not None:
        # The seed text's form: min-max normalisation of the negated, clipped time.
        t_min, t_max = 2 / 3 * baseline, 2 * baseline
        t_user = t_min if seconds <= t_min else t_max if seconds >= t_max else seconds
        expected["score_time"] = ((-t_user) - (-t_max)) / ((-t_min) - (-t_max)) * 100
        expected["score_total"] = (0.4 * expected["score_cls"] + 0.4 * expected["score_seg"]
                                   + 0.2 * expected["score_time"])
        expected["processing_time_seconds"] = seconds
    return expected


def assert_aggregates(metrics, expected):
    for key, value in expected.items():
        assert metrics["aggregates"][key] == pytest.approx(value, abs=1e-12), key
    for path in Csv2026.ranked_paths:
        value = metrics
        for part in path.split("."):
            value = value[part]
        assert isinstance(value, float) and math.isfinite(value), path


def check_algorithm_example(input_dir, ground_truth, metrics):
    predictions, seconds = read_algorithm_submission(input_dir)
    baseline = json.loads((ground_truth / "config.json").read_text())["baseline_time_seconds"]
    assert metrics["aggregates"]["baseline_time_seconds"] == baseline
    assert_aggregates(metrics, reference_metrics(read_truth(ground_truth), predictions, seconds=seconds,
                                                 baseline=baseline))


def test_algorithm_phase_equals_the_independent_computation(algorithm_data, evaluate):
    run = evaluate("csv2026", algorithm_data / "input", algorithm_data / "ground-truth")
    assert run.code == 0, run.stderr
    check_algorithm_example(algorithm_data / "input", algorithm_data / "ground-truth", run.metrics)
    assert run.metrics["timing"] == {"source": "sum of the jobs' exec_duration", "jobs": 9}
    assert "notes" not in run.metrics


def test_expected_metrics_of_the_bundled_example_match_the_independent_computation():
    expected = json.loads((ROOT / "test" / "csv2026" / "expected_metrics.json").read_text())
    check_algorithm_example(ROOT / "test" / "csv2026" / "input", ROOT / "ground-truth" / "csv2026", expected)


@pytest.mark.parametrize("tolerance", [3, 1, 2.5])
def test_file_phase_equals_the_independent_computation(file_data, evaluate, tmp_path, tolerance):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    (ground_truth / "config.json").write_text(json.dumps({"nsd_tolerance_px": tolerance}))
    run = evaluate("csv2026", input_dir, ground_truth)
    assert run.code == 0, run.stderr
    metrics = run.metrics
    assert_aggregates(metrics, reference_metrics(read_truth(ground_truth), read_file_submission(input_dir), tolerance))
    aggregates = metrics["aggregates"]
    assert aggregates["score_total"] is None and aggregates["score_time"] is None
    assert aggregates["processing_time_seconds"] is None and aggregates["baseline_time_seconds"] is None
    assert metrics["notes"]["aggregates.score_total"] == ("no timing information (a predictions-file submission "
                                                          "carries no processing time); rank on "
                                                          "aggregates.score_without_time")
    assert metrics["notes"]["aggregates.baseline_time_seconds"] == "config.json sets no baseline_time_seconds"
    assert metrics["settings"]["nsd_tolerance_px"] == tolerance


def test_every_dataset_name_and_encoding_is_exercised(file_data):
    keys, encodings = set(), set()
    for path in (file_data / "input").rglob("*_pred.h5"):
        with h5py.File(path, "r") as f:
            keys |= set(f)
            encodings |= {"raw" if set(np.unique(f[k][:]).tolist()) & {128, 255} else "index"
                          for k in f if "mask" in k or "pred_" in k}
    assert keys == {"long_mask", "trans_mask", "pred_long", "pred_trans", "cls", "cls_pred", "cls_prob"}
    assert encodings == {"raw", "index"}
    assert {p.parent.name for p in (file_data / "input").rglob("*_pred.h5")} == {"preds", "more"}


def test_the_other_index_convention_is_a_setting(file_data, evaluate, tmp_path):
    """Indices written the other way (1 vessel, 2 plaque) with plaque_index 2 score as the originals."""
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    before = evaluate("csv2026", input_dir, ground_truth).metrics
    for path in input_dir.rglob("*_pred.h5"):
        with h5py.File(path, "r+") as f:
            for key in [k for k in f if "mask" in k or "pred_" in k]:
                data = f[key][:]
                if set(np.unique(data).tolist()) <= {0, 1, 2}:
                    swapped = np.where(data == 1, 2, np.where(data == 2, 1, 0)).astype(np.uint8)
                    del f[key]
                    f.create_dataset(key, data=swapped)
    (ground_truth / "config.json").write_text(json.dumps({"plaque_index": 2, "baseline_time_seconds": 45.0}))
    after = evaluate("csv2026", input_dir, ground_truth).metrics
    assert after["aggregates"] == before["aggregates"]
    (ground_truth / "config.json").write_text("{}")
    assert evaluate("csv2026", input_dir, ground_truth).metrics["aggregates"] != before["aggregates"]


def test_same_input_same_bytes_with_one_or_two_workers(algorithm_data, file_data, evaluate, monkeypatch):
    monkeypatch.setattr(Csv2026, "workload", Workload(min_cases_per_worker=1))  # the pool, even for these few cases
    for data in (algorithm_data, file_data):
        runs = [evaluate("csv2026", data / "input", data / "ground-truth", "--workers", w) for w in (1, 2)]
        assert (runs[0].output / "metrics.json").read_bytes() == (runs[1].output / "metrics.json").read_bytes()


# ---- the rules one by one ----------------------------------------------------------------------


def test_time_score_clips_at_two_thirds_and_twice_the_baseline():
    assert time_score(10, 30) == 100.0  # 10 <= 20 = 2B/3
    assert time_score(20, 30) == 100.0
    assert time_score(60, 30) == 0.0
    assert time_score(600, 30) == 0.0
    assert time_score(40, 30) == pytest.approx(50.0)  # halfway between 20 and 60
    assert time_score(30, 30) == pytest.approx(75.0)


def write_case(ground_truth, input_dir, case_id, truth_long, truth_trans, pred_long, pred_trans, cls=0, pred_cls=0):
    with h5py.File(ground_truth / f"{case_id}_label.h5", "w") as f:
        f["long_mask"], f["trans_mask"], f["cls"] = truth_long, truth_trans, np.uint8(cls)
    with h5py.File(input_dir / f"{case_id}_pred.h5", "w") as f:
        f["long_mask"], f["trans_mask"], f["cls"] = pred_long, pred_trans, np.uint8(pred_cls)


def test_vessel_and_plaque_are_exclusive_labels_and_empty_masks_follow_the_rules(evaluate, tmp_path):
    """Vessel is the 255 pixels only (plaque inside it is not vessel); both masks empty score
    1, one empty 0 (DSC and NSD)."""
    ground_truth, input_dir = tmp_path / "gt", tmp_path / "in"
    ground_truth.mkdir(), input_dir.mkdir()
    truth = np.zeros((40, 50), dtype=np.uint8)
    truth[10:30, 5:45] = 255
    truth[10:16, 20:30] = 128
    no_plaque = np.where(truth == 128, 255, truth).astype(np.uint8)  # plaque painted as vessel
    # Case 0001: long perfect; trans has no plaque in the truth and none predicted.
    write_case(ground_truth, input_dir, "0001", truth, no_plaque, truth, no_plaque, cls=0, pred_cls=0)
    # Case 0002: long predicts the plaque as vessel; trans truth has no plaque, prediction has one.
    write_case(ground_truth, input_dir, "0002", truth, no_plaque, no_plaque, truth, cls=1, pred_cls=1)
    metrics = evaluate("csv2026", input_dir, ground_truth).metrics["aggregates"]
    vessel, plaque = (truth == 255).sum(), (truth == 128).sum()
    assert metrics["long_vessel_dsc"] == pytest.approx((1 + 2 * vessel / (vessel + vessel + plaque)) / 2)
    assert metrics["long_plaque_dsc"] == pytest.approx((1 + 0) / 2)
    assert metrics["long_plaque_nsd"] == pytest.approx((1 + 0) / 2)
    assert metrics["trans_plaque_dsc"] == pytest.approx((1 + 0) / 2)  # both empty, then truth empty
    assert metrics["trans_plaque_nsd"] == pytest.approx((1 + 0) / 2)
    assert metrics["macro_f1"] == 1.0


def test_case_ids_are_strings(evaluate, tmp_path):
    ground_truth, input_dir = tmp_path / "gt", tmp_path / "in"
    ground_truth.mkdir(), input_dir.mkdir()
    mask = np.zeros((20, 20), dtype=np.uint8)
    mask[5:15, 5:15] = 255
    write_case(ground_truth, input_dir, "0048", mask, mask, mask, mask, cls=0, pred_cls=0)
    write_case(ground_truth, input_dir, "48", mask, mask, mask, mask, cls=1, pred_cls=1)
    run = evaluate("csv2026", input_dir, ground_truth)
    assert run.code == 0, run.stderr
    assert run.metrics["counts"] == {"cases": 2, "predicted_high_risk": 1}
    (input_dir / "48_pred.h5").unlink()
    run = evaluate("csv2026", input_dir, ground_truth)
    assert run.last_error_line == ("The submission does not match the test set: "
                                   "no prediction for 1 case(s) of the test set (48).")


# ---- timing ----------------------------------------------------------------------------------


def rewrite_jobs(input_dir, change):
    path = input_dir / "predictions.json"
    jobs = json.loads(path.read_text())
    jobs = [change(n, job) for n, job in enumerate(jobs)]
    path.write_text(json.dumps(jobs))


def test_older_predictions_json_times_the_span_from_first_start_to_last_completion(algorithm_data, evaluate, tmp_path):
    input_dir, ground_truth = copy_data(algorithm_data, tmp_path)

    def legacy(n, job):
        for value in job["inputs"] + job["outputs"]:
            value["interface"] = value.pop("socket")
        del job["exec_duration"], job["invoke_duration"]
        job["started_at"] = f"2024-11-29T10:{10 + n:02d}:00.500000Z"  # a job a minute, 20 s each
        job["completed_at"] = f"2024-11-29T10:{10 + n:02d}:20.500000+00:00"
        return job

    rewrite_jobs(input_dir, legacy)
    run = evaluate("csv2026", input_dir, ground_truth)
    assert run.code == 0, run.stderr
    span = 8 * 60 + 20.0  # 10:10:00.5 to 10:18:20.5
    baseline = json.loads((ground_truth / "config.json").read_text())["baseline_time_seconds"]
    aggregates = run.metrics["aggregates"]
    assert aggregates["processing_time_seconds"] == span
    assert aggregates["score_time"] == pytest.approx(time_score(span, baseline))
    assert run.metrics["timing"]["source"] == "span from the earliest started_at to the latest completed_at"


def test_jobs_without_timing_give_null_time_scores_with_a_note(algorithm_data, evaluate, tmp_path):
    input_dir, ground_truth = copy_data(algorithm_data, tmp_path)
    rewrite_jobs(input_dir, lambda n, job: {**job, "exec_duration": None} if n == 2 else job)
    run = evaluate("csv2026", input_dir, ground_truth)
    assert run.code == 0, run.stderr
    assert run.metrics["aggregates"]["score_total"] is None
    assert run.metrics["notes"]["aggregates.score_time"].startswith(
        "no timing information (not every job carries exec_duration, nor started_at and completed_at)")
    assert isinstance(run.metrics["aggregates"]["score_without_time"], float)


def test_timing_without_a_baseline_is_the_organizers_error(algorithm_data, evaluate, tmp_path):
    input_dir, ground_truth = copy_data(algorithm_data, tmp_path)
    (ground_truth / "config.json").write_text(json.dumps({"nsd_tolerance_px": 3}))
    run = evaluate("csv2026", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert ("config.json sets no baseline_time_seconds, which the time score of this algorithm phase needs (the "
            "submission's jobs carry their processing time).") in run.last_error_line


@pytest.mark.parametrize("config, message", [
    ({"baseline_time_seconds": 0}, "setting 'baseline_time_seconds' is 0.0; it must be above 0."),
    ({"baseline_time_seconds": -5}, "setting 'baseline_time_seconds' is -5.0; it must be above 0."),
    ({"baseline_time_seconds": "60"}, "setting 'baseline_time_seconds' must be a number, not text."),
    ({"nsd_tolerance_px": -1}, "setting 'nsd_tolerance_px' is -1.0; it must be at least 0."),
    ({"plaque_index": 0}, "setting 'plaque_index' is 0; it must be one of 1, 2."),
])
def test_bad_settings(file_data, evaluate, tmp_path, config, message):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    (ground_truth / "config.json").write_text(json.dumps(config))
    run = evaluate("csv2026", input_dir, ground_truth)
    assert run.code == 3 and message in run.last_error_line


def test_null_baseline_is_allowed_in_config(file_data, evaluate, tmp_path):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    (ground_truth / "config.json").write_text(json.dumps({"baseline_time_seconds": None}))
    assert evaluate("csv2026", input_dir, ground_truth).code == 0


# ---- bad ground truth --------------------------------------------------------------------------


def first_label(ground_truth):
    return sorted(ground_truth.glob("*_label.h5"))[0]


@pytest.mark.parametrize("mutate, message", [
    (lambda f: f.__setitem__("cls", 2) if not f.__delitem__("cls") else None, "Ground truth 0001_label.h5: cls is 2; "
     "it must be 0 (low risk) or 1 (high risk)."),
    (lambda f: f.__delitem__("trans_mask"), "Ground truth 0001_label.h5 has no 2D dataset trans_mask."),
])
def test_bad_ground_truth_files(file_data, evaluate, tmp_path, mutate, message):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    with h5py.File(first_label(ground_truth), "r+") as f:
        mutate(f)
    run = evaluate("csv2026", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert message in run.last_error_line


def test_ground_truth_mask_values_and_single_class(file_data, evaluate, tmp_path):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    with h5py.File(first_label(ground_truth), "r+") as f:
        data = f["long_mask"][:]
        data[0, 0] = 1
        del f["long_mask"]
        f["long_mask"] = data
    run = evaluate("csv2026", input_dir, ground_truth)
    assert run.code == 3
    assert ("Ground truth 0001_label.h5, long_mask: values 0, 1, 128, 255; the labels are 0, 128 (plaque) and 255 "
            "(vessel).") in run.last_error_line
    input_dir, ground_truth = copy_data(file_data, tmp_path / "single-class")
    for path in ground_truth.glob("*_label.h5"):
        with h5py.File(path, "r+") as f:
            del f["cls"]
            f["cls"] = np.uint8(0)
    run = evaluate("csv2026", input_dir, ground_truth)
    assert run.code == 3 and "must hold both low-risk and high-risk cases" in run.last_error_line


# ---- bad submissions: predictions-file phase ---------------------------------------------------


def pred_file(input_dir, case_id="0001"):
    (path,) = input_dir.rglob(f"{case_id}_pred.h5")
    return path


def replace_dataset(path, key, data):
    with h5py.File(path, "r+") as f:
        if key in f:
            del f[key]
        if data is not None:
            f[key] = data


@pytest.mark.parametrize("key, data, message", [
    ("long_mask", np.zeros((96, 127), np.uint8), "Case 0001, longitudinal mask: long_mask in 0001_pred.h5: shape "
     "96x127, expected 96x128 as in the ground truth."),
    ("long_mask", np.zeros((1, 96, 128), np.uint8), "Case 0001, longitudinal mask: long_mask in 0001_pred.h5: shape "
     "1x96x128, expected 96x128 as in the ground truth."),
    ("trans_mask", np.full((96, 128), 3, np.uint8), "Case 0001, transverse mask: values 3; a mask holds either raw "
     "labels (0, 128 plaque, 255 vessel) or class indices (0, 1 plaque, 2 vessel)."),
    ("trans_mask", np.arange(96 * 128).reshape(96, 128) % 256, "Case 0001, transverse mask: values 0, 1, 2, 3, 4, 5, "
     "6, 7 and 248 more; a mask holds either raw labels (0, 128 plaque, 255 vessel) or class indices (0, 1 plaque, 2 "
     "vessel)."),
    ("trans_mask", np.tile(np.array([0, 2, 128], np.uint8), 4096).reshape(96, 128), "Case 0001, transverse mask: "
     "values 0, 2, 128; a mask holds either raw labels (0, 128 plaque, 255 vessel) or class indices (0, 1 plaque, 2 "
     "vessel)."),
    ("trans_mask", np.full((96, 128), np.nan, np.float32), "Case 0001, transverse mask: values NaN; a mask holds "
     "either raw labels (0, 128 plaque, 255 vessel) or class indices (0, 1 plaque, 2 vessel)."),
    ("trans_mask", np.full((96, 128), b"x"), "Case 0001, transverse mask: trans_mask in 0001_pred.h5 holds text; "
     "numbers are expected."),
    ("long_mask", None, "Case 0001, longitudinal mask: 0001_pred.h5 has no dataset long_mask or pred_long (datasets "
     "found: cls, trans_mask)."),
    ("pred_trans", np.zeros((96, 128), np.uint8), "Case 0001, transverse mask: 0001_pred.h5 holds both trans_mask and "
     "pred_trans; keep one."),
    ("cls", None, "Case 0001: 0001_pred.h5 has no class (dataset cls, cls_pred or cls_prob; datasets found: long_mask, "
     "trans_mask)."),
    ("cls", 0.7, "Case 0001, class: cls in 0001_pred.h5 is 0.7; it must be 0 (low risk) or 1 (high risk) (a "
     "probability goes in cls_prob)."),
    ("cls", 2, "Case 0001, class: cls in 0001_pred.h5 is 2; it must be 0 (low risk) or 1 (high risk) (a probability "
     "goes in cls_prob)."),
    ("cls", np.array([0, 1]), "Case 0001, class: cls in 0001_pred.h5 must hold one value, found 2 (shape 2)."),
    ("cls", b"high", "Case 0001, class: cls in 0001_pred.h5 holds text; numbers are expected."),
])
def test_bad_h5_predictions_are_rejected(file_data, evaluate, tmp_path, key, data, message):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    path = pred_file(input_dir)  # 0001: long_mask, trans_mask and cls
    replace_dataset(path, key, data)
    run = evaluate("csv2026", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False), run.stderr
    assert run.last_error_line == message


@pytest.mark.parametrize("value, message", [
    (1.5, "is 1.5; it must be a probability between 0 and 1."),
    (np.nan, "is NaN; it must be a probability between 0 and 1."),
    (-0.25, "is -0.25; it must be a probability between 0 and 1."),
])
def test_bad_probabilities_are_rejected(file_data, evaluate, tmp_path, value, message):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    path = pred_file(input_dir, "0003")  # 0003: long_mask, trans_mask and cls_prob
    replace_dataset(path, "cls_prob", np.float64(value))
    run = evaluate("csv2026", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == "Case 0003, class: cls_prob in 0003_pred.h5 " + message


def test_bad_files_and_case_sets_are_rejected(file_data, evaluate, tmp_path):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    pred_file(input_dir, "0002").write_bytes(b"not hdf5")
    run = evaluate("csv2026", input_dir, ground_truth)
    assert (run.code, run.last_error_line) == (1, "Case 0002: 0002_pred.h5 is not a readable HDF5 file.")
    pred_file(input_dir, "0002").unlink()
    run = evaluate("csv2026", input_dir, ground_truth)
    assert run.last_error_line == ("The submission does not match the test set: "
                                   "no prediction for 1 case(s) of the test set (0002).")
    shutil.copy(pred_file(input_dir, "0001"), input_dir / "0001_pred.h5")
    shutil.copy(pred_file(input_dir, "0003"), input_dir / "0999_pred.h5")
    run = evaluate("csv2026", input_dir, ground_truth)
    assert run.last_error_line == ("The submission does not match the test set: "
                                   "more than one prediction for case 0001; 1 case(s) not in the test set (0999); "
                                   "no prediction for 1 case(s) of the test set (0002).")
    assert not run.wrote_metrics
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "sub" / "0001.h5").write_bytes(b"")
    run = evaluate("csv2026", empty, ground_truth)
    assert (run.code, run.last_error_line) == (
        1, "The submission holds no <case>_pred.h5 file (e.g. 0048_pred.h5) and no predictions.json.")


# ---- bad submissions: algorithm phase ----------------------------------------------------------


def first_job(input_dir):
    jobs = json.loads((input_dir / "predictions.json").read_text())
    job = min(jobs, key=lambda j: next(v["image"]["name"] for v in j["inputs"] if v["socket"]["slug"] == LONG_IN))
    return job["pk"], {o["socket"]["slug"]: input_dir / job["pk"] / "output" / o["socket"]["relative_path"]
                       for o in job["outputs"]}


def only_file(folder):
    (path,) = folder.iterdir()
    return path


def write_mha(path, array):
    path.unlink()
    sitk.WriteImage(sitk.GetImageFromArray(array), str(path.with_suffix(".mha")))


def test_a_2d_mask_stored_as_one_slice_is_accepted(algorithm_data, evaluate, tmp_path):
    input_dir, ground_truth = copy_data(algorithm_data, tmp_path)
    before = evaluate("csv2026", input_dir, ground_truth).metrics
    _, outputs = first_job(input_dir)
    path = only_file(outputs[LONG_OUT])
    array = tifffile.imread(path) if path.suffix == ".tif" else sitk.GetArrayFromImage(sitk.ReadImage(str(path)))
    write_mha(path, array[None])
    after = evaluate("csv2026", input_dir, ground_truth).metrics
    assert after["aggregates"] == before["aggregates"]


@pytest.mark.parametrize("change, message", [
    ("short", "Case 0001, longitudinal mask: shape 96x100, expected 96x128 as in the ground truth."),
    ("stray", "Case 0001, transverse mask: values 0, 9, 128, 255; a mask holds either raw labels (0, 128 plaque, 255 "
     "vessel) or class indices (0, 1 plaque, 2 vessel)."),
    ("no-image", "Case 0001: the image output 'transverse-carotid-segmentation' must hold exactly one .mha, .tif or "
     ".tiff file; found 0."),
    ("not-image", "Case 0001, transverse mask: "),
    ("risk-text", "Case 0001, output 'plaque-risk': found \"high\"; expected 0, 1, true, false or a probability of "
     "high risk between 0 and 1."),
    ("risk-big", "Case 0001, output 'plaque-risk': found 2; expected 0, 1, true, false or a probability of high risk "
     "between 0 and 1."),
    ("risk-null", "Case 0001, output 'plaque-risk': found null; expected 0, 1, true, false or a probability of high "
     "risk between 0 and 1."),
    ("risk-missing", "Case 0001, output 'plaque-risk': the file plaque-risk.json is missing."),
])
def test_bad_algorithm_outputs_are_rejected(algorithm_data, evaluate, tmp_path, change, message):
    input_dir, ground_truth = copy_data(algorithm_data, tmp_path)
    _, outputs = first_job(input_dir)
    if change == "short":
        write_mha(only_file(outputs[LONG_OUT]), np.zeros((96, 100), np.uint8))
    elif change == "stray":
        write_mha(only_file(outputs[TRANS_OUT]), np.tile(np.array([0, 9, 128, 255], np.uint8), 3072).reshape(96, 128))
    elif change == "no-image":
        only_file(outputs[TRANS_OUT]).unlink()
    elif change == "not-image":
        only_file(outputs[TRANS_OUT]).write_bytes(b"garbage")
    elif change.startswith("risk-") and change != "risk-missing":
        outputs[RISK].write_text({"risk-text": '"high"', "risk-big": "2", "risk-null": "null"}[change])
    else:
        outputs[RISK].unlink()
    run = evaluate("csv2026", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False), run.stderr
    assert run.last_error_line.startswith(message)


def test_a_missing_job_is_a_missing_case(algorithm_data, evaluate, tmp_path):
    input_dir, ground_truth = copy_data(algorithm_data, tmp_path)
    pk, _ = first_job(input_dir)
    rewrite_jobs(input_dir, lambda n, job: job)
    jobs = [job for job in json.loads((input_dir / "predictions.json").read_text()) if job["pk"] != pk]
    (input_dir / "predictions.json").write_text(json.dumps(jobs))
    run = evaluate("csv2026", input_dir, ground_truth)
    assert (run.code, run.last_error_line) == (
        1, "The submission does not match the test set: no prediction for 1 case(s) of the test set (0001).")
