"""CSV 2026 reads its submission and ground truth only through evaluation.reading: what a
prediction file or an algorithm output can point at or claim is refused before it is read.

- an NNNN_pred.h5 whose dataset is an external link, a virtual dataset or external raw storage
  pointing at the ground truth, a soft link, a group, text, or no dataspace;
- a class dataset of 100000 x 100000 values, a mask dataset of another shape (never read);
- an MHA or TIFF output whose header claims 60000 x 60000 pixels over a few bytes (a "bomb"),
  under a 2 GiB data limit with two workers;
- a risk class that is an integer of 400 or 5000 digits;
- the span of older predictions.json files, exact from the instants;
- NaN settings, and a ground truth whose files link elsewhere (exit 3).
"""

import calendar
import io
import re
import struct
from fractions import Fraction

import h5py
import numpy as np
import pytest

from tests.cli_runs import run_command_line
from tests.hostile_files import H5_MASK_KINDS
from tests.test_csv2026 import (  # noqa: F401 (module fixtures)
    LONG_OUT,
    RISK,
    TRANS_OUT,
    algorithm_data,
    copy_data,
    file_data,
    first_job,
    only_file,
    pred_file,
    rewrite_jobs,
)

SHAPE = (96, 128)  # the synthetic masks' shape
# RLIMIT_DATA of the subprocess runs: one decoded bomb needs 3.6 GB. Not 1 GiB: reading predictions.json
# (Origin.read_bytes) asks for a buffer of its 1 GiB bound before reading the few kB it holds.
MEMORY_LIMIT = 2 << 30


def assert_refused(run, code, message):
    assert (run.code, run.wrote_metrics) == (code, False), run.stderr
    assert run.last_error_line == message


# ---- HDF5: links, virtual datasets, external storage, non-data -------------------------------


def rewrite_prediction(path, key, make):
    """Replace dataset `key` of the prediction file by what make(handle, key) creates."""
    with h5py.File(path, "r+") as f:
        del f[key]
        make(f, key)


def external_link(truth):
    return lambda f, key: f.__setitem__(key, h5py.ExternalLink(str(truth), "long_mask"))


def virtual_dataset(truth):
    def make(f, key):
        layout = h5py.VirtualLayout(shape=SHAPE, dtype=np.uint8)
        layout[:] = h5py.VirtualSource(str(truth), "long_mask", shape=SHAPE)
        f.create_virtual_dataset(key, layout, fillvalue=0)
    return make


def external_storage(truth):
    return lambda f, key: f.create_dataset(key, shape=SHAPE, dtype=np.uint8,
                                           external=[(str(truth), 0, SHAPE[0] * SHAPE[1])])


def soft_link(f, key):
    f.create_dataset("stash", data=np.zeros(SHAPE, np.uint8))
    f[key] = h5py.SoftLink("/stash")


def group(f, key):
    f.create_group(key)


@pytest.mark.parametrize("kind, message", [
    ("external-link", "Case 0001, longitudinal mask: long_mask in 0001_pred.h5 is an external link to another file; "
                      "datasets must be stored in the file itself."),
    ("virtual", "Case 0001, longitudinal mask: long_mask in 0001_pred.h5 is a virtual dataset (mapped from other "
                "files); datasets must be stored in the file itself."),
    ("external-storage", "Case 0001, longitudinal mask: long_mask in 0001_pred.h5 keeps its data in another file "
                         "(external storage); datasets must be stored in the file itself."),
    ("soft-link", "Case 0001, longitudinal mask: long_mask in 0001_pred.h5 is a link; datasets must be stored in the "
                  "file itself."),
    ("group", "Case 0001, longitudinal mask: long_mask in 0001_pred.h5 is a group, not a dataset."),
])
def test_a_prediction_mask_pointing_elsewhere_is_refused(file_data, evaluate, tmp_path, kind, message):
    """The ground truth's own mask, reached through the prediction file, would score perfectly."""
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    truth = (ground_truth / "0001_label.h5").resolve()
    make = {"external-link": external_link(truth), "virtual": virtual_dataset(truth),
            "external-storage": external_storage(truth), "soft-link": soft_link, "group": group}[kind]
    rewrite_prediction(pred_file(input_dir), "long_mask", make)
    assert_refused(evaluate("csv2026", input_dir, ground_truth), 1, message)


