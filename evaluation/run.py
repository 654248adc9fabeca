"""The run of one submission: its cases matched to the ground truth, scored in this process or
streamed through a process pool, with progress lines, then metrics.json's content and the charts.

The challenge (framework.Evaluation) declares what is read and how a case is scored; this module
knows nothing of any challenge. Missing, extra and duplicate cases are rejected before any
scoring; cases stream through a pool with a bounded window, so memory does not grow with the
number of cases, and the first bad case in case order is the one named.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evaluation import __version__
from evaluation.errors import SetupError, SubmissionError, id_list
from evaluation.framework import Evaluation, log
from evaluation.platform.cases import Case, case_id_of_job, case_image_name, mapped_case_id
from evaluation.platform.locations import CASE_MAPPING_FILE, CONFIG_FILE
from evaluation.platform.predictions import read_predictions
from evaluation.scheduling import ChallengeSpec, Scheduler, evaluation_for
from evaluation.settings import CASE_INPUT, socket_names

WORKERS_ENV = "EVALUATION_WORKERS"  # not GRAND_CHALLENGE_*: the platform strips those


def matched_cases(challenge: Evaluation, input_dir: Path) -> list[Case]:
    """The submission's cases, matched one to one with the ground truth, sorted by case id (the
    cases the challenge ignores left out), and checked as a whole by the challenge."""
    jobs = read_predictions(input_dir)
    if jobs is None:
        pairs = [(case_id, None, source) for case_id, source in challenge.file_cases(input_dir)]
        log(f"Predictions-file phase: {len(pairs)} case(s) found in the input.")
    else:
        log(f"predictions.json lists {len(jobs)} job(s).")
        _check_phase_sockets(challenge, jobs)
        socket = challenge.case_input_socket()
        pairs = [(case_id_of_job(job, socket, challenge.case_mapping, challenge.case_id_from_image_name), job, None)
                 for job in jobs]
        _check_mapping_collisions(challenge, pairs, socket)
        _check_one_job_per_case(challenge, pairs)
    ignored = challenge.ignored_case_ids()
    if ignored:
        pairs = [pair for pair in pairs if pair[0] not in ignored]
    check_case_ids(challenge, [case_id for case_id, _, _ in pairs])
    label = challenge.case_label
    cases = sorted((Case(c, input_dir, job, source, label) for c, job, source in pairs), key=lambda case: case.case_id)
    challenge.check_cases(cases)
    return cases

def _check_phase_sockets(challenge: Evaluation, jobs) -> None:
    """A socket setting none of the jobs carries, while every job has sockets of that side, is
    the phase's configuration (its config.json), not the submission: exit 3 naming the setting.
    A socket missing from only some jobs stays the participant's fault (exit 1, per case)."""
    if not jobs:
        return
    for name, role in challenge.settings_class.socket_fields():
        wanted = socket_names(getattr(challenge.settings, name))
        side = "input" if role == CASE_INPUT else "output"
        carried = [getattr(job, f"{side}s") for job in jobs]
        if not wanted or not all(carried) or any(slug in sockets for sockets in carried for slug in wanted):
            continue
        found = sorted(set().union(*carried))
        named = " or ".join(repr(slug) for slug in wanted)
        raise SetupError(f"No job of predictions.json has the {side} socket {named} that the setting {name!r} "
                         f"names; the jobs' {side}s are {id_list(found)}. Set {name!r} in {CONFIG_FILE} next to "
                         f"the ground truth to the phase's socket (python -m evaluation.phase {challenge.name} "
                         f"--ground-truth DIR --pack PHASE_PACK.zip does it from the phase pack).")

def _check_mapping_collisions(challenge: Evaluation, pairs: list[tuple[str, Any, Any]], socket) -> None:
    """Two input images given one case id by the case mapping is the organizer's error (exit
    3), not a submission with two predictions for a case."""
    if not challenge.case_mapping:
        return
    names: dict[str, list[str]] = {}
    for case_id, job, _ in pairs:
        names.setdefault(case_id, []).append(case_image_name(job, socket))
    for case_id, images in sorted(names.items()):
        mapped = sorted(n for n in set(images) if mapped_case_id(n, challenge.case_mapping) is not None)
        if len(set(images)) > 1 and mapped:
            other = sorted(n for n in set(images) if n != mapped[0])[0]
            raise SetupError(f"{CASE_MAPPING_FILE} gives {mapped[0]} the case id {case_id}, which the input image "
                             f"{other} has too.")

