"""The one bootstrap of the DP estimate: users (in random groups) and, when sampled, pairs.

The estimate (:mod:`dptune.analysis.dp.scale`) is the mean p-value ``pbar`` of P pairs over F
folds. Its bootstrap replicate ``r`` draws

1. pair weights ``v_r = (v_r1 .. v_rP)``, only when the P pairs are a uniform sample of the
   ``N > P`` pairs of the grid: with ``c_r ~ Multinomial(P, 1/P)`` (the pairs resampled with
   replacement; shared by every fold and every metric) ``v_rj = 1 + sqrt(1 - P/N) (c_rj - 1)``
   (the rescaled bootstrap of a sample drawn without replacement: mean 1, the resampling
   variance times the finite-population factor ``1 - P/N``, never negative). When every pair
   is used (``P = N``) the pairs are the parameter's own, not a sample: ``v_rj = 1``;
2. user weights that follow the user: the fold's ``n`` users are ordered by a seeded hash of
   their id and cut into ``G = min(n, groups)`` consecutive groups (sizes differ by at most
   one); the groups get weights ``w_r = (w_r1 .. w_rG) ~ Multinomial(G, 1/G)``, the same in
   every fold, and a user's weight is its group's (:func:`user_draws`). User-stratified folds
   hold the same users in every validation fold, and a user's taste for one configuration over
   another goes with them, so the folds' p-values are dependent: a replicate resamples users,
   not user-fold cells. With ``G = n`` this is the ordinary bootstrap of the users; with
   ``G < n`` it resamples blocks of exchangeable users, which keeps the bootstrap's
   expectation and estimates its spread from ``G`` block sums instead of ``n`` users -- the
   price of a cost of ``O(P G B)`` instead of ``O(P n B)`` (see ``docs/statistics.md``).

For pair ``j = (a, b)`` with per-user differences ``d_j(u) = x_a(u) - x_b(u)``, ``dbar_j`` their
mean and ``c_j(u) = d_j(u) - dbar_j``, the group sums ``C1[j, g] = sum_{u in g} c_j(u)`` and
``C2[j, g] = sum_{u in g} c_j(u)^2`` (one compiled pass over the users, from the raw sums
``S1 = sum d``, ``S2 = sum d^2``: ``C1 = S1 - |g| dbar``, ``C2 = S2 - 2 dbar S1 + |g| dbar^2``)
give every replicate at once by two matrix products:

    n*_r = sum_g w_rg |g|,   m_rj = (sum_g w_rg C1[j, g]) / n*_r,   mean*_rj = m_rj + delta_j,
    var*_rj = (sum_g w_rg C2[j, g] - n*_r m_rj^2) / (n*_r - 1),
    t_rj = mean*_rj / sqrt(var*_rj / n*_r),   p_rj = 2 T_{n-1}.sf(|t_rj|)

(the paired t-test of the weighted users, :func:`dptune.analysis.dp.paired_tests.paired_t`;
``df = n - 1``). ``k`` (:func:`shrink_factor`, one
per fold and metric) sets the bootstrap world's differences: resampling the users around the
observed ``dbar_j`` would test pairs whose true differences are the observed ones, which are
the true ones plus sampling noise -- ``E[t_j^2] = lambda_j^2 + 1`` (``nu / (nu - 2)`` times
that for Student's t) -- so every pair would look more different than it is, and the spread of
a p-value depends on how different the pair is (pairs without a difference have uniform
p-values, the widest spread). The positive-part James-Stein factor ``k^2 = max(0, 1 - P' /
sum_j t_j^2)`` (with the ``nu`` correction) shrinks all differences together so that their
total squared size matches the true one on average; with no differences ``k`` is 0 about half
the time (the bootstrap world then has none), with strong ones ``k`` is close to 1. A pair's
true difference is the same in every fold; when the folds hold the same users part of their
sampling noise is the same noise too, and the bootstrap-world difference is then one number
for every fold, ``delta_j = (1/F) sum_f k_f dbar_{j,f}``, blended with each fold's own
``k_f dbar_{j,f}`` by the share of users the folds have in common (:func:`bootstrap_centres`).
The replicates are therefore computed once every fold's group sums are in
(:class:`FoldMoments`). A pair whose differences are all
equal (``min d = max d``) has ``p = 1`` in every replicate when they are 0, else 0. A replicate
whose users drawn all have one difference (a pair that differs on a few users only, none of
them drawn) is read as the test of those users reads it: ``p = 1`` when their own, uncentred
difference is 0, else 0 (:func:`_replicate_t`; shifted to the world's difference, it was a
constant non-zero difference, ``p = 0``, in every such replicate). Every other statistic goes
through the one rule of :func:`dptune.analysis.dp.paired_tests.paired_t`.
The group sums enter the products as float32 in units of a power of two per pair, ``2^e_j``
with ``2^(e_j - 1) <= max_u |d_j(u)| < 2^e_j`` (``1`` for a pair of zero differences): every
statistic above is unchanged by a common scale of a pair's differences, a power of two scales
a float exactly, and a per-user value near the float32 limit would otherwise square to
infinity. ``p`` from ``|t|`` uses a table of the exact two-sided tail on 4,097 points of ``x = |t| / (1 +
|t|)`` in ``[0, 1]`` with linear interpolation (absolute error below 1e-6 for every ``t`` and
``df``; :func:`dptune.analysis.dp.paired_tests.table_pvalue`: the kernels cannot call scipy).

The fold's part of replicate ``r`` is ``(1/P) sum_j v_rj p_rj``; averaged over the folds it is
``pbar*_r``. Every draw is seeded: pair weights from ``SeedSequence(seed, spawn_key=(0,))``,
the group weights from ``SeedSequence(seed, spawn_key=(1, G))`` and the user hash from ``seed``;
every metric shares the draws, so replicates are paired across metrics.

**Interval and ranking** (:func:`interval_replicates`, :func:`dp_interval`,
:func:`prob_more_discriminative`). ``pbar`` is by definition unbiased for its target
``theta = E[pbar]`` (the expected mean p-value at these users per fold and these pairs). In the
bootstrap world the same estimator is ``pbar*`` and its target is ``E*[pbar*]``, estimated by
the replicates' mean ``pbar-bar*`` -- not ``pbar``: resampling users adds each pair's sampling
noise a second time, which moves the replicates' location (lower for pairs with a small
difference). So the bootstrap is read as the law of the error ``pbar* - E*[pbar*]``. The
interval reads it on the arcsine scale ``A(x) = arcsin(sqrt(x))``, where its spread depends
least on where the estimate lies, and maps back into [0, 1]:

    e_r = kappa s f_r (A(pbar*_r) - A(pbar-bar*)),
    95% interval = [A^{-1}(A(pbar) - Q_0.975(e)), A^{-1}(A(pbar) - Q_0.025(e))],

``A^{-1}(y) = sin^2(y)`` with ``y`` clipped to ``[0, pi/2]``, ``kappa = t_(G-1) / z`` (the
spread is read off ``G`` user groups). ``f_r`` studentises the errors: the bootstrap's spread
depends on how different its world's pairs are, and replicate ``r`` stands for a world of its
own size ``S_r`` (its James-Stein ``sum_j lambda_j^2``, :func:`world_size`, from the same
compiled pass), so ``f_r = ((S-bar + P') / (S_r + P'))^beta`` divides each error by the spread
its own world would have relative to the sample's, with ``beta`` the slope of ``log sd`` on
``log(S + P')`` measured over the sample's world and two with its centre scaled to the
replicates' 2nd and 98th percentile sizes (:func:`size_factors`). The comparisons between
metrics and hyperparameters read the same replicates reflected on the logit scale
``L(x) = log(x / (1 - x))``,
``pbar°_r = L^{-1}(L(pbar) - (L(pbar*_r) - L(pbar-bar*)))`` (``L`` of values within ``1e-12``
of 0 or 1 taken at ``1e-12`` / ``1 - 1e-12``), on which their error rates were measured.
``s`` in (0, 1] (:func:`ungrouped_scale`) removes what the
grouping adds to the replicates' spread: pairs that share no configuration get, through the
users they share, a spurious correlation of size ``1 / sqrt(G)`` in the bootstrap, which on a
grid of many configurations dominates the variance of a mean of many p-values. The replicates'
variance follows ``V(G) = V + c / G``; the same group sums at ``G / 2`` and ``G / 4`` groups
(coarser groupings with weights of their own, :func:`coarse_weights`) give ``V(G / 2)`` and
``V(G / 4)`` (variances on the arcsine scale), and ``s^2 = V / V(G)`` from the least-squares
fit of the three (:func:`extrapolated_variance`), kept in ``[0.05, 1]``. The interval uses ``s``; the
comparisons between metrics or hyperparameters use the grouped replicates (``s = 1``), with
which their claims hold the error rate in every case studied. ``P(A more discriminative than
B) = (1/B) #{r : pbar°_A,r < pbar°_B,r}`` over the paired ``pbar°`` (ties count as "not
better"). Its coverage is measured
by :mod:`dptune.studies.simulations.coverage` (``docs/statistics.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit, prange
from scipy import special

from dptune.analysis.dp.paired_tests import (
    ZERO_VARIANCE_RTOL,
    constant_differences,
    paired_t,
    paired_t_statistics,
    t_pvalues,
    t_tail_table,
    table_pvalue,
)
from dptune.errors import input_error

__all__ = [
    "GROUPS",
    "user_draws",
    "COARSENING",
    "coarse_replicates",
    "coarse_weights",
    "pair_moments",
    "pair_multiplicities",
    "pair_weights",
    "point_t",
    "point_pvalues",
    "shrink_factor",
    "FoldMoments",
    "fold_moments",
    "shared_share",
    "bootstrap_centres",
    "fold_replicate_means",
    "fold_replicate_pvalues",
    "replicate_sum",
    "bootstrap_mean_p",
    "extrapolated_variance",
    "ungrouped_scale",
    "interval_replicates",
    "dp_interval",
    "world_size",
    "WORLD_QUANTILES",
    "size_factors",
    "interval_groups",
    "small_sample_factor",
    "prob_more_discriminative",
]

#: Default number of user groups of the bootstrap (``G = min(n_users, GROUPS)``).
GROUPS = 64

# What numba compiles into this file's kernels from another file: a digest of the source of
# paired_tests.paired_t and paired_tests.table_pvalue and of the rule's two constants. Numba's
# on-disk cache keys a kernel on its own source file only, so a change there must come with a
# change here -- this digest, which tests/analysis/dp/test_paired_t.py recomputes -- or the
# cached kernels keep the old code (also after a git pull that changes paired_tests.py alone).
_COMPILED_IN = "90c4992c4f7b3233"

#: The coarser groupings whose replicates extrapolate the variance to ungrouped users
#: (:func:`ungrouped_scale`): ``G / 2`` and ``G / 4`` groups, each kept when it has at least
#: :data:`MIN_COARSE_GROUPS` groups.
COARSENING = (2, 4)

#: Fewest groups of a coarse grouping (below it ``V(G) = V + c / G`` no longer holds: a
#: bootstrap of a handful of blocks has a variance of its own, ``(G - 1) / G`` and worse).
MIN_COARSE_GROUPS = 8

#: Smallest ratio ``V / V(G)`` :func:`ungrouped_scale` accepts (the interval is never cut to
#: less than ``sqrt`` of it, 0.22, of the grouped bootstrap's width).
MIN_VARIANCE_RATIO = 0.05

def user_draws(users: np.ndarray, n_boot: int, seed: int,
               groups: int = GROUPS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(perm, starts, weights)`` of one fold whose users, in column order, are ``users`` (their
    keys: a result store's user codes, compared as text), drawn so that a replicate resamples
    **users, not user-fold cells**: the fold's ``n`` users are ordered by a seeded 64-bit hash
    of their key (``perm``) and cut into ``G = min(n, groups)`` consecutive groups (``starts[g]
    = floor(g n / G)``: sizes differ by at most one), and the ``(B, G)`` group weights ``Multinomial(G, 1/G)`` are the same
    for every fold with ``G`` groups (``SeedSequence(seed, spawn_key=(1, G))``). A user is
    therefore at the same place in the order in every fold that holds the same users, and gets
    the same weight there.

    Why: user-stratified folds hold the same users in every validation fold, and a user's taste
    for one configuration over another stays with them from fold to fold, so the folds' p-values
    are not independent. Drawing each fold's users on their own (independent weights per fold)
    treats them as independent and gives intervals that are too narrow (simulations with a
    per-user taste as large as the per-fold noise: 78-86% coverage at nominal 95%); weights that
    follow the user carry that dependence into every replicate. A user missing from one fold
    moves the group boundaries of that fold by one place (about ``G`` users change group). When
    the folds hold different users, the shared weights only add noise of order ``1 / sqrt(G)``
    to the replicates' spread (the groups are random blocks of independent users)."""
    import pandas as pd

    ids = np.asarray(users).astype(str).astype(object)  # 7 and "7" are the same user
    n = len(ids)
    g = max(1, min(n, int(groups)))
    h = pd.util.hash_array(ids, hash_key="dptune.bootstrap", categorize=False).astype(np.uint64)
    mix = np.uint64(np.random.SeedSequence(int(seed)).generate_state(1, dtype=np.uint64)[0])
    with np.errstate(over="ignore"):  # splitmix64 finaliser of the seeded hash
        z = h ^ mix
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    perm = np.lexsort((ids, z)).astype(np.int64)  # by hash; a tie (never seen) by the id
    starts = (np.arange(g + 1, dtype=np.int64) * n) // g
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(1, g)))
    w = rng.multinomial(g, np.full(g, 1.0 / g), size=int(n_boot)).astype(np.float64)
    return perm, starts, w


