"""Charts for the result page (evaluation/charts.py; docs/grand-challenge.md, "Charts").

Every chart is made by a real command-line run on the bundled example, with a config.json in a
copy of the ground truth naming its file; each validates against the Vega-Lite v5 JSON schema
5.1.0 (what grand-challenge.org draws with) and compiles and renders with vl-convert. What it plots is compared
with an independent computation: scikit-learn's curves on the files read here with pandas, the
curve and the aggregates metrics.json holds. A run without the settings writes no chart, and its
metrics.json differs from a run with them only by the settings echo.
"""

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import vl_convert
from sklearn.metrics import precision_recall_curve, roc_auc_score, roc_curve

from evaluation import charts
from evaluation.challenges import available_challenges
from evaluation.framework import Evaluation
from evaluation.settings import Settings
from evaluation.settings import setting as setting_field
from tests.cli_runs import ROOT, Run, run_command_line

VEGA_LITE_VERSION = "5.8"  # vl-convert's oldest; the platform's 5.1.0 draws them in tests/test_browser.py
# The file each chart is asked for, per challenge (one in a subfolder); a challenge not here that
# declares charts (its result_charts) gets every generic check, each chart as <setting>.json.
FILE_NAMES = {
    "isic2018": {"roc_chart_file": "roc-curves.json"},
    "isic2019": {"roc_chart_file": "roc-curves.json"},
    "camelyon16": {"froc_chart_file": "froc.json", "roc_chart_file": "charts/slide-roc.json"},
    "rare26": {"roc_chart_file": "roc.json", "pr_chart_file": "precision-recall.json"},
    "csv2026": {"structure_chart_file": "structures.json"},
    "hecktor2025-task1": {"structure_chart_file": "structures.json"},
}
CHARTS = {name: FILE_NAMES.get(name)
          or {chart.setting: f"{chart.setting.removesuffix('_file')}.json" for chart in cls.result_charts}
          for name, cls in available_challenges().items() if cls.result_charts}
ALL_CHARTS = [(challenge, setting) for challenge, files in CHARTS.items() for setting in files]


def ground_truth_with(directory: Path, challenge: str, settings: dict) -> Path:
    """A copy of the bundled ground truth whose config.json adds `settings` to the bundled one."""
    copy = directory / f"ground-truth-{challenge}"
    shutil.copytree(ROOT / "ground-truth" / challenge, copy)
    config = copy / "config.json"
    bundled = json.loads(config.read_text()) if config.exists() else {}
    config.write_text(json.dumps({**bundled, **settings}))
    return copy


