"""The public API: ``import dptune`` names, discriminative_power over any per-user table (checked
against scipy and against the Parquet store), FrameStore's bad input, the docstring examples."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

import dptune
from dptune.analysis._dp import analyze as analyze_dp
from dptune.cli import main
from dptune.errors import DptuneError
from dptune.store._frame import FrameStore


def _table(seed: int = 0, n_sys: int = 5, n_users: int = 40, folds=("0", "1", "2")) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for f in folds:
        base = rng.random(n_users)
        for s in range(n_sys):
            v = base + 0.03 * s + rng.normal(0, 0.1, n_users)
            for u in range(n_users):
                rows.append({"system": f"sys{s}", "fold": f, "user": f"u{u}", "metric": "ndcg",
                             "cutoff": 10, "value": v[u]})
                rows.append({"system": f"sys{s}", "fold": f, "user": f"u{u}", "metric": "mrr",
                             "cutoff": 10, "value": v[u] ** 2})
    return pd.DataFrame(rows)


def test_public_names():
    assert set(dptune.__all__) >= {"load_experiment", "Experiment", "sweep", "ResultStore",
                                   "AnalysisOptions", "analyze", "AnalysisResult",
                                   "discriminative_power", "__version__"}
    for name in dptune.__all__:
        assert getattr(dptune, name) is not None
    with pytest.raises(AttributeError):
        dptune.no_such_name  # noqa: B018


@pytest.mark.parametrize("module", ["dptune._api", "dptune.analysis._options",
                                    "dptune.analysis._analyze", "dptune.config"])
def test_docstring_examples_run(module, monkeypatch):
    monkeypatch.chdir(DOCS.parents[1])  # examples name files of the repository
    res = doctest.testmod(importlib.import_module(module))
    assert res.failed == 0


def test_discriminative_power_equals_scipy_by_hand():
    df = _table()
    dp = dptune.discriminative_power(df, pairs=6, seed=3)
    assert list(dp["metric"]) == ["ndcg", "mrr"] and set(dp["scope"]) == {"all"}
    pairs = analyze_dp(FrameStore(df), pairs=6, seed=3).pairs[["config_a", "config_b"]].to_numpy()
    names = sorted(df["system"].unique())
    for metric in ("ndcg", "mrr"):
        total = []
        for f in ("0", "1", "2"):
            w = df[(df.fold == f) & (df.metric == metric)].pivot(index="system", columns="user",
                                                                   values="value").loc[names]
            p = [sps.ttest_rel(w.iloc[a], w.iloc[b]).pvalue for a, b in pairs]
            total.append(np.sum(p))
        row = dp[dp.metric == metric].iloc[0]
        assert row.dp == pytest.approx(np.mean(total), rel=1e-9)
        assert (row.n_pairs, row.n_folds) == (6, 3)


def test_optional_columns_and_missing_users():
    df = _table(folds=("0",))
    plain = df[df.metric == "ndcg"].drop(columns=["fold", "cutoff"]).assign(metric="ndcg@10")
    a = dptune.discriminative_power(plain, pairs=4)
    b = dptune.discriminative_power(df[df.metric == "ndcg"], pairs=4)
    pd.testing.assert_frame_equal(a, b)
    assert a.loc[0, "cutoff"] == 10 and a.loc[0, "algorithm"] == "runs"
    # a user missing for one system is dropped from the pairs with that system only
    store = FrameStore(df.drop(index=df[(df.system == "sys1") & (df.user == "u0")].index))
    users, vals = store.read_matrix("runs", "ndcg", 10, "0", np.array([0, 1]))
    assert len(users) == 39 and "u0" not in set(users) and vals.shape == (2, 39)
    users, vals = store.read_matrix("runs", "ndcg", 10, "0", np.array([0, 2]))
    assert len(users) == 40
    # the test fold is never used, several algorithms and hyperparameter scopes work
    with_test = pd.concat([df, df.assign(fold="test", value=0.0)])
    pd.testing.assert_frame_equal(dptune.discriminative_power(with_test, pairs=3),
                                  dptune.discriminative_power(df, pairs=3))
    two = pd.concat([df.assign(algorithm="a"), df.assign(algorithm="b")])
    assert list(dptune.discriminative_power(two, pairs=3)["algorithm"]) == ["a"] * 2 + ["b"] * 2
    cfg = df.assign(config_id=df.system.str[3:].astype(int), k=df.system.str[3:].astype(int) % 2,
                    n=df.system.str[3:].astype(int) // 2).drop(columns="system")
    scopes = set(dptune.discriminative_power(cfg, pairs=3, hyperparameters=["k", "n"])["scope"])
    assert {"all", "k=0", "k=1", "only:k", "only:n"} <= scopes


@pytest.mark.parametrize("change, field", [
    (lambda d: d.drop(columns="value"), "value"),
    (lambda d: d.drop(columns="system"), "config_id"),
    (lambda d: d.assign(config_id=1), "config_id"),
    (lambda d: pd.concat([d, d.iloc[:1]]), "user"),
    (lambda d: d.assign(value="x"), "value"),
    (lambda d: d.assign(cutoff="ten"), "cutoff"),
])
def test_frame_store_bad_input_names_the_column(change, field):
    with pytest.raises(DptuneError) as err:
        FrameStore(change(_table(folds=("0",), n_sys=3, n_users=5)))
    assert str(err.value).startswith(f"per_user: {field}: ") and "\n" not in str(err.value)


def test_analyze_needs_a_result_store(tmp_path):
    with pytest.raises(DptuneError, match="analyze: store: needs a result store"):
        dptune.analyze(FrameStore(_table(n_sys=3, n_users=5)))
    with pytest.raises(DptuneError, match="manifest"):
        dptune.analyze(tmp_path)


def test_discriminative_power_bad_options():
    with pytest.raises(DptuneError, match="analysis: pairs"):
        dptune.discriminative_power(_table(n_sys=3, n_users=5), pairs=0)
    with pytest.raises(DptuneError, match="analysis: test"):
        dptune.discriminative_power(_table(n_sys=3, n_users=5), test="z")


# ------------------------------------------------------------------ docs/api.md, end to end

DOCS = Path(__file__).parents[1] / "docs" / "api.md"


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.fixture(scope="module")
def docs_run(tmp_path_factory):
    """docs/api.md's code blocks run on the tiny experiment, and ``dptune run`` beside them."""
    from conftest import write_experiment

    d = tmp_path_factory.mktemp("docs")
    cfg = write_experiment(d / "exp")
    paths = {"experiments/quickstart.toml": str(cfg), "results/quickstart": str(d / "results"),
             "reports/quickstart": str(d / "reports")}
    env: dict = {}
    for block in _code_blocks(DOCS.read_text()):
        for old, new in paths.items():
            block = block.replace(old, new)
        exec(compile(block, str(DOCS), "exec"), env)  # noqa: S102 - the docs' own examples
    assert main(["run", str(cfg), "--results", str(d / "cli-results"), "--reports",
                 str(d / "cli-reports"), "--no-progress"]) == 0
    return d, env


