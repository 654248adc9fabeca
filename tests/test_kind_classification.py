"""The classification kind (evaluation/kinds/classification.py): binary, multi-class and
multi-label challenges declared as data score as scikit-learn does, on the whole test set and on
rows of case counts (a case of weight 2 is the case twice); hostile job outputs, as real files
through the real command, exit 1 naming the case with no metrics.json; a declaration that
cannot run is refused when it is imported; a ground truth without every class exits 3."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    average_precision_score,
    balanced_accuracy_score,
    cohen_kappa_score,
    f1_score,
    recall_score,
    roc_auc_score,
    roc_curve,
)

from evaluation.errors import SetupError
from evaluation.kinds import classification as kind
from tests.tabular_kinds import (
    assert_one_line_naming,
    case_ids,
    case_results,
    count_rows,
    declared,
    evaluated,
    package_with_declarations,
    run,
    write_ground_truth,
    write_jobs,
)

DECLARED = declared()


def sensitivity_at_specificity(y, s, specificity, weights=None):
    fpr, tpr, _ = roc_curve(y, s, sample_weight=weights, drop_intermediate=False)
    return float(tpr[1 - fpr >= specificity].max())


def binary_case(tmp_path, n=60, seed=0):
    """A binary ground truth (class names and 0/1 mixed) and likelihoods with ties (2 decimals)."""
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % 2)
    s = np.round(np.clip(0.5 + 0.25 * (2 * y - 1) + rng.normal(0, 0.25, n), 0, 1), 2)
    ids = case_ids(n)
    truth = {c: ("malignant" if label else 0) if i % 3 == 0 else int(label)
             for i, (c, label) in enumerate(zip(ids, y, strict=True))}
    ground_truth = write_ground_truth(tmp_path / "gt", truth)
    input_dir = write_jobs(tmp_path / "input", {c: {"likelihood": float(v)} for c, v in zip(ids, s, strict=True)})
    return ground_truth, input_dir, y, s


def sklearn_binary(y, s, w=None, threshold=0.5):
    d = (s >= threshold).astype(int)
    return {"roc_auc": roc_auc_score(y, s, sample_weight=w),
            "partial_roc_auc_20": roc_auc_score(y, s, sample_weight=w, max_fpr=0.2),
            "average_precision": average_precision_score(y, s, sample_weight=w),
            "balanced_accuracy": balanced_accuracy_score(y, d, sample_weight=w),
            "cohen_kappa": cohen_kappa_score(y, d, sample_weight=w),
            "f1": f1_score(y, d, sample_weight=w),
            "sensitivity_at_specificity_90": sensitivity_at_specificity(y, s, 0.9, w),
            "accuracy": accuracy_score(y, d, sample_weight=w),
            "sensitivity": recall_score(y, d, sample_weight=w, pos_label=1),
            "specificity": recall_score(y, d, sample_weight=w, pos_label=0)}


def test_sensitivity_and_specificity_at_the_declared_threshold(tmp_path):
    """The phase's threshold (config.json) decides; sensitivity and specificity are
    scikit-learn's recall of class 1 and of class 0 at it, and trade off as it moves."""
    ground_truth, input_dir, y, s = binary_case(tmp_path, n=50, seed=11)
    values = {}
    for threshold in (0.3, 0.7):
        (ground_truth / "config.json").write_text(json.dumps({"threshold": threshold}))
        metrics = evaluated(DECLARED.Binary(ground_truth), input_dir)
        d = (s >= threshold).astype(int)
        assert metrics["aggregates"]["sensitivity"] == pytest.approx(recall_score(y, d, pos_label=1), rel=1e-12)
        assert metrics["aggregates"]["specificity"] == pytest.approx(recall_score(y, d, pos_label=0), rel=1e-12)
        values[threshold] = (metrics["aggregates"]["sensitivity"], metrics["aggregates"]["specificity"])
    assert values[0.3][0] > values[0.7][0] and values[0.3][1] < values[0.7][1]
    columns = [column.path for column in DECLARED.Binary.leaderboards[0].extra_columns]
    assert columns[-2:] == ["aggregates.sensitivity", "aggregates.specificity"]


def test_binary_metrics_are_scikit_learns(tmp_path):
    ground_truth, input_dir, y, s = binary_case(tmp_path)
    evaluation = DECLARED.Binary(ground_truth)
    metrics = evaluated(evaluation, input_dir)
    for key, value in sklearn_binary(y, s).items():
        assert metrics["aggregates"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    assert metrics["counts"] == {"cases": 60, "benign": 30, "malignant": 30}
    assert metrics["cases"]["case-000"] == {"likelihood": float(s[0]), "decision": "malignant" if s[0] >= 0.5
                                            else "benign"}
    assert "truth" not in json.dumps(metrics["cases"])  # metrics.json may be shown to the participant


def test_binary_weights_are_repeated_cases(tmp_path):
    """Each row of case counts gives the metrics of the cases repeated that often (scikit-learn on
    the repeated arrays), so the final ranking's bootstrap scores its resamples."""
    ground_truth, input_dir, y, s = binary_case(tmp_path, n=40, seed=3)
    evaluation = DECLARED.Binary(ground_truth)
    results = case_results(evaluation, input_dir)
    counts = count_rows(np.random.default_rng(1), len(y))
    computed = evaluation.aggregate(results, counts)
    for row, weights in enumerate(counts):
        repeated = sklearn_binary(np.repeat(y, weights), np.repeat(s, weights))
        weighted = sklearn_binary(y, s, weights)
        for key, value in repeated.items():
            assert computed[f"aggregates.{key}"][row] == pytest.approx(value, rel=1e-12, abs=1e-12), (row, key)
            assert weighted[key] == pytest.approx(value, rel=1e-12, abs=1e-12), (row, key)


def test_a_composite_is_the_weighted_sum_and_the_score(tmp_path):
    ground_truth, input_dir, y, s = binary_case(tmp_path, n=30, seed=5)
    ground_truth = write_ground_truth(tmp_path / "gt2", {c: int(v) for c, v in zip(case_ids(30), y, strict=True)})
    metrics = evaluated(DECLARED.BinaryComposite(ground_truth), input_dir)
    expected = 0.5 * roc_auc_score(y, s) + 0.5 * balanced_accuracy_score(y, s >= 0.5)
    assert metrics["aggregates"]["score"] == pytest.approx(expected, rel=1e-12)
    assert DECLARED.BinaryComposite.leaderboards[0].score.path == "aggregates.score"


def multiclass_case(tmp_path, n=45, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % 3)
    logits = rng.normal(0, 1, (n, 3)) + 1.5 * np.eye(3)[y]
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)  # sums to 1: scikit-learn's multi-class AUC
    names = ("mild", "moderate", "severe")
    ids = case_ids(n)
    truth = {c: (names[k] if i % 2 else int(k)) for i, (c, k) in enumerate(zip(ids, y, strict=True))}
    ground_truth = write_ground_truth(tmp_path / "gt", truth)
    input_dir = write_jobs(tmp_path / "input", {c: {"likelihood": row.tolist()} for c, row in zip(ids, p, strict=True)})
    return ground_truth, input_dir, y, p


