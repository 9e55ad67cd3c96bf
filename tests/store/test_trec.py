"""Tests of dptune.trec: readers, error messages, evaluate_run by hand and against ranx."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import ranx_scores

from dptune.cli import main
from dptune.errors import DptuneError
from dptune.metrics import METRICS
from dptune.store._trec import (
    evaluate_run,
    evaluated_users,
    read_qrels,
    read_run,
    read_train,
    write_per_user,
)

D = [1.0 / math.log2(r + 1) for r in range(1, 11)]  # disc(1..10)


def _write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------
# readers
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reader", ["run", "qrels"])
def test_a_byte_order_mark_is_not_part_of_the_first_user(tmp_path, reader):
    """A run or qrels file saved with a UTF-8 byte-order mark read its first user as
    "\\ufeff1", a user apart from "1" (left unevaluated without a word)."""
    text = "1 Q0 5 1 0.5 t\n2 Q0 6 1 0.4 t\n" if reader == "run" else "1 0 5 4\n2 0 6 3\n"
    path = tmp_path / reader
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    df = read_run(path) if reader == "run" else read_qrels(path)
    assert df["user"].tolist() == ["1", "2"]


@pytest.mark.parametrize("reader", [read_run, read_qrels, read_train])
def test_a_gzip_compressed_file_reads_as_its_text(tmp_path, reader):
    """TREC hands out its runs gzip-compressed (``input.bm25.gz``): such a file was refused as
    "not UTF-8 text". It is read as the text it holds, whatever its name; a cut-short one is
    one line naming it."""
    import gzip

    text = {read_run: "u1 Q0 a 1 0.5 t\n\nu2 Q0 b 1 0.4 t\n", read_qrels: "u1 0 a 4\n\nu2 0 b 5\n",
            read_train: "u1 a\n\nu2 b 9\n"}[reader]
    plain = _write(tmp_path, "plain", text)
    packed = tmp_path / "packed.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    unnamed = tmp_path / "unnamed"
    unnamed.write_bytes(packed.read_bytes())
    expected = reader(plain)
    for path in (packed, unnamed):
        got = reader(path)
        pd.testing.assert_frame_equal(got, expected)
    cut = tmp_path / "cut.gz"
    cut.write_bytes(packed.read_bytes()[:-6])
    with pytest.raises(DptuneError) as err:
        reader(cut)
    assert str(err.value).startswith(f"{cut}: broken gzip file: ")
    bad_line = tmp_path / "bad.gz"
    bad_line.write_bytes(gzip.compress(text.encode() + b"x\n"))
    with pytest.raises(DptuneError, match=r"bad.gz: line 4: "):
        reader(bad_line)


def test_readers_round_trip(tmp_path):
    run = _write(
        tmp_path,
        "run.txt",
        "u1 Q0 i10 1 0.9 tagA\n\nu1\tQ0\ti2  2 8e-1 tagA\n  u2 Q0 i10 1 -3 tagA  \n",
    )
    df = read_run(run)
    assert list(df.columns) == ["user", "item", "score", "rank"]
    assert df["user"].tolist() == ["u1", "u1", "u2"]
    assert df["item"].tolist() == ["i10", "i2", "i10"]
    assert df["score"].tolist() == [0.9, 0.8, -3.0]
    assert df["rank"].tolist() == [1, 2, 1]
    assert df["score"].dtype == np.float64 and df["rank"].dtype == np.float64
    assert pd.api.types.is_string_dtype(df["user"]) and pd.api.types.is_string_dtype(df["item"])
    assert df.attrs["source"] == str(run)

    qrels = read_qrels(_write(tmp_path, "qrels.txt", "1 0 007 4.5\n2 0 7 1\n"))
    assert qrels["user"].tolist() == ["1", "2"]
    assert qrels["item"].tolist() == ["007", "7"]  # ids stay strings: "007" != "7"
    assert qrels["rating"].tolist() == [4.5, 1.0]

    train = read_train(_write(tmp_path, "train.txt", "1 a 5 978300760\n1 a\n2 b x y z\n"))
    assert train.values.tolist() == [["1", "a"], ["1", "a"], ["2", "b"]]


@pytest.mark.parametrize(
    ("reader", "text", "where", "what"),
    [
        (read_run, "u1 Q0 a 1 0.5 t\n\nu1 Q0 b 2 0.4\n", "line 3", "expected 6 fields"),
        (read_run, "u1 Q0 a 1 0.5 t extra\n", "line 1", "expected 6 fields"),
        (read_run, "u1 Q0 a 1 0.5 t\nu1 Q0 b 2 high t\n", "line 2", "score 'high'"),
        (read_run, "u1 Q0 a 1 nan t\n", "line 1", "score 'nan'"),
        (read_run, "u1 Q0 a inf 0.5 t\n", "line 1", "rank 'inf' is not a finite number"),
        (read_run, "u1 Q0 a first 0.5 t\n", "line 1", "rank 'first'"),
        (read_run, "u1 Q0 a 1 0.5 t\nu1 Q0 a 2 0.4 t\n", "line 2", "twice in the run"),
        (read_qrels, "u1 0 a 4\nu1 0 b\n", "line 2", "expected 4 fields"),
        (read_qrels, "u1 0 a four\n", "line 1", "rating 'four'"),
        (read_qrels, "u1 0 a 4\nu1 0 a 3\n", "line 2", "first at line 1"),
        (read_train, "u1 a\nu2\n", "line 2", "expected at least 2 fields"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, reader, text, where, what):
    path = _write(tmp_path, "bad.txt", text)
    with pytest.raises(DptuneError) as err:
        reader(path)
    message = str(err.value)
    assert message.startswith(f"{path}: {where}: "), message
    assert what in message
    assert "\n" not in message


@pytest.mark.parametrize("reader", [read_run, read_qrels, read_train])
def test_empty_missing_and_binary_files(tmp_path, reader):
    empty = _write(tmp_path, "empty.txt", "\n  \n")
    with pytest.raises(DptuneError, match="empty file"):
        reader(empty)
    with pytest.raises(DptuneError, match="file not found"):
        reader(tmp_path / "nope.txt")
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"u1 a\n\xff\xfe\n")
    with pytest.raises(DptuneError, match=r"line 2: not UTF-8"):
        reader(binary)


# --------------------------------------------------------------------------------------------
# evaluate_run by hand
# --------------------------------------------------------------------------------------------

RUN = """\
uA Q0 x 3 0.5 t
uA Q0 y 1 0.9 t
uA Q0 z 2 0.5 t
uA Q0 w 4 0.5 t
uB Q0 x 1 0.1 t
uD Q0 y 1 0.7 t
"""
# ranking of uA: y (0.9), then the 0.5 tie by rank: z (rank 2), x (rank 3), w (rank 4)
QRELS = """\
uA 0 z 5
uA 0 w 4
uA 0 y 3
uB 0 q 4
uC 0 y 4.5
uD 0 y 2
"""
# threshold 4: relevant uA {z, w}, uB {q} (never ranked), uC {y} (absent from the run);
# uD has no relevant item and is not evaluated.
TRAIN = "t1 y\nt2 y\nt3 y\nt4 z\nt1 x\n"
# users(y) = 3, users(z) = 1, users(x) = 1, w and q unseen; S = 5 pairs, 4 training users
# EFD: z -log2(1/5), w (unseen) -log2(1/5); EPC: z 1 - 1/4 = 0.75, w 1


def _hand(tmp_path, **kwargs):
    return evaluate_run(
        read_run(_write(tmp_path, "run", RUN)),
        read_qrels(_write(tmp_path, "qrels", QRELS)),
        read_train(_write(tmp_path, "train", TRAIN)),
        **kwargs,
    )


def _values(df, user, metric):
    rows = df[(df["user"] == user) & (df["metric"] == metric)]
    return rows["value"].tolist()


def test_evaluate_run_by_hand(tmp_path):
    df = _hand(tmp_path, cutoffs=(5, 1, 2, 5))  # unsorted, duplicated: becomes 1, 2, 5
    assert list(df.columns) == ["user", "metric", "cutoff", "value"]
    assert df["user"].unique().tolist() == ["uA", "uB", "uC"]
    assert df["metric"].tolist()[:6] == ["ndcg"] * 3 + ["precision"] * 3
    assert df["cutoff"].tolist()[:3] == [1, 2, 5]
    assert len(df) == 3 * len(METRICS) * 3
    # uA ranking y, z, x, w -> hits at ranks 2 (z) and 4 (w); |R| = 2
    idcg2 = D[0] + D[1]
    assert _values(df, "uA", "ndcg") == pytest.approx([0, D[1] / idcg2, (D[1] + D[3]) / idcg2])
    assert _values(df, "uA", "precision") == pytest.approx([0, 1 / 2, 2 / 5])
    assert _values(df, "uA", "recall") == pytest.approx([0, 1 / 2, 1])
    assert _values(df, "uA", "mrr") == pytest.approx([0, 1 / 2, 1 / 2])
    efd_z = efd_w = -math.log2(1 / 5)
    # EFD@5 = (disc2 efd(z) + disc4 efd(w)) / sum_{r<=5} disc(r): the run has only 4 rows for uA,
    # the 5th position is empty but still in the denominator
    assert _values(df, "uA", "efd") == pytest.approx(
        [0, D[1] * efd_z / sum(D[:2]), (D[1] * efd_z + D[3] * efd_w) / sum(D[:5])]
    )
    assert _values(df, "uA", "epc") == pytest.approx(
        [0, D[1] * 0.75 / sum(D[:2]), (D[1] * 0.75 + D[3] * 1.0) / sum(D[:5])]
    )
    # uB ranked only x (not relevant); uC is absent from the run: all zeros
    for user in ("uB", "uC"):
        assert (df.loc[df["user"] == user, "value"] == 0).all()
    assert df.attrs["missing_from_run"] == ["uC"]  # scored 0, as trec_eval -c scores it


def test_evaluate_run_relevance_unaware_and_threshold(tmp_path):
    df = _hand(tmp_path, cutoffs=(1, 2), relevance_aware=False)
    # uA: y (efd -log2(3/5), epc 1 - 3/4) at r=1, z at r=2
    efd_y, efd_z = -math.log2(3 / 5), -math.log2(1 / 5)
    assert _values(df, "uA", "efd") == pytest.approx([efd_y, (efd_y + D[1] * efd_z) / sum(D[:2])])
    assert _values(df, "uA", "epc") == pytest.approx([0.25, (0.25 + D[1] * 0.75) / sum(D[:2])])
    # uB ranked x (efd -log2(1/5), epc 0.75) although it is not relevant
    assert _values(df, "uB", "epc") == pytest.approx([0.75, 0.75 / sum(D[:2])])
    # threshold 3: y becomes relevant for uA, hit at rank 1
    df3 = _hand(tmp_path, cutoffs=(1,), threshold=3)
    assert _values(df3, "uA", "precision") == [1.0]
    assert "uD" not in set(df3["user"])
    with pytest.raises(DptuneError, match=r"no rating >= 9 \(the relevance threshold, "
                       r"--threshold\): no user to evaluate; the highest rating is \d"):
        _hand(tmp_path, threshold=9)
    with pytest.raises(DptuneError, match="cutoffs"):
        _hand(tmp_path, cutoffs=(0, 5))
    with pytest.raises(DptuneError, match="threshold"):
        _hand(tmp_path, threshold="high")


@pytest.mark.parametrize("threshold", [4, 3, 4.5])
def test_evaluated_users_are_known_from_the_qrels_alone(tmp_path, threshold):
    """``evaluated_users`` (what ``dp --runs`` checks ``--min-fold-users`` on before any run is
    evaluated) counts the users ``evaluate_run`` scores, whatever the run; a qrels without a
    relevant item and a bad threshold are refused as ``evaluate_run`` refuses them."""
    qrels = read_qrels(_write(tmp_path, "qrels", QRELS))
    assert evaluated_users(qrels, threshold) == _hand(tmp_path, threshold=threshold)[
        "user"].nunique()
    for bad in (9, "high"):
        with pytest.raises(DptuneError) as ours:
            evaluated_users(qrels, bad)
        with pytest.raises(DptuneError) as theirs:
            _hand(tmp_path, threshold=bad)
        assert str(ours.value) == str(theirs.value)


def test_what_trec_eval_would_score_otherwise_is_said(tmp_path, capsys):
    """A user with relevant items and no line in the run scores 0 (trec_eval -c's choice; plain
    trec_eval leaves the user out), and a relevant pair that is also a training pair is never a
    hit: ``evaluate`` says both (they were silent), and so does the report of ``dp --runs``. A
    rank field that is not an integer is read (trec_eval ignores it)."""
    from dptune.store._trec import coverage_lines

    run = _write(tmp_path, "run", "u1 Q0 a 1 2.0 t\nu1 Q0 b 2.5 1.0 t\n")
    qrels = _write(tmp_path, "q", "u1 0 a 1\nu1 0 b 1\nu2 0 b 1\n")
    train = _write(tmp_path, "t", "u1 a\n")
    df = evaluate_run(read_run(run), read_qrels(qrels), read_train(train), cutoffs=(2,),
                      threshold=1)
    assert df.attrs["missing_from_run"] == ["u2"] and df.attrs["relevant_in_train"] == 1
    assert _values(df, "u1", "recall") == [0.5]  # a is relevant, but a training pair
    lines = coverage_lines(["u2"], 1, "run", "q", "t", 2)
    assert lines == [
        "1 of 2 evaluated users has no line in run and scores 0 on every metric (as trec_eval "
        "-c scores them; without -c it leaves them out): u2",
        "1 relevant (user, item) pair of q is also in t: removed from the run's lists with the "
        "training pairs but still relevant, so never a hit (recall cannot reach 1 for those "
        "users)"]
    assert coverage_lines([], 0, "run", "q", "t", 2) == []
    out = tmp_path / "pu.csv"
    assert main(["evaluate", "--run", str(run), "--qrels", str(qrels), "--train", str(train),
                 "--threshold", "1", "--cutoffs", "2", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"dptune: note: 1 of 2 evaluated users has no line in {run}" in err
    assert f"dptune: note: 1 relevant (user, item) pair of {qrels} is also in {train}" in err


def test_training_items_leave_the_run_before_the_cut(tmp_path):
    """a (rank 1) is a training item of u1: it is removed, b moves to rank 1 (MRR@1 = 1), as
    in the sweep's protocol of ranking every item the user has not rated."""
    run = read_run(_write(tmp_path, "run", "u1 Q0 a 1 2.0 t\nu1 Q0 b 2 1.0 t\n"))
    qrels = read_qrels(_write(tmp_path, "q", "u1 0 b 5\n"))
    train = read_train(_write(tmp_path, "t", "u1 a\n"))
    df = evaluate_run(run, qrels, train, cutoffs=(1,))
    assert _values(df, "u1", "mrr") == [1.0] and _values(df, "u1", "precision") == [1.0]
    # the same pair for another user is no training item of u1
    other = read_train(_write(tmp_path, "t2", "u2 a\n"))
    assert _values(evaluate_run(run, qrels, other, cutoffs=(1,)), "u1", "mrr") == [0.0]


