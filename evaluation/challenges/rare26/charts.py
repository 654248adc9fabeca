"""RARE26's charts: the ROC and precision-recall curves of the whole test set, for the result page
(only when their settings name a file) and the final ranking's report. They take the values they
show as arguments: which metrics.json path holds each is the declaration's business (__init__.py)."""

from __future__ import annotations

from evaluation.metrics.classification import RankingCurve

from .scoring import TARGET_RECALL


def _test_set_counts(counts: dict[str, int]) -> str:
    return f"{counts['images']} frames ({counts['neoplasia_images']} neoplasia), {counts['stacks']} stacks"


def roc_chart(curve: RankingCurve, counts: dict[str, int], auc: float, median_auc: float) -> dict:
    """The ROC curve of the whole test set, as it is (not resampled)."""
    from evaluation import charts
    from evaluation.metrics.classification import roc_points

    fpr, tpr, thresholds = roc_points(curve)
    line = charts.Curve("whole test set", fpr.tolist(), tpr.tolist(), thresholds.tolist(), summary=f"AUC {auc:.3f}")
    subtitle = [f"AUROC {auc:.4f} on the whole test set: {_test_set_counts(counts)}",
                f"leaderboard AUROC {median_auc:.4f}: the median over the bootstrap repetitions"]
    about = ("ROC curve of every frame of the test set as it is (not resampled), neoplasia against NDBE by the "
             "submitted likelihood; the points of scikit-learn's roc_curve (collinear points dropped).")
    return charts.roc_chart([line], title="RARE26: ROC curve (whole test set)", subtitle=subtitle,
                            line_title="curve (AUC)", about=about)


def precision_recall_chart(curve: RankingCurve, counts: dict[str, int], ap: float, full_ppv: float, score: float,
                           repetitions: int, imbalance_ratio: int) -> dict:
    """The precision-recall curve of the whole test set, the PPV at 90% recall of that set marked.
    Its precision is the raw test set's, not the leaderboard's: the leaderboard's PPV is the
    median over bootstrap repetitions at the simulated prevalence."""
    from evaluation import charts
    from evaluation.metrics.classification import precision_recall_points

    recall, precision, thresholds = precision_recall_points(curve)
    line = charts.Curve("whole test set", recall.tolist(), precision.tolist(), thresholds.tolist(),
                        summary=f"AP {ap:.3f}")
    mark = charts.Marked(TARGET_RECALL, full_ppv, f"PPV at {TARGET_RECALL:.0%} recall, whole test set")
    prevalence = 100.0 / imbalance_ratio  # "1% prevalence": 1 neoplasia frame per 100 NDBE frames
    subtitle = [f"whole test set: {_test_set_counts(counts)}; PPV at 90% recall {full_ppv:.4f}",
                (f"leaderboard Score {score:.4f}: median PPV over {repetitions} bootstraps at "
                 f"{prevalence:.3g}% prevalence")]
    about = ("Precision-recall curve of every frame of the test set as it is (not resampled, so at the test set's "
             "own prevalence), neoplasia against NDBE by the submitted likelihood: one point per distinct "
             "likelihood, joined by straight lines as the PPV at 90% recall is interpolated. The red point is that "
             "PPV on this set. The leaderboard's PPV uses the bootstrapped 1% prevalence (imbalance_ratio NDBE "
             "frames per neoplasia frame, median over the repetitions), which lowers precision: it is not read "
             "off this curve.")
    return charts.precision_recall_chart([line], [mark], title="RARE26: precision-recall curve (whole test set)",
                                         subtitle=subtitle, line_title="curve (average precision)", about=about)


def report_roc_curve(curve: RankingCurve) -> dict:
    """The final ranking report's ROC curve of the whole test set, thinned to the chart's maximum."""
    from evaluation import charts
    from evaluation.metrics.classification import roc_points

    fpr, tpr, _ = roc_points(curve)
    return {"chart": "roc", "title": "ROC, whole test set", "x_title": "False positive rate",
            "y_title": "Sensitivity",
            "points": [[charts.rounded(fpr[i]), charts.rounded(tpr[i])] for i in charts.thinned(len(fpr))]}
