"""Settings: what a spec calls configurable, with the spec's default, changeable per phase.

A challenge declares its settings as a frozen dataclass deriving from `Settings`, each field
with its default and, where the spec restricts it, `choices` or bounds (`minimum`/`maximum`
inclusive, `above`/`below` exclusive). A number is always finite: NaN and Infinity are refused
for every setting, so no challenge writes its own checks:

    @dataclass(frozen=True)
    class Rare26Settings(Settings):
        sampling: str = setting("image", choices=("image", "patient"), doc="bootstrap scheme")

An organizer overrides any of them with `config.json` in the ground-truth folder; an unknown
key or a wrong type is an error of the ground truth, named. The settings in force are echoed
into metrics.json.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from pathlib import Path
from typing import Any

from evaluation.errors import SetupError
from evaluation.platform.locations import CONFIG_FILE
from evaluation.platform.outputs import output_file_problem, output_files_collision
from evaluation.reading.files import Origin
from evaluation.reading.json_files import read_json
from evaluation.reading.values import HugeNumber, json_type, shown

# The roles of a setting naming one of the phase's sockets (`socket=`): what `python -m
# evaluation.phase --pack` matches against the sockets of the platform's phase pack, and what the
# run checks predictions.json against before any scoring.
CASE_INPUT = "case-input"  # an image input whose image name is the case id; one name per interface
IMAGE_OUTPUT = "image-output"  # an Image output read
JSON_OUTPUT = "json-output"  # a JSON output read (a Value or a File on the platform)
SOCKET_ROLES = (CASE_INPUT, IMAGE_OUTPUT, JSON_OUTPUT)
# What a JSON output holds, for matching it to the pack's example value (`json_value=`).
JSON_VALUES = ("number", "bool", "points", "any")


def setting(default: Any, *, doc: str, choices: tuple | None = None, minimum: float | None = None,
            maximum: float | None = None, above: float | None = None, below: float | None = None,
            output_file: bool = False, socket: str | None = None, json_value: str = "any",
            hints: tuple[str, ...] = ()):
    """A settings field: its default, one line of documentation, and optional limits (`minimum`
    and `maximum` inclusive, `above` and `below` exclusive; they apply to each item of a list).
    `output_file`: text naming a file written next to metrics.json ("" for none), e.g. a chart;
    it must be a plain relative .json name, and two such settings cannot name the same file.
    `socket`: the setting names a socket of the phase, in one of SOCKET_ROLES; a JSON output
    says what it holds (`json_value`, one of JSON_VALUES), and `hints` are words of a slug that
    tell it from other sockets of the same kind (HECKTOR's CT input: "ct")."""
    assert socket is None or socket in SOCKET_ROLES, socket
    assert json_value in JSON_VALUES, json_value
    metadata = {"doc": doc, "choices": choices, "minimum": minimum, "maximum": maximum, "above": above,
                "below": below, "output_file": output_file, "socket": socket, "json_value": json_value,
                "hints": tuple(hints)}
    if isinstance(default, (list, dict)):
        return dataclasses.field(default_factory=lambda: type(default)(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _type_name(kind: Any) -> str:
    return {int: "a whole number", float: "a number", str: "text", bool: "true or false"}.get(kind, str(kind))


def _check_value(name: str, kind: Any, value: Any) -> Any:
    """Type-check one value from config.json against the field's annotation."""
    origin = typing.get_origin(kind)
    arguments = typing.get_args(kind)
    if origin in (typing.Union, types.UnionType) and type(None) in arguments:  # `float | None`: null allowed
        if value is None:
            return None
        (kind,) = [a for a in arguments if a is not type(None)]
        return _check_value(name, kind, value)
    if origin in (typing.Union, types.UnionType):  # `str | list[str]`: a list, or the other type
        lists = [a for a in arguments if typing.get_origin(a) in (list, tuple)]
        others = [a for a in arguments if a not in lists]
        if isinstance(value, list) and lists:
            return _check_value(name, lists[0], value)
        if len(others) == 1:
            try:
                return _check_value(name, others[0], value)
            except SetupError:
                if not lists:
                    raise
        raise SetupError(f"{CONFIG_FILE}: setting {name!r} must be {_type_name(others[0]) if others else 'a list'}"
                         f"{' or a list of them' if lists else ''}, not {json_type(value)}.")
    if origin in (list, tuple):
        (item_kind, *_) = typing.get_args(kind) or (Any,)
        if not isinstance(value, list):
            raise SetupError(f"{CONFIG_FILE}: setting {name!r} must be a list, not {json_type(value)}.")
        items = [_check_value(f"{name}[{n}]", item_kind, item) for n, item in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if kind is Any:
        return value
    if isinstance(value, HugeNumber):
        raise SetupError(f"{CONFIG_FILE}: setting {name!r} is {shown(value)}, too large to be a number.")
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind is float and isinstance(value, float) and not math.isfinite(value):
        raise SetupError(f"{CONFIG_FILE}: setting {name!r} is {shown(value)}; it must be a finite number.")
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
        raise SetupError(f"{CONFIG_FILE}: setting {name!r} must be {_type_name(kind)}, not {json_type(value)}.")
    return value



@dataclasses.dataclass(frozen=True)
class Settings:
    """Base of every challenge's settings."""

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> Settings:
        if not isinstance(values, dict):
            raise SetupError(f"{CONFIG_FILE} must be a JSON object of settings.")
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise SetupError(f"{CONFIG_FILE}: unknown setting(s) {', '.join(map(repr, unknown))}; this challenge's "
                             f"settings are {', '.join(fields) or 'none'}.")
        hints = typing.get_type_hints(cls)
        checked = {name: _check_value(name, hints[name], value) for name, value in values.items()}
        settings = cls(**checked)
        settings.check()
        return settings

    @classmethod
    def from_ground_truth(cls, ground_truth_dir: Path) -> Settings:
        origin, path = Origin.ground_truth(ground_truth_dir), ground_truth_dir / CONFIG_FILE
        if not origin.exists(path):  # a broken link named config.json is reported, not skipped
            return cls()
        return cls.from_mapping(read_json(origin, path, "The phase's settings"))

    def replace(self, **changes: Any) -> Settings:
        settings = dataclasses.replace(self, **changes)
        settings.check()
        return settings

    def check(self) -> None:
        """Limits declared on the fields; subclasses add rules that span several fields."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            items = value if isinstance(value, (list, tuple)) else [value]
            for item in items:
                _check_limits(f, item)
        self._check_output_files()
        self._check_sockets()

    def _check_sockets(self) -> None:
        """A socket setting names sockets: a list (a case input's, one per interface) holds at least
        one name, none empty, none twice; only a case input may be empty (its job's only image)."""
        for name, role in self.socket_fields():
            value = getattr(self, name)
            names = socket_names(value)
            if isinstance(value, (list, tuple)) and (not names or "" in names):
                raise SetupError(f"{CONFIG_FILE}: setting {name!r} must list one socket slug per interface, none "
                                 f"empty; found {shown(list(value))}.")
            if len(set(names)) != len(names):
                raise SetupError(f"{CONFIG_FILE}: setting {name!r} names a socket twice ({shown(list(value))}).")
            if role != CASE_INPUT and not names:
                raise SetupError(f"{CONFIG_FILE}: setting {name!r} must name the phase's output socket (its slug).")

    @classmethod
    def socket_fields(cls) -> list[tuple[str, str]]:
        """(setting name, role) of every setting naming one of the phase's sockets."""
        return [(f.name, f.metadata["socket"]) for f in dataclasses.fields(cls) if f.metadata.get("socket")]

    def _check_output_files(self) -> None:
        """Files written next to metrics.json (charts), checked whole before any scoring: plain
        relative .json names that fit the file system, each once, none another's folder."""
        named: dict[str, str] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not f.metadata.get("output_file") or value == "":
                continue
            problem = output_file_problem(value)
            if problem is not None:
                raise SetupError(f"{CONFIG_FILE}: setting {f.name!r} is {shown(value)}; {problem}.")
            named[f.name] = value
        collision = output_files_collision(named)
        if collision is not None:
            raise SetupError(f"{CONFIG_FILE}: settings {collision}.")

    def as_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def describe(cls) -> list[tuple[str, Any, str]]:
        """(name, default, doc) of every setting, for --list and the README."""
        defaults = cls()
        return [(f.name, _plain(getattr(defaults, f.name)), f.metadata.get("doc", "")) for f in dataclasses.fields(cls)]


def _check_limits(f: dataclasses.Field, value: Any) -> None:
    choices = f.metadata.get("choices")
    if choices is not None and value not in choices:
        raise SetupError(f"{CONFIG_FILE}: setting {f.name!r} is {value!r}; it must be one of "
                         f"{', '.join(map(repr, choices))}.")
    if value is None or isinstance(value, (bool, str)) or not isinstance(value, (int, float)):
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise SetupError(f"{CONFIG_FILE}: setting {f.name!r} is {shown(value)}; it must be a finite number.")
    limits = [("minimum", lambda v, b: v >= b, "at least"), ("maximum", lambda v, b: v <= b, "at most"),
              ("above", lambda v, b: v > b, "above"), ("below", lambda v, b: v < b, "below")]
    for key, holds, words in limits:
        bound = f.metadata.get(key)
        if bound is not None and not holds(value, bound):
            raise SetupError(f"{CONFIG_FILE}: setting {f.name!r} is {value!r}; it must be {words} {bound:g}.")


def socket_names(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The slugs a socket setting names: one (a text), none ("": the job's only image input), or
    one per interface (a list)."""
    if isinstance(value, str):
        return (value,) if value else ()
    return tuple(value)


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
