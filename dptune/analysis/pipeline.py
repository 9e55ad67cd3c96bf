"""The analysis of one result store: :func:`analyze` computes every table into an
:class:`AnalysisResult` (data only; ``dptune.report`` renders it).

Glue only: the DP lives in :mod:`dptune.analysis.dp.engine`, the A/A noise floor in
:mod:`dptune.analysis.noise`, importance in :mod:`dptune.analysis.importance.study`, the best
configurations in :mod:`dptune.analysis.selection`. Everything here reads the store; nothing
reaches back into the sweep, and nothing here writes a report.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from dptune.analysis import noise as noisemod
from dptune.analysis.importance import study as impmod
from dptune.analysis.options import AnalysisOptions
from dptune.analysis.result import AnalysisResult, DPResult
from dptune.analysis.route import analyze_with_robust, verdict_of
from dptune.analysis.selection import best_table, datasets_table, no_dp_reason
from dptune.analysis.subgrid import grid_from_store, write_subgrid
from dptune.analysis.verdict.rules import family_judges
from dptune.errors import input_error
from dptune.store._store import ResultStore

__all__ = ["analyze", "best_table", "grid_from_store",
           "write_subgrid"]


def analyze(store: ResultStore | str | Path, options: AnalysisOptions | None = None,
            progress: bool = False) -> AnalysisResult:
    """Analyse a result store: DP of every metric@N, the A/A noise floor, importance, selection.

    ``store`` is a :class:`dptune.ResultStore` or its directory. ``options`` default to the
    experiment's own ``[analysis]`` settings recorded in the store's manifest
    (:meth:`AnalysisOptions.resolve`); given options are used as they are, a ``seed`` of
    ``None`` taking the manifest's analysis seed. Computes (see :class:`AnalysisResult`):

    - ``dp`` (:class:`DPResult`): ``pairs, pvalues, table, curves`` by
      :func:`dptune.analysis.dp.engine.analyze`, every scope on its pairs (every pair up to
      ``options.pairs``, else a seeded sample of that many); ``table`` (dp.csv) also carries
      DP per 25 pairs and, for scope ``all``, its interval; on the same ``all`` pairs, the DP
      table with its bootstrap interval (``interval``) and the bootstrap ranking of every
      stability repeat (``ranking``) (:mod:`dptune.analysis.route`); ``without`` (algorithms
      with no pair of configurations, and why);
    - with ``noise_seeds > 0`` and noise-floor runs in the store, ``noise``: the A/A floor, its
      curves and p-values, and DP beside it (``noise.versus_dp``, :mod:`dptune.analysis.noise`);
    - with ``importance``, the fANOVA / PED-ANOVA ``importance`` table;
    - ``best`` (the configuration each metric@N picks), ``datasets`` (Table 1's row);
    - the ``verdict``, which cites all of the above (:mod:`dptune.analysis.route`).

    A pure function of the store and the options. ``progress`` shows a progress bar.

    Example (``store`` from :func:`dptune.sweep`)::

        res = dptune.analyze(store, dptune.AnalysisOptions(pairs=25, bootstrap=1000))
        dp = res.dp.table
        dp[dp["scope"] == "all"]                # DP per algorithm, metric, cutoff
    """
    if isinstance(store, (str, Path)):
        store = ResultStore(store)
    if not callable(getattr(store, "manifest", None)):
        raise input_error("analyze", "store", f"needs a result store or its directory, got "
                          f"{type(store).__name__} (a per-user table: dptune.discriminative_power)")
    man = store.manifest()
    opts = AnalysisOptions.resolve(man) if options is None else options
    if opts.seed is None:
        opts = opts.replace(seed=man["seeds"]["analysis"])
    # the DP of every scope and, on the same `all` pairs and fold reads, its bootstrap
    analysis, robust = analyze_with_robust(store, opts, man, progress)
    primary = (opts.primary_metric, opts.primary_cutoff)
    with_dp = set(analysis.dp["algorithm"])
    best = best_table(store, primary, family_judges(opts.families, primary[0]))
    nf = _noise_floor(store, opts, analysis.dp, primary) if opts.noise_seeds > 0 else None
    noise = (None if nf is None or nf.empty else
             dataclasses.replace(nf, versus_dp=noisemod.compare_with_floor(analysis.dp, nf.floor)))
    importance = (impmod.hyperparameter_importance(store, cutoff=primary[1], seed=opts.seed)
                  if opts.importance else None)
    # the verdict cites the noise floor and importance, so it comes last
    verdict = verdict_of(store, robust, dp=analysis.dp, best=best, primary=primary,
                         noise_table=None if noise is None else noise.versus_dp,
                         importance=importance, options=opts)
    dp = DPResult(
        pairs=analysis.pairs, pvalues=analysis.pvalues, table=analysis.dp,
        curves=analysis.curves,
        interval=None if robust is None else robust.table,
        ranking=None if robust is None else robust.ranking,
        without={a: no_dp_reason(store, a) for a in store.algorithms() if a not in with_dp},
    )
    return AnalysisResult(dp=dp, best=best, datasets=datasets_table(man), noise=noise,
                          importance=importance, verdict=verdict, options=opts, manifest=man)


def _noise_floor(store: ResultStore, opts: AnalysisOptions, dp: pd.DataFrame,
                 primary: tuple[str, int]) -> noisemod.NoiseFloor:
    """The A/A noise floor of the store's noise-floor runs (if any), on the P of each
    (algorithm, metric@N)'s ``all`` scope."""
    all_dp = dp[dp["scope"] == "all"]
    n_pairs = {(a, m, int(c)): int(n) for a, m, c, n in zip(
        all_dp["algorithm"], all_dp["metric"], all_dp["cutoff"], all_dp["n_pairs"], strict=True)}
    return noisemod.noise_floor_table(
        store, n_pairs, test=opts.test, max_seeds=opts.noise_seeds,
        max_configs=opts.noise_configs, primary=primary,
        n_resamples=opts.n_resamples, seed=opts.seed)
