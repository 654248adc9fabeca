"""ISIC parity with the reference scorer, isic-challenge-scoring 5.8.0.

The recorded tests compare ours with the reference's outputs stored in
tests/fixtures/isic/reference_outputs.json (scripts/isic_reference_fixtures.py ran the reference
on the inputs committed in tests/fixtures/isic/parity_inputs.json.gz); they always run. The
inputs are read from that file, never regenerated here: made with NumPy, their last bits would
depend on the CPU's SIMD path (AVX-512 or not). The live tests run the reference itself when its
environment is present (scripts/isic_reference_env.sh), else they are skipped saying so.
"""

import functools
import gzip
import json
import re

import pytest

from benchmarks.isic_reference import (
    FIXTURES,
    PARITY_CASES,
    REJECTION_CASES,
    REJECTION_CATEGORIES,
    REJECTION_IMAGES,
    fuzzed_submissions,
    inputs_digest,
    reference_cli,
    rejection_truth,
    run_reference,
    values_digest,
)
from evaluation.challenges.isic import read_predictions_csv
from evaluation.errors import SubmissionError

RECORDED = json.loads(FIXTURES.read_text())
INPUTS = FIXTURES.parent / "parity_inputs.json.gz"
LIVE = pytest.mark.skipif(reference_cli() is None, reason="the reference environment is missing (make it with "
                                                            "scripts/isic_reference_env.sh; needs Python >= 3.13)")

# Our one-line message for each rejection, in the reference's order of checks (a precise part).
OUR_MESSAGES = {
    "no-newline": "The CSV has no line breaks in its first 2000 characters",
    "one-newline": "The CSV has no line breaks in its first 2000 characters",
    "not-utf8": "The CSV is not UTF-8 text (byte 90 cannot be decoded); save it as UTF-8.",
    "utf16": "The CSV is not UTF-8 text (byte 1 cannot be decoded); save it as UTF-8.",
    "unclosed-quote": "The CSV cannot be parsed: a quoted field is never closed (end of file inside quotes).",
    "row-too-long": "The CSV cannot be parsed: data row 3 has 10 fields, more than the 8 of the header and first row.",
    "no-header-only-blank-lines": "The CSV cannot be parsed: the file has no header line.",
    "no-image-column": "The CSV has no 'image' column (nor 'lesion_id'); its header is 'img', 'MEL',",
    "semicolons": "The CSV has no 'image' column (nor 'lesion_id'); "
                  "its header is 'image;MEL;NV;BCC;AKIEC;BKL;DF;VASC'.",
    "duplicate-rows": "The CSV has more than one row for image(s) ISIC_0000002.",
    "duplicate-after-jpg": "The CSV has more than one row for image(s) ISIC_0000003.",
    "missing-column": "The CSV has no column for category VASC; the header must be image followed by MEL, NV, BCC, "
                      "AKIEC, BKL, DF, VASC.",
    "extra-column": "The CSV has column(s) that are not categories: 'extra'; the categories are MEL, NV, BCC, AKIEC, "
                    "BKL, DF, VASC.",
    "duplicate-column": "The CSV has column(s) that are not categories: 'MEL' (column 9);",
    "trailing-comma-everywhere": "The CSV has column(s) that are not categories: '' (column 9);",
    "lesion-id-and-image": "The CSV has column(s) that are not categories: 'lesion_id';",
    "empty-value": "The CSV has missing or empty values for image(s) ISIC_0000002.",
    "na-token": "The CSV has missing or empty values for image(s) ISIC_0000003.",
    "short-row": "The CSV has missing or empty values for image(s) ISIC_0000001.",
    "integer-column": "Column MEL of the CSV holds only whole numbers such as '1'; confidences must be written as "
                      "floating-point numbers (0.0, 1.0, 0.25).",
    "quoted-integers": "Column MEL of the CSV holds only whole numbers such as '1';",
    "text-value": "Column NV of the CSV is not all numbers: image ISIC_0000004 has 'high'.",
    "bool-column": "Column MEL of the CSV is not all numbers: image ISIC_0000001 has 'True'.",
    "space-only-value": "Column NV of the CSV is not all numbers: image ISIC_0000004 has ' '.",
    "overflowing-exponent": "Column NV of the CSV is not all numbers: image ISIC_0000004 has '1e400'.",
    "above-one": "The CSV has values outside [0, 1] for image(s) ISIC_0000002 (e.g. MEL = 1.5).",
    "negative": "The CSV has values outside [0, 1] for image(s) ISIC_0000003 (e.g. MEL = -0.1).",
    "infinity": "The CSV has values outside [0, 1] for image(s) ISIC_0000003 (e.g. MEL = inf).",
    "missing-image": "The CSV has no row for 1 image(s) of the test set: ISIC_0000008.",
    "extra-image": "The CSV has 1 image(s) that are not in the test set: ISIC_9999999.",
    "empty-id-extra": "The CSV has 1 image(s) that are not in the test set: (empty id).",
    "header-only": "The CSV has a header but no image rows.",
}


