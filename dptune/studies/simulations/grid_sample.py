"""The grid sample, measured: bias and coverage of the DP of a subset of a grid's units, against
the value of the full grid.

A *case* is a synthetic grid shaped like BPR-MF's: two unit hyperparameters ``a`` and ``b``
(``n_a x n_b`` units, the unit's training run) and an inner one ``i`` (``n_i`` configurations
per unit, its iteration snapshots). User ``u`` of configuration ``(a, b, i)`` in a fold scores

    x(u) = mu(a, b, i) + b_u + e(u),      b_u, e ~ N(0, 1),
    mu(a, b, i) = (effect / sqrt(n)) (s_a + s_b + s_i),

with ``s`` evenly spaced in [-1, 1] over each hyperparameter's values, so that two
configurations that share a value of ``a`` or ``b`` differ less (higher p-values) and two of one
unit least: the strata of pairs that the grid sample weights (:mod:`dptune.analysis.dp.units`)
really differ, and an estimator that ignored them would be biased.

A *replication* draws fresh users for every fold and a fresh design order
(:func:`dptune.sweeper.design.design_order`, seeded: a random relabelling of the values and
order of the rows), then computes with the tool's own code (:class:`dptune.analysis.dp.
fold_loop.ScopeRun`, scope ``all``, the t-test, a seeded sample of ``pairs`` pairs):

- the **full grid's** DP (every unit; no interval needed);
- for every budget of whole rounds, the **grid sample's** DP on the first units of the design
  order, with its 95% interval (users and units resampled).

The target is the full grid's expected value ``theta = E[full-grid mean p]`` (over users and
the full grid's pair sample), estimated by the mean of the replications' full-grid DPs (its
Monte Carlo error is reported). Per budget: the **bias** (mean grid-sample DP minus
``theta``), the sd of the grid-sample DP over the replications (its actual error beside the
bias), the mean **half-width** of the interval, ``|bias|`` over the half-width, and the
**coverage** (share of intervals holding ``theta``), with its Monte Carlo sd
``sqrt(c (1 - c) / R)``. All on the
scale of DP per 25 pairs. Every draw is seeded from ``(seed, case, replication)``.

**On real data** (:func:`real_grid_sample_study`): a store that holds a grid in full is the
truth, and prefixes of whole rounds of fresh design orders of its units are analysed as the
stores a budget would leave (its users fixed: what varies is the sample of units and pairs).
``experiments/grid-sample-check-ml100k.toml`` is such a store (BPR-MF 5 x 5 x 14 on
MovieLens-100K, 10 folds); its numbers are in ``docs/statistics.md`` section 16.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dptune._threads import one_thread
from dptune.analysis.dp.fold_loop import FoldView, ScopePlan, ScopeRun, UserDraws
from dptune.analysis.dp.paired_tests import paired_test
from dptune.analysis.dp.pairs import scope_seed, scopes
from dptune.analysis.dp.scale import REFERENCE_P
from dptune.analysis.dp.units import UnitSample, pair_design, unit_multipliers
from dptune.analysis.options import MIN_PAIRS
from dptune.errors import check_int, input_error
from dptune.store._store import ResultStore
from dptune.studies.simulations.coverage import replication_seed, share_sd
from dptune.studies.simulations.error_rates import (
    check_taste,
    claim_rates,
    expected_mean_p,
    family_lambdas,
    family_users,
    family_values,
    run_dominance,
    taste_users,
    taste_values,
)
from dptune.sweeper.design import design_order

__all__ = ["GridCase", "GRID_SAMPLE_STUDY_COLUMNS", "FULL_GRID_CASES", "QUICK_GRID_CASES",
           "ONE_ROUND_CASES",
           "REAL_GRID_SAMPLE_COLUMNS", "real_grid_sample_study",
           "replicate", "grid_sample_study", "GridClaimsCase", "GRID_CLAIMS_COLUMNS",
           "GRID_CLAIMS_CASES", "GRID_CLAIMS_SHAPE_CASES", "QUICK_GRID_CLAIMS_CASES",
           "claims_replicate",
           "grid_sample_claims_study", "GridDominanceCase", "GRID_DOMINANCE_COLUMNS",
           "GRID_DOMINANCE_CASES", "QUICK_GRID_DOMINANCE_CASES", "dominance_replicate",
           "grid_sample_dominance_study"]

GRID_SAMPLE_STUDY_COLUMNS = ["case", "units_total", "configs_total", "rounds", "units", "budget",
                       "replications", "truth", "truth_se", "mean_estimate", "bias",
                       "estimate_sd", "mean_half_width", "bias_over_half_width", "coverage", "coverage_se",
                       "below", "above"]


@dataclass(frozen=True)
class GridCase:
    """One synthetic grid (module docstring): ``n_a x n_b`` units of ``n_i`` configurations,
    ``users`` per fold, ``folds``, ``effect``; ``rounds``: the budgets studied, in whole rounds
    of the design order (a round holds ``max(n_a, n_b)`` units); ``pairs``: the cap of scope
    ``all``; ``bootstrap``: replicates of each interval; ``betas``: the weights of ``s_a, s_b,
    s_i`` in ``mu`` (1 each: the module docstring's grid)."""

    name: str
    n_a: int
    n_b: int
    n_i: int
    users: int
    folds: int
    effect: float
    rounds: tuple[int, ...]
    pairs: int = 1000
    bootstrap: int = 400
    betas: tuple[float, float, float] = (1.0, 1.0, 1.0)

    @property
    def units_total(self) -> int:
        return self.n_a * self.n_b

    @property
    def round_size(self) -> int:
        return max(self.n_a, self.n_b)

    def configs(self) -> pd.DataFrame:
        """The grid: ``config_id, a, b, i``, unit ``k = a n_b + b`` holding ids ``k n_i ..``."""
        a, b, i = np.meshgrid(np.arange(self.n_a), np.arange(self.n_b), np.arange(self.n_i),
                              indexing="ij")
        return pd.DataFrame({"config_id": np.arange(a.size), "a": a.ravel(), "b": b.ravel(),
                             "i": i.ravel()})

    def means(self) -> np.ndarray:
        """``mu`` of every configuration, in config_id order: ``(effect / sqrt(n)) (beta_a s_a +
        beta_b s_b + beta_i s_i)``."""
        def spread(n: int) -> np.ndarray:
            return np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        c = self.configs()
        ba, bb, bi = (float(b) for b in self.betas)
        s = (ba * spread(self.n_a)[c["a"]] + bb * spread(self.n_b)[c["b"]]
             + bi * spread(self.n_i)[c["i"]])
        return self.effect * s / np.sqrt(self.users)


#: The documented study: a 40 x 40 grid of 3-configuration units (4,800 configurations, rounds
#: of 40 units = 2.5%) at budgets of 5%, 10%, 25% and 50% of the units, with moderate and
#: strong differences.
FULL_GRID_CASES = (
    GridCase("40 x 40 units x 3, moderate", 40, 40, 3, 200, 3, 1.0, (2, 4, 10, 20)),
    GridCase("40 x 40 units x 3, strong", 40, 40, 3, 200, 3, 2.0, (2, 4, 10, 20)),
)

#: The default test run's quick variant: a 10 x 10 grid at one round (10%), 20% and 50% of its
#: units.
QUICK_GRID_CASES = (
    GridCase("10 x 10 units x 3, moderate", 10, 10, 3, 120, 3, 1.0, (1, 2, 5), pairs=300,
             bootstrap=200),
)

#: The smallest budget with a verdict on the paper's BPR-MF shape: one round (15 of 15 x 15
#: units of 14 configurations), 120 users x 3 folds, 1,000 pairs per scope.
ONE_ROUND_CASES = (
    GridCase("15 x 15 units x 14, moderate", 15, 15, 14, 120, 3, 1.0, (1,), pairs=1000,
             bootstrap=200),
)


class _Sample:
    """The first ``m`` units of a design order of ``case`` as the fold loop sees them."""

    def __init__(self, case: GridCase, configs: pd.DataFrame, order: np.ndarray, m: int):
        n_i = case.n_i
        units = tuple(tuple(range(k * n_i, (k + 1) * n_i)) for k in range(case.units_total))
        self.present = np.sort(order[:m])
        self.sample = UnitSample("grid", units, self.present, 0, configs, ("a", "b"))
        self.ids = self.sample.present_configs
        self.configs = configs[configs["config_id"].isin(self.ids)]

    def units(self, bootstrap: int, seed: int) -> np.ndarray | None:
        """The bootstrap's unit multipliers of this sample, seeded as the fold loop seeds an
        algorithm's (:func:`dptune.analysis.dp.fold_loop.plan_runs`); None when it holds every
        unit (the full grid's own route)."""
        if self.sample.complete:
            return None
        return unit_multipliers(bootstrap, len(self.present), len(self.sample.units),
                                scope_seed(seed, "grid|units"))

    def designer(self, kind: str, hyperparameter: str = "") -> Callable | None:
        """The :class:`ScopePlan` ``designer`` of a scope of ``kind`` (pairs -> their
        :func:`dptune.analysis.dp.units.pair_design`); None when it holds every unit."""
        if self.sample.complete:
            return None
        return lambda pairs: pair_design(self.sample, pairs, kind, hyperparameter)


def _fold_values(case: GridCase, mu: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(configs, users)`` values of one fold's fresh users."""
    return mu[:, None] + rng.standard_normal((1, case.users)) \
        + rng.standard_normal((len(mu), case.users))


def _estimate(case: GridCase, s: _Sample | None, configs: pd.DataFrame,
              folds: list[np.ndarray], seed: int, bootstrap: int) -> tuple[float, float, float]:
    """``(DP per 25, ci_low, ci_high)`` of scope ``all`` of the full grid (``s`` None) or of
    a grid sample, by the tool's :class:`ScopeRun`."""
    cfg = configs if s is None else s.configs
    scope = scopes(cfg, ["a", "b", "i"], case.pairs)[0]
    designer = None if s is None else s.designer("all")
    units = None if s is None else s.units(bootstrap, seed)
    run = ScopeRun(ScopePlan("grid", "all", [scope.pairs(0, seed)], scope.n_possible,
                             case.folds, [("m", 1)], test=paired_test("t"), bootstrap=bootstrap,
                             seed=seed, draws=UserDraws(bootstrap, seed), designer=designer,
                             units=units))
    for f, x in enumerate(folds):
        run.add_fold(f, str(f), FoldView.of_table(np.arange(case.users) + f * case.users, x))
    row = run.finish()[0][0]
    return float(row["dp_per_25"]), float(row["ci_low"]), float(row["ci_high"])


def replicate(case: GridCase, seed: int) -> dict[str, Any]:
    """One replication: the full grid's DP per 25 pairs and, per budget in ``case.rounds``,
    the grid sample's ``(estimate, low, high)``."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    configs = case.configs()
    mu = case.means()
    folds = [_fold_values(case, mu, rng) for _ in range(case.folds)]
    order = design_order((case.n_a, case.n_b), int(rng.integers(2**31)))
    positions = np.array([a * case.n_b + b for a, b in order.points])
    out: dict[str, Any] = {"full": _estimate(case, None, configs, folds, seed, 0)[0]}
    for r in case.rounds:
        m = min(case.units_total, r * case.round_size)
        out[r] = _estimate(case, _Sample(case, configs, positions, m), configs, folds, seed,
                           case.bootstrap)
    return out


def grid_sample_study(cases: Sequence[GridCase] = FULL_GRID_CASES, replications: int = 200,
                      seed: int = 0) -> pd.DataFrame:
    """One row per (case, budget) of :data:`GRID_SAMPLE_STUDY_COLUMNS` (module docstring); one
    numba and one BLAS thread meanwhile (many small bootstraps)."""
    replications = check_int(replications, "grid sample study", "replications", 2)
    rows = []
    with one_thread():
        for ci, case in enumerate(cases):
            reps = [replicate(case, replication_seed(seed, ci, k))
                    for k in range(replications)]
            full = np.array([r["full"] for r in reps])
            theta, theta_se = full.mean(), full.std(ddof=1) / np.sqrt(len(full))
            for rounds in case.rounds:
                est, lo, hi = np.array([r[rounds] for r in reps]).T
                hit = (lo <= theta) & (theta <= hi)
                c = float(hit.mean())
                half = float(((hi - lo) / 2).mean())
                units = min(case.units_total, rounds * case.round_size)
                rows.append({
                    "case": case.name, "units_total": case.units_total,
                    "configs_total": case.units_total * case.n_i, "rounds": rounds,
                    "units": units, "budget": units / case.units_total,
                    "replications": replications, "truth": theta, "truth_se": theta_se,
                    "mean_estimate": float(est.mean()), "bias": float(est.mean() - theta),
                    "estimate_sd": float(est.std(ddof=1)), "mean_half_width": half,
                    "bias_over_half_width": float(abs(est.mean() - theta) / half),
                    "coverage": c, "coverage_se": share_sd(c, replications),
                    "below": float((hi < theta).mean()), "above": float((lo > theta).mean()),
                })
    return pd.DataFrame(rows, columns=GRID_SAMPLE_STUDY_COLUMNS)


#: real_grid_sample_study's summary: one row per budget.
REAL_GRID_SAMPLE_COLUMNS = ["algorithm", "rounds", "units", "units_total", "budget", "designs",
                            "metric_cutoffs", "mean_abs_bias", "max_abs_bias",
                            "max_abs_bias_over_se", "design_sd", "full_half_width",
                            "mean_half_width", "expected_half_width", "width_ratio",
                            "coverage_of_full"]


class _UnitsView:
    """A result store seen as if it held only ``units`` of ``algorithm``'s grid (its trials
    of other units dropped; every other read goes to the store)."""

    def __init__(self, store: ResultStore, algorithm: str, units: set[str]) -> None:
        self._store, self._algorithm, self._units = store, algorithm, set(units)

    def trials(self) -> pd.DataFrame:
        t = self._store.trials()
        keep = (t["algorithm"] != self._algorithm) | t["unit"].astype(str).isin(self._units)
        return t[keep]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _scope_all(estimate: Any, algorithm: str) -> pd.DataFrame:
    t = estimate.table
    t = t[(t["algorithm"] == algorithm) & (t["scope"] == "all")]
    return t.set_index(["metric", "cutoff"])[["dp_per_25", "ci_low", "ci_high"]]


def real_grid_sample_study(results: str | Path, algorithm: str = "bpr-mf",
                           rounds: Sequence[int] = (2, 3, 4), designs: int = 20,
                           seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The grid sample on real data: a store holding ``algorithm``'s *full* grid is the truth;
    for ``designs`` fresh design orders of its units (seeded from ``seed``) and each budget of
    whole ``rounds``, the analysis of the store seen as holding only that prefix is compared
    with it, scope ``all`` of every metric@N, with the experiment's own analysis options
    (stability repeats off: they do not change the interval).

    The users are the store's own in every analysis, so what varies from design to design is
    the sample of units and pairs; the interval also holds the users' part, which does not vary
    here. The check is therefore: (1) **bias**: the mean over the designs of the budgeted DP
    minus the full grid's DP over *every* pair of the scope (bootstrap off), per metric@N,
    against its Monte Carlo se (``max_abs_bias_over_se``); (2) **width**: the budgeted
    interval's mean half-width against ``sqrt(h_full^2 + (1.96 sd_design)^2)``, the full grid's
    own half-width (users and pairs, its default analysis) combined with the spread the
    designs actually show (``width_ratio``; 1 when the interval adds for the units what the
    units actually add); (3) how often the budgeted interval holds the full grid's value
    (``coverage_of_full``, above 95% here by construction: the users' part does not vary).

    Returns ``(per design, summary)``: one row per design, budget and metric@N (estimate,
    interval, truth), and one row per budget of :data:`REAL_GRID_SAMPLE_COLUMNS` (DP per 25
    pairs; sd and bias averaged over the metric@Ns, the largest bias beside)."""
    from dptune.analysis.dp.fold_loop import run_fold_loop
    from dptune.analysis.options import AnalysisOptions
    from dptune.store._store import ResultStore
    from dptune.sweeper.design import read_design

    store = ResultStore(results)
    man = store.manifest()
    base = AnalysisOptions.resolve(man)
    base = base.replace(seed=man["seeds"]["analysis"] if base.seed is None else base.seed,
                        stability=1)
    n_configs = len(store.configs(algorithm))
    every = n_configs * (n_configs - 1) // 2
    truth = _scope_all(run_fold_loop(store, base.replace(pairs=every, bootstrap=0),
                                     algorithms=[algorithm]), algorithm)["dp_per_25"]
    full = _scope_all(run_fold_loop(store, base, algorithms=[algorithm]), algorithm)
    full_half = float(((full["ci_high"] - full["ci_low"]) / 2).mean())
    recorded = read_design(results).algorithms[algorithm]
    positions = design_order(recorded.sizes, recorded.seed).points
    unit_at = {positions[u.position]: u.unit for u in recorded.units}
    rows = []
    for d in range(check_int(designs, "grid sample study", "designs", 2)):
        d_seed = replication_seed(seed, 0, d)
        order = design_order(recorded.sizes, d_seed)
        for r in rounds:
            n_units = order.round_ends[min(r, order.rounds) - 1]
            view = _UnitsView(store, algorithm, {unit_at[p] for p in order.points[:n_units]})
            got = _scope_all(run_fold_loop(view, base.replace(seed=d_seed % 2**31),
                                           algorithms=[algorithm]), algorithm)
            for (metric, cutoff), row in got.iterrows():
                rows.append({"design": d, "rounds": r, "units": n_units, "metric": metric,
                             "cutoff": cutoff, "estimate": row["dp_per_25"],
                             "ci_low": row["ci_low"], "ci_high": row["ci_high"],
                             "truth": float(truth.loc[(metric, cutoff)])})
    per = pd.DataFrame(rows)
    summary = []
    for r, g in per.groupby("rounds"):
        by_mc = g.groupby(["metric", "cutoff"])
        bias = by_mc["estimate"].mean() - by_mc["truth"].first()
        sd = by_mc["estimate"].std(ddof=1)
        half = float(((g["ci_high"] - g["ci_low"]) / 2).mean())
        design_sd = float(np.sqrt((sd ** 2).mean()))
        expected = float(np.sqrt(full_half ** 2 + (1.96 * design_sd) ** 2))
        held = (g["ci_low"] <= g["truth"]) & (g["truth"] <= g["ci_high"])
        n_units = int(g["units"].iloc[0])
        summary.append({
            "algorithm": algorithm, "rounds": int(r), "units": n_units,
            "units_total": len(recorded.units), "budget": n_units / len(recorded.units),
            "designs": int(g["design"].nunique()), "metric_cutoffs": len(by_mc),
            "mean_abs_bias": float(bias.abs().mean()), "max_abs_bias": float(bias.abs().max()),
            "max_abs_bias_over_se": float((bias.abs() / (sd / np.sqrt(by_mc.size()))).max()),
            "design_sd": design_sd, "full_half_width": full_half, "mean_half_width": half,
            "expected_half_width": expected, "width_ratio": half / expected,
            "coverage_of_full": float(held.mean())})
    return per, pd.DataFrame(summary, columns=REAL_GRID_SAMPLE_COLUMNS)


# --------------------------------------------------------------------------------------------
# the metrics' claims on a grid sample
# --------------------------------------------------------------------------------------------

#: :func:`grid_sample_claims_study`'s summary: one row per (case, budget).
GRID_CLAIMS_COLUMNS = ["case", "metrics", "weaker", "rho", "folds_kind", "clipped", "rounds",
                       "units", "units_total", "replications", "false_rows", "false_rows_se",
                       "power"]


@dataclass(frozen=True)
class GridClaimsCase:
    """A family of ``metrics`` metrics on the synthetic grid ``grid``: user ``u`` of
    configuration ``k`` scores on metric ``m``

        x_mk(u) = lambda_m mu_k + b_u + sqrt(rho) z_ku + sqrt(1 - rho) e_mku,

    ``mu_k`` the grid's structured means (:meth:`GridCase.means`), ``b_u, z_ku, e_mku ~ N(0,
    1)``; the last ``weaker`` metrics have ``lambda = weak`` (truly less discriminative), the
    others 1 (exactly as discriminative as each other). With ``shared`` the same users, keeping
    ``b_u, z_ku``, are in every fold; with ``clip`` every value is read as a metric bounded in
    [0, 1] with about a quarter of the values 0
    (:func:`dptune.studies.simulations.error_rates.clip_metric`)."""

    name: str
    grid: GridCase
    metrics: int = 4
    weaker: int = 0
    weak: float = 0.5
    rho: float = 0.7
    shared: bool = False
    clip: bool = False

    @property
    def lambdas(self) -> np.ndarray:
        return family_lambdas(self.metrics, self.weaker, self.weak)


def claims_replicate(case: GridClaimsCase, seed: int, alpha: float = 0.05) -> dict[int, dict]:
    """One replication: fresh users and a fresh design order; per budget in
    ``case.grid.rounds``, the recommended metric (lowest DP of scope ``all``) and the metrics
    the verdict's rule names significantly less discriminative than it
    (:func:`dptune.analysis.dp.stability.family_claims` on the grid sample's paired replicates,
    users and units resampled, one pair sample)."""
    from dptune.analysis.dp.stability import family_claims

    g = case.grid
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    configs, mu = g.configs(), g.means()
    n_c = len(mu)
    mcs = [(f"m{j}", 10) for j in range(case.metrics)]
    lam = case.lambdas

    kept = family_users(rng, n_c, g.users) if case.shared else None
    folds = [family_values(rng, lam, mu,
                           kept if kept is not None else family_users(rng, n_c, g.users),
                           case.rho, case.clip) for _ in range(g.folds)]
    order = design_order((g.n_a, g.n_b), int(rng.integers(2**31)))
    positions = np.array([a * g.n_b + b for a, b in order.points])
    out: dict[int, dict] = {}
    for r in g.rounds:
        s = _Sample(g, configs, positions, min(g.units_total, r * g.round_size))
        scope = scopes(s.configs, ["a", "b", "i"], g.pairs)[0]
        run = ScopeRun(ScopePlan("grid", "all", [scope.pairs(0, seed)], scope.n_possible,
                                 g.folds, mcs, test=paired_test("t"), bootstrap=g.bootstrap,
                                 seed=seed, draws=UserDraws(g.bootstrap, seed),
                                 designer=s.designer("all"), units=s.units(g.bootstrap, seed)))
        for f, x in enumerate(folds):
            ids_f = np.arange(g.users) + (0 if case.shared else f * g.users)
            run.add_fold(f, str(f), FoldView.of_table(
                ids_f, {f"m{i}": t for i, t in enumerate(x)}))
        rows, _, draws = run.finish()
        rec = int(np.argmin([row["mean_p"] for row in rows]))
        claims = family_claims({0: {m: draws[("grid", "all", m, c)][0] for m, c in mcs}}, alpha)
        c = claims[claims["metric_a"] == f"m{rec}"].set_index("metric_b")
        out[r] = {"recommended": rec, "named": [int(m[1:]) for m in c.index[c["held"]]]}
    return out


def grid_sample_claims_study(cases: Sequence[GridClaimsCase], replications: int = 200,
                             seed: int = 0, alpha: float = 0.05) -> pd.DataFrame:
    """One row per (case, budget) of :data:`GRID_CLAIMS_COLUMNS`: ``false_rows``, the share of
    replications naming a metric whose ``lambda`` is at least the recommended one's (the
    family-wise error rate of the claims, at most ``alpha``), with its Monte Carlo sd, and
    ``power``, the share of the truly weaker metrics named (when there are some). One numba and
    one BLAS thread meanwhile."""
    replications = check_int(replications, "grid sample claims", "replications", 1)
    rows = []
    with one_thread():
        for ci, case in enumerate(cases):
            reps = [claims_replicate(case, replication_seed(seed, ci, k), alpha)
                    for k in range(replications)]
            for r in case.grid.rounds:
                fr, power = claim_rates(case.lambdas, [rep[r] for rep in reps])
                rows.append({
                    "case": case.name, "metrics": case.metrics, "weaker": case.weaker,
                    "rho": case.rho, "folds_kind": "shared" if case.shared else "independent",
                    "clipped": case.clip, "rounds": r,
                    "units": min(case.grid.units_total, r * case.grid.round_size),
                    "units_total": case.grid.units_total, "replications": replications,
                    "false_rows": fr, "false_rows_se": share_sd(fr, replications),
                    "power": power,
                })
    return pd.DataFrame(rows, columns=GRID_CLAIMS_COLUMNS)


#: The documented study: one round of the paper's BPR-MF shape (15 x 15 units of 14
#: configurations, 1,000 pairs) and one and two rounds of a 10 x 10 grid of 3, with 4 equally
#: discriminative metrics (independent folds, rho 0.7; the same users in every fold, rho 0), and
#: one truly weaker metric for power.
GRID_CLAIMS_CASES = (
    GridClaimsCase("15 x 15 x 14, 4 equal metrics, rho 0.7",
                   GridCase("15 x 15 units x 14", 15, 15, 14, 120, 3, 1.0, (1,), pairs=1000,
                            bootstrap=200)),
    GridClaimsCase("15 x 15 x 14, 4 equal metrics, rho 0, same users",
                   GridCase("15 x 15 units x 14", 15, 15, 14, 120, 3, 1.0, (1,), pairs=1000,
                            bootstrap=200), rho=0.0, shared=True),
    GridClaimsCase("10 x 10 x 3, 4 equal metrics, rho 0.7",
                   GridCase("10 x 10 units x 3", 10, 10, 3, 120, 3, 1.0, (1, 2), pairs=300,
                            bootstrap=200)),
    GridClaimsCase("15 x 15 x 14, 4 metrics, 1 weaker (0.5)",
                   GridCase("15 x 15 units x 14", 15, 15, 14, 120, 3, 1.0, (1,), pairs=1000,
                            bootstrap=200), weaker=1, weak=0.5),
)

#: The claims on a grid sample under another population shape: every value clipped to a
#: metric's [0, 1] with about a quarter of them 0; one round of the paper's BPR-MF shape, 4
#: equally discriminative independent metrics over the same users in every fold (the
#: hardest null case of the families' study), and one truly weaker metric for power.
GRID_CLAIMS_SHAPE_CASES = (
    GridClaimsCase("15 x 15 x 14, 4 equal metrics, rho 0, same users, clipped",
                   GridCase("15 x 15 units x 14", 15, 15, 14, 120, 3, 1.0, (1,), pairs=1000,
                            bootstrap=200), rho=0.0, shared=True, clip=True),
    GridClaimsCase("15 x 15 x 14, 4 metrics, 1 weaker (0.5), clipped",
                   GridCase("15 x 15 units x 14", 15, 15, 14, 120, 3, 1.0, (1,), pairs=1000,
                            bootstrap=200), weaker=1, weak=0.5, clip=True),
)

#: The default test run's quick variant: one round of a 10 x 10 grid, 4 equal metrics.
QUICK_GRID_CLAIMS_CASES = (
    GridClaimsCase("10 x 10 x 3, 4 equal metrics, rho 0.7",
                   GridCase("10 x 10 units x 3", 10, 10, 3, 120, 3, 1.0, (1,), pairs=300,
                            bootstrap=200)),
)


# --------------------------------------------------------------------------------------------
# the dominant hyperparameter on a grid sample
# --------------------------------------------------------------------------------------------

#: :func:`grid_sample_dominance_study`'s summary: one row per (case, budget).
GRID_DOMINANCE_COLUMNS = ["case", "betas", "folds_kind", "taste", "clipped", "rounds", "units",
                          "units_total", "stability", "replications", "false_dominant",
                          "false_dominant_se", "false_over", "false_over_se", "power",
                          "all_compared", "mean_pairs", "coverage", "coverage_se",
                          "coverage_by", "below_by", "above_by"]

_GRID_HYPERPARAMETERS = ("a", "b", "i")


@dataclass(frozen=True)
class GridDominanceCase:
    """The dominant hyperparameter where the design report decides it: the one-at-a-time
    scopes of a grid sample (the first whole rounds of a design order of ``grid``'s units),
    each sampled down to ``grid.pairs`` pairs under ``stability`` pair seeds when it holds
    more, weighted to stand for the full grid's and bootstrapped over users and units, as the
    analysis does it (:func:`dptune.analysis.dp.fold_loop.plan_runs`).

    User ``u`` of configuration ``c`` scores ``x_c(u) = mu_c + b_u + sqrt(taste) t_cu +
    sqrt(1 - taste) e_cu`` (:func:`dptune.studies.simulations.error_rates.taste_values`),
    ``mu_c`` the grid's means with weights ``grid.betas`` (:meth:`GridCase.means`); with
    ``shared`` the same users, keeping ``b_u`` and their taste ``t_cu``, are in every fold;
    with ``clip`` every value is read as a metric bounded in [0, 1] with about a quarter of the
    values 0.

    The three hyperparameters have the same number of values (``n_a = n_b = n_i``), so the
    truth is read off the design: ``h`` is at least as discriminating as ``x`` over the full
    grid exactly when ``|beta_h| >= |beta_x|``, and equal betas are equal truths, however
    differently the sample's units give each its pairs (the inner ``i`` has every pair of a
    unit present; ``a`` and ``b`` only those between present units that share the other)."""

    name: str
    grid: GridCase
    shared: bool = False
    taste: float = 0.0
    clip: bool = False
    stability: int = 5

    def __post_init__(self) -> None:
        g = self.grid
        if not g.n_a == g.n_b == g.n_i:
            raise input_error("grid sample dominance", "grid",
                              f"needs as many values of each hyperparameter (n_a = n_b = n_i), "
                              f"got {g.n_a}, {g.n_b}, {g.n_i}")
        check_taste(self.taste, self.shared)
        check_int(self.stability, "grid sample dominance", "stability", 1)

    @property
    def strength(self) -> dict[str, float]:
        """How discriminating each hyperparameter truly is, up to a common factor."""
        return dict(zip(_GRID_HYPERPARAMETERS, np.abs(np.asarray(self.grid.betas, dtype=float)),
                        strict=True))

    def truth(self, n_samples: int = 200, seed: int = 0) -> dict[str, float]:
        """The full grid's expected mean p-value of every one-at-a-time scope, by scope name:
        over every pair of the scope, at ``grid.users`` users per fold, from ``n_samples`` fresh
        folds (:func:`dptune.studies.simulations.coverage.fold_pvalues`); what each
        one-at-a-time interval of a grid sample estimates."""
        g = self.grid
        configs, mu = g.configs(), g.means()
        every = len(mu) * (len(mu) - 1) // 2
        wanted = {x.name: x.pairs(0, 0)
                  for x in scopes(configs, list(_GRID_HYPERPARAMETERS), 1, every)
                  if x.kind == "only"}
        return expected_mean_p(
            lambda rng, n: taste_values(rng, mu, taste_users(rng, len(mu), g.users, n),
                                        self.taste, self.clip), wanted, n_samples, seed, chunk=10)


def dominance_replicate(case: GridDominanceCase, seed: int, alpha: float = 0.05,
                        min_pairs: int = MIN_PAIRS) -> dict[int, dict]:
    """One replication: fresh users and a fresh design order; per budget in
    ``case.grid.rounds``, the dominance row of :func:`dptune.analysis.verdict.dominance.
    dominance_table` (the hyperparameters' comparisons of :func:`dptune.analysis.verdict.
    claims.hyperparameter_comparisons` on the grid sample's one-at-a-time scopes), each
    scope's pair count (``pairs``, by hyperparameter) and ``(DP per 25, ci_low, ci_high)``
    (``scopes``, by name)."""
    g = case.grid
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    configs, mu = g.configs(), g.means()
    kept = taste_users(rng, len(mu), g.users) if case.shared else None
    folds = [taste_values(rng, mu, kept if kept is not None else
                          taste_users(rng, len(mu), g.users), case.taste, case.clip)[0]
             for _ in range(g.folds)]
    order = design_order((g.n_a, g.n_b), int(rng.integers(2**31)))
    positions = np.array([a * g.n_b + b for a, b in order.points])
    hps = list(_GRID_HYPERPARAMETERS)
    out: dict[int, dict] = {}
    for r in g.rounds:
        s = _Sample(g, configs, positions, min(g.units_total, r * g.round_size))
        units = s.units(g.bootstrap, seed)
        draws = UserDraws(g.bootstrap, seed)
        only = [x for x in scopes(s.configs, hps, g.pairs, g.pairs) if x.kind == "only"]
        runs = [ScopeRun(ScopePlan(
            "grid", x.name, [x.pairs(k, seed) for k in range(case.stability if x.sampled else 1)],
            x.n_possible, g.folds, [("m", 10)], test=paired_test("t"), bootstrap=g.bootstrap,
            seed=seed, draws=draws,
            designer=s.designer("only", x.hyperparameter), units=units)) for x in only]
        row, rows = run_dominance(
            runs, ((np.arange(g.users) + (0 if case.shared else f * g.users), x)
                   for f, x in enumerate(folds)), draws, alpha, min_pairs, {"grid": hps})
        out[r] = row | {"pairs": {str(x["scope"])[len("only:"):]: int(x["n_pairs"])
                                  for x in rows},
                        "scopes": {str(x["scope"]): (float(x["dp_per_25"]), float(x["ci_low"]),
                                                     float(x["ci_high"])) for x in rows}}
    return out


def grid_sample_dominance_study(cases: Sequence[GridDominanceCase], replications: int = 200,
                                seed: int = 0, alpha: float = 0.05,
                                truth_samples: int = 200) -> pd.DataFrame:
    """One row per (case, budget) of :data:`GRID_DOMINANCE_COLUMNS`: ``false_dominant``, the
    share of replications naming a hyperparameter dominant although another is in truth at
    least as discriminating; ``false_over``, the share with any false "significantly more
    than" (the words of an answer ``none``), each with its Monte Carlo sd; ``power``, the share
    naming the truly dominant one (when there is one); ``all_compared``, the share in which
    every hyperparameter had enough one-at-a-time pairs to be compared; ``mean_pairs``, each
    hyperparameter's mean pair count (``a/b/i``); ``coverage``, the share of the
    one-at-a-time intervals that hold the full grid's value (:meth:`GridDominanceCase.truth`),
    with its Monte Carlo sd, and per hyperparameter (``coverage_by``, ``a/b/i`` in percent);
    ``below_by`` and ``above_by``, per hyperparameter likewise, the shares of its intervals
    that miss the value wholly below it and wholly above it (a miss is one or the other, so
    the three add up to 100). One numba and one BLAS thread meanwhile."""
    replications = check_int(replications, "grid sample dominance", "replications", 1)
    rows = []
    with one_thread():
        for ci, case in enumerate(cases):
            theta = case.truth(truth_samples, seed=replication_seed(seed, ci, 10**6))
            reps = [dominance_replicate(case, replication_seed(seed, ci, k), alpha)
                    for k in range(replications)]
            strength = case.strength
            top = max(strength.values())
            best = ([h for h, v in strength.items() if v == top][0]
                    if sum(v == top for v in strength.values()) == 1 else None)
            for r in case.grid.rounds:
                got = [rep[r] for rep in reps]
                false_dom = [d["answer"] == "dominant" and any(
                    strength[x] >= strength[d["hyperparameter"]] for x in strength
                    if x != d["hyperparameter"]) for d in got]
                false_over = [bool(d["hyperparameter"]) and any(
                    strength[x] >= strength[d["hyperparameter"]] for x in d["over"])
                    for d in got]
                hits = [d["answer"] == "dominant" and d["hyperparameter"] == best for d in got]
                fd, fo = float(np.mean(false_dom)), float(np.mean(false_over))
                pairs = {h: np.mean([d["pairs"].get(h, 0) for d in got]) for h in strength}
                side = {h: _sides(got, theta, f"only:{h}") for h in strength}
                cover = np.concatenate([side[h] == "held" for h in strength])
                cov = float(np.mean(cover)) if len(cover) else float("nan")
                rows.append({
                    "case": case.name, "betas": ", ".join(f"{b:g}" for b in case.grid.betas),
                    "folds_kind": "shared" if case.shared else "independent",
                    "taste": case.taste, "clipped": case.clip, "rounds": r,
                    "units": min(case.grid.units_total, r * case.grid.round_size),
                    "units_total": case.grid.units_total, "stability": case.stability,
                    "replications": replications, "false_dominant": fd,
                    "false_dominant_se": share_sd(fd, replications), "false_over": fo,
                    "false_over_se": share_sd(fo, replications),
                    "power": float(np.mean(hits)) if best is not None else float("nan"),
                    "all_compared": float(np.mean([int(d["compared"]) == len(strength)
                                                   for d in got])),
                    "mean_pairs": "/".join(f"{pairs[h]:.0f}" for h in strength),
                    "coverage": cov, "coverage_se": share_sd(cov, len(cover)),
                    **{column: "/".join(f"{100 * np.mean(side[h] == s):.1f}" if len(side[h])
                                        else "-" for h in strength)
                       for column, s in (("coverage_by", "held"), ("below_by", "below"),
                                         ("above_by", "above"))},
                })
    return pd.DataFrame(rows, columns=GRID_DOMINANCE_COLUMNS)


def _sides(got: Sequence[dict], theta: dict[str, float], name: str) -> np.ndarray:
    """For each interval of scope ``name`` in the replications ``got`` (those with one),
    ``"held"`` when it holds the scope's full-grid value ``theta`` (mean-p scale; intervals
    per 25), else ``"below"`` when it lies wholly below it (its upper end short of it) and
    ``"above"`` when wholly above."""
    value = REFERENCE_P * theta[name]
    return np.array(["held" if lo <= value <= hi else "below" if hi < value else "above"
                     for d in got if name in d["scopes"] for (_, lo, hi) in [d["scopes"][name]]
                     if np.isfinite(lo)], dtype=object)


def _bpr_shape(betas: tuple[float, float, float], rounds: tuple[int, ...] = (1,)) -> GridCase:
    return GridCase(f"14 x 14 units x 14, betas {', '.join(f'{b:g}' for b in betas)}", 14, 14,
                    14, 120, 3, 1.0, rounds, pairs=200, bootstrap=200, betas=betas)


#: The documented study: the paper's BPR-MF shape as the design report meets it (14 x 14 units
#: of 14 configurations, three hyperparameters of 14 values; one and two rounds of the design
#: order; one-at-a-time scopes capped at 200 pairs, the design's cap, under 5 pair seeds and
#: under 1), with equal effects (the null) over independent folds, folds of the same users with
#: a kept taste, and clipped values; and one truly dominant hyperparameter for the power.
GRID_DOMINANCE_CASES = (
    GridDominanceCase("equal effects, 5 pair seeds", _bpr_shape((2.0, 2.0, 2.0), (1, 2))),
    GridDominanceCase("equal effects, 1 pair seed", _bpr_shape((2.0, 2.0, 2.0)), stability=1),
    GridDominanceCase("equal effects, same users, taste 0.5, clipped",
                      _bpr_shape((2.0, 2.0, 2.0)), shared=True, taste=0.5, clip=True),
    GridDominanceCase("equal weak effects, same users, taste 0.8",
                      _bpr_shape((1.0, 1.0, 1.0)), shared=True, taste=0.8),
    GridDominanceCase("one dominant (a)", _bpr_shape((6.0, 2.0, 2.0), (1, 2))),
)

#: The default test run's quick variant: one round of a 6 x 6 x 6 grid, equal effects,
#: 60-pair scopes under 3 pair seeds.
QUICK_GRID_DOMINANCE_CASES = (
    GridDominanceCase("6 x 6 units x 6, equal effects",
                      GridCase("6 x 6 units x 6", 6, 6, 6, 100, 3, 1.0, (1,), pairs=60,
                               bootstrap=200, betas=(2.0, 2.0, 2.0)), stability=3),
)
