"""evaluation.reading.annotations: grand-challenge.org's "Multiple points" and "Multiple 2D
bounding boxes" outputs, read from real JSON files of a job, validated, and turned into voxel
indices, checked against SimpleITK's own transform on an oblique grid."""

from __future__ import annotations

import json

import numpy as np
import pytest
import SimpleITK as sitk

from evaluation.errors import SetupError, SubmissionError
from evaluation.platform.cases import Case
from evaluation.platform.predictions import parse_predictions
from evaluation.reading.annotations import (
    index_to_world,
    parse_boxes,
    parse_points,
    read_boxes,
    read_points,
    world_to_index,
)
from evaluation.reading.files import Origin
from evaluation.reading.images import Geometry, open_image

VERSION = {"major": 1, "minor": 0}


def rotation(ax, ay, az):
    """A proper rotation (det 1), as an oblique scan's direction."""
    cx, sx, cy, sy, cz, sz = np.cos(ax), np.sin(ax), np.cos(ay), np.sin(ay), np.cos(az), np.sin(az)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


def oblique_image(size=(40, 30, 20)):
    image = sitk.Image(list(size), sitk.sitkUInt8)
    image.SetSpacing((0.7, 0.9, 2.5))
    image.SetOrigin((-100.0, 35.5, 12.25))
    image.SetDirection(tuple(rotation(0.3, -0.2, 0.5).reshape(-1)))
    return image


def geometry_of(image) -> Geometry:
    return Geometry(tuple(image.GetSize()), tuple(image.GetSpacing()), tuple(image.GetOrigin()),
                    tuple(image.GetDirection()))


def test_world_to_index_inverts_simpleitk_on_an_oblique_grid(tmp_path):
    image = oblique_image()
    sitk.WriteImage(image, str(tmp_path / "grid.mha"))
    geometry = open_image(Origin.ground_truth(tmp_path), tmp_path / "grid.mha", "Ground truth").geometry  # the header
    rng = np.random.default_rng(1)
    indices_xyz = rng.uniform(-0.5, np.array(image.GetSize()) - 0.5, size=(50, 3))
    world = np.array([image.TransformContinuousIndexToPhysicalPoint(tuple(i)) for i in indices_xyz])
    ours = world_to_index(world, geometry)
    assert ours.shape == (50, 3)
    np.testing.assert_allclose(ours, indices_xyz[:, ::-1], atol=1e-9)  # numpy order (z, y, x)
    theirs = np.array([image.TransformPhysicalPointToContinuousIndex(tuple(p)) for p in world])
    np.testing.assert_allclose(ours[:, ::-1], theirs, atol=1e-9)
    np.testing.assert_allclose(index_to_world(ours, geometry), world, atol=1e-9)


def test_world_to_index_on_a_2d_grid_ignores_z():
    image = sitk.Image([30, 20], sitk.sitkUInt8)
    image.SetSpacing((0.5, 0.25))
    image.SetOrigin((3.0, -4.0))
    angle = 0.4
    image.SetDirection((np.cos(angle), -np.sin(angle), np.sin(angle), np.cos(angle)))
    world = image.TransformContinuousIndexToPhysicalPoint((12.25, 7.5))
    ours = world_to_index(np.array([[*world, 99.0]]), geometry_of(image))
    np.testing.assert_allclose(ours, [[7.5, 12.25]], atol=1e-12)


def points_document(points, **extra):
    return {"type": "Multiple points", "version": VERSION, "points": points, **extra}


def test_points_are_read_with_names_and_probabilities():
    image = oblique_image()
    geometry = geometry_of(image)
    world = [image.TransformContinuousIndexToPhysicalPoint(i) for i in ((1.0, 2.0, 3.0), (39.4, 29.4, 19.4))]
    document = points_document([{"name": "nodule 1", "point": list(world[0]), "probability": 0.25},
                                {"point": list(world[1]), "type": "Point"}], name="nodules")
    points = parse_points(document, geometry, "Case 7, output 'nodules'")
    assert len(points) == 2 and points.names == ("nodule 1", None) and points.probabilities == (0.25, None)
    np.testing.assert_allclose(points.index, [[3.0, 2.0, 1.0], [19.4, 29.4, 39.4]], atol=1e-9)
    np.testing.assert_array_equal(points.world, np.array(world))
    empty = parse_points(points_document([]), geometry, "Case 7")
    assert len(empty) == 0 and empty.index.shape == (0, 3)
    assert parse_points(document, None, "Case 7").index is None  # no grid: world coordinates only


ORIGIN_POINT = [0.0, 0.0, 0.0]