def test_a_class_linked_to_the_ground_truth_is_refused(file_data, evaluate, tmp_path):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    truth = (ground_truth / "0001_label.h5").resolve()
    rewrite_prediction(pred_file(input_dir), "cls",
                       lambda f, key: f.__setitem__(key, h5py.ExternalLink(str(truth), "cls")))
    assert_refused(evaluate("csv2026", input_dir, ground_truth), 1,
                   "Case 0001, class: cls in 0001_pred.h5 is an external link to another file; datasets must be "
                   "stored in the file itself.")


@pytest.mark.parametrize("key, make, message", [
    ("trans_mask", lambda f, key: f.create_dataset(key, data=np.full(SHAPE, "x", dtype=h5py.string_dtype())),
     "Case 0001, transverse mask: trans_mask in 0001_pred.h5 holds text; numbers are expected."),
    ("cls", lambda f, key: f.create_dataset(key, data=h5py.Empty("f")),
     "Case 0001, class: cls in 0001_pred.h5 is an empty dataset (no dataspace); numbers are expected."),
    ("cls", lambda f, key: f.create_dataset(key, shape=(0,), dtype=np.uint8),
     "Case 0001, class: cls in 0001_pred.h5 must hold one value, found 0 (shape 0)."),
])
def test_datasets_that_are_not_numbers_are_refused(file_data, evaluate, tmp_path, key, make, message):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    rewrite_prediction(pred_file(input_dir), key, make)
    assert_refused(evaluate("csv2026", input_dir, ground_truth), 1, message)


# ---- sizes checked before reading: HDF5 datasets, image headers ------------------------------


def run_limited(input_dir, ground_truth, output, workers=2):
    """The command line in a subprocess whose data segment is limited to 2 GiB: a bomb that is
    decoded fails there at once instead of taking the machine's memory. (exit code, last line
    of stderr, whether metrics.json was written)"""
    run = run_command_line("csv2026", input_dir, ground_truth, output, "--workers", workers, memory_limit=MEMORY_LIMIT)
    return run.code, run.last_error_line, run.wrote_metrics


def test_the_memory_limit_leaves_a_valid_submission_alone(algorithm_data, tmp_path):
    code, last, wrote = run_limited(algorithm_data / "input", algorithm_data / "ground-truth", tmp_path / "out")
    assert (code, wrote) == (0, True), last


@pytest.mark.parametrize("key, message", [
    ("cls", "Case 0001, class: cls in 0001_pred.h5 must hold one value, found 10000000000 (shape 100000x100000)."),
    ("long_mask", "Case 0001, longitudinal mask: long_mask in 0001_pred.h5: shape 100000x100000, expected 96x128 as "
                  "in the ground truth."),
])
def test_a_huge_dataset_is_refused_unread(file_data, tmp_path, key, message):
    """10^10 values stored in a few kilobytes (chunks never written): reading them was a
    MemoryError (exit 4)."""
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    rewrite_prediction(pred_file(input_dir), key, lambda f, name: f.create_dataset(
        name, shape=(100_000, 100_000), dtype=np.uint8, chunks=(1000, 1000), compression="gzip"))
    assert pred_file(input_dir).stat().st_size < 100_000
    assert run_limited(input_dir, ground_truth, tmp_path / "out") == (1, message, False)


def mha_bomb(width, height):
    """A MetaImage header claiming width x height pixels, followed by 16 bytes."""
    return (b"ObjectType = Image\nNDims = 2\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
            + f"DimSize = {width} {height}\n".encode() + b"ElementType = MET_UCHAR\nElementDataFile = LOCAL\n"
            + b"\0" * 16)


