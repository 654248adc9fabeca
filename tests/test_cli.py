"""The command line: exit codes, the one-line message participants see, where the ground
truth comes from, --workers, --seed; in process (evaluation.cli.main) and as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation import __version__, cli, examples
from evaluation.challenges.rare26 import Rare26, Rare26Settings
from evaluation.errors import SubmissionError
from evaluation.framework import Evaluation
from evaluation.platform import locations as gc
from evaluation.platform import synthetic
from evaluation.platform.locations import list_submission_files
from evaluation.platform.outputs import value_at_path
from evaluation.reading.json_files import read_json

ROOT = Path(__file__).resolve().parents[1]
REPETITIONS = 20  # a quick bootstrap: these tests are about the command line, not the metric


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def assert_one_sentence(line: str):
    """What the platform shows a participant: a sentence, never a piece of a traceback."""
    assert line and not line[0].isspace()
    assert not line.startswith(("Traceback", "File ", "During handling", "raise "))
    assert line.endswith((".", "...")), line
    assert len(line) <= 1024


@pytest.fixture
def rare26(tmp_path):
    """A small synthetic RARE26 ground truth and submission: (ground truth, input, output)."""
    examples.synthesize("rare26", tmp_path, seed=11, cases=3)
    synthetic.write_json(tmp_path / "ground-truth" / "config.json", {"repetitions": REPETITIONS})
    return tmp_path / "ground-truth", tmp_path / "input", tmp_path / "output"


def stack_files(input_dir: Path) -> dict[str, Path]:
    """{stack id: its likelihoods file}, read from predictions.json as the platform wrote it."""
    files = {}
    for job in json.loads((input_dir / "predictions.json").read_text()):
        stack = job["inputs"][0]["image"]["name"].rsplit(".", 1)[0]
        files[stack] = input_dir / job["pk"] / "output" / job["outputs"][0]["socket"]["relative_path"]
    return dict(sorted(files.items()))


def run_main(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def args(gt, inp, out, *extra):
    return ["rare26", "--ground-truth", gt, "--input", inp, "--output", out, "--workers", "1", *extra]


# ---------------------------------------------------------------------------------------------
# Success


def test_success_writes_metrics(rare26, capsys):
    gt, inp, out = rare26
    code, stdout, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 0
    assert os.listdir(out) == ["metrics.json"]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["settings"] == {**Rare26Settings().as_dict(), "repetitions": REPETITIONS}
    assert metrics["evaluation"] == {"challenge": "rare26", "version": __version__}
    for path in Rare26.ranked_paths:
        assert isinstance(value_at_path(metrics, path), float)
    assert "Wrote" in stdout and stderr == ""  # progress goes to stdout


def test_same_submission_same_bytes_whatever_the_workers(rare26, capsys):
    gt, inp, out = rare26
    assert run_main(capsys, *args(gt, inp, out / "one"))[0] == 0
    assert run_main(capsys, *args(gt, inp, out / "two", "--workers", "2"))[0] == 0
    assert (out / "one" / "metrics.json").read_bytes() == (out / "two" / "metrics.json").read_bytes()


def test_list(capsys):
    code, stdout, _ = run_main(capsys, "--list")
    assert code == 0
    assert f"rare26: {Rare26.title}" in stdout
    for name, default, _ in Rare26Settings.describe():
        assert f"    {name} = {default!r}: " in stdout


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert __version__ in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# An invalid submission: exit 1, no metrics.json, one sentence naming the case


def test_invalid_submission(rare26, capsys):
    gt, inp, out = rare26
    files = stack_files(inp)
    bad = list(files)[1]
    files[bad].write_text("[0.5, 0.5]")
    code, _, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 1
    assert not (out / "metrics.json").exists()
    line = last_line(stderr)
    assert_one_sentence(line)
    assert line.startswith(f"Stack {bad}: expected ") and "found 2" in line
    assert "Traceback" not in stderr


@pytest.mark.parametrize("workers", ["1", "3"])
def test_first_bad_stack_named_whatever_the_workers(rare26, capsys, workers):
    gt, inp, out = rare26
    files = stack_files(inp)
    for path in files.values():
        path.write_text('"no"')
    code, _, stderr = run_main(capsys, *args(gt, inp, out, "--workers", workers))
    assert code == 1
    assert last_line(stderr).startswith(f"Stack {next(iter(files))}: ")


def test_missing_stack(rare26, capsys):
    gt, inp, out = rare26
    files = stack_files(inp)
    first = next(iter(files))
    jobs = [job for job in json.loads((inp / "predictions.json").read_text())
            if not job["inputs"][0]["image"]["name"].startswith(first)]
    synthetic.write_predictions(inp, jobs)
    code, _, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 1 and not (out / "metrics.json").exists()
    line = last_line(stderr)
    assert_one_sentence(line)
    assert f"no prediction for 1 stack(s) of the test set ({first})" in line


def test_long_message_is_cut_to_one_platform_line(rare26, capsys, monkeypatch):
    gt, inp, out = rare26

    def verbose(self, case, ground_truth):
        raise SubmissionError(f"{case.name}: " + "very long explanation " * 200)

    monkeypatch.setattr(Rare26, "load_prediction", verbose)
    code, _, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 1
    line = last_line(stderr)
    assert len(line) <= 1000 and line.endswith("...") and line.startswith("Stack ")


# ---------------------------------------------------------------------------------------------
# Not the submission's fault: exit 3 (setup) and 4 (our bug)


NOT_THEIR_FAULT = "through no fault of the submission"


@pytest.mark.parametrize("config, named", [
    ({"repetitions": 10, "colour": "blue"}, "'colour'"),
    ({"repetitions": True}, "'repetitions'"),
    ({"sampling": "stack"}, "'sampling'"),
    ({"repetitions": 0}, "'repetitions'"),
    ("{not json", "config.json"),
])
def test_bad_config_exit_3(rare26, capsys, config, named):
    gt, inp, out = rare26
    (gt / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    code, _, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 3
    assert not (out / "metrics.json").exists()
    line = last_line(stderr)
    assert_one_sentence(line)
    assert NOT_THEIR_FAULT in line and named in line and "organizers" in line


def test_bad_ground_truth_exit_3(rare26, capsys):
    gt, inp, out = rare26
    (gt / "test_metadata.json").write_text("[")
    code, _, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 3
    assert NOT_THEIR_FAULT in last_line(stderr) and "test_metadata.json" in last_line(stderr)


@pytest.mark.parametrize("what", ["ground-truth", "input"])
def test_missing_folders_exit_3(rare26, capsys, tmp_path, what):
    gt, inp, out = rare26
    if what == "ground-truth":
        gt = tmp_path / "nowhere"
    else:
        inp = tmp_path / "nowhere"
    code, _, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 3
    assert NOT_THEIR_FAULT in last_line(stderr) and "nowhere" in last_line(stderr)


def test_broken_predictions_json_exit_3(rare26, capsys):
    gt, inp, out = rare26
    (inp / "predictions.json").write_text('{"not": "a list"}')
    code, _, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 3 and NOT_THEIR_FAULT in last_line(stderr)


def test_bad_workers_env_exit_3(rare26, capsys, monkeypatch):
    gt, inp, out = rare26
    monkeypatch.setenv("EVALUATION_WORKERS", "lots")
    code, _, stderr = run_main(capsys, "rare26", "--ground-truth", gt, "--input", inp, "--output", out)
    assert code == 3 and "EVALUATION_WORKERS" in last_line(stderr)


def run_with_score_case(rare26, capsys, monkeypatch, workers, score_case):
    """The CLI run with Rare26.score_case replaced: (exit code, last stderr line, stderr); no
    metrics.json is written and the last line is one sentence."""
    gt, inp, out = rare26
    monkeypatch.setattr(Rare26, "score_case", score_case)
    code, _, stderr = run_main(capsys, *args(gt, inp, out, "--workers", workers))
    assert not (out / "metrics.json").exists()
    line = last_line(stderr)
    assert_one_sentence(line)
    return code, line, stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_internal_error_exit_4_traceback_first(rare26, capsys, monkeypatch, workers):
    def broken(self, case, prediction, ground_truth):
        raise KeyError("frame_index")

    code, line, stderr = run_with_score_case(rare26, capsys, monkeypatch, workers, broken)
    assert code == 4
    assert line.startswith("Internal error of the evaluation, not caused by the submission: KeyError")
    assert "frame_index" in line and "organizers" in line
    assert "Traceback (most recent call last)" in stderr
    assert stderr.index("Traceback") < stderr.rindex(line)
    assert "in broken" in stderr  # the trace reaches our code, for the organizers


@pytest.mark.parametrize("workers", ["1", "2"])
def test_out_of_memory_is_the_machine_exit_3(rare26, capsys, monkeypatch, workers):
    """An allocation over the process's memory limit (the platform's RLIMIT_DATA) raises MemoryError:
    exit 3 with one line for the organizers, not a participant's fault and not an internal error."""
    import numpy as np

    def greedy(self, case, prediction, ground_truth):
        return np.ones(1 << 62, dtype=np.uint8)  # a real allocation no machine grants

    code, line, _ = run_with_score_case(rare26, capsys, monkeypatch, workers, greedy)
    assert code == 3
    assert line.startswith("The evaluation ran out of memory") and "no fault of the submission" in line


