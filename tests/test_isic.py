"""ISIC 2018/2019: metric functions against scikit-learn, the CSV number reader against pandas,
the algorithm phase, hostile submissions (links, pipes, huge files, huge numbers), settings,
ground-truth errors, and the bundled examples (regenerated to the same bytes, their numbers
recomputed independently with scikit-learn and plain loops). Parity with the reference itself:
tests/test_isic_parity.py."""

import io
import json
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import auc as sk_auc
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

from evaluation.challenges.isic import SPARE_ROWS, Isic2019, multiclass
from evaluation.challenges.isic import predictions as isic_csv
from evaluation.challenges.isic.examples import write_synthetic
from evaluation.challenges.isic.scoring import FREEBIE
from evaluation.metrics import classification as clf
from evaluation.metrics.confusion import balanced_accuracy_score, binary_confusion
from evaluation.reading.files import size_text
from evaluation.reading.tables import bytes_for_rows
from tests.cli_runs import run_command_line

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = "skin-lesion-class-confidences"


def random_case(seed, n=300, zero_weights=True, fractional=False):
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < 0.3
    scores = np.round(np.clip(rng.normal(0.4 + 0.3 * truth, 0.2), 0, 1), 2)  # many ties
    scores[rng.random(n) < 0.05] = 0.5
    weights = np.round(rng.uniform(0, 2, n), 3) if fractional else np.ones(n)
    if zero_weights:
        weights[rng.random(n) < 0.1] = 0.0
    return truth, scores, weights


# ---- metric functions against scikit-learn ----------------------------------------------------


@pytest.mark.parametrize("seed, fractional", [(0, False), (1, True), (2, True), (3, False)])
def test_ranking_metrics_equal_scikit_learn_bit_for_bit(seed, fractional):
    """Whole-number weights: the same bits as the installed scikit-learn. Fractional weights:
    scikit-learn >= 1.8 accumulates false positives differently from the 1.7 the reference pins
    (one ulp apart); the bits of 1.7 are checked against the reference in test_isic_parity.py."""
    truth, scores, weights = random_case(seed, fractional=fractional)
    curve = clf.ranking_curve(truth, scores, weights)
    same = (lambda a, b: np.testing.assert_allclose(a, b, rtol=0, atol=1e-15)) if fractional else \
        np.testing.assert_array_equal
    same(clf.roc_auc(curve), roc_auc_score(truth, scores, sample_weight=weights))
    same(clf.average_precision(curve), average_precision_score(truth, scores, sample_weight=weights))
    for drop in (True, False):
        ours = clf.roc_points(curve, drop_intermediate=drop)
        theirs = roc_curve(truth, scores, sample_weight=weights, drop_intermediate=drop)
        for a, b in zip(ours, theirs, strict=True):
            same(a, b)


@pytest.mark.parametrize("seed", range(3))
def test_stable_order_is_numpys_stable_argsort(seed):
    """Ties (many), -0.0 beside 0.0, negatives, tiny and huge values: the permutation of
    np.argsort(kind="mergesort"), which scikit-learn's curves use."""
    rng = np.random.default_rng(seed)
    for trial in range(100):
        n = int(rng.integers(0, 2000))
        scores = np.round(rng.normal(size=n) * 10.0 ** rng.integers(-300, 300), int(rng.integers(0, 4)))
        scores[rng.random(n) < 0.1] = 0.0
        scores[rng.random(n) < 0.1] = -0.0
        scores[rng.random(n) < 0.05] = 5e-324
        if trial % 2:
            scores = np.abs(scores)  # the usual case: confidences
        assert np.array_equal(clf.stable_order(scores), np.argsort(scores, kind="mergesort"))


@pytest.mark.parametrize("decimals", [None, 4, 2, 0])
def test_stable_order_of_many_scores_puts_ties_back_in_index_order(decimals):
    """25,000 scores (ISIC's test set), where numpy's default sort scrambles ties (checked here, so
    that the test exercises the repair): still the stable sort's permutation, all equal included."""
    rng = np.random.default_rng(4)
    scores = rng.random(25_000)
    if decimals is not None:
        scores = np.round(scores, decimals)
        assert not np.array_equal(np.argsort(scores), np.argsort(scores, kind="mergesort"))
    for s in (scores, -scores, np.abs(scores - 0.5)):
        assert np.array_equal(clf.stable_order(s), np.argsort(s, kind="mergesort"))


def test_argmax_labels_are_each_rows_single_maximum():
    rng = np.random.default_rng(7)
    scores = np.round(rng.random((3000, 9)), 1)  # many ties
    scores[:5] = [[np.nan] * 9, [-0.0, 0.0] + [-1.0] * 7, [0.0] * 9, [1.0] + [0.5] * 8, [0.2] * 8 + [0.3]]
    scores[5, 3] = np.nan
    expected = []
    for row in scores.tolist():
        nan = [i for i, v in enumerate(row) if np.isnan(v)]
        if nan:  # numpy's argmax: the first NaN is the maximum, and equals nothing
            expected.append(nan[0])
            continue
        at = [i for i, v in enumerate(row) if v == max(row)]
        expected.append(at[0] if len(at) == 1 else multiclass.UNDECIDED)
    assert multiclass.argmax_labels(scores).tolist() == expected
    assert multiclass.argmax_labels(np.zeros((0, 4))).tolist() == []


