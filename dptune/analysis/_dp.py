"""Discriminative power (DP) of metrics over hyperparameter grids (Anelli et al., RecSys 2019).

Method (``SPEC.md`` section 6): for one algorithm, one metric@N and one validation fold, sample
P configuration pairs (the same pairs for every metric and fold), compute one paired two-sided
p-value per pair over the fold's users, sort the P p-values in decreasing order (the fold's
p-value curve); average the curves position by position over the folds; DP is the sum of the
averaged curve (lower = more discriminative). The position-wise standard deviation across folds
(``ddof=1``) gives the bands and ``DP +- sd``.

Scopes (paper Table 5 and the "one at a time" analysis):

- ``"all"``: pairs among all configurations of the algorithm;
- ``"<h>=<v>"``: pairs among the configurations with ``h = v`` (they differ in the other
  hyperparameters), for each free hyperparameter ``h`` with more than one value and each value;
- ``"only:<h>"``: pairs that differ in ``h`` only, every other free hyperparameter equal.

Values in scope names are written canonically by :func:`format_value`. A scope with no pair
(e.g. one configuration) is left out. Every scope samples with its own seed,
:func:`scope_seed` ``(seed, scope name)``.

Beyond the paper (``SPEC.md`` section 7): Sakai-style DP (fraction of pairs with ``p < alpha``,
optionally after Holm / Benjamini-Hochberg), a bootstrap over users and pairs giving a
confidence interval for DP and the probability that one metric is more discriminative than
another (:func:`bootstrap_dp`, :func:`prob_more_discriminative`), and the noise floor of A/A
pairs (:func:`noise_floor`). All p-values come from :mod:`dptune.stats`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from dptune.analysis import _stats as stats
from dptune.errors import input_error
from dptune.store._store import FoldBuffer
from dptune.vocab import CSV_FLOAT, METRICS, fold_key, metric_key

__all__ = [
    "METRIC_ORDER",
    "DPResult",
    "Analysis",
    "ResultStoreLike",
    "sample_pairs",
    "pvalue_curve",
    "summarize_curves",
    "format_value",
    "scope_seed",
    "scope_pairs",
    "analyze",
    "bootstrap_dp",
    "percentile_ci",
    "prob_more_discriminative",
    "noise_floor",
]

#: Order of metrics in every output table (:data:`dptune.vocab.METRICS`).
METRIC_ORDER: tuple[str, ...] = METRICS

PAIRS_COLUMNS = ["algorithm", "scope", "pair_index", "config_a", "config_b", "seed"]
PVALUES_COLUMNS = [
    "algorithm",
    "scope",
    "metric",
    "cutoff",
    "fold",
    "pair_index",
    "p",
    "n_users",
]
DP_COLUMNS = [
    "algorithm",
    "scope",
    "metric",
    "cutoff",
    "dp",
    "dp_plus_sd",
    "dp_minus_sd",
    "n_pairs",
    "n_folds",
    "sakai",
    "sakai_sd",
]
CURVES_COLUMNS = ["algorithm", "scope", "metric", "cutoff", "position", "mean", "sd"]
RANKING_COLUMNS = ["algorithm", "scope", "cutoff", "metric_a", "metric_b", "p_a_better"]

_CSV_FLOAT = CSV_FLOAT


# --------------------------------------------------------------------------------------------
# Validation helpers


def _int_param(value: Any, source: str, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise input_error(source, name, f"must be an integer >= {minimum}, got {value!r}")
    return int(value)


# --------------------------------------------------------------------------------------------
# Pair sampling


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
    n_pairs = _int_param(n_pairs, "dp", "n_pairs", 1)
    seed = _int_param(seed, "dp", "seed", 0)
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
    seed = _int_param(seed, "dp", "seed", 0)
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
    configs: pd.DataFrame, hyperparameters: Sequence[str], n_pairs: int = 25, seed: int = 0
) -> dict[str, np.ndarray]:
    """Sampled pairs ``(P, 2)`` for every scope of one algorithm, in generation order.

    Order: ``"all"``; then, if there is more than one free hyperparameter, for each ``h`` in
    ``hyperparameters`` with more than one distinct value, ``"<h>=<v>"`` for its values in
    ascending order; then ``"only:<h>"`` for the same hyperparameters. Scope ``s`` samples with
    :func:`sample_pairs` (or, for ``only:``, the same uniform scheme over the valid pairs) and the
    seed :func:`scope_seed` ``(seed, s)``. Configurations whose ``h`` is missing (NaN) are left
    out of ``h``'s scopes. Scopes with no pair are omitted.
    """
    n_pairs = _int_param(n_pairs, "dp", "n_pairs", 1)
    seed = _int_param(seed, "dp", "seed", 0)
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
                name, sample_pairs(ids_all[col == format_value(v)], n_pairs, scope_seed(seed, name))
            )
    for h, values in varied:
        name = f"only:{h}"
        rank_of = {format_value(v): r for r, v in enumerate(values)}
        keep = [x for x, t in enumerate(text[h]) if t is not None]
        others = [o for o in hps if o != h]
        group = [tuple(str(text[o][x]) for o in others) for x in keep]
        rank = np.array([rank_of[text[h][x]] for x in keep], dtype=np.int64)
        put(name, _sample_only_pairs(ids_all[keep], group, rank, n_pairs, scope_seed(seed, name)))
    return out


# --------------------------------------------------------------------------------------------
# Curves and DP


def pvalue_curve(p: np.ndarray) -> np.ndarray:
    """The p-value curve of one fold: the p-values sorted in decreasing order, ``p_(1) >= ...``."""
    arr = np.asarray(p, dtype=np.float64).ravel()
    return np.sort(arr)[::-1].copy()


@dataclass(frozen=True)
class DPResult:
    """Averaged p-value curve of one (algorithm, scope, metric@N) and its DP values."""

    mean_curve: np.ndarray
    sd_curve: np.ndarray
    dp: float
    dp_plus_sd: float
    dp_minus_sd: float
    n_pairs: int
    n_folds: int


def summarize_curves(curves: np.ndarray) -> DPResult:
    """Average per-fold p-value curves position by position (Anelli et al. sections 3-4).

    ``curves`` is ``(n_folds, P)`` (a 1-D array is one fold); each row is sorted decreasingly
    first (idempotent for curves from :func:`pvalue_curve`). With ``c[f, i]`` the i-th largest
    p-value of fold f: ``mean_i = (1/F) sum_f c[f, i]``, ``sd_i`` the sample sd over folds
    (``ddof=1``; 0 when F = 1), ``DP = sum_i mean_i``, ``DP+sd = sum_i min(mean_i + sd_i, 1)``,
    ``DP-sd = sum_i max(mean_i - sd_i, 0)`` (the band stays in the range of a p-value, so
    ``DP+sd <= P``; issue 13).
    """
    arr = np.asarray(curves, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise input_error("dp", "curves", f"expected a (folds, pairs) array, got shape {arr.shape}")
    arr = -np.sort(-arr, axis=1)
    n_folds, n_pairs = arr.shape
    mean = arr.mean(axis=0)
    sd = arr.std(axis=0, ddof=1) if n_folds > 1 else np.zeros(n_pairs)
    upper, lower = np.minimum(mean + sd, 1.0), np.maximum(mean - sd, 0.0)  # p-values: [0, 1]
    return DPResult(
        mean_curve=mean,
        sd_curve=sd,
        dp=float(mean.sum()),
        dp_plus_sd=float(upper.sum()),
        dp_minus_sd=float(lower.sum()),
        n_pairs=int(n_pairs),
        n_folds=int(n_folds),
    )


# --------------------------------------------------------------------------------------------
# Uncertainty of DP: bootstrap over users (within folds) and over pairs


def _pair_draws(n_boot: int, seed: int, n_pairs: int, resample_pairs: bool) -> np.ndarray:
    """Pair indices ``(B, P)`` of every replicate (identity rows when pairs are not resampled)."""
    if not resample_pairs:
        return np.tile(np.arange(n_pairs, dtype=np.int64), (n_boot, 1))
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    return rng.integers(0, n_pairs, size=(n_boot, n_pairs))


def _fold_rng(seed: int, fold_index: int) -> np.random.Generator:
    """Generator of the user resamples of fold ``fold_index`` (independent of other folds)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(fold_index + 1,)))


