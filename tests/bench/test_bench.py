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
        [sys.executable, "-m", "dptune.bench", "--tiny", "--analyze-scale", "0.001",
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
            "dptune.sweep, dptune.store, dptune.models, dptune.data; "
            "print(sorted(m for m in sys.modules if m.startswith('dptune.bench')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
