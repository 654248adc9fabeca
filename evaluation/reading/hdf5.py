"""HDF5 files, read without following anything the file points at.

An HDF5 file can hold an external link (a name that opens another file), a virtual dataset
(pixels mapped from other files) or a dataset with external raw storage (its bytes in another
file). h5py follows all three on access, so a prediction could make us read the ground truth.
Here a dataset is reached only by a hard link at the top level of the file, its storage is
checked to be the file's own, and its shape and type are checked before a byte is read.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from evaluation.reading.files import Origin, shown_path
from evaluation.reading.images import shape_text
from evaluation.reading.values import shown


@dataclass
class Hdf5File:
    origin: Origin
    handle: object  # h5py.File
    name: str
    what: str

    def names(self) -> list[str]:
        """The names at the top level of the file, sorted; listing follows no link."""
        return sorted(self.handle.keys())

    def names_text(self) -> str:
        return ", ".join(shown(n) if not n.isidentifier() else n for n in self.names()) or "none"

    def dataset(self, key: str, what: str) -> "Hdf5Dataset":
        """The dataset `key` (top level), refused unless it is the file's own numeric data."""
        import h5py

        where = f"{what}: {key} in {self.name}"
        link = self.handle.get(key, getlink=True)
        if link is None:
            self.origin.fail(f"{what}: {self.name} has no dataset {key}.")
        if not isinstance(link, h5py.HardLink):
            kind = "an external link to another file" if isinstance(link, h5py.ExternalLink) else "a link"
            self.origin.fail(f"{where} is {kind}; datasets must be stored in the file itself.")
        dataset = self.handle[key]
        if not isinstance(dataset, h5py.Dataset):
            self.origin.fail(f"{where} is a group, not a dataset.")
        if dataset.is_virtual:
            self.origin.fail(f"{where} is a virtual dataset (mapped from other files); datasets must be stored "
                             f"in the file itself.")
        if dataset.external:
            self.origin.fail(f"{where} keeps its data in another file (external storage); datasets must be "
                             f"stored in the file itself.")
        if dataset.dtype.kind not in "biuf":
            kind = "text" if h5py.check_string_dtype(dataset.dtype) is not None else f"values of type {dataset.dtype}"
            self.origin.fail(f"{where} holds {kind}; numbers are expected.")
        if dataset.shape is None:  # a null dataspace (h5py.Empty): no shape, nothing to read
            self.origin.fail(f"{where} is an empty dataset (no dataspace); numbers are expected.")
        return Hdf5Dataset(self.origin, dataset, where)


@dataclass
class Hdf5Dataset:
    origin: Origin
    dataset: object  # h5py.Dataset
    where: str

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.dataset.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.float64))

    def read(self, expected_shape: tuple[int, ...] | None = None, max_size: int | None = None) -> np.ndarray:
        """The data, read only after its shape equals `expected_shape` (or its size is at most
        `max_size`)."""
        if expected_shape is not None and self.shape != tuple(expected_shape):
            self.origin.fail(f"{self.where}: shape {shape_text(self.shape)}, expected {shape_text(expected_shape)} "
                             f"as in the ground truth.")
        if max_size is not None and self.size > max_size:
            self.origin.fail(f"{self.where} must hold {'one value' if max_size == 1 else f'at most {max_size} values'}, "
                             f"found {self.size} (shape {shape_text(self.shape)}).")
        try:
            return np.asarray(self.dataset[()])
        except (OSError, TypeError, ValueError, KeyError):
            self.origin.fail(f"{self.where} cannot be read (its data is corrupt or uses an unknown filter).")


@contextmanager
def open_hdf5(origin: Origin, path: Path, what: str) -> Iterator[Hdf5File]:
    """An HDF5 file inside `origin`, open for reading its own datasets."""
    import h5py

    given = Path(path).name  # messages name the file as given, not a link's target
    path = origin.contains(path, what)
    origin.regular_file(path, what, given)
    name = shown_path(given)
    try:
        handle = h5py.File(path, "r", locking=False)
    except (OSError, ValueError):
        origin.fail(f"{what}: {name} is not a readable HDF5 file.")
    with handle:
        yield Hdf5File(origin, handle, name, what)
