"""The report of a final ranking (python -m evaluation.leaderboard): `report.html` and `charts/`.

`write_report(output_dir, ranking, curves)` reads the ranking.json document and the challenge's
curves per submission, and writes:

- `charts/<name>.vl.json`: one Vega-Lite 5.1.0 spec per chart, made with Altair (data inline as
  `values`, never a URL), written with sorted keys so the bytes only depend on the input;
- `report.html`: one self-contained page (inline CSS, the charts inline as SVG rendered offline by
  vl-convert from those same specs; no script, no external file, nothing fetched): the challenge,
  per leaderboard its rule and ranking table (with the statistics when there are some), the
  excluded submissions with their exit code and message, the notes, then the charts.

Chart names (every character of a leaderboard name, a value path or a curve name outside
[A-Za-z0-9_] becomes "_", so "aggregates.c_index" gives "aggregates_c_index"):

- `forest-<leaderboard>-<path>`: per leaderboard and ranked value path, the value of every ranked
  submission (rank order, top to bottom) with its 95% bootstrap interval (`value_ci`) when the
  statistics are computed; without statistics the values alone. Left out when no value is a number.
- `stability-<leaderboard>`: rank stability, challengeR's blob plot: the submissions in final rank
  order along x, the ranks 1..n along y, a circle of area proportional to the share of resamples
  giving the submission that rank (`rank_distribution` of its statistics), its final rank marked by
  a red dash and its rank interval (`rank_ci`) by a vertical line. Only with statistics holding
  `rank_distribution`.
- `pairwise-<leaderboard>`: the pairwise significance map: row a, column b (rank order), coloured
  by `p_better` (the share of resamples ranking a above b, ties counting half), "*" where the
  one-sided test says a is significantly better than b. Only with statistics and two or more
  ranked submissions.
- `curve-<chart>`: per curve name of the challenge (e.g. `curve-roc_mel`), one line per submission.

Many submissions: the forest, stability and pairwise charts draw the top MAX_CHARTED (50) in final
rank order, the curve charts the top MAX_CURVES (10), each saying so in its subtitle; the tables
hold every one. The work and memory of the charts stay bounded whatever the number of teams.

The specs are Vega-Lite 5.1.0 (what grand-challenge.org draws with); the page's SVG is drawn by
vl-convert with its oldest Vega-Lite, VL_CONVERT_VERSION. Subtitles are anchored left and wrapped,
names on axes and legends cut at LABEL_LIMIT, and every chart has PADDING around it: the page keeps
vl-convert's layout, and a viewer's font may be wider than the one it measured with.

The page's SVG is vl-convert's, its element ids renamed after the chart (clip paths would
otherwise clash between charts, and vl-convert numbers them by a per-process counter). vl-convert
measures text with the fonts found on the machine: the same input gives the same bytes on the
same installation.

Numbers drawn are rounded to 6 significant digits (ranking.json keeps them exact); the page's
tables show 4 decimals, the exact value in each cell's tooltip.

Altair and vl-convert (requirements-leaderboard.txt) are imported here only: the evaluation image
has neither.
"""

from __future__ import annotations

import errno
import html
import json
import math
import re
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from evaluation.machine import require_free_files

PLOTTED_DIGITS = 6  # significant digits of a number drawn in a chart
ROW_STEP = 20  # pixels per submission along a nominal axis
WIDTH = 400  # pixels, continuous axes
BLOB_STEP = 28  # pixels per submission and per rank in the blob plot
MAX_BLOB_AREA = 400  # pixels^2: the circle of a share of 1 (fits a BLOB_STEP cell)
MAX_LABELLED_CELLS = 10  # the pairwise map writes p_better in its cells up to this many submissions
MAX_CHARTED = 50  # forest, stability and pairwise charts: the top 50 submissions (the tables hold all)
MAX_CURVES = 10  # curve charts: one line for each of the top 10 (ten distinct colours)
LABEL_LIMIT = 150  # pixels: a submission's name on an axis or in a legend, cut with an ellipsis beyond
SUBTITLE_CHARACTERS = 60  # a subtitle line: about 360 px in the widest sans-serif fonts, within WIDTH
# Room around each chart for a viewer's font wider than the one vl-convert measured text with
# (the page's SVG keeps vl-convert's layout): up to ~15% on the names and labels at the edges.
PADDING = {"left": 25, "right": 25, "top": 5, "bottom": 25}
INTERVAL = "95% bootstrap percentile interval"
FINAL_RANK_COLOUR = "#d62728"
BLOB_COLOUR = "#4c78a8"

