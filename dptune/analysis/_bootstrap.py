"""The paper's DP bootstrap, used only when the robust estimate is switched off (``max_pairs =
0``): to be removed with that switch; the one bootstrap is :mod:`dptune.analysis._resample`.

Replicate ``r`` draws the pair indices ``q_r`` (``P`` with replacement,
shared by all folds, as the pairs are) and per fold ``f`` a resample ``u_{r,f}`` of its users;
``DP*_r = (1/F) sum_f sum_i p(q_ri; u_{r,f})``. The draws depend only on the seed and the sizes,
so replicates are paired across metrics: :func:`prob_more_discriminative` (the one of
:mod:`dptune.analysis._resample`) compares them, :func:`percentile_ci` gives the interval.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dptune.analysis import _stats as stats
from dptune.analysis._resample import prob_more_discriminative
from dptune.errors import check_int, input_error

__all__ = ["bootstrap_dp", "percentile_ci", "prob_more_discriminative"]


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
    n_boot = check_int(n_boot, "dp", "n_boot", 1)
    seed = check_int(seed, "dp", "seed", 0)
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
