"""The organizer's commands that write files, attacked as a careless organizer would (issue 27):
`python -m evaluation.examples`, `python -m evaluation.new`, `python -m evaluation.image_requirements`
and the evaluation's own --output. Every case runs the real command in a process of its own on real
files, links, mounts and processes:

- the ground truth is never written or deleted, whatever the layout: inside, equal to or holding
  what the examples command replaces, a link either way;
- SIGTERM at real moments (once a worker of the evaluation it runs exists, once its scratch folder
  exists, at random delays): exit 143 and one line, nothing partial, no scratch folder, nothing
  in the temporary folder, and no process left, checked exactly by running the command under a
  subreaper (tests/reaper.py), to which any process it leaves is re-parented;
- a second file system (a tmpfs in a private mount namespace, `unshare -m`): the scaffold's
  ground-truth/ elsewhere (the renames would cross file systems), and full disks: exit 3, one
  line, nothing written;
- a leftover __pycache__ and a half-installed challenge in the scaffold's way;
- malformed RUNTIME_PACKAGES declarations and unreadable files for image_requirements;
- the evaluation's --output inside what it reads: refused, as the other commands refuse it.
"""

from __future__ import annotations

import hashlib
import json
import os
import py_compile
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.examples import STOPPED as EXAMPLES_STOPPED
from evaluation.new import STOPPED as NEW_STOPPED
from tests.reaper import tree as snapshot  # every entry under a folder, links never followed
from tests.test_new import repository_copy

ROOT = Path(__file__).resolve().parents[1]
REAPER = ROOT / "tests" / "reaper.py"
WORKERS = 2  # every evaluation the commands run has worker processes to outlive it


def environment(tmp_path: Path, package: Path = ROOT) -> dict[str, str]:
    """The command's environment: its package first, its own temporary folder (checked empty
    after), no developer's EVALUATION_* settings but the workers."""
    temporary = tmp_path / "tmp"
    temporary.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALUATION_", "PYTHON"))}
    env.update(PYTHONPATH=str(package), TMPDIR=str(temporary), EVALUATION_WORKERS=str(WORKERS),
               PYTHONDONTWRITEBYTECODE="1")
    return env


_reports = iter(range(10**6))


def reaped(tmp_path: Path, command: list[str], *, cwd: Path = ROOT, env: dict[str, str] | None = None,
           term_after: float | None = None, term_when_path: str | None = None, term_when_depth: int | None = None,
           kill_at_depth: int | None = None, kill_match: str | None = None, trees: tuple[Path, ...] = (),
           devices: tuple[Path, ...] = (), mounts: str | None = None, timeout: float = 600) -> dict:
    """`command` run under tests/reaper.py (see there), inside a private mount namespace set up by
    the shell commands `mounts` when given; its report."""
    report = tmp_path / f"report-{next(_reports)}.json"
    argv = [sys.executable, str(REAPER), str(report), "--timeout", str(timeout)]
    for option, value in (("--term-after", term_after), ("--term-when-path", term_when_path),
                          ("--term-when-depth", term_when_depth), ("--kill-at-depth", kill_at_depth),
                          ("--kill-match", kill_match)):
        if value is not None:
            argv += [option, str(value)]
    for path in trees:
        argv += ["--tree", str(path)]
    for path in devices:
        argv += ["--device", str(path)]
    argv += ["--", *command]
    if mounts is not None:
        argv = ["unshare", "--mount", "--propagation", "private", "sh", "-ec", f'{mounts}\nexec "$@"', "sh", *argv]
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout + 120)
    assert done.returncode == 0 and report.exists(), done.stderr
    return json.loads(report.read_text())


