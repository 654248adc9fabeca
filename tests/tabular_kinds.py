"""Shared by tests/test_kind_{classification,regression,survival}.py: challenges of the tabular
kinds declared as a scaffolded folder would declare them (DECLARATIONS, the text of a folder's
__init__.py), importable in this process (`declared`) and, for the real command, in a copy of
the evaluation package with that folder in it (`package_with_declarations`); and writers of a
ground truth and of the platform's job outputs, as real files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np

from tests.cli_runs import DROP_ENV, Run

ROOT = Path(__file__).resolve().parents[1]
FOLDER = "kindtest"

DECLARATIONS = '''
from evaluation.kinds.classification import (Classification, Composite, accuracy, average_precision,
    balanced_accuracy, cohen_kappa, f1, roc_auc, sensitivity, sensitivity_at_specificity, specificity)
from evaluation.kinds.regression import Regression, mae, mape, nae, pearson, r2, rmse, smape, spearman
from evaluation.kinds.survival import Survival

RUNTIME_PACKAGES = {"kindtest-binary": ("numpy",)}


class Binary(Classification):
    name = "kindtest-binary"
    classes = ("benign", "malignant")
    ranked_metrics = (roc_auc(), roc_auc(max_fpr=0.2), average_precision(), balanced_accuracy(), cohen_kappa(),
                      f1(), sensitivity_at_specificity(0.9), accuracy(), sensitivity(), specificity())


class BinaryByDomain(Binary):
    name = "kindtest-domains"
    breakdown = "domain"


class BinaryScreening(Binary):
    name = "kindtest-screening"
    excluded_classes = ("ungradable",)


class MulticlassExcluding(Classification):
    name = "kindtest-multiclass-excluding"
    task = "multiclass"
    classes = ("mild", "moderate", "severe")
    excluded_classes = ("unreadable", "other")
    ranked_metrics = (roc_auc(), balanced_accuracy(), cohen_kappa("quadratic"), f1("weighted"))
    breakdown = "site"


class BinaryStacks(Classification):
    name = "kindtest-stacks"
    classes = ("ndbe", "neoplasia")
    per_case = "list"
    ranked_metrics = (roc_auc(), average_precision(), balanced_accuracy(), sensitivity_at_specificity(0.9), f1())


class MulticlassStacksDecided(Classification):
    name = "kindtest-stacks-decided"
    task = "multiclass"
    classes = ("mild", "moderate", "severe")
    per_case = "list"
    decision_socket = "grade"
    excluded_classes = ("unreadable",)
    breakdown = "site"
    ranked_metrics = (roc_auc(), balanced_accuracy(), cohen_kappa("quadratic"), f1("weighted"))


class ClassStacks(Classification):
    name = "kindtest-stacks-classes"
    task = "multiclass"
    classes = ("mild", "moderate", "severe")
    output = "class"
    per_case = "list"
    ranked_metrics = (balanced_accuracy(), accuracy())


class BinaryScores(Classification):
    name = "kindtest-scores"
    classes = ("gradable", "ungradable")
    score_bounds = (None, None)  # any finite score, ranked by its order; the job decides
    decision_socket = "decision"
    ranked_metrics = (roc_auc(), cohen_kappa(), sensitivity_at_specificity(0.9))


class BinaryGrades(BinaryScores):
    name = "kindtest-grades"
    score_bounds = (0, 10)


class BinaryComposite(Classification):
    name = "kindtest-composite"
    ranked_metrics = (roc_auc(), balanced_accuracy())
    composite = Composite({"roc_auc": 0.5, "balanced_accuracy": 0.5}, title="Half AUC, half balanced accuracy")


class Multiclass(Classification):
    name = "kindtest-multiclass"
    task = "multiclass"
    classes = ("mild", "moderate", "severe")
    ranked_metrics = (roc_auc(), average_precision(), balanced_accuracy(), cohen_kappa(), cohen_kappa("linear"),
                      cohen_kappa("quadratic"), f1(), f1("micro"), f1("weighted"), accuracy())


class MulticlassSockets(Multiclass):
    name = "kindtest-sockets"
    sockets = "per_class"


class Multilabel(Classification):
    name = "kindtest-multilabel"
    task = "multilabel"
    classes = ("edema", "effusion", "nodule")
    ranked_metrics = (roc_auc(), roc_auc(max_fpr=0.5), average_precision(), balanced_accuracy(), f1(),
                      f1("micro"), f1("weighted"), accuracy())


class ClassOutput(Classification):
    name = "kindtest-classes"
    task = "multiclass"
    output = "class"
    classes = ("mild", "moderate", "severe")
    ranked_metrics = (cohen_kappa("quadratic"), balanced_accuracy(), f1(), accuracy())


class BinaryDecided(Classification):
    name = "kindtest-decided"
    classes = ("benign", "malignant")
    decision_socket = "malignancy-decision"
    ranked_metrics = (roc_auc(), average_precision(), sensitivity_at_specificity(0.9), balanced_accuracy(),
                      cohen_kappa(), f1(), accuracy(), sensitivity(), specificity())


class MulticlassDecided(Classification):
    name = "kindtest-multiclass-decided"
    task = "multiclass"
    classes = ("mild", "moderate", "severe")
    decision_socket = "grade"
    ranked_metrics = (roc_auc(), average_precision(), balanced_accuracy(), cohen_kappa("quadratic"), f1(),
                      f1("micro"), accuracy())


class MulticlassSocketsDecided(MulticlassDecided):
    name = "kindtest-sockets-decided"
    sockets = "per_class"


class MultilabelDecided(Classification):
    name = "kindtest-multilabel-decided"
    task = "multilabel"
    classes = ("edema", "effusion", "nodule")
    decision_socket = "findings"
    ranked_metrics = (roc_auc(), average_precision(), balanced_accuracy(), f1(), f1("micro"), accuracy())


class Targets(Regression):
    name = "kindtest-regression"
    targets = {"volume": "volume (ml)", "age": "age (years)"}
    ranked_metrics = (r2(over="mean", key="r2_mean"), mae(), rmse(), mape(), smape(), smape("sum"), nae(), r2(),
                      pearson(), spearman())


class TargetSockets(Targets):
    name = "kindtest-target-sockets"
    sockets = "per_target"


class Risk(Survival):
    name = "kindtest-survival"
'''


def declared() -> types.ModuleType:
    """DECLARATIONS as a module of this process (its classes on the worktree's package)."""
    module = types.ModuleType("kindtest_declarations")
    exec(compile(DECLARATIONS, "kindtest_declarations", "exec"), module.__dict__)
    return module


def package_with_declarations(target: Path) -> Path:
    """A copy of the evaluation package in `target` with the folder kindtest/ declaring
    DECLARATIONS: the real command finds those challenges there (PYTHONPATH=target)."""
    shutil.copytree(ROOT / "evaluation", target / "evaluation",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    folder = target / "evaluation" / "challenges" / FOLDER
    folder.mkdir()
    (folder / "__init__.py").write_text(DECLARATIONS)
    return target


def run(package: Path, challenge: str, ground_truth: Path, input_dir: Path, output: Path) -> Run:
    env = {name: value for name, value in os.environ.items() if name not in DROP_ENV}
    env.update(PYTHONPATH=str(package), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, "-m", "evaluation", challenge, "--ground-truth", str(ground_truth),
                           "--input", str(input_dir), "--output", str(output)], cwd=package, env=env,
                          capture_output=True, text=True, timeout=120)
    return Run(done.returncode, done.stdout, done.stderr, output)


def write_ground_truth(folder: Path, truth: dict[str, Any], config: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.json").write_text(json.dumps(truth))
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config))
    return folder


