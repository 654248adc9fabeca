"""Instances, points and topology: our functions side by side with their peers on the same data
(same numbers checked), and the bounded and hostile inputs, each in a process of its own so that
its peak memory is its own.

    .venv/bin/python -m benchmarks.instances_points [--repeat 3]

Prints, per case, the median wall time of ours and of the peer, their ratio, and the peak
resident memory of the process (ru_maxrss), with what it held once its inputs were made. The machine is shared:
read the ratios, measured in one run, not the absolute times.

- PQ of 3D instance maps (128³, ~500 true and ~2,000 predicted instances): ours vs panoptica
  (NaiveThresholdMatching, strict IoU > 0.5);
- lesion matching: ours vs picai_eval's evaluate_case (Hungarian, IoU >= 0.1);
- points, 10⁵ predictions against 10⁴ truths on one image: greedy in truth order vs evalutils'
  score_detection, and the maximum matching alone;
- CPM over 200 scans: ours vs the LUNA16 procedure (scikit-learn's roc_curve and np.interp);
- the bounded and hostile inputs alone: 10⁶ noise components against 100 true lesions, 65,535
  labels, a full 256³ volume (components, matching, PQ, FP volume, Betti numbers).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import json, resource, statistics, time, numpy as np
def timed(function, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value
def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

CASES = {
    "panoptic quality, 128³, ~500 true / ~2,000 predicted instances (panoptica)": """
from evaluation.metrics.instances import connected_components, panoptic_quality
from panoptica import InputType, Metric, NaiveThresholdMatching, Panoptica_Evaluator
from panoptica.utils.citation_reminder import disable_citation_reminder
disable_citation_reminder()
rng = np.random.default_rng(0)
shape = (128, 128, 128)
truth = np.zeros(shape, np.uint32)
for k, corner in enumerate(rng.integers(0, 122, (500, 3))):
    truth[tuple(slice(c, c + int(rng.integers(3, 7))) for c in corner)] = k + 1
prediction = np.roll(truth, 1, axis=0) * (rng.random(shape) < 0.9)
noise = connected_components(rng.random(shape) < 0.0015, 26)[0].astype(np.uint32)
prediction = np.where(prediction > 0, prediction, np.where(noise > 0, noise + 10000, 0)).astype(np.uint32)
evaluator = Panoptica_Evaluator(expected_input=InputType.UNMATCHED_INSTANCE,
                                instance_matcher=NaiveThresholdMatching(Metric.IOU, 0.5, strict_threshold=True),
                                instance_metrics=[Metric.IOU], global_metrics=[Metric.DSC], verbose=False)
base = rss()
ours_time, ours = timed(lambda: panoptic_quality(truth, prediction), REPEAT)
ours_rss = rss()
peer_time, peer = timed(lambda: evaluator.evaluate(prediction, truth, verbose=False)["ungrouped"], 1)
same = (ours.tp, ours.fp, ours.fn) == (peer.tp, peer.fp, peer.fn) and abs(ours.pq - peer.pq) < 1e-12
result = dict(ours=ours_time, peer=peer_time, peak_mib=ours_rss, base_mib=base, same=same, note=f"PQ {ours.pq:.4f}")
""",
    "lesion matching, 3D, Hungarian on IoU (picai_eval evaluate_case)": """
from evaluation.metrics.instances import connected_components, match_instances
from picai_eval.eval import evaluate_case
rng = np.random.default_rng(1)
shape = (24, 96, 96)
grid = np.indices(shape)
truth = np.zeros(shape, np.int32)
for _ in range(8):
    centre = [rng.uniform(3, s - 3) for s in shape]
    truth[sum((g - c) ** 2 for g, c in zip(grid, centre)) <= rng.uniform(2, 5) ** 2] = 1
