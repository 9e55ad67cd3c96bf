"""Grid edges: which hyperparameters of a best configuration sit at an end of their grid.

A best value at the lowest or highest value of a numeric hyperparameter means the optimum may
lie outside the grid: a sub-grid around it is clipped on that side, and the grid may be too
narrow. ``dptune subgrid`` warns about it; the report can say it beside the best configurations.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from dptune.store._store import ResultStore

__all__ = ["grid_edges", "best_config_edges", "edge_warning"]


def _number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def grid_edges(values: Mapping[str, Sequence[Any]], best: Mapping[str, Any]) -> dict[str, str]:
    """``{hyperparameter: "lowest" | "highest"}`` for every numeric hyperparameter of ``best``
    whose value is the minimum or the maximum of its grid ``values`` (at least 2 distinct values;
    categorical hyperparameters have no edge)::

        >>> grid_edges({"factors": [8, 16, 32], "lr": [0.1, 0.2]}, {"factors": 32, "lr": 0.1})
        {'factors': 'highest', 'lr': 'lowest'}
        >>> grid_edges({"factors": [8, 16, 32], "sim": ["cos", "jac"]}, {"factors": 16, "sim": "cos"})
        {}
    """
    out: dict[str, str] = {}
    for name, vals in values.items():
        if name not in best:
            continue
        nums = {float(v) for v in vals if _number(v)}
        v = best[name]
        if len(nums) < 2 or len(nums) != len(set(map(repr, vals))) or not _number(v):
            continue
        if float(v) == min(nums):
            out[name] = "lowest"
        elif float(v) == max(nums):
            out[name] = "highest"
    return out


def _plain(v: Any) -> Any:
    v = v.item() if hasattr(v, "item") else v
    return int(v) if isinstance(v, float) and v.is_integer() else v


def best_config_edges(store: ResultStore, algorithm: str, metric: str, cutoff: int,
                      values: Mapping[str, Sequence[Any]] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """The best configuration of ``algorithm`` by validation ``metric@cutoff`` in ``store``
    (its free hyperparameters) and its :func:`grid_edges` in ``values`` (default: the swept
    grid, read back from ``configs.csv``). ``({}, {})`` when the store has no such result."""
    best = store.best_configs()
    row = best[(best["algorithm"] == algorithm) & (best["metric"] == metric) & (best["cutoff"] == cutoff)]
    if row.empty:
        return {}, {}
    free = next((a["free"] for a in store.manifest()["algorithms"] if a["name"] == algorithm), [])
    cfg = store.configs(algorithm)
    chosen = cfg.loc[cfg["config_id"] == int(row["config_id"].iloc[0])].iloc[0]
    params = {h: _plain(chosen[h]) for h in free}
    if values is None:
        values = {h: [_plain(v) for v in pd.unique(cfg[h])] for h in free}
    return params, grid_edges(values, params)


def edge_warning(algorithm: str, params: Mapping[str, Any], edges: Mapping[str, str]) -> str | None:
    """One sentence naming the hyperparameters on an edge, or ``None`` when there is none."""
    if not edges:
        return None
    parts = [f"{h}={params[h]} is the {side} value of the grid" for h, side in edges.items()]
    return (f"{algorithm}: the best configuration sits on the edge of the grid ({'; '.join(parts)}); "
            "the optimum may lie outside it, consider widening the grid")
