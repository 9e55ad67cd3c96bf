"""The design of an experiment: every algorithm's units in design order, its rounds and the
rounds its budget runs.

A unit of the sweep (:func:`dptune.sweeper.plan_units`: a BPR-MF ``(factors, learning_rate)``
training run with its iteration snapshots, a KNN with every ``k``, one configuration of any other
model) is a point of the grid of its unit hyperparameters
(:func:`dptune.sweeper.unit_dimensions`); :func:`algorithm_design` orders those points with
:func:`dptune.sweeper.design.design_order`, seeded per algorithm by
``derive_seed(experiment seed, "design", algorithm)``. A grid whose units are not the product
of their hyperparameters' values (a model family of one's own with other units) is ordered as
one hyperparameter of its units (a seeded permutation, rounds of 2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from dptune.grids import value_key
from dptune.sweeper._plan import Task, derive_seed, plan_with_dimensions
from dptune.sweeper.design._order import METHOD, design_order

if TYPE_CHECKING:
    import pandas as pd

    from dptune.config import Experiment

__all__ = ["DesignUnit", "AlgorithmDesign", "Design", "algorithm_design", "experiment_design"]


@dataclass(frozen=True)
class DesignUnit:
    """One unit of a design: its ``position`` in the order and its ``round`` (both 0-based), the
    unit's name in the store (:class:`dptune.sweeper.Task`'s ``unit``), its configuration ids
    and the values of its unit hyperparameters; ``folds_done`` are the validation folds whose
    part is in the store (filled by :func:`dptune.sweeper.design.read_design`, empty otherwise)
    and ``complete`` is true when every fold's part is there."""

    position: int
    round: int
    unit: str
    config_ids: tuple[int, ...]
    params: dict[str, Any] = field(hash=False, compare=False)
    folds_done: tuple[str, ...] = ()
    complete: bool = False


@dataclass(frozen=True)
class AlgorithmDesign:
    """The design of one algorithm: its units in design order (the whole grid) and its rounds.

    ``dimensions``/``sizes``: the unit hyperparameters the design balances and their value
    counts (empty for an algorithm of one unit, such as a KNN); ``round_ends[r]``: units in
    rounds ``0..r``; ``budget_rounds``: how many rounds the sweep runs (all of them without a
    budget); ``seed``: the design's seed; ``method``: the construction's name and version.
    """

    algorithm: str
    type: str
    dimensions: tuple[str, ...]
    sizes: tuple[int, ...]
    seed: int
    method: str
    units: tuple[DesignUnit, ...]
    round_ends: tuple[int, ...]
    budget_rounds: int

    @property
    def total_units(self) -> int:
        """Units of the full grid (M)."""
        return len(self.units)

    @property
    def total_configs(self) -> int:
        """Configurations of the full grid."""
        return sum(len(u.config_ids) for u in self.units)

    @property
    def rounds(self) -> int:
        """Rounds of the full grid."""
        return len(self.round_ends)

    @property
    def round_size(self) -> int:
        """Units of a round (the last one may hold fewer)."""
        return self.round_ends[0]

    @property
    def budget_units(self) -> int:
        """Units of the rounds the budget runs."""
        return self.round_ends[self.budget_rounds - 1]

    def in_budget(self) -> tuple[DesignUnit, ...]:
        """The units the budget runs (the first :attr:`budget_units` of the order)."""
        return self.units[: self.budget_units]

    def complete_units(self) -> tuple[DesignUnit, ...]:
        """The units whose part is in the store on every validation fold."""
        return tuple(u for u in self.units if u.complete)

    def units_for(self, rounds: int) -> int:
        """Units of the first ``rounds`` rounds (0 for none)."""
        return 0 if rounds <= 0 else self.round_ends[min(rounds, self.rounds) - 1]

    def frame(self) -> pd.DataFrame:
        """One row per unit in design order: ``position, round, unit, config_ids`` (a tuple),
        one column per design hyperparameter, ``in_budget``, ``folds_done`` (a tuple) and
        ``complete``."""
        import pandas as pd

        rows = []
        for u in self.units:
            rows.append({"position": u.position, "round": u.round, "unit": u.unit,
                         "config_ids": u.config_ids, **{h: u.params.get(h) for h in self.dimensions},
                         "in_budget": u.position < self.budget_units,
                         "folds_done": u.folds_done, "complete": u.complete})
        return pd.DataFrame(rows)

    def tasks(self, folds: list[str], rounds: int | None = None) -> list[Task]:
        """The validation tasks of the first ``rounds`` rounds (default: the budget's), in design
        order, every fold of a unit together."""
        n = self.units_for(self.budget_rounds if rounds is None else rounds)
        return [Task(self.algorithm, f, u.unit, u.config_ids, dict(u.params))
                for u in self.units[:n] for f in folds]


