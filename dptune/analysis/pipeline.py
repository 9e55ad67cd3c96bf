"""The analysis of one result store: :func:`analyze` computes every table into an
:class:`AnalysisResult` (numbers only; ``dptune.report`` renders it).

Glue only, in the order the parts cite each other: the one fold loop
(:func:`dptune.analysis.dp.fold_loop.run_fold_loop`: every DP, its interval and the bootstrap's
paired replicates), the fold-size guard, the best configurations
(:mod:`dptune.analysis.selection`), the A/A noise floor (:mod:`dptune.analysis.noise`),
importance (:mod:`dptune.analysis.importance.study`), then the comparisons, the dominant
hyperparameter, the downstream check and the verdict (:mod:`dptune.analysis.verdict`).
Everything here reads the store; nothing reaches back into the sweep, and nothing here writes.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dptune.analysis import noise as noisemod
from dptune.analysis.dp import degenerate as dg
from dptune.analysis.dp.fold_loop import run_fold_loop
from dptune.analysis.importance import study as impmod
from dptune.analysis.options import AnalysisOptions
from dptune.analysis.result import AnalysisResult
from dptune.analysis.selection import best_table, configuration_count, datasets_table
from dptune.analysis.verdict.build import build_verdict
from dptune.analysis.verdict.families import family_judges
from dptune.errors import did_you_mean, input_error, plain, unexpected_type
from dptune.store._files import check_not_study
from dptune.store._per_user_store import PerUserStore
from dptune.store._store import ResultStore
from dptune.vocab import METRICS, metric_rank

__all__ = ["analyze", "outside_options", "configurations_table", "check_arguments",
           "check_primary", "check_families"]


def analyze(store: ResultStore | str | Path | pd.DataFrame,
            options: AnalysisOptions | None = None, progress: bool = False, *,
            configs: pd.DataFrame | None = None,
            hyperparameters: Sequence[str] = ()) -> AnalysisResult:
    """Analyse results: DP of every metric@N, its interval, the claims and the verdict.

    ``store`` is a :class:`dptune.ResultStore`, its directory, or a per-user DataFrame from
    anywhere (one row per configuration, fold, user and metric@N: columns ``[algorithm],
    config_id | system, [fold], user, metric, [cutoff], value``; its configurations'
    hyperparameters as a ``configs`` table or as the columns named in ``hyperparameters``),
    which takes the route of every outside input
    (:meth:`dptune.store._per_user_store.PerUserStore.from_frame`); the path of a per-user file
    is refused with a line pointing to :func:`dptune.discriminative_power`, which reads it.
    ``options`` default to the experiment's own ``[analysis]`` settings recorded in the store's
    manifest (:meth:`AnalysisOptions.resolve`), or for a per-user table the options of outside data
    (:meth:`AnalysisOptions.for_outside`). Given options are used as they are on a store, a
    ``seed`` of ``None`` taking the manifest's analysis seed; on a per-user table they are
    taken as ``dptune dp --per-user`` takes its flags (:func:`outside_options`: what needs a
    sweep, the noise floor and importance without hyperparameters, stays off unless asked for).
    A pure function of the data and the options; ``progress`` shows a progress bar. A wrong
    argument is one :class:`dptune.errors.DptuneError` naming it. See :class:`AnalysisResult`
    for what it holds.

    Example (``store`` from :func:`dptune.sweep`)::

        res = dptune.analyze(store, dptune.AnalysisOptions(pairs=25, bootstrap=1000))
        dp = res.dp.table
        dp[dp["scope"] == "all"][["algorithm", "metric", "cutoff", "dp_per_25", "n_pairs"]]
    """
    check_arguments("analyze", options, progress, configs, hyperparameters)
    if isinstance(store, pd.DataFrame):
        store = PerUserStore.from_frame(store, configs=configs, hyperparameters=hyperparameters)
    elif configs is not None or len(hyperparameters):
        raise input_error("analyze", "configs" if configs is not None else "hyperparameters",
                          "only a per-user table takes them (a store knows its own)")
    if isinstance(store, (str, Path)):
        if Path(store).is_file() and Path(store).suffix != ".toml":  # .toml: ResultStore's line
            raise input_error("analyze", "store", f"{store} is a file, not a results directory; "
                              "read a per-user file (CSV, TSV or Parquet) with "
                              "dptune.discriminative_power(path)")
        store = ResultStore(store)
    if not callable(getattr(store, "manifest", None)):
        raise input_error("analyze", "store", "needs a result store, its directory or a "
                          f"per-user pandas DataFrame, got {unexpected_type(store)}")
    man = store.manifest()
    check_not_study(Path(getattr(store, "root", "per_user")), man)
    if isinstance(store, PerUserStore):
        opts = outside_options(store, options)
    else:
        opts = AnalysisOptions.resolve(man) if options is None else options
    if opts.seed is None:
        seed = (man.get("seeds") or {}).get("analysis")
        if seed is None:
            raise input_error("analyze", "options", "seed: the store records no analysis "
                              "seed; give one (AnalysisOptions(seed=...))")
        opts = opts.replace(seed=seed)
    check_primary(store, opts)
    check_families(store, opts)
    if opts.noise_seeds > 0 and isinstance(store, ResultStore):
        noisemod.check_noise_complete(store)  # before the fold loop: nothing computed in vain
    # fold sizes are recorded: refused now, before the fold loop's progress bar; a per-user
    # table's refusal names its file (a sweep's, the analysis)
    source = (str((man.get("dataset") or {}).get("source") or "analysis")
              if isinstance(store, PerUserStore) else "analysis")
    dg.check_fold_users(dg.recorded_fold_users(store), opts.min_fold_users, source)
    fewest = functools.partial(_fewest_users, store)  # whose users they are, in a refusal
    dg.check_fold_users(dg.complete_fold_users(store, opts.pairs), opts.min_fold_users, source,
                        which=fewest)
    estimate = run_fold_loop(store, opts, progress)
    dg.check_fold_users(dg.fold_user_counts(estimate.pvalues), opts.min_fold_users, source,
                        which=fewest)
    with_dp = set(estimate.table["algorithm"])
    estimate = dataclasses.replace(estimate, without={
        a: configuration_count(store, a) for a in store.algorithms() if a not in with_dp})
    primary = (opts.primary_metric, opts.primary_cutoff)
    best = best_table(store, primary, family_judges(opts.families, primary[0],
                                                        estimate.table["metric"]))
    if opts.noise_seeds > 0:
        stage(progress, "the A/A noise floor")
    noise = _noise_floor(store, opts, estimate.table) if opts.noise_seeds > 0 else None
    if opts.importance:
        stage(progress, "hyperparameter importance")
    importance = (impmod.hyperparameter_importance(store, cutoff=primary[1], seed=opts.seed)
                  if opts.importance else None)
    stage(progress, "claims, dominance and the verdict" + (
        f" (bootstrap of {opts.bootstrap} replicates)" if opts.bootstrap else ""))
    parts = build_verdict(store, estimate, opts, best=best,
                          floor=None if noise is None else noise.versus_dp)
    return AnalysisResult(dp=estimate, comparisons=parts.comparisons,
                          dominance=parts.dominance, downstream=parts.downstream,
                          verdict=parts.verdict, best=best, datasets=datasets_table(man),
                          noise=noise, importance=importance, options=opts, manifest=man,
                          configurations=configurations_table(store))


def stage(progress: bool, what: str) -> None:
    """With ``progress``, one line on stderr naming the stage of the analysis that starts now
    (after the fold loop's bar: the noise floor, importance, the claims and the report take
    seconds to a minute on a full grid, and a bar at 100% would seem stuck)."""
    if progress:
        import sys

        print(f"analysis: {what}", file=sys.stderr, flush=True)


def outside_options(store: PerUserStore, options: AnalysisOptions | None) -> AnalysisOptions:
    """The options of outside data given ``options``, as ``dptune dp --per-user`` takes its
    flags: each field ``options`` sets to other than its default is given
    (:meth:`AnalysisOptions.for_outside`), each field left at its default takes the default of
    outside data. So ``AnalysisOptions(seed=1)`` is seed 1 with the noise floor off (it needs
    retraining) and importance on only when the table names hyperparameters, while a noise
    floor asked for (``noise_seeds=3``) is the one-line error of ``dptune dp --noise-seeds 3``.
    Options already of outside data come back unchanged."""
    if options is None:
        return AnalysisOptions.for_outside(store)
    default = AnalysisOptions()
    given = {k: v for k, v in options.to_dict().items() if v != getattr(default, k)}
    return AnalysisOptions.for_outside(store, **given)


def configurations_table(store: ResultStore | PerUserStore) -> pd.DataFrame:
    """Every configuration of the store, one row each: ``algorithm, config_id``, then the
    hyperparameter columns (empty where an algorithm does not use one; a per-user table's
    ``system`` names), in the store's algorithm order. The report names configurations by it
    (the noise floor's, the importance section's counts) without reading the store.

    A column that holds integers wherever an algorithm fills it (``factors``, ``k``) stays
    integer: pandas' nullable ``Int64``, empty for the algorithms without it, where a plain
    concatenation pads it to float64 (``factors = 10.0``)."""
    frames = [store.configs(a).assign(algorithm=a) for a in store.algorithms()]
    frames = [f for f in frames if len(f)]
    if not frames:
        return pd.DataFrame({"algorithm": pd.Series(dtype=object),
                             "config_id": pd.Series(dtype="int64")})
    table = pd.concat(frames, ignore_index=True)
    for col in table.columns:
        kinds = [f[col].dtype for f in frames if col in f.columns]
        if table[col].dtype.kind == "f" and kinds and all(
                pd.api.types.is_integer_dtype(k) for k in kinds):
            table[col] = table[col].astype("Int64")
    return table[["algorithm", "config_id",
                  *[c for c in table.columns if c not in ("algorithm", "config_id")]]]


def check_arguments(where: str, options: object, progress: object, configs: object,
                    hyperparameters: object) -> None:
    """One error naming the argument of :func:`analyze` (or of the front function ``where``)
    that has the wrong type, before any work; the data itself is checked where it is read."""
    if options is not None and not isinstance(options, AnalysisOptions):
        raise input_error(where, "options", "needs dptune.AnalysisOptions (or None for the "
                          f"store's own), got {type(options).__name__}")
    if not isinstance(progress, bool):
        raise input_error(where, "progress", f"must be True or False, got {plain(progress)}")
    if configs is not None and not isinstance(configs, pd.DataFrame):
        raise input_error(where, "configs", "needs a pandas DataFrame of configurations, "
                          f"got {unexpected_type(configs)}")
    # any sequence of names but a lone string: a list, a tuple, ``df.columns[5:]`` (a pandas
    # Index), a one-dimensional numpy array of str
    names = isinstance(hyperparameters, (Sequence, pd.Index)) or (
        isinstance(hyperparameters, np.ndarray) and hyperparameters.ndim == 1)
    if isinstance(hyperparameters, (str, bytes)) or not names \
            or not all(isinstance(h, str) for h in hyperparameters):
        raise input_error(where, "hyperparameters", "needs a list of column names, got "
                          f"{plain(hyperparameters)}")


def check_primary(store: ResultStore | PerUserStore, opts: AnalysisOptions) -> None:
    """One error naming the option when the results hold no ``primary_metric@primary_cutoff``
    (it picks the noise-floor configurations and judges the choices on the test split), before
    any work: an experiment's options are checked against its evaluation when it is read, given
    options and a per-user table's only here."""
    have = {(str(m), int(c)) for a in store.algorithms() for m, c in store.metric_cutoffs(a)}
    metric, cutoff = opts.primary_metric, opts.primary_cutoff
    if (metric, cutoff) in have:
        return
    cuts = sorted(c for m, c in have if m == metric)
    if cuts:
        raise input_error("analysis", "primary_cutoff", f"the results have no {metric}@{cutoff}; "
                          f"{metric} has N = {', '.join(map(str, cuts))}")
    names = sorted({m for m, _ in have}, key=metric_rank)
    raise input_error("analysis", "primary_metric", f"the results have no {metric!r}; they have "
                      f"{', '.join(names)}")


