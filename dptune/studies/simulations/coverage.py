"""Coverage of the DP interval, measured: a Monte Carlo study on synthetic per-user tables.

A *case* is a known population of per-user metric values for ``m`` configurations: user ``u``
of configuration ``k`` scores

    normal:  x_k(u) = mu_k + b_u + e_ku,                 b_u, e_ku ~ N(0, 1)
    ranking: x_k(u) = h_ku g_ku,  h_ku ~ Bernoulli(min(1, q_u (1 + mu_k))),
             q_u ~ Beta(0.5, 2), g_ku ~ Beta(2, 3)        (many zeros, skewed: like nDCG@N)

with ``mu_k = effect * s_k / sqrt(n)``, ``s_k`` evenly spaced in [-1, 1] (``effect = 0``: no
differences; the pair t statistics grow with ``effect`` whatever the number of users ``n``).
With ``shared = s > 0`` (normal kind) the same ``n`` users are in every fold, each with a
taste of their own for each configuration that goes with them from fold to fold:
``x_k(u, f) = mu_k + b_u + c_ku + e_kuf``, ``c_ku ~ N(0, s^2)`` (as in user-stratified folds,
whose validation folds hold the same users); ``b_u, c_ku`` drawn once per sample.
A *sample* is what the tool sees: ``F`` folds of ``n`` users drawn afresh (or shared), the configuration
pairs (every pair, or ``pairs`` of them sampled uniformly with a fresh seed), and the tool's own
DP with its interval (:class:`dptune.analysis.dp.fold_loop.ScopeRun`: the same code that
fills dp.csv's ``ci_low, ci_high``).

The target is **not** the DP of the whole population: p-values shrink as users are added, so
the parameter is the expected mean p-value at ``n`` users per fold over the case's pairs,

    theta = E[(1/P) sum_j p_j(n users)]       (every pair of the grid when pairs are sampled),

estimated from ``truth_samples`` fresh single-fold samples (the folds of a sample are
independent draws, so a fold's expectation is the F-fold one). Its Monte Carlo error,
``sd(fold mean p) / sqrt(truth_samples)``, is reported beside it and is far below the interval
widths. Coverage is the share of samples whose interval ``[ci_low, ci_high] / 25`` contains
``theta``; its Monte Carlo sd is ``sqrt(c (1 - c) / samples)`` (1.5 points at 95% and 200
samples). Every draw is seeded from ``(seed, case index, sample index)``.

The many tiny bootstraps of a study run on one numba and one BLAS thread
(:func:`coverage_study`): a parallel kernel's start-up costs more than a fold of a few hundred
users. Every p-value, the truth's included, is the analysis' own paired t-test
(:func:`fold_pvalues`).

Only the tests and ``docs/statistics.md`` (section 10a) run this study; the analysis never
imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dptune._threads import one_thread
from dptune.analysis.dp.fold_loop import FoldView, ScopePlan, ScopeRun
from dptune.analysis.dp.paired_tests import paired_test
from dptune.analysis.dp.pairs import sample_pairs, scope_seed
from dptune.analysis.dp.scale import REFERENCE_P, n_possible_pairs
from dptune.errors import check_int, input_error

__all__ = ["Case", "PairedCase", "COVERAGE_COLUMNS", "FULL_CASES", "FEW_PAIR_CASES", "MANY_CONFIG_CASES",
           "SHARED_FEW_CASES", "QUICK_CASES", "QUICK_MANY_CASES", "fold_pvalues",
           "true_mean_p", "sample_interval", "coverage", "coverage_study", "documented_study",
           "replication_seed", "share_sd"]

COVERAGE_COLUMNS = ["case", "configs", "pairs", "possible_pairs", "users", "folds", "effect",
                    "kind", "samples", "truth", "truth_se", "coverage", "coverage_se",
                    "mean_width", "below", "above", "mean_estimate", "estimate_sd"]

_KINDS = ("normal", "ranking")


class PairedCase:
    """The pairs of a simulated case of ``configs`` configurations whose DP is computed on
    ``pairs`` of them (``None``: every pair), shared by the coverage and the error-rate
    studies' cases."""

    configs: int
    pairs: int | None

    @property
    def possible_pairs(self) -> int:
        """Every pair of the case's configurations: ``m (m - 1) / 2``."""
        return n_possible_pairs(self.configs)

    @property
    def n_pairs(self) -> int:
        """The pairs each sample tests: every pair, or ``pairs`` of them when fewer."""
        return self.possible_pairs if self.pairs is None else min(self.pairs, self.possible_pairs)


