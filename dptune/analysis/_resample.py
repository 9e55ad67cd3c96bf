"""Bootstrap of the robust DP estimate: users (in random groups) and pairs, vectorised.

The robust estimate (:mod:`dptune.analysis._robust`) is the mean p-value ``pbar`` of P pairs over
F folds. Its bootstrap replicate ``r`` draws

1. pair multiplicities ``c_r = (c_r1 .. c_rP) ~ Multinomial(P, 1/P)`` (the pairs resampled with
   replacement; shared by every fold and every metric), and
2. per fold, user weights: the fold's ``n`` users are put in a random order (a seeded
   permutation) and cut into ``G = min(n, groups)`` consecutive groups (sizes differ by at most
   one); the groups get weights ``w_r = (w_r1 .. w_rG) ~ Multinomial(G, 1/G)`` and a user's
   weight is its group's. With ``G = n`` this is exactly the ordinary bootstrap of the users
   (each user its own group); with ``G < n`` it resamples blocks of exchangeable users, which
   keeps the bootstrap's expectation and estimates its spread from ``G`` block sums instead of
   ``n`` users -- the price of a cost of ``O(P G B)`` instead of ``O(P n B)`` (see
   ``docs/statistics.md``).

For pair ``j = (a, b)`` with per-user differences ``d_j(u) = x_a(u) - x_b(u)``, ``dbar_j`` their
mean and ``c_j(u) = d_j(u) - dbar_j``, the group sums ``C1[j, g] = sum_{u in g} c_j(u)`` and
``C2[j, g] = sum_{u in g} c_j(u)^2`` (one compiled pass over the users, from the raw sums
``S1 = sum d``, ``S2 = sum d^2``: ``C1 = S1 - |g| dbar``, ``C2 = S2 - 2 dbar S1 + |g| dbar^2``)
give every replicate at once by two matrix products:

    n*_r = sum_g w_rg |g|,   m_rj = (sum_g w_rg C1[j, g]) / n*_r,   mean*_rj = m_rj + dbar_j,
    var*_rj = (sum_g w_rg C2[j, g] - n*_r m_rj^2) / (n*_r - 1),
    t_rj = mean*_rj / sqrt(var*_rj / n*_r),   p_rj = 2 T_{n-1}.sf(|t_rj|)

(the paired t-test of the weighted users; ``df = n - 1``). A pair whose differences are all
equal (``min d = max d``) has ``p = 1`` in every replicate when they are 0, else 0; a replicate
whose variance is below ``1e-14 sum_u c_j(u)^2`` likewise (the conventions of
:func:`dptune.analysis._stats.paired_pvalues`). ``p`` from ``|t|`` uses a table of the exact
two-sided tail on 4,097 points of ``x = |t| / (1 + |t|)`` in ``[0, 1]`` with linear
interpolation (absolute error below 1e-6 for every ``t`` and ``df``).

The fold's part of replicate ``r`` is ``(1/P) sum_j c_rj p_rj``; averaged over the folds it is
``pbar*_r``. Every draw is seeded: pair multiplicities from ``SeedSequence(seed,
spawn_key=(0,))``, fold ``f``'s user order and group weights from ``SeedSequence(seed,
spawn_key=(f + 1,))``; metrics with the same users share the draws, so replicates are paired
across metrics (:func:`dptune.analysis._dp.prob_more_discriminative`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from numba import njit, prange
from scipy import special

from dptune.errors import input_error

__all__ = [
    "GROUPS",
    "two_sided_t_pvalue",
    "fold_draws",
    "present_columns",
    "pair_moments",
    "pair_multiplicities",
    "point_pvalues",
    "fold_replicate_means",
    "bootstrap_mean_p",
]

#: Default number of user groups of the bootstrap (``G = min(n_users, GROUPS)``).
GROUPS = 64

_TABLE = 1 << 12


@lru_cache(maxsize=64)
def _tail_table(df: int) -> np.ndarray:
    """Two-sided p ``2 T_df.sf(t)`` at ``t = x / (1 - x)``, ``x = k / 4096`` (x = 1: p = 0)."""
    x = np.arange(_TABLE + 1) / _TABLE
    with np.errstate(divide="ignore"):
        t = x / (1.0 - x)
    p = 2.0 * special.stdtr(df, -t)
    p[-1] = 0.0
    return p


@njit(cache=True, nogil=True, error_model="numpy")
def _table_p(t: float, table: np.ndarray) -> float:
    a = abs(t)
    x = a / (1.0 + a) * (table.shape[0] - 1)
    i = int(x)
    if i >= table.shape[0] - 1:
        return table[table.shape[0] - 1]
    f = x - i
    return table[i] + f * (table[i + 1] - table[i])


@njit(cache=True, nogil=True)
def _table_p_array(t: np.ndarray, table: np.ndarray, out: np.ndarray) -> None:
    for i in range(t.shape[0]):
        out[i] = _table_p(t[i], table) if t[i] == t[i] else np.nan


def two_sided_t_pvalue(t: np.ndarray, df: int) -> np.ndarray:
    """``2 T_df.sf(|t|)`` (Student t, ``df >= 1``) by the interpolated table (error < 1e-6)."""
    if int(df) < 1:
        raise input_error("bootstrap", "df", f"must be >= 1, got {df}")
    arr = np.ascontiguousarray(np.asarray(t, dtype=np.float64))
    out = np.empty(arr.size)
    _table_p_array(arr.ravel(), _tail_table(int(df)), out)
    return out.reshape(arr.shape)


def fold_draws(n: int, n_boot: int, seed: int, fold_index: int,
               groups: int = GROUPS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(perm, starts, weights)`` of one fold: a random order of the ``n`` users, the group
    boundaries ``starts`` (``G + 1`` positions in that order, ``starts[g] = floor(g n / G)``) and
    the ``(B, G)`` group weights, ``Multinomial(G, 1/G)`` rows; seeded by
    ``SeedSequence(seed, spawn_key=(fold_index + 1,))``."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(fold_index) + 1,)))
    n = int(n)
    g = max(1, min(n, int(groups)))
    perm = rng.permutation(n).astype(np.int64)
    starts = (np.arange(g + 1, dtype=np.int64) * n) // g
    w = rng.multinomial(g, np.full(g, 1.0 / g), size=int(n_boot)).astype(np.float64)
    return perm, starts, w


def pair_multiplicities(n_boot: int, n_pairs: int, seed: int) -> np.ndarray:
    """``(B, P)`` multiplicities of the pairs in each replicate: ``Multinomial(P, 1/P)`` rows
    (``SeedSequence(seed, spawn_key=(0,))``)."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(0,)))
    return rng.multinomial(int(n_pairs), np.full(int(n_pairs), 1.0 / n_pairs),
                           size=int(n_boot)).astype(np.float64)


