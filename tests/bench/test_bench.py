"""The benchmark command runs on a tiny slice and prints its lines in the right format.

No timing is asserted here: performance is checked by ``python -m dptune.bench`` itself.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dptune.bench as bench
from dptune.grids import Grid

LINE = {
    "speedup iterations": r"\d+\.\d{2}x",
    "speedup neighbours": r"\d+\.\d{2}x",
    "speedup mini_grid": r"\d+\.\d{2}x",
    "eval_vs_bound": r"\d+\.\d{2}x",
    "projected_full_grid_hours": r"\d+\.\d",
    "analyze_seconds_projected": r"\d+\.\d",
    "analyze_peak_gib_projected": r"\d+\.\d{2}",
}


def _small_grids() -> dict[str, Grid]:
    bpr = Grid(values={"factors": [10, 20], "iterations": [1, 2, 4],
                       "learning_rate": [0.1, 0.05]},
               derived={"user_reg": ("learning_rate", 0.05), "item_reg": ("learning_rate", 0.005)},
               family="bpr-mf")
    knn = Grid(values={"k": [10, 20, 40, 80]}, family="userknn")
    return {"userknn": knn, "bpr-mf": bpr}


def _check_lines(text: str, keys: list[str]) -> None:
    for key in keys:
        m = re.search(rf"^{re.escape(key)}: (.+)$", text, flags=re.M)
        assert m, f"missing line {key!r} in:\n{text}"
        assert re.fullmatch(LINE[key], m.group(1)), (key, m.group(1))


def test_projection_and_report_format() -> None:
    """The projection adds up and the report/lines render, from made-up unit costs."""
    costs = {
        "bpr": [{"factors": f, "epoch_seconds": 0.1 + 0.0007 * f, "updates_per_second": 1e6,
                 "eval_seconds": 0.3 + 0.0002 * f, "bound_seconds": 0.25 + 0.0002 * f}
                for f in (10, 113, 905, 1809)],
        "knn": {"userknn": {"fit_seconds": 3.0, "eval_seconds": {10: 0.4, 1809: 4.0},
                            "bound_seconds": {10: 0.5, 1809: 4.0}}},
        "write_part_seconds": 0.4, "nnz": 717_995, "users": 5815, "items": 3706,
    }
    p = bench.project_full_grid(costs)
    parts = ["train_core_hours", "eval_core_hours", "write_core_hours", "knn_core_hours",
             "test_split_core_hours"]
    assert p["core_hours"] == pytest.approx(sum(p[k] for k in parts))
    assert p["hours"] == pytest.approx(p["core_hours"] / bench.CORES)
    assert p["train_core_hours_without_reuse"] > p["train_core_hours"]
    assert 1.0 < p["iterations_speedup_full_grid"] < 434 / 128
    res = bench.Results(plan=bench.PLANS["tiny"], machine={"cpu": "x"})
    res.lines = {"eval_vs_bound": "1.10x", "projected_full_grid_hours": f"{p['hours']:.1f}"}
    res.detail = {"unit_costs": costs, "projection": p,
                  "eval_vs_bound": {"bpr": 1.1, "per_factors": {10: 1.1}, "knn": {}}}
    md = bench.render_report(res, "python -m dptune.bench --tiny")
    _check_lines(md, ["eval_vs_bound", "projected_full_grid_hours"])
    assert "## Machine" in md and "| cpu | x |" in md


def test_analyze_bench_tiny_store_identical_to_per_scope_reads(tmp_path: Path) -> None:
    """The analysis measurement runs on a tiny synthetic store (a user missing in one part),
    and the batched read path gives exactly the per-scope read_matrix output."""
    out = bench.bench_analyze(0.001, tmp_path, compare=True, grids=_small_grids(), ragged=True)
    assert out["identical"] is True
    assert out["folds"] == 1 and out["users"] == 55
    assert out["seconds_projected"] > 0 and np.isfinite(out["peak_gib_projected"])
    # the whole `dptune analyze` command ran on the synthetic store's manifest
    assert out["command_seconds"] > 0 and out["command_peak_gib"] > 0
    assert not any(tmp_path.iterdir())  # the synthetic store is removed


@pytest.mark.slow
def test_bench_command_tiny(tmp_path: Path) -> None:
    """``python -m dptune.bench --tiny`` end to end: every line, and the markdown report."""
    report = tmp_path / "bench.md"
    proc = subprocess.run(
        [sys.executable, "-m", "dptune.bench", "--tiny", "--scale", "0.001",
         "--out", str(report), "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    _check_lines(proc.stdout, list(LINE))
    md = report.read_text()
    _check_lines(md, list(LINE))
    for section in ("## Machine", "## Neighbours axis", "## Iterations axis", "## Mini-grid",
                    "## Unit costs", "## Analysis"):
        assert section in md
    assert "results identical: yes" in md and "bit-identical to fresh fits: yes" in md


def test_bench_is_off_the_import_path() -> None:
    """No dptune module imports the benchmark: importing every other package leaves it out."""
    code = ("import sys, dptune, dptune.cli, dptune.analysis, dptune.report, dptune.studies, "
            "dptune.sweeper, dptune.store, dptune.models, dptune.data; "
            "print(sorted(m for m in sys.modules if m.startswith('dptune.bench')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _scale_costs() -> dict:
    bpr = [{"factors": f, "epoch_seconds": 0.1 + 0.001 * f, "updates_per_second": 1e6,
            "eval_parts": {"score": 0.01 * f, "topn": 2.0, "metrics": 0.5}, "peak_gib": 1.0}
           for f in (10, 113, 452, 1809)]
    for r in bpr:
        r["eval_seconds"] = sum(r["eval_parts"].values())
    ks = [10, 14, 20, 28, 40, 57, 80, 113, 160, 226, 320, 452, 640, 905, 1809]
    knn = {name: {"fit_seconds": 30.0, "eval_seconds": {k: 1.0 for k in ks},
                  "eval_all_k": {k: 1.0 for k in ks},
                  "eval_parts": {"score": 5.0, "topn": 8.0, "metrics": 2.0},
                  "bound_seconds": {}, "peak_gib": 2.0, "neighbour_bytes": 2**30}
           for name in ("userknn", "itemknn")}
    return {"bpr": bpr, "knn": knn, "write_part_seconds": 0.5, "nnz": 600_000, "users": 15_000,
            "items": 111_537, "eval_users_measured": 1024, "cached_users": 1024,
            "write_peak_gib": 0.5, "prepare_peak_gib": 0.8}


def test_scale_projection_breakdown_adds_up() -> None:
    """The breakdown (training, scoring, top-N, metrics, writing) plus the test split is the
    total, and the report renders every part for each data set."""
    costs = _scale_costs()
    p = bench.project_full_grid(costs)
    b = p["breakdown_core_hours"]
    assert set(b) == {"training", "score", "topn", "metrics", "writing"}
    assert sum(b.values()) + p["test_split_core_hours"] == pytest.approx(p["core_hours"])
    # KNN: 10 folds x 2 families x (30 s similarity + 15 x 1 s evaluation)
    assert p["knn_core_hours"] == pytest.approx(10 * 2 * 45 / 3600)
    from dptune.bench._plans import SCALE_PLANS
    from dptune.bench._projection import budget_in

    res = bench.Results(plan=SCALE_PLANS["amazon-tiny"], machine={"cpu": "x"})
    res.lines = {"projected_full_grid_hours a": "1.0"}
    res.detail["scale"] = {n: {"costs": costs, "projection": p, "peak_gib": 2.0,
                               "prepare_seconds": 1.0, "budget": budget_in(costs, 3.0)}
                           for n in ("ml-1m", "amazon-movies")}
    md = bench.render_scale_report(res, "python -m dptune.bench amazon")
    for text in ("| core-hours | ml-1m | amazon-movies |", "scoring", "top-N", "metrics",
                 "writing the parts", "### Unit costs on amazon-movies", "| cpu | x |",
                 "python -m dptune.bench amazon", "### Budget that fits in 3 hours on 2 cores",
                 "BPR-MF units in the budget (whole rounds)"):
        assert text in md, text


def test_the_budget_in_three_hours_is_the_sweeps_own_conversion() -> None:
    """On the committed ML-1M unit costs (the sweep's reference), one round of 15 BPR-MF units
    takes 1.0 h on 2 cores and 3 hours hold two whole rounds; made-up costs 10 times slower
    hold none, and the answer says how long one round would take."""
    from dptune.bench._projection import budget_in
    from dptune.sweeper._cost import REFERENCE_COSTS

    b = budget_in(REFERENCE_COSTS, 3.0)
    assert (b["rounds"], b["units"], b["total_units"], b["round_units"]) == (2, 30, 225, 15)
    assert b["round_hours"] == pytest.approx(1.02, abs=0.02)
    assert b["run_hours"] <= 3.0 < b["run_hours"] + b["round_hours"]
    slow = {**REFERENCE_COSTS, "bpr": [{**r, "epoch_seconds": 10 * r["epoch_seconds"]}
                                       for r in REFERENCE_COSTS["bpr"]]}
    s = budget_in(slow, 3.0)
    assert (s["rounds"], s["units"]) == (0, 0) and s["round_hours"] > 3.0


def test_scale_section_is_merged_into_the_report_without_erasing_it() -> None:
    from dptune.bench._report import SCALE_END, SCALE_START, merge_scale_section, scale_section

    sec = f"{SCALE_START}\n## At scale\nA\n{SCALE_END}\n"
    full = "# report\n\nfull plan\n"
    once = merge_scale_section(full, sec)
    assert once.startswith(full.rstrip("\n")) and scale_section(once) == sec
    new = sec.replace("A", "B")
    twice = merge_scale_section(once, new)
    assert scale_section(twice) == new and "full plan" in twice and "\nA\n" not in twice
    assert merge_scale_section("", sec) == sec


def test_scale_plan_on_a_tiny_synthetic_shape(tmp_path: Path) -> None:
    """The scale plan end to end on a tiny synthetic data set: unit costs by phase, peak memory,
    a projection whose breakdown adds up (no timing asserted)."""
    import dataclasses

    from dptune.bench._plans import SCALE_PLANS

    plan = dataclasses.replace(SCALE_PLANS["amazon-tiny"], datasets=("synth:tiny",), ks=(10, 40))
    res = bench.run_scale(plan, tmp_path)
    sc = res.detail["scale"]["tiny"]
    c = sc["costs"]
    assert [r["factors"] for r in c["bpr"]] == list(plan.cost_factors)
    assert c["eval_users_measured"] == plan.eval_users and c["users"] > plan.eval_users
    for r in c["bpr"]:
        assert r["eval_seconds"] == pytest.approx(sum(r["eval_parts"].values()))
    assert set(c["knn"]) == {"userknn", "itemknn"}
    assert sorted(c["knn"]["itemknn"]["eval_all_k"]) == [10, 40]
    assert np.isfinite(sc["peak_gib"]) and sc["peak_gib"] > 0
    p = sc["projection"]
    assert sum(p["breakdown_core_hours"].values()) + p["test_split_core_hours"] == pytest.approx(
        p["core_hours"])
    assert re.fullmatch(r"\d+\.\d", res.lines["projected_full_grid_hours tiny"])
    assert re.fullmatch(r"\d+\.\d{2}", res.lines["worker_peak_gib tiny"])
    assert not any(tmp_path.iterdir())  # temporary data removed


@pytest.mark.slow
def test_bench_amazon_command_tiny(tmp_path: Path) -> None:
    """``python -m dptune.bench amazon --tiny`` end to end, merged into an existing report."""
    report = tmp_path / "bench.md"
    report.write_text("# dptune performance benchmark\n\nfull plan figures\n")
    proc = subprocess.run(
        [sys.executable, "-m", "dptune.bench", "amazon", "--tiny", "--out", str(report),
         "--workdir", str(tmp_path)], capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r"^projected_full_grid_hours ml-latest-small: \d+\.\d$", proc.stdout, re.M)
    md = report.read_text()
    assert "full plan figures" in md and "### Projected full grid" in md


def test_bench_workdir_that_cannot_be_created_stops_before_any_work(tmp_path: Path, capsys) -> None:
    """``--workdir`` is created when missing; one that cannot be (under a file) stops the
    benchmark with exit 2 and a line naming the flag, before any store is built."""
    from dptune.bench._main import bench_main

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SystemExit) as exc:
        bench_main(["analyze", "--scale", "0.001", "--workdir", str(blocker / "stores")])
    assert exc.value.code == 2
    assert "--workdir" in capsys.readouterr().err.splitlines()[-1]
    assert list(tmp_path.iterdir()) == [blocker]


def test_help_names_real_options_and_describes_work_not_time(capsys) -> None:
    """``--help`` names no option it does not list (the tests' hidden plan), gives what
    ``--small`` measures instead of a duration that depends on the machine, and says the
    default of every option that takes a value."""
    import argparse

    from dptune.bench._main import bench_main, build_bench_parser

    with pytest.raises(SystemExit) as ex:
        bench_main(["--help"])
    assert ex.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--tiny" not in text
    assert not re.search(r"\bminutes?\b|\bseconds?\b|\bhours?\b", text)
    assert "ML-100K" in text and "once instead of twice" in text
    ap = build_bench_parser()
    for action in ap._actions:
        if action.option_strings and action.nargs != 0 and action.help != argparse.SUPPRESS:
            assert "default" in ap._get_formatter()._expand_help(action), action.option_strings
