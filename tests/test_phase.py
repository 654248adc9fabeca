"""python -m evaluation.phase: the leaderboard settings an organizer pastes into a grand-challenge.org
phase. Checked against the platform's own rules, written here from its Phase model: the JSON
schema of extra_results_columns, the scalar fields' constraints, and paths looked up by splitting
on dots, dictionary keys only; every path must be a finite number in every bundled example."""

import dataclasses
import json
import math
import os
import subprocess
import sys

import jsonschema
import pytest

from evaluation.challenges import available_challenges, folder_of
from evaluation.declarations.columns import Column, Leaderboard
from evaluation.phase.command import main
from tests.cli_runs import DROP_ENV, ROOT

CHALLENGES = available_challenges()

# The platform's schema of Phase.extra_results_columns (JSON Schema draft 6), from its description:
# a list of objects with exactly title, path, order and optionally error_path, exclude_from_ranking.
EXTRA_RESULTS_COLUMNS_SCHEMA = {
    "$schema": "http://json-schema.org/draft-06/schema#",
    "type": "array",
    "items": {
        "type": "object",
        "required": ["title", "path", "order"],
        "additionalProperties": False,
        "properties": {
            "title": {"type": "string"},
            "path": {"type": "string"},
            "error_path": {"type": "string"},
            "order": {"type": "string", "enum": ["asc", "desc"]},
            "exclude_from_ranking": {"type": "boolean"},
        },
    },
}
PHASE_FIELDS = ["score_title", "score_jsonpath", "score_error_jsonpath", "score_default_sort",
                "score_decimal_places", "extra_results_columns", "scoring_method_choice"]

# Settings that change a leaderboard beyond the `choices` of a field (tried one at a time too).
EXTRA_VARIANTS = {
    "csv2026": [{"baseline_time_seconds": 40.0}, {"baseline_time_seconds": None}],
    "hecktor2025-task2": [{"confidence_level": 90.0}],
    "hecktor2025-task3": [{"confidence_level": 90.0}],
}


def settings_variants(name):
    """(label, settings) of a challenge: its defaults, its bundled config.json, every choice of
    every setting with choices, and EXTRA_VARIANTS, each read as config.json is."""
    cls = CHALLENGES[name].settings_class
    variants = [("defaults", cls()), ("bundled", cls.from_ground_truth(ROOT / "ground-truth" / name))]
    for field in dataclasses.fields(cls):
        for choice in field.metadata.get("choices") or ():
            variants.append((f"{field.name}={choice}", cls.from_mapping({field.name: choice})))
    for config in EXTRA_VARIANTS.get(name, []):
        variants.append((json.dumps(config), cls.from_mapping(config)))
    return variants


def all_leaderboards(name):
    return [(label, board) for label, settings in settings_variants(name)
            for board in CHALLENGES[name].phase_leaderboards(settings)]


def platform_lookup(metrics, path):
    """The value at a leaderboard path as the platform finds it: split on dots, each part a key
    of a dictionary (never a list index). KeyError when there is none."""
    value = metrics
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            raise KeyError(f"{path}: no key {key!r} there")
        value = value[key]
    return value


def is_finite_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_phase_fields(fields):
    """The platform's constraints on one leaderboard's fields."""
    assert list(fields) == PHASE_FIELDS
    jsonschema.Draft6Validator(EXTRA_RESULTS_COLUMNS_SCHEMA).validate(fields["extra_results_columns"])
    assert isinstance(fields["score_title"], str) and 0 < len(fields["score_title"].strip()) <= 64
    assert isinstance(fields["score_jsonpath"], str) and fields["score_jsonpath"]
    assert isinstance(fields["score_error_jsonpath"], str)
    assert fields["score_default_sort"] in ("asc", "desc")
    places = fields["score_decimal_places"]
    assert isinstance(places, int) and not isinstance(places, bool) and places >= 0
    assert fields["scoring_method_choice"] in ("abs", "avg", "med")


def board_paths(fields):
    """Every path one leaderboard's fields read: the score, its error, each column and its error."""
    paths = [fields["score_jsonpath"], fields["score_error_jsonpath"]]
    for column in fields["extra_results_columns"]:
        paths += [column["path"], column.get("error_path", "")]
    return [p for p in paths if p]


