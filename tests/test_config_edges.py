"""Edges of experiment and grid files a researcher may write: numbers beyond a float's range,
budgets of odd digits, paths no file can have, grid values Python's ``==`` confuses
(``true == 1``), and TOML as editors save it or Python's parser cannot read it (a byte-order
mark, an error at the end of the document, an integer of 5,000 digits). Each is one error
line naming the file and the field, or the values as written; never a traceback, never a
silent change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import one_error_line

from dptune.cli import main
from dptune.config import load_experiment, parse_budget
from dptune.errors import DptuneError, read_toml
from dptune.grids import Grid, load_grid, subgrid_around

ROOT = Path(__file__).resolve().parents[1]
KNN = (ROOT / "grids" / "quickstart-knn.toml").as_posix()

EXPERIMENT = """
name = "edge"
{top}
[split]
folds = 2
{split}
{tables}
[[algorithms]]
name = "uknn"
type = "userknn"
grid = "{grid}"
"""

#: An integer of 401 digits: valid TOML, but no float holds it (float() raises OverflowError).
HUGE = "1" + "0" * 400


def _experiment(tmp_path: Path, tables: str = "", grid: str = KNN, top: str = "",
                split: str = "") -> Path:
    path = tmp_path / "edge.toml"
    path.write_text(EXPERIMENT.format(top=top, split=split, tables=tables, grid=grid),
                    encoding="utf-8")
    return path


def _refused(path: Path, *needles: str) -> str:
    with pytest.raises(DptuneError) as err:
        load_experiment(path)
    text = str(err.value)
    assert "\n" not in text and str(path) in text, text
    for needle in needles:
        assert needle in text, text
    return text


# --- numbers beyond a float's range ---------------------------------------------------------


@pytest.mark.parametrize("split, tables, field", [
    ("", f"[evaluation]\nrelevance_threshold = {HUGE}\n", "evaluation.relevance_threshold"),
    (f"train_ratio = {HUGE}", "", "split.train_ratio"),
    ("", f"[data]\nmin_rating = {HUGE}\n", "data.min_rating"),
], ids=["relevance_threshold", "train_ratio", "min_rating"])
def test_an_integer_beyond_a_float_is_one_error_naming_the_field(tmp_path, split, tables, field):
    """``train_ratio = 1000...0`` (400 zeros) failed with OverflowError: int too large to
    convert to float."""
    path = _experiment(tmp_path, tables, split=split)
    text = _refused(path, field, "must be a finite number", "401 digits")
    assert HUGE not in text  # named by its size, not spelt out


def test_an_integer_beyond_a_float_through_the_command_line(tmp_path, capsys):
    path = _experiment(tmp_path, f"[evaluation]\nrelevance_threshold = {HUGE}\n")
    assert main(["run", str(path), "--results", str(tmp_path / "results"), "--no-progress"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "evaluation.relevance_threshold" in line and str(path) in line
    assert not (tmp_path / "results").exists()


# --- budgets --------------------------------------------------------------------------------


@pytest.mark.parametrize("budget, needle", [
    ("²", "is not a budget"),  # a digit to str.isdigit, no number to int()
    ("9" * 5000, "more than any grid holds"),  # int() reads at most 4,300 digits
    ("9" * 400 + "h", "a finite time"),  # a float's infinity, not a time
], ids=["superscript", "5000-digits", "400-digit-hours"])
def test_budget_of_odd_digits_is_one_error(tmp_path, budget, needle):
    path = _experiment(tmp_path, f'[sweep]\nbudget = "{budget}"\n')
    text = _refused(path, "sweep.budget", needle)
    assert len(text) < 600, text  # the 5,000 digits are not copied into the message
    with pytest.raises(DptuneError, match="--budget"):
        parse_budget(budget, "--budget", None)


def test_budgets_as_before():
    assert parse_budget("12", "s", "b").amount == 12.0
    assert parse_budget("0012", "s", "b").text == "12"
    assert parse_budget("100000", "s", "b").amount == 100_000.0
    assert parse_budget("1h30m", "s", "b").amount == 5400.0
    with pytest.raises(DptuneError, match="100,001 units: more than any grid holds"):
        parse_budget("100001", "s", "b")


# --- paths no file can have -----------------------------------------------------------------

#: A ``~user`` path of a user that does not exist: pathlib's expanduser raises RuntimeError.
NO_USER = "~dptune-no-such-user-x9q/grid.toml"


@pytest.mark.parametrize("grid, needle", [
    ("a" * 5000 + ".toml", "cannot name a file"),  # OSError: File name too long
    (NO_USER, "cannot name a file"),
], ids=["too-long", "no-such-user"])
def test_unusable_grid_path_is_one_error(tmp_path, grid, needle):
    text = _refused(_experiment(tmp_path, grid=grid), "algorithms[0].grid", needle)
    assert len(text) < 600, text


@pytest.mark.parametrize("source", ["a" * 5000 + ".csv", NO_USER, "ratings\\u0000.csv"],
                         ids=["too-long", "no-such-user", "nul"])
def test_unusable_data_path_is_one_error(tmp_path, source):
    text = _refused(_experiment(tmp_path, f'[data]\nsource = "{source}"\n'), "data.source",
                    "cannot name a file")
    assert len(text) < 600, text


@pytest.mark.skipif(not Path(os.devnull).exists() or Path(os.devnull).is_file(),
                    reason="needs a device file")
def test_grid_path_to_a_device_is_not_reported_missing(tmp_path):
    """``grid = "/dev/null"`` exists: the error says it is no regular file, not "not found"."""
    text = _refused(_experiment(tmp_path, grid=Path(os.devnull).as_posix()),
                    "algorithms[0].grid", "is not a regular file")
    assert "not found" not in text


# --- grid values: true is not 1 -------------------------------------------------------------


def _grid(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "g.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("written, expected", [
    ("[1, true]", [1, True]),
    ("[true, 1]", [True, 1]),
    ("[0.0, false]", [0.0, False]),
])
def test_a_bool_and_an_equal_number_are_two_values(tmp_path, written, expected):
    """The duplicate check reads ``[1, true]`` as two values; the grid kept only the first."""
    values = load_grid(_grid(tmp_path, f"[params.x]\nvalues = {written}\n")).values["x"]
    assert values == expected
    assert [type(v) for v in values] == [type(v) for v in expected]


def test_excluding_true_does_not_drop_one(tmp_path):
    """``exclude = [true]`` silently dropped ``k = 1`` from ``[1, 2]``."""
    with pytest.raises(DptuneError, match=r"params\.k\.exclude: True is not a value of the grid"):
        load_grid(_grid(tmp_path, "[params.k]\nvalues = [1, 2]\nexclude = [true]\n"))
    grid = load_grid(_grid(tmp_path, "[params.x]\nvalues = [1, true, 2]\nexclude = [true]\n"))
    assert grid.values["x"] == [1, 2] and type(grid.values["x"][0]) is int
    grid = load_grid(_grid(tmp_path, "[params.x]\nvalues = [1, true, 2]\nexclude = [1]\n"))
    assert grid.values["x"] == [True, 2] and grid.values["x"][0] is True


def test_exclude_of_an_equal_number_as_before(tmp_path):
    grid = load_grid(_grid(tmp_path, "[params.k]\nvalues = [10, 20]\nexclude = [10.0]\n"))
    assert grid.values["k"] == [20]


def test_subgrid_centres_on_the_bool_not_the_equal_number():
    grid = Grid(values={"x": [1, True, 2, 3, 4]})
    assert subgrid_around(grid, {"x": True}, 1).values["x"] == [1, True, 2]
    assert [type(v) for v in subgrid_around(grid, {"x": 1}, 1).values["x"]] == [int, bool]


@pytest.mark.parametrize("written", ["[]", "false", '""', "0"])
def test_derived_that_is_no_table_is_one_error(tmp_path, written):
    """``derived = false`` (or ``[]``, ``""``, ``0``) read silently as no derived
    hyperparameter; any other key of the wrong type is an error."""
    with pytest.raises(DptuneError, match=r"g\.toml: derived: must be a table"):
        load_grid(_grid(tmp_path, f"derived = {written}\n[params.k]\nvalues = [10]\n"))
    assert load_grid(_grid(tmp_path, "derived = {}\n[params.k]\nvalues = [10]\n")).derived == {}


# --- an experiment built in Python ----------------------------------------------------------


@pytest.mark.parametrize(("table", "change", "field"), [
    ("split", {"train_ratio": "0.8"}, "split.train_ratio"),
    ("split", {"folds": "3"}, "split.folds"),
    ("split", {"min_user_interactions": "5"}, "split.min_user_interactions"),
    ("evaluation", {"user_block": "1024"}, "evaluation.user_block"),
    ("evaluation", {"metrics": "ndcg"}, "evaluation.metrics"),  # read as 'n', 'd', 'c', 'g'
    ("evaluation", {"test_split": 1}, "evaluation.test_split"),
    ("data", {"kcore": "5"}, "data.kcore"),
    ("split", None, "split"),  # a dict where a SplitConfig belongs
], ids=["train_ratio", "folds", "min_user_interactions", "user_block", "metrics",
        "test_split", "kcore", "table"])
def test_a_setting_of_the_wrong_type_built_in_python_is_one_error(tmp_path, monkeypatch,
                                                                  table, change, field):
    """``dataclasses.replace(exp.split, folds="3")`` failed with a TypeError of the range
    checks (``'<' not supported between instances of 'str' and 'int'``), from dptune.sweep."""
    from dataclasses import replace

    import dptune

    monkeypatch.chdir(tmp_path)
    exp = load_experiment(_experiment(tmp_path))
    value = {"folds": 3} if change is None else replace(getattr(exp, table), **change)
    with pytest.raises(DptuneError) as err:
        dptune.sweep(replace(exp, **{table: value}), results=tmp_path / "results",
                     progress=False)
    assert str(err.value).startswith(f"{exp.source}: {field}: must be "), err.value
    assert not (tmp_path / "results").exists()


#: An integer of more digits than Python spells out (4,300): a setting of it built in Python
#: stopped a message, or the store's JSON fingerprint, with a ValueError.
THOUSANDS = 10**5000


@pytest.mark.parametrize(("table", "change", "message"), [
    ("split", {"folds": THOUSANDS}, "split.folds: at most 127 folds (the split's fold labels "
     "are 8-bit integers), got an integer of 5,001 digits"),
    ("split", {"min_user_interactions": THOUSANDS}, "split.min_user_interactions: must be an "
     "integer of at most 9,223,372,036,854,775,807 (int64's largest), got an integer of 5,001 "
     "digits"),
    ("evaluation", {"cutoffs": (1, THOUSANDS)}, "evaluation.cutoffs: at most 32,767 (the "
     "longest top-N list the store holds), got an integer of 5,001 digits"),
    ("evaluation", {"user_block": 2**63}, "evaluation.user_block: must be an integer of at "
     "most 9,223,372,036,854,775,807 (int64's largest), got 9223372036854775808"),
    ("data", {"kcore": THOUSANDS}, "data.kcore: must be an integer of at most "
     "9,223,372,036,854,775,807 (int64's largest), got an integer of 5,001 digits"),
    ("data", {"columns": {"user": THOUSANDS, "item": 1}}, "data.columns.user: must be a column "
     "name or a 0-based position, got an integer of 5,001 digits"),
    (None, {"name": THOUSANDS}, "name: must be ASCII letters (a-z, A-Z), digits, '.', '_' or "
     "'-', starting with a letter or digit; got an integer of 5,001 digits"),
], ids=["folds", "min_user_interactions", "cutoffs", "user_block", "kcore", "columns", "name"])
def test_a_huge_integer_setting_built_in_python_is_one_error(tmp_path, table, change, message):
    """An integer setting beyond int64, or of thousands of digits, built in Python: the one
    line naming it, before any work (a ValueError of Python's integer-to-text limit, in a
    message or in the store's fingerprint, before)."""
    from dataclasses import replace

    import dptune

    exp = load_experiment(_experiment(tmp_path))
    changed = replace(exp, **change) if table is None else \
        replace(exp, **{table: replace(getattr(exp, table), **change)})
    with pytest.raises(DptuneError) as err:
        dptune.sweep(changed, results=tmp_path / "results", progress=False)
    assert str(err.value) == f"{exp.source}: {message}"
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("change", "message"), [
    ({"algorithms": 3}, "{src}: algorithms: must be a list of dptune.AlgorithmConfig, got int"),
    ({"source": 5}, "experiment: source: must be the experiment file's path or a label (a "
     "str), got int"),
    ({"data": ("sep", 10**5000)}, "{src}: data.sep: must be a single ASCII character or one of "
     "tab, \\t, comma, semicolon, space, pipe, got an integer of 5,001 digits"),
    ({"sweep": ("budget", -10**5000)}, "{src}: sweep.budget: a negative integer of 5,001 digits: "
     "needs at least 1; a budget is "),
    ({"algorithms": ("grid", 3)}, "{src}: algorithms[0].grid: must be the grid file's path as a "
     "string (empty for no hyperparameter), got int"),
], ids=["algorithms-int", "source-int", "sep-5001-digits", "budget-negative-5001-digits",
        "grid-int"])
