"""The platform's phase pack: its sockets matched to what a challenge reads, written to config.json.

grand-challenge.org generates a pack for every algorithm phase (the phase's page, "phase pack" /
starter kit: `<challenge>-<phase>-kit.zip`). Its `example_evaluation_method/test/input/
predictions.json` lists a few jobs of every algorithm interface of the phase, each input and
output with its socket: `slug`, `relative_path` and the kind flags `is_image_kind`,
`is_panimg_kind`, `is_dicom_image_kind`, `is_json_kind`, `is_file_kind`, plus `example_value` for
a JSON socket (the value given inline as well). It has no `kind` or `super_kind`: a JSON socket's
kind shows only in its example value (a Float's is a number, a Bool's true or false, a Multiple
points' an object with "points").

`python -m evaluation.phase CHALLENGE --ground-truth DIR --pack PACK` (phase.py) matches those
sockets to the challenge's socket settings (declared with `setting(..., socket=...)`) by kind
and role, one interface at a time, and writes the names into DIR/config.json. A setting already
naming one of the pack's sockets keeps it, so an organizer settles an ambiguity by naming the
socket in config.json and running the command again.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from evaluation.errors import SetupError, id_list
from evaluation.grand_challenge import CONFIG_FILE, MAX_PREDICTIONS_BYTES, write_atomically
from evaluation.reading.files import Origin
from evaluation.reading.json_files import read_json
from evaluation.settings import CASE_INPUT, IMAGE_OUTPUT, Settings, socket_names

PACK_PREDICTIONS = PurePosixPath("example_evaluation_method", "test", "input", "predictions.json")
_MISSING = object()


class PackError(SetupError):
    """The pack cannot be read, or its sockets cannot be matched: exit 3, one line."""


@dataclass(frozen=True)
class PackSocket:
    slug: str
    relative_path: str
    is_image: bool
    is_json: bool
    example: Any = _MISSING  # a JSON socket's example value

    def holds(self, json_value: str) -> bool:
        """Whether this JSON socket's example value is of the kind a setting reads."""
        value = self.example
        if json_value == "any":
            return True
        if json_value == "number":
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        if json_value == "bool":
            return isinstance(value, bool)
        if json_value == "points":
            return isinstance(value, dict) and "points" in value
        return False


@dataclass(frozen=True)
class Interface:
    inputs: tuple[PackSocket, ...]
    outputs: tuple[PackSocket, ...]


# ---- reading the pack ---------------------------------------------------------------------------


def pack_predictions_text(pack: Path) -> tuple[str, str]:
    """(the pack's predictions.json text, where it was found) from the pack's zip or its unpacked
    folder, with or without one top folder."""
    if pack.is_dir():
        candidates = [pack / PACK_PREDICTIONS] + sorted(child / PACK_PREDICTIONS for child in pack.iterdir()
                                                        if child.is_dir() and not child.is_symlink())
        found = [path for path in candidates if path.is_file()]
        if not found:
            raise PackError(f"{pack} is not an unpacked phase pack: it has no {PACK_PREDICTIONS} (in it or in one top "
                            f"folder).")
        path = found[0]
        if path.stat().st_size > MAX_PREDICTIONS_BYTES:
            raise PackError(f"The phase pack's {path} is too large to be a phase pack's predictions.json.")
        return path.read_text(encoding="utf-8"), str(path)
    if not zipfile.is_zipfile(pack):
        raise PackError(f"{pack} is neither a phase pack's zip nor its unpacked folder.")
    with zipfile.ZipFile(pack) as archive:
        infos = {PurePosixPath(info.filename): info for info in archive.infolist() if not info.is_dir()}
        found = [name for name in infos if name == PACK_PREDICTIONS
                 or (len(name.parts) == len(PACK_PREDICTIONS.parts) + 1
                     and PurePosixPath(*name.parts[1:]) == PACK_PREDICTIONS)]
        if not found:
            raise PackError(f"{pack} is not a phase pack: the zip has no {PACK_PREDICTIONS} (at its top or in one top "
                            f"folder).")
        name = min(found, key=lambda n: len(n.parts))
        if infos[name].file_size > MAX_PREDICTIONS_BYTES:
            raise PackError(f"The phase pack's {name} is too large to be a phase pack's predictions.json.")
        with archive.open(infos[name]) as handle:
            return io.TextIOWrapper(handle, encoding="utf-8").read(), f"{pack}:{name}"


