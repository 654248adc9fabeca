"""Vega-Lite 5.1.0 charts for the result page (docs/grand-challenge.md, "Charts").

A phase may declare an evaluation output of kind Chart; the evaluation writes a Vega-Lite spec at
/output/<its relative_path> and the platform draws it under the result. The functions here turn
curves and bars into such specs: plain dicts (inline `data.values`, titles, axis titles,
tooltips), nothing but the standard library, the same bytes for the same input. Curves are
thinned to at most MAX_POINTS points per line (first and last points kept, the rule stated in the
spec's description), numbers rounded for display; points a rule defines (operating points) are
drawn exactly, in a layer of their own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

# grand-challenge.org draws Chart outputs with vega 5.20.2, vega-lite 5.1.0 and vega-embed 6.17.0: every
# spec declares that Vega-Lite version and uses nothing newer (no xOffset, which came in 5.2).
VEGA_LITE_VERSION = "5.1.0"
VEGA_LITE_SCHEMA = f"https://vega.github.io/schema/vega-lite/v{VEGA_LITE_VERSION}.json"
MAX_POINTS = 500  # per line: smooth at any plot size, about 40 kB of JSON
DECIMALS = 4  # rates, sensitivities, scores
SIGNIFICANT = 4  # thresholds and unbounded values (FPs per slide)
SIZE = 400  # pixels, square plots
BAR_STEP = 50  # pixels per bar


def rounded(value: float, decimals: int = DECIMALS) -> float:
    """A finite number rounded for display (-0.0 written as 0.0)."""
    if not math.isfinite(value):
        raise ValueError(f"a chart value must be finite, got {value!r}")
    return round(float(value), decimals) + 0.0


def significant(value: float, digits: int = SIGNIFICANT) -> float:
    """A finite number to `digits` significant digits (for values without a fixed scale)."""
    if not math.isfinite(value):
        raise ValueError(f"a chart value must be finite, got {value!r}")
    return float(f"{float(value):.{digits}g}") + 0.0


def thinned(count: int, max_points: int = MAX_POINTS) -> list[int]:
    """The indices of the points drawn of a curve of `count` points: all of them up to
    `max_points`, else `max_points` evenly spaced by rank (gaps differing by at most one), the
    first and the last included."""
    if count <= max_points:
        return list(range(count))
    steps = max_points - 1
    return [(i * (count - 1) + steps // 2) // steps for i in range(max_points)]


def thinning_note(curves: Sequence[Curve], max_points: int = MAX_POINTS) -> str:
    thinned_ones = [f"{c.name} ({len(c.x)} points)" for c in curves if len(c.x) > max_points]
    rule = (f"A curve of more than {max_points} points is drawn with {max_points} of them, evenly spaced by rank, "
            f"its first and last points included")
    return f"{rule}; thinned here: {', '.join(thinned_ones)}." if thinned_ones else f"{rule}; none is thinned here."


@dataclass(frozen=True)
class Curve:
    """One line: its name (legend), points in drawing order, optional per-point threshold, and
    a summary shown in the legend (e.g. its AUC)."""

    name: str
    x: Sequence[float]
    y: Sequence[float]
    threshold: Sequence[float] | None = None
    summary: str = ""
    extra: dict = field(default_factory=dict)  # per-line fields for the tooltip (e.g. {"auc": 0.91})

    def __post_init__(self):
        if len(self.x) != len(self.y) or (self.threshold is not None and len(self.threshold) != len(self.x)):
            raise ValueError(f"curve {self.name}: x, y and threshold must have the same length")
        if not len(self.x):
            raise ValueError(f"curve {self.name} has no point")

    @property
    def label(self) -> str:
        return f"{self.name} ({self.summary})" if self.summary else self.name


def _points(curves: Sequence[Curve], x_name: str, y_name: str, round_x, round_y) -> list[dict]:
    values = []
    for curve in curves:
        for order, i in enumerate(thinned(len(curve.x))):
            point = {"line": curve.name, "order": order, x_name: round_x(curve.x[i]), y_name: round_y(curve.y[i])}
            if curve.threshold is not None and math.isfinite(curve.threshold[i]):  # the start point has none
                point["threshold"] = significant(curve.threshold[i])
            values.append(point)
    return values


def _lines_layer(curves: Sequence[Curve], x: dict, y: dict, line_title: str, x_name: str, y_name: str) -> dict:
    """Lines drawn in the order of their points (not sorted by x: a ROC curve climbs vertically),
    coloured by line, the legend showing each line's label (name and summary)."""
    tooltip = [{"field": "label", "type": "nominal", "title": line_title},
               {"field": x_name, "type": "quantitative", "title": x["title"]},
               {"field": y_name, "type": "quantitative", "title": y["title"]}]
    if any(c.threshold is not None for c in curves):
        tooltip.append({"field": "threshold", "type": "quantitative", "title": "threshold"})
    extra_fields = sorted({key for c in curves for key in c.extra})
    tooltip += [{"field": key, "type": "quantitative", "title": key} for key in extra_fields]
    labels = [{"line": c.name, "label": c.label, **{k: c.extra[k] for k in extra_fields if k in c.extra}}
              for c in curves]
    return {
        "transform": [{"lookup": "line", "from": {"data": {"values": labels}, "key": "line",
                                                  "fields": ["label", *extra_fields]}}],
        "mark": {"type": "line", "interpolate": "linear", "strokeWidth": 2},
        "encoding": {
            "x": {"field": x_name, "type": "quantitative", **x},
            "y": {"field": y_name, "type": "quantitative", **y},
            "color": {"field": "label", "type": "nominal", "title": line_title,
                      "sort": [c.label for c in curves]},
            "order": {"field": "order", "type": "quantitative"},
            "tooltip": tooltip,
        },
    }