def test_a_field_of_the_wrong_kind_built_in_python_is_one_error(tmp_path, change, message):
    """``algorithms=3`` failed with TypeError ('int' object is not iterable), ``source=5``,
    a separator or a budget of thousands of digits with a ValueError of Python's
    integer-to-text limit."""
    from dataclasses import replace

    from dptune.config import check_experiment

    exp = load_experiment(_experiment(tmp_path))
    (key, value), = change.items()
    if isinstance(value, tuple) and key == "algorithms":
        value = (replace(exp.algorithms[0], **{value[0]: value[1]}), *exp.algorithms[1:])
        exp = replace(exp, grids={})
    elif isinstance(value, tuple):
        value = replace(getattr(exp, key), **{value[0]: value[1]})
    with pytest.raises(DptuneError) as err:
        check_experiment(replace(exp, **{key: value}))
    assert str(err.value).startswith(message.format(src=exp.source)), err.value


def test_numbers_of_numpy_and_lists_built_in_python_as_before(tmp_path):
    from dataclasses import replace

    import numpy as np

    from dptune.config import check_experiment

    exp = load_experiment(_experiment(tmp_path))
    same = replace(exp, split=replace(exp.split, folds=np.int64(2), train_ratio=np.float32(0.5)),
                   evaluation=replace(exp.evaluation, cutoffs=[1, 5, 10], relevance_threshold=4))
    assert check_experiment(same).split.folds == 2


