"""``dptune dp --per-user``: the analysis and report of a sweep on a per-user table from
outside dptune (RecBole, Elliot, LensKit, a notebook).

Reading and validation: :mod:`dptune.store._per_user_file`; the store adapter:
:class:`dptune.store._per_user_store.PerUserStore`; the analysis: :func:`dptune.analysis.analyze`
(DP per scope, bootstrap CIs, best configurations, importance) with the A/A noise floor off (it
needs retraining); the report: :class:`dptune.report.Report` with the table's own settings.
"""

from __future__ import annotations

from pathlib import Path

from dptune.analysis._analyze import analyze
from dptune.analysis._options import AnalysisOptions
from dptune.store._per_user_file import read_configs, read_per_user
from dptune.store._per_user_store import PerUserStore

__all__ = ["analyze_per_user", "per_user_settings"]


def _primary(store: PerUserStore) -> tuple[str, int]:
    """``ndcg@10`` when the table has it, else its first metric@N (metric order of
    :data:`dptune.vocab.METRICS`, then cutoff)."""
    mcs = [mc for a in store.algorithms() for mc in store.metric_cutoffs(a)]
    return ("ndcg", 10) if ("ndcg", 10) in mcs else mcs[0]


def per_user_settings(store: PerUserStore, per_user: str | Path, configs: str | Path | None,
                      options: AnalysisOptions) -> dict[str, object]:
    """The report's settings table for a per-user table."""
    folds = sorted({f for a in store.algorithms() for f in store.folds(a)})
    return {
        "Per-user table": str(per_user),
        "Configurations": str(configs) if configs is not None else "none (scope all only)",
        "Algorithms": ", ".join(f"{a} ({len(store.configs(a))} configurations)"
                                for a in store.algorithms()),
        "Folds": f"{len(folds)} ({', '.join(folds)})",
        "Pairs per scope (P)": options.pairs,
        "Pair-sampling seed": options.seed,
        "Statistical test": options.test,
        "Alpha": options.alpha,
        "Bootstrap": options.bootstrap or "off",
        "Noise floor": "off (needs retraining, which a per-user table cannot do)",
    }


def analyze_per_user(per_user: str | Path, reports_dir: str | Path,
                     configs: str | Path | None = None, *, progress: bool = False,
                     **overrides: object) -> list[Path]:
    """Analyse a per-user file (and its configurations file) as a sweep's store and write every
    data file, table, figure and ``report.md`` into ``reports_dir``; return the paths.

    ``overrides`` are :class:`AnalysisOptions` fields (``None`` = the default, as for
    ``dptune analyze``: CIs on); the pair-sampling seed defaults to 42, a sweep's default
    analysis seed. The primary metric is ndcg@10 when present; the noise floor is off (it needs
    retraining); importance is computed when configurations are given. Exported from a dptune
    store, ``per_user.parquet`` + ``configs.csv`` with the sweep's analysis seed give the
    sweep's ``dp.csv``.
    """
    from dptune.report._report import Report

    table = read_per_user(per_user)
    cfg = read_configs(configs, table) if configs is not None else None
    store = PerUserStore(table, cfg, source=per_user)
    metric, cutoff = _primary(store)
    options = AnalysisOptions.resolve({"seeds": {"analysis": 42}}, **overrides,
                                      primary_metric=metric, primary_cutoff=cutoff,
                                      noise_seeds=0, importance=cfg is not None)
    result = analyze(store, options, progress=progress)
    report = Report.build(store, result,
                          settings=per_user_settings(store, per_user, configs, options))
    return report.write(reports_dir)
