"""The Evaluation base class and its run, with toy challenges declared here (not in
evaluation/challenges/, so the command line never sees them)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from evaluation import __version__, run
from evaluation.challenges import available_challenges
from evaluation.declarations.workload import Workload
from evaluation.errors import EvaluationError, SetupError, SubmissionError, id_list
from evaluation.framework import Evaluation
from evaluation.platform import synthetic
from evaluation.platform.cases import Case
from evaluation.platform.locations import list_submission_files, single_ground_truth_file
from evaluation.platform.outputs import metrics_json, write_metrics
from evaluation.reading.json_files import read_json
from evaluation.run import default_workers, matched_cases
from evaluation.settings import Settings, setting

TOY_INPUT = "toy-image"
TOY_OUTPUT = "toy-value"


def run_evaluate(challenge: Evaluation, input_dir: Path, workers: int = 1) -> dict:
    """The run of one submission, its metrics.json content (the charts left aside)."""
    return run.evaluate(challenge, input_dir, workers)[0]


@dataclass(frozen=True)
class ToySettings(Settings):
    scale: float = setting(1.0, minimum=0.0, doc="multiplies every error")


class Toy(Evaluation):
    """Ground truth: truth.json {case id: number}. A case's prediction: a number, or
    {"value": number, "sleep": seconds} to make that case slow."""

    name = "toy"
    title = "Toy challenge of the tests"
    settings_class = ToySettings
    case_label = "Patient"
    extra_ranked_paths = ("aggregates.mean_error",)
    calls: Path | None = None  # a file recording score_case calls, one line each, across processes

    def load_ground_truth(self, directory):
        path = single_ground_truth_file(directory, ".json")
        return {key: float(value) for key, value in read_json(self.truth, path, "truth").items()}

    def case_input_socket(self):
        return TOY_INPUT

    def read_job_prediction(self, case, ground_truth):
        return self.number(case, case.read_json(TOY_OUTPUT))

    def read_file_prediction(self, case, ground_truth):
        return self.number(case, read_json(case.origin, case.source, case.name))

    @staticmethod
    def number(case, content):
        if isinstance(content, dict):
            time.sleep(content.get("sleep", 0))
            content = content.get("value")
        if isinstance(content, bool) or not isinstance(content, (int, float)):
            raise SubmissionError(f"{case.name}: the value must be a number, found {content!r}.")
        return float(content)

    def score_case(self, case, prediction, ground_truth):
        if self.calls is not None:
            with open(self.calls, "a") as handle:
                handle.write(f"{case.case_id} {os.getpid()}\n")
        return {"error": abs(prediction - ground_truth) * self.settings.scale, "prediction": prediction}

    def score_aggregates(self, results):
        errors = [result["error"] for result in results.values()]
        return {"aggregates": {"mean_error": float(np.mean(errors)), "cases": len(errors)}, "cases": results}


class FileToy(Toy):
    """A predictions-file phase: <case id>.json files, at any depth of the unpacked ZIP."""

    name = "toy-files"

    def file_cases(self, input_dir):
        return [(path.name[: -len(".json")], path) for path in list_submission_files(input_dir)
                if path.name.endswith(".json")]


def make_toy(root: Path, truth: dict, predictions: dict, *, suffix=".nii.gz", seed=0, legacy=False):
    """ground-truth/truth.json and an input/ with one job per prediction, in shuffled order.
    Returns (ground-truth dir, input dir, {case id: job pk})."""
    rng = np.random.default_rng(seed)
    gt, inp = root / "ground-truth", root / "input"
    synthetic.write_json(gt / "truth.json", truth)
    jobs, pks = [], {}
    for case_id, content in predictions.items():
        pk = synthetic.job_pk(rng)
        pks[case_id] = pk
        jobs.append(synthetic.job(pk, [synthetic.image_input(TOY_INPUT, case_id + suffix, "images/toy")],
                                  [synthetic.file_output(TOY_OUTPUT, "toy-value.json")]))
        synthetic.write_output(inp, pk, "toy-value.json", content)
    jobs = [jobs[i] for i in rng.permutation(len(jobs))]
    synthetic.write_predictions(inp, synthetic.legacy_shape(jobs) if legacy else jobs)
    return gt, inp, pks


def truth_and_predictions(n, seed=1):
    rng = np.random.default_rng(seed)
    truth = {f"c{i:02d}": round(float(rng.uniform(0, 10)), 3) for i in range(n)}
    predictions = {c: round(v + float(rng.normal()), 3) for c, v in truth.items()}
    return truth, predictions


def expected_mean_error(truth, predictions, scale=1.0):
    return sum(abs(predictions[c] - truth[c]) * scale for c in truth) / len(truth)


def calls_of(path: Path) -> list[str]:
    return path.read_text().split("\n")[:-1] if path.exists() else []


# ---------------------------------------------------------------------------------------------


def test_toy_challenges_are_not_picked_up():
    challenges = available_challenges()
    assert "toy" not in challenges and "toy-files" not in challenges
    assert "rare26" in challenges  # the scan does find evaluation/challenges/
    assert all(cls.__module__.startswith("evaluation.challenges.") for cls in challenges.values())
    assert list(challenges) == sorted(challenges)


def test_evaluate_scores_every_case(tmp_path):
    truth, predictions = truth_and_predictions(6)
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    metrics = run_evaluate(Toy(gt), inp)
    assert metrics["aggregates"]["mean_error"] == pytest.approx(expected_mean_error(truth, predictions))
    assert metrics["aggregates"]["cases"] == len(truth)
    assert list(metrics["cases"]) == sorted(truth)  # results in case order, whatever the job order
    assert {c: r["prediction"] for c, r in metrics["cases"].items()} == predictions
    assert metrics["settings"] == {"scale": 1.0}
    assert metrics["evaluation"] == {"challenge": "toy", "version": __version__}


def test_cases_sorted_and_matched_to_jobs(tmp_path):
    truth, predictions = truth_and_predictions(5)
    gt, inp, pks = make_toy(tmp_path, truth, predictions)
    cases = matched_cases(Toy(gt), inp)
    assert [c.case_id for c in cases] == sorted(truth)
    assert all(c.job.pk == pks[c.case_id] for c in cases)
    assert all(c.label == "Patient" and c.name == f"Patient {c.case_id}" for c in cases)


@pytest.mark.parametrize("suffix", [".nii.gz", ".mha", ".tif", ""])
def test_legacy_shape_gives_the_same_metrics(tmp_path, suffix):
    truth, predictions = truth_and_predictions(4)
    new = make_toy(tmp_path / "new", truth, predictions, suffix=suffix)
    old = make_toy(tmp_path / "old", truth, predictions, suffix=suffix, legacy=True)
    assert "interface" in json.loads((old[1] / "predictions.json").read_text())[0]["inputs"][0]
    assert metrics_json(run_evaluate(Toy(new[0]), new[1])) == metrics_json(run_evaluate(Toy(old[0]), old[1]))


def test_config_json_settings_are_used_and_echoed(tmp_path):
    truth, predictions = truth_and_predictions(3)
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    synthetic.write_json(gt / "config.json", {"scale": 2})
    metrics = run_evaluate(Toy(gt), inp)
    assert metrics["settings"] == {"scale": 2.0}
    assert metrics["aggregates"]["mean_error"] == pytest.approx(expected_mean_error(truth, predictions, 2.0))
    written = json.loads(write_metrics(tmp_path / "out", metrics, Toy.ranked_paths).read_text())
    assert written["settings"] == {"scale": 2.0}


def test_explicit_settings_override_config_json(tmp_path):
    truth, predictions = truth_and_predictions(2)
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    synthetic.write_json(gt / "config.json", {"scale": 2})
    assert run_evaluate(Toy(gt, ToySettings(scale=3.0)), inp)["settings"] == {"scale": 3.0}


def test_case_mapping_overrides_image_names(tmp_path):
    truth = {"patient-1": 1.0, "patient-2": 2.0}
    gt, inp, _ = make_toy(tmp_path, {}, {"scan_a": 1.5, "scan_b": 2.5}, suffix=".nii.gz")
    synthetic.write_json(gt / "truth.json", truth)
    synthetic.write_json(gt / "case-mapping.json", {"scan_a.nii.gz": "patient-1", "scan_b": "patient-2"})
    metrics = run_evaluate(Toy(gt), inp)
    assert {c: r["prediction"] for c, r in metrics["cases"].items()} == {"patient-1": 1.5, "patient-2": 2.5}


def test_empty_ground_truth_is_a_setup_error(tmp_path):
    synthetic.write_json(tmp_path / "truth.json", {})
    with pytest.raises(SetupError, match="no cases"):
        Toy(tmp_path)


# ---------------------------------------------------------------------------------------------
# Missing, extra and duplicate cases: rejected before any scoring


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    calls = tmp_path / "calls.log"
    monkeypatch.setattr(Toy, "calls", calls)
    return calls


@pytest.mark.parametrize("workers", [1, 2])
def test_missing_case_rejected_before_scoring(tmp_path, recorded, workers):
    truth, predictions = truth_and_predictions(5)
    del predictions["c03"]
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    with pytest.raises(SubmissionError) as error:
        run_evaluate(Toy(gt), inp, workers=workers)
    assert "no prediction for 1 patient(s) of the test set (c03)" in str(error.value)
    assert calls_of(recorded) == []


def test_extra_case_rejected_before_scoring(tmp_path, recorded):
    truth, predictions = truth_and_predictions(3)
    predictions["intruder"] = 1.0
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    with pytest.raises(SubmissionError) as error:
        run_evaluate(Toy(gt), inp, workers=2)
    assert "1 patient(s) not in the test set (intruder)" in str(error.value)
    assert calls_of(recorded) == []


def test_two_jobs_for_one_case_are_the_phases_archive_before_scoring(tmp_path, recorded):
    """The platform runs one job per archive item: a second job for a case (an input image named
    with another extension: the same case id) is the archive's, exit 3, not the submission's."""
    truth, predictions = truth_and_predictions(3)
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    jobs = json.loads((inp / "predictions.json").read_text())
    (first,) = [job["pk"] for job in jobs if job["inputs"][0]["image"]["name"].startswith("c01.")]
    synthetic.write_output(inp, "dup-job", "toy-value.json", 0.0)
    jobs.append(synthetic.job("dup-job", [synthetic.image_input(TOY_INPUT, "c01.mha", "images/toy")],
                              [synthetic.file_output(TOY_OUTPUT, "toy-value.json")]))
    synthetic.write_predictions(inp, jobs)
    with pytest.raises(SetupError) as error:
        run_evaluate(Toy(gt), inp, workers=1)
    assert str(error.value) == (f"predictions.json lists more than one job for patient c01 (c01: jobs {first}, "
                                f"dup-job): the platform runs one job per item of the phase's archive, so the archive "
                                f"holds it more than once.")
    assert calls_of(recorded) == []


def test_all_problems_named_in_one_line(tmp_path, recorded):
    truth = {f"t{i:02d}": 1.0 for i in range(15)}
    predictions = {f"x{i:02d}": 1.0 for i in range(12)}
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    with pytest.raises(SubmissionError) as error:
        run_evaluate(Toy(gt), inp)
    message = str(error.value)
    assert "\n" not in message
    expected_extra = ", ".join(f"x{i:02d}" for i in range(10)) + " and 2 more"
    expected_missing = ", ".join(f"t{i:02d}" for i in range(10)) + " and 5 more"
    assert f"12 patient(s) not in the test set ({expected_extra})" in message
    assert f"no prediction for 15 patient(s) of the test set ({expected_missing})" in message
    assert "t10" not in message and "x10" not in message
    assert calls_of(recorded) == []


def test_empty_predictions_json_names_every_missing_case(tmp_path):
    truth, _predictions = truth_and_predictions(3)
    gt, inp, _ = make_toy(tmp_path, truth, {})
    with pytest.raises(SubmissionError, match=r"no prediction for 3 patient\(s\) of the test set \(c00, c01, c02\)"):
        run_evaluate(Toy(gt), inp)


def test_job_without_the_case_socket(tmp_path, recorded):
    truth, predictions = truth_and_predictions(2)
    gt, inp, _pks = make_toy(tmp_path, truth, predictions)
    jobs = json.loads((inp / "predictions.json").read_text())
    jobs[0]["inputs"][0]["socket"]["slug"] = "other-image"
    synthetic.write_predictions(inp, jobs)
    with pytest.raises(SubmissionError) as error:
        run_evaluate(Toy(gt), inp)
    assert jobs[0]["pk"] in str(error.value) and TOY_INPUT in str(error.value)
    assert calls_of(recorded) == []


# ---------------------------------------------------------------------------------------------
# The process pool


@pytest.mark.parametrize("workers", [2, 3])
def test_results_identical_whatever_the_worker_count(tmp_path, recorded, workers):
    truth, predictions = truth_and_predictions(9, seed=4)
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    evaluation = Toy(gt)
    single = metrics_json(run_evaluate(evaluation, inp, workers=1), Toy.ranked_paths)
    recorded.unlink()
    pooled = metrics_json(run_evaluate(evaluation, inp, workers=workers), Toy.ranked_paths)
    assert pooled == single
    calls = [line.split() for line in calls_of(recorded)]
    assert sorted(case for case, _ in calls) == sorted(truth)  # every case scored exactly once
    # The first case in this process (the libraries it imports are then shared by the workers),
    # every other one in worker processes.
    in_this_process = [case for case, pid in calls if pid == str(os.getpid())]
    assert in_this_process == [min(truth)]


class LightToy(Toy):
    workload = Workload(in_workers=False)


def test_challenge_with_too_little_work_per_case_stays_in_one_process(tmp_path, recorded):
    truth, predictions = truth_and_predictions(9, seed=4)
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    pooled = metrics_json(run_evaluate(LightToy(gt), inp, workers=2), Toy.ranked_paths)
    assert {pid for _, pid in (line.split() for line in calls_of(recorded))} == {str(os.getpid())}
    recorded.unlink()
    assert pooled == metrics_json(run_evaluate(Toy(gt), inp, workers=1), Toy.ranked_paths)


@pytest.mark.parametrize("minimum, expected_processes", [(4, 3), (5, 1)])
def test_workers_only_with_enough_cases_each(tmp_path, recorded, monkeypatch, minimum, expected_processes):
    """9 cases, 2 workers: the first is scored here, the other 8 by 2 workers when each gets at
    least `minimum` of them (8 // 4 = 2), else here too (8 // 5 = 1)."""
    monkeypatch.setattr(Toy, "workload", Workload(min_cases_per_worker=minimum))
    truth, predictions = truth_and_predictions(9, seed=4)
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    pooled = metrics_json(run_evaluate(Toy(gt), inp, workers=2), Toy.ranked_paths)
    pids = {pid for _, pid in (line.split() for line in calls_of(recorded))}
    assert str(os.getpid()) in pids
    assert len(pids) <= expected_processes and (expected_processes == 1) == (len(pids) == 1)
    recorded.unlink()
    assert pooled == metrics_json(run_evaluate(Toy(gt), inp, workers=1), Toy.ranked_paths)


def test_more_workers_than_cases(tmp_path):
    truth, predictions = truth_and_predictions(2)
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    metrics = run_evaluate(Toy(gt), inp, workers=8)
    assert metrics["aggregates"]["mean_error"] == pytest.approx(expected_mean_error(truth, predictions))


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_first_bad_case_in_case_order_is_named(tmp_path, workers):
    truth, predictions = truth_and_predictions(10)
    # c03 is bad and slow, so later bad cases finish (and fail) first in a pool.
    predictions["c03"] = {"value": "three", "sleep": 0.3}
    predictions["c05"] = "five"
    predictions["c08"] = None
    predictions["c09"] = {"value": True}
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    with pytest.raises(SubmissionError) as error:
        run_evaluate(Toy(gt), inp, workers=workers)
    assert str(error.value) == "Patient c03: the value must be a number, found 'three'."


def test_bad_output_file_named_from_a_worker(tmp_path):
    truth, predictions = truth_and_predictions(4)
    gt, inp, pks = make_toy(tmp_path, truth, predictions)
    (inp / pks["c02"] / "output" / "toy-value.json").write_text("{not json")
    (inp / pks["c03"] / "output" / "toy-value.json").unlink()
    with pytest.raises(SubmissionError) as error:
        run_evaluate(Toy(gt), inp, workers=2)
    assert str(error.value).startswith("Patient c02, output 'toy-value': toy-value.json is not valid JSON")


class Exploding(Toy):
    def score_case(self, case, prediction, ground_truth):
        if case.case_id == "c02":
            raise ZeroDivisionError("bug in score_case")
        return super().score_case(case, prediction, ground_truth)


@pytest.mark.parametrize("workers", [1, 2])
def test_internal_errors_keep_their_type_through_the_pool(tmp_path, workers):
    truth, predictions = truth_and_predictions(4)
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    with pytest.raises(ZeroDivisionError, match="bug in score_case"):
        run_evaluate(Exploding(gt), inp, workers=workers)


# ---------------------------------------------------------------------------------------------
# Predictions-file phase


def test_default_refuses_a_predictions_file_phase(tmp_path, recorded):
    truth, _ = truth_and_predictions(2)
    synthetic.write_json(tmp_path / "gt" / "truth.json", truth)
    (tmp_path / "input").mkdir()
    (tmp_path / "input" / "predictions.csv").write_text("case,value\nc00,1\n")
    with pytest.raises(SubmissionError, match=r"no predictions\.json; submit an algorithm"):
        run_evaluate(Toy(tmp_path / "gt"), tmp_path / "input")
    assert calls_of(recorded) == []


def write_files(root: Path, files: dict):
    for relative, content in files.items():
        synthetic.write_json(root / relative, content)


@pytest.mark.parametrize("workers", [1, 2])
def test_predictions_file_phase_with_the_hook(tmp_path, workers):
    truth, predictions = truth_and_predictions(4)
    gt, inp = tmp_path / "gt", tmp_path / "input"
    synthetic.write_json(gt / "truth.json", truth)
    write_files(inp, {"c00.json": predictions["c00"], "sub/c01.json": predictions["c01"],
                      "sub/deeper/c02.json": predictions["c02"], "submission/c03.json": predictions["c03"],
                      "__MACOSX/sub/c01.json": "debris", "sub/.c00.json": "hidden", ".extra.json": 0,
                      "README.txt": "not a case"})
    metrics = run_evaluate(FileToy(gt), inp, workers=workers)
    assert {c: r["prediction"] for c, r in metrics["cases"].items()} == predictions
    assert metrics["evaluation"]["challenge"] == "toy-files"
    cases = matched_cases(FileToy(gt), inp)
    assert [c.job for c in cases] == [None] * 4
    assert cases[1].source.relative_to(os.path.realpath(inp)).as_posix() == "sub/c01.json"


def test_predictions_file_phase_duplicates_and_missing(tmp_path, recorded):
    truth, _predictions = truth_and_predictions(3)
    gt, inp = tmp_path / "gt", tmp_path / "input"
    synthetic.write_json(gt / "truth.json", truth)
    write_files(inp, {"a/c00.json": 1, "b/c00.json": 2, "c01.json": 3})
    with pytest.raises(SubmissionError) as error:
        run_evaluate(FileToy(gt), inp)
    assert "more than one prediction for patient c00" in str(error.value)
    assert "(c02)" in str(error.value)
    assert calls_of(recorded) == []


def test_predictions_file_phase_link_out_is_refused(tmp_path, recorded):
    truth, _predictions = truth_and_predictions(2)
    gt, inp = tmp_path / "gt", tmp_path / "input"
    synthetic.write_json(gt / "truth.json", truth)
    write_files(inp, {"c00.json": 1})
    (inp / "c01.json").symlink_to(gt / "truth.json")  # reading the ground truth through a link
    with pytest.raises(SubmissionError, match=r"c01\.json is a link that leads out of the input folder"):
        run_evaluate(FileToy(gt), inp)
    assert calls_of(recorded) == []


def test_predictions_file_phase_link_inside_keeps_its_name(tmp_path):
    truth, predictions = truth_and_predictions(2)
    gt, inp = tmp_path / "gt", tmp_path / "input"
    synthetic.write_json(gt / "truth.json", truth)
    write_files(inp, {"c00.json": predictions["c00"], "store/blob.txt": predictions["c01"]})
    (inp / "c01.json").symlink_to(inp / "store" / "blob.txt")
    metrics = run_evaluate(FileToy(gt), inp)
    assert metrics["cases"]["c01"]["prediction"] == predictions["c01"]


# ---------------------------------------------------------------------------------------------
# Workers and messages


def test_default_workers(monkeypatch):
    assert default_workers(3) == 3
    assert default_workers(0) == 1
    assert default_workers(-2) == 1
    monkeypatch.setenv("EVALUATION_WORKERS", " 5 ")
    assert default_workers(None) == 5
    assert default_workers(2) == 2  # the command line wins
    monkeypatch.setenv("EVALUATION_WORKERS", "0")
    assert default_workers(None) == 1
    monkeypatch.setenv("EVALUATION_WORKERS", "many")
    with pytest.raises(SetupError, match="EVALUATION_WORKERS must be a whole number, not 'many'"):
        default_workers(None)
    monkeypatch.setenv("EVALUATION_WORKERS", "")
    assert default_workers(None) == len(os.sched_getaffinity(0))
    monkeypatch.delenv("EVALUATION_WORKERS")
    assert default_workers(None) == len(os.sched_getaffinity(0))


def test_workers_env_name_avoids_the_stripped_prefix():
    assert not run.WORKERS_ENV.startswith("GRAND_CHALLENGE_")


def test_errors_are_one_line():
    error = SubmissionError("Case a:\n  expected 3 values,\tfound 2.  ")
    assert error.message == str(error) == "Case a: expected 3 values, found 2."
    assert isinstance(error, EvaluationError)
    assert (SubmissionError.exit_code, SetupError.exit_code, EvaluationError.exit_code) == (1, 3, 4)


def test_id_list():
    assert id_list([]) == ""
    assert id_list(["a", "b"]) == "a, b"
    assert id_list(range(10)) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9"
    assert id_list(range(11)) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 1 more"
    assert id_list([f"c{i}" for i in range(1000)], limit=3) == "c0, c1, c2 and 997 more"


def test_case_name_uses_the_label(tmp_path):
    assert Case(case_id="42", input_dir=tmp_path, label="Slide").name == "Slide 42"


# ---------------------------------------------------------------------------------------------
# A worker that dies, and the platform's own files in a predictions-file phase


class Dying(Toy):
    def score_case(self, case, prediction, ground_truth):
        if case.case_id == "c01" and os.getpid() != self.parent:
            os._exit(137)  # as the kernel's OOM killer would end it
        return super().score_case(case, prediction, ground_truth)


def test_a_killed_worker_is_named_and_not_the_participants_fault(tmp_path):
    truth, predictions = truth_and_predictions(4)
    gt, inp, _ = make_toy(tmp_path, truth, predictions)
    evaluation = Dying(gt)
    evaluation.parent = os.getpid()
    with pytest.raises(SetupError, match=r"^A scoring process died while scoring Patient c01, most likely killed "
                                         r"for exceeding the memory limit\.$"):
        run_evaluate(evaluation, inp, workers=2)


def test_platform_inputs_json_is_not_a_submission_file(tmp_path):
    truth, predictions = truth_and_predictions(2)
    gt, inp = tmp_path / "gt", tmp_path / "input"
    synthetic.write_json(gt / "truth.json", truth)
    write_files(inp, {"c00.json": predictions["c00"], "c01.json": predictions["c01"], "inputs.json": [],
                      "sub/inputs.json": 5})
    names = [p.relative_to(os.path.realpath(inp)).as_posix() for p in list_submission_files(inp)]
    assert names == ["c00.json", "c01.json", "sub/inputs.json"]  # only the platform's top-level file is left out


def _progress_lines(total: int, capsys, seconds_per_case: float = 0.0) -> list[str]:
    ticks = iter(np.arange(total + 2) * seconds_per_case)
    items = [(f"c{n}", n) for n in range(total)]
    passed = list(run.with_progress(iter(items), total, clock=lambda: float(next(ticks))))
    assert passed == items  # progress never changes or drops what is scored
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("Scored ")]


