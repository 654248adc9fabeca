"""The bootstrap contract of the final ranking, for every challenge of the registry: `aggregate`
on a row of case weights (a bootstrap resample: case j drawn counts[j] times) equals the point
values of that resample made real (each drawn copy a case of its own, "<case>~<k>", with its own
ground-truth entry), and `aggregate` on the row of ones equals the bundled metrics.json.

Rows: seeded bootstrap draws, resamples of a single case drawn n times (one class, one slide,
one patient), the row of ones. Values: bit for bit where a challenge's arithmetic is exact on
whole counts (EXACT), else to 1e-9 relative (its sums of fractional per-case values run in another
order on copies than on counts: a matrix product against math.fsum), NaN where the resample
leaves a value undefined.

RARE26 is the documented exception (evaluation/challenges/rare26/__init__.py): its ranked value
is itself the median over its own bootstrap of frames at a simulated prevalence, not a function
of case weights, so it declares no `aggregate` and its final ranking uses those repetitions
(`resample_plan`, `ranking_resamples`; tests/test_final_ranking_isic_rare26.py checks them against
metrics.json and the official procedure). Here: that a challenge without `aggregate` has them.

Optional per-challenge data (keyed by folder, absent: the bundled example only): SYNTHETIC, data
sets that reach the edges of a challenge's rule (fractional weights, ties, timings, empty sets).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from evaluation.challenges import available_challenges, folder_of
from evaluation.declarations.ranking_rules import ranking_paths
from evaluation.framework import Evaluation
from evaluation.metrics.resampling import draws_to_counts
from evaluation.run import matched_cases, score_case
from tests.common import ROOT, challenges, lookup, params

RESAMPLES = 30
SINGLE_CASE_ROWS = 8  # resamples of one case (the first ones of sorted(results)), each drawn n times
# Challenges whose aggregate is exact on whole counts (sums of whole numbers, or of the same
# terms in the same order): bit for bit. The others to REL.
EXACT = frozenset({"isic2018", "isic2019", "camelyon16", "hecktor2025-task2", "hecktor2025-task3"})
REL = 1e-9


def has_aggregate(evaluation_class: type[Evaluation]) -> bool:
    return evaluation_class.aggregate is not Evaluation.aggregate


def bundled(name: str, settings=None):
    """(evaluation, per-case results) of a challenge's bundled example against its bundled ground truth."""
    evaluation = available_challenges()[name](ROOT / "ground-truth" / name, settings)
    cases = matched_cases(evaluation, ROOT / "test" / name / "input")
    return evaluation, {case.case_id: score_case(evaluation, case) for case in cases}


def materialised(evaluation, results, row):
    """(evaluation, results) of one resample made real: case j of sorted(results) repeated row[j]
    times, each copy a distinct case with the original's ground-truth entry."""
    copies = [(f"{case}~{k}", case)
              for case, times in zip(sorted(results), row, strict=True) for k in range(int(times))]
    resampled = copy.copy(evaluation)
    resampled.ground_truth = copy.copy(evaluation.ground_truth)  # its type and attributes (ISIC's table) kept
    resampled.ground_truth.clear()
    resampled.ground_truth.update({name: evaluation.ground_truth[case] for name, case in copies})
    return resampled, {name: results[case] for name, case in copies}


def contract_rows(n: int, seed: int, extra=None) -> np.ndarray:
    """Seeded bootstrap draws, single-case resamples, the row of ones, and any extra rows."""
    rng = np.random.default_rng(seed)
    rows = [draws_to_counts(rng.integers(0, n, size=(RESAMPLES, n)), n),
            (np.eye(n, dtype=np.int64) * n)[:SINGLE_CASE_ROWS], np.ones((1, n), dtype=np.int64)]
    if extra is not None:
        rows.append(np.asarray(extra, dtype=np.int64).reshape(-1, n))
    return np.vstack(rows)


