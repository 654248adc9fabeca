"""evaluation.reading.label_maps with real files on disk (SimpleITK writes .mha and .nii.gz,
tifffile writes .tif): a label map is read only on the ground truth's grid (checked in the
header, before decoding, each of size, spacing, origin and direction), holds only the declared
labels, and every refusal is one sentence naming the case, what differs and both values."""

from __future__ import annotations

import numpy as np
import pytest
import SimpleITK as sitk
import tifffile

from evaluation.errors import SetupError, SubmissionError
from evaluation.reading.files import Origin
from evaluation.reading.images import Geometry, open_image
from evaluation.reading.label_maps import (
    GRID_TOLERANCE,
    LabelMap,
    label_voxels,
    read_label_map,
    read_truth_label_map,
)

SPACING = (0.8, 0.6, 2.5)  # x, y, z: anisotropic, so that an axis-order mistake shows
ORIGIN = (-120.0, -110.5, -300.25)
SHAPE = (4, 6, 5)  # z, y, x


def write(path, array, spacing=SPACING, origin=ORIGIN, direction=None):
    image = sitk.GetImageFromArray(array)
    image.SetSpacing(spacing)
    image.SetOrigin(origin)
    image.SetDirection(direction or tuple(np.eye(len(spacing)).reshape(-1)))
    sitk.WriteImage(image, str(path), useCompression=True)
    return path


def labels_array(shape=SHAPE, dtype=np.uint8, seed=0):
    return np.random.default_rng(seed).integers(0, 3, size=shape).astype(dtype)


def truth_geometry(tmp_path, array=None, **grid):
    path = write(tmp_path / "truth.mha", labels_array() if array is None else array, **grid)
    return open_image(Origin.ground_truth(tmp_path), path, "Ground truth truth.mha").geometry


def read(tmp_path, path, expected, labels=(0, 1, 2), **options):
    image = open_image(Origin.submission(tmp_path), path, "Case 7, segmentation")
    return read_label_map(image, expected, labels, "Case 7", **options)


@pytest.mark.parametrize("name", ["seg.mha", "seg.nii.gz"])
def test_a_label_map_on_the_grid_is_read_with_spacing_in_numpy_order(tmp_path, name):
    array = labels_array()
    expected = truth_geometry(tmp_path)
    found = read(tmp_path, write(tmp_path / name, array), expected)
    assert isinstance(found, LabelMap)
    assert np.array_equal(found.voxels, array) and found.voxels.dtype == np.uint8
    sitk_spacing = sitk.ReadImage(str(tmp_path / name)).GetSpacing()  # x, y, z
    assert found.spacing == pytest.approx(tuple(reversed(sitk_spacing)))  # z, y, x as the array
    assert found.spacing == pytest.approx((2.5, 0.6, 0.8))
    assert found.voxels.shape == SHAPE
    assert found.voxel_volume == pytest.approx(0.8 * 0.6 * 2.5)


def test_a_2d_tif_written_by_tifffile_is_read(tmp_path):
    array = labels_array((6, 5))
    tifffile.imwrite(tmp_path / "truth.tif", array)
    tifffile.imwrite(tmp_path / "seg.tif", array)
    expected = open_image(Origin.ground_truth(tmp_path), tmp_path / "truth.tif", "Ground truth").geometry
    found = read(tmp_path, tmp_path / "seg.tif", expected)
    assert np.array_equal(found.voxels, array) and len(found.spacing) == 2


def test_a_single_slice_volume_is_read_as_a_2d_label_map(tmp_path):
    array = labels_array((6, 5))
    expected = truth_geometry(tmp_path, array, spacing=(0.8, 0.6), origin=(1.0, 2.0), direction=(1.0, 0.0, 0.0, 1.0))
    found = read(tmp_path, write(tmp_path / "seg.mha", array[None], spacing=(0.8, 0.6, 3.0), origin=(1.0, 2.0, 0.0)),
                 expected)
    assert np.array_equal(found.voxels, array)
    assert found.spacing == pytest.approx((0.6, 0.8)) and found.geometry.size == (5, 6)


