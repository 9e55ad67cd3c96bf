"""Shared by the engine tests: the kernels' target, small data, and the array engines.

The engine's kernels run on numba's CUDA simulator here (switched on before ``numba.cuda`` is
first imported) unless ``NUMBA_ENABLE_CUDASIM=0`` is set, as on a machine with a device where
the same tests then run the kernels on it. The simulator runs each device thread as a Python
thread, so the data given to kernels is small; :func:`simulator_speed` makes its barriers
cheap (a short interpreter switch interval) and its KNN blocks narrow.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import write_experiment

from dptune.engine import _cuda

_cuda.use_simulator()


@pytest.fixture(autouse=True)
def simulator_speed(monkeypatch):
    """On the simulator: a 50 us switch interval (a barrier waits for every thread of a block
    to be scheduled) and 4 threads per KNN row block (instead of 128 Python threads)."""
    if not _cuda.simulated():
        yield
        return
    from dptune.engine import _knn

    monkeypatch.setattr(_knn, "THREADS", 4)
    old = sys.getswitchinterval()
    sys.setswitchinterval(5e-5)
    yield
    sys.setswitchinterval(old)


@pytest.fixture(scope="session")
def planted():
    """The maker of small data with a planted structure (:func:`_planted`)."""
    return _planted


def _planted(seed: int = 0, n_users: int = 48, n_items: int = 40, groups: int = 4,
             n_train: int = 6, n_rel: int = 3) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Training and relevance matrices with a planted structure: user ``u`` belongs to group
    ``u mod groups`` and has ``n_train`` training and ``n_rel`` relevant items among its
    group's ``n_items / groups`` items, plus one random training item (about 330 training
    interactions by default). A trained BPR-MF finds the groups; a random one does not."""
    rng = np.random.default_rng(seed)
    per = n_items // groups
    tr = np.zeros((n_users, n_items), dtype=bool)
    rel = np.zeros_like(tr)
    for u in range(n_users):
        g = u % groups
        pick = rng.choice(np.arange(g * per, (g + 1) * per), n_train + n_rel, replace=False)
        tr[u, pick[:n_train]] = True
        rel[u, pick[n_train:]] = True
        other = int(rng.integers(n_items))
        tr[u, other] |= not rel[u, other]
    return sp.csr_matrix(tr.astype(np.float32)), sp.csr_matrix(rel.astype(np.float32))


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


def _cuda_engine():
    from dptune.engine import engine_for
    from dptune.errors import DptuneError

    try:
        return engine_for("cuda")
    except DptuneError as err:
        pytest.skip(str(err))


@pytest.fixture(params=["numpy", "torch-cpu", "cuda"])
def eng(request):
    """The array engine: NumPy on the host always; PyTorch on its CPU device where the gpu
    extra is installed (the array code a CUDA device runs, on another device); the CUDA engine
    where a device is visible to PyTorch / CuPy and numba (not on the simulator). The kernels
    run on the simulator for the host engines, on the device where there is one."""
    return {"numpy": _numpy, "torch-cpu": _torch_cpu, "cuda": _cuda_engine}[request.param]()
