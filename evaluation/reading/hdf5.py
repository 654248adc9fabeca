"""HDF5 files, read without following anything the file points at.

An HDF5 file can hold an external link (a name that opens another file), a virtual dataset
(pixels mapped from other files) or a dataset with external raw storage (its bytes in another
file). h5py follows all three on access, so a prediction could make us read the ground truth.
Here a dataset is reached only by a hard link at the top level of the file, its storage is
checked to be the file's own, and its shape and type are checked before a byte is read.

h5py's low-level interface (file, group and dataset identifiers) is used throughout: the same
library calls as its File and Dataset objects, without their per-object bookkeeping, which costs
more than reading a small mask.

No array read here holds a byte the file does not define, and every file h5py's reading (the
official one: `h5py.File(path)[name][()]`) reads is read as it reads it. The library trusts each
filter's output: a chunk its filters unpack to fewer bytes than the chunk holds leaves the rest
of its buffer (heap memory) in the array, n-bit and scale-offset read as many packed bits as
their parameters say whatever the chunk's length, a stream unpacking long is unpacked whole (a
few MiB can inflate to GiB) and its first chunk's worth kept; where nothing was written and
there is no fill value, it leaves the caller's buffer as it was. So before the library reads a
dataset, every stored chunk is checked (check_stored_data), at the place the library reads it
from (a dataset that can grow is looked up place by place: HDF5's listing of an extensible-array
index gives other places): on the grid, a stored size an unfiltered chunk or a compressed one
can have, and its filters run as the library runs them, last written first (unpacked_length):
gzip inflated, szip decoded (imagecodecs' libaec), LZF walked token by token (unpacked only when
another filter reads its bytes), shuffle undone, fletcher32's 4 bytes off, n-bit and scale-offset
packed bits counted, each step reading only bytes the one before gave and never unpacking past
twice the chunk (plus 64 KiB), the result at least the chunk; a chunk grid of at most 4 times the
dataset (plus 1 MiB). A dataset not wholly stored is read twice by the library, into buffers of
different bytes (read_with_library): equal, every byte was written (the fill value); else refused.
The fast path (read_deflated_chunks) checks the same of the chunks it inflates itself. Memory
stays a small multiple of the shape.
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
        shape = tuple(int(n) for n in space.shape)
        return Hdf5Dataset(self.origin, handle, where, shape, dtype, create, _can_grow(handle))


@dataclass
class Hdf5Dataset:
    origin: Origin
    handle: object  # h5py.h5d.DatasetID
    where: str
    shape: tuple[int, ...]
    dtype: np.dtype
    create: object  # its creation property list (layout, filters, chunk shape)
    can_grow: bool  # a maximum shape beyond its shape (see _can_grow)

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
        out = np.empty(self.shape, self.dtype)
        if out.size == 0:  # no selection to read
            return out
        try:
            if read_deflated_chunks(self.handle, self.create, out, self.can_grow):
                return out
            # The library's reader, only once every byte it will place is known to be the file's: a
            # chunk its filters unpack to fewer bytes than the chunk holds leaves the rest of its
            # buffer (heap memory) in the array, and it unpacks a stream whatever its length.
            complete = check_stored_data(self.handle, self.create, self.shape, self.can_grow)
            return read_with_library(self.handle, self.shape, self.dtype, complete)
        except ChunkProblem as problem:
            self.origin.fail(f"{self.where} {problem}.")
        except (OSError, RuntimeError, TypeError, ValueError, KeyError):  # RuntimeError: h5py's for a broken index
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
# 1 MiB). The library unpacks and keeps a whole chunk to read a pixel of it.
GRID_SLACK_BYTES = 1 << 20


def unpack_limit(chunk_bytes: int) -> int:
    """The most any filter may make of a chunk: twice the chunk plus 64 KiB. The library keeps
    the first chunk's worth of a longer result (so such a chunk is read as it reads it), but
    unpacks it whole first: far longer is a bomb."""
    return 2 * chunk_bytes + (64 << 10)


class ChunkProblem(Exception):
    """A dataset whose stored chunks cannot be read into what it declares (the message follows
    the dataset's name: "is corrupt: ...")."""


# The filters read here: HDF5's own and h5py's LZF. Each one's output length is known before the
# library runs it: inflating (gzip, LZF, szip: unpacked here, never past unpack_limit), shuffling
# (the same length), fletcher32 (4 bytes off; the library compares the checksum), n-bit and
# scale-offset (as many values as their parameters say, each one packed in a number of bits the
# parameters or the chunk's header give: the chunk must hold all those bits, since the library
# reads them without looking at its length).
_DEFLATE, _SHUFFLE, _FLETCHER32, _SZIP, _NBIT, _SCALEOFFSET, _LZF = 1, 2, 3, 4, 5, 6, 32000
_FILTER_NAMES = {_DEFLATE: "gzip (deflate)", _SHUFFLE: "shuffle", _FLETCHER32: "fletcher32", _SZIP: "szip",
                 _NBIT: "n-bit", _SCALEOFFSET: "scale-offset", _LZF: "LZF"}
_SHORT_NAMES = {_DEFLATE: "gzip"}
_UNPACKING = (_DEFLATE, _LZF, _SZIP)  # read the bytes before them and make others of a length of their own
_SCALEOFFSET_HEADER = 21  # the bytes scale-offset writes before its packed values (bit count, minimum)
_SO_INT = 2  # scale-offset's scale type of integers

Filters = tuple[tuple[int, tuple[int, ...]], ...]  # (filter code, its parameters), in the order written


def _at(offset) -> str:
    return "(" + ", ".join(str(int(n)) for n in offset) + ")"


def _bytes(n: int) -> str:
    return "1 byte" if n == 1 else f"{n} bytes"


def _name(code: int) -> str:
    return _SHORT_NAMES.get(code, _FILTER_NAMES.get(code, f"filter {code}"))


def _grid(create, shape: tuple[int, ...], itemsize: int) -> tuple[tuple[int, ...], int, int]:
    """(chunk shape, bytes per chunk, chunks in the grid), refused when the grid holds far more
    than the dataset."""
    chunk = tuple(int(n) for n in create.get_chunk())
    chunk_bytes = int(np.prod(chunk, dtype=np.float64)) * itemsize
    count = int(np.prod([-(-n // c) for n, c in zip(shape, chunk, strict=False)], dtype=np.float64))
    dataset_bytes = int(np.prod(shape, dtype=np.float64)) * itemsize
    if len(chunk) != len(shape) or count * chunk_bytes > 4 * dataset_bytes + GRID_SLACK_BYTES:
        raise ChunkProblem(f"is stored in chunks of {shape_text(chunk)} values, far more than its shape "
                           f"{shape_text(shape)} needs; write it in smaller chunks (or unchunked)")
    return chunk, chunk_bytes, count


def _filters(create) -> Filters:
    return tuple((int(code), tuple(int(value) for value in values))
                 for code, _, values, _ in (create.get_filter(i) for i in range(create.get_nfilters())))


def _applied(filters: Filters, filter_mask: int) -> Filters:
    """The filters applied to a chunk (its filter mask marks those skipped), in the order written."""
    return tuple(item for i, item in enumerate(filters) if not filter_mask & (1 << i))


def _keeps_values(code: int, values: tuple[int, ...]) -> bool:
    """n-bit of a type using all its bits, or scale-offset of integers keeping all their bits:
    the filter leaves the chunk as it is, and gives the library's buffer size as its length."""
    if code == _NBIT:
        return len(values) > 1 and values[1] != 0
    if code == _SCALEOFFSET and len(values) > 4 and values[3] == 0 and values[0] == _SO_INT:
        factor = values[1] - (1 << 32) if values[1] >= 1 << 31 else values[1]  # a C int
        return max(factor, 0) == 8 * values[4]
    return False


def _check_filters(filters: Filters) -> None:
    """Refuses, by name, a filter this reading cannot follow: one it does not know, one the HDF5
    library here lacks, parameters the library would read past."""
    import h5py

    for code, values in filters:
        if code not in _FILTER_NAMES:
            raise ChunkProblem(f"is compressed with the filter {code}, which is not read here; write it with gzip "
                               f"or LZF compression (or another of HDF5's own filters) or uncompressed")
        if not h5py.h5z.filter_avail(code):
            raise ChunkProblem(f"is compressed with the {_FILTER_NAMES[code]} filter, which the HDF5 library here "
                               f"cannot read; write it with gzip or LZF compression or uncompressed")
        if code == _NBIT and not _nbit_parameters_valid(values):
            raise ChunkProblem("is corrupt: its n-bit filter's parameters do not describe numbers")
        if code == _SCALEOFFSET and (len(values) < 5 or values[4] == 0):
            raise ChunkProblem("is corrupt: its scale-offset filter's parameters do not describe numbers")
        if code == _SZIP and len(values) != 4:
            raise ChunkProblem("is corrupt: its szip filter's parameters are not szip's four")


def _nbit_parameters_valid(values: tuple[int, ...]) -> bool:
    """n-bit's parameters: (their count, unchanged, values, class, size, order, precision, offset),
    class 1 a number. The library reads the first three before checking the count (it crashes on
    fewer), and the precision and offset of a value packed in fewer bits than its size."""
    if len(values) < 3 or values[0] != len(values):
        return False
    if _keeps_values(_NBIT, values):
        return True
    return len(values) >= 8 and values[3] == 1 and values[4] > 0 and 0 < values[6] <= 8 * values[4] - values[7]


def _check_order(applied: Filters) -> None:
    """The filters of a chunk in an order whose lengths can be followed (the library runs them
    last written first): n-bit or scale-offset packing its values makes bytes known only to the
    library, so none may be unpacked after it; one keeping its values gives the library's buffer
    size as its length, so it must be the last run (written first)."""
    packed = None  # the filter whose output is known only by its length
    for position in range(len(applied) - 1, -1, -1):
        code, values = applied[position]
        if packed is not None and (code in _UNPACKING or (code == _SCALEOFFSET and not _keeps_values(code, values))):
            raise ChunkProblem(f"is filtered with {_name(code)}, then {_name(packed)}, which is not read here; "
                               f"apply {_name(packed)} first")
        if code in (_NBIT, _SCALEOFFSET):
            if not _keeps_values(code, values):
                packed = code
            elif position:
                raise ChunkProblem(f"is filtered with {_name(applied[0][0])}, then {_name(code)}, which is not read "
                                   f"here; apply {_name(code)} first")


def _check_stored(offset: tuple[int, ...] | None, size: int, chunk: tuple[int, ...], chunk_bytes: int,
                  shape: tuple[int, ...], filtered: bool) -> None:
    """A stored chunk's place and stored size, before its bytes are read: on the grid, inside the
    extent; unfiltered, exactly the chunk (the library reads the chunk's size from where it
    starts, whatever the index says it stores); filtered, at most what the chunk takes compressed
    at worst (longer: the library reads it whole). `offset` None: the place is not known yet (the
    largest stored size of a filtered dataset is checked)."""
    if offset is not None and (len(offset) != len(shape) or any(
            o < 0 or o >= n or o % c for o, n, c in zip(offset, shape, chunk, strict=True))):
        raise ChunkProblem(f"is corrupt: it stores a chunk at {_at(offset)}, outside its shape {shape_text(shape)} or "
                           f"off its grid of {shape_text(chunk)} chunks")
    which = f"its chunk at {_at(offset)} stores {_bytes(size)}" if offset is not None else \
        f"it stores a chunk of {_bytes(size)}"
    if not filtered and size != chunk_bytes:
        raise ChunkProblem(f"is corrupt: {which}{' of its' if size < chunk_bytes else ', not its'} {chunk_bytes}")
    # Deflate's worst case is zlib's compressBound (n + n/1000 + 12 in the library's filter), fletcher32 adds 4,
    # scale-offset its 21-byte header; szip and LZF store a chunk unfiltered rather than larger.
    if filtered and size > chunk_bytes + (chunk_bytes >> 6) + 1024:
        raise ChunkProblem(f"is corrupt: {which}, more than any compression of its {chunk_bytes} bytes takes")


def _inflate(data: bytes, limit: int, chunk_bytes: int, offset) -> bytes:
    """All that the one zlib stream at the start of `data` inflates to, as the library's filter
    inflates it: to the end of the stream (bytes after it are ignored), which must come within
    `limit` bytes (never inflated past `limit` + 1)."""
    import zlib

    stream = zlib.decompressobj()
    try:
        raw = stream.decompress(data, chunk_bytes)  # most streams: exactly the chunk, in one buffer
        if not stream.eof:  # the stream's end, or a byte past the chunk, then all the rest up to `limit`
            raw += stream.decompress(stream.unconsumed_tail, 1)
            if not stream.eof and len(raw) > chunk_bytes:
                raw += stream.decompress(stream.unconsumed_tail, limit - len(raw))
        more = b"" if stream.eof else stream.decompress(stream.unconsumed_tail, 1)
    except zlib.error:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} is not a valid gzip (deflate) stream") from None
    if more:
        raise _bomb(offset, limit, chunk_bytes)
    if not stream.eof:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} inflates to {_bytes(len(raw))} of its "
                           f"{chunk_bytes} (the stream is cut short)")
    return raw


def _bomb(offset, limit: int, chunk_bytes: int) -> ChunkProblem:
    return ChunkProblem(f"is corrupt: its chunk at {_at(offset)} inflates to more than {limit} bytes, over twice "
                        f"its {chunk_bytes}")


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


def _lzf_length(data: bytes, limit: int, chunk_bytes: int, offset) -> int:
    """What an LZF stream unpacks to (h5py's filter grows its buffer until the whole stream
    fits), walked, never past `limit`."""
    try:
        length = lzf_unpacked_length(data, limit)
    except ValueError as fault:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} is not a valid LZF stream ({fault})") from None
    if length > limit:
        raise _bomb(offset, limit, chunk_bytes)
    return length


def _unszip(data: bytes, values: tuple[int, ...], limit: int, chunk_bytes: int, offset) -> bytes:
    """What the library's szip filter makes of a stored chunk: the length its 4-byte header
    claims, at most, and as much of it as libaec decodes from the rest (the library takes the
    length decoded, however short)."""
    import imagecodecs

    if len(data) < 4:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} stores {_bytes(len(data))}, fewer than the "
                           f"4 of szip's header")
    claimed = int.from_bytes(data[:4], "little")
    if claimed > limit:
        raise _bomb(offset, limit, chunk_bytes)
    mask, per_block, bits, per_scanline = values
    try:
        return bytes(imagecodecs.szip_decode(data[4:], mask, per_block, bits, per_scanline, out=claimed))
    except (RuntimeError, ValueError):
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} is not a valid szip stream") from None


