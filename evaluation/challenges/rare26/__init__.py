"""RARE26: early neoplasia in Barrett's esophagus (docs/challenges/rare26.md).

Ranked by PPV at 90% recall under a simulated 1% prevalence: every repetition keeps all NDBE
images and draws neoplasia images with replacement, 1 per 100 NDBE; the score is the median
over 1000 repetitions. The official scorer sets no seed; ours does, so numbers reproduce.

Reads: the RARE25 metadata (one JSON file: each stack's frames, placed by their `index`, NDBE or
neoplasia by their `class`) and, per algorithm job, one JSON array of likelihoods, element i
for the frame with index i.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.errors import SetupError
from evaluation.leaderboard.rules import Key, OrderedRanking
from evaluation.framework import Evaluation, log
from evaluation.grand_challenge import Case, single_ground_truth_file, strip_extension
from evaluation.phase.columns import ABSOLUTE, Column, Leaderboard, leaderboard_paths
from evaluation.metrics.classification import average_precision, ranking_curve, roc_auc
from evaluation.metrics.ranking import metrics_with_drawn_positives, ppv_at_recall, resampled_ranking_metrics
from evaluation.metrics.resampling import (
    draw_with_replacement,
    draws_to_counts,
    percentile_summary,
    positives_per_resample,
)
from evaluation.reading.files import Origin
from evaluation.reading.json_files import read_json
from evaluation.reading.values import finite_numbers, json_type, shown
from evaluation.settings import CASE_INPUT, JSON_OUTPUT, Settings, setting

# The packages of requirements.txt this challenge's image installs (its pins stay there), numpy's dependencies
# included: reads JSON files; scores with numpy alone. build.sh installs these alone;
# tests/test_image_requirements.py scores the bundled example with every other package blocked.
RUNTIME_PACKAGES = ("numpy",)

TARGET_RECALL = 0.9  # the metric's name says 90: not a setting
# The negative class, compared with a frame's class lower-cased and without surrounding blanks
# ("NDBE", " ndbe " are NDBE); any other class is neoplasia (rare26.md).
NEGATIVE_CLASS = "ndbe"
MAX_PATIENT_DRAWS = 50_000_000  # 400 MB of draws
REPETITIONS_PER_BLOCK = 100  # resamples turned into counts at a time: bounded memory


@dataclass(frozen=True)
class Rare26Settings(Settings):
    input_socket: str | list[str] = setting("stacked-barretts-esophagus-endoscopy-images", socket=CASE_INPUT,
                                            doc="input socket whose image name is the stack (case) id (empty: the "
                                                "job's only image input; a list: one per interface of the phase)")
    output_socket: str = setting("stacked-neoplastic-lesion-likelihoods", socket=JSON_OUTPUT,
                                 doc="output socket: a JSON array of one likelihood per frame")
    sampling: str = setting("image", choices=("image", "patient"),
                            doc="bootstrap scheme: 'image' (RARE26 official: all NDBE images plus neoplasia "
                                "images drawn with replacement) or 'patient' (RARE25 pack: patients drawn "
                                "with replacement, all images of each)")
    repetitions: int = setting(1000, minimum=1, maximum=100_000, doc="bootstrap repetitions")
    imbalance_ratio: int = setting(100, minimum=1, maximum=100_000, doc="NDBE per neoplasia in a repetition (100: 1% prevalence)")
    patient_sample_size: int = setting(10, minimum=1, maximum=100_000,
                                       doc="'patient' scheme: neoplasia patients per repetition (NDBE patients: "
                                           "this times imbalance_ratio)")
    seed: int = setting(2026, minimum=0, doc="seed of the bootstrap draws (--seed overrides)")
    roc_chart_file: str = setting("", output_file=True,
                                  doc="file (the phase's Chart output relative_path, e.g. roc.json) for a Vega-Lite "
                                      "chart of the ROC curve on the whole test set; empty: no chart")
    pr_chart_file: str = setting("", output_file=True,
                                 doc="file (a Chart output relative_path, e.g. precision-recall.json) for a Vega-Lite "
                                     "chart of the precision-recall curve on the whole test set; empty: no chart")

    def check(self) -> None:
        super().check()
        # 'patient' draws every repetition's patients at once: bound them, or memory runs out.
        draws = self.repetitions * self.patient_sample_size * (self.imbalance_ratio + 1)
        if self.sampling == "patient" and draws > MAX_PATIENT_DRAWS:
            raise SetupError(f"config.json: repetitions x patient_sample_size x (imbalance_ratio + 1) is {draws}; "
                             f"the 'patient' sampling draws at most {MAX_PATIENT_DRAWS} patients in all.")


@dataclass(frozen=True)
class StackTruth:
    labels: np.ndarray  # 1 neoplasia, 0 NDBE; element i is the frame with index i
    patients: tuple[str, ...]  # in the same order ('patient' sampling only; empty otherwise)


class Rare26(Evaluation):
    name = "rare26"
    title = "RARE26: PPV at 90% recall, simulated 1% prevalence (endoscopy)"
    settings_class = Rare26Settings
    case_label = "Stack"
    # A stack is one JSON array of a few hundred numbers: 32 stacks took 0.53 s with one process and
    # with two workers alike, the workers doubling the memory (benchmarks/workers.py).
    cases_in_workers = False
    # The official scorer's 13 top-level keys: ranked on Score alone (rare26.md), the other twelve
    # shown beside it, excluded from ranking (python -m evaluation.phase rare26).
    leaderboards = (Leaderboard(
        score=Column("Score: PPV@90% recall at 1% prevalence (median)", "Score", "desc"),
        decimal_places=4,
        scoring_method=ABSOLUTE,
        extra_columns=tuple(Column(title, path, "desc", exclude_from_ranking=True) for title, path in (
            ("PPV@90% recall", "PPV@90RECALL"),
            ("PPV@90% recall, 95% CI lower", "PPV@90RECALL 95% CI Lower Bound"),
            ("PPV@90% recall, 95% CI upper", "PPV@90RECALL 95% CI Upper Bound"),
            ("AUROC", "AUROC"),
            ("AUROC, 95% CI lower", "AUROC 95% CI Lower Bound"),
            ("AUROC, 95% CI upper", "AUROC 95% CI Upper Bound"),
            ("AUPRC", "AUPRC"),
            ("AUPRC, 95% CI lower", "AUPRC 95% CI Lower Bound"),
            ("AUPRC, 95% CI upper", "AUPRC 95% CI Upper Bound"),
            ("AUROC, whole test set", "AUROC Full Dataset"),
            ("AUPRC, whole test set", "AUPRC Full Dataset"),
            ("PPV@90% recall, whole test set", "PPV@90RECALL Full Dataset"),
        )),
    ),)
    ranked_paths = leaderboard_paths(leaderboards)
    # The RARE26 rule (python -m evaluation.leaderboard): Score (median PPV@90% recall) descending.
    final_rankings = (OrderedRanking("score", (Key("Score", "desc"),)),)

    # ---- ground truth --------------------------------------------------------------------

    def load_ground_truth(self, directory: Path) -> dict[str, StackTruth]:
        """RARE25 metadata: {stack name: [{"filename", "index", "class", "patient_id"}, ...]}; the
        frame with index i is element i of the stack's likelihoods, whatever the list's order."""
        path = single_ground_truth_file(directory, ".json")
        document = read_json(self.truth, path, "The ground truth")
        where = f"Ground truth {path.name}"
        if not isinstance(document, dict) or not document:
            self.truth.fail(f"{where} must be a non-empty object mapping stack names to frames.")
        need_patients = self.settings.sampling == "patient"
        stacks: dict[str, StackTruth] = {}
        classes: Counter[str] = Counter()
        for stack_name, frames in document.items():
            case_id = strip_extension(stack_name)
            if case_id in stacks:
                self.truth.fail(f"{where}: two stacks are named {case_id} once extensions are removed.")
            stacks[case_id] = read_stack(self.truth, frames, f"{where}, stack {stack_name}", need_patients, classes)
        all_labels = np.concatenate([s.labels for s in stacks.values()])
        log(f"Ground truth: {len(all_labels)} frames in {len(stacks)} stacks; frames per class: "
            + ", ".join(f"{shown(name)} {count}{' (negative)' if is_negative(name) else ''}"
                        for name, count in sorted(classes.items())) + ".")
        if all_labels.all() or not all_labels.any():
            self.truth.fail(f"{where} must hold both NDBE and neoplasia frames.")
        return stacks

    # ---- one stack -----------------------------------------------------------------------

    def read_job_prediction(self, case: Case, ground_truth: StackTruth) -> np.ndarray:
        """The output's JSON array: one finite likelihood per frame, element i for the frame with
        index i (any range: only the order of the likelihoods counts)."""
        slug = self.settings.output_socket
        expected = len(ground_truth.labels)
        values = case.read_json(slug)
        if not isinstance(values, list):
            case.origin.fail(f"{case.name}: the output {slug!r} must be a JSON array of {expected} numbers "
                             f"(one likelihood per frame), found {json_type(values)}.")
        if len(values) != expected:
            case.origin.fail(f"{case.name}: expected {expected} likelihoods (one per frame), found {len(values)}.")
        return finite_numbers(values, expected, case.name, "likelihood", error=case.origin.error)

    # ---- the leaderboard -----------------------------------------------------------------

    def test_set(self, results: dict[str, np.ndarray]) -> tuple[list[str], np.ndarray, np.ndarray]:
        """(stacks in case order, every frame's label, every frame's likelihood), frames stack by stack."""
        case_ids = sorted(results)
        y_true = np.concatenate([self.ground_truth[c].labels for c in case_ids])
        y_score = np.concatenate([results[c] for c in case_ids])
        return case_ids, y_true, y_score

    def bootstrap(self, case_ids: list[str], y_true: np.ndarray, y_score: np.ndarray, repetitions: int,
                  seed: int) -> tuple[dict[str, np.ndarray], dict[str, int]]:
        """The three metrics of every repetition of the `sampling` scheme (its draws depend only on
        the seed and the ground truth: every submission gets the same ones), and its counts."""
        settings = self.settings
        rng = np.random.default_rng(seed)
        if settings.sampling == "image":
            return image_level_bootstrap(y_true, y_score, rng, repetitions, settings.imbalance_ratio)
        patients = np.concatenate([np.asarray(self.ground_truth[c].patients, dtype=object) for c in case_ids])
        return patient_level_bootstrap(y_true, y_score, patients, rng, repetitions, settings.patient_sample_size,
                                       settings.imbalance_ratio)

    def score_aggregates(self, results: dict[str, np.ndarray]) -> dict[str, Any]:
        case_ids, y_true, y_score = self.test_set(results)
        n_ndbe = int((y_true == 0).sum())

        curve = ranking_curve(y_true, y_score, np.ones(len(y_true)))  # scikit-learn's, bit for bit
        full_auroc = roc_auc(curve)
        full_auprc = average_precision(curve)
        full_ppv = ppv_at_recall(y_true, y_score, TARGET_RECALL)

        settings = self.settings
        boot, extra = self.bootstrap(case_ids, y_true, y_score, settings.repetitions, settings.seed)
        log(f"Bootstrap: {settings.repetitions} repetitions, {settings.sampling}-level sampling, seed {settings.seed}.")

        ppv, auroc, auprc = (percentile_summary(boot[k]) for k in ("ppv_at_recall", "auroc", "average_precision"))
        # The 13 keys of the official scorer, top level, same meaning: leaderboards read them.
        return {
            "Score": ppv[0],
            "PPV@90RECALL": ppv[0],
            "PPV@90RECALL 95% CI Lower Bound": ppv[1],
            "PPV@90RECALL 95% CI Upper Bound": ppv[2],
            "AUROC": auroc[0],
            "AUROC 95% CI Lower Bound": auroc[1],
            "AUROC 95% CI Upper Bound": auroc[2],
            "AUPRC": auprc[0],
            "AUPRC 95% CI Lower Bound": auprc[1],
            "AUPRC 95% CI Upper Bound": auprc[2],
            "AUROC Full Dataset": float(full_auroc),
            "AUPRC Full Dataset": float(full_auprc),
            "PPV@90RECALL Full Dataset": float(full_ppv),
            "counts": {"stacks": len(case_ids), "images": int(len(y_true)), "ndbe_images": n_ndbe,
                       "neoplasia_images": int(len(y_true) - n_ndbe), **extra},
        }

    # ---- the final ranking (python -m evaluation.leaderboard) ----------------------------

    def resample_plan(self, resamples: int, seed: int) -> tuple[int, int, str | None]:
        """RARE26's own bootstrap repetitions are the resamples: already the same draws for every
        submission, and Score is their median."""
        settings = self.settings
        note = (f"The statistics use RARE26's own {settings.repetitions} bootstrap repetitions "
                f"({settings.sampling}-level sampling, seed {settings.seed}, from the ground truth's settings), the "
                f"same draws for every submission, Score being the median over them; the requested resamples and "
                f"seed ({resamples}, {seed}) are not used.")
        return settings.repetitions, settings.seed, note

    def ranking_resamples(self, results: dict[str, np.ndarray], resamples: int, seed: int) -> dict[str, np.ndarray]:
        """{"Score": PPV@90% recall of every repetition}: with resample_plan's repetitions and
        seed, exactly the repetitions whose median is metrics.json's Score."""
        case_ids, y_true, y_score = self.test_set(results)
        boot, _ = self.bootstrap(case_ids, y_true, y_score, resamples, seed)
        return {"Score": boot["ppv_at_recall"]}

    def ranking_curves(self, results: dict[str, np.ndarray], metrics: dict[str, Any]) -> list[dict]:
        """The ROC curve of the whole test set (the result page's chart), thinned to the chart's maximum."""
        from evaluation import charts
        from evaluation.metrics.classification import roc_points

        fpr, tpr, _ = roc_points(self.test_set_curve(results))
        return [{"chart": "roc", "title": "ROC, whole test set", "x_title": "False positive rate",
                 "y_title": "Sensitivity",
                 "points": [[charts.rounded(fpr[i]), charts.rounded(tpr[i])] for i in charts.thinned(len(fpr))]}]

    # ---- charts (only when their settings name a file) -----------------------------------

    chart_builders = {"roc_chart_file": "roc_chart", "pr_chart_file": "precision_recall_chart"}

    def test_set_curve(self, results: dict[str, np.ndarray]):
        """The ranking curve of every frame of the test set (no resampling), stacks in case order."""
        _, y_true, y_score = self.test_set(results)
        return ranking_curve(y_true, y_score, np.ones(len(y_true)))

    def roc_chart(self, results: dict[str, np.ndarray], metrics: dict[str, Any]) -> dict:
        return test_set_roc_chart(self.test_set_curve(results), metrics)

    def precision_recall_chart(self, results: dict[str, np.ndarray], metrics: dict[str, Any]) -> dict:
        return test_set_precision_recall_chart(self.test_set_curve(results), metrics, self.settings)


