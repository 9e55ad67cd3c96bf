"""Atomic file writes: every file dptune writes appears whole or not at all.

A writer writes a hidden temporary file beside the target (``.<name>.<uuid>.tmp``, so a reader
listing the directory never sees it and :meth:`dptune.store.ResultStore.remove_stale_temporaries`
can find the leftovers of a killed writer), flushes it to disk, then renames it over the target
(``os.replace`` is atomic within a file system). :func:`publish_once` is the variant for result
parts: the first writer wins and a part, once published, never changes.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["temporary_path", "atomic_path", "write_bytes", "write_text", "publish_once"]


def temporary_path(path: Path) -> Path:
    """A fresh hidden temporary name beside ``path`` (``.<name>.<uuid>.tmp``)."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")


def _fsync(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


@contextmanager
def atomic_path(path: str | os.PathLike[str], fsync: bool = True) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces ``path``, on error it is removed.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> with atomic_path(d / "a.txt") as tmp:
    ...     _ = tmp.write_text("done")
    >>> (d / "a.txt").read_text()
    'done'
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_path(final)
    try:
        yield tmp
        if fsync:
            _fsync(tmp)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes, fsync: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically; return the path."""
    with atomic_path(path, fsync) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(path: str | os.PathLike[str], text: str, fsync: bool = False) -> Path:
    """Write ``text`` to ``path`` atomically; return the path."""
    with atomic_path(path, fsync) as tmp:
        tmp.write_text(text)
    return Path(path)


def publish_once(tmp: Path, final: Path) -> bool:
    """Move a finished temporary file into place unless ``final`` already exists (first writer
    wins): a duplicate computed by a racing worker is discarded, so a published file never
    changes. Returns whether ``tmp`` was published (False: it was discarded).

    ``os.link`` creates the name atomically or fails when it exists (also on NFS); on file
    systems without hard links it falls back to ``os.replace``, where a duplicate may replace an
    equal file (same seeds) in a rare race.
    """
    try:
        os.link(tmp, final)
        won = True
    except FileExistsError:
        won = False
    except OSError:
        if not final.exists():
            os.replace(tmp, final)
            return True
        won = False
    tmp.unlink(missing_ok=True)
    return won
