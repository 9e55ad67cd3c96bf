"""Running out of memory or disk: refused up front when it can be foreseen, one line when not.

Two kinds of failure are not bad input but still end a command:

- **a request that cannot fit** (a synthetic data set of 10^13 ratings, say): its memory is
  estimated from its sizes before anything is allocated (:func:`check_fits`), and a request
  larger than this machine's physical memory is refused with one line naming the flag or
  field and the estimate (exit code 2), instead of a ``MemoryError`` after minutes of work;
- **a full disk** (``ENOSPC``, a quota, SQLite's "database or disk is full") while writing:
  :func:`on_full_disk` turns it into one line naming the directory, after the writer has
  removed its temporary file; every finished file stays as it was (files are published by
  rename), so freeing space and running the same command resumes.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dptune.errors import DptuneError, input_error

__all__ = ["OutOfSpace", "physical_memory", "human_bytes", "check_fits", "is_out_of_space",
           "on_full_disk", "space_error"]

#: ``errno`` values of a full disk or an exhausted quota.
_FULL = (errno.ENOSPC, errno.EDQUOT)


def physical_memory() -> int:
    """Bytes of physical memory of this machine (``sysconf``; 0 when it cannot be read, and
    then nothing is refused)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 0


def human_bytes(n: float) -> str:
    """``n`` bytes in binary units with three significant digits (``1.09 TiB``)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def check_fits(nbytes: float, source: object, field: str | None, what: str) -> None:
    """Refuse a request whose estimated memory, ``nbytes``, exceeds this machine's physical
    memory: one line ``<source>: <field>: <what> needs about X of memory; this machine has Y``
    (exit code 2), before anything is allocated."""
    total = physical_memory()
    if total and nbytes > total:
        raise input_error(source, field, f"{what} needs about {human_bytes(nbytes)} of memory; "
                          f"this machine has {human_bytes(total)}")


class OutOfSpace(DptuneError):
    """A full disk, as one line naming the directory (:func:`space_error`)."""


def is_out_of_space(err: BaseException) -> bool:
    """Whether ``err`` (or what it was raised from) is a full disk: an ``OSError`` with
    ``ENOSPC``/``EDQUOT``, a library error quoting it (pyarrow's ``[Errno 28]``), SQLite's
    "database or disk is full", or an :class:`OutOfSpace` already."""
    seen = 0
    while err is not None and seen < 8:
        if isinstance(err, OutOfSpace) or (isinstance(err, OSError) and err.errno in _FULL):
            return True
        text = str(err).lower()
        if "no space left on device" in text or "disk is full" in text or "disk quota" in text:
            return True
        err, seen = err.__cause__ or err.__context__, seen + 1
    return False


def space_error(directory: str | os.PathLike[str]) -> OutOfSpace:
    """The one-line error of a full disk while writing into ``directory``."""
    err = input_error(Path(directory), None, "out of space (no space left on its device): "
                      "free space and run the same command (what was finished is kept)")
    return OutOfSpace(str(err))


@contextmanager
def on_full_disk(directory: str | os.PathLike[str]) -> Iterator[None]:
    """Turn a full disk while writing into ``directory`` into :func:`space_error`; every other
    error passes unchanged. The writer inside cleans up its own temporary files."""
    try:
        yield
    except OutOfSpace:
        raise  # already named by the writer that met it
    except DptuneError:
        raise
    except Exception as err:
        if is_out_of_space(err):
            raise space_error(directory) from None
        raise
