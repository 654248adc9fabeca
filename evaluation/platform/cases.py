"""One case of a submission (an algorithm job, or what a predictions-file phase gave for it), how
its outputs are read, and how a job's case id is found (its input image's name, the case mapping).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluation.errors import SetupError, SubmissionError
from evaluation.platform.locations import CASE_MAPPING_FILE, strip_extension
from evaluation.platform.outputs import Undefined
from evaluation.platform.predictions import Job, JobTiming, SocketValue, job_timing
from evaluation.reading.files import Origin
from evaluation.reading.json_files import read_json

if TYPE_CHECKING:
    from evaluation.reading.images import ImageFile


IMAGE_OUTPUT_SUFFIXES = (".mha", ".tif", ".tiff")


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


