"""Tests of dptune.analysis.noise: A/A p-values, curve resampling, DP_floor, the flag, the crash-safe
parts of the noise floor, real training through run_noise_floor, and calibration.

Calibration: the t-test A/A p-values must be U(0, 1) when the null is exactly true. The fast
test uses synthetic per-user values (each seed adds independent zero-mean noise to a user's
value, clipped to [0, 1] like a metric, so every A/A pair is an exact null). Two fixed BPR
models are *not* an exact null (their seeds make them really differ a little: that is what the
noise floor measures), so the slow test on real BPR training randomises, per user, which of the
two seeds is "A" (a randomised A/A experiment) and checks >= 200 independent pairs.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import bpr_grid
from scipy import stats as sps

from dptune.analysis import noise as noise
from dptune.analysis.dp import paired_tests
from dptune.analysis.dp.curves import pvalue_curve, resample_curve
from dptune.analysis.options import AnalysisOptions
from dptune.errors import DptuneError
from dptune.store import NOISE_SCHEMA
from dptune.store import _noise_parts as parts
from dptune.store._store import ResultStore, UnitResult
from dptune.sweeper import _noise as sweep_noise

T = paired_tests.paired_test("t")


def floor_table(root, n_pairs, **options):
    """The noise floor under the options (every seed and configuration unless limited)."""
    opts = AnalysisOptions(**{"seed": 0, "noise_seeds": 99, "noise_configs": 99, **options})
    return noise.noise_floor_table(root, opts, n_pairs)

# ------------------------------------------------------------------ pure functions


def test_deterministic_algorithms():
    man = {"algorithms": [{"name": "u", "type": "userknn"}, {"name": "b", "type": "bpr-mf"}]}
    assert parts.deterministic_algorithms(man) == ["u"]


def test_aa_pvalues_are_scipy_ttest_rel_in_lexicographic_pair_order():
    rng = np.random.default_rng(1)
    v = rng.random((4, 50))
    p = noise.aa_pvalues(v, T)
    want = [sps.ttest_rel(v[s], v[t]).pvalue for s in range(4) for t in range(s + 1, 4)]
    np.testing.assert_allclose(p, want, rtol=1e-12)
    b1 = noise.aa_pvalues(v, paired_tests.paired_test("bootstrap", 200), seed=3)
    b2 = noise.aa_pvalues(v, paired_tests.paired_test("bootstrap", 200), seed=3)
    assert b1.shape == (6,) and np.array_equal(b1, b2)


def test_synthetic_aa_pvalues_are_uniform():
    """300 independent A/A pairs under an exact null (synthetic, see the module docstring)."""
    rng = np.random.default_rng(2024)
    pvals = []
    for _ in range(300):
        n = int(rng.integers(80, 400))
        quality = rng.beta(1.2, 4.0, n)  # per-user level, shared by both seeds
        seeds = np.clip(quality[None, :] + rng.normal(0.0, 0.15, (2, n)), 0.0, 1.0)
        pvals.append(noise.aa_pvalues(seeds, T)[0])
    p = np.array(pvals)
    d, ks_p = paired_tests.ks_uniform(p)
    assert ks_p > 0.01, (d, ks_p)
    assert abs(p.mean() - 0.5) < 0.05
    assert 0.02 < np.mean(p < 0.05) < 0.09


def test_compare_with_floor_flags_on_the_one_scale():
    dpt = pd.DataFrame({"algorithm": "b", "scope": ["all", "all", "all", "k=1"],
                        "metric": ["ndcg", "recall", "mrr", "ndcg"], "cutoff": 10,
                        "dp_per_25": [3.0, 9.0, 10.0, 1.0], "ci_low": np.nan,
                        "ci_high": np.nan})
    floor = pd.DataFrame({"algorithm": "b", "metric": ["ndcg", "recall", "mrr"], "cutoff": 10,
                          "n_folds": 4, "floor_per_25": [10.0, 8.0, 10.0], "floor_per_25_sd": 1.0,
                          "floor_mean_p": [0.4, 0.32, 0.4]})
    t = noise.compare_with_floor(dpt, floor)
    assert list(t.columns) == noise.VERSUS_COLUMNS
    assert t["flagged"].tolist() == [False, True, True]  # DP >= the floor is flagged
    np.testing.assert_allclose(t["ratio"], [0.3, 9 / 8, 1.0])
    assert set(t["rule"]) == {noise.RULE_PLAIN} and t["margin"].isna().all()
    # the floor's 95% interval: t(3 df, 0.975) = 3.182446 times sd / sqrt(4 folds)
    np.testing.assert_allclose(t["floor_ci_low"], [10 - 1.591223, 8 - 1.591223, 10 - 1.591223],
                               atol=1e-6)
    ci = dpt.assign(dp_per_25=[3.0, 6.5, 10.0, 1.0], ci_low=[2.0, 5.0, 6.0, 0.5],
                    ci_high=[4.0, 7.5, 10.5, 1.5])
    t = noise.compare_with_floor(ci, floor)
    # margin = sqrt(h_dp^2 + h_floor^2) = sqrt(1 + 1.591223^2) = 1.879359 for ndcg and recall:
    # ndcg 10 - 3 = 7 is above it; recall's interval ends below the floor (7.5 < 8), but
    # 8 - 6.5 = 1.5 is within the two estimates' error: flagged
    np.testing.assert_allclose(t["margin"][:2], [1.879359, 1.879359], atol=1e-6)
    assert t["flagged"].tolist() == [False, True, True]
    assert set(t["rule"]) == {noise.RULE_MARGIN}
    one = noise.compare_with_floor(ci, floor.assign(n_folds=1, floor_per_25_sd=np.nan))
    assert one["flagged"].all() and one["floor_ci_low"].isna().all()  # one fold: no spread
    # an interval that ends below its estimate (recall: 8.0 to 8.2 around 8.4): its upper
    # half-width is 0, not the -0.2 that squared would widen the margin; so the margin is the
    # floor's own half-width, 1.591223, and 10 - 8.4 = 1.6 just clears it
    below = ci.assign(dp_per_25=[3.0, 8.4, 10.0, 1.0], ci_low=[2.0, 8.0, 6.0, 0.5],
                      ci_high=[4.0, 8.2, 10.5, 1.5])
    t = noise.compare_with_floor(below, floor.assign(floor_per_25=[10.0, 10.0, 10.0]))
    np.testing.assert_allclose(t["margin"][1], 1.591223, atol=1e-6)
    assert t["flagged"].tolist() == [False, False, True]


# ------------------------------------------------------------------ parts and the floor table


def _fake_results(root: Path) -> ResultStore:
    """A results directory with two algorithms; bpr config 1 beats config 0 on ndcg@10."""
    store = ResultStore(root).create()
    store.write_manifest({
        "experiment": "fake", "fingerprint": "x",
        "algorithms": [{"name": "knn", "type": "userknn", "free": ["k"]},
                       {"name": "bpr", "type": "bpr-mf", "free": ["factors"]}],
        "analysis": {"primary_metric": "ndcg", "primary_cutoff": 10},
        "evaluation": {"metrics": ["ndcg"], "cutoffs": [10]},
    })
    store.write_configs([pd.DataFrame({"algorithm": "bpr", "config_id": [0, 1],
                                       "factors": [4, 8]})])
    users = np.arange(30, dtype=np.int32)
    for fold in ("0", "1"):
        store.write_unit(UnitResult(
            algorithm="bpr", fold=fold, unit="u0", seed=1, metrics=("ndcg",), cutoffs=(10,),
            users=users, config_ids=(0, 1),
            values=(np.full((1, 1, 30), 0.1), np.full((1, 1, 30), 0.3)),
            fit_seconds=(0.0, 0.0), eval_seconds=(0.0, 0.0)))
    return store


def _write_synthetic_parts(root: Path, seeds: int = 4) -> dict[tuple[int, str], np.ndarray]:
    rng = np.random.default_rng(5)
    users = np.arange(30, dtype=np.int32)
    out = {}
    for cid in (0, 1):
        for fold in ("0", "1"):
            v = rng.random((seeds, 30)).astype(np.float32).astype(np.float64)  # as stored
            out[(cid, fold)] = v
            parts.write_noise_part(root, "bpr", cid, fold, {"factors": 4 * (cid + 1)}, users,
                                   ("ndcg",), (10,), {s: v[s][None, None, :] for s in range(seeds)},
                                   {s: 100 + s for s in range(seeds)})
    return out


def test_write_noise_part_schema_metadata_atomic(tmp_path):
    _fake_results(tmp_path)
    _write_synthetic_parts(tmp_path)
    paths = parts.noise_part_paths(tmp_path)
    assert [p.name for p in paths][:2] == ["bpr__0__c000000.parquet", "bpr__0__c000001.parquet"]
    assert not [p for p in os.listdir(tmp_path / parts.NOISE_DIR) if p.startswith(".")]
    df = pd.read_parquet(tmp_path / parts.NOISE_DIR)
    assert list(df.columns) == NOISE_SCHEMA.names
    assert str(df["seed_index"].dtype) == "int16" and str(df["value"].dtype) == "float32"
    trials = parts.noise_trials(tmp_path)
    assert len(trials) == 2 * 2 * 4 and trials["seed"].tolist()[:4] == [100, 101, 102, 103]
    with pytest.raises(DptuneError):
        parts.write_noise_part(tmp_path, "bpr", 0, "0", {}, np.arange(3), ("ndcg",), (10,),
                               {0: np.zeros((1, 1, 4))}, {0: 1})


def test_noise_floor_table_formulas(tmp_path):
    _fake_results(tmp_path)
    vals = _write_synthetic_parts(tmp_path)
    nf = floor_table(tmp_path, 5)
    assert nf.configs == {"bpr": [0, 1]} and nf.seeds == {"bpr": 4}
    assert len(nf.pvalues) == 2 * 2 * 6
    pooled = {f: np.concatenate([noise.aa_pvalues(vals[(c, f)], T) for c in (0, 1)])
              for f in ("0", "1")}
    row = nf.floor.iloc[0]
    fold_means = np.array([pooled[f].mean() for f in ("0", "1")])
    assert (row["n_aa_pairs"], row["n_positions"], row["n_folds"]) == (24, 5, 2)
    np.testing.assert_allclose(row["floor_per_25"], 25 * fold_means.mean())
    np.testing.assert_allclose(row["floor_per_25_sd"], 25 * fold_means.std(ddof=1))
    curves = np.stack([resample_curve(pvalue_curve(pooled[f]), 5) for f in ("0", "1")])
    np.testing.assert_allclose(nf.curves["mean"], curves.mean(axis=0))
    np.testing.assert_allclose(nf.curves["sd"], curves.std(axis=0, ddof=1))
    assert nf.curves["position"].tolist() == [0, 1, 2, 3, 4]
    # the best configuration only, and two seeds: one A/A pair per fold
    best = floor_table(tmp_path, 5, noise_configs=1, noise_seeds=2)
    assert best.configs == {"bpr": [1]} and len(best.pvalues) == 2
    np.testing.assert_allclose(best.pvalues["p"], [noise.aa_pvalues(vals[(1, f)][:2], T)[0]
                                                   for f in ("0", "1")])
    # P per (algorithm, metric, cutoff): keys absent from the mapping are left out
    assert floor_table(tmp_path, {("bpr", "ndcg", 10): 3}).curves.shape[0] == 3
    assert floor_table(tmp_path, {}).empty
    assert floor_table(tmp_path / "nowhere", 5).empty


def test_rank_configs(tmp_path):
    store = _fake_results(tmp_path)
    assert parts.rank_configs(store, "bpr", "ndcg", 10) == [1, 0]
    assert parts.rank_configs(store, "knn", "ndcg", 10) == []


# ------------------------------------------------------------------ real training

@pytest.fixture(scope="module")
def noise_swept(subset_swept, tmp_path_factory):
    """conftest's :func:`subset_swept` copied for this module, whose tests add its noise floor:
    (experiment, results directory)."""
    import shutil

    from dptune.config import load_experiment

    root = tmp_path_factory.mktemp("noise_run") / "results"
    shutil.copytree(subset_swept / "results", root)
    return load_experiment(subset_swept / "tiny.toml"), root


def test_run_noise_floor_trains_seeds_resumes_and_records(noise_swept):
    from dptune.metrics import METRICS, evaluate
    from dptune.models import get_family
    from dptune.sweeper._plan import derive_seed
    from dptune.sweeper._prepare import prepare

    exp, root = noise_swept
    run = sweep_noise.run_noise_floor(exp, root, seeds=2, n_configs=2)
    assert run.computed == 4 and len(run.parts) == 4 and "itemknn" in run.skipped
    mtimes = {p: p.stat().st_mtime_ns for p in run.parts}
    again = sweep_noise.run_noise_floor(exp, root, seeds=2, n_configs=2)
    assert again.computed == 0 and {p: p.stat().st_mtime_ns for p in again.parts} == mtimes
    trials = pd.read_csv(root / "noise_trials.csv")
    for r in trials.itertuples(index=False):
        cfg = exp.grids["bpr-mf"].configs()[r.config_id]
        params = {h: cfg[h] for h in exp.grids["bpr-mf"].free}
        assert r.seed == derive_seed(exp.seed, "bpr-mf", str(r.fold), params, "noise", r.seed_index)
    # the stored values are what training with the recorded seed gives
    r = trials.iloc[0]
    cfg = exp.grids["bpr-mf"].configs()[int(r.config_id)]
    fd = prepare(exp).fold(str(r.fold))
    _, model = next(iter(get_family("bpr-mf").fit_unit(fd.train, [cfg], int(r.seed))))
    want = evaluate(model, fd.users, fd.train, fd.relevant, (5, 10), fd.efd, fd.epc)
    df = pd.read_parquet(root / parts.NOISE_DIR)
    got = df[(df["config_id"] == r.config_id) & (df["fold"] == str(r.fold))
             & (df["seed_index"] == r.seed_index) & (df["metric"] == "ndcg") & (df["cutoff"] == 10)]
    np.testing.assert_allclose(got.sort_values("user")["value"],
                               want[METRICS.index("ndcg"), 1].astype(np.float32))
    # asking for more seeds completes the parts and keeps the stored seeds unchanged
    before = df.sort_values(["config_id", "fold", "seed_index", "metric", "cutoff", "user"])
    more = sweep_noise.run_noise_floor(exp, root, seeds=3, n_configs=2)
    assert more.computed == 4
    after = pd.read_parquet(root / parts.NOISE_DIR)
    assert set(after["seed_index"]) == {0, 1, 2}
    kept = after[after["seed_index"] < 2].sort_values(
        ["config_id", "fold", "seed_index", "metric", "cutoff", "user"])
    np.testing.assert_array_equal(kept["value"].to_numpy(), before["value"].to_numpy())
    nf = floor_table(root, 3)
    assert set(nf.floor["n_seeds"]) == {3} and set(nf.floor["n_configs"]) == {2}


def test_run_noise_floor_errors(noise_swept, tmp_path):
    import dataclasses

    exp, root = noise_swept
    assert sweep_noise.run_noise_floor(exp, root, seeds=0).parts == []
    with pytest.raises(DptuneError, match="noise_seeds"):
        sweep_noise.run_noise_floor(exp, root, seeds=1)
    other = dataclasses.replace(exp, seed=exp.seed + 1)
    with pytest.raises(DptuneError, match="fingerprint"):
        sweep_noise.run_noise_floor(other, root, seeds=2)


@pytest.mark.slow
def test_real_bpr_randomised_aa_pvalues_are_uniform(tmp_path):
    """>= 200 independent A/A t-tests on real BPR-MF training of the embedded data.

    20 seeds of one small configuration on each of 2 folds; disjoint seed pairs (0,1), (2,3), ...
    and 10 disjoint random user subsets per fold give 10 x 10 x 2 = 200 pairs that share neither
    models nor users. Per user a fair coin decides which seed is "A", so the per-user difference
    is symmetric around 0 and the null of the t-test holds exactly (see the module docstring).
    """
    from dptune.config import parse_experiment

    grid = tmp_path / "bpr.toml"
    grid.write_text(bpr_grid([4], [5], [0.05]))
    exp = parse_experiment({"name": "calib", "seed": 9, "split": {"folds": 2},
                            "evaluation": {"cutoffs": [10]},
                            "algorithms": [{"name": "bpr-mf", "type": "bpr-mf",
                                            "grid": str(grid)}]}, "calib.toml")
    cfg = exp.grids["bpr-mf"].configs()[0]
    rng = np.random.default_rng(77)
    pvals = []
    for fold in ("0", "1"):
        task = sweep_noise.NoiseTask("bpr-mf", "bpr-mf", 0, fold, {"factors": 4}, cfg)
        sweep_noise.run_noise_task(exp, task, tmp_path, seeds=20)
        part = pd.read_parquet(tmp_path / parts.NOISE_DIR / parts.noise_part_name("bpr-mf", 0, fold))
        part = part[(part["metric"] == "ndcg") & (part["cutoff"] == 10)]
        v = part.pivot(index="seed_index", columns="user", values="value").to_numpy(np.float64)
        groups = np.array_split(rng.permutation(v.shape[1]), 10)
        for s in range(0, 20, 2):
            for g in groups:
                a, b = v[s, g], v[s + 1, g]
                swap = rng.random(len(g)) < 0.5
                aa = np.stack([np.where(swap, b, a), np.where(swap, a, b)])
                pvals.append(noise.aa_pvalues(aa, T)[0])
    p = np.array(pvals)
    assert p.size >= 200
    d, ks_p = paired_tests.ks_uniform(p)
    assert ks_p > 0.01, (d, ks_p)
    assert abs(p.mean() - 0.5) < 0.06