def is_negative(label: str) -> bool:
    return label.strip().lower() == NEGATIVE_CLASS


def read_stack(truth: Origin, frames: Any, where: str, need_patients: bool, classes: Counter[str]) -> StackTruth:
    """One stack's frames, each placed at its `index` (0 to n-1, each once), whatever the order
    of the list. Counts every frame's class, lower-cased, into `classes` (for the log)."""
    if not isinstance(frames, list) or not frames:
        truth.fail(f"{where} must be a non-empty list of frames.")
    size = len(frames)
    labels = np.zeros(size, dtype=np.int8)
    patients = [""] * size
    entry_of_index: dict[int, int] = {}
    for entry, frame in enumerate(frames):
        at = f"{where}, entry {entry}"
        if not isinstance(frame, dict):
            truth.fail(f"{at} must be an object with an index and a class, not {json_type(frame)}.")
        index = frame_index(truth, frame, at, size)
        if index in entry_of_index:
            truth.fail(f"{at} has index {index}, as entry {entry_of_index[index]} does; each index from 0 to "
                       f"{size - 1} must appear once.")
        entry_of_index[index] = entry
        label = frame_class(truth, frame, at)
        classes[label.lower()] += 1
        labels[index] = 0 if is_negative(label) else 1
        if need_patients:
            patients[index] = frame_patient(truth, frame, at)
    return StackTruth(labels, tuple(patients) if need_patients else ())


