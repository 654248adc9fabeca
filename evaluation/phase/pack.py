"""The platform's phase pack: its sockets matched to what a challenge reads, written to config.json.

grand-challenge.org generates a pack for every algorithm phase (the phase's page, "phase pack" /
starter kit: `<challenge>-<phase>-kit.zip`, written by its forge app). Its
`example_evaluation_method/test/input/predictions.json` lists three jobs of every algorithm
interface of the phase, each input and output with its socket: `slug`, `relative_path` and the
kind flags `is_image_kind`, `is_panimg_kind`, `is_dicom_image_kind`, `is_json_kind`,
`is_file_kind`, plus `example_value` for a JSON socket (the value given inline as well): the
organizer's example for the socket, else the kind's default (a Float's 42.0, a Bool's true, an
Anything's `{"key": "value", "None": null}`). It has no `kind` or `super_kind`: a JSON socket's
kind shows only in its example value, and the generic example of an Anything socket says nothing
about what the socket holds. A predictions.json of a real evaluation (socket `kind` and
`super_kind`, no flags) is read too; there the kind says it.

`python -m evaluation.phase CHALLENGE --ground-truth DIR --pack PACK` (command.py) matches those
sockets to the challenge's socket settings (declared with `setting(..., socket=...)`) by kind
and role, one interface at a time, and writes the names into DIR/config.json. A setting already
naming one of the pack's sockets keeps it, so an organizer settles an ambiguity by naming the
socket in config.json and running the command again.

The pack is the organizer's file, read as the evaluation reads a submission: only its
predictions.json, bounded (the zip's central directory, its member count and the member's
declared and inflated size; JSON nesting by the parser), a regular file or folder only (never a
named pipe or a device), no link leading out of an unpacked pack, and every way it can be
unreadable (a damaged zip, an encrypted member, an unknown compression method, text that is not
UTF-8, a key given twice) one line and exit 3 (PackError). Slugs are the platform's (Django
slugs of at most 50 characters: lowercase letters, digits, hyphens, underscores), or the pack is
refused: they are written to config.json and printed.
"""

from __future__ import annotations

import dataclasses
import json
import lzma
import os
import re
import stat
import struct
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from evaluation.errors import SetupError, id_list
from evaluation.platform.locations import CONFIG_FILE
from evaluation.platform.outputs import write_atomically
from evaluation.reading.files import MEGABYTE, Origin, shown_path, size_text
from evaluation.reading.json_files import parse_json_or_fail, read_json
from evaluation.reading.values import shown
from evaluation.settings import CASE_INPUT, IMAGE_OUTPUT, Settings, socket_names

PACK_PREDICTIONS = PurePosixPath("example_evaluation_method", "test", "input", "predictions.json")
# The pack's predictions.json is a few kB an interface (three jobs, each socket ~0.5 kB); 8 MiB
# is thousands of interfaces, and parsed it stays well under the machine's memory.
MAX_PACK_PREDICTIONS_BYTES = 8 * MEGABYTE
# A pack holds tens of files an interface, hundreds re-zipped with a test run's outputs; zipfile
# reads the whole central directory before anything else, so it is bounded first.
MAX_PACK_MEMBERS = 50_000
MAX_PACK_DIRECTORY_BYTES = 8 * MEGABYTE
# The platform's socket slugs: Django's slugify of the socket's title (lowercase ASCII letters,
# digits, hyphens, underscores) in a SlugField of 50 characters.
SLUG = re.compile(r"[a-z0-9_-]{1,50}")
# Compression methods zipfile reads (stored, deflate, bzip2, LZMA); the platform stores.
_READABLE_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
                     zipfile.ZIP_LZMA: "LZMA"}
_ENCRYPTED = 0x1  # general purpose flag bit 0
# What reading a damaged member raises: a CRC or header mismatch (BadZipFile), a corrupt or cut
# deflate, bzip2 or LZMA stream, a cut stored member (EOFError).
_DAMAGED = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError, NotImplementedError, RuntimeError,
            ValueError)
_MISSING = object()

# The platform's socket kinds by their display names (predictions.json's `kind`), by kind set.
IMAGE_KINDS = frozenset({"Image", "Segmentation", "Heat Map", "Displacement field", "DICOM Image Set"})
FILE_KINDS = frozenset({"CSV file", "ZIP file", "PDF file", "SQREG file", "Thumbnail jpg", "Thumbnail png",
                        "OBJ file", "MP4 file", "Newick tree-format file", "BIOM format"})