def coarse_replicates(n_boot: int) -> int:
    """Replicates of each coarse grouping: ``max(min(B, 200), B // 2)``. Half of ``B`` (the
    coarse replicates cost as much each as the fine ones, in the compiled loop over replicates
    and pairs) moves the sd of :func:`ungrouped_scale` from about 6% to 8% of its value; fewer
    than 200 would move it more."""
    n_boot = int(n_boot)
    return max(min(n_boot, 200), n_boot // 2)


def coarse_weights(n_boot: int, seed: int, groups: int) -> tuple[np.ndarray, ...]:
    """The ``(coarse_replicates(B), G / c)`` group weights ``Multinomial(G / c, 1 / (G / c))``
    of each coarser
    grouping ``c`` of :data:`COARSENING` of a fold cut into ``G = groups`` groups
    (:func:`user_draws`) that keeps at least :data:`MIN_COARSE_GROUPS` groups
    (``SeedSequence(seed, spawn_key=(2, G / c))``, the same in every fold, so that they follow
    the user as the fine weights do). Coarse group ``h`` of ``G'`` is the union of the
    consecutive fine groups ``g`` with ``floor(g G' / G) = h`` (:func:`_coarse_labels`); for
    ``G`` divisible by ``c`` these are exactly the groups :func:`user_draws` would cut with
    ``G'`` groups."""
    out = []
    for c in COARSENING:
        gc = int(groups) // c
        if gc < MIN_COARSE_GROUPS:
            continue
        rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(2, gc)))
        out.append(rng.multinomial(gc, np.full(gc, 1.0 / gc),
                                   size=coarse_replicates(n_boot)).astype(np.float64))
    return tuple(out)


