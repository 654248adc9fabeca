"""HDF5 files, read without following anything the file points at.

An HDF5 file can hold an external link (a name that opens another file), a virtual dataset
(pixels mapped from other files) or a dataset with external raw storage (its bytes in another
file). h5py follows all three on access, so a prediction could make us read the ground truth.
Here a dataset is reached only by a hard link at the top level of the file, its storage is
checked to be the file's own, and its shape and type are checked before a byte is read.

h5py's low-level interface (file, group and dataset identifiers) is used throughout: the same
library calls as its File and Dataset objects, without their per-object bookkeeping, which costs
more than reading a small mask.

No array read here holds a byte the file does not define. The library does not check that a
chunk unpacks to the chunk's size: one that inflates short leaves the rest of its buffer (heap
memory) in the array, one that inflates long is inflated whole (a few MiB can inflate to GiB),
and where nothing was written with no fill value it leaves the caller's buffer as it was. So
before the library reads a dataset, every stored chunk is checked (check_stored_data): on the
grid, a stored size an unfiltered chunk or a compressed one can have, filters whose output length
is known here (gzip, LZF, shuffle, fletcher32; others refused by name), each stream inflated one
at a time, never past its chunk, to exactly the chunk (an LZF stream is walked token by token
without being unpacked: lzf_unpacked_length); a chunk grid of at most 4 times the dataset (plus
1 MiB); a fill value for what was never written. The fast path (read_deflated_chunks)
checks the same of the chunks it inflates itself. Memory stays a small multiple of the shape.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from evaluation.reading.files import Origin, shown_path
from evaluation.reading.images import shape_text
from evaluation.reading.values import shown


@dataclass
class Hdf5File:
    origin: Origin
    handle: object  # h5py.h5g.GroupID: the file's root group, the file open read-only
    name: str
    what: str
    _names: tuple[str, ...] | None = field(default=None, repr=False)

    def names(self) -> list[str]:
        """The names at the top level of the file, sorted; listing follows no link. Listed once
        (the file is open read-only)."""
        if self._names is None:
            found: list[bytes] = []
            self.handle.links.iterate(found.append)
            # As h5py names them: UTF-8, else shown with the bytes escaped (no lookup uses them).
            self._names = tuple(sorted(name.decode("utf-8", "backslashreplace") for name in found))
        return list(self._names)

    def has(self, key: str) -> bool:
        """Whether the top level of the file has a link named `key` (not followed)."""
        if self._names is None:
            self.names()
        return key in self._names

    def names_text(self) -> str:
        return ", ".join(shown(n) if not n.isidentifier() else n for n in self.names()) or "none"

    def dataset(self, key: str, what: str) -> Hdf5Dataset:
        """The dataset `key` (top level), refused unless it is the file's own numeric data."""
        import h5py

        where = f"{what}: {key} in {self.name}"
        if not self.has(key):
            self.origin.fail(f"{what}: {self.name} has no dataset {key}.")
        name = key.encode("utf-8")
        # The link itself, looked at without following it (h5py's `key in file` would follow an
        # external link to see whether its target exists).
        link_type = self.handle.links.get_info(name).type
        if link_type != h5py.h5l.TYPE_HARD:
            kind = "an external link to another file" if link_type == h5py.h5l.TYPE_EXTERNAL else "a link"
            self.origin.fail(f"{where} is {kind}; datasets must be stored in the file itself.")
        handle = h5py.h5o.open(self.handle, name)  # a hard link: nothing to follow
        if not isinstance(handle, h5py.h5d.DatasetID):
            self.origin.fail(f"{where} is a group, not a dataset.")
        create = handle.get_create_plist()
        if create.get_layout() == h5py.h5d.VIRTUAL:
            self.origin.fail(f"{where} is a virtual dataset (mapped from other files); datasets must be stored "
                             f"in the file itself.")
        if create.get_external_count():
            self.origin.fail(f"{where} keeps its data in another file (external storage); datasets must be "
                             f"stored in the file itself.")
        dtype = handle.dtype
        if dtype.kind not in "biuf":
            kind = "text" if h5py.check_string_dtype(dtype) is not None else f"values of type {dtype}"
            self.origin.fail(f"{where} holds {kind}; numbers are expected.")
        space = handle.get_space()
        if space.get_simple_extent_type() == h5py.h5s.NULL:  # h5py.Empty: no shape, nothing to read
            self.origin.fail(f"{where} is an empty dataset (no dataspace); numbers are expected.")
        return Hdf5Dataset(self.origin, handle, where, tuple(int(n) for n in space.shape), dtype, create)


