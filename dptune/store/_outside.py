"""Keeping what a command writes out of result stores.

A results directory holds only what ``dptune run`` writes there (its layout is a contract,
:mod:`dptune.store._schema`): a report folder or a grid file written inside it could replace
one of its files (``manifest.json``) or put files the store does not know into its part
folders. So every path a command is about to write (``--reports``, ``--out``) is checked, before
any work, to lie outside every results directory: :func:`check_outside_store`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from dptune.errors import check_path, first_few, input_error
from dptune.store._identity import QUARANTINE
from dptune.store._integrity import INDEX_DIR
from dptune.store._schema import NOISE_DIR, PARTS

__all__ = ["is_results_dir", "results_dir_of", "check_outside_store", "check_results_target"]

#: What a sweep writes into its results directory before (and beside) its manifest: a
#: directory holding only these (a sweep stopped before its manifest was written) is one of its
#: own; anything else in a directory without a manifest belongs to somebody else.
STORE_ENTRIES = frozenset({PARTS, NOISE_DIR, INDEX_DIR, QUARANTINE, "configs.csv", "users.csv",
                           "trials.csv", "optuna.db", "design.json",  # the sweeper's DESIGN_FILE
                           "noise_trials.csv",  # the noise floor's trials
                           "reports.txt",  # dptune run's record of its report folders
                           "manifest.json"})


def is_results_dir(directory: str | os.PathLike[str]) -> bool:
    """Whether ``directory`` is a dptune results directory: it has a ``manifest.json`` and a
    part or index folder (``per_user.parquet/``, ``index/``), or a manifest naming an
    experiment (a store whose folders were not made yet). A ``manifest.json`` of another tool
    alone does not make one."""
    d = Path(directory)
    manifest = d / "manifest.json"
    if not manifest.is_file():
        return False
    if (d / PARTS).is_dir() or (d / INDEX_DIR).is_dir():
        return True
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "experiment" in data and "algorithms" in data


def results_dir_of(path: str | os.PathLike[str]) -> Path | None:
    """The results directory ``path`` lies in (``path`` itself or its nearest folder above that
    :func:`is_results_dir`), or ``None``. Symbolic links are followed, so a link into a store
    counts as inside it."""
    p = Path(path).resolve()
    for d in (p, *p.parents):
        if is_results_dir(d):
            return d
    return None


def check_outside_store(path: object, flag: str,
                        results: str | os.PathLike[str] | None = None) -> None:
    """One line naming ``flag`` when ``path``, which a command is about to write (a file or a
    folder), is a results directory or lies inside one (:func:`results_dir_of`), or lies in
    ``results`` (the results directory of the same command, which may not exist yet).

    Called before any work, so that a report or grid file never replaces a file of a store nor
    adds files its readers would take for parts.
    """
    check_path(path, flag, "", "a path to write")
    p = Path(path).resolve()
    inside = results_dir_of(p)
    if inside is None and results is not None:
        root = Path(results).resolve()
        inside = root if p == root or root in p.parents else None
    if inside is None:
        return
    where = "is a results directory" if p == inside else f"lies inside the results directory {inside}"
    raise input_error(flag, None, f"{path} {where}, which holds only what dptune run writes; "
                      "give a path outside it")


def _store_entry(name: str) -> bool:
    """Whether a sweep may have written ``name`` before its manifest: :data:`STORE_ENTRIES`,
    SQLite's side files of ``optuna.db`` (another worker creating its schema) and a journal
    storage kept in the results directory (``--storage results/<name>.journal`` and its lock)."""
    return (name in STORE_ENTRIES or name.startswith("optuna.db-")
            or name.endswith((".journal", ".journal.lock")))


def check_results_target(results: str | os.PathLike[str]) -> None:
    """Refuse, before any work, a results directory a sweep would write into but that is not
    its own: a folder inside another results directory (its files would be taken for that
    store's), or an existing folder without a manifest that holds files a sweep does not write
    (the user's own ``users.csv`` or ``trials.csv`` would be replaced, a report folder mixed
    with a store). A new folder, an empty one, a results directory and one a stopped sweep
    left before its manifest (:data:`STORE_ENTRIES` only, its part folder made first) pass."""
    d = Path(results)
    above = results_dir_of(d.parent) if d.parent != d else None
    if above is not None:
        raise input_error(d, None, f"lies inside the results directory {above}: give a "
                          "folder outside it")
    if not d.is_dir() or (d / "manifest.json").is_file():
        return
    names = sorted(p.name for p in d.iterdir() if not p.name.startswith("."))
    foreign = [n for n in names if not _store_entry(n)] if PARTS in names else names
    if foreign:
        shown = first_few(foreign, 3)
        raise input_error(d, None, f"holds files ({shown}) but no manifest.json: it is no "
                          "results directory, and a sweep would replace or mix with them; give "
                          "a new or empty folder, or the results directory of this experiment")
