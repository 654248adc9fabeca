"""Evaluation containers for grand-challenge.org challenges.

`python -m evaluation --list` names the challenges; `evaluation.cli` is the entry point,
`evaluation.platform` the platform contract, `evaluation.framework` the base class a
challenge subclasses, `evaluation.challenges` one module per challenge.
"""

import sys

__version__ = "0.1.0"
MINIMUM_PYTHON = (3, 11)

# Every command (python -m evaluation...) imports this package first: an older Python stops here
# with one line, before it reads a module written for 3.11 (Python 3.6 cannot even parse their
# `from __future__ import annotations`). Keep this file free of newer syntax.
if sys.version_info < MINIMUM_PYTHON:
    print("The evaluation needs Python {} or newer (the image runs 3.14), but {} is Python {}.".format(
        ".".join(map(str, MINIMUM_PYTHON)), sys.executable, sys.version.split()[0]), file=sys.stderr)
    raise SystemExit(3)  # EXIT_SETUP: the environment, not the submission