def _check_one_job_per_case(challenge: Evaluation, pairs: list[tuple[str, Any, Any]]) -> None:
    """Two jobs of predictions.json for one case are the phase's, not the submission's (exit
    3): the platform runs the algorithm once on every item of the phase's archive and starts
    the evaluation only when every job succeeded, so a case twice is an archive holding it
    twice (two input images whose names give one case id)."""
    jobs: dict[str, list[str]] = {}
    for case_id, job, _ in pairs:
        jobs.setdefault(case_id, []).append(job.pk)
    repeated = sorted(case_id for case_id, pks in jobs.items() if len(pks) > 1)
    if repeated:
        label, first = challenge.case_label.lower(), repeated[0]
        raise SetupError(f"predictions.json lists more than one job for {label} {id_list(repeated)} ({first}: jobs "
                         f"{id_list(jobs[first])}): the platform runs one job per item of the phase's "
                         f"archive, so the archive holds it more than once.")

def check_case_ids(challenge: Evaluation, found: list[str]) -> None:
    """Duplicate, unknown and missing cases, all named in one sentence, before any scoring."""
    if len(found) == len(challenge.ground_truth) and challenge.ground_truth.keys() == set(found):
        return  # one case each: the usual submission, checked without counting
    label = challenge.case_label.lower()
    counts = Counter(found)
    problems = []
    duplicates = sorted(c for c, n in counts.items() if n > 1)
    if duplicates:
        problems.append(f"more than one prediction for {label} {id_list(duplicates)}")
    extra = sorted(set(counts) - set(challenge.ground_truth))
    if extra:
        problems.append(f"{len(extra)} {label}(s) not in the test set ({id_list(extra)})")
    missing = sorted(set(challenge.ground_truth) - set(counts))
    if missing:
        problems.append(f"no prediction for {len(missing)} {label}(s) of the test set ({id_list(missing)})")
    if problems:
        raise SubmissionError(f"The submission does not match the test set: {'; '.join(problems)}.")

def evaluate(challenge: Evaluation, input_dir: Path, workers: int = 1) -> tuple[dict[str, Any], dict[str, dict]]:
    """Score every case: (the metrics.json content, {file name: Vega-Lite spec} of the charts)."""
    cases = matched_cases(challenge, input_dir)
    workers = workers_for(challenge, len(cases), workers)
    results = dict(with_progress(_score_all(challenge, cases, workers), len(cases)))
    log("Computing aggregates.")
    metrics = metrics_document(challenge, results)
    return metrics, draw_charts(challenge, results, metrics)

def draw_charts(challenge: Evaluation, results: dict[str, Any], metrics: dict[str, Any]) -> dict[str, dict]:
    """{file name: Vega-Lite spec} of each chart whose setting names a file; nothing is
    computed for the others. The builders read `metrics`, never change it."""
    drawn = {}
    for chart in challenge.result_charts:
        file_name = getattr(challenge.settings, chart.setting)
        if file_name:
            log(f"Drawing the chart {file_name} ({chart.setting}).")
            drawn[file_name] = chart.build(challenge, results, metrics)
    return drawn

