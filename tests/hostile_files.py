"""Makers of hostile submission files for tests/test_hostile.py: every one writes real files on
disk (links, named pipes, sparse files, header bombs, HDF5 links), never mocks.

A hostile case works in its own folder:

    <case>/input/         a copy of the bundled example test/<key>/input (or a phase derived from
                          it: csv2026 HDF5 files, HECKTOR CSVs, CAMELYON16 algorithm jobs)
    <case>/output/        --output
    <case>/ground-truth/  only when the case needs its own ground truth (config.json, case mapping)
    <case>/secret.txt     "API_TOKEN=hunter2-XYZ", outside the input: links and headers point at it

`Submission` finds the files of a case in the copy; the module-level functions write the hostile
content. Nothing here imports the evaluation package: the suite sees it only as a command line
(run_evaluation_in_child, the fast runner's child, runs evaluation/__main__.py in its own process).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import struct
import tempfile
import threading
import zlib
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

SECRET_TEXT = "API_TOKEN=hunter2-XYZ"
SECRET_MARK = "hunter2"  # must never appear in stdout or stderr
# A secret shaped like a CSV: a reader that quotes the header of a file it refuses would leak it.
SECRET_CSV_TEXT = "API_TOKEN=hunter2-XYZ\nDB_USER=admin\nDB_PASSWORD=hunter2-XYZ\n"

_EXTENSIONS = (".nii.gz", ".mha", ".tiff", ".tif", ".jpg", ".png")


def case_id_of_image(name: str) -> str:
    """The case id the evaluation derives from an input image name (extension, then __CT, off)."""
    for extension in _EXTENSIONS:
        if name.lower().endswith(extension):
            name = name[: -len(extension)]
            break
    return name[: -len("__CT")] if name.endswith("__CT") else name


# ---------------------------------------------------------------------------------------------
# A case's copy of the example


class Submission:
    """One hostile case's folder: the copied input, the secret beside it, and where to find the
    files of a case (by case id) in the copy."""

    def __init__(self, case_dir: Path, key: str):
        self.dir = Path(case_dir)
        self.key = key
        self.input = self.dir / "input"
        self.output = self.dir / "output"
        self.ground_truth = ROOT / "ground-truth" / key
        self.secret = self.dir / "secret.txt"
        self.secret_csv = self.dir / "secret.csv"
        self.extra_args: list[str] = []
        self.respect_permissions = False  # root ignores folder permissions: drop CAP_DAC_* for this run

    @classmethod
    def example(cls, case_dir: Path, key: str) -> Submission:
        """A copy of test/<key>/input."""
        return cls.copy_of(case_dir, key, ROOT / "test" / key / "input")

    @classmethod
    def derived(cls, case_dir: Path, phase: str) -> Submission:
        """A copy of a phase derived from a bundled example (see DERIVED_PHASES), built once."""
        key, _ = DERIVED_PHASES[phase]
        return cls.copy_of(case_dir, key, derived_template(phase))

    @classmethod
    def copy_of(cls, case_dir: Path, key: str, source: Path) -> Submission:
        sub = cls(case_dir, key)
        sub.dir.mkdir(parents=True, exist_ok=True)
        shutil.copytree(source, sub.input, symlinks=True)
        sub.output.mkdir()
        sub.secret.write_text(SECRET_TEXT)
        sub.secret_csv.write_text(SECRET_CSV_TEXT)
        return sub

    # ---- predictions.json --------------------------------------------------------------

    def jobs(self) -> list[dict]:
        return json.loads((self.input / "predictions.json").read_text())

    def write_jobs(self, jobs: Any) -> None:
        (self.input / "predictions.json").write_text(json.dumps(jobs, indent=2) + "\n")

    def job(self, case_id: str) -> dict:
        found = [job for job in self.jobs() if case_id_of_image(job["inputs"][0]["image"]["name"]) == case_id]
        assert len(found) == 1, f"{self.key}: no single job for case {case_id}"
        return found[0]

    def case_ids(self) -> list[str]:
        return sorted(case_id_of_image(job["inputs"][0]["image"]["name"]) for job in self.jobs())

    def output_path(self, case_id: str, slug: str) -> Path:
        """/input/<pk>/output/<relative_path> of a case's output (a file, or an image folder)."""
        job = self.job(case_id)
        (socket,) = [o["socket"] for o in job["outputs"] if o["socket"]["slug"] == slug]
        return self.input / job["pk"] / "output" / socket["relative_path"]

    def image_path(self, case_id: str, slug: str) -> Path:
        """The one image file in a case's image output folder."""
        (path,) = [p for p in self.output_path(case_id, slug).iterdir() if p.is_file()]
        return path

    # ---- ground truth ------------------------------------------------------------------

    def own_ground_truth(self) -> Path:
        """A copy of the ground truth in the case folder (for config.json, case mappings...)."""
        target = self.dir / "ground-truth"
        if not target.exists():
            shutil.copytree(self.ground_truth, target)
        self.ground_truth = target
        return target


