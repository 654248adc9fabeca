"""Generic test helpers only (challenge-specific fixtures belong in their own test modules)."""

import sys
from pathlib import Path

import pytest

# `pytest` run from anywhere (not only `python -m pytest` from the repository) finds the package.
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.cli_runs import DROP_ENV, Run  # noqa: E402 (after the path above)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds (deselect with -m 'not slow')")


@pytest.fixture(autouse=True)
def _no_evaluation_environment(monkeypatch):
    """The developer's own EVALUATION_* variables must not change what a test sees."""
    for name in DROP_ENV:
        monkeypatch.delenv(name, raising=False)


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


@pytest.fixture(scope="session")
def schema_validator():
    """A validator of the Vega-Lite 5.1.0 JSON schema, the version grand-challenge.org draws charts
    with (charts and the final-ranking report). tests/fixtures/vega-lite-v5.1.0-schema.json is
    build/vega-lite-schema.json of the npm package vega-lite@5.1.0, unchanged."""
    import json

    import jsonschema

    schema = json.loads((Path(__file__).parent / "fixtures" / "vega-lite-v5.1.0-schema.json").read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)
