"""Experiment configs: shipped files load; typos and bad values name the file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import HUGE_BPR

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
        ("[data]\nmin_rating = nan\n", "data.min_rating"),  # named the data file before
        ("[data]\nmin_rating = inf\n", "data.min_rating"),
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


# --------------------------------------------------------------------------- refused when read
def _error(path) -> str:
    """The one-line error of ``load_experiment(path)``."""
    with pytest.raises(DptuneError) as err:
        load_experiment(path)
    msg = str(err.value)
    assert "\n" not in msg, msg
    return msg


@pytest.mark.parametrize(("extra", "start"), [
    pytest.param("[sweep]\nstorage = 5\n", "sweep.storage: must be an optuna storage URL or a "
                 "*.journal file path (a non-empty string; leave it out for the default SQLite "
                 "file of the results directory), got 5", id="number"),
    pytest.param('[sweep]\nstorage = ["a"]\n', "sweep.storage: must be an optuna storage URL",
                 id="list"),
    pytest.param('[sweep]\nstorage = " "\n', "sweep.storage: must be an optuna storage URL",
                 id="blank"),
    pytest.param("[evaluation]\nmetrics = []\n", "evaluation.metrics: must not be empty: name at "
                 "least one of ndcg, precision, recall, mrr, efd, epc", id="no-metrics"),
    pytest.param('[evaluation]\nmetrics = ["ndcg", "epc", "ndcg"]\n',
                 "evaluation.metrics: has duplicates (ndcg)", id="metric-twice"),
    pytest.param('[data]\nformat = "xls"\n', "data.format: 'xls' is not one of auto, ml-dat, "
                 "ml-udata, ml-csv, recbole, amazon, csv, parquet", id="format"),
    pytest.param('[data]\nformat = "csvv"\n', "data.format: 'csvv' is not one of auto, ml-dat, "
                 "ml-udata, ml-csv, recbole, amazon, csv, parquet (did you mean 'csv'?)",
                 id="format-typo"),
    pytest.param('data_path = "/etc/passwd"\n', "data_path: unknown field: the data is named by "
                 'source in the [data] table ([data] source = "<data set or file>")',
                 id="data_path"),
    pytest.param("description = 5\n", "description: must be a string, got 5",
                 id="description-number"),
    pytest.param("description = { text = 'x' }\n", "description: must be a string, got {'text'",
                 id="description-table"),
    pytest.param("[sweep]\nbudget = 100001\n", "sweep.budget: 100,001 units: more than any grid "
                 "holds (at most 100,000 configurations)", id="budget-beyond-any-grid"),
])
def test_bad_values_are_refused_when_the_experiment_is_read(tmp_path, extra, start):
    """Each used to pass parsing: ``storage = 5`` failed with a traceback after creating the
    results folder; ``metrics = []`` blamed analysis.primary_metric; ``format = "xls"`` named
    the data file and the argument ``fmt``; ``data_path`` (the resolved data.source, filled in
    by dptune) was accepted and ignored; ``description = 5`` (free text) became the text '5'
    and a table its repr; a budget of more units than any grid holds ran every unit, and one
    beyond a float's range (``--budget 1000...0``) failed with a traceback."""
    text = _with_grid(BASE)
    top = extra.startswith(("data_path", "description"))
    text = extra + text if top else text + extra
    cfg = tmp_path / "exp.toml"
    cfg.write_text(text)
    assert _error(cfg).startswith(f"{cfg}: {start}")


def test_internal_fields_are_neither_settings_nor_offered(tmp_path):
    """``data_path`` and ``grid_path`` are filled in by dptune: an experiment file cannot write
    them and an unknown-key error does not list them."""
    cfg = _write(tmp_path, 'zzz = 1\n' + BASE)
    msg = _error(cfg)
    assert msg.startswith(f"{cfg}: zzz: unknown field (allowed: ") and "data_path" not in msg
    cfg = _write(tmp_path, BASE.replace('type = "userknn"', 'type = "userknn"\ngrid_path = "x"'))
    assert _error(cfg).startswith(f"{cfg}: algorithms[0].grid_path: unknown field")


