"""A chart on the result page, declared by a challenge (its `result_charts`): the setting naming
the chart's file and the function drawing it (evaluation/run.py's draw_charts). The framework
checks each against the challenge's settings when the class is made, so a misspelt setting is a
TypeError at import rather than a chart silently never drawn (docs/grand-challenge.md, "Charts")."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Chart:
    """`setting`: the settings field (declared with output_file=True, default "") whose value names
    the chart's file; the chart is drawn only when it names one. `build`: (evaluation, results,
    metrics) -> the chart's Vega-Lite spec, e.g. a method of the class listed after its definition."""

    setting: str
    build: Callable[[Any, dict[str, Any], dict[str, Any]], dict]


def check_charts(owner: str, charts: tuple[Chart, ...], settings_class: type) -> None:
    """TypeError unless each chart names a distinct output-file field of `settings_class` and
    has a callable builder."""
    fields = {field.name: field for field in dataclasses.fields(settings_class)}
    seen: set[str] = set()
    for chart in charts:
        if not isinstance(chart, Chart):
            raise TypeError(f"{owner}.result_charts holds {chart!r}, not a Chart(setting=..., build=...)")
        field = fields.get(chart.setting)
        if field is None:
            raise TypeError(f"{owner}: the chart setting {chart.setting!r} is not a field of "
                            f"{settings_class.__name__}")
        if not field.metadata.get("output_file"):
            raise TypeError(f"{owner}: the chart setting {chart.setting!r} is not declared with output_file=True")
        if field.default != "":
            raise TypeError(f"{owner}: the chart setting {chart.setting!r} must default to \"\" (no chart "
                            f"unless a phase asks for it)")
        if not callable(chart.build):
            raise TypeError(f"{owner}: the chart {chart.setting!r} has no callable builder")
        if chart.setting in seen:
            raise TypeError(f"{owner}: the chart setting {chart.setting!r} is declared twice")
        seen.add(chart.setting)
