"""Reading slices of the result store: one (metric, cutoff) with :func:`read_matrix`, or a
whole fold with :func:`read_fold` into a :class:`FoldSlice` (optionally in a reusable
:class:`FoldBuffer`).

:func:`read_fold` is the batched reader the analysis uses: each part holding a requested
configuration is opened once and only the row groups of the requested (metric, cutoff) pairs
are decoded. Pass 1 (:func:`_part_users`) decodes the ``user`` column of one row group per part
(every row group of a part written by ``write_part`` holds the same users; ``scan_all_users``
reads them all, and is used automatically when pass 2 meets a user pass 1 did not see) to find
the users present; pass 2 (:func:`_scatter_part`) decodes the values and scatters them into one
float32 array ``(metric-cutoff, configuration, user)`` with NaN where a (configuration, user)
has no row. Memory is bounded by one fold of the requested configurations.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from dptune.errors import input_error, plain
from dptune.store._schema import LAYOUT, PARTS

__all__ = ["FoldBuffer", "FoldSlice", "read_matrix", "read_fold", "slice_of"]

Slot = dict[int, tuple[Path, dict[str, Any]]]  # config_id -> (part, metadata) of one fold


@dataclass
class _PartFacts:
    """What reading a part once teaches about it, kept while its fold is read: the rows of
    each row group (from its Parquet footer; the parsed footer itself is not kept: about 1 MB
    each once parsed, 0.25 GiB for one fold of the full-size store) and, for a config-major
    part, the run of users every row group repeats."""

    stamp: tuple[int, int]  # the file's size and modification time when they were read
    rows: tuple[int, ...]
    run_users: np.ndarray | None = None

    @classmethod
    def read(cls, path: Path, stamp: tuple[int, int]) -> _PartFacts:
        md = pq.read_metadata(path)
        return cls(stamp, tuple(md.row_group(r).num_rows for r in range(md.num_row_groups)))


class FoldBuffer:
    """Reusable float32 memory for successive :func:`read_fold` calls, and what the reads of
    one fold learn about its parts.

    The analysis holds one fold at a time; a fresh fold-sized array per fold (0.7 GB on
    ML-1M) pays its page faults every time (about 1.5 s here). An array handed out is valid
    until the next call of :meth:`array`. A fold too large for memory is read in groups of
    metric@N, one call per group; the parts' footers and config-major runs of users are read
    by the first call and reused by the others of the same (store, algorithm, fold)
    (:meth:`facts`), so that each group costs one pass over the values alone.
    """

    def __init__(self) -> None:
        self._memory: np.ndarray | None = None
        self._fold: tuple[str, str, str] | None = None
        self._facts: dict[Path, _PartFacts] = {}

    def facts(self, root: Path, algorithm: str, fold: str) -> dict[Path, _PartFacts]:
        """The part facts of (``root``, ``algorithm``, ``fold``); those of another fold are
        dropped (one fold's at a time: tens of kB per part). A part rewritten since (another size
        or modification time) is read again."""
        key = (str(root), str(algorithm), str(fold))
        if key != self._fold:
            self._fold, self._facts = key, {}
        return self._facts

    def array(self, shape: tuple[int, ...]) -> np.ndarray:
        """A ``float32`` array of ``shape`` (uninitialised) in the buffer's memory."""
        n = int(np.prod(shape, dtype=np.int64))
        if self._memory is None or self._memory.size < n:
            self._memory = None  # release the old block before allocating the larger one
            self._memory = np.empty(n, dtype=np.float32)
        return self._memory[:n].reshape(shape)


