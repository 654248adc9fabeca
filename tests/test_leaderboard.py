"""python -m evaluation.leaderboard, run for real: re-scored metrics byte for byte the container's,
exclusions with the container's exit code and line, the official rule against scipy, the same
bytes with 1 worker, 2 workers and a real Dask cluster (a scheduler and two worker processes
started here), --metrics mode and usage errors."""

from __future__ import annotations

import ast
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import rankdata

from tests.dask_cluster import dask_cluster as start_dask_cluster

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=600)


def teams(challenge: str) -> list[str]:
    return sorted(str(p) for p in (ROOT / "test" / challenge / "leaderboard").iterdir())


def leaderboard(challenge: str, output: Path, *options: str, submissions: list[str] | None = None):
    result = run("-m", "evaluation.leaderboard", challenge, *(submissions or teams(challenge)), "--output", str(output),
                 *options)
    assert result.returncode == 0, result.stderr
    return result, json.loads((output / "ranking.json").read_text())


def output_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def task2(tmp_path_factory):
    output = tmp_path_factory.mktemp("task2")
    return output, leaderboard("hecktor2025-task2", output, "--workers", "1")[1]


def test_rescored_metrics_and_exclusions_are_the_containers(task2, tmp_path):
    output, ranking = task2
    ranked = {e["submission"] for board in ranking["leaderboards"] for e in board["entries"]}
    excluded = {e["submission"]: e for e in ranking["excluded"]}
    assert ranked and excluded and not ranked & set(excluded)
    for team in teams("hecktor2025-task2"):
        name = Path(team).name
        single = run("-m", "evaluation", "hecktor2025-task2", "--input", team, "--output", str(tmp_path / name),
                     "--ground-truth", str(ROOT / "ground-truth" / "hecktor2025-task2"))
        if name in excluded:
            assert single.returncode == excluded[name]["exit_code"] == 1
            assert single.stderr.strip().splitlines()[-1] == excluded[name]["error"]
            assert not (output / "submissions" / name / "metrics.json").exists()
        else:
            assert single.returncode == 0, single.stderr
            assert (output / "submissions" / name / "metrics.json").read_bytes() == \
                (tmp_path / name / "metrics.json").read_bytes()


def test_the_ranking_is_the_official_rule_with_competition_ranks(task2):
    output, ranking = task2
    assert list(ranking) == ["challenge", "leaderboards", "statistics", "excluded", "notes"]
    (board,) = ranking["leaderboards"]
    assert board["name"] == "c_index"
    values = np.array([e["values"]["aggregates.c_index"] for e in board["entries"]])
    assert [e["rank"] for e in board["entries"]] == rankdata(-values, method="min").astype(int).tolist()
    assert len(set(values)) < len(values), "the bundled teams include a tie"
    ties = [e for e in board["entries"] if [x["rank"] for x in board["entries"]].count(e["rank"]) > 1]
    assert [e["submission"] for e in ties] == sorted(e["submission"] for e in ties)  # ties alphabetical
    for entry in board["entries"]:
        metrics = json.loads((output / "submissions" / entry["submission"] / "metrics.json").read_text())
        assert entry["values"]["aggregates.c_index"] == metrics["aggregates"]["c_index"]
    with open(output / "ranking-c_index.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["rank", "submission", "aggregates.c_index", "aggregates.c_index 95% CI low",
                       "aggregates.c_index 95% CI high", "exit_code", "error"]
    ranked, excluded = rows[1:len(board["entries"]) + 1], rows[len(board["entries"]) + 1:]
    statistics = ranking["statistics"]["leaderboards"]["c_index"]
    assert [(int(r[0]), r[1], float(r[2]), [float(r[3]), float(r[4])], r[5:]) for r in ranked] == \
        [(e["rank"], e["submission"], e["values"]["aggregates.c_index"],
          statistics[e["submission"]]["value_ci"]["aggregates.c_index"], ["", ""]) for e in board["entries"]]
    assert excluded and [r[:5] + [int(r[5]), r[6]] for r in excluded] == \
        [["", e["submission"], "", "", "", e["exit_code"], e["error"]] for e in ranking["excluded"]]


