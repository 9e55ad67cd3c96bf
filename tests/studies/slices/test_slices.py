"""Tests of dptune.slices: log-scaled bins, slice DP on a hand-made store, miss rate, and a tiny
end-to-end slice analysis of a sweep on the embedded data."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dptune.analysis.dp import curves as dp
from dptune.analysis.dp import paired_tests
from dptune.analysis.dp.fold_loop import run_fold_loop
from dptune.analysis.dp.paired_tests import paired_test
from dptune.analysis.options import AnalysisOptions
from dptune.analysis.result import AnalysisResult
from dptune.cli import main as _main
from dptune.errors import DptuneError
from dptune.store import ResultStore
from dptune.studies import run_slices_study
from dptune.studies.slices.bins import (
    assign_slices,
    bin_bounds,
    bin_label,
    log_bin,
    members_by_slice,
    user_features,
)
from dptune.studies.slices.dp import main_pair_design, slice_dp, slice_metrics

T = paired_test("t")


def analyze(store, pairs, seed):
    """The main analysis' fold loop of ``store`` (no bootstrap)."""
    return run_fold_loop(store, AnalysisOptions(pairs=pairs, seed=seed, bootstrap=0))


ROOT = Path(__file__).resolve().parents[3]




# ------------------------------------------------------------------ bins


def test_log_bins_are_exact_at_powers() -> None:
    x = np.array([0, 0.5, 1, 1.9, 2, 3, 4, 7, 8, 15.999, 16, 1023, 1024, 2**40])
    e = log_bin(x, 2)
    assert e.tolist() == [-1, -1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 9, 10, 40]
    assert log_bin(np.array([9, 10, 99, 100, 999, 1000]), 10).tolist() == [0, 1, 1, 2, 2, 3]
    assert bin_label(3) == "[8, 16)" and bin_label(-1) == "[0, 1)"
    assert bin_bounds(2, 10) == (100.0, 1000.0)
    with pytest.raises(DptuneError):
        log_bin(np.array([-1.0]))
    with pytest.raises(DptuneError):
        log_bin(np.array([1.0]), base=1)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 10**6) | st.floats(0, 1e6, allow_nan=False), min_size=1,
                max_size=60), st.sampled_from([2, 3, 10]))
def test_bins_are_log_scaled_and_cover_every_user_once(values, base) -> None:
    feats = pd.DataFrame({"fold": "0", "user": np.arange(len(values), dtype=np.int32),
                          "history": np.asarray(values, dtype=float)})
    a = assign_slices(feats, "history", base)
    assert len(a) == len(values) and a["user"].is_unique  # every user exactly once
    x = feats["history"].to_numpy()
    assert (a["lo"].to_numpy() <= x).all() and (x < a["hi"].to_numpy()).all()
    geo = a[a["bin"] >= 0]
    assert np.allclose(geo["hi"] / geo["lo"], base)  # geometric (log-scaled) bins
    assert (geo["lo"] == float(base) ** geo["bin"]).all()
    members = members_by_slice(a)
    got = np.sort(np.concatenate([m["0"] for m in members.values()]))
    assert np.array_equal(got, np.arange(len(values)))


# ------------------------------------------------------------------ a hand-made store