def _fold_replicate_sums(
    d: np.ndarray,
    pair_idx: np.ndarray,
    rng: np.random.Generator,
    test: str,
    n_resamples: int,
) -> np.ndarray:
    """Per replicate ``r``, ``sum_i p_r[pair_idx[r, i]]`` for one fold; ``d`` is ``(M, P, n)``.

    ``p_r`` are the p-values of the pairs on the users resampled (with replacement) for
    replicate ``r``; returns ``(M, B)``.
    """
    n_metrics, n_pairs, n = d.shape
    n_boot = pair_idx.shape[0]
    out = np.zeros((n_metrics, n_boot), dtype=np.float64)
    flat = d.reshape(n_metrics * n_pairs, n)
    if n < 2:
        out[:] = float(n_pairs)
        return out
    r0 = 0
    for idx in stats.resample_index_chunks(rng, n, n_boot):
        k = idx.shape[0]
        if test == "t":
            p = stats.resampled_ttest_pvalues(flat, stats.index_counts(idx, n))  # (M*P, k)
        else:
            p = np.column_stack(
                [
                    stats.pvalues_from_differences(flat[:, idx[r]], test, n_resamples, seed=r0 + r)
                    for r in range(k)
                ]
            )
        p = p.reshape(n_metrics, n_pairs, k)
        sel = pair_idx[r0 : r0 + k].T[None, :, :]  # (1, P, k)
        out[:, r0 : r0 + k] = np.take_along_axis(p, np.broadcast_to(sel, p.shape), axis=1).sum(1)
        r0 += k
    return out