def test_novelty_without_hits_is_plus_zero(tmp_path):
    """An item every training user has seen has EFD -log2(1) = -0.0; a user without hits
    scores 0.0, never -0.0 (which the per-user file would print as -0.0)."""
    run = read_run(_write(tmp_path, "run", "u1 Q0 a 1 2.0 t\n"))
    qrels = read_qrels(_write(tmp_path, "q", "u1 0 b 5\n"))
    train = read_train(_write(tmp_path, "t", "u2 a\nu3 a\n"))
    for aware in (True, False):
        df = evaluate_run(run, qrels, train, cutoffs=(1, 5), relevance_aware=aware)
        assert not np.signbit(df["value"].to_numpy()).any()
        write_per_user(df, tmp_path / "out.csv")
        assert "-0.0" not in (tmp_path / "out.csv").read_text()


# trec_eval orders a query's documents by score descending, ties by document id descending
# (strcmp), whatever the rank field says. Expected values below are worked out by hand from
# that rule (the order ir-measures/pytrec_eval inherit from trec_eval).
TIED_RUN = "".join(f"u Q0 i{n:02d} {n} 1.0 t\n" for n in range(1, 13)) + """v Q0 x 1 3.0 t
v Q0 a 2 2.0 t
v Q0 b 3 2.0 t
v Q0 c 4 2.0 t
w Q0 10 1 5.0 t
w Q0 9 2 5.0 t
"""
TIED_QRELS = "u 0 i01 5\nv 0 a 5\nw 0 10 5\n"


