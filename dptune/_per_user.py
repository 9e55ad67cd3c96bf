"""Data from outside dptune, one route: a per-user table (a CSV/Parquet file, or a DataFrame in
Python) and a directory of TREC runs become the same in-memory per-user store
(:class:`dptune.store._per_user_store.PerUserStore`), which :func:`dptune.analyze` analyses with
the options of a sweep and :class:`dptune.Report` renders.

So ``dptune.discriminative_power(df)``, ``dptune dp --per-user FILE``, ``dptune dp --runs DIR``
and ``dptune analyze`` of a store holding the same per-user values give the same numbers:
the same pairs, the same seed, the same bootstrap, the same verdict. The only differences are
those the data imposes: no A/A noise floor (it needs retraining, which outside data cannot
do) and importance only when configurations with hyperparameters are given.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dptune.analysis.options import AnalysisOptions
from dptune.analysis.pipeline import analyze
from dptune.analysis.result import AnalysisResult
from dptune.errors import input_error
from dptune.report._settings import PAIRS_SETTING, VALUE_PAIRS_SETTING
from dptune.store._per_user_file import check_configs, check_per_user, read_configs, read_per_user
from dptune.store._per_user_store import PerUserStore

__all__ = ["SEED", "per_user_store", "outside_options", "analyze_outside", "analyze_per_user",
           "analyze_runs", "per_user_settings"]

#: The analysis seed of outside data: the seed a sweep uses when its experiment names none.
SEED = 42


def per_user_store(per_user: pd.DataFrame, configs: pd.DataFrame | None = None,
                   hyperparameters: Sequence[str] = (),
                   source: str | Path = "per_user", kind: str = "per-user") -> PerUserStore:
    """The in-memory store of a per-user DataFrame (checked as a per-user file is:
    :func:`dptune.store._per_user_file.check_per_user`).

    The configurations' hyperparameters come either as a separate ``configs`` table
    (``algorithm, config_id | system`` and one column per hyperparameter) or as the columns
    ``hyperparameters`` of ``per_user`` itself (one value per configuration). ``kind``: what
    the values are (``"per-user"``, or ``"runs"`` for evaluated TREC runs), recorded in the
    store's manifest so that the report speaks of the data as it is.
    """
    if not isinstance(per_user, pd.DataFrame):
        raise input_error(source, None, f"expected a pandas DataFrame, got {type(per_user).__name__}")
    hps = list(hyperparameters)
    missing = [h for h in hps if h not in per_user.columns]
    if missing:
        raise input_error(source, missing[0], "missing column (named in hyperparameters)")
    if hps and configs is not None:
        raise input_error(source, "hyperparameters", "give configs or hyperparameters, not both")
    table = check_per_user(per_user.drop(columns=hps), source)
    if hps:
        key = "config_id" if "config_id" in table.columns else "system"
        described = pd.concat([table[["algorithm", key]], per_user[hps].reset_index(drop=True)],
                              axis=1).drop_duplicates()
        twice = described.duplicated(["algorithm", key])
        if twice.any():
            row = described[twice].iloc[0]
            raise input_error(source, hps[0], f"configuration {row['algorithm']}/{row[key]} "
                              "has more than one value")
        configs = described
    if configs is not None:
        configs = check_configs(configs, table, f"{source} (configurations)")
    return PerUserStore(table, configs, source=source, kind=kind)


def _primary(store: PerUserStore) -> tuple[str, int]:
    """``ndcg@10`` when the table has it, else its first metric@N (metric order of
    :data:`dptune.vocab.METRICS`, then cutoff)."""
    mcs = [mc for a in store.algorithms() for mc in store.metric_cutoffs(a)]
    return ("ndcg", 10) if ("ndcg", 10) in mcs else mcs[0]


def outside_options(store: PerUserStore, **overrides: Any) -> AnalysisOptions:
    """The options of outside data: :class:`AnalysisOptions`' defaults (those of ``dptune
    analyze``: pair cap, bootstrap, verdict) with the seed :data:`SEED`, the primary metric
    ``ndcg@10`` when present (else the first metric@N), the noise floor off and importance on
    when hyperparameters are known; then ``overrides`` (``None`` = not given)."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if given.get("noise_seeds", 0) or "noise_configs" in given:
        key = "noise_seeds" if "noise_seeds" in given else "noise_configs"
        raise input_error("analysis", key, "no noise floor for outside data (it needs retraining)")
    metric, cutoff = _primary(store)
    has_hps = any(store.hyperparameters(a) for a in store.algorithms())
    defaults = {"primary_metric": metric, "primary_cutoff": cutoff, "noise_seeds": 0,
                "importance": has_hps}
    return AnalysisOptions.resolve({"seeds": {"analysis": SEED}}, **{**defaults, **given})