def _coarse_labels(groups: int, coarse: int) -> np.ndarray:
    """Coarse group of each of ``groups`` fine groups: ``floor(g coarse / groups)``."""
    return (np.arange(int(groups)) * int(coarse)) // int(groups)


def pair_multiplicities(n_boot: int, n_pairs: int, seed: int) -> np.ndarray:
    """``(B, P)`` multiplicities of the pairs in each replicate: ``Multinomial(P, 1/P)`` rows
    (``SeedSequence(seed, spawn_key=(0,))``)."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(0,)))
    return rng.multinomial(int(n_pairs), np.full(int(n_pairs), 1.0 / n_pairs),
                           size=int(n_boot)).astype(np.float64)


def pair_weights(n_boot: int, n_pairs: int, n_possible: int | None, seed: int) -> np.ndarray:
    """``(B, P)`` weights of the pairs in each replicate: all 1 when the P pairs are every pair
    of the grid (``n_possible`` None or ``<= P``: the pairs are fixed), else the rescaled
    multiplicities ``1 + sqrt(1 - P/N) (c - 1)`` of :func:`pair_multiplicities` (``N =
    n_possible``; a uniform sample without replacement of P of N pairs)."""
    n_boot, n_pairs = int(n_boot), int(n_pairs)
    if n_possible is None or int(n_possible) <= n_pairs:
        return np.ones((n_boot, n_pairs))
    scale = np.sqrt(1.0 - n_pairs / int(n_possible))
    return 1.0 + scale * (pair_multiplicities(n_boot, n_pairs, seed) - 1.0)


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


def pair_moments(values: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray, perm: np.ndarray,
                 starts: np.ndarray, columns: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """``(dbar, C1, C2, constant, size)`` of the pairs ``(values[rows_a[j]], values[rows_b[j]])``
    over the users, grouped by ``perm``/``starts`` (:func:`user_draws`); ``constant[j]``: every
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
    constant = constant_differences(dmin, dmax, dbar)
    c1[constant] = 0.0
    c2[constant] = 0.0
    dbar[constant] = dmin[constant]
    return dbar, c1, c2, constant, np.maximum(np.abs(dmin), np.abs(dmax))


def point_t(dbar: np.ndarray, c2: np.ndarray, size: np.ndarray, n: int,
            squared: bool = False) -> np.ndarray:
    """The paired t statistic of each pair on all its ``n >= 2`` users from
    :func:`pair_moments`: :func:`dptune.analysis.dp.paired_tests.paired_t` with ``s^2 = sum_g
    C2 / (n - 1)``, ``t = dbar / sqrt(s^2 / n)``; constant differences (``C2 = 0``): 0 when 0,
    else ``+-inf``. ``squared``: ``t^2`` (``paired_t``'s, for :func:`shrink_factor`)."""
    ss = c2.sum(axis=1)
    return paired_t_statistics(dbar, ss / (n - 1), n, ss, size, squared)


def point_pvalues(dbar: np.ndarray, c2: np.ndarray, size: np.ndarray, n: int) -> np.ndarray:
    """The paired t-test p-value of each pair on all its users from :func:`pair_moments`:
    :func:`point_t`, ``p = 2 T_{n-1}.sf(|t|)`` (exact, scipy:
    :func:`dptune.analysis.dp.paired_tests.t_pvalues`); constant differences: 1 when 0, else
    0; ``n < 2``: 1."""
    if n < 2:
        return np.ones(len(dbar))
    return t_pvalues(point_t(dbar, c2, size, n), n - 1)


#: A replicate whose users drawn all have one difference (:func:`_replicate_t`): its variance is
#: at most this share of the weighted sum of squares it comes from, and that difference is 0
#: when it is at most this times the pair's largest ``|d(u)|`` (both the rounding of the
#: float32 group sums they are read back from, about 1e-7).
DEGENERATE_RTOL = 1e-5


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _replicate_t(s1w, s2w, ns, r, j, delta, own, c2tot, size):  # pragma: no cover - numba
    """The t statistic of pair ``j`` in replicate ``r`` (the module docstring's ``t_rj``).

    A replicate whose users drawn all have the same difference (``(n*_r - 1) var* <=
    DEGENERATE_RTOL sum_g w_rg C2[j, g]``, the float32 rounding of the sums: a pair that
    differs on a few users only, none of them drawn) is read
    as those users' own differences, uncentred, ``d0 = m_rj + dbar_j``, which is what the
    test of such a sample gives: ``t = 0`` (``p = 1``) when ``d0`` is 0 (up to
    :data:`DEGENERATE_RTOL`), else ``+-inf``. Shifted to the world's difference ``delta_j`` as
    the other replicates are, every such replicate was a constant non-zero difference, ``p =
    0``, however little the pair differed. A pair whose differences are all equal (``C1 = C2
    = 0``, ``c2tot = 0``) is that case in every replicate, its own difference ``delta_j =
    dbar_j``: 0 when 0, else ``+-inf``."""
    m = s1w[r, j] / ns
    var = (s2w[r, j] - ns * m * m) / (ns - 1.0)
    if var * (ns - 1.0) <= DEGENERATE_RTOL * s2w[r, j] or var <= ZERO_VARIANCE_RTOL * c2tot[j]:
        d0 = m + own[j]
        if abs(d0) <= DEGENERATE_RTOL * size[j]:
            return 0.0
        return d0 * np.inf
    return paired_t(m + delta[j], var, ns, c2tot[j], size[j])


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _replicate_p(s1w, s2w, ns, r, j, delta, own, c2tot, size,
                 table):  # pragma: no cover - numba
    """The p-value ``p_rj`` of :func:`_replicate_t`'s statistic (1 for a constant zero
    difference, 0 for a constant non-zero one)."""
    return table_pvalue(_replicate_t(s1w, s2w, ns, r, j, delta, own, c2tot, size), table)


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def _replicate_sums(s1w, s2w, nstar, delta, own, c2tot, size, mult, table,
                    out, t2):  # pragma: no cover - numba
    n_boot, n_pairs = s1w.shape
    for r in prange(n_boot):  # replicates are independent: each thread owns its out[r]
        acc = 0.0
        acc2 = 0.0
        ns = nstar[r]
        for j in range(n_pairs):
            c = mult[r, j]
            if c == 0.0:
                continue
            t = _replicate_t(s1w, s2w, ns, r, j, delta, own, c2tot, size)
            acc += c * table_pvalue(t, table)
            if abs(t) < np.inf:  # a constant non-zero pair (t = +-inf) has no size to add
                acc2 += c * t * t
        out[r] = acc
        t2[r] = acc2


