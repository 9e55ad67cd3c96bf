"""Tests of dptune.models: KNN scorers, BPR-MF kernel, cornac adapter, families."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dptune.errors import DptuneError
from dptune.models import (
    BPRMF,
    CornacModel,
    ItemKNN,
    UserKNN,
    get_family,
)

RATINGS = "/work/main/dptune/datasets/ml-latest-small/ratings.csv.gz"


def csr(rows: list[list[int]], n_items: int) -> sp.csr_matrix:
    """Binary CSR from per-user item lists."""
    r = [u for u, items in enumerate(rows) for _ in items]
    c = [i for items in rows for i in items]
    return sp.csr_matrix(
        (np.ones(len(r), dtype=np.float32), (r, c)), shape=(len(rows), n_items)
    )


@lru_cache(maxsize=1)
def movielens() -> tuple[np.ndarray, np.ndarray, int, int]:
    """Embedded ml-latest-small as (user code, item code, n_users, n_items)."""
    df = pd.read_csv(RATINGS)
    u = pd.factorize(df["userId"], sort=True)[0].astype(np.int32)
    i = pd.factorize(df["movieId"], sort=True)[0].astype(np.int32)
    return u, i, int(u.max()) + 1, int(i.max()) + 1


def movielens_matrix() -> sp.csr_matrix:
    u, i, nu, ni = movielens()
    return sp.csr_matrix((np.ones(len(u), np.float32), (u, i)), shape=(nu, ni))


# Tiny example used by the hand-computed tests (4 users x 5 items):
#   u0: {0, 1, 2}   u1: {0, 1}   u2: {1, 3}   u3: {3, 4}
TINY = csr([[0, 1, 2], [0, 1], [1, 3], [3, 4]], 5)
S6 = 1 / math.sqrt(6)  # 0.40825
S2 = 1 / math.sqrt(2)  # 0.70711
S3 = 1 / math.sqrt(3)  # 0.57735


# ------------------------------------------------------------------------------------ UserKNN


def test_userknn_hand_computed() -> None:
    # user degrees: |u0|=3, |u1|=|u2|=|u3|=2
    # sim(0,1) = |{0,1}| / sqrt(3*2) = 2/sqrt6 = 0.8165   sim(0,2) = |{1}| / sqrt6 = 0.4082
    # sim(0,3) = 0                                         sim(1,2) = |{1}| / sqrt(2*2) = 0.5
    # sim(1,3) = 0                                         sim(2,3) = |{3}| / 2 = 0.5
    m1 = UserKNN(1).fit(TINY)
    # k=1: N(u0)={u1}, N(u1)={u0}, N(u2)={u1} (tie 0.5 with u3 -> lower index), N(u3)={u2}
    assert m1.neighbors_[:, 0].tolist() == [1, 0, 1, 2]
    expected1 = np.array(
        [
            [2 * S6, 2 * S6, 0, 0, 0],  # 0.8165 * X[u1]
            [2 * S6, 2 * S6, 2 * S6, 0, 0],  # 0.8165 * X[u0]
            [0.5, 0.5, 0, 0, 0],  # 0.5 * X[u1]
            [0, 0.5, 0, 0.5, 0],  # 0.5 * X[u2]
        ]
    )
    np.testing.assert_allclose(m1.score(np.arange(4)), expected1, rtol=1e-6)
    m2 = UserKNN(2).fit(TINY)
    expected2 = np.array(
        [
            # N(u0)={u1 .8165, u2 .4082}: .8165*[1,1,0,0,0] + .4082*[0,1,0,1,0]
            [2 * S6, 3 * S6, 0, S6, 0],
            # N(u1)={u0 .8165, u2 .5}: .8165*[1,1,1,0,0] + .5*[0,1,0,1,0]
            [2 * S6, 2 * S6 + 0.5, 2 * S6, 0.5, 0],
            # N(u2)={u1 .5, u3 .5} (u0 .4082 dropped): .5*[1,1,0,0,0] + .5*[0,0,0,1,1]
            [0.5, 0.5, 0, 0.5, 0.5],
            # N(u3)={u2 .5} only: u0, u1 have similarity 0 and are not neighbours
            [0, 0.5, 0, 0.5, 0],
        ]
    )
    np.testing.assert_allclose(m2.score(np.arange(4)), expected2, rtol=1e-6)
    assert m2.n_neighbors_.tolist() == [2, 2, 2, 1]
    s = m2.score(np.array([3, 0]))
    assert s.dtype == np.float32 and s.shape == (2, 5)
    np.testing.assert_array_equal(s, m2.score(np.arange(4))[[3, 0]])


def test_itemknn_hand_computed() -> None:
    # item columns: i0={u0,u1} i1={u0,u1,u2} i2={u0} i3={u2,u3} i4={u3}
    # sim(0,1)=2/sqrt(2*3)=.8165  sim(0,2)=1/sqrt2=.7071  sim(1,2)=1/sqrt3=.5774
    # sim(1,3)=1/sqrt(3*2)=.4082  sim(3,4)=1/sqrt2=.7071  all other pairs 0
    m1 = ItemKNN(1).fit(TINY)
    # k=1: N(i0)={i1} N(i1)={i0} N(i2)={i0} N(i3)={i4} N(i4)={i3}
    assert m1.neighbors_[:, 0].tolist() == [1, 0, 0, 4, 3]
    # score(u, i) = sum of sim(i, j) over j in I_u ∩ N_k(i)
    expected1 = np.array(
        [
            [2 * S6, 2 * S6, S2, 0, 0],  # I_u0={0,1,2}: i0<-i1, i1<-i0, i2<-i0
            [2 * S6, 2 * S6, S2, 0, 0],  # I_u1={0,1}: same neighbours present
            [2 * S6, 0, 0, 0, S2],  # I_u2={1,3}: i0<-i1, i4<-i3
            [0, 0, 0, S2, S2],  # I_u3={3,4}: i3<-i4, i4<-i3
        ]
    )
    np.testing.assert_allclose(m1.score(np.arange(4)), expected1, rtol=1e-6)
    m2 = ItemKNN(2).fit(TINY)
    # k=2: N(i0)={i1,i2} N(i1)={i0 .8165, i2 .5774} N(i2)={i0 .7071, i1 .5774}
    #      N(i3)={i4 .7071, i1 .4082} N(i4)={i3}
    expected2 = np.array(
        [
            [2 * S6 + S2, 2 * S6 + S3, S2 + S3, S6, 0],  # I_u0={0,1,2}
            [2 * S6, 2 * S6, S2 + S3, S6, 0],  # I_u1={0,1}
            [2 * S6, 0, S3, S6, S2],  # I_u2={1,3}
            [0, 0, 0, S2, S2],  # I_u3={3,4}
        ]
    )
    np.testing.assert_allclose(m2.score(np.arange(4)), expected2, rtol=1e-6)


def test_knn_ties_are_deterministic() -> None:
    # u0 = {0}; u1, u2, u3 each = {0, k}: sim(0, v) = 1/sqrt2 for v = 1, 2, 3 (a three-way tie)
    X = csr([[0], [0, 1], [0, 2], [0, 3], []], 4)
    m = UserKNN(2).fit(X)
    assert m.neighbors_[0].tolist() == [1, 2]  # ties -> lower index first
    np.testing.assert_allclose(m.score(np.array([0]))[0], [2 * S2, S2, S2, 0], rtol=1e-6)
    # the same after a permutation of the tied users' rows (their codes decide, not the order)
    X2 = csr([[0], [0, 3], [0, 2], [0, 1], []], 4)
    assert UserKNN(2).fit(X2).neighbors_[0].tolist() == [1, 2]
    # empty user: no neighbours, all-zero scores, never a neighbour of anyone
    assert m.n_neighbors_[4] == 0 and not (m.neighbors_ == 4).any()
    np.testing.assert_array_equal(m.score(np.array([4])), np.zeros((1, 4), np.float32))
    # repeated fits are identical
    again = UserKNN(2).fit(X)
    np.testing.assert_array_equal(again.neighbors_, m.neighbors_)
    np.testing.assert_array_equal(again.neighbor_sims_, m.neighbor_sims_)
    # similarity is symmetric bit for bit
    mi = ItemKNN(3).fit(X)
    W = mi.weights_.toarray()
    np.testing.assert_array_equal(W, W.T)


def test_knn_k_larger_than_rows_and_binarises() -> None:
    R = TINY.copy()
    R.data[:] = 4.5  # ratings, not ones: the model works on the binary pattern
    big = UserKNN(50).fit(R)
    assert big.neighbors_.shape == (4, 3)
    np.testing.assert_array_equal(big.score(np.arange(4)), UserKNN(3).fit(TINY).score(np.arange(4)))
    Z = sp.csr_matrix((np.r_[TINY.data, 0.0], np.r_[TINY.indices, 2], np.r_[TINY.indptr, 10]),
                      shape=(5, 5))  # row 4 holds an explicit zero: no interaction
    np.testing.assert_array_equal(UserKNN(3).fit(Z).score(np.arange(5))[4], np.zeros(5))


@pytest.mark.parametrize("cls", [UserKNN, ItemKNN])
def test_knn_scoring_kernel_equals_scipy_product(cls) -> None:
    # the compiled scatter-add must reproduce scipy's CSR product bit for bit (same loop order),
    # for the whole top-k matrix and for a band of ranks added onto earlier partial sums
    X = movielens_matrix()[:, :400].tocsr()
    m = cls(60).fit(X)
    users = np.arange(0, X.shape[0], 2)[::-1].copy()  # any order, not only ascending
    X64 = m.X_.astype(np.float64)

    def scipy_scores(W: sp.csr_matrix) -> np.ndarray:
        W = W.astype(np.float64)
        return (W[users] @ X64).toarray() if cls is UserKNN else (X64[users] @ W.T).toarray()

    np.testing.assert_array_equal(m._band_scores(users, m._band_matrix(m.weights_)),
                                  scipy_scores(m.weights_))
    acc = m._band_scores(users, m._band_matrix(m._weights(20)))
    m._band_scores(users, m._band_matrix(m._weights(60, 20)), out=acc)
    np.testing.assert_array_equal(acc, scipy_scores(m._weights(20)) + scipy_scores(m._weights(60, 20)))
    with pytest.raises(IndexError):
        m.score(np.array([X.shape[0]]))
    with pytest.raises(IndexError):
        m.score(np.array([-1]))


@pytest.mark.parametrize("cls", [UserKNN, ItemKNN])
def test_with_k_equals_fresh_fit(cls) -> None:
    X = movielens_matrix()
    if cls is ItemKNN:  # keep the item-item similarity small: items with >= 20 ratings
        X = X[:, np.flatnonzero(np.diff(X.tocsc().indptr) >= 20)].tocsr()
    users = np.arange(0, X.shape[0], 3)
    base = cls(160).fit(X)
    for k in (1, 10, 57, 160):
        view = base.with_k(k)
        assert type(view) is cls
        assert view.neighbors_ is base.neighbors_  # shared, not recomputed
        np.testing.assert_array_equal(view.score(users), cls(k).fit(X).score(users))
    with pytest.raises(ValueError):
        base.with_k(161)


def _brute_knn(X: np.ndarray, k: int, user_based: bool) -> np.ndarray:
    """Reference scorer written from the formulas, dense numpy."""
    A = X if user_based else X.T
    n = A.shape[0]
    deg = A.sum(1)
    C = A @ A.T
    with np.errstate(divide="ignore", invalid="ignore"):
        S = np.nan_to_num(C / np.sqrt(np.outer(deg, deg))).astype(np.float32)
    W = np.zeros((n, n))
    for a in range(n):
        cand = sorted((-S[a, b], b) for b in range(n) if b != a and S[a, b] > 0)[:k]
        for negs, b in cand:
            W[a, b] = -negs
    return W @ X if user_based else X @ W.T


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 7).flatmap(
        lambda nu: st.integers(1, 7).flatmap(
            lambda ni: st.lists(
                st.lists(st.booleans(), min_size=ni, max_size=ni), min_size=nu, max_size=nu
            )
        )
    ),
    st.integers(1, 8),
)
def test_knn_matches_brute_force(rows, k) -> None:
    D = np.array(rows, dtype=np.float64)
    X = sp.csr_matrix(D.astype(np.float32))
    users = np.arange(D.shape[0])
    np.testing.assert_allclose(
        UserKNN(k).fit(X).score(users), _brute_knn(D, k, True), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        ItemKNN(k).fit(X).score(users), _brute_knn(D, k, False), rtol=1e-5, atol=1e-6
    )


def test_knn_bad_config() -> None:
    with pytest.raises(DptuneError, match="k"):
        UserKNN(0).fit(TINY)
    with pytest.raises(DptuneError, match="similarity"):
        ItemKNN(3, similarity="pearson").fit(TINY)


# -------------------------------------------------------------------------------------- BPR-MF


def _factors(m: BPRMF) -> tuple[np.ndarray, ...]:
    return m.user_factors_, m.item_factors_, m.item_bias_


def test_bpr_snapshots_bit_identical() -> None:
    X = movielens_matrix()[:200]
    cfg = dict(factors=8, learning_rate=0.05, user_reg=0.0025, item_reg=0.00025, seed=3)
    paused = BPRMF(**cfg, epochs=0).fit(X)
    for done, step in ((1, 1), (3, 2), (4, 1)):
        paused.partial_fit(X, step)
        assert paused.epochs_done_ == done
        fresh = BPRMF(**cfg, epochs=done).fit(X)
        for a, b in zip(_factors(paused), _factors(fresh), strict=True):
            assert a.dtype == np.float32
            assert np.array_equal(a, b)
    other = BPRMF(**{**cfg, "seed": 4}, epochs=4).fit(X)
    assert not np.array_equal(other.user_factors_, paused.user_factors_)


def test_bpr_init_and_zero_epochs() -> None:
    X = movielens_matrix()[:100]
    m = BPRMF(16, 0.1, 0.005, 0.0005, epochs=0, seed=1, init_std=0.2).fit(X)
    assert m.epochs_done_ == 0
    assert m.user_factors_.shape == (100, 16) and m.item_factors_.shape == (X.shape[1], 16)
    assert np.all(m.item_bias_ == 0)
    assert abs(float(m.item_factors_.std()) - 0.2) < 0.01
    s = m.score(np.array([5, 7]))
    assert s.dtype == np.float32 and s.shape == (2, X.shape[1])
    np.testing.assert_allclose(s, m.user_factors_[[5, 7]] @ m.item_factors_.T, rtol=1e-6)
    # partial_fit on a never-fitted model initialises it the same way
    lazy = BPRMF(16, 0.1, 0.005, 0.0005, epochs=0, seed=1, init_std=0.2).partial_fit(X, 0)
    assert np.array_equal(lazy.user_factors_, m.user_factors_)


def test_bpr_single_step_matches_formula() -> None:
    # one user, two items, one interaction (0, 0): every step has u=0, i=0, j=1
    X = csr([[0]], 2)
    lr, ureg, ireg = 0.1, 0.05, 0.005
    m0 = BPRMF(3, lr, ureg, ireg, epochs=0, seed=11, init_std=0.5).fit(X)
    p = m0.user_factors_[0].copy()
    qi, qj = m0.item_factors_[0].copy(), m0.item_factors_[1].copy()
    bi = bj = np.float32(0)
    m1 = BPRMF(3, lr, ureg, ireg, epochs=1, seed=11, init_std=0.5).fit(X)  # nnz = 1 step
    x = bi - bj + float(p @ (qi - qj))
    z = 1 / (1 + math.exp(x))
    exp_p = p + lr * (z * (qi - qj) - ureg * p)
    exp_qi = qi + lr * (z * p - ireg * qi)
    exp_qj = qj + lr * (-z * p - ireg * qj)
    np.testing.assert_allclose(m1.user_factors_[0], exp_p, rtol=1e-5)
    np.testing.assert_allclose(m1.item_factors_[0], exp_qi, rtol=1e-5)
    np.testing.assert_allclose(m1.item_factors_[1], exp_qj, rtol=1e-5)
    np.testing.assert_allclose(m1.item_bias_, [lr * z, -lr * z], rtol=1e-5)


def test_bpr_user_with_every_item_is_skipped() -> None:
    X = csr([[0, 1, 2], [1], [0, 2]], 3)
    m = BPRMF(4, 0.05, 0.01, 0.01, epochs=5, seed=0).fit(X)
    assert 0 < m.skipped_ < 5 * X.nnz
    assert np.all(np.isfinite(m.user_factors_))


def test_bpr_learns() -> None:
    X = movielens_matrix()
    m = BPRMF(16, 0.05, 0.0025, 0.00025, epochs=10, seed=0).fit(X)
    s = m.score(np.arange(50))
    # training items should now outrank the average item for almost every user
    pos = [s[u, X[u].indices].mean() > s[u].mean() for u in range(50)]
    assert np.mean(pos) > 0.9


def test_bpr_bad_config() -> None:
    with pytest.raises(DptuneError, match="factors"):
        BPRMF(0, 0.1, 0.0, 0.0, 1).fit(TINY)
    with pytest.raises(DptuneError, match="learning_rate"):
        BPRMF(2, float("nan"), 0.0, 0.0, 1).fit(TINY)
    with pytest.raises(DptuneError, match=r"learning_rate: must be a finite number > 0, got 0\.0"):
        BPRMF(2, 0.0, 0.0, 0.0, 1).fit(TINY)  # a rate of 0 trains nothing
    BPRMF(2, 0.1, 0.0, 0.0, 1).fit(TINY)  # regularisation 0 is fine
    m = BPRMF(2, 0.1, 0.0, 0.0, 1).fit(TINY)
    with pytest.raises(ValueError):
        m.partial_fit(TINY[:3], 1)


def _split_80_20(seed: int) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """Per-user random 80/20 hold-out of the embedded data (floor(0.8 n_u) to train)."""
    u, i, nu, ni = movielens()
    key = np.random.default_rng(seed).random(len(u))
    order = np.lexsort((key, u))
    counts = np.bincount(u, minlength=nu)
    start = np.r_[0, np.cumsum(counts)[:-1]]
    rank = np.empty(len(u), dtype=np.int64)
    rank[order] = np.arange(len(u)) - start[u[order]]
    test = rank >= np.floor(0.8 * counts[u])

    def mat(mask: np.ndarray) -> sp.csr_matrix:
        return sp.csr_matrix(
            (np.ones(mask.sum(), np.float32), (u[mask], i[mask])), shape=(nu, ni)
        )

    return mat(~test), mat(test)


def _ndcg_auc(S: np.ndarray, train: sp.csr_matrix, test: sp.csr_matrix) -> tuple[float, float]:
    """Mean nDCG@10 (training items masked) and AUC over items seen in training."""
    S = S.astype(np.float64)
    S[train.nonzero()] = -np.inf
    top = np.argpartition(-S, 10, axis=1)[:, :10]
    top = np.take_along_axis(top, np.argsort(-np.take_along_axis(S, top, axis=1), axis=1), axis=1)
    te = test.toarray() > 0
    tr = train.toarray() > 0
    disc = 1 / np.log2(np.arange(2, 12))
    dcg = (np.take_along_axis(te, top, axis=1) * disc).sum(1)
    nrel = np.minimum(te.sum(1), 10)
    idcg = np.cumsum(disc)[np.maximum(nrel - 1, 0)]
    ok = nrel > 0
    known = tr.any(0)
    aucs = []
    for u in np.flatnonzero(ok):
        pos = S[u, te[u] & known]
        neg = np.sort(S[u, ~te[u] & ~tr[u] & known])
        if len(pos) and len(neg):
            aucs.append(np.searchsorted(neg, pos).mean() / len(neg))
    return float((dcg[ok] / idcg[ok]).mean()), float(np.mean(aucs))


def test_bpr_agrees_with_cornac() -> None:
    """Own kernel vs cornac.models.BPR at equal settings (one shared regularisation, cornac's
    initial spread), nDCG@10 and AUC over 3 seeds each agree within seed noise."""
    train, test = _split_80_20(seed=42)
    k, it, lr, reg = 10, 30, 0.05, 0.01
    users = np.arange(train.shape[0])
    ours, theirs = [], []
    for seed in range(3):
        m = BPRMF(k, lr, reg, reg, it, seed=seed, init_std=1 / (k * math.sqrt(12))).fit(train)
        ours.append(_ndcg_auc(m.score(users), train, test))
        c = CornacModel(
            "BPR", dict(k=k, max_iter=it, learning_rate=lr, lambda_reg=reg), seed=seed
        ).fit(train)
        theirs.append(_ndcg_auc(c.score(users), train, test))
    a, b = np.array(ours), np.array(theirs)
    pooled = np.sqrt((a.var(0, ddof=1) + b.var(0, ddof=1)) / 2)
    diff = np.abs(a.mean(0) - b.mean(0))
    assert a[:, 0].mean() > 0.15 and a[:, 1].mean() > 0.9  # both actually learned
    assert np.all(diff <= 3 * pooled + np.array([0.01, 0.003])), (a.mean(0), b.mean(0), pooled)


# ------------------------------------------------------------------------------- CornacModel

# 6 users x 6 items; item 5 and user 5 have no interactions. Item popularity [1, 5, 2, 4, 3, 0]
# is distinct per item and cornac numbers items by first appearance (1, 4, 3, 2, 0), so the
# popularity seen through the adapter checks that item codes are mapped back correctly.
CORNAC_X = csr([[1, 4], [1, 3, 4], [1, 2, 3, 4], [1, 3], [0, 1, 2, 3], []], 6)


def test_cornac_mostpop_alignment() -> None:
    m = CornacModel("MostPop").fit(CORNAC_X)
    s = m.score(np.array([0, 5]))
    assert s.dtype == np.float32 and s.shape == (2, 6)
    np.testing.assert_array_equal(s[0, :5], [1, 5, 2, 4, 3])  # popularity in our item codes
    assert s[0, 5] == -np.inf and s[1, 5] == -np.inf  # unknown item
    np.testing.assert_array_equal(s[1, :5], np.zeros(5))  # unknown user


def test_cornac_bpr_adapter() -> None:
    params = dict(k=4, max_iter=5, learning_rate=0.05, lambda_reg=0.01)
    m = CornacModel("BPR", params, seed=7).fit(CORNAC_X)
    again = CornacModel("BPR", params, seed=7).fit(CORNAC_X)
    users = np.arange(6)
    s = m.score(users)
    np.testing.assert_array_equal(s, again.score(users))
    mm = m.model_
    for u in range(5):
        iu = m.user_index_[u]
        for c in range(5):
            ic = m.item_index_[c]
            expected = mm.i_biases[ic] + mm.u_factors[iu] @ mm.i_factors[ic]
            assert s[u, c] == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert np.isneginf(s[:, 5]).all() and np.all(s[5, :5] == 0)


def test_cornac_bad_name_and_params() -> None:
    with pytest.raises(DptuneError, match="type"):
        CornacModel("NoSuchModel").fit(CORNAC_X)
    with pytest.raises(DptuneError):
        CornacModel("MostPop", {"bogus": 1}).fit(CORNAC_X)


# ---------------------------------------------------------------------------------- families


def test_get_family_errors() -> None:
    with pytest.raises(DptuneError, match="type"):
        get_family("svd++")
    with pytest.raises(DptuneError, match="type"):
        get_family("cornac:NoSuchModel")
    with pytest.raises(DptuneError, match="neighbours"):
        get_family("userknn").units([{"k": 3, "neighbours": 2}])
    with pytest.raises(DptuneError, match="item_reg"):
        get_family("bpr-mf").units(
            [{"factors": 2, "iterations": 1, "learning_rate": 0.1, "user_reg": 0.1}]
        )
    with pytest.raises(DptuneError, match="k"):
        get_family("itemknn").units([{"k": 2.5}])
    with pytest.raises(DptuneError, match="bogus"):
        get_family("cornac:BPR").units([{"k": 3, "bogus": 1}])
    assert get_family("bpr-mf").hyperparameters == (
        "factors", "iterations", "learning_rate", "user_reg", "item_reg",
    )
    assert get_family("userknn").hyperparameters == ("k",)
    assert "lambda_reg" in get_family("cornac:BPR").hyperparameters


_BPR = {"factors": 2, "iterations": 1, "learning_rate": 0.1, "user_reg": 0.1, "item_reg": 0.1}


@pytest.mark.parametrize(("algorithm_type", "cfg", "needle"), [
    ("itemknn", {"k": 10.5}, "g.toml: k: must be an integer >= 1, got 10.5"),
    ("userknn", {"k": True}, "g.toml: k: must be an integer >= 1, got True"),
    ("bpr-mf", {**_BPR, "factors": 10.5}, "g.toml: factors: must be an integer >= 1, got 10.5"),
    ("bpr-mf", {**_BPR, "iterations": 0.5}, "g.toml: iterations: must be an integer >= 0, got 0.5"),
])
def test_builtin_integer_hyperparameters_refuse_fractions(algorithm_type, cfg, needle) -> None:
    """The built-in models' integer hyperparameters take integral values only (``10.0`` is
    ``10``), checked with the grid file's name before any work."""
    fam = get_family(algorithm_type)
    with pytest.raises(DptuneError) as err:
        fam.check([cfg], source="g.toml")
    assert str(err.value).endswith(needle) and "\n" not in str(err.value)
    key = needle.split(": ")[1]
    assert type(fam.validate([{**cfg, key: 10.0}])[0][key]) is int