@dataclass
class Hdf5Dataset:
    origin: Origin
    handle: object  # h5py.h5d.DatasetID
    where: str
    shape: tuple[int, ...]
    dtype: np.dtype
    create: object  # its creation property list (layout, filters, chunk shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.float64))

    def read(self, expected_shape: tuple[int, ...] | None = None, max_size: int | None = None) -> np.ndarray:
        """The data, read only after its shape equals `expected_shape` (or its size is at most
        `max_size`), straight into the array returned."""
        if expected_shape is not None and self.shape != tuple(expected_shape):
            self.origin.fail(f"{self.where}: shape {shape_text(self.shape)}, expected {shape_text(expected_shape)} "
                             f"as in the ground truth.")
        if max_size is not None and self.size > max_size:
            most = "one value" if max_size == 1 else f"at most {max_size} values"
            self.origin.fail(f"{self.where} must hold {most}, "
                             f"found {self.size} (shape {shape_text(self.shape)}).")
        import h5py

        out = np.empty(self.shape, self.dtype)
        if out.size == 0:  # no selection to read
            return out
        try:
            if read_deflated_chunks(self.handle, self.create, out):
                return out
            # The library's reader, only once every byte it will place is known to be the file's: a
            # chunk it inflates to fewer bytes than the chunk holds leaves the rest of its buffer
            # (heap memory) in the array, and it inflates a stream whatever its length.
            check_stored_data(self.handle, self.create, self.shape)
            out = np.zeros(self.shape, self.dtype)  # the fast path may have written part of it
            self.handle.read(h5py.h5s.ALL, h5py.h5s.ALL, out)
            return out
        except ChunkProblem as problem:
            self.origin.fail(f"{self.where} {problem}.")
        except (OSError, TypeError, ValueError, KeyError):
            self.origin.fail(f"{self.where} cannot be read (its data is corrupt or uses an unknown filter).")


_FILE_ACCESS = None  # the access property list of every file opened, made once per process


def _file_access():
    """Read-only access as h5py.File(path, "r", locking=False) sets it (the library refuses to
    open a file twice with different settings)."""
    global _FILE_ACCESS
    if _FILE_ACCESS is None:
        import h5py

        access = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
        access.set_file_locking(False, ignore_when_disabled=False)
        _FILE_ACCESS = access
    return _FILE_ACCESS


@contextmanager
def open_hdf5(origin: Origin, path: Path, what: str) -> Iterator[Hdf5File]:
    """An HDF5 file inside `origin`, open for reading its own datasets."""
    import h5py

    given = Path(path).name  # messages name the file as given, not a link's target
    path = origin.contains(path, what)
    origin.regular_file(path, what, given)
    name = shown_path(given)
    try:
        handle = h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY, fapl=_file_access())
    except (OSError, ValueError):
        origin.fail(f"{what}: {name} is not a readable HDF5 file.")
    try:
        root = h5py.h5g.open(handle, b"/")
        try:
            yield Hdf5File(origin, root, name, what)
        finally:
            root.close()
    finally:
        handle.close()  # the file itself closes once the datasets opened in it are released
# Chunks smaller than this are left to the library: a Python call per chunk would cost more than
# the chunks it saves inflating.
MIN_CHUNK_BYTES = 4096
# Inflated chunks kept from dataset to dataset (a mask's all-background chunks recur in every
# file, as the same bytes): at most this many bytes, the store emptied when full.
INFLATED_BYTES = 2 << 20
_INFLATED: dict[tuple, np.ndarray] = {}  # (stored bytes, chunk shape, type) -> read-only pixels
_INFLATED_CHUNK_BYTES = [0]  # the largest chunk kept: the store holds at most len(_INFLATED) of them

# The chunk grid may hold at most this many bytes: 4 times the dataset (the last row and column of
# chunks reach past the extent, so a grid of chunks as large as the dataset holds up to 4 times it),
# plus this much for chunks that are larger than a small dataset (h5py's automatic chunks are up to
# 1 MiB). The library inflates and keeps a whole chunk to read a pixel of it.
GRID_SLACK_BYTES = 1 << 20


