"""`python -m evaluation.phase CHALLENGE --ground-truth DIR --pack PACK` on packs that are not what
they should be, through the real command in a subprocess (a hang fails its test by its timeout):
zips written byte by byte (a bomb, a bad CRC, an encrypted member, an unknown compression method,
a corrupt deflate stream, too many members, a zip64 end record), text that is not UTF-8 or JSON
nested 200,000 deep, a named pipe and character devices, links leading out of an unpacked pack,
slugs that are not the platform's, and two entries where one was expected. Each is exit 3 with
one line naming the pack and what is wrong, config.json untouched; never exit 4, never a hang.

The evaluation's side of two entries (a socket listed twice in one job of /input/predictions.json)
is run through `python -m evaluation` the same way."""

from __future__ import annotations

import functools
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import common
from tests.cli_runs import DROP_ENV, ROOT, limit_data, run_command_line
from tests.phase_packs import PACK_PREDICTIONS, forge_socket, job, pack_files, write_pack_folder, write_pack_zip

CHALLENGE = "hecktor2025-task2"
INTERFACE = {"inputs": [forge_socket("ct", "Image")], "outputs": [forge_socket("rfs-risk", "Float")]}
TIMEOUT = 120  # seconds: a command that hangs fails its test, not the suite
DATA_LIMIT = 256 << 20  # the command sets sockets in ~100 MB; a bomb inflated would need gigabytes


def run_phase(pack, ground_truth, *, memory_limit: int | None = None) -> subprocess.CompletedProcess:
    env = {name: value for name, value in os.environ.items() if name not in DROP_ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    preexec = None if memory_limit is None else functools.partial(limit_data, memory_limit)
    return subprocess.run([sys.executable, "-m", "evaluation.phase", CHALLENGE, "--ground-truth", str(ground_truth),
                           "--pack", str(pack)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, preexec_fn=preexec)


@pytest.fixture
def ground_truth(tmp_path) -> Path:
    target = tmp_path / "ground-truth"
    shutil.copytree(ROOT / "ground-truth" / CHALLENGE, target)
    (target / "config.json").write_text('{"seed": 7}\n')
    return target


def refused(done, ground_truth, *words: str) -> str:
    """Exit 3, one stderr line (no traceback) of the --pack wording holding `words`, and the
    ground truth's config.json as it was."""
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    line = common.last_line(done.stderr)
    assert line.startswith("The phase's sockets could not be set: "), line
    for word in words:
        assert word in line, line
    assert len(line) < 1024
    assert (ground_truth / "config.json").read_text() == '{"seed": 7}\n'
    return line


# ---- zips written byte by byte ------------------------------------------------------------------


@dataclass
class Member:
    """One zip member as written: its name, the bytes stored, and what the headers declare."""

    name: str
    stored: bytes
    method: int = 0  # 0 stored, 8 deflate
    crc: int | None = None  # None: the CRC of `stored` (right for a stored member)
    size: int | None = None  # the declared inflated size; None: len(stored)
    flags: int = 0


def raw_zip(members: list[Member], *, zip64: bool = False, declared_members: int | None = None) -> bytes:
    """A zip from its local headers, central directory and end record (with a zip64 end record
    and locator before it when `zip64`), every field as the format lays it out."""
    body, directory = bytearray(), bytearray()
    for member in members:
        name = member.name.encode()
        crc = zlib.crc32(member.stored) if member.crc is None else member.crc
        size = len(member.stored) if member.size is None else member.size
        offset = len(body)
        body += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, member.flags, member.method, 0, 0x21, crc,
                            len(member.stored), size, len(name), 0) + name + member.stored
        directory += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, member.flags, member.method, 0, 0x21, crc,
                                 len(member.stored), size, len(name), 0, 0, 0, 0, 0, offset) + name
    count = len(members) if declared_members is None else declared_members
    start = len(body)
    if zip64:
        end = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, len(directory), start)
        end += struct.pack("<IIQI", 0x07064B50, 0, start + len(directory), 1)
        end += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    else:
        end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, min(count, 0xFFFF), min(count, 0xFFFF), len(directory),
                          start, 0)
    return bytes(body + directory + end)


