"""Hostile submissions, ground truths and command lines, run through the real command line.

Each case copies a bundled example (test/<key>/input, or a phase derived from it), applies one
mutation that writes real files (links, named pipes, sparse files, header bombs, HDF5 links...),
and runs `python -m evaluation KEY --input ... --output ... --ground-truth ... --workers 1` in a
separate process from the repository root, under a data-segment ceiling (RLIMIT_DATA, 1.5 GiB)
and a timeout. Every case asserts:

- the exit code (1: the participant's fault; 3: the platform's or organizer's; 0 where the
  input is legitimate and must score like the example);
- no metrics.json in --output after a failure (even one left there by an earlier run);
- the exact last non-empty stderr line (tests/fixtures/hostile_expected.json, one place to
  update: case id -> {"exit": N, "line": "..."}; "{input}", "{output}", "{ground_truth}" and
  "{case}" in a line stand for the case's folders);
- that the secret planted outside the input ("hunter2", tests/hostile_files.py) never appears
  in stdout or stderr, and that a case pointing at it never exits 0;
- case-specific checks (metrics equal to the example's, degenerate survival values...); an
  exit-0 case is checked by its metrics.json, not by its stderr.

All selected cases run up front, concurrently (HOSTILE_JOBS threads, default max(4, 2 x CPUs)),
in a session fixture; each is then reported as its own test. Runners (HOSTILE_RUNNER):

- "fork" (default): a multiprocessing forkserver that imported the evaluation package once forks
  one child per case (same ceiling, same argv, evaluation/__main__.py run as `-m` runs it): no
  interpreter start (~2 s of importing scikit-learn) per case, so the suite takes seconds;
- "subprocess": `sys.executable -m evaluation ...`, preexec_fn setting RLIMIT_DATA, exactly as
  the platform starts the image's command (CI runs the suite this way too).

The cases named after a challenge and its file formats have their exact lines recorded; the
`generic-<challenge>-*` cases (named pipe, dangling link, link to the secret, folder in place of
the first submission file, a stale metrics.json, the command-line faults) run for every challenge
of the registry with no entry to add: a new challenge folder gets them all.

Cases marked `slow` (10-million-row CSVs) write hundreds of MB; deselect them with
`-m "not slow"`. The table of every case (expected and actual exit, actual last line):
`python -m tests.test_hostile [--slow] [--json=PATH] [ids or key prefixes...]`.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests import hostile_files as hf
from tests.bundled import is_bundled
from tests.cli_runs import limit_data
from tests.hostile_files import ROOT, SECRET_MARK, Submission

EXPECTED_FILE = Path(__file__).resolve().parent / "fixtures" / "hostile_expected.json"
MEMORY_LIMIT = int(1.5 * 2**30)  # RLIMIT_DATA of every run
TIMEOUT = float(os.environ.get("HOSTILE_TIMEOUT", "60"))  # seconds per run
PIPE_TIMEOUT = min(TIMEOUT, 30.0)  # a named pipe must be refused, not waited on
SLOW_TIMEOUT = max(TIMEOUT, 120.0)
DROP_ENV = ("EVALUATION_CHALLENGE", "EVALUATION_WORKERS")
SPARSE_SIZE = 200 * 2**20  # a "huge" output file: 200 MiB of zero bytes, no disk space
TEN_MILLION = 10_000_000


# ---------------------------------------------------------------------------------------------
# Cases


@dataclass(frozen=True)
class Spec:
    id: str
    key: str
    build: Callable[[Path], Submission]
    slow: bool = False
    timeout: float = TIMEOUT
    checks: tuple[Callable[[Result, Submission], list[str]], ...] = ()
    touches_secret: bool = False  # points at the secret: must never exit 0
    before_scoring: bool = False  # must stop before any case is scored
    expect: dict | None = None  # a generic case's expectation, instead of an entry in EXPECTED_FILE


SPECS: dict[str, Spec] = {}


def add(case_id: str, key: str, build: Callable[[Path], Submission], **options) -> None:
    assert case_id not in SPECS, case_id
    if options.get("slow") and "timeout" not in options:
        options["timeout"] = SLOW_TIMEOUT
    SPECS[case_id] = Spec(case_id, key, build, **options)


# ---- checks -------------------------------------------------------------------------------


def expected_metrics(key: str) -> dict:
    return json.loads((ROOT / "test" / key / "expected_metrics.json").read_text())


def same_metrics_as_example(key: str, only: str | None = None, exclude: tuple[str, ...] = ()):
    """metrics.json equal to test/<key>/expected_metrics.json (or its `only` section, without
    the `exclude` keys of that section)."""
    def check(result: Result, sub: Submission) -> list[str]:
        want, got = expected_metrics(key), result.metrics
        if only is not None:
            want, got = want.get(only, {}), (got or {}).get(only, {})
            want = {k: v for k, v in want.items() if k not in exclude}
            got = {k: v for k, v in got.items() if k not in exclude}
        if got != want:
            different = sorted(k for k in set(want) | set(got or {}) if (got or {}).get(k) != want.get(k))
            return [f"metrics differ from test/{key}/expected_metrics.json{f' ({only})' if only else ''} at "
                    f"{', '.join(different[:8])}"]
        return []
    check.__name__ = f"same_metrics_as_example({key})"
    return check


def aggregate(path: str, predicate: Callable[[Any], bool], description: str):
    def check(result: Result, sub: Submission) -> list[str]:
        value: Any = result.metrics
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return [] if predicate(value) else [f"{path} is {value!r}; expected {description}"]
    return check


def finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def c_index_as_lifelines(result: Result, sub: Submission) -> list[str]:
    """The C-index equals lifelines' concordance_index on the same times, events and risks (an
    independent computation; lifelines takes scores that are high for a long survival)."""
    from lifelines.utils import concordance_index

    truth = _task2_truth(sub.ground_truth)
    patients = sorted(set(truth) & set(sub.case_ids()))
    risks = [json.loads(sub.output_path(p, "rfs").read_text()) for p in patients]
    want = concordance_index([truth[p][0] for p in patients], [-r for r in risks], [truth[p][1] for p in patients])
    got = (result.metrics or {}).get("aggregates", {}).get("c_index")
    return [] if got is not None and abs(got - want) <= 1e-12 else [f"c_index {got!r}; lifelines gives {want!r}"]


def stale_metrics_gone(result: Result, sub: Submission) -> list[str]:
    return ["the metrics.json of an earlier run is still in --output"] if (sub.output / "metrics.json").exists() else []


# ---- JSON outputs -------------------------------------------------------------------------

# family -> (challenge key, derived phase or None, output slug, ground-truth file a link may target)
JSON_FAMILIES = {
    "rare26": ("rare26", None, "stacked-neoplastic-lesion-likelihoods", "test_metadata.json"),
    "isic2019": ("isic2019", None, "skin-lesion-class-confidences", "truth.csv"),
    "csv2026-risk": ("csv2026", None, "plaque-risk", "0001_label.h5"),
    "hecktor2025-task2": ("hecktor2025-task2", None, "rfs", "hecktor2025_task2_test.csv"),
    "hecktor2025-task3": ("hecktor2025-task3", None, "hpv-status", "hecktor2025_task3_test.csv"),
    "camelyon16-likelihood": ("camelyon16", "camelyon16-algorithm", "metastasis-likelihood", "reference.csv"),
    "camelyon16-points": ("camelyon16", "camelyon16-algorithm", "metastasis-detections", "reference.csv"),
}


def _open(case_dir: Path, key: str, phase: str | None) -> Submission:
    return Submission.derived(case_dir, phase) if phase else Submission.example(case_dir, key)


def _with_token(document: Any, token: str) -> str:
    """The document with the raw JSON `token` where a number belongs: index 3 of an array, the
    first category of an ISIC object, the probability of the first point, or the whole value."""
    if isinstance(document, list):
        return hf.json_list_with(document, 3, token)
    if isinstance(document, dict) and "points" in document:
        copy = json.loads(json.dumps(document))
        copy["points"][0]["probability"] = "@TOKEN@"
        return json.dumps(copy).replace('"@TOKEN@"', token) + "\n"
    if isinstance(document, dict):
        return hf.json_object_with(document, next(iter(document)), token)
    return token + "\n"


def _with_coordinate(document: dict, token: str) -> str:
    copy = json.loads(json.dumps(document))
    copy["points"][0]["point"][0] = "@TOKEN@"
    return json.dumps(copy).replace('"@TOKEN@"', token) + "\n"


def _duplicate_key(document: dict) -> str:
    if "points" in document:  # the points again, empty: a last-wins reader sees no detection
        return json.dumps(document)[:-1] + ', "points": []}\n'
    first = next(iter(document))
    return hf.json_object_with(document, first, json.dumps(1.0 - document[first]), duplicate=True)


JSON_MUTATIONS: dict[str, Callable[[Path, Any, Submission, str], Any]] = {
    "malformed": lambda p, d, s, gt: hf.put_text(p, "[0.5, 0.25,, 0.125]\n"),
    "truncated": lambda p, d, s, gt: hf.put_bytes(p, hf.truncated(p)),
    "empty": lambda p, d, s, gt: hf.put_bytes(p, b""),
    "string": lambda p, d, s, gt: hf.put_text(p, '"0.5"\n'),
    "object": lambda p, d, s, gt: hf.put_text(p, '{"value": 0.5}\n'),
    "array": lambda p, d, s, gt: hf.put_text(p, "[0.5]\n"),
    "null": lambda p, d, s, gt: hf.put_text(p, "null\n"),
    "bool": lambda p, d, s, gt: hf.put_text(p, "true\n"),
    "nan": lambda p, d, s, gt: hf.put_text(p, _with_token(d, "NaN")),
    "infinity": lambda p, d, s, gt: hf.put_text(p, _with_token(d, "Infinity")),
    "minus-infinity": lambda p, d, s, gt: hf.put_text(p, _with_token(d, "-Infinity")),
    "1e400": lambda p, d, s, gt: hf.put_text(p, _with_token(d, "1e400")),
    "int-400-digits": lambda p, d, s, gt: hf.put_text(p, _with_token(d, hf.big_int(400))),
    "int-5000-digits": lambda p, d, s, gt: hf.put_text(p, _with_token(d, hf.big_int(5000))),
    "nested-100000": lambda p, d, s, gt: hf.put_text(p, hf.deep_json()),
    "duplicate-key": lambda p, d, s, gt: hf.put_text(p, _duplicate_key(d)),
    "coordinate-1e400": lambda p, d, s, gt: hf.put_text(p, _with_coordinate(d, "1e400")),
    "coordinate-int-400-digits": lambda p, d, s, gt: hf.put_text(p, _with_coordinate(d, hf.big_int(400))),
    "bom": lambda p, d, s, gt: hf.put_bytes(p, hf.UTF8_BOM + p.read_bytes()),
    "directory": lambda p, d, s, gt: hf.put_directory(p),
    "named-pipe": lambda p, d, s, gt: hf.put_fifo(p),
    "symlink-secret": lambda p, d, s, gt: hf.put_symlink(p, s.secret),
    "symlink-ground-truth": lambda p, d, s, gt: hf.put_symlink(p, s.ground_truth / gt),
    "sparse-200mb": lambda p, d, s, gt: hf.put_sparse(p, SPARSE_SIZE),
}

JSON_CASES = {
    "rare26": ["malformed", "truncated", "empty", "string", "object", "null", "bool", "nan", "infinity",
               "minus-infinity", "1e400", "int-400-digits", "int-5000-digits", "nested-100000", "bom", "directory",
               "named-pipe", "symlink-secret", "symlink-ground-truth", "sparse-200mb"],
    "isic2019": ["truncated", "null", "nan", "int-400-digits", "int-5000-digits", "nested-100000", "duplicate-key",
                 "bom", "named-pipe", "symlink-ground-truth"],
    "csv2026-risk": ["null", "nan", "int-400-digits", "int-5000-digits", "nested-100000", "named-pipe"],
    "hecktor2025-task2": ["string", "null", "bool", "infinity", "1e400", "int-400-digits", "int-5000-digits",
                          "nested-100000", "bom", "named-pipe", "symlink-secret", "symlink-ground-truth",
                          "sparse-200mb"],
    "hecktor2025-task3": ["null", "nan", "int-400-digits", "int-5000-digits", "nested-100000", "bom", "named-pipe"],
    "camelyon16-likelihood": ["string", "nan", "1e400", "int-400-digits", "int-5000-digits", "nested-100000", "bom",
                              "named-pipe", "symlink-secret"],
    "camelyon16-points": ["truncated", "array", "nan", "duplicate-key", "coordinate-1e400",
                          "coordinate-int-400-digits", "nested-100000", "sparse-200mb"],
}


def _json_case(family: str, mutation: str):
    key, phase, slug, gt_file = JSON_FAMILIES[family]

    def build(case_dir: Path) -> Submission:
        sub = _open(case_dir, key, phase)
        # the first case by id (cases are read in that order), whatever example the organizer made
        path = sub.output_path(sub.case_ids()[0], slug)
        JSON_MUTATIONS[mutation](path, json.loads(path.read_text()), sub, gt_file)
        return sub
    return build


for _family, _mutations in JSON_CASES.items():
    _key = JSON_FAMILIES[_family][0]
    for _mutation in _mutations:
        _checks: tuple = ()
        if _mutation == "bom":  # json.loads(bytes) (the platform's reading) accepts a UTF-8 BOM
            _checks = (same_metrics_as_example(_key),)
        add(f"{_family}-json-{_mutation}", _key, _json_case(_family, _mutation), checks=_checks,
            timeout=PIPE_TIMEOUT if _mutation == "named-pipe" else TIMEOUT,
            touches_secret=_mutation == "symlink-secret")


def _camelyon16_algorithm_valid(case_dir: Path) -> Submission:
    return Submission.derived(case_dir, "camelyon16-algorithm")


add("camelyon16-algorithm-valid", "camelyon16", _camelyon16_algorithm_valid,
    checks=(same_metrics_as_example("camelyon16"),))


# ---- predictions.json (the platform's file: its defects are exit 3) -----------------------


def _rare26_jobs(change: Callable[[Submission, list], Any]):
    def build(case_dir: Path) -> Submission:
        sub = Submission.example(case_dir, "rare26")
        jobs = sub.jobs()
        replaced = change(sub, jobs)
        if isinstance(replaced, str):
            (sub.input / "predictions.json").write_text(replaced)
        else:
            sub.write_jobs(jobs)
        return sub
    return build


def _job_index(jobs: list, case_id: str) -> int:
    return next(n for n, job in enumerate(jobs) if hf.case_id_of_image(job["inputs"][0]["image"]["name"]) == case_id)


def _set_relative_path(value: str):
    def change(sub: Submission, jobs: list):
        jobs[_job_index(jobs, "rare26_stack_0000")]["outputs"][0]["socket"]["relative_path"] = value
    return change


def _copy_job(sub: Submission, jobs: list, pk: str, image_name: str | None) -> None:
    source = jobs[_job_index(jobs, "rare26_stack_0000")]
    job = json.loads(json.dumps(source))
    job["pk"] = pk
    if image_name:
        job["inputs"][0]["image"]["name"] = image_name
    shutil.copytree(sub.input / source["pk"], sub.input / pk)
    jobs.append(job)


def _duplicate_pk(sub: Submission, jobs: list):
    first = _job_index(jobs, "rare26_stack_0000")
    other = _job_index(jobs, "rare26_stack_0001")
    jobs[other]["pk"] = jobs[first]["pk"]


def _remove_job(sub: Submission, jobs: list):
    del jobs[_job_index(jobs, "rare26_stack_0003")]


def _huge_int_pk(sub: Submission, jobs: list) -> str:
    text = json.dumps(jobs, indent=2)
    pk = jobs[0]["pk"]
    return text.replace(json.dumps(pk), hf.big_int(5000), 1)


def _null_job(sub: Submission, jobs: list):
    jobs[0] = None


def _pk_dotdot(sub: Submission, jobs: list):
    jobs[_job_index(jobs, "rare26_stack_0000")]["pk"] = "../../outside"


add("predictions-json-malformed", "rare26",
    _rare26_jobs(lambda s, j: json.dumps(j, indent=2)[: len(json.dumps(j, indent=2)) // 2]))
add("predictions-json-empty", "rare26", _rare26_jobs(lambda s, j: ""))
add("predictions-json-object", "rare26", _rare26_jobs(lambda s, j: '{"jobs": []}\n'))
add("predictions-json-nested-100000", "rare26", _rare26_jobs(lambda s, j: hf.deep_json(inner="{}")))
add("predictions-json-int-5000-digits-pk", "rare26", _rare26_jobs(_huge_int_pk))
add("predictions-json-null-job", "rare26", _rare26_jobs(_null_job))
add("predictions-json-duplicate-pk", "rare26", _rare26_jobs(_duplicate_pk))
add("predictions-json-pk-dotdot", "rare26", _rare26_jobs(_pk_dotdot))
add("predictions-json-missing-job", "rare26", _rare26_jobs(_remove_job))
add("predictions-json-extra-job", "rare26",
    _rare26_jobs(lambda s, j: _copy_job(s, j, "00000000-0000-4000-8000-000000000099", "rare26_stack_0099.tiff")))
add("predictions-json-two-jobs-same-case", "rare26",
    _rare26_jobs(lambda s, j: _copy_job(s, j, "00000000-0000-4000-8000-000000000098", None)))
add("predictions-json-relative-path-dotdot", "rare26", _rare26_jobs(_set_relative_path("../../../secret.txt")),
    touches_secret=True)
add("predictions-json-relative-path-absolute", "rare26", _rare26_jobs(_set_relative_path("/etc/passwd")))
add("predictions-json-relative-path-nul", "rare26",
    _rare26_jobs(_set_relative_path("stacked-neoplastic-lesion-likelihoods.json\u0000.txt")))
add("predictions-json-relative-path-5000-chars", "rare26", _rare26_jobs(_set_relative_path("a" * 5000 + ".json")))


def _image_at_output_root(key: str, slugs: tuple[str, ...]):
    """The platform's default socket: relative_path "" and the image right in /input/<pk>/output/."""
    def build(case_dir: Path) -> Submission:
        sub = Submission.example(case_dir, key)
        jobs = sub.jobs()
        for job in jobs:
            for output in job["outputs"]:
                socket = output["socket"]
                if socket["slug"] in slugs:
                    folder = sub.input / job["pk"] / "output" / socket["relative_path"]
                    for image in list(folder.iterdir()):
                        image.rename(sub.input / job["pk"] / "output" / image.name)
                    shutil.rmtree(folder)
                    if not any((sub.input / job["pk"] / "output" / "images").iterdir()):
                        (sub.input / job["pk"] / "output" / "images").rmdir()
                    socket["relative_path"] = ""
        sub.write_jobs(jobs)
        return sub
    return build