def test_non_finite_ranked_value_exit_4_and_no_metrics(rare26, capsys, monkeypatch):
    gt, inp, out = rare26
    original = Rare26.score_aggregates

    def nan_score(self, results):
        return {**original(self, results), "Score": float("nan")}

    monkeypatch.setattr(Rare26, "score_aggregates", nan_score)
    code, _, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 4
    assert "Score" in last_line(stderr)
    assert not out.exists() or os.listdir(out) == []


def test_failing_challenge_discovery_exit_4(capsys, monkeypatch):
    def broken(name):  # the challenge's module fails to import
        raise ImportError("cannot import name 'x' from 'evaluation.challenges.new'")

    monkeypatch.setattr(cli, "named_challenge", broken)
    code, _, stderr = run_main(capsys, "rare26")
    assert code == 4
    assert last_line(stderr).startswith("Internal error of the evaluation")
    assert stderr.index("Traceback") < stderr.rindex(last_line(stderr))


# ---------------------------------------------------------------------------------------------
# Choosing the challenge: exit 2 when that fails


def test_unknown_challenge_exit_2(capsys):
    code, _, stderr = run_main(capsys, "rare99")
    assert code == 2
    assert "'rare99'" in last_line(stderr) and "rare26" in last_line(stderr)


def test_no_challenge_exit_2(capsys):
    code, _, stderr = run_main(capsys)
    assert code == 2
    assert "EVALUATION_CHALLENGE" in last_line(stderr) and "rare26" in last_line(stderr)


