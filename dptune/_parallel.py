"""Parallelism: joblib processes over independent units, never oversubscribing the cores, never
outliving the process that started them.

Each of ``jobs`` worker processes gets ``max(1, cores // jobs)`` BLAS/OpenMP threads (joblib's
``inner_max_num_threads``), so processes x threads <= cores; the numba BPR kernel is
single-threaded. With ``jobs == 1`` everything runs in the calling process.

Orphans: a loky worker whose parent is killed (``kill -9 dptune run``, a lost terminal) would
keep computing units for minutes while the user restarts the run. Every worker therefore runs
:func:`_die_with_parent` first: a daemon thread that checks every :data:`WATCH_SECONDS` whether
the worker's parent process is still the one that started it (``os.getppid()`` changes when the
parent dies and the worker is re-parented) and ends the worker at once (``os._exit``) when it is
not. A kernel that holds the GIL (one BPR epoch) delays that by at most its own run time. The
loky resource tracker exits by itself once no process holds its pipe. (``prctl(PR_SET_PDEATHSIG)``
is not used: it fires when the parent's *thread* that spawned the worker ends, and loky spawns
workers from whichever thread submits first, e.g. the sweep's background thread.)
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

WATCH_SECONDS = 0.5  # how often a worker checks that its parent is alive


def threads_per_job(jobs: int) -> int:
    """BLAS/OpenMP threads each of ``jobs`` processes may use: ``max(1, cores // jobs)``."""
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


def _die_with_parent(parent: int, interval: float = WATCH_SECONDS) -> None:
    """Worker initializer: end this process as soon as ``parent`` is no longer its parent.

    ``parent`` is the pid of the process that called :func:`run_parallel`; a worker that finds
    another parent (the original died, the worker was re-parented to init or a sub-reaper) exits
    with status 1 without running anything more.
    """
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="dptune-parent-watch", daemon=True).start()


def run_parallel(fn: Callable[..., Any], calls: Sequence[tuple], jobs: int,
                 on_done: Callable[[Any], None] | None = None) -> list[Any]:
    """``fn(*args)`` for every ``args`` in ``calls`` on ``jobs`` loky processes (in-process when
    ``jobs <= 1`` or there is one call); ``on_done(result)`` runs in the caller as each finishes
    (e.g. to advance a progress bar). Results come back in completion order. The worker
    processes end with the calling process, however it ends (:func:`_die_with_parent`)."""
    out: list[Any] = []
    if jobs <= 1 or len(calls) <= 1:
        results: Iterable[Any] = (fn(*args) for args in calls)
        for r in results:
            out.append(r)
            if on_done is not None:
                on_done(r)
        return out
    from joblib import Parallel, delayed, parallel_config

    with parallel_config(backend="loky", inner_max_num_threads=threads_per_job(jobs),
                         initializer=_die_with_parent, initargs=(os.getpid(),)):
        for r in Parallel(n_jobs=jobs, return_as="generator_unordered")(
                delayed(fn)(*args) for args in calls):
            out.append(r)
            if on_done is not None:
                on_done(r)
    return out
