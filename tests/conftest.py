"""Generic test helpers only (challenge-specific fixtures belong in their own test modules)."""

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# `pytest` run from anywhere (not only `python -m pytest` from the repository) finds the package.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds (deselect with -m 'not slow')")


@pytest.fixture(autouse=True)
def _no_evaluation_environment(monkeypatch):
    """The developer's own EVALUATION_* variables must not change what a test sees."""
    for name in ("EVALUATION_CHALLENGE", "EVALUATION_WORKERS"):
        monkeypatch.delenv(name, raising=False)


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    output: Path

    @property
    def last_error_line(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    @property
    def metrics(self) -> dict:
        return json.loads((self.output / "metrics.json").read_text())

    @property
    def wrote_metrics(self) -> bool:
        return (self.output / "metrics.json").exists()


@pytest.fixture
def evaluate(tmp_path, capsys):
    """evaluate(challenge, input_dir, ground_truth_dir, *extra_args) -> Run, in-process."""
    runs = iter(range(10**6))

    def run(challenge, input_dir, ground_truth_dir, *extra):
        output = tmp_path / f"output-{next(runs)}"
        from evaluation.cli import main

        code = main([challenge, "--input", str(input_dir), "--ground-truth", str(ground_truth_dir),
                     "--output", str(output), *map(str, extra)])
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err, output)

    return run
