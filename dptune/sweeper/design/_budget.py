"""A budget in whole rounds, and the projected time of a run.

A budget (:class:`dptune.config.Budget`: units per algorithm, a fraction of each grid, or a
wall-clock time) becomes a number of *whole rounds* of each algorithm's design order: the most
rounds whose units fit in it, at least one. A time budget gives every algorithm the same share
of its grid: the largest fraction ``q`` (taken among the rounds' boundaries) such that the run
with, for each algorithm, the most whole rounds of at most ``q`` of its units projects to no
more than the budget (:func:`projection`, every stage of the run counted: start-up, the first
compilation of kernels, validation, test split, noise floor, analysis and report); less than one
round of every algorithm is an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dptune.errors import input_error, plain
from dptune.sweeper._cost import CostModel, SweepShape
from dptune.sweeper._warmup import cold_kernels

if TYPE_CHECKING:
    from dptune.config import Budget, Experiment
    from dptune.sweeper.design._design import AlgorithmDesign, Design

__all__ = ["Projection", "projection", "budget_rounds", "check_unit_seconds", "hours_text",
           "TEST_UNITS", "MAX_UNIT_SECONDS"]


@dataclass(frozen=True)
class Projection:
    """Projected wall-clock seconds of a run on ``jobs`` worker processes (one core each; on a
    ``device``, the one device they take turns on), stage by stage, from the cost model
    (:mod:`dptune.sweeper._cost`):

    - ``startup``: the interpreter, imports, reading and splitting the data;
    - ``compile``: the first compilation of the numba kernels numba's cache does not hold yet;
    - ``validation``: the units of the budget on every validation fold;
    - ``test``: the test split, the units of the configurations the metric@N select: per
      algorithm at most :data:`TEST_UNITS` of them (the stores measured selected 1 to 4 distinct
      units over 18 metric@N), each costing the mean unit on the test fold;
    - ``noise``: the noise floor, seeds x configurations x folds trainings of one configuration,
      each costing the configuration that won once it is known (``winners``), else the mean of
      the costlier half of each unit's configurations: tuned winners are long-trained ones (4
      of the 5 stores measured chose the grid's most iterations; the winner cost 4 times the
      mean configuration on ML-1M), so the mean configuration underprices them;
    - ``analysis``: the analysis and the report.
    """

    validation: float
    test: float
    noise: float
    jobs: int
    startup: float = 0.0
    compile: float = 0.0
    analysis: float = 0.0
    device: str = "cpu"
    #: Whether ``noise`` is priced at the configurations the validation chose (``winners``),
    #: not at likely winners; said by :meth:`stages_text`, so that a projection made before
    #: the sweep (``dptune run``'s first line) and one made after it (``dptune status``) say
    #: why they differ.
    noise_at_winners: bool = False

    @property
    def where(self) -> str:
        """``"2 cores"``, ``"1 core"`` or ``"one cuda device"``: what the units run on."""
        if self.device != "cpu":
            return f"one {self.device} device"
        return f"{self.jobs} core{'s' if self.jobs != 1 else ''}"

    @property
    def seconds(self) -> float:
        """The whole run."""
        return (self.startup + self.compile + self.validation + self.test + self.noise
                + self.analysis)

    @property
    def hours(self) -> float:
        """The whole run, in hours."""
        return self.seconds / 3600.0

    def stages_text(self) -> str:
        """``"validation 40 min, test split 2 min, noise floor 14 min at likely winners,
        start-up, compilation and analysis 35 s"``: where the time goes, and what the noise
        floor is priced at."""
        rest = self.startup + self.compile + self.analysis
        what = "start-up, compilation and analysis" if self.compile else "start-up and analysis"
        at = ""
        if self.noise:
            at = (" at the configurations the validation chose" if self.noise_at_winners
                  else " at likely winners")
        return (f"validation {hours_text(self.validation)}, test split {hours_text(self.test)}, "
                f"noise floor {hours_text(self.noise)}{at}, {what} {hours_text(rest)}")


#: Distinct units of the test split per algorithm that a projection prices (module docstring of
#: :class:`Projection`).
TEST_UNITS = 3


#: The longest one unit may be projected to take (30 days on one core, or on the device): a
#: unit of the paper's ML-1M grid takes minutes, so a grid value that makes one take longer is
#: a typo (``iterations = 1e12``) far more often than a plan, and a sweep would start work it
#: cannot finish.
MAX_UNIT_SECONDS = 30 * 86400.0


def hours_text(seconds: float) -> str:
    """``"1.4 h"``, ``"35 min"``, ``"40 s"`` or ``"0.4 s"``; ``"12 days"``, ``"1.5 years"``,
    ``"4,750 years"`` beyond two days."""
    if seconds >= 365 * 86400:
        years = seconds / (365 * 86400)
        return f"{years:.1f} years" if years < 10 else f"{years:,.0f} years"
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.0f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"


class _Costs:
    """The cost model's answers for one experiment, sweep shape and model, each computed once:
    each unit's projected seconds and the noise floor's per-unit costs (configurations taken
    by id, :meth:`dptune.grids.Grid.config`). A time budget projects the run at every round
    boundary (:func:`budget_rounds`), and computing them again for each one grew with rounds x
    units (minutes on a grid of 100,000 configurations); the answers are pure, so the
    projections are the same."""

    def __init__(self, exp: Experiment, shape: SweepShape, model: CostModel) -> None:
        self.exp, self.shape, self.model = exp, shape, model
        self._units: dict[tuple[str, bool], list[float | None]] = {}
        self._halves: dict[str, list[list[float] | None]] = {}
        self._config: dict[tuple[str, int], float | None] = {}

    def units(self, d: AlgorithmDesign, n: int, test: bool = False) -> list[float] | None:
        """Projected seconds of each of the first ``n`` units (``None``: no cost model)."""
        done = self._units.setdefault((d.algorithm, test), [])
        fold = self.shape.test if test else self.shape.validation
        for u in d.units[len(done):n]:
            if done and done[-1] is None:
                break
            grid = self.exp.grids[d.algorithm]
            done.append(self.model.unit_seconds(d.type, [grid.config(c) for c in u.config_ids],
                                                fold))
        out = done[:n]
        return None if any(s is None for s in out) else out  # type: ignore[return-value]

    def config_seconds(self, d: AlgorithmDesign, config_id: int) -> float | None:
        """Projected seconds of one configuration trained alone on a validation fold."""
        key = (d.algorithm, int(config_id))
        if key not in self._config:
            self._config[key] = self.model.config_seconds(
                d.type, self.exp.grids[d.algorithm].config(config_id), self.shape.validation)
        return self._config[key]

    def costlier_halves(self, d: AlgorithmDesign, n: int) -> list[list[float] | None]:
        """For each of the first ``n`` units, the costlier half of its configurations' seconds
        (``None`` for a unit with a configuration the cost model cannot price)."""
        done = self._halves.setdefault(d.algorithm, [])
        for u in d.units[len(done):n]:
            each = [self.config_seconds(d, c) for c in u.config_ids]
            done.append(None if any(e is None for e in each)
                        else sorted(each)[len(each) // 2:])  # type: ignore[type-var]
        return done[:n]


def projection(exp: Experiment, design: Design, shape: SweepShape,
               rounds: dict[str, int] | None = None, jobs: int | None = None,
               model: CostModel | None = None,
               winners: Mapping[str, Sequence[int]] | None = None,
               cold: Sequence[str] | None = None) -> Projection | None:
    """Projected time of the run of ``rounds`` rounds per algorithm (default: the design's
    budget; pass each algorithm's ``rounds`` for the full grid) on ``jobs`` cores (default the
    experiment's ``[sweep] jobs``; a sweep on a device counts its units one after the other),
    every stage counted (:class:`Projection`); ``None`` when an algorithm's model type has no
    cost model. ``model``: default the cost model of the experiment's ``[sweep] device``
    (:meth:`CostModel.for_device`). ``winners``: per algorithm, the configurations the noise
    floor trains, once the validation has chosen them; ``cold``: the kernels still to compile
    (default :func:`dptune.sweeper._warmup.cold_kernels`)."""
    model = model or CostModel.for_device(exp.sweep.device)
    return _projection(exp, design, shape, rounds, jobs, model, winners, cold,
                       _Costs(exp, shape, model))


def _projection(exp: Experiment, design: Design, shape: SweepShape,
                rounds: dict[str, int] | None, jobs: int | None, model: CostModel,
                winners: Mapping[str, Sequence[int]] | None, cold: Sequence[str] | None,
                costs: _Costs) -> Projection | None:
    """:func:`projection` with the cost model's answers ``costs`` (:class:`_Costs`: of
    ``exp``, ``shape`` and ``model``), kept from one projection to the next."""
    from dptune.models import is_stochastic

    jobs = int(jobs or exp.sweep.jobs)
    lanes = model.workers(jobs)
    val = test = noise = 0.0
    swept: list[tuple[int, int]] = []
    n_metric = len(exp.evaluation.metrics) * len(exp.evaluation.cutoffs)
    for name, d in design.algorithms.items():
        r = d.budget_rounds if rounds is None else rounds.get(name, d.budget_rounds)
        n = d.units_for(r)
        unit_costs = costs.units(d, n)
        if unit_costs is None:
            return None
        val += sum(unit_costs) * shape.folds
        grid = exp.grids[d.algorithm]
        swept.append((sum(len(u.config_ids) for u in d.units[:n]), len(grid.free)))
        if exp.evaluation.test_split and n:
            tcosts = costs.units(d, n, test=True) or [0.0]
            test += min(TEST_UNITS, n_metric, n) * float(np.mean(tcosts))
        seeds = int(exp.analysis.noise_seeds)
        if seeds and n and is_stochastic(d.type):
            per = _noise_config_seconds(d, n, None if winners is None else winners.get(name),
                                        costs)
            if per is None:
                return None
            noise += seeds * int(exp.analysis.noise_configs) * shape.folds * per
    if cold is None:
        cold = cold_kernels(exp)
    return Projection(
        validation=val / lanes, test=test / lanes, noise=noise / lanes, jobs=jobs,
        startup=model.startup_seconds(shape.ratings), compile=model.compile_seconds(cold),
        analysis=model.analysis_seconds(swept, shape.validation, shape.folds, n_metric),
        device=model.device, noise_at_winners=winners is not None)


def _noise_config_seconds(d: AlgorithmDesign, n: int, winners: Sequence[int] | None,
                          costs: _Costs) -> float | None:
    """Projected single-core seconds of one noise-floor training of algorithm ``d``: the mean of
    ``winners`` when the validation has chosen them, else the mean of the costlier half of each
    of the first ``n`` units' configurations (the longer-trained ones); ``costs``: the cost
    model's answers (:class:`_Costs`)."""
    if winners:
        per = [costs.config_seconds(d, c) for c in winners]
    else:
        per = []
        for half in costs.costlier_halves(d, n):
            if half is None:
                return None
            per.extend(half)
    if not per or any(p is None for p in per):
        return None
    return float(np.mean(per))


