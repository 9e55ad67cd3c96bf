"""Error rates of the analysis' claims, measured: a Monte Carlo study on synthetic families.

A *family case* is a known population of per-user values of ``K`` metrics for ``M``
configurations. User ``u`` of configuration ``k`` scores, on metric ``m``,

    x_mk(u) = lambda_m mu_k + b_u + sqrt(rho) z_ku + sqrt(1 - rho) e_mku,

``b_u, z_ku, e_mku ~ N(0, 1)``, ``mu_k = effect s_k / sqrt(n)`` with ``s_k`` evenly spaced in
[-1, 1] (as in :mod:`dptune.studies.simulations.coverage`). ``z_ku`` is the user's response to
configuration ``k`` that every metric sees (``rho``: how much the metrics share; 0 = each
metric an independent draw of the same model), ``e_mku`` the metric's own noise. A metric's
*discriminative power* is set by ``lambda_m``: metrics with equal ``lambda`` are exactly as
discriminative as each other (the same law of values), a metric with a smaller ``lambda`` is
truly less discriminative (higher expected mean p-value). With ``shared`` folds the same users
are in every fold and keep ``b_u, z_ku`` from fold to fold (user-stratified folds), else every
fold draws fresh users. With ``clip`` every value is read as a metric bounded in [0, 1] with
many zeros (:func:`clip_metric`); metrics of equal ``lambda`` still share one law, so they are
still exactly as discriminative as each other. The pairs are every pair of the grid, or
``pairs`` of them sampled (then with ``stability`` pair seeds, as the analysis does it).

A *run* draws one sample and passes it through the analysis' own code: the robust DP with its
bootstrap (:class:`dptune.analysis.dp.fold_loop.ScopeRun`), the comparisons of the family
(:func:`dptune.analysis.dp.comparisons.stepdown_maxt`, under every stability repeat) and the
verdict's claim rule (:func:`dptune.analysis.dp.stability.family_claims`): the metric with the
lowest DP is recommended, and a metric is named *significantly less discriminative* when its
comparison with the recommended one is rejected under every repeat. A **false claim** names a
metric whose ``lambda`` is at least the recommended metric's (in truth at least as
discriminative); a row **with a false claim** has one or more. ``false_rows`` is the share of
runs with a false claim (the family-wise error rate, to be at most ``alpha``; its Monte Carlo
standard error ``sqrt(r (1 - r) / runs)``), ``power`` the share of truly less discriminative
metrics that are named (when some are), both for the rule of this version and, for comparison,
for the former rule ("less discriminative when the bootstrap puts the recommended metric ahead
in at least ``1 - alpha`` of the replicates", with no correction for the selection of the
recommended metric or for the size of the family).

Only the tests and ``docs/statistics.md`` (sections 11 and 12) run these studies; the analysis
never imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dptune._threads import one_thread
from dptune.analysis.dp import stability as sb
from dptune.analysis.dp.fold_loop import FoldView, ScopePlan, ScopeRun, UserDraws
from dptune.analysis.dp.paired_tests import paired_test
from dptune.analysis.dp.pairs import sample_pairs, scope_seed, scopes
from dptune.analysis.dp.scale import REFERENCE_P
from dptune.errors import check_int, input_error
from dptune.studies.simulations.coverage import (
    PairedCase,
    fold_pvalues,
    replication_seed,
    share_sd,
)

__all__ = ["FamilyCase", "family_users", "family_values", "ERROR_COLUMNS", "NULL_CASES", "PARTIAL_CASES", "FAMILY_SHAPE_CASES",
           "QUICK_FAMILY_CASES", "clip_metric",
           "run_family", "family_error_rates", "error_rate_study", "DominanceCase",
           "DOMINANCE_ERROR_COLUMNS", "DOMINANCE_CASES", "DOMINANCE_SHAPE_CASES",
           "DOMINANCE_SAMPLED_CASES", "check_taste", "taste_users", "taste_values",
           "QUICK_DOMINANCE_CASES", "true_only_mean_p",
           "run_grid", "run_dominance", "expected_mean_p", "dominance_error_rates", "dominance_study", "family_lambdas", "claim_rates"]

ERROR_COLUMNS = ["case", "metrics", "weaker", "rho", "folds_kind", "clipped", "pairs",
                 "possible_pairs",
                 "runs", "false_rows", "false_rows_se", "power", "false_rows_former",
                 "false_rows_former_se", "power_former"]


def clip_metric(x: np.ndarray) -> np.ndarray:
    """Values of a standard-normal-like model read as a metric bounded in [0, 1] with many
    zeros, as nDCG or Recall at a small cutoff: ``min(1, max(0, 0.2 + 0.2 x))``; with the
    studies' ``x`` of variance 2, about a quarter of the values are 0."""
    return np.clip(0.2 + 0.2 * x, 0.0, 1.0)


