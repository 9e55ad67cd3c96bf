"""Outside data at scale: per-user tables and TREC runs are read and checked without Python
running per row, per column or per line (a table of millions of rows took seconds per such
step: a metric name looked up per row, a split at ``@`` per row, the algorithms listed by
iterating every row, a wide table's columns counted pairwise, a run file split line by line).

Each fast path is checked against the simple per-row rule it replaces (kept here as the
oracle), on small random inputs; and the count of Python calls a read makes is checked not to
grow with the rows (never the wall time, which depends on the machine).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dptune.errors import DptuneError
from dptune.store import _per_user_file as puf
from dptune.store import _trec
from dptune.store._frame import FrameStore
from dptune.store._per_user_file import check_per_user
from dptune.store._per_user_store import PerUserStore
from dptune.vocab import METRIC_RANGES, metric_name


def _calls(fn: Callable[[], object]) -> Counter:
    """How many times each Python function (``call``) and builtin (``c_call``) ran in ``fn``,
    by name: a count that grows with the rows is Python run per row."""
    seen: Counter = Counter()

    def profile(frame, event, arg):  # noqa: ANN001, ANN202
        if event == "call":
            seen[frame.f_code.co_name] += 1
        elif event == "c_call":
            seen[getattr(arg, "__name__", "?")] += 1

    sys.setprofile(profile)
    try:
        fn()
    except DptuneError:
        pass
    finally:
        sys.setprofile(None)
    return seen


def _table(n_users: int, *, system: bool = False, at: bool = False) -> pd.DataFrame:
    """A complete long table: 3 configurations x 2 folds x 2 metrics x 2 cutoffs x users."""
    idx = np.indices((3, 2, 2, 2, n_users)).reshape(5, -1)
    cfg = np.array(["sysA", "sysB", "sysC"], dtype=object)[idx[0]] if system else idx[0]
    metric = np.array(["nDCG", "Recall"], dtype=object)[idx[2]]
    cutoff = np.array([5, 10])[idx[3]]
    df = pd.DataFrame({"algorithm": "bpr", "system" if system else "config_id": cfg,
                       "fold": np.array(["0", "1"], dtype=object)[idx[1]],
                       "user": np.array([f"u{u}" for u in range(n_users)], dtype=object)[idx[4]],
                       "metric": metric, "cutoff": cutoff,
                       "value": np.random.default_rng(0).random(idx.shape[1])})
    if at:
        df["metric"] = df["metric"] + "@" + df["cutoff"].astype(str)
        df = df.drop(columns="cutoff")
    return df


# --------------------------------------------------------------------------------------------
# no Python per row
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("system", [False, True])
@pytest.mark.parametrize("at", [False, True])
def test_checking_and_holding_a_table_runs_no_python_per_row(system, at):
    """Ten times the rows, no Python call per row: the checks and the store work on whole
    columns (the per-row steps cost seconds per million rows each). A user has 24 rows here;
    a few calls per distinct user (the form of the ids, for the bootstrap's keys) may run."""
    def work(n):
        return _calls(lambda: PerUserStore.from_frame(_table(n, system=system, at=at)))

    small, big = work(40), work(400)  # 960 and 9,600 rows
    assert small["metric_name"] <= 4 and big["metric_name"] <= 4  # once per distinct name
    grown = {k: big[k] - small[k] for k in big if big[k] - small[k] > 20}
    assert sum(big.values()) - sum(small.values()) < 4 * 360 + 400, sorted(
        grown.items(), key=lambda kv: -kv[1])[:10]


def test_a_wide_table_is_refused_without_counting_its_columns_pairwise():
    """A wide table (a column per user) is refused as unknown columns; its column names were
    checked for repeats with a count per column (quadratic: 12 s for 20,000 columns)."""
    wide = pd.DataFrame(np.zeros((2, 3000)), columns=[f"u{i}" for i in range(3000)])
    seen = _calls(lambda: check_per_user(wide))
    assert seen["count"] < 10, seen["count"]
    with pytest.raises(DptuneError, match="u0: unknown column"):
        check_per_user(wide)
    twice = pd.DataFrame(np.zeros((1, 4)), columns=["user", "b", "a", "b"])
    with pytest.raises(DptuneError, match="b: duplicated column"):
        check_per_user(twice)


def test_a_run_file_is_split_without_python_per_line(tmp_path: Path):
    """Ten times the lines, about the same Python calls: a run file is split in one pass (a
    split per line took seconds per run of 600,000 lines)."""
    def work(n):
        path = tmp_path / f"run{n}"
        path.write_text("".join(f"q{i // 10} Q0 d{i} {i % 10 + 1} {1 - i / n:.6f} t\n"
                                for i in range(n)))
        return _calls(lambda: _trec.read_run(path))

    small, big = work(300), work(3000)
    assert big["split"] <= 2 and big["splitlines"] == 0
    assert sum(big.values()) - sum(small.values()) < 200


# --------------------------------------------------------------------------------------------
# the per-row rules as oracles
# --------------------------------------------------------------------------------------------


def _split_metric_rowwise(path, metric: pd.Series):
    """The per-row ``name@N`` split the distinct-value one replaced (the oracle)."""
    parts = metric.str.rsplit("@", n=1, expand=True)
    if parts.shape[1] != 2 or parts[1].isna().any():
        i = 0 if parts.shape[1] != 2 else int(np.argmax(parts[1].isna().to_numpy()))
        raise puf.input_error(path, "metric", "without a cutoff column every metric must be "
                              f"written name@N (e.g. ndcg@10); {puf._where(path, i)} has "
                              f"{puf._shown(metric.iloc[i])}")
    cut = puf._numbers(parts[1])
    with np.errstate(invalid="ignore"):
        bad = cut.isna() | (cut != np.floor(cut)) | (cut < 1) | (cut >= 2.0**62)
    if bad.any():
        i = int(np.argmax(bad.to_numpy()))
        raise puf.input_error(path, "metric", "the N of name@N must be a positive integer; "
                              f"{puf._where(path, i)} has {puf._shown(metric.iloc[i])}")
    twice = parts[0].str.contains("@", regex=False)
    if twice.any():
        i = int(np.argmax(twice.to_numpy()))
        raise puf.input_error(path, "metric", f"{puf._where(path, i)} has "
                              f"{puf._shown(metric.iloc[i])}, more than one @: write each "
                              "metric name@N (e.g. ndcg@10)")
    return parts[0], cut.astype(np.int64)


def _outcome(fn: Callable[[], object]) -> object:
    try:
        return fn()
    except DptuneError as err:
        return str(err)


_METRIC_TEXT = st.sampled_from(["ndcg@10", "NDCG@10", " nDCG @5", "recall@5", "hit@3", "@10",
                                "ndcg", "ndcg@x", "ndcg@0", "ndcg@2.5", "a@b@3", "map@1e1",
                                "efd@10", "mrr@ 7", "ndcg@-1"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_METRIC_TEXT, min_size=1, max_size=12), st.integers(0, 3))
def test_splitting_each_distinct_name_once_is_the_per_row_split(metrics, shift):
    """Split once per distinct name, the result (names, cutoffs, index) and any refusal (its
    row) are the per-row split's."""
    s = pd.Series(metrics, index=np.arange(len(metrics)) + shift).astype(str)
    got, want = _outcome(lambda: puf._split_metric("t", s)), \
        _outcome(lambda: _split_metric_rowwise("t", s))
    if isinstance(want, str):
        assert got == want
    else:
        pd.testing.assert_series_equal(got[0], want[0], check_names=False)
        pd.testing.assert_series_equal(got[1], want[1], check_names=False)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["ndcg", "NDCG", "Recall", "efd", "EPC", "hit", " mrr"]),
                          st.sampled_from([0.0, 0.5, 1.0, 1.0000005, 1.1, -0.2, 7.0])),
                min_size=2, max_size=10))
