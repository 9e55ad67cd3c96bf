"""Tests of dptune.analysis.importance: distributions from grids, the optuna study, fANOVA / PED-ANOVA
importances, and how the report shows them beside the one dominance answer."""

from __future__ import annotations

import dataclasses
import itertools
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from dptune.analysis.importance import fanova as fanova
from dptune.analysis.importance import study as imp
from dptune.analysis.options import AnalysisOptions
from dptune.analysis.result import AnalysisResult
from dptune.errors import DptuneError
from dptune.report import _importance as rep_imp
from dptune.store._index import validation_means


def test_distribution_for_grid_values():
    d = imp.distribution_for([10, 40, 160])
    assert isinstance(d, IntDistribution) and (d.low, d.high, d.log) == (10, 160, True)
    d = imp.distribution_for([10.0, 20.0, 30.0, 40.0])  # integral floats from configs.csv
    assert isinstance(d, IntDistribution) and not d.log
    d = imp.distribution_for([0.1000019, 0.05000097, 0.02500049])
    assert isinstance(d, FloatDistribution) and d.log and d.low == 0.02500049
    d = imp.distribution_for([0.1, 0.2, 0.3])
    assert isinstance(d, FloatDistribution) and not d.log
    d = imp.distribution_for(np.array([4, 16], dtype=np.int64))  # two values: ratio >= 4 -> log
    assert isinstance(d, IntDistribution) and d.log
    assert not imp.distribution_for([4, 8]).log
    d = imp.distribution_for(["cosine", "pearson"])
    assert isinstance(d, CategoricalDistribution) and d.choices == ("cosine", "pearson")
    assert isinstance(imp.distribution_for([True, False]), CategoricalDistribution)
    assert isinstance(imp.distribution_for([0, 5, 10]), IntDistribution)  # 0: never log
    with pytest.raises(DptuneError):
        imp.distribution_for([])


def _grid(n_noise: float = 0.0, seed: int = 0) -> tuple[pd.DataFrame, dict[int, float]]:
    """3 x 4 x 3 BPR-like grid; the objective depends mostly on iterations, a little on factors."""
    rng = np.random.default_rng(seed)
    rows = list(itertools.product([10, 40, 160], [4, 8, 16, 32], [0.1, 0.05, 0.025]))
    cfg = pd.DataFrame(rows, columns=["factors", "iterations", "learning_rate"])
    cfg.insert(0, "config_id", range(len(cfg)))
    cfg = cfg.astype({"factors": float, "iterations": float})  # as read from configs.csv
    y = np.log(cfg["iterations"]) + 0.1 * np.log(cfg["factors"]) + rng.normal(0, n_noise, len(cfg))
    return cfg, dict(zip(cfg["config_id"], y, strict=True))


def test_build_study_one_trial_per_configuration():
    cfg, y = _grid()
    y[5] = float("nan")  # no value: left out
    study = imp.build_study(cfg, ["factors", "iterations", "learning_rate"], y)
    assert len(study.trials) == len(cfg) - 1
    t = study.trials[0]
    assert t.params == {"factors": 10, "iterations": 4, "learning_rate": 0.1}
    assert isinstance(t.params["factors"], int) and t.user_attrs["config_id"] == 0
    assert t.value == pytest.approx(y[0])
    assert study.direction.name == "MAXIMIZE"


def test_build_study_takes_hyperparameter_names_that_are_no_identifiers():
    """A per-user table's hyperparameters may be named anything (``k&n``, ``1st``, ``class``):
    the rows were read with itertuples, which renames such columns, so the study failed with
    an AttributeError. Same trials as under plain names."""
    cfg, y = _grid()
    odd = {"factors": "k&n", "iterations": "1st", "learning_rate": "class"}
    plain = imp.build_study(cfg, list(odd), y)
    renamed = imp.build_study(cfg.rename(columns=odd), list(odd.values()), y)
    assert [{odd[h]: v for h, v in t.params.items()} for t in plain.trials] == \
        [t.params for t in renamed.trials]
    assert [t.value for t in plain.trials] == [t.value for t in renamed.trials]


