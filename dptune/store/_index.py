"""Reading and indexing the result store's parts from their metadata alone.

The index maps ``(algorithm, fold)`` to ``{config_id: (part path, part metadata)}``; every
configuration of a fold lives in exactly one part. Trials, per-fold means and the best
configuration per metric@N come from the metadata, without decoding any value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from dptune.store._integrity import (
    check_lost,
    damaged_error,
    footer_meta,
    lost_parts,
    lost_problem,
    problem,
    verify,
)
from dptune.store._schema import PARTS, TRIAL_COLUMNS

__all__ = ["Index", "part_paths", "part_meta", "build_index", "trials_frame", "summary_frame",
           "VALIDATION_COLUMNS", "validation_means", "best_configs_frame"]

#: ``{(algorithm, fold): {config_id: (part path, part metadata)}}``
Index = dict[tuple[str, str], dict[int, tuple[Path, dict[str, Any]]]]


def part_paths(root: Path, algorithm: str | None = None, fold: str | None = None) -> list[Path]:
    """Finished parts (hidden temporaries excluded), optionally of one algorithm and fold, in
    name order.

    A file whose name is not ``<algorithm>__<fold>__<unit>.parquet`` (a report written into the
    folder, a copied file) is listed too when no algorithm or fold is asked for: it is not from
    this experiment (:func:`dptune.store._identity.name_problem`), so readers refuse it with one
    line naming it, the analysis and ``dptune status`` list it, and ``dptune run`` sets it aside
    in ``quarantine/`` (never deleted), as any foreign part."""
    parts = Path(root) / PARTS
    if not parts.exists():
        return []
    out = []
    for p in sorted(parts.glob("*.parquet")):
        if p.name.startswith("."):
            continue
        pieces = p.name[: -len(".parquet")].split("__", 2)
        if len(pieces) != 3:  # not a part's name: foreign, matches no algorithm nor fold
            if algorithm is None and fold is None:
                out.append(p)
            continue
        a, f, _ = pieces
        if (algorithm is None or a == algorithm) and (fold is None or f == fold):
            out.append(p)
    return out


def part_meta(path: Path) -> dict[str, Any]:
    """The ``dptune`` metadata of one part of the sweep (seed, configs, timings, means); a
    noise-floor part's is :func:`dptune.store._noise_parts.noise_part_meta`."""
    md = pq.read_schema(path).metadata or {}
    return json.loads(md[b"dptune"])


def build_index(root: Path, damaged: list[tuple[Path, str]] | None = None) -> Index:
    """The index of every verified part under ``root`` (each part's size and checksum checked
    once per process, :mod:`dptune.store._integrity`, then its footer read).

    A damaged part, or one not from this experiment (its identity checked against the
    manifest, :mod:`dptune.store._identity`), is a one-line error naming it; with a ``damaged``
    list it is appended there as ``(path, reason)`` and left out instead (the sweep and
    ``dptune status``)."""
    if damaged is None:
        check_lost(root, PARTS)
    else:
        damaged.extend((p, lost_problem(p)) for p in lost_parts(root, PARTS))
    index: Index = {}
    parts = part_paths(root)
    verify(parts)  # every checksum at once, on a few threads; problem() below is cached
    for p in parts:
        why = problem(p)
        if why is None:
            try:
                meta = footer_meta(p)  # read once, while it was verified
            except Exception as err:  # noqa: BLE001 - a verified part written damaged
                why = f"unreadable metadata ({type(err).__name__})"
        if why is not None:
            if damaged is None:
                raise damaged_error(p, why)
            damaged.append((p, why))
            continue
        slot = index.setdefault((meta["algorithm"], meta["fold"]), {})
        for cid in meta["config_ids"]:
            slot[int(cid)] = (p, meta)
    return index


