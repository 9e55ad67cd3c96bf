"""What a results directory refuses, each as one line (exit 2) with nothing changed: a
``manifest.json`` that is valid JSON but not a dptune manifest, a file in the parts folder that
is not a part (foreign: listed, refused, set aside by ``dptune run``, never a traceback), and a
path to write that lies inside a results directory (:func:`check_outside_store`)."""

from __future__ import annotations

import shutil

import pytest
from conftest import one_error_line, tree_digest

from dptune.cli import main
from dptune.errors import DptuneError
from dptune.store import check_outside_store
from dptune.store._schema import PARTS

FOREIGN = "its name is not <algorithm>__<fold>__<unit>.parquet"


@pytest.mark.parametrize("command", ["analyze", "status"])
@pytest.mark.parametrize("text, field", [
    ("{}", "experiment: damaged (missing)"),
    ('{"config": 5}', "config: damaged (must be an object, got 5)"),
    ('{"experiment": "t", "algorithms": [{"name": "a", "free": []}], "evaluation": {}}',
     "algorithms[0].type: damaged (missing)"),
    ('{"experiment": "t", "algorithms": [{"name": "a", "type": "userknn", "free": []}], '
     '"evaluation": {"metrics": ["ndcg"], "cutoffs": ["10"]}}',
     'evaluation.cutoffs: damaged (must be a non-empty list of integers >= 1'),
])
def test_a_manifest_of_valid_json_but_not_a_dptune_manifest_is_one_line(
        tiny_swept, tmp_path, capsys, command, text, field):
    """``{}`` used to give ``KeyError: 'algorithms'`` and ``{"config": 5}`` a ``TypeError``
    in whichever reader met them first; the manifest's shape is now checked where it is read."""
    root = tmp_path / "results"
    shutil.copytree(tiny_swept / "results", root)
    (root / "manifest.json").write_text(text)
    before = tree_digest(root)
    argv = (["analyze", str(root), "--reports", str(tmp_path / "rep"), "--seed", "1",
             "--no-progress"] if command == "analyze" else ["status", str(root)])
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"dptune: {root / 'manifest.json'}: {field}"), line
    assert line.endswith("`dptune run` with the experiment's file rewrites it")
    assert tree_digest(root) == before and not (tmp_path / "rep").exists()


def test_a_parts_folder_that_is_a_file_is_reported_not_a_crash(tiny_swept, tmp_path, capsys):
    """``per_user.parquet`` replaced by a file: ``status`` ended in NotADirectoryError; every
    part is then missing, as ``analyze`` says in one line."""
    root = tmp_path / "results"
    shutil.copytree(tiny_swept / "results", root)
    shutil.rmtree(root / PARTS)
    (root / PARTS).write_text("x")
    assert main(["status", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"{root / PARTS}/" in out and "(missing)" in out
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep"), "--no-progress"]) == 2
    assert "(missing)" in one_error_line(capsys.readouterr().err)


def test_a_file_in_the_parts_folder_that_is_not_a_part_is_foreign_not_a_crash(
        tiny_swept, tmp_path, capsys):
    """Reports written into ``per_user.parquet/`` (``pvalues.parquet``) used to break every
    later ``analyze`` and ``status`` with ``ValueError: not enough values to unpack`` in
    ``part_paths``. Such a file is foreign, as any part not from this experiment: ``status``
    lists it, ``analyze`` refuses it with one line, ``dptune run`` sets it aside."""
    root = tmp_path / "results"
    shutil.copytree(tiny_swept / "results", root)
    stray = root / PARTS / "pvalues.parquet"
    stray.write_bytes(b"a report's table, not a part")
    before = tree_digest(root)
    assert main(["status", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"foreign:     {stray} (not from this experiment: {FOREIGN})" in out, out
    assert main(["analyze", str(root), "--reports", str(tmp_path / "rep"), "--no-progress"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"dptune: {stray}: not from this experiment ({FOREIGN}); `dptune "
                           "run` sets it aside in"), line
    assert tree_digest(root) == before and not (tmp_path / "rep").exists()
    assert main(["run", str(tiny_swept / "exp" / "tiny.toml"), "--results", str(root),
                 "--reports", str(tmp_path / "rep"), "--no-progress"]) == 0
    assert not stray.exists()
    assert (root / "quarantine" / PARTS / stray.name).read_bytes() == before[f"{PARTS}/{stray.name}"]


def test_a_path_to_write_inside_a_results_directory_is_refused(tiny_swept, tmp_path):
    """``--reports RES/per_user.parquet`` put report files among the parts; every command that
    writes checks its output with :func:`check_outside_store` first."""
    res = tiny_swept / "results"
    inside = f"lies inside the results directory {res.resolve()}, which holds only what dptune run writes"
    cases = [
        (res / PARTS, f"--reports: {res / PARTS} {inside}"),
        (res / "manifest.json", f"--reports: {res / 'manifest.json'} {inside}"),
        (res / "new" / "deeper", f"--reports: {res / 'new' / 'deeper'} {inside}"),
        (res, f"--reports: {res} is a results directory, which holds only what dptune run writes"),
    ]
    for path, start in cases:
        with pytest.raises(DptuneError) as err:
            check_outside_store(path, "--reports")
        assert str(err.value).startswith(start), str(err.value)
    # the results directory of the same command, not made yet, counts too
    with pytest.raises(DptuneError, match=r"^--reports: .* lies inside the results directory"):
        check_outside_store(tmp_path / "new" / "rep", "--reports", results=tmp_path / "new")
    # beside a store, or under a manifest.json of another tool, is fine
    check_outside_store(tiny_swept / "reports", "--reports")
    check_outside_store(tmp_path / "rep", "--reports", results=tmp_path / "results")
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "manifest.json").write_text('{"name": "an app"}')
    check_outside_store(tmp_path / "web" / "rep", "--reports")
    with pytest.raises(DptuneError, match=r"^--out: needs a path to write"):
        check_outside_store(None, "--out")


@pytest.mark.parametrize("read", ["summary", "best_configs", "trials"])
def test_a_folder_that_is_no_results_directory_is_one_line_not_an_empty_answer(tmp_path, read):
    """ResultStore("typo").summary() returned an empty table, as if the sweep had found
    nothing; a misspelt path, or the experiment file given for the results, is one line."""
    from dptune.store._store import ResultStore

    for root in (tmp_path / "typo", tmp_path):
        with pytest.raises(DptuneError, match=r": not a results directory \(no manifest.json\)"):
            getattr(ResultStore(root), read)()
