"""Trials of workers that are gone: a RUNNING trial whose process no longer exists in this
machine's pid space (Ctrl-C, ``kill -9``) is failed at once and its point queued again, so
``dptune status`` counts it queued, neither running nor failed, and a rerun redoes it without
waiting out its heartbeat; a worker elsewhere is judged by its heartbeat alone."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from conftest import write_experiment

from dptune.config import load_experiment
from dptune.sweeper._claims import _live_running, pid_space, worker_gone, worker_id
from dptune.sweeper._plan import plan
from dptune.sweeper._status import status
from dptune.sweeper._storage import open_storage, study_name


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_worker_gone_only_for_a_process_of_this_pid_space_that_no_longer_exists() -> None:
    host, space = socket.gethostname(), pid_space()
    assert space  # Linux: the boot id and the pid namespace
    assert not worker_gone({"worker": worker_id(), "pid_space": space})  # this process
    assert worker_gone({"worker": f"{host}:{_dead_pid()}", "pid_space": space})
    for elsewhere in (
        {"worker": f"elsewhere-{host}:{_dead_pid()}", "pid_space": space},  # another host
        {"worker": f"{host}:{_dead_pid()}", "pid_space": space + "x"},  # a container's pids
        {"worker": f"{host}:{_dead_pid()}"},  # no space recorded: cannot tell
    ):
        assert not worker_gone(elsewhere), elsewhere
    for odd in (None, "", "no-pid", f"{host}:", f"{host}:abc"):
        assert not worker_gone({"worker": odd, "pid_space": space})
    # a worker that exited but was never reaped (a zombie) computes nothing either
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        stat = Path(f"/proc/{zombie.pid}/stat")
        while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":  # a state, not a time
            time.sleep(0.01)
        assert worker_gone({"worker": f"{host}:{zombie.pid}", "pid_space": space})
    finally:
        zombie.wait()


def _running_trial(storage: str, name: str, params: dict, choices: dict, worker: str,
                   grid_id: int) -> None:
    """A RUNNING trial on the grid point ``params`` (``grid_id``, as the sweep's grid sampler
    records it), signed by ``worker`` in this machine's pid space, computing."""
    study = optuna.create_study(study_name=name, storage=storage, load_if_exists=True)
    study.enqueue_trial(params)  # the trial takes exactly these values
    trial = study.ask()
    for k, v in params.items():
        assert trial.suggest_categorical(k, choices[k]) == v
    study._storage.set_trial_system_attr(trial._trial_id, "grid_id", grid_id)
    study._storage.set_trial_system_attr(trial._trial_id, "search_space", choices)
    trial.set_user_attr("worker", worker)
    trial.set_user_attr("pid_space", pid_space())
    trial.set_user_attr("state", "computing")


def test_status_queues_a_gone_workers_trial_again_and_counts_a_live_ones_as_running(
        tmp_path: Path) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    exp = load_experiment(write_experiment(tmp_path / "exp"))
    results = tmp_path / "results"
    results.mkdir()
    storage = f"sqlite:///{results / 'optuna.db'}"
    alg = exp.algorithms[0].name
    tasks = plan(exp, alg, ["0", "1"])
    gone, live = tasks[0], tasks[1]
    host = socket.gethostname()
    choices: dict[str, list] = {}
    for t in tasks:
        for k, v in {"fold": t.fold, **t.params}.items():
            if v not in choices.setdefault(k, []):
                choices[k].append(v)
    for grid_id, (task, worker) in enumerate(((gone, f"{host}:{_dead_pid()}"),
                                               (live, f"{host}:{os.getpid()}"))):
        _running_trial(storage, study_name(exp, alg), {"fold": task.fold, **task.params},
                       choices, worker, grid_id)
    row = status(exp, results)["algorithms"][alg]
    assert (row["running"], row["queued"], row["failed"], row["done"]) == (1, 1, 0, 0), row
    assert row["remaining"] == row["total"]
    # the gone worker's trial was failed at once (the default grace is 30 s) and its point
    # queued again, without its parameters; the live one still runs
    trials = optuna.load_study(study_name=study_name(exp, alg), storage=storage).trials
    assert [t.state.name for t in trials] == ["FAIL", "RUNNING", "WAITING"]
    assert trials[2].params == {} and trials[2].system_attrs["grid_id"] == 0


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")
@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_worker_elsewhere_is_dead_only_once_its_heartbeat_is_stale(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Two RUNNING trials signed by workers of another machine (their process cannot be looked
    up here): the one whose heartbeat is older than the grace is failed and its point queued
    again; the one with a fresh heartbeat keeps running. SQLite: optuna's heartbeat table (the
    stale beat is written there as a fault); the journal: dptune's ``heartbeat`` stamp."""
    monkeypatch.setenv("DPTUNE_HEARTBEAT_GRACE", "60")
    url = f"sqlite:///{tmp_path / 'optuna.db'}" if kind == "sqlite" else str(tmp_path / "s.journal")
    storage = open_storage(url, tmp_path)
    study = optuna.create_study(study_name="s", storage=storage)
    ids = []
    for grid_id, x in enumerate(("stale", "fresh")):
        study.enqueue_trial({"x": x})
        trial = study.ask()
        trial.suggest_categorical("x", ["stale", "fresh"])
        storage.set_trial_system_attr(trial._trial_id, "grid_id", grid_id)
        storage.set_trial_system_attr(trial._trial_id, "search_space", {"x": ["stale", "fresh"]})
        trial.set_user_attr("worker", f"elsewhere:{_dead_pid()}")
        trial.set_user_attr("pid_space", "another-machine")
        if kind == "sqlite":
            storage.record_heartbeat(trial._trial_id)
        else:
            trial.set_user_attr("heartbeat", time.time() - (3600 if x == "stale" else 0))
        ids.append(trial._trial_id)
    if kind == "sqlite":  # the stale trial's last beat, an hour before the database's clock
        with sqlite3.connect(tmp_path / "optuna.db") as db:
            db.execute("UPDATE trial_heartbeats SET heartbeat = datetime('now', '-1 hour') "
                       "WHERE trial_id = ?", (ids[0],))
    live = _live_running(study)
    assert [t.number for t in live] == [1]  # the fresh one, read once
    trials = study.get_trials(deepcopy=False)
    assert [t.state.name for t in trials] == ["FAIL", "RUNNING", "WAITING"]
    assert trials[2].params == {} and trials[2].system_attrs["grid_id"] == 0
