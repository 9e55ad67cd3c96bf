"""Ctrl-C stops every stage of ``dptune run`` (validation sweep, test split, noise floor,
analysis) and ``dptune analyze``: one line on stderr saying what is kept and how to resume,
exit code 130, the finished parts intact, no worker process left computing.

Each test starts the command in its own process group (as a terminal does), waits for a
*state*, never for a time: a ``sitecustomize`` hook put on the processes' PYTHONPATH patches
the stage's work so that, once the stage has started, it writes a marker file (its process
id) and then keeps doing that stage's real work over and over; the test waits for the marker,
sends SIGINT to the whole group (what Ctrl-C does), and waits for the command to end (a
generous guard, not a measured time). One small finished store is built once; each test
copies it and removes what the stage under test computes, so the command resumes right there.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
NAME = "synthetic"  # the experiment of conftest's synthetic_swept
GUARD = 180  # seconds: only a safety net against a hung command; no assertion on time

#: The stage hooks: each patches the function that does one stage's work (in the process that
#: runs it: the CLI or its worker processes) to write the marker, then repeat the real work.
HOOK = r'''
import os
from pathlib import Path

_stage = os.environ.get("DPTUNE_TEST_STAGE")
_marker = Path(os.environ.get("DPTUNE_TEST_MARKER", "marker"))


def _mark():
    tmp = _marker.with_name(_marker.name + f".{os.getpid()}.tmp")
    tmp.write_text(str(os.getpid()))
    os.replace(tmp, _marker)


def _forever(work):
    def again(*args, **kwargs):
        _mark()
        while True:
            work(*args, **kwargs)
    return again


if _stage == "sweep":
    import dptune.sweeper._worker as _m
    _m.compute_unit = _forever(_m.compute_unit)  # the workers' parts go to their part writer
elif _stage == "test":
    import dptune.sweeper._local as _m
    _orig = _m.run_unit
    _m.run_unit = lambda exp, task, store: (_forever(_orig)(exp, task, store)
                                            if task.fold == "test" else _orig(exp, task, store))
elif _stage == "noise":
    import dptune.sweeper._noise as _m
    _orig_noise = _m.run_noise_task

    def _noise(exp, task, root, seeds):
        _mark()
        while True:  # the part is trained again and again (each time from scratch)
            part = Path(_orig_noise(exp, task, root, seeds))
            part.unlink(missing_ok=True)
            (part.parents[1] / "index" / part.parent.name / (part.name + ".json")).unlink(
                missing_ok=True)
    _m.run_noise_task = _noise
elif _stage == "analysis":
    import dptune._api as _m
    _m.analyze = _forever(_m.analyze)
'''


@pytest.fixture(scope="module")
def finished(synthetic_swept) -> tuple[Path, Path]:
    """conftest's finished tiny store (120 synthetic users; validation, test split, 2-seed
    noise floor), read only: (config, results)."""
    return synthetic_swept / f"{NAME}.toml", synthetic_swept / "results"


def _parts(root: Path) -> dict[str, int]:
    return {f"{p.parent.name}/{p.name}": p.stat().st_mtime_ns
            for d in ("per_user.parquet", "noise_floor.parquet") if (root / d).is_dir()
            for p in (root / d).glob("*.parquet")}


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie waiting for its reaper counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")


def _interrupt(tmp_path: Path, stage: str, argv: list[str],
               sigterm: bool = False) -> tuple[subprocess.CompletedProcess, int]:
    """Run ``dptune ARGV`` with the ``stage`` hook, SIGINT its process group once the stage
    has started (or, ``sigterm``, send SIGTERM to the command's own process alone, as ``kill
    PID`` does), and return its result and the pid that was doing the stage's work."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HOOK)
    marker = tmp_path / "marker"
    env = dict(os.environ, DPTUNE_TEST_STAGE=stage, DPTUNE_TEST_MARKER=str(marker),
               PYTHONPATH=os.pathsep.join([str(hook), str(ROOT)]), OMP_NUM_THREADS="1",
               PYTHONUNBUFFERED="1")

    def as_a_terminal() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # background jobs start with it ignored
        os.setpgrp()

    p = subprocess.Popen([sys.executable, "-m", "dptune.cli", *argv], env=env,
                         preexec_fn=as_a_terminal, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + GUARD
    while not marker.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # waiting for the state: the stage has started
    assert marker.exists(), f"the {stage} stage never started: {p.poll()} {p.stderr.read() if p.poll() is not None else ''}"
    if sigterm:
        os.kill(p.pid, signal.SIGTERM)
    else:
        os.killpg(p.pid, signal.SIGINT)
    try:
        out, err = p.communicate(timeout=GUARD)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        pytest.fail(f"Ctrl-C did not stop the {stage} stage: {err[-2000:]}")
    pid = int(marker.read_text())
    deadline = time.monotonic() + GUARD
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)  # a worker ends once it sees its parent gone
    return subprocess.CompletedProcess(argv, p.returncode, out, err), pid


