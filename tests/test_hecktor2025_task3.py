"""HECKTOR 2025 Task 3 end to end: balanced accuracy, sensitivity and specificity against
scikit-learn, their bootstrap intervals against a loop of scikit-learn calls on the same draws,
the 2022 CSV phase, and every accepted and rejected form of the HPV status."""

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score, recall_score

from tests.hecktor_data import copy_dataset, ground_truth_table, make_dataset, value_outputs

ROOT = Path(__file__).resolve().parent.parent
CHALLENGE = "hecktor2025-task3"
OUTPUT = "hpv-status.json"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(CHALLENGE, tmp_path_factory.mktemp("hecktor3"), seed=5, cases=30)


def load_arrays(input_dir, ground_truth):
    table, predicted = ground_truth_table(ground_truth), value_outputs(input_dir, OUTPUT)
    patients = list(table.index)
    return patients, table["HPV Status"].to_numpy(int), np.array([int(predicted[p]) for p in patients])


def assert_matches_sklearn(metrics, input_dir, ground_truth):
    _, y_true, y_pred = load_arrays(input_dir, ground_truth)
    aggregates = metrics["aggregates"]
    assert aggregates["balanced_accuracy"] == balanced_accuracy_score(y_true, y_pred)
    assert aggregates["sensitivity"] == recall_score(y_true, y_pred)
    assert aggregates["specificity"] == recall_score(1 - y_true, 1 - y_pred)
    settings = metrics["settings"]
    draws = np.random.default_rng(settings["seed"]).integers(0, len(y_true), size=(settings["bootstrap_repetitions"],
                                                                                    len(y_true)))
    values, skipped = {"balanced_accuracy": [], "sensitivity": [], "specificity": []}, 0
    for n, rows in enumerate(draws):
        t, p = y_true[rows], y_pred[rows]
        if t.all() or not t.any():
            skipped += 1
            continue
        # The resampled data set counted directly (sklearn on the first resamples: it is slow)
        sensitivity = ((t == 1) & (p == 1)).sum() / (t == 1).sum()
        specificity = ((t == 0) & (p == 0)).sum() / (t == 0).sum()
        if n < 50:
            assert (sensitivity + specificity) / 2 == balanced_accuracy_score(t, p)
        values["balanced_accuracy"].append((sensitivity + specificity) / 2)
        values["sensitivity"].append(sensitivity)
        values["specificity"].append(specificity)
    for key, samples in values.items():
        assert aggregates[f"{key}_ci_lower"] == pytest.approx(np.percentile(samples, 2.5), abs=1e-14), key
        assert aggregates[f"{key}_ci_upper"] == pytest.approx(np.percentile(samples, 97.5), abs=1e-14), key
    assert metrics["counts"]["bootstrap_resamples_skipped"] == skipped


def test_metrics_and_intervals_equal_sklearn_loop_on_the_same_draws(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    (ground_truth / "config.json").write_text(json.dumps({"bootstrap_repetitions": 300}))
    run = evaluate(CHALLENGE, input_dir, ground_truth, "--seed", 8)
    assert run.code == 0, run.stderr
    assert_matches_sklearn(run.metrics, input_dir, ground_truth)


def test_bundled_example_matches_sklearn():
    metrics = json.loads((ROOT / "test" / CHALLENGE / "expected_metrics.json").read_text())
    assert_matches_sklearn(metrics, ROOT / "test" / CHALLENGE / "input", ROOT / "ground-truth" / CHALLENGE)


def test_single_class_resamples_are_skipped_and_counted(evaluate, tmp_path):
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "hpv.csv").write_text("PatientID,HPV Status,Center\nA,1,CHUM\nB,0,CHUM\nC,0,MDA\nD,1.0,MDA\n")
    (ground_truth / "config.json").write_text(json.dumps({"bootstrap_repetitions": 200}))
    (submission / "predictions.csv").write_text("PatientID,Prediction\nA,1\nB,true\nC,0\nD,FALSE\n")
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert run.code == 0, run.stderr
    draws = np.random.default_rng(2025).integers(0, 4, size=(200, 4))
    truth = np.array([1, 0, 0, 1])
    expected_skipped = sum(1 for rows in draws if truth[rows].all() or not truth[rows].any())
    assert run.metrics["counts"]["bootstrap_resamples_skipped"] == expected_skipped > 0
    assert run.metrics["aggregates"]["balanced_accuracy"] == balanced_accuracy_score(truth, [1, 1, 0, 0])


