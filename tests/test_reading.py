"""The reading layer (evaluation/reading), with real hostile files on disk: whatever a submission
holds, it is read only if it is a regular file inside its folder, never through a format's own
indirection, never decoded before its header is checked, and every problem is one sentence of
the right error type (the submission's: exit 1; the ground truth's or the platform's: exit 3)."""

from __future__ import annotations

import gzip
import json
import math
import os
import stat
import struct
import zlib
from pathlib import Path

import h5py
import numpy as np
import pytest
import SimpleITK as sitk

from evaluation.errors import SetupError, SubmissionError
from evaluation.reading.files import Origin
from evaluation.reading.hdf5 import open_hdf5
from evaluation.reading.images import Geometry, open_image, read_image
from evaluation.reading.json_files import parse_json, read_json
from evaluation.reading.tables import bytes_for_rows, read_csv_records, read_csv_rows
from evaluation.reading.values import HugeNumber, finite_number, finite_numbers, shown

SECRET = "API_TOKEN=hunter2-do-not-show"


@pytest.fixture
def layout(tmp_path):
    """input/ (the submission), ground-truth/ and a secret file outside both."""
    inp, truth = tmp_path / "input", tmp_path / "ground-truth"
    inp.mkdir()
    truth.mkdir()
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    return inp, truth, tmp_path / "secret.txt"


def message(excinfo) -> str:
    text = str(excinfo.value)
    assert "\n" not in text and "hunter2" not in text
    return text


# ---- files ------------------------------------------------------------------------------------


@pytest.mark.parametrize("part, words", [
    ("../x.json", "leaves the input folder"), ("/etc/passwd", "leaves the input folder"),
    ("a\\b.json", "leaves the input folder"), ("x\x00y.json", "holds a NUL character"),
    ("n" * 5000, "longer than a file name may be"), ("\udc80bad", "is not valid text"), ("", "empty or not text"),
])
def test_names_that_are_not_plain_relative_paths_are_refused(layout, part, words):
    inp, _, _ = layout
    with pytest.raises(SubmissionError) as excinfo:
        Origin.submission(inp).path("pk", part, what="Case c, output 'x'")
    assert message(excinfo).startswith("Case c, output 'x': ") and words in message(excinfo)
    with pytest.raises(SetupError):  # the same name in predictions.json is the platform's
        Origin.platform(inp).path("pk", part, what="Case c, output 'x'")


def test_a_link_out_is_refused_without_naming_its_target(layout):
    inp, _, secret = layout
    (inp / "predictions.csv").symlink_to(secret)
    origin = Origin.submission(inp)
    with pytest.raises(SubmissionError) as excinfo:
        origin.read_bytes(inp / "predictions.csv", "The predictions file", 1000)
    assert message(excinfo) == ("The predictions file: predictions.csv is a link that leads out of the input "
                                "folder.")
    assert "secret" not in message(excinfo)


def test_a_link_inside_is_followed(layout):
    inp, _, _ = layout
    (inp / "real.json").write_text("[1]")
    (inp / "link.json").symlink_to("real.json")
    assert read_json(Origin.submission(inp), inp / "link.json", "x") == [1]


def test_pipes_folders_and_missing_files_are_refused_unread(layout):
    inp, _, _ = layout
    os.mkfifo(inp / "pipe.csv")  # reading it would block forever
    (inp / "folder.csv").mkdir()
    origin = Origin.submission(inp)
    cases = {"pipe.csv": "x: pipe.csv is not a regular file.", "folder.csv": "x: folder.csv is a folder, not a file.",
             "none.csv": "x: the file none.csv is missing."}
    for name, expected in cases.items():
        with pytest.raises(SubmissionError) as excinfo:
            origin.read_bytes(inp / name, "x", 100)
        assert message(excinfo) == expected


def test_size_is_checked_before_reading(layout):
    inp, _, _ = layout
    with open(inp / "big.json", "wb") as handle:  # sparse: 5 GB claimed, nothing written
        handle.truncate(5 << 30)
    with pytest.raises(SubmissionError) as excinfo:
        Origin.submission(inp).read_bytes(inp / "big.json", "Stack s", 1 << 20)
    assert message(excinfo) == "Stack s: big.json has 5120.0 MiB, more than the 1.0 MiB allowed."


def test_the_ground_truths_problems_are_the_organizers(layout):
    _, truth, _ = layout
    with pytest.raises(SetupError):
        Origin.ground_truth(truth).read_bytes(truth / "none.json", "Ground truth", 10)