def sklearn_multiclass(y, p, w=None):
    d = p.argmax(axis=1)
    labels = [0, 1, 2]
    indicator = np.eye(3)[y]
    return {"roc_auc": roc_auc_score(y, p, sample_weight=w, multi_class="ovr", average="macro", labels=labels),
            "average_precision": float(np.mean([average_precision_score(indicator[:, c], p[:, c], sample_weight=w)
                                                for c in labels])),
            "balanced_accuracy": balanced_accuracy_score(y, d, sample_weight=w),
            "cohen_kappa": cohen_kappa_score(y, d, sample_weight=w, labels=labels),
            "cohen_kappa_linear": cohen_kappa_score(y, d, sample_weight=w, labels=labels, weights="linear"),
            "cohen_kappa_quadratic": cohen_kappa_score(y, d, sample_weight=w, labels=labels, weights="quadratic"),
            "f1": f1_score(y, d, sample_weight=w, labels=labels, average="macro"),
            "f1_micro": f1_score(y, d, sample_weight=w, labels=labels, average="micro"),
            "f1_weighted": f1_score(y, d, sample_weight=w, labels=labels, average="weighted"),
            "accuracy": accuracy_score(y, d, sample_weight=w)}


def test_multiclass_metrics_are_scikit_learns_with_weights(tmp_path):
    ground_truth, input_dir, y, p = multiclass_case(tmp_path)
    evaluation = DECLARED.Multiclass(ground_truth)
    metrics = evaluated(evaluation, input_dir)
    for key, value in sklearn_multiclass(y, p).items():
        assert metrics["aggregates"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    assert set(metrics["cases"]["case-001"]["likelihoods"]) == {"mild", "moderate", "severe"}
    results = case_results(evaluation, input_dir)
    counts = count_rows(np.random.default_rng(2), len(y), rows=4)
    one_of_each = [int(np.flatnonzero(y == k)[0]) for k in range(3)]
    counts[:, one_of_each] = np.maximum(counts[:, one_of_each], 1)  # every class in every row
    computed = evaluation.aggregate(results, counts)
    for row, weights in enumerate(counts):
        repeated = sklearn_multiclass(np.repeat(y, weights), np.repeat(p, weights, axis=0))
        for key, value in repeated.items():
            assert computed[f"aggregates.{key}"][row] == pytest.approx(value, rel=1e-12, abs=1e-12), (row, key)


def multilabel_case(tmp_path, n=50, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random((n, 3)) < 0.4).astype(int)
    y[0], y[1] = 1, 0  # every label present and absent
    s = np.round(np.clip(0.5 + 0.3 * (2 * y - 1) + rng.normal(0, 0.3, (n, 3)), 0, 1), 2)
    names = ("edema", "effusion", "nodule")
    ids = case_ids(n)
    truth = {c: [names[k] for k in range(3) if row[k]] for c, row in zip(ids, y, strict=True)}
    ground_truth = write_ground_truth(tmp_path / "gt", truth)
    input_dir = write_jobs(tmp_path / "input", {c: {"likelihood": row.tolist()} for c, row in zip(ids, s, strict=True)})
    return ground_truth, input_dir, y, s


def sklearn_multilabel(y, s, w=None):
    d = (s >= 0.5).astype(int)
    return {"roc_auc": roc_auc_score(y, s, sample_weight=w, average="macro"),
            "partial_roc_auc_50": roc_auc_score(y, s, sample_weight=w, average="macro", max_fpr=0.5),
            "average_precision": average_precision_score(y, s, sample_weight=w, average="macro"),
            "balanced_accuracy": float(np.mean([balanced_accuracy_score(y[:, c], d[:, c], sample_weight=w)
                                                for c in range(3)])),
            "f1": f1_score(y, d, sample_weight=w, average="macro"),
            "f1_micro": f1_score(y, d, sample_weight=w, average="micro"),
            "f1_weighted": f1_score(y, d, sample_weight=w, average="weighted"),
            "accuracy": accuracy_score(y, d, sample_weight=w)}


def test_multilabel_metrics_are_scikit_learns_with_weights(tmp_path):
    ground_truth, input_dir, y, s = multilabel_case(tmp_path)
    evaluation = DECLARED.Multilabel(ground_truth)
    metrics = evaluated(evaluation, input_dir)
    for key, value in sklearn_multilabel(y, s).items():
        assert metrics["aggregates"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    results = case_results(evaluation, input_dir)
    counts = count_rows(np.random.default_rng(4), len(y), rows=4)
    counts[:, :2] = np.maximum(counts[:, :2], 1)  # cases 0 and 1: every label present and absent in every row
    computed = evaluation.aggregate(results, counts)
    for row, weights in enumerate(counts):
        repeated = sklearn_multilabel(np.repeat(y, weights, axis=0), np.repeat(s, weights, axis=0))
        for key, value in repeated.items():
            assert computed[f"aggregates.{key}"][row] == pytest.approx(value, rel=1e-12, abs=1e-12), (row, key)


def test_class_outputs_score_their_decisions(tmp_path):
    rng = np.random.default_rng(7)
    names = ("mild", "moderate", "severe")
    y = rng.permutation(np.arange(30) % 3)
    d = np.where(rng.random(30) < 0.7, y, rng.integers(0, 3, 30))
    ids = case_ids(30)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: names[k] for c, k in zip(ids, y, strict=True)})
    input_dir = write_jobs(tmp_path / "input", {c: {"likelihood": names[k]} for c, k in zip(ids, d, strict=True)})
    metrics = evaluated(DECLARED.ClassOutput(ground_truth), input_dir)["aggregates"]
    assert metrics["cohen_kappa_quadratic"] == pytest.approx(cohen_kappa_score(y, d, weights="quadratic"), rel=1e-12)
    assert metrics["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y, d), rel=1e-12)
    assert metrics["f1"] == pytest.approx(f1_score(y, d, average="macro"), rel=1e-12)
    assert metrics["accuracy"] == pytest.approx(accuracy_score(y, d), rel=1e-12)


# ---- hostile outputs, as real files, through the real command ---------------------------------------


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    return package_with_declarations(tmp_path_factory.mktemp("kindtest"))


HOSTILE = [
    ("kindtest-binary", b"NaN"), ("kindtest-binary", b"Infinity"), ("kindtest-binary", b"1.5"),
    ("kindtest-binary", b"-0.01"), ("kindtest-binary", b'"0.7"'), ("kindtest-binary", b"[0.7]"),
    ("kindtest-binary", b"null"), ("kindtest-binary", b"{broken"),
    ("kindtest-multiclass", b"[0.2, 0.8]"), ("kindtest-multiclass", b"[0.2, 0.3, 0.5, 0.0]"),
    ("kindtest-multiclass", b'[0.2, "0.3", 0.5]'), ("kindtest-multiclass", b"[0.2, NaN, 0.5]"),
    ("kindtest-multiclass", b"0.5"), ("kindtest-multilabel", b"[0.2, 1.2, 0.5]"),
    ("kindtest-classes", b'"catastrophic"'), ("kindtest-classes", b"2"),
]


@pytest.mark.parametrize("challenge, written", HOSTILE)
def test_hostile_outputs_fail_naming_the_case(package, tmp_path, challenge, written):
    names = {"kindtest-binary": ["benign", "malignant"], "kindtest-multilabel": ["edema", "effusion", "nodule"]}.get(
        challenge, ["mild", "moderate", "severe"])
    ids = case_ids(6)
    truth = {c: ([names[i % 3]] if challenge == "kindtest-multilabel" else names[i % len(names)])
             for i, c in enumerate(ids)}
    if challenge == "kindtest-multilabel":
        truth[ids[-1]] = []
    valid = {"kindtest-binary": 0.5, "kindtest-classes": "mild"}.get(challenge, [0.2, 0.3, 0.5])
    outputs = {c: {"likelihood": valid} for c in ids}
    outputs["case-004"] = {"likelihood": written}
    ground_truth = write_ground_truth(tmp_path / "gt", truth)
    result = run(package, challenge, ground_truth, write_jobs(tmp_path / "input", outputs), tmp_path / "out")
    assert_one_line_naming(result, "case-004")


def test_the_valid_files_score_through_the_command(package, tmp_path):
    """The same layout as the hostile runs, every output valid: exit 0 (the failures above are
    the hostile value's)."""
    ids = case_ids(6)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: i % 2 for i, c in enumerate(ids)})
    input_dir = write_jobs(tmp_path / "input", {c: {"likelihood": 0.1 * i} for i, c in enumerate(ids)})
    result = run(package, "kindtest-binary", ground_truth, input_dir, tmp_path / "out")
    assert result.code == 0, result.stderr
    assert result.metrics["aggregates"]["roc_auc"] == pytest.approx(roc_auc_score([0, 1] * 3, np.arange(6) * 0.1))