def family_users(rng: np.random.Generator, configs: int,
                 users: int) -> tuple[np.ndarray, np.ndarray]:
    """What ``users`` users carry into every fold of a family case: their level ``b_u`` ``(1,
    n)`` and their response to each of ``configs`` configurations ``z_ku`` ``(M, n)``, all
    standard normal."""
    return rng.standard_normal((1, users)), rng.standard_normal((configs, users))


def family_values(rng: np.random.Generator, lambdas: np.ndarray, mu: np.ndarray,
                  users: tuple[np.ndarray, np.ndarray], rho: float, clip: bool) -> np.ndarray:
    """``(metrics, configs, users)`` values of one fold of a family of metrics (module
    docstring): ``x_mk(u) = lambda_m mu_k + b_u + sqrt(rho) z_ku + sqrt(1 - rho) e_mku`` for
    the users' ``(b_u, z_ku)`` (:func:`family_users`) and fresh noise ``e_mku``, read as a
    clipped metric with ``clip`` (:func:`clip_metric`). The family cases here and the grid
    sample's claims cases draw their folds with it."""
    b, z = users
    e = rng.standard_normal((len(lambdas), len(mu), b.shape[1]))
    x = (lambdas[:, None, None] * mu[None, :, None] + (b + np.sqrt(rho) * z)[None]
         + np.sqrt(1.0 - rho) * e)
    return clip_metric(x) if clip else x


