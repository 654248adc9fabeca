"""The challenges: one folder each, found by its folder.

A folder here (a package: `rare26/__init__.py`) is one challenge, or a family of challenges that
share their code (`isic/`: isic2018 and isic2019; `hecktor2025/`: its three tasks). Its
`__init__.py` is the declaration: it defines, or imports from the folder's modules or
subpackages, the Evaluation subclasses whose `name` is run on the command line, and
`RUNTIME_PACKAGES`, the packages of requirements.txt its image installs (a dict by name for a
folder of several). A folder of tasks written by `python -m evaluation.new acme2027-task1` holds
each task in a subpackage of its own (`acme2027/acme2027_task1/`), its __init__.py importing
each task's class; the examples are found in the folder's and its subpackages' modules named
`*examples` (evaluation/examples). Every challenge's name starts with its folder's
name, so a run imports the one folder whose name is the longest prefix of the name asked for,
and nothing of the others. Adding a challenge is adding a folder: there is no list to edit
(`python -m evaluation.new NAME` writes one; docs/adding-a-challenge.md).

Start-up rule for every module a run imports (challenge, metrics and reading modules): import a
heavy library (scikit-learn, scipy, SimpleITK, h5py, cc3d, OpenCV, tifffile, imagecodecs) inside
the function that uses it, never at the top of the module, so that a run pays only for the
libraries of its own challenge, when it uses them. numpy is cheap enough (~0.1 s) to import at
the top. tests/test_startup.py checks this in a fresh interpreter for every challenge.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from evaluation.errors import UsageError

if TYPE_CHECKING:
    from evaluation.framework import Evaluation

_PACKAGE_DIR = Path(__file__).resolve().parent


def challenge_folders() -> list[str]:
    """The challenge folders (packages), sorted, importing none of them."""
    return sorted(path.parent.name for path in _PACKAGE_DIR.glob("*/__init__.py")
                  if not path.parent.name.startswith("_"))


def folder_of(name: str) -> str | None:
    """The folder a challenge named `name` lives in: the longest folder name it starts with."""
    candidates = [folder for folder in challenge_folders() if name.startswith(folder)]
    return max(candidates, key=len) if candidates else None


def declared_challenges(package: ModuleType) -> dict[str, type[Evaluation]]:
    """{name: class} of the Evaluation subclasses a folder's package declares."""
    from evaluation.framework import Evaluation

    found = {}
    for obj in vars(package).values():
        if (isinstance(obj, type) and issubclass(obj, Evaluation) and obj.name
                and (obj.__module__ == package.__name__ or obj.__module__.startswith(package.__name__ + "."))):
            found[obj.name] = obj
    for cls in found.values():
        check_runtime_packages(cls)
    return dict(sorted(found.items()))


def check_runtime_packages(cls: type[Evaluation]) -> None:
    """A SetupError (exit 3, one line) when the challenge class `cls`, in a folder here, needs
    packages (its needed_packages: ClDice needs scikit-image) that its folder's RUNTIME_PACKAGES
    leave out: its image installs only those, so it would fail on every submission. Checked when
    the folder is loaded, so the organizer's first local run or test says so, before any image is
    built. A folder whose declaration cannot be read is evaluation.image_requirements' to report."""
    needed = cls.needed_packages()
    if not (needed and cls.name and cls.__module__.startswith(__name__ + ".")):
        return
    from evaluation.errors import SetupError
    from evaluation.image_requirements import DeclarationError, normalized, runtime_packages

    try:
        declared = {normalized(package) for package in runtime_packages(cls.name)}
    except (KeyError, DeclarationError):
        return
    for what, packages in needed.items():
        missing = [package for package in packages if normalized(package) not in declared]
        if missing:
            listed = ", ".join(f'"{package}"' for package in missing)
            raise SetupError(f"{cls.name} declares {what}, which its image cannot run without {listed}: add "
                             f"{'it' if len(missing) == 1 else 'them'} to RUNTIME_PACKAGES in evaluation/challenges/"
                             f"{folder_of(cls.name)}/__init__.py and rebuild the image (it installs only the "
                             f"packages declared there; docs/adding-a-challenge.md).")


def folder_package(folder: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{folder}")


def challenge_class(name: str) -> type[Evaluation]:
    """The Evaluation subclass named `name`, importing only its folder; KeyError if none declares it."""
    folder = folder_of(name)
    if folder is not None:
        challenges = declared_challenges(folder_package(folder))
        if name in challenges:
            return challenges[name]
    raise KeyError(name)


def named_challenge(name: str) -> type[Evaluation]:
    """challenge_class of a name given on a command line: a usage error (exit 2) naming the known
    challenges if no folder declares it (importing every folder only then)."""
    try:
        return challenge_class(name)
    except KeyError:
        raise UsageError(f"Unknown challenge {name!r}; known challenges: {', '.join(challenge_names())}.") from None


def available_challenges() -> dict[str, type[Evaluation]]:
    """{name: class} of every challenge, importing every folder (--list, errors, tests, examples)."""
    found: dict[str, type[Evaluation]] = {}
    for folder in challenge_folders():
        for name, cls in declared_challenges(folder_package(folder)).items():
            if folder_of(name) != folder:  # the command line would look for it in another folder
                raise LookupError(f"challenge {name!r} is declared in evaluation/challenges/{folder}/, but its name "
                                  f"must start with the folder's name ({folder!r}) to be found.")
            found[name] = cls
    return dict(sorted(found.items()))


def challenge_names() -> list[str]:
    """Every challenge's name, sorted (imports every folder)."""
    return list(available_challenges())
