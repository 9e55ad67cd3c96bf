"""Ctrl-C during ``dptune run`` with worker processes: one line on stderr (no worker traceback,
no loky warning about leaked semaphores), exit 130, and ``dptune status`` counts the
interrupted units as remaining, not failed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import write_experiment

pytestmark = pytest.mark.slow  # starts real worker processes and waits for a unit


def _run_and_interrupt(cfg: Path, results: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Start ``dptune run`` in its own process group (as a terminal would), send the whole group
    SIGINT (what Ctrl-C does) once the first part is written, and collect its output."""
    cmd = [sys.executable, "-m", "dptune.cli", "run", str(cfg), "--results", str(results),
           "--jobs", "2", "--no-analyze", "--no-progress"]

    def as_a_terminal() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # background jobs start with it ignored
        os.setpgrp()

    p = subprocess.Popen(cmd, preexec_fn=as_a_terminal, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env, text=True)
    deadline = time.time() + 300
    while (not any((results / "per_user.parquet").glob("*.parquet")) and p.poll() is None
           and time.time() < deadline):
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=120)
    _wait_for_the_group_to_end(p.pid)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def _wait_for_the_group_to_end(pgid: int, patience_s: float = 120.0) -> None:
    """Wait until no process of group ``pgid`` is left (the run's workers end on their own when
    they see their parent gone); fail if one is still there after ``patience_s``, a guard far
    beyond their exit, not a timing."""
    deadline = time.monotonic() + patience_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.killpg(pgid, signal.SIGKILL)
    pytest.fail(f"a process of the interrupted run was still there after {patience_s:g} s")


def test_ctrl_c_is_one_line_and_leaves_no_failed_unit(tmp_path):
    cfg = write_experiment(tmp_path / "exp")
    results = tmp_path / "results"
    env = {**os.environ, "DPTUNE_HEARTBEAT_INTERVAL": "1", "DPTUNE_HEARTBEAT_GRACE": "3",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    res = _run_and_interrupt(cfg, results, env)
    assert res.returncode == 130, res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines == ["dptune: interrupted; finished units are kept, run the same command to "
                     "resume"], res.stderr
    # no wait for the heartbeat grace: an interrupted trial, or a RUNNING one whose worker on
    # this host is gone, is pending at once
    st = subprocess.run([sys.executable, "-m", "dptune.cli", "status", str(results)],
                        capture_output=True, text=True, env=env, timeout=120)
    assert st.returncode == 0, st.stderr
    rows = [line.split() for line in st.stdout.splitlines()[1:3]]
    assert all(row[3] == row[4] == "0" for row in rows), st.stdout  # running, failed
