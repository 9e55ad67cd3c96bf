"""Claims on grid points: which live trial computes a unit, which waits, which dead one is redone.

Each algorithm's study is a grid over the fold and the unit hyperparameters, whose points are
handed out in the design's order (:mod:`dptune.sweeper._sampler`). A live worker's grid point
is waited for, not duplicated; a dead worker's trial is found (its process gone from this
machine, or its heartbeat stale), failed and queued again; a duplicate that still slips through
(two workers deciding at the same instant) has the same values (seeds derive from the unit) and
is discarded by the store, which keeps the first part written.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dptune.config import Experiment
from dptune.sweeper._plan import Task, _key, unit_dimensions
from dptune.sweeper._storage import _requeue_stale, heartbeat_settings, study_name

if TYPE_CHECKING:
    import optuna
    from optuna.storages import BaseStorage
    from optuna.trial import FrozenTrial

    from dptune.sweeper.design import AlgorithmDesign

_log = logging.getLogger(__name__)


class TakenElsewhere(Exception):  # noqa: N818 - a signal to the loop, not an error
    """Raised by an objective whose trial another worker holds too (:func:`take_trial`,
    :func:`_claim`): with SQLite, which has no row locks, two workers asking at the same
    instant can both take the same queued (WAITING) trial. The trial loop
    (:func:`dptune.sweeper._trials.run_trials`) leaves the trial to the other worker (no
    heartbeat, no tell from here) and asks for the next one; should that worker die, its
    heartbeats stop and the trial is found stale, failed and queued again as any dead
    worker's."""


def _study(exp: Experiment, algorithm: str, storage: BaseStorage, folds: list[str],
           design: AlgorithmDesign) -> tuple[optuna.Study, dict[str, list[Any]]]:
    """Create or load the algorithm's study and its grid space (fold + unit parameters), whose
    sampler hands out the units of ``design`` within its budget in design order
    (:class:`dptune.sweeper._sampler.DesignSampler`)."""
    import optuna

    from dptune.sweeper._sampler import DesignSampler

    dims = unit_dimensions(exp, algorithm)
    space: dict[str, list[Any]] = {"fold": list(folds)}
    grid = exp.grids[algorithm]
    for h in dims:
        space[h] = list(grid.values[h])
    # The seed fixes the shuffled grid ids, which must be the same in every worker (a trial's
    # grid_id indexes them); the random choice among a unit's folds is then reseeded per process
    # so that workers starting together take different folds.
    units = [[{"fold": f, **u.params} for f in folds] for u in design.in_budget()]
    sampler = DesignSampler(space, seed=exp.seed, units=units)
    sampler.reseed_rng()
    study = optuna.create_study(study_name=study_name(exp, algorithm), storage=storage,
                                sampler=sampler, direction="maximize", load_if_exists=True)
    return study, space


def _heartbeat_enabled(storage: BaseStorage) -> bool:
    """Whether the storage keeps optuna's own heartbeats (RDB storages opened here)."""
    get = getattr(storage, "get_heartbeat_interval", None)
    return get is not None and get() is not None


