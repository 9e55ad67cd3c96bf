"""Paired significance tests and p-value corrections: where every p-value of dptune is computed.

All functions are pure (arrays in, arrays out) and vectorised over the pairs being compared.
The unit of every test is the user: ``a[p, u]`` and ``b[p, u]`` are the values of the two
systems of pair ``p`` for user ``u`` (aligned), and ``d = a - b`` are the per-user differences.

**The paired t statistic** is computed in one place, :func:`paired_t` (compiled, inlined into
the bootstrap's kernels; :func:`paired_t_statistics` is its vectorised form for arrays), from
the differences' mean, variance (``ddof = 1``) and count: ``t = mean / sqrt(var / n)``, with
one rule for differences that are all equal. Their variance is then zero up to the rounding of
the sums it comes from: ``var <= 1e-14 ss`` (:data:`ZERO_VARIANCE_RTOL`), ``ss`` the sum of
squared deviations ``sum_u (d(u) - dbar)^2`` of the sample the moments come from (for a
resample, the observed sample's); then ``t = 0`` when their common value is zero,
``|mean| <= 1e-9 max_u |d(u)|`` (:data:`ZERO_MEAN_RTOL`), so ``p = 1``, and ``t = +-inf``
otherwise (scipy's limit), so ``p = 0``. On a sample's own moments (``var = ss / (n - 1)``)
the rule applies exactly when every difference is equal. The t-test of the tables
(:func:`ttest_pvalues`, :func:`pvalues_from_differences`), the bootstrap's point p-values,
replicates and shrink factor (:mod:`dptune.analysis.dp.bootstrap`) and the simulation studies
(through the t-test) all call it.

**From t to p** there are two routes, both here: the exact one, :func:`t_pvalues` (``2
T_df.sf(|t|)`` by ``scipy.special.stdtr``, the same function ``scipy.stats.t.sf`` calls), for
every p-value a table or a test reports; and, inside the compiled bootstrap kernels only, which
cannot call scipy and evaluate millions of p-values, :func:`table_pvalue`: linear
interpolation in a table of the exact route on 4,097 points of ``|t| / (1 + |t|)``
(:func:`t_tail_table`; absolute error below 1e-6, tested against scipy).

Conventions shared by every test (documented choices, see ``docs/design.md``):

- Two-sided alternatives only.
- A pair whose differences are all exactly zero has ``p = 1`` (scipy returns NaN for the t-test):
  the two systems are indistinguishable on these users. Under the t-test a constant non-zero
  difference has ``p = 0`` (the rule of :func:`paired_t`).
- Fewer than two users (``n < 2``): ``p = 1`` for every test. A single difference carries no
  information about its own variance, so no test can reject; counting the pair as "not
  discriminated" keeps DP sums finite and comparable. A NaN or infinite value is refused
  first, however few the users.
- Resampling tests (``"bootstrap"``, ``"permutation"``) draw one set of resamples per call and use
  it for every pair (row); each row's p-value is still a valid marginal test. They are seeded and
  reproducible, and use the ``(1 + #{|T*| >= |T|}) / (B + 1)`` convention (never exactly 0).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import numpy as np
from numba import njit, prange
from scipy import special

from dptune.errors import input_error, plain
from dptune.vocab import CORRECTIONS, TESTS

__all__ = [
    "ZERO_VARIANCE_RTOL",
    "ZERO_MEAN_RTOL",
    "paired_t",
    "paired_t_statistics",
    "constant_differences",
    "t_pvalues",
    "T_TABLE_STEPS",
    "t_tail_table",
    "table_pvalue",
    "two_sided_t_pvalue",
    "ttest_pvalues",
    "TESTS",
    "CORRECTIONS",
    "paired_pvalues",
    "pvalues_from_differences",
    "holm",
    "benjamini_hochberg",
    "adjust",
    "sakai_dp",
    "ks_uniform",
    "resample_index_chunks",
    "index_counts",
    "resampled_ttest_pvalues",
    "check_test",
    "PairedTest",
    "paired_test",
]

# TESTS: paired two-sided tests understood by :func:`paired_pvalues`; CORRECTIONS: p-value
# corrections understood by :func:`adjust` (``None``/``"none"`` = raw p-values). Defined in the
# vocabulary (:mod:`dptune.vocab`) with every other name.

# Relative tolerance when a resampled statistic is compared with the observed one: resampled means
# of centred data that equal the observed mean up to floating rounding count as ">=".
_RTOL = 1e-12
# Upper bound on the number of float64 cells one chunk of resamples may hold (about 32 MB).
_CHUNK_CELLS = 1 << 22

#: The rule of :func:`paired_t`: a variance at most this times the sample's sum of squared
#: deviations is zero up to the rounding of the sums it comes from (every difference equal).
ZERO_VARIANCE_RTOL = 1e-14
#: The rule of :func:`paired_t`: differences that are all equal are zero when their mean is at
#: most this times the largest ``|d(u)|`` (their mean is then rounding noise of a shift).
ZERO_MEAN_RTOL = 1e-9


# Numba's cache keys a kernel on its own source file: the bootstrap's kernels
# (dptune/analysis/dp/bootstrap.py) compile in paired_t and table_pvalue, so a change of either
# (or of the two constants above) must change bootstrap.py too: its _COMPILED_IN digest, which
# tests/analysis/dp/test_paired_t.py checks.
@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def paired_t(mean: float, var: float, n: float, ss: float, size: float,
             squared: bool = False) -> float:
    """The paired t statistic of ``n`` differences (``n >= 2``; a weighted count for a
    resample) whose mean is ``mean`` and variance (``ddof = 1``) ``var``:
    ``t = mean / sqrt(var / n)``; the one rule for differences that are all equal (module
    docstring): when ``var <= ZERO_VARIANCE_RTOL ss``, ``t = 0`` if ``|mean| <= ZERO_MEAN_RTOL
    size`` (every difference zero: ``p = 1``) else ``+-inf`` (a constant non-zero difference:
    ``p = 0``). ``ss``: the sum of squared deviations from their mean of the differences of the
    sample (of the observed sample, for a resample of it); ``size``: their largest ``|d(u)|``.

    ``squared``: ``t^2``, computed as ``mean^2 / (var / n)`` (0 or ``+inf`` by the rule), for a
    sum of squared statistics (:func:`dptune.analysis.dp.bootstrap.shrink_factor`): without
    the square root it differs from ``t * t`` in the last bits, and the bootstrap's intervals
    in the committed reports were computed with it. Compiled: the bootstrap's kernels inline
    it; callable from Python on numbers (:func:`paired_t_statistics` on arrays). NaN in, NaN
    out."""
    if var <= ZERO_VARIANCE_RTOL * ss:
        if abs(mean) <= ZERO_MEAN_RTOL * size:
            return 0.0
        if squared:
            return np.inf
        return mean * np.inf  # +-inf by the sign of the mean (NaN stays NaN)
    if squared:
        return mean * mean / (var / n)
    return mean / np.sqrt(var / n)


@njit(cache=True, nogil=True, error_model="numpy")
def _paired_t_loop(mean, var, n, ss, size, squared, out):  # pragma: no cover - numba
    for i in range(out.shape[0]):
        out[i] = paired_t(mean[i], var[i], n[i], ss[i], size[i], squared)


def constant_differences(dmin: np.ndarray, dmax: np.ndarray, dbar: np.ndarray) -> np.ndarray:
    """Which pairs have every difference equal, from the running ``dmin``, ``dmax`` of their
    differences and their mean ``dbar`` (the compiled sums of :func:`ttest_pvalues` and
    :func:`dptune.analysis.dp.bootstrap.pair_moments`): ``dmin == dmax`` with a finite mean.
    Such a pair's spread is set to 0 exactly (the sums' rounding removed). A NaN or infinite
    difference is passed over by the running min/max but not by the sum, so a pair whose
    other differences are equal is not constant: its p-value is NaN, which the callers refuse,
    not 0 or 1."""
    return (dmin == dmax) & np.isfinite(dbar)


def paired_t_statistics(mean: np.ndarray, var: np.ndarray, n: np.ndarray | float,
                        ss: np.ndarray, size: np.ndarray, squared: bool = False) -> np.ndarray:
    """:func:`paired_t` element by element on arrays (broadcast together; float64), the same
    compiled function: the entry point of every caller outside the compiled kernels."""
    args = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64)
                                 for x in (mean, var, n, ss, size)))
    flat = [np.array(a).ravel() for a in args]  # copies: a broadcast view is read-only
    out = np.empty(flat[0].size)
    _paired_t_loop(*flat, bool(squared), out)
    return out.reshape(args[0].shape)


def t_pvalues(t: np.ndarray, df: int) -> np.ndarray:
    """The exact two-sided p-value of Student t statistics, ``2 T_df.sf(|t|)``
    (``scipy.special.stdtr(df, -|t|)``, which ``scipy.stats.t.sf`` calls; ``t = 0`` gives 1,
    ``+-inf`` 0, NaN NaN), clipped to [0, 1]: the route of every reported p-value."""
    return np.clip(2.0 * special.stdtr(df, -np.abs(np.asarray(t, dtype=np.float64))), 0.0, 1.0)


#: Steps of the table of :func:`t_tail_table` in ``|t| / (1 + |t|)`` (its points: this plus
#: one).
T_TABLE_STEPS = 1 << 12


@lru_cache(maxsize=64)
def t_tail_table(df: int) -> np.ndarray:
    """The exact two-sided p (:func:`t_pvalues`) at ``t = x / (1 - x)``, ``x = k / 4096``
    (``x = 1``: ``p = 0``), the table :func:`table_pvalue` interpolates."""
    x = np.arange(T_TABLE_STEPS + 1) / T_TABLE_STEPS
    with np.errstate(divide="ignore"):
        t = x / (1.0 - x)
    p = 2.0 * special.stdtr(df, -t)
    p[-1] = 0.0
    return p


@njit(cache=True, nogil=True, error_model="numpy")
def table_pvalue(t: float, table: np.ndarray) -> float:
    """The two-sided p-value of ``t`` inside the compiled kernels: linear interpolation in
    ``table`` (:func:`t_tail_table` of the degrees of freedom) at ``|t| / (1 + |t|)``; absolute
    error below 1e-6 for every ``t`` and ``df`` (scipy cannot be called from compiled code, and
    the bootstrap evaluates millions). ``t = 0``: 1; ``+-inf``: 0 (NaN too: not a p-value)."""
    a = abs(t)
    last = table.shape[0] - 1
    x = a / (1.0 + a) * last
    if not x < last:  # the last point, or |t| = inf (x is NaN): one test for both
        return table[last]
    i = int(x)
    f = x - i
    return table[i] + f * (table[i + 1] - table[i])


@njit(cache=True, nogil=True)
def _table_pvalue_array(t, table, out):  # pragma: no cover - numba
    for i in range(t.shape[0]):
        out[i] = table_pvalue(t[i], table) if t[i] == t[i] else np.nan


def two_sided_t_pvalue(t: np.ndarray, df: int) -> np.ndarray:
    """``2 T_df.sf(|t|)`` (Student t, ``df >= 1``) by the kernels' route, :func:`table_pvalue`
    (error < 1e-6; NaN gives NaN): to test and inspect that route."""
    if int(df) < 1:
        raise input_error("stats", "df", f"must be >= 1, got {df}")
    arr = np.ascontiguousarray(np.asarray(t, dtype=np.float64))
    out = np.empty(arr.size)
    _table_pvalue_array(arr.ravel(), t_tail_table(int(df)), out)
    return out.reshape(arr.shape)


def check_test(test: str, source: str = "stats") -> str:
    """Return ``test`` if it names a known paired test, else raise an input error."""
    if test not in TESTS:
        raise input_error(
            source, "test", f"unknown test {plain(test)}; choose one of {', '.join(TESTS)}"
        )
    return test


def _as_2d(x: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise input_error("stats", name, f"expected a (pairs, users) array, got shape {arr.shape}")
    return arr


def paired_pvalues(
    a: np.ndarray,
    b: np.ndarray,
    test: str = "t",
    n_resamples: int = 1000,
    seed: int = 0,
) -> np.ndarray:
    """Two-sided p-values of paired tests, one per row: ``a[p]`` vs ``b[p]`` over the users.

    ``a`` and ``b`` are ``(P, n_users)`` arrays (a 1-D array is one pair). With ``d = a - b``:

    - ``"t"``: paired Student t-test, ``t = mean(d) / (sd(d, ddof=1) / sqrt(n))``,
      ``p = 2 * T_{n-1}.sf(|t|)``; equals ``scipy.stats.ttest_rel`` except where scipy gives NaN:
      all differences zero -> ``p = 1``; constant non-zero difference -> ``p = 0`` (scipy's limit
      ``|t| -> inf``).
    - ``"wilcoxon"``: ``scipy.stats.wilcoxon(d, zero_method="wilcox")`` per row (zero differences
      dropped; scipy picks the exact or normal distribution); all-zero rows -> ``p = 1``.
    - ``"bootstrap"``: paired bootstrap of the mean difference under H0. The differences are
      centred, ``c = d - mean(d)``; ``B = n_resamples`` resamples of the users with replacement
      give ``m*_b = mean(c[idx_b])``; ``p = (1 + #{|m*_b| >= |mean(d)|}) / (B + 1)``.
    - ``"permutation"``: randomisation test by random sign flips, ``m*_b = mean(s_b * d)`` with
      ``s_b`` uniform in ``{-1, +1}^n``; same p convention as the bootstrap.

    ``n < 2`` users -> ``p = 1`` (see the module docstring). Returns a float64 array of length P.
    """
    check_test(test)
    a2 = _as_2d(a, "a")
    b2 = _as_2d(b, "b")
    if a2.shape != b2.shape:
        raise input_error("stats", "a/b", f"shapes differ: {a2.shape} vs {b2.shape}")
    return pvalues_from_differences(a2 - b2, test=test, n_resamples=n_resamples, seed=seed)


def pvalues_from_differences(
    d: np.ndarray, test: str = "t", n_resamples: int = 1000, seed: int = 0
) -> np.ndarray:
    """:func:`paired_pvalues` on the per-user differences ``d = a - b`` directly, ``(P, n)``."""
    check_test(test)
    d = _as_2d(d, "d")
    if not np.all(np.isfinite(d)):
        raise input_error("stats", "per-user values", "contain NaN or infinite values")
    n_pairs, n = d.shape
    if n_pairs == 0:
        return np.zeros(0, dtype=np.float64)
    if n < 2:
        return np.ones(n_pairs, dtype=np.float64)
    if test == "t":
        return _ttest_pvalues(d)
    if test == "wilcoxon":
        return _wilcoxon_pvalues(d)
    if int(n_resamples) < 1:
        raise input_error("stats", "n_resamples", f"must be >= 1, got {n_resamples}")
    if test == "bootstrap":
        return _bootstrap_pvalues(d, int(n_resamples), seed)
    return _permutation_pvalues(d, int(n_resamples), seed)


def _ttest_pvalues(d: np.ndarray) -> np.ndarray:
    """Paired t-test on ``d`` (P, n >= 2); see :func:`paired_pvalues`. The one t-test of
    the analysis (:func:`ttest_pvalues`: compiled pair sums, :func:`paired_t`), here on the
    pairs ``(d[j], 0)``, whose differences are ``d[j]`` exactly: the tables, the robust DP, the
    noise floor and the downstream check share it."""
    n_p = d.shape[0]
    values = np.vstack([d, np.zeros((1, d.shape[1]))])
    return ttest_pvalues(values, np.arange(n_p), np.full(n_p, n_p))


@njit(cache=True, nogil=True, parallel=True)
def _pair_sums_one(values, ra, rb, cols, s1, s2, dmin, dmax):  # pragma: no cover - numba
    for j in prange(ra.shape[0]):  # one group: the sums stay in registers
        a = ra[j]
        b = rb[j]
        t1 = 0.0
        t2 = 0.0
        lo = np.inf
        hi = -np.inf
        for k in range(cols.shape[0]):
            u = cols[k]
            d = np.float64(values[a, u]) - np.float64(values[b, u])
            t1 += d
            t2 += d * d
            lo = min(lo, d)
            hi = max(hi, d)
        s1[j] = t1
        s2[j] = t2
        dmin[j] = lo
        dmax[j] = hi


@njit(cache=True, nogil=True, parallel=True)
def _pair_sums_dense(values, ra, rb, s1, s2, dmin, dmax):  # pragma: no cover - numba
    # every column, in order: the same sums as _pair_sums_one with cols = 0..n-1, bit for bit,
    # without the index load per user. Four pairs at a time: one pair's running sum is a chain
    # of dependent additions that waits on each one's latency; four independent chains in one
    # loop keep the core busy (about 1.5x faster), and each pair's own additions stay in the
    # same order, so its sums are unchanged to the bit. A last incomplete quadruple repeats
    # its last pair (the same sums, stored again).
    n = values.shape[1]
    n_pairs = ra.shape[0]
    for q in prange((n_pairs + 3) // 4):
        j0 = 4 * q
        j1 = min(j0 + 1, n_pairs - 1)
        j2 = min(j0 + 2, n_pairs - 1)
        j3 = min(j0 + 3, n_pairs - 1)
        x0, y0 = values[ra[j0]], values[rb[j0]]
        x1, y1 = values[ra[j1]], values[rb[j1]]
        x2, y2 = values[ra[j2]], values[rb[j2]]
        x3, y3 = values[ra[j3]], values[rb[j3]]
        a0 = a1 = a2 = a3 = 0.0
        b0 = b1 = b2 = b3 = 0.0
        lo0 = lo1 = lo2 = lo3 = np.inf
        hi0 = hi1 = hi2 = hi3 = -np.inf
        for u in range(n):
            d0 = np.float64(x0[u]) - np.float64(y0[u])
            d1 = np.float64(x1[u]) - np.float64(y1[u])
            d2 = np.float64(x2[u]) - np.float64(y2[u])
            d3 = np.float64(x3[u]) - np.float64(y3[u])
            a0 += d0
            a1 += d1
            a2 += d2
            a3 += d3
            b0 += d0 * d0
            b1 += d1 * d1
            b2 += d2 * d2
            b3 += d3 * d3
            lo0, lo1, lo2, lo3 = min(lo0, d0), min(lo1, d1), min(lo2, d2), min(lo3, d3)
            hi0, hi1, hi2, hi3 = max(hi0, d0), max(hi1, d1), max(hi2, d2), max(hi3, d3)
        s1[j3], s2[j3], dmin[j3], dmax[j3] = a3, b3, lo3, hi3
        s1[j2], s2[j2], dmin[j2], dmax[j2] = a2, b2, lo2, hi2
        s1[j1], s2[j1], dmin[j1], dmax[j1] = a1, b1, lo1, hi1
        s1[j0], s2[j0], dmin[j0], dmax[j0] = a0, b0, lo0, hi0


def ttest_pvalues(values: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray,
                  n: int | None = None, columns: np.ndarray | None = None) -> np.ndarray:
    """The paired t-test p-value of each pair ``(values[rows_a[j]], values[rows_b[j]])`` on all
    ``n`` users (``columns``: the users used, None = every column of ``values``): the one
    t-test of the tables and of the robust DP. One pass of compiled pair sums over the users
    in column order (the sums of :func:`dptune.analysis.dp.bootstrap.pair_moments` with one
    group, bit for bit, a test checks; kept in registers, about 3x faster), then
    :func:`paired_t` and :func:`t_pvalues` (as
    :func:`dptune.analysis.dp.bootstrap.point_pvalues`); the per-user differences are never
    materialised. Equals :func:`paired_pvalues` with ``test="t"`` to rounding. ``n < 2``: every
    p-value 1, except NaN for a pair whose one difference is NaN or infinite (refused by the
    callers, as with more users)."""
    v = values if values.flags.c_contiguous else np.ascontiguousarray(values)
    cols = None if columns is None else np.sort(np.asarray(columns, dtype=np.int64))
    n = (v.shape[1] if cols is None else len(cols)) if n is None else int(n)
    if n < 2:
        p = np.ones(len(rows_a))
        if n == 1:
            col = 0 if cols is None else int(cols[0])
            d = v[np.asarray(rows_a), col].astype(np.float64) - v[np.asarray(rows_b), col]
            p[~np.isfinite(d)] = np.nan
        return p
    ra = np.ascontiguousarray(rows_a, dtype=np.int64)
    rb = np.ascontiguousarray(rows_b, dtype=np.int64)
    s1, s2, dmin, dmax = (np.empty(len(ra)) for _ in range(4))
    if cols is None:
        _pair_sums_dense(v, ra, rb, s1, s2, dmin, dmax)
    else:
        _pair_sums_one(v, ra, rb, cols, s1, s2, dmin, dmax)
    dbar = s1 / float(n)
    ss = np.maximum(s2 - 2.0 * dbar * s1 + (dbar * dbar) * float(n), 0.0)
    constant = constant_differences(dmin, dmax, dbar)
    ss[constant] = 0.0
    dbar[constant] = dmin[constant]
    size = np.maximum(np.abs(dmin), np.abs(dmax))
    return t_pvalues(paired_t_statistics(dbar, ss / (n - 1), n, ss, size), n - 1)


def _wilcoxon_pvalues(d: np.ndarray) -> np.ndarray:
    """Wilcoxon signed-rank p-value per row (``zero_method="wilcox"``); all-zero rows -> 1."""
    from scipy import stats  # on first use: scipy.stats takes about a second to import

    out = np.ones(d.shape[0], dtype=np.float64)
    for i, row in enumerate(d):
        if np.any(row != 0.0):
            out[i] = float(stats.wilcoxon(row, zero_method="wilcox").pvalue)
    return out


def resample_index_chunks(
    rng: np.random.Generator, n: int, n_resamples: int
) -> Iterator[np.ndarray]:
    """Yield bootstrap user indices ``(k, n)`` (uniform with replacement) in chunks of ``k`` rows.

    The chunk size depends on ``n`` only, so the draws are a deterministic function of
    ``(rng state, n, n_resamples)``; every consumer of the same seed sees the same resamples.
    """
    chunk = max(1, min(n_resamples, _CHUNK_CELLS // max(n, 1)))
    done = 0
    while done < n_resamples:
        k = min(chunk, n_resamples - done)
        yield rng.integers(0, n, size=(k, n))
        done += k


def index_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """Turn bootstrap indices ``(k, n_draws)`` into multiplicities ``(k, n)`` (float64).

    ``counts[r, u] = #{j : idx[r, j] == u}``, so ``mean(x[idx[r]]) = counts[r] @ x / n_draws``.
    """
    k = idx.shape[0]
    flat = (idx + (np.arange(k)[:, None] * n)).ravel()
    return np.bincount(flat, minlength=k * n).reshape(k, n).astype(np.float64)


def _resampling_pvalue(exceed: np.ndarray, n_resamples: int) -> np.ndarray:
    """``p = (1 + #{|T*| >= |T|}) / (B + 1)``."""
    return (1.0 + exceed) / (n_resamples + 1.0)


def _bootstrap_pvalues(d: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Paired bootstrap test of mean(d) = 0 under H0 by centring; see :func:`paired_pvalues`."""
    n = d.shape[1]
    obs = d.mean(axis=1)
    c = d - obs[:, None]
    thresh = np.abs(obs) * (1.0 - _RTOL)
    exceed = np.zeros(d.shape[0], dtype=np.float64)
    rng = np.random.default_rng(seed)
    for idx in resample_index_chunks(rng, n, n_resamples):
        means = (c @ index_counts(idx, n).T) / n  # (P, k)
        exceed += np.sum(np.abs(means) >= thresh[:, None], axis=1)
    return _resampling_pvalue(exceed, n_resamples)


def _permutation_pvalues(d: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Randomisation test by random sign flips of d; see :func:`paired_pvalues`."""
    n = d.shape[1]
    obs = d.mean(axis=1)
    thresh = np.abs(obs) * (1.0 - _RTOL)
    exceed = np.zeros(d.shape[0], dtype=np.float64)
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_resamples, _CHUNK_CELLS // n))
    done = 0
    while done < n_resamples:
        k = min(chunk, n_resamples - done)
        signs = rng.integers(0, 2, size=(k, n)).astype(np.float64) * 2.0 - 1.0
        means = (d @ signs.T) / n
        exceed += np.sum(np.abs(means) >= thresh[:, None], axis=1)
        done += k
    return _resampling_pvalue(exceed, n_resamples)


def resampled_ttest_pvalues(d: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Paired t-test p-values of bootstrap resamples of the users, vectorised over pairs and
    resamples: ``d`` is ``(P, n)``, ``counts`` ``(k, n)`` multiplicities (rows sum to ``n``, see
    :func:`index_counts`); returns ``(P, k)``.

    For resample ``r`` with weights ``w`` (``sum w = n``), after the exact shift
    ``c = d - mean(d)``: ``m = w.c / n``, ``mean* = m + mean(d)``,
    ``var* = (w.c^2 - n m^2) / (n - 1)``, ``t = mean* / sqrt(var* / n)``,
    ``p = 2 * T_{n-1}.sf(|t|)`` -- the same number :func:`paired_pvalues` gives on
    ``d[:, idx]``: :func:`paired_t` with the sample's ``ss = sum c^2`` and ``size = max|d|``
    (a resample whose differences are all equal, up to rounding, gets ``p = 1`` if they are 0
    and ``p = 0`` otherwise), then :func:`t_pvalues`. The NumPy twin of the bootstrap's
    compiled replicates (:mod:`dptune.analysis.dp.bootstrap`), which the tests check against.
    """
    d = _as_2d(d, "d")
    w = np.asarray(counts, dtype=np.float64)
    n = d.shape[1]
    if w.ndim != 2 or w.shape[1] != n:
        raise input_error("stats", "counts", f"expected shape (k, {n}), got {w.shape}")
    if n < 2:
        return np.ones((d.shape[0], w.shape[0]), dtype=np.float64)
    shift = d.mean(axis=1)
    c = d - shift[:, None]
    m = (c @ w.T) / n
    var = ((c * c) @ w.T - n * m * m) / (n - 1)
    ss = np.sum(c * c, axis=1)[:, None]
    size = np.max(np.abs(d), axis=1)[:, None]
    return t_pvalues(paired_t_statistics(m + shift[:, None], var, n, ss, size), n - 1)


def _as_pvalues(p: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim != 1:
        raise input_error("stats", name, f"expected a 1-D array of p-values, got shape {arr.shape}")
    if arr.size and (np.any(~np.isfinite(arr)) or arr.min() < 0.0 or arr.max() > 1.0):
        raise input_error("stats", name, "p-values must be finite numbers in [0, 1]")
    return arr


def holm(p: np.ndarray) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values, in the input order.

    With ``p_(1) <= ... <= p_(m)`` sorted ascending:
    ``p~_(i) = min(1, max_{j <= i} (m - j + 1) * p_(j))`` (monotone non-decreasing in i).
    """
    arr = _as_pvalues(p, "p")
    m = arr.size
    if m == 0:
        return arr.copy()
    order = np.argsort(arr, kind="stable")
    scaled = (m - np.arange(m)) * arr[order]
    adj_sorted = np.minimum(1.0, np.maximum.accumulate(scaled))
    out = np.empty(m, dtype=np.float64)
    out[order] = adj_sorted
    return out


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg (1995) adjusted p-values (q-values), in the input order.

    With ``p_(1) <= ... <= p_(m)`` sorted ascending:
    ``p~_(i) = min(1, min_{j >= i} m / j * p_(j))``; equals
    ``scipy.stats.false_discovery_control(p, method="bh")``.
    """
    arr = _as_pvalues(p, "p")
    m = arr.size
    if m == 0:
        return arr.copy()
    order = np.argsort(arr, kind="stable")
    scaled = arr[order] * m / np.arange(1, m + 1)
    adj_sorted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out = np.empty(m, dtype=np.float64)
    out[order] = adj_sorted
    return out


def adjust(p: np.ndarray, correction: str | None = None, source: str = "stats") -> np.ndarray:
    """Apply a multiple-comparison correction: ``None``/``"none"`` (raw), ``"holm"``, ``"bh"``."""
    if correction is None or correction == "none":
        return _as_pvalues(p, "p").copy()
    if correction == "holm":
        return holm(p)
    if correction == "bh":
        return benjamini_hochberg(p)
    raise input_error(
        source, "correction", f"unknown correction {correction!r}; choose one of none, holm, bh"
    )


def sakai_dp(p: np.ndarray, alpha: float = 0.05) -> float:
    """Sakai (2006) style discriminative power: the fraction of pairs with ``p < alpha``.

    ``DP_sakai = #{i : p_i < alpha} / P`` (higher = more discriminative; NaN when P = 0).
    Apply :func:`adjust` first for corrected p-values.
    """
    arr = _as_pvalues(p, "p")
    if not 0.0 < float(alpha) < 1.0:
        raise input_error("stats", "alpha", f"must be in (0, 1), got {alpha}")
    if arr.size == 0:
        return float("nan")
    return float(np.mean(arr < alpha))


def ks_uniform(p: np.ndarray) -> tuple[float, float]:
    """One-sample Kolmogorov-Smirnov test of p-values against U(0, 1).

    Statistic ``D = sup_x |F_P(x) - x|`` with ``F_P`` the empirical CDF of the p-values; returns
    ``(D, p-value)`` from ``scipy.stats.kstest(p, "uniform")``. Used to check that a noise-floor
    (A/A) p-value sample is calibrated.
    """
    arr = _as_pvalues(p, "p")
    if arr.size == 0:
        raise input_error("stats", "p", "no p-values to test")
    from scipy import stats  # on first use: scipy.stats takes about a second to import

    res = stats.kstest(arr, "uniform")
    return float(res.statistic), float(res.pvalue)


class PairedTest:
    """A paired two-sided test as a strategy object: what the analysis needs from a test,
    so that no code branches on the test's name.

    - ``name``: its key (:data:`TESTS`), ``label``: how a report names it;
    - :meth:`pvalues`: one p-value per pair of rows of a ``(configurations, users)`` array;
    - ``interval``: whether the DP interval and the claims built on it are available under this
      test. Only the t-test has them: the bootstrap of the DP recomputes each pair's t statistic
      from per-user moment sums (:mod:`dptune.analysis.dp.bootstrap`); a Wilcoxon or
      resampling p-value has no such sums, so under those tests the analysis reports DP
      without an interval and claims nothing as significant.
    """

    name: str = ""
    label: str = ""
    interval: bool = False

    def __init__(self, n_resamples: int = 1000) -> None:
        self.n_resamples = int(n_resamples)

    def pvalues(self, values: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray,
                columns: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
        """p-values of the pairs ``(values[rows_a[j]], values[rows_b[j]])`` over the users
        (``columns``: the user columns used, None = every column); ``seed`` seeds a resampling
        test (the same for every metric of a scope and fold)."""
        v = np.asarray(values, dtype=np.float64)
        if columns is not None:
            v = v[:, np.asarray(columns)]
        return paired_pvalues(v[np.asarray(rows_a)], v[np.asarray(rows_b)], test=self.name,
                              n_resamples=self.n_resamples, seed=seed)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class TTest(PairedTest):
    """The paired Student t-test (the paper's), by compiled pair sums in place
    (:func:`ttest_pvalues`): no difference matrix is built."""

    name = "t"
    label = "paired two-sided Student t-test (scipy ttest_rel)"
    interval = True

    def pvalues(self, values: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray,
                columns: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
        v = values if values.dtype in (np.float32, np.float64) else \
            np.asarray(values, dtype=np.float64)
        n = v.shape[1] if columns is None else len(columns)
        p = ttest_pvalues(v, rows_a, rows_b, n, columns)
        if np.isnan(p).any():  # a NaN or infinite value reached the sums
            raise input_error("stats", "per-user values", "contain NaN or infinite values")
        return p


class WilcoxonTest(PairedTest):
    name = "wilcoxon"
    label = "paired two-sided Wilcoxon signed-rank test (scipy wilcoxon, zero_method wilcox)"


class BootstrapTest(PairedTest):
    name = "bootstrap"
    label = "paired bootstrap test of the mean difference"


class PermutationTest(PairedTest):
    name = "permutation"
    label = "paired randomisation (sign-flip) test"


_STRATEGIES: dict[str, type[PairedTest]] = {
    c.name: c for c in (TTest, WilcoxonTest, BootstrapTest, PermutationTest)}


def paired_test(name: str, n_resamples: int = 1000) -> PairedTest:
    """The strategy object of the test named ``name`` (:data:`TESTS`)."""
    return _STRATEGIES[check_test(name)](n_resamples)
