"""RARE26 end to end: the official procedure recomputed independently with scikit-learn on the
same draws, the 13 official keys, reproducibility, and every bad input of rare26.md."""

import json
import shutil
from collections import Counter

import numpy as np
import pytest

from benchmarks.rare26_official import load_arrays, official_image_level, official_metrics, official_patient_level
from evaluation.challenges.rare26.examples import synthesize

OFFICIAL_KEYS = [
    "Score",
    "PPV@90RECALL", "PPV@90RECALL 95% CI Lower Bound", "PPV@90RECALL 95% CI Upper Bound",
    "AUROC", "AUROC 95% CI Lower Bound", "AUROC 95% CI Upper Bound",
    "AUPRC", "AUPRC 95% CI Lower Bound", "AUPRC 95% CI Upper Bound",
    "AUROC Full Dataset", "AUPRC Full Dataset", "PPV@90RECALL Full Dataset",
]
OUTPUT = "stacked-neoplastic-lesion-likelihoods"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("rare26")
    synthesize(root, seed=7, cases=6)
    return root


def copy_dataset(dataset, tmp_path):
    shutil.copytree(dataset, tmp_path / "data")
    return tmp_path / "data" / "input", tmp_path / "data" / "ground-truth"


def summary(values):
    return np.median(values), np.percentile(values, 2.5), np.percentile(values, 97.5)


def assert_matches_reference(metrics, boot, y, s):
    auroc, auprc, ppv = official_metrics(y, s)
    assert metrics["AUROC Full Dataset"] == pytest.approx(auroc, abs=1e-12)
    assert metrics["AUPRC Full Dataset"] == pytest.approx(auprc, abs=1e-12)
    assert metrics["PPV@90RECALL Full Dataset"] == pytest.approx(ppv, abs=1e-12)
    for column, name in ((2, "PPV@90RECALL"), (0, "AUROC"), (1, "AUPRC")):
        median, lower, upper = summary(boot[:, column])
        assert metrics[name] == pytest.approx(median, abs=1e-12)
        assert metrics[f"{name} 95% CI Lower Bound"] == pytest.approx(lower, abs=1e-12)
        assert metrics[f"{name} 95% CI Upper Bound"] == pytest.approx(upper, abs=1e-12)
    assert metrics["Score"] == metrics["PPV@90RECALL"]


