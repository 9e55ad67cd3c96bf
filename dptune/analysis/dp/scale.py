"""The DP on one scale: the mean p-value of a scope's pairs, and "DP per 25 pairs".

The paper's DP sums the fold-averaged curve of P pairs, so its value grows with P (a sum of P
numbers in [0, 1]): rows with different P cannot be compared on it. Divided by P it is the mean
p-value ``pbar = (1/F) sum_f (1/P) sum_i p_{f,i}``, which does not depend on P; the report
shows it as **DP per 25 pairs**, ``25 pbar = DP x 25 / P``, which reads like the paper's numbers
and equals the paper's DP exactly when P = 25.

The pairs are those of the analysis' ``all`` scope (:func:`dptune.analysis.dp.pairs.scope_pairs`):
every pair when there are at most ``pairs`` (option, default 1,000; User-kNN / Item-kNN grids
of 15 configurations have 105), else a seeded uniform sample of ``pairs``. Only a sampled scope
has other pair sets to try: the stability repeats ``k >= 1`` draw theirs with
:func:`robust_seed` ``(seed, k)``.

Lower = more discriminative, as for DP. ``pbar_sd`` is the sd over folds of the per-fold means
(ddof = 1; 0 for one fold). A row whose p-values are all 1 (every pair identical on every user,
or fewer than two users) has *no evidence*: it cannot rank a metric and is flagged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dptune.analysis.dp.pairs import sample_pairs, scope_seed
from dptune.analysis.options import PAIRS
from dptune.errors import check_int, input_error

__all__ = [
    "REFERENCE_P",
    "PAIRS",
    "RobustEstimate",
    "robust_seed",
    "bootstrap_seed",
    "n_possible_pairs",
    "robust_pairs",
    "robust_estimate",
    "per_pair",
    "dp_at_reference",
    "per_reference",
]

#: P of the paper; DP per 25 pairs ``= REFERENCE_P * mean p``.
REFERENCE_P = 25


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
    """Pair-sampling seed of repeat ``k`` of the stability check: for ``k = 0`` the seed of the
    analysis' ``all`` scope, :func:`dptune.analysis.dp.pairs.scope_seed` ``(seed, "all")`` (so
    repeat 0 uses the very pairs of the tables), else ``scope_seed(seed, "all|robust|<k>")``."""
    return scope_seed(seed, "all" if int(repeat) == 0 else f"all|robust|{int(repeat)}")


def bootstrap_seed(seed: int, repeat: int = 0) -> int:
    """Bootstrap seed of repeat ``k``: ``scope_seed(seed, "all|robust|<k>|bootstrap")``."""
    return scope_seed(seed, f"all|robust|{int(repeat)}|bootstrap")


def n_possible_pairs(n_configs: int) -> int:
    """``m (m - 1) / 2`` unordered pairs of ``m`` configurations."""
    m = int(n_configs)
    return m * (m - 1) // 2


def robust_pairs(config_ids: np.ndarray, pairs: int = PAIRS, seed: int = 0,
                 repeat: int = 0) -> np.ndarray:
    """The pairs of repeat ``repeat``, ``(P, 2)``: all ``m (m - 1) / 2`` pairs when that is at
    most ``pairs``, else ``pairs`` pairs sampled without replacement; seed :func:`robust_seed`
    ``(seed, repeat)``. Repeat 0 is the ``all`` scope of :func:`scope_pairs`, pair for pair.
    Rows ``(smaller id, larger id)``."""
    pairs = check_int(pairs, "analysis", "pairs", 1)
    return sample_pairs(np.asarray(config_ids), pairs, robust_seed(seed, repeat))


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
    """``reference * mean p`` (``DP per 25 pairs``): a mean p-value on the paper's scale for P = 25."""
    out = np.asarray(mean_p, dtype=np.float64) * int(reference)
    return float(out) if out.ndim == 0 else out


def per_reference(dp: np.ndarray | float, n_pairs: np.ndarray | int,
                  reference: int = REFERENCE_P) -> np.ndarray | float:
    """DP per ``reference`` pairs: ``DP x (reference / P)`` = ``reference`` x mean p-value.

    Written with the ratio first so that P = ``reference`` gives the paper's DP bit for bit
    (``25 / 25 = 1``)::

        >>> per_reference(7.5, 25), per_reference(3.0, 15)
        (7.5, 5.0)
    """
    n = np.asarray(n_pairs, dtype=np.float64)
    if np.any(n < 1):
        raise input_error("robust DP", "n_pairs", "must be >= 1")
    out = np.asarray(dp, dtype=np.float64) * (int(reference) / n)
    return float(out) if out.ndim == 0 else out