def test_folds_are_limited_to_what_the_fold_labels_hold(tmp_path):
    """The parser allowed 1,000 folds while the split's int8 fold labels hold 127: 200 folds
    failed at run time with ``split: split.folds`` (not naming the file)."""
    import numpy as np

    from dptune.data._split import MAX_FOLDS

    assert MAX_FOLDS == np.iinfo(np.int8).max == 127
    cfg = _write(tmp_path, BASE.replace("folds = 3", "folds = 200"))
    assert _error(cfg) == (f"{cfg}: split.folds: at most 127 folds (the split's fold labels are "
                           "8-bit integers), got 200")
    assert load_experiment(_write(tmp_path, BASE.replace("folds = 3", "folds = 127"))).split.folds == 127


def test_seed_study_folds_are_limited_like_split_folds(tmp_path):
    from dptune.studies.seeds.settings import load_seed_experiment

    cfg = _write(tmp_path, BASE + "[seeds]\nfolds = 200\n")
    with pytest.raises(DptuneError) as err:
        load_seed_experiment(cfg)
    assert str(err.value).startswith(f"{cfg}: seeds.folds: must be an integer from 2 to 127, "
                                     "got 200")


def test_a_grid_that_is_a_directory_is_named_so(tmp_path):
    (tmp_path / "adir").mkdir()
    cfg = _write(tmp_path, BASE.replace("{grid}", "adir"))
    assert _error(cfg) == (f"{cfg}: algorithms[0].grid: grid file 'adir' is a directory "
                           f"({(tmp_path / 'adir').resolve()}), not a grid file")


@pytest.mark.parametrize("what", ["experiment", "grid"])
def test_a_file_that_is_not_utf8_is_one_line(tmp_path, what):
    """A byte that is not UTF-8 gave a UnicodeDecodeError traceback."""
    bad = tmp_path / "bad.toml"
    if what == "experiment":
        bad.write_bytes(b'name = "\xff\xfe"\n')
        cfg = bad
    else:
        bad.write_bytes(b"[params.k]\nvalues = [5, 10]\n# caf\xe9\n")
        cfg = _write(tmp_path, BASE.replace("{grid}", str(bad)))
    assert _error(cfg) == (f"{bad}: line {1 if what == 'experiment' else 3}: not UTF-8 text "
                           f"(byte 0x{'ff' if what == 'experiment' else 'e9'}); save the {what} "
                           "file as UTF-8, as TOML requires")


def test_a_bad_value_of_a_huge_grid_is_named_without_expanding_it(tmp_path, monkeypatch):
    """Each hyperparameter's values are checked on their own before the grid's size, so the
    first bad value of a 10^12-configuration grid is named at once (the check walked every
    configuration and hung); with good values, the size is refused, before expanding it."""
    from dptune.grids import Grid

    monkeypatch.setattr(Grid, "configs", lambda self: pytest.fail("the grid was expanded"))
    (tmp_path / "huge.toml").write_text(HUGE_BPR)
    cfg = _write(tmp_path, BASE.replace('type = "userknn"', 'type = "bpr-mf"')
                 .replace("{grid}", "huge.toml"))
    assert _error(cfg).startswith("huge.toml: factors: must be an integer >= 1, got 1.001")
    good = HUGE_BPR.split("[params.learning_rate]")[1]
    (tmp_path / "huge.toml").write_text(
        f"[params.factors]\nvalues = {list(range(1, 101))}\n"
        f"[params.iterations]\nvalues = {list(range(100))}\n[params.learning_rate]{good}")
    # named as its values' errors name it: as the experiment writes it
    assert _error(cfg).startswith("huge.toml: params: 99,990,000 "
                                  "configurations (100 factors x 100 iterations x 9,999 "
                                  "learning_rate); a grid has at most 100,000")


# --------------------------------------------------------------------------- refused by dptune run
RUN_EXPERIMENT = """
name = "bad"
seed = 3
[data]
source = "ratings.csv"
{data}
[split]
folds = 2
{split}
[evaluation]
test_split = false
[analysis]
noise_seeds = 0
{sweep}
[[algorithms]]
name = "uknn"
type = "userknn"
grid = "g1.toml"
[[algorithms]]
name = "iknn"
type = "itemknn"
grid = "g2.toml"
"""