def run_phase(*args):
    env = {k: v for k, v in os.environ.items() if k not in DROP_ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "evaluation.phase", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def printed(capsys, *args):
    assert main([*map(str, args)]) == 0
    return json.loads(capsys.readouterr().out)


# ---- (1) what the platform accepts ----------------------------------------------------------


@pytest.mark.parametrize("name", CHALLENGES)
def test_every_leaderboard_passes_the_platforms_validation(name):
    boards = all_leaderboards(name)
    assert boards
    for _, board in boards:
        check_phase_fields(board.phase_fields())


def test_the_schema_refuses_what_the_platform_refuses():
    """The checks above can fail: the platform's schema rejects a key it does not know, a missing
    order and an order that is neither asc nor desc."""
    validator = jsonschema.Draft6Validator(EXTRA_RESULTS_COLUMNS_SCHEMA)
    good = {"title": "AUC", "path": "aggregates.auc", "order": "desc"}
    assert validator.is_valid([good, {**good, "error_path": "aggregates.auc_sd", "exclude_from_ranking": True}])
    for bad in ({**good, "decimals": 3}, {"title": "AUC", "path": "aggregates.auc"}, {**good, "order": "descending"},
                {**good, "exclude_from_ranking": "true"}, {**good, "error_path": None}):
        assert not validator.is_valid([bad]), bad


# Per challenge, the score path of each leaderboard of its phase, stated from its docs (a challenge
# not here gets the generic check: one leaderboard per distinct score path).
SCORE_PATHS = {"camelyon16": ["aggregates.slide_auc", "aggregates.froc_score"]}


@pytest.mark.parametrize("name", CHALLENGES)
def test_each_leaderboard_scores_its_own_path(name):
    cls = CHALLENGES[name]
    scores = [b.score.path for b in cls.phase_leaderboards(cls.settings_class())]
    assert scores and len(set(scores)) == len(scores)
    assert scores == SCORE_PATHS.get(name, scores)
    if name not in SCORE_PATHS:  # the documented default: one leaderboard a phase
        assert len(scores) == 1


def test_a_leaderboard_the_platform_would_misread_cannot_be_declared():
    score = Column("Score", "aggregates.score", "desc")
    with pytest.raises(ValueError, match="more than one column"):  # the platform ranks a path once
        Leaderboard(score, 4, "avg", (Column("Again", "aggregates.score", "desc"),))
    with pytest.raises(ValueError, match="64"):
        Leaderboard(Column("x" * 65, "aggregates.score", "desc"), 4, "abs")
    with pytest.raises(ValueError, match="order"):
        Column("Score", "aggregates.score", "descending")
    with pytest.raises(ValueError, match="dot-separated"):
        Column("Score", "aggregates..score", "desc")
    with pytest.raises(ValueError, match="scoring method"):
        Leaderboard(score, 4, "mean")
    with pytest.raises(ValueError, match="decimal"):
        Leaderboard(score, -1, "abs")


# ---- (2) every path is a finite number in the bundled examples ------------------------------


@pytest.mark.parametrize("name", CHALLENGES)
def test_every_path_is_a_finite_number_in_the_bundled_example(name):
    metrics = json.loads((ROOT / "test" / name / "expected_metrics.json").read_text())
    bundled = CHALLENGES[name].settings_class.from_ground_truth(ROOT / "ground-truth" / name)
    # The example was made with the bundled settings: that phase's leaderboards read it whole.
    for board in CHALLENGES[name].phase_leaderboards(bundled):
        for path in board_paths(board.phase_fields()):
            value = platform_lookup(metrics, path)
            assert is_finite_number(value), f"{name}: {path} is {value!r}"
    # Any other settings' leaderboard reads keys the example has too (only values change).
    for label, board in all_leaderboards(name):
        for path in board_paths(board.phase_fields()):
            assert is_finite_number(platform_lookup(metrics, path)), f"{name} ({label}): {path}"


def test_the_platform_lookup_takes_dictionary_keys_only():
    metrics = {"a": {"b": [0.5, 0.7]}, "c.d": 1.0}
    assert platform_lookup(metrics, "a.b") == [0.5, 0.7]
    for path in ("a.b.0", "c.d", "a.x"):
        with pytest.raises(KeyError):
            platform_lookup(metrics, path)


# ---- (3) the command, as a process ----------------------------------------------------------


def test_the_command_prints_json_in_a_process_of_its_own():
    done = run_phase("camelyon16")
    assert done.returncode == 0, done.stderr
    fields = json.loads(done.stdout)
    assert isinstance(fields, list) and len(fields) == 2
    for board in fields:
        check_phase_fields(board)
    assert done.stdout.startswith("[\n  {\n    \"score_title\": ")  # indented, in the platform's field order


def test_unknown_challenge_exits_2_with_one_line():
    done = run_phase("rare27")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Unknown challenge 'rare27'" in done.stderr and "rare26" in done.stderr


def test_help_names_the_option():
    done = run_phase("--help")
    assert done.returncode == 0 and "--ground-truth" in done.stdout


@pytest.mark.parametrize("config, message", [
    ('{"baseline_time_seconds": "40"}', "setting 'baseline_time_seconds' must be a number, not text."),
    ('{"baseline_time_secs": 40}', "unknown setting(s) 'baseline_time_secs'"),
    ('{"baseline_time_seconds": NaN}', "'baseline_time_seconds' is NaN"),
])
def test_a_bad_config_json_exits_3_with_one_line(tmp_path, capsys, config, message):
    (tmp_path / "config.json").write_text(config)
    assert main(["csv2026", "--ground-truth", str(tmp_path)]) == 3
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and message in captured.err


def test_a_missing_ground_truth_folder_exits_3(tmp_path, capsys):
    assert main(["rare26", "--ground-truth", str(tmp_path / "nowhere")]) == 3
    assert "does not exist" in capsys.readouterr().err


def test_the_default_is_the_bundled_ground_truth(capsys):
    for name, cls in CHALLENGES.items():
        bundled = cls.settings_class.from_ground_truth(ROOT / "ground-truth" / name)
        assert printed(capsys, name) == [b.phase_fields() for b in cls.phase_leaderboards(bundled)]


# ---- (4) settings that change the leaderboard -----------------------------------------------


def test_csv2026_ranks_the_total_only_when_the_phase_is_timed(tmp_path, capsys):
    """An algorithm phase cannot run without baseline_time_seconds (its jobs carry their time):
    it ranks S_total. Without it (a predictions-file phase), score_without_time."""
    for config, score in [({"nsd_tolerance_px": 3}, "aggregates.score_without_time"),
                          ({"baseline_time_seconds": None}, "aggregates.score_without_time"),
                          ({}, "aggregates.score_without_time"),
                          ({"baseline_time_seconds": 40.0, "nsd_tolerance_px": 2}, "aggregates.score_total")]:
        (tmp_path / "config.json").write_text(json.dumps(config))
        (board,) = printed(capsys, "csv2026", "--ground-truth", tmp_path)
        assert board["score_jsonpath"] == score, config
        columns = [c["path"] for c in board["extra_results_columns"]]
        assert ("aggregates.score_time" in columns) == (score == "aggregates.score_total")
    (tmp_path / "config.json").unlink()  # no config.json: the defaults, no baseline
    (board,) = printed(capsys, "csv2026", "--ground-truth", tmp_path)
    assert board["score_jsonpath"] == "aggregates.score_without_time"


def test_csv2026_each_phase_kind_gets_a_leaderboard_its_metrics_fill(evaluate, tmp_path, capsys):
    """End to end on the bundled algorithm example: timed (the bundled config.json sets the
    baseline), every path the printed leaderboard reads is a finite number; without the jobs'
    times the total is null, and the leaderboard printed for a config.json without baseline
    (what such a phase must have) reads only finite numbers."""
    import shutil

    def every_path_finite(board, metrics):
        return all(is_finite_number(platform_lookup(metrics, p)) for p in board_paths(board))

    source = ROOT / "test" / "csv2026" / "input"
    timed_run = evaluate("csv2026", source, ROOT / "ground-truth" / "csv2026")
    assert timed_run.code == 0, timed_run.stderr
    (timed,) = printed(capsys, "csv2026")
    assert timed["score_jsonpath"] == "aggregates.score_total" and every_path_finite(timed, timed_run.metrics)

    untimed_input, ground_truth = tmp_path / "input", tmp_path / "ground-truth"
    shutil.copytree(source, untimed_input)
    shutil.copytree(ROOT / "ground-truth" / "csv2026", ground_truth)
    jobs = json.loads((untimed_input / "predictions.json").read_text())
    (untimed_input / "predictions.json").write_text(json.dumps([{**job, "exec_duration": None} for job in jobs]))
    (ground_truth / "config.json").write_text(json.dumps({"nsd_tolerance_px": 3}))
    untimed_run = evaluate("csv2026", untimed_input, ground_truth)
    assert untimed_run.code == 0, untimed_run.stderr
    assert untimed_run.metrics["aggregates"]["score_total"] is None  # the timed leaderboard would drop it
    (untimed,) = printed(capsys, "csv2026", "--ground-truth", ground_truth)
    assert untimed["score_jsonpath"] == "aggregates.score_without_time"
    assert every_path_finite(untimed, untimed_run.metrics)
    assert not every_path_finite(timed, untimed_run.metrics)


def test_isic_scores_the_target_metric_and_never_repeats_it(capsys, tmp_path):
    for target, repeated in [("balanced_accuracy", "aggregate.balanced_accuracy"), ("auc", "aggregate.auc"),
                             ("ap", "macro_average.ap"), ("dice", "macro_average.dice")]:
        (tmp_path / "config.json").write_text(json.dumps({"target_metric": target}))
        (board,) = printed(capsys, "isic2019", "--ground-truth", tmp_path)
        assert board["score_jsonpath"] == "overall"
        assert repeated not in [c["path"] for c in board["extra_results_columns"]]


def test_isic_and_hecktor_task3_show_their_tie_break_beside_the_score():
    """The platform has no tie-break: ranked on the score alone, the tie-break column shown and
    excluded from ranking."""
    for name, tie_break in [("isic2018", "aggregate.auc"), ("isic2019", "aggregate.auc"),
                            ("hecktor2025-task3", "aggregates.specificity")]:
        (board,) = CHALLENGES[name].leaderboards
        assert board.scoring_method == "abs"
        column = next(c for c in board.extra_columns if c.path == tie_break)
        assert column.exclude_from_ranking and "tie-break" in column.title


def test_hecktor_task1_ranks_on_the_mean_of_the_three_metric_ranks():
    (board,) = CHALLENGES["hecktor2025-task1"].leaderboards
    assert board.scoring_method == "avg"
    assert [c.path for c in board.ranked_columns] == [
        "aggregates.gtvp_dsc_mean", "aggregates.gtvn_dsc_agg", "aggregates.gtvn_f1_agg"]


def test_interval_titles_follow_the_confidence_level(capsys, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"confidence_level": 90}))
    (board,) = printed(capsys, "hecktor2025-task2", "--ground-truth", tmp_path)
    assert [c["title"] for c in board["extra_results_columns"]] == ["C-index, 90% CI lower", "C-index, 90% CI upper"]


