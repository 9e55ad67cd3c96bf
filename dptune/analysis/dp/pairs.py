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
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dptune.errors import check_int, input_error

__all__ = ["sample_pairs", "format_value", "scope_seed", "scope_pairs"]


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


def _sorted_values(column: pd.Series) -> list[Any]:
    """Distinct non-missing values of a column, numbers ascending, then other values by text."""
    seen: dict[str, Any] = {}
    for v in column.tolist():
        if not _is_missing(v):
            seen.setdefault(format_value(v), v)
    return sorted(seen.values(), key=_value_sort_key)


def _sample_only_pairs(
    ids: np.ndarray, group: list[tuple[str, ...]], rank: np.ndarray, n_pairs: int, seed: int
) -> np.ndarray:
    """Sample pairs of configurations in the same group whose values of ``h`` differ.

    Configurations are ordered by (group, rank of h's value, id). For position ``i`` in a group
    of size ``s`` and ``end(i)`` = first position after ``i``'s value class, the valid partners
    of ``i`` are positions ``end(i) .. s - 1``; ``cnt(i) = s - end(i)``. Pair ranks ``0 .. T - 1``
    (``T = sum cnt``) are drawn without replacement and unranked through the cumulative counts,
    so no candidate list is built.
    """
    order = sorted(range(len(ids)), key=lambda x: (group[x], int(rank[x]), int(ids[x])))
    ids_o = ids[order]
    grp_o = [group[x] for x in order]
    rank_o = rank[order]
    n = len(order)
    end = np.zeros(n, dtype=np.int64)
    cnt = np.zeros(n, dtype=np.int64)
    start = 0
    while start < n:
        stop = start
        while stop < n and grp_o[stop] == grp_o[start]:
            stop += 1
        pos = start
        while pos < stop:
            cls_end = pos
            while cls_end < stop and rank_o[cls_end] == rank_o[pos]:
                cls_end += 1
            end[pos:cls_end] = cls_end
            cnt[pos:cls_end] = stop - cls_end
            pos = cls_end
        start = stop
    cum = np.cumsum(cnt)
    total = int(cum[-1]) if n else 0
    if total == 0:
        return np.zeros((0, 2), dtype=np.int64)
    rng = np.random.default_rng(seed)
    ranks = rng.choice(total, size=min(n_pairs, total), replace=False)
    i = np.searchsorted(cum, ranks, side="right")
    j = end[i] + (ranks - (cum[i] - cnt[i]))
    a, b = ids_o[i], ids_o[j]
    return np.column_stack([np.minimum(a, b), np.maximum(a, b)]).astype(np.int64)


def scope_pairs(
    configs: pd.DataFrame, hyperparameters: Sequence[str], n_pairs: int = 25, seed: int = 0,
    value_pairs: int | None = None,
) -> dict[str, np.ndarray]:
    """Sampled pairs ``(P, 2)`` for every scope of one algorithm, in generation order.

    ``"all"`` takes every pair up to ``n_pairs``, else a sample of ``n_pairs``; every other
    scope the same with ``value_pairs`` (``None`` = ``n_pairs``).

    Order: ``"all"``; then, if there is more than one free hyperparameter, for each ``h`` in
    ``hyperparameters`` with more than one distinct value, ``"<h>=<v>"`` for its values in
    ascending order; then ``"only:<h>"`` for the same hyperparameters. Scope ``s`` samples with
    :func:`sample_pairs` (or, for ``only:``, the same uniform scheme over the valid pairs) and the
    seed :func:`scope_seed` ``(seed, s)``. Configurations whose ``h`` is missing (NaN) are left
    out of ``h``'s scopes. Scopes with no pair are omitted.
    """
    n_pairs = check_int(n_pairs, "dp", "n_pairs", 1)
    n_value = n_pairs if value_pairs is None else check_int(value_pairs, "dp", "value_pairs", 1)
    n_value = n_pairs if value_pairs is None else check_int(value_pairs, "dp", "value_pairs", 1)
    seed = check_int(seed, "dp", "seed", 0)
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

    out: dict[str, np.ndarray] = {}

    def put(name: str, pairs: np.ndarray) -> None:
        if len(pairs):
            out[name] = pairs

    put("all", sample_pairs(ids_all, n_pairs, scope_seed(seed, "all")))
    if len(hps) <= 1:
        return out

    text = {
        h: [format_value(v) if not _is_missing(v) else None for v in configs[h].tolist()]
        for h in hps
    }
    varied: list[tuple[str, list[Any]]] = []
    for h in hps:
        values = _sorted_values(configs[h])
        if len(values) > 1:
            varied.append((h, values))
    for h, values in varied:
        col = np.array([t if t is not None else "\0missing" for t in text[h]], dtype=object)
        for v in values:
            name = f"{h}={format_value(v)}"
            put(
                name, sample_pairs(ids_all[col == format_value(v)], n_value, scope_seed(seed, name))
            )
    for h, values in varied:
        name = f"only:{h}"
        rank_of = {format_value(v): r for r, v in enumerate(values)}
        keep = [x for x, t in enumerate(text[h]) if t is not None]
        others = [o for o in hps if o != h]
        group = [tuple(str(text[o][x]) for o in others) for x in keep]
        rank = np.array([rank_of[text[h][x]] for x in keep], dtype=np.int64)
        put(name, _sample_only_pairs(ids_all[keep], group, rank, n_value, scope_seed(seed, name)))
    return out
