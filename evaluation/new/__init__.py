"""The scaffold of a new challenge (docs/adding-a-challenge.md):

    python -m evaluation.new NAME --template classification|segmentation|detection|survival

writes a working challenge NAME, the simplest honest instance of its kind, into this repository:

    evaluation/challenges/<folder>/   __init__.py (the declaration), scoring.py, examples.py
    ground-truth/NAME/                its synthetic ground truth
    test/NAME/                        input/, expected_metrics.json, invalid/<case>/, leaderboard/<team>/
    docs/challenges/<folder>.md       its page (one per folder, as isic.md)

<folder> is NAME, or NAME's part before its first "-" (acme2027-task1 lives in acme2027/, as
hecktor2025-task1 in hecktor2025/): a challenge's name starts with its folder's name, and a
Python package name has no "-". No existing file changes: the discovery of challenges, their
examples and RUNTIME_PACKAGES finds the new folder (evaluation/challenges/__init__.py).

The test data are made by the real commands (the examples generator, the evaluation, the
leaderboard teams' writer), not written by hand: everything is built in a scratch copy of the
evaluation package beside the repository's folders, and the four new paths are moved in at the
end, so a refusal or a failure leaves nothing behind.

Exit codes: 0 written; 2 refused (a bad or taken NAME, an unknown template; one line, nothing
written); 4 the generated challenge failed its own run (a bug of the templates; nothing written).
"""

from __future__ import annotations

import keyword
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from evaluation.challenges import challenge_folders
from evaluation.errors import InternalError, UsageError
from evaluation.launch import CommandParser, run_command

TEMPLATES = ("classification", "segmentation", "detection", "survival")
TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
ROOT = Path(__file__).resolve().parents[2]  # the repository: the folder holding the evaluation package
# A name: lowercase letters, digits and "_" in its folder part, then "-"-separated parts.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*(-[a-z0-9]+)*")
NAME_LENGTH = 32  # the class line `title = "NAME: ..."` stays within 120 characters
TITLES = {
    "classification": "binary classification, ROC AUC (ties: balanced accuracy)",
    "segmentation": "segmentation, mean Dice (ties: mean NSD at 2 px)",
    "detection": "lesion detection, FROC score (sensitivity at 1/4 to 8 FP per image)",
    "survival": "survival, Harrell's C-index",
}


def folder_for(name: str) -> str:
    """The package folder of a challenge named `name`: the name up to its first "-"."""
    return name.split("-", 1)[0]


def class_name(name: str) -> str:
    """acme2027-task1 -> Acme2027Task1."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]", name) if part)


def check_checkout(root: Path = ROOT) -> None:
    """A UsageError unless the package runs from a checkout of the repository: installed (pip
    install .), the challenge would be written into site-packages, where no build uses it."""
    if not all((root / part).exists() for part in ("Dockerfile", "requirements.txt", "ground-truth", "test")):
        raise UsageError(f"python -m evaluation.new writes a challenge into a checkout of this repository, and "
                         f"{root} is not one (the evaluation package is installed there); run it from a clone.")


def page_for(name: str) -> str:
    """The challenge's page: docs/challenges/<folder>.md, one per folder (isic.md, hecktor2025.md)."""
    return f"{folder_for(name)}.md"


def check_name(name: str, root: Path = ROOT) -> str:
    """The folder of a new challenge `name`, or a UsageError saying why it cannot be added."""
    if len(name) > NAME_LENGTH or not NAME_PATTERN.fullmatch(name):
        raise UsageError(f"{name!r} is not a challenge name: use lowercase letters and digits, starting with a letter, "
                      f"with '-' between parts and '_' only before the first '-' (e.g. acme2027 or acme2027-task1), "
                      f"at most {NAME_LENGTH} characters.")
    folder = folder_for(name)
    if keyword.iskeyword(folder) or not folder.isidentifier():
        raise UsageError(f"{name!r} cannot be a challenge name: its folder {folder!r} is not a Python package name.")
    folders = challenge_folders()
    if folder in folders:
        raise UsageError(f"The folder evaluation/challenges/{folder}/ exists already; a new challenge gets a folder of "
                      f"its own (to add {name} to it, edit that folder by hand).")
    for existing in folders:
        # The run imports the folder whose name is the longest prefix of the challenge's name:
        # a new folder that prefixes an existing name, or is prefixed by an existing folder, would
        # make one name ambiguous to read.
        if folder.startswith(existing) or existing.startswith(folder):
            raise UsageError(f"{name!r} cannot be added: its folder {folder!r} and the existing folder {existing!r} "
                          f"start alike, so a challenge name could be looked up in the wrong one; pick a name "
                          f"that starts differently.")
    for path in (root / "ground-truth" / name, root / "test" / name, root / "docs" / "challenges" / page_for(name)):
        if os.path.lexists(path):
            raise UsageError(f"{path.relative_to(root)} exists already; remove it, or pick another name.")
    return folder


