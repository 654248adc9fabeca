"""Writing synthetic submissions as the platform lays them out, for tests, examples and benchmarks.

Each challenge's `synthesize` (evaluation.examples) makes its ground truth and a submission from
a seed with these helpers; `python -m evaluation.examples CHALLENGE --out DIR` runs it:

    DIR/ground-truth/   what goes in ground-truth/<challenge>/
    DIR/input/          what the platform mounts at /input
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.errors import SetupError
from evaluation.platform.locations import CONFIG_FILE
from evaluation.reading.files import Origin


def job_pk(rng: np.random.Generator) -> str:
    """A UUID4-shaped job pk, reproducible from the generator."""
    return str(uuid.UUID(bytes=rng.bytes(16), version=4))


def socket(slug: str, kind: str, super_kind: str, relative_path: str) -> dict[str, Any]:
    return {"slug": slug, "kind": kind, "super_kind": super_kind, "relative_path": relative_path}


def image_input(slug: str, image_name: str, relative_path: str, pk: int = 0) -> dict[str, Any]:
    return {"pk": pk, "file": None, "value": None, "image": {"pk": f"image-{pk}", "name": image_name},
            "socket": socket(slug, "Image", "Image", relative_path)}


def file_output(slug: str, relative_path: str, kind: str = "Anything", pk: int = 0) -> dict[str, Any]:
    """A JSON output the platform keeps as a file (super_kind File, `value` null): a socket whose
    values are not stored in its database (large kinds such as Multiple points always are)."""
    return {"pk": pk, "image": None, "value": None, "file": f"https://example.invalid/{relative_path}",
            "socket": socket(slug, kind, "File", relative_path)}


def value_output(slug: str, relative_path: str, kind: str, value: Any, pk: int = 0) -> dict[str, Any]:
    """A JSON output the platform stores in its database (super_kind Value, the default of a Float,
    Bool or other JSON socket): the value inline, and its file written too (write_output)."""
    return {"pk": pk, "image": None, "file": None, "value": value, "socket": socket(slug, kind, "Value", relative_path)}


def first_socket(value: str | list[str] | tuple[str, ...], default: str = "") -> str:
    """The socket a synthetic job uses for a socket setting: its name, or the first of its names
    (one per interface), or `default` when it names none."""
    from evaluation.settings import socket_names

    return (socket_names(value) or (default,))[0]


def job(pk: str, inputs: list[dict], outputs: list[dict], seconds: float = 60.0) -> dict[str, Any]:
    minutes, rest = divmod(seconds, 60)
    return {"pk": pk, "inputs": inputs, "outputs": outputs, "status": "Succeeded",
            "exec_duration": f"P0DT00H{int(minutes):02d}M{rest:09.6f}S", "invoke_duration": None}


def legacy_shape(jobs: list[dict]) -> list[dict]:
    """The pre-2025 predictions.json: `interface` instead of `socket`, timestamps, no durations."""
    converted = []
    for entry in jobs:
        entry = json.loads(json.dumps(entry))
        for value in entry["inputs"] + entry["outputs"]:
            value["interface"] = value.pop("socket")
        entry.pop("exec_duration", None)
        entry.pop("invoke_duration", None)
        entry["started_at"] = "2024-11-29T10:31:25.691799Z"
        entry["completed_at"] = "2024-11-29T10:32:25.691799Z"
        converted.append(entry)
    return converted


def write_json(path: Path, content: Any, indent: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content, indent=indent) + "\n", encoding="utf-8")


def checked(relative: str, what: str) -> str:
    """`relative`, a path below the submission folder made from a name the organizer's ground
    truth or config.json gives (a slide, a socket), checked as a submission's own names are
    (Origin.check_parts: not absolute, no '..', no NUL or backslash, not over-long), touching no
    file: the writers check every such name before they write anything, so none writes outside
    the submission folder. A bad one is SetupError (exit 3), its message starting with `what`
    (the file, and the setting or row the name comes from)."""
    Origin(Path("."), SetupError, "the submission folder").check_parts(relative, what=what)
    return relative


def setting_name(setting: str) -> str:
    """How `checked` names a name taken from a setting of the phase's config.json."""
    return f"{CONFIG_FILE}, setting {setting!r}"


def write_output(input_dir: Path, pk: str, relative_path: str, content: Any,
                 what: str = "An output file of the submission") -> None:
    write_json(input_dir / pk / "output" / checked(relative_path, what), content)


def write_predictions(input_dir: Path, jobs: list[dict]) -> None:
    write_json(input_dir / "predictions.json", jobs, indent=2)


# ---- submissions for an organizer's own ground truth ----------------------------------------


def input_image_name(evaluation, case_id: str, candidates: list[str]) -> str:
    """The name of an input image that `evaluation` (a challenge's Evaluation on the organizer's
    ground truth) reads as `case_id`: a case-mapping.json name mapped to it, else the first of
    `candidates` (the case id with the usual extension) that the naming rule turns into it."""
    from evaluation.platform.cases import mapped_case_id

    mapped = sorted(name for name, target in evaluation.case_mapping.items() if target == case_id)
    for name in (*mapped, *candidates):
        found = mapped_case_id(name, evaluation.case_mapping)
        if (found if found is not None else evaluation.case_id_from_image_name(name)) == case_id:
            return name
    raise ValueError(f"no input image name gives case id {case_id!r} (tried {', '.join(candidates)}; "
                     f"case-mapping.json maps none to it)")


def shifted(array: np.ndarray, offsets: tuple[int, ...]) -> np.ndarray:
    """`array` moved by `offsets` voxels along each axis, zero where nothing moved in (a mask
    shifted a little: a prediction close to the truth but not equal)."""
    moved = np.zeros_like(array)
    source = tuple(slice(max(0, -o), max(0, n - max(0, o))) for n, o in zip(array.shape, offsets, strict=True))
    target = tuple(slice(min(n, max(0, o)), max(0, n + min(0, o))) for n, o in zip(array.shape, offsets, strict=True))
    moved[target] = array[source]
    return moved