@pytest.mark.parametrize("total", [1, 2, 7, 10, 300, 25_000])
def test_progress_lines_are_few_whatever_the_number_of_cases(total, capsys):
    lines = _progress_lines(total, capsys)
    assert 1 <= len(lines) <= run.PROGRESS_STEPS
    assert lines[-1].startswith(f"Scored {total} of {total} case(s) (100%)")
    percents = [int(line.split("%")[0].rsplit("(", 1)[1]) for line in lines]
    assert percents == sorted(percents)


def test_progress_line_at_least_once_a_minute_on_a_slow_run(capsys):
    # 20 cases of 100 s each: the tenths come every 200 s, so the minute rule adds a line per case.
    lines = _progress_lines(20, capsys, seconds_per_case=100.0)
    assert len(lines) == 20
    assert lines[0] == "Scored 1 of 20 case(s) (5%), 100.0 s."
    # 20 cases of 1 s: only the tenths.
    assert len(_progress_lines(20, capsys, seconds_per_case=1.0)) == 10


def test_a_run_logs_its_progress(tmp_path, capsys):
    gt, inp, _ = make_toy(tmp_path, *truth_and_predictions(30))
    run_evaluate(Toy(gt), inp)
    out = capsys.readouterr().out
    assert "Scored 30 of 30 case(s) (100%)" in out
    assert out.count("Scored ") == 10


