"""A test example for the organizer's own ground truth, laid out as test/<challenge>/ is:

    python -m evaluation.examples CHALLENGE --ground-truth GT --output DIR [--seed N] [--force]

    DIR/input/                            a valid submission, as the platform lays it out
    DIR/expected_metrics.json             the metrics.json the evaluation wrote for it
    DIR/invalid/<name>/input/             invalid submissions (exit 1 expected) ...
    DIR/invalid/<name>/expected_error.txt ... and the last stderr line each ends with
    DIR/leaderboard/<team>/               when DIR has a leaderboard/ (test/CHALLENGE/ has): the final
                                          ranking's example teams (leaderboard_teams.py)

`./test.sh CHALLENGE` runs the image on these once DIR is test/CHALLENGE and GT is
ground-truth/CHALLENGE. Every run is the image's command line (`python -m evaluation CHALLENGE
--input ... --ground-truth ... --output ...`) in a process of its own (evaluation.interruption.
run_child: ended with the command, its worker processes too).

Safe by construction: the ground truth is only read (check_places refuses, before anything is
written, an output inside the ground truth and a ground truth inside, equal to or holding what
would be replaced, links followed both ways); the things above are built in a scratch folder
inside DIR and replace the old ones only once all is done, by renames with SIGTERM held back,
all or none (evaluation.interruption.install), and only with --force (any other file in DIR is
left alone). A SIGTERM before that (exit 143), a full disk (exit 3) or any failure leaves DIR as
it was and no scratch folder. Every file path the submission writers make from a name of the
ground truth or of its config.json (a slide, a socket) is checked as a submission's own names
are, before anything is written. Exit codes: 0 done; 2 bad arguments or refused; 3 the ground
truth or its config.json is unusable (the evaluation's own one-line reason, or the name and the
file it comes from), or DIR cannot be written (no space left, read-only); 4 the generated
examples are wrong (a bug of evaluation/examples); 143 stopped by SIGTERM.

The synthetic example (`--out DIR`, write_synthetic_example) is made the same way: in a scratch
folder inside DIR, then DIR/ground-truth and DIR/input replace the old ones; a DIR holding
anything is refused without --force.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation.errors import (
    EXIT_SETUP,
    EXIT_SUBMISSION,
    EXIT_TERMINATED,
    EvaluationError,
    InternalError,
    NotWritten,
    SetupError,
    UsageError,
    machine_limit,
)
from evaluation.interruption import copy_tree, held, install, machine_error, remove_tree, run_child, scratch_folder

INPUT, INVALID, EXPECTED_METRICS = "input", "invalid", "expected_metrics.json"
OUTPUTS = (INPUT, INVALID, EXPECTED_METRICS)  # the only things the command writes (or removes) in DIR
LEADERBOARD = "leaderboard"  # ... and this one, when DIR has it: the final ranking's teams (test/<challenge>/)
SYNTHETIC_OUTPUTS = ("ground-truth", INPUT)  # the same, for the synthetic example (--out DIR)
EXPECTED_ERROR = "expected_error.txt"
MISSING_CASE = "missing-case"  # the invalid submission every algorithm-job phase gets
PACKAGE_PARENT = Path(__file__).resolve().parents[2]  # the folder holding the evaluation package

Changes = dict[str, dict[str, bytes | None]]  # {name: {relative path: new bytes, or None to delete}}


# Every refusal is raised before anything in DIR is changed, except for the scratch folder
# (removed): UsageError (2) for bad arguments or a refused place, GroundTruthError (3), and
# InternalError (4) when what evaluation/examples wrote is not what it should be.


class GroundTruthError(SetupError):
    """The organizer's ground truth cannot be used: the message is the whole line, naming the
    ground truth and the step that stopped on it."""

    framed = True


def not_written(error: OSError, output: Path) -> NotWritten:
    reason = error.strerror or str(error)
    where = f" ({error.filename})" if error.filename else ""
    return NotWritten(f"The example could not be written to {output}: {reason}{where}; nothing was changed there.")


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str
    metrics: bytes | None  # metrics.json as written, if any

    @property
    def last_error_line(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return lines[-1].strip() if lines else ""


def say(message: str) -> None:
    print(message, flush=True)


# ---- the command ----------------------------------------------------------------------------


def make_organizer_example(challenge: str, ground_truth: Path, output: Path, seed: int = 0,
                           force: bool = False) -> None:
    """The example for the organizer's ground truth: the challenge's `submission` (perturbed
    from the ground truth, deterministic from `seed`), its invalid variants for any ground truth,
    plus "missing-case" for algorithm-job phases."""
    from evaluation.challenges import named_challenge
    from evaluation.examples import examples

    evaluation_class = named_challenge(challenge)
    example = examples().get(challenge)
    if example is None or example.submission is None:
        raise UsageError(f"The challenge {challenge} has no submission writer (Example.submission in "
                           f"evaluation/examples), so no example can be made for another ground truth.")
    ground_truth_dir = checked_ground_truth(evaluation_class, ground_truth)
    # A bundled example folder (test/<challenge>/) also holds the final ranking's example teams:
    # they belong to the ground truth too, so they are rewritten with the rest (a link there is
    # replaced, never followed).
    leaderboard = os.path.isdir(output / LEADERBOARD) or os.path.islink(output / LEADERBOARD)

    def invalid(input_dir: Path) -> Changes:
        if example.invalid_for_ground_truth is not None:
            changes = example.invalid_for_ground_truth(ground_truth_dir, input_dir)
        else:
            changes = example.invalid_examples(input_dir)
        generic = missing_case(input_dir)
        if generic is not None and MISSING_CASE not in changes:
            changes = {**changes, MISSING_CASE: generic}
        return changes

    write_example(challenge, ground_truth, output,
                  write_submission=lambda input_dir: example.submission(ground_truth_dir, input_dir, seed),
                  invalid_changes=invalid, force=force, leaderboard=leaderboard, last=True,
                  read=(ground_truth, ground_truth_dir))


def write_synthetic_example(challenge: str, out: Path, seed: int = 0, cases: int | None = None,
                            force: bool = False) -> None:
    """The synthetic example (evaluation.examples.synthesize) in out/ground-truth and out/input,
    built in a scratch folder inside `out` and moved in at the end. An `out` holding anything is
    refused unless `force`; then only those two are replaced, nothing else in `out` touched."""
    from evaluation.examples import synthesize

    out = Path(os.path.abspath(out))
    if os.path.lexists(out) and not out.is_dir():
        raise UsageError(f"The output {out} is not a folder.")
    try:
        names = sorted(path.name for path in out.iterdir()) if out.is_dir() else []
    except OSError as error:
        raise UsageError(f"The output folder {out} cannot be read ({error.strerror}).") from None
    if names and not force:
        raise UsageError(f"{out} is not empty (it holds {', '.join(names[:3])}{', ...' if len(names) > 3 else ''}); "
                           f"choose an empty or new folder, or rerun with --force to replace its "
                           f"{' and '.join(name + '/' for name in SYNTHETIC_OUTPUTS)} (nothing else in it is touched).")
    with output_folder(out) as scratch:
        generated(lambda: synthesize(challenge, scratch, seed=seed, cases=cases), "Writing the synthetic example")
        # only now: a failure above leaves the previous ones as they were
        put_in_place(scratch, out, SYNTHETIC_OUTPUTS, last=True)
    say(f"wrote {out / 'ground-truth'} and {out / INPUT}")


@contextlib.contextmanager
def output_folder(output: Path):
    """A scratch folder inside `output` (made if missing), removed at the end, and `output`
    with the folders made for it too if they are left empty (a failure leaves no trace). An
    OSError of the machine's inside (no space left, say) is NotWritten (exit 3)."""
    made = [folder for folder in (output, *output.parents) if not os.path.lexists(folder)]  # innermost first
    scratch = None
    try:
        try:
            # held: a SIGTERM between the scratch folder's making and this try would leave it behind
            with held():
                output.mkdir(parents=True, exist_ok=True)
                scratch = Path(tempfile.mkdtemp(prefix=".example-in-progress-", dir=output))
        except OSError as error:
            raise UsageError(f"The output folder {output} cannot be written ({error.strerror}).") from None
        yield scratch
    except OSError as error:
        if not machine_error(error):
            raise
        raise not_written(error, output) from None
    finally:
        if scratch is not None:
            remove_tree(scratch)
        remove_made(made)