def tiff_bomb(width, height):
    """A little-endian TIFF whose one page claims width x height 8-bit pixels in one strip,
    followed by 16 bytes."""
    entries = [(256, 4, width), (257, 4, height), (258, 3, 8), (259, 3, 1), (262, 3, 1), (273, 4, None),
               (277, 3, 1), (278, 4, height), (279, 4, width * height)]
    data_offset = 8 + 2 + 12 * len(entries) + 4
    ifd = struct.pack("<H", len(entries))
    for tag, kind, value in entries:
        value = data_offset if value is None else value
        ifd += struct.pack("<HHIHH", tag, kind, 1, value, 0) if kind == 3 else struct.pack("<HHII", tag, kind, 1, value)
    return b"II*\x00" + struct.pack("<I", 8) + ifd + struct.pack("<I", 0) + b"\0" * 16


def test_the_bombs_are_what_they_claim(tmp_path):
    """The hand-written headers are read as such by tifffile and SimpleITK (so the refusals below
    are about the size, not an unreadable file)."""
    import SimpleITK as sitk
    import tifffile

    with tifffile.TiffFile(io.BytesIO(tiff_bomb(60000, 60000))) as tiff:
        assert tiff.pages[0].shape == (60000, 60000)
    small = tiff_bomb(4, 4)[:-16] + bytes(range(16))
    assert tifffile.imread(io.BytesIO(small)).tolist() == np.arange(16).reshape(4, 4).tolist()
    path = tmp_path / "bomb.mha"
    path.write_bytes(mha_bomb(60000, 60000))
    header = sitk.ImageFileReader()
    header.SetImageIO("MetaImageIO")
    header.SetFileName(str(path))
    header.ReadImageInformation()
    assert header.GetSize() == (60000, 60000)


def replace_image(folder, name, content):
    only_file(folder).unlink()
    (folder / name).write_bytes(content)


@pytest.mark.parametrize("suffix, bomb", [(".mha", mha_bomb), (".tif", tiff_bomb)])
def test_an_image_bomb_is_refused_from_its_header(algorithm_data, tmp_path, suffix, bomb):
    """Both views of the first case claim 60000 x 60000 pixels (3.6 GB each once decoded): with two
    workers and a 2 GiB limit, the header alone is read and the case named."""
    input_dir, ground_truth = copy_data(algorithm_data, tmp_path)
    _, outputs = first_job(input_dir)
    for slug in (LONG_OUT, TRANS_OUT):
        replace_image(outputs[slug], f"bomb{suffix}", bomb(60000, 60000))
    assert run_limited(input_dir, ground_truth, tmp_path / "out") == (
        1, "Case 0001, longitudinal mask: shape 60000x60000, expected 96x128 as in the ground truth.", False)


def test_a_truncated_image_of_the_right_shape_is_refused(algorithm_data, evaluate, tmp_path):
    input_dir, ground_truth = copy_data(algorithm_data, tmp_path)
    _, outputs = first_job(input_dir)
    replace_image(outputs[TRANS_OUT], "short.tif", tiff_bomb(SHAPE[1], SHAPE[0]))
    assert_refused(evaluate("csv2026", input_dir, ground_truth), 1,
                   "Case 0001, transverse mask: short.tif cannot be decoded (its data is truncated or corrupt).")


# ---- the risk class: huge integers -----------------------------------------------------------


@pytest.mark.parametrize("text, shown", [
    ("1" * 400, "an integer of 400 digits"),
    ("9" * 5000, "an integer of 5000 digits"),
    ("-" + "1" * 400, "an integer of 400 digits"),
    ("1" * 200, "1" * 37 + "..."),
    ("1e400", "Infinity"),
    ("[0.7]", "a list of 1 item"),
], ids=["400-digits", "5000-digits", "minus-400-digits", "200-digits", "1e400", "list"])
def test_a_huge_risk_class_is_refused_naming_the_case(algorithm_data, evaluate, tmp_path, text, shown):
    input_dir, ground_truth = copy_data(algorithm_data, tmp_path)
    _, outputs = first_job(input_dir)
    outputs[RISK].write_text(text)
    assert_refused(evaluate("csv2026", input_dir, ground_truth), 1,
                   f"Case 0001, output 'plaque-risk': found {shown}; expected 0, 1, true, false or a probability of "
                   f"high risk between 0 and 1.")


