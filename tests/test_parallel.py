"""Worker processes end with the process that started them: an orphaned worker starts no more
work (``exit_if_orphaned`` before each unit), whatever its watch thread's timing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])


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
