"""Bootstrap of the robust DP estimate: users (in random groups) and pairs, vectorised.

The robust estimate (:mod:`dptune.analysis._robust`) is the mean p-value ``pbar`` of P pairs over
F folds. Its bootstrap replicate ``r`` draws

1. pair multiplicities ``c_r = (c_r1 .. c_rP) ~ Multinomial(P, 1/P)`` (the pairs resampled with
   replacement; shared by every fold and every metric), and
2. per fold, user weights: the fold's ``n`` users are dealt at random into ``G = min(n, groups)``
   groups (a seeded permutation, position ``mod G``; sizes differ by at most one) and the groups
   get weights ``w_r = (w_r1 .. w_rG) ~ Multinomial(G, 1/G)``; a user's weight is its group's.
   With ``G = n`` this is exactly the ordinary bootstrap of the users (each user its own group);
   with ``G < n`` it resamples blocks of exchangeable users, which keeps the bootstrap's
   expectation and estimates its variance from ``G`` block sums instead of ``n`` users (the
   price of making the cost ``O(P G B)`` instead of ``O(P n B)``; see ``docs/statistics.md``).

For pair ``j`` with per-user differences ``d_j(u)``, ``dbar_j`` their mean and
``c_j(u) = d_j(u) - dbar_j`` (centred first: no cancellation), the group sums
``C1[j, g] = sum_{u in g} c_j(u)`` and ``C2[j, g] = sum_{u in g} c_j(u)^2`` give every replicate
at once by two matrix products:

    n*_r = sum_g w_rg |g|,   m_rj = (sum_g w_rg C1[j, g]) / n*_r,   mean*_rj = m_rj + dbar_j,
    var*_rj = (sum_g w_rg C2[j, g] - n*_r m_rj^2) / (n*_r - 1),
    t_rj = mean*_rj / sqrt(var*_rj / n*_r),   p_rj = 2 T_{n-1}.sf(|t_rj|)

(the paired t-test of the weighted users; ``df = n - 1``). A replicate whose variance is below
``1e-14 max|c_j|^2`` gets ``p = 1`` when its mean is 0 (``<= 1e-9 max|d_j|``), else 0, the
conventions of :func:`dptune.analysis._stats.paired_pvalues`. ``p`` from ``|t|`` uses a table of
the exact two-sided tail on a grid of step 1/256 up to ``|t| = 64`` with linear interpolation
(error below 1e-6) and the exact tail beyond.

The replicate of the fold is ``(1/P) sum_j c_rj p_rj``; averaged over the folds it is
``pbar*_r``. Every draw is seeded: pair multiplicities from ``SeedSequence(seed,
spawn_key=(0,))``, fold ``f``'s groups and weights from ``SeedSequence(seed,
spawn_key=(f + 1,))``; metrics with the same users share the draws, so replicates are paired
across metrics (:func:`dptune.analysis._dp.prob_more_discriminative`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from scipy import special

from dptune.errors import input_error

__all__ = [
    "GROUPS",
    "two_sided_t_pvalue",
    "user_groups",
    "group_sums",
    "pair_multiplicities",
    "fold_draws",
    "weighted_t_pvalues",
    "fold_replicate_means",
    "bootstrap_mean_p",
]

#: Default number of user groups of the bootstrap (``G = min(n_users, GROUPS)``).
GROUPS = 128

_STEP = 1.0 / 256.0
_TMAX = 64.0


@lru_cache(maxsize=64)
def _tail_table(df: int) -> np.ndarray:
    """Two-sided p ``2 T_df.sf(x)`` on the grid ``x = 0, 1/256, ..., 64`` (plus one point)."""
    x = np.arange(int(_TMAX / _STEP) + 2) * _STEP
    return 2.0 * special.stdtr(df, -x)


def two_sided_t_pvalue(t: np.ndarray, df: int) -> np.ndarray:
    """``2 T_df.sf(|t|)`` (Student t, ``df >= 1`` degrees of freedom), vectorised and fast.

    ``|t| <= 64``: linear interpolation in a table of step 1/256 (absolute error below 1e-6);
    beyond, the exact tail (``scipy.special.stdtr``). NaN ``t`` gives NaN.
    """
    if int(df) < 1:
        raise input_error("bootstrap", "df", f"must be >= 1, got {df}")
    a = np.abs(np.asarray(t, dtype=np.float64))
    table = _tail_table(int(df))
    x = a / _STEP
    inside = x < (table.size - 2)
    xi = np.where(inside, x, 0.0)
    i = xi.astype(np.int64)
    frac = xi - i
    p = table[i] + frac * (table[i + 1] - table[i])
    if not inside.all():
        out = ~inside & np.isfinite(a)
        p = np.where(out, 0.0, p)
        if out.any():
            p[out] = 2.0 * special.stdtr(int(df), -a[out])
        p = np.where(np.isnan(a), np.nan, p)
    return p


def user_groups(n: int, groups: int, rng: np.random.Generator) -> np.ndarray:
    """Group label of each of ``n`` users: ``G = min(n, groups)`` groups, sizes differing by at
    most one, at random (``labels[perm] = arange(n) % G``)."""
    g = max(1, min(int(n), int(groups)))
    labels = np.empty(int(n), dtype=np.int64)
    labels[rng.permutation(int(n))] = np.arange(int(n)) % g
    return labels


def group_sums(d: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(dbar, C1, C2)`` of differences ``d`` ``(P, n)`` for the group ``labels`` (length n):
    ``dbar`` the row means, ``C1``/``C2`` ``(P, G)`` the group sums of ``c = d - dbar`` and
    ``c^2`` (see the module docstring)."""
    d = np.asarray(d, dtype=np.float64)
    g = int(labels.max()) + 1 if labels.size else 0
    dbar = d.mean(axis=1)
    c = d - dbar[:, None]
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], np.arange(g))
    cs = c[:, order]
    c1 = np.add.reduceat(cs, starts, axis=1)
    c2 = np.add.reduceat(cs * cs, starts, axis=1)
    return dbar, c1, c2


