"""Where units of work run: the one scheduler of a submission's run (evaluation/run.py) and of a
final ranking (evaluation/leaderboard/).

A unit of work is a call `function(spec, *arguments)` of a module-level function: `spec`
(ChallengeSpec) says which challenge, ground truth and settings, and the worker builds that
challenge once (`evaluation_for`) and keeps it for every unit it gets. `Scheduler.map` runs the
units in this process, in a local pool of forked processes (which inherit the challenge already
built: the ground truth is not read again) or on an existing Dask distributed cluster, and yields
their results in the order the units were given, whatever the timing, with a bounded number in
flight: memory stays flat however many cases and submissions there are, and the first failure in
that order is the one raised.

A worker process dies at once on SIGTERM; `stop_workers` (the command's SIGTERM handler) kills
the workers of every local pool now running without waiting for their units.
"""

from __future__ import annotations

import json
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluation.errors import SetupError

if TYPE_CHECKING:
    from evaluation.framework import Evaluation
    from evaluation.settings import Settings


def _log(message: str) -> None:
    print(message, flush=True)


@dataclass(frozen=True)
class ChallengeSpec:
    """What a worker needs to build the challenge: its name, ground truth and settings."""

    challenge: str
    ground_truth_dir: str
    settings: Settings

    @property
    def key(self) -> str:
        return json.dumps([self.challenge, self.ground_truth_dir, self.settings.as_dict()], sort_keys=True)

    @classmethod
    def of(cls, evaluation: Evaluation) -> ChallengeSpec:
        return cls(evaluation.name, str(Path(evaluation.ground_truth_dir).resolve()), evaluation.settings)


# ---- the worker side -------------------------------------------------------------------------

_EVALUATIONS: dict[str, Evaluation] = {}


def evaluation_for(spec: ChallengeSpec) -> Evaluation:
    """The challenge of `spec` in this process: the one it inherited or built before, else built
    now (a Dask worker's first unit), ground truth included."""
    evaluation = _EVALUATIONS.get(spec.key)
    if evaluation is None:
        from evaluation.challenges import challenge_class

        _EVALUATIONS.clear()  # one challenge at a time: memory stays that of one ground truth
        evaluation = challenge_class(spec.challenge)(Path(spec.ground_truth_dir), spec.settings)
        _EVALUATIONS[spec.key] = evaluation
    return evaluation


def _keep(spec: ChallengeSpec, evaluation: Evaluation) -> None:
    _EVALUATIONS.clear()
    _EVALUATIONS[spec.key] = evaluation


def _init_forked_worker(spec: ChallengeSpec, evaluation: Evaluation) -> None:
    _keep(spec, evaluation)  # inherited by fork: the ground truth is not read again
    # A worker dies at once on SIGTERM: the command's handler (forked with it) is the main process's.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


# ---- the local pools running now ---------------------------------------------------------------

_ACTIVE_POOLS: list = []


def stop_workers() -> None:
    """Kill the worker processes of every pool running units now, without waiting for their
    units (the command is being stopped: their results would never be used)."""
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


# ---- the scheduler -------------------------------------------------------------------------------

WORKER_DIED = "A scoring process died, most likely killed for exceeding the memory limit; rerun with fewer --workers."