def run_in_process(challenge, input_dir, ground_truth, output, *extra) -> Run:
    """The command line's main() in this process (no interpreter start-up to pay)."""
    from evaluation.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([challenge, "--input", str(input_dir), "--ground-truth", str(ground_truth), "--output", str(output),
                     *extra])
    return Run(code, out.getvalue(), err.getvalue(), Path(output))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{challenge: (run with every chart, run without)}, made once: the first in a process of its
    own (python -m evaluation), the second through the same main() in this process."""
    made = {}

    def get(challenge):
        if challenge not in made:
            directory = tmp_path_factory.mktemp(f"charts-{challenge}")
            truth = ground_truth_with(directory, challenge, CHARTS[challenge])
            example = ROOT / "test" / challenge / "input"
            with_charts = run_command_line(challenge, example, truth, directory / "with", "--workers", "1")
            without = run_in_process(challenge, example, ROOT / "ground-truth" / challenge, directory / "without",
                                     "--workers", "1")
            assert with_charts.code == 0, with_charts.stderr
            assert without.code == 0, without.stderr
            made[challenge] = (with_charts, without)
        return made[challenge]

    return get


def chart(runs, challenge: str, setting: str) -> dict:
    run, _ = runs(challenge)
    return json.loads((run.output / CHARTS[challenge][setting]).read_text())


def layer_values(spec: dict, mark: str) -> list[dict]:
    """The data points of the layer drawing `mark` (its own data, else the chart's)."""
    (layer,) = [layer for layer in spec.get("spec", spec)["layer"]
                if layer["mark"]["type"] == mark and "strokeDash" not in layer["mark"]]
    return (layer.get("data") or spec["data"])["values"]


def line_points(spec: dict, line: str, x: str, y: str) -> list[tuple[float, float]]:
    points = sorted((p for p in spec["data"]["values"] if p["line"] == line), key=lambda p: p["order"])
    return [(p[x], p[y]) for p in points]


def rounded_points(xs, ys) -> list[tuple[float, float]]:
    return [(charts.rounded(x), charts.rounded(y)) for x, y in zip(xs, ys, strict=True)]


# ---- every chart: schema, rendering, files written, metrics.json untouched, determinism -----------


@pytest.mark.parametrize("challenge,setting", ALL_CHARTS)
def test_chart_is_valid_vega_lite_v5(runs, schema_validator, challenge, setting):
    spec = chart(runs, challenge, setting)
    errors = sorted(schema_validator.iter_errors(spec), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message[:300]}" for e in errors[:5]]
    assert spec["$schema"] == "https://vega.github.io/schema/vega-lite/v5.1.0.json"  # what the platform draws with
    assert spec["title"]["text"] and spec["description"]


@pytest.mark.parametrize("challenge,setting", ALL_CHARTS)
def test_chart_compiles_and_renders(runs, challenge, setting):
    spec = chart(runs, challenge, setting)
    compiled = vl_convert.vegalite_to_vega(spec, vl_version=VEGA_LITE_VERSION)
    assert compiled["marks"]
    svg = vl_convert.vegalite_to_svg(spec, vl_version=VEGA_LITE_VERSION)
    assert svg.startswith("<svg") and spec["title"]["text"].split(":")[0] in svg
    assert "<path" in svg  # something is drawn


@pytest.mark.parametrize("challenge", CHARTS)
def test_only_requested_charts_are_written(runs, challenge):
    with_charts, without = runs(challenge)
    written = sorted(p.relative_to(with_charts.output).as_posix() for p in with_charts.output.rglob("*") if p.is_file())
    assert written == sorted(["metrics.json", *CHARTS[challenge].values()])
    assert [p.name for p in without.output.rglob("*")] == ["metrics.json"]
    assert "Drawing the chart" not in without.stdout and "Drawing the chart" in with_charts.stdout


@pytest.mark.parametrize("challenge", CHARTS)
def test_metrics_json_is_the_same_with_charts_apart_from_the_settings_echo(runs, challenge):
    with_charts, without = runs(challenge)
    charted, plain = with_charts.metrics, without.metrics
    assert charted.pop("settings") == {**plain.pop("settings"), **CHARTS[challenge]}
    assert charted == plain
    # the run without charts is the bundled example's expected output
    expected = ROOT / "test" / challenge / "expected_metrics.json"
    assert (without.output / "metrics.json").read_text() == expected.read_text()


@pytest.mark.parametrize("challenge", CHARTS)
def test_charts_are_deterministic(runs, tmp_path, challenge):
    first, _ = runs(challenge)
    truth = ground_truth_with(tmp_path, challenge, CHARTS[challenge])
    again = run_in_process(challenge, ROOT / "test" / challenge / "input", truth, tmp_path / "again", "--workers", "2")
    assert again.code == 0, again.stderr
    for name in CHARTS[challenge].values():
        assert (again.output / name).read_bytes() == (first.output / name).read_bytes(), name


def test_every_chart_setting_is_declared_as_an_output_file():
    """The framework draws the charts a challenge declares: each names a setting that is an
    output file (checked when the class is made and when the settings are read) and a builder."""
    import dataclasses

    declared = {}
    for name, cls in available_challenges().items():
        fields = {f.name: f for f in dataclasses.fields(cls.settings_class)}
        for chart in cls.result_charts:
            assert fields[chart.setting].metadata["output_file"], (name, chart.setting)
            assert fields[chart.setting].default == "", (name, chart.setting)
            assert callable(chart.build), (name, chart.build)
        declared[name] = {chart.setting for chart in cls.result_charts}
    assert {name: files for name, files in declared.items() if files} == {c: set(f) for c, f in CHARTS.items()}
    assert all(set(FILE_NAMES[name]) == declared[name] for name in FILE_NAMES)


@pytest.mark.parametrize(("setting", "words"), [
    ("roc_chart_fle", "is not a field of"),  # a typo
    ("seed", "is not declared with output_file=True"),
    ("chart_file", "is declared twice"),
])
def test_a_chart_naming_a_wrong_setting_is_a_type_error_when_the_class_is_made(setting, words):
    import dataclasses

    from evaluation.declarations.charts import Chart

    @dataclasses.dataclass(frozen=True)
    class ChartSettings(Settings):
        seed: int = setting_field(0, doc="not a file")
        chart_file: str = setting_field("", output_file=True, doc="a chart's file")

    def draw(evaluation, results, metrics):
        return {}

    charts = (Chart(setting, draw),) if setting != "chart_file" else (Chart(setting, draw), Chart(setting, draw))
    with pytest.raises(TypeError, match=words):
        type("Misdeclared", (Evaluation,), {"settings_class": ChartSettings, "result_charts": charts})
    # the same chart on its right setting is accepted
    right = (Chart("chart_file", draw),)
    made = type("Declared", (Evaluation,), {"settings_class": ChartSettings, "result_charts": right})
    assert [chart.setting for chart in made.result_charts] == ["chart_file"]

# ---- the plotted values against independent computations -------------------------------------------


@pytest.mark.parametrize("challenge", ["isic2018", "isic2019"])
def test_isic_roc_points_are_scikit_learns(runs, challenge):
    """Each category's line holds scikit-learn's roc_curve points (score_weight as sample weights),
    rounded; the legend shows its AUC; a category without positives has no line."""
    truth = pd.read_csv(ROOT / "ground-truth" / challenge / "truth.csv").set_index("image").sort_index()
    predictions = read_isic_predictions(challenge, list(truth.index))
    spec = chart(runs, challenge, "roc_chart_file")
    metrics = runs(challenge)[0].metrics
    lines = {p["line"] for p in spec["data"]["values"]}
    categories = [c for c in truth.columns if c not in ("score_weight", "validation_weight")]
    weights = truth["score_weight"].to_numpy()
    drawn = []
    for category in categories:
        y = truth[category].to_numpy() > 0.5
        if not (y[weights > 0].any() and (~y[weights > 0]).any()):
            assert category not in lines
            continue
        drawn.append(category)
        fpr, tpr, thresholds = roc_curve(y, predictions[category].to_numpy(), sample_weight=weights)
        assert len(fpr) <= charts.MAX_POINTS  # small case: nothing thinned
        assert line_points(spec, category, "fpr", "tpr") == rounded_points(fpr, tpr), category
        plotted = [p for p in spec["data"]["values"] if p["line"] == category]
        assert [p.get("threshold") for p in sorted(plotted, key=lambda p: p["order"])][1:] == [
            charts.significant(t) for t in thresholds[1:]]
        auc = roc_auc_score(y, predictions[category].to_numpy(), sample_weight=weights)
        assert auc == pytest.approx(metrics["per_category"]["auc"][category], abs=1e-12)
        (label,) = [entry["label"] for entry in spec["layer"][1]["transform"][0]["from"]["data"]["values"]
                    if entry["line"] == category]
        assert label == f"{category} (AUC {auc:.3f})"
    defined = [category for category, auc in metrics["per_category"]["auc"].items() if auc is not None]
    assert sorted(lines) == sorted(drawn) == sorted(defined)


def read_isic_predictions(challenge: str, images: list[str]) -> pd.DataFrame:
    """The example submission: predictions.csv, or the algorithm jobs' JSON outputs."""
    folder = ROOT / "test" / challenge / "input"
    if (folder / "predictions.csv").exists():
        return pd.read_csv(folder / "predictions.csv").set_index("image").loc[images]
    rows = {}
    for job in json.loads((folder / "predictions.json").read_text()):
        image = job["inputs"][0]["image"]["name"].rsplit(".", 1)[0]
        relative = job["outputs"][0]["socket"]["relative_path"]
        rows[image] = json.loads((folder / job["pk"] / "output" / relative).read_text())
    return pd.DataFrame.from_dict(rows, orient="index").loc[images]


def test_camelyon16_froc_points_are_the_metrics_curve(runs):
    """The FROC line is metrics.json's froc_curve without its 0-FP points (a log axis), and the
    six marked points are the froc_sensitivity_at_* aggregates at 1/4 .. 8 FPs per slide."""
    spec = chart(runs, "camelyon16", "froc_chart_file")
    metrics = runs("camelyon16")[0].metrics
    curve = metrics["froc_curve"]
    fp, sensitivity = curve["average_false_positives_per_slide"], curve["sensitivity"]
    expected = {(charts.significant(x), charts.rounded(y)) for x, y in zip(fp, sensitivity, strict=True) if x > 0}
    plotted = line_points(spec, "lesion FROC", "fp_per_slide", "sensitivity")
    assert set(plotted) == expected
    assert [x for x, _ in plotted] == sorted(x for x, _ in plotted)  # drawn with FP rates increasing
    assert spec["layer"][0]["encoding"]["x"]["scale"]["type"] == "log"
    marks = layer_values(spec, "point")
    assert [m["fp_per_slide"] for m in marks] == [0.25, 0.5, 1, 2, 4, 8]
    aggregates = metrics["aggregates"]
    keys = ["0_25", "0_5", "1", "2", "4", "8"]
    assert [m["sensitivity"] for m in marks] == [charts.rounded(aggregates[f"froc_sensitivity_at_{k}"]) for k in keys]
    # the 2016 script's interpolation on the curve metrics.json holds
    interpolated = np.interp([0.25, 0.5, 1, 2, 4, 8], fp, sensitivity)
    assert [m["sensitivity"] for m in marks] == [charts.rounded(v) for v in interpolated]
    assert f"FROC score {aggregates['froc_score']:.4f}" in spec["title"]["subtitle"]


def test_camelyon16_slide_roc_is_scikit_learns(runs):
    reference = pd.read_csv(ROOT / "ground-truth" / "camelyon16" / "reference.csv").set_index("image")
    submitted = pd.read_csv(ROOT / "test" / "camelyon16" / "input" / "slides.csv").set_index("image")
    slides = sorted(s for s in reference.index if s != "Test_049")  # the default excluded_slides
    y = reference.loc[slides, "type"].str.lower().eq("tumor").to_numpy()
    scores = submitted.loc[slides, "probability"].to_numpy()
    fpr, tpr, _ = roc_curve(y, scores)
    spec = chart(runs, "camelyon16", "roc_chart_file")
    assert line_points(spec, "slides", "fpr", "tpr") == rounded_points(fpr, tpr)
    auc = runs("camelyon16")[0].metrics["aggregates"]["slide_auc"]
    assert auc == pytest.approx(roc_auc_score(y, scores), abs=1e-12)


def rare26_test_set():
    """Every frame's label and submitted likelihood, read here from the example's files."""
    truth = json.loads((ROOT / "ground-truth" / "rare26" / "test_metadata.json").read_text())
    folder = ROOT / "test" / "rare26" / "input"
    labels, scores = [], []
    for job in json.loads((folder / "predictions.json").read_text()):
        frames = sorted(truth[job["inputs"][0]["image"]["name"]], key=lambda frame: frame["index"])
        output = folder / job["pk"] / "output" / job["outputs"][0]["socket"]["relative_path"]
        likelihoods = json.loads(output.read_text())
        labels += [frame["class"].strip().lower() != "ndbe" for frame in frames]
        scores += likelihoods
    return np.array(labels), np.array(scores, dtype=float)


def test_rare26_roc_is_scikit_learns_on_the_whole_test_set(runs):
    y, scores = rare26_test_set()
    fpr, tpr, _ = roc_curve(y, scores)
    spec = chart(runs, "rare26", "roc_chart_file")
    plotted = line_points(spec, "whole test set", "fpr", "tpr")
    expected = rounded_points(fpr, tpr)
    assert_thinned_from(plotted, expected)
    metrics = runs("rare26")[0].metrics
    assert metrics["AUROC Full Dataset"] == pytest.approx(roc_auc_score(y, scores), abs=1e-12)


def test_rare26_precision_recall_is_scikit_learns_and_says_it_is_not_the_leaderboards(runs):
    y, scores = rare26_test_set()
    precision, recall, _ = precision_recall_curve(y, scores)
    spec = chart(runs, "rare26", "pr_chart_file")
    plotted = line_points(spec, "whole test set", "recall", "precision")
    expected = rounded_points(recall[::-1], precision[::-1])  # drawn from recall 0 (thresholds decreasing)
    assert_thinned_from(plotted, expected)
    metrics = runs("rare26")[0].metrics
    (mark,) = layer_values(spec, "point")
    assert (mark["recall"], mark["precision"]) == (0.9, charts.rounded(metrics["PPV@90RECALL Full Dataset"]))
    assert "1% prevalence" in spec["description"] and "not read off this curve" in spec["description"]
    assert any("bootstrap" in line for line in spec["title"]["subtitle"])


def assert_thinned_from(plotted, expected):
    """All the points when there are at most MAX_POINTS, else MAX_POINTS of them in order, the
    first and the last included."""
    if len(expected) <= charts.MAX_POINTS:
        assert plotted == expected
        return
    assert len(plotted) == charts.MAX_POINTS
    assert plotted[0] == expected[0] and plotted[-1] == expected[-1]
    position = 0
    for point in plotted:  # a subsequence, in order
        position = expected.index(point, position) + 1


def bars(spec: dict) -> dict[tuple[str, str], float]:
    return {(b["group"], b["metric"]): b["value"] for b in layer_values(spec, "bar")}


def test_csv2026_bars_are_the_aggregates(runs):
    spec = chart(runs, "csv2026", "structure_chart_file")
    aggregates = runs("csv2026")[0].metrics["aggregates"]
    views = {"long": "longitudinal", "trans": "transverse"}
    expected = {}
    for view, name in views.items():
        for structure in ("vessel", "plaque"):
            expected[f"{name} {structure}", "Dice"] = charts.rounded(aggregates[f"{view}_{structure}_dsc"])
            expected[f"{name} {structure}", "NSD (3 px)"] = charts.rounded(aggregates[f"{view}_{structure}_nsd"])
    assert bars(spec) == expected


def test_hecktor_task1_bars_are_the_aggregates(runs):
    spec = chart(runs, "hecktor2025-task1", "structure_chart_file")
    aggregates = runs("hecktor2025-task1")[0].metrics["aggregates"]
    assert bars(spec) == {("GTVp Dice", "score"): charts.rounded(aggregates["gtvp_dsc_mean"]),
                          ("GTVn Dice", "score"): charts.rounded(aggregates["gtvn_dsc_agg"]),
                          ("GTVn detection F1", "score"): charts.rounded(aggregates["gtvn_f1_agg"])}


# ---- the organizer's mistakes -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../roc.json", "/tmp/roc.json", "metrics.json", "Metrics.JSON", "roc.png", "roc",
                                  "a/../roc.json", ".roc.json", "charts//roc.json", "roc curves.json", "charts/"])
