"""Robust DP: the mean p-value of many pairs, on a scale that does not depend on P.

The paper's DP sums the fold-averaged curve of P = 25 sampled pairs. Its value depends on P
(a sum of P numbers in [0, 1]) and, with 25 pairs out of hundreds or millions, mostly on which
pairs were drawn: the pair-sampling variance of a sum of P p-values is ``P var(p)``, so the
ranking of metrics by DP is mostly noise (issue 13). The robust estimate keeps the same
ingredients (paired t-tests over the fold's users, the same p-values) and changes two things:

- **more pairs**: every pair of configurations when there are at most ``max_pairs`` (default
  1,000; UserKNN / ItemKNN grids of 15 configurations have 105), else ``max_pairs`` pairs sampled
  uniformly without replacement (:func:`dptune.analysis._dp.sample_pairs`, seed
  :func:`robust_seed`);
- **a normalised scale**: the mean p-value ``pbar = (1/F) sum_f (1/P) sum_i p_{f,i}`` (equal to
  the paper's ``DP / P`` when the pairs are the same), reported also as ``DP@25 = 25 pbar`` so
  that it reads like the paper's numbers. Rows with different P are compared on this scale,
  never on the raw sum.

Lower = more discriminative, as for DP. ``pbar_sd`` is the sd over folds of the per-fold means
(ddof = 1; 0 for one fold). A row whose p-values are all 1 (every pair identical on every user,
or fewer than two users) has *no evidence*: it cannot rank a metric and is flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dptune.analysis._dp import sample_pairs, scope_seed
from dptune.errors import check_int, input_error

__all__ = [
    "REFERENCE_P",
    "MAX_PAIRS",
    "RobustEstimate",
    "robust_seed",
    "bootstrap_seed",
    "n_possible_pairs",
    "robust_pairs",
    "robust_estimate",
    "per_pair",
    "dp_at_reference",
]

#: P of the paper; ``DP@25 = REFERENCE_P * mean p``.
REFERENCE_P = 25
#: Default ``max_pairs``: all pairs up to this many, else a seeded sample of this many.
MAX_PAIRS = 1000


@dataclass(frozen=True)
class RobustEstimate:
    """Robust DP of one (algorithm, metric@N): see the module docstring."""

    mean_p: float
    mean_p_sd: float
    dp_at_25: float
    n_pairs: int
    n_folds: int
    no_evidence: bool


def robust_seed(seed: int, repeat: int = 0) -> int:
    """Pair-sampling seed of the robust estimate, repeat ``k`` of the stability check:
    :func:`dptune.analysis._dp.scope_seed` ``(seed, "all|robust")`` for ``k = 0``, else
    ``(seed, "all|robust|<k>")``."""
    return scope_seed(seed, "all|robust" if int(repeat) == 0 else f"all|robust|{int(repeat)}")


def bootstrap_seed(seed: int, repeat: int = 0) -> int:
    """Bootstrap seed of repeat ``k``: ``scope_seed(seed, "all|robust|<k>|bootstrap")``."""
    return scope_seed(seed, f"all|robust|{int(repeat)}|bootstrap")


def n_possible_pairs(n_configs: int) -> int:
    """``m (m - 1) / 2`` unordered pairs of ``m`` configurations."""
    m = int(n_configs)
    return m * (m - 1) // 2


def robust_pairs(config_ids: np.ndarray, max_pairs: int = MAX_PAIRS, seed: int = 0,
                 repeat: int = 0) -> np.ndarray:
    """The pairs of the robust estimate, ``(P, 2)``: all ``m (m - 1) / 2`` pairs when that is at
    most ``max_pairs``, else ``max_pairs`` pairs sampled without replacement; seed
    :func:`robust_seed` ``(seed, repeat)``. Rows ``(smaller id, larger id)``."""
    max_pairs = check_int(max_pairs, "analysis", "max_pairs", 1)
    return sample_pairs(np.asarray(config_ids), max_pairs, robust_seed(seed, repeat))


def robust_estimate(pvalues: np.ndarray) -> RobustEstimate:
    """Robust DP from the p-values ``(F, P)`` of P pairs on F folds (a 1-D array is one fold).

    ``pbar_f = (1/P) sum_i p_{f,i}``, ``mean_p = (1/F) sum_f pbar_f``, ``mean_p_sd`` = sd of
    ``pbar_f`` over folds (ddof = 1; 0 for one fold), ``dp_at_25 = 25 mean_p``, ``no_evidence``
    when every p-value is 1.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim == 1:
        p = p[None, :]
    if p.ndim != 2 or p.size == 0:
        raise input_error("robust DP", "pvalues", f"expected a (folds, pairs) array, got {p.shape}")
    if np.any(~np.isfinite(p)) or p.min() < 0.0 or p.max() > 1.0:
        raise input_error("robust DP", "pvalues", "must be finite numbers in [0, 1]")
    fold_means = p.mean(axis=1)
    mean = float(fold_means.mean())
    sd = float(fold_means.std(ddof=1)) if p.shape[0] > 1 else 0.0
    return RobustEstimate(mean_p=mean, mean_p_sd=sd, dp_at_25=REFERENCE_P * mean,
                          n_pairs=int(p.shape[1]), n_folds=int(p.shape[0]),
                          no_evidence=bool(np.all(p == 1.0)))


def per_pair(dp: np.ndarray | float, n_pairs: np.ndarray | int) -> np.ndarray | float:
    """The paper's DP on the normalised scale: ``DP / P`` (the mean of the averaged curve)."""
    n = np.asarray(n_pairs, dtype=np.float64)
    if np.any(n < 1):
        raise input_error("robust DP", "n_pairs", "must be >= 1")
    out = np.asarray(dp, dtype=np.float64) / n
    return float(out) if out.ndim == 0 else out


def dp_at_reference(mean_p: np.ndarray | float, reference: int = REFERENCE_P) -> np.ndarray | float:
    """``reference * mean p`` (``DP@25``): a mean p-value on the paper's scale for P = 25."""
    out = np.asarray(mean_p, dtype=np.float64) * int(reference)
    return float(out) if out.ndim == 0 else out
