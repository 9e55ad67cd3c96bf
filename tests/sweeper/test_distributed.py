"""Distributed and crash-safe sweeps, with real worker processes.

Each scenario shares one sweep between three ``dptune worker`` processes on one optuna storage
(SQLite, journal file, PostgreSQL): worker K starts alone and is killed with SIGKILL once it
has written a part and is computing the next one; workers A and B then run concurrently and
must find K dead, redo its unit, and leave exactly one part per unit; the analysis of
that store (dp.csv, pvalues.parquet, pairs.csv) is byte-identical to a single-process run. K
is found dead in one of two ways: on this machine its process is gone, which A and B see at
once (:func:`dptune.sweeper._claims.worker_gone`; SQLite, PostgreSQL); posing as a worker of
another machine (:data:`ELSEWHERE`; the journal), its heartbeat goes stale. A last test kills
``dptune run`` itself and runs it again.

Nothing here races the clock: the processes to be killed are held at a state (their first part
written, every later unit held before it writes, :data:`GATED_PARTS`), and the tests wait on
states (marker files, trial states, parts, process exit) with a safety timeout that only ends
a test whose state never comes. The one duration a result rests on is the heartbeat's grace
(:data:`HEARTBEAT`), where K poses as another machine's worker: a live worker is taken for dead
only if its heartbeat thread misses :data:`GRACE_BEATS` beats in a row. Where K's process is
seen gone, every process runs with a grace of an hour (:data:`NEVER_STALE`), so a sweep that
waited for a heartbeat to go stale instead would not finish within the safety timeout.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from conftest import RESULTS, UNITS, write_experiment

from dptune.cli import main
from dptune.config import load_experiment
from dptune.sweeper import status

NAME = "dist"
COMPARED = ("dp.csv", "pvalues.parquet", "pairs.csv")
# A killed worker's trial is taken for dead once its heartbeat is GRACE_BEATS beats old (one
# beat a second; 10 s and 30 s by default). Generous on purpose: these tests run beside the
# other pytest worker's, and a live worker would have to miss that many beats in a row to be
# taken for dead; the price is that the killed worker's unit is redone that many seconds after
# the kill, time the other pytest worker computes in. (A unit computed by both A and B, seen
# once with 10 beats, fits two workers taking the same queued trial, since fixed
# (dptune.sweeper._claims.take_trial), better than a missed beat.)
GRACE_BEATS = 15
HEARTBEAT = {"DPTUNE_HEARTBEAT_INTERVAL": "1", "DPTUNE_HEARTBEAT_GRACE": str(GRACE_BEATS)}
#: The heartbeats where a dead worker's process is seen gone: none goes stale within a test.
NEVER_STALE = {"DPTUNE_HEARTBEAT_INTERVAL": "1", "DPTUNE_HEARTBEAT_GRACE": "3600"}
# Only ends a test whose awaited state never comes (a hung worker); it never decides a result.
TIMEOUT = 600
# Test instrumentation for the processes a test kills, imported by each of their Python
# processes (the CLI and its loky workers) through PYTHONPATH: the first unit to finish writes
# its part; every later one marks itself held (``held-<pid>``) and waits, computed but not
# written, for a ``release`` file that no test writes, so the process is killed mid-unit with
# exactly one part written, however fast or slow the machine.
GATED_PARTS = """
import os
import time
from pathlib import Path

from dptune.store._store import ResultStore

_write_unit = ResultStore.write_unit
_HERE = Path(__file__).parent


