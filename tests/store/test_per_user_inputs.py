"""A per-user table's input, through ``dptune dp --per-user`` and
``dptune.discriminative_power``: a store's own export is read although its test split holds
only some configurations, and every bad cell (a hyperparameter without a value, a column
named as a per-user column, a value beyond the store's floats, a metric without a name) is
refused before any work in one line naming the file (``per_user`` for a DataFrame), the row
and the column."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dptune
from dptune.cli import main
from dptune.errors import DptuneError

#: Four BPR configurations (factors x lr) of :func:`_table`.
CONFIGS = pd.DataFrame({"algorithm": "bpr", "config_id": [0, 1, 2, 3], "factors": [8, 8, 16, 16],
                        "lr": [0.1, 0.2, 0.1, 0.2]})


def _table(test: tuple[int, ...] = (0, 3)) -> pd.DataFrame:
    """The four configurations on folds 0 and 1 (40 users, ndcg@1 and ndcg@10) and the
    configurations ``test`` on the test split, as a sweep evaluates only some on it."""
    rng = np.random.default_rng(0)
    rows = [("bpr", c, fold, u, "ndcg", cut, 0.7 * rng.random() + c / 10)
            for c in range(4) for fold in ("0", "1") for u in range(40) for cut in (1, 10)]
    rows += [("bpr", c, "test", u, "ndcg", cut, rng.random())
             for c in test for u in range(40) for cut in (1, 10)]
    return pd.DataFrame(rows, columns=["algorithm", "config_id", "fold", "user", "metric",
                                       "cutoff", "value"])


def _framed(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the hyperparameter columns ``factors`` and ``lr``."""
    return table.merge(CONFIGS, on=["algorithm", "config_id"])


def _refused(capsys, *argv: str) -> str:
    """``dptune`` exits 2 with one line on stderr, no traceback; returns the line."""
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_stores_export_gives_its_dp_csv_though_its_test_split_holds_some_configurations(
        tiny_swept_every_stage: Path, tmp_path: Path) -> None:
    """The README's ``dptune dp --per-user results/X/per_user.parquet --configs
    results/X/configs.csv`` of a sweep with a test split (which evaluates only some
    configurations on it) gives the sweep's dp.csv: the test split is no fold of DP, so its
    missing configurations are no gap."""
    res = tiny_swept_every_stage / "results"
    per_user = pd.read_parquet(res / "per_user.parquet")
    test = per_user[per_user["fold"] == "test"]
    assert 0 < test["config_id"].nunique() < per_user["config_id"].nunique()
    man = json.loads((res / "manifest.json").read_text())
    out = tmp_path / "dp"
    assert main(["dp", "--per-user", str(res / "per_user.parquet"), "--configs",
                 str(res / "configs.csv"), "--reports", str(out), "--pairs",
                 str(man["analysis"]["pairs"]), "--seed", str(man["seeds"]["analysis"]),
                 "--bootstrap", str(man["analysis"]["bootstrap"])]) == 0
    want = tiny_swept_every_stage / "reports" / "dp.csv"
    assert (out / "dp.csv").read_bytes() == want.read_bytes()
    # the settings count the folds the DP is averaged over, and name the test split apart
    # (they said "3 (0, 1, test)" beside captions of 2 folds)
    assert ("| Folds | 2 validation (0, 1); and the test split (test), which the DP does not "
            "use |") in (out / "report.md").read_text()


def test_a_frame_whose_test_fold_holds_some_configurations_gives_the_dp_without_it() -> None:
    """``discriminative_power`` of a DataFrame whose test fold holds two of four
    configurations: the DP of its validation folds, as without the test fold."""
    with_test = dptune.discriminative_power(_framed(_table()), hyperparameters=["factors", "lr"],
                                            bootstrap=0, importance=False).dp.table
    without = dptune.discriminative_power(_framed(_table(test=())),
                                          hyperparameters=["factors", "lr"], bootstrap=0,
                                          importance=False).dp.table
    pd.testing.assert_frame_equal(with_test, without)


def test_a_configuration_only_on_the_test_split_is_named() -> None:
    """Completeness is still required of the validation folds: a configuration the test
    split holds but fold 0 lacks is named with the fold."""
    table = pd.concat([_table(test=(0, 3)), _table(test=(4,)).query("config_id == 4")])
    with pytest.raises(DptuneError, match=r"^per_user: config_id: algorithm bpr: config_id 4 has "
                       r"no value of ndcg@1 on fold 0"):
        dptune.discriminative_power(table, bootstrap=0)