def test_importances_find_the_dominant_hyperparameter_and_are_seeded():
    cfg, y = _grid(0.02)
    t = imp.importance_table(cfg, ["factors", "iterations", "learning_rate"], y, seed=3)
    assert list(t.columns) == ["evaluator", "hyperparameter", "importance"]
    assert t["hyperparameter"].tolist()[:3] == ["factors", "iterations", "learning_rate"]
    for ev in imp.EVALUATORS:
        e = t[t["evaluator"] == ev].set_index("hyperparameter")["importance"]
        assert e.sum() == pytest.approx(1.0)
        assert e.idxmax() == "iterations"
    again = imp.importance_table(cfg, ["factors", "iterations", "learning_rate"], y, seed=3)
    pd.testing.assert_frame_equal(t, again)


def test_constant_objective_has_no_importance_and_single_values_are_dropped():
    cfg, y = _grid()
    const = dict.fromkeys(y, 0.5)
    t = imp.importance_table(cfg, ["factors", "iterations", "learning_rate"], const)
    assert t["importance"].isna().all()
    one = cfg[cfg["factors"] == 10]
    t = imp.importance_table(one, ["factors", "iterations", "learning_rate"], y)
    assert set(t["hyperparameter"]) == {"iterations", "learning_rate"}
    assert imp.importance_table(one[one["iterations"] == 4], ["factors", "iterations",
                                                              "learning_rate"], y).empty


@pytest.mark.parametrize("noise", [0.0, 0.02])
def test_one_study_for_every_metric_gives_the_numbers_of_a_study_per_metric(noise):
    """The shared study (objective as a target, some configurations without a value) gives
    exactly the importances of a study built from the values, for every evaluator, the optuna
    oracle included."""
    cfg, y = _grid(noise, seed=1)
    hps = ["factors", "iterations", "learning_rate"]
    y[5] = float("nan")
    del y[7]
    shared = imp.build_study(cfg, hps)
    assert len(shared.get_trials(deepcopy=False)) == len(cfg)
    own = imp.build_study(cfg, hps, y)  # the oracle: a study of this metric's values alone
    assert len(own.get_trials(deepcopy=False)) == len(cfg) - 2
    via_target = imp.importance_table(cfg, hps, y, seed=3, study=shared)
    assert via_target.equals(imp.importance_table(cfg, hps, y, seed=3))  # built when not given
    for ev in (*imp.EVALUATORS, "fanova-optuna"):
        expect = imp.param_importances(own, ev, seed=3)
        got = imp.param_importances(shared, ev, seed=3, target=imp.config_target(y))
        assert got == expect, ev
        if ev in imp.EVALUATORS:
            rows = via_target[via_target["evaluator"] == ev]
            assert dict(zip(rows["hyperparameter"], rows["importance"], strict=True)) == expect
    minus = {c: -v for c, v in y.items()}  # the direction matters to PED-ANOVA
    assert not imp.importance_table(cfg, hps, minus, seed=3, study=shared).equals(via_target)


def _three_leaf_tree() -> tuple[np.ndarray, ...]:
    """Root: x0 <= 0.5 -> leaf (1); else x1 <= 0.5 -> leaf (2) | leaf (4); box [0, 1]^2."""
    return (np.array([1, -1, 3, -1, -1]), np.array([2, -1, 4, -1, -1]),
            np.array([0, -2, 1, -2, -2]), np.array([0.5, -2, 0.5, -2, -2]),
            np.array([0.0, 1.0, 0.0, 2.0, 4.0]))


