"""ISIC scoring: the reference's nine metrics per category, their macro averages, the validation
score and our malignant-vs-benign AUC (metrics.json), and the one weighted computation of the
ranked values (`ranked_values`): balanced multi-class accuracy and the mean AUC over categories,
for any rows of image weights. metrics.json's ranked values are its row of ones (the
challenge's point_values), the final ranking's bootstrap its rows of counts: one code path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.challenges.isic.charts import roc_for_plot
from evaluation.challenges.isic.columns import (
    AGGREGATE,
    BALANCED_ACCURACY,
    MACRO_AVERAGE,
    MEAN_AUC,
    OVERALL,
    PER_CATEGORY_METRICS,
    key_in,
)
from evaluation.challenges.isic.truth import THRESHOLD, Truth
from evaluation.metrics import classification
from evaluation.metrics.confusion import binary_confusion
from evaluation.platform.outputs import Undefined

from .multiclass import UNDECIDED, argmax_labels, nan_mean, nan_mean_rows, recall_of_labels, recall_of_labels_rows

AUC80_SENSITIVITY = 0.8  # the metric's name says 80
UNDEFINED_BALANCED_ACCURACY = "no category has images with a nonzero score_weight"
FREEBIE = 1.0  # the reference's value of a confusion rate whose denominator is zero (nothing to find or call)


# ---- the ranked values, for any rows of image weights ------------------------------------------


@dataclass(frozen=True)
class Submission:
    """What the ranked values need of one submission, made once (the final ranking draws many
    blocks of resamples of the same results): the argmax labels of the truth and of the
    confidences, each category's positives and one sort of its confidences (metrics.json's
    curves), and the images' score weights."""

    predictions: np.ndarray  # (images, categories), the images in the weights' order
    positives: np.ndarray  # (images, categories): the truth above THRESHOLD
    truth_labels: np.ndarray
    predicted_labels: np.ndarray
    orders: tuple[classification.ScoreOrder, ...]
    score_weight: np.ndarray


def submission(truth_values: np.ndarray, predictions: np.ndarray, score_weight: np.ndarray) -> Submission:
    """From the truth, the confidences and the score weights of the images, in the weights' order."""
    positives = truth_values > THRESHOLD
    score_weight = np.asarray(score_weight, dtype=np.float64)
    # Each sort keeps the curve of the score weights: metrics.json's per-category metrics and the
    # point value of the mean AUC (the row of ones times them) both read it, made once.
    orders = tuple(classification.score_order(positives[:, c], predictions[:, c], score_weight)
                   for c in range(positives.shape[1]))
    return Submission(predictions, positives, argmax_labels(truth_values), argmax_labels(predictions), orders,
                      score_weight)