@pytest.mark.parametrize("document, line", [
    ([], "expected a JSON object of type 'Multiple points', found a list"),
    ({"type": "Multiple 2D bounding boxes", "version": VERSION, "points": []},
     "the output's type is \"Multiple 2D bounding boxes\"; expected 'Multiple points'"),
    ({"type": "Multiple points", "points": []}, 'the output has no "version" (e.g. {"major": 1, "minor": 0})'),
    (points_document([], version={"major": 1.5, "minor": 0}),
     "the output's version major is 1.5; it must be a whole number of at least 0"),
    ({"type": "Multiple points", "version": VERSION}, "the output has no 'points' list"),
    (points_document({}), "the output's 'points' is an object; expected a list"),
    (points_document([], extra=1), "the output has the key \"extra\", which the platform's schema does not allow "
                                   "(allowed: type, version, name, points)"),
    (points_document(["a"]), "point 0 is text; expected an object"),
    (points_document([{"point": ORIGIN_POINT, "probabilty": 0.5}]),
     "point 0 has the key \"probabilty\", which the platform's schema does not allow (allowed: point, name, "
     "probability, type)"),
    (points_document([{"name": 3, "point": ORIGIN_POINT}]), "the name of point 0 is 3; a name is text"),
    (points_document([{"name": "a"}]), "point 0 ('a') has no \"point\" (x, y, z)"),
    (points_document([{"point": [1.0, 2.0]}]), "point 0 is a list of 2 numbers; expected 3 numbers (x, y, z in "
                                               "world coordinates)"),
    (points_document([{"point": "1, 2, 3"}]), "point 0 is text; expected 3 numbers (x, y, z in world coordinates)"),
    (points_document([{"point": [1.0, float("nan"), 3.0]}]),
     "point 0 has y = NaN; every coordinate must be a finite number"),
    (points_document([{"point": [1.0, 2.0, True]}]), "point 0 has z = true; every coordinate must be a finite number"),
    (points_document([{"point": ORIGIN_POINT, "probability": 1.5}]),
     "the probability of point 0 is 1.5; it must be a number from 0 to 1"),
    (points_document([{"point": ORIGIN_POINT, "probability": float("nan")}]),
     "the probability of point 0 is NaN; it must be a number from 0 to 1"),
    (points_document([{"point": ORIGIN_POINT, "type": "Line"}]),
     "the type of point 0 is \"Line\"; expected 'Point' (or no type)"),
])
def test_malformed_points_are_refused_in_one_sentence(document, line):
    with pytest.raises(SubmissionError) as error:
        parse_points(document, None, "Case 7, output 'nodules'")
    assert str(error.value) == f"Case 7, output 'nodules': {line}."


def test_a_point_outside_the_image_is_refused_naming_the_case_and_the_point():
    image = oblique_image()
    inside = image.TransformContinuousIndexToPhysicalPoint((39.5, 29.5, 19.5))  # the last voxel's far corner
    outside = image.TransformContinuousIndexToPhysicalPoint((40.0, 3.0, 2.0))
    document = points_document([{"point": list(inside)}, {"name": "far", "point": list(outside)}])
    with pytest.raises(SubmissionError) as error:
        parse_points(document, geometry_of(image), "Case 7, output 'nodules'")
    shown = ", ".join(f"{v:g}" for v in outside)
    assert str(error.value) == (f"Case 7, output 'nodules': point 1 ('far') at ({shown}) (x, y, z) lies outside the "
                                f"image: its voxel index (40, 3, 2) is not within the size (40, 30, 20) (x, y, z).")
    with pytest.raises(SetupError):  # a ground truth's points are the organizer's
        parse_points(document, geometry_of(image), "Ground truth 7.json", error=SetupError)


def boxes_document(boxes):
    return {"type": "Multiple 2D bounding boxes", "version": VERSION, "boxes": boxes}


def test_boxes_are_read_and_bounded_in_voxels():
    image = sitk.Image([64, 48, 10], sitk.sitkUInt8)
    image.SetSpacing((0.5, 0.5, 3.0))
    image.SetOrigin((10.0, 20.0, 30.0))
    corners_index = [(4.0, 6.0, 2.0), (12.0, 6.0, 2.0), (12.0, 9.0, 2.0), (4.0, 9.0, 2.0)]
    corners = [list(image.TransformContinuousIndexToPhysicalPoint(c)) for c in corners_index]
    boxes = parse_boxes(boxes_document([{"corners": corners, "probability": 0.9, "type": "2D bounding box"}]),
                        geometry_of(image), "Case 7, output 'boxes'")
    assert boxes.probabilities == (0.9,) and boxes.names == (None,)
    np.testing.assert_allclose(boxes.index_bounds(), [[[2.0, 6.0, 4.0], [2.0, 9.0, 12.0]]], atol=1e-12)


