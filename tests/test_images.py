"""evaluation.images: voxels in numpy order with SimpleITK's geometry, the tolerance check, and
one-line errors naming the file of the case."""

import numpy as np
import pytest
import SimpleITK as sitk

from evaluation.errors import SetupError, SubmissionError
from evaluation.images import Geometry, read_image

GEOMETRY = Geometry((5, 4, 3), (0.98, 0.98, 3.0), (-120.0, -110.5, -300.25), (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0))


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
    voxels, geometry = read_image(tmp_path / name, "Patient P")
    assert np.array_equal(voxels, array) and voxels.dtype == np.uint8
    assert geometry.size == (5, 4, 3)
    assert geometry.differences(GEOMETRY, rtol=1e-6) == []
    assert geometry.voxel_volume == pytest.approx(0.98 * 0.98 * 3.0)


def test_unreadable_file_names_the_case_and_file(tmp_path):
    (tmp_path / "seg.mha").write_bytes(b"not an image")
    with pytest.raises(SubmissionError, match=r"^Patient P, segmentation: seg.mha is not a readable image \("):
        read_image(tmp_path / "seg.mha", "Patient P, segmentation")
    with pytest.raises(SetupError, match="seg.mha is not a readable image"):
        read_image(tmp_path / "seg.mha", "Ground truth", error=SetupError)


def test_multi_component_image_is_rejected(tmp_path):
    image = sitk.GetImageFromArray(np.zeros((3, 4, 5, 3), dtype=np.uint8), isVector=True)
    sitk.WriteImage(image, str(tmp_path / "rgb.mha"))
    with pytest.raises(SubmissionError, match="rgb.mha has 3 components per voxel"):
        read_image(tmp_path / "rgb.mha", "Patient P")


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
