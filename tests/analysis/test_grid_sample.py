"""The analysis of a store that holds a subset of its grid's units, end to end: a budgeted
sweep (whole rounds of the design order) and a killed one are analysed, the report states the
design, a scope whose full-grid pairs are not all represented claims nothing, and a store
completed afterwards gives exactly the numbers of a sweep never stopped."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from dptune.analysis.pipeline import analyze
from dptune.cli import main
from dptune.report import Report
from dptune.store._store import ResultStore
from dptune.studies.simulations.grid_sample import _UnitsView
from dptune.sweeper.design import read_design

#: Test instrumentation of the sweep a test kills, imported by its process through PYTHONPATH:
#: the first ``DPTUNE_TEST_BPR_PARTS`` BPR-MF parts are written; the next part's write marks
#: the process held (``held``) and waits for ever, so that the kill finds exactly that many
#: parts, however fast or slow the machine.
HOLD_AFTER_PARTS = """
import os
import time
from pathlib import Path

from dptune.store._store import ResultStore

_write_unit = ResultStore.write_unit
_HERE = Path(__file__).parent
_LIMIT = int(os.environ["DPTUNE_TEST_BPR_PARTS"])
_written = []


def _held_write_unit(self, res):
    if res.algorithm == "bpr-mf":
        if len(_written) >= _LIMIT:
            (_HERE / "held").touch()
            while True:
                time.sleep(1)
        _written.append(res.unit)
    return _write_unit(self, res)


