"""HECKTOR 2025 Task 2 end to end: the C-index and its bootstrap interval recomputed with
lifelines in a loop on the same draws, the 2022 CSV phase, reproducibility, the case-id hook of
the framework, and every bad input of the spec."""

import json
from pathlib import Path

import numpy as np
import pytest
from lifelines.utils import concordance_index as lifelines_cindex

from evaluation.framework import Evaluation
from evaluation.platform import synthetic
from evaluation.platform.cases import case_id_of_job
from evaluation.platform.locations import strip_extension
from evaluation.platform.predictions import parse_predictions
from tests.hecktor_data import (
    copy_dataset,
    evaluate_with_memory_limit,
    ground_truth_table,
    make_dataset,
    value_outputs,
)

ROOT = Path(__file__).resolve().parent.parent
CHALLENGE = "hecktor2025-task2"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(CHALLENGE, tmp_path_factory.mktemp("hecktor2"), seed=3, cases=60)


def load_arrays(input_dir, ground_truth):
    """(patients, RFS, Relapse, risk) in sorted patient order, read without our code."""
    table, risks = ground_truth_table(ground_truth), value_outputs(input_dir, "rfs.json")
    patients = list(table.index)
    risk = np.array([risks[p] for p in patients])
    return patients, table["RFS"].to_numpy(float), table["Relapse"].to_numpy(int), risk


def lifelines_bootstrap(time, event, risk, seed, repetitions):
    """The obvious loop: resample patients with replacement, lifelines on each resample."""
    draws = np.random.default_rng(seed).integers(0, len(time), size=(repetitions, len(time)))
    values, skipped = [], 0
    for rows in draws:
        try:
            values.append(lifelines_cindex(time[rows], -risk[rows], event[rows]))
        except ZeroDivisionError:  # no comparable pair in this resample
            skipped += 1
    return np.array(values), skipped


def assert_matches_lifelines(metrics, input_dir, ground_truth):
    _, time, event, risk = load_arrays(input_dir, ground_truth)
    settings = metrics["settings"]
    values, skipped = lifelines_bootstrap(time, event, risk, settings["seed"], settings["bootstrap_repetitions"])
    assert metrics["aggregates"]["c_index"] == lifelines_cindex(time, -risk, event)
    assert metrics["aggregates"]["c_index_ci_lower"] == pytest.approx(np.percentile(values, 2.5), abs=1e-14)
    assert metrics["aggregates"]["c_index_ci_upper"] == pytest.approx(np.percentile(values, 97.5), abs=1e-14)
    assert metrics["counts"]["bootstrap_resamples_skipped"] == skipped


def test_cindex_and_interval_equal_lifelines_loop_on_the_same_draws(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    (ground_truth / "config.json").write_text(json.dumps({"bootstrap_repetitions": 300}))
    run = evaluate(CHALLENGE, input_dir, ground_truth, "--seed", 17)
    assert run.code == 0, run.stderr
    assert run.metrics["settings"]["seed"] == 17
    assert_matches_lifelines(run.metrics, input_dir, ground_truth)


def test_bundled_example_matches_lifelines_loop():
    metrics = json.loads((ROOT / "test" / CHALLENGE / "expected_metrics.json").read_text())
    assert_matches_lifelines(metrics, ROOT / "test" / CHALLENGE / "input", ROOT / "ground-truth" / CHALLENGE)


def test_skipped_resamples_are_counted(evaluate, tmp_path):
    # Three patients, one comparable pair: many resamples have none.
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "truth.csv").write_text("PatientID,RFS,Relapse\nA,100,1\nB,200,0\nC,50,0\n")
    (ground_truth / "config.json").write_text(json.dumps({"bootstrap_repetitions": 200}))
    (submission / "predictions.csv").write_text("PatientID,Prediction\nA,0.9\nB,0.1\nC,0.5\n")
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert run.code == 0, run.stderr
    time, event, risk = np.array([100.0, 200, 50]), np.array([1, 0, 0]), np.array([0.9, 0.1, 0.5])
    values, skipped = lifelines_bootstrap(time, event, risk, 2025, 200)
    assert skipped > 0 and run.metrics["counts"]["bootstrap_resamples_skipped"] == skipped
    assert run.metrics["counts"]["comparable_pairs"] == 1  # A before B only: C is censored before A
    assert run.metrics["aggregates"]["c_index_ci_lower"] == pytest.approx(np.percentile(values, 2.5))


