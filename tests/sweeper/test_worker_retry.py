"""A worker whose trial was finished by another worker (two SQLite workers can take the same
queued trial) goes on with the grid instead of dying; any other error still stops it; a queued
trial that another worker signed first is left to it.

The worker's trial loop is :func:`dptune.sweeper._trials.run_trials`; here it runs on an
in-memory optuna study whose objective finishes its own trial "elsewhere" (through the
storage, as another worker would) before returning, so that telling it is refused."""

from __future__ import annotations

import optuna
import pytest
from conftest import write_synthetic_experiment
from optuna.trial import TrialState

import dptune.sweeper._worker as worker_module
from dptune.cli import main
from dptune.config import load_experiment
from dptune.errors import DptuneError
from dptune.sweeper import _trials
from dptune.sweeper._claims import TakenElsewhere, _claim, take_trial
from dptune.sweeper._plan import plan


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


# ------------------------------------------------------------- a queued trial taken twice
def test_a_trial_another_worker_signed_is_left_to_it():
    """Two SQLite workers can take the same queued trial: the one that finds it signed by the
    other (take_trial) leaves it, untold, to that worker and goes on with the next trial; its
    heartbeats are no longer this worker's to stamp."""
    study = _study()
    calls = []

    def objective(trial):
        calls.append(trial.number)
        if trial.number == 0:
            trial.set_user_attr("worker", "elsewhere:1")  # the other worker signed first
            take_trial(study, trial, "here:2")
        study.stop()
        return 1.0

    _trials.run_trials(study, objective, [], heartbeat_s=1.0)
    assert calls == [0, 1]
    assert [t.state for t in study.trials] == [TrialState.RUNNING, TrialState.COMPLETE]
    assert study.trials[0].user_attrs["worker"] == "elsewhere:1"


def test_take_trial_signs_a_trial_nobody_signed_and_claim_yields_to_a_later_signer():
    study = _study()
    trial = study.ask()
    take_trial(study, trial, "here:2")
    take_trial(study, trial, "here:2")  # signing one's own trial again is no conflict
    assert study.trials[0].user_attrs["worker"] == "here:2"
    params = {"fold": "0"}
    assert _claim(study, trial, params, "here:2")
    trial.set_user_attr("worker", "elsewhere:1")  # signed over at the same instant
    with pytest.raises(TakenElsewhere):
        _claim(study, trial, params, "here:2")
    with pytest.raises(TakenElsewhere):
        take_trial(study, trial, "here:2")


def test_a_worker_whose_trial_another_worker_failed_mid_unit_finishes_the_sweep(
        tmp_path, monkeypatch):
    """Another worker fails this worker's trial while its unit is computed (as a worker that
    took it for dead, or that took the same queued trial, would): the part is written, the
    worker walks past the refused tell and finishes the grid, one part per unit. (It died on
    the refused "computed" mark before.)"""
    cfg = write_synthetic_experiment(tmp_path, "taken")
    url = f"sqlite:///{tmp_path}/optuna.db"
    real, failed = worker_module.compute_unit, []

    def compute_unit(exp, task):
        if not failed:
            storage = optuna.storages.RDBStorage(url)
            running = [t for s in optuna.get_all_study_summaries(storage)
                       for t in optuna.load_study(study_name=s.study_name, storage=storage)
                       .get_trials(states=(TrialState.RUNNING,))]
            assert len(running) == 1
            storage.set_trial_state_values(running[0]._trial_id, TrialState.FAIL)
            failed.append(running[0].number)
        return real(exp, task)

    monkeypatch.setattr(worker_module, "compute_unit", compute_unit)
    results = tmp_path / "results"
    assert main(["worker", str(cfg), "--storage", url, "--results", str(results)]) == 0
    assert failed
    units = {(t.algorithm, t.fold, t.unit) for a in load_experiment(cfg).algorithms
             for t in plan(load_experiment(cfg), a.name, ["0", "1"])}
    parts = sorted(p.name for p in (results / "per_user.parquet").glob("*.parquet"))
    assert len(parts) == len(units)
