"""Tests of dptune.metrics: a naive loop oracle, hand-computed values, ranx cross-check."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import ranx_scores
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dptune import metrics as m
from dptune.metrics import METRICS, evaluate, metrics_from_topn, novelty_vectors, top_n

# --------------------------------------------------------------------------------------------
# naive oracle: Python loops, straight from the metric definitions in each metric's docstring
# --------------------------------------------------------------------------------------------


def oracle_top_n(scores: np.ndarray, n: int) -> np.ndarray:
    rows = []
    for row in scores:
        order = sorted(range(len(row)), key=lambda i: (-float(row[i]), i))
        rows.append(order[:n])
    return np.array(rows, dtype=np.int64).reshape(len(scores), min(n, scores.shape[1]))


def oracle_novelty(train: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n_users, n_items = train.shape
    users = [sum(1 for u in range(n_users) if train[u, i] != 0) for i in range(n_items)]
    n_train_users = sum(1 for u in range(n_users) if any(train[u] != 0))
    total = sum(users)
    efd, epc = [], []
    for c in users:
        epc.append(1.0 - c / n_train_users if n_train_users else 1.0)
        efd.append(-math.log2(max(c, 1) / max(total, 1)))
    return np.array(efd), np.array(epc)


def oracle_metrics(top, relevant, cutoffs, efd, epc, relevance_aware=True) -> np.ndarray:
    """Per-user loops; ``relevant`` is a list of sets; ``top`` rows may hold -1 (empty)."""
    out = np.zeros((6, len(cutoffs), len(top)))
    for u, ranking in enumerate(top):
        rel = relevant[u]
        for c_i, n in enumerate(cutoffs):
            items = [int(i) for i in list(ranking[:n])] + [-1] * max(0, n - len(ranking))
            hits = [1 if i >= 0 and i in rel else 0 for i in items]
            disc = [1.0 / math.log2(r + 2) for r in range(n)]
            dcg = sum(h * d for h, d in zip(hits, disc, strict=True))
            idcg = sum(disc[: min(n, len(rel))])
            first = next((r + 1 for r, h in enumerate(hits) if h), None)
            g = hits if relevance_aware else [1 if i >= 0 else 0 for i in items]
            nov_efd = sum(
                d * gi * (efd[i] if i >= 0 else 0.0)
                for d, gi, i in zip(disc, g, items, strict=True)
            )
            nov_epc = sum(
                d * gi * (epc[i] if i >= 0 else 0.0)
                for d, gi, i in zip(disc, g, items, strict=True)
            )
            out[0, c_i, u] = dcg / idcg if idcg else math.nan
            out[1, c_i, u] = sum(hits) / n
            out[2, c_i, u] = sum(hits) / len(rel) if rel else math.nan
            out[3, c_i, u] = 1.0 / first if first else 0.0
            out[4, c_i, u] = nov_efd / sum(disc)
            out[5, c_i, u] = nov_epc / sum(disc)
    return out


def _csr(sets: list[set[int]], n_items: int) -> sp.csr_matrix:
    dense = np.zeros((len(sets), n_items), dtype=bool)
    for u, s in enumerate(sets):
        dense[u, list(s)] = True
    return sp.csr_matrix(dense)


# --------------------------------------------------------------------------------------------
# top_n
# --------------------------------------------------------------------------------------------

TIE_VALUES = [-np.inf, -1.0, 0.0, -0.0, 0.5, 1.0, 2.0]


@st.composite
def score_blocks(draw):
    n_rows = draw(st.integers(1, 6))
    n_items = draw(st.integers(1, 25))
    values = draw(
        st.lists(
            st.one_of(st.sampled_from(TIE_VALUES), st.floats(-3, 3, width=32)),
            min_size=n_rows * n_items,
            max_size=n_rows * n_items,
        )
    )
    n = draw(st.integers(1, n_items + 2))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    return np.array(values, dtype=dtype).reshape(n_rows, n_items), n


@settings(max_examples=300, deadline=None, database=None)
@given(score_blocks())
def test_top_n_matches_oracle_with_ties(block):
    scores, n = block
    expected = oracle_top_n(scores, n)
    np.testing.assert_array_equal(top_n(scores, n), expected)
    if n < scores.shape[1]:  # every exact path, whichever the dispatcher would pick
        np.testing.assert_array_equal(m._top_n_partition(scores, n), expected)
        if scores.dtype == np.float32:
            np.testing.assert_array_equal(m._top_n_keyed(scores, n), expected)
        out = np.empty((scores.shape[0], n), dtype=np.intp)
        assert not m._top_n_select(scores, n, out)
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("kind", ["distinct", "knn", "ascending", "descending"])
@pytest.mark.parametrize("n", [1, 10, 64, 65, 200])
def test_top_n_paths_agree_on_catalogue_sized_blocks(kind, n):
    # the one-pass buffer (n <= 64) against the numpy oracles on realistic blocks, including
    # its worst case (scores rising with the index: every item enters the buffer)
    rng = np.random.default_rng(n)
    shape = (40, 3000)
    if kind == "distinct":
        scores = rng.standard_normal(shape).astype(np.float32)
    elif kind == "knn":  # mostly zero, a few small integer-ish sums, masked items
        scores = (rng.random(shape) < 0.05) * rng.integers(1, 4, shape).astype(np.float32)
        scores[rng.random(shape) < 0.03] = -np.inf
    else:
        scores = np.tile(np.arange(shape[1], dtype=np.float64), (shape[0], 1))
        scores = scores if kind == "ascending" else -scores
    expected = m._top_n_partition(scores, n)
    np.testing.assert_array_equal(top_n(scores, n), expected)
    np.testing.assert_array_equal(top_n(scores.astype(np.float64), n), expected)
    if scores.dtype == np.float32:
        np.testing.assert_array_equal(m._top_n_keyed(scores, n), expected)


def test_top_n_boundary_tie_takes_lowest_index():
    # the 2nd place is a tie between items 1, 2, 5 (value 3): the lowest index wins
    s = np.array([[9.0, 3.0, 3.0, 1.0, 0.0, 3.0]], dtype=np.float32)
    np.testing.assert_array_equal(top_n(s, 2), [[0, 1]])
    np.testing.assert_array_equal(top_n(s, 3), [[0, 1, 2]])
    np.testing.assert_array_equal(m._top_n_keyed(s, 2), [[0, 1]])
    # a long run of zeros straddling the boundary (the kNN case)
    z = np.zeros((3, 50), dtype=np.float32)
    z[:, 40] = 1.0
    np.testing.assert_array_equal(top_n(z, 4), [[40, 0, 1, 2]] * 3)


def test_top_n_masked_items_come_last():
    s = np.array([[1.0, -np.inf, 0.5, -np.inf, -np.inf]], dtype=np.float32)
    np.testing.assert_array_equal(top_n(s, 4), [[0, 2, 1, 3]])
    np.testing.assert_array_equal(top_n(s, 2), [[0, 2]])


def test_top_n_whole_catalogue_and_errors():
    s = np.array([[0.1, 0.3, 0.3]])
    np.testing.assert_array_equal(top_n(s, 5), [[1, 2, 0]])
    with pytest.raises(ValueError, match="NaN"):
        top_n(np.array([[0.1, np.nan, 0.3, 0.2]]), 2)
    neg_nan = np.array([[0.1, -np.nan, 0.3, 0.2]] * 40, dtype=np.float32)
    neg_nan[:, 2:] = 0.0  # enough repeats for the keyed path
    with pytest.raises(ValueError, match="NaN"):
        top_n(neg_nan, 1)
    with pytest.raises(ValueError):
        top_n(s, 0)
    with pytest.raises(ValueError):
        top_n(np.zeros(3), 1)


def test_top_n_paths_agree_on_large_blocks():
    rng = np.random.default_rng(7)
    distinct = rng.standard_normal((50, 400)).astype(np.float32)
    sparse = distinct.copy()
    sparse[rng.random(sparse.shape) < 0.97] = 0.0
    sparse[rng.random(sparse.shape) < 0.05] = -np.inf
    assert not m._mostly_ties(distinct)
    assert m._mostly_ties(sparse)
    for block in (distinct, sparse):
        expected = oracle_top_n(block, 10)
        np.testing.assert_array_equal(top_n(block, 10), expected)
        np.testing.assert_array_equal(m._top_n_partition(block, 10), expected)
        np.testing.assert_array_equal(m._top_n_keyed(block, 10), expected)


# --------------------------------------------------------------------------------------------
# novelty
# --------------------------------------------------------------------------------------------

# train users 0..3 (user 4 has no training interaction, so n_train_users = 4)
TRAIN = np.zeros((5, 12), dtype=np.float32)
TRAIN[0, [0, 1, 4]] = 1
TRAIN[1, [0, 1]] = 1
TRAIN[2, [0, 11]] = 1
TRAIN[3, [0]] = 1
# users(i): item0 = 4, item1 = 2, item4 = 1, item11 = 1, others 0 (unseen); S = sum = 8
# EPC = 1 - users/4: item0 0, item1 0.5, item4 0.75, item11 0.75, unseen 1
# EFD = -log2(users/8): item0 1, item1 2, item4 3, item11 3, unseen -log2(1/8) = 3
HAND_EPC = np.array([0, 0.5, 1, 1, 0.75, 1, 1, 1, 1, 1, 1, 0.75])
HAND_EFD = np.array([1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3], dtype=float)


def test_novelty_by_hand():
    efd, epc = novelty_vectors(sp.csr_matrix(TRAIN))
    np.testing.assert_allclose(efd, HAND_EFD, rtol=0, atol=1e-15)
    np.testing.assert_allclose(epc, HAND_EPC, rtol=0, atol=1e-15)


def test_novelty_counts_distinct_users_and_ignores_explicit_zeros():
    # duplicated (0, 1) entry counts once; the explicit 0 at (1, 2) is no interaction
    coo = sp.coo_matrix(([1.0, 1.0, 1.0, 0.0], ([0, 0, 1, 1], [1, 1, 0, 2])), shape=(3, 3))
    efd, epc = novelty_vectors(coo.tocsr())
    # users = [1, 1, 0], n_train_users = 2, S = 2
    np.testing.assert_allclose(epc, [0.5, 0.5, 1.0])
    np.testing.assert_allclose(efd, [1.0, 1.0, 1.0])
    efd0, epc0 = novelty_vectors(sp.csr_matrix((2, 3)))
    np.testing.assert_array_equal(epc0, [1, 1, 1])
    np.testing.assert_array_equal(efd0, [0, 0, 0])


@settings(max_examples=60, deadline=None, database=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 9))
def test_novelty_matches_oracle(seed, n_users, n_items):
    train = (np.random.default_rng(seed).random((n_users, n_items)) < 0.3).astype(np.float32)
    efd, epc = novelty_vectors(sp.csr_matrix(train))
    o_efd, o_epc = oracle_novelty(train)
    np.testing.assert_allclose(efd, o_efd, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(epc, o_epc, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------------------------
# metrics_from_topn: hand-computed values at cutoffs 1, 5, 10
# --------------------------------------------------------------------------------------------

D = [1.0 / math.log2(r + 1) for r in range(1, 11)]  # disc(1..10); D[0] = 1, D[1] = 1/log2(3)
SUM_D3, SUM_D5, SUM_D10 = sum(D[:3]), sum(D[:5]), sum(D)

# user A: ranking 0..9, relevant {1, 4, 9, 11} (|R| = 4): hits at ranks 2 (item 1), 5 (item 4),
#         10 (item 9); item 11 is relevant but not ranked.
# user B: ranking 0..9, relevant {0}: hit at rank 1.
# user C: ranking [5, 3, -1 x 8] (only two items ranked), relevant {3, 7}: hit at rank 2.
TOP = np.array([list(range(10)), list(range(10)), [5, 3] + [-1] * 8])
REL_SETS = [{1, 4, 9, 11}, {0}, {3, 7}]
CUTS = (1, 5, 10)


def test_hand_accuracy_metrics():
    out = metrics_from_topn(TOP, _csr(REL_SETS, 12), CUTS, HAND_EFD, HAND_EPC)
    assert out.shape == (6, 3, 3) and out.dtype == np.float64
    ndcg, prec, rec, mrr = out[0], out[1], out[2], out[3]
    # user A
    idcg_a = D[0] + D[1] + D[2] + D[3]  # min(N, 4) = 4 ideal positions at N = 5 and 10
    assert ndcg[:, 0].tolist() == pytest.approx(
        [0.0, (D[1] + D[4]) / idcg_a, (D[1] + D[4] + D[9]) / idcg_a]
    )
    assert prec[:, 0].tolist() == pytest.approx([0 / 1, 2 / 5, 3 / 10])
    assert rec[:, 0].tolist() == pytest.approx([0 / 4, 2 / 4, 3 / 4])
    assert mrr[:, 0].tolist() == pytest.approx([0.0, 1 / 2, 1 / 2])
    # user B: the single relevant item at rank 1 -> nDCG = 1/1 = 1 everywhere
    assert ndcg[:, 1].tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert prec[:, 1].tolist() == pytest.approx([1 / 1, 1 / 5, 1 / 10])
    assert rec[:, 1].tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert mrr[:, 1].tolist() == pytest.approx([1.0, 1.0, 1.0])
    # user C: hit at rank 2; IDCG@1 = D1, IDCG@5 = IDCG@10 = D1 + D2 (|R| = 2)
    assert ndcg[:, 2].tolist() == pytest.approx([0.0, D[1] / (D[0] + D[1]), D[1] / (D[0] + D[1])])
    # empty positions still count in Precision's N
    assert prec[:, 2].tolist() == pytest.approx([0.0, 1 / 5, 1 / 10])
    assert rec[:, 2].tolist() == pytest.approx([0.0, 1 / 2, 1 / 2])
    assert mrr[:, 2].tolist() == pytest.approx([0.0, 1 / 2, 1 / 2])


def test_hand_novelty_relevance_aware():
    out = metrics_from_topn(TOP, _csr(REL_SETS, 12), CUTS, HAND_EFD, HAND_EPC)
    efd, epc = out[4], out[5]
    # user A: relevant hits item1 (efd 2, epc .5) at r=2, item4 (3, .75) at r=5, item9 (3, 1) at r=10
    assert efd[:, 0].tolist() == pytest.approx(
        [0.0, (2 * D[1] + 3 * D[4]) / SUM_D5, (2 * D[1] + 3 * D[4] + 3 * D[9]) / SUM_D10]
    )
    assert epc[:, 0].tolist() == pytest.approx(
        [0.0, (0.5 * D[1] + 0.75 * D[4]) / SUM_D5, (0.5 * D[1] + 0.75 * D[4] + 1 * D[9]) / SUM_D10]
    )
    # user B: hit item0 (efd 1, epc 0) at r=1: EFD@1 = 1*1/1 = 1, then 1/SUM_D; EPC = 0
    assert efd[:, 1].tolist() == pytest.approx([1.0, 1 / SUM_D5, 1 / SUM_D10])
    assert epc[:, 1].tolist() == pytest.approx([0.0, 0.0, 0.0])
    # user C: hit item3 (unseen: efd 3, epc 1) at r=2; denominators over all N positions
    assert efd[:, 2].tolist() == pytest.approx([0.0, 3 * D[1] / SUM_D5, 3 * D[1] / SUM_D10])
    assert epc[:, 2].tolist() == pytest.approx([0.0, D[1] / SUM_D5, D[1] / SUM_D10])


def test_hand_novelty_relevance_unaware():
    out = metrics_from_topn(
        TOP, _csr(REL_SETS, 12), CUTS, HAND_EFD, HAND_EPC, relevance_aware=False
    )
    efd, epc = out[4], out[5]
    # users A and B rank items 0..9: efd = [1, 2, 3, 3, 3, 3, 3, 3, 3, 3], epc = [0, .5, 1, 1, .75, 1...]
    efd_5 = 1 * D[0] + 2 * D[1] + 3 * (D[2] + D[3] + D[4])
    efd_10 = efd_5 + 3 * sum(D[5:10])
    epc_5 = 0 * D[0] + 0.5 * D[1] + 1 * D[2] + 1 * D[3] + 0.75 * D[4]
    epc_10 = epc_5 + 1 * sum(D[5:10])
    for u in (0, 1):
        assert efd[:, u].tolist() == pytest.approx([1.0, efd_5 / SUM_D5, efd_10 / SUM_D10])
        assert epc[:, u].tolist() == pytest.approx([0.0, epc_5 / SUM_D5, epc_10 / SUM_D10])
    # user C ranks item5 (efd 3, epc 1) then item3 (3, 1); empty slots add nothing
    assert efd[:, 2].tolist() == pytest.approx(
        [3.0, 3 * (D[0] + D[1]) / SUM_D5, 3 * (D[0] + D[1]) / SUM_D10]
    )
    assert epc[:, 2].tolist() == pytest.approx(
        [1.0, (D[0] + D[1]) / SUM_D5, (D[0] + D[1]) / SUM_D10]
    )
    # accuracy metrics do not depend on the flag
    aware = metrics_from_topn(TOP, _csr(REL_SETS, 12), CUTS, HAND_EFD, HAND_EPC)
    np.testing.assert_array_equal(out[:4], aware[:4])


def test_short_top_lists_are_padded_and_users_without_relevant_items_are_nan():
    top = np.array([[2], [0]])
    out = metrics_from_topn(top, _csr([{2}, set()], 3), (1, 3), np.ones(3), np.ones(3))
    # user 0: hit at 1; P@3 = 1/3; EFD@3 = 1 / (1 + 1/log2(3) + 1/2)
    # (all novelty weights are 1 here, so EFD@3 = EPC@3 = disc(1) / sum_{r<=3} disc(r))
    assert out[:, 1, 0].tolist() == pytest.approx([1.0, 1 / 3, 1.0, 1.0, 1 / SUM_D3, 1 / SUM_D3])
    assert np.isnan(out[0, :, 1]).all() and np.isnan(out[2, :, 1]).all()
    assert (out[[1, 3, 4, 5], :, 1] == 0).all()


def test_metrics_input_checks():
    rel = _csr([{0}], 3)
    with pytest.raises(ValueError):
        metrics_from_topn(np.array([[0, 1]]), rel, (), np.ones(3), np.ones(3))
    with pytest.raises(ValueError):
        metrics_from_topn(np.array([[0, 1]]), rel, (0,), np.ones(3), np.ones(3))
    with pytest.raises(ValueError):
        metrics_from_topn(np.array([[0, 5]]), rel, (2,), np.ones(3), np.ones(3))
    with pytest.raises(ValueError):
        metrics_from_topn(np.array([[0, 1], [1, 2]]), rel, (2,), np.ones(3), np.ones(3))


# --------------------------------------------------------------------------------------------
# metrics_from_topn vs the oracle on random cases
# --------------------------------------------------------------------------------------------


@st.composite
def ranking_cases(draw):
    n_items = draw(st.integers(2, 15))
    n_users = draw(st.integers(1, 6))
    width = draw(st.integers(1, n_items))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    top = np.array([rng.permutation(n_items)[:width] for _ in range(n_users)])
    # some empty positions at the end of random rows
    for u in range(n_users):
        cut = int(rng.integers(0, width + 1))
        if rng.random() < 0.3:
            top[u, cut:] = -1
    rel = []
    for _ in range(n_users):
        size = int(rng.integers(1, n_items + 1))  # >= 1 relevant; often fewer than N
        rel.append(set(rng.choice(n_items, size=size, replace=False).tolist()))
    train = (rng.random((n_users + 2, n_items)) < 0.4).astype(np.float32)
    cutoffs = sorted(set(draw(st.lists(st.integers(1, n_items + 3), min_size=1, max_size=4))))
    return top, rel, train, cutoffs


@settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(ranking_cases(), st.booleans())
def test_metrics_match_oracle(case, aware):
    top, rel, train, cutoffs = case
    efd, epc = novelty_vectors(sp.csr_matrix(train))
    got = metrics_from_topn(
        top, _csr(rel, train.shape[1]), cutoffs, efd, epc, relevance_aware=aware
    )
    want = oracle_metrics(top, rel, cutoffs, efd, epc, relevance_aware=aware)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------------------------
# evaluate
# --------------------------------------------------------------------------------------------


class FixedScores:
    """Test model: returns rows of a fixed score matrix (a fresh copy, as real models do)."""

    def __init__(self, scores: np.ndarray, read_only: bool = False):
        self.scores = scores
        self.read_only = read_only
        self.calls: list[int] = []

    def score(self, users: np.ndarray) -> np.ndarray:
        self.calls.append(len(users))
        if self.read_only:
            out = self.scores[users]
            out.flags.writeable = False
            return out
        return self.scores[users].copy()


def test_evaluate_masks_training_items_and_blocks():
    rng = np.random.default_rng(3)
    n_users, n_items = 23, 40
    scores = rng.random((n_users, n_items)).astype(np.float32)
    scores[:, :5] = 10.0  # the best items are all training items of every user ...
    train = np.zeros((n_users, n_items), dtype=np.float32)
    train[:, :5] = 1.0
    train[:, 7] = 1.0
    relevant = (rng.random((n_users, n_items)) < 0.2).astype(np.float32)
    relevant[:, 5] = 1.0
    efd, epc = novelty_vectors(sp.csr_matrix(train))
    users = np.array([4, 0, 22, 9, 13, 1, 2, 3, 5, 6, 7])
    model = FixedScores(scores)
    got = evaluate(
        model, users, sp.csr_matrix(train), sp.csr_matrix(relevant), (1, 5, 10), efd, epc, block=4
    )
    assert model.calls == [4, 4, 3]
    masked = np.where(train[users] != 0, -np.inf, scores[users])
    top = oracle_top_n(masked, 10)
    assert not np.isin(top, [0, 1, 2, 3, 4, 7]).any()  # ... and never recommended
    want = oracle_metrics(
        top, [set(np.flatnonzero(relevant[u]).tolist()) for u in users], (1, 5, 10), efd, epc
    )
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # read-only score arrays are copied, not written
    model_ro = FixedScores(scores, read_only=True)
    got_ro = evaluate(
        model_ro, users, sp.csr_matrix(train), sp.csr_matrix(relevant), (1, 5, 10), efd, epc
    )
    np.testing.assert_array_equal(got_ro, got)
    assert (scores[:, :5] == 10.0).all()


@pytest.mark.parametrize("read_only", [False, True])
@pytest.mark.parametrize(("close", "dtype"), [(1.0 + 1e-9, np.float64),
                                              (2**24 + 1, np.int64)])
def test_evaluate_keeps_the_order_of_close_scores(close, dtype, read_only):
    """A score block that had to be copied (read-only, or not float) became float32: scores
    1e-9 apart in float64, or integers above 2^24, tied, and the tie went to the lower item id,
    so the relevant item 1, scored highest, was ranked second. float64 keeps them apart."""
    base = 1.0 if dtype == np.float64 else 2**24
    scores = np.array([[base, close, 0]], dtype=dtype)
    train = sp.csr_matrix((1, 3), dtype=np.float32)
    relevant = sp.csr_matrix(np.array([[0.0, 1.0, 0.0]]))
    got = evaluate(FixedScores(scores, read_only=read_only), np.array([0]), train, relevant,
                   (1,), np.ones(3), np.ones(3))
    assert got[METRICS.index("precision"), 0, 0] == 1.0


def test_evaluate_checks_model_output():
    class Bad:
        def score(self, users):
            return np.zeros((len(users), 3), dtype=np.float32)

    train = sp.csr_matrix((2, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="shape"):
        evaluate(Bad(), np.array([0, 1]), train, train, (1,), np.ones(4), np.ones(4))


# --------------------------------------------------------------------------------------------
# ranx cross-check (independent implementation)
# --------------------------------------------------------------------------------------------


def test_accuracy_metrics_agree_with_ranx():
    rng = np.random.default_rng(11)
    n_users, n_items, cutoff = 12, 60, 10
    scores = rng.permutation(n_users * n_items).reshape(n_users, n_items).astype(np.float64)
    rel_sets = [
        set(rng.choice(n_items, size=int(rng.integers(1, 15)), replace=False).tolist())
        for _ in range(n_users)
    ]
    top = top_n(scores, cutoff)
    ours = metrics_from_topn(
        top, _csr(rel_sets, n_items), (cutoff,), np.ones(n_items), np.ones(n_items)
    )
    qrels = {f"u{u}": {f"i{i}": 1 for i in s} for u, s in enumerate(rel_sets)}
    run = {f"u{u}": {f"i{i}": float(scores[u, i]) for i in range(n_items)} for u in range(n_users)}
    names = [f"{name}@{cutoff}" for name in ("ndcg", "precision", "recall", "mrr")]
    got = ranx_scores(qrels, run, names, return_mean=False)
    for metric_i, name in enumerate(names):
        theirs = np.array([got[name][f"u{u}"] for u in range(n_users)])
        np.testing.assert_allclose(ours[metric_i, 0], theirs, rtol=0, atol=1e-9, err_msg=name)


def test_metric_order_is_the_shared_contract():
    assert METRICS == ("ndcg", "precision", "recall", "mrr", "efd", "epc")
