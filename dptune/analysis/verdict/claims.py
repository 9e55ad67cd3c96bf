"""Every significance claim of the analysis, as one table (comparisons.csv).

Two kinds of comparison, one test (:mod:`dptune.analysis.dp.comparisons`: the bootstrap
max-t, stepped down, family-wise error rate ``alpha``) and one stability rule (a claim holds only
when it is significant under every pair seed, :func:`dptune.analysis.dp.stability.family_claims`):

- ``kind = "metrics"``: within one (algorithm, cutoff N, family of metrics), every pair of the
  family's metrics that have evidence, compared on the DP of scope ``all`` (the pairs of the
  whole grid). The verdict's "significantly less discriminative" reads these.
- ``kind = "hyperparameters"``: within one (algorithm, metric@N), every pair of hyperparameters
  compared on the DP of their one-at-a-time scopes ``only:<h>`` (pairs that differ in ``h``
  only). The dominant hyperparameter reads these (:mod:`dptune.analysis.verdict.dominance`).
  Two scopes hold different pairs, and their paired replicates overstate how the two DPs move
  together, so these comparisons are *unpaired*
  (:func:`dptune.analysis.dp.comparisons.stepdown_maxt` with ``paired=False``: the standard
  error of a difference is that of two independent estimates) and widen every standard error
  by the small-sample factor of the bootstrap's user groups
  (:func:`dptune.analysis.dp.comparisons.cluster_factor`, 1.028 for ``GROUPS`` = 64; the
  fewest groups of the scopes' folds, ``min(users, 64)``, as the interval reads them, so 1.096
  on folds of 20 users). With two hyperparameters of equal effects, the paired test named one
  "dominant" in 6.3-9.3% of 600 runs on four of six population shapes; the unpaired one in
  1.8-5.3% (``docs/statistics.md`` section 12). On a store holding a subset of its grid's
  units the factor is that of the fewest independent draws of units the compared scopes rest
  on when they are fewer (``unit_clusters`` in dp.csv,
  :attr:`dptune.analysis.dp.units.PairDesign.clusters`): the pairs that change a unit
  hyperparameter alone come from the few pairs of units present that share every other value
  (6 or 7 at one round of BPR-MF's grid), and what another sample of units would change is
  read off that many. Counting the users' groups alone, one round of a 14 x 14 grid of 14
  configurations per unit made a false "significantly more than" in 6.75-7.25% of 400
  replications; counting the pairs of units, in 0.75-1.5%.

A comparison needs the bootstrap's replicates (a test with an interval and ``bootstrap > 0``)
and at least ``min_pairs`` pairs in each scope compared; without them there is no row, so no
claim.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from dptune.analysis.dp import stability as sb
from dptune.analysis.dp.bootstrap import GROUPS
from dptune.analysis.dp.comparisons import cluster_factor
from dptune.analysis.dp.tables import Draws
from dptune.analysis.verdict.families import Families, family_groups

__all__ = ["CLAIM_COLUMNS", "metric_comparisons", "hyperparameter_comparisons",
           "comparisons_table", "user_groups", "unit_clusters"]

#: comparisons.csv: one row per ordered pair ``(a, b)`` of a group: the claim "``a`` is
#: significantly more discriminative than ``b``" (lower DP per 25 pairs). ``p_adjusted``: the
#: step-down adjusted p-value (the largest over the stability repeats; ``_first``: the main
#: estimate's); ``pr_more_discriminative``: the share of bootstrap replicates in which ``a`` has
#: the lower DP (the smallest over the repeats; descriptive, not the test; for the unpaired
#: hyperparameters' comparisons, of the replicates as the test pairs them; 0 for a pair not
#: tested, whose replicates differ by rounding only); ``held``: the claim
#: is significant at family-wise level alpha under every repeat; ``dropped``: significant under
#: the main estimate only.
CLAIM_COLUMNS = ["algorithm", "cutoff", "kind", "group", "a", "b", "p_adjusted",
                      "p_adjusted_first", "pr_more_discriminative",
                      "pr_more_discriminative_first", "repeats", "significant_first", "held",
                      "dropped"]

_RENAME = {"metric_a": "a", "metric_b": "b", "prob_min": "pr_more_discriminative",
           "prob_first": "pr_more_discriminative_first"}


def _claims(by_repeat: Mapping[int, Mapping[str, tuple[float, object]]], alpha: float,
            head: dict, se_factor: float = 1.0, paired: bool = True) -> pd.DataFrame:
    c = sb.family_claims(by_repeat, alpha, se_factor, paired).rename(columns=_RENAME)
    for k, v in head.items():
        c.insert(len(c.columns), k, v)
    return c


def _by_repeat(draws: Draws, keys: Mapping[str, tuple[str, str, str, int]],
               whole: Sequence[str] = ()) -> dict[int, dict[str, tuple[float, object]]]:
    """label -> draw key as repeat -> label -> (estimate, replicates), over the repeats every
    label has. A label in ``whole`` (a scope that holds every pair of its stratum, so every
    pair seed gives it the same pairs) has one repeat, which stands for every pair seed of the
    others: a one-at-a-time scope of all its pairs beside a sampled one is compared under
    each of the sampled one's seeds (it was the first only)."""
    lists = {label: draws.get(key, []) for label, key in keys.items()}
    sampled = [len(v) for label, v in lists.items() if not (label in whole and len(v) == 1)]
    n = min(sampled, default=min((len(v) for v in lists.values()), default=0))
    return {k: {label: v[min(k, len(v) - 1)] for label, v in lists.items()} for k in range(n)}


