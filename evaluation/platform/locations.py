"""Where the platform puts things: /input, /output, the ground truth (baked into the image or
uploaded on the phase), its reserved files (config.json, case-mapping.json), and the files of
a submission and of the ground truth, checked before they are read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from evaluation.errors import SetupError
from evaluation.reading.files import Origin, shown_path

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


