"""The result store: every per-user metric value of a sweep, written crash-safely, read by slice.

Layout of a results directory (a documented contract; see README and docs/design.md):

- ``per_user.parquet/``: one Parquet part per trained unit (one model run on one fold), named
  ``<algorithm>__<fold>__<unit>.parquet``, written to a hidden temporary file and renamed into
  place, so a part is either complete or absent. Columns ``algorithm, config_id, fold, user,
  metric, cutoff, value`` (value float32); one row group per (metric, cutoff), rows sorted by
  config_id then user, so a slice read touches one row group per part. The part's key-value
  metadata (``dptune``) records the unit's seed, timings and per-config means.
- ``configs.csv``, ``users.csv``, ``manifest.json``; ``trials.csv`` is derived from the parts.

The directory reads as one data set with ``pandas.read_parquet`` or ``pyarrow.dataset``
(hidden files are ignored by both).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dptune._atomic import publish_once, temporary_path, write_text
from dptune.errors import input_error

PARTS = "per_user.parquet"
LAYOUT = "config-major"  # see write_unit; lets read_fold decode only the value column
STALE_TEMPORARY_S = 3600.0  # a temporary file untouched this long belongs to a dead writer
SCHEMA = pa.schema(
    [
        ("algorithm", pa.string()),
        ("config_id", pa.int32()),
        ("fold", pa.string()),
        ("user", pa.int32()),
        ("metric", pa.string()),
        ("cutoff", pa.int16()),
        ("value", pa.float32()),
    ]
)
TRIAL_COLUMNS = ["algorithm", "config_id", "fold", "seed", "unit", "fit_seconds",
                 "eval_seconds", "n_users"]


@dataclass(frozen=True)
class UnitResult:
    """What one trained unit produced: per config, the users evaluated and their metric values.

    ``values[k]`` has shape (len(metrics), len(cutoffs), len(users)) for ``config_ids[k]``.
    """

    algorithm: str
    fold: str
    unit: str
    seed: int
    metrics: tuple[str, ...]
    cutoffs: tuple[int, ...]
    users: np.ndarray
    config_ids: tuple[int, ...]
    values: tuple[np.ndarray, ...]
    fit_seconds: tuple[float, ...]
    eval_seconds: tuple[float, ...]


def part_name(algorithm: str, fold: str, unit: str) -> str:
    """File name of the part holding one unit's results."""
    return f"{algorithm}__{fold}__{unit}.parquet"


