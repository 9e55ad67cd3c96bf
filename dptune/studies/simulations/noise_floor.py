"""The noise floor's claim, measured: how often a metric is said to be *clearly below* its A/A
noise floor when in truth its DP is the floor.

A *floor case* is a stochastic algorithm whose configurations differ from each other exactly as
much as one configuration re-trained with another seed differs from itself: every trained
model ``m`` (a configuration of the grid, or a seed of the re-trained one) scores user ``u`` of
fold ``f``

    x_m(u, f) = delta_mf + b_u + sqrt(taste) t_mu + sqrt(1 - taste) e_muf,
    delta_mf ~ N(0, effect^2 / n),  b_u, t_mu, e_muf ~ N(0, 1),

``delta_mf`` the model's own shift (what a seed changes in a trained model, drawn for every
fold's training; 0 with ``effect = 0``, an exact null whose p-values are uniform), ``b_u`` the
user's level, shared by every model of a fold, ``e_muf`` the model's per-user noise on the
fold. Every fold draws fresh users (``b_u`` and the rest drawn anew), unless the folds are
``shared``: then the same ``n`` users are in every fold (user-stratified folds, as
:class:`dptune.studies.simulations.error_rates.FamilyCase` and ``DominanceCase`` model them)
and keep ``b_u`` from fold to fold, and with ``taste`` > 0 (it needs shared folds) a *per-user
effect* of every model: ``t_mu``, user ``u``'s response to model ``m`` (how much the model
suits that user beyond its shift), ``taste`` its share of the per-user noise
(``DominanceCase``'s taste; the coverage study's ``c_ku``). A configuration of the grid keeps
its ``t_mu`` from fold to fold (the same hyperparameters, trained on each fold, suit the same
users); a seed of the re-trained configuration draws its own on every fold, as a sweep's noise
floor does: it derives each re-training's seed from the fold too, so seed ``s`` of two folds are
two unrelated models. On one fold every model's ``t_mu`` has the one law, so the grid's pairs
of configurations and the seeds' A/A pairs have one law there, the metric's DP *is* its floor
and "clearly below" is a false claim. (A per-user effect that a seed kept across folds would
make the folds' A/A means move together, which the floor's interval over folds does not allow
for: measured, 5-6% false claims and 73-77% coverage at ``taste`` 0.5-0.8.) With ``clip`` every value is read as a metric bounded in
[0, 1] with about a quarter of the values 0
(:func:`dptune.studies.simulations.error_rates.clip_metric`).

A *run* draws ``folds`` folds (of fresh users, or of the same ones) and passes them through
the analysis' own code: the DP of every pair of ``configs`` configurations with its bootstrap
interval (:class:`dptune.analysis.dp.fold_loop.ScopeRun`), the floor from each fold's
``seeds (seeds - 1) / 2`` A/A p-values (:func:`dptune.analysis.noise.aa_pvalues`, the fold
loop's accumulator) and the flag of :func:`dptune.analysis.noise.compare_with_floor`.
``false_below`` is the share of runs that call the metric clearly below its floor (to be at
most about 2.5%, the one-sided level of the rule), with its Monte Carlo sd; ``false_below_ci``
is the same for the rule that read DP's interval alone (``ci_high < floor``), which ignored the
floor's own error. ``floor_coverage`` is the share of runs whose floor interval
(``floor_ci_low``, ``floor_ci_high``) holds the true floor: 12.5 under the exact null
(unclipped, ``effect = 0``, with or without per-user effects: each fold's A/A differences are
then i.i.d. normal with mean 0), else the mean floor of the case's runs (a Monte Carlo truth;
its error is the runs' sd over ``sqrt(runs)``, far inside the intervals).

Only the tests and ``docs/statistics.md`` (section 5) run this study; the analysis never
imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dptune._threads import one_thread
from dptune.analysis.dp.fold_loop import FoldCurves, FoldView, ScopePlan, ScopeRun, UserDraws
from dptune.analysis.dp.paired_tests import paired_test
from dptune.analysis.dp.pairs import sample_pairs, scope_seed
from dptune.analysis.dp.scale import REFERENCE_P
from dptune.analysis.noise import aa_pvalues, compare_with_floor
from dptune.errors import check_int, input_error
from dptune.studies.simulations.coverage import replication_seed, share_sd
from dptune.studies.simulations.error_rates import clip_metric

__all__ = ["FloorCase", "FLOOR_STUDY_COLUMNS", "FLOOR_CASES", "QUICK_FLOOR_CASES",
           "run_floor", "floor_claim_study"]

FLOOR_STUDY_COLUMNS = ["case", "configs", "users", "folds", "seeds", "effect", "folds_kind",
                       "taste", "clipped", "runs", "mean_dp", "mean_floor", "false_below",
                       "false_below_se", "false_below_ci", "false_below_ci_se",
                       "floor_coverage", "floor_coverage_se"]


@dataclass(frozen=True)
class FloorCase:
    """One population and design (module docstring): ``configs`` configurations (every pair
    tested), ``seeds`` seeds of the re-trained configuration, ``users`` users in each of
    ``folds`` folds, the models' own shifts of sd ``effect / sqrt(users)``, ``clip``; with
    ``shared`` the same users in every fold, keeping their level and (``taste`` > 0) their
    per-user effect of each model from fold to fold."""

    name: str
    configs: int = 10
    users: int = 300
    folds: int = 3
    seeds: int = 5
    effect: float = 0.0
    clip: bool = False
    shared: bool = False
    taste: float = 0.0

    def __post_init__(self) -> None:
        check_int(self.configs, "noise floor", "configs", 2)
        check_int(self.users, "noise floor", "users", 3)
        check_int(self.folds, "noise floor", "folds", 2)
        check_int(self.seeds, "noise floor", "seeds", 2)
        if not 0.0 <= float(self.taste) < 1.0:
            raise input_error("noise floor", "taste", f"must be in [0, 1), got {self.taste}")
        if self.taste and not self.shared:
            raise input_error("noise floor", "taste", "a per-user effect kept from fold to fold "
                              "needs shared folds (shared=True)")

    def users_of(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """What a user keeps from fold to fold (shared folds): the level ``b_u`` ``(1, users)``
        and the per-user effect ``t_cu`` of each of the grid's ``configs`` configurations
        ``(configs, users)``. The seeds' effects are not kept (:meth:`draw`)."""
        return (rng.standard_normal((1, self.users)),
                rng.standard_normal((self.configs, self.users)))

    def draw(self, rng: np.random.Generator, models: int,
             users: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """``(models, users)`` values of ``models`` trained models on one fold (the grid's
        configurations first): of the given ``users`` (:meth:`users_of`; shared folds), whose
        per-user effects the configurations keep while every further model (a seed) draws its
        own for this fold, else of fresh users."""
        delta = self.effect / np.sqrt(self.users) * rng.standard_normal((models, 1))
        if users is None:
            x = delta + rng.standard_normal((1, self.users)) + rng.standard_normal(
                (models, self.users))
        else:
            b, kept = users
            e = rng.standard_normal((models, self.users))
            if self.taste:
                t = np.vstack([kept, rng.standard_normal((models - len(kept), self.users))])
                e = np.sqrt(self.taste) * t + np.sqrt(1.0 - self.taste) * e
            x = delta + b + e
        return clip_metric(x) if self.clip else x


def run_floor(case: FloorCase, seed: int, n_boot: int = 1000) -> dict:
    """One run of ``case``: the metric's DP per 25 pairs with its interval, the floor, and
    whether each rule calls the metric clearly below its floor."""
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    n_pairs = case.configs * (case.configs - 1) // 2
    s0 = int(rng.integers(2**31))
    pairs = [sample_pairs(np.arange(case.configs), n_pairs, scope_seed(s0, "all"))]
    test = paired_test("t")  # the DP's test, and the A/A pairs'
    run = ScopeRun(ScopePlan("sim", "all", pairs, n_pairs, case.folds, [("m", 10)],
                             test=test, bootstrap=int(n_boot), seed=s0,
                             draws=UserDraws(int(n_boot), s0)))
    floor = FoldCurves(case.folds, n_pairs, 0.05)
    models = case.configs + case.seeds  # the grid's models, then the seeds'
    kept = case.users_of(rng) if case.shared else None
    for f in range(case.folds):
        x = case.draw(rng, models, kept)
        ids = np.arange(case.users) + (0 if case.shared else f * case.users)
        run.add_fold(f, str(f), FoldView.of_table(ids, {"m": x[:case.configs]}))
        floor.add(f, aa_pvalues(x[case.configs:], test, seed=s0))
    rows, _, _ = run.finish()
    s = floor.summary()
    dp = pd.DataFrame([{"algorithm": "sim", "scope": "all", "metric": "m", "cutoff": 10,
                        "dp_per_25": rows[0]["dp_per_25"], "ci_low": rows[0]["ci_low"],
                        "ci_high": rows[0]["ci_high"]}])
    fl = pd.DataFrame([{"algorithm": "sim", "metric": "m", "cutoff": 10,
                        "n_folds": case.folds, "floor_mean_p": s["mean_p"],
                        "floor_per_25": REFERENCE_P * s["mean_p"],
                        "floor_per_25_sd": REFERENCE_P * s["mean_p_sd"]}])
    v = compare_with_floor(dp, fl).iloc[0]
    return {"dp": float(v["dp_per_25"]), "floor": float(v["floor_per_25"]),
            "floor_ci": (float(v["floor_ci_low"]), float(v["floor_ci_high"])),
            "below": not bool(v["flagged"]),
            "below_ci": bool(v["ci_high"] < v["floor_per_25"])}


def floor_claim_study(cases: Sequence[FloorCase], runs: int = 400, n_boot: int = 1000,
                      seed: int = 0, first_index: int = 0) -> pd.DataFrame:
    """One row of :data:`FLOOR_STUDY_COLUMNS` per case, from ``runs`` runs each (one numba and
    one BLAS thread meanwhile). Case ``i`` is seeded as case ``first_index + i`` of a study, so
    the last cases of a study rerun alone give the whole study's numbers."""
    runs = check_int(runs, "noise floor", "runs", 1)
    rows = []
    with one_thread():
        for ci, case in enumerate(cases, start=int(first_index)):
            out = [run_floor(case, replication_seed(seed, ci, r), n_boot) for r in range(runs)]
            below = np.array([o["below"] for o in out])
            below_ci = np.array([o["below_ci"] for o in out])
            floors = np.array([o["floor"] for o in out])
            exact = case.effect == 0 and not case.clip
            truth = REFERENCE_P / 2 if exact else float(floors.mean())
            covered = np.array([lo <= truth <= hi for lo, hi in (o["floor_ci"] for o in out)])

            rows.append({
                "case": case.name, "configs": case.configs, "users": case.users,
                "folds": case.folds, "seeds": case.seeds, "effect": case.effect,
                "folds_kind": "shared" if case.shared else "independent", "taste": case.taste,
                "clipped": case.clip, "runs": runs,
                "mean_dp": float(np.mean([o["dp"] for o in out])),
                "mean_floor": float(floors.mean()),
                "false_below": float(below.mean()), "false_below_se": share_sd(below.mean(), runs),
                "false_below_ci": float(below_ci.mean()), "false_below_ci_se": share_sd(below_ci.mean(), runs),
                "floor_coverage": float(covered.mean()), "floor_coverage_se": share_sd(covered.mean(), runs),
            })
    return pd.DataFrame(rows, columns=FLOOR_STUDY_COLUMNS)


#: The study of ``docs/statistics.md`` section 5: an exact null and models with shifts of their
#: own (seeds that change a trained model, as BPR-MF's do), also clipped to a metric's [0, 1];
#: 3 and 10 folds; 10 and 15 configurations; 5 seeds.
FLOOR_CASES = (
    FloorCase("10 configs, 3 folds, exact null"),
    FloorCase("10 configs, 3 folds, model shifts 2", effect=2.0),
    FloorCase("10 configs, 3 folds, model shifts 2, clipped", effect=2.0, clip=True),
    FloorCase("15 configs, 10 folds, exact null", configs=15, folds=10),
    FloorCase("15 configs, 10 folds, model shifts 2", configs=15, folds=10, effect=2.0),
    FloorCase("15 configs, 10 folds, model shifts 2, clipped", configs=15, folds=10, effect=2.0,
              clip=True),
    FloorCase("10 configs, 3 folds, shared folds, per-user effects 0.8, exact null", shared=True,
              taste=0.8),
    FloorCase("10 configs, 3 folds, shared folds, per-user effects 0.5, model shifts 2, clipped",
              shared=True, taste=0.5, effect=2.0, clip=True),
    FloorCase("15 configs, 10 folds, shared folds, per-user effects 0.5, exact null", configs=15,
              folds=10, shared=True, taste=0.5),
)

#: The default test run's quick variant: smaller folds, an exact null, clipped models with
#: shifts of their own, and the same users in every fold with per-user effects.
QUICK_FLOOR_CASES = (
    FloorCase("8 configs, 5 folds, exact null", configs=8, users=150, folds=5),
    FloorCase("8 configs, 5 folds, model shifts 2, clipped", configs=8, users=150, folds=5,
              effect=2.0, clip=True),
    FloorCase("8 configs, 5 folds, shared folds, per-user effects 0.5, exact null", configs=8,
              users=150, folds=5, shared=True, taste=0.5),
)
