"""Every command shares one boundary (evaluation.launch.run_command): the same exit codes and one
last stderr line for the same kind of failure, checked here for each command in a real process.

A new command adds itself to COMMANDS: its module, arguments that are a usage error, and
arguments naming an unknown challenge.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.challenges import challenge_names
from evaluation.errors import (
    EXIT_INTERNAL,
    EXIT_SETUP,
    EXIT_SUBMISSION,
    EXIT_TERMINATED,
    EXIT_USAGE,
    InternalError,
    SetupError,
    SubmissionError,
    Terminated,
    UsageError,
)
from evaluation.launch import run_command

ROOT = Path(__file__).resolve().parent.parent

# module: (a usage error, an unknown challenge); {tmp} is a fresh folder of the test's.
COMMANDS = {
    "evaluation": (["rare26", "--workers", "two"], ["rare99", "--output", "{tmp}/out"]),
    "evaluation.phase": (["rare26", "--no-such-option"], ["rare99"]),
    "evaluation.examples": (["rare26", "--out", "{tmp}/out", "--seed", "-1"], ["rare99", "--ground-truth",
                                                                                "ground-truth/rare26", "--output",
                                                                                "{tmp}/out"]),
    "evaluation.leaderboard": (["rare26", "test/rare26/leaderboard/team-a", "--output", "{tmp}/out", "--alpha", "2"],
                               ["rare99", "test/rare26/leaderboard/team-a", "--output", "{tmp}/out"]),
    "evaluation.new": (["acme2099"], None),  # no --template; it names a new challenge, never an unknown one
}


def run(module: str, arguments: list[str], tmp_path: Path, package: Path = ROOT) -> subprocess.CompletedProcess:
    """python -m MODULE in the folder `package` (which holds the evaluation package it runs)."""
    argv = [argument.format(tmp=tmp_path) for argument in arguments]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package)}
    return subprocess.run([sys.executable, "-m", module, *argv], cwd=package, env=env, capture_output=True, text=True,
                          timeout=300)


def one_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@pytest.mark.parametrize("module", sorted(COMMANDS))
def test_a_usage_error_is_exit_2_in_one_line(module, tmp_path):
    done = run(module, COMMANDS[module][0], tmp_path)
    assert done.returncode == EXIT_USAGE, done.stderr
    line = one_line(done)
    assert line.startswith(f"python -m {module}: ") and line.endswith(" (see --help).")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("module, arguments", [*((module, unknown) for module, (_, unknown) in sorted(COMMANDS.items())
                                                 if unknown is not None),
                                               ("evaluation.examples", ["rare99", "--out", "{tmp}/out"])])
def test_an_unknown_challenge_is_exit_2_naming_the_known_ones(module, arguments, tmp_path):
    done = run(module, arguments, tmp_path)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert one_line(done) == f"Unknown challenge 'rare99'; known challenges: {', '.join(challenge_names())}."
    assert not (tmp_path / "out").exists()


# evaluation.new imports no module of the scoring itself; its generated challenge runs in a
# process of its own, whose failure is exit 4 with its own line (tests/test_new.py).
@pytest.mark.parametrize("module", sorted(set(COMMANDS) - {"evaluation.new"}))
def test_a_broken_install_is_our_bug_exit_4_with_its_traceback_first(module, tmp_path):
    """A copy of the package without one of its own modules (a broken install): exit 4, the
    traceback for us, then one line for everyone."""
    package = tmp_path / "package"
    shutil.copytree(ROOT / "evaluation", package / "evaluation", ignore=shutil.ignore_patterns("__pycache__"))
    (package / "evaluation" / "platform" / "locations.py").unlink()
    arguments = ["rare26", "--ground-truth", str(ROOT / "ground-truth" / "rare26"), "--output", "{tmp}/out"]
    if module == "evaluation":
        arguments += ["--input", str(ROOT / "test" / "rare26" / "input")]
    elif module == "evaluation.phase":
        arguments = arguments[:3]
    elif module == "evaluation.leaderboard":
        arguments.insert(1, str(ROOT / "test" / "rare26" / "leaderboard" / "team-a"))
    done = run(module, arguments, tmp_path, package)
    assert done.returncode == EXIT_INTERNAL, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):", done.stderr
    assert lines[-1] == ("Internal error of the evaluation, not caused by the submission: No module named "
                         "'evaluation.platform.locations'.")
    assert not (tmp_path / "out" / "metrics.json").exists()


# ---- the boundary itself, in this process ------------------------------------------------------


def raising(error: BaseException):
    def main(argv):
        raise error
    return main


@pytest.mark.parametrize("error, code, line", [
    (SubmissionError("Case 1: no  file."), EXIT_SUBMISSION, "Case 1: no file."),
    (UsageError("prog: bad\nargument."), EXIT_USAGE, "prog: bad argument."),
    (SetupError("config.json is not JSON."), EXIT_SETUP, "The evaluation could not run, through no fault of the "
                                                         "submission: config.json is not JSON. (please tell the "
                                                         "challenge organizers)."),
    (InternalError("The generated example is wrong."), EXIT_INTERNAL, "The generated example is wrong."),
    (Terminated("Stopped."), EXIT_TERMINATED, "Stopped."),
    (MemoryError(), EXIT_SETUP, "The evaluation ran out of memory under this machine's limit, through no fault of "
                                "the submission (please tell the challenge organizers: the phase needs a larger "
                                "memory limit, or fewer workers)."),
    (ModuleNotFoundError("No module named 'nosuchpackage'", name="nosuchpackage"), EXIT_SETUP, None),
])
def test_each_error_is_its_exit_code_and_one_line(error, code, line, capsys):
    assert run_command(raising(error), []) == code
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    if line is not None:
        assert captured.err == line + "\n"
    else:
        assert "the package nosuchpackage (module nosuchpackage) is not installed" in captured.err


def test_a_command_names_its_own_failure_and_whose_fault_it_is_not(capsys):
    assert run_command(raising(SetupError("no ground truth.")), [], failed="The phase settings could not be made:") == 3
    assert capsys.readouterr().err == "The phase settings could not be made: no ground truth.\n"
    assert run_command(raising(SetupError("no ground truth.")), [], blamed="the submissions") == 3
    assert capsys.readouterr().err == ("The evaluation could not run, through no fault of the submissions: no ground "
                                       "truth. (please tell the challenge organizers).\n")


def test_an_unexpected_exception_is_our_bug_with_its_traceback_before_the_line(capsys):
    assert run_command(raising(KeyError("x")), []) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and err.splitlines()[-1] == (
        "Internal error of the evaluation, not caused by the submission: KeyError: 'x' (please tell the challenge "
        "organizers).")


def test_the_last_line_is_at_most_1000_characters(capsys):
    assert run_command(raising(SubmissionError("x" * 5000)), []) == EXIT_SUBMISSION
    assert len(capsys.readouterr().err.rstrip("\n")) == 1000


def test_a_return_value_is_the_exit_code():
    assert run_command(lambda argv: None, []) == 0
    assert run_command(lambda argv: len(argv), ["a", "b"]) == 2
