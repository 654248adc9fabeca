"""The grand-challenge.org contract: predictions.json in all its shapes, case ids, reading
outputs, paths that must stay inside /input, the ground-truth folder and metrics.json."""

from __future__ import annotations

import json
import math
import os
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from evaluation.errors import SetupError, SubmissionError
from evaluation.platform import locations as gc
from evaluation.platform import synthetic
from evaluation.platform.cases import Case, case_id_of_job, read_case_mapping
from evaluation.platform.locations import list_submission_files, strip_extension
from evaluation.platform.outputs import Undefined, metrics_json, write_metrics
from evaluation.platform.predictions import (
    JobTiming,
    job_timing,
    parse_iso_duration,
    parse_predictions,
    processing_seconds,
    read_predictions,
)
from evaluation.reading.files import Origin

PK = "05c0bc43-0975-437b-8202-b63c47044453"
PK2 = "9f1e6a52-1b7e-4c1e-9a0f-2a6a3e0c7d11"


def value_output(slug, relative_path, value, pk=0):
    """A Value-kind output as the platform lists it: the JSON inline (and, normally, in a file)."""
    return {"pk": pk, "image": None, "file": None, "value": value,
            "socket": synthetic.socket(slug, "Anything", "Value", relative_path)}


def image_output(slug, relative_path, name="detection_map.mha", pk=0):
    return {"pk": pk, "file": None, "value": None, "image": {"pk": "img", "name": name},
            "socket": synthetic.socket(slug, "Heat Map", "Image", relative_path)}


def one_job(pk=PK, image_name="100433_00001_0000.nii.gz", outputs=None, **extra):
    job = synthetic.job(pk, [synthetic.image_input("ct", image_name, "images/ct")],
                        outputs if outputs is not None else [synthetic.file_output("likelihood", "likelihood.json")])
    job.update(extra)
    return job


def case_of(input_dir: Path, raw_job: dict, case_id="c1", label="Case") -> Case:
    (job,) = parse_predictions([raw_job])
    return Case(case_id=case_id, input_dir=input_dir, job=job, label=label)


# ---------------------------------------------------------------------------------------------
# Case ids from image names


@pytest.mark.parametrize("name, expected", [
    ("100433_00001_0000.nii.gz", "100433_00001_0000"),
    ("x.nii.gz", "x"),
    ("x.mha", "x"),
    ("x.tiff", "x"),
    ("X.NII.GZ", "X"),  # case-insensitive suffix, case kept in the id
    ("a.b.mha", "a.b"),  # only the known suffix goes
    ("case.v2", "case.v2"),  # unknown suffix kept
    ("plain", "plain"),
    (".mha", ".mha"),  # nothing would be left: kept whole
])
def test_strip_extension(name, expected):
    assert strip_extension(name) == expected


def test_case_id_from_named_input_socket_ignores_pk_and_other_inputs():
    raw = synthetic.job(PK, [synthetic.image_input("ct", "scan-7.nii.gz", "images/ct"),
                             synthetic.image_input("mask", "other-9.mha", "images/mask")], [])
    (job,) = parse_predictions([raw])
    assert case_id_of_job(job, "ct", {}) == "scan-7"
    assert case_id_of_job(job, "mask", {}) == "other-9"


def test_case_id_from_the_only_image_input_when_no_socket_named():
    raw = synthetic.job(PK, [synthetic.image_input("ct", "x.mha", "images/ct"),
                             {"pk": 1, "file": None, "value": 3, "image": None,
                              "socket": synthetic.socket("age", "Integer", "Value", "age.json")}], [])
    (job,) = parse_predictions([raw])
    assert case_id_of_job(job, None, {}) == "x"


def test_case_id_ambiguous_without_socket_is_a_setup_error():
    raw = synthetic.job(PK, [synthetic.image_input("ct", "a.mha", "images/ct"),
                             synthetic.image_input("pet", "b.mha", "images/pet")], [])
    (job,) = parse_predictions([raw])
    with pytest.raises(SetupError, match="2 image inputs"):
        case_id_of_job(job, None, {})


def test_case_id_missing_socket_names_job_and_socket():
    (job,) = parse_predictions([one_job()])
    with pytest.raises(SubmissionError) as error:
        case_id_of_job(job, "venous-ct", {})
    assert PK in str(error.value) and "'venous-ct'" in str(error.value) and "ct" in str(error.value)


