"""Paired significance tests and p-value corrections: where every p-value of dptune is computed.

All functions are pure (arrays in, arrays out) and vectorised over the pairs being compared.
The unit of every test is the user: ``a[p, u]`` and ``b[p, u]`` are the values of the two
systems of pair ``p`` for user ``u`` (aligned), and ``d = a - b`` are the per-user differences.

Conventions shared by every test (documented choices, see ``docs/design.md``):

- Two-sided alternatives only.
- A pair whose differences are all exactly zero has ``p = 1`` (scipy returns NaN for the t-test):
  the two systems are indistinguishable on these users.
- Fewer than two users (``n < 2``): ``p = 1`` for every test. A single difference carries no
  information about its own variance, so no test can reject; counting the pair as "not
  discriminated" keeps DP sums finite and comparable.
- Resampling tests (``"bootstrap"``, ``"permutation"``) draw one set of resamples per call and use
  it for every pair (row); each row's p-value is still a valid marginal test. They are seeded and
  reproducible, and use the ``(1 + #{|T*| >= |T|}) / (B + 1)`` convention (never exactly 0).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy import stats as _st

from dptune.errors import input_error
from dptune.vocab import CORRECTIONS, TESTS

__all__ = [
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


def check_test(test: str, source: str = "stats") -> str:
    """Return ``test`` if it names a known paired test, else raise an input error."""
    if test not in TESTS:
        raise input_error(
            source, "test", f"unknown test {test!r}; choose one of {', '.join(TESTS)}"
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
    the analysis (:func:`dptune.analysis.dp.bootstrap.ttest_pvalues`: compiled pair sums, exact
    constant-difference rule), here on the pairs ``(d[j], 0)``, whose differences are ``d[j]``
    exactly: the tables, the robust DP, the noise floor and the downstream check share it."""
    from dptune.analysis.dp.bootstrap import ttest_pvalues

    n_p = d.shape[0]
    values = np.vstack([d, np.zeros((1, d.shape[1]))])
    return ttest_pvalues(values, np.arange(n_p), np.full(n_p, n_p))


def _wilcoxon_pvalues(d: np.ndarray) -> np.ndarray:
    """Wilcoxon signed-rank p-value per row (``zero_method="wilcox"``); all-zero rows -> 1."""
    out = np.ones(d.shape[0], dtype=np.float64)
    for i, row in enumerate(d):
        if np.any(row != 0.0):
            out[i] = float(_st.wilcoxon(row, zero_method="wilcox").pvalue)
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
    ``d[:, idx]``. A resample whose variance is below ``1e-14 * max|c|^2`` (all resampled
    differences equal, up to rounding) gets ``p = 1`` if its mean is 0 (within
    ``1e-9 * max|d|``) and ``p = 0`` otherwise, as in :func:`paired_pvalues`.
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
    s2 = (c * c) @ w.T
    var = np.maximum(s2 - n * m * m, 0.0) / (n - 1)
    mean = m + shift[:, None]
    spread = np.max(np.abs(c), axis=1)[:, None]
    size = np.max(np.abs(d), axis=1)[:, None]
    zero_var = var <= 1e-14 * spread * spread
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / np.sqrt(var / n)
    p = 2.0 * _st.t.sf(np.abs(t), n - 1)
    p = np.where(zero_var, np.where(np.abs(mean) <= 1e-9 * size, 1.0, 0.0), p)
    return np.clip(p, 0.0, 1.0)


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
    res = _st.kstest(arr, "uniform")
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
    (:func:`dptune.analysis.dp.bootstrap.ttest_pvalues`): no difference matrix is built."""

    name = "t"
    label = "paired two-sided Student t-test (scipy ttest_rel)"
    interval = True

    def pvalues(self, values: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray,
                columns: np.ndarray | None = None, seed: int = 0) -> np.ndarray:
        from dptune.analysis.dp.bootstrap import ttest_pvalues

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