def workers_for(challenge: Evaluation, cases: int, requested: int) -> int:
    """How many worker processes pay for this many cases (1: all in this process), logged
    with the reason when fewer than requested. Measured per challenge (benchmarks/workers.py):
    a pool costs its start and the cases' trips, and two processes add no memory bandwidth.
    Never more than this machine allows (evaluation/machine.py): the CPUs this process may
    run on, and its memory limit over its workload's `worker_memory_bytes`."""
    if requested <= 1:
        log(f"Scoring {cases} case(s) in this process (1 worker requested).")
        return 1
    if not challenge.workload.in_workers:
        log(f"Scoring {cases} case(s) in this process: a case of {challenge.name} is too little work to send "
            f"to a worker ({requested} worker(s) requested).")
        return 1
    from evaluation.machine import worker_ceiling

    ceiling = worker_ceiling(requested, challenge.workload.worker_memory_bytes)
    limit = f"; at most {ceiling.workers} here: {ceiling.reason}" if ceiling.workers < requested else ""
    # The first case is scored in this process before the pool starts (see _score_in_pool).
    usable = min(ceiling.workers, (cases - 1) // max(1, challenge.workload.min_cases_per_worker))
    if ceiling.workers <= 1:
        log(f"Scoring {cases} case(s) in this process ({requested} worker(s) requested{limit}).")
    elif usable <= 1:
        log(f"Scoring {cases} case(s) in this process: too few for {requested} worker(s) to pay "
            f"({challenge.name} needs {challenge.workload.min_cases_per_worker} case(s) per worker).")
    else:
        log(f"Scoring {cases} case(s) with {usable} worker(s) ({requested} requested{limit}).")
        return usable
    return 1

def score_case(challenge: Evaluation, case: Case) -> Any:
    """One case scored: its ground truth read, then its prediction read and scored against it."""
    return score_against(challenge, case, challenge.case_truth(case))


def score_against(challenge: Evaluation, case: Case, ground_truth: Any) -> Any:
    """The case scored once its ground truth is read (the final ranking reads it apart, so that
    a ground truth that cannot be read is told from a bad prediction)."""
    return challenge.score_case(case, challenge.load_prediction(case, ground_truth), ground_truth)


def metrics_document(challenge: Evaluation, results: dict[str, Any]) -> dict[str, Any]:
    """The metrics.json content from every case's result (sorted by case id): the challenge's
    aggregates, the settings echoed and which evaluation made it."""
    metrics = challenge.score_aggregates(results)
    metrics["settings"] = challenge.settings.as_dict()
    metrics["evaluation"] = {"challenge": challenge.name, "version": __version__}
    return metrics


def _score_all(challenge: Evaluation, cases: list[Case], workers: int) -> Iterator[tuple[str, Any]]:
    if workers <= 1 or len(cases) <= 1:
        for case in cases:
            yield case.case_id, score_case(challenge, case)
        return
    yield from _score_in_pool(challenge, cases, workers)


def score_in_worker(spec: ChallengeSpec, case: Case) -> Any:
    """A unit of work of the run (evaluation.scheduling): one case scored in a worker."""
    return score_case(evaluation_for(spec), case)


def _score_in_pool(evaluation: Evaluation, cases: list[Case], workers: int) -> Iterator[tuple[str, Any]]:
    """Cases in sorted order through the scheduler's pool, a bounded window of them in flight, so
    memory stays flat however many cases there are. Results are taken in case order, so the bad
    case reported is always the first bad one in that order, whatever the timing.

    The first case is scored in this process, before the pool forks: the libraries scoring a
    case imports where it uses them (SimpleITK, h5py, OpenCV...) are then imported once and
    shared by the workers, not imported again in each of them (time and memory per worker)."""
    first, rest = cases[0], cases[1:]
    yield first.case_id, score_case(evaluation, first)

    def died(arguments: tuple) -> str:
        return (f"A scoring process died while scoring {arguments[0].name}, most likely killed for exceeding the "
                f"memory limit.")

    with Scheduler(ChallengeSpec.of(evaluation), evaluation, workers) as scheduler:
        scored = scheduler.map(score_in_worker, ((case,) for case in rest), died=died)
        for case, result in zip(rest, scored, strict=True):
            yield case.case_id, result


PROGRESS_STEPS = 10  # lines per run at most (plus one per PROGRESS_SECONDS): the platform keeps 500 log lines
PROGRESS_SECONDS = 60.0


def with_progress(scored: Iterator[tuple[str, Any]], total: int, clock=time.monotonic) -> Iterator[tuple[str, Any]]:
    """Passes the scored cases on, logging "Scored 120 of 300 cases (40%), 3.2 s" at every tenth
    of the run and at least once a minute, so that a long run shows it is alive without filling
    the organizers' 500-line log, whatever the number of cases."""
    started = last_line = clock()
    next_step = 1
    for done, item in enumerate(scored, start=1):
        yield item
        now = clock()
        if done * PROGRESS_STEPS >= next_step * total or now - last_line >= PROGRESS_SECONDS:
            log(f"Scored {done} of {total} case(s) ({100 * done // total}%), {now - started:.1f} s.")
            last_line = now
            while next_step * total <= done * PROGRESS_STEPS:
                next_step += 1


def default_workers(requested: int | None) -> int:
    """--workers, else EVALUATION_WORKERS, else the CPUs this process may use (its affinity and
    its cgroup's CPU quota); workers_for lowers a larger number to what the machine
    allows."""
    if requested is not None:
        return max(1, requested)
    env = os.environ.get(WORKERS_ENV, "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise SetupError(f"{WORKERS_ENV} must be a whole number, not {env!r}.") from None
    from evaluation.machine import cpu_ceiling

    return cpu_ceiling().workers

