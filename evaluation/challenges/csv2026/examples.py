"""CSV 2026 examples: a synthetic ground truth (NNNN_label.h5 + config.json) and a submission of
either phase, and the bundled invalid submissions. `write_dataset` is also what the tests and
the benchmark use to make data of other sizes and of the predictions-file kind."""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path

import numpy as np

from evaluation.challenges.csv2026 import (
    CLASS_KEYS,
    LABEL_SUFFIX,
    MASK_KEYS,
    PREDICTION_SUFFIX,
    RAW_LABELS,
    VIEWS,
    Csv2026,
    Csv2026Settings,
)
from evaluation.declarations.examples import Example, Lineup
from evaluation.platform import synthetic
from evaluation.platform.locations import strip_extension
from evaluation.reading.files import Origin
from evaluation.reading.images import read_image


def synthesize(out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
    """An algorithm-phase submission (images and JSON per job, exec_duration) of 8 small cases;
    write_dataset makes the predictions-file kind and other sizes."""
    write_dataset(out_dir, seed=seed, cases=8 if cases is None else cases, phase="algorithm")


DEFAULT_SETTINGS = Csv2026Settings()  # frozen: one shared default is safe


def invalid_examples(input_dir: Path,
                     settings: Csv2026Settings = DEFAULT_SETTINGS) -> dict[str, dict[str, bytes | None]]:
    """For the first case: a longitudinal mask one column short, a stray value in the
    transverse mask, the transverse image removed, the class as text, the class file removed;
    and a job removed from predictions.json. The sockets are those of `settings`."""
    predictions = json.loads((input_dir / "predictions.json").read_text())
    socket = synthetic.first_socket(settings.longitudinal_input_socket)
    first = min(predictions, key=lambda job: _input_name(job, socket))
    pk = first["pk"]
    outputs = {o["socket"]["slug"]: o for o in first["outputs"]}

    def image_path(slug):
        folder = input_dir / pk / "output" / outputs[slug]["socket"]["relative_path"]
        (path,) = [p for p in folder.iterdir() if p.is_file()]
        return path

    long_path = image_path(settings.longitudinal_output_socket)
    trans_path = image_path(settings.transverse_output_socket)
    origin = Origin.submission(input_dir)
    long_array, _ = read_image(origin, long_path, "example")
    trans_array, _ = read_image(origin, trans_path, "example")
    stray = trans_array.copy()
    stray[stray.shape[0] // 2, stray.shape[1] // 2] = 7
    risk = f"{pk}/output/{outputs[settings.risk_output_socket]['socket']['relative_path']}"
    rest = [job for job in predictions if job["pk"] != pk]
    return {
        "wrong-shape": {
            long_path.relative_to(input_dir).as_posix(): _image_bytes(long_array[:, :-1], long_path.suffix),
        },
        "unknown-mask-values": {trans_path.relative_to(input_dir).as_posix(): _image_bytes(stray, trans_path.suffix)},
        "missing-view": {trans_path.relative_to(input_dir).as_posix(): None},
        "malformed-class": {risk: b'"high"\n'},
        "missing-class": {risk: None},
        "missing-case": {"predictions.json": (json.dumps(rest, indent=2) + "\n").encode()},
    }


def invalid_for_ground_truth(ground_truth_dir: Path, input_dir: Path) -> dict[str, dict[str, bytes | None]]:
    """invalid_examples of a `submission` for the organizer's ground truth, on its sockets."""
    return invalid_examples(input_dir, Csv2026Settings.from_ground_truth(ground_truth_dir))


def submission(ground_truth_dir: Path, input_dir: Path, seed: int = 0) -> None:
    """A valid algorithm-phase submission for any CSV 2026 ground truth (the organizer's own),
    as the bundled example lays it out: per case, each view's label map shifted by up to 3 pixels
    along each axis (.mha, raw labels; DSC and NSD high, below 1), the risk class as a
    probability, flipped in about one case in six (at least one), and exec_duration summing to
    about baseline_time_seconds (S_time about 75). Without that setting the durations are 5 s a
    case and the evaluation stops asking for it (exit 3), as it would on a real submission."""
    evaluation = Csv2026(ground_truth_dir)  # its config.json and case-mapping.json apply
    settings = evaluation.settings
    rng = np.random.default_rng(seed)
    case_ids = sorted(evaluation.ground_truth)
    flipped = set(rng.choice(len(case_ids), max(1, round(len(case_ids) / 6)), replace=False).tolist())
    per_case = (settings.baseline_time_seconds or 5.0 * len(case_ids)) / len(case_ids)
    image_slugs = (settings.longitudinal_output_socket, settings.transverse_output_socket)
    risk_slug = settings.risk_output_socket
    for setting in ("longitudinal_output_socket", "transverse_output_socket"):  # before anything is written
        synthetic.checked(f"images/{getattr(settings, setting)}", synthetic.setting_name(setting))
    risk_file = synthetic.checked(f"{risk_slug}.json", synthetic.setting_name("risk_output_socket"))
    jobs = []
    for number, case_id in enumerate(case_ids):
        truth = evaluation.read_truth(evaluation.ground_truth[case_id])  # one case at a time
        masks = {view: labels.masks() for view, labels in truth.labels.items()}
        pk = synthetic.job_pk(rng)
        outputs = []
        for view, slug in zip(VIEWS, image_slugs, strict=True):
            vessel, plaque = masks[view]
            label = np.where(plaque, RAW_LABELS["plaque"], np.where(vessel, RAW_LABELS["vessel"], 0)).astype(np.uint8)
            offsets = tuple(int(v) for v in rng.integers(-3, 4, 2))
            if offsets == (0, 0):
                offsets = (0, 1)
            name = f"{uuid.UUID(bytes=rng.bytes(16), version=4)}.mha"
            relative = f"images/{slug}"
            _write_image(input_dir / pk / "output" / relative / name, synthetic.shifted(label, offsets))
            outputs.append({"pk": 0, "file": None, "value": None, "image": {"pk": f"image-{slug}", "name": name},
                            "socket": synthetic.socket(slug, "Segmentation", "Image", relative)})
        high_risk = bool(truth.high_risk) != (number in flipped)
        margin = float(rng.uniform(0.05, 0.45))
        probability = round(0.5 + margin if high_risk else 0.5 - margin, 3)  # high risk when >= 0.5
        synthetic.write_output(input_dir, pk, risk_file, probability)
        outputs.append(synthetic.file_output(risk_slug, risk_file, kind="Anything"))
        long_name = synthetic.input_image_name(evaluation, case_id, [f"{case_id}.mha"])
        inputs = [synthetic.image_input(synthetic.first_socket(settings.longitudinal_input_socket), long_name,
                                        "images/longitudinal-carotid-ultrasound"),
                  synthetic.image_input("transverse-carotid-ultrasound", f"{strip_extension(long_name)}_transverse.mha",
                                        "images/transverse-carotid-ultrasound")]
        jobs.append(synthetic.job(pk, inputs, outputs, seconds=round(float(rng.uniform(0.6, 1.4)) * per_case, 6)))
    order = rng.permutation(len(jobs))  # the platform lists jobs in no particular order
    synthetic.write_predictions(input_dir, [jobs[i] for i in order])


EXAMPLES = {"csv2026": Example(synthesize=synthesize, invalid_examples=invalid_examples, submission=submission,
                               invalid_for_ground_truth=invalid_for_ground_truth,
                               min_cases=2,  # both risk classes
                               lineup=Lineup(seeds=(3, 0), invalid="malformed-class"))}


def _input_name(job: dict, slug: str) -> str:
    return next(v["image"]["name"] for v in job["inputs"] if (v.get("socket") or v.get("interface"))["slug"] == slug)


def _image_bytes(array: np.ndarray, suffix: str) -> bytes:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / f"image{suffix}"
        _write_image(path, array)
        return path.read_bytes()


def _write_image(path: Path, array: np.ndarray) -> None:
    """A mask image as an algorithm writes it: .tif (tifffile, zlib) or .mha (SimpleITK, compressed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix in (".tif", ".tiff"):
        import tifffile

        tifffile.imwrite(path, array, compression="zlib")
    else:
        import SimpleITK as sitk

        sitk.WriteImage(sitk.GetImageFromArray(array), str(path), True)


def _render_view(view: str, shape: tuple[int, int], geometry: dict[str, float]) -> np.ndarray:
    """A raw label image: the vessel (255) as a wavy band (longitudinal) or an ellipse
    (transverse), the plaque (128) an ellipse on its wall, inside the vessel."""
    height, width = shape
    yy, xx = np.mgrid[:height, :width].astype(np.float64)
    label = np.zeros(shape, dtype=np.uint8)
    if view == "long":
        centre = geometry["cy"] * height + geometry["amp"] * height * np.sin(xx / width * 2 * np.pi * geometry["freq"])
        half = geometry["ry"] * height
        vessel = np.abs(yy - centre) <= half
        wall_y = geometry["cy"] * height + (half if geometry["side"] > 0 else -half)
        plaque_centre = (wall_y, geometry["px"] * width)
    else:
        cy, cx = geometry["cy"] * height, geometry["cx"] * width
        ry, rx = geometry["ry"] * height, geometry["rx"] * width
        vessel = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
        angle = geometry["angle"]
        plaque_centre = (cy + ry * np.sin(angle), cx + rx * np.cos(angle))
    label[vessel] = RAW_LABELS["vessel"]
    if geometry["plaque"]:
        py, px = plaque_centre
        plaque = ((yy - py) / (geometry["pry"] * height)) ** 2 + ((xx - px) / (geometry["prx"] * width)) ** 2 <= 1
        label[plaque & vessel] = RAW_LABELS["plaque"]
    return label


def _random_geometry(rng: np.random.Generator, view: str) -> dict[str, float]:
    geometry = {"plaque": float(rng.random() < 0.85), "pry": rng.uniform(0.06, 0.14), "prx": rng.uniform(0.06, 0.2)}
    if view == "long":
        geometry.update(cy=rng.uniform(0.4, 0.6), amp=rng.uniform(0.0, 0.05), freq=rng.uniform(0.3, 1.2),
                        ry=rng.uniform(0.12, 0.22), side=float(rng.choice([-1, 1])), px=rng.uniform(0.25, 0.75))
    else:
        geometry.update(cy=rng.uniform(0.4, 0.6), cx=rng.uniform(0.4, 0.6), ry=rng.uniform(0.2, 0.3),
                        rx=rng.uniform(0.15, 0.25), angle=rng.uniform(0, 2 * np.pi))
    return geometry


def _jitter(rng: np.random.Generator, geometry: dict[str, float]) -> dict[str, float]:
    """A prediction's geometry: every parameter moved a little; the plaque sometimes missed or invented."""
    jittered = {key: value * rng.uniform(0.93, 1.07) if key not in ("plaque", "side") else value
                for key, value in geometry.items()}
    if rng.random() < 0.12:
        jittered["plaque"] = 1.0 - geometry["plaque"]
    return jittered


def write_dataset(out_dir: Path, seed: int = 0, cases: int = 8, phase: str = "algorithm",
                  shape: tuple[int, int] = (96, 128), seconds_per_case: float = 5.0) -> None:
    """Ground truth (NNNN_label.h5 + config.json) and a submission of the given phase:
    "algorithm" (predictions.json; images .mha/.tif in raw labels or indices; the class as 0/1,
    boolean or probability) or "file" (NNNN_pred.h5 at two depths, with every dataset name and
    mask encoding of csv2026.md). Predictions are the truth's geometry jittered; about 75% of
    the classes right."""
    import h5py

    if phase not in ("algorithm", "file"):
        raise ValueError(f"phase must be 'algorithm' or 'file', not {phase!r}")
    rng = np.random.default_rng(seed)
    truth_dir, input_dir = out_dir / "ground-truth", out_dir / "input"
    truth_dir.mkdir(parents=True, exist_ok=True)
    input_dir.mkdir(parents=True, exist_ok=True)
    synthetic.write_json(truth_dir / "config.json", {"baseline_time_seconds": round(seconds_per_case * cases, 3),
                                                     "nsd_tolerance_px": 3})
    risks = rng.random(cases) < 0.35
    risks[0], risks[-1] = False, True  # both classes, always
    jobs = []
    for number in range(cases):
        case_id = f"{number + 1:04d}"
        truth, prediction = {}, {}
        for view in VIEWS:
            geometry = _random_geometry(rng, view)
            truth[view] = _render_view(view, shape, geometry)
            prediction[view] = _render_view(view, shape, _jitter(rng, geometry))
        high_risk = int(risks[number])
        probability = float(np.clip(rng.normal(0.7 if high_risk else 0.3, 0.2), 0, 1).round(3))
        with h5py.File(truth_dir / f"{case_id}{LABEL_SUFFIX}", "w") as handle:
            for view in VIEWS:
                handle.create_dataset(MASK_KEYS[view][0], data=truth[view], compression="gzip")
            handle.create_dataset("cls", data=np.uint8(high_risk))
        encoded = {view: _encode(prediction[view], as_indices=number % 2 == 1) for view in VIEWS}
        if phase == "file":
            folder = input_dir / ("preds" if number % 2 == 0 else "preds/more")
            folder.mkdir(parents=True, exist_ok=True)
            key_set = number % 3  # 0: long_mask + cls; 1: pred_long + cls_pred; 2: long_mask + cls_prob
            with h5py.File(folder / f"{case_id}{PREDICTION_SUFFIX}", "w") as handle:
                for view in VIEWS:
                    handle.create_dataset(MASK_KEYS[view][1 if key_set == 1 else 0], data=encoded[view],
                                          compression="gzip")
                if key_set == 2:
                    handle.create_dataset("cls_prob", data=np.float32(probability))
                else:
                    handle.create_dataset(CLASS_KEYS[key_set], data=np.array([probability >= 0.5], dtype=np.uint8))
            continue
        pk = synthetic.job_pk(rng)
        outputs = []
        slugs = ("longitudinal-carotid-segmentation", "transverse-carotid-segmentation")
        for view, slug in zip(VIEWS, slugs, strict=True):
            suffix = ".tif" if number % 3 == 2 else ".mha"
            name = f"{uuid.UUID(bytes=rng.bytes(16), version=4)}{suffix}"
            relative = f"images/{slug}"
            _write_image(input_dir / pk / "output" / relative / name, encoded[view])
            outputs.append({"pk": 0, "file": None, "value": None, "image": {"pk": f"image-{slug}", "name": name},
                            "socket": synthetic.socket(slug, "Segmentation", "Image", relative)})
        risk_value = (int(probability >= 0.5), bool(probability >= 0.5), probability)[number % 3]
        synthetic.write_output(input_dir, pk, "plaque-risk.json", risk_value)
        outputs.append(synthetic.file_output("plaque-risk", "plaque-risk.json", kind="Anything"))
        inputs = [synthetic.image_input("longitudinal-carotid-ultrasound", f"{case_id}.mha",
                                        "images/longitudinal-carotid-ultrasound"),
                  synthetic.image_input("transverse-carotid-ultrasound", f"{case_id}_transverse.mha",
                                        "images/transverse-carotid-ultrasound")]
        jobs.append(synthetic.job(pk, inputs, outputs, seconds=float(rng.uniform(0.6, 1.4) * seconds_per_case)))
    if phase == "algorithm":
        order = rng.permutation(len(jobs))  # the platform lists jobs in no particular order
        synthetic.write_predictions(input_dir, [jobs[i] for i in order])


def _encode(label: np.ndarray, as_indices: bool) -> np.ndarray:
    """A raw label image (0/128/255) as the official baseline writes indices (1 plaque, 2 vessel)."""
    if not as_indices:
        return label
    indices = np.zeros_like(label)
    indices[label == RAW_LABELS["plaque"]] = 1
    indices[label == RAW_LABELS["vessel"]] = 2
    return indices
