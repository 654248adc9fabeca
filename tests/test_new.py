"""python -m evaluation.new: each template writes a challenge that every command picks up, in a
copy of this repository (the real tree stays untouched), adding files only; a second task, of
another template, is added to a folder of tasks the scaffold wrote and both work with every
command; its metrics agree with an independent computation (scikit-learn, lifelines, a direct
numpy Dice, scipy's linear_sum_assignment and a direct FROC, numpy radial errors); the generic
tests pass on it; a bad, taken or ambiguous name, an unknown
template, or a task for a folder the scaffold did not write as a folder of tasks (a bundled
challenge's) is refused with one line and nothing written; a failed addition leaves the folder
and its page byte for byte as they were; the last message names paths that exist; and
scripts/make_example.py --force rewrites everything it made, stale files removed."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evaluation.new import TEMPLATES, folder_for, scaffolded_tasks, task_module, task_packages
from evaluation.platform.outputs import value_at_path

ROOT = Path(__file__).resolve().parent.parent


def run(copy: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "EVALUATION_WORKERS": "2"}
    return subprocess.run(args, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)


def git(copy: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=test@example.invalid", "-c", "user.name=test", *args], cwd=copy,
                          check=True, capture_output=True, text=True).stdout


def repository_copy(target: Path) -> Path:
    """The repository's files (tracked and untracked, not ignored) in `target`, as one commit of a new
    git repository."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.split(b"\0")
    target.mkdir()
    for name in filter(None, listed):
        source, destination = ROOT / os.fsdecode(name), target / os.fsdecode(name)
        if source.is_file():
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(source.read_bytes())
            destination.chmod(source.stat().st_mode)
    git(target, "init", "-q")
    git(target, "add", "-A")
    git(target, "commit", "-qm", "copy")
    return target


def scaffolded_copy(target: Path, name: str, template: str) -> Path:
    """repository_copy in `target` with `python -m evaluation.new NAME --template TEMPLATE` run in
    it (a real scaffold, in a process of its own): the copy's root."""
    copy = repository_copy(target)
    made = subprocess.run([sys.executable, "-m", "evaluation.new", name, "--template", template], cwd=copy,
                          capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
                          timeout=300)
    assert made.returncode == 0, made.stdout + made.stderr
    return copy


# One scaffold per template, each in a folder of its own whose names start differently (a letter
# each); the segmentation challenge's name has a "-" (a folder of tasks: acmeXseg/ holding the
# subpackage acmeXseg_task1/, page acmeXseg.md), and a second task of another template is added
# to that folder (ADDED): the generic tests run on both.
SCAFFOLD_NAMES = {template: f"acme{chr(ord('a') + number)}{template[:3]}" for number, template in enumerate(TEMPLATES)}
SCAFFOLD_NAMES["segmentation"] += "-task1"
ADDED = "added-task"  # scaffolded[ADDED]: the second task of the segmentation folder
ADDED_TEMPLATE = "classification"
SCAFFOLD_NAMES[ADDED] = folder_for(SCAFFOLD_NAMES["segmentation"]) + "-task2"
TEMPLATE_OF = {**{template: template for template in TEMPLATES}, ADDED: ADDED_TEMPLATE}
SCAFFOLDS = (*TEMPLATES, ADDED)
OUTPUTS: dict[str, str] = {}  # {scaffold: what its command printed (stdout and stderr)}


def scaffold_command(copy: Path, name: str, template: str, **options) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "evaluation.new", name, "--template", template], cwd=copy,
                            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **options)


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """{scaffold: (a repository copy, the challenge written there)}, one copy for every template
    and the task added to the segmentation folder."""
    copy = repository_copy(tmp_path_factory.mktemp("new") / "repo")
    # One scaffold per template at once, into the same copy: each builds in its own scratch
    # folder and moves its own new paths in (renames), so they cannot see each other half-written.
    started = {template: scaffold_command(copy, SCAFFOLD_NAMES[template], template) for template in TEMPLATES}
    for template, process in started.items():
        OUTPUTS[template], _ = process.communicate(timeout=300)
        assert process.returncode == 0, OUTPUTS[template]
    # Then a second task, of another template, added to the segmentation challenge's folder.
    added = scaffold_command(copy, SCAFFOLD_NAMES[ADDED], ADDED_TEMPLATE)
    OUTPUTS[ADDED], _ = added.communicate(timeout=300)
    assert added.returncode == 0, OUTPUTS[ADDED]
    return {scaffold: (copy, SCAFFOLD_NAMES[scaffold]) for scaffold in SCAFFOLDS}