ResultStore.write_unit = _held_write_unit
"""
KILLED_AFTER = 5  # BPR-MF parts (of 18: 9 units x 2 folds) written before the kill
# The killed sweep's open trial is taken for dead once its heartbeat is 3 beats old (one a
# second), as in test_part_writer's killed run, instead of the default 30 s the resume would
# wait (the one process of each run stamps its own trials)
HEARTBEAT = {"DPTUNE_HEARTBEAT_INTERVAL": "1", "DPTUNE_HEARTBEAT_GRACE": "3"}
GUARD = 600  # seconds: only ends a test whose awaited state never comes


def _run(cfg: Path, results: Path, *flags: str) -> int:
    return main(["run", str(cfg), "--results", str(results), "--no-analyze", "--no-progress",
                 *flags])


@pytest.fixture(scope="module")
def stores(grid_3x3_swept, tmp_path_factory) -> dict[str, Path]:
    """One round, two rounds, and the full grid never stopped (conftest's grid_3x3_swept)."""
    d = tmp_path_factory.mktemp("grid_sample")
    cfg = grid_3x3_swept / "exp" / "sample.toml"
    out = {"cfg": cfg, "full": grid_3x3_swept / "results"}
    for name, flags in (("one", ("--budget", "3")), ("two", ("--budget", "6"))):
        assert _run(cfg, d / name, *flags) == 0
        out[name] = d / name
    return out


@pytest.fixture(scope="module")
def grid_sample_analyses(stores) -> dict[str, object]:
    """The analyses of the two-round and the never-stopped stores, each computed once for the
    tests that read them (none changes them)."""
    return {name: analyze(ResultStore(stores[name])) for name in ("two", "full")}


def test_a_scope_on_fewer_pairs_of_units_than_units_takes_the_hull(stores, monkeypatch):
    """The analysis asks for the logit hull (``few_draws``) exactly for the scopes whose pairs
    rest on fewer draws of units than the units present (dp.csv's ``unit_clusters`` below the
    round's 6 units: the one-at-a-time scopes of the two unit hyperparameters), not for scope
    ``all`` or the iterations' scope, whose pairs rest on every unit; and those scopes'
    intervals are the hull, which holds the raw one."""
    from dptune.analysis.dp import units as un

    calls, plain_interval = [], un.grid_sample_interval

    def spy(estimate, replicates, scale, level=0.95, few_draws=False):
        out = plain_interval(estimate, replicates, scale, level, few_draws)
        calls.append((few_draws, out, plain_interval(estimate, replicates, scale, level)))
        return out

    monkeypatch.setattr(un, "grid_sample_interval", spy)
    dp = analyze(ResultStore(stores["two"])).dp.table
    rows = dp[dp["algorithm"] == "bpr-mf"].dropna(subset=["ci_low"])
    assert len(calls) == len(rows)
    fewer = rows["unit_clusters"] < 6
    assert set(rows.loc[fewer, "scope"]) == {"only:factors", "only:learning_rate"}
    assert [c[0] for c in calls] == list(fewer)
    assert all(h[0] <= r[0] <= r[1] <= h[1] for _, h, r in calls)
    assert any(h != r for few, h, r in calls if few)
    assert all(h == r for few, h, r in calls if not few)


def test_two_rounds_estimate_the_full_grid_with_weighted_pairs(stores, grid_sample_analyses):
    res = grid_sample_analyses["two"]
    gs = res.dp.grid_sample
    row = gs.set_index("algorithm").loc["bpr-mf"]
    assert (row["units"], row["units_total"], row["configs"], row["configs_total"]) == (6, 9, 12, 18)
    assert row["unit_hyperparameters"] == "factors,learning_rate"
    assert "userknn" not in set(gs["algorithm"])  # its one unit is there: nothing sampled
    dp = res.dp.table
    whole = dp[(dp["algorithm"] == "bpr-mf") & (dp["scope"] == "all")]
    assert (whole["unsampled_share"] == 0).all() and whole["ci_low"].notna().all()
    pairs = res.dp.pairs
    w = pairs.loc[(pairs["algorithm"] == "bpr-mf") & (pairs["scope"] == "all"), "weight"]
    assert w.mean() == pytest.approx(1.0) and w.nunique() > 1
    assert (pairs.loc[pairs["algorithm"] == "userknn", "weight"] == 1.0).all()
    # the weighted mean p of the p-values as written is the table's mean p
    pv = res.dp.pvalues
    one = pv[(pv["algorithm"] == "bpr-mf") & (pv["scope"] == "all") & (pv["metric"] == "ndcg")
             & (pv["cutoff"] == 10)].merge(pairs[(pairs["algorithm"] == "bpr-mf")
                                                 & (pairs["scope"] == "all")],
                                           on=["algorithm", "scope", "pair_index"])
    by_fold = one.groupby("fold").apply(lambda g: (g["weight"] * g["p"]).mean(),
                                        include_groups=False)
    got = whole.loc[whole["metric"] == "ndcg"].query("cutoff == 10")["mean_p"].iloc[0]
    assert got == pytest.approx(by_fold.mean(), rel=1e-12)


def test_the_report_states_the_design_everywhere(stores, grid_sample_analyses, tmp_path):
    res = grid_sample_analyses["two"]
    Report.from_result(res).write(tmp_path / "r")
    want = "BPR-MF: 6 of 9 units per fold (67%; full grid: 18 configurations, 12 here)"
    md = (tmp_path / "r" / "report.md").read_text()
    verdict = (tmp_path / "r" / "verdict.md").read_text()
    assert md.count(want) >= 5  # the summary, Tables 3-5 and the settings
    # before the first table, once: in the summary (report.md and verdict.md alike)
    assert md[:md.index("\n| ")].count(want) == 1
    assert verdict.count(want) == 1
    for t in ("table3", "table4", "table5"):
        assert want in (tmp_path / "r" / f"{t}.md").read_text()
    assert (tmp_path / "r" / "grid_sample.csv").exists()
    # the Pairs section's "all M pairs" are the sample's, and it says so
    assert "Of a grid sample, these are the pairs of the configurations its units hold" in md
    # the settings' Bootstrap row describes the full grid's studentised arcsine interval; it
    # also says how a grid sample's interval is read (symmetric, Student's t over the units,
    # and the logit hull of a scope on fewer pairs of units)
    row = next(ln for ln in md.splitlines() if ln.startswith("| Bootstrap |"))
    assert "studentised interval of the mean p-value on the arcsine scale" in row
    assert ("for the algorithms of the grid sample the units are resampled too, and the "
            "interval is the estimate ± t × its standard error") in row
    assert "widened to its hull with the same half-width read on the logit scale" in row
    assert "grid sample the units" not in Report.from_result(
        grid_sample_analyses["full"]).to_markdown()
    # the mark § is explained where a DP may carry it, and once: a table none of whose DPs is
    # marked, and the verdict, are not told of it
    from dptune.report._format import UNSAMPLED

    mark = f"A DP marked {UNSAMPLED} cannot"
    assert mark not in verdict
    for t in ("table3", "table4", "table5", "one_at_a_time"):
        text = (tmp_path / "r" / f"{t}.md").read_text()
        marked = any(UNSAMPLED in ln for ln in text.splitlines() if ln.startswith("|"))
        notes = [ln for ln in text.splitlines() if UNSAMPLED in ln and not ln.startswith("|")]
        assert len(notes) == (1 if marked else 0), (t, notes)


def test_one_round_holds_every_stratum_of_the_whole_grid_and_gets_a_verdict(stores):
    """The first round walks the staircase chain (0, 0), (0, 1), (1, 1): two units sharing
    their factors, two sharing their learning rate, two sharing nothing, so the whole grid's
    DP has an interval and the verdict ranks metrics; a per-value scope whose value has one unit
    in the round is still not covered (Table 5)."""
    res = analyze(ResultStore(stores["one"]))
    dp = res.dp.table
    whole = dp[(dp["algorithm"] == "bpr-mf") & (dp["scope"] == "all")]
    assert (whole["unsampled_share"] == 0).all() and whole["ci_low"].notna().all()
    v = res.verdict[res.verdict["algorithm"] == "bpr-mf"]
    assert not v["too_few_pairs"].any() and (v["recommended"] != "").all()
    per_value = dp[(dp["algorithm"] == "bpr-mf") & dp["scope"].str.contains("=")]
    assert (per_value["unsampled_share"] > 0).any() and (per_value["unsampled_share"] == 0).any()
    # Table 5 marks those DPs and explains the mark once, in its own note (the grid sample's
    # note beside it does not repeat it)
    from dptune.report._format import UNSAMPLED

    t5 = Report.from_result(res).tables["table5"]
    assert any(UNSAMPLED in c.text for c in t5.cells())
    assert len([n for n in t5.notes if UNSAMPLED in n]) == 1


def _first_units(store: ResultStore, n: int) -> _UnitsView:
    """The store seen as holding only the first ``n`` BPR-MF units of its design order (what a
    sweep killed after ``n`` units leaves)."""
    units = [u.unit for u in read_design(store.root).algorithms["bpr-mf"].units[:n]]
    return _UnitsView(store, "bpr-mf", set(units))


def test_a_store_without_pairs_of_some_stratum_claims_nothing_for_it(stores, tmp_path):
    # the first two units of the chain share their factors: no pair of units sharing their
    # learning rate or nothing, strata that 3/4 of the whole grid's pairs of units are in
    store = _first_units(ResultStore(stores["one"]), 2)
    res = analyze(store)
    dp = res.dp.table
    whole = dp[(dp["algorithm"] == "bpr-mf") & (dp["scope"] == "all")]
    assert (whole["unsampled_share"] > 0).all() and whole["ci_low"].isna().all()
    v = res.verdict[res.verdict["algorithm"] == "bpr-mf"]
    assert v["too_few_pairs"].all() and (v["recommended"] == "").all()
    assert not len(res.comparisons[(res.comparisons["algorithm"] == "bpr-mf")
                                   & (res.comparisons["kind"] == "metrics")])
    dom = res.dominance[res.dominance["algorithm"] == "bpr-mf"]
    assert dom["too_few_pairs"].map(lambda hs: "factors" in hs).all()
    assert dom["too_few_pairs"].map(lambda hs: "learning_rate" in hs).all()
    assert (res.verdict.loc[res.verdict["algorithm"] == "userknn", "unsampled_share"] == 0).all()
    Report.from_result(res).write(tmp_path / "r")
    assert "too few units to rank metrics" in (tmp_path / "r" / "verdict.md").read_text()
    sakai = (tmp_path / "r" / "report.md").read_text().split("## Sakai-style DP")[1].split("##")[0]
    assert all("§" in line for line in sakai.splitlines() if line.startswith("| BPR-MF"))
    assert "no stand-in among the units run" in sakai
    # the importance section counts the configurations it was fitted on, not the full grid's
    assert "*BPR-MF* (4 of 18 configurations: the grid sample's units" in (
        tmp_path / "r" / "report.md").read_text()
    # every DP of a scope the units do not cover is marked in the tables, never bold, and the
    # tables' CSVs carry the share they miss; a covered scope (User-kNN's) is not marked
    want = dp[dp["algorithm"] == "bpr-mf"].groupby("scope")["unsampled_share"].first()
    for name in ("table3", "table5"):
        md = (tmp_path / "r" / f"{name}.md").read_text()
        rows = [line for line in md.splitlines() if line.startswith("| DP per 25 pairs")
                or line.startswith("| BPR-MF")]
        assert rows and all("**" not in line and "§" in line for line in rows), name
        assert "§" in md and "no stand-in among the units run" in md
        assert "unsampled_share" in pd.read_csv(tmp_path / "r" / f"{name}.csv").columns
    t3 = pd.read_csv(tmp_path / "r" / "table3.csv")
    assert (t3.loc[t3["algorithm"] == "bpr-mf", "unsampled_share"] == want["all"]).all()
    assert (t3.loc[t3["algorithm"] == "userknn", "unsampled_share"] == 0).all()
    assert not any("§" in line for line in (tmp_path / "r" / "table3.md").read_text().splitlines()
                   if line.startswith("| User-kNN"))
    t5 = pd.read_csv(tmp_path / "r" / "table5.csv")
    assert len(t5) and (t5["unsampled_share"] > 0).all()  # two units cover no Table 5 scope


def test_a_completed_store_gives_the_numbers_of_a_sweep_never_stopped(
        stores, grid_sample_analyses, tmp_path):
    copy = tmp_path / "resumed"
    shutil.copytree(stores["two"], copy)
    assert _run(stores["cfg"], copy) == 0
    got, want = analyze(ResultStore(copy)), grid_sample_analyses["full"]
    assert got.dp.grid_sample is None and want.dp.grid_sample is None
    pd.testing.assert_frame_equal(got.dp.table, want.dp.table)
    pd.testing.assert_frame_equal(got.verdict, want.verdict)
    assert (got.dp.pairs["weight"] == 1.0).all()


def test_a_killed_sweep_is_analysed_then_resumed_to_the_full_grids_numbers(
        stores, grid_sample_analyses, tmp_path, monkeypatch):
    """Kill a sweep held after its fifth BPR-MF part (a state, not a time: the sixth part's
    write waits at a gate, :data:`HOLD_AFTER_PARTS`), analyse what it left, resume it, analyse
    again: the numbers of the sweep never stopped."""
    results = tmp_path / "killed"
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "sitecustomize.py").write_text(HOLD_AFTER_PARTS)
    for key, value in HEARTBEAT.items():
        monkeypatch.setenv(key, value)  # the killed sweep's and the resumed one's
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(gate), *sys.path]),
           "DPTUNE_TEST_BPR_PARTS": str(KILLED_AFTER)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "dptune.cli", "run", str(stores["cfg"]), "--results",
         str(results), "--no-analyze", "--no-progress"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + GUARD  # a safety net against a hung sweep, never a result
    try:
        while not (gate / "held").exists():
            assert proc.poll() is None, "the sweep ended before it was held at the gate"
            assert time.monotonic() < deadline, "the sweep never reached the gate"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert len(list((results / "per_user.parquet").glob("bpr-mf__*.parquet"))) == KILLED_AFTER
    store = ResultStore(results)
    res = analyze(store)
    row = res.dp.grid_sample.set_index("algorithm").loc["bpr-mf"]
    assert 0 < row["units"] < 9
    assert _run(stores["cfg"], results) == 0
    got, want = analyze(ResultStore(results)), grid_sample_analyses["full"]
    pd.testing.assert_frame_equal(got.dp.table, want.dp.table)
