"""Parallelism: joblib processes over independent units, never oversubscribing the cores, never
outliving the process that started them.

Each of ``jobs`` worker processes gets ``max(1, cores // jobs)`` BLAS/OpenMP threads (joblib's
``inner_max_num_threads``), so processes x threads <= cores; the numba BPR kernel is
single-threaded. With ``jobs == 1`` everything runs in the calling process (beside its main
thread, which only waits, so that Ctrl-C is answered at once: :mod:`dptune._interrupt`).

Ctrl-C: the terminal sends SIGINT to the whole process group; workers ignore it and the
process that started them stops and kills them (:func:`terminate_workers`).

Orphans: a loky worker whose parent is killed (``kill -9 dptune run``, a lost terminal) would
keep computing units for minutes while the user restarts the run. Every worker therefore runs
:func:`_die_with_parent` first: a daemon thread that checks every :data:`WATCH_SECONDS` whether
the worker's parent process is still the one that started it (``os.getppid()`` changes when the
parent dies and the worker is re-parented) and ends the worker at once (``os._exit``) when it is
not. A kernel that holds the GIL (one BPR epoch) delays that by at most its own run time. The
loky resource tracker exits by itself once no process holds its pipe. (``prctl(PR_SET_PDEATHSIG)``
is not used: it fires when the parent's *thread* that spawned the worker ends, and loky spawns
workers from whichever thread submits first, e.g. the sweep's background thread.)

Settings: loky keeps its workers after a run (joblib: 300 s idle) and the next run of the same
process reuses them, with the environment they were started with. dptune's settings that live
in the environment (``DPTUNE_*``: the models given to :func:`dptune.models.register`, the
heartbeat interval) would then be those of the earlier run, and a model registered since
unknown to them. So every task carries the caller's ``DPTUNE_*`` variables as they are when
the run starts, and the worker takes them over before it runs the task
(:func:`_with_settings`).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from dptune._interrupt import check as check_interrupt

WATCH_SECONDS = 0.5  # how often a worker checks that its parent is alive
SETTINGS_PREFIX = "DPTUNE_"  # environment variables that travel with each task (_with_settings)
_PARENT: int | None = None  # in a worker of run_parallel: the pid of the process that started it


def threads_per_job(jobs: int) -> int:
    """BLAS/OpenMP threads each of ``jobs`` processes may use: ``max(1, cores // jobs)``."""
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


def _die_with_parent(parent: int, interval: float = WATCH_SECONDS) -> None:
    """Worker initializer: end this process as soon as ``parent`` is no longer its parent.

    ``parent`` is the pid of the process that called :func:`run_parallel`; a worker that finds
    another parent (the original died, the worker was re-parented to init or a sub-reaper) exits
    with status 1 without running anything more.

    The worker also ignores SIGINT: a Ctrl-C in the terminal reaches the whole process group,
    and a worker that raised ``KeyboardInterrupt`` of its own would print its traceback, or
    "Exception ignored" when the interrupt lands in a finalizer. The parent decides: it stops
    and kills its workers (:func:`terminate_workers`). (Blocking SIGINT in the thread that
    starts the workers is not enough: the process launcher unblocks every signal in the child.)
    """
    global _PARENT
    _PARENT = parent
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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


def _settings() -> dict[str, str]:
    """The caller's environment variables named ``DPTUNE_*``, which each task carries."""
    return {k: v for k, v in os.environ.items() if k.startswith(SETTINGS_PREFIX)}


def _with_settings(settings: dict[str, str], fn: Callable[..., Any], args: tuple) -> Any:
    """In a worker: make its ``DPTUNE_*`` environment ``settings`` (the caller's; the worker
    may have been started for an earlier run, when they differed), then ``fn(*args)``."""
    for k in [k for k in os.environ if k.startswith(SETTINGS_PREFIX) and k not in settings]:
        del os.environ[k]
    os.environ.update(settings)
    return fn(*args)


def in_background(work: Callable[[], Any], poll: Callable[[], None] | None = None,
                  interval: float = 0.2) -> Any:
    """``work()`` in a helper thread while the calling (main) thread waits for it, running
    ``poll()`` every ``interval`` seconds (a progress bar); its result is returned and its
    exception raised here.

    Why a thread: a compiled kernel holds the thread that runs it, and Python delivers Ctrl-C
    to the main thread only, between bytecodes; the waiting main thread answers it at once.

    On an interrupt (Ctrl-C, a stop signal, also one a finalizer swallowed:
    :mod:`dptune._interrupt`) or any other exception while it waits, the worker processes are
    terminated and the helper thread is asked to stop: :func:`dptune._interrupt.check`, which
    the work calls between its units, raises ``KeyboardInterrupt`` in that thread from then
    on. The exception goes on here at once, without waiting for the unit in progress. A command
    ends its process, and the thread with it; a notebook's process keeps running, and without
    the request the thread would go on with the whole sweep in the background after the
    interrupt gave control back to the user: it ends after the unit in progress, which is kept
    as any finished unit is."""
    from dptune._interrupt import stop_event

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = work()
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = err

    th = threading.Thread(target=target, name="dptune-work", daemon=True)
    stop = stop_event(th)
    th.start()
    try:
        while th.is_alive():
            th.join(interval)
            check_interrupt()  # also an interrupt that a finalizer swallowed (dptune._interrupt)
            if poll is not None:
                poll()
    except BaseException:
        stop.set()
        terminate_workers()  # shut the worker pool down cleanly before the process ends
        raise
    if "error" in box:
        raise box["error"]
    return box.get("result")


def terminate_workers() -> None:
    """Kill the worker processes of the current loky executor (after an interrupt): SIGKILL
    first, so that no worker finishes its unit or takes the next one while the executor shuts
    down (a worker in a compiled kernel would otherwise keep the shutdown waiting)."""
    try:
        from joblib.externals.loky import reusable_executor

        executor = getattr(reusable_executor, "_executor", None)
        if executor is None:
            return
        for proc in list((getattr(executor, "_processes", None) or {}).values()):
            try:
                proc.kill()
            except Exception:  # noqa: BLE001 - already gone
                pass
        executor.shutdown(wait=False, kill_workers=True)
    except Exception:  # noqa: BLE001 - best effort: the workers also die with this process
        pass


def run_parallel(fn: Callable[..., Any], calls: Sequence[tuple], jobs: int,
                 on_done: Callable[[Any], None] | None = None) -> list[Any]:
    """``fn(*args)`` for every ``args`` in ``calls`` on ``jobs`` loky processes (in-process when
    ``jobs <= 1`` or there is one call); ``on_done(result)`` runs in the caller as each finishes
    (e.g. to advance a progress bar). Results come back in completion order. The worker
    processes end with the calling process, however it ends (:func:`_die_with_parent`), and
    never act on the terminal's Ctrl-C (:func:`_die_with_parent`); they run each call with the
    caller's ``DPTUNE_*`` environment as it is when this is called, also those kept from an
    earlier run (:func:`_with_settings`)."""
    out: list[Any] = []
    if jobs <= 1 or len(calls) <= 1:
        def serial() -> list[Any]:
            for args in calls:
                check_interrupt()
                r = fn(*args)
                out.append(r)
                if on_done is not None:
                    on_done(r)
            return out

        # in the main thread, the work runs beside it, so that Ctrl-C stops the command at
        # once even while a compiled kernel holds this thread (:func:`in_background`)
        if threading.current_thread() is threading.main_thread():
            return in_background(serial)
        return serial()
    from joblib import Parallel, delayed, parallel_config

    settings = _settings()

    def work() -> list[Any]:
        # max_nbytes=None: arguments are small (experiments, tasks), so no memory-mapped
        # temporary folder, which a killed worker would leave behind in /dev/shm
        with parallel_config(
                backend="loky", inner_max_num_threads=threads_per_job(jobs), max_nbytes=None,
                initializer=_die_with_parent, initargs=(os.getpid(),)):
            for r in Parallel(n_jobs=jobs, return_as="generator_unordered")(
                    delayed(_with_settings)(settings, fn, args) for args in calls):
                out.append(r)
                if on_done is not None:
                    on_done(r)
        return out

    if threading.current_thread() is threading.main_thread():
        return in_background(work)
    return work()