def test_only_files_are_added(scaffolded):
    copy = next(iter(scaffolded.values()))[0]
    status = git(copy, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert status and all(line.startswith("?? ") for line in status), status
    added = {line[3:].split("/")[0] if not line[3:].startswith(("evaluation/", "docs/")) else
             "/".join(line[3:].split("/")[:3]) for line in status}
    folders = [folder_for(name) for _, name in scaffolded.values()]
    assert added == {*(f"evaluation/challenges/{f}" for f in folders), *(f"docs/challenges/{f}.md" for f in folders),
                     "ground-truth", "test"}
    assert not list(copy.glob(".new-*")), "a scratch folder was left behind"


@pytest.mark.parametrize("scaffold", SCAFFOLDS)
def test_every_command_picks_it_up(scaffolded, scaffold, tmp_path):
    copy, name = scaffolded[scaffold]
    python = sys.executable
    listed = run(copy, python, "-m", "evaluation", "--list")
    assert listed.returncode == 0 and name in listed.stdout
    example = copy / "test" / name
    # the evaluation reproduces expected_metrics.json byte for byte
    out = tmp_path / "out"
    evaluated = run(copy, python, "-m", "evaluation", name, "--ground-truth", f"ground-truth/{name}", "--input",
                    f"test/{name}/input", "--output", str(out))
    assert evaluated.returncode == 0, evaluated.stderr
    assert (out / "metrics.json").read_bytes() == (example / "expected_metrics.json").read_bytes()
    # each invalid example exits 1 with its expected line last
    invalid = sorted((example / "invalid").iterdir())
    assert len(invalid) >= 2
    for case in invalid:
        failed = run(copy, python, "-m", "evaluation", name, "--ground-truth", f"ground-truth/{name}", "--input",
                     str(case / "input"), "--output", str(tmp_path / case.name))
        assert failed.returncode == 1
        assert failed.stderr.strip().splitlines()[-1] == (case / "expected_error.txt").read_text().strip()
        assert not (tmp_path / case.name / "metrics.json").exists(), case.name
    # the phase's leaderboard
    phase = run(copy, python, "-m", "evaluation.phase", name)
    assert phase.returncode == 0 and json.loads(phase.stdout)[0]["score_jsonpath"]
    # the examples command, both modes
    assert run(copy, python, "-m", "evaluation.examples", name, "--out", str(tmp_path / "synthetic")).returncode == 0
    organizer = run(copy, python, "-m", "evaluation.examples", name, "--ground-truth", f"ground-truth/{name}",
                    "--output", str(tmp_path / "organizer"))
    assert organizer.returncode == 0, organizer.stderr
    assert (tmp_path / "organizer" / "expected_metrics.json").is_file()
    # the image's packages, as build.sh reads them
    packages = run(copy, python, "-m", "evaluation.image_requirements", name, "requirements.txt")
    assert packages.returncode == 0 and packages.stdout.startswith("numpy==")
    def normalized(package: str) -> str:
        return re.sub(r"[-_.]+", "-", package).lower()

    # exactly its template's packages: a folder of tasks declares each task's own
    assert sorted(normalized(line.split("==")[0]) for line in packages.stdout.split()) == \
        sorted(map(normalized, task_packages(TEMPLATE_OF[scaffold])))
    # the final ranking ranks the four valid teams, team-x excluded
    teams = sorted(str(p) for p in (example / "leaderboard").iterdir())
    ranking = run(copy, python, "-m", "evaluation.leaderboard", name, *teams, "--output", str(tmp_path / "ranking"),
                  "--resamples", "100")
    assert ranking.returncode == 0, ranking.stderr
    assert "(4 ranked, 1 excluded)" in ranking.stdout
    document = json.loads((tmp_path / "ranking" / "ranking.json").read_text())
    assert "team-x" in json.dumps(document) and "team-a" in json.dumps(document)
    if os.environ.get("EVALUATION_VENV"):  # the script, in the environment it would otherwise make
        script = run(copy, "./run-leaderboard.sh", name, *teams, "--output", str(tmp_path / "script"),
                     "--resamples", "100")
        assert script.returncode == 0, script.stderr
        script_ranking = (tmp_path / "script" / "ranking.json").read_bytes()
        assert script_ranking == (tmp_path / "ranking" / "ranking.json").read_bytes()


def independent(template: str, copy: Path, name: str) -> dict[str, float]:
    """The ranked values of the bundled example, computed without evaluation/metrics."""
    ground_truth, example = copy / "ground-truth" / name, copy / "test" / name / "input"
    jobs = json.loads((example / "predictions.json").read_text())

    def case_id(job):
        return job["inputs"][0]["image"]["name"].rsplit(".", 1)[0]

    def output(job):
        return example / job["pk"] / "output" / job["outputs"][0]["socket"]["relative_path"]

    if template == "segmentation":
        return independent_segmentation(ground_truth, [(case_id(job), next(output(job).iterdir())) for job in jobs])
    if template == "lesions":
        return independent_lesions(ground_truth, example, jobs)
    if template == "instances":
        return independent_instances(ground_truth, example, jobs)
    truth = json.loads((ground_truth / "reference.json").read_text())
    values = {case_id(job): json.loads(output(job).read_text()) for job in jobs}
    cases = sorted(truth)
    if template == "classification":
        from sklearn.metrics import balanced_accuracy_score, roc_auc_score, roc_curve

        y, s = [truth[c] for c in cases], [values[c] for c in cases]
        fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
        return {"aggregates.roc_auc": roc_auc_score(y, s),
                "aggregates.balanced_accuracy": balanced_accuracy_score(y, [v >= 0.5 for v in s]),
                "aggregates.sensitivity_at_specificity_90": float(tpr[1 - fpr >= 0.9].max())}
    if template == "regression":
        from sklearn.metrics import mean_absolute_error, r2_score

        targets = {target: ([truth[c][target] for c in cases], [values[c][target] for c in cases])
                   for target in ("volume", "age")}
        return {"aggregates.r2": float(np.mean([r2_score(*pair) for pair in targets.values()])),
                **{f"aggregates.{target}.mae": mean_absolute_error(*pair) for target, pair in targets.items()}}
    if template == "survival":
        lifelines = pytest.importorskip("lifelines.utils")
        return {"aggregates.c_index": lifelines.concordance_index(
            [truth[c]["time"] for c in cases], [-values[c] for c in cases], [truth[c]["event"] for c in cases])}
    if template not in ("landmarks", "points"):  # a new kind brings its own independent computation here
        raise NotImplementedError(f"no independent computation of the {template} template's metrics in this test")
    if template == "landmarks":  # numpy distances in mm (the examples' grids have an identity direction)
        errors = np.array([np.linalg.norm(np.array(truth[c]["landmarks"][item["name"]]) - np.array(item["point"][:2]))
                           for c in cases for item in values[c]["points"]])
        return {"aggregates.mre": float(errors.mean()), "aggregates.sdr_2mm": float((errors < 2.0).mean())}
    return independent_points(truth, values, cases)


def independent_points(truth: dict, values: dict, cases: list[str], radius: float = 2.0) -> dict[str, float]:
    """The points template's F1 (scipy's linear_sum_assignment on the distance matrix, pairs
    beyond the radius forbidden, counts pooled) and FROC score (by its definition: a prediction
    hits every true point within the radius, a true point keeps its best hit's probability, every
    distinct probability a threshold; mean sensitivity at 1/4 to 8 false positives per image), in
    world mm (the examples' grids have an identity direction)."""
    from scipy.optimize import linear_sum_assignment

    tp = fp = fn = 0
    fps, lesion_best = [], []
    for c in cases:
        centres = np.array(truth[c]["points"]["mitosis"], dtype=float).reshape(-1, 2)
        points = np.array([item["point"][:2] for item in values[c]["points"]], dtype=float).reshape(-1, 2)
        scores = np.array([item["probability"] for item in values[c]["points"]], dtype=float)
        distances = np.sqrt(((centres[:, None, :] - points[None, :, :]) ** 2).sum(axis=2))
        within = distances <= radius
        rows, columns = linear_sum_assignment(np.where(within, distances, 1e9))
        matched = int(within[rows, columns].sum())
        tp, fp, fn = tp + matched, fp + len(points) - matched, fn + len(centres) - matched
        best = np.full(len(centres), -np.inf)
        for k in range(len(points)):
            hit = within[:, k]
            best[hit] = np.maximum(best[hit], scores[k])
            if not hit.any():
                fps.append(scores[k])
        lesion_best.extend(best)
    fps, lesion_best = np.array(fps), np.array(lesion_best)
    thresholds = np.unique(np.concatenate([fps, lesion_best[np.isfinite(lesion_best)]]))
    rates = [(fps >= t).sum() / len(cases) for t in thresholds] + [0.0]
    sensitivities = [(lesion_best >= t).sum() / len(lesion_best) for t in thresholds] + [0.0]
    froc = float(np.mean(np.interp([0.25, 0.5, 1, 2, 4, 8], rates[::-1], sensitivities[::-1])))
    return {"aggregates.f1": 2 * tp / (2 * tp + fp + fn), "aggregates.froc": froc}


def independent_segmentation(ground_truth: Path, predictions: list[tuple[str, Path]]) -> dict[str, float]:
    """The segmentation template's ranked values: per label Dice (numpy), HD95 (the larger
    directed 95th percentile, MONAI's rule) and NSD at 2 mm from medpy's border-voxel surface
    distances, the template's empty policies (1/0/0, 0/diagonal/diagonal, 1/0/0), each case's
    mean over the three labels, then the mean over cases."""
    import SimpleITK as sitk
    from medpy.metric import binary

    per_case = []
    for case, path in predictions:
        truth_image = sitk.ReadImage(str(ground_truth / f"{case}.mha"))
        truth, prediction = sitk.GetArrayFromImage(truth_image), sitk.GetArrayFromImage(sitk.ReadImage(str(path)))
        spacing = truth_image.GetSpacing()[::-1]
        diagonal = float(np.sqrt(sum((n * s) ** 2 for n, s in zip(truth.shape, spacing, strict=True))))
        values = []
        for label in (1, 2, 3):
            p, t = prediction == label, truth == label
            if not p.any() or not t.any():
                both = not p.any() and not t.any()
                values.append((float(both), 0.0 if both else diagonal, float(both)))
                continue
            to_truth = binary.__surface_distances(p, t, spacing, 1)
            to_prediction = binary.__surface_distances(t, p, spacing, 1)
            hd95 = max(np.percentile(to_truth, 95), np.percentile(to_prediction, 95))
            within = np.count_nonzero(to_truth <= 2 + 1e-9) + np.count_nonzero(to_prediction <= 2 + 1e-9)
            values.append((2 * np.count_nonzero(p & t) / (p.sum() + t.sum()), hd95,
                           within / (len(to_truth) + len(to_prediction))))
        per_case.append(np.mean(values, axis=0))
    dice, hd95, nsd = np.mean(per_case, axis=0)
    return {"aggregates.dice_mean": dice, "aggregates.hd95_mean": hd95, "aggregates.nsd_mean": nsd}


def image_output(example: Path, job: dict, slug: str | None = None) -> Path:
    output = next(o for o in job["outputs"] if slug is None or o["socket"]["slug"] == slug)
    return next((example / job["pk"] / "output" / output["socket"]["relative_path"]).iterdir())


def independent_lesions(ground_truth: Path, example: Path, jobs: list[dict]) -> dict[str, float]:
    """The lesions template's declaration (26-connected lesions, a hit is any shared voxel, many
    to many) as autoPET and ISLES compute it: scipy's labelling, numpy counts, SimpleITK's spacing."""
    import SimpleITK as sitk
    from scipy import ndimage

    tp = fp = fn = 0
    fp_volumes, fn_volumes, dices = [], [], []
    for job in jobs:
        case_id = job["inputs"][0]["image"]["name"].rsplit(".", 1)[0]
        truth_image = sitk.ReadImage(str(ground_truth / f"{case_id}.mha"))
        truth = sitk.GetArrayFromImage(truth_image) > 0
        prediction = sitk.GetArrayFromImage(sitk.ReadImage(str(image_output(example, job)))) > 0
        ml = float(np.prod(truth_image.GetSpacing())) / 1000
        true_lesions, n_true = ndimage.label(truth, np.ones((3, 3, 3)))
        predicted_lesions, n_predicted = ndimage.label(prediction, np.ones((3, 3, 3)))
        found = set(np.unique(true_lesions[prediction & truth]).tolist()) - {0}
        touching = set(np.unique(predicted_lesions[prediction & truth]).tolist()) - {0}
        tp, fp, fn = tp + len(found), fp + n_predicted - len(touching), fn + n_true - len(found)
        false = [k for k in range(1, n_predicted + 1) if k not in touching]
        missed = [k for k in range(1, n_true + 1) if k not in found]
        fp_volumes.append(np.isin(predicted_lesions, false).sum() * ml)
        fn_volumes.append(np.isin(true_lesions, missed).sum() * ml)
        total = truth.sum() + prediction.sum()
        dices.append(2 * (truth & prediction).sum() / total if total else 1.0)
    return {"aggregates.lesion_f1_pooled": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0,
            "aggregates.fp_volume_mean": float(np.mean(fp_volumes)),
            "aggregates.fn_volume_mean": float(np.mean(fn_volumes)), "aggregates.dice_mean": float(np.mean(dices))}


def conic_counts(truth: np.ndarray, prediction: np.ndarray) -> tuple[int, int, int, float]:
    """(TP, FP, FN, IoU sum) of two instance maps at IoU > 0.5, as CoNIC's get_pq pairs them (every
    pair's IoU, then those above 0.5: unique, so no assignment is needed)."""
    true_ids = [i for i in np.unique(truth).tolist() if i]
    predicted_ids = [i for i in np.unique(prediction).tolist() if i]
    ious = np.zeros((len(true_ids), len(predicted_ids)))
    for row, t in enumerate(true_ids):
        mask = truth == t
        for column, p in enumerate(predicted_ids):
            other = prediction == p
            ious[row, column] = (mask & other).sum() / (mask | other).sum()
    matched = ious > 0.5
    tp = int(matched.sum())
    return tp, len(predicted_ids) - tp, len(true_ids) - tp, float(ious[matched].sum())


def independent_instances(ground_truth: Path, example: Path, jobs: list[dict]) -> dict[str, float]:
    """The instances template's declaration (two classes, IoU > 0.5, counts pooled over the images
    per class, then the mean over the classes: CoNIC's multi-class PQ), by a direct numpy count."""
    import SimpleITK as sitk

    def read(path):
        return sitk.GetArrayFromImage(sitk.ReadImage(str(path))).astype(np.int64)

    sums = np.zeros((2, 4))
    for job in jobs:
        case_id = job["inputs"][0]["image"]["name"].rsplit(".", 1)[0]
        truth, truth_classes = read(ground_truth / f"{case_id}.mha"), read(ground_truth / "classes" / f"{case_id}.mha")
        prediction = read(image_output(example, job, "instance-segmentation"))
        predicted_classes = read(image_output(example, job, "instance-classes"))
        for row, label in enumerate((1, 2)):
            sums[row] += conic_counts(np.where(truth_classes == label, truth, 0),
                                      np.where(predicted_classes == label, prediction, 0))
    tp, fp, fn, iou_sum = sums.T
    rq, sq = tp / (tp + fp / 2 + fn / 2), iou_sum / tp
    return {"aggregates.pq_pooled": float(np.mean(rq * sq)), "aggregates.sq_pooled": float(np.mean(sq)),
            "aggregates.rq_pooled": float(np.mean(rq))}


@pytest.mark.parametrize("scaffold", SCAFFOLDS)
def test_template_metrics_agree_with_an_independent_computation(scaffolded, scaffold):
    copy, name = scaffolded[scaffold]
    template = TEMPLATE_OF[scaffold]
    expected = json.loads((copy / "test" / name / "expected_metrics.json").read_text())
    for path, value in independent(template, copy, name).items():
        assert value_at_path(expected, path) == pytest.approx(value, rel=1e-12, abs=1e-12), path


def test_the_segmentation_teams_trade_the_metrics_off(scaffolded, tmp_path):
    """The segmentation template's teams: ordering by mean Dice, the mean of the three metrics'
    ranks (scipy's rankdata) and challengeR's per-case rank-then-mean put three different teams
    first; the template's own final ranking (mean of ranks) agrees with the second."""
    from scipy.stats import rankdata

    copy, name = scaffolded["segmentation"]
    teams = ("team-a", "team-b", "team-c")
    documents = {}
    for team in teams:
        done = run(copy, sys.executable, "-m", "evaluation", name, "--ground-truth", f"ground-truth/{name}", "--input",
                   f"test/{name}/leaderboard/{team}", "--output", str(tmp_path / team))
        assert done.returncode == 0, done.stderr
        documents[team] = json.loads((tmp_path / team / "metrics.json").read_text())
    signs = {"dice": -1, "hd95": 1, "nsd": -1}  # rankdata ranks ascending: higher is better is negated
    means = {key: [sign * documents[team]["aggregates"][f"{key}_mean"] for team in teams]
             for key, sign in signs.items()}
    by_dice = teams[int(np.argmin(means["dice"]))]
    mean_of_ranks = np.mean([rankdata(values) for values in means.values()], axis=0)
    cases = sorted(documents["team-a"]["cases"])
    case_ranks = np.mean([[rankdata([sign * documents[team]["cases"][case]["mean_over_labels"][key] for team in teams],
                                    method="min") for case in cases] for key, sign in signs.items()], axis=(0, 1))
    winners = (by_dice, teams[int(np.argmin(mean_of_ranks))], teams[int(np.argmin(case_ranks))])
    assert len(set(winners)) == 3, (winners, mean_of_ranks, case_ranks)
    assert sorted(mean_of_ranks)[0] < sorted(mean_of_ranks)[1] and sorted(case_ranks)[0] < sorted(case_ranks)[1]
    ranking = run(copy, sys.executable, "-m", "evaluation.leaderboard", name,
                  *(f"test/{name}/leaderboard/{team}" for team in teams), "--output", str(tmp_path / "ranking"),
                  "--resamples", "10")
    assert ranking.returncode == 0, ranking.stderr
    entries = json.loads((tmp_path / "ranking" / "ranking.json").read_text())["leaderboards"][0]["entries"]
    assert entries[0]["submission"] == winners[1] and entries[0]["rank"] == 1


@pytest.mark.parametrize("template", ["points", "landmarks"])
def test_the_leaderboard_teams_trade_the_metrics_off(scaffolded, template, tmp_path):
    """The team best on the score is not the best on the tie-break: an ordering and a mean of
    ranks rank them differently. Scored here without evaluation/metrics (`independent`)."""
    copy, name = scaffolded[template]
    values = {}
    for team in ("team-a", "team-b", "team-c"):
        team_copy = tmp_path / team
        (team_copy / "test" / name).mkdir(parents=True)
        (team_copy / "ground-truth").symlink_to(copy / "ground-truth")
        (team_copy / "test" / name / "input").symlink_to(copy / "test" / name / "leaderboard" / team)
        values[team] = independent(template, team_copy, name)
    first, second = list(values["team-a"])
    signs = {first: 1 if template == "points" else -1, second: 1}  # MRE: lower is better
    best = {path: max(values, key=lambda team, path=path: signs[path] * values[team][path]) for path in (first, second)}
    assert best[first] != best[second], values


@pytest.mark.slow
def test_a_segmentation_challenge_ranked_case_by_case_is_written_and_ranked(tmp_path):
    """The segmentation template declaring challengeR's rank-then-aggregate instead: its final
    ranking reads per-case values only, and its teams are still written (checked on the score) and
    ranked, the team that is best on most cases first."""
    copy = repository_copy(tmp_path / "repo")
    template = copy / "evaluation" / "new" / "templates" / "segmentation" / "__init__.py.tmpl"
    text = template.read_text()
    assert '    ranking = "mean_of_ranks"\n' in text
    template.write_text(text.replace('    ranking = "mean_of_ranks"\n', '    ranking = "case_rank_then_mean"\n'))
    written = run(copy, sys.executable, "-m", "evaluation.new", "caseseg", "--template", "segmentation")
    assert written.returncode == 0, written.stdout + written.stderr
    teams = sorted(str(p) for p in (copy / "test" / "caseseg" / "leaderboard").iterdir())
    ranking = run(copy, sys.executable, "-m", "evaluation.leaderboard", "caseseg", *teams, "--output",
                  str(tmp_path / "ranking"), "--resamples", "10")
    assert ranking.returncode == 0, ranking.stderr
    board = json.loads((tmp_path / "ranking" / "ranking.json").read_text())["leaderboards"][0]
    assert "rank-then-aggregate" in board["rule"]
    # team-b: exact on five cases of six, an empty map on the sixth (examples.py's style 2); team-d its copy
    assert [(entry["submission"], entry["rank"]) for entry in board["entries"][:2]] == [("team-b", 1), ("team-d", 1)]


# The test files parametrised over the registry (and the hostile suite, which takes each
# challenge's first case from its example).
GENERIC_FILES = tuple(sorted({"tests/test_hostile.py", *(
    f"tests/{path.name}" for path in (ROOT / "tests").glob("test_*.py")
    if path.name != "test_new.py" and any(word in path.read_text() for word in (
        "available_challenges", "challenge_names()", "challenges()", "challenge_folders()", "examples()")))}))


@pytest.mark.slow
def test_generic_tests_run_on_a_new_challenge_of_every_kind(scaffolded):
    """The repository's tests parametrised over the challenges or their folders (GENERIC_FILES,
    -k FOLDER: the name starts with it), hostile inputs included, run on the challenge of every
    template in the copy (one pytest run for all of them: one collection)."""
    copy = next(iter(scaffolded.values()))[0]
    folders = sorted({folder_for(name) for _, name in scaffolded.values()})
    result = run(copy, sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-k",
                 " or ".join(folders), *GENERIC_FILES, timeout=1800)
    summary = result.stdout.strip().splitlines()[-1]
    failed = {line.split()[1] for line in result.stdout.splitlines() if line.startswith("FAILED ")}
    print(f"generic tests for {', '.join(folders)}: {summary}")
    assert not failed, result.stdout[-4000:]  # no generic test needs a list entry for a new challenge
    assert result.returncode == 0, result.stdout[-4000:]  # nor fails to collect or errors in a fixture
    collected = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider",
                                *GENERIC_FILES], cwd=copy, capture_output=True, text=True).stdout
    for folder in folders:  # every kind's challenge got its share of the generic tests
        assert sum(folder in line for line in collected.splitlines()) >= 30, folder