def remove_made(made: Iterable[Path]) -> None:
    """The folders of `made` (innermost first) that are empty, up to the first that is not;
    SIGTERM held back meanwhile."""
    with held():
        for folder in made:
            try:
                if any(folder.iterdir()):
                    break
                folder.rmdir()
            except OSError:
                break


def put_in_place(scratch: Path, output: Path, names: Sequence[str], last: bool = False) -> None:
    """scratch/<name> replaces output/<name> for each of `names`, by renames, all or none, SIGTERM
    held back meanwhile (evaluation.interruption.install); the old ones end in the scratch
    folder, removed with it."""
    trash = scratch / ".replaced"
    trash.mkdir()
    install([(scratch / name, output / name) for name in names], trash, last=last)


def checked_ground_truth(challenge_class, ground_truth: Path) -> Path:
    """The ground-truth folder the evaluation reads (GT, or GT/<challenge>/ as the image looks
    into), validated by constructing the challenge's Evaluation on it: its config.json and
    case-mapping.json apply; a bad one is GroundTruthError with the evaluation's reason."""
    from evaluation.platform.locations import resolve_ground_truth_dir

    if not ground_truth.is_dir():
        raise UsageError(f"The ground-truth folder {ground_truth} does not exist or is not a folder.")
    say(f"Checking the ground truth in {ground_truth} ...")
    try:
        directory = resolve_ground_truth_dir(ground_truth, challenge_class.name)
        challenge_class(directory)  # settings from its config.json, its case mapping, its cases
    except EvaluationError as error:
        raise GroundTruthError(f"The ground truth in {ground_truth} cannot be used: {error.message}") from None
    return directory


