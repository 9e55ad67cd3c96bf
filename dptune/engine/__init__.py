"""The optional device engine: BPR-MF training and, for every model, scoring, top-N and the
per-user metrics of a block of users, on a CUDA device.

Block-wide steps are array code (the Python array API: NumPy, PyTorch, CuPy); the long chains
of tiny steps (a BPR-MF epoch, the KNN score sums) are numba.cuda kernels, one launch per epoch
or per block and band (:mod:`dptune.engine._cuda` counts them in :data:`LAUNCHES`), run by
numba's CUDA simulator where there is no device (the tests).

Selected by ``[sweep] device = "cuda"`` (or ``dptune run --device cuda``); the default
``cpu`` runs the compiled host engine (:func:`dptune.metrics.evaluate`,
:class:`dptune.models.BPRMF`) and needs nothing from here. The device route needs PyTorch or
CuPy plus ``array-api-compat`` (``pip install -e ".[gpu]"``) and numba's CUDA target (a CUDA
driver and libNVVM); the same code runs with NumPy on the host and the kernels on numba's
simulator, which is how the tests check it against the host engine.
"""

from __future__ import annotations

from dptune.engine._backend import DEVICES, Engine, engine_for, numpy_engine
from dptune.engine._bpr import EngineBPRFamily, EngineBPRMF, Interactions, Layout
from dptune.engine._cuda import LAUNCHES
from dptune.engine._evaluate import evaluate_on, metrics_of_lists, top_n_on
from dptune.models._base import Family

__all__ = [
    "DEVICES", "LAUNCHES", "Engine", "EngineBPRFamily", "EngineBPRMF", "Interactions", "Layout",
    "engine_for", "evaluate_on", "family_on", "metrics_of_lists", "numpy_engine", "top_n_on",
]


def family_on(family: Family, eng: Engine | None) -> Family:
    """The family that trains on ``eng``: BPR-MF moves to the engine; every other family (and
    every family when ``eng`` is None) trains on the host as before and only its scores are
    evaluated on the engine."""
    if eng is not None and family.type == "bpr-mf":
        return EngineBPRFamily(eng)
    return family
