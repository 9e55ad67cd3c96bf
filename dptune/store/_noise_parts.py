"""Noise-floor parts: the A/A runs of a result store (``<results>/noise_floor.parquet/``).

One Parquet part per (algorithm, configuration, validation fold) holds the per-user values of
that configuration trained with several seeds (columns of ``per_user.parquet`` plus
``seed_index`` int16; one row group per metric@N, rows sorted by seed index then user), written
atomically (temporary file, fsync, rename); its ``dptune`` key-value metadata records the seeds,
timings and per-seed means. ``noise_trials.csv`` lists every run. The sweep writes the parts
(:func:`dptune.sweeper.run_noise_floor`), the analysis reads them
(:func:`dptune.analysis.noise.noise_floor_table`). Which algorithms get a floor (those the model
family calls stochastic, :func:`dptune.models.is_stochastic`) and which configurations
(:func:`rank_configs`) are decided here, from the store, so that both stages agree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dptune._atomic import temporary_path
from dptune._resources import on_full_disk
from dptune.errors import check_int, input_error
from dptune.store._index import validation_means
from dptune.store._integrity import check_lost as check_lost_parts
from dptune.store._integrity import (
    damaged_error,
    footer_meta,
    footer_text,
    problem,
    publishing,
    record,
    set_aside_if_foreign,
    store_fingerprint,
    verified,
)
from dptune.store._schema import NOISE_DIR, NOISE_SCHEMA, PAGE_CHECKSUM, noise_part_name

__all__ = [
    "check_count",
    "NOISE_DIR",
    "NOISE_TRIAL_COLUMNS",
    "deterministic_algorithms",
    "rank_configs",
    "noise_part_name",
    "noise_part_path",
    "part_seed_indices",
    "noise_part_meta",
    "write_noise_part",
    "noise_part_paths",
    "noise_trials",
]

#: Columns of ``noise_trials.csv``.
NOISE_TRIAL_COLUMNS = ["algorithm", "config_id", "fold", "seed_index", "seed", "fit_seconds",
                       "eval_seconds", "n_users"]
def check_count(value: Any, name: str, minimum: int) -> int:
    """An integer setting of the noise floor (seeds, configurations, positions, jobs), or a
    one-line input error naming it."""
    return check_int(value, "noise floor", name, minimum)


def noise_part_path(root: str | Path, algorithm: str, config_id: int, fold: str) -> Path:
    """Path of the part of one (algorithm, configuration, fold) in results directory ``root``
    (the one place it is built: the sweep writes it, the status and the analysis find it)."""
    return Path(root) / NOISE_DIR / noise_part_name(algorithm, config_id, fold)


def deterministic_algorithms(manifest: Mapping[str, Any]) -> list[str]:
    """Names of the manifest's algorithms whose training uses no seed (no noise floor), as
    the model family declares it (:func:`dptune.models.is_stochastic`; imported here, not at
    the top, so that reading a store loads no model code)."""
    from dptune.models._families import is_stochastic

    return [a["name"] for a in manifest.get("algorithms", []) if not is_stochastic(a["type"])]


class HasSummary(Protocol):
    """What :func:`rank_configs` reads of a store: the mean over users per (algorithm,
    configuration, fold, metric, cutoff), :meth:`dptune.store.ResultStore.summary`. A protocol,
    not the store's class: the store imports this module, and this module never imports the
    store, not even for a type."""

    def summary(self) -> pd.DataFrame: ...


def rank_configs(store: HasSummary, algorithm: str, metric: str, cutoff: int) -> list[int]:
    """Configuration ids of ``algorithm`` from best to worst by ``metric@cutoff``.

    Score = mean over the validation folds of the per-fold mean over users, ties broken by the
    lower ``config_id`` (:func:`dptune.store._index.validation_means`, the store's one rule). The first
    element is the configuration :meth:`dptune.store.ResultStore.best_configs` picks.
    """
    m = validation_means(store.summary(), algorithm, metric, cutoff)
    return [int(c) for c in m["config_id"]]


def part_seed_indices(path: Path) -> list[int]:
    """Seed indices already stored in a part (none when the part does not exist or is damaged:
    its seeds are then trained again and the part rewritten)."""
    if not verified(path):
        return []
    return [int(s) for s in noise_part_meta(path)["seed_indices"]]


def write_noise_part(root: str | Path, algorithm: str, config_id: int, fold: str,
                     params: Mapping[str, Any], users: np.ndarray, metrics: Sequence[str],
                     cutoffs: Sequence[int], values: Mapping[int, np.ndarray],
                     seeds: Mapping[int, int],
                     seconds: Mapping[int, tuple[float, float]] | None = None) -> Path:
    """Write one noise-floor part atomically (temporary file, fsync, rename) and return its path.

    ``values[s]`` is seed index ``s``'s ``(len(metrics), len(cutoffs), len(users))`` array,
    ``seeds[s]`` the seed it was trained with, ``seconds[s]`` its (fit, eval) time. Rows: one row
    group per (metric, cutoff), sorted by seed index then user; the ``dptune`` key-value
    metadata records the seeds, timings and per-seed means.
    """
    final = noise_part_path(root, algorithm, config_id, fold)
    final.parent.mkdir(parents=True, exist_ok=True)
    users = np.asarray(users, dtype=np.int32)
    order = sorted(int(s) for s in values)
    seconds = seconds or {s: (0.0, 0.0) for s in order}
    n_users = len(users)
    arrays = {s: np.asarray(values[s], dtype=np.float32) for s in order}
    for s, arr in arrays.items():
        if arr.shape != (len(metrics), len(cutoffs), n_users):
            raise input_error("noise floor", f"seed {s}",
                              f"values of shape {arr.shape}, expected "
                              f"{(len(metrics), len(cutoffs), n_users)}")
    means = {str(s): {f"{m}@{c}": float(np.mean(arrays[s][i, j], dtype=np.float64)) if n_users
                      else float("nan")
                      for i, m in enumerate(metrics) for j, c in enumerate(cutoffs)}
             for s in order}
    meta = {
        "algorithm": algorithm, "config_id": int(config_id), "fold": str(fold),
        "params": {k: (v.item() if hasattr(v, "item") else v) for k, v in params.items()},
        "seed_indices": order, "seeds": [int(seeds[s]) for s in order],
        "seed_rule": "derive_seed(experiment seed, algorithm, fold, free params, 'noise', seed_index)",
        "metrics": list(metrics), "cutoffs": [int(c) for c in cutoffs], "n_users": int(n_users),
        "fit_seconds": [round(float(seconds[s][0]), 6) for s in order],
        "eval_seconds": [round(float(seconds[s][1]), 6) for s in order],
        "means": means,
    }
    fingerprint = store_fingerprint(root)
    if fingerprint:
        meta["fingerprint"] = fingerprint
    schema = NOISE_SCHEMA.with_metadata({"dptune": footer_text(meta)})
    n = n_users * len(order)
    seed_col = np.repeat(np.asarray(order, dtype=np.int16), n_users)
    user_col = np.tile(users, len(order))
    tmp = temporary_path(final)
    try:
        with on_full_disk(final.parent):  # one line naming the directory, the part not done
            _write_rows(tmp, schema, algorithm, config_id, fold, metrics, cutoffs, arrays, order,
                        user_col, seed_col, n)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            with publishing(root):  # the part and its entry, not another writer's between
                set_aside_if_foreign(final)
                record(final, fingerprint, source=tmp, meta=meta)
                os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)  # a write that failed (a full disk) leaves nothing behind
    return final


def _write_rows(tmp: Path, schema: pa.Schema, algorithm: str, config_id: int, fold: str,
                metrics: Sequence[str], cutoffs: Sequence[int], arrays: Mapping[int, np.ndarray],
                order: list[int], user_col: np.ndarray, seed_col: np.ndarray, n: int) -> None:
    """The rows of a noise-floor part: one row group per (metric, cutoff), sorted by seed
    index then user."""
    with pq.ParquetWriter(tmp, schema, compression="zstd",
                          write_page_checksum=PAGE_CHECKSUM) as writer:
        for i, metric in enumerate(metrics):
            for j, cutoff in enumerate(cutoffs):
                vals = (np.concatenate([arrays[s][i, j] for s in order]) if order
                        else np.empty(0, np.float32))
                table = pa.table(
                    {
                        "algorithm": pa.array([algorithm] * n, pa.string()),
                        "config_id": np.full(n, config_id, dtype=np.int32),
                        "fold": pa.array([str(fold)] * n, pa.string()),
                        "user": user_col,
                        "metric": pa.array([metric] * n, pa.string()),
                        "cutoff": np.full(n, cutoff, dtype=np.int16),
                        "value": vals.astype(np.float32),
                        "seed_index": seed_col,
                    },
                    schema=schema,
                )
                writer.write_table(table, row_group_size=max(n, 1))


def noise_part_paths(results_dir: str | Path, check_lost: bool = True) -> list[Path]:
    """Noise-floor part files, in name order (hidden temporary files excluded; damaged ones
    included: reading them is refused, :func:`noise_part_meta`). A part that was written but is
    gone is a one-line error unless ``check_lost`` is False."""
    if check_lost:
        check_lost_parts(results_dir, NOISE_DIR)
    d = Path(results_dir) / NOISE_DIR
    if not d.is_dir():
        return []
    return [p for p in sorted(d.glob("*.parquet")) if not p.name.startswith(".")]


def noise_part_meta(path: Path) -> dict[str, Any]:
    """The ``dptune`` metadata of a verified noise-floor part (seeds, timings, means); a
    damaged part is a one-line error naming it (:mod:`dptune.store._integrity`). The parts of
    the sweep itself are read by :func:`dptune.store._index.part_meta`."""
    why = problem(path)
    if why is not None:
        raise damaged_error(path, why)
    return footer_meta(path)


def read_noise_values(path: Path, meta: Mapping[str, Any], metric: str, cutoff: int,
                      seed_indices: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """``(seed_indices, values)`` of one noise-floor part (``meta``: its
    :func:`noise_part_meta`) at ``metric@cutoff``: ``values`` is ``(seeds, users)``, one row per
    kept seed index (``seed_indices``, ascending) over the users every kept run scored (one
    row group per metric@N, in the part's metric-then-cutoff order)."""
    metrics, cutoffs = list(meta["metrics"]), [int(c) for c in meta["cutoffs"]]
    rg = metrics.index(metric) * len(cutoffs) + cutoffs.index(int(cutoff))
    t = pq.ParquetFile(path).read_row_group(rg, columns=["user", "value", "seed_index"]
                                            ).to_pandas()
    t = t[t["seed_index"].isin([int(s) for s in seed_indices])]
    wide = t.pivot(index="seed_index", columns="user", values="value").sort_index()
    wide = wide.dropna(axis=1)
    return wide.index.to_numpy(), wide.to_numpy(dtype=np.float64)


def noise_trials(results_dir: str | Path) -> pd.DataFrame:
    """One row per noise-floor model run, from the parts' metadata (``noise_trials.csv``)."""
    rows = []
    for p in noise_part_paths(results_dir, check_lost=False):
        m = noise_part_meta(p)
        for k, s in enumerate(m["seed_indices"]):
            rows.append((m["algorithm"], int(m["config_id"]), m["fold"], int(s), int(m["seeds"][k]),
                         m["fit_seconds"][k], m["eval_seconds"][k], int(m["n_users"])))
    df = pd.DataFrame(rows, columns=NOISE_TRIAL_COLUMNS)
    return df.sort_values(["algorithm", "config_id", "fold", "seed_index"],
                          kind="stable").reset_index(drop=True)
