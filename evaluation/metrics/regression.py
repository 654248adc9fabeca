"""Regression and measurement errors: a true and a predicted number per case (a volume, a count, a
circumference, an age), arrays in, numbers out.

Every metric is computed from the residuals of the cases and pooled over them. Names and semantics
are scikit-learn's (`mean_absolute_error`, `root_mean_squared_error`, `r2_score`,
`mean_absolute_percentage_error`) and scipy's (`pearsonr`, `spearmanr`), so that a call gives the
number those libraries give; where they differ on an undefined case, a parameter says which value.

Case weights: every pooled metric takes `sample_weight`, a weight per case, or rows of weights at
once ((rows, cases), e.g. a bootstrap's counts), each row giving the value as if given alone, and
then an array of one value per row. A case of weight 2 counts as that case twice (weights are
frequencies), so the weighted value of a bootstrap row equals the value of the resample it counts.

Percentage errors are fractions (0.05 is 5 %), as scikit-learn's: multiply by 100 for percent.
"""

from __future__ import annotations

import math

import numpy as np

from evaluation.metrics.aggregation import row_means
from evaluation.metrics.registry import metric
from evaluation.metrics.validation import (
    check_choice,
    check_empty_value,
    check_same_length,
    check_sample_weight,
    check_values,
    per_row,
    weight_totals,
)