@pytest.mark.parametrize("box, line", [
    ({"corners": [[0.0, 0.0, 0.0]] * 3}, "box 0 has 3 corners; expected 4 corners of 3 numbers (x, y, z)"),
    ({"name": "b"}, "box 0 ('b') has no corners; expected 4 corners of 3 numbers (x, y, z)"),
    ({"corners": [[0.0, 0.0, 0.0]] * 3 + [[0.0, float("inf"), 0.0]]},
     "corner 3 of box 0 has y = Infinity; every coordinate must be a finite number"),
    ({"corners": [[10.0, 20.0, 30.0]] * 3 + [[10.0, 20.0, -30.0]]},
     "corner 3 of box 0 at (10, 20, -30) (x, y, z) lies outside the image: its voxel index (0, 0, -20) is not "
     "within the size (64, 48, 10) (x, y, z)"),
])
def test_malformed_or_outside_boxes_are_refused(box, line):
    image = sitk.Image([64, 48, 10], sitk.sitkUInt8)
    image.SetSpacing((0.5, 0.5, 3.0))
    image.SetOrigin((10.0, 20.0, 30.0))
    with pytest.raises(SubmissionError) as error:
        parse_boxes(boxes_document([box]), geometry_of(image), "Case 7, output 'boxes'")
    assert str(error.value) == f"Case 7, output 'boxes': {line}."


def test_a_job_with_a_mask_and_two_json_outputs_is_read_by_one_case(tmp_path):
    """Several outputs of one job: an Image socket (a mask), a "Multiple points" File socket and a
    Value socket, all read from real files through one Case."""
    image = oblique_image((12, 10, 8))
    mask = np.zeros((8, 10, 12), np.uint8)
    mask[2:4, 3:5, 4:6] = 1
    written = sitk.GetImageFromArray(mask)
    written.CopyInformation(image)
    job = tmp_path / "job-1" / "output"
    (job / "images" / "lesion-mask").mkdir(parents=True)
    sitk.WriteImage(written, str(job / "images" / "lesion-mask" / "any-name.mha"))
    point = image.TransformContinuousIndexToPhysicalPoint((5.0, 4.0, 3.0))
    (job / "lesions.json").write_text(json.dumps(points_document([{"point": list(point), "probability": 0.8}])))
    (job / "malignancy-likelihood.json").write_text("0.75")

    def socket(slug, kind, super_kind, relative_path):
        return {"socket": {"slug": slug, "kind": kind, "super_kind": super_kind, "relative_path": relative_path}}
    (tmp_path / "predictions.json").write_text(json.dumps([{
        "pk": "job-1", "inputs": [{**socket("ct", "Image", "Image", "images/ct"), "image": {"name": "7.mha"}}],
        "outputs": [socket("lesion-mask", "Segmentation", "Image", "images/lesion-mask"),
                    socket("lesions", "Multiple points", "File", "lesions.json"),
                    socket("malignancy-likelihood", "Float", "Value", "malignancy-likelihood.json")]}]))
    (jobs,) = [parse_predictions(json.loads((tmp_path / "predictions.json").read_text()))]
    case = Case("7", tmp_path, jobs[0])
    from evaluation.reading.label_maps import read_label_map

    labels = read_label_map(case.image("lesion-mask"), geometry_of(image), (0, 1), case.name)
    points = read_points(case, "lesions", labels.geometry)
    assert np.array_equal(labels.voxels, mask) and labels.spacing == pytest.approx((2.5, 0.9, 0.7))
    np.testing.assert_allclose(points.index, [[3.0, 4.0, 5.0]], atol=1e-9)
    assert labels.voxels[tuple(np.round(points.index[0]).astype(int))] == 1  # the point lies in the mask
    assert case.read_json("malignancy-likelihood") == 0.75
    with pytest.raises(SubmissionError) as error:
        read_boxes(case, "lesions", labels.geometry)
    assert str(error.value) == ("Case 7, output 'lesions': the output's type is \"Multiple points\"; expected "
                                "'Multiple 2D bounding boxes'.")


@pytest.mark.parametrize("text, line", [
    ('{"type": "Multiple points", "version": {"major": 1, "minor": 0}, "points": [{"point": [1, NaN, 3]}]}',
     "point 0 has y = NaN; every coordinate must be a finite number"),
    ('{"type": "Multiple points", "version": {"major": 1, "minor": 0}, "points": [{"point": [1, 2, 3], '
     '"probability": Infinity}]}', "the probability of point 0 is Infinity; it must be a number from 0 to 1"),
    ('{"type": "Multiple points", "version": {"major": 1, "minor": 0}, "points": [{"point": [1, 2, ' + "9" * 400
     + ']}]}', "point 0 has z = an integer of 400 digits; every coordinate must be a finite number"),
])
def test_values_no_float_holds_are_refused_from_a_real_output_file(tmp_path, text, line):
    (tmp_path / "job-1" / "output").mkdir(parents=True)
    (tmp_path / "job-1" / "output" / "nodules.json").write_text(text)
    (job,) = parse_predictions([{"pk": "job-1", "inputs": [], "outputs": [{"socket": {
        "slug": "nodules", "kind": "Multiple points", "super_kind": "File", "relative_path": "nodules.json"}}]}])
    with pytest.raises(SubmissionError) as error:
        read_points(Case("7", tmp_path, job), "nodules", None)
    assert str(error.value) == f"Case 7, output 'nodules': {line}."