def assert_resamples_match(evaluation, results, counts, exact: bool = False) -> dict[str, np.ndarray]:
    """aggregate(results, counts) against the point values of each materialised resample (a row
    drawing nothing has no resample to make: skipped); returns aggregate's values."""
    values = evaluation.aggregate(results, counts)
    assert values, "aggregate returns the ranked values"
    for path, column in values.items():
        assert column.shape == (len(counts),) and column.dtype == np.float64, path
    for r, row in enumerate(counts):
        if not row.any():
            continue
        resampled, copies = materialised(evaluation, results, row)
        point = resampled.point_values(copies)
        for path, column in values.items():
            expected = point.get(path, math.nan)  # left out of the resample's values: undefined there
            if math.isnan(expected):
                assert math.isnan(column[r]), (path, r, row)
            elif exact:
                assert column[r] == expected, (path, r, row)
            else:
                assert column[r] == pytest.approx(expected, rel=REL, abs=1e-12), (path, r, row)
    return values


# ---- the bundled examples, every challenge --------------------------------------------------------


@pytest.mark.parametrize("name", params(challenges()))
def test_aggregate_on_counts_is_the_materialised_resample_and_ones_is_metrics_json(name):
    evaluation_class = available_challenges()[name]
    if not has_aggregate(evaluation_class):  # the documented exception: its own repetitions
        assert evaluation_class.resample_plan is not Evaluation.resample_plan, name
        assert evaluation_class.ranking_resamples is not Evaluation.ranking_resamples, name
        evaluation, results = bundled(name)
        resamples, seed, note = evaluation.resample_plan(20, 1)
        assert note, f"{name}: a challenge with its own resamples says so in the final ranking's note"
        drawn = evaluation.ranking_resamples(results, resamples, seed)
        assert set(drawn) == set(ranking_paths(evaluation.final_rankings))
        assert all(values.shape == (resamples,) for values in drawn.values())
        return
    evaluation, results = bundled(name)
    counts = contract_rows(len(results), seed=len(name))
    values = assert_resamples_match(evaluation, results, counts, exact=name in EXACT)
    expected = json.loads((ROOT / "test" / name / "expected_metrics.json").read_text())
    for path, column in values.items():  # the row of ones is the submission's own metrics.json
        written = lookup(expected, path)
        assert (math.isnan(column[-1]) if written is None else column[-1] == written), path


# ---- synthetic data sets at the edges of a challenge's rule ---------------------------------------


def synthetic_isic(seed, fractional, images=160):
    """ISIC 2018 with a synthetic truth: fractional and zero weights, images with no or two
    categories, DF without positives, VASC rare; confidences of one decimal (ties, tied maxima).
    Extra rows: only images of weight 0, and one category's images only."""
    from evaluation.challenges.isic import Truth, TruthRows

    evaluation, _ = bundled("isic2018")
    rng = np.random.default_rng(seed)
    categories = evaluation.table.categories
    labels = rng.choice(len(categories), size=images, p=[0.2, 0.4, 0.15, 0.1, 0.1, 0.0, 0.05])
    values = np.zeros((images, len(categories)))
    values[np.arange(images), labels] = 1.0
    values[rng.random(images) < 0.05] = 0.0  # no category
    two = rng.random(images) < 0.05
    values[two, 0] = values[two, 1] = 1.0  # two categories
    weights = np.round(rng.uniform(0.2, 2.0, images), 3) if fractional else np.ones(images)
    weights[rng.random(images) < 0.1] = 0.0
    ids = tuple(f"IMG_{n:05d}" for n in range(images))
    evaluation.ground_truth = TruthRows(Truth(ids, categories, values, weights, np.ones(images)))
    noisy = values * rng.uniform(0.2, 0.8, (images, 1)) + rng.random(values.shape) * 0.6
    confidences = np.round(np.clip(noisy, 0, 1), 1)
    results = {image: confidences[n] for n, image in enumerate(ids)}
    weightless = (weights == 0).astype(np.int64)
    one_category = np.zeros(images, dtype=np.int64)
    one_category[np.flatnonzero((values[:, 1] == 1) & (values.sum(axis=1) == 1) & (weights > 0))[:5]] = 3
    return evaluation, results, [weightless, one_category], not fractional


