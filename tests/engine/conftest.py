"""The first fold of the tiny experiment (ml-latest-small, 2 folds), shared by the engine tests."""

from __future__ import annotations

import pytest
from conftest import write_experiment


@pytest.fixture(scope="session")
def tiny_fold(tmp_path_factory):
    """Training / relevance matrices, users and novelty vectors of the tiny experiment's fold 1."""
    from dptune.config import load_experiment
    from dptune.sweeper._prepare import prepare

    exp = load_experiment(write_experiment(tmp_path_factory.mktemp("engine") / "exp"))
    prep = prepare(exp)
    return prep.fold(prep.fold_names[0])


def _torch_cpu():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (the gpu extra)")
    xp = pytest.importorskip("array_api_compat.torch",
                             reason="array-api-compat is not installed (the gpu extra)")
    from dptune.engine import Engine

    return Engine(xp=xp, device=torch.device("cpu"), kind="torch")


def _numpy():
    from dptune.engine import numpy_engine

    return numpy_engine()


def _cuda():
    from dptune.engine import engine_for
    from dptune.errors import DptuneError

    try:
        return engine_for("cuda")
    except DptuneError as err:
        pytest.skip(str(err))


@pytest.fixture(params=["numpy", "torch-cpu", "cuda"])
def eng(request):
    """The array engine: NumPy on the host always; PyTorch on its CPU device where the gpu
    extra is installed (the code a CUDA device runs, on another device); the CUDA engine
    where a device is visible."""
    return {"numpy": _numpy, "torch-cpu": _torch_cpu, "cuda": _cuda}[request.param]()