@functools.cache
def _committed_inputs() -> dict[str, dict[str, str]]:
    with gzip.open(INPUTS, "rt", encoding="utf-8") as stream:
        return json.load(stream)["cases"]


def committed_inputs(name: str) -> tuple[str, str]:
    """(truth CSV, predictions CSV) texts of a parity case, as committed; checked to be the inputs
    the reference's outputs were recorded on (so a corrupted or edited file fails here)."""
    case = _committed_inputs()[name]
    truth, predictions = case["truth"], case["predictions"]
    assert inputs_digest(truth, predictions) == RECORDED["parity"][name]["inputs_sha256"], (
        f"tests/fixtures/isic/parity_inputs.json.gz does not hold the inputs of case {name} that the reference's "
        "outputs were recorded on: restore both files of tests/fixtures/isic/ from git. New inputs need new "
        "outputs: `scripts/isic_reference_fixtures.py --inputs`, then `scripts/isic_reference_fixtures.py`, which "
        "runs the reference in its environment (scripts/isic_reference_env.sh, needs Python >= 3.13).")
    return truth, predictions


def test_the_committed_inputs_are_those_of_every_parity_case():
    assert set(_committed_inputs()) == set(PARITY_CASES) == set(RECORDED["parity"])


def run_ours(evaluate, tmp_path, edition, truth, predictions: bytes, metric="balanced_accuracy", name="case"):
    ground_truth = tmp_path / f"{name}-gt"
    submission = tmp_path / f"{name}-input"
    ground_truth.mkdir()
    submission.mkdir()
    (ground_truth / "truth.csv").write_text(truth)
    (ground_truth / "config.json").write_text(json.dumps({"target_metric": metric}))
    (submission / "predictions.csv").write_bytes(predictions)
    return evaluate(edition, submission, ground_truth)


def reference_view(metrics: dict) -> dict:
    """The reference's keys of our metrics.json (aggregate: only its balanced_accuracy)."""
    return {"overall": metrics["overall"], "validation": metrics["validation"],
            "per_category": metrics["per_category"], "macro_average": metrics["macro_average"],
            "aggregate": {"balanced_accuracy": metrics["aggregate"]["balanced_accuracy"]}}


def differences(ours, reference, path=""):
    """Every leaf where the two differ (exact float equality: the same bits)."""
    if isinstance(reference, dict):
        found = [] if set(ours) == set(reference) else [f"{path}: keys {sorted(ours)} != {sorted(reference)}"]
        return found + [d for key in reference if key in ours
                        for d in differences(ours[key], reference[key], f"{path}.{key}")]
    return [] if ours == reference else [f"{path}: ours {ours!r}, reference {reference!r}"]


@pytest.mark.parametrize("name", sorted(name for name in PARITY_CASES if "no_positive" not in PARITY_CASES[name]))
def test_numbers_equal_the_recorded_reference_bit_for_bit(name, evaluate, tmp_path):
    case = PARITY_CASES[name]
    truth, predictions = committed_inputs(name)
    recorded = RECORDED["parity"][name]
    run = run_ours(evaluate, tmp_path, case["edition"], truth, predictions.encode(), case["metric"])
    assert run.code == 0, run.stderr
    metrics = run.metrics
    assert differences(reference_view(metrics), recorded["output"]) == []
    assert metrics["aggregate"]["auc"] == recorded["output"]["macro_average"]["auc"]
    assert list(metrics)[:5] == ["overall", "validation", "per_category", "macro_average", "aggregate"]
    assert list(metrics["per_category"]) == list(recorded["output"]["per_category"])


