"""Selection: the configuration each metric@N picks on validation, and the experiment's tables
that come straight from the store (Table 1's row, the size of an algorithm's grid)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis.source import ResultSource
from dptune.analysis.subgrid import _plain
from dptune.grids import grid_edges
from dptune.store._store import ResultStore
from dptune.vocab import METRICS

__all__ = ["best_table", "params_text", "datasets_table", "configuration_count"]


def params_text(row: pd.Series, names: list[str]) -> str:
    """``"k=10, shrink=0.5"``: a configuration's hyperparameters (integral floats as integers,
    other floats to 8 significant digits). A configuration that outside data names (the
    ``system`` column of its store's configurations: a run file of ``dptune dp --runs``, a
    system of a per-user table) is named first, ``"system=bm25.run"``, so that every table and
    sentence that shows a configuration says which system it is."""
    named = "system" in row.index and "system" not in names and pd.notna(row["system"])
    parts = [f"system={row['system']}"] if named else []
    for n in names:
        v = row[n]
        if isinstance(v, float) and v.is_integer() and abs(v) >= 1:
            v = int(v)
        parts.append(f"{n}={v:.8g}" if isinstance(v, float) else f"{n}={v}")
    return ", ".join(parts)


def best_table(store: ResultStore, primary: tuple[str, int],
               judges: Sequence[str] = ()) -> pd.DataFrame:
    """The configuration each metric@cutoff picks on validation, with its test-split values.

    The pick is :meth:`ResultStore.best_configs` (highest mean over the validation folds of the
    per-fold mean over users; ties: lower ``config_id``). Columns ``algorithm, metric, cutoff,
    config_id, params, validation_mean, test_value, test_<primary metric>, grid_edge`` (test values NaN
    when the test split was not evaluated; ``grid_edge``: the list of ``h=low|high`` where the
    configuration sits at an end of a numeric hyperparameter's grid, ``;``-joined in the file), rows in the store's algorithm order, then cutoff,
    then :data:`dptune.vocab.METRICS` order. ``judges``: further metrics whose test value at the
    primary cutoff gets a ``test_<metric>`` column (the verdict's judge of each family of
    metrics, so that a family's choices are compared on a metric of the same family), when the
    store has that metric.
    """
    have = {m for a in store.algorithms() for m, _ in store.metric_cutoffs(a)}
    extra = [m for m in dict.fromkeys(judges) if m != primary[0] and m in have]
    best = store.best_configs()
    summ = store.summary()
    test = summ[summ["fold"] == "test"].set_index(["algorithm", "config_id", "metric", "cutoff"])["mean"]
    rows = []
    for r in best.itertuples(index=False):
        cfg = store.configs(r.algorithm)
        names = store.hyperparameters(r.algorithm)
        crow = cfg.loc[cfg["config_id"] == r.config_id].iloc[0]
        values = {h: [_plain(v) for v in pd.unique(cfg[h])] for h in names}
        edges = grid_edges(values, {h: _plain(crow[h]) for h in names})
        rows.append({
            "algorithm": r.algorithm, "metric": r.metric, "cutoff": int(r.cutoff),
            "config_id": int(r.config_id), "params": params_text(crow, names),
            "validation_mean": float(r.validation_mean),
            "test_value": float(test.get((r.algorithm, r.config_id, r.metric, r.cutoff), np.nan)),
            f"test_{primary[0]}": float(test.get((r.algorithm, r.config_id, primary[0], primary[1]), np.nan)),
            **{f"test_{m}": float(test.get((r.algorithm, r.config_id, m, primary[1]), np.nan))
               for m in extra},
            "grid_edge": [f"{h}={side}" for h, side in edges.items()],
        })
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["_m"] = df["metric"].map({m: i for i, m in enumerate(METRICS)})
    order = {a: i for i, a in enumerate(store.algorithms())}
    df["_a"] = df["algorithm"].map(order)
    return df.sort_values(["_a", "cutoff", "_m"], kind="stable").drop(columns=["_a", "_m"]).reset_index(drop=True)


def datasets_table(manifest: Mapping[str, Any]) -> pd.DataFrame:
    """Table 1's row of the store's data set: ``dataset, users, items, ratings, sparsity``."""
    d = manifest["dataset"]
    return pd.DataFrame([{"dataset": d["name"], "users": d["users"], "items": d["items"],
                          "ratings": d["ratings"], "sparsity": d["sparsity"]}])


def configuration_count(store: ResultSource, algorithm: str) -> int:
    """How many configurations an algorithm of the store has (an algorithm with fewer than two
    has no pair to compare, hence no DP; the report says so)."""
    return len(store.configs(algorithm))
