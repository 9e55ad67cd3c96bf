"""Reading and validating per-user files from outside dptune (``dptune dp --per-user``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptune.errors import DptuneError
from dptune.store._per_user_file import check_per_user, read_per_user, read_per_user_configs

GOOD = """algorithm,config_id,fold,user,metric,cutoff,value
bpr,0,0,17,ndcg,10,0.3562
bpr,1,0,17,ndcg,10,0.2891
bpr,0,0,23,ndcg,10,0.0
bpr,1,0,23,ndcg,10,0.1934
"""
CONFIGS = """algorithm,config_id,factors
bpr,0,10
bpr,1,20
bpr,2,40
"""


def _write(tmp_path: Path, text: str, name: str = "per_user.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_csv_and_parquet_alike(tmp_path: Path) -> None:
    """The same table from CSV and Parquet; a CSV's users are its text, a Parquet integer
    column stays numbers (it has no written form to lose)."""
    a = read_per_user(_write(tmp_path, GOOD))
    pd.read_csv(tmp_path / "per_user.csv").to_parquet(tmp_path / "per_user.parquet")
    b = read_per_user(tmp_path / "per_user.parquet")
    assert a["user"].tolist() == ["17", "17", "23", "23"] and b["user"].dtype.kind == "i"
    pd.testing.assert_frame_equal(a, b.assign(user=b["user"].astype(str)), check_dtype=False)
    assert list(a.columns) == ["algorithm", "config_id", "fold", "user", "metric", "cutoff", "value"]
    assert a["fold"].tolist() == ["0"] * 4 and a["cutoff"].tolist() == [10] * 4
    assert np.allclose(a["value"], [0.3562, 0.2891, 0.0, 0.1934])


@pytest.mark.parametrize("name", ["per_user.csv.gz", "per_user.tsv.GZ", "configs.txt.gz"])
def test_a_gzip_compressed_text_table_is_read_as_its_text(tmp_path: Path, name: str) -> None:
    """``.csv.gz`` (``.tsv.gz``, ``.txt.gz``): the same table as the uncompressed file, and a
    bad value is named by the line an editor shows once it is decompressed."""
    import gzip

    text = GOOD if ".csv" in name else GOOD.replace(",", "\t")
    (tmp_path / name).write_bytes(gzip.compress(text.encode()))
    pd.testing.assert_frame_equal(read_per_user(tmp_path / name),
                                  read_per_user(_write(tmp_path, GOOD)))
    (tmp_path / name).write_bytes(gzip.compress(text.replace("0.2891", "high").encode()))
    with pytest.raises(DptuneError, match="line 3 has 'high'"):
        read_per_user(tmp_path / name)


def test_defaults_and_metric_at_cutoff(tmp_path: Path) -> None:
    text = "system,user,metric,value\nA,1,ndcg@5,0.5\nB,1,ndcg@5,0.25\nA,2,recall@10,1\nB,2,recall@10,0\n"
    df = read_per_user(_write(tmp_path, text))
    assert set(df["algorithm"]) == {"runs"} and set(df["fold"]) == {"0"}
    assert df[["metric", "cutoff"]].drop_duplicates().values.tolist() == [["ndcg", 5], ["recall", 10]]
    assert list(df.columns)[:2] == ["algorithm", "system"]


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet"])
def test_ids_are_kept_as_written(tmp_path: Path, suffix: str) -> None:
    """``0042`` and ``42`` are two users (and ``01``/``1`` two systems, ``00``/``0`` two folds),
    as in ``dptune data info`` and ``dptune evaluate``; a user called ``NA`` is a user. A CSV
    read as numbers would merge them into one ("duplicated row")."""
    rows = [("01", "00", "0042", 0.5), ("1", "00", "0042", 0.25), ("01", "00", "42", 0.75),
            ("1", "00", "42", 0.0), ("01", "0", "NA", 1.0), ("1", "0", "NA", 0.5)]
    df = pd.DataFrame(rows, columns=["system", "fold", "user", "value"]).assign(metric="ndcg@10")
    path = tmp_path / f"per_user{suffix}"
    if suffix == ".parquet":
        df.to_parquet(path)
    else:
        df.to_csv(path, index=False, sep="," if suffix == ".csv" else "\t")
    got = read_per_user(path)
    assert sorted(set(got["user"])) == ["0042", "42", "NA"]
    assert sorted(set(got["system"])) == ["01", "1"] and sorted(set(got["fold"])) == ["0", "00"]
    assert len(got) == 6


def test_integer_user_ids_key_the_bootstrap_as_a_store_does(tmp_path: Path) -> None:
    """Users written as integers are the same bootstrap keys whether a Parquet file holds
    them as numbers or a CSV file as text (so a store exported to CSV draws the same users);
    other ids are keyed by their sorted position."""
    from dptune.store._per_user_store import PerUserStore

    a = PerUserStore(read_per_user(_write(tmp_path, GOOD)))
    users = np.array(["17", "23"], dtype=object)
    assert a.user_keys(users).tolist() == ["17", "23"]
    padded = read_per_user(_write(tmp_path, GOOD.replace(",17,", ",017,"), "padded.csv"))
    assert PerUserStore(padded).user_keys(np.array(["017", "23"], dtype=object)).tolist() == [0, 1]


def test_tab_separated(tmp_path: Path) -> None:
    df = read_per_user(_write(tmp_path, GOOD.replace(",", "\t"), "per_user.tsv"))
    assert len(df) == 4


@pytest.mark.parametrize(("text", "field", "words"), [
    (GOOD.replace("value", "score"), "score", "unknown column"),
    (GOOD.replace(",value", "").replace(",0.3562", "").replace(",0.2891", "")
     .replace(",0.0", "").replace(",0.1934", ""), "value", "missing column"),
    (GOOD.replace("config_id", "system"), None, None),  # valid: systems named 0 and 1
    ("algorithm,user,metric,cutoff,value\nbpr,1,ndcg,10,0.5\n", "config_id", "exactly one"),
    ("system,config_id,user,metric,cutoff,value\nA,0,1,ndcg,10,0.5\n", "config_id", "exactly one"),
    (GOOD.replace("bpr,1,0,17", "bpr,1.5,0,17"), "config_id", "integers >= 0"),
    (GOOD.replace("bpr,1,0,17", "bpr,-1,0,17"), "config_id", "integers >= 0"),
    (GOOD.replace("ndcg,10,0.2891", "ndcg,ten,0.2891"), "cutoff", "integers >= 1"),
    (GOOD.replace("ndcg,10,0.2891", "ndcg,0,0.2891"), "cutoff", "integers >= 1"),
    (GOOD.replace("0.2891", "high"), "value", "finite numbers"),
    (GOOD.replace("0.2891", "inf"), "value", "finite numbers"),
    (GOOD.replace("0.2891", ""), "value", "finite numbers"),
    (GOOD.replace("bpr,1,0,17,ndcg", "bpr,1,0,,ndcg"), "user", "empty value"),
    (GOOD + "bpr,1,0,23,ndcg,10,0.5\n", None,
     "line 5 and line 6 are the same row, algorithm=bpr, config_id=1, fold=0, user=23, "
     "metric=ndcg, cutoff=10: one value per configuration, fold, user and metric@N"),
    # without a fold column: no fold named that the file lacks, and why the rows clash
    ("config_id,user,metric,value\n0,1,ndcg@5,0.5\n1,1,ndcg@5,0.4\n0,1,ndcg@5,0.3\n", None,
     "line 2 and line 4 are the same row, config_id=0, user=1, metric=ndcg, cutoff=5: one value "
     "per configuration, fold, user and metric@N (without a fold column the table is one fold)"),
    ("config_id,user,metric,value\n0,1,ndcg,0.5\n1,1,ndcg,0.4\n", "metric", "name@N"),
    ("config_id,user,metric,value\n0,1,ndcg@x,0.5\n1,1,ndcg@x,0.4\n", "metric", "positive integer"),
    ("config_id,user,metric,cutoff,value\n0,1,ndcg,10,0.5\n0,2,ndcg,10,0.4\n", "config_id",
     "no algorithm has two configurations"),
    ("config_id,user,metric,cutoff,value\n", None, "no rows"),
    (GOOD.replace("bpr,1,0,17,ndcg,10", "bpr,1,0,17,ndcg@10,10"), "metric",
     "line 3 has 'ndcg@10', a cutoff written into the name while the cutoff column gives one"),
    (GOOD + "bpr,0,0,17,NDCG,10,0.5\n", None, "line 2 and line 6 are the same row"),  # NDCG
    (GOOD + "bpr,0,0,17,recall,10,0.5\n", "config_id",
     "config_id 1 has no value of recall@10 on fold 0, which the other configurations have"),
    (GOOD + "bpr,0,1,17,ndcg,10,0.5\nbpr,1,1,17,ndcg,10,0.5\nbpr,0,1,17,ndcg,5,0.5\n"
     "bpr,1,1,17,ndcg,5,0.5\n", "fold", "fold 0 has no value of ndcg@5, which fold 1 has"),
    # the test split may hold some configurations (a sweep's does), not a validation fold
    (GOOD + "bpr,0,test,17,ndcg,10,0.5\n", None, None),
    (GOOD + "bpr,2,test,17,ndcg,10,0.5\n", "config_id",
     "config_id 2 has no value of ndcg@10 on fold 0, which the other configurations have"),
    (GOOD.replace("0.2891", "1e39"), "value", "line 3 has 1e+39, beyond the 32-bit floats"),
    (GOOD.replace("0.2891", "-1e300"), "value", "line 3 has -1e+300, beyond the 32-bit floats"),
    # a value outside its metric's range is another quantity under the metric's name
    (GOOD.replace("0.2891", "-0.5"), "value",
     "line 3 has -0.5 for ndcg, whose per-user values lie in [0, 1]: a value outside is another "
     "quantity under the metric's name (name it otherwise, e.g. ndcg_diff, to analyse it as an "
     "outside metric)"),
    (GOOD.replace("ndcg", "Precision").replace("0.1934", "3.5"), "value",
     "line 5 has 3.5 for precision, whose per-user values lie in [0, 1]"),
    (GOOD.replace("ndcg", "efd").replace("0.0", "-0.25"), "value",
     "line 4 has -0.25 for efd, whose per-user values are >= 0"),
    (GOOD.replace("ndcg", "efd").replace("0.2891", "7.5"), None, None),  # EFD has no top
    (GOOD.replace("0.2891", "1.0000001").replace("0.0", "-1e-9"), None, None),  # rounding
    (GOOD.replace("ndcg", "hr").replace("0.2891", "-3"), None, None),  # an outside metric
    ("config_id,user,metric,value\n0,1,@10,0.5\n1,1,@10,0.4\n", "metric",
     "line 2 has '@10', which has no metric name"),
    ("config_id,user,metric,value\n0,1,ndcg@10,0.5\n1,1,ndcg@10@5,0.4\n", "metric",
     "line 3 has 'ndcg@10@5', more than one @"),
    ("config_id,user,metric,value\n0,1,ndcg@10,0.5\n1,1,ndcg@1e30,0.4\n", "metric",
     "positive integer; line 3 has 'ndcg@1e30'"),
])
def test_bad_per_user_file_is_one_line(tmp_path: Path, text: str, field: str | None,
                                       words: str | None) -> None:
    path = _write(tmp_path, text)
    if words is None:
        assert len(read_per_user(path)) == text.count("\n") - 1
        return
    with pytest.raises(DptuneError) as ex:
        read_per_user(path)
    msg = str(ex.value)
    assert "\n" not in msg and msg.startswith(str(path)) and words in msg
    if field:
        assert msg.startswith(f"{path}: {field}: ")


@pytest.mark.parametrize(("text", "shown"), [
    (GOOD.replace("0.2891", ""), "line 3 has no value (an empty cell, or NA)"),
    (GOOD.replace("0.2891", "NA"), "line 3 has no value (an empty cell, or NA)"),
    (GOOD.replace("0.2891", "inf"), "line 3 has inf"),
    (GOOD.replace("0.2891", "high"), "line 3 has 'high'"),
    (GOOD.replace("bpr,1,0,17", "bpr,1.5,0,17"), "line 3 has 1.5"),
])
def test_bad_value_is_shown_as_written(tmp_path: Path, text: str, shown: str) -> None:
    """A bad cell is shown as the user wrote it (``nan``), never as ``np.float64(nan)``."""
    with pytest.raises(DptuneError) as ex:
        read_per_user(_write(tmp_path, text))
    assert str(ex.value).endswith(shown) and "np." not in str(ex.value)


def test_unreadable_and_unknown_format(tmp_path: Path) -> None:
    for path, words in [(tmp_path / "none.csv", "not found"),
                        (_write(tmp_path, GOOD, "per_user.json"), "unknown format"),
                        (_write(tmp_path, "not parquet", "bad.parquet"), "cannot read")]:
        with pytest.raises(DptuneError, match=words) as ex:
            read_per_user(path)
        assert str(ex.value).startswith(str(path)) and "\n" not in str(ex.value)


def test_metric_names_are_the_vocabularys_whatever_their_case() -> None:
    """nDCG, NDCG and ' ndcg ' are the vocabulary's ndcg (and so in the accuracy family, never
    ranked against a novelty metric as an outside metric would be); an outside name is kept
    as written, blanks stripped."""
    table = pd.DataFrame({"system": ["a", "b"] * 4, "user": [1, 1, 2, 2] * 2,
                          "metric": ["nDCG@10"] * 4 + [" EPC @10"] * 4, "value": 0.5})
    table = pd.concat([table, table.iloc[:4].assign(metric="My Metric @10")])
    df = check_per_user(table)
    assert sorted(df["metric"].unique()) == ["My Metric", "epc", "ndcg"]


def test_a_column_twice_in_a_table_is_one_line() -> None:
    table = pd.DataFrame({"system": ["a", "b"], "user": 1, "metric": "ndcg@10", "value": 0.5})
    with pytest.raises(DptuneError, match=r"^per_user: value: duplicated column"):
        check_per_user(pd.concat([table, table[["value"]]], axis=1))


def test_a_time_is_no_metric_value() -> None:
    table = pd.DataFrame({"system": ["a", "b"], "user": 1, "metric": "ndcg@10",
                          "value": pd.Timestamp("2020-01-01")})
    with pytest.raises(DptuneError, match=r"^per_user: value: must hold numbers, not datetime"):
        check_per_user(table)


def test_configs_file(tmp_path: Path) -> None:
    per_user = read_per_user(_write(tmp_path, GOOD))
    cfg = read_per_user_configs(_write(tmp_path, CONFIGS, "configs.csv"), per_user)
    assert cfg.to_dict("list") == {"algorithm": ["bpr", "bpr"], "config_id": [0, 1],
                                   "factors": [10, 20]}  # config 2 is not in the per-user file


def test_a_hyperparameter_of_another_algorithm_is_empty(tmp_path: Path) -> None:
    """A store's configs.csv leaves a column empty for the algorithms without that
    hyperparameter, and a configuration the per-user file lacks may miss a value: both are
    read; only a configuration of the per-user file without a value its algorithm uses is
    refused (test_bad_configs_file_is_one_line)."""
    knn = GOOD.replace("bpr,", "knn,").split("\n", 1)[1]
    per_user = read_per_user(_write(tmp_path, GOOD + knn))
    text = ("algorithm,config_id,factors,k\nbpr,0,10,\nbpr,1,20,\nbpr,2,,\n"
            "knn,0,,5\nknn,1,,10\n")
    cfg = read_per_user_configs(_write(tmp_path, text, "configs.csv"), per_user)
    assert cfg["factors"].tolist()[:2] == [10, 20] and cfg["k"].tolist()[2:] == [5, 10]


@pytest.mark.parametrize(("text", "field", "words"), [
    (CONFIGS.replace("config_id", "id"), "config_id", "missing column"),
    ("algorithm,config_id,factors,lr\nbpr,0,10,0.1\nbpr,1,20,\n", "lr",
     "line 3 has no value (configuration bpr/1), while other configurations of bpr have one"),
    ("algorithm,config_id,factors,lr\nbpr,0,10,NA\nbpr,1,20,0.1\n", "lr", "line 2 has no value"),
    (CONFIGS.replace("factors", "value"), "value", "reserved column name"),
    (CONFIGS.replace("factors", "fold"), "fold", "reserved column name"),
    (CONFIGS.replace("algorithm,", "").replace("bpr,", ""), "algorithm", "missing column"),
    ("algorithm,config_id\nbpr,0\nbpr,1\n", None, "no hyperparameter column"),
    (CONFIGS + "bpr,1,30\n", "config_id", "duplicated configuration bpr/1"),
    ("algorithm,config_id,factors\nbpr,0,10\n", "config_id", "no row for configuration bpr/1"),
    (CONFIGS.replace("bpr,1,20", "bpr,x,20"), "config_id", "integers >= 0"),
    # the importance's float32 forest failed on these after the whole analysis, with a traceback
    (CONFIGS.replace("bpr,1,20", "bpr,1,inf"), "factors", "line 3 has the value inf "
     "(configuration bpr/1): a hyperparameter's number must be finite"),
    (CONFIGS.replace("bpr,0,10", "bpr,0,-inf"), "factors", "line 2 has the value -inf"),
    (CONFIGS.replace("bpr,1,20", "bpr,1,1e39"), "factors", "line 3 has the value 1e+39"),
])
def test_bad_configs_file_is_one_line(tmp_path: Path, text: str, field: str | None,
                                      words: str) -> None:
    per_user = read_per_user(_write(tmp_path, GOOD))
    path = _write(tmp_path, text, "configs.csv")
    with pytest.raises(DptuneError) as ex:
        read_per_user_configs(path, per_user)
    msg = str(ex.value)
    assert "\n" not in msg and words in msg
    assert msg.startswith(f"{path}: {field}: " if field else f"{path}: ")


def test_a_table_of_the_test_split_only_names_the_file_and_column(tmp_path: Path) -> None:
    """Every row in fold test: the analysis said "store: runs: folds: no validation folds",
    naming neither the file nor the column."""
    path = _write(tmp_path, GOOD.replace(",0,17,", ",test,17,").replace(",0,23,", ",test,23,"))
    with pytest.raises(DptuneError) as err:
        read_per_user(path)
    assert str(err.value).startswith(f"{path}: fold: every row is of the test split"), err.value


@pytest.mark.parametrize(("text", "where"), [
    (GOOD.replace("0.2891", "high"), "line 3 has 'high'"),
    (GOOD.replace("bpr,1,0,17,ndcg", "bpr,1,0,,ndcg"), "empty value in line 3"),
    (GOOD.replace("bpr,1,0,17", "bpr,1.5,0,17"), "config_id: must hold integers >= 0; line 3 has"),
])
def test_bad_value_names_the_file_line(tmp_path: Path, text: str, where: str) -> None:
    """The 1-based line an editor shows (the header is line 1), not a 0-based row."""
    with pytest.raises(DptuneError) as err:
        read_per_user(_write(tmp_path, text))
    assert where in str(err.value)


def test_a_folder_of_no_parquet_parts_is_named_a_directory(tmp_path: Path) -> None:
    """``--configs DIR`` (an empty folder, or one of CSV files) was read as Parquet parts of
    no column and refused as missing its ``config_id`` column; now the line says what it is,
    and a store's ``per_user.parquet`` directory still reads."""
    per_user = read_per_user(_write(tmp_path, GOOD))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DptuneError) as ex:
        read_per_user_configs(tmp_path / "empty", per_user)
    assert str(ex.value) == (f"{tmp_path / 'empty'}: is a directory holding no Parquet parts; "
                             "give the configurations file (.csv, .tsv, each maybe .gz, "
                             ".parquet) or a directory of its Parquet parts")
    (tmp_path / "texts").mkdir()
    _write(tmp_path / "texts", CONFIGS, "configs.csv")
    with pytest.raises(DptuneError, match=r"texts: is a directory, read as the Parquet parts of "
                       r"a configurations file, and cannot be: ") as ex:
        read_per_user_configs(tmp_path / "texts", per_user)
    assert "\n" not in str(ex.value)
    (tmp_path / "parts").mkdir()
    pd.read_csv(tmp_path / "per_user.csv").to_parquet(tmp_path / "parts" / "part-0.parquet")
    assert len(read_per_user(tmp_path / "parts")) == 4


@pytest.mark.parametrize("name", ["per_user.csv", "per_user.csv.gz"])
def test_a_byte_that_is_not_utf8_names_its_line(tmp_path: Path, name: str) -> None:
    """A Latin-1 byte in line 4 was refused with pandas's position in its read block
    ("position 1"), no line; now the line and the byte's offset in the (decompressed) text."""
    import gzip

    raw = GOOD.replace("bpr,0,0,23", "bpr\xe9,0,0,23").encode("latin-1")
    path = tmp_path / name
    path.write_bytes(gzip.compress(raw) if name.endswith(".gz") else raw)
    offset = raw.index(b"\xe9")
    of = " of the decompressed text" if name.endswith(".gz") else ""
    with pytest.raises(DptuneError) as ex:
        read_per_user(path)
    assert str(ex.value) == (f"{path}: line 4: not UTF-8 text (byte 0xe9 at byte offset "
                             f"{offset}{of}); save the per-user file as UTF-8")