add("predictions-json-image-relative-path-empty", "hecktor2025-task1",
    _image_at_output_root("hecktor2025-task1", ("tumor-lymph-node-segmentation",)),
    checks=(same_metrics_as_example("hecktor2025-task1"),))
add("csv2026-image-relative-path-empty", "csv2026",
    _image_at_output_root("csv2026", ("longitudinal-carotid-segmentation",)),
    checks=(same_metrics_as_example("csv2026"),))


# ---- images of algorithm outputs (csv2026 .mha/.tif, hecktor task 1 .mha) ------------------

LONG = "longitudinal-carotid-segmentation"
SEGMENTATION = "tumor-lymph-node-segmentation"


def _image_case(key: str, case_id: str, slug: str, mutate: Callable[[Path, Submission], Any]):
    def build(case_dir: Path) -> Submission:
        sub = Submission.example(case_dir, key)
        mutate(sub.image_path(case_id, slug), sub)
        return sub
    return build


def _replace_image(data: Callable[[Path, Submission], bytes], suffix: str | None = None):
    """The image replaced by `data`, under a name with `suffix` (default: the same name)."""
    def mutate(path: Path, sub: Submission) -> None:
        content = data(path, sub)
        path.unlink()
        hf.put_bytes(path.with_suffix(suffix) if suffix else path, content)
    return mutate


