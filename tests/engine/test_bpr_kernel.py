"""The device BPR-MF epoch kernel: its random stream, its triples, its arithmetic (one worker
is exactly the sequential update) and its launches (one per epoch, nothing else on the device).

Run on numba's CUDA simulator in the default test run (see conftest), and on a device where
numba sees one (``NUMBA_ENABLE_CUDASIM=0``): the device functions are called from small test
kernels, so the draws checked are the target's own."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from numba import cuda

from dptune.engine import LAUNCHES, Engine, EngineBPRMF, Layout, numpy_engine
from dptune.engine._block import MAX_FACTORS_PER_LANE
from dptune.engine._bpr import MAX_WORKERS, MIN_STEPS_PER_WORKER
from dptune.engine._cuda import simulated
from dptune.engine._sampling import draw_triple, epoch_key, philox
from dptune.models import BPRMF

ENG = numpy_engine()
SIMULATED = simulated()  # the engine tests' conftest switched the simulator on, unless told not to


@cuda.jit
def _philox_kernel(ctr, key, out):  # pragma: no cover - device code
    """Row ``t``: Philox of counter ``ctr[t]`` under key ``key[t]``."""
    t = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if t < out.shape[0]:
        a, b, c, d = philox(ctr[t, 0], ctr[t, 1], ctr[t, 2], ctr[t, 3], key[t, 0], key[t, 1])
        out[t, 0] = a
        out[t, 1] = b
        out[t, 2] = c
        out[t, 3] = d


@cuda.jit
def _triples_kernel(indptr, indices, rows, n_items, k0, k1, out):  # pragma: no cover
    """Row ``s``: the triple of step ``s`` (device code)."""
    s = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if s < out.shape[0]:
        u, i, j = draw_triple(indptr, indices, rows, n_items, s, k0, k1)
        out[s, 0] = u
        out[s, 1] = i
        out[s, 2] = j


def _with_full_user(seed: int = 0, n_users: int = 12, n_items: int = 10) -> sp.csr_matrix:
    """A small binary matrix whose user 0 has interacted with every item (no step of theirs
    can be taken)."""
    X = sp.random(n_users, n_items, density=0.3, random_state=seed, format="lil",
                  dtype=np.float32)
    X[0, :] = 1.0
    X = sp.csr_matrix(X)
    X.data[:] = 1.0
    return X


def test_philox_known_answers():
    """Philox-4x32-10 reproduces the published known-answer vectors (Random123), computed by
    a kernel (on the simulator or a device)."""
    cases = [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
         (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
    ]
    ctr = np.array([c for c, _, _ in cases], dtype=np.uint64)
    key = np.array([k for _, k, _ in cases], dtype=np.uint64)
    out = np.zeros((len(cases), 4), dtype=np.uint64)
    _philox_kernel[1, 32](ctr, key, out)
    assert [tuple(int(g) for g in row) for row in out] == [want for _, _, want in cases]


def test_epoch_key_depends_on_seed_and_epoch_only():
    assert epoch_key(3, 2) == epoch_key(3, 2)
    assert len({epoch_key(3, 2), epoch_key(3, 1), epoch_key(4, 2)}) == 3


def _triples(X, seed, epoch, steps):
    """The triples of steps ``0 .. steps - 1``, drawn by a kernel (one thread per step), so
    that the draws are the target's own: the simulator's, or a device's."""
    indptr, indices, rows = BPRMF._arrays(X)
    k0, k1 = epoch_key(seed, epoch)
    out = np.zeros((steps, 3), dtype=np.int64)
    _triples_kernel[-(-steps // 32), 32](indptr, indices, rows, np.int64(X.shape[1]), k0, k1, out)
    return out


def test_triples_are_positive_and_negative_pairs_uniform_over_the_interactions():
    X = _with_full_user()
    dense = X.toarray() > 0
    t = _triples(X, 3, 2, 40 * X.nnz)
    skip = t[:, 2] < 0
    assert (skip == (t[:, 0] == 0)).all() and skip.any()  # exactly user 0's steps are skipped
    u, i, j = t[~skip].T
    assert dense[u, i].all() and not dense[u, j].any()
    # every interaction is the positive about equally often (chi-square, 40 expected each)
    drawn, counts = np.unique(t[:, 0] * X.shape[1] + t[:, 1], return_counts=True)
    rows, cols = X.nonzero()
    assert np.array_equal(drawn, np.sort(rows * X.shape[1] + cols))
    chi2 = ((counts - 40.0) ** 2 / 40.0).sum()
    assert counts.min() > 0 and chi2 < X.nnz + 6 * math.sqrt(2 * X.nnz), chi2
    again = _triples(X, 3, 2, 50)
    assert np.array_equal(again, t[:50])
    assert not np.array_equal(_triples(X, 3, 1, 50), t[:50])


def _reference_epoch(X, P, Q, B, lr, ureg, ireg, lanes, seed, epoch):
    """The kernel with one worker, in NumPy float32 step by step: each lane's part of the dot
    product over its factors, the lanes summed by the tree, then the host kernel's update."""
    lr, ureg, ireg = np.float32(lr), np.float32(ureg), np.float32(ireg)
    F = P.shape[1]
    skipped = 0
    for u, i, j in _triples(X, seed, epoch, X.nnz):
        if j < 0:
            skipped += 1
            continue
        parts = []
        for lane in range(lanes):
            acc = np.float32(0.0)
            for f in range(lane, F, lanes):
                acc += P[u, f] * (Q[i, f] - Q[j, f])
            parts.append(acc)
        stride = lanes // 2
        while stride:
            for lane in range(stride):
                parts[lane] += parts[lane + stride]
            stride //= 2
        x = (B[i] - B[j]) + parts[0]
        z = np.float32(1.0 / (1.0 + math.exp(np.float64(x))))
        pu, qi, qj = P[u].copy(), Q[i].copy(), Q[j].copy()
        P[u] = pu + lr * (z * (qi - qj) - ureg * pu)
        Q[i] = qi + lr * (z * pu - ireg * qi)
        Q[j] = qj + lr * (-z * pu - ireg * qj)
        B[i] += lr * (z - ireg * B[i])
        B[j] += lr * (-z - ireg * B[j])
    return skipped


@pytest.mark.parametrize("lanes", [1, 4])
def test_one_worker_is_the_sequential_update(lanes):
    """With one worker the epoch is the host kernel's update applied to the epoch's triples in
    step order, bit for bit on the simulator (lanes only split the dot product, summed by the
    tree); on a device within float32 rounding (its compiler may fuse a product and a sum
    into one rounding, an FMA)."""
    X = _with_full_user(1, n_users=8, n_items=9)
    lr, ureg, ireg = 0.1, 0.02, 0.003
    model = EngineBPRMF(ENG, 6, lr, ureg, ireg, 0, seed=1,
                        layout=Layout(lanes=lanes, workers=1, per_block=1)).fit(X)
    P, Q, B = model.user_factors_, model.item_factors_, model.item_bias_
    skipped = _reference_epoch(X, P, Q, B, lr, ureg, ireg, lanes, seed=1, epoch=0)
    model.partial_fit(X, 1)
    assert model.skipped_ == skipped > 0
    tol = 0 if SIMULATED else 1e-5
    for got, want in ((model.user_factors_, P), (model.item_factors_, Q),
                      (model.item_bias_, B)):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


class _Counting:
    """An array namespace that records every attribute taken from it."""

    def __init__(self, xp, calls):
        self._xp = xp
        self._calls = calls

    def __getattr__(self, name):
        self._calls.append(f"xp.{name}")
        return getattr(self._xp, name)


def test_one_launch_per_epoch_and_no_other_device_work(monkeypatch, planted):
    """An epoch is exactly one kernel launch, counted at dptune's dispatch point and (on the
    simulator) independently inside numba; once the training data is on the engine an epoch
    makes no array-library call and moves nothing (no put, host, zeros)."""
    calls: list[str] = []
    for name in ("put", "host", "zeros", "kth_largest"):
        orig = getattr(Engine, name)
        monkeypatch.setattr(Engine, name, lambda self, *a, _o=orig, _n=name, **k: (
            calls.append(f"engine.{_n}"), _o(self, *a, **k))[1])
    ran: list[str] = []
    if SIMULATED:
        from numba.cuda.simulator.kernel import FakeCUDAKernel

        call = FakeCUDAKernel.__call__

        def counted(self, *args):
            if not self._device:
                ran.append(self.fn.__name__)
            return call(self, *args)

        monkeypatch.setattr(FakeCUDAKernel, "__call__", counted)
    X, _ = planted(0, n_users=16, n_items=12, groups=2, n_train=3, n_rel=1)
    eng = Engine(xp=_Counting(ENG.xp, calls), device="cpu", kind="numpy")
    layout = Layout.for_model(8, X.nnz)  # the default layout: 2 lanes, 16 workers per block
    assert layout.lanes == 2 and layout.per_block == 16
    model = EngineBPRMF(eng, 8, 0.05, 0.0025, 0.00025, 1, seed=0).fit(X)
    assert model.epochs_done_ == 1
    for epochs in (1, 3):
        calls.clear()
        ran.clear()
        LAUNCHES.clear()
        model.partial_fit(X, epochs)
        assert dict(LAUNCHES) == {"bpr_epoch": epochs}
        assert calls == []
        if SIMULATED:
            assert ran == ["bpr_epoch"] * epochs
    assert np.isfinite(model.user_factors_).all() and np.isfinite(model.item_bias_).all()


def test_layout_default_and_validation():
    assert Layout.for_model(8, 300) == Layout(lanes=2, workers=4, per_block=16)
    assert Layout.for_model(1809, 10**6) == Layout(lanes=32, workers=MAX_WORKERS, per_block=1)
    assert Layout.for_model(1, 10) == Layout(lanes=1, workers=1, per_block=32)
    big = Layout.for_model(113, 400 * MIN_STEPS_PER_WORKER)
    assert (big.lanes, big.workers, big.grid, big.block) == (32, 400, 400, (32, 1))
    for bad in ({"lanes": 3, "workers": 1, "per_block": 1},
                {"lanes": 0, "workers": 1, "per_block": 1},
                {"lanes": 1, "workers": 1, "per_block": 33},
                {"lanes": 64, "workers": 1, "per_block": 16},
                {"lanes": 1, "workers": True, "per_block": 1}):
        with pytest.raises(ValueError, match="Layout"):
            Layout(**bad)


def test_a_lane_owns_at_most_its_local_arrays_worth_of_factors():
    """The kernel keeps a lane's factors of a step in local arrays of MAX_FACTORS_PER_LANE:
    the default layout holds the paper's largest model (1,809 factors) and up to 2,048; a
    layout that would give a lane more is refused before any device work."""
    Layout.for_model(1809, 10).check_factors(1809)
    Layout.for_model(2048, 10).check_factors(2048)
    Layout(lanes=1, workers=1, per_block=1).check_factors(MAX_FACTORS_PER_LANE)
    for layout, factors in ((Layout.for_model(2049, 10), 2049),
                            (Layout(lanes=1, workers=1, per_block=1), MAX_FACTORS_PER_LANE + 1)):
        with pytest.raises(ValueError, match="Layout: .* factors"):
            layout.check_factors(factors)
    X = _with_full_user(1, n_users=8, n_items=9)
    with pytest.raises(ValueError, match="Layout: 1 lanes hold at most 64 factors"):
        EngineBPRMF(ENG, 65, 0.1, 0.0, 0.0, 1,
                    layout=Layout(lanes=1, workers=1, per_block=1)).fit(X)