def ranked_values(table: Submission, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(balanced multi-class accuracy, mean AUC over categories) of every row of `weights`
    (rows, images: how many times each image counts; its score_weight multiplies it), NaN where
    the row leaves the value undefined. Labels by argmax: a truth without a single category
    belongs to no category, a tied prediction is wrong; a category's recall or AUC undefined in
    a row is left out of that row's mean. The row of ones gives metrics.json's numbers, the
    reference's bit for bit: weights times 1.0 are the score weights themselves, and the
    per-row metrics keep the single-row summation order (metrics/classification.py)."""
    weights = np.asarray(weights)
    sample_weight = weights * table.score_weight  # float64; exact for a weight of 1
    n_categories = len(table.orders)
    recall = recall_of_labels_rows(table.truth_labels, table.predicted_labels, sample_weight, n_categories)
    auc = classification.roc_auc_of_orders(table.orders, sample_weight)
    return nan_mean_rows(recall), nan_mean_rows(auc)


# ---- metrics.json ------------------------------------------------------------------------------


def _why_undefined(category: str, weight_name: str, positives: bool, negatives: bool) -> str:
    if not positives:
        return f"no image of category {category} in the ground truth with a nonzero {weight_name}"
    return f"every image with a nonzero {weight_name} is of category {category} (no negatives)"


def _defined(value: float, reason: str) -> float | Undefined:
    return value if np.isfinite(value) else Undefined(reason)


def _mean_of(values: dict[str, Any], what: str) -> float | Undefined:
    numbers = np.array([v if not isinstance(v, Undefined) else np.nan for v in values.values()], dtype=np.float64)
    mean = nan_mean(numbers)
    return mean if np.isfinite(mean) else Undefined(f"{what} is undefined for every category")


def category_scores(truth: np.ndarray, prediction: np.ndarray, weights: np.ndarray, category: str,
                    weight_name: str, order: classification.ScoreOrder | None = None
                    ) -> tuple[dict[str, Any], classification.RankingCurve]:
    """The nine per-category metrics of the reference, for one weight column (`order`: the sort
    of these confidences, when already made)."""
    positives, decisions = truth > THRESHOLD, prediction > THRESHOLD
    cm = binary_confusion(positives, decisions, weights)
    curve = (classification.ranking_curve(positives, prediction, weights) if order is None
             else classification.ranking_curve_of_order(order, weights))
    reason = _why_undefined(category, weight_name, curve.has_positives, curve.has_negatives)
    scores: dict[str, Any] = {
        "accuracy": cm.accuracy(),
        "sensitivity": cm.sensitivity(FREEBIE),
        "specificity": cm.specificity(FREEBIE),
        "dice": cm.f1(FREEBIE),
        "ppv": cm.ppv(FREEBIE),
        "npv": cm.npv(FREEBIE),
        "auc": _defined(classification.roc_auc(curve), f"AUC: {reason}"),
        "auc_sens_80": _defined(classification.auc_above_sensitivity(curve, AUC80_SENSITIVITY), f"AUC80: {reason}"),
        "ap": _defined(classification.average_precision(curve), f"average precision: {reason}"),
    }
    return scores, curve


def score(truth: Truth, predictions: np.ndarray, target_metric: str,
          malignant_categories: list[str] | tuple[str, ...], table: Submission,
          balanced_accuracy: float, mean_auc: float) -> dict[str, Any]:
    """metrics.json content from the sorted truth and the predictions in the same row order
    (`table`: their Submission, its labels and sorts); the ranked values are the point values
    (ranked_values on the row of ones), never computed here a second time."""
    labels = table.truth_labels, table.predicted_labels
    categories = truth.categories
    per_category: dict[str, dict[str, Any]] = {metric: {} for metric in PER_CATEGORY_METRICS}
    curves: dict[str, classification.RankingCurve] = {}
    for c, category in enumerate(categories):
        scores, curves[category] = category_scores(truth.values[:, c], predictions[:, c], truth.score_weight,
                                                   category, "score_weight", table.orders[c])
        for metric, value in scores.items():
            per_category[metric][category] = value
    plotted = [category for category, curve in curves.items() if curve.has_positives and curve.has_negatives]
    simplified = roc_for_plot([curves[category] for category in plotted])  # all at once
    points = dict(zip(plotted, simplified, strict=True))
    roc_curves = {category: points[category] if category in points else
                  Undefined("ROC: " + _why_undefined(category, "score_weight", curve.has_positives,
                                                      curve.has_negatives))
                  for category, curve in curves.items()}
    macro_average = {metric: _mean_of(values, metric) for metric, values in per_category.items()
                     if metric != "auc"}
    macro_average["auc"] = _defined(mean_auc, "auc is undefined for every category")  # the ranked value
    macro_average = {metric: macro_average[metric] for metric in PER_CATEGORY_METRICS}  # the reference's order
    aggregate = {
        key_in(AGGREGATE, BALANCED_ACCURACY): _defined(balanced_accuracy, UNDEFINED_BALANCED_ACCURACY),
        key_in(AGGREGATE, MEAN_AUC): macro_average["auc"],  # the leaderboard's tie-break: mean AUC over categories
        "malignant_vs_benign_auc": malignant_vs_benign_auc(truth, predictions, malignant_categories, labels[0]),
    }
    overall = (aggregate[key_in(AGGREGATE, BALANCED_ACCURACY)] if target_metric == "balanced_accuracy"
               else macro_average[target_metric])
    validation = validation_score(truth, predictions, target_metric, labels)
    undecided = labels[1] == UNDECIDED
    return {
        OVERALL: overall,
        "validation": validation,
        "per_category": per_category,
        MACRO_AVERAGE: macro_average,
        AGGREGATE: aggregate,
        "roc_curves": roc_curves,
        "counts": {
            "images": len(truth.ids),
            "images_scored": int((truth.score_weight > 0).sum()),
            "images_validation": int((truth.validation_weight > 0).sum()),
            "undecided_predictions": int((undecided & (truth.score_weight > 0)).sum()),
        },
    }


def validation_score(truth: Truth, predictions: np.ndarray, target_metric: str,
                     labels: tuple[np.ndarray, np.ndarray] | None = None) -> float | Undefined:
    """The target metric with validation_weight, as the reference computes it (`labels`: the
    argmax labels of the truth and the predictions, when already computed)."""
    w = truth.validation_weight
    if not (w > 0).any():
        return Undefined("every validation_weight of the ground truth is 0")
    if target_metric == "balanced_accuracy":
        if labels is None:
            labels = argmax_labels(truth.values), argmax_labels(predictions)
        value = nan_mean(recall_of_labels(*labels, w, len(truth.categories)))
        return _defined(value, "no category has images with a nonzero validation_weight")
    values = []
    for c in range(len(truth.categories)):
        positives = truth.values[:, c] > THRESHOLD
        if target_metric == "dice":
            values.append(binary_confusion(positives, predictions[:, c] > THRESHOLD, w).f1(FREEBIE))
            continue
        curve = classification.ranking_curve(positives, predictions[:, c], w)
        if target_metric == "auc":
            values.append(classification.roc_auc(curve))
        elif curve.has_positives:
            values.append(classification.average_precision(curve))
        else:
            # The reference (scikit-learn) scores AP 0 for a category without validation positives
            # that has positives elsewhere in the truth; kept for parity (docs/challenges/isic.md).
            values.append(0.0 if positives.any() else np.nan)
    mean = nan_mean(np.asarray(values))
    return _defined(mean, f"{target_metric} is undefined for every category with validation_weight")


def malignant_vs_benign_auc(truth: Truth, predictions: np.ndarray, malignant_categories: list[str] | tuple[str, ...],
                            truth_labels: np.ndarray | None = None) -> float | Undefined:
    """Our definition (the reference has none): truth = the image's category is malignant,
    score = the sum of the confidences of the malignant categories, weighted ROC AUC. Images
    whose truth has no single category are left out."""
    if not malignant_categories:
        return Undefined("no malignant categories are set")
    columns = [truth.categories.index(c) for c in malignant_categories]
    labels = argmax_labels(truth.values) if truth_labels is None else truth_labels
    weights = np.where(labels >= 0, truth.score_weight, 0.0)
    curve = classification.ranking_curve(np.isin(labels, columns), predictions[:, columns].sum(axis=1), weights)
    if not (curve.has_positives and curve.has_negatives):
        return Undefined("the ground truth needs both malignant and benign images with a nonzero score_weight")
    return classification.roc_auc(curve)


