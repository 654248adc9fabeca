"""CAMELYON16 reads its submission and its ground truth through the reading layer: every value a
participant can write (a 400- or 5000-digit integer, NaN, Infinity, text, a boolean) is one
sentence naming the slide (and the point or row), never an internal error; the predictions files
are bounded before they are read, links out of /input, pipes and folders are refused by name,
BOM, CRLF and quoted numbers are accepted, semicolons are refused in one line; the ground
truth's files (reference.csv, masks) are refused before decoding when they claim absurd sizes;
the settings' bounds are declared (exit 3). Real files on disk, through the real command line."""

from __future__ import annotations

import json
import os
import shutil
import struct
import zlib

import numpy as np
import pytest

from evaluation.challenges.camelyon16.examples import write_synthetic
from evaluation.challenges.camelyon16.masks import read_mask
from evaluation.errors import SetupError
from evaluation.reading.values import shown

SETUP = "The evaluation could not run, through no fault of the submission: "
ORGANIZERS = " (please tell the challenge organizers)."
HUGE_400 = "9" * 400
HUGE_5000 = "7" * 5000


@pytest.fixture(scope="module")
def files_dataset(tmp_path_factory):
    """Slides Test_001..Test_004 (001 and 003 tumor; 001's mask a pyramid, 003's a single page),
    Test_049 (excluded, submitted) and Test_114 (slide level only)."""
    root = tmp_path_factory.mktemp("camelyon16-files")
    write_synthetic(root, seed=5, slides=4, mask_shape=(160, 224), pyramids=1, extra_slides=True)
    return root


@pytest.fixture
def data(files_dataset, tmp_path):
    shutil.copytree(files_dataset, tmp_path / "data")
    return tmp_path / "data" / "input", tmp_path / "data" / "ground-truth"


@pytest.fixture(scope="module")
def jobs_dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("camelyon16-jobs")
    write_synthetic(root, seed=5, slides=4, mask_shape=(160, 224), pyramids=0, phase="algorithm")
    return root


@pytest.fixture
def jobs(jobs_dataset, tmp_path):
    """(input, ground truth, output folder of the job of Test_001)."""
    shutil.copytree(jobs_dataset, tmp_path / "data")
    input_dir = tmp_path / "data" / "input"
    predictions = json.loads((input_dir / "predictions.json").read_text())
    job = next(j for j in predictions if j["inputs"][0]["image"]["name"] == "Test_001.tif")
    return input_dir, tmp_path / "data" / "ground-truth", input_dir / job["pk"] / "output"


def refused(run, code=1):
    assert (run.code, run.wrote_metrics) == (code, False), run.stderr
    return run.last_error_line


# ---- defect 1: any JSON value as the likelihood, a probability or a coordinate (algorithm phase) ----


LIKELIHOOD = "Slide Test_001: the output 'metastasis-likelihood' is "


@pytest.mark.parametrize("content, expected", [
    (HUGE_400, LIKELIHOOD + "an integer of 400 digits; it must be a finite number."),
    (HUGE_5000, LIKELIHOOD + "an integer of 5000 digits; it must be a finite number."),
    ("-" + HUGE_400, LIKELIHOOD + "an integer of 400 digits; it must be a finite number."),
    ("NaN", LIKELIHOOD + "NaN; it must be a finite number."),
    ("-Infinity", LIKELIHOOD + "-Infinity; it must be a finite number."),
    ("true", LIKELIHOOD + "true; it must be a finite number."),
    ('"0.5"', LIKELIHOOD + '"0.5"; it must be a finite number.'),
    ("[0.5]", LIKELIHOOD + "a list of 1 item; it must be a finite number."),
], ids=["400 digits", "5000 digits", "-400 digits", "NaN", "-Infinity", "true", "text", "list"])
def test_any_json_likelihood_is_one_sentence(jobs, evaluate, content, expected):
    input_dir, ground_truth, output = jobs
    (output / "metastasis-likelihood.json").write_text(content)
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == expected


POINTS = "Slide Test_001: the output 'metastasis-detections': point 1 has "


