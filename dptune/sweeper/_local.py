"""The local runner: ``jobs`` worker processes on this machine, in design order within the
budget, then the test split, with a progress bar fed by the parts in the store; the numba
kernels are compiled (or loaded) once before the bar starts (:mod:`dptune.sweeper._warmup`).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from dptune._interrupt import check as check_interrupt
from dptune._parallel import exit_if_orphaned, run_parallel, terminate_workers
from dptune.config import Budget, Experiment
from dptune.errors import input_error
from dptune.store._store import ResultStore
from dptune.sweeper._manifest import init_results
from dptune.sweeper._plan import Task, test_tasks
from dptune.sweeper._unit import run_unit
from dptune.sweeper._worker import worker
from dptune.sweeper.design import Design, hours_text, projection


class _Progress:
    """A tqdm bar (done/total tasks and ETA) fed by counting finished parts in the store, with
    ``m of M units`` per algorithm in its postfix (units whose every fold is done, of the full
    grid's) when ``design`` is given. The bar counts parts (a unit on one fold), not units, and
    says so: "12/33 part" beside "bpr-mf 3 of 9 units"."""

    def __init__(self, store: ResultStore, tasks: list[Task], desc: str, enabled: bool,
                 design: Design | None = None):
        self.store, self.tasks, self.enabled, self.design = store, tasks, enabled, design
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=len(tasks), desc=desc, unit="part", dynamic_ncols=True,
                            smoothing=0.1, initial=self.count())
            self.update()

    def count(self) -> int:
        return sum(self.store.has_part(t.algorithm, t.fold, t.unit) for t in self.tasks)

    def units(self) -> str:
        """``bpr-mf 3 of 225 units (budget 15), userknn 1 of 1``: complete units per algorithm."""
        if self.design is None:
            return ""
        done: dict[tuple[str, str], int] = {}
        for t in self.tasks:
            if self.store.has_part(t.algorithm, t.fold, t.unit):
                done[t.algorithm, t.unit] = done.get((t.algorithm, t.unit), 0) + 1
        k = len(self.design.folds)
        out = []
        for name, d in self.design.algorithms.items():
            m = sum(1 for (a, _), n in done.items() if a == name and n == k)
            budget = f" (budget {d.budget_units})" if d.budget_units < d.total_units else ""
            out.append(f"{name} {m} of {d.total_units} units{budget}")
        return ", ".join(out)

    def update(self) -> None:
        if self.bar is not None:
            self.bar.n = self.count()
            units = self.units()
            if units:
                self.bar.set_postfix_str(units, refresh=False)
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.update()
            self.bar.close()


def _run_in_background(fn, poll, interval: float = 0.5):
    """Run ``fn`` in a thread while the caller polls progress; re-raise its exception."""
    box: dict[str, Any] = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = err

    th = threading.Thread(target=target, daemon=True)
    th.start()
    try:
        while th.is_alive():
            th.join(interval)
            check_interrupt()  # also an interrupt that a finalizer swallowed (dptune._interrupt)
            poll()
    except KeyboardInterrupt:
        terminate_workers()  # shut the worker pool down cleanly before the process ends
        raise
    if "error" in box:
        raise box["error"]
    return box.get("result")


def _parallel_workers(exp: Experiment, results: Path, storage_url: str | None, jobs: int,
                      design: Design) -> None:
    run_parallel(worker, [(exp, results, storage_url, None, None, design)] * jobs, jobs)


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
    jobs = exp.sweep.jobs if jobs is None else jobs
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise input_error("jobs", None, f"must be a positive integer, got {jobs!r}")
    storage_url = storage_url or exp.sweep.storage
    root = Path(results)
    store, prep, design = init_results(exp, root, storage_url, budget, jobs,
                                       min_fold_users=min_fold_users)
    tasks = design.tasks()
    if progress:
        _announce(exp, store, design, jobs)
    if any(not store.has_part(t.algorithm, t.fold, t.unit) for t in tasks):
        _compile_kernels(exp, progress)
    bar = _Progress(store, tasks, f"{exp.name}: validation", progress, design)
    try:
        for _attempt in range(3):
            _run_in_background(lambda: _parallel_workers(exp, root, storage_url, jobs, design),
                               bar.update)
            missing = [t for t in tasks if not store.has_part(t.algorithm, t.fold, t.unit)]
            if not missing:
                break
            # A worker died with trials marked RUNNING: finish them here, deterministically.
            _run_in_background(lambda m=missing: _run_tasks(exp, store, m, jobs), bar.update)
    finally:
        bar.close()
    store.refresh()
    if exp.evaluation.test_split:
        ttasks = test_tasks(exp, store)
        tbar = _Progress(store, ttasks, f"{exp.name}: test split", progress)
        try:
            _run_in_background(lambda: _run_tasks(exp, store, ttasks, jobs), tbar.update)
        finally:
            tbar.close()
    store.refresh()
    store.write_trials()
    store.remove_stale_temporaries()
    return store


#: Seconds the kernels may take to load before the compiling line is shown (loading them from
#: numba's cache takes well under a second; compiling them, the first time, tens of seconds).
COMPILING_AFTER_S = 1.0
COMPILING = "compiling kernels (first run only)"


def _compile_kernels(exp: Experiment, progress: bool) -> None:
    """Compile (first run) or load the experiment's numba kernels here, before the validation
    bar starts its clock (:mod:`dptune.sweeper._warmup`), so that its ETA is that of the units
    alone. With ``progress``, a line ``<name>: compiling kernels (first run only)`` with the
    elapsed time is shown while it takes longer than :data:`COMPILING_AFTER_S`."""
    import time

    from dptune.sweeper._warmup import kernel_types, warm_kernels

    if not kernel_types(exp):
        return
    start = time.monotonic()
    line: list[Any] = []

    def poll() -> None:
        if not progress or time.monotonic() - start < COMPILING_AFTER_S:
            return
        if not line:
            from tqdm import tqdm

            line.append(tqdm(total=None, desc=f"{exp.name}: {COMPILING}", dynamic_ncols=True,
                             bar_format="{desc} {elapsed}"))
            line[0].start_t -= time.monotonic() - start  # the elapsed time since the start
        line[0].refresh()

    try:
        _run_in_background(lambda: warm_kernels(exp), poll, interval=0.25)
    finally:
        if line:
            line[0].close()


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
