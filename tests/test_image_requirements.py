"""One image per challenge: each challenge module declares the packages of requirements.txt its runs
need (RUNTIME_PACKAGES), and its image installs those alone (evaluation/image_requirements.py, read
by the Dockerfile). Checked here without Docker: the declarations name pins, are closed under the
packages' own dependencies, and suffice: every bundled example and invalid submission, run in fresh
interpreters (worker processes included) where every module outside the standard library, the
evaluation and the declared packages is blocked, gives the same bytes and messages as recorded."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from evaluation import image_requirements as ir
from evaluation.challenges import challenge_names
from evaluation.metrics.topology import NEEDED_PACKAGES

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = (ROOT / "requirements.txt").read_text()
CHALLENGES = challenge_names()

# Installed in every process of a run (sitecustomize): an import of a top-level module that is not in
# the standard library, not the evaluation and not in EVALUATION_ALLOWED_MODULES fails as if the
# package were not installed, the way it would in the challenge's image.
SITECUSTOMIZE = '''
import os, sys, sysconfig
from importlib.machinery import PathFinder
_allowed = set(os.environ["EVALUATION_ALLOWED_MODULES"].split(","))
_stdlib = os.path.realpath(sysconfig.get_path("stdlib")) + os.sep  # a venv's platstdlib holds its site-packages

class _NotInTheImage:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in _allowed or top in sys.stdlib_module_names or top == "evaluation":
            return None
        if path is None:  # a private module of the standard library (_sysconfigdata_*) is there
            spec = PathFinder.find_spec(name)
            origin = os.path.realpath(spec.origin) if spec is not None and spec.origin else ""
            if origin.startswith(_stdlib) and "site-packages" not in origin:
                return None
        raise ModuleNotFoundError(f"No module named {name!r} (not declared for this image)", name=name)

sys.meta_path.insert(0, _NotInTheImage())
'''


def modules_of(packages) -> set[str]:
    """The top-level modules the installed distributions `packages` provide."""
    wanted = {ir.normalized(p) for p in packages}
    return {module for module, dists in importlib.metadata.packages_distributions().items()
            if any(ir.normalized(d) in wanted for d in dists)}


def run_blocked(tmp_path, packages, args, root=ROOT) -> subprocess.CompletedProcess:
    """`python -m evaluation ARGS` (of the repository at `root`) in a fresh interpreter where only
    `packages` (and the standard library) can be imported, in the main process and in every worker
    it starts."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "EVALUATION_"))}
    env.update(PYTHONPATH=f"{site}{os.pathsep}{root}",
               EVALUATION_ALLOWED_MODULES=",".join(sorted(modules_of(packages))), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", "evaluation", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


# ---- the declarations ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", CHALLENGES)
def test_every_challenge_declares_pinned_packages_numpy_first(name):
    declared = ir.runtime_packages(name)
    assert declared[0] == "numpy" and len(set(map(ir.normalized, declared))) == len(declared)
    lines = ir.image_requirements(name, REQUIREMENTS)
    assert len(lines) == len(declared)
    assert {ir.normalized(line.split("==")[0]) for line in lines} == {ir.normalized(p) for p in declared}


def unmet_requirements(packages, requirements_text=REQUIREMENTS) -> list[str]:
    """What the image's pip check would report for an image of `packages` at the pins of
    `requirements_text`, here without Docker: each requirement of a package (extras aside, as
    installed here) that is not among them at a pin it accepts."""
    declared = {ir.normalized(p) for p in packages}
    pinned = {key: line.split("==")[1] for key, line in ir.pins(requirements_text).items()}
    unmet = []
    for package in sorted(declared):
        for text in importlib.metadata.requires(package) or ():
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            key = ir.normalized(requirement.name)
            if key not in declared:
                unmet.append(f"{package} needs {requirement.name}, which is not declared")
            elif not requirement.specifier.contains(pinned[key]):
                unmet.append(f"{package} needs {requirement}, pinned {pinned[key]}")
    return unmet


@pytest.mark.parametrize("name", CHALLENGES)
def test_declared_packages_include_their_own_dependencies(name):
    assert unmet_requirements(ir.runtime_packages(name)) == []


def test_the_topology_packages_are_scikit_image_and_everything_it_needs():
    """NEEDED_PACKAGES (what a challenge declaring ClDice or BettiError must declare) is
    scikit-image's installed requirements, followed to the end, extras aside: no more, no less,
    each pinned in requirements.txt at the version installed here, and closed as pip check wants."""
    closure, queue = set(), ["scikit-image"]
    while queue:
        package = ir.normalized(queue.pop())
        if package not in closure:
            closure.add(package)
            queue += [Requirement(text).name for text in importlib.metadata.requires(package) or ()
                      if Requirement(text).marker is None or Requirement(text).marker.evaluate({"extra": ""})]
    assert {ir.normalized(p) for p in NEEDED_PACKAGES} == closure
    pinned = ir.pins(REQUIREMENTS)
    for package in NEEDED_PACKAGES:
        assert pinned[ir.normalized(package)].split("==")[1] == importlib.metadata.version(package), package
    assert unmet_requirements(NEEDED_PACKAGES) == []


def test_every_pin_of_requirements_txt_is_needed_by_some_challenge_or_the_topology_metrics():
    """scikit-image and what it needs are pinned for the challenges that will declare ClDice or
    BettiError (no bundled one does yet); nothing else is pinned that no image installs."""
    declared = {ir.normalized(p) for name in CHALLENGES for p in ir.runtime_packages(name)}
    assert set(ir.pins(REQUIREMENTS)) == declared | {ir.normalized(p) for p in NEEDED_PACKAGES}


def test_the_segmentation_free_challenges_install_numpy_alone():
    """The images the issue measured at 969 MB: ISIC, RARE26 and HECKTOR tasks 2 and 3 need numpy only."""
    for name in ("isic2018", "isic2019", "rare26", "hecktor2025-task2", "hecktor2025-task3"):
        assert ir.image_requirements(name, REQUIREMENTS) == [ir.pins(REQUIREMENTS)["numpy"]]


# ---- the command the Dockerfile runs ---------------------------------------------------------------


def run_command(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    # -I: no site-packages, as in the image's build stage before anything is installed
    return subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); "
                           "from evaluation.image_requirements import main; sys.exit(main())", str(ROOT), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=60)