def frame_index(truth: Origin, frame: dict, at: str, size: int) -> int:
    """The frame's position in the stack's likelihoods: a whole number (not a boolean) below size."""
    if "index" not in frame:
        truth.fail(f"{at} has no index (its position, 0 to {size - 1}, in the stack's likelihoods).")
    index = frame["index"]
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < size:
        truth.fail(f"{at} has index {shown(index)}; it must be a whole number from 0 to {size - 1} (the stack has "
                   f"{size} frames).")
    return index


def frame_class(truth: Origin, frame: dict, at: str) -> str:
    """The frame's class: non-empty text (its value is never quoted: it is a label)."""
    if "class" not in frame:
        truth.fail(f"{at} has no class.")
    label = frame["class"]
    if not isinstance(label, str) or not label.strip():
        found = "blank text" if isinstance(label, str) else json_type(label)
        truth.fail(f"{at} has a class that is {found}; a class must be non-empty text.")
    return label


def frame_patient(truth: Origin, frame: dict, at: str) -> str:
    patient = frame.get("patient_id")
    if isinstance(patient, bool) or not isinstance(patient, (str, int)):
        truth.fail(f"{at} has no patient_id, which the 'patient' sampling needs.")
    return str(patient)


def image_level_bootstrap(y_true, y_score, rng, repetitions: int, imbalance_ratio: int):
    """RARE26 official: every repetition keeps all NDBE images and draws
    max(1, int(n_ndbe / ratio)) neoplasia images uniformly with replacement
    (draws: rng.integers over the neoplasia images, in data order, one row per repetition).
    Only the drawn neoplasia images change between repetitions: the NDBE scores are sorted once
    and each drawn image placed among them (metrics_with_drawn_positives), so the cost follows
    the draws, not repetitions x images."""
    per_resample = positives_per_resample(int((y_true == 0).sum()), imbalance_ratio)
    draws = draw_with_replacement(rng, int((y_true == 1).sum()), repetitions, per_resample)
    return (metrics_with_drawn_positives(y_true, y_score, draws, TARGET_RECALL),
            {"neoplasia_images_per_repetition": per_resample})


