"""TREC-style run, qrels and training files for evaluating external rankings (``dptune evaluate``,
``dptune dp --runs``).

File formats (whitespace separated, one record per line, blank lines ignored, ids kept as
strings):

* run: ``user Q0 item rank score tag`` (exactly 6 fields; ``Q0`` and ``tag`` are not used);
* qrels: ``user 0 item rating`` (exactly 4 fields);
* train: ``user item [anything ...]`` (at least 2 fields; extra fields such as rating and
  timestamp are ignored; every listed pair counts as one training interaction and is removed
  from the run before it is cut at N).

A gzip-compressed file (as TREC hands out its runs, ``input.bm25.gz``) is read as it is,
whatever its name: it is known by its first bytes.

Each reader returns a DataFrame whose ``attrs["source"]`` is the path, so later errors can name
the file. :func:`evaluate_run` reuses :func:`dptune.metrics.metrics_from_topn`, so external runs
are scored by exactly the code that scores dptune's own models.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from dptune.errors import first_few, input_error
from dptune.metrics import METRICS, metrics_from_topn, novelty_vectors

#: How :func:`evaluate_run` orders a user's run rows: ``trec`` (score descending, ties by item
#: id descending, as trec_eval) or ``rank`` (the rank field ascending, ties by file order).
ORDERS: tuple[str, ...] = ("trec", "rank")


#: The characters ``str.split()`` splits at (Python's whitespace, ``str.isspace``) and those
#: ``str.splitlines()`` breaks lines at (``"\r\n"`` is one break), as code points: a file's
#: fields are found in one pass over its text (:func:`_read_lines`) and must be the fields a
#: split of each line gives.
_WHITESPACE = np.array([0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x85, 0xA0,
                        0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000])
_LINE_BREAKS = np.array([0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029])


@dataclass(frozen=True)
class _Lines:
    """The records of a text file: ``tokens`` (every whitespace-separated field, in file
    order, an object array of ``str``), and per non-blank line its 1-based line number
    (``numbers``), its number of fields (``widths``) and the position of its first field in
    ``tokens`` (``first``)."""

    tokens: np.ndarray
    first: np.ndarray
    widths: np.ndarray
    numbers: np.ndarray

    def column(self, k: int) -> np.ndarray:
        """Field ``k`` (0-based) of every line, an object array of ``str``; each line has more
        than ``k`` fields (:func:`_check_width`)."""
        return self.tokens[self.first + k]


def _marks(code: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Which of the code points ``code`` are among ``points``: a look-up table indexed by the
    code point (every point above the table's last is none of them)."""
    top = max(int(points.max()) + 1, 256)  # every byte indexes the table as it is
    table = np.zeros(top + 1, dtype=bool)
    table[points] = True
    return table[code if code.dtype == np.uint8 else np.minimum(code, top)]


def _split_lines(text: str) -> _Lines:
    """:class:`_Lines` of ``text``: one ``str.split()`` of the whole text, and the line of each
    field from the positions of its characters (line breaks counted before each field's first
    character), so that no Python runs per line: a run file holds hundreds of thousands of
    lines, and a split per line took seconds per run. The fields and line numbers are those of
    ``[line.split() for line in text.splitlines()]``."""
    tokens = np.asarray(text.split(), dtype=object)
    if not tokens.size:
        empty = np.zeros(0, dtype=np.int64)
        return _Lines(tokens, empty, empty, empty)
    code = (np.frombuffer(text.encode("ascii"), dtype=np.uint8) if text.isascii()
            else np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32))
    space, breaks = _marks(code, _WHITESPACE), _marks(code, _LINE_BREAKS)
    breaks[1:] &= ~((code[1:] == 0x0A) & (code[:-1] == 0x0D))  # "\r\n": one line break
    starts = np.flatnonzero(~space & np.concatenate(([True], space[:-1])))
    line = np.searchsorted(np.flatnonzero(breaks), starts) + 1  # breaks before each field
    first = np.flatnonzero(np.concatenate(([True], line[1:] != line[:-1])))
    widths = np.diff(np.append(first, line.size))
    return _Lines(tokens, first, widths, line[first])


