"""How many worker processes this machine allows: the CPUs this process may run on (its
affinity, and its cgroup's CPU quota) and the memory it may use (its data and address-space
limits, which the platform sets to the machine's memory and every child inherits, and its
cgroup's memory limit). A `--workers 1000` beyond these only costs memory and start-up time.

Read from the usual files of a container (cgroup v2 at /sys/fs/cgroup, v1 under
/sys/fs/cgroup/cpu and /sys/fs/cgroup/memory); the parsing functions take their paths.
"""

from __future__ import annotations

import math
import os
import resource
from dataclasses import dataclass
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
CPU_MAX_V2 = CGROUP / "cpu.max"
CPU_QUOTA_V1 = (CGROUP / "cpu" / "cpu.cfs_quota_us", CGROUP / "cpu,cpuacct" / "cpu.cfs_quota_us")
MEMORY_MAX_V2 = CGROUP / "memory.max"
MEMORY_MAX_V1 = CGROUP / "memory" / "memory.limit_in_bytes"
# cgroup v1 writes "no limit" as a huge number (PAGE_COUNTER_MAX pages): anything above this is none.
_NO_LIMIT_ABOVE = 1 << 60


def _read(path: Path) -> str | None:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None


def cgroup_cpu_quota(cpu_max: Path = CPU_MAX_V2, quota: Path | None = None, period: Path | None = None) -> float | None:
    """The CPUs the cgroup's quota allows (a fraction: 1.5 for "150000 100000"), or None without
    a quota. cgroup v2's cpu.max ("max 100000" or "<quota> <period>") first, else v1's
    cpu.cfs_quota_us / cpu.cfs_period_us (-1: no quota). Unreadable or malformed: None."""
    text = _read(cpu_max)
    if text is not None:
        fields = text.split()
        if len(fields) == 2 and fields[0] != "max":
            return _ratio(fields[0], fields[1])
        return None
    if quota is None:
        for candidate in CPU_QUOTA_V1:
            if os.path.exists(candidate):
                quota = candidate
                break
        else:
            return None
    if period is None:
        period = quota.with_name("cpu.cfs_period_us")
    quota_text, period_text = _read(quota), _read(period)
    if quota_text is None or period_text is None:
        return None
    return _ratio(quota_text, period_text)


def _ratio(quota: str, period: str) -> float | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    if q <= 0 or p <= 0:  # v1's -1: no quota
        return None
    return q / p


def cgroup_memory_limit(memory_max: Path = MEMORY_MAX_V2, limit_in_bytes: Path = MEMORY_MAX_V1) -> int | None:
    """The cgroup's memory limit in bytes (v2's memory.max, else v1's memory.limit_in_bytes), or
    None without one ("max", v1's huge "unlimited" value, unreadable or malformed)."""
    for path in (memory_max, limit_in_bytes):
        text = _read(path)
        if text is None:
            continue
        if text == "max":
            return None
        try:
            value = int(text)
        except ValueError:
            return None
        return value if 0 < value < _NO_LIMIT_ABOVE else None
    return None


def affinity_cpus() -> int:
    """The CPUs this process may run on (its affinity; the CPU count where there is none)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class Ceiling:
    """At most `workers` processes, and why (for the log): "1 CPU (affinity)"."""

    workers: int
    reason: str


def cpu_ceiling(affinity: int | None = None, quota: float | None = None) -> Ceiling:
    """The CPUs usable at once: the affinity, lowered by the cgroup quota (rounded up: a quota of
    1.5 CPUs keeps two processes busy part of the time)."""
    affinity = affinity_cpus() if affinity is None else affinity
    quota = cgroup_cpu_quota() if quota is None else quota
    if quota is not None and math.ceil(quota) < affinity:
        cpus = max(1, math.ceil(quota))
        return Ceiling(cpus, f"{cpus} CPU(s) by the cgroup's CPU quota ({quota:g} CPUs)")
    return Ceiling(affinity, f"{affinity} CPU(s) this process may run on")


def memory_budget() -> tuple[int, str] | None:
    """(bytes, where the limit comes from) of the smallest memory limit on this process, or None.
    The platform gives its memory cap as a data rlimit every child inherits: each worker may use
    that much, but together they share the machine's, so it bounds their sum."""
    limits = []
    for name, kind in (("data limit (RLIMIT_DATA)", resource.RLIMIT_DATA),
                       ("address-space limit (RLIMIT_AS)", resource.RLIMIT_AS)):
        soft, _ = resource.getrlimit(kind)
        if soft != resource.RLIM_INFINITY and soft > 0:
            limits.append((soft, name))
    cgroup = cgroup_memory_limit()
    if cgroup is not None:
        limits.append((cgroup, "cgroup memory limit"))
    return min(limits) if limits else None


_MEASURED = object()  # worker_ceiling's default: read this process's limits


