"""Models: the recommenders a sweep trains and the families that group them into units.

Built in: ``UserKNN`` / ``ItemKNN`` (:mod:`._knn`), ``BPRMF`` (:mod:`._bpr`). Adapters:
any cornac model (:mod:`._cornac`), the ``implicit`` library (:mod:`._implicit`) and any Python
model with ``fit(X)`` and ``score(users)`` (:mod:`._adapters`, :func:`register`). Every family
says whether its model is ``stochastic`` (only stochastic models get a noise floor).

The names are loaded on first use (PEP 562), so that reading an experiment file, which checks
model types, does not compile or import the numba kernels.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "Recommender": "_base",
    "Family": "_base",
    "UserKNN": "_knn",
    "ItemKNN": "_knn",
    "BPRMF": "_bpr",
    "CornacModel": "_cornac",
    "DETERMINISTIC_CORNAC": "_cornac",
    "ImplicitModel": "_implicit",
    "IMPLICIT_MODELS": "_implicit",
    "SignatureFamily": "_adapters",
    "CornacFamily": "_adapters",
    "ImplicitFamily": "_adapters",
    "PythonFamily": "_adapters",
    "register": "_adapters",
    "is_known_type": "_adapters",
    "KNNFamily": "_families",
    "BPRFamily": "_families",
    "get_family": "_families",
    "is_stochastic": "_families",
    "FAMILY_TYPES": "_families",
}

__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'dptune.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"dptune.models.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