def write_bundled_example(challenge: str, ground_truth: Path, example: Path) -> None:
    """A challenge's bundled example, all of it: its synthetic ground truth (seed 0) in
    `ground_truth`, replacing what is there, and its test example in `example` (OUTPUTS: the
    synthetic submission, its metrics.json, its invalid examples; and LEADERBOARD, the final
    ranking's teams, when its Example declares a lineup), each replaced whole, so that nothing
    stale of an earlier version stays (scripts/make_example.py, evaluation.new)."""
    from evaluation import examples

    leaderboard = examples.example(challenge).lineup is not None
    with scratch_folder() as scratch:
        examples.synthesize(challenge, Path(scratch), seed=0)
        if os.path.lexists(ground_truth):
            if ground_truth.is_dir() and not ground_truth.is_symlink():
                shutil.rmtree(ground_truth)
            else:
                ground_truth.unlink()
        copy_tree(Path(scratch) / "ground-truth", ground_truth)
        write_example(challenge, ground_truth, example,
                      write_submission=lambda input_dir: copy_tree(Path(scratch) / "input", input_dir,
                                                                   dirs_exist_ok=True),
                      invalid_changes=lambda input_dir: examples.invalid_examples(challenge, input_dir),
                      force=True, leaderboard=leaderboard)