def pair_multiplicities(n_boot: int, n_pairs: int, seed: int) -> np.ndarray:
    """``(B, P)`` multiplicities of the pairs in each replicate: ``Multinomial(P, 1/P)`` rows
    (``SeedSequence(seed, spawn_key=(0,))``)."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(0,)))
    return rng.multinomial(int(n_pairs), np.full(int(n_pairs), 1.0 / n_pairs),
                           size=int(n_boot)).astype(np.float64)


def fold_draws(n: int, n_boot: int, seed: int, fold_index: int,
               groups: int = GROUPS) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, weights)`` of one fold: the users' group labels (:func:`user_groups`) and the
    ``(B, G)`` group weights, ``Multinomial(G, 1/G)`` rows; seeded by ``SeedSequence(seed,
    spawn_key=(fold_index + 1,))``."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(fold_index) + 1,)))
    labels = user_groups(n, groups, rng)
    g = int(labels.max()) + 1 if labels.size else 1
    w = rng.multinomial(g, np.full(g, 1.0 / g), size=int(n_boot)).astype(np.float64)
    return labels, w


def weighted_t_pvalues(dbar: np.ndarray, c1: np.ndarray, c2: np.ndarray, sizes: np.ndarray,
                       weights: np.ndarray, n: int, spread: np.ndarray | None = None,
                       size: np.ndarray | None = None) -> np.ndarray:
    """Paired t-test p-values ``(P, B)`` of every pair under every replicate's group weights.

    ``dbar`` ``(P,)``, ``c1``/``c2`` ``(P, G)`` from :func:`group_sums`, ``sizes`` ``(G,)`` the
    group sizes, ``weights`` ``(B, G)``; ``spread = max_u |c_j(u)|`` and ``size = max_u |d_j(u)|``
    (for the zero-variance rule; default: derived from ``c2``/``dbar``, which is exact for the
    ``p = 1`` of all-zero pairs). Formulas in the module docstring.
    """
    w = np.asarray(weights, dtype=np.float64)
    if n < 2:
        return np.ones((len(dbar), w.shape[0]))
    nstar = w @ np.asarray(sizes, dtype=np.float64)  # (B,)
    s1 = c1 @ w.T  # (P, B)
    s2 = c2 @ w.T
    m = s1 / nstar
    var = np.maximum(s2 - nstar * m * m, 0.0) / (nstar - 1.0)
    mean = m + dbar[:, None]
    if spread is None:
        spread = np.sqrt(c2.sum(axis=1))
    if size is None:
        size = np.abs(dbar) + spread
    zero_var = var <= 1e-14 * (np.asarray(spread)[:, None] ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / np.sqrt(var / nstar)
    p = two_sided_t_pvalue(np.where(zero_var, 0.0, t), n - 1)
    p = np.where(zero_var, np.where(np.abs(mean) <= 1e-9 * np.asarray(size)[:, None], 1.0, 0.0), p)
    return np.clip(p, 0.0, 1.0)


def fold_replicate_means(d: np.ndarray, multiplicities: np.ndarray, labels: np.ndarray,
                         weights: np.ndarray) -> np.ndarray:
    """One fold's part of the replicates: ``(1/P) sum_j c_rj p_rj`` for every metric, ``(M, B)``.

    ``d`` is ``(M, P, n)`` (or ``(P, n)``: one metric) of differences on the same users,
    ``multiplicities`` ``(B, P)`` (:func:`pair_multiplicities`), ``labels``/``weights`` from
    :func:`fold_draws` for these ``n`` users.
    """
    d = np.asarray(d, dtype=np.float64)
    squeeze = d.ndim == 2
    if squeeze:
        d = d[None]
    n_metrics, n_pairs, n = d.shape
    if n < 2:  # no variance estimate: p = 1 for every pair (dptune's convention)
        out = np.ones((n_metrics, weights.shape[0]))
        return out[0] if squeeze else out
    flat = d.reshape(n_metrics * n_pairs, n)
    sizes = np.bincount(labels, minlength=weights.shape[1]).astype(np.float64)
    dbar, c1, c2 = group_sums(flat, labels)
    spread = np.abs(flat - dbar[:, None]).max(axis=1)
    size = np.abs(flat).max(axis=1)
    p = weighted_t_pvalues(dbar, c1, c2, sizes, weights, n, spread, size)  # (M*P, B)
    p = p.reshape(n_metrics, n_pairs, -1)
    out = np.einsum("mjr,rj->mr", p, multiplicities) / n_pairs
    return out[0] if squeeze else out


def bootstrap_mean_p(diffs: Sequence[np.ndarray], n_boot: int = 1000, seed: int = 0,
                     groups: int = GROUPS) -> np.ndarray:
    """Bootstrap replicates ``pbar*_r`` of the mean p-value over folds and pairs.

    ``diffs[f]`` holds fold ``f``'s per-user differences of the P pairs, ``(P, n_f)`` or
    ``(M, P, n_f)`` for M metrics on the same users (then the draws are shared by the metrics).
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
    n_pairs = arrs[0].shape[1]
    mult = pair_multiplicities(n_boot, n_pairs, seed)
    total = np.zeros((arrs[0].shape[0], int(n_boot)))
    for f, d in enumerate(arrs):
        labels, w = fold_draws(d.shape[2], n_boot, seed, f, groups)
        total += fold_replicate_means(d, mult, labels, w)
    total /= len(arrs)
    return total[0] if squeeze else total
