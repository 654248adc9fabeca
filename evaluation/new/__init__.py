"""The scaffold of a new challenge (docs/adding-a-challenge.md):

    python -m evaluation.new NAME --template KIND      (KIND: a folder of evaluation/new/templates/)

writes a working challenge NAME, the simplest honest instance of its kind, into this repository:

    evaluation/challenges/<folder>/   the challenge's code (below)
    ground-truth/NAME/                its synthetic ground truth
    test/NAME/                        input/, expected_metrics.json, invalid/<case>/, leaderboard/<team>/
    docs/challenges/<folder>.md       its page (one per folder, as isic.md and hecktor2025.md)

<folder> is NAME, or NAME's part before its first "-" (acme2027-task1 lives in acme2027/, as
hecktor2025-task1 in hecktor2025/): a challenge's name starts with its folder's name, and a
Python package name has no "-". Two layouts:

- NAME is the folder (acme2027): the folder is that one challenge, __init__.py its declaration,
  beside it the template's other modules (scoring.py, examples.py);
- NAME has a "-" (acme2027-task1): the folder is a folder of tasks. Each task is a subpackage
  named as the task with "_" for "-" (acme2027/acme2027_task1/: the template's __init__.py, its
  declaration, and its other modules), and the folder's own __init__.py, written by the scaffold
  (folder_declaration), imports each task's class and declares every task's RUNTIME_PACKAGES
  (read as text by evaluation/image_requirements.py). `python -m evaluation.new acme2027-task2
  --template KIND` then ADDS a task to that folder, with any template: a new subpackage, the
  folder's __init__.py rewritten for both tasks, the task's page section appended to
  docs/challenges/acme2027.md. A folder is added to only while its __init__.py is exactly what
  the scaffold writes for its tasks (scaffolded_tasks): never a bundled challenge's folder, nor
  one whose __init__.py was edited by hand (then the task is added by hand), nor the folder of a
  challenge named as its folder; and never a task name or subpackage that exists.

The templates are the folders of evaluation/new/templates/, each a set of `*.tmpl` files
(__init__.py.tmpl the declaration, doc.md.tmpl the page, any other modules), found by listing
that folder: a new kind is a new folder plus its one-line title in TITLES.

The test data are made by the real commands (the examples generator, the evaluation, the
leaderboard teams' writer), not written by hand: everything is built in a scratch copy of the
evaluation package beside the repository's folders (a child process in a process group of its
own, its temporary files in the scratch folder too), and the four paths are put in place at the
end, all or none: each is first moved next to its place (copied when that folder is on another
file system), then the four renames are done with SIGTERM held back, the package folder last (a
challenge is found by its folder), undone if one fails. When a task is added, the folder and
the page are replaced the same way (the new folder is a copy of the old one with the task
added, checked unchanged meanwhile), and the old ones are put back if anything fails. So a
refusal, a failure, a full disk or a SIGTERM leaves nothing behind, no scratch folder and no
process, and an existing folder exactly as it was; a rerun works. Only a SIGKILL can leave
something: a rerun then names every path to remove.

Exit codes: 0 written; 2 refused (a bad or taken NAME, an unknown template; one line, nothing
written); 3 the repository cannot be written (no space left, read-only; nothing written); 4 the
generated challenge failed its own run (a bug of the templates; nothing written); 143 stopped by
SIGTERM (nothing written).
"""

from __future__ import annotations

import ast
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
    held,
    install,
    machine_error,
    move,
    remove_tree,
    run_child,
    scratch_folder,
    stopped_by_sigterm,
)
from evaluation.launch import CommandParser, run_command

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"


def template_kinds() -> tuple[str, ...]:
    """The templates: the folders of evaluation/new/templates/ that hold `*.tmpl` files, sorted."""
    if not TEMPLATE_DIR.is_dir():
        return ()
    return tuple(sorted(path.name for path in TEMPLATE_DIR.iterdir()
                        if path.is_dir() and not path.name.startswith((".", "_")) and any(path.glob("*.tmpl"))))


