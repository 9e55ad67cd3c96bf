"""The paper's sub-grid: the best value of each hyperparameter +- a few grid neighbours, read
back from a result store and written as a grid TOML file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from dptune.errors import input_error
from dptune.grids import Grid, load_grid, subgrid_around
from dptune.store._store import ResultStore

__all__ = ["grid_from_store", "best_params", "write_subgrid"]


def _plain(value: Any) -> Any:
    """A configs.csv value as a plain Python scalar: numpy scalars unwrapped, integral floats
    (pandas reads an integer column with gaps as float) turned back into ``int``."""
    v = value.item() if hasattr(value, "item") else value
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def grid_from_store(store: ResultStore, algorithm: str) -> Grid:
    """Rebuild an algorithm's grid (value order included) from configs.csv and the manifest."""
    man = {a["name"]: a for a in store.manifest()["algorithms"]}
    if algorithm not in man:
        raise input_error(store.root / "manifest.json", "algorithms", f"no algorithm {algorithm!r}")
    cfg = store.configs(algorithm)
    values = {h: list(pd.unique(cfg[h])) for h in man[algorithm]["free"]}
    values = {h: [_plain(v) for v in vals] for h, vals in values.items()}
    derived = {k: (v[0], float(v[1])) for k, v in man[algorithm].get("derived", {}).items()}
    family = man[algorithm]["type"]
    return Grid(values=values, derived=derived, family=family, source=str(store.root))


def best_params(store: ResultStore, algorithm: str, metric: str, cutoff: int) -> dict[str, Any]:
    """The free hyperparameters of the configuration ``metric@cutoff`` selects on validation
    (:meth:`ResultStore.best_configs`), as plain Python values."""
    best = store.best_configs()
    row = best[(best["algorithm"] == algorithm) & (best["metric"] == metric) & (best["cutoff"] == cutoff)]
    if row.empty:
        raise input_error(store.root, "--metric/--cutoff", f"no results for {algorithm} {metric}@{cutoff}")
    free = grid_from_store(store, algorithm).free
    cfg = store.configs(algorithm)
    mask = cfg["config_id"] == int(row["config_id"].iloc[0])
    return {h: _plain(cfg.loc[mask, h].iloc[0]) for h in free}


def write_subgrid(results: str | Path | ResultStore, algorithm: str, metric: str, cutoff: int,
                  radius: int, out: str | Path, grid: str | Path | None = None) -> Path:
    """The paper's sub-grid: best value of each hyperparameter by mean metric@cutoff over the
    validation folds (:func:`best_params`), +- ``radius`` neighbours in ``grid`` (default: the
    swept grid itself; give the full Table 2 grid when the sweep was a coarse pilot); written as
    a grid TOML file."""
    store = results if isinstance(results, ResultStore) else ResultStore(results)
    chosen = best_params(store, algorithm, metric, cutoff)
    ref = load_grid(grid) if grid is not None else grid_from_store(store, algorithm)
    for h, v in chosen.items():
        if h not in ref.values or v not in ref.values[h]:
            raise input_error(grid or store.root, f"params.{h}", f"best value {v!r} is not a value of this grid")
    sub = subgrid_around(ref, chosen, radius)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# Sub-grid of {algorithm} around its best configuration by {metric}@{cutoff} "
              f"(+-{radius} grid neighbours), from {store.root}\n"
              f"# best: {', '.join(f'{k}={v}' for k, v in chosen.items())}\n")
    out.write_text(header + sub.to_toml().replace(f'family = "{ref.family}"\n', ""))
    return out
