"""Data from outside dptune, one route: a per-user table (a CSV/Parquet file, or a DataFrame in
Python) and a directory of TREC runs become the same in-memory per-user store
(:meth:`dptune.store._per_user_store.PerUserStore.from_frame`), which :func:`dptune.analyze`
analyses with the options of a sweep (:meth:`dptune.AnalysisOptions.for_outside`) and
:class:`dptune.Report` renders from the result alone. This module writes the reports of
``dptune dp``.

So ``dptune.discriminative_power(df)``, ``dptune dp --per-user FILE``, ``dptune dp --runs DIR``
and ``dptune analyze`` of a store holding the same per-user values give the same numbers:
the same pairs, the same seed, the same bootstrap, the same verdict. The only differences are
those the data imposes: no A/A noise floor (it needs retraining, which outside data cannot
do) and importance only when configurations with hyperparameters are given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dptune.analysis.options import AnalysisOptions
from dptune.analysis.pipeline import analyze
from dptune.errors import first_few
from dptune.report._settings import outside_settings
from dptune.store._per_user_file import read_per_user, read_per_user_configs
from dptune.store._per_user_store import PerUserStore

__all__ = ["analyze_per_user", "analyze_runs"]


def _report(store: PerUserStore, reports_dir: str | Path, progress: bool,
            sources: dict[str, object], overrides: dict[str, Any],
            label: str | None = None) -> list[Path]:
    from dptune.report._report import Report

    options = AnalysisOptions.for_outside(store, **overrides)
    result = analyze(store, options, progress=progress)
    settings = outside_settings(result.manifest, result.options, result.configurations, sources)
    report = Report.from_result(result, settings=settings)
    if label is not None:
        report.label = label
    return report.write(reports_dir)


def analyze_per_user(per_user: str | Path, reports_dir: str | Path,
                     configs: str | Path | None = None, *, progress: bool = False,
                     label: str | None = None, **overrides: Any) -> list[Path]:
    """``dptune dp --per-user``: analyse a per-user file (and its configurations file) and
    write every data file, table, figure and ``report.md`` into ``reports_dir``; return the
    paths. ``overrides`` are :class:`AnalysisOptions` fields
    (:meth:`AnalysisOptions.for_outside`); ``label`` starts the tables' LaTeX labels
    (:attr:`dptune.report.Report.label`; default: the file's name).
    Exported from a dptune store, ``per_user.parquet`` + ``configs.csv`` give the sweep's
    ``dp.csv``."""
    AnalysisOptions.check_outside(**overrides)  # before the file is read and checked
    table = read_per_user(per_user)
    cfg = read_per_user_configs(configs, table) if configs is not None else None
    store = PerUserStore(table, cfg, source=per_user)
    sources = {"Per-user table": str(per_user),
               "Configurations": str(configs) if configs is not None else "none (scope all only)"}
    return _report(store, reports_dir, progress, sources, overrides, label)


def analyze_runs(runs: str | Path, qrels: str | Path, train: str | Path,
                 reports_dir: str | Path, cutoffs: Sequence[int] = (1, 5, 10),
                 threshold: float = 4.0, relevance_aware: bool = True, order: str = "trec", *,
                 progress: bool = False, on_note: Callable[[str], None] | None = None,
                 label: str | None = None, **overrides: Any) -> list[Path]:
    """``dptune dp --runs``: evaluate a directory of TREC runs into a per-user table
    (:func:`dptune.store.read_runs`; one configuration per run file) and analyse it as
    :func:`analyze_per_user` does. ``on_note`` is given each line of what a run scores
    otherwise than trec_eval would (:func:`dptune.store._trec.coverage_lines`: users a run does
    not rank, relevant pairs that are training pairs), as ``dptune evaluate`` prints them."""
    from dptune.analysis.dp.degenerate import check_fold_users
    from dptune.store._runs import read_runs
    from dptune.store._trec import coverage_lines

    AnalysisOptions.check_outside(**overrides)  # before the runs are evaluated
    minimum = AnalysisOptions.resolve(
        None, min_fold_users=overrides.get("min_fold_users")).min_fold_users

    def check_folds(users: dict[str, int]) -> None:
        # every run scores each of a fold's evaluated users, so these are the users the
        # analysis tests the fold's pairs on: refused as it would refuse them, before the runs
        # are evaluated (and before their notes are printed)
        check_fold_users({("runs", fold): n for fold, n in users.items() if fold != "test"},
                         minimum, str(Path(runs)))

    table = read_runs(runs, qrels, train, cutoffs=cutoffs, threshold=threshold,
                      relevance_aware=relevance_aware, order=order, check_folds=check_folds)
    if on_note is not None:
        for fold, by in table.attrs["missing_from_run"].items():
            evaluated = table.attrs["users_seen"][fold] - len(table.attrs["not_evaluated"][fold])
            for system, users in by.items():
                for line in coverage_lines(users, 0, f"{system} (fold {fold})", qrels, train,
                                           evaluated):
                    on_note(line)
            for line in coverage_lines([], table.attrs["relevant_in_train"][fold], runs,
                                       f"{qrels} (fold {fold})", train, evaluated):
                on_note(line)
    store = PerUserStore.from_frame(table, source=runs, kind="runs")
    left, seen = table.attrs["not_evaluated"], table.attrs["users_seen"]
    dropped = "; ".join(f"fold {f}: {len(u)} of {seen[f]} users ({first_few(u, 5)})"
                        for f, u in left.items() if u)
    unranked = "; ".join(f"fold {f}, {s}: {len(u)} ({first_few(u, 5)})"
                         for f, by in table.attrs["missing_from_run"].items()
                         for s, u in by.items() if u)
    in_train = "; ".join(f"fold {f}: {n}" for f, n in table.attrs["relevant_in_train"].items()
                         if n)
    sources = {"Runs": str(runs), "Qrels": str(qrels), "Train": str(train),
               "Relevance threshold": f"rating >= {threshold:g} (binary relevance: nDCG's gain "
               "is 1, not the grade)",
               "Users without a relevant item (not evaluated)": dropped or "none",
               "Evaluated users a run does not rank (scored 0 on every metric)":
               unranked or "none",
               "Relevant pairs that are also training pairs (never a hit)": in_train or "none",
               "Metric variant": "novelty metrics relevance-" +
               ("aware" if relevance_aware else "unaware"),
               "Run order": "trec_eval (score, then item id descending)" if order == "trec"
               else "rank field"}
    return _report(store, reports_dir, progress, sources, overrides, label)