def synthetic_csv(seed, timing, baseline, cases=9):
    """CSV 2026 per-case results: timing "exec" (exec_duration everywhere), "span" (instants only,
    some jobs overlapping), "mixed" (exec_duration on some jobs, instants on all), "negative" (one
    job completed before it started); baselines putting t below 2B/3, in the linear part, past 2B."""
    from evaluation.challenges.csv2026 import CaseResult, JobTiming

    evaluation, _ = bundled("csv2026")
    rng = np.random.default_rng(seed)
    start = datetime(2026, 1, 5, 12, tzinfo=UTC)
    results = {}
    for j in range(cases):
        high = int(rng.random() < 0.4)
        predicted = high if rng.random() < 0.7 else 1 - high
        started = start + timedelta(microseconds=int(rng.integers(0, 50_000_000)))
        completed = started + timedelta(microseconds=int(rng.integers(1, 20_000_000)))
        if timing == "negative" and j == 1:
            completed = started - timedelta(seconds=3)
        exec_seconds = float(rng.uniform(1, 20)) if timing == "exec" or (timing == "mixed" and j % 2) else None
        dsc = tuple(float(v) for v in rng.choice([0.0, 1.0, *rng.random(4)], 4))
        nsd = tuple(float(v) for v in rng.choice([0.0, 1.0, *rng.random(4)], 4))
        results[f"{j:04d}"] = CaseResult(dsc, nsd, predicted, JobTiming(exec_seconds, started, completed), high)
    evaluation.ground_truth = {case: Path(f"{case}_label.h5") for case in results}
    evaluation.settings = dataclasses.replace(evaluation.settings, baseline_time_seconds=baseline)
    return evaluation, results, None, False


def synthetic_camelyon(seed, rule, digits, slides=14):
    """CAMELYON16 slides: tumor slides with lesions (found or missed), ITC regions, false
    positives; normal slides with false positives (some none); slides outside the lesion
    evaluation; tied confidences between false positives and lesions, float32 slots equal-looking
    to a float64 false positive, a confidence rounding to float32 zero (1e-50)."""
    from evaluation.challenges.camelyon16 import SlideResult, SlideTruth
    from evaluation.metrics.froc import SlideHits

    evaluation, _ = bundled("camelyon16")
    rng = np.random.default_rng(seed)
    pool = np.array([0.0, 1e-50, 0.1, float(np.float32(0.1)), 0.25, 0.5, 1.0])
    truths, results = {}, {}
    for j in range(slides):
        tumor = bool(rng.random() < 0.5)
        lesion_evaluated = j % 7 != 3

        def confidences(k):
            return rng.choice(pool, k) if digits == "pool" else rng.random(k).round(digits) if digits else rng.random(k)

        false_positives = confidences(int(rng.integers(0, 12)))
        if not lesion_evaluated:
            hits = None
        elif tumor:
            lesions = confidences(int(rng.integers(0, 4)))
            lesions[rng.random(len(lesions)) < 0.3] = 0.0
            hits = SlideHits(false_positives, lesions, int(rng.integers(0, 3)))
        else:
            hits = SlideHits(false_positives, np.zeros(0), 0)
        probability = float(rng.choice([0.2, 0.5, 0.8])) if j % 3 == 0 else float(rng.random())
        truths[f"Test_{j:03d}"] = SlideTruth(tumor, lesion_evaluated, None)
        results[f"Test_{j:03d}"] = SlideResult(probability, hits)
    evaluation.ground_truth = truths
    evaluation.settings = dataclasses.replace(evaluation.settings, froc_thresholds=rule)
    return evaluation, results, None, True


SYNTHETIC = {
    "isic": [pytest.param(synthetic_isic, (seed, fractional), id=f"isic-{seed}-{('whole', 'fractional')[fractional]}")
             for seed, fractional in ((0, True), (1, False), (2, True))],
    "csv2026": [pytest.param(synthetic_csv, (len(timing) + int(baseline), timing, baseline),
                             id=f"csv2026-{timing}-{baseline:g}")
                for timing in ("exec", "span", "mixed", "negative") for baseline in (40.0, 100.0, 400.0)],
    "camelyon16": [pytest.param(synthetic_camelyon, (seed * 10 + len(rule), rule, digits),
                                id=f"camelyon16-{rule}-{digits}-{seed}")
                   for rule in ("2016", "corrected") for digits in (None, 1, "pool") for seed in range(4)],
}


def synthetic_params():
    folders = {folder_of(name) for name in challenges()}
    return [param for folder in sorted(folders) for param in SYNTHETIC.get(folder, [])]


@pytest.mark.parametrize("make, arguments", synthetic_params())
def test_aggregate_on_counts_is_the_materialised_resample_at_the_edges(make, arguments):
    evaluation, results, extra, exact = make(*arguments)
    counts = contract_rows(len(results), seed=int(arguments[0]), extra=extra)
    assert_resamples_match(evaluation, results, counts, exact=exact)