TEMPLATES = template_kinds()
ROOT = Path(__file__).resolve().parents[2]  # the repository: the folder holding the evaluation package
# A name: lowercase letters, digits and "_" in its folder part, then "-"-separated parts.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*(-[a-z0-9]+)*")
NAME_LENGTH = 32  # the class line `title = "NAME: ..."` stays within 120 characters
# Each template's one-line title (the challenge's `title` after "NAME: ", and --help's list).
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
DECLARATION = "RUNTIME_PACKAGES"  # read as text by evaluation/image_requirements.py


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
    """The paths a scaffold of `name` writes, relative to the repository, in the order they are
    put in place: the package folder last, as a challenge is found by its folder (so an
    interrupted install never leaves a challenge found without its data). When a task is added to
    a folder of tasks, the page and the folder exist and are replaced."""
    return [Path("ground-truth", name), Path("test", name), Path("docs", "challenges", page_for(name)),
            Path("evaluation", "challenges", folder)]


def task_module(name: str) -> str:
    """The subpackage of the task `name` in its folder of tasks: acme2027-task1 -> acme2027_task1
    (always a Python name: the folder's part is one, the other parts are letters and digits)."""
    return name.replace("-", "_")


def package_literal(packages: tuple[str, ...]) -> str:
    return "(" + ", ".join(f'"{package}"' for package in packages) + ("," if len(packages) == 1 else "") + ")"


def import_line(module: str, names: str) -> str:
    line = f"from {module} import {names}"
    return line if len(line) <= 120 else f"from {module} import (\n    {names},\n)"


def folder_declaration(folder: str, tasks: dict[str, tuple[str, ...]]) -> str:
    """The __init__.py of the folder of tasks `folder`: each task's class imported from its
    subpackage (the discovery finds it there), and RUNTIME_PACKAGES by task. The scaffold adds a
    task only to a folder whose __init__.py is exactly this text for its tasks (scaffolded_tasks)."""
    names = sorted(tasks, key=task_module)
    width = max(len(name) for name in names)
    quotes = '"' * 3
    lines = [
        f"{quotes}The challenges of the folder {folder} (docs/challenges/{folder}.md), one task per subpackage:",
        "",
        *(f"  {name:<{width}}  {task_module(name)}/" for name in names),
        "",
        "Each subpackage is one task: its __init__.py the declaration, beside it the task's other modules",
        "(examples.py, and scoring.py for some kinds). Written by `python -m evaluation.new`, which adds a",
        f"task to this folder (python -m evaluation.new {folder}-NAME --template KIND) while this file is",
        "exactly as it wrote it; once this file is edited, add a task by hand: its subpackage, its import",
        f"here and its entry in {DECLARATION} (docs/adding-a-challenge.md).",
        quotes,
        "",
        *(import_line(f"evaluation.challenges.{folder}.{task_module(name)}", class_name(name)) for name in names),
        "",
        "__all__ = [" + ", ".join(f'"{class_name(name)}"' for name in sorted(names, key=class_name)) + "]",
        "",
        "# The packages of requirements.txt each task's image installs (their pins stay there), by task.",
        "# Read as text by evaluation/image_requirements.py: keep it a literal dict of tuples.",
        f"{DECLARATION} = {{",
        *(f'    "{name}": {package_literal(tasks[name])},' for name in names),
        "}",
    ]
    return "\n".join(lines) + "\n"


def declared_packages(text: str, where: str) -> tuple[ast.Assign, tuple[str, ...]]:
    """The top-level `RUNTIME_PACKAGES = (...)` of a template's declaration: its statement and
    the literal tuple (InternalError: a template without one)."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and [getattr(target, "id", None) for target in node.targets] == [DECLARATION]:
            with contextlib.suppress(ValueError, TypeError, SyntaxError):
                value = ast.literal_eval(node.value)
                if isinstance(value, tuple) and value and all(isinstance(v, str) and v for v in value):
                    return node, value
    raise InternalError(f"{where} has no top-level {DECLARATION} = (...), a literal tuple of package names.")


def without_declaration(text: str, node: ast.Assign) -> str:
    """`text` without the RUNTIME_PACKAGES statement `node` and the comment lines just above it:
    in a folder of tasks the folder's __init__.py declares every task's packages."""
    lines = text.splitlines(keepends=True)
    start = node.lineno - 1
    while start > 0 and lines[start - 1].startswith("#"):
        start -= 1
    end = node.end_lineno or node.lineno
    if start > 0 and end < len(lines) and not lines[start - 1].strip() and not lines[end].strip():
        end += 1  # one blank line between the neighbours, not two
    return "".join(lines[:start] + lines[end:])


def scaffolded_tasks(package: Path, folder: str) -> dict[str, tuple[str, ...]] | None:
    """{task: its packages} of the folder of tasks `package`, when its __init__.py is exactly
    folder_declaration's text for them and every task's subpackage is there; else None (a
    bundled folder, a single challenge's folder, an __init__.py edited by hand)."""
    try:
        text = (package / "__init__.py").read_text(encoding="utf-8")
        module = ast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    for node in module.body:
        if isinstance(node, ast.Assign) and [getattr(target, "id", None) for target in node.targets] == [DECLARATION]:
            try:
                tasks = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError):
                return None
            if not (isinstance(tasks, dict) and tasks and all(
                    isinstance(name, str) and NAME_PATTERN.fullmatch(name) and folder_for(name) == folder
                    and name != folder and isinstance(packages, tuple) and packages
                    and all(isinstance(p, str) and p for p in packages) for name, packages in tasks.items())):
                return None
            if folder_declaration(folder, tasks) != text:
                return None
            if not all((package / task_module(name) / "__init__.py").is_file() for name in tasks):
                return None
            return tasks
    return None


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