class ToyStore:
    """In-memory store: ``values[(metric, cutoff, fold)]`` is ``(n_configs, n_users)``; the users
    of a fold are ``users[fold]`` (codes, sorted)."""

    def __init__(self, seed: int = 0, n_configs: int = 5, subset: dict | None = None) -> None:
        rng = np.random.default_rng(seed)
        self.users = {"0": np.arange(0, 60, dtype=np.int32), "1": np.arange(5, 70, dtype=np.int32)}
        self.mcs = [("ndcg", 10), ("precision", 10), ("recall", 10)]
        self.values = {}
        effect = rng.normal(0, 0.05, n_configs)
        for fold, users in self.users.items():
            base = rng.random(len(users))
            for m, c in self.mcs:
                v = base[None, :] + effect[:, None] + rng.normal(0, 0.2, (n_configs, len(users)))
                if m == "precision":
                    v = np.where(rng.random(v.shape) < 0.3, 0.0, np.abs(v))
                self.values[(m, c, fold)] = v
        self.n_configs = n_configs
        self.subset = subset  # {fold: users kept}: a store of those users only

    def algorithms(self) -> list[str]:
        return ["alg"]

    def configs(self, algorithm: str) -> pd.DataFrame:
        return pd.DataFrame({"config_id": np.arange(self.n_configs), "k": 10 * (1 + np.arange(self.n_configs))})

    def hyperparameters(self, algorithm: str) -> list[str]:
        return ["k"]

    def folds(self, algorithm: str) -> list[str]:
        return list(self.users)

    def metric_cutoffs(self, algorithm: str) -> list[tuple[str, int]]:
        return list(self.mcs)

    def read_matrix(self, algorithm, metric, cutoff, fold, config_ids):
        users = self.users[fold]
        v = self.values[(metric, int(cutoff), fold)][np.asarray(config_ids)]
        if self.subset is not None:
            keep = np.isin(users, self.subset[fold])
            return users[keep], v[:, keep]
        return users, v


def test_slice_dp_equals_dp_on_the_subset_of_users() -> None:
    store = ToyStore()
    pairs = main_pair_design(store, "alg", 6, seed=11)[0]
    subset = {"0": np.arange(10, 40), "1": np.arange(30, 70, 2)}
    other = {"0": np.arange(0, 10), "1": np.arange(5, 30)}
    got = slice_dp(store, "alg", pairs, {"a": subset, "b": other}, store.mcs, T)
    # 1) by hand: paired tests on the slice's columns, curves averaged over folds
    for m, c in store.mcs:
        curves = []
        for fold in ("0", "1"):
            users = store.users[fold]
            keep = np.isin(users, subset[fold])
            v = store.values[(m, c, fold)]
            p = paired_tests.paired_pvalues(v[pairs[:, 0]][:, keep], v[pairs[:, 1]][:, keep])
            curves.append(dp.pvalue_curve(p))
        want = dp.summarize_curves(np.array(curves))
        row = got[(got.slice == "a") & (got.metric == m)].iloc[0]
        assert row.dp_sum == pytest.approx(want.dp)
        assert row.dp_per_25 == pytest.approx(want.dp * 25 / len(pairs))
        assert row.dp_per_25_plus_sd == pytest.approx(want.dp_plus_sd * 25 / len(pairs))
        assert row.n_users_mean == pytest.approx((30 + 20) / 2) and row.n_users_min == 20
    # 2) the main analysis run on a store that holds only the slice's users
    ref = analyze(ToyStore(subset=subset), pairs=6, seed=11)
    ref = ref.table[ref.table.scope == "all"].set_index("metric")["dp_per_25"]
    a = got[got.slice == "a"].set_index("metric")["dp_per_25"]
    assert np.allclose(a.loc[ref.index], ref)


def test_main_pairs_match_the_main_analysis_and_pairs_csv(tmp_path: Path) -> None:
    store = ToyStore(n_configs=9)
    an = analyze(store, pairs=7, seed=5)
    want = an.pairs[an.pairs.scope == "all"].sort_values("pair_index")[["config_a", "config_b"]].to_numpy()
    assert np.array_equal(main_pair_design(store, "alg", 7, 5)[0], want)
    AnalysisResult(dp=an).write_data(tmp_path)
    # pairs.csv wins over sampling (different n_pairs/seed would sample something else)
    assert np.array_equal(main_pair_design(store, "alg", 3, 99, tmp_path)[0], want)