def other_direction():
    angle = np.deg2rad(10.0)
    return (np.cos(angle), -np.sin(angle), 0.0, np.sin(angle), np.cos(angle), 0.0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("name, array, grid, line", [
    ("size", labels_array((4, 6, 6)), {},
     "Case 7: the segmentation's size (6, 6, 4) differs from the ground truth's (5, 6, 4) (x, y, z); label maps are "
     "never resampled."),
    ("spacing", labels_array(), {"spacing": (0.8, 0.6, 3.0)},
     "Case 7: the segmentation's spacing (0.8, 0.6, 3) differs from the ground truth's (0.8, 0.6, 2.5) (x, y, z; "
     "tolerance 0.0001); label maps are never resampled."),
    ("origin", labels_array(), {"origin": (-120.0, -110.0, -300.25)},
     "Case 7: the segmentation's origin (-120, -110, -300.25) differs from the ground truth's (-120, -110.5, -300.25) "
     "(x, y, z; tolerance 0.0001); label maps are never resampled."),
    ("direction", labels_array(), {"direction": (1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, -1.0)},
     "Case 7: the segmentation's direction (1, 0, 0, 0, -1, 0, 0, 0, -1) differs from the ground truth's "
     "(1, 0, 0, 0, 1, 0, 0, 0, 1) (row by row; tolerance 0.0001); label maps are never resampled."),
    ("several", labels_array(), {"spacing": (1.0, 1.0, 1.0), "origin": (0.0, 0.0, 0.0)},
     "Case 7: the segmentation's spacing (1, 1, 1) differs from the ground truth's (0.8, 0.6, 2.5) (x, y, z; "
     "tolerance 0.0001), and so does its origin; label maps are never resampled."),
])
def test_another_grid_is_refused_naming_what_differs_and_both_values(tmp_path, name, array, grid, line):
    expected = truth_geometry(tmp_path)
    with pytest.raises(SubmissionError) as error:
        read(tmp_path, write(tmp_path / "seg.nii.gz", array, **{"spacing": SPACING, "origin": ORIGIN, **grid}),
             expected)
    assert str(error.value) == line


def test_an_oblique_direction_differing_slightly_is_refused(tmp_path):
    expected = truth_geometry(tmp_path, direction=other_direction())
    with pytest.raises(SubmissionError) as error:
        read(tmp_path, write(tmp_path / "seg.mha", labels_array()), expected)
    assert "the segmentation's direction (1, 0, 0, 0, 1, 0, 0, 0, 1) differs from the ground truth's (0.984808, " in (
        str(error.value))


@pytest.mark.parametrize("relative", [0.5 * GRID_TOLERANCE, 2 * GRID_TOLERANCE])
def test_the_tolerance_is_relative_and_absolute_near_zero(tmp_path, relative):
    expected = truth_geometry(tmp_path, origin=(0.0, -110.5, -300.25))
    spacing = tuple(s * (1 + relative) for s in SPACING)
    origin = (relative, -110.5 * (1 + relative), -300.25)  # near zero: absolute
    path = write(tmp_path / "seg.mha", labels_array(), spacing=spacing, origin=origin)
    if relative < GRID_TOLERANCE:
        assert read(tmp_path, path, expected).voxels.shape == SHAPE
    else:
        with pytest.raises(SubmissionError, match=r"spacing .* differs .* and so does its origin"):
            read(tmp_path, path, expected)
    with pytest.raises(SubmissionError, match="spacing"):  # a tighter tolerance is the caller's to give
        read(tmp_path, path, expected, tolerance=relative / 10)


def test_2d_where_3d_is_expected_is_refused(tmp_path):
    expected = truth_geometry(tmp_path)
    with pytest.raises(SubmissionError) as error:
        read(tmp_path, write(tmp_path / "seg.mha", labels_array((6, 5)), spacing=(0.8, 0.6), origin=(0.0, 0.0)),
             expected)
    assert str(error.value) == ("Case 7: the segmentation is 2D, size (5, 6), where the ground truth is 3D, size "
                                "(5, 6, 4); label maps are never resampled.")


def test_3d_where_2d_is_expected_is_refused(tmp_path):
    expected = truth_geometry(tmp_path, labels_array((6, 5)), spacing=(0.8, 0.6), origin=(0.0, 0.0),
                              direction=(1.0, 0.0, 0.0, 1.0))
    with pytest.raises(SubmissionError, match=r"^Case 7: the segmentation is 3D, size \(5, 6, 4\), where the ground "
                                              r"truth is 2D, size \(5, 6\);"):
        read(tmp_path, write(tmp_path / "seg.mha", labels_array()), expected)


def test_the_grid_is_checked_in_the_header_before_decoding(tmp_path):
    """A MetaImage claiming 2000^3 voxels over 64 bytes: refused by its size, never decoded (a
    decoding attempt would say the data is truncated)."""
    header = ("ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
              "ElementSpacing = 0.8 0.6 2.5\nDimSize = 2000 2000 2000\nElementType = MET_UCHAR\n"
              "ElementDataFile = LOCAL\n")
    (tmp_path / "seg.mha").write_bytes(header.encode() + b"\0" * 64)
    expected = truth_geometry(tmp_path)
    with pytest.raises(SubmissionError) as error:
        read(tmp_path, tmp_path / "seg.mha", expected)
    assert str(error.value).startswith("Case 7: the segmentation's size (2000, 2000, 2000) differs from the ground "
                                       "truth's (5, 6, 4) (x, y, z)")


@pytest.mark.parametrize("dtype, values, shown", [
    (np.uint8, (3,), "3 (1 voxel)"),
    (np.uint8, (3, 7, 7), "3 (1 voxel), 7 (2 voxels)"),
    (np.uint16, (300,), "300 (1 voxel)"),
    (np.int16, (-1,), "-1 (1 voxel)"),
    (np.int32, (70000,), "70000 (1 voxel)"),
    (np.float32, (0.5,), "0.5 (1 voxel)"),
    (np.float32, (np.nan,), "NaN (1 voxel)"),
    (np.float64, (-np.inf,), "-inf (1 voxel)"),
])
def test_a_label_outside_the_declared_set_is_refused_naming_it(tmp_path, dtype, values, shown):
    array = labels_array(dtype=dtype)
    array.reshape(-1)[-len(values):] = values
    expected = truth_geometry(tmp_path)
    with pytest.raises(SubmissionError) as error:  # .mha: ITK's NIfTI reader turns NaN into 0
        read(tmp_path, write(tmp_path / "seg.mha", array), expected)
    assert str(error.value) == f"Case 7: the segmentation holds label(s) {shown}; only 0, 1 and 2 are allowed."


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.float32, np.float64])
def test_whole_values_of_any_integer_or_float_type_are_read_as_uint8(tmp_path, dtype):
    array = labels_array()
    expected = truth_geometry(tmp_path)
    found = read(tmp_path, write(tmp_path / "seg.mha", array.astype(dtype)), expected)
    assert found.voxels.dtype == np.uint8 and np.array_equal(found.voxels, array)


