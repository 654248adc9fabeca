"""The package organizers install (pyproject.toml), its commands, and what a Python without the
pinned requirements says: built and run for real, offline."""

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from evaluation.challenges import challenge_folders
from tests.common import challenges, params

ROOT = Path(__file__).resolve().parents[1]
PINS = [line.split("#", 1)[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()]
PINS = [pin for pin in PINS if pin]
COMMANDS = {"challenge-evaluation": "evaluation.launch:evaluation",
            "challenge-evaluation-phase": "evaluation.launch:phase",
            "challenge-evaluation-examples": "evaluation.launch:examples",
            "challenge-evaluation-leaderboard": "evaluation.launch:leaderboard"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of pyproject.toml, built without network (the pinned setuptools of requirements-dev.txt)."""
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-build-isolation", "--no-index", "-w", str(out), str(ROOT)],
                   check=True, cwd=build, env={**os.environ, "PIP_NO_INPUT": "1"})
    (found,) = out.glob("challenge_evaluation-*.whl")
    return found


def _metadata(wheel: Path) -> tuple[str, str, list[str]]:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        entry = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        return archive.read(info).decode(), archive.read(entry).decode(), names


def test_wheel_requires_exactly_the_pins_of_requirements_txt(wheel):
    metadata, _, _ = _metadata(wheel)
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert sorted(requires) == sorted(PINS)
    assert "Requires-Python: >=3.11" in metadata


def test_wheel_declares_the_commands_and_holds_the_package(wheel):
    _, entry_points, names = _metadata(wheel)
    for command, target in COMMANDS.items():
        assert re.search(rf"^{re.escape(command)} = {re.escape(target)}$", entry_points, re.M), entry_points
    assert "evaluation/cli.py" in names
    assert not any(name.startswith(("tests/", "benchmarks/", "test/", "ground-truth/")) for name in names)


@pytest.mark.parametrize("folder", challenge_folders())
def test_wheel_holds_every_module_of_every_challenge_folder(wheel, folder):
    _, _, names = _metadata(wheel)
    modules = sorted(p.relative_to(ROOT).as_posix()
                     for p in (ROOT / "evaluation" / "challenges" / folder).rglob("*.py"))
    assert f"evaluation/challenges/{folder}/__init__.py" in modules
    assert [m for m in modules if m not in names] == []


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--no-index", "--target", str(target), str(wheel)], check=True)
    return target


@pytest.mark.parametrize("challenge", params(challenges()))
def test_installed_command_runs_from_any_folder(installed, tmp_path, challenge):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(installed)}
    for name in ("EVALUATION_CHALLENGE", "EVALUATION_WORKERS"):
        env.pop(name, None)
    run = subprocess.run([str(installed / "bin" / "challenge-evaluation"), challenge,
                          "--input", str(ROOT / "test" / challenge / "input"),
                          "--ground-truth", str(ROOT / "ground-truth" / challenge),
                          "--output", str(tmp_path / "out")], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    expected = (ROOT / "test" / challenge / "expected_metrics.json").read_bytes()
    assert (tmp_path / "out/metrics.json").read_bytes() == expected
    assert "evaluation" not in {p.name for p in elsewhere.iterdir()}


RUNS = {"evaluation": ["rare26", "--input", "test/rare26/input", "--ground-truth", "ground-truth/rare26",
                       "--output", "{tmp}"],
        "evaluation.phase": ["rare26"],
        "evaluation.examples": ["rare26", "--out", "{tmp}"]}


@pytest.mark.parametrize("module", sorted(RUNS))
def test_python_without_the_requirements_gets_one_line(module, tmp_path):
    # -S: no site-packages, so numpy, scikit-learn... are missing, as with a plain system python3.
    arguments = [argument.format(tmp=tmp_path / "out") for argument in RUNS[module]]
    run = subprocess.run([sys.executable, "-S", "-m", module, *arguments], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 3, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in run.stderr
    assert re.search(r"the package \S+ \(module \S+\) is not installed in \S+ \(Python 3\.\d+\.\d+\)", lines[0])
    assert "pip install -r requirements.txt" in lines[0]
