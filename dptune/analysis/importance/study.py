"""Hyperparameter importance from optuna (fANOVA, PED-ANOVA) beside the DP-based dominance.

For one algorithm with more than one free hyperparameter and one
metric@N, an in-memory optuna study gets one completed trial per configuration:

- ``params``: the free hyperparameters, with the distribution their grid values imply
  (:func:`distribution_for`): integers -> ``IntDistribution(min, max)``, other numbers ->
  ``FloatDistribution(min, max)``, both on a log scale when every value is positive and the grid
  is closer to geometric than to arithmetic spacing; anything else (text, booleans) ->
  ``CategoricalDistribution`` over the grid values;
- ``value``: ``y_c = (1/F) sum_f ybar_{c,f}``, the mean over the F validation folds of the
  per-fold mean over users (``ResultStore.summary()``), maximised.

Evaluators (``optuna.importance``):

- ``fanova``: optuna's ``FanovaImportanceEvaluator(seed=seed)`` (a random forest of 64 trees
  fitted to ``y`` and the functional-ANOVA decomposition of its variance; needs scikit-learn).
  The importance of ``h`` is its share of the total variance of the marginal predictions.
  Computed by :func:`fanova_importances`: the same forest, the decomposition vectorised over the
  leaves (about 35x faster than optuna's per-cell tree walks, equal to 1e-9; optuna's own stays
  available as ``fanova-optuna``, the test oracle).
- ``ped-anova``: ``PedAnovaImportanceEvaluator(target_quantile=q)`` with
  ``q = min(0.5, max(0.1, 5 / n))`` for ``n`` configurations, so that at least five trials are
  in the top quantile (optuna's advice); the importance of ``h`` is the Pearson divergence
  between the Parzen density of ``h`` among the top-``q`` trials and among all trials.

Both are normalised here to sum to 1 over the hyperparameters (``I_h / sum_g I_g``); a study
whose values are all equal has no importance (NaN). Deterministic for a fixed seed.

These importances explain the variance of the *mean* metric over the grid; which hyperparameter
separates configurations most reliably is answered on the DP scale by
:mod:`dptune.analysis.verdict.dominance`, and the report shows both, each on its own scale.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis.importance.fanova import (
    fanova_importances,
    fanova_inputs,
    fanova_study,
    tree_marginal_variances,
)
from dptune.analysis.source import ResultSource
from dptune.errors import input_error
from dptune.store._index import validation_means
from dptune.vocab import METRICS

__all__ = [
    "EVALUATORS",
    "IMPORTANCE_COLUMNS",
    "distribution_for",
    "search_space",
    "build_study",
    "config_target",
    "ped_target_quantile",
    "ped_top_set",
    "param_importances",
    "fanova_inputs",
    "fanova_study",
    "fanova_importances",
    "tree_marginal_variances",
    "importance_table",
    "hyperparameter_importance",
]

#: Evaluators computed, in output order.
EVALUATORS: tuple[str, ...] = ("fanova", "ped-anova")
EVALUATOR_NAMES: dict[str, str] = {"fanova": "fANOVA", "ped-anova": "PED-ANOVA"}
#: importance.csv. ``top_configs`` (PED-ANOVA rows): how many configurations are in the top
#: quantile; ``same_top_as`` (PED-ANOVA rows): the first metric of the algorithm (metric order)
#: whose top quantile holds exactly the same configurations, when it is not this one: PED-ANOVA
#: sees a metric only through that set, so the two rows are identical by construction.
IMPORTANCE_COLUMNS = ["algorithm", "metric", "cutoff", "evaluator", "hyperparameter",
                      "importance", "top_configs", "same_top_as"]
_METRIC_ORDER = METRICS


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _log_scale(values: Sequence[float]) -> bool:
    """Geometric rather than arithmetic spacing: all values > 0 and the coefficient of variation
    of the gaps of ``log v`` is at most that of the gaps of ``v`` (two values: ratio >= 4)."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    if v.size < 2 or v[0] <= 0:
        return False
    if v.size == 2:
        return bool(v[1] / v[0] >= 4.0)
    lin = np.diff(v)
    lg = np.diff(np.log(v))

    def cv(x: np.ndarray) -> float:
        return float(np.std(x) / np.mean(x)) if np.mean(x) > 0 else math.inf

    return cv(lg) <= cv(lin)


