"""Parallelism: joblib processes over independent units, never oversubscribing the cores.

Each of ``jobs`` worker processes gets ``max(1, cores // jobs)`` BLAS/OpenMP threads (joblib's
``inner_max_num_threads``), so processes x threads <= cores; the numba BPR kernel is
single-threaded. With ``jobs == 1`` everything runs in the calling process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any


def threads_per_job(jobs: int) -> int:
    """BLAS/OpenMP threads each of ``jobs`` processes may use: ``max(1, cores // jobs)``."""
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


def run_parallel(fn: Callable[..., Any], calls: Sequence[tuple], jobs: int,
                 on_done: Callable[[Any], None] | None = None) -> list[Any]:
    """``fn(*args)`` for every ``args`` in ``calls`` on ``jobs`` loky processes (in-process when
    ``jobs <= 1`` or there is one call); ``on_done(result)`` runs in the caller as each finishes
    (e.g. to advance a progress bar). Results come back in completion order."""
    out: list[Any] = []
    if jobs <= 1 or len(calls) <= 1:
        results: Iterable[Any] = (fn(*args) for args in calls)
        for r in results:
            out.append(r)
            if on_done is not None:
                on_done(r)
        return out
    from joblib import Parallel, delayed, parallel_config

    with parallel_config(backend="loky", inner_max_num_threads=threads_per_job(jobs)):
        for r in Parallel(n_jobs=jobs, return_as="generator_unordered")(
                delayed(fn)(*args) for args in calls):
            out.append(r)
            if on_done is not None:
                on_done(r)
    return out