def test_slice_metrics_and_miss_rate() -> None:
    store = ToyStore()
    members = {"s": {"0": np.array([1, 2, 3]), "1": np.array([5, 6])}}
    got = slice_metrics(store, "alg", 2, members, store.mcs).set_index("metric")
    vals, prec = [], []
    for fold, users in (("0", [1, 2, 3]), ("1", [5, 6])):
        cols = np.searchsorted(store.users[fold], users)
        vals.append(store.values[("ndcg", 10, fold)][2, cols])
        prec.append(store.values[("precision", 10, fold)][2, cols])
    assert got.loc["ndcg", "mean"] == pytest.approx(np.concatenate(vals).mean())
    assert got.loc["ndcg", "n_obs"] == 5
    assert got.loc["ndcg", "miss_rate"] == pytest.approx((np.concatenate(prec) == 0).mean())


def test_empty_or_tiny_slices_get_p_one() -> None:
    store = ToyStore()
    pairs = main_pair_design(store, "alg", 4, seed=1)[0]
    got = slice_dp(store, "alg", pairs, {"one": {"0": np.array([3])}, "none": {"1": np.array([999])}},
                          store.mcs[:1], T)
    assert np.allclose(got["dp_sum"], len(pairs)) and np.allclose(got["dp_per_25"], 25.0)


# ------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def slices_study(knn_swept, tmp_path_factory):
    """The slice study of conftest's :func:`knn_swept` (UserKNN alone, swept and analysed),
    written into a folder of its own: (the swept directory, that folder, the files written)."""
    out = tmp_path_factory.mktemp("slices") / "out"
    files = run_slices_study(knn_swept / "results", out, knn_swept / "reports")
    return knn_swept, out, files


def test_end_to_end_writes_every_file(slices_study) -> None:
    d, out, files = slices_study
    names = {p.name for p in files}
    assert {"slices_dp.csv", "slices_metrics.csv", "slices_bins.csv", "slices_figure.png",
            "slices_figure.svg", "slices_report.md"} <= names
    dpt = pd.read_csv(out / "slices_dp.csv")
    assert set(dpt.slice_kind) == {"all", "history", "popularity"}
    # the reference slice "all" reproduces the main analysis exactly
    main = pd.read_csv(d / "reports" / "dp.csv")
    main = main[main.scope == "all"].set_index(["metric", "cutoff"])["dp_per_25"]
    ref = dpt[dpt.slice_kind == "all"].set_index(["metric", "cutoff"])["dp_per_25"]
    assert np.allclose(ref.loc[main.index], main)
    # on the main report's scale: DP per 25 pairs, which is at most 25
    np.testing.assert_allclose(dpt["dp_per_25"], dpt["dp_sum"] * 25 / dpt["n_pairs"], rtol=1e-9)
    assert dpt["dp_per_25"].between(0, 25).all()
    report = (out / "slices_report.md").read_text()
    assert "DP per 25 pairs (25 × the mean p-value) per slice" in report
    # history bins partition the users of every fold
    bins = pd.read_csv(out / "slices_bins.csv")
    per_kind = bins.groupby(["slice_kind", "fold"])["n_users"].sum().unstack("slice_kind")
    assert (per_kind["history"] == per_kind["all"]).all()
    assert (per_kind["popularity"] == per_kind["all"]).all()
    mt = pd.read_csv(out / "slices_metrics.csv")
    assert mt["miss_rate"].between(0, 1).all()
    assert "Mean training popularity" in (out / "slices_report.md").read_text()