@pytest.mark.parametrize("more", [(), ("--no-importance",)])
def test_an_empty_hyperparameter_cell_of_a_configs_file_is_one_line(
        tmp_path: Path, capsys, more: tuple[str, ...]) -> None:
    """An empty ``lr`` failed inside optuna's importance with a traceback (and without
    importance left the configuration out of the ``lr=`` scopes without a word): refused
    naming the configurations file, its line and the column."""
    _table().to_csv(tmp_path / "pu.csv", index=False)
    cfg = CONFIGS.astype({"lr": object})
    cfg.loc[1, "lr"] = None
    cfg.to_csv(tmp_path / "configs.csv", index=False)
    line = _refused(capsys, "dp", "--per-user", str(tmp_path / "pu.csv"), "--configs",
                    str(tmp_path / "configs.csv"), "--reports", str(tmp_path / "r"), *more)
    assert line.startswith(f"dptune: {tmp_path / 'configs.csv'}: lr: line 3 has no value "
                           "(configuration bpr/1)")
    assert not (tmp_path / "r").exists()


def test_a_missing_hyperparameter_value_of_a_frame_is_named() -> None:
    frame = _framed(_table())
    frame.loc[7, "lr"] = np.nan
    with pytest.raises(DptuneError, match=r"^per_user: lr: row 7 has no value \(configuration "
                       r"bpr/0\), while other configurations of bpr have one"):
        dptune.discriminative_power(frame, hyperparameters=["factors", "lr"], bootstrap=0)


def test_a_hyperparameter_with_two_values_names_its_column() -> None:
    """The column at fault, not the first of ``hyperparameters``."""
    frame = _framed(_table())
    frame.loc[7, "lr"] = 0.3
    with pytest.raises(DptuneError, match=r"^per_user: lr: configuration bpr/0 has more than "
                       r"one value \(0.1, 0.3\)"):
        dptune.discriminative_power(frame, hyperparameters=["factors", "lr"], bootstrap=0)


@pytest.mark.parametrize("column", ["value", "fold", "user"])
def test_a_configs_column_named_as_a_per_user_column_is_blamed_on_the_configs_file(
        tmp_path: Path, capsys, column: str) -> None:
    """It was blamed on the per-user file ("pu.csv: value: missing column")."""
    _table().to_csv(tmp_path / "pu.csv", index=False)
    CONFIGS.rename(columns={"lr": column}).to_csv(tmp_path / "configs.csv", index=False)
    line = _refused(capsys, "dp", "--per-user", str(tmp_path / "pu.csv"), "--configs",
                    str(tmp_path / "configs.csv"), "--reports", str(tmp_path / "r"))
    assert line.startswith(f"dptune: {tmp_path / 'configs.csv'}: {column}: reserved column name")


def test_a_hyperparameter_named_as_a_per_user_column_is_refused() -> None:
    configs = CONFIGS.rename(columns={"lr": "value"})
    with pytest.raises(DptuneError, match=r"^per_user \(configurations\): value: reserved column"):
        dptune.discriminative_power(_table(), configs=configs, bootstrap=0)
    with pytest.raises(DptuneError, match=r"^per_user: hyperparameters: 'value' is a column of "
                       r"the per-user table"):
        dptune.discriminative_power(_framed(_table()), hyperparameters=["factors", "value"],
                                    bootstrap=0)


@pytest.mark.parametrize("value", [1e300, 1e39, -1e39, 10**400],
                         ids=["1e300", "1e39", "-1e39", "10**400"])
def test_a_value_beyond_the_stores_floats_is_refused_without_a_warning(value: object) -> None:
    """1e300 overflowed in the bootstrap's 32-bit sums (a RuntimeWarning, then an error naming
    no file) and 1e39 was taken: refused at input, naming the row and the column."""
    table = _table().astype({"value": object})
    table.loc[5, "value"] = value
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DptuneError, match=r"^per_user: value: row 5 has .*, beyond the "
                           r"32-bit floats a result store holds values in"):
            dptune.discriminative_power(table, bootstrap=40)


def test_the_largest_float32_is_a_value() -> None:
    table = _table(test=()).assign(metric="score")  # an outside metric: any finite value
    table.loc[5, "value"] = float(np.finfo(np.float32).max)
    from dptune.store._per_user_file import check_per_user

    assert check_per_user(table)["value"].iloc[5] == float(np.finfo(np.float32).max)


