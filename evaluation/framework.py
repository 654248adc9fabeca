"""The base class every challenge subclasses, and the run that drives it.

evalutils' idea, built for predictions.json: the challenge loads and validates its ground
truth, says how to read one case of a submission (`load_prediction`), scores it
(`score_case`, in a worker process) and assembles the leaderboard values (`score_aggregates`).
The run matches submission cases to ground-truth cases (missing, extra and duplicate cases are
rejected before any scoring), streams cases through a process pool so that memory does not
grow with the number of cases, and stops at the first bad case, naming it.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from evaluation import __version__
from evaluation.declarations.columns import Leaderboard
from evaluation.errors import SetupError, SubmissionError, id_list
from evaluation.grand_challenge import (
    CASE_MAPPING_FILE,
    CONFIG_FILE,
    Case,
    case_id_of_job,
    case_image_name,
    mapped_case_id,
    read_case_mapping,
    read_predictions,
    strip_extension,
)
from evaluation.reading.files import Origin
from evaluation.settings import CASE_INPUT, Settings, socket_names

if TYPE_CHECKING:
    import numpy as np

    from evaluation.declarations.ranking_rules import RankingRule

WORKERS_ENV = "EVALUATION_WORKERS"  # not GRAND_CHALLENGE_*: the platform strips those


def log(message: str) -> None:
    """Progress for the organizers' log (stdout); participants see only stderr's last line."""
    print(message, flush=True)


class Evaluation:
    """A challenge: subclass, set the class attributes, implement the hooks."""

    name: ClassVar[str] = ""  # on the command line, e.g. "rare26"
    title: ClassVar[str] = ""
    settings_class: ClassVar[type[Settings]] = Settings
    case_label: ClassVar[str] = "Case"  # how messages name a case ("Stack", "Patient")
    # The phase's leaderboard(s) with the default settings (python -m evaluation.phase prints them)
    # and the paths metrics.json guarantees finite numbers: every path a leaderboard reads, so no
    # submission silently drops off it (a challenge derives them with leaderboard_paths).
    leaderboards: ClassVar[tuple[Leaderboard, ...]] = ()
    ranked_paths: ClassVar[tuple[str, ...]] = ()
    # The titles of the leaderboard columns that a setting other than the default adds, by path: the
    # final ranking's report titles its columns and charts with the leaderboards' titles, these next.
    value_titles: ClassVar[dict[str, str]] = {}
    # False when a case is too little work for a process (a few hundred bytes of JSON): the
    # pool would cost more than it saves, so every case is read in this process.
    cases_in_workers: ClassVar[bool] = True
    # Fewer cases than this per worker and the pool costs more than it saves (starting the
    # workers, sending the cases): the remaining cases are scored in this process. Measured per
    # challenge with benchmarks/workers.py.
    min_cases_per_worker: ClassVar[int] = 1
    # About how much memory a worker scoring a case takes: the workers started are at most the
    # memory limit (RLIMIT_DATA, RLIMIT_AS or the cgroup's) over this (evaluation/machine.py).
    worker_memory_bytes: ClassVar[int] = 256 << 20
    # Charts for the result page: {setting naming the chart's file (declared with
    # output_file=True): a function building its Vega-Lite spec from (evaluation, results,
    # metrics)}, e.g. a method of the class listed after its definition. A chart is built only
    # when its setting names a file (docs/grand-challenge.md, "Charts").
    chart_builders: ClassVar[dict[str, Callable[[Evaluation, dict[str, Any], dict[str, Any]], dict]]] = {}
    # The official rule(s) ranking submissions against each other, one per leaderboard
    # (python -m evaluation.leaderboard; evaluation/declarations/ranking_rules.py).
    final_rankings: ClassVar[tuple[RankingRule, ...]] = ()
    # Statistics of the final ranking: bootstrap resamples of this many rows at a time at most,
    # and no more than RESAMPLE_CELLS (rows x cases) in one block: memory stays flat.
    RESAMPLE_ROWS: ClassVar[int] = 1000
    RESAMPLE_CELLS: ClassVar[int] = 2_000_000

    def __init__(self, ground_truth_dir: Path, settings: Settings | None = None):
        self.ground_truth_dir = ground_truth_dir
        self.truth = Origin.ground_truth(ground_truth_dir)  # its files are the organizer's: exit 3
        self.settings = settings if settings is not None else self.settings_class.from_ground_truth(ground_truth_dir)
        self.case_mapping = read_case_mapping(ground_truth_dir)
        self.drawn_charts: dict[str, dict] = {}  # {file name: Vega-Lite spec}, filled by evaluate
        self.ground_truth: dict[str, Any] = self.load_ground_truth(ground_truth_dir)
        if not self.ground_truth:
            raise SetupError(f"The ground truth in {ground_truth_dir} has no cases.")
        unknown = sorted(set(self.case_mapping.values()) - set(self.ground_truth))
        if unknown:  # the organizer's mapping, not the participant's submission
            raise SetupError(f"{CASE_MAPPING_FILE} maps images to {len(unknown)} case id(s) that are not in the ground "
                             f"truth ({id_list(unknown)}).")

    # ---- hooks ---------------------------------------------------------------------------

    @classmethod
    def phase_leaderboards(cls, settings: Settings) -> tuple[Leaderboard, ...]:
        """The leaderboard(s) of a phase with these settings (its config.json); by default the
        declared `leaderboards`. Override when a setting changes a title or the ranked value;
        every path it can return belongs in `ranked_paths`, unless metrics.json may hold null
        there for a documented reason (csv2026's time scores; tests/test_phase.py checks)."""
        return cls.leaderboards

    def load_ground_truth(self, directory: Path) -> dict[str, Any]:
        """{case id: what score_case needs of that case, or what case_truth reads it from}; keep
        it light (paths rather than images) since it is shared with every worker. Raise
        SetupError on a bad ground truth."""
        raise NotImplementedError

    def case_input_socket(self) -> str | tuple[str, ...] | None:
        """The input socket whose image name is the case id (None: the job's only image): what
        the setting declared with socket=CASE_INPUT names. A phase with several interfaces names
        one socket per interface, in order: a job's case id comes from the first of them it has."""
        for name, role in self.settings_class.socket_fields():
            if role == CASE_INPUT:
                return socket_names(getattr(self.settings, name)) or None
        return None

    def case_id_from_image_name(self, name: str) -> str:
        """The case id of a job from its input image's name (the case mapping, if any, takes
        precedence). Default: the name without its extension."""
        return strip_extension(name)

    def file_cases(self, input_dir: Path) -> list[tuple[str, Any]]:
        """A predictions-file phase (no predictions.json): the (case id, source) pairs found in
        /input. By default the challenge takes algorithm submissions only."""
        raise SubmissionError("This phase evaluates algorithm jobs, but the input has no predictions.json; "
                              "submit an algorithm, not a predictions file.")

    def case_truth(self, case: Case) -> Any:
        """What load_prediction and score_case get of this case's ground truth, in the process
        scoring the case: by default the entry load_ground_truth gave. Override to read a case's
        ground-truth file here, in the workers, rather than every file at start in one process
        (csv2026: 300 small files, whose reading at start was a fifth of the run)."""
        return self.ground_truth[case.case_id]

    def load_prediction(self, case: Case, ground_truth: Any) -> Any:
        """Read and validate one case's prediction (SubmissionError naming the case): an
        algorithm job's outputs, or what a predictions-file phase gave for the case."""
        if case.job is not None:
            return self.read_job_prediction(case, ground_truth)
        return self.read_file_prediction(case, ground_truth)

    def read_job_prediction(self, case: Case, ground_truth: Any) -> Any:
        """An algorithm job's prediction, from its outputs (case.read_json, case.image)."""
        raise NotImplementedError

    def read_file_prediction(self, case: Case, ground_truth: Any) -> Any:
        """A predictions-file phase's prediction for one case, from what file_cases gave it
        (case.source); read files through case.origin."""
        raise NotImplementedError

    def score_case(self, case: Case, prediction: Any, ground_truth: Any) -> Any:
        """Per-case result (small: it is kept until the end). Default: the prediction itself."""
        return prediction

    def score_aggregates(self, results: dict[str, Any]) -> dict[str, Any]:
        """The metrics.json content from every case's result, keyed by case id in sorted order."""
        raise NotImplementedError

    # ---- the ranked values: one aggregate for metrics.json and the final ranking's bootstrap ---

    def aggregate(self, results: dict[str, Any], weights: np.ndarray) -> dict[str, np.ndarray]:
        """Every ranked value, from the per-case results (keyed by case id, sorted) and case
        weights: weights[r, j] is the weight of the j-th case of sorted(results) in row r, a whole
        number (a bootstrap resample: how many times the case was drawn). {path: float array
        (rows,)}, NaN where a row leaves a value undefined. The point value is the row of ones
        (point_values): metrics.json and the bootstrap share this one code path, so they are equal
        by construction. Vectorised over rows; the framework bounds rows x cases per call."""
        raise NotImplementedError(f"{self.name} does not aggregate its ranked values over case weights")

    def point_values(self, results: dict[str, Any]) -> dict[str, float]:
        """The ranked values of the whole test set: aggregate with every case weighted once."""
        import numpy as np

        values = self.aggregate(results, np.ones((1, len(results)), dtype=np.int64))
        return {path: float(row[0]) for path, row in values.items()}

    # ---- the final ranking's statistics (python -m evaluation.leaderboard) -----------------

    @classmethod
    def final_ranking_paths(cls) -> tuple[str, ...]:
        """Every metrics.json path the final rankings read, each once, the first rule's primary key first."""
        return tuple(dict.fromkeys(path for ranking in cls.final_rankings for path in ranking.paths))

    def resample_plan(self, resamples: int, seed: int) -> tuple[int, int, str | None]:
        """(resamples, seed, note) the statistics use: by default as asked, with no note."""
        return resamples, seed, None

    def ranking_resamples(self, results: dict[str, Any], resamples: int, seed: int) -> dict[str, np.ndarray]:
        """{path: (resamples,) array} of the ranked values on seeded bootstrap resamples of the
        cases. The draws depend only on the seed and the number of cases, so every submission
        of a final ranking gets the same ones (paired comparisons); drawn in blocks of bounded
        size, the same stream whatever the block size."""
        import numpy as np

        from evaluation.metrics.resampling import CaseDraws

        n = len(results)
        draws = CaseDraws(n, seed)
        block = max(1, min(self.RESAMPLE_ROWS, self.RESAMPLE_CELLS // max(1, n)))
        parts: dict[str, list[np.ndarray]] = {}
        for start in range(0, resamples, block):
            counts = draws.counts(min(block, resamples - start))
            for path, values in self.aggregate(results, counts).items():
                parts.setdefault(path, []).append(np.asarray(values, dtype=np.float64))
        return {path: np.concatenate(chunks) for path, chunks in parts.items()}

    def ranking_curves(self, results: dict[str, Any], metrics: dict[str, Any]) -> list[dict]:
        """Curves for the final ranking's report, drawn one line per submission: [{"chart": name,
        "title", "x_title", "y_title", "points": [[x, y], ...]}] (at most 500 points each)."""
        return []

    # ---- the run -------------------------------------------------------------------------

    def cases(self, input_dir: Path) -> list[Case]:
        """The submission's cases, matched one to one with the ground truth, sorted by case id."""
        jobs = read_predictions(input_dir)
        if jobs is None:
            pairs = [(case_id, None, source) for case_id, source in self.file_cases(input_dir)]
            log(f"Predictions-file phase: {len(pairs)} case(s) found in the input.")
        else:
            log(f"predictions.json lists {len(jobs)} job(s).")
            self.check_phase_sockets(jobs)
            socket = self.case_input_socket()
            pairs = [(case_id_of_job(job, socket, self.case_mapping, self.case_id_from_image_name), job, None)
                     for job in jobs]
            self.check_mapping_collisions(pairs, socket)
            self.check_one_job_per_case(pairs)
        self.check_case_ids([case_id for case_id, _, _ in pairs])
        label = self.case_label
        cases = [Case(c, input_dir, job, source, label) for c, job, source in pairs]
        return sorted(cases, key=lambda case: case.case_id)

    def check_phase_sockets(self, jobs) -> None:
        """A socket setting none of the jobs carries, while every job has sockets of that side, is
        the phase's configuration (its config.json), not the submission: exit 3 naming the setting.
        A socket missing from only some jobs stays the participant's fault (exit 1, per case)."""
        if not jobs:
            return
        for name, role in self.settings_class.socket_fields():
            wanted = socket_names(getattr(self.settings, name))
            side = "input" if role == CASE_INPUT else "output"
            carried = [getattr(job, f"{side}s") for job in jobs]
            if not wanted or not all(carried) or any(slug in sockets for sockets in carried for slug in wanted):
                continue
            found = sorted(set().union(*carried))
            named = " or ".join(repr(slug) for slug in wanted)
            raise SetupError(f"No job of predictions.json has the {side} socket {named} that the setting {name!r} "
                             f"names; the jobs' {side}s are {id_list(found)}. Set {name!r} in {CONFIG_FILE} next to "
                             f"the ground truth to the phase's socket (python -m evaluation.phase {self.name} "
                             f"--ground-truth DIR --pack PHASE_PACK.zip does it from the phase pack).")

    def check_mapping_collisions(self, pairs: list[tuple[str, Any, Any]], socket) -> None:
        """Two input images given one case id by the case mapping is the organizer's error (exit
        3), not a submission with two predictions for a case."""
        if not self.case_mapping:
            return
        names: dict[str, list[str]] = {}
        for case_id, job, _ in pairs:
            names.setdefault(case_id, []).append(case_image_name(job, socket))
        for case_id, images in sorted(names.items()):
            mapped = sorted(n for n in set(images) if mapped_case_id(n, self.case_mapping) is not None)
            if len(set(images)) > 1 and mapped:
                other = sorted(n for n in set(images) if n != mapped[0])[0]
                raise SetupError(f"{CASE_MAPPING_FILE} gives {mapped[0]} the case id {case_id}, which the input image "
                                 f"{other} has too.")

    def check_one_job_per_case(self, pairs: list[tuple[str, Any, Any]]) -> None:
        """Two jobs of predictions.json for one case are the phase's, not the submission's (exit
        3): the platform runs the algorithm once on every item of the phase's archive and starts
        the evaluation only when every job succeeded, so a case twice is an archive holding it
        twice (two input images whose names give one case id)."""
        jobs: dict[str, list[str]] = {}
        for case_id, job, _ in pairs:
            jobs.setdefault(case_id, []).append(job.pk)
        repeated = sorted(case_id for case_id, pks in jobs.items() if len(pks) > 1)
        if repeated:
            label, first = self.case_label.lower(), repeated[0]
            raise SetupError(f"predictions.json lists more than one job for {label} {id_list(repeated)} ({first}: jobs "
                             f"{id_list(jobs[first])}): the platform runs one job per item of the phase's "
                             f"archive, so the archive holds it more than once.")

    def check_case_ids(self, found: list[str]) -> None:
        """Duplicate, unknown and missing cases, all named in one sentence, before any scoring."""
        if len(found) == len(self.ground_truth) and self.ground_truth.keys() == set(found):
            return  # one case each: the usual submission, checked without counting
        label = self.case_label.lower()
        counts = Counter(found)
        problems = []
        duplicates = sorted(c for c, n in counts.items() if n > 1)
        if duplicates:
            problems.append(f"more than one prediction for {label} {id_list(duplicates)}")
        extra = sorted(set(counts) - set(self.ground_truth))
        if extra:
            problems.append(f"{len(extra)} {label}(s) not in the test set ({id_list(extra)})")
        missing = sorted(set(self.ground_truth) - set(counts))
        if missing:
            problems.append(f"no prediction for {len(missing)} {label}(s) of the test set ({id_list(missing)})")
        if problems:
            raise SubmissionError(f"The submission does not match the test set: {'; '.join(problems)}.")

    def evaluate(self, input_dir: Path, workers: int = 1) -> dict[str, Any]:
        """Score every case and return the metrics.json content."""
        cases = self.cases(input_dir)
        workers = self.workers_for(len(cases), workers)
        results = dict(with_progress(self._score_all(cases, workers), len(cases)))
        log("Computing aggregates.")
        metrics = self.metrics(results)
        self.drawn_charts = self.draw_charts(results, metrics)
        return metrics

    def metrics(self, results: dict[str, Any]) -> dict[str, Any]:
        """The metrics.json content from every case's result (sorted by case id): the
        aggregates, the settings echoed and which evaluation made it."""
        metrics = self.score_aggregates(results)
        metrics["settings"] = self.settings.as_dict()
        metrics["evaluation"] = {"challenge": self.name, "version": __version__}
        return metrics

    def draw_charts(self, results: dict[str, Any], metrics: dict[str, Any]) -> dict[str, dict]:
        """{file name: Vega-Lite spec} of each chart whose setting names a file; nothing is
        computed for the others. The builders read `metrics`, never change it."""
        drawn = {}
        for setting_name, builder in self.chart_builders.items():
            file_name = getattr(self.settings, setting_name)
            if file_name:
                log(f"Drawing the chart {file_name} ({setting_name}).")
                drawn[file_name] = builder(self, results, metrics)
        return drawn

    def score_one(self, case: Case) -> Any:
        return self.score_against(case, self.case_truth(case))

    def score_against(self, case: Case, ground_truth: Any) -> Any:
        """The case scored once its ground truth is read (the final ranking reads it apart, so that
        a ground truth that cannot be read is told from a bad prediction)."""
        return self.score_case(case, self.load_prediction(case, ground_truth), ground_truth)

    def workers_for(self, cases: int, requested: int) -> int:
        """How many worker processes pay for this many cases (1: all in this process), logged
        with the reason when fewer than requested. Measured per challenge (benchmarks/workers.py):
        a pool costs its start and the cases' trips, and two processes add no memory bandwidth.
        Never more than this machine allows (evaluation/machine.py): the CPUs this process may
        run on, and its memory limit over `worker_memory_bytes`."""
        if requested <= 1:
            log(f"Scoring {cases} case(s) in this process (1 worker requested).")
            return 1
        if not self.cases_in_workers:
            log(f"Scoring {cases} case(s) in this process: a case of {self.name} is too little work to send "
                f"to a worker ({requested} worker(s) requested).")
            return 1
        from evaluation.machine import worker_ceiling

        ceiling = worker_ceiling(requested, self.worker_memory_bytes)
        limit = f"; at most {ceiling.workers} here: {ceiling.reason}" if ceiling.workers < requested else ""
        # The first case is scored in this process before the pool starts (see _score_in_pool).
        usable = min(ceiling.workers, (cases - 1) // max(1, self.min_cases_per_worker))
        if ceiling.workers <= 1:
            log(f"Scoring {cases} case(s) in this process ({requested} worker(s) requested{limit}).")
        elif usable <= 1:
            log(f"Scoring {cases} case(s) in this process: too few for {requested} worker(s) to pay "
                f"({self.name} needs {self.min_cases_per_worker} case(s) per worker).")
        else:
            log(f"Scoring {cases} case(s) with {usable} worker(s) ({requested} requested{limit}).")
            return usable
        return 1

    def _score_all(self, cases: list[Case], workers: int) -> Iterator[tuple[str, Any]]:
        if workers <= 1 or len(cases) <= 1:
            for case in cases:
                yield case.case_id, self.score_one(case)
            return
        yield from _score_in_pool(self, cases, workers)


# The evaluation object reaches workers once, by fork, not once per case.
_WORKER_EVALUATION: Evaluation | None = None


# The pools scoring cases now: stop_workers kills their processes (SIGTERM, see cli.py).
_ACTIVE_POOLS: list = []


def _init_worker(evaluation: Evaluation) -> None:
    global _WORKER_EVALUATION
    _WORKER_EVALUATION = evaluation
    # A worker dies at once on SIGTERM: the command's handler (forked with it) is for the main process.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def stop_workers() -> None:
    """Kill the worker processes of every pool scoring cases now, without waiting for the cases
    they score (the run is being stopped: their results would never be used)."""
    for pool in list(_ACTIVE_POOLS):
        kill_pool_workers(pool)


def kill_pool_workers(pool) -> None:
    """Kill the worker processes of one ProcessPoolExecutor. Also what a pool that failed needs
    before its shutdown: when starting a worker fails (too many open files, say), the pool's own
    thread was never started, shutdown() stops nothing, and the workers already started would
    wait for work forever (and the interpreter's exit with them)."""
    for _ in range(3):  # the pool's own thread may change its table meanwhile
        try:
            processes = list((getattr(pool, "_processes", None) or {}).values())
            break
        except RuntimeError:
            continue
    else:
        processes = []
    for process in processes:
        try:
            process.kill()
        except (OSError, ValueError, AttributeError):  # already gone
            pass


def _score_in_worker(case: Case) -> Any:
    return _WORKER_EVALUATION.score_one(case)


def _score_in_pool(evaluation: Evaluation, cases: list[Case], workers: int) -> Iterator[tuple[str, Any]]:
    """Cases in sorted order through a pool with a bounded window of cases in flight, so memory
    stays flat however many cases there are. Results are taken in case order, so the bad case
    reported is always the first bad one in that order, whatever the timing.

    The first case is scored in this process, before the pool forks: the libraries scoring a
    case imports where it uses them (SimpleITK, h5py, OpenCV...) are then imported once and
    shared by the workers, not imported again in each of them (time and memory per worker)."""
    first, cases = cases[0], cases[1:]
    yield first.case_id, evaluation.score_one(first)
    import multiprocessing  # here, not at the top: a run without workers never imports the pool machinery
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                   initializer=_init_worker, initargs=(evaluation,))
    except OSError as error:  # no usable /dev/shm for the pool's locks: score in this process
        log(f"No process pool ({error}); scoring in one process.")
        for case in cases:
            yield case.case_id, evaluation.score_one(case)
        return
    window = 2 * workers
    pending: deque[tuple[Case, Future]] = deque()

    def take_oldest() -> tuple[str, Any]:
        case, future = pending[0]
        try:
            result = future.result()
        except BrokenProcessPool:
            raise SetupError(f"A scoring process died while scoring {case.name}, most likely killed for "
                             f"exceeding the memory limit.") from None
        pending.popleft()
        return case.case_id, result

    with pool:
        _ACTIVE_POOLS.append(pool)
        try:
            for case in cases:
                pending.append((case, pool.submit(_score_in_worker, case)))
                if len(pending) >= window:
                    yield take_oldest()
            while pending:
                yield take_oldest()
        except BaseException:
            kill_pool_workers(pool)  # the run failed: the cases in flight are not waited for
            raise
        finally:
            _ACTIVE_POOLS.remove(pool)
            pool.shutdown(wait=True, cancel_futures=True)


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
    its cgroup's CPU quota); Evaluation.workers_for lowers a larger number to what the machine
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