def bootstrap_dp(
    values_a: Sequence[np.ndarray],
    values_b: Sequence[np.ndarray],
    n_boot: int = 1000,
    seed: int = 0,
    test: str = "t",
    resample_pairs: bool = True,
    n_resamples: int = 1000,
) -> np.ndarray:
    """Bootstrap replicates of DP: resample users within each fold and the P pairs.

    ``values_a[f]``, ``values_b[f]`` hold fold ``f``'s per-user values of the two systems of each
    pair: ``(P, n_f)``, or ``(M, P, n_f)`` for M metrics at once. Replicate ``r`` draws one set of
    pair indices ``q_r`` (``P`` draws with replacement, shared by all folds, as the pairs are) and
    for every fold one resample ``u_{r,f}`` of its ``n_f`` users (with replacement); then

    ``DP*_r = (1/F) sum_f sum_i p(q_ri; u_{r,f})``

    which is the sum of the position-wise averaged sorted curves (a sum does not depend on the
    order). The draws depend only on ``(seed, n_boot, P, n_f)``: calling this for several metrics
    with the same seed uses the same resampled users and pairs, so replicates are paired across
    metrics (see :func:`prob_more_discriminative`). ``test="t"`` is vectorised through
    :func:`dptune.analysis._stats.resampled_ttest_pvalues`; other tests loop over replicates (slow).
    Returns ``(n_boot,)`` or ``(M, n_boot)``.
    """
    n_boot = _int_param(n_boot, "dp", "n_boot", 1)
    seed = _int_param(seed, "dp", "seed", 0)
    stats.check_test(test, "dp")
    if len(values_a) != len(values_b) or len(values_a) == 0:
        raise input_error("dp", "values", "need the same, non-zero number of folds for a and b")
    diffs = []
    for a, b in zip(values_a, values_b, strict=True):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape or a.ndim not in (2, 3):
            raise input_error(
                "dp", "values", f"fold arrays must match and be 2-D or 3-D: {a.shape} vs {b.shape}"
            )
        diffs.append(a - b)
    squeeze = diffs[0].ndim == 2
    diffs = [x[None] if x.ndim == 2 else x for x in diffs]
    lead = {x.shape[:2] for x in diffs}
    if len(lead) != 1:
        raise input_error("dp", "values", f"every fold needs the same (metrics, pairs): {lead}")
    n_metrics, n_pairs = diffs[0].shape[:2]
    if n_pairs == 0:
        raise input_error("dp", "values", "no pairs")
    pair_idx = _pair_draws(n_boot, seed, n_pairs, resample_pairs)
    total = np.zeros((n_metrics, n_boot), dtype=np.float64)
    for f, d in enumerate(diffs):
        total += _fold_replicate_sums(d, pair_idx, _fold_rng(seed, f), test, n_resamples)
    total /= len(diffs)
    return total[0] if squeeze else total


