"""End to end: dptune.analyze computes DP per 25 pairs, its intervals, the claims and the
verdict by default; degenerate data ends in an error or a flagged result, never in a confident
report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from conftest import write_experiment
from report.report_checker import check_report

import dptune
from dptune.cli import main


def test_defaults_give_intervals_and_a_verdict(tiny_swept):
    res = dptune.analyze(tiny_swept / "results")
    o = res.options
    assert (o.pairs, o.bootstrap, o.stability, o.min_fold_users) == (5, 1000, 5, 20)
    dp = res.dp.table
    rb = dp[dp["scope"] == "all"]
    # pairs = 5: all 3 pairs of UserKNN (3 configurations), 5 of the 6 of BPR-MF (4)
    assert set(zip(rb["algorithm"], rb["n_pairs"], rb["n_possible_pairs"], strict=True)) == {
        ("userknn", 3, 3), ("bpr-mf", 5, 6)}
    assert (rb["ci_low"] <= rb["ci_high"]).all() and rb["ci_low"].notna().all()
    assert np.allclose(rb["dp_per_25"], 25 * rb["mean_p"])
    reps = rb.groupby("algorithm")["repeats"].max()
    assert reps["userknn"] == 1 and reps["bpr-mf"] > 1  # other pair seeds only when sampled
    v = res.verdict
    # one row per algorithm, cutoff and family (accuracy, novelty); 3 and 5 pairs are fewer
    # than min_pairs = 10: the numbers, but no recommendation and no claim
    assert len(v) == 2 * 3 * 2 and list(v["family"][:2]) == ["accuracy", "novelty"]
    assert v["too_few_pairs"].all() and v["recommended"].eq("").all()
    assert res.comparisons.empty and v["less_discriminative"].map(len).eq(0).all()
    low = dptune.analyze(tiny_swept / "results", dptune.AnalysisOptions(min_pairs=3, bootstrap=200))
    v = low.verdict
    assert v["recommended"].ne("").all() and not v["too_few_pairs"].any()
    assert (v[v["algorithm"] == "userknn"]["stability_repeats"] == 1).all()  # every pair used
    assert not low.comparisons.empty
    nov = v[v["family"] == "novelty"]
    assert nov["recommended"].isin(["efd", "epc"]).all() and (nov["judge"] == "epc").all()
    # Table 4's best metric is the verdict's recommendation in every row
    t4 = dptune.Report.from_result(low).tables["table4"].csv
    merged = t4.merge(v, on=["algorithm", "cutoff", "family"])
    assert len(merged) == len(v) and (merged["best_metric"] == merged["recommended"]).all()
    # the tables' DP: on the same pairs, one scale and the capped band
    assert (dp["dp_per_25_plus_sd"] <= 25 + 1e-12).all() and not dp["no_evidence"].any()
    files = {p.name for p in (tiny_swept / "reports").iterdir()}
    assert {"verdict.csv", "comparisons.csv", "dominance.csv", "downstream.csv"} <= files
    assert not {"robust_dp.csv", "robust_ranking.csv"} & files
    # the DP figure of every cutoff beside the verdict, P in its caption; Table 4 agrees
    assert {"figure_dp.png", "figure_dp.svg", "figure_dp_at1.png", "figure_dp_at5.svg"} <= files
    verdict_md = (tiny_swept / "reports" / "verdict.md").read_text()
    assert "![DP of each metric" in verdict_md and "User-kNN P = 3" in verdict_md
    assert "## Summary" in verdict_md and "## Verdict" in verdict_md
    t4 = pd.read_csv(tiny_swept / "reports" / "table4.csv", keep_default_na=False)
    assert list(t4["family"][:2]) == ["accuracy", "novelty"] and t4["best_metric"].eq("").all()
    assert "too few pairs, P = 3" in (tiny_swept / "reports" / "table4.md").read_text()
    # listed as data files in report.md, with what they hold
    data_line = next(line for line in (tiny_swept / "reports" / "report.md").read_text().splitlines()
                     if line.startswith("- Data (CSV): "))
    assert "`comparisons.csv`: the test behind every significance claim" in data_line


def test_a_sampled_scope_feeds_the_tables_and_the_interval_with_the_same_pairs(tiny_swept):
    res = dptune.analyze(tiny_swept / "results", dptune.AnalysisOptions(pairs=2, bootstrap=40, seed=3,
                                                                 stability=3))
    rb = res.dp.table[res.dp.table["scope"] == "all"]
    assert set(rb["n_pairs"]) == {2} and set(rb["n_possible_pairs"]) == {3, 6}
    assert (rb["ci_low"] <= rb["dp_per_25"]).all() and (rb["dp_per_25"] <= rb["ci_high"]).all()
    assert set(rb["repeats"]) == {3}  # sampled: other pair seeds tried
    assert len(res.dp.draws[("bpr-mf", "all", "ndcg", 10)]) == 3


def test_too_few_users_per_fold_is_refused(tiny_swept, capsys, tmp_path):
    assert main(["analyze", str(tiny_swept / "results"), "--reports", str(tmp_path / "r2"),
                 "--min-fold-users", "100000", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "userknn/fold 0: only" in err and "min_fold_users = 100000" in err
    assert main(["analyze", str(tiny_swept / "results"), "--stability", "-1"]) == 2
    assert "--stability" in capsys.readouterr().err


def test_the_old_max_pairs_flag_is_gone(tiny_swept, capsys):
    for old in ("--max-pairs", "--n-pairs"):
        assert main(["analyze", str(tiny_swept / "results"), old, "0"]) == 2
        assert capsys.readouterr().err == (f"dptune: analyze: {old} was removed: use --pairs "
                                           "(see dptune analyze --help)\n")


def _ratings(path: Path, n_users: int, per_user: int) -> Path:
    rows = [(u + 1, (u * 7 + i) % 50 + 1, 5.0, 1_000_000 + 10 * u + i)
            for u in range(n_users) for i in range(per_user)]
    pd.DataFrame(rows, columns=["userId", "movieId", "rating", "timestamp"]).to_csv(
        path, index=False)
    return path


def test_every_user_dropped_is_an_error_with_the_numbers(tmp_path, capsys):
    data = _ratings(tmp_path / "ratings.csv", 30, 2)  # every user has 2 ratings
    cfg = write_experiment(tmp_path / "exp", source=str(data))
    assert main(["run", str(cfg), "--results", str(tmp_path / "res"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "split.min_user_interactions: all 30 users were dropped" in err
    assert "the most any user has is 2" in err


def test_tiny_folds_end_in_an_error_not_a_report(tmp_path, capsys):
    """Every user has 2 ratings and is kept (min_user_interactions = 2): a handful of users per
    fold, which is refused instead of reported with p = 1 everywhere with confidence; by the
    sweep, before any unit is trained (the analysis refused it after the whole sweep), and by
    the analysis of results swept with a lower bar."""
    data = _ratings(tmp_path / "ratings.csv", 30, 2)
    cfg = write_experiment(tmp_path / "exp", source=str(data))
    cfg.write_text(cfg.read_text().replace("folds = 2", "folds = 2\nmin_user_interactions = 2"))
    rc = main(["run", str(cfg), "--results", str(tmp_path / "res"), "--reports",
               str(tmp_path / "rep"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "split.folds: fold 0 has" in err and "fewer than analysis.min_fold_users = 20" in err
    assert not (tmp_path / "res").exists() and not (tmp_path / "rep").exists()
    assert main(["run", str(cfg), "--results", str(tmp_path / "res"), "--no-analyze",
                 "--min-fold-users", "1", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["analyze", str(tmp_path / "res"), "--reports", str(tmp_path / "rep"),
                 "--no-progress"]) == 2
    assert "users to test pairs on, fewer than min_fold_users = 20" in capsys.readouterr().err
    assert not (tmp_path / "rep" / "report.md").exists()


def test_min_pairs_flag(tiny_swept, capsys, tmp_path):
    assert main(["analyze", str(tiny_swept / "results"), "--reports", str(tmp_path / "r4"), "--min-pairs",
                 "0", "--no-progress"]) == 2
    assert "--min-pairs" in capsys.readouterr().err
    assert main(["analyze", str(tiny_swept / "results"), "--reports", str(tmp_path / "r4"), "--min-pairs",
                 "2", "--bootstrap", "50", "--stability", "0", "--no-progress"]) == 0
    v = pd.read_csv(tmp_path / "r4" / "verdict.csv", keep_default_na=False)
    assert v["recommended"].ne("").all() and not v["too_few_pairs"].any()
    # with claims (min_pairs 2) and without (the run's own report: too few pairs), one answer
    assert check_report(tmp_path / "r4") == [] and check_report(tiny_swept / "reports") == []
