"""Re-scoring every submission of a final ranking, one (submission, case) at a time.

Each submission is matched to the ground truth in this process (run.matched_cases: missing,
extra and duplicate cases are found before any scoring); its cases then go, as units of work, to
the scheduler a submission's run uses (evaluation/scheduling.py): this process (1 worker), a
local process pool (--workers N) or an existing Dask distributed cluster (--scheduler ADDRESS).
A worker builds the challenge, ground truth included, once and keeps it for every unit it gets.
Results come back in (submission, case) order whatever the timing, so a submission's
metrics.json is byte for byte the container's, and the first bad case in case order is the one
its exclusion names, as the container would.

A submission whose cases are too little work to ship (RARE26 stacks, ISIC rows:
`Workload(in_workers=False)`) goes as one unit with all its cases.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.errors import EXIT_INTERNAL, EXIT_SETUP, EvaluationError, SetupError, machine_limit, one_line
from evaluation.framework import Evaluation, log
from evaluation.launch import failure
from evaluation.platform.cases import Case
from evaluation.run import matched_cases, metrics_document, score_against
from evaluation.scheduling import ChallengeSpec, Scheduler, evaluation_for

BLAMED = "the submissions"  # whose fault a failure of the ground truth is not, in the final ranking


class GroundTruthFault(SetupError):
    """The ground truth (or the organizer's configuration) failed while scoring: not any
    submission's fault, so the whole final ranking stops with this exit code and line (made
    where it failed, a worker maybe, for the final ranking) rather than excluding every team."""

    framed = True

    def __init__(self, exit_code: int, line: str):
        super().__init__(line)
        self.exit_code = exit_code


def _ground_truth_failure(case: Case, error: BaseException) -> tuple[int, str]:
    """(exit code, line) of an error raised while reading a case's ground truth: exit 3 whatever
    the error's kind (a corrupt label file is the organizer's to fix), 4 for a bug of ours."""
    code, line = failure(error, blamed=BLAMED)
    if code == EXIT_INTERNAL or code == EXIT_SETUP:
        return code, line
    message = error.message if isinstance(error, EvaluationError) else str(error)
    return EXIT_SETUP, one_line(f"The evaluation could not run, through no fault of {BLAMED}: the ground truth "
                                f"of case {case.case_id} cannot be used: {message} (please tell the challenge "
                                f"organizers).")


@dataclass
class Outcome:
    """One submission re-scored: its metrics.json content and per-case results, or why it was
    excluded (the container's exit code and last stderr line)."""

    name: str
    input_dir: Path
    metrics: dict[str, Any] | None = None
    results: dict[str, Any] | None = None
    exit_code: int | None = None
    error: str | None = None
    cases: list[Case] = field(default_factory=list)


# ---- the worker side -------------------------------------------------------------------------

# A submission's resamples go to a worker when its case draws (cases x resamples) reach this, or
# when its cases are worth shipping anyway (Workload.in_workers).
SHIPPED_RESAMPLE_CELLS = 5_000_000  # per worker process: the ground truth read once


def score_unit(spec: ChallengeSpec, cases: list[Case]) -> list[tuple]:
    """Scores consecutive cases of one submission: [("ok", result)] per case, stopping at the
    first failure, given as ("error", exit code, last stderr line, traceback or ""), or as
    ("fatal", ...) when the case's ground truth cannot be read (no submission's fault)."""
    evaluation = evaluation_for(spec)
    scored: list[tuple] = []
    for case in cases:
        try:
            try:
                truth = evaluation.case_truth(case)
            except Exception as error:
                code, line = _ground_truth_failure(case, error)
                scored.append(("fatal", code, line, traceback.format_exc() if code == EXIT_INTERNAL else ""))
                break
            scored.append(("ok", score_against(evaluation, case, truth)))
        except Exception as error:  # the container's handling: exit code and one line
            if machine_limit(error):  # out of memory or of file descriptors: the machine's, stop the ranking
                scored.append(("fatal", *failure(error, blamed=BLAMED), ""))
                break
            code, line = failure(error)
            scored.append(("error", code, line, traceback.format_exc() if code == EXIT_INTERNAL else ""))
            break
    return scored


def resample_unit(spec: ChallengeSpec, results: dict[str, Any], resamples: int, seed: int):
    """One submission's ranked values on the shared resamples, or the reason there are none."""
    try:
        return evaluation_for(spec).ranking_resamples(results, resamples, seed)
    except NotImplementedError as error:
        return str(error)
    except Exception as error:  # a bug of ours: the ranking stands, the statistics say why they are missing
        if machine_limit(error):
            raise  # the machine's limit stops the command (exit 3), as anywhere else
        traceback.print_exc()
        return f"resampling failed ({type(error).__name__}: {error}; please report it)"


# ---- the driver --------------------------------------------------------------------------------


def _units(evaluation: Evaluation, cases: list[Case]) -> list[list[Case]]:
    if not evaluation.workload.in_workers:
        return [cases]
    return [[case] for case in cases]


def prepare(evaluation: Evaluation, name: str, input_dir: Path) -> Outcome:
    """The submission's cases matched with the ground truth, or its exclusion."""
    outcome = Outcome(name, input_dir)
    try:
        outcome.cases = matched_cases(evaluation, input_dir)
    except Exception as error:  # exit 3 here is this folder's predictions.json (the platform's input): excluded
        if machine_limit(error):
            raise  # but the machine's limit stops the command (exit 3)
        outcome.exit_code, outcome.error = failure(error)
        if outcome.exit_code == EXIT_INTERNAL:
            traceback.print_exc()
    return outcome


def score_submissions(evaluation: Evaluation, spec: ChallengeSpec, submissions: list[tuple[str, Path]],
                      workers: int = 1, scheduler: str | None = None) -> list[Outcome]:
    """Each submission's Outcome, in the order given, its metrics computed as the container does.
    A submission is matched with the ground truth when its turn comes, not all of them up front:
    the cases of 1,000 submissions x 500 patients held at once took a gigabyte."""
    outcomes = [Outcome(name, path) for name, path in submissions]
    plan: list[tuple[int, int]] = []  # per unit: (submission index, number of cases)

    def units() -> Iterator[list[Case]]:
        for index, outcome in enumerate(outcomes):
            prepared = prepare(evaluation, outcome.name, outcome.input_dir)
            outcome.cases, outcome.exit_code, outcome.error = prepared.cases, prepared.exit_code, prepared.error
            if outcome.error is not None:
                log(f"Invalid {outcome.name} (exit {outcome.exit_code}, excluded before scoring).")
            else:
                for unit in _units(evaluation, outcome.cases):
                    plan.append((index, len(unit)))
                    yield unit

    log(f"Scoring {len(outcomes)} submission(s).")
    scored: dict[int, list[tuple]] = {}
    done_cases = done_submissions = 0
    if not evaluation.workload.in_workers and (workers > 1 or scheduler is not None):
        log(f"Scoring in this process: a case of {evaluation.name} is too little work to send to a worker.")
        workers, scheduler = 1, None
    with Scheduler(spec, evaluation, workers, scheduler) as runner:
        for unit_index, unit_scored in enumerate(runner.map(score_unit, ((unit,) for unit in units()))):
            index, size = plan[unit_index]
            for item in unit_scored:
                if item[0] == "fatal":
                    if item[3]:
                        log(item[3])
                    raise GroundTruthFault(item[1], item[2])
            scored.setdefault(index, []).extend(unit_scored)
            # a failed case ends its unit early: count the unit's cases as done all the same
            scored[index].extend([("skipped",)] * (size - len(unit_scored)))
            done_cases += size
            outcome = outcomes[index]
            if len(scored[index]) == len(outcome.cases):
                _finish(evaluation, outcome, scored.pop(index))
                done_submissions += 1
                done = f"{done_submissions} of {len(outcomes)} submission(s), {done_cases} case(s) done."
                if outcome.error is None:
                    log(f"Scored {outcome.name}: {done}")
                else:
                    log(f"Invalid {outcome.name} (exit {outcome.exit_code}, excluded): {done}")
    return outcomes


def _finish(evaluation: Evaluation, outcome: Outcome, scored: list[tuple]) -> None:
    """The container's end of a run: the first bad case in case order, else the metrics."""
    from evaluation.platform.outputs import metrics_json

    for item in scored:
        if item[0] == "error":
            outcome.exit_code, outcome.error = item[1], item[2]
            if item[3]:
                log(item[3])
            outcome.cases = []
            return
    results = {case.case_id: item[1] for case, item in zip(outcome.cases, scored, strict=True)}
    try:
        metrics = metrics_document(evaluation, results)
    except EvaluationError as error:
        code, line = failure(error)
        if code == EXIT_SETUP:  # the aggregates refuse the ground truth (one class only, say): no team's fault
            raise GroundTruthFault(*failure(error, blamed=BLAMED)) from None
        outcome.exit_code, outcome.error, outcome.cases = code, line, []
        return
    except Exception as error:
        if machine_limit(error):  # the aggregate step out of memory: the machine's, not this team's
            raise GroundTruthFault(*failure(error, blamed=BLAMED)) from None
        outcome.exit_code, outcome.error = failure(error)
        traceback.print_exc()
        outcome.cases = []
        return
    try:
        metrics_json(metrics, evaluation.ranked_paths)  # the container's check: a ranked value must be a number
    except Exception as error:
        outcome.exit_code, outcome.error = failure(error)
        if outcome.exit_code == EXIT_INTERNAL:
            traceback.print_exc()
        outcome.cases = []
        return
    outcome.metrics, outcome.results = metrics, results
    outcome.cases = []  # no longer needed: memory


def resample_submissions(evaluation: Evaluation, spec: ChallengeSpec, results: dict[str, dict[str, Any]],
                         resamples: int, seed: int, workers: int = 1,
                         scheduler: str | None = None) -> dict[str, Any]:
    """{submission: {path: (resamples,) values}, or the reason there are none}: one unit of work
    per submission (its per-case results and the shared seed), on the same workers as scoring."""
    names = sorted(results)
    workers = min(workers, len(names))
    cells = max((len(r) for r in results.values()), default=0) * resamples
    if not evaluation.workload.in_workers and cells < SHIPPED_RESAMPLE_CELLS and (workers > 1 or scheduler is not None):
        # 500 patients x 1000 resamples took 0.44 s for 50 submissions in this process and 0.61 s
        # with two workers (benchmarks/leaderboard.py); ISIC's 25,000 images take ~1 s each.
        log(f"Resampling in this process: {cells} case draws per submission are too little work to send to a worker.")
        workers, scheduler = 1, None
    with Scheduler(spec, evaluation, workers, scheduler) as runner:
        found = runner.map(resample_unit, ((results[name], resamples, seed) for name in names))
        return dict(zip(names, found, strict=True))
