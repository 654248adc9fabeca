"""HECKTOR 2025 Task 1 end to end: the leaderboard values recomputed independently (SimpleITK's
label overlap filter, numpy sums weighted by voxel volume, scipy labelling with brute-force
matching), case ids from the CT name, the 2022 predictions-file phase, empty-case settings, and
every rejection of the spec (geometry, labels, unreadable or missing masks), and masks that point
at other files or claim more voxels than they hold."""

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import SimpleITK as sitk

from evaluation.challenges.hecktor2025 import HecktorTask1
from tests.hecktor_data import copy_dataset, evaluate_with_memory_limit, make_dataset
from tests.test_hecktor2025_metrics import reference_lesions

ROOT = Path(__file__).resolve().parent.parent
CHALLENGE = "hecktor2025-task1"
SLUG = "tumor-lymph-node-segmentation"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_dataset(CHALLENGE, tmp_path_factory.mktemp("hecktor1"), seed=11, cases=7)


def prediction_files(input_dir):
    """{patient: path of its predicted mask} from predictions.json."""
    found = {}
    for job in json.loads((input_dir / "predictions.json").read_text()):
        ct = next(i for i in job["inputs"] if i["socket"]["slug"] == "ct-image")
        patient = ct["image"]["name"].replace("__CT.nii.gz", "")
        (found[patient],) = (input_dir / job["pk"] / "output" / "images" / SLUG).glob("*.mha")
    return found


def reference_metrics(input_dir, ground_truth, both_empty=1.0):
    """The spec's formulas, computed independently of our code."""
    dice_p, gtvn = [], np.zeros(3)
    tp = fp = fn = 0
    per_case = {}
    for patient, path in sorted(prediction_files(input_dir).items()):
        truth_image = sitk.ReadImage(str(ground_truth / f"{patient}.nii.gz"))
        prediction_image = sitk.ReadImage(str(path))
        truth, prediction = sitk.GetArrayFromImage(truth_image), sitk.GetArrayFromImage(prediction_image)
        volume = float(np.prod(truth_image.GetSpacing()))
        if (truth == 1).any() and (prediction == 1).any():
            prediction_image.CopyInformation(truth_image)  # NIfTI keeps the origin in float32
            overlap = sitk.LabelOverlapMeasuresImageFilter()
            overlap.Execute(sitk.Cast(truth_image == 1, sitk.sitkUInt8),
                            sitk.Cast(prediction_image == 1, sitk.sitkUInt8))
            dice_p.append(overlap.GetDiceCoefficient())
        else:
            dice_p.append(both_empty if not (truth == 1).any() and not (prediction == 1).any() else 0.0)
        t2, p2 = truth == 2, prediction == 2
        gtvn += volume * np.array([(t2 & p2).sum(), p2.sum(), t2.sum()])
        counts = reference_lesions(t2, p2, 26, 0.3, "greedy")
        tp, fp, fn = tp + counts[0], fp + counts[1], fn + counts[2]
        per_case[patient] = dict(gtvp_dsc=dice_p[-1], lesions=counts, gtvp_ml=(prediction == 1).sum() * volume / 1000,
                                 gtvn_dsc=2 * (t2 & p2).sum() / (t2.sum() + p2.sum()) if (t2 | p2).any() else None)
    aggregates = {"gtvp_dsc_mean": np.mean(dice_p), "gtvn_dsc_agg": 2 * gtvn[0] / (gtvn[1] + gtvn[2]),
                  "gtvn_f1_agg": 2 * tp / (2 * tp + fp + fn), "gtvn_tp": tp, "gtvn_fp": fp, "gtvn_fn": fn}
    return aggregates, per_case