def distribution_for(values: Sequence[Any]) -> Any:
    """The optuna distribution of one hyperparameter from its distinct grid values.

    All integral numbers -> ``IntDistribution(min, max, log)``; other numbers ->
    ``FloatDistribution(min, max, log)``; ``log`` by :func:`_log_scale` (geometric spacing, all
    values positive); otherwise ``CategoricalDistribution`` of the values in the given order.
    """
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    vals = [v.item() if hasattr(v, "item") else v for v in values]
    vals = [v for v in vals if not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        raise input_error("importance", "values", "no grid values")
    if all(_is_number(v) for v in vals):
        nums = [float(v) for v in vals]
        log = _log_scale(nums)
        if all(x.is_integer() for x in nums):
            return IntDistribution(int(min(nums)), int(max(nums)), log=log and min(nums) >= 1)
        return FloatDistribution(min(nums), max(nums), log=log)
    uniq: list[Any] = []
    for v in vals:
        if v not in uniq:
            uniq.append(v)
    return CategoricalDistribution(uniq)


def search_space(configs: pd.DataFrame, hyperparameters: Sequence[str]) -> dict[str, Any]:
    """Distributions of the hyperparameters that take more than one value in ``configs``."""
    space = {}
    for h in hyperparameters:
        if h not in configs.columns:
            raise input_error("configs", h, "missing column")
        distinct = list(pd.unique(configs[h].dropna()))
        if len(distinct) > 1:
            space[h] = distribution_for(distinct)
    return space


def _param_value(dist: Any, v: Any) -> Any:
    from optuna.distributions import IntDistribution

    v = v.item() if hasattr(v, "item") else v
    if isinstance(dist, IntDistribution):
        return int(v)
    if _is_number(v) and not isinstance(v, int):
        return float(v)
    return v


def build_study(configs: pd.DataFrame, hyperparameters: Sequence[str],
                values: Mapping[int, float] | None = None) -> Any:
    """In-memory optuna study (maximise), one completed trial per configuration with a value;
    each trial's ``user_attrs["config_id"]`` names its configuration.

    ``configs`` has ``config_id`` and hyperparameter columns; ``values[config_id]`` is the
    objective. Configurations without a finite value are left out. ``values=None``: every
    configuration, each with the value 0, for a study whose objectives are given to
    :func:`param_importances` as a ``target`` (:func:`config_target`): one study then serves
    every metric (optuna copies each trial it adds, the bulk of the cost of a study).
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = search_space(configs, hyperparameters)
    study = optuna.create_study(direction="maximize")
    trials = []
    # rows as dicts: itertuples renames a column that is no identifier (a hyperparameter
    # named ``k&n`` or ``1st``), and getattr then found no such field
    for row in configs.sort_values("config_id", kind="stable").to_dict("records"):
        cid = int(row["config_id"])
        y = 0.0 if values is None else values.get(cid)
        if y is None or not math.isfinite(float(y)):
            continue
        params = {h: _param_value(d, row[h]) for h, d in space.items()}
        trials.append(optuna.trial.create_trial(params=params, distributions=space, value=float(y),
                                                user_attrs={"config_id": cid}))
    study.add_trials(trials)
    return study


def ped_target_quantile(n_trials: int) -> float:
    """PED-ANOVA's ``target_quantile``: ``min(0.5, max(0.1, 5 / n))``."""
    return min(0.5, max(0.1, 5.0 / max(int(n_trials), 1)))


def ped_top_set(values: Mapping[int, float]) -> frozenset[int]:
    """The configurations in PED-ANOVA's top quantile of ``values`` (config_id -> objective,
    maximised; non-finite values left out): those at least as good as the ``ceil(q n)``-th
    best, ``q`` = :func:`ped_target_quantile` of the ``n`` finite values (ties included), as
    optuna's quantile filter selects them. PED-ANOVA's importances depend on the objective only
    through this set: two metrics with the same set get the same importances."""
    finite = {int(c): float(v) for c, v in values.items() if math.isfinite(float(v))}
    if not finite:
        return frozenset()
    ranked = sorted(finite.values(), reverse=True)
    k = int(math.ceil(ped_target_quantile(len(ranked)) * len(ranked)))
    return frozenset(c for c, v in finite.items() if v >= ranked[k - 1])


def config_target(values: Mapping[int, float]) -> Callable[[Any], float]:
    """``target(trial) = values[config_id]`` (NaN when absent) for a study of
    :func:`build_study`: the objective one metric gives each configuration."""
    return lambda t: float(values.get(int(t.user_attrs["config_id"]), math.nan))


def _finite_trials(study: Any, target: Callable[[Any], float] | None) -> list[Any]:
    """The trials that take part: every trial, or those with a finite ``target``."""
    trials = study.get_trials(deepcopy=False)  # `study.trials` deep-copies every trial
    return trials if target is None else [t for t in trials if math.isfinite(target(t))]


def param_importances(study: Any, evaluator: str, seed: int = 0,
                      target: Callable[[Any], float] | None = None) -> dict[str, float]:
    """Normalised importances (sum 1) of every parameter of ``study`` for one evaluator; NaN for
    all when the evaluator finds no variance to attribute.

    The objective (maximised) is each trial's value, or ``target(trial)`` when given (trials
    where it is not finite are left out); both give the same numbers for the same objective."""
    import optuna
    from optuna.importance import FanovaImportanceEvaluator, PedAnovaImportanceEvaluator

    trials = _finite_trials(study, target)
    params = sorted(trials[0].distributions) if trials else []
    if not params:
        return {}
    if evaluator == "fanova":
        return _normalised(dict(zip(params, fanova_study(study, params, seed=seed, target=target),
                                    strict=True)))
    if evaluator == "fanova-optuna":  # optuna's own, pure-Python implementation: the test oracle
        ev = FanovaImportanceEvaluator(seed=int(seed))
    elif evaluator == "ped-anova":
        ev = PedAnovaImportanceEvaluator(target_quantile=ped_target_quantile(len(trials)))
    else:
        raise input_error("importance", "evaluator",
                          f"unknown evaluator {evaluator!r}; choose one of {', '.join(EVALUATORS)}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            # optuna's PED-ANOVA minimises a given target: the objective is negated for it
            ped_target = None if target is None else (lambda t: -target(t))
            raw = optuna.importance.get_param_importances(
                study, evaluator=ev, params=params, normalize=False,
                target=ped_target if evaluator == "ped-anova" else target)
        except RuntimeError:  # fANOVA: zero variance in every tree (constant objective)
            return {h: float("nan") for h in params}
        except ImportError as err:  # pragma: no cover - scikit-learn is a dependency
            raise input_error("importance", evaluator, f"missing dependency: {err}") from None
    return _normalised({h: float(raw[h]) for h in params})


def _normalised(raw: Mapping[str, float]) -> dict[str, float]:
    """``I_h / sum_g I_g``; NaN for every parameter when the sum is not positive (or NaN)."""
    total = float(sum(raw.values()))
    if not total > 0.0:
        return {h: float("nan") for h in raw}
    return {h: float(v) / total for h, v in raw.items()}


def importance_table(configs: pd.DataFrame, hyperparameters: Sequence[str],
                     values: Mapping[int, float], seed: int = 0,
                     evaluators: Sequence[str] = EVALUATORS,
                     study: Any = None) -> pd.DataFrame:
    """``evaluator, hyperparameter, importance`` for one (algorithm, metric@N); hyperparameters in
    the given order. Empty when fewer than two hyperparameters vary or fewer than two trials.

    The study holds every configuration and the values come in as optuna's ``target``
    (:func:`config_target`), so that one study, ``build_study(configs, hyperparameters)``,
    serves every metric of the algorithm (``study``; built here when not given). The numbers are
    those of a study built from ``values`` (a test checks them against it)."""
    study = build_study(configs, hyperparameters) if study is None else study
    target = config_target(values)
    trials = _finite_trials(study, target)
    space = trials[0].distributions if trials else {}
    hps = [h for h in hyperparameters if h in space]
    rows = []
    if len(hps) >= 2 and len(trials) >= 2:
        for ev in evaluators:
            imp = param_importances(study, ev, seed, target)
            rows += [(ev, h, imp[h]) for h in hps]
    return pd.DataFrame(rows, columns=["evaluator", "hyperparameter", "importance"])


def hyperparameter_importance(store: ResultSource, cutoff: int, metrics: Sequence[str] | None = None,
                              seed: int = 0, evaluators: Sequence[str] = EVALUATORS,
                              algorithms: Sequence[str] | None = None) -> pd.DataFrame:
    """``importance.csv``: importances of every algorithm with more than one free
    hyperparameter, for each metric at ``cutoff`` (default: the store's metrics).

    ``store`` is a :class:`dptune.store._store.ResultStore` (``algorithms``, ``configs``,
    ``hyperparameters``, ``summary``, ``metric_cutoffs``). Columns :data:`IMPORTANCE_COLUMNS`
    (PED-ANOVA's top quantile and the metric whose top quantile it repeats, if any),
    rows in store algorithm order, metric order of ``dptune.metrics.METRICS``, evaluator order,
    grid order of the hyperparameters.
    """
    summary = store.summary()
    jobs = []
    for alg in (store.algorithms() if algorithms is None else algorithms):
        hps = list(store.hyperparameters(alg))
        if len(hps) < 2:
            continue
        configs = store.configs(alg)
        have = [m for m, c in store.metric_cutoffs(alg) if int(c) == int(cutoff)]
        ms = [m for m in (metrics or have) if m in have]
        ms = sorted(dict.fromkeys(ms), key=lambda m: (_METRIC_ORDER.index(m)
                                                      if m in _METRIC_ORDER else 99, m))
        study = build_study(configs, hps) if ms else None  # one study for every metric
        for m in ms:
            # the objective: the store's one score of a configuration (validation folds)
            vals = validation_means(summary, alg, m, cutoff).sort_values("config_id")
            jobs.append((alg, m, (configs, hps, dict(zip(vals["config_id"].astype(int),
                                                         vals["validation_mean"], strict=True)),
                                  seed, evaluators, study)))
    tables = [importance_table(*args) for _, _, args in jobs]
    out = []
    first: dict[tuple[str, frozenset[int]], str] = {}  # (algorithm, top set) -> first metric
    for (alg, m, args), t in zip(jobs, tables, strict=True):
        if t.empty:
            continue
        top = ped_top_set(args[2])
        same = first.setdefault((alg, top), m)
        ped = t["evaluator"] == "ped-anova"
        t["top_configs"] = np.where(ped, float(len(top)), np.nan)
        t["same_top_as"] = np.where(ped & (same != m), same, "")
        t.insert(0, "cutoff", int(cutoff))
        t.insert(0, "metric", m)
        t.insert(0, "algorithm", alg)
        out.append(t)
    if not out:
        return pd.DataFrame(columns=IMPORTANCE_COLUMNS)
    return pd.concat(out, ignore_index=True)[IMPORTANCE_COLUMNS]


# --------------------------------------------------------------------------------------------
# DP-based dominance and the comparison
