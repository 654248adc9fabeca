"""CSV 2026's chart (only when the structure_chart_file setting names a file)."""

from __future__ import annotations

from .truth import PAIRS, VIEW_NAMES


def structure_bar_chart(means: dict[tuple[str, str], tuple[float, float]], score_seg: float, cases: int,
                        tolerance: float) -> dict:
    """Mean DSC and NSD of each view and structure ({(view, structure): (DSC, NSD)}: the
    aggregates.<view>_<structure>_dsc/_nsd values of metrics.json), as bars."""
    from evaluation import charts

    nsd = f"NSD ({tolerance:g} px)"
    bars = [charts.Bar(f"{VIEW_NAMES[view]} {structure}", metric, means[view, structure][index])
            for view, structure in PAIRS for index, metric in enumerate(("Dice", nsd))]
    subtitle = (f"segmentation score {score_seg:.2f} (per view 0.4 vessel + 0.6 plaque of "
                f"(Dice + NSD) / 2); {cases} cases")
    about = ("Mean over the cases of the Dice similarity coefficient and of the normalised surface Dice of each "
             "view and structure: the aggregates.<view>_<structure>_dsc and _nsd values of metrics.json.")
    return charts.bar_chart(bars, title="CSV 2026: segmentation per view and structure", subtitle=subtitle,
                            x_title="view and structure", y_title="mean over cases", about=about)