# ---- timing: the span of older predictions.json, exact ---------------------------------------


_INSTANT = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)?$")


def exact_posix(text):
    """POSIX seconds of an ISO instant as a Fraction (no zone: UTC), without datetime or floats."""
    year, month, day, hour, minute, second, fraction, zone = _INSTANT.fullmatch(text).groups()
    whole = calendar.timegm((int(year), int(month), int(day), int(hour), int(minute), int(second)))
    value = whole + (Fraction(int(fraction), 10 ** len(fraction)) if fraction else 0)
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        value -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return value


def test_the_span_of_older_predictions_json_is_exact(algorithm_data, evaluate, tmp_path):
    """Nine jobs, a minute apart; the earliest start is naive (read as UTC), the latest end is
    written at +01:00. As POSIX floats the span would be 500.00001311302185 s."""
    input_dir, ground_truth = copy_data(algorithm_data, tmp_path)
    started, completed = [], []

    def legacy(n, job):
        for value in job["inputs"] + job["outputs"]:
            value["interface"] = value.pop("socket")
        del job["exec_duration"], job["invoke_duration"]
        job["started_at"] = f"2024-11-29T10:{10 + n:02d}:00.000001" + ("" if n == 0 else "Z")
        job["completed_at"] = (f"2024-11-29T11:{10 + n:02d}:20.000014+01:00" if n == 8
                               else f"2024-11-29T10:{10 + n:02d}:19.999999Z")
        started.append(job["started_at"])
        completed.append(job["completed_at"])
        return job

    rewrite_jobs(input_dir, legacy)
    exact = max(map(exact_posix, completed)) - min(map(exact_posix, started))
    assert exact == Fraction(500_000_013, 10**6)
    floats = max(float(exact_posix(t)) for t in completed) - min(float(exact_posix(t)) for t in started)
    assert floats != float(exact)  # the instants are chosen so that float timestamps are off
    run = evaluate("csv2026", input_dir, ground_truth)
    assert run.code == 0, run.stderr
    assert run.metrics["aggregates"]["processing_time_seconds"] == float(exact)
    assert run.metrics["timing"]["source"] == "span from the earliest started_at to the latest completed_at"


# ---- settings --------------------------------------------------------------------------------


@pytest.mark.parametrize("config, message", [
    ('{"nsd_tolerance_px": NaN}', "config.json: setting 'nsd_tolerance_px' is NaN; it must be a finite number."),
    ('{"nsd_tolerance_px": Infinity}', "config.json: setting 'nsd_tolerance_px' is Infinity; it must be a finite "
                                       "number."),
    ('{"baseline_time_seconds": NaN}', "config.json: setting 'baseline_time_seconds' is NaN; it must be a finite "
                                       "number."),
    ('{"baseline_time_seconds": -Infinity}', "config.json: setting 'baseline_time_seconds' is -Infinity; it must be "
                                             "a finite number."),
])
def test_a_setting_that_is_not_finite_is_the_organizers_error(file_data, evaluate, tmp_path, config, message):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    (ground_truth / "config.json").write_text(config)
    assert_refused(evaluate("csv2026", input_dir, ground_truth), 3,
                   f"The evaluation could not run, through no fault of the submission: {message} (please tell the "
                   f"challenge organizers).")


# ---- the ground truth, read through the same layer (exit 3) ----------------------------------


def organizers(message):
    return (f"The evaluation could not run, through no fault of the submission: {message} (please tell the challenge "
            f"organizers).")