def test_labels_need_not_be_a_range(tmp_path):
    array = labels_array() * 2  # 0, 2, 4
    expected = truth_geometry(tmp_path)
    path = write(tmp_path / "seg.mha", array)
    assert np.array_equal(read(tmp_path, path, expected, labels=(0, 2, 4)).voxels, array)
    with pytest.raises(SubmissionError) as error:
        read(tmp_path, path, expected, labels=(0, 4, 5), labels_text="0 (background), 4 and 5")
    assert str(error.value) == (f"Case 7: the segmentation holds label(s) 2 ({int((array == 2).sum())} voxels); only "
                                f"0 (background), 4 and 5 are allowed.")


def test_labels_above_255_keep_a_wider_type(tmp_path):
    array = labels_array(dtype=np.uint16) * 500
    expected = truth_geometry(tmp_path)
    found = read(tmp_path, write(tmp_path / "seg.mha", array), expected, labels=(0, 500, 1000))
    assert found.voxels.dtype == np.uint16 and np.array_equal(found.voxels, array)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.int32, np.float32])
def test_the_values_named_are_those_numpy_unique_finds(dtype):
    """The counts of the values that are no label, against np.unique of the whole volume."""
    rng = np.random.default_rng(3)
    array = rng.integers(0, 40, size=(30, 40, 50)).astype(dtype)
    if np.issubdtype(dtype, np.signedinteger):
        array[::7] -= 20
    allowed = (0, 1, 2, 5)
    values, counts = np.unique(array, return_counts=True)
    stray = [(v, n) for v, n in zip(values.tolist(), counts.tolist(), strict=True) if v not in allowed]
    expected = ", ".join(f"{v:g} ({n} voxels)" for v, n in stray[:5]) + f" and {len(stray) - 5} more"
    with pytest.raises(SubmissionError) as error:
        label_voxels(array, allowed, Origin.submission("/nonexistent"), "Case 7: the segmentation")
    assert str(error.value) == f"Case 7: the segmentation holds label(s) {expected}; only 0, 1, 2 and 5 are allowed."