def test_tied_scores_are_ordered_as_trec_eval_does(tmp_path):
    run = read_run(_write(tmp_path, "run", TIED_RUN))
    qrels = read_qrels(_write(tmp_path, "q", TIED_QRELS))
    train = read_train(_write(tmp_path, "t", "z q\n"))
    df = evaluate_run(run, qrels, train, cutoffs=(1, 2, 4, 10))
    # u: 12 tied items -> i12, i11, ..., i01: the relevant i01 is 12th, outside the top 10
    assert _values(df, "u", "recall") == [0, 0, 0, 0]
    # v: x, then the 2.0 tie by id descending: c, b, a -> a at rank 4
    assert _values(df, "v", "mrr") == pytest.approx([0, 0, 1 / 4, 1 / 4])
    assert _values(df, "v", "ndcg") == pytest.approx([0, 0, D[3], D[3]])
    assert _values(df, "v", "precision") == pytest.approx([0, 0, 1 / 4, 1 / 10])
    # w: ids compared as strings, "9" > "10": 9 first, the relevant 10 second
    assert _values(df, "w", "mrr") == pytest.approx([0, 1 / 2, 1 / 2, 1 / 2])
    # the rank-field order: rank ascending (the score ignored), ties by file order
    by_rank = evaluate_run(run, qrels, train, cutoffs=(1, 2, 4, 10), order="rank")
    assert _values(by_rank, "u", "recall") == [1, 1, 1, 1]
    assert _values(by_rank, "v", "mrr") == pytest.approx([0, 1 / 2, 1 / 2, 1 / 2])
    assert _values(by_rank, "w", "mrr") == [1, 1, 1, 1]
    with pytest.raises(DptuneError, match="order: 'score' is not one of trec, rank"):
        evaluate_run(run, qrels, train, order="score")


