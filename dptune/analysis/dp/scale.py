"""The DP on one scale: "DP per 25 pairs", 25 x the mean p-value of a scope's pairs.

The paper's DP sums the fold-averaged curve of P pairs, so its value grows with P (a sum of P
numbers in [0, 1]): rows with different P cannot be compared on it. Divided by P it is the mean
p-value ``pbar = (1/F) sum_f (1/P) sum_i p_{f,i}``, which does not depend on P; every DP dptune
prints is **DP per 25 pairs**, ``25 pbar = DP x 25 / P``, which reads like the paper's numbers
and equals the paper's DP exactly when P = 25, always with P beside it. Lower = more
discriminative; its range is [0, 25].
"""

from __future__ import annotations

import numpy as np

from dptune.analysis.dp.pairs import scope_seed
from dptune.errors import input_error

__all__ = ["REFERENCE_P", "bootstrap_seed", "n_possible_pairs", "per_reference"]

#: P of the paper; DP per 25 pairs ``= REFERENCE_P * mean p``.
REFERENCE_P = 25


def bootstrap_seed(seed: int, repeat: int = 0) -> int:
    """Seed of the bootstrap's user draws of stability repeat ``k`` (shared by every scope and
    metric of an algorithm, so that their replicates are paired):
    ``scope_seed(seed, "all|robust|<k>|bootstrap")``."""
    return scope_seed(seed, f"all|robust|{int(repeat)}|bootstrap")


def n_possible_pairs(n_configs: int) -> int:
    """``m (m - 1) / 2`` unordered pairs of ``m`` configurations."""
    m = int(n_configs)
    return m * (m - 1) // 2


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
        raise input_error("DP", "n_pairs", "must be >= 1")
    out = np.asarray(dp, dtype=np.float64) * (int(reference) / n)
    return float(out) if out.ndim == 0 else out
