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
from dptune.errors import (
    DptuneError,
    check_int,
    check_out_file,
    check_path,
    input_error,
    plain,
    same_file,
)
from dptune.grids import Grid, edge_warning, grid_edges, load_grid, subgrid_around
from dptune.store._outside import check_outside_store
from dptune.store._store import ResultStore
from dptune.vocab import metric_name

__all__ = ["grid_from_store", "best_params", "write_subgrid", "WrittenSubgrid",
           "subgrid_algorithm"]


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


def subgrid_algorithm(store: ResultStore, algorithm: str | None,
                      man: dict[str, Any] | None = None) -> str:
    """The algorithm whose sub-grid is written: ``algorithm`` when it is one of ``store``'s,
    else (``None``, ``--algorithm`` left out) the store's only algorithm with hyperparameters to
    vary (a grid of more than one configuration); one line naming ``--algorithm`` when the
    name is not the store's or when several algorithms could be meant (they are listed), so
    that the command never picks one the user did not ask for. ``man``: the store's manifest,
    when already read."""
    man = store.manifest() if man is None else man
    listed = [a for a in man.get("algorithms", []) if isinstance(a, dict) and "name" in a]
    names = [str(a["name"]) for a in listed]
    if algorithm is not None:
        if algorithm not in names:
            raise input_error("--algorithm", None, f"{algorithm!r} is not an algorithm of "
                              f"{store.root} ({', '.join(names)})")
        return algorithm
    # a manifest without n_configs (an earlier version) counts an algorithm with free
    # hyperparameters as varying them
    varied = [str(a["name"]) for a in listed if a.get("free") and a.get("n_configs", 2) > 1]
    if len(varied) == 1:
        return varied[0]
    if not varied:
        raise input_error(store.root, None, "has no algorithm with hyperparameters to vary "
                          f"({', '.join(names) or 'none'} each have one configuration); a "
                          "sub-grid needs a grid to narrow")
    raise input_error("--algorithm", None, f"missing: {store.root} has {len(varied)} "
                      f"algorithms with hyperparameters to vary ({', '.join(varied)}); name "
                      "one, e.g. --algorithm " + varied[0])


def best_params(store: ResultStore, algorithm: str, metric: str, cutoff: int) -> dict[str, Any]:
    """The free hyperparameters of the configuration ``metric@cutoff`` selects on validation
    (the highest mean over the validation folds, as :meth:`ResultStore.best_configs` ranks
    them), among the configurations with results in every validation fold, as plain Python
    values (:func:`_best_id`)."""
    return _params_of(store, algorithm, _best_id(store, algorithm, metric, cutoff)[0])


def _params_of(store: ResultStore, algorithm: str, config_id: int) -> dict[str, Any]:
    """The free hyperparameters of configuration ``config_id``, as plain Python values."""
    free = grid_from_store(store, algorithm).free
    cfg = store.configs(algorithm)
    mask = cfg["config_id"] == config_id
    return {h: _plain(cfg.loc[mask, h].iloc[0]) for h in free}


def _best_id(store: ResultStore, algorithm: str, metric: str, cutoff: int
             ) -> tuple[int, int, int]:
    """``(config_id, configurations with results in every validation fold, configurations of
    the grid)``: the best by ``metric@cutoff`` among the complete ones. A configuration of a
    sweep still running (or stopped) with results in one fold only was ranked by that one
    fold's mean, and could be picked over the ones measured on every fold."""
    from dptune.store._index import validation_means

    means = validation_means(store.summary(), algorithm, metric, cutoff)
    if means.empty:
        raise input_error(store.root, "--metric/--cutoff", f"no results for {algorithm} {metric}@{cutoff}")
    folds = len(store.folds(algorithm))
    full = means[means["n_folds"] == folds]
    if full.empty:
        raise input_error(store.root, algorithm, f"no configuration has results in all {folds} "
                          "validation folds yet: finish the sweep (dptune run) first")
    return (int(full["config_id"].iloc[0]), int(full["config_id"].nunique()),
            len(store.configs(algorithm)))


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
    #: The sentence saying the best is that of part of the grid (a sweep not finished, or run
    #: on a budget): ``None`` when every configuration has results in every validation fold.
    sample_warning: str | None = None


