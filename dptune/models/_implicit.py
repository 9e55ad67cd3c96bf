"""Adapter for the ``implicit`` library (Ben Frederickson): fast CPU ALS, BPR, LMF and item-item
nearest neighbours, the baselines many researchers already run.

``implicit`` is optional (``pip install implicit``, wheels for Linux, macOS and Windows). Its CPU
classes are used directly (never the GPU dispatchers, so results do not depend on a CUDA build).
Scoring is one matrix product per block of users, no per-user call:

* factor models (``als``, ``bpr``, ``lmf``): ``S = P[B] @ Q^T`` with ``P = user_factors`` and
  ``Q = item_factors`` (implicit's BPR and LMF fold the item bias into an extra factor column,
  with a matching column of ones in ``P``);
* nearest neighbours (``cosine``, ``bm25``, ``tfidf``): ``S = X[B] @ W`` with ``X`` the training
  matrix and ``W`` the item-item similarity implicit keeps (the formula of its ``recommend``).

The factor models are seeded with ``random_state = seed`` and run with ``num_threads = 1`` unless
the grid sets ``num_threads`` (implicit's multi-threaded BPR/LMF updates race, so a seed alone
does not reproduce them; the sweep parallelises over units instead).
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import scipy.sparse as sp

from dptune.errors import input_error
from dptune.models._base import _as_users, _binary_csr

__all__ = ["IMPLICIT_MODELS", "ImplicitModel", "implicit_class"]

#: ``implicit:<name>`` -> (module, class, stochastic).
IMPLICIT_MODELS: dict[str, tuple[str, str, bool]] = {
    "als": ("implicit.cpu.als", "AlternatingLeastSquares", True),
    "bpr": ("implicit.cpu.bpr", "BayesianPersonalizedRanking", True),
    "lmf": ("implicit.cpu.lmf", "LogisticMatrixFactorization", True),
    "cosine": ("implicit.nearest_neighbours", "CosineRecommender", False),
    "bm25": ("implicit.nearest_neighbours", "BM25Recommender", False),
    "tfidf": ("implicit.nearest_neighbours", "TFIDFRecommender", False),
}


def implicit_class(name: str) -> tuple[type, bool]:
    """The implicit CPU class of ``implicit:<name>`` and whether it is stochastic."""
    if name not in IMPLICIT_MODELS:
        raise input_error("algorithm", "type", f"implicit:{name} is not one of "
                          + ", ".join(f"implicit:{n}" for n in IMPLICIT_MODELS))
    module, cls, stochastic = IMPLICIT_MODELS[name]
    try:
        return getattr(importlib.import_module(module), cls), stochastic
    except ImportError as err:
        raise input_error("algorithm", "type", f"implicit:{name} needs the implicit library "
                          f"(pip install implicit): {err}") from None


class ImplicitModel:
    """An ``implicit`` model fitted on the binarised matrix and scored a block at a time.

    ``params`` are the class's keyword arguments (grid keys); see the module docstring for the
    seed, the threads and the two scoring formulas.
    """

    def __init__(self, name: str, params: dict | None = None, seed: int = 0) -> None:
        self.name = name
        self.params = params
        self.seed = seed

    def fit(self, X: sp.csr_matrix) -> ImplicitModel:
        """Build the implicit model and fit it on ``X`` (users x items, implicit >= 0.5 layout)."""
        cls, stochastic = implicit_class(self.name)
        params = dict(self.params or {})
        params.setdefault("num_threads", 1)
        if stochastic:
            params["random_state"] = int(self.seed)
        from threadpoolctl import threadpool_limits

        self.X_ = _binary_csr(X)
        # implicit asks for single-threaded BLAS (it warns otherwise); its nearest-neighbour
        # models convert their own weighted matrix to CSR with a warning that is not ours.
        with threadpool_limits(1, "blas"), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Method expects CSR input")
            try:
                self.model_ = cls(**params)
            except TypeError as err:
                raise input_error("algorithm", f"implicit:{self.name}",
                                  f"bad parameters: {err}") from None
            self.model_.fit(self.X_, show_progress=False)
        sim = getattr(self.model_, "similarity", None)
        self.similarity_ = sp.csr_matrix(sim) if sim is not None else None
        return self

    def score(self, users: np.ndarray) -> np.ndarray:
        """Dense float32 ``(len(users), n_items)`` scores (module docstring)."""
        users = _as_users(users)
        if self.similarity_ is not None:
            return np.asarray((self.X_[users] @ self.similarity_).todense(), dtype=np.float32)
        P = np.asarray(self.model_.user_factors)
        Q = np.asarray(self.model_.item_factors)
        return np.asarray(P[users] @ Q.T, dtype=np.float32)

    @property
    def n_items(self) -> int:
        """Number of items of the training matrix."""
        return int(self.X_.shape[1])