def assert_matches_reference(metrics, reference):
    aggregates, per_case = reference
    for key, value in aggregates.items():
        assert metrics["aggregates"][key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    assert sorted(metrics["case"]) == sorted(per_case)
    for patient, expected in per_case.items():
        case = metrics["case"][patient]
        assert case["gtvp_dsc"] == pytest.approx(expected["gtvp_dsc"], abs=1e-12)
        assert (case["gtvn_tp"], case["gtvn_fp"], case["gtvn_fn"]) == expected["lesions"]
        assert case["gtvp_volume_predicted_ml"] == pytest.approx(expected["gtvp_ml"], rel=1e-12)
        if expected["gtvn_dsc"] is None:
            assert case["gtvn_dsc"] is None and metrics["notes"][f"case.{patient}.gtvn_dsc"]
        else:
            assert case["gtvn_dsc"] == pytest.approx(expected["gtvn_dsc"], abs=1e-12)


def test_metrics_equal_independent_computation(dataset, evaluate):
    run = evaluate(CHALLENGE, dataset / "input", dataset / "ground-truth")
    assert run.code == 0, run.stderr
    assert_matches_reference(run.metrics, reference_metrics(dataset / "input", dataset / "ground-truth"))
    assert run.metrics["aggregates"]["gtvn_tp"] > 0 and run.metrics["aggregates"]["gtvn_fp"] > 0
    assert run.metrics["counts"]["patients_without_gtvp_in_either"] == 1


def test_bundled_example_matches_independent_computation():
    metrics = json.loads((ROOT / "test" / CHALLENGE / "expected_metrics.json").read_text())
    reference = reference_metrics(ROOT / "test" / CHALLENGE / "input", ROOT / "ground-truth" / CHALLENGE)
    assert_matches_reference(metrics, reference)


def test_workers_and_reruns_give_identical_bytes(dataset, evaluate):
    runs = [evaluate(CHALLENGE, dataset / "input", dataset / "ground-truth", "--workers", w) for w in (1, 2)]
    assert (runs[0].output / "metrics.json").read_bytes() == (runs[1].output / "metrics.json").read_bytes()


def test_predictions_file_phase_zip_of_masks_gives_the_same_numbers(dataset, evaluate, tmp_path):
    zipped = tmp_path / "zip"
    for patient, path in prediction_files(dataset / "input").items():
        target = zipped / "submission" / f"{patient}.nii.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        sitk.WriteImage(sitk.ReadImage(str(path)), str(target), useCompression=True)
    (zipped / "__MACOSX").mkdir()
    (zipped / "__MACOSX" / "._x.nii.gz").write_bytes(b"debris")
    by_jobs = evaluate(CHALLENGE, dataset / "input", dataset / "ground-truth").metrics
    by_file = evaluate(CHALLENGE, zipped, dataset / "ground-truth").metrics
    assert by_file["aggregates"] == by_jobs["aggregates"] and by_file["case"] == by_jobs["case"]
    (zipped / "submission" / "README.txt").write_text("hello")
    run = evaluate(CHALLENGE, zipped, dataset / "ground-truth")
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == ("The submission file submission/README.txt is not a <PatientID>.nii.gz (or .mha) "
                                   "mask; the ZIP must hold only the masks.")


def test_case_ids_from_ct_names_suffixes_and_mapping(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    jobs = json.loads((input_dir / "predictions.json").read_text())
    names = {}
    for n, job in enumerate(jobs):
        ct = next(i for i in job["inputs"] if i["socket"]["slug"] == "ct-image")
        patient = ct["image"]["name"].replace("__CT.nii.gz", "")
        ct["image"]["name"] = [f"{patient}_CT.mha", f"{patient}_0000.nii.gz", f"{patient}.nrrd", f"{patient}__CT.tif",
                               f"scan{n}.nii.gz"][n % 5]
        names[ct["image"]["name"]] = patient
        for entry in job["inputs"]:  # the PET comes first: the CT socket still decides
            entry["image"]["name"] = "pet-" + entry["image"]["name"] if entry is not ct else entry["image"]["name"]
        job["inputs"].reverse()
    (input_dir / "predictions.json").write_text(json.dumps(jobs))
    unmapped = evaluate(CHALLENGE, input_dir, ground_truth)
    assert unmapped.code == 1
    assert "scan" in unmapped.last_error_line and "not in the test set" in unmapped.last_error_line
    scans = {k: v for k, v in names.items() if k.startswith("scan")}
    (ground_truth / "case-mapping.json").write_text(json.dumps(scans))
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert run.code == 0, run.stderr
    assert sorted(run.metrics["case"]) == sorted(names.values())


def test_case_id_hook_strips_one_known_suffix_after_the_extension(dataset):
    evaluation = HecktorTask1(dataset / "ground-truth")
    cases = {"CHUM-001__CT.nii.gz": "CHUM-001", "CHUM-001_CT.mha": "CHUM-001", "MDA-7_0000.nii.gz": "MDA-7",
             "MDA-7.nrrd": "MDA-7", "X__CT.tif": "X", "A_0000_CT.mha": "A_0000", "__CT.mha": "__CT",
             "CHUM-001__PT.nii.gz": "CHUM-001__PT"}
    for name, expected in cases.items():
        assert evaluation.case_id_from_image_name(name) == expected, name


# ---- settings and empty cases ---------------------------------------------------------------


def write_mask(path, array, spacing=(1.0, 1.0, 2.0)):
    image = sitk.GetImageFromArray(array.astype(np.uint8))
    image.SetSpacing(spacing)
    path.parent.mkdir(parents=True, exist_ok=True)
    sitk.WriteImage(image, str(path), useCompression=True)


def zip_case(tmp_path, truths, predictions, spacing=(1.0, 1.0, 2.0)):
    """A ground truth and a predictions-file submission of label maps given as arrays."""
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    for patient, array in truths.items():
        write_mask(ground_truth / f"{patient}.nii.gz", array, spacing)
    for patient, array in predictions.items():
        write_mask(submission / f"{patient}.nii.gz", array, spacing)
    return submission, ground_truth


def test_empty_defaults_and_their_settings(evaluate, tmp_path):
    empty = np.zeros((4, 6, 6), dtype=np.uint8)
    submission, ground_truth = zip_case(tmp_path, {"A": empty, "B": empty}, {"A": empty, "B": empty})
    metrics = evaluate(CHALLENGE, submission, ground_truth).metrics["aggregates"]
    assert metrics == {"gtvp_dsc_mean": 1.0, "gtvn_dsc_agg": 1.0, "gtvn_f1_agg": 1.0, "gtvn_tp": 0, "gtvn_fp": 0,
                       "gtvn_fn": 0}
    (ground_truth / "config.json").write_text(json.dumps(
        {"gtvp_dsc_both_empty": 0.0, "gtvn_dsc_agg_all_empty": 0.0, "gtvn_f1_all_zero": 0.0}))
    metrics = evaluate(CHALLENGE, submission, ground_truth).metrics["aggregates"]
    assert (metrics["gtvp_dsc_mean"], metrics["gtvn_dsc_agg"], metrics["gtvn_f1_agg"]) == (0.0, 0.0, 0.0)


def test_gtvp_missed_counts_zero_and_aggregated_dice_weights_by_voxel_volume(evaluate, tmp_path):
    truth_a, truth_b = np.zeros((4, 6, 6), np.uint8), np.zeros((4, 6, 6), np.uint8)
    truth_a[1, 1:3, 1:3] = 1  # GTVp present, prediction empty: Dice 0
    truth_a[2, 4, 4] = 2
    truth_b[0, 0, 0:4] = 2
    pred_a, pred_b = np.zeros_like(truth_a), np.zeros_like(truth_b)
    pred_a[2, 4, 4] = 2
    pred_b[0, 0, 0:2] = 2
    ground_truth, submission = tmp_path / "gt", tmp_path / "sub"
    write_mask(ground_truth / "A.nii.gz", truth_a, (1.0, 1.0, 1.0))
    write_mask(ground_truth / "B.mha", truth_b, (2.0, 2.0, 2.0))  # 8 mm³ voxels
    write_mask(submission / "A.nii.gz", pred_a, (1.0, 1.0, 1.0))
    write_mask(submission / "B.nii.gz", pred_b, (2.0, 2.0, 2.0))
    metrics = evaluate(CHALLENGE, submission, ground_truth).metrics
    assert metrics["aggregates"]["gtvp_dsc_mean"] == (0.0 + 1.0) / 2
    # A: 1 of 1 voxel (1 mm³); B: 2 of 4 and 2 predicted voxels (8 mm³ each).
    assert metrics["aggregates"]["gtvn_dsc_agg"] == pytest.approx(2 * (1 + 2 * 8) / ((1 + 1) + (2 + 4) * 8))
    aggregates = metrics["aggregates"]
    assert (aggregates["gtvn_tp"], aggregates["gtvn_fp"], aggregates["gtvn_fn"]) == (2, 0, 0)
    assert metrics["case"]["B"]["gtvn_volume_predicted_ml"] == 2 * 8 / 1000
    assert "gtvn_volume_true_ml" not in metrics["case"]["B"]
    (ground_truth / "config.json").write_text(json.dumps({"case_true_volumes": True, "lesion_iou_threshold": 0.5}))
    metrics = evaluate(CHALLENGE, submission, ground_truth).metrics
    assert metrics["case"]["B"]["gtvn_volume_true_ml"] == 4 * 8 / 1000
    assert metrics["case"]["B"]["gtvn_tp"] == 0  # IoU exactly 0.5 is not above 0.5


def test_label_maps_of_other_integer_and_float_types_are_accepted(evaluate, tmp_path):
    truth = np.zeros((4, 6, 6), np.uint8)
    truth[1, 1:4, 1:4] = 1
    submission, ground_truth = zip_case(tmp_path, {"A": truth}, {})
    for dtype in (np.int16, np.float32, np.uint16):
        image = sitk.GetImageFromArray(truth.astype(dtype))
        image.SetSpacing((1.0, 1.0, 2.0))
        submission.mkdir(exist_ok=True)
        sitk.WriteImage(image, str(submission / "A.nii.gz"))
        run = evaluate(CHALLENGE, submission, ground_truth)
        assert run.code == 0, run.stderr
        assert run.metrics["aggregates"]["gtvp_dsc_mean"] == 1.0


# ---- rejections -----------------------------------------------------------------------------


def first_prediction(input_dir):
    patient, path = min(prediction_files(input_dir).items())
    return patient, path


def rewrite(path, change_image=None, change_array=None):
    image = sitk.ReadImage(str(path))
    array = sitk.GetArrayFromImage(image)
    if change_array is not None:
        array = change_array(array)
        new = sitk.GetImageFromArray(array)
        new.SetSpacing(image.GetSpacing())
        new.SetOrigin(image.GetOrigin())
        new.SetDirection(image.GetDirection())
        image = new
    if change_image is not None:
        change_image(image)
    sitk.WriteImage(image, str(path), useCompression=True)


@pytest.mark.parametrize("change, what", [
    (lambda image: image.SetSpacing([s * (1 + 3e-4) for s in image.GetSpacing()]), "spacing"),
    (lambda image: image.SetOrigin([o + 1.0 for o in image.GetOrigin()]), "origin"),
    (lambda image: image.SetDirection((-1.0, 0, 0, 0, 1.0, 0, 0, 0, 1.0)), "direction"),
])
def test_other_geometry_is_rejected_naming_both_values(dataset, evaluate, tmp_path, change, what):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    patient, path = first_prediction(input_dir)
    truth = sitk.ReadImage(str(ground_truth / f"{patient}.nii.gz"))
    rewrite(path, change_image=change)
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    changed = sitk.ReadImage(str(path))
    getter = {"spacing": "GetSpacing", "origin": "GetOrigin", "direction": "GetDirection"}[what]

    def vector(image):
        return "(" + ", ".join(f"{v + 0:g}" for v in getattr(image, getter)()) + ")"
    order = "row by row" if what == "direction" else "x, y, z"
    assert run.last_error_line == (f"Patient {patient}: the segmentation's {what} {vector(changed)} differs from the "
                                   f"CT's {vector(truth)} ({order}; tolerance 0.0001); label maps are never resampled.")


def test_other_size_is_rejected(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    patient, path = first_prediction(input_dir)
    rewrite(path, change_array=lambda a: a[:-1])
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    truth_size = sitk.ReadImage(str(ground_truth / f"{patient}.nii.gz")).GetSize()
    size = (*truth_size[:2], truth_size[2] - 1)
    assert run.last_error_line == (f"Patient {patient}: the segmentation's size ({', '.join(map(str, size))}) differs "
                                   f"from the CT's ({', '.join(map(str, truth_size))}) (x, y, z); label maps are never "
                                   f"resampled.")


def test_geometry_within_tolerance_is_accepted_and_tolerance_is_a_setting(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    _, path = first_prediction(input_dir)
    rewrite(path, change_image=lambda image: image.SetSpacing([s * (1 + 5e-5) for s in image.GetSpacing()]))
    assert evaluate(CHALLENGE, input_dir, ground_truth).code == 0
    (ground_truth / "config.json").write_text(json.dumps({"geometry_tolerance": 1e-5}))
    assert evaluate(CHALLENGE, input_dir, ground_truth).code == 1


@pytest.mark.parametrize("dtype, values, shown", [
    (np.uint8, (3,), "3 (1 voxel)"),
    (np.uint8, (3, 7, 7), "3 (1 voxel), 7 (2 voxels)"),
    (np.int16, (-1,), "-1 (1 voxel)"),
    (np.int32, (300,), "300 (1 voxel)"),
    (np.float32, (0.5,), "0.5 (1 voxel)"),
])
def test_stray_labels_are_rejected_and_named(dataset, evaluate, tmp_path, dtype, values, shown):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    patient, path = first_prediction(input_dir)

    def change(array):
        array = array.astype(dtype)
        array.reshape(-1)[-len(values):] = values  # the last voxels of the volume
        return array

    rewrite(path, change_array=change)
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == (f"Patient {patient}: the segmentation holds label(s) {shown}; only 0 (background), "
                                   f"1 (GTVp) and 2 (GTVn) are allowed.")


def test_unreadable_missing_and_extra_masks(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    patient, path = first_prediction(input_dir)
    path.write_bytes(b"garbage")
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == (f"Patient {patient}, segmentation: {path.name} is not a readable MetaImage (no "
                                   f"ElementDataFile in its header).")
    path.unlink()
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert run.last_error_line == (f"Patient {patient}: the image output '{SLUG}' must hold exactly one .mha, .tif or "
                                   f".tiff file; found 0.")


def test_ground_truth_problems_are_setup_errors(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    patient = min(prediction_files(input_dir))
    shutil.copy(ground_truth / f"{patient}.nii.gz", ground_truth / f"{patient}.mha")
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert run.code == 3 and f"patient {patient} has two label maps" in run.last_error_line
    (ground_truth / f"{patient}.mha").unlink()
    image = sitk.ReadImage(str(ground_truth / f"{patient}.nii.gz"))
    array = sitk.GetArrayFromImage(image)
    array[0, 0, 0] = 5
    bad = sitk.GetImageFromArray(array)
    bad.CopyInformation(image)
    sitk.WriteImage(bad, str(ground_truth / f"{patient}.nii.gz"))
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert run.code == 3
    assert f"Ground truth {patient}.nii.gz holds label(s) 5 (1 voxel)" in run.last_error_line
    (ground_truth / "notes.txt").write_text("x")
    assert evaluate(CHALLENGE, input_dir, ground_truth).code == 3


def test_bad_settings_are_setup_errors(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    for config in ({"lesion_connectivity": 8}, {"lesion_matching": "optimal"}, {"gtvn_f1_all_zero": 2.0}):
        (ground_truth / "config.json").write_text(json.dumps(config))
        run = evaluate(CHALLENGE, input_dir, ground_truth)
        assert run.code == 3 and not run.wrote_metrics, config


@pytest.mark.parametrize("config", [{"lesion_matching": "hungarian"},
                                    {"lesion_connectivity": 6, "lesion_iou_threshold": 0.1}])
def test_lesion_settings_equal_the_reference_with_the_same_rule(dataset, evaluate, tmp_path, config):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    (ground_truth / "config.json").write_text(json.dumps(config))
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert run.code == 0, run.stderr
    connectivity, threshold = config.get("lesion_connectivity", 26), config.get("lesion_iou_threshold", 0.3)
    method = config.get("lesion_matching", "greedy")
    for patient, path in prediction_files(input_dir).items():
        truth = sitk.GetArrayFromImage(sitk.ReadImage(str(ground_truth / f"{patient}.nii.gz"))) == 2
        prediction = sitk.GetArrayFromImage(sitk.ReadImage(str(path))) == 2
        case = run.metrics["case"][patient]
        assert (case["gtvn_tp"], case["gtvn_fp"], case["gtvn_fn"]) == \
            reference_lesions(truth, prediction, connectivity, threshold, method), patient


# ---- masks that point at other files, headers that lie, links out of /input -----------------

SECRET = b"TOPSECRET-"
IDENTITY = (1, 0, 0, 0, 1, 0, 0, 0, 1)


def metaimage(size, spacing=(1, 1, 2), origin=(0, 0, 0), direction=IDENTITY, data_file="LOCAL", body=b""):
    """A MetaImage header (uint8 voxels) followed by `body`, as bytes."""
    def numbers(values):
        return " ".join(f"{v!r}" for v in values)
    header = (f"ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
              f"CompressedData = False\nTransformMatrix = {numbers(direction)}\nOffset = {numbers(origin)}\n"
              f"ElementSpacing = {numbers(spacing)}\nDimSize = {numbers(size)}\nElementType = MET_UCHAR\n"
              f"ElementDataFile = {data_file}\n")
    return header.encode() + body


def secret_file(path, voxels):
    """A file outside the submission whose bytes would be read as labels if followed."""
    path.write_bytes((SECRET * (voxels // len(SECRET) + 1))[:voxels])
    return path


def assert_refused_without_secret(run, line):
    assert (run.code, run.wrote_metrics) == (1, False), run.stderr
    assert run.last_error_line == line
    for text in (run.stdout, run.stderr):
        assert "TOPSECRET" not in text and "root:" not in text and "holds label" not in text


@pytest.mark.parametrize("where", ["absolute", "relative", "etc-passwd"])
def test_metaimage_naming_a_data_file_outside_the_submission_is_refused(dataset, evaluate, tmp_path, where):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    patient, path = first_prediction(input_dir)
    truth = sitk.ReadImage(str(ground_truth / f"{patient}.nii.gz"))
    secret = secret_file(tmp_path / "secret.raw", int(np.prod(truth.GetSize())))
    data_file = {"absolute": str(secret), "relative": Path(*[".."] * 6, "secret.raw").as_posix(),
                 "etc-passwd": "/etc/passwd"}[where]
    assert (path.parent / data_file).resolve() == secret.resolve() or where != "relative"
    path.write_bytes(metaimage(truth.GetSize(), truth.GetSpacing(), truth.GetOrigin(), truth.GetDirection(), data_file))
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert_refused_without_secret(run, f"Patient {patient}, segmentation: {path.name} keeps its pixels in another file "
                                       f"(ElementDataFile); a .mha image must hold them itself (ElementDataFile = "
                                       f"LOCAL).")


def test_zip_masks_with_detached_data_are_refused(evaluate, tmp_path):
    truth = np.zeros((4, 6, 6), np.uint8)
    submission, ground_truth = zip_case(tmp_path, {"A": truth, "B": truth}, {})
    secret = secret_file(tmp_path / "secret.raw", truth.size)
    submission.mkdir()
    (submission / "A.nrrd").write_text(f"NRRD0004\ntype: uint8\ndimension: 3\nsizes: 6 6 4\nspacings: 1 1 2\n"
                                       f"encoding: raw\ndata file: {secret}\n\n")
    (submission / "B.mha").write_bytes(metaimage((6, 6, 4), data_file="../secret.raw"))
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert_refused_without_secret(run, "Patient A, segmentation: A.nrrd keeps its pixels in another file (a detached "
                                       "NRRD 'data file'); the pixels must be in the .nrrd file itself.")
    (submission / "A.nrrd").unlink()
    write_mask(submission / "A.nii.gz", truth)
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert_refused_without_secret(run, "Patient B, segmentation: B.mha keeps its pixels in another file "
                                       "(ElementDataFile); a .mha image must hold them itself (ElementDataFile = "
                                       "LOCAL).")


def test_ground_truth_naming_a_data_file_elsewhere_is_a_setup_error(evaluate, tmp_path):
    truth = np.zeros((4, 6, 6), np.uint8)
    submission, ground_truth = zip_case(tmp_path, {}, {"A": truth})
    ground_truth.mkdir()
    secret = secret_file(tmp_path / "secret.raw", truth.size)
    (ground_truth / "A.mha").write_bytes(metaimage((6, 6, 4), data_file=str(secret)))
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert run.last_error_line == ("The evaluation could not run, through no fault of the submission: Ground truth "
                                   "A.mha: A.mha keeps its pixels in another file (ElementDataFile); a .mha image must "
                                   "hold them itself (ElementDataFile = LOCAL). "
                                   "(please tell the challenge organizers).")
    assert "TOPSECRET" not in run.stdout + run.stderr


def nifti_bomb(path, size):
    """A .nii.gz whose header claims `size` voxels (x, y, z) but holds only a few bytes of data."""
    small = tmp = path.with_name("small.nii")
    write_mask(small, np.zeros((4, 6, 6), np.uint8))
    data = bytearray(small.read_bytes())
    tmp.unlink()
    for axis, n in enumerate(size):  # dim[1..3]: int16 at bytes 42, 44, 46 of a NIfTI-1 header
        data[42 + 2 * axis: 44 + 2 * axis] = int(n).to_bytes(2, "little")
    path.write_bytes(gzip.compress(bytes(data[:352 + 16])))


BOMB = (2000, 2000, 2000)  # 8 GB of uint8 voxels claimed
BOMB_LINE = ("Patient A: the segmentation's size (2000, 2000, 2000) differs from the CT's (6, 6, 4) (x, y, z); label "
             "maps are never resampled.")


@pytest.mark.parametrize("name", ["A.mha", "A.nii.gz"])
def test_image_bomb_is_refused_by_its_header_under_a_memory_limit(tmp_path, name):
    truth = np.zeros((4, 6, 6), np.uint8)
    submission, ground_truth = zip_case(tmp_path, {"A": truth}, {})
    submission.mkdir()
    if name.endswith(".mha"):
        (submission / name).write_bytes(metaimage(BOMB, body=b"\0" * 64))
    else:
        nifti_bomb(submission / name, BOMB)
    run = evaluate_with_memory_limit(CHALLENGE, submission, ground_truth, tmp_path / "out")
    assert (run.code, run.wrote_metrics) == (1, False), run.stderr
    assert run.last_error_line == BOMB_LINE


def test_image_bomb_output_of_a_job_is_refused_under_a_memory_limit(dataset, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    patient, path = first_prediction(input_dir)
    truth = sitk.ReadImage(str(ground_truth / f"{patient}.nii.gz"))
    path.write_bytes(metaimage(BOMB, truth.GetSpacing(), truth.GetOrigin(), truth.GetDirection(), body=b"\0" * 64))
    # 2 GiB, not 1: Origin.read_bytes reads predictions.json into a buffer as large as its bound
    # (1 GiB); still a quarter of the 8 GB the header claims.
    run = evaluate_with_memory_limit(CHALLENGE, input_dir, ground_truth, tmp_path / "out", limit=2 << 30)
    assert (run.code, run.wrote_metrics) == (1, False), run.stderr
    assert run.last_error_line == (f"Patient {patient}: the segmentation's size (2000, 2000, 2000) differs from the "
                                   f"CT's ({', '.join(map(str, truth.GetSize()))}) (x, y, z); label maps are never "
                                   f"resampled.")


@pytest.mark.parametrize("target", ["file", "folder"])
def test_zip_link_leading_out_of_the_input_is_refused_by_name(evaluate, tmp_path, target):
    truth = np.zeros((4, 6, 6), np.uint8)
    submission, ground_truth = zip_case(tmp_path, {"A": truth}, {})
    submission.mkdir()
    if target == "file":  # the ground truth itself, under the participant's name
        (submission / "A.nii.gz").symlink_to(ground_truth / "A.nii.gz")
        line = "Submission file A.nii.gz: A.nii.gz is a link that leads out of the input folder."
    else:
        (submission / "masks").symlink_to(ground_truth, target_is_directory=True)
        line = "Submission file masks: masks is a link that leads out of the input folder."
    run = evaluate(CHALLENGE, submission, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == line


SETUP = "The evaluation could not run, through no fault of the submission: config.json: setting "
ORGANIZERS = " (please tell the challenge organizers)."


@pytest.mark.parametrize("config, line", [
    ({"lesion_iou_threshold": float("nan")}, "'lesion_iou_threshold' is NaN; it must be a finite number."),
    ({"geometry_tolerance": float("nan")}, "'geometry_tolerance' is NaN; it must be a finite number."),
    ({"gtvp_dsc_both_empty": float("nan")}, "'gtvp_dsc_both_empty' is NaN; it must be a finite number."),
    ({"gtvn_dsc_agg_all_empty": float("inf")}, "'gtvn_dsc_agg_all_empty' is Infinity; it must be a finite number."),
    ({"gtvn_f1_all_zero": float("-inf")}, "'gtvn_f1_all_zero' is -Infinity; it must be a finite number."),
    ({"lesion_iou_threshold": 5}, "'lesion_iou_threshold' is 5.0; it must be at most 1."),
    ({"lesion_iou_threshold": -0.1}, "'lesion_iou_threshold' is -0.1; it must be at least 0."),
    ({"gtvp_dsc_both_empty": 1.5}, "'gtvp_dsc_both_empty' is 1.5; it must be at most 1."),
    ({"gtvn_f1_all_zero": 2.0}, "'gtvn_f1_all_zero' is 2.0; it must be at most 1."),
    ({"geometry_tolerance": -1e-4}, "'geometry_tolerance' is -0.0001; it must be at least 0."),
])
def test_settings_out_of_their_range_are_setup_errors_naming_them(dataset, evaluate, tmp_path, config, line):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    (ground_truth / "config.json").write_text(json.dumps(config))
    run = evaluate(CHALLENGE, input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert run.last_error_line == SETUP + line + ORGANIZERS


def test_iou_threshold_at_its_bounds_is_accepted(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    for threshold, tp in ((0.0, None), (1.0, 0)):  # IoU > 1 never holds: nothing matches
        (ground_truth / "config.json").write_text(json.dumps({"lesion_iou_threshold": threshold}))
        run = evaluate(CHALLENGE, input_dir, ground_truth)
        assert run.code == 0, run.stderr
        assert tp is None or run.metrics["aggregates"]["gtvn_tp"] == tp