def percentile_ci(replicates: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval: the ``(1-level)/2`` and ``(1+level)/2`` quantiles
    (``numpy.quantile``, linear interpolation) of the replicates."""
    reps = np.asarray(replicates, dtype=np.float64).ravel()
    if reps.size == 0 or not 0.0 < level < 1.0:
        raise input_error("dp", "replicates", "need replicates and a level in (0, 1)")
    lo, hi = np.quantile(reps, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(lo), float(hi)


def prob_more_discriminative(dp_reps_a: np.ndarray, dp_reps_b: np.ndarray) -> float:
    """Bootstrap probability that metric A is more discriminative than B.

    ``P(A better) = (1/B) #{r : DP*_A,r < DP*_B,r}`` over paired replicates (same resampled users
    and pairs; lower DP = more discriminative). Ties count as "not better", so
    ``P(A better) + P(B better) <= 1``.
    """
    a = np.asarray(dp_reps_a, dtype=np.float64).ravel()
    b = np.asarray(dp_reps_b, dtype=np.float64).ravel()
    if a.shape != b.shape or a.size == 0:
        raise input_error("dp", "replicates", f"need paired replicates: {a.shape} vs {b.shape}")
    return float(np.mean(a < b))


# --------------------------------------------------------------------------------------------
# Noise floor


def noise_floor(values_by_seed: np.ndarray, test: str = "t") -> np.ndarray:
    """p-values of all A/A pairs of one configuration trained with S seeds.

    ``values_by_seed`` is ``(S, n_users)``; pair ``(s, t)``, ``s < t``, in lexicographic order
    ``(0,1), (0,2), ..., (S-2, S-1)``, is tested with :func:`dptune.analysis._stats.paired_pvalues`
    (default: paired t-test). Returns ``S (S - 1) / 2`` p-values, the "no real difference"
    sample from which the caller builds the noise-floor curve (:func:`pvalue_curve`).
    """
    v = np.asarray(values_by_seed, dtype=np.float64)
    if v.ndim != 2:
        raise input_error("dp", "values_by_seed", f"expected (seeds, users), got shape {v.shape}")
    s_idx, t_idx = np.triu_indices(v.shape[0], k=1)
    return stats.paired_pvalues(v[s_idx], v[t_idx], test=test)


# --------------------------------------------------------------------------------------------
# Whole analysis over a result store


class ResultStoreLike(Protocol):
    """What :func:`analyze` needs from a result store (``dptune.store._store.ResultStore``)."""

    def algorithms(self) -> list[str]: ...
    def configs(self, algorithm: str) -> pd.DataFrame: ...
    def hyperparameters(self, algorithm: str) -> list[str]: ...
    def folds(self, algorithm: str) -> list[str]: ...
    def metric_cutoffs(self, algorithm: str) -> list[tuple[str, int]]: ...
    def read_matrix(
        self, algorithm: str, metric: str, cutoff: int, fold: str, config_ids: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass
class Analysis:
    """Result of :func:`analyze`: long tables, sorted by (algorithm, scope, metric, cutoff, ...).

    Algorithms follow the store's order, scopes the generation order of :func:`scope_pairs`,
    metrics :data:`METRIC_ORDER`, cutoffs ascending, folds numerically.

    - ``pairs``: ``algorithm, scope, pair_index, config_a, config_b, seed`` (seed of the scope).
    - ``pvalues``: ``algorithm, scope, metric, cutoff, fold, pair_index, p, n_users`` -- raw,
      uncorrected p of the pair on the fold and the number of users it was computed on.
    - ``dp``: ``algorithm, scope, metric, cutoff, dp, dp_plus_sd, dp_minus_sd, n_pairs, n_folds,
      sakai, sakai_sd`` [``, dp_ci_low, dp_ci_high``]``, test, correction, alpha``.
    - ``curves``: ``algorithm, scope, metric, cutoff, position, mean, sd``; ``position`` 0 is the
      largest averaged p-value.
    - ``metric_ranking`` (bootstrap only, scope ``all``): ``algorithm, scope, cutoff, metric_a,
      metric_b, p_a_better`` for every ordered pair of metrics at the same cutoff.
    - ``replicates``: bootstrap DP replicates per ``(algorithm, scope, metric, cutoff)``.
    """

    pairs: pd.DataFrame
    pvalues: pd.DataFrame
    dp: pd.DataFrame
    curves: pd.DataFrame
    metric_ranking: pd.DataFrame | None = None
    replicates: dict[tuple[str, str, str, int], np.ndarray] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def tables(self) -> dict[str, pd.DataFrame]:
        """File name -> table, as written by :meth:`write_csv`."""
        out = {
            "pairs.csv": self.pairs,
            "pvalues.csv": self.pvalues,
            "dp.csv": self.dp,
            "curves.csv": self.curves,
        }
        if self.metric_ranking is not None:
            out["metric_ranking.csv"] = self.metric_ranking
        return out

    def write_csv(self, out_dir: str | Path) -> list[Path]:
        """Write pairs.csv, pvalues.csv, dp.csv, curves.csv (and metric_ranking.csv after a
        bootstrap) into ``out_dir``; floats as ``%.10g``, ``\\n`` line ends, no index, so a
        re-run writes identical bytes."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name, table in self.tables().items():
            path = out / name
            table.to_csv(path, index=False, float_format=_CSV_FLOAT, lineterminator="\n")
            written.append(path)
        return written


