"""A worker's trial loop: ask optuna for a grid point, compute its unit, hand the part to the
part writer, and tell the trial only once its part is on disk.

``study.optimize`` tells a trial when its objective returns, so the part would have to be
written inside the objective, while nothing else runs (the device engine's device idle,
docs/performance.md). :func:`run_trials` is the same loop written with ``ask`` and ``tell``:
an objective may return a :class:`Queued` instead of a value, and the trial stays RUNNING
(its heartbeat kept: :class:`dptune.sweeper._claims._Heartbeats`) while the next trials
compute their units; it is told COMPLETE when its part's future is done. So optuna never
counts a unit done whose part is not written: a worker killed with parts queued leaves RUNNING
trials that turn stale (their units are computed again), exactly as a worker killed
mid-unit does. An error in a part's write fails that trial and is raised, after every other
queued part has been written and its trial told.

Otherwise the loop is ``study.optimize``'s with ``n_jobs=1``: stale trials failed before
each ask (RDB heartbeats), a pruned objective is a PRUNED trial, any other error a FAIL
trial and raised, the callbacks run after each trial is told, and ``study.stop()`` (the
callbacks', the grid sampler's) ends it. One difference: while some of this worker's parts
are queued and the sampler has no free grid point left, the loop waits for those parts
before it asks for another trial (the next point would otherwise be one whose part is being
written here).
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dptune.errors import DptuneError
from dptune.sweeper._claims import TakenElsewhere, _heartbeat_enabled, _Heartbeats

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

__all__ = ["MAX_TOLD_ELSEWHERE", "Queued", "mark_interrupted", "run_trials"]

#: How many trials of this worker may be found finished by another worker (:func:`_told_elsewhere`)
#: before the worker gives up: the storage is then shared with workers of another sweep.
MAX_TOLD_ELSEWHERE = 1000


def mark_interrupted(trial: optuna.Trial) -> None:
    """Record that the trial was interrupted (Ctrl-C, a stop signal), not failed by its unit:
    ``dptune status`` counts its unit as to do, not as failed."""
    try:
        trial.set_user_attr("state", "interrupted")
    except Exception:  # noqa: BLE001 - the storage may be going away with the process
        pass


@dataclass(frozen=True)
class Queued:
    """What an objective returns for a unit whose part it handed to the part writer:
    ``part``, the writer's future (the part's path once written, or its write's error), and
    ``value``, called once the part is on disk, giving the trial's value."""

    part: Future[Path]
    value: Callable[[], float]


Objective = Callable[["optuna.Trial"], "float | Queued"]


def _told_elsewhere(err: ValueError) -> bool:
    """Whether optuna refused to record a trial because another worker had already finished
    it: with SQLite, which has no row locks, two workers can both take the same queued
    (WAITING) trial; the second one's result is then refused with "Cannot tell a COMPLETE
    trial." (or FAIL / PRUNED). The unit is the store's to judge, not the trial's."""
    return str(err).startswith("Cannot tell a ")


@contextmanager
def _optimizing(study: optuna.Study) -> Iterator[None]:
    """What ``study.optimize`` sets around its loop: ``study.stop()`` (called by callbacks and
    by the grid sampler once every point is taken) is allowed and ends the loop."""
    if study._thread_local.in_optimize_loop:
        raise RuntimeError("a study's trial loop cannot run inside another")
    study._stop_flag = False
    study._thread_local.in_optimize_loop = True
    try:
        yield
    finally:
        study._thread_local.in_optimize_loop = False
        study._storage.remove_session()


def _has_free_point(study: optuna.Study) -> bool:
    """Whether the sampler still has a grid point no trial holds (a sampler that cannot say:
    no, so that queued parts are waited for before the next ask)."""
    has_free = getattr(study.sampler, "has_free_point", None)
    return bool(has_free(study)) if has_free is not None else False


def run_trials(study: optuna.Study, objective: Objective,
               callbacks: list[Callable[[optuna.Study, FrozenTrial], None]],
               heartbeat_s: float) -> None:
    """Run trials of ``study`` until it is stopped (see the module docstring): each calls
    ``objective``, whose :class:`Queued` result is told once its part is written; every part
    queued is written and its trial told before this returns or raises. ``heartbeat_s``: the
    interval of the open trials' heartbeats."""
    import optuna
    from optuna.study._tell import _tell_with_warning
    from optuna.trial import TrialState

    beats = _Heartbeats(study, heartbeat_s)
    queued: deque[tuple[optuna.Trial, Queued]] = deque()
    refused = 0

    def tell(trial: optuna.Trial, value: float | None = None, state: TrialState | None = None,
             after: bool = True) -> None:
        """Record the trial's end, then (``after``) run the callbacks, as ``study.optimize``
        does; a trial another worker finished is walked past (at most MAX_TOLD_ELSEWHERE)."""
        nonlocal refused
        beats.discard(trial._trial_id)
        try:  # a NaN value is a FAIL trial, without a warning, as in study.optimize
            _tell_with_warning(study, trial, value, state, suppress_warning=True)
        except ValueError as err:
            if not _told_elsewhere(err):
                raise
            refused += 1
            if refused >= MAX_TOLD_ELSEWHERE:
                raise DptuneError(f"{MAX_TOLD_ELSEWHERE} trials of this worker were finished "
                                  "by other workers; is the storage shared with workers of "
                                  "another sweep?") from None
            return
        if after:
            frozen = study._storage.get_trial(trial._trial_id)
            for callback in callbacks:
                callback(study, copy.deepcopy(frozen))

    def finish(wait: bool, after: bool = True) -> None:
        """Tell the queued trials whose parts are written, in order (all, waiting for each,
        with ``wait``). A part whose write failed fails its trial, and its error is raised;
        so does a Ctrl-C (a stop signal) that comes while a part is waited for, its trial
        marked interrupted (:func:`mark_interrupted`)."""
        while queued and (wait or queued[0][1].part.done()):
            trial, q = queued.popleft()
            try:
                q.part.result()
                value = q.value()
            except BaseException as err:
                if isinstance(err, (KeyboardInterrupt, SystemExit)):
                    mark_interrupted(trial)
                tell(trial, state=TrialState.FAIL, after=False)
                raise
            tell(trial, value, after=after)

    with _optimizing(study):
        try:
            while not study._stop_flag:
                finish(wait=False)
                if queued and not _has_free_point(study):
                    finish(wait=True)
                    continue  # a trial told may have stopped the study
                if _heartbeat_enabled(study._storage):
                    optuna.storages.fail_stale_trials(study)
                trial = study.ask()
                beats.add(trial)
                try:
                    out = objective(trial)
                except optuna.TrialPruned:
                    tell(trial, state=TrialState.PRUNED)
                    continue
                except TakenElsewhere:
                    beats.discard(trial._trial_id)
                    continue
                except BaseException:
                    tell(trial, state=TrialState.FAIL, after=False)
                    raise
                if isinstance(out, Queued):
                    queued.append((trial, out))
                else:
                    tell(trial, out)
            finish(wait=True)
        except BaseException:
            # The error is raised once every part already queued is written (or has failed:
            # its own error is dropped, the first one is raised) and its trial told.
            while queued:
                try:
                    finish(wait=True, after=False)
                except Exception:  # noqa: BLE001 - a later part's failure; the first is raised
                    continue
            raise
        finally:
            beats.close()