def test_unknown_challenge_from_env_exit_2(capsys, monkeypatch):
    monkeypatch.setenv("EVALUATION_CHALLENGE", "nope")
    assert run_main(capsys)[0] == 2


def test_bad_option_exit_2(capsys):
    code, _, stderr = run_main(capsys, "rare26", "--workers", "two")
    assert code == 2
    assert stderr.splitlines() == [
        "python -m evaluation: argument --workers: 'two' is not a whole number (see --help).",
    ]


def test_challenge_from_env(rare26, capsys, monkeypatch):
    gt, inp, out = rare26
    monkeypatch.setenv("EVALUATION_CHALLENGE", "rare26")
    code, _, _ = run_main(capsys, "--ground-truth", gt, "--input", inp, "--output", out, "--workers", "1")
    assert code == 0
    assert json.loads((out / "metrics.json").read_text())["evaluation"]["challenge"] == "rare26"


# ---------------------------------------------------------------------------------------------
# Where the ground truth, input and output are by default


@pytest.fixture
def platform(tmp_path, monkeypatch, rare26):
    """The container's fixed folders moved to tmp_path; ground truth not yet placed anywhere."""
    gt, inp, _ = rare26
    places = {name: tmp_path / "container" / name for name in ("uploaded", "baked", "output")}
    monkeypatch.setattr(gc, "UPLOADED_GROUND_TRUTH_DIR", places["uploaded"])
    monkeypatch.setattr(gc, "BAKED_GROUND_TRUTH_DIR", places["baked"])
    monkeypatch.setattr(cli, "INPUT_DIR", inp)
    monkeypatch.setattr(cli, "OUTPUT_DIR", places["output"])
    places["source"] = gt
    return places