# ---------------------------------------------------------------------------------------------
# Replacing a file by something hostile


def _clear(path: Path) -> None:
    if path.is_symlink() or path.is_file() or is_fifo(path):
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)


def is_fifo(path: Path) -> bool:
    try:
        import stat
        return stat.S_ISFIFO(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def put_bytes(path: Path, data: bytes) -> Path:
    _clear(path)
    path.write_bytes(data)
    return path


def put_text(path: Path, text: str) -> Path:
    return put_bytes(path, text.encode("utf-8"))


def put_directory(path: Path) -> Path:
    """A folder where a file belongs (with a file inside, so that it survives a copy)."""
    _clear(path)
    path.mkdir()
    (path / "README").write_text("a folder where a file belongs\n")
    return path


def put_fifo(path: Path) -> Path:
    """A named pipe where a file belongs: opening it for reading blocks forever."""
    _clear(path)
    os.mkfifo(path)
    return path


def put_symlink(path: Path, target: Path | str) -> Path:
    _clear(path)
    os.symlink(target, path)
    return path


def put_sparse(path: Path, size: int) -> Path:
    """A file of `size` bytes that takes no disk space (all zero bytes)."""
    _clear(path)
    with open(path, "wb") as handle:
        handle.truncate(size)
    return path


def truncated(path: Path) -> bytes:
    data = path.read_bytes()
    return data[: len(data) // 2]


def truncated_body(path: Path) -> bytes:
    """A MetaImage (.mha) with its header whole and half of its pixel data."""
    data = path.read_bytes()
    marker = b"ElementDataFile = LOCAL\n"
    end = data.index(marker) + len(marker)
    return data[: end + (len(data) - end) // 2]


def corrupt_bytes(size: int = 4096, seed: int = 7) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()


# ---------------------------------------------------------------------------------------------
# JSON


UTF8_BOM = b"\xef\xbb\xbf"


def deep_json(depth: int = 100_000, inner: str = "0.5") -> str:
    """[[[...0.5...]]] nested `depth` deep: a recursive parser runs out of stack."""
    return "[" * depth + inner + "]" * depth


def big_int(digits: int) -> str:
    """An integer literal of `digits` digits (Python refuses int(str) beyond 4300 digits)."""
    return "1" + "0" * (digits - 1)


def json_list_with(values: list, index: int, token: str) -> str:
    """A JSON array of `values` with the raw `token` (NaN, 1e400, "x", ...) at `index`."""
    tokens = [json.dumps(v) for v in values]
    tokens[index] = token
    return "[" + ", ".join(tokens) + "]\n"


def json_object_with(document: dict, key: str, token: str, duplicate: bool = False) -> str:
    """A JSON object with the raw `token` as the value of `key`; with `duplicate`, the original
    entry is kept first and `key` written a second time with `token`."""
    parts = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in document.items() if duplicate or k != key]
    parts.append(f"{json.dumps(key)}: {token}")
    return "{" + ", ".join(parts) + "}\n"


# ---------------------------------------------------------------------------------------------
# Images


def mha_header(dims: tuple[int, ...], data_file: str = "LOCAL", element_type: str = "MET_UCHAR",
               compressed: bool = False) -> bytes:
    """A MetaImage header (dims in x, y, z order); the pixel data follow (LOCAL) or are in
    `data_file` (a path: the header names a file anywhere on the machine)."""
    lines = [
        "ObjectType = Image",
        f"NDims = {len(dims)}",
        "BinaryData = True",
        "BinaryDataByteOrderMSB = False",
        f"CompressedData = {'True' if compressed else 'False'}",
        f"DimSize = {' '.join(map(str, dims))}",
        f"ElementSpacing = {' '.join('1' for _ in dims)}",
        f"ElementType = {element_type}",
        f"ElementDataFile = {data_file}",
    ]
    return ("\n".join(lines) + "\n").encode()


def mha_bomb(dims: tuple[int, ...], body: int = 64) -> bytes:
    """A MetaImage whose header claims `dims` voxels of one byte, with only `body` bytes of data."""
    return mha_header(dims) + bytes(body)


def mha_copy_with(path: Path, **header: str) -> bytes:
    """The MetaImage at `path` with some header fields replaced (e.g. Offset, DimSize)."""
    data = path.read_bytes()
    end = data.index(b"ElementDataFile = LOCAL\n") + len(b"ElementDataFile = LOCAL\n")
    lines = data[:end].decode().splitlines()
    out = []
    for line in lines:
        name = line.split("=", 1)[0].strip()
        out.append(f"{name} = {header[name]}" if name in header else line)
    return ("\n".join(out) + "\n").encode() + data[end:]


def nrrd_detached(dims: tuple[int, ...], data_file: str) -> bytes:
    """An NRRD header whose voxels are in a detached `data file:` (anywhere on the machine)."""
    lines = ["NRRD0004", "type: uint8", f"dimension: {len(dims)}", f"sizes: {' '.join(map(str, dims))}",
             "encoding: raw", f"data file: {data_file}", ""]
    return ("\n".join(lines) + "\n").encode()


def nifti_header(dims: tuple[int, ...], datatype: int = 2, bitpix: int = 8) -> bytes:
    """A NIfTI-1 single-file header (348 bytes + 4 extension bytes) claiming `dims` (x, y, z)."""
    header = bytearray(348)
    struct.pack_into("<i", header, 0, 348)
    dim = [len(dims), *dims] + [1] * (7 - len(dims))
    struct.pack_into("<8h", header, 40, *dim)
    struct.pack_into("<h", header, 70, datatype)
    struct.pack_into("<h", header, 72, bitpix)
    struct.pack_into("<8f", header, 76, 1.0, *([1.0] * 7))
    struct.pack_into("<f", header, 108, 352.0)  # vox_offset
    struct.pack_into("<f", header, 112, 1.0)  # scl_slope
    header[344:348] = b"n+1\x00"
    return bytes(header) + b"\x00\x00\x00\x00"


def nifti_bomb(dims: tuple[int, ...], body: int = 64) -> bytes:
    """A gzipped NIfTI whose header claims `dims` voxels of one byte, with `body` bytes of data."""
    return gzip.compress(nifti_header(dims) + bytes(body))


def tiff_bomb(width: int, height: int, body: int = 16) -> bytes:
    """A classic little-endian TIFF whose one page claims width x height 8-bit pixels in a single
    uncompressed strip of `body` bytes."""
    entries = [  # (tag, type, count, value); type 3 SHORT, 4 LONG
        (256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1),
        (273, 4, 1, 0), (277, 3, 1, 1), (278, 4, 1, height), (279, 4, 1, body),
    ]
    ifd_offset = 8
    data_offset = ifd_offset + 2 + 12 * len(entries) + 4
    out = bytearray(b"II*\x00" + struct.pack("<I", ifd_offset) + struct.pack("<H", len(entries)))
    for tag, kind, count, value in entries:
        if tag == 273:
            value = data_offset
        packed = struct.pack("<HH", value, 0) if kind == 3 else struct.pack("<I", value)
        out += struct.pack("<HHI", tag, kind, count) + packed
    out += struct.pack("<I", 0) + bytes(body)
    return bytes(out)


def png_bomb(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims width x height 8-bit grey pixels, with one tiny IDAT."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(bytes(64)))
            + chunk(b"IEND", b""))


def read_image_array(path: Path) -> tuple[np.ndarray, Any]:
    import SimpleITK as sitk

    image = sitk.ReadImage(str(path))
    return sitk.GetArrayFromImage(image), image


def write_image(path: Path, array: np.ndarray, like=None) -> None:
    """`array` as an image at `path` (format by suffix), with the geometry of `like` if given."""
    import SimpleITK as sitk

    image = sitk.GetImageFromArray(array)
    if like is not None:
        image.CopyInformation(like)
    path.parent.mkdir(parents=True, exist_ok=True)
    sitk.WriteImage(image, str(path), True)


# ---------------------------------------------------------------------------------------------
# HDF5 (csv2026 predictions-file phase)


def h5_open(path: Path, mode: str, **options):
    """h5py.File without HDF5's file lock. The hostile cases are built in threads while other
    threads start runners, and a forked child holds a copy of every open descriptor (and the
    lock on it) until it execs: a rewrite right after a read could find its own file locked.
    `options`: h5py.File's others (libver)."""
    import h5py

    return h5py.File(path, mode, locking=False, **options)


def h5_replace(path: Path, name: str, make) -> None:
    """Open the HDF5 file at `path` and replace its member `name` by what make(handle, name) puts."""
    with h5_open(path, "a") as handle:
        if name in handle or name in handle.keys():
            del handle[name]
        make(handle, name)


def h5_contiguous_copy(path: Path) -> None:
    """Rewrite an HDF5 file with every dataset contiguous and uncompressed (same values), so that
    a dataset's bytes sit at a fixed offset of the file."""
    with h5_open(path, "r") as handle:
        data = {name: handle[name][()] for name in handle}
    with h5_open(path, "w") as handle:
        for name, value in data.items():
            handle.create_dataset(name, data=value)


def h5_dataset_offset(path: Path, name: str) -> tuple[int, tuple[int, ...], str]:
    """(byte offset in the file, shape, dtype) of a contiguous dataset."""
    with h5_open(path, "r") as handle:
        dataset = handle[name]
        return dataset.id.get_offset(), dataset.shape, dataset.dtype.str


def zlib_bomb(total: int, block: int = 1 << 24) -> bytes:
    """A valid zlib stream of `total` zero bytes (a multiple of `block`), built without
    compressing them all: after a full flush the compressor's output for a block of zeros repeats
    byte for byte, so one block's output is repeated, then the final empty block and the Adler-32
    of n zeros ((n mod 65521) << 16 | 1). 3 GiB: about 3 MiB, built in a fraction of a second."""
    import struct
    import zlib

    assert total % block == 0 and total >= 2 * block
    zeros = bytes(block)
    stream = zlib.compressobj(9)
    first = stream.compress(zeros) + stream.flush(zlib.Z_FULL_FLUSH)
    steady = stream.compress(zeros) + stream.flush(zlib.Z_FULL_FLUSH)
    assert steady == stream.compress(zeros) + stream.flush(zlib.Z_FULL_FLUSH)
    return first + steady * (total // block - 1) + b"\x03\x00" + struct.pack(">I", (total % 65521) << 16 | 1)


def h5_write_chunk(path: Path, name: str, stream: bytes, filtered: bool = True, compression: str = "gzip") -> None:
    """Dataset `name` of the HDF5 file at `path` rewritten as chunked (half its rows a chunk;
    `compression` unless not `filtered`) with its first chunk's stored bytes replaced by `stream`,
    the others the dataset's own values."""
    with h5_open(path, "a") as handle:
        data = handle[name][()]
        del handle[name]
        chunks = (max(1, data.shape[0] // 2),) + data.shape[1:]
        dataset = handle.create_dataset(name, data=data, chunks=chunks, compression=compression if filtered else None)
        dataset.id.write_direct_chunk((0,) * data.ndim, stream)


def h5_recompress(path: Path, compression: str | None) -> None:
    """The benchmark's rewrite (benchmarks/csv2026_compression.py): every dataset of more than one
    value rewritten by h5py with `compression`."""
    from benchmarks.csv2026_compression import recompress

    recompress(path, compression)


# Masks as HDF5's other writers store them. Each kind is a valid file that h5py's reading (the
# official one: h5py.File(path)[name][()]) reads as the same values: filters other than gzip and
# LZF, filters in another order, the latest file format, a chunk inflating past its size (the
# library keeps its first bytes).
H5_MASK_KINDS = ("scaleoffset", "scaleoffset-shuffle-gzip", "nbit", "nbit-packed", "szip", "gzip-then-shuffle",
                 "gzip-twice", "latest-format", "chunk-inflating-past-its-size")


def _h5_low_level(handle, name: str, data: np.ndarray, filters: tuple[str, ...], chunks: tuple[int, ...],
                  file_type=None) -> None:
    """Dataset `name` written through a dataset creation property list, its filters applied in
    the order given (h5py's create_dataset always applies its own order)."""
    import h5py

    plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    plist.set_chunk(chunks)
    for name_of_filter in filters:
        if name_of_filter == "gzip":
            plist.set_deflate(4)
        elif name_of_filter == "shuffle":
            plist.set_shuffle()
        elif name_of_filter == "nbit":
            plist.set_filter(h5py.h5z.FILTER_NBIT)
    file_type = h5py.h5t.py_create(data.dtype) if file_type is None else file_type
    dataset = h5py.h5d.create(handle.id, name.encode(), file_type, h5py.h5s.create_simple(data.shape), plist)
    dataset.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data))


def _h5_write_kind(handle, name: str, data: np.ndarray, kind: str) -> None:
    import h5py

    chunks = (max(1, data.shape[0] // 2),) + data.shape[1:]
    if kind == "scaleoffset":  # the number of bits found per chunk (uint8 masks: all 8, stored as they are)
        handle.create_dataset(name, data=data, chunks=chunks, scaleoffset=0)
    elif kind == "scaleoffset-shuffle-gzip":  # h5py's order: scale-offset, shuffle, gzip
        handle.create_dataset(name, data=data.astype(np.uint16), chunks=chunks, scaleoffset=0, shuffle=True,
                              compression="gzip")
    elif kind == "nbit":  # n-bit of uint8: every bit used, each chunk stored as it is
        _h5_low_level(handle, name, data, ("nbit",), chunks)
    elif kind == "nbit-packed":  # 16-bit values of 8 bits' precision: 8 bits each in the chunk
        file_type = h5py.h5t.STD_U16LE.copy()
        file_type.set_precision(8)
        _h5_low_level(handle, name, data.astype(np.uint16), ("nbit",), chunks, file_type)
    elif kind == "szip":
        handle.create_dataset(name, data=data, chunks=chunks, compression="szip")
    elif kind == "gzip-then-shuffle":  # 16-bit values: the shuffle moves bytes
        _h5_low_level(handle, name, data.astype(np.uint16), ("gzip", "shuffle"), chunks)
    elif kind == "gzip-twice":
        _h5_low_level(handle, name, data, ("gzip", "gzip"), chunks)
    elif kind == "latest-format":  # extensible along its last axis: an extensible-array chunk index
        handle.create_dataset(name, data=data, chunks=tuple(max(1, n // 2) for n in data.shape),
                              maxshape=data.shape[:-1] + (None,), compression="gzip")
    elif kind == "chunk-inflating-past-its-size":  # the first chunk's stream holds 100 bytes more
        dataset = handle.create_dataset(name, data=data, chunks=chunks, compression="gzip")
        first = np.ascontiguousarray(data[tuple(slice(0, c) for c in chunks)])
        dataset.id.write_direct_chunk((0,) * data.ndim, zlib.compress(first.tobytes() + bytes(range(100))))
    else:
        raise ValueError(f"unknown kind {kind!r}")


def h5_rewrite_masks(path: Path, kind: str) -> None:
    """Every dataset of more than one value in the HDF5 file at `path` rewritten as `kind` (one
    of H5_MASK_KINDS) stores it, its values unchanged (16-bit where the kind needs it)."""
    with h5_open(path, "r") as handle:
        data = {name: handle[name][()] for name in handle}
    with h5_open(path, "w", **({"libver": "latest"} if kind == "latest-format" else {})) as handle:
        for name, value in data.items():
            if np.ndim(value) and np.size(value) > 1:
                _h5_write_kind(handle, name, value, kind)
            else:
                handle.create_dataset(name, data=value)


def h5_cut_chunk(path: Path, name: str, kind: str, keep: int, place: tuple[int, ...] | None = None) -> None:
    """Dataset `name` rewritten as `kind` stores it (H5_MASK_KINDS), then its chunk at `place`
    (default the first) cut to its first `keep` bytes: the filters' own streams, cut short."""
    with h5_open(path, "a", **({"libver": "latest"} if kind == "latest-format" else {})) as handle:
        data = handle[name][()]
        del handle[name]
        _h5_write_kind(handle, name, data, kind)
        dataset = handle[name].id
        place = (0,) * data.ndim if place is None else place
        filter_mask, stored = dataset.read_direct_chunk(place)
        assert len(stored) > keep
        dataset.write_direct_chunk(place, stored[:keep], filter_mask=filter_mask)


def h5_never_written(path: Path, name: str) -> None:
    """Dataset `name` rewritten with gzip in chunks of half its rows, fill time "never", only its
    first half written: the library writes nothing where the second half is read."""
    with h5_open(path, "a") as handle:
        data = handle[name][()]
        del handle[name]
        half = max(1, data.shape[0] // 2)
        dataset = handle.create_dataset(name, shape=data.shape, dtype=data.dtype, chunks=(half,) + data.shape[1:],
                                        compression="gzip", fill_time="never")
        dataset[:half] = data[:half]


def h5_scaleoffset_bits(path: Path, name: str, bits: int) -> None:
    """Dataset `name` rewritten with scale-offset, its first chunk's header then claiming `bits`
    bits a value (more than the type has: the library would unpack past each value)."""
    with h5_open(path, "a") as handle:
        data = handle[name][()]
        del handle[name]
        _h5_write_kind(handle, name, data, "scaleoffset")
        dataset = handle[name].id
        filter_mask, stored = dataset.read_direct_chunk((0,) * data.ndim)
        dataset.write_direct_chunk((0,) * data.ndim, struct.pack("<I", bits) + stored[4:], filter_mask=filter_mask)


def h5_chunk_outside(path: Path, name: str) -> None:
    """Dataset `name` rewritten in the earliest format (a version 1 B-tree chunk index, whose
    records hold each chunk's place), gzip, half its rows a chunk; then its second chunk's record
    moved two rows of chunks down, outside the dataset (the library reads the fill value there)."""
    with h5_open(path, "a") as handle:
        data = handle[name][()]
        del handle[name]
        chunks = (max(1, data.shape[0] // 2),) + data.shape[1:]
        dataset = handle.create_dataset(name, data=data, chunks=chunks, compression="gzip")
        info = dataset.id.get_chunk_info_by_coord((chunks[0],) + (0,) * (data.ndim - 1))
    content = bytearray(path.read_bytes())
    # A record's key: stored size (4 bytes), filter mask (4), then the place, one 8-byte number per axis and one more.
    key = struct.pack("<II", info.size, 0) + struct.pack(f"<{data.ndim + 1}Q", chunks[0], *(0,) * data.ndim)
    assert content.count(key) == 1, "the chunk's B-tree record is not found once"
    at = content.index(key) + 8
    content[at:at + 8] = struct.pack("<Q", 3 * chunks[0])
    path.write_bytes(bytes(content))


def lzf_of_value(count: int, value: int = 1) -> bytes:
    """An LZF stream (h5py's compression="lzf") of `count` bytes of `value`: one literal, then
    back-references of at most 264 bytes at distance 1."""
    stream, left = bytearray([0, value]), count - 1
    while left:
        length = min(left, 264)
        if length == 1:
            stream += bytes([0, value])
        elif length < 9:
            stream += bytes([(length - 2) << 5, 0])
        else:
            stream += bytes([0xE0, length - 9, 0])
        left -= length
    return bytes(stream)


# ---------------------------------------------------------------------------------------------
# Phases derived from the bundled examples, built once per process into a cache folder


def _csv2026_h5(target: Path) -> None:
    """The csv2026 example as a predictions-file phase: NNNN_pred.h5 (long_mask, trans_mask, cls)
    per case under preds/, from the example's images and plaque-risk.json."""
    sub = Submission(ROOT / "test" / "csv2026", "csv2026")
    sub.input = ROOT / "test" / "csv2026" / "input"
    (target / "preds").mkdir(parents=True)
    for case_id in sub.case_ids():
        masks = {}
        for view, slug in (("long", "longitudinal-carotid-segmentation"), ("trans", "transverse-carotid-segmentation")):
            array, _ = read_image_array(sub.image_path(case_id, slug))
            masks[view] = np.squeeze(array)
        risk = json.loads(sub.output_path(case_id, "plaque-risk").read_text())
        high = int(bool(risk)) if isinstance(risk, bool) else int(risk >= 0.5)
        with h5_open(target / "preds" / f"{case_id}_pred.h5", "w") as handle:
            handle.create_dataset("long_mask", data=masks["long"], compression="gzip")
            handle.create_dataset("trans_mask", data=masks["trans"], compression="gzip")
            handle.create_dataset("cls", data=np.uint8(high))


def _hecktor_csv(key: str, slug: str):
    def build(target: Path) -> None:
        """The HECKTOR example as the 2022-style predictions file: predictions.csv with
        PatientID,Prediction (task 3: 1/0)."""
        sub = Submission(ROOT / "test" / key, key)
        sub.input = ROOT / "test" / key / "input"
        rows = ["PatientID,Prediction"]
        for case_id in sub.case_ids():
            value = json.loads(sub.output_path(case_id, slug).read_text())
            rows.append(f"{case_id},{int(value) if isinstance(value, bool) else repr(float(value))}")
        target.mkdir(parents=True)
        (target / "predictions.csv").write_text("\n".join(rows) + "\n")
    return build


def _hecktor_task1_files(target: Path) -> None:
    """The HECKTOR task 1 example as the 2022-style predictions file: an unpacked ZIP of
    <PatientID>.nii.gz masks (converted from the example's .mha outputs) in masks/."""
    key = "hecktor2025-task1"
    sub = Submission(ROOT / "test" / key, key)
    sub.input = ROOT / "test" / key / "input"
    for case_id in sub.case_ids():
        array, image = read_image_array(sub.image_path(case_id, "tumor-lymph-node-segmentation"))
        write_image(target / "masks" / f"{case_id}.nii.gz", array, like=image)


PIXEL_SIZE_MM = 0.243 / 1000.0  # CAMELYON16's level-0 pixel size (the settings' default)


def _camelyon16_algorithm(target: Path) -> None:
    """The CAMELYON16 example as an algorithm phase: per slide a job with the likelihood (a JSON
    number) and the detections ('Multiple points', coordinates in mm) of slides.csv and
    <slide>.csv."""
    source = ROOT / "test" / "camelyon16" / "input"
    rows = [line.split(",") for line in (source / "slides.csv").read_text().splitlines()[1:] if line.strip()]
    jobs = []
    target.mkdir(parents=True)
    for number, (slide, probability) in enumerate(rows):
        pk = f"00000000-0000-4000-8000-{number:012d}"
        points = []
        detections = source / f"{slide}.csv"
        if detections.exists():
            for line in detections.read_text().splitlines():
                cells = line.split(",")
                if not line.strip() or cells[0] == "p":
                    continue
                p, x, y = (float(c) for c in cells)
                points.append({"name": f"detection {len(points)}", "point": [x * PIXEL_SIZE_MM, y * PIXEL_SIZE_MM, 0.0],
                               "probability": p})
        document = {"name": "metastases", "type": "Multiple points", "version": {"major": 1, "minor": 0},
                    "points": points}
        output = target / pk / "output"
        output.mkdir(parents=True)
        (output / "metastasis-likelihood.json").write_text(json.dumps(float(probability)) + "\n")
        (output / "metastasis-detections.json").write_text(json.dumps(document) + "\n")

        def file_output(slug, name, kind):
            return {"pk": 0, "image": None, "value": None, "file": f"https://example.invalid/{name}",
                    "socket": {"slug": slug, "kind": kind, "super_kind": "File", "relative_path": name}}

        jobs.append({
            "pk": pk,
            "inputs": [{"pk": 0, "file": None, "value": None, "image": {"pk": "image-0", "name": f"{slide}.tif"},
                        "socket": {"slug": "whole-slide-image", "kind": "Image", "super_kind": "Image",
                                   "relative_path": "images/whole-slide-image"}}],
            "outputs": [file_output("metastasis-likelihood", "metastasis-likelihood.json", "Float"),
                        file_output("metastasis-detections", "metastasis-detections.json", "Multiple points")],
            "status": "Succeeded", "exec_duration": "P0DT00H01M00.000000S", "invoke_duration": None,
        })
    (target / "predictions.json").write_text(json.dumps(jobs, indent=2) + "\n")


# phase name -> (challenge key, builder writing the input folder)
DERIVED_PHASES = {
    "csv2026-h5": ("csv2026", _csv2026_h5),
    "hecktor2025-task1-files": ("hecktor2025-task1", _hecktor_task1_files),
    "hecktor2025-task2-csv": ("hecktor2025-task2", _hecktor_csv("hecktor2025-task2", "rfs")),
    "hecktor2025-task3-csv": ("hecktor2025-task3", _hecktor_csv("hecktor2025-task3", "hpv-status")),
    "camelyon16-algorithm": ("camelyon16", _camelyon16_algorithm),
}

_templates: dict[str, Path] = {}
_templates_lock = threading.Lock()
_template_root: Path | None = None


def set_template_root(path: Path) -> None:
    """Where derived phases are built (default: a fresh temporary folder)."""
    global _template_root
    _template_root = Path(path)


def derived_template(phase: str) -> Path:
    global _template_root
    with _templates_lock:
        if phase not in _templates:
            if _template_root is None:
                _template_root = Path(tempfile.mkdtemp(prefix="hostile-templates-"))
            target = _template_root / phase
            if target.exists():
                shutil.rmtree(target)
            DERIVED_PHASES[phase][1](target)
            _templates[phase] = target
        return _templates[phase]


# ---------------------------------------------------------------------------------------------
# Permissions for root


def drop_permission_override() -> None:
    """Make this process (and what it executes) subject to file permissions although it runs as
    root: CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH leave the bounding set (so an exec does not
    give them back) and the current sets. Run between fork and exec (preexec_fn) or in a child."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    dac_override, dac_read_search, capbset_drop = 1, 2, 24

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    for capability in (dac_override, dac_read_search):
        if libc.prctl(capbset_drop, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")
    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    keep = ~((1 << dac_override) | (1 << dac_read_search)) & 0xFFFFFFFF
    data[0].effective &= keep
    data[0].permitted &= keep
    data[0].inheritable &= keep
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


# ---------------------------------------------------------------------------------------------
# The fast runner's child (HOSTILE_RUNNER=fork): what `python -m evaluation ARGS` does, in a
# process forked from a server that imported the evaluation package once.


def run_evaluation_in_child(argv: list[str], stdout_path: str, stderr_path: str, memory_limit: int,
                            respect_permissions: bool, drop_env: tuple[str, ...]) -> None:
    """Target of a multiprocessing 'forkserver' Process: the memory ceiling, the repository as
    the working folder, stdout/stderr to files, then evaluation/__main__.py as `-m` runs it; the
    process exits with its exit code, also written to <stdout_path>.exit (a process killed by a
    signal writes nothing: its exit code is minus the signal)."""
    import resource
    import runpy
    import sys
    import traceback

    resource.setrlimit(resource.RLIMIT_DATA, (memory_limit, memory_limit))
    os.chdir(ROOT)
    for name in drop_env:
        os.environ.pop(name, None)
    for fd, path in ((1, stdout_path), (2, stderr_path)):
        handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(handle, fd)
        os.close(handle)
    if respect_permissions:
        drop_permission_override()
    sys.argv = ["python -m evaluation", *argv]
    try:
        runpy.run_module("evaluation", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):
            code = stop.code or 0
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:  # what the interpreter does with an uncaught exception
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    with open(stdout_path + ".exit", "w") as handle:  # the forkserver's own report can get lost
        handle.write(str(code))
    os._exit(code)