JSON_KINDS = frozenset({
    "String", "Integer", "Float", "Bool", "Anything", "Chart", "2D bounding box", "Multiple 2D bounding boxes",
    "Distance measurement", "Multiple distance measurements", "Point", "Multiple points", "Polygon",
    "Multiple polygons", "Line", "Multiple lines", "Angle", "Multiple angles", "Ellipse", "Multiple ellipses",
    "Three-point angle", "Multiple three-point angles", "Choice", "Multiple choice", "Affine transform registration"})
# What a JSON socket holds, as a setting's json_value names it (settings.JSON_VALUES): decided by
# the kind, else by the example (or inline) value; UNDECIDED when neither tells (an Anything socket
# with the platform's generic example, a File output without its kind).
UNDECIDED, OTHER = "undecided", "other"
_KIND_HOLDS = {"Float": "number", "Integer": "number", "Bool": "bool", "Multiple points": "points"}
# The platform's default example of an Anything socket (components INTERFACE_KIND_JSON_EXAMPLES).
ANYTHING_EXAMPLE = {"key": "value", "None": None}


class PackError(SetupError):
    """The pack cannot be read, or its sockets cannot be matched: exit 3, one line."""


@dataclass(frozen=True)
class PackSocket:
    slug: str
    relative_path: str
    is_image: bool
    is_json: bool
    holds: str = UNDECIDED  # a JSON socket's content: number, bool, points, UNDECIDED or OTHER

    def match(self, json_value: str) -> str | None:
        """How well this JSON socket fits a setting reading `json_value`: "kind" (its kind or
        value says so; a setting reading anything takes every JSON socket), "undecided" (nothing
        tells: taken only when it is the one left) or None (its kind says otherwise)."""
        if json_value == "any" or self.holds == json_value:
            return "kind"
        return UNDECIDED if self.holds == UNDECIDED else None


@dataclass(frozen=True)
class Interface:
    inputs: tuple[PackSocket, ...]
    outputs: tuple[PackSocket, ...]


# ---- reading the pack ---------------------------------------------------------------------------


