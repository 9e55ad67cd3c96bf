"""The scopes of the DP analysis at the sizes a grid may have: the array paths of
:func:`dptune.analysis.dp.pairs.scopes` against the element-by-element rules they replace
(as an oracle, on small random grids), and guards that the per-value scan of the column does
not come back."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dptune.analysis.dp import pairs
from dptune.analysis.dp.pairs import _is_missing, _value_sort_key, format_value

# ---- the element-by-element rules, as an oracle -------------------------------------------

def _ref_sorted_values(column: pd.Series) -> list[Any]:
    seen: dict[str, Any] = {}
    for v in column.tolist():
        if not _is_missing(v):
            seen.setdefault(format_value(v), v)
    return sorted(seen.values(), key=_value_sort_key)


def _ref_only_layout(ids, group, rank):
    order = sorted(range(len(ids)), key=lambda x: (group[x], int(rank[x]), int(ids[x])))
    ids_o = ids[order]
    grp_o = [group[x] for x in order]
    rank_o = rank[order]
    n = len(order)
    end = np.zeros(n, dtype=np.int64)
    cnt = np.zeros(n, dtype=np.int64)
    start = 0
    while start < n:
        stop = start
        while stop < n and grp_o[stop] == grp_o[start]:
            stop += 1
        pos = start
        while pos < stop:
            cls_end = pos
            while cls_end < stop and rank_o[cls_end] == rank_o[pos]:
                cls_end += 1
            end[pos:cls_end] = cls_end
            cnt[pos:cls_end] = stop - cls_end
            pos = cls_end
        start = stop
    return ids_o, end, cnt


def _ref_scopes(configs, hps, n_pairs=25, value_pairs=None):
    """(name, kind, h, v, cap, n_possible, sampler) of every scope, as the rules read."""
    n_value = n_pairs if value_pairs is None else value_pairs
    ids_all = configs["config_id"].to_numpy().astype(np.int64)
    out = []

    def put(name, kind, h, v, cap, possible, sample):
        if possible:
            out.append((name, kind, h, v, cap, int(possible), sample))

    m = len(np.unique(ids_all))
    put("all", "all", "", "", n_pairs, m * (m - 1) // 2,
        lambda seed: pairs.sample_pairs(ids_all, n_pairs, seed))
    if len(hps) <= 1:
        return out
    text = {h: [format_value(v) if not _is_missing(v) else None for v in configs[h].tolist()]
            for h in hps}
    varied = [(h, vs) for h in hps if len(vs := _ref_sorted_values(configs[h])) > 1]
    if len(varied) <= 1:
        return out
    for h, values in varied:
        col = np.array([t if t is not None else "\0missing" for t in text[h]], dtype=object)
        for v in values:
            sub = ids_all[col == format_value(v)]
            put(f"{h}={format_value(v)}", "value", h, format_value(v), n_value,
                len(sub) * (len(sub) - 1) // 2,
                lambda seed, sub=sub: pairs.sample_pairs(sub, n_value, seed))
    for h, values in varied:
        rank_of = {format_value(v): r for r, v in enumerate(values)}
        keep = [x for x, t in enumerate(text[h]) if t is not None]
        others = [o for o in hps if o != h]
        group = [tuple(str(text[o][x]) for o in others) for x in keep]
        rank = np.array([rank_of[text[h][x]] for x in keep], dtype=np.int64)
        ids_o, end, cnt = _ref_only_layout(ids_all[keep], group, rank)
        put(f"only:{h}", "only", h, "", n_value, int(cnt.sum()),
            lambda seed, ids_o=ids_o, end=end, cnt=cnt: pairs._sample_only_pairs(
                ids_o, end, cnt, n_value, seed))
    return out


# ---- random grids ---------------------------------------------------------------------------

_VALUES = st.sampled_from([0, 1, 1.0, 2, 2.5, 0.1, -0.0, 10.0, True, False, "a", "b", "B",
                           "None", None, float("nan"), np.int64(2), np.float32(0.1),
                           np.float64(2.5), "a b", "\u00e9"])


@st.composite
def _grids(draw):
    n_hps = draw(st.integers(1, 4))
    n = draw(st.integers(0, 30))
    ids = draw(st.lists(st.integers(0, 500), min_size=n, max_size=n, unique=True))
    data: dict[str, Any] = {"config_id": ids}
    for k in range(n_hps):
        pool = draw(st.lists(_VALUES, min_size=1, max_size=5))
        data[f"h{k}"] = pd.Series([draw(st.sampled_from(pool)) for _ in range(n)], dtype=object)
    return pd.DataFrame(data), [f"h{k}" for k in range(n_hps)]


@settings(max_examples=150, deadline=None)
@given(grid=_grids(), n_pairs=st.integers(1, 6), value_pairs=st.one_of(st.none(),
                                                                         st.integers(1, 6)))
def test_scopes_are_those_of_the_element_by_element_rules(grid, n_pairs, value_pairs):
    configs, hps = grid
    got = pairs.scopes(configs, hps, n_pairs, value_pairs)
    want = _ref_scopes(configs, hps, n_pairs, value_pairs)
    assert [(s.name, s.kind, s.hyperparameter, s.value, s.cap, s.n_possible) for s in got] \
        == [w[:6] for w in want]
    for s, w in zip(got, want, strict=True):
        for seed in (0, 7):
            np.testing.assert_array_equal(s.pairs(0, seed), w[6](pairs.scope_seed(seed, s.name)))
            np.testing.assert_array_equal(
                s.pairs(1, seed), w[6](pairs.scope_seed(seed, f"{s.name}|robust|1")))


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 40), n_groups=st.integers(1, 4), n_cols=st.integers(1, 3),
       n_ranks=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_only_layout_is_that_of_the_element_by_element_rules(n, n_groups, n_cols, n_ranks,
                                                              seed):
    rng = np.random.default_rng(seed)
    ids = rng.choice(1000, size=n, replace=False).astype(np.int64)
    group = rng.integers(0, n_groups, size=(n, n_cols))
    rank = rng.integers(0, n_ranks, size=n).astype(np.int64)
    got = pairs._only_layout(ids, group, rank)
    want = _ref_only_layout(ids, [tuple(int(c) for c in row) for row in group], rank)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def _big_grid(n: int, n_values: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"config_id": np.arange(n),
                         "lr": rng.choice(np.linspace(1e-4, 1, n_values), n),
                         "k": rng.choice([8, 16, 32], n), "reg": rng.choice([0.1, 1.0], n)})


def test_each_distinct_value_is_formatted_once(monkeypatch):
    """A column's texts are computed once per distinct value, not once per configuration."""
    calls = {"n": 0}
    real = pairs.format_value

    def counted(v):
        calls["n"] += 1
        return real(v)

    monkeypatch.setattr(pairs, "format_value", counted)
    configs = _big_grid(4000, 400)
    out = pairs.scopes(configs, ["lr", "k", "reg"], 25)
    assert sum(s.kind == "value" for s in out) == 400 + 3 + 2
    assert calls["n"] < 10 * (400 + 3 + 2)  # 3 x 4000 when every element is formatted


