"""evaluation.reading.images: voxels in numpy order with SimpleITK's geometry, the header read
alone before any decoding, the tolerance check, and one-line errors naming the file of the case,
the submission's (exit 1) or the ground truth's (exit 3) by the file's Origin."""

import numpy as np
import pytest
import SimpleITK as sitk

from evaluation.errors import SetupError, SubmissionError
from evaluation.reading.files import Origin
from evaluation.reading.images import Geometry, ImageFile, open_image, read_image

GEOMETRY = Geometry((5, 4, 3), (0.98, 0.98, 3.0), (-120.0, -110.5, -300.25),
                    (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0))


def write(path, array, geometry=GEOMETRY):
    image = sitk.GetImageFromArray(array)
    image.SetSpacing(geometry.spacing)
    image.SetOrigin(geometry.origin)
    image.SetDirection(geometry.direction)
    sitk.WriteImage(image, str(path), useCompression=True)


@pytest.mark.parametrize("name", ["mask.nii.gz", "mask.mha", "mask.nrrd"])
def test_read_image_keeps_voxels_and_geometry(tmp_path, name):
    array = np.arange(60, dtype=np.uint8).reshape(3, 4, 5)  # z, y, x
    write(tmp_path / name, array)
    voxels, geometry = read_image(Origin.submission(tmp_path), tmp_path / name, "Patient P")
    assert np.array_equal(voxels, array) and voxels.dtype == np.uint8
    assert geometry.size == (5, 4, 3) and geometry.shape == (3, 4, 5)
    assert geometry.differences(GEOMETRY, rtol=1e-6) == []
    assert geometry.voxel_volume == pytest.approx(0.98 * 0.98 * 3.0)


@pytest.mark.parametrize("name", ["mask.nii.gz", "mask.mha"])
def test_open_image_reads_the_header_and_read_checks_the_shape_first(tmp_path, name):
    array = np.ones((3, 4, 5), dtype=np.uint8)
    write(tmp_path / name, array)
    image = open_image(Origin.submission(tmp_path), tmp_path / name, "Patient P, segmentation")
    assert isinstance(image, ImageFile)
    assert (image.shape, image.components) == ((3, 4, 5), 1)
    assert image.geometry.differences(GEOMETRY, rtol=1e-6) == []
    with pytest.raises(SubmissionError) as error:
        image.read((3, 4, 6))
    assert str(error.value) == "Patient P, segmentation: shape 3x4x5, expected 3x4x6 as in the ground truth."
    assert np.array_equal(image.read((3, 4, 5)), array)


def test_a_single_slice_volume_reads_as_2d_when_2d_is_expected(tmp_path):
    array = np.arange(20, dtype=np.uint8).reshape(1, 4, 5)
    write(tmp_path / "slice.mha", array)
    image = open_image(Origin.submission(tmp_path), tmp_path / "slice.mha", "Image I")
    assert np.array_equal(image.read((4, 5)), array[0])


def test_unreadable_file_names_the_case_and_file_and_whose_fault_it_is(tmp_path):
    (tmp_path / "seg.mha").write_bytes(b"not an image")
    line = "seg.mha is not a readable MetaImage (no ElementDataFile in its header)."
    with pytest.raises(SubmissionError) as error:
        read_image(Origin.submission(tmp_path), tmp_path / "seg.mha", "Patient P, segmentation")
    assert str(error.value) == f"Patient P, segmentation: {line}"
    with pytest.raises(SetupError) as error:
        read_image(Origin.ground_truth(tmp_path), tmp_path / "seg.mha", "Ground truth seg.mha")
    assert str(error.value) == f"Ground truth seg.mha: {line}"


def test_multi_component_image_is_rejected_before_decoding(tmp_path):
    image = sitk.GetImageFromArray(np.zeros((3, 4, 5, 3), dtype=np.uint8), isVector=True)
    sitk.WriteImage(image, str(tmp_path / "rgb.mha"))
    opened = open_image(Origin.submission(tmp_path), tmp_path / "rgb.mha", "Patient P")
    assert opened.components == 3
    with pytest.raises(SubmissionError) as error:
        opened.read((3, 4, 5))
    assert str(error.value) == ("Patient P: rgb.mha has 3 components per pixel; a single-channel label image is "
                                "expected.")


@pytest.mark.parametrize("change, expected", [
    (dict(size=(5, 4, 4)), ["size"]),
    (dict(size=(5, 4)), ["size"]),
    (dict(spacing=(0.98, 0.98, 3.0 * (1 + 2e-4))), ["spacing"]),
    (dict(spacing=(0.98, 0.98, 3.0 * (1 + 5e-5))), []),  # within 1e-4 relative
    (dict(origin=(-120.0, -110.5, -300.25 + 0.5)), ["origin"]),
    (dict(origin=(-120.0, -110.5, -300.25 * (1 + 5e-5))), []),
    (dict(direction=(1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 1.0)), ["direction"]),
    (dict(direction=(1.0, 5e-5, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)), []),  # near zero: absolute tolerance
    (dict(spacing=(1.0, 1.0, 1.0), origin=(0.0, 0.0, 0.0)), ["spacing", "origin"]),
])
def test_geometry_differences_with_tolerance(change, expected):
    other = Geometry(**{**GEOMETRY.__dict__, **change})
    assert GEOMETRY.differences(other, rtol=1e-4) == expected


def test_geometry_describe_is_one_readable_line():
    assert GEOMETRY.describe() == ("size (5, 4, 3), spacing (0.98, 0.98, 3), origin (-120, -110.5, -300.25), "
                                   "direction (1, 0, 0, 0, 1, 0, 0, 0, 1)")
