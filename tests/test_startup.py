"""Start-up: a run imports its own challenge's folder only, and no heavy library its challenge does
not use (evaluation/challenges/__init__.py states the rule). Each check runs a fresh interpreter
and reads its sys.modules: what was imported, not how long it took."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.challenges import available_challenges, challenge_class, challenge_folders, folder_of

ROOT = Path(__file__).resolve().parent.parent
CHALLENGES = sorted(available_challenges())

# Heavy libraries: imported only where used (scikit-learn, scipy and pandas by no run at all;
# the tests and benchmarks use them as independent oracles).
HEAVY = ("sklearn", "scipy", "pandas", "SimpleITK", "h5py", "cc3d", "cv2", "tifffile", "imagecodecs", "skimage",
         "matplotlib", "lifelines")
# What scoring a bundled example needs, where it is known to be less than what its image installs
# (a challenge not listed may import the heavy libraries of its RUNTIME_PACKAGES, no other).
NEEDED = {
    "csv2026": {"SimpleITK", "h5py", "cv2"},  # mask images, NNNN_label.h5, surface distances
    "hecktor2025-task1": {"SimpleITK", "cc3d"},  # NIfTI / MHA masks, 26-connected lesions
    "camelyon16": {"tifffile", "imagecodecs", "cv2", "cc3d"},  # TIFF masks, evaluation mask, labels
}


def declared_modules(name: str) -> set[str]:
    """The heavy modules of the packages the challenge's folder declares in RUNTIME_PACKAGES."""
    from evaluation.image_requirements import normalized, runtime_packages
    from evaluation.launch import PACKAGE_OF_MODULE

    packages = {normalized(package) for package in runtime_packages(name)}
    return {module for module in HEAVY if normalized(PACKAGE_OF_MODULE.get(module, module)) in packages}


def fresh_interpreter(code: str) -> dict:
    """Runs `code` in a new interpreter at the repository root; it prints one JSON object."""
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


IMPORTED = """
import json, sys
heavy = {heavy!r}
print(json.dumps({{"heavy": sorted(m for m in heavy if m in sys.modules),
                  "challenges": sorted(m for m in sys.modules if m.startswith("evaluation.challenges."))}}))
"""


def imported_after(code: str) -> dict:
    return fresh_interpreter(code + IMPORTED.format(heavy=HEAVY))


# ---- discovery by folder ------------------------------------------------------------------------


def test_folders_are_listed_without_importing_any():
    seen = imported_after("from evaluation.challenges import challenge_folders\nassert challenge_folders()\n")
    assert seen == {"heavy": [], "challenges": []}


def test_every_challenge_lives_in_the_folder_its_name_starts_with():
    for name, cls in available_challenges().items():
        folder = folder_of(name)
        assert folder in challenge_folders() and cls.__module__.startswith(f"evaluation.challenges.{folder}")


@pytest.mark.parametrize("name", CHALLENGES)
def test_challenge_class_imports_its_folder_only(name):
    seen = imported_after(f"from evaluation.challenges import challenge_class\n"
                          f"cls = challenge_class({name!r})\nassert cls.name == {name!r}")
    package = f"evaluation.challenges.{folder_of(name)}"
    assert package in seen["challenges"]
    assert all(module == package or module.startswith(package + ".") for module in seen["challenges"])
    assert seen["heavy"] == []


def test_challenge_class_returns_the_imported_class():
    for name, cls in available_challenges().items():
        assert challenge_class(name) is cls


@pytest.mark.parametrize("name", ["rare26-unknown", "isic2020", "nothing", ""])
def test_unknown_name_is_a_key_error(name):
    """A name in no folder, or one a folder's name starts but that folder does not declare."""
    assert name not in available_challenges()
    with pytest.raises(KeyError):
        challenge_class(name)


# ---- heavy libraries: only where used --------------------------------------------------------


