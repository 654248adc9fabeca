"""Data for the points and landmarks kinds' tests: a reference.json, and a submission laid out
as the platform mounts it (predictions.json, one folder per job holding its Multiple points),
written as real files; world <-> index by numpy written here, not the kinds' functions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.platform import synthetic


def grid(size, spacing, origin=None, direction=None) -> dict[str, Any]:
    ndim = len(size)
    return {"size": list(size), "spacing": [float(v) for v in spacing],
            "origin": [float(v) for v in (origin if origin is not None else np.zeros(ndim))],
            "direction": [float(v) for v in np.ravel(direction if direction is not None else np.eye(ndim))]}


def to_world(index, grid_entry) -> np.ndarray:
    """index -> world mm: origin + D · (spacing × index), ITK's rule."""
    ndim = len(grid_entry["size"])
    direction = np.reshape(grid_entry["direction"], (ndim, ndim))
    scaled = np.asarray(index, dtype=float) * np.asarray(grid_entry["spacing"])
    return np.asarray(grid_entry["origin"]) + scaled @ direction.T


def to_index(world, grid_entry) -> np.ndarray:
    """world mm -> continuous index, by solving D · diag(spacing) · index = world - origin."""
    ndim = len(grid_entry["size"])
    matrix = np.reshape(grid_entry["direction"], (ndim, ndim)) @ np.diag(grid_entry["spacing"])
    offsets = (np.asarray(world, dtype=float).reshape(-1, ndim) - np.asarray(grid_entry["origin"])).T
    return np.linalg.solve(matrix, offsets).T


def write_reference(folder: Path, cases: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "reference.json").write_text(json.dumps(cases, indent=1) + "\n")
    return folder


def multiple_points(points, names=None, probabilities=None) -> dict[str, Any]:
    """A Multiple points document: `points` (n, 2 or 3) world mm (a 2D point gets z = 0)."""
    items = []
    for k, point in enumerate(points):
        point = [float(v) for v in point] + [0.0] * (3 - len(point))
        item: dict[str, Any] = {"point": point}
        if names is not None:
            item["name"] = names[k]
        if probabilities is not None:
            item["probability"] = float(probabilities[k])
        items.append(item)
    return {"type": "Multiple points", "version": {"major": 1, "minor": 0}, "points": items}


def write_submission(input_dir: Path, outputs: dict[str, Any], socket: str) -> Path:
    """One job per case: its output `socket` is outputs[case] (a document, or raw bytes)."""
    rng = np.random.default_rng(0)
    jobs = []
    for case_id, value in sorted(outputs.items()):
        pk = synthetic.job_pk(rng)
        jobs.append(synthetic.job(pk, [synthetic.image_input("image", f"{case_id}.mha", "images/image")],
                                  [synthetic.file_output(socket, f"{socket}.json", "Multiple points")]))
        path = input_dir / pk / "output" / f"{socket}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(value if isinstance(value, bytes) else (json.dumps(value) + "\n").encode())
    synthetic.write_predictions(input_dir, jobs)
    return input_dir


def evaluated(challenge, input_dir: Path) -> dict[str, Any]:
    """The metrics.json content (before NaN -> null) of a run of `challenge` on `input_dir`."""
    from evaluation.run import evaluate

    return evaluate(challenge, input_dir)[0]


def scored(challenge, input_dir: Path) -> dict[str, Any]:
    """{case id: the challenge's per-case result} of every case of `input_dir`."""
    from evaluation.run import matched_cases, score_case

    return {case.case_id: score_case(challenge, case) for case in matched_cases(challenge, input_dir)}