def test_tree_marginal_variances_by_hand():
    # leaves: volumes 1/2, 1/4, 1/4, values 1, 2, 4 -> mean 2, V = (1/2)1 + (1/4)0 + (1/4)4 = 1.5.
    # along x0: cells [0, .5] -> 1 and [.5, 1] -> (2 + 4)/2 = 3, equal weights -> V(x0) = 1.
    # along x1: [0, .5] -> leaves 1 (w = .5/1) and 2 (w = .25/.5) -> 1.5; [.5, 1] -> 1 and 4
    # -> 2.5; V(x1) = 0.25. The pair (x0, x1) is the whole tree: V = 1.5.
    bounds = np.array([[0.0, 1.0], [0.0, 1.0]])
    total, marginal = imp.tree_marginal_variances(*_three_leaf_tree(), bounds,
                                                  [np.array([0]), np.array([1]), np.array([0, 1])])
    assert total == pytest.approx(1.5)
    np.testing.assert_allclose(marginal, [1.0, 0.25, 1.5])
    # a wider box along x1: the right leaf (4) covers [.5, 3] of [0, 3] -> x1's cells weigh 1:5
    total, marginal = imp.tree_marginal_variances(*_three_leaf_tree(),
                                                  np.array([[0.0, 1.0], [0.0, 3.0]]),
                                                  [np.array([0]), np.array([1])])
    # leaves: vol 1.5 (1), 0.25 (2), 1.25 (4); mean (1.5 + 0.5 + 5)/3 = 7/3
    v, w = np.array([1.0, 2.0, 4.0]), np.array([1.5, 0.25, 1.25])
    assert total == pytest.approx(np.average((v - 7 / 3) ** 2, weights=w))
    a0 = np.array([1.0, (0.25 * 2 + 1.25 * 4) / 1.5])  # x0 cells, each of weight 1.5
    a1, w1 = np.array([1.5, 2.5]), np.array([0.5, 2.5])  # x1 cells: sizes .5 and 2.5, mass 1 each
    np.testing.assert_allclose(marginal, [np.var(a0),
                                          np.average((a1 - np.average(a1, weights=w1)) ** 2,
                                                     weights=w1)])


def _optuna_study(kind: str, seed: int) -> tuple[pd.DataFrame, dict[int, float], list[str]]:
    rng = np.random.default_rng(seed)
    if kind == "categorical":  # a categorical of 3 choices, an arithmetic integer, a log float
        rows = list(itertools.product(["cosine", "pearson", "jaccard"], [0, 5, 10, 15],
                                      [0.001, 0.01, 0.1]))
        cols = ["similarity", "shrink", "alpha"]
        cfg = pd.DataFrame(rows, columns=cols)
        y = (cfg["similarity"].map({"cosine": 0.3, "pearson": 0.1, "jaccard": 0.2})
             + 0.01 * cfg["shrink"] + rng.normal(0, 0.05, len(cfg)))
    else:
        cfg, yd = _grid(0.05, seed)
        cols = ["factors", "iterations", "learning_rate"]
        y = pd.Series([yd[c] for c in cfg["config_id"]])
        if kind == "ties":
            y = y.round(1)
    if "config_id" not in cfg.columns:
        cfg.insert(0, "config_id", range(len(cfg)))
    return cfg, dict(zip(cfg["config_id"], y, strict=True)), cols


@pytest.mark.parametrize("kind", ["numeric", "ties", "categorical"])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_vectorised_fanova_equals_optuna(kind, seed):
    from optuna._transform import _SearchSpaceTransform  # optuna's own encoding, as its evaluator

    cfg, y, cols = _optuna_study(kind, seed)
    study = imp.build_study(cfg, cols, y)
    params = sorted(study.trials[0].distributions)
    X, yy, bounds, groups = imp.fanova_inputs(study, params)
    trans = _SearchSpaceTransform({h: study.trials[0].distributions[h] for h in params},
                                  transform_log=False, transform_step=False)
    np.testing.assert_array_equal(X, np.array([trans.transform(t.params) for t in study.trials]))
    np.testing.assert_array_equal(bounds, trans.bounds)
    assert [g.tolist() for g in groups] == [g.tolist() for g in trans.column_to_encoded_columns]
    fast = imp.param_importances(study, "fanova", seed=seed)
    oracle = imp.param_importances(study, "fanova-optuna", seed=seed)
    assert list(fast) == list(oracle)
    np.testing.assert_allclose(list(fast.values()), list(oracle.values()), rtol=0, atol=1e-9)