def test_ranked_paths_are_derived_from_the_leaderboards_then_the_extra_paths():
    from evaluation.declarations.columns import ABSOLUTE, Column, Leaderboard

    score = Column("Score", "aggregates.score", "desc", error_path="aggregates.score_error")
    shown = Column("Shown", "aggregates.shown", "asc", exclude_from_ranking=True)
    other = Column("Other", "aggregates.other", "asc")

    class Derived(Evaluation):
        leaderboards = (Leaderboard(score=score, decimal_places=3, scoring_method=ABSOLUTE, extra_columns=(shown,)),)
        extra_ranked_paths = ("aggregates.count", "aggregates.shown")

    assert Derived.ranked_paths == ("aggregates.score", "aggregates.score_error", "aggregates.shown",
                                    "aggregates.count")

    class Inherits(Derived):  # a subclass's own leaderboards are derived again
        leaderboards = (Leaderboard(score=other, decimal_places=3, scoring_method=ABSOLUTE),)

    assert Inherits.ranked_paths == ("aggregates.other", "aggregates.count", "aggregates.shown")

    class Nullable(Derived):  # a leaderboard's value metrics.json may leave null: not guaranteed
        nullable_paths = ("aggregates.shown",)

    assert Nullable.ranked_paths == ("aggregates.score", "aggregates.score_error", "aggregates.count")

    with pytest.raises(TypeError, match="ranked_paths is derived from the leaderboards"):
        type("ByHand", (Derived,), {"ranked_paths": ("aggregates.score",)})
