"""Own data files: column mapping, separator, header, implicit feedback, no timestamps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from data.own_data_helpers import one_line_error

from dptune.cli import main
from dptune.config import parse_experiment
from dptune.data import load_dataset, parse_columns, read_ratings, split_holdout
from dptune.errors import DptuneError

ROOT = Path(__file__).resolve().parents[2]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_other_column_names_no_ratings_no_timestamps(tmp_path):
    path = write(tmp_path / "clicks.csv", "customer;product\nc1;p1\nc1;p2\nc2;p1\nc1;p1\nc3;p3\n")
    raw = read_ratings(path, columns={"user": "customer", "item": "product"}, sep=";")
    assert raw.attrs == {"implicit": True, "timestamps": False}
    assert raw["rating"].tolist() == [1.0] * 5
    assert raw["timestamp"].tolist() == [0, 1, 2, 3, 4]  # the file order stands in for time
    ds = load_dataset(path, columns={"user": "customer", "item": "product"}, sep="semicolon")
    assert ds.implicit and not ds.timestamps
    assert (ds.n_users, ds.n_items, len(ds.ratings)) == (3, 3, 4)  # (c1, p1) twice: kept once
    log = " | ".join(ds.log)
    assert "implicit feedback" in log and "no timestamp column" in log
    assert "keeping the last in file order" in log


def test_mapping_keeps_ratings_and_timestamps_when_present(tmp_path):
    path = write(tmp_path / "r.csv", "user_id,item_id,stars,when\n1,2,4.5,100\n2,2,3,50\n")
    ds = load_dataset(path, columns={"user": "user_id", "item": "item_id", "rating": "stars",
                                     "timestamp": "when"})
    assert not ds.implicit and ds.timestamps
    assert sorted(ds.ratings["rating"].tolist()) == [3.0, 4.5]
    # a mapping without timestamp: ratings read by their default name, no time column
    ds2 = load_dataset(write(tmp_path / "s.csv", "u,i,rating\n1,2,4\n2,3,5\n"),
                       columns={"user": "u", "item": "i"})
    assert not ds2.implicit and not ds2.timestamps


def test_headerless_files_by_position(tmp_path):
    three = write(tmp_path / "three.tsv", "1\t10\t4\n1\t11\t2\n2\t10\t5\n")
    raw = read_ratings(three, header=False)
    assert raw["rating"].tolist() == [4.0, 2.0, 5.0] and raw.attrs["timestamps"] is False
    two = write(tmp_path / "two.txt", "7 8\n7 9\n")
    raw = read_ratings(two, header=False, sep="space")
    assert raw["user"].tolist() == [7, 7] and raw.attrs["implicit"]
    raw = read_ratings(three, header=False, columns={"item": 0, "user": 1})
    assert raw["user"].tolist() == [10, 11, 10] and raw.attrs["implicit"]


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"columns": ["user"]}, "columns"),
        ({"columns": {"usr": "a"}}, "columns.usr"),
        ({"columns": {"user": 3.5}}, "columns.user"),
        ({"columns": {"user": ""}}, "columns.user"),
        ({"columns": {"user": "a", "item": "a"}}, "columns.item"),
        ({"columns": {"user": "nope", "item": "b"}}, "columns.user"),
        ({"columns": {"user": 7, "item": 1}}, "columns.user"),
        ({"header": "yes"}, "header"),
        ({"header": False, "columns": {"user": "a", "item": "b"}}, "columns.user"),
        ({"header": False, "columns": {"user": 0, "item": 9}}, "columns.item"),
        ({"header": False, "columns": {"item": 1}}, "columns.user"),
        ({"header": False, "fmt": "ml-dat"}, "header"),
        ({"sep": ";;"}, "sep"),
        ({"sep": "\n"}, "sep"),
        ({"sep": 5}, "sep"),
    ],
)
def test_every_bad_option_is_one_line_naming_file_and_field(tmp_path, kwargs, field):
    path = write(tmp_path / "own.csv", "a,b,c\n1,2,3\n4,5,6\n")
    msg = one_line_error(f"own.csv: {field}: ", read_ratings, path, **kwargs)
    assert msg.startswith("dptune: ") or "own.csv" in msg


def test_named_data_sets_refuse_file_options_and_implicit_refuses_min_rating(tmp_path):
    one_line_error("ml-latest-small: columns: applies to your own files", load_dataset,
                   "ml-latest-small", columns={"user": "u"})
    one_line_error("ml-latest-small: sep: ", load_dataset, "ml-latest-small", sep=";")
    path = write(tmp_path / "c.csv", "u,i\n1,2\n")
    one_line_error("c.csv: min_rating: the data has no ratings", load_dataset, path,
                   columns={"user": "u", "item": "i"}, min_rating=4)
    one_line_error("c.csv: header: applies to csv files, not parquet", read_ratings,
                   path, fmt="parquet", header=True)


def test_missing_rating_without_mapping_says_how_to_read_implicit_feedback(tmp_path):
    path = write(tmp_path / "p.csv", "user,item,timestamp\n1,2,3\n")
    msg = one_line_error("p.csv: rating: missing column 'rating'", read_ratings, path)
    assert "without it" in msg


@pytest.mark.parametrize("header", ["user_id,item_id,rating,timestamp",
                                    "userId,movieId,rating,timestamp",
                                    "userId,movieId,rating", "USER_ID,Item_Id"])
def test_other_tools_headers_need_no_mapping(tmp_path, header):
    """LensKit/RecBole (user_id, item_id) and MovieLens CSV (userId, movieId) headers."""
    n = len(header.split(","))
    path = write(tmp_path / "o.csv", header + "\n" + "\n".join(
        ",".join(["7", "9", "4", "100"][:n]) for _ in range(1)) + "\n")
    if n < 4:  # without timestamps: read with a mapping of the columns it has
        msg = one_line_error("o.csv: ", read_ratings, path)
        assert "columns = { user = " in msg and "{'" not in msg  # TOML, not Python
        return
    got = read_ratings(path)
    assert got[["user", "item", "rating", "timestamp"]].values.tolist() == [[7, 9, 4.0, 100]]


def test_missing_column_hint_is_toml_for_the_experiment_file(tmp_path):
    path = write(tmp_path / "p.csv", "customer,product,stars,when\n1,2,3,4\n")
    msg = one_line_error("p.csv: user: missing column 'user'", read_ratings, path)
    assert msg.endswith("name it in the experiment's [data] table: "
                        'columns = { user = "<column>", item = "<column>" }')
    path = write(tmp_path / "q.csv", "user_id,movieId,rating\n1,2,3\n")
    msg = one_line_error("q.csv: timestamp: missing column 'timestamp'", read_ratings, path)
    assert msg.endswith('(columns = { user = "user_id", item = "movieId", rating = "rating" })')


def test_parse_columns_flag():
    assert parse_columns("user=u, item=i,rating=2") == {"user": "u", "item": "i", "rating": 2}
    for bad in ("user", "user=", "user=a,user=b", ""):
        with pytest.raises(DptuneError, match="--columns"):
            parse_columns(bad)


def test_cli_data_info_own_file(tmp_path, capsys):
    path = write(tmp_path / "own.csv", "uid|iid\n1|10\n1|11\n2|10\n")
    assert main(["data", "info", str(path), "--columns", "user=uid,item=iid", "--sep", "|"]) == 0
    out = capsys.readouterr().out
    assert "| own | 2 | 2 | 3 | 25.00% |" in out and "implicit feedback" in out
    assert main(["data", "info", str(path), "--columns", "user=uid,itm=iid", "--sep", "|"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "own.csv" in err and "columns.itm" in err
    assert main(["data", "info", str(path), "--columns", "user"]) == 2
    assert "--columns" in capsys.readouterr().err
    headerless = write(tmp_path / "h.csv", "1,10\n2,11\n")
    assert main(["data", "info", str(headerless), "--no-header"]) == 0
    assert "| h | 2 | 2 | 2 |" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# [data] in an experiment file


def experiment(data: dict, split: dict | None = None) -> dict:
    return {"name": "own", "data": data, "split": split or {},
            "algorithms": [{"name": "pop", "type": "cornac:MostPop"}]}


def test_experiment_data_options_parse_and_keep_old_fingerprints():
    exp = parse_experiment(experiment({"source": "x.csv", "columns": {"user": "u", "item": "i"},
                                       "sep": ";", "header": True}), "own.toml")
    assert exp.data.reader_options() == {"columns": {"user": "u", "item": "i"}, "sep": ";",
                                         "header": True}
    assert exp.to_dict()["data"]["columns"] == {"user": "u", "item": "i"}
    plain = parse_experiment(experiment({"source": "x.csv"}), "own.toml")
    assert set(plain.to_dict()["data"]) == {"source", "format", "min_rating", "kcore"}
    assert plain.fingerprint() != exp.fingerprint()
    assert exp.grids["pop"].configs() == [{}]  # no grid: one configuration, no hyperparameter


@pytest.mark.parametrize(
    "data, field",
    [
        ({"columns": "user"}, "data.columns"),
        ({"columns": {}}, "data.columns"),
        ({"columns": {"usr": "u"}}, "data.columns.usr"),
        ({"columns": {"user": True}}, "data.columns.user"),
        ({"header": "no"}, "data.header"),
        ({"header": False, "columns": {"user": "u"}}, "data.columns.user"),
        ({"sep": "::"}, "data.sep"),
        ({"min_rating": "4"}, "data.min_rating"),
        ({"colums": {}}, "data.colums"),
    ],
)
def test_experiment_bad_data_options(data, field):
    one_line_error(f"own.toml: {field}: ", parse_experiment,
                   experiment({"source": "x.csv", **data}), "own.toml")


def test_experiment_bad_algorithm_type():
    bad = experiment({})
    bad["algorithms"] = [{"name": "x", "type": "sklearn:Foo"}]
    one_line_error(r"own.toml: algorithms\[0\].type: 'sklearn:Foo' is not", parse_experiment,
                   bad, "own.toml")


# ---------------------------------------------------------------------------------------------
# splits without timestamps


def test_time_ordered_splits_need_timestamps(tmp_path):
    path = write(tmp_path / "c.csv", "u,i\n" + "".join(f"{u},{i}\n" for u in range(4)
                                                        for i in range(6)))
    ds = load_dataset(path, columns={"user": "u", "item": "i"})
    for method in ("temporal", "leave-one-out"):
        one_line_error(f"own.toml: split.method: '{method}' orders each user's ratings by time",
                       split_holdout, ds.ratings, method, timestamps=ds.timestamps,
                       source="own.toml")
    one_line_error("own.toml: split.fold_method: 'user_temporal' needs timestamps",
                   split_holdout, ds.ratings, "random", timestamps=False,
                   fold_method="user_temporal", source="own.toml")
    one_line_error("own.toml: split.method: unknown method", split_holdout, ds.ratings, "k-fold",
                   source="own.toml")
    held = split_holdout(ds.ratings, "random", 0.5, seed=1, min_user_interactions=2,
                         timestamps=False)
    assert len(held.train) == len(held.test) == 12
    loo = split_holdout(ds.ratings, "leave-one-out-random", seed=1, min_user_interactions=2,
                        timestamps=False)
    assert np.array_equal(np.sort(loo.test["user"].to_numpy()), np.arange(4))


@pytest.mark.parametrize("line, field", [('columns = { user = "u", itm = "i" }', "data.columns.itm"),
                                         ('sep = ";;"', "data.sep"),
                                         ('header = "no"', "data.header")])
def test_dptune_run_bad_data_option_is_one_line_exit_2(tmp_path, capsys, line, field):
    cfg = tmp_path / "own.toml"
    cfg.write_text(f'name = "own"\n[data]\nsource = "x.csv"\n{line}\n[[algorithms]]\n'
                   'name = "pop"\ntype = "cornac:MostPop"\n')
    assert main(["run", str(cfg), "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "own.toml" in err and field in err