def place_ground_truth(source: Path, target: Path, repetitions: int):
    """A copy of the ground truth whose config.json tells which copy was used."""
    target.mkdir(parents=True)
    (target / "test_metadata.json").write_bytes((source / "test_metadata.json").read_bytes())
    synthetic.write_json(target / "config.json", {"repetitions": repetitions})


def used_repetitions(capsys, *extra) -> int:
    code, _, stderr = run_main(capsys, "rare26", "--workers", "1", *extra)
    assert code == 0, stderr
    return json.loads((cli.OUTPUT_DIR / "metrics.json").read_text())["settings"]["repetitions"]


def test_baked_ground_truth_by_default(platform, capsys):
    place_ground_truth(platform["source"], platform["baked"] / "rare26", 11)
    assert used_repetitions(capsys) == 11
    platform["uploaded"].mkdir()  # the phase uploaded nothing: still the baked one
    assert used_repetitions(capsys) == 11


def test_uploaded_ground_truth_wins_when_not_empty(platform, capsys):
    place_ground_truth(platform["source"], platform["baked"] / "rare26", 11)
    place_ground_truth(platform["source"], platform["uploaded"], 12)
    assert used_repetitions(capsys) == 12


def test_uploaded_tarball_with_challenge_folder(platform, capsys):
    place_ground_truth(platform["source"], platform["baked"], 11)
    place_ground_truth(platform["source"], platform["uploaded"] / "rare26", 13)
    assert used_repetitions(capsys) == 13


def test_explicit_ground_truth_wins(platform, capsys, tmp_path):
    place_ground_truth(platform["source"], platform["baked"], 11)
    place_ground_truth(platform["source"], platform["uploaded"], 12)
    place_ground_truth(platform["source"], tmp_path / "mine" / "rare26", 14)
    assert used_repetitions(capsys, "--ground-truth", tmp_path / "mine") == 14
    assert used_repetitions(capsys, "--ground-truth", tmp_path / "mine" / "rare26") == 14


def test_no_ground_truth_anywhere_exit_3(platform, capsys):
    code, _, stderr = run_main(capsys, "rare26")
    assert code == 3
    assert NOT_THEIR_FAULT in last_line(stderr) and str(platform["baked"]) in last_line(stderr)


# ---------------------------------------------------------------------------------------------
# --workers and --seed


@pytest.fixture
def workers_seen(monkeypatch):
    seen = []
    original = cli.evaluate

    def spy(challenge, input_dir, workers=1):
        seen.append(workers)
        return original(challenge, input_dir, workers)

    monkeypatch.setattr(cli, "evaluate", spy)
    return seen


def test_workers_option_and_env(rare26, capsys, monkeypatch, workers_seen):
    gt, inp, out = rare26
    base = ["rare26", "--ground-truth", gt, "--input", inp, "--output", out]
    assert run_main(capsys, *base, "--workers", "3")[0] == 0
    monkeypatch.setenv("EVALUATION_WORKERS", "2")
    assert run_main(capsys, *base)[0] == 0
    assert run_main(capsys, *base, "--workers", "1")[0] == 0  # the option beats the variable
    monkeypatch.delenv("EVALUATION_WORKERS")
    assert run_main(capsys, *base)[0] == 0
    assert workers_seen == [3, 2, 1, len(os.sched_getaffinity(0))]