STYLE = """body{font-family:sans-serif;margin:1em;color:#111;max-width:90em}
div.table{overflow-x:auto;margin:0.5em 0 1em}
table{border-collapse:collapse;font-size:0.9em}
th,td{border:1px solid #bbb;padding:0.2em 0.4em;text-align:right}
th{background:#eee;font-weight:normal;max-width:9em}td{white-space:nowrap}
td.name,th.name{text-align:left}td.message{white-space:normal;overflow-wrap:anywhere;min-width:12em}
.rule{font-style:italic}
figure{margin:1em 0}figcaption{font-size:0.85em;color:#555}
svg{max-width:100%;height:auto}"""


# --- numbers ---------------------------------------------------------------------------------

def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _plotted(value: Any) -> float | None:
    """A number drawn in a chart (6 significant digits), or None when it is not a finite number."""
    return float(f"{value:.{PLOTTED_DIGITS}g}") + 0.0 if _is_number(value) else None


def _interval(pair: Any) -> tuple[float, float] | None:
    if isinstance(pair, (list, tuple)) and len(pair) == 2:
        lo, hi = map(_plotted, pair)
        if lo is not None and hi is not None:
            return lo, hi
    return None


def _value_text(value: Any) -> str:
    """A ranked value in the table: 4 decimals (4 significant digits when very small or large)."""
    if not _is_number(value):
        return "n/a" if value is None or isinstance(value, float) else str(value)
    if isinstance(value, int):
        return str(value)
    return f"{value:.4f}" if value == 0 or 1e-3 <= abs(value) < 1e5 else f"{value:.4g}"


def _rank_text(value: Any) -> str:
    """A rank or a count of ranks (2, 2.5): as short as exact."""
    return f"{value:g}" if _is_number(value) else "n/a"


def _interval_text(pair: Any, shown=_value_text) -> str:
    if isinstance(pair, (list, tuple)) and len(pair) == 2 and any(map(_is_number, pair)):
        return f"[{shown(pair[0])}, {shown(pair[1])}]"
    return "n/a"


# --- names -----------------------------------------------------------------------------------