def write_example(challenge: str, ground_truth: Path, output: Path, write_submission: Callable[[Path], None],
                  invalid_changes: Callable[[Path], Changes], force: bool = False, leaderboard: bool = False,
                  last: bool = False, read: Sequence[Path] = ()) -> None:
    """Write OUTPUTS into `output`: the submission `write_submission(input_dir)` writes, the
    metrics.json of its run, and each of `invalid_changes(input_dir)` applied to a copy with the
    last stderr line of its run (which must exit 1); with `leaderboard`, LEADERBOARD too, the
    final ranking's teams. Built in a scratch folder in `output`, moved in at the end, all or
    none (`last`: the command's last step, a SIGTERM after it ignored); existing ones are refused
    unless `force`. The ground truth and the folders of `read` are never written (check_places)."""
    ground_truth, output = Path(os.path.abspath(ground_truth)), Path(os.path.abspath(output))
    outputs = (*OUTPUTS, LEADERBOARD) if leaderboard else OUTPUTS
    check_places((ground_truth, *read), output, outputs, force)
    with output_folder(output) as scratch:
        build(challenge, ground_truth, scratch, write_submission, invalid_changes)
        if leaderboard:
            from evaluation.examples.leaderboard_teams import write_leaderboard
            from evaluation.platform.locations import resolve_ground_truth_dir

            # The teams are made from the new example (the scratch's input/ and invalid/).
            write_leaderboard(challenge, scratch / LEADERBOARD, resolve_ground_truth_dir(ground_truth, challenge),
                              scratch)
        put_in_place(scratch, output, outputs, last=last)  # only now: a failure above leaves the old ones
    say(f"Done. The whole metrics.json is {output / EXPECTED_METRICS}; the valid submission {output / INPUT}; the "
        f"invalid ones, each with its expected_error.txt, {output / INVALID}"
        + (f"; the final ranking's teams {output / LEADERBOARD}." if leaderboard else "."))


def inside(path: Path, folder: Path) -> bool:
    """`path` is `folder` or lies inside it (both real paths)."""
    return path == folder or folder in path.parents


def reached_from(folder: Path) -> tuple[set[Path], set[Path]]:
    """(the real folders, the real files) reading `folder` may reach: the folder itself, and
    every folder or file a link in it leads to, links inside those followed too (each folder
    once)."""
    folders, files = set(), set()
    pending = [Path(os.path.realpath(folder))]
    while pending:
        current = pending.pop()
        if current in folders:
            continue
        folders.add(current)
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_symlink():
                    target = Path(os.path.realpath(entry.path))
                    if target.is_dir():
                        pending.append(target)
                    else:
                        files.add(target)
                elif entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
            except OSError:
                continue
    return folders, files


def check_places(read: Sequence[Path], output: Path, outputs: Sequence[str], force: bool) -> None:
    """Refused before anything is written: an output inside a folder of `read` (the ground
    truth), a folder of `read` inside, equal to or holding one of `outputs` (what would be
    replaced: output/<name>, and where a link there leads), each with links followed (a link in
    the ground truth into the output, a ground truth that is a link); and, without --force,
    existing outputs."""
    output_real = Path(os.path.realpath(output))
    replaced = []
    for name in outputs:
        entry = output_real / name
        replaced.append((entry, entry))
        if os.path.islink(entry):
            replaced.append((entry, Path(os.path.realpath(entry))))
    for truth in dict.fromkeys(read):
        folders, files = reached_from(truth)
        for folder in sorted(folders):
            if inside(output_real, folder):
                raise UsageError(f"The output folder {output} is inside the ground-truth folder {truth}"
                                 + ("" if folder == Path(os.path.realpath(truth)) else f" (at {folder}, through a "
                                    f"link)") + "; choose a folder outside it (the ground truth is never written to).")
        for place in sorted(folders | files):
            through = "" if place == Path(os.path.realpath(truth)) else f" (at {place}, through a link)"
            for entry, real in replaced:
                link = "" if real == entry else f" (a link to {real})"
                if inside(place, real):
                    raise UsageError(f"The ground-truth folder {truth}{through} is, or is inside, {entry}{link}, "
                                     f"which this command replaces; move it elsewhere (the ground truth is never "
                                     f"written to).")
                if inside(real, place):
                    raise UsageError(f"{entry}, which this command replaces, is a link into the ground-truth folder "
                                     f"{truth}{through}; remove the link (the ground truth is never written to).")
    if os.path.exists(output) and not output.is_dir():
        raise UsageError(f"The output {output} is not a folder.")
    existing = [name for name in outputs if os.path.lexists(output / name)]
    if existing and not force:
        raise UsageError(f"{output} already holds {', '.join(existing)}; rerun with --force to replace "
                           f"{'it' if len(existing) == 1 else 'them'} (nothing else in {output} is touched).")