def independent_auc80(truth, scores, weights, level=0.8):
    """The ISIC definition written out with scikit-learn's curve and area."""
    kept = weights != 0
    fpr, tpr, _ = roc_curve(truth[kept], scores[kept], sample_weight=weights[kept], drop_intermediate=False)
    i = int(np.argmax(tpr >= level))  # first point at or above the level
    start = np.interp(level, tpr[i - 1:i + 1], fpr[i - 1:i + 1])
    return sk_auc(np.r_[start, fpr[i:]], np.r_[level, tpr[i:]])


@pytest.mark.parametrize("seed", range(4))
def test_auc80_matches_its_definition(seed):
    truth, scores, weights = random_case(seed, fractional=seed % 2 == 1)
    value = clf.auc_above_sensitivity(clf.ranking_curve(truth, scores, weights), 0.8)
    assert value == pytest.approx(independent_auc80(truth, scores, weights), abs=1e-15)


def test_auc80_perfect_and_chance():
    truth = np.array([0] * 50 + [1] * 50, dtype=bool)
    perfect = clf.ranking_curve(truth, truth.astype(float), np.ones(100))
    assert clf.auc_above_sensitivity(perfect) == pytest.approx(1.0)
    constant = clf.ranking_curve(truth, np.full(100, 0.3), np.ones(100))
    assert clf.auc_above_sensitivity(constant) == pytest.approx(0.18)  # the chance diagonal, not normalised


def test_undefined_ranking_metrics_are_nan():
    no_positives = clf.ranking_curve(np.zeros(5, bool), np.linspace(0, 1, 5), np.ones(5))
    only_zero_weight_positives = clf.ranking_curve(np.array([1, 0, 0], bool), np.array([0.9, 0.1, 0.2]),
                                                   np.array([0.0, 1.0, 1.0]))
    for curve in (no_positives, only_zero_weight_positives):
        assert np.isnan(clf.roc_auc(curve)) and np.isnan(clf.auc_above_sensitivity(curve))
        assert np.isnan(clf.average_precision(curve))


def test_confusion_metrics_and_the_freebie_rule():
    """The per-category confusion metrics are the library's (evaluation/metrics/confusion.py) with
    the reference's value for a zero denominator, 1.0, passed explicitly."""
    truth = np.array([1, 1, 0, 0, 0], bool)
    prediction = np.array([0.9, 0.5, 0.6, 0.2, 0.5]) > 0.5  # exact 0.5 is not positive
    cm = binary_confusion(truth, prediction, np.array([1.0, 2.0, 1.0, 1.0, 0.5]))
    assert (cm.tp, cm.fn, cm.fp, cm.tn) == (1.0, 2.0, 1.0, 1.5)
    assert cm.sensitivity(FREEBIE) == 1 / 3 and cm.specificity(FREEBIE) == 1.5 / 2.5
    assert cm.f1(FREEBIE) == 2 / 5 and cm.ppv(FREEBIE) == 0.5 and cm.npv(FREEBIE) == 1.5 / 3.5
    assert cm.accuracy() == 2.5 / 5.5
    nothing = binary_confusion(np.zeros(3, bool), np.zeros(3, bool), np.ones(3))
    assert [nothing.sensitivity(FREEBIE), nothing.ppv(FREEBIE), nothing.f1(FREEBIE), nothing.specificity(FREEBIE)] \
        == [1.0, 1.0, 1.0, 1.0]
    assert np.isnan(nothing.sensitivity())  # the library's default: undefined


