"""What the platform wants back: /output/metrics.json (plain JSON, never NaN, every ranked path
a finite number, written atomically) and the Chart outputs (Vega-Lite specs).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from evaluation.errors import SetupError, UsageError
from evaluation.platform.locations import METRICS_FILE
from evaluation.reading.values import shown


@dataclass(frozen=True)
class Undefined:
    """A metric that has no value for this submission: written as null, with `reason` in notes."""

    reason: str


@dataclass
class _Cleaner:
    ranked_paths: frozenset[str]
    notes: dict[str, str] = field(default_factory=dict)

    def clean(self, value: Any, path: str) -> Any:
        if isinstance(value, Undefined):
            self.notes[path] = value.reason
            return None
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                if not isinstance(key, str):
                    raise TypeError(f"metrics.json key {key!r} at {path or 'top level'} is not a string")
                out[key] = self.clean(item, f"{path}.{key}" if path else key)
            return out
        if isinstance(value, (list, tuple)):
            return [self.clean(item, f"{path}[{n}]") for n, item in enumerate(value)]
        if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy scalars and arrays
            return self.clean(value.tolist(), path)
        if isinstance(value, float) and not math.isfinite(value):
            self.notes[path] = "not a finite number"
            return None
        if value is None or isinstance(value, (str, bool, int, float)):
            return value
        raise TypeError(f"metrics.json value at {path} has type {type(value).__name__}")


def value_at_path(document: dict, path: str) -> Any:
    """The value a leaderboard reads at a dot-separated path (dict keys only), None if absent."""
    value: Any = document
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def set_at_path(document: dict, path: str, value: Any) -> None:
    """Sets the value at a dot-separated path (where value_at_path reads it), making the
    dictionaries on the way."""
    *parents, key = path.split(".")
    for part in parents:
        document = document.setdefault(part, {})
    document[key] = value


def nest_paths(values: dict[str, Any]) -> dict[str, Any]:
    """{"aggregates.c_index": v, ...} as metrics.json nests it ({"aggregates": {"c_index": v}}),
    keys in the order given."""
    nested: dict[str, Any] = {}
    for path, value in values.items():
        set_at_path(nested, path, value)
    return nested


def metrics_json(metrics: dict, ranked_paths: Iterable[str] = ()) -> str:
    """The metrics.json text: plain JSON, never NaN or Infinity (undefined values are null with a
    note under "notes"), every ranked path a finite number, the same bytes for the same dict."""
    cleaner = _Cleaner(frozenset(ranked_paths))
    document = cleaner.clean(metrics, "")
    if cleaner.notes:
        document["notes"] = {**document.get("notes", {}), **cleaner.notes}
    for path in cleaner.ranked_paths:
        value = value_at_path(document, path)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            # A leaderboard silently drops a submission whose ranked value is not a number.
            raise ValueError(f"ranked metrics.json path {path} is {value!r}, not a finite number")
    return json.dumps(document, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def check_output_apart(output_dir: Path, read: Iterable[tuple[str, Path]]) -> None:
    """Before anything is written: the output folder is none of the folders the run reads (`read`:
    (what, folder), the input and the ground truth), nor inside one, links followed. metrics.json
    or a chart written there would change what this and every later run reads (a file in the
    ground truth, or in a predictions-file submission), and an old metrics.json there would be
    deleted: UsageError (exit 2), as every other command refuses to write into what it reads. On
    the platform /output, /input and the ground truth are apart, so this never refuses there."""
    output_real = Path(os.path.realpath(output_dir))
    for what, folder in read:
        real = Path(os.path.realpath(folder))
        if output_real == real or real in output_real.parents:
            raise UsageError(f"--output {output_dir} is {'' if output_real == real else 'inside '}the {what} folder "
                             f"{folder}: the evaluation never writes into what it reads; give an output folder "
                             f"apart from it.")


def prepare_output(output_dir: Path) -> None:
    """Before any scoring: the output folder exists and is writable (else the whole run would be
    lost at the end), and holds no metrics.json from an earlier run (a failed run must leave
    none behind)."""
    if os.path.exists(output_dir) and not output_dir.is_dir():
        raise SetupError(f"The output {output_dir} is not a folder.")
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SetupError(f"The output folder {output_dir} cannot be created ({error.strerror}).") from None
    target = output_dir / METRICS_FILE
    try:
        if os.path.lexists(target):
            os.unlink(target)
        fd, probe = _new_file(output_dir, ".write-test-", "")
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        raise SetupError(f"The output folder {output_dir} is not writable ({error.strerror}).") from None


_RANDOM_BYTES = 6  # of a temporary file's name, written as twice as many hex digits


def _new_file(folder: Path, prefix: str, suffix: str) -> tuple[int, str]:
    """A new, private file with an unused random name in folder (tempfile.mkstemp's contract,
    without importing tempfile and its dependencies at every start-up)."""
    for _ in range(100):
        path = os.path.join(folder, f"{prefix}{os.urandom(_RANDOM_BYTES).hex()}{suffix}")
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name in {folder}")


def write_metrics(output_dir: Path, metrics: dict, ranked_paths: Iterable[str] = ()) -> Path:
    """Write metrics.json atomically: a reader sees the whole file or none."""
    text = metrics_json(metrics, ranked_paths)
    try:
        return write_atomically(output_dir, text)
    except OSError as error:
        raise SetupError(f"metrics.json cannot be written to {output_dir} ({error.strerror}).") from None


def _temporary_prefix(target: Path) -> str:
    """The start of the temporary name a file is written under before it is renamed to `target`:
    ".<stem>-", then the random hex digits and the target's suffix (_TEMPORARY_EXTRA characters in
    all more than the target's own name, which output_file_problem leaves room for)."""
    return f".{target.stem}-"


