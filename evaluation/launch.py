"""Every command's boundary, and the entry points (`python -m evaluation...`, and the console
scripts of pyproject.toml).

Kept free of any dependency (the standard library and evaluation.errors only), so that a Python
without the pinned requirements, or an old one, gets one line saying what to do instead of a
traceback.

A command is a function `main(argv)` that does its work and raises one of evaluation.errors'
errors when it cannot; `run_command` runs it and turns what it raises into the exit code and the
one last stderr line, the same way for every command (see its docstring).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

from evaluation.errors import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_SETUP,
    FILE_LIMIT,
    MEMORY_LIMIT,
    EvaluationError,
    InternalError,
    SubmissionError,
    Terminated,
    UsageError,
    machine_limit,
    one_line,
)

# Import names whose package on PyPI is called otherwise (requirements.txt names packages).
PACKAGE_OF_MODULE = {"sklearn": "scikit-learn", "cv2": "opencv-python-headless", "cc3d": "connected-components-3d",
                     "skimage": "scikit-image", "dateutil": "python-dateutil", "vl_convert": "vl-convert-python",
                     "yaml": "PyYAML", "PIL": "pillow"}

ASK_ORGANIZERS = " (please tell the challenge organizers)."


def missing_dependency(module, requirements="requirements.txt"):
    """Which package is missing, from which interpreter, and what to run."""
    top = module.partition(".")[0]
    package = PACKAGE_OF_MODULE.get(top, top)
    version = ".".join(map(str, sys.version_info[:3]))
    return (f"the package {package} (module {top}) is not installed in {sys.executable} (Python {version}). "
            f"Use the project's environment (./run-example.sh makes .venv/ and installs requirements.txt there), "
            f"or install it into a Python 3.11 environment: pip install -r {requirements}"
            + (" (or pip install .)." if requirements == "requirements.txt" else "."))


def failure(error: BaseException, failed: str | None = None, blamed: str = "the submission",
            requirements: str = "requirements.txt") -> tuple[int, str]:
    """(exit code, last stderr line) of a command that raised `error`; see run_command for
    `failed`, `blamed` and `requirements`. With the defaults: what the evaluation prints for a
    run of one submission (the final ranking lists its excluded submissions so)."""
    could_not = failed if failed is not None else f"The evaluation could not run, through no fault of {blamed}:"
    ask = "" if failed is not None else ASK_ORGANIZERS
    if isinstance(error, Terminated):
        return error.exit_code, one_line(str(error) or "The command was stopped (SIGTERM).")
    if isinstance(error, (SubmissionError, UsageError, InternalError)) or getattr(error, "framed", False):
        return error.exit_code, one_line(error.message)
    if isinstance(error, ModuleNotFoundError) and error.name and error.name.partition(".")[0] != "evaluation":
        return EXIT_SETUP, one_line(f"{could_not} {missing_dependency(error.name, requirements)}")
    if isinstance(error, ModuleNotFoundError):  # our own module missing: a broken install
        return EXIT_INTERNAL, one_line(f"Internal error of the evaluation, not caused by the submission: {error}.")
    if isinstance(error, EvaluationError):
        return error.exit_code, one_line(f"{could_not} {error.message}{ask}")
    limit = machine_limit(error)
    if limit == MEMORY_LIMIT:
        # The platform caps each process's data segment (RLIMIT_DATA) at the machine's memory less
        # 1 GiB: an allocation over it raises here instead of the kernel killing the run (exit 137),
        # and so does a shared library the loader cannot map under it. Decoding is bounded by the
        # ground truth's shapes, so this is the machine, not the submission.
        return EXIT_SETUP, one_line(f"The evaluation ran out of memory under this machine's limit, through no fault "
                                    f"of {blamed} (please tell the challenge organizers: the phase needs a "
                                    f"larger memory limit, or fewer workers).")
    if limit == FILE_LIMIT:
        return EXIT_SETUP, one_line(f"The evaluation ran out of file descriptors under this machine's limit "
                                    f"({_open_files_limit()}), through no fault of {blamed} (please tell the "
                                    f"challenge organizers: the machine needs a higher limit of open files, ulimit "
                                    f"-n).")
    return EXIT_INTERNAL, one_line(f"Internal error of the evaluation, not caused by the submission: "
                                   f"{type(error).__name__}: {error} (please tell the challenge organizers).")


def _open_files_limit() -> str:
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return "no limit of open files here" if soft == resource.RLIM_INFINITY else f"{soft} open files a process"


def run_command(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None, *,
                failed: str | None = None, blamed: str = "the submission",
                requirements: str = "requirements.txt") -> int:
    """Runs a command, `main(argv)`, and returns its exit code: every command's boundary.

    A new command (`python -m evaluation.new`, say) is written as

        def _main(argv):                      # its own logic: parse, work, raise on failure
            args = command_parser(...).parse_args(argv)   # usage errors: UsageError, exit 2
            ...
            return EXIT_OK                    # (or None)

        def main(argv=None):
            return run_command(_main, argv, failed="The challenge could not be written:")

    plus an entry point in this module (`def new(argv=None): return _run("evaluation.new...", argv)`)
    and its `__main__.py` (`sys.exit(new())`).

    What `main` raises becomes the exit code and the one last stderr line (stdout flushed first):
    - SubmissionError (1), UsageError (2), InternalError (4): the error's message;
    - SetupError and any other EvaluationError (3): `failed` and the message; without `failed`
      (the evaluation's own wording, for a command that scores submissions), "The evaluation could
      not run, through no fault of {blamed}: <message> (please tell the challenge organizers)." A
      SetupError subclass with `framed = True` is shown as it is;
    - ModuleNotFoundError of a package not installed (3): which one, and `pip install -r
      {requirements}`, after `failed`;
    - MemoryError, a shared library that cannot be mapped under a memory limit, too many open
      files (3; errors.machine_limit): the machine's limit, not {blamed}'s fault;
    - Terminated (143, SIGTERM): its own line;
    - any other exception (4): "Internal error of the evaluation, ...", its traceback before it
      (the only case with a traceback: an EvaluationError says all there is).
    Every line is one line of at most 1000 characters (errors.one_line). SystemExit (--help,
    --version) and KeyboardInterrupt pass through.
    """
    try:
        code = main(argv)
        return EXIT_OK if code is None else code
    except (Exception, Terminated) as error:
        code, line = failure(error, failed, blamed, requirements)
        if code == EXIT_INTERNAL and not isinstance(error, EvaluationError):
            traceback.print_exc()  # a bug of ours: the full trace for us, one line for everyone
        sys.stdout.flush()
        print(line, file=sys.stderr, flush=True)
        return code


class CommandParser(argparse.ArgumentParser):
    """argparse for every command: a usage error is a UsageError (exit 2, one line through
    run_command), not argparse's usage block."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see --help).")


def whole_number(minimum: int):
    """argparse type: a whole number >= minimum."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is less than {minimum}")
        return value
    return parse


# ---- the entry points ----------------------------------------------------------------------------


def _run(module, argv=None, requirements="requirements.txt"):
    """The command `module.main(argv)`, after the check no command can make itself: the packages
    its module imports (its own boundary takes over once it runs; the Python version is checked
    when the package is imported, evaluation/__init__.py)."""
    # One OpenBLAS thread (an explicit setting wins), set before numpy is imported: numpy starts
    # OpenBLAS's thread pool on import and its threads spin, ~0.1 s of CPU a run, more than our few
    # matrix products gain; cases run in parallel in worker processes instead (benchmarks/startup.py).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

    from evaluation.interruption import own_process

    own_process()

    def main(args):
        # Before the command's modules: OpenBLAS maps its buffers now, or the memory line says it cannot.
        from evaluation.machine import load_numpy

        load_numpy()
        return importlib.import_module(module).main(args)

    return run_command(main, argv, requirements=requirements)


def evaluation(argv=None):
    """python -m evaluation / challenge-evaluation"""
    return _run("evaluation.cli", argv)


def phase(argv=None):
    """python -m evaluation.phase / challenge-evaluation-phase"""
    return _run("evaluation.phase.command", argv)


def leaderboard(argv=None):
    """python -m evaluation.leaderboard / challenge-evaluation-leaderboard"""
    return _run("evaluation.leaderboard.cli", argv, "requirements-leaderboard.txt")


def examples(argv=None):
    """python -m evaluation.examples / challenge-evaluation-examples"""
    return _run("evaluation.examples", argv)


def new(argv=None):
    """python -m evaluation.new / challenge-evaluation-new"""
    return _run("evaluation.new", argv)
