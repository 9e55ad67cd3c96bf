"""Generic cornac adapter (``CornacModel``): any ``cornac.models`` class swept like a dptune model.

The model is fitted on a cornac ``Dataset`` built from ``X``'s ``(user, item, 1.0)`` triples and
scored for every item with our item codes. Scoring is *batched*: cornac's own API scores one user
per call (``model.score(u)``), a Python loop over users that also re-reads the model's item side
per user. Where the model exposes its scoring as a matrix product, :func:`batch_scorer` computes a
whole block of users at once:

* ``EASE``: ``S = U[B] @ W`` (cornac's ``score(u) = U[u] @ W``, ``U`` the binary training matrix,
  ``W`` the item-item weights);
* ``MostPop``: ``S[b] = pop`` for every user of the block;
* any model with cornac's ANN interface and the dot-product measure (BPR, MF, WMF, ...):
  ``S = P[B] @ Q^T`` with ``P = get_user_vectors()``, ``Q = get_item_vectors()``.

A batch path is used only after it reproduced ``model.score(u)`` on sample users at fit time
(``np.allclose``, relative tolerance 1e-4); otherwise, and for every other model, the adapter falls
back to the per-user call. The evaluation engine (:func:`dptune.metrics.evaluate`) asks for one
block of users at a time, so memory stays bounded at ``block x n_items`` either way.

Which cornac models are *stochastic* (get a noise floor): every class except those known to train
deterministically (:data:`DETERMINISTIC_CORNAC`: closed-form, counting or similarity models).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from dptune.errors import input_error
from dptune.models._base import _as_users, _binary_csr

__all__ = ["CornacModel", "DETERMINISTIC_CORNAC", "batch_scorer", "cornac_class"]

#: cornac classes whose training involves no random number: no noise floor is trained for them.
DETERMINISTIC_CORNAC = frozenset(
    {"EASE", "MostPop", "GlobalAvg", "ItemKNN", "UserKNN", "GPTop", "SPop", "UPCF", "TIFUKNN"}
)

# Users whose per-user scores check a batch path at fit time.
_CHECK_USERS = 4


def cornac_class(name: str, source: str = "algorithm") -> type:
    """The class ``cornac.models.<name>``; anything else is an error naming ``type``."""
    try:
        import cornac.models
    except ImportError:  # pragma: no cover - cornac is a dependency
        raise input_error(source, "type", "cornac is not installed (pip install cornac)") from None
    cls = getattr(cornac.models, name, None)
    if not (isinstance(cls, type) and name[:1].isupper()):
        raise input_error(source, "type", f"cornac has no model class {name!r}")
    return cls


_cornac_class = cornac_class  # the name used before the split of the models module


def _ease(model: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    U, W = getattr(model, "U", None), getattr(model, "B", None)
    if U is None or W is None:
        return None
    U = sp.csr_matrix(U)
    return lambda inner: np.asarray(U[inner] @ W)


def _most_pop(model: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    pop = getattr(model, "item_pop", None)
    if pop is None:
        return None
    pop = np.asarray(pop).ravel()
    return lambda inner: np.broadcast_to(pop, (len(inner), pop.size))


def _ann_dot(model: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    if not getattr(model, "_ann_supported", False):
        return None
    from cornac.models.recommender import MEASURE_DOT

    try:
        if model.get_vector_measure() != MEASURE_DOT:
            return None
        P = np.asarray(model.get_user_vectors())
        Q = np.asarray(model.get_item_vectors())
    except (NotImplementedError, AttributeError, TypeError, ValueError):
        return None
    if P.ndim != 2 or Q.ndim != 2 or P.shape[1] != Q.shape[1]:
        return None
    QT = np.ascontiguousarray(Q.T)
    return lambda inner: P[inner] @ QT


_SPECIFIC = {"EASE": _ease, "MostPop": _most_pop}


def batch_scorer(model: Any, n_users: int) -> Callable[[np.ndarray], np.ndarray] | None:
    """A function scoring a block of cornac user indices at once, or None (per-user fallback).

    Candidates: the class-specific path (EASE, MostPop), then the ANN dot product. The first one
    whose scores match ``model.score(u)`` for up to four users (evenly spaced over the users)
    wins; a path that fails or disagrees is never used.
    """
    sample = np.unique(np.linspace(0, max(n_users - 1, 0), _CHECK_USERS).astype(np.int64))
    if n_users == 0:
        return None
    try:
        expected = np.vstack([np.asarray(model.score(int(u)), dtype=np.float64).ravel()
                              for u in sample])
    except Exception:  # noqa: BLE001 - a model that cannot score its own users: per-user path
        return None
    for make in (_SPECIFIC.get(type(model).__name__), _ann_dot):
        if make is None:
            continue
        try:
            fn = make(model)
            if fn is None:
                continue
            got = np.asarray(fn(sample), dtype=np.float64)
        except Exception:  # noqa: BLE001 - a candidate that fails is simply not used
            continue
        scale = float(np.max(np.abs(expected))) if expected.size else 0.0
        if got.shape == expected.shape and np.allclose(got, expected, rtol=1e-4,
                                                        atol=1e-6 * max(scale, 1e-12)):
            return fn
    return None


class CornacModel:
    """Adapter that lets any ``cornac.models`` recommender be swept like a dptune model.

    ``fit(X)`` builds ``getattr(cornac.models, name)(**params, seed=seed)`` (``seed`` only when
    the class accepts it and ``params`` does not set it; ``verbose=False`` likewise) and fits it
    on a cornac ``Dataset`` made of ``X``'s ``(user, item, 1.0)`` triples. cornac numbers users
    and items by first appearance; ``user_index_`` / ``item_index_`` map our codes to cornac's
    (-1 = unknown to cornac, i.e. no training interaction). ``score(users)`` asks the model for
    every known item of each user, a block at a time where :func:`batch_scorer` found a matrix
    form (``batched_`` says whether it did): items unknown to cornac get ``-inf``, users unknown
    to cornac get 0 on every known item.
    """

    def __init__(self, name: str, params: dict | None = None, seed: int = 0) -> None:
        self.name = name
        self.params = params
        self.seed = seed

    def _build(self) -> Any:
        cls = cornac_class(self.name)
        params = dict(self.params or {})
        sig = inspect.signature(cls.__init__).parameters
        if "seed" in sig and "seed" not in params:
            params["seed"] = self.seed
        if "verbose" in sig and "verbose" not in params:
            params["verbose"] = False
        try:
            return cls(**params)
        except TypeError as err:
            raise input_error("algorithm", self.name, f"bad parameters: {err}") from None

    def fit(self, X: sp.csr_matrix) -> CornacModel:
        """Build the cornac model, fit it on ``X``'s interactions, find its batch scorer."""
        from cornac.data import Dataset

        X = _binary_csr(X)
        coo = X.tocoo()
        if coo.nnz == 0:
            raise ValueError("CornacModel needs at least one training interaction")
        triples = list(zip(coo.row.tolist(), coo.col.tolist(), [1.0] * coo.nnz, strict=True))
        data = Dataset.from_uir(triples, seed=self.seed)
        self.model_ = self._build()
        self.model_.fit(data)
        self.user_index_ = _index(data.uid_map, X.shape[0])
        self.item_index_ = _index(data.iid_map, X.shape[1])
        self.known_items_ = np.flatnonzero(self.item_index_ >= 0)
        self._inner_items = self.item_index_[self.known_items_]
        self.n_items_ = X.shape[1]
        self._batch = batch_scorer(self.model_, len(data.uid_map))
        self.batched_ = self._batch is not None
        return self

    def score(self, users: np.ndarray) -> np.ndarray:
        """Dense float32 ``(len(users), n_items)`` in our item codes (see class docstring)."""
        users = _as_users(users)
        out = np.full((len(users), self.n_items_), -np.inf, dtype=np.float32)
        out[:, self.known_items_] = 0.0
        inner = self.user_index_[users]
        rows = np.flatnonzero(inner >= 0)
        if rows.size == 0:
            return out
        if self._batch is not None:
            s = np.asarray(self._batch(inner[rows]), dtype=np.float32)
            out[np.ix_(rows, self.known_items_)] = s[:, self._inner_items]
            return out
        for row in rows:  # fallback: cornac's own one-user API
            s = np.asarray(self.model_.score(int(inner[row])), dtype=np.float32).ravel()
            out[row, self.known_items_] = s[self._inner_items]
        return out


def _index(id_map: dict, n: int) -> np.ndarray:
    """Our code -> cornac's inner index (-1 where cornac never saw the code)."""
    index = np.full(n, -1, dtype=np.int64)
    if id_map:
        codes = np.fromiter((int(c) for c in id_map), dtype=np.int64, count=len(id_map))
        inner = np.fromiter(id_map.values(), dtype=np.int64, count=len(id_map))
        index[codes] = inner
    return index