@njit(cache=True, nogil=True, parallel=True)
def _pair_sums(values, ra, rb, labels, s1, s2, dmin, dmax):  # pragma: no cover - numba
    for j in prange(ra.shape[0]):  # pairs are independent: one thread per block of pairs
        a = ra[j]
        b = rb[j]
        lo = np.inf
        hi = -np.inf
        for g in range(s1.shape[1]):
            s1[j, g] = 0.0
            s2[j, g] = 0.0
        for u in range(values.shape[1]):
            g = labels[u]
            if g < 0:
                continue
            d = np.float64(values[a, u]) - np.float64(values[b, u])
            s1[j, g] += d
            s2[j, g] += d * d
            if d < lo:
                lo = d
            if d > hi:
                hi = d
        dmin[j] = lo
        dmax[j] = hi


@njit(cache=True, nogil=True)
def _present(values, rows, out):  # pragma: no cover - numba
    for u in range(values.shape[1]):
        ok = True
        for r in rows:
            if values[r, u] != values[r, u]:
                ok = False
                break
        out[u] = ok


def present_columns(values: np.ndarray, rows: np.ndarray) -> np.ndarray | None:
    """Columns (users) with a value (not NaN) for every row of ``rows``: the inner join of
    ``read_matrix``; None when every column qualifies (the usual case, no copy)."""
    out = np.empty(values.shape[1], dtype=np.bool_)
    _present(values, np.ascontiguousarray(rows, dtype=np.int64), out)
    return None if out.all() else np.flatnonzero(out)


