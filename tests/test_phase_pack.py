"""The phase's socket names: `python -m evaluation.phase CHALLENGE --ground-truth DIR --pack PACK`
from a phase pack written as the platform's generator writes it (tests/phase_packs.py), the
examples command and the evaluation then using the configured names; a socket no job carries
being the configuration's fault (exit 3) while one missing from some jobs stays the submission's
(exit 1); a case socket per interface; and the bundled predictions.json files against the
platform's socket kinds (a Float or Bool output is a Value, inline and in its file)."""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.challenges import available_challenges
from evaluation.errors import SetupError
from evaluation.settings import CASE_INPUT, IMAGE_OUTPUT
from tests import common
from tests.cli_runs import DROP_ENV, ROOT
from tests.phase_packs import (
    IMAGE_KINDS,
    JSON_EXAMPLES,
    NEVER_IN_DATABASE,
    PACK_PREDICTIONS,
    forge_socket,
    pack_files,
    write_pack_folder,
    write_pack_zip,
)

CHALLENGES = available_challenges()
KIND_OF_JSON_VALUE = {"number": "Float", "bool": "Bool", "points": "Multiple points", "any": "Anything"}


def socket_fields(challenge):
    return [f for f in dataclasses.fields(CHALLENGES[challenge].settings_class) if f.metadata.get("socket")]


def renamed(field) -> str:
    """The slug a phase of the tests gives a setting's socket: none of our defaults."""
    return "phase-" + field.name.replace("_", "-")


def renamed_interface(challenge) -> dict:
    """One algorithm interface with every socket the challenge reads under another name, plus a
    CSV input the challenge does not read."""
    inputs, outputs = [forge_socket("clinical-information", "CSV file")], []
    for f in socket_fields(challenge):
        role = f.metadata["socket"]
        if role == CASE_INPUT:
            inputs.append(forge_socket(renamed(f), "Image"))
        elif role == IMAGE_OUTPUT:
            outputs.append(forge_socket(renamed(f), "Segmentation"))
        else:
            outputs.append(forge_socket(renamed(f), KIND_OF_JSON_VALUE[f.metadata["json_value"]]))
    return {"inputs": inputs, "outputs": outputs}


