"""Top-N lists and per-user accuracy / novelty metrics, as pure array functions.

Everything here works on integer user/item codes and is vectorised over users and cutoffs: no
Python loop runs per user. Per-user results have the shape ``(len(METRICS), len(cutoffs),
n_users)`` with the metric axis in :data:`METRICS` order.

Conventions shared by the functions below:

* ranks ``r`` are 1-based; the discount is ``disc(r) = 1 / log2(r + 1)``;
* relevance is binary (the caller applies the rating threshold);
* a top-N entry ``< 0`` marks an empty position (no item was ranked there, e.g. an external run
  with fewer than N rows for a user): it is never a hit and adds no novelty, but it still counts
  as one of the N positions (Precision's N, the EPC/EFD denominator).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import scipy.sparse as sp
from numba import njit

from dptune.vocab import METRICS

_NDCG, _PRECISION, _RECALL, _MRR, _EFD, _EPC = range(len(METRICS))


class Scorer(Protocol):
    """Anything that scores every item for a batch of users (see ``dptune.models``)."""

    def score(self, users: np.ndarray) -> np.ndarray:  # pragma: no cover - protocol
        """Return dense ``(len(users), n_items)`` scores, higher is better."""
        ...


# --------------------------------------------------------------------------------------------
# top-N
# --------------------------------------------------------------------------------------------


def top_n(scores: np.ndarray, n: int) -> np.ndarray:
    """Return the ``n`` best item indices of every row of ``scores``, best first.

    Why: the top-N list is the only thing the accuracy and novelty metrics need, and computing it
    for the whole catalogue is the hot path of a sweep, so it must cost about one partial sort.

    Order: higher score first; equal scores are broken by the lower item index, exactly, also
    where the tie straddles the N-th position. Formally, item ``i`` precedes item ``j`` iff
    ``(-scores[u, i], i) < (-scores[u, j], j)`` lexicographically, and the result is the first
    ``n`` items of that order. ``-inf`` (masked training items) therefore only appears when a row
    has fewer than ``n`` finite scores, and then after every finite one. ``-0.0 == 0.0``.

    Method (every path exact):

    * ``n <= 64`` (every cutoff of the paper): one pass over each row with a sorted buffer of
      the ``n`` best ``(score, index)`` pairs seen so far (:func:`_top_n_select`, compiled); an
      item enters only when its score beats the buffer's worst strictly (items come in
      ascending index order, so an equal score loses the tie), which happens about
      ``n log(n_items / n)`` times per row. This is a hand-written ``argpartition`` fused with the
      final sort: it reads the block once and allocates nothing of its size. The two numpy paths
      below remain for larger ``n`` and serve as its test oracle;
    * distinct-ish scores: one ``np.argpartition`` puts the ``n`` largest values in the last
      ``n`` columns, choosing arbitrarily among values equal to the n-th largest value ``t``; one
      comparison pass counts, per row, the items equal to ``t``, and only rows where a
      ``t``-valued item was left out are repaired (items ``> t`` plus the lowest-index items
      ``== t``); then the ``n`` candidates are sorted by ``(-score, index)``;
    * float32 blocks dominated by repeated values (e.g. kNN scores, mostly 0): numpy's selection
      degrades up to ten-fold on long runs of equal keys, so each score is packed with its index
      into one distinct int64 key ``(order-preserving bits of score) * 2**32 + (n_items-1-i)``;
      ``np.partition`` of the keys and a sort of ``n`` columns give the exact order directly.

    If ``n >= n_items`` every item is returned (``n_items`` columns). NaN scores raise
    ``ValueError`` (a model bug, not user input; :func:`evaluate` says how many items).
    """
    scores = np.asarray(scores)
    if scores.ndim != 2:
        raise ValueError(f"top_n: scores must be 2-D (n_users, n_items), got shape {scores.shape}")
    n = int(n)
    if n < 1:
        raise ValueError(f"top_n: n must be >= 1, got {n}")
    n_rows, n_items = scores.shape
    if n_rows == 0 or n_items == 0:
        return np.empty((n_rows, min(n, n_items)), dtype=np.intp)
    if n >= n_items:
        if np.isnan(scores).any():
            raise ValueError("top_n: scores contain NaN")
        # stable sort of the negated scores: descending score, ties by ascending index
        return np.argsort(-scores, axis=1, kind="stable")
    if n <= _SELECT_MAX_N and scores.dtype in (np.float32, np.float64):
        out = np.empty((n_rows, n), dtype=np.intp)
        if _top_n_select(np.ascontiguousarray(scores), n, out):
            raise ValueError("top_n: scores contain NaN")
        return out
    if scores.dtype == np.float32 and n_items < 2**31 and _mostly_ties(scores):
        return _top_n_keyed(scores, n)
    return _top_n_partition(scores, n)


_SELECT_MAX_N = 64  # largest n served by the one-pass buffer (insertions cost O(n) each)


@njit(cache=True, nogil=True)
def _top_n_select(scores, n, out):  # pragma: no cover - compiled; covered through top_n
    """Write the exact top-``n`` of every row of ``scores`` into ``out``; True if a NaN is met.

    ``vals[:m]`` / ``out[r, :m]`` hold the best ``m`` items seen so far in the final order
    (score descending, index ascending). A new item ``i`` has a larger index than every buffered
    one, so it goes after every buffered score ``>= v`` and enters a full buffer only if ``v``
    beats the worst buffered score strictly.
    """
    n_rows, n_items = scores.shape
    vals = np.empty(n, dtype=scores.dtype)
    for r in range(n_rows):
        m = 0
        for i in range(n_items):
            v = scores[r, i]
            if v != v:
                return True
            if m == n:
                if not v > vals[n - 1]:
                    continue
                p = n - 1
            else:
                p = m
                m += 1
            while p > 0 and vals[p - 1] < v:
                vals[p] = vals[p - 1]
                out[r, p] = out[r, p - 1]
                p -= 1
            vals[p] = v
            out[r, p] = i
    return False


_TIE_SAMPLE = 64  # columns sampled per row to estimate how repetitive a block is
_TIE_LIMIT = 0.2  # sampled share of repeated values above which the keyed path is used


def _mostly_ties(scores: np.ndarray) -> bool:
    """Estimate, from about 64 evenly spaced columns, whether many scores repeat within rows."""
    step = max(1, scores.shape[1] // _TIE_SAMPLE)
    sample = np.sort(scores[:, ::step], axis=1)
    if sample.shape[1] < 2:
        return False
    repeats = np.count_nonzero(sample[:, 1:] == sample[:, :-1])
    return repeats > _TIE_LIMIT * sample.shape[0] * (sample.shape[1] - 1)


def _top_n_keyed(scores: np.ndarray, n: int) -> np.ndarray:
    """Exact top-n of a float32 block through distinct int64 (score, -index) keys."""
    if np.isnan(scores).any():
        raise ValueError("top_n: scores contain NaN")
    n_items = scores.shape[1]
    bits = (scores + np.float32(0.0)).view(np.int32)  # + 0.0 turns -0.0 into +0.0
    # IEEE-754 to a signed int with the same order: flip the magnitude bits of negatives
    bits ^= (bits >> 31) & np.int32(0x7FFFFFFF)
    keys = bits.astype(np.int64)
    keys <<= 32
    keys += np.arange(n_items - 1, -1, -1, dtype=np.int64)  # lower index -> larger key
    best = np.partition(keys, n_items - n, axis=1)[:, n_items - n :]
    best.sort(axis=1)
    return (n_items - 1 - (best[:, ::-1] & 0xFFFFFFFF)).astype(np.intp)


def _top_n_partition(scores: np.ndarray, n: int) -> np.ndarray:
    """Exact top-n through one argpartition plus a repair of rows with a broken boundary tie."""
    n_items = scores.shape[1]
    split = n_items - n
    cand = np.argpartition(scores, split, axis=1)[:, split:]
    cand_vals = np.take_along_axis(scores, cand, axis=1)
    # numpy sorts every NaN above every number, so a row holding a NaN has one among its candidates
    if np.isnan(cand_vals).any():
        raise ValueError("top_n: scores contain NaN")
    thr = np.take_along_axis(scores, cand[:, :1], axis=1)  # the n-th largest value, (rows, 1)
    eq = scores == thr
    n_eq_cand = np.count_nonzero(cand_vals == thr, axis=1)
    # cheap global test first: usually no value equal to the threshold was left out
    if np.count_nonzero(eq) > n_eq_cand.sum():
        broken = np.flatnonzero(np.count_nonzero(eq, axis=1) > n_eq_cand)
        cand = np.ascontiguousarray(cand)
        fixed = _repair_boundary(eq[broken], cand[broken], cand_vals[broken], thr[broken], n)
        cand[broken] = fixed
        cand_vals[broken] = np.take_along_axis(scores[broken], fixed, axis=1)
    order = np.lexsort((cand, -cand_vals), axis=-1)
    return np.take_along_axis(cand, order, axis=1)


def _repair_boundary(
    eq: np.ndarray, cand: np.ndarray, cand_vals: np.ndarray, thr: np.ndarray, n: int
) -> np.ndarray:
    """Re-pick the candidates of rows whose boundary tie was broken arbitrarily by argpartition.

    ``eq`` marks the items whose score equals the row's threshold ``thr`` (the n-th largest
    value). Every item scoring above ``thr`` is already among the candidates; the remaining
    ``n - n_above`` slots go to the lowest-index items of ``eq``.
    """
    n_rows = eq.shape[0]
    above = cand_vals > thr
    n_above = above.sum(axis=1)
    need = n - n_above
    # the first need[r] tied items of row r: running count of ties <= need[r]
    take = eq & (np.cumsum(eq, axis=1, dtype=np.int32) <= need[:, None])
    _, tie_items = np.nonzero(take)  # row-major: need[r] columns, ascending, per row r
    out = np.empty((n_rows, n), dtype=cand.dtype)
    slot_above = np.arange(n)[None, :] < n_above[:, None]
    out[slot_above] = cand[above]  # row-major order, n_above[r] values for row r
    out[~slot_above] = tie_items
    return out


# --------------------------------------------------------------------------------------------
# novelty
# --------------------------------------------------------------------------------------------


def novelty_vectors(train: sp.csr_matrix | sp.csr_array) -> tuple[np.ndarray, np.ndarray]:
    """Return the per-item novelty vectors ``(efd, epc)`` of a training matrix.

    Why: EFD and EPC weight each recommended relevant item by how little it is known in the
    training data; the weights depend only on the fold's training matrix, so they are computed
    once per fold.

    With ``users(i)`` = number of distinct training users of item ``i`` (stored non-zero entries
    of column ``i``), ``U`` = number of users with at least one training interaction and
    ``S = sum_j users(j)``:

    * ``epc(i) = 1 - users(i) / U``  (expected popularity complement);
    * ``efd(i) = -log2(users(i) / S)``  (expected free discovery).

    Items never seen in training get the maximum novelty (nobody has seen them): ``epc = 1`` (the formula with
    ``users = 0``) and, since ``log2(0)`` is undefined, ``efd = -log2(1 / S)``, i.e. the value of
    an item seen exactly once, with ``S`` left unchanged. With an empty training matrix every item
    is unseen: ``epc = 1``, ``efd = 0``. Both vectors are float64 of length ``n_items``.
    """
    tr = sp.csr_array(train, copy=True)
    tr.sum_duplicates()
    tr.eliminate_zeros()
    n_items = tr.shape[1]
    users = np.bincount(tr.indices, minlength=n_items).astype(np.float64)
    n_train_users = int(np.count_nonzero(np.diff(tr.indptr)))
    total = float(users.sum())
    epc = np.ones(n_items) if n_train_users == 0 else 1.0 - users / n_train_users
    efd = -np.log2(np.maximum(users, 1.0) / max(total, 1.0))
    return efd, epc


# --------------------------------------------------------------------------------------------
# metrics
# --------------------------------------------------------------------------------------------


def _check_cutoffs(cutoffs: Sequence[int]) -> np.ndarray:
    arr = np.asarray(list(cutoffs))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("cutoffs must be a non-empty list of positive integers")
    if not np.issubdtype(arr.dtype, np.integer) or (arr < 1).any():
        raise ValueError(f"cutoffs must be positive integers, got {list(cutoffs)}")
    return arr.astype(np.int64)


def _check_evaluation(users: np.ndarray, block: int, train: object,
                      relevant: object) -> tuple[np.ndarray, int, sp.csr_array, sp.csr_array]:
    """The arguments every evaluation route checks alike: 1-D user codes, a block >= 1, CSR
    ``train`` and ``relevant``."""
    users = np.asarray(users)
    if users.ndim != 1:
        raise ValueError("users must be a 1-D array of user codes")
    block = int(block)
    if block < 1:
        raise ValueError(f"block must be >= 1, got {block}")
    return users, block, sp.csr_array(train), sp.csr_array(relevant)


def metrics_from_topn(
    top: np.ndarray,
    relevant: sp.csr_matrix | sp.csr_array,
    cutoffs: Sequence[int],
    efd: np.ndarray,
    epc: np.ndarray,
    relevance_aware: bool = True,
) -> np.ndarray:
    """Per-user nDCG, Precision, Recall, MRR, EFD and EPC at every cutoff from top-N lists.

    Why: every metric here is a function of the binary hit pattern of the top-N list, so one
    hit matrix gathered for ``K = max(cutoffs)`` and a cumulative sum per metric give all cutoffs.

    ``top`` is ``(n_users, k)`` item indices, best first (``k >= K`` normally; missing columns and
    negative entries are empty positions). ``relevant`` is a CSR ``(n_users, n_items)`` matrix whose
    row ``u`` holds user ``u``'s relevant held-out items (non-zero = relevant). With
    ``hit(u, r) = rel(u, top[u, r])``, ``disc(r) = 1 / log2(r + 1)``, ``R_u`` = number of relevant
    items, at cutoff ``N``:

    * ``precision = hits@N / N``, ``recall = hits@N / R_u``;
    * ``mrr = 1 / r*`` for the first hit rank ``r* <= N`` (0 if none);
    * ``ndcg = sum_{r<=N} hit(u,r) disc(r) / sum_{r<=min(N, R_u)} disc(r)``;
    * ``efd``/``epc = sum_{r<=N} disc(r) g(u,r) nov(top[u,r]) / sum_{r<=N} disc(r)`` with
      ``g = hit`` (``relevance_aware=True``) or ``g = 1`` for every ranked item (``False``), and
      ``nov`` the ``efd`` / ``epc`` vector of :func:`novelty_vectors`.

    Users with no relevant item are the caller's business (the pipeline evaluates only users with at
    least one): for them recall and nDCG are NaN (0/0) and the other accuracy metrics are 0.
    Returns float64 of shape ``(6, len(cutoffs), n_users)`` in :data:`METRICS` order.
    """
    cut = _check_cutoffs(cutoffs)
    top = np.asarray(top)
    if top.ndim != 2:
        raise ValueError(f"top must be 2-D (n_users, n), got shape {top.shape}")
    n_users = top.shape[0]
    if relevant.shape[0] != n_users:
        raise ValueError(
            f"relevant has {relevant.shape[0]} rows but top has {n_users}; rows must be aligned"
        )
    n_items = relevant.shape[1]
    efd = np.asarray(efd, dtype=np.float64)
    epc = np.asarray(epc, dtype=np.float64)
    if efd.shape != (n_items,) or epc.shape != (n_items,):
        raise ValueError(f"efd and epc must have shape ({n_items},)")
    k = int(cut.max())

    # ranked item per position, -1 = empty (also pads lists shorter than k)
    items = np.full((n_users, k), -1, dtype=np.int64)
    width = min(k, top.shape[1])
    items[:, :width] = top[:, :width]
    if (items >= n_items).any():
        raise ValueError(f"top holds item indices >= n_items ({n_items})")
    valid = items >= 0
    safe = np.where(valid, items, 0)

    rel = sp.csr_array(relevant, copy=True).astype(bool)
    rel.sum_duplicates()
    rel.eliminate_zeros()
    n_rel = np.diff(rel.indptr).astype(np.float64)
    rows = np.repeat(np.arange(n_users), k)
    hit = np.asarray(rel[rows, safe.ravel()]).reshape(n_users, k) & valid

    disc = 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))
    cum_disc = np.cumsum(disc)  # cum_disc[m - 1] = sum_{r<=m} disc(r)
    hit_f = hit.astype(np.float64)
    cum_hits = np.cumsum(hit_f, axis=1)
    cum_dcg = np.cumsum(hit_f * disc, axis=1)
    gain = hit_f if relevance_aware else valid.astype(np.float64)
    cum_efd = np.cumsum(gain * disc * efd[safe], axis=1)
    cum_epc = np.cumsum(gain * disc * epc[safe], axis=1)
    has_hit = hit.any(axis=1)
    first = np.where(has_hit, hit.argmax(axis=1) + 1, k + 1)  # 1-based rank of first hit

    col = cut - 1
    n_cut = cut.astype(np.float64)[:, None]  # (C, 1)
    hits = cum_hits[:, col].T  # (C, U)
    out = np.empty((len(METRICS), cut.size, n_users), dtype=np.float64)
    ideal_len = np.minimum(cut[:, None], n_rel.astype(np.int64)[None, :])  # (C, U)
    idcg = np.where(ideal_len > 0, cum_disc[np.maximum(ideal_len, 1) - 1], 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[_NDCG] = cum_dcg[:, col].T / idcg
        out[_RECALL] = hits / n_rel[None, :]
    out[_PRECISION] = hits / n_cut
    out[_MRR] = np.where(first[None, :] <= cut[:, None], 1.0 / first[None, :], 0.0)
    denom = cum_disc[col][:, None]
    out[_EFD] = cum_efd[:, col].T / denom
    out[_EPC] = cum_epc[:, col].T / denom
    return out


class NaNScores(ValueError):
    """A model scored some items NaN (a defect of the model, not of the data): how many items
    (of ``n_items``) and users of one block of users. The sweep names the model,
    configuration and fold (:func:`dptune.sweeper.run_unit`)."""

    def __init__(self, items: int, users: int, n_items: int) -> None:
        super().__init__(f"scores of {items} of {n_items} items are NaN for {users} users")
        self.items, self.users, self.n_items = items, users, n_items


def nan_scores(nan: np.ndarray) -> NaNScores:
    """:class:`NaNScores` of a block's boolean NaN mask ``(users, items)``."""
    return NaNScores(int(nan.any(axis=0).sum()), int(nan.any(axis=1).sum()), nan.shape[1])