def test_an_algorithm_as_a_dict_built_in_python_is_one_error(tmp_path):
    """``algorithms=({"name": ...},)`` failed with AttributeError: 'dict' object has no
    attribute 'name'."""
    from dataclasses import replace

    from dptune.config import check_experiment

    exp = load_experiment(_experiment(tmp_path))
    bad = replace(exp, algorithms=({"name": "uknn", "type": "userknn"},), grids={})
    with pytest.raises(DptuneError, match=r"algorithms\[0\]: must be a dptune.AlgorithmConfig"):
        check_experiment(bad)


# --- TOML files as editors save them --------------------------------------------------------


@pytest.mark.parametrize("tail, problem, where", [
    ("a = [1, 2", "Unclosed array", "line 3, column 10"),  # no newline after the last line
    ("a = [1, 2\n", "Unclosed array", "line 3, column 10"),
    ("a = [1, 2\n\n   \n", "Unclosed array", "line 3, column 10"),  # blank lines after it
    ("a = [1,\n  2,\n  # still in the array\n", "Invalid value", "line 5, column 23"),
], ids=["no-newline", "newline", "blank-lines-after", "comment-last"])
def test_a_toml_error_at_the_end_of_the_document_names_the_last_line(tmp_path, tail, problem,
                                                                      where):
    """An unclosed array on the last line said ``Unclosed array (at end of document)``, the one
    invalid-TOML message without a line number."""
    path = tmp_path / "grid.toml"
    path.write_text("x = 1\ny = 2\n" + tail, encoding="utf-8")
    with pytest.raises(DptuneError) as err:
        read_toml(path, "grid file")
    assert str(err.value) == (f"{path}: invalid TOML: {problem} (at {where}, the end of the "
                              "document)")