@pytest.mark.parametrize("point, expected", [
    (f'{{"point": [0.1, 0.1, 0], "probability": {HUGE_400}}}',
     POINTS + "probability an integer of 400 digits; it must be a finite number."),
    (f'{{"point": [0.1, 0.1, 0], "probability": {HUGE_5000}}}',
     POINTS + "probability an integer of 5000 digits; it must be a finite number."),
    (f'{{"point": [{HUGE_400}, 0.1, 0], "probability": 0.5}}',
     POINTS + "x an integer of 400 digits; it must be a finite number."),
    (f'{{"point": [0.1, -{HUGE_5000}, 0], "probability": 0.5}}',
     POINTS + "y an integer of 5000 digits; it must be a finite number."),
    ('{"point": [0.1, 0.1, 0], "probability": NaN}', POINTS + "probability NaN; it must be a finite number."),
    ('{"point": [Infinity, 0.1, 0], "probability": 0.5}', POINTS + "x Infinity; it must be a finite number."),
    ('{"point": [0.1, "0.1", 0], "probability": 0.5}', POINTS + 'y "0.1", not a number.'),
    ('{"point": [0.1, 0.1, 0], "probability": false}', POINTS + "probability false, not a number."),
    ('{"point": [0.1, 0.1, 0], "probability": {"p": 1}}', POINTS + "probability an object with 1 key, not a number."),
], ids=["p 400 digits", "p 5000 digits", "x 400 digits", "y -5000 digits", "p NaN", "x Infinity", "y text",
        "p false", "p object"])
def test_any_json_point_value_is_one_sentence(jobs, evaluate, point, expected):
    input_dir, ground_truth, output = jobs
    good = '{"point": [0.1, 0.1, 0], "probability": 0.5}'
    (output / "metastasis-detections.json").write_text(f'{{"points": [{good}, {point}]}}')
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == expected


def test_a_huge_z_coordinate_is_not_read(jobs, evaluate):
    """z is not used (the slide is 2-D): whatever it holds, the point scores as before."""
    input_dir, ground_truth, output = jobs
    before = evaluate("camelyon16", input_dir, ground_truth)
    document = json.loads((output / "metastasis-detections.json").read_text())
    text = json.dumps(document).replace(", 0.0]", f", {HUGE_5000}]")
    (output / "metastasis-detections.json").write_text(text)
    after = evaluate("camelyon16", input_dir, ground_truth)
    assert (before.code, after.code) == (0, 0), after.stderr
    assert after.metrics["aggregates"] == before.metrics["aggregates"]


# ---- defect 2: the predictions files through reading.tables, bounded -------------------------------


def test_bom_crlf_and_quoted_values_score_the_same(data, evaluate):
    input_dir, ground_truth = data
    before = evaluate("camelyon16", input_dir, ground_truth)
    assert before.code == 0, before.stderr
    for path in input_dir.glob("*.csv"):
        lines = path.read_text().splitlines()
        quoted = [",".join(f'"{cell}"' for cell in line.split(",")) for line in lines]
        path.write_bytes(b"\xef\xbb\xbf" + "".join(line + "\r\n" for line in quoted).encode())
    after = evaluate("camelyon16", input_dir, ground_truth)
    assert after.code == 0, after.stderr
    assert after.metrics["aggregates"] == before.metrics["aggregates"]


HINT = " It looks separated by semicolons; separate values with commas."


@pytest.mark.parametrize("name, expected", [
    ("slides.csv", 'slides.csv, row 1: expected \'image, probability\', found "image;probability".' + HINT),
    ("Test_001.csv", 'Slide Test_001: row 1 of Test_001.csv has 1 value(s); expected 3 (confidence, X, Y), '
                     'found "p;x;y".' + HINT),
])
def test_semicolon_separated_files_are_refused_in_one_line(data, evaluate, name, expected):
    input_dir, ground_truth = data
    path = input_dir / name
    path.write_text(path.read_text().replace(",", ";"))
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == expected


def test_decimal_commas_with_semicolons_are_refused_in_one_line(data, evaluate):
    input_dir, ground_truth = data
    (input_dir / "Test_002.csv").write_text("0,5;100;200\n")
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        'Slide Test_002: row 1 of Test_002.csv has 2 value(s); expected 3 (confidence, X, Y), found "0,5;100;200".'
        + HINT)


@pytest.mark.parametrize("value, expected", [
    (HUGE_400, shown(HUGE_400) + "; it must be a finite number."),
    (HUGE_5000, shown(HUGE_5000) + "; it must be a finite number."),
    ("1e999", '"1e999"; it must be a finite number.'),
    ("true", '"true", not a number.'),
], ids=["400 digits", "5000 digits", "1e999", "true"])
def test_any_probability_text_is_one_sentence(data, evaluate, value, expected):
    input_dir, ground_truth = data
    path = input_dir / "slides.csv"
    text = path.read_text().splitlines()
    path.write_text("".join((f"Test_003,{value}" if line.startswith("Test_003") else line) + "\n" for line in text))
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        "Slide Test_003: the probability in row 4 of slides.csv is " + expected)