@pytest.mark.parametrize("seed", range(4))
def test_confusion_sums_are_the_references_pairwise_sums(seed):
    """The reference sums each count as np.sum(indicator * weights) over every image: the
    library's binary_confusion adds the same terms in the same (pairwise) order, so its counts
    and ISIC's six per-category metrics are the reference's bits with fractional weights too."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30_000))
    truth, prediction = rng.random(n) < 0.3, rng.random(n) < 0.4
    weights = np.round(rng.uniform(0, 2, n), 4) * (rng.random(n) < 0.9)
    cm = binary_confusion(truth, prediction, weights)
    assert cm.tp == np.sum(np.logical_and(truth, prediction) * weights)
    assert cm.fp == np.sum(np.logical_and(~truth, prediction) * weights)
    assert cm.fn == np.sum(np.logical_and(truth, ~prediction) * weights)
    assert cm.tn == np.sum(np.logical_and(~truth, ~prediction) * weights)
    assert cm.f1(FREEBIE) == (2 * cm.tp) / ((2 * cm.tp) + cm.fp + cm.fn)


def test_balanced_accuracy_with_undecided_rows_by_a_plain_loop():
    rng = np.random.default_rng(5)
    n, k = 400, 5
    labels = rng.integers(0, k, n)
    labels[:k] = np.arange(k)
    truth = np.eye(k)[labels]
    predictions = np.round(rng.random((n, k)), 1)  # many tied maxima
    weights = np.where(rng.random(n) < 0.9, rng.uniform(0.5, 1.5, n), 0.0)
    recalls = []
    for c in range(k):
        total = correct = 0.0
        for i in range(n):
            if labels[i] != c:
                continue
            total += weights[i]
            top = predictions[i].max()
            if (predictions[i] == top).sum() == 1 and predictions[i].argmax() == c:
                correct += weights[i]
        recalls.append(correct / total)
    assert (predictions == predictions.max(axis=1, keepdims=True)).sum(axis=1).max() > 1  # ties exist
    assert multiclass.balanced_multiclass_accuracy(truth, predictions, weights) == pytest.approx(np.mean(recalls),
                                                                                                abs=1e-15)


def test_balanced_accuracy_leaves_out_categories_absent_from_the_truth():
    truth = np.eye(3)[[0, 0, 1, 1]]
    predictions = np.eye(3)[[0, 1, 1, 1]]
    assert multiclass.balanced_multiclass_accuracy(truth, predictions, np.ones(4)) == (0.5 + 1.0) / 2


@pytest.mark.parametrize("seed", range(4))
def test_balanced_multiclass_accuracy_is_the_librarys_on_decided_rows(seed):
    """The reference's arithmetic (hits left to right, Kahan totals) is the library's
    balanced_accuracy_score to the rounding, where every row has a single maximum; bit for bit
    with whole-number weights."""
    rng = np.random.default_rng(seed)
    n, k = 500, 6
    truth = np.eye(k)[rng.integers(0, k, n)]
    predictions = rng.random((n, k))  # continuous: no tied maximum
    for weights in (rng.integers(0, 4, n).astype(float), np.round(rng.uniform(0, 2, n), 3)):
        ours = multiclass.balanced_multiclass_accuracy(truth, predictions, weights)
        library = balanced_accuracy_score(truth.argmax(axis=1), predictions.argmax(axis=1), weights)
        assert ours == pytest.approx(library, rel=1e-15, abs=0)
    whole = rng.integers(0, 4, n).astype(float)
    assert multiclass.balanced_multiclass_accuracy(truth, predictions, whole) == balanced_accuracy_score(
        truth.argmax(axis=1), predictions.argmax(axis=1), whole)


# ---- the CSV number reader against pandas ------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_rows_of_sample_weights_give_each_rows_value_bit_for_bit(seed):
    """recall_of_labels_rows and nan_mean_rows (the ranked values of many weightings: the point
    value is a row of weights, a bootstrap resample a row of counts times them): each row is the
    single-row function's value on that row, bit for bit (the AUC's rows:
    tests/test_weighted_roc_auc.py)."""
    rng = np.random.default_rng(seed)
    for trial in range(40):
        n = int(rng.integers(1, 150))
        weights = rng.integers(0, 3, size=(6, n)).astype(np.float64)
        if trial % 2:
            weights *= np.round(rng.uniform(0, 2, n), 3)  # fractional weights, some zero
        weights[0] = 1.0
        truth_labels, predicted = rng.integers(-1, 5, n), rng.integers(-1, 5, n)
        recall = multiclass.recall_of_labels_rows(truth_labels, predicted, weights, 5)
        means = multiclass.nan_mean_rows(recall)
        for r, row in enumerate(weights):
            single = multiclass.recall_of_labels(truth_labels, predicted, row, 5)
            np.testing.assert_array_equal(recall[r], single)
            expected = multiclass.nan_mean(single)
            assert means[r] == expected or (np.isnan(means[r]) and np.isnan(expected))


def test_numbers_are_read_as_pandas_reads_them():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    digits = lambda k: "".join(rng.choice(list("0123456789"), k))  # noqa: E731
    tokens = []
    for _ in range(3000):
        form = rng.integers(0, 8)
        tokens.append([
            lambda: "0." + digits(rng.integers(1, 25)),
            lambda: repr(float(rng.random() ** 5)),
            lambda: f"{rng.random():.19f}",
            lambda: digits(rng.integers(1, 4)) + "e-" + digits(rng.integers(1, 3)),
            lambda: " 0." + digits(rng.integers(1, 18)) + "\t",
            lambda: str(rng.choice(["1", "0", "-0", "+.5", "5.", "1e", ".", "inf", "-Infinity", "NAN", "NA", "null",
                                    "1e400", "1e-400", "0x1", "1_0", "True", " ", "1.5e+03", "4.9e-324"])),
            lambda: "0." + "0" * int(rng.integers(10, 20)) + digits(rng.integers(1, 10)),
            lambda: digits(rng.integers(16, 24)),
        ][form]())
    # One column per token: pandas infers each column's type on its own.
    text = ",".join(f"c{i}" for i in range(len(tokens))) + "\n" + ",".join(tokens) + "\n"
    frame = pd.read_csv(io.StringIO(text), header=0, index_col=False)
    # ... so each token is a column of its own here too (a token's kind can depend on the
    # column's earlier tokens: tests/test_isic_overflow.py).
    values, kinds = map(np.concatenate, zip(*(isic_csv.parse_numbers([token]) for token in tokens), strict=True))
    for i, token in enumerate(tokens):
        column = frame[f"c{i}"]
        cell = column.iloc[0]
        if column.dtype.kind in "iu":
            assert kinds[i] == isic_csv.INTEGER, token
        elif column.dtype == np.float64 and np.isnan(cell):
            assert kinds[i] == isic_csv.NA, token
        elif column.dtype == np.float64:
            assert kinds[i] in (isic_csv.FLOAT, isic_csv.INTEGER) and values[i] == cell, token
            assert np.signbit(values[i]) == np.signbit(cell), token
        else:
            assert kinds[i] == isic_csv.TEXT, token


def test_seventeen_digit_values_are_rounded_as_pandas_does_not_as_python():
    token = "0.570704999622830388"
    assert isic_csv.pandas_float(token) == 0.5707049996228303 != float(token)


# ---- the two phases, end to end ----------------------------------------------------------------


@pytest.fixture(scope="module")
def both_phases(tmp_path_factory):
    root = tmp_path_factory.mktemp("isic")
    write_synthetic(root / "file", Isic2019.categories, seed=4, images=120, phase="file")
    write_synthetic(root / "algorithm", Isic2019.categories, seed=4, images=120, phase="algorithm")
    return root


def test_algorithm_phase_scores_as_the_predictions_file(both_phases, evaluate):
    by_file = evaluate("isic2019", both_phases / "file" / "input", both_phases / "file" / "ground-truth")
    by_jobs = evaluate("isic2019", both_phases / "algorithm" / "input", both_phases / "algorithm" / "ground-truth")
    assert by_file.code == by_jobs.code == 0, by_file.stderr + by_jobs.stderr
    assert by_file.metrics == by_jobs.metrics


def test_same_bytes_with_one_or_two_workers(both_phases, evaluate):
    runs = [evaluate("isic2019", both_phases / "algorithm" / "input", both_phases / "algorithm" / "ground-truth",
                     "--workers", w) for w in (1, 2)]
    assert (runs[0].output / "metrics.json").read_bytes() == (runs[1].output / "metrics.json").read_bytes()


def copy_phase(both_phases, tmp_path, phase="algorithm"):
    shutil.copytree(both_phases / phase, tmp_path / phase)
    return tmp_path / phase / "input", tmp_path / phase / "ground-truth"


def first_output(input_dir):
    jobs = json.loads((input_dir / "predictions.json").read_text())
    job = min(jobs, key=lambda j: j["inputs"][0]["image"]["name"])
    return job["inputs"][0]["image"]["name"][:-4], input_dir / job["pk"] / "output" / f"{OUTPUT}.json"


WHERE = f"output '{OUTPUT}'"


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: [0.1] * 9, " must be a JSON object {category: confidence}, found a list."),
    (lambda d: {k: v for k, v in d.items() if k != "SCC"}, " has no confidence for SCC (the categories are MEL, NV, "
                                                           "BCC, AK, BKL, DF, VASC, SCC, UNK)."),
    (lambda d: {**d, "melanoma": 0.2}, ' has keys that are not categories: "melanoma" (the categories are MEL, NV, '
                                       'BCC, AK, BKL, DF, VASC, SCC, UNK).'),
    (lambda d: {**d, "NV": True}, ": the confidence for NV is true; it must be a finite number between 0 and 1."),
    (lambda d: {**d, "NV": "0.5"}, ': the confidence for NV is "0.5"; it must be a finite number between 0 and 1.'),
    (lambda d: {**d, "NV": None}, ": the confidence for NV is null; it must be a finite number between 0 and 1."),
    (lambda d: {**d, "BCC": -0.01}, ": the confidence for BCC is -0.01; it must be a number between 0 and 1."),
    (lambda d: {**d, "BCC": float("nan")}, ": the confidence for BCC is NaN; it must be a finite number between 0 "
                                           "and 1."),
    (lambda d: {**d, "BCC": 10**400}, ": the confidence for BCC is an integer of 401 digits; it must be a finite "
                                      "number between 0 and 1."),
])
def test_bad_algorithm_outputs_are_rejected(both_phases, evaluate, tmp_path, mutate, expected):
    input_dir, ground_truth = copy_phase(both_phases, tmp_path)
    image, path = first_output(input_dir)
    path.write_text(json.dumps(mutate(json.loads(path.read_text()))))
    run = evaluate("isic2019", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == f"Image {image}, {WHERE}{expected}"


@pytest.mark.parametrize("written, expected", [
    ("1" + "0" * 399, "is an integer of 400 digits; it must be a finite number between 0 and 1."),
    ("-" + "9" * 5000, "is an integer of 5000 digits; it must be a finite number between 0 and 1."),
    ("NaN", "is NaN; it must be a finite number between 0 and 1."),
    ("Infinity", "is Infinity; it must be a finite number between 0 and 1."),
    ("-Infinity", "is -Infinity; it must be a finite number between 0 and 1."),
    ("1e400", "is Infinity; it must be a finite number between 0 and 1."),
    ("1" + "0" * 299, "is 1000000000000000000000000000000000000...; it must be a number between 0 and 1."),
    ('{"p": 0.5}', "is an object with 1 key; it must be a finite number between 0 and 1."),
    ('[[[0.5]]]', "is a list of 1 item; it must be a finite number between 0 and 1."),
], ids=["400-digits", "5000-digits", "nan", "infinity", "-infinity", "1e400", "300-digits", "object", "list"])
def test_hostile_confidences_name_the_image_and_category(both_phases, evaluate, tmp_path, written, expected):
    """The JSON written by hand (json.dumps cannot write most of these): huge integers are never
    converted, and whatever the value, the message names the image and the category."""
    input_dir, ground_truth = copy_phase(both_phases, tmp_path)
    image, path = first_output(input_dir)
    document = json.loads(path.read_text())
    path.write_text("{" + ", ".join(f'"{k}": {written if k == "DF" else json.dumps(v)}' for k, v in document.items())
                    + "}")
    run = evaluate("isic2019", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == f"Image {image}, {WHERE}: the confidence for DF {expected}"


def test_a_category_given_twice_is_refused(both_phases, evaluate, tmp_path):
    """json keeps the last of two equal keys silently: the first confidence would be dropped."""
    input_dir, ground_truth = copy_phase(both_phases, tmp_path)
    image, path = first_output(input_dir)
    path.write_text(path.read_text().rstrip().rstrip("}") + ', "MEL": 0.99}')
    run = evaluate("isic2019", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == f'Image {image}, {WHERE}: {OUTPUT}.json gives the key "MEL" twice in one object.'


def test_whole_numbers_in_json_are_accepted(both_phases, evaluate, tmp_path):
    input_dir, ground_truth = copy_phase(both_phases, tmp_path)
    _, path = first_output(input_dir)
    document = json.loads(path.read_text())
    path.write_text(json.dumps({k: (1 if k == "MEL" else 0) for k in document}))
    assert evaluate("isic2019", input_dir, ground_truth).code == 0


def test_missing_job_is_named(both_phases, evaluate, tmp_path):
    input_dir, ground_truth = copy_phase(both_phases, tmp_path)
    jobs = json.loads((input_dir / "predictions.json").read_text())
    dropped = jobs.pop()
    (input_dir / "predictions.json").write_text(json.dumps(jobs))
    run = evaluate("isic2019", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    image = dropped["inputs"][0]["image"]["name"][:-4]
    assert run.last_error_line == ("The submission does not match the test set: no prediction for 1 image(s) of the "
                                   f"test set ({image}).")


def test_long_lists_of_images_are_cut_short_with_a_count(both_phases, evaluate, tmp_path):
    input_dir, ground_truth = copy_phase(both_phases, tmp_path, "file")
    lines = (input_dir / "predictions.csv").read_text().splitlines(keepends=True)
    kept, dropped = lines[:21], lines[21:]
    (input_dir / "predictions.csv").write_text("".join(kept))
    run = evaluate("isic2019", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    missing = sorted(line.split(",")[0] for line in dropped)
    assert run.last_error_line == (f"The CSV has no row for {len(missing)} image(s) of the test set: "
                                   f"{', '.join(missing[:10])} and {len(missing) - 10} more.")


# ---- the predictions file: only a regular file inside /input, bounded by the test set's size --


SECRET = "API_TOKEN=hunter2-XYZ"


def assert_refused(run, line):
    assert (run.code, run.wrote_metrics) == (1, False), run.stderr
    assert run.last_error_line == line


@pytest.mark.parametrize("target", ["ground truth", "secret"])
def test_predictions_csv_linking_out_of_the_input_is_refused_unread(both_phases, evaluate, tmp_path, target):
    """A link to the ground truth (or to any file outside /input) was read, and the message quoted
    its header: the truth's columns, or a secret's first line."""
    input_dir, ground_truth = copy_phase(both_phases, tmp_path, "file")
    secret = tmp_path / "secret.csv"
    secret.write_text(f"{SECRET}\nDB_PASSWORD=hunter2\n")
    (input_dir / "predictions.csv").unlink()
    if target == "ground truth":
        (input_dir / "predictions.csv").symlink_to(ground_truth / "truth.csv")
    else:
        (input_dir / "predictions.csv").symlink_to(Path("..") / ".." / "secret.csv")
        assert (input_dir / "predictions.csv").read_text().startswith(SECRET)  # the link works
    run = evaluate("isic2019", input_dir, ground_truth)
    assert_refused(run, "The predictions CSV: predictions.csv is a link that leads out of the input folder.")
    assert "hunter2" not in run.stdout + run.stderr and "score_weight" not in run.stdout + run.stderr


def test_the_only_csv_of_a_zip_linking_out_is_refused_unread(both_phases, evaluate, tmp_path):
    input_dir, ground_truth = copy_phase(both_phases, tmp_path, "file")
    (input_dir / "predictions.csv").unlink()
    (input_dir / "results").mkdir()
    (input_dir / "results" / "mine.csv").symlink_to(ground_truth / "truth.csv")
    run = evaluate("isic2019", input_dir, ground_truth)
    assert_refused(run, "Submission file results/mine.csv: results/mine.csv is a link that leads out of the input "
                        "folder.")
    assert "score_weight" not in run.stdout + run.stderr


def test_a_named_pipe_as_predictions_csv_is_refused_without_hanging(both_phases, evaluate, tmp_path):
    input_dir, ground_truth = copy_phase(both_phases, tmp_path, "file")
    pipe = input_dir / "predictions.csv"
    pipe.unlink()
    os.mkfifo(pipe)
    done = threading.Event()

    def unblock():  # an evaluation that opened the pipe would wait forever: end it, so the test fails instead
        while not done.wait(0.05):
            try:
                os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # nobody reading it: all is well
                pass

    helper = threading.Thread(target=unblock, daemon=True)
    helper.start()
    try:
        run = evaluate("isic2019", input_dir, ground_truth)
    finally:
        done.set()
        helper.join()
    assert_refused(run, "The predictions CSV: predictions.csv is not a regular file.")


def test_a_folder_named_predictions_csv_is_refused_by_name(both_phases, evaluate, tmp_path):
    """Even holding a valid CSV, which was scored as "the only CSV of the submission"."""
    input_dir, ground_truth = copy_phase(both_phases, tmp_path, "file")
    (input_dir / "predictions.csv").rename(tmp_path / "kept.csv")
    (input_dir / "predictions.csv").mkdir()
    (tmp_path / "kept.csv").rename(input_dir / "predictions.csv" / "predictions.csv")
    run = evaluate("isic2019", input_dir, ground_truth)
    assert_refused(run, "The predictions CSV: predictions.csv is a folder, not a file.")


def test_millions_of_short_lines_are_refused_before_parsing(both_phases, evaluate, tmp_path):
    """Within the size bound, 500,000 one-letter lines took seconds and hundreds of MB to split
    into rows (26 MB of them, allowed for 25,000 images, took 3.7 GB and 77 s)."""
    input_dir, ground_truth = copy_phase(both_phases, tmp_path, "file")
    header = (input_dir / "predictions.csv").read_text().splitlines(keepends=True)[0]
    (input_dir / "predictions.csv").write_text(header + "a\n" * 500_000)
    run = evaluate("isic2019", input_dir, ground_truth)
    assert_refused(run, "The CSV has 500001 lines, more than the 440 allowed for the 120 images of the test set (a "
                        "header and one line per image).")


@pytest.mark.parametrize("content, line", [
    ("", "The CSV is empty; it must have a header line and one line per image."),
    ("image,MEL,NV,BCC,AK,BKL,DF,VASC,SCC,UNK\n", "The CSV has a header but no image rows."),
    ("image,MEL,NV,BCC,AK,BKL,DF,VASC,SCC,UNK\r\n  \n", "The CSV has a header but no image rows."),
    ("image,MEL,NV,BCC,AK,BKL,DF,VASC,SCC,UNK", "The CSV has no line breaks in its first 2000 characters: it must "
                                                "have a header line and one line per image."),
], ids=["empty", "header-only", "header-and-blank-line", "one-line"])
def test_files_without_rows_say_so(both_phases, evaluate, tmp_path, content, line):
    """The reference refuses all four at its first check ("no newlines"): the same refusal, said
    plainly when the file is empty or only a header."""
    input_dir, ground_truth = copy_phase(both_phases, tmp_path, "file")
    (input_dir / "predictions.csv").write_bytes(content.encode())
    assert_refused(evaluate("isic2019", input_dir, ground_truth), line)


DATA_LIMIT = 3 << 29  # 1.5 GiB


@pytest.mark.slow
def test_ten_million_rows_are_refused_unread_under_a_memory_limit(tmp_path):
    """430 MB of rows for a test set of 150 images: read whole, it took 6 GB and died of a
    MemoryError (exit 4). The size is checked against the test set before reading."""
    input_dir = tmp_path / "input"
    input_dir.mkdir()
    path = input_dir / "predictions.csv"
    row = b"ISIC_0000000,0.1,0.2,0.3,0.05,0.15,0.1,0.1\n"
    block = row * 100_000
    with open(path, "wb") as handle:
        handle.write(b"image,MEL,NV,BCC,AKIEC,BKL,DF,VASC\n")
        for _ in range(100):
            handle.write(block)
    size = path.stat().st_size
    try:
        result = run_command_line("isic2018", input_dir, ROOT / "ground-truth" / "isic2018", tmp_path / "output",
                                  "--workers", 1, memory_limit=DATA_LIMIT, timeout=600)
    finally:
        path.unlink()
    bound = bytes_for_rows(150 + SPARE_ROWS)
    assert result.code == 1, result.stderr[-3000:]
    assert not (tmp_path / "output" / "metrics.json").exists()
    assert result.stderr.strip().splitlines()[-1] == (f"The predictions CSV: predictions.csv has {size_text(size)}, "
                                                      f"more than the {size_text(bound)} allowed.")


@pytest.mark.slow
def test_a_full_precision_submission_of_25000_images_passes_the_bounds(evaluate, tmp_path):
    """The bounds must never refuse a real submission: 25,000 images, every confidence of the 9
    categories written with 19 digits, ids with .jpg, CRLF line ends, a blank line after each row."""
    write_synthetic(tmp_path, Isic2019.categories, seed=9, images=25_000, phase="file")
    ids = [line.split(",")[0] for line in (tmp_path / "ground-truth" / "truth.csv").read_text().splitlines()[1:]]
    values = np.random.default_rng(9).random((len(ids), len(Isic2019.categories)))
    lines = [",".join(["image", *Isic2019.categories])]
    lines += [",".join([f"{image}.jpg", *(f"{v:.19f}" for v in row)]) + "\r\n"
              for image, row in zip(ids, values, strict=True)]
    (tmp_path / "input" / "predictions.csv").write_text("\r\n".join(lines) + "\r\n", newline="")
    size = (tmp_path / "input" / "predictions.csv").stat().st_size
    assert size > 5_000_000
    run = evaluate("isic2019", tmp_path / "input", tmp_path / "ground-truth")
    assert run.code == 0, run.stderr
    assert run.metrics["counts"]["images"] == 25_000


def test_ground_truth_is_read_only_inside_its_folder(both_phases, evaluate, tmp_path):
    """The truth CSV comes through the reading layer too: a link out of the ground-truth folder is
    the organizer's problem (exit 3), named without reading it."""
    input_dir, ground_truth = copy_phase(both_phases, tmp_path, "file")
    (ground_truth / "truth.csv").rename(tmp_path / "elsewhere.csv")
    (ground_truth / "truth.csv").symlink_to(tmp_path / "elsewhere.csv")
    run = evaluate("isic2019", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert run.last_error_line == ("The evaluation could not run, through no fault of the submission: Ground truth: "
                                   "truth.csv is a link that leads out of the ground-truth folder. (please tell the "
                                   "challenge organizers).")


@pytest.mark.parametrize("metric", ["auc", "ap", "dice"])
def test_target_metric_selects_overall(both_phases, evaluate, tmp_path, metric):
    input_dir, ground_truth = copy_phase(both_phases, tmp_path, "file")
    (ground_truth / "config.json").write_text(json.dumps({"target_metric": metric}))
    metrics = evaluate("isic2019", input_dir, ground_truth).metrics
    assert metrics["overall"] == metrics["macro_average"][metric]
    assert metrics["settings"]["target_metric"] == metric


@pytest.mark.parametrize("config, truth_edit, expected", [
    ({"malignant_categories": ["MEL", "XYZ"]}, None, "Setting 'malignant_categories' names XYZ, not a category"),
    ({"target_metric": "f1"}, None, "setting 'target_metric' is 'f1'; it must be one of"),
    ({}, lambda t: t.replace(",1.0,", ",0.7,", 1), "the ground truth must be 0 or 1"),
    ({}, lambda t: t.replace("score_weight", "score_weight_x"), "duplicate"),
])
def test_ground_truth_and_settings_errors_are_the_organizers(both_phases, evaluate, tmp_path, config, truth_edit,
                                                             expected):
    input_dir, ground_truth = copy_phase(both_phases, tmp_path, "file")
    (ground_truth / "config.json").write_text(json.dumps(config))
    if truth_edit is not None:
        path = ground_truth / "truth.csv"
        text = truth_edit(path.read_text())
        if expected == "duplicate":
            text = text.replace("score_weight_x", "MEL")
            expected = "duplicate columns: MEL"
        path.write_text(text)
    run = evaluate("isic2019", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert run.last_error_line.startswith("The evaluation could not run, through no fault of the submission")
    assert expected in run.last_error_line


def test_roc_curves_are_compact_and_span_the_square(both_phases, evaluate):
    metrics = evaluate("isic2019", both_phases / "file" / "input", both_phases / "file" / "ground-truth").metrics
    for curve in metrics["roc_curves"].values():
        assert len(curve["fpr"]) == len(curve["tpr"]) == len(curve["threshold"]) <= 120
        assert (curve["fpr"][0], curve["tpr"][0], curve["fpr"][-1], curve["tpr"][-1]) == (0, 0, 1, 1)
        assert curve["threshold"][0] == 1.0 and np.all(np.diff(curve["fpr"]) >= 0)


def recursive_simplification(x, y, epsilon):
    """Ramer-Douglas-Peucker as usually written: one segment at a time, recursively, in plain floats."""
    keep = [False] * len(x)
    if len(x):
        keep[0] = keep[-1] = True

    def split(a, b):
        if b - a < 2:
            return
        dx, dy = x[b] - x[a], y[b] - y[a]
        length = float(np.hypot(dx, dy))
        farthest, at = -1.0, None
        for i in range(a + 1, b):
            px, py = x[i] - x[a], y[i] - y[a]
            distance = abs(dy * px - dx * py) / length if length > 0 else float(np.hypot(px, py))
            if distance > farthest:
                farthest, at = distance, i
        if farthest > epsilon:
            keep[at] = True
            split(a, at)
            split(at, b)

    split(0, len(x) - 1)
    return np.array(keep, dtype=bool)


@pytest.mark.parametrize("seed", range(3))
def test_roc_simplification_keeps_the_points_of_the_recursive_algorithm(seed):
    from evaluation.challenges.isic.charts import simplify_curve

    rng = np.random.default_rng(seed)
    for trial in range(60):
        n = int(rng.integers(0, 300))
        x, y = np.sort(rng.random(n)), np.sort(rng.random(n))
        if trial % 3 == 0:  # repeated points and equal distances: the first farthest point is kept
            x, y = np.round(x, 1), np.round(y, 1)
        epsilon = (0.001, 0.0, 0.05)[trial % 3]
        assert np.array_equal(simplify_curve(x, y, epsilon), recursive_simplification(x, y, epsilon))


def test_image_ids_of_a_column_are_those_of_each_field():
    rng = np.random.default_rng(4)
    pieces = ["ISIC_1", ".jpg", ".JPG", ".jPg", "jpg", ".", "x.jpg.jpg", " ", "\t", "NA", "null", "é", "\u2028",
              "\x0b", "\x85", ".jpg ", "", "\n"]
    for _ in range(2000):
        fields = ["".join(rng.choice(pieces, int(rng.integers(0, 4)))) for _ in range(int(rng.integers(1, 6)))]
        assert isic_csv.image_ids(fields) == [isic_csv.image_id(field) for field in fields], fields

# ---- the bundled examples: regenerated to the same bytes -----------------------------------------


@pytest.mark.parametrize("challenge", ["isic2018", "isic2019"])
def test_examples_regenerate_the_bundled_files(challenge, tmp_path):
    """evaluation/challenges/isic/examples.py writes the bundled ground truth, submission and invalid
    submissions byte for byte (the generators moved out of the scoring module unchanged)."""
    from evaluation.challenges.isic.examples import EXAMPLES
    from tests.bundled import skip_unless_bundled

    skip_unless_bundled(challenge)
    example = EXAMPLES[challenge]
    example.synthesize(tmp_path, seed=0)

    def files(folder):
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    assert files(tmp_path / "ground-truth") == files(ROOT / "ground-truth" / challenge)
    assert files(tmp_path / "input") == files(ROOT / "test" / challenge / "input")
    invalid = example.invalid_examples(tmp_path / "input")
    assert sorted(invalid) == sorted(p.name for p in (ROOT / "test" / challenge / "invalid").iterdir())
    for name, changes in invalid.items():
        for relative, content in changes.items():
            assert (ROOT / "test" / challenge / "invalid" / name / "input" / relative).read_bytes() == content


# ---- the bundled examples, recomputed independently ---------------------------------------------


def read_example(challenge):
    """Truth, weights and predictions of a bundled example, read with the csv/json modules."""
    import csv
    rows = list(csv.DictReader((ROOT / "ground-truth" / challenge / "truth.csv").open()))
    categories = [c for c in rows[0] if c not in ("image", "score_weight", "validation_weight")]
    ids = [r["image"] for r in rows]
    truth = np.array([[float(r[c]) for c in categories] for r in rows])
    weights = {w: np.array([float(r[w]) for r in rows]) for w in ("score_weight", "validation_weight")}
    if "ISIC_0035068" in ids and challenge == "isic2018":
        for w in weights.values():
            w[ids.index("ISIC_0035068")] = 0.0
    input_dir = ROOT / "test" / challenge / "input"
    if (input_dir / "predictions.csv").exists():
        given = {r["image"]: [float(r[c]) for c in categories]
                 for r in csv.DictReader((input_dir / "predictions.csv").open())}
    else:
        given = {}
        for job in json.loads((input_dir / "predictions.json").read_text()):
            document = json.loads((input_dir / job["pk"] / "output" / f"{OUTPUT}.json").read_text())
            given[job["inputs"][0]["image"]["name"][:-4]] = [document[c] for c in categories]
    return categories, truth, weights, np.array([given[i] for i in ids])


@pytest.mark.parametrize("challenge, malignant", [("isic2018", ["MEL", "BCC", "AKIEC"]),
                                                  ("isic2019", ["MEL", "BCC", "SCC", "AK"])])
def test_expected_metrics_match_an_independent_computation(challenge, malignant):
    expected = json.loads((ROOT / "test" / challenge / "expected_metrics.json").read_text())
    categories, truth, weights, predictions = read_example(challenge)
    w = weights["score_weight"]
    aucs = []
    for c, category in enumerate(categories):
        positive = truth[:, c] == 1
        has_both = (w[positive] > 0).any() and (w[~positive] > 0).any()
        if not has_both:
            assert expected["per_category"]["auc"][category] is None
            continue
        value = roc_auc_score(positive, predictions[:, c], sample_weight=w)
        aucs.append(value)
        assert expected["per_category"]["auc"][category] == pytest.approx(value, abs=1e-12)
        assert expected["per_category"]["ap"][category] == pytest.approx(
            average_precision_score(positive, predictions[:, c], sample_weight=w), abs=1e-12)
        assert expected["per_category"]["auc_sens_80"][category] == pytest.approx(
            independent_auc80(positive, predictions[:, c], w), abs=1e-12)
        decided = predictions[:, c] > 0.5
        tp, fn = w[positive & decided].sum(), w[positive & ~decided].sum()
        assert expected["per_category"]["sensitivity"][category] == pytest.approx(tp / (tp + fn), abs=1e-12)
    assert expected["aggregate"]["auc"] == pytest.approx(np.mean(aucs), abs=1e-12)
    # Balanced accuracy: mean recall, a row with a tied maximum counting as wrong.
    labels = truth.argmax(axis=1)
    tied = (predictions == predictions.max(axis=1, keepdims=True)).sum(axis=1) > 1
    hit = (predictions.argmax(axis=1) == labels) & ~tied
    recalls = [w[(labels == c) & hit].sum() / w[labels == c].sum() for c in range(len(categories))
               if w[labels == c].sum() > 0]
    assert expected["aggregate"]["balanced_accuracy"] == pytest.approx(np.mean(recalls), abs=1e-12)
    assert expected["overall"] == expected["aggregate"]["balanced_accuracy"]
    malignant_truth = np.isin(labels, [categories.index(m) for m in malignant])
    score = predictions[:, [categories.index(m) for m in malignant]].sum(axis=1)
    assert expected["aggregate"]["malignant_vs_benign_auc"] == pytest.approx(
        roc_auc_score(malignant_truth, score, sample_weight=w), abs=1e-12)
    assert expected["counts"]["undecided_predictions"] == int((tied & (w > 0)).sum())
