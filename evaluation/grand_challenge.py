"""The grand-challenge.org evaluation contract, and nothing about any challenge.

What the platform gives us (docs/grand-challenge.md): /input/predictions.json listing
the submission's algorithm jobs with their outputs under /input/<job pk>/output/, or, in a
predictions-file phase, the participant's CSV or unpacked ZIP in /input; the ground truth baked
into the image or uploaded on the phase. What it wants back: /output/metrics.json, valid JSON,
every leaderboard value a finite number.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from evaluation.errors import SetupError, SubmissionError, UsageError
from evaluation.reading.files import MEGABYTE, Origin, shown_path
from evaluation.reading.json_files import read_json
from evaluation.reading.values import shown

if TYPE_CHECKING:
    from evaluation.reading.images import ImageFile

INPUT_DIR = Path("/input")
OUTPUT_DIR = Path("/output")
UPLOADED_GROUND_TRUTH_DIR = Path("/opt/ml/input/data/ground_truth")  # phase upload (newer way)
BAKED_GROUND_TRUTH_DIR = Path("/opt/app/ground-truth")  # built into the image (evalutils way)

CONFIG_FILE = "config.json"  # settings of the phase, next to the ground truth
METRICS_FILE = "metrics.json"
CASE_MAPPING_FILE = "case-mapping.json"  # optional {input image name: case id}
RESERVED_GROUND_TRUTH_FILES = frozenset({CONFIG_FILE, CASE_MAPPING_FILE})
# Files the platform itself puts in /input, never part of a participant's upload.
PLATFORM_INPUT_FILES = frozenset({"predictions.json", "inputs.json"})

# Extensions stripped from an input image name to get the case id. The platform stores every
# image as .mha but keeps the organizer's original name (possibly .nii.gz), so only known
# suffixes are removed: "case.v2" stays "case.v2".
_IMAGE_EXTENSIONS = (
    ".nii.gz", ".ome.tiff", ".ome.tif", ".tar.gz", ".mha", ".mhd", ".nii", ".nrrd", ".tif",
    ".tiff", ".png", ".jpg", ".jpeg", ".bmp", ".dcm", ".svs", ".ndpi", ".mrxs", ".scn", ".vsi",
    ".h5", ".hdf5", ".json", ".csv", ".npy", ".npz", ".zip", ".gz", ".mp4", ".avi",
)
IMAGE_OUTPUT_SUFFIXES = (".mha", ".tif", ".tiff")
_PK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
# predictions.json is the platform's: about 2 kB a job; 25,000 jobs are 50 MB.
MAX_PREDICTIONS_BYTES = 1024 * MEGABYTE


def strip_extension(name: str) -> str:
    """`100433_00001_0000.nii.gz` -> `100433_00001_0000`; unknown suffixes are kept."""
    lower = name.lower()
    for extension in _IMAGE_EXTENSIONS:
        if lower.endswith(extension) and len(name) > len(extension):
            return name[: -len(extension)]
    return name


def resolve_ground_truth_dir(explicit: Path | None, challenge: str) -> Path:
    """--ground-truth, else the phase's uploaded ground truth when present, else the baked one.

    An uploaded tarball may hold the ground truth's files at its root (as ./export.sh makes it)
    or keep its top folder: `<dir>/<challenge>/` is then used. A file beside that folder
    (config.json, a label file) would be silently ignored: that layout is refused (exit 3).
    """
    if explicit is not None:
        directory = explicit
    elif UPLOADED_GROUND_TRUTH_DIR.is_dir() and any(UPLOADED_GROUND_TRUTH_DIR.iterdir()):
        directory = UPLOADED_GROUND_TRUTH_DIR
    else:
        directory = BAKED_GROUND_TRUTH_DIR
    if (directory / challenge).is_dir():
        beside = _files_beside(directory, challenge)
        if beside:
            raise SetupError(f"The ground truth {directory} holds a folder {challenge}/ and, beside it, "
                             f"{_names(beside)}: it is unclear which is the ground truth. Put every file of "
                             f"the ground truth (config.json included) inside {challenge}/, or its contents at "
                             f"the top with no {challenge}/ folder (as ./export.sh packs it).")
        directory = directory / challenge
    if not directory.is_dir():
        raise SetupError(f"The ground-truth folder {directory} does not exist.")
    return directory


def _files_beside(directory: Path, challenge: str) -> list[str]:
    """The names of what is beside `<directory>/<challenge>/` that is not a folder (other
    challenges' folders may be there: a copy of ground-truth/), leaving out hidden files and
    archive debris (__MACOSX, ._name)."""
    found = []
    for path in directory.iterdir():
        if path.name == challenge or path.name.startswith(".") or path.name == "__MACOSX":
            continue
        if not (path.is_dir() and not path.is_symlink()):
            found.append(path.name)
    return sorted(found)


def _names(names: list[str], limit: int = 3) -> str:
    shown_names = ", ".join(shown_path(name) for name in names[:limit])
    return shown_names + (f" and {len(names) - limit} more" if len(names) > limit else "")


_FILE_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
               (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a folder"))


def ground_truth_file_problem(path: Path) -> str | None:
    """Why the ground-truth entry `path` cannot be read as a file (None: a regular file, or a
    link to one): a named pipe, a socket, a device, a folder, a link leading nowhere. Such an
    entry is the organizer's error, never left out of the test set in silence."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "is a link to a file that does not exist" if os.path.islink(path) else "is missing"
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if stat.S_ISREG(info.st_mode):
        return None
    kind = next((name for test, name in _FILE_KINDS if test(info.st_mode)), "something else")
    return f"is {kind}, not a regular file"


def check_ground_truth_file(path: Path) -> Path:
    """`path`, when it is a regular file (ground_truth_file_problem), else SetupError naming it."""
    problem = ground_truth_file_problem(path)
    if problem is not None:
        raise SetupError(f"Ground truth: {shown_path(path.name)} {problem}.")
    return path


def ground_truth_files(directory: Path, suffix: str) -> list[Path]:
    """The ground-truth files ending in `suffix`, leaving out config.json, the case mapping and
    folders; anything else that is not a regular file (a named pipe, a link leading nowhere) is
    refused by name, never left out of the test set."""
    return sorted(
        check_ground_truth_file(path) for path in directory.iterdir()
        if path.name.lower().endswith(suffix) and path.name not in RESERVED_GROUND_TRUTH_FILES and not path.is_dir()
    )


def single_ground_truth_file(directory: Path, suffix: str) -> Path:
    """The one ground-truth file ending in `suffix`; anything else is the organizer's error."""
    found = ground_truth_files(directory, suffix)
    if len(found) != 1:
        names = ", ".join(p.name for p in found) or "none"
        raise SetupError(f"The ground-truth folder {directory} must hold exactly one {suffix} file (besides "
                         f"{CONFIG_FILE} and {CASE_MAPPING_FILE}); found {names}.")
    return found[0]


def list_submission_files(input_dir: Path) -> list[Path]:
    """Every file of a predictions-file submission (an unpacked ZIP), in a stable order: regular
    files inside /input only (see Origin.list_files), without the platform's own inputs.json."""
    real_root = Path(os.path.realpath(input_dir))
    return [path for path in Origin.submission(input_dir).list_files()
            if not (path.parent == real_root and path.name in PLATFORM_INPUT_FILES)]


# ---------------------------------------------------------------------------------------------
# predictions.json


_DURATION = re.compile(
    r"^P(?:(?P<days>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:\.\d+)?)H)?(?:(?P<minutes>\d+(?:\.\d+)?)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)


def parse_iso_duration(text: Any) -> float | None:
    """'P0DT00H10M22.910000S' -> 622.91 seconds; None for null or an unreadable value."""
    if not isinstance(text, str):
        return None
    match = _DURATION.match(text.strip())
    if not match or text.strip() in ("P", "PT"):
        return None
    parts = {k: float(v) for k, v in match.groupdict().items() if v is not None}
    return (parts.get("days", 0.0) * 86400 + parts.get("hours", 0.0) * 3600
            + parts.get("minutes", 0.0) * 60 + parts.get("seconds", 0.0))


def _parse_timestamp(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        return None


@dataclass(frozen=True)
class SocketValue:
    """One input or output of a job: its socket and where its content is."""

    slug: str
    kind: str
    super_kind: str
    relative_path: str
    image_name: str | None = None
    value: Any = None


@dataclass(frozen=True)
class Job:
    pk: str
    inputs: dict[str, SocketValue]
    outputs: dict[str, SocketValue]
    exec_duration_seconds: float | None = None
    invoke_duration_seconds: float | None = None
    started_to_completed_seconds: float | None = None
    started_at: datetime | None = None  # older files: a span over several jobs needs the instants
    completed_at: datetime | None = None

    @property
    def interface_key(self) -> tuple[str, ...]:
        """A phase can have several interfaces; a job's is its sorted input slugs."""
        return tuple(sorted(self.inputs))

    @property
    def duration_seconds(self) -> float | None:
        """The algorithm's processing time: exec_duration, else completed_at - started_at."""
        if self.exec_duration_seconds is not None:
            return self.exec_duration_seconds
        return self.started_to_completed_seconds


def _socket_value(raw: Any, where: str) -> SocketValue:
    if not isinstance(raw, dict):
        raise SetupError(f"predictions.json: {where} is not an object.")
    socket = raw.get("socket") or raw.get("interface")  # files before 2025-12 have only "interface"
    if not isinstance(socket, dict) or not isinstance(socket.get("slug"), str):
        raise SetupError(f"predictions.json: {where} has no socket (or interface) with a slug.")
    image = raw.get("image")
    image_name = image.get("name") if isinstance(image, dict) else None
    return SocketValue(
        slug=socket["slug"],
        kind=str(socket.get("kind") or ""),
        super_kind=str(socket.get("super_kind") or ""),
        relative_path=str(socket.get("relative_path") or ""),
        image_name=image_name if isinstance(image_name, str) else None,
        value=raw.get("value"),
    )


def parse_predictions(document: Any) -> list[Job]:
    """The jobs of predictions.json, in file order, in both the old and the new shape."""
    if not isinstance(document, list):
        raise SetupError("predictions.json must be a list of algorithm jobs.")
    jobs = []
    seen_pks: set[str] = set()
    for index, raw in enumerate(document):
        if not isinstance(raw, dict):
            raise SetupError(f"predictions.json: job {index} is not an object.")
        pk = raw.get("pk")
        if not isinstance(pk, str) or not _PK.match(pk):
            raise SetupError(f"predictions.json: job {index} has no usable pk ({shown(pk)}).")
        if pk in seen_pks:  # two jobs would read the same /input/<pk>/ folder
            raise SetupError(f"predictions.json lists two jobs with the pk {pk}.")
        seen_pks.add(pk)
        values = {}
        for direction in ("inputs", "outputs"):
            entries = raw.get(direction) or []
            if not isinstance(entries, list):
                raise SetupError(f"predictions.json: the {direction} of job {pk} are not a list.")
            by_slug = {}
            for n, entry in enumerate(entries):
                socket_value = _socket_value(entry, f"{direction[:-1]} {n} of job {pk}")
                if socket_value.slug in by_slug:  # which of the two to read cannot be told: never the last silently
                    raise SetupError(f"predictions.json: job {pk} lists the {direction[:-1]} socket "
                                     f"{shown(socket_value.slug)} twice.")
                by_slug[socket_value.slug] = socket_value
            values[direction] = by_slug
        started, completed = _parse_timestamp(raw.get("started_at")), _parse_timestamp(raw.get("completed_at"))
        elapsed = None
        if started is not None and completed is not None and (started.tzinfo is None) == (completed.tzinfo is None):
            elapsed = (completed - started).total_seconds()
        jobs.append(Job(
            pk=pk, inputs=values["inputs"], outputs=values["outputs"],
            exec_duration_seconds=parse_iso_duration(raw.get("exec_duration")),
            invoke_duration_seconds=parse_iso_duration(raw.get("invoke_duration")),
            started_to_completed_seconds=elapsed, started_at=started, completed_at=completed,
        ))
    return jobs


# ---------------------------------------------------------------------------------------------
# Job timing: a runtime metric's input.
#
# predictions.json gives each job's exec_duration (the algorithm container's own run, ISO 8601
# "P0DT00H10M22.910000S"; newer files), and its started_at and completed_at instants (older files
# have only these). A predictions-file phase gives no timing at all: the participant ran the
# algorithm elsewhere. So a processing time is a number only when every job carries one; else it
# is Undefined (null with the reason in metrics.json's notes), never 0 and never a guess.


@dataclass(frozen=True)
class JobTiming:
    """What a job says of its duration: exec_duration in seconds, or its instants (aware, a
    naive one read as UTC, as the platform writes UTC), kept as datetimes so that a span is exact
    to the microsecond."""

    exec_seconds: float | None
    started: datetime | None
    completed: datetime | None

    @property
    def seconds(self) -> float | None:
        """The job's processing time: exec_duration, else completed_at - started_at when both are
        given and in that order; None otherwise."""
        if self.exec_seconds is not None:
            return self.exec_seconds
        if self.started is not None and self.completed is not None and self.completed >= self.started:
            return (self.completed - self.started) / timedelta(microseconds=1) / 1e6
        return None


def job_timing(job: Job) -> JobTiming:
    """The timing predictions.json gives `job`."""
    def utc(instant: datetime | None) -> datetime | None:
        if instant is not None and instant.tzinfo is None:  # the platform writes UTC ("Z")
            return instant.replace(tzinfo=UTC)
        return instant

    return JobTiming(job.exec_duration_seconds, utc(job.started_at), utc(job.completed_at))


EXEC_DURATION_SUM = "sum of the jobs' exec_duration"
SPAN_OF_JOBS = "span from the earliest started_at to the latest completed_at"


def timing_rule(timings: list[JobTiming | None]) -> tuple[bool, str]:
    """(whether the submission has a processing time t, how t is found or why there is none),
    `timings` one per case (None: a predictions-file case): the sum of the jobs' exec_duration
    when every job has one, else the span from the earliest started_at to the latest
    completed_at when every job has both (older predictions.json) and it is not negative."""
    if not timings or any(timing is None for timing in timings):
        return False, "a predictions-file submission carries no processing time"
    if all(timing.exec_seconds is not None for timing in timings):
        return True, EXEC_DURATION_SUM
    if all(timing.started is not None and timing.completed is not None for timing in timings):
        if max(timing.completed for timing in timings) >= min(timing.started for timing in timings):
            return True, SPAN_OF_JOBS
        return False, "the jobs' completed_at precede their started_at"
    return False, "not every job carries exec_duration, nor started_at and completed_at"


def processing_seconds(timings: list[JobTiming | None]) -> float | Undefined:
    """The submission's processing time t in seconds by timing_rule (exec_durations summed with
    math.fsum; a span exact in microseconds before one division), or Undefined with the rule's
    reason: metrics.json then writes null with that note."""
    timed, source = timing_rule(timings)
    if not timed:
        return Undefined(f"no processing time: {source}")
    if source == EXEC_DURATION_SUM:
        return math.fsum(timing.exec_seconds for timing in timings)
    span = max(timing.completed for timing in timings) - min(timing.started for timing in timings)
    return span / timedelta(microseconds=1) / 1e6


def read_predictions(input_dir: Path) -> list[Job] | None:
    """The jobs of /input/predictions.json, or None in a predictions-file phase (no such file)."""
    path = input_dir / "predictions.json"
    if not os.path.lexists(path):
        return None
    origin = Origin.platform(input_dir)
    return parse_predictions(read_json(origin, path, "The platform's predictions.json", MAX_PREDICTIONS_BYTES))


# ---------------------------------------------------------------------------------------------
# One case of the submission, and reading its outputs.


@dataclass(slots=True, eq=False)  # not frozen: building 25,000 frozen ones cost a tenth of an ISIC run
class Case:
    """A test case of the submission: an algorithm job, or what a predictions-file phase gave
    for that case (a path, a row: the challenge decides)."""

    case_id: str
    input_dir: Path
    job: Job | None = None
    source: Any = None
    label: str = "Case"  # how messages name a case: "Stack", "Patient", "Slide"

    @property
    def name(self) -> str:
        return f"{self.label} {self.case_id}"

    @property
    def origin(self) -> Origin:
        """The participant's files: a bad one is the submission's fault."""
        return Origin.submission(self.input_dir)

    @property
    def timing(self) -> JobTiming | None:
        """What predictions.json says of this case's job's duration (job_timing); None in a
        predictions-file phase, which gives no timing."""
        return job_timing(self.job) if self.job is not None else None

    def seconds(self) -> float | Undefined:
        """This case's processing time in seconds (JobTiming.seconds: exec_duration, else
        completed_at - started_at), or Undefined saying why there is none (a predictions-file
        case, a job without timing): null with that note in metrics.json. A submission's total
        over its cases is processing_seconds([case.timing for case in cases])."""
        if self.job is None:
            return Undefined(f"{self.name}: a predictions-file submission carries no processing time")
        seconds = self.timing.seconds
        if seconds is None:
            return Undefined(f"{self.name}: job {self.job.pk} carries neither exec_duration nor started_at and "
                             f"completed_at in order")
        return seconds

    def _output(self, slug: str) -> SocketValue:
        if self.job is None:
            raise SetupError(f"{self.name}: output {slug!r} asked of a predictions-file submission.")
        output = self.job.outputs.get(slug)
        if output is None:
            found = ", ".join(sorted(self.job.outputs)) or "none"
            raise SubmissionError(f"{self.name}: the algorithm produced no output {slug!r} (outputs found: {found}).")
        return output

    def output_path(self, slug: str) -> Path:
        """Where an output's file (or an Image output's folder) is: /input/<pk>/output/<relative_path>.
        The path comes from predictions.json, the platform's, so a bad one is not the participant's
        fault; a link there that leads out of /input is."""
        output = self._output(slug)
        what = f"{self.name}, output {slug!r}"
        if not output.relative_path and output.super_kind != "Image":
            raise SetupError(f"predictions.json: output {slug!r} of job {self.job.pk} has no relative_path.")
        parts = [self.job.pk, "output"] + ([output.relative_path] if output.relative_path else [])
        Origin.platform(self.input_dir).check_parts(*parts, what=what)
        return self.origin.path(*parts, what=what)

    def read_json(self, slug: str) -> Any:
        """A JSON output (File or Value kind). The file is the truth: `value` is only a fallback
        for Value outputs, as the platform writes their file too."""
        output = self._output(slug)
        path = self.output_path(slug)
        if not os.path.lexists(path) and output.super_kind == "Value" and output.value is not None:
            return output.value
        return read_json(self.origin, path, f"{self.name}, output {slug!r}")

    def image_file(self, slug: str) -> Path:
        """The single image of an Image output, whatever name the platform gave it: the one .mha,
        .tif or .tiff in its folder, or, when its socket has no relative_path (the platform's
        default image socket), the output's named image directly in /input/<pk>/output/."""
        output = self._output(slug)
        folder = self.output_path(slug)
        what = f"{self.name}, output {slug!r}"
        if not output.relative_path and output.image_name:
            return self.origin.path(self.job.pk, "output", output.image_name, what=what)
        if not os.path.isdir(folder):
            raise SubmissionError(f"{self.name}: the image output {slug!r} is missing.")
        images = sorted(p for p in folder.iterdir()
                        if p.name.lower().endswith(IMAGE_OUTPUT_SUFFIXES) and not p.is_dir())
        if len(images) != 1:
            raise SubmissionError(f"{self.name}: the image output {slug!r} must hold exactly one .mha, .tif or "
                                  f".tiff file; found {len(images)}.")
        return self.origin.contains(images[0], what)

    def image(self, slug: str, what: str | None = None) -> ImageFile:
        """An Image output with its header read (and nothing decoded yet); `what` names it in
        messages (default: the case and the output's slug)."""
        from evaluation.reading.images import open_image  # here: a run without image outputs never needs it

        return open_image(self.origin, self.image_file(slug), what or f"{self.name}, output {slug!r}")


def case_image_name(job: Job, socket_slugs: str | tuple[str, ...] | None) -> str:
    """The name of the input image that identifies a job's case: the job's input at the first of
    `socket_slugs` it has (a phase with several interfaces, e.g. a CT or an MR input), or its only
    image input when None."""
    if isinstance(socket_slugs, str):
        socket_slugs = (socket_slugs,)
    if socket_slugs is not None:
        value = next((job.inputs[slug] for slug in socket_slugs if slug in job.inputs), None)
        if value is None:
            found = ", ".join(sorted(job.inputs)) or "none"
            wanted = " or ".join(repr(slug) for slug in socket_slugs)
            raise SubmissionError(f"Job {job.pk} has no input {wanted} (inputs: {found}); was the algorithm "
                                  f"built for this phase's interface?")
    else:
        images = [v for v in job.inputs.values() if v.image_name is not None]
        if len(images) != 1:
            raise SetupError(f"Job {job.pk} has {len(images)} image inputs: the challenge must name the socket "
                             f"that identifies the case.")
        value = images[0]
    if not value.image_name:
        raise SetupError(f"predictions.json: input {value.slug!r} of job {job.pk} has no image name.")
    return value.image_name


def mapped_case_id(name: str, mapping: dict[str, str]) -> str | None:
    """The case id the case mapping gives an input image name (by full name, then without its
    extension), or None."""
    if name in mapping:
        return mapping[name]
    return mapping.get(strip_extension(name))


def case_id_of_job(job: Job, socket_slugs: str | tuple[str, ...] | None, mapping: dict[str, str],
                   case_id_of_name: Callable[[str], str] = strip_extension) -> str:
    """The case id of a job: its input image's name (case_image_name) turned into an id by
    `case_id_of_name` (default: extension stripped); the ground truth's case mapping overrides."""
    name = case_image_name(job, socket_slugs)
    mapped = mapped_case_id(name, mapping)
    return mapped if mapped is not None else case_id_of_name(name)


def read_case_mapping(ground_truth_dir: Path) -> dict[str, str]:
    """Optional case-mapping.json: {input image name (with or without extension): case id}."""
    path = ground_truth_dir / CASE_MAPPING_FILE
    if not os.path.lexists(path):
        return {}
    mapping = read_json(Origin.ground_truth(ground_truth_dir), path, "The case mapping")
    if not isinstance(mapping, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
        raise SetupError(f"{CASE_MAPPING_FILE} must be a JSON object mapping input image names to case ids (strings).")
    return mapping


# ---------------------------------------------------------------------------------------------
# metrics.json


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


# ---------------------------------------------------------------------------------------------
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