class ChunkProblem(Exception):
    """A dataset whose stored chunks cannot be read into what it declares (the message follows
    the dataset's name: "is corrupt: ...")."""


# Filters whose output length is known without the library: inflating (checked to give exactly
# the chunk), LZF (h5py's filter, its stream walked to the length it unpacks to), shuffling (same
# length) and fletcher32 (a 4-byte checksum, which the library checks).
_DEFLATE, _SHUFFLE, _FLETCHER32, _LZF = 1, 2, 3, 32000
_READ = (_DEFLATE, _SHUFFLE, _FLETCHER32, _LZF)
_FILTER_NAMES = {_DEFLATE: "gzip (deflate)", _SHUFFLE: "shuffle", _FLETCHER32: "fletcher32", 4: "szip", 5: "n-bit",
                 6: "scale-offset", 32000: "LZF"}


def _at(offset) -> str:
    return "(" + ", ".join(str(int(n)) for n in offset) + ")"


def _bytes(n: int) -> str:
    return "1 byte" if n == 1 else f"{n} bytes"


def _grid(create, shape: tuple[int, ...], itemsize: int) -> tuple[tuple[int, ...], int, int]:
    """(chunk shape, bytes per chunk, chunks in the grid), refused when the grid holds far more
    than the dataset."""
    chunk = tuple(int(n) for n in create.get_chunk())
    chunk_bytes = int(np.prod(chunk, dtype=np.float64)) * itemsize
    count = int(np.prod([-(-n // c) for n, c in zip(shape, chunk, strict=True)], dtype=np.float64))
    dataset_bytes = int(np.prod(shape, dtype=np.float64)) * itemsize
    if len(chunk) != len(shape) or count * chunk_bytes > 4 * dataset_bytes + GRID_SLACK_BYTES:
        raise ChunkProblem(f"is stored in chunks of {shape_text(chunk)} values, far more than its shape "
                           f"{shape_text(shape)} needs; write it in smaller chunks (or unchunked)")
    return chunk, chunk_bytes, count


def _applied_filters(create, filter_mask: int) -> list[int]:
    """The filters applied to a chunk (its filter mask marks those skipped), in the order written."""
    codes = [create.get_filter(i)[0] for i in range(create.get_nfilters())]
    return [code for i, code in enumerate(codes) if not filter_mask & (1 << i)]


def _check_stored(info, chunk: tuple[int, ...], chunk_bytes: int, shape: tuple[int, ...], applied: list[int]) -> None:
    """A stored chunk's place and stored size, before its bytes are read: on the grid, inside the
    extent, unfiltered exactly the chunk, filtered at most what the chunk compresses to at worst."""
    offset = tuple(int(n) for n in info.chunk_offset)
    if len(offset) != len(shape) or any(o < 0 or o >= n or o % c for o, n, c in zip(offset, shape, chunk, strict=True)):
        raise ChunkProblem(f"is corrupt: it stores a chunk at {_at(offset)}, outside its shape {shape_text(shape)} or "
                           f"off its grid of {shape_text(chunk)} chunks")
    unknown = [code for code in applied if code not in _READ]
    if unknown:
        name = _FILTER_NAMES.get(unknown[0], f"filter {unknown[0]}")
        raise ChunkProblem(f"is compressed with the {name} filter, which is not read here; write it with gzip "
                           f"or LZF compression (with or without shuffle and fletcher32) or uncompressed")
    compressors = [code for code in applied if code in (_DEFLATE, _LZF)]
    if len(compressors) > 1:  # the first one's stream has a length only the second one's output tells
        names = ", then ".join("LZF" if code == _LZF else "gzip" for code in compressors)
        raise ChunkProblem(f"is compressed twice ({names}), which is not read here; write it with one compression")
    size = int(info.size)
    if not applied and size != chunk_bytes:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} stores {_bytes(size)}"
                           f"{' of its' if size < chunk_bytes else ', not its'} {chunk_bytes}")
    # Deflate's worst case is zlib's compressBound (n + n/1000 + 12 in the library's filter), fletcher32 adds 4.
    if applied and size > chunk_bytes + (chunk_bytes >> 6) + 1024:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} stores {_bytes(size)}, more than any compression "
                           f"of its {chunk_bytes} bytes takes")