def test_seed_option_overrides_setting(rare26, capsys):
    gt, inp, out = rare26
    synthetic.write_json(gt / "config.json", {"repetitions": REPETITIONS, "seed": 5})
    results = {}
    for seed in (None, "9", "5"):
        extra = [] if seed is None else ["--seed", seed]
        target = out / str(seed)
        assert run_main(capsys, *args(gt, inp, target, *extra))[0] == 0
        results[seed] = json.loads((target / "metrics.json").read_text())
    assert results[None]["settings"]["seed"] == 5
    assert results["9"]["settings"]["seed"] == 9
    assert results["5"] == results[None]  # the seed is what changes the bootstrap, nothing else
    assert results["9"]["PPV@90RECALL 95% CI Lower Bound"] != results[None]["PPV@90RECALL 95% CI Lower Bound"] \
        or results["9"]["AUROC 95% CI Lower Bound"] != results[None]["AUROC 95% CI Lower Bound"]


class Plain(Evaluation):
    """No settings at all; a predictions-file phase of <case id>.json numbers."""

    name = "plain"
    title = "Plain toy"
    extra_ranked_paths = ("total",)

    def load_ground_truth(self, directory):
        return read_json(self.truth, directory / "truth.json", "truth")

    def file_cases(self, input_dir):
        return [(path.stem, path) for path in list_submission_files(input_dir)]

    def read_file_prediction(self, case, ground_truth):
        return read_json(case.origin, case.source, case.name)

    def score_aggregates(self, results):
        return {"total": float(sum(results.values()))}


def test_seed_ignored_by_a_challenge_without_one(tmp_path, capsys, monkeypatch):
    challenges = {"plain": Plain, "rare26": Rare26}
    monkeypatch.setattr(cli, "challenge_names", lambda: list(challenges))
    monkeypatch.setattr(cli, "named_challenge", challenges.__getitem__)
    synthetic.write_json(tmp_path / "gt" / "truth.json", {"a": 0, "b": 0})
    synthetic.write_json(tmp_path / "input" / "a.json", 1.5)
    synthetic.write_json(tmp_path / "input" / "b.json", 2)
    code, stdout, _ = run_main(capsys, "plain", "--ground-truth", tmp_path / "gt", "--input", tmp_path / "input",
                               "--output", tmp_path / "out", "--seed", "3")
    assert code == 0
    assert "--seed has no effect" in stdout
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["total"] == 3.5 and metrics["settings"] == {}


def test_predictions_file_refused_by_an_algorithm_phase(rare26, capsys):
    gt, inp, out = rare26
    (inp / "predictions.json").rename(inp / "predictions.csv")
    code, _, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 1 and not (out / "metrics.json").exists()
    assert_one_sentence(last_line(stderr))
    assert "predictions.json" in last_line(stderr) and "submit an algorithm" in last_line(stderr)


# ---------------------------------------------------------------------------------------------
# As the platform runs it: a real process