@njit(cache=True, nogil=True, error_model="numpy", parallel=True)
def _replicate_pvalues(s1w, s2w, nstar, delta, own, c2tot, size, table,
                       out):  # pragma: no cover - numba
    n_boot, n_pairs = out.shape
    for r in prange(n_boot):
        for j in range(n_pairs):
            out[r, j] = _replicate_p(s1w, s2w, nstar[r], r, j, delta, own, c2tot, size, table)


def shrink_factor(t2: np.ndarray, constant: np.ndarray, n: int) -> float:
    """The common factor ``k`` by which the bootstrap world's pair differences are shrunk:
    ``k^2 = max(0, 1 - P' / (sum_j t_j^2 (nu - 2) / nu))`` over the ``P'`` pairs whose
    differences are not constant (``t2``: the squared paired t statistics ``t_j^2``,
    :func:`point_t` with ``squared``; ``nu = n - 1``; ``k = 1`` when ``nu <= 2`` or no pair
    varies; an infinite ``t_j^2`` is left out of the sum). ``sum_j t_j^2 (nu - 2) / nu``
    estimates ``sum_j lambda_j^2 + P'`` (``lambda_j`` the pair's standardised true
    difference), so ``k^2 sum_j t_j^2 (nu - 2) / nu`` matches ``sum_j lambda_j^2`` on average
    (module docstring)."""
    free = ~np.asarray(constant, dtype=bool)
    nu = n - 1
    if nu <= 2 or not free.any():
        return 1.0
    t2 = np.asarray(t2, dtype=np.float64)[free]
    t2 = t2[np.isfinite(t2)]
    return float(np.sqrt(_james_stein_k2(float(t2.sum()), free.sum(), nu)))


def _james_stein_k2(t2: np.ndarray | float, free: np.ndarray | float,
                    nu: int) -> np.ndarray:
    """``k^2 = max(0, 1 - P' / (sum_j t_j^2 (nu - 2) / nu))`` element by element (``t2``:
    ``sum_j t_j^2``, ``free``: ``P'``; ``nu > 2``), 0 where that total is not positive: the one
    James-Stein rule of :func:`shrink_factor` (the bootstrap world's centre) and
    :func:`world_size` (its size)."""
    total = np.asarray(t2, dtype=np.float64) * (nu - 2) / nu
    with np.errstate(divide="ignore", invalid="ignore"):
        k2 = np.maximum(0.0, 1.0 - np.asarray(free, dtype=np.float64) / total)
    return np.where(total > 0.0, k2, 0.0)


@dataclass(frozen=True)
class FoldMoments:
    """One fold and metric, everything its replicates need (:func:`fold_moments`).

    ``p``: the P point p-values; ``dbar``, ``constant``, ``size``, ``c2tot`` (``sum_u
    c_j(u)^2``) and the group sums ``c1t``, ``c2t`` (``(G, P)``, float32, transposed for the
    products) of :func:`pair_moments`; ``shrunk``: the fold's bootstrap-world differences
    ``k dbar_j`` (``dbar_j`` for a constant pair, :func:`shrink_factor`); ``n`` users and their
    keys ``users`` (as :func:`user_draws` hashes them); ``starts``/``weights`` of
    :func:`user_draws`; ``coarse``: the weights of the coarser groupings
    (:func:`coarse_weights`; empty: no extrapolation); ``unit``: each pair's power of two
    (module docstring), ``c1t`` and ``c2t`` being in units of ``unit`` and ``unit^2``. ``n <
    2``: no test, ``p = 1`` everywhere."""

    p: np.ndarray
    dbar: np.ndarray
    constant: np.ndarray
    size: np.ndarray
    c2tot: np.ndarray
    c1t: np.ndarray
    c2t: np.ndarray
    shrunk: np.ndarray
    n: int
    users: np.ndarray
    starts: np.ndarray
    weights: np.ndarray
    unit: np.ndarray
    coarse: tuple[np.ndarray, ...] = ()

    def scaled(self, centre: np.ndarray) -> tuple[np.ndarray, ...]:
        """``(delta, dbar, c2tot, size)`` of the replicates' kernels in the units of
        ``c1t``/``c2t``: the bootstrap world's difference of each pair (its own for a constant
        pair, else ``centre``), its observed mean difference, ``sum_u c_j(u)^2`` and ``max_u
        |d_j(u)|``."""
        u = self.unit
        return (np.where(self.constant, self.dbar, centre) / u, self.dbar / u,
                self.c2tot / (u * u), self.size / u)


def fold_moments(values: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray, perm: np.ndarray,
                 starts: np.ndarray, weights: np.ndarray, users: np.ndarray,
                 columns: np.ndarray | None = None,
                 coarse: Sequence[np.ndarray] = ()) -> FoldMoments:
    """The point p-values and the group sums of one fold and metric (``perm``/``starts``/
    ``weights`` from :func:`user_draws` for this fold's ``n`` users, whose keys are ``users``:
    the columns of ``values``, or ``columns``); :func:`fold_replicate_means` turns them into the
    fold's part of every replicate once the pairs' bootstrap-world differences are known
    (:func:`bootstrap_centres`); ``coarse``: the weights of the coarser groupings
    (:func:`coarse_weights`), kept for :func:`ungrouped_scale`."""
    n = int(starts[-1])
    coarse = tuple(np.asarray(c) for c in coarse)
    n_pairs = len(rows_a)
    if n < 2:  # no variance estimate: p = 1 for every pair (dptune's convention)
        empty = np.zeros(n_pairs)
        return FoldMoments(np.ones(n_pairs), empty, np.ones(n_pairs, dtype=bool), empty, empty,
                           np.zeros((0, n_pairs), np.float32), np.zeros((0, n_pairs), np.float32),
                           empty, n, np.asarray(users), np.asarray(starts), np.asarray(weights),
                           np.ones(n_pairs), coarse)
    dbar, c1, c2, constant, size = pair_moments(values, rows_a, rows_b, perm, starts, columns)
    k = shrink_factor(point_t(dbar, c2, size, n, squared=True), constant, n)
    shrunk = np.where(constant, dbar, dbar * k)
    unit = np.ldexp(1.0, np.frexp(size)[1])  # 2^e > size >= 2^(e-1); size 0: 1
    return FoldMoments(point_pvalues(dbar, c2, size, n), dbar, constant, size,
                       c2.sum(axis=1), np.ascontiguousarray((c1 / unit[:, None]).T, np.float32),
                       np.ascontiguousarray((c2 / (unit * unit)[:, None]).T, np.float32),
                       shrunk, n, np.asarray(users), np.asarray(starts), np.asarray(weights),
                       unit, coarse)


