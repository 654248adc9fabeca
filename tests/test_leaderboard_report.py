"""The final ranking's report (evaluation/leaderboard/report.py): charts/<name>.vl.json and report.html.

The ranking documents here are built from simulated per-case scores bootstrapped with numpy and
ranked with scipy (rankdata), so their statistics hang together; the charts and the page are
checked against that document: every spec validates against the Vega-Lite 5.1.0 JSON schema (what
grand-challenge.org draws with) and renders with vl-convert, plots exactly the document's numbers (to the 6 significant
digits drawn), and the page is self-contained, escapes participant text and has the same bytes
run after run.
"""

import ast
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import vl_convert
from scipy.stats import rankdata

from evaluation.leaderboard.report import MAX_CHARTED, VL_CONVERT_VERSION, write_report

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = "<script>alert(1)</script>"
PATHS = ("aggregates.c_index", "aggregates.specificity")
PLOTTED = 1e-5  # relative: the charts draw 6 significant digits


def simulated_ranking(names: list[str], *, statistics: bool = True, resamples: int = 200, seed: int = 3,
                      excluded: list[dict] | None = None) -> dict:
    """A ranking.json document for `names`: per-case scores drawn at random, values = means, ranked
    by the first path (competition ranks), statistics from paired bootstrap resamples."""
    rng = np.random.default_rng(seed)
    cases = 30
    scores = {path: rng.uniform(0.3, 0.9, size=(len(names), 1)) + rng.normal(0, 0.15, size=(len(names), cases))
              for path in PATHS}
    values = {path: s.mean(axis=1) for path, s in scores.items()}
    ranks = rankdata(-values[PATHS[0]], method="min").astype(int)
    order = sorted(range(len(names)), key=lambda i: (ranks[i], names[i]))
    entries = [{"submission": names[i], "rank": int(ranks[i]),
                "values": {path: float(values[path][i]) for path in PATHS},
                "partial_ranks": {"c_index": float(rankdata(-values[PATHS[0]])[i])}} for i in order]
    document = {"challenge": "hecktor2025-task2",
                "leaderboards": [{"name": "c_index", "rule": f"{PATHS[0]} descending", "entries": entries}],
                "statistics": None, "excluded": excluded or [], "notes": ["statistics: paired bootstrap"]}
    if not statistics:
        return document
    draws = rng.integers(0, cases, size=(resamples, cases))  # the same draws for every submission
    resampled = {path: s[:, draws].mean(axis=2).T for path, s in scores.items()}  # (resamples, submissions)
    resampled_ranks = np.vstack([rankdata(-row, method="min") for row in resampled[PATHS[0]]])
    board: dict = {}
    for i, name in enumerate(names):
        firsts = resampled_ranks == 1
        board[name] = {
            "value_ci": {path: [float(v) for v in np.percentile(resampled[path][:, i], [2.5, 97.5])] for path in PATHS},
            "rank_ci": [float(v) for v in np.percentile(resampled_ranks[:, i], [2.5, 97.5])],
            "p_first": float(np.mean(firsts[:, i] / firsts.sum(axis=1))),
            "mean_rank": float(resampled_ranks[:, i].mean()),
            "rank_distribution": [float(np.mean(resampled_ranks[:, i] == k)) for k in range(1, len(names) + 1)],
        }
    position = {entry["submission"]: k for k, entry in enumerate(entries)}
    board["pairwise"] = {
        a: {b: {"p_better": float(np.mean(resampled_ranks[:, i] < resampled_ranks[:, j])
                                  + 0.5 * np.mean(resampled_ranks[:, i] == resampled_ranks[:, j])),
                "significant": (bool(np.mean(resampled_ranks[:, i] < resampled_ranks[:, j]) > 0.95)
                                if abs(position[a] - position[b]) == 1 else None)}
            for j, b in enumerate(names) if b != a}
        for i, a in enumerate(names)}
    board["kendall_tau"] = 0.5
    document["statistics"] = {"resamples": resamples, "seed": seed, "leaderboards": {"c_index": board}}
    return document


def simulated_curves(names: list[str]) -> dict[str, list[dict]]:
    curves = {}
    for k, name in enumerate(names):
        fpr = np.linspace(0, 1, 50)
        curves[name] = [
            {"chart": "roc_mel", "title": "ROC, MEL", "x_title": "False positive rate", "y_title": "Sensitivity",
             "points": [[float(x), float(x ** (1 / (2 + k)))] for x in fpr]},
            {"chart": "froc", "title": "FROC", "x_title": "FPs per slide", "y_title": "Sensitivity",
             "points": [[float(x), float(1 - np.exp(-x - k))] for x in np.linspace(0.125, 8, 20)]},
        ]
    return curves