def pack_predictions_text(pack: Path) -> tuple[bytes, str]:
    """(the pack's predictions.json bytes, where it was found) from the pack's zip or its unpacked
    folder, with or without one top folder. The pack must be a regular file or a folder; it is
    opened once and checked on its descriptor, so a named pipe is never waited on."""
    try:
        info = os.stat(pack)
    except OSError as error:
        raise PackError(f"The phase pack {pack} cannot be read ({error.strerror}).") from None
    if stat.S_ISDIR(info.st_mode):
        return _folder_predictions(pack)
    if not stat.S_ISREG(info.st_mode):
        raise PackError(f"The phase pack {pack} is neither a file nor a folder (a named pipe, a device or a socket); "
                        f"give the pack's zip or its unpacked folder.")
    try:
        descriptor = os.open(pack, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        raise PackError(f"The phase pack {pack} cannot be read ({error.strerror}).") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # replaced since the stat
            raise PackError(f"The phase pack {pack} changed while being read.")
        return _zip_predictions(pack, handle)


def _folder_predictions(pack: Path) -> tuple[bytes, str]:
    """The unpacked pack's predictions.json, read as a submission's file is read: a regular file,
    bounded, through no link that leads out of the pack (links inside it are followed)."""
    origin = Origin(pack, PackError, "the phase pack")
    tops = [PurePosixPath()]
    try:
        tops += sorted(PurePosixPath(child.name) for child in pack.iterdir()
                       if child.is_dir() and not child.is_symlink())
    except OSError as error:
        raise PackError(f"The phase pack {pack} cannot be listed ({error.strerror}).") from None
    found = [top / PACK_PREDICTIONS for top in tops if origin.exists(pack / top / PACK_PREDICTIONS)]
    if not found:
        raise PackError(f"{pack} is not an unpacked phase pack: it has no {PACK_PREDICTIONS} (in it or in one top "
                        f"folder).")
    if len(found) > 1:
        raise PackError(f"The phase pack {pack} holds {len(found)} phase packs' predictions.json "
                        f"({id_list(shown_path(str(name)) for name in found)}); give the one pack's folder.")
    (name,) = found
    data = origin.read_bytes(pack / name, f"The phase pack {pack}", MAX_PACK_PREDICTIONS_BYTES, str(name))
    return data, f"{pack}/{shown_path(str(name))}"


def _zip_directory(handle: BinaryIO) -> tuple[int, int] | None:
    """(members, bytes) of the zip's central directory as its end record says, found as zipfile
    finds it (the last 22 bytes, else the last end signature within a comment's reach; a zip64
    end record just before its locator wins); None when there is no end record."""
    size = handle.seek(0, os.SEEK_END)
    start = max(0, size - 22 - (1 << 16))
    handle.seek(start)
    tail = handle.read()
    if len(tail) >= 22 and tail[-22:-18] == b"PK\x05\x06" and tail[-2:] == b"\x00\x00":
        at = len(tail) - 22
    else:
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < 22:
            return None
    members, directory = struct.unpack("<10xHI6x", tail[at:at + 22])
    end = start + at
    if end >= 20 + 56:
        handle.seek(end - 20 - 56)
        zip64 = handle.read(56 + 20)
        if zip64[56:60] == b"PK\x06\x07" and zip64[:4] == b"PK\x06\x06":
            members, directory = struct.unpack("<32xQQ8x", zip64[:56])
    return members, directory


def _zip_predictions(pack: Path, handle: BinaryIO) -> tuple[bytes, str]:
    directory = _zip_directory(handle)
    if directory is None:
        raise PackError(f"{pack} is neither a phase pack's zip nor its unpacked folder.")
    members, directory_bytes = directory
    if members > MAX_PACK_MEMBERS or directory_bytes > MAX_PACK_DIRECTORY_BYTES:
        raise PackError(f"{pack} is not a phase pack: its zip lists {members} files ({size_text(directory_bytes)} of "
                        f"names), more than the {MAX_PACK_MEMBERS} ({size_text(MAX_PACK_DIRECTORY_BYTES)}) a pack "
                        f"can have.")
    handle.seek(0)
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, struct.error) as error:
        raise PackError(f"{pack} is a damaged zip: its list of files cannot be read ({_reason(error)}).") from None
    with archive:
        entries = archive.infolist()
        if len(entries) > MAX_PACK_MEMBERS:
            raise PackError(f"{pack} is not a phase pack: its zip lists more than {MAX_PACK_MEMBERS} files.")
        found = [info for info in entries if not info.is_dir() and _is_pack_predictions(PurePosixPath(info.filename))]
        if not found:
            raise PackError(f"{pack} is not a phase pack: the zip has no {PACK_PREDICTIONS} (at its top or in one top "
                            f"folder).")
        names = [shown_path(info.filename) for info in found]
        if len(found) > 1:
            twice = "the same name twice" if len(set(names)) == 1 else "several"
            raise PackError(f"The phase pack {pack} holds {twice} predictions.json ({id_list(names)}); a pack has one.")
        (info,) = found
        where = f"The phase pack {pack}: its {names[0]}"
        if info.flag_bits & _ENCRYPTED:
            raise PackError(f"{where} is encrypted; use the pack as the phase's page gives it.")
        if info.compress_type not in _READABLE_METHODS:
            raise PackError(f"{where} is compressed with method {info.compress_type}, which cannot be read here (only "
                            f"{', '.join(_READABLE_METHODS.values())}); use the pack as the phase's page gives it.")
        if info.file_size > MAX_PACK_PREDICTIONS_BYTES:
            raise PackError(f"{where} has {size_text(info.file_size)}, more than the "
                            f"{size_text(MAX_PACK_PREDICTIONS_BYTES)} a phase pack's predictions.json can have.")
        try:
            with archive.open(info) as member:
                data = member.read(MAX_PACK_PREDICTIONS_BYTES + 1)  # never more than declared (zipfile stops there)
        except _DAMAGED as error:
            raise PackError(f"{where} cannot be read: the zip is damaged ({_reason(error)}).") from None
        if len(data) > MAX_PACK_PREDICTIONS_BYTES:
            raise PackError(f"{where} inflates to more than the {size_text(MAX_PACK_PREDICTIONS_BYTES)} a phase "
                            f"pack's predictions.json can have.")
        return data, f"{pack}:{names[0]}"


def _is_pack_predictions(name: PurePosixPath) -> bool:
    return name == PACK_PREDICTIONS or (len(name.parts) == len(PACK_PREDICTIONS.parts) + 1
                                        and PurePosixPath(*name.parts[1:]) == PACK_PREDICTIONS)


