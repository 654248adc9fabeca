"""Regenerate the bundled example submissions of the final ranking: test/<challenge>/leaderboard/,
one folder per team (evaluation/examples/leaderboard_teams.py says which), for the ground truth
ground-truth/<challenge>/ and the example test/<challenge>/ of this repository:

    python scripts/make_leaderboard_examples.py rare26 [isic2018 ...] [--force]
    python -m evaluation.leaderboard rare26 test/rare26/leaderboard/* --output DIR

`python scripts/make_example.py CHALLENGE --force` rewrites these teams too, with the rest of the
bundled example (the one command for all of it). The examples command does the same for an
organizer's own ground truth (`python -m evaluation.examples CHALLENGE --ground-truth
ground-truth/CHALLENGE --output test/CHALLENGE --force` rewrites test/CHALLENGE/leaderboard/ too).

`root` (tests use a temporary one) is where test/<challenge>/leaderboard/ is written. An existing
leaderboard/ is refused unless --force, which replaces that folder only.
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evaluation.errors import UsageError  # noqa: E402
from evaluation.examples import examples  # noqa: E402
from evaluation.examples.leaderboard_teams import (  # noqa: E402,F401 (the tests read ranked_paths here)
    LEADERBOARD,
    lineup,
    ranked_paths,
    write_leaderboard,
)
from evaluation.launch import run_command  # noqa: E402


def challenges_with_teams() -> list[str]:
    """Every challenge whose Example declares a lineup of leaderboard teams."""
    return sorted(name for name, found in examples().items() if found.lineup is not None)


def main(challenges: list[str], force: bool = False, root: Path = ROOT) -> None:
    targets = {challenge: root / "test" / challenge / LEADERBOARD for challenge in challenges}
    existing = [str(target.relative_to(root)) for target in targets.values() if target.exists()]
    if existing and not force:
        raise UsageError(f"{', '.join(existing)} already exist(s); rerun with --force to replace "
                           f"{'it' if len(existing) == 1 else 'them'}.")
    for challenge, target in targets.items():
        write_leaderboard(challenge, target, ROOT / "ground-truth" / challenge, ROOT / "test" / challenge)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Regenerate the bundled example submissions of the final ranking "
                                                 "(test/<challenge>/leaderboard/).")
    parser.add_argument("challenges", nargs="+", metavar="challenge", choices=challenges_with_teams())
    parser.add_argument("--force", action="store_true", help="replace an existing test/<challenge>/leaderboard/")
    args = parser.parse_args()
    sys.exit(run_command(lambda _: main(list(dict.fromkeys(args.challenges)), args.force),
                         failed="The leaderboard examples could not be made:"))