def test_listing_refuses_links_out_and_skips_debris(layout):
    inp, _, secret = layout
    (inp / "a").mkdir()
    (inp / "a" / "1.csv").write_text("1")
    (inp / "__MACOSX").mkdir()
    (inp / "__MACOSX" / "junk").write_text("x")
    (inp / ".hidden").write_text("x")
    origin = Origin.submission(inp)
    assert [p.name for p in origin.list_files()] == ["1.csv"]
    (inp / "b").symlink_to(secret.parent)  # a folder link leading out
    with pytest.raises(SubmissionError, match="is a link that leads out of the input folder"):
        origin.list_files()


# ---- JSON ----------------------------------------------------------------------------------------


def test_json_keeps_huge_integers_as_text_and_reads_the_rest():
    document = parse_json('{"a": [1, 2.5, NaN, -Infinity], "b": ' + "9" * 400 + ', "c": -' + "1" * 5000 + "}")
    assert document["a"][:2] == [1, 2.5] and math.isnan(document["a"][2]) and document["a"][3] == -math.inf
    assert document["b"] == HugeNumber("9" * 400) and isinstance(document["c"], HugeNumber)
    assert shown(document["b"]) == "an integer of 400 digits" and shown(document["c"]) == "an integer of 5000 digits"
    assert parse_json("\ufeff[1]") == [1]  # a byte-order mark


@pytest.mark.parametrize("content, expected", [
    (b'{"a": 1, "a": 2}', "x: f.json gives the key \"a\" twice in one object."),
    (b"[" * 100_000 + b"]" * 100_000, "x: f.json is nested too deeply to be read."),
    (b"[1, 2", "x: f.json is not valid JSON (Expecting ',' delimiter at line 1 column 6)."),
    (b"", "x: f.json is not valid JSON (Expecting value at line 1 column 1)."),
    (b"\xff\xfe[1]", "x: f.json is not UTF-8 text (byte 1 cannot be decoded)."),
])
def test_json_problems_are_one_sentence(layout, content, expected):
    inp, _, _ = layout
    (inp / "f.json").write_bytes(content)
    with pytest.raises(SubmissionError) as excinfo:
        read_json(Origin.submission(inp), inp / "f.json", "x")
    assert message(excinfo) == expected


# ---- values --------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, text", [
    ("0.5", '"0.5"'), (True, "true"), (None, "null"), (math.nan, "NaN"), (math.inf, "Infinity"),
    ([1, 2], "a list of 2 items"), ({"a": 1}, "an object with 1 key"), ("x" * 100, '"' + "x" * 36 + "..."),
    ("line\nbreak", '"line\\nbreak"'), (np.float32(0.25), "0.25"), (b"\xffab", '"\\ufffdab"'),
])
def test_shown_quotes_a_value_as_written_on_one_line(value, text):
    assert shown(value) == text


def test_finite_number_and_numbers():
    assert finite_number(3, "v") == 3.0
    for bad, text in [(True, "true"), ("1", '"1"'), (math.nan, "NaN"),
                      (HugeNumber("9" * 400), "an integer of 400 digits"), (10 ** 400, None)]:
        with pytest.raises(SubmissionError) as excinfo:
            finite_number(bad, "Patient P: the output 'rfs'")
        if text:
            assert message(excinfo) == f"Patient P: the output 'rfs' is {text}; it must be a finite number."
    with pytest.raises(SubmissionError, match=r"is 1.5; it must be a number between 0 and 1\.$"):
        finite_number(1.5, "p", minimum=0, maximum=1)
    assert finite_numbers([0, 0.5, 1], 3, "Stack s", "likelihood").tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(SubmissionError) as excinfo:
        finite_numbers([0, HugeNumber("1" * 401)], 2, "Stack s", "likelihood")
    assert message(excinfo) == ("Stack s: the likelihood at index 1 is an integer of 401 digits; every likelihood must "
                                "be a finite number.")
    with pytest.raises(SetupError, match="expected 3 likelihoods, found 2"):
        finite_numbers([0, 1], 3, "Stack s", "likelihood", error=SetupError)


# ---- CSV -----------------------------------------------------------------------------------------


def test_csv_with_bom_crlf_and_quotes(layout):
    inp, _, _ = layout
    (inp / "p.csv").write_bytes(b'\xef\xbb\xbfPatientID,Prediction\r\n"P-1"," 0.5"\r\n\r\nP-2,1\r\n')
    records = read_csv_records(Origin.submission(inp), inp / "p.csv", "The predictions file",
                               ("PatientID", "Prediction"), bytes_for_rows(2), max_rows=2)
    assert records == [(2, {"PatientID": "P-1", "Prediction": "0.5"}), (4, {"PatientID": "P-2", "Prediction": "1"})]