NAMES = ["team-a", HOSTILE, "team-c", "team-d"]
EXCLUDED = [{"submission": "bad<img src=x onerror=alert(2)>", "exit_code": 1,
             "error": "predictions.json: <b>not a list</b> & \"quoted\""}]


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    """(ranking, curves, output dir, written paths) with statistics, curves and an excluded submission."""
    ranking, curves = simulated_ranking(NAMES, excluded=EXCLUDED), simulated_curves(NAMES)
    output = tmp_path_factory.mktemp("report")
    return ranking, curves, output, write_report(output, ranking, curves)


def specs_of(output: Path) -> dict[str, dict]:
    return {path.name.removesuffix(".vl.json"): json.loads(path.read_text())
            for path in sorted((output / "charts").glob("*.vl.json"))}


def layers_of(spec: dict) -> list[dict]:
    return spec.get("layer", [spec])


def layer_with_mark(spec: dict, mark: str) -> dict:
    """The one layer drawing `mark`, with its data (Altair hoists data shared by every layer)."""
    (found,) = [layer for layer in layers_of(spec) if layer["mark"]["type"] == mark]
    return {"data": spec.get("data"), **found}


def close(a, b) -> bool:
    return a == pytest.approx(b, rel=PLOTTED, abs=1e-12)


class Tables(HTMLParser):
    """The text of every table cell of a page: tables -> rows -> cells (header rows included)."""

    def __init__(self):
        super().__init__()
        self.tables, self._cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def tables_of(page: str) -> list[list[list[str]]]:
    parser = Tables()
    parser.feed(page)
    return parser.tables


def check_specs(output: Path, written: list[Path], validator) -> dict[str, dict]:
    """Every written spec: valid Vega-Lite v5, canonical bytes, inline data only, renders."""
    assert written[-1] == output / "report.html" and written[-1].is_file()
    assert sorted(written[:-1]) == sorted((output / "charts").glob("*"))
    specs = specs_of(output)
    for name, spec in specs.items():
        text = (output / "charts" / f"{name}.vl.json").read_text()
        assert text == json.dumps(spec, sort_keys=True, indent=2) + "\n"
        assert spec["$schema"] == "https://vega.github.io/schema/vega-lite/v5.1.0.json"
        errors = sorted(validator.iter_errors(spec), key=lambda e: list(e.path))
        assert not errors, f"{name}: {errors[0].message}"
        assert '"url"' not in text  # data inline, never fetched
        svg = vl_convert.vegalite_to_svg(spec, vl_version=VL_CONVERT_VERSION, allowed_base_urls=[])
        assert svg.startswith("<svg")
    return specs


# --- the full report -------------------------------------------------------------------------

def test_written_files_and_their_names(full_report, schema_validator):
    _ranking, _curves, output, written = full_report
    specs = check_specs(output, written, schema_validator)
    assert [path.name for path in written] == [
        "forest-c_index-aggregates_c_index.vl.json", "forest-c_index-aggregates_specificity.vl.json",
        "stability-c_index.vl.json", "pairwise-c_index.vl.json", "curve-roc_mel.vl.json", "curve-froc.vl.json",
        "report.html"]
    assert len(specs) == 6


def test_forest_plots_draw_each_value_and_its_interval(full_report):
    ranking, _, output, _ = full_report
    entries = ranking["leaderboards"][0]["entries"]
    board = ranking["statistics"]["leaderboards"]["c_index"]
    for path in PATHS:
        spec = specs_of(output)[f"forest-c_index-{path.replace('.', '_')}"]
        points, rules = layer_with_mark(spec, "point"), layer_with_mark(spec, "rule")
        assert points["encoding"]["y"]["sort"] == [entry["submission"] for entry in entries]  # rank order
        drawn = {row["submission"]: row["value"] for row in points["data"]["values"]}
        assert drawn.keys() == {entry["submission"] for entry in entries}
        assert all(close(drawn[entry["submission"]], entry["values"][path]) for entry in entries)
        intervals = {row["submission"]: [row["lo"], row["hi"]] for row in rules["data"]["values"]}
        assert all(close(intervals[name], board[name]["value_ci"][path]) for name in NAMES)