def _name_part(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", str(text))


def _value_paths(entries: list[dict]) -> list[str]:
    """Every ranked value path of a leaderboard, in the order the entries give them."""
    return list(dict.fromkeys(path for entry in entries for path in entry.get("values", {})))


def _partial_rank_names(entries: list[dict]) -> list[str]:
    return list(dict.fromkeys(name for entry in entries for name in entry.get("partial_ranks") or {}))


def _leaderboard_statistics(ranking: dict, name: str) -> dict | None:
    statistics = ranking.get("statistics")
    if not statistics:
        return None
    return (statistics.get("leaderboards") or {}).get(name)


def _submission_statistics(board_statistics: dict | None, submission: str) -> dict:
    found = (board_statistics or {}).get(submission)
    return found if isinstance(found, dict) else {}


# --- charts ----------------------------------------------------------------------------------

def _title(text: str, subtitle: Iterable[str]):
    """A chart's title, anchored at the left edge, its subtitle wrapped to lines that fit the
    chart (a centred line wider than the chart runs out of it on both sides)."""
    import altair as alt

    lines = [line for part in subtitle for line in textwrap.wrap(part, SUBTITLE_CHARACTERS)]
    title = textwrap.wrap(text, SUBTITLE_CHARACTERS - 15) or [""]
    return alt.Title(title if len(title) > 1 else title[0], subtitle=lines, anchor="start")


def _top_note(shown: int, total: int) -> list[str]:
    """The subtitle line of a chart drawing only the top `shown` of `total` ranked submissions."""
    if shown >= total:
        return []
    return [f"the top {shown} of the {total} ranked submissions (the tables and ranking.json hold every one)"]


def _column_title(path: str, titles: dict[str, str]) -> str:
    """A ranked value's title: the leaderboard column's, else its metrics.json path."""
    return titles.get(path) or path


def _forest_chart(board: dict, path: str, board_statistics: dict | None, resamples: Any, titles: dict[str, str]):
    import altair as alt

    entries = board["entries"][:MAX_CHARTED]
    order = [entry["submission"] for entry in entries]
    points, intervals = [], []
    for entry in entries:
        value = _plotted(entry.get("values", {}).get(path))
        if value is not None:
            points.append({"submission": entry["submission"], "rank": entry["rank"], "value": value})
        ci = _interval(_submission_statistics(board_statistics, entry["submission"]).get("value_ci", {}).get(path))
        if ci is not None:
            intervals.append({"submission": entry["submission"], "lo": ci[0], "hi": ci[1]})
    if not points:
        return None
    title = _column_title(path, titles)
    # No y-axis title: a vertical one is longer than a few rows and would run over the names.
    y = alt.Y(field="submission", type="nominal", sort=order, title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT))
    x_scale = alt.Scale(zero=False)
    x_axis = alt.Axis(titleLimit=WIDTH - 20)
    layers = []
    if intervals:
        layers.append(alt.Chart(alt.Data(values=intervals)).mark_rule(strokeWidth=2, color="#888888").encode(
            y=y, x=alt.X(field="lo", type="quantitative", scale=x_scale, title=title, axis=x_axis),
            x2=alt.X2(field="hi"),
            tooltip=[alt.Tooltip(field="submission", type="nominal"),
                     alt.Tooltip(field="lo", type="quantitative", title="95% interval, low"),
                     alt.Tooltip(field="hi", type="quantitative", title="95% interval, high")]))
    layers.append(alt.Chart(alt.Data(values=points)).mark_point(filled=True, size=60, color="#1f77b4").encode(
        y=y, x=alt.X(field="value", type="quantitative", scale=x_scale, title=title, axis=x_axis),
        tooltip=[alt.Tooltip(field="rank", type="quantitative"), alt.Tooltip(field="submission", type="nominal"),
                 alt.Tooltip(field="value", type="quantitative", title=title)]))
    subtitle = [f"point: the value; line: its {INTERVAL} ({resamples} resamples)" if intervals
                else "the value of each submission (no statistics: no interval)",
                "submissions in final rank order, top to bottom", *_top_note(len(entries), len(board["entries"]))]
    return alt.layer(*layers).properties(
        title=_title(f"{title}, leaderboard {board['name']}", subtitle), width=WIDTH, height=alt.Step(ROW_STEP))