def one_line(report: dict, code: int) -> str:
    """The command exited `code` with exactly one stderr line, no traceback; that line."""
    assert report["code"] == code, report["stderr"][-3000:]
    lines = [line for line in report["stderr"].splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in report["stderr"], report["stderr"][-3000:]
    return lines[0]


def no_process_left(report: dict) -> None:
    assert report["left"] == [], f"processes outlived the command: {report['left']}"


def content(folder: Path) -> dict[str, str]:
    """What reading `folder` gives, links followed (the ground truth as the evaluation reads it)."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def can_unshare() -> str | None:
    """None when a private mount namespace with a tmpfs can be made here, else why not."""
    if not shutil.which("unshare"):
        return "no unshare command"
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True, text=True)
    return None if done.returncode == 0 else f"cannot mount a tmpfs in a private namespace: {done.stderr.strip()}"


NAMESPACE_PROBLEM = can_unshare()
needs_namespace = pytest.mark.skipif(NAMESPACE_PROBLEM is not None, reason=str(NAMESPACE_PROBLEM))


def examples_command(*args) -> list[str]:
    return [sys.executable, "-m", "evaluation.examples", *map(str, args)]


# ---- 1. the examples command never deletes or writes the ground truth ----------------------------------

RARE26 = "rare26"


def bundled_example(target: Path, challenge: str = RARE26) -> Path:
    """A copy of test/<challenge>/ (input/, invalid/, expected_metrics.json and leaderboard/): the
    folder an organizer regenerates."""
    shutil.copytree(ROOT / "test" / challenge, target, symlinks=True)
    return target


def ground_truth_copy(target: Path, challenge: str = RARE26) -> Path:
    shutil.copytree(ROOT / "ground-truth" / challenge, target)
    return target


def _truth_is_leaderboard(base: Path) -> tuple[Path, Path]:
    out = bundled_example(base / "example")
    shutil.rmtree(out / "leaderboard")
    return ground_truth_copy(out / "leaderboard"), out


def _truth_inside_leaderboard(base: Path) -> tuple[Path, Path]:
    out = bundled_example(base / "example")
    return ground_truth_copy(out / "leaderboard" / "truth"), out


def _truth_is_invalid(base: Path) -> tuple[Path, Path]:
    out = bundled_example(base / "example")
    shutil.rmtree(out / "invalid")
    return ground_truth_copy(out / "invalid"), out


def _link_to_truth_inside_invalid(base: Path) -> tuple[Path, Path]:
    out = bundled_example(base / "example")
    truth = ground_truth_copy(out / "invalid" / "wrong-length" / "truth")
    (base / "truth-link").symlink_to(truth)
    return base / "truth-link", out


def _leaderboard_links_to_truth(base: Path) -> tuple[Path, Path]:
    out = bundled_example(base / "example")
    truth = ground_truth_copy(base / "truth")
    shutil.rmtree(out / "leaderboard")
    (out / "leaderboard").symlink_to(truth)
    return truth, out


def _leaderboard_links_above_truth(base: Path) -> tuple[Path, Path]:
    out = bundled_example(base / "example")
    truth = ground_truth_copy(base / "data" / "truth")
    shutil.rmtree(out / "leaderboard")
    (out / "leaderboard").symlink_to(base / "data")
    return truth, out


def _input_links_to_truth(base: Path) -> tuple[Path, Path]:
    out = bundled_example(base / "example")
    truth = ground_truth_copy(base / "truth")
    shutil.rmtree(out / "input")
    (out / "input").symlink_to(truth)
    return truth, out


def _truth_file_links_into_leaderboard(base: Path) -> tuple[Path, Path]:
    """The ground truth's one file kept in the example's leaderboard/, linked from the ground truth."""
    out = bundled_example(base / "example")
    truth = ground_truth_copy(base / "truth")
    kept = out / "leaderboard" / "kept" / "test_metadata.json"
    kept.parent.mkdir()
    (truth / "test_metadata.json").rename(kept)
    (truth / "test_metadata.json").symlink_to(kept)
    return truth, out


def _truth_file_links_to_expected_metrics(base: Path) -> tuple[Path, Path]:
    out = bundled_example(base / "example")
    truth = ground_truth_copy(base / "truth")
    (out / "expected_metrics.json").unlink()
    (truth / "test_metadata.json").rename(out / "expected_metrics.json")
    (truth / "test_metadata.json").symlink_to(out / "expected_metrics.json")
    return truth, out


def _output_inside_a_folder_linked_from_truth(base: Path) -> tuple[Path, Path]:
    truth = ground_truth_copy(base / "truth")
    (base / "elsewhere").mkdir()
    (truth / "more").symlink_to(base / "elsewhere")
    return truth, bundled_example(base / "elsewhere" / "example")


def _output_is_truth(base: Path) -> tuple[Path, Path]:
    truth = ground_truth_copy(base / "truth")
    return truth, truth


PLACES = {"truth-is-leaderboard": _truth_is_leaderboard, "truth-inside-leaderboard": _truth_inside_leaderboard,
          "truth-is-invalid": _truth_is_invalid, "link-to-truth-inside-invalid": _link_to_truth_inside_invalid,
          "leaderboard-links-to-truth": _leaderboard_links_to_truth,
          "leaderboard-links-above-truth": _leaderboard_links_above_truth,
          "input-links-to-truth": _input_links_to_truth,
          "truth-file-links-into-leaderboard": _truth_file_links_into_leaderboard,
          "truth-file-links-to-expected-metrics": _truth_file_links_to_expected_metrics,
          "output-inside-a-folder-linked-from-truth": _output_inside_a_folder_linked_from_truth,
          "output-is-truth": _output_is_truth}


# A ground-truth file that is a link out of its folder is refused by the evaluation's own reading
# of the ground truth (exit 3, the organizer's input), before the places are looked at.
REFUSED_AS_GROUND_TRUTH = {"truth-file-links-into-leaderboard", "truth-file-links-to-expected-metrics"}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_examples_never_replace_the_ground_truth(place, tmp_path):
    """The issue's case (--ground-truth OUT/leaderboard with --force replaced it by team-a ...
    team-x, exit 0) and every other direction: refused before anything is written (exit 2, one
    line naming the ground truth), the ground truth and everything around it as they were."""
    base = tmp_path / "base"
    base.mkdir()
    truth, out = PLACES[place](base)
    before, read = snapshot(base), content(truth)
    report = reaped(tmp_path, examples_command(RARE26, "--ground-truth", truth, "--output", out, "--force"),
                    env=environment(tmp_path))
    line = one_line(report, 3 if place in REFUSED_AS_GROUND_TRUTH else 2)
    assert "ground-truth folder" in line or "ground truth" in line, line
    assert snapshot(base) == before
    assert content(truth) == read
    no_process_left(report)


def test_a_link_in_the_leaderboard_is_replaced_never_followed(tmp_path):
    """A link to the ground truth inside OUT/leaderboard/ (which is replaced) is removed with the
    folder; the ground truth it leads to is untouched."""
    truth = ground_truth_copy(tmp_path / "truth")
    out = bundled_example(tmp_path / "example")
    (out / "leaderboard" / "truth-link").symlink_to(truth)
    read = content(truth)
    report = reaped(tmp_path, examples_command(RARE26, "--ground-truth", truth, "--output", out, "--force"),
                    env=environment(tmp_path))
    assert report["code"] == 0, report["stderr"]
    assert content(truth) == read
    assert sorted(p.name for p in (out / "leaderboard").iterdir()) == ["team-a", "team-b", "team-c", "team-d", "team-x"]
    no_process_left(report)


def test_a_leaderboard_link_elsewhere_is_replaced_by_the_teams(tmp_path):
    """OUT/leaderboard a link to a folder of the organizer's: with --force it is replaced (the
    link itself) by the teams' folder, the folder it led to untouched (it gave exit 4 after the
    other outputs had been replaced)."""
    mine = tmp_path / "mine"
    (mine / "notes").mkdir(parents=True)
    (mine / "notes" / "keep.txt").write_text("the organizer's\n")
    out = bundled_example(tmp_path / "example")
    shutil.rmtree(out / "leaderboard")
    (out / "leaderboard").symlink_to(mine)
    before = snapshot(mine)
    truth = ROOT / "ground-truth" / RARE26
    report = reaped(tmp_path, examples_command(RARE26, "--ground-truth", truth, "--output", out, "--force"),
                    env=environment(tmp_path))
    assert report["code"] == 0, report["stderr"]
    assert snapshot(mine) == before
    assert not (out / "leaderboard").is_symlink()
    assert sorted(p.name for p in (out / "leaderboard").iterdir()) == ["team-a", "team-b", "team-c", "team-d", "team-x"]
    no_process_left(report)


# ---- 2. the examples command stopped (SIGTERM) ------------------------------------------------------------

def stopped(report: dict, line: str) -> None:
    """A run stopped by SIGTERM: exit 143 and its one line; or, when the signal came while the
    interpreter was still starting (before the command could install its handler), killed by it
    (-15) before it wrote anything or said anything."""
    if report["code"] == -15:
        assert report["stderr"] == "" and report["stdout"] == "", report
    else:
        assert one_line(report, 143) == line


def assert_stopped_cleanly(report: dict, line: str, tmp_path: Path) -> None:
    assert report["signalled"]
    assert one_line(report, 143) == line
    no_process_left(report)
    assert list((tmp_path / "tmp").iterdir()) == []  # nothing of the runs left in the temporary folder


@pytest.fixture(scope="module")
def slow_task1(tmp_path_factory) -> Path:
    """A HECKTOR task 1 ground truth of 24 cases: each evaluation the command runs takes long
    enough, with worker processes, to be stopped while they run."""
    from evaluation.examples import synthesize

    folder = tmp_path_factory.mktemp("task1")
    synthesize("hecktor2025-task1", folder, seed=3, cases=24)
    return folder / "ground-truth"


def test_sigterm_while_a_worker_of_an_evaluation_runs(tmp_path, slow_task1):
    """SIGTERM once the evaluation the command runs has started its workers (a process two levels
    below the command): exit 143, one line, the old example and its leaderboard/ byte for byte,
    no scratch folder, no temporary folder left, and no process (the evaluation and its workers
    killed with it; they used to run on)."""
    out = bundled_example(tmp_path / "example", "hecktor2025-task1")
    before = snapshot(out)
    report = reaped(tmp_path, examples_command("hecktor2025-task1", "--ground-truth", slow_task1, "--output", out,
                                               "--force"), env=environment(tmp_path), term_when_depth=2)
    assert report["depth"] >= 2
    assert_stopped_cleanly(report, EXAMPLES_STOPPED, tmp_path)
    assert snapshot(out) == before


@pytest.mark.slow
def test_sigterm_at_random_moments_leaves_the_old_example_or_the_whole_new_one(tmp_path):
    """SIGTERM at seeded random moments across a whole run (scratch made, evaluations running,
    invalid submissions, leaderboard teams, the final renames): each run ends with exit 143 and
    the old example exactly, or exit 0 and the new one exactly; never a mix, never a scratch
    folder, never a process left."""
    truth = ROOT / "ground-truth" / RARE26
    reference = bundled_example(tmp_path / "reference")
    full = reaped(tmp_path, examples_command(RARE26, "--ground-truth", truth, "--output", reference, "--force"),
                  env=environment(tmp_path))
    assert full["code"] == 0, full["stderr"]
    new = snapshot(reference)
    old = snapshot(ROOT / "test" / RARE26)
    assert new != old
    draw = random.Random(27)  # one moment surely within the run, five anywhere in it
    moments = sorted([0.3 * full["seconds"], *(draw.uniform(0.05, 1.2 * full["seconds"]) for _ in range(5))])
    outcomes = []
    for number, moment in enumerate(moments):
        out = bundled_example(tmp_path / f"example-{number}")
        report = reaped(tmp_path, examples_command(RARE26, "--ground-truth", truth, "--output", out, "--force"),
                        env=environment(tmp_path), term_after=moment)
        no_process_left(report)
        assert list((tmp_path / "tmp").iterdir()) == []
        if report["code"] == 0:
            assert snapshot(out) == new, moment
        else:
            stopped(report, EXAMPLES_STOPPED)
            assert snapshot(out) == old, moment
        outcomes.append(report["code"])
    print(f"moments {[round(m, 2) for m in moments]} s of {full['seconds']:.2f} s: exits {outcomes}")
    assert set(outcomes) - {0}


@pytest.mark.parametrize("challenge", ["hecktor2025-task1", "camelyon16"])
def test_sigterm_during_out_leaves_nothing_and_a_rerun_works(challenge, tmp_path):
    """The issue's case: SIGTERM to `--out DIR` left its scratch folder, so the next `--out DIR`
    was refused (DIR not empty). Stopped once its scratch folder exists: nothing left, DIR (made
    by the command) gone; the same command then runs."""
    out = tmp_path / "synthetic"
    report = reaped(tmp_path, examples_command(challenge, "--out", out), env=environment(tmp_path),
                    term_when_path=str(out / ".example-in-progress-*"))
    assert_stopped_cleanly(report, EXAMPLES_STOPPED, tmp_path)
    assert not out.exists()
    again = reaped(tmp_path, examples_command(challenge, "--out", out), env=environment(tmp_path))
    assert again["code"] == 0, again["stderr"]
    assert sorted(p.name for p in out.iterdir()) == ["ground-truth", "input"]


def test_an_evaluation_killed_by_the_machine_is_exit_3(tmp_path, slow_task1):
    """The evaluation the command runs killed by SIGKILL (as the out-of-memory killer does): the
    machine's doing, exit 3 in one line (it was exit 4, "a bug of evaluation/examples"), the old
    example as it was, no process left."""
    out = bundled_example(tmp_path / "example", "hecktor2025-task1")
    before = snapshot(out)
    report = reaped(tmp_path, examples_command("hecktor2025-task1", "--ground-truth", slow_task1, "--output", out,
                                               "--force"), env=environment(tmp_path), kill_at_depth=1,
                    kill_match="-m evaluation hecktor2025-task1")
    assert report["killed"] and "-m evaluation hecktor2025-task1" in report["killed"][0]
    line = one_line(report, 3)
    assert line.startswith("The evaluation of a generated submission was killed (signal 9)"), line
    assert snapshot(out) == before
    assert list((tmp_path / "tmp").iterdir()) == []
    no_process_left(report)


# ---- 3. a full disk under the examples command -------------------------------------------------------------

def fill(mount: str, leave_kib: int) -> str:
    """Shell lines filling the file system at `mount` up to `leave_kib` KiB left free."""
    return (f"avail=$(df -k --output=avail {mount} | tail -1)\n"
            f"head -c $(( (avail - {leave_kib}) * 1024 )) /dev/zero > {mount}/filler 2>/dev/null || true\n")


@needs_namespace
@pytest.mark.parametrize("leave_kib", [0, 16, 64, 256])
def test_examples_on_a_full_disk_exit_3_and_keep_the_old_example(leave_kib, tmp_path):
    """The output folder on a tmpfs with the old example and `leave_kib` KiB free: the command
    stops where the disk is full (each size at another file), exit 3 in one line, and the disk
    holds the old example and nothing else, byte for byte."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounts = (f"mount -t tmpfs -o size=4m tmpfs {disk}\n"
              f"cp -a {ROOT / 'test' / RARE26} {disk}/example\n" + fill(str(disk), leave_kib))
    report = reaped(tmp_path, examples_command(RARE26, "--ground-truth", ROOT / "ground-truth" / RARE26, "--output",
                                               disk / "example", "--force"),
                    env=environment(tmp_path), mounts=mounts, trees=(disk,))
    line = one_line(report, 3)
    assert line.startswith(f"The example could not be written to {disk / 'example'}: No space left on device"), line
    assert report["after"][str(disk)] == report["before"][str(disk)]
    no_process_left(report)


