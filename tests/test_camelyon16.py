"""CAMELYON16 end to end: the numbers against the plain 2016-style evaluation
(benchmarks/camelyon16_reference.py) on synthetic slides, both submission kinds, the mask
formats, the settings, and every rejection with its exact last line."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from benchmarks.camelyon16_reference import reference_scores
from evaluation.challenges.camelyon16 import Camelyon16
from evaluation.challenges.camelyon16.examples import write_synthetic
from evaluation.challenges.camelyon16.masks import read_mask
from evaluation.errors import SetupError

ROOT = Path(__file__).resolve().parent.parent
TARGET_KEYS = ["0_25", "0_5", "1", "2", "4", "8"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("camelyon16")
    write_synthetic(root, seed=5, slides=8, mask_shape=(160, 224), pyramids=2, extra_slides=True)
    return root


@pytest.fixture
def data(dataset, tmp_path):
    shutil.copytree(dataset, tmp_path / "data")
    return tmp_path / "data" / "input", tmp_path / "data" / "ground-truth"


def assert_matches_reference(metrics, reference):
    aggregates = metrics["aggregates"]
    assert aggregates["slide_auc"] == pytest.approx(reference["slide_auc"], abs=1e-15)
    assert aggregates["froc_score"] == reference["froc_score"]
    assert [aggregates[f"froc_sensitivity_at_{k}"] for k in TARGET_KEYS] == reference["at_targets"]
    assert aggregates["lesions_total"] == reference["lesions_total"]
    assert aggregates["lesions_itc_excluded"] == reference["lesions_itc_excluded"]


def test_ranked_paths_are_the_issue_names():
    assert Camelyon16.ranked_paths == (
        "aggregates.slide_auc", "aggregates.froc_score",
        *(f"aggregates.froc_sensitivity_at_{k}" for k in TARGET_KEYS),
        "aggregates.lesions_total", "aggregates.lesions_itc_excluded")


@pytest.mark.parametrize("rule", ["2016", "corrected"])
def test_scores_equal_the_2016_pipeline(data, evaluate, rule):
    input_dir, ground_truth = data
    (ground_truth / "config.json").write_text(json.dumps({"froc_thresholds": rule}))
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert run.code == 0, run.stderr
    reference = reference_scores(input_dir, ground_truth, corrected=rule == "corrected")
    assert_matches_reference(run.metrics, reference)
    assert reference["lesions_itc_excluded"] > 0 and 0 < reference["froc_score"] < 1
    curve = run.metrics["froc_curve"]
    assert curve["average_false_positives_per_slide"][0] == 0.0
    assert len(curve["sensitivity"]) == len(curve["average_false_positives_per_slide"]) <= 500


def test_algorithm_phase_equals_predictions_files(tmp_path, dataset, evaluate):
    """The same detections written as Multiple points in mm (0.243 µm pixels) score the same."""
    write_synthetic(tmp_path, seed=5, slides=8, mask_shape=(160, 224), pyramids=2, extra_slides=True,
                    phase="algorithm")
    assert (tmp_path / "input" / "predictions.json").is_file()
    jobs = evaluate("camelyon16", tmp_path / "input", tmp_path / "ground-truth")
    files = evaluate("camelyon16", dataset / "input", dataset / "ground-truth")
    assert jobs.code == 0, jobs.stderr
    assert jobs.metrics["aggregates"] == files.metrics["aggregates"]


def test_same_bytes_with_one_or_two_workers(dataset, evaluate):
    runs = [evaluate("camelyon16", dataset / "input", dataset / "ground-truth", "--workers", n) for n in (1, 2)]
    assert (runs[0].output / "metrics.json").read_bytes() == (runs[1].output / "metrics.json").read_bytes()


def test_excluded_slides_may_be_absent_or_present(data, evaluate):
    input_dir, ground_truth = data
    before = evaluate("camelyon16", input_dir, ground_truth).metrics["aggregates"]
    (input_dir / "Test_049.csv").unlink()
    slides = [line for line in (input_dir / "slides.csv").read_text().splitlines() if not line.startswith("Test_049")]
    (input_dir / "slides.csv").write_text("\n".join(slides) + "\n")
    (input_dir / "Test_114.csv").write_text("0.5,10,10\n")  # lesion-excluded slide: file allowed, unused
    after = evaluate("camelyon16", input_dir, ground_truth)
    assert after.code == 0, after.stderr
    assert after.metrics["aggregates"] == before
    assert before["slides_evaluated"] == 9 and before["slides_in_lesion_evaluation"] == 8


def test_no_detections_at_all_scores_zero(data, evaluate):
    input_dir, ground_truth = data
    for path in input_dir.glob("Test_*.csv"):
        path.write_text("")
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert run.code == 0, run.stderr
    assert run.metrics["aggregates"]["froc_score"] == 0.0
    assert all(run.metrics["aggregates"][f"froc_sensitivity_at_{k}"] == 0.0 for k in TARGET_KEYS)


def test_single_page_masks_at_another_level(tmp_path, evaluate):
    """mask_level 4: detections map to floor(coordinate / 16), thresholds at 16 px per pixel."""
    write_synthetic(tmp_path, seed=9, slides=6, mask_shape=(160, 224), pyramids=0)
    ground_truth = tmp_path / "ground-truth"
    for path in (tmp_path / "input").glob("Test_*.csv"):  # level 0 halved: same mask pixels
        rewrite(path, lambda lines: [",".join([c, str(int(x) // 2), str(int(y) // 2)])
                                     for c, x, y in (line.split(",") for line in lines if line != "p,x,y")])
    (ground_truth / "config.json").write_text(json.dumps({"mask_level": 4}))
    run = evaluate("camelyon16", tmp_path / "input", ground_truth)
    assert run.code == 0, run.stderr
    assert_matches_reference(run.metrics, reference_scores(tmp_path / "input", ground_truth, single_page_level=4))


def test_pixel_size_from_the_pyramid_tags(data, evaluate):
    input_dir, ground_truth = data
    import tifffile

    # Rewrite one pyramid's resolution as 0.3 µm: with the setting on, its thresholds change.
    path = ground_truth / "masks" / "Test_001.tif"
    with tifffile.TiffFile(path) as tif:
        levels = [level.asarray() for level in tif.series[0].levels]
    with tifffile.TiffWriter(path) as tif:
        tif.write(levels[0], tile=(256, 256), compression="zlib", resolution=(1e4 / 0.3, 1e4 / 0.3),
                  resolutionunit="CENTIMETER")
        for level in levels[1:]:
            tif.write(level, tile=(16, 16), compression="zlib", subfiletype=1)
    (ground_truth / "config.json").write_text(json.dumps({"pixel_size_from_tiff": True}))
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert run.code == 0, run.stderr
    assert_matches_reference(run.metrics, reference_scores(input_dir, ground_truth, pixel_size_from_tiff=True))


# ---- mask files ------------------------------------------------------------------------------


def write_pyramid(path, level0_shape, level5, subifds=False, level0_value=0):
    """A pyramid whose level 0 does NOT match level 5 (constant): reading it proves level 0 is
    never what the evaluation uses. Levels by successive halving, rounding up."""
    import tifffile

    shapes = [level0_shape]
    for _ in range(5):
        shapes.append(tuple(-(-s // 2) for s in shapes[-1]))
    with tifffile.TiffWriter(path) as tif:
        tif.write(np.full(level0_shape, level0_value, np.uint8), tile=(64, 64), compression="zlib",
                  subifds=5 if subifds else None)
        for shape in shapes[1:5]:
            tif.write(np.zeros(shape, np.uint8), compression="zlib", subfiletype=1)
        assert level5.shape == shapes[5]
        tif.write(level5, compression="zlib", subfiletype=1)


@pytest.mark.parametrize("subifds", [False, True])
def test_pyramid_level5_is_found_by_size_with_rounding(tmp_path, subifds):
    level5 = np.zeros((32, 51), np.uint8)  # ceil(1000 / 32) = 32, ceil(1610 / 32) = 51 via halving
    level5[3:9, 4:20] = 2
    path = tmp_path / "m.tif"
    write_pyramid(path, (1000, 1610), level5, subifds=subifds, level0_value=255)
    mask = read_mask(path, 5, 5, "Mask")
    assert mask.pyramidal and mask.level == 5
    assert np.array_equal(mask.tumor, level5 != 0)


def test_single_page_tiff_png_and_mha_are_at_mask_level(tmp_path):
    import SimpleITK as sitk
    import tifffile

    raster = np.zeros((20, 30), np.uint8)
    raster[5:9, 3:12] = 1
    tifffile.imwrite(tmp_path / "a.tif", raster)
    sitk.WriteImage(sitk.GetImageFromArray(raster), str(tmp_path / "b.png"))
    sitk.WriteImage(sitk.GetImageFromArray(raster), str(tmp_path / "c.mha"))
    for name in ("a.tif", "b.png", "c.mha"):
        mask = read_mask(tmp_path / name, 5, 6, "Mask")
        assert (mask.pyramidal, mask.level) == (False, 6)
        assert np.array_equal(mask.tumor, raster != 0)


def test_lzw_tiled_pyramid_as_asap_writes_it(tmp_path):
    """The CAMELYON16 release's masks are LZW-compressed, 512-tiled pyramids (ASAP's writer):
    imagecodecs (pinned in requirements.txt) decodes them; level 5 is read as written."""
    import tifffile

    level5 = np.zeros((32, 51), np.uint8)
    level5[3:9, 4:20] = 1
    shapes = [(1000, 1610)]
    for _ in range(5):
        shapes.append(tuple(-(-s // 2) for s in shapes[-1]))
    path = tmp_path / "Tumor_001.tif"
    with tifffile.TiffWriter(path) as tif:
        tif.write(np.zeros(shapes[0], np.uint8), tile=(512, 512), compression="lzw")
        for shape in shapes[1:5]:
            tif.write(np.zeros(shape, np.uint8), tile=(512, 512), compression="lzw", subfiletype=1)
        tif.write(level5, tile=(512, 512), compression="lzw", subfiletype=1)
    with tifffile.TiffFile(path) as tif:
        assert tif.pages[0].compression == tifffile.COMPRESSION.LZW
    mask = read_mask(path, 5, 5, "Mask of slide Tumor_001")
    assert mask.pyramidal and mask.level == 5
    assert np.array_equal(mask.tumor, level5 != 0)


def test_pyramid_without_level5_is_a_setup_error(tmp_path):
    import tifffile

    with tifffile.TiffWriter(tmp_path / "m.tif") as tif:
        tif.write(np.zeros((256, 256), np.uint8), compression="zlib")
        tif.write(np.zeros((128, 128), np.uint8), compression="zlib", subfiletype=1)
    with pytest.raises(SetupError, match="has no level 5 of about 8x8 pixels"):
        read_mask(tmp_path / "m.tif", 5, 5, "Mask")


# ---- ground-truth problems: exit 3 -------------------------------------------------------------


def append_row(path, row):
    with open(path, "a") as handle:
        handle.write(row + "\n")


@pytest.mark.parametrize("change, message", [
    (lambda gt: (gt / "reference.csv").write_text("image,type\n"
                                                  + "".join(f"Test_00{n},Tumor\n" for n in (1, 3, 5, 7))),
     "must hold both tumor and normal slides"),
    (lambda gt: (gt / "reference.csv").write_text("image,type\nTest_001,Tumor\nTest_002,Normal\n"),
     "mask(s) for slide(s) not in reference.csv: Test_003, Test_005, Test_007."),
    (lambda gt: (gt / "masks" / "Test_003.tif").unlink(), "tumor slide Test_003 has no mask masks/Test_003.tif"),
    (lambda gt: shutil.copy(gt / "masks" / "Test_003.tif", gt / "masks" / "Test_002.tif"),
     "slide Test_002 is Normal in reference.csv but has a tumor mask Test_002.tif"),
    (lambda gt: (gt / "config.json").write_text('{"pixel_size_um": 0}'), "'pixel_size_um' is 0.0"),
    # A slide's name names the participant's files: one leaving the folder is the ground truth's fault.
    (lambda gt: append_row(gt / "reference.csv", "../../../../X,Normal"), ": the path ../../../../X leaves the"),
    (lambda gt: append_row(gt / "reference.csv", "/tmp/X,Normal"), ": the path /tmp/X leaves the"),
    (lambda gt: append_row(gt / "reference.csv", "sub/X,Normal"), ": the slide name sub/X is not a plain file name."),
])
def test_ground_truth_problems_are_setup_errors(data, evaluate, change, message):
    input_dir, ground_truth = data
    change(ground_truth)
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert message in run.last_error_line


def test_empty_tumor_mask_and_only_itc_are_setup_errors(data, evaluate):
    import tifffile

    input_dir, ground_truth = data
    reference = "image,type\nTest_001,Tumor\nTest_002,Normal\n"
    (ground_truth / "reference.csv").write_text(reference)
    for path in (ground_truth / "masks").iterdir():
        path.unlink()
    keep = ["image,probability", "Test_001,0.7", "Test_002,0.2"]
    (input_dir / "slides.csv").write_text("\n".join(keep) + "\n")
    for path in input_dir.glob("Test_*.csv"):
        if path.stem not in ("Test_001", "Test_002"):
            path.unlink()
    tifffile.imwrite(ground_truth / "masks" / "Test_001.tif", np.zeros((160, 224), np.uint8))
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert run.code == 3 and "Test_001.tif has no tumor pixel" in run.last_error_line
    itc_only = np.zeros((160, 224), np.uint8)
    itc_only[50:53, 60:64] = 255
    tifffile.imwrite(ground_truth / "masks" / "Test_001.tif", itc_only)
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert run.code == 3 and "no lesion beyond isolated tumor cells" in run.last_error_line


# ---- bad submissions: exit 1, no metrics.json, one sentence -----------------------------------


def rewrite(path, transform):
    lines = path.read_text().splitlines()
    path.write_text("".join(line + "\n" for line in transform(lines)))


def first_row(lines):
    """Index and number (1-based) of the first data row of a detections file."""
    index = 1 if lines and lines[0] == "p,x,y" else 0
    return index, index + 1


@pytest.mark.parametrize("slide, transform, expected", [
    ("Test_001", lambda rows: rows[:1] + ["0.9,99999,100"] + rows[1:],
     "Slide Test_001: row 2 of Test_001.csv lies outside the slide (X 99999, Y 100; the slide's mask covers "
     "0 <= X < 7168 and 0 <= Y < 5120 level-0 pixels)."),
    ("Test_001", lambda rows: rows[:1] + ["0.9,7168,100"] + rows[1:],
     "Slide Test_001: row 2 of Test_001.csv lies outside the slide (X 7168, Y 100; the slide's mask covers "
     "0 <= X < 7168 and 0 <= Y < 5120 level-0 pixels)."),
    ("Test_002", lambda rows: rows[:1] + ["0.9,50,-1"] + rows[1:],
     "Slide Test_002: row 2 of Test_002.csv lies outside the slide (X 50, Y -1; coordinates must be 0 or more)."),
    ("Test_001", lambda rows: rows[:1] + ["0.5,12o4,400"] + rows[1:],
     "Slide Test_001: row 2 of Test_001.csv has X \"12o4\", not a number."),
    ("Test_002", lambda rows: rows[:1] + ["high,1,2"] + rows[1:],
     "Slide Test_002: row 2 of Test_002.csv has confidence \"high\", not a number."),
    ("Test_001", lambda rows: rows[:1] + ["0.5,1,2,3"] + rows[1:],
     "Slide Test_001: row 2 of Test_001.csv has 4 value(s); expected 3 (confidence, X, Y), found \"0.5,1,2,3\"."),
    ("Test_001", lambda rows: rows[:1] + ["nan,1,2"] + rows[1:],
     "Slide Test_001: row 2 of Test_001.csv has confidence \"nan\"; it must be a finite number."),
    ("Test_002", lambda rows: rows[:1] + ["0.5,inf,2"] + rows[1:],
     "Slide Test_002: row 2 of Test_002.csv has X \"inf\"; it must be a finite number."),
    ("Test_001", lambda rows: rows[:1] + ["-0.1,1,2"] + rows[1:],
     "Slide Test_001: row 2 of Test_001.csv has confidence -0.1; confidences must be 0 or more."),
    ("Test_002", lambda rows: ["confidence,x,y"] + rows,
     "Slide Test_002: row 1 of Test_002.csv has confidence \"confidence\", not a number."),
])
def test_bad_detection_rows_are_rejected(data, evaluate, slide, transform, expected):
    input_dir, ground_truth = data
    path = input_dir / f"{slide}.csv"
    # Rows are inserted after the first line: make that line a data row, so numbers are stable.
    rewrite(path, lambda lines: [line for line in lines if line != "p,x,y"] or ["0.1,1,1"])
    rewrite(path, transform)
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False), run.stderr
    assert run.last_error_line == expected


@pytest.mark.parametrize("transform, expected", [
    (lambda rows: rows + ["Test_001,0.5"], "Slide Test_001: slides.csv gives it two probabilities (second in row 12)."),
    (lambda rows: [x if not x.startswith("Test_003") else "Test_003,NaN" for x in rows],
     "Slide Test_003: the probability in row 4 of slides.csv is \"NaN\"; it must be a finite number."),
    (lambda rows: [x if not x.startswith("Test_003") else "Test_003,-inf" for x in rows],
     "Slide Test_003: the probability in row 4 of slides.csv is \"-inf\"; it must be a finite number."),
    (lambda rows: [x if not x.startswith("Test_003") else "Test_003,likely" for x in rows],
     "Slide Test_003: the probability in row 4 of slides.csv is \"likely\", not a number."),
    (lambda rows: [x if not x.startswith("Test_003") else "Test_003" for x in rows],
     "slides.csv, row 4: expected 'image, probability', found \"Test_003\"."),
    (lambda rows: [x for x in rows if not x.startswith("Test_003")],
     "slides.csv has no probability for 1 slide(s) that have a detections file (Test_003)."),
])
def test_bad_slide_tables_are_rejected(data, evaluate, transform, expected):
    input_dir, ground_truth = data
    rewrite(input_dir / "slides.csv", transform)
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False), run.stderr
    assert run.last_error_line == expected


def test_missing_and_extra_slides_are_named(data, evaluate):
    input_dir, ground_truth = data
    (input_dir / "Test_004.csv").unlink()
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert run.last_error_line == ("No detections file for 1 slide(s) of slides.csv (Test_004.csv); every slide "
                                   "needs one, empty when nothing is detected.")
    rewrite(input_dir / "slides.csv", lambda rows: [x for x in rows if not x.startswith("Test_004")] + ["Test_777,0.5"])
    (input_dir / "Test_777.csv").write_text("")
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == ("The submission does not match the test set: 1 slide(s) not in the test set "
                                   "(Test_777); no prediction for 1 slide(s) of the test set (Test_004).")
    (input_dir / "slides.csv").unlink()
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert run.last_error_line.startswith("The submission must hold exactly one slides.csv")


def algorithm_input(tmp_path):
    write_synthetic(tmp_path, seed=5, slides=4, mask_shape=(160, 224), pyramids=0, phase="algorithm")
    jobs = json.loads((tmp_path / "input" / "predictions.json").read_text())
    job = next(j for j in jobs if j["inputs"][0]["image"]["name"] == "Test_001.tif")
    return tmp_path / "input", tmp_path / "ground-truth", tmp_path / "input" / job["pk"] / "output"


@pytest.mark.parametrize("file, content, expected", [
    ("metastasis-likelihood.json", '"0.5"',
     "Slide Test_001: the output 'metastasis-likelihood' is \"0.5\"; it must be a finite number."),
    ("metastasis-likelihood.json", "NaN",
     "Slide Test_001: the output 'metastasis-likelihood' is NaN; it must be a finite number."),
    ("metastasis-detections.json", '{"points": [{"point": [0.1, 0.1, 0]}]}',
     "Slide Test_001: the output 'metastasis-detections': point 0 has probability null, not a number."),
    ("metastasis-detections.json", '{"points": [{"point": [0.1], "probability": 0.5}]}',
     "Slide Test_001: the output 'metastasis-detections': point 0 has no 'point' [x, y, z] in mm."),
    ("metastasis-detections.json", '[]',
     "Slide Test_001: the output 'metastasis-detections' must be a 'Multiple points' object with a list of "
     "points, found a list."),
    ("metastasis-detections.json", '{"points": [{"point": [0.1, 0.1, 0], "probability": 0.5}, '
                                   '{"point": [2.0, 0.1, 0], "probability": 0.5}]}',
     "Slide Test_001: point 1 of output 'metastasis-detections' lies outside the slide (X 8230.45, Y 411.523; "
     "the slide's mask covers 0 <= X < 7168 and 0 <= Y < 5120 level-0 pixels)."),
])
def test_bad_algorithm_outputs_are_rejected(tmp_path, evaluate, file, content, expected):
    input_dir, ground_truth, output = algorithm_input(tmp_path)
    (output / file).write_text(content)
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False), run.stderr
    assert run.last_error_line == expected


# ---- the bundled example -----------------------------------------------------------------------


def test_example_expected_metrics_match_the_2016_pipeline():
    expected = json.loads((ROOT / "test" / "camelyon16" / "expected_metrics.json").read_text())
    reference = reference_scores(ROOT / "test" / "camelyon16" / "input", ROOT / "ground-truth" / "camelyon16")
    assert_matches_reference(expected, reference)
    masks = sorted(p.name for p in (ROOT / "ground-truth" / "camelyon16" / "masks").iterdir())
    assert len(masks) >= 3 and expected["aggregates"]["lesions_itc_excluded"] >= 1


def test_release_mask_names_and_reference_without_header(data, evaluate):
    """Test_001_Mask.tif (the release's naming) and a reference.csv without header, with a
    further column: the same numbers."""
    input_dir, ground_truth = data
    before = evaluate("camelyon16", input_dir, ground_truth).metrics["aggregates"]
    masks = ground_truth / "masks"
    for path in masks.iterdir():
        path.rename(masks / f"{path.stem}_Mask{path.suffix}")
    rows = (ground_truth / "reference.csv").read_text().splitlines()[1:]
    (ground_truth / "reference.csv").write_text("".join(f"{row},Macro\n" for row in rows))
    run = evaluate("camelyon16", input_dir, ground_truth)
    assert run.code == 0, run.stderr
    assert run.metrics["aggregates"] == before


def test_broken_mask_file_is_a_setup_error(tmp_path):
    (tmp_path / "m.tif").write_bytes(b"II*\x00garbage")
    with pytest.raises(SetupError, match=r"^Mask of slide Test_001: m.tif is not a readable TIFF \("):
        read_mask(tmp_path / "m.tif", 5, 5, "Mask of slide Test_001")