def _relative(target: Path, start: Path) -> str:
    return os.path.relpath(target, start)


def _shift_origin(path: Path, sub: Submission) -> bytes:
    array, image = hf.read_image_array(path)
    image.SetOrigin(tuple(v + 5.0 for v in image.GetOrigin()))
    scratch = path.parent / "scratch.mha"
    hf.write_image(scratch, array, like=image)
    data = scratch.read_bytes()
    scratch.unlink()
    return data


def _image_with(transform: Callable[[np.ndarray], np.ndarray], keep_geometry: bool = True):
    def data(path: Path, sub: Submission) -> bytes:
        array, image = hf.read_image_array(path)
        scratch = path.parent / "scratch.mha"
        changed = transform(array)
        hf.write_image(scratch, changed, like=image if keep_geometry and changed.shape == array.shape else None)
        content = scratch.read_bytes()
        scratch.unlink()
        return content
    return data


def _float_with_nan(array: np.ndarray) -> np.ndarray:
    out = array.astype(np.float32)
    out[0, 0, 0] = np.nan
    return out


IMAGE_MUTATIONS = {
    "empty": _replace_image(lambda p, s: b""),
    "corrupt": _replace_image(lambda p, s: hf.corrupt_bytes()),
    "truncated": _replace_image(lambda p, s: hf.truncated(p)),
    "truncated-body": _replace_image(lambda p, s: hf.truncated_body(p)),
    "datafile-secret": _replace_image(lambda p, s: hf.mha_header((21, 1) if s.key == "csv2026" else (21, 1, 1),
                                                                 str(s.secret))),
    "datafile-etc-passwd": _replace_image(lambda p, s: hf.mha_header((16, 1) if s.key == "csv2026" else (16, 1, 1),
                                                                     "/etc/passwd")),
    "datafile-dotdot": _replace_image(lambda p, s: hf.mha_header((21, 1) if s.key == "csv2026" else (21, 1, 1),
                                                                 _relative(s.secret, p.parent))),
    "png-bomb-as-mha": _replace_image(lambda p, s: hf.png_bomb(60000, 60000)),
    "tiff-bomb": _replace_image(lambda p, s: hf.tiff_bomb(60000, 60000), suffix=".tif"),
    "directory": lambda p, s: (p.unlink(), hf.put_directory(p)),
    "named-pipe": lambda p, s: hf.put_fifo(p),
    "symlink-ground-truth": lambda p, s: hf.put_symlink(
        p, s.ground_truth / ("0001_label.h5" if s.key == "csv2026" else "CHUM-017.nii.gz")),
}

for _mutation in ("empty", "corrupt", "truncated", "truncated-body", "datafile-secret", "datafile-etc-passwd",
                  "datafile-dotdot", "png-bomb-as-mha", "directory", "named-pipe", "symlink-ground-truth"):
    add(f"csv2026-mha-{_mutation}", "csv2026", _image_case("csv2026", "0001", LONG, IMAGE_MUTATIONS[_mutation]),
        timeout=PIPE_TIMEOUT if _mutation == "named-pipe" else TIMEOUT,
        touches_secret=_mutation in ("datafile-secret", "datafile-dotdot"))
add("csv2026-mha-bomb-60000x60000", "csv2026",
    _image_case("csv2026", "0001", LONG, _replace_image(lambda p, s: hf.mha_bomb((60000, 60000)))))
add("csv2026-mha-3d-volume", "csv2026",
    _image_case("csv2026", "0001", LONG,
                _replace_image(_image_with(lambda a: np.stack([a.reshape(a.shape[-2:])] * 3)))))
for _mutation in ("empty", "corrupt", "truncated", "tiff-bomb"):
    add(f"csv2026-tif-{_mutation}", "csv2026", _image_case("csv2026", "0003", LONG, IMAGE_MUTATIONS[_mutation]))

for _mutation in ("empty", "corrupt", "truncated", "truncated-body", "datafile-secret", "datafile-etc-passwd",
                  "datafile-dotdot", "png-bomb-as-mha", "tiff-bomb", "directory", "named-pipe", "symlink-ground-truth"):
    add(f"hecktor2025-task1-mha-{_mutation}", "hecktor2025-task1",
        _image_case("hecktor2025-task1", "CHUM-017", SEGMENTATION, IMAGE_MUTATIONS[_mutation]),
        timeout=PIPE_TIMEOUT if _mutation == "named-pipe" else TIMEOUT,
        touches_secret=_mutation in ("datafile-secret", "datafile-dotdot"))
add("hecktor2025-task1-mha-bomb-2000x2000x2000", "hecktor2025-task1",
    _image_case("hecktor2025-task1", "CHUM-017", SEGMENTATION,
                _replace_image(lambda p, s: hf.mha_bomb((2000, 2000, 2000)))))
add("hecktor2025-task1-mha-origin-shifted", "hecktor2025-task1",
    _image_case("hecktor2025-task1", "CHUM-017", SEGMENTATION, _replace_image(_shift_origin)))
add("hecktor2025-task1-mha-one-slice-short", "hecktor2025-task1",
    _image_case("hecktor2025-task1", "CHUM-017", SEGMENTATION, _replace_image(_image_with(lambda a: a[:-1]))))
add("hecktor2025-task1-mha-float-nan", "hecktor2025-task1",
    _image_case("hecktor2025-task1", "CHUM-017", SEGMENTATION, _replace_image(_image_with(_float_with_nan))))


# ---- hecktor task 1 predictions-file phase: an unpacked ZIP of NIfTI masks -----------------


def _task1_files(mutate: Callable[[Submission, Path], Any]):
    def build(case_dir: Path) -> Submission:
        sub = Submission.derived(case_dir, "hecktor2025-task1-files")
        mutate(sub, sub.input / "masks" / "CHUM-017.nii.gz")
        return sub
    return build


def _swap_for(name: str, data: Callable[[Submission, Path], bytes]):
    def mutate(sub: Submission, path: Path) -> None:
        path.unlink()
        hf.put_bytes(path.with_name(name), data(sub, path))
    return mutate


def _folder_link_out(sub: Submission, folder: str) -> None:
    """input/<folder> moved out of the input and linked back: a ZIP's symlinked folder."""
    outside = sub.dir / "outside"
    shutil.move(str(sub.input / folder), str(outside))
    os.symlink(outside, sub.input / folder)


