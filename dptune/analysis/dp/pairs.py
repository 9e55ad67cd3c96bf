"""Pair sampling and the scopes of the DP analysis (Anelli et al., RecSys 2019, Table 5).

Scopes of one algorithm:

- ``"all"``: pairs among all configurations;
- ``"<h>=<v>"``: pairs among the configurations with ``h = v`` (they differ in the other
  hyperparameters), for each free hyperparameter ``h`` with more than one value and each value;
- ``"only:<h>"``: pairs that differ in ``h`` only, every other free hyperparameter equal.

Values in scope names are written canonically by :func:`format_value`. A scope with no pair is
left out. Every scope samples with its own seed, :func:`scope_seed` ``(seed, scope name)``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dptune.errors import check_int, input_error

__all__ = ["sample_pairs", "format_value", "scope_seed", "Scope", "scopes", "scope_pairs"]


def _unrank_colex(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Invert the colexicographic rank of unordered pairs ``i < j``: ``k = j (j - 1) / 2 + i``.

    ``j = floor((1 + sqrt(1 + 8 k)) / 2)`` (corrected by one step either way for rounding),
    ``i = k - j (j - 1) / 2``.
    """
    k = np.asarray(k, dtype=np.int64)
    j = np.floor((1.0 + np.sqrt(1.0 + 8.0 * k.astype(np.float64))) / 2.0).astype(np.int64)
    j = np.where(j * (j - 1) // 2 > k, j - 1, j)
    j = np.where((j + 1) * j // 2 <= k, j + 1, j)
    i = k - j * (j - 1) // 2
    return i, j


def sample_pairs(config_ids: np.ndarray, n_pairs: int = 25, seed: int = 0) -> np.ndarray:
    """Sample unordered pairs of distinct configurations uniformly without replacement.

    The ``m`` distinct ids are sorted, the ``N = m (m - 1) / 2`` pairs are ranked
    colexicographically (``rank(i, j) = j (j - 1) / 2 + i`` for positions ``i < j``), and
    ``min(n_pairs, N)`` ranks are drawn with ``numpy.random.default_rng(seed).choice(N, size,
    replace=False)`` and unranked, so the pairs are never all materialised (3,150 configurations
    give about 5 M pairs). Returns ``(P, 2)`` int64 rows ``(smaller id, larger id)`` in sampling
    order (row = ``pair_index``). When ``N <= n_pairs`` every pair is returned (in a seeded random
    order). The result depends on the set of ids, not on their order; duplicates are an error.
    """
    n_pairs = check_int(n_pairs, "dp", "n_pairs", 1)
    seed = check_int(seed, "dp", "seed", 0)
    raw = np.asarray(config_ids).ravel()
    ids = np.unique(raw)
    if ids.size != raw.size:
        raise input_error("dp", "config_ids", "contain duplicated configuration ids")
    m = ids.size
    total = m * (m - 1) // 2
    if total == 0:
        return np.zeros((0, 2), dtype=np.int64)
    rng = np.random.default_rng(seed)
    ranks = rng.choice(total, size=min(n_pairs, total), replace=False)
    i, j = _unrank_colex(ranks)
    return np.column_stack([ids[i], ids[j]]).astype(np.int64)


def format_value(value: Any) -> str:
    """Canonical text of a hyperparameter value in a scope name (``"<h>=<v>"``).

    Booleans -> ``true``/``false``; integers and integral floats (``10``, ``10.0``,
    ``np.int32(10)``) -> ``10``; other floats -> the shortest positional decimal that round-trips
    in the value's own precision (``numpy.format_float_positional(v, unique=True, trim="-")``:
    ``0.2``, ``0.00001221``, never an exponent); NaN -> ``nan``; anything else -> ``str(v)``.
    """
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if np.isnan(value):
            return "nan"
        if np.isinf(value):
            return "inf" if value > 0 else "-inf"
        if float(value).is_integer() and abs(float(value)) < 2.0**53:
            return str(int(value))
        if not isinstance(value, np.floating):
            value = np.float64(value)
        return np.format_float_positional(value, unique=True, trim="-")
    return str(value)


def scope_seed(seed: int, scope: str) -> int:
    """Seed of one scope: ``SeedSequence([seed, crc32(scope)])`` -> its first 63 bits.

    Deterministic across runs and platforms (``zlib.crc32`` of the UTF-8 scope name).
    """
    seed = check_int(seed, "dp", "seed", 0)
    state = np.random.SeedSequence([seed, zlib.crc32(scope.encode("utf-8"))]).generate_state(
        1, dtype=np.uint64
    )
    return int(state[0]) >> 1


def _value_sort_key(value: Any) -> tuple[int, float, str]:
    if isinstance(value, (bool, np.bool_)):
        return (1, float(value), "")
    if isinstance(value, (int, float, np.integer, np.floating)):
        return (0, float(value), "")
    return (2, 0.0, str(value))


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, (float, np.floating)) and bool(np.isnan(value)))