def _unshuffle(data: bytes, itemsize: int) -> bytes:
    """The library's shuffle filter undone: byte i of every value gathered from the i-th run of
    the stored bytes; bytes past the last whole value stay at the end."""
    count = len(data) // itemsize if itemsize else 0
    if itemsize <= 1 or count <= 1:
        return data
    body = np.frombuffer(data, np.uint8, count * itemsize).reshape(itemsize, count).T.tobytes()
    return body + data[count * itemsize:]


def _packed_bytes(code: int, values: tuple[int, ...], data: bytes | None, length: int, offset) -> int:
    """The bytes n-bit or scale-offset reads from a chunk: its values' bits (and scale-offset's
    header, which gives their number of bits)."""
    count, itemsize = values[2], values[4]
    if code == _NBIT:
        return -(-count * values[6] // 8)  # `precision` bits a value
    if length < _SCALEOFFSET_HEADER:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} stores {_bytes(length)}, fewer than the "
                           f"{_SCALEOFFSET_HEADER} of scale-offset's header")
    bits = int.from_bytes(data[:4], "little")
    if bits > 8 * itemsize:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} packs its values in {bits} bits each, more "
                           f"than their {8 * itemsize}")
    return _SCALEOFFSET_HEADER + (count * itemsize if bits == 8 * itemsize else -(-count * bits // 8))


def unpacked_length(data: bytes, applied: Filters, chunk_bytes: int, offset) -> int:
    """What the library's filters make of a stored chunk, run as it runs them (last written
    first), checking that each one reads only bytes the one before wrote: the length given to
    the library, which keeps its first `chunk_bytes`. Raises ChunkProblem for a stream the
    library would refuse, one unpacking past unpack_limit, or a result shorter than the chunk
    (the library would leave heap memory in the rest of it)."""
    limit = unpack_limit(chunk_bytes)
    length, verb = len(data), "stores"
    for position in range(len(applied) - 1, -1, -1):
        code, values = applied[position]
        then = applied[:position]  # the filters run after this one: do they read its bytes?
        bytes_read = any(c in _UNPACKING or (c == _SCALEOFFSET and not _keeps_values(c, v)) for c, v in then)
        if code == _FLETCHER32:
            if length < 4:
                raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} {verb} {_bytes(length)}, fewer than its "
                                   f"checksum takes")
            length -= 4  # the library compares the checksum
            data = data[:length] if data is not None else None
        elif code == _SHUFFLE:
            data = _unshuffle(data, values[0] if values else 1) if data is not None and bytes_read else data
        elif code == _DEFLATE:
            data = _inflate(data, limit, chunk_bytes, offset)
            length, verb = len(data), "inflates to"
        elif code == _LZF:
            length, verb = _lzf_length(data, limit, chunk_bytes, offset), "inflates to"
            data = _unlzf(data, length) if bytes_read else None
        elif code == _SZIP:
            data = _unszip(data, values, limit, chunk_bytes, offset)
            length, verb = len(data), "inflates to"
        elif not _keeps_values(code, values):  # n-bit or scale-offset packing (a value a few bits)
            needed = _packed_bytes(code, values, data, length, offset)
            if length < needed:
                raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} {verb} {_bytes(length)}, fewer than the "
                                   f"{needed} its {_FILTER_NAMES[code]} packing of {values[2]} values takes")
            length, verb, data = values[2] * values[4], "unpacks to", None
            if length > limit:
                raise ChunkProblem(f"is corrupt: its {_FILTER_NAMES[code]} filter unpacks each chunk to "
                                   f"{_bytes(length)}, over twice its {chunk_bytes}")
        # n-bit or scale-offset keeping the values: the length stays (the last filter run, _check_order).
    if length < chunk_bytes:
        raise ChunkProblem(f"is corrupt: its chunk at {_at(offset)} {verb} {_bytes(length)} of its {chunk_bytes}")
    return length


