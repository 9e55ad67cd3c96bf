"""Glue: the verdict's four tables from the DP estimate, the best configurations, the noise floor
and the store's test split."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis.dp.tables import DPEstimate
from dptune.analysis.source import ResultSource
from dptune.analysis.verdict import claims as cl
from dptune.analysis.verdict import downstream as ds
from dptune.analysis.verdict import rules
from dptune.analysis.verdict.dominance import dominance_table
from dptune.analysis.verdict.families import family_groups, family_judge
from dptune.store._per_user_store import has_test_split

__all__ = ["VerdictParts", "build_verdict"]


@dataclass(frozen=True)
class VerdictParts:
    """``verdict`` (verdict.csv), ``comparisons`` (comparisons.csv: every claim's test),
    ``dominance`` (dominance.csv) and ``downstream`` (downstream.csv)."""

    verdict: pd.DataFrame
    comparisons: pd.DataFrame
    dominance: pd.DataFrame
    downstream: pd.DataFrame


def _test_reader(store: ResultSource) -> ds.TestReader | None:
    """The store's reader of test-split values, or None when its data has no test split
    (outside data without a fold named ``test``:
    :func:`dptune.store._per_user_store.has_test_split`)."""
    if not callable(getattr(store, "read_matrix", None)):
        return None
    manifest = getattr(store, "manifest", None)
    if callable(manifest) and not has_test_split(manifest()):
        return None

    def read(algorithm: str, metric: str, cutoff: int,
             ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return store.read_matrix(algorithm, metric, int(cutoff), "test", ids)
    return read


def _varied(store: ResultSource, dp: pd.DataFrame) -> dict[str, list[str]]:
    """Algorithm -> the hyperparameters its full grid varies, for the algorithms with
    one-at-a-time scopes (those whose grid varies two or more)."""
    out = {}
    for alg in dp.loc[dp["scope"].str.startswith("only:"), "algorithm"].unique():
        configs = store.configs(alg)
        out[str(alg)] = [h for h in store.hyperparameters(alg)
                         if configs[h].astype(str).nunique() > 1]
    return out


def build_verdict(store: ResultSource, estimate: DPEstimate, options: Any, *,
                  best: pd.DataFrame | None, floor: pd.DataFrame | None) -> VerdictParts:
    """The verdict of one store under ``options`` (a validated :class:`dptune.AnalysisOptions`).

    ``best``: best_configs.csv (the configuration each metric@N selects) or None; ``floor``:
    the noise floor beside DP (``flagged`` per metric@N) or None. Each family's choice is
    judged on the test split by its judge
    (:func:`dptune.analysis.verdict.families.family_judge`)."""
    dp = estimate.table
    comparisons = cl.comparisons_table(dp, estimate.draws, options.families, options.alpha,
                                       options.min_pairs, estimate.pvalues)
    dominance = dominance_table(dp, comparisons, options.min_pairs, _varied(store, dp))
    rec = rules.recommend(dp, comparisons, options.families, options.min_pairs)
    if rec.empty:
        return VerdictParts(pd.DataFrame(columns=rules.VERDICT_COLUMNS), comparisons, dominance,
                            pd.DataFrame(columns=ds.DOWNSTREAM_COLUMNS))
    recmap = {(r.algorithm, int(r.cutoff), str(r.family)): str(r.recommended)
              for r in rec.itertuples()}
    whole = dp[dp["scope"] == "all"]
    judges = {f: family_judge(f, ms, options.primary_metric, options.families)
              for f, ms in family_groups(whole["metric"], options.families)}
    downstream = (ds.downstream_table(best, recmap, _test_reader(store), judges,
                                      options.alpha, options.families)
                  if best is not None and not best.empty
                  else pd.DataFrame(columns=ds.DOWNSTREAM_COLUMNS))
    verdict = rules.verdict_table(dp, comparisons, floor=floor, downstream=downstream,
                                  dominance=dominance, recommended=rec, families=options.families,
                                  min_pairs=options.min_pairs, judges=judges)
    return VerdictParts(verdict, comparisons, dominance, downstream)
