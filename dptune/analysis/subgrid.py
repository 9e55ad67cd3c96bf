"""The paper's sub-grid: the best value of each hyperparameter +- a few grid neighbours, read
back from a result store and written as a grid TOML file.

The file written carries what the grid it came from says besides the values: its ``family``
label and its ``[derived]`` table, in the grid's order (docs/grids.md). Everything is read and
checked before it is written, and it is written atomically, never into a results directory nor
over the grid being read: a refused command leaves every file as it was."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from dptune._atomic import write_text
from dptune.errors import DptuneError, check_int, check_out_file, check_path, input_error, same_file
from dptune.grids import Grid, edge_warning, grid_edges, load_grid, subgrid_around
from dptune.store._outside import check_outside_store
from dptune.store._store import ResultStore

__all__ = ["grid_from_store", "best_params", "write_subgrid", "WrittenSubgrid"]


def _plain(value: Any) -> Any:
    """A configs.csv value as a plain Python scalar: numpy scalars unwrapped, integral floats
    (pandas reads an integer column with gaps as float) turned back into ``int``."""
    v = value.item() if hasattr(value, "item") else value
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _recorded_grid(man: dict[str, Any], algorithm: str, entry: dict[str, Any]) -> Grid | None:
    """The grid file the sweep of ``algorithm`` read (the experiment's ``grid_path``, else its
    ``grid`` relative to the experiment file), when it is still there and still that grid (its
    fingerprint is the manifest ``man``'s ``grid_fingerprint``, in the algorithm's ``entry``);
    else ``None``. It tells what the store does not record: the grid's ``family`` label and the
    order of its ``[derived]`` table (the manifest's keys are sorted)."""
    want = entry.get("grid_fingerprint")
    if not want:
        return None
    listed = {a.get("name"): a for a in (man.get("config") or {}).get("algorithms", [])}
    home = Path(str(man.get("experiment_file", ""))).parent
    candidates = [listed.get(algorithm, {}).get("grid_path"), entry.get("grid")]
    for c in candidates:
        if not isinstance(c, str) or not c:
            continue
        path = Path(c) if Path(c).is_absolute() else home / c
        try:
            grid = load_grid(path) if path.is_file() else None
        except DptuneError:
            grid = None
        if grid is not None and grid.fingerprint() == want:
            return grid
    return None


def grid_from_store(store: ResultStore, algorithm: str) -> Grid:
    """Rebuild an algorithm's grid (value order included) from configs.csv and the manifest.

    The ``[derived]`` table keeps the grid's order and its ``family`` label is the grid file's,
    both read from the grid file the sweep read when it is unchanged (:func:`_recorded_grid`);
    otherwise the derived hyperparameters are in the order of configs.csv's columns (the grid's,
    as written by the sweep) and no family is given (the store does not record it)."""
    man = store.manifest()
    entry = next((a for a in man["algorithms"] if a["name"] == algorithm), None)
    return _rebuilt(store, man, algorithm,
                    None if entry is None else _recorded_grid(man, algorithm, entry))


def _rebuilt(store: ResultStore, man: dict[str, Any], algorithm: str,
             recorded: Grid | None) -> Grid:
    """:func:`grid_from_store` given the store's manifest ``man`` and the grid file the sweep
    read (``recorded``, or ``None``)."""
    entries = {a["name"]: a for a in man["algorithms"]}
    if algorithm not in entries:
        raise input_error(store.root / "manifest.json", "algorithms", f"no algorithm {algorithm!r}")
    entry = entries[algorithm]
    cfg = store.configs(algorithm)
    values = {h: list(pd.unique(cfg[h])) for h in entry["free"]}
    values = {h: [_plain(v) for v in vals] for h, vals in values.items()}
    stored = entry.get("derived", {})
    first = list(recorded.derived) if recorded is not None else list(cfg.columns)
    order = [k for k in first if k in stored] + [k for k in stored if k not in first]
    derived = {k: (stored[k][0], float(stored[k][1])) for k in order}
    family = recorded.family if recorded is not None else None
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


def _check_out(out: Path, store: ResultStore, man: dict[str, Any], grid: str | Path | None,
               recorded: dict[str, Grid | None]) -> None:
    """One line naming ``--out`` when the grid file to write is a directory, the ``--grid``
    file being read, inside a results directory (``store`` or any other:
    :func:`~dptune.store._outside.check_outside_store`), or the grid file the sweep of an
    algorithm of ``store`` read (``recorded``, per algorithm: writing it would change that
    experiment's set-up), or the experiment file or the data file of ``store`` (its manifest
    ``man``), or not named ``.toml`` (a ``.csv`` got TOML)."""
    check_out_file(out, "--out", {"--grid": grid})
    check_outside_store(out, "--out", store.root)
    for path, what in (
            (man.get("experiment_file", ""), f"the experiment file of {store.root}; writing a "
             "grid over it would lose that experiment"),
            ((man.get("dataset") or {}).get("source", ""), f"the data file the sweep in "
             f"{store.root} read; writing a grid over it would lose the data")):
        if path and Path(str(path)).is_file() and same_file(out, str(path)):
            raise input_error("--out", None, f"{out} is {what}, give another file to write")
    for name, swept in recorded.items():
        if swept is not None and same_file(out, swept.source):
            raise input_error("--out", None, f"{out} is the grid file the sweep in "
                              f"{store.root} read for {name}; writing it would change "
                              "that experiment, give another file to write")
    if Path(out).suffix.lower() != ".toml":  # a grid file is TOML (an experiment's grid = ...)
        raise input_error("--out", None, f"{out} is not named .toml; the sub-grid is a grid file "
                          "(TOML), which an experiment's grid = reads: give a name ending in .toml")


@dataclass(frozen=True)
class WrittenSubgrid:
    """What :func:`write_subgrid` wrote: the grid file ``path``, the ``best`` configuration it
    is centred on, and ``edge_warning``, the sentence naming the hyperparameters whose best
    value is an end of the reference grid (:func:`dptune.grids.edge_warning`; ``None`` when
    none is: the optimum may lie outside a grid whose best sits on its edge)."""

    path: Path
    best: dict[str, Any]
    edge_warning: str | None


def write_subgrid(results: str | Path | ResultStore, algorithm: str, metric: str, cutoff: int,
                  radius: int, out: str | Path, grid: str | Path | None = None) -> WrittenSubgrid:
    """The paper's sub-grid: best value of each hyperparameter by mean metric@cutoff over the
    validation folds (:func:`best_params`), +- ``radius`` neighbours in ``grid`` (default: the
    swept grid itself; give the full Table 2 grid when the sweep was a coarse pilot); written as
    a grid TOML file with the ``family`` label and ``[derived]`` table of that grid.

    ``out`` is checked first (:func:`_check_out`), the store and the grid are read and the file
    composed next, and ``out`` is written last, atomically, so that a refused call writes
    nothing and a file ``out`` replaces is never left half written. Returns the file, the best
    configuration and the edge warning of that reference grid (:class:`WrittenSubgrid`)."""
    check_path(out, "--out", "", "the grid file to write")
    radius = check_int(radius, "--radius", None, 0)
    store = results if isinstance(results, ResultStore) else ResultStore(results)
    out = Path(out)
    man = store.manifest()
    recorded = {a["name"]: _recorded_grid(man, a["name"], a) for a in man["algorithms"]}
    _check_out(out, store, man, grid, recorded)
    chosen = best_params(store, algorithm, metric, cutoff)
    ref = load_grid(grid) if grid is not None else _rebuilt(store, man, algorithm,
                                                             recorded.get(algorithm))
    for h, v in chosen.items():
        if h not in ref.values or v not in ref.values[h]:
            raise input_error(grid or store.root, f"params.{h}", f"best value {v!r} is not a value of this grid")
    sub = subgrid_around(ref, chosen, radius)
    header = (f"# Sub-grid of {algorithm} around its best configuration by {metric}@{cutoff} "
              f"(+-{radius} grid neighbours), from {store.root}\n"
              f"# best: {', '.join(f'{k}={v}' for k, v in chosen.items())}\n")
    family = f"family = {json.dumps(sub.family)}\n" if sub.family else ""
    text = header + family + replace(sub, family=None).to_toml()
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(out, text)
    return WrittenSubgrid(out, chosen, edge_warning(algorithm, chosen,
                                                    grid_edges(ref.values, chosen)))
