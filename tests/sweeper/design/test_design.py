"""An experiment's design: units in design order, a budget in whole rounds, the projection of
the cost model, the sampler that makes workers follow the order, and the recorded design."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import BPR_3x3, write_experiment

from dptune.config import Budget, load_experiment, parse_budget
from dptune.errors import DptuneError
from dptune.sweeper._cost import CostModel, FoldShape, SweepShape
from dptune.sweeper.design import (
    budget_rounds,
    experiment_design,
    projection,
)

ROOT = Path(__file__).resolve().parents[3]
ML1M = SweepShape(FoldShape(717_995, 5815, 3706), FoldShape(797_772, 5975, 3706), 10)


@pytest.fixture(autouse=True)
def warm_cache(monkeypatch):
    """Projections here as on a machine whose numba cache holds every kernel (a fresh clone's
    first test run compiles them; the compilation's own cost is tested with ``cold``)."""
    monkeypatch.setattr("dptune.sweeper.design._budget.cold_kernels", lambda exp: [])


@pytest.fixture(scope="module")
def paper():
    return load_experiment(ROOT / "experiments" / "anelli2019-ml1m-design.toml")


def test_the_papers_bpr_grid_has_225_units_in_rounds_of_15_and_knn_one_unit(paper):
    d = experiment_design(paper)
    bpr = d.algorithms["bpr-mf"]
    assert bpr.dimensions == ("factors", "learning_rate") and bpr.sizes == (15, 15)
    assert bpr.total_units == 225 and bpr.total_configs == 3150
    assert bpr.rounds == 15 and bpr.round_size == 15
    grid = paper.grids["bpr-mf"]
    for r in range(bpr.rounds):
        units = bpr.units[r * 15:(r + 1) * 15]
        assert all(u.round == r and len(u.config_ids) == 14 for u in units)
        if r >= 2:  # after the staircase chain (rounds 0 and 1) each round is a Latin row
            assert {u.params["factors"] for u in units} == set(grid.values["factors"])
            assert {u.params["learning_rate"] for u in units} == set(grid.values["learning_rate"])
    two = bpr.units[:30]  # the chain: two Latin rows, each value twice
    for h in ("factors", "learning_rate"):
        counts = Counter(u.params[h] for u in two)
        assert set(counts) == set(grid.values[h]) and set(counts.values()) == {2}
    # every unit of the grid once, each with its 14 iteration snapshots
    assert sorted(c for u in bpr.units for c in u.config_ids) == list(range(3150))
    for name in ("userknn", "itemknn"):
        knn = d.algorithms[name]
        assert knn.total_units == 1 and knn.units[0].config_ids == tuple(range(15))
    assert experiment_design(paper) == d  # pure


def test_units_and_fraction_budgets_stop_after_whole_rounds(paper):
    d = experiment_design(paper)
    for text, bpr_rounds in (("15", 1), ("44", 2), ("45", 3), ("20%", 3), ("100%", 15),
                             ("1", 1), ("1000", 15)):
        r = budget_rounds(parse_budget(text, "x", None), paper, d, ML1M)
        assert r == {"userknn": 1, "itemknn": 1, "bpr-mf": bpr_rounds}, text
    assert budget_rounds(None, paper, d, ML1M) == {"userknn": 1, "itemknn": 1, "bpr-mf": 15}
    budgeted = d.with_rounds({"bpr-mf": 3}, "20%")
    bpr = budgeted.algorithms["bpr-mf"]
    assert bpr.budget_units == 45 and len(bpr.in_budget()) == 45
    tasks = bpr.tasks(["0", "1"])
    assert [t.unit for t in tasks[:4]] == [bpr.units[0].unit] * 2 + [bpr.units[1].unit] * 2
    assert len(budgeted.tasks()) == (45 + 2) * 10


def test_the_cost_model_projects_the_papers_grid_as_the_benchmark_does(paper):
    """The full grid on ML-1M: 15.5 hours on 2 cores in reports/benchmarks.md (the same unit
    costs). After the staircase chain (rounds 0 and 1) every round holds each factors value once
    and costs the same; the chain's two rounds together cost two such rounds, split between them
    by which factors values each holds (with this experiment's seed the first round holds the
    smaller ones: 0.72 h of validation units on 2 cores against 1.02 h for a Latin row)."""
    d = experiment_design(paper)
    full = projection(paper, d, ML1M, {n: a.rounds for n, a in d.algorithms.items()}, jobs=2)
    assert full.hours == pytest.approx(15.5, abs=0.3)
    val = [projection(paper, d, ML1M, {"bpr-mf": r}, jobs=2).validation for r in range(1, 6)]
    latin = val[3] - val[2]
    assert val[4] - val[3] == pytest.approx(latin) and val[2] - val[1] == pytest.approx(latin)
    knn = projection(paper, d, ML1M, {"bpr-mf": 0}, jobs=2).validation
    assert val[1] - knn == pytest.approx(2 * latin)
    assert val[0] - knn == pytest.approx(0.70 * 3600, rel=0.02)
    # the committed experiment's budget (one round) projects under 1 hour, two rounds over 2
    one = projection(paper, d, ML1M, {"bpr-mf": 1}, jobs=2)
    two = projection(paper, d, ML1M, {"bpr-mf": 2}, jobs=2)
    assert one.hours < 1.0 and two.hours > 2.0
    # one core doubles the units' stages, not start-up, compilation and analysis
    alone = projection(paper, d, ML1M, {"bpr-mf": 1}, jobs=1)
    rest = one.startup + one.compile + one.analysis
    assert alone.seconds - rest == pytest.approx(2 * (one.seconds - rest))


def test_a_time_budget_takes_the_most_whole_rounds_that_fit(paper):
    d = experiment_design(paper)
    for hours, bpr_rounds in ((1.5, 1), (2.5, 2), (3.5, 3), (100, 15)):
        b = Budget("time", hours * 3600, f"{hours}h", "exp.toml", "sweep.budget")
        assert budget_rounds(b, paper, d, ML1M, jobs=2)["bpr-mf"] == bpr_rounds, hours
    # on one core 2.5 hours hold one round (1.7 h), on two cores two (2.3 h)
    b = Budget("time", 2.5 * 3600, "2.5h", "exp.toml", "sweep.budget")
    assert budget_rounds(b, paper, d, ML1M, jobs=1)["bpr-mf"] == 1


def test_a_time_budget_shorter_than_one_round_is_one_error_naming_where_it_was_given(paper):
    d = experiment_design(paper)
    with pytest.raises(DptuneError, match=r"^exp\.toml: sweep\.budget: 30m holds no whole round: "
                                          r"the first round .* projects to 51 min on 2 cores"):
        budget_rounds(parse_budget("30m", "exp.toml", "sweep.budget"), paper, d, ML1M, jobs=2)
    with pytest.raises(DptuneError, match=r"^--budget: 30m holds no whole round"):
        budget_rounds(parse_budget("30m", "--budget", None), paper, d, ML1M, jobs=2)


def test_a_projection_counts_every_stage_of_the_run(paper):
    """Start-up, first compilation, test split, noise floor and the analysis are priced as the
    cost model's docstring says, on top of the validation units."""
    from dptune.sweeper._cost import OVERHEAD_COSTS as O
    from dptune.sweeper.design import TEST_UNITS

    d = experiment_design(paper)
    shape = SweepShape(ML1M.validation, ML1M.test, 10, ratings=1_000_209)
    warm = projection(paper, d, shape, {"bpr-mf": 1}, jobs=2, cold=[])
    cold = projection(paper, d, shape, {"bpr-mf": 1}, jobs=2,
                      cold=["evaluation", "knn", "bpr", "analysis"])
    assert warm.startup == pytest.approx(2.0 + 2.7e-6 * 1_000_209)
    assert warm.compile == 0 and cold.compile == pytest.approx(0.5 + 6.5 + 0.6 + 4.5)
    assert cold.seconds - warm.seconds == pytest.approx(cold.compile)
    # analysis: 15 + 15 KNN configurations and 15 x 14 BPR-MF ones, 10 folds, 18 metric@N
    values = (15 + 15 + 210) * 5815 * 10 * 18
    assert warm.analysis == pytest.approx(O["analysis_seconds"] + 3 * 10 * 0.2 + values * 5.4e-8
                                          + O["analysis_seconds_tuned"])
    # the noise floor: 5 seeds x 1 configuration x 10 folds, each the mean of the longer-trained
    # half of every unit's configurations (iterations 16 to 128 of 1 to 128), on 2 cores
    m, bpr = CostModel(), d.algorithms["bpr-mf"]
    configs = paper.grids["bpr-mf"].configs()
    upper = [c for u in bpr.units[:15] for c in u.config_ids if configs[c]["iterations"] >= 16]
    assert len(upper) == 15 * 7
    mean = sum(m.config_seconds("bpr-mf", configs[c], ML1M.validation) for c in upper) / len(upper)
    assert warm.noise == pytest.approx(5 * 10 * mean / 2)
    # once the validation has chosen the winner, it is priced instead
    cheap = min(configs, key=lambda c: m.config_seconds("bpr-mf", c, ML1M.validation))
    known = projection(paper, d, shape, {"bpr-mf": 1}, jobs=2, cold=[],
                       winners={"bpr-mf": [configs.index(cheap)]})
    assert known.noise == pytest.approx(
        5 * 10 * m.config_seconds("bpr-mf", cheap, ML1M.validation) / 2)
    # the test split: at most TEST_UNITS units of BPR-MF, one of each KNN
    assert TEST_UNITS == 3
    test_units = [m.unit_seconds("bpr-mf", [configs[c] for c in u.config_ids], ML1M.test)
                  for u in bpr.units[:15]]
    knn = sum(m.unit_seconds(t, paper.grids[t].configs(), ML1M.test) for t in ("userknn", "itemknn"))
    assert warm.test == pytest.approx((3 * sum(test_units) / 15 + knn) / 2)
    assert "noise floor" in warm.stages_text() and "compilation" in cold.stages_text()
    # what the noise floor is priced at is said, so that run's first line (before the sweep)
    # and status (after it) say why their projections differ
    assert " at likely winners, " in warm.stages_text()
    assert " at the configurations the validation chose, " in known.stages_text()


def test_a_time_budget_converts_into_rounds_with_every_stage_counted(paper, monkeypatch):
    """A budget that holds two rounds' units, test split and noise floor but not their start-up,
    compilation and analysis runs one round; on a warm cache the same budget may hold more than
    on a cold one."""
    d = experiment_design(paper)
    shape = SweepShape(ML1M.validation, ML1M.test, 10, ratings=1_000_209)
    all_kernels = ["evaluation", "knn", "bpr", "analysis"]
    two = projection(paper, d, shape, {"bpr-mf": 2}, jobs=2, cold=all_kernels)
    units_only = two.validation + two.test + two.noise
    rest = two.startup + two.compile + two.analysis
    monkeypatch.setattr("dptune.sweeper.design._budget.cold_kernels", lambda exp: all_kernels)

    def rounds(seconds: float) -> int:
        b = Budget("time", seconds, f"{seconds}s", "exp.toml", "sweep.budget")
        return budget_rounds(b, paper, d, shape, jobs=2)["bpr-mf"]

    assert rounds(units_only + rest + 0.01) == 2
    assert rounds(units_only + rest / 2) == 1
    monkeypatch.setattr("dptune.sweeper.design._budget.cold_kernels", lambda exp: [])
    assert rounds(units_only + rest - two.compile + 0.01) == 2
    assert rounds(units_only + rest - two.compile - 1) == 1


def test_a_time_budget_needs_a_cost_model(tmp_path):
    cfg = write_experiment(tmp_path, extra='''
[[algorithms]]
name = "ease"
type = "cornac:EASE"
grid = "{grid}"
'''.replace("{grid}", str(ROOT / "grids" / "cornac-ease.toml")))
    exp = load_experiment(cfg)
    d = experiment_design(exp)
    assert d.algorithms["ease"].total_units == 2  # one unit per configuration
    with pytest.raises(DptuneError, match=r"needs a cost model, and ease \(cornac:EASE\) has none"):
        budget_rounds(parse_budget("2h", cfg, "sweep.budget"), exp, d, ML1M)
    assert projection(exp, d, ML1M) is None
    # units and fractions need none
    assert budget_rounds(parse_budget("1", cfg, "sweep.budget"), exp, d, ML1M)["ease"] == 1


def test_cost_model_scales_with_the_fold_shape():
    m = CostModel()
    cfgs = [{"factors": 113, "iterations": it} for it in (1, 2, 4)]
    base = m.unit_seconds("bpr-mf", cfgs, ML1M.validation)
    # 4 epochs of 0.239 s, 3 evaluations of 0.098 s, 3/14 of a 0.27 s part, 0.2 s per unit
    assert base == pytest.approx(4 * 0.239 + 3 * 0.098 + 0.27 * 3 / 14 + 0.2)
    # twice the training interactions: 2 ** 1.3 times the epochs' cost
    twice = FoldShape(2 * 717_995, 5815, 3706)
    assert m.unit_seconds("bpr-mf", cfgs, twice) == pytest.approx(base + 4 * 0.239 * (2**1.3 - 1))
    assert m.config_seconds("bpr-mf", cfgs[2], ML1M.validation) == pytest.approx(4 * 0.239 + 0.098)
    knn = m.unit_seconds("userknn", [{"k": 10}, {"k": 1809}], ML1M.validation)
    assert knn == pytest.approx(3.18 + 0.14 + 0.87 + 0.27 * 2 / 14 + 0.2)
    assert m.unit_seconds("cornac:EASE", [{"lamb": 1.0}], ML1M.validation) is None


def test_a_grid_of_two_by_three_units_and_a_grid_of_one_hyperparameter(tmp_path):
    cfg = write_experiment(tmp_path, bpr=BPR_3x3)
    d = experiment_design(load_experiment(cfg))
    bpr = d.algorithms["bpr-mf"]
    assert bpr.sizes == (3, 3) and bpr.round_ends == (3, 6, 9)
    cfg1 = write_experiment(tmp_path / "one")  # the fixture's BPR grid: one learning rate
    bpr1 = experiment_design(load_experiment(cfg1)).algorithms["bpr-mf"]
    assert bpr1.sizes == (2, 1) and bpr1.round_ends == (2,)
    assert sorted(u.params["factors"] for u in bpr1.units) == [8, 16]


def test_the_device_cost_model_overlaps_the_writes_and_scales_its_evaluation_sublinearly():
    """Hand-computed from :data:`DEVICE_COSTS`: 113 factors lie between the measured 80
    (epoch 2.2 ms, evaluation 32 ms) and 226 (4.4 ms, 34 ms); the unit's part is written beside
    its computation, so the unit costs the larger of the two, plus the fixed 0.2 s."""
    m = CostModel.for_device("cuda")
    assert m.device == "cuda" and CostModel.for_device("cpu").device == "cpu"
    w = (113 - 80) / (226 - 80)
    epoch, ev = 0.0022 + w * 0.0022, 0.032 + w * 0.002
    cfgs = [{"factors": 113, "iterations": it} for it in (1, 2, 4)]
    compute, write = 4 * epoch + 3 * ev, 0.67 * 3 / 14
    assert write > compute
    assert m.unit_seconds("bpr-mf", cfgs, ML1M.validation) == pytest.approx(write + 0.2)
    long = [{"factors": 113, "iterations": it} for it in (1, 128)]
    assert m.unit_seconds("bpr-mf", long, ML1M.validation) == pytest.approx(
        128 * epoch + 2 * ev + 0.2)  # the computation is the longer one: the write is hidden
    # the device's evaluation grows as (U * I) ** 0.4, its epoch linearly in the interactions
    big = FoldShape(2 * 717_995, 10 * 5815, 10 * 3706)
    assert m.config_seconds("bpr-mf", long[1], big) == pytest.approx(
        128 * epoch * 2 + ev * 100 ** 0.4)
    # the CPU's model keeps its serial write (test_cost_model_scales_with_the_fold_shape) and
    # runs one unit per worker; the device runs one at a time
    assert m.workers(4) == 1 and CostModel.for_device("cpu").workers(4) == 4


def test_a_sweep_on_a_device_is_projected_and_budgeted_by_the_device_costs(paper):
    """``[sweep] device = "cuda"``: the projection prices the units by the device's costs, one
    after the other on the one device whatever the workers, and a time budget converts with
    them (two hours hold one round of the paper's grid on two cores, all fifteen on a device)."""
    from dataclasses import replace

    d = experiment_design(paper)
    dev = replace(paper, sweep=replace(paper.sweep, device="cuda"))
    on_one, on_two = (projection(dev, d, ML1M, {"bpr-mf": 1}, jobs=j) for j in (1, 2))
    assert on_one.where == on_two.where == "one cuda device"
    assert on_one.validation == pytest.approx(on_two.validation)
    cpu = projection(paper, d, ML1M, {"bpr-mf": 1}, jobs=2)
    assert cpu.where == "2 cores"
    assert projection(paper, d, ML1M, {"bpr-mf": 1}, jobs=1).where == "1 core"
    m = CostModel.for_device("cuda")
    bpr = d.algorithms["bpr-mf"]
    configs = paper.grids["bpr-mf"].configs()
    units = sum(m.unit_seconds("bpr-mf", [configs[c] for c in u.config_ids], ML1M.validation)
                for u in bpr.units[:15])
    knn = sum(m.unit_seconds(t, paper.grids[t].configs(), ML1M.validation)
              for t in ("userknn", "itemknn"))
    assert on_two.validation == pytest.approx(10 * (units + knn))
    assert on_two.seconds < cpu.seconds / 5
    two_hours = Budget("time", 2 * 3600, "2h", "exp.toml", "sweep.budget")
    assert budget_rounds(two_hours, paper, d, ML1M, jobs=2)["bpr-mf"] == 1
    assert budget_rounds(two_hours, dev, d, ML1M, jobs=2)["bpr-mf"] == 15


@pytest.mark.parametrize("results, message", [
    (None, "read_design: results: needs a results directory (a str or os.PathLike), got "
     "NoneType"),
    (3, "read_design: results: needs a results directory (a str or os.PathLike), got int"),
    ("nowhere", "read_design: results: {tmp}/nowhere does not exist; give a results directory"),
], ids=["none", "int", "missing"])
def test_read_design_refuses_no_path_and_a_path_that_does_not_exist(results, message,
                                                                     tmp_path):
    """``read_design(None)`` ended in pathlib's TypeError and ``read_design("/nonexistent")``
    returned None, as if a results directory held no design: each is one line naming
    ``read_design: results``. A folder that holds no sweep's results (or a file) still has no
    design: None, as documented (docs/api.md)."""
    from dptune.sweeper.design import read_design

    if results == "nowhere":
        results = tmp_path / "nowhere"
    with pytest.raises(DptuneError) as err:
        read_design(results)
    assert str(err.value) == message.format(tmp=tmp_path)
    (tmp_path / "notes.txt").write_text("x")
    assert read_design(tmp_path) is None and read_design(str(tmp_path / "notes.txt")) is None