def test_names_and_ranges_by_distinct_name_are_the_per_row_ones(rows):
    """The vocabulary's names and the range check, done per distinct name, give the per-row
    names and refuse the first row out of its metric's range, as per row."""
    names = pd.Series([m for m, _ in rows]).astype(str)
    codes, distinct = puf._distinct(names)
    spread = puf._spread(distinct.map(metric_name), codes, names.index)
    pd.testing.assert_series_equal(spread, names.map(metric_name))
    out = pd.DataFrame({"metric": spread, "value": [v for _, v in rows]})
    metric, value = out["metric"].to_numpy(), out["value"].to_numpy()
    bad = np.zeros(len(out), dtype=bool)
    for name, (low, high) in METRIC_RANGES.items():
        bad |= (metric == name) & ((value < low - puf.RANGE_SLACK) | (value > high + puf.RANGE_SLACK))
    got = _outcome(lambda: puf._check_ranges("t", out, out["value"]))
    if bad.any():
        i = int(np.argmax(bad))
        assert isinstance(got, str) and f"row {i} has" in got and f"for {metric[i]}," in got
    else:
        assert got is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["b", "a", "B", "10", "9", "é", "a b"]), min_size=2, max_size=6,
                unique=True), st.integers(0, 1000))
def test_systems_are_numbered_in_sorted_order_as_before(systems, seed):
    """A ``system``'s configuration id is its position among the sorted names (looked up by
    hash, as a dict mapped per row gave it); the algorithms keep their first-appearance
    order."""
    rng = np.random.default_rng(seed)
    rows = [(a, s, u) for a in ("z", "m") for s in systems for u in range(3)]
    order = rng.permutation(len(rows))
    df = pd.DataFrame([rows[i] for i in order], columns=["algorithm", "system", "user"])
    df["metric"], df["cutoff"], df["value"] = "ndcg", 10, rng.random(len(df))
    store = FrameStore(df)
    names = sorted(systems)
    assert store.algorithms() == list(dict.fromkeys(df["algorithm"]))
    for alg in store.algorithms():
        c = store.configs(alg)
        assert c["system"].tolist() == names
        assert c["config_id"].tolist() == [names.index(s) for s in names]