def test_help_and_list_import_no_heavy_library():
    help_run = imported_after("from evaluation.cli import main\nimport contextlib, io\n"
                              "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n")
    assert help_run["heavy"] == []  # help lists every challenge: their folders, none of their libraries
    list_run = imported_after("from evaluation.cli import main\nimport contextlib, io\n"
                              "with contextlib.redirect_stdout(io.StringIO()):\n    assert main(['--list']) == 0\n")
    assert list_run["heavy"] == []  # every challenge module imported, none of their libraries
    assert {f"evaluation.challenges.{folder}" for folder in challenge_folders()} <= set(list_run["challenges"])


@pytest.mark.parametrize("name", CHALLENGES)
def test_a_run_imports_only_the_libraries_its_challenge_uses(name, tmp_path):
    """The bundled example, scored in one process: the modules of other challenges and the heavy
    libraries this challenge does not use are never imported."""
    run = (f"from evaluation.cli import main\nimport contextlib, io\n"
           f"with contextlib.redirect_stdout(io.StringIO()):\n"
           f"    code = main([{name!r}, '--input', 'test/{name}/input', '--ground-truth', 'ground-truth/{name}', "
           f"'--output', {str(tmp_path / 'out')!r}, '--workers', '1'])\n"
           f"assert code == 0, code\n")
    seen = imported_after(run)
    assert set(seen["heavy"]) <= NEEDED.get(name, declared_modules(name)), f"{name} imported {seen['heavy']}"
    package = f"evaluation.challenges.{folder_of(name)}"
    assert package in seen["challenges"]
    assert all(module == package or module.startswith(package + ".") for module in seen["challenges"])
    assert json.loads((tmp_path / "out" / "metrics.json").read_text()) == \
        json.loads((ROOT / "test" / name / "expected_metrics.json").read_text())


# ---- one OpenBLAS thread -----------------------------------------------------------------------


@pytest.mark.parametrize("given, expected", [(None, "1"), ("3", "3")])
def test_the_command_runs_with_one_openblas_thread_unless_told(given, expected):
    """The entry point sets OPENBLAS_NUM_THREADS before numpy is loaded (its spinning thread pool
    costs ~0.1 s of CPU per run); an explicit value is kept. Read from the OpenBLAS the command
    runs with (threadpoolctl), which the entry point loads before the command's module."""
    import os

    probe = ("import os, sys, types\n"
             "from evaluation import launch\n"
             "probe = types.ModuleType('probe')\n"
             "def main(argv):\n"
             "    from threadpoolctl import threadpool_info\n"
             "    print(os.environ.get('OPENBLAS_NUM_THREADS'), *sorted({str(pool['num_threads']) for pool in "
             "threadpool_info() if pool['internal_api'] == 'openblas'}))\n"
             "probe.main = main\n"
             "sys.modules['probe'] = probe\n"
             "assert 'numpy' not in sys.modules\n"
             "launch._run('probe')\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [expected, str(min(int(expected), os.cpu_count()))]  # OpenBLAS: at most the CPUs


# ---- an old Python -----------------------------------------------------------------------------


def old_pythons() -> list[str]:
    """Interpreters older than 3.11 on this machine (pyenv's, or python3.6 ... python3.10 on PATH)."""
    import glob
    import os
    import shutil

    found = set(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))
    found |= {path for minor in range(6, 11) if (path := shutil.which(f"python3.{minor}"))}
    old = []
    for path in sorted(found):
        version = subprocess.run([path, "-c", "import sys; print(sys.version_info[1])"], capture_output=True,
                                 text=True)
        if version.returncode == 0 and int(version.stdout) < 11:
            old.append(path)
    return old


@pytest.mark.parametrize("command", ["evaluation", "evaluation.phase", "evaluation.examples", "evaluation.leaderboard",
                                     "evaluation.new"])
def test_an_old_python_gets_one_line_and_exit_3(command):
    """Python 3.6 cannot parse a module written for 3.11: the package stops it first, with one line."""
    interpreters = old_pythons()
    if not interpreters:
        pytest.skip("no Python older than 3.11 on this machine")
    for python in interpreters:
        result = subprocess.run([python, "-m", command, "--help"], cwd=ROOT, capture_output=True, text=True,
                                timeout=60)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 3 and len(lines) == 1, (python, result.stderr)
        assert lines[0].startswith("The evaluation needs Python 3.11 or newer") and python in lines[0]