def test_case_mapping_keys_with_or_without_extension():
    (with_ext,) = parse_predictions([one_job(image_name="scan_a.nii.gz")])
    (without_ext,) = parse_predictions([one_job(image_name="scan_b.mha")])
    (unmapped,) = parse_predictions([one_job(image_name="scan_c.mha")])
    mapping = {"scan_a.nii.gz": "patient-1", "scan_b": "patient-2"}
    assert case_id_of_job(with_ext, "ct", mapping) == "patient-1"
    assert case_id_of_job(without_ext, "ct", mapping) == "patient-2"
    assert case_id_of_job(unmapped, "ct", mapping) == "scan_c"
    # The full name wins over the stem.
    assert case_id_of_job(with_ext, "ct", {"scan_a": "stem", "scan_a.nii.gz": "full"}) == "full"


def test_read_case_mapping(tmp_path):
    assert read_case_mapping(tmp_path) == {}
    (tmp_path / "case-mapping.json").write_text(json.dumps({"a.mha": "1", "b": "2"}))
    assert read_case_mapping(tmp_path) == {"a.mha": "1", "b": "2"}


@pytest.mark.parametrize("content", ['["a", "b"]', '{"a.mha": 1}', '{"a.mha": "1"'])
def test_bad_case_mapping_is_a_setup_error(tmp_path, content):
    (tmp_path / "case-mapping.json").write_text(content)
    with pytest.raises(SetupError, match=r"case-mapping\.json"):
        read_case_mapping(tmp_path)


# ---------------------------------------------------------------------------------------------
# predictions.json: durations and shapes


@pytest.mark.parametrize("text, seconds", [
    ("P0DT00H10M22.910000S", 10 * 60 + 22.91),
    ("P1DT02H03M04S", 86400 + 2 * 3600 + 3 * 60 + 4),
    ("PT1H", 3600.0),
    ("P2D", 2 * 86400.0),
    ("PT0.5S", 0.5),
    ("PT0S", 0.0),
    (" PT3M ", 180.0),
])
def test_parse_iso_duration(text, seconds):
    assert parse_iso_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", [None, "", "P", "PT", "10 minutes", "00:10:22", 622.91, "-PT1S"])
def test_parse_iso_duration_unreadable_is_none(text):
    assert parse_iso_duration(text) is None


def test_new_shape_with_socket_and_interface():
    raw = one_job(outputs=[synthetic.file_output("likelihood", "likelihood.json", kind="Float"),
                           image_output("detection", "images/detection")],
                  exec_duration="P0DT00H10M22.910000S", invoke_duration="PT1M")
    for value in raw["inputs"] + raw["outputs"]:
        value["interface"] = dict(value["socket"])  # files from 2025-12 on carry both
    (job,) = parse_predictions([raw])
    assert job.pk == PK
    assert set(job.inputs) == {"ct"} and set(job.outputs) == {"likelihood", "detection"}
    assert job.inputs["ct"].image_name == "100433_00001_0000.nii.gz"
    assert job.inputs["ct"].relative_path == "images/ct"
    assert job.outputs["likelihood"].super_kind == "File" and job.outputs["likelihood"].kind == "Float"
    assert job.outputs["detection"].super_kind == "Image"
    assert job.exec_duration_seconds == pytest.approx(622.91)
    assert job.invoke_duration_seconds == pytest.approx(60.0)
    assert job.duration_seconds == pytest.approx(622.91)
    assert job.interface_key == ("ct",)


def test_socket_wins_over_interface():
    raw = one_job()
    raw["outputs"][0]["interface"] = synthetic.socket("old-slug", "Float", "File", "old.json")
    (job,) = parse_predictions([raw])
    assert set(job.outputs) == {"likelihood"}
    assert job.outputs["likelihood"].relative_path == "likelihood.json"


def test_old_shape_interface_only_and_timestamps():
    raw = one_job(outputs=[synthetic.file_output("likelihood", "likelihood.json")])
    (old,) = synthetic.legacy_shape([raw])
    assert "socket" not in old["inputs"][0] and "exec_duration" not in old
    started, completed = "2024-11-29T10:31:25.691799Z", "2024-11-29T10:41:48.601799Z"
    old.update(started_at=started, completed_at=completed, rendered_result_text="")
    (job,) = parse_predictions([old])
    (new,) = parse_predictions([raw])
    assert job.inputs == new.inputs and job.outputs == new.outputs
    assert job.exec_duration_seconds is None and job.invoke_duration_seconds is None
    expected = (datetime(2024, 11, 29, 10, 41, 48, 601799, tzinfo=UTC)
                - datetime(2024, 11, 29, 10, 31, 25, 691799, tzinfo=UTC)).total_seconds()
    assert job.started_to_completed_seconds == pytest.approx(expected)
    assert job.duration_seconds == pytest.approx(expected)


def test_exec_duration_preferred_over_timestamps():
    raw = one_job(exec_duration="PT30S", started_at="2024-11-29T10:00:00Z", completed_at="2024-11-29T11:00:00Z")
    (job,) = parse_predictions([raw])
    assert job.duration_seconds == 30.0
    assert job.started_to_completed_seconds == 3600.0