def write_atomically(output_dir: Path, text: str | Callable[[TextIO], object], name: str = METRICS_FILE, *,
                     sync: bool = True) -> Path:
    """`text` written to output_dir/name whole or not at all: under a new private temporary name
    beside it (random, created with O_EXCL and O_NOFOLLOW: a file or link already there is never
    written through), then renamed over it, which replaces a link at `name` rather than writing
    where it leads (OSError when that fails, the temporary file removed; so on any exception,
    SIGTERM's included). `text` is the text, or a function writing it to the open file (streamed).
    `sync`: forced to disk before the rename."""
    target = output_dir / name
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = _new_file(target.parent, _temporary_prefix(target), target.suffix)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            if callable(text):
                text(handle)
            else:
                handle.write(text)
            if sync:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return target


# Charts: Vega-Lite specs the result page draws (a phase's evaluation output of kind Chart).

# A Chart output's relative_path: a plain relative name (sub-folders allowed) ending in .json,
# each part matched whole (re.fullmatch: a pattern's `$` would also match before a final newline).
_OUTPUT_FILE_PART = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
MAX_OUTPUT_FILE_NAME = 255  # the whole relative name
NAME_MAX = 255  # bytes of one name in a folder (Linux file systems); the parts are ASCII
# A file is written as ".<stem>-<random hex>.json" and renamed (write_atomically): its temporary
# name is this much longer than its own, and must fit NAME_MAX too.
_TEMPORARY_EXTRA = len(".") + len("-") + 2 * _RANDOM_BYTES


def output_file_problem(name: str) -> str | None:
    """Why `name` cannot be the relative_path of a file written next to metrics.json (None: it
    can): a plain relative name ending in .json, each part letters, digits, '.', '_' or '-'
    (not starting with '.'), short enough for every part and the file's temporary name to fit
    NAME_MAX, never metrics.json itself nor inside a folder named so."""
    if not isinstance(name, str) or not name.lower().endswith(".json") or len(name) <= len(".json"):
        return "it must be a file name ending in .json"
    if len(name) > MAX_OUTPUT_FILE_NAME:
        return f"it must be at most {MAX_OUTPUT_FILE_NAME} characters long"
    parts = name.split("/")
    if not all(_OUTPUT_FILE_PART.fullmatch(part) for part in parts):
        return ("it must be a plain relative name (letters, digits, '.', '_', '-', sub-folders separated by '/'; "
                "no leading '/', no '..')")
    longest = NAME_MAX - _TEMPORARY_EXTRA
    if len(parts[-1]) > longest:  # the folders' names are shorter than the whole, at most 255 (above)
        return (f"its file name {parts[-1][:20]}... is {len(parts[-1])} characters long; at most {longest} leave room "
                f"for the name it is written under before being renamed")
    if parts[0].lower() == METRICS_FILE:
        return f"it cannot be {METRICS_FILE}, the evaluation's own output, nor a file in a folder named so"
    return None


def output_files_collision(names: dict[str, str]) -> str | None:
    """Why the files `names` ({what names it: relative name}, each without output_file_problem)
    cannot all be written into one folder (None: they can): two name the same file (letter case
    aside, as on a case-insensitive file system), or one file would be a folder of another's."""
    seen = sorted((name.lower(), what) for what, name in names.items())
    for (first, first_what), (second, second_what) in itertools.pairwise(seen):
        if first == second:
            return (f"{first_what!r} and {second_what!r} both name the file {names[second_what]}; each chart needs a "
                    f"file of its own")
    for name, what in seen:
        for other, other_what in seen:
            if other.startswith(name + "/"):
                return (f"{what!r} names the file {names[what]}, which {other_what!r} ({names[other_what]}) needs as "
                        f"a folder; a chart file cannot be another's folder")
    return None


def chart_json(spec: dict) -> str:
    """A chart file's text: compact JSON, never NaN, the same bytes for the same spec."""
    return json.dumps(spec, ensure_ascii=True, allow_nan=False, separators=(",", ":")) + "\n"


def write_chart(output_dir: Path, name: str, spec: dict) -> Path:
    """Write one Vega-Lite chart at /output/<name> atomically (before metrics.json, the marker of
    a successful run); `name` was checked when the settings were read."""
    problem = output_file_problem(name)
    if problem is not None:
        raise SetupError(f"The chart file name {shown(name)} cannot be used: {problem}.")
    text = chart_json(spec)
    try:
        return write_atomically(output_dir, text, name)
    except OSError as error:
        raise SetupError(f"The chart {name} cannot be written to {output_dir} ({error.strerror}).") from None


def write_outputs(output_dir: Path, charts: dict[str, dict], metrics: dict, ranked_paths: Iterable[str] = ()) -> Path:
    """A successful run's files: its charts, then metrics.json (the marker of success). When
    any of them cannot be written, the charts this call wrote and the folders it made for them
    are removed again: a failed run leaves no chart behind."""
    metrics_json(metrics, ranked_paths)  # a value metrics.json refuses fails before any file is written
    made: list[Path] = []  # charts written and folders created, in that order
    try:
        for name in sorted(charts):
            target = output_dir / name
            missing = [folder for folder in target.parents if len(folder.parts) > len(output_dir.parts)
                       and not os.path.lexists(folder)]
            made.extend(reversed(missing))  # outermost first
            write_chart(output_dir, name, charts[name])
            made.append(target)
        return write_metrics(output_dir, metrics, ranked_paths)
    except BaseException:
        for path in reversed(made):  # files, then their folders, innermost first
            try:
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()  # only if empty: a file someone else put there stays
                elif os.path.lexists(path):
                    path.unlink()
            except OSError:
                pass
        raise