# ---- 4. the scaffold: all or nothing ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    """A copy of the repository (its files as one commit of a new git repository) for the
    scaffolds of this module; each test adds and removes its own challenge."""
    return repository_copy(tmp_path_factory.mktemp("scaffold") / "repo")


def new_paths(name: str) -> list[str]:
    return [f"ground-truth/{name}", f"test/{name}", f"docs/challenges/{name}.md", f"evaluation/challenges/{name}"]


def scratch_folders(repository: Path) -> list[str]:
    found = []
    for parent in (".", "ground-truth", "test", "docs/challenges", "evaluation/challenges"):
        found += [f"{parent}/{p.name}" for p in (repository / parent).iterdir() if p.name.startswith(".new-")]
    return found


def installed(repository: Path, name: str) -> list[str]:
    return [path for path in new_paths(name) if os.path.lexists(repository / path)]


def remove_challenge(repository: Path, name: str) -> None:
    for path in new_paths(name):
        target = repository / path
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif os.path.lexists(target):
            target.unlink()


def new_command(name: str, template: str = "classification") -> list[str]:
    return [sys.executable, "-m", "evaluation.new", name, "--template", template]


def scaffold(tmp_path: Path, repository: Path, name: str, template: str = "classification", **options) -> dict:
    return reaped(tmp_path, new_command(name, template), cwd=repository, env=environment(tmp_path, repository),
                  **options)


@pytest.mark.slow
@needs_namespace
def test_new_with_ground_truth_on_another_file_system(tmp_path, repository):
    """ground-truth/ a file system of its own (a tmpfs bound over it in a private namespace): the
    move of ground-truth/NAME crossed file systems (EXDEV), exit 4 with evaluation/challenges/NAME
    already in place. Now: exit 0, all four paths, ground-truth/NAME on the tmpfs, no scratch."""
    name = "acmexdev"
    disk = tmp_path / "disk"
    disk.mkdir()
    truth = repository / "ground-truth"
    mounts = (f"mount -t tmpfs -o size=256m tmpfs {disk}\ncp -a {truth}/. {disk}/\n"
              f"mount --bind {disk} {truth}\n")
    report = scaffold(tmp_path, repository, name, mounts=mounts, trees=(truth,), devices=(truth, repository))
    assert report["code"] == 0, report["stderr"] + report["stdout"][-3000:]
    no_process_left(report)
    devices = report["devices"]
    assert devices[str(truth)] != devices[str(repository)]  # really another file system
    after = report["after"][str(truth)]
    assert f"{name}/reference.json" in after
    assert not [key for key in after if key.startswith(".new-")]
    # Outside the namespace the tmpfs is gone; the other three paths are in the repository.
    assert installed(repository, name) == new_paths(name)[1:]
    assert scratch_folders(repository) == []
    remove_challenge(repository, name)


@needs_namespace
@pytest.mark.parametrize("leave_kib", [0, 16])
def test_new_on_a_full_disk_writes_nothing(leave_kib, tmp_path, repository):
    """ground-truth/ on a full file system of its own, with no room or with room for part of the
    new ground truth (a segmentation template's, 8 masks, 36 KiB): exit 3, one line, nothing of
    the challenge anywhere, no scratch folder, no process."""
    name = f"acmefull{leave_kib}"
    disk = tmp_path / "disk"
    disk.mkdir()
    truth = repository / "ground-truth"
    mounts = (f"mount -t tmpfs -o size=64m tmpfs {disk}\ncp -a {truth}/. {disk}/\n" + fill(str(disk), leave_kib)
              + f"mount --bind {disk} {truth}\n")
    report = scaffold(tmp_path, repository, name, "segmentation", mounts=mounts, trees=(truth,))
    line = one_line(report, 3)
    assert line.startswith(f"The challenge {name} could not be written into {repository}: No space left on device")
    assert report["after"][str(truth)] == report["before"][str(truth)]
    assert installed(repository, name) == [] and scratch_folders(repository) == []
    no_process_left(report)


@needs_namespace
def test_new_with_the_repository_on_a_full_disk_writes_nothing(tmp_path, repository):
    """The whole repository on a full file system (64 KiB left): the copy of the evaluation
    package into the scratch folder fails first (shutil.copytree's shutil.Error carries no errno:
    it was exit 4, a bug): exit 3, one line, the repository as it was, no process."""
    name = "acmefullrepo"
    disk = tmp_path / "disk"
    disk.mkdir()
    mounts = (f"mount -t tmpfs -o size=256m tmpfs {disk}\ncp -a {repository}/. {disk}/\n" + fill(str(disk), 64)
              + f"mount --bind {disk} {repository}\ncd {repository}\n")
    report = scaffold(tmp_path, repository, name, mounts=mounts, trees=(repository,))
    line = one_line(report, 3)
    assert line.startswith(f"The challenge {name} could not be written into {repository}: No space left on device")
    assert report["after"][str(repository)] == report["before"][str(repository)]
    no_process_left(report)


def test_a_machine_limit_while_writing_an_example_is_the_machines(tmp_path):
    """Out of memory or of file descriptors while writing an example is the machine's limit
    (exit 3 and its line), not "a bug of evaluation/examples" (exit 4)."""
    import errno

    from evaluation.examples.organizer import generated
    from evaluation.launch import failure

    def fails(error):
        def make():
            raise error
        return make

    for error in (MemoryError(), OSError(errno.EMFILE, "Too many open files")):
        with pytest.raises(type(error)) as raised:
            generated(fails(error), "Writing the valid submission")
        code, line = failure(raised.value, "The example could not be made:", "the organizer")
        assert code == 3 and "machine's limit" in line, line


@pytest.mark.slow
def test_sigterm_while_the_scaffold_runs_an_evaluation_then_a_rerun_works(tmp_path, repository):
    """SIGTERM once the scaffold's build process runs an evaluation (two levels below it): exit
    143, one line, nothing written, no scratch folder, no process left (the build process and its
    evaluation used to run on); the same command then writes the challenge."""
    name = "acmeterm"
    report = scaffold(tmp_path, repository, name, term_when_depth=2)
    assert report["depth"] >= 2
    assert_stopped_cleanly(report, NEW_STOPPED, tmp_path)
    assert installed(repository, name) == [] and scratch_folders(repository) == []
    again = scaffold(tmp_path, repository, name)
    assert again["code"] == 0, again["stderr"]
    assert installed(repository, name) == new_paths(name)
    no_process_left(again)
    remove_challenge(repository, name)


@pytest.mark.slow
def test_sigterm_at_random_moments_installs_all_or_nothing(tmp_path, repository):
    """SIGTERM at seeded random moments across a whole scaffold, the final moves included: exit
    0 with all four paths, or 143 with none; never a scratch folder or a process left."""
    timing = scaffold(tmp_path, repository, "acmetime")
    assert timing["code"] == 0, timing["stderr"]
    remove_challenge(repository, "acmetime")
    draw = random.Random(5)  # one moment surely within the run, five anywhere in it
    moments = sorted([0.3 * timing["seconds"], *(draw.uniform(0.05, 1.15 * timing["seconds"]) for _ in range(5))])
    outcomes = []
    for number, moment in enumerate(moments):
        name = f"acmerandom{number}"
        report = scaffold(tmp_path, repository, name, term_after=moment)
        no_process_left(report)
        assert scratch_folders(repository) == [] and list((tmp_path / "tmp").iterdir()) == []
        if report["code"] == 0:
            assert installed(repository, name) == new_paths(name)
        else:
            stopped(report, NEW_STOPPED)
            assert installed(repository, name) == []
        outcomes.append(report["code"])
        remove_challenge(repository, name)
    print(f"moments {[round(m, 2) for m in moments]} s of {timing['seconds']:.2f} s: exits {outcomes}")
    assert set(outcomes) - {0}


def folder_state(repository: Path, folder: str) -> dict[str, str]:
    """A folder of tasks and its page as they read: {path: sha256}, Python's caches left out."""
    package = repository / "evaluation" / "challenges" / folder
    page = repository / "docs" / "challenges" / f"{folder}.md"
    state = {f"package/{path}": digest for path, digest in content(package).items() if "__pycache__" not in path}
    return {**state, "page": hashlib.sha256(page.read_bytes()).hexdigest()}


@pytest.mark.slow
def test_sigterm_while_a_task_is_added_leaves_the_folder_or_adds_the_whole_task(tmp_path, repository):
    """A task added to a folder of tasks the scaffold wrote, SIGTERM at seeded random moments,
    the final renames (the folder and its page replaced) included: exit 0 with the task's four
    paths and the folder holding both tasks, or 143 with the folder and its page byte for byte
    as they were and nothing of the task; never a scratch folder or a process left."""
    folder = "acmetasks"
    first = scaffold(tmp_path, repository, f"{folder}-task1")
    assert first["code"] == 0, first["stderr"]
    before = folder_state(repository, folder)
    timing = scaffold(tmp_path, repository, f"{folder}-timing", "survival")
    assert timing["code"] == 0, timing["stderr"]
    added = folder_state(repository, folder)
    assert added != before and any("acmetasks_timing/" in path for path in added)
    draw = random.Random(11)  # one moment surely within the run, four anywhere in it
    moments = sorted([0.3 * timing["seconds"], *(draw.uniform(0.05, 1.15 * timing["seconds"]) for _ in range(4))])
    outcomes = []
    for number, moment in enumerate(moments):
        state = folder_state(repository, folder)
        name = f"{folder}-random{number}"
        report = scaffold(tmp_path, repository, name, "survival", term_after=moment)
        no_process_left(report)
        assert scratch_folders(repository) == [] and list((tmp_path / "tmp").iterdir()) == []
        task = [path for path in (f"ground-truth/{name}", f"test/{name}") if os.path.lexists(repository / path)]
        if report["code"] == 0:
            assert task == [f"ground-truth/{name}", f"test/{name}"]
            assert any(f"acmetasks_random{number}/" in path for path in folder_state(repository, folder))
        else:
            stopped(report, NEW_STOPPED)
            assert task == [] and folder_state(repository, folder) == state
        outcomes.append(report["code"])
    print(f"moments {[round(m, 2) for m in moments]} s of {timing['seconds']:.2f} s: exits {outcomes}")
    assert set(outcomes) - {0}
    shutil.rmtree(repository / "evaluation" / "challenges" / folder)
    (repository / "docs" / "challenges" / f"{folder}.md").unlink()
    for path in (*repository.glob(f"ground-truth/{folder}-*"), *repository.glob(f"test/{folder}-*")):
        shutil.rmtree(path)


@pytest.mark.slow
def test_the_build_killed_by_the_machine_is_exit_3(tmp_path, repository):
    """The scaffold's build process killed by SIGKILL: the machine's doing, exit 3 in one line
    (it was exit 4, "a bug of the template"), nothing written, no process left."""
    name = "acmekilled"
    report = scaffold(tmp_path, repository, name, kill_at_depth=1, kill_match="evaluation.new.build")
    assert report["killed"] and "evaluation.new.build" in report["killed"][0]
    line = one_line(report, 3)
    assert line.startswith(f"The build of the challenge {name} was killed (signal 9)"), line
    assert installed(repository, name) == [] and scratch_folders(repository) == []
    no_process_left(report)


@pytest.mark.slow
def test_a_leftover_pycache_in_the_new_folder_is_replaced(tmp_path, repository):
    """evaluation/challenges/NAME/ holding only Python's cache (a challenge removed with `git
    clean -fd`, which keeps ignored files): exit 4 with a traceback before; now the cache is
    replaced (Python never imports it without its sources)."""
    name = "acmecache"
    cache = repository / "evaluation" / "challenges" / name / "__pycache__"
    cache.mkdir(parents=True)
    source = tmp_path / "scoring.py"
    source.write_text("VALUE = 1\n")
    py_compile.compile(str(source), cfile=str(cache / "scoring.cpython-311.pyc"), doraise=True)
    report = scaffold(tmp_path, repository, name)
    assert report["code"] == 0, report["stderr"]
    assert installed(repository, name) == new_paths(name)
    package = repository / "evaluation" / "challenges" / name
    assert sorted(p.name for p in package.iterdir()) == ["__init__.py", "examples.py"]  # a declaration
    assert scratch_folders(repository) == []
    remove_challenge(repository, name)


def test_a_folder_of_files_in_the_new_folder_place_is_refused(tmp_path, repository):
    name = "acmemine"
    mine = repository / "evaluation" / "challenges" / name
    mine.mkdir()
    (mine / "notes.txt").write_text("mine\n")
    report = scaffold(tmp_path, repository, name)
    line = one_line(report, 2)
    assert line.startswith(f"evaluation/challenges/{name} exists already"), line
    assert (mine / "notes.txt").read_text() == "mine\n"
    assert installed(repository, name) == [f"evaluation/challenges/{name}"] and scratch_folders(repository) == []
    shutil.rmtree(mine)


@pytest.mark.slow
def test_a_half_installed_challenge_names_every_path_to_remove(tmp_path, repository):
    """What a killed scaffold (SIGKILL, which no process can handle) may leave: some of its paths
    and scratch folders. The rerun names each, exactly; removed as told, the rerun works."""
    name = "acmehalf"
    (repository / "ground-truth" / name).mkdir()
    (repository / "test" / name).mkdir()
    stale = repository / "test" / f".new-{name}-in-progress-abcd1234"
    stale.mkdir()
    report = scaffold(tmp_path, repository, name)
    line = one_line(report, 2)
    assert line == (f"ground-truth/{name}, test/{name}, test/.new-{name}-in-progress-abcd1234 exist already (from "
                    f"an earlier or interrupted scaffold of {name}?); remove them, or pick another name."), line
    for path in (repository / "ground-truth" / name, repository / "test" / name, stale):
        path.rmdir()
    again = scaffold(tmp_path, repository, name)
    assert again["code"] == 0, again["stderr"]
    assert installed(repository, name) == new_paths(name)
    remove_challenge(repository, name)



@pytest.mark.slow
def test_too_few_open_files_is_the_machines_limit_and_leaves_no_scratch(tmp_path, repository):
    """Under `ulimit -n 8` the build runs out of file descriptors: exit 3 with the machine's line
    (once exit 4, the template's bug), and nothing left, not even the scratch folder, whose
    removal itself needs descriptors (rmtree holds one per level: it gave up, and the rerun was
    refused naming the scratch folder). Without the limit the same command then works."""
    name = "acmefiles"
    limited = ["sh", "-c", 'ulimit -n 8; exec "$@"', "sh", *new_command(name)]
    report = reaped(tmp_path, limited, cwd=repository, env=environment(tmp_path, repository))
    line = one_line(report, 3)
    assert "file descriptors" in line and "limit (8 open files" in line, line
    assert installed(repository, name) == [] and scratch_folders(repository) == []
    no_process_left(report)
    again = scaffold(tmp_path, repository, name)
    assert again["code"] == 0, again["stderr"]
    assert installed(repository, name) == new_paths(name)
    remove_challenge(repository, name)

# ---- 5. image_requirements on a malformed declaration or an unreadable file ---------------------------------

@pytest.fixture
def build_stage(tmp_path) -> Path:
    """The files the Dockerfile's build stage copies, and nothing else: evaluation/__init__.py,
    errors.py, image_requirements.py, evaluation/challenges/ and requirements.txt."""
    stage = tmp_path / "build"
    (stage / "evaluation").mkdir(parents=True)
    for name in ("__init__.py", "errors.py", "image_requirements.py"):
        shutil.copy(ROOT / "evaluation" / name, stage / "evaluation" / name)
    shutil.copytree(ROOT / "evaluation" / "challenges", stage / "evaluation" / "challenges",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "requirements.txt", stage / "requirements.txt")
    return stage


def image_requirements(stage: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """As the Dockerfile runs it: python -m evaluation.image_requirements in the build stage,
    isolated (-I: no site-packages, no environment)."""
    return subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, '.'); "
                           "from evaluation.image_requirements import main; sys.exit(main())", *args],
                          cwd=stage, capture_output=True, timeout=timeout)