def _one_line(err: str) -> str:
    """The one line of the interruption, beside the run's own progress lines (the bars and the
    announcement of the design, prefixed with the experiment's name)."""
    lines = [line for line in err.splitlines() if line.strip() and "%|" not in line
             and not line.startswith(f"{NAME}: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("stage, removed", [
    ("sweep", "per_user.parquet/bpr-mf__1__u00001.parquet"),
    ("test", "per_user.parquet/bpr-mf__test__*.parquet"),
    ("noise", "noise_floor.parquet/*.parquet"),
])
def test_ctrl_c_stops_each_stage_of_run(finished, tmp_path, stage, removed):
    cfg, results = finished
    root = tmp_path / "results"
    shutil.copytree(results, root)
    gone = []
    for p in root.glob(removed):  # not computed yet: no part, no index entry, no trial
        p.unlink()
        (root / "index" / p.parent.name / f"{p.name}.json").unlink()
        gone.append(p.name)
    trials = pd.read_csv(root / "trials.csv", dtype=str)
    listed = trials["algorithm"] + "__" + trials["fold"] + "__" + trials["unit"] + ".parquet"
    trials[~listed.isin(gone)].to_csv(root / "trials.csv", index=False, lineterminator="\n")
    noise = pd.read_csv(root / "noise_trials.csv", dtype=str)  # the noise floor's runs
    listed = (noise["algorithm"] + "__" + noise["fold"] + "__c"
              + noise["config_id"].str.zfill(6) + ".parquet")
    noise[~listed.isin(gone)].to_csv(root / "noise_trials.csv", index=False,
                                     lineterminator="\n")
    kept = _parts(root)
    res, pid = _interrupt(tmp_path, stage, ["run", str(cfg), "--results", str(root),
                                            "--reports", str(tmp_path / "rep"), "--jobs", "2"])
    assert res.returncode == 130, res.stderr
    line = _one_line(res.stderr)
    assert line.startswith("dptune: interrupted") and "run the same command" in line, line
    assert _gone(pid), f"process {pid} still computes the {stage} stage"
    now = _parts(root)
    assert {k: now.get(k) for k in kept} == kept  # every finished part kept, untouched
    from dptune.store._store import ResultStore

    assert [why for _, why in ResultStore(root).damaged()] == []
    assert not (tmp_path / "rep").exists()


def test_sigterm_stops_a_sweep_as_ctrl_c_does(finished, tmp_path):
    """``kill PID`` (SIGTERM to the command alone, as a job scheduler or ``docker stop`` sends
    before SIGKILL) stops the sweep as Ctrl-C does: one line, exit code 143, its worker
    processes ended, every finished part kept, the store undamaged, and no warning of leaked
    semaphores or folders (the process used to die at once, and its pool's resource tracker
    printed them after it)."""
    cfg, results = finished
    root = tmp_path / "results"
    shutil.copytree(results, root)
    part = root / "per_user.parquet" / "bpr-mf__1__u00001.parquet"
    part.unlink()
    (root / "index" / part.parent.name / f"{part.name}.json").unlink()
    trials = pd.read_csv(root / "trials.csv", dtype=str)
    listed = trials["algorithm"] + "__" + trials["fold"] + "__" + trials["unit"] + ".parquet"
    trials[listed != part.name].to_csv(root / "trials.csv", index=False, lineterminator="\n")
    kept = _parts(root)
    res, pid = _interrupt(tmp_path, "sweep", ["run", str(cfg), "--results", str(root),
                                              "--reports", str(tmp_path / "rep"), "--jobs", "2"],
                          sigterm=True)
    assert res.returncode == 143, res.stderr
    line = _one_line(res.stderr)
    assert line.startswith("dptune: interrupted (SIGTERM)") and "run the same command" in line
    assert "leaked" not in res.stderr
    assert _gone(pid), f"process {pid} still computes the sweep"
    now = _parts(root)
    assert {k: now.get(k) for k in kept} == kept
    from dptune.store._store import ResultStore

    assert [why for _, why in ResultStore(root).damaged()] == []
    assert not (tmp_path / "rep").exists()


def test_ctrl_c_stops_the_analysis(finished, tmp_path):
    cfg, results = finished
    reports = tmp_path / "rep"
    res, _ = _interrupt(tmp_path, "analysis", ["analyze", str(results), "--reports", str(reports)])
    assert res.returncode == 130, res.stderr
    line = _one_line(res.stderr)
    assert line.startswith("dptune: interrupted") and "run the same command" in line, line
    assert not reports.exists()  # nothing half-written
