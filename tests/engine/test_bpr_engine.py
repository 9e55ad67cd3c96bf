"""BPR-MF on the array engine: same start as the host kernel, pausable, valid samples, and the
same quality as the host kernel (P@10 / nDCG@10 within its seed noise floor)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dptune.engine import (
    EngineBPRFamily,
    EngineBPRMF,
    Interactions,
    evaluate_on,
    numpy_engine,
    sample_triples,
)
from dptune.metrics import evaluate
from dptune.models import BPRMF
from dptune.models._families import BPRFamily

ENG = numpy_engine()


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


def _triples(eng, X, seed, epoch):
    return tuple(eng.host(a) for a in sample_triples(eng, Interactions(eng, X), seed, epoch))


def test_samples_are_positive_and_negative_pairs_and_depend_on_seed_and_epoch_only(eng):
    X = _data()
    u, i, j = _triples(eng, X, 3, 2)
    dense = X.toarray() > 0
    assert 0 < u.size < X.nnz and not (u == 0).any()  # user 0's steps are dropped
    assert dense[u, i].all() and not dense[u, j].any()
    again = _triples(eng, X, 3, 2)
    assert all(np.array_equal(a, b) for a, b in zip((u, i, j), again, strict=True))
    assert not np.array_equal(_triples(eng, X, 3, 1)[0], u)


def test_pausing_does_not_change_the_model_and_training_moves_it(eng):
    X = _data(1)
    full = EngineBPRMF(eng, 6, 0.05, 0.01, 0.001, 3, seed=2, batch=16).fit(X)
    paused = EngineBPRMF(eng, 6, 0.05, 0.01, 0.001, 1, seed=2, batch=16).fit(X)
    paused.partial_fit(X, 2)
    assert paused.epochs_done_ == full.epochs_done_ == 3
    assert full.skipped_ == paused.skipped_ > 0
    assert np.array_equal(paused.user_factors_, full.user_factors_)
    assert np.array_equal(paused.item_bias_, full.item_bias_)
    start = EngineBPRMF(eng, 6, 0.05, 0.01, 0.001, 0, seed=2).fit(X)
    assert not np.allclose(start.item_factors_, full.item_factors_)


def test_one_triple_per_batch_is_the_sequential_update():
    """With batches of one triple the update is the host kernel's formula, step by step."""
    X = _data(2)
    lr, ureg, ireg = 0.1, 0.02, 0.003
    model = EngineBPRMF(ENG, 4, lr, ureg, ireg, 0, seed=1, batch=1).fit(X)
    P, Q, B = model.user_factors_, model.item_factors_, model.item_bias_
    for u, i, j in zip(*_triples(ENG, X, 1, 0), strict=True):
        pu, qi, qj = P[u].copy(), Q[i].copy(), Q[j].copy()
        z = np.float32(1.0 / (1.0 + np.exp(np.float64(B[i] - B[j] + pu @ (qi - qj)))))
        P[u] = pu + lr * (z * (qi - qj) - ureg * pu)
        Q[i] = qi + lr * (z * pu - ireg * qi)
        Q[j] = qj + lr * (-z * pu - ireg * qj)
        B[i], B[j] = B[i] + lr * (z - ireg * B[i]), B[j] + lr * (-z - ireg * B[j])
    model.partial_fit(X, 1)
    np.testing.assert_allclose(model.user_factors_, P, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(model.item_factors_, Q, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(model.item_bias_, B, rtol=1e-4, atol=1e-6)


def test_family_snapshots_along_iterations():
    X = _data(3)
    cfgs = [{"factors": 4, "iterations": it, "learning_rate": 0.05, "user_reg": 0.01,
             "item_reg": 0.001} for it in (2, 1)]
    fam = EngineBPRFamily(ENG)
    assert fam.units(cfgs) == BPRFamily().units(cfgs)
    seen = []
    for idx, model in fam.fit_unit(X, cfgs, seed=4):
        ref = EngineBPRMF(ENG, 4, 0.05, 0.01, 0.001, cfgs[idx]["iterations"], seed=4).fit(X)
        assert np.array_equal(model.user_factors_, ref.user_factors_)
        seen.append(idx)
    assert seen == [1, 0]


def _quality(fd, make, seeds):
    """Mean P@10 and nDCG@10 over the fold's users, one row per seed."""
    out = []
    for seed in seeds:
        v = evaluate(make(seed), fd.users, fd.train, fd.relevant, (10,), fd.efd, fd.epc)
        out.append((np.nanmean(v[1, 0]), np.nanmean(v[0, 0])))
    return np.array(out)


def _same_quality(fd, factors, lr, epochs, seeds, eng=ENG):
    """The engine's mean over seeds lies within the host kernel's seed noise floor: the range
    (largest minus smallest) of the host kernel's per-seed values, for P@10 and nDCG@10."""
    ureg, ireg = lr * 0.05, lr * 0.005
    host = _quality(fd, lambda s: BPRMF(factors, lr, ureg, ireg, epochs, seed=s).fit(fd.train),
                    seeds)
    dev = _quality(fd, lambda s: EngineBPRMF(eng, factors, lr, ureg, ireg, epochs,
                                             seed=s).fit(fd.train), seeds)
    floor = host.max(axis=0) - host.min(axis=0)
    gap = np.abs(dev.mean(axis=0) - host.mean(axis=0))
    assert (host.mean(axis=0) > 0.1).all()  # a trained model, not a random one
    assert (gap <= floor).all(), (host, dev, gap, floor)


def test_quality_matches_the_host_kernel_quick(eng, tiny_fold):
    _same_quality(tiny_fold, factors=16, lr=0.05, epochs=6, seeds=range(3), eng=eng)


@pytest.mark.slow
@pytest.mark.parametrize(("factors", "lr", "epochs"), [(16, 0.05, 8), (64, 0.1, 16)])
def test_quality_matches_the_host_kernel_over_five_seeds(eng, tiny_fold, factors, lr, epochs):
    _same_quality(tiny_fold, factors, lr, epochs, seeds=range(5), eng=eng)


def test_engine_scores_stay_on_the_engine_and_match_the_host_scores(eng, tiny_fold):
    fd = tiny_fold
    model = EngineBPRMF(eng, 8, 0.05, 0.0025, 0.00025, 2, seed=0).fit(fd.train)
    args = (fd.users, fd.train, fd.relevant, (1, 10), fd.efd, fd.epc)
    np.testing.assert_allclose(evaluate_on(eng, model, *args), evaluate(model, *args),
                               rtol=1e-12, atol=0, equal_nan=True)