class ResultStore:
    """Reader and writer of one results directory.

    The reading side implements the protocol :func:`dptune.analysis._dp.analyze` uses: ``algorithms``,
    ``configs``, ``hyperparameters``, ``folds``, ``metric_cutoffs`` and ``read_matrix``.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)

    # ----------------------------------------------------------------- writing
    def create(self) -> ResultStore:
        """Create the directory tree; an unwritable location is a one-line error."""
        try:
            (self.root / PARTS).mkdir(parents=True, exist_ok=True)
            probe = self.root / f".write-probe-{uuid.uuid4().hex}"
            probe.write_text("")
            probe.unlink()
        except OSError as err:
            raise input_error(self.root, None, f"results directory is not writable ({err.strerror})") from None
        return self

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        """Write ``manifest.json`` (sorted keys, atomically)."""
        write_text(self.root / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n")

    def write_configs(self, frames: Sequence[pd.DataFrame]) -> None:
        """Write ``configs.csv``: one row per (algorithm, config_id), hyperparameters as columns."""
        df = pd.concat(list(frames), ignore_index=True, sort=False)
        write_text(self.root / "configs.csv", df.to_csv(index=False, lineterminator="\n"))

    def write_users(self, user_ids: np.ndarray) -> None:
        """Write ``users.csv``: the user code used in the store and the original user id."""
        df = pd.DataFrame({"user": np.arange(len(user_ids), dtype=np.int32), "user_id": user_ids})
        write_text(self.root / "users.csv", df.to_csv(index=False, lineterminator="\n"))

    def has_part(self, algorithm: str, fold: str, unit: str) -> bool:
        """Whether the unit's part is already written (finished trials are never recomputed)."""
        return (self.root / PARTS / part_name(algorithm, fold, unit)).exists()

    def write_unit(self, res: UnitResult) -> Path:
        """Write one unit's part atomically (temporary file, fsync, rename).

        Two workers that computed the same unit produce the same values (results are seeded
        deterministically); the first part written is kept and a duplicate is discarded
        (:func:`dptune._atomic.publish_once`), so a finished part never changes and is never counted twice.
        """
        parts = self.root / PARTS
        final = parts / part_name(res.algorithm, res.fold, res.unit)
        tmp = temporary_path(final)
        n_users = len(res.users)
        n_cfg = len(res.config_ids)
        users = np.tile(res.users.astype(np.int32), n_cfg)
        cfg = np.repeat(np.asarray(res.config_ids, dtype=np.int32), n_users)
        means: dict[str, dict[str, float]] = {}
        for cid, vals in zip(res.config_ids, res.values, strict=True):
            m = np.asarray(vals, dtype=np.float64).mean(axis=2) if n_users else np.full(vals.shape[:2], np.nan)
            means[str(cid)] = {f"{mt}@{c}": float(m[i, j]) for i, mt in enumerate(res.metrics)
                               for j, c in enumerate(res.cutoffs)}
        meta = {
            "algorithm": res.algorithm, "fold": res.fold, "unit": res.unit, "seed": int(res.seed),
            "config_ids": [int(c) for c in res.config_ids], "metrics": list(res.metrics),
            "cutoffs": [int(c) for c in res.cutoffs], "n_users": int(n_users),
            "fit_seconds": [round(float(s), 6) for s in res.fit_seconds],
            "eval_seconds": [round(float(s), 6) for s in res.eval_seconds],
            "means": means,
            "layout": LAYOUT,
        }
        schema = SCHEMA.with_metadata({"dptune": json.dumps(meta, sort_keys=True)})
        # no dictionary for the values: metric values rarely repeat enough to pay for one
        # (random values: 30% larger files and 27% slower decoding with it; real ML-100K
        # values: 4% smaller files, no faster to decode)
        with pq.ParquetWriter(tmp, schema, compression="zstd",
                              use_dictionary=[n for n in SCHEMA.names if n != "value"]) as writer:
            for i, metric in enumerate(res.metrics):
                for j, cutoff in enumerate(res.cutoffs):
                    vals = np.concatenate([np.asarray(v[i, j], dtype=np.float32) for v in res.values]) \
                        if n_cfg else np.empty(0, np.float32)
                    n = len(vals)
                    table = pa.table(
                        {
                            "algorithm": pa.array([res.algorithm] * n, pa.string()),
                            "config_id": cfg,
                            "fold": pa.array([res.fold] * n, pa.string()),
                            "user": users,
                            "metric": pa.array([metric] * n, pa.string()),
                            "cutoff": np.full(n, cutoff, dtype=np.int16),
                            "value": vals,
                        },
                        schema=schema,
                    )
                    writer.write_table(table, row_group_size=max(n, 1))
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        publish_once(tmp, final)
        self.__dict__.pop("_index", None)
        return final

    def remove_stale_temporaries(self, older_than_s: float = STALE_TEMPORARY_S) -> list[Path]:
        """Delete the hidden ``.*.tmp`` files of writers that died mid-write; return them.

        Every reader ignores these files, so they only waste disk (a BPR-MF part is ~10 MB on
        ML-1M). A live writer finishes a part within seconds and rewrites its file as it goes,
        so a temporary file untouched for ``older_than_s`` (default one hour) is an orphan;
        younger ones may belong to a running worker on another machine and are kept.
        """
        cutoff = time.time() - older_than_s
        removed = []
        for directory in (self.root, self.root / PARTS):
            if not directory.is_dir():
                continue
            for tmp in directory.glob(".*.tmp"):
                try:
                    if tmp.stat().st_mtime < cutoff:
                        tmp.unlink()
                        removed.append(tmp)
                except FileNotFoundError:  # published or removed meanwhile
                    continue
        return sorted(removed)

    def write_trials(self) -> pd.DataFrame:
        """Regenerate ``trials.csv`` from the parts' metadata and return it."""
        df = self.trials()
        write_text(self.root / "trials.csv", df.to_csv(index=False, lineterminator="\n"))
        return df

    # ----------------------------------------------------------------- reading
    def exists(self) -> bool:
        """Whether this looks like a results directory (has a manifest)."""
        return (self.root / "manifest.json").exists()

    def manifest(self) -> dict[str, Any]:
        """The parsed ``manifest.json``."""
        path = self.root / "manifest.json"
        try:
            return json.loads(path.read_text())
        except OSError:
            raise input_error(path, None, "not a dptune results directory (manifest.json missing)") from None
        except json.JSONDecodeError as err:
            raise input_error(path, None, f"invalid JSON: {err}") from None

    def part_paths(self, algorithm: str | None = None, fold: str | None = None) -> list[Path]:
        """Finished parts, optionally of one algorithm and fold, in name order."""
        parts = self.root / PARTS
        if not parts.exists():
            return []
        out = []
        for p in sorted(parts.glob("*.parquet")):
            if p.name.startswith("."):
                continue
            a, f, _ = p.name[: -len(".parquet")].split("__", 2)
            if (algorithm is None or a == algorithm) and (fold is None or f == fold):
                out.append(p)
        return out

    @staticmethod
    def part_meta(path: Path) -> dict[str, Any]:
        """The ``dptune`` metadata of one part (seed, configs, timings, means)."""
        md = pq.read_schema(path).metadata or {}
        return json.loads(md[b"dptune"])

    @cached_property
    def _index(self) -> dict[tuple[str, str], dict[int, tuple[Path, dict]]]:
        index: dict[tuple[str, str], dict[int, tuple[Path, dict]]] = {}
        for p in self.part_paths():
            meta = self.part_meta(p)
            slot = index.setdefault((meta["algorithm"], meta["fold"]), {})
            for cid in meta["config_ids"]:
                slot[int(cid)] = (p, meta)
        return index

    def refresh(self) -> None:
        """Forget cached part metadata (after parts were added by another process)."""
        self.__dict__.pop("_index", None)

    def trials(self) -> pd.DataFrame:
        """One row per (algorithm, config_id, fold) evaluated: seed, unit, timings, users."""
        rows = []
        for (alg, fold), slot in self._index.items():
            for cid, (_, meta) in slot.items():
                k = meta["config_ids"].index(cid)
                rows.append((alg, cid, fold, meta["seed"], meta["unit"], meta["fit_seconds"][k],
                             meta["eval_seconds"][k], meta["n_users"]))
        df = pd.DataFrame(rows, columns=TRIAL_COLUMNS)
        return df.sort_values(["algorithm", "fold", "config_id"], kind="stable").reset_index(drop=True)

    def summary(self) -> pd.DataFrame:
        """Per (algorithm, config_id, fold, metric, cutoff) the mean over users, from metadata only."""
        rows = []
        for (alg, fold), slot in self._index.items():
            for cid, (_, meta) in slot.items():
                for key, mean in meta["means"][str(cid)].items():
                    metric, cutoff = key.split("@")
                    rows.append((alg, cid, fold, metric, int(cutoff), mean))
        cols = ["algorithm", "config_id", "fold", "metric", "cutoff", "mean"]
        df = pd.DataFrame(rows, columns=cols)
        return df.sort_values(cols[:5], kind="stable").reset_index(drop=True)

    def algorithms(self) -> list[str]:
        """Algorithm names in experiment order."""
        return [a["name"] for a in self.manifest()["algorithms"]]

    @cached_property
    def _configs(self) -> pd.DataFrame:
        path = self.root / "configs.csv"
        try:
            return pd.read_csv(path)
        except OSError:
            raise input_error(path, None, "missing: not a complete dptune results directory") from None

    def configs(self, algorithm: str) -> pd.DataFrame:
        """``config_id`` and hyperparameter columns of one algorithm (columns it does not use dropped)."""
        df = self._configs[self._configs["algorithm"] == algorithm].drop(columns="algorithm")
        return df.dropna(axis=1, how="all").reset_index(drop=True)

    def hyperparameters(self, algorithm: str) -> list[str]:
        """The free (swept) hyperparameters of an algorithm; derived ones are excluded."""
        for a in self.manifest()["algorithms"]:
            if a["name"] == algorithm:
                return list(a["free"])
        raise input_error(self.root / "manifest.json", "algorithms", f"no algorithm {algorithm!r}")

    def folds(self, algorithm: str) -> list[str]:
        """Validation folds with results for this algorithm (never ``test``), in numeric order."""
        folds = {f for (a, f) in self._index if a == algorithm and f != "test"}
        return sorted(folds, key=lambda f: (len(f), f))

    def metric_cutoffs(self, algorithm: str) -> list[tuple[str, int]]:
        """(metric, cutoff) pairs stored, in metric-then-cutoff order."""
        ev = self.manifest()["evaluation"]
        return [(m, int(c)) for m in ev["metrics"] for c in ev["cutoffs"]]

    def read_matrix(self, algorithm: str, metric: str, cutoff: int, fold: str,
                    config_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """One slice as a (len(config_ids), n_users) float64 matrix over the users present for
        every requested configuration (inner join), users sorted.

        Reads only the parts holding the requested configurations, and of each part only the row
        group of (metric, cutoff), so memory is bounded by the slice.
        """
        slot = self._index.get((algorithm, str(fold)), {})
        ids = np.asarray(config_ids, dtype=np.int64)
        missing = [int(c) for c in ids if int(c) not in slot]
        if missing:
            raise input_error(self.root / PARTS, f"{algorithm}/fold {fold}",
                              f"no results for config_id {missing[:5]}")
        by_path: dict[Path, list[int]] = {}
        for c in ids:
            path, meta = slot[int(c)]
            by_path.setdefault(path, []).append(int(c))
        chunks = []
        for path, wanted in by_path.items():
            meta = slot[wanted[0]][1]
            rg = meta["metrics"].index(metric) * len(meta["cutoffs"]) + meta["cutoffs"].index(int(cutoff))
            t = pq.ParquetFile(path).read_row_group(rg, columns=["config_id", "user", "value"])
            cfg = t.column("config_id").to_numpy()
            keep = np.isin(cfg, wanted)
            chunks.append((cfg[keep], t.column("user").to_numpy()[keep], t.column("value").to_numpy()[keep]))
        cfg = np.concatenate([c[0] for c in chunks])
        usr = np.concatenate([c[1] for c in chunks])
        val = np.concatenate([c[2] for c in chunks]).astype(np.float64)
        users, col = np.unique(usr, return_inverse=True)
        row = np.searchsorted(np.sort(ids), cfg)
        order = np.argsort(ids, kind="stable")
        mat = np.full((len(ids), len(users)), np.nan)
        mat[order[row], col] = val
        present = ~np.isnan(mat).any(axis=0)
        return users[present].astype(np.int32), mat[:, present]

    def read_fold(self, algorithm: str, fold: str, config_ids: Sequence[int],
                  metric_cutoffs: Sequence[tuple[str, int]], threads: int | None = None,
                  *, scan_all_users: bool = False,
                  buffer: FoldBuffer | None = None) -> FoldSlice:
        """Every requested (metric, cutoff) of ``config_ids`` on one fold, read in one pass.

        The batched counterpart of :meth:`read_matrix` that :func:`dptune.analysis._dp.analyze` uses: each
        part holding a requested configuration is opened once and only the row groups of the
        requested (metric, cutoff) pairs are decoded, instead of one read per (scope, metric,
        cutoff) that re-reads the same parts for every scope. A first pass decodes the ``user``
        column of one row group per part (every row group of a part written by
        :meth:`write_unit` holds the same users; ``scan_all_users`` reads them all, and is used
        automatically when the second pass meets a user the first did not see) to find the
        users present; the second decodes ``config_id, user, value`` and scatters the values
        into one float32 array
        ``(metric-cutoff, configuration, user)`` with NaN where a (configuration, user) has no
        row. Memory is therefore bounded by one fold of the requested configurations (about
        0.7 GB for the 1,669 configurations the paper's 48 BPR-MF scopes need on ML-1M), and
        :meth:`FoldSlice.matrix` gives exactly what :meth:`read_matrix` returns for any subset.
        Parts are read by ``threads`` threads (default: the CPU count, at most 4); every
        configuration lives in one part, so the threads write disjoint cells.

        A part whose metadata declares the layout :meth:`write_unit` writes (``"layout":
        "config-major"``: each row group holds the part's ``config_ids`` in order, each followed
        by the same users) and whose row counts agree with it is decoded from its ``value``
        column alone, the users coming from the first pass; other parts (older stores, other
        writers) decode ``config_id`` and ``user`` too. With ``buffer`` the values live in its
        reusable memory (valid until the buffer's next use), which spares the page faults of a
        fresh fold-sized array per call.
        """
        slot = self._index.get((algorithm, str(fold)), {})
        ids = np.unique(np.asarray(config_ids, dtype=np.int64))
        missing = [int(c) for c in ids if int(c) not in slot]
        if missing:
            raise input_error(self.root / PARTS, f"{algorithm}/fold {fold}",
                              f"no results for config_id {missing[:5]}")
        mcs = tuple((str(m), int(c)) for m, c in metric_cutoffs)
        if not len(ids) or not mcs:
            return FoldSlice(algorithm, str(fold), ids, mcs, np.zeros(0, dtype=np.int32),
                             np.empty((len(mcs), len(ids), 0), dtype=np.float32))
        by_path: dict[Path, list[int]] = {}
        for c in ids:
            by_path.setdefault(slot[int(c)][0], []).append(int(c))
        # (part, row groups to read, their row counts, configurations wanted from it); parts are
        # opened only while read: an open ParquetFile keeps its file buffered (~9 MB a part)
        jobs: list[tuple[Path, list[int], list[int], np.ndarray]] = []
        layouts: dict[Path, tuple[np.ndarray, int]] = {}  # part -> (config order, users per run)
        run_users: dict[Path, np.ndarray] = {}  # part -> its users (config-major parts)
        max_user = -1
        for path, wanted in by_path.items():
            meta = slot[wanted[0]][1]
            rgs = []
            for metric, cutoff in mcs:
                if metric not in meta["metrics"] or cutoff not in meta["cutoffs"]:
                    raise input_error(path, f"{metric}@{cutoff}", "not stored in this part")
                rgs.append(meta["metrics"].index(metric) * len(meta["cutoffs"])
                           + meta["cutoffs"].index(cutoff))
            md = pq.read_metadata(path)
            max_user = max(max_user, _max_user(path, md, rgs))
            sizes = [md.row_group(r).num_rows for r in rgs]
            if meta.get("layout") == LAYOUT and all(
                    n == len(meta["config_ids"]) * int(meta["n_users"]) for n in sizes):
                layouts[path] = (np.asarray(meta["config_ids"], dtype=np.int64),
                                 int(meta["n_users"]))
            jobs.append((path, rgs, sizes, np.asarray(wanted, dtype=np.int64)))
        n_threads = max(1, min(threads or min(os.cpu_count() or 1, 4), len(jobs)))

        def run(fn: Any) -> None:
            if n_threads == 1:
                for job in jobs:
                    fn(job)
                return
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(n_threads) as pool:
                list(pool.map(fn, jobs))

        # pass 1: which users have rows (threads only ever set True: benign races)
        seen = np.zeros(max_user + 1, dtype=bool)

        def mark(job: tuple[Path, list[int], list[int], np.ndarray]) -> None:
            path, rgs, _, _ = job
            with pq.ParquetFile(path) as pf:
                usr = pf.read_row_groups(rgs if scan_all_users else rgs[:1], columns=["user"],
                                         use_threads=False).column("user").to_numpy()
            seen[usr] = True
            if path in layouts:
                run_users[path] = usr[: layouts[path][1]].copy()

        run(mark)
        users = np.flatnonzero(seen).astype(np.int32)
        col_of = np.full(max_user + 1, -1, dtype=np.int64)
        col_of[users] = np.arange(len(users))
        width = len(users)
        shape = (len(mcs), len(ids), width)
        values = buffer.array(shape) if buffer is not None else np.empty(shape, dtype=np.float32)
        values.fill(np.nan)
        flat = values.reshape(-1)
        n_slots = max(slot) + 1
        unseen: list[Path] = []

        # pass 2: values
        def scatter(job: tuple[Path, list[int], list[int], np.ndarray]) -> None:
            path, rgs, sizes, wanted = job
            row_of = np.full(n_slots, -1, dtype=np.int64)  # row in ``values``; -1 = not here
            row_of[wanted] = np.searchsorted(ids, wanted)
            if path in run_users:  # config-major part: the values alone
                with pq.ParquetFile(path) as pf:
                    val = pf.read_row_groups(rgs, columns=["value"],
                                             use_threads=False).column("value").to_numpy()
                order, n_u = layouts[path]
                _copy_runs(values, val.reshape(len(rgs), len(order), n_u), row_of[order],
                           col_of[run_users[path]])
                return
            with pq.ParquetFile(path) as pf:
                t = pf.read_row_groups(rgs, columns=["config_id", "user", "value"],
                                       use_threads=False)
            cfg = t.column("config_id").to_numpy()
            usr = t.column("user").to_numpy()
            val = t.column("value").to_numpy()
            if cfg.min(initial=0) < 0 or cfg.max(initial=0) >= n_slots:
                raise input_error(path, "config_id", "holds a configuration its metadata does not list")
            if _block_copy(values, cfg, usr, val, sizes, row_of, col_of):
                return
            rows = row_of[cfg]
            keep = rows >= 0
            rows += np.repeat(np.arange(len(rgs), dtype=np.int64) * len(ids), sizes)
            rows *= width
            col = col_of[usr]
            if col.min(initial=0) < 0:  # a user pass 1 did not see: redo with every row group
                unseen.append(path)
                return
            rows += col
            if not keep.all():
                rows, val = rows[keep], val[keep]
            flat[rows] = val

        run(scatter)
        if unseen:
            del values, flat
            return self.read_fold(algorithm, fold, ids, mcs, threads, scan_all_users=True,
                                  buffer=buffer)
        return FoldSlice(algorithm, str(fold), ids, mcs, users, values)

    def read_slice(self, algorithm: str, metric: str, cutoff: int) -> pd.DataFrame:
        """Long-format rows of one (algorithm, metric, cutoff) across folds, via pyarrow filters."""
        import pyarrow.dataset as ds

        paths = [str(p) for p in self.part_paths(algorithm)]
        if not paths:
            return pd.DataFrame(columns=SCHEMA.names)
        d = ds.dataset(paths, schema=SCHEMA, format="parquet")
        flt = (ds.field("metric") == metric) & (ds.field("cutoff") == cutoff)
        return d.to_table(filter=flt).to_pandas()

    def best_configs(self) -> pd.DataFrame:
        """The configuration each metric@cutoff would pick: highest mean over validation folds of
        the per-fold mean over users (ties: lowest config_id).

        Columns ``algorithm, metric, cutoff, config_id, validation_mean, n_folds``.
        """
        s = self.summary()
        s = s[s["fold"] != "test"]
        cols = ["algorithm", "metric", "cutoff", "config_id", "validation_mean", "n_folds"]
        if s.empty:
            return pd.DataFrame(columns=cols)
        g = s.groupby(["algorithm", "metric", "cutoff", "config_id"], sort=True)["mean"]
        m = g.mean().rename("validation_mean").reset_index()
        m["n_folds"] = g.size().to_numpy()
        m = m.sort_values(["algorithm", "metric", "cutoff", "validation_mean", "config_id"],
                          ascending=[True, True, True, False, True], kind="stable")
        return m.groupby(["algorithm", "metric", "cutoff"], sort=False).head(1)[cols].reset_index(drop=True)


def _block_copy(values: np.ndarray, cfg: np.ndarray, usr: np.ndarray, val: np.ndarray,
                sizes: Sequence[int], row_of: np.ndarray, col_of: np.ndarray) -> bool:
    """Copy one part's rows into ``values`` by blocks when the part has the layout
    :meth:`ResultStore.write_unit` writes; return False (nothing copied) otherwise.

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


class FoldBuffer:
    """Reusable float32 memory for successive :meth:`ResultStore.read_fold` calls.

    The analysis holds one fold at a time; a fresh fold-sized array per fold (0.7 GB on
    ML-1M) pays its page faults every time (about 1.5 s here). An array handed out is valid
    until the next call of :meth:`array`.
    """

    def __init__(self) -> None:
        self._memory: np.ndarray | None = None

    def array(self, shape: tuple[int, ...]) -> np.ndarray:
        """A ``float32`` array of ``shape`` (uninitialised) in the buffer's memory."""
        n = int(np.prod(shape, dtype=np.int64))
        if self._memory is None or self._memory.size < n:
            self._memory = None  # release the old block before allocating the larger one
            self._memory = np.empty(n, dtype=np.float32)
        return self._memory[:n].reshape(shape)


def _max_user(path: Path, md: pq.FileMetaData, row_groups: Sequence[int]) -> int:
    """Largest user code in some row groups of a part: from the column statistics when the
    writer stored them (it does), else by reading the ``user`` column."""
    col = md.schema.to_arrow_schema().get_field_index("user")
    best = -1
    for r in row_groups:
        st = md.row_group(r).column(col).statistics
        if st is None or not st.has_min_max:
            with pq.ParquetFile(path) as pf:
                users = pf.read_row_group(r, columns=["user"]).column("user").to_numpy()
            best = max(best, int(users.max(initial=-1)))
        else:
            best = max(best, int(st.max))
    return best


@dataclass(frozen=True)
class FoldSlice:
    """Values of some configurations on one (algorithm, fold), every requested (metric, cutoff).

    ``values[m, r, j]`` is the float32 value of metric-cutoff ``metric_cutoffs[m]``,
    configuration ``config_ids[r]`` (sorted, unique) and user code ``users[j]`` (sorted: every
    user with at least one row); NaN where the store has no row (a user not evaluated for that
    configuration). Built by :meth:`ResultStore.read_fold`.
    """

    algorithm: str
    fold: str
    config_ids: np.ndarray
    metric_cutoffs: tuple[tuple[str, int], ...]
    users: np.ndarray
    values: np.ndarray

    def matrix(self, metric: str, cutoff: int,
               config_ids: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """Exactly :meth:`ResultStore.read_matrix` for a subset of the configurations: a
        ``(len(config_ids), n_users)`` float64 matrix (rows in the requested order) over the users
        present for every requested configuration, users sorted."""
        key = (str(metric), int(cutoff))
        if key not in self.metric_cutoffs:
            raise input_error("store", f"{self.algorithm}/fold {self.fold}",
                              f"{metric}@{cutoff} was not read")
        ids = np.asarray(config_ids, dtype=np.int64)
        if len(ids) and not len(self.config_ids):
            raise input_error("store", f"{self.algorithm}/fold {self.fold}",
                              f"config_id {ids[:5].tolist()} was not read")
        rows = np.searchsorted(self.config_ids, ids)
        bad = (rows >= len(self.config_ids)) | (
            self.config_ids[np.minimum(rows, len(self.config_ids) - 1)] != ids)
        if bad.any():
            raise input_error("store", f"{self.algorithm}/fold {self.fold}",
                              f"config_id {ids[bad][:5].tolist()} was not read")
        sub = self.values[self.metric_cutoffs.index(key)][rows]
        present = ~np.isnan(sub).any(axis=0)
        if present.all():  # the usual case: no column selection (one copy less)
            return self.users.copy(), sub.astype(np.float64)
        return self.users[present], sub[:, present].astype(np.float64)
