"""The scaffold of a new challenge (docs/adding-a-challenge.md):

    python -m evaluation.new NAME --template classification|segmentation|points|landmarks|survival|lesions|instances

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
evaluation package beside the repository's folders (a child process in a process group of its
own, its temporary files in the scratch folder too), and the four new paths are put in place at
the end, all or none: each is first moved next to its place (copied when that folder is on
another file system), then the four renames are done with SIGTERM held back, the package folder
last (a challenge is found by its folder), undone if one fails. So a refusal, a failure, a full
disk or a SIGTERM leaves nothing behind, no scratch folder and no process; a rerun works. Only a
SIGKILL can leave something: a rerun then names every path to remove.

Exit codes: 0 written; 2 refused (a bad or taken NAME, an unknown template; one line, nothing
written); 3 the repository cannot be written (no space left, read-only; nothing written); 4 the
generated challenge failed its own run (a bug of the templates; nothing written); 143 stopped by
SIGTERM (nothing written).
"""

from __future__ import annotations

import contextlib
import keyword
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Collection
from pathlib import Path

from evaluation.challenges import challenge_folders
from evaluation.errors import InternalError, NotWritten, UsageError
from evaluation.interruption import (
    copy_tree,
    install,
    machine_error,
    move,
    remove_tree,
    run_child,
    scratch_folder,
    stopped_by_sigterm,
)
from evaluation.launch import CommandParser, run_command

