"""Run a command as the child of a subreaper, stop it at a real moment, and report what it left.

    python tests/reaper.py REPORT [--term-after S | --term-when-path GLOB | --term-when-depth N]
                           [--kill-at-depth N [--kill-match TEXT]] [--timeout S] [--tree PATH ...] [--device PATH ...]
                           -- COMMAND ...

This process marks itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so every process the
command starts and leaves behind when it exits, at any depth, is re-parented to it instead of to
init: "no process outliving the command" is then checked exactly, not by polling for pids. While
the command runs, its descendants are watched (/proc/<pid>/task/*/children); SIGTERM is sent to
the command itself (never its group: a platform or a shell signals the one process) after S
seconds, once a path matching GLOB exists, or once it has descendants N levels deep (N = 2: a
worker of a child process); --kill-at-depth N kills (SIGKILL) the first process N levels below
it whose command line holds TEXT, as the kernel's out-of-memory killer would. After it exits,
the processes left are listed (after 0.2 s, for those being killed to be gone), then killed.
With --tree, each PATH is listed before and after the run ({relative path: sha256, "link ->
target" or "folder"}), and with --device its file system's number is given: what a test inside
a private mount namespace (`unshare -m`) cannot see from outside once the namespace is gone.
REPORT is a JSON file: code, stdout, stderr, signalled, seconds, depth (the deepest descendant
seen), left (the command lines still alive), killed, before and after (the trees), devices.

Standard library only; Linux only (prctl, /proc).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import glob
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def children(pid: int) -> list[int]:
    found = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        with contextlib.suppress(OSError):
            found += [int(n) for n in Path(task).read_text().split()]
    return found


def depth_below(pid: int) -> int:
    """How many levels of descendants `pid` has now."""
    below = children(pid)
    return 1 + max(map(depth_below, below)) if below else 0


def at_depth(pid: int, depth: int) -> list[int]:
    """The descendants of `pid` `depth` levels below it (1: its children)."""
    level = [pid]
    for _ in range(depth):
        level = [child for parent in level for child in children(parent)]
    return level


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def tree(root: Path) -> dict[str, str]:
    listed = {}
    if not os.path.lexists(root):
        return listed
    for current, folders, files in os.walk(root):
        for name in folders + files:
            path = Path(current, name)
            key = path.relative_to(root).as_posix()
            if path.is_symlink():
                listed[key] = f"link -> {os.readlink(path)}"
            elif path.is_dir():
                listed[key] = "folder"
            else:
                listed[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return listed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("report", type=Path)
    parser.add_argument("--term-after", type=float)
    parser.add_argument("--term-when-path")
    parser.add_argument("--term-when-depth", type=int)
    parser.add_argument("--kill-at-depth", type=int)
    parser.add_argument("--kill-match", default="")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--tree", type=Path, action="append", default=[])
    parser.add_argument("--device", type=Path, action="append", default=[])
    split = sys.argv.index("--")
    args, command = parser.parse_args(sys.argv[1:split]), sys.argv[split + 1:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    before = {str(path): tree(path) for path in args.tree}
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    output: dict[str, bytes] = {}
    readers = [threading.Thread(target=lambda name, stream: output.__setitem__(name, stream.read()),
                                args=(name, stream), daemon=True)
               for name, stream in (("stdout", process.stdout), ("stderr", process.stderr))]
    for reader in readers:
        reader.start()
    signalled, killed, deepest = False, [], 0
    wants_signal = any(v is not None for v in (args.term_after, args.term_when_path, args.term_when_depth))
    while process.poll() is None and time.monotonic() - started < args.timeout:
        depth = depth_below(process.pid)
        deepest = max(deepest, depth)
        if args.kill_at_depth is not None and not killed:
            for pid in at_depth(process.pid, args.kill_at_depth):
                line = command_line(pid)
                if args.kill_match in line and line not in ("", "?"):  # running its own program
                    killed.append(line)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                    break
        if wants_signal and not signalled and (
                (args.term_after is not None and time.monotonic() - started >= args.term_after)
                or (args.term_when_path is not None and glob.glob(args.term_when_path, include_hidden=True))
                or (args.term_when_depth is not None and depth >= args.term_when_depth)):
            process.send_signal(signal.SIGTERM)
            signalled = True
        time.sleep(0.002)
    if process.poll() is None:  # the timeout: the command itself hangs
        process.kill()
    process.wait()
    seconds = time.monotonic() - started
    left: list[str] = []
    deadline = time.monotonic() + 0.2
    while True:  # the orphans re-parented here (a moment to end while being killed): the command's leftovers
        reap()
        living = [pid for pid in children(os.getpid()) if alive(pid)]
        if not living or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    for pid in living:
        left.append(command_line(pid))
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for reader in readers:
        reader.join(10)
    reap()
    report = {"code": process.returncode, "stdout": output.get("stdout", b"").decode(errors="replace"),
              "stderr": output.get("stderr", b"").decode(errors="replace"), "signalled": signalled,
              "seconds": seconds, "depth": deepest, "left": left, "killed": killed,
              "before": before, "after": {str(path): tree(path) for path in args.tree},
              "devices": {str(path): os.stat(path).st_dev for path in args.device}}
    args.report.write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