def test_same_seed_same_bytes_other_seed_other_interval(dataset, evaluate):
    runs = [evaluate(CHALLENGE, dataset / "input", dataset / "ground-truth", "--seed", s, "--workers", w)
            for s, w in ((4, 1), (4, 2), (5, 1))]
    assert (runs[0].output / "metrics.json").read_bytes() == (runs[1].output / "metrics.json").read_bytes()
    assert runs[0].metrics["aggregates"]["c_index"] == runs[2].metrics["aggregates"]["c_index"]
    assert runs[0].metrics["aggregates"]["c_index_ci_lower"] != runs[2].metrics["aggregates"]["c_index_ci_lower"]


def test_predictions_csv_phase_gives_the_same_numbers(dataset, evaluate, tmp_path):
    patients, _, _, risk = load_arrays(dataset / "input", dataset / "ground-truth")
    submission = tmp_path / "sub"
    submission.mkdir()
    rows = "\n".join(f"{p},{float(r)!r}" for p, r in zip(patients, risk, strict=True))
    (submission / "predictions.csv").write_text("\ufeffPatientID,Prediction\n" + rows + "\n")
    by_jobs = evaluate(CHALLENGE, dataset / "input", dataset / "ground-truth").metrics
    by_file = evaluate(CHALLENGE, submission, dataset / "ground-truth").metrics
    assert by_file["aggregates"] == by_jobs["aggregates"]