def deflated(*chunks: bytes, repeat: int = 1) -> bytes:
    """A raw deflate stream (the zip's method 8) of the chunks, the middle one repeated."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    first, middle, last = chunks
    out = [compressor.compress(first)]
    out += [compressor.compress(middle) for _ in range(repeat)]
    return b"".join(out + [compressor.compress(last), compressor.flush()])


def pack_predictions(**options) -> bytes:
    return pack_files([INTERFACE], **options)[PACK_PREDICTIONS]


def test_the_byte_by_byte_zip_is_a_pack_the_command_reads(ground_truth, tmp_path):
    """The writer of this file makes real zips: the platform's pack through it, stored or deflated,
    with a classic or a zip64 end record, sets the sockets."""
    for number, (method, zip64) in enumerate([(0, False), (8, False), (0, True), (8, True)]):
        (ground_truth / "config.json").write_text('{"seed": 7}\n')
        data = pack_predictions()
        stored = data if method == 0 else deflated(b"", data, b"")
        pack = tmp_path / f"kit-{number}.zip"
        pack.write_bytes(raw_zip([Member("README.md", b"# pack\n"),
                                  Member(PACK_PREDICTIONS, stored, method, zlib.crc32(data), len(data))], zip64=zip64))
        done = run_phase(pack, ground_truth)
        assert done.returncode == 0, done.stderr
        assert json.loads((ground_truth / "config.json").read_text()) == {"seed": 7, "output_socket": "rfs-risk",
                                                                           "input_socket": "ct"}


def test_a_bomb_is_refused_unread_by_its_declared_size(ground_truth, tmp_path):
    """The issue's bomb: 300 KB of deflate inflating to 300 MiB of `{},`, declared as such."""
    stream = deflated(b"[", b"{}," * (1 << 20), b"{}]", repeat=100)
    size = 3 * (1 << 20) * 100 + 4
    pack = tmp_path / "bomb.zip"
    pack.write_bytes(raw_zip([Member(PACK_PREDICTIONS, stream, 8, 0, size)]))
    assert pack.stat().st_size < 400_000
    line = refused(run_phase(pack, ground_truth, memory_limit=DATA_LIMIT), ground_truth,
                   f"The phase pack {pack}: its {PACK_PREDICTIONS} has 300.0 MiB, more than the 8.0 MiB a phase "
                   f"pack's predictions.json can have.")
    assert "memory" not in line


def test_a_bomb_declaring_a_small_size_is_read_no_further(ground_truth, tmp_path):
    """The same stream declared as 4 kB: inflated no further than that, its CRC then fails."""
    stream = deflated(b"[", b"{}," * (1 << 20), b"{}]", repeat=100)
    pack = tmp_path / "bomb.zip"
    pack.write_bytes(raw_zip([Member(PACK_PREDICTIONS, stream, 8, 0x12345678, 4096)]))
    refused(run_phase(pack, ground_truth, memory_limit=DATA_LIMIT), ground_truth,
            f"its {PACK_PREDICTIONS} cannot be read: the zip is damaged (its checksum does not match its content).")


@pytest.mark.parametrize("member, words", [
    (Member(PACK_PREDICTIONS, b"[]", crc=0xDEADBEEF),
     "cannot be read: the zip is damaged (its checksum does not match its content)."),
    (Member(PACK_PREDICTIONS, b"\x00" * 40, flags=0x1),
     "is encrypted; use the pack as the phase's page gives it."),
    (Member(PACK_PREDICTIONS, b"[]", method=99),
     "is compressed with method 99, which cannot be read here (only stored, deflate, bzip2, LZMA)"),
    (Member(PACK_PREDICTIONS, b"\xff" * 64, method=8, size=100),
     "cannot be read: the zip is damaged (its compressed data is corrupt or cut short)."),
    (Member(PACK_PREDICTIONS, deflated(b"[", b"{}", b"]")[:3], method=8, crc=zlib.crc32(b"[{}]"), size=4),
     "cannot be read: the zip is damaged (its checksum does not match its content)."),
], ids=["bad-crc", "encrypted", "unknown-method", "corrupt-deflate", "cut-deflate"])
def test_a_member_that_cannot_be_read_is_one_line(member, words, ground_truth, tmp_path):
    pack = tmp_path / "kit.zip"
    pack.write_bytes(raw_zip([Member("README.md", b"# pack\n"), member]))
    refused(run_phase(pack, ground_truth), ground_truth, f"The phase pack {pack}: its {PACK_PREDICTIONS} {words}")


