"""Synthetic ground truths and submissions: the bundled examples, the tests and the benchmarks.

Not part of scoring (the evaluation image does not need this package, nor the challenges'
example modules). Each challenge folder has an `examples.py` (hecktor2025 also a
`task1_examples.py`; a folder of tasks written by `python -m evaluation.new`, one in each task's
subpackage: every module of the folder or of its subpackages whose name ends in `examples`) that
writes the examples of its challenges and declares them in `EXAMPLES`:

    EXAMPLES = {"rare26": Example(synthesize=synthesize, invalid_examples=invalid_examples)}

- `synthesize(out_dir, seed=0, cases=None)`: a ground truth (out_dir/ground-truth) and a valid
  submission scored against it (out_dir/input), the same bytes for the same seed; `min_cases`:
  the fewest cases it makes an example of that the evaluation scores (with seed 0; fewer is a
  usage error of the command);
- `invalid_examples(input_dir)`: bad submissions bundled with the example
  (test/<challenge>/invalid/<name>/), each made from a copy of the valid one in input_dir:
  {name: {relative path: new bytes, or None to delete the file}};
- `submission(ground_truth_dir, input_dir, seed)`: a valid submission for ANY ground truth of the
  challenge (the organizer's own; its config.json and case-mapping.json apply);
- `invalid_for_ground_truth(ground_truth_dir, input_dir)` (optional): as `invalid_examples`, for
  a challenge whose bundled changes do not fail on every ground truth.

A writer for the organizer's ground truth passes every file path it makes from a name of that
ground truth or of its config.json (a slide, a socket) through `synthetic.checked` before it
writes anything: no such name writes outside the submission folder.

Two commands:

    python -m evaluation.examples CHALLENGE --out DIR [--seed N] [--cases N] [--force]
        a synthetic ground truth and a submission for it: DIR/ground-truth, DIR/input (a DIR
        holding anything is refused without --force; with it, only those two are replaced);
    python -m evaluation.examples CHALLENGE --ground-truth GT --output DIR [--seed N] [--force]
        a test example for the ground truth GT, laid out as test/<challenge>/ (organizer.py);
        when DIR has a leaderboard/ (the bundled test/<challenge>/), its example teams of the
        final ranking are rewritten for GT too (leaderboard_teams.py).

Exit codes: 0 done; 2 bad arguments or refused (one line); 3 the ground truth or its config.json
is unusable, or the output cannot be written (no space left); 4 a bug of evaluation/examples;
143 stopped by SIGTERM. Whatever stops it, the output folder is left as it was, with no scratch
folder and no process left running (organizer.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from evaluation.declarations.examples import Example


def examples() -> dict[str, Example]:
    """Every challenge's examples, from the EXAMPLES of its folder's example modules (those of
    its subpackages too: a folder of tasks holds one per task)."""
    import evaluation.challenges as challenges

    found: dict[str, Example] = {}
    for folder in challenges.challenge_folders():
        package = challenges.folder_package(folder)
        for module_info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}.",
                                                 onerror=_reraise):
            if module_info.name.rsplit(".", 1)[-1].endswith("examples"):
                module = importlib.import_module(module_info.name)
                found.update(getattr(module, "EXAMPLES", {}))
    return dict(sorted(found.items()))


def _reraise(name: str) -> None:
    """walk_packages' onerror, called while a subpackage's ImportError is handled: raised again,
    never skipped (its default would silently drop that subpackage's examples)."""
    raise  # the ImportError being handled


def example(challenge: str) -> Example:
    found = examples()
    if challenge not in found:
        raise KeyError(f"no examples for challenge {challenge!r}; known: {', '.join(found)}")
    return found[challenge]


def synthesize(challenge: str, out_dir: Path, seed: int = 0, cases: int | None = None) -> None:
    options = {} if cases is None else {"cases": cases}
    example(challenge).synthesize(Path(out_dir), seed=seed, **options)


def invalid_examples(challenge: str, input_dir: Path) -> dict[str, dict[str, bytes | None]]:
    return example(challenge).invalid_examples(Path(input_dir))


STOPPED = ("The examples command was stopped (SIGTERM) before it finished; nothing was changed in its output "
           "folder.")


def main(argv: list[str] | None = None) -> int:
    from evaluation.interruption import stopped_by_sigterm
    from evaluation.launch import run_command

    with stopped_by_sigterm(STOPPED):
        return run_command(_main, argv)


def _main(argv: list[str] | None) -> int:
    from evaluation.errors import EXIT_OK
    from evaluation.launch import CommandParser, whole_number

    parser = CommandParser(prog="python -m evaluation.examples",
                           description="Write a synthetic ground truth and a submission for it (--out), or a test "
                                       "example for your own ground truth (--ground-truth, --output), laid out as "
                                       "test/<challenge>/ (its leaderboard/ teams too, when --output has one).",
                           epilog="To regenerate ALL of a bundled example of this repository (ground-truth/"
                                  "<challenge>/ and test/<challenge>/, teams included, stale files removed): "
                                  "python scripts/make_example.py CHALLENGE --force.")
    parser.add_argument("challenge")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--out", type=Path, help="synthetic: folder to write ground-truth/ and input/ into")
    mode.add_argument("--ground-truth", type=Path, help="your ground truth (as ground-truth/<challenge>/ holds it)")
    parser.add_argument("--output", type=Path, help="with --ground-truth: folder to write input/, "
                                                    "expected_metrics.json and invalid/ into")
    parser.add_argument("--seed", type=whole_number(0), default=0, help="seed of the generated data (default: 0)")
    parser.add_argument("--cases", type=whole_number(1), default=None, help="with --out: number of cases "
                                                                            "(challenge default if omitted)")
    parser.add_argument("--force", action="store_true", help="with --out: write into a folder that holds files, "
                                                             "replacing its ground-truth/ and input/; with "
                                                             "--ground-truth: replace an existing input/, "
                                                             "expected_metrics.json, invalid/ and leaderboard/ in "
                                                             "--output, each whole (stale files removed)")
    args = parser.parse_args(argv)
    from evaluation.examples.organizer import make_organizer_example, write_synthetic_example

    if args.out is not None:
        if args.output is not None:
            parser.error("--output goes with --ground-truth, not --out")
        known = examples()
        if args.challenge not in known:
            from evaluation.challenges import named_challenge

            named_challenge(args.challenge)
            parser.error(f"no examples for challenge {args.challenge!r}; known: {', '.join(known)}")
        fewest = known[args.challenge].min_cases
        if args.cases is not None and args.cases < fewest:
            parser.error(f"argument --cases: {args.challenge} needs at least {fewest} cases, not {args.cases}")
        write_synthetic_example(args.challenge, args.out, seed=args.seed, cases=args.cases, force=args.force)
        return EXIT_OK
    if args.output is None:
        parser.error("--ground-truth needs --output (the folder for input/, expected_metrics.json and invalid/)")
    if args.cases is not None:
        parser.error("--cases goes with --out: the cases are those of the ground truth")
    # A bundled example folder (test/<challenge>/) also holds the final ranking's example teams:
    # they belong to the ground truth too, so they are rewritten with the rest, all at once.
    make_organizer_example(args.challenge, args.ground_truth, args.output, seed=args.seed, force=args.force)
    return EXIT_OK
