"""evaluation.metrics.confusion against scikit-learn: its toy data (Artstein and Poesio's kappa
tables, the balanced-accuracy examples), every average and zero_division on generated binary and
multi-class decisions with whole-number weights (bit for bit) and fractional ones (to the
rounding), and the edges: a single class present, a class never predicted, zero weights, one
case, no case; rows of weights (the bootstrap) each equal to their own call, bit for bit."""

import math

import numpy as np
import pytest
from sklearn import metrics as skm

from evaluation.metrics.confusion import (
    accuracy_score,
    balanced_accuracy_score,
    binary_confusion,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    npv_score,
    precision_score,
    recall_score,
    specificity_score,
)
from tests.common import quietly, same_bits


def close(ours, theirs):
    np.testing.assert_allclose(np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float), rtol=1e-13, atol=1e-15)


# ---- scikit-learn's toy data -----------------------------------------------------------------


def test_cohen_kappa_tables_of_artstein_and_poesio():
    """Their Table 1 (0.348), Table 4 (0.8013), and the weightings none, linear, quadratic."""
    y1 = np.array([0] * 40 + [1] * 60)
    y2 = np.array([0] * 20 + [1] * 20 + [0] * 10 + [1] * 50)
    kappa = cohen_kappa_score(y1, y2)
    assert round(kappa, 3) == 0.348 and kappa == cohen_kappa_score(y2, y1) == skm.cohen_kappa_score(y1, y2)
    assert cohen_kappa_score(y1, y1) == 1.0
    y1 = np.array([0] * 46 + [1] * 44 + [2] * 10)
    assert round(cohen_kappa_score(y1, np.array([0] * 52 + [1] * 32 + [2] * 16)), 4) == 0.8013
    y2 = np.array([0] * 50 + [1] * 40 + [2] * 10)
    for weights, expected in ((None, 0.9315), ("linear", 0.9412), ("quadratic", 0.9541)):
        assert round(cohen_kappa_score(y1, y2, weights=weights), 4) == expected
        same_bits(cohen_kappa_score(y1, y2, weights=weights), skm.cohen_kappa_score(y1, y2, weights=weights))


@pytest.mark.parametrize("y1, y2, labels", [
    ([3] * 10, [3] * 10, None),  # one label only: chance agreement is perfect
    ([], [], None),  # no case
])
def test_cohen_kappa_undefined_is_replace_undefined_by(y1, y2, labels):
    assert math.isnan(cohen_kappa_score(y1, y2, labels=labels))
    assert cohen_kappa_score(y1, y2, labels=labels, replace_undefined_by=-1.0) == -1.0


@pytest.mark.parametrize("y_true, y_pred", [([0, 1, 0, 0, 1, 0], [0, 1, 0, 0, 0, 1]),
                                            (["a", "b", "a", "b"], ["a", "a", "a", "b"]),
                                            ([0, 0, 1, 2, 2, 2], [0, 1, 1, 2, 0, 2])])
def test_balanced_accuracy_toy_data(y_true, y_pred):
    same_bits(balanced_accuracy_score(y_true, y_pred), skm.balanced_accuracy_score(y_true, y_pred))
    same_bits(balanced_accuracy_score(y_true, y_pred, adjusted=True),
              skm.balanced_accuracy_score(y_true, y_pred, adjusted=True))
    assert balanced_accuracy_score([0, 1, 0, 0, 1, 0], [0, 1, 0, 0, 0, 1]) == 0.625


def test_balanced_accuracy_leaves_out_a_class_never_true():
    """scikit-learn's test_balanced_accuracy_score_unseen: a predicted class absent from the truth
    has no recall and is not averaged."""
    same_bits(balanced_accuracy_score([0, 0, 0], [0, 0, 1]), quietly(skm.balanced_accuracy_score, [0, 0, 0], [0, 0, 1]))


def test_binary_precision_recall_f1_toy_data():
    y_true, y_pred = [0, 1, 1, 0, 1, 1], [0, 1, 0, 0, 1, 1]
    assert (precision_score(y_true, y_pred), recall_score(y_true, y_pred)) == (1.0, 0.75)
    assert f1_score(y_true, y_pred) == 2 * 3 / (2 * 3 + 0 + 1)
    assert (specificity_score(y_true, y_pred), npv_score(y_true, y_pred)) == (1.0, 2 / 3)
    assert accuracy_score(y_true, y_pred) == 5 / 6


# ---- generated decisions against scikit-learn --------------------------------------------------


def decisions(rng, n, k):
    y_true = rng.integers(0, k, n)
    y_pred = np.where(rng.random(n) < 0.6, y_true, rng.integers(0, k, n))
    return y_true, y_pred


