"""python -m evaluation.phase CHALLENGE [--ground-truth DIR]: a phase's leaderboard settings.

Prints a JSON list with one object per leaderboard of the challenge, each holding the scoring
fields of a grand-challenge.org phase (score_title, score_jsonpath, score_error_jsonpath,
score_default_sort, score_decimal_places, extra_results_columns, scoring_method_choice), ready
to paste. The settings come from the ground truth's config.json, as the evaluation reads them,
since some leaderboards depend on them (csv2026 without baseline_time_seconds ranks
score_without_time): --ground-truth, else the bundled ground-truth/CHALLENGE, else (in the
image) the ground truth the evaluation would use. Exit 2: unknown challenge; exit 3: no ground
truth folder, or a config.json the evaluation would refuse.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evaluation.errors import EXIT_OK, EXIT_SETUP, EXIT_USAGE, EvaluationError
from evaluation.launch import missing_dependency

FAILURE = "The phase settings could not be made:"

BUNDLED_GROUND_TRUTH = Path(__file__).resolve().parent.parent / "ground-truth"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation.phase",
        description="Print the leaderboard settings of a grand-challenge.org phase for CHALLENGE: a JSON list, one "
                    "object per leaderboard, with the fields of the phase's scoring settings.")
    parser.add_argument("challenge", metavar="CHALLENGE", help="the challenge, e.g. rare26")
    parser.add_argument("--ground-truth", type=Path, metavar="DIR",
                        help="the phase's ground truth, whose config.json is read (default: the bundled "
                             "ground-truth/CHALLENGE)")
    return parser


def phase_settings(challenge, ground_truth: Path) -> list[dict]:
    """The platform's scoring fields of each leaderboard of a phase with this ground truth."""
    settings = challenge.settings_class.from_ground_truth(ground_truth)
    return [leaderboard.phase_fields() for leaderboard in challenge.phase_leaderboards(settings)]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:  # imported here: a Python without the requirements gets one line, as the main command does
        from evaluation.challenges import challenge_class, challenge_names
        from evaluation.grand_challenge import resolve_ground_truth_dir

        names = challenge_names()  # read from the modules' source; only the challenge asked for is imported
        if args.challenge not in names:
            print(f"Unknown challenge {args.challenge!r}; known challenges: {', '.join(names)}.", file=sys.stderr)
            return EXIT_USAGE
        challenge = challenge_class(args.challenge)
    except ModuleNotFoundError as error:
        if not error.name or error.name.partition(".")[0] == "evaluation":
            raise  # our own module missing: a broken install, shown in full
        print(f"{FAILURE} {missing_dependency(error.name)}", file=sys.stderr)
        return EXIT_SETUP
    explicit = args.ground_truth
    if explicit is None and (BUNDLED_GROUND_TRUTH / args.challenge).is_dir():
        explicit = BUNDLED_GROUND_TRUTH / args.challenge
    try:  # else, as the evaluation: the phase's uploaded ground truth, else the image's baked one
        fields = phase_settings(challenge, resolve_ground_truth_dir(explicit, args.challenge))
    except EvaluationError as error:
        hint = " Name the phase's ground truth with --ground-truth DIR." if explicit is None else ""
        print(f"{FAILURE} {error.message}{hint}", file=sys.stderr)
        return error.exit_code
    print(json.dumps(fields, indent=2))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
