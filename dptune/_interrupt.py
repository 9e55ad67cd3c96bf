"""Ctrl-C: every stage stops within moments, says what is kept, and a second Ctrl-C stops at once.

Python turns SIGINT into a ``KeyboardInterrupt`` raised in whatever the main thread runs at
that instant. When that is a finalizer (a ``__del__``, a weakref callback, as numba's and
joblib's objects run during garbage collection), the exception is printed as "Exception
ignored in ..." and *dropped*: the command goes on as if no Ctrl-C had come (a whole stage of
training kept running that way). So while a command runs (:func:`handling`):

- the SIGINT handler also records the interrupt (:func:`interrupted`); the loops that wait
  for work (:func:`dptune._parallel.run_parallel`, the sweep's progress loop) check it every
  fraction of a second (:func:`check`) and raise ``KeyboardInterrupt`` themselves, so an
  interrupt swallowed by a finalizer still stops the command;
- an interrupt dropped by a finalizer prints nothing (the command's own line says it all);
- a second Ctrl-C, while the command still stops, ends the process at once (exit code 130).

SIGTERM (``kill PID``, what a job scheduler or ``docker stop`` sends before SIGKILL) takes the
same route: the command stops as on Ctrl-C, ends its worker processes and says what is kept,
with exit code 143 (128 + SIGTERM) instead of 130 (:func:`signal_number`). Without it the
process died at once, and its pool's resource tracker printed warnings of leaked semaphores
and memory-mapped folders after it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["handling", "interrupted", "check", "signal_number", "stop_event"]

_FLAG = threading.Event()
#: The signal that interrupted the command (SIGINT or SIGTERM), for its exit code.
_SIGNAL: list[int] = [signal.SIGINT]
#: The signals handled: Ctrl-C, and the polite stop of ``kill``.
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def interrupted() -> bool:
    """Whether Ctrl-C (SIGINT) was received while :func:`handling` was active."""
    return _FLAG.is_set()


def check() -> None:
    """Raise ``KeyboardInterrupt`` when an interrupt was received (also one that a finalizer
    swallowed), or when the thread that calls this was asked to stop (:func:`stop_event`).
    Called by the loops that wait for work and by the work between its units."""
    if _FLAG.is_set():
        raise KeyboardInterrupt
    stop = getattr(threading.current_thread(), _STOP_ATTRIBUTE, None)
    if stop is not None and stop.is_set():
        raise KeyboardInterrupt


#: The attribute of a helper thread that holds its stop request (:func:`stop_event`).
_STOP_ATTRIBUTE = "dptune_stop"


def stop_event(thread: threading.Thread) -> threading.Event:
    """The stop request of a helper thread that runs work for a waiting main thread
    (:func:`dptune._parallel.in_background`): once it is set, :func:`check` raises
    ``KeyboardInterrupt`` in that thread. The request belongs to the thread, so a later
    command's thread is not stopped by an earlier one's interrupt."""
    stop = threading.Event()
    setattr(thread, _STOP_ATTRIBUTE, stop)
    return stop


def signal_number() -> int:
    """The signal that interrupted the command: SIGINT (Ctrl-C) or SIGTERM; its exit code is
    128 plus it (130, 143)."""
    return int(_SIGNAL[0])


def _on_sigint(signum: int, frame: Any) -> None:
    if _FLAG.is_set():  # the second one: stop now, without cleaning up further
        os.write(2, b"dptune: interrupted again; stopped\n")
        os._exit(128 + int(signum))
    _SIGNAL[0] = int(signum)
    _FLAG.set()
    raise KeyboardInterrupt


def _quiet_unraisable(previous: Any) -> Any:
    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            _FLAG.set()  # swallowed by a finalizer: the waiting loops raise it again
            return
        previous(unraisable)
    return hook


@contextmanager
def handling() -> Iterator[None]:
    """Install the handling above for the duration of a command (main thread only), for each
    of SIGINT and SIGTERM that has its default handler (a command started with one ignored, as
    a background job's SIGINT is, stays so); the previous handlers are back when the command
    ends, however it ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    taken = {s: signal.getsignal(s) for s in _SIGNALS if signal.getsignal(s) is defaults[s]}
    if not taken:
        yield
        return
    _FLAG.clear()
    _SIGNAL[0] = signal.SIGINT
    old_hook = sys.unraisablehook
    for s in taken:
        signal.signal(s, _on_sigint)
    sys.unraisablehook = _quiet_unraisable(old_hook)
    try:
        yield
    finally:
        for s, previous in taken.items():
            signal.signal(s, previous)
        sys.unraisablehook = old_hook
        _FLAG.clear()