def analyze_outside(store: PerUserStore, progress: bool = False,
                    **overrides: Any) -> AnalysisResult:
    """:func:`dptune.analyze` of an outside store with :func:`outside_options`."""
    return analyze(store, outside_options(store, **overrides), progress=progress)


def per_user_settings(store: PerUserStore, options: AnalysisOptions,
                      sources: dict[str, object]) -> dict[str, object]:
    """The report's settings table for outside data: ``sources`` (what was read) first, and,
    when configurations are named (``system``), which configuration id is which system (the
    ids of ``pairs.csv`` and ``pvalues.parquet``)."""
    folds = sorted({f for a in store.algorithms() for f in store.folds(a)})
    named = {a: store.configs(a) for a in store.algorithms()}
    systems = "; ".join(f"{a}: " + ", ".join(f"{int(r.config_id)} = {r.system}"
                                             for r in c.itertuples(index=False))
                        for a, c in named.items() if "system" in c.columns)
    return {
        **sources,
        "Algorithms": ", ".join(f"{a} ({len(store.configs(a))} configurations)"
                                for a in store.algorithms()),
        **({"Configurations": systems} if systems else {}),
        "Folds": f"{len(folds)} ({', '.join(folds)})",
        PAIRS_SETTING: options.pairs,
        VALUE_PAIRS_SETTING: options.scope_value_pairs,
        "Pair-sampling seed": options.seed,
        "Statistical test": options.test,
        "Alpha": options.alpha,
        "Bootstrap": options.bootstrap or "off",
        "Noise floor": "off (needs retraining, which outside data cannot do)",
    }


def _report(store: PerUserStore, reports_dir: str | Path, progress: bool,
            sources: dict[str, object], overrides: dict[str, Any]) -> list[Path]:
    from dptune.report._report import Report

    options = outside_options(store, **overrides)
    result = analyze(store, options, progress=progress)
    report = Report.build(store, result, settings=per_user_settings(store, options, sources))
    return report.write(reports_dir)


def analyze_per_user(per_user: str | Path, reports_dir: str | Path,
                     configs: str | Path | None = None, *, progress: bool = False,
                     **overrides: Any) -> list[Path]:
    """``dptune dp --per-user``: analyse a per-user file (and its configurations file) and
    write every data file, table, figure and ``report.md`` into ``reports_dir``; return the
    paths. ``overrides`` are :class:`AnalysisOptions` fields (:func:`outside_options`).
    Exported from a dptune store, ``per_user.parquet`` + ``configs.csv`` give the sweep's
    ``dp.csv``."""
    table = read_per_user(per_user)
    cfg = read_configs(configs, table) if configs is not None else None
    store = PerUserStore(table, cfg, source=per_user)
    sources = {"Per-user table": str(per_user),
               "Configurations": str(configs) if configs is not None else "none (scope all only)"}
    return _report(store, reports_dir, progress, sources, overrides)


def analyze_runs(runs: str | Path, qrels: str | Path, train: str | Path,
                 reports_dir: str | Path, cutoffs: Sequence[int] = (1, 5, 10),
                 threshold: float = 4.0, relevance_aware: bool = True, order: str = "trec", *,
                 progress: bool = False, **overrides: Any) -> list[Path]:
    """``dptune dp --runs``: evaluate a directory of TREC runs into a per-user table
    (:func:`dptune.store.read_runs`; one configuration per run file) and analyse it as
    :func:`analyze_per_user` does."""
    from dptune.store._runs import read_runs

    table = read_runs(runs, qrels, train, cutoffs=cutoffs, threshold=threshold,
                      relevance_aware=relevance_aware, order=order)
    store = per_user_store(table, source=runs, kind="runs")
    left, seen = table.attrs["not_evaluated"], table.attrs["users_seen"]
    dropped = "; ".join(f"fold {f}: {len(u)} of {seen[f]} users ({', '.join(u[:5])}"
                        + (f" and {len(u) - 5} more" if len(u) > 5 else "") + ")"
                        for f, u in left.items() if u)
    sources = {"Runs": str(runs), "Qrels": str(qrels), "Train": str(train),
               "Relevance threshold": f"rating >= {threshold:g}",
               "Users without a relevant item (not evaluated)": dropped or "none",
               "Metric variant": "novelty metrics relevance-" +
               ("aware" if relevance_aware else "unaware") + "; binary-gain nDCG",
               "Run order": "trec_eval (score, then item id descending)" if order == "trec"
               else "rank field"}
    return _report(store, reports_dir, progress, sources, overrides)