def _fewest_users(store: ResultStore | PerUserStore, alg: str, fold: str) -> str:
    """Whose users a fold's tests had too few of: pairs are tested on the users every
    configuration of their scope has values for, so a configuration with values for few users
    (outside data) makes them few in a fold of many: ``configuration 3 (system=b.run) has
    values for 5``; empty when every configuration has the same users (a sweep's: the fold is
    small). Counted on the first metric@N, for up to 200 configurations (an error's detail)."""
    configs = store.configs(alg).set_index("config_id")
    ids = [int(c) for c in configs.index]
    if not ids or len(ids) > 200:
        return ""
    metric, cutoff = store.metric_cutoffs(alg)[0]
    counts = {c: len(store.read_matrix(alg, metric, cutoff, fold, [c])[0]) for c in ids}
    low = min(counts, key=lambda c: (counts[c], c))
    if counts[low] == max(counts.values()):  # every configuration has them all: the fold's
        return ""
    system = configs["system"].get(low) if "system" in configs.columns else None
    name = f"{low} (system={system})" if isinstance(system, str) else str(low)
    return (f"the users every configuration of a scope has values for; configuration {name} "
            f"has values for {counts[low]}")


def check_families(store: ResultStore | PerUserStore, opts: AnalysisOptions) -> None:
    """One error naming the family when it names a metric that is neither dptune's nor one of
    the results' (outside data's own metrics, ``hr``, may join a family: a typo must not
    quietly leave the metric it meant to its default family), before any work. A dptune
    metric the results lack is no error: the default families name every one."""
    have = {str(m) for a in store.algorithms() for m, _ in store.metric_cutoffs(a)}
    for name, members in opts.families:
        for m in members:
            if m not in METRICS and m not in have:
                names = sorted(have, key=metric_rank)
                # an outside metric's name is kept as written: HR is not hr
                same = [n for n in names if n.lower() == m.lower()]
                raise input_error("analysis", f"families.{name}", f"{m!r} is neither a dptune "
                                  f"metric ({', '.join(METRICS)}) nor one of the results' "
                                  f"(they have {', '.join(names)})"
                                  + (f" (did you mean {same[0]!r}? an outside metric's name is "
                                     "matched as written)" if same
                                     else did_you_mean(m, [*METRICS, *names])))


def _noise_floor(store: ResultStore, opts: AnalysisOptions,
                 dp: object) -> noisemod.NoiseFloor | None:
    """The A/A noise floor of the store's noise-floor runs beside DP, on the P of each
    (algorithm, metric@N)'s ``all`` scope; None without noise-floor runs."""
    all_dp = dp[dp["scope"] == "all"]  # type: ignore[index]
    n_pairs = {(a, m, int(c)): int(n) for a, m, c, n in zip(
        all_dp["algorithm"], all_dp["metric"], all_dp["cutoff"], all_dp["n_pairs"], strict=True)}
    nf = noisemod.noise_floor_table(store, opts, n_pairs)
    if nf.empty:
        return None
    return dataclasses.replace(nf, versus_dp=noisemod.compare_with_floor(dp, nf.floor))