DECLARATIONS = {
    "syntax-error": b"RUNTIME_PACKAGES = (\n",
    "nul-byte": b'RUNTIME_PACKAGES = ("numpy",)\0\n',
    "not-utf-8": b'RUNTIME_PACKAGES = ("numpy",)  # \xff\xfe\n',
    "nested-parentheses": b"RUNTIME_PACKAGES = " + b"(" * 300_000 + b"\n",
    "nested-minus": b"RUNTIME_PACKAGES = " + b"-" * 300_000 + b"1\n",
    "nested-literal": b"RUNTIME_PACKAGES = " + b"[" * 90 + b"]" * 90 + b"\n",
    "unhashable-key": b'RUNTIME_PACKAGES = {["rare26"]: ("numpy",)}\n',
    "huge": b'RUNTIME_PACKAGES = ("numpy",)\n' + b"#" * (2 << 20) + b"\n",
}


def assert_exit_3_one_line(done: subprocess.CompletedProcess, *words: str) -> None:
    stderr = done.stderr.decode(errors="replace")
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert done.returncode == 3 and len(lines) == 1 and "Traceback" not in stderr, stderr[-3000:]
    assert done.stdout == b""
    for word in words:
        assert word in lines[0], lines[0]


@pytest.mark.parametrize("declaration", sorted(DECLARATIONS))
def test_a_malformed_declaration_exits_3_in_one_line(declaration, build_stage):
    (build_stage / "evaluation" / "challenges" / "rare26" / "__init__.py").write_bytes(DECLARATIONS[declaration])
    assert_exit_3_one_line(image_requirements(build_stage, "rare26", "requirements.txt"),
                           "evaluation/challenges/rare26/__init__.py")