def _reason(error: BaseException) -> str:
    """What a damaged zip raised, in a few words (never the member's bytes)."""
    if isinstance(error, zipfile.BadZipFile) and "CRC" in str(error):
        return "its checksum does not match its content"
    if isinstance(error, (zlib.error, lzma.LZMAError, EOFError)) or (
            isinstance(error, OSError) and "Invalid data stream" in str(error)):
        return "its compressed data is corrupt or cut short"
    text = " ".join(str(error).split())
    return (text[:120] + "...") if len(text) > 120 else text or type(error).__name__


def _pack_socket(entry: Any, where: str) -> PackSocket:
    """One input or output of a job, its kind from the forge flags, else the socket's kind, else
    its super kind; a socket with none of them is taken for a JSON socket (by elimination: it is
    not known to be an image or a file)."""
    socket = entry.get("socket") or entry.get("interface") if isinstance(entry, dict) else None
    if not isinstance(socket, dict) or not isinstance(socket.get("slug"), str) or not socket["slug"]:
        raise PackError(f"The phase pack's predictions.json: {where} has no socket with a slug.")
    slug = socket["slug"]
    if not SLUG.fullmatch(slug):
        raise PackError(f"The phase pack's predictions.json: {where} has the socket slug {shown(slug)}, which is not a "
                        f"grand-challenge.org slug (1 to 50 lowercase letters, digits, hyphens or underscores).")
    kind = socket.get("kind") if isinstance(socket.get("kind"), str) else None
    super_kind = socket.get("super_kind")
    value = socket.get("example_value", _MISSING)
    if value is _MISSING and entry.get("value") is not None:
        value = entry["value"]
    if any(flag in socket for flag in ("is_image_kind", "is_json_kind", "is_file_kind")):  # the pack's forge flags
        is_image, is_file = bool(socket.get("is_image_kind")), bool(socket.get("is_file_kind"))
    elif kind in IMAGE_KINDS or kind in FILE_KINDS or kind in JSON_KINDS:
        is_image, is_file = kind in IMAGE_KINDS, kind in FILE_KINDS
    else:
        is_image, is_file = super_kind == "Image" or isinstance(entry.get("image"), dict), False
    is_json = not is_image and not is_file
    if not is_json:
        holds = UNDECIDED
    elif kind in JSON_KINDS and kind != "Anything":  # the kind says it
        holds = _KIND_HOLDS.get(kind, OTHER)
    else:  # the pack (no kind), or an Anything socket: its value says it, if it says anything
        holds = _value_holds(value)
    return PackSocket(slug, str(socket.get("relative_path") or ""), is_image, is_json, holds)


def _value_holds(value: Any) -> str:
    """What a JSON socket holds, as far as its example (or inline) value tells."""
    if value is _MISSING or value is None or value == ANYTHING_EXAMPLE:
        return UNDECIDED
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, dict) and isinstance(value.get("points"), list):
        return "points"
    return OTHER


def pack_interfaces(data: bytes, where: str) -> list[Interface]:
    """The phase's algorithm interfaces, in the pack's order: the distinct socket sets of its jobs
    (a job's interface is its sorted input slugs, as the platform identifies it). Jobs of one
    interface must list the same outputs, and a job a socket once: the pack is refused otherwise,
    never one of two entries kept silently."""
    document = parse_json_or_fail(data, f"The phase pack's predictions.json ({where})", _fail)
    if not isinstance(document, list) or not document:
        raise PackError(f"The phase pack's predictions.json ({where}) lists no algorithm job.")
    interfaces: dict[tuple[str, ...], tuple[int, Interface]] = {}
    for n, job in enumerate(document):
        if not isinstance(job, dict):
            raise PackError(f"The phase pack's predictions.json: job {n} is not an object.")
        sides = {}
        for side in ("inputs", "outputs"):
            entries = job.get(side) or []
            if not isinstance(entries, list):
                raise PackError(f"The phase pack's predictions.json: the {side} of job {n} are not a list.")
            sockets = tuple(_pack_socket(entry, f"{side[:-1]} {i} of job {n}") for i, entry in enumerate(entries))
            slugs = [s.slug for s in sockets]
            twice = sorted({slug for slug in slugs if slugs.count(slug) > 1})
            if twice:
                raise PackError(f"The phase pack's predictions.json: job {n} lists the {side[:-1]} {id_list(twice)} "
                                f"twice.")
            sides[side] = sockets
        key = tuple(sorted(s.slug for s in sides["inputs"]))
        interface = Interface(sides["inputs"], sides["outputs"])
        first, known = interfaces.setdefault(key, (n, interface))
        if [s.slug for s in known.outputs] != [s.slug for s in interface.outputs]:
            raise PackError(f"The phase pack's predictions.json: jobs {first} and {n} have the same inputs "
                            f"({id_list(key) or 'none'}) but different outputs "
                            f"({id_list(s.slug for s in known.outputs) or 'none'}; "
                            f"{id_list(s.slug for s in interface.outputs) or 'none'}).")
    return [interface for _, interface in interfaces.values()]