def existing_folder(root: Path, folder: str) -> bool:
    """Whether evaluation/challenges/<folder> is there (a stale cache of one is not: replaced)."""
    package = root / "evaluation" / "challenges" / folder
    return os.path.lexists(package) and not stale_cache(package)


def leftovers(name: str, folder: str, root: Path, ours: Collection[Path] = ()) -> list[str]:
    """What stands in the way of a scaffold of `name`, relative to `root`: its new paths that
    exist already (but a package folder that is only a stale cache, which is replaced, and the
    page and folder a task is added to) and scratch folders of a scaffold of the same name (one
    killed, or one running now), except `ours`."""
    package = Path("evaluation", "challenges", folder)
    adding = name != folder and existing_folder(root, folder)
    replaced = {package, Path("docs", "challenges", page_for(name))} if adding else set()
    found = [path for path in new_paths(name, folder) if os.path.lexists(root / path) and path not in replaced
             and not (path == package and stale_cache(root / path))]
    scratch = re.compile(re.escape(scratch_prefix(name)) + r"[a-z0-9_]{8}")
    for parent in {Path("."), *(path.parent for path in new_paths(name, folder))}:
        with contextlib.suppress(OSError):
            found += [parent / entry.name for entry in os.scandir(root / parent)
                      if scratch.fullmatch(entry.name) and root / parent / entry.name not in ours]
    return [path.as_posix() for path in found]


def check_name(name: str, root: Path = ROOT, ours: Collection[Path] = ()) -> str:
    """The folder of a new challenge `name`, or a UsageError saying why it cannot be added
    (`ours`: this run's own scratch folders). A name with a "-" whose folder exists is a task
    added to that folder: only to a folder of tasks the scaffold wrote (scaffolded_tasks), and
    only under a name and subpackage it does not hold."""
    if len(name) > NAME_LENGTH or not NAME_PATTERN.fullmatch(name):
        raise UsageError(f"{name!r} is not a challenge name: use lowercase letters and digits, starting with a letter, "
                      f"with '-' between parts and '_' only before the first '-' (e.g. acme2027 or acme2027-task1), "
                      f"at most {NAME_LENGTH} characters.")
    folder = folder_for(name)
    if keyword.iskeyword(folder) or not folder.isidentifier():
        raise UsageError(f"{name!r} cannot be a challenge name: its folder {folder!r} is not a Python package name.")
    folders = challenge_folders()
    package = root / "evaluation" / "challenges" / folder
    if name == folder and folder in folders:
        raise UsageError(f"The folder evaluation/challenges/{folder}/ exists already; a new challenge named as its "
                         f"folder gets a folder of its own.")
    if name != folder and (folder in folders or existing_folder(root, folder)):
        tasks = scaffolded_tasks(package, folder)
        if tasks is None:
            raise UsageError(f"{name} cannot be added to evaluation/challenges/{folder}/, which exists already: the "
                             f"scaffold adds a task only to a folder of tasks it wrote (as {folder}-task1) whose "
                             f"__init__.py is unchanged, and this one is not (a bundled challenge's, the challenge "
                             f"{folder}'s, or edited by hand); add {name} to it by hand (docs/adding-a-challenge.md), "
                             f"or pick another folder.")
        if name in tasks or os.path.lexists(package / task_module(name)):
            raise UsageError(f"evaluation/challenges/{folder}/ holds the task {name} already "
                             f"({task_module(name)}/); pick another name.")
        same_class = [task for task in tasks if class_name(task) == class_name(name)]
        if same_class:  # acme-x-1 and acme-x1 are both AcmeX1: one import would hide the other
            raise UsageError(f"{name} cannot be added to evaluation/challenges/{folder}/: its class "
                             f"{class_name(name)} would be the task {same_class[0]}'s; pick another name.")
    else:
        for existing in folders:
            # The run imports the folder whose name is the longest prefix of the challenge's name:
            # a new folder that prefixes an existing name, or is prefixed by an existing folder,
            # would make one name ambiguous to read.
            if folder.startswith(existing) or existing.startswith(folder):
                raise UsageError(f"{name!r} cannot be added: its folder {folder!r} and the existing folder "
                                 f"{existing!r} start alike, so a challenge name could be looked up in the wrong "
                                 f"one; pick a name that starts differently.")
    taken = leftovers(name, folder, root, ours)
    if taken:
        raise UsageError(f"{', '.join(taken)} exist{'s' if len(taken) == 1 else ''} already (from an earlier or "
                         f"interrupted scaffold of {name}?); remove {'it' if len(taken) == 1 else 'them'}, or pick "
                         f"another name.")
    return folder