def test_huge_coordinates_in_a_detections_file_are_one_sentence(data, evaluate):
    input_dir, ground_truth = data
    (input_dir / "Test_002.csv").write_text(f"0.5,{HUGE_5000},3\n")
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        f"Slide Test_002: row 1 of Test_002.csv has X {shown(HUGE_5000)}; it must be a finite number.")


def test_slides_table_is_bounded_by_the_ground_truth_before_it_is_parsed(data, evaluate):
    """5 slides in the ground truth (+ the excluded one, a header and a margin of 16): 23 rows."""
    input_dir, ground_truth = data
    path = input_dir / "slides.csv"
    path.write_text(path.read_text() + "".join(f"Other_{n},0.5\n" for n in range(100)))
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        "The slide probabilities: slides.csv has more than 23 rows.")
    path.write_bytes(b"image,probability\n" + b"#" * (2 << 20))
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        "The slide probabilities: slides.csv has 2.0 MiB, more than the 1.0 MiB allowed.")


def test_a_few_unknown_slides_are_named_by_the_matching(data, evaluate):
    input_dir, ground_truth = data
    path = input_dir / "slides.csv"
    path.write_text(path.read_text() + "Other_1,0.5\n")
    (input_dir / "Other_1.csv").write_text("")
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        "The submission does not match the test set: 1 slide(s) not in the test set (Other_1).")


def test_detections_file_is_bounded_before_it_is_read(data, evaluate):
    input_dir, ground_truth = data
    with open(input_dir / "Test_001.csv", "r+b") as handle:  # sparse: 65 MiB claimed, nothing written
        handle.truncate(65 << 20)
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        "Slide Test_001: Test_001.csv has 65.0 MiB, more than the 64.0 MiB allowed.")


def test_detections_rows_are_bounded(data, evaluate, monkeypatch):
    import evaluation.challenges.camelyon16.predictions as module

    monkeypatch.setattr(module, "MAX_DETECTIONS", 5)  # workers are forked: they see it too
    input_dir, ground_truth = data
    (input_dir / "Test_001.csv").write_text("p,x,y\n" + "0.5,1,1\n" * 6)
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        "Slide Test_001: Test_001.csv has more than 5 rows.")


def test_detection_points_are_bounded(jobs, evaluate, monkeypatch):
    import evaluation.challenges.camelyon16.predictions as module

    monkeypatch.setattr(module, "MAX_DETECTIONS", 5)
    input_dir, ground_truth, output = jobs
    point = '{"point": [0.1, 0.1, 0], "probability": 0.5}'
    points = ", ".join([point] * 6)
    (output / "metastasis-detections.json").write_text(f'{{"points": [{points}]}}')
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        "Slide Test_001: the output 'metastasis-detections' has 6 points; at most 5 are read per slide.")


@pytest.mark.parametrize("name", ["Test_001.csv", "slides.csv"])
def test_links_out_of_the_input_are_refused_unread(data, evaluate, tmp_path, name):
    input_dir, ground_truth = data
    outside = tmp_path / "outside.csv"
    shutil.copy(input_dir / name, outside)
    (input_dir / name).unlink()
    (input_dir / name).symlink_to(outside)
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        f"Submission file {name}: {name} is a link that leads out of the input folder.")


@pytest.mark.parametrize("name", ["Test_001.csv", "slides.csv"])
def test_named_pipes_are_refused_unread(data, evaluate, name):
    input_dir, ground_truth = data
    (input_dir / name).unlink()
    os.mkfifo(input_dir / name)  # reading it would hang
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        f"Submission file {name}: {name} is not a regular file.")


@pytest.mark.parametrize("name, expected", [
    ("Test_001.csv", "Slide Test_001: Test_001.csv is a folder, not a file."),
    ("slides.csv", "The slide probabilities: slides.csv is a folder, not a file."),
])
def test_folders_in_place_of_a_csv_are_refused_by_name(data, evaluate, name, expected):
    input_dir, ground_truth = data
    (input_dir / name).unlink()
    (input_dir / name).mkdir()
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == expected


def test_unbalanced_quote_and_non_utf8_are_one_sentence(data, evaluate):
    input_dir, ground_truth = data
    (input_dir / "Test_002.csv").write_text('0.5,"1,2\n')
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        "Slide Test_002: Test_002.csv is not a readable CSV file (line 1: unexpected end of data).")
    (input_dir / "Test_002.csv").write_bytes(b"0.5,1,2\n\xff\xfe\n")
    assert refused(evaluate("camelyon16", input_dir, ground_truth)) == (
        "Slide Test_002: Test_002.csv is not UTF-8 text (byte 9 cannot be decoded); save it as UTF-8.")


# ---- defect 3: the ground truth through self.truth; masks refused before decoding -------------------