@pytest.mark.parametrize("seed", range(12))
def test_rates_and_f1_equal_scikit_learn_for_every_average(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 80)), [2, 2, 3, 5][seed % 4]
    y_true, y_pred = decisions(rng, n, k)
    if seed % 3 == 0:
        y_pred[:] = 0  # every class but one never predicted
    labels = list(range(k))
    whole, fractional = rng.integers(0, 4, n), np.round(rng.uniform(0, 2, n), 3)
    whole[0] = fractional[0] = 1  # scikit-learn refuses weights that are all zero (tested below)
    averages = (None, "macro", "weighted", "micro") + (("binary",) if k == 2 else ())
    for ours, theirs in ((recall_score, skm.recall_score), (precision_score, skm.precision_score),
                         (f1_score, skm.f1_score)):
        for average in averages:
            for zero_division in (0.0, 1.0, math.nan):
                kwargs = dict(labels=labels, average=average, zero_division=zero_division)
                same_bits(ours(y_true, y_pred, **kwargs), quietly(theirs, y_true, y_pred, **kwargs))
                same_bits(ours(y_true, y_pred, whole, **kwargs),
                          quietly(theirs, y_true, y_pred, sample_weight=whole, **kwargs))
                close(ours(y_true, y_pred, fractional, **kwargs),
                      quietly(theirs, y_true, y_pred, sample_weight=fractional, **kwargs))
    for weights in (None, whole):
        same_bits(accuracy_score(y_true, y_pred, weights),
                  quietly(skm.accuracy_score, y_true, y_pred, sample_weight=weights))
        if weights is None or weights.sum() > 0:
            same_bits(balanced_accuracy_score(y_true, y_pred, weights),
                      quietly(skm.balanced_accuracy_score, y_true, y_pred, sample_weight=weights))
        for kappa_weights in (None, "linear", "quadratic"):
            same_bits(cohen_kappa_score(y_true, y_pred, weights, labels=labels, weights=kappa_weights),
                      quietly(skm.cohen_kappa_score, y_true, y_pred, sample_weight=weights, labels=labels,
                              weights=kappa_weights))
        same_bits(confusion_matrix(y_true, y_pred, weights, labels=labels),
                  skm.confusion_matrix(y_true, y_pred, sample_weight=weights, labels=labels))
    close(accuracy_score(y_true, y_pred, fractional), skm.accuracy_score(y_true, y_pred, sample_weight=fractional))
    close(cohen_kappa_score(y_true, y_pred, fractional, labels=labels),
          quietly(skm.cohen_kappa_score, y_true, y_pred, sample_weight=fractional, labels=labels))


@pytest.mark.parametrize("seed", range(6))
def test_specificity_and_npv_are_recall_and_precision_of_the_other_class(seed):
    rng = np.random.default_rng(seed)
    y_true, y_pred = decisions(rng, int(rng.integers(1, 60)), 2)
    w = rng.integers(0, 3, len(y_true))
    for zero_division in (0.0, 1.0, math.nan):
        same_bits(specificity_score(y_true, y_pred, w, zero_division=zero_division),
                  quietly(skm.recall_score, y_true, y_pred, sample_weight=w, pos_label=0, zero_division=zero_division))
        same_bits(npv_score(y_true, y_pred, w, zero_division=zero_division),
                  quietly(skm.precision_score, y_true, y_pred, sample_weight=w, pos_label=0,
                          zero_division=zero_division))


@pytest.mark.parametrize("y_true, y_pred, w", [
    ([1, 1, 1], [1, 0, 1], None),  # a single class in the truth
    ([0, 0, 0], [0, 0, 0], None),  # a single class anywhere: positives neither true nor predicted
    ([1], [0], None),  # one case
    ([0, 1, 1, 0], [0, 1, 0, 1], [0, 0, 0, 0]),  # every weight zero
    ([0, 1, 1, 0], [0, 1, 0, 1], [1, 0, 2, 0]),  # zero weights among others
])
def test_edges_follow_zero_division(y_true, y_pred, w):
    for ours, theirs in ((recall_score, skm.recall_score), (precision_score, skm.precision_score),
                         (f1_score, skm.f1_score)):
        for zero_division in (0.0, 1.0, math.nan):
            value = ours(y_true, y_pred, w, zero_division=zero_division)
            if w is not None and not any(w):  # scikit-learn refuses weights all zero: every count is 0
                same_bits(value, zero_division)
            else:
                same_bits(value, quietly(theirs, y_true, y_pred, sample_weight=w, zero_division=zero_division))
    assert math.isnan(recall_score([0, 0], [0, 1]))  # the default: undefined, never a silent 0


def test_binary_confusion_counts_and_rows():
    y_true, y_pred = [1, 1, 0, 0, 1], [1, 0, 1, 0, 1]
    counts = binary_confusion(y_true, y_pred, [1.0, 2.0, 0.5, 1.0, 3.0])
    assert (counts.tp, counts.fp, counts.fn, counts.tn) == (4.0, 0.5, 2.0, 1.0)
    rows = binary_confusion(y_true, y_pred, [[1, 1, 1, 1, 1], [0, 0, 0, 0, 0]])
    same_bits(rows.tp, [2, 0])
    assert np.isnan(rows.accuracy()[1])


