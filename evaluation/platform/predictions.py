"""predictions.json: the platform's list of a submission's algorithm jobs, their inputs and
outputs (sockets), and their timing; parsed and checked, nothing about any challenge.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evaluation.errors import SetupError
from evaluation.platform.outputs import Undefined
from evaluation.reading.files import MEGABYTE, Origin
from evaluation.reading.json_files import read_json
from evaluation.reading.values import shown

_PK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
# predictions.json is the platform's: about 2 kB a job; 25,000 jobs are 50 MB.
MAX_PREDICTIONS_BYTES = 1024 * MEGABYTE


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