@pytest.mark.parametrize("extra", [
    {"exec_duration": None, "invoke_duration": None},
    {"exec_duration": None, "started_at": None, "completed_at": None},
    {"exec_duration": None, "started_at": "2024-11-29T10:00:00Z", "completed_at": "garbage"},
    {"exec_duration": None, "started_at": "2024-11-29T10:00:00Z", "completed_at": "2024-11-29T11:00:00"},  # naive
])
def test_null_or_unusable_durations(extra):
    (job,) = parse_predictions([one_job(**extra)])
    assert job.duration_seconds is None
    assert job.invoke_duration_seconds is None


def test_jobs_kept_in_file_order():
    jobs = parse_predictions([one_job(pk=PK2, image_name="b.mha"), one_job(pk=PK, image_name="a.mha")])
    assert [j.pk for j in jobs] == [PK2, PK]


@pytest.mark.parametrize("document, message", [
    ({"jobs": []}, "must be a list"),
    (["job"], "job 0 is not an object"),
    ([{"pk": "../../etc", "inputs": [], "outputs": []}], "no usable pk"),
    ([{"pk": "/etc", "inputs": [], "outputs": []}], "no usable pk"),
    ([{"pk": "a/b", "inputs": [], "outputs": []}], "no usable pk"),
    ([{"pk": 12, "inputs": [], "outputs": []}], "no usable pk"),
    ([{"pk": PK, "inputs": {"ct": {}}, "outputs": []}], "inputs of job"),
    ([{"pk": PK, "inputs": [{"image": None}], "outputs": []}], "no socket"),
    ([{"pk": PK, "inputs": ["x"], "outputs": []}], "is not an object"),
    ([{"pk": PK, "inputs": [], "outputs": [synthetic.file_output("risk", "risk.json"),
                                           value_output("risk", "risk.json", 0.5)]}],
     f'predictions.json: job {PK} lists the output socket "risk" twice.'),
])
def test_malformed_predictions_are_setup_errors(document, message):
    with pytest.raises(SetupError, match=message):
        parse_predictions(document)


def test_read_predictions(tmp_path):
    assert read_predictions(tmp_path) is None  # a predictions-file phase
    synthetic.write_predictions(tmp_path, [one_job()])
    assert [j.pk for j in read_predictions(tmp_path)] == [PK]
    (tmp_path / "predictions.json").write_text("[{")
    with pytest.raises(SetupError, match=r"predictions\.json"):
        read_predictions(tmp_path)


# ---------------------------------------------------------------------------------------------
# Reading outputs: Value, File and Image kinds


def test_file_output_read_from_disk_never_from_value(tmp_path):
    raw = one_job()
    raw["outputs"][0]["value"] = [9, 9]  # a File output's value is never relied on
    synthetic.write_output(tmp_path, PK, "likelihood.json", [0.25, 0.75])
    assert case_of(tmp_path, raw).read_json("likelihood") == [0.25, 0.75]


def test_file_output_missing_is_not_replaced_by_value(tmp_path):
    raw = one_job()
    raw["outputs"][0]["value"] = 0.5
    (tmp_path / PK / "output").mkdir(parents=True)
    with pytest.raises(SubmissionError) as error:
        case_of(tmp_path, raw, case_id="scan-3", label="Stack").read_json("likelihood")
    message = str(error.value)
    assert message.startswith("Stack scan-3, output 'likelihood'") and "likelihood.json is missing" in message


def test_value_output_file_wins_value_is_fallback(tmp_path):
    raw = one_job(outputs=[value_output("score", "score.json", {"inline": True})])
    case = case_of(tmp_path, raw)
    assert case.read_json("score") == {"inline": True}  # no file: the inline value
    synthetic.write_output(tmp_path, PK, "score.json", {"file": True})
    assert case.read_json("score") == {"file": True}  # the file is the truth


@pytest.mark.parametrize("inline", [0, False, "", []])
def test_value_output_falsy_inline_values_are_used(tmp_path, inline):
    raw = one_job(outputs=[value_output("score", "score.json", inline)])
    assert case_of(tmp_path, raw).read_json("score") == inline


def test_value_output_null_without_file_is_missing(tmp_path):
    raw = one_job(outputs=[value_output("score", "score.json", None)])
    with pytest.raises(SubmissionError, match=r"score\.json is missing"):
        case_of(tmp_path, raw).read_json("score")


def test_output_not_produced_names_the_slug_and_what_was_found(tmp_path):
    case = case_of(tmp_path, one_job(), case_id="p9", label="Patient")
    with pytest.raises(SubmissionError) as error:
        case.read_json("segmentation")
    message = str(error.value)
    assert "Patient p9" in message and "'segmentation'" in message and "likelihood" in message