@dataclass(frozen=True)
class Case(PairedCase):
    """One population and design: ``configs`` configurations, ``users`` users per fold,
    ``folds`` folds, ``effect`` (spread of the configuration means, module docstring),
    ``kind`` (``normal`` or ``ranking``) and ``pairs`` (None: every pair; else that many
    sampled uniformly from the grid's pairs in every sample)."""

    name: str
    configs: int
    users: int
    folds: int
    effect: float
    kind: str = "normal"
    pairs: int | None = None
    shared: float = 0.0

    def __post_init__(self) -> None:
        check_int(self.configs, "coverage", "configs", 2)
        check_int(self.users, "coverage", "users", 3)
        check_int(self.folds, "coverage", "folds", 1)
        if self.kind not in _KINDS:
            raise input_error("coverage", "kind", f"must be one of {_KINDS}, got {self.kind!r}")
        if not np.isfinite(self.effect) or self.effect < 0:
            raise input_error("coverage", "effect", f"must be a number >= 0, got {self.effect}")
        if self.pairs is not None:
            check_int(self.pairs, "coverage", "pairs", 1)
        if not np.isfinite(self.shared) or self.shared < 0 or (self.shared and self.kind != "normal"):
            raise input_error("coverage", "shared", f"must be a number >= 0 (normal kind only), "
                              f"got {self.shared}")

    def means(self) -> np.ndarray:
        """``mu_k`` of the configurations."""
        return self.effect * np.linspace(-1.0, 1.0, self.configs) / np.sqrt(self.users)

    def users_of(self, rng: np.random.Generator, n_tables: int = 1) -> np.ndarray:
        """``(n_tables, configs, users)``: what fresh users carry into every fold, ``b_u +
        c_ku`` (``c_ku ~ N(0, shared^2)``: the user's own taste for configuration ``k``)."""
        m, n = self.configs, self.users
        u = rng.standard_normal((n_tables, 1, n))
        if self.shared:
            u = u + self.shared * rng.standard_normal((n_tables, m, n))
        return u

    def draw(self, rng: np.random.Generator, n_tables: int = 1,
             users: np.ndarray | None = None) -> np.ndarray:
        """``(n_tables, configs, users)`` per-user values: of fresh users, or of the given
        ``users`` (:meth:`users_of`, one fold's fresh noise ``e_ku`` added)."""
        m, n, mu = self.configs, self.users, self.means()
        if self.kind == "normal":
            u = self.users_of(rng, n_tables) if users is None else users
            return mu[None, :, None] + u + rng.standard_normal((n_tables, m, n))
        q = rng.beta(0.5, 2.0, (n_tables, 1, n))
        hit = rng.random((n_tables, m, n)) < np.minimum(1.0, q * (1.0 + mu[None, :, None]))
        return hit * rng.beta(2.0, 3.0, (n_tables, m, n))


#: The full study: a few-configuration case and a many-pair case (every one of 105 pairs), each
#: with no, moderate and strong differences, plus a skewed ranking-like metric, and the same
#: users in every fold with a taste of their own for each configuration (``shared``), as
#: user-stratified folds have them.
FULL_CASES = (
    Case("5 configs, none", 5, 300, 3, 0.0),
    Case("5 configs, moderate", 5, 300, 3, 2.0),
    Case("5 configs, strong", 5, 300, 3, 6.0),
    Case("5 configs, ranking-like, moderate", 5, 300, 3, 2.0, "ranking"),
    Case("15 configs, none", 15, 500, 5, 0.0),
    Case("15 configs, moderate", 15, 500, 5, 2.0),
    Case("15 configs, strong", 15, 500, 5, 6.0),
    Case("15 configs, 30 of 105 pairs sampled, moderate", 15, 500, 5, 2.0, pairs=30),
    Case("15 configs, shared users, none", 15, 500, 5, 0.0, shared=1.0),
    Case("15 configs, shared users, moderate", 15, 500, 5, 2.0, shared=1.0),
)

#: Where coverage breaks down: very few pairs (every pair of 2, 3 and 4 configurations), and
#: 10 pairs, also with the same users in every fold.
FEW_PAIR_CASES = tuple(
    Case(f"{m} configs ({n_possible_pairs(m)} pairs), {label}", m, 300, 3, eff)
    for m in (2, 3, 4, 5) for label, eff in (("none", 0.0), ("moderate", 2.0), ("strong", 6.0))
) + (Case("5 configs (10 pairs), shared users, moderate", 5, 300, 3, 2.0, shared=1.0),)

