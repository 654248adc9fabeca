"""python -m evaluation.leaderboard under hostile inputs and faults, run for real: team names that
are spreadsheet formulae, outputs overlapping the inputs or reaching outside through links, a
ground truth that fails while scoring, metrics.json files that are not files, no space left, a
scheduler that is not there and a Dask worker killed mid-run."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluation.leaderboard.cli import LOCK, MANIFEST, STOPPED
from tests.dask_cluster import dask_cluster as start_dask_cluster

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}
TASK2 = "hecktor2025-task2"
FORMULAE = ["=1+2", "@SUM(1+1)", "+3-1", "-2+3"]


def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evaluation.leaderboard", *args], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def teams(challenge: str) -> list[Path]:
    return sorted((ROOT / "test" / challenge / "leaderboard").iterdir())


def valid_teams(challenge: str) -> list[Path]:
    return [team for team in teams(challenge) if team.name != "team-x"]  # team-x: the bundled invalid one


def output_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_one_line(result: subprocess.CompletedProcess, code: int) -> str:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines and lines[-1].strip()
    return lines[-1]


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"")
            for p in sorted(folder.rglob("*"))}


def hidden_files(folder: Path) -> set[str]:
    """Names of the dot files left anywhere under `folder` (temporary files, the lock, the manifest)."""
    return {p.name for p in folder.rglob(".*")}


# ---- formula injection ---------------------------------------------------------------------------


def test_team_names_that_are_formulae_are_text_in_the_csv_and_raw_in_ranking_json(tmp_path):
    folders = []
    for name, team in zip(FORMULAE, valid_teams(TASK2), strict=True):
        shutil.copytree(team, tmp_path / "teams" / name)
        folders.append(str(tmp_path / "teams" / name))  # absolute: "-2+3" is not taken for an option
    shutil.copytree(ROOT / "test" / TASK2 / "leaderboard" / "team-x", tmp_path / "teams" / "=HYPERLINK(1)")
    folders.append(str(tmp_path / "teams" / "=HYPERLINK(1)"))
    result = run(TASK2, *folders, "--output", str(tmp_path / "out"), "--resamples", "30", "--workers", "1")
    assert result.returncode == 0, result.stderr
    ranking = json.loads((tmp_path / "out" / "ranking.json").read_text())
    assert sorted(e["submission"] for e in ranking["leaderboards"][0]["entries"]) == sorted(FORMULAE)
    assert [e["submission"] for e in ranking["excluded"]] == ["=HYPERLINK(1)"]
    assert "Scored =HYPERLINK(1)" not in result.stdout and "Invalid =HYPERLINK(1) (exit 1, excluded)" in result.stdout
    with open(tmp_path / "out" / "ranking-c_index.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    names = [row[1] for row in rows[1:]]
    assert sorted(names) == sorted("'" + name for name in [*FORMULAE, "=HYPERLINK(1)"])
    for row in rows:  # no cell a spreadsheet would run
        assert not any(cell.startswith(("=", "+", "@", "\t", "\r")) for cell in row), row
        assert not any(cell.startswith("-") and not _is_number(cell) for cell in row), row


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_negative_numbers_stay_numbers_in_the_csv(tmp_path):
    files = []
    for name, value in (("-neg", -0.25), ("pos", 0.5)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.json").write_text(json.dumps({"aggregates": {"c_index": value}}))
        files.append(str(tmp_path / name / "metrics.json"))
    result = run(TASK2, "--metrics", *files, "--output", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "out" / "ranking-c_index.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert [row[:3] for row in rows[1:]] == [["1", "pos", "0.5"], ["2", "'-neg", "-0.25"]]


# ---- --output apart from the inputs ------------------------------------------------------------------


@pytest.mark.parametrize("where", ["ground truth", "inside the ground truth", "around the ground truth", "team",
                                   "inside a team", "around a team", "existing file"])
def test_an_output_overlapping_an_input_is_refused(tmp_path, where):
    ground_truth = tmp_path / "inputs" / "gt"
    shutil.copytree(ROOT / "ground-truth" / TASK2, ground_truth)
    team_folders = []
    for team in valid_teams(TASK2):
        shutil.copytree(team, tmp_path / "inputs" / "teams" / team.name)
        team_folders.append(tmp_path / "inputs" / "teams" / team.name)
    (tmp_path / "a-file").write_text("mine\n")
    output = {"ground truth": ground_truth, "inside the ground truth": ground_truth / "out",
              "around the ground truth": tmp_path / "inputs", "team": team_folders[0],
              "inside a team": team_folders[0] / "out", "around a team": tmp_path / "inputs" / "teams",
              "existing file": tmp_path / "a-file"}[where]
    before = tree(tmp_path)
    result = run(TASK2, *map(str, team_folders), "--ground-truth", str(ground_truth), "--output", str(output))
    line = assert_one_line(result, 2)
    assert "--output" in line
    assert tree(tmp_path) == before  # nothing written, nothing deleted


# ---- a ground truth that fails while scoring ---------------------------------------------------------


def _csv2026_ground_truth(tmp_path: Path) -> Path:
    ground_truth = tmp_path / "gt"
    shutil.copytree(ROOT / "ground-truth" / "csv2026", ground_truth)
    return ground_truth


def test_a_truncated_label_file_read_while_scoring_is_exit_3_without_ranking(tmp_path):
    ground_truth = _csv2026_ground_truth(tmp_path)
    label = sorted(ground_truth.glob("*_label.h5"))[0]
    label.write_bytes(label.read_bytes()[:1000])
    result = run("csv2026", *map(str, teams("csv2026")), "--ground-truth", str(ground_truth),
                 "--output", str(tmp_path / "out"), "--workers", "2", "--resamples", "0")
    line = assert_one_line(result, 3)
    assert "no fault of the submissions" in line and label.name in line, line
    assert not (tmp_path / "out" / "ranking.json").exists()


def test_a_one_class_ground_truth_is_exit_3_without_ranking(tmp_path):
    import h5py

    ground_truth = _csv2026_ground_truth(tmp_path)
    for label in ground_truth.glob("*_label.h5"):
        with h5py.File(label, "r+") as h5:
            h5["cls"][...] = 0
    result = run("csv2026", *map(str, teams("csv2026")), "--ground-truth", str(ground_truth),
                 "--output", str(tmp_path / "out"), "--workers", "1", "--resamples", "0")
    line = assert_one_line(result, 3)
    assert "both low-risk and high-risk" in line, line
    assert not (tmp_path / "out" / "ranking.json").exists()


def test_a_failed_rerun_leaves_no_earlier_ranking_json(tmp_path):
    out = tmp_path / "out"
    assert run(TASK2, *map(str, teams(TASK2)), "--output", str(out), "--resamples", "0").returncode == 0
    (tmp_path / "gt").mkdir()
    result = run(TASK2, *map(str, teams(TASK2)), "--output", str(out), "--ground-truth", str(tmp_path / "gt"))
    assert_one_line(result, 3)
    assert not (out / "ranking.json").exists()


# ---- inputs that ended in a traceback --------------------------------------------------------------------


def test_metrics_files_that_cannot_be_ranked_are_excluded_in_one_line(tmp_path):
    good, huge, device = tmp_path / "good", tmp_path / "huge", tmp_path / "device"
    for folder in (good, huge, device):
        folder.mkdir()
    (good / "metrics.json").write_text('{"aggregates": {"c_index": 0.7}}')
    (huge / "metrics.json").write_text('{"aggregates": {"c_index": 1' + "0" * 400 + "}}")
    (device / "metrics.json").symlink_to("/dev/zero")
    result = run(TASK2, "--metrics", str(good), str(huge), str(device / "metrics.json"),
                 "--output", str(tmp_path / "out"), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    ranking = json.loads((tmp_path / "out" / "ranking.json").read_text())
    assert [e["submission"] for e in ranking["leaderboards"][0]["entries"]] == ["good"]
    excluded = {e["submission"]: e["error"] for e in ranking["excluded"]}
    assert "401 digits" in excluded["huge"] and "not a regular file" in excluded["device"]


def test_a_scheduler_where_nothing_listens_is_exit_3_at_once(tmp_path):
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    result = run(TASK2, *map(str, teams(TASK2)), "--output", str(tmp_path / "out"),
                 "--scheduler", f"tcp://127.0.0.1:{port}")
    line = assert_one_line(result, 3)
    assert f"127.0.0.1:{port}" in line and time.monotonic() - started < 25
    assert not (tmp_path / "out" / "ranking.json").exists()


# ---- nothing outside --output, nothing it did not write --------------------------------------------------


@pytest.mark.parametrize("link", ["charts", "report.html", "submissions", "charts/pairwise-c_index.vl.json"])
def test_a_link_in_the_output_is_refused_and_its_target_kept(tmp_path, link):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.vl.json").write_text("{}\n")
    (elsewhere / "keep.html").write_text("<p>mine</p>\n")
    out = tmp_path / "out"
    target = {"charts": elsewhere, "submissions": elsewhere, "report.html": elsewhere / "keep.html",
              "charts/pairwise-c_index.vl.json": elsewhere / "keep.vl.json"}[link]
    (out / link).parent.mkdir(parents=True)
    (out / link).symlink_to(target)
    before = tree(elsewhere)
    result = run(TASK2, *map(str, teams(TASK2)), "--output", str(out), "--resamples", "0")
    assert "link" in assert_one_line(result, 2)
    assert tree(elsewhere) == before and not (out / "ranking.json").exists()


def test_only_what_the_last_run_wrote_is_removed(tmp_path):
    valid, invalid = ROOT / "test" / TASK2 / "leaderboard" / "team-a", ROOT / "test" / TASK2 / "leaderboard" / "team-x"
    first, second = tmp_path / "first" / "t", tmp_path / "second" / "t"
    shutil.copytree(valid, first)
    shutil.copytree(invalid, second)
    out = tmp_path / "out"
    (out / "charts").mkdir(parents=True)
    (out / "charts" / "my-own.vl.json").write_text("{}\n")
    (out / "submissions" / "mine").mkdir(parents=True)
    (out / "submissions" / "mine" / "metrics.json").write_text("{}\n")
    others = [str(t) for t in teams(TASK2) if t.name in ("team-b", "team-c")]
    assert run(TASK2, str(first), *others, "--output", str(out), "--resamples", "20").returncode == 0
    assert (out / "submissions" / "t" / "metrics.json").is_file()
    charts = sorted(p.name for p in (out / "charts").iterdir())
    # the same team name, now invalid: the metrics.json the first run wrote for it goes
    result = run(TASK2, str(second), others[0], "--output", str(out), "--resamples", "20")
    assert result.returncode == 0, result.stderr
    assert not (out / "submissions" / "t" / "metrics.json").exists()
    assert (out / "charts" / "my-own.vl.json").read_text() == "{}\n"
    assert (out / "submissions" / "mine" / "metrics.json").read_text() == "{}\n"
    now = sorted(p.name for p in (out / "charts").iterdir())
    assert set(now) <= set(charts) and "my-own.vl.json" in now


# ---- no space left ---------------------------------------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path):
    """A mount point whose tmpfs size the test sets (root only; skipped elsewhere)."""
    mounted = []

    def mount(size: int) -> Path:
        point = tmp_path / f"disk-{size}"
        point.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
                              capture_output=True, text=True)
        if done.returncode:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()})")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", str(point)], check=False)


NO_SPACE_ARGUMENTS = ["--resamples", "50", "--workers", "1"]


@pytest.fixture(scope="module")
def pages_needed(tmp_path_factory):
    """The 4 KiB pages a full run's files take on a tmpfs (each file a whole number of pages)."""
    out = tmp_path_factory.mktemp("full") / "out"
    result = run(TASK2, *map(str, teams(TASK2)), "--output", str(out), *NO_SPACE_ARGUMENTS)
    assert result.returncode == 0, result.stderr
    blocks = sum(-(-p.stat().st_size // 4096) for p in out.rglob("*") if p.is_file())
    return blocks, (out / "ranking.json").stat().st_size


@pytest.mark.parametrize("share", [0.0, 0.3, 0.6, 0.9, 1.0])
def test_no_space_left_is_exit_3_and_leaves_no_partial_file(tiny_disk, pages_needed, share):
    """From a disk with room for 2 pages up to one too small by the last file written (ranking.json):
    the run stops at a different file each time, always exit 3 in one line, no ranking.json and no
    temporary file left."""
    pages, ranking_bytes = pages_needed
    size = max(2, int(pages * share)) * 4096 if share < 1 else (pages - -(-ranking_bytes // 4096)) * 4096
    disk = tiny_disk(size)
    result = run(TASK2, *map(str, teams(TASK2)), "--output", str(disk / "out"), *NO_SPACE_ARGUMENTS)
    line = assert_one_line(result, 3)
    assert "No space left on device" in line, line
    assert not (disk / "out" / "ranking.json").exists()
    assert hidden_files(disk / "out") <= {MANIFEST}  # no temporary file, no lock left


# ---- a Dask worker killed mid-run ------------------------------------------------------------------------


@pytest.fixture
def dask_cluster(tmp_path):
    """A scheduler and two single-threaded worker processes without nannies, so that killing a
    worker's process kills the worker."""
    with start_dask_cluster(tmp_path, ROOT, ENV, nanny=False) as cluster:
        yield cluster


def test_a_worker_killed_mid_run_gives_the_same_bytes_or_one_line(dask_cluster, tmp_path):
    address, workers = dask_cluster
    challenge = "hecktor2025-task1"  # its cases go to the workers one by one
    arguments = [challenge, *map(str, teams(challenge)), "--resamples", "200"]
    assert run(*arguments, "--output", str(tmp_path / "one"), "--workers", "1").returncode == 0
    command = subprocess.Popen([sys.executable, "-m", "evaluation.leaderboard", *arguments, "--output",
                                str(tmp_path / "dask"), "--scheduler", address], cwd=ROOT, env=ENV,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed_before_the_end = False
    for line in command.stdout:
        if line.startswith("Scored") and workers[0].poll() is None:  # the other teams' cases in flight
            workers[0].send_signal(signal.SIGKILL)
            workers[0].wait()
            killed_before_the_end = True
    stderr = command.stderr.read()
    command.wait(timeout=600)
    assert killed_before_the_end
    assert "Traceback" not in stderr
    if command.returncode == 0:
        assert output_files(tmp_path / "dask") == output_files(tmp_path / "one")
    else:
        assert command.returncode == 3 and stderr.strip().splitlines()[-1]
        assert not (tmp_path / "dask" / "ranking.json").exists()


# ---- run-leaderboard.sh's environment --------------------------------------------------------------------


def test_the_venv_script_says_installing_only_when_it_installs(tmp_path):
    """scripts/venv.sh (run-leaderboard.sh's) on a real venv whose pins are all installed but whose
    stamp is missing (another requirements file installed them): no "Installing", the stamp written."""
    import venv

    root = tmp_path / "repository"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "venv.sh", root / "scripts" / "venv.sh")
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    pip_version = subprocess.run([str(environment / "bin" / "python"), "-m", "pip", "--version"], capture_output=True,
                                 text=True, check=True).stdout.split()[1]
    (root / "requirements-leaderboard.txt").write_text(f"pip=={pip_version}  # installed with the venv\n")
    command = ["bash", "-c", f'source "{root}/scripts/venv.sh" requirements-leaderboard.txt && echo "python: $PYTHON"']
    env = {**os.environ, "EVALUATION_VENV": str(environment), "EVALUATION_PYTHON": sys.executable, "PIP_NO_INDEX": "1"}
    first = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "Installing" not in first.stdout and "1 pinned packages of requirements-leaderboard.txt are installed" \
        in first.stdout, first.stdout
    assert (environment / ".installed-requirements-leaderboard.txt").is_file()
    (root / "requirements-leaderboard.txt").write_text("pip==0.0.1\n")  # not installed: says so, tries
    second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert "Installing the pinned packages of requirements-leaderboard.txt" in second.stdout
    assert "(1 of 1 not installed" in second.stdout


# ---- links planted where the command writes -----------------------------------------------------------


def regular_files(folder: Path) -> dict[str, bytes]:
    """Every regular file under `folder` (links not followed, not listed), with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()}


# The temporary names an earlier version wrote through (fixed, opened following links), and the
# final names: a link at any of them must neither be written through nor stay in place of an output.
PLANTED = [".ranking.json.partial", ".report.html.partial", ".ranking-c_index.csv.partial",
           ".leaderboard-outputs.json.partial", "submissions/team-a/.metrics.json.partial", "ranking.json",
           "ranking-c_index.csv", "submissions/team-a/metrics.json"]


def test_links_planted_at_the_names_it_writes_lead_nowhere(tmp_path):
    arguments = [TASK2, *map(str, teams(TASK2)), "--resamples", "20", "--workers", "1"]
    clean = tmp_path / "clean"
    assert run(*arguments, "--output", str(clean)).returncode == 0
    elsewhere, out = tmp_path / "elsewhere", tmp_path / "out"
    elsewhere.mkdir()
    for index, name in enumerate(PLANTED):
        (elsewhere / f"file-{index}").write_text(f"mine {index}\n")
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).symlink_to(elsewhere / f"file-{index}")
    before = tree(elsewhere)
    result = run(*arguments, "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert tree(elsewhere) == before  # nothing outside --output written
    for name in ("ranking.json", "ranking-c_index.csv", "submissions/team-a/metrics.json"):
        assert not (out / name).is_symlink()  # replaced by the output, not written through
    assert regular_files(out) == regular_files(clean)
    assert sorted(p.name for p in out.rglob(".*") if p.is_symlink()) == sorted(
        Path(name).name for name in PLANTED if Path(name).name.startswith("."))  # the organizer's links, kept


def test_a_link_refused_leaves_the_earlier_outputs_untouched(tmp_path):
    """The links are checked before anything is replaced: the earlier run's files, ranking.json
    included, are still there, byte for byte."""
    out = tmp_path / "out"
    arguments = [TASK2, *map(str, teams(TASK2)), "--output", str(out), "--resamples", "20", "--workers", "1"]
    assert run(*arguments).returncode == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "submissions" / "team-b").rename(tmp_path / "moved")
    (out / "submissions" / "team-b").symlink_to(elsewhere)
    before = tree(out)
    assert "link" in assert_one_line(run(*arguments), 2)
    assert tree(out) == before and not list(elsewhere.iterdir())


# ---- never into a ground truth ---------------------------------------------------------------------


@pytest.fixture
def repository_copy(tmp_path):
    """This repository's evaluation/ and ground-truth/ copied, to run the command from (its
    ground-truth/ is then the copy's: a regression writes there, never into the real one)."""
    copy = tmp_path / "repository"
    shutil.copytree(ROOT / "evaluation", copy / "evaluation", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "ground-truth", copy / "ground-truth")
    return copy


def run_from(copy: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evaluation.leaderboard", *args], cwd=copy,
                          env={**ENV, "PYTHONPATH": str(copy)}, capture_output=True, text=True, timeout=600)


TASK3 = "hecktor2025-task3"


@pytest.mark.parametrize("where", ["the challenge's", "inside the challenge's", "all of them", "the repository",
                                   "through a link", "the --ground-truth given", "scored, the challenge's"])
def test_an_output_in_a_ground_truth_is_refused_in_both_modes(tmp_path, repository_copy, where):
    """--metrics reads no ground truth, yet an output in one (export.sh would ship the files,
    and every later evaluation of it fails) is refused as in the scoring mode: exit 2, nothing
    written anywhere."""
    metrics = []
    for name, value in (("a", 0.6), ("b", 0.7)):
        (tmp_path / "teams" / name).mkdir(parents=True)
        (tmp_path / "teams" / name / "metrics.json").write_text(json.dumps(
            {"aggregates": {"balanced_accuracy": value, "specificity": value}}))
        metrics.append(str(tmp_path / "teams" / name))
    own = tmp_path / "my-ground-truth"
    shutil.copytree(ROOT / "ground-truth" / TASK3, own)
    (tmp_path / "link").symlink_to(repository_copy / "ground-truth" / TASK3)
    truth = repository_copy / "ground-truth"
    output, arguments = {
        "the challenge's": (truth / TASK3, ["--metrics", *metrics]),
        "inside the challenge's": (truth / TASK3 / "ranking", ["--metrics", *metrics]),
        "all of them": (truth, ["--metrics", *metrics]),
        "the repository": (repository_copy, ["--metrics", *metrics]),
        "through a link": (tmp_path / "link" / "ranking", ["--metrics", *metrics]),
        "the --ground-truth given": (own / "ranking", ["--metrics", *metrics, "--ground-truth", str(own)]),
        "scored, the challenge's": (truth / TASK3, [*map(str, teams(TASK3)), "--ground-truth", str(own)]),
    }[where]
    before = tree(tmp_path)
    result = run_from(repository_copy, TASK3, *arguments, "--output", str(output), "--resamples", "0")
    line = assert_one_line(result, 2)
    assert "--output" in line and "ground" in line, line
    assert tree(tmp_path) == before  # neither ground truth, nor anything else, written


# ---- named pipes ---------------------------------------------------------------------------------------


def test_a_named_pipe_as_metrics_json_is_excluded_without_waiting(tmp_path):
    good, pipe = tmp_path / "good", tmp_path / "pipe"
    good.mkdir()
    pipe.mkdir()
    (good / "metrics.json").write_text('{"aggregates": {"c_index": 0.7}}')
    os.mkfifo(pipe / "metrics.json")  # no writer: opening it for reading would wait for ever
    result = run(TASK2, "--metrics", str(good), str(pipe), "--output", str(tmp_path / "out"), timeout=120)
    assert result.returncode == 0, result.stderr
    ranking = json.loads((tmp_path / "out" / "ranking.json").read_text())
    assert [e["submission"] for e in ranking["leaderboards"][0]["entries"]] == ["good"]
    assert [(e["submission"], e["exit_code"]) for e in ranking["excluded"]] == [("pipe", None)]
    assert "not a regular file" in ranking["excluded"][0]["error"]


@pytest.mark.parametrize("name", [MANIFEST, LOCK])
def test_a_named_pipe_among_its_own_files_does_not_hang(tmp_path, name):
    good = tmp_path / "good"
    good.mkdir()
    (good / "metrics.json").write_text('{"aggregates": {"c_index": 0.7}}')
    (tmp_path / "out").mkdir()
    os.mkfifo(tmp_path / "out" / name)
    result = run(TASK2, "--metrics", str(good), "--output", str(tmp_path / "out"), timeout=120)
    if name == MANIFEST:  # an unreadable list of what the last run wrote: nothing is deleted, the run goes on
        assert result.returncode == 0, result.stderr
    else:
        assert "not a regular file" in assert_one_line(result, 2)
        assert (tmp_path / "out" / name).exists() and not (tmp_path / "out" / "ranking.json").exists()


# ---- SIGTERM, two runs at once, the machine's limits -------------------------------------------------------


@pytest.fixture(scope="module")
def big_task1(tmp_path_factory):
    """Three HECKTOR task 1 teams of 300 cases each (the examples command's synthetic data): a
    run with workers long enough to be stopped in the middle."""
    folder = tmp_path_factory.mktemp("task1")
    made = subprocess.run([sys.executable, "-m", "evaluation.examples", "hecktor2025-task1", "--out",
                           str(folder / "example"), "--cases", "300"], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=600)
    assert made.returncode == 0, made.stderr
    for name in ("team-a", "team-b", "team-c"):
        shutil.copytree(folder / "example" / "input", folder / "teams" / name)
    return folder / "example" / "ground-truth", sorted((folder / "teams").iterdir())


def children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = set()
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            found.add(int(stat_file.parent.name))
    return found


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie, dead but not yet reaped, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.parametrize("moment", ["Scoring", "Statistics"])
def test_sigterm_stops_the_workers_prints_one_line_and_leaves_nothing_partial(big_task1, tmp_path, moment):
    ground_truth, team_folders = big_task1
    out = tmp_path / "out"
    command = subprocess.Popen([sys.executable, "-m", "evaluation.leaderboard", "hecktor2025-task1",
                                *map(str, team_folders), "--ground-truth", str(ground_truth), "--output", str(out),
                                "--workers", "2", "--resamples", "20000"], cwd=ROOT, env=ENV,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in command.stdout:
            if line.startswith(moment):
                break
        deadline = time.monotonic() + 60
        while len(workers := children(command.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(workers) >= 2, "the pool's workers never started"
        command.send_signal(signal.SIGTERM)
        _, stderr = command.communicate(timeout=60)
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    assert command.returncode == 143, stderr
    assert stderr.strip().splitlines()[-1] == STOPPED and "Traceback" not in stderr
    assert not [pid for pid in workers if alive(pid)]  # no worker outlives the command
    assert not (out / "ranking.json").exists()
    assert hidden_files(out) <= {MANIFEST}  # no temporary file, no lock left


def test_a_second_ranking_into_the_same_output_is_refused_while_the_first_runs(big_task1, tmp_path):
    ground_truth, team_folders = big_task1
    arguments = ["hecktor2025-task1", *map(str, team_folders), "--ground-truth", str(ground_truth),
                 "--workers", "1", "--resamples", "50"]
    out = tmp_path / "out"
    first = subprocess.Popen([sys.executable, "-m", "evaluation.leaderboard", *arguments, "--output", str(out)],
                             cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in first.stdout:
            if line.startswith("Scoring"):
                break
        second = run(*arguments, "--output", str(out), timeout=120)
        still_running = first.poll() is None
        _, stderr = first.communicate(timeout=600)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert still_running  # the second one really ran while the first held the folder
    line = assert_one_line(second, 3)
    assert "Another final ranking is writing into" in line, line
    assert first.returncode == 0, stderr
    alone = tmp_path / "alone"
    assert run(*arguments, "--output", str(alone)).returncode == 0
    assert output_files(out) == output_files(alone)  # the first run's files only, none mixed in
    assert not (out / LOCK).exists()


FILE_LIMITS = [8, 12, 16, 24, 32, 48]


@pytest.mark.parametrize("limit", FILE_LIMITS)
def test_too_few_file_descriptors_is_the_machines_limit(tmp_path, limit):
    """Under `ulimit -n`: the ranking is written (exit 0), or exit 3 saying the machine ran out
    of file descriptors: never exit 4, never an excluded team, never a hang."""
    import resource

    def few_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "evaluation.leaderboard", "hecktor2025-task1",
                             *map(str, valid_teams("hecktor2025-task1")), "--output", str(out), "--workers", "2",
                             "--resamples", "50"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300,
                            preexec_fn=few_files)
    if result.returncode == 0:
        assert json.loads((out / "ranking.json").read_text())["excluded"] == []
    else:
        line = assert_one_line(result, 3)
        assert f"ran out of file descriptors under this machine's limit ({limit} open files" in line, line
        assert not (out / "ranking.json").exists()


def test_a_cluster_that_loses_every_worker_is_exit_3_in_bounded_time(dask_cluster, tmp_path):
    """Both workers killed by pid once the command is connected: the units wait for workers that
    never come; after Dask's no-workers-timeout (set here to 3 s for the command only) the run
    stops with exit 3 and a line saying so."""
    address, workers = dask_cluster
    command = subprocess.Popen([sys.executable, "-m", "evaluation.leaderboard", "hecktor2025-task1",
                                *map(str, teams("hecktor2025-task1")), "--resamples", "0", "--output",
                                str(tmp_path / "out"), "--scheduler", address], cwd=ROOT,
                               env={**ENV, "DASK_DISTRIBUTED__SCHEDULER__NO_WORKERS_TIMEOUT": "3s"},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in command.stdout:
            if line.startswith("Dask cluster"):
                for worker in workers:
                    worker.send_signal(signal.SIGKILL)
                for worker in workers:
                    worker.wait()
                break
        started = time.monotonic()
        stdout, stderr = command.communicate(timeout=120)
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    line = assert_one_line(subprocess.CompletedProcess(command.args, command.returncode, stdout, stderr), 3)
    assert f"The Dask cluster {address} lost its workers: none for 3 s" in line, line
    assert time.monotonic() - started < 60
    assert not (tmp_path / "out" / "ranking.json").exists()