@pytest.mark.parametrize("content, message", [
    ("[0.1, 0.2", "not valid JSON"),
    ("", "not valid JSON"),
    (b"\xff\xfe\x00", "not UTF-8"),
])
def test_unreadable_json_output_names_the_case(tmp_path, content, message):
    path = tmp_path / PK / "output" / "likelihood.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(SubmissionError) as error:
        case_of(tmp_path, one_job(), case_id="c42").read_json("likelihood")
    assert "Case c42" in str(error.value) and message in str(error.value)


def test_output_of_file_phase_case_is_a_setup_error(tmp_path):
    with pytest.raises(SetupError):
        Case(case_id="a", input_dir=tmp_path, source=tmp_path / "a.json").read_json("x")


@pytest.mark.parametrize("name", ["a7f3c1.mha", "whatever.tif", "slide.tiff", "UPPER.MHA"])
def test_image_output_found_by_listing(tmp_path, name):
    raw = one_job(outputs=[image_output("detection", "images/detection", name="detection_map.mha")])
    folder = tmp_path / PK / "output" / "images" / "detection"
    folder.mkdir(parents=True)
    (folder / name).write_bytes(b"image")
    (folder / "notes.json").write_text("{}")  # not an image: ignored
    (folder / "previews.mha").mkdir()  # a folder, whatever its name: ignored
    found = case_of(tmp_path, raw).image_file("detection")
    assert found.name == name and found.read_bytes() == b"image"


@pytest.mark.parametrize("names, count", [([], 0), (["a.mha", "b.tif"], 2)])
def test_image_output_must_hold_exactly_one_image(tmp_path, names, count):
    raw = one_job(outputs=[image_output("detection", "images/detection")])
    folder = tmp_path / PK / "output" / "images" / "detection"
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_bytes(b"x")
    with pytest.raises(SubmissionError) as error:
        case_of(tmp_path, raw, case_id="c7").image_file("detection")
    assert "Case c7" in str(error.value) and f"found {count}" in str(error.value)


def test_image_output_folder_missing(tmp_path):
    raw = one_job(outputs=[image_output("detection", "images/detection")])
    with pytest.raises(SubmissionError, match="Case c1: the image output 'detection' is missing"):
        case_of(tmp_path, raw).image_file("detection")


# ---------------------------------------------------------------------------------------------
# Paths the submission names stay inside the input folder


@pytest.mark.parametrize("relative_path", ["../escape.json", "a/../../escape.json", "/etc/passwd", "a\\..\\b.json"])
def test_relative_paths_leaving_input_are_refused(tmp_path, relative_path):
    inp = tmp_path / "input"
    inp.mkdir()
    (tmp_path / "escape.json").write_text("[1]")
    raw = one_job(outputs=[synthetic.file_output("likelihood", relative_path)])
    # relative_path is the platform's (the socket's), not the participant's: exit 3
    with pytest.raises(SetupError, match="leaves the input folder"):
        case_of(inp, raw).read_json("likelihood")


def test_symlinked_output_file_leading_out_is_refused(tmp_path):
    inp, outside = tmp_path / "input", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text('"ground truth"')
    (inp / PK / "output").mkdir(parents=True)
    (inp / PK / "output" / "likelihood.json").symlink_to(outside / "secret.json")
    with pytest.raises(SubmissionError, match="leads out of the input folder"):
        case_of(inp, one_job()).read_json("likelihood")


def test_symlinked_job_folder_leading_out_is_refused(tmp_path):
    inp, outside = tmp_path / "input", tmp_path / "outside"
    synthetic.write_output(outside, "x", "likelihood.json", [1])
    inp.mkdir()
    (inp / PK).symlink_to(outside / "x")
    with pytest.raises(SubmissionError, match="leads out"):
        case_of(inp, one_job()).read_json("likelihood")


def test_symlinked_image_leading_out_is_refused(tmp_path):
    inp, outside = tmp_path / "input", tmp_path / "outside"
    outside.mkdir()
    (outside / "real.mha").write_bytes(b"x")
    folder = inp / PK / "output" / "images" / "detection"
    folder.mkdir(parents=True)
    (folder / "map.mha").symlink_to(outside / "real.mha")
    raw = one_job(outputs=[image_output("detection", "images/detection")])
    with pytest.raises(SubmissionError, match="leads out"):
        case_of(inp, raw).image_file("detection")


def test_symlinked_image_folder_leading_out_is_refused(tmp_path):
    inp, outside = tmp_path / "input", tmp_path / "outside"
    outside.mkdir()
    (outside / "real.mha").write_bytes(b"x")
    (inp / PK / "output" / "images").mkdir(parents=True)
    (inp / PK / "output" / "images" / "detection").symlink_to(outside)
    raw = one_job(outputs=[image_output("detection", "images/detection")])
    with pytest.raises(SubmissionError, match="leads out"):
        case_of(inp, raw).image_file("detection")


