"""Atomic file writes: every file dptune writes appears whole or not at all.

A writer writes a hidden temporary file beside the target (``.<name>.<uuid>.tmp``, so a reader
listing the directory never sees it and :meth:`dptune.store.ResultStore.remove_stale_temporaries`
can find the leftovers of a killed writer), flushes it to disk, then renames it over the target
(``os.replace`` is atomic within a file system). :func:`publish_once` is the variant for result
parts: the first writer wins and a part, once published, never changes. :func:`staged_folder`
does the same for a whole folder (the reports): written beside it, published by one rename.

A full disk while writing is one line naming the directory (:mod:`dptune._resources`); the
temporary file or folder is removed and what was published before stays as it was.
"""

from __future__ import annotations

import errno
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dptune._resources import is_out_of_space, space_error
from dptune.errors import (
    check_not_working_dir,
    existing_parent,
    input_error,
    message_path,
    unnamable,
)

__all__ = ["temporary_path", "atomic_path", "write_bytes", "write_text", "publish_once",
           "staged_folder", "check_folder"]


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
    >>> with tempfile.TemporaryDirectory() as name:
    ...     d = Path(name)
    ...     with atomic_path(d / "a.txt") as tmp:
    ...         _ = tmp.write_text("done")
    ...     (d / "a.txt").read_text()
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
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, Exception) and is_out_of_space(err):
            raise space_error(final.parent) from None
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


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names ``a`` and ``b`` in one atomic step (Linux ``renameat2`` with
    ``RENAME_EXCHANGE``); False where the system or file system cannot."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    if rc == 0:
        return True
    if ctypes.get_errno() in (errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.ENOTSUP):
        return False
    raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), str(b))


def _link_or_copy(src: str, dst: str) -> None:
    """A hard link of ``src`` at ``dst`` (no bytes copied), or a copy where links fail."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _carry_over(old: Path, new: Path) -> None:
    """Bring what ``old`` holds and ``new`` lacks into ``new`` (hard links, no copies): files a
    reader put beside the reports are published with them, not lost."""
    if not old.is_dir():
        return
    for entry in os.scandir(old):
        target = new / entry.name
        if target.exists() or target.is_symlink():
            continue
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), target)
        elif entry.is_dir():
            shutil.copytree(entry.path, target, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(entry.path, str(target))


def _publish(stage: Path, final: Path) -> None:
    """Give ``stage`` the name ``final`` by one rename; an existing ``final`` is swapped out in
    the same step where the system can (:func:`_exchange`), else renamed aside just before;
    the old folder is then deleted."""
    for _ in range(20):  # another writer may publish the same folder meanwhile
        try:
            os.rename(stage, final)  # final absent: one rename
            return
        except OSError as err:
            if err.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.EISDIR, errno.ENOTDIR):
                raise
        if _exchange(stage, final):
            shutil.rmtree(stage, ignore_errors=True)  # the old folder, now under stage's name
            return
        old = final.with_name(f".{final.name}.{uuid.uuid4().hex}.old.tmp")
        try:
            os.rename(final, old)
        except FileNotFoundError:
            continue
        try:
            os.rename(stage, final)
        finally:
            shutil.rmtree(old, ignore_errors=True)
        return
    raise OSError(errno.EBUSY, "could not publish the folder", str(final))


def check_folder(path: str | os.PathLike[str], shown: object = None) -> None:
    """One error line (naming ``shown``, default ``path``, as :func:`dptune.errors.message_path`
    shows it) when the folder to write into, ``path``, cannot be one: it is a file, it lies
    under a file (no folder can be made there: :func:`dptune.errors.existing_parent`), no
    folder can have its name (:func:`dptune.errors.unnamable`: a name longer than the file
    system takes, a NUL character, whose ``OSError`` and ``ValueError`` went up as
    tracebacks), or it lies in a folder not ours to read."""
    name = message_path(path if shown is None else shown)
    p = Path(path)
    why = unnamable(path)
    if why is not None:
        raise input_error(name, None, f"no folder can have this name ({why})")
    try:
        if p.exists() and not p.is_dir():
            raise input_error(name, None, "is a file, not a folder: give a folder to write into")
        above = existing_parent(p)
    except PermissionError as err:  # in a folder not ours to read (a name is unnamable's)
        raise input_error(name, None, f"is not writable ({err.strerror})") from None
    if not above.is_dir():
        raise input_error(name, None, f"lies under the file {above}: no folder can be made "
                          "there; give a folder to write into")


#: A staged folder untouched this long belongs to a writer that died mid-write (``kill -9``
#: while a report was written): the next write of the same folder removes it. A live writer
#: adds files to its stage within seconds; the store's hidden temporaries follow the same rule.
STALE_STAGE_S = 3600.0


def _remove_stale_stages(final: Path) -> None:
    """Remove the staged folders of ``final`` (``.<name>.<uuid>.tmp`` beside it) that no write
    has touched for :data:`STALE_STAGE_S`."""
    import time

    cutoff = time.time() - STALE_STAGE_S
    for stage in final.parent.glob(f".{final.name}.*.tmp"):
        try:
            if stage.is_dir() and not stage.is_symlink() and stage.stat().st_mtime < cutoff:
                shutil.rmtree(stage, ignore_errors=True)
        except OSError:  # removed meanwhile, or not ours to read: left as it is
            continue


@contextmanager
def staged_folder(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a new, empty, hidden folder beside ``path`` (``.<name>.<uuid>.tmp``) to write a
    whole folder into; on success it is published as ``path`` by one rename, so a reader
    (or a full disk, or Ctrl-C halfway) never sees a half-written folder.

    Files that an existing ``path`` holds and the new folder does not are carried over (hard
    links), so only the files written are replaced. On any error the staged folder is removed
    and ``path`` is untouched; a full disk is one line naming ``path``
    (:func:`dptune._resources.space_error`); ``path`` may not be the working directory or a
    folder above it (:func:`dptune.errors.check_not_working_dir`). Where the folder beside
    ``path`` cannot be created (its parent is not writable, ``path`` is), the files are written
    into ``path`` directly, each one still atomically."""
    check_folder(path)  # before any call of the file system on it
    final = shown = Path(path)
    if final.is_symlink():
        final = final.resolve()  # publish where the link points, keep the link
    final = final.absolute()
    check_folder(final, shown)
    check_not_working_dir(shown)  # the rename would replace the shell's folder
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_stages(final)
    stage = final.with_name(f".{final.name}.{uuid.uuid4().hex}.tmp")
    try:
        stage.mkdir()
    except PermissionError:
        final.mkdir(exist_ok=True)
        try:
            yield final
        except Exception as err:
            if is_out_of_space(err):
                raise space_error(shown) from None
            raise
        return
    try:
        yield stage
        _carry_over(final, stage)
        _publish(stage, final)
    except BaseException as err:
        shutil.rmtree(stage, ignore_errors=True)
        if isinstance(err, Exception) and is_out_of_space(err):
            raise space_error(shown) from None
        raise