def _cases(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    """The true and predicted values as finite float64 arrays of one length."""
    truth, prediction = check_values(y_true, "y_true"), check_values(y_pred, "y_pred")
    check_same_length(y_true=truth, y_pred=prediction)
    return truth, prediction


def _weights(sample_weight, n: int) -> tuple[np.ndarray, bool, np.ndarray]:
    """(weights as (rows, n), whether one row was given, total weight of each row)."""
    weights, single = check_sample_weight(sample_weight, n)
    return weights, single, weight_totals(weights)


def _constant(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row of weights: whether the cases of positive weight all hold one value."""
    present = weights > 0
    values = np.broadcast_to(values, weights.shape)
    largest = np.where(present, values, -np.inf).max(axis=1, initial=-np.inf)
    return largest == np.where(present, values, np.inf).min(axis=1, initial=np.inf)  # no case: not constant


@metric(kind="values", better="lower", symmetric=True,
        equals=("sklearn.metrics.mean_absolute_error",),
        citation="Willmott and Matsuura, Climate Research 30(1), 2005")
def mean_absolute_error(y_true, y_pred, sample_weight=None):
    """Mean absolute error of predicted values: the weighted mean of |y_pred − y_true|.

    Σ w_i |ŷ_i − y_i| / Σ w_i over the cases, in the values' unit. As scikit-learn's
    `mean_absolute_error`.
    """
    truth, prediction = _cases(y_true, y_pred)
    weights, single, totals = _weights(sample_weight, len(truth))
    return per_row(row_means(np.abs(prediction - truth), weights, totals), single)


@metric(kind="values", better="lower", symmetric=True,
        equals=("sklearn.metrics.root_mean_squared_error",),
        citation="Willmott and Matsuura, Climate Research 30(1), 2005")
def root_mean_squared_error(y_true, y_pred, sample_weight=None):
    """Root mean squared error of predicted values: the square root of the weighted mean of
    (y_pred − y_true)².

    sqrt(Σ w_i (ŷ_i − y_i)² / Σ w_i), in the values' unit. As scikit-learn's
    `root_mean_squared_error`.
    """
    truth, prediction = _cases(y_true, y_pred)
    weights, single, totals = _weights(sample_weight, len(truth))
    return per_row(np.sqrt(row_means((prediction - truth) ** 2, weights, totals)), single)


SKLEARN_CONSTANT_TRUTH = "sklearn"  # r2_score's constant_truth: scikit-learn's force_finite=True rule


@metric(kind="values", better="higher", empty={"constant_truth": math.nan},
        variants={"constant_truth": "a number (NaN by default) for every constant truth; 'sklearn': scikit-learn's "
                                    "force_finite=True rule, 1.0 for a perfect prediction, 0.0 otherwise, NaN for "
                                    "fewer than two cases"},
        equals=("sklearn.metrics.r2_score (force_finite=False where the truth is not constant)",
                "sklearn.metrics.r2_score with its default force_finite=True (constant_truth='sklearn'; where a "
                "constant truth's mean is exact, e.g. whole numbers, and without sample_weight)"),
        citation="Draper and Smith, Applied Regression Analysis, 3rd ed., Wiley, 1998")
def r2_score(y_true, y_pred, sample_weight=None, constant_truth: float | str = math.nan):
    """Coefficient of determination R² of predicted values: 1 − residual sum of squares / total
    sum of squares.

    1 − Σ w_i (y_i − ŷ_i)² / Σ w_i (y_i − ȳ)², ȳ the weighted mean of the truth; 1 is perfect,
    0 is as good as predicting ȳ, and it is negative when worse. As scikit-learn's `r2_score`.
    Undefined when the truth is constant (one value on every case of positive weight, a single
    case included): then `constant_truth`, a number (NaN by default; scikit-learn's
    `force_finite=False` gives NaN or −inf), or "sklearn", scikit-learn's default
    `force_finite=True` rule: 1.0 when the prediction is exact (a weighted residual sum of 0),
    0.0 otherwise, and NaN for fewer than two cases, as scikit-learn warns and returns NaN for
    fewer than two samples. Cases are counted by weight here (a case of weight w is w cases, so
    a bootstrap row equals its resample), where scikit-learn counts the rows given: they differ
    only where the two counts fall on either side of 2 (weights [1, 0]: NaN here, 1.0 or 0.0
    there; one case of weight 2: the reverse). scikit-learn calls a truth constant when its total
    sum of squares is 0 in floats, which a constant truth whose mean rounds misses (0.1 three
    times has mean 0.10000000000000002: its R² is 1 − residual / 6e-34); here a truth is
    constant when its values are equal.
    """
    truth, prediction = _cases(y_true, y_pred)
    sklearn_rule = isinstance(constant_truth, str) and constant_truth == SKLEARN_CONSTANT_TRUTH
    if not sklearn_rule:
        try:
            constant_truth = check_empty_value(constant_truth, "constant_truth")
        except ValueError:
            raise ValueError(f'constant_truth must be a number, NaN or "{SKLEARN_CONSTANT_TRUTH}", got '
                             f"{constant_truth!r}") from None
    weights, single, totals = _weights(sample_weight, len(truth))
    mean = weights @ truth / totals
    residual = weights @ (truth - prediction) ** 2
    total = (weights * (truth[None, :] - mean[:, None]) ** 2).sum(axis=1)
    constant = _constant(truth, weights)
    if sklearn_rule:  # force_finite=True: exact is 1, anything else 0; under two cases NaN (sklearn's warning)
        constant_truth = np.where(weights.sum(axis=1) < 2, math.nan, np.where(residual == 0, 1.0, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(constant, constant_truth, 1.0 - residual / np.where(constant, 1.0, total))
    return per_row(score, single)


def _pearson(x: np.ndarray, y: np.ndarray, weights: np.ndarray, totals: np.ndarray,
             constant: np.ndarray, constant_input: float) -> np.ndarray:
    """Weighted Pearson correlation of x and y ((n,) or (rows, n)) in each row of weights."""
    x, y = np.broadcast_to(x, weights.shape), np.broadcast_to(y, weights.shape)
    dx = x - ((weights * x).sum(axis=1) / totals)[:, None]
    dy = y - ((weights * y).sum(axis=1) / totals)[:, None]
    covariance = (weights * dx * dy).sum(axis=1)
    spread = np.sqrt((weights * dx * dx).sum(axis=1) * (weights * dy * dy).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(covariance / np.where(constant, 1.0, spread), -1.0, 1.0)  # rounding can pass ±1, as scipy clips
    return np.where(constant, constant_input, r)


@metric(kind="values", better="higher", symmetric=True, empty={"constant_input": math.nan},
        equals=("scipy.stats.pearsonr (its statistic)",),
        citation="Pearson, Proceedings of the Royal Society of London 58, 1895")
def pearson_correlation(y_true, y_pred, sample_weight=None, constant_input: float = math.nan):
    """Pearson correlation coefficient of true and predicted values.

    Σ w_i (y_i − ȳ)(ŷ_i − ŷ̄) / sqrt(Σ w_i (y_i − ȳ)² · Σ w_i (ŷ_i − ŷ̄)²), bars the weighted means;
    in [−1, 1]. As scipy's `pearsonr` statistic. Undefined when either input is constant (a single
    case included): then `constant_input` (NaN by default, as scipy, which also warns).
    """
    truth, prediction = _cases(y_true, y_pred)
    constant_input = check_empty_value(constant_input, "constant_input")
    weights, single, totals = _weights(sample_weight, len(truth))
    constant = _constant(truth, weights) | _constant(prediction, weights)
    return per_row(_pearson(truth, prediction, weights, totals, constant, constant_input), single)


def weighted_ranks(values: np.ndarray, sample_weight: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties sharing the mean of their positions) of values (n,) in each row
    of sample_weight (rows, n), a case of weight w standing for w copies of it: a group of tied values
    after cases of total weight C, itself of total weight W, ranks C + (W + 1) / 2 (scipy's
    `rankdata(method="average")` of the repeated values)."""
    if not len(values):
        return np.zeros(sample_weight.shape)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new_group = np.r_[True, ordered[1:] != ordered[:-1]]
    group_weights = np.add.reduceat(sample_weight[:, order], np.flatnonzero(new_group), axis=1)
    before = np.cumsum(group_weights, axis=1) - group_weights
    ranks = np.empty(sample_weight.shape)
    ranks[:, order] = (before + (group_weights + 1.0) / 2.0)[:, np.cumsum(new_group) - 1]
    return ranks


@metric(kind="values", better="higher", symmetric=True, empty={"constant_input": math.nan},
        equals=("scipy.stats.spearmanr (its statistic)",),
        citation="Spearman, The American Journal of Psychology 15(1), 1904")
def spearman_correlation(y_true, y_pred, sample_weight=None, constant_input: float = math.nan):
    """Spearman rank correlation of true and predicted values: the Pearson correlation of their
    ranks.

    Ranks are average ranks (tied values share the mean of their positions), a case of weight w
    ranked as w copies of it; then the weighted Pearson correlation of the two rankings. As
    scipy's `spearmanr` statistic. Undefined when either input is constant (a single case
    included): then `constant_input` (NaN by default, as scipy, which also warns).
    """
    truth, prediction = _cases(y_true, y_pred)
    constant_input = check_empty_value(constant_input, "constant_input")
    weights, single, totals = _weights(sample_weight, len(truth))
    constant = _constant(truth, weights) | _constant(prediction, weights)
    ranks_true, ranks_pred = weighted_ranks(truth, weights), weighted_ranks(prediction, weights)
    return per_row(_pearson(ranks_true, ranks_pred, weights, totals, constant, constant_input), single)


def _ratio(numerator: np.ndarray, denominator: np.ndarray, undefined: np.ndarray, value: float) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(undefined, value, numerator / np.where(undefined, 1.0, denominator))


@metric(kind="values", better="lower", returns="array", empty={"zero_truth": math.nan},
        equals=("sklearn.metrics.mean_absolute_percentage_error of each case (where the truth is not 0)",),
        citation="de Myttenaere et al., Neurocomputing 192, 2016")
def absolute_percentage_error(y_true, y_pred, zero_truth: float = math.nan) -> np.ndarray:
    """Absolute percentage error of each case: |y_pred − y_true| / |y_true|, as a fraction.

    One value per case (0.05 is 5 %). Undefined where the truth is 0: there `zero_truth` (NaN by
    default; scikit-learn divides by the machine epsilon instead, giving about 4.5e15 × |ŷ|).
    """
    truth, prediction = _cases(y_true, y_pred)
    zero_truth = check_empty_value(zero_truth, "zero_truth")
    return _ratio(np.abs(prediction - truth), np.abs(truth), truth == 0, zero_truth)


@metric(kind="values", better="lower", empty={"zero_truth": math.nan},
        equals=("sklearn.metrics.mean_absolute_percentage_error (where no truth is 0)",),
        citation="de Myttenaere et al., Neurocomputing 192, 2016")
def mean_absolute_percentage_error(y_true, y_pred, sample_weight=None, zero_truth: float = math.nan):
    """Mean absolute percentage error (MAPE): the weighted mean of |y_pred − y_true| / |y_true|,
    as a fraction.

    Σ w_i |ŷ_i − y_i| / |y_i| / Σ w_i (0.05 is 5 %). A case whose truth is 0 counts as
    `zero_truth` (NaN by default, which makes the mean NaN; scikit-learn divides by the machine
    epsilon instead).
    """
    truth, prediction = _cases(y_true, y_pred)
    zero_truth = check_empty_value(zero_truth, "zero_truth")
    weights, single, totals = _weights(sample_weight, len(truth))
    errors = _ratio(np.abs(prediction - truth), np.abs(truth), truth == 0, zero_truth)
    return per_row(row_means(errors, weights, totals), single)


SYMMETRIC_DENOMINATORS = {
    "mean": "|ŷ − y| / ((|ŷ| + |y|) / 2), in [0, 2]: Makridakis' and Flores' sMAPE, torchmetrics'",
    "sum": "|ŷ − y| / (|ŷ| + |y|), in [0, 1]: the bounded form",
}


def _symmetric_errors(truth, prediction, denominator, both_zero):
    check_choice(denominator, "denominator", tuple(SYMMETRIC_DENOMINATORS))
    both_zero = check_empty_value(both_zero, "both_zero")
    total = np.abs(prediction) + np.abs(truth)
    scale = total / 2.0 if denominator == "mean" else total
    return _ratio(np.abs(prediction - truth), scale, total == 0, both_zero)


@metric(kind="values", better="lower", symmetric=True, returns="array", empty={"both_zero": 0.0},
        variants={"denominator": SYMMETRIC_DENOMINATORS},
        equals=("its definition, brute force per case (denominator='mean' is torchmetrics' SMAPE form)",),
        citation="Makridakis, International Journal of Forecasting 9(4), 1993")
def symmetric_absolute_percentage_error(y_true, y_pred, denominator: str = "mean",
                                        both_zero: float = 0.0) -> np.ndarray:
    """Symmetric absolute percentage error of each case: |y_pred − y_true| over the mean (or the
    sum) of |y_pred| and |y_true|, as a fraction.

    `denominator="mean"`: |ŷ − y| / ((|ŷ| + |y|) / 2), in [0, 2]; `"sum"`: |ŷ − y| / (|ŷ| + |y|),
    in [0, 1] (half the former). One value per case. Where both are 0 the prediction is exact:
    `both_zero` (0.0 by default).
    """
    truth, prediction = _cases(y_true, y_pred)
    return _symmetric_errors(truth, prediction, denominator, both_zero)


@metric(kind="values", better="lower", symmetric=True, empty={"both_zero": 0.0},
        variants={"denominator": SYMMETRIC_DENOMINATORS},
        equals=("its definition, brute force (denominator='mean' is torchmetrics' SMAPE form)",),
        citation="Makridakis, International Journal of Forecasting 9(4), 1993")
def symmetric_mean_absolute_percentage_error(y_true, y_pred, sample_weight=None, denominator: str = "mean",
                                             both_zero: float = 0.0):
    """Symmetric mean absolute percentage error (sMAPE): the weighted mean of the symmetric
    absolute percentage errors of the cases, as a fraction.

    Σ w_i e_i / Σ w_i with e_i = |ŷ_i − y_i| / ((|ŷ_i| + |y_i|) / 2) (`denominator="mean"`, in
    [0, 2]) or |ŷ_i − y_i| / (|ŷ_i| + |y_i|) (`"sum"`, in [0, 1]); a case where both are 0 counts
    as `both_zero` (0.0 by default).
    """
    truth, prediction = _cases(y_true, y_pred)
    weights, single, totals = _weights(sample_weight, len(truth))
    errors = _symmetric_errors(truth, prediction, denominator, both_zero)
    return per_row(row_means(errors, weights, totals), single)


def _normalized_errors(truth, prediction, both_zero):
    both_zero = check_empty_value(both_zero, "both_zero")
    largest = np.maximum(np.abs(prediction), np.abs(truth))
    return _ratio(np.abs(prediction - truth), largest, largest == 0, both_zero)


@metric(kind="values", better="lower", symmetric=True, returns="array", empty={"both_zero": 0.0},
        equals=("ACOUSLIC-AI's evaluation nae_circumference (positive values)",),
        citation="ACOUSLIC-AI challenge evaluation (DIAGNijmegen, grand-challenge.org, 2024)")
def normalized_absolute_error(y_true, y_pred, both_zero: float = 0.0) -> np.ndarray:
    """Normalized absolute error of each case: |y_pred − y_true| / max(|y_pred|, |y_true|).

    In [0, 1] for values of one sign (ACOUSLIC-AI's circumference error; 1 − it is their score
    part). One value per case; where both are 0 the prediction is exact: `both_zero` (0.0 by
    default).
    """
    truth, prediction = _cases(y_true, y_pred)
    return _normalized_errors(truth, prediction, both_zero)


@metric(kind="values", better="lower", symmetric=True, empty={"both_zero": 0.0},
        equals=("ACOUSLIC-AI's evaluation mean nae_circumference (positive values)",),
        citation="ACOUSLIC-AI challenge evaluation (DIAGNijmegen, grand-challenge.org, 2024)")
def mean_normalized_absolute_error(y_true, y_pred, sample_weight=None, both_zero: float = 0.0):
    """Mean normalized absolute error: the weighted mean of |y_pred − y_true| / max(|y_pred|,
    |y_true|) over the cases.

    Σ w_i e_i / Σ w_i with e_i = |ŷ_i − y_i| / max(|ŷ_i|, |y_i|); a case where both are 0 counts
    as `both_zero` (0.0 by default).
    """
    truth, prediction = _cases(y_true, y_pred)
    weights, single, totals = _weights(sample_weight, len(truth))
    return per_row(row_means(_normalized_errors(truth, prediction, both_zero), weights, totals), single)