def test_unlabelled_patients_error_by_default_or_are_skipped(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    (csv,) = ground_truth.glob("*.csv")
    lines = csv.read_text().splitlines()
    patient = lines[1].split(",")[0]
    lines[1] = f"{patient},,"
    csv.write_text("\n".join(lines) + "\n")
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert run.code == 3 and f"patient {patient} has no RFS, Relapse" in run.last_error_line
    (ground_truth / "config.json").write_text(json.dumps({"unlabelled_patients": "skip"}))
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert run.code == 0, run.stderr
    assert run.metrics["counts"]["unlabelled_patients_skipped"] == 1 and run.metrics["counts"]["patients"] == 59
    _, time, event, risk = load_arrays(dataset / "input", dataset / "ground-truth")
    assert run.metrics["aggregates"]["c_index"] == lifelines_cindex(time[1:], -risk[1:], event[1:])


# ---- bad submissions ------------------------------------------------------------------------


def first_output(input_dir):
    jobs = json.loads((input_dir / "predictions.json").read_text())
    job = min(jobs, key=lambda j: j["inputs"][0]["image"]["name"])
    return job["inputs"][0]["image"]["name"].split("__")[0], input_dir / job["pk"] / "output" / "rfs.json"


@pytest.mark.parametrize("content, shown", [
    ("NaN", "NaN"), ("Infinity", "Infinity"), ("1e999", "Infinity"), ('"0.7"', '"0.7"'), ("true", "true"),
    ("null", "null"), pytest.param("1" + "0" * 399, "an integer of 400 digits", id="400-digits"),
    pytest.param("-" + "9" * 5000, "an integer of 5000 digits", id="minus-5000-digits"),
    pytest.param("1" + "0" * 4999, "an integer of 5000 digits", id="5000-digits"),
    ("[0.7]", "a list of 1 item"), ('{"risk": 0.7}', "an object with 1 key"),
])
def test_bad_risk_values_are_rejected(dataset, evaluate, tmp_path, content, shown):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    patient, path = first_output(input_dir)
    path.write_text(content)
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == (f"Patient {patient}: the output 'rfs' is {shown}; it must be one finite number (a "
                                   f"risk score, higher for an earlier recurrence).")


def test_missing_patient_and_missing_output_are_rejected(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    patient, path = first_output(input_dir)
    path.unlink()
    # A Value output (the platform's Float socket) also carries its value inline: read from there.
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert run.code == 0, run.last_error_line
    # A File output (a socket not stored in the database) has only its file.
    jobs = json.loads((input_dir / "predictions.json").read_text())
    for job in jobs:
        (output,) = job["outputs"]
        assert output["socket"]["super_kind"] == "Value"
        output["socket"]["super_kind"], output["value"] = "File", None
    (input_dir / "predictions.json").write_text(json.dumps(jobs))
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == f"Patient {patient}, output 'rfs': the file rfs.json is missing."
    jobs = json.loads((input_dir / "predictions.json").read_text())
    jobs = [j for j in jobs if not j["inputs"][0]["image"]["name"].startswith(patient + "__")]
    (input_dir / "predictions.json").write_text(json.dumps(jobs))
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert run.last_error_line == (f"The submission does not match the test set: no prediction for 1 patient(s) of the "
                                   f"test set ({patient}).")


@pytest.mark.parametrize("text, expected", [
    ("PatientID,Prediction\n{rows}X-1,nan\n", 'Patient X-1: the Prediction is "nan"; it must be a finite number (a '
     'risk score).'),
    ("PatientID,Prediction\n{rows}X-1,high\n", 'Patient X-1: the Prediction is "high"; it must be a finite number (a '
     'risk score).'),
    ("PatientID,Prediction\n{rows}X-1,1e999\n", 'Patient X-1: the Prediction is "1e999"; it must be a finite number (a '
     'risk score).'),
    pytest.param("PatientID,Prediction\n{rows}X-1," + "9" * 5000 + "\n",
                 'Patient X-1: the Prediction is "' + "9" * 36 + '...; it must be a finite number (a risk score).',
                 id="5000-digits"),
    ("PatientID,Risk\n{rows}", 'The predictions file: predictions.csv has no column \'Prediction\' (columns found: '
                               '"PatientID", "Risk"); expected the columns PatientID, Prediction.'),
    ("PatientID;Prediction\nA-1;0.5\nB-1;0.1\nX-1;0.2\n",
     'The predictions file: predictions.csv has no column \'PatientID\', \'Prediction\' (columns found: '
     '"PatientID;Prediction"); expected the columns PatientID, Prediction. It looks separated by semicolons or tabs; '
     'separate values with commas.'),
    ("PatientID,Prediction\n{rows},0.2\n", "The predictions file: row 4 of predictions.csv has an empty PatientID."),
])
def test_bad_predictions_csv_is_rejected(evaluate, tmp_path, text, expected):
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "truth.csv").write_text("PatientID,RFS,Relapse\nA-1,100,1\nB-1,200,0\nX-1,50,1\n")
    (submission / "predictions.csv").write_text(text.format(rows="A-1,0.5\nB-1,0.1\n"))
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == expected


@pytest.mark.parametrize("text", [
    "\ufeffPatientID,Prediction\r\nA-1,0.5\r\nB-1,0.1\r\nX-1,0.9\r\n",  # BOM and CRLF, as Excel saves
    'PatientID,Prediction\n"A-1","0.5"\n"B-1",0.1\nX-1,"0.9"\n',  # quoted values
    "Note,PatientID,Prediction\nx,A-1, 0.5\ny,B-1,0.1 \n\nz,X-1,9e-1\n",  # other columns, spaces, a blank line
])
def test_predictions_csv_spellings_give_the_same_numbers(evaluate, tmp_path, text):
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "truth.csv").write_text("PatientID,RFS,Relapse\nA-1,100,1\nB-1,200,0\nX-1,50,1\n")
    (submission / "predictions.csv").write_text("PatientID,Prediction\nA-1,0.5\nB-1,0.1\nX-1,0.9\n")
    plain = evaluate(CHALLENGE, submission, ground_truth)
    (submission / "predictions.csv").write_bytes(text.encode("utf-8"))
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert run.code == 0, run.stderr
    assert run.metrics == plain.metrics


def test_predictions_csv_with_far_more_rows_than_patients_is_refused(evaluate, tmp_path):
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "truth.csv").write_text("PatientID,RFS,Relapse\nA-1,100,1\nB-1,200,0\nX-1,50,1\n")
    rows = "".join(f"P{n},0.5\n" for n in range(1000))  # small in bytes, but 1000 rows for 3 patients
    (submission / "predictions.csv").write_text("PatientID,Prediction\n" + rows)
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == "The predictions file: predictions.csv has more than 104 rows."