def patient_level_bootstrap(y_true, y_score, patients, rng, repetitions: int, sample_size: int, imbalance_ratio: int):
    """RARE25 pack: patients are neoplastic when any of their frames is; every repetition draws
    sample_size neoplasia patients, then sample_size * ratio NDBE patients, with replacement
    (patients in sorted order), and takes all images of each drawn patient."""
    names, patient_of_image = np.unique(np.asarray(patients).astype(str), return_inverse=True)
    is_neoplasia = np.zeros(len(names), dtype=bool)
    is_neoplasia[patient_of_image[y_true == 1]] = True
    neoplasia_patients, ndbe_patients = np.flatnonzero(is_neoplasia), np.flatnonzero(~is_neoplasia)
    if len(ndbe_patients) == 0:
        raise SetupError("The 'patient' sampling needs at least one patient without neoplasia frames.")
    n_neo, n_ndbe = sample_size, sample_size * imbalance_ratio
    draws = np.hstack([
        neoplasia_patients[draw_with_replacement(rng, len(neoplasia_patients), repetitions, n_neo)],
        ndbe_patients[draw_with_replacement(rng, len(ndbe_patients), repetitions, n_ndbe)],
    ])

    def counts(block):
        return draws_to_counts(block, len(names))[:, patient_of_image]

    extra = {"patients": len(names), "neoplasia_patients": int(is_neoplasia.sum()),
             "neoplasia_patients_per_repetition": n_neo, "ndbe_patients_per_repetition": n_ndbe}
    return _resampled(y_true, y_score, draws, counts), extra


