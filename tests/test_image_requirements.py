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
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from packaging.requirements import Requirement

from evaluation import image_requirements as ir
from evaluation.challenges import challenge_class, challenge_names
from evaluation.metrics.topology import BETTI_PACKAGES, CLDICE_PACKAGES

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


@pytest.mark.parametrize("name", CHALLENGES)
def test_declared_packages_include_what_the_declaration_needs(name):
    """What a declaration adds beyond its kind's packages (the segmentation kind's ClDice and
    BettiError: scikit-image) is in its folder's RUNTIME_PACKAGES; the class could not be made
    otherwise (check_runtime_packages), and this says so for every challenge of the registry."""
    declared = {ir.normalized(p) for p in ir.runtime_packages(name)}
    for what, packages in challenge_class(name).needed_packages().items():
        assert {ir.normalized(p) for p in packages} <= declared, f"{name}: {what} needs {packages}"


def requirement_closure(*packages: str) -> set[str]:
    """`packages` and everything they require as installed here (extras aside), followed to the end."""
    closure, queue = set(), list(packages)
    while queue:
        package = ir.normalized(queue.pop())
        if package not in closure:
            closure.add(package)
            for text in importlib.metadata.requires(package) or ():
                requirement = Requirement(text)
                if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                    queue.append(requirement.name)
    return closure


def test_the_topology_packages_are_their_libraries_and_everything_those_need():
    """CLDICE_PACKAGES (what a challenge declaring ClDice must declare) is scikit-image with its
    installed requirements followed to the end, BETTI_PACKAGES that and cc3d's: no more, no less,
    each pinned in requirements.txt at the version installed here, and closed as pip check wants."""
    assert {ir.normalized(p) for p in CLDICE_PACKAGES} == requirement_closure("scikit-image")
    assert {ir.normalized(p) for p in BETTI_PACKAGES} == requirement_closure("scikit-image", "connected-components-3d")
    pinned = ir.pins(REQUIREMENTS)
    for package in BETTI_PACKAGES:
        assert pinned[ir.normalized(package)].split("==")[1] == importlib.metadata.version(package), package
    assert unmet_requirements(CLDICE_PACKAGES) == [] and unmet_requirements(BETTI_PACKAGES) == []


def test_every_pin_of_requirements_txt_is_needed_by_some_challenge_or_the_topology_metrics():
    """scikit-image and what it needs are pinned for the challenges that will declare ClDice or
    BettiError (no bundled one does yet); nothing else is pinned that no image installs."""
    declared = {ir.normalized(p) for name in CHALLENGES for p in ir.runtime_packages(name)}
    assert set(ir.pins(REQUIREMENTS)) == declared | {ir.normalized(p) for p in BETTI_PACKAGES}


def test_the_segmentation_free_challenges_install_numpy_alone():
    """The images the issue measured at 969 MB: ISIC, RARE26 and HECKTOR tasks 2 and 3 need numpy only."""
    for name in ("isic2018", "isic2019", "rare26", "hecktor2025-task2", "hecktor2025-task3"):
        assert ir.image_requirements(name, REQUIREMENTS) == [ir.pins(REQUIREMENTS)["numpy"]]


# ---- the command the Dockerfile runs ---------------------------------------------------------------


def run_command(*args, cwd=ROOT, root=ROOT) -> subprocess.CompletedProcess:
    # -I: no site-packages, as in the image's build stage before anything is installed
    return subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); "
                           "from evaluation.image_requirements import main; sys.exit(main())", str(root), *args],
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


# ---- a scaffolded segmentation challenge that declares the topology metrics -----------------------

TOPOLOGY = "acmetopo"  # python -m evaluation.new acmetopo --template segmentation, plus ClDice and BettiError
TEMPLATE_PACKAGES = ("numpy", "SimpleITK", "scipy")  # what the segmentation template declares
TOPOLOGY_DECLARED = (*TEMPLATE_PACKAGES, *(p for p in BETTI_PACKAGES if p not in TEMPLATE_PACKAGES))
COULD_NOT = "The evaluation could not run, through no fault of the submission: "
ASK = " (please tell the challenge organizers)."


