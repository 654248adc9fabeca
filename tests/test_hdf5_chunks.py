"""evaluation.reading.hdf5 reads a deflate-only chunked 2D dataset chunk by chunk (each distinct
stored chunk inflated once, the chunks read in one span of the file): whatever it returns must be
what h5py's own reader returns for the same file, and anything unusual must go to that reader.
Every expectation below is h5py's read of the file, written by h5py on disk."""

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


@pytest.mark.parametrize("damage", ["corrupt", "short", "long", "trailing", "bad checksum"])
def test_damaged_chunks_read_as_the_library_reads_them_or_fail_as_it_does(tmp_path, damage):
    import zlib

    chunk = np.arange(64 * 128, dtype=np.uint8).reshape(64, 128) % 3
    good = zlib.compress(chunk.tobytes())
    bad = {"corrupt": good[:10] + b"\xff" * 8 + good[18:], "short": zlib.compress(chunk.tobytes()[:-100]),
           "long": zlib.compress(chunk.tobytes() + b"\x01" * 100), "trailing": good + b"\x00junk",
           "bad checksum": good[:-4] + bytes(4)}[damage]
    path = tmp_path / "0001_pred.h5"
    write_raw_chunks(path, (128, 128), (64, 128), {(0, 0): good, (64, 0): bad})
    try:
        expected = library_read(path, "mask")
    except OSError:
        expected = None
    assert not fast_path(path, "mask")[0]
    if expected is None:
        with pytest.raises(SubmissionError, match=r"mask in 0001_pred.h5 cannot be read \(its data is corrupt"):
            ours(path, "mask")
    elif damage == "short":  # the library fills the chunk's last 100 bytes with whatever its buffer held
        read = ours(path, "mask")
        assert np.array_equal(read[:64], chunk) and read[64:].tobytes()[:-100] == chunk.tobytes()[:-100]
    else:
        assert ours(path, "mask").tobytes() == expected.tobytes()


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
