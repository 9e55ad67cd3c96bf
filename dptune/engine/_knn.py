"""KNN scores on the device: the neighbour lists of a fitted UserKNN / ItemKNN copied to the
engine once, and each block of users scored there by a kernel, grown along ``k`` as the host
engine grows them (:class:`dptune.models._knn._GrowingK`); no score block crosses from the host.

**The sums.** A KNN score is a sum of float32 cosine similarities, which the host adds in
float64 (``UserKNN``: ``score(u, i) = sum_{v in N_k(u), x_vi = 1} sim(u, v)``; ``ItemKNN``:
``score(u, i) = sum_{j in I_u, j in N_k(i)} sim(i, j)``). Concurrent threads add in no fixed
order, so the device adds *integers*: every similarity is a float32 at least ``2**(e-1)`` for
the smallest one's binary exponent ``e`` (``frexp``), so all are integer multiples of ``2**-q``
with ``q = 24 - e``, and ``s * 2**q`` is an exact int64 (the sum of a row's ``width``
neighbours needs ``width * 2**q < 2**63``, checked). Integer sums do not depend on the order of
the additions, so the scores are reproducible; and while ``width * 2**q <= 2**53`` (checked,
:attr:`DeviceKNN.exact`: a cosine is at least ``1 / (columns of the matrix it is computed
on)``, so ``q <= 24 + log2(columns)``; ML-1M and the Amazon Movies shape stay below ``2**50``)
the host's float64 sums are exact too, and ``float32(sum * 2**-q)`` is the host's score bit for
bit. Beyond it the device's value is the exact sum rounded once, the host's a rounded running
sum; they can differ in the last bit of a float64 (a float32 score only when that bit decides
the rounding).

**Growing k.** For a block of users the int64 accumulator of the last ``k`` is kept (within
the same memory budget as the host's) and the neighbours ranked ``k_prev .. k - 1`` are added,
so the grid's ``k`` values cost one scoring with the largest ``k`` per block, as on the host.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from dptune.engine import _cuda
from dptune.engine._backend import Engine
from dptune.models._knn import ItemKNN, UserKNN, _KNNBase, _KView

__all__ = ["THREADS", "DeviceKNN", "device_knn", "knn_scorer"]

#: Threads per user row of a block (they split each CSR segment the row's sum reads).
THREADS = 128
_BUDGET = 1 << 30  # bytes of kept accumulators when the model gives none (the host's default)
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class DeviceKNN:
    """The neighbour lists of a fitted UserKNN / ItemKNN on an engine, and its score blocks.

    UserKNN keeps ``neighbors_`` / ``neighbor_sims_`` / ``n_neighbors_`` as they are (row =
    user, sorted by rank); ItemKNN keeps them transposed: row ``j`` lists every item ``i`` that
    has ``j`` among its neighbours, with its similarity and rank, sorted by rank, so the
    neighbours ranked below ``k`` are a prefix of each row. Plus the training matrix (CSR).
    """

    def __init__(self, eng: Engine, base: _KNNBase, budget_bytes: int = _BUDGET,
                 threads: int | None = None) -> None:
        if not hasattr(base, "neighbors_"):
            raise ValueError("DeviceKNN needs a fitted UserKNN or ItemKNN")
        self.engine = eng
        self.item_based = isinstance(base, ItemKNN)
        self.threads = int(THREADS if threads is None else threads)
        self.budget = int(budget_bytes)
        X = base.X_
        self.shape = X.shape
        nbr, sims, cnt = base.neighbors_, base.neighbor_sims_, base.n_neighbors_
        self.width = int(nbr.shape[1])
        positive = sims[sims > 0]
        e = int(np.frexp(positive.min())[1]) if positive.size else 1
        self.q = 24 - e
        bits = self.q + max(self.width, 1).bit_length()
        if bits > 62:
            raise ValueError(f"similarities down to {positive.min()!r} with {self.width} "
                             "neighbours overflow the int64 score sums")
        self.exact = bits <= 53
        self.scale = float(2.0 ** self.q)
        self.x_indptr = eng.put(X.indptr.astype(np.int64))
        self.x_indices = eng.put(X.indices.astype(np.int32))
        if self.item_based:
            ranks, items = np.nonzero(np.arange(self.width)[:, None] < cnt[None, :])
            col = nbr[items, ranks]  # rank-major order, then a stable sort by neighbour
            order = np.argsort(col, kind="stable")
            self.t_indptr = eng.put(np.concatenate(
                [[0], np.cumsum(np.bincount(col, minlength=self.shape[1]))]).astype(np.int64))
            self.t_ranks = eng.put(ranks[order].astype(np.int32))
            self.t_items = eng.put(items[order].astype(np.int32))
            self.t_sims = eng.put(sims[items[order], ranks[order]])
        else:
            self.nbr = eng.put(nbr)
            self.sims = eng.put(sims)
            self.cnt = eng.put(cnt)
        self._kept: dict[bytes, tuple[int, Any]] = {}
        self._used = 0

    def _add_band(self, users: Any, lo: int, hi: int, acc: Any) -> None:
        """``acc += 2**q x`` the scores of the neighbours ranked ``lo .. hi - 1`` (one launch)."""
        if hi <= lo or self.width == 0 or int(users.shape[0]) == 0:
            return
        from dptune.engine._knn_kernels import item_band, user_band

        v = lambda a: _cuda.view(self.engine, a)  # noqa: E731
        lo, hi = np.int64(lo), np.int64(hi)
        grid = int(users.shape[0])
        if self.item_based:
            _cuda.launch(item_band, grid, self.threads, v(users), v(self.x_indptr),
                         v(self.x_indices), v(self.t_indptr), v(self.t_ranks), v(self.t_items),
                         v(self.t_sims), lo, hi, self.scale, v(acc))
        else:
            _cuda.launch(user_band, grid, self.threads, v(users), v(self.nbr), v(self.sims),
                         v(self.cnt), lo, hi, self.scale, v(self.x_indptr), v(self.x_indices),
                         v(acc))

    def scores(self, users: np.ndarray, k: int) -> Any:
        """Float32 ``(len(users), n_items)`` scores with ``k`` neighbours, on the engine.

        Equal to the host model's ``with_k(k).score(users)`` (bit for bit when
        :attr:`exact`). The accumulator of a block of users is kept between calls with
        growing ``k`` while the kept ones fit the budget; else the block is scored directly.
        """
        eng = self.engine
        xp = eng.xp
        users = np.asarray(users, dtype=np.int64).ravel()
        n_users = self.shape[0]
        if users.size and (users.min() < 0 or users.max() >= n_users):
            raise IndexError(
                f"user codes must lie in [0, {n_users}), got {users.min()}..{users.max()}")
        key = users.tobytes()
        k_prev, acc = self._kept.get(key, (0, None))
        on_dev = eng.put(users)
        if acc is None or k_prev > k:
            k_prev = 0
            acc = eng.zeros((users.size, self.shape[1]), xp.int64)
            nbytes = users.size * self.shape[1] * 8
            if key not in self._kept:
                if self._used + nbytes > self.budget:  # too large to keep: score directly
                    self._add_band(on_dev, 0, k, acc)
                    return self._as_scores(acc)
                self._used += nbytes
        self._add_band(on_dev, k_prev, k, acc)
        self._kept[key] = (k, acc)
        return self._as_scores(acc)

    def _as_scores(self, acc: Any) -> Any:
        xp = self.engine.xp
        return xp.astype(xp.astype(acc, xp.float64) * (2.0 ** -self.q), xp.float32)


def device_knn(eng: Engine, base: _KNNBase, budget_bytes: int = _BUDGET) -> DeviceKNN:
    """The :class:`DeviceKNN` of ``base`` on ``eng``, built once per fitted model and engine."""
    per_model = _CACHE.setdefault(base, {})
    if eng.name not in per_model:
        per_model[eng.name] = DeviceKNN(eng, base, budget_bytes)
    return per_model[eng.name]


def knn_scorer(eng: Engine, model: Any) -> Callable[[np.ndarray], Any] | None:
    """Device scores of a block of users for a KNN model (a fitted UserKNN / ItemKNN, or a
    ``k`` of the sweep's growing family), else ``None``."""
    if isinstance(model, _KView):
        dev = device_knn(eng, model.growing.base, model.growing.budget)
        k = int(model.k)
    elif isinstance(model, (UserKNN, ItemKNN)) and hasattr(model, "neighbors_"):
        dev = device_knn(eng, model)
        k = int(model.k)
    else:
        return None
    return lambda users: dev.scores(users, k)