def test_numbers_zero_and_one_are_accepted_like_booleans(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    before = evaluate(CHALLENGE, input_dir, ground_truth).metrics
    for path in input_dir.glob(f"*/output/{OUTPUT}"):
        path.write_text("1" if json.loads(path.read_text()) else "0.0")
    after = evaluate(CHALLENGE, input_dir, ground_truth).metrics
    assert after["aggregates"] == before["aggregates"]


def test_reproducible_across_workers(dataset, evaluate):
    runs = [evaluate(CHALLENGE, dataset / "input", dataset / "ground-truth", "--workers", w) for w in (1, 2)]
    assert (runs[0].output / "metrics.json").read_bytes() == (runs[1].output / "metrics.json").read_bytes()


@pytest.mark.parametrize("content, shown", [
    ("0.5", "0.5"), ('"yes"', '"yes"'), ('"true"', '"true"'), ("2", "2"), ("null", "null"),
    ("[true]", "a list of 1 item"), ('{"hpv": true}', "an object with 1 key"), ("NaN", "NaN"),
    pytest.param("1" + "0" * 399, "an integer of 400 digits", id="400-digits"),
    pytest.param("1" + "0" * 4999, "an integer of 5000 digits", id="5000-digits"),
    pytest.param("-" + "9" * 5000, "an integer of 5000 digits", id="minus-5000-digits"),
])
def test_bad_status_is_rejected(dataset, evaluate, tmp_path, content, shown):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    jobs = json.loads((input_dir / "predictions.json").read_text())
    job = min(jobs, key=lambda j: j["inputs"][0]["image"]["name"])
    patient = job["inputs"][0]["image"]["name"].split("__")[0]
    (input_dir / job["pk"] / "output" / OUTPUT).write_text(content)
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == (f"Patient {patient}: the output 'hpv-status' is {shown}; it must be true (HPV "
                                   f"positive) or false (HPV negative), or 1 or 0.")


@pytest.mark.parametrize("value", ["0.5", "yes", ""])
def test_bad_csv_status_is_rejected(evaluate, tmp_path, value):
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "hpv.csv").write_text("PatientID,HPV Status\nA,1\nB,0\n")
    (submission / "predictions.csv").write_text(f"PatientID,Prediction\nA,1\nB,{value}\n")
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == (f"Patient B: the Prediction is {json.dumps(value)}; "
                                   f"it must be 1 (HPV positive) or 0 (HPV negative).")


def test_submission_must_be_one_csv(evaluate, tmp_path):
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "hpv.csv").write_text("PatientID,HPV Status\nA,1\nB,0\n")
    (submission / "a.csv").write_text("PatientID,Prediction\nA,1\nB,0\n")
    (submission / "b.csv").write_text("PatientID,Prediction\nA,1\nB,0\n")
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert run.last_error_line == ("The submission must be one CSV file with the columns PatientID,Prediction; found "
                                   "a.csv, b.csv.")
    (submission / "b.csv").unlink()
    (submission / "a.csv").write_text("PatientID,Prediction\nA,1\nA,0\nB,0\n")
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert run.last_error_line == "The submission does not match the test set: more than one prediction for patient A."


def test_predictions_csv_linked_from_outside_the_input_is_refused(evaluate, tmp_path):
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "hpv.csv").write_text("PatientID,HPV Status\nA,1\nB,0\n")
    (tmp_path / "elsewhere.csv").write_text("PatientID,Prediction\nA,1\nB,0\n")
    (submission / "predictions.csv").symlink_to(tmp_path / "elsewhere.csv")
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == ("Submission file predictions.csv: predictions.csv is a link that leads out of the "
                                   "input folder.")


@pytest.mark.parametrize("truth, message", [
    ("PatientID,HPV Status\nA,1\nB,1\n", "must hold both HPV-positive (1) and HPV-negative (0) patients"),
    ("PatientID,HPV Status\nA,1\nB,positive\n", "HPV Status of patient B is not a finite number."),
    ("PatientID,HPV\nA,1\nB,0\n", "has no column 'HPV Status'"),
])
def test_bad_ground_truth_is_a_setup_error(evaluate, tmp_path, truth, message):
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "hpv.csv").write_text(truth)
    (submission / "predictions.csv").write_text("PatientID,Prediction\nA,1\nB,0\n")
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert run.code == 3 and message in run.last_error_line, run.last_error_line