def worker_ceiling(requested: int, per_worker_bytes: int, cpus: Ceiling | None = None,
                   memory: tuple[int, str] | object | None = _MEASURED) -> Ceiling:
    """How many of `requested` worker processes this machine allows, and why fewer when fewer:
    the usable CPUs (cpu_ceiling), and the memory budget (memory_budget, or `memory` as given;
    None: no limit) over `per_worker_bytes` (0: no estimate)."""
    cpus = cpu_ceiling() if cpus is None else cpus
    ceiling = Ceiling(requested, "")
    if cpus.workers < ceiling.workers:
        ceiling = cpus
    budget = memory_budget() if memory is _MEASURED else memory
    if budget and per_worker_bytes > 0:
        bytes_, source = budget
        allowed = max(1, bytes_ // per_worker_bytes)
        if allowed < ceiling.workers:
            ceiling = Ceiling(allowed, f"{_gib(bytes_)} of memory ({source}) at about {_gib(per_worker_bytes)} "
                                       f"a worker")
    return ceiling


def _gib(size: int) -> str:
    if size >= 1 << 30:
        return f"{size / (1 << 30):.1f} GiB"
    return f"{size / (1 << 20):.0f} MiB"


# ---- native libraries under a memory limit ------------------------------------------------------

# OpenBLAS (numpy's, and SciPy's own copy) maps a 32 MiB buffer for each of its threads (8 MiB of
# stack each besides) when its library is loaded, and one more at the first matrix product in the
# process; when one cannot be mapped (the platform's RLIMIT_DATA reached) it prints a line and
# calls exit(1), which no Python code can catch: the run would end with exit 1, as if the
# submission were wrong. Measured with OPENBLAS_NUM_THREADS=1, as (data, address space): loading
# numpy takes (43, 83) MiB, its first product (32, 32) more; scipy.optimize (62, 127) more.
OPENBLAS_THREAD_BYTES = (32 + 8) << 20  # an OpenBLAS thread beyond the first: its buffer and stack
NUMPY_LOAD_BYTES = (80 << 20, 120 << 20)  # numpy, OpenBLAS with one thread and the first product
SCIPY_LOAD_BYTES = (72 << 20, 136 << 20)  # scipy.optimize, its linear algebra and OpenBLAS with one thread
_BLAS_READY = False


def openblas_threads() -> int:
    """The threads OpenBLAS starts (its own reading of the environment: OPENBLAS_NUM_THREADS,
    GOTO_NUM_THREADS, OMP_NUM_THREADS, at most the CPUs, else the CPUs)."""
    cpus = os.cpu_count() or 1
    for name in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"):
        try:
            value = int(os.environ.get(name, ""))
        except ValueError:
            continue
        if value > 0:
            return min(value, cpus)
    return cpus


def _mapped_bytes() -> tuple[int, int] | None:
    """(data, address space) this process has mapped, as its limits count them (VmData and
    VmSize of /proc/self/status); None where it cannot be read."""
    found = {}
    text = _read(Path("/proc/self/status")) or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmData", "VmSize") and value.split()[:1] and value.split()[0].isdigit():
            found[key] = int(value.split()[0]) << 10
    return (found["VmData"], found["VmSize"]) if len(found) == 2 else None


def require_free_memory(data: int, address: int) -> None:
    """MemoryError unless `data` more bytes of data and `address` more of address space fit under
    this process's RLIMIT_DATA and RLIMIT_AS (the kernel's own accounting; no limit: nothing to
    check)."""
    mapped = _mapped_bytes()
    if mapped is None:
        return
    for (soft, _), used, needed, name in ((resource.getrlimit(resource.RLIMIT_DATA), mapped[0], data, "data"),
                                          (resource.getrlimit(resource.RLIMIT_AS), mapped[1], address,
                                           "address-space")):
        if soft != resource.RLIM_INFINITY and used + needed > soft:
            raise MemoryError(f"{_gib(needed)} more do not fit under the {name} limit of {_gib(soft)} "
                              f"({_gib(used)} in use)")


def load_numpy() -> None:
    """Loads numpy and has OpenBLAS map the buffers it keeps, now, while the process is small:
    first a check that they fit (MemoryError, the command's memory line, when not), then one
    matrix product. Later products reuse that buffer (in this process and the workers it forks),
    so an allocation that fails later is a MemoryError Python sees, not OpenBLAS's exit(1)."""
    global _BLAS_READY
    if _BLAS_READY:
        return
    import sys

    extra = (openblas_threads() - 1) * OPENBLAS_THREAD_BYTES
    if "numpy" not in sys.modules:
        require_free_memory(NUMPY_LOAD_BYTES[0] + extra, NUMPY_LOAD_BYTES[1] + extra)
    else:
        require_free_memory(OPENBLAS_THREAD_BYTES, OPENBLAS_THREAD_BYTES)
    import numpy as np

    np.ones((1, 512)) @ np.ones((512, 2))  # too large for OpenBLAS's stack: its heap buffer, mapped now
    _BLAS_READY = True


def load_scipy() -> None:
    """The same check before SciPy's own OpenBLAS is loaded (by a module that imports SciPy late)."""
    import sys

    if "scipy.linalg" not in sys.modules:
        extra = (openblas_threads() - 1) * OPENBLAS_THREAD_BYTES
        require_free_memory(SCIPY_LOAD_BYTES[0] + extra, SCIPY_LOAD_BYTES[1] + extra)


# ---- open files -----------------------------------------------------------------------------------


def require_free_files(count: int, what: str) -> None:
    """OSError EMFILE (the command's line about the machine's limit of open files) unless `count`
    more files can be opened under RLIMIT_NOFILE now: for a library that cannot report running out
    of them (vl-convert's renderer panics, or its thread dies and the next request fails)."""
    import errno

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    try:
        in_use = len(os.listdir("/proc/self/fd")) - 1  # the listing's own descriptor aside
    except OSError as error:
        if error.errno in (errno.EMFILE, errno.ENFILE):
            raise
        return
    if soft != resource.RLIM_INFINITY and in_use + count > soft:
        raise OSError(errno.EMFILE, f"Too many open files: {what} needs {count} more, {in_use} of {soft} are open")
