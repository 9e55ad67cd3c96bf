"""KNN scores on the device: neighbour lists copied once, every block scored by a kernel (no
host score block), equal to the host models bit for bit, grown along k as on the host."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dptune.engine import LAUNCHES, _knn, evaluate_on, numpy_engine
from dptune.engine._knn import DeviceKNN, device_knn, knn_scorer
from dptune.metrics import evaluate, novelty_vectors
from dptune.models import ItemKNN, UserKNN
from dptune.models._families import KNNFamily
from dptune.models._knn import _KView

ENG = numpy_engine()


def _data(seed: int = 1, n_users: int = 40, n_items: int = 30):
    train = sp.random(n_users, n_items, density=0.2, random_state=seed, format="csr",
                      dtype=np.float32)
    train.data[:] = 1.0
    rel = sp.random(n_users, n_items, density=0.15, random_state=seed + 1, format="csr")
    return train, rel


@pytest.mark.parametrize("cls", [UserKNN, ItemKNN])
def test_device_scores_equal_the_host_scores_for_every_k(eng, cls):
    train, _ = _data()
    base = cls(25).fit(train)
    dev = DeviceKNN(eng, base)
    assert dev.exact
    users = np.array([5, 0, 39, 17, 17, 3])
    for k in (1, 4, 25, 2, 30):  # up, then down (restart), then beyond the lists' width
        got = eng.host(dev.scores(users, k))
        assert got.dtype == np.float32
        assert np.array_equal(got, base.with_k(min(k, 25)).score(users)), k


def test_the_production_thread_count(eng, monkeypatch):
    """The same with 128 threads per row (the simulator's default in these tests is 4)."""
    monkeypatch.setattr(_knn, "THREADS", 128)
    train, _ = _data(3)
    for cls in (UserKNN, ItemKNN):
        base = cls(10).fit(train)
        users = np.array([2, 7])
        assert np.array_equal(eng.host(DeviceKNN(eng, base).scores(users, 10)),
                              base.score(users))


@pytest.mark.parametrize("algorithm", ["userknn", "itemknn"])
@pytest.mark.parametrize("budget", [1 << 30, 0])
def test_sweep_family_evaluates_on_the_device_as_on_the_host(eng, monkeypatch, algorithm,
                                                              budget):
    """The family's growing-k models evaluated block by block on the device equal the host
    evaluation, and no host score block is computed; along increasing k each block costs one
    launch per k (the band since the previous k) while its accumulator is kept, and the
    direct route (budget 0) is the same numbers."""
    train, rel = _data(2, n_users=37)
    efd, epc = novelty_vectors(train)
    users = np.random.default_rng(0).permutation(37)
    ks = [3, 12, 6]
    configs = [{"k": k} for k in ks]
    host = {idx: evaluate(m, users, train, rel, (1, 5, 10), efd, epc, block=16)
            for idx, m in KNNFamily(algorithm).fit_unit(train, configs, seed=0)}
    fam = KNNFamily(algorithm)
    seen = []
    for idx, view in fam.fit_unit(train, configs, seed=0):
        view.growing.budget = budget
        LAUNCHES.clear()
        with monkeypatch.context() as m:
            m.setattr(_KView, "score", None)  # a host score block would fail here
            dev = evaluate_on(eng, view, users, train, rel, (1, 5, 10), efd, epc, block=16)
        np.testing.assert_array_equal(dev, host[idx])
        assert sum(LAUNCHES.values()) == 3  # 3 blocks of users: one band each
        seen.append(ks[idx])
    assert seen == sorted(ks)


def test_lists_are_copied_once_per_model_and_engine():
    train, _ = _data()
    base = UserKNN(8).fit(train)
    assert device_knn(ENG, base) is device_knn(ENG, base)
    assert device_knn(ENG, base.with_k(4)) is not device_knn(ENG, base)
    assert knn_scorer(ENG, object()) is None
    assert knn_scorer(ENG, UserKNN(3)) is None  # not fitted: the host route reports it


def test_bad_users_and_overflowing_similarities():
    train, _ = _data()
    base = ItemKNN(8).fit(train)
    dev = DeviceKNN(ENG, base)
    for bad in ([40], [-1]):
        with pytest.raises(IndexError, match=r"user codes must lie in \[0, 40\)"):
            dev.scores(np.array(bad), 3)
    base.neighbor_sims_ = base.neighbor_sims_.copy()
    base.neighbor_sims_[base.neighbor_sims_ > 0] = np.float32(2.0 ** -60)
    with pytest.raises(ValueError, match="overflow"):
        DeviceKNN(ENG, base)
    with pytest.raises(ValueError, match="fitted"):
        DeviceKNN(ENG, UserKNN(3))


def test_exactness_bound():
    """``exact`` says whether the int64 sums stay below 2**53 (the host's float64 sums are
    then exact as well): the smallest similarity sets the scale, the width the sum's size."""
    train, _ = _data()
    base = UserKNN(8).fit(train)
    base.neighbor_sims_ = base.neighbor_sims_.copy()
    base.neighbor_sims_[base.neighbor_sims_ > 0] = np.float32(2.0 ** -27)
    dev = DeviceKNN(ENG, base)
    assert dev.q == 24 + 26 and not dev.exact  # 2**-27 = 0.5 * 2**-26; width 8: 4 more bits
