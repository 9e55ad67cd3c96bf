"""``dptune subgrid``'s output file: every check before anything is written, and never into a
results directory, over the grid being read, or onto a directory (each one line naming
``--out``, exit 2, nothing changed); the file carries the ``family`` label and the
``[derived]`` table of the grid it came from, in that grid's order (docs/grids.md)."""

from __future__ import annotations

import shutil

import pytest
from conftest import one_error_line, tree_digest

import dptune.analysis.subgrid as subgrid
from dptune.analysis.subgrid import grid_from_store, write_subgrid
from dptune.cli import main
from dptune.errors import DptuneError
from dptune.grids import load_grid
from dptune.store._schema import PARTS
from dptune.store._store import ResultStore


def test_an_out_inside_the_results_directory_is_refused_before_anything_is_written(
        tiny_swept, tmp_path, capsys):
    """``--out RES/manifest.json`` used to print "sub-grid written", then fail: the store's
    manifest had been replaced by the grid TOML. Now the store is left as it was."""
    root = tmp_path / "results"
    shutil.copytree(tiny_swept / "results", root)
    before = tree_digest(root)
    for out in (root / "manifest.json", root / PARTS / "sub.toml", root / "new" / "sub.toml"):
        assert main(["subgrid", str(root), "--algorithm", "bpr-mf", "--out", str(out)]) == 2
        captured = capsys.readouterr()
        assert "sub-grid written" not in captured.out
        assert one_error_line(captured.err).startswith(
            f"dptune: --out: {out} lies inside the results directory {root.resolve()}, "
            "which holds only what dptune run writes"), captured.err
    assert tree_digest(root) == before
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep"), "--no-progress"]) == 0


def test_an_out_that_is_a_directory_or_a_grid_being_read_is_refused(tiny_swept, tmp_path,
                                                                     capsys):
    """A directory used to end in an ``IsADirectoryError`` traceback; the ``--grid`` file being
    read, or the grid file the sweep read, would be replaced by the sub-grid. The front
    function refuses each by itself (the CLI may check first, with the same line)."""
    res = tiny_swept / "results"
    folder = tmp_path / "folder"
    folder.mkdir()
    grid = tmp_path / "grid.toml"
    shutil.copy(tiny_swept / "exp" / "bpr.toml", grid)
    swept = tiny_swept / "exp" / "bpr.toml"
    experiment = tiny_swept / "exp" / "tiny.toml"
    text, swept_text, exp_text = grid.read_text(), swept.read_text(), experiment.read_text()
    cases = [
        (dict(out=folder), f"--out: {folder} is a directory; give the file to write"),
        (dict(out=grid, grid=grid), f"--out: {grid} is the --grid file this command reads; "
                                    "give another file to write"),
        (dict(out=swept), f"--out: {swept} is the grid file the sweep in {res} read for "
                          "bpr-mf; writing it would change that experiment"),
        (dict(out=tmp_path / "s.toml", radius=-1), "--radius: must be an integer >= 0, got -1"),
        (dict(out=experiment), f"--out: {experiment} is the experiment file of {res}"),
    ]
    for kwargs, start in cases:
        kwargs = {"radius": 1, **kwargs}
        with pytest.raises(DptuneError) as err:
            write_subgrid(res, "bpr-mf", "ndcg", 10, kwargs.pop("radius"), **kwargs)
        assert str(err.value).startswith(start), str(err.value)
    assert list(folder.iterdir()) == [] and not (tmp_path / "s.toml").exists()
    assert grid.read_text() == text and swept.read_text() == swept_text
    assert experiment.read_text() == exp_text
    for argv in (["--out", str(folder)], ["--grid", str(grid), "--out", str(grid)]):
        assert main(["subgrid", str(res), "--algorithm", "bpr-mf", *argv]) == 2
        assert one_error_line(capsys.readouterr().err).startswith(f"dptune: --out: {argv[-1]} is ")
    assert list(folder.iterdir()) == [] and grid.read_text() == text


def test_the_subgrid_keeps_the_family_and_derived_order_of_its_grid(tiny_swept, tmp_path,
                                                                    monkeypatch):
    """Without ``--grid`` the ``family`` line was dropped and ``[derived]`` came in the
    manifest's sorted order (item_reg first); with ``--grid`` the family was dropped too. Both
    now carry the grid's ``family = "bpr-mf"`` and its order (user_reg, item_reg)."""
    res = tiny_swept / "results"
    swept = tiny_swept / "exp" / "bpr.toml"
    texts = {}
    for name, extra in (("store", []), ("grid", ["--grid", str(swept)])):
        out = tmp_path / f"{name}.toml"
        assert main(["subgrid", str(res), "--algorithm", "bpr-mf", "--metric", "ndcg",
                     "--cutoff", "10", "--radius", "2", "--out", str(out), *extra]) == 0
        texts[name] = out.read_text()
        assert '\nfamily = "bpr-mf"\n' in texts[name]
        g = load_grid(out)
        assert g.family == "bpr-mf"
        assert list(g.derived) == list(load_grid(swept).derived) == ["user_reg", "item_reg"]
    assert texts["store"] == texts["grid"]
    # the swept grid file gone or changed: configs.csv's column order, and no family invented
    monkeypatch.setattr(subgrid, "_recorded_grid", lambda *args: None)
    g = grid_from_store(ResultStore(res), "bpr-mf")
    assert list(g.derived) == ["user_reg", "item_reg"] and g.family is None
