"""CAMELYON16 charts: the lesion-level FROC curve and the slide-level ROC curve, as Vega-Lite
charts of a result page and as curves of the final ranking's report."""

from __future__ import annotations

from typing import Any

import numpy as np

from evaluation.metrics.classification import roc_curve
from evaluation.metrics.froc import FrocCurve


def _fp_rate_label(target: float) -> str:
    """0.25 -> '1/4 FP per slide', 2.0 -> '2 FPs per slide'."""
    text = f"1/{round(1 / target)}" if target < 1 else f"{target:g}"
    return f"{text} FP{'s' if target > 1 else ''} per slide"


def lesion_froc_chart(curve: FrocCurve, aggregates: dict[str, Any], marked: list[tuple[float, float]],
                      rule: str) -> dict:
    """The FROC curve of metrics.json's froc_score (FP rates increasing), the sensitivity at each
    of the six official FP rates marked exactly: `marked`, (FP rate, metrics.json's
    froc_sensitivity_at_* value) pairs."""
    from evaluation import charts

    thresholds = [float("inf"), *curve.thresholds[::-1].tolist()]  # the (0, 0) end point has no threshold
    line = charts.Curve("lesion FROC", curve.fp_rates[::-1].tolist(), curve.sensitivities[::-1].tolist(), thresholds)
    marks = [charts.Marked(target, float(value), _fp_rate_label(target)) for target, value in marked]
    subtitle = (f"FROC score {aggregates['froc_score']:.4f} (mean sensitivity at 1/4, 1/2, 1, 2, 4 and 8 FPs per "
                f"slide); {aggregates['lesions_total']} lesions on {aggregates['slides_in_lesion_evaluation']} slides")
    about = (f"Lesion-level FROC: sensitivity (lesions hit, ITC excluded) against the average number of false "
             f"positives per slide, one point per detection threshold ({rule} threshold rule); the red points are "
             f"the six operating points whose mean is the FROC score, interpolated on the curve as the 2016 script "
             f"does.")
    return charts.froc_chart(line, marks, title="CAMELYON16: lesion-level FROC curve", subtitle=subtitle, about=about)


def slide_roc_chart(is_tumor: np.ndarray, probabilities: np.ndarray, aggregates: dict[str, Any]) -> dict:
    """The slide-level ROC curve (tumor against normal slides, by the submitted probability)."""
    from evaluation import charts

    fpr, tpr, thresholds = roc_curve(is_tumor, probabilities)
    auc = aggregates["slide_auc"]
    line = charts.Curve("slides", fpr.tolist(), tpr.tolist(), thresholds.tolist(), summary=f"AUC {auc:.3f}")
    subtitle = (f"slide AUC {auc:.4f}: {aggregates['tumor_slides']} tumor and {aggregates['normal_slides']} normal "
                f"slides")
    about = ("Slide-level ROC curve: tumor slides against normal slides, ranked by the submitted metastasis "
             "probability; the points of scikit-learn's roc_curve (collinear points dropped).")
    return charts.roc_chart([line], title="CAMELYON16: slide-level ROC curve", subtitle=subtitle,
                            line_title="curve (AUC)", about=about)


def ranking_curves(fp_rates: list[float], sensitivities: list[float], is_tumor: np.ndarray,
                   probabilities: np.ndarray) -> list[dict]:
    """The final ranking report's curves: the lesion-level FROC curve (as metrics.json's
    froc_curve: FP rates increasing, at most 500 points) and the slide-level ROC curve
    (scikit-learn's roc_curve points, thinned as the charts thin them)."""
    from evaluation import charts

    fpr, tpr, _ = roc_curve(is_tumor, probabilities)
    kept = charts.thinned(len(fpr))
    return [
        {"chart": "froc", "title": "Lesion-level FROC", "x_title": "Average false positives per slide",
         "y_title": "Sensitivity", "points": [[x, y] for x, y in zip(fp_rates, sensitivities, strict=True)]},
        {"chart": "slide_roc", "title": "Slide-level ROC (tumor vs normal)", "x_title": "False positive rate",
         "y_title": "Sensitivity", "points": [[float(fpr[i]), float(tpr[i])] for i in kept]},
    ]
