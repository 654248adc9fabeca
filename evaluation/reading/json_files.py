"""Reading a JSON file that someone else wrote, without letting it crash or mislead us."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from evaluation.reading.files import MEGABYTE, Origin, shown_path
from evaluation.reading.values import parse_integer, shown

# A JSON output of one case (a likelihood, a list of points) is kilobytes; a bound keeps a huge
# file from taking the machine's memory (parsed JSON takes ~10x its size).
MAX_JSON_BYTES = 64 * MEGABYTE


class DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    document = dict(pairs)
    if len(document) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return document


# json.loads(text, **options) builds a decoder per call; one is enough (it keeps no state).
_DECODER = json.JSONDecoder(parse_int=parse_integer, object_pairs_hook=_object_without_duplicates)


def parse_json(text: str | bytes) -> Any:
    """json.loads with our rules: a key given twice in one object is refused (json keeps the last
    silently), integers too long for a float become HugeNumber, NaN and Infinity are read as
    floats (callers refuse them where a finite number is needed). Raises ValueError (with
    DuplicateKey), RecursionError or json.JSONDecodeError."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if text.startswith("\ufeff"):  # a byte-order mark, as some editors save
        text = text[1:]
    if text.startswith("\ufeff"):  # a second one: refused as json.loads refuses a first
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _DECODER.decode(text)


def read_json(origin: Origin, path: Path, what: str, max_bytes: int = MAX_JSON_BYTES,
              shown_name: str | None = None) -> Any:
    """The parsed content of a JSON file inside `origin`; any problem is one sentence naming
    `what` and the file (never a traceback, never quoting the file beyond a key)."""
    data = origin.read_bytes(path, what, max_bytes, shown_name)
    return parse_json_or_fail(data, f"{what}: {shown_path(shown_name or Path(path).name)}", origin.fail)


def parse_json_or_fail(data: bytes, named: str, fail: Callable[[str], NoReturn]) -> Any:
    """parse_json(data), or fail("<named> <what is wrong>.") in one sentence: `named` says whose
    file it is (read_json: "<what>: <file name>")."""
    try:
        return parse_json(data)
    except UnicodeDecodeError as error:
        problem = f"is not UTF-8 text (byte {error.start + 1} cannot be decoded)"
    except json.JSONDecodeError as error:
        problem = f"is not valid JSON ({error.msg} at line {error.lineno} column {error.colno})"
    except DuplicateKey as error:
        problem = f"gives the key {shown(error.key)} twice in one object"
    except RecursionError:
        problem = "is nested too deeply to be read"
    except ValueError as error:  # e.g. a float literal the parser refuses
        problem = f"is not valid JSON ({str(error)[:100]})"
    fail(f"{named} {problem}.")
