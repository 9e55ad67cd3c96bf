"""A worker whose trial was finished by another worker (two SQLite workers can take the same
queued trial) goes on with the grid instead of dying; any other error still stops it.

The worker's trial loop is :func:`dptune.sweeper._trials.run_trials`; here it runs on an
in-memory optuna study whose objective finishes its own trial "elsewhere" (through the
storage, as another worker would) before returning, so that telling it is refused."""

from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from dptune.errors import DptuneError
from dptune.sweeper import _trials


def _study() -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(direction="maximize")


def _finished_elsewhere(study: optuna.Study, trial: optuna.Trial, state: TrialState) -> None:
    """What another worker does: finish this trial in the storage."""
    study._storage.set_trial_state_values(
        trial._trial_id, state, [0.5] if state == TrialState.COMPLETE else None)


def test_a_trial_told_elsewhere_is_walked_past():
    study = _study()
    elsewhere = [TrialState.COMPLETE, TrialState.FAIL]
    calls = []

    def objective(trial):
        calls.append(trial.number)
        if elsewhere:
            _finished_elsewhere(study, trial, elsewhere.pop(0))
        else:
            study.stop()
        return 1.0

    _trials.run_trials(study, objective, [], heartbeat_s=1.0)
    assert calls == [0, 1, 2]
    assert [t.state for t in study.trials] == [TrialState.COMPLETE, TrialState.FAIL,
                                               TrialState.COMPLETE]
    assert [t.value for t in study.trials] == [0.5, None, 1.0]


def test_any_other_value_error_is_raised():
    study = _study()
    calls = []

    def objective(trial):
        calls.append(trial.number)
        if len(calls) == 1:
            _finished_elsewhere(study, trial, TrialState.COMPLETE)
            return 1.0
        raise ValueError("something else")

    with pytest.raises(ValueError, match="something else"):
        _trials.run_trials(study, objective, [], heartbeat_s=1.0)
    assert calls == [0, 1]
    assert study.trials[1].state == TrialState.FAIL


def test_a_storage_that_keeps_refusing_is_one_error(monkeypatch):
    monkeypatch.setattr(_trials, "MAX_TOLD_ELSEWHERE", 3)
    study = _study()

    def objective(trial):
        _finished_elsewhere(study, trial, TrialState.COMPLETE)
        return 1.0

    with pytest.raises(DptuneError, match="finished by other workers"):
        _trials.run_trials(study, objective, [], heartbeat_s=1.0)
    assert len(study.trials) == 3