def _pack_socket(entry: Any, where: str) -> PackSocket:
    socket = entry.get("socket") or entry.get("interface") if isinstance(entry, dict) else None
    if not isinstance(socket, dict) or not isinstance(socket.get("slug"), str) or not socket["slug"]:
        raise PackError(f"The phase pack's predictions.json: {where} has no socket with a slug.")
    super_kind = socket.get("super_kind")  # a predictions.json of a real evaluation has these instead of flags
    is_image = bool(socket.get("is_image_kind")) or super_kind == "Image"
    is_json = bool(socket.get("is_json_kind")) or super_kind == "Value"
    example = socket.get("example_value", _MISSING)
    if example is _MISSING and is_json and entry.get("value") is not None:
        example = entry["value"]
    return PackSocket(socket["slug"], str(socket.get("relative_path") or ""), is_image, is_json, example)


def pack_interfaces(text: str, where: str) -> list[Interface]:
    """The phase's algorithm interfaces, in the pack's order: the distinct socket sets of its jobs
    (a job's interface is its sorted input slugs, as the platform identifies it)."""
    try:
        document = json.loads(text)
    except ValueError as error:
        raise PackError(f"The phase pack's predictions.json ({where}) is not valid JSON ({error}).") from None
    if not isinstance(document, list) or not document:
        raise PackError(f"The phase pack's predictions.json ({where}) lists no algorithm job.")
    interfaces: dict[tuple[str, ...], Interface] = {}
    for n, job in enumerate(document):
        if not isinstance(job, dict):
            raise PackError(f"The phase pack's predictions.json: job {n} is not an object.")
        sides = {}
        for side in ("inputs", "outputs"):
            entries = job.get(side) or []
            if not isinstance(entries, list):
                raise PackError(f"The phase pack's predictions.json: the {side} of job {n} are not a list.")
            sides[side] = tuple(_pack_socket(entry, f"{side[:-1]} {i} of job {n}") for i, entry in enumerate(entries))
        key = tuple(sorted(s.slug for s in sides["inputs"]))
        interfaces.setdefault(key, Interface(sides["inputs"], sides["outputs"]))
    return list(interfaces.values())


# ---- matching ------------------------------------------------------------------------------------


def _role_text(f: dataclasses.Field) -> str:
    role = f.metadata["socket"]
    if role == CASE_INPUT:
        return "the image input whose image name is the case id"
    if role == IMAGE_OUTPUT:
        return "an image output"
    return {"number": "a JSON output holding a number (Float)", "bool": "a JSON output holding true or false (Bool)",
            "points": "a JSON output of Multiple points"}.get(f.metadata["json_value"], "a JSON output")


def _words(slug: str) -> set[str]:
    return set(re.split(r"[^a-z0-9]+", slug.lower()))


def _compatible(f: dataclasses.Field, socket: PackSocket) -> bool:
    role = f.metadata["socket"]
    if role in (CASE_INPUT, IMAGE_OUTPUT):
        return socket.is_image
    return socket.is_json and socket.holds(f.metadata["json_value"])


