"""The sweep's part writer (:mod:`dptune.store._writer`) and the trial loop that uses it
(:mod:`dptune.sweeper._trials`), with the host engine on a small synthetic BPR-MF sweep.

- a part is written while the next unit is computed (each write, held open, sees the next
  unit's computation start), and the writer holds at most its bound of parts;
- a part written by the writer is the file (bytes, index entry) written in line;
- a run stopped with parts queued (Ctrl-C in the loop; SIGKILL of the process) leaves no part
  half-written and no trial COMPLETE without its part; run again, it holds every unit's part
  exactly once, with the values of an uninterrupted run, every checksum verified;
- an error in a part's write is that unit's error: its trial fails and the error is raised.

Nothing here depends on the machine's speed: the writes are held at states (the next unit's
computation started, a marker file) and the tests wait on states; the only timeouts
(:data:`GUARD`) end a test whose awaited state never comes.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import optuna
import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import bpr_grid, write_synthetic_ratings

import dptune.store._parts as parts_module
import dptune.store._store as store_module
import dptune.sweeper._worker as worker_module
from dptune.config import load_experiment
from dptune.store._integrity import META_CRC
from dptune.store._schema import PARTS
from dptune.store._store import ResultStore
from dptune.store._writer import PART_QUEUE, PartWriter
from dptune.sweeper._plan import plan
from dptune.sweeper._run import run_sweep
from dptune.sweeper._storage import study_name

#: Only ends a test whose awaited state never comes; it never decides a result.
GUARD = 300

EXPERIMENT = """
name = "{name}"
seed = 7
[data]
source = "{data}"
[split]
folds = 2
[evaluation]
cutoffs = [5, 10]
test_split = false
[analysis]
noise_seeds = 0
[sweep]
jobs = 1
[[algorithms]]
name = "bpr-mf"
type = "bpr-mf"
grid = "{bpr}"
"""
#: 3 BPR-MF units (factors) of 2 snapshots (iterations) on 2 folds: 6 parts.
TASKS = 6


def _experiment(directory: Path, name: str = "writer") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    data = write_synthetic_ratings(directory / "ratings.csv", 120, 80, 30)
    (directory / "bpr.toml").write_text(bpr_grid([4, 8, 12], [1, 2], [0.05]))
    cfg = directory / f"{name}.toml"
    cfg.write_text(EXPERIMENT.format(name=name, data=data, bpr=directory / "bpr.toml"))
    return cfg


def _sweep(cfg: Path, results: Path) -> ResultStore:
    return run_sweep(cfg, results, jobs=1, progress=False, noise_seeds=0)[0]


def _values(root: Path) -> dict[str, tuple[pd.DataFrame, dict]]:
    """Every part's rows and its metadata without the timings (which differ run to run) and
    the metadata's checksum, which covers them."""
    out = {}
    for p in sorted((root / PARTS).glob("[!.]*.parquet")):
        table = pq.read_table(p)
        meta = store_module.part_meta(p)
        for key in ("fit_seconds", "eval_seconds", META_CRC):
            meta.pop(key)
        out[p.name] = (table.to_pandas(), meta)
    return out


def _assert_same_values(root: Path, reference: dict[str, tuple[pd.DataFrame, dict]]) -> None:
    got = _values(root)
    assert sorted(got) == sorted(reference)
    for name, (rows, meta) in reference.items():
        pd.testing.assert_frame_equal(got[name][0], rows)
        assert got[name][1] == meta


def _trials(cfg: Path, root: Path) -> list[optuna.trial.FrozenTrial]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=study_name(load_experiment(cfg), "bpr-mf"),
                              storage=f"sqlite:///{root / 'optuna.db'}")
    return study.get_trials(deepcopy=False)


def _part_of(trial: optuna.trial.FrozenTrial) -> str:
    return f"bpr-mf__{trial.params['fold']}__{trial.user_attrs['unit']}.parquet"


def _assert_no_trial_done_without_its_part(cfg: Path, root: Path) -> None:
    on_disk = {p.name for p in (root / PARTS).glob("[!.]*.parquet")}
    for t in _trials(cfg, root):
        if t.state == optuna.trial.TrialState.COMPLETE:
            assert _part_of(t) in on_disk, (t.number, t.user_attrs)