def test_a_declaration_that_is_a_named_pipe_is_not_waited_for(build_stage):
    declaration = build_stage / "evaluation" / "challenges" / "rare26" / "__init__.py"
    declaration.unlink()
    os.mkfifo(declaration)
    assert_exit_3_one_line(image_requirements(build_stage, "rare26", "requirements.txt", timeout=10),
                           "not a regular file")


def _named_pipe(stage: Path) -> str:
    os.mkfifo(stage / "pipe")
    return "pipe"


def _written(name: str, data: bytes):
    def make(stage: Path) -> str:
        (stage / name).write_bytes(data)
        return name
    return make


REQUIREMENTS_FILES = {
    "device": lambda stage: "/dev/zero",  # read without bound before
    "named-pipe": _named_pipe,  # waited for without end before
    "folder": lambda stage: ".",
    "missing": lambda stage: "no-such-requirements.txt",
    "huge": _written("big.txt", b"numpy==2.4.6\n" * 200_000),
    "not-utf-8": _written("latin.txt", b"numpy==2.4.6 # \xe9\n"),
}


@pytest.mark.parametrize("kind", sorted(REQUIREMENTS_FILES))
def test_an_unreadable_requirements_file_exits_3_in_one_line(kind, build_stage):
    path = REQUIREMENTS_FILES[kind](build_stage)
    assert_exit_3_one_line(image_requirements(build_stage, "rare26", path, timeout=10), f"cannot read {path}")


