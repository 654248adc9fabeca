"""Faults of the ground truth, of its upload, of the machine and of the platform, run for real:
a label file that is a named pipe or a link to nothing (every challenge, from the registry), a
config.json beside an uploaded challenge folder, `--workers 1000` under a one-CPU affinity, the
platform's SIGTERM while cases are scored (the framework's, on one slow data set), and no space
left for metrics.json (every challenge, from the registry)."""

from __future__ import annotations

import concurrent.futures
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evaluation import cli
from evaluation.challenges import challenge_names
from evaluation.errors import EXIT_TERMINATED
from evaluation.machine import Ceiling, cgroup_cpu_quota, cgroup_memory_limit, cpu_ceiling, worker_ceiling
from tests.cli_runs import DROP_ENV, ROOT
from tests.common import last_line, params

KEYS = [key for key in challenge_names() if (ROOT / "ground-truth" / key).is_dir() and (ROOT / "test" / key).is_dir()]
RESERVED = {"config.json", "case-mapping.json"}
NOT_THEIR_FAULT = "through no fault of the submission"


def test_every_challenge_has_a_bundled_example():
    assert KEYS == challenge_names()


def evaluation_process(argv, preexec_fn=None, prefix=()) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.Popen([*prefix, sys.executable, "-m", "evaluation", *map(str, argv)], cwd=ROOT, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=preexec_fn)


# ---------------------------------------------------------------------------------------------
# A label file that is not a file: the organizer's error (exit 3), naming it, never a case left
# out of the test set (which blamed every submission: "not in the test set", exit 1).


def label_files(key: str) -> list[str]:
    """The ground truth's own files (relative names), config.json and the case mapping aside."""
    folder = ROOT / "ground-truth" / key
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and p.name not in RESERVED)


def broken_variants(key: str) -> list[tuple[str, str, str]]:
    """(kind, where, relative name): the first label file replaced, and one more added with its
    name behind a prefix (so with its suffix, in its folder)."""
    first = label_files(key)[0]
    extra = str(Path(first).with_name("zz" + Path(first).name))
    return [(kind, where, name) for kind in ("fifo", "dangling")
            for where, name in (("first", first), ("extra", extra))]


def run_broken(key: str, kind: str, name: str, base: Path) -> tuple[int | None, str, str, Path, Path]:
    truth = base / "ground-truth"
    shutil.copytree(ROOT / "ground-truth" / key, truth)
    path = truth / name
    if path.exists():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink("no-such-file", path)
    output = base / "output"
    process = evaluation_process([key, "--input", ROOT / "test" / key / "input", "--ground-truth", truth,
                                  "--output", output, "--workers", "1"])
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # a named pipe opened for reading: the run hangs
        process.kill()
        out, err = process.communicate()
        return None, out, err, output, truth
    return process.returncode, out, err, output, truth


CASES = [(key, *variant) for key in KEYS for variant in broken_variants(key)]


@pytest.fixture(scope="module")
def broken_runs(tmp_path_factory):
    """Every (key, kind, where) run once, concurrently: a run is mostly the interpreter starting."""
    base = tmp_path_factory.mktemp("broken-truth")
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(4, 2 * (os.cpu_count() or 1))) as pool:
        futures = {case: pool.submit(run_broken, case[0], case[1], case[3], base / "-".join(case[:3]))
                   for case in CASES}
        return {case: future.result() for case, future in futures.items()}


@pytest.mark.parametrize("case", CASES, ids=["-".join(case[:3]) for case in CASES])
def test_a_label_file_that_is_not_a_file_is_refused_by_name(case, broken_runs):
    _key, _kind, _where, name = case
    code, out, err, output, _truth = broken_runs[case]
    assert code == 3, f"exit {code}: {last_line(err)!r}"
    line = last_line(err)
    assert NOT_THEIR_FAULT in line and Path(name).name in line, line
    assert "Traceback" not in err and not (output / "metrics.json").exists()
    assert "Scoring " not in out  # refused with the ground truth, before any case