def _resampled(y_true, y_score, draws, counts_of):
    """The three metrics of every repetition, turning draws into counts block by block so that
    memory stays bounded however many repetitions and images."""
    parts = [resampled_ranking_metrics(y_true, y_score, counts_of(draws[start:start + REPETITIONS_PER_BLOCK]),
                                       TARGET_RECALL)
             for start in range(0, len(draws), REPETITIONS_PER_BLOCK)]
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


# ---- charts -------------------------------------------------------------------------------------


def _test_set_counts(metrics: dict[str, Any]) -> str:
    counts = metrics["counts"]
    return f"{counts['images']} frames ({counts['neoplasia_images']} neoplasia), {counts['stacks']} stacks"


def test_set_roc_chart(curve, metrics: dict[str, Any]) -> dict:
    """The ROC curve of the whole test set, as it is (not resampled)."""
    from evaluation import charts
    from evaluation.metrics.classification import roc_points

    fpr, tpr, thresholds = roc_points(curve)
    auc = metrics["AUROC Full Dataset"]
    line = charts.Curve("whole test set", fpr.tolist(), tpr.tolist(), thresholds.tolist(), summary=f"AUC {auc:.3f}")
    subtitle = [f"AUROC {auc:.4f} on the whole test set: {_test_set_counts(metrics)}",
                f"leaderboard AUROC {metrics['AUROC']:.4f}: the median over the bootstrap repetitions"]
    about = ("ROC curve of every frame of the test set as it is (not resampled), neoplasia against NDBE by the "
             "submitted likelihood; the points of scikit-learn's roc_curve (collinear points dropped).")
    return charts.roc_chart([line], title="RARE26: ROC curve (whole test set)", subtitle=subtitle,
                            line_title="curve (AUC)", about=about)


