"""BPR-MF trained on an :class:`Engine` by one device kernel per epoch, and its sweep family.

Why one kernel: an epoch is ``nnz(X)`` tiny SGD steps. Written as array operations (a
mini-batch of triples per round of gathers, products and scatter-adds) one epoch of ML-1M is
thousands of library calls, each a kernel launch plus Python dispatch on a device, so the
launches, not the arithmetic, set the epoch's time. Here an epoch is one launch of
:func:`~dptune.engine._bpr_kernel.bpr_epoch`, as the host kernel
(:class:`dptune.models.BPRMF`) is one compiled call: the kernel draws every step's triple
itself (:mod:`dptune.engine._sampling`) and applies the steps in place.

**Concurrency (Hogwild).** The :class:`Layout`'s ``workers`` (groups of threads) run at once,
each applying its own steps one after the other, with no lock between workers (Niu et al., NIPS
2011; the GPU BPR of the ``implicit`` library works the same way). Two workers may read a row
of ``P``/``Q`` (or a bias) that a third is writing, and two simultaneous updates of one row may
lose one of them. This is acceptable for the same reason as for Hogwild SGD: a step touches 3
of the ``n_users + n_items`` rows, so collisions are rare and an update computed from a row a
few steps stale is still a descent step; the result is a model of the same quality, not the
host kernel's bit sequence. The staleness is bounded by ``workers``: at most ``workers - 1``
other steps are in flight while a step runs, which is never more than the 4,096 triples of one
mini-batch of the array route this kernel replaced (every step of such a batch read the factors
as they were before the batch) and never more than one in 64 of an epoch's steps (a worker
takes at least 64 steps per epoch). Quality is tested against the host kernel (P@10 and nDCG@10
within its seed noise floor).

**Determinism.** The triples of an epoch depend only on ``(seed, epoch)`` (a counter-based
generator), so training can be paused along ``iterations`` without changing which steps are
taken. With one worker (``Layout(lanes, workers=1, per_block=1)``) the kernel is sequential and
exactly reproducible; with many, the order in which concurrent updates land depends on the
device's scheduling, as for any Hogwild trainer (numba's CUDA simulator, used by the tests,
runs blocks one after the other, so with one worker per block it is reproducible too).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from dptune.engine import _cuda
from dptune.engine._backend import Engine
from dptune.engine._block import MAX_BLOCK, MAX_FACTORS_PER_LANE, MAX_PER_BLOCK
from dptune.models._base import Recommender, _as_users, _binary_csr
from dptune.models._bpr import BPRMF
from dptune.models._families import BPRFamily

__all__ = ["MAX_BLOCK", "MAX_PER_BLOCK", "MAX_WORKERS", "EngineBPRFamily", "EngineBPRMF",
           "Interactions", "Layout"]

#: Concurrent workers at most (see the module docstring: the staleness bound).
MAX_WORKERS = 4096
#: A worker takes at least this many steps per epoch (fewer workers on small data).
MIN_STEPS_PER_WORKER = 64


@dataclass(frozen=True)
class Layout:
    """How an epoch's steps map onto the device: ``workers`` concurrent workers, each of
    ``lanes`` threads sharing one step (a power of two: lane ``l`` owns factors ``l, l + lanes,
    ...``, so a row is read in coalesced ``lanes``-wide strips), ``per_block`` workers per
    thread block. The launch is ``ceil(workers / per_block)`` blocks of ``(lanes, per_block)``.
    """

    lanes: int
    workers: int
    per_block: int

    def __post_init__(self) -> None:
        for name in ("lanes", "workers", "per_block"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"Layout.{name} must be an integer >= 1, got {v!r}")
        if self.lanes & (self.lanes - 1):
            raise ValueError(f"Layout.lanes must be a power of two, got {self.lanes}")
        if self.per_block > MAX_PER_BLOCK or self.lanes * self.per_block > MAX_BLOCK:
            raise ValueError(f"Layout: at most {MAX_PER_BLOCK} workers and {MAX_BLOCK} "
                             f"threads per block, got {self.per_block} x {self.lanes} lanes")

    @classmethod
    def for_model(cls, factors: int, nnz: int) -> Layout:
        """The default layout (reasoned, not tuned on a device): ``lanes`` = the power of two
        at or above ``factors / 4``, at most 32 (one warp: a lane handles at least 4 factors
        of a small model and a warp reads a large model's rows in 128-byte strips);
        ``per_block`` fills a block of 32 threads; ``workers = min(MAX_WORKERS,
        nnz // MIN_STEPS_PER_WORKER)`` (at least 1)."""
        lanes = 1
        while lanes < 32 and lanes * 4 < factors:
            lanes *= 2
        workers = max(1, min(MAX_WORKERS, int(nnz) // MIN_STEPS_PER_WORKER))
        return cls(lanes=lanes, workers=workers, per_block=max(1, 32 // lanes))

    def check_factors(self, factors: int) -> None:
        """Raise ``ValueError`` when a lane of this layout would own more than
        :data:`~dptune.engine._block.MAX_FACTORS_PER_LANE` factors of a model of ``factors``
        (the kernel keeps a step's values of a lane's factors in local arrays of that
        compile-time size)."""
        if -(-int(factors) // self.lanes) > MAX_FACTORS_PER_LANE:
            raise ValueError(f"Layout: {self.lanes} lanes hold at most "
                             f"{self.lanes * MAX_FACTORS_PER_LANE} factors "
                             f"({MAX_FACTORS_PER_LANE} per lane), got {factors}")

    @property
    def grid(self) -> int:
        return -(-self.workers // self.per_block)

    @property
    def block(self) -> tuple[int, int]:
        return (self.lanes, self.per_block)


class Interactions:
    """A binary training matrix on an engine, in the form the kernel reads: CSR ``indptr``
    (int64), ``indices`` (int32, sorted per row) and the user of every interaction (int32)."""

    def __init__(self, eng: Engine, X: sp.csr_matrix) -> None:
        if X.nnz >= 2**32 or X.shape[1] >= 2**32:
            raise ValueError("the device BPR-MF supports fewer than 2**32 interactions and items")
        indptr, indices, rows = BPRMF._arrays(X)
        self.shape = X.shape
        self.nnz = int(X.nnz)
        self.indptr = eng.put(indptr)
        self.indices = eng.put(indices)
        self.rows = eng.put(rows)


class EngineBPRMF:
    """BPR-MF with its factors on an :class:`Engine`, one kernel launch per epoch.

    The model, hyperparameters and initial factors of :class:`dptune.models.BPRMF` (``x_ui =
    b_i + p_u . q_i``; per triple, with ``z = 1 / (1 + exp(x_ui - x_uj))``: ``p_u += lr (z (q_i
    - q_j) - user_reg p_u)``, ``q_i += lr (z p_u - item_reg q_i)``, ``q_j += lr (-z p_u -
    item_reg q_j)``, ``b_i += lr (z - item_reg b_i)``, ``b_j += lr (-z - item_reg b_j)``, old
    ``p_u`` in the ``q`` updates; float32), its sampling (positive uniform over the
    interactions, negative uniform over the items the user has not interacted with, a user who
    has interacted with every item takes no step) from a counter-based stream of ``(seed,
    epoch)``, and ``nnz(X)`` steps per epoch, applied concurrently as the module docstring
    describes. ``layout`` defaults to :meth:`Layout.for_model`. ``score_on`` keeps the scores
    on the engine; ``score`` returns them on the host. Attributes ``user_factors_``,
    ``item_factors_``, ``item_bias_`` (host copies), ``epochs_done_``, ``skipped_``.
    """

    def __init__(self, engine: Engine, factors: int, learning_rate: float, user_reg: float,
                 item_reg: float, epochs: int, seed: int = 0, init_std: float = 0.1,
                 layout: Layout | None = None) -> None:
        self.engine = engine
        self.factors = factors
        self.learning_rate = learning_rate
        self.user_reg = user_reg
        self.item_reg = item_reg
        self.epochs = epochs
        self.seed = seed
        self.init_std = init_std
        self.layout = layout

    def _host_model(self) -> BPRMF:
        return BPRMF(self.factors, self.learning_rate, self.user_reg, self.item_reg, 0,
                     seed=self.seed, init_std=self.init_std)

    def fit(self, X: sp.csr_matrix) -> EngineBPRMF:
        """Initialise exactly as :class:`~dptune.models.BPRMF` (seed only), then train
        ``self.epochs`` epochs."""
        init = self._host_model().fit(X)  # validates the hyperparameters; 0 epochs
        self._layout(X.nnz).check_factors(self.factors)
        eng = self.engine
        self._P = eng.put(init.user_factors_)
        self._Q = eng.put(init.item_factors_)
        self._B = eng.put(init.item_bias_)
        self._skipped = eng.put(np.zeros(1, dtype=np.int64))
        self._shape = init._shape
        self._data: tuple[Any, Interactions] | None = None
        self.epochs_done_ = 0
        return self.partial_fit(X, int(self.epochs))

    def partial_fit(self, X: sp.csr_matrix, epochs: int = 1) -> EngineBPRMF:
        """Continue for ``epochs`` more epochs (one launch each); epoch ``e`` draws from
        ``(seed, e)`` only. The training matrix is copied to the engine once per ``X``."""
        if isinstance(epochs, bool) or not isinstance(epochs, (int, np.integer)) or epochs < 0:
            raise ValueError(f"epochs must be an integer >= 0, got {epochs!r}")
        X = _binary_csr(X)
        if not hasattr(self, "_P"):
            self.epochs = 0
            self.fit(X)
        if X.shape != self._shape:
            raise ValueError(f"X has shape {X.shape}, the model was initialised on {self._shape}")
        if X.nnz == 0 or epochs == 0:
            self.epochs_done_ += int(epochs)
            return self
        if self._data is None or not _same_matrix(self._data[0], X):
            self._data = (X, Interactions(self.engine, X))  # X is kept: identities stay valid
        data = self._data[1]
        self._run(data, self._layout(data.nnz), int(epochs))
        return self

    def _layout(self, nnz: int) -> Layout:
        """The launch layout on ``nnz`` training interactions: the one given, else
        :meth:`Layout.for_model`."""
        return self.layout or Layout.for_model(int(self.factors), nnz)

    def _run(self, data: Interactions, layout: Layout, epochs: int) -> None:
        """``epochs`` launches of the epoch kernel; no other device work."""
        from dptune.engine._bpr_kernel import bpr_epoch
        from dptune.engine._sampling import epoch_key

        eng = self.engine
        args = [_cuda.view(eng, a) for a in (data.indptr, data.indices, data.rows,
                                              self._P, self._Q, self._B)]
        lr = np.float32(self.learning_rate)
        ureg = np.float32(self.user_reg)
        ireg = np.float32(self.item_reg)
        skipped = _cuda.view(eng, self._skipped)
        for _ in range(epochs):
            k0, k1 = epoch_key(int(self.seed), self.epochs_done_)
            _cuda.launch(bpr_epoch, layout.grid, layout.block, *args, lr, ureg, ireg,
                         np.int64(layout.workers), k0, k1, skipped)
            self.epochs_done_ += 1

    @property
    def skipped_(self) -> int:
        """Steps skipped so far because the user had interacted with every item."""
        return int(self.engine.host(self._skipped)[0])

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


def _same_matrix(a: sp.csr_matrix, b: sp.csr_matrix) -> bool:
    """Whether two CSR matrices view the same memory (``csr_matrix(X)`` wraps it in new
    objects, so neither the matrices nor their arrays are identical call by call)."""
    def where(x: np.ndarray) -> tuple:
        return x.__array_interface__["data"][0], x.strides, x.dtype.str

    return (a.shape == b.shape and a.nnz == b.nnz and where(a.indptr) == where(b.indptr)
            and where(a.indices) == where(b.indices))


class EngineBPRFamily(BPRFamily):
    """The BPR-MF family (same units and snapshots along ``iterations``) trained on an engine
    (``layout``: that of every model, default :meth:`Layout.for_model`)."""

    def __init__(self, engine: Engine, layout: Layout | None = None) -> None:
        self.engine = engine
        self.layout = layout

    def fit_unit(self, X: sp.csr_matrix, configs: list[dict], seed: int
                 ) -> Iterator[tuple[int, Recommender]]:
        """As :meth:`BPRFamily.fit_unit`, each unit one :class:`EngineBPRMF`."""
        norm = self.validate(configs)
        X = _binary_csr(X)
        for unit in self.units(norm):
            f, lr, ureg, ireg = self._key(norm[unit[0]])
            model = EngineBPRMF(self.engine, f, lr, ureg, ireg, epochs=0, seed=seed,
                                layout=self.layout).fit(X)
            for idx in unit:
                it = norm[idx]["iterations"]
                model.partial_fit(X, it - model.epochs_done_)
                model.epochs = it
                yield idx, model