def test_command_prints_the_pins_of_the_challenge_with_the_standard_library_alone():
    result = run_command("csv2026", str(ROOT / "requirements.txt"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["numpy==2.4.6", "SimpleITK==2.5.7", "h5py==3.16.0",
                                     "opencv-python-headless==4.13.0.92", "imagecodecs==2026.3.6"]


def test_command_refuses_an_unknown_challenge_and_bad_usage():
    unknown = run_command("isic2020")
    assert unknown.returncode == 2 and "unknown challenge 'isic2020'" in unknown.stderr and not unknown.stdout
    assert run_command().returncode == 2
    assert run_command("rare26", "requirements.txt", "extra").returncode == 2


def test_command_names_a_declared_package_that_is_not_pinned(tmp_path):
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("numpy==2.4.6\nSimpleITK==2.5.7\nh5py==3.16.0\nimagecodecs==2026.3.6\n")  # no OpenCV
    result = run_command("csv2026", str(requirements))
    assert result.returncode == 3 and not result.stdout
    assert last_line(result.stderr) == ("csv2026 declares opencv-python-headless in RUNTIME_PACKAGES, but "
                                        "requirements.txt pins no such package: pin it there (name==version).")
    requirements.write_text("numpy>=2\n")
    loose = run_command("rare26", str(requirements))
    assert loose.returncode == 3 and "'numpy>=2' is not an exact pin" in loose.stderr


def test_a_folder_without_a_declaration_is_refused(tmp_path, monkeypatch):
    package = tmp_path / "evaluation" / "challenges" / "example"
    package.mkdir(parents=True)
    declaration = package / "__init__.py"
    declaration.write_text('class Example(Evaluation):\n    name = "example"\n')
    monkeypatch.setattr(ir, "__file__", str(tmp_path / "evaluation" / "image_requirements.py"))
    monkeypatch.setattr(ir, "folder_of", lambda name: "example" if name.startswith("example") else None)
    with pytest.raises(ir.DeclarationError, match=r"example/__init__\.py .challenge example. has no top-level "
                       r"RUNTIME_PACKAGES"):
        ir.runtime_packages("example")
    declaration.write_text('RUNTIME_PACKAGES = ("numpy", PACKAGE)\n')
    with pytest.raises(ir.DeclarationError, match="must be a literal tuple of package names"):
        ir.runtime_packages("example")
    declaration.write_text('RUNTIME_PACKAGES = ("numpy",)\n')
    assert ir.runtime_packages("example") == ("numpy",)
    with pytest.raises(KeyError):  # a tuple is the challenge named as the folder only
        ir.runtime_packages("example-a")
    declaration.write_text('RUNTIME_PACKAGES = {"example-a": ("numpy",), "example-b": ("numpy", "h5py")}\n')
    assert ir.runtime_packages("example-b") == ("numpy", "h5py")
    with pytest.raises(KeyError):
        ir.runtime_packages("example-c")
    with pytest.raises(KeyError):
        ir.runtime_packages("other")


# ---- the declarations suffice: runs with everything else blocked ----------------------------------


@pytest.mark.parametrize("name", CHALLENGES)
def test_the_bundled_example_scores_identically_with_only_the_declared_packages(name, tmp_path):
    out = tmp_path / "out"
    result = run_blocked(tmp_path, ir.runtime_packages(name),
                         [name, "--input", f"test/{name}/input", "--ground-truth", f"ground-truth/{name}",
                          "--output", str(out), "--workers", "2"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert (out / "metrics.json").read_bytes() == (ROOT / "test" / name / "expected_metrics.json").read_bytes()


INVALID = sorted((name, case.name) for name in CHALLENGES for case in (ROOT / "test" / name / "invalid").glob("*/"))


@pytest.mark.parametrize("name, case", INVALID)
def test_invalid_submissions_are_refused_alike_with_only_the_declared_packages(name, case, tmp_path):
    """The error paths too: still the participant's fault (exit 1, the recorded line), never a
    package missing from the image (exit 3)."""
    folder = ROOT / "test" / name / "invalid" / case
    result = run_blocked(tmp_path, ir.runtime_packages(name),
                         [name, "--input", str(folder / "input"), "--ground-truth", f"ground-truth/{name}",
                          "--output", str(tmp_path / "out"), "--workers", "2"])
    assert result.returncode == 1, result.stderr[-2000:]
    assert last_line(result.stderr) == last_line((folder / "expected_error.txt").read_text())


def test_hungarian_lesion_matching_runs_in_the_task1_image(tmp_path):
    """An organizer's setting that reaches scipy: declared by HECKTOR task 1, so its image runs it."""
    truth = tmp_path / "truth"
    truth.mkdir()
    for path in (ROOT / "ground-truth" / "hecktor2025-task1").iterdir():
        (truth / path.name).write_bytes(path.read_bytes())
    (truth / "config.json").write_text(json.dumps({"lesion_matching": "hungarian"}))
    out = tmp_path / "out"
    result = run_blocked(tmp_path, ir.runtime_packages("hecktor2025-task1"),
                         ["hecktor2025-task1", "--input", "test/hecktor2025-task1/input", "--ground-truth", str(truth),
                          "--output", str(out), "--workers", "1"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads((out / "metrics.json").read_text())["settings"]["lesion_matching"] == "hungarian"


def test_a_package_left_out_of_the_declaration_stops_the_run(tmp_path):
    """The blocking is real: CSV 2026 without h5py cannot read its ground truth, and says which
    package its image lacks (exit 3, the organizer's fault, not the participant's)."""
    packages = [p for p in ir.runtime_packages("csv2026") if p != "h5py"]
    result = run_blocked(tmp_path, packages, ["csv2026", "--input", "test/csv2026/input", "--ground-truth",
                                              "ground-truth/csv2026", "--output", str(tmp_path / "out"),
                                              "--workers", "1"])
    assert result.returncode == 3, result.stderr[-2000:]
    assert "the package h5py (module h5py) is not installed" in last_line(result.stderr)
    assert not (tmp_path / "out" / "metrics.json").exists()


@pytest.mark.parametrize("declared", [True, False], ids=["imagecodecs-declared", "imagecodecs-blocked"])
def test_szip_masks_are_scored_in_the_csv2026_image(tmp_path, declared):
    """Masks in szip (a filter of h5py's HDF5) need imagecodecs (libaec) for the length each chunk
    decodes to: declared, the csv2026 image scores them; without it the run says which package
    the image lacks (exit 3), never a traceback or the participant's fault."""
    from evaluation.challenges.csv2026.examples import write_dataset
    from tests.hostile_files import h5_rewrite_masks

    write_dataset(tmp_path / "data", seed=5, cases=4, phase="file")
    for path in sorted((tmp_path / "data" / "input").rglob("*.h5")):
        h5_rewrite_masks(path, "szip")
    packages = [p for p in ir.runtime_packages("csv2026") if declared or p != "imagecodecs"]
    result = run_blocked(tmp_path, packages, ["csv2026", "--input", str(tmp_path / "data" / "input"),
                                              "--ground-truth", str(tmp_path / "data" / "ground-truth"),
                                              "--output", str(tmp_path / "out"), "--workers", "1"])
    if declared:
        assert result.returncode == 0, result.stderr[-2000:]
        return
    assert result.returncode == 3, result.stderr[-2000:]
    assert "the package imagecodecs (module imagecodecs) is not installed" in last_line(result.stderr)
    assert not (tmp_path / "out" / "metrics.json").exists()
