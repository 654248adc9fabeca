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
without a declaration, a declaration that is not one (not Python, not a literal, not UTF-8), a declared
package that requirements.txt does not pin exactly, or a file that cannot be read (a folder, a named pipe
or a device: refused unread; at most MAX_BYTES read); one line on stderr, never a traceback but for a
bug of ours (exit 4).
"""

from __future__ import annotations

import ast
import os
import re
import stat
import sys
import traceback
from pathlib import Path

from evaluation.challenges import challenge_folders, folder_of
from evaluation.errors import EXIT_INTERNAL, EXIT_OK, EXIT_SETUP, EXIT_USAGE, one_line

DECLARATION = "RUNTIME_PACKAGES"
REQUIREMENTS = Path(__file__).resolve().parent.parent / "requirements.txt"
_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)")
MAX_BYTES = 1 << 20  # requirements.txt and a declaration are a few KB; more is not one of them


class DeclarationError(Exception):
    """A challenge's declaration, or requirements.txt, cannot give the image's pins."""


def read_text(path: Path, what: str) -> str:
    """The UTF-8 text of the regular file `path`, at most MAX_BYTES, read without waiting: a
    named pipe, a device or a folder is refused before a byte is read (DeclarationError, naming
    `what`)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise DeclarationError(f"cannot read {what}: {error.strerror or error}.") from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise DeclarationError(f"cannot read {what}: it is not a regular file.")
        chunks, size = [], 0
        while size <= MAX_BYTES:
            chunk = os.read(descriptor, MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise DeclarationError(f"cannot read {what}: {error.strerror or error}.") from None
    finally:
        os.close(descriptor)
    if size > MAX_BYTES:
        raise DeclarationError(f"cannot read {what}: it is over {MAX_BYTES >> 20} MiB, too large for one.")
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as error:
        raise DeclarationError(f"cannot read {what}: it is not UTF-8 text (byte {error.start}).") from None


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
    text = read_text(path, where)
    try:
        module = ast.parse(text, filename=where)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:  # ValueError: a NUL byte
        line = f", line {error.lineno}" if getattr(error, "lineno", None) else ""
        reason = getattr(error, "msg", None) or str(error) or "too large or too deeply nested to parse"
        raise DeclarationError(f"{where}{line} is not valid Python ({type(error).__name__}: {reason}), so its "
                               f"{DECLARATION} cannot be read.") from None
    for node in module.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [DECLARATION]:
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):  # not a literal; {[]: 1}
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
    """The command: the pin lines on stdout (exit 0), or one line on stderr (exit 2 or 3; a bug of
    ours, exit 4, after its traceback). Not evaluation.launch's boundary: the image's build stage
    copies only this module, evaluation/__init__.py, errors.py and the challenge folders."""
    args = sys.argv[1:] if argv is None else argv
    if not 1 <= len(args) <= 2 or args[0].startswith("-"):
        print("usage: python -m evaluation.image_requirements CHALLENGE [REQUIREMENTS]", file=sys.stderr)
        return EXIT_USAGE
    challenge = args[0]
    requirements = Path(args[1]) if len(args) == 2 else REQUIREMENTS
    try:
        lines = image_requirements(challenge, read_text(requirements, str(requirements)))
    except KeyError:
        print(one_line(f"unknown challenge {challenge!r} (no folder of evaluation/challenges declares it; folders: "
                       f"{', '.join(challenge_folders())})"), file=sys.stderr)
        return EXIT_USAGE
    except DeclarationError as error:
        print(one_line(str(error)), file=sys.stderr)
        return EXIT_SETUP
    except Exception as error:
        traceback.print_exc()
        print(one_line(f"Internal error of evaluation.image_requirements: {type(error).__name__}: {error}"),
              file=sys.stderr)
        return EXIT_INTERNAL
    print("\n".join(lines))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
