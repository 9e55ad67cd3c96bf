"""The numba kernels a sweep calls, compiled once before its first unit.

The built-in models (``userknn``, ``itemknn``, ``bpr-mf``) and the evaluation run numba kernels
compiled with ``cache=True``: the first run on a machine compiles them (tens of seconds) and
writes the machine code to numba's on-disk cache, every later run loads it (well under a
second). Left to the worker processes, that first compilation happens inside the first units,
in every worker at once, and the progress bar's ETA takes it for the cost of a unit (a unit
that took 48 s instead of 2 projected 25 minutes for a 90-second quickstart). Here the parent
process runs each built-in model of the experiment once on a tiny synthetic fold, through the
same calls a unit makes (:func:`dptune.models.get_family` and
:func:`dptune.engine.evaluate_on`), so that the kernels are compiled, or loaded, with the
argument types the units use; the workers then load them from the cache, and the progress bar
starts its clock after this.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from dptune.config import Experiment

__all__ = ["warm_kernels", "KERNEL_CONFIGS", "KERNEL_SOURCES", "cold_kernels"]

#: The configurations each built-in model is warmed with: the smallest that reach every kernel
#: (two ``k`` so that the KNN models also add a band of neighbours to the scores of a smaller
#: ``k``); the values do not change the kernels' argument types.
KERNEL_CONFIGS: dict[str, list[dict]] = {
    "userknn": [{"k": 2}, {"k": 4}],
    "itemknn": [{"k": 2}, {"k": 4}],
    "bpr-mf": [{"factors": 4, "iterations": 1, "learning_rate": 0.05, "user_reg": 0.0025,
                "item_reg": 0.00025}],
}

_USERS, _ITEMS, _PER_USER = 24, 80, 12

#: The source files of the cached numba kernels a run calls (a name is cold while any of its files
#: is), by the names the cost model prices
#: their first compilation under (:data:`dptune.sweeper._cost.OVERHEAD_COSTS`), relative to the
#: package: the evaluation's, the KNN models' (both share them), BPR-MF's and the analysis's.
KERNEL_SOURCES: dict[str, tuple[str, ...]] = {
    "evaluation": ("metrics.py",),
    "knn": ("models/_knn.py",),
    "bpr": ("models/_bpr.py",),
    "analysis": ("analysis/dp/bootstrap.py", "analysis/dp/paired_tests.py"),
}

_KERNEL_OF_TYPE = {"userknn": "knn", "itemknn": "knn", "bpr-mf": "bpr"}


def _tiny_fold() -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """A seeded fold of the types :func:`dptune.sweeper._prepare.prepare` gives (``float32``
    CSR matrices with ``int32`` indices, ``int32`` user codes): training and relevant items."""
    rng = np.random.default_rng(0)
    items = np.stack([rng.choice(_ITEMS, _PER_USER + 2, replace=False) for _ in range(_USERS)])

    def matrix(cols: np.ndarray) -> sp.csr_matrix:
        data = np.ones(cols.size, dtype=np.float32)
        r = np.repeat(np.arange(_USERS), cols.shape[1])
        return sp.csr_matrix((data, (r, cols.ravel())), shape=(_USERS, _ITEMS), dtype=np.float32)

    return matrix(items[:, :_PER_USER]), matrix(items[:, _PER_USER:]), np.arange(_USERS, dtype=np.int32)


def kernel_types(exp: Experiment) -> list[str]:
    """The built-in model types of the experiment whose kernels run on this machine's CPU (none
    when the sweep trains on a device: its kernels are not numba CPU kernels)."""
    if exp.sweep.device != "cpu":
        return []
    types = []
    for a in exp.algorithms:
        if a.type in KERNEL_CONFIGS and a.type not in types:
            types.append(a.type)
    return types


def _cached(source: Path) -> bool:
    """Whether numba's on-disk cache holds kernels of ``source``: an index file of that module
    where numba looks for it (``NUMBA_CACHE_DIR``, the ``__pycache__`` beside the source, the
    user-wide cache: numba's own locators, first that applies). Any failure to tell counts as
    cached (nothing is added to a projection)."""
    try:
        from numba.core.caching import CacheImpl

        for locator in CacheImpl._locator_classes:
            found = locator.from_function(_cached, str(source))
            if found is not None:
                return any(Path(found.get_cache_path()).glob(f"{source.stem}.*.nbi"))
    except Exception:  # noqa: BLE001 - numba internals differ between versions
        return True
    return True


def cold_kernels(exp: Experiment) -> list[str]:
    """Names of :data:`KERNEL_SOURCES` that a run of ``exp`` calls and that numba's cache does
    not hold yet: their first compilation is part of this run's time (the cost model prices
    it). The analysis's kernels always run; a model's only when it trains on this CPU."""
    root = Path(__file__).resolve().parents[1]  # the dptune package
    types = kernel_types(exp)
    names = (["evaluation"] if types else []) + sorted({_KERNEL_OF_TYPE[t] for t in types})
    names.append("analysis")
    return [n for n in names if not all(_cached(root / f) for f in KERNEL_SOURCES[n])]


def warm_kernels(exp: Experiment) -> list[str]:
    """Compile (first run) or load (later runs) the kernels of the experiment's built-in models
    and of the evaluation, in this process; returns the model types warmed.

    Nothing is written but numba's cache. A failure here is left to the units, which report it
    with the algorithm, configuration and fold it concerns.
    """
    from dptune.engine import evaluate_on, family_on
    from dptune.metrics import novelty_vectors
    from dptune.models import get_family

    types = kernel_types(exp)
    if not types:
        return []
    train, relevant, users = _tiny_fold()
    efd, epc = novelty_vectors(train)
    cutoffs = tuple(int(c) for c in exp.evaluation.cutoffs)
    aware = exp.evaluation.novelty == "relevance-aware"
    for t in types:
        try:
            for _, model in family_on(get_family(t), None).fit_unit(train, KERNEL_CONFIGS[t], 0):
                evaluate_on(None, model, users, train, relevant, cutoffs, efd, epc,
                            block=exp.evaluation.user_block, relevance_aware=aware)
        except Exception:  # noqa: BLE001 - the units report it, with its context
            continue
    return types