# ---- the organizer's side -----------------------------------------------------------------------


def test_a_ground_truth_without_a_class_is_the_organizers(tmp_path):
    ground_truth = write_ground_truth(tmp_path / "gt", {"a": "mild", "b": "moderate", "c": 1})
    with pytest.raises(SetupError, match="severe is not"):
        DECLARED.Multiclass(ground_truth)
    ground_truth = write_ground_truth(tmp_path / "gt2", {"a": ["edema"], "b": ["edema", "effusion"], "c": []})
    with pytest.raises(SetupError, match="nodule"):
        DECLARED.Multilabel(ground_truth)
    ground_truth = write_ground_truth(tmp_path / "gt3", {"a": 2, "b": 0})
    with pytest.raises(SetupError, match="case a"):
        DECLARED.Binary(ground_truth)


def test_one_socket_per_class(package, tmp_path):
    """sockets = "per_class": a setting per class (config.json may rename each), one number each."""
    settings = DECLARED.MulticlassSockets.settings_class
    assert [name for name in settings().as_dict() if name.endswith("_socket") and name != "input_socket"] == [
        "mild_socket", "moderate_socket", "severe_socket"]
    assert "output_socket" not in settings().as_dict()
    truth = {"a": "mild", "b": "moderate", "c": "severe"}
    ground_truth = write_ground_truth(tmp_path / "gt", truth, {"severe_socket": "grade-3"})
    p = {"a": [0.7, 0.2, 0.1], "b": [0.3, 0.4, 0.3], "c": [0.2, 0.2, 0.6]}
    slugs = ("mild-likelihood", "moderate-likelihood", "grade-3")
    input_dir = write_jobs(tmp_path / "input", {c: dict(zip(slugs, v, strict=True)) for c, v in p.items()})
    metrics = evaluated(DECLARED.MulticlassSockets(ground_truth), input_dir)
    assert metrics["aggregates"]["accuracy"] == 1.0 and metrics["cases"]["b"]["decision"] == "moderate"
    outputs = {c: dict(zip(slugs, v, strict=True)) for c, v in p.items()}
    outputs["b"]["grade-3"] = b"1.25"  # a hostile file among the sockets, through the real command
    result = run(package, "kindtest-sockets", ground_truth, write_jobs(tmp_path / "hostile", outputs), tmp_path / "out")
    assert_one_line_naming(result, "Case b")
    assert "'grade-3'" in result.last_error_line


@pytest.mark.parametrize("attributes, message", [
    ({"task": "multiclass", "classes": ("a", "b", "c"), "ranked_metrics": (kind.sensitivity_at_specificity(0.9),)},
     "defined for binary"),
    ({"output": "class", "ranked_metrics": (kind.roc_auc(),)}, "ranks likelihoods"),
    ({"classes": ("a", "b", "c")}, "declares 2 classes"),
    ({"task": "multilabel", "classes": ("a", "b"), "ranked_metrics": (kind.cohen_kappa(),)}, "not multilabel"),
    ({"classes": ("a", "roc_auc")}, "not a metric's key"),
    ({"ranked_metrics": (kind.f1(), kind.f1())}, "share a key"),
    ({"sockets": "per_class"}, "multiclass or multilabel"),
    ({"task": "multiclass", "classes": ("a", "b-c", "d"), "sockets": "per_class"}, "identifiers"),
    ({"task": "ordinal"}, "not one of"),
    ({"task": "multiclass", "classes": ("a", "b", "c"), "ranked_metrics": (kind.sensitivity(),)}, "defined for binary"),
    ({"task": "multilabel", "classes": ("a", "b"), "ranked_metrics": (kind.specificity(),)}, "defined for binary"),
])
def test_a_declaration_that_cannot_run_is_refused_at_import(attributes, message):
    with pytest.raises(TypeError, match=message):
        type("Broken", (kind.Classification,), {"name": "kindtest-broken", **attributes})


def test_the_ranking_is_declared_by_name():
    from evaluation.declarations.columns import MEAN_OF_RANKS
    from evaluation.declarations.ranking_rules import MeanOfRanks, OrderedRanking

    ordered = type("Ordered", (kind.Classification,), {"name": "kindtest-ordered"})
    assert isinstance(ordered.final_rankings[0], OrderedRanking)
    ranks = type("Ranks", (kind.Classification,), {"name": "kindtest-ranks", "ranking": "mean_of_ranks"})
    assert isinstance(ranks.final_rankings[0], MeanOfRanks)
    assert ranks.final_rankings[0].paths == ("aggregates.roc_auc", "aggregates.balanced_accuracy")
    assert ranks.leaderboards[0].scoring_method == MEAN_OF_RANKS  # the platform's leaderboard agrees
    with pytest.raises(TypeError, match="per-case values"):  # every metric is of the whole test set
        type("Cases", (kind.Classification,), {"name": "kindtest-cases", "ranking": "case_rank_then_mean"})
    with pytest.raises(TypeError, match="not one of"):
        type("Other", (kind.Classification,), {"name": "kindtest-other", "ranking": "borda"})


# ---- the job's own decision beside its likelihood (decision_socket) ----------------------------------


def sklearn_binary_decided(y, s, d, w=None):
    """The ranking metrics of the likelihoods `s`, the decision metrics of the decisions `d`."""
    return {"roc_auc": roc_auc_score(y, s, sample_weight=w),
            "average_precision": average_precision_score(y, s, sample_weight=w),
            "sensitivity_at_specificity_90": sensitivity_at_specificity(y, s, 0.9, w),
            "balanced_accuracy": balanced_accuracy_score(y, d, sample_weight=w),
            "cohen_kappa": cohen_kappa_score(y, d, sample_weight=w),
            "f1": f1_score(y, d, sample_weight=w),
            "accuracy": accuracy_score(y, d, sample_weight=w),
            "sensitivity": recall_score(y, d, sample_weight=w, pos_label=1),
            "specificity": recall_score(y, d, sample_weight=w, pos_label=0)}


def binary_decided_case(tmp_path, n=60, seed=8):
    """Likelihoods as binary_case's and the participant's own decisions: their likelihood at its
    own threshold (0.35), a tenth of them flipped, written as class names, 0/1 and false/true."""
    ground_truth, _, y, s = binary_case(tmp_path, n=n, seed=seed)
    rng = np.random.default_rng(seed + 100)
    d = (s >= 0.35).astype(int)
    flipped = rng.random(n) < 0.1
    d[flipped] = 1 - d[flipped]
    spellings = (lambda k: ("benign", "malignant")[k], int, bool)
    outputs = {c: {"likelihood": float(v), "malignancy-decision": spellings[i % 3](int(k))}
               for i, (c, v, k) in enumerate(zip(case_ids(n), s, d, strict=True))}
    return ground_truth, write_jobs(tmp_path / "decided", outputs), y, s, d