def rendered(template: str, name: str, folder: str) -> dict[str, str]:
    """{file name: text} of the template's files with the challenge's names filled in."""
    values = {"__NAME__": name, "__PACKAGE__": folder, "__CLASS__": class_name(name),
              "__TITLE__": f"{name}: {TITLES[template]}"}
    files = {}
    for path in sorted((TEMPLATE_DIR / template).glob("*.tmpl")):
        text = path.read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace(key, value)
        if name != folder:  # a tuple is the packages of the challenge named as its folder (image_requirements)
            text = re.sub(r"^RUNTIME_PACKAGES = (\(.*\))$", rf'RUNTIME_PACKAGES = {{"{name}": \1}}', text,
                          flags=re.MULTILINE)
        files[path.name.removesuffix(".tmpl")] = text
    return files


def scaffold(name: str, template: str, root: Path = ROOT) -> list[Path]:
    """Write the challenge; the new paths (relative to `root`). a UsageError before anything is written."""
    if template not in TEMPLATES:
        raise UsageError(f"Unknown template {template!r}; the templates are {', '.join(TEMPLATES)}.")
    check_checkout(root)
    folder = check_name(name, root)
    files = rendered(template, name, folder)
    scratch = Path(tempfile.mkdtemp(prefix=f".new-{name}-in-progress-", dir=root))
    try:
        shutil.copytree(root / "evaluation", scratch / "evaluation",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        package = scratch / "evaluation" / "challenges" / folder
        package.mkdir()
        doc = files.pop("doc.md")
        for file_name, text in files.items():
            (package / file_name).write_text(text, encoding="utf-8")
        (scratch / "docs" / "challenges").mkdir(parents=True)
        (scratch / "docs" / "challenges" / page_for(name)).write_text(doc, encoding="utf-8")
        # The example, its test data and its leaderboard teams, by the real commands, in a process
        # that imports the scratch copy of the package (with the new folder in it).
        env = {**os.environ, "PYTHONPATH": str(scratch), "PYTHONDONTWRITEBYTECODE": "1"}
        run = subprocess.run([sys.executable, "-m", "evaluation.new.build", name], cwd=scratch, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        sys.stdout.write(run.stdout)
        if run.returncode != 0:
            raise InternalError(f"The new challenge {name} failed to make its own example (exit {run.returncode}, "
                                f"output above): a bug of the {template} template; nothing was written.")
        shutil.rmtree(package / "__pycache__", ignore_errors=True)
        moves = [(package, Path("evaluation", "challenges", folder)), (scratch / "ground-truth" / name,
                 Path("ground-truth", name)), (scratch / "test" / name, Path("test", name)),
                 (scratch / "docs" / "challenges" / page_for(name), Path("docs", "challenges", page_for(name)))]
        check_name(name, root)  # still free: nothing appeared meanwhile
        for source, target in moves:
            (root / target).parent.mkdir(parents=True, exist_ok=True)
            os.replace(source, root / target)  # the scratch folder is in root: a rename
        return [target for _, target in moves]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    return run_command(_main, argv)


def _main(argv: list[str] | None) -> int:
    parser = CommandParser(
        prog="python -m evaluation.new",
        description="Write a new, working challenge NAME from a template: its folder "
                    "evaluation/challenges/<folder>/ (the declaration __init__.py, scoring.py, examples.py), "
                    "its synthetic ground truth ground-truth/NAME/, its test example test/NAME/ (input/, "
                    "expected_metrics.json, invalid/, leaderboard/, made by running the evaluation) and "
                    "docs/challenges/<folder>.md. No existing file changes; every command and generic test picks "
                    "it up. Then edit the one folder (docs/adding-a-challenge.md).",
        epilog="<folder> is NAME up to its first '-' (acme2027-task1 lives in acme2027/). Exit codes: 0 written; "
               "2 refused (bad or taken NAME, unknown template), nothing written; 4 the generated challenge "
               "failed its own run (a bug), nothing written.")
    parser.add_argument("name", metavar="NAME", help="the challenge's name, e.g. acme2027 or acme2027-task1")
    parser.add_argument("--template", required=True, metavar="TEMPLATE",
                        help=f"the kind of challenge: {', '.join(TEMPLATES)} (classification: ROC AUC and "
                             f"balanced accuracy; segmentation: Dice and NSD; detection: FROC; survival: C-index)")
    args = parser.parse_args(argv)
    written = scaffold(args.name, args.template)  # UsageError: refused, nothing written (exit 2)
    print(f"Wrote the challenge {args.name}: " + ", ".join(f"{path}" for path in written) + ". Try: "
          f"python -m evaluation {args.name} --ground-truth ground-truth/{args.name} --input test/{args.name}/input "
          f"--output /tmp/{args.name}-out", flush=True)
    return 0
