"""Every chart we write, drawn in a real headless Chromium by the platform's own renderer, and the
final ranking's report.html opened in it (tests/browser.py; scripts/browser_env.sh sets it up).

grand-challenge.org draws a Chart output with vega 5.20.2, vega-lite 5.1.0 and vega-embed 6.17.0.
Each chart, per submission (the bundled examples, through the command line) and per final ranking,
must draw there with no console message at all (a spec declaring a newer Vega-Lite makes vega-embed
warn; an encoding 5.1 does not know is dropped with a warning) and no text outside the chart.
report.html, at 1280 and 390 px wide: no text outside its chart, the page never wider than the
window, every table whole at 1280 px (at 390 px a wide table scrolls inside its own box, the page
does not), its value columns titled as the leaderboards declare them.

Without the browser environment these tests skip, saying what is missing; in CI (CI=true) they fail.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.challenges import challenge_class
from evaluation.leaderboard.report import MAX_CHARTED, column_titles, write_report
from tests import browser as chromium
from tests.test_charts import ALL_CHARTS, CHARTS, chart, runs  # noqa: F401 (runs: the fixture)
from tests.test_leaderboard_report import simulated_curves, simulated_ranking

ROOT = Path(__file__).resolve().parents[1]
WIDTHS = (1280, 390)
LONG_NAME = "a-rather-long-team-name-from-a-university-laboratory-2026"


@pytest.fixture(scope="session")
def browser():
    found = chromium.environment()
    if isinstance(found, str):
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must draw the charts in Chromium: {found}")
        pytest.skip(f"no browser environment: {found}")
    opened = chromium.Browser(found)
    yield opened
    opened.close()


def assert_drawn_cleanly(drawn: dict, what: str) -> None:
    assert drawn["messages"] == [], f"{what}: {drawn['messages']}"
    assert drawn["overflowing"] == [], f"{what}: text outside the chart: {drawn['overflowing']}"


def test_the_platforms_versions_are_the_ones_drawing(browser):
    drawn = browser.draw({"$schema": "https://vega.github.io/schema/vega-lite/v5.1.0.json", "mark": "point",
                          "data": {"values": [{"x": 1}]}, "encoding": {"x": {"field": "x", "type": "quantitative"}}})
    assert drawn["versions"] == {"vega": "5.20.2", "vegaLite": "5.1.0", "vegaEmbed": "6.17.0"}
    assert_drawn_cleanly(drawn, "a minimal chart")


def test_the_check_sees_what_the_platform_complains_about(browser):
    """A spec declaring a newer Vega-Lite, and an encoding 5.1 does not know (xOffset): the
    console says so; a text wider than its chart is seen leaving it."""
    newer = browser.draw({"$schema": "https://vega.github.io/schema/vega-lite/v5.20.1.json", "mark": "bar",
                          "data": {"values": [{"g": "a", "m": "x", "v": 1}, {"g": "a", "m": "y", "v": 2}]},
                          "encoding": {"x": {"field": "g", "type": "nominal"}, "xOffset": {"field": "m"},
                                       "y": {"field": "v", "type": "quantitative"}}})
    assert any("v5.20.1" in message for message in newer["messages"])
    assert any("xOffset" in message for message in newer["messages"])
    wide = browser.draw({"$schema": "https://vega.github.io/schema/vega-lite/v5.1.0.json", "width": 50, "height": 50,
                         "autosize": {"type": "none"}, "mark": "point", "data": {"values": [{"x": 1}]},
                         "encoding": {"x": {"field": "x", "type": "quantitative"}},
                         "title": {"text": "a title much wider than its fifty pixel chart", "anchor": "middle"}})
    assert "a title much wider than its fifty pixel chart" in [text["text"] for text in wide["overflowing"]]


BAR_BOXES = """() => {
    const boxes = el => Array.from(document.querySelectorAll(el)).map(e => e.getBoundingClientRect())
        .map(b => ({left: b.left, right: b.right, top: b.top, bottom: b.bottom}));
    return {bars: boxes('#chart .role-mark.mark-rect path'), axes: boxes('#chart .role-axis-domain line, '
            + '#chart .role-axis-domain path')};
}"""


@pytest.mark.parametrize("challenge,setting", ALL_CHARTS)
def test_every_submission_chart_draws_on_the_platforms_renderer(runs, browser, challenge, setting):  # noqa: F811
    spec = chart(runs, challenge, setting)
    assert spec["$schema"] == "https://vega.github.io/schema/vega-lite/v5.1.0.json"
    assert_drawn_cleanly(browser.draw(spec), f"{challenge} {CHARTS[challenge][setting]}")


@pytest.mark.parametrize("challenge", ["csv2026", "hecktor2025-task1"])
def test_structure_bars_stand_side_by_side_within_the_axis(runs, browser, challenge):  # noqa: F811
    """Vega-Lite 5.1 drops xOffset: the Dice and NSD bars stacked and ran far above the 0-1
    axis. Each bar must have an x of its own and end within the y axis."""
    spec = chart(runs, challenge, "structure_chart_file")
    page = browser.page()
    try:
        page.set_content('<div id="chart"></div>')
        for path in browser.env.js:
            page.add_script_tag(path=str(path))
        page.evaluate("async (spec) => { await vegaEmbed('#chart', spec, {renderer: 'svg', actions: false}); }", spec)
        found = page.evaluate(BAR_BOXES)
    finally:
        page.close()
    values = spec["data"]["values"]
    assert len(found["bars"]) == len(values)
    assert len({round((bar["left"] + bar["right"]) / 2) for bar in found["bars"]}) == len(values)  # none stacked
    vertical = [axis for axis in found["axes"] if axis["right"] - axis["left"] < 1]  # the y axis' domain line(s)
    top, bottom = min(axis["top"] for axis in vertical), max(axis["bottom"] for axis in vertical)
    assert all(top - 0.5 <= bar["top"] and bar["bottom"] <= bottom + 0.5 for bar in found["bars"])


# ---- the final ranking: its charts and report.html -----------------------------------------------


@pytest.fixture(scope="module")
def simulated_reports(tmp_path_factory):
    """Reports of simulated rankings: 4 submissions, one with a long name; and 60 (the charts
    draw the top 50)."""
    made = {}
    for label, names in (("four", ["team-a", LONG_NAME, "team-c", "team-d"]),
                         ("sixty", [f"team-{k:02d}" for k in range(60)])):
        output = tmp_path_factory.mktemp(f"report-{label}")
        titles = column_titles(challenge_class("hecktor2025-task2").leaderboards)
        titles["aggregates.specificity"] = "Specificity (tie-break)"
        write_report(output, simulated_ranking(names), simulated_curves(names), titles)
        made[label] = output
    return made


@pytest.fixture(scope="module")
def bundled_reports(tmp_path_factory):
    """The final ranking of the bundled leaderboard teams, by the command, for ISIC 2019 (the
    widest table) and CAMELYON16 (two leaderboards, a FROC curve)."""
    made = {}
    for challenge in ("isic2019", "camelyon16"):
        output = tmp_path_factory.mktemp(f"ranking-{challenge}")
        teams = sorted((ROOT / "test" / challenge / "leaderboard").iterdir())
        done = subprocess.run([sys.executable, "-m", "evaluation.leaderboard", challenge, *map(str, teams),
                               "--output", str(output), "--resamples", "50", "--workers", "2"],
                              cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        made[challenge] = output
    return made


def all_reports(simulated, bundled) -> dict[str, Path]:
    return {**{f"simulated {label}": path for label, path in simulated.items()},
            **{f"{challenge} bundled teams": path for challenge, path in bundled.items()}}


def test_every_final_ranking_chart_draws_on_the_platforms_renderer(browser, simulated_reports, bundled_reports):
    drawn = 0
    for label, output in all_reports(simulated_reports, bundled_reports).items():
        for path in sorted((output / "charts").glob("*.vl.json")):
            spec = json.loads(path.read_text())
            assert spec["$schema"] == "https://vega.github.io/schema/vega-lite/v5.1.0.json"
            assert_drawn_cleanly(browser.draw(spec), f"{label}: charts/{path.name}")
            drawn += 1
    assert drawn >= 20


@pytest.mark.parametrize("width", WIDTHS)
def test_report_fits_the_window(browser, simulated_reports, bundled_reports, width):
    for label, output in all_reports(simulated_reports, bundled_reports).items():
        opened = chromium.open_page(browser, output / "report.html", width)
        what = f"{label}, report.html at {width} px"
        assert_drawn_cleanly(opened, what)
        layout = opened["layout"]
        assert layout["scrollWidth"] <= layout["clientWidth"], f"{what}: the page is wider than the window"
        assert layout["tables"], what
        # Only a participant's long name is cut (its whole text in the tooltip): never a title,
        # legend title or label of ours (the ROC legend's title read "submissio").
        cut = [text for text in opened["truncated"] if not LONG_NAME.startswith(text.rstrip("\u2026"))]
        assert cut == [], f"{what}: texts cut: {cut}"
        for table in layout["tables"]:
            if width >= 1280:  # whole, no column cut or scrolled away
                assert table["scrollWidth"] <= table["clientWidth"], f"{what}: a table is cut: {table}"


def test_report_columns_carry_the_leaderboards_titles(bundled_reports):
    page = (bundled_reports["isic2019"] / "report.html").read_text()
    assert "<th title=\"aggregate.balanced_accuracy\">Balanced multi-class accuracy</th>" in page
    assert "<th title=\"aggregate.auc\">Mean AUC (tie-break)</th>" in page
    assert ">aggregate.auc<" not in page and "None." not in page.split("<h2>Notes</h2>")[-1]


def test_many_submissions_chart_the_top_50_and_say_so(simulated_reports):
    output = simulated_reports["sixty"]
    pairwise = json.loads((output / "charts" / "pairwise-c_index.vl.json").read_text())
    assert {row["a"] for row in pairwise["data"]["values"]} == {f"team-{k:02d}" for k in range(60)} & {
        row["a"] for row in pairwise["data"]["values"]}
    assert len({row["a"] for row in pairwise["data"]["values"]}) == MAX_CHARTED
    assert f"the top {MAX_CHARTED} of the 60 ranked submissions" in json.dumps(pairwise["title"])


@pytest.mark.parametrize("ci", ["", "true"])
def test_without_the_environment_the_tests_skip_locally_and_fail_in_ci(tmp_path, ci):
    env = {**os.environ, "CHART_BROWSER_DIR": str(tmp_path / "nothing"), "CI": ci}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "tests/test_browser.py::test_the_platforms_versions_are_the_ones_drawing"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert "vega-5.20.2.min.js, vega-lite-5.1.0.min.js, vega-embed-6.17.0.min.js not in" in done.stdout
    assert "bash scripts/browser_env.sh" in done.stdout
    if ci:
        assert done.returncode == 1 and "1 error" in done.stdout, done.stdout
    else:
        assert done.returncode == 0 and "1 skipped" in done.stdout, done.stdout