@dataclass(frozen=True)
class FamilyCase(PairedCase):
    """One population and design of a family of ``metrics`` metrics (module docstring):
    ``weaker`` of them (the last ones) have ``lambda = weak`` (truly less discriminative), the
    others ``lambda = 1``."""

    name: str
    metrics: int
    configs: int = 15
    users: int = 300
    folds: int = 3
    effect: float = 2.0
    rho: float = 0.7
    shared: bool = False
    pairs: int | None = None
    weaker: int = 0
    weak: float = 0.5
    clip: bool = False

    def __post_init__(self) -> None:
        check_int(self.metrics, "error rates", "metrics", 2)
        check_int(self.configs, "error rates", "configs", 2)
        check_int(self.users, "error rates", "users", 3)
        check_int(self.folds, "error rates", "folds", 1)
        if not 0 <= int(self.weaker) < int(self.metrics):
            raise input_error("error rates", "weaker", f"must be in [0, metrics), got {self.weaker}")
        if not 0.0 <= self.rho <= 1.0:
            raise input_error("error rates", "rho", f"must be in [0, 1], got {self.rho}")
        if self.pairs is not None:
            check_int(self.pairs, "error rates", "pairs", 1)

    @property
    def lambdas(self) -> np.ndarray:
        return family_lambdas(self.metrics, self.weaker, self.weak)

    def users_of(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """What a user carries into every fold (:func:`family_users`)."""
        return family_users(rng, self.configs, self.users)

    def draw(self, rng: np.random.Generator,
             users: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """``(metrics, configs, users)`` values of one fold (of the given users, or fresh;
        :func:`family_values`)."""
        mu = self.effect * np.linspace(-1.0, 1.0, self.configs) / np.sqrt(self.users)
        return family_values(rng, self.lambdas, mu,
                             self.users_of(rng) if users is None else users, self.rho, self.clip)


def _metric(i: int) -> str:
    return f"m{i}"


def run_family(case: FamilyCase, seed: int, n_boot: int = 1000, alpha: float = 0.05,
               stability: int = 5) -> dict:
    """One run of ``case``: ``recommended`` (metric index), the metrics named less
    discriminative by this version's rule (``named``) and by the former rule
    (``named_former``)."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    mcs = [(_metric(i), 10) for i in range(case.metrics)]
    repeats = stability if case.n_pairs < case.possible_pairs else 1
    ids, s0 = np.arange(case.configs), int(rng.integers(2**31))
    pairs = [sample_pairs(ids, case.n_pairs, scope_seed(s0, "all" if k == 0 else
                                                        f"all|robust|{k}"))
             for k in range(repeats)]
    run = ScopeRun(ScopePlan("sim", "all", pairs, case.possible_pairs, case.folds, mcs,
                             test=paired_test("t"), bootstrap=int(n_boot), seed=s0,
                             draws=UserDraws(int(n_boot), s0)))
    users = case.users_of(rng) if case.shared else None
    for f in range(case.folds):
        x = case.draw(rng, users)
        ids_f = np.arange(case.users) + (0 if case.shared else f * case.users)
        run.add_fold(f, str(f), FoldView.of_table(ids_f, {_metric(i): t for i, t in enumerate(x)}))
    rows, _, draws = run.finish()
    est = np.array([r["mean_p"] for r in rows])
    rec = int(np.argmin(est))
    n_rep = len(draws[("sim", "all", mcs[0][0], 10)])
    claims = sb.family_claims({k: {m: draws[("sim", "all", m, 10)][k] for m, _ in mcs}
                               for k in range(n_rep)}, alpha)
    c = claims[claims["metric_a"] == _metric(rec)].set_index("metric_b")
    named = [int(m[1:]) for m in c.index[c["held"]]]
    named_former = [int(m[1:]) for m in c.index[c["prob_min"] >= 1.0 - alpha]]
    return {"recommended": rec, "named": named, "named_former": named_former}


def family_lambdas(metrics: int, weaker: int, weak: float) -> np.ndarray:
    """Every metric's ``lambda``: 1, and ``weak`` for the last ``weaker`` (truly less
    discriminative) ones."""
    lam = np.ones(metrics)
    if weaker:
        lam[metrics - weaker:] = weak
    return lam


def claim_rates(lam: np.ndarray, runs: Sequence[dict], key: str = "named") -> tuple[float, float]:
    """``(false_rows, power)`` of ``runs`` (each a ``recommended`` metric index and the indices
    named under ``key``) for metrics of discriminative power ``lam``: the share of runs naming a
    metric whose ``lambda`` is at least the recommended one's, and the mean share of the truly
    weaker metrics named (NaN when there are none)."""
    false_rows = np.array([any(lam[j] >= lam[r["recommended"]] for j in r[key]) for r in runs])
    weak = np.flatnonzero(lam < lam.max())
    power = (float(np.mean([np.isin(weak, r[key]).mean() for r in runs])) if len(weak)
             else float("nan"))
    return float(false_rows.mean()), power


def family_error_rates(case: FamilyCase, runs: int = 200, n_boot: int = 1000,
                       alpha: float = 0.05, seed: int = 0, case_index: int = 0,
                       stability: int = 5) -> dict:
    """One row of :data:`ERROR_COLUMNS` for ``case`` from ``runs`` runs, each with
    ``stability`` pair seeds when its pairs are sampled (the analysis's default 5; 1 is what
    a large grid gets when ``stability_seconds`` affords no repeat)."""
    runs = check_int(runs, "error rates", "runs", 1)
    out = [run_family(case, replication_seed(seed, case_index, s), n_boot, alpha, stability)
           for s in range(runs)]
    fr, pw = claim_rates(case.lambdas, out, "named")
    fr0, pw0 = claim_rates(case.lambdas, out, "named_former")

    return {"case": case.name, "metrics": case.metrics, "weaker": case.weaker, "rho": case.rho,
            "folds_kind": "shared" if case.shared else "independent", "clipped": case.clip,
            "pairs": case.n_pairs,
            "possible_pairs": case.possible_pairs, "runs": runs, "false_rows": fr,
            "false_rows_se": share_sd(fr, runs), "power": pw, "false_rows_former": fr0,
            "false_rows_former_se": share_sd(fr0, runs), "power_former": pw0}


#: Families of equally discriminative metrics: 2, 4 and 6 metrics; shared users' effects
#: (rho = 0.7) or independent draws (rho = 0); independent or shared folds; every pair or 30
#: sampled pairs.
NULL_CASES = tuple(
    FamilyCase(f"{k} metrics, rho {rho}, {'shared' if sh else 'independent'} folds"
               + (f", {p} of 105 pairs" if p else ", every pair"), k, rho=rho, shared=sh, pairs=p)
    for k in (2, 4, 6) for rho in (0.7, 0.0) for sh in (False, True) for p in (None, 30)
)

#: Partially null families: some metrics truly less discriminative (``lambda = weak``), from
#: nearly as discriminative (0.75) to clearly less (0.5).
PARTIAL_CASES = (
    FamilyCase("2 metrics, 1 weaker (0.75)", 2, weaker=1, weak=0.75),
    FamilyCase("4 metrics, 1 weaker (0.75)", 4, weaker=1, weak=0.75),
    FamilyCase("4 metrics, 2 weaker (0.75)", 4, weaker=2, weak=0.75),
    FamilyCase("6 metrics, 2 weaker (0.75)", 6, weaker=2, weak=0.75),
    FamilyCase("4 metrics, 1 weaker (0.75), rho 0, shared folds", 4, weaker=1, weak=0.75,
               rho=0.0, shared=True),
    FamilyCase("4 metrics, 1 weaker (0.5)", 4, weaker=1, weak=0.5),
    FamilyCase("4 metrics, 1 weaker (0.5), 30 of 105 pairs", 4, weaker=1, weak=0.5, pairs=30),
)

#: Families under another population shape: every value clipped to a metric's [0, 1] with
#: about a quarter of them 0 (:func:`clip_metric`), every pair; equally discriminative metrics
#: (the null) with independent (rho = 0) and correlated (0.7) metrics, independent and shared
#: folds, and one clearly weaker metric for the power.
FAMILY_SHAPE_CASES = (
    FamilyCase("2 metrics, rho 0, independent folds, clipped", 2, rho=0.0, clip=True),
    FamilyCase("4 metrics, rho 0, independent folds, clipped", 4, rho=0.0, clip=True),
    FamilyCase("4 metrics, rho 0, shared folds, clipped", 4, rho=0.0, shared=True, clip=True),
    FamilyCase("4 metrics, rho 0.7, shared folds, clipped", 4, shared=True, clip=True),
    FamilyCase("6 metrics, rho 0, independent folds, clipped", 6, rho=0.0, clip=True),
    FamilyCase("6 metrics, rho 0.7, independent folds, clipped", 6, clip=True),
    FamilyCase("4 metrics, 1 weaker (0.5), clipped", 4, weaker=1, weak=0.5, clip=True),
)

#: The default test run's quick variant: correlated metrics over independent folds,
#: independent metrics over shared folds, and the latter clipped.
QUICK_FAMILY_CASES = (
    FamilyCase("4 metrics, rho 0.7, independent folds, every pair", 4, configs=10, users=150),
    FamilyCase("4 metrics, rho 0, shared folds, every pair", 4, configs=10, users=150, rho=0.0,
               shared=True),
    FamilyCase("4 metrics, rho 0, shared folds, every pair, clipped", 4, configs=10, users=150,
               rho=0.0, shared=True, clip=True),
)


def error_rate_study(cases: Sequence[FamilyCase] = NULL_CASES + PARTIAL_CASES, runs: int = 200,
                     n_boot: int = 1000, alpha: float = 0.05, seed: int = 0,
                     stability: int = 5) -> pd.DataFrame:
    """:func:`family_error_rates` of every case (one numba and one BLAS thread meanwhile: a
    parallel kernel's start-up costs more than a fold of a few hundred users)."""
    with one_thread():
        rows = [family_error_rates(c, runs, n_boot, alpha, seed, i, stability)
                for i, c in enumerate(cases)]
    return pd.DataFrame(rows, columns=ERROR_COLUMNS)


# --------------------------------------------------------------------------------------------
# the dominant hyperparameter
# --------------------------------------------------------------------------------------------

DOMINANCE_ERROR_COLUMNS = ["case", "hyperparameters", "values", "betas", "pairs",
                           "possible_pairs", "stability", "runs", "false_dominant",
                           "false_dominant_se", "false_over", "false_over_se", "power",
                           "coverage", "coverage_se", "mean_width"]


def check_taste(taste: float, shared: bool) -> None:
    """A per-user taste kept from fold to fold: a share in [0, 1) of the per-user noise, and
    only over folds of the same users."""
    if not 0.0 <= float(taste) < 1.0:
        raise input_error("error rates", "taste", f"must be in [0, 1), got {taste}")
    if taste and not shared:
        raise input_error("error rates", "taste", "a taste kept from fold to fold needs "
                          "shared folds (shared=True)")


def taste_users(rng: np.random.Generator, configs: int, users: int,
                n_tables: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """What ``users`` users keep from fold to fold: their level ``b_u`` ``(T, 1, n)`` and
    their taste for each of ``configs`` configurations ``t_cu`` ``(T, configs, n)``, all
    standard normal."""
    return (rng.standard_normal((n_tables, 1, users)),
            rng.standard_normal((n_tables, configs, users)))


def taste_values(rng: np.random.Generator, mu: np.ndarray, users: tuple[np.ndarray, np.ndarray],
                 taste: float, clip: bool) -> np.ndarray:
    """``(T, configs, users)`` values of one fold, ``x_c(u) = mu_c + b_u + sqrt(taste) t_cu +
    sqrt(1 - taste) e_cu`` for the users' ``(b_u, t_cu)`` (:func:`taste_users`) and fresh fold
    noise ``e_cu``, read as a clipped metric with ``clip`` (:func:`clip_metric`). The
    dominance cases here and on a grid sample draw their folds with it."""
    b, t = users
    e = rng.standard_normal(t.shape)
    x = mu[None, :, None] + b + np.sqrt(taste) * t + np.sqrt(1.0 - taste) * e
    return clip_metric(x) if clip else x


@dataclass(frozen=True)
class DominanceCase:
    """A full factorial grid of ``hyperparameters`` hyperparameters with ``values`` values each.
    Configuration ``c`` with values ``v_h(c)`` has mean ``mu_c = sum_h beta_h g(v_h(c)) /
    sqrt(n)``, ``g`` evenly spaced in [-1, 1]; user ``u`` scores ``x_c(u) = mu_c + b_u +
    e_cu`` (``b_u, e_cu ~ N(0, 1)``), fresh users in every fold. The one-at-a-time scope of
    ``h`` (pairs that differ in ``h`` only) has a true mean p-value ``theta_h`` that falls with
    ``beta_h``: equal betas make every hyperparameter equally dominant (a null case), a larger
    ``beta_h`` makes ``h`` truly dominant.

    Population shapes beyond that one: ``shared`` keeps the same users in every fold (with their
    ``b_u``, as user-stratified folds do); ``taste`` in [0, 1) splits ``e_cu`` into a per-user
    taste for each configuration that the user keeps from fold to fold, ``sqrt(taste) t_cu``,
    and fold noise ``sqrt(1 - taste) e_cu`` (it needs ``shared``); ``clip`` reads the value as a
    metric bounded in [0, 1] with many zeros (:func:`clip_metric`: about a quarter of the
    values at 0).

    ``pairs``: the cap of each one-at-a-time scope, as the analysis' ``value_pairs``: a scope
    with more pairs is a seeded sample of that many, drawn by the analysis' own sampler
    (:func:`dptune.analysis.dp.pairs.scopes`) under each pair seed of the stability repeats;
    None takes every pair."""

    name: str
    betas: tuple[float, ...] = (2.0, 2.0, 2.0)
    values: int = 3
    users: int = 300
    folds: int = 3
    shared: bool = False
    taste: float = 0.0
    clip: bool = False
    pairs: int | None = None

    def __post_init__(self) -> None:
        check_taste(self.taste, self.shared)
        if self.pairs is not None:
            check_int(self.pairs, "error rates", "pairs", 1)

    @property
    def grid(self) -> np.ndarray:
        """``(configs, hyperparameters)`` value indices of the full factorial grid."""
        h = len(self.betas)
        return np.stack(np.meshgrid(*[np.arange(self.values)] * h, indexing="ij"),
                        axis=-1).reshape(-1, h)

    def means(self) -> np.ndarray:
        g = np.linspace(-1.0, 1.0, self.values)
        return (g[self.grid] * np.asarray(self.betas)).sum(axis=1) / np.sqrt(self.users)

    def configs(self) -> pd.DataFrame:
        """The grid as the analysis reads it: ``config_id`` and a column ``h0, h1, ..`` of
        value indices per hyperparameter."""
        grid = self.grid
        return pd.DataFrame({"config_id": np.arange(len(grid)),
                             **{f"h{i}": grid[:, i] for i in range(grid.shape[1])}})

    @property
    def possible_pairs(self) -> int:
        """Pairs of one one-at-a-time scope: ``values^(H-1) C(values, 2)``, every
        hyperparameter's the same."""
        v, h = int(self.values), len(self.betas)
        return v ** (h - 1) * v * (v - 1) // 2

    def only_pairs(self, h: int) -> np.ndarray:
        """Every pair of configurations that differ in hyperparameter ``h`` only."""
        grid = self.grid
        others = np.delete(grid, h, axis=1)
        a, b = np.triu_indices(len(grid), k=1)
        keep = (grid[a, h] != grid[b, h]) & np.all(others[a] == others[b], axis=1)
        return np.column_stack([a[keep], b[keep]]).astype(np.int64)

    def users_of(self, rng: np.random.Generator, n_tables: int = 1) -> tuple[np.ndarray, ...]:
        """What a user keeps from fold to fold (:func:`taste_users`)."""
        return taste_users(rng, len(self.grid), self.users, n_tables)

    def draw(self, rng: np.random.Generator, n_tables: int = 1,
             users: tuple[np.ndarray, ...] | None = None) -> np.ndarray:
        """``(n_tables, configs, users)`` values of one fold (:func:`taste_values`): of the
        given ``users`` (:meth:`users_of`; shared folds), else of fresh ones."""
        return taste_values(rng, self.means(),
                            self.users_of(rng, n_tables) if users is None else users,
                            self.taste, self.clip)


def true_only_mean_p(case: DominanceCase, n_samples: int = 2000, seed: int = 0) -> np.ndarray:
    """``theta_h`` of every hyperparameter: the expected mean p-value of its one-at-a-time
    pairs at ``case.users`` users per fold, from ``n_samples`` fresh folds (Monte Carlo error
    well below the intervals' widths; p-values: :func:`dptune.studies.simulations.coverage.fold_pvalues`)."""
    pairs = {h: case.only_pairs(h) for h in range(len(case.betas))}
    theta = expected_mean_p(case.draw, pairs, n_samples, seed, chunk=200)
    return np.array([theta[h] for h in pairs])


def expected_mean_p(draw: Callable[[np.random.Generator, int], np.ndarray],
                    pairs: dict[Any, np.ndarray], n_samples: int, seed: int,
                    chunk: int) -> dict[Any, float]:
    """The expected mean p-value of each set of ``pairs`` (key -> ``(P, 2)`` configuration
    rows) over ``n_samples`` fresh folds, ``draw(rng, T)`` giving ``T`` of them ``(T,
    configs, users)`` at a time (``chunk``; memory), p-values by
    :func:`dptune.studies.simulations.coverage.fold_pvalues`: the truth a simulated interval
    is checked against, seeded ``SeedSequence(seed, spawn_key=(10**6,))``."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(10**6,)))
    sums = dict.fromkeys(pairs, 0.0)
    for start in range(0, n_samples, chunk):
        x = draw(rng, min(chunk, n_samples - start))
        for key, p in pairs.items():
            sums[key] += float(fold_pvalues(x, p[:, 0], p[:, 1]).mean(axis=1).sum())
    return {key: s / n_samples for key, s in sums.items()}


def run_dominance(runs: Sequence[ScopeRun], folds: Iterable[tuple[np.ndarray, np.ndarray]],
                  draws: UserDraws, alpha: float, min_pairs: int,
                  expected: dict[str, list[str]] | None = None) -> tuple[dict, list[dict]]:
    """The one-at-a-time ``runs`` of one grid through the analysis' own code: every fold of
    ``folds`` (its users' ids and ``(configs, users)`` values) tested by every run, the user
    draws ``draws`` shared by the runs and cleared after each fold as the fold loop does; then
    :func:`dptune.analysis.verdict.claims.hyperparameter_comparisons` and
    :func:`dptune.analysis.verdict.dominance.dominance_table` (``expected``: its argument).
    Returns ``(dominance row, dp rows)``."""
    from dptune.analysis.verdict.claims import hyperparameter_comparisons
    from dptune.analysis.verdict.dominance import dominance_table

    for f, (ids, values) in enumerate(folds):
        view = FoldView.of_table(ids, values)
        for run in runs:
            run.add_fold(f, str(f), view)
        draws.clear()
    rows, all_draws = [], {}
    for run in runs:
        got, _, each = run.finish()
        rows += got
        all_draws.update(each)
    dp = pd.DataFrame(rows)
    comp = hyperparameter_comparisons(dp, all_draws, alpha, min_pairs)
    return dominance_table(dp, comp, min_pairs, expected).iloc[0].to_dict(), rows


def run_grid(case: DominanceCase, seed: int, n_boot: int = 1000, alpha: float = 0.05,
             min_pairs: int = 10, stability: int = 5) -> dict:
    """One run of ``case`` through the analysis' own code (the one-at-a-time scopes of
    :func:`dptune.analysis.dp.pairs.scopes`, each :class:`ScopeRun` with shared user draws and,
    when its pairs are a sample, ``stability`` pair seeds; :func:`dptune.analysis.verdict.
    claims.hyperparameter_comparisons`, :func:`dptune.analysis.verdict.dominance.
    dominance_table`): the dominance row and each scope's ``(mean p, ci_low, ci_high)`` on the
    mean-p scale."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    s0 = int(rng.integers(2**31))
    names = [f"h{i}" for i in range(len(case.betas))]
    draws = UserDraws(int(n_boot), s0)
    cap = case.possible_pairs if case.pairs is None else int(case.pairs)
    only = [s for s in scopes(case.configs(), names, value_pairs=cap) if s.kind == "only"]
    runs = [ScopeRun(ScopePlan("sim", s.name,
                               [s.pairs(k, s0) for k in range(stability if s.sampled else 1)],
                               s.n_possible, case.folds, [("m", 10)], test=paired_test("t"),
                               bootstrap=int(n_boot), seed=s0, draws=draws)) for s in only]
    kept = case.users_of(rng) if case.shared else None
    folds = ((np.arange(case.users) + (0 if case.shared else f * case.users),
              case.draw(rng, users=kept)[0]) for f in range(case.folds))
    dom, rows = run_dominance(runs, folds, draws, alpha, min_pairs)
    scale = REFERENCE_P
    intervals = {str(r["scope"])[len("only:"):]: (r["mean_p"], r["ci_low"] / scale,
                                                  r["ci_high"] / scale) for r in rows}
    return {"dominance": dom, "intervals": intervals}


def dominance_error_rates(case: DominanceCase, runs: int = 200, n_boot: int = 1000,
                          alpha: float = 0.05, seed: int = 0, case_index: int = 0,
                          truth_samples: int = 2000, stability: int = 5) -> dict:
    """One row of :data:`DOMINANCE_ERROR_COLUMNS`: ``false_dominant`` = share of runs that name a
    hyperparameter dominant although another is in truth at least as discriminating;
    ``false_over`` = share of runs with any false "significantly more than" claim; ``power`` =
    share of runs naming the truly dominant one (when there is one); ``coverage`` = share of
    the one-at-a-time intervals that hold their ``theta_h`` (Monte Carlo, :func:`true_only_mean_p`).

    Which hyperparameter is the more discriminating is read off the design, not off the Monte
    Carlo ``theta``: a hyperparameter's one-at-a-time pairs differ by ``beta_h`` times the
    spacing of its values (the others are equal within a pair, and every hyperparameter has the
    same values), so ``h`` is at least as discriminating as ``x`` exactly when ``|beta_h| >=
    |beta_x|``; equal betas are equal truths, which Monte Carlo estimates of ``theta`` would
    split by their noise (a claim for the one estimated lowest then never counted as false).

    ``stability``: the pair seeds of a sampled scope (``case.pairs`` below its possible pairs;
    the analysis' default 5, and 1 where ``stability_seconds`` affords no repeat); a claim
    holds only when it holds under every seed."""
    theta = true_only_mean_p(case, truth_samples, seed=seed * 1000 + case_index)
    names = [f"h{i}" for i in range(len(case.betas))]
    th = dict(zip(names, theta, strict=True))
    strength = dict(zip(names, np.abs(np.asarray(case.betas, dtype=float)), strict=True))
    out = [run_grid(case, replication_seed(seed, case_index, s), n_boot, alpha,
                    stability=stability) for s in range(runs)]
    false_dom, false_over, hits, cover, widths = [], [], [], [], []
    top = max(strength.values())
    best = next(iter(h for h, s in strength.items() if s == top)) \
        if sum(s == top for s in strength.values()) == 1 else None
    for o in out:
        d = o["dominance"]
        h = str(d["hyperparameter"])
        over = list(d["over"])
        false_over.append(any(strength[x] >= strength[h] for x in over))
        dominant = d["answer"] == "dominant"
        false_dom.append(dominant and any(strength[x] >= strength[h] for x in names if x != h))
        hits.append(dominant and h == best)
        for name, (_, lo, hi) in o["intervals"].items():
            cover.append(lo <= th[name] <= hi)
            widths.append(25.0 * (hi - lo))
    fd, fo, c = float(np.mean(false_dom)), float(np.mean(false_over)), float(np.mean(cover))
    n_pairs = case.possible_pairs if case.pairs is None else min(case.pairs, case.possible_pairs)
    return {"case": case.name, "hyperparameters": len(case.betas), "values": case.values,
            "betas": ", ".join(f"{b:g}" for b in case.betas), "pairs": n_pairs,
            "possible_pairs": case.possible_pairs,
            "stability": stability if n_pairs < case.possible_pairs else 1, "runs": runs,
            "false_dominant": fd, "false_dominant_se": share_sd(fd, runs),
            "false_over": fo, "false_over_se": share_sd(fo, runs),
            "power": float(np.mean(hits)) if best is not None else float("nan"),
            "coverage": c, "coverage_se": share_sd(c, len(cover)),
            "mean_width": float(np.mean(widths))}


#: The dominance study: equally dominant hyperparameters (null), and one truly dominant.
DOMINANCE_CASES = (
    DominanceCase("3 hyperparameters, equal effects", (2.0, 2.0, 2.0)),
    DominanceCase("2 hyperparameters, equal effects", (2.0, 2.0), values=4),
    DominanceCase("3 hyperparameters, no effects", (0.0, 0.0, 0.0)),
    DominanceCase("3 hyperparameters, one dominant", (4.0, 1.5, 1.5)),
    DominanceCase("3 hyperparameters, one slightly dominant", (3.0, 2.0, 2.0)),
)

#: Equal non-zero effects under other population shapes (two hyperparameters of 4 values, 24
#: one-at-a-time pairs each, 300 users x 3 folds): values clipped to [0, 1], the same users in
#: every fold with a per-user taste for each configuration kept from fold to fold, and weaker
#: effects under a stronger taste (the hardest case measured).
DOMINANCE_SHAPE_CASES = (
    DominanceCase("2 x 4 values, betas 2, shared folds, taste 0.5, clipped", (2.0, 2.0), values=4,
             shared=True, taste=0.5, clip=True),
    DominanceCase("2 x 4 values, betas 2, independent folds, clipped", (2.0, 2.0), values=4,
             clip=True),
    DominanceCase("2 x 4 values, betas 1, shared folds, taste 0.8", (1.0, 1.0), values=4,
             shared=True, taste=0.8),
    DominanceCase("2 x 4 values, betas 1, shared folds, taste 0.8, clipped", (1.0, 1.0), values=4,
             shared=True, taste=0.8, clip=True),
    DominanceCase("2 x 4 values, betas 0.5, shared folds, taste 0.9", (0.5, 0.5), values=4,
             shared=True, taste=0.9),
    DominanceCase("2 x 4 values, betas 1, shared folds, taste 0.5", (1.0, 1.0), values=4,
             shared=True, taste=0.5),
)

#: One-at-a-time scopes whose pairs are a sample (the analysis' cap below the scope's pairs: 30
#: of the 96 of each of three hyperparameters of 4 values, 48 of the 224 of each of two of 8:
#: the regime of a large grid's report), claimed under every pair seed of the stability repeats or under
#: one: equal effects over independent folds, and clipped over folds of the same users with a
#: kept taste.
DOMINANCE_SAMPLED_CASES = (
    DominanceCase("3 x 4 values, equal effects, 30 of 96 pairs", (2.0, 2.0, 2.0), values=4,
                  pairs=30),
    DominanceCase("3 x 4 values, equal effects, shared folds, taste 0.5, clipped, 30 of 96 "
                  "pairs", (2.0, 2.0, 2.0), values=4, pairs=30, shared=True, taste=0.5,
                  clip=True),
    DominanceCase("2 x 8 values, equal effects, 48 of 224 pairs", (2.0, 2.0), values=8,
                  pairs=48),
)

#: The default test run's quick variant: the standard null case and a clipped one over folds of
#: the same users with a kept taste.
QUICK_DOMINANCE_CASES = (
    DominanceCase("3 hyperparameters, equal effects", (2.0, 2.0, 2.0), users=150),
    DominanceCase("2 x 4 values, betas 2, shared folds, taste 0.5, clipped", (2.0, 2.0), values=4,
             users=150, shared=True, taste=0.5, clip=True),
)


def dominance_study(cases: Sequence[DominanceCase] = DOMINANCE_CASES, runs: int = 200,
                    n_boot: int = 1000, alpha: float = 0.05, seed: int = 0,
                    stability: int = 5) -> pd.DataFrame:
    """:func:`dominance_error_rates` of every case (one numba and one BLAS thread)."""
    with one_thread():
        rows = [dominance_error_rates(c, runs, n_boot, alpha, seed, i, stability=stability)
                for i, c in enumerate(cases)]
    return pd.DataFrame(rows, columns=DOMINANCE_ERROR_COLUMNS)
