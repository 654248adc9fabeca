"""The one error hierarchy of every command, and the exit codes the platform (or the shell) sees.

    SubmissionError  exit 1  the participant's submission is wrong; the participant can fix it
    UsageError       exit 2  the command line is wrong (argparse's own code)
    SetupError       exit 3  the ground truth, its config.json, the platform's input or the machine
    InternalError    exit 4  a bug of ours, found by our own check (any other exception is one too)
    Terminated       exit 143  SIGTERM (the platform's time limit)

Each error carries one sentence: participants see only the last stderr line of a failed run, so
it says which case is wrong, what was expected and what was found. evaluation.launch.run_command
turns them into exit codes and that last line, once, for every command.
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


class UsageError(EvaluationError):
    """The command line is wrong, or the command refuses what it was asked (a folder that holds
    files, say): exit 2, the message as it is."""

    exit_code = EXIT_USAGE


class SetupError(EvaluationError):
    """The ground truth, the phase configuration or the platform input is wrong: not the
    participant's fault, so the command's last line says so (evaluation.launch.failure)."""

    exit_code = EXIT_SETUP
    # True for a subclass whose message is already the command's whole last line (the command
    # framed it itself): shown as it is, without the command's "could not run" sentence around it.
    framed = False


class NotWritten(SetupError):
    """The machine would not let a command write its output (no space left, a read-only or
    unwritable folder, a file-size limit): exit 3, the message the whole last line, nothing of
    the output left."""

    framed = True


class InternalError(EvaluationError):
    """A bug of ours that our own code noticed (generated examples that are not what they should
    be, say): exit 4, the message as it is. Unexpected exceptions are bugs too (exit 4, with their
    traceback)."""

    exit_code = EXIT_INTERNAL


class Terminated(BaseException):
    """SIGTERM arrived (the platform's time limit): raised in the main thread by the command's
    handler, its argument the last line to show. A BaseException, as KeyboardInterrupt, so that
    no `except Exception` on the way takes it for a failure of the case being read."""

    exit_code = EXIT_TERMINATED


MAX_MESSAGE = 1000  # the platform shows at most 1024 characters of the last stderr line


def one_line(message: str) -> str:
    """The last stderr line as the platform shows it: one line, at most MAX_MESSAGE characters."""
    text = " ".join(message.split())
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 3] + "..."
    return text


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


# ---- the machine's limits ------------------------------------------------------------------------

MEMORY_LIMIT, FILE_LIMIT = "memory", "open files"

# What the dynamic loader says when it cannot map a shared library's segments (glibc's dlopen):
# the data or address-space limit was reached while a library (numpy's, SciPy's, OpenBLAS) loaded.
_UNMAPPED_LIBRARY = ("failed to map segment from shared object", "cannot map zero-fill pages")
_OPENCV_NO_MEMORY = -4  # cv::Error::StsNoMem
_ITK_NO_MEMORY = "Failed to allocate memory"  # itk::MemoryAllocationError's text (an image's buffer)


def machine_limit(error: BaseException) -> str | None:
    """Which limit of the machine `error` ran into, or None: MEMORY_LIMIT for a MemoryError,
    OpenCV's or ITK's out-of-memory error, an OSError ENOMEM, or a shared library the loader
    could not map while a memory limit (RLIMIT_DATA, RLIMIT_AS) is set; FILE_LIMIT for too many
    open files (EMFILE: this process's `ulimit -n`; ENFILE: the system's). Never the fault of
    whoever the command serves."""
    import errno

    if isinstance(error, MemoryError):
        return MEMORY_LIMIT
    if type(error).__module__ == "cv2" and getattr(error, "code", None) == _OPENCV_NO_MEMORY:
        return MEMORY_LIMIT  # OpenCV's own "Insufficient memory" (cv2.error, not a MemoryError)
    if isinstance(error, RuntimeError) and _ITK_NO_MEMORY in str(error):
        return MEMORY_LIMIT  # SimpleITK's RuntimeError for ITK's MemoryAllocationError
    if isinstance(error, OSError) and error.errno in (errno.EMFILE, errno.ENFILE):
        return FILE_LIMIT
    if isinstance(error, OSError) and error.errno == errno.ENOMEM:
        return MEMORY_LIMIT
    if isinstance(error, (ImportError, OSError)) and any(text in str(error) for text in _UNMAPPED_LIBRARY):
        import resource

        if any(resource.getrlimit(kind)[0] != resource.RLIM_INFINITY
               for kind in (resource.RLIMIT_DATA, resource.RLIMIT_AS)):
            return MEMORY_LIMIT
    return None
