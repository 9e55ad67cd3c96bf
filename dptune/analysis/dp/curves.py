"""The p-value curve and DP of one (algorithm, scope, metric@N), as in the paper's method.

Per validation fold the P pairs' p-values sorted decreasingly form the fold's curve; the curves
are averaged position by position over the folds; DP is the sum of the averaged curve (lower =
more discriminative); the position-wise sd across folds (``ddof=1``) gives the bands and
``DP +- sd``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dptune.analysis.dp.degenerate import capped_band
from dptune.errors import check_int, input_error

__all__ = ["pvalue_curve", "weighted_curve", "CurveSummary", "summarize_curves", "resample_curve"]


def pvalue_curve(p: np.ndarray) -> np.ndarray:
    """The p-value curve of one fold: the p-values sorted in decreasing order, ``p_(1) >= ...``."""
    arr = np.asarray(p, dtype=np.float64).ravel()
    return np.sort(arr)[::-1].copy()


def weighted_curve(p: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The p-value curve of one fold whose pairs carry weights (a store holding a subset of
    its grid's units, :mod:`dptune.analysis.dp.units`): the P p-values sorted decreasingly,
    pair ``j`` taking a width ``w_j P / sum w`` of the positions instead of 1, and position
    ``i`` the average of that step function over ``[i, i + 1)``. Its sum is ``sum_j w_j p_j``
    scaled to P widths, ``P x`` the weighted mean p-value; with every weight equal it is
    :func:`pvalue_curve`."""
    arr = np.asarray(p, dtype=np.float64).ravel()
    w = np.asarray(weights, dtype=np.float64).ravel()
    n = len(arr)
    if not n:
        return arr.copy()
    order = np.argsort(-arr, kind="stable")
    width = w[order] * (n / w.sum())
    edges = np.concatenate([[0.0], np.cumsum(width)])
    area = np.concatenate([[0.0], np.cumsum(width * arr[order])])
    edges[-1] = float(n)
    return np.diff(np.interp(np.arange(n + 1, dtype=np.float64), edges, area))


@dataclass(frozen=True)
class CurveSummary:
    """Averaged p-value curve of one (algorithm, scope, metric@N) and its DP values."""

    mean_curve: np.ndarray
    sd_curve: np.ndarray
    dp: float
    dp_plus_sd: float
    dp_minus_sd: float
    n_pairs: int
    n_folds: int


def summarize_curves(curves: np.ndarray) -> CurveSummary:
    """Average per-fold p-value curves position by position (Anelli et al. sections 3-4).

    ``curves`` is ``(n_folds, P)`` (a 1-D array is one fold); each row is sorted decreasingly
    first (idempotent for curves from :func:`pvalue_curve`). With ``c[f, i]`` the i-th largest
    p-value of fold f: ``mean_i = (1/F) sum_f c[f, i]``, ``sd_i`` the sample sd over folds
    (``ddof=1``; 0 when F = 1), ``DP = sum_i mean_i``, ``DP+sd = sum_i min(mean_i + sd_i, 1)``,
    ``DP-sd = sum_i max(mean_i - sd_i, 0)`` (the band stays in the range of a p-value, so
    ``DP+sd <= P``).
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
    hi, lo = capped_band(mean, sd)  # p-values: the band stays in [0, 1]
    return CurveSummary(
        mean_curve=mean,
        sd_curve=sd,
        dp=float(mean.sum()),
        dp_plus_sd=float(hi.sum()),
        dp_minus_sd=float(lo.sum()),
        n_pairs=int(n_pairs),
        n_folds=int(n_folds),
    )


def resample_curve(curve: np.ndarray, n_positions: int) -> np.ndarray:
    """Resample a decreasing p-value curve of length K to ``n_positions`` positions.

    The curve is read as an empirical quantile function: value ``c[i]`` sits at level
    ``(i + 1/2) / K``; position ``j`` of the result is the linear interpolation at level
    ``(j + 1/2) / n_positions`` (constant beyond the first/last level). ``n_positions == K``
    returns the curve unchanged.
    """
    c = np.asarray(curve, dtype=np.float64).ravel()
    n_positions = check_int(n_positions, "dp", "n_positions", 1)
    if c.size == 0:
        raise input_error("dp", "curve", "is empty")
    if c.size == n_positions:
        return c.copy()
    x = (np.arange(c.size) + 0.5) / c.size
    u = (np.arange(n_positions) + 0.5) / n_positions
    return np.interp(u, x, c)