def test_binary_decisions_from_their_socket_are_scikit_learns_through_the_command(package, tmp_path):
    """decision_socket: AUC, AP and the sensitivity at 90% specificity read the likelihoods;
    balanced accuracy, kappa, F1, accuracy, sensitivity and specificity read the job's decisions
    (not the likelihoods at 0.5): each scikit-learn's on the same data, through the real command."""
    ground_truth, input_dir, y, s, d = binary_decided_case(tmp_path)
    result = run(package, "kindtest-decided", ground_truth, input_dir, tmp_path / "out")
    assert result.code == 0, result.stderr
    metrics = result.metrics
    for key, value in sklearn_binary_decided(y, s, d).items():
        assert metrics["aggregates"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    at_half = balanced_accuracy_score(y, s >= 0.5)
    assert abs(metrics["aggregates"]["balanced_accuracy"] - at_half) > 0.01  # the job's decisions, not 0.5's
    assert metrics["cases"]["case-001"] == {"likelihood": float(s[1]),
                                            "decision": ("benign", "malignant")[int(d[1])]}
    assert metrics["settings"]["decision_socket"] == "malignancy-decision" and "threshold" not in metrics["settings"]
    assert metrics["aggregates"]["malignant"]["sensitivity"] == pytest.approx(recall_score(y, d), rel=1e-12)


def test_binary_decisions_weights_are_repeated_cases(tmp_path):
    ground_truth, input_dir, y, s, d = binary_decided_case(tmp_path, n=40, seed=9)
    evaluation = DECLARED.BinaryDecided(ground_truth)
    results = case_results(evaluation, input_dir)
    counts = count_rows(np.random.default_rng(5), len(y))
    computed = evaluation.aggregate(results, counts)
    for row, weights in enumerate(counts):
        repeated = sklearn_binary_decided(np.repeat(y, weights), np.repeat(s, weights), np.repeat(d, weights))
        for key, value in repeated.items():
            assert computed[f"aggregates.{key}"][row] == pytest.approx(value, rel=1e-12, abs=1e-12), (row, key)


def test_multiclass_and_multilabel_decisions_from_their_socket_are_scikit_learns(tmp_path):
    names = ("mild", "moderate", "severe")
    ground_truth, _, y, p = multiclass_case(tmp_path / "multiclass", seed=4)
    rng = np.random.default_rng(40)
    d = np.where(rng.random(len(y)) < 0.6, y, rng.integers(0, 3, len(y)))  # not the largest likelihood's class
    assert (d != p.argmax(axis=1)).sum() > 5
    outputs = {c: {"likelihood": row.tolist(), "grade": names[k]} for c, row, k in zip(case_ids(len(y)), p, d,
                                                                                       strict=True)}
    metrics = evaluated(DECLARED.MulticlassDecided(ground_truth), write_jobs(tmp_path / "mc-input", outputs))
    labels = [0, 1, 2]
    expected = {"roc_auc": roc_auc_score(y, p, multi_class="ovr", average="macro", labels=labels),
                "average_precision": float(np.mean([average_precision_score(y == c, p[:, c]) for c in labels])),
                "balanced_accuracy": balanced_accuracy_score(y, d),
                "cohen_kappa_quadratic": cohen_kappa_score(y, d, labels=labels, weights="quadratic"),
                "f1": f1_score(y, d, labels=labels, average="macro"),
                "f1_micro": f1_score(y, d, labels=labels, average="micro"),
                "accuracy": accuracy_score(y, d)}
    for key, value in expected.items():
        assert metrics["aggregates"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    # one likelihood socket per class, and the decision's socket beside them
    sockets = DECLARED.MulticlassSocketsDecided.settings_class
    assert [name for name, _ in sockets.socket_fields()] == ["input_socket", "decision_socket", "mild_socket",
                                                             "moderate_socket", "severe_socket"]
    slugs = ("mild-likelihood", "moderate-likelihood", "severe-likelihood")
    per_class = {c: {**dict(zip(slugs, row.tolist(), strict=True)), "grade": names[k]}
                 for c, row, k in zip(case_ids(len(y)), p, d, strict=True)}
    by_sockets = evaluated(DECLARED.MulticlassSocketsDecided(ground_truth), write_jobs(tmp_path / "pc-input",
                                                                                         per_class))
    assert by_sockets["aggregates"] == metrics["aggregates"]

    classes = ("edema", "effusion", "nodule")
    ground_truth, _, y, s = multilabel_case(tmp_path / "multilabel", seed=6)
    d = (s >= 0.3).astype(int)  # the participant's threshold, per label
    outputs = {c: {"likelihood": row.tolist(), "findings": [classes[k] for k in range(3) if on[k]]}
               for c, row, on in zip(case_ids(len(y)), s, d, strict=True)}
    metrics = evaluated(DECLARED.MultilabelDecided(ground_truth), write_jobs(tmp_path / "ml-input", outputs))
    expected = {"roc_auc": roc_auc_score(y, s, average="macro"),
                "average_precision": average_precision_score(y, s, average="macro"),
                "balanced_accuracy": float(np.mean([balanced_accuracy_score(y[:, c], d[:, c]) for c in range(3)])),
                "f1": f1_score(y, d, average="macro"), "f1_micro": f1_score(y, d, average="micro"),
                "accuracy": accuracy_score(y, d)}
    for key, value in expected.items():
        assert metrics["aggregates"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    assert metrics["aggregates"]["f1"] != pytest.approx(f1_score(y, s >= 0.5, average="macro"), abs=1e-3)


HOSTILE_DECISIONS = [
    ("kindtest-decided", b'"maybe"', "is \"maybe\"; it must be one of the class names"),
    ("kindtest-decided", b'"Malignant"', "is \"Malignant\""),
    ("kindtest-decided", b"2", "is 2; it must be one of the class names ['benign', 'malignant'], 0 or 1, or false"),
    ("kindtest-decided", b"0.7", "is 0.7;"),
    ("kindtest-decided", b"1.0", "is 1.0;"),
    ("kindtest-decided", b"null", "is null;"),
    ("kindtest-decided", b'["malignant"]', "is a list;"),
    ("kindtest-decided", b"{broken", "malignancy-decision"),
    ("kindtest-decided", None, "malignancy-decision"),  # the job wrote no decision
    ("kindtest-multiclass-decided", b'"catastrophic"', "is \"catastrophic\"; it must be one of the class names"),
    ("kindtest-multiclass-decided", b"1", "is 1; it must be one of the class names ['mild', 'moderate', 'severe']."),
    ("kindtest-multiclass-decided", b"true", "is a boolean;"),
    ("kindtest-multilabel-decided", b'"edema"', "must be a list of class names"),
    ("kindtest-multilabel-decided", b'["edema", "tumour"]', "must be a list of class names"),
    ("kindtest-multilabel-decided", b"[0, 1]", "must be a list of class names"),
]


@pytest.mark.parametrize("challenge, written, message", HOSTILE_DECISIONS)
def test_hostile_decisions_fail_naming_the_case(package, tmp_path, challenge, written, message):
    """A decision that is not one of the declared classes (binary also 0/1 or false/true), or no
    decision at all, as a real file through the real command: exit 1, no metrics.json, the last
    line one sentence naming the case (and the socket)."""
    ids = case_ids(6)
    if challenge == "kindtest-decided":
        truth, socket = {c: i % 2 for i, c in enumerate(ids)}, "malignancy-decision"
        valid = {"likelihood": 0.5, socket: "benign"}
    elif challenge == "kindtest-multiclass-decided":
        truth, socket = {c: ("mild", "moderate", "severe")[i % 3] for i, c in enumerate(ids)}, "grade"
        valid = {"likelihood": [0.2, 0.3, 0.5], socket: "severe"}
    else:
        truth = {c: [("edema", "effusion", "nodule")[i % 3]] for i, c in enumerate(ids)}
        truth[ids[-1]], socket = [], "findings"
        valid = {"likelihood": [0.2, 0.3, 0.5], socket: ["nodule"]}
    outputs = {c: dict(valid) for c in ids}
    if written is None:
        del outputs["case-004"][socket]
    else:
        outputs["case-004"][socket] = written
    ground_truth = write_ground_truth(tmp_path / "gt", truth)
    result = run(package, challenge, ground_truth, write_jobs(tmp_path / "input", outputs), tmp_path / "out")
    assert_one_line_naming(result, "case-004")
    assert message in result.last_error_line and f"'{socket}'" in result.last_error_line, result.last_error_line


def test_the_valid_decisions_score_through_the_command(package, tmp_path):
    """The hostile runs' layout with every decision valid: exit 0 (their failures are the
    hostile value's)."""
    ids = case_ids(6)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: i % 2 for i, c in enumerate(ids)})
    outputs = {c: {"likelihood": 0.1 * i, "malignancy-decision": [False, 1, "benign"][i % 3]}
               for i, c in enumerate(ids)}
    result = run(package, "kindtest-decided", ground_truth, write_jobs(tmp_path / "input", outputs), tmp_path / "out")
    assert result.code == 0, result.stderr
    d = [0, 1, 0, 0, 1, 0]
    assert result.metrics["aggregates"]["accuracy"] == pytest.approx(accuracy_score([0, 1] * 3, d))


def test_a_decision_socket_the_likelihood_also_names_is_the_organizers(package, tmp_path):
    """config.json naming the likelihood's socket for the decision, or setting a threshold no one
    applies, exits 3 naming the setting."""
    ids = case_ids(4)
    outputs = write_jobs(tmp_path / "input", {c: {"likelihood": 0.5, "malignancy-decision": 1} for c in ids})
    for number, (config, message) in enumerate((({"decision_socket": "likelihood"}, "'decision_socket' names the "
                                                 "socket 'likelihood' that 'output_socket' names"),
                                                ({"threshold": 0.3}, "unknown setting(s) 'threshold'"))):
        ground_truth = write_ground_truth(tmp_path / f"gt-{number}", {c: i % 2 for i, c in enumerate(ids)}, config)
        result = run(package, "kindtest-decided", ground_truth, outputs, tmp_path / f"out-{number}")
        assert result.code == 3 and not result.wrote_metrics, result.stderr
        assert message in result.last_error_line, result.last_error_line


@pytest.mark.parametrize("attributes, message", [
    ({"decision_socket": "decision", "output": "class", "ranked_metrics": (kind.f1(),)}, "class is its decision"),
    ({"decision_socket": "likelihood"}, "names the socket 'likelihood' that 'output_socket' names"),
    ({"decision_socket": 1}, "must be a socket's slug"),
    ({"decision_socket": " decision"}, "must be a socket's slug"),
    ({"task": "multiclass", "classes": ("a", "b", "c"), "sockets": "per_class", "decision_socket": "b-likelihood"},
     "that 'b_socket' names"),
])
def test_a_decision_socket_that_cannot_run_is_refused_at_import(attributes, message):
    with pytest.raises(TypeError, match=message):
        type("Broken", (kind.Classification,), {"name": "kindtest-broken", **attributes})


# ---- a breakdown by group -------------------------------------------------------------------------


def test_a_breakdown_gives_each_groups_ranked_values_through_the_command(package, tmp_path):
    """breakdown = "domain": every ranked value of each domain's cases alone (scikit-learn on the
    subset), beside the ranked values of the whole test set, unchanged; a domain of one class
    has no AUC (null, with a note), and its cases still count in the whole test set's values."""
    _, input_dir, y, s = binary_case(tmp_path, n=60, seed=11)
    ids = case_ids(60)
    one_class = [i for i in range(60) if y[i] == 0][:4]  # scanner-c: negatives only
    domains = ["scanner-c" if i in one_class else ("scanner-a" if i % 2 else "scanner-b") for i in range(60)]
    truth = {c: {"class": int(label), "domain": d} for c, label, d in zip(ids, y, domains, strict=True)}
    ground_truth = write_ground_truth(tmp_path / "gt", truth)
    result = run(package, "kindtest-domains", ground_truth, input_dir, tmp_path / "out")
    assert result.code == 0, result.stderr
    metrics = result.metrics
    for key, value in sklearn_binary(y, s).items():
        assert metrics["aggregates"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    assert sorted(metrics["breakdown"]) == ["scanner-a", "scanner-b", "scanner-c"]
    for domain in ("scanner-a", "scanner-b"):
        subset = np.array([d == domain for d in domains])
        assert metrics["breakdown"][domain]["cases"] == int(subset.sum())
        for key, value in sklearn_binary(y[subset], s[subset]).items():
            assert metrics["breakdown"][domain][key] == pytest.approx(value, rel=1e-12, abs=1e-12), (domain, key)
    alone = metrics["breakdown"]["scanner-c"]
    assert alone["cases"] == 4 and alone["roc_auc"] is None
    assert "scanner-c" in metrics["notes"]["breakdown.scanner-c.roc_auc"]
    subset = np.array([d == "scanner-c" for d in domains])
    assert alone["accuracy"] == pytest.approx(accuracy_score(y[subset], s[subset] >= 0.5))
    assert alone["sensitivity"] is None  # no positive case in the group
    with warnings.catch_warnings():  # scikit-learn warns of the class absent from the truth, and leaves it out
        warnings.simplefilter("ignore")
        assert alone["balanced_accuracy"] == pytest.approx(balanced_accuracy_score(y[subset], s[subset] >= 0.5))
    assert "domain" not in json.dumps(metrics["cases"])  # the truth's fields stay out of the case entries


@pytest.mark.parametrize("entry, said", [
    (1, "with a breakdown by 'domain' each case is"),
    ({"class": 1}, "with a breakdown by 'domain' each case is"),
    ({"class": 1, "domain": "a", "site": "b"}, "with a breakdown by 'domain' each case is"),
    ({"class": 1, "domain": 3}, "the domain of case case-001 is 3"),
    ({"class": 1, "domain": "a.b"}, "a group's name"),
    ({"class": 7, "domain": "a"}, "the class of case case-001 is 7"),
])
def test_a_breakdown_entry_that_is_not_one_is_the_organizers(package, tmp_path, entry, said):
    ids = case_ids(6)
    truth = {c: {"class": i % 2, "domain": "a"} for i, c in enumerate(ids)}
    truth["case-001"] = entry
    ground_truth = write_ground_truth(tmp_path / "gt", truth)
    input_dir = write_jobs(tmp_path / "input", {c: {"likelihood": 0.1 * i} for i, c in enumerate(ids)})
    result = run(package, "kindtest-domains", ground_truth, input_dir, tmp_path / "out")
    assert result.code == 3, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert said in last and "Traceback" not in result.stderr, last
    assert not (tmp_path / "out" / "metrics.json").exists()


@pytest.mark.parametrize("breakdown", ["class", "two words", 3])
def test_a_breakdown_that_names_no_field_is_refused_at_import(breakdown):
    from evaluation.kinds.classification import Classification

    with pytest.raises(TypeError, match="breakdown"):
        type("Wrong", (Classification,), {"name": "wrong", "breakdown": breakdown})



# ---- classes of the ground truth left out of the ranked values ---------------------------------------


def screening_case(tmp_path, n=60, excluded=14, seed=21):
    """`binary_case`'s cases and, between them, `excluded` "ungradable" cases whose likelihoods
    (0 and 1, against the grain) would move every ranked value were they scored."""
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % 2)
    s = np.round(np.clip(0.5 + 0.25 * (2 * y - 1) + rng.normal(0, 0.25, n), 0, 1), 2)
    ids = case_ids(n + excluded)
    out = sorted(rng.choice(n + excluded, excluded, replace=False).tolist())
    scored_ids = [c for i, c in enumerate(ids) if i not in out]
    truth = {c: int(label) for c, label in zip(scored_ids, y, strict=True)}
    truth.update({ids[i]: "ungradable" for i in out})
    outputs = {c: {"likelihood": float(v)} for c, v in zip(scored_ids, s, strict=True)}
    outputs.update({ids[i]: {"likelihood": float(k % 2)} for k, i in enumerate(out)})
    return write_ground_truth(tmp_path / "gt", truth), write_jobs(tmp_path / "input", outputs), y, s, \
        [ids[i] for i in out]


def test_excluded_classes_leave_their_cases_out_of_every_ranked_value_through_the_command(package, tmp_path):
    """excluded_classes = ("ungradable",): every ranked value is scikit-learn's on the gradable
    cases alone; the ungradable ones are read, shown per case and counted, never scored."""
    ground_truth, input_dir, y, s, out = screening_case(tmp_path)
    result = run(package, "kindtest-screening", ground_truth, input_dir, tmp_path / "out")
    assert result.code == 0, result.stderr
    metrics = result.metrics
    for key, value in sklearn_binary(y, s).items():
        assert metrics["aggregates"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    assert metrics["counts"] == {"cases": 74, "benign": 30, "malignant": 30, "ungradable": 14}
    assert set(out) <= set(metrics["cases"]) and len(metrics["cases"]) == 74
    assert metrics["aggregates"]["malignant"]["sensitivity"] == pytest.approx(recall_score(y, s >= 0.5))
    scored_all = sklearn_binary(np.r_[y, np.arange(14) % 2 == 0], np.r_[s, np.arange(14) % 2])
    assert metrics["aggregates"]["roc_auc"] != pytest.approx(scored_all["roc_auc"])  # the test can fail


def test_excluded_cases_are_out_of_every_resample_whatever_their_count(tmp_path):
    """The final ranking's rows of case counts: the excluded cases' counts change nothing."""
    ground_truth, input_dir, y, s, out = screening_case(tmp_path, n=40, excluded=9, seed=4)
    evaluation = DECLARED.BinaryScreening(ground_truth)
    results = case_results(evaluation, input_dir)
    ids = sorted(results)
    counts = count_rows(np.random.default_rng(2), len(ids))
    computed = evaluation.aggregate(results, counts)
    kept = np.array([c not in out for c in ids])
    for row, weights in enumerate(counts):
        expected = sklearn_binary(np.repeat(y, weights[kept]), np.repeat(s, weights[kept]))
        for key, value in expected.items():
            assert computed[f"aggregates.{key}"][row] == pytest.approx(value, rel=1e-12, abs=1e-12), (row, key)


def test_excluded_classes_of_a_multiclass_task_with_a_breakdown(tmp_path):
    """Two excluded classes beside three scored ones, and a breakdown by site: each site's
    values and counts are of its scored cases alone."""
    rng = np.random.default_rng(9)
    n = 90
    names = np.array(["mild", "moderate", "severe", "unreadable", "other"])
    truth_names = names[rng.choice(5, n, p=[.3, .3, .2, .1, .1])]
    p = rng.dirichlet(np.ones(3), n)  # each row sums to 1: scikit-learn's multi-class AUC
    sites = np.where(np.arange(n) % 3 == 0, "north", "south")
    ids = case_ids(n)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: {"class": str(t), "site": str(g)}
                                                        for c, t, g in zip(ids, truth_names, sites, strict=True)})
    input_dir = write_jobs(tmp_path / "input", {c: {"likelihood": v.tolist()} for c, v in zip(ids, p, strict=True)})
    metrics = evaluated(DECLARED.MulticlassExcluding(ground_truth), input_dir)
    classes = ["mild", "moderate", "severe"]

    def expected(subset):
        y = np.array([classes.index(t) for t in truth_names[subset]])
        decided = p[subset].argmax(axis=1)
        return {"roc_auc": roc_auc_score(y, p[subset], multi_class="ovr", average="macro", labels=[0, 1, 2]),
                "balanced_accuracy": balanced_accuracy_score(y, decided),
                "cohen_kappa_quadratic": cohen_kappa_score(y, decided, weights="quadratic", labels=[0, 1, 2]),
                "f1_weighted": f1_score(y, decided, average="weighted", labels=[0, 1, 2])}

    scored_cases = np.isin(truth_names, classes)
    for key, value in expected(scored_cases).items():
        assert metrics["aggregates"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    for site in ("north", "south"):
        subset = scored_cases & (sites == site)
        assert metrics["breakdown"][site]["cases"] == int(subset.sum())
        for key, value in expected(subset).items():
            assert metrics["breakdown"][site][key] == pytest.approx(value, rel=1e-12, abs=1e-12), (site, key)
    assert metrics["counts"]["unreadable"] == int((truth_names == "unreadable").sum())
    assert metrics["counts"]["other"] == int((truth_names == "other").sum())
    assert metrics["counts"]["cases"] == n


def test_a_hostile_output_of_an_excluded_case_is_still_the_participants(package, tmp_path):
    ground_truth, input_dir, _, _, out = screening_case(tmp_path, n=10, excluded=3)
    job = json.loads((input_dir / "predictions.json").read_text())
    pk = next(j["pk"] for j in job if j["inputs"][0]["image"]["name"] == f"{out[1]}.mha")
    (input_dir / pk / "output" / "likelihood.json").write_text("NaN")
    result = run(package, "kindtest-screening", ground_truth, input_dir, tmp_path / "out")
    assert_one_line_naming(result, out[1])


@pytest.mark.parametrize("truth, said", [
    ({"a": "ungradable", "b": "ungradable"}, "every case is of an excluded class"),
    ({"a": "ungradable", "b": 1}, "benign is not"),
    ({"a": "unclear", "b": 1, "c": 0}, "(or, left out of the ranked values, ['ungradable'])"),
])
def test_an_excluded_class_in_the_ground_truth_is_checked(tmp_path, truth, said):
    with pytest.raises(SetupError) as raised:
        DECLARED.BinaryScreening(write_ground_truth(tmp_path / "gt", truth))
    assert said in str(raised.value)


@pytest.mark.parametrize("attributes, message", [
    ({"excluded_classes": "ungradable"}, "tuple of class names"),
    ({"excluded_classes": ("negative",)}, "neither a declared class"),
    ({"excluded_classes": ("roc_auc",)}, "metric's key"),
    ({"excluded_classes": ("a.b",)}, "without '.'"),
    ({"excluded_classes": ("u", "u")}, "named twice"),
    ({"task": "multilabel", "classes": ("a", "b"), "excluded_classes": ("u",)}, "binary and multiclass"),
])
def test_excluded_classes_that_cannot_run_are_refused_at_import(attributes, message):
    with pytest.raises(TypeError, match=message):
        type("Broken", (kind.Classification,), {"name": "kindtest-broken", **attributes})


# ---- a list of items per case (per_case = "list": a stack's frames) ----------------------------------


def stacks_case(tmp_path, sizes=(5, 12, 3, 40, 9, 17, 1, 22), seed=31):
    """Binary stacks of these sizes: the ground truth a list of classes per stack (names and 0/1
    mixed), each job a list of likelihoods (2 decimals: ties)."""
    rng = np.random.default_rng(seed)
    ids = case_ids(len(sizes))
    y = [rng.integers(0, 2, n) for n in sizes]
    y[0][0], y[1][0] = 0, 1  # both classes present
    s = [np.round(np.clip(0.5 + 0.25 * (2 * t - 1) + rng.normal(0, 0.3, len(t)), 0, 1), 2) for t in y]
    truth = {c: [("neoplasia" if v else "ndbe") if k % 2 else int(v) for k, v in enumerate(t)]
             for c, t in zip(ids, y, strict=True)}
    ground_truth = write_ground_truth(tmp_path / "gt", truth)
    input_dir = write_jobs(tmp_path / "input", {c: {"likelihood": v.tolist()} for c, v in zip(ids, s, strict=True)})
    return ground_truth, input_dir, y, s


def sklearn_stacks(y, s, w=None):
    d = (s >= 0.5).astype(int)
    return {"roc_auc": roc_auc_score(y, s, sample_weight=w),
            "average_precision": average_precision_score(y, s, sample_weight=w),
            "balanced_accuracy": balanced_accuracy_score(y, d, sample_weight=w),
            "sensitivity_at_specificity_90": sensitivity_at_specificity(y, s, 0.9, w),
            "f1": f1_score(y, d, sample_weight=w)}


def test_a_list_per_case_is_scored_over_all_items_through_the_command(package, tmp_path):
    """per_case = "list": every ranked value is scikit-learn's on the items of every case
    together; metrics.json shows each case's lists and counts cases and items."""
    ground_truth, input_dir, y, s = stacks_case(tmp_path)
    result = run(package, "kindtest-stacks", ground_truth, input_dir, tmp_path / "out")
    assert result.code == 0, result.stderr
    metrics = result.metrics
    for key, value in sklearn_stacks(np.concatenate(y), np.concatenate(s)).items():
        assert metrics["aggregates"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    items = np.concatenate(y)
    assert metrics["counts"] == {"cases": 8, "items": 109, "ndbe": int((items == 0).sum()),
                                 "neoplasia": int(items.sum())}
    entry = metrics["cases"]["case-003"]
    assert entry["likelihoods"] == s[3].tolist()
    assert entry["decisions"] == ["neoplasia" if v >= 0.5 else "ndbe" for v in s[3]]


def test_the_bootstrap_draws_whole_cases_with_their_items(tmp_path):
    """A row of case counts: each case's items as often as the case is drawn (scikit-learn on
    the repeated items)."""
    ground_truth, input_dir, y, s = stacks_case(tmp_path, seed=32)
    evaluation = DECLARED.BinaryStacks(ground_truth)
    results = case_results(evaluation, input_dir)
    counts = count_rows(np.random.default_rng(6), len(y))
    counts[:, :2] = np.maximum(counts[:, :2], 1)  # both classes in every row
    computed = evaluation.aggregate(results, counts)
    for row, drawn in enumerate(counts):
        repeated_y = np.concatenate([t for t, n in zip(y, drawn, strict=True) for _ in range(n)])
        repeated_s = np.concatenate([v for v, n in zip(s, drawn, strict=True) for _ in range(n)])
        for key, value in sklearn_stacks(repeated_y, repeated_s).items():
            assert computed[f"aggregates.{key}"][row] == pytest.approx(value, rel=1e-12, abs=1e-12), (row, key)


def test_multiclass_lists_with_decisions_excluded_items_and_sites(tmp_path):
    """Multi-class items, the job's decisions in a second list, an excluded class among the
    items and a breakdown by site: the values are scikit-learn's on the scored items (per site
    too), the counts of cases and items."""
    rng = np.random.default_rng(17)
    sizes = [6, 11, 4, 15, 8, 9]
    names = np.array(["mild", "moderate", "severe", "unreadable"])
    truth_items = [names[rng.choice(4, n, p=[.3, .3, .3, .1])] for n in sizes]
    truth_items[0][:3] = ["mild", "moderate", "severe"]
    p = [rng.dirichlet(np.ones(3), n) for n in sizes]
    decided = [rng.integers(0, 3, n) for n in sizes]  # the job's own decisions, not its argmax
    sites = ["north" if i % 2 else "south" for i in range(len(sizes))]
    ids = case_ids(len(sizes))
    ground_truth = write_ground_truth(tmp_path / "gt", {c: {"class": t.tolist(), "site": g}
                                                        for c, t, g in zip(ids, truth_items, sites, strict=True)})
    input_dir = write_jobs(tmp_path / "input", {c: {"likelihood": v.tolist(), "grade": [str(names[k]) for k in d]}
                                                for c, v, d in zip(ids, p, decided, strict=True)})
    metrics = evaluated(DECLARED.MulticlassStacksDecided(ground_truth), input_dir)
    classes = ["mild", "moderate", "severe"]

    def expected(cases):
        t = np.concatenate([truth_items[i] for i in cases])
        kept = np.isin(t, classes)
        y = np.array([classes.index(v) for v in t[kept]])
        scores = np.concatenate([p[i] for i in cases])[kept]
        d = np.concatenate([decided[i] for i in cases])[kept]
        return int(kept.sum()), {
            "roc_auc": roc_auc_score(y, scores, multi_class="ovr", average="macro", labels=[0, 1, 2]),
            "balanced_accuracy": balanced_accuracy_score(y, d),
            "cohen_kappa_quadratic": cohen_kappa_score(y, d, weights="quadratic", labels=[0, 1, 2]),
            "f1_weighted": f1_score(y, d, average="weighted", labels=[0, 1, 2])}

    scored_items, values = expected(range(len(sizes)))
    for key, value in values.items():
        assert metrics["aggregates"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    every = np.concatenate(truth_items)
    assert metrics["counts"]["items"] == len(every) and metrics["counts"]["cases"] == len(sizes)
    assert metrics["counts"]["unreadable"] == int((every == "unreadable").sum())
    assert sum(metrics["counts"][c] for c in classes) == scored_items
    for site in ("north", "south"):
        cases = [i for i, g in enumerate(sites) if g == site]
        count, values = expected(cases)
        assert metrics["breakdown"][site]["cases"] == len(cases) and metrics["breakdown"][site]["items"] == count
        for key, value in values.items():
            assert metrics["breakdown"][site][key] == pytest.approx(value, rel=1e-12, abs=1e-12), (site, key)
    assert metrics["cases"]["case-001"]["decisions"] == [str(names[k]) for k in decided[1]]


def test_class_lists_are_decision_metrics_of_the_items(tmp_path):
    rng = np.random.default_rng(3)
    classes = ["mild", "moderate", "severe"]
    y = [rng.integers(0, 3, n) for n in (4, 7, 5)]
    y[0][:3] = [0, 1, 2]
    d = [rng.integers(0, 3, len(t)) for t in y]
    ids = case_ids(3)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: [classes[k] for k in t]
                                                        for c, t in zip(ids, y, strict=True)})
    input_dir = write_jobs(tmp_path / "input", {c: {"likelihood": [classes[k] for k in v]}
                                                for c, v in zip(ids, d, strict=True)})
    metrics = evaluated(DECLARED.ClassStacks(ground_truth), input_dir)
    assert metrics["aggregates"]["balanced_accuracy"] == pytest.approx(
        balanced_accuracy_score(np.concatenate(y), np.concatenate(d)), rel=1e-12)
    assert metrics["aggregates"]["accuracy"] == pytest.approx(accuracy_score(np.concatenate(y), np.concatenate(d)))


HOSTILE_STACKS = [
    ("kindtest-stacks", {"likelihood": [0.1, 0.2]}, "expected 3 values (one per item), found 2"),
    ("kindtest-stacks", {"likelihood": 0.5}, "must be a JSON array of 3 values (one per item)"),
    ("kindtest-stacks", {"likelihood": b"[0.1, NaN, 0.3]"}, "the likelihood at index 1"),
    ("kindtest-stacks", {"likelihood": [0.1, 1.5, 0.3]}, "the likelihood at index 1"),
    ("kindtest-stacks", {"likelihood": [0.1, "0.2", 0.3]}, "the likelihood at index 1"),
    ("kindtest-stacks-decided", {"likelihood": [[0.2, 0.3, 0.5]] * 2 + [[0.2, 0.8]], "grade": ["mild"] * 3},
     "item 2: expected 3 likelihoods"),
    ("kindtest-stacks-decided", {"likelihood": [[0.2, 0.3, 0.5]] * 3, "grade": ["mild", "mild"]},
     "'grade': expected 3 values (one per item), found 2"),
    ("kindtest-stacks-decided", {"likelihood": [[0.2, 0.3, 0.5]] * 3, "grade": ["mild", "unreadable", "mild"]},
     "'grade', item 1, is \"unreadable\""),
    ("kindtest-stacks-classes", {"likelihood": ["mild", 2, "severe"]}, "'likelihood', item 1, is 2"),
]


@pytest.mark.parametrize("challenge, written, said", HOSTILE_STACKS)
def test_hostile_lists_fail_naming_the_case_and_the_item(package, tmp_path, challenge, written, said):
    ids = case_ids(4)
    classes = ["ndbe", "neoplasia"] if challenge == "kindtest-stacks" else ["mild", "moderate", "severe"]
    truth = {c: [classes[(i + k) % len(classes)] for k in range(3)] for i, c in enumerate(ids)}
    if challenge == "kindtest-stacks-decided":
        truth = {c: {"class": t, "site": "north"} for c, t in truth.items()}
    valid = {"kindtest-stacks": {"likelihood": [0.1, 0.6, 0.3]},
             "kindtest-stacks-decided": {"likelihood": [[0.2, 0.3, 0.5]] * 3, "grade": ["mild", "severe", "mild"]},
             "kindtest-stacks-classes": {"likelihood": ["mild", "moderate", "severe"]}}[challenge]
    outputs = dict.fromkeys(ids, valid)
    outputs["case-002"] = written
    ground_truth = write_ground_truth(tmp_path / "gt", truth)
    result = run(package, challenge, ground_truth, write_jobs(tmp_path / "input", outputs), tmp_path / "out")
    assert_one_line_naming(result, "case-002")
    assert said in result.last_error_line, result.last_error_line
    outputs["case-002"] = valid  # the same files, every output valid: exit 0
    result = run(package, challenge, ground_truth, write_jobs(tmp_path / "valid", outputs), tmp_path / "out2")
    assert result.code == 0, result.stderr


@pytest.mark.parametrize("entry, said", [
    (0, "each case is a non-empty list of its items' classes"),
    ([], "each case is a non-empty list of its items' classes"),
    (["ndbe", "cancer"], "the class of case case-001 (item 1) is \"cancer\""),
])
def test_a_ground_truth_list_that_is_not_one_is_the_organizers(tmp_path, entry, said):
    truth = {"case-000": ["ndbe", "neoplasia"], "case-001": entry}
    with pytest.raises(SetupError) as raised:
        DECLARED.BinaryStacks(write_ground_truth(tmp_path / "gt", truth))
    assert said in str(raised.value)


@pytest.mark.parametrize("attributes, message", [
    ({"per_case": "many"}, "not 'one' or 'list'"),
    ({"per_case": "list", "task": "multilabel", "classes": ("a", "b")}, "binary and multiclass"),
    ({"per_case": "list", "task": "multiclass", "classes": ("a", "b", "c"), "sockets": "per_class"},
     "binary and multiclass tasks with one socket"),
])
def test_a_list_per_case_that_cannot_run_is_refused_at_import(attributes, message):
    with pytest.raises(TypeError, match=message):
        type("Broken", (kind.Classification,), {"name": "kindtest-broken", **attributes})


# ---- scores that are not likelihoods (score_bounds) ----------------------------------------------------


def test_unbounded_scores_rank_by_their_order_and_the_jobs_decisions(package, tmp_path):
    """score_bounds = (None, None): AIROGS's ungradability scores (any number) ranked by their
    AUC, the job's own decisions by their kappa, scikit-learn's on the same values."""
    rng = np.random.default_rng(12)
    n = 40
    y = rng.permutation(np.arange(n) % 2)
    scores = np.round(3 * y + rng.normal(0, 2.5, n) - 1, 3)  # below 0 and above 1
    decisions = (scores + rng.normal(0, 1, n) > 1).astype(int)  # not a threshold of the scores
    ids = case_ids(n)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: int(v) for c, v in zip(ids, y, strict=True)})
    input_dir = write_jobs(tmp_path / "input", {c: {"likelihood": float(v), "decision": bool(d)}
                                                for c, v, d in zip(ids, scores, decisions, strict=True)})
    result = run(package, "kindtest-scores", ground_truth, input_dir, tmp_path / "out")
    assert result.code == 0, result.stderr
    aggregates = result.metrics["aggregates"]
    assert scores.min() < 0 and scores.max() > 1
    assert aggregates["roc_auc"] == pytest.approx(roc_auc_score(y, scores), rel=1e-12)
    assert aggregates["cohen_kappa"] == pytest.approx(cohen_kappa_score(y, decisions), rel=1e-12)
    assert aggregates["sensitivity_at_specificity_90"] == pytest.approx(sensitivity_at_specificity(y, scores, 0.9))