class Scheduler:
    """Runs units of work in order on one executor: this process (workers 1, no cluster), a local
    pool of `workers` forked processes, or the Dask cluster at `cluster` (its address). A local
    pool that cannot be made (no usable /dev/shm for its locks) falls back to this process."""

    def __init__(self, spec: ChallengeSpec, evaluation: Evaluation, workers: int = 1, cluster: str | None = None):
        self.spec, self.evaluation, self.workers, self.cluster = spec, evaluation, workers, cluster
        self._pool = self._client = None
        self.window = 1

    def __enter__(self) -> Scheduler:
        if self.cluster is not None:
            self._client = connect(self.cluster)
            threads = sum(self._client.nthreads().values())
            _log(f"Dask cluster {self.cluster}: {len(self._client.nthreads())} worker(s), {threads} thread(s).")
            self.window = max(4, 4 * threads)
        elif self.workers > 1:
            import multiprocessing  # here, not at the top: a run without workers never imports the pool machinery
            from concurrent.futures import ProcessPoolExecutor

            try:
                self._pool = ProcessPoolExecutor(max_workers=self.workers,
                                                 mp_context=multiprocessing.get_context("fork"),
                                                 initializer=_init_forked_worker,
                                                 initargs=(self.spec, self.evaluation))
            except OSError as error:
                _log(f"No process pool ({error}); running in one process.")
                _keep(self.spec, self.evaluation)
                return self
            _ACTIVE_POOLS.append(self._pool)  # SIGTERM kills its workers (stop_workers)
            self.window = 2 * self.workers
        else:
            _keep(self.spec, self.evaluation)
        return self

    def __exit__(self, kind, *exc) -> None:
        if self._pool is not None:
            _ACTIVE_POOLS.remove(self._pool)
            if kind is not None:
                kill_pool_workers(self._pool)  # the run failed: the units in flight are not waited for
            self._pool.shutdown(wait=True, cancel_futures=True)
        if self._client is not None:
            self._client.close()

    def map(self, function: Callable[..., Any], argument_tuples: Iterable[tuple],
            died: Callable[[tuple], str] | None = None) -> Iterator[Any]:
        """function(spec, *arguments) for each tuple, results in the order given; an error of a
        unit is raised as it was raised in the worker. `died(arguments)`: the line of the
        SetupError when a local worker died running that unit (killed for its memory, say)."""
        if self._pool is None and self._client is None:
            for arguments in argument_tuples:
                yield function(self.spec, *arguments)
            return
        pending: deque[tuple[tuple, Any]] = deque()
        for index, arguments in enumerate(argument_tuples):
            pending.append((arguments, self._submit(index, function, arguments)))
            if len(pending) >= self.window:
                yield self._result(*pending.popleft(), died)
        while pending:
            yield self._result(*pending.popleft(), died)

    def _submit(self, index: int, function, arguments: tuple):
        if self._client is not None:
            # pure=False: two submissions' identical units are still two pieces of work;
            # retries: a unit whose worker died is run again elsewhere.
            return self._client.submit(function, self.spec, *arguments, pure=False, retries=2,
                                       key=f"{function.__name__}-{index}-{id(self)}")
        return self._pool.submit(function, self.spec, *arguments)

    def _result(self, arguments: tuple, future, died: Callable[[tuple], str] | None) -> Any:
        from concurrent.futures.process import BrokenProcessPool

        try:
            return future.result() if self._client is None else self._dask_result(future)
        except BrokenProcessPool:
            raise SetupError(died(arguments) if died is not None else WORKER_DIED) from None
        except Exception as error:
            if self._client is None or type(error).__module__.partition(".")[0] != "distributed":
                raise
            # KilledWorker: the unit's workers died more often than its retries; a lost scheduler
            raise SetupError(f"The Dask cluster {self.cluster} could not run a unit of work "
                             f"({type(error).__name__}: {error}); check its workers and rerun.") from None

    def _dask_result(self, future):
        """The unit's result, waiting while the cluster has workers: once it has had none for
        no_workers_timeout() seconds (all dead, say), SetupError in one line rather than a wait
        without end."""
        bound = no_workers_timeout()
        without_workers_since = None
        while True:
            try:
                return future.result(timeout=WORKERS_POLL_SECONDS)
            except TimeoutError:
                pass
            try:
                workers = len(self._client.nthreads())
            except (OSError, TimeoutError):  # the scheduler is gone too
                workers = 0
            if workers:
                without_workers_since = None
                continue
            now = time.monotonic()
            without_workers_since = without_workers_since or now
            if now - without_workers_since >= bound:
                raise SetupError(f"The Dask cluster {self.cluster} lost its workers: none for {bound:g} s while "
                                 f"units of work waited; start workers (dask worker {self.cluster}) and rerun, "
                                 f"or set Dask's distributed.scheduler.no-workers-timeout to wait longer.")


# ---- a Dask cluster --------------------------------------------------------------------------------

# How long a final ranking waits for a Dask cluster that has no worker: Dask's own setting of the
# scheduler's wait, distributed.scheduler.no-workers-timeout, when it is set (in dask's config, or
# DASK_DISTRIBUTED__SCHEDULER__NO_WORKERS_TIMEOUT=10m for a cluster that starts its workers on
# demand), else this.
NO_WORKERS_SECONDS = 60.0
WORKERS_POLL_SECONDS = 1.0


def no_workers_timeout() -> float:
    import dask
    from dask.utils import parse_timedelta

    setting = dask.config.get("distributed.scheduler.no-workers-timeout", None)
    return NO_WORKERS_SECONDS if setting is None else float(parse_timedelta(setting, default="s"))


def probe_scheduler(address: str, timeout: float = 30) -> None:
    """SetupError in one line, at once, when nothing listens at a tcp:// scheduler address (before
    any scoring: a final ranking must not fail at its end for a typo)."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if parts.scheme in ("tcp", "") and host:
        try:
            socket.create_connection((host, port or 8786), timeout=timeout).close()
        except OSError as error:
            raise SetupError(f"No Dask scheduler answers at {address} ({error.strerror or error}); start one "
                             f"(dask scheduler) or check --scheduler.") from None


def connect(address: str, timeout: float = 30):
    """A Dask client of the scheduler at `address`, or SetupError in one line: nothing listens
    there, or the scheduler does not answer in time."""
    from distributed import Client

    probe_scheduler(address, timeout)
    try:
        return Client(address, timeout=timeout)
    except (OSError, ValueError, TypeError) as error:
        raise SetupError(f"No Dask scheduler could be reached at {address} ({error}); check --scheduler.") from None
