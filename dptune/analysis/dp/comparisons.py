"""Claims with a stated error rate: simultaneous comparisons of DP estimates by a bootstrap of
the maximum statistic, stepped down.

Every claim the analysis makes that one estimate is *significantly* lower than another -- a
metric more discriminative than another metric of its family, a hyperparameter that separates
configurations more often than another -- is a rejection of this module's test. The test is
made for the way the claims are used: the verdict first *selects* the lowest estimate of a
family (the recommended metric) and only then compares it with the others, so a test of each
comparison on its own would be a one-sided test after selection, whose false-claim rate grows
with the size of the family (with four equally discriminative metrics the previous rule named
at least one "less discriminative" in a quarter to a third of the rows). Instead, every pair of
estimates of the family is tested at once and the whole set of tests holds a **family-wise
error rate** of ``alpha``: the chance that *any* claim of the family is false is at most
``alpha``, whichever estimate turned out lowest. The claims about the selected one are a subset
of those tests, so their error rate is at most ``alpha`` too.

**The test** (the bootstrap max-t of Romano & Wolf, 2005, with their step-down; for pairwise
comparisons it is the resampling form of Tukey's studentized range). The ``K`` estimates
``theta^_k`` (mean p-values: DP per 25 pairs / 25) have ``B`` paired bootstrap replicates
``theta*_{k,r}`` -- the same draws of users and pairs for every ``k``, so that their differences
carry the estimates' correlation (metrics measured on the same users and pairs move together).
For each pair ``h = (i, j)``, ``i < j``:

    D_h = theta^_i - theta^_j,      D*_{h,r} = theta*_{i,r} - theta*_{j,r},
    se_h = sd_r(D*_{h,r}),          t_h = D_h / se_h,
    T*_{h,r} = |D*_{h,r} - mean_r D*_{h,r}| / se_h

(``T*`` is the bootstrap's law of ``|t_h|`` when ``D_h`` is in truth 0). With the hypotheses
ordered by ``|t|`` decreasing, ``h_(1), ..., h_(H)``, the step-down adjusted p-values are

    p_(s) = (1 + #{r : max_{m >= s} T*_{h_(m),r} >= |t_(s)|}) / (B + 1),
    p~_(s) = max(p~_(s-1), p_(s)),

and ``h`` is rejected at level ``alpha`` when ``p~_h <= alpha``: ``theta_i != theta_j``, with the
sign of ``D_h``. The first step is the single-step max-t (a simultaneous interval for every
difference); each later step drops the hypotheses already rejected from the maximum, which gains
power and keeps the family-wise error rate (Romano & Wolf, 2005, Theorem 3). A pair whose
replicates never differ is not tested: ``p~ = 1``, never a claim, and no replicate counts as
lower. Two metrics that give the same p-value on every pair of configurations do so: Precision@1
and nDCG@1 with binary relevance, or Precision@10 and Recall@10 when every user has one
relevant item (one is ten times the other, so every t statistic is the same). Their replicates
are computed from float32 sums (:mod:`dptune.analysis.dp.bootstrap`) and may differ by that
rounding, about 1e-8 of the replicates' size, unless the two values differ by a power of two;
"never differ" is therefore ``se_h <= IDENTICAL_RTOL x`` the replicates' largest absolute
value (:data:`IDENTICAL_RTOL`). Tested, such a pair's rounding was read as a difference: a
share of about 50% "more discriminative" in ``comparisons.csv``, and a hypothesis in the
maximum that raised every other claim's critical value.

**Unpaired** (``paired=False``, the hyperparameters' comparisons). Metrics of a family are
measured on the same pairs of configurations, and pairing their replicates is what carries
their strong correlation into ``se_h``. Two one-at-a-time scopes hold *different* pairs (those
differing in ``h`` only, those differing in ``x`` only), and there the paired replicates
overstate how the two estimates move together: in the simulations of section 12 of
``docs/statistics.md`` (equal weak effects) the replicates put their correlation at about 0.4
where the estimates' own was about 0.1, so ``se_h`` ran 23% short of the spread of ``D_h``,
and one of two equally dominant hyperparameters was named dominant in 6.3-9.3% of the runs at
``alpha`` = 5% on four of the six population shapes measured.
Unpaired, estimate ``k``'s replicates are shifted by ``k floor(B / K)`` positions before the
statistics are formed, so that each ``D*_{h,r}`` is a difference of two independent draws and
``se_h^2`` estimates the sum of the two variances: the test then assumes no covariance between
the scopes, which errs towards fewer claims when the true covariance is positive.

The error rate is measured, not assumed: :mod:`dptune.studies.simulations.error_rates` simulates
families whose metrics are equally discriminative and counts the rows with a false claim
(``docs/statistics.md``, section 11), and grids whose hyperparameters are equally dominant
(section 12).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dptune.analysis.dp.bootstrap import small_sample_factor
from dptune.errors import input_error

__all__ = ["COMPARISON_COLUMNS", "IDENTICAL_RTOL", "Comparisons", "stepdown_maxt", "compare_estimates",
           "cluster_factor"]

#: Relative size of the replicates' differences below which a pair is not tested (module
#: docstring): about a hundred times the rounding the float32 sums leave in the replicates
#: (about 1e-8 of their size), and far below the smallest difference of mean p-values a report
#: shows (0.01 in DP per 25 pairs is 4e-4 in mean p-value; the replicates are at most 1).
IDENTICAL_RTOL = 1e-6

#: Columns of a comparison table: one row per unordered pair of estimates ``(a, b)``.
COMPARISON_COLUMNS = ["a", "b", "difference", "se", "t", "p_adjusted", "prob_a_lower"]


@dataclass(frozen=True)
class Comparisons:
    """Every pairwise comparison of ``K`` estimates (:func:`stepdown_maxt`).

    ``difference[h] = theta^_a - theta^_b``, ``se[h]`` its bootstrap standard error, ``t[h]``
    the studentized difference, ``p_adjusted[h]`` the step-down adjusted p-value (the smallest
    family-wise level at which ``h`` is rejected; 1 for an untestable pair) and
    ``prob_a_lower[h] = (1/B) #{r : theta*_{a,r} < theta*_{b,r}}``, the share of replicates in
    which ``a`` is the lower one (descriptive; ties count for neither; 0 for a pair not tested,
    whose replicates differ by rounding only), ``prob_b_lower[h]`` the same for ``b``. ``a[h] <
    b[h]`` are positions in the estimates given."""

    a: np.ndarray
    b: np.ndarray
    difference: np.ndarray
    se: np.ndarray
    t: np.ndarray
    p_adjusted: np.ndarray
    prob_a_lower: np.ndarray
    prob_b_lower: np.ndarray

    def lower(self, i: int, j: int, alpha: float) -> bool:
        """Whether estimate ``i`` is significantly lower than ``j`` at family-wise level
        ``alpha``."""
        h, sign = self._index(i, j)
        return bool(self.p_adjusted[h] <= alpha and sign * self.difference[h] < 0)

    def p_of(self, i: int, j: int) -> float:
        """The adjusted p-value of the comparison of ``i`` and ``j``."""
        return float(self.p_adjusted[self._index(i, j)[0]])

    def prob_lower(self, i: int, j: int) -> float:
        """Share of the replicates in which ``i`` is lower than ``j``."""
        h, sign = self._index(i, j)
        if sign > 0:
            return float(self.prob_a_lower[h])
        return float(self.prob_b_lower[h])

    def _index(self, i: int, j: int) -> tuple[int, int]:
        a, b = (i, j) if i < j else (j, i)
        hits = np.flatnonzero((self.a == a) & (self.b == b))
        if len(hits) != 1 or i == j:
            raise input_error("comparisons", "pair", f"no comparison of {i} and {j}")
        return int(hits[0]), (1 if i < j else -1)

    def frame(self, labels: Sequence[str]) -> pd.DataFrame:
        """The comparisons as a table (:data:`COMPARISON_COLUMNS`), ``a``/``b`` as ``labels``."""
        lab = np.asarray(list(labels), dtype=object)
        return pd.DataFrame({"a": lab[self.a], "b": lab[self.b], "difference": self.difference,
                             "se": self.se, "t": self.t, "p_adjusted": self.p_adjusted,
                             "prob_a_lower": self.prob_a_lower}, columns=COMPARISON_COLUMNS)


def cluster_factor(groups: int, alpha: float) -> float:
    """``kappa = sqrt(G / (G - 1)) t_(G-1) / z`` at ``(1 - alpha/2)``: the small-sample
    convention of inference from ``G`` resampled clusters (the bootstrap's user groups). A
    bootstrap over ``G`` groups puts a mean's variance at ``(G - 1) / G`` of its unbiased
    estimate, and a difference studentized by a spread read off ``G`` groups is Student's t
    with ``G - 1`` degrees of freedom rather than normal; 1.028 for the default 64 groups at
    ``alpha = 0.05``."""
    g = int(groups)
    if g < 2:
        raise input_error("comparisons", "groups", f"must be at least 2, got {groups}")
    # Student's t over the normal quantile at G - 1 degrees of freedom: one estimated part
    return float(np.sqrt(g / (g - 1.0))) * small_sample_factor(1.0, [(1.0, g - 1)],
                                                               level=1.0 - float(alpha))


def stepdown_maxt(estimates: np.ndarray, replicates: np.ndarray,
                  se_factor: float = 1.0, paired: bool = True) -> Comparisons:
    """Every pairwise comparison of ``K`` estimates with step-down max-t adjusted p-values.

    ``estimates`` ``(K,)``, ``replicates`` ``(K, B)`` paired bootstrap replicates (the same
    draws for every estimate). Formulas in the module docstring. ``K < 2``: no comparison.
    ``se_factor`` (>= 1) widens every standard error before the statistics are formed,
    ``t_h = D_h / (se_factor se_h)`` against the same bootstrap law (the dominance claims use
    :func:`cluster_factor`; 1 is the metrics' claims). ``paired=False`` (the dominance claims)
    decouples the replicates before anything is formed: estimate ``k``'s are shifted by ``k
    floor(B / K)`` positions (cyclically), so that replicate ``r`` of two estimates comes from
    two independent draws and ``se_h^2`` estimates ``Var(theta^_i) + Var(theta^_j)``, the
    variance of the difference of independent estimates (module docstring, "unpaired").
    """
    if not (np.isfinite(se_factor) and float(se_factor) >= 1.0):
        raise input_error("comparisons", "se_factor", f"must be a number >= 1, got {se_factor}")
    est = np.asarray(estimates, dtype=np.float64).ravel()
    reps = np.asarray(replicates, dtype=np.float64)
    if reps.ndim != 2 or reps.shape[0] != est.size:
        raise input_error("comparisons", "replicates",
                          f"need ({est.size}, B) paired replicates, got shape {reps.shape}")
    if not (np.all(np.isfinite(est)) and np.all(np.isfinite(reps))):
        raise input_error("comparisons", "estimates", "need finite estimates and replicates")
    k, n_boot = reps.shape
    if not paired and k > 1:  # replicate r of estimate i beside another draw of estimate j
        if n_boot < k:
            raise input_error("comparisons", "replicates", f"unpaired comparisons of {k} "
                              f"estimates need at least {k} replicates, got {n_boot}")
        reps = np.stack([np.roll(reps[i], i * (n_boot // k)) for i in range(k)])
    a, b = np.triu_indices(k, k=1)
    diff = est[a] - est[b]
    d_star = reps[a] - reps[b]  # (H, B)
    se = d_star.std(axis=1, ddof=1) if n_boot > 1 else np.zeros(len(a))
    scale = np.maximum(np.abs(reps[a]).max(axis=1, initial=0.0),
                       np.abs(reps[b]).max(axis=1, initial=0.0))
    testable = se > IDENTICAL_RTOL * np.maximum(scale, 1e-300)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(testable, diff / np.where(testable, se * float(se_factor), 1.0), 0.0)
        null = np.abs(d_star - d_star.mean(axis=1, keepdims=True)) / np.where(
            testable, se, 1.0)[:, None]
    null[~testable] = 0.0
    p_adj = np.ones(len(a))
    order = [h for h in np.argsort(-np.abs(t), kind="stable") if testable[h]]
    # max over the hypotheses not yet rejected, for every step at once: the running maximum of
    # the ordered statistics from the last one back (one maximum per step over the rest was
    # H^2 B operations: 13 s for 80 estimates)
    rests = np.maximum.accumulate(null[order[::-1]], axis=0)[::-1] if order else null[:0]
    running = 0.0
    for s, h in enumerate(order):
        rest = rests[s]
        p = (1.0 + float(np.sum(rest >= abs(t[h]) * (1.0 - 1e-12)))) / (n_boot + 1.0)
        running = max(running, p)
        p_adj[h] = running
    return Comparisons(a=a, b=b, difference=diff, se=se, t=t, p_adjusted=p_adj,
                       prob_a_lower=np.where(testable, (reps[a] < reps[b]).mean(axis=1), 0.0),
                       prob_b_lower=np.where(testable, (reps[b] < reps[a]).mean(axis=1), 0.0))


def compare_estimates(estimates: Mapping[str, float],
                      replicates: Mapping[str, np.ndarray],
                      se_factor: float = 1.0, paired: bool = True
                      ) -> tuple[list[str], Comparisons]:
    """:func:`stepdown_maxt` of named estimates: ``(labels, comparisons)`` with labels in the
    order of ``estimates``; every label needs replicates of one common length."""
    labels = [str(x) for x in estimates]
    missing = [x for x in labels if x not in replicates]
    if missing:
        raise input_error("comparisons", "replicates", f"missing for {missing}")
    est = np.array([float(estimates[x]) for x in labels])
    reps = np.vstack([np.asarray(replicates[x], dtype=np.float64).ravel() for x in labels]) \
        if labels else np.zeros((0, 1))
    return labels, stepdown_maxt(est, reps, se_factor, paired)
