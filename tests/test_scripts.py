"""The shell helpers organizers run (scripts/docker-common.sh), run for real with bash and tar."""

import os
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def archive(folder: Path, target: Path) -> subprocess.CompletedProcess:
    script = f'script_name=test; source scripts/docker-common.sh; make_ground_truth_archive "$1" "$2"'
    return subprocess.run(["bash", "-c", script, "bash", str(folder), str(target)], cwd=ROOT,
                          capture_output=True, text=True)


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_ground_truth_archive_holds_the_folder_contents_at_its_root(tmp_path):
    truth = tmp_path / "truth"
    (truth / "masks").mkdir(parents=True)
    (truth / "labels.csv").write_text("case,label\na,1\n")
    (truth / "config.json").write_text('{"seed": 3}\n')
    (truth / "case-mapping.json").write_text('{"x.mha": "a"}\n')
    (truth / "masks" / "a.mha").write_bytes(os.urandom(1000))
    result = archive(truth, tmp_path / "gt.tar.gz")
    assert result.returncode == 0, result.stderr
    with tarfile.open(tmp_path / "gt.tar.gz") as tar:
        members = tar.getmembers()
        assert all(m.uid == 0 and m.gid == 0 and m.mtime == 0 for m in members)
        assert all(not m.name.lstrip("./").startswith("truth") for m in members)  # no top folder
        tar.extractall(tmp_path / "unpacked", filter="data")
    assert files_of(tmp_path / "unpacked") == files_of(truth)


def test_ground_truth_archive_is_the_same_bytes_for_the_same_files(tmp_path):
    truth = tmp_path / "truth"
    truth.mkdir()
    for name in ("b.json", "a.json", "c.json"):
        (truth / name).write_text(name)
    assert archive(truth, tmp_path / "1.tar.gz").returncode == 0
    for path in truth.iterdir():
        os.utime(path, (1e9, 1e9))
    assert archive(truth, tmp_path / "2.tar.gz").returncode == 0
    assert (tmp_path / "1.tar.gz").read_bytes() == (tmp_path / "2.tar.gz").read_bytes()


def test_ground_truth_archive_of_a_missing_folder_is_one_line(tmp_path):
    result = archive(tmp_path / "nowhere", tmp_path / "gt.tar.gz")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"test: no ground-truth folder {tmp_path / 'nowhere'}"]
    assert not (tmp_path / "gt.tar.gz").exists()
