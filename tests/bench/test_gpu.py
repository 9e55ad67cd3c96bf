"""``python -m dptune.bench gpu``: one line and exit 2 without a device, a dry run on numba's
CUDA simulator that reports no time, and the report's rendering.

No timing is asserted (and the simulator's are never shown)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dptune.bench._gpu import gpu_main, render_gpu_report
from dptune.bench._plans import REPO


def test_without_a_device_one_line_and_exit_2(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)  # whatever this machine has installed
    monkeypatch.setitem(sys.modules, "cupy", None)
    out = tmp_path / "gpu.md"
    assert gpu_main(["--out", str(out)]) == 2
    cap = capsys.readouterr()
    err = [line for line in cap.err.splitlines() if line.strip()]
    assert cap.out == "" and len(err) == 1, err
    assert err[0].startswith("python -m dptune.bench gpu: no CUDA device found (cuda ")
    assert "epoch time per factor size" in err[0] and "launches per epoch" in err[0]
    assert "--simulate" in err[0]
    assert not out.exists()


@pytest.mark.parametrize("argv", [["--factors", "8,x"], ["--factors", "0"],
                                  ["--simulate", "--out", "x.md"],
                                  ["--dataset", "ml-100k"]])
def test_bad_options_stop_before_any_work(argv, capsys):
    with pytest.raises(SystemExit) as ex:
        gpu_main(argv)
    assert ex.value.code == 2
    assert "python -m dptune.bench gpu: error:" in capsys.readouterr().err


def test_simulated_dry_run_counts_launches_checks_and_shows_no_time():
    report = REPO / "reports" / "benchmarks-gpu.md"
    before = report.read_bytes() if report.exists() else None
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    proc = subprocess.run([sys.executable, "-m", "dptune.bench", "gpu", "--simulate"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("simulated: numba's CUDA simulator on the CPU, not a speed "
                               "measurement")
    assert "device: numba CUDA simulator" in proc.stdout
    assert "launches_per_epoch gpu-simulate: 1" in lines
    assert "knn_equal_to_host gpu-simulate userknn: yes" in lines
    assert "knn_equal_to_host gpu-simulate itemknn: yes" in lines
    assert "projected" not in proc.stdout and " s," not in proc.stderr  # no time anywhere
    assert (report.read_bytes() if report.exists() else None) == before


def test_report_rendering():
    """The report from a made-up result (rendering only: no figure here is a measurement)."""
    layout = {"lanes": 4, "workers": 4096, "per_block": 8}
    costs = {"bpr": [{"factors": 8, "epoch_seconds": 1.0, "launches_per_epoch": 1.0,
                      "eval_seconds": 2.0, "layout": layout}],
             "knn": {"userknn": {"fit_seconds": 3.0, "eval_all_k": {10: 4.0}, "launches": 6,
                                 "equal_to_host": True, "exact": True}},
             "nnz": 10, "users": 2, "items": 3}
    proj = {"core_hours": 0.5, "train_core_hours": 0.1, "eval_core_hours": 0.1,
            "knn_core_hours": 0.1, "write_core_hours": 0.1, "test_split_core_hours": 0.1}
    run = {"hours": 0.5, "text": "validation 20 min, test split 5 min", "serial_writes_hours": 0.75}
    result = {"device": "Example device", "engine": "torch:cuda", "wall_seconds": 7.0,
              "machine": {"cpu": "x"}, "plan": {"datasets": ["ml-1m", "synth:amazon-movies"]},
              "data": {"ml-1m": {"note": "MovieLens 1M", "costs": costs, "projection": proj,
                                 "sweep_projection": run},
                       "amazon-movies": {"note": "synthetic", "costs": costs,
                                         "projection": dict(proj, core_hours=5.0),
                                         "sweep_projection": dict(run, hours=5.0)}}}
    text = render_gpu_report(result, "python -m dptune.bench gpu")
    assert "**Example device**" in text
    assert ("0.50 h on one device** (target < 1 h: met): validation 20 min, test split 5 min. "
            "The host writes each unit's part while the device computes the next unit; with the "
            "writes in series it would be 0.75 h.") in text
    assert "5.00 h on one device** (target < 4 h: NOT met)" in text
    assert "writing the parts 0.10 h" in text
    assert "| 8 | 4 x 4096, 8 | 1.0000 | 1 | 2.000 |" in text
    assert "| userknn | 3.00 | 4.00 | 6 | yes | yes |" in text
    assert "Incomplete" not in text
    del result["data"]["amazon-movies"]  # a run stopped after its first data set says so
    assert ("**Incomplete:** the run stopped after 1 of 2 data sets; 1 not measured."
            in render_gpu_report(result, "python -m dptune.bench gpu"))


def test_the_device_full_grid_is_the_sweeps_own_projection_of_the_measured_costs():
    """The report's headline is what ``dptune run --device cuda`` would project for the paper's
    grid from the measured costs (here the committed H100 measurement), and the overlapped
    writes are what make it shorter than the serial sum."""
    import json
    from dataclasses import replace

    from dptune.bench._projection import PAPER_EXPERIMENT, device_cost_model, device_full_grid
    from dptune.config import load_experiment
    from dptune.sweeper._cost import FoldShape, SweepShape
    from dptune.sweeper.design import experiment_design, projection

    costs = json.loads((REPO / "reports" / "benchmarks-gpu.json").read_text())["data"]["ml-1m"][
        "costs"]
    run = device_full_grid(costs)
    exp = load_experiment(PAPER_EXPERIMENT)
    exp = replace(exp, sweep=replace(exp.sweep, device="cuda"))
    d = experiment_design(exp)
    val = FoldShape(717_995, 5815, 3706)
    shape = SweepShape(val, FoldShape(717_995 * 10 / 9, 5815, 3706), 10)
    p = projection(exp, d, shape, {n: a.rounds for n, a in d.algorithms.items()}, 7,
                   device_cost_model(costs), cold=[])
    assert run["hours"] == pytest.approx(p.hours) and run["text"] == p.stages_text()
    assert run["stages"]["validation"] == pytest.approx(p.validation)
    assert run["serial_writes_hours"] > run["hours"]
