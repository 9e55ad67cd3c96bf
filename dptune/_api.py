"""The front functions behind ``import dptune`` and the command line: compute, then write.

Each function is a thin composition of the packages: :func:`analyze_results` is
``AnalysisOptions.resolve`` -> :func:`dptune.analysis.analyze` -> the report; the analysis never
writes and the report never computes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dptune.analysis.options import AnalysisOptions
from dptune.analysis.pipeline import analyze, stage
from dptune.analysis.result import AnalysisResult
from dptune.errors import input_error, unexpected_type
from dptune.store._store import ResultStore
from dptune.sweeper._run import sweep

__all__ = ["sweep", "analyze_results", "write_report", "discriminative_power"]


def write_report(result: AnalysisResult, out: str | Path) -> list[Path]:
    """Write the data files, tables, figures and ``report.md`` of ``result`` into ``out``
    (``dptune.report.Report.from_result(result).write(out)``: the result alone, no store);
    return the paths written."""
    from dptune.report._report import Report

    return Report.from_result(result).write(out)


def analyze_results(results_dir: str | Path, reports_dir: str | Path, progress: bool = False,
                    **overrides: Any) -> list[Path]:
    """Analyse a results directory and write every table, figure and report into ``reports_dir``.

    ``overrides`` (any :class:`AnalysisOptions` field; ``None`` = not given) replace the
    experiment's ``[analysis]`` settings recorded in the store. Output is a pure function of the
    store and the options: a rerun writes identical bytes. Returns the paths written. While it
    runs, ``reports_dir`` is marked as being written (:mod:`dptune.sweeper._analysing`), which
    ``dptune status`` reports.
    """
    from dptune.sweeper._analysing import analysing

    with analysing(reports_dir):
        store = ResultStore(results_dir)
        options = AnalysisOptions.resolve(store.manifest(), **overrides)
        result = analyze(store, options, progress=progress)
        stage(progress, f"the report (tables, figures, report.md) into {reports_dir}")
        return write_report(result, reports_dir)


def discriminative_power(per_user: pd.DataFrame | str | os.PathLike, *,
                         hyperparameters: Sequence[str] = (),
                         configs: pd.DataFrame | None = None, progress: bool = False,
                         **options: Any) -> AnalysisResult:
    """DP of every metric@N of any long per-user table (Anelli et al., RecSys 2019), with its
    interval, claims and verdict: the :class:`AnalysisResult` that ``dptune.analyze`` gives a
    sweep's store, and whose report ``dptune dp --per-user`` writes for the same table.

    ``per_user`` (a DataFrame, or the path of a per-user file as ``dptune dp --per-user`` reads
    it: CSV, TSV, either maybe gzip-compressed, or Parquet) has one row per (configuration,
    fold, user, metric@N), columns ``[algorithm], config_id | system, [fold], user, metric,
    [cutoff], value`` (checked as a per-user file is; rows of fold ``"test"`` are not used
    for DP). The configurations' hyperparameters, for the
    ``h=v`` and ``only:h`` scopes, the dominant hyperparameter and importance, are further
    columns named in ``hyperparameters``, or a ``configs`` table (``algorithm, config_id |
    system`` and one column per hyperparameter). ``options`` are :class:`AnalysisOptions`
    fields (``pairs``, ``seed``, ``test``, ``bootstrap``, ...); left out, they are those of
    ``dptune analyze`` with the analysis seed 42 of a sweep
    (:meth:`AnalysisOptions.for_outside`). A wrong argument is one
    :class:`dptune.errors.DptuneError` naming it (an unknown option, a bad value, a
    noise floor, which outside data cannot have), the options checked before the table is
    read; a whole ``options=`` is refused with the way to give them (``**options``, or
    ``dptune.analyze(per_user, options)``).

    One route for every input: this is ``dptune.analyze(per_user, AnalysisOptions.for_outside(
    store, **options))`` of the table's in-memory store. Per algorithm and scope, pairs of
    configurations are tested with the paired test over each validation fold's users present
    in both; ``res.dp.table`` holds DP per 25 pairs (25 x the mean p-value; lower = more
    discriminative) with P and its interval, ``res.verdict`` the metric to tune with.

    Example::

        >>> import numpy as np, pandas as pd, dptune
        >>> rng = np.random.default_rng(0)
        >>> per_user = pd.DataFrame([
        ...     {"system": f"s{s}", "user": u, "metric": "ndcg@10", "value": 0.7 * rng.random() + s / 10}
        ...     for s in range(4) for u in range(50)])
        >>> res = dptune.discriminative_power(per_user, bootstrap=0)
        >>> res.dp.table[["algorithm", "scope", "metric", "cutoff", "n_pairs"]].to_dict("records")
        [{'algorithm': 'runs', 'scope': 'all', 'metric': 'ndcg', 'cutoff': 10, 'n_pairs': 6}]
    """
    from dptune.analysis.pipeline import check_arguments
    from dptune.store._per_user_store import PerUserStore

    check_arguments("discriminative_power", None, progress, configs, hyperparameters)
    if isinstance(options.get("options"), (AnalysisOptions, Mapping)):
        # options=AnalysisOptions(...) or options={...}: the fields are keywords here
        raise input_error("discriminative_power", "options", "takes the options' fields as "
                          "keywords (pairs=25, test='t', ...): discriminative_power(per_user, "
                          "**options), or dptune.analyze(per_user, options) for an "
                          "AnalysisOptions")
    AnalysisOptions.check_outside(**options)  # before the table is read and checked
    source: str | Path = "per_user"
    if isinstance(per_user, (str, os.PathLike)):  # a file: read as dptune dp --per-user reads it
        from dptune.store._per_user_file import read_table

        source = Path(per_user)
        per_user = read_table(source, "per-user file")
    elif not isinstance(per_user, pd.DataFrame):
        # a polars DataFrame or a pyarrow Table: its module named (a polars "DataFrame" is
        # not pandas'), with the conversion
        raise input_error("discriminative_power", "per_user", "needs a pandas DataFrame or the "
                          "path of a per-user file (CSV, TSV or Parquet), got "
                          f"{unexpected_type(per_user)}")
    store = PerUserStore.from_frame(per_user, configs=configs, hyperparameters=hyperparameters,
                                    source=source)
    return analyze(store, AnalysisOptions.for_outside(store, **options), progress=progress)
