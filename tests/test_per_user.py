"""Outside data through the one route (``dptune dp --runs``, ``dp --per-user``): the store it
becomes says what it is, and the report speaks of the data as it is (names of the systems, its
own folds, no test split it does not have)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import RUN_USERS, write_runs

from dptune.cli import main

SYSTEMS = ("als.run", "bm25.run", "ease.run", "knn.run", "pop.run")  # 10 pairs: a full verdict


@pytest.fixture(scope="module")
def runs_report(tmp_path_factory) -> Path:
    """``dp --runs`` of five systems in one folder (no fold sub-folders, no test split)."""
    root = tmp_path_factory.mktemp("outside")
    users = RUN_USERS + tuple(f"v{k}" for k in range(26))
    runs, qrels, train = write_runs(root, SYSTEMS, users=users)
    rep = root / "rep"
    assert main(["dp", "--runs", str(runs), "--qrels", str(qrels), "--train", str(train),
                 "--reports", str(rep), "--bootstrap", "50", "--stability", "0",
                 "--no-progress"]) == 0
    return rep


def test_runs_report_names_every_system(runs_report: Path) -> None:
    """Every configuration is named by its run file wherever a configuration is shown
    (best_configs.csv, the best-configuration table, the sentences); it once read "config 0"
    with empty parameters."""
    best = pd.read_csv(runs_report / "best_configs.csv")
    assert best["params"].str.fullmatch(r"system=\w+\.run").all()
    named = dict(zip(best["config_id"], best["params"], strict=False))
    assert all(named[c] == f"system={SYSTEMS[c]}" for c in named)  # ids in name order
    md = (runs_report / "report.md").read_text()
    for c, params in named.items():
        assert f"| {c} | {params} |" in md
    assert not re.search(r"configuration \d+(?! \(system=)", md)
    every = ", ".join(f"{i} = {name}" for i, name in enumerate(SYSTEMS))  # the ids of pairs.csv
    assert f"| Configurations | runs: {every} |" in md


def test_runs_report_speaks_of_its_own_data(runs_report: Path) -> None:
    """One fold is "1 fold"; outside runs have neither validation folds nor a test split, so
    neither is spoken of (the verdict, the best-configuration table and its sentences)."""
    for name in ("report.md", "verdict.md"):
        text = (runs_report / name).read_text()
        assert "1 folds" not in text and "1 fold" in text, name
        assert not re.search(r"validation fold|test split|own test value", text, re.I), name
        assert "| Test value |" not in text and "differs significantly on test" not in text
    users = pd.read_csv(runs_report / "table1.csv")
    assert int(users.iloc[0]["users"]) == len(RUN_USERS) + 26  # 0042 and 42 are two users


def test_outside_store_records_what_it_is(tmp_path: Path) -> None:
    """The manifest (and so the analysis result) of outside data records its source and its
    folds, ``test`` among them only when the data has one."""
    from dptune.store._per_user_store import PerUserStore, has_test_split
    from dptune.store._runs import read_runs

    runs, qrels, train = write_runs(tmp_path, SYSTEMS[:2])
    man = PerUserStore.from_frame(read_runs(runs, qrels, train), source=runs,
                                  kind="runs").manifest()
    assert (man["source"], man["folds"], has_test_split(man)) == ("runs", ["0"], False)
    df = pd.DataFrame({"system": ["a", "b", "a", "b"], "fold": ["0", "0", "test", "test"],
                       "user": ["1", "1", "1", "1"], "metric": "ndcg@10",
                       "value": [0.1, 0.2, 0.3, 0.4]})
    man = PerUserStore.from_frame(df).manifest()
    assert (man["source"], man["folds"], has_test_split(man)) == ("per-user", ["0", "test"], True)
    assert has_test_split({"split": {"folds": 5}})  # a sweep's store always has one


def test_outside_reports_pass_the_report_checker(runs_report: Path, tmp_path: Path) -> None:
    """The report of ``dp --runs`` and of ``dp --per-user`` on the same values: one scale, P
    beside every DP, one answer in every table."""
    from report.report_checker import check_report

    from dptune.store._runs import read_runs

    assert check_report(runs_report) == []
    table = tmp_path / "per_user.csv"
    runs, qrels, train = write_runs(tmp_path, SYSTEMS,
                                    users=RUN_USERS + tuple(f"v{k}" for k in range(26)))
    read_runs(runs, qrels, train).to_csv(table, index=False)
    assert main(["dp", "--per-user", str(table), "--reports", str(tmp_path / "rep"),
                 "--bootstrap", "100", "--no-progress"]) == 0
    assert check_report(tmp_path / "rep") == []
