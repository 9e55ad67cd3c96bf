"""``dptune worker`` shows the sweep's progress bar with the time left, the bar of ``dptune
run`` (:mod:`dptune.sweeper._progress`), on stderr; ``--no-progress`` shows none. The tests read
the bar's last text (counts and the remaining-time field), never how fast it moved."""

from __future__ import annotations

import re

from conftest import write_synthetic_experiment

from dptune.cli import main
from dptune.config import load_experiment
from dptune.sweeper.design import read_design

#: tqdm's text of the validation bar: ``<name>: validation: 100%|███| 16/16 [00:04<00:00, ...``
#: (the parts done of the budget's, the elapsed and the remaining time).
BAR = (r"{name}: validation: +\d+%\|[^|]*\| *(\d+)/(\d+) \[(\d\d:)?\d\d:\d\d<"
       r"((\d\d:)?\d\d:\d\d|\?)")


def test_a_worker_shows_its_progress_with_the_time_left_unless_told_not_to(tmp_path, capsys):
    """A worker printed nothing until it finished (hours on a real sweep). Its bar counts the
    budget's parts, ends with every part done and carries the remaining-time field; on a
    finished sweep, ``--no-progress`` writes nothing on stderr at all."""
    cfg = write_synthetic_experiment(tmp_path, "bar")
    url, results = f"sqlite:///{tmp_path / 'optuna.db'}", tmp_path / "results"
    assert main(["worker", str(cfg), "--storage", url, "--results", str(results)]) == 0
    out, err = capsys.readouterr()
    total = len(read_design(results).tasks())
    assert total > 0 and len(list((results / "per_user.parquet").glob("*.parquet"))) == total
    bars = re.findall(BAR.format(name="bar"), err)
    assert bars, err
    done, of, _, left, _ = bars[-1]
    assert (int(done), int(of)) == (total, total) and left, err
    assert "validation" not in out and "worker finished" in out

    assert main(["worker", str(cfg), "--storage", url, "--results", str(results),
                 "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.strip() == "worker finished: 0 units computed here"


def test_the_worker_api_takes_progress_as_the_other_stages_do(tmp_path, capsys):
    """``dptune.sweeper.worker(..., progress=...)`` draws the same bar (or none); a value that
    is not True or False is one line naming it, before any work."""
    import pytest

    from dptune.errors import DptuneError
    from dptune.sweeper import worker

    cfg = write_synthetic_experiment(tmp_path, "api")
    exp = load_experiment(cfg)
    with pytest.raises(DptuneError, match=r"^worker: progress: must be True or False, got 'no'"):
        worker(exp, tmp_path / "results", progress="no")
    assert not (tmp_path / "results").exists()