def _unlzf(data: bytes, length: int) -> bytes:
    """An LZF stream already walked to `length` bytes, unpacked (liblzf, by imagecodecs)."""
    import imagecodecs

    return bytes(imagecodecs.lzf_decode(data, out=length))


def _check_lzf_buffer(filters: Filters, chunk_bytes: int) -> None:
    """h5py's LZF filter unpacks each chunk into a buffer of the size its third parameter gives
    (h5py writes the chunk's size), growing it by the stored size while too small: a larger one
    is refused, as memory the library would take per chunk that no chunk needs."""
    for index, (code, values) in enumerate(filters):
        fletchers = sum(c == _FLETCHER32 for c, _ in filters[:index])
        if code == _LZF and len(values) >= 3 and values[2] > chunk_bytes + 4 * fletchers:
            raise ChunkProblem(f"is corrupt: its LZF filter unpacks each chunk into {_bytes(values[2])}, more "
                               f"than its {chunk_bytes}")


# Stored chunks found to unpack to at least their chunk, kept from dataset to dataset (a mask's
# all-background chunk is the same bytes in every file): (stored bytes, filters applied, chunk
# bytes), at most this many stored bytes, the store emptied when full.
CHECKED_BYTES = 1 << 20
_CHECKED: set[tuple[bytes, Filters, int]] = set()
_CHECKED_SIZE = [0]