class _Heartbeats:
    """The heartbeats of a worker's open trials (the one computing its unit, and those whose
    parts wait for the part writer): on a storage with optuna's heartbeats (RDB) its
    ``record_heartbeat``, elsewhere (the journal file) dptune's own stamp, the trial's user
    attribute ``heartbeat`` (epoch seconds; liveness then rests on the workers' clocks: keep
    them in sync). :meth:`add` stamps a trial at once, before its parameters exist, so any
    trial that others can see on a grid point can be found stale; one thread stamps every open
    trial each ``interval`` until it is discarded (told).

    A beat that fails does not end a trial's heartbeats: under load SQLite answers "database is
    locked", and a live trial left without beats would be taken for dead after the grace
    period, failed and queued again, and its own finish refused later. So a failed beat is
    tried again at the next interval; only a trial that the storage shows finished (told
    meanwhile, or failed by another worker) or no longer holds leaves the set. Failed beats are
    counted (:attr:`errors`) and logged: a warning at a trial's first failure in a row, another
    when its failures in a row span the grace period (other workers may then take it for dead),
    and one when its beats are recorded again.
    """

    def __init__(self, study: optuna.Study, interval: float) -> None:
        self.study, self.interval = study, interval
        self.rdb = _heartbeat_enabled(study._storage)
        self.trials: set[int] = set()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        #: Failed beats in all, and each open trial's failed beats in a row.
        self.errors = 0
        self.failing: dict[int, int] = {}
        self.grace = heartbeat_settings()[1]

    def _stamp(self, trial_id: int) -> None:
        """One heartbeat of the trial ``trial_id``."""
        storage = self.study._storage
        if self.rdb:
            storage.record_heartbeat(trial_id)
        else:
            storage.set_trial_user_attr(trial_id, "heartbeat", time.time())

    def _ended(self, trial_id: int, err: Exception) -> bool:
        """Whether the beat failed with ``err`` because the trial takes no more beats: the
        storage refused to update a finished trial, or shows it finished, or holds no such
        trial. A storage that cannot answer (still locked) leaves the trial open."""
        from optuna.exceptions import UpdateFinishedTrialError

        if isinstance(err, UpdateFinishedTrialError):
            return True
        try:
            return self.study._storage.get_trial(trial_id).state.is_finished()
        except KeyError:  # optuna's storages: no trial with this id
            return True
        except Exception:  # noqa: BLE001 - the storage fails as the beat did: try again later
            return False

    def _beat(self, trial_id: int) -> None:
        """One heartbeat of ``trial_id``; a failed one is counted and logged, and drops the
        trial only if it has ended (:meth:`_ended`)."""
        try:
            self._stamp(trial_id)
        except Exception as err:  # noqa: BLE001 - judged below; the thread must go on
            if self._ended(trial_id, err):
                self.discard(trial_id)
                return
            with self.lock:
                if trial_id not in self.trials:  # told meanwhile
                    return
                self.errors += 1
                n = self.failing[trial_id] = self.failing.get(trial_id, 0) + 1
            grace = self.grace
            if n == 1:
                _log.warning("heartbeat of trial %d failed (%s: %s); trying again every %gs",
                            trial_id, type(err).__name__, err, self.interval)
            elif n * self.interval >= grace > (n - 1) * self.interval:
                _log.warning("heartbeat of trial %d failed %d times in a row (%s: %s); other "
                            "workers may take it for dead (grace %ds)", trial_id, n,
                            type(err).__name__, err, grace)
            return
        with self.lock:
            n = self.failing.pop(trial_id, 0)
        if n:
            _log.warning("heartbeat of trial %d recorded again after %d failed", trial_id, n)

    def beat_all(self) -> None:
        """One heartbeat of every open trial (what the thread does each interval)."""
        with self.lock:
            open_ = sorted(self.trials)
        for trial_id in open_:
            self._beat(trial_id)

    def _run(self) -> None:
        """The thread: stamp every open trial each interval until closed."""
        while not self.stop.wait(self.interval):
            self.beat_all()

    def add(self, trial: optuna.Trial) -> None:
        """Stamp ``trial`` now, then every interval until :meth:`discard`. A first stamp that
        fails is tried again at the next interval, as every beat is (:meth:`_beat`), instead of
        failing the run: a raise here left the trial RUNNING without any heartbeat record,
        which no worker could ever find stale."""
        with self.lock:
            self.trials.add(trial._trial_id)
        self._beat(trial._trial_id)
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, name="dptune-heartbeat",
                                           daemon=True)
            self.thread.start()

    def discard(self, trial_id: int) -> None:
        """No more heartbeats for the trial ``trial_id`` (it is being told)."""
        with self.lock:
            self.trials.discard(trial_id)
            self.failing.pop(trial_id, None)

    def close(self) -> None:
        """Stop the thread."""
        self.stop.set()
        if self.thread is not None:
            self.thread.join()