@pytest.mark.parametrize("content, words", [
    (b"[\xff\xfe]", "is not UTF-8 text (byte 2 cannot be decoded)."),
    (b"[" * 200_000 + b"]" * 200_000, "is nested too deeply to be read."),
    (b'[{"pk": "a", "pk": "b"}]', 'gives the key "pk" twice in one object.'),
    (b"[1, 2", "is not valid JSON (Expecting ',' delimiter at line 1 column 6)."),
], ids=["not-utf-8", "nested-200000-deep", "key-twice", "cut"])
def test_a_predictions_json_that_cannot_be_parsed_is_one_line(content, words, ground_truth, tmp_path):
    pack = tmp_path / "kit.zip"
    pack.write_bytes(raw_zip([Member(PACK_PREDICTIONS, content)]))
    refused(run_phase(pack, ground_truth), ground_truth,
            f"The phase pack's predictions.json ({pack}:{PACK_PREDICTIONS}) {words}")
    folder = tmp_path / "unpacked"
    (folder / PACK_PREDICTIONS).parent.mkdir(parents=True)
    (folder / PACK_PREDICTIONS).write_bytes(content)
    refused(run_phase(folder, ground_truth), ground_truth,
            f"The phase pack's predictions.json ({folder}/{PACK_PREDICTIONS}) {words}")


def test_too_many_members_are_refused_before_the_directory_is_read(ground_truth, tmp_path):
    """An end record declaring a billion members (zip64) or 50,001 real ones: refused by count."""
    pack = tmp_path / "many.zip"
    pack.write_bytes(raw_zip([Member(PACK_PREDICTIONS, pack_predictions())], zip64=True, declared_members=10**9))
    refused(run_phase(pack, ground_truth, memory_limit=DATA_LIMIT), ground_truth,
            f"{pack} is not a phase pack: its zip lists 1000000000 files")
    pack.write_bytes(raw_zip([Member(f"f{n}", b"") for n in range(50_001)]
                             + [Member(PACK_PREDICTIONS, pack_predictions())], zip64=True))
    refused(run_phase(pack, ground_truth), ground_truth, f"{pack} is not a phase pack: its zip lists 50002 files")


def test_a_directory_too_large_is_refused(ground_truth, tmp_path):
    """40,000 members of 250-character names: 11 MiB of central directory."""
    pack = tmp_path / "names.zip"
    pack.write_bytes(raw_zip([Member(f"{n:06d}" + "n" * 244, b"") for n in range(40_000)]
                             + [Member(PACK_PREDICTIONS, pack_predictions())]))
    refused(run_phase(pack, ground_truth), ground_truth, f"{pack} is not a phase pack: its zip lists 40001 files "
                                                         f"(11.3 MiB of names), more than the 50000 (8.0 MiB)")


def test_a_damaged_directory_and_not_a_zip(ground_truth, tmp_path):
    pack = tmp_path / "kit.zip"
    good = raw_zip([Member(PACK_PREDICTIONS, pack_predictions())])
    directory = good.index(b"PK\x01\x02")
    pack.write_bytes(good[:directory] + b"XX" + good[directory + 2:])
    refused(run_phase(pack, ground_truth), ground_truth, f"{pack} is a damaged zip: its list of files cannot be read")
    pack.write_bytes(b"PK\x03\x04 but nothing more")
    refused(run_phase(pack, ground_truth), ground_truth,
            f"{pack} is neither a phase pack's zip nor its unpacked folder.")


def test_an_oversized_unpacked_predictions_json_is_refused_unread(ground_truth, tmp_path):
    folder = write_pack_folder(tmp_path / "kit", [INTERFACE])
    with open(folder / PACK_PREDICTIONS, "r+b") as handle:
        handle.truncate(9 << 20)  # sparse: nine MiB that take no disk
    refused(run_phase(folder, ground_truth, memory_limit=DATA_LIMIT), ground_truth,
            f"The phase pack {folder}: {PACK_PREDICTIONS} has 9.0 MiB, more than the 8.0 MiB allowed.")


# ---- what is not a file, and links --------------------------------------------------------------


def test_a_named_pipe_as_the_pack_is_refused_without_waiting(ground_truth, tmp_path):
    fifo = tmp_path / "kit.zip"
    os.mkfifo(fifo)
    refused(run_phase(fifo, ground_truth), ground_truth,
            f"The phase pack {fifo} is neither a file nor a folder (a named pipe, a device or a socket)")


