"""The mark of an analysis in progress, so that ``dptune status`` does not call its report
"not written yet" while a ``dptune run`` or ``dptune analyze`` writes it.

An analysis computes for minutes on a large store before its report folder appears at once
(it is published whole: :func:`dptune._atomic.staged_folder`). Meanwhile the report is indeed
not written, but the command that :func:`dptune.sweeper._status.status` suggested then
(``dptune analyze ...``) would start a second analysis of the same results beside the first.
So the commands that analyse (:func:`analysing`) leave a small file beside the report folder,
``.<folder name>.analysing`` (hidden, beside it and not in it: publishing the folder carries
the files it holds over), naming the process (``host:pid`` and its process-id space, as a
sweep's trials do: :func:`dptune.sweeper._claims.worker_id`) and when it started; it is
removed when the analysis ends, however it ends, except by ``kill -9``.

:func:`analysis_in_progress` reads it: a mark whose process is known gone (this host, the same
process-id space, no such process: :func:`dptune.sweeper._claims.worker_gone`) is no analysis in
progress; one of another host cannot be checked and is shown with its host and start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dptune.sweeper._claims import pid_space, worker_gone, worker_id

__all__ = ["analysing", "analysis_in_progress", "mark_path"]


def mark_path(report_dir: str | Path) -> Path:
    """The mark of an analysis writing ``report_dir``: ``.<name>.analysing`` beside it."""
    folder = Path(report_dir).absolute()
    return folder.with_name(f".{folder.name}.analysing")


@contextmanager
def analysing(report_dir: str | Path) -> Iterator[None]:
    """Mark ``report_dir`` as being written by this process for the duration of the block.
    Best effort: where the mark cannot be written (a folder not writable), the analysis runs
    without it, and its own writes say what is wrong. A parent folder made for the mark is
    removed with it when the analysis left it empty (an analysis refused before it wrote)."""
    path = mark_path(report_dir)
    record = {"worker": worker_id(), "pid_space": pid_space(),
              "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    tmp = path.with_name(f"{path.name}-{os.getpid()}")
    made = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    written = False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(record) + "\n")
        os.replace(tmp, path)
        written = True
    except OSError:
        tmp.unlink(missing_ok=True)
    try:
        yield
    finally:
        if written:
            try:  # only our own mark: another analysis of the same folder may have replaced it
                if json.loads(path.read_text()).get("worker") == record["worker"]:
                    path.unlink()
            except (OSError, ValueError, AttributeError):
                pass
        for folder in made:  # innermost first; one that holds anything now stays
            try:
                folder.rmdir()
            except OSError:
                break


def analysis_in_progress(report_dir: str | Path) -> dict[str, Any] | None:
    """The mark of an analysis writing ``report_dir`` (``worker``: ``host:pid``, ``started``:
    ISO time in UTC), or ``None`` when there is none, it cannot be read, or its process is
    known to be gone."""
    try:
        record = json.loads(mark_path(report_dir).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("worker"), str):
        return None
    if worker_gone(record):
        return None
    return record