# ---------------------------------------------------------------------------------------------
# The uploaded ground truth's layout: the challenge folder at the archive's root, or its contents


def run_main(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("key", KEYS)
def test_config_beside_the_challenge_folder_is_refused(key, tmp_path, capsys):
    """config.json next to <upload>/<key>/ instead of inside it was silently ignored (defaults)."""
    upload = tmp_path / "upload"
    shutil.copytree(ROOT / "ground-truth" / key, upload / key)
    (upload / key / "config.json").unlink(missing_ok=True)
    (upload / "config.json").write_text("{}\n")
    code, out, err = run_main(capsys, key, "--input", ROOT / "test" / key / "input", "--ground-truth", upload,
                              "--output", tmp_path / "out", "--workers", "1")
    assert code == 3
    assert err.strip().splitlines() == [last_line(err)]  # one line
    assert f"holds a folder {key}/ and, beside it, config.json" in last_line(err)
    assert not (tmp_path / "out" / "metrics.json").exists() and "Scoring " not in out


def test_other_challenges_folders_beside_are_no_ambiguity(tmp_path, capsys):
    """A copy of the whole ground-truth/ folder (one folder per challenge) is fine."""
    shutil.copytree(ROOT / "ground-truth", tmp_path / "all")
    (tmp_path / "all" / ".DS_Store").write_text("")
    code, out, err = run_main(capsys, "rare26", "--input", ROOT / "test" / "rare26" / "input", "--ground-truth",
                              tmp_path / "all", "--output", tmp_path / "out", "--workers", "1")
    assert code == 0, err
    assert f"Ground truth: {tmp_path / 'all' / 'rare26'};" in out


@pytest.mark.parametrize("layout", ["folder", "contents"])
def test_the_config_used_is_logged(layout, tmp_path, capsys):
    key = "csv2026"  # its bundled ground truth has a config.json
    upload = tmp_path / "upload"
    truth = upload / key if layout == "folder" else upload
    shutil.copytree(ROOT / "ground-truth" / key, truth)
    argv = [key, "--input", ROOT / "test" / key / "input", "--ground-truth", upload, "--output", tmp_path / "out",
            "--workers", "1"]
    code, out, err = run_main(capsys, *argv)
    assert code == 0, err
    assert f"Settings: {truth / 'config.json'}\n" in out
    (truth / "config.json").unlink()
    code, out, err = run_main(capsys, *argv)
    assert f"Settings: the defaults (no config.json in {truth})\n" in out


# ---------------------------------------------------------------------------------------------
# Workers: never more than the CPUs this process may run on, nor than its memory allows


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_cgroup_v2_cpu_quota(tmp_path):
    assert cgroup_cpu_quota(write(tmp_path / "cpu.max", "150000 100000\n")) == 1.5
    assert cgroup_cpu_quota(write(tmp_path / "cpu.max", "max 100000\n")) is None
    assert cgroup_cpu_quota(write(tmp_path / "cpu.max", "garbage\n")) is None
    assert cgroup_cpu_quota(write(tmp_path / "cpu.max", "-5 100000\n")) is None


def test_cgroup_v1_cpu_quota(tmp_path):
    missing = tmp_path / "no-cpu.max"
    quota, period = tmp_path / "cpu.cfs_quota_us", tmp_path / "cpu.cfs_period_us"
    write(period, "100000\n")
    assert cgroup_cpu_quota(missing, write(quota, "200000\n"), period) == 2.0
    assert cgroup_cpu_quota(missing, write(quota, "50000\n"), period) == 0.5
    assert cgroup_cpu_quota(missing, write(quota, "-1\n"), period) is None
    assert cgroup_cpu_quota(missing, write(quota, "x\n"), period) is None
    assert cgroup_cpu_quota(missing, quota, tmp_path / "no-period") is None
    assert cgroup_cpu_quota(missing, write(quota, "200000\n")) == 2.0  # the period next to the quota


def test_cgroup_memory_limit(tmp_path):
    missing = tmp_path / "missing"
    assert cgroup_memory_limit(write(tmp_path / "memory.max", "2147483648\n"), missing) == 2 << 30
    assert cgroup_memory_limit(write(tmp_path / "memory.max", "max\n"), missing) is None
    v1 = tmp_path / "memory.limit_in_bytes"
    assert cgroup_memory_limit(missing, write(v1, "1073741824\n")) == 1 << 30
    assert cgroup_memory_limit(missing, write(v1, "9223372036854771712\n")) is None  # v1's "unlimited"
    assert cgroup_memory_limit(missing, missing) is None


def test_worker_ceiling_takes_the_smallest_limit():
    four = Ceiling(4, "4 CPU(s) this process may run on")
    assert worker_ceiling(1000, 256 << 20, four, None) == four
    assert worker_ceiling(3, 256 << 20, four, None) == Ceiling(3, "")
    limited = worker_ceiling(1000, 256 << 20, four, (512 << 20, "data limit (RLIMIT_DATA)"))
    assert limited == Ceiling(2, "512 MiB of memory (data limit (RLIMIT_DATA)) at about 256 MiB a worker")
    assert worker_ceiling(1000, 256 << 20, four, (100 << 20, "cgroup memory limit")).workers == 1
    assert worker_ceiling(1000, 0, four, (100 << 20, "cgroup memory limit")) == four  # no estimate
    assert cpu_ceiling(8, 1.5) == Ceiling(2, "2 CPU(s) by the cgroup's CPU quota (1.5 CPUs)")
    assert cpu_ceiling(2, 4.0) == Ceiling(2, "2 CPU(s) this process may run on")
    assert cpu_ceiling(8, 0.2).workers == 1


def slow_hecktor(root: Path, cases: int, factor: int = 8) -> Path:
    """HECKTOR task 1's synthetic data set with every volume `factor` times larger along each
    axis (192 x 384 x 384 voxels): about 0.1 s a case, so that a run lasts a few seconds."""
    import numpy as np
    import SimpleITK as sitk

    from tests.hecktor_data import make_dataset

    make_dataset("hecktor2025-task1", root, 0, cases)
    for path in [*root.rglob("*.nii.gz"), *root.rglob("*.mha")]:
        image = sitk.ReadImage(str(path))
        array = sitk.GetArrayViewFromImage(image)
        for axis in range(3):
            array = np.repeat(array, factor, axis)
        larger = sitk.GetImageFromArray(array)
        larger.SetOrigin(image.GetOrigin())
        larger.SetDirection(image.GetDirection())
        larger.SetSpacing(tuple(s / factor for s in image.GetSpacing()))
        sitk.WriteImage(larger, str(path), True)
    return root


@pytest.fixture(scope="module")
def slow_dataset(tmp_path_factory):
    return slow_hecktor(tmp_path_factory.mktemp("slow-hecktor"), 24)


def children(pid: int) -> set[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return set()
    return {int(n) for n in text.split()}


def watch(process: subprocess.Popen, until=None, timeout: float = 120) -> tuple[set[int], str, str]:
    """Every child process seen while `process` runs (polled), then its output; `until(seen)`
    returning True stops the watching early (the process is left running)."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        seen |= children(process.pid)
        if until is not None and until(seen):
            return seen, "", ""
        time.sleep(0.005)
    out, err = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
    return seen, out, err


@pytest.mark.skipif(not shutil.which("taskset") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs taskset and two CPUs")
@pytest.mark.parametrize("cpus, workers", [("0", 1), ("0,1", 2)])
def test_workers_1000_use_the_cpus_this_process_may_run_on(slow_dataset, tmp_path, cpus, workers):
    argv = ["hecktor2025-task1", "--input", slow_dataset / "input", "--ground-truth", slow_dataset / "ground-truth",
            "--output", tmp_path / "out", "--workers", "1000"]
    process = evaluation_process(argv, prefix=("taskset", "-c", cpus))
    seen, out, err = watch(process)
    assert process.returncode == 0, err
    lines = [line for line in out.splitlines() if line.startswith("Scoring 24 case(s)")]
    reason = f"1000 requested; at most {workers} here: {workers} CPU(s) this process may run on"
    if workers == 1:
        assert lines == [f"Scoring 24 case(s) in this process ({reason.replace('requested', 'worker(s) requested')})."]
    else:
        assert lines == [f"Scoring 24 case(s) with {workers} worker(s) ({reason})."]
    assert len(seen) == (0 if workers == 1 else workers)


def test_workers_follow_the_memory_limit(tmp_path):
    """A data limit of 300 MiB (the platform's way of giving the machine's memory) over 256 MiB a
    worker: one, however many CPUs."""
    limit = 300 << 20
    key = "hecktor2025-task1"
    argv = [key, "--input", ROOT / "test" / key / "input", "--ground-truth", ROOT / "ground-truth" / key,
            "--output", tmp_path / "out", "--workers", "1000"]
    process = evaluation_process(argv, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_DATA, (limit, limit)))
    seen, out, err = watch(process)
    assert process.returncode == 0, err
    (line,) = [line for line in out.splitlines() if line.startswith("Scoring 6 case(s)")]
    assert line == ("Scoring 6 case(s) in this process (1000 worker(s) requested; at most 1 here: 300 MiB of memory "
                    "(data limit (RLIMIT_DATA)) at about 256 MiB a worker).")
    assert seen == set()


# ---------------------------------------------------------------------------------------------
# SIGTERM while scoring (the platform's time limit)


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_while_scoring_stops_at_once(slow_dataset, tmp_path, workers):
    output = tmp_path / "out"
    output.mkdir()
    (output / "metrics.json").write_text('{"from": "an earlier run"}\n')
    argv = ["hecktor2025-task1", "--input", slow_dataset / "input", "--ground-truth", slow_dataset / "ground-truth",
            "--output", output, "--workers", workers]
    process = evaluation_process(argv)
    scoring = threading.Event()
    lines: list[str] = []

    def read_stdout():
        for text in process.stdout:
            lines.append(text)
            if text.startswith("Scoring 2"):
                scoring.set()

    reader = threading.Thread(target=read_stdout, daemon=True)
    reader.start()
    assert scoring.wait(60), "no 'Scoring' line"
    if workers > 1:  # and the workers started
        seen, _, _ = watch(process, until=lambda seen: len(seen) >= workers, timeout=60)
        assert len(seen) >= workers
    assert process.poll() is None, "the run ended before SIGTERM: make the data set slower"
    time.sleep(0.3)
    workers_now = children(process.pid)
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    elapsed = time.monotonic() - sent
    reader.join(10)
    out, err = "".join(lines), process.stderr.read()
    assert process.returncode == EXIT_TERMINATED, err
    assert elapsed < 3.0, f"{elapsed:.1f} s to stop"
    assert last_line(err) == cli.STOPPED and "Traceback" not in err
    assert sorted(os.listdir(output)) == []  # no metrics.json, nor a temporary one
    assert "Scoring " in out and "Wrote " not in out
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in workers_now) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers_now), "a worker outlived the run"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_sigterm_handler_is_restored_after_main(tmp_path, capsys):
    """main() is also called inside other programs: SIGTERM's handler and mask are theirs after."""
    before = signal.getsignal(signal.SIGTERM)
    code, _, err = run_main(capsys, "rare26", "--input", ROOT / "test" / "rare26" / "input", "--ground-truth",
                            ROOT / "ground-truth" / "rare26", "--output", tmp_path / "out", "--workers", "1")
    assert code == 0, err
    assert signal.getsignal(signal.SIGTERM) == before
    assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, set())



# A SIGTERM once the command's work is done, while its process only exits: the entry point
# (evaluation.launch) returned its code, the signal comes before the interpreter has exited.
_AFTER_THE_COMMAND = """
import os, signal, sys, time
from evaluation import launch
code = getattr(launch, sys.argv[1])(sys.argv[2:])
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(0.2)
sys.exit(code)
"""


@pytest.mark.parametrize("command", ["evaluation", "examples"])
def test_a_sigterm_after_a_finished_command_leaves_exit_0(tmp_path, command):
    """Its outputs are in place, so it exits 0, not killed by the signal (-15): a run on
    record as stopped would have its whole output called incomplete."""
    if command == "evaluation":
        argv = ["rare26", "--input", ROOT / "test" / "rare26" / "input", "--ground-truth",
                ROOT / "ground-truth" / "rare26", "--output", tmp_path / "out", "--workers", "1"]
        output = tmp_path / "out" / "metrics.json"
    else:
        argv = ["rare26", "--out", tmp_path / "out", "--cases", "3"]
        output = tmp_path / "out" / "input" / "predictions.json"
    env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    done = subprocess.run([sys.executable, "-c", _AFTER_THE_COMMAND, command, *map(str, argv)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert output.is_file()


def test_a_sigterm_after_a_finished_command_kills_a_process_not_its_own(tmp_path):
    """Called as a function inside another program (not through its entry point), the command
    gives SIGTERM back to the program's handler: its default kills it."""
    script = _AFTER_THE_COMMAND.replace("getattr(launch, sys.argv[1])", "__import__('evaluation.examples', "
                                        "fromlist=['main']).main")
    env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    done = subprocess.run([sys.executable, "-c", script, "examples", "rare26", "--out", str(tmp_path / "out"),
                           "--cases", "3"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGTERM, done.stderr


# ---------------------------------------------------------------------------------------------
# No space left for metrics.json


def assert_no_space_failure(code: int, err: str, output: Path, keep: set[str]):
    assert code == 3, err
    line = last_line(err)
    assert err.strip().splitlines() == [line]
    assert line.startswith(f"The evaluation could not run, {NOT_THEIR_FAULT}: metrics.json cannot be written to "
                           f"{output} (")
    assert set(os.listdir(output)) == keep  # no metrics.json, no temporary file left


def test_file_size_limit_while_writing_metrics(tmp_path):
    """RLIMIT_FSIZE in the run's process: metrics.json cannot be written whole (EFBIG)."""
    output = tmp_path / "out"
    process = evaluation_process(
        ["isic2019", "--input", ROOT / "test" / "isic2019" / "input",
         "--ground-truth", ROOT / "ground-truth" / "isic2019", "--output", output, "--workers", "1"],
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200)))
    _out, err = process.communicate(timeout=120)
    assert_no_space_failure(process.returncode, err, output, set())
    assert "(File too large)" in last_line(err)


@pytest.fixture
def small_tmpfs(tmp_path):
    folder = tmp_path / "tmpfs"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("key", params(KEYS))
def test_no_space_left_while_writing_metrics(small_tmpfs, key):
    """A full file system (a 16 KiB tmpfs, filled): exit 3, one line, no metrics.json; for every
    challenge (each writes metrics.json through the framework, after scoring)."""
    filler = small_tmpfs / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(descriptor, b"\0" * 512):
            pass
    except OSError:  # full
        pass
    finally:
        os.close(descriptor)
    process = evaluation_process(
        [key, "--input", ROOT / "test" / key / "input", "--ground-truth", ROOT / "ground-truth" / key,
         "--output", small_tmpfs, "--workers", "1"])
    _out, err = process.communicate(timeout=300)
    assert_no_space_failure(process.returncode, err, small_tmpfs, {"filler"})
    assert "(No space left on device)" in last_line(err)
