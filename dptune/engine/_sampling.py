"""The random triples of a BPR-MF epoch on the device: a counter-based generator (Philox) and
the draw of step ``s``'s ``(u, i, j)``, as numba.cuda device functions.

Why counter-based: thousands of device threads draw at once, each for its own steps. With
Philox-4x32-10 (Salmon et al., SC 2011; the generator of cuRAND and PyTorch) the random words
of step ``s`` are a pure function of ``(key, s, n)``: no generator state is stored, read or
advanced, and the triples of an epoch do not depend on how its steps are spread over threads.

**The stream of a step.** Epoch ``e`` of seed ``seed`` has the key ``(k0, k1)`` =
``SeedSequence(seed, spawn_key=(3, e)).generate_state(2, uint32)`` (:func:`epoch_key`). Word
``n`` of step ``s`` is word ``n mod 4`` of ``Philox4x32-10(counter = (s mod 2**32, s div 2**32,
n div 4, 0), key)``. A uniform integer below ``m`` (``0 < m < 2**32``) takes the next word
``w`` and returns ``(w m) div 2**32`` unless ``(w m) mod 2**32 < 2**32 mod m``, in which case
the word is rejected and the next one is taken (Lemire's method: exactly uniform).

**The triple of a step** (the host kernel's sampling, :func:`dptune.models._bpr._bpr_epoch`):
``r`` uniform below ``nnz``, ``(u, i)`` the ``r``-th interaction in CSR order; if ``u`` has
interacted with every item the step is skipped; else ``j`` uniform below ``n_items``, redrawn
while ``j`` is one of ``u``'s items (a binary search of ``u``'s sorted CSR row).

All arithmetic is on ``uint64`` values below ``2**64`` (32 x 32-bit products), so the same
source runs unchanged in numba's CUDA simulator, where it is plain NumPy scalar code (the tests
call these functions directly there).
"""

from __future__ import annotations

import numpy as np
from numba import cuda

__all__ = ["below", "draw_triple", "epoch_key", "philox", "word"]

_U = np.uint64
_M32 = np.uint64(0xFFFFFFFF)


def epoch_key(seed: int, epoch: int) -> tuple[np.uint64, np.uint64]:
    """The Philox key of epoch ``epoch``: depends on ``(seed, epoch)`` only."""
    k = np.random.SeedSequence(int(seed), spawn_key=(3, int(epoch))).generate_state(2, np.uint32)
    return np.uint64(k[0]), np.uint64(k[1])


@cuda.jit(device=True)
def philox(c0, c1, c2, c3, k0, k1):  # pragma: no cover - device code (run by the simulator)
    """Philox-4x32-10 of the counter ``(c0, c1, c2, c3)`` under the key ``(k0, k1)``: four
    32-bit words (as ``uint64``). Each round multiplies ``c0`` and ``c2`` by the Philox
    constants into 64-bit products and mixes their halves with ``c1``, ``c3`` and the key; the
    key is bumped by the Weyl constants between rounds."""
    for rnd in range(10):
        if rnd:
            k0 = (k0 + _U(0x9E3779B9)) & _M32
            k1 = (k1 + _U(0xBB67AE85)) & _M32
        p0 = _U(0xD2511F53) * c0
        p1 = _U(0xCD9E8D57) * c2
        c0, c1, c2, c3 = ((p1 >> _U(32)) ^ c1 ^ k0, p1 & _M32,
                          (p0 >> _U(32)) ^ c3 ^ k1, p0 & _M32)
    return c0, c1, c2, c3


@cuda.jit(device=True)
def word(step, n, k0, k1):  # pragma: no cover - device code
    """Word ``n`` of step ``step``'s stream (see the module docstring)."""
    s = _U(step)
    m = _U(n)
    a, b, c, d = philox(s & _M32, s >> _U(32), m >> _U(2), _U(0), k0, k1)
    r = m & _U(3)
    if r == _U(0):
        return a
    if r == _U(1):
        return b
    if r == _U(2):
        return c
    return d


@cuda.jit(device=True)
def below(bound, w):  # pragma: no cover - device code
    """``(value, accepted)``: the uniform integer below ``bound`` (``uint64``, ``< 2**32``) that
    word ``w`` gives, or ``accepted = False`` when Lemire's method rejects ``w``."""
    m = w * bound
    low = m & _M32
    if low < bound and low < (_U(0x100000000) - bound) % bound:
        return _U(0), False
    return m >> _U(32), True


@cuda.jit(device=True)
def draw_triple(indptr, indices, rows, n_items, step, k0, k1):  # pragma: no cover - device code
    """The triple ``(u, i, j)`` of step ``step`` (``j = -1``: the step is skipped, ``u`` has
    interacted with every item). ``indptr`` / ``indices``: the binary training matrix in
    canonical CSR form; ``rows``: the user of every interaction."""
    nnz = _U(indices.shape[0])
    n = 0
    while True:
        r, ok = below(nnz, word(step, n, k0, k1))
        n += 1
        if ok:
            break
    u = rows[r]
    i = indices[r]
    start = indptr[u]
    end = indptr[u + 1]
    if end - start >= n_items:
        return u, i, np.int64(-1)
    while True:
        jj, ok = below(_U(n_items), word(step, n, k0, k1))
        n += 1
        if not ok:
            continue
        j = np.int64(jj)
        lo = start
        hi = end
        while lo < hi:
            mid = (lo + hi) >> 1
            if indices[mid] < j:
                lo = mid + 1
            else:
                hi = mid
        if lo == end or indices[lo] != j:
            return u, i, j
