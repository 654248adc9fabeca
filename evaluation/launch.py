"""The entry points (`python -m evaluation`, and the console scripts of pyproject.toml), kept free
of any dependency so that a Python without the pinned requirements, or an old one, gets one line
saying what to do instead of a traceback."""

import importlib
import os
import sys

EXIT_SETUP = 3  # as evaluation.errors.EXIT_SETUP, which cannot be imported before the check
MINIMUM_PYTHON = (3, 11)

# Import names whose package on PyPI is called otherwise (requirements.txt names packages).
PACKAGE_OF_MODULE = {"sklearn": "scikit-learn", "cv2": "opencv-python-headless", "cc3d": "connected-components-3d",
                     "skimage": "scikit-image", "dateutil": "python-dateutil", "vl_convert": "vl-convert-python",
                     "yaml": "PyYAML"}


def missing_dependency(module, requirements="requirements.txt"):
    """Which package is missing, from which interpreter, and what to run."""
    top = module.partition(".")[0]
    package = PACKAGE_OF_MODULE.get(top, top)
    version = ".".join(map(str, sys.version_info[:3]))
    return (f"the package {package} (module {top}) is not installed in {sys.executable} (Python {version}). "
            f"Use the project's environment (./run-example.sh makes .venv/ and installs requirements.txt there), "
            f"or install it into a Python 3.11 environment: pip install -r {requirements}"
            + (" (or pip install .)." if requirements == "requirements.txt" else "."))


def _run(module, argv=None, requirements="requirements.txt"):
    if sys.version_info < MINIMUM_PYTHON:
        print(f"The evaluation needs Python {'.'.join(map(str, MINIMUM_PYTHON))} or newer (the image runs 3.14), "
              f"but {sys.executable} is Python {sys.version.split()[0]}.", file=sys.stderr)
        return EXIT_SETUP
    # One OpenBLAS thread (an explicit setting wins), set before numpy is imported: numpy starts
    # OpenBLAS's thread pool on import and its threads spin, ~0.1 s of CPU a run, more than our few
    # matrix products gain; cases run in parallel in worker processes instead (benchmarks/startup.py).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:  # the command's own imports, and those it makes later (challenge modules, examples)
        return importlib.import_module(module).main(argv)
    except ModuleNotFoundError as error:
        if not error.name or error.name.partition(".")[0] == "evaluation":
            raise  # our own module missing: a broken install, shown in full
        print(f"The evaluation could not run, through no fault of the submission: "
              f"{missing_dependency(error.name, requirements)}", file=sys.stderr)
        return EXIT_SETUP


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