def _gated_write_unit(self, res):
    try:
        os.close(os.open(_HERE / "first-written", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        (_HERE / f"held-{os.getpid()}").touch()
        while not (_HERE / "release").exists():
            time.sleep(0.05)
    return _write_unit(self, res)


ResultStore.write_unit = _gated_write_unit
"""
# Instrumentation of a killed worker that poses as one of another machine: the pid space it
# records on its trials is not this machine's, so the other workers cannot see that its process
# is gone and must wait for its heartbeat to go stale, as workers on two machines would.
ELSEWHERE = """
from dptune.sweeper import _claims

_claims.pid_space = lambda: "another-machine"
"""


def _env(gate: Path | None = None, elsewhere: bool = False,
         heartbeat: dict[str, str] = NEVER_STALE) -> dict[str, str]:
    """The processes' environment, with these ``heartbeat`` settings; with ``gate``, a
    directory, their units are held after the first part (:data:`GATED_PARTS` written there and
    put first on PYTHONPATH), and with ``elsewhere`` they pose as workers of another machine
    (:data:`ELSEWHERE`)."""
    env = dict(os.environ, **heartbeat)
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               NUMBA_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    if gate is not None:
        gate.mkdir(parents=True, exist_ok=True)
        (gate / "sitecustomize.py").write_text(GATED_PARTS + (ELSEWHERE if elsewhere else ""))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(gate), env.get("PYTHONPATH")]))
    return env


#: Every process a test of this module started (:func:`_start`), killed at the test's end.
_STARTED: list[subprocess.Popen] = []


def _start(cmd: list[str], log: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen:
    """``cmd`` started with its output in ``log``; killed at the end of the test if it still
    runs (:func:`_no_process_left`)."""
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env,
                            cwd=str(cwd))
    _STARTED.append(proc)
    return proc


@pytest.fixture(autouse=True)
def _no_process_left() -> Iterator[None]:
    """A test that fails midway leaves none of its processes behind: one held at the gate
    waits for a release that never comes, so whatever still runs at the test's end is killed
    (SIGKILL; a ``dptune run``'s loky workers end once they see their parent gone). A test
    that passed has waited for every process it started, or killed it."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _held(gate: Path) -> int:
    """How many processes hold a computed unit at the gate (:data:`GATED_PARTS`)."""
    return len(list(gate.glob("held-*")))


@pytest.fixture(scope="module")
def reference(tiny_swept) -> tuple[Path, Path]:
    """The tiny experiment run in one process (``dptune run``, its ``jobs = 1``): conftest's
    session-wide run, read only: (experiment TOML, reports directory). It is named "tiny", the
    scenarios' copies :data:`NAME`; the experiment's name is in none of the :data:`COMPARED`
    files (report.md names it), so a difference there would fail the comparison, never pass it."""
    return tiny_swept / "exp" / "tiny.toml", tiny_swept / "reports"


def _worker(cfg: Path, storage: str, results: Path, log: Path, heartbeat: dict[str, str],
            gate: Path | None = None, elsewhere: bool = False) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "dptune.cli", "worker", str(cfg), "--storage", storage,
           "--results", str(results)]
    return _start(cmd, log, _env(gate, elsewhere, heartbeat), cfg.parent)


def _parts(results: Path) -> dict[str, int]:
    """Finished parts and their mtimes (ns)."""
    parts = results / "per_user.parquet"
    if not parts.is_dir():
        return {}
    return {p.name: p.stat().st_mtime_ns for p in parts.glob("*.parquet")}


class _Watch:
    """Reads the sweep's optuna studies through one storage connection."""

    def __init__(self, url: str, results: Path) -> None:
        from dptune.sweeper import open_storage

        self.results = results
        self.storage = open_storage(url, results)

    def trials(self) -> list:
        """Every trial of the sweep, each with its ``algorithm`` as a plain attribute."""
        import optuna

        out = []
        for s in optuna.get_all_study_summaries(self.storage):
            if s.study_name.startswith(f"{NAME}/"):
                study = optuna.load_study(study_name=s.study_name, storage=self.storage)
                for t in study.get_trials(deepcopy=True):
                    t.algorithm = s.study_name.split("/")[1]
                    out.append(t)
        return out

    def computing(self, told: bool = False) -> bool:
        """Some trial is computing a unit and at least one part is written (``told``: and
        some trial is COMPLETE, the written part's)."""
        from optuna.trial import TrialState

        if not _parts(self.results):
            return False
        trials = self.trials()
        return (any(t.state == TrialState.RUNNING and t.user_attrs.get("state") == "computing"
                    for t in trials)
                and (not told or any(t.state == TrialState.COMPLETE for t in trials)))


def _await(state, proc: subprocess.Popen, log: Path, what: str) -> None:
    """Wait until ``state()`` holds; fail if ``proc`` ends first or the state never comes
    (:data:`TIMEOUT`, a safety net, never reached by a working sweep however slow)."""
    deadline = time.monotonic() + TIMEOUT
    while not state():
        assert proc.poll() is None, f"ended before {what}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"never {what}:\n{log.read_text()[-3000:]}"
        time.sleep(0.05)


def _kill_when_held(proc: subprocess.Popen, watch: _Watch, gate: Path,
                    log: Path) -> dict[str, int]:
    """SIGKILL ``proc`` once it has written its one part and told its trial, and holds a
    computed unit at the gate (its trial computing); the parts then. The part writer writes a
    part while the next unit computes, and the trial of a written part is told by the loop
    after that: waiting for the tell makes the kill land after it, not at a racy moment."""
    _await(lambda: _held(gate) >= 1 and watch.computing(told=True), proc, log,
           "the worker held a unit after its first part was told")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    parts = _parts(watch.results)
    assert len(parts) == 1  # the gate let exactly one part through
    return parts


def _wait(proc: subprocess.Popen, log: Path) -> int:
    try:
        rc = proc.wait(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the process did not finish in {TIMEOUT} s:\n{log.read_text()[-3000:]}")
    assert rc == 0, log.read_text()[-3000:]
    return rc


def _computed(log: Path) -> int:
    m = re.search(r"worker finished: (\d+) units computed here", log.read_text())
    assert m, log.read_text()[-3000:]
    return int(m.group(1))


def _check_store(results: Path) -> None:
    """Exactly one part per unit and one result per (algorithm, config, fold): no duplicates."""
    names = sorted(_parts(results))
    assert len(names) == UNITS, names
    df = pd.read_parquet(results / "per_user.parquet", columns=["algorithm", "config_id", "fold",
                                                                "user", "metric", "cutoff"])
    keys = df[["algorithm", "config_id", "fold"]].drop_duplicates()
    assert len(keys) == RESULTS
    assert not df.duplicated().any()
    # (a worker killed while writing may leave a hidden .tmp file: every reader ignores it)


def _scenario(tmp_path: Path, reference: tuple[Path, Path], storage: str | None,
              monkeypatch: pytest.MonkeyPatch, k_elsewhere: bool) -> None:
    """The three workers on ``storage`` (None: the results' SQLite file); with
    ``k_elsewhere`` K poses as a worker of another machine (:data:`ELSEWHERE`)."""
    _, ref_reports = reference
    cfg = write_experiment(tmp_path / "exp", name=NAME)  # same set-up, own directory
    results = tmp_path / "results"
    url = storage or f"sqlite:///{results}/optuna.db"
    logs = {w: tmp_path / f"{w}.log" for w in "KAB"}

    # K alone: kill -9 once it has written a part and is computing another one (its later units
    # are held at the gate, so that the kill lands mid-sweep whatever the machine's speed).
    gate = tmp_path / "gate"
    heartbeat = HEARTBEAT if k_elsewhere else NEVER_STALE
    k = _worker(cfg, url, results, logs["K"], heartbeat, gate=gate, elsewhere=k_elsewhere)
    (results / "per_user.parquet").mkdir(parents=True, exist_ok=True)
    watch = _Watch(url, results)
    by_k = _kill_when_held(k, watch, gate, logs["K"])
    st = status(None, results, storage)
    assert sum(a["done"] for a in st["algorithms"].values()) == len(by_k)
    assert sum(a["remaining"] for a in st["algorithms"].values()) == UNITS - len(by_k)
    # K's unit: on this machine failed at once and queued again; from elsewhere "running"
    # until its heartbeat is stale (GRACE_BEATS s), then the same
    counts = {k: sum(a[k] for a in st["algorithms"].values()) for k in ("running", "queued")}
    assert counts["running"] + counts["queued"] <= 1
    if not k_elsewhere:
        assert counts["running"] == 0
    assert sum(a["failed"] for a in st["algorithms"].values()) == 0

    # A and B together finish the sweep, K's unit included.
    a = _worker(cfg, url, results, logs["A"], heartbeat)
    b = _worker(cfg, url, results, logs["B"], heartbeat)
    _wait(a, logs["A"])
    _wait(b, logs["B"])
    _check_store(results)
    after_workers = _parts(results)
    assert {n: after_workers[n] for n in by_k} == by_k  # K's parts were never rewritten
    # live duplicates wait for the owner's part: every unit is computed once (K's by A or B)
    assert _computed(logs["A"]) + _computed(logs["B"]) == UNITS - len(by_k)

    from optuna.trial import TrialState

    # K's trials left open: the one held at the gate, and any that K went on to compute while
    # the part writer held that part (it holds PART_QUEUE parts); each found stale and failed,
    # its unit redone by A or B (the count above), none of them the unit K wrote
    dead = [t for t in watch.trials() if t.user_attrs.get("worker", "").endswith(f":{k.pid}")
            and t.state != TrialState.COMPLETE]
    assert dead
    for t in dead:
        assert f"{t.algorithm}__{t.params['fold']}__{t.user_attrs['unit']}.parquet" not in by_k
        assert t.state == TrialState.FAIL

    # dptune status, from the results directory, and from the storage alone (a machine that
    # does not see the results directory: done = grid points with a COMPLETE trial)
    assert main(["status", str(results), *(["--storage", url] if storage else [])]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["status", "--config", str(cfg), "--storage", url]) == 0
    st = status(load_experiment(cfg), elsewhere / "results" / NAME, url)
    assert st["source"] == "optuna"
    assert {a: (v["done"], v["remaining"]) for a, v in st["algorithms"].items()} == {
        "userknn": (2, 0), "bpr-mf": (4, 0)}
    # the database holds no part: the later stages are not guessed ("waiting" beside "all
    # done", or a report "up to date" that nothing here was compared with); what the
    # experiment turns off is known from it (this one has no test split and no noise floor)
    assert {k: st[k]["state"] for k in ("test", "noise", "analysis")} == {
        "test": "off", "noise": "off", "analysis": "unknown"}
    assert st["analysis"]["text"].startswith("not known here: no results directory")
    on = status(replace(exp := load_experiment(cfg), evaluation=replace(
        exp.evaluation, test_split=True)), elsewhere / "results" / NAME, url)
    assert on["test"]["state"] == "unknown", on["test"]

    # the analysis of the shared store equals the single-process one, byte for byte
    _analysis_data(results, tmp_path / "reports")
    for name in COMPARED:
        assert (tmp_path / "reports" / name).read_bytes() == (ref_reports / name).read_bytes(), name
    assert _parts(results) == after_workers


def _analysis_data(results: Path, out: Path) -> None:
    """The data files of ``dptune analyze RESULTS`` written into ``out``: the same analysis
    through the Python API (the experiment's options, no importance: none of :data:`COMPARED`
    holds it), without the tables and figures that no test here reads."""
    from dptune import AnalysisOptions, ResultStore, analyze

    store = ResultStore(results)
    out.mkdir()
    analyze(store, AnalysisOptions.resolve(store.manifest(), importance=False)).write_data(out)


def _status_lines(out: str) -> dict[str, list[int]]:
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] in ("userknn", "bpr-mf"):
            rows[parts[0]] = [int(x) for x in parts[1:]]
    return rows


def test_sqlite_two_workers_and_a_killed_one(tmp_path, reference, capsys, monkeypatch):
    _scenario(tmp_path, reference, None, monkeypatch, k_elsewhere=False)
    out = capsys.readouterr().out
    # parts, done, running, failed, to do: the killed worker's unit is done, not failed
    assert _status_lines(out) == {"userknn": [2, 2, 0, 0, 0], "bpr-mf": [4, 4, 0, 0, 0]}


def test_journal_two_workers_and_a_killed_one_of_another_machine(tmp_path, reference,
                                                                 monkeypatch):
    """K's death is seen only through dptune's own heartbeat stamps (the journal has none of
    optuna's); optuna's are found stale by ``tests/sweeper/test_claims.py``."""
    _scenario(tmp_path, reference, str(tmp_path / "sweep.journal"), monkeypatch, k_elsewhere=True)


@pytest.mark.postgres
def test_postgres_two_workers_and_a_killed_one(tmp_path, reference, pg_url, monkeypatch):
    import optuna

    def clean() -> None:
        for s in optuna.get_all_study_summaries(pg_url):
            if s.study_name.startswith(f"{NAME}/"):
                optuna.delete_study(study_name=s.study_name, storage=pg_url)

    clean()  # a study left by an earlier run on the same server would be resumed, not tested
    try:
        _scenario(tmp_path, reference, pg_url, monkeypatch, k_elsewhere=False)
    finally:
        clean()


def _descendants(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (read from /proc: Linux only)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    out, frontier = set(), {pid}
    while frontier:
        frontier = {c for c, p in parents.items() if p in frontier} - out
        out |= frontier
    return out


def _running(pid: int) -> str | None:
    """The command line of ``pid`` if it is still running (not gone, not a zombie), else None."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None
    return None if state == "Z" else cmdline


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads the process tree from /proc")
def test_run_killed_leaves_no_process_and_rerun_resumes_exactly(tmp_path, reference):
    """``dptune run --jobs 2`` killed with SIGKILL mid-sweep: none of its processes (loky
    workers, resource trackers) is left running (they end on their own: the test waits for
    them to be gone); the same command then finishes the sweep without recomputing a finished
    unit (the dead trials' processes are gone, so it redoes their units at once), and its dp.csv,
    pvalues.parquet and pairs.csv are byte-identical to an uninterrupted run's. The killed
    run's units after the first are held at the gate (:data:`GATED_PARTS`), so it is killed
    with both workers mid-unit and one part written; the rerun is not held."""
    cfg_ref, ref_reports = reference
    cfg = write_experiment(tmp_path / "exp", name=NAME)
    results = tmp_path / "results"
    log = tmp_path / "run.log"
    cmd = [sys.executable, "-m", "dptune.cli", "run", str(cfg), "--results", str(results),
           "--reports", str(tmp_path / "reports"), "--no-progress", "--jobs", "2"]
    gate = tmp_path / "gate"
    proc = _start(cmd, log, _env(gate), tmp_path)
    (results / "per_user.parquet").mkdir(parents=True, exist_ok=True)
    watch = _Watch(f"sqlite:///{results}/optuna.db", results)
    seen: dict[int, str] = {}

    def both_held() -> bool:  # both workers hold a computed unit: every process is started
        for pid in _descendants(proc.pid):
            # read again at every look: a process seen between its fork and its exec still
            # shows its parent's command line, and kept so it was never counted as a worker
            seen[pid] = _running(pid) or seen.get(pid, "")
        workers = [c for c in seen.values() if "loky" in c and "popen" in c]
        return len(workers) >= 2 and _held(gate) >= 2 and watch.computing()

    _await(both_held, proc, log, "both workers held a unit")
    seen.update({pid: _running(pid) or "" for pid in _descendants(proc.pid)})
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    left: dict[int, str] = {}

    def all_gone() -> bool:
        left.clear()
        left.update({pid: c for pid in seen if (c := _running(pid)) is not None and c == seen[pid]})
        return not left

    deadline = time.monotonic() + TIMEOUT  # a safety net: they end on their own or never
    while not all_gone():
        assert time.monotonic() < deadline, f"processes of the killed run still running: {left}"
        time.sleep(0.1)
    before = _parts(results)
    assert len(before) == 1  # the gate let exactly one part through

    rerun = _start(cmd, tmp_path / "rerun.log", _env(), tmp_path)  # not held; grace of an hour
    _wait(rerun, tmp_path / "rerun.log")
    _check_store(results)
    after = _parts(results)
    assert {n: after[n] for n in before} == before
    trials = pd.read_csv(results / "trials.csv")
    assert len(trials) == RESULTS and not trials.duplicated(["algorithm", "config_id", "fold"]).any()
    for name in COMPARED:
        assert (tmp_path / "reports" / name).read_bytes() == (ref_reports / name).read_bytes(), name
