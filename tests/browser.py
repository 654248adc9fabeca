"""A headless Chromium drawing charts as grand-challenge.org does (tests/test_browser.py).

The platform draws a Chart output with vega 5.20.2, vega-lite 5.1.0 and vega-embed 6.17.0 (its
pyproject.toml pins them). scripts/browser_env.sh installs Chromium and fetches those three files
from the npm registry into CHART_BROWSER_DIR (default ~/.cache/evaluation-browser); playwright
(requirements-dev.txt) drives the browser through its executable path.

`environment()` says where they are, or why they are missing. The browser tests skip with that
reason on a developer's machine, and fail in CI (CI=true), where .ci/run sets the environment up.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

JS_FILES = ("vega-5.20.2.min.js", "vega-lite-5.1.0.min.js", "vega-embed-6.17.0.min.js")
SETUP = "bash scripts/browser_env.sh"
TOLERANCE = 1.0  # pixels: a glyph's box may pass its svg by antialiasing


@dataclass(frozen=True)
class Environment:
    chromium: str
    js: tuple[Path, ...]


def environment() -> Environment | str:
    """The browser and the JavaScript files, or a sentence saying what is missing."""
    folder = Path(os.environ.get("CHART_BROWSER_DIR")
                  or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "evaluation-browser")
    js = tuple(folder / "js" / name for name in JS_FILES)
    missing = [path.name for path in js if not path.is_file()]
    if missing:
        return f"{', '.join(missing)} not in {folder / 'js'} (run {SETUP})"
    candidates = [os.environ.get("CHART_CHROMIUM"), shutil.which("chromium"),
                  str(folder / "chromium" / "usr" / "lib" / "chromium" / "chromium")]
    chromium = next((c for c in candidates if c and os.access(c, os.X_OK)), None)
    if chromium is None:
        return f"no Chromium (run {SETUP}, or set CHART_CHROMIUM)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed (requirements-dev.txt)"
    return Environment(chromium, js)


# Every text element of every svg under `root` whose box leaves its svg's box, with the svg's
# own size (the chart drawn, or scaled down by the page's CSS).
OVERFLOWING_TEXT = """([root, tolerance]) => {
    const found = [];
    for (const svg of document.querySelectorAll(root + ' svg')) {
        const box = svg.getBoundingClientRect();
        for (const text of svg.querySelectorAll('text')) {
            const t = text.getBoundingClientRect();
            if (!text.textContent.trim() || (t.width === 0 && t.height === 0)) continue;
            if (t.left < box.left - tolerance || t.right > box.right + tolerance ||
                t.top < box.top - tolerance || t.bottom > box.bottom + tolerance) {
                found.push({text: text.textContent, left: t.left - box.left, right: t.right - box.left,
                            top: t.top - box.top, bottom: t.bottom - box.top, width: box.width, height: box.height});
            }
        }
    }
    return found;
}"""

# Truncated labels: Vega ends a text cut at its limit with an ellipsis.
TRUNCATED_TEXT = """(root) => Array.from(document.querySelectorAll(root + ' svg text'))
    .map(t => t.textContent).filter(t => t.endsWith('\u2026'))"""


class Browser:
    """One Chromium (playwright's sync API), a new page per drawing."""

    def __init__(self, env: Environment):
        from playwright.sync_api import sync_playwright

        self.env = env
        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(executable_path=env.chromium, args=["--no-sandbox"])

    def close(self) -> None:
        self._browser.close()
        self._playwright.stop()

    def page(self, width: int = 1280, height: int = 900):
        page = self._browser.new_page(viewport={"width": width, "height": height})
        page.messages = []  # every console message and uncaught error, as "type: text"
        page.on("console", lambda message: page.messages.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: page.messages.append(f"pageerror: {error}"))
        return page

    def draw(self, spec: dict) -> dict:
        """The spec drawn by vega-embed as the platform draws it (SVG renderer, to measure it):
        {"messages": console lines, "overflowing": texts outside the chart, "truncated": texts
        cut with an ellipsis, "size": [width, height], "versions": the libraries' versions}."""
        page = self.page()
        try:
            page.set_content('<!DOCTYPE html><html><head><meta charset="utf-8"></head>'
                             '<body style="margin:0"><div id="chart"></div></body></html>')
            for path in self.env.js:
                page.add_script_tag(path=str(path))
            versions = page.evaluate("() => ({vega: vega.version, vegaLite: vegaLite.version, "
                                     "vegaEmbed: vegaEmbed.version})")
            page.evaluate("async (spec) => { window.result = await vegaEmbed('#chart', spec, "
                          "{renderer: 'svg', actions: false}); }", json.loads(json.dumps(spec)))
            size = page.evaluate("() => { const b = document.querySelector('#chart svg').getBoundingClientRect();"
                                 " return [b.width, b.height]; }")
            return {"messages": list(page.messages), "versions": versions, "size": size,
                    "overflowing": page.evaluate(OVERFLOWING_TEXT, ["#chart", TOLERANCE]),
                    "truncated": page.evaluate(TRUNCATED_TEXT, "#chart")}
        finally:
            page.close()


PAGE_LAYOUT = """() => {
    const doc = document.documentElement;
    const tables = Array.from(document.querySelectorAll('table')).map(table => {
        const box = table.parentElement;
        return {scrollWidth: box.scrollWidth, clientWidth: box.clientWidth, width: table.getBoundingClientRect().width,
                right: table.getBoundingClientRect().right};
    });
    return {scrollWidth: doc.scrollWidth, clientWidth: doc.clientWidth, tables: tables,
            svgs: Array.from(document.querySelectorAll('svg')).map(s => s.getBoundingClientRect().right)};
}"""


def open_page(browser: Browser, path: Path, width: int) -> dict:
    """report.html at a window `width` px wide: {"messages", "overflowing" (texts outside their
    svg), "truncated", "layout": the document's and every table container's scrollWidth and
    clientWidth}."""
    page = browser.page(width=width)
    try:
        page.goto(Path(path).resolve().as_uri())
        return {"messages": list(page.messages), "overflowing": page.evaluate(OVERFLOWING_TEXT, ["body", TOLERANCE]),
                "truncated": page.evaluate(TRUNCATED_TEXT, "body"), "layout": page.evaluate(PAGE_LAYOUT)}
    finally:
        page.close()
