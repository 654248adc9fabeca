"""One module per challenge, found without importing the others.

A challenge module declares Evaluation subclasses whose class body sets `name` to a string
literal (`name = "rare26"`). A run needs one challenge, and importing a challenge module imports
what it scores with, so the command line does not import every module to find the one it runs:
`challenge_names()` reads the modules' source (a few milliseconds) and
`challenge_class(name)` imports only the module that declares `name`. Adding a challenge stays
one new file here; there is no list to keep up to date. `available_challenges()` (framework.py)
imports them all, for `--list`, the tests and the examples.

Start-up rule for every module a run imports (challenge, metrics and reading modules): import a
heavy library (scikit-learn, scipy, SimpleITK, h5py, cc3d, OpenCV, tifffile, imagecodecs) inside
the function that uses it, never at the top of the module, so that a run pays only for the
libraries of its own challenge, when it uses them. numpy is cheap enough (~0.1 s) to import at
the top. tests/test_startup.py checks this in a fresh interpreter for every challenge.
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evaluation.framework import Evaluation

_PACKAGE_DIR = Path(__file__).resolve().parent


# A line starting a top-level statement (a class or not; not a comment, not the closing bracket of
# a class header), or a `name = ...` line at the indentation of a class body.
_STATEMENT_OR_NAME = re.compile(r"^(?:(class\s)|[^\s#)\]}])|^    name\s*(?::[^=\n]*)?=.*$", re.MULTILINE)


def declared_names(source: str) -> list[str]:
    """The names the top-level classes of a module's source declare: a line `name = "<literal>"`
    (annotated or not) at the class body's indentation, four spaces; non-empty strings only.
    Scanned line by line, the assignment alone parsed (parsing whole modules costs ~60 ms)."""
    names = []
    in_class = False
    for match in _STATEMENT_OR_NAME.finditer(source):
        if match.group(0)[0] != " ":  # a top-level statement: are the lines that follow a class body?
            in_class = match.group(1) is not None
            continue
        if not in_class:
            continue
        try:
            statement = ast.parse(match.group(0).strip()).body[0]
        except SyntaxError:  # e.g. a value continued on the next line: not a literal
            continue
        value = statement.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value:
            names.append(value.value)
    return names


def challenge_modules() -> dict[str, str]:
    """{challenge name: module name}, from the modules' source, importing none of them."""
    return dict(_scan_sources())


@functools.cache  # the source does not change while a process runs
def _scan_sources() -> tuple[tuple[str, str], ...]:
    found: dict[str, str] = {}
    for path in sorted(_PACKAGE_DIR.glob("[!_]*.py")):  # the modules available_challenges imports
        for name in declared_names(path.read_text(encoding="utf-8")):
            found.setdefault(name, f"{__name__}.{path.stem}")
    return tuple(sorted(found.items()))


def challenge_names() -> list[str]:
    """Every challenge's name, sorted, without importing any challenge module."""
    return list(challenge_modules())


def challenge_class(name: str) -> type[Evaluation]:
    """The Evaluation subclass named `name`, importing only its module; KeyError if no module
    declares it."""
    from evaluation.framework import Evaluation

    module_name = challenge_modules()[name]
    module = importlib.import_module(module_name)
    for obj in vars(module).values():
        if isinstance(obj, type) and issubclass(obj, Evaluation) and obj.name == name and obj.__module__ == module_name:
            return obj
    raise LookupError(f"{module_name} declares the challenge {name!r} in its source but defines no Evaluation "
                      f"subclass of that name once imported.")