@pytest.fixture(scope="module")
def topology_copy(tmp_path_factory) -> Path:
    """A copy of the repository in which the scaffold wrote a segmentation challenge, then ClDice()
    and BettiError(0) were added to its label metrics, as an organizer would (each test declares
    the RUNTIME_PACKAGES it needs: declare_packages)."""
    from tests.test_new import repository_copy

    copy = repository_copy(tmp_path_factory.mktemp("topology") / "repo")
    scaffolded = subprocess.run([sys.executable, "-m", "evaluation.new", TOPOLOGY, "--template", "segmentation"],
                                cwd=copy, capture_output=True, text=True, timeout=300,
                                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert scaffolded.returncode == 0, scaffolded.stderr
    declaration = copy / "evaluation" / "challenges" / TOPOLOGY / "__init__.py"
    text = declaration.read_text()
    assert text.count("segmentation import Dice,") == 1 and text.count("        Dice(),\n") == 1, \
        "the template changed: edit this test"
    edited = text.replace("segmentation import Dice,", "segmentation import BettiError, ClDice, Dice,").replace(
        "        Dice(),\n", "        Dice(),\n        ClDice(),\n        BettiError(0),\n")
    declaration.write_text(edited)
    return copy


def declare_packages(copy: Path, packages: tuple[str, ...]) -> None:
    """The scaffolded challenge's RUNTIME_PACKAGES, rewritten to `packages`."""
    declaration = copy / "evaluation" / "challenges" / TOPOLOGY / "__init__.py"
    text = declaration.read_text()
    start = text.index("RUNTIME_PACKAGES = (")
    end = text.index(")", start) + 1
    declaration.write_text(text[:start] + f"RUNTIME_PACKAGES = {packages!r}" + text[end:])


def run_topology(copy: Path, out: Path, workers: int = 1, packages=None, tmp_path=None,
                 submission=None) -> subprocess.CompletedProcess:
    """The evaluation of the scaffold's bundled example (or `submission`) in the copy: with this
    Python's packages, or (`packages`) with only those importable, as in an image that installs
    them alone."""
    args = [TOPOLOGY, "--input", str(submission or f"test/{TOPOLOGY}/input"), "--ground-truth",
            f"ground-truth/{TOPOLOGY}", "--output", str(out), "--workers", str(workers)]
    if packages is not None:
        return run_blocked(tmp_path, packages, args, root=copy)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "EVALUATION_"))}
    return subprocess.run([sys.executable, "-m", "evaluation", *args], cwd=copy, capture_output=True, text=True,
                          timeout=300, env={**env, "PYTHONDONTWRITEBYTECODE": "1"})


def stderr_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("declared, missing", [
    (TEMPLATE_PACKAGES, ("scikit-image", "networkx", "pillow", "imageio", "tifffile", "lazy-loader", "packaging",
                         "connected-components-3d")),
    ((*TEMPLATE_PACKAGES, "scikit-image"), ("networkx", "pillow", "imageio", "tifffile", "lazy-loader", "packaging",
                                            "connected-components-3d")),
], ids=["template-packages", "scikit-image-alone"])
def test_a_topology_declaration_that_leaves_out_scikit_image_is_refused_in_the_first_local_run(
        topology_copy, tmp_path, declared, missing):
    """The organizer added ClDice and BettiError but not what they need: the first run here, where
    scikit-image is installed, already refuses (exit 3, one line naming what to declare), so no
    image that fails on every submission is built. The build stage would have installed the
    declared pins alone."""
    declare_packages(topology_copy, declared)
    result = run_topology(topology_copy, tmp_path / "out")
    assert result.returncode == 3, result.stderr[-2000:]
    listed = ", ".join(f'"{package}"' for package in missing)
    assert stderr_lines(result) == [
        f"{COULD_NOT}{TOPOLOGY} declares ClDice and BettiError, which its image cannot run without {listed}: add them "
        f"to RUNTIME_PACKAGES in evaluation/challenges/{TOPOLOGY}/__init__.py and rebuild the image (it installs "
        f"only the packages declared there; docs/adding-a-challenge.md).{ASK}"]
    assert not (tmp_path / "out" / "metrics.json").exists()
    image = run_command(TOPOLOGY, "requirements.txt", cwd=topology_copy, root=topology_copy)
    assert image.returncode == 0, image.stderr
    installed = {ir.normalized(line.split("==")[0]) for line in image.stdout.split()}
    assert installed == {ir.normalized(p) for p in declared}  # what the image would have held, and lacked
    assert not installed & {ir.normalized(p) for p in missing}


