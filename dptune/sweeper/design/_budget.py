"""A budget in whole rounds, and the projected time of a run.

A budget (:class:`dptune.config.Budget`: units per algorithm, a fraction of each grid, or a
wall-clock time) becomes a number of *whole rounds* of each algorithm's design order: the most
rounds whose units fit in it, at least one. A time budget gives every algorithm the same share
of its grid: the largest fraction ``q`` (taken among the rounds' boundaries) such that the run
with, for each algorithm, the most whole rounds of at most ``q`` of its units projects to no
more than the budget (:func:`projection`); less than one round of every algorithm is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dptune.errors import input_error
from dptune.sweeper._cost import CostModel, SweepShape

if TYPE_CHECKING:
    from dptune.config import Budget, Experiment
    from dptune.sweeper.design._design import AlgorithmDesign, Design

__all__ = ["Projection", "projection", "budget_rounds", "hours_text"]


@dataclass(frozen=True)
class Projection:
    """Projected wall-clock seconds of a run on ``jobs`` worker processes (one core each):
    the validation units, the test split (the units of the configurations each metric@N
    selects: at most one per metric@N, each costing the mean unit of the sweep) and the
    noise floor (seeds x configurations x folds trainings of one configuration, each costing
    the mean configuration of the sweep). From the cost model (:mod:`dptune.sweeper._cost`)."""

    validation: float
    test: float
    noise: float
    jobs: int

    @property
    def seconds(self) -> float:
        """The whole run."""
        return self.validation + self.test + self.noise

    @property
    def hours(self) -> float:
        """The whole run, in hours."""
        return self.seconds / 3600.0


def hours_text(seconds: float) -> str:
    """``"1.4 h"``, ``"35 min"``, ``"40 s"`` or ``"0.4 s"``."""
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"


def _unit_costs(exp: Experiment, d: AlgorithmDesign, n: int, shape: SweepShape,
                model: CostModel, test: bool = False) -> list[float] | None:
    configs = exp.grids[d.algorithm].configs()
    fold = shape.test if test else shape.validation
    out = []
    for u in d.units[:n]:
        s = model.unit_seconds(d.type, [configs[c] for c in u.config_ids], fold)
        if s is None:
            return None
        out.append(s)
    return out


def projection(exp: Experiment, design: Design, shape: SweepShape,
               rounds: dict[str, int] | None = None, jobs: int | None = None,
               model: CostModel | None = None) -> Projection | None:
    """Projected time of the run of ``rounds`` rounds per algorithm (default: the design's
    budget; pass each algorithm's ``rounds`` for the full grid) on ``jobs`` cores (default the
    experiment's ``[sweep] jobs``); ``None`` when an algorithm's model type has no cost model."""
    from dptune.models import is_stochastic

    model = model or CostModel()
    jobs = int(jobs or exp.sweep.jobs)
    val = test = noise = 0.0
    n_select = len(exp.evaluation.metrics) * len(exp.evaluation.cutoffs)
    for name, d in design.algorithms.items():
        r = d.budget_rounds if rounds is None else rounds.get(name, d.budget_rounds)
        n = d.units_for(r)
        costs = _unit_costs(exp, d, n, shape, model)
        if costs is None:
            return None
        val += sum(costs) * shape.folds
        if exp.evaluation.test_split and n:
            tcosts = _unit_costs(exp, d, n, shape, model, test=True) or [0.0]
            test += min(n_select, n) * float(np.mean(tcosts))
        seeds = int(exp.analysis.noise_seeds)
        if seeds and n and is_stochastic(d.type):
            configs = exp.grids[d.algorithm].configs()
            per = [model.config_seconds(d.type, configs[c], shape.validation)
                   for u in d.units[:n] for c in u.config_ids]
            if any(p is None for p in per):
                return None
            noise += seeds * int(exp.analysis.noise_configs) * shape.folds * float(np.mean(per))
    return Projection(val / jobs, test / jobs, noise / jobs, jobs)


def budget_rounds(budget: Budget | None, exp: Experiment, design: Design, shape: SweepShape,
                  jobs: int | None = None, model: CostModel | None = None) -> dict[str, int]:
    """Whole rounds per algorithm that ``budget`` runs (all of them for ``None``).

    Units or a fraction: per algorithm, the most whole rounds holding at most that many units
    (at least one round). A time: the module docstring; an algorithm without a cost model, or a
    budget shorter than one round of every algorithm, is one error naming where the budget
    was given (:attr:`dptune.config.Budget.text`'s file and field)."""
    algs = design.algorithms
    if budget is None:
        return {n: d.rounds for n, d in algs.items()}
    if budget.kind in ("units", "fraction"):
        out = {}
        for n, d in algs.items():
            cap = budget.amount if budget.kind == "units" else budget.amount * d.total_units
            out[n] = max(1, int(np.searchsorted(d.round_ends, cap + 1e-9, side="right")))
        return out
    source, field = budget.source or exp.source, budget.key
    model = model or CostModel()
    fractions = sorted({d.round_ends[r] / d.total_units for d in algs.values()
                        for r in range(d.rounds)})

    def at(q: float) -> dict[str, int]:
        return {n: max(1, int(np.searchsorted(d.round_ends, q * d.total_units + 1e-9,
                                              side="right"))) for n, d in algs.items()}

    first = projection(exp, design, shape, at(0.0), jobs, model)
    if first is None:
        missing = [f"{n} ({d.type})" for n, d in algs.items()
                   if _unit_costs(exp, d, 1, shape, model) is None]
        raise input_error(source, field, f"a time budget ({budget.text}) needs a cost model, "
                          f"and {', '.join(missing)} has none; give a number of units or a "
                          "fraction of the grid instead")
    if first.seconds > budget.amount:
        raise input_error(source, field, f"{budget.text} holds no whole round: the first round "
                          f"of every algorithm projects to {hours_text(first.seconds)} on "
                          f"{first.jobs} core{'s' if first.jobs != 1 else ''} (cost model, "
                          "test split and noise floor included); give a longer time")
    best = at(0.0)
    for q in fractions:
        r = at(q)
        p = projection(exp, design, shape, r, jobs, model)
        if p is None or p.seconds > budget.amount:
            break
        best = r
    return best

