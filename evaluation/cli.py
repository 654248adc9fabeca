"""python -m evaluation [CHALLENGE] [--input DIR] [--output DIR] [--ground-truth DIR] [--seed N] [--workers N]

Exit 0 with a complete metrics.json; exit 1 for an invalid submission, with no metrics.json and
one sentence for the participant as the last stderr line; another non-zero exit, saying it is
not the participant's fault, when the ground truth, the setup or our own code fails.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import time
from pathlib import Path

from evaluation import __version__
from evaluation.challenges import available_challenges, challenge_names, named_challenge
from evaluation.errors import EXIT_OK, SetupError, Terminated, UsageError
from evaluation.framework import log
from evaluation.interruption import owns_process
from evaluation.launch import CommandParser, run_command, whole_number
from evaluation.platform.locations import CONFIG_FILE, INPUT_DIR, OUTPUT_DIR, resolve_ground_truth_dir
from evaluation.platform.outputs import check_output_apart, prepare_output, write_outputs
from evaluation.run import default_workers, evaluate
from evaluation.scheduling import stop_workers

CHALLENGE_ENV = "EVALUATION_CHALLENGE"  # baked into each image by build.sh


class _Parser(CommandParser):
    def format_help(self) -> str:
        # The challenges are listed only when help is asked for: listing them imports every
        # challenge's folder, and a run imports only its own (start-up time).
        self.epilog = (f"Challenges: {', '.join(challenge_names())}. The default challenge is ${CHALLENGE_ENV} "
                       f"(set in the image).")
        return super().format_help()


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m evaluation",
        description="Evaluate a grand-challenge.org submission and write metrics.json.",
    )
    parser.add_argument("challenge", nargs="?", help=f"challenge to evaluate (default: ${CHALLENGE_ENV})")
    parser.add_argument("--input", type=Path, default=INPUT_DIR, help="submission folder (default: %(default)s)")
    parser.add_argument("--output", type=Path, default=OUTPUT_DIR,
                        help="where metrics.json goes (default: %(default)s)")
    parser.add_argument("--ground-truth", type=Path, default=None,
                        help="ground-truth folder (default: /opt/ml/input/data/ground_truth when not empty, "
                             "else /opt/app/ground-truth)")
    parser.add_argument("--seed", type=whole_number(0), default=None,
                        help="seed of any random resampling (default: the setting)")
    parser.add_argument("--workers", type=whole_number(1), default=None,
                        help="processes scoring cases (default: $EVALUATION_WORKERS, else the CPU count)")
    parser.add_argument("--list", action="store_true", help="list the challenges and their settings, then exit")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def _print_list(challenges) -> None:
    for name, cls in challenges.items():
        print(f"{name}: {cls.title}")
        for setting, default, doc in cls.settings_class.describe():
            print(f"    {setting} = {default!r}: {doc}")


def run(args: argparse.Namespace) -> int:
    name = args.challenge or os.environ.get(CHALLENGE_ENV, "").strip()
    if not name:
        raise UsageError(f"No challenge given: name one ({', '.join(challenge_names())}) or set {CHALLENGE_ENV}.")
    challenge = named_challenge(name)  # imports this challenge's folder only: start-up time
    started = time.perf_counter()
    log(f"evaluation {__version__}: {challenge.title}")
    read = [("input", args.input)] + ([("ground-truth", args.ground_truth)] if args.ground_truth is not None else [])
    with contextlib.suppress(SetupError):  # a missing ground truth is reported below, in its turn
        read.append(("ground-truth", resolve_ground_truth_dir(args.ground_truth, name)))
    check_output_apart(args.output, read)  # never written into what the run reads
    prepare_output(args.output)  # before scoring: an unwritable output must not waste the run
    if not args.input.exists():
        raise SetupError(f"The input folder {args.input} does not exist.")
    if not args.input.is_dir():
        raise SetupError(f"The input {args.input} is not a folder.")

    ground_truth_dir = resolve_ground_truth_dir(args.ground_truth, name)
    log(f"Ground truth: {ground_truth_dir}; input: {args.input}; output: {args.output}")
    config = ground_truth_dir / CONFIG_FILE
    log(f"Settings: {config}" if os.path.lexists(config)
        else f"Settings: the defaults (no {CONFIG_FILE} in {ground_truth_dir})")
    settings = challenge.settings_class.from_ground_truth(ground_truth_dir)
    if args.seed is not None:
        if "seed" not in settings.as_dict():
            log(f"Note: --seed has no effect, {name} draws nothing at random.")
        else:
            settings = settings.replace(seed=args.seed)
    evaluation = challenge(ground_truth_dir, settings)
    metrics, charts = evaluate(evaluation, args.input, default_workers(args.workers))
    # From here a SIGTERM waits (blocked) until the run has ended: the outputs are written whole,
    # and a run that wrote metrics.json exits 0.
    _block_sigterm()
    # The charts, then metrics.json, the success marker; a failure removes the charts again.
    path = write_outputs(args.output, charts, metrics, challenge.ranked_paths)
    log(f"Wrote {path} in {time.perf_counter() - started:.2f} s.")
    return EXIT_OK


STOPPED = ("The evaluation was stopped (SIGTERM, most likely the phase's time limit) before it finished, through no "
           "fault of the submission; no metrics.json was written.")


def _on_sigterm(signum, frame) -> None:
    """The platform's time limit: stop the workers now, then unwind the main thread (outputs
    being written are removed on the way: see platform/outputs.py, write_atomically)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: the unwinding is not interrupted again
    stop_workers()
    raise Terminated(STOPPED)


def _block_sigterm() -> None:
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:  # this run's handler (in the main thread)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})


@contextlib.contextmanager
def _stopped_by_sigterm():
    """SIGTERM raises Terminated in the main thread for the time of a run; the handler and the
    signal mask are restored after (main() is also called inside other programs and tests)."""
    try:
        handler = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: signals are the program's that runs it
        yield
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    try:
        yield
    finally:
        # blocked by the run itself (_block_sigterm): it got to writing its outputs
        over = signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, set()) and signal.SIGTERM not in mask
        if over and (owns_process() or signal.SIGTERM in signal.sigpending()):
            # The run is over: a SIGTERM that came while the outputs were written is spent, and in
            # the command's own process one still to come is too (it only exits now).
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if not (over and owns_process()):
            signal.signal(signal.SIGTERM, handler if handler is not None else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def main(argv: list[str] | None = None) -> int:
    with _stopped_by_sigterm():
        return run_command(_main, argv)


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.list:
        _print_list(available_challenges())
        return EXIT_OK
    return run(args)
