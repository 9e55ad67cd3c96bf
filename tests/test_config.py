"""Experiment configs: shipped files load; typos and bad values name the file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from dptune.config import load_experiment
from dptune.errors import DptuneError

ROOT = Path(__file__).resolve().parents[1]

BASE = """
name = "t"
[split]
folds = 3
[[algorithms]]
name = "userknn"
type = "userknn"
grid = "{grid}"
"""


def _with_grid(text):
    return text.replace("{grid}", str(ROOT / "grids" / "quickstart-knn.toml"))


def _write(tmp_path, text):
    p = tmp_path / "exp.toml"
    p.write_text(_with_grid(text))
    return p


@pytest.mark.parametrize("name", ["quickstart", "anelli2019-ml100k", "anelli2019-ml1m"])
def test_shipped_experiments_load(name):
    exp = load_experiment(ROOT / "experiments" / f"{name}.toml")
    assert exp.name == name
    assert {a.type for a in exp.algorithms} == {"userknn", "itemknn", "bpr-mf"}
    if name != "quickstart":
        assert exp.split.folds == 10
        assert exp.grids["bpr-mf"].size == 3150 and exp.grids["userknn"].size == 15


def test_defaults(tmp_path):
    exp = load_experiment(_write(tmp_path, BASE))
    assert exp.evaluation.cutoffs == (1, 5, 10)
    assert exp.evaluation.relevance_threshold == 4.0
    assert exp.analysis.pairs == 1000
    assert exp.split_seed == exp.seed == 42


@pytest.mark.parametrize(
    "extra, field",
    [
        ("[split]\nfodls = 3\n", "split.fodls"),  # typo, checked before the duplicate table
        ("[evaluaton]\ncutoffs = [1]\n", "evaluaton"),
        ("[evaluation]\ncutoffs = [0, 5]\n", "evaluation.cutoffs"),
        ("[evaluation]\nmetrics = ['ndcg', 'map']\n", "evaluation.metrics"),
        ("[analysis]\ntest = 'z'\n", "analysis.test"),
        ("[analysis]\npairs = 'many'\n", "analysis.pairs"),
        ("[analysis]\nn_pairs = 25\n", "analysis.n_pairs"),
        ("[analysis]\nmax_pairs = 0\n", "analysis.max_pairs"),
        ("[data]\nkcore = -1\n", "data.kcore"),
    ],
)
def test_typos_and_bad_values_name_the_field(tmp_path, extra, field):
    text = BASE.replace("[split]\nfolds = 3\n", "") + extra
    with pytest.raises(DptuneError) as err:
        load_experiment(_write(tmp_path, text))
    msg = str(err.value)
    assert f": {field}" in msg and "exp.toml" in msg and "\n" not in msg


def test_typo_suggests_the_right_field(tmp_path):
    with pytest.raises(DptuneError, match="did you mean 'folds'"):
        load_experiment(_write(tmp_path, BASE.replace("folds = 3", "fodls = 3")))


def test_unknown_algorithm_type_and_missing_grid(tmp_path):
    with pytest.raises(DptuneError, match=r"algorithms\[0\]\.type"):
        load_experiment(_write(tmp_path, BASE.replace('type = "userknn"', 'type = "usrknn"')))
    with pytest.raises(DptuneError, match=r"algorithms\[0\]\.grid"):
        load_experiment(_write(tmp_path, BASE.replace("{grid}", "nope.toml")))


def test_missing_name_and_algorithms(tmp_path):
    with pytest.raises(DptuneError, match=": name"):
        load_experiment(_write(tmp_path, BASE.replace('name = "t"', "")))
    with pytest.raises(DptuneError, match=": algorithms"):
        load_experiment(_write(tmp_path, 'name = "t"\n'))


def test_fingerprint_ignores_analysis_settings(tmp_path):
    a = load_experiment(_write(tmp_path, BASE))
    b = load_experiment(_write(tmp_path, BASE + "[analysis]\npairs = 10\n"))
    c = load_experiment(_write(tmp_path, BASE.replace("folds = 3", "folds = 4")))
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()


def test_grid_paths_are_read_from_the_experiment_files_folder(tmp_path, monkeypatch):
    (tmp_path / "exp" / "grids").mkdir(parents=True)
    (tmp_path / "exp" / "grids" / "g.toml").write_text("[params.k]\nvalues = [5, 10]\n")
    (tmp_path / "elsewhere").mkdir()
    cfg = tmp_path / "exp" / "e.toml"
    cfg.write_text(BASE.replace("{grid}", "grids/g.toml"))
    for cwd in (tmp_path, tmp_path / "elsewhere", tmp_path / "exp"):
        monkeypatch.chdir(cwd)
        exp = load_experiment(cfg)
        assert exp.algorithms[0].grid_path == str((tmp_path / "exp" / "grids" / "g.toml").resolve())
        assert exp.grids["userknn"].values == {"k": [5, 10]}


def test_a_grid_path_relative_to_the_working_directory_is_refused_with_the_fix(tmp_path,
                                                                                monkeypatch):
    (tmp_path / "grids").mkdir()
    (tmp_path / "grids" / "g.toml").write_text("[params.k]\nvalues = [5, 10]\n")
    (tmp_path / "experiments").mkdir()
    cfg = tmp_path / "experiments" / "e.toml"
    cfg.write_text(BASE.replace("{grid}", "grids/g.toml"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DptuneError) as err:
        load_experiment(cfg)
    msg = str(err.value)
    assert msg.startswith(f"{cfg}: algorithms[0].grid: grid file 'grids/g.toml' not found "
                          "(relative paths start at the experiment file's folder")
    assert msg.endswith('write grid = "../grids/g.toml"') and "\n" not in msg


def test_a_data_file_is_read_from_the_experiment_files_folder(tmp_path, monkeypatch):
    """``data.source = "data/r.csv"`` names the file next to the experiment, from any working
    directory; the setting itself (manifest, fingerprint, reports) stays as written."""
    (tmp_path / "exp" / "data").mkdir(parents=True)
    (tmp_path / "exp" / "data" / "r.csv").write_text("user,item\n1,2\n")
    (tmp_path / "elsewhere").mkdir()
    cfg = tmp_path / "exp" / "e.toml"
    cfg.write_text(_with_grid(BASE) + '[data]\nsource = "data/r.csv"\n')
    prints = set()
    for cwd in (tmp_path, tmp_path / "elsewhere", tmp_path / "exp"):
        monkeypatch.chdir(cwd)
        exp = load_experiment(cfg)
        assert exp.data_file == str((tmp_path / "exp" / "data" / "r.csv").resolve())
        assert exp.data.source == exp.to_dict()["data"]["source"] == "data/r.csv"
        assert "data_path" not in exp.to_dict()
        prints.add(exp.fingerprint())
    assert len(prints) == 1


def test_a_data_file_relative_to_the_working_directory_is_refused_with_the_fix(tmp_path,
                                                                                monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "r.csv").write_text("user,item\n1,2\n")
    (tmp_path / "experiments").mkdir()
    cfg = tmp_path / "experiments" / "e.toml"
    cfg.write_text(_with_grid(BASE) + '[data]\nsource = "data/r.csv"\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DptuneError) as err:
        load_experiment(cfg)
    msg = str(err.value)
    assert msg == (f"{cfg}: data.source: 'data/r.csv' is neither a known data set (ml-latest-small, "
                   "ml-100k, ml-1m) nor a file (a relative path starts at the experiment file's "
                   f"folder: tried {(tmp_path / 'experiments' / 'data' / 'r.csv').resolve()}); it "
                   'exists relative to the working directory: write source = "../data/r.csv"')
    monkeypatch.chdir(tmp_path / "experiments")  # no such file anywhere: no hint
    with pytest.raises(DptuneError, match=r"data.source: 'data/r.csv' is neither a known data set") as err:
        load_experiment(cfg)
    assert "write source" not in str(err.value)


@pytest.mark.parametrize("name", ["ml-latest-small", "ml-100k", "ml-1m"])
def test_named_data_sets_are_not_paths(tmp_path, monkeypatch, name):
    """A named data set is never looked up as a file, whatever the folders hold."""
    cfg = tmp_path / "e.toml"
    cfg.write_text(_with_grid(BASE) + f'[data]\nsource = "{name}"\n')
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    exp = load_experiment(cfg)
    assert exp.data_file == exp.data.source == name


def test_a_table_not_read_from_a_file_reads_data_from_the_working_directory(tmp_path,
                                                                             monkeypatch):
    """``parse_experiment`` of a table (no experiment file): a relative data file is read from
    the working directory, and only when the data is loaded (as before)."""
    from dptune.config import parse_experiment

    monkeypatch.chdir(tmp_path)
    table = {"name": "t", "data": {"source": "r.csv"},
             "algorithms": [{"name": "pop", "type": "cornac:MostPop"}]}
    assert parse_experiment(table).data_file == "r.csv"
    assert parse_experiment(table, "own.toml").data_file == "r.csv"