def test_csv_separated_by_semicolons_gets_a_hint(layout):
    inp, _, _ = layout
    (inp / "p.csv").write_text("PatientID;Prediction\nP-1;0.5\n")
    with pytest.raises(SubmissionError) as excinfo:
        read_csv_records(Origin.submission(inp), inp / "p.csv", "The predictions file", ("PatientID", "Prediction"),
                         bytes_for_rows(2))
    assert message(excinfo).endswith("It looks separated by semicolons or tabs; separate values with commas.")


def test_csv_rows_are_bounded_before_parsing(layout):
    inp, _, _ = layout
    (inp / "p.csv").write_bytes(b"a,b\n" + b"1,2\n" * 20_000)
    with pytest.raises(SubmissionError) as excinfo:
        read_csv_rows(Origin.submission(inp), inp / "p.csv", "x", bytes_for_rows(100_000), max_rows=10)
    assert message(excinfo) == "x: p.csv has 20001 lines; at most 10 rows are expected."
    with pytest.raises(SubmissionError) as excinfo:
        read_csv_rows(Origin.submission(inp), inp / "p.csv", "x", 1000)
    assert message(excinfo) == "x: p.csv has 80004 bytes, more than the 1000 bytes allowed."


# ---- images --------------------------------------------------------------------------------------


def write_image(path: Path, array: np.ndarray, compress=True) -> None:
    sitk.WriteImage(sitk.GetImageFromArray(array), str(path), compress)


def mha_header(size, data_file="LOCAL", element="MET_UCHAR") -> bytes:
    dims = len(size)
    return ("ObjectType = Image\nNDims = {}\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
            "DimSize = {}\nElementType = {}\nElementDataFile = {}\n").format(
        dims, " ".join(map(str, size)), element, data_file).encode()


@pytest.mark.parametrize("name", ["m.nii.gz", "m.nii", "m.mha", "m.nrrd", "m.tif", "m.png"])
def test_images_keep_pixels_and_geometry(layout, name):
    inp, _, _ = layout
    array = np.arange(12, dtype=np.uint8).reshape(3, 4)
    write_image(inp / name, array, compress=not name.endswith(".png"))
    image = open_image(Origin.submission(inp), inp / name, "Case c")
    assert image.shape == (3, 4) and image.components == 1
    assert np.array_equal(image.read((3, 4)), array)


def test_geometry_compare_and_describe():
    g = Geometry((5, 4, 3), (1.0, 1.0, 3.0), (0.0, 0.0, 0.0), (1, 0, 0, 0, 1, 0, 0, 0, 1))
    assert g.shape == (3, 4, 5) and g.voxel_volume == 3.0
    other = Geometry((5, 4, 3), (1.0, 1.0, 3.001), (0.0, 0.0, 0.0), (1, 0, 0, 0, 1, 0, 0, 0, 1))
    assert g.differences(other) == ["spacing"] and g.differences(g) == []
    assert g.describe().startswith("size (5, 4, 3), spacing (1, 1, 3)")


@pytest.mark.parametrize("data_file, expected", [
    ("{secret}", "keeps its pixels in another file (ElementDataFile)"),
    ("/etc/passwd", "keeps its pixels in another file (ElementDataFile)"),
    ("../secret.txt", "keeps its pixels in another file (ElementDataFile)"),
])
def test_mha_pointing_elsewhere_is_refused_before_reading(layout, data_file, expected):
    inp, _, secret = layout
    (inp / "seg.mha").write_bytes(mha_header((4, 4), data_file.format(secret=secret)))
    with pytest.raises(SubmissionError) as excinfo:
        open_image(Origin.submission(inp), inp / "seg.mha", "Patient P, segmentation")
    assert expected in message(excinfo) and str(secret) not in message(excinfo)


