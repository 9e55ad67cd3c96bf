"""The local runner: ``jobs`` worker processes on this machine, in design order within the
budget, then the test split, with a progress bar fed by the parts in the store; the numba
kernels are compiled (or loaded) once before the bar starts (:mod:`dptune.sweeper._warmup`).
The bar, and the loop that feeds it while the work runs, are those of ``dptune worker`` too
(:mod:`dptune.sweeper._progress`).
"""

from __future__ import annotations

from pathlib import Path

from dptune._parallel import exit_if_orphaned, in_background, run_parallel
from dptune.config import MAX_JOBS, Budget, Experiment
from dptune.errors import check_int
from dptune.store._store import ResultStore
from dptune.sweeper._manifest import check_worker_models, init_results
from dptune.sweeper._plan import Task, test_tasks
from dptune.sweeper._progress import POLL_SECONDS, Progress, compile_kernels
from dptune.sweeper._unit import run_unit
from dptune.sweeper._worker import worker
from dptune.sweeper.design import Design, hours_text, projection


def _parallel_workers(exp: Experiment, results: Path, storage_url: str | None, jobs: int,
                      design: Design) -> None:
    # the bar is this process's (run_experiment's): each worker draws none
    run_parallel(worker, [(exp, results, storage_url, None, None, design, False)] * jobs, jobs)


def _run_tasks(exp: Experiment, store: ResultStore, tasks: list[Task], jobs: int) -> None:
    todo = [t for t in tasks if not store.has_part(t.algorithm, t.fold, t.unit)]
    run_parallel(_run_one, [(exp, str(store.root), t) for t in todo], jobs)


def _run_one(exp: Experiment, root: str, task: Task) -> None:
    exit_if_orphaned()  # a worker whose parent was killed starts no unit
    store = ResultStore(root)
    if not store.has_part(task.algorithm, task.fold, task.unit):
        run_unit(exp, task, store)


def run_experiment(exp: Experiment, results: str | Path, storage_url: str | None = None,
                   jobs: int | None = None, progress: bool = True,
                   budget: Budget | None = None,
                   min_fold_users: int | None = None) -> ResultStore:
    """Run (or resume) the whole sweep: validation units through optuna workers in design order
    (the rounds of ``budget``, else of the experiment's ``[sweep] budget``, else every unit),
    then the chosen configurations on the test split; returns the store. ``min_fold_users``
    replaces the experiment's for the check of the folds before the sweep (``dptune run
    --min-fold-users``)."""
    # the experiment's own is checked with it; an argument as ``--jobs`` is (a count of
    # thousands of digits stopped this check's message with a ValueError)
    jobs = check_int(exp.sweep.jobs if jobs is None else jobs, "sweep", "jobs", 1, MAX_JOBS)
    check_worker_models(exp, jobs)  # before anything is written
    storage_url = storage_url or exp.sweep.storage
    root = Path(results)
    store, prep, design = init_results(exp, root, storage_url, budget, jobs,
                                       min_fold_users=min_fold_users)
    tasks = design.tasks()
    if progress:
        _announce(exp, store, design, jobs)
    if any(not store.has_part(t.algorithm, t.fold, t.unit) for t in tasks):
        compile_kernels(exp, progress)
    bar = Progress(store, tasks, f"{exp.name}: validation", progress, design)
    try:
        for _attempt in range(3):
            in_background(lambda: _parallel_workers(exp, root, storage_url, jobs, design),
                          bar.update, POLL_SECONDS)
            missing = [t for t in tasks if not store.has_part(t.algorithm, t.fold, t.unit)]
            if not missing:
                break
            # A worker died with trials marked RUNNING: finish them here, deterministically.
            in_background(lambda m=missing: _run_tasks(exp, store, m, jobs), bar.update,
                          POLL_SECONDS)
    finally:
        bar.close()
    store.refresh()
    if exp.evaluation.test_split:
        ttasks = test_tasks(exp, store)
        tbar = Progress(store, ttasks, f"{exp.name}: test split", progress)
        try:
            in_background(lambda: _run_tasks(exp, store, ttasks, jobs), tbar.update, POLL_SECONDS)
        finally:
            tbar.close()
    store.refresh()
    store.write_trials()
    store.remove_stale_temporaries()
    return store


def _announce(exp: Experiment, store: ResultStore, design: Design, jobs: int) -> None:
    """One line on stderr before the bar: each algorithm's budget in units and rounds of its
    full grid, and the projected time of the full grid and of this run (cost model, every stage
    counted, this run's stage by stage)."""
    import sys

    from dptune.sweeper._cost import shape_from_manifest
    from dptune.sweeper._warmup import cold_kernels

    parts = []
    for name, d in design.algorithms.items():
        rounds = f"{d.budget_rounds} round{'s' if d.budget_rounds != 1 else ''} of {d.round_size}"
        parts.append(f"{name} {d.budget_units} of {d.total_units} units ({rounds})")
    line = f"{exp.name}: " + ", ".join(parts)
    if design.budget is not None:
        line += f"; budget {design.budget}"
    shape = shape_from_manifest(store.manifest())
    cold = cold_kernels(exp)
    full = projection(exp, design, shape, {n: d.rounds for n, d in design.algorithms.items()},
                      jobs, cold=cold)
    run = projection(exp, design, shape, None, jobs, cold=cold)
    if full is not None and run is not None:
        line += (f"; projected (cost model, {run.where}): full grid "
                 f"{hours_text(full.seconds)}, this run {hours_text(run.seconds)} "
                 f"({run.stages_text()})")
    print(line, file=sys.stderr, flush=True)
