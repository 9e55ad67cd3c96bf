"""The p-value curve and DP of one (algorithm, scope, metric@N), as in the paper's method.

Per validation fold the P pairs' p-values sorted decreasingly form the fold's curve; the curves
are averaged position by position over the folds; DP is the sum of the averaged curve (lower =
more discriminative); the position-wise sd across folds (``ddof=1``) gives the bands and
``DP +- sd``. :func:`noise_floor` gives the p-values of A/A pairs (one configuration, several
seeds), the "no real difference" sample of the noise floor.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dptune.analysis.dp import paired_tests as stats
from dptune.analysis.dp.degenerate import capped_band
from dptune.errors import input_error

__all__ = ["pvalue_curve", "DPResult", "summarize_curves", "noise_floor"]


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
    return DPResult(
        mean_curve=mean,
        sd_curve=sd,
        dp=float(mean.sum()),
        dp_plus_sd=float(hi.sum()),
        dp_minus_sd=float(lo.sum()),
        n_pairs=int(n_pairs),
        n_folds=int(n_folds),
    )


def noise_floor(values_by_seed: np.ndarray, test: str = "t") -> np.ndarray:
    """p-values of all A/A pairs of one configuration trained with S seeds.

    ``values_by_seed`` is ``(S, n_users)``; pair ``(s, t)``, ``s < t``, in lexicographic order
    ``(0,1), (0,2), ..., (S-2, S-1)``, is tested with :func:`dptune.analysis.dp.paired_tests.paired_pvalues`
    (default: paired t-test). Returns ``S (S - 1) / 2`` p-values, the "no real difference"
    sample from which the caller builds the noise-floor curve (:func:`pvalue_curve`).
    """
    v = np.asarray(values_by_seed, dtype=np.float64)
    if v.ndim != 2:
        raise input_error("dp", "values_by_seed", f"expected (seeds, users), got shape {v.shape}")
    s_idx, t_idx = np.triu_indices(v.shape[0], k=1)
    return stats.paired_pvalues(v[s_idx], v[t_idx], test=test)
