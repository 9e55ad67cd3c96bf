"""Synthetic data sets: exact shape, determinism, power-law skew, the file round trip, bad options."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dptune.cli import main
from dptune.data import load_dataset
from dptune.data._synth import PRESETS, SynthShape, _degrees, synthesize, write_synthetic
from dptune.errors import DptuneError

SMALL = SynthShape(users=300, items=2000, ratings=12_000)


def _shape_ok(df: pd.DataFrame, shape: SynthShape) -> None:
    assert len(df) == shape.ratings
    assert df["user"].nunique() == shape.users and df["item"].nunique() == shape.items
    assert sorted(df["user"].unique()) == list(range(1, shape.users + 1))
    assert sorted(df["item"].unique()) == list(range(1, shape.items + 1))
    assert not df.duplicated(["user", "item"]).any()
    assert df.groupby("user").size().min() >= shape.min_user_ratings
    assert set(df["rating"].unique()) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert df["timestamp"].between(shape.start, shape.end).all()


def test_exact_shape_sorted_by_user_and_time() -> None:
    df = synthesize(SMALL, seed=1)
    _shape_ok(df, SMALL)
    assert list(df.columns) == ["user", "item", "rating", "timestamp"]
    key = df["user"].to_numpy() * 2**40 + df["timestamp"].to_numpy()
    assert (np.diff(key) >= 0).all()


@settings(max_examples=25, deadline=None)
@given(users=st.integers(1, 60), items=st.integers(1, 80), fill=st.floats(0, 1),
       m=st.integers(1, 5), a=st.floats(0, 1.5), b=st.floats(0, 1.5), seed=st.integers(0, 99))
def test_exact_shape_property(users, items, fill, m, a, b, seed) -> None:
    """Any feasible shape comes out exact (sizes, distinct pairs, minimum per user)."""
    m = min(m, items)
    lo = max(users * m, items)
    hi = users * items
    ratings = lo + int(fill * (hi - lo) * 0.5)  # up to half the cells: the swaps converge fast
    shape = SynthShape(users=users, items=items, ratings=ratings, min_user_ratings=m,
                       popularity_exponent=a, activity_exponent=b)
    _shape_ok(synthesize(shape, seed), shape)


def test_deterministic_per_seed() -> None:
    a, b, c = synthesize(SMALL, 5), synthesize(SMALL, 5), synthesize(SMALL, 6)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_popularity_and_activity_are_power_law_like() -> None:
    """Rank-frequency of the items falls like r ** -a (log-log slope near -a in the body), the
    head holds far more than its share, and users are skewed too."""
    shape = SynthShape(users=2000, items=20_000, ratings=150_000, popularity_exponent=0.8)
    df = synthesize(shape, seed=0)
    counts = np.sort(df["item"].value_counts().to_numpy())[::-1]
    ranks = np.arange(1, len(counts) + 1)
    body = slice(9, 2000)  # off the minimum-degree floor of the tail
    slope = np.polyfit(np.log(ranks[body]), np.log(counts[body]), 1)[0]
    assert -0.95 < slope < -0.65
    assert counts[: len(counts) // 100].sum() > 0.15 * len(df)  # top 1% of items: > 15%
    users = np.sort(df["user"].value_counts().to_numpy())[::-1]
    assert users[0] > 10 * np.median(users)
    flat = synthesize(dataclasses.replace(shape, popularity_exponent=0.0), seed=0)
    assert flat["item"].value_counts().max() <= 2 + shape.ratings // shape.items


def test_degrees_sum_exactly_and_respect_the_cap() -> None:
    rng = np.random.default_rng(0)
    d = _degrees(100, 5000, 2.0, 3, 400, rng)
    assert d.sum() == 5000 and d.min() >= 3 and d.max() == 400


def test_rating_distribution_follows_the_probabilities() -> None:
    shape = dataclasses.replace(SMALL, rating_probs=(0.0, 0.0, 0.0, 0.5, 0.5))
    df = synthesize(shape, seed=0)
    assert set(df["rating"].unique()) == {4.0, 5.0}
    assert abs((df["rating"] == 5.0).mean() - 0.5) < 0.03


def test_amazon_preset_has_table_1_sizes() -> None:
    p = PRESETS["amazon-movies"]
    assert (p.users, p.items, p.ratings) == (16_141, 111_537, 858_314)


@pytest.mark.slow
def test_amazon_preset_exact_after_loading(tmp_path) -> None:
    path = tmp_path / "amazon.csv.gz"
    write_synthetic(path, PRESETS["amazon-movies"], seed=0)
    ds = load_dataset(path)
    assert (ds.n_users, ds.n_items, len(ds.ratings)) == (16_141, 111_537, 858_314)


def test_cli_writes_a_file_load_dataset_reads(tmp_path, capsys) -> None:
    out = tmp_path / "s.csv"
    assert main(["data", "synth", "--users", "50", "--items", "300", "--ratings", "1500",
                 "--seed", "3", "--out", str(out)]) == 0
    assert "1,500 ratings, 50 users, 300 items" in capsys.readouterr().out
    assert out.read_text().splitlines()[0] == "userId,movieId,rating,timestamp"
    ds = load_dataset(out)
    assert (ds.n_users, ds.n_items, len(ds.ratings)) == (50, 300, 1500)
    assert ds.timestamps and not ds.implicit
    df = synthesize(SynthShape(users=50, items=300, ratings=1500), 3)
    assert np.array_equal(np.sort(ds.ratings["timestamp"]), np.sort(df["timestamp"]))


@pytest.mark.parametrize("argv, where", [
    (["--users", "0"], "--users"),
    (["--users", "10", "--items", "10", "--ratings", "20"], "--ratings"),
    (["--users", "10", "--items", "10", "--ratings", "101"], "--ratings"),
    (["--items", "3", "--min-user-ratings", "4"], "--min-user-ratings"),
    (["--rating-probs", "0.5,0.5"], "--rating-probs"),
    (["--rating-probs", "a,b,c,d,e"], "--rating-probs"),
    (["--popularity-exponent", "-1"], "--popularity-exponent"),
    (["--activity-exponent", "nan"], "--activity-exponent"),
    (["--activity-exponent", "400"], "--activity-exponent: must be at most 20"),  # a traceback
    (["--popularity-exponent", "400"], "--popularity-exponent: must be at most 20"),
    (["--preset", "movies"], "--preset"),
    (["--seed", "-1"], "--seed"),
])
def test_cli_bad_options_one_line_exit_2_nothing_written(tmp_path, capsys, argv, where) -> None:
    out = tmp_path / "s.csv"
    assert main(["data", "synth", "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and where in err, err
    assert not out.exists()


def test_bad_output_paths(tmp_path, capsys) -> None:
    assert main(["data", "synth", "--out", str(tmp_path / "s.txt")]) == 2
    assert "--out" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["data", "synth", "--out", str(blocker / "s.csv")]) == 2
    assert "--out" in capsys.readouterr().err
    with pytest.raises(DptuneError, match="synth: seed"):
        synthesize(SMALL, seed=-2)
