"""The arguments of :func:`run_seeds_study` that its ``[seeds]`` settings do not cover are
checked before anything is read or trained, and its report is published whole."""

from __future__ import annotations

from pathlib import Path

import pytest
from studies.seeds.seeds_experiment import tiny_seeds_experiment

from dptune.cli import main as _main
from dptune.errors import DptuneError
from dptune.studies import run_seeds_study


def _exp(tmp_path: Path, extra: str = "") -> Path:
    """A one-algorithm seeds study of 2 seeds and 2 folds, without the grid part, on the
    embedded data (UserKNN, k in 10, 20, 40); ``extra``: more keys of its ``[seeds]`` table."""
    return tiny_seeds_experiment(tmp_path, "[seeds]\nn_seeds = 2\nfolds = 2\ngrid_seeds = 0\n"
                                 + extra, bpr=False)


@pytest.mark.parametrize(("kwargs", "start"), [
    pytest.param({"jobs": 0}, "seeds: jobs: must be an integer from 1 to 1,024, got 0",
                 id="jobs-0"),
    pytest.param({"jobs": -3}, "seeds: jobs: must be an integer from 1 to 1,024, got -3",
                 id="jobs-negative"),
    pytest.param({"jobs": 2.5}, "seeds: jobs: must be an integer from 1 to 1,024, got 2.5",
                 id="jobs-float"),
    pytest.param({"jobs": "2"}, "seeds: jobs: must be an integer from 1 to 1,024, got '2'",
                 id="jobs-text"),
    pytest.param({"out_dir": 5}, "seeds: out_dir: needs a path", id="out-number"),
    pytest.param({"cache_dir": 5}, "seeds: cache_dir: needs a path", id="cache-number"),
    pytest.param({"exp": 5}, "seeds: exp: needs an Experiment or the path", id="exp-number"),
    pytest.param({"configs": 3}, "--config-id: needs a table algorithm -> configuration id (or "
                 "hyperparameter values), got int", id="configs-number"),
])
def test_a_bad_argument_is_refused_before_any_work(tmp_path, kwargs, start) -> None:
    """``jobs=0`` and ``jobs=-3`` ran one process and ``jobs=2.5`` two, without a word, and
    ``jobs="2"`` ended in a traceback after the experiment had been read."""
    args = {"exp": _exp(tmp_path), "out_dir": tmp_path / "out", "cache_dir": tmp_path / "cache",
            "progress": False, **kwargs}
    with pytest.raises(DptuneError) as ex:
        run_seeds_study(args.pop("exp"), **args)
    assert str(ex.value).startswith(start) and "\n" not in str(ex.value), str(ex.value)
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()


def test_an_out_dir_that_is_a_file_is_refused_before_any_model_trains(tmp_path) -> None:
    """The report folder was made only after every seed had trained: a file of that name cost
    the whole study before the error."""
    (tmp_path / "out").write_text("a file")
    with pytest.raises(DptuneError, match=r"^seeds: out_dir: .*out is a file, not a folder"):
        run_seeds_study(_exp(tmp_path), out_dir=tmp_path / "out", cache_dir=tmp_path / "cache",
                        progress=False)
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(("extra", "flags", "start"), [
    pytest.param("", ["--seeds", "2", "--grid-seeds", "3"],
                 "--grid-seeds: 3 seeds for the grid part, more than the study's 2 (--seeds)",
                 id="flag"),
    pytest.param("", ["--grid-seeds", "5"],
                 "--grid-seeds: 5 seeds for the grid part, more than the study's 2 "
                 "(seeds.n_seeds)", id="flag-over-file"),
])
def test_more_grid_seeds_than_seeds_is_refused(tmp_path, capsys, monkeypatch, extra, flags,
                                               start) -> None:
    """The grid part runs on the first ``grid_seeds`` of the study's seeds: asking for more
    than there are was cut down to ``n_seeds`` silently."""
    cfg = _exp(tmp_path, extra)
    monkeypatch.chdir(tmp_path)
    assert _main(["seeds", str(cfg), "--results", str(tmp_path / "R"), "--reports",
                  str(tmp_path / "P"), "--no-progress", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dptune: " + start) and "\n" not in err, err
    assert not (tmp_path / "R").exists() and not (tmp_path / "P").exists()


def test_more_grid_seeds_than_seeds_in_the_file_names_the_key(tmp_path) -> None:
    cfg = tmp_path / "tiny.toml"
    _exp(tmp_path)
    cfg.write_text(cfg.read_text().replace("grid_seeds = 0", "grid_seeds = 4"))
    with pytest.raises(DptuneError) as ex:
        run_seeds_study(cfg, out_dir=tmp_path / "out", cache_dir=tmp_path / "cache",
                        progress=False)
    assert str(ex.value) == (f"{cfg}: seeds.grid_seeds: 4 seeds for the grid part, more than "
                             "the study's 2 (seeds.n_seeds): the grid part runs on the first of "
                             "the study's seeds; give at most 2 (0 skips it)")
    assert not (tmp_path / "cache").exists()


def test_an_interrupted_report_leaves_the_previous_one(tmp_path, monkeypatch) -> None:
    """The report files were written one by one into the report folder: a Ctrl-C while the
    figure was saved left new CSV files beside an old report. The folder is now staged and
    published by one rename; the seeds stay cached for the rerun."""
    import dptune.studies.seeds.study as study

    cfg = _exp(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "seeds_per_seed.csv").write_text("old\n")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(study, "save_figure", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_seeds_study(cfg, out_dir=out, cache_dir=tmp_path / "cache", progress=False)
    assert [p.name for p in out.iterdir()] == ["seeds_per_seed.csv"]
    assert (out / "seeds_per_seed.csv").read_text() == "old\n"
    assert not list(tmp_path.glob(".out.*.tmp"))
    monkeypatch.undo()
    files = run_seeds_study(cfg, out_dir=out, cache_dir=tmp_path / "cache", progress=False)
    assert files[-1] == out / "seeds_report.md" and all(f.is_file() for f in files)
    assert (out / "seeds_per_seed.csv").read_text().startswith("dataset,")


def test_a_hold_out_ratio_that_trains_no_one_is_refused_before_any_work(tmp_path) -> None:
    """``[seeds] train_ratio`` below one rating of the largest history left every user without
    a training rating: the study trained its models on nothing and reported their spread as
    "largest deviation 0.00%". It is refused as ``[split] train_ratio`` is, naming the key,
    before the cache is made; a ratio that trains someone is taken."""
    cfg = _exp(tmp_path, "train_ratio = 0.0001\n")
    with pytest.raises(DptuneError) as ex:
        run_seeds_study(cfg, out_dir=tmp_path / "out", cache_dir=tmp_path / "cache",
                        progress=False)
    text = str(ex.value)
    assert text.startswith(f"{cfg}: seeds.train_ratio: 0.0001 leaves no rating for training: "
                           "each user trains on floor(train_ratio x its ratings), and the most "
                           "any user has is "), text
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()