#: The same users in every fold with a few pairs (every pair of 5, 6 and 7 configurations:
#: 10, 15 and 21), without, with moderate and with strong differences, 300 users x 3 folds:
#: where the basic interval fell short (89-93% with moderate differences, most misses below the
#: truth) before each replicate's error was measured in its own world's spread.
SHARED_FEW_CASES = tuple(
    Case(f"{m} configs, shared users, {label}", m, 300, 3, eff, shared=1.0)
    for m in (5, 6, 7) for label, eff in (("none", 0.0), ("moderate", 2.0), ("strong", 6.0))
)

#: Many configurations (every pair of 15, 40 and 100, and 300 or 1,000 sampled pairs of 100),
#: moderate differences, 200 users x 3 folds: where the grouped bootstrap's interval was too
#: wide (1.3-1.8 times, coverage 98-100%). The replicates of pairs that share no configuration
#: are correlated through the users they resample (a sample covariance, zero in expectation but
#: not in one sample); for the mean of many p-values that spurious correlation adds about
#: ``1 / G`` to every pair of pairs' squared correlation, which outweighs the true one when
#: most pairs share no configuration. :func:`dptune.analysis.dp.bootstrap.ungrouped_scale`
#: extrapolates it away (``docs/statistics.md`` sections 10 and 10a).
MANY_CONFIG_CASES = (
    Case("15 configs, mild, 200 users", 15, 200, 3, 1.0),
    Case("40 configs, mild, 200 users", 40, 200, 3, 1.0),
    Case("100 configs, mild, 200 users", 100, 200, 3, 1.0),
    Case("100 configs, 300 of 4,950 pairs sampled, mild", 100, 200, 3, 1.0, pairs=300),
    Case("100 configs, 1,000 of 4,950 pairs sampled, mild", 100, 200, 3, 1.0, pairs=1000),
)

#: The default test run's check of the many-configuration case: 60 configurations (1,770
#: pairs), moderate differences, 100 users x 2 folds (the grouped bootstrap's interval was 1.5
#: times too wide here).
QUICK_MANY_CASES = (Case("60 configs, mild, 100 users", 60, 100, 2, 1.0),)

#: The default test run's quick variant (a few-configuration, a many-pair and a shared-users
#: case).
QUICK_CASES = (
    Case("4 configs, moderate", 4, 150, 3, 2.0),
    Case("12 configs, moderate", 12, 150, 3, 2.0),
    Case("8 configs, shared users, moderate", 8, 150, 3, 2.0, shared=1.0),
)


