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
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

WATCH_SECONDS = 0.5  # how often a worker checks that its parent is alive
_PARENT: int | None = None  # in a worker of run_parallel: the pid of the process that started it


def threads_per_job(jobs: int) -> int:
    """BLAS/OpenMP threads each of ``jobs`` processes may use: ``max(1, cores // jobs)``."""
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


def _die_with_parent(parent: int, interval: float = WATCH_SECONDS) -> None:
    """Worker initializer: end this process as soon as ``parent`` is no longer its parent.

    ``parent`` is the pid of the process that called :func:`run_parallel`; a worker that finds
    another parent (the original died, the worker was re-parented to init or a sub-reaper) exits
    with status 1 without running anything more.
    """
    global _PARENT
    _PARENT = parent
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="dptune-parent-watch", daemon=True).start()


def exit_if_orphaned() -> None:
    """In a worker of :func:`run_parallel`: end this process at once when the process that
    started it is gone. Called before each unit of work, so that an orphan starts nothing more
    (the watch thread of :func:`_die_with_parent` ends it within :data:`WATCH_SECONDS` anyway,
    but a worker that runs an optimisation loop of short units could finish several in that
    time). Does nothing outside a worker."""
    if _PARENT is not None and os.getppid() != _PARENT:
        os._exit(1)


@contextmanager
def _quiet_workers() -> Iterator[None]:
    """Block SIGINT in the calling thread while it starts worker processes: they inherit the
    blocked signal (kept across ``exec``), so a Ctrl-C in the terminal, which the kernel sends
    to the whole process group, reaches only the parent. The parent stops and the workers end
    with it (:func:`_die_with_parent`, or joblib terminating them) instead of each printing an
    interrupted traceback or warning. Only a thread other than the main one blocks it (the main
    thread must keep receiving Ctrl-C); :func:`run_parallel` moves the work there."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _in_thread(work: Callable[[], Any]) -> Any:
    """Run ``work()`` in a helper thread while the main thread waits, so that a Ctrl-C raises
    :class:`KeyboardInterrupt` here at once; the workers are then terminated."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = work()
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = err

    th = threading.Thread(target=target, name="dptune-parallel", daemon=True)
    th.start()
    try:
        while th.is_alive():
            th.join(0.2)
    except KeyboardInterrupt:
        terminate_workers()
        raise
    if "error" in box:
        raise box["error"]
    return box.get("result")


def terminate_workers() -> None:
    """Kill the worker processes of the current loky executor (after an interrupt)."""
    try:
        from joblib.externals.loky import reusable_executor

        executor = getattr(reusable_executor, "_executor", None)
        if executor is not None:
            executor.shutdown(wait=True, kill_workers=True)
    except Exception:  # noqa: BLE001 - best effort: the workers also die with this process
        pass


def run_parallel(fn: Callable[..., Any], calls: Sequence[tuple], jobs: int,
                 on_done: Callable[[Any], None] | None = None) -> list[Any]:
    """``fn(*args)`` for every ``args`` in ``calls`` on ``jobs`` loky processes (in-process when
    ``jobs <= 1`` or there is one call); ``on_done(result)`` runs in the caller as each finishes
    (e.g. to advance a progress bar). Results come back in completion order. The worker
    processes end with the calling process, however it ends (:func:`_die_with_parent`), and
    never see the terminal's Ctrl-C (:func:`_quiet_workers`)."""
    out: list[Any] = []
    if jobs <= 1 or len(calls) <= 1:
        results: Iterable[Any] = (fn(*args) for args in calls)
        for r in results:
            out.append(r)
            if on_done is not None:
                on_done(r)
        return out
    from joblib import Parallel, delayed, parallel_config

    def work() -> list[Any]:
        with _quiet_workers(), parallel_config(
                backend="loky", inner_max_num_threads=threads_per_job(jobs),
                initializer=_die_with_parent, initargs=(os.getpid(),)):
            for r in Parallel(n_jobs=jobs, return_as="generator_unordered")(
                    delayed(fn)(*args) for args in calls):
                out.append(r)
                if on_done is not None:
                    on_done(r)
        return out

    if threading.current_thread() is threading.main_thread():
        return _in_thread(work)
    return work()