# --------------------------------------------------------------------------------------------
# TREC files: one split of the whole text is the split of each line
# --------------------------------------------------------------------------------------------


def test_the_whitespace_and_line_breaks_are_pythons():
    """The code points taken for whitespace and line breaks are exactly those ``str.split()``
    and ``str.splitlines()`` use, over every code point."""
    space = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    breaks = [c for c in range(sys.maxunicode + 1) if len(f"a{chr(c)}b".splitlines()) == 2]
    assert sorted(_trec._WHITESPACE.tolist()) == space
    assert sorted(_trec._LINE_BREAKS.tolist()) == breaks
    assert set(breaks) <= set(space)


_TEXT = st.lists(st.sampled_from(["a", "7", "Q0", ".", "é", "中", "\ufeff", " ", "\t", "\n", "\r",
                                  "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\xa0",
                                  "\u2003", "\u2028", "\u3000", "\U0001f600"]),
                 max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_one_split_of_the_text_is_the_split_of_each_line(text):
    """The fields and 1-based line numbers of :func:`_trec._split_lines` are those of
    ``[line.split() for line in text.splitlines()]`` (blank lines left out)."""
    split = [line.split() for line in text.splitlines()]
    numbers = [n for n, parts in enumerate(split, start=1) if parts]
    lines = _trec._split_lines(text)
    assert lines.numbers.tolist() == numbers
    assert lines.widths.tolist() == [len(split[n - 1]) for n in numbers]
    got = [lines.tokens[f:f + w].tolist() for f, w in zip(lines.first, lines.widths, strict=True)]
    assert got == [split[n - 1] for n in numbers]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["u1", "u2", "é"]), st.sampled_from(["a", "b", "c"]),
                          st.sampled_from(["1", "2", "x", "inf", "0.5"]),
                          st.sampled_from([" ", "\t", "  \t"]), st.integers(4, 7)),
                max_size=6),
       st.sampled_from(["\n", "\r\n", "\n\n"]))
def test_a_run_reads_and_is_refused_as_line_by_line(tmp_path_factory, rows, eol):
    """A run file of random rows (some of the wrong width, a bad score, a repeated item) reads
    to the frame, or the refusal, that a split of each line gives."""
    text = eol.join(sep.join([u, "Q0", i, "1", s, "t", "x"][:w]) for u, i, s, sep, w in rows)
    path = tmp_path_factory.mktemp("run") / "run"
    path.write_text(text, encoding="utf-8")
    got = _outcome(lambda: _trec.read_run(path))
    split = [line.split() for line in text.splitlines()]
    fields = [p for p in split if p]
    numbers = np.asarray([n for n, p in enumerate(split, start=1) if p], dtype=np.int64)
    if not fields:
        assert got == f"{path}: empty file: no records"
        return
    widths = [len(f) for f in fields]
    if any(w != 6 for w in widths):
        i = next(k for k, w in enumerate(widths) if w != 6)
        assert got == f"{path}: line {numbers[i]}: expected 6 fields (user Q0 item rank score " \
                      f"tag), found {widths[i]}"
        return
    try:
        want = pd.DataFrame({"user": pd.Series([f[0] for f in fields], dtype="str"),
                             "item": pd.Series([f[2] for f in fields], dtype="str"),
                             "score": _trec._numeric(path, np.asarray([f[4] for f in fields],
                                                                      dtype=object),
                                                     numbers, "score"),
                             "rank": np.ones(len(fields))})
        _trec._reject_duplicates(path, want, numbers, "run")
    except DptuneError as err:
        assert got == str(err)
        return
    pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize("at", [False, True])
def test_a_table_with_a_repeated_index_reads_as_its_rows(at):
    """Values computed per distinct name are put back on the table's own index: a DataFrame
    whose index repeats labels (after a concat) reads as the same rows with a fresh index."""
    df = _table(5, at=at)
    repeated = df.set_axis(np.arange(len(df)) % 7)
    pd.testing.assert_frame_equal(check_per_user(repeated), check_per_user(df))
