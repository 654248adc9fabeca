"""Hostile inputs to the instance, point and topology metrics, each in a process of its own under
a data-segment ceiling of 1 GiB (RLIMIT_DATA: heap and anonymous mappings), so that a dense
true × predicted matrix or a copy per label fails here instead of passing on a large machine:

- through the library: a noise mask of about 10⁶ components, a label map of 65,535 labels, 10⁵
  predicted points against 10⁴ true ones on one image (and 10⁵ stacked on one spot), a mask
  filling the whole volume;
- through HECKTOR task 1's command with real .nii.gz / .mha files on a 256³ grid: the noise
  prediction and the full mask are scored (a prediction is not invalid for being bad), the map of
  65,535 labels is refused with exit 1 naming the patient, as the task's labels are {0, 1, 2}.

The time limit of each process is a guard against hanging, not a benchmark: the measured times
and peak memory are printed by benchmarks/instances_points.py."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import ndimage

from tests.cli_runs import ROOT, limit_data, run_command_line

MEMORY_LIMIT = 1 << 30
SHAPE = (256, 256, 256)


def run_library(code: str, timeout: float = 120) -> dict:
    """Run `code` (which sets `result`, a JSON-able dict) in a new Python process limited to
    MEMORY_LIMIT bytes of data; its result."""
    script = "import json, numpy as np\n" + textwrap.dedent(code) + "\nprint(json.dumps(result))\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=functools.partial(limit_data, MEMORY_LIMIT))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


NOISE = """
rng = np.random.default_rng(0)
noise = np.zeros((256, 256, 256), dtype=bool)
noise[::2, ::2, ::2] = rng.random((128, 128, 128)) < 0.5  # isolated voxels: one component each
truth = np.zeros_like(noise)
for corner in rng.integers(0, 240, (100, 3)):
    truth[tuple(slice(c, c + 6) for c in corner)] = True
"""


def test_noise_mask_of_a_million_components_through_the_library():
    result = run_library(NOISE + """
from evaluation.metrics.instances import (connected_components, false_positive_volume, lesion_count_difference,
                                          match_instances, panoptic_quality)
predicted, n = connected_components(noise, 26)
true, m = connected_components(truth, 26)
result = {"voxels": int(noise.sum()), "components": n, "true": m}
for assignment in ("hungarian", "greedy", "many_to_one", "many_to_many"):
    found = match_instances(true, predicted, "overlap", 0, False, assignment)
    result[assignment] = [found.tp, found.fp, found.fn]
result["pq"] = panoptic_quality(true, predicted).tp
result["fp_volume"] = false_positive_volume(noise, truth, connectivity=26)
result["count_difference"] = lesion_count_difference(noise, truth, 26)
result["touching"] = int(len(np.unique(predicted[truth & noise])))
""")
    n, m = result["components"], result["true"]
    assert n == result["voxels"] > 10 ** 6  # isolated voxels
    for assignment in ("hungarian", "greedy"):  # one to one: every true lesion touched takes one
        tp, fp, fn = result[assignment]
        assert tp + fn == m and tp + fp == n
    assert result["many_to_many"][1] == n - result["touching"]
    assert result["fp_volume"] == n - result["touching"] and result["count_difference"] == n - m


def test_label_map_of_65535_labels_through_the_library():
    result = run_library("""
from evaluation.metrics.instances import match_instances, panoptic_quality
blocks = np.arange(65536, dtype=np.int64).reshape(64, 32, 32).repeat(2, 0).repeat(2, 1).repeat(2, 2)
truth = blocks.astype(np.uint16)  # labels 1 ... 65535 (0 the background block), 8 voxels each
relabelled = np.where(truth > 0, 65536 - blocks, 0).astype(np.uint16)
shifted = np.roll(relabelled, 1, axis=0)  # each true block under two predicted ones: IoU 1/3 each
result = {}
for name, prediction in (("same", relabelled), ("shifted", shifted)):
    for assignment in ("hungarian", "greedy", "many_to_one", "many_to_many"):
        found = match_instances(truth, prediction, "iou", 0.3, False, assignment)
        result[f"{name}-{assignment}"] = [found.tp, found.fp, found.fn]
result["pq"] = panoptic_quality(truth, relabelled).pq
""")
    for assignment in ("hungarian", "greedy", "many_to_one", "many_to_many"):
        assert result[f"same-{assignment}"] == [65535, 0, 0]
    assert result["pq"] == 1.0
    assert result["shifted-hungarian"][0] == 65535  # chains of blocks: every true block keeps one
    assert result["shifted-many_to_many"][0] == 65535


def test_a_hundred_thousand_points_on_one_image_through_the_library():
    result = run_library("""
from evaluation.metrics.points import ASSIGNMENTS, cpm, match_points
rng = np.random.default_rng(0)
truth = rng.uniform(0, 10000, (10_000, 2))
near = truth[rng.integers(0, 10_000, 50_000)] + rng.normal(0, 6, (50_000, 2))
prediction = np.concatenate([near, rng.uniform(0, 10000, (50_000, 2))])
scores = rng.random(len(prediction))
result = {a: match_points(truth, prediction, 15.0, scores=scores, assignment=a).tp for a in ASSIGNMENTS}
result["cpm"] = cpm([truth], [prediction], [scores], 15.0)
stacked = np.tile(truth[:1], (100_000, 1))  # every prediction on one true point
result["stacked"] = [match_points(truth, stacked, 15.0, scores=scores, assignment=a).tp for a in ASSIGNMENTS]
result["stacked_cpm"] = cpm([truth], [stacked], [scores], 15.0)
""")
    assert result["hungarian"] >= result["greedy_by_score"] and result["hungarian"] >= result["greedy_by_truth"]
    assert result["hungarian"] > 9000 and 0 <= result["cpm"] <= 1
    assert result["stacked"][0] >= 1 and all(1 <= tp <= 10 for tp in result["stacked"])


def test_masks_filling_the_whole_volume_through_the_library():
    result = run_library("""
