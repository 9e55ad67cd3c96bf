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
    assert projection(paper, d, ML1M, {"bpr-mf": 1}, jobs=1).hours == pytest.approx(2 * one.hours)


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
    # 4 epochs of 0.239 s, 3 evaluations of 0.098 s, 3/14 of a 0.27 s part
    assert base == pytest.approx(4 * 0.239 + 3 * 0.098 + 0.27 * 3 / 14)
    twice = FoldShape(2 * 717_995, 5815, 3706)
    assert m.unit_seconds("bpr-mf", cfgs, twice) == pytest.approx(base + 4 * 0.239)
    assert m.config_seconds("bpr-mf", cfgs[2], ML1M.validation) == pytest.approx(4 * 0.239 + 0.098)
    knn = m.unit_seconds("userknn", [{"k": 10}, {"k": 1809}], ML1M.validation)
    assert knn == pytest.approx(3.18 + 0.14 + 0.87 + 0.27 * 2 / 14)
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
