"""Generic test fixtures only (challenge-specific ones belong in their own test modules; shared
helper functions are in tests/common.py).

What a challenge provides for the generic tests
===============================================
The generic tests are parametrised over the registry (evaluation.challenges.available_challenges(),
and evaluation.examples.examples() for the examples): there is no list of challenge names to
edit. A new challenge folder evaluation/challenges/<folder>/ gets every generic test (hostile
inputs, faults, phase, phase pack, charts, examples, organizer command, final-ranking teams,
start-up, image requirements, packaging) once it provides:

1. In <folder>/__init__.py: the Evaluation subclass(es), each `name` starting with the folder's
   name, with `leaderboards` (Columns) and `final_rankings`; `RUNTIME_PACKAGES`; heavy libraries
   imported inside functions only (tests/test_startup.py).
2. In <folder>/examples.py (a module whose name ends in `examples`): `EXAMPLES = {name:
   Example(synthesize=..., invalid_examples=..., submission=..., min_cases=..., lineup=Lineup(...))}`;
   `submission` is the organizer command's writer, `lineup` the final ranking's teams.
3. Its bundled data: ground-truth/<name>/ and test/<name>/ (input/, expected_metrics.json,
   invalid/<case>/{input/, expected_error.txt}, leaderboard/<team>/), all written by
   `python scripts/make_example.py NAME [--force]` (the teams alone by
   `python scripts/make_leaderboard_examples.py NAME`).
4. Its page docs/challenges/<folder>.md, holding what `python -m evaluation.phase NAME` prints.

Per-challenge oracles are optional tables keyed by name, whose absence means only the generic
checks run (never a failure, never a skip of the generic ones): OFFICIAL_RULES
(tests/test_leaderboard_examples.py: the final ranking's rule stated from the challenge's docs),
SYNTHETIC and EXACT (tests/test_bootstrap_contract.py: edge data sets for the bootstrap contract,
and bit-for-bit comparison where the aggregate is exact on whole counts),
SCORE_PATHS, PAGE_VARIANTS and EXTRA_VARIANTS (tests/test_phase.py), FILE_NAMES
(tests/test_charts.py), the format-specific hostile cases (tests/test_hostile.py; the generic ones,
`generic-<name>-*`, run for every challenge) and SLOW (tests/common.py: a `slow` marker only).
A challenge whose ground truth is not recorded in tests/fixtures/bundled_ground_truth.json is
compared with a fresh synthesis instead (tests/bundled.py).
"""

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
def synthetic_dataset(tmp_path_factory):
    """synthetic_dataset(challenge, seed=0, cases=None) -> folder holding ground-truth/ and input/,
    written once per session by the challenge's Example.synthesize (read only: copy it before
    changing anything)."""
    made: dict[tuple, Path] = {}

    def make(challenge: str, seed: int = 0, cases: int | None = None) -> Path:
        key = (challenge, seed, cases)
        if key not in made:
            from evaluation.examples import synthesize

            folder = tmp_path_factory.mktemp(f"{challenge}-seed{seed}")
            synthesize(challenge, folder, seed=seed, cases=cases)
            made[key] = folder
        return made[key]

    return make


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