def test_set_precision_recall_chart(curve, metrics: dict[str, Any], settings: Rare26Settings) -> dict:
    """The precision-recall curve of the whole test set, the PPV at 90% recall of that set marked.
    Its precision is the raw test set's, not the leaderboard's: the leaderboard's PPV is the
    median over bootstrap repetitions at the simulated prevalence."""
    from evaluation import charts
    from evaluation.metrics.classification import precision_recall_points

    recall, precision, thresholds = precision_recall_points(curve)
    ap = metrics["AUPRC Full Dataset"]
    line = charts.Curve("whole test set", recall.tolist(), precision.tolist(), thresholds.tolist(),
                        summary=f"AP {ap:.3f}")
    full_ppv = metrics["PPV@90RECALL Full Dataset"]
    mark = charts.Marked(TARGET_RECALL, full_ppv, f"PPV at {TARGET_RECALL:.0%} recall, whole test set")
    prevalence = 100.0 / settings.imbalance_ratio  # "1% prevalence": 1 neoplasia frame per 100 NDBE frames
    subtitle = [f"whole test set: {_test_set_counts(metrics)}; PPV at 90% recall {full_ppv:.4f}",
                f"leaderboard Score {metrics['Score']:.4f}: median PPV over {settings.repetitions} bootstraps at "
                f"{prevalence:.3g}% prevalence"]
    about = ("Precision-recall curve of every frame of the test set as it is (not resampled, so at the test set's "
             "own prevalence), neoplasia against NDBE by the submitted likelihood: one point per distinct "
             "likelihood, joined by straight lines as the PPV at 90% recall is interpolated. The red point is that "
             "PPV on this set. The leaderboard's PPV uses the bootstrapped 1% prevalence (imbalance_ratio NDBE "
             "frames per neoplasia frame, median over the repetitions), which lowers precision: it is not read "
             "off this curve.")
    return charts.precision_recall_chart([line], [mark], title="RARE26: precision-recall curve (whole test set)",
                                         subtitle=subtitle, line_title="curve (average precision)", about=about)
