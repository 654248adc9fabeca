"""python -m evaluation.new: each template writes a challenge that every command picks up, in a
copy of this repository (the real tree stays untouched), adding files only; its metrics agree
with an independent computation (scikit-learn, lifelines, a direct numpy Dice, scipy's
linear_sum_assignment and a direct FROC, numpy radial errors); the
generic tests pass on it; and a bad, taken or ambiguous name, or an unknown template, is
refused with one line and nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evaluation.grand_challenge import value_at_path
from evaluation.new import folder_for

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ("classification", "segmentation", "points", "landmarks", "survival", "lesions", "instances", "regression")


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


# One name with a "-" (folder acmeseg/, page acmeseg.md): the segmentation challenge, on which
# every generic test runs.
SCAFFOLD_NAMES = {template: f"acme{template[:3]}" for template in TEMPLATES} | {"segmentation": "acmeseg-task1"}


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory) -> dict[str, tuple[Path, str]]:
    """{template: (a repository copy, the challenge written there)}, one copy for all the templates."""
    copy = repository_copy(tmp_path_factory.mktemp("new") / "repo")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    # Every scaffold at once, into the same copy: each builds in its own scratch folder and moves
    # its own new paths in (renames), so they cannot see each other half-written.
    started = {template: subprocess.Popen([sys.executable, "-m", "evaluation.new", SCAFFOLD_NAMES[template],
                                           "--template", template], cwd=copy, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True) for template in TEMPLATES}
    for process in started.values():
        output, _ = process.communicate(timeout=300)
        assert process.returncode == 0, output
    return {template: (copy, SCAFFOLD_NAMES[template]) for template in TEMPLATES}


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


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_command_picks_it_up(scaffolded, template, tmp_path):
    copy, name = scaffolded[template]
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


@pytest.mark.parametrize("template", TEMPLATES)
def test_template_metrics_agree_with_an_independent_computation(scaffolded, template):
    copy, name = scaffolded[template]
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
def test_generic_tests_run_on_a_new_challenge(scaffolded):
    """The repository's tests parametrised over the challenges or their folders (GENERIC_FILES,
    -k FOLDER: the name starts with it) run on the new segmentation challenge in the copy."""
    copy, name = scaffolded["segmentation"]
    result = run(copy, sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-k", folder_for(name),
                 *GENERIC_FILES, timeout=900)
    summary = result.stdout.strip().splitlines()[-1]
    failed = {line.split()[1].split("[")[0] for line in result.stdout.splitlines() if line.startswith("FAILED ")}
    passed = int(summary.split(" passed")[0].split()[-1]) if " passed" in summary else 0
    print(f"generic tests for {name}: {summary}")
    assert not failed, result.stdout[-4000:]  # no generic test needs a list entry for a new challenge
    assert result.returncode == 0, result.stdout[-4000:]  # nor fails to collect or errors in a fixture
    assert passed >= 30, summary


@pytest.mark.parametrize("arguments, message", [
    (["Acme", "--template", "survival"], "is not a challenge name"),
    (["acme--x", "--template", "survival"], "is not a challenge name"),
    (["class", "--template", "survival"], "is not a Python package name"),
    (["rare26", "--template", "survival"], "exists already"),
    (["rare2", "--template", "survival"], "start alike"),
    (["isic2020", "--template", "survival"], "start alike"),
    (["acme", "--template", "spectroscopy"], "Unknown template"),
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
    from evaluation.new import rendered

    files = rendered("classification", "acme2027", "acme2027")
    guide = (ROOT / "docs" / "adding-a-challenge.md").read_text()
    for name in ("__init__.py", "examples.py"):
        assert f"```python\n{files[name]}```" in guide, name
