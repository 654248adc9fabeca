"""ISIC 2018/2019 examples: a synthetic ground truth in the ISIC CSV format, a submission for it
(2018: the predictions CSV; 2019: one algorithm job per image) and the bundled invalid
submissions (test/isic2018/invalid/, test/isic2019/invalid/).

`synthetic_data` and the CSV writers are also the source of benchmarks/isic_reference.py's
parity inputs: their output must not change (the recorded reference outputs depend on it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.challenges.isic import Isic2018, Isic2019
from evaluation.challenges.isic.predictions import PREDICTIONS_FILE
from evaluation.declarations.examples import Example, Lineup
from evaluation.platform import synthetic

OUTPUT_SOCKET = "skin-lesion-class-confidences"
OUTPUT_FILE = f"{OUTPUT_SOCKET}.json"
INPUT_SOCKET = "dermoscopic-image"

# Rough prevalence of the categories in the ISIC test sets (synthetic data only).
_PREVALENCE = {"MEL": 0.11, "NV": 0.6, "BCC": 0.05, "AKIEC": 0.03, "AK": 0.03, "BKL": 0.1, "DF": 0.012,
               "VASC": 0.014, "SCC": 0.012, "UNK": 0.04}


def synthetic_data(categories: tuple[str, ...], seed: int, images: int) -> dict[str, Any]:
    """Truth, weights and predictions with ties, exact 0.5 values and tied maxima."""
    rng = np.random.default_rng(seed)
    k = len(categories)
    prevalence = np.array([_PREVALENCE.get(c, 1.0 / k) for c in categories])
    labels = rng.choice(k, size=images, p=prevalence / prevalence.sum())
    labels[:k] = np.arange(k)  # every category present
    rng.shuffle(labels)
    truth = np.eye(k)[labels]
    logits = rng.normal(0.0, 1.0, size=(images, k)) + 2.0 * truth * rng.uniform(0.3, 1.5, size=(images, 1))
    confidences = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    confidences = np.round(confidences, 2)  # ties, as with real models
    confidences[rng.random(images) < 0.04, rng.integers(0, k)] = 0.5  # exact 0.5 (not > 0.5)
    tied = rng.random(images) < 0.03
    confidences[tied, :2] = 0.45  # tied maxima: undecided rows
    confidences[tied, 2:] = 0.01
    ids = [f"ISIC_{n:07d}" for n in rng.choice(10**6, size=images, replace=False)]
    score_weight = np.where(rng.random(images) < 0.95, 1.0, 0.0)
    validation_weight = np.where(rng.random(images) < 0.2, 1.0, 0.0)
    return {"ids": ids, "truth": truth, "predictions": confidences, "score_weight": score_weight,
            "validation_weight": validation_weight}


def truth_csv_text(categories, data) -> str:
    lines = [",".join(["image", *categories, "score_weight", "validation_weight"])]
    for n, image in enumerate(data["ids"]):
        lines.append(",".join([image, *(f"{v:.1f}" for v in data["truth"][n]),
                               f"{data['score_weight'][n]:.1f}", f"{data['validation_weight'][n]:.1f}"]))
    return "\n".join(lines) + "\n"


def predictions_csv_text(categories, data) -> str:
    lines = [",".join(["image", *categories])]
    for n, image in enumerate(data["ids"]):
        lines.append(",".join([image, *(repr(float(v)) for v in data["predictions"][n])]))
    return "\n".join(lines) + "\n"


def write_synthetic(out_dir: Path, categories: tuple[str, ...], seed: int, images: int, phase: str) -> None:
    """out_dir/ground-truth/truth.csv and out_dir/input/: predictions.csv (phase 'file') or
    predictions.json with one job per image (phase 'algorithm'), rows in shuffled order."""
    data = synthetic_data(categories, seed, images)
    order = sorted(range(images), key=lambda n: data["ids"][n])  # truth sorted by image, as ISIC's
    sorted_data = {key: ([value[n] for n in order] if isinstance(value, list) else value[order])
                   for key, value in data.items()}
    (out_dir / "ground-truth").mkdir(parents=True, exist_ok=True)
    (out_dir / "ground-truth" / "truth.csv").write_text(truth_csv_text(categories, sorted_data))
    input_dir = out_dir / "input"
    input_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed + 1)
    if phase == "file":
        (input_dir / PREDICTIONS_FILE).write_text(predictions_csv_text(categories, data))
        return
    jobs = []
    for n, image in enumerate(data["ids"]):
        pk = synthetic.job_pk(rng)
        jobs.append(synthetic.job(
            pk,
            [synthetic.image_input(INPUT_SOCKET, f"{image}.jpg", f"images/{INPUT_SOCKET}")],
            [synthetic.file_output(OUTPUT_SOCKET, OUTPUT_FILE)],
            seconds=float(rng.uniform(2, 10)),
        ))
        synthetic.write_output(input_dir, pk, OUTPUT_FILE,
                               {c: float(v) for c, v in zip(categories, data["predictions"][n], strict=True)})
    synthetic.write_predictions(input_dir, jobs)


# ---- the bundled examples: 2018 as a predictions file, 2019 as algorithm jobs --------------


def synthesize_2018(out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
    write_synthetic(out_dir, Isic2018.categories, seed=seed, images=150 if cases is None else cases, phase="file")


def synthesize_2019(out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
    # One job folder per image: kept small.
    write_synthetic(out_dir, Isic2019.categories, seed=seed, images=45 if cases is None else cases,
                    phase="algorithm")


# ---- a submission for any ground truth (the organizer's own) ----------------------------------


def perturbed_confidences(truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Confidences that mostly, not always, favour each image's true categories: the logits of
    synthetic_data (noise plus 2 x truth x a per-image strength), softmax, 2 decimals."""
    images, k = truth.shape
    logits = rng.normal(0.0, 1.0, size=(images, k)) + 2.0 * truth * rng.uniform(0.3, 1.5, size=(images, 1))
    confidences = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return np.round(confidences, 2)


