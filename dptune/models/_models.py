"""Recommenders swept by dptune and the *families* that tell the sweep how to reuse work.

Every model follows the sklearn convention: the constructor takes configuration only, ``fit(X)``
learns, learned state lives in attributes ending in ``_``. ``X`` is always a
``scipy.sparse.csr_matrix`` of shape ``(n_users, n_items)``, ``float32``, 1.0 per training
interaction (binarised). ``score(users)`` returns a dense ``float32`` array
``(len(users), n_items)``; the caller masks training items itself.

Nearest neighbours (``UserKNN``, ``ItemKNN``)
    cornac's own UserKNN/ItemKNN predict *ratings*: the user's mean plus a normalised weighted
    average of the neighbours' (mean-centred) ratings. On binarised data every observed rating
    is 1, so their scores collapse to about 1 for every candidate item and the ranking is
    driven by ties and noise. dptune therefore implements the ranking scorer of RankSys / Elliot (SPEC 4) itself,
    on ``scipy.sparse``: cosine similarity on binary vectors, a per-row top-k neighbour list and
    an un-normalised *sum* of similarities. The similarity is computed once per fit, in row
    blocks (``float32``), and only each row's neighbours sorted by similarity up to ``k`` are
    kept, so ``with_k`` can serve every smaller ``k`` by slicing (reuse along the k axis).

BPR-MF (``BPRMF``)
    Own single-threaded numba SGD kernel with *separate* user and item regularisation, as the
    paper's grid needs (user_reg = lr/20, item_reg = lr/200; cornac's BPR has one
    ``lambda_reg``). Factors and biases are ``float32`` (half the memory traffic of ``float64``,
    which dominates at 1,809 factors). All arithmetic is strict IEEE except the dot product
    ``p_u . (q_i - q_j)``, compiled with LLVM's ``reassoc`` flag so that it is SIMD-vectorised
    (about +40 % updates/s at 325-1,809 factors): results are bit-reproducible on a given machine
    (same compiled code), but the last bits may differ between CPUs of different SIMD width.
    Training can be paused after any epoch: the random stream of epoch ``e`` depends only on
    ``(seed, e)``, so a snapshot after ``i`` epochs is bit-identical to a fresh fit with
    ``epochs=i``. Differences to cornac's ``BPR`` (which was cross-checked at equal settings on
    ml-latest-small, see ``tests/test_models.py``; accuracy agrees within seed noise):

    - initialisation: dptune draws factors from ``N(0, init_std^2)``; cornac draws
      ``(U(0, 1) - 0.5) / k`` (sd ``1 / (k sqrt(12))``). Biases start at 0 in both; both use
      item biases only (no user bias, it cancels in ``x_ui - x_uj``).
    - negative sampling: dptune redraws ``j`` until ``u`` has not interacted with it (every step
      is an update); cornac draws ``j`` once and *skips* the step when ``u`` has interacted
      with ``j``, so cornac does slightly fewer updates per epoch (``sum_u n_u^2 / n_items``
      fewer in expectation, about 6 % of the steps on ml-latest-small).
    - random numbers: dptune uses xoshiro256** seeded per epoch from
      ``numpy.random.SeedSequence``; cornac uses one mt19937 stream for the whole run.

Generic cornac adapter (``CornacModel``)
    Any ``cornac.models`` class, fitted on a cornac ``Dataset`` built from ``X``'s
    ``(user, item, 1.0)`` triples, scored for every item with our item codes.

Families (``get_family``)
    How the sweep groups configurations into *units* trained together: KNN - one unit with
    every ``k`` (one similarity computation); BPR-MF - one unit per
    ``(factors, learning_rate, user_reg, item_reg)`` trained once through the sorted
    ``iterations`` values with a snapshot at each; cornac - one unit per configuration.
"""

from __future__ import annotations

import inspect
import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp
from numba import njit

from dptune.errors import input_error

__all__ = [
    "Recommender",
    "UserKNN",
    "ItemKNN",
    "BPRMF",
    "CornacModel",
    "Family",
    "KNNFamily",
    "BPRFamily",
    "CornacFamily",
    "get_family",
    "FAMILY_TYPES",
]

#: Algorithm types understood by :func:`get_family` (plus ``"cornac:<ClassName>"``).
FAMILY_TYPES = ("userknn", "itemknn", "bpr-mf", "cornac:<ClassName>")

# Similarity blocks are kept below this many entries (float64 while normalising: 64 MiB).
_BLOCK_ENTRIES = 1 << 23


@runtime_checkable
class Recommender(Protocol):
    """What the sweep needs from a model: ``fit`` on a training matrix, ``score`` user rows."""

    def fit(self, X: sp.csr_matrix) -> Recommender:
        """Learn from the binarised ``(n_users, n_items)`` training matrix; return ``self``."""
        ...

    def score(self, users: np.ndarray) -> np.ndarray:
        """Dense ``float32`` scores ``(len(users), n_items)``; higher is better."""
        ...


# --------------------------------------------------------------------------------------------
# input helpers