def test_small_slices_are_listed_but_not_ranked_counted_or_drawn(slices_study, tmp_path,
                                                                  capsys) -> None:
    """A slice with fewer than ``min_users`` users in some fold keeps its DP in slices_dp.csv
    but has no rank, no DP in the report's table (its size and why instead), no place in the
    findings or mean ranks, and no point in the figure: an empty slice's DP is 25 (p = 1 where
    no test can be made), which used to be ranked, counted as a tie and drawn."""
    from dptune.studies.slices.figure import slices_figure

    d, out, _ = slices_study
    default = pd.read_csv(out / "slices_dp.csv")
    sizes = sorted(set(default.loc[default.slice_kind != "all", "n_users_min"]))
    assert len(sizes) >= 3
    floor = int(sizes[len(sizes) // 2])  # some slices on either side
    run_slices_study(d / "results", tmp_path / "s", d / "reports", min_users=floor)
    dpt = pd.read_csv(tmp_path / "s" / "slices_dp.csv")
    assert (dpt["ranked"] == (dpt["n_users_min"] >= floor)).all()
    assert dpt["ranked"].any() and not dpt["ranked"].all()
    assert (dpt["dp_rank"].isna() == ~dpt["ranked"]).all()
    pd.testing.assert_series_equal(dpt["dp_per_25"], default["dp_per_25"])  # DPs kept
    report = (tmp_path / "s" / "slices_report.md").read_text()
    small = dpt[~dpt.ranked & (dpt.cutoff == dpt.cutoff.max())].drop_duplicates(
        ["slice_kind", "slice"])
    for _, r in small.iterrows():
        row = next(line for line in report.splitlines()
                   if line.startswith(f"| {r.slice_kind} | {r.slice} |") and "too few" in line)
        assert f"too few users (fewest in a fold: {r.n_users_min} < {floor})" in row
        assert row.count("| – |") >= 1
    assert "users in a fold left out" in report
    assert f"| Slices ranked | those with at least {floor} users in every fold" in report
    assert dpt.loc[dpt.slice_kind == "all", "ranked"].all()  # the reference is always ranked
    # the figure draws the ranked slices only
    cutoff = int(dpt.cutoff.max())
    fig = slices_figure(dpt, cutoff)
    drawn = {len(line.get_xdata()) for ax in fig.axes for line in ax.get_lines()}
    panel = dpt[(dpt.cutoff == cutoff) & (dpt.slice_kind != "all")]
    ranked = panel[panel.ranked].groupby(["algorithm", "slice_kind"])["slice"].nunique()
    assert drawn == set(ranked)
    for ax in fig.axes:  # each metric its own marker: the lines stay apart in greyscale
        markers = [line.get_marker() for line in ax.get_lines()]
        assert len(set(markers)) == len(markers)
    # a floor above every slice: the reference row keeps its DPs, the findings their "on all
    # users", the figure its P; no slice is drawn, and no warning of an empty legend leaks
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run_slices_study(d / "results", tmp_path / "big", d / "reports", min_users=10**6)
        fig = slices_figure(pd.read_csv(tmp_path / "big" / "slices_dp.csv"), cutoff)
    big = (tmp_path / "big" / "slices_report.md").read_text()
    assert "(no ranked slice of a history or popularity kind)" in big
    assert "| all | all |" in big and "too few users (fewest in a fold" in big
    assert not any(ax.get_lines() for ax in fig.axes)
    p_all = int(dpt.loc[dpt.slice_kind == "all", "n_pairs"].max())
    assert {ax.get_ylabel() for ax in fig.axes} == {f"DP per 25 pairs (P = {p_all})"}
    # too small a floor is one line before any work
    with pytest.raises(DptuneError, match="min_users: must be an integer >= 2"):
        run_slices_study(d / "results", tmp_path / "bad", min_users=1)
    assert _main(["slices", str(d / "results"), "--reports", str(tmp_path / "bad"),
                  "--min-users", "1"]) == 2
    assert "--min-users" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_history_is_recomputed_from_each_folds_training_data(knn_swept) -> None:
    from dptune.config import load_experiment
    from dptune.sweeper import prepare

    prep = prepare(load_experiment(knn_swept / "tiny.toml"))
    feats = user_features(prep, ["0", "1"])
    for fold in ("0", "1"):
        fd = prep.fold(fold)
        f = feats[feats.fold == fold]
        assert np.array_equal(f["user"].to_numpy(), fd.users)
        assert np.array_equal(f["history"].to_numpy(), np.diff(fd.train.indptr)[fd.users])
        u = int(fd.users[0])
        items = fd.relevant[u].indices
        pop = np.asarray(fd.train[:, items].sum(axis=0)).ravel()
        assert f["popularity"].iloc[0] == pytest.approx(pop.mean())


def test_cli_main_and_errors(knn_swept, tmp_path, capsys) -> None:
    d = knn_swept
    assert _main(["slices", str(d / "results"), "--reports", str(tmp_path / "cli"),
                     "--base", "10"]) == 0
    dpt = pd.read_csv(tmp_path / "cli" / "slices_dp.csv")
    assert set(dpt.loc[dpt.slice_kind == "history", "lo"]) <= {1.0, 10.0, 100.0, 1000.0}
    assert _main(["slices", str(d / "nowhere"), "--reports", str(tmp_path / "cli")]) == 2
    assert _main(["slices", str(d / "results"), "--reports", str(tmp_path / "cli"),
                     "--base", "1"]) == 2
    assert "dptune:" in capsys.readouterr().err
    # a cutoff the store does not have: one line naming the flag, nothing written
    cuts = sorted({c for a in ResultStore(d / "results").algorithms()
                   for _, c in ResultStore(d / "results").metric_cutoffs(a)})
    assert 7 not in cuts
    assert _main(["slices", str(d / "results"), "--reports", str(tmp_path / "c7"),
                     "--cutoff", "7"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dptune: --cutoff: 7 is not a cutoff of ") and "\n" not in err, err
    assert err.endswith(f"(it has N = {', '.join(map(str, cuts))})"), err
    assert not (tmp_path / "c7").exists()


class _Counted:
    """A sweep's store that counts its reads (``read_fold``, ``read_matrix``); with
    ``batched=False`` it has no ``read_fold``, as a store of outside values, so that the reader
    falls back on ``read_matrix``."""

    def __init__(self, store, batched: bool) -> None:
        self.store, self.batched = store, batched
        self.calls: list[tuple[str, str]] = []

    def __getattr__(self, name: str):
        if name == "read_fold" and not self.batched:
            raise AttributeError(name)
        attr = getattr(self.store, name)
        if name not in ("read_fold", "read_matrix"):
            return attr

        def counted(algorithm, *args, **kwargs):
            fold = args[0] if name == "read_fold" else args[2]
            self.calls.append((name, str(fold)))
            return attr(algorithm, *args, **kwargs)

        return counted


@pytest.mark.parametrize("test", ["t", "permutation"])
def test_slices_read_each_fold_once_as_the_fold_loop_does(knn_swept, test) -> None:
    """On a sweep's store the slice study reads each fold once, every metric@N of it, with the
    fold loop's batched reader (``read_fold``), and gets exactly what the per-metric@N
    ``read_matrix`` reads give."""
    from dptune.store import ResultStore

    store = ResultStore(knn_swept / "results")
    alg = "userknn"
    folds = store.folds(alg)
    mcs = store.metric_cutoffs(alg)
    ids = store.configs(alg)["config_id"].to_numpy()
    rng = np.random.default_rng(3)
    members = {}
    for name, share in (("half", 2), ("third", 3)):
        members[name] = {}
        for f in folds:
            users, _ = store.read_matrix(alg, *mcs[0], f, ids)
            members[name][f] = np.sort(rng.choice(users, len(users) // share, replace=False))
    pairs = main_pair_design(store, alg, 5, seed=7)[0]
    batched, fallback = _Counted(store, True), _Counted(store, False)
    paired = paired_test(test, 200)
    got = slice_dp(batched, alg, pairs, members, mcs, paired, seed=7)
    assert batched.calls == [("read_fold", f) for f in folds]
    want = slice_dp(fallback, alg, pairs, members, mcs, paired, seed=7)
    assert len(fallback.calls) == len(folds) * len(mcs)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    batched.calls.clear()
    got = slice_metrics(batched, alg, int(ids[1]), members, mcs)
    assert batched.calls == [("read_fold", f) for f in folds]
    want = slice_metrics(fallback, alg, int(ids[1]), members, mcs)
    pd.testing.assert_frame_equal(got, want, check_exact=True)


def test_report_names_the_experiment_and_results_without_absolute_paths(
        knn_swept, tmp_path, monkeypatch) -> None:
    """The manifest records the experiment file's absolute path; the report shows it (and the
    results directory) relative to the working directory, never this machine's layout."""
    d = knn_swept
    monkeypatch.chdir(d)
    assert _main(["slices", str(d / "results"), "--reports", str(tmp_path / "rel"),
                     "--main-reports", str(d / "reports")]) == 0
    text = (tmp_path / "rel" / "slices_report.md").read_text()
    assert "| Results | results (experiment tiny.toml, 2 validation folds) |" in text
    assert "| Pairs | reports/pairs.csv (scope all" in text
    assert str(d) not in text


def test_shown_path(tmp_path, monkeypatch) -> None:
    from dptune.studies._markdown import shown_path

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert shown_path("experiments/x.toml") == "experiments/x.toml"  # as given
    assert shown_path(tmp_path / "experiments" / "x.toml") == "experiments/x.toml"
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert shown_path(tmp_path / "home" / "e" / "x.toml") == "~/e/x.toml"
    assert shown_path(tmp_path / "elsewhere" / "x.toml") == "x.toml"


@pytest.mark.parametrize("given", ["missing", "file", "empty"])
def test_main_reports_without_pairs_csv_is_refused(knn_swept, tmp_path, capsys, given) -> None:
    """A ``--main-reports`` that does not exist, is a file, or holds no pairs.csv used to pass
    silently: the pairs were sampled here while the report said they were the main analysis's.
    One line naming ``--main-reports``, exit 2, no slice report."""
    main_reports = tmp_path / "main"
    if given == "file":
        main_reports.write_text("not a folder")
    elif given == "empty":
        main_reports.mkdir()
    assert _main(["slices", str(knn_swept / "results"), "--reports", str(tmp_path / "out"),
                     "--main-reports", str(main_reports)]) == 2
    err = capsys.readouterr().err.strip()
    why = {"missing": "does not exist", "file": "is a file, not a reports directory",
           "empty": "holds no pairs.csv (the main analysis's pairs)"}[given]
    assert err.startswith(f"dptune: --main-reports: {main_reports} {why}; give the reports "
                          "directory of the main analysis of these results") and "\n" not in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("other", ["grid", "data", "no-best"])
def test_main_reports_of_other_results_with_the_same_ids_are_refused(knn_swept, tmp_path, capsys,
                                                                     other) -> None:
    """The main reports of another experiment whose grid has as many configurations fitted
    every check on ids: its pairs of k = 80..320 were read as these results' k = 10..160, and
    the report said they were the main analysis's. Their best_configs.csv tells them apart
    (each named configuration's hyperparameters and validation mean); reports without one are
    refused too. With the right reports, --pairs is refused: their pairs.csv says how many."""
    main_reports = tmp_path / "main"
    shutil.copytree(knn_swept / "reports", main_reports)
    best = pd.read_csv(main_reports / "best_configs.csv")
    if other == "grid":
        best.loc[0, "params"] = "k=99999"
        why = "k=99999"
    elif other == "data":
        best.loc[0, "validation_mean"] += 0.01
        why = "is not"
    if other == "no-best":
        (main_reports / "best_configs.csv").unlink()
        why = "holds no best_configs.csv"
    else:
        best.to_csv(main_reports / "best_configs.csv", index=False)
    assert _main(["slices", str(knn_swept / "results"), "--reports", str(tmp_path / "out"),
                  "--main-reports", str(main_reports)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dptune: --main-reports: ") and why in err and "\n" not in err, err
    assert not (tmp_path / "out").exists()
    assert _main(["slices", str(knn_swept / "results"), "--reports", str(tmp_path / "out"),
                  "--main-reports", str(knn_swept / "reports"), "--pairs", "3"]) == 2
    assert capsys.readouterr().err.startswith("dptune: --pairs: the pairs come from "
                                              "--main-reports' pairs.csv")


@pytest.mark.parametrize("other", ["algorithm", "configuration"])
def test_main_reports_of_another_analysis_are_refused(knn_swept, tmp_path, capsys, other) -> None:
    """``--main-reports`` of another analysis was accepted: an algorithm its pairs.csv lacks
    was sampled here (the report still said the pairs were the main analysis's), and pairs of
    configurations the results do not hold were read. One line naming the flag, the file and
    the algorithm or configuration, exit 2, no slice report."""
    main_reports = tmp_path / "main"
    main_reports.mkdir()
    pairs = pd.read_csv(knn_swept / "reports" / "pairs.csv")
    alg = sorted(pairs["algorithm"].unique())[0]
    if other == "algorithm":
        pairs = pairs[pairs["algorithm"] != alg]
        why = f"has no pairs of {alg}, an algorithm of {knn_swept / 'results'}"
    else:
        row = pairs.index[(pairs["algorithm"] == alg) & (pairs["scope"] == "all")][0]
        pairs.loc[row, "config_b"] = 10_000
        why = f"pairs {alg}'s configuration 10000, which {knn_swept / 'results'} does not hold"
    pairs.to_csv(main_reports / "pairs.csv", index=False)
    assert _main(["slices", str(knn_swept / "results"), "--reports", str(tmp_path / "out"),
                  "--main-reports", str(main_reports)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"dptune: --main-reports: {main_reports / 'pairs.csv'} {why}: these "
                          "reports are of another analysis; give the reports directory"), err
    assert "\n" not in err and not (tmp_path / "out").exists()


def test_an_algorithm_of_one_configuration_is_left_out_and_said(tmp_path) -> None:
    """A popularity baseline (one configuration) has no pair to compare: the study leaves it
    out and says so in the settings (it stopped with "n_pairs: must be >= 1", naming
    nothing); named on its own it is refused with one line naming it."""
    from conftest import KNN_EXPERIMENT

    from dptune.config import load_experiment
    from dptune.sweeper import run_experiment

    (tmp_path / "knn.toml").write_text("[params.k]\nvalues = [10, 20]\n")
    (tmp_path / "one.toml").write_text("[params.k]\nvalues = [10]\n")
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(KNN_EXPERIMENT.format(grid=tmp_path / "knn.toml") + (
        f'[[algorithms]]\nname = "single"\ntype = "itemknn"\ngrid = "{tmp_path / "one.toml"}"\n'))
    run_experiment(load_experiment(cfg), tmp_path / "results", jobs=1, progress=False)
    files = run_slices_study(tmp_path / "results", tmp_path / "out")
    report = files[-1].read_text()
    assert "| Left out | single: one configuration, so no pair to compare |" in report
    dp = pd.read_csv(tmp_path / "out" / "slices_dp.csv")
    assert set(dp["algorithm"]) == {"userknn"}
    with pytest.raises(DptuneError, match=r"^slices: algorithms: single has one configuration"):
        run_slices_study(tmp_path / "results", tmp_path / "out2", algorithms=["single"])


@pytest.mark.parametrize("change", ["append", "edit"])
def test_data_changed_since_the_sweep_is_refused(tmp_path, capsys, change) -> None:
    """The slices are rebuilt from the data file while the metrics are the store's per-user
    values: a file changed in place since the sweep (a rating appended, or one edited, which
    keeps every count) gave a report of mixed numbers. Refused as ``dptune run`` refuses it:
    one line naming the data file, exit 2, nothing written; the same data again (the file
    written anew, the content restored) is accepted."""
    from conftest import write_synthetic_ratings

    from dptune.config import load_experiment
    from dptune.sweeper import run_experiment

    data = write_synthetic_ratings(tmp_path / "syn.csv", 120, 80, 30)
    (tmp_path / "knn.toml").write_text("[params.k]\nvalues = [5, 10]\n")
    cfg = tmp_path / "syn.toml"
    cfg.write_text(f'name = "syn"\nseed = 7\n[data]\nsource = "{data}"\n[split]\nfolds = 2\n'
                   "[evaluation]\ncutoffs = [5, 10]\ntest_split = false\n[analysis]\npairs = 1\n"
                   f'[[algorithms]]\nname = "userknn"\ntype = "userknn"\n'
                   f'grid = "{tmp_path / "knn.toml"}"\n')
    run_experiment(load_experiment(cfg), tmp_path / "rr", jobs=1, progress=False)
    original = data.read_text()
    ratings = pd.read_csv(data)
    if change == "append":  # a new item of the first user: one rating more
        seen = set(ratings.loc[ratings["user"] == 0, "item"])
        item = next(i for i in range(80) if i not in seen)
        data.write_text(original + f"0,{item},5.0,{int(ratings['timestamp'].max()) + 1}\n")
        what = f"(ratings {len(ratings)} now {len(ratings) + 1})"
    else:  # one rating edited: the same counts, other data
        ratings.loc[0, "rating"] = 1.0 if ratings.loc[0, "rating"] == 5.0 else 5.0
        ratings.to_csv(data, index=False)
        digest = ResultStore(tmp_path / "rr").manifest()["data_digest"]
        what = f"(data digest {digest}, now "
    assert _main(["slices", str(tmp_path / "rr"), "--reports", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"dptune: {data}: is not the data the results in {tmp_path / 'rr'} "
                          f"were made from {what}") and "\n" not in err, err
    assert err.endswith("): it changed since; restore the data, or sweep this data into "
                        "another results directory and slice that"), err
    assert not (tmp_path / "out").exists()
    with pytest.raises(DptuneError, match=r"is not the data the results in .* were made from"):
        run_slices_study(tmp_path / "rr", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    data.write_text(original)  # restored: a new modification time, the same data
    assert _main(["slices", str(tmp_path / "rr"), "--reports", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "slices_report.md").exists()
    if change == "append":
        # another set-up is named by the setting that differs, as `dptune run` names it (it
        # said "fingerprint 255d8f38... vs 7c48e62f...")
        other = tmp_path / "other.toml"
        other.write_text(cfg.read_text().replace("folds = 2", "folds = 3"))
        capsys.readouterr()
        assert _main(["slices", str(tmp_path / "rr"), "--experiment", str(other), "--reports",
                      str(tmp_path / "o3")]) == 2
        err = capsys.readouterr().err.strip()
        assert err == (f"dptune: {other}: does not match the results in {tmp_path / 'rr'} "
                       "(split.folds: 2 -> 3): the training folds cannot be recomputed from "
                       "it"), err
        assert not (tmp_path / "o3").exists()


@pytest.mark.parametrize("base", [10**30, 1_000_001, 1, 2.0, True])
def test_a_base_out_of_the_clis_range_is_refused_in_python_too(base) -> None:
    """``dptune slices --base`` takes 2 to 1,000,000; ``log_bin`` and the study's ``base=``
    took any integer >= 2, and 10**30 ended in numpy's log with a traceback. Both routes now
    refuse alike, naming the argument."""
    with pytest.raises(DptuneError) as ex:
        log_bin(np.array([5.0]), base=base)
    assert str(ex.value) == ("slices: base: must be an integer from 2 to 1,000,000, got "
                             f"{base!r}")
    assert log_bin(np.array([5.0, 2e6]), base=1_000_000).tolist() == [0, 1]


def test_the_study_refuses_a_huge_base_naming_it(knn_swept, tmp_path) -> None:
    with pytest.raises(DptuneError, match=r"^slices: base: must be an integer from 2 to "
                       r"1,000,000, got 10{30}$"):
        run_slices_study(knn_swept / "results", tmp_path / "out", base=10**30)
    assert not (tmp_path / "out").exists()
