"""reports/<name>/ written by the README's commands stay out of git; the committed examples do
not (`reports/quickstart/` once showed up as untracked after the first command)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _ignored(path: str) -> bool:
    run = subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT, capture_output=True)
    if run.returncode not in (0, 1):
        pytest.skip(f"git check-ignore failed: {run.stderr.decode().strip()}")
    return run.returncode == 0


@pytest.fixture(autouse=True)
def _git_checkout() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")


def test_new_report_folders_are_ignored() -> None:
    for path in ("reports/quickstart/report.md", "reports/quickstart/figure1.png",
                 "reports/my-study/report.html"):
        assert _ignored(path), path


def test_committed_example_reports_are_not_ignored() -> None:
    tracked = subprocess.run(["git", "ls-files", "reports"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    folders = {Path(p).parts[1] for p in tracked if len(Path(p).parts) > 2}
    assert "anelli2019-ml100k-subgrid" in folders
    for folder in folders:
        for name in ("report.md", "report.html", "verdict.md", "table3.csv"):
            assert not _ignored(f"reports/{folder}/{name}"), f"{folder}/{name}"
    assert _ignored("reports/anelli2019-ml100k-subgrid/pvalues.parquet")  # large, regenerated
    assert _ignored("reports/anelli2019-ml1m-design/curves.csv")  # 5.5 MiB, regenerated
    big = [p for p in tracked if (ROOT / p).stat().st_size > 5 * 2**20]
    assert not big, big  # reports/ holds small outputs only