def _remember_checked(key: tuple[bytes, Filters, int]) -> None:
    if _CHECKED_SIZE[0] + len(key[0]) > CHECKED_BYTES:
        _CHECKED.clear()
        _CHECKED_SIZE[0] = 0
    if len(key[0]) <= CHECKED_BYTES:
        _CHECKED.add(key)
        _CHECKED_SIZE[0] += len(key[0])


def _can_grow(dataset_id) -> bool:
    """Whether the dataset can be extended (a maximum shape beyond its shape). Its chunk index may
    then be one (HDF5's extensible array, one unlimited dimension other than the first) whose
    listing gives chunks at other places than those the library reads them from."""
    space = dataset_id.get_space()
    return tuple(space.get_simple_extent_dims(True)) != tuple(space.shape)


@dataclass(frozen=True)
class _Stored:
    chunk_offset: tuple[int, ...]
    filter_mask: int
    size: int
    data: bytes | None  # read already by the library's lookup, else read so by _stored_chunks


def _stored_chunks_of(dataset_id, shape: tuple[int, ...], chunk: tuple[int, ...], chunk_bytes: int,
                      filtered: bool, can_grow: bool) -> list[_Stored]:
    """The dataset's stored chunks, each at the place the library reads it from. The chunk index
    lists them (place, filter mask, stored size); for a dataset that can grow, where the listing's
    places can be wrong, each place of the grid is looked up as the library looks it up, and every
    listed chunk must be found there."""
    import itertools

    listed = []
    dataset_id.chunk_iter(listed.append)
    if not can_grow:
        return [_Stored(tuple(int(n) for n in info.chunk_offset), int(info.filter_mask), int(info.size), None)
                for info in listed]
    # Stored sizes, before any chunk is read: unfiltered, each one the chunk's; filtered, the largest bounded.
    for info in listed if not filtered else sorted(listed, key=lambda info: info.size)[-1:]:
        _check_stored(None, int(info.size), chunk, chunk_bytes, shape, filtered)
    found = []
    for place in itertools.product(*(range(0, n, c) for n, c in zip(shape, chunk, strict=True))):
        try:
            filter_mask, data = dataset_id.read_direct_chunk(place)
        except RuntimeError:  # not stored: the fill value
            continue
        found.append(_Stored(place, int(filter_mask), len(data), data))
    if len(found) != len(listed):
        outside = len(listed) - len(found)
        raise ChunkProblem(f"is corrupt: it stores {len(listed)} chunks, {outside} of them outside its shape "
                           f"{shape_text(shape)} or off its grid of {shape_text(chunk)} chunks")
    return found