def test_docs_examples_write_the_dp_csv_of_dptune_run(docs_run):
    d, env = docs_run
    assert len(_code_blocks(DOCS.read_text())) == 3
    assert (d / "reports" / "dp.csv").read_bytes() == (d / "cli-reports" / "dp.csv").read_bytes()
    res = env["res"]
    assert isinstance(res, dptune.AnalysisResult) and isinstance(env["store"], dptune.ResultStore)
    assert res.options.pairs == 5 and not res.best.empty and "rep" in env
    assert (d / "reports" / "report.md").read_bytes() == (d / "cli-reports" / "report.md").read_bytes()
    assert {"dp_per_25", "ci_low", "ci_high"} <= set(env["res25"].dp.columns)
    assert env["res25"].options.pairs == 25 and len(env["dp"]) == 1


def test_frame_store_over_the_parquet_store_gives_the_same_dp(docs_run):
    d, env = docs_run
    per_user = pd.read_parquet(d / "results" / "per_user.parquet")
    per_user = per_user[per_user["fold"] != "test"]
    store = env["store"]
    for alg in store.algorithms():
        rows = per_user[per_user["algorithm"] == alg].astype({"algorithm": str, "fold": str,
                                                              "metric": str})
        hps = store.hyperparameters(alg)
        cfg = store.configs(alg)[["config_id", *hps]]
        frame = rows.merge(cfg, on="config_id")
        got = dptune.discriminative_power(frame, pairs=5, seed=7, hyperparameters=hps)
        want = env["res"].dp[env["res"].dp["algorithm"] == alg].reset_index(drop=True)
        # the analysis adds the interval of scope all (ci_low, ci_high, n_possible_pairs)
        pd.testing.assert_frame_equal(got, want[list(got.columns)], check_dtype=False)


def test_readme_example_is_the_docs_example_that_the_tests_run():
    readme = _code_blocks((DOCS.parents[1] / "README.md").read_text())
    assert _code_blocks(DOCS.read_text())[0] in readme


def test_sweep_takes_a_path_and_resumes_without_recomputing(docs_run):
    d, env = docs_run
    trials = (d / "results" / "trials.csv").read_bytes()
    parts = sorted(p.name for p in (d / "results" / "per_user.parquet").iterdir())
    store = dptune.sweep(str(d / "exp" / "tiny.toml"), results=d / "results", progress=False)
    assert store.root == env["store"].root
    assert (d / "results" / "trials.csv").read_bytes() == trials
    assert sorted(p.name for p in (d / "results" / "per_user.parquet").iterdir()) == parts