def test_symlinks_staying_inside_are_followed(tmp_path):
    inp = tmp_path / "input"
    synthetic.write_output(inp, "common", "likelihood.json", [0.5])
    (inp / PK / "output").mkdir(parents=True)
    (inp / PK / "output" / "likelihood.json").symlink_to(inp / "common" / "output" / "likelihood.json")
    assert case_of(inp, one_job()).read_json("likelihood") == [0.5]
    folder = inp / PK / "output" / "images" / "detection"
    folder.mkdir(parents=True)
    (inp / "common" / "map.mha").write_bytes(b"img")
    (folder / "map.mha").symlink_to(Path("../../../../common/map.mha"))  # relative link, inside
    raw = one_job(outputs=[image_output("detection", "images/detection")])
    assert case_of(inp, raw).image_file("detection").read_bytes() == b"img"


def test_origin_path_direct(tmp_path):
    (tmp_path / "a").mkdir()
    origin = Origin.submission(tmp_path)
    assert origin.path("a", "b.json", what="x") == Path(os.path.realpath(tmp_path)) / "a" / "b.json"
    for bad in ["", None, "/abs", "..", "a/../..", "a\\b", "x\x00y", "n" * 300]:
        with pytest.raises(SubmissionError) as error:
            origin.path("a", bad, what="Output z")
        assert str(error.value).startswith("Output z: ")
    with pytest.raises(SetupError):
        Origin.platform(tmp_path).path("a", "..", what="Output z")


