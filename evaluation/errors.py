"""The two kinds of failure a run can end in, and the exit codes the platform sees.

Participants see only the last stderr line of a failed run, so every error carries one
sentence that says which case is wrong, what was expected and what was found.
"""

EXIT_OK = 0
EXIT_SUBMISSION = 1  # the participant's submission is invalid
EXIT_USAGE = 2  # the command line is wrong (argparse's own code)
EXIT_SETUP = 3  # the ground truth, its config.json or the platform's input is unusable
EXIT_INTERNAL = 4  # a bug of ours
EXIT_TERMINATED = 128 + 15  # stopped by SIGTERM (the platform's time limit), as a shell reports it


class EvaluationError(Exception):
    """Base: the message is the one line shown to whoever has to act on it."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str):
        # One line, whatever the caller passed: the platform shows only the last line.
        super().__init__(" ".join(str(message).split()))

    @property
    def message(self) -> str:
        return str(self)


class SubmissionError(EvaluationError):
    """The submission is wrong; the participant can fix it. Exit 1, no metrics.json."""

    exit_code = EXIT_SUBMISSION


class SetupError(EvaluationError):
    """The ground truth, the phase configuration or the platform input is wrong: not the
    participant's fault, so the message says so (see cli.py)."""

    exit_code = EXIT_SETUP


class Terminated(BaseException):
    """SIGTERM arrived (the platform's time limit): raised in the main thread by the command's
    handler. A BaseException, as KeyboardInterrupt, so that no `except Exception` on the way
    takes it for a failure of the case being read."""


def id_list(ids, limit: int = 10) -> str:
    """'a, b, c' for short lists, 'a, b, ... and 990 more' for long ones (messages stay one line)."""
    ids = [printable(str(i)) for i in ids]  # ids can be a participant's text (a CSV's rows)
    if len(ids) <= limit:
        return ", ".join(ids)
    return f"{', '.join(ids[:limit])} and {len(ids) - limit} more"


def printable(text: str, limit: int = 80) -> str:
    """Text for a one-line message: control and other unprintable characters escaped, cut to
    `limit` characters."""
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return text if len(text) <= limit else text[: limit - 3] + "..."