def tiff_pages(sizes: list[tuple[int, int]]) -> bytes:
    """A little-endian TIFF whose pages claim the (width, height) 8-bit sizes given, with 8 bytes
    of data for all of them; pages after the first are reduced-resolution images."""
    count = 10
    ifd_size = 2 + 12 * count + 4
    data_offset = 8 + ifd_size * len(sizes)
    out = b"II*\x00" + struct.pack("<I", 8)
    for k, (width, height) in enumerate(sizes):
        entries = [(254, 4, 1, 1 if k else 0), (256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 8),
                   (259, 3, 1, 1), (262, 3, 1, 1), (273, 4, 1, data_offset), (277, 3, 1, 1), (278, 4, 1, height),
                   (279, 4, 1, 8)]
        following = 8 + ifd_size * (k + 1) if k + 1 < len(sizes) else 0
        out += (struct.pack("<H", count) + b"".join(struct.pack("<HHII", *e) for e in entries)
                + struct.pack("<I", following))
    return out + bytes(8)


def png_claiming(width: int, height: int) -> bytes:
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00" * 16))
            + chunk(b"IEND", b""))


TOO_LARGE = "more than the 268435456 pixels a mask at the evaluation level may have"
LEVEL0 = " (a level-0 mask must be a pyramidal TIFF with its reduced levels)"


def test_a_single_page_mask_claiming_an_absurd_size_is_a_setup_error(data, evaluate):
    input_dir, ground_truth = data
    (ground_truth / "masks" / "Test_003.tif").write_bytes(tiff_pages([(100_000, 100_000)]))
    assert refused(evaluate("camelyon16", input_dir, ground_truth), code=3) == (
        f"{SETUP}Mask of slide Test_003: Test_003.tif holds a single 100000x100000 image, {TOO_LARGE}{LEVEL0}."
        f"{ORGANIZERS}")


def test_a_pyramid_whose_level5_claims_an_absurd_size_is_a_setup_error(tmp_path):
    path = tmp_path / "Test_001.tif"
    path.write_bytes(tiff_pages([(3_200_000, 3_200_000), (100_000, 100_000)]))
    with pytest.raises(SetupError) as excinfo:
        read_mask(path, 5, 5, "Mask of slide Test_001")
    assert str(excinfo.value) == (f"Mask of slide Test_001: level 5 of the pyramidal TIFF Test_001.tif claims "
                                  f"100000x100000 pixels, {TOO_LARGE}.")


def test_a_png_mask_claiming_an_absurd_size_is_a_setup_error(tmp_path):
    path = tmp_path / "Test_001.png"
    path.write_bytes(png_claiming(40_000, 40_000))  # under the reading layer's own 2**31 bound
    with pytest.raises(SetupError) as excinfo:
        read_mask(path, 5, 5, "Mask of slide Test_001")
    assert str(excinfo.value) == (f"Mask of slide Test_001: Test_001.png holds a single 40000x40000 image, "
                                  f"{TOO_LARGE}{LEVEL0}.")


def mha_claiming(width: int, height: int, element_type: str) -> bytes:
    """A MetaImage header claiming width x height pixels of `element_type`, with a few bytes of
    compressed data: decoding it would allocate the claimed size first."""
    return (f"ObjectType = Image\nNDims = 2\nDimSize = {width} {height}\nElementType = {element_type}\n"
            f"CompressedData = True\nCompressedDataSize = 11\nElementDataFile = LOCAL\n").encode() + zlib.compress(b"")


@pytest.mark.parametrize("name, content, claim", [
    # 16,384 x 9,000 pixels (under the pixel bound) of 8 bytes: 1.18 GB decoded
    ("Test_001.mha", mha_claiming(16_384, 9_000, "MET_DOUBLE"), "16384x9000 image of 8 bytes a pixel, 1179648000"),
    ("Test_001.mha", mha_claiming(12_000, 12_000, "MET_LONG_LONG"), "12000x12000 image of 8 bytes a pixel, 1152000000"),
], ids=["float64", "int64"])
def test_a_mask_whose_pixels_are_wide_is_bounded_by_its_decoded_bytes(tmp_path, name, content, claim):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(SetupError) as excinfo:
        read_mask(path, 5, 5, "Mask of slide Test_001")
    assert str(excinfo.value) == (f"Mask of slide Test_001: {name} holds a single {claim} bytes decoded, more than "
                                  f"the 1073741824 a mask may take (write it with 8-bit pixels).")


