"""The report checker (tests/report/report_checker.py) on the committed example reports, and
on planted contradictions that it must catch. The reports written by the other tests (a sweep's,
``dp --runs``, ``dp --per-user``) are checked where they are written."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from report.report_checker import check_report

from dptune.vocab import display_algorithm

REPORTS = Path(__file__).parents[2] / "reports"
COMMITTED = ("anelli2019-ml1m-knn", "anelli2019-ml100k-subgrid", "anelli2019-ml1m-design")


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_reports_are_consistent(name):
    assert check_report(REPORTS / name) == []


def test_the_checker_catches_what_it_claims(tmp_path):
    src = REPORTS / "anelli2019-ml1m-knn"
    bad = tmp_path / "bad"
    shutil.copytree(src, bad, ignore=shutil.ignore_patterns("*.png", "*.svg", "*.parquet"))
    md = (bad / "report.md").read_text()
    md += "\nnDCG@10, DP 3.124; Recall@10 (P = 96%); DP_floor 12.1.\n"
    md += "\nRecall@10 (DP per 25 pairs 2.131, Pr(more discriminative) = 100%).\n"
    # the choose-well sentence of a family whose recommendation has an equal choice
    v0 = pd.read_csv(bad / "verdict.csv", keep_default_na=False)
    tied = v0[(v0["cutoff"] == 10) & v0["choices"].str.contains(";")].iloc[0]
    head = f"- {display_algorithm(tied['algorithm'])}, {tied['family']}: the "
    md = re.sub(re.escape(head) + r"metric of lowest DP at N = 10 is",
                head + "most discriminative metric at N = 10 is", md)
    (bad / "report.md").write_text(md)
    v = pd.read_csv(bad / "verdict.csv", keep_default_na=False)
    first = v.index[v["recommended"] != ""][0]
    v.loc[first, "recommended"] = "mrr" if v.loc[first, "recommended"] != "mrr" else "ndcg"
    if "choices" in v.columns:  # the verdict's equal choices say the same (one metric)
        v.loc[first, "choices"] = v.loc[first, "recommended"]
    v.to_csv(bad / "verdict.csv", index=False)
    problems = "\n".join(check_report(bad))
    assert "a DP not per 25 pairs" in problems
    assert "P used for a probability" in problems and "another DP scale" in problems
    assert "table3.md" in problems and "table4.csv" in problems
    assert "a bootstrap share written as certain" in problems
    assert "choose-well calls" in problems and "as equal choices" in problems


def test_a_run_with_every_stage_writes_a_consistent_report(tiny_swept_every_stage):
    """The report of ``dptune run`` through every stage (the test split, a noise floor, a
    bootstrap: conftest's tiny_swept_every_stage) passes the checker: the quick
    variant, in the default run, of the quickstart's check below."""
    assert check_report(tiny_swept_every_stage / "reports") == []


@pytest.mark.slow
def test_the_quickstart_report_is_consistent(tmp_path):
    """The report of the README's first command (``dptune run experiments/quickstart.toml``,
    as written, into a temporary folder) passes the checker: the report a new user reads first.
    Slow (its full reduced grids on 3 folds, about half a minute on 2 idle cores): the default
    run checks the report of a tiny run through the same stages instead."""
    from dptune.cli import main

    exp = Path(__file__).parents[2] / "experiments" / "quickstart.toml"
    assert main(["run", str(exp), "--results", str(tmp_path / "results"), "--reports",
                 str(tmp_path / "reports"), "--no-progress"]) == 0
    assert check_report(tmp_path / "reports") == []