def test_a_ground_truth_mask_linked_elsewhere_is_refused(file_data, evaluate, tmp_path):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    elsewhere = tmp_path / "elsewhere.h5"
    with h5py.File(ground_truth / "0001_label.h5", "r+") as f:
        with h5py.File(elsewhere, "w") as other:
            other["long_mask"] = f["long_mask"][()]
        del f["long_mask"]
        f["long_mask"] = h5py.ExternalLink(str(elsewhere), "long_mask")
    assert_refused(evaluate("csv2026", input_dir, ground_truth), 3, organizers(
        "Ground truth: long_mask in 0001_label.h5 is an external link to another file; datasets must be stored in "
        "the file itself."))


@pytest.mark.parametrize("change, message", [
    ("not-hdf5", "Ground truth: 0001_label.h5 is not a readable HDF5 file."),
    ("huge-cls", "Ground truth 0001_label.h5 has no single-valued dataset cls."),
    ("text-cls", "Ground truth: cls in 0001_label.h5 holds text; numbers are expected."),
    ("group-mask", "Ground truth: trans_mask in 0001_label.h5 is a group, not a dataset."),
])
def test_bad_ground_truth_files_are_the_organizers_error(file_data, evaluate, tmp_path, change, message):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    path = ground_truth / "0001_label.h5"
    if change == "not-hdf5":
        path.write_bytes(b"not hdf5")
    else:
        with h5py.File(path, "r+") as f:
            if change == "group-mask":
                del f["trans_mask"]
                f.create_group("trans_mask")
            else:
                del f["cls"]
                if change == "huge-cls":
                    f.create_dataset("cls", shape=(100_000, 100_000), dtype=np.uint8, chunks=(1000, 1000))
                else:
                    f["cls"] = "1"
    assert_refused(evaluate("csv2026", input_dir, ground_truth), 3, organizers(message))


# ---- chunks that do not unpack to what they hold: heap memory, bombs -------------------------


def bool_mask_with_short_chunk(path):
    """long_mask as a bool mask in gzip chunks of 48 x 128, its first chunk a stream of 1 byte:
    the library filled the other 6143 bytes of the chunk with heap memory, a mask that scored
    differently on every run."""
    import zlib

    with h5py.File(path, "r+") as f:
        data = f["long_mask"][()]
        del f["long_mask"]
        dataset = f.create_dataset("long_mask", data=data == 255, chunks=(48, 128), compression="gzip")
        dataset.id.write_direct_chunk((0, 0), zlib.compress(b"\0"))


def test_a_mask_chunk_inflating_short_is_refused_the_same_way_every_run(file_data, tmp_path):
    input_dir, ground_truth = copy_data(file_data, tmp_path)
    bool_mask_with_short_chunk(pred_file(input_dir))
    runs = [run_command_line("csv2026", input_dir, ground_truth, tmp_path / f"out-{n}", "--workers", 1)
            for n in range(3)]
    for run in runs:
        assert_refused(run, 1, "Case 0001, longitudinal mask: long_mask in 0001_pred.h5 is corrupt: its chunk at "
                               "(0, 0) inflates to 1 byte of its 6144.")
    assert runs[0].stderr == runs[1].stderr == runs[2].stderr


@pytest.mark.parametrize("filtered", [True, False], ids=["gzip", "unfiltered"])
def test_a_ground_truth_chunk_that_is_short_is_the_organizers_error(file_data, evaluate, tmp_path, filtered):
    import zlib

    input_dir, ground_truth = copy_data(file_data, tmp_path)
    with h5py.File(ground_truth / "0001_label.h5", "r+") as f:
        data = f["trans_mask"][()]
        del f["trans_mask"]
        dataset = f.create_dataset("trans_mask", data=data, chunks=(48, 128), compression="gzip" if filtered else None)
        dataset.id.write_direct_chunk((48, 0), zlib.compress(b"\0" * 10) if filtered else b"\0" * 10)
    for _ in range(2):
        assert_refused(evaluate("csv2026", input_dir, ground_truth), 3, organizers(
            f"Ground truth: trans_mask in 0001_label.h5 is corrupt: its chunk at (48, 0) "
            f"{'inflates to' if filtered else 'stores'} 10 bytes of its 6144."))