@pytest.mark.parametrize("challenge, written, said", [
    ("kindtest-scores", b"NaN", "must be a finite number"),
    ("kindtest-scores", b'"3"', "must be a finite number"),
    ("kindtest-grades", b"10.5", "between 0 and 10"),
    ("kindtest-grades", b"-1", "between 0 and 10"),
])
def test_a_score_outside_its_bounds_is_the_participants(package, tmp_path, challenge, written, said):
    ids = case_ids(4)
    ground_truth = write_ground_truth(tmp_path / "gt", {c: i % 2 for i, c in enumerate(ids)})
    outputs = {c: {"likelihood": 7.5, "decision": "gradable"} for c in ids}
    outputs["case-002"] = {"likelihood": written, "decision": "gradable"}
    result = run(package, challenge, ground_truth, write_jobs(tmp_path / "input", outputs), tmp_path / "out")
    assert_one_line_naming(result, "case-002")
    assert said in result.last_error_line, result.last_error_line


@pytest.mark.parametrize("attributes, message", [
    ({"score_bounds": (1.0, 0.0)}, "the lowest below the highest"),
    ({"score_bounds": (0.0, math.inf)}, "each a finite number or None"),
    ({"score_bounds": ("0", 1)}, "each a finite number or None"),
    ({"score_bounds": (0, 1, 2)}, "must be .lowest, highest."),
    ({"score_bounds": (None, None)}, "need the job's own decisions"),
])
def test_score_bounds_that_cannot_run_are_refused_at_import(attributes, message):
    with pytest.raises(TypeError, match=message):
        type("Broken", (kind.Classification,), {"name": "kindtest-broken", **attributes})