def fold_pvalues(x: np.ndarray, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
    """Paired t-test p-values ``(tables, P)`` of the pairs ``(rows_a[j], rows_b[j])`` on every
    table ``x[i]`` (``(configs, users)``, one fold's per-user values): the analysis' own t-test
    (:func:`paired_test` ``("t")``, :func:`dptune.analysis.dp.paired_tests.ttest_pvalues`), table
    by table. The truths of the simulation studies (:func:`true_mean_p`,
    :func:`dptune.studies.simulations.error_rates.true_only_mean_p`) are means of these."""
    test = paired_test("t")
    return np.array([test.pvalues(table, rows_a, rows_b) for table in x]).reshape(
        len(x), len(rows_a))


def true_mean_p(case: Case, n_samples: int = 4000, seed: int = 0) -> tuple[float, float]:
    """``(theta, se)``: the expected mean p-value over every pair of the grid at ``case.users``
    users, from ``n_samples`` fresh folds, and its Monte Carlo standard error."""
    n_samples = check_int(n_samples, "coverage", "truth_samples", 2)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(10**6,)))
    ra, rbb = np.triu_indices(case.configs, k=1)
    chunk = max(1, 2_000_000 // (case.configs * case.users))
    means = []
    for start in range(0, n_samples, chunk):
        x = case.draw(rng, min(chunk, n_samples - start))
        means.append(fold_pvalues(x, ra, rbb).mean(axis=1))
    m = np.concatenate(means)
    return float(m.mean()), float(m.std(ddof=1) / np.sqrt(len(m)))


def sample_interval(case: Case, seed: int, n_boot: int = 1000,
                    level: float = 0.95) -> tuple[float, float, float]:
    """One sample of ``case``: ``(mean_p, low, high)`` of the tool's DP and its interval on the
    mean-p scale (:class:`ScopeRun`; ``level`` other than 0.95 is not supported by it)."""
    if level != 0.95:
        raise input_error("coverage", "level", "the robust table's interval is the 95% one")
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    ids = np.arange(case.configs)
    boot_seed = int(rng.integers(2**31))
    run = ScopeRun(ScopePlan(
        "sim", "all", [sample_pairs(ids, case.n_pairs, scope_seed(boot_seed, "all"))],
        case.possible_pairs, case.folds, [("m", 1)], test=paired_test("t"),
        bootstrap=int(n_boot), seed=boot_seed))
    # with a shared taste the same users are in every fold (as user-stratified folds have them)
    users = case.users_of(rng) if case.shared else None
    for f in range(case.folds):
        # user ids: the same in every fold when the users are shared, else fresh ones
        ids_f = np.arange(case.users) + (0 if case.shared else f * case.users)
        run.add_fold(f, str(f), FoldView.of_table(ids_f, case.draw(rng, users=users)[0]))
    row = run.finish()[0][0]
    scale = REFERENCE_P
    return float(row["mean_p"]), float(row["ci_low"]) / scale, float(row["ci_high"]) / scale


def coverage(case: Case, samples: int = 200, n_boot: int = 1000, truth_samples: int = 4000,
             seed: int = 0, case_index: int = 0) -> dict:
    """One row of :data:`COVERAGE_COLUMNS` for ``case``: ``samples`` intervals against
    :func:`true_mean_p`; ``below`` / ``above``: shares of intervals wholly below / above the
    truth."""
    samples = check_int(samples, "coverage", "samples", 1)
    theta, se = true_mean_p(case, truth_samples, seed=seed * 1000 + case_index)
    res = np.array([sample_interval(case, replication_seed(seed, case_index, s), n_boot)
                    for s in range(samples)])
    est, lo, hi = res.T
    hit = (lo <= theta) & (theta <= hi)
    c = float(hit.mean())
    return {"case": case.name, "configs": case.configs, "pairs": case.n_pairs,
            "possible_pairs": case.possible_pairs, "users": case.users, "folds": case.folds,
            "effect": case.effect, "kind": case.kind, "samples": samples, "truth": theta,
            "truth_se": se, "coverage": c, "coverage_se": share_sd(c, samples),
            "mean_width": float((hi - lo).mean()), "below": float((hi < theta).mean()),
            "above": float((lo > theta).mean()), "mean_estimate": float(est.mean()),
            "estimate_sd": float(est.std(ddof=1)) if samples > 1 else float("nan")}


def share_sd(share: float, n: int) -> float:
    """The Monte Carlo sd of a share ``r`` (a coverage, an error rate) counted over ``n``
    independent replications: ``sqrt(r (1 - r) / n)``. Every simulation study reports it."""
    return float(np.sqrt(share * (1.0 - share) / n))


def replication_seed(seed: int, case_index: int, replication: int) -> int:
    """The seed of one replication (a sample, a run) of case ``case_index`` of a study seeded
    ``seed``: independent streams (NumPy's ``SeedSequence`` spawned by the pair), so a case's
    replications are the same whichever cases run beside it. Every simulation study uses it."""
    ss = np.random.SeedSequence(int(seed), spawn_key=(int(case_index), int(replication)))
    return int(ss.generate_state(1, dtype=np.uint64)[0] >> 1)


def coverage_study(cases: Sequence[Case] = FULL_CASES, samples: int = 200, n_boot: int = 1000,
                   truth_samples: int = 4000, seed: int = 0) -> pd.DataFrame:
    """:func:`coverage` of every case (one numba thread meanwhile; module docstring)."""
    with one_thread():
        rows = [coverage(c, samples, n_boot, truth_samples, seed, i)
                for i, c in enumerate(cases)]
    return pd.DataFrame(rows, columns=COVERAGE_COLUMNS)


def documented_study(cases: Sequence[Case] = FULL_CASES, samples: int = 1000,
                     n_boot: int = 1000, truth_samples: int = 4000,
                     first_seed: int = 100) -> pd.DataFrame:
    """The tables of ``docs/statistics.md``: case ``i`` run on its own with seed
    ``first_seed + i`` (100 for :data:`FULL_CASES` with 1,000 samples, enough to read a tail of
    2.5% to +-0.5 points; 200 for :data:`FEW_PAIR_CASES` with 200), so that any case can be
    rerun alone."""
    return pd.concat([coverage_study([c], samples, n_boot, truth_samples, first_seed + i)
                      for i, c in enumerate(cases)], ignore_index=True)