def test_a_uint8_map_is_not_copied_and_a_boolean_one_is_viewed():
    array = labels_array()
    assert label_voxels(array, (0, 1, 2), Origin.submission("/x"), "Case 7") is array
    mask = array > 0
    viewed = label_voxels(mask, (0, 1), Origin.submission("/x"), "Case 7")
    assert viewed.dtype == np.uint8 and np.shares_memory(viewed, mask)


def test_a_complex_pixel_type_is_refused(tmp_path):
    expected = truth_geometry(tmp_path)
    path = write(tmp_path / "seg.mha", labels_array().astype(np.complex64))
    with pytest.raises(SubmissionError) as error:  # SimpleITK stores complex pixels as two components
        read(tmp_path, path, expected)
    assert str(error.value) == ("Case 7, segmentation: seg.mha has 2 components per pixel; a single-channel label "
                                "image is expected.")
    with pytest.raises(SubmissionError) as error:  # any other reader's complex array
        label_voxels(labels_array().astype(np.complex64), (0, 1, 2), Origin.submission(tmp_path),
                     "Case 7: the segmentation")
    assert str(error.value) == ("Case 7: the segmentation has pixels of type complex64; a label map holds whole "
                                "numbers (only 0, 1 and 2 are allowed).")


def test_the_ground_truth_side_is_the_organizers_fault(tmp_path):
    array = labels_array()
    write(tmp_path / "7.nii.gz", array)
    truth = read_truth_label_map(tmp_path, tmp_path / "7.nii.gz", (0, 1, 2), dimensions=3)
    assert np.array_equal(truth.voxels, array) and truth.spacing == pytest.approx((2.5, 0.6, 0.8))
    assert isinstance(truth.geometry, Geometry)
    with pytest.raises(SetupError) as error:
        read_truth_label_map(tmp_path, tmp_path / "7.nii.gz", (0, 1))
    assert str(error.value).startswith("Ground truth 7.nii.gz holds label(s) 2 (")
    with pytest.raises(SetupError) as error:
        read_truth_label_map(tmp_path, tmp_path / "7.nii.gz", (0, 1, 2), dimensions=2)
    assert str(error.value) == "Ground truth 7.nii.gz: the label map is 3D (5x6x4); a 2D label map is expected."
