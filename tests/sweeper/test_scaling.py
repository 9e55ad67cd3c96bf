"""The sweep's planning scales with the grid: what it computes once per grid, per unit or per
trial is computed that often, not once per fold, per round or per task of the whole sweep.

Each fast path is checked against the simple one it replaced (kept here as the oracle), and
each cliff by counting the calls of the slow primitive, never by timing."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import BPR_3x3, bpr_grid, write_experiment, write_synthetic_experiment
from hypothesis import given
from hypothesis import strategies as st

from dptune.config import Budget, load_experiment
from dptune.grids import Grid
from dptune.models import get_family
from dptune.store._schema import validation_unit
from dptune.sweeper import plan, unit_dimensions
from dptune.sweeper._cost import CostModel, FoldShape, SweepShape
from dptune.sweeper._plan import Task, plan_units
from dptune.sweeper._progress import Progress
from dptune.sweeper._worker import stop_when_written
from dptune.sweeper.design import budget_rounds, experiment_design, projection
from dptune.sweeper.design._design import _index_of, algorithm_design
from dptune.sweeper.design._order import Order

ROOT = Path(__file__).resolve().parents[2]
ML1M = SweepShape(FoldShape(717_995, 5815, 3706), FoldShape(797_772, 5975, 3706), 10,
                  ratings=1_000_209)


@pytest.fixture(autouse=True)
def warm_cache(monkeypatch):
    """Projections as on a machine whose numba cache holds every kernel."""
    monkeypatch.setattr("dptune.sweeper.design._budget.cold_kernels", lambda exp: [])


@pytest.fixture(scope="module")
def paper():
    return load_experiment(ROOT / "experiments" / "anelli2019-ml1m-design.toml")


def _count(monkeypatch, owner, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (still calling it); the count is ``[n]``."""
    real = getattr(owner, name)
    n = [0]

    def counted(*args, **kwargs):
        n[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return n


# ---------------------------------------------------------------------------------------------
# plan: the grid expanded and its units formed once, whatever the number of folds


def _naive_plan(exp, algorithm, folds):
    """The plan as it was written first: the units formed again for every fold."""
    dims = unit_dimensions(exp, algorithm)
    configs = exp.grids[algorithm].configs()
    tasks = []
    for fold in folds:
        for k, unit in enumerate(plan_units(exp, algorithm)):
            params = {h: configs[unit[0]][h] for h in dims}
            tasks.append(Task(algorithm, fold, validation_unit(k), tuple(unit), params))
    return tasks


def test_the_plan_of_every_fold_is_the_plan_fold_by_fold(paper):
    folds = [str(f) for f in range(10)]
    for a in paper.algorithms:
        fast, naive = plan(paper, a.name, folds), _naive_plan(paper, a.name, folds)
        assert fast == naive
        assert [t.params for t in fast] == [t.params for t in naive]


def test_the_plan_expands_the_grid_once_for_every_fold(paper, monkeypatch):
    """Ten folds of the paper's BPR-MF grid: one expansion and one validation of its 3,150
    configurations (once per fold, and twice more, took 30 s on a grid of 100,000)."""
    family = type(get_family("bpr-mf"))
    configs = _count(monkeypatch, Grid, "configs")
    units = _count(monkeypatch, family, "units")
    tasks = plan(paper, "bpr-mf", [str(f) for f in range(10)])
    assert len(tasks) == 2250 and configs == [1] and units == [1]
    configs[0] = units[0] = 0
    algorithm_design(paper, "bpr-mf")
    assert configs == [1] and units == [1]


# ---------------------------------------------------------------------------------------------
# the design: positions of values and rounds found in one hashed pass or a binary search


_VALUES = st.one_of(st.integers(-3, 3), st.booleans(), st.sampled_from([0.0, 1.0, 2.5, math.nan]),
                    st.sampled_from(["a", "b", "1"]), st.integers(-3, 3).map(np.int64))


@given(st.lists(_VALUES, max_size=8), st.lists(_VALUES, max_size=8))
def test_a_hashed_position_is_the_first_same_value(values, asked):
    """``_index_of`` gives the position of the first value the grid's own rule calls the same
    (``_same``, the oracle: equal, and both or neither a bool, so a ``True`` is not a ``1``);
    for a value with no such one it answers as ``list.index`` does (a NaN found by identity,
    else ``ValueError``)."""
    from dptune.grids import _same

    index = _index_of(values)
    for v in [*values, *asked]:
        same = [j for j, w in enumerate(values) if _same(w, v)]
        if same:
            assert index(v) == same[0], (values, v)
            continue
        try:
            want = values.index(v)
        except ValueError:
            with pytest.raises(ValueError):
                index(v)
        else:
            assert index(v) == want


def test_a_list_of_unhashable_values_keeps_the_lists_index():
    values = [[1], [2], [1]]
    assert _index_of(values)([1]) == 0 and _index_of(values)([2]) == 1


class _NoIndex(list):
    """A grid's value list whose ``index`` (a scan of the list) must not be called."""

    def index(self, *args):  # noqa: D102
        pytest.fail("list.index scanned the values for a unit")


def test_the_design_finds_each_units_values_without_scanning_the_lists(paper):
    """Every unit's point in the design's grid is found in a table, not by ``list.index`` (a
    scan of the values for every unit: seconds on a grid of 100,000 units)."""
    grid = paper.grids["bpr-mf"]
    scanned = replace(grid, values={h: _NoIndex(v) for h, v in grid.values.items()})
    exp = replace(paper, grids={**paper.grids, "bpr-mf": scanned})
    assert algorithm_design(exp, "bpr-mf") == algorithm_design(paper, "bpr-mf")


@given(st.lists(st.integers(1, 5), min_size=1, max_size=12), st.integers(-2, 70))
def test_the_round_of_a_position_is_numpys_searchsorted(steps, position):
    ends = tuple(int(e) for e in np.cumsum(steps))
    order = Order(sizes=(ends[-1],), points=(), round_ends=ends)
    assert order.round_of(position) == int(np.searchsorted(ends, position, side="right"))


def test_the_rounds_of_a_design_are_found_without_copying_its_round_ends(tmp_path, monkeypatch):
    """A grid of one hyperparameter of 400 values is ordered in 200 rounds of 2: the round of
    each unit is a binary search of the round ends, not ``np.searchsorted``, which copied all
    of them into an array for every unit (seconds on a grid of 10,000 units)."""
    grid = bpr_grid(range(1, 401), [1], [0.05])
    exp = load_experiment(write_experiment(tmp_path, bpr=grid))
    calls = _count(monkeypatch, np, "searchsorted")
    d = algorithm_design(exp, "bpr-mf")
    assert d.total_units == 400 and d.rounds == 200 and calls[0] < 10
    assert [u.round for u in d.units] == [p // 2 for p in range(400)]


# ---------------------------------------------------------------------------------------------
# a time budget: each unit priced once, not once per round boundary


def _naive_budget_rounds(budget, exp, design, shape, jobs):
    """The time budget as it was written first, the oracle: every round boundary projected
    afresh with :func:`projection` (each unit priced again at each one)."""
    algs = design.algorithms
    fractions = sorted({d.round_ends[r] / d.total_units for d in algs.values()
                        for r in range(d.rounds)})

    def at(q):
        return {n: max(1, int(np.searchsorted(d.round_ends, q * d.total_units + 1e-9,
                                              side="right"))) for n, d in algs.items()}

    best = at(0.0)
    for q in fractions:
        r = at(q)
        p = projection(exp, design, shape, r, jobs)
        if p is None or p.seconds > budget.amount:
            break
        best = r
    return best


@pytest.mark.parametrize("stages", [False, True])
def test_a_time_budget_takes_the_rounds_the_naive_search_takes(paper, stages):
    exp = paper
    if stages:  # the test split and the noise floor priced too
        exp = replace(paper, evaluation=replace(paper.evaluation, test_split=True),
                      analysis=replace(paper.analysis, noise_seeds=3))
    d = experiment_design(exp)
    full = projection(exp, d, ML1M, {n: a.rounds for n, a in d.algorithms.items()}, jobs=2)
    first = projection(exp, d, ML1M, {n: 1 for n in d.algorithms}, jobs=2)
    for share in (0.0, 0.1, 0.3, 0.55, 0.8, 1.0, 2.0):
        seconds = first.seconds + share * (full.seconds - first.seconds) + 1e-6
        b = Budget("time", seconds, f"{seconds}s", "exp.toml", "sweep.budget")
        assert budget_rounds(b, exp, d, ML1M, jobs=2) == _naive_budget_rounds(b, exp, d, ML1M, 2)


def test_a_time_budget_prices_each_unit_once(paper, monkeypatch):
    """The paper's BPR-MF grid (225 units, 15 rounds) under a budget that holds it whole: each
    unit is priced once on a validation fold (and once on the test split), and the grid
    expanded at most once per algorithm, not at each of the 15 round boundaries (minutes on a
    grid of 100,000 configurations)."""
    exp = replace(paper, evaluation=replace(paper.evaluation, test_split=True),
                  analysis=replace(paper.analysis, noise_seeds=3))
    d = experiment_design(exp)
    units = sum(a.total_units for a in d.algorithms.values())
    b = Budget("time", 1e12, "a long time", "exp.toml", "sweep.budget")
    priced = _count(monkeypatch, CostModel, "unit_seconds")
    configs = _count(monkeypatch, Grid, "configs")
    rounds = budget_rounds(b, exp, d, ML1M, jobs=2)
    assert rounds == {n: a.rounds for n, a in d.algorithms.items()}
    assert priced[0] <= 2 * units and configs[0] <= len(d.algorithms)


# ---------------------------------------------------------------------------------------------
# a worker's stop rule and the progress bar: each part checked about once, not once per trial


class _Study:
    stopped = False

    def stop(self) -> None:
        self.stopped = True


def _tasks(n: int) -> list[Task]:
    return [Task("a", str(i % 2), f"u{i // 2}", (i,), {}) for i in range(n)]


@given(st.permutations(range(20)),
       st.lists(st.tuples(st.integers(0, 40), st.integers(0, 19)), max_size=4))
def test_the_study_stops_exactly_when_every_part_is_written(order, losses):
    """Parts written in any order, and some lost again before the end (a damaged part removed,
    written again later): the study stops after the trial at which every part is there, as the
    naive rule (check them all after every trial) says, the oracle."""
    n = len(order)
    tasks = _tasks(n)
    queue, lose = list(order), dict(losses)
    written: set[int] = set()
    study = _Study()
    stop = stop_when_written(tasks, lambda t: t.config_ids[0] in written)
    step = 0
    while queue:
        written.add(queue.pop(0))
        if step in lose and len(written) < n:
            gone = sorted(written)[lose[step] % len(written)]
            written.discard(gone)
            queue.append(gone)
        stop(study, None)
        assert study.stopped == (len(written) == n)
        step += 1


def test_the_stop_rule_checks_each_part_about_once_over_a_sweep():
    """2,000 tasks done in design order, the rule asked after each: about 2 checks per task in
    all, where checking every part after every trial took 4,000,000 (hours of file checks on a
    sweep of tens of thousands of tasks)."""
    n = 2000
    tasks = _tasks(n)
    done = [False] * n
    checks = [0]

    def written(t: Task) -> bool:
        checks[0] += 1
        return done[t.config_ids[0]]

    study = _Study()
    stop = stop_when_written(tasks, written)
    for i in range(n):
        done[i] = True
        stop(study, None)
    assert study.stopped and checks[0] <= 3 * n


class _Store:
    """A store that counts the parts it is asked about; ``written``: (algorithm, fold, unit)."""

    def __init__(self, written: set[tuple[str, str, str]]) -> None:
        self.written, self.checks = written, 0

    def has_part(self, algorithm: str, fold: str, unit: str) -> bool:
        self.checks += 1
        return (algorithm, fold, unit) in self.written


def _naive_units(store, tasks, design) -> str:
    """The bar's units as they were first written (the parts read again), the oracle."""
    done: dict[tuple[str, str], int] = {}
    for t in tasks:
        if store.has_part(t.algorithm, t.fold, t.unit):
            done[t.algorithm, t.unit] = done.get((t.algorithm, t.unit), 0) + 1
    k = len(design.folds)
    out = []
    for name, d in design.algorithms.items():
        m = sum(1 for (a, _), n in done.items() if a == name and n == k)
        budget = f" (budget {d.budget_units})" if d.budget_units < d.total_units else ""
        out.append(f"{name} {m} of {d.total_units} units{budget}")
    return ", ".join(out)


def test_a_progress_update_checks_each_part_once(tmp_path):
    """One redraw of the bar reads every part once (the count and the units from the same
    reading), and says what reading them twice said."""
    exp = load_experiment(write_experiment(tmp_path, bpr=BPR_3x3))
    design = experiment_design(exp)
    tasks = design.tasks()
    written = {(t.algorithm, t.fold, t.unit) for t in [*tasks[::3], *tasks[:6]]}
    store = _Store(written)
    bar = Progress(store, tasks, "x", False, design)
    text = bar.units()
    assert bar.count() == len(written)
    assert text == _naive_units(store, tasks, design)
    assert text.startswith("userknn 1 of 1 units, bpr-mf ")
    store.checks = 0
    w = bar.written()
    assert store.checks == len(tasks)
    assert bar.count(w) == len(written) and bar.units(w) == text


# ---------------------------------------------------------------------------------------------
# a unit takes its own configurations, without expanding its grid


def test_a_unit_is_computed_without_expanding_its_grid(tmp_path, monkeypatch):
    """A unit reads its configurations by id (:meth:`Grid.config`): expanding the grid for
    every unit cost a second each on a grid of 100,000 configurations. Its values are those of
    the unit computed before."""
    from dptune.sweeper._unit import compute_unit

    exp = load_experiment(write_synthetic_experiment(tmp_path, "scale"))
    task = plan(exp, "bpr-mf", ["0"])[1]
    before = compute_unit(exp, task)
    monkeypatch.setattr(Grid, "configs", lambda self: pytest.fail("expanded the grid"))
    after = compute_unit(exp, task)
    assert after.config_ids == before.config_ids == task.config_ids
    for a, b in zip(after.values, before.values, strict=True):
        np.testing.assert_array_equal(a, b)