def test_rank_order_ties_fall_back_to_file_order(tmp_path):
    run = read_run(_write(tmp_path, "run", "u Q0 a 1 1.0 t\nu Q0 b 1 1.0 t\n"))
    qrels = read_qrels(_write(tmp_path, "q", "u 0 b 5\n"))
    train = read_train(_write(tmp_path, "t", "v a\n"))
    df = evaluate_run(run, qrels, train, cutoffs=(1, 2), order="rank")
    assert _values(df, "u", "mrr") == [0.0, 0.5]  # a (earlier line) first, then b
    df = evaluate_run(run, qrels, train, cutoffs=(1, 2))
    assert _values(df, "u", "mrr") == [1.0, 1.0]  # trec order: b > a


def test_write_per_user_round_trip(tmp_path):
    df = _hand(tmp_path, cutoffs=(1, 5, 10))
    out = tmp_path / "per_user.csv"
    write_per_user(df, out)
    assert out.read_text().splitlines()[0] == "user,metric,cutoff,value"
    back = pd.read_csv(out, dtype={"user": str, "metric": str})
    assert back["user"].tolist() == df["user"].tolist()
    assert back["metric"].tolist() == df["metric"].tolist()
    assert back["cutoff"].tolist() == df["cutoff"].tolist()
    assert back["value"].tolist() == df["value"].tolist()  # exact: full-precision repr
    write_per_user(df, tmp_path / "missing-dir" / "x.csv")  # its folder is made
    assert (tmp_path / "missing-dir" / "x.csv").read_bytes() == out.read_bytes()
    (tmp_path / "a-file").write_text("")
    with pytest.raises(DptuneError, match="cannot write"):
        write_per_user(df, tmp_path / "a-file" / "x.csv")


