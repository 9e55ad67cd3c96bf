"""External TREC runs as a per-user table (``dptune dp --runs``).

A directory of runs is evaluated into the long per-user table that ``dptune dp --per-user`` and
:func:`dptune.discriminative_power` take (one row per system, fold, user and metric@N), so
that runs, per-user tables and a sweep's store go through one and the same analysis: the runs
are only another way to write the per-user values down.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import pandas as pd

from dptune.errors import first_few, input_error
from dptune.store._trec import (
    check_threshold,
    evaluate_run,
    evaluated_users,
    read_qrels,
    read_run,
    read_train,
)

__all__ = ["fold_files", "read_runs", "run_files"]


def run_files(runs: str | Path) -> tuple[dict[str, Path], list[str]]:
    """The folds of a runs directory (fold name -> directory) and its system names.

    ``runs/`` holds one run file per system (one fold, named ``"0"``), or one sub-directory per
    fold with the same file names (file name = system; hidden files and folders are ignored).
    Anything else is refused in one line before a run is read, since a system left out would
    change every number without a word: a directory with both run files and fold
    sub-directories, a fold whose files differ from another fold's, fewer than two systems."""
    runs = Path(runs)
    if not runs.is_dir():
        raise input_error(runs, None, "--runs must be a directory of run files")
    entries = sorted(p for p in runs.iterdir() if not p.name.startswith("."))
    subdirs = [p for p in entries if p.is_dir()]
    files = [p for p in entries if not p.is_dir()]
    if subdirs and files:
        raise input_error(runs, None, "mixes fold sub-folders (" + _names(subdirs) + ") and run "
                          "files (" + _names(files) + "); use one layout: one run file per "
                          "system, or one sub-folder per fold holding the same file names")
    fold_dirs = {p.name: p for p in subdirs} if subdirs else {"0": runs}
    held = {fold: sorted(p.name for p in d.iterdir() if not p.name.startswith("."))
            for fold, d in fold_dirs.items()}
    for fold, d in fold_dirs.items():
        inner = [p for p in d.iterdir() if not p.name.startswith(".") and p.is_dir()]
        if subdirs and inner:
            raise input_error(inner[0], None, f"a folder inside fold {fold}; a fold holds one run "
                              "file per system")
    systems = sorted({name for names in held.values() for name in names})
    if len(systems) < 2:
        raise input_error(runs, None, "needs at least two run files (systems) to compare")
    for fold, d in fold_dirs.items():
        for name in systems:
            if name not in held[fold]:
                raise input_error(d / name, None, f"run file missing in fold {fold} (every fold "
                                  "holds the same systems)")
    return fold_dirs, systems


def _names(paths: Sequence[Path], most: int = 3) -> str:
    """``a, b, c and 2 more``: the first names of ``paths``."""
    return first_few([p.name for p in paths], most)