@dataclass(frozen=True)
class Design:
    """The design of an experiment: ``algorithms`` by name, the validation ``folds``, the
    experiment ``seed`` (each algorithm's design seed derives from it), the experiment
    ``fingerprint`` it belongs to and the ``budget`` as given (``None``: the full grid)."""

    seed: int
    fingerprint: str
    folds: tuple[str, ...]
    algorithms: dict[str, AlgorithmDesign]
    budget: str | None = None

    def tasks(self) -> list[Task]:
        """Every validation task the budget runs, algorithm by algorithm, in design order."""
        return [t for a in self.algorithms.values() for t in a.tasks(list(self.folds))]

    def with_rounds(self, rounds: dict[str, int], budget: str | None) -> Design:
        """The same design with the budget's rounds per algorithm."""
        algs = {n: replace(a, budget_rounds=max(1, min(int(rounds.get(n, a.rounds)), a.rounds)))
                for n, a in self.algorithms.items()}
        return replace(self, algorithms=algs, budget=budget)


def algorithm_design(exp: Experiment, algorithm: str) -> AlgorithmDesign:
    """The design order of ``algorithm``'s units (the full grid; no budget applied)."""
    alg = next(a for a in exp.algorithms if a.name == algorithm)
    tasks, dims = plan_with_dimensions(exp, algorithm, ["0"])
    grid = exp.grids[algorithm]
    index = {h: _index_of(grid.values[h]) for h in dims}
    points: dict[tuple[int, ...], int] = {}
    for i, t in enumerate(tasks):
        points[tuple(index[h](t.params[h]) for h in dims)] = i
    sizes = tuple(len(grid.values[h]) for h in dims)
    if len(points) != len(tasks) or math.prod(sizes) != len(tasks):
        # units that are not the product of their hyperparameters: order the units themselves
        dims, sizes = [], (len(tasks),)
        points = {(i,): i for i in range(len(tasks))}
    seed = derive_seed(exp.seed, "design", algorithm)
    order = design_order(sizes, seed) if tasks else None
    units = []
    if order is not None:
        for pos, point in enumerate(order.points):
            t = tasks[points[point]]
            units.append(DesignUnit(pos, order.round_of(pos), t.unit, t.config_ids,
                                    dict(t.params)))
    ends = order.round_ends if order is not None else (0,)
    return AlgorithmDesign(algorithm=algorithm, type=alg.type, dimensions=tuple(dims),
                           sizes=tuple(sizes),
                           seed=seed, method=METHOD, units=tuple(units), round_ends=tuple(ends),
                           budget_rounds=len(ends))


def _index_of(values: list[Any]) -> Callable[[Any], int]:
    """The position of a value in ``values``, from one hashed pass over them (``list.index``
    scanned the list for every unit, a cost of units x values: seconds on a grid of 100,000
    units). Values are the same exactly when the grid's repeat check says so
    (:func:`dptune.grids.value_key`: a ``True`` is not a ``1``, where ``list.index`` finds a
    ``1`` listed before it), so the design and the grid read a value list one way. A value
    without a key of its own (a NaN, an unhashable value) is left to ``list.index``,
    which finds it by identity or equality."""
    first: dict[tuple[Any, ...], int] = {}
    for i, v in enumerate(values):
        first.setdefault(value_key(v), i)

    def index(value: Any) -> int:
        i = first.get(value_key(value))
        return i if i is not None else values.index(value)

    return index


def experiment_design(exp: Experiment) -> Design:
    """The design of every algorithm of ``exp`` (full grids; no budget applied)."""
    return Design(seed=exp.seed, fingerprint=exp.fingerprint(),
                  folds=tuple(str(f) for f in range(exp.split.folds)),
                  algorithms={a.name: algorithm_design(exp, a.name) for a in exp.algorithms})
