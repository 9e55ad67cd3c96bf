"""The sweep stage's front function: validation units, test split, then the noise floor.

``dptune run`` and the Python API (``dptune.sweep(exp, ...)``) both call :func:`run_sweep`, so
there is one way to run a sweep.
"""

from __future__ import annotations

from pathlib import Path

from dptune.config import Budget, Experiment, check_experiment, load_experiment, parse_budget
from dptune.errors import check_path, input_error, plain
from dptune.store._store import ResultStore
from dptune.sweeper._local import run_experiment
from dptune.sweeper._noise import NoiseRun, run_noise_floor

__all__ = ["sweep", "run_sweep"]


def run_sweep(exp: Experiment | str | Path, results: str | Path | None = None,
              jobs: int | None = None, progress: bool = True, storage: str | None = None,
              noise_seeds: int | None = None, noise_configs: int | None = None,
              budget: Budget | str | int | None = None,
              min_fold_users: int | None = None) -> tuple[ResultStore, NoiseRun | None]:
    """:func:`sweep`, also returning what the noise floor did (``None`` when it is off).

    ``noise_seeds`` / ``noise_configs`` / ``min_fold_users`` replace the experiment's
    ``[analysis]`` values (the command line's ``--noise-seeds`` / ``--noise-configs`` /
    ``--min-fold-users``); ``budget`` its ``[sweep] budget`` (``--budget``).
    """
    if not isinstance(exp, Experiment):
        check_path(exp, "sweep", "exp", "a dptune.Experiment or its TOML file's path")
        exp = load_experiment(exp)
    else:  # built in Python: checked as a file is, its grids read, before any work
        exp = check_experiment(exp)
    if results is not None:
        check_path(results, "sweep", "results", "the results directory")
    if not isinstance(progress, bool):
        raise input_error("sweep", "progress", f"must be True or False, got {plain(progress)}")
    if storage is not None and not isinstance(storage, str):
        raise input_error("sweep", "storage", "needs an optuna storage URL (a str), got "
                          f"{type(storage).__name__}")
    root = Path(results) if results is not None else Path("results") / exp.name
    if budget is not None and not isinstance(budget, Budget):
        budget = parse_budget(budget, "budget", None)
    store = run_experiment(exp, root, storage_url=storage, jobs=jobs, progress=progress,
                           budget=budget, min_fold_users=min_fold_users)
    seeds = int(exp.analysis.noise_seeds if noise_seeds is None else noise_seeds)
    if seeds <= 0:
        return store, None
    configs = int(exp.analysis.noise_configs if noise_configs is None else noise_configs)
    noise = run_noise_floor(exp, store.root, seeds=seeds, n_configs=configs,
                            jobs=jobs or exp.sweep.jobs, progress=progress)
    return store, noise


def sweep(exp: Experiment | str | Path, results: str | Path | None = None,
          jobs: int | None = None, progress: bool = True,
          storage: str | None = None, budget: str | int | None = None) -> ResultStore:
    """Run (or resume) an experiment's sweep exactly as ``dptune run`` does, without the report.

    Validation units of every algorithm's grid (optuna workers, ``jobs`` processes; default
    the experiment's ``[sweep] jobs``), then the configuration each metric@N selects on the test
    split, then the A/A noise-floor runs when ``[analysis] noise_seeds > 0``. ``exp`` is an
    :class:`dptune.Experiment` or the path of its TOML file; ``results`` defaults to
    ``results/<experiment name>``; ``storage`` is an optuna storage URL (default: SQLite in the
    results directory). ``budget`` (default: the experiment's ``[sweep] budget``; a number of
    units per algorithm, ``"20%"`` of each grid or a time ``"2h"``) stops the validation units
    after whole rounds of the design order (:mod:`dptune.sweeper.design`); run again with a
    larger budget (or none) to extend the same order. Resumable: finished units are kept,
    damaged or missing parts are computed again. Returns the :class:`dptune.ResultStore`.

    Example::

        exp = dptune.load_experiment("experiments/quickstart.toml")
        store = dptune.sweep(exp, results="results/quickstart", jobs=2)
        store.best_configs()
    """
    return run_sweep(exp, results, jobs=jobs, progress=progress, storage=storage,
                     budget=budget)[0]