def test_mhd_reads_a_plain_file_next_to_it_and_nothing_else(layout):
    inp, _, secret = layout
    (inp / "seg.raw").write_bytes(bytes(range(16)))
    (inp / "seg.mhd").write_bytes(mha_header((4, 4), "seg.raw"))
    assert open_image(Origin.submission(inp), inp / "seg.mhd", "x").read((4, 4)).ravel().tolist() == list(range(16))
    for bad in ("../secret.txt", str(secret), "LIST", "seg_%03d.raw"):
        (inp / "bad.mhd").write_bytes(mha_header((4, 4), bad))
        with pytest.raises(SubmissionError) as excinfo:
            open_image(Origin.submission(inp), inp / "bad.mhd", "x")
        assert "names its pixel file in a way we do not follow" in message(excinfo)
    (inp / "out.raw").symlink_to(secret)
    (inp / "out.mhd").write_bytes(mha_header((4, 4), "out.raw"))
    with pytest.raises(SubmissionError, match="is a link that leads out of the input folder"):
        open_image(Origin.submission(inp), inp / "out.mhd", "x")


def test_nrrd_with_detached_data_is_refused(layout):
    inp, _, secret = layout
    header = f"NRRD0004\ntype: uint8\ndimension: 2\nsizes: 4 4\nencoding: raw\ndata file: {secret}\n\n"
    (inp / "seg.nrrd").write_text(header)
    with pytest.raises(SubmissionError) as excinfo:
        open_image(Origin.submission(inp), inp / "seg.nrrd", "x")
    assert "detached NRRD 'data file'" in message(excinfo)


def test_two_file_nifti_is_refused(layout):
    inp, _, _ = layout
    sitk.WriteImage(sitk.GetImageFromArray(np.zeros((2, 3, 4), np.uint8)), str(inp / "pair.hdr"))
    (inp / "pair.nii").write_bytes((inp / "pair.hdr").read_bytes())
    with pytest.raises(SubmissionError, match="two-file NIfTI"):
        open_image(Origin.submission(inp), inp / "pair.nii", "x")


def tiff_header_claiming(width: int, height: int) -> bytes:
    """A little-endian TIFF whose one page claims width x height 8-bit pixels, with 8 bytes of data."""
    entries = [(256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1),
               (273, 4, 1, 8 + 2 + 12 * 9 + 4), (277, 3, 1, 1), (278, 4, 1, height), (279, 4, 1, width * height)]
    ifd = struct.pack("<H", len(entries)) + b"".join(struct.pack("<HHII", *e) for e in entries) + struct.pack("<I", 0)
    return b"II*\x00" + struct.pack("<I", 8) + ifd + bytes(8)


def png_claiming(width: int, height: int) -> bytes:
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 16))
            + chunk(b"IEND", b""))


@pytest.mark.parametrize("name, content", [
    ("bomb.mha", mha_header((60000, 60000)) + bytes(16)),
    ("bomb.tif", tiff_header_claiming(60000, 60000)),
    ("bomb.png", png_claiming(60000, 60000)),
])
def test_header_bombs_are_refused_before_decoding(layout, name, content):
    inp, _, _ = layout
    (inp / name).write_bytes(content)
    image = open_image(Origin.submission(inp), inp / name, "Case 0001, longitudinal mask")
    assert image.shape == (60000, 60000)  # the header alone
    with pytest.raises(SubmissionError) as excinfo:
        image.read((96, 128))
    assert message(excinfo) == ("Case 0001, longitudinal mask: shape 60000x60000, expected 96x128 as in the "
                                "ground truth.")


def test_nifti_header_bomb_is_refused_before_decoding(layout):
    inp, _, _ = layout
    write_image(inp / "m.nii", np.zeros((2, 2, 2), np.uint8), compress=False)
    data = bytearray((inp / "m.nii").read_bytes())
    data[42:48] = struct.pack("<hhh", 2000, 2000, 2000)  # dim[1..3]
    (inp / "bomb.nii").write_bytes(bytes(data))
    image = open_image(Origin.submission(inp), inp / "bomb.nii", "Patient P")
    with pytest.raises(SubmissionError, match=r"shape 2000x2000x2000, expected 2x2x2"):
        image.read((2, 2, 2))


def test_truncated_and_corrupt_images(layout):
    inp, _, _ = layout
    write_image(inp / "ok.mha", np.ones((8, 8), np.uint8), compress=False)
    (inp / "cut.mha").write_bytes((inp / "ok.mha").read_bytes()[:-20])
    with pytest.raises(SubmissionError, match=r"^x: cut.mha cannot be decoded \(its data is truncated or corrupt\)\.$"):
        open_image(Origin.submission(inp), inp / "cut.mha", "x").read((8, 8))
    for name, content in [("e.mha", b""), ("junk.nii.gz", b"\x1f\x8b junk"), ("t.tif", b"not a tiff"),
                          ("x.jpg", b"\xff\xd8")]:
        (inp / name).write_bytes(content)
        with pytest.raises(SubmissionError) as excinfo:
            open_image(Origin.submission(inp), inp / name, "x")
        assert message(excinfo).startswith(f"x: {name} ")


