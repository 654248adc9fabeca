"""The machine's limits, run for real: a data limit (the platform's RLIMIT_DATA, set with
setrlimit in the command's own process) reached at any step, a shared library that cannot be
mapped under it, and too few file descriptors (RLIMIT_NOFILE, `ulimit -n`) for the commands.
Each is exit 3 with the one line saying which limit of the machine was reached: never exit 1
(the participant's fault), never 4 (ours), never a hang.

OpenBLAS (numpy's) maps its buffer at its first matrix product and calls exit(1) when it cannot;
the commands have it mapped at their start (evaluation.machine.load_numpy), so that the aggregate
step, which used to be the first product, can no longer end a run with exit 1."""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.common import last_line

ROOT = Path(__file__).resolve().parents[1]
ENV = {**{k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}, "PYTHONPATH": str(ROOT)}
MEMORY_LINE = "ran out of memory under this machine's limit"


def limited(kind: int, value: int):
    def apply() -> None:
        resource.setrlimit(kind, (value, resource.getrlimit(kind)[1]))
    return apply


def command(argv: list[str], kind: int, value: int, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=300,
                          preexec_fn=limited(kind, value))


@pytest.fixture(scope="module")
def task1_300(tmp_path_factory):
    """HECKTOR task 1's synthetic example of 300 patients (the issue's): every case scores under
    100 MB of data, and the aggregate step's matrix product was OpenBLAS's first."""
    folder = tmp_path_factory.mktemp("task1-300")
    made = subprocess.run([sys.executable, "-m", "evaluation.examples", "hecktor2025-task1", "--out", str(folder),
                           "--cases", "300"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr
    return folder


# From too little to start up to enough for the whole run (about 112 MB here), the 100 MB among them.
DATA_LIMITS_MB = [10, 20, 30, 45, 60, 80, 90, 100, 105, 110, 115, 120, 140, 200]


@pytest.mark.parametrize("megabytes", DATA_LIMITS_MB)
def test_a_data_limit_reached_at_any_step_is_exit_3_with_the_memory_line(task1_300, tmp_path, megabytes):
    result = command(["-m", "evaluation", "hecktor2025-task1", "--input", str(task1_300 / "input"), "--ground-truth",
                      str(task1_300 / "ground-truth"), "--output", str(tmp_path / "out"), "--workers", "2"],
                     resource.RLIMIT_DATA, megabytes * 10**6)
    assert "OpenBLAS" not in result.stdout + result.stderr
    if result.returncode == 0:
        assert (tmp_path / "out" / "metrics.json").is_file()
        return
    assert result.returncode == 3, result.stderr
    assert MEMORY_LINE in last_line(result.stderr) and "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "metrics.json").exists()


def test_the_aggregate_step_maps_no_new_openblas_buffer():
    """What the fix rests on: after load_numpy, the products of the aggregate steps (a row of
    case weights by a column of per-case values, a matrix by a matrix) map no new OpenBLAS
    buffer (32 MiB; less than 1 MiB of data may come and go with the arrays), here and in a
    forked worker."""
    script = """
import os, re
def data():
    return int(re.search(r"VmData:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
from evaluation.machine import load_numpy
load_numpy()
import numpy as np
before = data()
np.ones((1, 300)) @ np.ones((300, 3)); np.ones((200, 200)) @ np.ones((200, 200))
pid = os.fork()
if pid == 0:
    np.ones((5, 300)) @ np.ones((300, 30))
    os._exit(0 if data() - before < 1024 else 1)
print(data() - before < 1024, os.waitpid(pid, 0)[1])
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**ENV, "OPENBLAS_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "0"], done.stdout + done.stderr


@pytest.mark.parametrize("headroom_mb", [2, 10, 20])
def test_a_shared_library_that_cannot_be_mapped_is_the_memory_line(headroom_mb):
    """OpenCV's libraries loaded (where CAMELYON16 and CSV 2026 first score a case) with only a
    few megabytes of data left: the loader's ImportError is the machine's limit (exit 3)."""
    script = f"""
import re, resource
from evaluation.machine import load_numpy
load_numpy()
used = int(re.search(r"VmData:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) << 10
resource.setrlimit(resource.RLIMIT_DATA, (used + ({headroom_mb} << 20), resource.RLIM_INFINITY))
from evaluation.launch import failure
try:
    import cv2
except ImportError as error:
    assert "failed to map segment" in str(error), error
    print(*failure(error), sep="\\n")
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**ENV, "OPENBLAS_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=120)
    code, line = done.stdout.splitlines()
    assert code == "3" and MEMORY_LINE in line, done.stdout + done.stderr


# ---- file descriptors --------------------------------------------------------------------------


FILE_LIMITS = [5, 6, 7, 8, 10, 12, 14, 16, 24, 48]


def commands(tmp_path: Path) -> dict[str, list[str]]:
    example = ["--input", "test/{0}/input", "--ground-truth", "ground-truth/{0}", "--output", str(tmp_path / "out")]
    return {
        "evaluation hecktor2025-task1": ["-m", "evaluation", "hecktor2025-task1",
                                         *[a.format("hecktor2025-task1") for a in example], "--workers", "2"],
        "evaluation camelyon16": ["-m", "evaluation", "camelyon16", *[a.format("camelyon16") for a in example],
                                  "--workers", "2"],
        "phase": ["-m", "evaluation.phase", "hecktor2025-task1", "--ground-truth", "ground-truth/hecktor2025-task1"],
        "examples": ["-m", "evaluation.examples", "hecktor2025-task1", "--out", str(tmp_path / "example")],
    }


@pytest.mark.parametrize("limit", FILE_LIMITS)
@pytest.mark.parametrize("name", ["evaluation hecktor2025-task1", "evaluation camelyon16", "phase", "examples"])
def test_too_few_file_descriptors_is_exit_3_for_every_command(tmp_path, name, limit):
    """Too many open files is the machine's limit wherever it happens (opening a prediction, a
    pool's pipes, a module's file): exit 3 and the line saying so, never exit 1 blaming the file
    being read, never 4, never a hang on the pool's workers. (The final ranking's own test is in
    tests/test_leaderboard_hostile.py.)"""
    result = command(commands(tmp_path)[name], resource.RLIMIT_NOFILE, limit)
    if result.returncode == 0:
        return
    line = last_line(result.stderr)
    assert result.returncode == 3, result.stderr
    assert re.search(rf"ran out of file descriptors under this machine's limit \({limit} open files", line), line
    assert not (tmp_path / "out" / "metrics.json").exists()


@pytest.mark.parametrize("headroom_mb", [5, 30, 45, 60, 200])
def test_an_image_that_does_not_fit_is_the_memory_line_not_a_corrupt_file(tmp_path, headroom_mb):
    """A 100 x 512 x 512 NIfTI mask (25 MiB decoded) read with little data left: ITK's allocation
    error (a RuntimeError) and the NIfTI reader's bare failure used to say the participant's file
    was "truncated or corrupt" (exit 1); it is the machine's limit (exit 3). With room, it reads."""
    import numpy as np
    import SimpleITK as sitk

    sitk.WriteImage(sitk.GetImageFromArray(np.zeros((100, 512, 512), np.uint8)), str(tmp_path / "mask.nii.gz"), True)
    script = f"""
import re, resource
from pathlib import Path
from evaluation.machine import load_numpy
load_numpy()
import SimpleITK
from evaluation.launch import failure
from evaluation.reading.files import Origin
from evaluation.reading.images import open_image
image = open_image(Origin.submission(Path({str(tmp_path)!r})), Path({str(tmp_path / "mask.nii.gz")!r}), "Case x")
used = int(re.search(r"VmData:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) << 10
resource.setrlimit(resource.RLIMIT_DATA, (used + ({headroom_mb} << 20), resource.RLIM_INFINITY))
try:
    print(image.read((100, 512, 512)).shape == (100, 512, 512))
except Exception as error:
    print(*failure(error), sep="\\n")
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**ENV, "OPENBLAS_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    if headroom_mb >= 60:
        assert lines == ["True"], done.stdout + done.stderr
    else:
        assert lines[0] == "3" and MEMORY_LINE in lines[1], done.stdout + done.stderr