def shared_share(folds: Sequence[FoldMoments]) -> float:
    """``omega``: the share of the folds' users that every tested fold holds, ``|intersection
    of the folds' users| / mean_f n_f`` over the folds with a test (1 for one fold, 0 when no
    user is in every fold)."""
    tested = [f for f in folds if f.n >= 2]
    if len(tested) <= 1:
        return 1.0
    common = tested[0].users
    for f in tested[1:]:
        common = np.intersect1d(common, f.users)
    return float(len(common) / np.mean([f.n for f in tested]))


def bootstrap_centres(folds: Sequence[FoldMoments]) -> list[np.ndarray]:
    """Each fold's bootstrap-world differences of the pairs:
    ``delta_{j,f} = omega delta_j + (1 - omega) k_f dbar_{j,f}`` with ``delta_j = mean_f k_f
    dbar_{j,f}`` over the folds with a test and ``omega`` the share of users that every fold
    holds (:func:`shared_share`).

    When the folds hold the same users (user-stratified folds), a user's taste for one
    configuration over another is in every fold: part of each fold's sampling noise is the
    same noise, and a pair's bootstrap-world difference is one number for every fold. A centre
    per fold then put each fold's own noise into the bootstrap world on top of the
    resampling, and the replicates' spread fell 10% short of the estimate's (coverage 90-93%
    instead of 95%). When the folds hold different users their noises are independent and each
    fold's own shrunk difference is the calibrated centre (a common one over-covers: 99%).
    ``docs/statistics.md`` section 10a has both measurements."""
    tested = [f.shrunk for f in folds if f.n >= 2]
    if not tested:
        return [f.shrunk for f in folds]
    omega = shared_share(folds)
    common = np.mean(tested, axis=0)
    return [omega * common + (1.0 - omega) * f.shrunk for f in folds]