def _header(title: str, subtitle: str | Sequence[str], description: str) -> dict:
    heading: dict = {"text": title}
    if subtitle:
        heading["subtitle"] = subtitle
    return {"$schema": VEGA_LITE_SCHEMA, "description": description, "title": heading,
            "width": SIZE, "height": SIZE}


def roc_chart(curves: Sequence[Curve], *, title: str, subtitle: str | Sequence[str] = "", line_title: str = "curve",
              about: str = "") -> dict:
    """ROC curves (false positive rate -> true positive rate), one line each, with the chance
    diagonal."""
    x = {"title": "False positive rate (1 - specificity)", "scale": {"domain": [0, 1]}}
    y = {"title": "True positive rate (sensitivity)", "scale": {"domain": [0, 1]}}
    description = " ".join(part for part in (about, "Dashed: chance.", thinning_note(curves),
                                             f"Rates rounded to {DECIMALS} decimals.") if part)
    return {
        **_header(title, subtitle, description),
        "data": {"values": _points(curves, "fpr", "tpr", rounded, rounded)},
        "layer": [
            {"data": {"values": [{"fpr": 0, "tpr": 0}, {"fpr": 1, "tpr": 1}]},
             "mark": {"type": "line", "strokeDash": [4, 4], "color": "#999999"},
             "encoding": {"x": {"field": "fpr", "type": "quantitative"},
                          "y": {"field": "tpr", "type": "quantitative"}}},
            _lines_layer(curves, x, y, line_title, "fpr", "tpr"),
        ],
    }


@dataclass(frozen=True)
class Marked:
    """A point drawn exactly on top of the curve (an operating point of the rules)."""

    x: float
    y: float
    label: str


def _marks_layer(marks: Sequence[Marked], x_name: str, y_name: str, x: dict, y: dict, what: str,
                 round_x, round_y) -> list[dict]:
    values = [{"mark": m.label, x_name: round_x(m.x), y_name: round_y(m.y)} for m in marks]
    encoding = {"x": {"field": x_name, "type": "quantitative"}, "y": {"field": y_name, "type": "quantitative"}}
    tooltip = [{"field": "mark", "type": "nominal", "title": what},
               {"field": x_name, "type": "quantitative", "title": x["title"]},
               {"field": y_name, "type": "quantitative", "title": y["title"]}]
    return [
        {"data": {"values": values}, "mark": {"type": "point", "filled": True, "size": 70, "color": "#d62728"},
         "encoding": {**encoding, "tooltip": tooltip}},
        {"data": {"values": values}, "mark": {"type": "text", "dy": -10, "fontSize": 10, "color": "#d62728"},
         "encoding": {**encoding, "text": {"field": y_name, "type": "quantitative", "format": ".3f"}}},
    ]


def froc_chart(curve: Curve, marks: Sequence[Marked], *, title: str, subtitle: str | Sequence[str] = "",
               about: str = "") -> dict:
    """A FROC curve (average false positives per slide, log axis -> sensitivity) with the rule's
    operating points marked exactly. A log axis cannot show 0 false positives: those points of
    the curve are left out, and the description says how many (a submission without any false
    positive leaves only the operating points)."""
    drawn = [i for i in range(len(curve.x)) if curve.x[i] > 0]
    if not drawn and not marks:
        raise ValueError("a FROC chart needs a point with false positives or an operating point")
    lines = [Curve(curve.name, [curve.x[i] for i in drawn], [curve.y[i] for i in drawn],
                   None if curve.threshold is None else [curve.threshold[i] for i in drawn], curve.summary,
                   curve.extra)] if drawn else []
    every_x = [*(curve.x[i] for i in drawn), *(m.x for m in marks)]
    x = {"title": "Average false positives per slide (log scale)",
         "scale": {"type": "log", "domain": [significant(min(every_x)), significant(max(every_x))], "nice": False}}
    y = {"title": "Sensitivity (lesions detected)", "scale": {"domain": [0, 1]}}
    left_out = len(curve.x) - len(drawn)
    description = " ".join(part for part in (
        about, f"Red points: the sensitivity at {', '.join(m.label for m in marks)}, exact." if marks else "",
        f"{left_out} point(s) with no false positive are left out (a log axis cannot show 0)." if left_out else "",
        thinning_note(lines) if lines else "",
        f"False positives per slide rounded to {SIGNIFICANT} significant digits, sensitivities to {DECIMALS} "
        f"decimals.") if part)
    return {
        **_header(title, subtitle, description),
        "data": {"values": _points(lines, "fp_per_slide", "sensitivity", significant, rounded)},
        "layer": [*([_lines_layer(lines, x, y, "curve", "fp_per_slide", "sensitivity")] if lines else []),
                  *_marks_layer(marks, "fp_per_slide", "sensitivity", x, y, "operating point", significant, rounded)],
    }


