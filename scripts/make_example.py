"""Regenerate ALL of a challenge's bundled example files, the one command for them:
ground-truth/<challenge>/, test/<challenge>/input/, test/<challenge>/expected_metrics.json, the
invalid submissions under test/<challenge>/invalid/ and the final ranking's teams under
test/<challenge>/leaderboard/ (when its Example declares a lineup).

    python scripts/make_example.py rare26 [--force]

The ground truth and the valid submission are the synthetic ones (`synthesize`, seed 0); the
test/<challenge>/ part is written by the organizer command's driver (evaluation/examples/
organizer.py) with the challenge's bundled `invalid_examples`, and the teams by
evaluation/examples/leaderboard_teams.py from them. An existing ground-truth/<challenge>/ or
test/<challenge>/ example is refused unless --force, which replaces each of those folders and
files whole: a file an earlier version wrote there and this one does not (an invalid submission
or a team since renamed) is removed. Any other file in test/<challenge>/ stays.

expected_metrics.json is what this version writes; tests/test_examples.py checks it against an
independent computation, and ./test.sh checks the image reproduces it byte for byte. To make an
example for your own ground truth instead: python -m evaluation.examples CHALLENGE
--ground-truth DIR --output DIR.
"""

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation import examples  # noqa: E402
from evaluation.errors import UsageError  # noqa: E402
from evaluation.examples.organizer import LEADERBOARD, OUTPUTS, write_bundled_example  # noqa: E402
from evaluation.launch import run_command  # noqa: E402


def outputs(challenge: str) -> tuple[str, ...]:
    """What this script writes in test/<challenge>/."""
    return (*OUTPUTS, LEADERBOARD) if examples.example(challenge).lineup is not None else OUTPUTS


def main(challenge: str, force: bool = False, root: Path = ROOT) -> None:
    example = root / "test" / challenge
    ground_truth = root / "ground-truth" / challenge
    names = outputs(challenge)
    existing = [str(path.relative_to(root)) for path in (ground_truth, *(example / name for name in names))
                if os.path.lexists(path)]
    if existing and not force:
        raise UsageError(f"{', '.join(existing)} already exist(s); rerun with --force to replace "
                         f"ground-truth/{challenge}/ and test/{challenge}/'s {', '.join(names)}.")
    write_bundled_example(challenge, ground_truth, example)  # --force: replaces them, each whole


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description="Regenerate ALL of a challenge's bundled example files (synthetic, seed 0): ground-truth/"
                    "<challenge>/ and test/<challenge>/'s input/, expected_metrics.json, invalid/ and leaderboard/ "
                    "(the final ranking's teams). With --force each is replaced whole, so stale files (an invalid "
                    "submission or a team an earlier version wrote) are removed; any other file in "
                    "test/<challenge>/ stays.")
    parser.add_argument("challenge", choices=sorted(examples.examples()))
    parser.add_argument("--force", action="store_true", help="replace an existing ground-truth/<challenge>/ and "
                                                             "test/<challenge>/ example, teams included")
    args = parser.parse_args()
    sys.exit(run_command(lambda _: main(args.challenge, args.force), failed="The example could not be made:"))