def check_stored_data(dataset_id, create, shape: tuple[int, ...], can_grow: bool) -> bool:
    """Raises ChunkProblem unless every stored chunk gives the library at least the chunk's bytes
    from the file (each one unpacked one at a time, never past unpack_limit, or for n-bit and
    scale-offset its packed bits counted). True when every element is stored in the file; False
    when part of it was never written (read_with_library then proves the library writes it).
    `can_grow`: _can_grow's answer."""
    import h5py

    layout = create.get_layout()
    itemsize = dataset_id.get_type().get_size()
    size = int(np.prod(shape, dtype=np.float64)) * itemsize
    if layout != h5py.h5d.CHUNKED:
        return dataset_id.get_storage_size() >= size  # contiguous or compact: all written, or none
    chunk, chunk_bytes, count = _grid(create, shape, itemsize)
    filters = _filters(create)
    _check_lzf_buffer(filters, chunk_bytes)
    stored = _stored_chunks_of(dataset_id, shape, chunk, chunk_bytes, bool(filters), can_grow)
    if len(stored) > count:
        raise ChunkProblem(f"is corrupt: it stores {len(stored)} chunks; its grid has {count}")
    applied_of = {mask: _applied(filters, mask) for mask in {info.filter_mask for info in stored}}
    for applied in applied_of.values():  # a filter skipped by every chunk is never run
        _check_filters(applied)
        _check_order(applied)
    for info in stored:
        _check_stored(info.chunk_offset, info.size, chunk, chunk_bytes, shape, bool(applied_of[info.filter_mask]))
    unread = [info for info in stored if info.data is None]
    from_file = iter(_stored_chunks(dataset_id, unread) if unread else ())
    for info in stored:
        data = info.data if info.data is not None else next(from_file)
        key = (data, applied_of[info.filter_mask], chunk_bytes)
        if key not in _CHECKED:
            unpacked_length(data, key[1], chunk_bytes, info.chunk_offset)
            _remember_checked(key)
    return len({info.chunk_offset for info in stored}) == count