def test_other_toml_errors_are_named_as_before(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text("x = 1\ny = \nz = 2\n", encoding="utf-8")
    with pytest.raises(DptuneError, match=r": invalid TOML: Invalid value \(at line 2, column "
                       r"5\)$"):
        read_toml(path, "grid file")


def test_a_byte_order_mark_is_not_content(tmp_path):
    """A file saved by Windows Notepad starts with a UTF-8 byte-order mark, which failed as
    ``Invalid statement (at line 1, column 1)``: it is skipped, as the data readers skip it,
    in an experiment file and in a grid file alike."""
    grid = tmp_path / "grid.toml"
    grid.write_bytes(b"\xef\xbb\xbf" + Path(KNN).read_bytes())
    assert load_grid(grid).configs() == load_grid(KNN).configs()
    plain_exp = load_experiment(_experiment(tmp_path, grid=grid.as_posix()))
    path = tmp_path / "edge.toml"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    exp = load_experiment(path)
    assert (exp.name, exp.split.folds) == (plain_exp.name, plain_exp.split.folds) == ("edge", 2)
    # an error after the mark still names its line and column as an editor shows them
    path.write_bytes(b"\xef\xbb\xbfx = \n")
    with pytest.raises(DptuneError, match=r"invalid TOML: Invalid value \(at line 1, column 5\)"):
        read_toml(path, "experiment file")


#: An integer of 5,000 digits: Python's TOML parser refuses more than 4,300 with a ValueError.
LONG = "9" * 5000


@pytest.mark.parametrize("text, line", [
    (f"[params.k]\nvalues = [5, {LONG}]\n", 2),
    (f"[params.k]\nvalues = [\n  5,\n  {LONG},\n]\n", 4),
    (f"description = '{LONG}'\n[params.k]\nvalues = [{LONG}]\n", 3),  # digits in text are fine
], ids=["in-line", "in-a-long-array", "after-a-string-of-digits"])
def test_an_integer_of_more_digits_than_python_reads_is_one_error(tmp_path, capsys, text, line):
    """``values = [5, 999...9]`` (5,000 digits) ended in a traceback: ``ValueError: Exceeds the
    limit (4300 digits) for integer string conversion``."""
    grid = tmp_path / "grid.toml"
    grid.write_text(text, encoding="utf-8")
    with pytest.raises(DptuneError) as err:
        load_grid(grid)
    message = str(err.value)
    assert message == (f"{grid}: invalid TOML: an integer of more than 4,300 digits, beyond what "
                       f"Python reads (at line {line})")
    path = _experiment(tmp_path, grid=grid.as_posix())
    assert main(["run", str(path), "--results", str(tmp_path / "results"), "--no-progress"]) == 2
    assert one_error_line(capsys.readouterr().err) == f"dptune: {message}"
    assert not (tmp_path / "results").exists()


def test_nesting_deeper_than_python_parses_is_one_error(tmp_path):
    """``[[[[...]]]]`` 5,000 deep ended in a ``RecursionError`` traceback."""
    grid = tmp_path / "grid.toml"
    grid.write_text("[params.k]\nvalues = [5]\nx = " + "[" * 5000 + "]" * 5000 + "\n",
                    encoding="utf-8")
    with pytest.raises(DptuneError, match=r"^.*grid.toml: invalid TOML: arrays or inline tables "
                       r"nested too deeply for Python's parser \(at line 3\)$"):
        load_grid(grid)


# --- analysis options beyond a float's range ------------------------------------------------


@pytest.mark.parametrize("field", ["alpha", "stability_seconds"])
def test_an_analysis_float_beyond_a_float_is_one_error_naming_the_field(tmp_path, capsys, field):
    """``[analysis] alpha = 1000...0`` (400 zeros) failed with OverflowError: int too large to
    convert to float."""
    path = _experiment(tmp_path, f"[analysis]\n{field} = {HUGE}\n")
    text = _refused(path, f"analysis.{field}: must be", "an integer of 401 digits")
    assert HUGE not in text  # named by its size, not spelt out
    assert main(["run", str(path), "--results", str(tmp_path / "results"), "--no-progress"]) == 2
    assert one_error_line(capsys.readouterr().err) == f"dptune: {text}"
    assert not (tmp_path / "results").exists()