def test_blob_plot_areas_are_the_rank_distribution(full_report):
    ranking, _, output, _ = full_report
    spec = specs_of(output)["stability-c_index"]
    board = ranking["statistics"]["leaderboards"]["c_index"]
    circles = layer_with_mark(spec, "circle")
    assert circles["encoding"]["size"]["scale"]["domain"] == [0, 1]  # area proportional to the share
    drawn = {(row["submission"], row["rank"]): row["share"] for row in circles["data"]["values"]}
    expected = {(name, k): share for name in NAMES
                for k, share in enumerate(board[name]["rank_distribution"], start=1) if share > 0}
    assert drawn.keys() == expected.keys() and all(close(drawn[key], expected[key]) for key in expected)
    finals = {row["submission"]: row["rank"] for row in layer_with_mark(spec, "tick")["data"]["values"]}
    assert finals == {entry["submission"]: entry["rank"] for entry in ranking["leaderboards"][0]["entries"]}
    intervals = {row["submission"]: [row["lo"], row["hi"]] for row in layer_with_mark(spec, "rule")["data"]["values"]}
    assert intervals == {name: board[name]["rank_ci"] for name in NAMES}


def test_pairwise_map_colours_p_better_and_marks_significance(full_report):
    ranking, _, output, _ = full_report
    spec = specs_of(output)["pairwise-c_index"]
    pairwise = ranking["statistics"]["leaderboards"]["c_index"]["pairwise"]
    cells = {(row["a"], row["b"]): row for row in layer_with_mark(spec, "rect")["data"]["values"]}
    assert cells.keys() == {(a, b) for a in NAMES for b in NAMES if a != b}
    for (a, b), row in cells.items():
        assert close(row["p_better"], pairwise[a][b]["p_better"])
        assert row["label"].endswith("*") == (pairwise[a][b]["significant"] is True)
        assert row["significant"] == {True: "yes", False: "no", None: "not tested"}[pairwise[a][b]["significant"]]


def test_curves_one_line_per_submission(full_report):
    ranking, curves, output, _ = full_report
    ranked = [entry["submission"] for entry in ranking["leaderboards"][0]["entries"]]
    for index, chart in enumerate(("roc_mel", "froc")):
        spec = specs_of(output)[f"curve-{chart}"]
        assert spec["title"]["text"] == curves[NAMES[0]][index]["title"]
        assert spec["encoding"]["x"]["title"] == curves[NAMES[0]][index]["x_title"]
        assert spec["encoding"]["color"]["sort"] == ranked
        for name in NAMES:
            rows = sorted((r for r in spec["data"]["values"] if r["submission"] == name), key=lambda r: r["order"])
            assert close([v for r in rows for v in (r["x"], r["y"])],
                         [v for point in curves[name][index]["points"] for v in point])


def test_page_tables_hold_the_ranking_and_the_excluded(full_report):
    ranking, _, output, _ = full_report
    ranking_table, excluded_table = tables_of((output / "report.html").read_text())
    header, *rows = ranking_table
    assert header[:2] == ["rank", "submission"]
    entries = ranking["leaderboards"][0]["entries"]
    board = ranking["statistics"]["leaderboards"]["c_index"]
    assert [row[:2] for row in rows] == [[str(e["rank"]), e["submission"]] for e in entries]
    column = {title: k for k, title in enumerate(header)}
    for row, entry in zip(rows, entries, strict=True):
        statistics = board[entry["submission"]]
        assert float(row[column[PATHS[0]]]) == pytest.approx(entry["values"][PATHS[0]], abs=5e-5)
        lo, hi = map(float, row[column[f"{PATHS[0]}, 95% interval"]].strip("[]").split(", "))
        assert [lo, hi] == pytest.approx(statistics["value_ci"][PATHS[0]], abs=5e-5)
        assert float(row[column["c_index (partial rank)"]]) == entry["partial_ranks"]["c_index"]
        # the bootstrap's mean rank, titled apart from a rule's mean of ranks
        mean_rank = column[f"mean rank over {ranking['statistics']['resamples']} resamples"]
        assert float(row[mean_rank]) == pytest.approx(statistics["mean_rank"], abs=5e-3)
        assert float(row[column["P(first)"]]) == pytest.approx(statistics["p_first"], abs=5e-4)
        assert row[column["rank 95% interval"]] == "[{:g}, {:g}]".format(*statistics["rank_ci"])
    assert excluded_table == [["submission", "exit code", "message"],
                              [EXCLUDED[0]["submission"], "1", EXCLUDED[0]["error"]]]