def inflate_exactly(data: bytes, size: int, offset) -> bytes:
    """The one zlib stream at the start of `data`, which must inflate to exactly `size` bytes
    (bytes after the stream are ignored, as the library ignores them); never inflated past
    `size` + 1 bytes."""
    import zlib

    stream = zlib.decompressobj()
    try:
        raw = stream.decompress(data, size)
        more = b"" if stream.eof else stream.decompress(stream.unconsumed_tail, 1)
    except zlib.error:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} is not a valid gzip (deflate) stream") from None
    if more:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} inflates to more than its {size} bytes")
    if len(raw) != size or not stream.eof:
        cut = "" if stream.eof else " (the stream is cut short)"
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} inflates to {_bytes(len(raw))} of its {size}{cut}")
    return raw


def lzf_unpacked_length(data: bytes, limit: int) -> int:
    """The number of bytes the LZF stream `data` unpacks to (liblzf's format, as h5py's filter
    writes it), found by walking its tokens without unpacking them; `limit` + 1 as soon as the
    output would pass `limit`, so the work is at most one step per stored byte. Raises
    ValueError, naming the fault, for a stream that ends inside a token or a back-reference to
    before the start of the output (liblzf refuses both; it would read past its input otherwise).

    A control byte below 32 is a literal run of itself + 1 bytes; any other is a back-reference
    of length (control >> 5) + 2 (a length of 7 adds the next byte to it) at a distance of
    ((control & 31) << 8 | the byte after) + 1 bytes back into the output."""
    end, at, out = len(data), 0, 0
    while at < end:
        control = data[at]
        if control < 32:  # literal run
            out += control + 1
            at += control + 2
            if out > limit:
                return limit + 1
            if at > end:
                raise ValueError("its last literal run is cut short")
            continue
        if control < 224:  # back-reference of 3 to 8 bytes: control, offset
            if at + 1 >= end:
                raise ValueError("its last back-reference is cut short")
            length = (control >> 5) + 2
            back = (control & 31) << 8 | data[at + 1]  # the distance, less 1
            at += 2
        else:  # back-reference of 9 to 264 bytes: control, extra length, offset
            if at + 2 >= end:
                raise ValueError("its last back-reference is cut short")
            length = data[at + 1] + 9
            back = (control & 31) << 8 | data[at + 2]
            at += 3
        if out + length > limit:
            return limit + 1
        if back >= out:
            raise ValueError(f"a back-reference points {_bytes(back + 1 - out)} before its start")
        out += length
    return out


def unpack_lzf_length(data: bytes, size: int, offset) -> int:
    """The length an LZF chunk unpacks to, which must be exactly `size` (never walked past it)."""
    try:
        length = lzf_unpacked_length(data, size)
    except ValueError as fault:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} is not a valid LZF stream ({fault})") from None
    if length > size:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} inflates to more than its {size} bytes")
    if length < size:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} inflates to {_bytes(length)} of its {size}")
    return length


def _unfilter_length(data: bytes, applied: list[int], chunk_bytes: int, offset) -> None:
    """Undoes the filters of a chunk as far as lengths go (the library runs them last written
    first): each inflation must give exactly what the filters read after it expect, ending with
    the chunk's bytes. An LZF stream is only walked: its length is known after it, not its bytes
    (_check_stored refuses a second compression)."""
    length = len(data)
    for at in range(len(applied) - 1, -1, -1):
        code = applied[at]
        if code == _FLETCHER32:
            if length < 4:
                raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} stores {_bytes(length)}, fewer than "
                                   f"its checksum takes")
            length -= 4  # the library compares the checksum
            data = data[:-4] if data is not None else None
        elif code == _DEFLATE:
            data = inflate_exactly(data, chunk_bytes + 4 * applied[:at].count(_FLETCHER32), offset)
            length = len(data)
        elif code == _LZF:
            length = unpack_lzf_length(data, chunk_bytes + 4 * applied[:at].count(_FLETCHER32), offset)
            data = None
    if length != chunk_bytes:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} unpacks to {_bytes(length)} of its {chunk_bytes}")