def _stability_chart(board: dict, board_statistics: dict | None, resamples: Any):
    import altair as alt

    entries = board["entries"][:MAX_CHARTED]
    order = [entry["submission"] for entry in entries]
    blobs, finals, intervals = [], [], []
    for entry in entries:
        statistics = _submission_statistics(board_statistics, entry["submission"])
        shares = statistics.get("rank_distribution")
        if not isinstance(shares, list):
            continue
        # challengeR's blob plot: one circle per rank ever taken, area proportional to its share.
        blobs += [{"submission": entry["submission"], "rank": rank, "share": _plotted(share)}
                  for rank, share in enumerate(shares, start=1) if _is_number(share) and share > 0]
        finals.append({"submission": entry["submission"], "rank": entry["rank"]})
        ci = _interval(statistics.get("rank_ci"))
        if ci is not None:
            intervals.append({"submission": entry["submission"], "lo": ci[0], "hi": ci[1]})
    if not blobs:
        return None
    # The ranks the charted submissions take (all of them when every submission is charted).
    ranks = max(len(entries), max(blob["rank"] for blob in blobs), max(final["rank"] for final in finals))
    x = alt.X(field="submission", type="nominal", sort=order, title="submission (final rank order)",
              axis=alt.Axis(labelAngle=-45, labelLimit=LABEL_LIMIT))
    y_scale = alt.Scale(domain=[0.5, ranks + 0.5], reverse=True, nice=False, zero=False)
    y_axis = alt.Axis(values=list(range(1, ranks + 1)), format="d")
    layers = []
    if intervals:
        layers.append(alt.Chart(alt.Data(values=intervals)).mark_rule(color="#555555").encode(
            x=x, y=alt.Y(field="lo", type="quantitative", scale=y_scale, axis=y_axis, title="rank"),
            y2=alt.Y2(field="hi")))
    layers.append(alt.Chart(alt.Data(values=blobs)).mark_circle(color=BLOB_COLOUR, opacity=0.8).encode(
        x=x, y=alt.Y(field="rank", type="quantitative", scale=y_scale, axis=y_axis, title="rank"),
        size=alt.Size(field="share", type="quantitative", title="share of resamples",
                      scale=alt.Scale(domain=[0, 1], range=[0, MAX_BLOB_AREA])),
        tooltip=[alt.Tooltip(field="submission", type="nominal"), alt.Tooltip(field="rank", type="quantitative"),
                 alt.Tooltip(field="share", type="quantitative", title="share of resamples")]))
    layers.append(alt.Chart(alt.Data(values=finals)).mark_tick(color=FINAL_RANK_COLOUR, thickness=2).encode(
        x=x, y=alt.Y(field="rank", type="quantitative", scale=y_scale, axis=y_axis, title="rank"),
        tooltip=[alt.Tooltip(field="submission", type="nominal"),
                 alt.Tooltip(field="rank", type="quantitative", title="final rank")]))
    subtitle = [f"circle area: share of the {resamples} resamples giving the submission that rank",
                "red dash: final rank" + ("; vertical line: 95% interval of the rank" if intervals else ""),
                *_top_note(len(entries), len(board["entries"]))]
    return alt.layer(*layers).properties(
        title=_title(f"Rank stability, leaderboard {board['name']}", subtitle),
        width=max(WIDTH, BLOB_STEP * len(entries)), height=BLOB_STEP * ranks)  # at least its subtitle's width


def _pairwise_chart(board: dict, board_statistics: dict | None, resamples: Any):
    import altair as alt

    pairwise = (board_statistics or {}).get("pairwise") or {}
    compared = [entry["submission"] for entry in board["entries"] if entry["submission"] in pairwise]
    order = compared[:MAX_CHARTED]  # the cells grow with the square of the submissions
    labelled = len(order) <= MAX_LABELLED_CELLS
    cells = []
    for a in order:
        for b in order:
            pair = pairwise[a].get(b) if isinstance(pairwise[a], dict) else None
            if a == b or not isinstance(pair, dict) or _plotted(pair.get("p_better")) is None:
                continue
            p_better, significant = _plotted(pair["p_better"]), pair.get("significant")
            mark = "*" if significant is True else ""
            cells.append({"a": a, "b": b, "p_better": p_better,
                          "significant": {True: "yes", False: "no"}.get(significant, "not tested"),
                          "label": f"{p_better:.2f}{' ' + mark if mark else ''}" if labelled else mark})
    if len(order) < 2 or not cells:
        return None
    x = alt.X(field="b", type="nominal", sort=order, title="b (column)",
              axis=alt.Axis(labelAngle=-45, labelLimit=LABEL_LIMIT))
    y = alt.Y(field="a", type="nominal", sort=order, title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT))
    base = alt.Chart(alt.Data(values=cells))
    tooltip = [alt.Tooltip(field="a", type="nominal"), alt.Tooltip(field="b", type="nominal"),
               alt.Tooltip(field="p_better", type="quantitative", title="P(a ranks above b)"),
               alt.Tooltip(field="significant", type="nominal", title="a significantly better")]
    cell = base.mark_rect().encode(
        x=x, y=y, tooltip=tooltip,
        color=alt.Color(field="p_better", type="quantitative", title="P(a above b)",
                        scale=alt.Scale(domain=[0, 1], scheme="redblue")))
    # Dark cells (far from 0.5) get white text.
    text = base.mark_text(fontSize=10).encode(
        x=x, y=y, text=alt.Text(field="label", type="nominal"),
        color=alt.condition("datum.p_better > 0.75 || datum.p_better < 0.25", alt.value("white"), alt.value("black")))
    subtitle = [f"colour: share of the {resamples} resamples ranking a (row) above b (column), ties counting half",
                "*: a significantly better than b (one-sided paired bootstrap, Holm-adjusted over adjacent ranks)",
                "rows and columns in final rank order", *_top_note(len(order), len(compared))]
    return alt.layer(cell, text).properties(
        title=_title(f"Pairwise comparison, leaderboard {board['name']}", subtitle),
        width=max(WIDTH, ROW_STEP * (2 if labelled else 1) * len(order)), height=alt.Step(ROW_STEP))