def test_vectorised_fanova_cell_blocks_do_not_change_the_result(monkeypatch):
    cfg, y, cols = _optuna_study("categorical", 3)
    study = imp.build_study(cfg, cols, y)
    whole = imp.param_importances(study, "fanova", seed=3)
    monkeypatch.setattr(fanova, "_CELL_BLOCK", 1)  # one cell per block
    np.testing.assert_allclose(list(imp.param_importances(study, "fanova", seed=3).values()),
                               list(whole.values()), rtol=0, atol=1e-12)


def test_vectorised_fanova_edge_cases():
    cfg, y = _grid()
    study = imp.build_study(cfg, ["factors", "iterations", "learning_rate"], dict.fromkeys(y, 0.5))
    assert np.isnan(imp.fanova_study(study, ["factors", "iterations"])).all()  # no variance
    one = imp.build_study(cfg.iloc[:1], ["factors", "iterations"], y)
    assert imp.fanova_study(one, []).size == 0
    # a parameter whose distribution has a single value gets 0, as from optuna's evaluator
    import optuna
    from optuna.importance import FanovaImportanceEvaluator

    dists = {"a": FloatDistribution(0.0, 1.0), "b": IntDistribution(3, 3)}
    s = optuna.create_study()
    s.add_trials([optuna.trial.create_trial(params={"a": a, "b": 3}, distributions=dists,
                                            value=a * a) for a in np.linspace(0, 1, 9)])
    oracle = FanovaImportanceEvaluator(seed=0).evaluate(s, params=["a", "b"])
    np.testing.assert_allclose(imp.fanova_study(s, ["a", "b"]), [oracle["a"], oracle["b"]])
    assert imp.fanova_study(s, ["b"]).tolist() == [0.0]
    with pytest.raises(DptuneError, match="evaluator"):
        imp.param_importances(study, "fanova-typo")


def test_ped_target_quantile():
    assert imp.ped_target_quantile(100) == 0.1
    assert imp.ped_target_quantile(36) == pytest.approx(5 / 36)
    assert imp.ped_target_quantile(4) == 0.5


class FakeStore:
    """The few ResultStore methods hyperparameter_importance reads."""

    def __init__(self) -> None:
        self.cfg, y = _grid(0.02)
        rows = []
        for cid, v in y.items():
            for fold, shift in (("0", 0.01), ("1", -0.01), ("test", 5.0)):
                rows.append(("bpr", cid, fold, "ndcg", 10, v + shift))
                rows.append(("bpr", cid, fold, "recall", 10, -v + shift))
                rows.append(("bpr", cid, fold, "ndcg", 5, v))
        for cid in range(3):
            rows.append(("knn", cid, "0", "ndcg", 10, float(cid)))
        self._summary = pd.DataFrame(rows, columns=["algorithm", "config_id", "fold", "metric",
                                                    "cutoff", "mean"])

    def algorithms(self) -> list[str]:
        return ["knn", "bpr"]

    def hyperparameters(self, algorithm: str) -> list[str]:
        return ["k"] if algorithm == "knn" else ["factors", "iterations", "learning_rate"]

    def configs(self, algorithm: str) -> pd.DataFrame:
        if algorithm == "knn":
            return pd.DataFrame({"config_id": [0, 1, 2], "k": [5, 10, 20]})
        return self.cfg

    def metric_cutoffs(self, algorithm: str) -> list[tuple[str, int]]:
        return [("ndcg", 5), ("ndcg", 10), ("recall", 10)]

    def summary(self) -> pd.DataFrame:
        return self._summary