def test_where_the_reference_crashes_ours_scores_the_other_categories(evaluate, tmp_path):
    """No UNK positive: the reference dies with a ValueError inside AUC80; ours writes UNK's
    ranking metrics as null with a note and leaves them out of the means. The other categories'
    numbers equal those of the same data scored by the reference without the UNK column."""
    case = PARITY_CASES["2019-no-unk-positives"]
    truth, predictions = committed_inputs("2019-no-unk-positives")
    recorded = RECORDED["parity"]["2019-no-unk-positives"]
    assert "crash" in recorded and "ValueError" in recorded["crash"]
    run = run_ours(evaluate, tmp_path, case["edition"], truth, predictions.encode(), case["metric"])
    assert run.code == 0, run.stderr
    metrics = run.metrics
    for metric in ("auc", "auc_sens_80", "ap"):
        assert metrics["per_category"][metric]["UNK"] is None
        assert "no image of category UNK" in metrics["notes"][f"per_category.{metric}.UNK"]
        others = [v for c, v in metrics["per_category"][metric].items() if c != "UNK"]
        assert metrics["macro_average"][metric] == pytest.approx(sum(others) / len(others), abs=1e-15)
    assert metrics["per_category"]["sensitivity"]["UNK"] == 1.0  # the reference's rule: no positives, a freebie
    assert metrics["roc_curves"]["UNK"] is None
    assert "NaN" not in (run.output / "metrics.json").read_text()


@pytest.mark.parametrize("name", sorted(REJECTION_CASES))
def test_rejections_match_the_recorded_reference(name, evaluate, tmp_path):
    recorded = RECORDED["rejections"][name]
    run = run_ours(evaluate, tmp_path, "isic2018", rejection_truth(), REJECTION_CASES[name])
    if "error" in recorded:
        assert (run.code, run.wrote_metrics) == (1, False), run.stderr
        assert run.last_error_line.startswith(OUR_MESSAGES[name]), run.last_error_line
    else:
        assert run.code == 0, run.stderr
        assert differences(reference_view(run.metrics), recorded["output"]) == []


def test_every_rejection_case_has_our_message():
    refused = {name for name, result in RECORDED["rejections"].items() if "error" in result}
    assert refused == set(OUR_MESSAGES)
    assert set(RECORDED["rejections"]) == set(REJECTION_CASES)


# Our messages, by the reference's check number (benchmarks.isic_reference.REFERENCE_STEPS).
OUR_STEPS = {0: r"The CSV has no line breaks", 1: r"The CSV is not UTF-8", 2: r"The CSV cannot be parsed",
             3: r"The CSV has no 'image' column", 4: r"The CSV has more than one row",
             5: r"The CSV has no column for", 6: r"The CSV has column\(s\) that are not categories",
             7: r"The CSV has missing or empty values", 8: r"Column \S+ of the CSV |The CSV has a header but no image",
             9: r"The CSV has values outside \[0, 1\]", 10: r"The CSV has no row for \d+ image",
             11: r"The CSV has \d+ image\(s\) that are not in the test set"}


def test_fuzzed_files_are_refused_at_the_same_check_or_read_to_the_same_bits():
    """600 accepted files with random edits (quotes, NULs, CRs, BOMs, lines repeated...): the
    reference's own reader refused each at check N or read it to these values."""
    fuzz = RECORDED["fuzz"]
    files = fuzzed_submissions(fuzz["seed"], fuzz["count"])
    disagreements = []
    for n, (data, outcome) in enumerate(zip(files, fuzz["outcomes"], strict=True)):
        try:
            _, values = read_predictions_csv(data, REJECTION_CATEGORIES, REJECTION_IMAGES)
            ours = "ok " + values_digest(values)
            same = ours == outcome
        except SubmissionError as error:
            ours = str(error)
            same = not outcome.startswith("ok") and re.match(OUR_STEPS[int(outcome)], ours) is not None
        if not same:
            disagreements.append((n, outcome, ours[:120]))
    assert disagreements == []


@LIVE
def test_numbers_equal_the_live_reference(evaluate, tmp_path):
    case = PARITY_CASES["2019-balanced-fractional-weights"]
    truth, predictions = committed_inputs("2019-balanced-fractional-weights")
    (tmp_path / "t.csv").write_text(truth)
    (tmp_path / "p.csv").write_text(predictions)
    reference = run_reference(tmp_path / "t.csv", tmp_path / "p.csv", case["metric"])
    run = run_ours(evaluate, tmp_path, case["edition"], truth, predictions.encode(), case["metric"])
    assert differences(reference_view(run.metrics), reference["output"]) == []


@LIVE
def test_live_reference_refuses_what_we_refuse(evaluate, tmp_path):
    (tmp_path / "t.csv").write_text(rejection_truth())
    for name in ("integer-column", "accepted-first-row-longer"):
        (tmp_path / "p.csv").write_bytes(REJECTION_CASES[name])
        reference = run_reference(tmp_path / "t.csv", tmp_path / "p.csv")
        run = run_ours(evaluate, tmp_path, "isic2018", rejection_truth(), REJECTION_CASES[name], name=name)
        assert ("error" in reference) == (run.code == 1), name