def _group_products(moments: FoldMoments, n_boot: int, level: int | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(s1w, s2w, nstar)`` of the first ``n_boot`` replicates of a fold with a test: the
    weighted group sums ``sum_g w_rg C1[j, g]``, ``sum_g w_rg C2[j, g]`` (``(n_boot, P)``, two
    float32 products) and ``n*_r`` (module docstring), at the fine groups (``level`` None) or
    at coarse grouping ``level``."""
    m = moments
    weights = m.weights if level is None else m.coarse[level]
    c1t, c2t, sizes = m.c1t, m.c2t, np.diff(m.starts).astype(np.float64)
    if level is not None:
        labels = _coarse_labels(c1t.shape[0], weights.shape[1])
        c1t = np.add.reduceat(c1t, np.searchsorted(labels, np.arange(weights.shape[1])), axis=0)
        c2t = np.add.reduceat(c2t, np.searchsorted(labels, np.arange(weights.shape[1])), axis=0)
        sizes = np.bincount(labels, weights=sizes, minlength=weights.shape[1])
    weights = weights[:n_boot]
    w = np.asarray(weights, dtype=np.float32)
    nstar = np.asarray(weights, dtype=np.float64) @ sizes
    return w @ c1t, w @ c2t, nstar


def fold_replicate_means(moments: FoldMoments, weights_pairs: np.ndarray,
                         centre: np.ndarray, level: int | None = None,
                         sizes: np.ndarray | None = None) -> np.ndarray:
    """``reps[r] = (1/P) sum_j v_rj p_rj``: one fold's part of every replicate
    (``weights_pairs`` ``(B, P)``: :func:`pair_weights`), the bootstrap world's difference of a
    varying pair being ``centre`` (:func:`bootstrap_centres`) and a constant pair's its own.
    ``level``: None for the fold's ``G`` groups, ``i`` for its ``i``-th coarser grouping
    (``moments.coarse[i]``; the group sums of the fine groups it unites are added; its
    replicates are the first :func:`coarse_replicates` rows of ``weights_pairs``).

    ``sizes`` (``(n_boot,)``, optional): each replicate's :func:`world_size` on this fold is
    added to it (what :func:`size_factors` reads).

    The two products run in float32 (the sums are of centred values; relative error about 1e-7,
    far below the table's 1e-6 on p)."""
    m = moments
    n_boot = weights_pairs.shape[0] if level is None else coarse_replicates(weights_pairs.shape[0])
    if m.n < 2:  # no test: p = 1 in every replicate (such a fold has no coarse grouping)
        return np.ones(n_boot)
    weights_pairs = np.ascontiguousarray(weights_pairs[:n_boot], dtype=np.float64)
    n_pairs = weights_pairs.shape[1]
    s1w, s2w, nstar = _group_products(m, n_boot, level)
    out = np.zeros(n_boot)
    t2 = np.zeros(n_boot)
    _replicate_sums(s1w, s2w, nstar, *m.scaled(centre), weights_pairs, t_tail_table(m.n - 1),
                    out, t2)
    if sizes is not None:
        sizes += world_size(t2, weights_pairs @ (~m.constant).astype(np.float64), m.n)
    return out / n_pairs


def fold_replicate_pvalues(moments: FoldMoments, centre: np.ndarray, rows: int) -> np.ndarray:
    """``(rows, P)``: the p-value ``p_rj`` of every pair in each of the first ``rows``
    replicates of one fold, at the fine groups (the terms that :func:`fold_replicate_means`
    weighs and sums; all 1 for a fold without a test)."""
    m = moments
    rows = min(int(rows), m.weights.shape[0]) if m.n >= 2 else int(rows)
    if m.n < 2:
        return np.ones((rows, len(m.p)))
    s1w, s2w, nstar = _group_products(m, rows, None)
    out = np.empty((rows, len(m.p)))
    _replicate_pvalues(s1w, s2w, nstar, *m.scaled(centre), t_tail_table(m.n - 1), out)
    return out


def replicate_sum(folds: Sequence[FoldMoments], weights_pairs: np.ndarray,
                  level: int | None = None,
                  centres: Sequence[np.ndarray] | None = None,
                  sizes: np.ndarray | None = None) -> np.ndarray:
    """``sum_f reps_f``: the folds' parts of every replicate (:func:`fold_replicate_means`,
    at the fine groups or at coarse grouping ``level``), each around its
    :func:`bootstrap_centres` (``centres``: those, when already computed); divided by the
    number of folds it is ``pbar*``. ``sizes``: the folds' :func:`world_size` of each
    replicate are added to it (their sum over the folds)."""
    if centres is None:
        centres = bootstrap_centres(folds)
    return np.sum([fold_replicate_means(moments, weights_pairs, centre, level, sizes)
                   for moments, centre in zip(folds, centres, strict=True)], axis=0)


def world_size(t2: np.ndarray | float, free: np.ndarray | float, n: int) -> np.ndarray:
    """The squared size of the differences of the world a sample of one fold stands for:
    ``sum_j lambda_j^2`` estimated as :func:`shrink_factor` does, ``k^2 sum_j t_j^2 = max(0,
    sum_j t_j^2 - P' nu / (nu - 2))`` (``t2``: ``sum_j t_j^2`` over the pairs that vary,
    ``free``: their number ``P'``, both per replicate and weighted by the pair weights;
    ``nu = n - 1``; ``sum_j t_j^2`` itself when ``nu <= 2``, where ``k = 1``)."""
    t2 = np.asarray(t2, dtype=np.float64)
    nu = int(n) - 1
    if nu <= 2:
        return t2.copy()
    return _james_stein_k2(t2, free, nu) * t2


#: The bootstrap worlds :func:`size_factors` measures besides the sample's: its centre scaled
#: so that their sizes reach these quantiles of the replicates' sizes.
WORLD_QUANTILES = (0.02, 0.98)

#: The largest factor by which :func:`size_factors` scales the centre.
MAX_WORLD_SCALE = 2.0

#: The smallest spread of ``log(S-bar + P')`` over the three worlds from which
#: :func:`size_factors` reads a slope (5%): a centre near 0 hardly changes when scaled, and a
#: slope over sizes that close is rounding, not a measurement.
MIN_SIZE_SPAN = 0.05

#: The largest ``|beta|`` :func:`size_factors` uses (a guard: the slopes measured in
#: ``docs/statistics.md`` section 10a lay between about -0.6 and 0.1).
MAX_SIZE_SLOPE = 1.0


def size_factors(folds: Sequence[FoldMoments], weights_pairs: np.ndarray,
                 centres: Sequence[np.ndarray], replicates: np.ndarray,
                 sizes: np.ndarray) -> np.ndarray:
    """``f_r = ((S-bar + P') / (clip(S_r) + P'))^beta``: by how much replicate ``r``'s error is
    multiplied before the interval's quantiles are read (:func:`dp_interval`), so that each
    replicate's error is measured in the spread that its own bootstrap world would have -- a
    studentised (bootstrap-t) interval whose standard error is a function of the world's size.

    ``S_r`` is replicate ``r``'s :func:`world_size` averaged over the folds (``sizes`` divided
    by their number; ``S-bar`` its mean over the replicates, the size of the sample's world in
    the same currency: over all ``B`` in ``c`` below, over the first
    :func:`coarse_replicates` draws, where the slope is read, in ``f_r``); ``P'`` the mean number of pairs that vary per fold (``sum_j t_j^2``
    holds ``P'`` of noise). ``beta`` is measured, not assumed: the slope of ``log sd(A(pbar*))``
    against ``log(S-bar + P')`` over three bootstrap worlds, each on the same first
    :func:`coarse_replicates` draws (so the slope's noise is small, at half the cost of all
    ``B``): the sample's, and its centre scaled by ``c = sqrt(q / S-bar)`` for ``q``
    the :data:`WORLD_QUANTILES` of the ``S_r`` (a world's size grows as ``c^2``; ``c`` at
    most :data:`MAX_WORLD_SCALE`), so that the slope is measured over the sizes the
    replicates have; kept within ``+-``:data:`MAX_SIZE_SLOPE`. It is used only over the
    sizes it was measured on: ``clip`` keeps ``S_r`` between the smallest and the largest of
    the three worlds' mean sizes. Without differences the centre is near 0, scaling it hardly
    changes its world, and a slope read there and extrapolated over the replicates' sizes
    (which vary by their noise alone) over-corrected: with worlds scaled by 0.8 and 1.25 and
    no clip, 15 configurations without differences had 1.0% of the intervals wholly below the
    truth and 3.3% above, the slope measured within a sample being -0.56 where the
    bootstrap's spread followed the sample's size with -0.14 across samples. With the clip
    but those fixed scales, the replicates of 5-7 configurations over the same users reach
    beyond the worlds' sizes and lost part of their correction (3.7-3.9% below the truth
    instead of 2.7-3.2%); worlds at the replicates' 2nd and 98th percentile sizes keep it
    (3.0-3.6%). ``replicates``: the sample world's ``pbar*``.
    All 1 when no fold has a test, the worlds' sizes differ by less than
    :data:`MIN_SIZE_SPAN` or a world does not vary.

    Why: the bootstrap's spread depends on how different the pairs of its world are, and that
    world is built from the sample. A sample whose differences look larger than the truth's
    (on user-stratified folds, users whose tastes push every fold the same way) has a low
    estimate *and* a bootstrap world with larger differences, whose replicates vary less: the
    basic interval was short exactly on the side where the truth lay (89-93% coverage with
    4.7-7% of the intervals wholly below the truth, moderate differences, 10-21 pairs; the
    estimate's error and the replicates' sd correlate 0.5-0.65 across samples). Dividing each
    replicate's error by its own world's spread carries that dependence into the replicates:
    the replicates whose differences came out larger (low ``pbar*``) get their errors
    enlarged, which lengthens the interval upwards where the sample's world is too tight.
    ``docs/statistics.md`` section 10a measures it."""
    n_folds = len(folds)
    tested = [f for f in folds if f.n >= 2]
    n_boot = len(replicates)
    if not tested:
        return np.ones(n_boot)
    free = float(np.mean([np.count_nonzero(~f.constant) for f in tested]))
    sizes = np.asarray(sizes, dtype=np.float64)
    own = sizes / n_folds
    size = float(np.mean(own))
    if not size > 0.0:  # every replicate's world without differences: nothing to tell apart
        return np.ones(n_boot)
    scales = np.minimum(np.sqrt(np.quantile(own, WORLD_QUANTILES) / size), MAX_WORLD_SCALE)
    # the scaled worlds on the first coarse_replicates(B) draws, the sample's world read on the
    # same draws (common draws: the slope's noise is the worlds' difference, not their own)
    n_c = coarse_replicates(n_boot)
    xs, ys, means = [], [], []
    for c in (None, *scales):  # None: the sample's own world, already computed
        if c is None:
            raw, s = np.asarray(replicates, dtype=np.float64)[:n_c], sizes[:n_c]
        else:
            s = np.zeros(n_c)
            raw = replicate_sum(folds, weights_pairs[:n_c], centres=[c * x for x in centres],
                                sizes=s) / n_folds
        sd = float(np.std(_arcsine(raw)))
        if not sd > 1e-12:  # a world that does not vary (its sd is rounding): before the
            return np.ones(n_boot)  # next world's passes are spent
        means.append(float(np.mean(s)) / n_folds)
        xs.append(np.log(means[-1] + free))
        ys.append(np.log(sd))
    if not (free > 0.0 and np.ptp(xs) >= MIN_SIZE_SPAN):
        return np.ones(n_boot)
    beta = float(np.clip(np.polyfit(xs, ys, 1)[0], -MAX_SIZE_SLOPE, MAX_SIZE_SLOPE))
    own = np.clip(own, min(means), max(means))
    return ((means[0] + free) / (own + free)) ** beta


def extrapolated_variance(groups: Sequence[int], variances: Sequence[float],
                          replicates: Sequence[int] | None = None) -> float:
    """``V`` of the fit ``V(G) = V + c / G`` to the replicates' variances at several group
    counts: weighted least squares with weights ``B_G / V(G)^2`` (a variance from ``B_G``
    replicates has a relative error of about ``sqrt(2 / B_G)`` whatever its size;
    ``replicates``: the ``B_G``, None = equal). Needs two distinct group counts."""
    g = np.asarray(groups, dtype=np.float64)
    v = np.asarray(variances, dtype=np.float64)
    b = np.ones_like(v) if replicates is None else np.asarray(replicates, dtype=np.float64)
    if g.shape != v.shape or b.shape != v.shape or len(np.unique(g)) < 2 \
            or not np.all(np.isfinite(v)) or np.any(v <= 0.0) or np.any(g < 1) or np.any(b <= 0):
        raise input_error("bootstrap", "variances", "need positive variances at two or more "
                          "distinct group counts")
    root = np.sqrt(b) / v
    design = np.column_stack([np.ones_like(g), 1.0 / g]) * root[:, None]
    coef = np.linalg.lstsq(design, v * root, rcond=None)[0]
    return float(coef[0])


def ungrouped_scale(folds: Sequence[FoldMoments], weights_pairs: np.ndarray,
                    replicates: np.ndarray,
                    centres: Sequence[np.ndarray] | None = None) -> float:
    """``s = sqrt(V / V(G))``: by how much the grouped bootstrap's errors (on the arcsine scale,
    where the interval is read: :func:`dp_interval`) must shrink to have the variance
    of a bootstrap without the spurious correlation that shared users give pairs of pairs.

    Why: two pairs that share no configuration have independent sampling noises, but in the
    bootstrap their resampled means move together through the users (the groups) they share:
    the sample correlation of their group sums, zero in expectation, is of size ``1 / sqrt(G)``
    in any one sample and adds about ``1 / G`` to every pair of pairs' squared correlation. The
    mean of many p-values is a smooth function of many pair statistics whose first-order noise
    largely cancels, so that term dominates its variance on grids of a few dozen
    configurations and more (the interval was 1.3x too wide at 15 configurations, 1.8x at
    100). The variance of the replicates follows ``V(G) = V + c / G`` (a measured fit, within
    5% from 16 groups to one user per group); the coarser groupings of
    :func:`coarse_weights` give ``V(G / 2)`` and ``V(G / 4)`` from the same group sums, and
    :func:`extrapolated_variance` extrapolates the three to ``G -> infinity``.

    ``replicates``: the fine replicates' ``pbar*`` (:func:`replicate_sum` divided by the number
    of folds; ``centres``: the folds' :func:`bootstrap_centres`, when already computed). 1
    when no fold has a coarse grouping (fewer than ``2`` x
    :data:`MIN_COARSE_GROUPS` users) or the replicates do not vary; the ratio ``V / V(G)`` is
    kept in ``[MIN_VARIANCE_RATIO, 1]`` (the extrapolation only ever removes the spurious
    part; its own noise, from ``B`` replicates per grouping, is a few percent of the width)."""
    tested = [f for f in folds if f.n >= 2]
    if not tested or not tested[0].coarse or any(len(f.coarse) != len(tested[0].coarse)
                                                 for f in tested):
        return 1.0
    n_folds = len(folds)
    fine = float(np.var(_arcsine(np.asarray(replicates)), ddof=1))
    if not fine > 0.0:
        return 1.0
    groups = [max(f.c1t.shape[0] for f in tested)]
    variances = [fine]
    counts = [len(replicates)]
    if centres is None:
        centres = bootstrap_centres(folds)
    for level, weights in enumerate(tested[0].coarse):
        raw = replicate_sum(folds, weights_pairs, level, centres) / n_folds
        v = float(np.var(_arcsine(raw), ddof=1))
        if not v > 0.0:
            return 1.0
        groups.append(weights.shape[1])
        variances.append(v)
        counts.append(weights.shape[0])
    ratio = extrapolated_variance(groups, variances, counts) / fine
    return float(np.sqrt(np.clip(ratio, MIN_VARIANCE_RATIO, 1.0)))


def bootstrap_mean_p(diffs: Sequence[np.ndarray], n_boot: int = 1000, seed: int = 0,
                     groups: int = GROUPS, n_possible: int | None = None) -> np.ndarray:
    """Bootstrap replicates ``pbar*_r`` of the mean p-value over folds and pairs.

    ``diffs[f]`` holds fold ``f``'s per-user differences of the P pairs, ``(P, n_f)`` or
    ``(M, P, n_f)`` for M metrics on the same users (the draws are shared by the metrics);
    column ``u`` is the same user in every fold (:func:`user_draws` with the column positions
    as the users).
    ``pbar*_r = (1/F) sum_f (1/P) sum_j v_rj p_{r,f,j}`` (``v``: :func:`pair_weights`; the
    pairs are resampled only when ``n_possible`` says they are a sample of more); returns
    ``(B,)`` or ``(M, B)``.
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
    mult = pair_weights(n_boot, n_pairs, n_possible, seed)
    total = np.zeros((n_metrics, int(n_boot)))
    rows_a, rows_b = np.arange(n_pairs), np.full(n_pairs, n_pairs)  # d_j = d_j - 0
    moments: list[list[FoldMoments]] = [[] for _ in range(n_metrics)]
    for d in arrs:
        perm, starts, w = user_draws(np.arange(d.shape[2]), n_boot, seed, groups)
        for m in range(n_metrics):
            values = np.vstack([d[m], np.zeros((1, d.shape[2]))])
            moments[m].append(fold_moments(values, rows_a, rows_b, perm, starts, w,
                                           np.arange(d.shape[2])))
    for m in range(n_metrics):
        total[m] = replicate_sum(moments[m], mult)
    total /= len(arrs)
    return total[0] if squeeze else total


#: Values within this distance of 0 or 1 are read as that distance on the logit scale.
LOGIT_EPS = 1e-12


def _logit(x: np.ndarray | float) -> np.ndarray:
    x = np.clip(np.asarray(x, dtype=np.float64), LOGIT_EPS, 1.0 - LOGIT_EPS)
    return np.log(x) - np.log1p(-x)


def _checked_replicates(estimate: float, replicates: np.ndarray, scale: float) -> np.ndarray:
    """``replicates`` as a float64 vector, after checking what every reading of them needs: a
    non-empty 1-D array of finite values, an ``estimate`` in [0, 1] and a positive ``scale``."""
    reps = np.asarray(replicates, dtype=np.float64)
    if reps.ndim != 1 or reps.size == 0 or not np.all(np.isfinite(reps)):
        raise input_error("bootstrap", "replicates", "need a non-empty 1-D array of finite values")
    if not 0.0 <= float(estimate) <= 1.0:
        raise input_error("bootstrap", "estimate", f"must be a mean p-value in [0, 1], got {estimate}")
    if not (0.0 < float(scale) and np.isfinite(scale)):
        raise input_error("bootstrap", "scale", f"must be a positive number, got {scale}")
    return reps


def interval_replicates(estimate: float, replicates: np.ndarray,
                        scale: float = 1.0) -> np.ndarray:
    """The replicates ``pbar°_r`` from which the claims and Pr(more discriminative) are read
    (the interval is read on the arcsine scale from the raw replicates, :func:`dp_interval`):
    ``L^{-1}(L(pbar) - s (L(pbar*_r) - L(mean_r pbar*_r)))`` with ``L`` the logit (module
    docstring): the bootstrap's error on the logit scale, scaled by ``s = scale``
    (:func:`ungrouped_scale`, in (0, 1]; for a store holding some of its grid's units
    :func:`dptune.analysis.dp.units.grid_sample_scale`, which may exceed 1 with few units) and
    reflected around the estimate. Every value lies in
    [0, 1]; ``estimate`` is the point mean p-value, ``replicates`` ``(B,)`` the raw
    ``pbar*``."""
    reps = _checked_replicates(estimate, replicates, scale)
    delta = float(scale) * (_logit(reps) - _logit(reps.mean()))
    return special.expit(_logit(estimate) - delta)


def small_sample_factor(variance: float, parts: Sequence[tuple[float, int]],
                        level: float = 0.95) -> float:
    """``t_nu / z``: how much wider a ``level`` interval must be when its ``variance`` is a sum
    whose ``parts`` ``(v_c, df_c)`` are estimated with ``df_c`` degrees of freedom (the rest of
    it known): Student's t quantile at Satterthwaite's ``nu = variance^2 / sum_c v_c^2 /
    df_c`` over the normal's, both at ``(1 + level) / 2``. 1 when no part is estimated or
    ``variance`` is 0; a part with ``df_c < 1`` counts with 1. One part that is the whole
    variance gives ``t_df / z``."""
    from scipy import stats

    denom = sum(v * v / max(int(df), 1) for v, df in parts if v > 0.0)
    if not (variance > 0.0 and denom > 0.0):
        return 1.0
    nu = variance * variance / denom
    q = (1.0 + float(level)) / 2.0
    return float(stats.t.ppf(q, nu) / stats.norm.ppf(q))


def _arcsine(x: np.ndarray | float) -> np.ndarray:
    return np.arcsin(np.sqrt(np.clip(np.asarray(x, dtype=np.float64), 0.0, 1.0)))


def _arcsine_inverse(y: np.ndarray | float) -> np.ndarray:
    return np.sin(np.clip(np.asarray(y, dtype=np.float64), 0.0, np.pi / 2.0)) ** 2


def dp_interval(estimate: float, replicates: np.ndarray, level: float = 0.95,
                scale: float = 1.0, groups: int = GROUPS,
                factors: np.ndarray | None = None) -> tuple[float, float]:
    """The ``level`` bootstrap interval of the mean p-value ``pbar`` (``estimate``) from the raw
    replicates ``pbar*_r`` (``replicates``): the basic bootstrap interval on the arcsine scale
    ``A(x) = arcsin(sqrt(x))`` of errors that ``factors`` may studentise,

        e_r = kappa s f_r (A(pbar*_r) - A(mean_r pbar*_r)),
        interval = [A^{-1}(A(pbar) - Q_hi(e)), A^{-1}(A(pbar) - Q_lo(e))],

    ``Q_lo``, ``Q_hi`` the ``(1 - level)/2`` and ``(1 + level)/2`` quantiles (``numpy.quantile``,
    linear interpolation), ``A^{-1}(y) = sin^2(y)`` with ``y`` clipped to ``[0, pi/2]`` (so the
    interval lies in [0, 1] by construction), ``s`` = ``scale`` (:func:`ungrouped_scale`) and
    ``kappa = t_(G-1) / z`` at ``(1 + level)/2`` for the ``G`` = ``groups`` user groups whose
    weights the replicates resample (:func:`small_sample_factor`; 1.020
    for 64 groups at 95%) and ``f_r`` = ``factors`` (:func:`size_factors`: each replicate's
    error in the spread of its own bootstrap world, which makes it a studentised interval; None:
    all 1, the basic interval).

    Why this scale: the error's spread must not depend on where the estimate lies, or the
    interval is too narrow exactly where it misses. On the logit scale (the previous reading)
    it does: with strong differences (mean p-value near 0.05) a higher estimate came with a
    narrower logit interval, and 5.7-6.2% of the intervals lay wholly above the truth;
    the arcsine square root, the variance-stabilising scale of a proportion, keeps both tails
    under 3.5% there and in every other case of ``docs/statistics.md`` section 10a. Why
    ``kappa``: the spread is read off ``G`` resampled user groups, so the error is judged
    against Student's t with ``G - 1`` degrees of freedom rather than the normal. The
    replicates the claims compare (:func:`interval_replicates`) are unchanged."""
    reps = _checked_replicates(estimate, replicates, scale)
    if not 0.0 < float(level) < 1.0:
        raise input_error("bootstrap", "level", f"must be in (0, 1), got {level}")
    if int(groups) < 2:
        raise input_error("bootstrap", "groups", f"must be at least 2, got {groups}")
    kappa = small_sample_factor(1.0, [(1.0, int(groups) - 1)], level=float(level))
    err = kappa * float(scale) * (_arcsine(reps) - _arcsine(reps.mean()))
    if factors is not None:
        f = np.asarray(factors, dtype=np.float64)
        if f.shape != reps.shape or not np.all(np.isfinite(f)) or np.any(f <= 0.0):
            raise input_error("bootstrap", "factors", "need one positive finite factor per "
                              "replicate")
        err = err * f
    q_lo, q_hi = np.quantile(err, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    centre = _arcsine(estimate)
    return float(_arcsine_inverse(centre - q_hi)), float(_arcsine_inverse(centre - q_lo))


def interval_groups(folds: Sequence[FoldMoments]) -> int:
    """The fewest user groups of the folds with a test (``G = min(n, GROUPS)`` each; 2 when no
    fold has one): the ``groups`` of :func:`dp_interval`."""
    g = [f.c1t.shape[0] for f in folds if f.n >= 2]
    return max(2, min(g)) if g else 2


def prob_more_discriminative(reps_a: np.ndarray, reps_b: np.ndarray) -> float:
    """Bootstrap probability that metric A is more discriminative than B (lower mean p):
    ``(1/B) #{r : a_r < b_r}`` over paired replicates (the same draws of users and pairs; pass
    :func:`interval_replicates` of each). Ties count as "not better", so ``P(A better) + P(B
    better) <= 1``."""
    a = np.asarray(reps_a, dtype=np.float64).ravel()
    b = np.asarray(reps_b, dtype=np.float64).ravel()
    if a.shape != b.shape or a.size == 0:
        raise input_error("bootstrap", "replicates", f"need paired replicates: {a.shape} vs {b.shape}")
    return float(np.mean(a < b))