def _live_running(study: optuna.Study) -> list[FrozenTrial]:
    """The RUNNING trials of live workers, after failing those of dead workers and queueing
    their points again (:func:`_requeue_stale`); one read of the RUNNING trials serves both.

    A trial whose worker ran on this machine and is gone (:func:`worker_gone`) is dead at
    once: a rerun after ``kill -9`` or Ctrl-C redoes its units without waiting out a heartbeat.
    The other trials are judged by their heartbeats. RDB storages: optuna's
    ``fail_stale_trials`` (heartbeats in the database, its clock), before the read. Other
    storages: trials whose dptune ``heartbeat`` stamp is older than the grace period; trials
    that never stamped one are left alone (they carry no parameters, so nobody waits for them,
    and GridSampler still offers their point).
    """
    import optuna
    from optuna.trial import TrialState

    _, grace = heartbeat_settings()
    storage = study._storage
    rdb = _heartbeat_enabled(storage)
    if rdb:
        optuna.storages.fail_stale_trials(study)
    now = time.time()
    live = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if not worker_gone(t.user_attrs):
            beat = t.user_attrs.get("heartbeat")
            if rdb or beat is None or now - float(beat) <= grace:
                live.append(t)
                continue
        try:
            failed = storage.set_trial_state_values(t._trial_id, state=TrialState.FAIL)
        except Exception:  # noqa: BLE001 - another worker failed (or finished) it first
            continue
        if failed:
            _requeue_stale(study, storage.get_trial(t._trial_id))
    return live


def _must_wait(study: optuna.Study, trial: optuna.Trial, params: dict[str, Any]) -> bool:
    """Whether another *live* trial owns this grid point, so this one should wait for its part.

    A live trial owns the point when it is computing it (user attribute ``state="computing"``) or
    when it is older (lower number) and not computing yet: exactly one of any set of live
    duplicates computes, and no two wait for each other (a waiting trial is never computing).
    Dead workers' trials are failed first (:func:`_live_running`). Two trials that pass this check
    at the same instant are sorted out by :func:`_claim`; should a duplicate still be written
    (a storage that is not read-your-writes), the store keeps the first part and discards it.
    """
    for t in _live_running(study):
        if t.number == trial.number or t.params != params:
            continue
        if t.user_attrs.get("state") == "computing" or t.number < trial.number:
            return True
    return False


def worker_id() -> str:
    """``host:pid`` of this process, recorded on every trial it runs."""
    return f"{socket.gethostname()}:{os.getpid()}"


