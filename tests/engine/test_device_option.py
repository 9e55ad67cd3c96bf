"""``[sweep] device`` / ``--device``: validated once, refused in one line (exit 2) before any
work when the engine cannot run, and routed through the sweep's units."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import EXPERIMENT, write_experiment

from dptune.cli import main
from dptune.config import load_experiment
from dptune.engine import engine_for, numpy_engine
from dptune.errors import DptuneError
from dptune.store._store import ResultStore


def _no_device_library(monkeypatch):
    """Make PyTorch and CuPy unimportable (whatever this machine has installed)."""
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "cupy", None)


def _with_device(tmp_path: Path, device: str) -> Path:
    cfg = write_experiment(tmp_path / "exp")
    cfg.write_text(cfg.read_text().replace("jobs = 1", f'jobs = 1\ndevice = "{device}"'))
    return cfg


def test_default_device_is_cpu_and_cpu_needs_no_engine(tiny_experiment):
    assert load_experiment(tiny_experiment).sweep.device == "cpu"
    assert engine_for("cpu") is None
    assert "device" not in EXPERIMENT  # the shared test experiment runs on the host engine


def test_unknown_device_in_the_config(tmp_path):
    cfg = _with_device(tmp_path, "gpu")
    with pytest.raises(DptuneError, match=r"sweep\.device: 'gpu' is not one of cpu, cuda"):
        load_experiment(cfg)


def test_cuda_without_a_device_library(monkeypatch):
    _no_device_library(monkeypatch)
    with pytest.raises(DptuneError, match=r"^cfg\.toml: sweep\.device: cuda ") as err:
        engine_for("cuda", "cfg.toml")
    assert "\n" not in str(err.value) and "pip install" in str(err.value)


def test_cli_refuses_cuda_before_any_work(tmp_path, monkeypatch, capsys):
    _no_device_library(monkeypatch)
    cfg = _with_device(tmp_path, "cpu")
    rc = main(["run", str(cfg), "--device", "cuda", "--results", str(tmp_path / "results"),
               "--reports", str(tmp_path / "reports")])
    assert rc == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("dptune: --device: cuda"), err
    assert not (tmp_path / "results").exists()


def test_cli_refuses_a_cuda_config_before_any_work(tmp_path, monkeypatch, capsys):
    _no_device_library(monkeypatch)
    cfg = _with_device(tmp_path, "cuda")
    rc = main(["run", str(cfg), "--results", str(tmp_path / "results"),
               "--reports", str(tmp_path / "reports")])
    assert rc == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "sweep.device: cuda" in err[0] and str(cfg) in err[0], err
    assert not (tmp_path / "results").exists()


def _small_ratings(path: Path) -> Path:
    """40 users x 30 items, 14 ratings each (3-5 stars, increasing timestamps): small enough
    for the kernels on numba's CUDA simulator."""
    rng = np.random.default_rng(0)
    lines = ["userId,movieId,rating,timestamp"]
    for u in range(40):
        for t, i in enumerate(rng.choice(30, 14, replace=False)):
            lines.append(f"{u + 1},{i + 1},{rng.integers(3, 6)},{1000 + 100 * u + t}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_units_run_through_the_engine(tmp_path, monkeypatch):
    """With an engine, KNN is evaluated on it (same values as the host engine) and BPR-MF is
    trained on it (a different, valid model)."""
    from dptune.sweeper import _unit
    from dptune.sweeper._plan import plan

    data = _small_ratings(tmp_path / "ratings.csv")
    exp = load_experiment(write_experiment(tmp_path / "exp", source=str(data)))
    fold = "1"
    results = {}
    for device in ("cpu", "cuda"):
        if device == "cuda":
            monkeypatch.setattr(_unit, "engine_for", lambda d: numpy_engine() if d == "cuda"
                                else None)
        run = replace(exp, sweep=replace(exp.sweep, device=device))
        store = ResultStore(tmp_path / device).create()
        results[device] = {
            alg: _unit.run_unit(run, plan(run, alg, [fold])[0], store) for alg in ("userknn", "bpr-mf")
        }
    cpu, dev = results["cpu"], results["cuda"]
    for a, b in zip(cpu["userknn"].values, dev["userknn"].values, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-6, equal_nan=True)
    bpr_cpu, bpr_dev = np.stack(cpu["bpr-mf"].values), np.stack(dev["bpr-mf"].values)
    assert bpr_cpu.shape == bpr_dev.shape and not np.array_equal(bpr_cpu, bpr_dev)
    prec = bpr_dev[:, list(exp.evaluation.metrics).index("precision")]
    assert np.isfinite(prec).all() and 0.0 < prec.mean() <= 1.0


def test_the_device_is_part_of_the_set_up(tmp_path, tiny_experiment):
    """BPR-MF trained on a device is another set of models: a results directory is not resumed
    on the other device; ``cpu`` keeps every existing fingerprint."""
    from dptune.sweeper._manifest import setup_changes

    cpu = load_experiment(tiny_experiment)
    written_cpu = load_experiment(_with_device(tmp_path / "a", "cpu"))
    cuda = load_experiment(_with_device(tmp_path / "b", "cuda"))
    assert written_cpu.fingerprint() == cpu.fingerprint() != cuda.fingerprint()
    assert "sweep.device: 'cpu' -> 'cuda'" in setup_changes({"config": cpu.to_dict()}, cuda)
    assert "sweep.device: 'cuda' -> 'cpu'" in setup_changes({"config": cuda.to_dict()}, cpu)
    assert not any("device" in c for c in setup_changes({"config": cpu.to_dict()}, written_cpu))


def test_cuda_refused_while_the_kernels_would_run_on_the_simulator(monkeypatch):
    """With PyTorch seeing a device but numba's CUDA target being its simulator, ``cuda`` is
    refused in one line: the kernels would not run on the device."""
    import types

    from dptune.engine._cuda import device_problem, simulated

    if not simulated():
        pytest.skip("the kernels' target here is a device (NUMBA_ENABLE_CUDASIM=0)")
    assert "simulator" in device_problem()
    compat = types.ModuleType("array_api_compat")
    compat.torch = types.ModuleType("array_api_compat.torch")
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(is_available=lambda: True)
    torch.device = lambda name: name
    monkeypatch.setitem(sys.modules, "array_api_compat", compat)
    monkeypatch.setitem(sys.modules, "array_api_compat.torch", compat.torch)
    monkeypatch.setitem(sys.modules, "torch", torch)
    with pytest.raises(DptuneError, match=r"^cfg\.toml: sweep\.device: cuda is not available: "
                       r"numba's CUDA simulator is on") as err:
        engine_for("cuda", "cfg.toml")
    assert "\n" not in str(err.value)


def test_a_tool_chain_that_cannot_compile_a_kernel_is_named_before_any_work():
    """:func:`compile_problem` runs a one-line kernel (here on the simulator: it runs) and turns
    a tool chain's failure into one line (as numba-cuda 0.30.4 failed beside NumPy 2.5)."""
    import types

    from dptune.engine._cuda import compile_problem, cuda

    assert compile_problem(cuda()) is None

    def broken_jit(fn):
        raise AttributeError("module 'numpy' has no attribute 'row_stack'")

    why = compile_problem(types.SimpleNamespace(jit=broken_jit))
    assert why.startswith("numba.cuda cannot compile a kernel here (AttributeError: module "
                          "'numpy' has no attribute 'row_stack')")
    assert "\n" not in why
