"""fANOVA's marginal of a numeric hyperparameter: the run-of-cells sums equal the membership
matrix's, and a one-column group never builds that cells x leaves matrix (whose cost grows with
the product of a hyperparameter's values and the configurations)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeRegressor

from dptune.analysis.importance import fanova


def _tree(seed: int, n_values: int, n: int = 300, depth: int | None = None):
    rng = np.random.default_rng(seed)
    X = np.stack([rng.integers(0, n_values, n) * 0.3, rng.integers(1, 5, n),
                  rng.integers(0, 2, n), 1 - rng.integers(0, 2, n)], axis=1).astype(float)
    X[:, 3] = 1.0 - X[:, 2]  # a categorical of two choices, one-hot
    y = rng.normal(size=n) * rng.choice([1e-3, 1.0, 100.0])
    t = DecisionTreeRegressor(random_state=seed, max_depth=depth).fit(X, y).tree_
    bounds = np.array([[0.0, X[:, 0].max() + 0.1], [1.0, 4.0], [0.0, 1.0], [0.0, 1.0]])
    groups = [np.array([0]), np.array([1]), np.array([2, 3])]
    return (t.children_left, t.children_right, t.feature, t.threshold, t.value[:, 0, 0],
            bounds, groups)


def _dense_interval_sums(centres, low, high, w, v):
    """The membership matrix's sums for one column: the oracle."""
    return fanova._box_sums(centres[:, None], low[:, None], high[:, None], w, v)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_values=st.integers(1, 120),
       depth=st.one_of(st.none(), st.integers(1, 12)))
def test_interval_sums_match_the_membership_matrix(seed, n_values, depth):
    args = _tree(seed, n_values, depth=depth)
    fast = fanova.tree_marginal_variances(*args)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fanova, "_interval_sums", _dense_interval_sums)
        slow = fanova.tree_marginal_variances(*args)
    assert fast[0] == slow[0]
    np.testing.assert_allclose(fast[1], slow[1], rtol=1e-12, atol=0.0)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), m=st.integers(1, 30), n=st.integers(1, 60))
def test_interval_sums_of_arbitrary_runs(seed, m, n):
    rng = np.random.default_rng(seed)
    centres = np.sort(rng.choice(np.arange(100) + 0.5, size=m, replace=False))
    edges = np.concatenate(([-np.inf], rng.integers(0, 101, 2 * n).astype(float), [np.inf]))
    low = rng.choice(edges, n)
    high = rng.choice(edges, n)  # some runs empty (high <= low)
    w, v = rng.random(n), rng.normal(size=n)
    got = fanova._interval_sums(centres, low, high, w, v)
    want = _dense_interval_sums(centres, low, high, w, v)
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_a_numeric_group_builds_no_membership_matrix(monkeypatch):
    """Thousands of values of a number: only the categorical's group takes the matrix path."""
    calls = []
    box = fanova._box_sums

    def counted(centres, *rest):
        calls.append(centres.shape[1])
        return box(centres, *rest)

    monkeypatch.setattr(fanova, "_box_sums", counted)
    total, marginal = fanova.tree_marginal_variances(*_tree(1, 2_000, n=4_000))
    assert calls == [2]  # the one-hot pair only
    assert total > 0 and np.isfinite(marginal).all()
