"""The array engine's top-N and per-user metrics equal the host engine's (NumPy back-end)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dptune.engine import evaluate_on, top_n_on
from dptune.metrics import evaluate, novelty_vectors, top_n
from dptune.models import BPRMF, ItemKNN


class Fixed:
    """A model whose scores are a fixed matrix (rows = users)."""

    def __init__(self, scores: np.ndarray) -> None:
        self.scores = scores

    def score(self, users: np.ndarray) -> np.ndarray:
        return self.scores[users].copy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_top_n_matches_the_host_order_on_ties_and_masked_items(eng, dtype):
    rng = np.random.default_rng(3)
    for _ in range(30):
        s = rng.integers(-2, 3, size=(9, 40)).astype(dtype)  # many ties, across the N-th slot
        s[rng.random(s.shape) < 0.3] = -np.inf
        s[rng.random(s.shape) < 0.1] = -0.0
        for n in (1, 2, 5, 10, 39, 40, 55):
            assert np.array_equal(eng.host(top_n_on(eng, eng.put(s), n)), top_n(s, n)), n


def test_top_n_distinct_scores_and_nan(eng):
    s = np.random.default_rng(0).standard_normal((20, 300)).astype(np.float32)
    assert np.array_equal(eng.host(top_n_on(eng, eng.put(s), 10)), top_n(s, 10))
    s[3, 7] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        top_n_on(eng, eng.put(s), 10)


@pytest.mark.parametrize("aware", [True, False])
@pytest.mark.parametrize("cutoffs", [(1, 5, 10), (3,), (1, 30)])
def test_evaluate_matches_host_on_random_data(eng, aware, cutoffs):
    rng = np.random.default_rng(1)
    n_users, n_items = 45, 25  # cutoff 30 > n_items: empty list positions
    scores = rng.integers(0, 5, size=(n_users, n_items)).astype(np.float32)
    train = sp.random(n_users, n_items, density=0.2, random_state=1, format="csr")
    rel = sp.random(n_users, n_items, density=0.15, random_state=2, format="csr")
    efd, epc = novelty_vectors(train)
    users = rng.permutation(n_users)
    host = evaluate(Fixed(scores), users, train, rel, cutoffs, efd, epc, block=16,
                    relevance_aware=aware)
    dev = evaluate_on(eng, Fixed(scores), users, train, rel, cutoffs, efd, epc, block=16,
                      relevance_aware=aware)
    np.testing.assert_allclose(dev, host, rtol=1e-12, atol=0, equal_nan=True)


def test_evaluate_without_an_engine_is_the_host_route():
    rng = np.random.default_rng(2)
    scores = rng.standard_normal((6, 12)).astype(np.float32)
    train = sp.random(6, 12, density=0.3, random_state=3, format="csr")
    rel = sp.random(6, 12, density=0.3, random_state=4, format="csr")
    efd, epc = novelty_vectors(train)
    a = evaluate(Fixed(scores), np.arange(6), train, rel, (1, 3), efd, epc)
    b = evaluate_on(None, Fixed(scores), np.arange(6), train, rel, (1, 3), efd, epc)
    assert np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("make", [lambda X: ItemKNN(k=20).fit(X),
                                  lambda X: BPRMF(16, 0.05, 0.0025, 0.00025, 3, seed=1).fit(X)],
                         ids=["itemknn", "bpr-mf"])
def test_evaluate_matches_host_for_real_models(eng, tiny_fold, make):
    """Models fitted on a fold of ml-latest-small; every 12th user evaluated (ItemKNN scores on
    the device by a kernel, which the simulator runs one Python thread per device thread)."""
    fd = tiny_fold
    model = make(fd.train)
    args = (fd.users[::12], fd.train, fd.relevant, (1, 5, 10), fd.efd, fd.epc)
    host = evaluate(model, *args, block=32)
    dev = evaluate_on(eng, model, *args, block=32)
    np.testing.assert_allclose(dev, host, rtol=1e-12, atol=0, equal_nan=True)