def input_image_names(evaluation, ids, extension: str) -> dict[str, str]:
    """{image id: the input image name the evaluation reads as it}: a name case-mapping.json maps
    to it (the first in sorted order), else the id with `extension`. Built once for all images
    (synthetic.input_image_name looks through the mapping per image: too slow for 25,000)."""
    from evaluation.platform.cases import mapped_case_id

    mapped: dict[str, str] = {}
    for name, case_id in sorted(evaluation.case_mapping.items()):
        mapped.setdefault(case_id, name)
    names = {}
    for image in ids:
        name = mapped.get(image, f"{image}{extension}")
        found = mapped_case_id(name, evaluation.case_mapping)
        if (found if found is not None else evaluation.case_id_from_image_name(name)) != image:
            raise ValueError(f"no input image name gives the image id {image!r} (tried {name}; case-mapping.json "
                             f"maps none to it)")
        names[image] = name
    return names


def submission(evaluation_class, ground_truth_dir: Path, input_dir: Path, seed: int, phase: str) -> None:
    """A valid submission for any ISIC ground truth, in the phase the bundled example uses
    (`phase` "file": predictions.csv; "algorithm": a job per image, named as case-mapping.json
    says, else `<image>.jpg`, on the phase's sockets), with the ground truth's categories and
    perturbed_confidences, rows (jobs) in shuffled order."""
    evaluation = evaluation_class(ground_truth_dir)  # its config.json and case-mapping.json apply
    table = evaluation.table
    rng = np.random.default_rng(seed)
    data = {"ids": list(table.ids), "predictions": perturbed_confidences(table.values, rng)}
    order = rng.permutation(len(table.ids))
    if phase == "file":
        shuffled = {"ids": [data["ids"][n] for n in order], "predictions": data["predictions"][order]}
        (input_dir / PREDICTIONS_FILE).write_text(predictions_csv_text(table.categories, shuffled))
        return
    settings = evaluation.settings
    input_socket = synthetic.first_socket(settings.input_socket, INPUT_SOCKET)
    socket = synthetic.setting_name("output_socket")
    output_file = synthetic.checked(f"{settings.output_socket}.json", socket)  # before anything is written
    names = input_image_names(evaluation, table.ids, ".jpg")
    jobs = []
    for n in order:
        image, pk = table.ids[n], synthetic.job_pk(rng)
        jobs.append(synthetic.job(pk, [synthetic.image_input(input_socket, names[image], f"images/{input_socket}")],
                                  [synthetic.file_output(settings.output_socket, output_file)],
                                  seconds=float(rng.uniform(2, 10))))
        values = {c: float(v) for c, v in zip(table.categories, data["predictions"][n], strict=True)}
        synthetic.write_output(input_dir, pk, output_file, values, socket)
    synthetic.write_predictions(input_dir, jobs)