TEMPLATES = ("classification", "segmentation", "points", "landmarks", "survival", "lesions", "instances", "regression")
TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
ROOT = Path(__file__).resolve().parents[2]  # the repository: the folder holding the evaluation package
# A name: lowercase letters, digits and "_" in its folder part, then "-"-separated parts.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*(-[a-z0-9]+)*")
NAME_LENGTH = 32  # the class line `title = "NAME: ..."` stays within 120 characters
TITLES = {
    "classification": "binary classification: ROC AUC, balanced accuracy, sensitivity",
    "segmentation": "3D multi-label segmentation, mean rank of Dice, HD95, NSD at 2 mm",
    "points": "point detection, F1 at 2 mm (ties: FROC score)",
    "landmarks": "landmark detection, mean radial error (ties: SDR at 2 mm)",
    "survival": "survival, Harrell's C-index",
    "lesions": "lesion segmentation, pooled lesion F1 (then FP/FN volume, Dice)",
    "instances": "instance segmentation, panoptic quality per class (pooled)",
    "regression": "regression of a volume and an age: R2, MAE",
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


def scratch_prefix(name: str) -> str:
    """The start of the name of every scratch folder of a scaffold of `name` (then 8 random
    characters, tempfile.mkdtemp's)."""
    return f".new-{name}-in-progress-"


def new_paths(name: str, folder: str) -> list[Path]:
    """The paths a scaffold of `name` adds, relative to the repository, in the order they are put
    in place: the package folder last, as a challenge is found by its folder (so an interrupted
    install never leaves a challenge found without its data)."""
    return [Path("ground-truth", name), Path("test", name), Path("docs", "challenges", page_for(name)),
            Path("evaluation", "challenges", folder)]


def stale_cache(folder: Path) -> bool:
    """Whether `folder` is a real folder holding nothing but __pycache__/ folders of .pyc files:
    Python's cache of a package whose sources were removed (`git clean -fd` keeps it, as it is
    ignored), which Python never imports without them. The scaffold replaces such a folder."""
    if not folder.is_dir() or folder.is_symlink():
        return False
    for current, folders, files in os.walk(folder):
        inside_cache = "__pycache__" in Path(current).relative_to(folder).parts
        if (files and not inside_cache) or not all(name.endswith(".pyc") for name in files):
            return False
        if not inside_cache and any(name != "__pycache__" for name in folders):
            return False
    return True


def leftovers(name: str, folder: str, root: Path, ours: Collection[Path] = ()) -> list[str]:
    """What stands in the way of a scaffold of `name`, relative to `root`: its new paths that
    exist already (but a package folder that is only a stale cache, which is replaced) and
    scratch folders of a scaffold of the same name (one killed, or one running now), except
    `ours`."""
    package = Path("evaluation", "challenges", folder)
    found = [path for path in new_paths(name, folder) if os.path.lexists(root / path)
             and not (path == package and stale_cache(root / path))]
    scratch = re.compile(re.escape(scratch_prefix(name)) + r"[a-z0-9_]{8}")
    for parent in {Path("."), *(path.parent for path in new_paths(name, folder))}:
        with contextlib.suppress(OSError):
            found += [parent / entry.name for entry in os.scandir(root / parent)
                      if scratch.fullmatch(entry.name) and root / parent / entry.name not in ours]
    return [path.as_posix() for path in found]


def check_name(name: str, root: Path = ROOT, ours: Collection[Path] = ()) -> str:
    """The folder of a new challenge `name`, or a UsageError saying why it cannot be added
    (`ours`: this run's own scratch folders)."""
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
    taken = leftovers(name, folder, root, ours)
    if taken:
        raise UsageError(f"{', '.join(taken)} exist{'s' if len(taken) == 1 else ''} already (from an earlier or "
                         f"interrupted scaffold of {name}?); remove {'it' if len(taken) == 1 else 'them'}, or pick "
                         f"another name.")
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


BUILD_GRACE = 10.0  # seconds the build process has to end its own children and clean up after SIGTERM


def scaffold(name: str, template: str, root: Path = ROOT) -> list[Path]:
    """Write the challenge; the new paths (relative to `root`). a UsageError before anything is written."""
    if template not in TEMPLATES:
        raise UsageError(f"Unknown template {template!r}; the templates are {', '.join(TEMPLATES)}.")
    check_checkout(root)
    folder = check_name(name, root)
    files = rendered(template, name, folder)
    try:
        with scratch_folder(root, scratch_prefix(name)) as scratch:
            build_in(root, scratch, name, template, folder, files)
            targets = new_paths(name, folder)
            sources = {Path("evaluation", "challenges", folder): scratch / "evaluation" / "challenges" / folder}
            put_in_place(root, scratch, {target: sources.get(target, scratch / target) for target in targets}, name,
                         folder)
            return targets
    except OSError as error:
        if not machine_error(error):
            raise
        where = f" ({error.filename})" if error.filename else ""
        raise NotWritten(f"The challenge {name} could not be written into {root}: {error.strerror}{where}; nothing "
                         f"was written.") from None


def build_in(root: Path, scratch: Path, name: str, template: str, folder: str, files: dict[str, str]) -> None:
    """The new challenge's folder, page and data, in `scratch`: a copy of the evaluation package
    with the new folder in it, whose own commands (evaluation.new.build, run in a process of its
    own) write ground-truth/NAME and test/NAME there."""
    copy_tree(root / "evaluation", scratch / "evaluation", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    package = scratch / "evaluation" / "challenges" / folder
    shutil.rmtree(package, ignore_errors=True)  # a stale cache's folder, copied empty
    package.mkdir()
    files = dict(files)
    doc = files.pop("doc.md")
    for file_name, text in files.items():
        (package / file_name).write_text(text, encoding="utf-8")
    (scratch / "docs" / "challenges").mkdir(parents=True)
    (scratch / "docs" / "challenges" / page_for(name)).write_text(doc, encoding="utf-8")
    (scratch / "tmp").mkdir()
    # The example, its test data and its leaderboard teams, by the real commands, in a process
    # that imports the scratch copy of the package (with the new folder in it); its temporary
    # files in the scratch folder too, so that nothing of it can outlive this command.
    env = {**os.environ, "PYTHONPATH": str(scratch), "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(scratch / "tmp")}
    run = run_child([sys.executable, "-m", "evaluation.new.build", name], grace=BUILD_GRACE, cwd=scratch, env=env,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(run.stdout)
    if run.returncode == NotWritten.exit_code:  # the machine's (evaluation/new/build.py): its own line
        lines = run.stdout.strip().splitlines()
        raise NotWritten(f"The challenge {name} could not be written into {root}: {lines[-1] if lines else ''}")
    if run.returncode < 0:  # killed from outside (the out-of-memory killer, say): never the template's bug
        raise NotWritten(f"The build of the challenge {name} was killed (signal {-run.returncode}) by the machine or "
                         f"another program (its memory limit?); nothing was written.")
    if run.returncode != 0:
        raise InternalError(f"The new challenge {name} failed to make its own example (exit {run.returncode}, "
                            f"output above): a bug of the {template} template; nothing was written.")
    shutil.rmtree(package / "__pycache__", ignore_errors=True)


def put_in_place(root: Path, scratch: Path, sources: dict[Path, Path], name: str, folder: str) -> None:
    """Each source of `sources` ({new path relative to root: where it was built}) put at its
    path, all or none. Each is first moved into a scratch folder beside its path (a rename, or a
    copy when that folder is on another file system: ground-truth/ on a disk of its own, say),
    so that the last step is renames within each folder, done together with SIGTERM held back
    and undone if one fails (evaluation.interruption.install). The scratch folders go at the end."""
    staged, made = [], []
    try:
        for target, source in sources.items():
            parent = root / target.parent
            missing = [p for p in (parent, *parent.parents) if not os.path.lexists(p)]  # innermost first
            parent.mkdir(parents=True, exist_ok=True)
            made[:0] = missing
            beside = Path(tempfile.mkdtemp(prefix=scratch_prefix(name), dir=parent))
            staged.append(beside)
            move(source, beside / target.name)  # a rename, or a copy onto another file system
        check_name(name, root, ours={scratch, *staged})  # still free: nothing appeared meanwhile
        # A stale cache in the package folder's place (stale_cache) goes into the package's
        # scratch folder beside it, removed at the end; anything else there is never replaced.
        package = root / "evaluation" / "challenges" / folder
        install([(beside / target.name, root / target) for beside, target in zip(staged, sources, strict=True)],
                staged[-1], replace={package} if stale_cache(package) else False, last=True)
    finally:
        for beside in staged:
            remove_tree(beside)
        for path in made:
            with contextlib.suppress(OSError):
                path.rmdir()  # only if empty: a folder made for a path put in place stays


STOPPED = "The scaffold was stopped (SIGTERM) before it finished; nothing was written."


def main(argv: list[str] | None = None) -> int:
    with stopped_by_sigterm(STOPPED):
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
               "2 refused (bad or taken NAME, unknown template), nothing written; 3 the repository cannot be "
               "written (no space left), nothing written; 4 the generated challenge failed its own run (a bug), "
               "nothing written; 143 stopped by SIGTERM, nothing written.")
    parser.add_argument("name", metavar="NAME", help="the challenge's name, e.g. acme2027 or acme2027-task1")
    parser.add_argument("--template", required=True, metavar="TEMPLATE",
                        help=f"the kind of challenge: {', '.join(TEMPLATES)} (classification: ROC AUC and "
                             f"balanced accuracy; segmentation: Dice, HD95 and NSD per label; points: F1 and FROC; "
                             f"landmarks: MRE and SDR; survival: C-index)")
    args = parser.parse_args(argv)
    written = scaffold(args.name, args.template)  # UsageError: refused, nothing written (exit 2)
    print(f"Wrote the challenge {args.name}: " + ", ".join(f"{path}" for path in written) + ". Try: "
          f"python -m evaluation {args.name} --ground-truth ground-truth/{args.name} --input test/{args.name}/input "
          f"--output /tmp/{args.name}-out", flush=True)
    return 0
