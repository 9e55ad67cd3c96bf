"""Nearest-neighbour recommenders (``UserKNN``, ``ItemKNN``): the ranking scorer of RankSys / Elliot.

cornac's own UserKNN/ItemKNN predict *ratings*: the user's mean plus a normalised weighted
average of the neighbours' (mean-centred) ratings. On binarised data every observed rating
is 1, so their scores collapse to about 1 for every candidate item and the ranking is
driven by ties and noise. dptune therefore implements the ranking scorer of RankSys / Elliot itself,
on ``scipy.sparse``: cosine similarity on binary vectors, a per-row top-k neighbour list and
an un-normalised *sum* of similarities. The similarity is computed once per fit, in row
blocks (``float32``), and only each row's neighbours sorted by similarity up to ``k`` are
kept, so ``with_k`` can serve every smaller ``k`` by slicing (reuse along the k axis).

Memory (what a fitted model holds; no dense rows x rows similarity ever exists): the sorted
neighbour lists, ``n x min(k, n - 1)`` int32 codes and float32 similarities, 8 bytes per entry
(ItemKNN on 111,537 items at ``k = 1809``: 1.5 GiB), plus the training matrix it shares with
the fold. While fitting, one block of co-occurrence counts of at most ``2**23`` entries (rows x
n, a few rows at a time) exists at a time. Scoring builds the sparse top-``k`` weight matrix
(CSR, the same 8 bytes per neighbour; ItemKNN keeps only its transpose) and dense float64
scores for one block of users (``users x n_items``).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numba import njit

from dptune.errors import input_error
from dptune.models._base import _as_users, _binary_csr

__all__ = ["UserKNN", "ItemKNN"]

# Similarity blocks are kept below this many entries (float64 while normalising: 64 MiB).
_BLOCK_ENTRIES = 1 << 23


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

    Attributes as :class:`UserKNN`, over items; ``weights_t_`` is ``W_k^T`` in CSR. What it
    holds is the top-``k`` neighbours of every item (``n_items x k`` codes and similarities,
    see the module docstring), never an items x items matrix.
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
        """``W_k^T`` in CSR (built on first use, like ``weights_``; ``W_k`` itself is not kept
        for it, so scoring holds one copy of the neighbour weights, not two)."""
        if self._weights_t is None:
            W = self._weights_k if self._weights_k is not None else self._weights(int(self.k))
            self._weights_t = W.T.tocsr()
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