def rendered(template: str, name: str, folder: str) -> dict[str, str]:
    """{file name: text} of the template's files with the challenge's names filled in. For a
    task of a folder of tasks (a NAME with "-"), the package is the task's subpackage, and its
    __init__.py loses RUNTIME_PACKAGES (the folder's __init__.py declares it: task_packages)."""
    module = folder if name == folder else f"{folder}.{task_module(name)}"
    values = {"evaluation/challenges/__PACKAGE__/": f"evaluation/challenges/{module.replace('.', '/')}/",
              "docs/challenges/__PACKAGE__.md": f"docs/challenges/{page_for(name)}",
              "__PACKAGE__": module, "__NAME__": name, "__CLASS__": class_name(name),
              "__TITLE__": f"{name}: {TITLES[template]}"}
    files = {}
    for path in sorted((TEMPLATE_DIR / template).glob("*.tmpl")):
        text = path.read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace(key, value)
        files[path.name.removesuffix(".tmpl")] = text
    if name != folder:
        node, _ = declared_packages(files["__init__.py"], f"evaluation/new/templates/{template}/__init__.py.tmpl")
        files["__init__.py"] = without_declaration(files["__init__.py"], node)
    return files


def task_packages(template: str) -> tuple[str, ...]:
    """The packages the template's declaration installs (its RUNTIME_PACKAGES)."""
    where = f"evaluation/new/templates/{template}/__init__.py.tmpl"
    return declared_packages((TEMPLATE_DIR / template / "__init__.py.tmpl").read_text(encoding="utf-8"), where)[1]


def tree_bytes(path: Path) -> dict[str, bytes] | None:
    """{relative path: bytes} of every file under `path` (a file: {"": bytes}), Python's caches
    left out; None if missing: what an added task must find unchanged before it replaces it."""
    if not os.path.lexists(path):
        return None
    if not path.is_dir() or path.is_symlink():
        return {"": path.read_bytes()}
    return {file.relative_to(path).as_posix(): file.read_bytes() for file in sorted(path.rglob("*"))
            if file.is_file() and "__pycache__" not in file.relative_to(path).parts}


BUILD_GRACE = 10.0  # seconds the build process has to end its own children and clean up after SIGTERM


def scaffold(name: str, template: str, root: Path = ROOT) -> list[Path]:
    """Write the challenge; the paths written (relative to `root`). A UsageError before anything is written."""
    if template not in TEMPLATES:
        raise UsageError(f"Unknown template {template!r}; the templates are {', '.join(TEMPLATES)}.")
    if template not in TITLES:
        raise InternalError(f"The template {template} (evaluation/new/templates/{template}/) has no title in "
                            f"evaluation/new/__init__.py's TITLES.")
    check_checkout(root)
    folder = check_name(name, root)
    files = rendered(template, name, folder)
    package, page = root / "evaluation" / "challenges" / folder, root / "docs" / "challenges" / page_for(name)
    # The folder and page a task is added to, as they were: what is replaced must not have changed
    # meanwhile (an editor saving a file), and is put back as it was if anything fails.
    adding = name != folder and existing_folder(root, folder)
    before = {package: tree_bytes(package), page: tree_bytes(page)} if adding else {}
    try:
        with scratch_folder(root, scratch_prefix(name)) as scratch:
            build_in(root, scratch, name, template, folder, files, adding)
            targets = new_paths(name, folder)
            sources = {Path("evaluation", "challenges", folder): scratch / "evaluation" / "challenges" / folder}
            put_in_place(root, scratch, {target: sources.get(target, scratch / target) for target in targets}, name,
                         folder, before)
            return targets
    except OSError as error:
        if not machine_error(error):
            raise
        where = f" ({error.filename})" if error.filename else ""
        raise NotWritten(f"The challenge {name} could not be written into {root}: {error.strerror}{where}; nothing "
                         f"was written.") from None