def test_a_topology_declaration_gets_scikit_image_pins_closed_as_pip_check_wants(topology_copy):
    """Declared, its image's pins (the command the Dockerfile runs, standard library alone) are
    requirements.txt's for the template's packages and scikit-image with everything it needs, and
    every requirement of each is among them at a version it accepts (the image's pip check)."""
    declare_packages(topology_copy, TOPOLOGY_DECLARED)
    image = run_command(TOPOLOGY, "requirements.txt", cwd=topology_copy, root=topology_copy)
    assert image.returncode == 0, image.stderr
    lines = image.stdout.split()
    pinned = ir.pins(REQUIREMENTS)
    wanted = {ir.normalized(p) for p in TOPOLOGY_DECLARED}
    assert lines == [line for key, line in pinned.items() if key in wanted]  # requirements.txt's order
    assert "scikit-image==0.26.0" in lines and len(lines) == len(TOPOLOGY_DECLARED)
    assert unmet_requirements([line.split("==")[0] for line in lines]) == []


def test_a_topology_declaration_scores_with_only_its_declared_packages(topology_copy, tmp_path):
    """The declaration suffices: run where nothing but the declared packages can be imported (the
    image's set), clDice and the Betti-0 error of every case and label are those computed here
    directly: scikit-image's skeletonize on the whole masks (Lee's thinning in 3D), empty rules
    1 / 0 / 0 and 0 for an empty skeleton, and scipy's 26-connected components."""
    import SimpleITK as sitk
    from scipy import ndimage
    from skimage.morphology import skeletonize

    declare_packages(topology_copy, TOPOLOGY_DECLARED)
    # the bundled example, each prediction given a thin line of kidney in a corner (a component
    # and a skeleton of its own): nonzero Betti-0 errors, clDice below 1
    example = tmp_path / "input"
    shutil.copytree(topology_copy / "test" / TOPOLOGY / "input", example)
    jobs = json.loads((example / "predictions.json").read_text())
    for job in jobs:
        output = example / job["pk"] / "output" / job["outputs"][0]["socket"]["relative_path"]
        path = next(output.iterdir())
        image = sitk.ReadImage(str(path))
        voxels = sitk.GetArrayFromImage(image)
        assert not voxels[0, 0, 1:9].any() and not voxels[0:2, 0:2, 0:10].any()
        voxels[0, 0, 1:9] = 3
        written = sitk.GetImageFromArray(voxels)
        written.CopyInformation(image)
        sitk.WriteImage(written, str(path))
    out = tmp_path / "out"
    result = run_topology(topology_copy, out, workers=2, packages=TOPOLOGY_DECLARED, tmp_path=tmp_path,
                          submission=example)
    assert result.returncode == 0, result.stderr[-2000:]
    cases = json.loads((out / "metrics.json").read_text())["cases"]
    checked, values = 0, set()
    for job in jobs:
        case = job["inputs"][0]["image"]["name"].rsplit(".", 1)[0]
        output = example / job["pk"] / "output" / job["outputs"][0]["socket"]["relative_path"]
        prediction = sitk.GetArrayFromImage(sitk.ReadImage(str(next(output.iterdir()))))
        truth = sitk.GetArrayFromImage(sitk.ReadImage(str(topology_copy / "ground-truth" / TOPOLOGY / f"{case}.mha")))
        for value, label in ((1, "liver"), (2, "spleen"), (3, "kidney")):
            p, t = prediction == value, truth == value
            if not (p.any() and t.any()):
                cldice = float(not p.any() and not t.any())
            else:
                sp, st = skeletonize(p), skeletonize(t)
                if not (sp.any() and st.any()):
                    cldice = 0.0
                else:
                    precision, sensitivity = (sp & t).sum() / sp.sum(), (st & p).sum() / st.sum()
                    cldice = 0.0 if precision + sensitivity == 0 else 2 * precision * sensitivity / (
                        precision + sensitivity)
            components = [ndimage.label(m, structure=np.ones((3, 3, 3)))[1] for m in (p, t)]
            assert cases[case][label]["cldice"] == pytest.approx(cldice, abs=1e-12), (case, label)
            assert cases[case][label]["betti0_error"] == abs(components[0] - components[1]), (case, label)
            checked += 1
            values |= {(label, "cldice", round(cldice, 6)), (label, "betti0_error", abs(components[0] - components[1]))}
    assert checked >= 12
    # the line made these nontrivial: a Betti-0 error of 1, a clDice strictly between 0 and 1
    assert ("kidney", "betti0_error", 1) in values, values
    assert any(0 < value < 1 for label, metric, value in values if (label, metric) == ("kidney", "cldice")), values


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("hidden, module", [("scikit-image", "skimage"), ("lazy-loader", "lazy_loader"),
                                            ("connected-components-3d", "cc3d")])