def _assert_complete_and_verified(root: Path, tasks: int = TASKS) -> None:
    store = ResultStore(root)
    assert store.damaged() == []
    assert len(store.part_paths()) == tasks
    trials = pd.read_csv(root / "trials.csv")
    assert not trials.duplicated(["algorithm", "config_id", "fold"]).any()
    assert len(trials) == tasks * 2  # two snapshots (configurations) per unit
    assert not list((root / PARTS).glob(".*.tmp"))


@pytest.fixture(scope="module")
def experiment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The experiment's TOML, one for the module (each test sweeps into its own directory)."""
    return _experiment(tmp_path_factory.mktemp("writer-exp"))


@pytest.fixture(scope="module")
def reference(experiment: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> dict[str, tuple[pd.DataFrame, dict]]:
    """The values of the sweep run without interruption."""
    store = _sweep(experiment, tmp_path_factory.mktemp("writer-ref") / "results")
    _assert_complete_and_verified(store.root)
    return _values(store.root)


class _Recorder:
    """Events of the units' computations and of the parts' writes, in order, from both threads;
    ``computing[k]`` is set when the k-th computation starts."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int]] = []
        self.computing = [threading.Event() for _ in range(TASKS + 1)]
        self.computed = 0
        self.written = 0

    def compute(self, real):
        def compute_unit(exp, task):
            k = self.computed
            self.computed += 1
            self.events.append(("compute", k))
            self.computing[k].set()
            return real(exp, task)
        return compute_unit

    def write(self, real, hold=None):
        """``real``, each call recorded; ``hold(k)`` runs first in the k-th write."""
        def write_part(root, res, fingerprint=None):
            k = self.written
            self.written += 1
            self.events.append(("write", k))
            if hold is not None:
                hold(k)
            out = real(root, res, fingerprint)
            self.events.append(("written", k))
            return out
        return write_part


# --------------------------------------------------------------------------- overlap
def test_each_part_is_written_while_the_next_unit_is_computed(tmp_path, monkeypatch, experiment,
                                                                reference):
    """The k-th write is held until the (k+1)-th unit's computation has started: with writes
    in line that never happens (the guard would end the write, and the test fails). So the
    time of N units is that of the longer of computing and writing, not of their sum."""
    rec = _Recorder()
    overlapped: dict[int, bool] = {}

    def hold(k: int) -> None:
        if k < TASKS - 1:  # the last part has no next unit to overlap
            overlapped[k] = rec.computing[k + 1].wait(GUARD)

    monkeypatch.setattr(worker_module, "compute_unit", rec.compute(worker_module.compute_unit))
    monkeypatch.setattr(store_module, "write_part", rec.write(store_module.write_part, hold))
    store = _sweep(experiment, tmp_path / "results")
    assert overlapped == dict.fromkeys(range(TASKS - 1), True)
    for k in range(TASKS - 1):
        assert rec.events.index(("compute", k + 1)) < rec.events.index(("written", k))
    _assert_complete_and_verified(store.root)
    _assert_same_values(store.root, reference)


def test_the_writer_holds_at_most_its_bound_and_writes_in_order(tmp_path):
    """Two parts held (one being written, one queued): no room for a third, whose ``submit``
    waits; once the first write ends it is taken. Parts are written in the order submitted."""
    gate = threading.Event()
    written: list[str] = []

    def write(res):
        gate.wait(GUARD)
        written.append(res)
        return Path(res)

    writer = PartWriter(write, bound=2)
    first, second = writer.submit("a"), writer.submit("b")
    assert not writer._room.acquire(blocking=False)  # a third submit would wait
    gate.set()
    third = writer.submit("c")
    assert first.done() and first.result() == Path("a")
    writer.close()
    assert second.result() == Path("b") and third.result() == Path("c")
    assert written == ["a", "b", "c"]
    with pytest.raises(RuntimeError, match="closed"):
        writer.submit("d")


def test_a_part_from_the_writer_is_the_part_written_in_line(tmp_path, experiment):
    """The same unit written by the writer thread and in line: the same bytes and the same
    index entry (size, CRC-32, identity, fingerprint)."""
    from dptune.store._integrity import entry_path

    cfg = experiment
    exp = load_experiment(cfg)
    store = _sweep(cfg, tmp_path / "results")
    task = next(t for t in plan(exp, "bpr-mf", ["0", "1"]) if t.fold == "1")
    res = worker_module.compute_unit(exp, task)
    out = {}
    for how in ("line", "thread"):
        root = tmp_path / how
        (root / PARTS).mkdir(parents=True)
        for name in ("manifest.json", "configs.csv", "users.csv"):
            (root / name).write_bytes((store.root / name).read_bytes())
        target = ResultStore(root)
        if how == "line":
            part = target.write_unit(res)
        else:
            with PartWriter(target.write_unit) as writer:
                fut = writer.submit(res)
            part = fut.result()
        out[how] = (part.name, part.read_bytes(), entry_path(part).read_text())
        assert target.has_part("bpr-mf", task.fold, task.unit)
    assert out["line"] == out["thread"]


# --------------------------------------------------------------------------- interrupted
def test_ctrl_c_with_parts_queued_loses_nothing_and_resumes_exactly(tmp_path, monkeypatch,
                                                                    experiment, reference):
    """Ctrl-C in the third unit's computation while the first part is being written and the
    second is queued: both are written and their trials told before the interrupt goes on;
    the interrupted unit's trial is marked so; the run again computes only what is missing."""
    assert PART_QUEUE >= 2  # one part being written and one queued
    rec = _Recorder()
    real_compute = worker_module.compute_unit

    def hold(k: int) -> None:
        if k == 0:
            assert rec.computing[2].wait(GUARD)

    def compute_unit(exp, task):
        if rec.computed == 2:
            rec.computed += 1
            rec.computing[2].set()
            raise KeyboardInterrupt
        return rec.compute(real_compute)(exp, task)

    monkeypatch.setattr(worker_module, "compute_unit", compute_unit)
    monkeypatch.setattr(store_module, "write_part", rec.write(store_module.write_part, hold))
    cfg = experiment
    results = tmp_path / "results"
    with pytest.raises(KeyboardInterrupt):
        _sweep(cfg, results)
    assert ("write", 1) in rec.events  # the second part was queued behind the first
    _assert_two_kept_then_resumed(cfg, results, reference, monkeypatch)


def _assert_two_kept_then_resumed(cfg, results, reference, monkeypatch) -> None:
    """A sweep interrupted after two units: their parts on disk, whole, their trials computed
    and the next one interrupted, no trial done without its part; run again (``monkeypatch``
    undone), every unit's part exactly once with the uninterrupted run's values, the two kept
    never written again."""
    before = {p.name: p.stat().st_mtime_ns for p in (results / PARTS).glob("[!.]*.parquet")}
    assert len(before) == 2
    assert ResultStore(results).damaged() == []
    _assert_no_trial_done_without_its_part(cfg, results)
    states = [t.user_attrs.get("state") for t in _trials(cfg, results)]
    assert states.count("computed") == 2 and states.count("interrupted") == 1

    monkeypatch.undo()
    store = _sweep(cfg, results)
    _assert_complete_and_verified(store.root)
    _assert_same_values(store.root, reference)
    after = {p.name: p.stat().st_mtime_ns for p in (results / PARTS).glob("[!.]*.parquet")}
    assert {n: after[n] for n in before} == before  # written once, never again
    _assert_no_trial_done_without_its_part(cfg, results)


def test_ctrl_c_while_a_queued_part_is_waited_for_is_no_failed_unit(tmp_path, monkeypatch,
                                                                    experiment, reference):
    """Ctrl-C while the worker waits for its last part (every grid point taken, the part still
    being written; the stopping process cuts the write short): the trial was told FAIL without
    saying it was interrupted, so ``dptune status`` counted its unit as failed, where an
    interrupted unit is to do. It is marked interrupted; the run again computes that unit."""
    from concurrent.futures import Future

    import dptune.store._writer as writer_module
    from dptune.sweeper._status import status

    waited = threading.Event()
    submitted = []

    class Waited(Future):
        """The last part's future: Ctrl-C comes while the worker waits for it."""

        def result(self, timeout=None):
            if len(submitted) == TASKS and self is submitted[-1]:
                waited.set()
                raise KeyboardInterrupt
            return super().result(timeout)

    def future():
        fut = Waited()
        submitted.append(fut)
        return fut

    def hold(k: int) -> None:
        if k == TASKS - 1:  # the last write: on until the interrupt, then cut short
            assert waited.wait(GUARD)
            raise OSError("the process stopped during the write")

    monkeypatch.setattr(writer_module, "Future", future)
    monkeypatch.setattr(store_module, "write_part", _Recorder().write(store_module.write_part,
                                                                      hold))
    cfg, results = experiment, tmp_path / "results"
    with pytest.raises(KeyboardInterrupt):
        _sweep(cfg, results)
    assert len(list((results / PARTS).glob("[!.]*.parquet"))) == TASKS - 1
    states = {t.state: t.user_attrs.get("state") for t in _trials(cfg, results)
              if t.state != optuna.trial.TrialState.COMPLETE}
    assert states == {optuna.trial.TrialState.FAIL: "interrupted"}
    bpr = status(None, results)["algorithms"]["bpr-mf"]
    assert (bpr["done"], bpr["failed"], bpr["remaining"]) == (TASKS - 1, 0, 1), bpr

    monkeypatch.undo()
    store = _sweep(cfg, results)
    _assert_complete_and_verified(store.root)
    _assert_same_values(store.root, reference)


def test_an_interrupted_sweep_in_a_notebook_stops_after_its_unit(tmp_path, monkeypatch,
                                                                  experiment, reference):
    """Ctrl-C in a notebook while ``sweep(jobs=1)`` computes its second unit: control comes
    back at once, and the sweep's thread, which went on with every other unit in the
    background, stops after the unit in progress, which is kept; its next trial is marked
    interrupted. The sweep run again computes only what is missing."""
    import _thread

    caught, ended = threading.Event(), threading.Event()
    real_compute, real_work = worker_module.compute_unit, worker_module._work
    computed = []

    def work(*args, **kwargs):  # the sweep's work, in its thread
        try:
            return real_work(*args, **kwargs)
        finally:
            ended.set()

    def compute_unit(exp, task):
        computed.append(task)
        if len(computed) == 2:
            _thread.interrupt_main()  # Ctrl-C: KeyboardInterrupt in the waiting main thread
            assert caught.wait(GUARD)
        return real_compute(exp, task)

    monkeypatch.setattr(worker_module, "compute_unit", compute_unit)
    monkeypatch.setattr(worker_module, "_work", work)
    cfg, results = experiment, tmp_path / "results"
    # Python's own Ctrl-C handler, as in a notebook (a pytest-xdist worker ignores SIGINT, and
    # interrupt_main then raises nothing)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            _sweep(cfg, results)
    finally:
        signal.signal(signal.SIGINT, previous)
    caught.set()
    # (not Thread.join: a join that Ctrl-C interrupted leaves the thread reported not alive)
    assert ended.wait(GUARD), "the sweep went on after the interrupt"
    assert len(computed) == 2  # no unit started after the interrupt
    _assert_two_kept_then_resumed(cfg, results, reference, monkeypatch)


#: Imported by the killed process (PYTHONPATH): its first part is written; the second write
#: marks itself ``held`` and never ends; each part handed to the writer marks ``submitted-N``.
HELD_WRITES = """
import time
from pathlib import Path

from dptune.store._store import ResultStore
from dptune.store._writer import PartWriter

_HERE = Path(__file__).parent
_write_unit, _submit = ResultStore.write_unit, PartWriter.submit
_count = {"write": 0, "submit": 0}


def _held_write_unit(self, res):
    _count["write"] += 1
    if _count["write"] >= 2:
        (_HERE / "held").touch()
        while True:
            time.sleep(1)
    return _write_unit(self, res)


def _marked_submit(self, res):
    fut = _submit(self, res)
    _count["submit"] += 1
    (_HERE / f"submitted-{_count['submit']}").touch()
    return fut


ResultStore.write_unit = _held_write_unit
PartWriter.submit = _marked_submit
"""
HEARTBEAT = {"DPTUNE_HEARTBEAT_INTERVAL": "1", "DPTUNE_HEARTBEAT_GRACE": "3"}


def test_a_run_killed_with_parts_queued_resumes_exactly(tmp_path, monkeypatch, experiment,
                                                        reference):
    """``dptune run`` killed (SIGKILL) while its second part is being written and its third
    is queued: one part on disk, none half-written, no trial COMPLETE without its part; run
    again, every unit's part exactly once with the uninterrupted run's values."""
    assert PART_QUEUE >= 2  # one part being written and one queued
    cfg = experiment
    results = tmp_path / "results"
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "sitecustomize.py").write_text(HELD_WRITES)
    env = dict(os.environ, **HEARTBEAT, PYTHONPATH=os.pathsep.join(
        filter(None, [str(gate), str(Path(__file__).resolve().parents[2]),
                      os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, "-m", "dptune.cli", "run", str(cfg), "--results", str(results),
           "--no-analyze", "--no-progress"]
    with (tmp_path / "run.log").open("w") as log:
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + GUARD
            while not ((gate / "held").exists() and (gate / "submitted-3").exists()):
                assert p.poll() is None, (tmp_path / "run.log").read_text()
                assert time.monotonic() < deadline, "the run never reached the held state"
                time.sleep(0.05)
        finally:
            p.send_signal(signal.SIGKILL)  # also when the state never came: no process left
            p.wait(GUARD)

    visible = sorted(p.name for p in (results / PARTS).glob("[!.]*.parquet"))
    assert len(visible) == 1
    before = {visible[0]: (results / PARTS / visible[0]).stat().st_mtime_ns}
    assert ResultStore(results).damaged() == []
    _assert_no_trial_done_without_its_part(cfg, results)
    running = [t for t in _trials(cfg, results) if t.state == optuna.trial.TrialState.RUNNING]
    assert len(running) >= 2  # the held part's trial and the queued one's

    for name, value in HEARTBEAT.items():
        monkeypatch.setenv(name, value)
    store = _sweep(cfg, results)
    _assert_complete_and_verified(store.root)
    _assert_same_values(store.root, reference)
    assert (results / PARTS / visible[0]).stat().st_mtime_ns == before[visible[0]]
    _assert_no_trial_done_without_its_part(cfg, results)


# --------------------------------------------------------------------------- errors
def test_an_error_in_a_parts_write_is_that_units_error(tmp_path, monkeypatch, experiment,
                                                       reference):
    """The second part's write fails (an I/O error after its bytes were written to the
    temporary file): the error is raised by the sweep, that unit's trial failed and its part
    absent (no temporary file left), no trial COMPLETE without its part; the run again
    computes it."""
    rec = _Recorder()
    real_rows = parts_module._write_row_groups

    def failing_rows(tmp, res, schema):
        real_rows(tmp, res, schema)
        if rec.written == 2:  # the second write (the recorder counts writes as they start)
            raise OSError(errno.EIO, "simulated write error")

    monkeypatch.setattr(parts_module, "_write_row_groups", failing_rows)
    monkeypatch.setattr(store_module, "write_part", rec.write(store_module.write_part))
    cfg = experiment
    results = tmp_path / "results"
    with pytest.raises(OSError, match="simulated write error"):
        _sweep(cfg, results)
    assert ("written", 1) not in rec.events
    failed = [t for t in _trials(cfg, results) if t.state == optuna.trial.TrialState.FAIL]
    assert len(failed) == 1
    assert not (results / PARTS / _part_of(failed[0])).exists()
    assert not list((results / PARTS).glob(".*.tmp"))
    assert ResultStore(results).damaged() == []
    _assert_no_trial_done_without_its_part(cfg, results)

    monkeypatch.undo()
    store = _sweep(cfg, results)
    _assert_complete_and_verified(store.root)
    _assert_same_values(store.root, reference)


def test_writer_futures_carry_the_writes_error():
    """A write that raises fails its future only; later parts are still written."""
    def write(res):
        if res == "bad":
            raise OSError("no")
        return Path(res)

    with PartWriter(write) as writer:
        bad, good = writer.submit("bad"), writer.submit("good")
    assert isinstance(bad.exception(), OSError) and good.result() == Path("good")
