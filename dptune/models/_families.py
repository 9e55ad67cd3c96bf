"""Families of the built-in models: how the sweep groups configurations into *units*.

KNN - one unit with every ``k`` (one similarity computation, ``with_k`` serves the others);
BPR-MF - one unit per ``(factors, learning_rate, user_reg, item_reg)`` trained once through the
sorted ``iterations`` values with a snapshot at each. :func:`get_family` also dispatches to the
adapter families of :mod:`dptune.models._adapters` (cornac, implicit, any Python model): one unit
per configuration.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from dptune.errors import INT_MAX, DptuneError, input_error, plain
from dptune.models._adapters import (
    CornacFamily,
    ImplicitFamily,
    PythonFamily,
    is_known_type,
    registered_family,
)
from dptune.models._base import Family, Recommender, _binary_csr
from dptune.models._bpr import BPRMF
from dptune.models._cornac import DETERMINISTIC_CORNAC
from dptune.models._implicit import IMPLICIT_MODELS
from dptune.models._knn import ItemKNN, UserKNN, _GrowingK, _KView

__all__ = [
    "KNNFamily", "BPRFamily", "get_family", "is_known_type", "is_stochastic", "FAMILY_TYPES",
]

#: Algorithm types understood by :func:`get_family` (plus names given to ``register``).
FAMILY_TYPES = (
    "userknn", "itemknn", "bpr-mf", "cornac:<ClassName>", "implicit:<als|bpr|...>",
    "python:<package.module>:<Class>",
)


def _int_value(cfg: dict, key: str, source: str, lo: int) -> int:
    """``cfg[key]`` as an ``int`` from ``lo`` to :data:`INT_MAX`: an integer (Python or
    numpy, not a bool) or an integral float (``10.0`` is 10); else one error naming ``source``
    and ``key``."""
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or (
        isinstance(v, (float, np.floating)) and not float(v).is_integer()
    ) or v < lo:
        raise input_error(source, key, f"must be an integer >= {lo}, got {plain(v)}")
    if int(v) > INT_MAX:
        raise input_error(source, key, f"must be an integer from {lo} to {INT_MAX:,} (int64's "
                          f"largest), got {plain(v)}")
    return int(v)


#: The largest hyperparameter value a float32 model can hold (BPR-MF trains in float32: a
#: larger learning rate or regularisation is inf there, and training ends in NaN after work).
_FLOAT32_MAX = float(np.finfo(np.float32).max)
#: The smallest positive float32 (a subnormal): a positive value below half of it is 0 there.
_FLOAT32_TINY = float(np.finfo(np.float32).smallest_subnormal)


def _float_value(cfg: dict, key: str, source: str, positive: bool = False) -> float:
    """``cfg[key]`` as a finite float >= 0 (> 0 with ``positive``: a learning rate of 0 trains
    nothing, nor does one that is 0 in float32) that float32 holds; else one error naming
    ``source`` and ``key``."""
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not (
        math.isfinite(v) and (v > 0 if positive else v >= 0)
    ):
        bound = "> 0" if positive else ">= 0"
        raise input_error(source, key, f"must be a finite number {bound}, got {plain(v)}")
    if v > _FLOAT32_MAX:
        raise input_error(source, key, f"must be at most {_FLOAT32_MAX:.3g} (the model trains in "
                          f"float32), got {plain(v)}")
    if positive and np.float32(v) == 0:
        raise input_error(source, key, f"must be at least {_FLOAT32_TINY:.3g} (the model trains "
                          f"in float32, where {plain(v)} is 0)")
    return float(v)


class KNNFamily(Family):
    """UserKNN / ItemKNN: one unit with every ``k``; the similarity is computed once (max ``k``)
    and every configuration is served by ``with_k``. ``seed`` is unused (deterministic)."""

    hyperparameters = ("k",)
    stochastic = False  # type: ignore[assignment]

    def __init__(self, algorithm_type: str) -> None:
        self.type = algorithm_type
        self.model_class = UserKNN if algorithm_type == "userknn" else ItemKNN

    def _normalise(self, cfg: dict, source: str) -> dict:
        cfg["k"] = _int_value(cfg, "k", source, 1)
        return cfg

    def units(self, configs: list[dict]) -> list[list[int]]:
        """One unit holding every configuration (empty list when there are none)."""
        self.validate(configs)
        return [list(range(len(configs)))] if configs else []

    def fit_unit(
        self, X: sp.csr_matrix, configs: list[dict], seed: int
    ) -> Iterator[tuple[int, Recommender]]:
        """Fit once with the largest ``k``; yield a model for each config in increasing ``k``.

        Scores grow incrementally along ``k`` (:class:`_GrowingK`): evaluating every k of the
        grid costs one top-``kmax`` scoring, not one scoring per k. A yielded model is valid
        until the next one is requested (it shares the partial sums).
        """
        configs = self.validate(configs)
        if not configs:
            return
        kmax = max(c["k"] for c in configs)
        growing = _GrowingK(self.model_class(kmax).fit(X))
        for idx in sorted(range(len(configs)), key=lambda i: (configs[i]["k"], i)):
            yield idx, _KView(growing, configs[idx]["k"])


class BPRFamily(Family):
    """BPR-MF: one unit per ``(factors, learning_rate, user_reg, item_reg)``; each unit is one
    training run through the sorted ``iterations`` values with a snapshot at each.

    The yielded model is the *same* object for every snapshot of a unit, trained further when
    the next item is requested; its ``epochs`` attribute is set to the snapshot's iterations.
    """

    type = "bpr-mf"
    hyperparameters = ("factors", "iterations", "learning_rate", "user_reg", "item_reg")
    derived_example = {"user_reg": ("learning_rate", 0.05), "item_reg": ("learning_rate", 0.005)}
    memory_grows_with = "factors"

    def _normalise(self, cfg: dict, source: str) -> dict:
        cfg["factors"] = _int_value(cfg, "factors", source, 1)
        cfg["iterations"] = _int_value(cfg, "iterations", source, 0)
        cfg["learning_rate"] = _float_value(cfg, "learning_rate", source, positive=True)
        for key in ("user_reg", "item_reg"):
            cfg[key] = _float_value(cfg, key, source)
        return cfg

    @staticmethod
    def _key(cfg: dict) -> tuple:
        return (cfg["factors"], cfg["learning_rate"], cfg["user_reg"], cfg["item_reg"])

    def memory_bytes(self, config: dict, n_users: int, n_items: int) -> float:
        """The float32 factor matrices: ``4 * factors * (n_users + n_items)`` bytes (the
        biases and the kernel's per-step registers are negligible beside them)."""
        return 4.0 * float(config["factors"]) * (int(n_users) + int(n_items))

    def units(self, configs: list[dict]) -> list[list[int]]:
        """Indices grouped by ``(factors, learning_rate, user_reg, item_reg)``, first-seen order;
        within a unit sorted by ``iterations`` (stable)."""
        configs = self.validate(configs)
        groups: dict[tuple, list[int]] = {}
        for idx, cfg in enumerate(configs):
            groups.setdefault(self._key(cfg), []).append(idx)
        return [sorted(g, key=lambda i: configs[i]["iterations"]) for g in groups.values()]

    def fit_unit(
        self, X: sp.csr_matrix, configs: list[dict], seed: int
    ) -> Iterator[tuple[int, Recommender]]:
        """For each unit: initialise from ``seed``, train up to each sorted iterations value
        and yield the (mutable, shared) model there."""
        norm = self.validate(configs)
        X = _binary_csr(X)
        for unit in self.units(norm):
            f, lr, ureg, ireg = self._key(norm[unit[0]])
            model = BPRMF(f, lr, ureg, ireg, epochs=0, seed=seed).fit(X)
            for idx in unit:
                it = norm[idx]["iterations"]
                model.partial_fit(X, it - model.epochs_done_)
                model.epochs = it
                yield idx, model


def is_stochastic(algorithm_type: str) -> bool:
    """Whether a model type's training depends on its seed (only those get a noise floor).

    Decided without importing cornac or implicit: ``bpr-mf`` yes, the KNN models no, a cornac
    class unless it is in :data:`DETERMINISTIC_CORNAC`, an implicit model by its table entry;
    a Python model by its family (its ``stochastic`` attribute, else whether it takes a seed),
    and yes when the model cannot be imported here (the conservative answer).
    """
    t = str(algorithm_type).strip()
    if t in ("userknn", "itemknn"):
        return False
    if t == "bpr-mf":
        return True
    if t.startswith("cornac:"):
        return t[len("cornac:"):] not in DETERMINISTIC_CORNAC
    if t.startswith("implicit:"):
        return IMPLICIT_MODELS.get(t[len("implicit:"):], ("", "", True))[2]
    try:
        return get_family(t).stochastic
    except DptuneError:
        return True


def get_family(algorithm_type: str) -> Family:
    """The :class:`Family` of a model type (see :data:`FAMILY_TYPES`); anything else raises
    ``input_error("algorithm", "type", ...)``."""
    t = algorithm_type.strip() if isinstance(algorithm_type, str) else algorithm_type
    if t in ("userknn", "itemknn"):
        return KNNFamily(t)
    if t == "bpr-mf":
        return BPRFamily()
    if isinstance(t, str):
        registered = registered_family(t)
        if registered is not None:
            return registered
        for prefix, cls in (("cornac:", CornacFamily), ("implicit:", ImplicitFamily),
                            ("python:", PythonFamily)):
            if t.startswith(prefix) and len(t) > len(prefix):
                return cls(t[len(prefix):])
    raise input_error(
        "algorithm", "type",
        f"unknown algorithm type {algorithm_type!r} (expected one of: {', '.join(FAMILY_TYPES)})",
    )
