"""Regenerate a challenge's bundled example: ground-truth/<challenge>/, test/<challenge>/input/,
test/<challenge>/expected_metrics.json and the invalid submissions under test/<challenge>/invalid/.

    python scripts/make_example.py rare26 [--force]

The ground truth and the valid submission are the synthetic ones (`synthesize`, seed 0); the
test/<challenge>/ part is written by the organizer command's driver (evaluation/examples/
organizer.py) with the challenge's bundled `invalid_examples`. Nothing is deleted that this
script did not write: an existing ground-truth/<challenge>/ or test/<challenge>/ is refused
unless --force, which replaces ground-truth/<challenge>/ and test/<challenge>/'s input/,
invalid/ and expected_metrics.json (any other file in test/<challenge>/ stays).

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
from evaluation.examples.organizer import OUTPUTS, write_bundled_example  # noqa: E402
from evaluation.launch import run_command  # noqa: E402


def main(challenge: str, force: bool = False, root: Path = ROOT) -> None:
    example = root / "test" / challenge
    ground_truth = root / "ground-truth" / challenge
    existing = [str(path.relative_to(root)) for path in (ground_truth, *(example / name for name in OUTPUTS))
                if os.path.lexists(path)]
    if existing and not force:
        raise UsageError(f"{', '.join(existing)} already exist(s); rerun with --force to replace "
                           f"ground-truth/{challenge}/ and test/{challenge}/'s {', '.join(OUTPUTS)}.")
    write_bundled_example(challenge, ground_truth, example)  # --force: replaces them


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Regenerate a challenge's bundled example (synthetic, seed 0).")
    parser.add_argument("challenge", choices=sorted(examples.examples()))
    parser.add_argument("--force", action="store_true", help="replace an existing ground-truth/<challenge>/ and "
                                                             "test/<challenge>/ example")
    args = parser.parse_args()
    sys.exit(run_command(lambda _: main(args.challenge, args.force), failed="The example could not be made:"))