def test_statistics_are_complete_and_consistent(task2):
    _, ranking = task2
    statistics = ranking["statistics"]
    assert statistics["resamples"] == 1000 and isinstance(statistics["seed"], int)
    board = statistics["leaderboards"]["c_index"]
    names = [e["submission"] for e in ranking["leaderboards"][0]["entries"]]
    assert set(board) == {*names, "pairwise", "kendall_tau"}
    assert sum(board[n]["p_first"] for n in names) == pytest.approx(1.0)
    for entry in ranking["leaderboards"][0]["entries"]:
        low, high = board[entry["submission"]]["value_ci"]["aggregates.c_index"]
        assert low <= high and 1 <= board[entry["submission"]]["rank_ci"][0] <= board[entry["submission"]]["rank_ci"][1]
    for a in names:
        for b in names:
            if a != b:
                assert board["pairwise"][a][b]["p_better"] + board["pairwise"][b][a]["p_better"] == pytest.approx(1.0)
    assert -1 <= board["kendall_tau"] <= 1


def test_outputs_are_the_same_bytes_run_after_run(task2, tmp_path):
    output, _ = task2
    leaderboard("hecktor2025-task2", tmp_path, "--workers", "2")
    assert output_files(tmp_path) == output_files(output)


def test_report_and_charts_are_written(task2):
    output, _ = task2
    html = (output / "report.html").read_text()
    assert "<svg" in html and "team-a" in html
    charts = sorted((output / "charts").glob("*.vl.json"))
    assert charts and all(json.loads(c.read_text())["$schema"].startswith("https://vega.github.io/schema/vega-lite/v5")
                          for c in charts)


def test_metrics_mode_ranks_the_same_and_has_no_statistics(task2, tmp_path):
    output, ranking = task2
    files = [str(p) for p in sorted((output / "submissions").glob("*/metrics.json"))]
    _, from_files = leaderboard("hecktor2025-task2", tmp_path, "--metrics", submissions=files)
    assert from_files["leaderboards"] == ranking["leaderboards"]
    assert from_files["statistics"] is None and from_files["excluded"] == []
    assert any("without --metrics" in note for note in from_files["notes"])


def test_nested_borda_tie_method_is_a_setting(tmp_path):
    _, average = leaderboard("hecktor2025-task1", tmp_path / "average", "--workers", "1", "--resamples", "50")
    _, minimum = leaderboard("hecktor2025-task1", tmp_path / "min", "--workers", "1", "--resamples", "50",
                             "--tie-method", "min")
    for ranking, method in ((average, "average"), (minimum, "min")):
        (board,) = ranking["leaderboards"]
        assert board["name"] == "borda" and f"--tie-method {method}" in board["rule"]
        entries = board["entries"]
        p = np.array([e["values"]["aggregates.gtvp_dsc_mean"] for e in entries])
        d = np.array([e["values"]["aggregates.gtvn_dsc_agg"] for e in entries])
        f = np.array([e["values"]["aggregates.gtvn_f1_agg"] for e in entries])
        gtvn = rankdata(rankdata(-d, method=method) + rankdata(-f, method=method), method=method)
        borda = rankdata(-p, method=method) + gtvn
        assert [e["rank"] for e in entries] == rankdata(borda, method="min").astype(int).tolist()
        assert [e["partial_ranks"]["borda"] for e in entries] == borda.tolist()
        assert [e["partial_ranks"]["gtvn"] for e in entries] == gtvn.tolist()


@pytest.mark.parametrize("problem", ["duplicate", "reserved", "missing"])
def test_usage_errors_exit_2_with_one_line(tmp_path, problem):
    team = teams("hecktor2025-task2")[0]
    if problem == "duplicate":
        other = tmp_path / "elsewhere" / Path(team).name
        other.parent.mkdir()
        os.symlink(team, other)
        submissions = [team, str(other)]
    elif problem == "reserved":
        (tmp_path / "pairwise").symlink_to(team)
        submissions = [str(tmp_path / "pairwise")]
    else:
        submissions = [str(tmp_path / "nowhere")]
    result = run("-m", "evaluation.leaderboard", "hecktor2025-task2", *submissions, "--output", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and result.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "out" / "ranking.json").exists()


