"""The front functions behind ``import dptune`` and the command line: compute, then write.

Each function is a thin composition of the packages: :func:`analyze_results` is
``AnalysisOptions.resolve`` -> :func:`dptune.analysis.analyze` -> the report; the analysis never
writes and the report never computes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dptune.analysis._analyze import analyze
from dptune.analysis._dp import analyze as analyze_dp
from dptune.analysis._options import AnalysisOptions
from dptune.analysis._result import AnalysisResult
from dptune.store._frame import FrameStore
from dptune.store._runs import RunSetStore
from dptune.store._store import ResultStore

if TYPE_CHECKING:
    from dptune.config import Experiment

__all__ = ["sweep", "analyze_results", "analyze_runs", "write_report", "discriminative_power"]


def sweep(exp: Experiment | str | Path, results: str | Path | None = None,
          jobs: int | None = None, progress: bool = True,
          storage: str | None = None) -> ResultStore:
    """Run (or resume) an experiment's sweep exactly as ``dptune run`` does, without the report.

    Validation units of every algorithm's grid (optuna workers, ``jobs`` processes; default
    the experiment's ``[sweep] jobs``), then the configuration each metric@N selects on the test
    split, then the A/A noise-floor runs when ``[analysis] noise_seeds > 0``. ``exp`` is an
    :class:`dptune.Experiment` or the path of its TOML file; ``results`` defaults to
    ``results/<experiment name>``; ``storage`` is an optuna storage URL (default: SQLite in the
    results directory). Resumable: finished units are kept. Returns the
    :class:`dptune.ResultStore`.

    Example::

        exp = dptune.load_experiment("experiments/quickstart.toml")
        store = dptune.sweep(exp, results="results/quickstart", jobs=2)
        store.best_configs()
    """
    from dptune.config import load_experiment
    from dptune.sweep._local import run_experiment
    from dptune.sweep._noise import run_noise_floor

    if not hasattr(exp, "fingerprint"):
        exp = load_experiment(exp)
    root = Path(results) if results is not None else Path("results") / exp.name
    store = run_experiment(exp, root, storage_url=storage, jobs=jobs, progress=progress)
    if exp.analysis.noise_seeds > 0:
        run_noise_floor(exp, store.root, seeds=exp.analysis.noise_seeds,
                        n_configs=exp.analysis.noise_configs, jobs=jobs or exp.sweep.jobs,
                        progress=progress)
    return store


def write_report(store: ResultStore, result: AnalysisResult, out: str | Path) -> list[Path]:
    """Write the data files, tables, figures and ``report.md`` of ``result`` into ``out``
    (``dptune.report.Report.build(store, result).write(out)``); return the paths written."""
    from dptune.report._report import Report

    return Report.build(store, result).write(out)


def analyze_results(results_dir: str | Path, reports_dir: str | Path, progress: bool = False,
                    **overrides: Any) -> list[Path]:
    """Analyse a results directory and write every table, figure and report into ``reports_dir``.

    ``overrides`` (any :class:`AnalysisOptions` field; ``None`` = not given) replace the
    experiment's ``[analysis]`` settings recorded in the store. Output is a pure function of the
    store and the options: a rerun writes identical bytes. Returns the paths written.
    """
    store = ResultStore(results_dir)
    options = AnalysisOptions.resolve(store.manifest(), **overrides)
    result = analyze(store, options, progress=progress)
    return write_report(store, result, reports_dir)


def analyze_runs(runs: str | Path, qrels: str | Path, train: str | Path, reports_dir: Path,
                 cutoffs: tuple[int, ...] = (1, 5, 10), threshold: float = 4.0, n_pairs: int = 25,
                 seed: int = 42, test: str = "t") -> list[Path]:
    """DP tables for a set of external runs (users of other frameworks get DP too)."""
    from dptune.report import _report as report

    store = RunSetStore(Path(runs), Path(qrels), Path(train), cutoffs, threshold)
    analysis = analyze_dp(store, pairs=n_pairs, seed=seed, test=test)
    reports_dir = Path(reports_dir)
    reports_dir.mkdir(parents=True, exist_ok=True)
    files = list(analysis.write_csv(reports_dir) or [])
    datasets = pd.DataFrame([{"dataset": str(runs), "users": store.n_users, "items": store.n_items,
                              "ratings": store.n_train,
                              "sparsity": 1 - store.n_train / max(1, store.n_users * store.n_items)}])
    settings = {"Runs": f"{len(store.system_names)} systems: {', '.join(store.system_names)}",
                "Folds": len(store.folds("runs")), "Relevance threshold": f"rating >= {threshold}",
                "Metric variant": "novelty metrics relevance-aware; binary-gain nDCG",
                "Pairs per scope (P)": n_pairs, "Pair-sampling seed": seed, "Statistical test": test}
    primary_cut = 10 if 10 in cutoffs else cutoffs[-1]
    files += report.write_report(reports_dir, analysis.dp, analysis.curves, datasets,
                                 None, settings, primary=("ndcg", primary_cut))
    return files


def discriminative_power(per_user: pd.DataFrame, pairs: int = 25, test: str = "t",
                         seed: int = 0, alpha: float = 0.05, correction: str = "none",
                         n_resamples: int = 1000, bootstrap: int = 0,
                         hyperparameters: Sequence[str] = (),
                         progress: bool = False) -> pd.DataFrame:
    """DP of every metric@N of any long per-user table (Anelli et al., RecSys 2019).

    ``per_user`` has one row per (configuration, fold, user, metric@N), columns ``[algorithm],
    config_id | system, [fold], user, metric, [cutoff], value`` (:class:`dptune.store.FrameStore`
    documents the optional ones; ``hyperparameters`` names further columns describing each
    configuration, for the ``h=v`` and ``only:h`` scopes). Per algorithm, ``pairs`` pairs of
    configurations are sampled (seed ``seed``), each tested with the paired ``test`` over the
    fold's users present in both; per fold the p-values sorted decreasingly form a curve, the
    curves are averaged position by position over folds, and ``DP = sum_i mean_i`` (lower =
    more discriminative). Returns the rows of ``dp.csv`` (``algorithm, scope, metric, cutoff,
    dp, dp_plus_sd, dp_minus_sd, n_pairs, n_folds, sakai, sakai_sd, ...``). Rows of fold
    ``"test"`` are ignored. The full tables (pairs, p-values, curves) are
    ``dptune.analysis.analyze_dp(FrameStore(per_user), ...)``.

    Example::

        >>> import numpy as np, pandas as pd, dptune
        >>> rng = np.random.default_rng(0)
        >>> per_user = pd.DataFrame([
        ...     {"system": f"s{s}", "user": u, "metric": "ndcg@10", "value": rng.random() + s / 10}
        ...     for s in range(4) for u in range(50)])
        >>> dp = dptune.discriminative_power(per_user, pairs=6)
        >>> dp[["algorithm", "scope", "metric", "cutoff", "n_pairs"]].to_dict("records")
        [{'algorithm': 'runs', 'scope': 'all', 'metric': 'ndcg', 'cutoff': 10, 'n_pairs': 6}]
    """
    from dptune.analysis._robust_run import annotate_dp

    store = FrameStore(per_user, hyperparameters=hyperparameters)
    res = analyze_dp(store, pairs=pairs, seed=seed, test=test, alpha=alpha,
                     correction=correction, n_resamples=n_resamples,
                     progress=progress)
    return annotate_dp(res.dp, res.pvalues)  # + dp_per_pair, no_evidence, as dp.csv (issue 13)