def _binary_csr(X: Any) -> sp.csr_matrix:
    """``X`` as a canonical binary CSR matrix (float32 ones, sorted indices, no duplicates).

    Any stored non-zero value counts as one interaction (ratings are binarised); explicitly
    stored zeros are dropped. Copies only when ``X`` is not already in that form.
    """
    if not sp.issparse(X):
        raise TypeError("X must be a scipy.sparse matrix of shape (n_users, n_items)")
    X = sp.csr_matrix(X)
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    if X.nnz and (X.data.dtype != np.float32 or not np.all(X.data == 1.0)):
        if not np.all(X.data != 0):  # explicitly stored zeros are not interactions
            X = X.copy()
            X.eliminate_zeros()
        X = sp.csr_matrix(
            (np.ones(X.nnz, dtype=np.float32), X.indices, X.indptr), shape=X.shape
        )
    elif X.data.dtype != np.float32:
        X = X.astype(np.float32)
    return X


def _as_users(users: Any) -> np.ndarray:
    users = np.asarray(users, dtype=np.int64).ravel()
    return users


# --------------------------------------------------------------------------------------------
# nearest neighbours


@njit(cache=True, nogil=True)
def _topk_rows(C, deg, row_offset, exclude_self, kmax, out_idx, out_sim, out_cnt):  # pragma: no cover
    """For each row of the dense co-occurrence block ``C`` keep its ``kmax`` most similar columns.

    Row ``r`` is row ``row_offset + r`` of the data; the cosine of a non-zero count is computed
    here, ``float32(C[r, c] / sqrt(deg[row] * deg[c]))`` in float64 and rounded once (the same
    IEEE operations as the array expression, so the same bits, without three passes over a
    float64 block). Order: higher similarity first, ties by lower column index; zero counts and
    (if ``exclude_self``) the row's own column are never kept. Results go to
    ``out_idx[r, :cnt]``, ``out_sim[r, :cnt]``, ``out_cnt[r]`` (the rest is left as filled by
    the caller: -1 / 0).
    """
    n = C.shape[1]
    cols = np.empty(n, dtype=np.int64)
    vals = np.empty(n, dtype=np.float32)
    for r in range(C.shape[0]):
        own = row_offset + r if exclude_self else -1
        d_r = deg[row_offset + r]
        m = 0
        for c in range(n):
            x = C[r, c]
            if x > 0 and c != own:
                cols[m] = c
                vals[m] = np.float32(np.float64(x) / math.sqrt(d_r * deg[c]))
                m += 1
        if m > kmax:
            # threshold = kmax-th largest value; keep everything >= it (ties included)
            part = np.partition(vals[:m], m - kmax)
            t = part[m - kmax]
            m2 = 0
            for q in range(m):
                if vals[q] >= t:
                    cols[m2] = cols[q]
                    vals[m2] = vals[q]
                    m2 += 1
            m = m2
        neg = -vals[:m]
        order = np.argsort(neg, kind="mergesort")  # stable: ties keep ascending column order
        cnt = min(m, kmax)
        for q in range(cnt):
            out_idx[r, q] = cols[order[q]]
            out_sim[r, q] = vals[order[q]]
        out_cnt[r] = cnt