def build(challenge: str, ground_truth: Path, scratch: Path, write_submission: Callable[[Path], None],
          invalid_changes: Callable[[Path], Changes]) -> None:
    from evaluation.challenges import available_challenges

    input_dir = scratch / INPUT
    started = time.perf_counter()
    say(f"Writing a valid submission to {input_dir.name}/ ...")
    input_dir.mkdir()
    generated(lambda: write_submission(input_dir), "Writing the valid submission")
    files = sum(1 for path in input_dir.rglob("*") if path.is_file())
    say(f"Wrote {files} file(s) in {time.perf_counter() - started:.1f} s; evaluating it "
        f"(python -m evaluation {challenge}) ...")
    run = run_evaluation(challenge, input_dir, ground_truth)
    if run.code != 0 or run.metrics is None:
        raise InternalError(f"The evaluation refused the generated submission (exit {run.code}), a bug of "
                          f"evaluation/examples: {run.last_error_line}")
    (scratch / EXPECTED_METRICS).write_bytes(run.metrics)
    show_ranked_values(json.loads(run.metrics), available_challenges()[challenge].ranked_paths)

    changes = generated(lambda: checked_changes(invalid_changes(input_dir)), "Making the invalid submissions")
    (scratch / INVALID).mkdir()
    for name, edits in sorted(changes.items()):
        case = scratch / INVALID / name
        copy_tree(input_dir, case / INPUT, symlinks=True)
        apply_changes(case / INPUT, edits)
        run = run_evaluation(challenge, case / INPUT, ground_truth)
        if run.code != EXIT_SUBMISSION or run.metrics is not None or not run.last_error_line:
            raise InternalError(f"The invalid submission {name!r} exited {run.code}, not 1 with a message and no "
                              f"metrics.json, a bug of evaluation/examples: {run.last_error_line or 'no message'}")
        (case / EXPECTED_ERROR).write_text(run.last_error_line + "\n", encoding="utf-8")
        say(f"Invalid submission {name}: exit 1, {run.last_error_line}")