def _check_lzf_buffer(create, chunk_bytes: int) -> None:
    """h5py's LZF filter unpacks each chunk into a buffer of the size its third parameter gives
    (h5py writes the chunk's size there), growing it by the stored size while too small: a
    larger one is refused, as memory the library would take per chunk that no chunk needs."""
    for i in range(create.get_nfilters()):
        code, _, values, _ = create.get_filter(i)
        if code == _LZF and len(values) >= 3 and values[2] > chunk_bytes + 4 * _fletchers_before(create, i):
            raise ChunkProblem(f"is corrupt: its LZF filter unpacks each chunk into {_bytes(int(values[2]))}, more "
                               f"than its {chunk_bytes}")


def _fletchers_before(create, index: int) -> int:
    return sum(create.get_filter(i)[0] == _FLETCHER32 for i in range(index))


# Stored chunks found to unpack to exactly their chunk, kept from dataset to dataset (a mask's
# all-background chunk is the same bytes in every file): (stored bytes, filters applied, chunk
# bytes), at most this many stored bytes, the store emptied when full.
CHECKED_BYTES = 1 << 20
_CHECKED: set[tuple[bytes, tuple[int, ...], int]] = set()
_CHECKED_SIZE = [0]


def _remember_checked(key: tuple[bytes, tuple[int, ...], int]) -> None:
    if _CHECKED_SIZE[0] + len(key[0]) > CHECKED_BYTES:
        _CHECKED.clear()
        _CHECKED_SIZE[0] = 0
    if len(key[0]) <= CHECKED_BYTES:
        _CHECKED.add(key)
        _CHECKED_SIZE[0] += len(key[0])


def check_stored_data(dataset_id, create, shape: tuple[int, ...]) -> None:
    """Raises ChunkProblem unless the library's read of the dataset fills every element from the
    file: each stored chunk unpacks to exactly the chunk (inflated one at a time, never past the
    chunk), and any part never written has a fill value the library writes."""
    import h5py

    layout = create.get_layout()
    itemsize = dataset_id.get_type().get_size()
    complete = True
    if layout == h5py.h5d.CHUNKED:
        chunk, chunk_bytes, count = _grid(create, shape, itemsize)
        stored = []
        dataset_id.chunk_iter(stored.append)
        if len(stored) > count:
            raise ChunkProblem(f"is corrupt: it stores {len(stored)} chunks; its grid has {count}")
        _check_lzf_buffer(create, chunk_bytes)
        applied_of = {mask: tuple(_applied_filters(create, mask)) for mask in {info.filter_mask for info in stored}}
        for info in stored:
            _check_stored(info, chunk, chunk_bytes, shape, list(applied_of[info.filter_mask]))
        filtered = [info for info in stored if applied_of[info.filter_mask]]
        limit = 2 * int(np.prod(shape, dtype=np.float64)) * itemsize + (1 << 20)
        for info, data in zip(filtered, _stored_chunks(dataset_id, filtered, limit) if filtered else (), strict=True):
            applied = applied_of[info.filter_mask]
            key = (data, applied, chunk_bytes)
            if key not in _CHECKED:
                _unfilter_length(data, list(applied), chunk_bytes, info.chunk_offset)
                _remember_checked(key)
        complete = len({tuple(info.chunk_offset) for info in stored}) == count
    elif layout == h5py.h5d.CONTIGUOUS:
        complete = dataset_id.get_storage_size() >= int(np.prod(shape, dtype=np.float64)) * itemsize
    if not complete and (create.get_fill_time() == h5py.h5d.FILL_TIME_NEVER
                         or create.fill_value_defined() == h5py.h5d.FILL_VALUE_UNDEFINED):
        raise ChunkProblem("is incomplete: part of it was never written and it has no fill value to read there")