def test_image_level_equals_official_loop(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    (ground_truth / "config.json").write_text(json.dumps({"repetitions": 400}))
    run = evaluate("rare26", input_dir, ground_truth, "--seed", 123)
    assert run.code == 0, run.stderr
    y, s, _ = load_arrays(input_dir, ground_truth)
    assert_matches_reference(run.metrics, official_image_level(y, s, 123, repetitions=400), y, s)
    assert run.metrics["counts"]["neoplasia_images_per_repetition"] == max(1, int((y == 0).sum() / 100))


def test_patient_level_equals_rare25_pack_loop(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    (ground_truth / "config.json").write_text(json.dumps({"sampling": "patient", "repetitions": 200}))
    run = evaluate("rare26", input_dir, ground_truth, "--seed", 5)
    assert run.code == 0, run.stderr
    y, s, patients = load_arrays(input_dir, ground_truth)
    assert_matches_reference(run.metrics, official_patient_level(y, s, patients, 5, repetitions=200), y, s)
    assert run.metrics["settings"]["sampling"] == "patient"


def test_official_keys_at_top_level_all_finite_numbers(dataset, evaluate):
    metrics = evaluate("rare26", dataset / "input", dataset / "ground-truth").metrics
    assert list(metrics)[:13] == OFFICIAL_KEYS
    # The declaration: the leaderboard's 13 columns are the official keys, in the official order.
    from evaluation.challenges.rare26 import Rare26

    assert list(Rare26.ranked_paths) == OFFICIAL_KEYS
    for key in OFFICIAL_KEYS:
        assert isinstance(metrics[key], float) and np.isfinite(metrics[key]), key
    assert metrics["settings"]["seed"] == 2026 and metrics["settings"]["repetitions"] == 1000
    assert metrics["evaluation"]["challenge"] == "rare26"


def test_same_seed_same_bytes_other_seed_other_numbers(dataset, evaluate):
    runs = [evaluate("rare26", dataset / "input", dataset / "ground-truth", "--seed", seed, "--workers", workers)
            for seed, workers in ((9, 1), (9, 2), (10, 1))]
    texts = [(run.output / "metrics.json").read_bytes() for run in runs]
    assert texts[0] == texts[1]
    assert runs[0].metrics["AUROC 95% CI Lower Bound"] != runs[2].metrics["AUROC 95% CI Lower Bound"]


def test_scores_outside_unit_interval_and_monotone_transforms_change_nothing(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    before = evaluate("rare26", input_dir, ground_truth).metrics
    for path in input_dir.glob(f"*/output/{OUTPUT}.json"):
        values = json.loads(path.read_text())
        path.write_text(json.dumps([10 * v - 4 for v in values]))  # strictly increasing, outside [0, 1]
    after = evaluate("rare26", input_dir, ground_truth).metrics
    for key in OFFICIAL_KEYS:
        assert after[key] == pytest.approx(before[key], abs=1e-12)


# --- bad input: exit 1, no metrics.json, one sentence naming the stack -----------------------


def first_output(input_dir):
    jobs = json.loads((input_dir / "predictions.json").read_text())
    job = min(jobs, key=lambda j: j["inputs"][0]["image"]["name"])
    stack = job["inputs"][0]["image"]["name"].rsplit(".", 1)[0]
    return stack, input_dir / job["pk"] / "output" / f"{OUTPUT}.json"


@pytest.mark.parametrize("mutate, expected", [
    (lambda v: {"scores": v}, "the output '" + OUTPUT + "' must be a JSON array of {n} numbers (one likelihood per "
     "frame), found an object"),
    (lambda v: v[:-1], "expected {n} likelihoods (one per frame), found {m}"),
    (lambda v: v + [0.5], "expected {n} likelihoods (one per frame), found {p}"),
    (lambda v: v[:3] + [True] + v[4:], "the likelihood at index 3 is true; every likelihood must be a finite number"),
    (lambda v: v[:3] + ["0.5"] + v[4:], 'the likelihood at index 3 is "0.5"; every likelihood must be a finite number'),
    (lambda v: v[:3] + [None] + v[4:], "the likelihood at index 3 is null; every likelihood must be a finite number"),
    (lambda v: v[:3] + [[0.5]] + v[4:], "the likelihood at index 3 is a list of 1 item; every likelihood must be a "
     "finite number"),
    (lambda v: v[:3] + [{"p": 0.5}] + v[4:], "the likelihood at index 3 is an object with 1 key; every likelihood must "
     "be a finite number"),
    (lambda v: v[:3] + ["x" * 100] + v[4:], 'the likelihood at index 3 is "' + "x" * 36 + '...; every likelihood must '
     'be a finite number'),
])
def test_bad_likelihoods_are_rejected(dataset, evaluate, tmp_path, mutate, expected):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    stack, path = first_output(input_dir)
    values = json.loads(path.read_text())
    path.write_text(json.dumps(mutate(values)))
    run = evaluate("rare26", input_dir, ground_truth)
    n = len(values)
    assert run.code == 1
    assert not run.wrote_metrics
    assert run.last_error_line == f"Stack {stack}: " + expected.format(n=n, m=n - 1, p=n + 1) + "."


@pytest.mark.parametrize("token, shown", [("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"),
                                          ("1e999", "Infinity")])
def test_non_finite_likelihoods_are_rejected(dataset, evaluate, tmp_path, token, shown):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    stack, path = first_output(input_dir)
    values = json.loads(path.read_text())
    path.write_text("[" + ", ".join(map(str, values[:7])) + f", {token}, " + ", ".join(map(str, values[8:])) + "]")
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == (f"Stack {stack}: the likelihood at index 7 is {shown}; "
                                   f"every likelihood must be a finite number.")


def test_output_not_json_or_missing(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    stack, path = first_output(input_dir)
    path.write_text("[0.1, 0.2,")
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line.startswith(f"Stack {stack}, output '{OUTPUT}': {OUTPUT}.json is not valid JSON (")
    path.unlink()
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == f"Stack {stack}, output '{OUTPUT}': the file {OUTPUT}.json is missing."


def edit_jobs(input_dir, change):
    path = input_dir / "predictions.json"
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def test_missing_extra_and_duplicate_stacks_are_named(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    jobs = json.loads((input_dir / "predictions.json").read_text())
    names = sorted(job["inputs"][0]["image"]["name"].rsplit(".", 1)[0] for job in jobs)

    edit_jobs(input_dir, lambda jobs: sorted(jobs, key=lambda j: j["inputs"][0]["image"]["name"])[1:])
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == (f"The submission does not match the test set: no prediction for 1 stack(s) "
                                   f"of the test set ({names[0]}).")

    def rename(jobs):
        jobs = json.loads(json.dumps(jobs))
        jobs[0]["inputs"][0]["image"]["name"] = "unknown_stack.tiff"
        return jobs

    def duplicate(jobs):  # a second job for a stack: the phase's archive holds it twice (exit 3)
        jobs = json.loads(json.dumps(jobs))
        jobs.append(json.loads(json.dumps(jobs[1])))
        jobs[-1]["pk"] = "00000000-0000-4000-8000-000000000000"  # a second job (a repeated pk is the platform's error)
        return jobs

    shutil.rmtree(tmp_path / "data")
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    edit_jobs(input_dir, rename)
    missing = jobs[0]["inputs"][0]["image"]["name"].rsplit(".", 1)[0]
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == (f"The submission does not match the test set: 1 stack(s) not in the test set "
                                   f"(unknown_stack); no prediction for 1 stack(s) of the test set ({missing}).")

    shutil.rmtree(tmp_path / "data")
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    edit_jobs(input_dir, duplicate)
    duplicated = jobs[1]["inputs"][0]["image"]["name"].rsplit(".", 1)[0]
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert (f"predictions.json lists more than one job for stack {duplicated} ({duplicated}: jobs {jobs[1]['pk']}, "
            f"00000000-0000-4000-8000-000000000000): the platform runs one job per item of the phase's archive, so "
            f"the archive holds it more than once." in run.last_error_line)


# --- the ground truth is the organizer's: exit 3, not the participant's fault ----------------


@pytest.mark.parametrize("change, expected", [
    (lambda gt: (gt / "extra.json").write_text("{}"), "must hold exactly one .json file"),
    (lambda gt: next(gt.glob("*.json")).write_text("[1, 2]"), "must be a non-empty object mapping stack names"),
    (lambda gt: next(gt.glob("*.json")).write_text(json.dumps({"a.tiff": [{"index": 0, "class": "ndbe"}]})),
     "must hold both NDBE and neoplasia frames"),
    (lambda gt: next(gt.glob("*.json")).write_text(json.dumps({"a.tiff": [{"index": 0, "class": "neo"}],
                                                                "a.mha": [{"index": 0, "class": "ndbe"}]})),
     "two stacks are named a once extensions are removed"),
    (lambda gt: (gt / "config.json").write_text(json.dumps({"sampling": "frames"})),
     "setting 'sampling' is 'frames'; it must be one of 'image', 'patient'"),
    (lambda gt: (gt / "config.json").write_text(json.dumps({"repetition": 10})), "unknown setting(s) 'repetition'"),
])
def test_ground_truth_problems_are_not_the_participants_fault(dataset, evaluate, tmp_path, change, expected):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    change(ground_truth)
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert run.last_error_line.startswith("The evaluation could not run, through no fault of the submission: ")
    assert expected in run.last_error_line


def test_stack_names_match_with_or_without_extension_and_through_a_mapping(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    reference = evaluate("rare26", input_dir, ground_truth).metrics

    def rename(jobs):
        for n, job in enumerate(jobs):
            job["inputs"][0]["image"]["name"] = f"upload_{n}.mha"
        return jobs

    original = {f"upload_{n}.mha": job["inputs"][0]["image"]["name"].rsplit(".", 1)[0]
                for n, job in enumerate(json.loads((input_dir / "predictions.json").read_text()))}
    edit_jobs(input_dir, rename)
    assert evaluate("rare26", input_dir, ground_truth).code == 1  # unknown names without a mapping
    (ground_truth / "case-mapping.json").write_text(json.dumps(original))
    mapped = evaluate("rare26", input_dir, ground_truth).metrics
    assert {k: mapped[k] for k in OFFICIAL_KEYS} == {k: reference[k] for k in OFFICIAL_KEYS}


def test_legacy_predictions_json_scores_the_same(dataset, evaluate, tmp_path):
    from evaluation.platform import synthetic

    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    reference = evaluate("rare26", input_dir, ground_truth).metrics
    edit_jobs(input_dir, synthetic.legacy_shape)
    legacy = evaluate("rare26", input_dir, ground_truth).metrics
    assert legacy == reference


# --- a likelihood no float can hold: a sentence naming it, never a crash (exit 4) ------------


@pytest.mark.parametrize("digits", [400, 5000])
def test_huge_integer_likelihood_is_named(dataset, evaluate, tmp_path, digits):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    stack, path = first_output(input_dir)
    values = json.loads(path.read_text())
    path.write_text("[" + ", ".join(map(str, values[:4])) + ", " + "9" * digits + ", "
                    + ", ".join(map(str, values[5:])) + "]")
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == (f"Stack {stack}: the likelihood at index 4 is an integer of {digits} digits; "
                                   f"every likelihood must be a finite number.")


def test_huge_integer_alone_instead_of_a_list(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    stack, path = first_output(input_dir)
    n = len(json.loads(path.read_text()))
    path.write_text("1" * 5000)
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (1, False)
    assert run.last_error_line == (f"Stack {stack}: the output '{OUTPUT}' must be a JSON array of {n} numbers "
                                   f"(one likelihood per frame), found a number.")


# --- the ground truth: frames placed by their index, classes compared loosely ----------------

GROUND_TRUTH_FILE = "test_metadata.json"
SETUP = "The evaluation could not run, through no fault of the submission: "
TELL = " (please tell the challenge organizers)."


def edit_metadata(ground_truth, change):
    path = ground_truth / GROUND_TRUTH_FILE
    metadata = json.loads(path.read_text())
    change(metadata)
    path.write_text(json.dumps(metadata, indent=1))


def test_frames_are_placed_by_their_index_not_the_list_order(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    reference = evaluate("rare26", input_dir, ground_truth)
    rng = np.random.default_rng(0)

    def shuffle(metadata):
        for name, frames in metadata.items():
            metadata[name] = [frames[i] for i in rng.permutation(len(frames))]

    edit_metadata(ground_truth, shuffle)
    shuffled = evaluate("rare26", input_dir, ground_truth)
    assert shuffled.code == 0, shuffled.stderr
    assert (shuffled.output / "metrics.json").read_bytes() == (reference.output / "metrics.json").read_bytes()


def test_patients_are_placed_by_index_too(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    (ground_truth / "config.json").write_text(json.dumps({"sampling": "patient", "repetitions": 50}))
    reference = evaluate("rare26", input_dir, ground_truth)
    edit_metadata(ground_truth, lambda metadata: [frames.reverse() for frames in metadata.values()])
    reversed_run = evaluate("rare26", input_dir, ground_truth)
    assert reversed_run.code == 0, reversed_run.stderr
    assert (reversed_run.output / "metrics.json").read_bytes() == (reference.output / "metrics.json").read_bytes()


FIRST_STACK = "rare26_stack_0000.tiff"


def set_entry(key, value):
    """Entry 7 of the first stack gets `key` = value (or loses it when value is ...)."""
    def change(metadata):
        if value is ...:
            del metadata[FIRST_STACK][7][key]
        else:
            metadata[FIRST_STACK][7][key] = value
    return change


@pytest.mark.parametrize("key, value, expected", [
    ("index", 3, "entry 7 has index 3, as entry 3 does; each index from 0 to {last} must appear once"),
    ("index", ..., "entry 7 has no index (its position, 0 to {last}, in the stack's likelihoods)"),
    ("index", "{n}", "entry 7 has index {n}; it must be a whole number from 0 to {last} (the stack has {n} frames)"),
    ("index", -1, "entry 7 has index -1; it must be a whole number from 0 to {last} (the stack has {n} frames)"),
    ("index", True, "entry 7 has index true; it must be a whole number from 0 to {last} (the stack has {n} frames)"),
    ("index", "7", 'entry 7 has index "7"; it must be a whole number from 0 to {last} (the stack has {n} frames)'),
    ("index", 7.0, "entry 7 has index 7.0; it must be a whole number from 0 to {last} (the stack has {n} frames)"),
    ("index", None, "entry 7 has index null; it must be a whole number from 0 to {last} (the stack has {n} frames)"),
    ("class", ..., "entry 7 has no class"),
    ("class", 5, "entry 7 has a class that is a number; a class must be non-empty text"),
    ("class", None, "entry 7 has a class that is null; a class must be non-empty text"),
    ("class", "", "entry 7 has a class that is blank text; a class must be non-empty text"),
    ("class", " \t", "entry 7 has a class that is blank text; a class must be non-empty text"),
    ("class", ["ndbe"], "entry 7 has a class that is a list; a class must be non-empty text"),
])
def test_bad_frames_are_the_organizers_error(dataset, evaluate, tmp_path, key, value, expected):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    n = len(json.loads((ground_truth / GROUND_TRUTH_FILE).read_text())[FIRST_STACK])
    if value == "{n}":
        value = n  # one past the last index
    edit_metadata(ground_truth, set_entry(key, value))
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert run.last_error_line == (f"{SETUP}Ground truth {GROUND_TRUTH_FILE}, stack {FIRST_STACK}, "
                                   + expected.format(n=n, last=n - 1) + "." + TELL)


def test_huge_integer_index_is_the_organizers_error(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    n = len(json.loads((ground_truth / GROUND_TRUTH_FILE).read_text())[FIRST_STACK])
    edit_metadata(ground_truth, set_entry("index", "HUGE"))
    path = ground_truth / GROUND_TRUTH_FILE
    path.write_text(path.read_text().replace('"HUGE"', "9" * 400))
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert run.last_error_line == (f"{SETUP}Ground truth {GROUND_TRUTH_FILE}, stack {FIRST_STACK}, entry 7 has index "
                                   f"an integer of 400 digits; it must be a whole number from 0 to {n - 1} (the stack "
                                   f"has {n} frames)." + TELL)


def test_patient_sampling_needs_patient_ids(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    edit_metadata(ground_truth, set_entry("patient_id", True))
    assert evaluate("rare26", input_dir, ground_truth).code == 0  # unused by the 'image' sampling
    (ground_truth / "config.json").write_text(json.dumps({"sampling": "patient"}))
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert run.last_error_line == (f"{SETUP}Ground truth {GROUND_TRUTH_FILE}, stack {FIRST_STACK}, entry 7 has no "
                                   f"patient_id, which the 'patient' sampling needs." + TELL)


@pytest.mark.parametrize("spelling", ["NDBE", " ndbe ", "Ndbe\n"])
def test_negative_class_ignores_case_and_surrounding_blanks(dataset, evaluate, tmp_path, spelling):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    reference = evaluate("rare26", input_dir, ground_truth)

    def respell(metadata):  # every other NDBE frame: both spellings in one ground truth
        frames = [frame for stack in metadata.values() for frame in stack if frame["class"] == "ndbe"]
        for frame in frames[::2]:
            frame["class"] = spelling
        return len(frames) - len(frames[::2]), len(frames[::2])

    counts = {}
    edit_metadata(ground_truth,
                  lambda metadata: counts.update(zip(("kept", "respelled"), respell(metadata), strict=True)))
    run = evaluate("rare26", input_dir, ground_truth)
    assert run.code == 0, run.stderr
    assert (run.output / "metrics.json").read_bytes() == (reference.output / "metrics.json").read_bytes()
    # the organizer's log counts the frames of each class as written (lower-cased)
    metrics = reference.metrics["counts"]
    classes = Counter({"ndbe": counts["kept"]}) + Counter({spelling.lower(): counts["respelled"]})
    shown_classes = ", ".join(f"{json.dumps(name)} {count} (negative)" for name, count in sorted(classes.items()))
    neo = f'"neo" {metrics["neoplasia_images"]}'
    expected = (f"Ground truth: {metrics['images']} frames in {metrics['stacks']} stacks; frames per class: "
                + (f"{shown_classes}, {neo}." if spelling.lower() < "neo" else f"{neo}, {shown_classes}."))
    assert expected in run.stdout.splitlines()


def test_any_other_class_is_neoplasia(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    reference = evaluate("rare26", input_dir, ground_truth)

    def rename(metadata):
        for stack in metadata.values():
            for n, frame in enumerate(stack):
                if frame["class"] == "neo":
                    frame["class"] = ("HGD", "early cancer", "LGD")[n % 3]

    edit_metadata(ground_truth, rename)
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.output / "metrics.json").read_bytes() == (reference.output / "metrics.json").read_bytes()


def test_ground_truth_is_read_through_the_reading_layer(dataset, evaluate, tmp_path):
    input_dir, ground_truth = copy_dataset(dataset, tmp_path)
    reference = evaluate("rare26", input_dir, ground_truth)
    path = ground_truth / GROUND_TRUTH_FILE
    text = path.read_text()
    path.write_bytes("\ufeff".encode() + text.encode())  # a byte-order mark, as some editors write
    assert (evaluate("rare26", input_dir, ground_truth).output / "metrics.json").read_bytes() == \
        (reference.output / "metrics.json").read_bytes()
    path.write_text(text.replace('"rare26_stack_0001.tiff"', '"rare26_stack_0000.tiff"'))
    run = evaluate("rare26", input_dir, ground_truth)
    assert (run.code, run.wrote_metrics) == (3, False)
    assert run.last_error_line == (f'{SETUP}The ground truth: {GROUND_TRUTH_FILE} gives the key '
                                   f'"rare26_stack_0000.tiff" twice in one object.' + TELL)


def test_patient_draws_are_bounded_before_drawing(tmp_path):
    from evaluation.challenges.rare26 import Rare26Settings
    from evaluation.errors import SetupError

    (tmp_path / "config.json").write_text('{"sampling": "patient", "repetitions": 100000, "patient_sample_size": 1000}')
    with pytest.raises(SetupError, match=r"the 'patient' sampling draws at most 50000000 patients in all\.$"):
        Rare26Settings.from_ground_truth(tmp_path)
    (tmp_path / "config.json").write_text('{"repetitions": 100001}')
    with pytest.raises(SetupError, match=r"setting 'repetitions' is 100001; it must be at most 100000\.$"):
        Rare26Settings.from_ground_truth(tmp_path)


@pytest.mark.parametrize("ratio", [100, 7, 1])
def test_image_level_bootstrap_draws_as_before_and_equals_rows_of_counts(dataset, ratio):
    """The image-level bootstrap places drawn neoplasia frames among the sorted NDBE scores; it must
    consume the seeded generator exactly as one integers() call over the neoplasia frames does
    (so later draws, and metrics.json, do not move) and give, bit for bit, the numbers of the
    general path on rows of multiplicities (all NDBE once, the drawn neoplasia frames)."""
    from evaluation.challenges.rare26.scoring import image_level_bootstrap
    from evaluation.metrics.classification import resampled_ranking_metrics
    from evaluation.metrics.resampling import draws_to_counts

    y, s, _ = load_arrays(dataset / "input", dataset / "ground-truth")
    rng = np.random.default_rng(31)
    got, extra = image_level_bootstrap(y, s, rng, 150, ratio)

    reference = np.random.default_rng(31)
    drawn = max(1, int((y == 0).sum() / ratio))
    draws = reference.integers(0, int(y.sum()), size=(150, drawn))
    counts = np.tile((y == 0).astype(np.int64), (150, 1))
    counts[:, y == 1] = draws_to_counts(draws, int(y.sum()))
    expected = resampled_ranking_metrics(y, s, counts)
    for key in expected:
        np.testing.assert_array_equal(got[key], expected[key])
    assert extra == {"neoplasia_images_per_repetition": drawn}
    assert rng.bit_generator.state == reference.bit_generator.state


@pytest.mark.parametrize("decimals", [2, 3])
@pytest.mark.parametrize("scheme", ["image", "patient"])
def test_bootstraps_equal_sklearn_per_repetition_with_heavy_ties(dataset, scheme, decimals):
    """Both schemes, likelihoods rounded to 2 or 3 decimals (many ties within and across
    classes), against one scikit-learn call per metric and repetition on the same draws."""
    from evaluation.challenges.rare26.scoring import image_level_bootstrap, patient_level_bootstrap

    y, s, patients = load_arrays(dataset / "input", dataset / "ground-truth")
    s = np.round(s, decimals)
    if scheme == "image":
        got, _ = image_level_bootstrap(y, s, np.random.default_rng(8), 80, 100)
        expected = official_image_level(y, s, 8, repetitions=80)
    else:
        got, _ = patient_level_bootstrap(y, s, patients, np.random.default_rng(8), 80, 10, 100)
        expected = official_patient_level(y, s, patients, 8, repetitions=80)
    np.testing.assert_allclose(got["auroc"], expected[:, 0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["average_precision"], expected[:, 1], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got["ppv_at_recall"], expected[:, 2])


def test_a_constant_submission_scores_above_a_model_at_90_recall_and_10_percent_fpr():
    """docs/challenges/rare26.md: under the official interpolation a constant likelihood scores
    0.1 + 0.9 * prevalence (the line from (recall 0, precision 1) to (1, prevalence)), about 0.109
    at 1% prevalence; a model at 90% recall and 10% false-positive rate scores its precision
    there, 0.9p / (0.9p + 0.1(1 - p)), about 0.083."""
    from sklearn.metrics import precision_recall_curve

    from evaluation.metrics.classification import ppv_at_recall

    n_ndbe = 1000
    n_neo = max(1, int(n_ndbe / 100))  # the bootstrap's sample: 1% prevalence
    prevalence = n_neo / (n_neo + n_ndbe)
    truth = np.r_[np.ones(n_neo), np.zeros(n_ndbe)]
    constant = np.full(n_neo + n_ndbe, 0.5)
    # 9 of the 10 neoplasia frames and 100 of the 1000 NDBE frames (10%) above the threshold
    model = np.r_[np.full(9, 0.9), [0.2], np.full(100, 0.9), np.full(900, 0.1)]
    expected_constant = 1 + 0.9 * (prevalence - 1)
    expected_model = 0.9 * prevalence / (0.9 * prevalence + 0.1 * (1 - prevalence))
    assert round(expected_constant, 3) == 0.109 and round(expected_model, 3) == 0.083
    for scores, expected in ((constant, expected_constant), (model, expected_model)):
        precision, recall, _ = precision_recall_curve(truth, scores)
        official = float(np.interp(0.9, recall[::-1], precision[::-1]))
        assert ppv_at_recall(truth, scores) == pytest.approx(expected, rel=1e-12)
        assert official == pytest.approx(expected, rel=1e-12)
    assert ppv_at_recall(truth, constant) > ppv_at_recall(truth, model)
