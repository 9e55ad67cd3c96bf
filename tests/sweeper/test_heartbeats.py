"""A worker's heartbeats (:class:`dptune.sweeper._claims._Heartbeats`) outlast a storage that
fails now and then: a beat refused with "database is locked" is tried again at the next
interval, so a live trial is never left to turn stale; only a trial that has ended (told here,
failed by another worker) leaves the heartbeats.

The faults are injected by a storage wrapper (:class:`_Flaky`) whose beats fail a given number
of times; the tests drive the beats one round at a time (:meth:`_Heartbeats.beat_all`), except
the last, which runs the thread and waits on the beats it has recorded, never on a clock.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Any

import optuna
import pytest
import sqlalchemy.exc
from optuna.trial import TrialState

from dptune.sweeper._claims import _Heartbeats
from dptune.sweeper._storage import open_storage

#: An interval so long that the heartbeat thread never beats during a test that drives the
#: rounds itself (its first wait ends at ``close``).
NEVER = 3600.0


def _locked() -> Exception:
    """What SQLAlchemy raises when SQLite is locked by another writer."""
    return sqlalchemy.exc.OperationalError("UPDATE trial_heartbeats", {},
                                           sqlite3.OperationalError("database is locked"))


class _Flaky:
    """A storage whose next ``fails`` beats (``record_heartbeat``, or the journal's
    ``heartbeat`` user attribute) raise "database is locked", as do its ``get_trial`` calls
    while beats are failing; everything else is the wrapped storage's. Records every beat
    tried, ``(trial_id, ok)``, and sets ``settled`` once ``want`` beats of ``watch`` succeeded
    after the last failure."""

    def __init__(self, inner: Any, fails: int = 0) -> None:
        self.inner, self.fails = inner, fails
        self.tried: list[tuple[int, bool]] = []
        self.watch: int | None = None
        self.want = 0
        self.settled = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _beat(self, trial_id: int, write: Any) -> None:
        if self.fails > 0:
            self.fails -= 1
            self.tried.append((trial_id, False))
            raise _locked()
        try:
            write()
        except Exception:
            self.tried.append((trial_id, False))
            raise
        self.tried.append((trial_id, True))
        if trial_id == self.watch and self.fails == 0:
            last_fail = max((i for i, (_, ok) in enumerate(self.tried) if not ok), default=-1)
            ok_since = sum(1 for t, ok in self.tried[last_fail + 1:] if t == trial_id and ok)
            if ok_since >= self.want:
                self.settled.set()

    def record_heartbeat(self, trial_id: int) -> None:
        self._beat(trial_id, lambda: self.inner.record_heartbeat(trial_id))

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        if key != "heartbeat":
            self.inner.set_trial_user_attr(trial_id, key, value)
            return
        self._beat(trial_id, lambda: self.inner.set_trial_user_attr(trial_id, key, value))

    def get_trial(self, trial_id: int) -> Any:
        if self.fails > 0:
            raise _locked()
        return self.inner.get_trial(trial_id)


@pytest.fixture(params=["rdb", "journal"])
def study(request: pytest.FixtureRequest, tmp_path: Path) -> optuna.Study:
    """A study on SQLite with optuna's heartbeats (beats: ``record_heartbeat``), or on a
    journal file (beats: the ``heartbeat`` user attribute), its storage wrapped in
    :class:`_Flaky` (no faults yet)."""
    url = None if request.param == "rdb" else f"journal:{tmp_path / 'optuna.journal'}"
    storage = open_storage(url, tmp_path)
    study = optuna.create_study(study_name="beats", storage=storage)
    study._storage = _Flaky(study._storage)
    return study


def _beats_of(flaky: _Flaky, trial_id: int) -> list[bool]:
    return [ok for t, ok in flaky.tried if t == trial_id]


def test_a_trial_whose_beats_fail_a_few_times_keeps_beating(
        study: optuna.Study, caplog: pytest.LogCaptureFixture) -> None:
    flaky: _Flaky = study._storage
    trial = study.ask()
    beats = _Heartbeats(study, NEVER)
    try:
        beats.add(trial)  # its first beat, recorded
        tid = trial._trial_id
        flaky.fails = 3
        with caplog.at_level(logging.WARNING, logger="dptune.sweeper._claims"):
            for _ in range(3):
                beats.beat_all()
                assert tid in beats.trials  # a locked storage does not end the trial's beats
            assert (beats.errors, beats.failing) == (3, {tid: 3})
            beats.beat_all()
            beats.beat_all()
        assert _beats_of(flaky, tid) == [True, False, False, False, True, True]
        assert tid in beats.trials and beats.failing == {} and beats.errors == 3
        messages = [r.getMessage() for r in caplog.records]
        assert len(messages) == 2, messages  # the first failure, and the recovery
        assert "failed" in messages[0] and "database is locked" in messages[0]
        assert "recorded again after 3 failed" in messages[1]
    finally:
        beats.close()
    # The trial is still RUNNING and can be told: nobody took it for finished.
    study.tell(trial, 1.0)
    assert study.trials[0].state == TrialState.COMPLETE


def test_failures_spanning_the_grace_period_are_warned_about(
        study: optuna.Study, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DPTUNE_HEARTBEAT_INTERVAL", "1")
    monkeypatch.setenv("DPTUNE_HEARTBEAT_GRACE", "3")
    flaky: _Flaky = study._storage
    trial = study.ask()
    beats = _Heartbeats(study, 1.0)
    beats.stop.set()  # the thread would end at once: the rounds are driven here
    try:
        beats.add(trial)
        flaky.fails = 5
        with caplog.at_level(logging.WARNING, logger="dptune.sweeper._claims"):
            for _ in range(5):
                beats.beat_all()
        messages = [r.getMessage() for r in caplog.records]
        assert len(messages) == 2, messages  # the first failure, and the third (3 s = grace)
        assert "failed 3 times in a row" in messages[1] and "grace 3s" in messages[1]
        assert trial._trial_id in beats.trials and beats.errors == 5
    finally:
        beats.close()


def test_a_trial_that_ended_elsewhere_leaves_the_heartbeats(study: optuna.Study) -> None:
    flaky: _Flaky = study._storage
    ended, live = study.ask(), study.ask()
    beats = _Heartbeats(study, NEVER)
    try:
        beats.add(ended)
        beats.add(live)
        # Another worker takes ``ended`` for dead and fails it; this worker still holds it.
        flaky.inner.set_trial_state_values(ended._trial_id, state=TrialState.FAIL)
        if beats.rdb:
            # optuna records a finished trial's heartbeat without complaint; the storage's
            # refusal is what drops a trial, so make this beat fail.
            flaky.fails = 1
        beats.beat_all()
        assert beats.trials == {live._trial_id}
        assert beats.errors == 0  # an ended trial is no error
        beats.beat_all()
        assert _beats_of(flaky, ended._trial_id) == [True, False]
        assert _beats_of(flaky, live._trial_id)[-2:] == [True, True]
    finally:
        beats.close()


def test_the_thread_keeps_beating_after_failed_beats(study: optuna.Study) -> None:
    flaky: _Flaky = study._storage
    trial = study.ask()
    flaky.watch, flaky.want = trial._trial_id, 2
    beats = _Heartbeats(study, 0.01)
    try:
        beats.add(trial)
        flaky.fails = 4
        # Waits on the beats recorded (two after the last failure); the timeout only bounds a
        # broken run.
        assert flaky.settled.wait(timeout=120), flaky.tried
        assert trial._trial_id in beats.trials and beats.errors == 4
        assert _beats_of(flaky, trial._trial_id).count(False) == 4
    finally:
        beats.close()


def test_a_first_beat_that_fails_is_tried_again_instead_of_failing_the_run(
        study: optuna.Study) -> None:
    """``add`` on a locked storage: no raise, the trial stays among the beating ones with the
    failure counted, and the next round records its beat."""
    flaky: _Flaky = study._storage
    trial = study.ask()
    beats = _Heartbeats(study, NEVER)
    try:
        flaky.fails = 1
        beats.add(trial)
        tid = trial._trial_id
        assert tid in beats.trials and (beats.errors, beats.failing) == (1, {tid: 1})
        beats.beat_all()
        assert _beats_of(flaky, tid) == [False, True] and beats.failing == {}
    finally:
        beats.close()
    study.tell(trial, 1.0)
    assert study.trials[0].state == TrialState.COMPLETE