def invalid_file_examples(input_dir: Path) -> dict[str, dict[str, bytes | None]]:
    """The second category as whole numbers, the third image's row left out, the fifth image's
    row repeated (the last one of a shorter file)."""
    lines = (input_dir / PREDICTIONS_FILE).read_text().splitlines(keepends=True)
    # The second category written as 0/1 integers: the reference refuses such a column.
    as_integers = [lines[0]] + [",".join(f"{round(float(v))}" if n == 2 else v
                                         for n, v in enumerate(line.rstrip("\n").split(","))) + "\n"
                                for line in lines[1:]]
    return {
        "integer-column": {PREDICTIONS_FILE: "".join(as_integers).encode()},
        "missing-image": {PREDICTIONS_FILE: "".join(lines[:3] + lines[4:] if len(lines) > 3 else lines[:-1]).encode()},
        "duplicate-row": {PREDICTIONS_FILE: "".join(lines + [lines[min(5, len(lines) - 1)]]).encode()},
    }


def invalid_algorithm_examples(input_dir: Path) -> dict[str, dict[str, bytes | None]]:
    """The first image's confidences without the last category, and with the first one 1.5
    (categories as the output lists them: the ground truth's, in its order)."""
    predictions = json.loads((input_dir / "predictions.json").read_text())
    first = sorted(predictions, key=lambda job: job["inputs"][0]["image"]["name"])[0]
    path = f"{first['pk']}/output/{first['outputs'][0]['socket']['relative_path']}"
    content = json.loads((input_dir / path).read_text())
    categories = list(content)
    missing = dict(content)
    missing.pop(categories[-1])
    out_of_range = dict(content)
    out_of_range[categories[0]] = 1.5
    return {"missing-category": {path: (json.dumps(missing) + "\n").encode()},
            "out-of-range": {path: (json.dumps(out_of_range) + "\n").encode()}}


def submission_2018(ground_truth_dir: Path, input_dir: Path, seed: int = 0) -> None:
    submission(Isic2018, ground_truth_dir, input_dir, seed, phase="file")


def submission_2019(ground_truth_dir: Path, input_dir: Path, seed: int = 0) -> None:
    submission(Isic2019, ground_truth_dir, input_dir, seed, phase="algorithm")


EXAMPLES = {
    Isic2018.name: Example(synthesize=synthesize_2018, invalid_examples=invalid_file_examples,
                           submission=submission_2018, min_cases=len(Isic2018.categories),  # each category
                           lineup=Lineup(seeds=(7, 4), invalid="missing-image")),
    Isic2019.name: Example(synthesize=synthesize_2019, invalid_examples=invalid_algorithm_examples,
                           submission=submission_2019, min_cases=len(Isic2019.categories),
                           lineup=Lineup(seeds=(0, 1), invalid="missing-category")),
}