def _choose(fields: list[dataclasses.Field], sockets: tuple[PackSocket, ...], preferred: dict[str, tuple[str, ...]]
            ) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Settings of one side of one interface matched to its sockets: ({setting: slug}, {setting:
    the candidates when it could not be decided}). A setting takes, in order: a socket it already
    names (config.json, else its default); the one candidate whose slug holds one of its hint
    words; the one candidate left. Repeated until nothing changes, a socket taken once."""
    chosen: dict[str, str] = {}
    while True:
        taken = set(chosen.values())
        progress = False
        for f in fields:
            if f.name in chosen:
                continue
            options = [s.slug for s in sockets if _compatible(f, s) and s.slug not in taken]
            named = [slug for slug in preferred[f.name] if slug in options]
            hinted = [slug for slug in options if _words(slug) & set(f.metadata.get("hints") or ())]
            pick = named[0] if named else hinted[0] if len(hinted) == 1 else options[0] if len(options) == 1 else None
            if pick is not None:
                chosen[f.name] = pick
                taken.add(pick)
                progress = True
        if not progress:
            break
    undecided = {f.name: [s.slug for s in sockets if _compatible(f, s) and s.slug not in chosen.values()]
                 for f in fields if f.name not in chosen}
    return chosen, undecided


def match_pack(settings_class: type[Settings], settings: Settings, interfaces: list[Interface]
               ) -> dict[str, str | list[str]]:
    """{setting: socket slug (or one per interface, a case input of a phase with several)} for every
    socket setting of the challenge; PackError naming every setting that cannot be decided."""
    fields = [f for f in dataclasses.fields(settings_class) if f.metadata.get("socket")]
    defaults = settings_class()
    preferred = {f.name: tuple(dict.fromkeys(socket_names(getattr(settings, f.name))
                                             + socket_names(getattr(defaults, f.name)))) for f in fields}
    inputs = [f for f in fields if f.metadata["socket"] == CASE_INPUT]
    outputs = [f for f in fields if f.metadata["socket"] != CASE_INPUT]
    per_interface: dict[str, list[str]] = {f.name: [] for f in fields}
    problems: list[str] = []
    several = len(interfaces) > 1
    for number, interface in enumerate(interfaces):
        where = f" of interface {number} (inputs {', '.join(s.slug for s in interface.inputs) or 'none'})" \
            if several else ""
        for group, sockets in ((inputs, interface.inputs), (outputs, interface.outputs)):
            chosen, undecided = _choose(group, sockets, preferred)
            for name, slug in chosen.items():
                per_interface[name].append(slug)
            for name, options in undecided.items():
                f = next(f for f in group if f.name == name)
                side = "inputs" if group is inputs else "outputs"
                if not options:
                    found = id_list(s.slug for s in sockets) or "none"
                    problems.append(f"{name!r} ({_role_text(f)}) matches none of the {side}{where} ({found})")
                else:
                    problems.append(f"{name!r} ({_role_text(f)}) could be any of {id_list(options)}{where}")
    if problems:
        example = {}
        for problem_field in fields:
            if len(per_interface[problem_field.name]) < len(interfaces):
                example[problem_field.name] = "<socket slug>"
        raise PackError(f"The phase pack's sockets cannot all be matched: {'; '.join(problems)}. Name them in "
                        f"{CONFIG_FILE} next to the ground truth, e.g. {json.dumps(example)}, and run the command "
                        f"again (a setting naming one of the pack's sockets keeps it).")
    result: dict[str, str | list[str]] = {}
    for f in fields:
        slugs = per_interface[f.name]
        if len(set(slugs)) == 1:
            result[f.name] = slugs[0]
        elif f.metadata["socket"] == CASE_INPUT:
            result[f.name] = slugs
        else:
            raise PackError(f"The phase's interfaces give {f.name!r} ({_role_text(f)}) different sockets "
                            f"({id_list(dict.fromkeys(slugs))}); the challenge reads one output socket for every "
                            f"interface, so give the interfaces the same output socket.")
    return result


# ---- config.json ---------------------------------------------------------------------------------


def configure_from_pack(challenge_class, ground_truth_dir: Path,
                        pack: Path) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """Match the pack's sockets and write them into ground_truth_dir/config.json, keeping its other
    keys and their order. Returns (config.json, {setting: new value}, {setting: old value})."""
    settings_class = challenge_class.settings_class
    origin, path = Origin.ground_truth(ground_truth_dir), ground_truth_dir / CONFIG_FILE
    existing = read_json(origin, path, "The phase's settings") if origin.exists(path) else {}
    settings = settings_class.from_mapping(existing)  # a config.json the evaluation would refuse: refused here
    text, where = pack_predictions_text(pack)
    matched = match_pack(settings_class, settings, pack_interfaces(text, where))
    updated = dict(existing)
    for name, value in matched.items():
        updated[name] = value
    settings_class.from_mapping(updated)
    old = settings.as_dict()
    try:
        write_atomically(ground_truth_dir, json.dumps(updated, indent=2) + "\n", CONFIG_FILE)
    except OSError as error:
        raise SetupError(f"{path} cannot be written ({error.strerror}).") from None
    return path, matched, {name: old[name] for name in matched}
