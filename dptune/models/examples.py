"""Example models written with numpy only: what a model of your own needs to be swept by dptune.

A model is any class with ``fit(X)`` and ``score(users)``:

* ``fit(X)`` gets the binarised training matrix, a ``scipy.sparse.csr_matrix`` of shape
  ``(n_users, n_items)`` with 1.0 per training interaction;
* ``score(users)`` gets a 1-D array of user codes (a block of users, never one at a time) and
  returns a dense ``(len(users), n_items)`` array, higher is better. dptune masks the user's
  training items, ranks the rest and computes the metrics itself.

The constructor's keyword arguments are the grid's hyperparameters; a ``seed`` keyword receives
the seed of the unit (and makes the model *stochastic*, i.e. it gets a noise floor, unless the
class says ``stochastic = False``). Sweep them with ``type = "python:dptune.models.examples:EASE"``
(see ``experiments/own-model.toml``) or register them: ``dptune.models.register("ease", EASE)``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["EASE", "Popularity", "PureSVD"]


class Popularity:
    """Most popular items first: ``score(u, i) = |{v : x_vi = 1}|``, the same for every user.

    No hyperparameter (an experiment lists it without a ``grid``); deterministic.
    """

    def fit(self, X: sp.csr_matrix) -> Popularity:
        """Count the training interactions of every item."""
        self.counts_ = np.asarray(X.sum(axis=0), dtype=np.float32).ravel()
        return self

    def score(self, users: np.ndarray) -> np.ndarray:
        """The item counts, repeated for each user of the block."""
        return np.broadcast_to(self.counts_, (len(users), self.counts_.size))


class EASE:
    """EASE^R (Steck, WWW 2019): a closed-form item-item linear autoencoder.

    ``B = argmin ||X - X B||^2 + lamb ||B||^2`` subject to ``diag(B) = 0``; with
    ``P = (X^T X + lamb I)^-1`` the solution is ``B_ij = -P_ij / P_jj`` (``B_jj = 0``), and
    ``score(u) = X_u B``. Deterministic: no seed, no noise floor. Memory ``n_items^2`` floats.
    """

    stochastic = False

    def __init__(self, lamb: float = 500.0) -> None:
        self.lamb = lamb

    def fit(self, X: sp.csr_matrix) -> EASE:
        """Solve for ``B`` (one dense ``n_items x n_items`` inverse, float64)."""
        if not float(self.lamb) > 0:
            raise ValueError(f"lamb must be > 0, got {self.lamb!r}")
        G = np.asarray((X.T @ X).todense(), dtype=np.float64)
        G[np.diag_indices_from(G)] += float(self.lamb)
        P = np.linalg.inv(G)
        B = P / -np.diag(P)
        B[np.diag_indices_from(B)] = 0.0
        self.X_ = sp.csr_matrix(X)
        self.B_ = B.astype(np.float32)
        return self

    def score(self, users: np.ndarray) -> np.ndarray:
        """``X[users] @ B`` for the block of users."""
        return np.asarray(self.X_[users] @ self.B_)


class PureSVD:
    """PureSVD (Cremonesi et al., RecSys 2010): ``X ~ U S V^T`` truncated to ``factors``,
    ``score(u) = X_u V V^T``.

    Computed by ARPACK (``scipy.sparse.linalg.svds``) from a random start vector drawn with
    ``seed``: the constructor takes a seed, so the model is stochastic and gets a noise floor
    (ARPACK converges to the same subspace up to numerical noise, which the floor measures).
    """

    def __init__(self, factors: int = 50, seed: int = 0) -> None:
        self.factors = factors
        self.seed = seed

    def fit(self, X: sp.csr_matrix) -> PureSVD:
        """Truncated SVD of ``X`` with ``factors`` singular triplets."""
        from scipy.sparse.linalg import svds

        k = int(self.factors)
        if not 1 <= k < min(X.shape):
            raise ValueError(f"factors must be in [1, {min(X.shape) - 1}], got {self.factors!r}")
        v0 = np.random.default_rng(self.seed).standard_normal(min(X.shape))
        _, _, vt = svds(sp.csr_matrix(X, dtype=np.float64), k=k, v0=v0)
        self.X_ = sp.csr_matrix(X)
        self.V_ = np.ascontiguousarray(vt.T, dtype=np.float32)
        return self

    def score(self, users: np.ndarray) -> np.ndarray:
        """``(X[users] V) V^T``: project the user's row on the item factors and back."""
        return np.asarray(self.X_[users] @ self.V_) @ self.V_.T