def run_process(*argv, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALUATION_")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "evaluation", *map(str, argv)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_process_success_and_invalid_submission(rare26):
    gt, inp, out = rare26
    done = run_process("--ground-truth", gt, "--input", inp, "--output", out,
                       env_extra={"EVALUATION_CHALLENGE": "rare26", "EVALUATION_WORKERS": "2"})
    assert done.returncode == 0, done.stderr
    assert "2 worker(s)" in done.stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["evaluation"]["challenge"] == "rare26"

    files = stack_files(inp)
    bad = list(files)[-1]
    files[bad].write_text("[0.1, NaN" + ", 0.2" * 400 + "]")
    failed_out = out.parent / "failed-output"
    done = run_process("rare26", "--ground-truth", gt, "--input", inp, "--output", failed_out, "--workers", "2")
    assert done.returncode == 1
    assert not (failed_out / "metrics.json").exists()
    line = last_line(done.stderr)
    assert_one_sentence(line)
    assert line.startswith(f"Stack {bad}: ")
    assert "Traceback" not in done.stderr


def test_process_usage_error():
    done = run_process("no-such-challenge")
    assert done.returncode == 2
    assert "'no-such-challenge'" in last_line(done.stderr)


@pytest.mark.parametrize("option, value, complaint", [
    ("--seed", "-1", "-1 is less than 0"), ("--seed", "x", "'x' is not a whole number"),
    ("--workers", "0", "0 is less than 1"),
])
def test_bad_command_line_numbers_are_usage_errors(rare26, capsys, option, value, complaint):
    gt, inp, out = rare26
    code = cli.main(["rare26", "--ground-truth", str(gt), "--input", str(inp), "--output", str(out), option, value])
    assert code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert complaint in line
    assert not (out / "metrics.json").exists()


# ---------------------------------------------------------------------------------------------
# The output and input folders are checked before any scoring


def test_unwritable_output_exit_3_before_scoring(rare26, capsys, tmp_path):
    gt, inp, _ = rare26
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, stdout, stderr = run_main(capsys, *args(gt, inp, blocker / "out"))
    assert code == 3 and NOT_THEIR_FAULT in last_line(stderr)
    assert "cannot be created" in last_line(stderr) and "Traceback" not in stderr
    assert "Scoring" not in stdout  # refused before the work, not after it


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_output_exit_3(rare26, capsys):
    gt, inp, out = rare26
    out.mkdir()
    out.chmod(0o555)
    code, _, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 3 and "is not writable" in last_line(stderr)


def test_output_that_is_a_file_exit_3(rare26, capsys, tmp_path):
    gt, inp, _ = rare26
    (tmp_path / "out-file").write_text("x")
    code, _, stderr = run_main(capsys, *args(gt, inp, tmp_path / "out-file"))
    assert code == 3 and NOT_THEIR_FAULT in last_line(stderr) and "is not a folder" in last_line(stderr)


def test_input_naming_a_file_says_so(rare26, capsys):
    gt, inp, out = rare26
    code, _, stderr = run_main(capsys, *args(gt, inp / "predictions.json", out))
    assert code == 3 and f"The input {inp / 'predictions.json'} is not a folder." in last_line(stderr)


def test_a_failed_run_leaves_no_old_metrics_json(rare26, capsys):
    gt, inp, out = rare26
    assert run_main(capsys, *args(gt, inp, out))[0] == 0 and (out / "metrics.json").exists()
    next(iter(stack_files(inp).values())).write_text("[")
    code, _, _ = run_main(capsys, *args(gt, inp, out))
    assert code == 1 and not (out / "metrics.json").exists()


def test_case_mapping_to_unknown_ids_is_the_organizers_error(rare26, capsys):
    gt, inp, out = rare26
    synthetic.write_json(gt / "case-mapping.json", {"rare26_stack_0000.tiff": "no-such-stack"})
    code, _, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 3 and not (out / "metrics.json").exists()
    assert last_line(stderr) == ("The evaluation could not run, through no fault of the submission: case-mapping.json "
                                 "maps images to 1 case id(s) that are not in the ground truth (no-such-stack). "
                                 "(please tell the challenge organizers).")


def test_two_jobs_sharing_a_pk_are_refused(rare26, capsys):
    gt, inp, out = rare26
    jobs = json.loads((inp / "predictions.json").read_text())
    jobs[1]["pk"] = jobs[0]["pk"]
    (inp / "predictions.json").write_text(json.dumps(jobs))
    code, _, stderr = run_main(capsys, *args(gt, inp, out))
    assert code == 3 and f"predictions.json lists two jobs with the pk {jobs[0]['pk']}." in last_line(stderr)