def test_ten_million_row_predictions_csv_is_refused_by_size_under_a_memory_limit(tmp_path):
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "truth.csv").write_text("PatientID,RFS,Relapse\nA-1,100,1\nB-1,200,0\nX-1,50,1\n")
    with open(submission / "predictions.csv", "w") as handle:
        handle.write("PatientID,Prediction\n")
        for start in range(0, 10_000_000, 100_000):
            handle.write("".join(f"P{n},0.5\n" for n in range(start, start + 100_000)))
    run = evaluate_with_memory_limit(CHALLENGE, submission, ground_truth, tmp_path / "out")
    assert (run.code, run.wrote_metrics) == (1, False), run.stderr
    assert run.last_error_line == "The predictions file: predictions.csv has 122.9 MiB, more than the 1.1 MiB allowed."


@pytest.mark.parametrize("config, line", [
    ({"confidence_level": float("nan")}, "'confidence_level' is NaN; it must be a finite number."),
    ({"confidence_level": 100}, "'confidence_level' is 100.0; it must be below 100."),
    ({"confidence_level": 0.5}, "'confidence_level' is 0.5; it must be at least 1."),
    ({"bootstrap_repetitions": 0}, "'bootstrap_repetitions' is 0; it must be at least 1."),
    ({"seed": -1}, "'seed' is -1; it must be at least 0."),
])
def test_bootstrap_settings_out_of_range_are_setup_errors(evaluate, tmp_path, config, line):
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "truth.csv").write_text("PatientID,RFS,Relapse\nA,100,1\nB,200,0\n")
    (ground_truth / "config.json").write_text(json.dumps(config))
    (submission / "predictions.csv").write_text("PatientID,Prediction\nA,1\nB,2\n")
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert run.last_error_line == ("The evaluation could not run, through no fault of the submission: config.json: "
                                   f"setting {line} (please tell the challenge organizers).")


@pytest.mark.parametrize("truth, message", [
    ("PatientID,RFS\nA,1\n", "truth.csv has no column 'Relapse'"),
    ("PatientID,RFS,Relapse\nA,1,1\nA,2,0\n", "patient A appears twice"),
    ("PatientID,RFS,Relapse\nA,1,2\nB,2,0\n", "Relapse of patient A is neither 0 nor 1."),
    ("PatientID,RFS,Relapse\nA,soon,1\nB,2,0\n", "RFS of patient A is not a finite number."),
    ("PatientID,RFS,Relapse\nA,-1,1\nB,2,0\n", "RFS of patient A is negative."),
    ("PatientID,RFS,Relapse\nA,5,0\nB,2,0\n", "has no comparable pair of patients"),
])
def test_bad_ground_truth_is_a_setup_error(evaluate, tmp_path, truth, message):
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "truth.csv").write_text(truth)
    (submission / "predictions.csv").write_text("PatientID,Prediction\nA,1\nB,2\n")
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert run.code == 3 and message in run.last_error_line, run.last_error_line


# ---- the framework's case-id hook -----------------------------------------------------------


def test_case_id_hook_is_used_and_mapping_still_wins():
    raw = synthetic.job("05c0bc43-0975-437b-8202-b63c47044453",
                        [synthetic.image_input("ct-image", "CHUM-001__CT.nii.gz", "images/ct")], [])
    (job,) = parse_predictions([raw])
    assert case_id_of_job(job, "ct-image", {}) == "CHUM-001__CT"  # default: extension only
    assert case_id_of_job(job, "ct-image", {}, lambda name: "hooked") == "hooked"
    assert case_id_of_job(job, "ct-image", {"CHUM-001__CT": "mapped"}, lambda name: "hooked") == "mapped"
    assert case_id_of_job(job, "ct-image", {"CHUM-001__CT.nii.gz": "full"}, lambda name: "hooked") == "full"
    assert Evaluation.case_id_from_image_name(None, "x.nii.gz") == "x"


@pytest.mark.parametrize("name", ["a.nii.gz", "a.mha", "a.nrrd", "a.tif"])
def test_strip_extension_knows_the_hecktor_extensions(name):
    assert strip_extension(name) == "a"