def _run_setup(tmp_path, *, data="", split="", sweep="",
               grid2="[params.k]\nvalues = [5, 10, 20]\n"):
    """60 users x 25 ratings (1..5, rising times), two kNN grids and an experiment naming them
    with relative paths; returns the experiment file."""
    import numpy as np

    rng = np.random.default_rng(0)
    rows = [f"{u + 1},{i + 1},{rng.integers(1, 6)},{1000 + 100 * u + j}"
            for u in range(60) for j, i in enumerate(rng.choice(80, 25, replace=False))]
    (tmp_path / "ratings.csv").write_text("\n".join(["user,item,rating,timestamp", *rows]) + "\n")
    (tmp_path / "g1.toml").write_text("[params.k]\nvalues = [5, 10]\n")
    (tmp_path / "g2.toml").write_text(grid2)
    cfg = tmp_path / "exp.toml"
    cfg.write_text(RUN_EXPERIMENT.format(data=data, split=split, sweep=sweep))
    return cfg


@pytest.mark.parametrize(("kw", "start"), [
    pytest.param({"grid2": "[params.k]\nvalues = [5, 10]\nexclude = [5, 10]\n"},
                 "g2.toml: params.k.exclude: excludes every value of k (5, 10); a "
                 "hyperparameter needs at least one value", id="exclude-every-value"),
    # the grid file is named as the experiment writes it, whatever is wrong with it: its
    # format and size named the resolved path, its values the path as written
    pytest.param({"grid2": "[params.k\nvalues = [5]\n"}, "g2.toml: invalid TOML",
                 id="grid-not-toml"),
    pytest.param({"grid2": "[params.k]\nvalues = [0, 5]\n"}, "g2.toml: ", id="grid-value"),
    pytest.param({"grid2": "[params.k]\nvalues = [5]\n[params.shrink]\nvalues = [1]\n"},
                 "g2.toml: ", id="grid-unknown-hyperparameter"),
    pytest.param({"sweep": "[sweep]\nstorage = 5"},
                 "{cfg}: sweep.storage: must be an optuna storage URL", id="storage-number"),
    pytest.param({"data": "kcore = 500"},
                 "{cfg}: data.kcore: the 500-core of {dir}/ratings.csv is empty: no users and "
                 "items with at least 500 ratings each remain (the most any user has is 25, any "
                 "item ", id="kcore"),
    pytest.param({"data": "min_rating = 10.0"},
                 "{cfg}: data.min_rating: every rating of {dir}/ratings.csv is below 10 (the "
                 "highest is 5), so no data is left; lower it", id="min-rating"),
    pytest.param({"split": "min_user_interactions = 1000"},
                 "{cfg}: split.min_user_interactions: all 60 users were dropped: each has fewer "
                 "than 1000 ratings (the most any user has is 25)", id="min-user-interactions"),
])
def test_run_refuses_with_one_line_naming_the_experiment_and_writes_nothing(tmp_path, capsys,
                                                                           kw, start):
    """``dptune run``: exit 2, one ``dptune:`` line naming the file and the field as written
    (they named the data file and internal names such as ``min_rating/kcore`` or ``split``, or
    failed with a traceback, or after computing the first algorithm's units), and no results
    directory."""
    from dptune.cli import main

    cfg = _run_setup(tmp_path, **kw)
    assert main(["run", str(cfg), "--results", str(tmp_path / "results"), "--reports",
                 str(tmp_path / "reports"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("dptune: " + start.format(cfg=cfg, dir=tmp_path)), lines[0]
    assert not (tmp_path / "results").exists() and not (tmp_path / "reports").exists()


def test_an_algorithm_name_with_a_double_underscore_is_refused(tmp_path):
    """A part is named ``<algorithm>__<fold>__<unit>.parquet``: an algorithm ``user__knn``
    was accepted, then its own parts were taken for another experiment's and the run failed."""
    cfg = _write(tmp_path, BASE.replace('name = "userknn"', 'name = "user__knn"'))
    assert _error(cfg) == (f"{cfg}: algorithms[0].name: 'user__knn' holds '__', which separates "
                           "the algorithm, fold and unit in the names of its results")


def test_a_name_of_other_letters_says_ascii(tmp_path):
    """``tïny`` was refused as "must be letters, digits, ...", though ï is a letter: only ASCII
    ones are meant, and the line says so and shows the name."""
    cfg = _write(tmp_path, BASE.replace('name = "userknn"', 'name = "usér"'))
    assert _error(cfg) == (f"{cfg}: algorithms[0].name: must be ASCII letters (a-z, A-Z), "
                           "digits, '.', '_' or '-', starting with a letter or digit; got 'usér'")


@pytest.mark.parametrize("value", ['""', '"."'])
def test_a_data_source_that_is_a_folder_names_the_field(tmp_path, value):
    """source = "" named the experiment's folder and failed as "<folder>: is a directory"
    without the file or the field."""
    (tmp_path / "g.toml").write_text("[params.k]\nvalues = [5]\n")
    cfg = tmp_path / "e.toml"
    cfg.write_text(f'name = "x"\n[data]\nsource = {value}\n[[algorithms]]\nname = "a"\n'
                   'type = "userknn"\ngrid = "g.toml"\n')
    assert _error(cfg).startswith(f"{cfg}: data.source: {value[1:-1]!r} is a folder")


@pytest.mark.parametrize("old", ['name = "userknn"', 'name = "t"'])
def test_a_name_too_long_for_a_file_name_is_refused_when_read(tmp_path, old):
    """A 300-character algorithm name failed mid-sweep with "File name too long" (its parts
    are named by it) after configs.csv and the manifest were written; an experiment's made
    an unwritable results folder."""
    cfg = _write(tmp_path, BASE.replace(old, old.split('"')[0] + '"' + "u" * 300 + '"'))
    field = "algorithms[0].name" if "userknn" in old else "name"
    assert _error(cfg) == (f"{cfg}: {field}: has 300 characters, at most 100: it is part of "
                           "the names of the files the sweep writes")


def test_an_experiment_built_in_python_reads_its_grid_like_a_file():
    """dptune.Experiment(...) with a grid file: check_experiment reads the grid (relative to the
    working directory: the experiment has no file) and gives what load_experiment gives."""
    from dptune.config import AlgorithmConfig, Experiment, check_experiment

    grid = str(ROOT / "grids" / "quickstart-knn.toml")
    exp = check_experiment(Experiment(name="t", source="", algorithms=(
        AlgorithmConfig(name="userknn", type="userknn", grid=grid),)))
    assert exp.grids["userknn"].size == 6 and exp.algorithms[0].grid_path == grid


@pytest.mark.parametrize(("change", "field"), [
    ({"seed": -1}, "seed"),
    ({"name": "a b"}, "name"),
    ({"algorithms": ()}, "algorithms"),
    ({"evaluation": "cutoffs0"}, "evaluation.cutoffs"),
    ({"algorithms": "bad-type"}, "algorithms[0].type"),
    ({"algorithms": "no-grid"}, "algorithms[0].grid"),
    ({"algorithms": "twice"}, "algorithms[1].name"),
])
def test_an_experiment_built_or_changed_in_python_is_refused_before_any_work(
        tmp_path, monkeypatch, change, field):
    """A wrong field of an Experiment made in Python (or changed with dataclasses.replace) is
    one line naming it, from dptune.sweep before anything is written: not a KeyError from the
    manifest, nor a ValueError from the metrics after the store was created."""
    from dataclasses import replace

    import dptune
    from dptune.config import AlgorithmConfig, EvaluationConfig

    monkeypatch.chdir(tmp_path)
    exp = load_experiment(_write(tmp_path, BASE))
    knn = exp.algorithms[0]
    values = {
        "cutoffs0": EvaluationConfig(cutoffs=(0,)),
        "bad-type": (AlgorithmConfig(name="a", type="nope", grid=knn.grid),),
        "no-grid": (AlgorithmConfig(name="a", type="userknn", grid="missing.toml"),),
        "twice": (knn, knn),
    }
    bad = replace(exp, grids={}, **{k: values.get(v, v) if isinstance(v, str) else v
                                    for k, v in change.items()})
    with pytest.raises(DptuneError) as err:
        dptune.sweep(bad, results=tmp_path / "results", progress=False)
    assert str(err.value).startswith(f"{exp.source}: {field}: ")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("text", "field"), [
    ('name = "abc\\n"', "name"),  # a trailing newline would name files of the store
    ("[evaluation]\ncutoffs = [true, 10]", "evaluation.cutoffs"),  # true is no cutoff
])
def test_values_python_would_take_for_others_are_refused(tmp_path, text, field):
    toml = (text + "\n" + BASE.replace('name = "t"\n', "") if text.startswith("name")
            else BASE + text + "\n")
    with pytest.raises(DptuneError) as err:
        load_experiment(_write(tmp_path, toml))
    assert f": {field}: " in str(err.value)
