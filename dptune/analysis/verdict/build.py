"""Glue: the verdict of one store from the analysis' tables (robust DP, claims, noise floor,
importance, best configurations) and the store's test split (the downstream check)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis.dp import stability as sb
from dptune.analysis.dp.estimator import RobustResult
from dptune.analysis.options import DEFAULT_FAMILIES, MIN_PAIRS
from dptune.analysis.verdict import downstream as ds
from dptune.analysis.verdict import rules as vd
from dptune.store._per_user_store import has_test_split

__all__ = ["verdict_for_store"]


def _test_reader(store: Any) -> ds.TestReader | None:
    """The store's reader of test-split values, or None when its data has no test split
    (outside data without a fold named ``test``:
    :func:`dptune.store._per_user_store.has_test_split`)."""
    manifest = getattr(store, "manifest", None)
    if callable(manifest) and not has_test_split(manifest()):
        return None

    def read(algorithm: str, metric: str, cutoff: int,
             ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return store.read_matrix(algorithm, metric, int(cutoff), "test", ids)
    return read


def verdict_for_store(store: Any, dp: pd.DataFrame, robust: RobustResult, *, alpha: float,
                      best: pd.DataFrame | None, primary: tuple[str, int],
                      noise_table: pd.DataFrame | None = None,
                      importance: pd.DataFrame | None = None,
                      families: vd.Families = DEFAULT_FAMILIES,
                      min_pairs: int = MIN_PAIRS) -> pd.DataFrame:
    """The verdict frame (:data:`dptune.analysis.verdict.rules.VERDICT_COLUMNS`) of a store, one row
    per (algorithm, cutoff, family of metrics).

    ``dp``: the paper's DP table (Table 5 / one-at-a-time scopes for the dominance);
    ``robust``: :class:`dptune.analysis.dp.estimator.RobustResult` with the ranking of every
    stability repeat; ``best``: ``best_configs`` (the configuration each metric@N selects);
    ``noise_table``: DP beside its A/A floor (``mean_p`` column) or None; ``importance``: the
    optuna importances or None. Significance level ``1 - alpha``. Each family's choice is
    judged on the test split by its judge (:func:`dptune.analysis.verdict.rules.family_judge`).
    """
    level = 1.0 - float(alpha)
    if robust.table.empty:
        return pd.DataFrame(columns=vd.VERDICT_COLUMNS)
    claims = sb.claims(robust.ranking, level) if robust.ranking is not None else None
    rec = vd.recommend(robust.table, claims, families, min_pairs)
    recmap = {(r.algorithm, int(r.cutoff), str(r.family)): str(r.recommended)
              for r in rec.itertuples()}
    judges = {f: vd.family_judge(f, ms, primary[0], families)
              for f, ms in vd.family_groups(robust.table["metric"], families)}
    downstream = None
    if best is not None and not best.empty:
        downstream = ds.downstream_check(best, recmap, _test_reader(store), judges,
                                         float(alpha), families)
    dominance = {}
    for key, metric in recmap.items():
        if metric:
            ev = ds.dominance_evidence(dp, importance, key[0], metric, key[1], min_pairs)
            if ev is not None:
                dominance[key] = ev
    floor = None
    if noise_table is not None and not noise_table.empty and "mean_p" in noise_table.columns:
        floor = noise_table[["algorithm", "metric", "cutoff", "mean_p"]]
    return vd.verdict_frame(robust.table, claims, level, floor=floor, downstream=downstream,
                            dominance=dominance, recommended=rec, families=families,
                            min_pairs=min_pairs, judges=judges)