def generated(make: Callable[[], Any], what: str) -> Any:
    """What a writer of evaluation/examples makes. What it prints (its own loading of the ground
    truth, logged once already; a library's warnings) is shown on stdout only if it fails, so
    stderr keeps the one line. A ground-truth file it is the first to read (a CAMELYON16 mask)
    and refuses is GroundTruthError; anything else is a bug, its traceback on stdout."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            return make()
    except EvaluationError as error:
        if printed.getvalue().strip():
            say(printed.getvalue().rstrip())
        raise GroundTruthError(f"{what} stopped on the ground truth: {error.message}") from None
    except Exception as error:
        # No space left, out of memory or of file descriptors: the machine's (exit 3), not a bug.
        if machine_error(error) or machine_limit(error):
            raise
        raise_as_bug(error, printed, what)


def raise_as_bug(error: Exception, printed: io.StringIO, what: str) -> typing.NoReturn:
    say(printed.getvalue().rstrip())
    traceback.print_exception(error, file=sys.stdout)
    raise InternalError(f"{what} failed, a bug of evaluation/examples: {type(error).__name__}: {error}") from None


def checked_changes(changes: Changes) -> Changes:
    """The invalid submissions' names and the paths they change, checked as the valid one's
    (synthetic.checked): some are made from names of the ground truth."""
    from evaluation.platform import synthetic

    for name, edits in changes.items():
        synthetic.checked(name, "The name of an invalid submission")
        for relative in edits:
            synthetic.checked(relative, f"The invalid submission {name}")
    return changes


def apply_changes(input_dir: Path, edits: dict[str, bytes | None]) -> None:
    """Each relative path rewritten, or deleted (None) together with the folders that leaves
    empty: git keeps no empty folder, so a clone must fail the same way as this copy."""
    for relative, content in edits.items():
        target = input_dir / relative
        if content is None:
            target.unlink()
            for folder in target.parents:
                if folder == input_dir or any(folder.iterdir()):
                    break
                folder.rmdir()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)


def missing_case(input_dir: Path) -> dict[str, bytes | None] | None:
    """An algorithm-job submission without its last job: the job left out of predictions.json and
    its files deleted. None for a predictions-file submission (no predictions.json)."""
    path = input_dir / "predictions.json"
    if not path.is_file():
        return None
    jobs = json.loads(path.read_text(encoding="utf-8"))
    if len(jobs) < 1:
        return None
    dropped = jobs[-1]["pk"]
    edits: dict[str, bytes | None] = {"predictions.json": (json.dumps(jobs[:-1], indent=2) + "\n").encode()}
    for file in sorted((input_dir / dropped).rglob("*")):
        if file.is_file():
            edits[file.relative_to(input_dir).as_posix()] = None
    return edits


def run_evaluation(challenge: str, input_dir: Path, ground_truth: Path) -> Run:
    """The image's command line in a new process: python -m evaluation CHALLENGE --input ...
    --ground-truth ... --output <a temporary folder>."""
    env = {name: value for name, value in os.environ.items() if name != "EVALUATION_CHALLENGE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_PARENT), env.get("PYTHONPATH", "")) if p)
    with scratch_folder(prefix="example-run-") as out:
        command = [sys.executable, "-m", "evaluation", challenge, "--input", str(input_dir), "--ground-truth",
                   str(ground_truth), "--output", str(out)]
        # Its own process group, killed with its workers if this command is stopped meanwhile.
        done = run_child(command, cwd=PACKAGE_PARENT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        if done.returncode < 0 or done.returncode == EXIT_TERMINATED:
            # Killed from outside (the kernel's out-of-memory killer, a time limit), never a
            # verdict on the generated files: the machine's, exit 3.
            how = f"signal {-done.returncode}" if done.returncode < 0 else "SIGTERM"
            raise NotWritten(f"The evaluation of a generated submission was killed ({how}) before it ended, "
                             f"by the machine or another program (its memory limit?); nothing was changed.")
        metrics = out / "metrics.json"
        run = Run(done.returncode, done.stdout, done.stderr, metrics.read_bytes() if metrics.is_file() else None)
    if run.code == EXIT_SETUP:  # the ground truth, or the machine's limits: never a generated file's fault
        raise GroundTruthError(f"The evaluation of a generated submission ({input_dir.name}) stopped on the ground "
                               f"truth or the machine: {run.last_error_line}")
    return run


def show_ranked_values(document: dict, ranked_paths: tuple[str, ...]) -> None:
    """The numbers an organizer enters on the leaderboard (metrics.json path = value)."""
    from evaluation.platform.outputs import value_at_path

    say("Leaderboard values of the generated submission (metrics.json path = value):")
    for path in ranked_paths:
        value = value_at_path(document, path)
        finite = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not finite:  # metrics_json refuses to write such a file: never expected here
            raise InternalError(f"The ranked path {path} is {value!r}, not a finite number.")
        say(f"  {path} = {value}")