def test_hyperparameter_importance_over_a_store():
    t = imp.hyperparameter_importance(FakeStore(), cutoff=10, seed=1)
    assert list(t.columns) == imp.IMPORTANCE_COLUMNS
    assert set(t["algorithm"]) == {"bpr"}  # one hyperparameter: nothing to attribute
    assert t[["metric", "cutoff"]].drop_duplicates().values.tolist() == [["ndcg", 10],
                                                                        ["recall", 10]]
    assert len(t) == 2 * 2 * 3
    # the objective is the mean over validation folds (the test fold's +5 is ignored)
    vm = validation_means(FakeStore().summary(), "bpr", "ndcg", 10)
    _, y = _grid(0.02)
    np.testing.assert_allclose(vm["validation_mean"], [y[c] for c in vm["config_id"]])


def _dp(rows: list[tuple[str, float]], n_pairs: int = 25) -> pd.DataFrame:
    return pd.DataFrame([{"algorithm": "bpr", "scope": s, "metric": "ndcg", "cutoff": 10,
                          "mean_p": d / 25, "dp_per_25": d, "ci_low": d - 1, "ci_high": d + 1,
                          "n_pairs": n_pairs, "n_possible_pairs": 99, "n_folds": 3,
                          "no_evidence": False} for s, d in rows])


def test_the_importance_section_shows_every_scale_and_one_answer():
    """The report's importance section renders the analysis' numbers: fANOVA and PED-ANOVA as
    shares of variance, the one-at-a-time DP per 25 pairs with P, and the dominance answer of
    the analysis -- no vote between them."""
    from dptune.analysis.dp.tables import DPEstimate
    from dptune.analysis.verdict.dominance import DOMINANCE_COLUMNS

    dpt = _dp([("all", 5.0), ("factors=10", 7.0), ("factors=160", 4.0), ("iterations=4", 9.0),
               ("iterations=32", 4.5), ("only:factors", 6.0), ("only:iterations", 3.0)])
    importance = pd.DataFrame({"algorithm": "bpr", "metric": "ndcg", "cutoff": 10,
                               "evaluator": ["fanova"] * 2 + ["ped-anova"] * 2,
                               "hyperparameter": ["factors", "iterations"] * 2,
                               "importance": [0.2, 0.8, 0.3, 0.7]})
    dominance = pd.DataFrame([{
        "algorithm": "bpr", "metric": "ndcg", "cutoff": 10, "answer": "dominant",
        "hyperparameter": "iterations", "dp_per_25": 3.0, "ci_low": 2.0, "ci_high": 4.0,
        "n_pairs": 25, "over": ["factors"], "tied": [], "too_few_pairs": [],
        "p_adjusted": 0.004, "repeats": 1, "compared": 2}], columns=DOMINANCE_COLUMNS)
    store = SimpleNamespace(algorithms=lambda: ["bpr"], configs=lambda a: pd.DataFrame(range(4)))
    empty = pd.DataFrame()
    result = AnalysisResult(dp=DPEstimate(pairs=empty, pvalues=empty, table=dpt, curves=empty),
                            importance=importance, dominance=dominance,
                            options=AnalysisOptions(seed=1))
    (s,) = rep_imp.comparison_sentences(importance, result, {"bpr": "BPR-MF"})
    assert s.startswith("BPR-MF, nDCG@10: Dominant hyperparameter for nDCG@10: Iterations "
                        "(DP per 25 pairs 3.000 [2.000, 4.000], P = 25 of 99 pairs differing in it alone)")
    assert "significantly lower than Latent factors" in s
    assert "Supporting evidence, not a vote: fANOVA (share of the variance of the mean metric) "\
        "ranks Iterations (0.800) > Latent factors (0.200)" in s
    assert "Table 5" not in s and "analyses agree" not in s
    body = rep_imp.importance_section(store, result)
    assert "| Metric | Evaluator | Latent factors | Iterations |" in body  # as every table
    assert "DP per 25 pairs, only h varies" in body and "6.000 [5.000, 7.000] (P = 25)" in body
    result = dataclasses.replace(result, importance=importance.iloc[0:0])
    assert "nothing to attribute" in rep_imp.importance_section(store, result)
    assert not math.isnan(importance["importance"].sum())
    # without an answer of the analysis, the sentence says so instead of voting
    result = dataclasses.replace(result, importance=importance, dominance=dominance.iloc[0:0])
    (s,) = rep_imp.comparison_sentences(importance, result)
    assert "no one-at-a-time DP to compare" in s