def test_a_topology_library_missing_at_run_time_is_one_line_exit_3(topology_copy, tmp_path, hidden, module, workers):
    """Declared, but this Python cannot import scikit-image (or lazy-loader, which it imports
    first, or BettiError's cc3d): a real process where the module is not importable, in the main
    process and the workers, stops before any case with one line saying so (exit 3, the
    organizer's), never a case's traceback (exit 4), and no metrics.json."""
    declare_packages(topology_copy, TOPOLOGY_DECLARED)
    packages = [p for p in TOPOLOGY_DECLARED if p != hidden]
    out = tmp_path / "out"
    result = run_topology(topology_copy, out, workers=workers, packages=packages, tmp_path=tmp_path)
    assert result.returncode == 3, result.stderr[-2000:]
    listed = ", ".join(f'"{package}"' for package in BETTI_PACKAGES)
    assert stderr_lines(result) == [
        f"{COULD_NOT}{TOPOLOGY} declares ClDice and BettiError, whose libraries this Python cannot import "
        f"(ModuleNotFoundError: No module named '{module}' (not declared for this image)): rebuild the image "
        f"(./build.sh {TOPOLOGY}), whose RUNTIME_PACKAGES must list {listed}, or outside an image install "
        f"requirements.txt (pip install -r requirements.txt).{ASK}"]
    assert "Scoring" not in result.stdout  # refused before any case was read
    assert not (out / "metrics.json").exists()


def test_a_class_is_checked_against_its_own_entry_of_a_folder_of_tasks():
    """A class made in a challenge folder is checked against the RUNTIME_PACKAGES entry of its
    name (a dict by task here, hecktor2025's real declaration); a class made elsewhere (a test's)
    has no folder to check, and one without topology metrics needs nothing more."""
    from evaluation.challenges import check_runtime_packages
    from evaluation.errors import SetupError
    from evaluation.kinds.segmentation import BettiError, Dice, Segmentation

    def make(module, metrics):
        return type("Made", (Segmentation,), {"__module__": module, "name": "hecktor2025-task1", "labels": {1: "gtvp"},
                                              "label_metrics": metrics})

    with pytest.raises(SetupError) as refused:
        check_runtime_packages(make("evaluation.challenges.hecktor2025.made", (Dice(), BettiError(0))))
    assert str(refused.value) == (
        'hecktor2025-task1 declares BettiError, which its image cannot run without "scikit-image", "networkx", '
        '"pillow", "imageio", "tifffile", "lazy-loader", "packaging": add them to RUNTIME_PACKAGES in '
        "evaluation/challenges/hecktor2025/__init__.py and rebuild the image (it installs only the packages "
        "declared there; docs/adding-a-challenge.md).")
    outside = make(__name__, (Dice(), BettiError(0)))
    check_runtime_packages(outside)  # no folder to check it against
    assert outside.needed_packages() == {"BettiError": BETTI_PACKAGES}
    assert make("evaluation.challenges.hecktor2025.made", (Dice(),)).needed_packages() == {}