def read_runs(runs: str | Path, qrels: str | Path, train: str | Path,
              cutoffs: Sequence[int] = (1, 5, 10), threshold: float = 4.0,
              relevance_aware: bool = True, order: str = "trec",
              check_folds: Callable[[dict[str, int]], None] | None = None) -> pd.DataFrame:
    """Evaluate every run of a runs directory: the long per-user table ``system, fold, user,
    metric, cutoff, value`` (systems in name order, then folds, then the rows of
    :func:`dptune.store.evaluate_run`).

    ``qrels`` and ``train`` are one file, or a directory with one file per fold (file stem =
    fold name). Each run is scored by :func:`~dptune.store.evaluate_run` against its fold's
    qrels and training pairs (``cutoffs``, ``threshold``, ``relevance_aware`` and ``order`` as
    there). Every problem is one line naming the file. ``attrs["not_evaluated"]`` maps each
    fold to the users of its runs and qrels that have no relevant item and so no values
    (sorted ids), ``attrs["users_seen"]`` to the number of those users;
    ``attrs["missing_from_run"]`` maps each fold to each system's evaluated users without a
    line in its run (scored 0), ``attrs["relevant_in_train"]`` each fold to its relevant pairs
    that are also training pairs (:func:`~dptune.store.evaluate_run`).

    Every fold's qrels is read before any run: ``check_folds``, when given, is then called
    with the users each fold evaluates (its qrels users with a relevant item, every one of
    whom each run scores), so that a caller refuses folds too small for its analysis
    (``dptune dp --runs --min-fold-users``) before the runs are evaluated.
    """
    fold_dirs, systems = run_files(runs)
    qrels_of = fold_files(qrels, list(fold_dirs), "qrels", runs)
    train_of = fold_files(train, list(fold_dirs), "train", runs)
    thr = check_threshold(threshold)
    read = {path: read_qrels(path) for path in dict.fromkeys(qrels_of.values())}  # one file once
    fold_qrels = {fold: read[path] for fold, path in qrels_of.items()}
    if check_folds is not None:
        check_folds({fold: evaluated_users(q, thr) for fold, q in fold_qrels.items()})
    frames = []
    left: dict[str, set[str]] = {}
    seen: dict[str, set[str]] = {}
    missing: dict[str, dict[str, list[str]]] = {}
    in_train: dict[str, int] = {}
    for fold, d in fold_dirs.items():
        q = fold_qrels[fold]
        t = read_train(train_of[fold])
        for name in systems:
            df = evaluate_run(read_run(d / name), q, t, cutoffs=cutoffs, threshold=threshold,
                              relevance_aware=relevance_aware, order=order)
            left.setdefault(fold, set()).update(df.attrs["not_evaluated"])
            seen.setdefault(fold, set()).update(df["user"].unique(), df.attrs["not_evaluated"])
            missing.setdefault(fold, {})[name] = df.attrs["missing_from_run"]
            in_train[fold] = df.attrs["relevant_in_train"]
            frames.append(df.assign(system=name, fold=fold))
    table = pd.concat(frames, ignore_index=True)[["system", "fold", "user", "metric", "cutoff",
                                                 "value"]]
    table.attrs["not_evaluated"] = {f: sorted(u) for f, u in left.items()}
    table.attrs["users_seen"] = {f: len(u) for f, u in seen.items()}
    table.attrs["missing_from_run"] = missing
    table.attrs["relevant_in_train"] = in_train
    return table


def _fold_of(name: str, folds: Collection[str]) -> str:
    """The fold a file named ``name`` belongs to: its whole name when that is a fold's (fold
    0.1's file may be named 0.1), else its stem, of the name without ``.gz`` when compressed
    (``0.qrels.gz``, ``0.gz``)."""
    plain = name[:-3] if name.endswith(".gz") and len(name) > 3 else name
    for candidate in (name, plain):
        if candidate in folds:
            return candidate
    return Path(plain).stem


def fold_files(path: str | Path, folds: Sequence[str], what: str,
               runs: str | Path) -> dict[str, Path]:
    """The ``what`` file (``"qrels"``, ``"train"``) of each of ``folds`` (the fold names of the
    runs directory ``runs``): ``path`` itself for every fold when it is a file; when it is a
    directory, the one file of each fold, whose stem (or whole name) is the fold's name
    (hidden files are ignored; a file named exactly as a fold is that fold's; a compressed
    ``0.qrels.gz`` is fold 0's, as ``0.qrels`` is). Refused in one
    line naming the folder, before any run is read: a fold without a file, a fold with two
    (``0.txt`` and ``0.qrels``: which one is meant is not for dptune to guess), and a file of
    no fold of the runs (the README's layout is one file per fold; a file left over means a
    fold of the runs is missing or misnamed, and its users would be left out without a
    word)."""
    path = Path(path)
    if not path.is_dir():
        return dict.fromkeys(folds, path)
    entries = sorted(p for p in path.iterdir() if not p.name.startswith("."))
    found: dict[str, list[Path]] = {fold: [] for fold in folds}
    for p in entries:
        fold = _fold_of(p.name, found)
        if fold not in found:
            raise input_error(path, p.name, f"a {what} file of no fold of {runs} (its folds: "
                              f"{first_few(list(folds), 5)}); the folder holds one file per "
                              "fold, file stem = fold name")
        found[fold].append(p)
    for fold, hits in found.items():
        if not hits:
            raise input_error(path, f"fold {fold}", f"no {what} file for this fold (expected a "
                              "file whose stem is the fold name)")
        if len(hits) > 1:
            raise input_error(path, f"fold {fold}", f"two {what} files for this fold, "
                              f"{hits[0].name} and {hits[1].name}; keep one file per fold "
                              "(file stem = fold name)")
    return {fold: hits[0] for fold, hits in found.items()}
