"""The design of a results directory: ``design.json``, written when a sweep starts, and the
reading API the analysis uses to learn which units of the full grid a store holds.

``design.json`` (written atomically beside ``manifest.json``; JSON, sorted keys)::

    {"format": 1, "fingerprint": <experiment set-up>, "seed": <experiment seed>,
     "folds": ["0", ...], "budget": "20%" | "45" | "2h" | null (as given, the latest run's),
     "algorithms": [{"name", "type", "method", "seed", "dimensions", "sizes", "total_units",
                     "total_configs", "round_ends", "budget_rounds", "budget_units",
                     "units": [{"unit", "config_ids", "params"}, ... in design order]},
                    ... in the experiment's order]}

A sweep that resumes a store keeps the order recorded there (same set-up, same units), so a
stopped store is always a prefix of one order; its budget is the one of the latest run.
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dptune._atomic import write_text
from dptune.errors import DptuneError, check_path, input_error
from dptune.sweeper._cost import shape_from_manifest
from dptune.sweeper.design._budget import budget_rounds, check_unit_seconds
from dptune.sweeper.design._design import AlgorithmDesign, Design, DesignUnit, experiment_design

if TYPE_CHECKING:
    from dptune.config import Budget, Experiment

__all__ = ["DESIGN_FILE", "experiment_budget", "resolve_design", "write_design", "recorded_design",
           "orders_units_of", "sweep_design", "read_design"]

DESIGN_FILE = "design.json"
FORMAT = 1


def _to_json(design: Design) -> dict[str, Any]:
    algs = []
    for name, d in design.algorithms.items():
        algs.append({
            "name": name, "type": d.type, "method": d.method, "seed": d.seed, "dimensions": list(d.dimensions),
            "sizes": list(d.sizes), "total_units": d.total_units, "total_configs": d.total_configs,
            "round_ends": list(d.round_ends), "budget_rounds": d.budget_rounds,
            "budget_units": d.budget_units,
            "units": [{"unit": u.unit, "config_ids": list(u.config_ids), "params": u.params}
                      for u in d.units],
        })
    return {"format": FORMAT, "fingerprint": design.fingerprint, "seed": design.seed,
            "folds": list(design.folds), "budget": design.budget, "algorithms": algs}


def _from_json(data: dict[str, Any]) -> Design:
    algs = {}
    for a in data["algorithms"]:
        name = str(a["name"])
        ends = tuple(int(e) for e in a["round_ends"])
        units = []
        for pos, u in enumerate(a["units"]):
            rnd = bisect.bisect_right(ends, pos)
            units.append(DesignUnit(pos, rnd, str(u["unit"]), tuple(int(c) for c in u["config_ids"]),
                                    dict(u["params"])))
        algs[name] = AlgorithmDesign(
            algorithm=name, type=str(a["type"]), dimensions=tuple(a["dimensions"]),
            sizes=tuple(int(s) for s in a["sizes"]), seed=int(a["seed"]), method=str(a["method"]),
            units=tuple(units), round_ends=ends, budget_rounds=int(a["budget_rounds"]))
    return _consistent(Design(seed=int(data["seed"]), fingerprint=str(data["fingerprint"]),
                              folds=tuple(str(f) for f in data["folds"]), algorithms=algs,
                              budget=data.get("budget")))


def _consistent(design: Design) -> Design:
    """``design``, or a ``ValueError`` when its rounds do not fit its units: every algorithm's
    ``round_ends`` rising to its number of units, its ``budget_rounds`` one of them, its unit
    names distinct. ``design.json`` carries no checksum, and a damaged one that still parses
    (a digit changed by a bad disk) would otherwise be trusted: ``dptune status`` stopped
    with an ``IndexError`` on a budget of more rounds than the design has."""
    for d in design.algorithms.values():
        ends = d.round_ends
        if not ends or ends[-1] != len(d.units) \
                or any(b <= a for a, b in zip((0, *ends[:-1]), ends, strict=True)) \
                or not 1 <= d.budget_rounds <= len(ends) \
                or len({u.unit for u in d.units}) != len(d.units):
            raise ValueError(f"the design of {d.algorithm} does not fit its units")
    return design


def recorded_design(root: str | Path) -> Design | None:
    """The design recorded in ``root/design.json`` (no store state), or ``None`` when there is
    none or it cannot be read."""
    path = Path(root) / DESIGN_FILE
    try:
        data = json.loads(path.read_text())
        if data.get("format") != FORMAT:
            return None
        return _from_json(data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _same_units(a: AlgorithmDesign, b: AlgorithmDesign) -> bool:
    """Whether two designs order the same units (names and configuration ids)."""
    return sorted((u.unit, u.config_ids) for u in a.units) == sorted((u.unit, u.config_ids)
                                                                      for u in b.units)


def orders_units_of(recorded: Design, design: Design) -> bool:
    """Whether the ``recorded`` design (``design.json``) orders the units of ``design`` (the
    experiment's): the same set-up, algorithms and units (names and configuration ids). Only
    then is its order (and budget) followed or reported; a ``design.json`` damaged in a unit's
    name would otherwise count a unit of the grid as never computed."""
    return recorded.fingerprint == design.fingerprint \
        and recorded.algorithms.keys() == design.algorithms.keys() \
        and all(_same_units(recorded.algorithms[n], d) for n, d in design.algorithms.items())


def resolve_design(exp: Experiment, manifest: dict[str, Any], budget: Budget | None,
                   jobs: int | None = None, recorded: Design | None = None) -> Design:
    """The design a sweep runs: the order recorded in the results directory when it belongs to
    the same set-up and units (a resumed sweep keeps its order), else :func:`experiment_design`;
    with the rounds of ``budget`` (:func:`dptune.sweeper.design.budget_rounds`; its errors
    happen here, before any unit is computed)."""
    design = experiment_design(exp)
    if recorded is not None and orders_units_of(recorded, design):
        design = recorded
    shape = shape_from_manifest(manifest)
    rounds = budget_rounds(budget, exp, design, shape, jobs)
    design = design.with_rounds(rounds, None if budget is None else budget.text)
    check_unit_seconds(exp, design, shape)
    return design


def experiment_budget(exp: Experiment) -> Budget | None:
    """The experiment's ``[sweep] budget`` (``None``: the full grid)."""
    from dptune.config import parse_budget

    raw = exp.sweep.budget
    return None if raw is None else parse_budget(raw, exp.source, "sweep.budget")


def sweep_design(exp: Experiment, root: str | Path) -> Design:
    """The design a worker follows when none is handed to it: the one recorded in ``root``
    when it belongs to ``exp``'s set-up (the budget of the run that started the sweep), else
    the experiment's own budget resolved against ``root``'s manifest."""
    from dptune.store._files import read_manifest

    rec = recorded_design(root)
    if rec is not None and orders_units_of(rec, experiment_design(exp)):
        return rec
    return resolve_design(exp, read_manifest(Path(root)), experiment_budget(exp))


def write_design(root: str | Path, design: Design) -> Path:
    """Write ``root/design.json`` atomically; returns its path."""
    path = Path(root) / DESIGN_FILE
    write_text(path, json.dumps(_to_json(design), sort_keys=True, indent=1) + "\n")
    return path


def read_design(results: str | Path) -> Design | None:
    """The design of a results directory with what its store holds: for every algorithm, every
    unit of the full grid in design order (:class:`DesignUnit`: position, round, unit name,
    configuration ids, unit hyperparameters) with ``folds_done`` (the validation folds whose
    verified part is in the store) and ``complete`` (all of them).

    The design is ``design.json``'s; a store written before designs were recorded gets the
    design its experiment (``manifest.json``) has, without a budget; ``None`` when neither can
    be read (not a results directory of a sweep). A ``results`` that is no path, or a path
    that does not exist, is one :class:`DptuneError` line naming ``read_design: results``."""
    from dptune.store._store import ResultStore

    check_path(results, "read_design", "results", "a results directory")
    root = Path(results)
    if not root.exists():
        raise input_error("read_design", "results", f"{results} does not exist; give a results "
                          "directory")
    design = recorded_design(root)
    store = ResultStore(root, skip_damaged=True)
    if design is None:
        try:
            from dptune.sweeper._recorded import experiment_from_manifest

            design = experiment_design(experiment_from_manifest(store))
        except (DptuneError, OSError, KeyError, TypeError, ValueError):
            return None
    algs = {}
    for name, d in design.algorithms.items():
        units = []
        for u in d.units:
            done = tuple(f for f in design.folds if store.has_part(name, f, u.unit))
            units.append(DesignUnit(u.position, u.round, u.unit, u.config_ids, u.params, done,
                                    len(done) == len(design.folds)))
        algs[name] = AlgorithmDesign(d.algorithm, d.type, d.dimensions, d.sizes, d.seed,
                                     d.method, tuple(units), d.round_ends, d.budget_rounds)
    return Design(design.seed, design.fingerprint, design.folds, algs, design.budget)
