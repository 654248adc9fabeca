"""benchmarks/phase_3d.py stays runnable: its --quick mode (8 small cases) runs the whole 3D phase
of a challenge that is only a declaration of the segmentation kind, the read-only floor and
medpy's loop, and our numbers equal medpy's (MONAI is skipped where torch is absent). A smoke
test, not a timed one: the ratios it prints are not checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_quick_3d_phase_benchmark_runs_and_agrees_with_medpy(tmp_path):
    result = subprocess.run([sys.executable, "-m", "benchmarks.phase_3d", "--quick", "--medpy", "--peer-cases", "2",
                             "--data", str(tmp_path / "data"), "--monai-python", str(tmp_path / "no-monai")],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert any(line.startswith("ours / read-only floor: ") for line in lines), result.stdout
    medpy = [line for line in lines if line.startswith("medpy: ")]
    assert medpy and medpy[0].endswith("same numbers"), result.stdout
    assert any(line.startswith("monai: skipped") for line in lines), result.stdout
