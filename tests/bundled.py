"""Whether ground-truth/<challenge>/ is still the synthetic one this repository ships.

An organizer replaces a challenge's ground truth and regenerates its examples (README, "For
organizers": `python -m evaluation.examples CHALLENGE --ground-truth ground-truth/CHALLENGE
--output test/CHALLENGE --force`, which also regenerates test/CHALLENGE/leaderboard/). The tests
of the bundled examples read what sits in test/<challenge>/ and pass on their data too; the few
that pin facts of the synthetic data (the synthetic generators reproduce the bundled files byte
for byte; the exact lines of the hostile suite, which quote its case ids) run only while the
ground truth is the shipped one, recognised by the digest recorded in
tests/fixtures/bundled_ground_truth.json (`python -m tests.bundled --record` rewrites it after the
synthetic data itself is regenerated on purpose). A challenge with no recorded digest (a new
folder) needs no entry: its ground truth and test/<challenge>/input/ are compared with a fresh
synthesis (`Example.synthesize`, seed 0, what scripts/make_example.py writes), so an example made
with the organizer command instead is simply not the synthetic one."""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DIGESTS = ROOT / "tests" / "fixtures" / "bundled_ground_truth.json"


def ground_truth_digest(challenge: str) -> str:
    """SHA-256 over the relative paths and bytes of ground-truth/<challenge>/'s files."""
    return folder_digest(ROOT / "ground-truth" / challenge)


def folder_digest(folder: Path) -> str:
    """SHA-256 over the relative paths and bytes of a folder's files."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@functools.cache
def _synthetic_digests(challenge: str) -> tuple[str, str]:
    """(ground truth, input) digests of the challenge's synthetic example, seed 0."""
    import tempfile

    from evaluation.examples import synthesize

    with tempfile.TemporaryDirectory(prefix=f"bundled-{challenge}-") as folder:
        synthesize(challenge, Path(folder), seed=0)
        return folder_digest(Path(folder) / "ground-truth"), folder_digest(Path(folder) / "input")


@functools.cache
def is_bundled(challenge: str) -> bool:
    """True while ground-truth/<challenge>/ is the shipped synthetic one: its recorded digest, or,
    for a challenge with none, the digest of a fresh synthesis (ground truth and test input)."""
    recorded = json.loads(DIGESTS.read_text()).get(challenge)
    if recorded is not None:
        return recorded == ground_truth_digest(challenge)
    truth, submission = _synthetic_digests(challenge)
    return (truth == ground_truth_digest(challenge)
            and submission == folder_digest(ROOT / "test" / challenge / "input"))


def skip_unless_bundled(challenge: str) -> None:
    import pytest

    if not is_bundled(challenge):
        pytest.skip(f"ground-truth/{challenge}/ is not the bundled synthetic one (replaced by the organizer): "
                    f"this test checks facts of the synthetic data")


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python -m tests.bundled --record")
    from evaluation.challenges import available_challenges

    DIGESTS.write_text(json.dumps({c: ground_truth_digest(c) for c in sorted(available_challenges())}, indent=1)
                       + "\n")
    print(f"wrote {DIGESTS}")
