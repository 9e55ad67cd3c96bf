"""Planning: the units of an algorithm's grid, their tasks on every fold, and their seeds.

A *unit* is what one model run produces (docs/design.md): all k of a KNN on one fold (one
similarity), all iteration counts of one BPR-MF (factors, learning rate) on one fold (snapshots of
one training run). A :class:`Task` is one unit on one fold; its seed derives from the unit, not
from the order of the grid or the worker that runs it.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dptune.config import Experiment
from dptune.errors import input_error
from dptune.models import get_family
from dptune.store._schema import validation_unit

if TYPE_CHECKING:
    from dptune.store._store import ResultStore


@dataclass(frozen=True)
class Task:
    """One unit of work: an algorithm's unit (configs trained together) on one fold."""

    algorithm: str
    fold: str
    unit: str
    config_ids: tuple[int, ...]
    params: dict[str, Any] = field(hash=False, compare=False)


def derive_seed(base: int, *parts: Any) -> int:
    """A 31-bit seed from the experiment seed and a canonical description of the unit.

    ``SeedSequence([base, crc32(json(parts))])``: independent of grid order and of which worker
    runs the unit, so a rerun or a duplicate reproduces the same numbers.
    """
    blob = json.dumps(parts, sort_keys=True, default=repr).encode()
    ss = np.random.SeedSequence([int(base) & 0xFFFFFFFF, zlib.crc32(blob)])
    return int(ss.generate_state(1, dtype=np.uint32)[0] >> 1)


def _units(exp: Experiment, algorithm: str) -> tuple[list[dict[str, Any]], list[list[int]],
                                                     list[str]]:
    """The configurations of an algorithm's grid, its units (lists of config ids) and its
    unit dimensions (:func:`unit_dimensions`), from one expansion and one validation of the
    grid: on a grid of 100,000 configurations each takes seconds, and :func:`plan` once took
    them for every fold."""
    alg = _algorithm(exp, algorithm)
    grid = exp.grids[algorithm]
    configs = grid.configs()
    units = get_family(alg.type).units(configs)
    dims = [h for h in grid.free
            if all(len({repr(configs[i][h]) for i in u}) == 1 for u in units)]
    return configs, units, dims


def unit_dimensions(exp: Experiment, algorithm: str) -> list[str]:
    """Free hyperparameters constant within every unit: the optuna grid dimensions besides fold."""
    return _units(exp, algorithm)[2]


def plan_units(exp: Experiment, algorithm: str, config_ids: Sequence[int] | None = None) -> list[list[int]]:
    """Units of an algorithm (lists of global config ids), optionally restricted to some configs."""
    alg = _algorithm(exp, algorithm)
    configs = exp.grids[algorithm].configs()
    ids = list(range(len(configs))) if config_ids is None else sorted(int(c) for c in config_ids)
    local = get_family(alg.type).units([configs[i] for i in ids])
    return [[ids[j] for j in u] for u in local]


def plan(exp: Experiment, algorithm: str, folds: Iterable[str]) -> list[Task]:
    """Validation tasks of one algorithm: every unit on every fold."""
    return plan_with_dimensions(exp, algorithm, folds)[0]


def plan_with_dimensions(exp: Experiment, algorithm: str,
                         folds: Iterable[str]) -> tuple[list[Task], list[str]]:
    """:func:`plan` and :func:`unit_dimensions` together, the grid expanded and its units
    formed once for every fold."""
    configs, units, dims = _units(exp, algorithm)
    tasks = []
    for fold in folds:
        for k, unit in enumerate(units):
            params = {h: configs[unit[0]][h] for h in dims}
            tasks.append(Task(algorithm, fold, validation_unit(k), tuple(unit), params))
    return tasks, dims


def _algorithm(exp: Experiment, name: str):
    for a in exp.algorithms:
        if a.name == name:
            return a
    raise input_error(exp.source, "algorithms", f"no algorithm named {name!r}")


def test_tasks(exp: Experiment, store: ResultStore) -> list[Task]:
    """Test-split tasks: the best configuration of every metric@cutoff, trained on the whole
    training part (units group them, so BPR snapshots are shared)."""
    best = store.best_configs()
    tasks = []
    for alg in exp.algorithms:
        chosen = sorted(set(best.loc[best["algorithm"] == alg.name, "config_id"].astype(int)))
        if not chosen:
            continue
        configs = exp.grids[alg.name].configs()
        dims = unit_dimensions(exp, alg.name)
        for unit in plan_units(exp, alg.name, chosen):
            params = {h: configs[unit[0]][h] for h in dims}
            tag = zlib.crc32(json.dumps(unit).encode())
            tasks.append(Task(alg.name, "test", f"t{tag:08x}", tuple(unit), params))
    return tasks


def _key(params: dict[str, Any]) -> str:
    """Canonical JSON of a grid point's parameters (fold + unit hyperparameters)."""
    return json.dumps({k: params[k] for k in sorted(params)}, sort_keys=True, default=repr)
