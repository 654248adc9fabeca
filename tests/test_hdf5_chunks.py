"""evaluation.reading.hdf5 reads a deflate-only chunked 2D dataset chunk by chunk (each distinct
stored chunk inflated once, each chunk found by the library's own lookup): whatever it returns must be
what h5py's own reader returns for the same file, and anything unusual must go to that reader,
after every stored chunk is checked to give the library at least its size from the file (the
library leaves heap memory where a chunk unpacks short, unpacks a bomb whole, and keeps the first
chunk's worth of a longer result). Every expectation below is h5py's read of the file, written by
h5py or HDF5 on disk, or the refusal."""

import re
import struct
import zlib

import h5py
import numpy as np
import pytest

from evaluation.errors import SubmissionError
from evaluation.reading import hdf5
from evaluation.reading.files import Origin
from evaluation.reading.hdf5 import open_hdf5, read_deflated_chunks
from tests.hostile_files import H5_MASK_KINDS, h5_rewrite_masks, lzf_of_value


def library_read(path, key):
    with h5py.File(path, "r", locking=False) as handle:
        return np.asarray(handle[key][()])


def ours(path, key, expected_shape=None):
    with open_hdf5(Origin.submission(path.parent), path, "Case 0001") as h5:
        return h5.dataset(key, "Case 0001, mask").read(expected_shape)


def fast_path(path, key):
    """(whether the chunk reader took the dataset, what it wrote)."""
    with open_hdf5(Origin.submission(path.parent), path, "x") as h5:
        dataset = h5.dataset(key, "x")
        out = np.empty(dataset.shape, dataset.dtype)
        return read_deflated_chunks(dataset.handle, dataset.create, out, dataset.can_grow), out


def blobs(rng, shape, dtype):
    """A mask-like array: background, a few filled rectangles (whole chunks of one value recur)."""
    array = np.zeros(shape, dtype)
    for _ in range(4):
        r0, c0 = rng.integers(0, shape[0]), rng.integers(0, shape[1])
        array[r0:r0 + rng.integers(1, shape[0]), c0:c0 + rng.integers(1, shape[1])] = rng.integers(1, 100)
    return array