def pair_moments(values: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray, perm: np.ndarray,
                 starts: np.ndarray, columns: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """``(dbar, C1, C2, constant, size)`` of the pairs ``(values[rows_a[j]], values[rows_b[j]])``
    over the users, grouped by ``perm``/``starts`` (:func:`fold_draws`); ``constant[j]``: every
    difference equal (then ``C1 = C2 = 0`` exactly); ``size[j] = max_u |d_j(u)|``. ``values`` is
    ``(configs, users)`` (float32 or float64, read in place); ``columns``: the users used (their
    column indices, ``starts[-1]`` of them), None = every column."""
    v = values if values.flags.c_contiguous else np.ascontiguousarray(values)
    ra = np.ascontiguousarray(rows_a, dtype=np.int64)
    rb = np.ascontiguousarray(rows_b, dtype=np.int64)
    n_p, g = len(ra), len(starts) - 1
    sizes = np.diff(starts).astype(np.float64)
    cols = np.arange(v.shape[1]) if columns is None else np.asarray(columns)
    labels = np.full(v.shape[1], -1, dtype=np.int64)
    labels[cols[np.asarray(perm)]] = np.repeat(np.arange(g), np.diff(starts))
    s1, s2 = np.empty((n_p, g)), np.empty((n_p, g))
    dmin, dmax = np.empty(n_p), np.empty(n_p)
    _pair_sums(v, ra, rb, labels, s1, s2, dmin, dmax)
    n = float(sizes.sum())
    dbar = s1.sum(axis=1) / n
    c1 = s1 - dbar[:, None] * sizes
    c2 = np.maximum(s2 - 2.0 * dbar[:, None] * s1 + (dbar * dbar)[:, None] * sizes, 0.0)
    constant = dmin == dmax
    c1[constant] = 0.0
    c2[constant] = 0.0
    dbar[constant] = dmin[constant]
    return dbar, c1, c2, constant, np.maximum(np.abs(dmin), np.abs(dmax))


def point_pvalues(dbar: np.ndarray, c2: np.ndarray, constant: np.ndarray, n: int) -> np.ndarray:
    """The paired t-test p-value of each pair on all its users from :func:`pair_moments`:
    ``t = dbar / sqrt(s^2 / n)``, ``s^2 = sum_g C2 / (n - 1)``, ``p = 2 T_{n-1}.sf(|t|)`` (exact,
    scipy); constant differences: 1 when 0, else 0; ``n < 2``: 1."""
    if n < 2:
        return np.ones(len(dbar))
    var = c2.sum(axis=1) / (n - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = dbar / np.sqrt(var / n)
    p = 2.0 * special.stdtr(n - 1, -np.abs(t))
    p = np.where(constant | (var <= 0.0), np.where(dbar == 0.0, 1.0, 0.0), p)
    return np.clip(p, 0.0, 1.0)


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def _replicate_sums(s1w, s2w, nstar, dbar, c2tot, size, constant, mult, table,
                    out):  # pragma: no cover - numba
    n_boot, n_pairs = s1w.shape
    for r in prange(n_boot):  # replicates are independent: each thread owns its out[r]
        acc = 0.0
        ns = nstar[r]
        for j in range(n_pairs):
            c = mult[r, j]
            if c == 0.0:
                continue
            if constant[j]:
                p = 1.0 if dbar[j] == 0.0 else 0.0
            else:
                m = s1w[r, j] / ns
                var = (s2w[r, j] - ns * m * m) / (ns - 1.0)
                mean = m + dbar[j]
                if var <= 1e-14 * c2tot[j]:
                    p = 1.0 if abs(mean) <= 1e-9 * size[j] else 0.0
                else:
                    p = _table_p(mean / np.sqrt(var / ns), table)
            acc += c * p
        out[r] = acc


def fold_replicate_means(values: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray,
                         multiplicities: np.ndarray, perm: np.ndarray, starts: np.ndarray,
                         weights: np.ndarray,
                         columns: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """One fold and metric: ``(p, reps)`` with ``p`` the P point p-values
    (:func:`point_pvalues`) and ``reps[r] = (1/P) sum_j c_rj p_rj`` the fold's part of every
    replicate (``multiplicities`` ``(B, P)``, ``perm``/``starts``/``weights`` from
    :func:`fold_draws` for this fold's ``n`` users: the columns of ``values``, or ``columns``).

    The two products run in float32 (the sums are of centred values; relative error about 1e-7,
    far below the table's 1e-6 on p)."""
    n = int(starts[-1])
    n_boot, n_pairs = multiplicities.shape
    if n < 2:  # no variance estimate: p = 1 for every pair (dptune's convention)
        return np.ones(n_pairs), np.ones(n_boot)
    dbar, c1, c2, constant, size = pair_moments(values, rows_a, rows_b, perm, starts, columns)
    p = point_pvalues(dbar, c2, constant, n)
    w = np.asarray(weights, dtype=np.float32)
    nstar = np.asarray(weights, dtype=np.float64) @ np.diff(starts).astype(np.float64)
    s1w = w @ c1.T.astype(np.float32)  # (B, P)
    s2w = w @ c2.T.astype(np.float32)
    out = np.zeros(n_boot)
    _replicate_sums(s1w, s2w, nstar, dbar, c2.sum(axis=1), size, constant,
                    np.ascontiguousarray(multiplicities, dtype=np.float64), _tail_table(n - 1),
                    out)
    return p, out / n_pairs


def bootstrap_mean_p(diffs: Sequence[np.ndarray], n_boot: int = 1000, seed: int = 0,
                     groups: int = GROUPS) -> np.ndarray:
    """Bootstrap replicates ``pbar*_r`` of the mean p-value over folds and pairs.

    ``diffs[f]`` holds fold ``f``'s per-user differences of the P pairs, ``(P, n_f)`` or
    ``(M, P, n_f)`` for M metrics on the same users (the draws are shared by the metrics).
    ``pbar*_r = (1/F) sum_f (1/P) sum_j c_rj p_{r,f,j}``; returns ``(B,)`` or ``(M, B)``.
    """
    if isinstance(n_boot, bool) or int(n_boot) < 1:
        raise input_error("bootstrap", "n_boot", f"must be an integer >= 1, got {n_boot!r}")
    if int(groups) < 1:
        raise input_error("bootstrap", "groups", f"must be an integer >= 1, got {groups!r}")
    if len(diffs) == 0:
        raise input_error("bootstrap", "diffs", "need at least one fold")
    arrs = [np.asarray(x, dtype=np.float64) for x in diffs]
    squeeze = arrs[0].ndim == 2
    arrs = [x[None] if x.ndim == 2 else x for x in arrs]
    if len({x.shape[:2] for x in arrs}) != 1 or arrs[0].shape[1] == 0:
        raise input_error("bootstrap", "diffs", "every fold needs the same, non-zero (metrics, pairs)")
    n_metrics, n_pairs = arrs[0].shape[:2]
    mult = pair_multiplicities(n_boot, n_pairs, seed)
    total = np.zeros((n_metrics, int(n_boot)))
    rows_a, rows_b = np.arange(n_pairs), np.full(n_pairs, n_pairs)  # d_j = d_j - 0
    for f, d in enumerate(arrs):
        perm, starts, w = fold_draws(d.shape[2], n_boot, seed, f, groups)
        for m in range(n_metrics):
            values = np.vstack([d[m], np.zeros((1, d.shape[2]))])
            total[m] += fold_replicate_means(values, rows_a, rows_b, mult, perm, starts, w)[1]
    total /= len(arrs)
    return total[0] if squeeze else total