@pytest.mark.parametrize("arguments, message", [
    (["Acme", "--template", "survival"], "is not a challenge name"),
    (["acme--x", "--template", "survival"], "is not a challenge name"),
    (["class", "--template", "survival"], "is not a Python package name"),
    (["rare26", "--template", "survival"], "exists already"),
    (["rare2", "--template", "survival"], "start alike"),
    (["isic2020", "--template", "survival"], "start alike"),
    (["acme", "--template", "no-such-kind"], "Unknown template"),
    # a task is added only to a folder of tasks the scaffold wrote, never a bundled challenge's
    (["hecktor2025-task4", "--template", "survival"], "cannot be added to evaluation/challenges/hecktor2025/"),
    (["rare26-task2", "--template", "survival"], "cannot be added to evaluation/challenges/rare26/"),
    # nor the folder of a challenge named as its folder, nor under a task's name it holds
    ([SCAFFOLD_NAMES["classification"] + "-task2", "--template", "survival"], "cannot be added to"),
    ([SCAFFOLD_NAMES["classification"], "--template", "survival"], "exists already"),
    ([SCAFFOLD_NAMES["segmentation"], "--template", "survival"], "holds the task"),
    ([SCAFFOLD_NAMES[ADDED], "--template", "classification"], "holds the task"),
    ([SCAFFOLD_NAMES["segmentation"].replace("-task1", "-task-1"), "--template", "survival"], "would be the task"),
])
def test_refusals_write_nothing(scaffolded, arguments, message):
    copy = next(iter(scaffolded.values()))[0]  # a copy: a refusal that broke would write there, not here
    before = git(copy, "status", "--porcelain", "--untracked-files=all")
    result = subprocess.run([sys.executable, "-m", "evaluation.new", *arguments], cwd=copy, capture_output=True,
                            text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert git(copy, "status", "--porcelain", "--untracked-files=all") == before


def test_an_installed_package_refuses_to_scaffold(tmp_path):
    """Installed (pip install .), the package's parent is site-packages, not a checkout: nothing
    may be written there."""
    from evaluation.errors import UsageError
    from evaluation.new import check_checkout

    check_checkout()  # this checkout is one
    with pytest.raises(UsageError, match="not one"):
        check_checkout(tmp_path)


def test_the_scaffolded_code_passes_the_linter(scaffolded):
    """ruff checks the written folders as .ci/run checks the repository (it never sees the .tmpl files)."""
    pytest.importorskip("ruff")
    copy = next(iter(scaffolded.values()))[0]
    folders = [f"evaluation/challenges/{folder_for(name)}" for _, name in scaffolded.values()]
    result = subprocess.run([sys.executable, "-m", "ruff", "check", *folders], cwd=copy, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_help_documents_the_command():
    result = subprocess.run([sys.executable, "-m", "evaluation.new", "--help"], cwd=ROOT, capture_output=True,
                            text=True)
    assert result.returncode == 0
    assert all(t in result.stdout for t in TEMPLATES) and "docs/adding-a-challenge.md" in result.stdout


def test_the_guide_shows_the_scaffold_output():
    """docs/adding-a-challenge.md's worked example is what the classification template writes."""
    from evaluation.new import folder_declaration, rendered

    files = rendered("classification", "acme2027", "acme2027")
    guide = (ROOT / "docs" / "adding-a-challenge.md").read_text()
    for name in ("__init__.py", "examples.py"):
        assert f"```python\n{files[name]}```" in guide, name
    # and its folder of tasks, after a classification task and a segmentation one
    tasks = {"acme2027-task1": task_packages("classification"), "acme2027-task2": task_packages("segmentation")}
    assert f"```python\n{folder_declaration('acme2027', tasks)}```" in guide


def tree(folder: Path) -> dict[str, bytes]:
    """{relative path: bytes} of every file under `folder`, links not followed."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def test_a_task_is_added_to_a_folder_of_tasks(scaffolded):
    """The second task lives beside the first in their folder (a subpackage each), the folder's
    __init__.py declares both (the scaffold would add a third), and the folder's page holds both
    tasks' sections, each with its phase's output."""
    copy, first = scaffolded["segmentation"]
    second = scaffolded[ADDED][1]
    folder = folder_for(first)
    package = copy / "evaluation" / "challenges" / folder
    assert sorted(p.name for p in package.iterdir()) == sorted(["__init__.py", task_module(first),
                                                                task_module(second)])
    tasks = scaffolded_tasks(package, folder)
    assert tasks is not None and sorted(tasks) == [first, second]
    assert "SimpleITK" in tasks[first] and "SimpleITK" not in tasks[second]
    for name in (first, second):  # each task's declaration leaves its packages to the folder's
        assert "RUNTIME_PACKAGES" not in (package / task_module(name) / "__init__.py").read_text()
    page = (copy / "docs" / "challenges" / f"{folder}.md").read_text()
    assert page.index(f"# {first}\n") < page.index(f"# {second}\n") and "__PHASE_OUTPUT__" not in page
    for name in (first, second):
        phase = run(copy, sys.executable, "-m", "evaluation.phase", name)
        assert phase.stdout.strip() in page
    listed = run(copy, sys.executable, "-m", "evaluation", "--list").stdout
    assert f"{first}:" in listed and f"{second}:" in listed


@pytest.mark.parametrize("scaffold", SCAFFOLDS)
def test_the_last_message_names_the_installed_paths(scaffolded, scaffold):
    """The scaffold's last message names where everything is, each path there now (never its
    scratch folder, gone at the end), and the next commands: run the example, run its tests."""
    copy, name = scaffolded[scaffold]
    output = OUTPUTS[scaffold]
    message = output[output.rindex(f"Wrote the challenge {name} into {copy}:"):]
    paths = [Path(line.strip()) for line in message.splitlines() if line.startswith(f"  {copy}/")]
    assert len(paths) >= 4 and all(path.exists() for path in paths), message
    assert {copy / "ground-truth" / name, copy / "test" / name} <= set(paths)
    assert ".new-" not in output and "in-progress" not in message
    assert f"python -m evaluation {name} --ground-truth ground-truth/{name} --input test/{name}/input" in message
    assert message.rstrip().endswith(f"./run-tests.sh -k {folder_for(name)}")


def test_a_failed_addition_leaves_the_folder_as_it_was(scaffolded):
    """A task whose template is broken (its invalid example is a valid one: the build's check
    fails, exit 4) is added to the folder of tasks: the folder and its page stay byte for byte as
    they were, nothing of the task is written, no scratch folder is left."""
    copy, first = scaffolded["segmentation"]
    folder = folder_for(first)
    package, page = copy / "evaluation" / "challenges" / folder, copy / "docs" / "challenges" / f"{folder}.md"
    before = (tree(package), page.read_bytes(), git(copy, "status", "--porcelain", "--untracked-files=all"))
    template = copy / "evaluation" / "new" / "templates" / "classification" / "examples.py.tmpl"
    original = template.read_text()
    assert 'b"1.5\\n"' in original
    template.write_text(original.replace('b"1.5\\n"', 'b"0.5\\n"'))  # "out-of-range" is then in range
    try:
        name = f"{folder}-broken"
        process = scaffold_command(copy, name, "classification")
        output, _ = process.communicate(timeout=300)
    finally:
        template.write_text(original)
    assert process.returncode == 4, output
    assert output.strip().splitlines()[-1].startswith(f"The new challenge {name} failed to make its own example")
    assert (tree(package), page.read_bytes(), git(copy, "status", "--porcelain", "--untracked-files=all")) == before
    parents = (".", "ground-truth", "test", "docs/challenges", "evaluation/challenges")
    assert not [p for parent in parents for p in (copy / parent).glob(".new-*")]


def test_make_example_force_rewrites_everything_it_made(scaffolded):
    """scripts/make_example.py NAME --force on a scaffolded task: the ground truth, the example and
    the leaderboard teams rewritten byte for byte, the stale files of an earlier version (a team,
    an invalid submission, a ground-truth file) removed; another file of test/NAME/ stays."""
    copy, name = scaffolded[ADDED]
    example, truth = copy / "test" / name, copy / "ground-truth" / name
    before = (tree(example), tree(truth))
    stale = [example / "leaderboard" / "team-old" / "predictions.json", example / "invalid" / "old-case" / "input"
             / "predictions.json", truth / "old-reference.json"]
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("[]\n")
    (example / "NOTES.md").write_text("mine\n")
    refused = run(copy, sys.executable, "scripts/make_example.py", name)
    assert refused.returncode == 2 and "--force" in refused.stderr.strip().splitlines()[-1]
    done = run(copy, sys.executable, "scripts/make_example.py", name, "--force")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert not [path for path in stale if os.path.lexists(path)]
    assert (example / "NOTES.md").read_text() == "mine\n"
    (example / "NOTES.md").unlink()
    assert (tree(example), tree(truth)) == before
    help_text = run(copy, sys.executable, "scripts/make_example.py", "--help").stdout
    assert "leaderboard/" in help_text and "stale" in help_text


def test_the_examples_command_rewrites_the_teams_too(scaffolded, tmp_path):
    """python -m evaluation.examples NAME --ground-truth ... --output test/NAME --force (the bundled
    example folder of a scaffolded task): its teams are rewritten with the rest, a stale one removed."""
    copy, name = scaffolded[ADDED]
    scratch = tmp_path / "example"
    shutil.copytree(copy / "test" / name, scratch)
    (scratch / "leaderboard" / "team-old").mkdir()
    (scratch / "leaderboard" / "team-old" / "predictions.json").write_text("[]\n")
    done = run(copy, sys.executable, "-m", "evaluation.examples", name, "--ground-truth", f"ground-truth/{name}",
               "--output", str(scratch), "--force")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (scratch / "leaderboard").iterdir()) == ["team-a", "team-b", "team-c", "team-d",
                                                                          "team-x"]


def test_templates_are_the_template_folders():
    """A kind is a folder of evaluation/new/templates/ holding *.tmpl files, with a one-line title."""
    from evaluation.new import TEMPLATE_DIR, TITLES

    folders = sorted(p.name for p in TEMPLATE_DIR.iterdir() if p.is_dir() and list(p.glob("*.tmpl")))
    assert list(TEMPLATES) == folders
    assert set(folders) <= set(TITLES) and all("\n" not in TITLES[kind] for kind in folders)


def test_a_failed_final_rename_puts_the_replaced_folder_and_page_back(tmp_path):
    """The last step of an addition (evaluation.interruption.install, a trash folder beside each
    target): when a rename fails after the folder was replaced (here the page's new file is
    missing), the old folder and page are back byte for byte, the new folder back where it was
    built, nothing in the trash folders."""
    from evaluation.interruption import install

    challenges, docs = tmp_path / "challenges", tmp_path / "docs"
    folder, page = challenges / "acme", docs / "acme.md"
    (folder / "acme_task1").mkdir(parents=True)
    (folder / "__init__.py").write_text("old declaration\n")
    (folder / "acme_task1" / "__init__.py").write_text("task 1\n")
    docs.mkdir()
    page.write_text("# acme-task1\n")
    beside_folder, beside_page = challenges / ".new-acme-task2-in-progress-x", docs / ".new-acme-task2-in-progress-y"
    (beside_folder / "acme" / "acme_task2").mkdir(parents=True)
    (beside_folder / "acme" / "__init__.py").write_text("new declaration\n")
    beside_page.mkdir()
    before = (tree(folder), page.read_bytes(), tree(beside_folder / "acme"))
    with pytest.raises(FileNotFoundError):
        install([(beside_folder / "acme", folder), (beside_page / "acme.md", page)], [beside_folder, beside_page],
                replace={folder, page})
    assert (tree(folder), page.read_bytes(), tree(beside_folder / "acme")) == before
    assert sorted(p.name for p in beside_folder.iterdir()) == ["acme"] and list(beside_page.iterdir()) == []
