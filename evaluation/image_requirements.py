"""python -m evaluation.image_requirements CHALLENGE [REQUIREMENTS]: the pins one challenge's image installs.

Each challenge module declares, at its top level, the packages of requirements.txt its runs need:
`RUNTIME_PACKAGES = ("numpy", "SimpleITK", ...)`, named as in requirements.txt and including their
own dependencies. The pins themselves stay in one place, requirements.txt; this command prints the
pin lines of the declared packages (in requirements.txt's order), one a line, for the image's
`pip install --no-deps -r`, so that an ISIC image carries numpy and not OpenCV or SimpleITK.

It runs in the image's build stage before any package is installed: standard library only, and
the challenge module is read, never imported. Exit 2: unknown challenge or usage; exit 3: a module
without a declaration, or a declared package that requirements.txt does not pin exactly.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from evaluation.challenges import challenge_modules, challenge_names
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
    """The packages `challenge`'s module declares in RUNTIME_PACKAGES (KeyError: unknown challenge)."""
    module = challenge_modules()[challenge]
    path = Path(__file__).resolve().parent.joinpath(*module.split(".")[1:]).with_suffix(".py")
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [DECLARATION]:
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                value = None
            if not (isinstance(value, tuple) and value and all(isinstance(v, str) and v for v in value)):
                raise DeclarationError(f"{path.name}: {DECLARATION} must be a literal tuple of package names.")
            return value
    raise DeclarationError(f"{path.name} (challenge {challenge}) has no top-level {DECLARATION} = (...) naming "
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
    if challenge not in challenge_modules():
        print(f"unknown challenge {challenge!r} (one of: {', '.join(challenge_names())})", file=sys.stderr)
        return EXIT_USAGE
    requirements = Path(args[1]) if len(args) == 2 else REQUIREMENTS
    try:
        lines = image_requirements(challenge, requirements.read_text(encoding="utf-8"))
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