@pytest.mark.parametrize(("metric", "words"), [
    ("@10", "row 0 has '@10', which has no metric name"),
    ("ndcg@10@5", "row 0 has 'ndcg@10@5', more than one @"),
    (" @10", "row 0 has ' @10', which has no metric name"),
])
def test_a_bad_metric_name_is_named_at_input(metric: str, words: str) -> None:
    """It was blamed on the analysis option primary_metric ("analysis: primary_metric: must
    be a metric's name ... got ''")."""
    table = _table(test=()).drop(columns="cutoff").assign(metric=metric)
    with pytest.raises(DptuneError, match=r"^per_user: metric: ") as err:
        dptune.discriminative_power(table, bootstrap=0)
    assert words in str(err.value)


def test_a_blank_metric_name_beside_a_cutoff_column_is_named() -> None:
    with pytest.raises(DptuneError, match=r"^per_user: metric: row 0 has ' ', which has no "
                       r"metric name"):
        dptune.discriminative_power(_table(test=()).assign(metric=" "), bootstrap=0)


def test_a_bad_metric_of_a_file_names_its_line(tmp_path: Path, capsys) -> None:
    table = _table(test=())
    table = table.assign(metric=table["metric"] + "@" + table["cutoff"].astype(str))
    table.loc[3, "metric"] = "ndcg@10@5"
    table.drop(columns="cutoff").to_csv(tmp_path / "pu.csv", index=False)
    line = _refused(capsys, "dp", "--per-user", str(tmp_path / "pu.csv"), "--reports",
                    str(tmp_path / "r"))
    assert line.startswith(f"dptune: {tmp_path / 'pu.csv'}: metric: line 5 has 'ndcg@10@5'")


def test_two_configurations_with_the_same_hyperparameters_are_named(tmp_path: Path,
                                                                     capsys) -> None:
    """Two configurations of one grid point: a pair of them differs in no hyperparameter, yet
    a hyperparameter-value scope would count it as differing in the others (it was accepted
    without a word). A configs file names its line and both configurations; a DataFrame's
    hyperparameters the same."""
    (tmp_path / "pu.csv").write_text(_table(test=()).to_csv(index=False))
    same = CONFIGS.assign(lr=[0.1, 0.2, 0.1, 0.1])  # 3 is 2's grid point
    same.to_csv(tmp_path / "cfg.csv", index=False)
    line = _refused(capsys, "dp", "--per-user", str(tmp_path / "pu.csv"), "--configs",
                    str(tmp_path / "cfg.csv"), "--reports", str(tmp_path / "r"))
    assert "cfg.csv: config_id: line 5: configuration bpr/3 has the hyperparameters of " \
           "configuration bpr/2 (factors=16, lr=0.1)" in line
    assert not (tmp_path / "r").exists()
    frame = _table(test=()).merge(same, on=["algorithm", "config_id"])
    with pytest.raises(DptuneError, match="configuration bpr/3 has the hyperparameters of "
                                          "configuration bpr/2"):
        dptune.discriminative_power(frame, hyperparameters=["factors", "lr"])


@pytest.mark.parametrize(("name", "sep", "said"), [("pu.csv", ";", "';'"), ("pu.tsv", ",", "','")])
def test_a_file_written_with_another_separator_says_so(tmp_path: Path, capsys, name: str,
                                                       sep: str, said: str) -> None:
    """A semicolon-separated .csv (a European spreadsheet's) was "unknown column
    'algorithm;config_id;...'": the line says which separator the file seems to have and
    which one its suffix is read with."""
    _table(test=()).to_csv(tmp_path / name, sep=sep, index=False)
    line = _refused(capsys, "dp", "--per-user", str(tmp_path / name), "--reports",
                    str(tmp_path / "r"))
    assert f"its separator looks like {said}" in line and "unknown column" not in line
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("fold", ["TEST", "Test", " test"])
def test_a_test_fold_written_otherwise_is_named(fold: str) -> None:
    """A fold "TEST" was read as a validation fold, the held-out values entering every DP;
    metric names are read in any case, so a researcher would not expect that."""
    table = _table(test=(0, 1, 2, 3))
    table["fold"] = table["fold"].replace("test", fold)
    with pytest.raises(DptuneError, match="per_user: fold: row .* the held-out test split is "
                                          "the fold named test, in lower case"):
        dptune.discriminative_power(table)


@pytest.mark.parametrize(("column", "meant"), [
    ("SYSTEM", "system"), ("User", "user"), (" user", "user"), ("value ", "value"),
    ("Config ID", "config_id"), ("METRIC", "metric")])
def test_a_column_written_in_other_case_or_with_blanks_is_named_with_its_spelling(
        column: str, meant: str) -> None:
    """``SYSTEM`` or ``' user'`` was "unknown column (allowed: ...)", listing the very name it
    misspells without saying so: column names are matched as written."""
    key = "config_id" if meant == "config_id" else "system"
    table = _table(test=()).rename(columns={"config_id": key}).rename(columns={meant: column})
    with pytest.raises(DptuneError) as err:
        dptune.discriminative_power(table, bootstrap=0)
    assert str(err.value) == (f"per_user: {column}: unknown column (did you mean '{meant}'? "
                              "column names are matched as written: lower case, without "
                              "blanks)")