#: Types whose equal values always have the same :func:`format_value` text, so that a column's
#: texts can be computed once per distinct value (a ``Decimal`` or an object of another type
#: may equal another of a different text: those are formatted one by one).
_MEMO_TYPES = (bool, int, float, str, np.bool_, np.integer, np.floating)


def _texts(values: list[Any]) -> list[str | None]:
    """:func:`format_value` of each value, ``None`` for a missing one (:func:`_is_missing`).

    Each distinct value (by type and value) is formatted once: a column of 100,000
    configurations holds few distinct values, and formatting every element took seconds."""
    memo: dict[tuple[type, Any], str | None] = {}
    out: list[str | None] = []
    for v in values:
        if isinstance(v, _MEMO_TYPES):
            key = (type(v), v)
            t = memo.get(key, memo)
            if t is memo:
                t = memo[key] = None if _is_missing(v) else format_value(v)
            out.append(t)  # type: ignore[arg-type]
        else:
            out.append(None if _is_missing(v) else format_value(v))
    return out


def _sorted_values(column: pd.Series, texts: list[str | None] | None = None) -> list[Any]:
    """Distinct non-missing values of a column, numbers ascending, then other values by text.

    ``texts``: :func:`_texts` of the column, when already computed."""
    values = column.tolist()
    texts = _texts(values) if texts is None else texts
    seen: dict[str, Any] = {}
    for v, t in zip(values, texts, strict=True):
        if t is not None:
            seen.setdefault(t, v)
    return sorted(seen.values(), key=_value_sort_key)