# --------------------------------------------------------------------------------------------
# ranx cross-check on a random run written to disk
# --------------------------------------------------------------------------------------------


def test_evaluate_run_agrees_with_ranx(tmp_path):
    rng = np.random.default_rng(5)
    n_users, n_items = 15, 40
    run_lines, qrel_lines, train_lines = [], [], []
    run_dict, qrel_dict = {}, {}
    for u in range(n_users):
        length = int(rng.integers(3, 25))  # some runs shorter than the cutoff
        items = rng.choice(n_items, size=length, replace=False)
        scores = rng.permutation(1000)[:length] / 7.0  # distinct scores
        run_dict[f"u{u}"] = {}
        for rank, i in enumerate(items[np.argsort(-scores)], start=1):
            s = float(np.sort(scores)[::-1][rank - 1])
            run_lines.append(f"u{u} Q0 i{i} {rank} {s!r} rnd")
            run_dict[f"u{u}"][f"i{i}"] = s
        rated = rng.choice(n_items, size=int(rng.integers(2, 12)), replace=False)
        ratings = rng.integers(1, 6, size=rated.size)
        ratings[0] = 5  # every user has at least one relevant item
        qrel_dict[f"u{u}"] = {f"i{i}": 1 for i, r in zip(rated, ratings, strict=True) if r >= 4}
        qrel_lines += [f"u{u} 0 i{i} {r}" for i, r in zip(rated, ratings, strict=True)]
        trained = rng.choice(n_items, size=5, replace=False)
        train_lines += [f"u{u} i{i}" for i in trained]
        for i in trained:  # training items leave the ranking (dptune's protocol)
            run_dict[f"u{u}"].pop(f"i{i}", None)
    rng.shuffle(run_lines)  # file order must not matter with distinct scores
    run = read_run(_write(tmp_path, "run.txt", "\n".join(run_lines) + "\n"))
    qrels = read_qrels(_write(tmp_path, "qrels.txt", "\n".join(qrel_lines) + "\n"))
    train = read_train(_write(tmp_path, "train.txt", "\n".join(train_lines) + "\n"))
    df = evaluate_run(run, qrels, train, cutoffs=(1, 5, 10), threshold=4)

    scores = ranx_scores(qrel_dict, run_dict, [f"{m}@{c}" for c in (1, 5, 10) for m in
                                               ("ndcg", "precision", "recall", "mrr")],
                         return_mean=False)
    for cutoff in (1, 5, 10):
        names = {m: f"{m}@{cutoff}" for m in ("ndcg", "precision", "recall", "mrr")}
        for metric, name in names.items():
            rows = df[(df["metric"] == metric) & (df["cutoff"] == cutoff)]
            theirs = [scores[name][user] for user in rows["user"]]
            np.testing.assert_allclose(
                rows["value"].to_numpy(), theirs, rtol=0, atol=1e-9, err_msg=name
            )