def test_a_bad_chart_file_name_is_the_organizers_error(evaluate, tmp_path, name):
    truth = ground_truth_with(tmp_path, "isic2019", {"roc_chart_file": name})
    run = evaluate("isic2019", ROOT / "test" / "isic2019" / "input", truth)
    assert run.code == 3
    assert [line for line in run.stderr.splitlines() if line.strip()] == [run.last_error_line]
    assert run.last_error_line.startswith("The evaluation could not run, through no fault of the submission")
    assert "'roc_chart_file'" in run.last_error_line
    assert not run.wrote_metrics
    assert "Scoring" not in run.stdout  # refused when the settings are read, before any scoring


def test_two_charts_cannot_share_a_file(evaluate, tmp_path):
    truth = ground_truth_with(tmp_path, "camelyon16", {"froc_chart_file": "chart.json", "roc_chart_file": "chart.json"})
    run = evaluate("camelyon16", ROOT / "test" / "camelyon16" / "input", truth)
    assert run.code == 3 and "both name the file" in run.last_error_line
    assert not run.wrote_metrics


def test_a_chart_setting_must_be_text(evaluate, tmp_path):
    truth = ground_truth_with(tmp_path, "rare26", {"pr_chart_file": True})
    run = evaluate("rare26", ROOT / "test" / "rare26" / "input", truth)
    assert run.code == 3 and "'pr_chart_file' must be text" in run.last_error_line


