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
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["handling", "interrupted", "check"]

_FLAG = threading.Event()


def interrupted() -> bool:
    """Whether Ctrl-C (SIGINT) was received while :func:`handling` was active."""
    return _FLAG.is_set()


def check() -> None:
    """Raise ``KeyboardInterrupt`` when an interrupt was received (also one that a finalizer
    swallowed). Called by the loops that wait for work."""
    if _FLAG.is_set():
        raise KeyboardInterrupt


def _on_sigint(signum: int, frame: Any) -> None:
    if _FLAG.is_set():  # the second Ctrl-C: stop now, without cleaning up further
        os.write(2, b"dptune: interrupted again; stopped\n")
        os._exit(130)
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
    """Install the Ctrl-C handling above for the duration of a command (main thread only, and
    only where SIGINT has Python's default handler: a command started with SIGINT ignored
    stays so); Python's own handling is back when the command ends, however it ends."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    _FLAG.clear()
    old_hook = sys.unraisablehook
    signal.signal(signal.SIGINT, _on_sigint)
    sys.unraisablehook = _quiet_unraisable(old_hook)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = old_hook
        _FLAG.clear()
