"""One compute thread for the many small computations of a simulation study.

A study runs thousands of tiny bootstraps (a few hundred users, a few dozen pairs): the start-up
of a parallel numba kernel and a multi-threaded BLAS call costs more than such a fold, and idle
BLAS threads spin beside the compiled loops. :func:`one_thread` holds numba and BLAS to one
thread for the duration and gives numba its former count back afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["one_thread"]


@contextmanager
def one_thread() -> Iterator[None]:
    """numba and BLAS on one thread inside the block (the former numba count restored)."""
    import numba
    from threadpoolctl import threadpool_limits

    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            yield
    finally:
        numba.set_num_threads(threads)