# --------------------------------------------------------------------------------------------
# the command line: bad flags are one line naming the flag, before anything is read or written
# --------------------------------------------------------------------------------------------




def _one_line(capsys) -> str:
    """The one line on stderr (nothing on stdout)."""
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and not out.strip() and "Traceback" not in err, (out, err)
    return lines[0]


def _trec_files(tmp_path):
    """A small valid run, qrels and train file: (run, qrels, train)."""
    run = _write(tmp_path, "run.txt", "u1 Q0 a 1 0.9 t\nu1 Q0 b 2 0.5 t\nu2 Q0 a 1 0.7 t\n")
    qrels = _write(tmp_path, "qrels.txt", "u1 0 a 5\nu2 0 b 4\n")
    train = _write(tmp_path, "train.txt", "u1 c\nu2 c\n")
    return run, qrels, train


@pytest.mark.parametrize(
    ("command", "value", "start"),
    [
        pytest.param("evaluate", "100000000", "dptune: evaluate: argument --cutoffs: at most "
                     "32,767 (the longest top-N list dptune evaluates), got 100,000,000",
                     id="evaluate-huge"),
        pytest.param("evaluate", "5,5", "dptune: evaluate: argument --cutoffs: has duplicates "
                     "(5), got '5,5'", id="evaluate-duplicates"),
        pytest.param("dp", "1000000", "dptune: dp: argument --cutoffs: at most 32,767 (the "
                     "longest top-N list dptune evaluates), got 1,000,000", id="dp-huge"),
        pytest.param("dp", "1,10,1", "dptune: dp: argument --cutoffs: has duplicates (1), "
                     "got '1,10,1'", id="dp-duplicates"),
    ],
)
def test_cutoffs_flag_has_the_experiments_bound_and_no_duplicates(tmp_path, capsys, command,
                                                                   value, start):
    """``--cutoffs 100000000`` used to hold a top-N list of 10**8 items per user in memory
    (OOM-killed at 24 GB), and ``5,5`` was accepted; both are refused while parsing, as the
    experiment file's ``evaluation.cutoffs`` refuses them: one line, exit 2, nothing written."""
    run, qrels, train = _trec_files(tmp_path)
    (tmp_path / "runs").mkdir()
    run.rename(tmp_path / "runs" / "sys.run")
    out = tmp_path / "per_user.csv"
    argv = (["evaluate", "--run", str(tmp_path / "runs" / "sys.run"), "--out", str(out)]
            if command == "evaluate" else
            ["dp", "--runs", str(tmp_path / "runs"), "--reports", str(tmp_path / "rep")])
    assert main([*argv, "--qrels", str(qrels), "--train", str(train), "--cutoffs", value]) == 2
    assert _one_line(capsys).startswith(start)
    assert not out.exists() and not (tmp_path / "rep").exists()