def run(*args, timeout=600):
    env = {name: value for name, value in os.environ.items() if name not in DROP_ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", *map(str, args)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def last_line(done) -> str:
    return common.last_line(done.stderr)


def ground_truth_copy(challenge, tmp_path) -> Path:
    target = tmp_path / "ground-truth"
    shutil.copytree(ROOT / "ground-truth" / challenge, target)
    return target


def read_config(ground_truth) -> dict:
    path = ground_truth / "config.json"
    return json.loads(path.read_text()) if path.exists() else {}


def write_config(ground_truth, config) -> None:
    (ground_truth / "config.json").write_text(json.dumps(config))


# ---- the pack route, generically over every challenge -------------------------------------------


def test_the_pack_generator_writes_the_platforms_layout(tmp_path):
    """The pack of the tests has the generator's layout and field set (what the route relies on)."""
    files = pack_files([renamed_interface("hecktor2025-task2")])
    jobs = json.loads(files["example_evaluation_method/test/input/predictions.json"])
    assert len(jobs) == 3 and all(set(job) == {"pk", "inputs", "outputs", "exec_duration", "invoke_duration", "status"}
                                  for job in jobs)
    (output,) = jobs[0]["outputs"]
    assert list(output) == ["socket", "file", "image", "value"] and output["value"] == 42.0
    assert list(output["socket"]) == ["slug", "relative_path", "example_value", "is_image_kind", "is_panimg_kind",
                                      "is_dicom_image_kind", "is_json_kind", "is_file_kind"]
    image = jobs[0]["inputs"][1]["socket"]
    assert "example_value" not in image and image["is_image_kind"] and not image["is_json_kind"]
    assert f"example_evaluation_method/test/input/{jobs[0]['pk']}/output/phase-output-socket.json" in files
    assert "example_algorithm/test/input/interf0/inputs.json" in files


@pytest.mark.slow
@pytest.mark.parametrize("challenge", sorted(CHALLENGES))
def test_pack_sockets_reach_config_examples_and_evaluation(challenge, tmp_path):
    """Every socket the challenge reads, renamed by the phase: the route sets each one, keeps the
    other keys of config.json in their order, and the examples command then writes and scores a
    submission on those names (it runs the evaluation on it: exit 0, the invalid ones exit 1)."""
    ground_truth = ground_truth_copy(challenge, tmp_path)
    before = read_config(ground_truth)
    pack = write_pack_zip(tmp_path / f"{challenge}-phase-kit.zip", [renamed_interface(challenge)])
    done = run("evaluation.phase", challenge, "--ground-truth", ground_truth, "--pack", pack)
    assert done.returncode == 0, done.stderr
    config = read_config(ground_truth)
    expected = {f.name: renamed(f) for f in socket_fields(challenge)}
    assert config == {**before, **expected}
    assert list(config)[:len(before)] == list(before)
    for name, slug in expected.items():
        assert f'  {name} = "{slug}"' in done.stdout

    done = run("evaluation.examples", challenge, "--ground-truth", ground_truth, "--output", tmp_path / "example")
    assert done.returncode == 0, done.stdout + done.stderr
    predictions = tmp_path / "example" / "input" / "predictions.json"
    if predictions.exists():  # an algorithm phase's example: on the phase's names
        jobs = json.loads(predictions.read_text())
        slugs = {value["socket"]["slug"] for job in jobs for value in job["inputs"] + job["outputs"]}
        assert set(expected.values()) <= slugs
        assert not slugs & {getattr(CHALLENGES[challenge].settings_class(), name) for name in expected}


def algorithm_example(challenge, tmp_path) -> tuple[Path, Path]:
    """(input, ground truth) of an algorithm-job submission of the challenge: the bundled example,
    or a synthetic one for the challenges whose bundled example is a predictions file."""
    if (ROOT / "test" / challenge / "input" / "predictions.json").exists():
        shutil.copytree(ROOT / "test" / challenge / "input", tmp_path / "input")
        return tmp_path / "input", ground_truth_copy(challenge, tmp_path)
    if challenge == "camelyon16":
        from evaluation.challenges.camelyon16.examples import write_synthetic

        write_synthetic(tmp_path, seed=5, slides=4, mask_shape=(160, 224), pyramids=0, phase="algorithm")
    else:
        from evaluation.challenges.isic.examples import write_synthetic

        write_synthetic(tmp_path, CHALLENGES[challenge].categories, seed=5, images=12, phase="algorithm")
    return tmp_path / "input", tmp_path / "ground-truth"


SOCKET_SETTINGS = [(challenge, f.name) for challenge in sorted(CHALLENGES) for f in socket_fields(challenge)]


@pytest.mark.parametrize("challenge, name", SOCKET_SETTINGS)
def test_a_socket_no_job_carries_is_the_configuration(challenge, name, evaluate, tmp_path):
    input_dir, ground_truth = algorithm_example(challenge, tmp_path)
    assert evaluate(challenge, input_dir, ground_truth).code == 0
    write_config(ground_truth, {**read_config(ground_truth), name: "not-this-phases-socket"})
    run_ = evaluate(challenge, input_dir, ground_truth)
    assert (run_.code, run_.wrote_metrics) == (3, False)
    line = run_.last_error_line
    side = "input" if {f.name: f for f in socket_fields(challenge)}[name].metadata["socket"] == CASE_INPUT \
        else "output"
    carried = sorted({slug for job in json.loads((input_dir / "predictions.json").read_text())
                      for slug in (v["socket"]["slug"] for v in job[f"{side}s"])})
    assert (f"No job of predictions.json has the {side} socket 'not-this-phases-socket' "
            f"that the setting {name!r}") in line
    assert f"the jobs' {side}s are {', '.join(carried)}." in line
    assert f"Set {name!r} in config.json" in line and "--pack" in line
    assert len(run_.stderr.strip().splitlines()[-1]) < 1024


@pytest.mark.parametrize("challenge, name", SOCKET_SETTINGS)
def test_a_socket_missing_from_one_job_is_the_submission(challenge, name, evaluate, tmp_path):
    input_dir, ground_truth = algorithm_example(challenge, tmp_path)
    settings = CHALLENGES[challenge].settings_class.from_ground_truth(ground_truth)
    slug = getattr(settings, name) or None
    if slug is None:  # ISIC's default: the job's only image input, whatever its name
        pytest.skip("the setting names no socket")
    field = {f.name: f for f in socket_fields(challenge)}[name]
    side = "inputs" if field.metadata["socket"] == CASE_INPUT else "outputs"
    jobs = json.loads((input_dir / "predictions.json").read_text())
    jobs[0][side] = [v for v in jobs[0][side] if v["socket"]["slug"] != slug]
    (input_dir / "predictions.json").write_text(json.dumps(jobs))
    run_ = evaluate(challenge, input_dir, ground_truth)
    assert (run_.code, run_.wrote_metrics) == (1, False), run_.stderr
    assert repr(slug) in run_.last_error_line


# ---- the platform's example values: the kind where the value tells it, else by elimination ------


def anything_interface(challenge) -> dict:
    """renamed_interface with every JSON output an Anything socket carrying the platform's generic
    example ({"key": "value", "None": null}), which tells nothing of what the output holds."""
    interface = renamed_interface(challenge)
    outputs = [forge_socket(s["slug"], "Anything") if s["is_json_kind"] else s for s in interface["outputs"]]
    return {"inputs": interface["inputs"], "outputs": outputs}


@pytest.mark.parametrize("challenge", sorted(CHALLENGES))
def test_json_outputs_with_the_generic_example_are_matched_by_elimination(challenge, tmp_path):
    """Every JSON output an Anything socket: a challenge reading one JSON output takes it (the
    only JSON output left); one reading two (CAMELYON16's likelihood and detections) cannot tell
    them apart, names both, and takes the second by elimination once config.json names the
    first."""
    ground_truth = ground_truth_copy(challenge, tmp_path)
    before = read_config(ground_truth)
    pack = write_pack_zip(tmp_path / "kit.zip", [anything_interface(challenge)])
    done = run("evaluation.phase", challenge, "--ground-truth", ground_truth, "--pack", pack)
    expected = {f.name: renamed(f) for f in socket_fields(challenge)}
    json_outputs = [f for f in socket_fields(challenge) if f.metadata["socket"] not in (CASE_INPUT, IMAGE_OUTPUT)]
    if len(json_outputs) > 1:
        assert done.returncode == 3 and read_config(ground_truth) == before
        slugs = ", ".join(renamed(f) for f in json_outputs)
        for f in json_outputs:
            assert f"{f.name!r} (" in last_line(done) and f"could be any of {slugs}" in last_line(done)
        write_config(ground_truth, {**before, json_outputs[0].name: renamed(json_outputs[0])})
        done = run("evaluation.phase", challenge, "--ground-truth", ground_truth, "--pack", pack)
    assert done.returncode == 0, done.stderr
    assert read_config(ground_truth) == {**before, **expected}


def renamed_predictions(challenge, tmp_path) -> tuple[Path, dict]:
    """A phase pack folder whose predictions.json is a real evaluation's (sockets with kind and
    super_kind, no forge flags, JSON outputs mostly Files), every socket renamed "phase-<slug>",
    and {setting: the renamed slug it must get}."""
    input_dir, ground_truth = algorithm_example(challenge, tmp_path)
    settings = CHALLENGES[challenge].settings_class.from_ground_truth(ground_truth)
    jobs = json.loads((input_dir / "predictions.json").read_text())
    expected = {}
    for f in socket_fields(challenge):
        slug = getattr(settings, f.name)
        if not slug:  # the job's only image input
            (slug,) = [v["socket"]["slug"] for v in jobs[0]["inputs"] if v["image"] is not None]
        expected[f.name] = "phase-" + slug
    for one in jobs:
        for value in one["inputs"] + one["outputs"]:
            value["socket"]["slug"] = "phase-" + value["socket"]["slug"]
    pack = tmp_path / "pack"
    (pack / PACK_PREDICTIONS).parent.mkdir(parents=True)
    (pack / PACK_PREDICTIONS).write_text(json.dumps(jobs))
    return pack, expected


@pytest.mark.parametrize("challenge", sorted(CHALLENGES))
def test_a_real_predictions_json_as_the_pack_is_matched_by_kind(challenge, tmp_path):
    """The issue's ISIC 2019 phase whose only JSON output is renamed exited 3 ("matches none of
    the outputs"): a File output's kind shows in `kind` (Anything, Float, ...), not in a flag."""
    pack, expected = renamed_predictions(challenge, tmp_path)
    ground_truth = ground_truth_copy(challenge, tmp_path / "phase")
    before = read_config(ground_truth)
    done = run("evaluation.phase", challenge, "--ground-truth", ground_truth, "--pack", pack)
    assert done.returncode == 0, done.stderr
    assert read_config(ground_truth) == {**before, **expected}


def test_the_kind_the_value_tells_wins_over_a_value_that_tells_nothing(tmp_path):
    """A Float output next to an Anything one: the Float is the risk (the Anything is left); a
    Bool alone is no risk, unless config.json names it (the organizer's word, whatever the
    example value)."""
    ground_truth = ground_truth_copy(HECKTOR2, tmp_path)
    pack = write_pack_zip(tmp_path / "kit.zip", [{
        "inputs": [forge_socket("ct", "Image")],
        "outputs": [forge_socket("notes", "Anything"), forge_socket("risk", "Float"),
                    forge_socket("extra", "Float", example_value={"risk": 0.5})]}])
    done = run("evaluation.phase", HECKTOR2, "--ground-truth", ground_truth, "--pack", pack)
    assert done.returncode == 0, done.stderr
    assert read_config(ground_truth) == {"output_socket": "risk", "input_socket": "ct"}
    pack = write_pack_zip(tmp_path / "kit.zip", [{"inputs": [forge_socket("ct", "Image")],
                                                  "outputs": [forge_socket("hpv", "Bool")]}])
    write_config(ground_truth, {})
    done = run("evaluation.phase", HECKTOR2, "--ground-truth", ground_truth, "--pack", pack)
    assert done.returncode == 3 and "matches none of the outputs (hpv)" in last_line(done)
    write_config(ground_truth, {"output_socket": "hpv"})
    done = run("evaluation.phase", HECKTOR2, "--ground-truth", ground_truth, "--pack", pack)
    assert done.returncode == 0, done.stderr
    assert read_config(ground_truth) == {"output_socket": "hpv", "input_socket": "ct"}


# ---- the pack as downloaded, unpacked, re-zipped ------------------------------------------------

HECKTOR2 = "hecktor2025-task2"
CT_PET_RFS = {"inputs": [forge_socket("ct", "Image"), forge_socket("pet", "Image")],
              "outputs": [forge_socket("rfs-risk", "Float")]}


@pytest.mark.parametrize("shape", ["zip", "zip-with-top-folder", "folder", "folder-with-top-folder"])
def test_hecktor_rfs_risk_from_every_shape_of_the_pack(shape, tmp_path):
    """The issue's phase: output `rfs-risk` (Float), CT input `ct` next to the PET `pet`."""
    ground_truth = ground_truth_copy(HECKTOR2, tmp_path)
    write_config(ground_truth, {"bootstrap_repetitions": 200, "output_socket": "rfs", "seed": 7})
    if shape.startswith("zip"):
        pack = write_pack_zip(tmp_path / "kit.zip", [CT_PET_RFS], top_folder="kit" if "top" in shape else None)
    else:
        pack = tmp_path / "kit"
        write_pack_folder(pack / "hecktor-task-2-kit" if "top" in shape else pack, [CT_PET_RFS])
    done = run("evaluation.phase", HECKTOR2, "--ground-truth", ground_truth, "--pack", pack)
    assert done.returncode == 0, done.stderr
    assert list(read_config(ground_truth).items()) == [("bootstrap_repetitions", 200), ("output_socket", "rfs-risk"),
                                                       ("seed", 7), ("input_socket", "ct")]
    assert '  output_socket = "rfs-risk" (was "rfs")' in done.stdout
    assert '  input_socket = "ct" (was "ct-image")' in done.stdout


def test_an_ambiguous_socket_is_named_then_kept(tmp_path):
    ground_truth = ground_truth_copy(HECKTOR2, tmp_path)
    interface = {"inputs": [forge_socket("scan-a", "Image"), forge_socket("scan-b", "Image")],
                 "outputs": [forge_socket("risk-a", "Float"), forge_socket("risk-b", "Float"),
                             forge_socket("notes", "String")]}
    pack = write_pack_zip(tmp_path / "kit.zip", [interface])
    done = run("evaluation.phase", HECKTOR2, "--ground-truth", ground_truth, "--pack", pack)
    assert done.returncode == 3 and not (ground_truth / "config.json").exists()
    assert done.stderr.count("\n") == 1
    assert last_line(done) == (
        "The phase's sockets could not be set: The phase pack's sockets cannot all be matched: 'input_socket' (the "
        "image input whose image name is the case id) could be any of scan-a, scan-b; 'output_socket' (a JSON output "
        "holding a number (Float)) could be any of risk-a, risk-b. Name them in config.json next to the ground truth, "
        'e.g. {"input_socket": "<socket slug>", "output_socket": "<socket slug>"}, and run the command again (a '
        "setting naming one of the pack's sockets keeps it).")
    write_config(ground_truth, {"input_socket": "scan-b", "output_socket": "risk-a"})
    done = run("evaluation.phase", HECKTOR2, "--ground-truth", ground_truth, "--pack", pack)
    assert done.returncode == 0, done.stderr
    assert read_config(ground_truth) == {"input_socket": "scan-b", "output_socket": "risk-a"}


def test_a_pack_without_the_socket_kind_and_bad_packs(tmp_path):
    ground_truth = ground_truth_copy(HECKTOR2, tmp_path)
    pack = write_pack_zip(tmp_path / "kit.zip", [{"inputs": [forge_socket("ct", "Image")],
                                                  "outputs": [forge_socket("hpv", "Bool")]}])
    done = run("evaluation.phase", HECKTOR2, "--ground-truth", ground_truth, "--pack", pack)
    assert done.returncode == 3
    assert ("'output_socket' (a JSON output holding a number (Float)) matches none of the outputs (hpv)"
            in last_line(done))
    (tmp_path / "not-a-pack.zip").write_bytes(b"PK but not a zip")
    done = run("evaluation.phase", HECKTOR2, "--ground-truth", ground_truth, "--pack", tmp_path / "not-a-pack.zip")
    assert done.returncode == 3 and "neither a phase pack's zip nor its unpacked folder" in last_line(done)
    (tmp_path / "empty").mkdir()
    done = run("evaluation.phase", HECKTOR2, "--ground-truth", ground_truth, "--pack", tmp_path / "empty")
    assert done.returncode == 3 and "is not an unpacked phase pack" in last_line(done)
    done = run("evaluation.phase", HECKTOR2, "--pack", pack)
    assert done.returncode == 2 and "--pack needs --ground-truth" in last_line(done)
    done = run("evaluation.phase", HECKTOR2, "--ground-truth", ground_truth, "--pack", tmp_path / "absent.zip")
    assert done.returncode == 2
    assert not (ground_truth / "config.json").exists()
    done = run("evaluation.phase", HECKTOR2, "--ground-truth", ground_truth)  # without --pack: as before
    assert done.returncode == 0 and json.loads(done.stdout)[0]["score_jsonpath"]


# ---- several interfaces: one case socket each ---------------------------------------------------


def test_a_case_socket_per_interface_from_the_pack_to_the_evaluation(evaluate, tmp_path):
    """A phase taking a CT, or an MR, as alternative inputs (one interface each): the pack route
    names both, and a submission whose jobs come from either interface is read."""
    ground_truth = ground_truth_copy(HECKTOR2, tmp_path)
    pack = write_pack_zip(tmp_path / "kit.zip", [
        {"inputs": [forge_socket("ct-image", "Image"), forge_socket("pet-image", "Image")],
         "outputs": [forge_socket("rfs", "Float")]},
        {"inputs": [forge_socket("mr-image", "Image")], "outputs": [forge_socket("rfs", "Float")]},
    ])
    done = run("evaluation.phase", HECKTOR2, "--ground-truth", ground_truth, "--pack", pack)
    assert done.returncode == 0, done.stderr
    assert read_config(ground_truth) == {"input_socket": ["ct-image", "mr-image"], "output_socket": "rfs"}
    input_dir = tmp_path / "input"
    shutil.copytree(ROOT / "test" / HECKTOR2 / "input", input_dir)
    jobs = json.loads((input_dir / "predictions.json").read_text())
    for job in jobs[::2]:  # every other patient through the MR interface
        (ct,) = [v for v in job["inputs"] if v["socket"]["slug"] == "ct-image"]
        ct["socket"]["slug"] = "mr-image"
        job["inputs"] = [ct]
    (input_dir / "predictions.json").write_text(json.dumps(jobs))
    run_ = evaluate(HECKTOR2, input_dir, ground_truth)
    assert run_.code == 0, run_.stderr
    expected = json.loads((ROOT / "test" / HECKTOR2 / "expected_metrics.json").read_text())
    assert run_.metrics["aggregates"] == expected["aggregates"]
    assert run_.metrics["settings"]["input_socket"] == ["ct-image", "mr-image"]
    for job in jobs[1::2]:  # a patient whose job has neither: the submission's fault
        job["inputs"] = [v for v in job["inputs"] if v["socket"]["slug"] != "ct-image"]
        break
    (input_dir / "predictions.json").write_text(json.dumps(jobs))
    run_ = evaluate(HECKTOR2, input_dir, ground_truth)
    assert run_.code == 1 and "has no input 'ct-image' or 'mr-image'" in run_.last_error_line


@pytest.mark.parametrize("challenge", sorted(CHALLENGES))
def test_every_case_socket_setting_takes_one_name_or_one_per_interface(challenge):
    cls = CHALLENGES[challenge].settings_class
    (case_input,) = [f.name for f in socket_fields(challenge) if f.metadata["socket"] == CASE_INPUT]
    assert cls.from_mapping({case_input: "a"}).as_dict()[case_input] == "a"
    assert cls.from_mapping({case_input: ["a", "b"]}).as_dict()[case_input] == ["a", "b"]
    for bad, words in [([], "one socket slug per interface"), (["a", ""], "one socket slug per interface"),
                       (["a", "a"], "names a socket twice"), (["a", 1], f"setting '{case_input}[1]' must be text"),
                       (1, "must be text or a list of them, not a number")]:
        with pytest.raises(SetupError, match=words.replace("[", r"\[").replace("]", r"\]")):
            cls.from_mapping({case_input: bad})
    for f in socket_fields(challenge):
        if f.metadata["socket"] != CASE_INPUT:
            with pytest.raises(SetupError, match="must be text"):
                cls.from_mapping({f.name: ["a"]})
            with pytest.raises(SetupError, match="must name the phase's output socket"):
                cls.from_mapping({f.name: ""})


@pytest.mark.parametrize("challenge", sorted(CHALLENGES))
def test_an_empty_case_socket_is_the_jobs_only_image(challenge, evaluate, tmp_path):
    """An empty case-input setting names no socket: a job's case is its only image input (the
    settings rule, for every challenge), the same scores as naming the socket; jobs with several
    image inputs are the configuration's fault (exit 3)."""
    input_dir, ground_truth = algorithm_example(challenge, tmp_path)
    named = evaluate(challenge, input_dir, ground_truth)
    assert named.code == 0
    (case_input,) = [f.name for f in socket_fields(challenge) if f.metadata["socket"] == CASE_INPUT]
    write_config(ground_truth, {**read_config(ground_truth), case_input: ""})
    images = {sum(v["image"] is not None for v in job["inputs"])
              for job in json.loads((input_dir / "predictions.json").read_text())}
    run_ = evaluate(challenge, input_dir, ground_truth)
    if images == {1}:
        assert run_.code == 0, run_.last_error_line
        without_settings = [{k: v for k, v in r.metrics.items() if k != "settings"} for r in (named, run_)]
        assert without_settings[0] == without_settings[1]
    else:
        assert (run_.code, run_.wrote_metrics) == (3, False)
        assert "image inputs: the challenge must name the socket" in run_.last_error_line


# ---- the bundled predictions.json files as the platform writes them ----------------------------

BUNDLED = sorted(ROOT.glob("test/*/**/predictions.json"))


def test_bundled_predictions_cover_both_json_output_shapes():
    shapes = {(v["socket"]["kind"], v["socket"]["super_kind"]) for path in BUNDLED
              for job in json.loads(path.read_text()) for v in job["outputs"]}
    assert {("Float", "Value"), ("Bool", "Value"), ("Anything", "File")} <= shapes


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: str(p.relative_to(ROOT)))
def test_bundled_predictions_follow_the_platforms_socket_kinds(path):
    """An image kind is an Image; a Float or Bool output a Value (the platform's default for a JSON
    socket stored in its database), its value inline and in its file; a Multiple points output
    always a File (never stored in the database); another JSON kind a Value or a File."""
    jobs = json.loads(path.read_text())
    differ = 0  # Value outputs whose file differs from the inline value: only an invalid example's
    for job in jobs:
        for value in job["inputs"] + job["outputs"]:
            socket = value["socket"]
            kind, super_kind = socket["kind"], socket["super_kind"]
            if kind in IMAGE_KINDS:
                assert super_kind == "Image" and value["image"]["name"], socket
            elif kind in ("Float", "Bool"):
                assert super_kind == "Value", socket
            elif kind in NEVER_IN_DATABASE:
                assert super_kind == "File", socket
            else:
                assert kind in JSON_EXAMPLES and super_kind in ("Value", "File"), socket
            if super_kind == "Value":
                assert value["value"] is not None and value["file"] is None
                written = path.parent / job["pk"] / "output" / socket["relative_path"]
                differ += written.read_text() != json.dumps(value["value"]) + "\n"
            elif super_kind == "File":
                assert value["value"] is None and value["file"]
    invalid = "invalid" in path.relative_to(ROOT).parts or path.parent.name == "team-x"
    assert differ <= (1 if invalid else 0)  # an invalid example rewrites one output file


@pytest.mark.parametrize("challenge", ["hecktor2025-task2", "hecktor2025-task3"])
def test_a_value_output_as_a_file_scores_the_same_bytes(challenge, tmp_path):
    """The same outputs as File sockets (a Float or Bool socket not stored in the platform's
    database): the same metrics.json, byte for byte."""
    from tests.cli_runs import run_command_line

    shutil.copytree(ROOT / "test" / challenge / "input", tmp_path / "input")
    jobs = json.loads((tmp_path / "input" / "predictions.json").read_text())
    for job in jobs:
        for value in job["outputs"]:
            value["socket"]["super_kind"], value["value"] = "File", None
            value["file"] = f"https://example.invalid/{value['socket']['relative_path']}"
    (tmp_path / "input" / "predictions.json").write_text(json.dumps(jobs, indent=2))
    run_ = run_command_line(challenge, tmp_path / "input", ROOT / "ground-truth" / challenge, tmp_path / "out")
    assert run_.code == 0, run_.stderr
    expected = (ROOT / "test" / challenge / "expected_metrics.json").read_bytes()
    assert (tmp_path / "out" / "metrics.json").read_bytes() == expected
