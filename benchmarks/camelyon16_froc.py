"""CAMELYON16 lesion evaluation: our pipeline against the plain 2016-style one
(benchmarks/camelyon16_reference.py) on the same synthetic slides, side by side in one run.

    .venv/bin/python -m benchmarks.camelyon16_froc [--slides 130] [--shape 6912 3056] [--workers 2]

Writes `--slides` synthetic slides (half tumor; single-page level-5 masks of `--shape`, i.e. a
~97k x 221k level-0 slide; 50-2000 detections per slide), then:

1. per slide, in this process: read the mask, build the evaluation mask, sort the detections,
   ours (OpenCV + flood fill + cc3d + vectorised look-ups) vs the 2016 way (distance transform,
   binary_fill_holes, skimage label/regionprops, a loop per detection); prints the time of each,
   the ratio, and checks the FROC numbers are identical;
2. end to end through the framework (`python -m evaluation camelyon16 --workers N` in a
   subprocess): wall time and peak memory of the process tree (sum of RSS of the process and its
   workers, sampled every 20 ms: an upper bound, as forked workers share pages), and checks its
   metrics.json against the 2016 numbers.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.camelyon16_reference import (
    evaluation_mask_2016,
    fp_tp_2016,
    froc_2016,
    itc_labels_2016,
    read_level5,
    read_rows,
)
from benchmarks.measure import run_evaluation
from evaluation.challenges.camelyon16.evaluation_mask import evaluation_mask
from evaluation.challenges.camelyon16.examples import write_synthetic
from evaluation.challenges.camelyon16.masks import read_mask
from evaluation.metrics.froc import froc_curve, froc_sensitivities, normal_slide_hits, slide_hits

ROOT = Path(__file__).resolve().parent.parent


def detections_of(input_dir: Path, slide: str):
    rows = [row for row in read_rows(input_dir / f"{slide}.csv") if row[0] != "p"]
    probs = [float(r[0]) for r in rows]
    xs = [float(r[1]) for r in rows]
    ys = [float(r[2]) for r in rows]
    return probs, xs, ys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slides", type=int, default=130)
    parser.add_argument("--shape", type=int, nargs=2, default=[6912, 3056], help="level-5 rows and columns")
    parser.add_argument("--detections", type=int, nargs=2, default=[50, 2000], help="false positives per slide")
    parser.add_argument("--workers", type=int, default=2, help="workers of the end-to-end run")
    parser.add_argument("--seed", type=int, default=16)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        start = time.perf_counter()
        write_synthetic(root, seed=args.seed, slides=args.slides, mask_shape=tuple(args.shape), pyramids=0,
                        detections=tuple(args.detections))
        input_dir, ground_truth = root / "input", root / "ground-truth"
        reference = {row[0]: row[1] == "Tumor" for row in read_rows(ground_truth / "reference.csv")[1:]}
        # The default exclusions: Test_049 from everything, Test_114 from the lesion evaluation.
        reference.pop("Test_049", None)
        reference.pop("Test_114", None)
        slides = sorted(reference)
        total_detections = sum(len(detections_of(input_dir, s)[0]) for s in slides)
        print(f"{len(slides)} slides ({sum(reference.values())} tumor), level-5 masks {args.shape[0]} x "
              f"{args.shape[1]}, {total_detections} detections; written in {time.perf_counter() - start:.1f} s")

        warm = np.zeros((64, 64), dtype=bool)  # first calls import OpenCV, cc3d, skimage: not timed
        warm[20:30, 20:40] = True
        evaluation_mask(warm, 0.243, 5)
        itc_labels_2016(evaluation_mask_2016(warm, 0.243, 5), 0.243, 5)

        ours_seconds = theirs_seconds = 0.0
        ours_hits, fp_lists, tp_lists, counts = [], [], [], []
        print(f"{'slide':>10} {'type':>6} {'2016 s':>8} {'ours s':>8} {'ratio':>7}")
        for slide in slides:
            probs, xs, ys = detections_of(input_dir, slide)
            path = ground_truth / "masks" / f"{slide}.tif"
            tick = time.perf_counter()
            if reference[slide]:
                tumor, level = read_level5(path)
                labels = evaluation_mask_2016(tumor, 0.243, level)
                itc = itc_labels_2016(labels, 0.243, level)
            else:
                labels, itc, level = None, [], 5
            fps, tps, count = fp_tp_2016(probs, xs, ys, reference[slide], labels, itc, level)
            theirs = time.perf_counter() - tick
            del labels
            tick = time.perf_counter()
            confidences = np.asarray(probs)
            if reference[slide]:
                mask = read_mask(path, 5, 5, slide)
                lesions = evaluation_mask(mask.tumor, 0.243, mask.level)
                found = lesions.label_at(np.floor(np.asarray(ys) / 32), np.floor(np.asarray(xs) / 32))
                hits = slide_hits(found, confidences, lesions.itc)
            else:
                hits = normal_slide_hits(confidences)
            ours = time.perf_counter() - tick
            ours_seconds += ours
            theirs_seconds += theirs
            fp_lists.append(fps)
            tp_lists.append(tps)
            counts.append(count)
            ours_hits.append(hits)
            if reference[slide]:
                print(f"{slide:>10} {'tumor':>6} {theirs:8.3f} {ours:8.4f} {theirs / ours:7.1f}")
        _, _, their_sensitivities, their_score = froc_2016(fp_lists, tp_lists, counts)
        curve = froc_curve(ours_hits, "2016")
        our_sensitivities = froc_sensitivities(curve)
        our_score = float(np.mean(our_sensitivities))
        if our_score != their_score or list(our_sensitivities) != list(their_sensitivities):
            raise SystemExit(f"MISMATCH: ours {our_score} {list(our_sensitivities)}, 2016 {their_score} "
                             f"{list(their_sensitivities)}")
        tumors = sum(reference.values())
        print(f"per-slide pipeline, {len(slides)} slides in one process: 2016 {theirs_seconds:.1f} s "
              f"({theirs_seconds / tumors:.2f} s per tumor slide), ours {ours_seconds:.2f} s "
              f"({ours_seconds / tumors:.3f} s per tumor slide): {theirs_seconds / ours_seconds:.1f}x faster; "
              f"FROC score identical ({our_score!r}), {sum(counts)} lesions")
        print(f"peak RSS of this process (2016 pipeline dominates): "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")

        run = run_evaluation("camelyon16", input_dir, ground_truth, root / "output", args.workers, interval=0.02)
        seconds, peak, metrics = run.seconds, run.peak_rss_bytes, run.metrics
        aggregates = metrics["aggregates"]
        same = aggregates["froc_score"] == their_score
        print(f"end to end (python -m evaluation, {args.workers} workers): {seconds:.1f} s, peak RSS of the process "
              f"tree {peak / 2**20:.0f} MB; froc_score {aggregates['froc_score']!r} "
              f"{'identical to' if same else 'DIFFERS from'} the 2016 pipeline; "
              f"slide_auc {aggregates['slide_auc']:.4f}")
        if not same:
            raise SystemExit("MISMATCH end to end")


if __name__ == "__main__":
    main()
