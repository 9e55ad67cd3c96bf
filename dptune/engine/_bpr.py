"""BPR-MF trained on an :class:`Engine` by mini-batch SGD, and its sweep family.

Why: the host kernel (:class:`dptune.models.BPRMF`) applies one SGD step after the other, which
no device can speed up. Here an epoch's ``nnz(X)`` triples are drawn up front and applied in
mini-batches of :data:`BATCH`: the gradients of a batch are computed from the same factors and
added with a scatter-add (repeated users or items get the sum of their steps), so one batch is
a few large array operations. The model, its updates and its regularisation are those of
:class:`~dptune.models.BPRMF` (same initialisation from the seed, same learning rate per
step); only the order of the updates differs, so the results are not bit-identical to the host
kernel but of the same quality (the tests compare P@10 and nDCG@10 over seeds).

Sampling runs on the engine too (no host work per epoch), seeded by ``(seed, epoch)`` only, so
training can be paused (``partial_fit``) without changing the result; each library has its own
random generator, so NumPy and PyTorch draw different (equally distributed) triples: positive ``(u, i)`` uniform over the interactions, negative ``j`` uniform over the
items ``u`` has not interacted with (redrawn until it is one); a user who has interacted with
every item contributes no step (counted in ``skipped_``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

from dptune.engine._backend import Engine
from dptune.models._base import Recommender, _as_users, _binary_csr
from dptune.models._bpr import BPRMF
from dptune.models._families import BPRFamily

__all__ = ["BATCH", "EngineBPRFamily", "EngineBPRMF", "Interactions", "sample_triples"]

#: Triples per mini-batch: large enough to fill a device, small against an epoch of a data
#: set with a million interactions, so few updates of one item coincide.
BATCH = 4096


class Interactions:
    """A binary training matrix on an engine, in the form the sampler reads: the user and item
    of every interaction, the sorted keys ``user * n_items + item`` and which users have
    interacted with every item."""

    def __init__(self, eng: Engine, X: sp.csr_matrix) -> None:
        xp = eng.xp
        counts = np.diff(X.indptr)
        users = np.repeat(np.arange(X.shape[0], dtype=np.int64), counts)
        self.shape = X.shape
        self.nnz = int(X.nnz)
        self.users = eng.put(users, dtype=xp.int64)
        self.items = eng.put(X.indices, dtype=xp.int64)
        self.keys = eng.put(users * X.shape[1] + X.indices, dtype=xp.int64)  # CSR order: sorted
        full = counts >= X.shape[1]
        self.full = eng.put(full) if full.any() else None


def sample_triples(eng: Engine, data: Interactions, seed: int, epoch: int) -> tuple[Any, ...]:
    """The ``(u, i, j)`` triples of one epoch (int64 device arrays of at most ``nnz`` entries),
    drawn on the engine from :meth:`Engine.generator` ``(seed, epoch)``: ``nnz`` positives
    uniform over the interactions, minus those of users who rated every item (no negative
    exists; ``nnz - len(u)`` steps are skipped), then one negative per positive, uniform over
    the items, redrawn while it is an interaction of its user (a binary search of the keys)."""
    xp = eng.xp
    n_items = data.shape[1]
    gen = eng.generator(seed, epoch)
    r = eng.integers(gen, data.nnz, data.nnz)
    u = xp.take(data.users, r)
    i = xp.take(data.items, r)
    if data.full is not None:
        keep = ~xp.take(data.full, u)
        u, i = u[keep], i[keep]
    j = eng.integers(gen, n_items, u.shape[0])
    todo = xp.arange(u.shape[0], dtype=xp.int64, device=None if eng.kind != "torch" else
                     eng.device)
    last = data.nnz - 1
    while todo.shape[0]:  # redraw the negatives that are interactions of their user
        q = xp.take(u, todo) * n_items + xp.take(j, todo)
        pos = xp.clip(xp.searchsorted(data.keys, q), max=last)
        todo = todo[xp.take(data.keys, pos) == q]
        if todo.shape[0]:
            j[todo] = eng.integers(gen, n_items, todo.shape[0])
    return u, i, j


class EngineBPRMF:
    """BPR-MF with its factors on an :class:`Engine`, trained by mini-batch SGD.

    The model and hyperparameters of :class:`dptune.models.BPRMF` (``x_ui = b_i + p_u . q_i``;
    per triple, with ``z = 1 / (1 + exp(x_ui - x_uj))``: ``p_u += lr (z (q_i - q_j) -
    user_reg p_u)``, ``q_i += lr (z p_u - item_reg q_i)``, ``q_j += lr (-z p_u - item_reg
    q_j)``, ``b_i += lr (z - item_reg b_i)``, ``b_j += lr (-z - item_reg b_j)``), the same
    initial factors for a seed; per mini-batch every step reads the factors as they were
    before the batch. ``score_on`` keeps the scores on the engine; ``score`` returns them on
    the host. Attributes ``user_factors_``, ``item_factors_``, ``item_bias_`` (host copies),
    ``epochs_done_``, ``skipped_``.
    """

    def __init__(self, engine: Engine, factors: int, learning_rate: float, user_reg: float,
                 item_reg: float, epochs: int, seed: int = 0, init_std: float = 0.1,
                 batch: int = BATCH) -> None:
        self.engine = engine
        self.factors = factors
        self.learning_rate = learning_rate
        self.user_reg = user_reg
        self.item_reg = item_reg
        self.epochs = epochs
        self.seed = seed
        self.init_std = init_std
        self.batch = batch

    def _host_model(self) -> BPRMF:
        return BPRMF(self.factors, self.learning_rate, self.user_reg, self.item_reg, 0,
                     seed=self.seed, init_std=self.init_std)

    def fit(self, X: sp.csr_matrix) -> EngineBPRMF:
        """Initialise exactly as :class:`~dptune.models.BPRMF` (seed only), then train
        ``self.epochs`` epochs."""
        init = self._host_model().fit(X)  # validates the hyperparameters; 0 epochs
        eng = self.engine
        self._P = eng.put(init.user_factors_)
        self._Q = eng.put(init.item_factors_)
        self._B = eng.put(init.item_bias_)
        self._shape = init._shape
        self.epochs_done_ = 0
        self.skipped_ = 0
        return self.partial_fit(X, int(self.epochs))

    def partial_fit(self, X: sp.csr_matrix, epochs: int = 1) -> EngineBPRMF:
        """Continue for ``epochs`` more epochs; epoch ``e`` draws from ``(seed, e)`` only."""
        if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 0:
            raise ValueError(f"epochs must be an integer >= 0, got {epochs!r}")
        X = _binary_csr(X)
        if not hasattr(self, "_P"):
            self.epochs = 0
            self.fit(X)
        if X.shape != self._shape:
            raise ValueError(f"X has shape {X.shape}, the model was initialised on {self._shape}")
        data = None
        for _ in range(int(epochs)):
            if X.nnz:
                if data is None:
                    data = Interactions(self.engine, X)
                u, i, j = sample_triples(self.engine, data, int(self.seed), self.epochs_done_)
                self.skipped_ += X.nnz - int(u.shape[0])
                self._epoch(u, i, j)
            self.epochs_done_ += 1
        return self

    def _epoch(self, ud: Any, id_: Any, jd: Any) -> None:
        eng = self.engine
        xp = eng.xp
        lr = float(self.learning_rate)
        ureg = float(self.user_reg)
        ireg = float(self.item_reg)
        P, Q, B = self._P, self._Q, self._B
        for s in range(0, int(ud.shape[0]), int(self.batch)):
            ub, ib, jb = ud[s: s + self.batch], id_[s: s + self.batch], jd[s: s + self.batch]
            pu = xp.take(P, ub, axis=0)
            qi = xp.take(Q, ib, axis=0)
            qj = xp.take(Q, jb, axis=0)
            bi = xp.take(B, ib)
            bj = xp.take(B, jb)
            diff = qi - qj
            x = bi - bj + xp.sum(pu * diff, axis=1)
            e = xp.exp(-xp.abs(x))  # z = 1 / (1 + exp(x)) without overflow
            z = xp.where(x >= 0, e / (1 + e), 1 / (1 + e))
            zc = z[:, None]
            eng.scatter_add(P, ub, lr * (zc * diff - ureg * pu))
            eng.scatter_add(Q, ib, lr * (zc * pu - ireg * qi))
            eng.scatter_add(Q, jb, lr * (-zc * pu - ireg * qj))
            eng.scatter_add(B, ib, lr * (z - ireg * bi))
            eng.scatter_add(B, jb, lr * (-z - ireg * bj))

    def score_on(self, engine: Engine, users: np.ndarray) -> Any:
        """Scores ``P[users] Q^T + b`` as a float32 array on the engine."""
        xp = self.engine.xp
        p = xp.take(self._P, self.engine.put(_as_users(users), dtype=xp.int64), axis=0)
        return p @ xp.permute_dims(self._Q, (1, 0)) + self._B[None, :]

    def score(self, users: np.ndarray) -> np.ndarray:
        """Dense float32 ``(len(users), n_items)`` on the host."""
        return self.engine.host(self.score_on(self.engine, users))

    @property
    def user_factors_(self) -> np.ndarray:
        return self.engine.host(self._P)

    @property
    def item_factors_(self) -> np.ndarray:
        return self.engine.host(self._Q)

    @property
    def item_bias_(self) -> np.ndarray:
        return self.engine.host(self._B)


class EngineBPRFamily(BPRFamily):
    """The BPR-MF family (same units and snapshots along ``iterations``) trained on an engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def fit_unit(self, X: sp.csr_matrix, configs: list[dict], seed: int
                 ) -> Iterator[tuple[int, Recommender]]:
        """As :meth:`BPRFamily.fit_unit`, each unit one :class:`EngineBPRMF`."""
        norm = self.validate(configs)
        X = _binary_csr(X)
        for unit in self.units(norm):
            f, lr, ureg, ireg = self._key(norm[unit[0]])
            model = EngineBPRMF(self.engine, f, lr, ureg, ireg, epochs=0, seed=seed).fit(X)
            for idx in unit:
                it = norm[idx]["iterations"]
                model.partial_fit(X, it - model.epochs_done_)
                model.epochs = it
                yield idx, model