def _fail(message: str):
    raise PackError(message)


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


def _fit(f: dataclasses.Field, socket: PackSocket) -> str | None:
    """How a socket fits a setting: "kind" (its role, and for a JSON output its kind or value,
    are what the setting reads), "undecided" (a JSON output whose value tells nothing) or None."""
    role = f.metadata["socket"]
    if role in (CASE_INPUT, IMAGE_OUTPUT):
        return "kind" if socket.is_image else None
    return socket.match(f.metadata["json_value"]) if socket.is_json else None


def _same_role(f: dataclasses.Field, socket: PackSocket) -> bool:
    return socket.is_image if f.metadata["socket"] in (CASE_INPUT, IMAGE_OUTPUT) else socket.is_json


def _choose(fields: list[dataclasses.Field], sockets: tuple[PackSocket, ...], configured: dict[str, tuple[str, ...]],
            defaults: dict[str, tuple[str, ...]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Settings of one side of one interface matched to its sockets: ({setting: slug}, {setting:
    the candidates when it could not be decided}). A setting takes, in order: a socket config.json
    names for it (of its role, whatever its example value: the organizer's word); a socket its
    default names, if it fits; then among the sockets of its kind (else, when none is, among those
    whose value tells nothing), the one whose slug holds one of its hint words, or the only one.
    Repeated until nothing changes, a socket taken once: what is left is matched by elimination."""
    chosen: dict[str, str] = {}
    while True:
        taken = set(chosen.values())
        progress = False
        for f in fields:
            if f.name in chosen:
                continue
            free = [s for s in sockets if s.slug not in taken]
            fits = {s.slug: _fit(f, s) for s in free}
            named = [slug for slug in configured[f.name] if any(s.slug == slug and _same_role(f, s) for s in free)]
            named += [slug for slug in defaults[f.name] if fits.get(slug)]
            candidates = [slug for slug, fit in fits.items() if fit == "kind"] or [
                slug for slug, fit in fits.items() if fit == UNDECIDED]
            hinted = [slug for slug in candidates if _words(slug) & set(f.metadata.get("hints") or ())]
            pick = named[0] if named else hinted[0] if len(hinted) == 1 else candidates[0] if len(candidates) == 1 \
                else None
            if pick is not None:
                chosen[f.name] = pick
                taken.add(pick)
                progress = True
        if not progress:
            break
    undecided = {f.name: [s.slug for s in sockets if _fit(f, s) and s.slug not in chosen.values()]
                 for f in fields if f.name not in chosen}
    return chosen, undecided


def match_pack(settings_class: type[Settings], configured: Mapping[str, Any], interfaces: list[Interface]
               ) -> dict[str, str | list[str]]:
    """{setting: socket slug (or one per interface, a case input of a phase with several)} for every
    socket setting of the challenge, `configured` being config.json's settings; PackError naming
    every setting that cannot be decided."""
    fields = [f for f in dataclasses.fields(settings_class) if f.metadata.get("socket")]
    settings, defaults = settings_class.from_mapping(configured), settings_class()
    named = {f.name: tuple(socket_names(getattr(settings, f.name))) if f.name in configured else () for f in fields}
    default_names = {f.name: tuple(socket_names(getattr(defaults, f.name))) for f in fields}
    inputs = [f for f in fields if f.metadata["socket"] == CASE_INPUT]
    outputs = [f for f in fields if f.metadata["socket"] != CASE_INPUT]
    per_interface: dict[str, list[str]] = {f.name: [] for f in fields}
    problems: list[str] = []
    several = len(interfaces) > 1
    for number, interface in enumerate(interfaces):
        where = f" of interface {number} (inputs {', '.join(s.slug for s in interface.inputs) or 'none'})" \
            if several else ""
        for group, sockets in ((inputs, interface.inputs), (outputs, interface.outputs)):
            chosen, undecided = _choose(group, sockets, named, default_names)
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
    matched = match_pack(settings_class, existing, pack_interfaces(text, where))
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