def _metric_key(mc: tuple[str, int]) -> tuple[int, str, int]:
    return metric_key(*mc)


def _read_pair_values(
    read: Any,
    algorithm: str,
    metric: str,
    cutoff: int,
    fold: str,
    ids: np.ndarray,
    pairs: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Read one fold's slice for the scope's configurations; return (users, a, b).

    ``read(metric, cutoff, ids)`` has the contract of ``store.read_matrix`` on that fold.
    """
    users, values = read(metric, cutoff, ids)
    values = np.asarray(values, dtype=np.float64)
    users = np.asarray(users)
    if values.ndim != 2 or values.shape != (len(ids), len(users)):
        raise input_error(
            "store",
            f"{algorithm}/{metric}@{cutoff}/fold {fold}",
            f"read_matrix returned values of shape {values.shape}, expected "
            f"({len(ids)}, {len(users)})",
        )
    rows = np.searchsorted(ids, pairs)
    return users, values[rows[:, 0]], values[rows[:, 1]]


def _fold_reader(
    store: ResultStoreLike,
    algorithm: str,
    fold: str,
    ids: np.ndarray,
    mcs: list[tuple[str, int]],
    buffer: Any = None,
) -> Any:
    """``read(metric, cutoff, ids)`` for one fold (``buffer``: a reusable
    :class:`dptune.store._store.FoldBuffer` for stores with ``read_fold``).

    A store with a batched ``read_fold(algorithm, fold, config_ids, metric_cutoffs)`` (the
    :class:`dptune.store._store.ResultStore`) is read once per fold, every configuration any scope
    needs and every metric@N, and the scopes are served from memory; any other store is asked
    ``read_matrix`` once per (scope, metric@N), as the protocol promises.
    """
    batched = getattr(store, "read_fold", None)
    if callable(batched):
        block = batched(algorithm, fold, ids, mcs,
                        **({"buffer": buffer} if buffer is not None else {}))
        return block.matrix

    def read(metric: str, cutoff: int, scope_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return store.read_matrix(algorithm, metric, cutoff, fold, scope_ids)

    return read


def analyze(
    store: ResultStoreLike,
    n_pairs: int = 25,
    seed: int = 0,
    test: str = "t",
    alpha: float = 0.05,
    correction: str | None = None,
    n_resamples: int = 1000,
    bootstrap: int = 0,
    *,
    algorithms: Iterable[str] | None = None,
    progress: bool = False,
    fold_hooks: Mapping[str, Any] | None = None,
) -> Analysis:
    """DP of every metric@N for every algorithm and scope of a result store.

    For each algorithm, scope (:func:`scope_pairs`), metric@N and validation fold, the slice of
    the scope's configurations is read (``store.read_matrix``: users present for all of them,
    an inner join), the P pairs are tested (:func:`dptune.analysis._stats.paired_pvalues`, ``test``; the
    resampling tests use the seed :func:`scope_seed` ``(seed, "<scope>|fold=<fold>")``, the same
    for every metric), the p-values sorted into the fold's curve; :func:`summarize_curves` over
    the folds gives DP, DP+-sd and the averaged curve. Sakai DP: per fold the fraction of pairs
    with (``correction``-adjusted) ``p < alpha``, averaged over folds (``sakai``) with its sd
    (``ddof=1``, 0 for one fold). With ``bootstrap = B > 0``, :func:`bootstrap_dp` (same draws
    for every metric of a scope, seed :func:`scope_seed` ``(seed, "<scope>|bootstrap")``) adds
    ``dp_ci_low, dp_ci_high`` (95% percentile interval) and, for scope ``all``, the
    ``metric_ranking`` table (:func:`prob_more_discriminative`). Fold ``"test"`` is never used.

    Reading: folds are the outer loop. A store with ``read_fold`` (``dptune.store._store.ResultStore``)
    is read once per (algorithm, fold): every configuration that any scope needs, every
    metric@N, one pass over the parts; each scope then takes its rows and inner-joins its users
    in memory (exactly what ``read_matrix`` would return). Memory is bounded by that one fold
    (float32), plus, with a bootstrap, one fold's differences of all metrics of a scope. Other
    stores are asked ``read_matrix`` per (scope, fold, metric@N). Results do not depend on the
    path taken.

    BLAS is held to one thread meanwhile: the resampling tests make many tiny matrix products,
    which a multi-threaded BLAS slows down (7-10x on a loaded 2-core machine, see
    ``docs/performance.md``); the Parquet reader threads are not affected. ``progress`` shows
    a bar ((algorithm, fold) pairs done / total, ETA) on stderr: the full ML-1M store takes
    half a minute. ``fold_hooks``: algorithm -> an object with ``ids`` (configurations it needs,
    added to the fold read) and ``add_fold(fold_index, read)``, called with each validation
    fold's reader (the robust DP, :class:`dptune.analysis._robust_pass.RobustPass`).
    """
    n_pairs = _int_param(n_pairs, "analysis", "n_pairs", 1)
    seed = _int_param(seed, "analysis", "seed", 0)
    n_resamples = _int_param(n_resamples, "analysis", "n_resamples", 1)
    bootstrap = _int_param(bootstrap, "analysis", "bootstrap", 0)
    stats.check_test(test, "analysis")
    try:
        alpha = float(alpha)
    except (TypeError, ValueError):
        raise input_error("analysis", "alpha", f"must be a number, got {alpha!r}") from None
    if not 0.0 < alpha < 1.0:
        raise input_error("analysis", "alpha", f"must be in (0, 1), got {alpha}")
    correction = None if correction in (None, "none") else correction
    if correction not in (None, "holm", "bh"):
        raise input_error(
            "analysis",
            "correction",
            f"unknown correction {correction!r}; choose one of none, holm, bh",
        )

    algs = list(store.algorithms()) if algorithms is None else list(algorithms)
    n_folds = sum(sum(str(f) != "test" for f in store.folds(a)) for a in algs)
    with threadpool_limits(limits=1, user_api="blas"), tqdm(
        total=n_folds, desc="analysis", unit="fold", disable=not progress, dynamic_ncols=True
    ) as bar:
        return _analyze_algorithms(store, algs, n_pairs, seed, test, alpha, correction,
                                   n_resamples, bootstrap, FoldBuffer(), bar, fold_hooks or {})


def _ticking(items: Sequence[Any], bar: Any) -> Any:
    """Yield ``items``, advancing ``bar`` by one after each item's work is done."""
    for item in items:
        yield item
        bar.update(1)