def _writeable_scores(scores: object) -> np.ndarray:
    """A fresh array of ``scores`` for :func:`evaluate` to mask: float32 stays float32 (the
    models' own precision), anything else becomes float64, exact for integers up to 2^53 and
    for float64 itself. A read-only float64 block cast to float32 tied scores 1e-8 apart, and
    integer scores above 2^24, whose order then fell to the item ids."""
    arr = np.asarray(scores)
    return np.array(arr, dtype=np.float32 if arr.dtype == np.float32 else np.float64)


def evaluate(
    model: Scorer,
    users: np.ndarray,
    train: sp.csr_matrix | sp.csr_array,
    relevant: sp.csr_matrix | sp.csr_array,
    cutoffs: Sequence[int],
    efd: np.ndarray,
    epc: np.ndarray,
    block: int = 1024,
    relevance_aware: bool = True,
) -> np.ndarray:
    """Score ``users`` with ``model`` and return their metrics, ``(6, len(cutoffs), len(users))``.

    Why: the "all unrated items" protocol ranks the whole catalogue minus the user's
    training items; doing it per block of users bounds memory at ``block x n_items`` scores.

    For each block ``B`` of ``users``: ``S = model.score(B)`` (dense ``(|B|, n_items)``), then
    ``S[b, i] = -inf`` for every stored non-zero ``train[B[b], i]``, ``top = top_n(S,
    max(cutoffs))`` and :func:`metrics_from_topn` with ``relevant[B]``. ``train`` and ``relevant``
    are indexed by user code (rows of the whole data set). The score array is masked in place
    when the model hands back a writeable float array (models return fresh arrays), otherwise it
    is copied first. Column ``j`` of the result belongs to ``users[j]``.
    """
    cut = _check_cutoffs(cutoffs)
    users, block, train, relevant = _check_evaluation(users, block, train, relevant)
    n_items = train.shape[1]
    k = int(cut.max())
    out = np.empty((len(METRICS), cut.size, users.size), dtype=np.float64)
    for start in range(0, users.size, block):
        ub = users[start : start + block]
        scores = model.score(ub)
        if (
            not isinstance(scores, np.ndarray)
            or scores.dtype not in (np.float32, np.float64)
            or not scores.flags.writeable
        ):
            scores = _writeable_scores(scores)
        if scores.shape != (ub.size, n_items):
            raise ValueError(
                f"model.score returned shape {scores.shape}, expected {(ub.size, n_items)}"
            )
        tr = train[ub]
        nz = tr.data != 0
        rows = np.repeat(np.arange(ub.size), np.diff(tr.indptr))
        scores[rows[nz], tr.indices[nz]] = -np.inf
        try:
            top = top_n(scores, k)
        except ValueError:
            if np.isnan(scores).any():  # what top_n refuses: say which and how many
                raise nan_scores(np.isnan(scores)) from None
            raise
        out[:, :, start : start + ub.size] = metrics_from_topn(
            top, relevant[ub], cut, efd, epc, relevance_aware=relevance_aware
        )
    return out