def test_ground_truth_images_raise_setup_errors(layout):
    _, truth, _ = layout
    (truth / "t.mha").write_bytes(b"broken")
    with pytest.raises(SetupError):
        read_image(Origin.ground_truth(truth), truth / "t.mha", "Ground truth t.mha")


# ---- HDF5 ----------------------------------------------------------------------------------------


@pytest.fixture
def h5_layout(layout):
    inp, truth, secret = layout
    with h5py.File(truth / "0001_label.h5", "w") as handle:
        handle["long_mask"] = np.full((4, 5), 255, np.uint8)
    return inp, truth, secret


def h5_refusal(inp, key="long_mask") -> str:
    with pytest.raises(SubmissionError) as excinfo:
        with open_hdf5(Origin.submission(inp), inp / "0001_pred.h5", "Case 0001") as h5:
            h5.dataset(key, "Case 0001, longitudinal mask").read((4, 5))
    return message(excinfo)


def test_hdf5_external_link_is_not_followed(h5_layout):
    inp, truth, _ = h5_layout
    with h5py.File(inp / "0001_pred.h5", "w") as handle:
        handle["long_mask"] = h5py.ExternalLink(str(truth / "0001_label.h5"), "long_mask")
    assert h5_refusal(inp) == ("Case 0001, longitudinal mask: long_mask in 0001_pred.h5 is an external link to "
                               "another file; datasets must be stored in the file itself.")


def test_hdf5_virtual_dataset_is_refused(h5_layout):
    inp, truth, _ = h5_layout
    layout_ = h5py.VirtualLayout(shape=(4, 5), dtype=np.uint8)
    layout_[:] = h5py.VirtualSource(str(truth / "0001_label.h5"), "long_mask", shape=(4, 5))
    with h5py.File(inp / "0001_pred.h5", "w") as handle:
        handle.create_virtual_dataset("long_mask", layout_)
    assert "is a virtual dataset (mapped from other files)" in h5_refusal(inp)


def test_hdf5_external_storage_is_refused(h5_layout):
    inp, _, secret = h5_layout
    with h5py.File(inp / "0001_pred.h5", "w") as handle:
        handle.create_dataset("long_mask", shape=(4, 5), dtype=np.uint8, external=[(str(secret), 0, 20)])
    assert "keeps its data in another file (external storage)" in h5_refusal(inp)


def test_hdf5_soft_links_groups_strings_and_shapes(h5_layout):
    inp, _, _ = h5_layout
    with h5py.File(inp / "0001_pred.h5", "w") as handle:
        handle["real"] = np.zeros((4, 5), np.uint8)
        handle["long_mask"] = h5py.SoftLink("/real")
        handle.create_group("group")
        handle["text"] = np.array([b"abc"])
        handle["small"] = np.zeros((3, 5), np.uint8)
        handle.create_dataset("cls", shape=(100000, 100000), dtype=np.uint8, chunks=(100, 100))  # nothing written
    assert h5_refusal(inp).endswith("long_mask in 0001_pred.h5 is a link; datasets must be stored in the file itself.")
    assert h5_refusal(inp, "group").endswith("group in 0001_pred.h5 is a group, not a dataset.")
    assert "holds text; numbers are expected" in h5_refusal(inp, "text")
    assert h5_refusal(inp, "small").endswith("small in 0001_pred.h5: shape 3x5, expected 4x5 as in the ground truth.")
    with pytest.raises(SubmissionError) as excinfo:
        with open_hdf5(Origin.submission(inp), inp / "0001_pred.h5", "Case 0001") as h5:
            h5.dataset("cls", "Case 0001: the class").read(max_size=1)
    assert message(excinfo) == ("Case 0001: the class: cls in 0001_pred.h5 must hold one value, found 10000000000 "
                                "(shape 100000x100000).")
    with open_hdf5(Origin.submission(inp), inp / "0001_pred.h5", "Case 0001") as h5:
        assert h5.names() == ["cls", "group", "long_mask", "real", "small", "text"]


def test_not_hdf5(layout):
    inp, _, _ = layout
    (inp / "0001_pred.h5").write_text(json.dumps([1]))
    with pytest.raises(SubmissionError, match=r"^Case 0001: 0001_pred.h5 is not a readable HDF5 file\.$"):
        with open_hdf5(Origin.submission(inp), inp / "0001_pred.h5", "Case 0001"):
            pass