@dataclass(frozen=True)
class FoldSlice:
    """Values of some configurations on one (algorithm, fold), every requested (metric, cutoff).

    ``values[m, r, j]`` is the float32 value of metric-cutoff ``metric_cutoffs[m]``,
    configuration ``config_ids[r]`` (sorted, unique) and user code ``users[j]`` (sorted: every
    user with at least one row); NaN where the store has no row (a user not evaluated for that
    configuration). Built by :func:`read_fold`.
    """

    algorithm: str
    fold: str
    config_ids: np.ndarray
    metric_cutoffs: tuple[tuple[str, int], ...]
    users: np.ndarray
    values: np.ndarray

    #: Per metric@N: whether the fold's array has no NaN at all (computed on first use).
    _complete: dict[tuple[str, int], bool] = field(default_factory=dict, compare=False,
                                                   repr=False)

    def _rows(self, key: tuple[str, int], ids: np.ndarray) -> np.ndarray:
        """Rows of ``ids`` in :attr:`values`, each checked to have been read."""
        if key not in self.metric_cutoffs:
            raise input_error("store", f"{self.algorithm}/fold {self.fold}",
                              f"{key[0]}@{key[1]} was not read")
        if len(ids) and not len(self.config_ids):
            raise input_error("store", f"{self.algorithm}/fold {self.fold}",
                              f"config_id {ids[:5].tolist()} was not read")
        rows = np.searchsorted(self.config_ids, ids)
        bad = (rows >= len(self.config_ids)) | (
            self.config_ids[np.minimum(rows, len(self.config_ids) - 1)] != ids)
        if bad.any():
            raise input_error("store", f"{self.algorithm}/fold {self.fold}",
                              f"config_id {ids[bad][:5].tolist()} was not read")
        return rows

    def matrix(self, metric: str, cutoff: int,
               config_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Exactly :func:`read_matrix` for a subset of the configurations: a
        ``(len(config_ids), n_users)`` float64 matrix (rows in the requested order) over the users
        present for every requested configuration, users sorted."""
        values, rows, columns = self.in_place(metric, cutoff, config_ids)
        if columns is None:  # the usual case: no column selection (one copy less)
            return self.users.copy(), values[rows].astype(np.float64)
        return self.users[columns], values[rows][:, columns].astype(np.float64)

    def in_place(self, metric: str, cutoff: int, config_ids: Sequence[int]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """:meth:`matrix` without the copy: ``(values, rows, columns)`` with ``values`` the fold's
        own float32 ``(configuration, user)`` array of the metric@N, ``rows`` the requested
        configurations' rows in it and ``columns`` the users present for every one of them
        (sorted column indices; None when every user is, the usual case), so that
        ``values[rows][:, columns]`` is :meth:`matrix`'s matrix. The analysis's paired tests
        read the pairs' rows straight from here: on a large scope the float64 copy cost more
        than the tests themselves."""
        key = (str(metric), int(cutoff))
        rows = self._rows(key, np.asarray(config_ids, dtype=np.int64))
        values = self.values[self.metric_cutoffs.index(key)]
        if key not in self._complete:
            self._complete[key] = not bool(np.isnan(values).any())
        if self._complete[key]:
            return values, rows, None
        present = ~np.isnan(values[rows]).any(axis=0)
        return values, rows, (None if present.all() else np.flatnonzero(present))


def slice_of(read: Any) -> FoldSlice | None:
    """The :class:`FoldSlice` behind ``read`` when ``read`` is its ``matrix`` method (what the
    analysis gets from a store with ``read_fold``), else None. The paired tests then read the
    fold's array in place (:meth:`FoldSlice.in_place`) rather than a float64 copy per scope."""
    block = getattr(read, "__self__", None)
    return block if isinstance(block, FoldSlice) else None


def _check_configs(root: Path, slot: Slot, algorithm: str, fold: str, ids: np.ndarray) -> None:
    """Every requested configuration must have a part on the fold."""
    missing = [int(c) for c in ids if int(c) not in slot]
    if missing:
        raise input_error(Path(root) / PARTS, f"{algorithm}/fold {fold}",
                          f"no results for config_id {missing[:5]}")


def _config_ids(root: Path, config_ids: object) -> np.ndarray:
    """``config_ids`` as a 1-d int64 array; anything else is one line naming the argument."""
    try:
        ids = np.asarray(config_ids, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        ids = None
    if ids is None or ids.ndim != 1:
        raise input_error(root, "config_ids", "must be a list of integer configuration ids, "
                          f"got {str(config_ids)[:40]}")
    return ids


def _check_slice(root: Path, meta: dict[str, Any], metric: str, cutoff: int) -> None:
    """One line naming ``metric`` or ``cutoff`` when the part of metadata ``meta`` does not hold
    it, with the ones it holds (every part of a store holds the same)."""
    if metric not in meta["metrics"]:
        raise input_error(root, "metric", f"{plain(metric)} is not stored (the store has "
                          f"{', '.join(meta['metrics'])})")
    if isinstance(cutoff, bool) or cutoff not in meta["cutoffs"]:
        raise input_error(root, "cutoff", f"{plain(cutoff)} is not stored (the store has "
                          f"{', '.join(str(c) for c in meta['cutoffs'])})")


def _row_group(meta: dict[str, Any], metric: str, cutoff: int) -> int:
    """Row group of (metric, cutoff) in a part: ``metric index * n_cutoffs + cutoff index``."""
    return meta["metrics"].index(metric) * len(meta["cutoffs"]) + meta["cutoffs"].index(int(cutoff))


def _parts_of(slot: Slot, ids: np.ndarray) -> dict[Path, list[int]]:
    """The requested configurations grouped by the part holding them (request order)."""
    by_path: dict[Path, list[int]] = {}
    for c in ids:
        by_path.setdefault(slot[int(c)][0], []).append(int(c))
    return by_path


def read_matrix(root: Path, slot: Slot, algorithm: str, metric: str, cutoff: int, fold: str,
                config_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """One slice as a (len(config_ids), n_users) float64 matrix over the users present for
    every requested configuration (inner join), users sorted.

    Reads only the parts holding the requested configurations, and of each part only the row
    group of (metric, cutoff), so memory is bounded by the slice. A configuration without
    results, or a metric or cutoff the parts do not hold, is one line naming the argument
    (:func:`_check_slice`).
    """
    ids = _config_ids(root, config_ids)
    _check_configs(root, slot, algorithm, fold, ids)
    if not len(ids):  # no configuration: no row, and no user to join on
        return np.zeros(0, dtype=np.int32), np.zeros((0, 0))
    parts = _parts_of(slot, ids)
    for wanted in parts.values():
        _check_slice(root, slot[wanted[0]][1], metric, cutoff)
    chunks = []
    for path, wanted in parts.items():
        rg = _row_group(slot[wanted[0]][1], metric, cutoff)
        t = pq.ParquetFile(path).read_row_group(rg, columns=["config_id", "user", "value"])
        cfg = t.column("config_id").to_numpy()
        keep = np.isin(cfg, wanted)
        chunks.append((cfg[keep], t.column("user").to_numpy()[keep], t.column("value").to_numpy()[keep]))
    cfg = np.concatenate([c[0] for c in chunks])
    usr = np.concatenate([c[1] for c in chunks])
    val = np.concatenate([c[2] for c in chunks]).astype(np.float64)
    users, col = np.unique(usr, return_inverse=True)
    # one row per distinct configuration, then the requested order (an id asked for twice has
    # its row twice, as FoldSlice.matrix gives it)
    distinct, back = np.unique(ids, return_inverse=True)
    mat = np.full((len(distinct), len(users)), np.nan)
    mat[np.searchsorted(distinct, cfg), col] = val
    mat = mat[back]
    present = ~np.isnan(mat).any(axis=0)
    return users[present].astype(np.int32), mat[:, present]


# --------------------------------------------------------------------------------------------
# read_fold

def _block_copy(values: np.ndarray, cfg: np.ndarray, usr: np.ndarray, val: np.ndarray,
                sizes: Sequence[int], row_of: np.ndarray, col_of: np.ndarray) -> bool:
    """Copy one part's rows into ``values`` by blocks when the part has the layout
    ``write_part`` writes; return False (nothing copied) otherwise.

    That layout: every row group has the same configurations in the same order, each followed
    by the same run of users. Checked on the data itself (two passes of comparisons); then the
    values of row group ``m`` and configuration ``c`` are one contiguous run that goes to
    ``values[m, row_of[c], col_of[users]]`` (a slice when those columns are consecutive).
    """
    n_rg = len(sizes)
    if n_rg == 0 or len(set(sizes)) != 1 or sizes[0] == 0:
        return False
    first_cfg = cfg[: sizes[0]]
    n_u = int(np.argmax(first_cfg != first_cfg[0])) or sizes[0]  # length of the first run
    if sizes[0] % n_u:
        return False
    n_c = sizes[0] // n_u
    cfg3 = cfg.reshape(n_rg, n_c, n_u)
    usr3 = usr.reshape(n_rg, n_c, n_u)
    if not (np.array_equal(cfg3, np.broadcast_to(cfg3[:1, :, :1], cfg3.shape))
            and np.array_equal(usr3, np.broadcast_to(usr3[:1, :1, :], usr3.shape))):
        return False
    run_users = usr3[0, 0]
    if len(np.unique(cfg3[0, :, 0])) != n_c or len(np.unique(run_users)) != n_u:
        return False  # repeated keys: leave the order of overwrites to the generic path
    cols = col_of[run_users]
    if cols.min() < 0:
        return False  # a user the first pass did not see: the generic path handles it
    _copy_runs(values, val.reshape(n_rg, n_c, n_u), row_of[cfg3[0, :, 0]], cols)
    return True


def _copy_runs(values: np.ndarray, val3: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> None:
    """``values[m, rows[c], cols] = val3[m, c]`` for every row group ``m`` and configuration
    ``c`` with ``rows[c] >= 0`` (a contiguous slice when ``cols`` are consecutive)."""
    kept = np.flatnonzero(rows >= 0)
    if not len(kept) or not len(cols):
        return
    n_rg, n_u = val3.shape[0], val3.shape[2]
    src = val3[:, kept, :]
    target = rows[kept]
    if np.array_equal(cols, np.arange(cols[0], cols[0] + n_u)):
        values[:n_rg, target, cols[0]: cols[0] + n_u] = src
    else:
        values[:n_rg, target[:, None], cols[None, :]] = src


@dataclass
class _PartJob:
    """One part to read: its row groups (in request order) and their row counts, the
    configurations wanted from it, what is known of the part (``facts``), and for a
    config-major part its configuration order and users per run (``layout``) and, once pass 1
    of this fold has read them, the users of each run (``run_users``)."""

    path: Path
    row_groups: list[int]
    sizes: list[int]
    wanted: np.ndarray
    facts: _PartFacts
    layout: tuple[np.ndarray, int] | None = None

    @property
    def run_users(self) -> np.ndarray | None:
        """The run of users of a config-major part, None before pass 1 has read it (or when
        the requested row groups do not have the layout)."""
        return self.facts.run_users if self.layout is not None else None


def _plan_parts(slot: Slot, ids: np.ndarray, mcs: tuple[tuple[str, int], ...],
                facts: dict[Path, _PartFacts]) -> list[_PartJob]:
    """The parts to read, each with its requested row groups.

    A part whose metadata declares the layout ``write_part`` writes (``"layout":
    "config-major"``: each row group holds the part's ``config_ids`` in order, each followed by
    the same users) and whose row counts agree with it is read from its ``value`` column alone.
    Parts are opened only while read: an open ``ParquetFile`` keeps its file buffered. A part's
    footer is read once for ``facts`` (and its run of users, once pass 1 has read it).
    """
    jobs: list[_PartJob] = []
    for path, wanted in _parts_of(slot, ids).items():
        meta = slot[wanted[0]][1]
        rgs = []
        for metric, cutoff in mcs:
            if metric not in meta["metrics"] or cutoff not in meta["cutoffs"]:
                raise input_error(path, f"{metric}@{cutoff}", "not stored in this part")
            rgs.append(_row_group(meta, metric, cutoff))
        st = os.stat(path)
        known = facts.get(path)
        if known is None or known.stamp != (st.st_size, st.st_mtime_ns):  # new or rewritten
            known = facts[path] = _PartFacts.read(path, (st.st_size, st.st_mtime_ns))
        sizes = [known.rows[r] for r in rgs]
        job = _PartJob(path, rgs, sizes, np.asarray(wanted, dtype=np.int64), known)
        if meta.get("layout") == LAYOUT and all(
                n == len(meta["config_ids"]) * int(meta["n_users"]) for n in sizes):
            job.layout = (np.asarray(meta["config_ids"], dtype=np.int64), int(meta["n_users"]))
        jobs.append(job)
    return jobs


def _each(fn: Callable[[_PartJob], Any], jobs: list[_PartJob], n_threads: int) -> list[Any]:
    """``[fn(job) for job in jobs]``, on ``n_threads`` threads when more than one."""
    if n_threads == 1:
        return [fn(job) for job in jobs]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(n_threads) as pool:
        return list(pool.map(fn, jobs))


def _part_users(job: _PartJob, scan_all_users: bool) -> np.ndarray:
    """Pass 1: the users of the part (of its first requested row group, or of all with
    ``scan_all_users``); keep a config-major part's run of users for pass 2 and for the fold's
    next groups of metric@N (every row group of such a part repeats it, by the layout's
    contract)."""
    if job.run_users is not None and not scan_all_users:  # read by an earlier group
        return job.run_users
    rgs = job.row_groups
    with pq.ParquetFile(job.path) as pf:
        usr = pf.read_row_groups(rgs if scan_all_users else rgs[:1], columns=["user"],
                                 use_threads=False).column("user").to_numpy()
    if job.layout is not None:
        job.facts.run_users = usr[: job.layout[1]].copy()
    return usr


def _scatter_part(job: _PartJob, values: np.ndarray, ids: np.ndarray, col_of: np.ndarray,
                  n_slots: int) -> bool:
    """Pass 2: copy one part's values into ``values[m, row, col]``; False when the part holds
    a user pass 1 did not see (nothing of that part is then guaranteed written)."""
    rgs, sizes = job.row_groups, job.sizes
    row_of = np.full(n_slots, -1, dtype=np.int64)  # row in ``values``; -1 = not here
    row_of[job.wanted] = np.searchsorted(ids, job.wanted)
    if job.run_users is not None:  # config-major part: the values alone
        order, n_u = job.layout
        rows, cols = row_of[order], col_of[job.run_users]
        with pq.ParquetFile(job.path) as pf:
            val = pf.read_row_groups(rgs, columns=["value"],
                                     use_threads=False).column("value").to_numpy()
        _copy_runs(values, val.reshape(len(rgs), len(order), n_u), rows, cols)
        return True
    with pq.ParquetFile(job.path) as pf:
        t = pf.read_row_groups(rgs, columns=["config_id", "user", "value"], use_threads=False)
    cfg = t.column("config_id").to_numpy()
    usr = t.column("user").to_numpy()
    val = t.column("value").to_numpy()
    if usr.size and int(usr.max()) >= len(col_of):  # a user beyond every user pass 1 saw
        return False
    if cfg.min(initial=0) < 0 or cfg.max(initial=0) >= n_slots:
        raise input_error(job.path, "config_id", "holds a configuration its metadata does not list")
    if _block_copy(values, cfg, usr, val, sizes, row_of, col_of):
        return True
    return _scatter_rows(values, cfg, usr, val, sizes, row_of, col_of, len(ids))


def _scatter_rows(values: np.ndarray, cfg: np.ndarray, usr: np.ndarray, val: np.ndarray,
                  sizes: Sequence[int], row_of: np.ndarray, col_of: np.ndarray, n_ids: int) -> bool:
    """Generic pass 2 for any row order: flat index ``(m * n_ids + row) * width + col`` of
    every row; False when a user has no column."""
    width = values.shape[2]
    rows = row_of[cfg]
    keep = rows >= 0
    rows += np.repeat(np.arange(len(sizes), dtype=np.int64) * n_ids, sizes)
    rows *= width
    col = col_of[usr]
    if col.min(initial=0) < 0:  # a user pass 1 did not see: redo with every row group
        return False
    rows += col
    if not keep.all():
        rows, val = rows[keep], val[keep]
    values.reshape(-1)[rows] = val
    return True


def read_fold(root: Path, slot: Slot, algorithm: str, fold: str, config_ids: Sequence[int],
              metric_cutoffs: Sequence[tuple[str, int]], threads: int | None = None,
              *, scan_all_users: bool = False, buffer: FoldBuffer | None = None) -> FoldSlice:
    """Every requested (metric, cutoff) of ``config_ids`` on one fold, read in one pass.

    ``slot`` is the store index of (``algorithm``, ``fold``). Parts are read by ``threads``
    threads (default: the CPU count, at most 4); every configuration lives in one part, so the
    threads write disjoint cells. With ``buffer`` the values live in its reusable memory (valid
    until the buffer's next use). :meth:`FoldSlice.matrix` gives exactly what
    :func:`read_matrix` returns for any subset.
    """
    ids = np.unique(_config_ids(root, config_ids))
    _check_configs(root, slot, algorithm, fold, ids)
    try:
        mcs = tuple((str(m), int(c)) for m, c in metric_cutoffs)
    except (TypeError, ValueError):
        raise input_error(root, "metric_cutoffs", "must be a list of (metric, cutoff) pairs, "
                          f"got {str(metric_cutoffs)[:40]}") from None
    for metric, cutoff in mcs if len(ids) else ():  # every part holds the same metrics@N
        _check_slice(root, slot[int(ids[0])][1], metric, cutoff)
    if not len(ids) or not mcs:
        return FoldSlice(algorithm, str(fold), ids, mcs, np.zeros(0, dtype=np.int32),
                         np.empty((len(mcs), len(ids), 0), dtype=np.float32))
    facts = buffer.facts(root, algorithm, fold) if buffer is not None else {}
    jobs = _plan_parts(slot, ids, mcs, facts)
    n_threads = max(1, min(threads or min(os.cpu_count() or 1, 4), len(jobs)))
    found = _each(lambda job: _part_users(job, scan_all_users), jobs, n_threads)
    max_user = max((int(u.max()) for u in found if u.size), default=-1)
    seen = np.zeros(max_user + 1, dtype=bool)
    for u in found:
        seen[u] = True
    users = np.flatnonzero(seen).astype(np.int32)
    col_of = np.full(max_user + 1, -1, dtype=np.int64)
    col_of[users] = np.arange(len(users))
    shape = (len(mcs), len(ids), len(users))
    values = buffer.array(shape) if buffer is not None else np.empty(shape, dtype=np.float32)
    # NaN marks a (configuration, user) without a row; when every part is config-major and
    # holds every user of the fold, pass 2 writes every cell and the fill (a whole pass over
    # the fold's memory) is not needed
    if not all(job.run_users is not None and len(job.run_users) == len(users) for job in jobs):
        values.fill(np.nan)
    n_slots = max(slot) + 1
    done = _each(lambda job: _scatter_part(job, values, ids, col_of, n_slots), jobs, n_threads)
    if not all(done):
        del values
        return read_fold(root, slot, algorithm, fold, ids, mcs, threads, scan_all_users=True,
                         buffer=buffer)
    return FoldSlice(algorithm, str(fold), ids, mcs, users, values)