def trials_frame(index: Index) -> pd.DataFrame:
    """One row per (algorithm, config_id, fold) evaluated: seed, unit, timings, users."""
    rows = []
    for (alg, fold), slot in index.items():
        for cid, (_, meta) in slot.items():
            k = meta["config_ids"].index(cid)
            rows.append((alg, cid, fold, meta["seed"], meta["unit"], meta["fit_seconds"][k],
                         meta["eval_seconds"][k], meta["n_users"]))
    df = pd.DataFrame(rows, columns=TRIAL_COLUMNS)
    return df.sort_values(["algorithm", "fold", "config_id"], kind="stable").reset_index(drop=True)


def summary_frame(index: Index) -> pd.DataFrame:
    """Per (algorithm, config_id, fold, metric, cutoff) the mean over users, from metadata only."""
    rows = []
    for (alg, fold), slot in index.items():
        for cid, (_, meta) in slot.items():
            for key, mean in meta["means"][str(cid)].items():
                metric, cutoff = key.split("@")
                rows.append((alg, cid, fold, metric, int(cutoff), mean))
    cols = ["algorithm", "config_id", "fold", "metric", "cutoff", "mean"]
    df = pd.DataFrame(rows, columns=cols)
    return df.sort_values(cols[:5], kind="stable").reset_index(drop=True)


#: Columns of :func:`validation_means`, best first within each (algorithm, metric, cutoff).
VALIDATION_COLUMNS = ["algorithm", "metric", "cutoff", "config_id", "validation_mean", "n_folds"]


def validation_means(summary: pd.DataFrame, algorithm: str | None = None,
                     metric: str | None = None, cutoff: int | None = None) -> pd.DataFrame:
    """The one score of a configuration by a metric@cutoff, for every choice made from the
    validation folds (the best configuration of each metric, the noise floor's
    configurations, the importance studies' objective): the mean over the validation folds
    of the per-fold mean over users, ``validation_mean = (1/F) sum_f mean_f``, with ``F`` in
    ``n_folds``. Rows best first within each (algorithm, metric, cutoff): highest
    ``validation_mean``, ties by the lower ``config_id``. ``algorithm``/``metric``/``cutoff``
    select rows before the means are taken. Columns :data:`VALIDATION_COLUMNS`.

    Only the configurations with results in every validation fold the algorithm has in the
    store take part: on a sweep still running, or stopped, a configuration measured on one fold
    was ranked by that fold's mean alone and could be chosen (as the best configuration, the
    noise floor's, the test split's) over the ones measured on every fold; the analysis
    leaves such units out as well. On a complete store every configuration takes part."""
    keep = summary["fold"] != "test"
    for col, want in (("algorithm", algorithm), ("metric", metric), ("cutoff", cutoff)):
        if want is not None:
            keep &= summary[col] == (int(want) if col == "cutoff" else want)
    s = summary[keep]
    if s.empty:
        return pd.DataFrame(columns=VALIDATION_COLUMNS)
    g = s.groupby(["algorithm", "metric", "cutoff", "config_id"], sort=True)["mean"]
    m = g.mean().rename("validation_mean").reset_index()
    m["n_folds"] = g.size().to_numpy()
    folds = s.groupby("algorithm", sort=False)["fold"].nunique()
    m = m[m["n_folds"].to_numpy() == m["algorithm"].map(folds).to_numpy()]
    m = m.sort_values(["algorithm", "metric", "cutoff", "validation_mean", "config_id"],
                      ascending=[True, True, True, False, True], kind="stable")
    return m[VALIDATION_COLUMNS].reset_index(drop=True)


def best_configs_frame(summary: pd.DataFrame) -> pd.DataFrame:
    """The configuration each metric@cutoff would pick: the first of :func:`validation_means`
    (highest mean over the validation folds; ties: lowest config_id). Columns
    :data:`VALIDATION_COLUMNS`."""
    m = validation_means(summary)
    return m.groupby(["algorithm", "metric", "cutoff"], sort=False).head(1).reset_index(drop=True)