def check_unit_seconds(exp: Experiment, design: Design, shape: SweepShape,
                       model: CostModel | None = None) -> None:
    """Refuse, before any work, a unit of the rounds ``design`` runs that the cost model
    projects beyond :data:`MAX_UNIT_SECONDS`: one line naming the algorithm's grid file, the
    unit's hyperparameters and its projected time. Model types without a cost model pass."""
    model = model or CostModel.for_device(exp.sweep.device)
    where = "one core" if model.device == "cpu" else f"one {model.device} device"
    for name, d in design.algorithms.items():
        grid = exp.grids[d.algorithm]
        configs = grid.configs()
        for u in d.units[:d.units_for(d.budget_rounds)]:
            unit = [configs[c] for c in u.config_ids]
            s = model.unit_seconds(d.type, unit, shape.validation)
            if s is None:
                break
            if s > MAX_UNIT_SECONDS:
                spans = []
                for k in grid.free:
                    v = sorted({c[k] for c in unit})
                    spans.append(f"{k} = {plain(v[0])}" if len(v) == 1
                                 else f"{k} = {plain(v[0])} to {plain(v[-1])}")
                text = ", ".join(spans)
                written = next(a.grid for a in exp.algorithms if a.name == d.algorithm)
                # named as the grid's value errors name it: as the experiment writes it
                raise input_error(written or grid.source, None, f"{name}: the unit of {text} is "
                                  f"projected at {hours_text(s)} a fold on {where} (cost model), beyond "
                                  f"the {MAX_UNIT_SECONDS / 86400:.0f} days a unit may take; "
                                  "is a value a typo?")


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
    model = model or CostModel.for_device(exp.sweep.device)
    fractions = sorted({d.round_ends[r] / d.total_units for d in algs.values()
                        for r in range(d.rounds)})

    def at(q: float) -> dict[str, int]:
        return {n: max(1, int(np.searchsorted(d.round_ends, q * d.total_units + 1e-9,
                                              side="right"))) for n, d in algs.items()}

    cold = cold_kernels(exp)
    costs = _Costs(exp, shape, model)  # every projection below prices the same units
    first = _projection(exp, design, shape, at(0.0), jobs, model, None, cold, costs)
    if first is None:
        missing = [f"{n} ({d.type})" for n, d in algs.items()
                   if costs.units(d, 1) is None]
        raise input_error(source, field, f"a time budget ({budget.text}) needs a cost model, "
                          f"and {', '.join(missing)} has none; give a number of units or a "
                          "fraction of the grid instead")
    if first.seconds > budget.amount:
        raise input_error(source, field, f"{budget.text} holds no whole round: the first round "
                          f"of every algorithm projects to {hours_text(first.seconds)} on "
                          f"{first.where} (cost model, "
                          "every stage included: start-up, compilation, test split, noise floor, "
                          "analysis); give a longer time")
    best = at(0.0)
    for q in fractions:
        r = at(q)
        p = _projection(exp, design, shape, r, jobs, model, None, cold, costs)
        if p is None or p.seconds > budget.amount:
            break
        best = r
    return best