def peak_run(input_dir, ground_truth, output, limit):
    """The command line (one worker) in a child of a small Python process, under RLIMIT_DATA
    `limit`: (exit code, last stderr line, peak resident MiB of the command, from the
    parent's RUSAGE_CHILDREN: only that command is its child)."""
    import subprocess
    import sys

    from tests.cli_runs import ROOT

    wrapper = ("import resource, subprocess, sys\n"
               "limit = int(sys.argv[1])\n"
               "done = subprocess.run(sys.argv[2:], capture_output=True, text=True,\n"
               "                      preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_DATA, (limit, limit)))\n"
               "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
               "sys.stderr.write(done.stderr)\n")
    done = subprocess.run([sys.executable, "-c", wrapper, str(limit), sys.executable, "-m", "evaluation", "csv2026",
                           "--input", str(input_dir), "--ground-truth", str(ground_truth), "--output", str(output),
                           "--workers", "1"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})
    code, peak_kib = map(int, done.stdout.split())
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return code, lines[-1] if lines else "", peak_kib / 1024


@pytest.mark.parametrize("side", ["submission", "ground truth"])
def test_a_3_gib_chunk_bomb_is_refused_within_the_memory_of_a_valid_run(file_data, tmp_path, side):
    """A 6 KiB chunk whose stream (3 MiB, built without compressing 3 GiB) inflates to 3 GiB: the
    library inflated it whole (812 MiB peak under a 1.5 GiB limit). Refused from its stored size,
    with the peak resident memory of a valid run (plus 100 MiB), under a 1.5 GiB limit."""
    from tests.hostile_files import h5_write_chunk, zlib_bomb

    input_dir, ground_truth = copy_data(file_data, tmp_path)
    code, _, valid_peak = peak_run(input_dir, ground_truth, tmp_path / "valid", int(1.5 * 2**30))
    assert code == 0
    path = pred_file(input_dir) if side == "submission" else ground_truth / "0001_label.h5"
    h5_write_chunk(path, "long_mask", zlib_bomb(3 << 30))
    assert 2 << 20 < path.stat().st_size < 4 << 20  # 3 GiB / 1,030: zlib's best ratio
    code, last, peak = peak_run(input_dir, ground_truth, tmp_path / "bomb", int(1.5 * 2**30))
    message = "long_mask in 0001_{}.h5 is corrupt: its chunk at (0, 0) stores {} bytes, more than any compression of " \
              "its 6144 bytes takes."
    with h5py.File(path, "r") as f:
        stored = f["long_mask"].id.get_chunk_info_by_coord((0, 0)).size
    if side == "submission":
        assert (code, last) == (1, "Case 0001, longitudinal mask: " + message.format("pred", stored))
    else:
        assert (code, last) == (3, organizers("Ground truth: " + message.format("label", stored)))
    assert not (tmp_path / "bomb" / "metrics.json").exists()
    assert peak < valid_peak + 100, (peak, valid_peak)


# ---- LZF (h5py's compression="lzf"): scored as the official h5py reading scores it -------------


@pytest.mark.parametrize("side", ["submission", "ground truth", "both"])
def test_lzf_masks_score_exactly_as_gzip_and_uncompressed_ones(file_data, tmp_path, side):
    """Every mask rewritten by h5py with compression="lzf", with gzip and uncompressed: the same
    metrics.json, byte for byte (the official scorer reads them all with h5py)."""
    from tests.hostile_files import h5_recompress

    written = {}
    for compression in ("lzf", "gzip", None):
        input_dir, ground_truth = copy_data(file_data, tmp_path / str(compression))
        files = ([] if side == "ground truth" else sorted(input_dir.rglob("*.h5"))) + \
            ([] if side == "submission" else sorted(ground_truth.glob("*.h5")))
        for path in files:
            h5_recompress(path, compression)
        with h5py.File(files[0], "r") as f:
            assert f["long_mask" if "long_mask" in f else "pred_long"].compression == compression
        run = run_command_line("csv2026", input_dir, ground_truth, tmp_path / f"out-{compression}", "--workers", 1)
        assert run.code == 0, run.stderr
        written[compression] = (run.output / "metrics.json").read_bytes()
    assert written["lzf"] == written["gzip"] == written[None]


