"""evaluation.reading.hdf5 reads a deflate-only chunked 2D dataset chunk by chunk (each distinct
stored chunk inflated once, the chunks read in one span of the file): whatever it returns must be
what h5py's own reader returns for the same file, and anything unusual must go to that reader,
after every stored chunk is checked to unpack to exactly its size (the library leaves heap memory
where a chunk inflates short and inflates a bomb whole). Every expectation below is h5py's read
of the file, written by h5py on disk, or the refusal."""

import h5py
import numpy as np
import pytest

from evaluation.errors import SubmissionError
from evaluation.reading import hdf5
from evaluation.reading.files import Origin
from evaluation.reading.hdf5 import open_hdf5, read_deflated_chunks


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
        return read_deflated_chunks(dataset.handle, dataset.create, out), out


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
    "long": "is corrupt: its chunk at (64, 0) inflates to more than its 8192 bytes.",
    "bomb": "is corrupt: its chunk at (64, 0) inflates to more than its 8192 bytes.",
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
    that changed from run to run; more: it inflated the whole stream. Both refused, the same
    line every time; bytes after a complete stream are ignored as the library ignores them."""
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


@pytest.mark.parametrize("options", [{}, {"shuffle": True}, {"fletcher32": True}, {"shuffle": True, "fletcher32": True}],
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
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        dataset = handle.create_dataset("mask", data=np.ones((128, 128), np.uint8), chunks=(64, 128))
        dataset.id.write_direct_chunk((0, 0), b"\x01" * size)
    for _ in range(3):
        with pytest.raises(SubmissionError) as refused:
            ours(path, "mask")
        assert str(refused.value) == f"Case 0001, mask: mask in 0001_pred.h5 {message}"


def test_a_gzip_chunk_skipped_by_its_filter_mask_must_hold_the_chunk(tmp_path):
    """A chunk stored with its filter marked skipped is read raw: its stored size is checked."""
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        dataset = handle.create_dataset("mask", data=np.ones((128, 128), np.uint8), chunks=(64, 128),
                                        compression="gzip")
        dataset.id.write_direct_chunk((64, 0), b"\x02" * 8192, filter_mask=1)
    assert ours(path, "mask").tobytes() == library_read(path, "mask").tobytes()
    assert (ours(path, "mask")[64:] == 2).all()
    with h5py.File(path, "a") as handle:
        handle["mask"].id.write_direct_chunk((64, 0), b"\x02" * 10, filter_mask=1)
    with pytest.raises(SubmissionError, match=r"its chunk at \(64, 0\) stores 10 bytes of its 8192\.$"):
        ours(path, "mask")


def test_other_filters_are_refused_with_their_name(tmp_path):
    """LZF and scale-offset cannot be checked here (their output length is the library's to
    trust): refused, naming the filter and what to use instead."""
    path = tmp_path / "0001_pred.h5"
    with h5py.File(path, "w") as handle:
        handle.create_dataset("lzf", data=np.ones((128, 128), np.uint8), chunks=(64, 128), compression="lzf")
        handle.create_dataset("scaled", data=np.ones((128, 128), np.uint8), chunks=(64, 128), scaleoffset=0)
    for key, name in (("lzf", "LZF"), ("scaled", "scale-offset")):
        with pytest.raises(SubmissionError) as refused:
            ours(path, key)
        assert str(refused.value) == (f"Case 0001, mask: {key} in 0001_pred.h5 is compressed with the {name} filter, "
                                      f"which is not read here; write it with gzip compression (with or without "
                                      f"shuffle and fletcher32) or uncompressed.")


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
