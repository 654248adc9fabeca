"""What makes the organizer's commands that write files (python -m evaluation.examples, python -m
evaluation.new) safe to stop: whatever stops them (SIGTERM, Ctrl-C, a full disk, an error), they
leave the folders they write as they were, and no process of theirs behind.

- `stopped_by_sigterm(line)`: for the time of a command, SIGTERM raises `Terminated(line)` in the
  main thread (exit 143 through launch.run_command), once: a second SIGTERM is ignored while the
  first unwinds, so the clean-up on the way is not cut short.
- `held()`: SIGTERM held back (blocked) for the time of a block (a clean-up, the final renames):
  the block runs whole, and a SIGTERM that came meanwhile is handled right after it.
  `finished()`: from then on SIGTERM is ignored: the command did its work (its outputs are in
  place), so it exits 0, as the evaluation does once metrics.json is written. In a process of
  the command's own (`own_process()`, the entry points of evaluation.launch) it stays ignored
  until the process has exited; inside another program the program's handler is back after.
- `scratch_folder(parent, prefix)`: a new folder, removed at the end whatever happens;
  `copy_tree` and `move` (onto another file system too), whose OSErrors keep their errno.
- `run_child(command)`: a child process in a process group of its own, killed with all it
  started (an evaluation's worker processes) when the wait for it is interrupted.
- `install(moves, trash)`: the results moved into place by renames, all or none.

Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

from evaluation.errors import Terminated

_state = {"line": "The command was stopped (SIGTERM).", "finished": False, "on_stop": None, "own_process": False}


def own_process() -> None:
    """The process is the command's own (python -m ..., a console script): once the command has
    finished, nothing of the process's is left to run but its exit, and a SIGTERM then is ignored
    rather than turning exit 0 into a death by signal."""
    _state["own_process"] = True


def owns_process() -> bool:
    return _state["own_process"]


def _on_sigterm(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: the clean-up on the way is not interrupted
    if not _state["finished"]:
        if _state["on_stop"] is not None:
            _state["on_stop"]()
        raise Terminated(_state["line"])


@contextlib.contextmanager
def stopped_by_sigterm(line: str, on_stop: Callable[[], None] | None = None) -> Iterator[None]:
    """SIGTERM raises Terminated(line) in the main thread for the time of the block, unless the
    command has `finished`, after calling `on_stop` (what must end at once, before the unwinding:
    a pool's workers); the handler is restored after."""
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: signals belong to the program that runs it
        yield
        return
    _state.update(line=line, finished=False, on_stop=on_stop)
    try:
        yield
    finally:
        if _state["finished"] and _state["own_process"]:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # done: the process only exits now
        else:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
        _state["finished"] = False


@contextlib.contextmanager
def held() -> Iterator[None]:
    """SIGTERM blocked for the time of the block; one that came meanwhile is handled after it."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def finished() -> None:
    """The command's work is done (its outputs are in place): a SIGTERM from now on is ignored,
    and the command exits as if it had come later. Called while SIGTERM is `held`, so that none
    falls between the last rename and this."""
    _state["finished"] = True


def remove_tree(path: Path) -> None:
    """`path` removed (a folder with all it holds; a link or a file itself, never followed),
    SIGTERM held back meanwhile; nothing if it is gone already."""
    with held():
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
            if os.path.lexists(path):
                _remove_by_paths(path)
        elif os.path.lexists(path):
            with contextlib.suppress(OSError):
                os.unlink(path)


def _remove_by_paths(path: Path) -> None:
    """What rmtree left, removed by path, deepest first. rmtree holds a descriptor open for every
    level of the tree it descends, so under a tight limit of open files (the very failure a
    command may be cleaning up after) it gives up; os.walk holds one at a time."""
    for folder, subfolders, files in os.walk(path, topdown=False):
        for name in files + [d for d in subfolders if os.path.islink(os.path.join(folder, d))]:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))
        for name in subfolders:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(folder, name))
    with contextlib.suppress(OSError):
        os.rmdir(path)


@contextlib.contextmanager
def scratch_folder(parent: Path | None = None, prefix: str = "tmp") -> Iterator[Path]:
    """A new private folder in `parent` (the system's temporary folder when None), removed with
    all it holds at the end, however the block ends."""
    folder = None
    try:
        with held():  # a SIGTERM between the folder's making and the try would leave it behind
            folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        yield folder
    finally:
        if folder is not None:
            remove_tree(folder)


def copy_tree(source: Path, target: Path, symlinks: bool = False, dirs_exist_ok: bool = False, ignore=None) -> None:
    """shutil.copytree, raising the first OSError of a file's copy itself: shutil.Error, which
    gathers them, has no errno, and no space left would look like a bug."""
    failures: list[OSError] = []

    def copy(source_file, target_file):
        try:
            return shutil.copy2(source_file, target_file)
        except OSError as error:
            failures.append(error)
            raise

    try:
        shutil.copytree(source, target, symlinks=symlinks, ignore=ignore, copy_function=copy,
                        dirs_exist_ok=dirs_exist_ok)
    except shutil.Error:
        if failures:
            raise failures[0] from None
        raise


def move(source: Path, target: Path) -> None:
    """`source` (a file or a folder) renamed to `target`, or, when `target` is on another file
    system, copied there (links kept as links) and then removed; a failed copy is removed."""
    try:
        os.rename(source, target)
        return
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
    try:
        if os.path.isdir(source) and not os.path.islink(source):
            copy_tree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target, follow_symlinks=False)
    except BaseException:
        remove_tree(target)
        raise
    remove_tree(source)


# What an OSError of writing files means when it is the machine's (exit 3), not a bug of ours.
MACHINE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM,
                            errno.EIO, errno.EBUSY, errno.EXDEV, errno.EMLINK})


def machine_error(error: BaseException) -> bool:
    """Whether `error` is the machine's refusal to write (no space left, read-only, ...)."""
    return isinstance(error, OSError) and error.errno in MACHINE_ERRNOS


# ---- child processes ----------------------------------------------------------------------------

def _leader_exited(pid: int) -> bool:
    """Whether the child `pid` has exited, without reaping it (its process group number stays
    reserved while it is a zombie, so killing the group cannot reach a stranger)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _group_running(group: int) -> bool:
    """Whether a process of the process group `group` is still running (not a zombie), from
    /proc (False where there is none)."""
    for entry in os.scandir("/proc") if os.path.isdir("/proc") else ():
        if entry.name.isdigit():
            try:
                fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z" and int(fields[2]) == group:
                return True
    return False


def end_process_group(process: subprocess.Popen, grace: float = 0.0, wait: float = 5.0) -> None:
    """The child `process` (started in a group of its own) and every process of its group ended:
    SIGTERM first when `grace` > 0, giving it that long to clean up after itself, then SIGKILL;
    the child reaped, and up to `wait` seconds given to the others to be gone, so that none
    outlives the caller. SIGTERM is held back meanwhile."""
    with held():
        group = None
        if process.returncode is None:  # not reaped yet: its group number is still its own
            group = process.pid
            if grace > 0:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGTERM)
                deadline = time.monotonic() + grace
                while not _leader_exited(process.pid) and time.monotonic() < deadline:
                    time.sleep(0.01)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + wait
        while group is not None and _group_running(group) and time.monotonic() < deadline:
            time.sleep(0.01)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def run_child(command: Sequence[str], *, grace: float = 0.0, **options) -> subprocess.CompletedProcess:
    """subprocess.run(command, **options) with the child in a process group of its own: when the
    wait is interrupted (SIGTERM's Terminated, Ctrl-C, any error), the child and every process it
    started are ended (end_process_group) before the interruption goes on, so none outlives the
    command. A child that ends by itself has ended its own: its output pipes, which its worker
    processes share, are read to their end."""
    process = subprocess.Popen(command, process_group=0, **options)
    try:
        out, err = process.communicate()
    except BaseException:
        end_process_group(process, grace)
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


# ---- the results moved into place ------------------------------------------------------------------

def install(moves: Sequence[tuple[Path, Path]], trash: Path | Sequence[Path], replace: bool | Collection[Path] = True,
            last: bool = False) -> None:
    """Each `(source, target)` of `moves`, in order: the entry at `target` (a link itself, never
    what it points to) renamed into the folder `trash` (or the move's own of a sequence of trash
    folders, one per move: each beside its target), then `source` renamed to `target`. All or
    none: when a rename fails, the ones done are undone (the old entries put back) and the
    OSError is raised. An existing target not in `replace` (True: all, False: none) is
    FileExistsError instead.
    SIGTERM is held back meanwhile; with `last` (the command's outputs are then all in place)
    the command is `finished` before it is let through. Renames only: every source, target and `trash` must be on
    the file system of the target's folder."""
    steps: list[tuple[Path, Path]] = []  # renames done, (from, to), to undo in reverse
    trashes = [trash] * len(moves) if isinstance(trash, Path) else list(trash)
    with held():
        try:
            for number, (source, target) in enumerate(moves):
                if os.path.lexists(target):
                    if not (replace is True or (replace and target in replace)):
                        raise FileExistsError(f"{target} exists already")
                    old = trashes[number] / f"{number}-{target.name}"
                    os.rename(target, old)
                    steps.append((target, old))
                os.rename(source, target)
                steps.append((source, target))
            if last:
                finished()
        except BaseException:
            for origin, moved in reversed(steps):
                with contextlib.suppress(OSError):
                    os.rename(moved, origin)
            raise