def write_jobs(input_dir: Path, outputs: dict[str, dict[str, Any]]) -> Path:
    """predictions.json and each job's output files: {case id: {socket slug: a JSON value, or
    bytes written as they are (NaN, Infinity, broken JSON)}}."""
    jobs = []
    for number, (case_id, sockets) in enumerate(sorted(outputs.items())):
        pk = f"00000000-0000-4000-8000-{number:012d}"
        entries = []
        for slug, value in sockets.items():
            path = input_dir / pk / "output" / f"{slug}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(value if isinstance(value, bytes) else json.dumps(value).encode())
            entries.append({"pk": 0, "image": None, "file": f"https://example.invalid/{slug}.json", "value": None,
                            "socket": {"slug": slug, "kind": "Anything", "super_kind": "File",
                                       "relative_path": f"{slug}.json"}})
        jobs.append({"pk": pk, "status": "Succeeded", "exec_duration": None, "invoke_duration": None,
                     "inputs": [{"pk": 0, "file": None, "value": None,
                                 "image": {"pk": f"image-{number}", "name": f"{case_id}.mha"},
                                 "socket": {"slug": "image", "kind": "Image", "super_kind": "Image",
                                            "relative_path": "images/image"}}],
                     "outputs": entries})
    input_dir.mkdir(parents=True, exist_ok=True)
    (input_dir / "predictions.json").write_text(json.dumps(jobs, indent=1))
    return input_dir


def evaluated(challenge, input_dir: Path) -> dict[str, Any]:
    """The metrics.json content of a run in this process (evaluation/run.py's, one worker)."""
    from evaluation.run import evaluate

    return evaluate(challenge, input_dir)[0]


def case_results(challenge, input_dir: Path) -> dict[str, Any]:
    """{case id: the kind's per-case result} of every case of the submission, as the run scores it."""
    from evaluation.run import matched_cases, score_case

    return {case.case_id: score_case(challenge, case) for case in matched_cases(challenge, input_dir)}


def case_ids(n: int) -> list[str]:
    return [f"case-{number:03d}" for number in range(n)]


def count_rows(rng: np.random.Generator, n: int, rows: int = 6) -> np.ndarray:
    """Bootstrap-like rows of whole case counts (0 to 3), the first all ones."""
    counts = rng.integers(0, 4, size=(rows, n))
    counts[0] = 1
    return counts


def assert_one_line_naming(result: Run, case_id: str) -> None:
    """Exit 1, no metrics.json, the last stderr line one sentence naming the case."""
    assert result.code == 1, result.stderr
    assert not result.wrote_metrics
    line = result.last_error_line
    assert case_id in line and line.endswith(".") and "Traceback" not in result.stderr, result.stderr