# ---- charts.py on its own ----------------------------------------------------------------------


def test_thinning_keeps_the_ends_and_at_most_max_points():
    assert charts.thinned(5, 500) == [0, 1, 2, 3, 4]
    for count in (501, 502, 1000, 12345):
        kept = charts.thinned(count, 500)
        assert len(kept) == 500 and kept[0] == 0 and kept[-1] == count - 1
        assert kept == sorted(set(kept))
        gaps = np.diff(kept)
        assert gaps.min() >= 1 and gaps.max() - gaps.min() <= 1  # evenly spaced by rank


def test_a_long_curve_is_thinned_and_says_so(schema_validator):
    rng = np.random.default_rng(0)
    y, scores = rng.integers(0, 2, 5000).astype(bool), rng.random(5000)
    fpr, tpr, thresholds = roc_curve(y, scores, drop_intermediate=False)
    spec = charts.roc_chart([charts.Curve("random", fpr.tolist(), tpr.tolist(), thresholds.tolist())], title="t")
    assert not list(schema_validator.iter_errors(spec))
    plotted = line_points(spec, "random", "fpr", "tpr")
    assert_thinned_from(plotted, rounded_points(fpr, tpr))
    assert f"random ({len(fpr)} points)" in spec["description"]
    assert len(json.dumps(spec)) < 60_000


def test_a_chart_refuses_non_finite_values():
    with pytest.raises(ValueError):
        charts.bar_chart([charts.Bar("a", "m", float("nan"))], title="t", y_title="y", x_title="x")


def test_a_froc_without_false_positives_shows_its_operating_points(schema_validator):
    """Every detection a hit: the whole curve sits at 0 FPs per slide, which a log axis cannot
    show; the chart still holds the six operating points and renders."""
    curve = charts.Curve("lesion FROC", [0.0, 0.0, 0.0], [0.0, 0.5, 0.75], [float("inf"), 0.9, 0.4])
    marks = [charts.Marked(rate, 0.75, f"{rate:g}") for rate in (0.25, 0.5, 1, 2, 4, 8)]
    spec = charts.froc_chart(curve, marks, title="FROC")
    assert not list(schema_validator.iter_errors(spec))
    assert spec["data"]["values"] == [] and len(layer_values(spec, "point")) == 6
    assert "3 point(s) with no false positive are left out" in spec["description"]
    assert vl_convert.vegalite_to_svg(spec, vl_version=VEGA_LITE_VERSION).startswith("<svg")