moved = np.roll(truth, 1, axis=1) > 0
components, n = connected_components(moved & (rng.random(shape) < 0.95) | (rng.random(shape) < 0.0005), 26)
confidence = (rng.permutation(n) + 1) / (n + 1)
detection = np.where(components > 0, confidence[np.maximum(components, 1) - 1], 0).astype(np.float32)
base = rss()
def ours_call():
    return match_instances(connected_components(truth, 26)[0], components, "iou", 0.1, True, "hungarian_most_matches")
ours_time, ours = timed(ours_call, REPEAT)
ours_rss = rss()
peer_time, (y_list, *_) = timed(lambda: evaluate_case(detection, truth, min_overlap=0.1,
                                allow_unmatched_candidates_with_minimal_overlap=False), 1)
tp = sum(1 for is_lesion, _, overlap in y_list if is_lesion and overlap > 0)
fp = sum(1 for is_lesion, *_ in y_list if not is_lesion)
result = dict(ours=ours_time, peer=peer_time, peak_mib=ours_rss, base_mib=base, same=(ours.tp, ours.fp) == (tp, fp),
              note=f"{n} predicted lesions")
""",
    "points, 10^5 predictions vs 10^4 truths, greedy in truth order (evalutils score_detection)": """
from evaluation.metrics.points import match_points
from evalutils.scorers import score_detection
rng = np.random.default_rng(0)
truth = rng.uniform(0, 10000, (10_000, 2))
prediction = np.concatenate([truth[rng.integers(0, 10_000, 50_000)] + rng.normal(0, 6, (50_000, 2)),
                             rng.uniform(0, 10000, (50_000, 2))])
match_points(truth[:3], prediction[:3], 15.0)  # imports
base = rss()
ours_time, ours = timed(lambda: match_points(truth, prediction, 15.0, assignment="greedy_by_truth"), REPEAT)
ours_rss = rss()
hungarian_time, hungarian = timed(lambda: match_points(truth, prediction, 15.0), REPEAT)
ours_rss = rss()
truth_list, prediction_list = [tuple(p) for p in truth], [tuple(p) for p in prediction]
peer_time, peer = timed(lambda: score_detection(ground_truth=truth_list, predictions=prediction_list,
                                                radius=15.0), 1)
same = (ours.tp, ours.fp, ours.fn) == (peer.true_positives, peer.false_positives, peer.false_negatives)
result = dict(ours=ours_time, peer=peer_time, peak_mib=ours_rss, base_mib=base, same=same,
              note=f"maximum matching {hungarian_time:.3f} s, TP {hungarian.tp} vs greedy {ours.tp}")
""",
    "CPM, 200 scans (the LUNA16 procedure: roc_curve, np.interp)": """
from evaluation.metrics.points import CPM_FP_RATES, cpm
from sklearn.metrics import roc_curve
rng = np.random.default_rng(2)
truth, prediction, scores = [], [], []
for _ in range(200):
    t = rng.uniform(0, 300, (int(rng.integers(0, 6)), 3))
    p = np.concatenate([t + rng.normal(0, 2, t.shape), rng.uniform(0, 300, (int(rng.integers(5, 60)), 3))])
    truth.append(t); prediction.append(p); scores.append(rng.random(len(p)))
def luna16():
    labels, probabilities, total = [], [], 0
    for t, p, s in zip(truth, prediction, scores):
        total += len(t)
        hits = np.sqrt(((t[:, None] - p[None]) ** 2).sum(axis=2)) < 3.0
        for row in hits:
            if row.any():
                labels.append(1); probabilities.append(s[row].max())
        labels += [0] * int((~hits.any(axis=0)).sum()); probabilities += list(s[~hits.any(axis=0)])
    labels = np.array(labels)
    fpr, tpr, _ = roc_curve(labels, probabilities)
    fps, sens = fpr * (len(labels) - labels.sum()) / len(truth), tpr * labels.sum() / total
    return float(np.mean(np.interp(CPM_FP_RATES, fps, sens)))
