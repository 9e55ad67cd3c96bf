"""Outside data through the one route (``dptune dp --runs``, ``dp --per-user``): the store it
becomes says what it is, and the report speaks of the data as it is (names of the systems, its
own folds, no test split it does not have)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
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
    # what trec_eval would score otherwise is said in the settings, "none" when nothing
    md = (runs_report / "report.md").read_text()
    assert re.search(r"\| Evaluated users a run does not rank \(scored 0 on every metric\) "
                     r"\| (none|fold )", md)
    assert re.search(r"\| Relevant pairs that are also training pairs \(never a hit\) \| "
                     r"(none|fold )", md)
    assert "binary relevance: nDCG's gain is 1, not the grade" in md


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


# ------------------------------------------------ the Python API on a per-user DataFrame

def _docs_frame() -> pd.DataFrame:
    """docs/api.md's ``per_user_df`` (section "DP of any per-user table"): six runs, 100 users,
    nDCG@10, one fold, no hyperparameters."""
    import numpy as np

    rng = np.random.default_rng(0)
    return pd.DataFrame(
        [{"system": f"run{s}", "user": u, "metric": "ndcg@10", "value": 0.75 * rng.random() + 0.05 * s}
         for s in range(6) for u in range(100)])


def test_every_documented_call_renders_a_per_user_result(tmp_path: Path) -> None:
    """``Report.from_result(dptune.analyze(df))`` on the docs' own frame renders (the settings
    of outside data, the configurations named, the noise floor off) and writes;
    ``discriminative_power`` is the same result."""
    import dptune

    df = _docs_frame()
    res = dptune.analyze(df)
    assert res.noise is None and res.importance is None and res.options.seed == 42
    assert list(res.configurations["system"]) == [f"run{s}" for s in range(6)]
    # no column for a judge the data has no values of (EPC, novelty's, had one of NaN)
    assert [c for c in res.best.columns if c.startswith("test_")] == ["test_value", "test_ndcg"]
    pd.testing.assert_frame_equal(res.dp.table, dptune.discriminative_power(df).dp.table)
    rep = dptune.Report.from_result(res)
    md = rep.to_markdown()
    assert "| Per-user table | per_user |" in md and "| Folds | 1 validation (0) |" in md
    # one metric of its family: said in the singular (it was "the 1 accuracy metrics select")
    assert ("Downstream: the one accuracy metric selects configuration 5 (system=run5); there "
            "is no other to compare it with.") in md
    assert "| Algorithms | runs (6 configurations) |" in md
    # one fold has no spread over folds: no "± 0.000", no "Best + Std Dev" equal to the best
    assert "(one fold: no sd)" in md and "± 0.000" not in md
    t4 = rep.tables["table4"].to_markdown()
    row = next(ln for ln in t4.splitlines() if ln.startswith("| runs"))
    assert row.split("|")[-3].strip() == "–", row
    assert "| Configurations | runs: " + ", ".join(f"{s} = run{s}" for s in range(6)) + " |" in md
    assert ("## Noise floor (A/A pairs)\n\nNone: outside data cannot be re-trained with other "
            "seeds, which an A/A noise floor needs.") in md
    # what this report has no part of is not explained to its reader
    assert "*A/A noise floor* is" not in md and "*dominates*" not in md
    assert ("Primary metric: nDCG@10. It sets the main cutoff of the figures and the summary; "
            "which metric to tune with is the verdict's answer, not this one.") in md
    assert "| Test split |" not in md and "| Split seed |" not in md  # no experiment, no split
    written = rep.write(tmp_path / "rep")
    assert (tmp_path / "rep" / "report.md").read_text() == md
    assert {"dp.csv", "verdict.csv", "report.html", "figure1.png"} <= {p.name for p in written}
    assert len(rep.tables["table3"].to_dataframe()) == 1


def test_analyze_takes_options_as_dp_per_user_takes_flags() -> None:
    """``analyze(df, AnalysisOptions(...))`` reads its options as ``dptune dp --per-user`` reads
    its flags: a field left at its default takes outside data's default (no noise floor,
    importance only with hyperparameters), a field set is used, and a noise floor asked for is
    the one-line error of ``discriminative_power`` (``dptune dp`` has no such flag)."""
    import dptune
    from dptune.errors import DptuneError

    df = _docs_frame()
    res = dptune.analyze(df, dptune.AnalysisOptions(seed=1, bootstrap=0))
    assert (res.options.seed, res.options.noise_seeds, res.options.importance) == (1, 0, False)
    assert res.noise is None and res.importance is None
    pd.testing.assert_frame_equal(
        res.dp.table, dptune.discriminative_power(df, seed=1, bootstrap=0).dp.table)
    with pytest.raises(DptuneError) as err:
        dptune.analyze(df, dptune.AnalysisOptions(noise_seeds=3))
    with pytest.raises(DptuneError) as same:
        dptune.discriminative_power(df, noise_seeds=3)
    assert str(err.value) == str(same.value)
    assert str(err.value) == "analysis: noise_seeds: no noise floor for outside data (it " \
                             "needs retraining)"
    # hyperparameters known: importance is on, and rendered from the result alone
    hp = df.assign(k=df["system"].str[3:].astype(int) % 2,
                   n=df["system"].str[3:].astype(int) // 2)
    res = dptune.analyze(hp, dptune.AnalysisOptions(seed=1, bootstrap=0),
                         hyperparameters=["k", "n"])
    assert res.options.importance and res.importance is not None and len(res.importance)
    md = dptune.Report.from_result(res).to_markdown()
    assert "## Hyperparameter importance (optuna) beside DP dominance" in md
    assert "*runs* (6 configurations)" in md
    off = dptune.analyze(hp, dptune.AnalysisOptions(importance=False, bootstrap=0),
                         hyperparameters=["k", "n"])
    assert off.importance is None and off.options.seed == 42  # a field set is kept


def test_the_docs_analysis_calls_work_on_a_per_user_result(tmp_path: Path) -> None:
    """docs/api.md's calls after the sweep (sections "Sweep, analyse, write" and "Options"),
    made on a per-user DataFrame instead of a store: each works and gives the same kind of
    object as on a store (docs_run in test_api.py makes them on a store)."""
    import dptune

    df = _docs_frame()
    results = dptune.analyze(df, dptune.AnalysisOptions(bootstrap=200))
    dp = results.dp.table
    assert len(dp[dp["scope"] == "all"]) == 1
    rep = dptune.Report.from_result(results)
    assert "\\begin{tabular}" in rep.tables["table3"].to_latex()
    written = rep.write(tmp_path / "rep")
    assert (tmp_path / "rep" / "report.md").read_text() == rep.to_markdown() and written
    verdict = results.verdict[["algorithm", "cutoff", "family", "recommended",
                               "less_discriminative"]]
    assert list(verdict["recommended"]) == ["ndcg"]
    assert isinstance(results.comparisons, pd.DataFrame)
    shown = dptune.Report.from_result(results)
    assert "dptune analysis: 1 algorithm" in shown._repr_markdown_()
    assert "base64" in shown._repr_html_()
    opts = dptune.AnalysisOptions.resolve(None, pairs=25, bootstrap=200)
    res25 = dptune.analyze(df, opts)
    assert res25.options.pairs == 25 and res25.options.seed == 42
    assert len(res25.dp.table[["algorithm", "scope", "metric", "cutoff", "dp_per_25",
                               "n_pairs", "ci_low", "ci_high", "dp_sum"]]) == 1
    mine = dptune.AnalysisOptions(families={"accuracy": ["ndcg", "recall"],
                                            "novelty": ["epc"]}, min_pairs=20)
    assert dptune.analyze(df, mine).options.min_pairs == 20
    names = {p.name for p in results.write_data(tmp_path / "data")}
    assert {"dp.csv", "pairs.csv", "verdict.csv"} <= names and "noise_floor.csv" not in names


def test_a_system_with_few_users_is_named_when_a_fold_has_too_few() -> None:
    """A system with values for 5 users makes its pairs small in a fold of 60: the error named
    the fold alone ("runs/fold 0: only 5 users"), which has 60; it now names the pair."""
    import dptune
    from dptune.errors import DptuneError

    rng = np.random.default_rng(3)
    rows = [{"system": f"s{s}", "user": u, "metric": "ndcg@10", "value": rng.random()}
            for s in range(4) for u in range(60 if s < 3 else 5)]
    with pytest.raises(DptuneError) as err:
        dptune.discriminative_power(pd.DataFrame(rows))
    msg = str(err.value)
    assert ("only 5 users to test pairs on (the users every configuration of a scope has values "
            "for; configuration 3 (system=s3) has values for 5), fewer than min_fold_users = "
            "20") in msg, msg


def test_a_tables_fold_of_too_few_users_is_refused_before_the_fold_loop(monkeypatch) -> None:
    """A per-user table whose second fold holds 8 users: the refusal came after the fold loop
    (and its progress bar), as for any fold the loop had to count. The table's users per fold
    are known when it is read, so it now comes first, with the same line; a system with few
    users in a fold of many still needs the loop to be found (the test above)."""
    import dptune
    from dptune.analysis import pipeline
    from dptune.errors import DptuneError

    def no_loop(*args, **kwargs):
        raise AssertionError("the fold loop started")

    monkeypatch.setattr(pipeline, "run_fold_loop", no_loop)
    rng = np.random.default_rng(4)
    rows = [{"system": f"s{s}", "fold": f, "user": u, "metric": m, "value": rng.random()}
            for s in range(4) for f, n in (("0", 60), ("1", 8)) for u in range(n)
            for m in ("ndcg@10", "recall@10")]
    with pytest.raises(DptuneError) as err:
        dptune.discriminative_power(pd.DataFrame(rows))
    assert str(err.value) == ("per_user: runs/fold 1: only 8 users to test pairs on, fewer than "
                              "min_fold_users = 20; DP over so few users is not evidence "
                              "(use more data or fewer folds, or lower the minimum: "
                              "--min-fold-users, or min_fold_users in Python)"), err.value


def test_a_files_fold_of_too_few_users_is_named_with_the_file(tmp_path: Path, capsys) -> None:
    """``dp --per-user FILE`` of 5 users said "analysis: runs/fold 0: only 5 users", naming no
    file; it names the file now, before any work."""
    rng = np.random.default_rng(5)
    path = tmp_path / "few.csv"
    pd.DataFrame([{"config_id": c, "user": u, "metric": "ndcg@10", "value": rng.random()}
                  for c in range(4) for u in range(5)]).to_csv(path, index=False)
    assert main(["dp", "--per-user", str(path), "--reports", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"dptune: {path}: runs/fold 0: only 5 users to test pairs on"), err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "rep").exists()


def test_dp_runs_says_what_trec_eval_would_score_otherwise(tmp_path: Path, capsys) -> None:
    """``dp --runs`` prints, as ``evaluate`` does, the users a run does not rank (scored 0) and
    the relevant pairs that are training pairs; it said so only in the report's settings."""
    users = tuple(f"u{k}" for k in range(30))
    runs, qrels, train = write_runs(tmp_path, ("a.run", "b.run"), users=users)
    b = runs / "b.run"
    b.write_text("".join(ln + "\n" for ln in b.read_text().splitlines()
                         if not ln.startswith("u7 ")))
    assert main(["dp", "--runs", str(runs), "--qrels", str(qrels), "--train", str(train),
                 "--reports", str(tmp_path / "rep"), "--bootstrap", "0", "--stability", "0",
                 "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert ("dptune: note: 1 of 30 evaluated users has no line in b.run (fold 0) and scores 0 "
            "on every metric (as trec_eval -c scores them; without -c it leaves them out): u7"
            ) in err, err
    assert f"relevant (user, item) pairs of {qrels} (fold 0) are also in {train}" in err, err
