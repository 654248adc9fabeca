"""evaluation.metrics.classification's public metrics against scikit-learn, on cases written the
way scikit-learn's own tests write them (toy data with known values, multi-class and multi-label
averages, partial AUC) and on generated edges: ties in scores, a single class present, zero and
fractional weights, one case, rows of weights. Sensitivity at specificity and back against a
brute force over scikit-learn's roc_curve. (PPV at recall and the resampled paths:
tests/test_ranking.py; the weighted AUC's rows: tests/test_weighted_roc_auc.py.)"""

import math

import numpy as np
import pytest
from sklearn import metrics as skm

from evaluation.metrics.classification import (
    average_precision_score,
    precision_recall_curve,
    roc_auc_above_sensitivity,
    roc_auc_score,
    roc_curve,
    sensitivity_at_specificity,
    specificity_at_sensitivity,
)
from tests.common import quietly, same_bits


def random_scores(rng, n, levels=None, positives=0.4):
    y = (rng.random(n) < positives).astype(int)
    s = rng.random(n)
    return y, (np.round(s * levels) / levels if levels else s)


# ---- scikit-learn's toy data -----------------------------------------------------------------


@pytest.mark.parametrize("y_true, y_score, auc", [
    ([0, 1], [0, 1], 1.0),
    ([0, 1], [1, 0], 0.0),
    ([1, 0], [1, 1], 0.5),
    ([1, 0], [1, 0], 1.0),
    ([1, 0], [0.5, 0.5], 0.5),
    ([0, 0], [0.25, 0.75], math.nan),  # no positive: undefined (scikit-learn: NaN and a warning)
    ([1, 1], [0.25, 0.75], math.nan),  # no negative
])
def test_binary_toy_data(y_true, y_score, auc):
    same_bits(roc_auc_score(y_true, y_score), auc)
    same_bits(roc_auc_score(y_true, y_score), quietly(skm.roc_auc_score, y_true, y_score))


@pytest.mark.parametrize("y_true, y_score, averages", [
    ([[1, 0], [0, 1]], [[0, 1], [1, 0]], {"macro": 0.0, "weighted": 0.0, "micro": 0.0}),
    ([[1, 0], [0, 1]], [[0.5, 0.5], [0.5, 0.5]], {"macro": 0.5, "weighted": 0.5, "micro": 0.5}),
    ([[0, 1], [0, 1]], [[0, 1], [0, 1]], {"micro": 1.0, "macro": math.nan}),  # label 0 never true
    ([[0, 1], [0, 1]], [[0, 1], [1, 0]], {"micro": 0.5}),
])
def test_multilabel_toy_data(y_true, y_score, averages):
    for average, expected in averages.items():
        same_bits(roc_auc_score(np.array(y_true), np.array(y_score), average=average), expected)


MULTICLASS_SCORES = np.array([[1.0, 0.0, 0.0], [0.1, 0.5, 0.4], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]])


@pytest.mark.parametrize("y_true, labels", [([0, 1, 2, 2], None), (["a", "b", "c", "c"], None),
                                            ([0, 1, 2, 2], [0, 1, 2]), (["a", "b", "c", "c"], ["a", "b", "c"])])
def test_multiclass_one_vs_rest_toy_data(y_true, labels):
    """Each class against the rest (scikit-learn's test_multiclass_ovr_roc_auc_toydata)."""
    per_class = [roc_auc_score(truth, MULTICLASS_SCORES[:, c])
                 for c, truth in enumerate(([1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1]))]
    ovr = dict(multi_class="ovr", labels=labels)
    same_bits(roc_auc_score(y_true, MULTICLASS_SCORES, average=None, **ovr), per_class)
    assert roc_auc_score(y_true, MULTICLASS_SCORES, **ovr) == pytest.approx(sum(per_class) / 3, abs=1e-15)
    assert roc_auc_score(y_true, MULTICLASS_SCORES, average="weighted", **ovr) == pytest.approx(
        per_class[0] * 0.25 + per_class[1] * 0.25 + per_class[2] * 0.5, abs=1e-15)
    for average in ("macro", "weighted", "micro"):
        same_bits(roc_auc_score(y_true, MULTICLASS_SCORES, average=average, **ovr),
                  skm.roc_auc_score(y_true, MULTICLASS_SCORES, average=average, **ovr))