def _curve_submissions(ranking: dict, curves: dict[str, list[dict]]) -> list[str]:
    """Submissions with curves: in the first leaderboard's rank order, then any other by name."""
    boards = ranking.get("leaderboards") or []
    ranked = [entry["submission"] for entry in (boards[0]["entries"] if boards else [])]
    return [name for name in ranked if name in curves] + sorted(set(curves) - set(ranked))


def _curve_chart(chart: str, submissions: list[str], curves: dict[str, list[dict]]):
    import altair as alt

    having = [name for name in submissions if any(curve.get("chart") == chart for curve in curves[name])]
    described, points = None, []
    for submission in having[:MAX_CURVES]:
        for curve in curves[submission]:
            if curve.get("chart") != chart:
                continue
            described = described or curve
            drawn = [(_plotted(x), _plotted(y)) for x, y in curve.get("points", [])]
            points += [{"submission": submission, "order": order, "x": x, "y": y}
                       for order, (x, y) in enumerate((x, y) for x, y in drawn if x is not None and y is not None)]
    if not points:
        return None
    shown = [name for name in submissions if any(p["submission"] == name for p in points)]
    x_title, y_title = described.get("x_title", "x"), described.get("y_title", "y")
    subtitle = ["one line per submission",
                *([f"the top {MAX_CURVES} of the {len(having)} submissions with this curve"]
                  if len(having) > MAX_CURVES else [])]
    # Lines follow their points' order (a ROC curve climbs vertically), one colour per submission;
    # the legend under the plot, where the names have the plot's width.
    return alt.Chart(alt.Data(values=points)).mark_line(strokeWidth=1.5).encode(
        x=alt.X(field="x", type="quantitative", title=x_title),
        y=alt.Y(field="y", type="quantitative", title=y_title),
        color=alt.Color(field="submission", type="nominal", sort=shown, title="submission",
                        legend=alt.Legend(orient="bottom", direction="vertical", columns=2, labelLimit=LABEL_LIMIT,
                                          titleLimit=WIDTH)),
        order=alt.Order(field="order", type="quantitative"),
        tooltip=[alt.Tooltip(field="submission", type="nominal"),
                 alt.Tooltip(field="x", type="quantitative", title=x_title),
                 alt.Tooltip(field="y", type="quantitative", title=y_title)],
    ).properties(title=_title(described.get("title", chart), subtitle), width=WIDTH, height=WIDTH)


def _spec(chart) -> dict:
    """The chart as a Vega-Lite 5.1.0 spec, as the platform draws it (evaluation/charts.py)."""
    from evaluation.charts import VEGA_LITE_SCHEMA

    # Not validated here (Altair's validation of large inline curves took most of the report's
    # time); tests/test_leaderboard_report.py validates every kind of chart against the schema.
    spec = chart.to_dict(validate=False)
    spec["$schema"] = VEGA_LITE_SCHEMA
    spec["padding"] = dict(PADDING)
    return spec


