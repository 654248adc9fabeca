"""Settings: what a spec calls configurable, with the spec's default, changeable per phase.

A challenge declares its settings as a frozen dataclass deriving from `Settings`, each field
with its default and, where the spec restricts it, `choices` or a `minimum`:

    @dataclass(frozen=True)
    class Rare26Settings(Settings):
        sampling: str = setting("image", choices=("image", "patient"), doc="bootstrap scheme")

An organizer overrides any of them with `config.json` in the ground-truth folder; an unknown
key or a wrong type is an error of the ground truth, named. The settings in force are echoed
into metrics.json.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any

from evaluation.errors import SetupError
from evaluation.grand_challenge import CONFIG_FILE, read_json_file


def setting(default: Any, *, doc: str, choices: tuple | None = None, minimum: float | None = None):
    """A settings field: its default, one line of documentation, and optional limits."""
    metadata = {"doc": doc, "choices": choices, "minimum": minimum}
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
    if origin in (list, tuple):
        (item_kind, *_) = typing.get_args(kind) or (Any,)
        if not isinstance(value, list):
            raise SetupError(f"{CONFIG_FILE}: setting {name!r} must be a list, not {json_type(value)}.")
        items = [_check_value(f"{name}[{n}]", item_kind, item) for n, item in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if kind is Any:
        return value
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
        raise SetupError(f"{CONFIG_FILE}: setting {name!r} must be {_type_name(kind)}, not {json_type(value)}.")
    return value


def json_type(value: Any) -> str:
    """How a JSON value's type is named in messages."""
    if value is None:
        return "null"
    return {bool: "a boolean", int: "a number", float: "a number", str: "text", list: "a list",
            dict: "an object"}.get(type(value), type(value).__name__)


@dataclasses.dataclass(frozen=True)
class Settings:
    """Base of every challenge's settings."""

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> "Settings":
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
    def from_ground_truth(cls, ground_truth_dir: Path) -> "Settings":
        path = ground_truth_dir / CONFIG_FILE
        if not path.is_file():
            return cls()
        return cls.from_mapping(read_json_file(path, CONFIG_FILE, error=SetupError))

    def replace(self, **changes: Any) -> "Settings":
        settings = dataclasses.replace(self, **changes)
        settings.check()
        return settings

    def check(self) -> None:
        """Limits declared on the fields; subclasses add rules that span several fields."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            choices, minimum = f.metadata.get("choices"), f.metadata.get("minimum")
            if choices is not None and value not in choices:
                raise SetupError(f"{CONFIG_FILE}: setting {f.name!r} is {value!r}; it must be one of "
                                 f"{', '.join(map(repr, choices))}.")
            if minimum is not None and value is not None and value < minimum:
                raise SetupError(f"{CONFIG_FILE}: setting {f.name!r} is {value!r}; it must be at least {minimum}.")

    def as_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def describe(cls) -> list[tuple[str, Any, str]]:
        """(name, default, doc) of every setting, for --list and the README."""
        defaults = cls()
        return [(f.name, _plain(getattr(defaults, f.name)), f.metadata.get("doc", "")) for f in dataclasses.fields(cls)]


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