def test_page_is_self_contained(full_report):
    page = (full_report[2] / "report.html").read_text()
    without_namespaces = re.sub(r'\sxmlns(:\w+)?="http://www\.w3\.org/[^"]*"', "", page)
    assert "http://" not in without_namespaces and "https://" not in without_namespaces
    fetching = re.compile(r"<(script|link|img|iframe|object|embed)\b|<[^>]*\s(src|href)=\"?[^#]|@import", re.IGNORECASE)
    assert not fetching.search(page)
    assert all(fetching.search(bad) for bad in ('<script>', '<p src="x">', '<a href="f.svg">', '@import "x";'))
    assert set(re.findall(r"url\((.)", page)) <= {"#"}  # only references inside the page
    assert page.count("<svg") == 6


def test_participant_text_is_escaped(full_report):
    page = (full_report[2] / "report.html").read_text()
    assert HOSTILE not in page and "<img" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;not a list&lt;/b&gt; &amp; &quot;quoted&quot;" in page


def test_svg_ids_are_unique_and_resolve(full_report):
    page = (full_report[2] / "report.html").read_text()
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    assert set(re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', page)) <= {(i, "") for i in ids} | {("", i) for i in ids}


def test_same_bytes_twice_and_in_another_process(full_report, tmp_path):
    ranking, curves, output, written = full_report
    again = write_report(tmp_path / "again", ranking, curves)  # after other renders in this process
    assert [p.relative_to(tmp_path / "again") for p in again] == [p.relative_to(output) for p in written]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(written, again, strict=True))
    (tmp_path / "input.json").write_text(json.dumps({"ranking": ranking, "curves": curves}))
    script = ("import json, sys; from pathlib import Path; from evaluation.leaderboard.report import MAX_CHARTED, "
              "VL_CONVERT_VERSION, write_report; "
              "d = json.loads(Path(sys.argv[1]).read_text()); "
              "write_report(Path(sys.argv[2]), d['ranking'], d['curves'])")
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "input.json"), str(tmp_path / "other")],
                   cwd=ROOT, check=True)
    assert all(a.read_bytes() == (tmp_path / "other" / a.relative_to(output)).read_bytes() for a in written)


# --- the other shapes of a ranking -----------------------------------------------------------

def test_statistics_null(tmp_path, schema_validator):
    ranking = simulated_ranking(NAMES, statistics=False)
    written = write_report(tmp_path, ranking, {})
    specs = check_specs(tmp_path, written, schema_validator)
    assert sorted(specs) == ["forest-c_index-aggregates_c_index", "forest-c_index-aggregates_specificity"]
    for spec in specs.values():
        assert [layer["mark"]["type"] for layer in layers_of(spec)] == ["point"]  # no interval
    (header, *rows), = tables_of((tmp_path / "report.html").read_text())
    assert header == ["rank", "submission", *PATHS, "c_index (partial rank)"]
    assert len(rows) == len(NAMES)


def test_statistics_without_rank_distribution(tmp_path, schema_validator):
    ranking = simulated_ranking(NAMES)
    for name in NAMES:
        del ranking["statistics"]["leaderboards"]["c_index"][name]["rank_distribution"]
    specs = check_specs(tmp_path, write_report(tmp_path, ranking, {}), schema_validator)
    assert sorted(specs) == ["forest-c_index-aggregates_c_index", "forest-c_index-aggregates_specificity",
                             "pairwise-c_index"]


def test_one_submission(tmp_path, schema_validator):
    ranking = simulated_ranking(["solo"])
    assert ranking["statistics"]["leaderboards"]["c_index"]["pairwise"] == {"solo": {}}
    written = write_report(tmp_path, ranking, simulated_curves(["solo"]))
    specs = check_specs(tmp_path, written, schema_validator)
    assert "pairwise-c_index" not in specs  # nothing to compare
    assert {"forest-c_index-aggregates_c_index", "stability-c_index", "curve-roc_mel"} <= set(specs)
    (_, row), = tables_of((tmp_path / "report.html").read_text())
    assert row[:2] == ["1", "solo"]


def test_every_submission_excluded(tmp_path, schema_validator):
    ranking = {"challenge": "isic2019", "leaderboards": [{"name": "balanced_accuracy", "rule": "r", "entries": []}],
               "statistics": None, "excluded": EXCLUDED * 2, "notes": []}
    written = write_report(tmp_path, ranking, {})
    assert written == [tmp_path / "report.html"] and not (tmp_path / "charts").exists()
    page = written[0].read_text()
    assert "No submission is ranked." in page and "No chart." in page
    (excluded,) = tables_of(page)
    assert len(excluded) == 3


