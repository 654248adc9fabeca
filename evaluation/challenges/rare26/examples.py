"""RARE26 examples: a synthetic test set in the RARE25 metadata format, an algorithm's
likelihoods for it, and the bundled invalid submissions (test/rare26/invalid/)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from evaluation.declarations.examples import Example, Lineup
from evaluation.platform import synthetic

NDBE = "ndbe"  # the negative class as the examples write it; any other class is neoplasia
INPUT_SOCKET = "stacked-barretts-esophagus-endoscopy-images"
OUTPUT_SOCKET = "stacked-neoplastic-lesion-likelihoods"
OUTPUT_FILE = f"{OUTPUT_SOCKET}.json"


def synthesize(out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
    """Stacks of 192-384 frames from patients of 4-40 frames; ~12% of patients have
    neoplasia (70% of their frames); likelihoods from two overlapping beta distributions,
    rounded to 3 decimals so that ties occur as with real models."""
    rng = np.random.default_rng(seed)
    n_stacks = 8 if cases is None else cases
    sizes = rng.integers(192, 385, size=n_stacks)
    frames: list[tuple[str, str, int]] = []  # (patient, class, frame number)
    patient = 0
    while len(frames) < sizes.sum():
        neoplastic = rng.random() < 0.12
        for n in range(int(rng.integers(4, 41))):
            label = "neo" if neoplastic and rng.random() < 0.7 else NDBE
            frames.append((f"p{patient:05d}", label, n))
        patient += 1
    frames = [frames[i] for i in rng.permutation(len(frames))[: sizes.sum()]]

    metadata, jobs = {}, []
    start = 0
    input_dir = out_dir / "input"
    for number, size in enumerate(sizes):
        stack_name = f"rare26_stack_{number:04d}.tiff"
        stack = frames[start:start + size]
        start += size
        metadata[stack_name] = [{"filename": f"{p}_frame_{n:03d}.png", "index": i, "class": c, "patient_id": p}
                                for i, (p, c, n) in enumerate(stack)]
        neo = np.array([c != NDBE for _, c, _ in stack])
        scores = np.where(neo, rng.beta(4.0, 2.0, size), rng.beta(1.5, 5.0, size)).round(3)
        pk = synthetic.job_pk(rng)
        jobs.append(synthetic.job(
            pk,
            [synthetic.image_input(INPUT_SOCKET, stack_name, "images/stacked-barretts-esophagus-endoscopy")],
            [synthetic.file_output(OUTPUT_SOCKET, OUTPUT_FILE)],
            seconds=float(rng.uniform(20, 120)),
        ))
        synthetic.write_output(input_dir, pk, OUTPUT_FILE, scores.tolist())
    synthetic.write_json(out_dir / "ground-truth" / "test_metadata.json", metadata, indent=1)
    order = rng.permutation(len(jobs))  # the platform lists jobs in no particular order
    synthetic.write_predictions(input_dir, [jobs[i] for i in order])


def submission(ground_truth_dir: Path, input_dir: Path, seed: int = 0) -> None:
    """A valid submission for any RARE26 ground truth (the organizer's own): one job per stack,
    its likelihoods drawn as synthesize draws them (neoplasia frames Beta(4, 2), NDBE frames
    Beta(1.5, 5), 3 decimals), so the scores are real numbers, neither 0 nor 1. The input image
    is named as case-mapping.json maps it, else `<stack>.tiff`; the sockets are the phase's."""
    from evaluation.challenges.rare26 import Rare26

    evaluation = Rare26(ground_truth_dir)  # its config.json and case-mapping.json apply
    settings = evaluation.settings
    rng = np.random.default_rng(seed)
    socket = synthetic.setting_name("output_socket")
    output_file = synthetic.checked(f"{settings.output_socket}.json", socket)  # before anything is written
    jobs = []
    for stack in sorted(evaluation.ground_truth):
        labels = evaluation.ground_truth[stack].labels
        scores = np.where(labels == 1, rng.beta(4.0, 2.0, len(labels)), rng.beta(1.5, 5.0, len(labels))).round(3)
        pk = synthetic.job_pk(rng)
        name = synthetic.input_image_name(evaluation, stack, [f"{stack}.tiff"])
        input_socket = synthetic.first_socket(settings.input_socket)
        jobs.append(synthetic.job(pk, [synthetic.image_input(input_socket, name, f"images/{input_socket}")],
                                  [synthetic.file_output(settings.output_socket, output_file)],
                                  seconds=float(rng.uniform(20, 120))))
        synthetic.write_output(input_dir, pk, output_file, scores.tolist(), socket)
    order = rng.permutation(len(jobs))  # the platform lists jobs in no particular order
    synthetic.write_predictions(input_dir, [jobs[i] for i in order])


def invalid_examples(input_dir: Path) -> dict[str, dict[str, bytes | None]]:
    """The first stack's likelihoods one short, and with a string among them (the sixth, or the
    last of a shorter stack)."""
    predictions = json.loads((input_dir / "predictions.json").read_text())
    first = sorted(predictions, key=lambda job: job["inputs"][0]["image"]["name"])[0]
    path = f"{first['pk']}/output/{first['outputs'][0]['socket']['relative_path']}"
    scores = json.loads((input_dir / path).read_text())
    with_string = list(scores)
    with_string[min(5, len(scores) - 1)] = "0.5"
    return {"wrong-length": {path: (json.dumps(scores[:-1]) + "\n").encode()},
            "string-likelihood": {path: (json.dumps(with_string) + "\n").encode()}}


EXAMPLES = {"rare26": Example(synthesize=synthesize, invalid_examples=invalid_examples, submission=submission,
                              lineup=Lineup(seeds=(8, 3), invalid="wrong-length"))}
