"""The KNN score bands as numba.cuda kernels (see :class:`dptune.engine._knn.DeviceKNN`).

Each adds to a block's fixed-point accumulator ``acc`` (int64, ``(len(users), n_items)``) the
contribution of the neighbours ranked ``lo .. hi - 1``; a similarity ``s`` (float32) enters as
the integer ``s * scale`` (``scale = 2**q``, exact, see ``DeviceKNN``). Block ``b`` of the grid
(grid-stride) serves row ``b`` of the user block; its threads split the inner CSR segment, so a
segment is read in coalesced strips. Integer atomic additions make the sums exact, hence
independent of the order in which threads add them.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

__all__ = ["item_band", "user_band"]


@cuda.jit
def user_band(users, nbr, sims, cnt, lo, hi, scale, x_indptr, x_indices,
              acc):  # pragma: no cover - device code (run by the simulator in the tests)
    """UserKNN: ``acc[b, i] += sim(u, v) * scale`` for each neighbour ``v`` of ``u = users[b]``
    ranked ``lo <= r < min(hi, cnt[u])`` and each item ``i`` of ``v``'s training row."""
    lane = cuda.threadIdx.x
    lanes = cuda.blockDim.x
    for b in range(cuda.blockIdx.x, users.shape[0], cuda.gridDim.x):
        u = users[b]
        end = np.int64(cnt[u])
        if hi < end:  # not min(): numba 0.68's CUDA target fails to compile it on two int64
            end = hi
        for r in range(lo, end):
            v = nbr[u, r]
            w = np.int64(np.float64(sims[u, r]) * scale)
            for q in range(x_indptr[v] + lane, x_indptr[v + 1], lanes):
                cuda.atomic.add(acc, (b, x_indices[q]), w)


@cuda.jit(device=True)
def _first_rank(ranks, start, end, r):  # pragma: no cover - device code
    """The first position in ``ranks[start:end]`` (ascending) holding a rank ``>= r``."""
    while start < end:
        mid = (start + end) >> 1
        if ranks[mid] < r:
            start = mid + 1
        else:
            end = mid
    return start


@cuda.jit
def item_band(users, x_indptr, x_indices, t_indptr, t_ranks, t_items, t_sims, lo, hi, scale,
              acc):  # pragma: no cover - device code (run by the simulator in the tests)
    """ItemKNN: ``acc[b, i] += sim(i, j) * scale`` for each training item ``j`` of ``u =
    users[b]`` and each item ``i`` that has ``j`` among its neighbours at a rank ``lo <= r <
    hi``. Row ``j`` of the transposed lists (``t_*``) is sorted by rank, so the band is the
    segment between two binary searches."""
    lane = cuda.threadIdx.x
    lanes = cuda.blockDim.x
    for b in range(cuda.blockIdx.x, users.shape[0], cuda.gridDim.x):
        u = users[b]
        for p in range(x_indptr[u], x_indptr[u + 1]):
            j = x_indices[p]
            a = _first_rank(t_ranks, t_indptr[j], t_indptr[j + 1], lo)
            e = _first_rank(t_ranks, a, t_indptr[j + 1], hi)
            for q in range(a + lane, e, lanes):
                cuda.atomic.add(acc, (b, t_items[q]),
                                np.int64(np.float64(t_sims[q]) * scale))