def _analyze_algorithms(
    store: ResultStoreLike,
    algs: list[str],
    n_pairs: int,
    seed: int,
    test: str,
    alpha: float,
    correction: str | None,
    n_resamples: int,
    bootstrap: int,
    buffer: FoldBuffer,
    bar: Any,
    fold_hooks: Mapping[str, Any],
) -> Analysis:
    """The loop of :func:`analyze` over algorithms and folds (arguments validated; ``buffer``
    holds one fold's values, reused by every (algorithm, fold) read)."""
    pair_rows: list[tuple] = []
    pv_parts: list[pd.DataFrame] = []
    dp_rows: list[dict[str, Any]] = []
    curve_parts: list[pd.DataFrame] = []
    rank_rows: list[tuple] = []
    replicates: dict[tuple[str, str, str, int], np.ndarray] = {}
    for alg in algs:
        configs = store.configs(alg)
        hps = list(store.hyperparameters(alg))
        folds = sorted((str(f) for f in store.folds(alg) if str(f) != "test"), key=fold_key)
        if not folds:
            raise input_error("store", f"{alg}: folds", "no validation folds")
        mcs = sorted({(str(m), int(c)) for m, c in store.metric_cutoffs(alg)}, key=_metric_key)
        scopes = scope_pairs(configs, hps, n_pairs, seed)
        # per-scope state; folds are the outer loop so that each fold is read once for every
        # scope (memory: one fold of the configurations any scope needs)
        state: dict[str, dict[str, Any]] = {}
        for scope, pairs in scopes.items():
            s_seed = scope_seed(seed, scope)
            n_p = len(pairs)
            pair_rows.extend(
                (alg, scope, i, int(pairs[i, 0]), int(pairs[i, 1]), s_seed) for i in range(n_p)
            )
            b_seed = scope_seed(seed, f"{scope}|bootstrap")
            state[scope] = {
                "ids": np.unique(pairs),
                "curves": {mc: np.zeros((len(folds), n_p)) for mc in mcs},
                "sakai": {mc: np.zeros(len(folds)) for mc in mcs},
                "boot_sums": {mc: np.zeros(bootstrap) for mc in mcs},
                "b_seed": b_seed,
                "pair_idx": _pair_draws(bootstrap, b_seed, n_p, True) if bootstrap else None,
                "pv": [],
            }
        all_ids = (
            np.unique(np.concatenate([st["ids"] for st in state.values()]))
            if state
            else np.zeros(0, dtype=np.int64)
        )
        hook = fold_hooks.get(alg)  # e.g. the robust DP: fed from the same fold read
        if hook is not None:
            all_ids = np.union1d(all_ids, hook.ids).astype(np.int64)
        for f_i, fold in enumerate(_ticking(folds, bar)):
            if not state:
                break
            read = None  # drop the previous fold's slice before reading the next one
            read = _fold_reader(store, alg, fold, all_ids, mcs, buffer)
            if hook is not None:
                hook.add_fold(f_i, read)
            for scope, pairs in scopes.items():
                st = state[scope]
                ids = st["ids"]
                n_p = len(pairs)
                t_seed = scope_seed(seed, f"{scope}|fold={fold}")
                fold_diffs: dict[bytes, list[tuple[tuple[str, int], np.ndarray]]] = {}
                for mc in mcs:
                    metric, cutoff = mc
                    users, a, b = _read_pair_values(read, alg, metric, cutoff, fold, ids, pairs)
                    p = stats.paired_pvalues(a, b, test=test, n_resamples=n_resamples, seed=t_seed)
                    st["pv"].append((metric, cutoff, fold, p, len(users)))
                    st["curves"][mc][f_i] = pvalue_curve(p)
                    st["sakai"][mc][f_i] = stats.sakai_dp(stats.adjust(p, correction), alpha)
                    if bootstrap:
                        key = np.ascontiguousarray(users).tobytes() + str(len(users)).encode()
                        fold_diffs.setdefault(key, []).append((mc, a - b))
                for group in fold_diffs.values():
                    stack = np.stack([d for _, d in group])
                    sums = _fold_replicate_sums(
                        stack, st["pair_idx"], _fold_rng(st["b_seed"], f_i), test, n_resamples
                    )
                    for (mc, _), row in zip(group, sums, strict=True):
                        st["boot_sums"][mc] += row
        read = None
        for scope, pairs in scopes.items():
            st = state[scope]
            n_p = len(pairs)
            curves, sakai, boot_sums = st["curves"], st["sakai"], st["boot_sums"]
            pv_parts.append(_pvalue_frame(alg, scope, st["pv"], n_p))
            for mc in mcs:
                metric, cutoff = mc
                res = summarize_curves(curves[mc])
                row: dict[str, Any] = {
                    "algorithm": alg,
                    "scope": scope,
                    "metric": metric,
                    "cutoff": cutoff,
                    "dp": res.dp,
                    "dp_plus_sd": res.dp_plus_sd,
                    "dp_minus_sd": res.dp_minus_sd,
                    "n_pairs": res.n_pairs,
                    "n_folds": res.n_folds,
                    "sakai": float(sakai[mc].mean()),
                    "sakai_sd": float(sakai[mc].std(ddof=1)) if len(folds) > 1 else 0.0,
                }
                if bootstrap:
                    reps = boot_sums[mc] / len(folds)
                    replicates[(alg, scope, metric, cutoff)] = reps
                    row["dp_ci_low"], row["dp_ci_high"] = percentile_ci(reps)
                row.update(test=test, correction=correction or "none", alpha=alpha)
                dp_rows.append(row)
                curve_parts.append(
                    pd.DataFrame(
                        {
                            "algorithm": alg,
                            "scope": scope,
                            "metric": metric,
                            "cutoff": cutoff,
                            "position": np.arange(n_p),
                            "mean": res.mean_curve,
                            "sd": res.sd_curve,
                        }
                    )
                )
            if bootstrap and scope == "all":
                for cutoff in sorted({c for _, c in mcs}):
                    ms = [m for m, c in mcs if c == cutoff]
                    for ma in ms:
                        for mb in ms:
                            if ma != mb:
                                rank_rows.append(
                                    (
                                        alg,
                                        scope,
                                        cutoff,
                                        ma,
                                        mb,
                                        prob_more_discriminative(
                                            replicates[(alg, scope, ma, cutoff)],
                                            replicates[(alg, scope, mb, cutoff)],
                                        ),
                                    )
                                )

    dp_cols = list(DP_COLUMNS)
    if bootstrap:
        dp_cols += ["dp_ci_low", "dp_ci_high"]
    dp_cols += ["test", "correction", "alpha"]
    analysis = Analysis(
        pairs=_frame(pair_rows, PAIRS_COLUMNS),
        pvalues=_concat(pv_parts, PVALUES_COLUMNS),
        dp=pd.DataFrame(dp_rows, columns=dp_cols),
        curves=_concat(curve_parts, CURVES_COLUMNS),
        metric_ranking=_frame(rank_rows, RANKING_COLUMNS) if bootstrap else None,
        replicates=replicates,
        settings={
            "n_pairs": n_pairs,
            "seed": seed,
            "test": test,
            "alpha": alpha,
            "correction": correction or "none",
            "n_resamples": n_resamples,
            "bootstrap": bootstrap,
        },
    )
    return analysis


def _pvalue_frame(
    alg: str, scope: str, recs: list[tuple[str, int, str, np.ndarray, int]], n_p: int
) -> pd.DataFrame:
    """The ``pvalues`` rows of one scope, ``recs`` = (metric, cutoff, fold, p, n_users) in
    (fold, metric@N) order, as one frame (the same columns and dtypes as one frame per record,
    concatenated, at a fraction of the cost)."""
    n = len(recs)
    return pd.DataFrame(
        {
            "algorithm": alg,
            "scope": scope,
            "metric": np.repeat(np.array([r[0] for r in recs], dtype=object), n_p),
            "cutoff": np.repeat(np.array([r[1] for r in recs], dtype=np.int64), n_p),
            "fold": np.repeat(np.array([r[2] for r in recs], dtype=object), n_p),
            "pair_index": np.tile(np.arange(n_p), n),
            "p": np.concatenate([np.asarray(r[3], dtype=np.float64) for r in recs]),
            "n_users": np.repeat(np.array([r[4] for r in recs], dtype=np.int64), n_p),
        }
    )


def _frame(rows: list[tuple], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)


def _concat(parts: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]
