"""``python -m dptune.bench sweep``: one real sweep against the cost model's projection of the
same units; every bad argument one line and exit 2 before the run.

No timing is asserted: only that the figures are there, consistent with each other and with the
store the run wrote."""

from __future__ import annotations

import json

import pytest
from conftest import write_experiment

from dptune.bench._main import bench_main
from dptune.bench._plans import REPO
from dptune.bench._sweep import _cost_model, _measured_costs, check_projection
from dptune.sweeper._cost import DEVICE_COSTS


def test_a_budgeted_run_is_timed_and_priced_unit_for_unit(tmp_path, capsys):
    cfg = write_experiment(tmp_path / "exp")
    out = tmp_path / "report" / "sweep.md"
    out.parent.mkdir()
    work = tmp_path / "work"
    assert bench_main(["sweep", str(cfg), "--budget", "1", "--jobs", "1", "--out", str(out),
                       "--workdir", str(work)]) == 0
    printed = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines())
    r = json.loads(out.with_suffix(".json").read_text())
    assert float(printed["run_wall_seconds"]) == pytest.approx(r["wall_seconds"], abs=0.05)
    assert r["wall_seconds"] > 0 and r["projected_seconds"] > 0
    assert r["ratio"] == pytest.approx(r["wall_seconds"] / r["projected_seconds"])
    # budget 1: one round of each algorithm's design order; the tiny grids' rounds
    assert r["budget"] == "1" and r["where"] == "1 core"
    assert r["units"] == {"userknn": 1, "bpr-mf": 2}
    assert r["parts"] == 3 * 2  # units x the experiment's 2 folds
    assert r["measured_compute_seconds"] > 0 and r["projected_compute_seconds"] > 0
    assert r["full_grid_projected_seconds"] >= r["projected_seconds"]  # more units, same winner
    assert r["full_grid_from_this_run_seconds"] == pytest.approx(
        r["full_grid_projected_seconds"] * r["ratio"])
    text = out.read_text()
    assert "| the whole run (wall clock) |" in text and "`dptune run " in text
    assert "--budget 1" in text and "userknn 1, bpr-mf 2" in text
    assert (work / "results" / "manifest.json").is_file()  # --workdir kept


def test_the_device_benchmarks_json_prices_a_device_run():
    """The committed device measurement reads back as the cost model's costs; the constants it
    does not measure stay the built-in device ones."""
    costs = _measured_costs(str(REPO / "reports" / "benchmarks-gpu.json"))
    assert costs["nnz"] == 717_995 and costs["users"] == 5815 and costs["items"] == 3706
    assert {r["factors"] for r in costs["bpr"]} >= {10, 1809}
    m = _cost_model("cuda", costs)
    assert m.device == "cuda" and m.workers(2) == 1
    assert set(m.costs["knn"]) == {"userknn", "itemknn"}
    assert all(isinstance(k, int) for k in m.costs["knn"]["userknn"]["eval_seconds"])
    assert m.costs["writes_overlap"] is True
    assert m.costs["eval_size_exponent"] == DEVICE_COSTS["cuda"]["eval_size_exponent"]
    at = {r["factors"]: r["epoch_seconds"] for r in costs["bpr"]}
    from dptune.sweeper._cost import FoldShape

    fold = FoldShape(717_995, 5815, 3706)
    assert m.config_seconds("bpr-mf", {"factors": 1809, "iterations": 10}, fold) == pytest.approx(
        10 * at[1809] + next(r["eval_seconds"] for r in costs["bpr"] if r["factors"] == 1809))


@pytest.mark.parametrize("argv, field", [
    (["{missing}"], "missing.toml"),
    (["{cfg}", "--budget", "zero"], "--budget"),
    (["{cfg}", "--jobs", "0"], "--jobs"),
    (["{cfg}", "--costs", "{missing}"], "--costs"),
    (["{cfg}", "--costs", "{cfg}"], "--costs"),
    (["{cfg}", "--costs", "{gpu_json}"], "--costs"),  # a CPU run: nothing to price
    (["{cfg}", "--workdir", "{full}"], "--workdir"),
    (["{cfg}", "--out", "{missing}/x/report.md"], "--out"),
])
def test_a_bad_argument_is_one_line_and_exit_2_before_the_run(tmp_path, capsys, argv, field):
    cfg = write_experiment(tmp_path / "exp")
    full = tmp_path / "full"
    (full / "results").mkdir(parents=True)
    (full / "results" / "x").write_text("")
    names = {"cfg": str(cfg), "missing": str(tmp_path / "missing.toml"), "full": str(full),
             "gpu_json": str(REPO / "reports" / "benchmarks-gpu.json")}
    assert bench_main(["sweep", *(a.format(**names) for a in argv)]) == 2
    cap = capsys.readouterr()
    err = [line for line in cap.err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("python -m dptune.bench sweep: "), err
    assert field in err[0], err
    assert "run:" not in cap.err  # nothing ran
    assert not (tmp_path / "exp" / "results").exists()


def test_a_failed_run_is_one_error_naming_its_exit_status_and_last_line(tmp_path, monkeypatch,
                                                                        capfd):
    """The child run's own failure is reported with its last line, not priced (a stand-in
    interpreter that fails as a run would); what it writes on standard error is passed on as
    it comes, its standard output goes to its log."""
    import sys

    from dptune.errors import DptuneError

    cfg = write_experiment(tmp_path / "exp")
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'working'\necho 'dptune: something went wrong' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    with pytest.raises(DptuneError, match=r"^dptune run exited 3: dptune: something went wrong$"):
        check_projection(cfg, budget="1")
    cap = capfd.readouterr()
    assert "dptune: something went wrong" in cap.err and "working" not in cap.err + cap.out