# ---- (5) ranked_paths: what metrics.json guarantees finite ----------------------------------


@pytest.mark.parametrize("name", CHALLENGES)
def test_ranked_paths_cover_every_leaderboard_path(name):
    cls = CHALLENGES[name]
    assert cls.leaderboards == cls.phase_leaderboards(cls.settings_class())  # declared = the defaults'
    ranked = set(cls.ranked_paths)
    uncovered = {path for _, board in all_leaderboards(name) for path in board_paths(board.phase_fields())} - ranked
    if name == "csv2026":  # the time scores: null without timing, with a note (csv2026.md)
        from evaluation.challenges.csv2026 import TIMED_PATHS

        assert uncovered == set(TIMED_PATHS)
    else:
        assert uncovered == set()


def test_a_ranked_path_that_is_null_stops_metrics_json():
    """What ranked_paths buys: write_metrics refuses to write a leaderboard value that is not a
    finite number, so a submission never silently drops off."""
    from evaluation.platform.outputs import Undefined, metrics_json

    cls = CHALLENGES["hecktor2025-task2"]
    metrics = {"aggregates": {"c_index": 0.7, "c_index_ci_lower": 0.6, "c_index_ci_upper": Undefined("why")}}
    with pytest.raises(ValueError, match="c_index_ci_upper"):
        metrics_json(metrics, cls.ranked_paths)


# ---- the challenge pages show what the command prints ---------------------------------------

# A challenge's page is docs/challenges/<its folder>.md. Settings whose leaderboard the page also
# shows, per challenge (csv2026: a phase without timing).
PAGE_VARIANTS = {"csv2026": [{"nsd_tolerance_px": 3}]}


@pytest.mark.parametrize("name", CHALLENGES)
def test_the_challenge_page_shows_the_commands_output(name, capsys, tmp_path):
    page = (ROOT / "docs" / "challenges" / f"{folder_of(name)}.md").read_text()
    assert f"python -m evaluation.phase {name}" in page
    main([name])
    assert capsys.readouterr().out.rstrip("\n") in page
    for config in PAGE_VARIANTS.get(name, []):
        (tmp_path / "config.json").write_text(json.dumps(config))
        main([name, "--ground-truth", str(tmp_path)])
        assert capsys.readouterr().out.rstrip("\n") in page
