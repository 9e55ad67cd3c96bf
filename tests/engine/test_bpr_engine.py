"""BPR-MF on the engine: same start as the host kernel, pausable, snapshots along iterations,
scores kept on the engine, and the same quality as the host kernel (P@10 / nDCG@10 within its
seed noise floor over 5 seeds)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dptune.engine import EngineBPRFamily, EngineBPRMF, Layout, evaluate_on, numpy_engine
from dptune.engine._cuda import simulated
from dptune.metrics import evaluate, novelty_vectors
from dptune.models import BPRMF
from dptune.models._families import BPRFamily

ENG = numpy_engine()
#: One worker: sequential, so bit-reproducible on the simulator and on a device alike.
SEQUENTIAL = Layout(lanes=1, workers=1, per_block=1)


def _data(seed: int = 0, n_users: int = 30, n_items: int = 20) -> sp.csr_matrix:
    X = sp.random(n_users, n_items, density=0.25, random_state=seed, format="lil",
                  dtype=np.float32)
    X[0, :] = 1.0  # a user who rated every item: no step of theirs can be taken
    X = sp.csr_matrix(X)
    X.data[:] = 1.0
    return X


def test_zero_epochs_is_the_host_initialisation():
    X = _data()
    host = BPRMF(8, 0.05, 0.01, 0.001, 0, seed=5).fit(X)
    dev = EngineBPRMF(ENG, 8, 0.05, 0.01, 0.001, 0, seed=5).fit(X)
    assert np.array_equal(dev.user_factors_, host.user_factors_)
    assert np.array_equal(dev.item_factors_, host.item_factors_)
    assert np.array_equal(dev.score(np.arange(4)), host.score(np.arange(4)))
    assert dev.epochs_done_ == 0 and dev.skipped_ == 0


def test_pausing_does_not_change_the_model_and_training_moves_it(eng):
    X = _data(1)
    full = EngineBPRMF(eng, 6, 0.05, 0.01, 0.001, 3, seed=2, layout=SEQUENTIAL).fit(X)
    paused = EngineBPRMF(eng, 6, 0.05, 0.01, 0.001, 1, seed=2, layout=SEQUENTIAL).fit(X)
    paused.partial_fit(X, 2)
    assert paused.epochs_done_ == full.epochs_done_ == 3
    assert full.skipped_ == paused.skipped_ > 0
    assert np.array_equal(paused.user_factors_, full.user_factors_)
    assert np.array_equal(paused.item_bias_, full.item_bias_)
    start = EngineBPRMF(eng, 6, 0.05, 0.01, 0.001, 0, seed=2).fit(X)
    assert not np.allclose(start.item_factors_, full.item_factors_)


def test_bad_arguments():
    X = _data()
    model = EngineBPRMF(ENG, 4, 0.05, 0.01, 0.001, 0).fit(X)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="epochs must be an integer"):
            model.partial_fit(X, bad)
    with pytest.raises(ValueError, match="shape"):
        model.partial_fit(_data(n_users=5), 1)


def test_family_snapshots_along_iterations():
    X = _data(3)
    cfgs = [{"factors": 4, "iterations": it, "learning_rate": 0.05, "user_reg": 0.01,
             "item_reg": 0.001} for it in (2, 1)]
    fam = EngineBPRFamily(ENG, layout=SEQUENTIAL)
    assert fam.units(cfgs) == BPRFamily().units(cfgs)
    seen = []
    for idx, model in fam.fit_unit(X, cfgs, seed=4):
        ref = EngineBPRMF(ENG, 4, 0.05, 0.01, 0.001, cfgs[idx]["iterations"], seed=4,
                          layout=SEQUENTIAL).fit(X)
        assert np.array_equal(model.user_factors_, ref.user_factors_)
        seen.append(idx)
    assert seen == [1, 0]


def _quality(train, relevant, make, seeds):
    """Mean P@10 and nDCG@10 over the users, one row per seed."""
    efd, epc = novelty_vectors(train)
    users = np.arange(train.shape[0])
    out = []
    for seed in seeds:
        v = evaluate(make(seed), users, train, relevant, (10,), efd, epc)
        out.append((np.nanmean(v[1, 0]), np.nanmean(v[0, 0])))
    return np.array(out)


def _same_quality(train, relevant, factors, lr, epochs, seeds, eng=ENG, layout=None,
                  trained=0.1):
    """The engine's mean over seeds lies within the host kernel's seed noise floor: the range
    (largest minus smallest) of the host kernel's per-seed values, for P@10 and nDCG@10."""
    ureg, ireg = lr * 0.05, lr * 0.005
    host = _quality(train, relevant,
                    lambda s: BPRMF(factors, lr, ureg, ireg, epochs, seed=s).fit(train), seeds)
    dev = _quality(train, relevant, lambda s: EngineBPRMF(
        eng, factors, lr, ureg, ireg, epochs, seed=s, layout=layout).fit(train), seeds)
    floor = host.max(axis=0) - host.min(axis=0)
    gap = np.abs(dev.mean(axis=0) - host.mean(axis=0))
    assert (host.mean(axis=0) > trained).all()  # a trained model, not a random one
    assert (gap <= floor).all(), (host, dev, gap, floor)


def test_quality_matches_the_host_kernel_over_five_seeds(eng, planted):
    """P@10 and nDCG@10 of the kernel against the host kernel over 5 seeds, on data with a
    planted group structure (48 users, 40 items, about 330 interactions; a random model
    scores P@10 about 0.09, a trained one about 0.27). Four workers, one thread each: on the
    simulator blocks run one after the other, so this checks the kernel's arithmetic and
    sampling, not the device's concurrency."""
    train, relevant = planted(0)
    _same_quality(train, relevant, factors=8, lr=0.1, epochs=10, seeds=range(5), eng=eng,
                  layout=Layout(lanes=1, workers=4, per_block=1), trained=0.2)


@pytest.mark.slow
@pytest.mark.skipif(simulated(), reason="hours on the CUDA simulator; runs where numba sees a "
                    "device (NUMBA_ENABLE_CUDASIM=0)")
@pytest.mark.parametrize(("factors", "lr", "epochs"), [(16, 0.05, 8), (64, 0.1, 16)])
def test_quality_on_the_embedded_data_over_five_seeds(eng, tiny_fold, factors, lr, epochs):
    """The same check on a fold of ml-latest-small with the default layout (concurrent
    workers on the device)."""
    fd = tiny_fold
    _same_quality(fd.train, fd.relevant, factors, lr, epochs, seeds=range(5), eng=eng)


def test_engine_scores_stay_on_the_engine_and_match_the_host_scores(eng, planted):
    train, relevant = planted(1)
    efd, epc = novelty_vectors(train)
    model = EngineBPRMF(eng, 8, 0.05, 0.0025, 0.00025, 2, seed=0, layout=SEQUENTIAL).fit(train)
    model.score = None  # scoring must not go through the host
    args = (np.arange(train.shape[0]), train, relevant, (1, 10), efd, epc)
    dev = evaluate_on(eng, model, *args, block=16)
    del model.score
    np.testing.assert_allclose(dev, evaluate(model, *args), rtol=1e-12, atol=0, equal_nan=True)