@pytest.mark.parametrize("side", ["submission", "ground truth"])
@pytest.mark.parametrize("stream, end", [
    (b"\x00\x00" + b"\xe0\xff", "is not a valid LZF stream (its last back-reference is cut short)."),
    (b"\x00\x00\xe0\xff\x00", "inflates to 265 bytes of its 6144."),
    (b"\x00\x00" + b"\xe0\xff\x00" * 300, "inflates to more than 77824 bytes, over twice its 6144."),
    (b"\x00\x00\xe0\xff\x01", "is not a valid LZF stream (a back-reference points 1 byte before its start)."),
], ids=["truncated", "short", "long", "bad-back-reference"])
def test_a_damaged_lzf_chunk_is_refused_the_same_way_every_run(file_data, tmp_path, side, stream, end):
    """A mask written by h5py with compression="lzf", its first chunk (48 x 128) replaced by a
    damaged stream: exit 1 in a submission, 3 in the ground truth, the same line every run."""
    from tests.hostile_files import h5_write_chunk

    input_dir, ground_truth = copy_data(file_data, tmp_path)
    path = pred_file(input_dir) if side == "submission" else ground_truth / "0001_label.h5"
    h5_write_chunk(path, "long_mask", stream, compression="lzf")
    name = "0001_pred.h5" if side == "submission" else "0001_label.h5"
    message = f"long_mask in {name} is corrupt: its chunk at (0, 0) {end}"
    runs = [run_command_line("csv2026", input_dir, ground_truth, tmp_path / f"out-{n}", "--workers", 1)
            for n in range(2)]
    for run in runs:
        if side == "submission":
            assert_refused(run, 1, "Case 0001, longitudinal mask: " + message)
        else:
            assert_refused(run, 3, organizers("Ground truth: " + message))
    assert runs[0].stderr == runs[1].stderr


# ---- valid files of HDF5's other kinds: scored as the official h5py reading scores them --------


@pytest.mark.parametrize("side", ["submission", "ground truth"])
@pytest.mark.parametrize("kind", H5_MASK_KINDS)
def test_masks_of_every_kind_score_as_h5py_reads_them(file_data, tmp_path, side, kind):
    """Every mask of the submission (or of the ground truth) rewritten as `kind` stores it
    (scale-offset, n-bit, szip, gzip before shuffle, gzip twice, the latest file format, a chunk
    inflating past its size: tests/hostile_files.H5_MASK_KINDS). h5py's reading, the official
    one, reads every mask as the values written; the command's metrics.json is then that of the
    unchanged files, byte for byte."""
    from tests.hostile_files import h5_rewrite_masks

    written = {}
    for variant in ("gzip", kind):
        input_dir, ground_truth = copy_data(file_data, tmp_path / variant)
        if variant == kind:
            files = sorted(input_dir.rglob("*.h5")) if side == "submission" else sorted(ground_truth.glob("*.h5"))
            for path in files:
                with h5py.File(path, "r") as f:
                    before = {name: f[name][()] for name in f}
                h5_rewrite_masks(path, kind)
                with h5py.File(path, "r") as f:  # the official reading: the same values
                    assert set(f) == set(before)
                    for name, value in before.items():
                        assert np.array_equal(f[name][()], value), (path.name, name)
        run = run_command_line("csv2026", input_dir, ground_truth, tmp_path / f"out-{variant}", "--workers", 1)
        assert run.code == 0, run.stderr
        written[variant] = (run.output / "metrics.json").read_bytes()
    assert written[kind] == written["gzip"]
