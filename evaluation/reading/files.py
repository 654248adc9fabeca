"""Where a file comes from, and reading it only if it is a regular file inside that place."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from evaluation.errors import EvaluationError, SetupError, SubmissionError

# Linux limits a path component to 255 bytes and a path to 4096: a longer name in a submission
# (or in predictions.json) would make the operating system raise, so it is refused first.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096
MEGABYTE = 1 << 20


@dataclass(frozen=True)
class Origin:
    """A folder files are read from, and the error a bad file there raises.

    `Origin.submission(input_dir)`: the participant's files (exit 1). `Origin.ground_truth(dir)`:
    the organizer's (exit 3). `Origin.platform(input_dir)`: what grand-challenge.org writes into
    /input itself, predictions.json (exit 3: not the participant's fault).
    """

    root: Path
    error: type[EvaluationError]
    place: str = "the input folder"  # how messages name root

    @classmethod
    def submission(cls, root: Path) -> "Origin":
        return cls(Path(root), SubmissionError)

    @classmethod
    def ground_truth(cls, root: Path) -> "Origin":
        return cls(Path(root), SetupError, "the ground-truth folder")

    @classmethod
    def platform(cls, root: Path) -> "Origin":
        return cls(Path(root), SetupError)

    def fail(self, message: str) -> NoReturn:
        raise self.error(message)

    @property
    def real_root(self) -> Path:
        return Path(os.path.realpath(self.root))

    # ---- paths ---------------------------------------------------------------------------

    def path(self, *parts: str, what: str) -> Path:
        """root/parts, the parts being names the submission (or predictions.json) gave: refused
        when absolute, with `..`, a NUL byte, a backslash, undecodable text or an over-long name,
        or when a link leads out of root. The path returned is the real one (links resolved)."""
        self.check_parts(*parts, what=what)
        return self._inside(self.real_root.joinpath(*parts), "/".join(parts), what)

    def check_parts(self, *parts: str, what: str) -> None:
        """Refuse names that are not plain relative paths (see `path`), touching no file."""
        for part in parts:
            self._check_part(part, what)

    def _check_part(self, part: object, what: str) -> None:
        if not isinstance(part, str) or not part:
            self.fail(f"{what}: a path is empty or not text.")
        if "\x00" in part:
            self.fail(f"{what}: the path {shown_path(part)} holds a NUL character.")
        try:
            encoded = part.encode("utf-8")
        except UnicodeEncodeError:
            self.fail(f"{what}: the path {shown_path(part)} is not valid text.")
        pure = Path(part)
        if pure.is_absolute() or "\\" in part or ".." in pure.parts:
            self.fail(f"{what}: the path {shown_path(part)} leaves {self.place}; only plain relative paths "
                      f"are allowed.")
        if len(encoded) > MAX_PATH_BYTES or any(len(p.encode("utf-8")) > MAX_NAME_BYTES for p in pure.parts):
            self.fail(f"{what}: the path {shown_path(part)} is longer than a file name may be "
                      f"({MAX_NAME_BYTES} bytes a name, {MAX_PATH_BYTES} in all).")

    def _inside(self, candidate: Path, shown_name: str, what: str) -> Path:
        real_root = self.real_root
        real = Path(os.path.realpath(candidate))
        if real != real_root and real_root not in real.parents:
            # Never the target's name: it is outside, and not the participant's to see.
            self.fail(f"{what}: {shown_path(shown_name)} is a link that leads out of {self.place}.")
        return real

    def contains(self, path: Path, what: str) -> Path:
        """A path found by listing a folder of this origin, checked to stay inside it."""
        try:
            relative = Path(path).relative_to(self.root).as_posix()
        except ValueError:
            relative = Path(path).name
        return self._inside(Path(path), relative, what)

    # ---- files ---------------------------------------------------------------------------

    def regular_file(self, path: Path, what: str, shown_name: str | None = None) -> os.stat_result:
        """The stat of `path` (already inside root), which must be a regular file: a folder, a
        named pipe (reading it would hang), a socket or a device is refused by name."""
        name = shown_name or Path(path).name
        try:
            info = os.stat(path)
        except FileNotFoundError:
            self.fail(f"{what}: the file {shown_path(name)} is missing.")
        except OSError as error:
            self.fail(f"{what}: {shown_path(name)} cannot be read ({error.strerror}).")
        if stat.S_ISDIR(info.st_mode):
            self.fail(f"{what}: {shown_path(name)} is a folder, not a file.")
        if not stat.S_ISREG(info.st_mode):
            self.fail(f"{what}: {shown_path(name)} is not a regular file.")
        return info

    def exists(self, path: Path) -> bool:
        """Whether anything is at `path`: a file, a folder, a pipe, even a link leading nowhere
        (a caller then reads it through `read_bytes` or `regular_file`, which refuse what is not a
        regular file inside root, by name)."""
        try:
            return os.path.lexists(path)
        except ValueError:  # a NUL in the name
            return False

    def is_file(self, path: Path) -> bool:
        """Whether `path` exists and is something other than a folder (a caller then reads it
        through `regular_file`, which names what is wrong with it)."""
        try:
            return not stat.S_ISDIR(os.stat(path).st_mode)
        except (OSError, ValueError):
            return False

    def read_bytes(self, path: Path, what: str, max_bytes: int, shown_name: str | None = None) -> bytes:
        """The content of a regular file inside root, refused unread when over `max_bytes`.
        Messages name the file as given, never a link's target."""
        name = shown_name or Path(path).name
        path = self.contains(path, what)
        info = self.regular_file(path, what, name)
        if info.st_size > max_bytes:
            self.fail(f"{what}: {shown_path(name)} has {size_text(info.st_size)}, more than the "
                      f"{size_text(max_bytes)} allowed.")
        try:
            with open(path, "rb") as handle:
                # read(n) reserves n bytes at once: ask for the file's size, not the bound
                data = handle.read(info.st_size + 1)
        except OSError as error:
            self.fail(f"{what}: {shown_path(name)} cannot be read ({error.strerror}).")
        if len(data) > info.st_size:  # grew while being read
            self.fail(f"{what}: {shown_path(name)} changed while being read.")
        return data

    def list_files(self, what: str = "Submission file") -> list[Path]:
        """Every regular file below root (an unpacked ZIP), in a stable order, skipping archive
        debris (__MACOSX, dot files); a link out of root, or anything but a file or a folder,
        is refused by name."""
        real_root = self.real_root
        found = []
        for directory, subdirs, files in os.walk(real_root):
            subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d != "__MACOSX")
            for name in sorted(files):
                if name.startswith("."):
                    continue
                path = Path(directory) / name
                relative = path.relative_to(real_root).as_posix()
                self._inside(path, relative, f"{what} {shown_path(relative)}")
                self.regular_file(path, f"{what} {shown_path(relative)}", shown_name=relative)
                found.append(path)  # the name the submission gave, not a link target's
            for name in subdirs:  # os.walk does not descend into links: check them as files are
                self._inside(Path(directory) / name, (Path(directory) / name).relative_to(real_root).as_posix(),
                             f"{what} {shown_path(name)}")
        return found


def shown_path(name: str, limit: int = 80) -> str:
    """A name from the submission, quoted for a one-line message: control characters escaped,
    long names shortened."""
    text = name.encode("unicode_escape", "backslashreplace").decode("ascii")
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def size_text(size: int) -> str:
    if size >= MEGABYTE:
        return f"{size / MEGABYTE:.1f} MiB"
    return f"{size} bytes"
