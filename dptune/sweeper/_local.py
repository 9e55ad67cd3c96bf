"""The local runner: ``jobs`` worker processes on this machine, then the test split, with a
progress bar fed by the parts in the store.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from dptune._interrupt import check as check_interrupt
from dptune._parallel import exit_if_orphaned, run_parallel, terminate_workers
from dptune.config import Experiment
from dptune.errors import input_error
from dptune.store._store import ResultStore
from dptune.sweeper._manifest import init_results
from dptune.sweeper._plan import Task, plan, test_tasks
from dptune.sweeper._unit import run_unit
from dptune.sweeper._worker import worker


class _Progress:
    """A tqdm bar (done/total and ETA) fed by counting finished parts in the store."""

    def __init__(self, store: ResultStore, tasks: list[Task], desc: str, enabled: bool):
        self.store, self.tasks, self.enabled = store, tasks, enabled
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=len(tasks), desc=desc, unit="unit", dynamic_ncols=True,
                            smoothing=0.1, initial=self.count())

    def count(self) -> int:
        return sum(self.store.has_part(t.algorithm, t.fold, t.unit) for t in self.tasks)

    def update(self) -> None:
        if self.bar is not None:
            self.bar.n = self.count()
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


def _parallel_workers(exp: Experiment, results: Path, storage_url: str | None, jobs: int) -> None:
    run_parallel(worker, [(exp, results, storage_url)] * jobs, jobs)


def _run_tasks(exp: Experiment, store: ResultStore, tasks: list[Task], jobs: int) -> None:
    todo = [t for t in tasks if not store.has_part(t.algorithm, t.fold, t.unit)]
    run_parallel(_run_one, [(exp, str(store.root), t) for t in todo], jobs)


def _run_one(exp: Experiment, root: str, task: Task) -> None:
    exit_if_orphaned()  # a worker whose parent was killed starts no unit
    store = ResultStore(root)
    if not store.has_part(task.algorithm, task.fold, task.unit):
        run_unit(exp, task, store)


def run_experiment(exp: Experiment, results: str | Path, storage_url: str | None = None,
                   jobs: int | None = None, progress: bool = True) -> ResultStore:
    """Run (or resume) the whole sweep: validation units through optuna workers, then the
    chosen configurations on the test split; returns the store."""
    jobs = exp.sweep.jobs if jobs is None else jobs
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise input_error("jobs", None, f"must be a positive integer, got {jobs!r}")
    storage_url = storage_url or exp.sweep.storage
    root = Path(results)
    store, prep = init_results(exp, root, storage_url)
    tasks = [t for a in exp.algorithms for t in plan(exp, a.name, prep.fold_names)]
    bar = _Progress(store, tasks, f"{exp.name}: validation", progress)
    try:
        for _attempt in range(3):
            _run_in_background(lambda: _parallel_workers(exp, root, storage_url, jobs), bar.update)
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