def read_deflated_chunks(dataset_id, create, out: np.ndarray) -> bool:
    """Fills `out` (a new C-contiguous 2D array of the dataset's shape and type) from a chunked
    2D dataset whose only filter is deflate, inflating each distinct stored chunk once: a mask's
    background chunks are stored as the same bytes, and the same bytes inflate to the same
    pixels. The bytes are those the library reads (the chunk index's offsets in the file it has
    open: the file's own storage, the caller having refused external storage and virtual
    datasets), each chunk inflated to at most its size and one byte.

    Raises ChunkProblem for a chunk that does not inflate to exactly its size (the library would
    leave heap memory in the array, or inflate a bomb whole). False, `out` then partly written,
    for anything else: another layout, shape or filter, a type that is not stored as numpy lays
    it out, a chunk not stored (fill value) or not filtered. The library's reader then reads the
    dataset, after check_stored_data, so what this returns is always what it would."""
    import h5py

    try:
        if out.ndim != 2 or create.get_layout() != h5py.h5d.CHUNKED or create.get_nfilters() != 1 \
                or create.get_filter(0)[0] != h5py.h5z.FILTER_DEFLATE:
            return False
        if out.dtype.kind not in "iuf" or not dataset_id.get_type().equal(h5py.h5t.py_create(out.dtype)):
            return False
        (rows, columns), (n_rows, n_columns) = create.get_chunk(), out.shape
        # Chunks inside the extent (so a chunk holds at most the dataset's bytes), large enough
        # to be worth a call each.
        chunk_bytes = rows * columns * out.dtype.itemsize
        if len(create.get_chunk()) != 2 or rows > n_rows or columns > n_columns or chunk_bytes < MIN_CHUNK_BYTES:
            return False
        stored = []
        dataset_id.chunk_iter(stored.append)
        offsets = [info.chunk_offset for info in stored]
        corners = np.array(offsets, dtype=np.int64).reshape(-1, 2)
        # As many distinct chunks as the grid has, all on it: the whole grid. (A chunk never
        # written reads as the fill value; one stored unfiltered skips the filter.)
        if len(offsets) != -(-n_rows // rows) * -(-n_columns // columns) or len(set(offsets)) != len(offsets) \
                or any(info.filter_mask for info in stored) or (corners % (rows, columns)).any() \
                or (corners < 0).any() or (corners >= (n_rows, n_columns)).any():
            return False
        largest = max(stored, key=lambda info: info.size)  # stored sizes, before any is read (on the grid: above)
        _check_stored(largest, (rows, columns), chunk_bytes, out.shape, [_DEFLATE])
        if (len(_INFLATED) + len(stored)) * max(chunk_bytes, _INFLATED_CHUNK_BYTES[0]) > INFLATED_BYTES:
            _INFLATED.clear()
            _INFLATED_CHUNK_BYTES[0] = 0
        _INFLATED_CHUNK_BYTES[0] = max(chunk_bytes, _INFLATED_CHUNK_BYTES[0])
        kind = (rows, columns, out.dtype.str)
        for info, data in zip(stored, _stored_chunks(dataset_id, stored, 2 * out.nbytes + (1 << 20)), strict=True):
            key = (data, kind)
            pixels = _INFLATED.get(key)
            if pixels is None:
                raw = inflate_exactly(data, chunk_bytes, info.chunk_offset)
                pixels = _INFLATED[key] = np.frombuffer(raw, out.dtype).reshape(rows, columns)
            row, column = info.chunk_offset
            # The last row and column of chunks reach past the extent: their pixels there are cut.
            out[row:row + rows, column:column + columns] = pixels[:n_rows - row, :n_columns - column]
        return True
    except (OSError, TypeError, ValueError, KeyError, AttributeError):  # zlib's: ChunkProblem (inflate_exactly)
        return False


def _stored_chunks(dataset_id, stored: list, limit: int) -> list[bytes]:
    """The stored bytes of each chunk: one read of the span they lie in, from the file the
    library has open, when the span is at most `limit` bytes and the first chunk's bytes there
    are what the library reads for it (its offsets are where it reads); else a library read per
    chunk."""
    import h5py

    start = min(info.byte_offset for info in stored)
    end = max(info.byte_offset + info.size for info in stored)
    first = stored[0]
    expected = dataset_id.read_direct_chunk(first.chunk_offset)[1]
    if end - start <= limit:
        span = os.pread(h5py.h5i.get_file_id(dataset_id).get_vfd_handle(), end - start, start)
        at = first.byte_offset - start
        if len(span) == end - start and span[at:at + first.size] == expected:
            return [span[info.byte_offset - start:info.byte_offset - start + info.size] for info in stored]
    return [dataset_id.read_direct_chunk(info.chunk_offset)[1] for info in stored]