def _link_inside(sub: Submission, path: Path, stash: str) -> None:
    """The file moved to input/<stash> (a folder the readers skip or ignore) and linked back
    with a relative link: a link that stays inside the input."""
    target = sub.input / stash / path.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(path), str(target))
    os.symlink(os.path.relpath(target, path.parent), path)


add("hecktor2025-task1-files-valid", "hecktor2025-task1", _task1_files(lambda s, p: None),
    checks=(same_metrics_as_example("hecktor2025-task1"),))
add("hecktor2025-task1-files-nii-empty", "hecktor2025-task1", _task1_files(lambda s, p: hf.put_bytes(p, b"")))
add("hecktor2025-task1-files-nii-corrupt", "hecktor2025-task1",
    _task1_files(lambda s, p: hf.put_bytes(p, gzip_bytes(hf.corrupt_bytes()))))
add("hecktor2025-task1-files-nii-truncated", "hecktor2025-task1",
    _task1_files(lambda s, p: hf.put_bytes(p, hf.truncated(p))))
add("hecktor2025-task1-files-nii-bomb-2000x2000x2000", "hecktor2025-task1",
    _task1_files(lambda s, p: hf.put_bytes(p, hf.nifti_bomb((2000, 2000, 2000)))))
add("hecktor2025-task1-files-nrrd-data-file-secret", "hecktor2025-task1",
    _task1_files(_swap_for("CHUM-017.nrrd", lambda s, p: hf.nrrd_detached((21, 1, 1), str(s.secret)))),
    touches_secret=True)
add("hecktor2025-task1-files-nrrd-data-file-dotdot", "hecktor2025-task1",
    _task1_files(_swap_for("CHUM-017.nrrd", lambda s, p: hf.nrrd_detached((21, 1, 1), _relative(s.secret, p.parent)))),
    touches_secret=True)
add("hecktor2025-task1-files-mhd-data-file-dotdot", "hecktor2025-task1",
    _task1_files(_swap_for("CHUM-017.mhd", lambda s, p: hf.mha_header((21, 1, 1), _relative(s.secret, p.parent)))),
    touches_secret=True)
add("hecktor2025-task1-files-folder-link-out", "hecktor2025-task1",
    _task1_files(lambda s, p: _folder_link_out(s, "masks")))
add("hecktor2025-task1-files-link-inside", "hecktor2025-task1",
    _task1_files(lambda s, p: _link_inside(s, p, ".stash")),
    checks=(same_metrics_as_example("hecktor2025-task1"),))


def gzip_bytes(data: bytes) -> bytes:
    import gzip
    return gzip.compress(data)


# ---- csv2026 predictions-file phase: NNNN_pred.h5 ------------------------------------------


def _h5_case(mutate: Callable[[Submission, Path], Any]):
    def build(case_dir: Path) -> Submission:
        sub = Submission.derived(case_dir, "csv2026-h5")
        mutate(sub, sub.input / "preds" / "0001_pred.h5")
        return sub
    return build


def _h5_dataset(name: str, **options):
    def make(handle, key):
        handle.create_dataset(key, **options)
    return lambda s, p: hf.h5_replace(p, name, make)


def _h5_external_link(sub: Submission, path: Path) -> None:
    import h5py
    hf.h5_replace(path, "long_mask", lambda h, k: h.__setitem__(k, h5py.ExternalLink(
        str(sub.ground_truth / "0001_label.h5"), "/long_mask")))


def _h5_virtual(sub: Submission, path: Path) -> None:
    import h5py

    def make(handle, key):
        layout = h5py.VirtualLayout(shape=(96, 128), dtype="u1")
        layout[:] = h5py.VirtualSource(str(sub.ground_truth / "0001_label.h5"), "long_mask", shape=(96, 128))
        handle.create_virtual_dataset(key, layout)
    hf.h5_replace(path, "long_mask", make)


def _h5_external_raw_ground_truth(sub: Submission, path: Path) -> None:
    """The organizer's label file stored contiguously (its own ground-truth copy), and a mask
    whose raw storage is that file at the offset of the true mask: the truth, read as a guess."""
    truth = sub.own_ground_truth() / "0001_label.h5"
    hf.h5_contiguous_copy(truth)
    offset, shape, dtype = hf.h5_dataset_offset(truth, "long_mask")
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    hf.h5_replace(path, "long_mask", lambda h, k: h.create_dataset(k, shape=shape, dtype=dtype,
                                                                   external=[(str(truth), offset, size)]))


def _h5_external_raw_secret(sub: Submission, path: Path) -> None:
    import h5py
    hf.h5_replace(path, "long_mask", lambda h, k: h.create_dataset(
        k, shape=(96, 128), dtype="u1", external=[(str(sub.secret), 0, h5py.h5f.UNLIMITED)]))


def _h5_soft_link(target: str):
    def mutate(sub: Submission, path: Path) -> None:
        import h5py
        with hf.h5_open(path, "a") as handle:
            data = handle["long_mask"][()]
            del handle["long_mask"]
            if target != "/nowhere":
                handle.create_dataset(target, data=data)
            handle["long_mask"] = h5py.SoftLink(target)
    return mutate


def _h5_string_mask(sub: Submission, path: Path) -> None:
    hf.h5_replace(path, "long_mask", lambda h, k: h.create_dataset(k, data=np.full((96, 128), b"x", dtype="S1")))


def _h5_wrong_shape(sub: Submission, path: Path) -> None:
    hf.h5_replace(path, "long_mask", lambda h, k: h.create_dataset(k, data=np.zeros((96, 127), dtype=np.uint8)))


def _h5_huge(name: str):
    def mutate(sub: Submission, path: Path) -> None:
        hf.h5_replace(path, name, lambda h, k: h.create_dataset(k, shape=(100_000, 100_000), dtype="u1",
                                                                 chunks=(1000, 1000), compression="gzip"))
    return mutate


def _h5_cls_text(sub: Submission, path: Path) -> None:
    hf.h5_replace(path, "cls", lambda h, k: h.create_dataset(k, data=b"high"))


add("csv2026-h5-valid", "csv2026", _h5_case(lambda s, p: None),
    checks=(same_metrics_as_example("csv2026", only="aggregates",
                                    exclude=("score_total", "score_time", "processing_time_seconds")),))
add("csv2026-h5-external-link-ground-truth", "csv2026", _h5_case(_h5_external_link))
add("csv2026-h5-virtual-dataset-ground-truth", "csv2026", _h5_case(_h5_virtual))
add("csv2026-h5-external-storage-ground-truth", "csv2026", _h5_case(_h5_external_raw_ground_truth))
add("csv2026-h5-external-storage-secret", "csv2026", _h5_case(_h5_external_raw_secret), touches_secret=True)
add("csv2026-h5-soft-link-inside-file", "csv2026", _h5_case(_h5_soft_link("/stash/long")),
    checks=(same_metrics_as_example("csv2026", only="aggregates",
                                    exclude=("score_total", "score_time", "processing_time_seconds")),))
add("csv2026-h5-soft-link-dangling", "csv2026", _h5_case(_h5_soft_link("/nowhere")))
add("csv2026-h5-group-for-mask", "csv2026",
    _h5_case(lambda s, p: hf.h5_replace(p, "long_mask", lambda h, k: h.create_group(k))))
add("csv2026-h5-cls-100000x100000", "csv2026", _h5_case(_h5_huge("cls")))
add("csv2026-h5-mask-100000x100000", "csv2026", _h5_case(_h5_huge("long_mask")))
add("csv2026-h5-string-mask", "csv2026", _h5_case(_h5_string_mask))
add("csv2026-h5-wrong-shape", "csv2026", _h5_case(_h5_wrong_shape))
add("csv2026-h5-cls-text", "csv2026", _h5_case(_h5_cls_text))
add("csv2026-h5-corrupt", "csv2026", _h5_case(lambda s, p: hf.put_bytes(p, hf.corrupt_bytes())))
add("csv2026-h5-empty", "csv2026", _h5_case(lambda s, p: hf.put_bytes(p, b"")))
add("csv2026-h5-named-pipe", "csv2026", _h5_case(lambda s, p: hf.put_fifo(p)), timeout=PIPE_TIMEOUT)
add("csv2026-h5-symlink-ground-truth", "csv2026",
    _h5_case(lambda s, p: hf.put_symlink(p, s.ground_truth / "0001_label.h5")))
add("csv2026-h5-symlink-secret", "csv2026", _h5_case(lambda s, p: hf.put_symlink(p, s.secret)), touches_secret=True)
add("csv2026-h5-folder-link-out", "csv2026", _h5_case(lambda s, p: _folder_link_out(s, "preds")))
add("csv2026-h5-link-inside", "csv2026", _h5_case(lambda s, p: _link_inside(s, p, ".stash")),
    checks=(same_metrics_as_example("csv2026", only="aggregates",
                                    exclude=("score_total", "score_time", "processing_time_seconds")),))