from evaluation.metrics.instances import (connected_components, false_negative_volume, false_positive_volume,
                                          match_instances, panoptic_quality)
from evaluation.metrics.topology import betti_numbers, betti_number_errors
full = np.ones((256, 256, 256), dtype=bool)
labels = full.view(np.uint8)
result = {"components": connected_components(full, 26)[1], "match": match_instances(labels, labels).tp,
          "pq": panoptic_quality(labels, labels).pq,
          "fp_volume": false_positive_volume(full, np.zeros_like(full), spacing=(0.5, 1.0, 2.0)),
          "fn_volume": false_negative_volume(full, full), "betti": list(betti_numbers(full)),
          "betti_errors": list(betti_number_errors(full, full))}
""")
    assert result == {"components": 1, "match": 1, "pq": 1.0, "fp_volume": 256 ** 3, "fn_volume": 0.0,
                      "betti": [1, 0, 0], "betti_errors": [0, 0, 0]}


# ---- through HECKTOR task 1's command, real files ----------------------------------------------


def write_mask(path, array, spacing=(1.0, 1.0, 2.0)):
    import SimpleITK as sitk

    image = sitk.GetImageFromArray(array)
    image.SetSpacing(spacing)
    path.parent.mkdir(parents=True, exist_ok=True)
    sitk.WriteImage(image, str(path), useCompression=True)


@pytest.fixture(scope="module")
def hecktor_ground_truth(tmp_path_factory):
    """A 256³ ground truth (GTVp and three GTVn lesions) and its label map."""
    truth = np.zeros(SHAPE, dtype=np.uint8)
    truth[100:140, 100:140, 100:140] = 1
    for centre in ((50, 50, 50), (200, 60, 90), (70, 200, 180)):
        truth[tuple(slice(c - 4, c + 4) for c in centre)] = 2
    folder = tmp_path_factory.mktemp("hecktor-hostile") / "ground-truth"
    write_mask(folder / "P1.nii.gz", truth)
    return folder, truth


def run_hecktor(submission, ground_truth, output):
    return run_command_line("hecktor2025-task1", submission, ground_truth, output, "--workers", 1,
                            memory_limit=MEMORY_LIMIT, timeout=300)


def test_noise_prediction_is_scored_by_the_command(hecktor_ground_truth, tmp_path):
    ground_truth, truth = hecktor_ground_truth
    rng = np.random.default_rng(0)
    lattice = np.zeros(SHAPE, dtype=bool)
    lattice[::2, ::2, ::2] = rng.random((128, 128, 128)) < 0.5
    prediction = truth.copy()
    prediction[lattice & (truth == 0)] = 2
    write_mask(tmp_path / "submission" / "P1.nii.gz", prediction)
    run = run_hecktor(tmp_path / "submission", ground_truth, tmp_path / "output")
    assert run.code == 0, run.stderr[-2000:]
    aggregates = run.metrics["aggregates"]
    structure = ndimage.generate_binary_structure(3, 3)
    predicted = ndimage.label(prediction == 2, structure)[1]
    true = ndimage.label(truth == 2, structure)[1]
    assert predicted > 10 ** 6
    assert aggregates["gtvn_tp"] + aggregates["gtvn_fp"] == predicted
    assert aggregates["gtvn_tp"] + aggregates["gtvn_fn"] == true == 3


def test_full_volume_prediction_is_scored_by_the_command(hecktor_ground_truth, tmp_path):
    ground_truth, _ = hecktor_ground_truth
    write_mask(tmp_path / "submission" / "P1.mha", np.full(SHAPE, 2, dtype=np.uint8))
    run = run_hecktor(tmp_path / "submission", ground_truth, tmp_path / "output")
    assert run.code == 0, run.stderr[-2000:]
    aggregates = run.metrics["aggregates"]
    # one predicted lesion over everything: IoU far below 0.3 with each true lesion
    assert (aggregates["gtvn_tp"], aggregates["gtvn_fp"], aggregates["gtvn_fn"]) == (0, 1, 3)
    assert aggregates["gtvp_dsc_mean"] == 0.0 and aggregates["gtvn_f1_agg"] == 0.0


def test_label_map_of_65535_labels_is_refused_by_the_command(hecktor_ground_truth, tmp_path):
    ground_truth, _ = hecktor_ground_truth
    labels = (np.arange(np.prod(SHAPE), dtype=np.int64) % 65535).astype(np.uint16).reshape(SHAPE)
    write_mask(tmp_path / "submission" / "P1.mha", labels)
    run = run_hecktor(tmp_path / "submission", ground_truth, tmp_path / "output")
    assert (run.code, run.wrote_metrics) == (1, False), run.stderr[-2000:]
    line = run.last_error_line
    # every value of 3 to 65534 is there, 256 voxels each but the last ones (counted exactly)
    counts = np.bincount(labels.reshape(-1))
    assert line.startswith("Patient P1: the segmentation holds label(s) " + ", ".join(
        f"{v} ({counts[v]} voxels)" for v in range(3, 8)) + " and 65527 more;")
    assert line.endswith("only 0 (background), 1 (GTVp) and 2 (GTVn) are allowed.")