def test_evaluate_run_refuses_a_cutoff_beyond_the_bound(tmp_path):
    """The API has the same bound as the flag (a cutoff of 10**8 exhausted the memory)."""
    run, qrels, train = _trec_files(tmp_path)
    with pytest.raises(DptuneError, match=r"^cutoffs: at most 32,767 \(the longest top-N list "
                       r"dptune evaluates\), got 100,000,000$"):
        evaluate_run(read_run(run), read_qrels(qrels), read_train(train), cutoffs=(10, 10**8))


@pytest.mark.parametrize("flag", ["--run", "--qrels", "--train"])
def test_evaluate_out_that_is_an_input_file_is_refused(tmp_path, capsys, flag):
    """``--out`` naming a file the command reads (written differently, or through a link) used
    to overwrite it with the per-user table; it is refused before anything is read, and the
    input is left as it was."""
    run, qrels, train = _trec_files(tmp_path)
    given = {"--run": run, "--qrels": qrels, "--train": train}
    (tmp_path / "link.csv").symlink_to(given[flag])
    before = {p: p.read_bytes() for p in (run, qrels, train)}
    for out in (f"{tmp_path}/./{given[flag].name}", str(tmp_path / "link.csv")):
        assert main(["evaluate", "--run", str(run), "--qrels", str(qrels), "--train", str(train),
                     "--out", out]) == 2
        assert _one_line(capsys).startswith(f"dptune: --out: {out} is the {flag} file this "
                                            "command reads; give another file to write")
    assert {p: p.read_bytes() for p in (run, qrels, train)} == before


def test_evaluate_out_that_is_a_directory_names_the_flag(tmp_path, capsys):
    """``--out DIR`` said ``DIR: cannot write file`` after the whole evaluation, without the
    flag; now it is one line naming ``--out`` before anything is read."""
    run, qrels, train = _trec_files(tmp_path)
    (tmp_path / "adir").mkdir()
    assert main(["evaluate", "--run", str(run), "--qrels", str(qrels), "--train", str(train),
                 "--out", str(tmp_path / "adir")]) == 2
    assert _one_line(capsys).startswith(f"dptune: --out: {tmp_path / 'adir'} is a directory; "
                                        "give the file to write")
    assert not any((tmp_path / "adir").iterdir())
    # a folder that does not exist yet is made (it was checked creatable before the work)
    out = tmp_path / "new" / "deeper" / "per_user.csv"
    assert main(["evaluate", "--run", str(run), "--qrels", str(qrels), "--train", str(train),
                 "--out", str(out)]) == 0
    assert out.read_text().startswith("user,metric,cutoff,value\n")