def chart_specs(ranking: dict, curves: dict[str, list[dict]], titles: dict[str, str] | None = None) -> dict[str, dict]:
    """{chart name: Vega-Lite spec}, in the order the page shows them (see the module's doc);
    `titles`: the leaderboard columns' titles by metrics.json path."""
    titles = titles or {}
    statistics = ranking.get("statistics") or {}
    resamples = statistics.get("resamples", "n/a")
    made: list[tuple[str, Any]] = []
    for board in ranking.get("leaderboards") or []:
        board_statistics = _leaderboard_statistics(ranking, board["name"])
        board_resamples = (board_statistics or {}).get("resamples", resamples)
        part = _name_part(board["name"])
        made += [(f"forest-{part}-{_name_part(path)}",
                  _forest_chart(board, path, board_statistics, board_resamples, titles))
                 for path in _value_paths(board["entries"])]
        made.append((f"stability-{part}", _stability_chart(board, board_statistics, board_resamples)))
        made.append((f"pairwise-{part}", _pairwise_chart(board, board_statistics, board_resamples)))
    submissions = _curve_submissions(ranking, curves)
    chart_names = dict.fromkeys(curve.get("chart") for name in submissions for curve in curves[name])
    made += [(f"curve-{_name_part(chart)}", _curve_chart(chart, submissions, curves)) for chart in chart_names if chart]
    specs: dict[str, dict] = {}
    for name, chart in made:
        if chart is None:
            continue
        if name in specs:  # two paths or curve names differing only by their punctuation
            raise ValueError(f"two charts would be written to charts/{name}.vl.json")
        specs[name] = _spec(chart)
    return specs