cpm(truth[:2], prediction[:2], scores[:2], 3.0)
base = rss()
ours_time, ours = timed(lambda: cpm(truth, prediction, scores, 3.0, inclusive=False), REPEAT)
ours_rss = rss()
peer_time, peer = timed(luna16, REPEAT)
result = dict(ours=ours_time, peer=peer_time, peak_mib=ours_rss, base_mib=base, same=abs(ours - peer) < 1e-12,
              note=f"CPM {ours:.4f}")
""",
    "bounded: 10^6 noise components vs 100 true lesions, 256³ (components + match + FP volume)": """
from evaluation.metrics.instances import connected_components, false_positive_volume, match_instances
rng = np.random.default_rng(0)
noise = np.zeros((256, 256, 256), dtype=bool)
noise[::2, ::2, ::2] = rng.random((128, 128, 128)) < 0.5
truth = np.zeros_like(noise)
for corner in rng.integers(0, 240, (100, 3)):
    truth[tuple(slice(c, c + 6) for c in corner)] = True
connected_components(truth[:4, :4, :4], 26)
base = rss()
def call():
    predicted, n = connected_components(noise, 26)
    found = match_instances(connected_components(truth, 26)[0], predicted, "iou", 0.3, False, "hungarian")
    return n, found, false_positive_volume(noise, truth, connectivity=26)
ours_time, (n, found, volume) = timed(call, REPEAT)
result = dict(ours=ours_time, peer=None, peak_mib=rss(), base_mib=base, same=None,
              note=f"{n} components, FP {found.fp}")
""",
    "hostile: 65,535 labels, each true block under two predicted ones (Hungarian, IoU > 0.3)": """
from evaluation.metrics.instances import match_instances
blocks = np.arange(65536, dtype=np.int64).reshape(64, 32, 32).repeat(2, 0).repeat(2, 1).repeat(2, 2)
truth = blocks.astype(np.uint16)
shifted = np.roll(np.where(truth > 0, 65536 - blocks, 0).astype(np.uint16), 1, axis=0)
match_instances(truth[:2, :2, :2], shifted[:2, :2, :2])
base = rss()
ours_time, found = timed(lambda: match_instances(truth, shifted, "iou", 0.3), REPEAT)
result = dict(ours=ours_time, peer=None, peak_mib=rss(), base_mib=base, same=None, note=f"TP {found.tp}")
""",
    "hostile: a full 256³ volume (components, match, PQ, FP volume, Betti numbers)": """
from evaluation.metrics.instances import connected_components, false_positive_volume, match_instances, panoptic_quality
from evaluation.metrics.topology import betti_numbers
full = np.ones((256, 256, 256), dtype=bool)
betti_numbers(full[:3, :3, :3])
base = rss()
def call():
    labels = full.view(np.uint8)
    return (connected_components(full, 26)[1], match_instances(labels, labels).tp, panoptic_quality(labels, labels).pq,
            false_positive_volume(full, ~full), betti_numbers(full))
ours_time, values = timed(call, REPEAT)
result = dict(ours=ours_time, peer=None, peak_mib=rss(), base_mib=base, same=None, note=str(values))
""",
}


def run_case(code: str, repeat: int) -> dict:
    script = PRELUDE + f"REPEAT = {repeat}\n" + textwrap.dedent(code) + "\nprint(json.dumps(result))\n"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of ours per case (median)")
    arguments = parser.parse_args()
    for name, code in CASES.items():
        result = run_case(code, arguments.repeat)
        peer = result["peer"]
        versus = f"  peer {peer:8.3f} s  ratio {peer / result['ours']:6.1f}x  same numbers: {result['same']}" \
            if peer is not None else ""
        print(f"{name}\n    ours {result['ours']:8.3f} s{versus}  peak {result['peak_mib']:.0f} MiB (inputs made and "
              f"imports done: {result['base_mib']:.0f} MiB)  "
              f"({result['note']})", flush=True)
        if result["same"] is False:
            raise SystemExit(f"MISMATCH: {name}")


if __name__ == "__main__":
    main()