def test_a_16_bit_mask_within_the_bound_is_read(tmp_path):
    import SimpleITK as sitk

    mask = np.zeros((60, 80), dtype=np.uint16)
    mask[10:20, 30:50] = 1000
    for name in ("Test_001.png", "Test_001.mha"):
        sitk.WriteImage(sitk.GetImageFromArray(mask), str(tmp_path / name))
        read = read_mask(tmp_path / name, 5, 5, "Mask of slide Test_001")
        assert np.array_equal(read.tumor, mask != 0) and read.level == 5


def test_reference_is_read_through_the_layer(data, evaluate):
    input_dir, ground_truth = data
    before = evaluate("camelyon16", input_dir, ground_truth)
    path = ground_truth / "reference.csv"
    text = path.read_text()
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    after = evaluate("camelyon16", input_dir, ground_truth)
    assert (before.code, after.code) == (0, 0), after.stderr
    assert after.metrics["aggregates"] == before.metrics["aggregates"]
    path.write_bytes(text.encode() + b"Test_9\xff,Tumor\n")
    assert refused(evaluate("camelyon16", input_dir, ground_truth), code=3) == (
        f"{SETUP}Ground truth reference.csv: reference.csv is not UTF-8 text (byte {len(text.encode()) + 7} cannot "
        f"be decoded); save it as UTF-8.{ORGANIZERS}")


def test_a_bad_reference_row_is_named_without_quoting_it(data, evaluate):
    """The participant sees the line: a ground-truth row is never quoted (it holds a label)."""
    input_dir, ground_truth = data
    path = ground_truth / "reference.csv"
    path.write_text(path.read_text().replace("Test_003,Tumor", "Test_003,Tumour"))
    assert refused(evaluate("camelyon16", input_dir, ground_truth), code=3) == (
        f"{SETUP}Ground truth reference.csv, row 4: expected an image name and a type Tumor or Normal.{ORGANIZERS}")


# ---- defect 4: settings bounds declared, NaN refused centrally ---------------------------------------


@pytest.mark.parametrize("config, expected", [
    ('{"pixel_size_um": NaN}', "config.json: setting 'pixel_size_um' is NaN; it must be a finite number."),
    ('{"pixel_size_um": Infinity}', "config.json: setting 'pixel_size_um' is Infinity; it must be a finite number."),
    ('{"pixel_size_um": 0}', "config.json: setting 'pixel_size_um' is 0.0; it must be at least 0.05."),
    ('{"pixel_size_um": 0.01}', "config.json: setting 'pixel_size_um' is 0.01; it must be at least 0.05."),
    ('{"mask_level": -1}', "config.json: setting 'mask_level' is -1; it must be at least 0."),
    ('{"mask_level": 100000}', "config.json: setting 'mask_level' is 100000; it must be at most 16."),
])
def test_settings_out_of_bounds_are_setup_errors(data, evaluate, config, expected):
    input_dir, ground_truth = data
    (ground_truth / "config.json").write_text(config)
    assert refused(evaluate("camelyon16", input_dir, ground_truth), code=3) == f"{SETUP}{expected}{ORGANIZERS}"


def test_an_absurd_resolution_tag_is_a_setup_error(data, evaluate):
    """pixel_size_from_tiff: a level-0 pixel of 1e-05 µm would make the 75 µm disk gigabytes."""
    import tifffile

    input_dir, ground_truth = data
    path = ground_truth / "masks" / "Test_001.tif"
    with tifffile.TiffFile(path) as tif:
        levels = [level.asarray() for level in tif.series[0].levels]
    with tifffile.TiffWriter(path) as tif:
        tif.write(levels[0], tile=(256, 256), compression="zlib", resolution=(1e9, 1e9), resolutionunit="CENTIMETER")
        for level in levels[1:]:
            tif.write(level, tile=(16, 16), compression="zlib", subfiletype=1)
    (ground_truth / "config.json").write_text('{"pixel_size_from_tiff": true}')
    assert refused(evaluate("camelyon16", input_dir, ground_truth), code=3) == (
        f"{SETUP}Mask of slide Test_001: the resolution tags of Test_001.tif give a level-0 pixel size of 1e-05 µm; "
        f"it must be at least 0.05 µm (or turn pixel_size_from_tiff off).{ORGANIZERS}")


def test_mask_reading_without_an_origin_still_works(tmp_path):
    """read_mask's origin defaults to the mask's folder (benchmarks call it that way)."""
    raster = np.zeros((20, 30), np.uint8)
    raster[2:5, 3:9] = 255
    import tifffile

    tifffile.imwrite(tmp_path / "m.tif", raster)
    mask = read_mask(tmp_path / "m.tif", 5, 5, "Mask")
    assert np.array_equal(mask.tumor, raster != 0)
