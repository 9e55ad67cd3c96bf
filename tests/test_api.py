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
from dptune.analysis.verdict.rules import VERDICT_COLUMNS
from dptune.cli import main
from dptune.errors import DptuneError
from dptune.store._frame import FrameStore
from dptune.store._per_user_store import PerUserStore

#: The analysis option of the number of pairs (its name may change; the tests follow it).


def _dp(per_user: pd.DataFrame, pairs: int, **options) -> pd.DataFrame:
    """dp.csv of ``discriminative_power`` with ``pairs`` pairs, without the (slow) intervals."""
    return dptune.discriminative_power(per_user, pairs=pairs, bootstrap=0, stability=0,
                                       **options).dp.table


def _table(seed: int = 0, n_sys: int = 5, n_users: int = 40, folds=("0", "1", "2")) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for f in folds:
        base = rng.random(n_users)
        for s in range(n_sys):
            v = np.clip(0.8 * base + 0.03 * s + rng.normal(0, 0.1, n_users), 0.0, 1.0)
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


def test_the_documented_dotted_paths_work_after_a_bare_import():
    """``import dptune`` then ``dptune.store.ResultStore(...)`` (README),
    ``dptune.sweeper.design.read_design`` (docs/api.md) or ``except dptune.errors.DptuneError``
    raised ``AttributeError: module 'dptune' has no attribute 'store'`` unless something had
    imported the subpackage before; each is now imported on first use."""
    import subprocess
    import sys

    code = ("import dptune, sys; "
            "assert 'dptune.store' not in sys.modules; "
            "print(dptune.store.ResultStore.__name__, dptune.errors.DptuneError.__name__, "
            "dptune.sweeper.design.read_design.__name__, type(dptune.sweep).__name__); "
            "print(hasattr(dptune, 'no_such_name'), hasattr(dptune, '_no_such_name'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["ResultStore", "DptuneError", "read_design", "function",
                                  "False", "False"], out.stderr


