"""The BPR-MF epoch as one numba.cuda kernel: every step of an epoch in one launch, applied in
place by many concurrent workers without locks (Hogwild).

See :class:`dptune.engine.EngineBPRMF` for the model and :mod:`dptune.engine._sampling` for
the triples; :class:`dptune.engine.Layout` for how workers and lanes map onto the launch.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda
from numba import float32 as f32

from dptune.engine._block import MAX_BLOCK, MAX_FACTORS_PER_LANE, MAX_PER_BLOCK
from dptune.engine._sampling import draw_triple

__all__ = ["bpr_epoch"]

_RED = 2 * MAX_BLOCK  # shared buffers (compile-time sizes): two steps' partial sums,
_BIAS = 2 * MAX_PER_BLOCK  # and two steps' bias differences, of every worker of a block
_OWN = MAX_FACTORS_PER_LANE  # local arrays: a lane's factors of p_u, q_i, q_j in one step


@cuda.jit
def bpr_epoch(indptr, indices, rows, P, Q, B, lr, ureg, ireg, workers, k0, k1,
              skipped):  # pragma: no cover - device code (run by the simulator in the tests)
    """All ``nnz`` steps of one epoch; ``skipped[0]`` counts the skipped steps.

    Launch: ``grid = ceil(workers / per_block)`` blocks of ``(lanes, per_block)`` threads.
    Worker ``w = blockIdx.x * per_block + threadIdx.y`` (``w < workers``) takes the steps
    ``s = w, w + workers, w + 2 workers, ...``; its ``lanes`` threads (``threadIdx.x``, a
    power of two) share each step: lane ``l`` owns the factors ``f = l, l + lanes, ...``.
    Per step: the triple of :func:`draw_triple` (every lane draws it; it is a pure function of
    ``s``); each lane reads its factors of ``p_u``, ``q_i``, ``q_j`` once into its local
    arrays (at most :data:`~dptune.engine._block.MAX_FACTORS_PER_LANE` each: the layout is
    checked) and lane 0 the two biases; each lane's part of ``p_u . (q_i - q_j)`` (float32, in
    factor order), summed over the lanes by a tree in shared memory (``lanes = 1``: no sum, no
    barrier); ``x = (b_i - b_j) + dot``; ``z = float32(1 / (1 + exp(x)))`` (in float64, as the
    host kernel); then each lane updates its factors of ``p_u``, ``q_i``, ``q_j`` from the
    values it read (old values, the host kernel's formulas) and lane 0 the two biases. Lanes
    write disjoint factors, so within a worker nothing races; between workers the reads and
    writes are unsynchronised (see :class:`dptune.engine.EngineBPRMF`). The shared buffers are
    double-buffered by step parity, so one barrier before and ``log2(lanes)`` inside the tree
    suffice; every worker of a block runs the same number of iterations (idle ones add zeros),
    so all threads reach every barrier.

    **Reads bypass L1.** A multiprocessor's L1 cache is not kept coherent with the others'
    writes: a plain load can return a value another block overwrote long ago, for the whole
    launch when the factors fit in L1. Workers of different blocks then train on private stale
    copies and overwrite each other's updates (measured on an H100: 4 one-thread blocks on a
    40-item data set scored P@10 0.10, a random model's level, against 0.27 for one worker).
    So every read of ``P``, ``Q`` and ``B`` is an atomic addition of zero (``nil``), which
    returns the value held by the shared L2 cache; writes are plain stores, which go through
    to L2. Each value is read once per step: the update uses the values the dot product used
    (kept in the thread's registers or local memory, which no other thread writes), as the
    sequential host kernel does, and a step costs ``3 F + 2`` atomics instead of ``6 F + 4``.
    """
    nil = f32(0.0)
    red = cuda.shared.array(_RED, f32)
    bias = cuda.shared.array(_BIAS, f32)
    own_p = cuda.local.array(_OWN, f32)
    own_i = cuda.local.array(_OWN, f32)
    own_j = cuda.local.array(_OWN, f32)
    lane = cuda.threadIdx.x
    lanes = cuda.blockDim.x
    y = cuda.threadIdx.y
    per_block = cuda.blockDim.y
    w = cuda.blockIdx.x * per_block + y
    n_items = Q.shape[0]
    F = P.shape[1]
    nnz = indices.shape[0]
    rounds = (nnz + workers - 1) // workers
    for t in range(rounds):
        s = w + t * workers
        active = w < workers and s < nnz
        u = 0
        i = 0
        j = np.int64(-1)
        if active:
            u, i, j = draw_triple(indptr, indices, rows, n_items, s, k0, k1)
            if j < 0:
                active = False
                if lane == 0:
                    cuda.atomic.add(skipped, 0, 1)
        part = np.float32(0.0)
        bi = np.float32(0.0)
        bj = np.float32(0.0)
        if active:
            k = 0
            for f in range(lane, F, lanes):
                p = cuda.atomic.add(P, (u, f), nil)
                a = cuda.atomic.add(Q, (i, f), nil)
                c = cuda.atomic.add(Q, (j, f), nil)
                own_p[k] = p
                own_i[k] = a
                own_j[k] = c
                part += p * (a - c)
                k += 1
            if lane == 0:
                bi = cuda.atomic.add(B, i, nil)
                bj = cuda.atomic.add(B, j, nil)
        if lanes > 1:
            slot = ((t & 1) * per_block + y) * lanes
            red[slot + lane] = part
            if lane == 0 and active:
                bias[(t & 1) * per_block + y] = bi - bj
            cuda.syncthreads()
            stride = lanes >> 1
            while stride > 0:
                if lane < stride:
                    red[slot + lane] += red[slot + lane + stride]
                cuda.syncthreads()
                stride >>= 1
            x = bias[(t & 1) * per_block + y] + red[slot]
        else:
            x = np.float32(0.0)
            if active:
                x = (bi - bj) + part
        if active:
            # exp overflows past 709.78: the host kernel's z is then 1 / inf = 0, which this
            # gives without the exp (numba's CUDA simulator, plain Python, would raise)
            z = (np.float32(0.0) if x > 709.0 else
                 np.float32(1.0 / (1.0 + math.exp(np.float64(x)))))
            k = 0
            for f in range(lane, F, lanes):
                p = own_p[k]
                a = own_i[k]
                c = own_j[k]
                P[u, f] = p + lr * (z * (a - c) - ureg * p)
                Q[i, f] = a + lr * (z * p - ireg * a)
                Q[j, f] = c + lr * (-z * p - ireg * c)
                k += 1
            if lane == 0:
                B[i] = bi + lr * (z - ireg * bi)
                B[j] = bj + lr * (-z - ireg * bj)
