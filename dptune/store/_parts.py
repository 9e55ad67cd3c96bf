"""Writing the result store's parts: one Parquet file per trained unit, crash-safely.

A part is written to a hidden temporary file, fsynced and published with
:func:`dptune._atomic.publish_once` (the first complete part wins; a duplicate from a second
worker that computed the same, deterministically seeded unit is discarded), so a finished part
never changes and a reader sees it complete or not at all. Hidden ``.*.tmp`` files of writers
that died mid-write are swept by :func:`remove_stale_temporaries`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from dptune._atomic import publish_once, temporary_path
from dptune._resources import on_full_disk
from dptune.store._integrity import (
    footer_text,
    publishing,
    record,
    set_aside_if_foreign,
    verified,
)
from dptune.store._schema import (
    LAYOUT,
    PAGE_CHECKSUM,
    PARTS,
    SCHEMA,
    STALE_TEMPORARY_S,
    UnitResult,
    part_name,
)

__all__ = ["COMPRESSION", "part_metadata", "write_part", "remove_stale_temporaries"]

#: Codec per column. The values are what an analysis decodes (every one of them, fold by
#: fold), so they get LZ4, which decodes 2-3x faster than zstd (measured on 60 parts each:
#: 1.09 vs 0.52 GB/s on real values of the quickstart, 2.70 vs 0.87 GB/s on the benchmark's
#: random values) for files 30% and 10% larger. The other columns are constant or repeat a
#: few codes per row group: zstd makes them almost nothing. The values get no dictionary:
#: metric values rarely repeat enough to pay for one (random values: 30% larger files and 27%
#: slower decoding with it; real ML-100K values: 4% smaller files, no faster to decode).
COMPRESSION: dict[str, str] = {name: ("lz4" if name == "value" else "zstd")
                               for name in SCHEMA.names}


def part_metadata(res: UnitResult) -> dict[str, Any]:
    """The part's ``dptune`` metadata: seed, configurations, metrics, cutoffs, users, timings,
    the layout tag, and per configuration ``means[cid]["metric@N"] = (1/|U|) sum_u v_u``
    (NaN when no user was evaluated)."""
    n_users = len(res.users)
    means: dict[str, dict[str, float]] = {}
    for cid, vals in zip(res.config_ids, res.values, strict=True):
        m = np.asarray(vals, dtype=np.float64).mean(axis=2) if n_users else np.full(vals.shape[:2], np.nan)
        means[str(cid)] = {f"{mt}@{c}": float(m[i, j]) for i, mt in enumerate(res.metrics)
                           for j, c in enumerate(res.cutoffs)}
    return {
        "algorithm": res.algorithm, "fold": res.fold, "unit": res.unit, "seed": int(res.seed),
        "config_ids": [int(c) for c in res.config_ids], "metrics": list(res.metrics),
        "cutoffs": [int(c) for c in res.cutoffs], "n_users": int(n_users),
        "fit_seconds": [round(float(s), 6) for s in res.fit_seconds],
        "eval_seconds": [round(float(s), 6) for s in res.eval_seconds],
        "means": means,
        "layout": LAYOUT,
    }


def _repeated(text: str, n: int) -> pa.Array:
    """A string column of ``n`` copies of ``text``, equal to ``pa.array([text] * n,
    pa.string())``."""
    return pa.repeat(pa.scalar(text, pa.string()), n)


def _write_row_groups(tmp: Path, res: UnitResult, schema: pa.Schema) -> None:
    """One row group per (metric, cutoff), rows config-major: every configuration in
    ``res.config_ids`` order, each followed by the same users (the ``LAYOUT`` read_fold
    decodes from the value column alone).

    The constant string columns (algorithm, fold, metric) are built by Arrow itself
    (``pa.repeat``), not from a Python list of ``n`` strings: the same array and the same
    bytes on disk (tested), in about half the write's time, and without holding the
    interpreter lock, so that the sweep's part writer (:mod:`dptune.store._writer`) overlaps
    the next unit's computation (docs/performance.md, the device engine)."""
    n_users = len(res.users)
    n_cfg = len(res.config_ids)
    users = np.tile(res.users.astype(np.int32), n_cfg)
    cfg = np.repeat(np.asarray(res.config_ids, dtype=np.int32), n_users)
    with pq.ParquetWriter(tmp, schema, compression=COMPRESSION,
                          use_dictionary=[n for n in SCHEMA.names if n != "value"],
                          write_page_checksum=PAGE_CHECKSUM) as writer:
        for i, metric in enumerate(res.metrics):
            for j, cutoff in enumerate(res.cutoffs):
                vals = np.concatenate([np.asarray(v[i, j], dtype=np.float32) for v in res.values]) \
                    if n_cfg else np.empty(0, np.float32)
                n = len(vals)
                table = pa.table(
                    {
                        "algorithm": _repeated(res.algorithm, n),
                        "config_id": cfg,
                        "fold": _repeated(res.fold, n),
                        "user": users,
                        "metric": _repeated(metric, n),
                        "cutoff": np.full(n, cutoff, dtype=np.int16),
                        "value": vals,
                    },
                    schema=schema,
                )
                writer.write_table(table, row_group_size=max(n, 1))


def write_part(root: Path, res: UnitResult, fingerprint: str | None = None) -> Path:
    """Write one unit's part under ``root/per_user.parquet`` atomically (temporary file, fsync,
    rename; the first verified part published is kept), record its index entry (size,
    checksum and identity, :mod:`dptune.store._integrity`) and return its final path.

    The part's metadata records the experiment ``fingerprint`` with the unit's identity, so
    that a part copied into another results directory is recognised as not from there. A part
    already there that fails verification (damaged since) is replaced by this one; one not
    from this experiment is set aside first, never overwritten."""
    final = Path(root) / PARTS / part_name(res.algorithm, res.fold, res.unit)
    tmp = temporary_path(final)
    meta = part_metadata(res)
    if fingerprint:
        meta["fingerprint"] = fingerprint
    schema = SCHEMA.with_metadata({"dptune": footer_text(meta)})
    try:
        with on_full_disk(final.parent):  # one line naming the directory, the unit not done
            _write_row_groups(tmp, res, schema)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            with publishing(root):  # the part and its entry, not another writer's between
                set_aside_if_foreign(final)
                if publish_once(tmp, final):
                    record(final, fingerprint, meta=meta)
                elif not verified(final):
                    _write_row_groups(tmp, res, schema)  # the discarded copy, written again
                    record(final, fingerprint, source=tmp, meta=meta)
                    os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)  # a write that failed (a full disk) leaves nothing behind
    return final


def remove_stale_temporaries(root: Path, older_than_s: float = STALE_TEMPORARY_S) -> list[Path]:
    """Delete the hidden ``.*.tmp`` files of writers that died mid-write; return them.

    Every reader ignores these files, so they only waste disk (a BPR-MF part is ~10 MB on
    ML-1M). A live writer finishes a part within seconds and rewrites its file as it goes,
    so a temporary file untouched for ``older_than_s`` (default one hour) is an orphan;
    younger ones may belong to a running worker on another machine and are kept.
    """
    cutoff = time.time() - older_than_s
    removed = []
    for directory in (Path(root), Path(root) / PARTS):
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