def test_list_submission_files_skips_debris_and_sorts(tmp_path):
    for name in ["b.json", "a/c.json", "a/b/d.csv", "__MACOSX/a/._c.json", "__MACOSX/x.json",
                 ".DS_Store", "a/.hidden.json", ".git/config"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    root = Path(os.path.realpath(tmp_path))
    found = [p.relative_to(root).as_posix() for p in list_submission_files(tmp_path)]
    # Top-down, each folder's files before its subfolders, names sorted: the same order every run.
    assert found == ["b.json", "a/c.json", "a/b/d.csv"]


def test_list_submission_files_refuses_links_out_and_keeps_names_of_links_inside(tmp_path):
    inp, outside = tmp_path / "input", tmp_path / "outside"
    (inp / "store").mkdir(parents=True)
    outside.mkdir()
    (inp / "store" / "blob.json").write_text("1")
    (inp / "case-2.json").symlink_to(inp / "store" / "blob.json")
    names = sorted(p.name for p in list_submission_files(inp))
    assert names == ["blob.json", "case-2.json"]  # the name the submission gave, not the target's
    assert all(p.read_text() == "1" for p in list_submission_files(inp))
    (outside / "secret.json").write_text("0")
    (inp / "case-3.json").symlink_to(outside / "secret.json")
    with pytest.raises(SubmissionError) as error:
        list_submission_files(inp)
    assert "case-3.json" in str(error.value) and "leads out" in str(error.value)


# ---------------------------------------------------------------------------------------------
# The ground-truth folder


def test_ground_truth_files_leave_out_reserved_files(tmp_path):
    for name in ["b.json", "a.JSON", "config.json", "case-mapping.json", "notes.txt"]:
        (tmp_path / name).write_text("{}")
    (tmp_path / "sub.json").mkdir()
    assert [p.name for p in gc.ground_truth_files(tmp_path, ".json")] == ["a.JSON", "b.json"]
    with pytest.raises(SetupError) as error:
        gc.single_ground_truth_file(tmp_path, ".json")
    assert "a.JSON, b.json" in str(error.value)
    (tmp_path / "a.JSON").unlink()
    assert gc.single_ground_truth_file(tmp_path, ".json").name == "b.json"
    with pytest.raises(SetupError, match="found none"):
        gc.single_ground_truth_file(tmp_path, ".csv")


@pytest.fixture
def gt_locations(tmp_path, monkeypatch):
    uploaded, baked = tmp_path / "uploaded", tmp_path / "baked"
    monkeypatch.setattr(gc, "UPLOADED_GROUND_TRUTH_DIR", uploaded)
    monkeypatch.setattr(gc, "BAKED_GROUND_TRUTH_DIR", baked)
    return uploaded, baked


def test_resolve_ground_truth_dir_order(tmp_path, gt_locations):
    uploaded, baked = gt_locations
    with pytest.raises(SetupError, match="does not exist"):
        gc.resolve_ground_truth_dir(None, "toy")
    baked.mkdir()
    assert gc.resolve_ground_truth_dir(None, "toy") == baked
    uploaded.mkdir()  # present but empty: not used
    assert gc.resolve_ground_truth_dir(None, "toy") == baked
    (uploaded / "truth.json").write_text("{}")
    assert gc.resolve_ground_truth_dir(None, "toy") == uploaded
    explicit = tmp_path / "explicit"
    explicit.mkdir()
    assert gc.resolve_ground_truth_dir(explicit, "toy") == explicit
    with pytest.raises(SetupError, match="does not exist"):
        gc.resolve_ground_truth_dir(tmp_path / "nowhere", "toy")


def test_resolve_ground_truth_dir_challenge_subfolder(tmp_path, gt_locations):
    uploaded, baked = gt_locations
    (baked / "toy").mkdir(parents=True)
    (baked / "other").mkdir()
    assert gc.resolve_ground_truth_dir(None, "toy") == baked / "toy"
    assert gc.resolve_ground_truth_dir(None, "another") == baked
    (uploaded / "toy").mkdir(parents=True)
    assert gc.resolve_ground_truth_dir(None, "toy") == uploaded / "toy"
    assert gc.resolve_ground_truth_dir(tmp_path, "uploaded") == uploaded


# ---------------------------------------------------------------------------------------------
# metrics.json


def _strict_load(text: str):
    """json.loads that refuses NaN and Infinity, as a strict parser would."""
    def refuse(constant):
        raise AssertionError(f"metrics.json contains {constant}")
    return json.loads(text, parse_constant=refuse)


def test_undefined_and_non_finite_become_null_with_notes():
    metrics = {
        "aggregates": {"dice": {"mean": 0.5, "std": Undefined("only one case")}},
        "nan": math.nan,
        "inf": math.inf,
        "per_case": [1.0, -math.inf, {"x": Undefined("empty mask")}],
        "fine": None,
    }
    document = _strict_load(metrics_json(metrics))
    assert document["aggregates"]["dice"] == {"mean": 0.5, "std": None}
    assert document["nan"] is None and document["inf"] is None and document["fine"] is None
    assert document["per_case"] == [1.0, None, {"x": None}]
    assert document["notes"] == {
        "aggregates.dice.std": "only one case",
        "nan": "not a finite number",
        "inf": "not a finite number",
        "per_case[1]": "not a finite number",
        "per_case[2].x": "empty mask",
    }


def test_no_notes_key_when_nothing_undefined_and_existing_notes_kept():
    assert "notes" not in _strict_load(metrics_json({"a": 1}))
    document = _strict_load(metrics_json({"notes": {"mine": "kept"}, "a": Undefined("why")}))
    assert document["notes"] == {"mine": "kept", "a": "why"}


def test_numpy_values_are_converted():
    metrics = {
        "f32": np.float32(0.5), "f64": np.float64(0.25), "i64": np.int64(7), "b": np.bool_(True),
        "array": np.arange(6).reshape(2, 3), "farray": np.array([0.5, np.nan]), "tuple": (1, 2),
        "nan64": np.float64("nan"),
    }
    document = _strict_load(metrics_json(metrics))
    assert document["f32"] == 0.5 and document["f64"] == 0.25
    assert document["i64"] == 7 and isinstance(document["i64"], int)
    assert document["b"] is True
    assert document["array"] == [[0, 1, 2], [3, 4, 5]]
    assert document["farray"] == [0.5, None]
    assert document["tuple"] == [1, 2]
    assert document["nan64"] is None
    assert set(document["notes"]) == {"farray[1]", "nan64"}


def test_unsupported_values_and_keys_raise():
    with pytest.raises(TypeError, match="set"):
        metrics_json({"a": {1, 2}})
    with pytest.raises(TypeError, match="not a string"):
        metrics_json({"a": {1: 0.5}})


@pytest.mark.parametrize("value", [math.nan, math.inf, Undefined("no positives"), True, False, None, "0.5",
                                   np.float64("nan"), [0.5]])
def test_ranked_path_must_be_a_finite_number(value, tmp_path):
    metrics = {"aggregates": {"score": value}}
    with pytest.raises(ValueError, match=r"aggregates\.score"):
        metrics_json(metrics, ["aggregates.score"])
    with pytest.raises(ValueError):
        write_metrics(tmp_path / "out", metrics, ["aggregates.score"])
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def test_ranked_path_missing_raises():
    with pytest.raises(ValueError, match=r"aggregates\.auc"):
        metrics_json({"aggregates": {"score": 1.0}}, ["aggregates.score", "aggregates.auc"])
    with pytest.raises(ValueError, match=r"score\.mean"):
        metrics_json({"score": 1.0}, ["score.mean"])  # a number where a dict was expected


@pytest.mark.parametrize("value", [0, 1, 0.75, -3.5, np.float32(0.5), np.int64(4)])
def test_ranked_path_finite_numbers_pass(value):
    document = _strict_load(metrics_json({"a": {"b": value}}, ["a.b"]))
    assert document["a"]["b"] == value


def test_write_metrics_atomic_and_byte_identical(tmp_path):
    def build():
        return {"aggregates": {"score": np.float64(1) / 3, "auc": Undefined("one class")},
                "cases": {f"c{i}": {"v": i / 7} for i in range(5)}}

    out = tmp_path / "a" / "b"  # created when missing
    path = write_metrics(out, build(), ["aggregates.score"])
    assert path == out / "metrics.json"
    assert os.listdir(out) == ["metrics.json"]
    first = path.read_bytes()
    assert _strict_load(first.decode())["aggregates"]["score"] == pytest.approx(1 / 3)
    write_metrics(out, build(), ["aggregates.score"])
    assert path.read_bytes() == first
    assert os.listdir(out) == ["metrics.json"]
    assert metrics_json(build(), ["aggregates.score"]).encode() == first


def test_write_metrics_failure_leaves_no_temporary_and_keeps_old_file(tmp_path, monkeypatch):
    out = tmp_path / "out"
    write_metrics(out, {"a": 1})
    old = (out / "metrics.json").read_bytes()

    def broken(*args):
        raise OSError(28, "No space left on device")

    for target in ("fsync", "replace"):
        with monkeypatch.context() as patch:
            patch.setattr(gc.os, target, broken)
            with pytest.raises(SetupError, match="No space"):
                write_metrics(out, {"a": 2})
        assert os.listdir(out) == ["metrics.json"], target
        assert (out / "metrics.json").read_bytes() == old


def test_write_metrics_failure_without_old_file_leaves_nothing(tmp_path, monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setattr(gc.os, "replace", lambda *a: (_ for _ in ()).throw(OSError(5, "I/O error")))
    with pytest.raises(SetupError, match="cannot be written"):
        write_metrics(out, {"a": 2})
    assert os.listdir(out) == []


# ---------------------------------------------------------------------------------------------
# Real platform shapes: several interfaces, the default image socket without relative_path


def test_case_socket_can_be_one_of_several_interfaces():
    ct_job = synthetic.job(PK, [synthetic.image_input("ct-image", "P-1__CT.nii.gz", "images/ct")], [])
    mr_job = synthetic.job(PK2, [synthetic.image_input("mr-image", "P-2__MR.mha", "images/mr"),
                                 synthetic.image_input("clinical", "extra.mha", "images/clinical")], [])
    ct, mr = parse_predictions([ct_job, mr_job])
    assert ct.interface_key == ("ct-image",) and mr.interface_key == ("clinical", "mr-image")
    sockets = ("ct-image", "mr-image")  # in order: the first a job has names its case
    assert case_id_of_job(ct, sockets, {}) == "P-1__CT" and case_id_of_job(mr, sockets, {}) == "P-2__MR"
    with pytest.raises(SubmissionError, match=r"has no input 'pet-image' or 'dose' \(inputs: clinical, mr-image\)"):
        case_id_of_job(mr, ("pet-image", "dose"), {})


def test_image_output_without_relative_path_sits_in_the_output_folder(tmp_path):
    raw = one_job(outputs=[image_output("segmentation", "", name="3f2a.mha"),
                           synthetic.file_output("likelihood", "likelihood.json")])
    (tmp_path / PK / "output").mkdir(parents=True)
    (tmp_path / PK / "output" / "3f2a.mha").write_bytes(b"image")
    (tmp_path / PK / "output" / "likelihood.json").write_text("0.5")
    case = case_of(tmp_path, raw)
    assert case.image_file("segmentation").read_bytes() == b"image"
    assert case.read_json("likelihood") == 0.5


def test_file_output_without_relative_path_is_the_platforms_error(tmp_path):
    raw = one_job(outputs=[synthetic.file_output("likelihood", "")])
    with pytest.raises(SetupError, match="has no relative_path"):
        case_of(tmp_path, raw).read_json("likelihood")


@pytest.mark.parametrize("content, expected", [
    ("[" * 100_000 + "]" * 100_000,
     "The platform's predictions.json: predictions.json is nested too deeply to be read."),
    ('[{"pk": "a", "pk": "b"}]', "The platform's predictions.json: predictions.json gives the key \"pk\" twice in one "
                                 "object."),
])
def test_hostile_predictions_json_is_the_platforms_error(tmp_path, content, expected):
    (tmp_path / "predictions.json").write_text(content)
    with pytest.raises(SetupError) as error:
        read_predictions(tmp_path)
    assert str(error.value) == expected


@pytest.mark.parametrize("relative_path", ["a\x00b.json", "x" * 5000])
def test_nul_and_overlong_relative_paths_are_refused_not_crashes(tmp_path, relative_path):
    raw = one_job(outputs=[synthetic.file_output("likelihood", relative_path)])
    with pytest.raises(SetupError, match=r"NUL character|longer than a file name may be"):
        case_of(tmp_path, raw).read_json("likelihood")


# ---------------------------------------------------------------------------------------------
# Job timing for a runtime metric: Case.seconds, processing_seconds


def test_case_seconds_is_exec_duration_else_the_span_of_the_instants(tmp_path):
    assert case_of(tmp_path, one_job(exec_duration="P0DT00H10M22.910000S")).seconds() == pytest.approx(622.91)
    started, completed = "2024-11-29T10:31:25.691799Z", "2024-11-29T10:41:48.601799"  # naive: read as UTC
    case = case_of(tmp_path, one_job(exec_duration=None, started_at=started, completed_at=completed))
    expected = (datetime(2024, 11, 29, 10, 41, 48, 601799, tzinfo=UTC)
                - datetime(2024, 11, 29, 10, 31, 25, 691799, tzinfo=UTC)).total_seconds()
    assert case.seconds() == expected
    assert case.timing == JobTiming(None, datetime(2024, 11, 29, 10, 31, 25, 691799, tzinfo=UTC),
                                       datetime(2024, 11, 29, 10, 41, 48, 601799, tzinfo=UTC))


@pytest.mark.parametrize("extra, reason", [
    ({"exec_duration": None}, "job {pk} carries neither exec_duration nor started_at and completed_at in order"),
    ({"exec_duration": None, "started_at": "2024-11-29T11:00:00Z", "completed_at": "2024-11-29T10:00:00Z"},
     "job {pk} carries neither exec_duration nor started_at and completed_at in order"),
])
def test_case_seconds_without_timing_is_undefined_with_a_note(tmp_path, extra, reason):
    seconds = case_of(tmp_path, one_job(**extra)).seconds()
    assert seconds == Undefined(f"Case c1: {reason.format(pk=PK)}")
    document = json.loads(metrics_json({"case": {"c1": {"seconds": seconds}}}))
    assert document["case"]["c1"]["seconds"] is None and document["notes"]["case.c1.seconds"] == seconds.reason


def test_a_predictions_file_case_has_no_time(tmp_path):
    case = Case(case_id="7", input_dir=tmp_path, source=tmp_path / "7.csv")
    assert case.timing is None
    assert case.seconds() == Undefined("Case 7: a predictions-file submission carries no processing time")
    assert processing_seconds([None]) == Undefined(
        "no processing time: a predictions-file submission carries no processing time")


def timings(jobs):
    return [job_timing(job) for job in parse_predictions(jobs)]


def test_processing_seconds_sums_exec_durations_else_spans_the_jobs():
    durations = ["PT0.1S", "PT0.2S", "PT0.3S", "PT1000000.7S"]
    jobs = [one_job(pk=f"job{n}", exec_duration=d) for n, d in enumerate(durations)]
    assert processing_seconds(timings(jobs)) == math.fsum([0.1, 0.2, 0.3, 1000000.7])
    instants = [("2024-11-29T10:00:00.000001Z", "2024-11-29T10:05:00Z"),
                ("2024-11-29T09:59:59.5Z", "2024-11-29T10:01:00Z"),
                ("2024-11-29T10:02:00Z", "2024-11-29T10:07:30.25Z")]
    jobs = [one_job(pk=f"job{n}", exec_duration=None, started_at=start, completed_at=end)
            for n, (start, end) in enumerate(instants)]
    expected = (datetime(2024, 11, 29, 10, 7, 30, 250000, tzinfo=UTC)
                - datetime(2024, 11, 29, 9, 59, 59, 500000, tzinfo=UTC)).total_seconds()
    assert processing_seconds(timings(jobs)) == expected == 450.75
    jobs[1]["started_at"] = None
    assert processing_seconds(timings(jobs)) == Undefined(
        "no processing time: not every job carries exec_duration, nor started_at and completed_at")


def test_csv2026_processing_time_is_the_shared_rule_on_the_row_of_ones():
    """csv2026's weighted processing time (its bootstrap) agrees with the shared function."""
    from evaluation.challenges.csv2026.scoring import processing_time

    exec_jobs = timings([one_job(pk=f"job{n}", exec_duration=f"PT{n + 0.1}S") for n in range(5)])
    span_jobs = timings([one_job(pk=f"job{n}", exec_duration=None, started_at=f"2024-11-29T10:0{n}:00Z",
                                 completed_at=f"2024-11-29T10:0{n + 1}:00.5Z") for n in range(5)])
    for jobs in (exec_jobs, span_jobs):
        assert processing_time(jobs, np.ones((1, len(jobs)), dtype=np.int64))[0] == processing_seconds(jobs)