def precision_recall_chart(curves: Sequence[Curve], marks: Sequence[Marked] = (), *, title: str,
                           subtitle: str | Sequence[str] = "", line_title: str = "curve", about: str = "") -> dict:
    """Precision-recall curves (recall -> precision), with optional exact operating points."""
    x = {"title": "Recall (sensitivity)", "scale": {"domain": [0, 1]}}
    y = {"title": "Precision (PPV)", "scale": {"domain": [0, 1]}}
    description = " ".join(part for part in (about, thinning_note(curves),
                                             f"Values rounded to {DECIMALS} decimals.") if part)
    return {
        **_header(title, subtitle, description),
        "data": {"values": _points(curves, "recall", "precision", rounded, rounded)},
        "layer": [_lines_layer(curves, x, y, line_title, "recall", "precision"),
                  *_marks_layer(marks, "recall", "precision", x, y, "operating point", rounded, rounded)],
    }


@dataclass(frozen=True)
class Bar:
    group: str  # along the x axis (a structure)
    metric: str  # bars side by side within a group, coloured (one metric: one bar per group)
    value: float
    detail: str = ""  # how the value is computed, in the tooltip


def bar_chart(bars: Sequence[Bar], *, title: str, y_title: str, x_title: str, subtitle: str | Sequence[str] = "",
              about: str = "", y_domain: tuple[float, float] | None = (0, 1)) -> dict:
    """Grouped bars: one group per `group` (in the order given), one bar per metric within it.
    Several metrics: one column of the chart per group (a facet), its bars side by side, which
    Vega-Lite 5.1 draws (the xOffset encoding came in 5.2, and 5.1 drops it: bars would stack)."""
    groups = list(dict.fromkeys(b.group for b in bars))
    metrics = list(dict.fromkeys(b.metric for b in bars))
    values = [{"group": b.group, "metric": b.metric, "value": rounded(b.value)} for b in bars]
    for value, bar in zip(values, bars, strict=True):
        if bar.detail:
            value["detail"] = bar.detail
    y: dict = {"field": "value", "type": "quantitative", "title": y_title}
    if y_domain is not None:
        y["scale"] = {"domain": list(y_domain)}
    tooltip = [{"field": "group", "type": "nominal", "title": x_title},
               {"field": "metric", "type": "nominal", "title": "metric"},
               {"field": "value", "type": "quantitative", "title": y_title, "format": ".4f"}]
    if any(bar.detail for bar in bars):
        tooltip.append({"field": "detail", "type": "nominal", "title": "computed as"})
    description = " ".join(part for part in (about, f"Values rounded to {DECIMALS} decimals.") if part)
    text_mark = {"type": "text", "dy": -6, "fontSize": 10}
    if len(metrics) == 1:
        x = {"field": "group", "type": "nominal", "title": x_title, "sort": groups,
             "axis": {"labelAngle": 0}}
        return {
            **_header(title, subtitle, description),
            "width": max(SIZE, BAR_STEP * len(bars)),
            "data": {"values": values},
            "layer": [
                {"mark": {"type": "bar"}, "encoding": {"x": x, "y": y, "tooltip": tooltip}},
                {"mark": text_mark,
                 "encoding": {"x": x, "y": y, "text": {"field": "value", "type": "quantitative", "format": ".3f"}}},
            ],
        }
    x = {"field": "metric", "type": "nominal", "sort": metrics, "axis": None}
    colour = {"field": "metric", "type": "nominal", "title": "metric", "sort": metrics}
    heading = _header(title, subtitle, description)
    del heading["width"], heading["height"]
    return {
        **heading,
        "data": {"values": values},
        "facet": {"column": {"field": "group", "type": "nominal", "sort": groups, "title": x_title,
                             "header": {"labelOrient": "bottom", "titleOrient": "bottom",
                                        "labelLimit": BAR_STEP * len(metrics)}}},
        "spacing": 8,
        "spec": {
            "width": {"step": BAR_STEP}, "height": SIZE,
            "layer": [
                {"mark": {"type": "bar"}, "encoding": {"x": x, "y": y, "color": colour, "tooltip": tooltip}},
                {"mark": text_mark,
                 "encoding": {"x": x, "y": y, "text": {"field": "value", "type": "quantitative", "format": ".3f"}}},
            ],
        },
    }