# ---- HDF5 chunks that do not unpack to what they hold: the submission's and the ground truth's --
# A chunk the library inflates to fewer bytes than it holds leaves heap memory in the array (a
# score that changes from run to run); one that inflates to more is a bomb (3 GiB from 3 MiB).

# family -> (challenge key, derived phase, HDF5 file in the input, HDF5 file of the ground truth, dataset)
H5_FAMILIES = {
    "csv2026-h5": ("csv2026", "csv2026-h5", "preds/0001_pred.h5", "0001_label.h5", "long_mask"),
}
H5_CHUNK_MUTATIONS: dict[str, Callable[[Path, str], Any]] = {
    "chunk-inflates-short": lambda p, d: hf.h5_write_chunk(p, d, __import__("zlib").compress(b"\0")),
    "chunk-unfiltered-1-byte": lambda p, d: hf.h5_write_chunk(p, d, b"\0", filtered=False),
    "chunk-bomb-3gib": lambda p, d: hf.h5_write_chunk(p, d, hf.zlib_bomb(3 << 30)),
    # h5py's compression="lzf": a stream cut inside a token, one referring to before its start.
    "lzf-chunk-cut-short": lambda p, d: hf.h5_write_chunk(p, d, b"\x00\x00\xe0\xff", compression="lzf"),
    "lzf-chunk-reference-before-start": lambda p, d: hf.h5_write_chunk(p, d, b"\x00\x00\xe0\xff\x01",
                                                                       compression="lzf"),
}


def _h5_chunk_case(family: str, side: str, mutate: Callable[[Path, str], Any]):
    key, phase, in_input, in_truth, dataset = H5_FAMILIES[family]

    def build(case_dir: Path) -> Submission:
        sub = _open(case_dir, key, phase)
        mutate(sub.input / in_input if side == "submission" else sub.own_ground_truth() / in_truth, dataset)
        return sub
    return build


for _family, (_key, *_) in H5_FAMILIES.items():
    for _mutation, _mutate in H5_CHUNK_MUTATIONS.items():
        for _side in ("submission", "ground-truth"):
            add(f"{_family}-{_side}-{_mutation}", _key, _h5_chunk_case(_family, _side, _mutate))

# Every mask written by h5py with compression="lzf" (the official scorer reads them with h5py):
# scored as the example.
add("csv2026-h5-submission-lzf", "csv2026",
    _h5_case(lambda s, p: [hf.h5_recompress(f, "lzf") for f in sorted(s.input.rglob("*.h5"))]),
    checks=(same_metrics_as_example("csv2026", only="aggregates",
                                    exclude=("score_total", "score_time", "processing_time_seconds")),))
add("csv2026-h5-ground-truth-lzf", "csv2026",
    _h5_case(lambda s, p: [hf.h5_recompress(f, "lzf") for f in sorted(s.own_ground_truth().glob("*.h5"))]),
    checks=(same_metrics_as_example("csv2026", only="aggregates",
                                    exclude=("score_total", "score_time", "processing_time_seconds")),))

# ---- HDF5 masks of the library's other kinds: valid files h5py reads, and their damaged chunks --
# Every mask of the submission or of the ground truth rewritten as one of hf.H5_MASK_KINDS stores it
# (scale-offset, n-bit, szip, gzip before shuffle, gzip twice, the latest file format, a chunk
# inflating past its size): the official reading (h5py) reads the same values, so scored as the
# example.
for _kind in hf.H5_MASK_KINDS:
    add(f"csv2026-h5-submission-{_kind}", "csv2026",
        _h5_case(lambda s, p, k=_kind: [hf.h5_rewrite_masks(f, k) for f in sorted(s.input.rglob("*.h5"))]),
        checks=(same_metrics_as_example("csv2026", only="aggregates",
                                        exclude=("score_total", "score_time", "processing_time_seconds")),))
    add(f"csv2026-h5-ground-truth-{_kind}", "csv2026",
        _h5_case(lambda s, p, k=_kind: [hf.h5_rewrite_masks(f, k) for f in sorted(s.own_ground_truth().glob("*.h5"))]),
        checks=(same_metrics_as_example("csv2026", only="aggregates",
                                        exclude=("score_total", "score_time", "processing_time_seconds")),))

# Their chunks damaged where the library would read heap memory (n-bit, scale-offset and szip cut
# short, scale-offset claiming more bits than the type), a chunk of the latest format cut short
# (named at its own place, not where the index lists it), a chunk moved outside the dataset,
# chunks never written without a fill value: refused, the submission's (exit 1) or the ground
# truth's (exit 3).
H5_FILTER_MUTATIONS: dict[str, Callable[[Path, str], Any]] = {
    "szip-chunk-cut-short": lambda p, d: hf.h5_cut_chunk(p, d, "szip", 100),
    "nbit-chunk-cut-short": lambda p, d: hf.h5_cut_chunk(p, d, "nbit-packed", 100),
    "scaleoffset-chunk-cut-short": lambda p, d: hf.h5_cut_chunk(p, d, "scaleoffset", 100),
    "scaleoffset-bits-past-the-type": lambda p, d: hf.h5_scaleoffset_bits(p, d, 9),
    "latest-format-chunk-cut-short": lambda p, d: hf.h5_cut_chunk(p, d, "latest-format", 10, place=(48, 0)),
    "chunk-outside": lambda p, d: hf.h5_chunk_outside(p, d),
    "chunks-never-written-no-fill": lambda p, d: hf.h5_never_written(p, d),
}
for _family, (_key, *_) in H5_FAMILIES.items():
    for _mutation, _mutate in H5_FILTER_MUTATIONS.items():
        for _side in ("submission", "ground-truth"):
            add(f"{_family}-{_side}-{_mutation}", _key, _h5_chunk_case(_family, _side, _mutate))

# ---- CSV predictions files ----------------------------------------------------------------

# family -> (challenge key, derived phase or None, file in the input, a plausible data row)
CSV_FAMILIES = {
    "isic2018": ("isic2018", None, "predictions.csv", "ISIC_0064018,0.06,0.56,0.01,0.03,0.01,0.3,0.01\n"),
    "hecktor2025-task2-csv": ("hecktor2025-task2", "hecktor2025-task2-csv", "predictions.csv", "CHUM-017,0.5\n"),
    "hecktor2025-task3-csv": ("hecktor2025-task3", "hecktor2025-task3-csv", "predictions.csv", "CHUM-017,1\n"),
    "camelyon16-slides": ("camelyon16", None, "slides.csv", "Test_001,0.5\n"),
    "camelyon16-detections": ("camelyon16", None, "Test_001.csv", "0.5,100,100\n"),
}


def _quoted(text: str) -> str:
    return "".join(",".join(f'"{cell}"' for cell in line.split(",")) + "\n" for line in text.splitlines())