def test_multiclass_perfect_imperfect_and_chance():
    y_true = np.array([3, 1, 2, 0])
    perfect = [[0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.75, 0.05, 0.05, 0.15]]
    imperfect = [[0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    for average in ("macro", "micro"):
        assert roc_auc_score(y_true, perfect, multi_class="ovr", average=average) == 1.0
        assert roc_auc_score(y_true, imperfect, multi_class="ovr", average=average) < 1.0
        assert roc_auc_score(y_true, np.full((4, 4), 0.25), multi_class="ovr", average=average) == 0.5


def test_partial_auc_toy_data():
    """scikit-learn's test_partial_roc_auc_score: a perfect ranking is 1 at any max_fpr, 1 is the
    whole area, a constant score 0.5 (the McClish correction's chance)."""
    y_true = np.array([0, 0, 1, 1])
    assert roc_auc_score(y_true, y_true, max_fpr=1) == 1
    assert roc_auc_score(y_true, y_true, max_fpr=0.001) == 1
    y_scores = np.array([0.1, 0, 0.1, 0.01])
    assert roc_auc_score(y_true, y_scores, max_fpr=1) == roc_auc_score(y_true, y_scores)
    assert roc_auc_score(y_true, y_scores, max_fpr=0.3) == 0.5


def test_average_precision_toy_data():
    """Ties enter together (scikit-learn's test_average_precision_score_tied_values and
    _duplicate_values): the step is taken once per distinct score."""
    same_bits(average_precision_score([0, 1, 1], [0.5, 0.5, 0.6]),
              skm.average_precision_score([0, 1, 1], [0.5, 0.5, 0.6]))
    assert average_precision_score([0, 1, 1], [0.5, 0.5, 0.6]) != 1.0
    same_bits(average_precision_score([0, 0, 1], [0.5, 0.5, 0.5]), 1 / 3)  # a constant score: the prevalence
    y_true, y_score = [0, 0, 1, 1, 1], [0, 0.5, 0.5, 1, 1]
    same_bits(average_precision_score(y_true, y_score), skm.average_precision_score(y_true, y_score))
    assert math.isnan(average_precision_score([0, 0], [0.2, 0.3]))  # no positive: undefined


# ---- generated cases against scikit-learn ------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_binary_metrics_equal_scikit_learn_with_ties_and_weights(seed):
    """Whole-number weights (zeros among them) and none: bit for bit; fractional weights: to the
    last bit or two (scikit-learn 1.8+ adds tied scores' weights in the other order, see
    roc_auc_of_orders). Partial AUC at several max_fpr."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 300))
    y, s = random_scores(rng, n, levels=[None, 3, 10, 100][seed % 4])
    y[:2] = [0, 1]
    for weights, exact in ((None, True), (rng.integers(0, 4, n), True), (rng.random(n) * (rng.random(n) < 0.8), False)):
        check = same_bits if exact else (lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15))
        check(roc_auc_score(y, s, weights), quietly(skm.roc_auc_score, y, s, sample_weight=weights))
        check(average_precision_score(y, s, weights), quietly(skm.average_precision_score, y, s, sample_weight=weights))
        for max_fpr in (0.05, 0.3, 0.5, 1.0):
            check(roc_auc_score(y, s, weights, max_fpr), quietly(skm.roc_auc_score, y, s, sample_weight=weights,
                                                                 max_fpr=max_fpr))


@pytest.mark.parametrize("seed", range(6))
def test_multiclass_and_multilabel_averages_equal_scikit_learn(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(8, 200)), int(rng.integers(3, 6))  # (2 classes: scikit-learn wants 1-D scores)
    weights = rng.integers(0, 3, n) if seed % 2 else None
    scores = np.round(rng.random((n, k)), 1)  # ties
    classes = rng.integers(0, k, n)
    classes[:k] = np.arange(k)
    probabilities = scores / scores.sum(axis=1, keepdims=True) if (scores.sum(axis=1) > 0).all() else None
    if probabilities is not None:
        for average in ("macro", "weighted", "micro", None):
            same_bits(roc_auc_score(classes, probabilities, weights, multi_class="ovr", average=average),
                      quietly(skm.roc_auc_score, classes, probabilities, sample_weight=weights, multi_class="ovr",
                              average=average))
    indicator = (rng.random((n, k)) < 0.4).astype(int)
    indicator[:2] = [[0] * k, [1] * k]  # every label both true and false
    for average in ("macro", "weighted", "micro", None):
        same_bits(roc_auc_score(indicator, scores, weights, average=average),
                  quietly(skm.roc_auc_score, indicator, scores, sample_weight=weights, average=average))
        same_bits(average_precision_score(indicator, scores, weights, average=average),
                  quietly(skm.average_precision_score, indicator, scores, sample_weight=weights, average=average))


@pytest.mark.parametrize("case", ["single class", "one case", "all weights zero", "zero-weight positives",
                                  "constant scores"])
def test_edges(case):
    y, s, w = {
        "single class": ([1, 1, 1], [0.2, 0.5, 0.5], None),
        "one case": ([1], [0.3], None),
        "all weights zero": ([0, 1, 0, 1], [0.1, 0.4, 0.35, 0.8], [0, 0, 0, 0]),
        "zero-weight positives": ([0, 1, 0, 1], [0.1, 0.4, 0.35, 0.8], [1, 0, 1, 0]),
        "constant scores": ([0, 1, 0, 1, 1], [0.5] * 5, [1, 2, 1, 1, 3]),
    }[case]
    defined = case == "constant scores"
    auc = roc_auc_score(y, s, w)
    assert auc == 0.5 if defined else math.isnan(auc)
    for value in (sensitivity_at_specificity(y, s, 0.5, w), specificity_at_sensitivity(y, s, 0.5, w),
                  roc_auc_above_sensitivity(y, s, 0.8, w)):
        assert math.isfinite(value) if defined else math.isnan(value)
    if case in ("single class", "constant scores"):  # positives present
        same_bits(average_precision_score(y, s, w), quietly(skm.average_precision_score, y, s, sample_weight=w))


# ---- sensitivity at specificity and back, ISIC's AUC80 -----------------------------------------


def brute_force(y, s, w, target, at):
    """Over every point of scikit-learn's roc_curve (none dropped, (0, 0) included): the largest
    sensitivity with specificity >= target (at="specificity"), or the converse."""
    fpr, tpr, _ = skm.roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    if at == "specificity":
        return max(t for f, t in zip(fpr, tpr, strict=True) if 1 - f >= target - 1e-12)
    return max(1 - f for f, t in zip(fpr, tpr, strict=True) if t >= target - 1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_sensitivity_at_specificity_and_back_equal_the_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 150))
    y, s = random_scores(rng, n, levels=[None, 4, 20][seed % 3])
    y[:2] = [0, 1]
    w = rng.integers(1, 4, n) if seed % 2 else None
    negatives = (w if w is not None else np.ones(n))[y == 0].sum()
    positives = (w if w is not None else np.ones(n))[y == 1].sum()
    # targets exactly on points (k / N) and between them
    for target in (0.0, 0.5, 0.8, 0.9, 0.95, 1.0, 1 - 1 / negatives, 1 - 2 / negatives, 1 / positives):
        ours = sensitivity_at_specificity(y, s, target, w)
        assert ours == pytest.approx(brute_force(y, s, w, target, "specificity"), abs=1e-15)
        ours = specificity_at_sensitivity(y, s, target, w)
        assert ours == pytest.approx(brute_force(y, s, w, target, "sensitivity"), abs=1e-15)


def test_specificity_threshold_is_inclusive_and_not_interpolated():
    # 10 negatives, 4 positives: specificity exactly 0.9 at the point after one negative
    y = np.r_[np.zeros(10, int), np.ones(4, int)]
    s = np.r_[0.95, np.linspace(0.1, 0.5, 9), 0.99, 0.9, 0.8, 0.05]
    assert sensitivity_at_specificity(y, s, 0.9) == 0.75  # three positives above the second negative
    assert sensitivity_at_specificity(y, s, 0.9000001) == 0.25  # only the point before the first negative
    assert specificity_at_sensitivity(y, s, 0.75) == 0.9
    assert specificity_at_sensitivity(y, s, 0.76) == 0.0  # the last positive is below every negative


@pytest.mark.parametrize("seed", range(4))
def test_auc_above_sensitivity_matches_its_definition(seed):
    rng = np.random.default_rng(seed)
    y, s = random_scores(rng, 200, levels=10)
    w = np.round(rng.uniform(0, 2, 200), 3)
    fpr, tpr, _ = skm.roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    i = int(np.argmax(tpr >= 0.8))
    start = np.interp(0.8, tpr[i - 1:i + 1], fpr[i - 1:i + 1])
    assert roc_auc_above_sensitivity(y, s, 0.8, w) == pytest.approx(skm.auc(np.r_[start, fpr[i:]], np.r_[0.8, tpr[i:]]),
                                                                     abs=1e-15)


def test_rows_of_weights_are_each_rows_value_bit_for_bit():
    rng = np.random.default_rng(3)
    y, s = random_scores(rng, 120, levels=8)
    rows = rng.integers(0, 3, (12, 120)).astype(float)
    rows[1] *= np.round(rng.uniform(0, 2, 120), 2)
    for function, extra in ((roc_auc_score, {}), (roc_auc_score, {"max_fpr": 0.2}), (average_precision_score, {}),
                            (sensitivity_at_specificity, {"specificity": 0.8}),
                            (specificity_at_sensitivity, {"sensitivity": 0.7}),
                            (roc_auc_above_sensitivity, {"sensitivity": 0.8})):
        many = function(y, s, sample_weight=rows, **extra)
        assert many.shape == (12,)
        same_bits(many, [function(y, s, sample_weight=row, **extra) for row in rows])


def test_roc_and_precision_recall_curves_are_scikit_learns():
    rng = np.random.default_rng(4)
    y, s = random_scores(rng, 300, levels=30)
    w = rng.integers(0, 3, 300)
    for drop in (True, False):
        for ours, theirs in zip(roc_curve(y, s, w, drop), skm.roc_curve(y, s, sample_weight=w, drop_intermediate=drop),
                                strict=True):
            same_bits(ours, theirs)
    for weights in (None, w):
        for ours, theirs in zip(precision_recall_curve(y, s, weights),
                                skm.precision_recall_curve(y, s, sample_weight=weights), strict=True):
            same_bits(ours, theirs)


# ---- bad arguments -----------------------------------------------------------------------------


@pytest.mark.parametrize("call, message", [
    (lambda: roc_auc_score([0, 1, 1], [0.1, 0.2]), "one length"),
    (lambda: roc_auc_score([0, 1], [0.1, np.nan]), "y_score must be finite"),
    (lambda: roc_auc_score([0, 1], [0.1, np.inf]), "y_score must be finite"),
    (lambda: roc_auc_score([0, 2], [0.1, 0.2]), "y_true must hold only 0 and 1"),
    (lambda: roc_auc_score([0, 1], [0.1, 0.2], [1, -1]), "sample_weight must be finite and >= 0"),
    (lambda: roc_auc_score([0, 1], [0.1, 0.2], [1, np.nan]), "sample_weight must be finite and >= 0"),
    (lambda: roc_auc_score([0, 1], [0.1, 0.2], [1, 1, 1]), "one weight per case"),
    (lambda: roc_auc_score([0, 1], [0.1, 0.2], max_fpr=0), r"max_fpr must lie in \(0, 1\]"),
    (lambda: roc_auc_score([0, 1], [0.1, 0.2], max_fpr=1.5), r"max_fpr must lie in \(0, 1\]"),
    (lambda: roc_auc_score([[0, 1], [1, 0]], [[0.1, 0.2], [0.3, 0.4]], average="samples"), "average must be one of"),
    (lambda: roc_auc_score([0, 1, 2], MULTICLASS_SCORES[:3]), "multi_class='ovr'"),
    (lambda: roc_auc_score([0, 1, 3], MULTICLASS_SCORES[:3], multi_class="ovr", labels=[0, 1, 2]),
     "outside the declared labels"),
    (lambda: roc_auc_score([0, 1, 1], MULTICLASS_SCORES[:3], multi_class="ovr"), "3 columns, one per class"),
    (lambda: average_precision_score([[0, 2], [1, 0]], [[0.1, 0.2], [0.3, 0.4]]), "only 0 and 1"),
    (lambda: sensitivity_at_specificity([0, 1], [0.1, 0.2], 1.5), r"specificity must lie in \[0, 1\]"),
    (lambda: specificity_at_sensitivity([0, 1], [0.1, 0.2], np.nan), r"sensitivity must lie in \[0, 1\]"),
    (lambda: roc_auc_above_sensitivity([0, 1], [0.1, 0.2], 0.0), r"sensitivity must lie in \(0, 1\]"),
])
def test_bad_arguments_are_refused_naming_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()