@functools.cache
def pid_space() -> str | None:
    """Which process-id space this process lives in: the machine's boot (Linux's random
    ``boot_id``) and the pid namespace (its inode), or None where they cannot be read.

    Recorded on every trial beside :func:`worker_id` (user attribute ``pid_space``) so that
    :func:`worker_gone` asks the kernel about a pid only where that pid means the same process:
    a host name alone does not say it (two containers sharing the host's name and network
    have their own pids; two machines may be given one name), and a pid that does not exist in
    another space says nothing."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    return f"{boot}/{namespace}" if boot else None


def worker_gone(attrs: Mapping[str, Any]) -> bool:
    """Whether the worker that signed a trial (its user attributes ``worker``, ``host:pid``
    from :func:`worker_id`, and ``pid_space`` from :func:`pid_space`) ran in this process-id
    space on this host and its process no longer exists (Ctrl-C, ``kill``, ``kill -9``): a
    RUNNING trial of such a worker computes nothing, whatever its heartbeat says, so it is
    failed at once (:func:`_live_running`) instead of after the heartbeat's grace.

    A process that has exited but was not yet reaped by its parent (a zombie: a killed run's
    worker whose new parent, a container's first process, may never reap it) is gone too; its
    state is read from ``/proc/<pid>/stat``, which :func:`pid_space` already needs.

    A worker elsewhere (another host, another pid space), one that recorded no space, and one
    whose pid exists (itself, or a process that reused its pid) are not gone: their trials are
    judged by their heartbeats alone."""
    host, _, pid = str(attrs.get("worker") or "").rpartition(":")
    space = pid_space()
    if (host != socket.gethostname() or not pid.isdigit() or space is None
            or attrs.get("pid_space") != space):
        return False
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:  # cannot be read: taken for alive
        return False
    fields = stat.rsplit(")", 1)[-1].split()
    return bool(fields) and fields[0] in ("Z", "X")  # a zombie, or dead


def _left_to_its_signer(study: optuna.Study, trial: optuna.Trial, me: str) -> None:
    """Raise :class:`TakenElsewhere` when the storage shows ``trial`` signed by a worker other
    than ``me`` (read fresh: an unfinished trial is never served from optuna's cache)."""
    if study._storage.get_trial(trial._trial_id).user_attrs.get("worker", me) != me:
        raise TakenElsewhere


def take_trial(study: optuna.Study, trial: optuna.Trial, me: str) -> None:
    """Record this worker (``me``, :func:`worker_id`) on ``trial``, first raising
    :class:`TakenElsewhere` when another worker already has: a queued trial that two workers
    took at the same instant (SQLite has no row locks) is run by the first to sign it. The read
    comes right before the write, so that the second to sign it sees the first; should both
    still sign, :func:`_claim` lets only the last signer compute."""
    _left_to_its_signer(study, trial, me)
    trial.set_user_attr("worker", me)
    if (space := pid_space()) is not None:
        trial.set_user_attr("pid_space", space)


def _claim(study: optuna.Study, trial: optuna.Trial, params: dict[str, Any], me: str) -> bool:
    """Mark this trial ``computing``, then check that no other live trial on the point is
    computing too; if one is, step back (state ``waiting``) and return False. A trial that
    another worker signed meanwhile (:func:`take_trial`) is left to it
    (:class:`TakenElsewhere`).

    Flag first, look second: of two trials that passed :func:`_must_wait` at the same instant,
    the one that looks last sees the other's flag, so they never both compute; if both see each
    other, both step back and the older one wins the next round (:func:`_must_wait`).
    """
    trial.set_user_attr("state", "computing")
    _left_to_its_signer(study, trial, me)
    for t in _live_running(study):
        if t.number != trial.number and t.params == params and t.user_attrs.get("state") == "computing":
            trial.set_user_attr("state", "waiting")
            return False
    return True


def _owned_by_live(study: optuna.Study, tasks: list[Task]) -> bool:
    """Whether a live trial (fresh heartbeat) is on one of these units."""
    keys = {_key({"fold": t.fold, **t.params}) for t in tasks}
    return any(t.params and _key(t.params) in keys for t in _live_running(study))


def _requeue_missing(study: optuna.Study, tasks: list[Task]) -> int:
    """Queue again the grid points whose part is missing although optuna counts them finished
    (their trials failed: a unit that raised, retries exhausted, parts deleted). Returns how many."""
    import optuna
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    waiting = {t.system_attrs.get("grid_id") for t in trials if t.state == TrialState.WAITING}
    running = {_key(t.params) for t in trials if t.params and t.state == TrialState.RUNNING}
    latest: dict[str, Any] = {}
    for t in trials:
        if t.params and "grid_id" in t.system_attrs:
            latest[_key(t.params)] = t
    n = 0
    for task in tasks:
        key = _key({"fold": task.fold, **task.params})
        t = latest.get(key)
        if t is None or key in running or t.system_attrs["grid_id"] in waiting:
            continue
        study.add_trial(optuna.trial.create_trial(
            state=TrialState.WAITING,
            system_attrs={"grid_id": t.system_attrs["grid_id"],
                          "search_space": t.system_attrs["search_space"],
                          "requeued_from": t.number},
        ))
        n += 1
    return n
