"""The sweep's part writer: one thread that writes the computed units' parts while the loop that
runs the units goes on with the next one.

A unit's part is encoded, compressed, fsynced and published on the host (:func:`dptune.store.
_parts.write_part`: 0.2-0.7 s for an ML-1M part). Done in line, that is time in which the
device engine's device waits (docs/performance.md, the device engine). :class:`PartWriter` takes
the finished :class:`UnitResult` instead and writes it on its own thread, with the very same
call (:meth:`ResultStore.write_unit`: temporary file, fsync, atomic rename, index entry), so a
part is the same file, written once, whoever writes it. Arrow encodes and compresses without
the interpreter lock, so the thread overlaps a computation that releases it (a device's
kernels, NumPy, BLAS), and most of one that does not.

At most ``bound`` parts are held (queued or being written): :meth:`PartWriter.submit` waits
for room, so a writer slower than the units slows the loop down to its pace instead of
holding every unit's values in memory. Each submitted part gets a
:class:`concurrent.futures.Future` that holds its path once it is on disk, or the exception
that its write raised, for the loop to report as that unit's error. The loop must not call a
unit done before its future is: a process killed with parts still queued loses those parts
(their units are computed again on resume), never a part half-written (the rename is atomic;
a killed write leaves a hidden temporary file, swept later) and never a unit counted done
without its part.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType

from dptune.store._schema import UnitResult

__all__ = ["PART_QUEUE", "PartWriter"]

#: Parts a :class:`PartWriter` holds at most (the one being written included): one written
#: while the next is computed, and one more to absorb a unit that computes faster than its
#: predecessor's part is written. An ML-1M part's values are about 6 MB in memory.
PART_QUEUE = 2


class PartWriter:
    """Write parts on one background thread, in the order submitted, at most ``bound`` held.

    ``write`` is the function that writes one part (a :class:`dptune.store.ResultStore`'s
    ``write_unit``). Use it as a context manager: leaving the block waits until every
    submitted part is written or has failed (:meth:`close`); the failures stay in their
    futures, for the caller to raise."""

    def __init__(self, write: Callable[[UnitResult], Path], bound: int = PART_QUEUE) -> None:
        if bound < 1:
            raise ValueError(f"bound must be at least 1, got {bound}")
        self._write = write
        self._room = threading.Semaphore(bound)
        self._items: deque[tuple[UnitResult, Future[Path]] | None] = deque()
        self._ready = threading.Condition()
        self._closed = False
        # A daemon: a process that ends (Ctrl-C, an error, the end of the run) is never kept
        # alive by a write; one cut short leaves only a hidden temporary file.
        self._thread = threading.Thread(target=self._run, name="dptune-part-writer", daemon=True)
        self._thread.start()

    def submit(self, res: UnitResult) -> Future[Path]:
        """Queue ``res``'s part; waits while ``bound`` parts are held. Returns its future."""
        if self._closed:
            raise RuntimeError("the part writer is closed")
        self._room.acquire()
        fut: Future[Path] = Future()
        with self._ready:
            self._items.append((res, fut))
            self._ready.notify()
        return fut

    def close(self) -> None:
        """Write every part submitted so far, then stop the thread (idempotent)."""
        if not self._closed:
            self._closed = True
            with self._ready:
                self._items.append(None)
                self._ready.notify()
        self._thread.join()

    def __enter__(self) -> PartWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _run(self) -> None:
        """The thread: write the queued parts one after the other until closed."""
        while True:
            with self._ready:
                while not self._items:
                    self._ready.wait()
                item = self._items.popleft()
            if item is None:
                return
            res, fut = item
            del item
            try:
                if fut.set_running_or_notify_cancel():  # a cancelled part is not written
                    fut.set_result(self._write(res))
            except BaseException as err:  # noqa: BLE001 - the caller raises it as the unit's error
                fut.set_exception(err)
            finally:
                del res  # the unit's values are not kept while the next part waits
                self._room.release()