@pytest.mark.parametrize("seed", range(12))
def test_chunk_reader_returns_what_the_library_reads(tmp_path, seed):
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(64, 300)), int(rng.integers(64, 300)))
    dtype = [np.uint8, np.int16, ">u2", np.float32, np.int64][seed % 5]
    itemsize = np.dtype(dtype).itemsize
    rows = int(rng.integers(-(-4096 // (itemsize * 64)), 80))
    chunks = (rows, 64)  # at least 4 KiB a chunk; the last row and column of chunks cut by the extent
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        handle.create_dataset("mask", data=blobs(rng, shape, dtype), chunks=chunks, compression="gzip",
                              compression_opts=int(rng.integers(1, 10)))
    taken, out = fast_path(path, "mask")
    expected = library_read(path, "mask")
    assert taken
    assert out.dtype == expected.dtype and np.array_equal(out, expected)
    assert ours(path, "mask", shape).tobytes() == expected.tobytes()


def test_anything_else_goes_to_the_library(tmp_path):
    rng = np.random.default_rng(1)
    data = blobs(rng, (128, 256), np.uint8)
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        handle.create_dataset("shuffled", data=data, chunks=(64, 128), compression="gzip", shuffle=True)
        handle.create_dataset("checksummed", data=data, chunks=(64, 128), compression="gzip", fletcher32=True)
        handle.create_dataset("plain", data=data, chunks=(64, 128))
        handle.create_dataset("contiguous", data=data)
        handle.create_dataset("small_chunks", data=data, chunks=(8, 8), compression="gzip")
        handle.create_dataset("volume", data=np.stack([data, data]), chunks=(1, 64, 128), compression="gzip")
        partial = handle.create_dataset("partial", shape=(128, 256), dtype=np.uint8, chunks=(64, 128),
                                        compression="gzip", fillvalue=7)
        partial[:64, :128] = data[:64, :128]  # three chunks never written: the fill value
        handle.create_dataset("booleans", data=data > 0, chunks=(64, 128), compression="gzip")
    for key in ("shuffled", "checksummed", "plain", "contiguous", "small_chunks", "volume", "partial", "booleans"):
        assert not fast_path(path, key)[0], key
        expected = library_read(path, key)
        assert ours(path, key).tobytes() == expected.tobytes(), key
    assert (library_read(path, "partial")[64:, 128:] == 7).all()


def test_a_file_with_a_user_block_reads_the_same(tmp_path):
    data = blobs(np.random.default_rng(2), (200, 256), np.uint8)
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w", userblock_size=1024) as handle:
        handle.create_dataset("mask", data=data, chunks=(64, 128), compression="gzip")
    taken, out = fast_path(path, "mask")
    assert taken and np.array_equal(out, library_read(path, "mask"))


def write_raw_chunks(path, shape, chunks, streams, dtype=np.uint8):
    """A deflate dataset whose stored chunks are the given bytes, written as they are."""
    with h5py.File(path, "w") as handle:
        dataset = handle.create_dataset("mask", shape=shape, dtype=dtype, chunks=chunks, compression="gzip")
        for offset, stream in streams.items():
            dataset.id.write_direct_chunk(offset, stream)


DAMAGED = {  # damage -> the refusal's end (the chunk at (64, 0) holds 64 x 128 = 8192 bytes)
    "corrupt": "is corrupt: its chunk at (64, 0) is not a valid gzip (deflate) stream.",
    "short": "is corrupt: its chunk at (64, 0) inflates to 8092 bytes of its 8192.",
    "one byte": "is corrupt: its chunk at (64, 0) inflates to 1 byte of its 8192.",
    "long": None,  # 100 bytes more: the library keeps the chunk's first 8192
    "bomb": "is corrupt: its chunk at (64, 0) inflates to more than 81920 bytes, over twice its 8192.",
    "cut short": "is corrupt: its chunk at (64, 0) inflates to 8192 bytes of its 8192 (the stream is cut short).",
    "bad checksum": "is corrupt: its chunk at (64, 0) is not a valid gzip (deflate) stream.",
    "trailing": None,  # bytes after the stream: ignored, as the library ignores them
}


def damaged_stream(damage, chunk):
    import zlib

    good = zlib.compress(chunk.tobytes())
    if damage == "bomb":  # 1 GiB of zeros in 1 MiB would pass the stored-size check: a 64 MiB one in 64 kB does not
        stream = zlib.compressobj(9)
        return stream.compress(bytes(6 << 20)) + stream.flush()
    return {"corrupt": good[:10] + b"\xff" * 8 + good[18:], "short": zlib.compress(chunk.tobytes()[:-100]),
            "one byte": zlib.compress(b"\0"), "long": zlib.compress(chunk.tobytes() + b"\x01" * 100),
            "cut short": good[:-4], "trailing": good + b"\x00junk", "bad checksum": good[:-4] + bytes(4)}[damage]


@pytest.mark.parametrize("dtype", [np.uint8, bool])  # uint8: the fast path; bool: the library after the check
@pytest.mark.parametrize("damage", list(DAMAGED))
def test_a_chunk_that_does_not_inflate_to_its_size_is_refused(tmp_path, damage, dtype):
    """Fewer bytes: the library left the rest of its buffer (heap memory) in the mask, a score
    that changed from run to run: refused, the same line every time. A few bytes more: the
    library keeps the chunk's first bytes, and so does this reading; far more (a bomb, which the
    library would inflate whole): refused. Bytes after a complete stream are ignored as the
    library ignores them."""
    chunk = (np.arange(64 * 128).reshape(64, 128) % 3).astype(np.uint8)
    if dtype is bool:
        chunk = chunk.astype(bool)
    path = tmp_path / "0001_pred.h5"
    write_raw_chunks(path, (128, 128), (64, 128), {(0, 0): damaged_stream("trailing", chunk),
                                                   (64, 0): damaged_stream(damage, chunk)}, dtype=dtype)
    if DAMAGED[damage] is None:
        assert ours(path, "mask").tobytes() == library_read(path, "mask").tobytes() == np.concatenate(
            [chunk, chunk]).tobytes()
        return
    for _ in range(3):
        with pytest.raises(SubmissionError) as refused:
            ours(path, "mask")
        assert str(refused.value) == f"Case 0001, mask: mask in 0001_pred.h5 {DAMAGED[damage]}"


@pytest.mark.parametrize("options",
                         [{}, {"shuffle": True}, {"fletcher32": True}, {"shuffle": True, "fletcher32": True}],
                         ids=["gzip", "shuffle", "fletcher32", "shuffle-fletcher32"])
def test_other_pipelines_check_their_chunks_too(tmp_path, options):
    """Shuffle and fletcher32 around gzip, chunks of 1 KiB (the library reads them): a chunk
    whose stream is short is refused; the same file undamaged reads as the library reads it."""
    import zlib

    data = blobs(np.random.default_rng(5), (64, 64), np.uint8)
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        dataset = handle.create_dataset("mask", data=data, chunks=(16, 64), compression="gzip", **options)
        assert dataset.chunks == (16, 64)
    assert ours(path, "mask").tobytes() == library_read(path, "mask").tobytes() == data.tobytes()
    with h5py.File(path, "a") as handle:
        stream = zlib.compress(bytes(100))
        if options.get("fletcher32"):
            stream += bytes(4)  # the checksum is the library's to check; the length is short before it
        handle["mask"].id.write_direct_chunk((16, 0), stream)
    with pytest.raises(SubmissionError, match=r"mask in 0001_pred.h5 is corrupt: its chunk at \(16, 0\) inflates "
                                              r"to 100 bytes of its 1024\.$"):
        ours(path, "mask")


@pytest.mark.parametrize("size, message", [
    (1, "is corrupt: its chunk at (0, 0) stores 1 byte of its 8192."),
    (8191, "is corrupt: its chunk at (0, 0) stores 8191 bytes of its 8192."),
    (9000, "is corrupt: its chunk at (0, 0) stores 9000 bytes, not its 8192."),
])
def test_an_unfiltered_chunk_of_another_size_is_refused(tmp_path, size, message):
    """The library reads an unfiltered chunk's size from where the chunk starts, whatever the index
    says it stores: a shorter chunk gives it the next chunk's bytes, a longer one (written over
    the next) left a file the library later aborted the process on."""
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        dataset = handle.create_dataset("mask", data=np.ones((128, 128), np.uint8), chunks=(64, 128))
        dataset.id.write_direct_chunk((0, 0), b"\x01" * size)
    for _ in range(3):
        with pytest.raises(SubmissionError) as refused:
            ours(path, "mask")
        assert str(refused.value) == f"Case 0001, mask: mask in 0001_pred.h5 {message}"


@pytest.mark.parametrize("compression", ["gzip", "lzf"])
def test_a_chunk_skipped_by_its_filter_mask_must_hold_the_chunk(tmp_path, compression):
    """A chunk stored with its filter marked skipped is read raw, its stored size checked like
    any unfiltered chunk (h5py's LZF filter stores a chunk that does not compress that way)."""
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        dataset = handle.create_dataset("mask", data=np.ones((128, 128), np.uint8), chunks=(64, 128),
                                        compression=compression)
        dataset.id.write_direct_chunk((64, 0), b"\x02" * 8192, filter_mask=1)
    assert ours(path, "mask").tobytes() == library_read(path, "mask").tobytes()
    assert (ours(path, "mask")[64:] == 2).all()
    with h5py.File(path, "a") as handle:
        handle["mask"].id.write_direct_chunk((64, 0), b"\x02" * 10, filter_mask=1)
    with pytest.raises(SubmissionError, match=r"its chunk at \(64, 0\) stores 10 bytes of its 8192\.$"):
        ours(path, "mask")


MASK = np.zeros((96, 128), np.uint8)
MASK[10:60, 5:120] = 255
MASK[30:45, 20:70] = 128


def mask_file(path, kind):
    """A 96 x 128 mask (0, 128, 255) written as `kind` stores it (tests/hostile_files.py), chunks of
    48 rows (64 columns in the latest format)."""
    with h5py.File(path, "w") as handle:
        handle.create_dataset("mask", data=MASK)
    h5_rewrite_masks(path, kind)
    return path


@pytest.mark.parametrize("kind", H5_MASK_KINDS)
def test_valid_files_of_every_kind_read_as_the_library_reads_them(tmp_path, kind):
    """Scale-offset, n-bit (values kept whole, and packed), szip, gzip before shuffle, gzip twice,
    the latest file format (an extensible-array chunk index, whose listing gives chunks at other
    places than those the library reads them from), a chunk inflating 100 bytes past its size:
    h5py reads each as the mask written, and so does this reading, byte for byte."""
    path = mask_file(tmp_path / "0001_pred.h5", kind)
    expected = library_read(path, "mask")
    assert np.array_equal(expected, MASK) and expected.dtype in (np.uint8, np.uint16)
    assert ours(path, "mask", MASK.shape).tobytes() == expected.tobytes()
    assert fast_path(path, "mask")[0] == (kind == "chunk-inflating-past-its-size")


def test_szip_is_available_in_this_h5py_build():
    """The szip cases above and in the hostile suite need h5py's HDF5 to have the filter (libaec)."""
    assert h5py.h5z.filter_avail(h5py.h5z.FILTER_SZIP)


def cut_first_chunk(path, keep):
    with h5py.File(path, "a") as handle:
        dataset = handle["mask"].id
        filter_mask, stored = dataset.read_direct_chunk((0, 0))
        dataset.write_direct_chunk((0, 0), stored[:keep], filter_mask=filter_mask)
        return len(stored)


@pytest.mark.parametrize("kind, keep, library_reads, message", [
    ("scaleoffset", 100, True, "stores 100 bytes, fewer than the 6165 its scale-offset packing of 6144 values takes."),
    ("scaleoffset", 20, True, "stores 20 bytes, fewer than the 21 of scale-offset's header."),
    ("nbit", 100, True, "stores 100 bytes of its 6144."),
    ("nbit-packed", 100, True, "stores 100 bytes, fewer than the 6144 its n-bit packing of 6144 values takes."),
    ("szip", 200, True, None),  # as many bytes as libaec decodes from 196: known when decoded
    ("szip", 3, False, "stores 3 bytes, fewer than the 4 of szip's header."),
    ("latest-format", 10, False, "inflates to 0 bytes of its 3072 (the stream is cut short)."),
])
def test_a_chunk_cut_short_is_refused_for_every_filter(tmp_path, kind, keep, library_reads, message):
    """The first chunk cut to its first bytes. The library reads the filters' packed bits without
    looking at the chunk's length (n-bit, scale-offset), or takes what libaec decodes (szip): it
    reads such a chunk without a word, with heap memory in the mask (a different array from run
    to run). Refused before it reads, like the cuts it refuses itself."""
    path = mask_file(tmp_path / "0001_pred.h5", kind)
    assert cut_first_chunk(path, keep) > keep
    if library_reads:
        library_read(path, "mask")
    else:
        with pytest.raises(OSError):
            library_read(path, "mask")
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    if message is None:
        assert re.fullmatch(r"Case 0001, mask: mask in 0001_pred\.h5 is corrupt: its chunk at \(0, 0\) inflates to "
                            r"\d+ bytes of its 6144\.", str(refused.value)), str(refused.value)
    else:
        assert str(refused.value) == f"Case 0001, mask: mask in 0001_pred.h5 is corrupt: its chunk at (0, 0) {message}"


def test_a_scaleoffset_header_claiming_more_bits_than_the_type_is_refused(tmp_path):
    """9 bits a value of a 1-byte type: the library would unpack each value past its byte (and is
    not asked to read it here)."""
    path = mask_file(tmp_path / "0001_pred.h5", "scaleoffset")
    with h5py.File(path, "a") as handle:
        dataset = handle["mask"].id
        filter_mask, stored = dataset.read_direct_chunk((0, 0))
        assert stored[:4] == struct.pack("<I", 8)
        dataset.write_direct_chunk((0, 0), struct.pack("<I", 9) + stored[4:], filter_mask=filter_mask)
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert str(refused.value) == ("Case 0001, mask: mask in 0001_pred.h5 is corrupt: its chunk at (0, 0) packs its "
                                  "values in 9 bits each, more than their 8.")


@pytest.mark.parametrize("kind, parameters, count_at, message", [
    ("nbit-packed", (8, 0, 6144, 1, 2, 0, 8, 0), 2, "unpacks to 200 bytes of its 12288."),
    ("scaleoffset", (2, 0, 6144, 0, 1, 0, 0, 1), 2, "unpacks to 100 bytes of its 6144."),
])
def test_filter_parameters_unpacking_fewer_values_than_the_chunk_are_refused(tmp_path, kind, parameters, count_at,
                                                                            message):
    """The number of values n-bit or scale-offset unpacks is a parameter of the filter, in the
    file: 100 instead of the chunk's 6144, and the library leaves the rest of the chunk's buffer
    (heap memory) in the mask."""
    path = mask_file(tmp_path / "0001_pred.h5", kind)
    content = path.read_bytes()
    written = struct.pack(f"<{len(parameters)}I", *parameters)
    assert content.count(written) == 1
    changed = list(parameters)
    changed[count_at] = 100
    path.write_bytes(content.replace(written, struct.pack(f"<{len(parameters)}I", *changed)))
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert str(refused.value) == f"Case 0001, mask: mask in 0001_pred.h5 is corrupt: its chunk at (0, 0) {message}"


def test_an_szip_header_claiming_a_bomb_is_refused(tmp_path):
    path = mask_file(tmp_path / "0001_pred.h5", "szip")
    with h5py.File(path, "a") as handle:
        dataset = handle["mask"].id
        filter_mask, stored = dataset.read_direct_chunk((0, 0))
        dataset.write_direct_chunk((0, 0), struct.pack("<I", 1 << 30) + stored[4:], filter_mask=filter_mask)
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert str(refused.value) == ("Case 0001, mask: mask in 0001_pred.h5 is corrupt: its chunk at (0, 0) inflates to "
                                  "more than 77824 bytes, over twice its 6144.")


def test_a_chunk_of_a_latest_format_file_is_named_at_its_own_place(tmp_path):
    """An extensible-array index lists the chunk at (48, 0) at (0, 128): the chunk is found where the
    library reads it, and named there."""
    path = mask_file(tmp_path / "0001_pred.h5", "latest-format")
    with h5py.File(path, "a") as handle:
        listed = []
        handle["mask"].id.chunk_iter(listed.append)
        assert (0, 128) in [tuple(info.chunk_offset) for info in listed]  # the index's listing
        handle["mask"].id.write_direct_chunk((48, 0), zlib.compress(b"\0" * 10))
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert str(refused.value) == ("Case 0001, mask: mask in 0001_pred.h5 is corrupt: its chunk at (48, 0) inflates to "
                                  "10 bytes of its 3072.")


@pytest.mark.parametrize("fill_time", ["ifset", "never"])
def test_a_latest_format_file_partly_written_reads_its_fill_value(tmp_path, fill_time):
    """Two of its four chunks never written: the fill value there, as h5py reads it; with fill time
    "never" the library writes nothing there (heap memory in h5py's array): refused."""
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w", libver="latest") as handle:
        dataset = handle.create_dataset("mask", shape=(96, 128), dtype=np.uint8, chunks=(48, 64), maxshape=(96, None),
                                        compression="gzip", fillvalue=128, fill_time=fill_time)
        dataset[48:, :64] = MASK[48:, :64]
        dataset[:48, 64:] = MASK[:48, 64:]
    if fill_time == "ifset":
        expected = library_read(path, "mask")
        assert (expected[:48, :64] == 128).all() and np.array_equal(expected[48:, :64], MASK[48:, :64])
        assert ours(path, "mask").tobytes() == expected.tobytes()
        return
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert str(refused.value) == ("Case 0001, mask: mask in 0001_pred.h5 is incomplete: part of it was never written "
                                  "and it has no fill value to read there.")


def test_a_chunk_index_with_a_bad_checksum_is_refused(tmp_path):
    """A version 2 B-tree chunk index (the latest format, two axes that can grow) with a byte of a
    leaf changed: its checksum fails, h5py raised RuntimeError on listing the chunks (exit 4 with
    a traceback); one line now, as for any corrupt data."""
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w", libver="latest") as handle:
        handle.create_dataset("mask", data=MASK, chunks=(48, 64), maxshape=(None, None), compression="gzip")
    content = bytearray(path.read_bytes())
    assert content.count(b"BTLF") == 1
    content[content.index(b"BTLF") + 30] ^= 0xFF
    path.write_bytes(bytes(content))
    with pytest.raises(OSError):
        library_read(path, "mask")
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert str(refused.value) == ("Case 0001, mask: mask in 0001_pred.h5 cannot be read (its data is corrupt or uses "
                                  "an unknown filter).")


def test_a_chunk_stored_outside_the_dataset_is_refused(tmp_path):
    """A version 1 B-tree record moved outside the dataset (tests/hostile_files.h5_chunk_outside):
    the library reads the fill value in its place and never reads it; refused as corrupt."""
    from tests.hostile_files import h5_chunk_outside

    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        handle.create_dataset("mask", data=MASK)
    h5_chunk_outside(path, "mask")
    assert (library_read(path, "mask")[48:] == 0).all()
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert str(refused.value) == ("Case 0001, mask: mask in 0001_pred.h5 is corrupt: it stores a chunk at (144, 0), "
                                  "outside its shape 96x128 or off its grid of 48x128 chunks.")


def swap_version1_chunk_records(path, first, second):
    """Two records of the dataset's version 1 B-tree chunk index (h5py's default format) swapped:
    the listing (chunk_iter) still lists every chunk, the library's lookup, which relies on the
    records' order, no longer finds some of them."""
    content = bytearray(path.read_bytes())
    at = content.index(b"TREE")
    while content[at + 4] != 1:  # node type 1: raw data chunks
        at = content.index(b"TREE", at + 1)
    used = struct.unpack("<H", content[at + 6:at + 8])[0]
    entries, size = at + 8 + 16 + 8, 32 + 8  # after the siblings, the first key; then pointer + key
    records = [bytes(content[entries + k * size - 32:entries + k * size + 8]) for k in range(used)]
    records[first], records[second] = records[second], records[first]
    for k, record in enumerate(records):
        content[entries + k * size - 32:entries + k * size + 8] = record
    path.write_bytes(bytes(content))


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_a_chunk_listed_but_not_found_by_the_library_is_refused(tmp_path, compression):
    """A chunk index whose listing and lookup disagree: the library reads no bytes of the file for
    the chunk it cannot find (zeros, or nothing at all with fill time "never"), while the file's
    bytes at the listed offset were taken for it (from one read of the span, compressed), or the
    dataset was counted as wholly written and read once. Refused now."""
    path = tmp_path / "0001_pred.h5"
    values = (np.arange(128 * 128).reshape(128, 128) % 5 + 1).astype(np.uint8)
    with h5py.File(path, "w") as handle:
        handle.create_dataset("mask", data=values, chunks=(64, 64), fill_time="never", compression=compression)
    swap_version1_chunk_records(path, 1, 2)
    with h5py.File(path, "r", locking=False) as handle:
        listed = []
        handle["mask"].id.chunk_iter(listed.append)
        assert len(listed) == 4  # every chunk still listed
    assert (library_read(path, "mask") != values).any()  # but not every chunk read from the file
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert re.fullmatch(r"Case 0001, mask: mask in 0001_pred.h5 is corrupt: its chunk index lists a chunk at "
                        r"\(\d+, \d+\) that the HDF5 library does not find there.", str(refused.value))


def test_a_filter_not_read_here_is_refused_by_its_number(tmp_path):
    """bzip2 (filter 307), which the HDF5 library here does not have: h5py cannot read the chunk
    written with it, and this reading refuses it by number before the library tries."""
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        plist.set_chunk((48, 128))
        plist.set_filter(307, h5py.h5z.FLAG_OPTIONAL)
        dataset = h5py.h5d.create(handle.id, b"mask", h5py.h5t.STD_U8LE, h5py.h5s.create_simple((96, 128)), plist)
        dataset.write(h5py.h5s.ALL, h5py.h5s.ALL, MASK)  # the filter missing: each chunk stored as it is
        handle.create_dataset("skipped", data=MASK)
    assert ours(path, "mask").tobytes() == library_read(path, "mask").tobytes() == MASK.tobytes()
    with h5py.File(path, "a") as handle:
        handle["mask"].id.write_direct_chunk((0, 0), zlib.compress(MASK[:48].tobytes()), filter_mask=0)
    with pytest.raises(OSError):
        library_read(path, "mask")
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert str(refused.value) == ("Case 0001, mask: mask in 0001_pred.h5 is compressed with the filter 307, which is "
                                  "not read here; write it with gzip or LZF compression (or another of HDF5's own "
                                  "filters) or uncompressed.")


def test_nbit_keeping_values_written_after_another_filter_is_refused(tmp_path):
    """n-bit of 8-bit values (kept as they are) written after shuffle: the library then gives its
    buffer's size as the chunk's length, which the filter run after it reads; h5py reads this
    file, but its lengths cannot be followed here: refused, naming the order to use."""
    from tests.hostile_files import _h5_low_level

    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        _h5_low_level(handle, "mask", MASK, ("shuffle", "nbit"), (48, 128))
    assert np.array_equal(library_read(path, "mask"), MASK)
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert str(refused.value) == ("Case 0001, mask: mask in 0001_pred.h5 is filtered with shuffle, then n-bit, which "
                                  "is not read here; apply n-bit first.")


def test_a_chunk_unpacked_after_nbit_packed_it_is_refused(tmp_path):
    """gzip, then n-bit packing 8 of each 16 bits: the library would inflate bytes only it knows
    (n-bit's output). No valid file is written so (HDF5's n-bit expects a chunk of whole values,
    not a stream: writing one crashed the process): the chunk is put in place as it is stored,
    and refused by the order of its filters before the library reads anything."""
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        plist.set_chunk((48, 128))
        plist.set_deflate(4)
        plist.set_filter(h5py.h5z.FILTER_NBIT)
        file_type = h5py.h5t.STD_U16LE.copy()
        file_type.set_precision(8)
        dataset = h5py.h5d.create(handle.id, b"mask", file_type, h5py.h5s.create_simple((96, 128)), plist)
        for row in (0, 48):
            dataset.write_direct_chunk((row, 0), zlib.compress(MASK[row:row + 48].tobytes()))
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert str(refused.value) == ("Case 0001, mask: mask in 0001_pred.h5 is filtered with gzip, then n-bit, which is "
                                  "not read here; apply n-bit first.")


def test_chunks_far_larger_than_the_dataset_are_refused(tmp_path):
    """A 96 x 128 mask in one chunk of 4096 x 4096: the library inflates and keeps the whole
    16 MiB chunk to read it."""
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        handle.create_dataset("mask", data=np.ones((96, 128), np.uint8), chunks=(4096, 4096), maxshape=(None, None),
                              compression="gzip")
        handle.create_dataset("fine", data=np.ones((96, 128), np.uint8), chunks=(1024, 1024), maxshape=(None, None),
                              compression="gzip")
    assert (ours(path, "fine") == 1).all()  # 1 MiB chunks: h5py's largest automatic ones
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert str(refused.value) == ("Case 0001, mask: mask in 0001_pred.h5 is stored in chunks of 4096x4096 values, far "
                                  "more than its shape 96x128 needs; write it in smaller chunks (or unchunked).")


@pytest.mark.parametrize("layout", [{"chunks": (64, 128)}, {}], ids=["chunked", "contiguous"])
def test_data_never_written_without_a_fill_value_is_refused(tmp_path, layout):
    """fill_time never: the library leaves the reader's buffer as it was where nothing was
    written (np.empty: heap memory). Refused; with a fill value (the default) it reads as that."""
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        never = handle.create_dataset("never", shape=(128, 256), dtype=np.uint8, fill_time="never", **layout)
        if layout:
            never[:64, :128] = 1
        handle.create_dataset("filled", shape=(128, 256), dtype=np.uint8, fillvalue=7, **layout)
    assert (ours(path, "filled") == 7).all()
    with pytest.raises(SubmissionError) as refused:
        ours(path, "never")
    assert str(refused.value) == ("Case 0001, mask: never in 0001_pred.h5 is incomplete: part of it was never written "
                                  "and it has no fill value to read there.")


def test_the_bomb_helper_is_a_valid_stream(tmp_path):
    """tests/hostile_files.zlib_bomb, small: it inflates to exactly the zeros it claims."""
    import zlib

    from tests.hostile_files import zlib_bomb

    assert zlib.decompress(zlib_bomb(8 << 16, block=1 << 16)) == bytes(8 << 16)


def test_the_store_of_inflated_chunks_stays_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(hdf5, "INFLATED_BYTES", 64 * 8192)
    rng = np.random.default_rng(3)
    for number in range(6):
        path = tmp_path / f"{number}.h5"
        with h5py.File(path, "w") as handle:
            handle.create_dataset("mask", data=rng.integers(0, 3, (256, 256), dtype=np.uint8), chunks=(64, 128),
                                  compression="gzip")
        assert np.array_equal(ours(path, "mask"), library_read(path, "mask"))
        assert len(hdf5._INFLATED) * 8192 <= 64 * 8192


# ---- LZF (h5py's compression="lzf"): each stream walked to its length before the library reads --


def reference_unlzf(stream: bytes) -> bytes | None:
    """The whole output of an LZF stream, unpacked byte by byte from the format's definition (a
    control byte below 32: that many + 1 literal bytes; else a back-reference of (control >> 5)
    + 2 bytes, 7 taking an extra length byte, at distance ((control & 31) << 8 | next byte) + 1);
    None where liblzf fails (a token cut short, a reference before the start)."""
    out, at = bytearray(), 0
    while at < len(stream):
        control = stream[at]
        at += 1
        if control < 32:
            if at + control + 1 > len(stream):
                return None
            out += stream[at:at + control + 1]
            at += control + 1
            continue
        length = control >> 5
        if length == 7:
            if at >= len(stream):
                return None
            length += stream[at]
            at += 1
        if at >= len(stream):
            return None
        start = len(out) - (((control & 31) << 8 | stream[at]) + 1)
        at += 1
        if start < 0:
            return None
        for i in range(length + 2):
            out.append(out[start + i])
    return bytes(out)


def lzf_chunks(path, key):
    """[(offset, filter mask, stored bytes)] of a dataset written by h5py."""
    with h5py.File(path, "r") as handle:
        dataset = handle[key].id
        infos = [dataset.get_chunk_info(i) for i in range(dataset.get_num_chunks())]
        return [(info.chunk_offset, info.filter_mask, dataset.read_direct_chunk(info.chunk_offset)[1])
                for info in infos]


def test_the_lzf_walk_gives_the_length_h5py_streams_unpack_to(tmp_path):
    """Every chunk h5py writes with compression="lzf" (masks, rising values, zeros) walks to the
    length the reference unpacks it to: its chunk's; chunks that did not compress were stored raw,
    the filter marked skipped (h5py's filter is optional), and are not walked."""
    rng = np.random.default_rng(11)
    path = tmp_path / "lzf.h5"
    arrays = {"blobs": blobs(rng, (300, 260), np.uint8), "wide": blobs(rng, (200, 200), np.int16),
              "zeros": np.zeros((256, 256), np.uint8), "ramp": np.arange(256 * 256, dtype=np.int32).reshape(256, 256),
              "noise": rng.integers(0, 256, (128, 128), dtype=np.uint8)}
    with h5py.File(path, "w") as handle:
        for key, data in arrays.items():
            handle.create_dataset(key, data=data, chunks=(64, 128), compression="lzf")
    skipped = 0
    for key, data in arrays.items():
        chunk_bytes = 64 * 128 * data.dtype.itemsize
        for offset, filter_mask, stream in lzf_chunks(path, key):
            if filter_mask:
                assert len(stream) == chunk_bytes, key
                skipped += 1
                continue
            assert len(reference_unlzf(stream)) == chunk_bytes
            assert hdf5.lzf_unpacked_length(stream, chunk_bytes) == chunk_bytes, (key, offset)
            assert hdf5.lzf_unpacked_length(stream, chunk_bytes - 1) == chunk_bytes  # past the limit: limit + 1
        assert ours(path, key).tobytes() == library_read(path, key).tobytes() == data.tobytes(), key
    assert skipped == 2  # the noise: stored raw


@pytest.mark.parametrize("seed", range(6))
def test_the_lzf_walk_agrees_with_unpacking_on_damaged_streams(tmp_path, seed):
    """Streams h5py wrote, damaged at random (bytes changed, cut, appended): the walk refuses
    exactly those the reference cannot unpack and gives the length of every other one, never
    walking past the limit."""
    rng = np.random.default_rng(seed)
    path = tmp_path / "lzf.h5"
    with h5py.File(path, "w") as handle:
        handle.create_dataset("mask", data=blobs(rng, (256, 256), np.uint8), chunks=(64, 64), compression="lzf")
    streams = [stream for _, filter_mask, stream in lzf_chunks(path, "mask") if not filter_mask]
    seen = {"refused": 0, "walked": 0}
    for _ in range(400):
        stream = bytearray(streams[int(rng.integers(len(streams)))])
        for _ in range(int(rng.integers(1, 4))):
            at = int(rng.integers(len(stream)))
            kind = rng.integers(3)
            if kind == 0:
                stream[at] = int(rng.integers(256))
            elif kind == 1:
                del stream[at:]
                stream = stream or bytearray(b"\x00")
            else:
                stream += rng.bytes(int(rng.integers(1, 5)))
        expected = reference_unlzf(bytes(stream))
        if expected is None:
            with pytest.raises(ValueError):
                hdf5.lzf_unpacked_length(bytes(stream), 1 << 20)
            seen["refused"] += 1
        else:
            assert hdf5.lzf_unpacked_length(bytes(stream), 1 << 20) == len(expected)
            limit = int(rng.integers(1, len(expected) + 1))
            assert hdf5.lzf_unpacked_length(bytes(stream), limit) == (len(expected) if len(expected) <= limit
                                                                       else limit + 1)
            seen["walked"] += 1
    assert seen["refused"] > 50 and seen["walked"] > 50, seen


@pytest.mark.parametrize("options",
                         [{}, {"shuffle": True}, {"fletcher32": True}, {"shuffle": True, "fletcher32": True}],
                         ids=["lzf", "shuffle", "fletcher32", "shuffle-fletcher32"])
@pytest.mark.parametrize("dtype", [np.uint8, bool, ">i2", np.float32])
def test_lzf_datasets_read_as_the_library_reads_them(tmp_path, options, dtype):
    """compression="lzf", alone or with shuffle and fletcher32, mask-like and incompressible
    chunks (stored raw), chunks never written (the fill value): the library's own read, whole."""
    rng = np.random.default_rng(7)
    data = blobs(rng, (200, 300), np.uint8).astype(dtype)
    data[:64, :128] = rng.integers(0, 2 if dtype is bool else 100, (64, 128)).astype(dtype)  # does not compress
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        handle.create_dataset("mask", data=data, chunks=(64, 128), compression="lzf", **options)
        partial = handle.create_dataset("partial", shape=(200, 300), dtype=dtype, chunks=(64, 128),
                                        compression="lzf", fillvalue=1, **options)
        partial[64:128, 128:256] = data[64:128, 128:256]
    for key in ("mask", "partial"):
        expected = library_read(path, key)
        assert ours(path, key, (200, 300)).tobytes() == expected.tobytes(), key
    assert library_read(path, "mask").tobytes() == data.tobytes()


def write_lzf_chunk(path, stream, dtype=np.uint8, fletcher32=False):
    """A 128 x 128 LZF dataset in chunks of 64 x 128 (8192 bytes) whose chunk at (64, 0) is the
    given bytes, written as they are (fletcher32: with the checksum HDF5's filter adds, computed
    by HDF5's own function as imagecodecs packs it)."""
    import imagecodecs

    with h5py.File(path, "w") as handle:
        dataset = handle.create_dataset("mask", data=np.ones((128, 128), dtype), chunks=(64, 128), compression="lzf",
                                        fletcher32=fletcher32)
        if fletcher32:
            stream += struct.pack("<I", imagecodecs.h5checksum_fletcher32(stream))
        dataset.id.write_direct_chunk((64, 0), stream)


LZF_DAMAGED = {  # damage -> (the stream at (64, 0), the refusal's end)
    "short": (lzf_of_value(8092), "is corrupt: its chunk at (64, 0) inflates to 8092 bytes of its 8192."),
    "one byte": (b"\x00\x01", "is corrupt: its chunk at (64, 0) inflates to 1 byte of its 8192."),
    "long": (lzf_of_value(8292), None),  # h5py's filter grows its buffer; the library keeps the first 8192 bytes
    "far too long": (lzf_of_value(8192) + b"\xe0\xff\x00" * 2000,  # 520 kB from 6 kB: within the stored bound
                     "is corrupt: its chunk at (64, 0) inflates to more than 81920 bytes, over twice its 8192."),
    "cut in a reference": (lzf_of_value(8192)[:-1],
                           "is corrupt: its chunk at (64, 0) is not a valid LZF stream (its last back-reference is "
                           "cut short)."),
    "cut in a long reference": (lzf_of_value(8191 - 264) + b"\xe0\xff",
                                "is corrupt: its chunk at (64, 0) is not a valid LZF stream (its last back-reference "
                                "is cut short)."),
    "cut in a literal run": (lzf_of_value(8000) + b"\x1f" + bytes(20),
                             "is corrupt: its chunk at (64, 0) is not a valid LZF stream (its last literal run is cut "
                             "short)."),
    "reference before the start": (b"\x00\x01\xe0\xff\x05" + lzf_of_value(8192 - 265)[2:],
                                   "is corrupt: its chunk at (64, 0) is not a valid LZF stream (a back-reference "
                                   "points 5 bytes before its start)."),
    "reference from nothing": (b"\x20\x00" + lzf_of_value(8189),
                               "is corrupt: its chunk at (64, 0) is not a valid LZF stream (a back-reference points 1 "
                               "byte before its start)."),
}


def test_the_damaged_lzf_streams_are_what_they_claim():
    assert reference_unlzf(lzf_of_value(8192)) == b"\x01" * 8192
    for damage, (stream, _) in LZF_DAMAGED.items():
        unpacked = reference_unlzf(stream)
        if damage in ("short", "one byte", "long", "far too long"):
            assert unpacked == b"\x01" * {"short": 8092, "one byte": 1, "long": 8292}.get(damage, 8192 + 2000 * 264)
        else:
            assert unpacked is None, damage


@pytest.mark.parametrize("fletcher32", [False, True], ids=["lzf", "lzf-fletcher32"])
@pytest.mark.parametrize("dtype", [np.uint8, bool])
@pytest.mark.parametrize("damage", list(LZF_DAMAGED))
def test_an_lzf_chunk_that_does_not_unpack_to_its_size_is_refused(tmp_path, damage, dtype, fletcher32):
    """Short: the library leaves the rest of the chunk's buffer (heap memory) in the mask; cut or
    referring before its start: liblzf fails; far too long: the library would unpack it whole.
    All refused before the library reads, the same line every time. A little long: h5py's
    filter grows its buffer until the stream fits and the library keeps the chunk's first
    bytes; read so here too."""
    stream, message = LZF_DAMAGED[damage]
    path = tmp_path / "0001_pred.h5"
    write_lzf_chunk(path, stream, dtype, fletcher32)
    if message is None:
        expected = np.ones((128, 128), dtype).tobytes()
        assert ours(path, "mask").tobytes() == library_read(path, "mask").tobytes() == expected
        return
    if damage not in ("short", "one byte", "far too long"):
        with pytest.raises(OSError):  # the library cannot read it either
            library_read(path, "mask")
    for _ in range(3):
        with pytest.raises(SubmissionError) as refused:
            ours(path, "mask")
        assert str(refused.value) == f"Case 0001, mask: mask in 0001_pred.h5 {message}"
    path = tmp_path / "valid" / "0001_pred.h5"  # the same file with a valid stream there reads
    path.parent.mkdir()
    write_lzf_chunk(path, lzf_of_value(8192, 2) if dtype is np.uint8 else lzf_of_value(8192), dtype, fletcher32)
    assert ours(path, "mask").tobytes() == library_read(path, "mask").tobytes()
    assert (ours(path, "mask")[64:] == (2 if dtype is np.uint8 else True)).all()


def test_an_lzf_buffer_larger_than_the_chunk_is_refused(tmp_path):
    """The LZF filter's third parameter is the buffer the library takes to unpack each chunk
    (h5py writes the chunk's size): one of 1 GiB in the file is refused before any read."""
    import struct

    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        handle.create_dataset("mask", data=np.ones((128, 128), np.uint8), chunks=(64, 128), compression="lzf")
        assert handle["mask"].id.get_create_plist().get_filter(0)[2][2] == 8192
    content = path.read_bytes()
    values = struct.pack("<3I", 4, 261, 8192)
    assert content.count(values) == 1
    path.write_bytes(content.replace(values, struct.pack("<3I", 4, 261, 1 << 30)))
    with pytest.raises(SubmissionError) as refused:
        ours(path, "mask")
    assert str(refused.value) == ("Case 0001, mask: mask in 0001_pred.h5 is corrupt: its LZF filter unpacks each chunk "
                                  "into 1073741824 bytes, more than its 8192.")


def test_two_compressions_read_as_the_library_reads_them(tmp_path):
    """Two compressions, written with the low-level interface (h5py's compression option takes
    one): the first one run by the library (the last written) unpacked here to the stream the
    second one reads; read as the library reads them."""
    data = blobs(np.random.default_rng(4), (128, 128), np.uint8)
    path = tmp_path / "0001_pred.h5"
    pairs = {"lzf_gzip": ("lzf", "gzip"), "gzip_lzf": ("gzip", "lzf"), "gzip_gzip": ("gzip", "gzip")}
    with h5py.File(path, "w") as handle:
        for key, names in pairs.items():
            plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            plist.set_chunk((64, 128))
            for name in names:  # in the order written
                if name == "gzip":
                    plist.set_deflate(4)
                else:
                    plist.set_filter(h5py.h5z.FILTER_LZF, h5py.h5z.FLAG_OPTIONAL)
            h5py.h5d.create(handle.id, key.encode(), h5py.h5t.STD_U8LE, h5py.h5s.create_simple((128, 128)), plist)
            handle[key][...] = data
    for key in pairs:
        assert not fast_path(path, key)[0]
        assert ours(path, key).tobytes() == library_read(path, key).tobytes() == data.tobytes(), key
    with h5py.File(path, "a") as handle:  # the inner stream cut short, inside a valid outer one
        handle["gzip_gzip"].id.write_direct_chunk((64, 0), zlib.compress(zlib.compress(data[64:].tobytes())[:-10]))
    with pytest.raises(SubmissionError) as refused:
        ours(path, "gzip_gzip")
    assert re.fullmatch(r"Case 0001, mask: gzip_gzip in 0001_pred\.h5 is corrupt: its chunk at \(64, 0\) inflates to "
                        r"\d+ bytes of its 8192 \(the stream is cut short\)\.", str(refused.value)), str(refused.value)


def test_the_store_of_checked_chunks_stays_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(hdf5, "CHECKED_BYTES", 4096)
    rng = np.random.default_rng(8)
    for number in range(6):
        path = tmp_path / f"{number}.h5"
        with h5py.File(path, "w") as handle:
            handle.create_dataset("mask", data=blobs(rng, (256, 256), np.uint8), chunks=(64, 128), compression="lzf")
        assert np.array_equal(ours(path, "mask"), library_read(path, "mask"))
        assert 0 < hdf5._CHECKED_SIZE[0] == sum(len(key[0]) for key in hdf5._CHECKED) <= 4096


# ---- every kind, damaged at random: read as the library reads it, or refused --------------------

LIBRARY_READ = """
import hashlib, sys
import h5py
for path in sys.argv[1:]:
    try:
        with h5py.File(path, "r") as f:
            digest = hashlib.sha1(f["mask"][()].tobytes()).hexdigest()
    except Exception:
        digest = "error"
    print(path, digest, flush=True)
"""


def library_digests(paths, perturb):
    """{path: sha1 of h5py's read, or "error", or "crashed"} in fresh processes whose glibc fills
    every allocation with the complement of `perturb` (MALLOC_PERTURB_): a read holding heap
    memory differs between two values."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, MALLOC_PERTURB_=str(perturb))
    found, left = {}, [str(p) for p in paths]
    while left:
        done = subprocess.run([sys.executable, "-c", LIBRARY_READ, *left], capture_output=True, text=True, env=env,
                              timeout=300)
        found.update(line.rsplit(" ", 1) for line in done.stdout.splitlines())
        if done.returncode != 0:  # the library crashed on the first file not listed
            crashed = next(p for p in left if p not in found)
            found[crashed] = "crashed"
        left = [p for p in left if p not in found]
    return found


def test_damaged_chunks_of_every_kind_are_read_as_the_library_reads_them_or_refused(tmp_path):
    """Every kind (gzip, LZF, shuffle and fletcher32 too), one chunk damaged at random (cut,
    bytes changed, bytes added, a tail of zeros) at a place of its grid. Whatever this reading
    accepts, h5py reads as the same bytes in two processes whose heap is filled with different
    bytes: no byte of it comes from memory the file does not define. Among those refused are
    reads that differ between the two (heap memory) and reads that crash the library."""
    import hashlib
    import random

    rng = random.Random(2026)
    kinds = (*H5_MASK_KINDS, "lzf", "gzip-shuffle-fletcher32")
    paths = []
    for number in range(120):
        kind = kinds[number % len(kinds)]
        path = tmp_path / f"{number:03d}-{kind}.h5"
        with h5py.File(path, "w") as handle:
            if kind == "lzf":
                handle.create_dataset("mask", data=MASK, chunks=(48, 128), compression="lzf")
            elif kind == "gzip-shuffle-fletcher32":
                handle.create_dataset("mask", data=MASK.astype(np.uint16), chunks=(48, 128), compression="gzip",
                                      shuffle=True, fletcher32=True)
            else:
                handle.create_dataset("mask", data=MASK)
        if kind in H5_MASK_KINDS:
            h5_rewrite_masks(path, kind)
        with h5py.File(path, "a") as handle:
            dataset = handle["mask"].id
            rows, columns = dataset.get_create_plist().get_chunk()
            place = (rng.randrange(0, 96, rows), rng.randrange(0, 128, columns))
            filter_mask, stored = dataset.read_direct_chunk(place)
            stored = bytearray(stored)
            damage = rng.choice(["cut", "change", "add", "zero tail"])
            if damage == "cut":
                stored = stored[:rng.randrange(1, len(stored))]
            elif damage == "change":
                for _ in range(rng.randint(1, 3)):
                    stored[rng.randrange(len(stored))] = rng.randrange(256)
            elif damage == "add":
                stored += bytes(rng.randrange(256) for _ in range(rng.randint(1, 50)))
            else:
                start = rng.randrange(len(stored))
                stored[start:] = bytes(len(stored) - start)
            dataset.write_direct_chunk(place, bytes(stored), filter_mask=filter_mask)
        paths.append(path)
    first, second = library_digests(paths, 17), library_digests(paths, 170)
    accepted = refused_heap = refused_crash = 0
    for path in paths:
        try:
            digest = hashlib.sha1(ours(path, "mask").tobytes()).hexdigest()
        except SubmissionError:
            refused_heap += first[str(path)] != second[str(path)]
            refused_crash += first[str(path)] == "crashed"
            continue
        accepted += 1
        assert first[str(path)] == second[str(path)] == digest, path.name
    assert accepted >= 20 and refused_heap >= 10, (accepted, refused_heap, refused_crash)