def test_value_scopes_do_not_scan_the_column_once_per_value(monkeypatch):
    """The configurations of every value are found in one pass: comparing the column with each
    value (values x configurations comparisons, a minute for 5,000 values of 100,000
    configurations) is what this counts."""
    calls = {"eq": 0}

    class Text(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            calls["eq"] += 1
            return str.__eq__(self, other)

    real = pairs.format_value
    monkeypatch.setattr(pairs, "format_value", lambda v: Text(real(v)))
    n, n_values = 4000, 400
    out = pairs.scopes(_big_grid(n, n_values), ["lr", "k", "reg"], 25)
    assert sum(s.kind == "value" for s in out) == n_values + 3 + 2
    assert calls["eq"] < 5 * 3 * n  # a scan per value: about n x n_values


def test_only_layout_sorts_with_arrays(monkeypatch):
    """The one-at-a-time scopes are sorted and counted with array operations: a Python sort
    keyed per configuration is never called on the grid."""
    import builtins

    real = builtins.sorted

    def guarded(iterable, *args, **kwargs):
        items = list(iterable)
        assert len(items) < 1000, "a Python sort of every configuration"
        return real(items, *args, **kwargs)

    configs = _big_grid(5000, 50)
    monkeypatch.setattr(builtins, "sorted", guarded)
    out = pairs.scopes(configs, ["lr", "k", "reg"], 25)
    assert [s.name for s in out if s.kind == "only"] == ["only:lr", "only:k", "only:reg"]


# ---- the step-down of the max-t test --------------------------------------------------------

def _ref_stepdown_p(estimates, replicates, se_factor=1.0, paired=True):
    """The adjusted p-values with one maximum over the remaining hypotheses per step."""
    from dptune.analysis.dp.comparisons import IDENTICAL_RTOL

    est = np.asarray(estimates, dtype=np.float64)
    reps = np.asarray(replicates, dtype=np.float64)
    k, n_boot = reps.shape
    if not paired and k > 1:
        reps = np.stack([np.roll(reps[i], i * (n_boot // k)) for i in range(k)])
    a, b = np.triu_indices(k, k=1)
    diff = est[a] - est[b]
    d_star = reps[a] - reps[b]
    se = d_star.std(axis=1, ddof=1) if n_boot > 1 else np.zeros(len(a))
    scale = np.maximum(np.abs(reps[a]).max(axis=1, initial=0.0),
                       np.abs(reps[b]).max(axis=1, initial=0.0))
    testable = se > IDENTICAL_RTOL * np.maximum(scale, 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(testable, diff / np.where(testable, se * float(se_factor), 1.0), 0.0)
        null = np.abs(d_star - d_star.mean(axis=1, keepdims=True)) / np.where(
            testable, se, 1.0)[:, None]
    null[~testable] = 0.0
    p_adj = np.ones(len(a))
    order = [h for h in np.argsort(-np.abs(t), kind="stable") if testable[h]]
    running = 0.0
    for s, h in enumerate(order):
        rest = null[order[s:]].max(axis=0)
        p = (1.0 + float(np.sum(rest >= abs(t[h]) * (1.0 - 1e-12)))) / (n_boot + 1.0)
        running = max(running, p)
        p_adj[h] = running
    return p_adj


@settings(max_examples=100, deadline=None)
@given(k=st.integers(1, 9), n_boot=st.integers(9, 60), seed=st.integers(0, 2**16),
       paired=st.booleans(), factor=st.sampled_from([1.0, 1.028, 2.0]),
       copies=st.integers(0, 2))
def test_stepdown_is_that_of_one_maximum_per_step(k, n_boot, seed, paired, factor, copies):
    from dptune.analysis.dp.comparisons import stepdown_maxt

    rng = np.random.default_rng(seed)
    est = rng.random(k).round(2)
    reps = est[:, None] + 0.1 * rng.standard_normal((k, n_boot))
    for c in range(min(copies, k - 1)):  # untested pairs: estimates with equal replicates
        reps[c + 1], est[c + 1] = reps[0], est[0]
    got = stepdown_maxt(est, reps, factor, paired).p_adjusted
    np.testing.assert_array_equal(got, _ref_stepdown_p(est, reps, factor, paired))