def _only_layout(
    ids: np.ndarray, group: np.ndarray, rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The valid pairs of a one-at-a-time scope, counted without listing them.

    ``group`` ``(n, G)``: integer codes of the other hyperparameters' values, each column
    ordered as the values' texts are (so that rows compare as the tuples of texts do).
    Configurations are ordered by (group, rank of h's value, id) (``ids_o``). For position ``i``
    in a group of size ``s`` and ``end(i)`` = first position after ``i``'s value class, the
    valid partners of ``i`` are positions ``end(i) .. s - 1``; ``cnt(i) = s - end(i)``. Returns
    ``(ids_o, end, cnt)``; the scope has ``sum cnt`` pairs. Sorted and counted with array
    operations: a Python sort and scan of every configuration took seconds per scope on a grid
    of 100,000."""
    ids = np.asarray(ids, dtype=np.int64)
    rank = np.asarray(rank, dtype=np.int64)
    group = np.asarray(group, dtype=np.int64).reshape(len(ids), -1)
    n = len(ids)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return ids[:0], empty, empty.copy()
    # np.lexsort: the last key is the primary one
    keys = [ids, rank, *(group[:, c] for c in range(group.shape[1] - 1, -1, -1))]
    order = np.lexsort(keys)
    ids_o = ids[order]
    grp_o = group[order]
    rank_o = rank[order]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = np.any(grp_o[1:] != grp_o[:-1], axis=1)
    new_class = new_group.copy()
    new_class[1:] |= rank_o[1:] != rank_o[:-1]
    group_starts = np.flatnonzero(new_group)
    class_starts = np.flatnonzero(new_class)
    group_stop = np.append(group_starts[1:], n)[np.cumsum(new_group) - 1]
    end = np.append(class_starts[1:], n)[np.cumsum(new_class) - 1].astype(np.int64)
    cnt = (group_stop - end).astype(np.int64)
    return ids_o, end, cnt


def _sample_only_pairs(ids_o: np.ndarray, end: np.ndarray, cnt: np.ndarray, n_pairs: int,
                       seed: int) -> np.ndarray:
    """Sample pairs of a one-at-a-time scope (:func:`_only_layout`): pair ranks ``0 .. T - 1``
    (``T = sum cnt``) are drawn without replacement and unranked through the cumulative
    counts, so no candidate list is built."""
    cum = np.cumsum(cnt)
    total = int(cum[-1]) if len(cnt) else 0
    if total == 0:
        return np.zeros((0, 2), dtype=np.int64)
    rng = np.random.default_rng(seed)
    ranks = rng.choice(total, size=min(n_pairs, total), replace=False)
    i = np.searchsorted(cum, ranks, side="right")
    j = end[i] + (ranks - (cum[i] - cnt[i]))
    a, b = ids_o[i], ids_o[j]
    return np.column_stack([np.minimum(a, b), np.maximum(a, b)]).astype(np.int64)


@dataclass(frozen=True)
class Scope:
    """One scope of an algorithm: its ``name`` (``all``, ``<h>=<v>``, ``only:<h>``), ``kind``
    (``"all"``, ``"value"``, ``"only"``), ``hyperparameter`` and ``value`` (text; empty for
    ``all``), ``cap`` (the most pairs it takes: ``pairs`` for ``all``, ``value_pairs`` for the
    others), ``n_possible`` (how many pairs the grid has in it) and a sampler of its pairs."""

    name: str
    kind: str
    hyperparameter: str
    value: str
    cap: int
    n_possible: int
    _sample: Callable[[int], np.ndarray] = field(repr=False, compare=False)

    @property
    def sampled(self) -> bool:
        """Whether its pairs are a sample of the grid's (more pairs than the cap)."""
        return self.n_possible > self.cap

    @property
    def n_pairs(self) -> int:
        """How many pairs it takes: ``min(cap, n_possible)``."""
        return min(self.cap, self.n_possible)

    def pairs(self, repeat: int = 0, seed: int = 0) -> np.ndarray:
        """The scope's pairs ``(P, 2)`` for pair seed ``repeat`` (0: the tables' pairs, seed
        :func:`scope_seed` ``(seed, name)``; ``k >= 1``: the stability repeats, seed
        ``scope_seed(seed, "<name>|robust|<k>")``; a scope that takes every pair gives the same
        pairs under every seed)."""
        label = self.name if int(repeat) == 0 else f"{self.name}|robust|{int(repeat)}"
        return self._sample(scope_seed(seed, label))


def scopes(
    configs: pd.DataFrame, hyperparameters: Sequence[str], n_pairs: int = 25,
    value_pairs: int | None = None,
) -> list[Scope]:
    """Every scope of one algorithm with pairs, in generation order.

    ``"all"`` takes every pair up to ``n_pairs``, else a sample of ``n_pairs``; every other
    scope the same with ``value_pairs`` (``None`` = ``n_pairs``).

    Order: ``"all"``; then, if more than one hyperparameter of ``hyperparameters`` has more
    than one distinct value, for each such ``h``, ``"<h>=<v>"`` for its values in ascending
    order; then ``"only:<h>"`` for the same hyperparameters. Scope ``s`` samples with
    :func:`sample_pairs` (or, for ``only:``, the same uniform scheme over the valid pairs).
    Configurations whose ``h`` is missing (NaN) are left out of ``h``'s scopes. Scopes with no
    pair are omitted.
    """
    n_pairs = check_int(n_pairs, "dp", "n_pairs", 1)
    n_value = n_pairs if value_pairs is None else check_int(value_pairs, "dp", "value_pairs", 1)
    hps = list(hyperparameters)
    for col in ["config_id", *hps]:
        if col not in configs.columns:
            raise input_error("configs", col, "missing column")
    if len(set(hps)) != len(hps):
        raise input_error("configs", "hyperparameters", "listed more than once")
    ids_all = configs["config_id"].to_numpy()
    if pd.Series(ids_all).duplicated().any():
        raise input_error("configs", "config_id", "contains duplicated ids")
    ids_all = ids_all.astype(np.int64)

    out: list[Scope] = []

    def put(name: str, kind: str, h: str, v: str, cap: int, possible: int,
            sample: Callable[[int], np.ndarray]) -> None:
        if possible:
            out.append(Scope(name, kind, h, v, cap, int(possible), sample))

    m = len(np.unique(ids_all))
    put("all", "all", "", "", n_pairs, m * (m - 1) // 2,
        lambda seed: sample_pairs(ids_all, n_pairs, seed))
    if len(hps) <= 1:
        return out

    text = {h: _texts(configs[h].tolist()) for h in hps}
    varied: list[tuple[str, list[Any]]] = []
    for h in hps:
        values = _sorted_values(configs[h], text[h])
        if len(values) > 1:
            varied.append((h, values))
    if len(varied) <= 1:  # one hyperparameter varies: its only scope is scope all
        return out
    for h, values in varied:
        # the configurations of each text, found in one pass (not one scan of the column per
        # value: thousands of values times 100,000 configurations took a minute)
        col = [t if t is not None else "\0missing" for t in text[h]]
        members: dict[str, list[int]] = {}
        for x, t in enumerate(col):
            members.setdefault(t, []).append(x)
        for v in values:
            fv = format_value(v)
            sub = ids_all[np.asarray(members.get(fv, []), dtype=np.int64)]
            put(f"{h}={fv}", "value", h, fv, n_value,
                len(sub) * (len(sub) - 1) // 2,
                lambda seed, sub=sub: sample_pairs(sub, n_value, seed))
    # each hyperparameter's texts as integer codes in the order of the texts (str(None) for
    # a missing value), for the one-at-a-time scopes' sort
    codes: dict[str, np.ndarray] = {}
    for o in hps:
        strs = np.empty(len(ids_all), dtype=object)
        strs[:] = [str(t) for t in text[o]]
        codes[o] = np.unique(strs, return_inverse=True)[1].astype(np.int64).ravel() \
            if len(strs) else np.zeros(0, dtype=np.int64)
    for h, values in varied:
        rank_of = {format_value(v): r for r, v in enumerate(values)}
        keep = np.asarray([x for x, t in enumerate(text[h]) if t is not None], dtype=np.int64)
        others = [o for o in hps if o != h]
        group = np.column_stack([codes[o][keep] for o in others])
        rank = np.array([rank_of[text[h][x]] for x in keep], dtype=np.int64)
        ids_o, end, cnt = _only_layout(ids_all[keep], group, rank)
        put(f"only:{h}", "only", h, "", n_value, int(cnt.sum()),
            lambda seed, ids_o=ids_o, end=end, cnt=cnt: _sample_only_pairs(
                ids_o, end, cnt, n_value, seed))
    return out


def scope_pairs(
    configs: pd.DataFrame, hyperparameters: Sequence[str], n_pairs: int = 25, seed: int = 0,
    value_pairs: int | None = None,
) -> dict[str, np.ndarray]:
    """The pairs ``(P, 2)`` of every scope of :func:`scopes`, by name in generation order, each
    drawn with the seed :func:`scope_seed` ``(seed, scope name)``."""
    seed = check_int(seed, "dp", "seed", 0)
    return {s.name: s.pairs(0, seed) for s in scopes(configs, hyperparameters, n_pairs,
                                                     value_pairs)}