# ---- 6. the evaluation's --output never inside what it reads --------------------------------------------------

def _inside_input(base: Path) -> Path:
    return base / "input" / "out"


def _output_links_to_ground_truth(base: Path) -> Path:
    (base / "out-link").symlink_to(base / "truth")
    return base / "out-link"


OUTPUT_PLACES = {"input": lambda base: base / "input", "inside-input": _inside_input,
                 "ground-truth": lambda base: base / "truth", "inside-ground-truth": lambda base: base / "truth" / "x",
                 "link-to-ground-truth": _output_links_to_ground_truth}


@pytest.mark.parametrize("place", sorted(OUTPUT_PLACES))
def test_the_evaluation_refuses_an_output_inside_what_it_reads(place, tmp_path):
    """On the platform /output, /input and the ground truth are apart; on an organizer's machine
    --output may name the input or the ground truth: refused (exit 2, one line) before anything
    is written, as every other command refuses it."""
    base = tmp_path / "base"
    shutil.copytree(ROOT / "test" / RARE26 / "input", base / "input")
    ground_truth_copy(base / "truth")
    output = OUTPUT_PLACES[place](base)
    before = snapshot(base)
    report = reaped(tmp_path, [sys.executable, "-m", "evaluation", RARE26, "--input", str(base / "input"),
                               "--ground-truth", str(base / "truth"), "--output", str(output)],
                    env=environment(tmp_path))
    line = one_line(report, 2)
    assert line.startswith(f"--output {output} is ") and "folder" in line and "never writes into what it reads" in line
    assert snapshot(base) == before


def test_the_evaluation_may_write_beside_what_it_reads(tmp_path):
    """An output folder holding the input and the ground truth is not inside either: metrics.json
    is written at its top, nothing else changes."""
    base = tmp_path / "base"
    shutil.copytree(ROOT / "test" / RARE26 / "input", base / "input")
    ground_truth_copy(base / "truth")
    before = snapshot(base)
    report = reaped(tmp_path, [sys.executable, "-m", "evaluation", RARE26, "--input", str(base / "input"),
                               "--ground-truth", str(base / "truth"), "--output", str(base)],
                    env=environment(tmp_path))
    assert report["code"] == 0, report["stderr"]
    assert (base / "metrics.json").read_bytes() == (ROOT / "test" / RARE26 / "expected_metrics.json").read_bytes()
    after = snapshot(base)
    del after["metrics.json"]
    assert after == before

