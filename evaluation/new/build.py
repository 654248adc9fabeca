"""The second half of `python -m evaluation.new`: run in a scratch copy of the evaluation package
that holds the new challenge's folder (so that it is found as every challenge is), it writes
ground-truth/NAME/ (the synthetic ground truth, seed 0), test/NAME/ (input/, expected_metrics.json
and invalid/, each from a run of the evaluation) and test/NAME/leaderboard/ (the final ranking's
teams, each scored), as scripts/make_example.py does for the bundled challenges."""

from __future__ import annotations

import sys
from pathlib import Path

PHASE_OUTPUT = "__PHASE_OUTPUT__"  # where the challenge's page shows `python -m evaluation.phase NAME`


def phase_output(name: str) -> str:
    """What `python -m evaluation.phase NAME` prints, without its last newline."""
    import contextlib
    import io

    from evaluation.phase.command import main as phase

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        if phase([name]) != 0:
            raise RuntimeError(f"python -m evaluation.phase {name} failed")
    return printed.getvalue().rstrip("\n")


def build(argv: list[str] | None) -> int:
    from evaluation.examples.organizer import write_bundled_example
    from evaluation.new import page_for

    (name,) = sys.argv[1:] if argv is None else argv
    root = Path.cwd()
    ground_truth, example = root / "ground-truth" / name, root / "test" / name
    write_bundled_example(name, ground_truth, example)  # its leaderboard teams too
    page = root / "docs" / "challenges" / page_for(name)  # shows the phase command's output
    page.write_text(page.read_text(encoding="utf-8").replace(PHASE_OUTPUT, phase_output(name)), encoding="utf-8")
    return 0


def built(argv: list[str] | None) -> int:
    """`build`, its OSErrors of the machine's (no space left) NotWritten: exit 3, one line."""
    from evaluation.errors import NotWritten
    from evaluation.interruption import machine_error

    try:
        return build(argv)
    except OSError as error:
        if not machine_error(error):
            raise
        raise NotWritten(f"{error.strerror} ({error.filename or 'the scratch folder'}).") from None


def main(argv: list[str] | None = None) -> int:
    from evaluation.interruption import stopped_by_sigterm
    from evaluation.launch import run_command

    # Stopped by the scaffold (SIGTERM): its own children ended and its scratch files removed.
    with stopped_by_sigterm("The build of the new challenge was stopped (SIGTERM)."):
        return run_command(built, argv)


if __name__ == "__main__":
    sys.exit(main())