def read_with_library(dataset_id, shape: tuple[int, ...], dtype: np.dtype, complete: bool) -> np.ndarray:
    """The library's read of the whole dataset (after check_stored_data). Where part of it was
    never written, the library writes the fill value there, or nothing at all (no fill value, or
    fill time "never"): so it is read a second time into a buffer of other bytes, and any byte
    the library did not write differs between the two."""
    import h5py

    out = np.zeros(shape, dtype)
    dataset_id.read(h5py.h5s.ALL, h5py.h5s.ALL, out)
    if complete:
        return out
    again = np.empty(shape, dtype)
    again.reshape(-1).view(np.uint8)[:] = 0xFF
    dataset_id.read(h5py.h5s.ALL, h5py.h5s.ALL, again)
    if out.tobytes() != again.tobytes():
        raise ChunkProblem("is incomplete: part of it was never written and it has no fill value to read there")
    return out


def read_deflated_chunks(dataset_id, create, out: np.ndarray, can_grow: bool) -> bool:
    """Fills `out` (a new C-contiguous 2D array of the dataset's shape and type) from a chunked
    2D dataset whose only filter is deflate, inflating each distinct stored chunk once: a mask's
    background chunks are stored as the same bytes, and the same bytes inflate to the same
    pixels. The bytes are those the library reads (each chunk found by its own lookup, in the
    file's own storage, the caller having refused external storage and virtual datasets), each
    chunk inflated to its end, never past unpack_limit; a chunk inflating to more
    than its size gives its first bytes, as the library's does.

    Raises ChunkProblem for a chunk that does not inflate to at least its size (the library would
    leave heap memory in the array) or that inflates far past it. False, `out` then partly
    written, for anything else: another layout, shape or filter, a dataset that can grow, a type
    that is not stored as numpy lays it out, a chunk not stored (fill value) or not filtered. The
    library's reader then reads the dataset, after check_stored_data, so what this returns is
    always what it would. `can_grow`: _can_grow's answer."""
    import h5py

    try:
        if out.ndim != 2 or create.get_layout() != h5py.h5d.CHUNKED or create.get_nfilters() != 1 \
                or create.get_filter(0)[0] != h5py.h5z.FILTER_DEFLATE \
                or can_grow:
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
        _check_stored(tuple(int(n) for n in largest.chunk_offset), int(largest.size), (rows, columns), chunk_bytes,
                      out.shape, True)
        if (len(_INFLATED) + len(stored)) * max(chunk_bytes, _INFLATED_CHUNK_BYTES[0]) > INFLATED_BYTES:
            _INFLATED.clear()
            _INFLATED_CHUNK_BYTES[0] = 0
        _INFLATED_CHUNK_BYTES[0] = max(chunk_bytes, _INFLATED_CHUNK_BYTES[0])
        kind = (rows, columns, out.dtype.str)
        limit = unpack_limit(chunk_bytes)
        for info, data in zip(stored, _stored_chunks(dataset_id, stored), strict=True):
            key = (data, kind)
            pixels = _INFLATED.get(key)
            if pixels is None:
                raw = _inflate(data, limit, chunk_bytes, info.chunk_offset)
                if len(raw) < chunk_bytes:
                    raise ChunkProblem(f"is corrupt: its chunk at {_at(info.chunk_offset)} inflates to "
                                       f"{_bytes(len(raw))} of its {chunk_bytes}")
                raw = raw[:chunk_bytes] if len(raw) > chunk_bytes else raw  # the library keeps the first bytes
                pixels = _INFLATED[key] = np.frombuffer(raw, out.dtype).reshape(rows, columns)
            row, column = info.chunk_offset
            # The last row and column of chunks reach past the extent: their pixels there are cut.
            out[row:row + rows, column:column + columns] = pixels[:n_rows - row, :n_columns - column]
        return True
    except (OSError, RuntimeError, TypeError, ValueError, KeyError, AttributeError):  # zlib's: ChunkProblem
        return False


def _stored_chunks(dataset_id, stored: list) -> list[bytes]:
    """The stored bytes of each listed chunk, as the library's own lookup finds it when it reads
    the dataset. The listing (chunk_iter) walks the index another way: a damaged index can list a
    chunk the lookup does not find (the library then reads no bytes of the file there), or find
    another record; either is refused, never read from where the listing says."""
    chunks = []
    for info in stored:
        try:
            filter_mask, data = dataset_id.read_direct_chunk(info.chunk_offset)
        except RuntimeError:
            filter_mask, data = None, b""
        if filter_mask != info.filter_mask or len(data) != info.size:
            raise ChunkProblem(f"is corrupt: its chunk index lists a chunk at {tuple(info.chunk_offset)} that the "
                               f"HDF5 library does not find there")
        chunks.append(data)
    return chunks