def _cosine_topk(
    A: sp.csr_matrix, kmax: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Top-``kmax`` cosine neighbours of every row of the binary matrix ``A``.

    ``sim(a, b) = |a ∩ b| / sqrt(|a| |b|)`` (co-occurrence count over the geometric mean of the
    row sizes), self excluded, empty rows have similarity 0 with everything. Computed in row
    blocks ``A[B] @ A^T`` (sparse product; counts are exact integers in float32), normalised in
    float64 and rounded once to float32 (so ``sim(a, b) == sim(b, a)`` bit for bit).

    Returns ``(idx, sim, cnt)``: ``idx`` ``(n, width)`` int32 neighbour rows sorted by
    (similarity desc, index asc), padded with -1; ``sim`` float32 padded with 0; ``cnt`` int32
    number of real neighbours per row. ``width = min(kmax, n - 1)``.
    """
    n = A.shape[0]
    width = max(0, min(int(kmax), n - 1))
    idx = np.full((n, width), -1, dtype=np.int32)
    sim = np.zeros((n, width), dtype=np.float32)
    cnt = np.zeros(n, dtype=np.int32)
    if width == 0 or A.nnz == 0:
        return idx, sim, cnt
    deg = np.diff(A.indptr).astype(np.float64)
    AT = A.T.tocsr()
    block = max(1, _BLOCK_ENTRIES // max(n, 1))
    for r0 in range(0, n, block):
        r1 = min(n, r0 + block)
        C = (A[r0:r1] @ AT).toarray()  # float32 co-occurrence counts (exact integers)
        _topk_rows(C, deg, r0, True, width, idx[r0:r1], sim[r0:r1], cnt[r0:r1])
    return idx, sim, cnt


@njit(cache=True, nogil=True)
def _add_weighted_rows(
    w_indptr, w_indices, w_data, rows, x_indptr, x_indices, out
):  # pragma: no cover - compiled; covered through the KNN models
    """``out[r] += W[rows[r]] @ X`` for a weighted CSR ``W`` and a binary CSR ``X``.

    For each stored ``W[u, v]`` in storage order, ``W[u, v]`` is added at every item of row
    ``v`` of ``X``: the loop order of scipy's CSR product, so each float64 sum is accumulated in
    the same order as ``(W[rows] @ X).toarray()`` (and ``w * 1.0 == w``), bit for bit, without
    building the sparse product. UserKNN: ``W`` = neighbour weights, ``X`` = training matrix.
    """
    for r in range(rows.shape[0]):
        u = rows[r]
        for p in range(w_indptr[u], w_indptr[u + 1]):
            v = w_indices[p]
            w = w_data[p]
            for q in range(x_indptr[v], x_indptr[v + 1]):
                out[r, x_indices[q]] += w


@njit(cache=True, nogil=True)
def _add_rows_of_weighted(
    x_indptr, x_indices, rows, w_indptr, w_indices, w_data, out
):  # pragma: no cover - compiled; covered through the KNN models
    """``out[r] += X[rows[r]] @ W`` for a binary CSR ``X`` and a weighted CSR ``W``.

    Same loop order as scipy's CSR product (see :func:`_add_weighted_rows`). ItemKNN: ``X`` =
    training matrix, ``W`` = transposed neighbour weights.
    """
    for r in range(rows.shape[0]):
        u = rows[r]
        for p in range(x_indptr[u], x_indptr[u + 1]):
            j = x_indices[p]
            for q in range(w_indptr[j], w_indptr[j + 1]):
                out[r, w_indices[q]] += w_data[q]


class _KNNBase:
    """Shared fit / ``with_k`` machinery of :class:`UserKNN` and :class:`ItemKNN`."""

    _transpose = False  # ItemKNN computes similarities between the columns of X

    def __init__(self, k: int, similarity: str = "cosine") -> None:
        self.k = k
        self.similarity = similarity

    def _check(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise input_error("algorithm", "k", f"must be a positive integer, got {self.k!r}")
        if self.similarity != "cosine":
            raise input_error(
                "algorithm", "similarity", f"only 'cosine' is supported, got {self.similarity!r}"
            )

    def fit(self, X: sp.csr_matrix) -> _KNNBase:
        """Compute the cosine similarity once and keep each row's top-``k`` sorted neighbours."""
        self._check()
        X = _binary_csr(X)
        A = X.T.tocsr() if self._transpose else X
        self.X_ = X
        self.neighbors_, self.neighbor_sims_, self.n_neighbors_ = _cosine_topk(A, int(self.k))
        self.fitted_k_ = int(self.k)
        self._weights_k = self._weights_t = None
        return self

    @property
    def weights_(self) -> sp.csr_matrix:
        """CSR ``W_k`` (row = the weights of a row's ``k`` neighbours), sliced from the sorted
        lists on first use (the sweep scores through :class:`_GrowingK` and never needs it)."""
        if not hasattr(self, "neighbors_"):
            raise AttributeError("weights_ exists after fit(X)")
        if self._weights_k is None:
            self._weights_k = self._weights(int(self.k))
        return self._weights_k

    def _weights(self, k: int, lo: int = 0) -> sp.csr_matrix:
        """Neighbour matrix of the ranks ``lo .. k-1`` (rows = neighbour weights, float32, exact
        in the float64 sums), sliced from the sorted lists; ``lo = 0`` gives ``W_k``."""
        n = self.neighbors_.shape[0]
        width = min(k, self.neighbors_.shape[1])
        lo = min(lo, width)
        idx = self.neighbors_[:, lo:width]
        mask = idx >= 0  # padding sits at the end of each row, so row-major order is kept
        counts = np.clip(self.n_neighbors_.astype(np.int64) - lo, 0, width - lo)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        W = sp.csr_matrix(
            (self.neighbor_sims_[:, lo:width][mask], idx[mask], indptr),
            shape=(n, n),
        )
        W.sort_indices()
        return W

    def _band_matrix(self, W: sp.csr_matrix) -> sp.csr_matrix:
        """The matrix ``_band_scores`` multiplies with (``W`` itself; ItemKNN transposes)."""
        return W

    def _band_scores(
        self, users: np.ndarray, W: sp.csr_matrix, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Add the contribution of the neighbours held in ``W`` to ``out`` (float64
        ``(len(users), n_items)``, zeros when None) and return it."""
        n_users = self.X_.shape[0]
        if users.size and (users.min() < 0 or users.max() >= n_users):
            raise IndexError(
                f"user codes must lie in [0, {n_users}), got {users.min()}..{users.max()}"
            )
        if out is None:
            out = np.zeros((len(users), self.X_.shape[1]), dtype=np.float64)
        return self._add_band(users, W, out)

    def _add_band(self, users: np.ndarray, W: sp.csr_matrix, out: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def with_k(self, k: int) -> _KNNBase:
        """A fitted model of the same class with ``k`` neighbours, sharing the sorted lists.

        No similarity is recomputed: the top-``k`` weight matrix is built by slicing the
        neighbour lists kept by ``fit`` (``k`` must not exceed the fitted ``k``). The result
        scores exactly like ``type(self)(k).fit(X)``.
        """
        if not hasattr(self, "neighbors_"):
            raise RuntimeError("with_k needs a fitted model; call fit(X) first")
        other = type(self)(k, self.similarity)
        other._check()
        if k > self.fitted_k_:
            raise ValueError(f"with_k({k}) exceeds the fitted k={self.fitted_k_}")
        other.X_ = self.X_
        other.neighbors_ = self.neighbors_
        other.neighbor_sims_ = self.neighbor_sims_
        other.n_neighbors_ = self.n_neighbors_
        other.fitted_k_ = self.fitted_k_
        other._weights_k = other._weights_t = None
        return other


class _GrowingK:
    """Scores for increasing ``k`` from one fitted model, each built on the previous one.

    With the sum convention a user's score is additive over neighbour ranks:
    ``score_k2 = score_k1 + sum over neighbours ranked k1+1 .. k2``, so going through the grid's
    k values in increasing order costs one top-``kmax`` scoring in total instead of one per k.
    Each user block's float64 partial sums are kept between k values (memory: users x items x 8
    bytes, see ``budget_bytes``; beyond it, every k is scored directly).
    """

    def __init__(self, base: _KNNBase, budget_bytes: int = 1 << 30) -> None:
        self.base = base
        self.budget = budget_bytes
        self.cache: dict[bytes, tuple[int, np.ndarray]] = {}
        self.bands: dict[tuple[int, int], sp.csr_matrix] = {}
        self.used = 0

    def scores(self, users: np.ndarray, k: int) -> np.ndarray:
        key = users.tobytes()
        k_prev, acc = self.cache.get(key, (0, None))
        if acc is None or k_prev > k:
            k_prev, acc = 0, np.zeros((len(users), self.base.X_.shape[1]), dtype=np.float64)
            if self.used + acc.nbytes > self.budget:  # too large to keep: score directly
                return self.base._band_scores(users, self._band(0, k)).astype(np.float32)
            self.used += acc.nbytes
        if k > k_prev:
            self.base._band_scores(users, self._band(k_prev, k), out=acc)
        self.cache[key] = (k, acc)
        return acc.astype(np.float32)

    def _band(self, lo: int, hi: int) -> sp.csr_matrix:
        if (lo, hi) not in self.bands:
            self.bands.clear()  # bands are used once per step of k: keep only the current one
            self.bands[(lo, hi)] = self.base._band_matrix(self.base._weights(hi, lo))
        return self.bands[(lo, hi)]


class _KView:
    """A KNN model with ``k`` neighbours scored through a shared :class:`_GrowingK`."""

    def __init__(self, growing: _GrowingK, k: int) -> None:
        self.growing = growing
        self.k = k

    def score(self, users: np.ndarray) -> np.ndarray:
        """Dense float32 scores, equal to ``type(base)(k).fit(X).score(users)``."""
        return self.growing.scores(_as_users(users), self.k)


class UserKNN(_KNNBase):
    """User-based nearest neighbours, ranking scorer for binary data (RankSys / Elliot).

    ``score(u, i) = sum_{v in N_k(u), x_vi = 1} sim(u, v)`` with cosine
    ``sim(u, v) = |I_u ∩ I_v| / sqrt(|I_u| |I_v|)``; ``N_k(u)`` are the ``k`` users most similar
    to ``u`` (ties by lower user code; zero-similarity users are never neighbours). In matrix
    form: ``scores = W_k[users] @ X``.

    Attributes (after ``fit``): ``neighbors_`` ``(n_users, min(k, n_users-1))`` int32 sorted
    neighbour codes padded with -1, ``neighbor_sims_`` their similarities, ``n_neighbors_``,
    ``weights_`` (CSR ``W_k``), ``X_`` (training matrix), ``fitted_k_``.
    """

    def fit(self, X: sp.csr_matrix) -> UserKNN:
        """Fit on the binarised training matrix (see :meth:`_KNNBase.fit`)."""
        return super().fit(X)  # type: ignore[return-value]

    def with_k(self, k: int) -> UserKNN:
        """Same fitted similarity, ``k`` neighbours (``k`` <= fitted ``k``), no recomputation."""
        return super().with_k(k)  # type: ignore[return-value]

    def score(self, users: np.ndarray) -> np.ndarray:
        """Dense float32 ``(len(users), n_items)``: ``W_k[users] @ X`` (summed in float64)."""
        return self._band_scores(_as_users(users), self.weights_).astype(np.float32)

    def _add_band(self, users: np.ndarray, W: sp.csr_matrix, out: np.ndarray) -> np.ndarray:
        """``out += W[users] @ X``: the contribution of the neighbours held in ``W``."""
        X = self.X_
        _add_weighted_rows(W.indptr, W.indices, W.data, users, X.indptr, X.indices, out)
        return out


class ItemKNN(_KNNBase):
    """Item-based nearest neighbours, ranking scorer for binary data (RankSys / Elliot).

    Each item ``i`` keeps its ``k`` most similar items ``N_k(i)`` (cosine on item columns,
    ties by lower item code, zero similarity excluded);
    ``score(u, i) = sum_{j in I_u ∩ N_k(i)} sim(i, j)``, i.e. ``scores = X[users] @ W_k^T``.

    Attributes as :class:`UserKNN`, over items; ``weights_t_`` is ``W_k^T`` in CSR.
    """

    _transpose = True

    def fit(self, X: sp.csr_matrix) -> ItemKNN:
        """Fit on the binarised training matrix (see :meth:`_KNNBase.fit`)."""
        return super().fit(X)  # type: ignore[return-value]

    def with_k(self, k: int) -> ItemKNN:
        """Same fitted similarity, ``k`` neighbours (``k`` <= fitted ``k``), no recomputation."""
        return super().with_k(k)  # type: ignore[return-value]

    @property
    def weights_t_(self) -> sp.csr_matrix:
        """``W_k^T`` in CSR (built on first use, like ``weights_``)."""
        if self._weights_t is None:
            self._weights_t = self.weights_.T.tocsr()
        return self._weights_t

    def score(self, users: np.ndarray) -> np.ndarray:
        """Dense float32 ``(len(users), n_items)``: ``X[users] @ W_k^T`` (summed in float64)."""
        return self._band_scores(_as_users(users), self.weights_t_).astype(np.float32)

    def _add_band(self, users: np.ndarray, WT: sp.csr_matrix, out: np.ndarray) -> np.ndarray:
        """``out += X[users] @ W^T`` for a transposed neighbour matrix ``WT``."""
        X = self.X_
        _add_rows_of_weighted(X.indptr, X.indices, users, WT.indptr, WT.indices, WT.data, out)
        return out

    def _band_matrix(self, W: sp.csr_matrix) -> sp.csr_matrix:
        return W.T.tocsr()


# --------------------------------------------------------------------------------------------
# BPR-MF



@njit(cache=True, inline="always")
def _rotl(x, k):  # pragma: no cover
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@njit(cache=True, inline="always")
def _next(s0, s1, s2, s3):  # pragma: no cover
    """xoshiro256**: returns (64 random bits, new state)."""
    result = _rotl(s1 * np.uint64(5), 7) * np.uint64(9)
    t = s1 << np.uint64(17)
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = _rotl(s3, 45)
    return result, s0, s1, s2, s3


@njit(cache=True, inline="always")
def _bounded(n, s0, s1, s2, s3):  # pragma: no cover
    """Uniform integer in [0, n) for 0 < n < 2**32 (Lemire's method, exact by rejection)."""
    n64 = np.uint64(n)
    x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
    m = (x >> np.uint64(32)) * n64
    low = m & np.uint64(0xFFFFFFFF)
    if low < n64:
        t = ((np.uint64(0x100000000) - n64) % n64)
        while low < t:
            x, s0, s1, s2, s3 = _next(s0, s1, s2, s3)
            m = (x >> np.uint64(32)) * n64
            low = m & np.uint64(0xFFFFFFFF)
    return np.int64(m >> np.uint64(32)), s0, s1, s2, s3


@njit(cache=True, fastmath={"reassoc"})
def _dot_diff(p, a, b):  # pragma: no cover
    """``p . (a - b)`` in float32; ``reassoc`` lets LLVM vectorise the sum (SIMD lanes)."""
    s = np.float32(0.0)
    for f in range(p.shape[0]):
        s += p[f] * (a[f] - b[f])
    return s


@njit(cache=True)
def _bpr_epoch(indptr, indices, rows, P, Q, B, lr, user_reg, item_reg, n_steps, state):  # pragma: no cover
    """Run ``n_steps`` BPR SGD steps in place; returns the number of skipped steps.

    Each step: positive ``(u, i)`` uniform over the interactions, negative ``j`` uniform over
    the items ``u`` has not interacted with (rejection against the sorted CSR row, binary
    search); ``x = b_i - b_j + p_u . (q_i - q_j)``, ``z = 1 / (1 + exp(x))``, then the SGD
    updates of :class:`BPRMF` (old ``p_u`` in the ``q`` updates). A step is skipped only when
    ``u`` has interacted with every item. ``state`` (uint64[4], xoshiro256**) is advanced.
    """
    n_items = Q.shape[0]
    F = P.shape[1]
    nnz = indices.shape[0]
    s0 = state[0]
    s1 = state[1]
    s2 = state[2]
    s3 = state[3]
    skipped = 0
    for _ in range(n_steps):
        r, s0, s1, s2, s3 = _bounded(nnz, s0, s1, s2, s3)
        u = rows[r]
        i = indices[r]
        start = indptr[u]
        end = indptr[u + 1]
        if end - start >= n_items:
            skipped += 1
            continue
        while True:
            j, s0, s1, s2, s3 = _bounded(n_items, s0, s1, s2, s3)
            lo = start
            hi = end
            while lo < hi:
                mid = (lo + hi) >> 1
                if indices[mid] < j:
                    lo = mid + 1
                else:
                    hi = mid
            if lo == end or indices[lo] != j:
                break
        pu = P[u]
        qi = Q[i]
        qj = Q[j]
        x = (B[i] - B[j]) + _dot_diff(pu, qi, qj)
        z = np.float32(1.0 / (1.0 + math.exp(x)))
        for f in range(F):
            p = pu[f]
            a = qi[f]
            b = qj[f]
            pu[f] = p + lr * (z * (a - b) - user_reg * p)
            qi[f] = a + lr * (z * p - item_reg * a)
            qj[f] = b + lr * (-z * p - item_reg * b)
        B[i] += lr * (z - item_reg * B[i])
        B[j] += lr * (-z - item_reg * B[j])
    state[0] = s0
    state[1] = s1
    state[2] = s2
    state[3] = s3
    return skipped


def _epoch_state(seed: int, epoch: int) -> np.ndarray:
    """xoshiro256** state of epoch ``epoch``: depends only on ``(seed, epoch)``."""
    state = np.random.SeedSequence(seed, spawn_key=(1, epoch)).generate_state(4, np.uint64)
    if not state.any():  # the all-zero state is the one xoshiro cannot leave
        state[0] = 1
    return state


class BPRMF:
    """BPR matrix factorisation (Rendle et al., UAI 2009) trained by a numba SGD kernel.

    Model ``x_ui = b_i + p_u . q_i``; maximises ``sum ln sigma(x_ui - x_uj)`` over sampled
    triples (u, i positive, j negative). One epoch = ``nnz(X)`` SGD steps. With
    ``z = 1 / (1 + exp(x_ui - x_uj))`` and learning rate ``lr``::

        p_u += lr (z (q_i - q_j) - user_reg p_u)
        q_i += lr (z p_u - item_reg q_i)          (old p_u)
        q_j += lr (-z p_u - item_reg q_j)
        b_i += lr (z - item_reg b_i);  b_j += lr (-z - item_reg b_j)

    Separate user and item regularisation is required by the paper's grid. Factors are
    ``float32``, initialised from ``N(0, init_std^2)`` using the seed only; biases start at 0.
    Epoch ``e`` draws its random numbers from a stream seeded by ``(seed, e)`` only, so training
    can be paused: after ``partial_fit`` calls totalling ``i`` epochs the model is bit-identical
    to ``BPRMF(..., epochs=i, seed=seed).fit(X)``. Deterministic and single-threaded (see the
    module docstring for the one vectorised, reassociated sum).

    Attributes: ``user_factors_`` ``(n_users, factors)``, ``item_factors_`` ``(n_items,
    factors)``, ``item_bias_`` ``(n_items,)`` (all float32), ``epochs_done_``, ``skipped_``
    (steps skipped because the user had interacted with every item).
    """

    def __init__(
        self,
        factors: int,
        learning_rate: float,
        user_reg: float,
        item_reg: float,
        epochs: int,
        seed: int = 0,
        init_std: float = 0.1,
    ) -> None:
        self.factors = factors
        self.learning_rate = learning_rate
        self.user_reg = user_reg
        self.item_reg = item_reg
        self.epochs = epochs
        self.seed = seed
        self.init_std = init_std

    def _check(self) -> None:
        for name in ("factors", "epochs", "seed"):
            v = getattr(self, name)
            lo = 1 if name == "factors" else 0
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise input_error("algorithm", name, f"must be an integer >= {lo}, got {v!r}")
        for name in ("learning_rate", "user_reg", "item_reg", "init_std"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.number)) or not (
                math.isfinite(v) and v >= 0
            ):
                raise input_error("algorithm", name, f"must be a finite number >= 0, got {v!r}")

    def _init(self, X: sp.csr_matrix) -> None:
        n_users, n_items = X.shape
        rng = np.random.default_rng(np.random.SeedSequence(int(self.seed), spawn_key=(0,)))
        std = np.float32(self.init_std)
        self.user_factors_ = rng.standard_normal((n_users, int(self.factors)), dtype=np.float32)
        self.user_factors_ *= std
        self.item_factors_ = rng.standard_normal((n_items, int(self.factors)), dtype=np.float32)
        self.item_factors_ *= std
        self.item_bias_ = np.zeros(n_items, dtype=np.float32)
        self.epochs_done_ = 0
        self.skipped_ = 0
        self._shape = X.shape

    def fit(self, X: sp.csr_matrix) -> BPRMF:
        """Initialise from the seed, then train ``self.epochs`` epochs (0 = random model)."""
        self._check()
        X = _binary_csr(X)
        self._init(X)
        return self.partial_fit(X, int(self.epochs))

    def partial_fit(self, X: sp.csr_matrix, epochs: int = 1) -> BPRMF:
        """Continue training for ``epochs`` more epochs (initialises first if never fitted).

        Epoch numbers continue from ``epochs_done_``; epoch ``e`` uses the random stream of
        ``(seed, e)``, so pausing never changes the result.
        """
        self._check()
        if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 0:
            raise ValueError(f"epochs must be an integer >= 0, got {epochs!r}")
        X = _binary_csr(X)
        if not hasattr(self, "user_factors_"):
            self._init(X)
        if X.shape != self._shape:
            raise ValueError(f"X has shape {X.shape}, the model was initialised on {self._shape}")
        if X.nnz == 0 or epochs == 0:
            self.epochs_done_ += int(epochs)
            return self
        if X.nnz >= 2**32 or X.shape[1] >= 2**32:
            raise ValueError("BPRMF supports fewer than 2**32 interactions and items")
        indptr, indices, rows = self._arrays(X)
        lr = np.float32(self.learning_rate)
        ureg = np.float32(self.user_reg)
        ireg = np.float32(self.item_reg)
        for _ in range(int(epochs)):
            state = _epoch_state(int(self.seed), self.epochs_done_)
            self.skipped_ += int(
                _bpr_epoch(
                    indptr, indices, rows, self.user_factors_, self.item_factors_,
                    self.item_bias_, lr, ureg, ireg, np.int64(X.nnz), state,
                )
            )
            self.epochs_done_ += 1
        return self

    @staticmethod
    def _arrays(X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CSR arrays in the kernel's dtypes plus the row (user) of every interaction."""
        indptr = X.indptr.astype(np.int64, copy=False)
        indices = X.indices.astype(np.int32, copy=False)
        rows = np.repeat(np.arange(X.shape[0], dtype=np.int32), np.diff(indptr))
        return indptr, indices, rows

    def score(self, users: np.ndarray) -> np.ndarray:
        """Dense float32 ``(len(users), n_items)``: ``P[users] @ Q^T + b``."""
        users = _as_users(users)
        s = self.user_factors_[users] @ self.item_factors_.T
        s += self.item_bias_[None, :]
        return s


# --------------------------------------------------------------------------------------------
# generic cornac adapter


def _cornac_class(name: str) -> type:
    import cornac.models

    cls = getattr(cornac.models, name, None)
    if not (isinstance(cls, type) and name[:1].isupper()):
        raise input_error("algorithm", "type", f"cornac has no model class {name!r}")
    return cls


class CornacModel:
    """Adapter that lets any ``cornac.models`` recommender be swept like a dptune model.

    ``fit(X)`` builds ``getattr(cornac.models, name)(**params, seed=seed)`` (``seed`` only when
    the class accepts it and ``params`` does not set it; ``verbose=False`` likewise) and fits it
    on a cornac ``Dataset`` made of ``X``'s ``(user, item, 1.0)`` triples. cornac numbers users
    and items by first appearance; ``user_index_`` / ``item_index_`` map our codes to cornac's
    (-1 = unknown to cornac, i.e. no training interaction). ``score(users)`` asks the model for
    every known item of each user: items unknown to cornac get ``-inf``, users unknown to
    cornac get 0 on every known item.
    """

    def __init__(self, name: str, params: dict | None = None, seed: int = 0) -> None:
        self.name = name
        self.params = params
        self.seed = seed

    def _build(self) -> Any:
        cls = _cornac_class(self.name)
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
        """Build the cornac model and fit it on ``X``'s interactions."""
        from cornac.data import Dataset

        X = _binary_csr(X)
        coo = X.tocoo()
        triples = list(zip(coo.row.tolist(), coo.col.tolist(), [1.0] * coo.nnz, strict=True))
        if not triples:
            raise ValueError("CornacModel needs at least one training interaction")
        data = Dataset.from_uir(triples, seed=self.seed)
        self.model_ = self._build()
        self.model_.fit(data)
        self.user_index_ = np.full(X.shape[0], -1, dtype=np.int64)
        for code, inner in data.uid_map.items():
            self.user_index_[int(code)] = inner
        self.item_index_ = np.full(X.shape[1], -1, dtype=np.int64)
        for code, inner in data.iid_map.items():
            self.item_index_[int(code)] = inner
        self.known_items_ = np.flatnonzero(self.item_index_ >= 0)
        self._inner_items = self.item_index_[self.known_items_]
        self.n_items_ = X.shape[1]
        return self

    def score(self, users: np.ndarray) -> np.ndarray:
        """Dense float32 ``(len(users), n_items)`` in our item codes (see class docstring)."""
        users = _as_users(users)
        out = np.full((len(users), self.n_items_), -np.inf, dtype=np.float32)
        out[:, self.known_items_] = 0.0
        for row, u in enumerate(users):
            inner = self.user_index_[u]
            if inner < 0:
                continue
            s = np.asarray(self.model_.score(int(inner)), dtype=np.float32).ravel()
            out[row, self.known_items_] = s[self._inner_items]
        return out


# --------------------------------------------------------------------------------------------
# families


class Family(ABC):
    """How one algorithm type is swept with reuse.

    ``units(configs)`` groups configuration indices that are trained together;
    ``fit_unit(X, configs, seed)`` trains them and yields ``(index into configs, fitted model)``
    for every configuration. **The yielded model may be mutated or replaced when the next item
    is requested** (BPR-MF continues training the same object): evaluate or copy it before
    advancing the iterator. ``hyperparameters`` are the configuration keys the family expects.
    """

    type: str = ""
    hyperparameters: tuple[str, ...] = ()

    def validate(self, configs: Sequence[dict], source: str = "algorithm") -> list[dict]:
        """Check every configuration's keys and value types; return normalised copies.

        Unknown or missing hyperparameter names raise ``input_error(source, key, ...)``.
        """
        out = []
        for cfg in configs:
            unknown = [k for k in cfg if k not in self.hyperparameters]
            if unknown:
                raise input_error(
                    source, unknown[0],
                    f"unknown hyperparameter for {self.type!r} "
                    f"(expected: {', '.join(self.hyperparameters)})",
                )
            missing = [k for k in self._required() if k not in cfg]
            if missing:
                raise input_error(
                    source, missing[0], f"missing hyperparameter for {self.type!r}"
                )
            out.append(self._normalise(dict(cfg), source))
        return out

    def _required(self) -> tuple[str, ...]:
        return self.hyperparameters

    def _normalise(self, cfg: dict, source: str) -> dict:
        return cfg

    @abstractmethod
    def units(self, configs: list[dict]) -> list[list[int]]:
        """Groups of indices into ``configs`` that are trained together (one run each)."""

    @abstractmethod
    def fit_unit(
        self, X: sp.csr_matrix, configs: list[dict], seed: int
    ) -> Iterator[tuple[int, Recommender]]:
        """Train ``configs`` unit by unit; yield ``(index into configs, fitted model)``."""


def _int_value(cfg: dict, key: str, source: str, lo: int) -> int:
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or (
        isinstance(v, (float, np.floating)) and not float(v).is_integer()
    ) or v < lo:
        raise input_error(source, key, f"must be an integer >= {lo}, got {v!r}")
    return int(v)


def _float_value(cfg: dict, key: str, source: str) -> float:
    v = cfg[key]
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not (
        math.isfinite(v) and v >= 0
    ):
        raise input_error(source, key, f"must be a finite number >= 0, got {v!r}")
    return float(v)


class KNNFamily(Family):
    """UserKNN / ItemKNN: one unit with every ``k``; the similarity is computed once (max ``k``)
    and every configuration is served by ``with_k``. ``seed`` is unused (deterministic)."""

    hyperparameters = ("k",)

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

    def _normalise(self, cfg: dict, source: str) -> dict:
        cfg["factors"] = _int_value(cfg, "factors", source, 1)
        cfg["iterations"] = _int_value(cfg, "iterations", source, 0)
        for key in ("learning_rate", "user_reg", "item_reg"):
            cfg[key] = _float_value(cfg, key, source)
        return cfg

    @staticmethod
    def _key(cfg: dict) -> tuple:
        return (cfg["factors"], cfg["learning_rate"], cfg["user_reg"], cfg["item_reg"])

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


class CornacFamily(Family):
    """Any cornac model: one unit per configuration, every key passed to the constructor.

    ``hyperparameters`` are the constructor's parameter names (without ``self``, ``name`` and
    ``seed``); none is required (cornac has defaults).
    """

    def __init__(self, class_name: str) -> None:
        self.class_name = class_name
        self.type = f"cornac:{class_name}"
        cls = _cornac_class(class_name)
        sig = inspect.signature(cls.__init__).parameters
        self._any_key = any(p.kind is p.VAR_KEYWORD for p in sig.values())
        self.hyperparameters = tuple(
            n for n, p in sig.items()
            if n not in ("self", "name", "seed")
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        )

    def _required(self) -> tuple[str, ...]:
        return ()

    def validate(self, configs: Sequence[dict], source: str = "algorithm") -> list[dict]:
        """Unknown constructor parameters raise ``input_error`` naming the key."""
        if self._any_key:
            return [dict(c) for c in configs]
        return super().validate(configs, source)

    def units(self, configs: list[dict]) -> list[list[int]]:
        """One unit per configuration."""
        self.validate(configs)
        return [[i] for i in range(len(configs))]

    def fit_unit(
        self, X: sp.csr_matrix, configs: list[dict], seed: int
    ) -> Iterator[tuple[int, Recommender]]:
        """Fit a fresh :class:`CornacModel` per configuration, in order."""
        configs = self.validate(configs)
        for idx, cfg in enumerate(configs):
            yield idx, CornacModel(self.class_name, cfg, seed=seed).fit(X)


def get_family(algorithm_type: str) -> Family:
    """The :class:`Family` for ``"userknn"``, ``"itemknn"``, ``"bpr-mf"`` or
    ``"cornac:<ClassName>"``; anything else raises ``input_error("algorithm", "type", ...)``."""
    t = algorithm_type.strip() if isinstance(algorithm_type, str) else algorithm_type
    if t in ("userknn", "itemknn"):
        return KNNFamily(t)
    if t == "bpr-mf":
        return BPRFamily()
    if isinstance(t, str) and t.startswith("cornac:") and len(t) > len("cornac:"):
        return CornacFamily(t[len("cornac:"):])
    raise input_error(
        "algorithm", "type",
        f"unknown algorithm type {algorithm_type!r} (expected one of: {', '.join(FAMILY_TYPES)})",
    )