def _ten_million_rows(path: Path, row: str) -> None:
    header = path.read_text().splitlines()[0]
    header = header if not header[0].isdigit() else ""
    block = row.encode() * 100_000
    with open(path, "wb") as handle:
        if header:
            handle.write(header.encode() + b"\n")
        for _ in range(TEN_MILLION // 100_000):
            handle.write(block)


def _prepend_row(row: str):
    def mutate(path: Path, sub: Submission) -> None:
        lines = path.read_text().splitlines(keepends=True)
        at = 1 if lines and lines[0].lower().startswith(("p,", "image", "patientid")) else 0
        hf.put_text(path, "".join(lines[:at] + [row] + lines[at:]))
    return mutate


CSV_MUTATIONS: dict[str, Callable[[Path, Submission], Any]] = {
    "bom": lambda p, s: hf.put_bytes(p, hf.UTF8_BOM + p.read_bytes()),
    "crlf": lambda p, s: hf.put_bytes(p, p.read_bytes().replace(b"\n", b"\r\n")),
    "semicolons": lambda p, s: hf.put_text(p, p.read_text().replace(",", ";")),
    "quoted": lambda p, s: hf.put_text(p, _quoted(p.read_text())),
    "empty": lambda p, s: hf.put_bytes(p, b""),
    "header-only": lambda p, s: hf.put_text(p, p.read_text().splitlines()[0] + "\n"),
    "symlink-secret": lambda p, s: hf.put_symlink(p, s.secret_csv),
    "named-pipe": lambda p, s: hf.put_fifo(p),
    "directory": lambda p, s: hf.put_directory(p),
    "nan": _prepend_row("nan,100,100\n"),
    "1e400": _prepend_row("0.5,1e400,100\n"),
    "sparse-200mb": lambda p, s: hf.put_sparse(p, SPARSE_SIZE),
    "two-csv-files": lambda p, s: shutil.copy(p, p.with_name("copy.csv")),
}

CSV_CASES = {
    "isic2018": ["bom", "crlf", "semicolons", "quoted", "empty", "header-only", "symlink-secret", "named-pipe",
                 "directory"],
    "hecktor2025-task2-csv": ["bom", "crlf", "semicolons", "quoted", "empty", "header-only", "symlink-secret",
                              "named-pipe", "two-csv-files"],
    "hecktor2025-task3-csv": ["crlf", "semicolons", "quoted", "empty", "header-only", "symlink-secret", "named-pipe"],
    "camelyon16-slides": ["bom", "crlf", "semicolons", "quoted", "empty", "header-only", "symlink-secret",
                          "named-pipe", "sparse-200mb"],
    "camelyon16-detections": ["quoted", "symlink-secret", "named-pipe", "nan", "1e400"],
}
CSV_ACCEPTED = ("bom", "crlf", "quoted")  # legitimate CSV: scores like the example


def _csv_case(family: str, mutate: Callable[[Path, Submission], Any]):
    key, phase, name, _ = CSV_FAMILIES[family]

    def build(case_dir: Path) -> Submission:
        sub = _open(case_dir, key, phase)
        mutate(sub.input / name, sub)
        return sub
    return build


for _family, _mutations in CSV_CASES.items():
    _key = CSV_FAMILIES[_family][0]
    for _mutation in _mutations:
        add(f"{_family}-{_mutation}", _key, _csv_case(_family, CSV_MUTATIONS[_mutation]),
            checks=(same_metrics_as_example(_key),) if _mutation in CSV_ACCEPTED else (),
            timeout=PIPE_TIMEOUT if _mutation == "named-pipe" else TIMEOUT,
            touches_secret=_mutation == "symlink-secret")
    add(f"{_family}-10-million-rows", _key,
        _csv_case(_family, lambda p, s, row=CSV_FAMILIES[_family][3]: _ten_million_rows(p, row)), slow=True)

for _family in ("hecktor2025-task2-csv", "hecktor2025-task3-csv"):
    add(f"{_family}-valid", CSV_FAMILIES[_family][0], _csv_case(_family, lambda p, s: None),
        checks=(same_metrics_as_example(CSV_FAMILIES[_family][0]),))


def _zip_folder_out(name: str):
    def mutate(path: Path, sub: Submission) -> None:
        upload = sub.input / "upload"
        upload.mkdir()
        shutil.move(str(path), str(upload / name))
        _folder_link_out(sub, "upload")
    return mutate


add("isic2018-folder-link-out", "isic2018", _csv_case("isic2018", _zip_folder_out("predictions.csv")))
add("isic2018-link-inside", "isic2018", _csv_case("isic2018", lambda p, s: _link_inside(s, p, ".stash")),
    checks=(same_metrics_as_example("isic2018"),))
add("hecktor2025-task2-csv-folder-link-out", "hecktor2025-task2",
    _csv_case("hecktor2025-task2-csv", _zip_folder_out("predictions.csv")))


def _camelyon16_folder_out(path: Path, sub: Submission) -> None:
    detections = sub.input / "detections"
    detections.mkdir()
    for csv_file in sorted(sub.input.glob("Test_*.csv")):
        shutil.move(str(csv_file), str(detections / csv_file.name))
    _folder_link_out(sub, "detections")


add("camelyon16-folder-link-out", "camelyon16", _csv_case("camelyon16-slides", _camelyon16_folder_out))
add("camelyon16-link-inside", "camelyon16",
    _csv_case("camelyon16-detections", lambda p, s: _link_inside(s, p, ".stash")),
    checks=(same_metrics_as_example("camelyon16"),))


# ---- HECKTOR task 2: degenerate survival data ----------------------------------------------


def _task2_risks(values: Callable[[str, float, int], float]):
    """Every patient's rfs.json replaced by values(patient, RFS, Relapse)."""
    def build(case_dir: Path) -> Submission:
        sub = Submission.example(case_dir, "hecktor2025-task2")
        truth = _task2_truth(sub.ground_truth)
        for case_id in sub.case_ids():
            time_, event = truth[case_id]
            sub.output_path(case_id, "rfs").write_text(json.dumps(values(case_id, time_, event)) + "\n")
        return sub
    return build


def _task2_truth(directory: Path) -> dict[str, tuple[float, int]]:
    lines = (directory / "hecktor2025_task2_test.csv").read_text().splitlines()[1:]
    return {p: (float(t), int(e)) for p, t, e in (line.split(",") for line in lines if line.strip())}


def _task2_ground_truth(rows: Callable[[list[tuple[str, float, int]]], list[tuple[str, float, int]]]):
    """An own ground truth with rows(original rows); the jobs of patients left out are removed."""
    def build(case_dir: Path) -> Submission:
        sub = Submission.example(case_dir, "hecktor2025-task2")
        truth = _task2_truth(sub.ground_truth)
        kept = rows([(p, t, e) for p, (t, e) in sorted(truth.items())])
        directory = sub.own_ground_truth()
        (directory / "hecktor2025_task2_test.csv").write_text(
            "PatientID,RFS,Relapse\n" + "".join(f"{p},{t:g},{e}\n" for p, t, e in kept))
        patients = {p for p, _, _ in kept}
        sub.write_jobs([job for job in sub.jobs()
                        if hf.case_id_of_image(job["inputs"][0]["image"]["name"]) in patients])
        return sub
    return build


def _two_patients(rows):
    event = next(r for r in rows if r[2] == 1)
    later = next(r for r in rows if r[1] > event[1])
    return sorted([event, later])


add("hecktor2025-task2-all-risks-equal", "hecktor2025-task2", _task2_risks(lambda p, t, e: 1.0),
    checks=(c_index_as_lifelines,
            aggregate("aggregates.c_index", lambda v: v == 0.5, "0.5 (every comparable pair tied)"),
            aggregate("aggregates.c_index_ci_lower", lambda v: v == 0.5, "0.5"),
            aggregate("aggregates.c_index_ci_upper", lambda v: v == 0.5, "0.5")))
add("hecktor2025-task2-risk-minus-time", "hecktor2025-task2", _task2_risks(lambda p, t, e: -t),
    checks=(aggregate("aggregates.c_index", lambda v: finite(v) and v > 0.99, "about 1 (a perfect ranking but for "
                      "tied times)"), c_index_as_lifelines))
add("hecktor2025-task2-risks-at-float-limits", "hecktor2025-task2",
    _task2_risks(lambda p, t, e: [1.7976931348623157e308, -1.7976931348623157e308, 5e-324][int(t) % 3]),
    checks=(aggregate("aggregates.c_index", lambda v: finite(v) and 0 <= v <= 1, "a number in [0, 1]"),
            c_index_as_lifelines))
add("hecktor2025-task2-ground-truth-one-patient", "hecktor2025-task2", _task2_ground_truth(lambda rows: rows[:1]))
add("hecktor2025-task2-ground-truth-all-censored", "hecktor2025-task2",
    _task2_ground_truth(lambda rows: [(p, t, 0) for p, t, _ in rows]))
add("hecktor2025-task2-ground-truth-same-time", "hecktor2025-task2",
    _task2_ground_truth(lambda rows: [(p, 365.0, e) for p, _, e in rows]),
    checks=(c_index_as_lifelines,))
add("hecktor2025-task2-ground-truth-two-patients", "hecktor2025-task2", _task2_ground_truth(_two_patients),
    checks=(c_index_as_lifelines,
            aggregate("aggregates.c_index", lambda v: v in (0.0, 0.5, 1.0), "0, 0.5 or 1 (one comparable pair)"),
            aggregate("aggregates.c_index_ci_lower", finite, "a finite number"),
            aggregate("aggregates.c_index_ci_upper", finite, "a finite number")))


# ---- config.json and case-mapping.json of the organizer (exit 3) ---------------------------


def _config(key: str, text: str | Callable[[str], str], file: str = "config.json"):
    def build(case_dir: Path) -> Submission:
        sub = Submission.example(case_dir, key)
        directory = sub.own_ground_truth()
        path = directory / file
        old = path.read_text().strip() if path.exists() else ""
        path.write_text(text(old) if callable(text) else text)
        return sub
    return build


def _csv2026_config(extra: str) -> Callable[[str], str]:
    return lambda old: '{"baseline_time_seconds": 40.0, ' + extra + "}\n"


CONFIG_CASES = {
    "hecktor2025-task1-config-iou-nan": ("hecktor2025-task1", '{"lesion_iou_threshold": NaN}\n'),
    "hecktor2025-task1-config-iou-infinity": ("hecktor2025-task1", '{"lesion_iou_threshold": Infinity}\n'),
    "hecktor2025-task1-config-iou-5": ("hecktor2025-task1", '{"lesion_iou_threshold": 5}\n'),
    "hecktor2025-task1-config-duplicate-key": ("hecktor2025-task1",
                                               '{"lesion_iou_threshold": 0.3, "lesion_iou_threshold": 0.5}\n'),
    "hecktor2025-task1-config-unknown-key": ("hecktor2025-task1", '{"lesion_iou_treshold": 0.3}\n'),
    "hecktor2025-task1-config-tolerance-nan": ("hecktor2025-task1", '{"geometry_tolerance": NaN}\n'),
    "hecktor2025-task1-config-malformed": ("hecktor2025-task1", '{"lesion_iou_threshold": 0.3,\n'),
    "csv2026-config-nsd-nan": ("csv2026", _csv2026_config('"nsd_tolerance_px": NaN')),
    "csv2026-config-nsd-infinity": ("csv2026", _csv2026_config('"nsd_tolerance_px": Infinity')),
    "csv2026-config-duplicate-key": ("csv2026", _csv2026_config('"nsd_tolerance_px": 3, "nsd_tolerance_px": 30')),
    "csv2026-config-unknown-key": ("csv2026", _csv2026_config('"nsd_tolerance": 3')),
    "hecktor2025-task2-config-confidence-nan": ("hecktor2025-task2", '{"confidence_level": NaN}\n'),
    "hecktor2025-task2-config-repetitions-5000-digits": ("hecktor2025-task2",
                                                         '{"bootstrap_repetitions": ' + hf.big_int(5000) + "}\n"),
    "rare26-config-repetitions-1e12": ("rare26", '{"repetitions": 1000000000000}\n'),
}
for _id, (_key, _text) in CONFIG_CASES.items():
    add(_id, _key, _config(_key, _text), before_scoring=True)

add("hecktor2025-task1-case-mapping-unknown-id", "hecktor2025-task1",
    _config("hecktor2025-task1", '{"CHUM-017__CT.nii.gz": "NOPE-001"}\n', file="case-mapping.json"),
    before_scoring=True)
add("rare26-case-mapping-two-images-one-case", "rare26",
    _config("rare26", '{"rare26_stack_0001.tiff": "rare26_stack_0000"}\n', file="case-mapping.json"),
    before_scoring=True)


# ---- the command line ---------------------------------------------------------------------


def _cli_output_file(case_dir: Path, key: str = "rare26") -> Submission:
    sub = Submission.example(case_dir, key)
    sub.output.rmdir()
    sub.output.write_text("a file where the output folder belongs\n")
    return sub


def _cli_output_read_only(case_dir: Path, key: str = "rare26") -> Submission:
    """An output folder the run cannot write to (mode 555). Root ignores permissions, so as root
    the run gives up CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH."""
    sub = Submission.example(case_dir, key)
    sub.output.chmod(0o555)
    sub.respect_permissions = os.geteuid() == 0
    return sub


def _cli_input_file(case_dir: Path, key: str = "rare26") -> Submission:
    sub = Submission.example(case_dir, key)
    shutil.rmtree(sub.input)
    sub.input.write_text("a file where the input folder belongs\n")
    return sub


def _cli_input_missing(case_dir: Path, key: str = "rare26") -> Submission:
    sub = Submission.example(case_dir, key)
    shutil.rmtree(sub.input)
    return sub


def _cli_ground_truth_missing(case_dir: Path, key: str = "rare26") -> Submission:
    sub = Submission.example(case_dir, key)
    sub.ground_truth = sub.dir / "no-ground-truth"
    return sub


def _stale_metrics(build: Callable[[Path], Submission]):
    def wrapped(case_dir: Path) -> Submission:
        sub = build(case_dir)
        (sub.output / "metrics.json").write_text('{"Score": 0.99, "note": "from an earlier run"}\n')
        return sub
    return wrapped


add("cli-output-is-a-file", "rare26", _cli_output_file, before_scoring=True)
add("cli-output-read-only", "rare26", _cli_output_read_only, before_scoring=True)
add("cli-input-is-a-file", "rare26", _cli_input_file, before_scoring=True)
add("cli-input-missing", "rare26", _cli_input_missing, before_scoring=True)
add("cli-ground-truth-missing", "rare26", _cli_ground_truth_missing, before_scoring=True)
add("cli-stale-metrics-invalid-submission", "rare26", _stale_metrics(_json_case("rare26", "nan")),
    checks=(stale_metrics_gone,))
add("cli-stale-metrics-bad-config", "hecktor2025-task1",
    _stale_metrics(_config("hecktor2025-task1", '{"lesion_iou_threshold": 5}\n')), checks=(stale_metrics_gone,))


# ---- generic: every challenge of the registry ----------------------------------------------
# The cases above are keyed by challenge and file format, with their exact lines recorded. These
# run for EVERY challenge folder (evaluation/challenges/<folder>/, from its bundled example
# test/<name>/input), with no entry anywhere: a new challenge gets them all. The file hit is the
# submission's first file other than the platform's predictions.json (a case's output in an
# algorithm phase, the predictions file of a predictions-file phase): the participant's fault
# (exit 1, one line). The command-line cases expect the recorded line of their rare26 twin.


def generic_target(sub: Submission) -> Path:
    files = sorted(p for p in sub.input.rglob("*")
                   if p.is_file() and p.relative_to(sub.input).as_posix() != "predictions.json")
    assert files, f"{sub.key}: test/{sub.key}/input holds no submission file"
    return files[0]


GENERIC_MUTATIONS: dict[str, Callable[[Path, Submission], Any]] = {
    "named-pipe": lambda p, s: hf.put_fifo(p),
    "dangling-link": lambda p, s: hf.put_symlink(p, s.dir / "no-such-file"),
    "symlink-secret": lambda p, s: hf.put_symlink(p, s.secret),
    "directory": lambda p, s: hf.put_directory(p),
}


def _generic_case(key: str, mutation: str):
    def build(case_dir: Path) -> Submission:
        sub = Submission.example(case_dir, key)
        GENERIC_MUTATIONS[mutation](generic_target(sub), sub)
        return sub
    return build


def generic_keys() -> list[str]:
    """Every challenge of the registry (its bundled example test/<name>/input is required)."""
    from evaluation.challenges import challenge_names

    return challenge_names()


def load_expected() -> dict[str, dict]:
    if not EXPECTED_FILE.exists():
        return {}
    return json.loads(EXPECTED_FILE.read_text())


GENERIC_CLI = {"cli-output-is-a-file": _cli_output_file, "cli-input-missing": _cli_input_missing,
               "cli-ground-truth-missing": _cli_ground_truth_missing}
for _key in generic_keys():
    for _mutation in GENERIC_MUTATIONS:
        add(f"generic-{_key}-{_mutation}", _key, _generic_case(_key, _mutation), expect={"exit": 1},
            timeout=PIPE_TIMEOUT if _mutation == "named-pipe" else TIMEOUT,
            touches_secret=_mutation == "symlink-secret")
    add(f"generic-{_key}-stale-metrics", _key, _stale_metrics(_generic_case(_key, "named-pipe")), expect={"exit": 1},
        checks=(stale_metrics_gone,), timeout=PIPE_TIMEOUT)
    for _twin, _make in GENERIC_CLI.items():
        add(f"generic-{_key}-{_twin}", _key, functools.partial(_make, key=_key), expect=load_expected()[_twin],
            before_scoring=True)


# ---------------------------------------------------------------------------------------------
# Running


@dataclass
class Result:
    code: int | None  # None: killed at the timeout
    stdout: str
    stderr: str
    seconds: float
    output_listing: list[str] = field(default_factory=list)
    metrics: dict | None = None
    error: str | None = None  # the case could not be built or run

    @property
    def last_line(self) -> str:
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else ""


def command(spec: Spec, sub: Submission) -> list[str]:
    return [spec.key, "--input", str(sub.input), "--output", str(sub.output), "--ground-truth",
            str(sub.ground_truth), "--workers", "1", *sub.extra_args]


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in DROP_ENV}