def test_sweep_is_a_plain_function_even_after_the_sweeper_is_imported():
    """``dptune.sweep`` is the front function, never a module: the stage's package has its own
    name (``dptune.sweeper``), so importing it cannot rebind the public name."""
    import subprocess
    import sys
    import types

    code = ("import dptune, dptune.sweeper, types; "
            "assert isinstance(dptune.sweep, types.FunctionType), type(dptune.sweep); "
            "assert dptune.sweep is dptune.sweeper.sweep; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr
    assert isinstance(dptune.sweep, types.FunctionType)


@pytest.mark.parametrize("module", ["dptune._api", "dptune.analysis.options", "dptune.config",
                                    "dptune.report._format",
                                    "dptune._atomic", "dptune.grids", "dptune.analysis.dp.scale",
                                    "dptune.models._adapters"])
def test_docstring_examples_run(module, monkeypatch):
    """Every example of these modules' docstrings runs and prints what it shows; each module
    has examples (a module without any would pass without testing anything)."""
    from dptune.models import _adapters

    monkeypatch.chdir(DOCS.parents[1])  # examples name files of the repository
    # register()'s example adds a model: keep it out of the registry of the other tests
    monkeypatch.setattr(_adapters, "_REGISTRY", dict(_adapters._REGISTRY))
    monkeypatch.setenv(_adapters.REGISTRY_ENV, "{}")
    res = doctest.testmod(importlib.import_module(module))
    assert res.attempted > 0 and res.failed == 0, res


def test_discriminative_power_equals_scipy_by_hand():
    df = _table()
    dp = _dp(df, 6, seed=3)
    assert list(dp["metric"]) == ["ndcg", "mrr"] and set(dp["scope"]) == {"all"}
    # one route: dptune.analyze of the DataFrame with the same options gives the same result
    store = PerUserStore.from_frame(df)
    res = dptune.analyze(df, dptune.AnalysisOptions.for_outside(
        store, pairs=6, seed=3, bootstrap=0, stability=0))
    pd.testing.assert_frame_equal(res.dp.table, dp)
    assert list(res.verdict.columns) == VERDICT_COLUMNS and len(res.verdict) == 1
    pairs = res.dp.pairs[["config_a", "config_b"]].to_numpy()
    names = sorted(df["system"].unique())
    for metric in ("ndcg", "mrr"):
        total = []
        for f in ("0", "1", "2"):
            w = df[(df.fold == f) & (df.metric == metric)].pivot(index="system", columns="user",
                                                                   values="value").loc[names]
            p = [sps.ttest_rel(w.iloc[a], w.iloc[b]).pvalue for a, b in pairs]
            total.append(np.sum(p))
        row = dp[dp.metric == metric].iloc[0]
        assert row.dp_sum == pytest.approx(np.mean(total), rel=1e-9)
        assert row.dp_per_25 == pytest.approx(25 * np.mean(total) / len(pairs), rel=1e-9)
        assert (row.n_pairs, row.n_folds) == (len(pairs), 3)


def test_optional_columns_and_missing_users():
    df = _table(folds=("0",))
    plain = df[df.metric == "ndcg"].drop(columns=["fold", "cutoff"]).assign(metric="ndcg@10")
    a = _dp(plain, 4)
    b = _dp(df[df.metric == "ndcg"], 4)
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
    pd.testing.assert_frame_equal(_dp(with_test, 3), _dp(df, 3))
    two = pd.concat([df.assign(algorithm="a"), df.assign(algorithm="b")])
    assert list(_dp(two, 3)["algorithm"]) == ["a"] * 2 + ["b"] * 2
    cfg = df.assign(config_id=df.system.str[3:].astype(int), k=df.system.str[3:].astype(int) % 2,
                    n=df.system.str[3:].astype(int) // 2).drop(columns="system")
    scopes = set(_dp(cfg, 3, hyperparameters=["k", "n"])["scope"])
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
    with pytest.raises(DptuneError, match="analysis: noise_seeds: no noise floor"):
        dptune.discriminative_power(_table(n_sys=3, n_users=5), noise_seeds=2)


@pytest.mark.parametrize("options, message", [
    ({"primary_cutoff": 5}, "analysis: primary_cutoff: the results have no ndcg@5; ndcg has "
     "N = 10"),
    ({"primary_metric": "recall"}, "analysis: primary_metric: the results have no 'recall'; "
     "they have ndcg, mrr"),
])
def test_a_primary_metric_the_results_lack_is_refused_before_any_work(options, message,
                                                                      monkeypatch):
    """The primary metric@N picks the noise-floor configurations and judges the choices on the
    test split: one the results do not hold is one line naming the option, and the fold loop
    never starts (an experiment's options are checked against its evaluation when read)."""
    import dptune.analysis.pipeline as pipeline

    monkeypatch.setattr(pipeline, "run_fold_loop",
                        lambda *a, **k: pytest.fail("the analysis started"))
    with pytest.raises(DptuneError) as err:
        dptune.discriminative_power(_table(n_sys=3, n_users=5), **options)
    assert str(err.value) == message


def test_a_metric_dptune_does_not_compute_is_analysed_in_a_family_of_its_own():
    """A per-user table from another framework may hold metrics dptune does not compute (hit
    rate, MAP): they get their DP and a verdict of their own family (``other``), never ranked
    against a known one; a table with no known metric takes its first metric as primary."""
    names = {"ndcg": "hit", "mrr": "map"}
    only = _table(n_sys=3, n_users=20).assign(metric=lambda d: d["metric"].map(names))
    res = dptune.discriminative_power(only, bootstrap=0, stability=0)
    assert (res.options.primary_metric, res.options.primary_cutoff) == ("hit", 10)
    assert set(res.dp.table["metric"]) == {"hit", "map"}
    assert list(res.verdict["family"]) == ["other"]
    mixed = pd.concat([_table(n_sys=3, n_users=20), only])
    res = dptune.discriminative_power(mixed, bootstrap=0, stability=0)
    assert res.options.primary_metric == "ndcg"
    assert {f: sorted(ms) for f, ms in res.metric_families.groups} == {
        "accuracy": ["mrr", "ndcg"], "other": ["hit", "map"]}


@pytest.mark.parametrize("change, kwargs, message", [
    (lambda d: d.assign(value=np.where(d.index == 3, np.nan, d.value)), {},
     "per_user: value: must hold finite numbers; row 3 has nan"),
    (lambda d: d.assign(score=1.0), {}, "per_user: score: unknown column"),
    (lambda d: d, {"hyperparameters": ["k"]}, "per_user: k: missing column"),
    (lambda d: d.assign(k=range(len(d))), {"hyperparameters": ["k"]},
     "per_user: k: configuration runs/sys0 has more than one value"),
    (lambda d: d.to_dict(), {}, "discriminative_power: per_user: needs a pandas DataFrame or "
     "the path of a per-user file (CSV, TSV or Parquet), got dict"),
])
def test_discriminative_power_checks_the_table_as_a_file(change, kwargs, message):
    """A DataFrame is checked as ``dptune dp --per-user`` checks a file: one line, the column."""
    with pytest.raises(DptuneError) as err:
        dptune.discriminative_power(change(_table(n_sys=3, n_users=5)), **kwargs)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


@pytest.mark.parametrize("name", ["pu.csv", "pu.tsv", "pu.csv.gz", "pu.parquet"])
def test_discriminative_power_reads_a_per_user_file(name, tmp_path):
    """A per-user file's path is read as ``dptune dp --per-user`` reads it (it was refused:
    ``per_user: expected a pandas DataFrame, got str``): the DataFrame's numbers, the file's
    name in the result, and a bad row named by the file's line."""
    df = _table(n_sys=3, n_users=25, folds=("0",)).assign(k=lambda d: d.system.str[3:].astype(int))
    path = tmp_path / name
    if name.endswith(".parquet"):
        df.to_parquet(path)
    else:
        df.to_csv(path, sep="\t" if name.endswith(".tsv") else ",", index=False)
    kw = {"hyperparameters": ["k"], "bootstrap": 0, "stability": 0}
    res = dptune.discriminative_power(str(path) if name.endswith(".gz") else path, **kw)
    pd.testing.assert_frame_equal(res.dp.table, dptune.discriminative_power(df, **kw).dp.table)
    assert res.manifest["experiment"] == f"per-user table {name}"
    assert res.configurations["k"].tolist() == [0, 1, 2]
    if name == "pu.csv":
        lines = path.read_text().splitlines()
        lines[3] = lines[3].replace(lines[3].split(",")[-2], "x")
        path.write_text("\n".join(lines) + "\n")
        with pytest.raises(DptuneError, match=r"pu.csv: value: must hold finite numbers; line 4 "):
            dptune.discriminative_power(path, **kw)
    with pytest.raises(DptuneError, match=r"none.csv: per-user file not found$"):
        dptune.discriminative_power(tmp_path / "none.csv")


# ------------------------------------------------------------------ docs/api.md, end to end

DOCS = Path(__file__).parents[1] / "docs" / "api.md"


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.fixture(scope="module")
def docs_run(tmp_path_factory):
    """docs/api.md's code blocks run on the tiny experiment (its own copy of the TOML, its own
    store and reports)."""
    from conftest import write_experiment

    d = tmp_path_factory.mktemp("docs")
    cfg = write_experiment(d / "exp")
    paths = {"experiments/quickstart.toml": str(cfg), "results/quickstart": str(d / "results"),
             "reports/quickstart": str(d / "reports"),
             "reports/per_user": str(d / "per_user_reports")}
    env: dict = {}
    for block in _code_blocks(DOCS.read_text()):
        for old, new in paths.items():
            block = block.replace(old, new)
        exec(compile(block, str(DOCS), "exec"), env)  # noqa: S102 - the docs' own examples
    return d, env


def test_docs_examples_write_the_dp_csv_of_dptune_run(docs_run, tiny_swept):
    """``dptune run`` of the same experiment beside them: conftest's session-wide run of the
    tiny experiment (same TOML, written by the same ``write_experiment`` in another folder)."""
    d, env = docs_run
    cli = tiny_swept / "reports"
    assert (tiny_swept / "exp" / "tiny.toml").read_text().replace(str(tiny_swept), "") == \
        (d / "exp" / "tiny.toml").read_text().replace(str(d), "")  # the same experiment
    assert len(_code_blocks(DOCS.read_text())) == 3
    assert (d / "reports" / "dp.csv").read_bytes() == (cli / "dp.csv").read_bytes()
    res = env["results"]  # the first block's result: the tiny experiment's analysis
    assert isinstance(res, dptune.AnalysisResult) and isinstance(env["store"], dptune.ResultStore)
    assert res.options.pairs == 5 and not res.best.empty and "rep" in env
    assert (d / "reports" / "report.md").read_bytes() == (cli / "report.md").read_bytes()
    assert {"dp_per_25", "ci_low", "ci_high"} <= set(env["res25"].dp.table.columns)
    assert env["res25"].options.pairs == 25 and len(env["res"].dp.table) == 1
    # the per-user DataFrame's result is the same kind of object, verdict included
    assert isinstance(env["res"], dptune.AnalysisResult) and len(env["res"].verdict) == 1
    # and its report renders from the result alone (no store)
    assert isinstance(env["outside"], dptune.Report)
    md = (d / "per_user_reports" / "report.md").read_text()
    assert md == env["outside"].to_markdown() and "| Per-user table |" in md


def test_frame_store_over_the_parquet_store_gives_the_same_dp(docs_run):
    d, env = docs_run
    per_user = pd.read_parquet(d / "results" / "per_user.parquet")
    store = env["store"]
    for alg in store.algorithms():
        rows = per_user[per_user["algorithm"] == alg].astype({"algorithm": str, "fold": str,
                                                              "metric": str})
        hps = store.hyperparameters(alg)
        cfg = store.configs(alg)[["config_id", *hps]]
        frame = rows.merge(cfg, on="config_id")
        same = {k: v for k, v in env["results"].options.to_dict().items()
                if k not in ("primary_metric", "primary_cutoff", "noise_seeds", "noise_configs",
                             "importance")}
        got = dptune.discriminative_power(frame, hyperparameters=hps, **same).dp.table
        table = env["results"].dp.table
        want = table[table["algorithm"] == alg].reset_index(drop=True)
        pd.testing.assert_frame_equal(got.drop(columns=["ci_low", "ci_high"]),
                                      want[list(got.columns)].drop(columns=["ci_low", "ci_high"]),
                                      check_dtype=False)


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


# ------------------------------------------------------------------ one route for every input

def _runs_with_exact_values(root: Path, n_users: int = 24, systems: int = 3,
                            folds=("0", "1")) -> tuple[Path, Path, Path]:
    """TREC runs (a fold per sub-directory), qrels and train. Every user has 1, 2 or 4 relevant
    items and the cutoffs are 1, 2, 4, so Precision and Recall are exact in float32 (the
    store's value type): a store holding them holds exactly the runs' values."""
    rng = np.random.default_rng(11)
    runs, qrels, train = root / "runs", root / "qrels", root / "train"
    for d in (qrels, train):
        d.mkdir(parents=True)
    for fold in folds:
        (runs / fold).mkdir(parents=True)
        q, t = [], []
        for u in range(n_users):
            items = rng.permutation(30)
            rel = items[: rng.choice([1, 2, 4])]
            q += [f"u{u:02d} 0 i{i} 5" for i in rel] + [f"u{u:02d} 0 i{items[5]} 1"]
            t += [f"u{u:02d} i{i}" for i in items[6:9]]
        (qrels / f"{fold}.txt").write_text("\n".join(q) + "\n")
        (train / f"{fold}.txt").write_text("\n".join(t) + "\n")
        for s in range(systems):
            lines = [f"u{u:02d} Q0 i{i} {r} {10 - r + rng.random() / 2:.6f} sys{s}"
                     for u in range(n_users)
                     for r, i in enumerate(rng.permutation(30)[:6], 1)]
            (runs / fold / f"sys{s}").write_text("\n".join(lines) + "\n")
    return runs, qrels, train


def _store_of(table: pd.DataFrame, root: Path) -> dptune.ResultStore:
    """A result store holding the values of a per-user table of runs (systems -> configuration
    ids in name order, users -> codes in id order)."""
    from dptune.store._store import UnitResult

    store = dptune.ResultStore(root).create()
    systems = sorted(table["system"].unique())
    users = np.array(sorted(table["user"].unique()))
    mcs = table[["metric", "cutoff"]].drop_duplicates()
    metrics, cutoffs = tuple(dict.fromkeys(mcs["metric"])), tuple(sorted(set(mcs["cutoff"])))
    store.write_manifest({
        "experiment": "runs", "seeds": {"analysis": 42},
        "algorithms": [{"name": "runs", "type": "external", "free": []}],
        "analysis": {"importance": False, "noise_seeds": 0, "primary_cutoff": 4},
        "evaluation": {"metrics": list(metrics), "cutoffs": list(cutoffs),
                       "relevance_rule": "rating >= 4", "relevance_threshold": 4.0,
                       "novelty_variant": "relevance-aware", "protocol": "runs"},
        "split": {"method": "given", "train_ratio": None, "min_user_interactions": 0,
                  "dropped_users": 0, "folds": 2, "fold_method": "given", "split_seed": None},
        "dataset": {"name": "runs", "source": "runs", "users": len(users), "items": 30,
                    "ratings": 0, "sparsity": 1.0},
    })
    store.write_configs([pd.DataFrame({"algorithm": "runs", "config_id": range(len(systems))})])
    store.write_users(users)
    for fold, g in table.groupby("fold"):
        codes = np.searchsorted(users, sorted(g["user"].unique())).astype(np.int32)
        values = []
        for s in systems:
            w = g[g["system"] == s].pivot_table(index=["metric", "cutoff"], columns="user",
                                                values="value")
            values.append(np.stack([[w.loc[(m, c)].to_numpy() for c in cutoffs] for m in metrics]))
        store.write_unit(UnitResult("runs", fold, "u0", 0, metrics, cutoffs, codes,
                                    tuple(range(len(systems))), tuple(values),
                                    (0.0,) * len(systems), (0.0,) * len(systems)))
    return store


def _rows(frame: pd.DataFrame, metrics=None) -> pd.DataFrame:
    """A result table in a fixed row order (its text columns and cutoff), optionally only the
    rows of ``metrics``, with its numeric columns (a verdict's lists of metrics as tuples)."""
    frame = frame.map(lambda v: tuple(v) if isinstance(v, list) else v)
    keys = [c for c in frame.columns if frame[c].dtype == object] + ["cutoff"]
    out = frame.sort_values(keys).reset_index(drop=True)
    if metrics is not None:
        out = out[out["metric"].isin(metrics)].reset_index(drop=True)
    return out[keys + [c for c in out.columns if c not in keys and
                       pd.api.types.is_numeric_dtype(out[c])]]


def test_every_input_takes_one_route_to_the_same_dp(tmp_path, monkeypatch):
    """The same per-user values as a DataFrame (``discriminative_power``), a per-user file
    (``dp --per-user``), TREC runs (``dp --runs``) and a result store (``dptune analyze``) give
    the same DP, Sakai DP, verdict estimate and intervals (1e-12) under the same options."""
    import dptune._api as api
    import dptune._per_user as outside
    from dptune.store import read_runs

    runs, qrels, train = _runs_with_exact_values(tmp_path)
    table = read_runs(runs, qrels, train, cutoffs=(1, 2, 4))
    # fewer replicates and one pair seed than the defaults keep the test fast; the same for all
    flags = ["--bootstrap", "50", "--stability", "0", "--no-progress"]
    results = {}

    def capture(name, analyze):
        def wrapped(store, options, **kw):
            results[name] = analyze(store, options, **kw)
            return results[name]
        return wrapped

    original = outside.analyze
    monkeypatch.setattr(outside, "analyze", capture("runs", original))
    assert main(["dp", "--runs", str(runs), "--qrels", str(qrels), "--train", str(train),
                 "--cutoffs", "1,2,4", "--reports", str(tmp_path / "r1"), *flags]) == 0
    table.to_csv(tmp_path / "per_user.csv", index=False)
    monkeypatch.setattr(outside, "analyze", capture("per_user", original))
    assert main(["dp", "--per-user", str(tmp_path / "per_user.csv"),
                 "--reports", str(tmp_path / "r2"), *flags]) == 0
    frame = dptune.discriminative_power(table, bootstrap=50, stability=0)
    frame_dp = frame.dp.table
    store = _store_of(table, tmp_path / "results")
    monkeypatch.setattr(api, "analyze", capture("store", api.analyze))
    assert main(["analyze", str(store.root), "--reports", str(tmp_path / "r3"), *flags]) == 0

    exact = ["precision", "recall"]  # the store holds float32: only these are the same values
    assert len(_rows(frame_dp, exact)) == 6 and len(frame_dp) == 18
    for name, res in results.items():
        metrics = exact if name == "store" else None
        pd.testing.assert_frame_equal(_rows(res.dp.table, metrics), _rows(frame_dp, metrics),
                                      check_exact=False, rtol=0, atol=1e-12, obj=name)
        if name != "store":  # the same values: the same claims and verdict
            pd.testing.assert_frame_equal(_rows(res.verdict), _rows(frame.verdict),
                                          check_exact=False, rtol=0, atol=1e-12, obj=name)
            pd.testing.assert_frame_equal(_rows(res.comparisons), _rows(frame.comparisons),
                                          check_exact=False, rtol=0, atol=1e-12, obj=name)
        assert res.options.pairs == results["runs"].options.pairs
        assert (res.options.seed, res.options.bootstrap) == (42, 50)
    assert results["runs"].dp.table["ci_low"].notna().any()
    assert (tmp_path / "r1" / "dp.csv").read_bytes() == (tmp_path / "r2" / "dp.csv").read_bytes()
    # the options of outside data are dptune analyze's defaults (but what outside data lacks)
    opts, default = results["per_user"].options, dptune.AnalysisOptions()
    for name in default.to_dict():
        if name not in ("seed", "bootstrap", "stability", "noise_seeds", "importance",
                        "primary_metric", "primary_cutoff"):
            assert getattr(opts, name) == getattr(default, name), name


# ------------------------------------------------ Report of a store result, without the store

def test_report_from_result_of_a_store_result_needs_no_store(docs_run, tmp_path):
    """A sweep's result carries what its report needs: ``Report.from_result(res)``, the one
    constructor, renders the noise-floor and importance sections without the store and writes
    the report.md the docs wrote; a result without its configurations has no such sections."""
    import dataclasses

    d, env = docs_run
    store, res = env["store"], env["results"]
    assert set(res.configurations["algorithm"]) == set(store.algorithms())
    md = dptune.Report.from_result(res).to_markdown()
    assert "## Noise floor (A/A pairs)" in md
    assert "## Hyperparameter importance (optuna) beside DP dominance" in md
    assert re.search(r"^\*BPR-MF\* \(\d+ configurations\)$", md, re.M)
    # what those sections read of a store, the result gives the same
    from dptune.report._report import _Configurations

    view = _Configurations(res)
    assert view.algorithms() == store.algorithms()
    for alg in store.algorithms():
        pd.testing.assert_frame_equal(view.configs(alg), store.configs(alg), check_dtype=False)
        assert view.hyperparameters(alg) == store.hyperparameters(alg)
    dptune.Report.from_result(res).write(tmp_path / "rep")
    assert (tmp_path / "rep" / "report.md").read_bytes() == \
        (d / "reports" / "report.md").read_bytes()
    bare = dataclasses.replace(res, configurations=None)
    assert "## Noise floor (A/A pairs)" not in dptune.Report.from_result(bare).to_markdown()


def test_the_results_configurations_keep_integer_hyperparameters_integer(docs_run):
    """``res.configurations`` holds every algorithm's configurations in one table: a column
    one algorithm fills with integers and another leaves empty was padded to float64
    (``factors = 10.0``, ``k = 20.0``). It is integer where filled (pandas' nullable Int64)."""
    _, env = docs_run
    store, res = env["store"], env["results"]
    table = res.configurations
    ints = {c for alg in store.algorithms() for c, t in store.configs(alg).dtypes.items()
            if pd.api.types.is_integer_dtype(t) and c != "config_id"}
    assert ints and len(store.algorithms()) > 1
    assert any(table[c].isna().any() for c in ints)  # some column is empty for an algorithm
    for c in ints:
        assert pd.api.types.is_integer_dtype(table[c].dtype), (c, table[c].dtype)
    for alg in store.algorithms():
        own = store.configs(alg)
        rows = table[table["algorithm"] == alg].reset_index(drop=True)
        for c in ints & set(own.columns):
            assert rows[c].astype("int64").tolist() == own[c].tolist()


# ------------------------------------------------ a wrong argument: one line naming it

@pytest.fixture(scope="module")
def small_result():
    return dptune.discriminative_power(_table(n_sys=3, n_users=25, folds=("0",)), bootstrap=0,
                                       stability=0)


QUICKSTART = str(Path(__file__).parents[1] / "experiments" / "quickstart.toml")

BAD_ARGUMENTS = [
    (lambda r, t: dptune.analyze(None), "analyze: store: needs a result store"),
    (lambda r, t: dptune.analyze(_table(), options={"pairs": 5}), "analyze: options: needs "
     "dptune.AnalysisOptions"),
    (lambda r, t: dptune.analyze(_table(), progress="yes"), "analyze: progress: must be True"),
    (lambda r, t: dptune.analyze(_table(), configs=[1]), "analyze: configs: needs a pandas"),
    (lambda r, t: dptune.analyze(_table(), hyperparameters="k"), "analyze: hyperparameters: "
     "needs a list of column names, got 'k'"),
    (lambda r, t: dptune.analyze(t, hyperparameters=["k"]), "analyze: hyperparameters: only a "
     "per-user table takes them"),
    (lambda r, t: dptune.discriminative_power(None), "discriminative_power: per_user: needs a "
     "pandas DataFrame or the path of a per-user file"),
    (lambda r, t: dptune.discriminative_power(_table(), hyperparameters="k"),
     "discriminative_power: hyperparameters: needs a list"),
    (lambda r, t: dptune.discriminative_power(_table(), progress=None),
     "discriminative_power: progress: must be True or False"),
    (lambda r, t: dptune.discriminative_power(_table(), paris=5),
     "analysis: paris: unknown field (did you mean 'pairs'?)"),
    (lambda r, t: dptune.Report.from_result(None), "Report.from_result: result: needs the "
     "dptune.AnalysisResult"),
    (lambda r, t: dptune.Report.from_result(r.dp), "Report.from_result: result: needs"),
    (lambda r, t: dptune.Report.from_result(r, settings=[1]), "Report.from_result: settings:"),
    (lambda r, t: dptune.Report.from_result(r, title=3), "Report.from_result: title: needs a "
     "string"),
    (lambda r, t: dptune.Report.from_result(r, hyperparameter_order={"k": 1}),
     "Report.from_result: hyperparameter_order:"),
    (lambda r, t: dptune.Report.from_result(r, extra_sections="x"),
     "Report.from_result: extra_sections:"),
    # values of thousands of digits (a ValueError of Python's integer-to-text limit before)
    (lambda r, t: dptune.Report.from_result(r, extra_sections=[("t", 10**5000)]),
     "Report.from_result: extra_sections: needs a list of (title, markdown) pairs, got a list "
     "holding an integer of more digits than Python spells out"),
    (lambda r, t: dptune.Report.from_result(r, extra_sections=[("t", 3)]),
     "Report.from_result: extra_sections: needs a list of (title, markdown) pairs, got "
     "[('t', 3)]"),
    (lambda r, t: dptune.Report.from_result(r, settings={"a": 10**5000}),
     "Report.from_result: settings['a']: needs a value the table can show as text, got an "
     "integer of 5,001 digits"),
    (lambda r, t: dptune.analyze(t, progress=10**5000),
     "analyze: progress: must be True or False, got an integer of 5,001 digits"),
    (lambda r, t: dptune.sweep(QUICKSTART, results=t, progress=10**5000),
     "sweep: progress: must be True or False, got an integer of 5,001 digits"),
    (lambda r, t: dptune.Report.from_result(r).write(None), "Report.write: out_dir: needs the "
     "report folder"),
    (lambda r, t: r.write_data(3), "write_data: out: needs the folder"),
    (lambda r, t: dptune.sweep(None), "sweep: exp: needs a dptune.Experiment or its TOML"),
    (lambda r, t: dptune.sweep(QUICKSTART, results=5), "sweep: results: needs the results"),
    (lambda r, t: dptune.sweep(QUICKSTART, results=t, progress="no"),
     "sweep: progress: must be True or False"),
    (lambda r, t: dptune.sweep(QUICKSTART, results=t, storage=5), "sweep: storage: needs an "
     "optuna storage URL"),
    (lambda r, t: dptune.sweep(QUICKSTART, results=t, jobs=0), "sweep: jobs: must be an "
     "integer from 1 to 1,024, got 0"),
    (lambda r, t: dptune.sweep(QUICKSTART, results=t, jobs=10**5000), "sweep: jobs: must be an "
     "integer from 1 to 1,024, got an integer of 5,001 digits"),
    (lambda r, t: dptune.sweep(QUICKSTART, results=t, jobs=2.0), "sweep: jobs: must be an "
     "integer from 1 to 1,024, got 2.0"),
    (lambda r, t: dptune.sweep(QUICKSTART, results=t, budget=[3]), "budget: [3] is not a "
     "budget"),
    (lambda r, t: dptune.load_experiment(None), "load_experiment: path: needs the experiment "
     "file's path"),
    (lambda r, t: dptune.load_experiment(t / "none.toml"), "cannot read experiment file"),
    (lambda r, t: dptune.ResultStore(3), "ResultStore: root: needs the results directory"),
    (lambda r, t: dptune.AnalysisOptions(pairz=3), "analysis: pairz: unknown field (did you "
     "mean 'pairs'?)"),
    (lambda r, t: dptune.AnalysisOptions(n_pairs=3), "analysis: n_pairs: renamed to 'pairs'"),
    (lambda r, t: dptune.AnalysisOptions(*range(19)), "analysis: takes at most 18 options"),
    (lambda r, t: dptune.AnalysisOptions(5, pairs=5), "analysis: pairs: given twice"),
    (lambda r, t: dptune.AnalysisOptions(pairs="5"), "analysis: pairs: must be an integer"),
    (lambda r, t: dptune.AnalysisOptions().replace(alpah=0.1), "analysis: alpah: unknown"),
    (lambda r, t: dptune.AnalysisOptions.resolve("manifest.json"), "analysis: manifest: "
     "needs a store's manifest"),
    (lambda r, t: dptune.AnalysisOptions.for_outside(None), "analysis: store: needs the "
     "in-memory store"),
    (lambda r, t: dptune.AnalysisOptions.from_mapping(3), "analysis: needs a table of analysis "
     "options"),
]


@pytest.mark.parametrize("write", [lambda r, out: dptune.Report.from_result(r).write(out),
                                   lambda r, out: r.write_data(out)], ids=["report", "data"])
def test_a_file_given_as_the_folder_to_write_into_is_one_line(write, small_result, tmp_path):
    """Report.write("pu.csv") and write_data("pu.csv"): one line, the file untouched (a raw
    FileExistsError before)."""
    out = tmp_path / "pu.csv"
    out.write_text("kept")
    with pytest.raises(DptuneError, match=r"pu.csv: is a file, not a folder"):
        write(small_result, out)
    assert out.read_text() == "kept" and list(tmp_path.iterdir()) == [out]


@pytest.mark.parametrize("write, name", [
    (lambda r, out: dptune.Report.from_result(r).write(out), "Report.write: out_dir"),
    (lambda r, out: r.write_data(out), "write_data: out")], ids=["report", "data"])
@pytest.mark.parametrize("inside", [".", "reports"])
def test_a_results_directory_is_no_folder_to_write_into(write, name, inside, small_result,
                                                        tmp_path):
    """As ``dptune analyze --reports`` does, the API refuses to write a report or the data
    files into a results directory or a folder inside one (a report's files would replace the
    store's or pass for its parts): one line, the store untouched."""
    store = tmp_path / "results"
    (store / "per_user.parquet").mkdir(parents=True)
    (store / "manifest.json").write_text('{"experiment": {}, "algorithms": []}')
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(DptuneError, match=rf"^{name}: .*results.* (is a results directory|lies "
                       "inside the results directory).*give a path outside it"):
        write(small_result, store / inside)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("call, message", BAD_ARGUMENTS,
                         ids=[m[:45] for _, m in BAD_ARGUMENTS])
def test_a_wrong_argument_is_one_line_naming_it(call, message, small_result, tmp_path):
    """Each public front function refuses a wrong argument (type or value) with one
    DptuneError line naming it, before any work; never a traceback from inside. (The
    ``results`` of sweep's calls is an empty folder that stays empty: nothing ran.)"""
    with pytest.raises(DptuneError) as err:
        call(small_result, tmp_path)
    text = str(err.value)
    assert text.startswith(message) or message in text, text
    assert "\n" not in text
    assert list(tmp_path.iterdir()) == []


def test_progress_names_each_stage_after_the_fold_loop(capsys):
    """The fold loop's bar reaches 100% before the claims' bootstrap (and on a store the noise
    floor, importance and the report) run: with progress each later stage is one stderr line
    as it starts; without progress nothing is printed."""
    dptune.discriminative_power(_table(), bootstrap=50, stability=0, progress=True)
    err = capsys.readouterr().err
    assert "analysis: claims, dominance and the verdict (bootstrap of 50 replicates)\n" in err
    assert err.index("analysis: claims") > err.rindex("fold")  # after the fold loop's bar
    dptune.discriminative_power(_table(), bootstrap=50, stability=0)
    assert capsys.readouterr().err == ""