def test_geometry_never_describes_minus_zero():
    g = Geometry((2, 2), (1.0, 1.0), (-0.0, 0.0), (1.0, -0.0, -0.0, 1.0))
    assert g.describe() == "size (2, 2), spacing (1, 1), origin (0, 0), direction (1, 0, 0, 1)"


def test_case_ids_from_a_participants_file_are_printable_in_messages():
    from evaluation.errors import id_list

    assert id_list(["a\nb", "c\x00d", "x" * 200]) == "a\\nb, c\\x00d, " + "x" * 77 + "..."


def test_exists_sees_anything_at_a_name_even_a_dangling_link(layout):
    inp, _, _ = layout
    origin = Origin.submission(inp)
    (inp / "dangling").symlink_to(inp / "nowhere")
    os.mkfifo(inp / "pipe")
    assert origin.exists(inp / "dangling") and origin.exists(inp / "pipe")
    assert not origin.exists(inp / "nowhere") and not origin.exists(inp / "a\x00b")


def test_messages_name_a_file_as_given_not_its_links_target(layout):
    inp, _, _ = layout
    (inp / "target-name.bin").write_bytes(b"not an image")
    (inp / "seg.mha").symlink_to("target-name.bin")
    (inp / "p.h5").symlink_to("target-name.bin")
    (inp / "big.json").symlink_to("target-name.bin")
    origin = Origin.submission(inp)
    for call in (lambda: open_image(origin, inp / "seg.mha", "x"),
                 lambda: open_hdf5(origin, inp / "p.h5", "x").__enter__(),
                 lambda: origin.read_bytes(inp / "big.json", "x", 3)):
        with pytest.raises(SubmissionError) as excinfo:
            call()
        assert "target-name" not in message(excinfo)


# ---- reading many files: folders walked without following links, the root's realpath kept -------


def test_a_folder_swapped_for_a_link_after_its_path_was_checked_is_never_followed(layout, tmp_path):
    inp, _, _ = layout
    (inp / "job" / "output").mkdir(parents=True)
    (inp / "job" / "output" / "rfs.json").write_text("0.5")
    origin = Origin.submission(inp)
    path = origin.path("job", "output", "rfs.json", what="Patient p, output 'rfs'")
    assert read_json(origin, path, "x") == 0.5  # the same path read once: a plain folder then
    outside = tmp_path / "elsewhere"
    (outside / "output").mkdir(parents=True)
    (outside / "output" / "rfs.json").write_text(SECRET)
    os.rename(inp / "job", tmp_path / "job-moved")
    (inp / "job").symlink_to(outside)  # the folder checked before is now a link out of the input
    with pytest.raises(SubmissionError) as excinfo:
        origin.read_bytes(path, "Patient p, output 'rfs'", 1000)
    assert message(excinfo) == ("Patient p, output 'rfs': job/output/rfs.json is a link that leads out of the input "
                                "folder.")
    with pytest.raises(SubmissionError, match="is a link that leads out of the input folder"):
        origin.path("job", "output", "rfs.json", what="x")


def test_a_file_is_opened_without_following_any_link_on_its_way(layout):
    from evaluation.reading.files import _open_regular_file

    inp, _, _ = layout
    (inp / "real" / "output").mkdir(parents=True)
    (inp / "real" / "output" / "a.json").write_text("[1]")
    (inp / "linked").symlink_to("real")  # inside: read, but only through its real path
    (inp / "real" / "output" / "b.json").symlink_to("a.json")
    os.mkfifo(inp / "real" / "output" / "pipe.json")
    root = os.path.realpath(inp)
    assert _open_regular_file(root, ["linked", "output", "a.json"]) is None
    assert _open_regular_file(root, ["real", "output", "b.json"]) is None
    assert _open_regular_file(root, ["real", "output", "pipe.json"]) is None  # refused, not waited on
    assert _open_regular_file(root, ["real", "output"]) is None  # a folder
    assert _open_regular_file(root, ["real", "output", "none.json"]) is None
    descriptor, size = _open_regular_file(root, ["real", "output", "a.json"])
    try:
        assert size == 3 and os.read(descriptor, 10) == b"[1]"
    finally:
        os.close(descriptor)
    origin = Origin.submission(inp)  # through the reading layer, links inside are followed as before
    assert read_json(origin, inp / "linked" / "output" / "b.json", "x") == [1]
    assert origin.path("linked", "output", "b.json", what="x") == Path(root) / "real" / "output" / "a.json"
    assert origin.contains(inp / "linked" / "output", "x") == Path(root) / "real" / "output"


