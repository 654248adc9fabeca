"""Where a file comes from, and reading it only if it is a regular file inside that place."""

from __future__ import annotations

import errno
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from evaluation.errors import EvaluationError, SetupError, SubmissionError, machine_limit

# Linux limits a path component to 255 bytes and a path to 4096: a longer name in a submission
# (or in predictions.json) would make the operating system raise, so it is refused first.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096
MEGABYTE = 1 << 20

# Opening without following a link: each folder on the way (O_PATH: searching it is enough, as
# for a path), then the file (O_NONBLOCK: a named pipe put there since its lstat cannot hang us).
_FOLDER_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# root as given -> (st_dev, st_ino, its realpath): a submission reads hundreds of files from one
# root. Valid while the root still is the same folder (checked by one stat at every use).
_REAL_ROOTS: dict[str, tuple[int, int, str]] = {}
_REAL_ROOTS_KEPT = 64


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
    def submission(cls, root: Path) -> Origin:
        return cls(_as_path(root), SubmissionError)

    @classmethod
    def ground_truth(cls, root: Path) -> Origin:
        return cls(_as_path(root), SetupError, "the ground-truth folder")

    @classmethod
    def platform(cls, root: Path) -> Origin:
        return cls(_as_path(root), SetupError)

    def fail(self, message: str) -> NoReturn:
        handled = sys.exc_info()[1]  # the error this refusal was made from, when there is one
        if handled is not None and machine_limit(handled):
            raise handled  # too many open files, no memory: the machine's limit, never this file's fault
        raise self.error(message)

    @property
    def real_root(self) -> Path:
        return Path(self._real_root_text())

    def _real_root_text(self) -> str:
        """realpath(root), remembered while root is the same folder (same device and inode)."""
        key = os.fspath(self.root)
        try:
            info = os.stat(key)
        except (OSError, ValueError):
            return os.path.realpath(key)
        known = _REAL_ROOTS.get(key)
        if known is not None and known[0] == info.st_dev and known[1] == info.st_ino:
            return known[2]
        real = os.path.realpath(key)
        if len(_REAL_ROOTS) >= _REAL_ROOTS_KEPT:
            _REAL_ROOTS.clear()
        _REAL_ROOTS[key] = (info.st_dev, info.st_ino, real)
        return real

    # ---- paths ---------------------------------------------------------------------------

    def path(self, *parts: str, what: str) -> Path:
        """root/parts, the parts being names the submission (or predictions.json) gave: refused
        when absolute, with `..`, a NUL byte, a backslash, undecodable text or an over-long name,
        or when a link leads out of root. The path returned is the real one (links resolved)."""
        self.check_parts(*parts, what=what)
        real_root = self._real_root_text()
        names = [name for part in parts for name in part.split("/") if name and name != "."]
        if not _any_link(real_root, names):  # then the path as joined is the real one
            return Path(_joined(real_root, names))
        return self._inside(Path(real_root).joinpath(*parts), "/".join(parts), what)

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
        names = part.split("/")  # a POSIX path's names (pathlib's parts, less "" and ".")
        if part.startswith("/") or "\\" in part or ".." in names:
            self.fail(f"{what}: the path {shown_path(part)} leaves {self.place}; only plain relative paths "
                      f"are allowed.")
        if len(encoded) > MAX_PATH_BYTES or (len(encoded) > MAX_NAME_BYTES and
                                             any(len(n.encode("utf-8")) > MAX_NAME_BYTES for n in names)):
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
        real_root = self._real_root_text()
        names = self._names_below_root(path, real_root)
        if names is not None and not _any_link(real_root, names):
            return Path(_joined(real_root, names))
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
        Messages name the file as given, never a link's target.

        The file is opened from root's folder one name at a time, following no link (openat with
        O_NOFOLLOW), so what is read is what was checked even if the folders change meanwhile. A
        path with a link on the way (or nothing readable at its end) is first checked by `contains`
        and `regular_file`, which word each refusal, and its real path is then opened the same way."""
        real_root = self._real_root_text()
        names = self._names_below_root(path, real_root)
        opened = _open_regular_file(real_root, names) if names else None
        if opened is None:
            name = shown_name or Path(path).name
            real = self.contains(path, what)
            self.regular_file(real, what, name)
            real_names = self._names_below_root(real, real_root)
            try:
                opened = _open_regular_file(real_root, real_names, opening_errors=True) if real_names else None
            except OSError as error:
                self.fail(f"{what}: {shown_path(name)} cannot be read ({error.strerror}).")
            if opened is None:  # a link or a folder put on the way since the checks
                self.fail(f"{what}: {shown_path(name)} changed while being read.")
        descriptor, size = opened
        try:
            if size > max_bytes:
                name = shown_name or Path(path).name
                self.fail(f"{what}: {shown_path(name)} has {size_text(size)}, more than the "
                          f"{size_text(max_bytes)} allowed.")
            try:
                # read(n) reserves n bytes at once: ask for the file's size, not the bound
                data = _read_at_most(descriptor, size + 1)
            except OSError as error:
                self.fail(f"{what}: {shown_path(shown_name or Path(path).name)} cannot be read ({error.strerror}).")
        finally:
            os.close(descriptor)
        if len(data) > size:  # grew while being read
            self.fail(f"{what}: {shown_path(shown_name or Path(path).name)} changed while being read.")
        return data

    def _names_below_root(self, path: Path, real_root: str) -> list[str] | None:
        """The names leading from root to `path` as written (below the real root or the root as
        given), or None when `path` is not written below root, or is root, or has `..`."""
        text = os.fspath(path)
        for base in (real_root, os.fspath(self.root)):
            prefix = base.rstrip("/") + "/"
            if text.startswith(prefix):
                names = [name for name in text[len(prefix):].split("/") if name and name != "."]
                if names and ".." not in names:
                    return names
        return None

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
                # os.walk enters no link, so a regular file that is not a link is inside root
                if not _is_plain(path, stat.S_ISREG):
                    relative = path.relative_to(real_root).as_posix()
                    self._inside(path, relative, f"{what} {shown_path(relative)}")
                    self.regular_file(path, f"{what} {shown_path(relative)}", shown_name=relative)
                found.append(path)  # the name the submission gave, not a link target's
            for name in subdirs:  # os.walk does not descend into links: check them as files are
                if not _is_plain(os.path.join(directory, name), stat.S_ISDIR):
                    self._inside(Path(directory) / name, (Path(directory) / name).relative_to(real_root).as_posix(),
                                 f"{what} {shown_path(name)}")
        return found


def _as_path(root: Path | str) -> Path:
    return root if isinstance(root, Path) else Path(root)  # a Path is immutable: no copy needed


def _joined(real_root: str, names: list[str]) -> str:
    return real_root.rstrip("/") + "/" + "/".join(names) if names else real_root


def _is_plain(path: Path | str, kind) -> bool:
    """Whether `path` itself (not a link) is of `kind` (stat.S_ISREG, stat.S_ISDIR)."""
    try:
        return kind(os.lstat(path).st_mode)
    except OSError:
        return False


def _any_link(real_root: str, names: list[str]) -> bool:
    """Whether a name on the way from real_root (no link in it) is a link: if none is, the path
    joined is its own realpath (what is missing is joined as written, as realpath does)."""
    current = real_root.rstrip("/")
    for name in names:
        current = f"{current}/{name}"
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return True
        except OSError:
            continue
    return False


def _raise_machine_limit(error: Exception) -> None:
    """Raises `error` when it is the machine's limit (too many open files): not a sign that the
    file is missing or a link, which the caller takes None for."""
    if machine_limit(error):
        raise error


def _open_regular_file(real_root: str, names: list[str], opening_errors: bool = False) -> tuple[int, int] | None:
    """(descriptor, size) of the regular file real_root/names, reached without following a link:
    each folder opened in the one before with O_NOFOLLOW, the file checked by lstat before it is
    opened (no device is ever opened) and by fstat after. None when anything on the way is a link,
    missing, or not a folder, or the file is not a regular file; an error opening the file itself
    (permissions) is raised when `opening_errors`, else None too."""
    try:
        folder = os.open(real_root, _FOLDER_FLAGS)
    except (OSError, ValueError) as error:
        _raise_machine_limit(error)
        return None
    try:
        for name in names[:-1]:
            try:
                inner = os.open(name, _FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=folder)
            except (OSError, ValueError) as error:
                _raise_machine_limit(error)
                return None
            os.close(folder)
            folder = inner
        try:
            seen = os.stat(names[-1], dir_fd=folder, follow_symlinks=False)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(seen.st_mode):
            return None
        try:
            descriptor = os.open(names[-1], _FILE_FLAGS, dir_fd=folder)
        except OSError as error:
            _raise_machine_limit(error)
            if opening_errors and error.errno not in (errno.ELOOP, errno.ENOENT):
                raise
            return None
    finally:
        os.close(folder)
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(descriptor)
        return None
    return descriptor, info.st_size


def _read_at_most(descriptor: int, limit: int) -> bytes:
    """Up to `limit` bytes: until then or the end of the file."""
    chunks = []
    while limit > 0:
        chunk = os.read(descriptor, limit)
        if not chunk:
            break
        chunks.append(chunk)
        limit -= len(chunk)
    return b"".join(chunks)


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
