"""Scoring, top-N and per-user metrics of blocks of users on an :class:`Engine`.

The same protocol as :func:`dptune.metrics.evaluate` (rank every item the user has not
rated, keep the best ``max(cutoffs)``, score the list), computed with whole-block array
operations that suit a device: the compiled host route walks each row once in a loop, which
no device library offers. :func:`dptune.metrics.evaluate` stays the reference: the tests hold
this route to it, value for value, on the host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from dptune.engine._backend import Engine
from dptune.metrics import Scorer, _check_cutoffs, _check_evaluation, nan_scores
from dptune.metrics import evaluate as host_evaluate
from dptune.vocab import METRICS

__all__ = ["evaluate_on", "metrics_of_lists", "top_n_on"]


def top_n_on(eng: Engine, scores: Any, n: int) -> Any:
    """The ``n`` best item indices of every row of a device block, best first (int64).

    Order exactly as :func:`dptune.metrics.top_n`: score descending, equal scores by the lower
    item index, also across the N-th position; ``-0.0 == 0.0``; NaN raises ``ValueError``.

    Method: ``t`` = the row's n-th largest value (:meth:`Engine.kth_largest`); the list holds
    every item scoring above ``t`` plus the lowest-index items equal to ``t`` until there are
    ``n`` (a running count of the ties); those ``n`` items come out in ascending index order
    (``nonzero`` is row-major) and one stable sort by descending score orders them.
    """
    xp = eng.xp
    rows, n_items = scores.shape
    if bool(xp.any(xp.isnan(scores))):
        raise ValueError("top_n: scores contain NaN")
    scores = scores + 0.0  # -0.0 -> +0.0: bitwise radix sorts must see one zero
    if n >= n_items:
        return xp.argsort(-scores, axis=1, stable=True)
    t = eng.kth_largest(scores, n)
    above = scores > t
    eq = scores == t
    need = n - xp.sum(xp.astype(above, xp.int32), axis=1, keepdims=True)
    chosen = above | (eq & (xp.cumulative_sum(xp.astype(eq, xp.int32), axis=1) <= need))
    cand = xp.reshape(xp.nonzero(chosen)[1], (rows, n))
    order = xp.argsort(-xp.take_along_axis(scores, cand, axis=1), axis=1, stable=True)
    return xp.take_along_axis(cand, order, axis=1)


def metrics_of_lists(eng: Engine, top: Any, relevant: sp.csr_array, cut: np.ndarray,
                     efd: Any, epc: Any, relevance_aware: bool = True) -> Any:
    """Per-user metrics ``(6, len(cut), rows)`` (float64, :data:`METRICS` order) of device
    top-N lists ``top`` against the host CSR ``relevant`` rows of the same users.

    The formulas of :func:`dptune.metrics.metrics_from_topn` (``K = max(cut)``, missing list
    positions are empty): with ``hit(u, r)`` whether the item at rank ``r`` is relevant,
    ``disc(r) = 1 / log2(r + 1)`` and ``R_u`` the number of relevant items, at cutoff ``N``
    precision ``= hits@N / N``, recall ``= hits@N / R_u``, MRR ``= 1 / r*`` (first hit rank
    ``<= N``, else 0), nDCG ``= sum hit disc / sum_{r <= min(N, R_u)} disc``, EFD / EPC ``=
    sum disc g nov / sum disc`` with ``g = hit`` (relevance-aware) or 1. A hit is looked up by
    a binary search of ``user_row * n_items + item`` in the sorted relevant keys, so no dense
    relevance block is built. ``efd`` / ``epc`` are device float64 vectors.
    """
    xp = eng.xp
    rows = top.shape[0]
    k = int(cut.max())
    n_items = relevant.shape[1]
    if top.shape[1] < k:  # a catalogue smaller than the largest cutoff: empty positions
        pad = xp.full((rows, k - top.shape[1]), -1, dtype=top.dtype, device=_dev(eng, top))
        top = xp.concat([top, pad], axis=1)
    top = top[:, :k]
    valid = top >= 0
    safe = xp.where(valid, top, xp.zeros_like(top))

    rel = sp.csr_array(relevant, copy=True).astype(bool)
    rel.sum_duplicates()
    rel.eliminate_zeros()
    n_rel_host = np.diff(rel.indptr)
    keys_host = np.repeat(np.arange(rows, dtype=np.int64), n_rel_host) * n_items + rel.indices
    keys = eng.put(np.sort(keys_host), dtype=xp.int64)
    n_rel = eng.put(n_rel_host, dtype=xp.float64)
    if keys_host.size:
        row_ids = xp.reshape(eng.put(np.arange(rows, dtype=np.int64)), (rows, 1))
        query = xp.reshape(row_ids * n_items + xp.astype(safe, xp.int64), (-1,))
        pos = xp.searchsorted(keys, query)
        pos = xp.clip(pos, max=keys_host.size - 1)
        hit = xp.reshape(xp.take(keys, pos) == query, (rows, k)) & valid
    else:
        hit = xp.zeros((rows, k), dtype=xp.bool, device=_dev(eng, top))

    disc_host = 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))
    disc = eng.put(disc_host)
    cum_disc = eng.put(np.cumsum(disc_host))
    hit_f = xp.astype(hit, xp.float64)
    gain = hit_f if relevance_aware else xp.astype(valid, xp.float64)
    flat = xp.reshape(safe, (-1,))
    nov_efd = xp.reshape(xp.take(efd, flat), (rows, k))
    nov_epc = xp.reshape(xp.take(epc, flat), (rows, k))
    col = eng.put(cut - 1, dtype=xp.int64)

    def at_cutoffs(per_rank: Any) -> Any:  # running sum over ranks, read at the cutoffs: (C, U)
        return xp.permute_dims(xp.take(_running_sum(xp, per_rank), col, axis=1), (1, 0))

    hits = at_cutoffs(hit_f)
    n_cut = xp.reshape(eng.put(cut, dtype=xp.float64), (-1, 1))
    cut_i = xp.reshape(eng.put(cut, dtype=xp.int64), (-1, 1))
    first = xp.where(xp.any(hit, axis=1), xp.argmax(hit_f, axis=1) + 1,
                     xp.full((rows,), k + 1, dtype=xp.int64, device=_dev(eng, top)))
    first = xp.reshape(xp.astype(first, xp.float64), (1, rows))
    ideal_len = xp.minimum(cut_i, xp.reshape(xp.astype(n_rel, xp.int64), (1, rows)))
    idcg = xp.where(ideal_len > 0,
                    xp.reshape(xp.take(cum_disc, xp.reshape(xp.clip(ideal_len, min=1) - 1, (-1,))),
                               ideal_len.shape), 0.0)
    denom = xp.reshape(xp.take(cum_disc, col), (-1, 1))
    with np.errstate(divide="ignore", invalid="ignore"):  # 0/0 = NaN for users without relevant items
        values = {
            "ndcg": at_cutoffs(hit_f * disc) / idcg,
            "precision": hits / n_cut,
            "recall": hits / xp.reshape(n_rel, (1, rows)),
            "mrr": xp.where(first <= n_cut, 1.0 / first, 0.0),
            "efd": at_cutoffs(gain * disc * nov_efd) / denom,
            "epc": at_cutoffs(gain * disc * nov_epc) / denom,
        }
    return xp.stack([values[m] for m in METRICS], axis=0)


def _running_sum(xp: Any, per_rank: Any) -> Any:
    """Running sums along axis 1, added left to right: ``out[:, r] = out[:, r - 1] +
    per_rank[:, r]``, the order of the host's ``np.cumsum``.

    Why not the library's cumulative sum: a device scan adds in an order of its own, and
    PyTorch's CUDA one gave float64 running sums one unit in the last place apart from the
    host's (an H100: 18% of the values of a 37-user test, and the benchmark's ML-1M UserKNN
    and ItemKNN metrics unequal to the host's). Column
    by column, every addition is one correctly rounded IEEE operation in the host's order, so
    the metrics equal the host engine's bit for bit on any device. ``max(cutoffs)`` columns,
    so a few element-wise operations per metric and block.
    """
    cols = [per_rank[:, 0]]
    for r in range(1, per_rank.shape[1]):
        cols.append(cols[-1] + per_rank[:, r])
    return xp.stack(cols, axis=1)


def _device_scorer(eng: Engine, model: Scorer) -> Callable[[np.ndarray], Any] | None:
    """A function from a block of user codes to the model's float32 score block on ``eng``,
    or ``None`` when the model scores on the host only: ``model.score_on`` where the model
    keeps its parameters on the engine (:class:`~dptune.engine.EngineBPRMF`), the device KNN
    scorer for UserKNN / ItemKNN (:func:`dptune.engine._knn.knn_scorer`)."""
    score_on = getattr(model, "score_on", None)
    if score_on is not None:
        return lambda users: score_on(eng, users)
    from dptune.engine._knn import knn_scorer

    return knn_scorer(eng, model)


def _dev(eng: Engine, x: Any) -> Any:
    """The device of ``x`` in the form ``xp`` creation functions take."""
    if eng.kind == "numpy":
        return None
    if eng.kind == "cupy":
        return None  # CuPy creates arrays on its current device
    return x.device


def evaluate_on(
    eng: Engine | None,
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
    """:func:`dptune.metrics.evaluate` on an engine (the host route itself when ``eng`` is None).

    Per block ``B`` of ``users``: the scores are computed on the device for the built-in
    models (:func:`_device_scorer`: device BPR-MF's factors, the KNN models' neighbour lists);
    any other model's ``model.score(B)`` (cornac, implicit, your own) is computed on the host
    and copied to the device; training items are set to ``-inf``; then :func:`top_n_on` and
    :func:`metrics_of_lists`. Returns host float64 ``(6, len(cutoffs), len(users))``.
    """
    if eng is None:
        return host_evaluate(model, users, train, relevant, cutoffs, efd, epc, block=block,
                             relevance_aware=relevance_aware)
    xp = eng.xp
    cut = _check_cutoffs(cutoffs)
    users, block, train, relevant = _check_evaluation(users, block, train, relevant)
    n_items = train.shape[1]
    k = int(cut.max())
    efd_d = eng.put(np.asarray(efd, dtype=np.float64))
    epc_d = eng.put(np.asarray(epc, dtype=np.float64))
    out = np.empty((len(METRICS), cut.size, users.size), dtype=np.float64)
    on_engine = _device_scorer(eng, model)
    for start in range(0, users.size, block):
        ub = users[start: start + block]
        if on_engine is not None:
            scores = on_engine(ub)
        else:
            host = np.asarray(model.score(ub))
            scores = eng.put(host, dtype=xp.float32 if not np.issubdtype(host.dtype, np.floating)
                             else None)
        if tuple(scores.shape) != (ub.size, n_items):
            raise ValueError(
                f"model.score returned shape {tuple(scores.shape)}, expected {(ub.size, n_items)}")
        tr = train[ub]
        nz = tr.data != 0
        r = np.repeat(np.arange(ub.size), np.diff(tr.indptr))[nz]
        if r.size:
            scores[eng.put(r, dtype=xp.int64), eng.put(tr.indices[nz], dtype=xp.int64)] = -xp.inf
        if bool(xp.any(xp.isnan(scores))):  # what top_n refuses: say which and how many
            raise nan_scores(np.asarray(eng.host(xp.isnan(scores))))
        top = top_n_on(eng, scores, k)
        out[:, :, start: start + ub.size] = eng.host(
            metrics_of_lists(eng, top, relevant[ub], cut, efd_d, epc_d, relevance_aware))
    return out
