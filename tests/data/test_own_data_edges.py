"""Own data files at the edges: fractional times, quoted fields, blank lines, repeated header
names, ids beyond int64 or with blanks around them, and wrong arguments of the front functions.

Each test reads what the file says, or refuses it with one line naming the file, line and field.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from data.own_data_helpers import one_line_error

from dptune.cli import main
from dptune.data import (
    dataset_stats,
    kcore_filter,
    load_dataset,
    read_ratings,
    temporal_holdout,
)


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode())
    return path


# ---------------------------------------------------------------------------------------------
# Timestamps


def test_fractional_times_of_one_user_keep_their_order(tmp_path):
    # 10.7 is later than 10.2 but comes first in the file: truncated, both were 10 and the file
    # order made "early" the user's latest rating (held out, and the duplicate kept)
    path = write(tmp_path / "f.csv", "user,item,rating,timestamp\n"
                 "1,late,4,10.7\n1,early,3,10.2\n1,a,3,1\n1,b,3,2\n1,c,3,3\n"
                 "1,dup,5,20.9\n1,dup,1,20.1\n")
    ds = load_dataset(path)
    items = ds.item_ids[ds.ratings["item"].to_numpy()].tolist()
    assert items == ["a", "b", "c", "early", "late", "dup"]
    assert ds.ratings["rating"].tolist()[-1] == 5.0  # the 20.9 duplicate, the latest
    held = temporal_holdout(ds.ratings, 0.8, 1)
    assert ds.item_ids[held.test["item"].to_numpy()].tolist() == ["late", "dup"]
    assert ds.item_ids[held.train["item"].to_numpy()].tolist()[-1] == "early"
    assert any("replaced by its rank" in line for line in ds.log)


def test_fractional_times_that_do_not_tie_are_truncated_as_before(tmp_path):
    path = write(tmp_path / "f.csv", "user,item,rating,timestamp\n1,x,4,10.7\n2,y,3,10.2\n"
                 "1,z,3,11.5\n")
    raw = read_ratings(path)
    assert raw["timestamp"].tolist() == [10, 10, 11]  # two users: no tie within one
    assert "time_ranks" not in raw.attrs


def test_a_timestamp_beyond_int64_is_refused_not_wrapped(tmp_path):
    # read as an unsigned 64-bit column, it wrapped to -8446744073709551616, the earliest time
    path = write(tmp_path / "u.csv", "user,item,rating,timestamp\n1,y,3,1\n"
                 "1,x,4,10000000000000000000\n")
    msg = one_line_error("out of range", read_ratings, path)
    assert "u.csv: timestamp: line 3: 10000000000000000000" in msg


# ---------------------------------------------------------------------------------------------
# Ids


def test_a_parquet_id_beyond_int64_is_text_not_a_negative_number(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "big.parquet"
    pd.DataFrame({"user": np.array([2**63 + 5, 1], dtype=np.uint64), "item": [1, 2],
                  "rating": [1.0, 2.0], "timestamp": [1, 2]}).to_parquet(path)
    raw = read_ratings(path)
    assert raw["user"].tolist() == [str(2**63 + 5), "1"]  # as a text file's 19-digit id


def test_a_float_id_is_shown_as_written(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "f.parquet"
    pd.DataFrame({"user": [1.0, 2.5], "item": [1, 2], "rating": [1.0, 2.0],
                  "timestamp": [1, 2]}).to_parquet(path)
    msg = one_line_error("not a non-negative integer", read_ratings, path)
    assert "user: row 2: id 2.5 " in msg and "np." not in msg


def test_ids_differing_only_by_blanks_around_them_are_refused(tmp_path):
    path = write(tmp_path / "b.csv", "user,item,rating,timestamp\n a,x,4,1\nb,y,3,2\na,y,3,3\n")
    msg = one_line_error("differ only by blanks", read_ratings, path)
    assert msg.startswith(f"{path}: user: line 4: id 'a' and the id ' a' of line 2")
    # blanks after every separator, written the same way each time: read without them
    same = write(tmp_path / "s.csv", "user, item, rating, timestamp\n1, x, 4, 1\n1, y, 3, 2\n")
    assert read_ratings(same)["item"].tolist() == ["x", "y"]


# ---------------------------------------------------------------------------------------------
# Lines, quotes and the header


@pytest.mark.parametrize("extra", ["9", "9,10"])
def test_a_quoted_file_with_more_fields_than_the_header_is_refused(tmp_path, extra):
    # a quote anywhere in the file used to skip the field count: the extra fields were dropped
    path = write(tmp_path / "q.csv", f'user,item,rating,timestamp\n1,x,4,1\n"2",y,3,4,{extra}\n')
    msg = one_line_error("expected 4 fields", read_ratings, path)
    assert msg.startswith(f"{path}: line 3:") and f"found {4 + len(extra.split(','))}" in msg


def test_a_quoted_file_with_fewer_fields_names_the_line_and_count(tmp_path):
    path = write(tmp_path / "q.csv", 'user,item,rating,timestamp\n"1",x,4,1\n2,y,3\n')
    msg = one_line_error("expected 4 fields", read_ratings, path)
    assert msg.startswith(f"{path}: line 3:") and "found 3" in msg


def test_quoted_line_breaks_and_blank_lines_keep_the_editor_line(tmp_path):
    text = ('\n\nuser,item,rating,timestamp\n"a\nb",x,4,1\n\n  \nc,"y,z",3,2\n'
            "d,w,bad,3\n")
    msg = one_line_error("not a finite number", read_ratings, write(tmp_path / "m.csv", text))
    assert "rating: line 9: 'bad'" in msg
    good = write(tmp_path / "g.csv", text.replace("bad", "2"))
    assert read_ratings(good)["user"].tolist() == ["a\nb", "c", "d"]


def test_a_quote_left_open_names_where_it_starts(tmp_path):
    path = write(tmp_path / "o.csv", 'user,item,rating,timestamp\n"a,x,4,1\nc,y,3,2\nd,w,2,3\n')
    msg = one_line_error("expected 4 fields", read_ratings, path)
    assert msg.startswith(f"{path}: line 2:") and "runs on to line 4" in msg


@pytest.mark.parametrize("quote", ["", '"'])
@pytest.mark.parametrize("blank", ["   ", " \t ", "\t"])
def test_lines_of_blanks_are_blank_lines(tmp_path, quote, blank):
    # pandas skips them; the field count called a trailing line of spaces a bad line
    text = f"user,item,rating,timestamp\n{quote}1{quote},x,4,1\n{blank}\n2,y,3,2\n{blank}\n"
    raw = read_ratings(write(tmp_path / "w.csv", text))
    assert raw["user"].tolist() == [1, 2]
    bad = write(tmp_path / "bad.csv", text.replace("2,y,3,2", "2,y,x,2"))
    assert "rating: line 4:" in one_line_error("not a finite", read_ratings, bad)


def test_a_line_of_blanks_with_a_blank_separator_is_still_counted(tmp_path):
    path = write(tmp_path / "t.tsv", "user\titem\trating\ttimestamp\n1\tx\t4\t1\n\t\t\n")
    assert "line 3:" in one_line_error("expected 4 fields", read_ratings, path)


@pytest.mark.parametrize("quote", ["", '"'])
def test_a_header_naming_a_read_column_twice_is_refused(tmp_path, quote):
    path = write(tmp_path / "d.csv", f"user,item,{quote}user{quote},rating,timestamp\n"
                 "1,x,2,4,1\n1,y,3,3,2\n")
    msg = one_line_error("2 times", read_ratings, path)
    assert msg.startswith(f"{path}: line 1: the header names 'user' (read as user)")
    assert "fields 1 and 3" in msg
    # a repeated column that is not read is no ambiguity
    other = write(tmp_path / "o.csv", "user,item,note,note,rating,timestamp\n1,x,a,b,4,1\n")
    assert read_ratings(other)["item"].tolist() == ["x"]


def test_ml_dat_triple_colon_is_refused(tmp_path):
    path = write(tmp_path / "r.dat", "1::10::4::100\n1:::10::4::100\n")
    assert one_line_error("':::'", read_ratings, path).startswith(f"{path}: line 2:")


def test_cli_data_info_refuses_extra_quoted_fields_with_exit_2(tmp_path, capsys):
    path = write(tmp_path / "q.csv", 'user,item,rating,timestamp\n"1",x,4,1\n2,y,3,2,5\n')
    assert main(["data", "info", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = captured.err.strip()
    assert err.count("\n") == 0 and "q.csv: line 3:" in err and "found 5" in err


# ---------------------------------------------------------------------------------------------
# Front functions


def test_front_functions_name_a_wrong_argument(tmp_path):
    msg = one_line_error("read_ratings: path: needs the path", read_ratings, None)
    assert "NoneType" in msg
    assert "int" in one_line_error("load_dataset: source: needs", load_dataset, 3)
    one_line_error("kcore_filter: ratings: expected a DataFrame", kcore_filter, [1, 2], 2)
    one_line_error("kcore_filter: ratings: missing column 'user'", kcore_filter,
                   pd.DataFrame({"u": [1]}), 2)
    one_line_error("dataset_stats: ds: expected a Dataset", dataset_stats, None)