def spec_text(spec: dict) -> str:
    """The bytes of charts/<name>.vl.json."""
    return json.dumps(spec, sort_keys=True, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


# vl-convert bundles Vega-Lite 5.8 and newer only (vl_convert.get_vegalite_versions()), not the
# platform's 5.1.0: the page's SVG is drawn with its oldest, 5.8. The specs written use nothing newer
# than 5.1 (tests/test_browser.py draws each with 5.1.0 itself).
VL_CONVERT_VERSION = "5.8"
VL_CONVERT_FILES = 16  # the descriptors vl-convert's renderer opens (13 measured, vl-convert-python 1.9)


def rendered_svg(name: str, spec: dict) -> str:
    """The chart as inline SVG, its ids prefixed with the chart's name and numbered by first
    appearance (unique across the page, the same whatever vl-convert rendered before)."""
    import vl_convert

    try:
        svg = vl_convert.vegalite_to_svg(spec, vl_version=VL_CONVERT_VERSION, allowed_base_urls=[])
    except BaseException as error:  # a Rust panic is pyo3's PanicException, a BaseException
        if not isinstance(error, Exception) and type(error).__name__ != "PanicException":
            raise  # SIGTERM's Terminated, KeyboardInterrupt
        if "Too many open files" in str(error):
            raise OSError(errno.EMFILE, f"Too many open files (vl-convert, rendering {name})") from None
        raise RuntimeError(f"vl-convert could not render the chart {name}: {type(error).__name__}: "
                           f"{error}") from None
    renamed = {old: f"{name}-id{number}" for number, old in
               enumerate(dict.fromkeys(re.findall(r'\bid="([^"]+)"', svg)), start=1)}
    if not renamed:
        return svg
    pattern = re.compile(r'(\bid="|url\(#|href="#)(' + "|".join(map(re.escape, renamed)) + r')(?=[")])')
    return pattern.sub(lambda found: found.group(1) + renamed[found.group(2)], svg)


# --- page ------------------------------------------------------------------------------------

def _escaped(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _cell(text: str, exact: Any = None, name: bool = False, wrapped: bool = False) -> str:
    attributes = f' class="{"name message" if wrapped else "name"}"' if name else ""
    if _is_number(exact) and isinstance(exact, float):
        attributes += f' title="{_escaped(repr(exact))}"'
    return f"<td{attributes}>{_escaped(text)}</td>"


def _ranking_table(board: dict, board_statistics: dict | None, titles: dict[str, str],
                   partial_titles: dict[str, str] | None = None, resamples: Any = "n/a") -> str:
    """The leaderboard's table; `partial_titles` {partial rank name: title} (the rule's), the
    statistics' mean rank titled with its resamples apart from a rule's mean of ranks."""
    partial_titles = partial_titles or {}
    entries = board["entries"]
    if not entries:
        return "<p>No submission is ranked.</p>"
    paths, partial_names = _value_paths(entries), _partial_rank_names(entries)
    rows_statistics = [_submission_statistics(board_statistics, entry["submission"]) for entry in entries]
    has = {key: any(key in row for row in rows_statistics) for key in ("value_ci", "rank_ci", "mean_rank", "p_first")}
    header = ['<th>rank</th>', '<th class="name">submission</th>']
    for path in paths:
        title = _escaped(_column_title(path, titles))
        header.append(f'<th title="{_escaped(path)}">{title}</th>')
        if has["value_ci"]:
            header.append(f'<th title="{_escaped(path)}">{title}, 95% interval</th>')
    header += [f'<th title="{_escaped(name)}">{_escaped(partial_titles[name])}</th>' if name in partial_titles
               else f"<th>{_escaped(name)} (partial rank)</th>" for name in partial_names]
    header += [f"<th>{_escaped(title)}</th>" for key, title in (
        ("rank_ci", "rank 95% interval"), ("mean_rank", f"mean rank over {resamples} resamples"),
        ("p_first", "P(first)")) if has[key]]
    rows = []
    for entry, statistics in zip(entries, rows_statistics, strict=True):
        values, partial = entry.get("values", {}), entry.get("partial_ranks") or {}
        cells = [_cell(_rank_text(entry["rank"])), _cell(entry["submission"], name=True)]
        for path in paths:
            cells.append(_cell(_value_text(values.get(path)), values.get(path)))
            if has["value_ci"]:
                cells.append(_cell(_interval_text((statistics.get("value_ci") or {}).get(path))))
        cells += [_cell(_rank_text(partial.get(name)), partial.get(name)) for name in partial_names]
        if has["rank_ci"]:
            cells.append(_cell(_interval_text(statistics.get("rank_ci"), _rank_text)))
        if has["mean_rank"]:
            cells.append(_cell(f"{statistics['mean_rank']:.2f}" if _is_number(statistics.get("mean_rank")) else "n/a",
                               statistics.get("mean_rank")))
        if has["p_first"]:
            cells.append(_cell(f"{statistics['p_first']:.3f}" if _is_number(statistics.get("p_first")) else "n/a",
                               statistics.get("p_first")))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return '<div class="table"><table>\n<tr>' + "".join(header) + "</tr>\n" + "\n".join(rows) + "\n</table></div>"


def _resamples(ranking: dict, board_statistics: dict | None) -> Any:
    return (board_statistics or {}).get("resamples", (ranking.get("statistics") or {}).get("resamples", "n/a"))


def _statistics_sentence(ranking: dict, board_statistics: dict | None) -> str:
    statistics = ranking.get("statistics")
    if not statistics:
        return "<p>No statistics (see the notes).</p>"
    if board_statistics is None:
        return "<p>No statistics for this leaderboard.</p>"
    resamples = board_statistics.get("resamples", statistics.get("resamples"))
    seed = board_statistics.get("seed", statistics.get("seed"))
    sentence = f"Statistics over {resamples} resamples of the cases (seed {seed}), shared by every submission"
    tau = board_statistics.get("kendall_tau")
    if _is_number(tau):
        sentence += f"; mean Kendall's tau between each resample's ranking and the final one: {tau:.3f}"
    return f"<p>{_escaped(sentence)}.</p>"


def _excluded_section(excluded: list[dict]) -> str:
    if not excluded:
        return "<p>None.</p>"
    rows = [f"<tr>{_cell(item.get('submission', ''), name=True)}{_cell(item.get('exit_code', ''))}"
            f"{_cell(item.get('error', ''), name=True, wrapped=True)}</tr>" for item in excluded]
    return ('<div class="table"><table>\n<tr><th class="name">submission</th><th>exit code</th>'
            '<th class="name">message</th></tr>\n' + "\n".join(rows) + "\n</table></div>")


def _notes_section(notes: Iterable[Any]) -> list[str]:
    """The notes, or nothing when there are none."""
    notes = list(notes)
    if not notes:
        return []
    return ["<h2>Notes</h2>", "<ul>\n" + "\n".join(f"<li>{_escaped(note)}</li>" for note in notes) + "\n</ul>"]


def report_html(ranking: dict, svgs: dict[str, str], titles: dict[str, str] | None = None,
                partial_titles: dict[str, dict[str, str]] | None = None) -> str:
    """The page: every participant text escaped, the charts' SVG inline, the value columns titled
    as the leaderboard declares them (`titles` by path; the path in the header's tooltip), the
    partial ranks as each leaderboard's rule titles them (`partial_titles` {leaderboard: {name:
    title}}; the name in the tooltip)."""
    titles = titles or {}
    partial_titles = partial_titles or {}
    challenge = _escaped(ranking.get("challenge", ""))
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>Final ranking: {challenge}</title>", f"<style>\n{STYLE}\n</style>", "</head>", "<body>",
             f"<h1>Final ranking: {challenge}</h1>"]
    for board in ranking.get("leaderboards") or []:
        board_statistics = _leaderboard_statistics(ranking, board["name"])
        parts += [f"<h2>Leaderboard {_escaped(board['name'])}</h2>",
                  f'<p class="rule">{_escaped(board.get("rule", ""))}</p>',
                  _ranking_table(board, board_statistics, titles, partial_titles.get(board["name"]),
                                 _resamples(ranking, board_statistics)),
                  _statistics_sentence(ranking, board_statistics)]
    parts += ["<h2>Excluded submissions</h2>", _excluded_section(ranking.get("excluded") or []),
              *_notes_section(ranking.get("notes") or []), "<h2>Charts</h2>"]
    if not svgs:
        parts.append("<p>No chart.</p>")
    parts += [f"<figure>\n{svg}\n<figcaption>charts/{_escaped(name)}.vl.json</figcaption>\n</figure>"
              for name, svg in svgs.items()]
    parts += ["</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _write_file(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def write_report(output_dir: Path, ranking: dict, curves: dict[str, list[dict]],
                 titles: dict[str, str] | None = None, write: Callable[[Path, str], Any] = _write_file,
                 partial_titles: dict[str, dict[str, str]] | None = None) -> list[Path]:
    """Writes output_dir/charts/<name>.vl.json (Vega-Lite 5.1.0 specs) and output_dir/report.html
    with `write(path, text)` (the command's writes each file whole or not at all); returns the
    written paths (the charts in page order, then the page). `titles`: the leaderboard columns'
    titles by metrics.json path (`column_titles`); `partial_titles`: {leaderboard: {partial rank
    name: title}}, the rules' (RankingRule.partial_titles)."""
    output_dir = Path(output_dir)
    specs = chart_specs(ranking, curves or {}, titles)
    written = []
    if specs:
        (output_dir / "charts").mkdir(parents=True, exist_ok=True)
    for name, spec in specs.items():
        path = output_dir / "charts" / f"{name}.vl.json"
        write(path, spec_text(spec))
        written.append(path)
    # The page renders the very dict written to the file. vl-convert's renderer opens its files on
    # its first chart (13 measured): without them it panics, or its thread dies and the next chart
    # fails, so whether they fit is checked first.
    if specs:
        require_free_files(VL_CONVERT_FILES, "vl-convert's renderer")
    svgs = {name: rendered_svg(name, spec) for name, spec in specs.items()}
    page = output_dir / "report.html"
    output_dir.mkdir(parents=True, exist_ok=True)
    write(page, report_html(ranking, svgs, titles, partial_titles))
    written.append(page)
    return written


def column_titles(leaderboards: Iterable[Any]) -> dict[str, str]:
    """{metrics.json path: title} of every column of the challenge's leaderboard declarations
    (evaluation/declarations/columns.py), the first title of a path kept."""
    titles: dict[str, str] = {}
    for leaderboard in leaderboards:
        for column in (leaderboard.score, *leaderboard.extra_columns):
            titles.setdefault(column.path, column.title)
    return titles
