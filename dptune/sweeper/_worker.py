"""A sweep worker: take grid points from optuna, in design order, until every validation unit
of the budget has its part.

Any number of workers (processes, machines) share one optuna storage and one results directory
(docs/distributed.md). The result store is the ground truth: a unit whose Parquet part exists and
is verified is never recomputed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dptune._interrupt import check as check_interrupt
from dptune._parallel import exit_if_orphaned, in_background
from dptune.config import Experiment
from dptune.errors import input_error, plain
from dptune.store._store import ResultStore
from dptune.store._writer import PartWriter
from dptune.sweeper._claims import (
    _claim,
    _must_wait,
    _owned_by_live,
    _requeue_missing,
    _study,
    take_trial,
    worker_id,
)
from dptune.sweeper._plan import Task, _key, plan
from dptune.sweeper._prepare import prepare
from dptune.sweeper._progress import POLL_SECONDS, Progress, compile_kernels
from dptune.sweeper._storage import (
    heartbeat_settings,
    open_storage,
    storage_errors,
    storage_place,
)
from dptune.sweeper._trials import Queued, mark_interrupted, run_trials
from dptune.sweeper._unit import _primary_mean, compute_unit
from dptune.sweeper.design import Design, sweep_design

if TYPE_CHECKING:
    import optuna
    from optuna.storages import BaseStorage
    from optuna.trial import FrozenTrial

MAX_PASSES = 3  # grid walks per worker and algorithm before giving up on failed units


def worker(exp: Experiment, results: str | Path, storage_url: str | None = None,
           algorithms: Sequence[str] | None = None, wait_seconds: float | None = None,
           design: Design | None = None, progress: bool = True) -> int:
    """Work on the experiment's validation units until none of the budget is left; returns
    units computed here.

    ``design``: the design and budget to follow (:func:`dptune.sweeper.design.resolve_design`;
    default: the one recorded in the results directory when the sweep started, else the
    experiment's). Any number of workers (processes, machines) may run this against one
    storage and one shared results directory: each asks the study's sampler for the grid point
    (= a unit on a fold) the design order needs next (:mod:`dptune.sweeper._sampler`), skips it
    when its part exists, leaves it to a live worker that owns it (:func:`_must_wait`), and
    otherwise computes it and hands its part to the worker's part writer
    (:class:`dptune.store._writer.PartWriter`), which writes it while the next unit is
    computed; the trial is told done only once its part is on disk
    (:func:`dptune.sweeper._trials.run_trials`). A first round over the algorithms never waits (an owned point is
    marked PRUNED, "deferred", and the worker moves on, so idle workers start the next algorithm
    instead of watching the last units of this one); a second round waits for the units still
    owned by live workers and redoes those of dead ones. Units whose trials failed are queued
    again, for at most ``MAX_PASSES`` grid walks per algorithm.

    ``progress``: a bar on stderr of the sweep's finished parts (those of every worker, read
    from the shared results directory) with the time left, the bar of ``dptune run``
    (:mod:`dptune.sweeper._progress`); the kernels are compiled before it starts, so that its
    ETA is that of the units. The storage is opened and the data prepared first, so that a
    problem with either is one line without a bar. ``dptune run``'s own worker processes draw
    none (its process draws the bar).
    """
    if not isinstance(progress, bool):
        raise input_error("worker", "progress", f"must be True or False, got {plain(progress)}")
    root = Path(results)
    with storage_errors(storage_url, root):
        storage = open_storage(storage_url, root, where=storage_place(storage_url, exp))
        folds = prepare(exp).fold_names
        if design is None:
            design = sweep_design(exp, root)
        if not progress:
            return _work(exp, root, storage, folds, algorithms, wait_seconds, design)
        store = ResultStore(root)
        tasks = [t for t in design.tasks() if algorithms is None or t.algorithm in algorithms]
        if any(not store.has_part(t.algorithm, t.fold, t.unit) for t in tasks):
            compile_kernels(exp, progress)
        bar = Progress(store, tasks, f"{exp.name}: validation", progress, design)
        try:
            return in_background(
                lambda: _work(exp, root, storage, folds, algorithms, wait_seconds, design),
                bar.update, POLL_SECONDS)
        finally:
            bar.close()


def _work(exp: Experiment, root: Path, storage: BaseStorage, folds: list[str],
          algorithms: Sequence[str] | None, wait_seconds: float | None,
          design: Design) -> int:
    """The body of :func:`worker` (its storage errors become one line)."""
    store = ResultStore(root)
    # Every part is written by the part writer, overlapping the next units' computation;
    # leaving the block waits for the last ones (run_trials already has, even on an error).
    with PartWriter(store.write_unit) as writer:
        return _walk(exp, root, store, writer, storage, folds, algorithms, wait_seconds, design)


def stop_when_written(tasks: Sequence[Task], written: Callable[[Task], bool]
                      ) -> Callable[[optuna.Study, FrozenTrial], None]:
    """A trial callback that stops the study once ``written(task)`` holds for every task.

    It runs after every trial, so it does not check every part each time (a sweep of n tasks
    would cost n x n part checks, hours for tens of thousands of tasks): it resumes from the
    first task it last found missing (in design order the parts before it are mostly
    written), and only once every task from there on has its part does it check them all
    again, so that the study stops exactly when every part is written."""
    start = 0

    def first_missing(begin: int) -> int | None:
        return next((i for i in range(begin, len(tasks)) if not written(tasks[i])), None)

    def stop_when_complete(study: optuna.Study, trial: FrozenTrial) -> None:
        nonlocal start
        first = first_missing(start)
        if first is None and start:
            first = first_missing(0)
        if first is None:
            study.stop()
        else:
            start = first

    return stop_when_complete


def _walk(exp: Experiment, root: Path, store: ResultStore, writer: PartWriter,
          storage: BaseStorage, folds: list[str], algorithms: Sequence[str] | None,
          wait_seconds: float | None, design: Design) -> int:
    """The grid walks of :func:`worker` on ``storage``, whose parts ``writer`` writes."""
    import optuna

    interval, _ = heartbeat_settings()
    wait = min(1.0, float(interval)) if wait_seconds is None else wait_seconds
    me = worker_id()
    done_here = 0

    def missing(tasks: list[Task]) -> list[Task]:
        """Tasks whose part is not written yet."""
        return [t for t in tasks if not store.has_part(t.algorithm, t.fold, t.unit)]

    def written(trial: optuna.Trial, task: Task) -> float:
        """The value of a trial whose unit was computed here, once its part is on disk."""
        nonlocal done_here
        done_here += 1
        try:
            trial.set_user_attr("state", "computed")
        except optuna.exceptions.UpdateFinishedTrialError:
            pass  # another worker finished the trial: the part is on disk all the same
        return _primary_mean(exp, store, task)

    def evaluate_point(trial: optuna.Trial, study: optuna.Study, space: dict[str, list[Any]],
                       lookup: dict[str, Task], patient: bool) -> float | Queued:
        """One trial: skip a written unit, defer to or wait for its live owner, or compute it
        and queue its part (the trial is told once the part is written: :func:`run_trials`)."""
        take_trial(study, trial, me)
        params = {name: trial.suggest_categorical(name, choices) for name, choices in space.items()}
        task = lookup[_key(params)]
        trial.set_user_attr("unit", task.unit)
        trial.set_user_attr("config_ids", list(task.config_ids))
        state = "skipped"
        while not store.has_part(task.algorithm, task.fold, task.unit):
            if _must_wait(study, trial, params) or not _claim(study, trial, params, me):
                if not patient:
                    trial.set_user_attr("state", "deferred")
                    raise optuna.TrialPruned("a live worker owns this unit")
                state = "waited"
                time.sleep(wait)
                check_interrupt()
                continue
            part = writer.submit(compute_unit(exp, task))
            return Queued(part, lambda: written(trial, task))
        trial.set_user_attr("state", state)
        return _primary_mean(exp, store, task)

    def make_objective(study: optuna.Study, space: dict[str, list[Any]], lookup: dict[str, Task],
                       patient: bool) -> Callable[[optuna.Trial], float | Queued]:
        """The trials' objective: :func:`evaluate_point` (heartbeats: :func:`run_trials`)."""
        def objective(trial: optuna.Trial) -> float | Queued:
            exit_if_orphaned()  # a worker whose parent was killed starts no unit
            try:
                check_interrupt()  # a worker asked to stop (dptune._interrupt) starts none
                return evaluate_point(trial, study, space, lookup, patient)
            except (KeyboardInterrupt, SystemExit):
                mark_interrupted(trial)  # the trial fails; status counts it pending
                raise
        return objective

    def make_stop(tasks: list[Task]) -> Callable[[optuna.Study, FrozenTrial], None]:
        """A callback that stops the study once every part of ``tasks`` is written."""
        return stop_when_written(tasks, lambda t: store.has_part(t.algorithm, t.fold, t.unit))

    work = []
    for alg in exp.algorithms:
        if algorithms is not None and alg.name not in algorithms:
            continue
        ad = design.algorithms[alg.name]
        tasks = ad.tasks(folds)
        if missing(tasks):
            study, space = _study(exp, alg.name, storage, folds, ad)
            # every grid point, the budget's or not: a queued trial may name any of them
            lookup = {_key({"fold": t.fold, **t.params}): t for t in plan(exp, alg.name, folds)}
            work.append((tasks, study, space, lookup))

    for tasks, study, space, lookup in work:  # round 1: take free units, never wait
        if missing(tasks):
            run_trials(study, make_objective(study, space, lookup, patient=False),
                       [make_stop(tasks)], interval)
    for tasks, study, space, lookup in work:  # round 2: wait for owned units, redo dead ones
        passes = 0
        while missing(tasks) and passes < MAX_PASSES:
            run_trials(study, make_objective(study, space, lookup, patient=True),
                       [make_stop(tasks)], interval)
            # The grid walk ended with parts missing. Units that live workers are computing:
            # wait for their parts (or their death, which queues them again) without new trials.
            owned = False
            while missing(tasks) and _owned_by_live(study, missing(tasks)):
                owned = True
                time.sleep(wait)
                check_interrupt()
            if owned or not missing(tasks):
                continue  # done, or an owner died and the stale callback queued its point again
            # Units whose trials failed (or that lost their part): queue their points again.
            _requeue_missing(study, missing(tasks))
            passes += 1
    return done_here