def test_a_named_pipe_inside_an_unpacked_pack_is_refused_without_waiting(ground_truth, tmp_path):
    folder = write_pack_folder(tmp_path / "kit", [INTERFACE])
    (folder / PACK_PREDICTIONS).unlink()
    os.mkfifo(folder / PACK_PREDICTIONS)
    writer = threading.Timer(TIMEOUT / 2, lambda: open(folder / PACK_PREDICTIONS, "wb").close())  # unblocks a hang
    writer.start()
    try:
        refused(run_phase(folder, ground_truth), ground_truth,
                f"The phase pack {folder}: {PACK_PREDICTIONS} is not a regular file.")
    finally:
        writer.cancel()


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_character_device_is_refused_unread(device, ground_truth, tmp_path):
    refused(run_phase(device, ground_truth, memory_limit=DATA_LIMIT), ground_truth,
            f"The phase pack {device} is neither a file nor a folder")
    folder = write_pack_folder(tmp_path / "kit", [INTERFACE])  # inside the pack, by a link: it leads out
    (folder / PACK_PREDICTIONS).unlink()
    (folder / PACK_PREDICTIONS).symlink_to(device)
    refused(run_phase(folder, ground_truth, memory_limit=DATA_LIMIT), ground_truth,
            f"The phase pack {folder}: {PACK_PREDICTIONS} is a link that leads out of the phase pack.")


def test_links_leading_out_of_an_unpacked_pack_are_refused(ground_truth, tmp_path):
    """Every other reading of the toolkit refuses a link out of its folder; so does the pack's."""
    outside = write_pack_folder(tmp_path / "elsewhere", [INTERFACE])
    folder = tmp_path / "kit"
    folder.mkdir()
    (folder / "example_evaluation_method").symlink_to(outside / "example_evaluation_method")
    refused(run_phase(folder, ground_truth), ground_truth,
            f"The phase pack {folder}: {PACK_PREDICTIONS} is a link that leads out of the phase pack.")
    (folder / "example_evaluation_method").unlink()
    (folder / PACK_PREDICTIONS).parent.mkdir(parents=True)
    (folder / PACK_PREDICTIONS).symlink_to(outside / PACK_PREDICTIONS)
    refused(run_phase(folder, ground_truth), ground_truth, "is a link that leads out of the phase pack.")
    # A link staying inside the pack is followed, as everywhere else.
    (folder / PACK_PREDICTIONS).unlink()
    (folder / "copy.json").write_bytes((outside / PACK_PREDICTIONS).read_bytes())
    (folder / PACK_PREDICTIONS).symlink_to(folder / "copy.json")
    done = run_phase(folder, ground_truth)
    assert done.returncode == 0, done.stderr
    assert json.loads((ground_truth / "config.json").read_text())["output_socket"] == "rfs-risk"


# ---- slugs and two entries -----------------------------------------------------------------------


def hostile_pack(tmp_path, jobs: list[dict]) -> Path:
    return write_pack_zip(tmp_path / "kit.zip", [INTERFACE], jobs=jobs)


@pytest.mark.parametrize("slug, shown", [
    ("../../x", '"../../x"'),
    ("rfs\nrisk", '"rfs\\nrisk"'),
    ("RFS-Risk", '"RFS-Risk"'),
    ("r" * 51, '"' + "r" * 36 + "..."),
    ("r" * 5_000_000, '"' + "r" * 36 + "..."),
    ("", None),
], ids=["dot-dot", "newline", "uppercase", "51-characters", "5-MB", "empty"])
def test_a_slug_that_is_not_the_platforms_is_refused(slug, shown, ground_truth, tmp_path):
    """Slugs are written to config.json and printed: the platform's are Django slugs of at most 50
    characters; anything else is not a pack the platform made."""
    one = job({"inputs": [forge_socket("ct", "Image")], "outputs": [forge_socket("rfs-risk", "Float")]})
    one["outputs"][0]["socket"]["slug"] = slug
    done = run_phase(hostile_pack(tmp_path, [one]), ground_truth)
    refused(done, ground_truth, f"The phase pack's predictions.json: output 0 of job 0 has the socket slug {shown}, "
                                f"which is not a grand-challenge.org slug (1 to 50 lowercase letters, digits, hyphens "
                                f"or underscores)." if shown else "output 0 of job 0 has no socket with a slug.")
    assert done.stdout == "" and len(done.stderr) < 1024