def write_subgrid(results: str | Path | ResultStore, algorithm: str | None, metric: str, cutoff: int,
                  radius: int, out: str | Path, grid: str | Path | None = None) -> WrittenSubgrid:
    """The paper's sub-grid: best value of each hyperparameter by mean metric@cutoff over the
    validation folds (:func:`best_params`), +- ``radius`` neighbours in ``grid`` (default: the
    swept grid itself; give the full Table 2 grid when the sweep was a coarse pilot); written as
    a grid TOML file with the ``family`` label and ``[derived]`` table of that grid.

    ``out`` is checked first (:func:`_check_out`), the store and the grid are read and the file
    composed next, and ``out`` is written last, atomically, so that a refused call writes
    nothing and a file ``out`` replaces is never left half written. ``algorithm`` ``None``
    means the store's only algorithm with hyperparameters to vary
    (:func:`subgrid_algorithm`); ``metric`` is dptune's in any case (``NDCG``). A sub-grid of
    one configuration (``radius`` 0, or a grid of one) is refused: ``dptune run`` would refuse
    it, nothing to compare. Returns the file, the best configuration and the edge warning of
    that reference grid (:class:`WrittenSubgrid`)."""
    check_path(out, "--out", "", "the grid file to write")
    radius = check_int(radius, "--radius", None, 0)
    if radius == 0:  # the best value of each hyperparameter alone: one configuration
        raise input_error("--radius", None, "0 keeps only the best value of each "
                          "hyperparameter, one configuration, which dptune run refuses "
                          "(nothing to compare): give a radius of at least 1")
    if not isinstance(metric, str):
        raise input_error("--metric", None, f"needs a metric's name, got {plain(metric)}")
    # True was the cutoff 1 and 10.0 the cutoff 10, "10" no results: an integer, as the flag
    cutoff = check_int(cutoff, "--cutoff", None, 1)
    if algorithm is not None and not isinstance(algorithm, str):
        raise input_error("--algorithm", None, f"needs an algorithm's name, got {plain(algorithm)}")
    if grid is not None:
        check_path(grid, "--grid", "", "the grid file to place the sub-grid in")
    metric = metric_name(metric)  # NDCG is ndcg: any case of a dptune metric's name
    store = results if isinstance(results, ResultStore) else ResultStore(results)
    out = Path(out)
    man = store.manifest()
    algorithm = subgrid_algorithm(store, algorithm, man)
    recorded = {a["name"]: _recorded_grid(man, a["name"], a) for a in man["algorithms"]}
    _check_out(out, store, man, grid, recorded)
    cid, n_done, n_grid = _best_id(store, algorithm, metric, cutoff)  # best_params' choice
    chosen = _params_of(store, algorithm, cid)
    sample = (None if n_done >= n_grid else
              f"{algorithm}: the best of the {n_done} of {n_grid} configurations with results "
              f"in every validation fold (the sweep of {store.root} is not finished, or ran on "
              "a budget); the sub-grid is centred on it")
    ref = load_grid(grid) if grid is not None else _rebuilt(store, man, algorithm,
                                                             recorded.get(algorithm))
    for h, v in chosen.items():
        if h not in ref.values or v not in ref.values[h]:
            raise input_error(grid or store.root, f"params.{h}", f"best value {v!r} is not a value of this grid")
    sub = subgrid_around(ref, chosen, radius)
    if sub.size < 2:  # every hyperparameter has one value in the grid: nothing to compare
        what = ("the grid" if grid is not None
                else f"its grid in {store.root}")
        raise input_error(grid if grid is not None else "--algorithm",
                          None if grid is not None else algorithm,
                          f"{what} has one configuration, so the sub-grid would too, which "
                          "dptune run refuses (nothing to compare): give "
                          + ("a grid" if grid is not None else "an algorithm")
                          + " with hyperparameters to vary")
    header = (f"# Sub-grid of {algorithm} around its best configuration by {metric}@{cutoff} "
              f"(+-{radius} grid neighbours), from {store.root}\n"
              f"# best: {', '.join(f'{k}={v}' for k, v in chosen.items())}\n"
              + (f"# (the best of {n_done} of {n_grid} configurations: the sweep was not "
                 "complete)\n" if sample else ""))
    family = f"family = {json.dumps(sub.family)}\n" if sub.family else ""
    text = header + family + replace(sub, family=None).to_toml()
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(out, text)
    return WrittenSubgrid(out, chosen, edge_warning(algorithm, chosen,
                                                    grid_edges(ref.values, chosen)), sample)
