"""Plot points and charts of ISIC: the ROC points of metrics.json (roc_curves, simplified), the
result page's chart of every category's ROC curve (roc_chart_file) and the final ranking's curves."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from evaluation.challenges.isic.columns import BALANCED_ACCURACY, MEAN_AUC
from evaluation.challenges.isic.truth import THRESHOLD, Truth
from evaluation.metrics import classification
from evaluation.platform.outputs import Undefined, value_at_path

ROC_EPSILON = 0.001  # curve simplification tolerance for the plotted ROC points
ROC_DECIMALS = 4


def simplify_curve(x: np.ndarray, y: np.ndarray, epsilon: float) -> np.ndarray:
    """Ramer-Douglas-Peucker: the mask of points to keep so that no dropped point is farther
    than epsilon from the kept polyline (for compact ROC plots; finite points)."""
    return simplify_curves([(x, y)], epsilon)[0]


def simplify_curves(curves: list[tuple[np.ndarray, np.ndarray]], epsilon: float) -> list[np.ndarray]:
    """simplify_curve of each (x, y) curve, all at once: the curves end to end, and every
    segment of a level of the recursion (of every curve) in one pass; each segment's farthest
    point (the first of equals) is kept, and splits it, when it is farther than epsilon."""
    if not curves:  # (np.split below would give one empty array: one per curve it must be)
        return []
    sizes = np.array([len(x) for x, _ in curves], dtype=np.intp)
    x = np.concatenate([x for x, _ in curves])
    y = np.concatenate([y for _, y in curves])
    keep = np.zeros(len(x), dtype=bool)
    ends = np.cumsum(sizes)
    a, b = (ends - sizes)[sizes > 0], ends[sizes > 0] - 1  # each curve's first and last point
    keep[a] = keep[b] = True
    while True:
        wide = b - a >= 2
        a, b = a[wide], b[wide]
        if not len(a):
            return np.split(keep, ends[:-1])
        inside = b - a - 1  # points strictly inside each segment
        first = np.cumsum(inside) - inside  # where each segment's inside points start in the flat arrays
        segment = np.repeat(np.arange(len(a)), inside)
        point = np.arange(int(inside.sum())) - first[segment] + (a + 1)[segment]
        dx, dy = (x[b] - x[a])[segment], (y[b] - y[a])[segment]
        px, py = x[point] - x[a][segment], y[point] - y[a][segment]
        length = np.hypot(dx, dy)
        with np.errstate(divide="ignore", invalid="ignore"):
            distance = np.where(length > 0, np.abs(dy * px - dx * py) / length, np.hypot(px, py))
        farthest = np.maximum.reduceat(distance, first)
        at_max = np.flatnonzero(distance == farthest[segment])
        firsts = at_max[np.r_[True, segment[at_max][1:] != segment[at_max][:-1]]]  # one per segment, in order
        split = farthest > epsilon
        k = point[firsts][split]
        keep[k] = True
        a, b = np.concatenate([a[split], k]), np.concatenate([k, b[split]])


def roc_for_plot(curves: list[classification.RankingCurve]) -> list[dict[str, list[float]]]:
    """The plotted ROC points of each curve (scikit-learn's roc_curve, simplified); every curve
    needs positives and negatives."""
    points = [classification.roc_points(curve, drop_intermediate=True) for curve in curves]
    kept = simplify_curves([(fpr, tpr) for fpr, tpr, _ in points], ROC_EPSILON)
    plotted = []
    for (fpr, tpr, thresholds), keep in zip(points, kept, strict=True):
        thresholds = np.where(np.isinf(thresholds), 1.0, thresholds)  # the +inf start point, as the reference
        plotted.append({"threshold": np.round(thresholds[keep], 6).tolist(),
                        "fpr": np.round(fpr[keep], ROC_DECIMALS).tolist(),
                        "tpr": np.round(tpr[keep], ROC_DECIMALS).tolist()})
    return plotted


def category_roc_chart(truth: Truth, predictions: np.ndarray, metrics: dict[str, Any], title: str) -> dict:
    """The ROC curve of every category (its images against all others, score_weight), the points
    of scikit-learn's roc_curve (collinear points dropped), its AUC from metrics.json in the legend."""
    from evaluation import charts  # here: a run without the chart never imports it

    curves, missing = [], []
    roc = category_roc_points(truth, predictions)
    for category in truth.categories:
        auc = metrics["per_category"]["auc"][category]
        if category not in roc or isinstance(auc, Undefined):
            missing.append(category)
            continue
        fpr, tpr, thresholds = roc[category]
        curves.append(charts.Curve(category, fpr.tolist(), tpr.tolist(), thresholds.tolist(),
                                   summary=f"AUC {float(auc):.3f}", extra={"auc": charts.rounded(auc)}))
    subtitle = [f"mean AUC {_shown_value(value_at_path(metrics, MEAN_AUC.path))}, balanced accuracy "
                f"{_shown_value(value_at_path(metrics, BALANCED_ACCURACY.path))} "
                f"({metrics['counts']['images_scored']} images scored)"]
    if missing:
        subtitle.append(f"no curve for {', '.join(missing)}: no positive or no negative image with a nonzero "
                        f"score_weight")
    about = ("One ROC curve per category: the images of the category against all others (score_weight as "
             "weights), scored by the submitted confidence for it; the points of scikit-learn's roc_curve "
             "(collinear points dropped). Legend: the category and its AUC (metrics.json per_category.auc).")
    return charts.roc_chart(curves, title=f"{title.split(':')[0]}: ROC curve per category", subtitle=subtitle,
                            line_title="category (AUC)", about=about)


def category_roc_points(truth: Truth, predictions: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """{category: (fpr, tpr, thresholds)} of scikit-learn's roc_curve (collinear points dropped),
    its images against all others, score_weight as weights; only the categories with positive and
    negative weighted images."""
    points = {}
    for c, category in enumerate(truth.categories):
        curve = classification.ranking_curve(truth.values[:, c] > THRESHOLD, predictions[:, c], truth.score_weight)
        if curve.has_positives and curve.has_negatives:
            points[category] = classification.roc_points(curve, drop_intermediate=True)
    return points


def _shown_value(value: Any) -> str:
    return "undefined" if isinstance(value, Undefined) else f"{float(value):.4f}"


def ranking_curves(truth: Truth, predictions: np.ndarray) -> list[dict]:
    """One ROC curve per category with positive and negative images (score_weight), the points
    of the result page's chart, thinned to the chart's maximum."""
    from evaluation import (
        charts,  # here: a run without the final ranking never imports it
    )

    curves, names = [], set()
    for c, (category, points) in enumerate(category_roc_points(truth, predictions).items()):
        name = "roc_" + (re.sub(r"[^a-z0-9]+", "_", category.lower()).strip("_") or str(c))
        name = name if name not in names else f"{name}_{c}"  # two categories alike once made a file name
        names.add(name)
        fpr, tpr, _ = points
        drawn = [[charts.rounded(fpr[i]), charts.rounded(tpr[i])] for i in charts.thinned(len(fpr))]
        curves.append({"chart": name, "title": f"ROC, {category}", "x_title": "False positive rate",
                       "y_title": "Sensitivity", "points": drawn})
    return curves
