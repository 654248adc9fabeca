"""The shell helpers organizers run (scripts/docker-common.sh), run for real with bash and tar."""

import os
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def archive(folder: Path, target: Path) -> subprocess.CompletedProcess:
    script = 'script_name=test; source scripts/docker-common.sh; make_ground_truth_archive "$1" "$2"'
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


def test_ground_truth_archive_stores_the_content_of_a_link_inside_the_folder(tmp_path):
    """A link to a file of the folder is stored as that file (a link would name a path of the
    organizer's machine, which the uploaded ground truth does not have)."""
    truth = tmp_path / "truth"
    (truth / "shared").mkdir(parents=True)
    (truth / "shared" / "labels.csv").write_text("case,label\na,1\n")
    os.symlink(truth / "shared" / "labels.csv", truth / "absolute.csv")  # as `ln -s "$PWD/..."` makes it
    os.symlink("shared/labels.csv", truth / "relative.csv")
    result = archive(truth, tmp_path / "gt.tar.gz")
    assert result.returncode == 0, result.stderr
    with tarfile.open(tmp_path / "gt.tar.gz") as tar:
        members = {m.name.removeprefix("./"): m for m in tar.getmembers()}
        assert members["absolute.csv"].isfile() and members["relative.csv"].isfile()
        assert not any(m.issym() or m.islnk() for m in members.values())
        tar.extractall(tmp_path / "unpacked", filter="data")
    unpacked = tmp_path / "unpacked"
    for name in ("absolute.csv", "relative.csv", "shared/labels.csv"):
        assert not (unpacked / name).is_symlink()
        assert (unpacked / name).read_text() == "case,label\na,1\n"


def _refused(tmp_path, make, expected: str):
    truth = tmp_path / "truth"
    truth.mkdir()
    (truth / "labels.csv").write_text("case,label\na,1\n")
    entry = make(truth, tmp_path)
    result = archive(truth, tmp_path / "gt.tar.gz")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"test: {truth}/{entry} {expected}"]
    elsewhere = ["elsewhere.csv"] if (tmp_path / "elsewhere.csv").exists() else []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["truth", *elsewhere])


def test_ground_truth_archive_refuses_a_link_out_of_the_folder(tmp_path):
    def make(truth, base):
        (base / "elsewhere.csv").write_text("secret\n")
        os.symlink(base / "elsewhere.csv", truth / "out.csv")
        return "out.csv"
    _refused(tmp_path, make, f"is a link that leads out of {tmp_path / 'truth'}: copy the file into "
                             f"{tmp_path / 'truth'} instead")


def test_ground_truth_archive_refuses_a_link_out_through_dot_dot(tmp_path):
    def make(truth, base):
        (base / "elsewhere.csv").write_text("secret\n")
        os.symlink("../elsewhere.csv", truth / "up.csv")
        return "up.csv"
    _refused(tmp_path, make, f"is a link that leads out of {tmp_path / 'truth'}: copy the file into "
                             f"{tmp_path / 'truth'} instead")


def test_ground_truth_archive_refuses_a_dangling_link(tmp_path):
    def make(truth, base):
        os.symlink("gone.csv", truth / "dangling.csv")
        return "dangling.csv"
    _refused(tmp_path, make, "is a link to nothing: replace it by the file")


def test_ground_truth_archive_refuses_a_link_to_a_folder(tmp_path):
    def make(truth, base):
        (truth / "masks").mkdir()
        (truth / "masks" / "a.mha").write_bytes(b"x")
        os.symlink("masks", truth / "again")
        return "again"
    _refused(tmp_path, make, f"is a link to a folder: put the files themselves in {tmp_path / 'truth'}")


def test_ground_truth_archive_refuses_a_named_pipe(tmp_path):
    def make(truth, base):
        os.mkfifo(truth / "0001_label.h5")
        return "0001_label.h5"
    _refused(tmp_path, make, "is neither a file nor a folder (a named pipe, a socket or a device)")
