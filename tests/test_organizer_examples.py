"""`python -m evaluation.examples CHALLENGE --ground-truth GT --output DIR`: the test example an
organizer makes for their own ground truth (evaluation/examples/organizer.py), run as a real
process on the bundled ground truth and on a differently seeded synthetic one, then checked by
fresh runs of the evaluation; its refusals, --force, bad ground truths, config.json and
case-mapping.json; and scripts/make_example.py, which must regenerate the bundled examples byte
for byte without deleting what it did not write."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from evaluation import examples
from evaluation.challenges import available_challenges
from evaluation.platform import synthetic
from evaluation.reading.files import shown_path
from tests.bundled import is_bundled, skip_unless_bundled
from tests.common import SLOW, lookup, params, tree

ROOT = Path(__file__).resolve().parents[1]
WITH_SUBMISSION = sorted(name for name, example in examples.examples().items() if example.submission is not None)
OUTPUTS = {"input", "invalid", "expected_metrics.json"}
def command(*args, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("EVALUATION_CHALLENGE", "EVALUATION_WORKERS")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "evaluation.examples", *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def assert_one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert not lines[0].startswith("Traceback")
    return lines[0]


def check_example(challenge: str, output: Path, stdout: str, evaluate, ground_truth: Path) -> dict:
    """The layout of test/<challenge>/, checked against fresh runs of the evaluation."""
    assert OUTPUTS <= {p.name for p in output.iterdir()}
    assert not [p for p in output.iterdir() if p.name.startswith(".example-in-progress")]  # scratch removed
    assert any((output / "input").iterdir())
    empty = [p for p in output.rglob("*") if p.is_dir() and not any(p.iterdir())]
    assert empty == []  # git keeps no empty folder

    run = evaluate(challenge, output / "input", ground_truth)
    assert run.code == 0, run.stderr
    expected = (output / "expected_metrics.json").read_bytes()
    assert (run.output / "metrics.json").read_bytes() == expected
    metrics = json.loads(expected)
    ranked = available_challenges()[challenge].ranked_paths
    assert ranked
    for path in ranked:
        value = lookup(metrics, path)
        assert isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value), path
        assert f"  {path} = {value}\n" in stdout  # shown to the organizer
    # A perturbed submission, not the ground truth itself: some ranked value strictly between 0 and 1.
    assert any(0 < lookup(metrics, path) < 1 for path in ranked), metrics
    assert str(output / "expected_metrics.json") in stdout

    invalid = sorted((output / "invalid").iterdir())
    assert invalid
    if (output / "input" / "predictions.json").is_file():  # algorithm jobs: the generic one
        assert "missing-case" in [case.name for case in invalid]
    for case in invalid:
        assert {p.name for p in case.iterdir()} == {"input", "expected_error.txt"}
        expected_line = (case / "expected_error.txt").read_text()
        assert expected_line.endswith("\n") and expected_line.count("\n") == 1
        run = evaluate(challenge, case / "input", ground_truth)
        assert (run.code, run.wrote_metrics) == (1, False), (case.name, run.stderr)
        assert run.last_error_line == expected_line.strip()
    return metrics


# ---- every challenge, two ground truths -------------------------------------------------------


def test_every_challenge_has_a_submission_writer():
    """No challenge is left out silently: the command needs Example.submission for each."""
    assert WITH_SUBMISSION == sorted(available_challenges())


@pytest.mark.parametrize("challenge", params(WITH_SUBMISSION))
def test_example_for_the_bundled_ground_truth(challenge, tmp_path, evaluate):
    ground_truth = ROOT / "ground-truth" / challenge
    before = tree(ground_truth)
    output = tmp_path / "example"
    done = command(challenge, "--ground-truth", ground_truth, "--output", output)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    check_example(challenge, output, done.stdout, evaluate, ground_truth)
    assert tree(ground_truth) == before  # only read
    # The bundled submission is the synthetic one; this one is made from the ground truth alone
    # (after an organizer regenerated test/<challenge>/ from their ground truth, it is this one).
    if is_bundled(challenge):
        assert tree(output / "input") != tree(ROOT / "test" / challenge / "input")


@pytest.mark.parametrize("challenge", params(WITH_SUBMISSION))
def test_example_for_another_ground_truth(challenge, tmp_path, evaluate, synthetic_dataset):
    ground_truth = synthetic_dataset(challenge, seed=7) / "ground-truth"  # only read
    before = tree(ground_truth)
    output = tmp_path / "example"
    done = command(challenge, "--ground-truth", ground_truth, "--output", output, "--seed", 5)
    assert done.returncode == 0, done.stderr
    check_example(challenge, output, done.stdout, evaluate, ground_truth)
    assert tree(ground_truth) == before


@pytest.mark.parametrize("challenge", params(WITH_SUBMISSION))
def test_same_seed_same_submission_other_seed_other_submission(challenge, tmp_path):
    """The submission writers alone (the command's run of the evaluation is deterministic by
    the evaluation's own rule, checked above by the fresh runs)."""
    ground_truth, write = ROOT / "ground-truth" / challenge, examples.example(challenge).submission
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        (tmp_path / name).mkdir()
        write(ground_truth, tmp_path / name, seed)
    assert tree(tmp_path / "a") == tree(tmp_path / "b")
    assert tree(tmp_path / "a") != tree(tmp_path / "c")


# ---- the phase's settings and case mapping are honoured ------------------------------------------


def jobs_of(input_dir: Path) -> list[dict]:
    return json.loads((input_dir / "predictions.json").read_text())


def test_rare26_with_other_sockets_and_a_case_mapping(tmp_path, evaluate):
    examples.synthesize("rare26", tmp_path / "synthetic", seed=7, cases=4)
    ground_truth = tmp_path / "synthetic" / "ground-truth"
    stacks = sorted(k.rsplit(".", 1)[0] for k in json.loads((ground_truth / "test_metadata.json").read_text()))
    mapping = {"endoscopy-A.mha": stacks[0], "endoscopy-B": stacks[2]}  # with and without extension
    synthetic.write_json(ground_truth / "case-mapping.json", mapping)
    synthetic.write_json(ground_truth / "config.json", {"input_socket": "esophagus-stack",
                                                        "output_socket": "frame-likelihoods", "repetitions": 50})
    output = tmp_path / "example"
    done = command("rare26", "--ground-truth", ground_truth, "--output", output)
    assert done.returncode == 0, done.stderr
    metrics = check_example("rare26", output, done.stdout, evaluate, ground_truth)
    assert metrics["settings"]["repetitions"] == 50
    jobs = jobs_of(output / "input")
    assert {job["inputs"][0]["socket"]["slug"] for job in jobs} == {"esophagus-stack"}
    assert {job["outputs"][0]["socket"]["slug"] for job in jobs} == {"frame-likelihoods"}
    names = sorted(job["inputs"][0]["image"]["name"] for job in jobs)
    assert names == sorted(["endoscopy-A.mha", "endoscopy-B", f"{stacks[1]}.tiff", f"{stacks[3]}.tiff"])
    for job in jobs:
        assert (output / "input" / job["pk"] / "output" / "frame-likelihoods.json").is_file()


def test_isic2019_with_other_sockets_and_a_case_mapping(tmp_path, evaluate):
    examples.synthesize("isic2019", tmp_path / "synthetic", seed=7, cases=30)
    ground_truth = tmp_path / "synthetic" / "ground-truth"
    ids = [line.split(",")[0] for line in (ground_truth / "truth.csv").read_text().splitlines()[1:]]
    mapping = {f"photo-{n:03d}.png": image for n, image in enumerate(ids[:10])}
    synthetic.write_json(ground_truth / "case-mapping.json", mapping)
    synthetic.write_json(ground_truth / "config.json", {"input_socket": "skin-photo", "output_socket": "class-scores",
                                                        "target_metric": "auc"})
    output = tmp_path / "example"
    done = command("isic2019", "--ground-truth", ground_truth, "--output", output, "--seed", 1)
    assert done.returncode == 0, done.stderr
    metrics = check_example("isic2019", output, done.stdout, evaluate, ground_truth)
    assert metrics["overall"] == metrics["macro_average"]["auc"]  # target_metric applied
    jobs = jobs_of(output / "input")
    assert {job["inputs"][0]["socket"]["slug"] for job in jobs} == {"skin-photo"}
    assert {job["outputs"][0]["socket"]["slug"] for job in jobs} == {"class-scores"}
    names = {job["inputs"][0]["image"]["name"] for job in jobs}
    assert names == set(mapping) | {f"{image}.jpg" for image in ids[10:]}


@pytest.mark.slow
def test_camelyon16_ground_truth_with_other_slide_names(tmp_path, evaluate):
    """Slides not named Test_*, Normal first, a lesion-only exclusion: the invalid submissions
    are made for this ground truth, not the bundled names."""
    examples.synthesize("camelyon16", tmp_path / "synthetic", seed=7)
    ground_truth = tmp_path / "synthetic" / "ground-truth"
    rows = (ground_truth / "reference.csv").read_text().splitlines()
    renamed = {}
    for row in rows[1:]:
        slide = row.split(",")[0]
        renamed[slide] = f"node_{slide[-3:]}" if slide != "Test_001" else "zz_last_tumor"
    text = (ground_truth / "reference.csv").read_text()
    for old, new in renamed.items():
        text = text.replace(f"{old},", f"{new},")
        mask = ground_truth / "masks" / f"{old}.tif"
        if mask.exists():
            mask.rename(ground_truth / "masks" / f"{new}.tif")
    (ground_truth / "reference.csv").write_text(text)
    synthetic.write_json(ground_truth / "config.json", {"excluded_slides": ["node_049"],
                                                        "excluded_from_lesion_evaluation": ["node_114"]})
    output = tmp_path / "example"
    done = command("camelyon16", "--ground-truth", ground_truth, "--output", output)
    assert done.returncode == 0, done.stderr
    check_example("camelyon16", output, done.stdout, evaluate, ground_truth)
    assert not (output / "input" / "node_049.csv").exists() and not (output / "input" / "node_114.csv").exists()


# ---- what the command refuses --------------------------------------------------------------------


def test_existing_example_is_refused_without_force(tmp_path):
    output = tmp_path / "example"
    (output / "input").mkdir(parents=True)
    (output / "input" / "mine.txt").write_text("keep")
    (output / "expected_metrics.json").write_text("{}")
    (output / "notes.txt").write_text("mine")
    before = tree(output)
    done = command("rare26", "--ground-truth", ROOT / "ground-truth" / "rare26", "--output", output)
    assert done.returncode == 2  # a usage error, as every command's
    line = assert_one_line(done.stderr)
    assert "input" in line and "expected_metrics.json" in line and "--force" in line
    assert tree(output) == before
    assert sorted(p.name for p in output.iterdir()) == ["expected_metrics.json", "input", "notes.txt"]


def test_force_replaces_only_the_example(tmp_path, evaluate):
    output = tmp_path / "example"
    for stale in ("input/old-job/output/x.json", "invalid/old/input/y.json", "invalid/old/expected_error.txt"):
        (output / stale).parent.mkdir(parents=True, exist_ok=True)
        (output / stale).write_text("stale")
    (output / "expected_metrics.json").write_text("stale")
    (output / "README.md").write_text("my notes")
    (output / "more").mkdir()
    (output / "more" / "data.txt").write_text("mine too")
    ground_truth = ROOT / "ground-truth" / "rare26"
    done = command("rare26", "--ground-truth", ground_truth, "--output", output, "--force")
    assert done.returncode == 0, done.stderr
    assert (output / "README.md").read_text() == "my notes"
    assert (output / "more" / "data.txt").read_text() == "mine too"
    assert not (output / "input" / "old-job").exists() and not (output / "invalid" / "old").exists()
    check_example("rare26", output, done.stdout, evaluate, ground_truth)


def test_output_inside_the_ground_truth_is_refused(tmp_path):
    examples.synthesize("rare26", tmp_path, seed=7, cases=2)
    ground_truth = tmp_path / "ground-truth"
    before = tree(ground_truth)
    done = command("rare26", "--ground-truth", ground_truth, "--output", ground_truth / "example")
    assert done.returncode == 2  # a usage error, as every command's
    assert "inside the ground-truth folder" in assert_one_line(done.stderr)
    assert tree(ground_truth) == before and not (ground_truth / "example").exists()


def test_ground_truth_inside_what_would_be_replaced_is_refused(tmp_path):
    examples.synthesize("rare26", tmp_path / "example" / "input" / "truth", seed=7, cases=2)
    ground_truth = tmp_path / "example" / "input" / "truth" / "ground-truth"
    done = command("rare26", "--ground-truth", ground_truth, "--output", tmp_path / "example", "--force")
    assert done.returncode == 2  # a usage error, as every command's
    assert "is inside" in assert_one_line(done.stderr)
    assert (ground_truth / "test_metadata.json").is_file()


@pytest.mark.parametrize("bad, reason", [
    ({"test_metadata.json": "[]"}, "must be a non-empty object"),
    ({"config.json": '{"repetitions": 0}'}, "'repetitions'"),
    ({"config.json": '{"repetition": 10}'}, "unknown setting"),
    ({"case-mapping.json": '{"stack.tiff": "no_such_stack"}'}, "case-mapping.json maps"),
])
def test_bad_ground_truth_exits_3_with_one_line(tmp_path, bad, reason):
    examples.synthesize("rare26", tmp_path, seed=7, cases=2)
    ground_truth = tmp_path / "ground-truth"
    for name, text in bad.items():
        (ground_truth / name).write_text(text)
    output = tmp_path / "example"
    done = command("rare26", "--ground-truth", ground_truth, "--output", output)
    assert done.returncode == 3
    line = assert_one_line(done.stderr)
    assert line.startswith(f"The ground truth in {ground_truth} cannot be used: ") and reason in line
    assert not output.exists()  # nothing written


def test_ground_truth_refused_only_by_the_run_exits_3(tmp_path):
    """A ground truth that loads but cannot be scored (CAMELYON16 masks with no lesion beyond
    ITC) is found by the evaluation of the generated submission: exit 3, old example kept."""
    import numpy as np
    import tifffile

    examples.synthesize("camelyon16", tmp_path / "synthetic", seed=7)
    ground_truth = tmp_path / "synthetic" / "ground-truth"
    for mask in (ground_truth / "masks").iterdir():
        tiny = np.zeros((192, 288), dtype=np.uint8)
        tiny[50:52, 50:52] = 255  # one ITC region
        mask.unlink()
        tifffile.imwrite(mask, tiny)
    output = tmp_path / "example"
    (output / "input").mkdir(parents=True)
    (output / "input" / "previous.txt").write_text("previous example")
    done = command("camelyon16", "--ground-truth", ground_truth, "--output", output, "--force")
    assert done.returncode == 3
    assert "no lesion beyond isolated tumor cells" in assert_one_line(done.stderr)
    assert sorted(p.name for p in output.iterdir()) == ["input"]
    assert (output / "input" / "previous.txt").read_text() == "previous example"


def test_bad_mask_found_by_the_submission_writer_exits_3(tmp_path):
    """CAMELYON16 masks are first read by the submission writer (constructing the evaluation
    does not decode them): a broken one is the ground truth's fault, exit 3, nothing left."""
    examples.synthesize("camelyon16", tmp_path / "synthetic", seed=7)
    ground_truth = tmp_path / "synthetic" / "ground-truth"
    (ground_truth / "masks" / "Test_001.tif").write_bytes(b"II*\x00 not a tiff at all")
    output = tmp_path / "example"
    done = command("camelyon16", "--ground-truth", ground_truth, "--output", output)
    assert done.returncode == 3
    line = assert_one_line(done.stderr)
    assert line.startswith("Writing the valid submission stopped on the ground truth: ") and "Test_001" in line
    assert not output.exists()


@pytest.mark.parametrize("args, words", [
    (["no-such-challenge", "--ground-truth", ROOT / "ground-truth" / "rare26", "--output", "x"], "no-such-challenge"),
    (["rare26", "--ground-truth", ROOT / "ground-truth" / "rare26"], "--output"),
    (["rare26", "--ground-truth", ROOT / "no-such-folder", "--output", "x"], "does not exist"),
    (["rare26", "--ground-truth", ROOT / "ground-truth" / "rare26", "--output", "x", "--cases", "3"], "--cases"),
    (["rare26", "--out", "x", "--output", "y"], "--output"),
    (["rare26", "--ground-truth", ROOT / "ground-truth" / "rare26", "--output", "x", "--seed", "-1"], "--seed"),
])
def test_bad_arguments_exit_2_with_one_line(tmp_path, args, words):
    args = [tmp_path / a if a in ("x", "y") else a for a in args]
    done = command(*args)
    assert done.returncode == 2  # a usage error, as every command's
    assert words in assert_one_line(done.stderr)
    assert not (tmp_path / "x").exists()


def test_synthetic_mode_still_works(tmp_path):
    done = command("rare26", "--out", tmp_path, "--seed", 2, "--cases", 2)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ground-truth" / "test_metadata.json").is_file()
    assert len(jobs_of(tmp_path / "input")) == 2


# ---- scripts/make_example.py -------------------------------------------------------------------


def make_example_module():
    spec = importlib.util.spec_from_file_location("make_example", ROOT / "scripts" / "make_example.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("challenge", params(sorted(examples.examples())))
def test_make_example_regenerates_the_bundled_example_byte_for_byte(challenge, tmp_path):
    """All of it: the ground truth, input/, expected_metrics.json, invalid/ and the teams of
    leaderboard/ (the one command for a challenge's bundled files)."""
    module = make_example_module()

    def made(folder):  # what make_example writes (any other file of test/<challenge>/ is not its)
        return {k: v for k, v in tree(folder).items() if k.split("/")[0] in module.outputs(challenge)}

    skip_unless_bundled(challenge)
    assert "leaderboard" in module.outputs(challenge) or examples.example(challenge).lineup is None
    module.main(challenge, root=tmp_path)
    assert tree(tmp_path / "ground-truth" / challenge) == tree(ROOT / "ground-truth" / challenge)
    assert made(tmp_path / "test" / challenge) == made(ROOT / "test" / challenge)
    empty = [p for p in tmp_path.rglob("*") if p.is_dir() and not any(p.iterdir())]
    assert empty == []


def test_make_example_refuses_then_force_keeps_other_files(tmp_path):
    from evaluation.errors import UsageError

    (tmp_path / "test" / "rare26").mkdir(parents=True)
    (tmp_path / "test" / "rare26" / "README.md").write_text("notes")
    (tmp_path / "test" / "rare26" / "expected_metrics.json").write_text("old")
    module = make_example_module()
    with pytest.raises(UsageError, match="--force"):
        module.main("rare26", root=tmp_path)
    assert tree(tmp_path) == {"test/rare26/README.md": b"notes", "test/rare26/expected_metrics.json": b"old"}
    module.main("rare26", force=True, root=tmp_path)
    assert (tmp_path / "test" / "rare26" / "README.md").read_text() == "notes"
    assert (tmp_path / "test" / "rare26" / "expected_metrics.json").read_bytes() == \
        (ROOT / "test" / "rare26" / "expected_metrics.json").read_bytes()


# ---- names from the organizer's ground truth and config.json (issue 19) ----------------------------
# Generic over every challenge with a submission writer: a name a writer may turn into a file path
# is tried with a value leaving the folder and an absolute one. Whatever the command then does, it
# writes nothing outside --output; a refusal is exit 3 naming where the name comes from.

DEPTH = 12  # --output this deep in tmp_path: a path climbing out of it still lands inside tmp_path


def free_text_settings(challenge: str) -> list[str]:
    """The settings of `challenge` that are free text (no choices, not a chart file): sockets."""
    settings_class = available_challenges()[challenge].settings_class
    hints = typing.get_type_hints(settings_class)
    return [f.name for f in dataclasses.fields(settings_class) if hints[f.name] is str
            and f.metadata.get("choices") is None and not f.metadata.get("output_file")]


FREE_TEXT = [(challenge, setting) for challenge in WITH_SUBMISSION for setting in free_text_settings(challenge)]


def hostile_values(root: Path) -> dict[str, str]:
    return {"climbing": "../" * (DEPTH - 2) + "X", "absolute": str(root / "absolute" / "X")}


def deep_output(root: Path) -> Path:
    return root.joinpath(*[f"d{n}" for n in range(DEPTH)], "example")


def files_outside(root: Path, *kept: Path) -> list[str]:
    """Every file or link under `root` that is not in one of `kept`."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if (p.is_file() or p.is_symlink())
                  and not any(k == p or k in p.parents for k in kept))


def small_ground_truth(challenge: str, folder: Path) -> Path:
    """A synthetic ground truth of a few cases (a full example is built from it quickly)."""
    example = examples.example(challenge)
    examples.synthesize(challenge, folder, seed=7, cases=max(4, 2 * example.min_cases))
    return folder / "ground-truth"


def assert_stayed_inside(done, root: Path, read: Path, output: Path, source: str, name: str) -> None:
    """Exit 0 (the example in `output`) or 3 (one line naming `source` and `name`, nothing
    written), and no file under `root` but those of `read` (the ground truth) and `output`."""
    assert done.returncode in (0, 3), (done.returncode, done.stderr)
    assert files_outside(root, read, output) == []
    if done.returncode == 3:
        line = assert_one_line(done.stderr)
        assert source in line and name in line, line
        assert not output.exists() and not output.parent.exists()  # nothing written at all
    else:
        assert {p.name for p in output.iterdir()} == OUTPUTS


def test_there_are_free_text_settings_to_try():
    assert len(FREE_TEXT) >= len(WITH_SUBMISSION)  # every challenge has its sockets


def run_with_settings(challenge: str, tmp_path: Path, settings: dict[str, str]):
    ground_truth = small_ground_truth(challenge, tmp_path / "synthetic")
    config = ground_truth / "config.json"
    bundled = json.loads(config.read_text()) if config.exists() else {}
    config.write_text(json.dumps({**bundled, **settings}))
    output = deep_output(tmp_path)
    return command(challenge, "--ground-truth", ground_truth, "--output", output), output


@pytest.mark.parametrize("challenge, setting", [pytest.param(c, s, marks=pytest.mark.slow) if c in SLOW else (c, s)
                                                for c, s in FREE_TEXT])
def test_a_setting_naming_a_path_out_of_the_submission_never_writes_there(challenge, setting, tmp_path):
    done, output = run_with_settings(challenge, tmp_path, {setting: hostile_values(tmp_path)["climbing"]})
    assert_stayed_inside(done, tmp_path, tmp_path / "synthetic", output, "config.json", repr(setting))


@pytest.mark.parametrize("challenge", params(WITH_SUBMISSION))
def test_absolute_paths_in_every_setting_never_write_there(challenge, tmp_path):
    """Every free-text setting at once an absolute path (the same check as above, one run)."""
    settings = {setting: f"{hostile_values(tmp_path)['absolute']}-{setting}"
                for setting in free_text_settings(challenge)}
    done, output = run_with_settings(challenge, tmp_path, settings)
    assert_stayed_inside(done, tmp_path, tmp_path / "synthetic", output, "config.json", "setting")


def case_named_in_text_only(ground_truth: Path, challenge: str) -> str | None:
    """A case id of the ground truth that no file name holds and no other id contains: one that
    can be renamed by editing the text files alone."""
    ids = sorted(available_challenges()[challenge](ground_truth).ground_truth)
    names = [p.name for p in ground_truth.rglob("*")]
    for case in ids:
        if not any(case in name for name in names) and not any(case in other for other in ids if other != case):
            return case
    return None


@pytest.mark.parametrize("kind", ["climbing", "absolute"])
@pytest.mark.parametrize("challenge", params(WITH_SUBMISSION))
def test_a_case_name_out_of_the_submission_never_writes_there(challenge, kind, tmp_path):
    """A case of the ground truth renamed (in its text files) to a path leaving the folder or an
    absolute one: CAMELYON16's slide names become file names (refused, exit 3), other
    challenges' case names go into predictions.json or a CSV only."""
    ground_truth = tmp_path / "ground-truth"
    shutil.copytree(ROOT / "ground-truth" / challenge, ground_truth)
    case = case_named_in_text_only(ground_truth, challenge)
    if case is None:
        pytest.skip(f"every case id of {challenge} is a file name, which cannot hold '/'")
    value = hostile_values(tmp_path)[kind]
    for path in ground_truth.rglob("*"):
        if path.is_file() and path.suffix in (".csv", ".json"):
            text = path.read_text(encoding="utf-8")
            path.write_text(text.replace(case, value), encoding="utf-8")
    output = deep_output(tmp_path)
    done = command(challenge, "--ground-truth", ground_truth, "--output", output)
    assert_stayed_inside(done, tmp_path, ground_truth, output, "Ground truth", shown_path(value)[:40])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["climbing", "absolute"])
def test_camelyon16_normal_slide_named_as_a_path_exits_3(kind, tmp_path):
    """The issue's case: a Normal slide named ../../../../X (X.csv written outside --output) or
    /.../X (an existing file overwritten)."""
    ground_truth = tmp_path / "ground-truth"
    shutil.copytree(ROOT / "ground-truth" / "camelyon16", ground_truth)
    (tmp_path / "absolute").mkdir()
    (tmp_path / "absolute" / "X.csv").write_text("mine\n")
    value = {"climbing": "../../../../X", "absolute": str(tmp_path / "absolute" / "X")}[kind]
    reference = ground_truth / "reference.csv"
    reference.write_text(reference.read_text().replace("Test_002,Normal", f"{value},Normal"))
    output = tmp_path / "a" / "b" / "example"
    done = command("camelyon16", "--ground-truth", ground_truth, "--output", output)
    assert done.returncode == 3
    line = assert_one_line(done.stderr)
    # Refused as the evaluation refuses it, when the ground truth is checked, before anything is written.
    row = reference.read_text().splitlines().index(f"{value},Normal") + 1
    assert line == (f"The ground truth in {ground_truth} cannot be used: Ground truth reference.csv, row {row}: the "
                    f"path {shown_path(value)} leaves the ground-truth folder; only plain relative paths are allowed.")
    assert files_outside(tmp_path, ground_truth) == ["absolute/X.csv"]
    assert (tmp_path / "absolute" / "X.csv").read_text() == "mine\n"
    assert not (tmp_path / "a").exists()


def test_rare26_output_socket_leaving_the_submission_exits_3(tmp_path):
    ground_truth = tmp_path / "ground-truth"
    shutil.copytree(ROOT / "ground-truth" / "rare26", ground_truth)
    (ground_truth / "config.json").write_text(json.dumps({"output_socket": "../../../../../X"}))
    output = tmp_path / "a" / "b" / "c" / "example"
    done = command("rare26", "--ground-truth", ground_truth, "--output", output)
    assert done.returncode == 3
    assert assert_one_line(done.stderr) == (
        "Writing the valid submission stopped on the ground truth: config.json, setting 'output_socket': the path "
        "../../../../../X.json leaves the submission folder; only plain relative paths are allowed.")
    assert files_outside(tmp_path, ground_truth) == []
    assert not (tmp_path / "a").exists()


# ---- the synthetic example (--out DIR) and the numbers of the command line (issue 19) --------------


def test_out_refuses_a_folder_holding_anything_without_force(tmp_path):
    out = tmp_path / "out"
    (out / "input").mkdir(parents=True)
    (out / "input" / "mine.json").write_text("{}")
    (out / "notes.txt").write_text("mine")
    before = tree(out)
    done = command("rare26", "--out", out, "--cases", 2)
    assert done.returncode == 2
    line = assert_one_line(done.stderr)
    assert str(out) in line and "--force" in line
    assert tree(out) == before and sorted(p.name for p in out.iterdir()) == ["input", "notes.txt"]


def test_out_naming_a_file_exits_2(tmp_path):
    (tmp_path / "out").write_text("mine")
    done = command("rare26", "--out", tmp_path / "out")
    assert done.returncode == 2 and "is not a folder" in assert_one_line(done.stderr)
    assert (tmp_path / "out").read_text() == "mine"


def test_out_force_replaces_only_ground_truth_and_input(tmp_path):
    fresh = tmp_path / "fresh"
    assert command("rare26", "--out", fresh, "--seed", 3, "--cases", 2).returncode == 0
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    (out / "ground-truth").mkdir(parents=True)
    (out / "ground-truth" / "stale.txt").write_text("stale")
    (out / "more").mkdir()
    (out / "more" / "data.txt").write_text("mine")
    (out / "notes.txt").write_text("mine too")
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the command's")
    (out / "input").symlink_to(elsewhere)  # replaced as a link, never followed
    done = command("rare26", "--out", out, "--seed", 3, "--cases", 2, "--force")
    assert done.returncode == 0, done.stderr
    assert tree(out / "ground-truth") == tree(fresh / "ground-truth")
    assert not (out / "input").is_symlink() and tree(out / "input") == tree(fresh / "input")
    assert (out / "notes.txt").read_text() == "mine too" and (out / "more" / "data.txt").read_text() == "mine"
    assert tree(elsewhere) == {"keep.txt": b"not the command's"}
    assert sorted(p.name for p in out.iterdir()) == ["ground-truth", "input", "more", "notes.txt"]


def test_negative_cases_exit_2_with_one_line(tmp_path):
    """The issue's case, as a process: no traceback, nothing written."""
    done = command("rare26", "--out", tmp_path / "x", "--cases", "-5")
    assert done.returncode == 2
    assert "--cases" in assert_one_line(done.stderr)
    assert not (tmp_path / "x").exists()


def examples_main(args: list[str], capsys) -> tuple[int, str]:
    """The command's main() in this process: (exit code, stderr)."""
    try:
        code = examples.main([str(a) for a in args])
    except SystemExit as stop:
        code = stop.code
    return code, capsys.readouterr().err


def bad_numbers(challenge: str) -> list[list[str]]:
    fewest = examples.example(challenge).min_cases
    cases = ["-5", "0", "1.5", "2e3", "", " ", "²", "0x10", "nan"] + ([str(fewest - 1)] if fewest > 1 else [])
    seeds = ["-1", "1.0", "", "²", "1e3", "inf"]
    return [["--cases", c] for c in cases] + [["--seed", s] for s in seeds]


@pytest.mark.parametrize("challenge", sorted(examples.examples()))
def test_bad_numbers_exit_2_for_every_challenge(challenge, tmp_path, capsys):
    for mode in (["--out", tmp_path / "x"], ["--ground-truth", ROOT / "ground-truth" / challenge, "--output",
                                             tmp_path / "x"]):
        for bad in bad_numbers(challenge):
            if mode[0] == "--ground-truth" and bad[0] == "--cases":
                continue  # --cases does not go with --ground-truth (tested above)
            code, err = examples_main([challenge, *mode, *bad], capsys)
            assert code == 2, (bad, err)
            assert bad[0] in assert_one_line(err), (bad, err)
            assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("challenge", params(sorted(examples.examples())))
def test_the_fewest_cases_make_a_scored_example(challenge, tmp_path, evaluate):
    """Example.min_cases is right: that many cases make an example the evaluation scores (seed
    0), one fewer does not (the writer fails, or the evaluation refuses its ground truth)."""
    fewest = examples.example(challenge).min_cases
    done = command(challenge, "--out", tmp_path / "fewest", "--cases", fewest)
    assert done.returncode == 0, done.stderr
    run = evaluate(challenge, tmp_path / "fewest" / "input", tmp_path / "fewest" / "ground-truth")
    assert run.code == 0, run.stderr
    if fewest > 1:
        try:
            examples.synthesize(challenge, tmp_path / "fewer", seed=0, cases=fewest - 1)
        except Exception:
            return
        run = evaluate(challenge, tmp_path / "fewer" / "input", tmp_path / "fewer" / "ground-truth")
        assert run.code != 0