def _read_lines(path: str | Path) -> _Lines:
    """Split a text file into whitespace-separated fields (:class:`_Lines`: the fields and
    the 1-based number of each non-blank line). A gzip-compressed file is decompressed first
    (line numbers are those of its text). A UTF-8 byte-order mark (an editor's on Windows) is
    not text: it would stick to the first user id (``\ufeff1`` a user apart from ``1``,
    silently left unevaluated)."""
    from dptune.data._readers import decompressed

    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise input_error(path, None, "file not found") from None
    except IsADirectoryError:
        raise input_error(path, None, "is a directory, expected a text file") from None
    except OSError as err:
        raise input_error(path, None, f"cannot read file: {err.strerror or err}") from None
    data = decompressed(data, path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise input_error(path, f"line {line}", "not UTF-8 text") from None
    lines = _split_lines(text)
    if not lines.numbers.size:
        raise input_error(path, None, "empty file: no records")
    return lines


def _check_width(path: str | Path, lines: _Lines, n: int, layout: str, exact: bool) -> None:
    widths, numbers = lines.widths, lines.numbers
    bad = np.flatnonzero(widths != n) if exact else np.flatnonzero(widths < n)
    if bad.size:
        i = int(bad[0])
        need = f"{n}" if exact else f"at least {n}"
        raise input_error(
            path,
            f"line {numbers[i]}",
            f"expected {need} fields ({layout}), found {widths[i]}",
        )


def _numeric(path: str | Path, values: np.ndarray, numbers: np.ndarray, column: str) -> np.ndarray:
    """Parse a column of numbers; name the column and line of the first bad value."""
    parsed = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(
        dtype=np.float64
    )
    bad = ~np.isfinite(parsed)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise input_error(path, f"line {numbers[i]}",
                          f"{column} {values[i]!r} is not a finite number")
    return parsed


def _ids(values: np.ndarray) -> pd.Series:
    return pd.Series(values, dtype="str")


def _reject_duplicates(path: str | Path, df: pd.DataFrame, numbers: np.ndarray, what: str) -> None:
    dup = df.duplicated(["user", "item"], keep="first").to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        user, item = df["user"].iat[i], df["item"].iat[i]
        same = (df["user"].to_numpy() == user) & (df["item"].to_numpy() == item)
        first = int(np.flatnonzero(same)[0])
        raise input_error(
            path,
            f"line {numbers[i]}",
            f"user {user!r} has item {item!r} twice in the {what} (first at line {numbers[first]})",
        )


def read_run(path: str | Path) -> pd.DataFrame:
    """Read a TREC run file ``user Q0 item rank score tag`` into columns (user, item, score, rank).

    Why: external rankings (other libraries, published runs) are evaluated and compared with the
    same metric code as dptune's own models.

    ``user``/``item`` are strings, ``score`` float64, ``rank`` float64 (any finite number:
    trec_eval's order ignores the field, and the rank order only sorts by it); rows keep file
    order (the tie-breaker of the rank-field order, see :func:`evaluate_run`). Raises a
    :class:`~dptune.errors.DptuneError` naming the file and line for a line without exactly 6
    fields, a non-numeric or non-finite score or rank, an item listed twice for one user, or an
    empty file.
    """
    lines = _read_lines(path)
    numbers = lines.numbers
    _check_width(path, lines, 6, "user Q0 item rank score tag", exact=True)
    df = pd.DataFrame(
        {
            "user": _ids(lines.column(0)),
            "item": _ids(lines.column(2)),
            "score": _numeric(path, lines.column(4), numbers, "score"),
            "rank": _numeric(path, lines.column(3), numbers, "rank"),
        }
    )
    _reject_duplicates(path, df, numbers, "run")
    df.attrs["source"] = str(path)
    return df


def read_qrels(path: str | Path) -> pd.DataFrame:
    """Read a TREC qrels file ``user 0 item rating`` into columns (user, item, rating).

    Why: the held-out ratings of the users an external run is judged on; relevance is decided
    later by a rating threshold (:func:`evaluate_run`).

    ``user``/``item`` are strings, ``rating`` float64. Errors name the file and line: a line
    without exactly 4 fields, a non-numeric rating, a (user, item) pair given twice, an empty file.
    """
    lines = _read_lines(path)
    numbers = lines.numbers
    _check_width(path, lines, 4, "user 0 item rating", exact=True)
    df = pd.DataFrame(
        {
            "user": _ids(lines.column(0)),
            "item": _ids(lines.column(2)),
            "rating": _numeric(path, lines.column(3), numbers, "rating"),
        }
    )
    _reject_duplicates(path, df, numbers, "qrels")
    df.attrs["source"] = str(path)
    return df


def read_train(path: str | Path) -> pd.DataFrame:
    """Read training interactions ``user item [anything ...]`` into columns (user, item).

    Why: EFD/EPC novelty is defined by item popularity in the training data the run was produced
    from. Fields after the second are ignored; repeated pairs are kept (they count once, since
    novelty counts distinct users). Errors name the file and line (fewer than 2 fields, empty).
    """
    lines = _read_lines(path)
    _check_width(path, lines, 2, "user item ...", exact=False)
    df = pd.DataFrame({"user": _ids(lines.column(0)), "item": _ids(lines.column(1))})
    df.attrs["source"] = str(path)
    return df


def _source(df: pd.DataFrame, default: str) -> str:
    return str(df.attrs.get("source", default))


def _require(df: pd.DataFrame, columns: Sequence[str], default: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise input_error(_source(df, default), "columns", f"missing column(s) {missing}")


def _check_cutoffs(cutoffs: Sequence[int]) -> np.ndarray:
    """The distinct cutoffs, ascending; each a positive integer of at most
    :data:`dptune.config.MAX_CUTOFF` (the bound of an experiment's cutoffs): every evaluated
    user's top-N list is held in memory, so a cutoff of 10**8 would exhaust it."""
    from dptune.config import MAX_CUTOFF

    try:
        values = list(cutoffs)
    except TypeError:
        values = [cutoffs]
    ok = bool(values) and all(
        isinstance(c, int | np.integer) and not isinstance(c, bool) and c >= 1 for c in values
    )
    if not ok:
        raise input_error("cutoffs", None, f"expected positive integers, got {values!r}")
    if max(values) > MAX_CUTOFF:
        raise input_error("cutoffs", None, f"at most {MAX_CUTOFF:,} (the longest top-N list "
                          f"dptune evaluates), got {int(max(values)):,}")
    return np.unique(np.asarray(values, dtype=np.int64))


def check_threshold(threshold: object) -> float:
    """The relevance threshold as a finite float; else one line naming ``threshold``."""
    try:
        thr = float(threshold)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        thr = math.nan
    if not math.isfinite(thr):
        raise input_error("threshold", None, f"expected a finite number, got {threshold!r}")
    return thr


def _no_relevant(qrels: pd.DataFrame, rating: np.ndarray, thr: float) -> Exception:
    return input_error(
        _source(qrels, "qrels"),
        "rating",
        f"no rating >= {thr:g} (the relevance threshold, --threshold): no user to "
        f"evaluate; the highest rating is {float(np.max(rating)):g}"
        if rating.size else "no rows",
    )


def evaluated_users(qrels: pd.DataFrame, threshold: float = 4.0) -> int:
    """How many users :func:`evaluate_run` evaluates against ``qrels``, whatever the run: the
    users with a rating ``>= threshold``, each scored (a user the run does not rank scores
    0). Known from the qrels alone, so a caller can refuse too few before evaluating a run;
    a qrels without such a user is refused as :func:`evaluate_run` refuses it."""
    thr = check_threshold(threshold)
    _require(qrels, ("user", "item", "rating"), "qrels")
    return int(pd.unique(qrels["user"].astype("str").to_numpy()[_relevant(qrels, thr)]).size)


def _relevant(qrels: pd.DataFrame, thr: float) -> np.ndarray:
    """Which qrels rows are relevant (``rating >= thr``), for :func:`evaluate_run` and
    :func:`evaluated_users` alike; a qrels without a relevant row is refused."""
    rating = qrels["rating"].to_numpy(dtype=np.float64)
    is_rel = rating >= thr
    if not is_rel.any():
        raise _no_relevant(qrels, rating, thr)
    return is_rel


def evaluate_run(
    run: pd.DataFrame,
    qrels: pd.DataFrame,
    train: pd.DataFrame,
    cutoffs: Sequence[int] = (1, 5, 10),
    threshold: float = 4.0,
    relevance_aware: bool = True,
    order: str = "trec",
) -> pd.DataFrame:
    """Per-user metrics of an external run, long format ``user, metric, cutoff, value``.

    Why: lets runs produced outside dptune enter the same per-user analysis (discriminative
    power, paired tests) as dptune's own sweeps, with the same metric definitions
    (:mod:`dptune.metrics`).

    * Training items out first: a run row whose (user, item) pair is in ``train`` is dropped
      before the list is cut at N. This is the protocol of dptune's own sweep (every model
      ranks all items the user has not rated in training), so a run that still lists training
      items is judged on the same lists as a dptune model.
    * Ranking of a user (``order``): ``"trec"`` (default) sorts the user's remaining rows the
      way trec_eval does, by score descending with ties broken by item id descending (string
      order), the rank field ignored, so that per-user values equal trec_eval's on tied
      scores too; ``"rank"`` follows the rank field ascending (ties by file order), the score
      ignored. The first ``max(cutoffs)`` rows form the top-N list. A user with fewer rows gets
      empty positions: never a hit, no novelty, but still counted in Precision's ``N`` and in
      the EPC/EFD denominator ``sum_{r<=N} disc(r)``.
    * Relevant items: qrels rows with ``rating >= threshold``; relevance is binary (nDCG's gain
      is 1 for a relevant item, not its grade as in trec_eval's ``ndcg_cut``), so per-user
      values equal trec_eval's on binary qrels.
    * Users evaluated: every user with at least one relevant item; such a user missing from the
      run scores 0 on every metric (as with trec_eval ``-c``; without it trec_eval leaves the
      user out): ``attrs["missing_from_run"]`` names them. Users of the run or the qrels
      without a relevant item cannot be scored (every metric divides by, or counts, relevant
      items) and are left out; the result says which (``attrs["not_evaluated"]``: their ids,
      sorted; ``attrs["users_seen"]``: the users of the run and the qrels), so that a caller
      can say so.
    * A relevant (user, item) pair that is also in ``train`` is removed from the run's list
      with the other training pairs but stays relevant: it can never be a hit, so it caps the
      user's recall. ``attrs["relevant_in_train"]`` counts such pairs.
    * Novelty (EFD/EPC) from ``train`` (:func:`dptune.metrics.novelty_vectors`); items that
      appear only in the run or qrels are unseen in training and get the maximum novelty.
    * Ids: one shared encoding of users and items over run, qrels and train (all as strings).

    Returns ``user`` (original string id), ``metric`` (names of :data:`dptune.metrics.METRICS`),
    ``cutoff`` (int64), ``value`` (float64), sorted by user (string order), metric (METRICS
    order) and cutoff (ascending; duplicates in ``cutoffs`` are dropped).
    """
    cut = _check_cutoffs(cutoffs)
    if order not in ORDERS:
        raise input_error("order", None, f"{order!r} is not one of {', '.join(ORDERS)}")
    thr = check_threshold(threshold)
    _require(run, ("user", "item", "score"), "run")
    _require(qrels, ("user", "item", "rating"), "qrels")
    _require(train, ("user", "item"), "train")

    n_run, n_qrels = len(run), len(qrels)
    all_users = pd.concat([run["user"], qrels["user"], train["user"]], ignore_index=True)
    all_items = pd.concat([run["item"], qrels["item"], train["item"]], ignore_index=True)
    ucode, user_ids = pd.factorize(all_users.astype("str"), sort=True)
    icode, _ = pd.factorize(all_items.astype("str"), sort=True)
    n_users, n_items = len(user_ids), int(icode.max()) + 1 if icode.size else 0
    run_u, qrels_u, train_u = np.split(ucode, [n_run, n_run + n_qrels])
    run_i, qrels_i, train_i = np.split(icode, [n_run, n_run + n_qrels])

    is_rel = _relevant(qrels, thr)
    eval_users = np.unique(qrels_u[is_rel])
    row_of = np.full(n_users, -1, dtype=np.int64)
    row_of[eval_users] = np.arange(eval_users.size)
    relevant = sp.csr_array(
        (np.ones(int(is_rel.sum()), dtype=bool), (row_of[qrels_u[is_rel]], qrels_i[is_rel])),
        shape=(eval_users.size, n_items),
    )
    train_m = sp.csr_array(
        (np.ones(train_u.size, dtype=np.float32), (train_u, train_i)), shape=(n_users, n_items)
    )
    efd, epc = novelty_vectors(train_m)

    k = int(cut.max())
    top = np.full((eval_users.size, k), -1, dtype=np.int64)
    if n_run:
        keep = row_of[run_u] >= 0
        if train_u.size:  # training pairs leave the ranking before the cut at N
            keep &= ~np.isin(run_u * n_items + run_i, train_u * n_items + train_i)
        idx = np.flatnonzero(keep)
        if order == "trec":
            # trec_eval: score descending, then item id descending; icode follows string order
            score = run["score"].to_numpy(dtype=np.float64)
            keys = (-run_i[idx], -score[idx], run_u[idx])
        else:
            if "rank" not in run.columns:
                raise input_error(_source(run, "run"), "rank", "missing column (order 'rank')")
            rank = run["rank"].to_numpy(dtype=np.float64)
            keys = (idx, rank[idx], run_u[idx])
        order_ix = idx[np.lexsort(keys)]  # primary key last
        u_sorted = run_u[order_ix]
        group_start = np.r_[0, np.flatnonzero(np.diff(u_sorted)) + 1]
        sizes = np.diff(np.r_[group_start, u_sorted.size])
        pos = np.arange(u_sorted.size) - np.repeat(group_start, sizes)
        sel = pos < k
        top[row_of[u_sorted[sel]], pos[sel]] = run_i[order_ix[sel]]

    values = metrics_from_topn(top, relevant, cut, efd, epc, relevance_aware=relevance_aware)
    n_eval, n_m, n_c = eval_users.size, len(METRICS), cut.size
    seen = np.union1d(run_u, qrels_u)
    out = pd.DataFrame(
        {
            "user": pd.Series(np.repeat(np.asarray(user_ids[eval_users]), n_m * n_c), dtype="str"),
            "metric": pd.Series(np.tile(np.repeat(np.asarray(METRICS), n_c), n_eval), dtype="str"),
            "cutoff": np.tile(cut, n_m * n_eval),
            "value": values.transpose(2, 0, 1).reshape(-1) + 0.0,  # -0.0 -> 0.0
        }
    )
    out.attrs["users_seen"] = int(seen.size)
    out.attrs["not_evaluated"] = [str(u) for u in user_ids[np.setdiff1d(seen, eval_users)]]
    out.attrs["missing_from_run"] = [str(u) for u in
                                     user_ids[np.setdiff1d(eval_users, run_u)]]
    rel_pairs = qrels_u[is_rel] * n_items + qrels_i[is_rel]
    out.attrs["relevant_in_train"] = int(np.isin(
        rel_pairs, train_u * n_items + train_i).sum()) if train_u.size else 0
    return out


def not_evaluated_line(per_user: pd.DataFrame, qrels: str | Path, threshold: float,
                       most: int = 5) -> str | None:
    """One line on the users :func:`evaluate_run` left out for having no relevant item,
    ``"4 of 200 users of the run and qrels have no relevant item in QRELS (rating >= 4) and
    are not evaluated: u1, u2, u3, u4"`` (the first ``most`` ids), or None when it left out
    none."""
    left = list(per_user.attrs.get("not_evaluated", []))
    if not left:
        return None
    shown = first_few(left, most)
    seen = int(per_user.attrs.get("users_seen", len(left)))
    one = len(left) == 1
    return (f"{len(left)} of {seen} users of the run and qrels {'has' if one else 'have'} no "
            f"relevant item in {qrels} (rating >= {float(threshold):g}) and "
            f"{'is' if one else 'are'} not evaluated: {shown}")


def coverage_lines(missing: Sequence[str], in_train: int, run: str | Path, qrels: str | Path,
                   train: str | Path, n_users: int, most: int = 5) -> list[str]:
    """The lines that say what :func:`evaluate_run` scored in a way a reader may not expect:
    the ``missing`` evaluated users (of ``n_users``) without a line in ``run``, scored 0 on
    every metric, and the ``in_train`` relevant pairs of ``qrels`` also in ``train``, which
    cap recall. Empty when neither happened."""
    out = []
    if missing:
        shown = first_few(missing, most)
        one = len(missing) == 1
        out.append(f"{len(missing)} of {n_users} evaluated users {'has' if one else 'have'} no "
                   f"line in {run} and {'scores' if one else 'score'} 0 on every metric (as "
                   f"trec_eval -c scores them; without -c it leaves them out): {shown}")
    if in_train:
        out.append(f"{in_train} relevant (user, item) pair{'s' if in_train != 1 else ''} of "
                   f"{qrels} {'are' if in_train != 1 else 'is'} also in {train}: removed from "
                   f"the run's lists with the training pairs but still relevant, so never a "
                   f"hit (recall cannot reach 1 for those users)")
    return out


def write_per_user(df: pd.DataFrame, path: str | Path) -> None:
    """Write per-user metrics as CSV ``user,metric,cutoff,value`` with full-precision values.

    Why: the per-user values are the unit of every paired test, so they are stored losslessly
    (each float as its shortest round-trip ``repr``) for later ``dptune dp --runs`` analyses.
    """
    _require(df, ("user", "metric", "cutoff", "value"), "per-user table")
    out = df[["user", "metric", "cutoff", "value"]]
    value = [repr(float(v)) for v in out["value"].to_numpy(dtype=np.float64)]
    out = out.assign(value=value)
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)  # checked creatable before the work
        out.to_csv(path, index=False, lineterminator="\n")
    except OSError as err:
        raise input_error(path, None, f"cannot write file: {err.strerror or err}") from None