def _run_subprocess(argv: list[str], sub: Submission, timeout: float) -> tuple[int | None, str, str]:
    def limit():  # runs in the child between fork and exec
        limit_data(MEMORY_LIMIT)
        if sub.respect_permissions:
            hf.drop_permission_override()

    process = subprocess.Popen([sys.executable, "-m", "evaluation", *argv], cwd=ROOT, env=_environment(),
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=limit, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
        return process.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        return None, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


_forkserver = None


def _fork_context():
    global _forkserver
    if _forkserver is None:
        import multiprocessing

        context = multiprocessing.get_context("forkserver")
        from evaluation.challenges import challenge_folders

        challenges = challenge_folders()
        context.set_forkserver_preload(["tests.hostile_files", "evaluation.cli", "evaluation.framework"]
                                       + [f"evaluation.challenges.{name}" for name in challenges])
        _forkserver = context
    return _forkserver


def _run_forked(argv: list[str], sub: Submission, timeout: float) -> tuple[int | None, str, str]:
    context = _fork_context()
    stdout, stderr = sub.dir / ".stdout", sub.dir / ".stderr"
    process = context.Process(target=hf.run_evaluation_in_child,
                              args=(argv, str(stdout), str(stderr), MEMORY_LIMIT, sub.respect_permissions, DROP_ENV))
    process.start()
    process.join(timeout)
    code = process.exitcode
    if code is None:
        process.kill()
        process.join()
    elif (stdout.parent / (stdout.name + ".exit")).exists():
        code = int((stdout.parent / (stdout.name + ".exit")).read_text())
    read = lambda path: path.read_bytes().decode("utf-8", "replace") if path.exists() else ""  # noqa: E731
    return code, read(stdout), read(stderr)


def run_case(spec: Spec, base: Path) -> tuple[Result, Submission | None]:
    case_dir = base / spec.id
    try:
        sub = spec.build(case_dir)
    except Exception as error:  # a broken maker: reported as the case's failure
        return Result(None, "", "", 0.0, error=f"building the case failed: {type(error).__name__}: {error}"), None
    runner = _run_subprocess if os.environ.get("HOSTILE_RUNNER", "fork") == "subprocess" else _run_forked
    started = time.perf_counter()
    try:
        code, out, err = runner(command(spec, sub), sub, spec.timeout)
    except Exception as error:  # the process could not be started: reported as the case's failure
        return Result(None, "", "", 0.0, error=f"running the case failed: {type(error).__name__}: {error}"), sub
    result = Result(code, out, err, time.perf_counter() - started)
    if sub.output.is_dir():
        result.output_listing = sorted(os.listdir(sub.output))
        metrics = sub.output / "metrics.json"
        if metrics.is_file():
            try:
                result.metrics = json.loads(metrics.read_text())
            except ValueError:
                result.metrics = None
    return result, sub


def run_all(specs: list[Spec], base: Path, jobs: int | None = None) -> dict[str, tuple[Result, Submission | None]]:
    """Build and run every case, HOSTILE_JOBS at a time; derived phases are built once, on first use."""
    hf.set_template_root(base / ".templates")
    jobs = jobs or int(os.environ.get("HOSTILE_JOBS", "0")) or max(4, 2 * (os.cpu_count() or 1))
    ordered = sorted(specs, key=lambda s: (-s.timeout, s.id))  # the likely hangs first
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {spec.id: pool.submit(run_case, spec, base) for spec in ordered}
        return {case_id: future.result() for case_id, future in futures.items()}


# ---------------------------------------------------------------------------------------------
# Checking


def expand(line: str, sub: Submission | None) -> str:
    if sub is None:
        return line
    for name, value in (("{input}", sub.input), ("{output}", sub.output), ("{ground_truth}", sub.ground_truth),
                        ("{case}", sub.dir)):
        line = line.replace(name, str(value))
    return line


def problems_of(spec: Spec, result: Result, sub: Submission | None, expected: dict | None) -> list[str]:
    if result.error:
        return [result.error]
    problems = []
    if expected is None:
        expected = spec.expect
    if expected is None:
        problems.append(f"no entry for {spec.id} in {EXPECTED_FILE.name}")
        expected = {}
    if result.code is None:
        problems.append(f"killed after the {spec.timeout:g} s timeout")
    want_exit = expected.get("exit")
    if want_exit is not None and result.code != want_exit:
        problems.append(f"exit code {result.code}, expected {want_exit}")
    if SECRET_MARK in result.stdout or SECRET_MARK in result.stderr:
        problems.append(f"the secret ({SECRET_MARK!r}) appears in the output")
    if spec.touches_secret and result.code == 0:
        problems.append("a case pointing at the secret exited 0")
    if want_exit != 0:
        if "metrics.json" in result.output_listing:
            problems.append("metrics.json was written (or left) in --output")
        want_line = expand(expected.get("line", ""), sub)
        # The recorded lines quote the bundled synthetic data; on an organizer's own ground truth
        # (tests/bundled.py) the exit code and the rest are checked, the line must be one line.
        if "line" not in expected or not is_bundled(spec.key):  # (a generic case: no recorded line)
            if not result.last_line or "Traceback" in result.stderr:
                problems.append(f"no one-line message: {result.last_line!r}")
        if not is_bundled(spec.key) and "line" in expected:
            if not result.last_line or "Traceback" in result.stderr:
                problems.append(f"no one-line message: {result.last_line!r}")
        elif "line" in expected and result.last_line != want_line:
            problems.append(f"last stderr line:\n    found:    {result.last_line!r}\n    expected: {want_line!r}")
    elif result.metrics is None:
        problems.append("no readable metrics.json after exit 0")
    if spec.before_scoring and result.code not in (0, None) and "Scoring " in result.stdout:
        problems.append("the run started scoring before it failed (stdout has 'Scoring')")
    if sub is not None and (want_exit == 0 or result.code == 0) and result.metrics is not None:
        for check in spec.checks:
            if check is not stale_metrics_gone:
                problems.extend(check(result, sub))
    if sub is not None and stale_metrics_gone in spec.checks:
        problems.extend(stale_metrics_gone(result, sub))
    return problems


# ---------------------------------------------------------------------------------------------
# pytest


def _param(spec: Spec):
    return pytest.param(spec.id, id=spec.id, marks=[pytest.mark.slow] if spec.slow else [])


@pytest.fixture(scope="session")
def hostile_runs(request, tmp_path_factory):
    """Every selected hostile case, run concurrently once; {case id: (Result, Submission)}."""
    selected = [item.callspec.params["case_id"] for item in request.session.items
                if getattr(item, "callspec", None) is not None and "case_id" in item.callspec.params
                and item.module is sys.modules[__name__]]
    base = tmp_path_factory.mktemp("hostile")
    return run_all([SPECS[c] for c in dict.fromkeys(selected)], base)


@pytest.mark.parametrize("case_id", [_param(spec) for spec in SPECS.values()])
def test_hostile(case_id, hostile_runs):
    spec = SPECS[case_id]
    result, sub = hostile_runs[case_id]
    problems = problems_of(spec, result, sub, load_expected().get(case_id))
    assert not problems, (f"{case_id} (exit {result.code}, {result.seconds:.1f} s):\n  - " + "\n  - ".join(problems)
                          + f"\n  stderr tail: {result.stderr[-600:]!r}")


def test_expected_file_matches_the_cases():
    """Every case has an expected entry and every entry a case; exit codes are 0, 1 or 3."""
    expected = load_expected()
    assert sorted(case_id for case_id, spec in SPECS.items() if spec.expect is None and case_id not in expected) == []
    assert sorted(set(expected) - set(SPECS)) == []
    assert {entry["exit"] for entry in expected.values()} <= {0, 1, 3}
    for case_id, entry in expected.items():
        if entry["exit"] != 0:
            assert entry["line"] and "\n" not in entry["line"] and len(entry["line"]) <= 1024, case_id


def test_every_challenge_gets_every_generic_case():
    generic = {*GENERIC_MUTATIONS, "stale-metrics", *GENERIC_CLI}
    for key in generic_keys():
        assert {case_id.removeprefix(f"generic-{key}-") for case_id in SPECS if case_id.startswith(f"generic-{key}-")
                and SPECS[case_id].key == key} == generic, key
    assert {spec.key for spec in SPECS.values()} == set(generic_keys())
    assert len(SPECS) >= 110


# ---------------------------------------------------------------------------------------------
# The defect table: python -m tests.test_hostile [--slow] [--json=PATH] [case ids or prefixes...]


def main(argv: list[str]) -> int:
    include_slow = "--slow" in argv
    words = [a for a in argv if not a.startswith("--")]
    specs = [s for s in SPECS.values() if (include_slow or not s.slow)
             and (not words or any(s.id == w or s.id.startswith(w) for w in words))]
    base = Path(tempfile.mkdtemp(prefix="hostile-table-"))
    started = time.perf_counter()
    runs = run_all(specs, base)
    elapsed = time.perf_counter() - started
    expected = load_expected()
    failures = 0
    print("| case | expected exit | actual exit | ok | seconds | actual last line (150 chars) |")
    print("|---|---|---|---|---|---|")
    for spec in specs:
        result, sub = runs[spec.id]
        problems = problems_of(spec, result, sub, expected.get(spec.id))
        failures += bool(problems)
        line = (result.error or result.last_line or "")[:150].replace("|", "\\|")
        code = "timeout" if result.code is None and not result.error else result.code
        print(f"| {spec.id} | {expected.get(spec.id, {}).get('exit', '?')} | {code} | "
              f"{'yes' if not problems else 'NO'} | {result.seconds:.1f} | {line} |")
    dump = next((a.split("=", 1)[1] for a in argv if a.startswith("--json=")), None)
    if dump:  # the actual results as data: {case id: {"exit": N, "line": "...", "seconds": s}}
        Path(dump).write_text(json.dumps({spec.id: {
            "exit": runs[spec.id][0].code, "line": runs[spec.id][0].last_line,
            "seconds": round(runs[spec.id][0].seconds, 2), "error": runs[spec.id][0].error,
            "problems": problems_of(spec, *runs[spec.id], expected.get(spec.id))} for spec in specs}, indent=1) + "\n")
    print(f"\n{len(specs)} cases, {failures} failing, {elapsed:.0f} s "
          f"({os.environ.get('HOSTILE_RUNNER', 'fork')} runner); case folders in {base}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
