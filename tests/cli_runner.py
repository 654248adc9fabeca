"""Running the command line in-process and reading what it left (shared by challenge tests)."""

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from evaluation.cli import main


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
        code = main([challenge, "--input", str(input_dir), "--ground-truth", str(ground_truth_dir),
                     "--output", str(output), *map(str, extra)])
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err, output)

    return run
