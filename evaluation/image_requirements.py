"""python -m evaluation.image_requirements CHALLENGE [REQUIREMENTS]: the pins one challenge's image installs.

Each challenge folder's `__init__.py` declares, at its top level, the packages of requirements.txt
its runs need: `RUNTIME_PACKAGES = ("numpy", "SimpleITK", ...)`, named as in requirements.txt and
including their own dependencies: a tuple when the folder is one challenge of its own name, else
a dict of such tuples by challenge name (`{"hecktor2025-task1": (...), ...}`), so that an
unknown name is refused here too. The pins themselves stay in one place, requirements.txt; this command prints the
pin lines of the declared packages (in requirements.txt's order), one a line, for the image's
`pip install --no-deps -r`, so that an ISIC image carries numpy and not OpenCV or SimpleITK.

It runs in the image's build stage before any package is installed: standard library only, and
the challenge's `__init__.py` is read, never imported. Exit 2: unknown challenge or usage; exit 3: a folder
without a declaration, or a declared package that requirements.txt does not pin exactly.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from evaluation.challenges import challenge_folders, folder_of
from evaluation.errors import EXIT_OK, EXIT_SETUP, EXIT_USAGE

DECLARATION = "RUNTIME_PACKAGES"
REQUIREMENTS = Path(__file__).resolve().parent.parent / "requirements.txt"
_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)")


class DeclarationError(Exception):
    """A challenge's declaration, or requirements.txt, cannot give the image's pins."""


def normalized(name: str) -> str:
    """A package name as pip compares them (PEP 503): case and runs of - _ . do not matter."""
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_packages(challenge: str) -> tuple[str, ...]:
    """The packages `challenge`'s folder declares in RUNTIME_PACKAGES (KeyError: unknown challenge)."""
    folder = folder_of(challenge)
    if folder is None:
        raise KeyError(challenge)
    path = Path(__file__).resolve().parent / "challenges" / folder / "__init__.py"
    where = f"evaluation/challenges/{folder}/__init__.py"
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [DECLARATION]:
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None
            if isinstance(value, dict):  # by challenge name: the folder's names, each known
                if challenge not in value:
                    raise KeyError(challenge)
                value = value[challenge]
            elif challenge != folder:  # a tuple is the packages of the one challenge named as its folder
                raise KeyError(challenge)
            if not (isinstance(value, tuple) and value and all(isinstance(v, str) and v for v in value)):
                raise DeclarationError(f"{where}: {DECLARATION} must be a literal tuple of package names, or a "
                                       f"literal dict of such tuples by challenge name.")
            return value
    raise DeclarationError(f"{where} (challenge {challenge}) has no top-level {DECLARATION} = (...) naming "
                           f"the packages of requirements.txt its image installs.")


def pins(requirements_text: str) -> dict[str, str]:
    """{normalized name: "name==version"} of every exact pin, in the file's order (-r lines skipped)."""
    found = {}
    for line in requirements_text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        match = _PIN.fullmatch(line)
        if not match:
            raise DeclarationError(f"requirements.txt: {line!r} is not an exact pin (name==version).")
        found[normalized(match[1])] = f"{match[1]}=={match[2]}"
    return found


def image_requirements(challenge: str, requirements_text: str) -> list[str]:
    """The pin lines of the packages `challenge` declares, in requirements.txt's order."""
    declared = {normalized(name): name for name in runtime_packages(challenge)}
    pinned = pins(requirements_text)
    missing = sorted(name for key, name in declared.items() if key not in pinned)
    if missing:
        raise DeclarationError(f"{challenge} declares {', '.join(missing)} in {DECLARATION}, but requirements.txt "
                               f"pins no such package: pin it there (name==version).")
    return [line for key, line in pinned.items() if key in declared]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not 1 <= len(args) <= 2 or args[0].startswith("-"):
        print("usage: python -m evaluation.image_requirements CHALLENGE [REQUIREMENTS]", file=sys.stderr)
        return EXIT_USAGE
    challenge = args[0]
    requirements = Path(args[1]) if len(args) == 2 else REQUIREMENTS
    try:
        lines = image_requirements(challenge, requirements.read_text(encoding="utf-8"))
    except KeyError:
        print(f"unknown challenge {challenge!r} (no folder of evaluation/challenges declares it; folders: "
              f"{', '.join(challenge_folders())})", file=sys.stderr)
        return EXIT_USAGE
    except OSError as error:
        print(f"cannot read {requirements}: {error.strerror or error}", file=sys.stderr)
        return EXIT_SETUP
    except DeclarationError as error:
        print(error, file=sys.stderr)
        return EXIT_SETUP
    print("\n".join(lines))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