def test_a_device_inside_the_input_is_refused_unopened(layout):
    inp, _, _ = layout
    try:
        os.mknod(inp / "null.json", 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    except PermissionError:
        pytest.skip("making a device node needs root")
    with pytest.raises(SubmissionError) as excinfo:
        Origin.submission(inp).read_bytes(inp / "null.json", "x", 100)
    assert message(excinfo) == "x: null.json is not a regular file."


def test_the_roots_real_path_is_not_kept_once_the_root_is_another_folder(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, content in ((first, "1"), (second, "2")):
        (folder / "job").mkdir(parents=True)
        (folder / "job" / "x.json").write_text(content)
    root = tmp_path / "input"
    root.symlink_to(first)
    origin = Origin.submission(root)
    assert origin.real_root == first and read_json(origin, root / "job" / "x.json", "x") == 1
    root.unlink()
    root.symlink_to(second)  # the same root, now another folder
    assert origin.real_root == second and read_json(origin, root / "job" / "x.json", "x") == 2
    assert origin.path("job", "x.json", what="x") == second / "job" / "x.json"
    assert read_json(origin, origin.path("job", "x.json", what="x"), "x") == 2


def test_a_relative_root_reads_as_an_absolute_one(layout, tmp_path, monkeypatch):
    inp, _, _ = layout
    (inp / "a").mkdir()
    (inp / "a" / "x.json").write_text('{"v": 1}')
    monkeypatch.chdir(tmp_path)
    origin = Origin.submission(Path("input"))
    assert read_json(origin, Path("input") / "a" / "x.json", "x") == {"v": 1}
    assert origin.path("a", "x.json", what="x") == inp.resolve() / "a" / "x.json"
    with pytest.raises(SubmissionError, match=r"the file y\.json is missing"):
        origin.read_bytes(Path("input") / "a" / ".." / "a" / "y.json", "x", 100)


def test_a_second_byte_order_mark_is_refused_as_json_refuses_a_first(layout):
    inp, _, _ = layout
    (inp / "bom.json").write_bytes("\ufeff\ufeff[1]".encode("utf-8"))
    with pytest.raises(json.JSONDecodeError) as refused:
        json.loads("\ufeff[1]")
    with pytest.raises(SubmissionError) as excinfo:
        read_json(Origin.submission(inp), inp / "bom.json", "x")
    error = refused.value
    assert message(excinfo) == (f"x: bom.json is not valid JSON ({error.msg} at line {error.lineno} column "
                                f"{error.colno}).")


def test_listing_checks_only_links_by_their_real_path_and_refuses_what_is_not_a_file(layout):
    inp, _, _ = layout
    (inp / "a").mkdir()
    (inp / "a" / "1.csv").write_text("1")
    (inp / "2.csv").symlink_to("a/1.csv")  # a link inside: listed under its own name
    (inp / "loop").symlink_to(".")  # a folder link inside: not entered, not refused
    origin = Origin.submission(inp)
    assert [p.relative_to(inp.resolve()).as_posix() for p in origin.list_files()] == ["2.csv", "a/1.csv"]
    os.mkfifo(inp / "a" / "3.csv")
    with pytest.raises(SubmissionError) as excinfo:
        origin.list_files()
    assert message(excinfo) == "Submission file a/3.csv: a/3.csv is not a regular file."


# ---- NIfTI floats: NaN and infinities are refused, not read as 0 ------------------------------------

def nifti_bytes(voxels: np.ndarray, version: int, order: str) -> bytes:
    """A single-file NIfTI-1 or NIfTI-2 image of float voxels (numpy order z, y, x) in the byte
    order `order` ("<" or ">"), written field by field from the format's definition, with no
    orientation codes (spacing 1)."""
    dim = [voxels.ndim, *voxels.shape[::-1]] + [1] * (7 - voxels.ndim)
    datatype, bitpix = {np.dtype("float32"): (16, 32), np.dtype("float64"): (64, 64)}[voxels.dtype]
    if version == 1:
        head = bytearray(348)
        struct.pack_into(order + "i", head, 0, 348)
        struct.pack_into(order + "8h", head, 40, *dim)
        struct.pack_into(order + "hh", head, 70, datatype, bitpix)
        struct.pack_into(order + "8f", head, 76, 1, 1, 1, 1, 1, 1, 1, 1)
        struct.pack_into(order + "ff", head, 108, 352.0, 1.0)  # vox_offset, scl_slope
        head[344:348] = b"n+1\x00"
    else:
        head = bytearray(540)
        struct.pack_into(order + "i", head, 0, 540)
        head[4:12] = b"n+2\x00\r\n\x1a\n"
        struct.pack_into(order + "hh", head, 12, datatype, bitpix)
        struct.pack_into(order + "8q", head, 16, *dim)
        struct.pack_into(order + "8d", head, 104, 1, 1, 1, 1, 1, 1, 1, 1)
        struct.pack_into(order + "qd", head, 168, 544, 1.0)  # vox_offset, scl_slope
    return bytes(head) + b"\x00" * 4 + voxels.astype(voxels.dtype.newbyteorder(order)).tobytes()


@pytest.mark.parametrize("version", [1])
@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("gzipped", [False, True])
def test_a_nifti_of_floats_with_nan_or_infinity_is_refused(tmp_path, version, order, dtype, gzipped):
    """SimpleITK's NIfTI reader turns NaN and infinities into 0 (a NaN in a label map would be
    background): the stored values are scanned, and the file refused in one sentence. The same
    file without them reads as written."""
    voxels = np.arange(4 * 5 * 6, dtype=dtype).reshape(4, 5, 6) % 3
    name = "map.nii.gz" if gzipped else "map.nii"

    def write(data: bytes) -> None:
        (tmp_path / name).write_bytes(gzip.compress(data) if gzipped else data)

    write(nifti_bytes(voxels, version, order))
    read, _ = read_image(Origin.submission(tmp_path), tmp_path / name, "Case c")
    assert read.dtype == dtype and np.array_equal(read, voxels)
    for bad in (np.nan, np.inf, -np.inf):
        spoiled = voxels.copy()
        spoiled[3, 4, 5] = bad  # the very last value stored
        write(nifti_bytes(spoiled, version, order))
        assert sitk.GetArrayFromImage(sitk.ReadImage(str(tmp_path / name)))[3, 4, 5] == 0  # what we guard against
        with pytest.raises(SubmissionError, match=r"^Case c: map\.nii(\.gz)? holds NaN or infinite values, which a "
                                                  r"NIfTI reader turns into 0; every pixel must be a finite number\.$"):
            read_image(Origin.submission(tmp_path), tmp_path / name, "Case c")


@pytest.mark.parametrize("offset", [math.nan, math.inf, -1e30, 1e30, 0.0, 348.0])
def test_a_nifti_of_floats_whose_data_offset_is_no_position_is_refused(tmp_path, offset):
    """vox_offset is a float in the header: NaN, infinite, inside the header or far beyond any
    file is not where the voxels can start (SimpleITK reads the header all the same)."""
    head = bytearray(nifti_bytes(np.zeros((2, 3, 4), dtype=np.float32), 1, "<"))
    struct.pack_into("<f", head, 108, offset)
    (tmp_path / "map.nii").write_bytes(bytes(head))
    with pytest.raises(SubmissionError, match=r"^Case c: map\.nii is not a readable NIfTI image \(its data offset, "
                                              r"vox_offset, is not one a single-file NIfTI-1 image can have\)\.$"):
        read_image(Origin.submission(tmp_path), tmp_path / "map.nii", "Case c")


def test_a_nifti_2_file_is_refused_before_its_pixels_are_used(tmp_path):
    """SimpleITK's reader here does not take NIfTI-2 (so its NaN cannot pass as 0 either)."""
    (tmp_path / "map.nii").write_bytes(nifti_bytes(np.zeros((2, 3, 4), dtype=np.float32), 2, "<"))
    with pytest.raises(SubmissionError, match=r"^Case c: map\.nii is not a readable NIfTI image\.$"):
        read_image(Origin.submission(tmp_path), tmp_path / "map.nii", "Case c")


def test_a_nifti_of_floats_larger_than_a_slab_is_scanned_to_its_end(tmp_path):
    """A NaN after the first 16 MB slab of stored values is found too."""
    voxels = np.zeros((40, 256, 256), dtype=np.float64)  # 20 MiB of values
    voxels[-1, -1, -1] = np.nan
    (tmp_path / "big.nii").write_bytes(nifti_bytes(voxels, 1, "<"))
    with pytest.raises(SubmissionError, match="NaN or infinite"):
        read_image(Origin.submission(tmp_path), tmp_path / "big.nii", "Case c")