def test_the_platforms_slugs_are_taken(ground_truth, tmp_path):
    """Underscores and 50 characters are the platform's (slugify keeps underscores; a SlugField
    holds 50)."""
    output = "rfs_risk-" + "r" * 41
    interface = {"inputs": [forge_socket("ct_image-2", "Image")], "outputs": [forge_socket(output, "Float")]}
    done = run_phase(write_pack_zip(tmp_path / "kit.zip", [interface]), ground_truth)
    assert done.returncode == 0, done.stderr
    assert json.loads((ground_truth / "config.json").read_text()) == {"seed": 7, "output_socket": output,
                                                                       "input_socket": "ct_image-2"}


def test_a_socket_listed_twice_in_a_job_is_refused(ground_truth, tmp_path):
    one = job({"inputs": [forge_socket("ct", "Image")],
               "outputs": [forge_socket("rfs-risk", "Float"), forge_socket("rfs-risk", "Bool")]})
    refused(run_phase(hostile_pack(tmp_path, [one]), ground_truth), ground_truth,
            "The phase pack's predictions.json: job 0 lists the output rfs-risk twice.")


def test_jobs_of_one_interface_must_agree(ground_truth, tmp_path):
    """Two jobs with the same inputs are one interface: their outputs cannot differ (before, the
    first job's were kept silently)."""
    jobs = [job({"inputs": [forge_socket("ct", "Image")], "outputs": [forge_socket("rfs-risk", "Float")]}),
            job({"inputs": [forge_socket("ct", "Image")], "outputs": [forge_socket("rfs", "Float")]})]
    refused(run_phase(hostile_pack(tmp_path, jobs), ground_truth), ground_truth,
            "jobs 0 and 1 have the same inputs (ct) but different outputs (rfs-risk; rfs).")


def test_two_predictions_json_in_one_pack_are_refused(ground_truth, tmp_path):
    data = pack_predictions()
    pack = tmp_path / "kit.zip"
    pack.write_bytes(raw_zip([Member(PACK_PREDICTIONS, data), Member(PACK_PREDICTIONS, b"[]")]))
    refused(run_phase(pack, ground_truth), ground_truth, "holds the same name twice predictions.json")
    pack.write_bytes(raw_zip([Member(PACK_PREDICTIONS, data), Member(f"kit/{PACK_PREDICTIONS}", data)]))
    refused(run_phase(pack, ground_truth), ground_truth,
            f"holds several predictions.json ({PACK_PREDICTIONS}, kit/{PACK_PREDICTIONS}); a pack has one.")
    folder = write_pack_folder(tmp_path / "unpacked", [INTERFACE])
    write_pack_folder(folder / "kit", [INTERFACE])
    refused(run_phase(folder, ground_truth), ground_truth,
            f"holds 2 phase packs' predictions.json ({PACK_PREDICTIONS}, kit/{PACK_PREDICTIONS})")


# ---- the evaluation: a socket given twice in one job ---------------------------------------------


def test_a_socket_listed_twice_in_a_job_of_the_platforms_predictions_json(tmp_path):
    """Which of two entries of one socket to read cannot be told: the platform's file is refused
    (exit 3), where the last one was read silently."""
    shutil.copytree(ROOT / "test" / CHALLENGE / "input", tmp_path / "input")
    path = tmp_path / "input" / "predictions.json"
    jobs = json.loads(path.read_text())
    jobs[1]["outputs"].append(json.loads(json.dumps(jobs[1]["outputs"][0])))
    jobs[1]["outputs"][-1]["value"] = 0.0
    path.write_text(json.dumps(jobs))
    run = run_command_line(CHALLENGE, tmp_path / "input", ROOT / "ground-truth" / CHALLENGE, tmp_path / "out",
                           timeout=TIMEOUT)
    assert (run.code, run.wrote_metrics) == (3, False), run.stderr
    slug = jobs[1]["outputs"][0]["socket"]["slug"]
    assert (f"predictions.json: job {jobs[1]['pk']} lists the output socket \"{slug}\" twice."
            in run.last_error_line)