def test_colliding_chart_names_are_refused(tmp_path):
    ranking = simulated_ranking(["a", "b"], statistics=False)
    for entry in ranking["leaderboards"][0]["entries"]:
        entry["values"] = {"x.y": 1.0, "x_y": 2.0}
    with pytest.raises(ValueError, match="forest-c_index-x_y"):
        write_report(tmp_path, ranking, {})


def test_chart_libraries_are_imported_only_when_reporting():
    """The evaluation image has neither altair nor vl-convert: no module outside
    evaluation/leaderboard/ imports them, and none imports them when it is itself imported."""
    anywhere, on_import = set(), set()
    for path in sorted((ROOT / "evaluation").rglob("*.py")):
        tree = ast.parse(path.read_text())
        module_level = set(map(id, tree.body))
        for node in ast.walk(tree):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name.split(".")[0] in ("altair", "vl_convert") for name in names):
                anywhere.add(path.relative_to(ROOT).parent.as_posix())
                if id(node) in module_level:
                    on_import.add(path.relative_to(ROOT).as_posix())
    assert anywhere == {"evaluation/leaderboard"} and not on_import


def test_many_submissions_chart_the_top_ones_and_say_so(tmp_path, schema_validator):
    """120 teams: the forest, stability and pairwise charts draw the top 50 in rank order (the
    pairwise map 50 x 49 cells, not 120 x 119), the curves the top 10, each subtitle saying so;
    the table lists all 120."""
    names = [f"team-{k:03d}" for k in range(120)]
    ranking = simulated_ranking(names, resamples=20)
    specs = check_specs(tmp_path, write_report(tmp_path, ranking, simulated_curves(names)), schema_validator)
    top = [entry["submission"] for entry in ranking["leaderboards"][0]["entries"]][:MAX_CHARTED]
    note = f"the top {MAX_CHARTED} of the 120 ranked submissions"
    forest = layer_with_mark(specs["forest-c_index-aggregates_c_index"], "point")
    assert [row["submission"] for row in forest["data"]["values"]] == top
    assert note in json.dumps(specs["forest-c_index-aggregates_c_index"]["title"])
    cells = layer_with_mark(specs["pairwise-c_index"], "rect")["data"]["values"]
    assert len(cells) == MAX_CHARTED * (MAX_CHARTED - 1) and {row["a"] for row in cells} == set(top)
    assert note in json.dumps(specs["pairwise-c_index"]["title"])
    blobs = layer_with_mark(specs["stability-c_index"], "circle")["data"]["values"]
    assert {row["submission"] for row in blobs} == set(top)
    assert note in json.dumps(specs["stability-c_index"]["title"])
    curve = specs["curve-roc_mel"]
    assert curve["encoding"]["color"]["sort"] == top[:10]
    assert "the top 10 of the 120 submissions with this curve" in json.dumps(curve["title"])
    (_header, *rows), = tables_of((tmp_path / "report.html").read_text())[:1]
    assert len(rows) == 120


def test_columns_are_titled_as_the_leaderboards_declare_them(tmp_path):
    """Every path a final ranking rule reads has its leaderboard title, for every challenge; the
    page's headers show it, the path in the header's tooltip; no empty notes section."""
    from evaluation.challenges import challenge_class, challenge_names
    from evaluation.leaderboard.report import column_titles

    for challenge in challenge_names():
        cls = challenge_class(challenge)
        titles = {**cls.value_titles, **column_titles(cls.leaderboards)}
        for rule in cls.final_rankings:
            assert all(titles.get(path) for path in rule.paths), (challenge, rule.name)
    ranking = simulated_ranking(NAMES, statistics=False)
    ranking["notes"] = []
    write_report(tmp_path, ranking, {}, {PATHS[0]: "C-index <Harrell>"})
    page = (tmp_path / "report.html").read_text()
    (header, *_), = tables_of(page)
    assert header == ["rank", "submission", "C-index <Harrell>", PATHS[1], "c_index (partial rank)"]
    assert f'<th title="{PATHS[0]}">C-index &lt;Harrell&gt;</th>' in page
    assert "Notes" not in page and page.count("None.") == 1  # the excluded submissions: none
    spec = json.loads((tmp_path / "charts" / "forest-c_index-aggregates_c_index.vl.json").read_text())
    assert spec["layer"][0]["encoding"]["x"]["title"] == "C-index <Harrell>"