def test_a_bad_ground_truth_is_exit_3(tmp_path):
    (tmp_path / "gt").mkdir()
    result = run("-m", "evaluation.leaderboard", "hecktor2025-task2", *teams("hecktor2025-task2"), "--output",
                 str(tmp_path / "out"), "--ground-truth", str(tmp_path / "gt"))
    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out" / "ranking.json").exists()


# ---- a real Dask cluster -----------------------------------------------------------------------


@pytest.fixture
def dask_cluster(tmp_path):
    """A scheduler and two single-threaded worker processes, as an organizer would start them."""
    with start_dask_cluster(tmp_path, ROOT, ENV) as (address, _):
        yield address


def test_a_dask_cluster_gives_the_same_bytes_as_one_and_two_workers(dask_cluster, tmp_path):
    challenge = "hecktor2025-task1"  # its cases go to the workers one by one
    _one, _ = leaderboard(challenge, tmp_path / "one", "--workers", "1", "--resamples", "200")
    leaderboard(challenge, tmp_path / "two", "--workers", "2", "--resamples", "200")
    cluster, ranking = leaderboard(challenge, tmp_path / "dask", "--scheduler", dask_cluster, "--resamples", "200")
    assert "Dask cluster" in cluster.stdout and "2 worker(s)" in cluster.stdout
    expected = output_files(tmp_path / "one")
    assert output_files(tmp_path / "two") == expected
    assert output_files(tmp_path / "dask") == expected
    assert ranking["excluded"], "the bundled invalid team is excluded on the cluster too"


def test_the_leaderboard_libraries_stay_out_of_the_image():
    """dask, distributed, altair and vl-convert are pinned in requirements-leaderboard.txt only;
    the image installs requirements.txt, and no scoring module imports them."""
    def pins(name):
        return {line.split("==")[0].lower() for line in (ROOT / name).read_text().splitlines() if "==" in line}

    leaderboard_only = {"dask", "distributed", "altair", "vl-convert-python"}
    assert leaderboard_only <= pins("requirements-leaderboard.txt")
    assert not leaderboard_only & pins("requirements.txt")
    assert "requirements-leaderboard" not in (ROOT / "Dockerfile").read_text()
    # The scheduler (evaluation/scheduling.py) is the run's and the final ranking's: it imports
    # dask only inside what a cluster address reaches, which the image's command never passes.
    cluster_only = {ROOT / "evaluation" / "scheduling.py"}
    for path in (ROOT / "evaluation").rglob("*.py"):
        if "leaderboard" in path.relative_to(ROOT / "evaluation").parts:
            continue
        tree = ast.parse(path.read_text())
        top_level = set(tree.body)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                leaderboard_modules = {n.partition(".")[0] for n in names} & {"dask", "distributed", "altair",
                                                                               "vl_convert"}
                if leaderboard_modules:
                    assert path in cluster_only and node not in top_level, (path, leaderboard_modules)


def test_a_run_on_workers_imports_no_leaderboard_library(tmp_path):
    """The image's command, on a pool of workers, through the scheduler the final ranking shares:
    dask and distributed are never imported (the image does not have them)."""
    probe = ("import runpy, sys\n"
             "sys.argv = ['evaluation', 'hecktor2025-task1', '--input', sys.argv[1], '--ground-truth', sys.argv[2],"
             " '--output', sys.argv[3], '--workers', '2']\n"
             "try:\n    runpy.run_module('evaluation', run_name='__main__')\n"
             "except SystemExit as exit:\n    assert exit.code in (0, None), exit.code\n"
             "print(sorted(m for m in sys.modules if m.partition('.')[0] in ('dask', 'distributed')))\n")
    done = subprocess.run([sys.executable, "-c", probe, str(ROOT / "test" / "hecktor2025-task1" / "input"),
                           str(ROOT / "ground-truth" / "hecktor2025-task1"), str(tmp_path / "out")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    if "in this process" in done.stdout:
        pytest.skip("this machine allows one worker process")
    assert "with 2 worker(s)" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "out" / "metrics.json").is_file()