def build_in(root: Path, scratch: Path, name: str, template: str, folder: str, files: dict[str, str],
             adding: bool = False) -> None:
    """The new challenge's folder, page and data, in `scratch`: a copy of the evaluation package
    with the new folder (or the task added to its folder) in it, whose own commands
    (evaluation.new.build, run in a process of its own) write ground-truth/NAME and test/NAME there."""
    copy_tree(root / "evaluation", scratch / "evaluation", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    package = scratch / "evaluation" / "challenges" / folder
    if not adding:
        shutil.rmtree(package, ignore_errors=True)  # a stale cache's folder, copied empty
        package.mkdir()
    files = dict(files)
    doc = files.pop("doc.md")
    if name == folder:
        code = package
    else:
        tasks = scaffolded_tasks(package, folder) if adding else {}
        if tasks is None:  # the copy is not what check_name read: changed meanwhile
            raise UsageError(f"evaluation/challenges/{folder}/ changed while {name} was being added; nothing was "
                             f"written, run the command again.")
        code = package / task_module(name)
        code.mkdir()
        (package / "__init__.py").write_text(folder_declaration(folder, {**tasks, name: task_packages(template)}),
                                             encoding="utf-8")
    for file_name, text in files.items():
        (code / file_name).write_text(text, encoding="utf-8")
    page = root / "docs" / "challenges" / page_for(name)
    if adding and os.path.lexists(page):  # the folder's page: the new task's section after the others
        doc = page.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + doc
    (scratch / "docs" / "challenges").mkdir(parents=True)
    (scratch / "docs" / "challenges" / page_for(name)).write_text(doc, encoding="utf-8")
    (scratch / "tmp").mkdir()
    # The example, its test data and its leaderboard teams, by the real commands, in a process
    # that imports the scratch copy of the package (with the new folder in it); its temporary
    # files in the scratch folder too, so that nothing of it can outlive this command.
    env = {**os.environ, "PYTHONPATH": str(scratch), "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": str(scratch / "tmp")}
    run = run_child([sys.executable, "-m", "evaluation.new.build", name], grace=BUILD_GRACE, cwd=scratch, env=env,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Its paths are the scratch copy's, gone at the end: shown as the repository's, where they go.
    sys.stdout.write(run.stdout.replace(str(scratch), str(root)))
    if run.returncode == NotWritten.exit_code:  # the machine's (evaluation/new/build.py): its own line
        lines = run.stdout.strip().splitlines()
        raise NotWritten(f"The challenge {name} could not be written into {root}: {lines[-1] if lines else ''}")
    if run.returncode < 0:  # killed from outside (the out-of-memory killer, say): never the template's bug
        raise NotWritten(f"The build of the challenge {name} was killed (signal {-run.returncode}) by the machine or "
                         f"another program (its memory limit?); nothing was written.")
    if run.returncode != 0:
        raise InternalError(f"The new challenge {name} failed to make its own example (exit {run.returncode}, "
                            f"output above): a bug of the {template} template; nothing was written.")
    for cache in sorted(package.rglob("__pycache__"), reverse=True):
        shutil.rmtree(cache, ignore_errors=True)


def put_in_place(root: Path, scratch: Path, sources: dict[Path, Path], name: str, folder: str,
                 before: dict[Path, dict[str, bytes] | None]) -> None:
    """Each source of `sources` ({path relative to root: where it was built}) put at its path,
    all or none. Each is first moved into a scratch folder beside its path (a rename, or a copy
    when that folder is on another file system: ground-truth/ on a disk of its own, say), so
    that the last step is renames within each folder, done together with SIGTERM held back and
    undone if one fails (evaluation.interruption.install); what they replace (a stale cache; the
    folder and page a task is added to, `before`, checked unchanged) goes into the scratch folder
    beside it, put back if one fails. The scratch folders go at the end."""
    staged, made = [], []
    try:
        for target, source in sources.items():
            parent = root / target.parent
            missing = [p for p in (parent, *parent.parents) if not os.path.lexists(p)]  # innermost first
            parent.mkdir(parents=True, exist_ok=True)
            made[:0] = missing
            with held():  # made and recorded together: a SIGTERM between the two would leave it behind
                beside = Path(tempfile.mkdtemp(prefix=scratch_prefix(name), dir=parent))
                staged.append(beside)
            move(source, beside / target.name)  # a rename, or a copy onto another file system
        check_name(name, root, ours={scratch, *staged})  # still free: nothing appeared meanwhile
        changed = [path.relative_to(root).as_posix() for path, old in before.items() if tree_bytes(path) != old]
        if changed:
            raise UsageError(f"{', '.join(changed)} changed while {name} was being added; nothing was written, run the "
                             f"command again.")
        # A stale cache in the package folder's place (stale_cache) goes into the package's
        # scratch folder beside it, removed at the end; anything else there is never replaced
        # but the folder and page a task is added to.
        package = root / "evaluation" / "challenges" / folder
        replaced = {path for path, old in before.items() if old is not None}
        if stale_cache(package):
            replaced.add(package)
        install([(beside / target.name, root / target) for beside, target in zip(staged, sources, strict=True)],
                staged, replace=replaced, last=True)
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


def code_paths(name: str, folder: str) -> list[Path]:
    """The challenge's own code, relative to the repository: its folder, or its task's subpackage
    and the folder's __init__.py declaring it."""
    package = Path("evaluation", "challenges", folder)
    return [package] if name == folder else [package / task_module(name), package / "__init__.py"]


def written_message(name: str, folder: str, root: Path = ROOT) -> str:
    """The scaffold's last message: where everything is (absolute paths, each there now) and the
    next commands, to run from the repository."""
    paths = [*code_paths(name, folder), *new_paths(name, folder)[:3]]
    shown = "\n".join(f"  {root / path}" for path in paths)
    return (f"Wrote the challenge {name} into {root}:\n{shown}\n"
            f"Next, from {root}: run its example,\n"
            f"  python -m evaluation {name} --ground-truth ground-truth/{name} --input test/{name}/input "
            f"--output /tmp/{name}-out\n"
            f"then its tests (the generic tests pick it up); then edit its code (docs/adding-a-challenge.md).\n"
            f"  ./run-tests.sh -k {folder}")


def _main(argv: list[str] | None) -> int:
    titles = "; ".join(f"{template}: {TITLES.get(template, '(no title)')}" for template in TEMPLATES)
    parser = CommandParser(
        prog="python -m evaluation.new",
        description="Write a new, working challenge NAME from a template: its code in evaluation/challenges/<folder>/ "
                    "(NAME without '-': the folder is the challenge, its __init__.py the declaration, beside it "
                    "scoring.py and examples.py; NAME with '-': a folder of tasks, the task in the subpackage "
                    "<folder>/<NAME with _ for ->/), its synthetic ground truth ground-truth/NAME/, its test example "
                    "test/NAME/ (input/, expected_metrics.json, invalid/, leaderboard/, made by running the "
                    "evaluation) and docs/challenges/<folder>.md. A NAME with '-' whose folder the scaffold wrote "
                    "as a folder of tasks ADDS a task to it, with any template (its __init__.py rewritten for all "
                    "tasks, the page appended); otherwise no existing file changes. Every command and generic test "
                    "picks it up. Then edit the code (docs/adding-a-challenge.md).",
        epilog="<folder> is NAME up to its first '-' (acme2027-task1 and acme2027-task2 live in acme2027/). Exit "
               "codes: 0 written; 2 refused (bad or taken NAME, a folder that is not a folder of tasks the scaffold "
               "wrote, unknown template), nothing written; 3 the repository cannot be written (no space left), "
               "nothing written; 4 the generated challenge failed its own run (a bug), nothing written; 143 stopped "
               "by SIGTERM, nothing written. A failed or stopped addition of a task leaves its folder and page as "
               "they were.")
    parser.add_argument("name", metavar="NAME", help="the challenge's name, e.g. acme2027, or acme2027-task1 for a "
                                                     "folder of tasks")
    parser.add_argument("--template", required=True, metavar="TEMPLATE",
                        help=f"the kind of challenge, a folder of evaluation/new/templates/ ({titles})")
    args = parser.parse_args(argv)
    scaffold(args.name, args.template)  # UsageError: refused, nothing written (exit 2)
    print(written_message(args.name, folder_for(args.name)), flush=True)
    return 0