def test_ped_top_set_is_optunas_top_quantile():
    """PED-ANOVA's top quantile: the ceil(q n) best configurations, ties at the edge included,
    non-finite values left out."""
    values = {c: float(c) for c in range(40)}  # q = 5/40 = 0.125: the best 5
    assert imp.ped_top_set(values) == frozenset(range(35, 40))
    values[34] = 35.0  # a tie with the fifth best joins it
    assert imp.ped_top_set(values) == frozenset({34, *range(35, 40)})
    values[39] = float("nan")
    assert 39 not in imp.ped_top_set(values)
    assert imp.ped_top_set({}) == frozenset()


class _SameTopStore(FakeStore):
    """FakeStore plus Precision@10, a monotone transform of nDCG@10 (same order of the
    configurations, other values): the same top quantile."""

    def __init__(self) -> None:
        super().__init__()
        s = self._summary
        prec = s[(s["metric"] == "ndcg") & (s["cutoff"] == 10)].assign(
            metric="precision", mean=lambda d: np.exp(3 * d["mean"]))
        self._summary = pd.concat([s, prec], ignore_index=True)

    def metric_cutoffs(self, algorithm: str) -> list[tuple[str, int]]:
        return [*super().metric_cutoffs(algorithm), ("precision", 10)]


def test_identical_ped_anova_rows_are_explained_by_the_same_top_quantile():
    """Two metrics that order the configurations alike have identical PED-ANOVA importances
    (PED-ANOVA sees a metric only through its top quantile), and importance.csv says which
    metric's top quantile a row repeats; fANOVA, which uses the values, tells them apart."""
    t = imp.hyperparameter_importance(_SameTopStore(), cutoff=10, seed=1)
    ped = t[t["evaluator"] == "ped-anova"].set_index(["metric", "hyperparameter"])
    for h in ("factors", "iterations", "learning_rate"):
        assert ped.at[("precision", h), "importance"] == ped.at[("ndcg", h), "importance"]
    assert set(ped.loc["precision", "same_top_as"]) == {"ndcg"}
    assert set(ped.loc["ndcg", "same_top_as"]) == {""}
    assert set(ped.loc["recall", "same_top_as"]) == {""}  # the opposite order: its own set
    assert set(t.loc[t["evaluator"] == "fanova", "same_top_as"]) == {""}
    assert t.loc[t["evaluator"] == "fanova", "top_configs"].isna().all()
    assert set(ped["top_configs"]) == {5.0}  # ceil(5/36 x 36): the best 5 of 36
    fan = t[t["evaluator"] == "fanova"].set_index(["metric", "hyperparameter"])
    assert any(fan.at[("precision", h), "importance"] != fan.at[("ndcg", h), "importance"]
               for h in ("factors", "iterations", "learning_rate"))
    # the report says why the rows are identical, where the table shows them
    note = rep_imp._same_top_note(t[t["algorithm"] == "bpr"], 10)
    assert note is not None and "Identical PED-ANOVA rows are not an error" in note
    assert "Precision@10 put the same configurations there as nDCG@10" in note
    assert "its best 5 configurations" in note
    assert rep_imp._same_top_note(t[t["metric"] != "precision"], 10) is None
    # ... and the section prints that note under the algorithm's table
    from dptune.analysis.dp.tables import DPEstimate

    empty = pd.DataFrame()
    result = AnalysisResult(dp=DPEstimate(pairs=empty, pvalues=empty, curves=empty,
                                          table=_dp([("all", 5.0), ("only:factors", 6.0)])),
                            importance=t, options=AnalysisOptions(seed=1))
    store = SimpleNamespace(algorithms=lambda: ["bpr"], configs=lambda a: pd.DataFrame(range(36)))
    body = rep_imp.importance_section(store, result)
    assert body.index(note) > body.index("| Precision@10 | PED-ANOVA |")
