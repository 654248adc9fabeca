"""python -m evaluation.phase CHALLENGE [--ground-truth DIR]: a phase's leaderboard settings.

Prints a JSON list with one object per leaderboard of the challenge, each holding the scoring
fields of a grand-challenge.org phase (score_title, score_jsonpath, score_error_jsonpath,
score_default_sort, score_decimal_places, extra_results_columns, scoring_method_choice), ready
to paste. The settings come from the ground truth's config.json, as the evaluation reads them,
since some leaderboards depend on them (csv2026 without baseline_time_seconds ranks
score_without_time): --ground-truth, else the bundled ground-truth/CHALLENGE, else (in the
image) the ground truth the evaluation would use. Exit 2: unknown challenge; exit 3: no ground
truth folder, or a config.json the evaluation would refuse.

python -m evaluation.phase CHALLENGE --ground-truth DIR --pack PACK: the phase's socket names.
PACK is the phase pack the platform generates for the phase (its zip, or the unpacked folder,
with or without one top folder); its sockets are matched to the sockets the challenge reads, by
kind and role, and written into DIR/config.json (its other keys kept, in their order), and what
was set is printed (evaluation/phase/pack.py). Exit 3 when the pack cannot be read or a socket
cannot be decided: the one line says which and how to name it in config.json.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from evaluation.errors import EXIT_OK, SetupError
from evaluation.launch import CommandParser, run_command

FAILURE = "The phase settings could not be made:"
PACK_FAILURE = "The phase's sockets could not be set:"

BUNDLED_GROUND_TRUTH = Path(__file__).resolve().parents[2] / "ground-truth"


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser(
        prog="python -m evaluation.phase",
        description="Print the leaderboard settings of a grand-challenge.org phase for CHALLENGE: a JSON list, one "
                    "object per leaderboard, with the fields of the phase's scoring settings.")
    parser.add_argument("challenge", metavar="CHALLENGE", help="the challenge, e.g. rare26")
    parser.add_argument("--ground-truth", type=Path, metavar="DIR",
                        help="the phase's ground truth, whose config.json is read (default: the bundled "
                             "ground-truth/CHALLENGE)")
    parser.add_argument("--pack", type=Path, metavar="PACK",
                        help="the phase pack downloaded from the phase's page (its zip or unpacked folder): write "
                             "the phase's socket names into the ground truth's config.json (needs --ground-truth)")
    return parser


def phase_settings(challenge, ground_truth: Path) -> list[dict]:
    """The platform's scoring fields of each leaderboard of a phase with this ground truth."""
    settings = challenge.settings_class.from_ground_truth(ground_truth)
    return [leaderboard.phase_fields() for leaderboard in challenge.phase_leaderboards(settings)]


class PackFailure(SetupError):
    """--pack could not set the sockets: the whole line, in that mode's words."""

    framed = True


def main(argv: list[str] | None = None) -> int:
    return run_command(_main, argv, failed=FAILURE)


def _main(argv: list[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.pack is not None and args.ground_truth is None:
        parser.error("--pack needs --ground-truth DIR, the ground truth whose config.json receives the socket names")
    if args.pack is not None and not os.path.exists(args.pack):
        parser.error(f"the phase pack {args.pack} does not exist")
    # Imported here: a Python without the requirements gets one line (run_command), as every command does.
    from evaluation.challenges import named_challenge
    from evaluation.platform.locations import resolve_ground_truth_dir

    challenge = named_challenge(args.challenge)  # its folder only; every folder only to name the known ones
    if args.pack is not None:
        return configure(challenge, args.ground_truth, args.pack)
    explicit = args.ground_truth
    if explicit is None and (BUNDLED_GROUND_TRUTH / args.challenge).is_dir():
        explicit = BUNDLED_GROUND_TRUTH / args.challenge
    try:  # else, as the evaluation: the phase's uploaded ground truth, else the image's baked one
        fields = phase_settings(challenge, resolve_ground_truth_dir(explicit, args.challenge))
    except SetupError as error:
        if explicit is not None:
            raise
        raise SetupError(f"{error.message} Name the phase's ground truth with --ground-truth DIR.") from error
    print(json.dumps(fields, indent=2))
    return EXIT_OK


def configure(challenge, ground_truth: Path, pack: Path) -> int:
    """--pack: the phase pack's socket names into the ground truth's config.json."""
    from evaluation.phase.pack import configure_from_pack
    from evaluation.platform.locations import resolve_ground_truth_dir

    try:
        ground_truth_dir = resolve_ground_truth_dir(ground_truth, challenge.name)
        path, matched, old = configure_from_pack(challenge, ground_truth_dir, pack)
    except SetupError as error:
        raise PackFailure(f"{PACK_FAILURE} {error.message}") from error
    print(f"Sockets of the phase pack {pack}, written to {path}:")
    for name, value in matched.items():
        change = "unchanged" if value == old[name] else f"was {json.dumps(old[name])}"
        print(f"  {name} = {json.dumps(value)} ({change})")
    print(f"Next: python -m evaluation.examples {challenge.name} --ground-truth {ground_truth} --output DIR, then "
          f"./test.sh {challenge.name} --example DIR.")
    return EXIT_OK


if __name__ == "__main__":
    import sys

    sys.exit(main())