@pytest.mark.parametrize("seed", range(4))
def test_rows_of_weights_are_each_rows_value_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    y_true, y_pred = decisions(rng, 90, 3 if seed % 2 else 2)
    rows = rng.integers(0, 3, (10, 90)).astype(float)
    rows[1] *= np.round(rng.uniform(0, 2, 90), 3)
    rows[2] = 0
    labels = [0, 1, 2]
    for function, kwargs in ((recall_score, {"average": "macro"}), (precision_score, {"average": None}),
                             (f1_score, {"average": "weighted"}), (f1_score, {"average": "micro"}),
                             (specificity_score, {"average": "macro"}), (npv_score, {"average": None}),
                             (accuracy_score, {}), (balanced_accuracy_score, {}),
                             (cohen_kappa_score, {"weights": "quadratic"})):
        many = function(y_true, y_pred, rows, labels=labels, **kwargs)
        same_bits(many, [function(y_true, y_pred, row, labels=labels, **kwargs) for row in rows])


# ---- bad arguments -----------------------------------------------------------------------------


@pytest.mark.parametrize("call, message", [
    (lambda: f1_score([0, 1, 1], [0, 1]), "one length"),
    (lambda: f1_score([0, 1, np.nan], [0, 1, 1]), "y_true holds NaN"),
    (lambda: f1_score([0, 1, 2], [0, 1, 1], labels=[0, 1], average="macro"), "y_true holds 2, outside the declared"),
    (lambda: recall_score([0, 1], [0, 3], labels=[0, 1]), "y_pred holds 3, outside the declared labels"),
    (lambda: f1_score([0, 1, 2], [0, 1, 1]), "average='binary' needs two classes"),
    (lambda: f1_score([0, 2], [0, 2]), "pos_label=1 is not one of the classes"),
    (lambda: f1_score([0, 1], [0, 1], average="samples"), "average must be one of"),
    (lambda: f1_score([0, 1], [0, 1], zero_division="warn"), "zero_division must be a number"),
    (lambda: recall_score([0, 1], [0, 1], [1, -1]), "sample_weight must be finite and >= 0"),
    (lambda: recall_score([0, 1], [0, 1], [1, np.nan]), "sample_weight must be finite and >= 0"),
    (lambda: accuracy_score([0, 1], [0, 1], [1, 1, 1]), "one weight per case"),
    (lambda: cohen_kappa_score([0, 1], [0, 1], weights="cubic"), "weights must be one of"),
    (lambda: balanced_accuracy_score([[0, 1]], [[0, 1]]), "must be 1-D"),
])
def test_bad_arguments_are_refused_naming_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_many_classes_cost_one_pass_not_one_per_class():
    """Classes read from the values (labels=None) can be as many as the cases: a pass over every
    case per class was quadratic (60,000 distinct classes: ~35 s, and the confusion matrix
    60,000² passes). The many-class path is scikit-learn's arithmetic (bincount), equal to it bit
    for bit, fractional weights included."""
    import time

    rng = np.random.default_rng(5)
    n = 60_000
    y_true, y_pred = rng.integers(0, n, n), rng.integers(0, n, n)
    start = time.perf_counter()
    ours = f1_score(y_true, y_pred, average="macro", zero_division=0.0)
    assert time.perf_counter() - start < 5.0
    same_bits(ours, skm.f1_score(y_true, y_pred, average="macro", zero_division=0.0))
    small = rng.integers(0, 40, 500), rng.integers(0, 40, 500)  # 40 classes: above the per-class loop
    fractional = rng.random(500)
    for average in ("macro", "weighted", "micro", None):
        for ours_metric, theirs in ((recall_score, skm.recall_score), (precision_score, skm.precision_score)):
            same_bits(ours_metric(*small, fractional, average=average, zero_division=0.0),
                      theirs(*small, sample_weight=fractional, average=average, zero_division=0.0))
    same_bits(balanced_accuracy_score(*small), skm.balanced_accuracy_score(*small))
    close(balanced_accuracy_score(*small, fractional), skm.balanced_accuracy_score(*small, sample_weight=fractional))
    same_bits(confusion_matrix(*small), skm.confusion_matrix(*small))
    close(confusion_matrix(*small, fractional), skm.confusion_matrix(*small, sample_weight=fractional))
    start = time.perf_counter()  # ~1,900 classes: the matrix itself is small (29 MB), its k² passes were not
    matrix = confusion_matrix(y_true[:1000], y_pred[:1000])
    assert time.perf_counter() - start < 5.0 and matrix.sum() == 1000
