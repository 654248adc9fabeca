"""Chart file settings (issue 19): every one checked whole before scoring starts, and a failed run
leaves no chart behind. Generic over every challenge key and each of its chart settings (the
settings declared output_file=True), so a challenge added later is covered without a list here.
Each case is a real run of the command line (the `evaluate` fixture) on the bundled example, with
a config.json in a copy of the bundled ground truth."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import pytest

from evaluation.challenges import available_challenges
from evaluation.platform.outputs import NAME_MAX, output_file_problem
from tests.common import SLOW
from tests.test_charts import ground_truth_with

ROOT = Path(__file__).resolve().parents[1]


def chart_settings(challenge: str) -> list[str]:
    return [f.name for f in dataclasses.fields(available_challenges()[challenge].settings_class)
            if f.metadata.get("output_file")]


CHART_SETTINGS = [(challenge, setting) for challenge in sorted(available_challenges())
                  for setting in chart_settings(challenge)]
PAIRS = [(challenge, first, second) for challenge in sorted(available_challenges())
         for first, second in itertools.permutations(chart_settings(challenge), 2)]
LONGEST = NAME_MAX - 14  # ".<stem>-<12 hex digits>.json", the temporary name, must fit NAME_MAX


def slow(cases):
    return [pytest.param(*case, marks=pytest.mark.slow) if case[0] in SLOW else case for case in cases]


def files_in(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) if folder.exists() else []


def refused_before_scoring(run, *words: str) -> None:
    assert run.code == 3, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert lines == [run.last_error_line]
    assert run.last_error_line.startswith("The evaluation could not run, through no fault of the submission")
    for word in words:
        assert word in run.last_error_line, run.last_error_line
    assert "Scoring" not in run.stdout  # refused when the settings are read
    assert files_in(run.output) == []  # no chart, no metrics.json, no folder


def test_every_challenge_with_charts_is_tried():
    assert {challenge for challenge, _ in CHART_SETTINGS} == {
        name for name, cls in available_challenges().items() if cls.result_charts}
    assert PAIRS  # some challenge draws two charts


BAD_NAMES = {
    "newline before the folder separator": "sub\n/x.json",
    "final newline": "x.json\n",
    "newline inside": "x\n.json",
    "temporary name too long": "a" * (LONGEST - 4) + ".json",
    "folder name too long": "f" * (NAME_MAX - 4) + "/x.json",
    "inside metrics.json": "metrics.json/x.json",
    "climbing": "../x.json",
    "absolute": "/tmp/x.json",
    "tab": "x\t.json",
    "non-ASCII": "graphique-é.json",
}


@pytest.mark.parametrize("what", sorted(BAD_NAMES))
@pytest.mark.parametrize("challenge, setting", CHART_SETTINGS)
def test_a_bad_chart_file_name_is_refused_before_scoring(challenge, setting, what, evaluate, tmp_path):
    truth = ground_truth_with(tmp_path, challenge, {setting: BAD_NAMES[what]})
    run = evaluate(challenge, ROOT / "test" / challenge / "input", truth)
    refused_before_scoring(run, f"'{setting}'")


def test_the_longest_names_are_exactly_at_the_limits():
    assert output_file_problem("a" * (LONGEST - 5) + ".json") is None
    assert output_file_problem("a" * (LONGEST - 4) + ".json") is not None
    assert output_file_problem("f" * (NAME_MAX - 7) + "/x.json") is None  # 255 characters in all
    assert output_file_problem("sub/x.json") is None and output_file_problem("sub\n/x.json") is not None


@pytest.mark.parametrize("challenge, setting", slow(CHART_SETTINGS))
def test_the_longest_accepted_name_is_written(challenge, setting, evaluate, tmp_path):
    """A file name of LONGEST characters in a folder: the run scores and writes it (its temporary
    name fits NAME_MAX)."""
    name = "d/" + "c" * (LONGEST - 5) + ".json"
    truth = ground_truth_with(tmp_path, challenge, {setting: name})
    run = evaluate(challenge, ROOT / "test" / challenge / "input", truth, "--workers", "1")
    assert run.code == 0, run.stderr
    assert files_in(run.output) == ["d", name, "metrics.json"]
    assert json.loads((run.output / name).read_text())["$schema"].startswith("https://vega.github.io/schema/")


@pytest.mark.parametrize("first_name, second_name, words", [
    ("a.json", "a.json/b.json", "needs as a folder"),
    ("A.json", "a.json/b.json", "needs as a folder"),  # a case-insensitive file system
    ("c.json", "C.JSON", "both name the file"),
    ("sub/c.json", "sub/c.json", "both name the file"),
])
@pytest.mark.parametrize("challenge, first, second", PAIRS)
def test_chart_files_that_collide_are_refused_before_scoring(challenge, first, second, first_name, second_name, words,
                                                             evaluate, tmp_path):
    truth = ground_truth_with(tmp_path, challenge, {first: first_name, second: second_name})
    run = evaluate(challenge, ROOT / "test" / challenge / "input", truth)
    refused_before_scoring(run, f"'{first}'", f"'{second}'", words)


@pytest.mark.parametrize("challenge, first, second", slow(PAIRS))
def test_a_run_that_fails_after_a_chart_leaves_no_chart(challenge, first, second, evaluate, tmp_path):
    """The second chart cannot be written (a file of the output folder is where its folder
    goes): exit 3 after scoring, and the first chart and the folder made for it are gone; the
    organizer's own file stays."""
    truth = ground_truth_with(tmp_path, challenge, {first: "aa/first.json", second: "zz/second.json"})
    output = tmp_path / "output-0"  # the evaluate fixture's first output folder
    output.mkdir()
    (output / "zz").write_text("mine\n")
    run = evaluate(challenge, ROOT / "test" / challenge / "input", truth, "--workers", "1")
    assert run.output == output
    assert run.code == 3, run.stderr
    assert "zz/second.json cannot be written" in run.last_error_line
    assert files_in(output) == ["zz"] and (output / "zz").read_text() == "mine\n"