def test_a_column_far_from_any_keeps_the_allowed_list() -> None:
    with pytest.raises(DptuneError, match=r"^per_user: score: unknown column \(allowed: "
                                          r"algorithm, system, config_id"):
        dptune.discriminative_power(_table(test=()).rename(columns={"value": "score"}))


@pytest.mark.parametrize(("index", "words"), [
    (["user"], "the table has it as its index"),
    (["config_id", "user"], "the table has it as a level of its MultiIndex"),
    (["algorithm", "config_id", "fold", "user", "metric", "cutoff"],
     "the table has it as a level of its MultiIndex")])
def test_a_required_column_in_the_index_says_to_reset_it(index: list[str], words: str) -> None:
    """A table indexed by its users (``set_index``, a ``groupby`` result) was "user: missing
    column", though the users are there, in the index."""
    table = _table(test=()).set_index(index)
    with pytest.raises(DptuneError) as err:
        dptune.discriminative_power(table, bootstrap=0)
    message = str(err.value)
    assert message.startswith("per_user: user: missing column (")  # the first required one
    assert f"({words}, and only its columns are read: call reset_index() first)" in message
    assert "\n" not in message
    res = dptune.discriminative_power(table.reset_index(), bootstrap=0)  # the fix works
    assert len(res.dp.table)


def test_a_system_named_otherwise_in_the_index_is_named() -> None:
    table = _table(test=()).rename(columns={"config_id": "system"}).set_index("system")
    with pytest.raises(DptuneError, match=r"^per_user: config_id: give exactly one of the "
                                          r"columns config_id and system \(the table has it as "
                                          r"its index.*call reset_index\(\) first\)$"):
        dptune.discriminative_power(table, bootstrap=0)
    table.index.name = "System"
    with pytest.raises(DptuneError, match=r"has it as 'System' as its index"):
        dptune.discriminative_power(table, bootstrap=0)


def test_a_parquet_file_written_with_its_index_says_how_to_write_it(tmp_path: Path,
                                                                     capsys) -> None:
    """pandas writes a named index into a Parquet file and reads it back as the index."""
    _table(test=()).set_index("user").to_parquet(tmp_path / "pu.parquet")
    line = _refused(capsys, "dp", "--per-user", str(tmp_path / "pu.parquet"), "--reports",
                    str(tmp_path / "r"))
    assert line == (f"dptune: {tmp_path / 'pu.parquet'}: user: missing column (the table has "
                    "it as its index, and only its columns are read: write the file from "
                    "table.reset_index())")


def test_a_csv_written_with_its_index_says_to_write_it_without(tmp_path: Path, capsys) -> None:
    """``to_csv`` without ``index=False`` writes an unnamed first column, which pandas reads as
    ``Unnamed: 0``: it was "unknown column (allowed: ...)", no word of the index. It is not
    dropped without a word: it could be a column of data whose header cell is empty."""
    _table(test=()).to_csv(tmp_path / "pu.csv")
    line = _refused(capsys, "dp", "--per-user", str(tmp_path / "pu.csv"), "--reports",
                    str(tmp_path / "r"))
    assert line == (f"dptune: {tmp_path / 'pu.csv'}: Unnamed: 0: unknown column (pandas's name "
                    "for a column without a header: the index a table was written with; write "
                    "it with to_csv(..., index=False), or drop the column)")
    with pytest.raises(DptuneError, match=r"^per_user: Unnamed: 0: unknown column .*"
                                          r"index=False"):
        dptune.discriminative_power(pd.read_csv(tmp_path / "pu.csv"))


@pytest.mark.parametrize("kind", [complex, object])
def test_a_complex_value_is_refused_not_cast_to_real(kind: type) -> None:
    """A complex ``value`` column was cast to real, only numpy's ComplexWarning telling that
    the imaginary parts were dropped."""
    table = _table(test=()).astype({"value": kind})
    table.loc[7, "value"] = 0.25 + 0.5j
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DptuneError) as err:
            dptune.discriminative_power(table, bootstrap=0)
    want = 0 if kind is complex else 7  # a complex column: every cell is complex
    shown = repr(complex(table["value"].iloc[want]))
    assert str(err.value) == (f"per_user: value: must hold real numbers, not complex ones; "
                              f"row {want} has {shown}")