@pytest.mark.parametrize("kind, cls", [("userknn", UserKNN), ("itemknn", ItemKNN)])
def test_knn_family_matches_independent_fits(kind, cls) -> None:
    X = movielens_matrix()[:150]
    X = X[:, np.flatnonzero(np.diff(X.tocsc().indptr) >= 3)].tocsr()
    configs = [{"k": 20}, {"k": 3}, {"k": 57}, {"k": 3}]
    fam = get_family(kind)
    assert fam.units(configs) == [[0, 1, 2, 3]]
    users = np.arange(150)
    seen = []
    for idx, model in fam.fit_unit(X, configs, seed=0):
        seen.append(idx)
        np.testing.assert_array_equal(
            model.score(users), cls(configs[idx]["k"]).fit(X).score(users)
        )
    assert seen == [1, 3, 0, 2]  # increasing k: scores grow incrementally along k


def test_bpr_family_snapshots_match_independent_fits() -> None:
    X = movielens_matrix()[:120]
    a = dict(factors=6, learning_rate=0.05, user_reg=0.0025, item_reg=0.00025)
    b = dict(factors=4, learning_rate=0.1, user_reg=0.005, item_reg=0.0005)
    configs = [
        {**a, "iterations": 3}, {**b, "iterations": 2}, {**a, "iterations": 1},
        {**a, "iterations": 0}, {**a, "iterations": 3},
    ]
    fam = get_family("bpr-mf")
    assert fam.units(configs) == [[3, 2, 0, 4], [1]]
    seen = []
    for idx, model in fam.fit_unit(X, configs, seed=5):
        seen.append(idx)
        c = configs[idx]
        fresh = BPRMF(
            c["factors"], c["learning_rate"], c["user_reg"], c["item_reg"],
            epochs=c["iterations"], seed=5,
        ).fit(X)
        assert model.epochs_done_ == c["iterations"] == model.epochs
        for x, y in zip(_factors(model), _factors(fresh), strict=True):
            assert np.array_equal(x, y)
    assert seen == [3, 2, 0, 4, 1]


def test_cornac_family() -> None:
    fam = get_family("cornac:MostPop")
    assert fam.units([{}, {}]) == [[0], [1]]
    out = list(fam.fit_unit(CORNAC_X, [{}], seed=0))
    assert [i for i, _ in out] == [0]
    np.testing.assert_array_equal(out[0][1].score(np.array([0]))[0, :5], [1, 5, 2, 4, 3])
    fam = get_family("cornac:BPR")
    cfgs = [{"k": 3, "max_iter": 2}, {"k": 5, "max_iter": 1}]
    models = [m for _, m in fam.fit_unit(CORNAC_X, cfgs, seed=1)]
    assert [m.model_.k for m in models] == [3, 5]
