"""``dptune dp --per-user``: a per-user table from outside gets the analysis of a sweep."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptune.cli import main
from dptune.errors import DptuneError


def test_store_export_gives_the_sweeps_dp_csv(tiny_swept: Path, tmp_path: Path) -> None:
    """per_user.parquet + configs.csv of a store, through ``dp --per-user``, give the same
    dp.csv (every scope, hyperparameter scopes included) as the sweep that produced them."""
    res = tiny_swept / "results"
    man = json.loads((res / "manifest.json").read_text())
    out = tmp_path / "per_user_reports"
    rc = main(["dp", "--per-user", str(res / "per_user.parquet"), "--configs",
               str(res / "configs.csv"), "--reports", str(out), "--pairs",
               str(man["analysis"]["pairs"]), "--seed", str(man["seeds"]["analysis"])])
    assert rc == 0
    assert (out / "dp.csv").read_bytes() == (tiny_swept / "reports" / "dp.csv").read_bytes()
    for name in ("curves.csv", "pairs.csv", "table3.csv", "table5.csv"):
        assert (out / name).read_bytes() == (tiny_swept / "reports" / name).read_bytes(), name
    assert "Per-user table" in (out / "report.md").read_text()


def test_csv_without_configs_and_systems(tiny_swept: Path, tmp_path: Path) -> None:
    """A CSV with system names and metric@N, no configurations file: DP of scope all only."""
    df = pd.read_parquet(tiny_swept / "results" / "per_user.parquet")
    df = df[(df["algorithm"] == "userknn") & (df["fold"] != "test")]
    df = df.assign(system="knn-" + df["config_id"].astype(str),
                   metric=df["metric"] + "@" + df["cutoff"].astype(str))
    path = tmp_path / "per_user.csv"
    df[["system", "fold", "user", "metric", "value"]].to_csv(path, index=False)
    rc = main(["dp", "--per-user", str(path), "--reports", str(tmp_path / "r"), "--pairs", "3",
               "--bootstrap", "40"])
    assert rc == 0
    dp = pd.read_csv(tmp_path / "r" / "dp.csv")
    assert set(dp["scope"]) == {"all"} and set(dp["algorithm"]) == {"runs"}
    assert set(dp["n_pairs"]) == {3}
    # the LaTeX labels start with the file's name, or with --label: two analyses of files
    # of one name pasted into one paper had the same labels
    assert "\\label{tab:per-user-table-per-user.csv:table3}" in (
        tmp_path / "r" / "table3.tex").read_text()
    rc = main(["dp", "--per-user", str(path), "--reports", str(tmp_path / "r2"), "--pairs", "3",
               "--bootstrap", "40", "--label", "ml1m.knn:v2"])
    assert rc == 0
    assert "\\label{tab:ml1m.knn:v2:table3}" in (tmp_path / "r2" / "table3.tex").read_text()


@pytest.mark.parametrize("label", ["", "  ", "with space", "tab_1", "x" * 101, "caf\u00e9"])
def test_a_label_a_latex_key_cannot_keep_is_refused_before_any_work(
        label: str, tmp_path: Path, capsys) -> None:
    """Every character of ``--label`` must survive as a \\label key (a ``_`` or a space would
    become ``-``, so two names could give one label); refused at parse time, naming the flag,
    before the per-user file is even read."""
    rc = main(["dp", "--per-user", str(tmp_path / "missing.csv"), "--label", label,
               "--reports", str(tmp_path / "r")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "--label" in err and "missing.csv" not in err, err
    assert not (tmp_path / "r").exists()


def test_bad_per_user_input_exits_2(tmp_path: Path, capsys, monkeypatch) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("config_id,user,metric,cutoff,score\n0,1,ndcg,10,0.5\n")
    assert main(["dp", "--per-user", str(bad), "--reports", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"dptune: {bad}: score: unknown column (allowed: algorithm, system, config_id, " \
                  "fold, user, metric, cutoff, value)"
    assert main(["dp", "--reports", str(tmp_path / "r")]) == 2
    assert "--runs" in capsys.readouterr().err
    assert main(["dp", "--per-user", str(bad), "--runs", "x", "--reports", "r"]) == 2
    assert "--per-user" in capsys.readouterr().err
    # --reports defaults to reports/runs; a missing table is one line, nothing written
    monkeypatch.chdir(tmp_path)
    assert main(["dp", "--per-user", "missing.csv"]) == 2
    assert capsys.readouterr().err.strip() == "dptune: missing.csv: per-user file not found"
    assert not (tmp_path / "reports").exists()


def test_algorithm_with_one_configuration_is_reported_without_dp(tiny_swept: Path,
                                                                 tmp_path: Path) -> None:
    df = pd.read_parquet(tiny_swept / "results" / "per_user.parquet")
    df = df[(df["fold"] != "test") & (df["algorithm"] == "userknn")]
    pop = df[df["config_id"] == 0].assign(algorithm="pop")
    path = tmp_path / "per_user.parquet"
    pd.concat([df, pop]).to_parquet(path)
    assert main(["dp", "--per-user", str(path), "--reports", str(tmp_path / "r"),
                 "--pairs", "3", "--bootstrap", "40"]) == 0
    assert set(pd.read_csv(tmp_path / "r" / "dp.csv")["algorithm"]) == {"userknn"}
    assert "pair of configurations" in (tmp_path / "r" / "report.md").read_text()


def _incomplete_table(missing: int = 10) -> pd.DataFrame:
    """Four systems, 60 users, one fold; system C has no value for the first ``missing``."""
    rng = np.random.default_rng(0)
    rows = [(s, u, "ndcg", 10, rng.random()) for s in "ABCD" for u in range(60)
            if not (s == "C" and u < missing)]
    return pd.DataFrame(rows, columns=["system", "user", "metric", "cutoff", "value"])


def test_an_incomplete_table_says_how_many_users_its_pairs_compare(tmp_path: Path) -> None:
    """A configuration without a value for some users narrows every pair of its scopes to the
    users all of the scope's configurations have (as a paired test needs one user set per
    scope): the analysis compares 50 of the 60 users in scope all, the store's manifest records
    it, and the report's settings say so, naming the configuration."""
    import dptune
    from dptune.store._per_user_store import PerUserStore

    table = _incomplete_table()
    store = PerUserStore.from_frame(table)
    assert store.manifest()["incomplete"] == [
        {"algorithm": "runs", "fold": "0", "metric": "ndcg", "cutoff": 10, "users": 60,
         "complete": 50, "fewest": 2, "system": "C", "fewest_users": 50}]
    res = dptune.analyze(table, dptune.AnalysisOptions(bootstrap=0, importance=False,
                                                       min_pairs=1))
    pv = res.dp.pvalues
    assert set(pv.loc[pv["scope"] == "all", "n_users"]) == {50}
    dptune.Report.from_result(res).write(tmp_path / "r")
    text = (tmp_path / "r" / "report.md").read_text()
    assert ("| Users compared | not every configuration has a value for every user, and every "
            "pair of a scope is compared on the users for whom every configuration of the scope "
            "has one; in scope all: runs, fold 0: 50 of 60 users (C has values for 50) |") in text
    complete = PerUserStore.from_frame(_incomplete_table(missing=0))
    assert complete.manifest()["incomplete"] == []
    # the test split is not part of DP: a system that lacks test users is not recorded
    test = pd.concat([_incomplete_table(missing=0).assign(fold="0"),
                      _incomplete_table().assign(fold="test")])
    assert PerUserStore.from_frame(test).manifest()["incomplete"] == []


def test_a_configuration_without_any_value_in_a_fold_is_named() -> None:
    """Its pairs on that fold would compare no user (the analysis stopped at the fold's user
    minimum, naming neither): the table is refused in one line naming the system, the
    metric@N and the fold."""
    from dptune.store._per_user_store import PerUserStore

    table = _incomplete_table(missing=0).assign(fold="0")
    other = table[table["system"] != "B"].assign(fold="1")
    with pytest.raises(DptuneError, match=r"^per_user: system: system B has no value of "
                       r"ndcg@10 on fold 1, which the other configurations have"):
        PerUserStore.from_frame(pd.concat([table, other]))


def test_the_users_row_names_five_folds_at_most() -> None:
    from dptune.report._settings import incomplete_text

    records = [{"algorithm": "a", "fold": str(f), "metric": "ndcg", "cutoff": 10, "users": 9,
                "complete": 9 - f, "fewest": 3, "fewest_users": 9 - f} for f in range(1, 8)]
    text = incomplete_text(records + [{**records[0], "metric": "mrr", "complete": 2}])
    assert "a, fold 1: 2 of 9 users (configuration 3 has values for 8)" in text
    assert text.count(" users (") == 5 and text.endswith("; and 2 more folds")
    assert incomplete_text([]) == ""
