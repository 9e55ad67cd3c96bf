"""Worker processes end with the process that started them: an orphaned worker starts no more
work (``exit_if_orphaned`` before each unit), whatever its watch thread's timing."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dptune._interrupt import check as check_interrupt
from dptune._parallel import in_background

ROOT = str(Path(__file__).resolve().parents[1])
#: Only ends a test whose awaited state never comes; it never decides a result.
GUARD = 120


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)


def test_outside_a_worker_nothing_happens() -> None:
    r = _run("import dptune._parallel as p; p.exit_if_orphaned(); print('on')")
    assert r.returncode == 0 and r.stdout.strip() == "on", r.stderr


def test_a_worker_whose_parent_is_gone_ends_before_its_next_unit() -> None:
    # the parent recorded at start-up is not this process's parent any more
    r = _run("import os, dptune._parallel as p\n"
             "p._PARENT = os.getppid() + 1\n"
             "p.exit_if_orphaned()\n"
             "print('started a unit')")
    assert r.returncode == 1 and "started a unit" not in r.stdout, (r.stdout, r.stderr)


def test_a_worker_whose_parent_lives_goes_on() -> None:
    r = _run("import os, dptune._parallel as p\n"
             "p._die_with_parent(os.getppid())\n"
             "p.exit_if_orphaned()\n"
             "print('started a unit')")
    assert r.returncode == 0 and "started a unit" in r.stdout, r.stderr


def test_worker_processes_leave_ctrl_c_to_their_parent() -> None:
    # Ctrl-C reaches the whole process group; a worker that acted on it would print its own
    # traceback (or "Exception ignored", when it lands in a finalizer)
    r = _run("import signal, dptune._parallel as p\n"
             "def f(_):\n"
             "    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN\n"
             "print(p.run_parallel(f, [(0,), (1,)], jobs=2))")
    assert r.returncode == 0 and r.stdout.strip() == "[True, True]", (r.stdout, r.stderr)


def test_an_interrupt_swallowed_by_a_finalizer_still_stops_the_command() -> None:
    # Python drops a KeyboardInterrupt raised inside a __del__ ("Exception ignored in ..."):
    # here Ctrl-C lands in one, on the main thread, while a stage that never ends by itself
    # runs; the command must stop anyway, with its own line and nothing else on stderr
    code = """
import os, signal, sys, threading
import dptune._parallel as p
from dptune.cli import _tree, main

# as started from a terminal: a shell's background job starts with SIGINT ignored, and a
# command started so keeps ignoring it (dptune._interrupt.handling)
signal.signal(signal.SIGINT, signal.default_int_handler)

class Finalizer:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100000):  # the handler runs here, inside the finalizer
            pass

def stage(args):  # run as dptune runs a stage's work
    p.run_parallel(threading.Event().wait, [()], 1)

_tree.c.cmd_analyze = stage
_check = p.check_interrupt
def check():  # the first time the main thread looks, Ctrl-C lands in a finalizer there
    if not getattr(check, "fired", False):
        check.fired = True
        Finalizer()
    _check()
p.check_interrupt = check
sys.exit(main(["analyze", "x"]))
"""
    r = _run(code)
    assert r.returncode == 130, (r.returncode, r.stderr)
    assert r.stderr.strip().splitlines() == [
        "dptune: interrupted; nothing was written (a reports folder is published only when "
        "complete); run the same command again"], r.stderr


def test_work_interrupted_in_a_notebook_stops_at_its_next_check() -> None:
    """Ctrl-C in the main thread while work runs beside it (a notebook: the process goes on):
    the interrupt comes back at once, and the work stops at its next check instead of
    running on in the background; a later call is not stopped by the earlier request."""
    started, ended = threading.Event(), threading.Event()

    def work() -> None:
        try:
            while True:  # ends only when asked to stop
                check_interrupt()
                started.set()
                time.sleep(0.001)
        finally:
            ended.set()

    def ctrl_c() -> None:  # the poll of a progress bar, where Ctrl-C lands
        assert started.wait(GUARD)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        in_background(work, ctrl_c, interval=0.001)
    assert ended.wait(GUARD), "the work went on after the interrupt"
    assert in_background(lambda: (check_interrupt(), "done")[1]) == "done"