def metric_comparisons(dp: pd.DataFrame, draws: Draws, families: Families, alpha: float,
                       min_pairs: int) -> pd.DataFrame:
    """The ``metrics`` rows of comparisons.csv (module docstring). ``dp``: dp.csv."""
    whole = dp[dp["scope"] == "all"]
    parts = []
    for (alg, cutoff), g in whole.groupby(["algorithm", "cutoff"], sort=False):
        if int(g["n_pairs"].max()) < int(min_pairs):
            continue
        for family, members in family_groups(g["metric"], families):
            ev = [m for m in members
                  if not bool(g.loc[g["metric"] == m, "no_evidence"].iloc[0])]
            keys = {m: (str(alg), "all", m, int(cutoff)) for m in ev}
            by_rep = _by_repeat(draws, keys)
            if len(ev) < 2 or not by_rep:
                continue
            parts.append(_claims(by_rep, alpha, {"algorithm": str(alg), "cutoff": int(cutoff),
                                                 "kind": "metrics", "group": family}))
    return _frame(parts)


def user_groups(pvalues: pd.DataFrame) -> dict[tuple[str, str, int], int]:
    """``(algorithm, metric, cutoff) -> G``: the fewest user groups the bootstrap resamples in
    a fold of the one-at-a-time scopes, ``min(users, GROUPS)`` (at least 2), read off the
    users of each pair's test (pvalues.parquet's ``n_users``)."""
    only = pvalues[pvalues["scope"].str.startswith("only:")]
    if only.empty:
        return {}
    fewest = only.groupby(["algorithm", "metric", "cutoff"], sort=False)["n_users"].min()
    return {(str(a), str(m), int(c)): max(2, min(int(n), GROUPS))
            for (a, m, c), n in fewest.items()}


def unit_clusters(scopes: pd.DataFrame) -> int:
    """The fewest independent draws of units among ``scopes`` (dp.csv rows): their
    ``unit_clusters`` (a store holding a subset of its grid's units, at least 2), or
    :data:`GROUPS` when every unit is present (then the users' groups alone count)."""
    if "unit_clusters" not in scopes.columns:
        return GROUPS
    c = pd.to_numeric(scopes["unit_clusters"], errors="coerce").dropna()
    return GROUPS if c.empty else max(2, int(c.min()))


def hyperparameter_comparisons(dp: pd.DataFrame, draws: Draws, alpha: float, min_pairs: int,
                               groups: Mapping[tuple[str, str, int], int] | None = None
                               ) -> pd.DataFrame:
    """The ``hyperparameters`` rows of comparisons.csv (module docstring). ``groups``: the
    fewest user groups of each (algorithm, metric@N)'s scopes (:func:`user_groups`; default
    ``GROUPS``); on a grid sample the fewest independent draws of units of the scopes compared
    (:func:`unit_clusters`) when fewer: the small-sample factor of that many widens the
    comparisons' standard errors."""
    groups = groups or {}
    only = dp[dp["scope"].str.startswith("only:")]
    parts = []
    for (alg, metric, cutoff), g in only.groupby(["algorithm", "metric", "cutoff"], sort=False):
        ok = g[(g["n_pairs"].astype(int) >= int(min_pairs)) & ~g["no_evidence"].astype(bool)]
        n_groups = min(groups.get((str(alg), str(metric), int(cutoff)), GROUPS),
                       unit_clusters(ok))
        keys = {str(s)[len("only:"):]: (str(alg), str(s), str(metric), int(cutoff))
                for s in ok["scope"]}
        whole = [str(r.scope)[len("only:"):] for r in ok.itertuples(index=False)
                 if int(r.n_pairs) == int(r.n_possible_pairs)]
        by_rep = _by_repeat(draws, keys, whole)
        if len(keys) < 2 or not by_rep:
            continue
        parts.append(_claims(by_rep, alpha, {"algorithm": str(alg), "cutoff": int(cutoff),
                                             "kind": "hyperparameters", "group": str(metric)},
                             cluster_factor(n_groups, alpha), paired=False))
    return _frame(parts)


def comparisons_table(dp: pd.DataFrame, draws: Draws, families: Families, alpha: float,
                      min_pairs: int, pvalues: pd.DataFrame | None = None) -> pd.DataFrame:
    """comparisons.csv: the metrics' comparisons, then the hyperparameters' (their small-sample
    factor from the users of ``pvalues``' one-at-a-time scopes, :func:`user_groups`)."""
    groups = user_groups(pvalues) if pvalues is not None else None
    return _frame([metric_comparisons(dp, draws, families, alpha, min_pairs),
                   hyperparameter_comparisons(dp, draws, alpha, min_pairs, groups)])


def _frame(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=CLAIM_COLUMNS)
    out = pd.concat(parts, ignore_index=True)[CLAIM_COLUMNS]
    return out.astype({"cutoff": "int64", "repeats": "int64", "significant_first": bool,
                       "held": bool, "dropped": bool})

