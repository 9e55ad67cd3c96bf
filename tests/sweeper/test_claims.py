"""Trials of workers that are gone: a RUNNING trial whose process on this host no longer exists
(Ctrl-C, ``kill``) is pending in ``dptune status``, not running and not failed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import optuna
from conftest import write_experiment

from dptune.config import load_experiment
from dptune.sweeper._claims import worker_gone, worker_id
from dptune.sweeper._plan import plan
from dptune.sweeper._status import status
from dptune.sweeper._storage import study_name


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_worker_gone_only_for_a_local_process_that_no_longer_exists() -> None:
    host = socket.gethostname()
    assert not worker_gone(worker_id())  # this process
    assert worker_gone(f"{host}:{_dead_pid()}")
    assert not worker_gone(f"elsewhere-{host}:{_dead_pid()}")  # another host: cannot tell
    for odd in (None, "", "no-pid", f"{host}:", f"{host}:abc"):
        assert not worker_gone(odd)


def _running_trial(storage: str, name: str, params: dict, choices: dict, worker: str) -> None:
    study = optuna.create_study(study_name=name, storage=storage, load_if_exists=True)
    study.enqueue_trial(params)  # the trial takes exactly these values
    trial = study.ask()
    for k, v in params.items():
        assert trial.suggest_categorical(k, choices[k]) == v
    trial.set_user_attr("worker", worker)
    trial.set_user_attr("state", "computing")


def test_status_counts_a_gone_workers_trial_as_pending_and_a_live_ones_as_running(
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
    for task, worker in ((gone, f"{host}:{_dead_pid()}"), (live, f"{host}:{os.getpid()}")):
        _running_trial(storage, study_name(exp, alg), {"fold": task.fold, **task.params},
                       choices, worker)
    row = status(exp, results)["algorithms"][alg]
    assert (row["running"], row["failed"], row["done"]) == (1, 0, 0), row
    assert row["remaining"] == row["total"]
