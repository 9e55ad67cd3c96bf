"""Does the choice of metric matter on the test split? (downstream.csv)

Each metric@N selects a configuration on validation (the best mean over the validation folds,
``best_configs.csv``). Per family of metrics (the verdict's families), on the test split, the
configuration selected by the family's recommended metric and the one selected by every other
metric of the same family are compared on one yardstick of that family, its **judge** at the
same cutoff N (:func:`dptune.analysis.verdict.families.family_judge`: by default nDCG@N for
accuracy, EPC@N for novelty), so that like is compared with like: a paired two-sided t-test
over the test users, ``p < alpha`` = the choice of metric changes the outcome significantly. A
metric that selects the recommended metric's own configuration needs no test.

These tests are reported one by one at level ``alpha`` (each answers "does this metric's choice
differ from the recommended one's?" for a reader who tunes with that metric); they are not
claims about discriminative power and take no part in the verdict's error control.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from dptune.analysis.dp.paired_tests import paired_pvalues
from dptune.analysis.options import DEFAULT_FAMILIES
from dptune.analysis.verdict.families import Families, family_groups
from dptune.errors import DptuneError

__all__ = ["DOWNSTREAM_COLUMNS", "TestReader", "downstream_table"]

#: ``read(algorithm, metric, cutoff, config_ids) -> (users, values (len(config_ids), n_users))``
#: on the test split.
TestReader = Callable[[str, str, int, np.ndarray], tuple[np.ndarray, np.ndarray]]

#: downstream.csv: one row per (algorithm, cutoff, family, metric of the family). ``status``:
#: ``compared`` (tested against the recommended metric's choice), ``recommended`` (the
#: recommended metric itself), ``same`` (it selects the recommended metric's configuration),
#: ``no_test`` (no test-split values for these configurations: not evaluated, or outside data
#: without a fold named ``test``).
DOWNSTREAM_COLUMNS = ["algorithm", "cutoff", "family", "judge", "metric", "config_id",
                      "params", "recommended_config", "status", "test_mean", "p",
                      "significant", "n_test_users"]


def downstream_table(best: pd.DataFrame, recommended: Mapping[tuple[str, int, str], str],
                     read_test: TestReader | None, judges: Mapping[str, str],
                     alpha: float = 0.05, families: Families = DEFAULT_FAMILIES
                     ) -> pd.DataFrame:
    """downstream.csv (module docstring). ``best`` has ``algorithm, metric, cutoff, config_id
    [, params]``; ``recommended`` maps (algorithm, cutoff, family) to the family's recommended
    metric; ``judges`` a family to its judge; ``read_test`` reads per-user test values of a
    metric@N (None: no test split)."""
    rows = []
    for (alg, cutoff, family), rec in recommended.items():
        b = best[(best["algorithm"] == alg) & (best["cutoff"] == cutoff)]
        if b.empty or not rec or family not in judges:
            continue
        members = dict(family_groups(b["metric"].astype(str), families)).get(family, [])
        b = b[b["metric"].astype(str).isin(members)]
        cfg = dict(zip(b["metric"].astype(str), b["config_id"].astype(int), strict=True))
        if rec not in cfg:
            continue
        params = dict(zip(b["config_id"].astype(int), b["params"].astype(str), strict=False)) \
            if "params" in b.columns else {}
        judge = judges[family]
        ids = np.array(sorted(set(cfg.values())), dtype=np.int64)
        values = users = None
        if read_test is not None and len(ids) > 1:
            try:
                users, values = read_test(alg, judge, int(cutoff), ids)
                values = np.asarray(values, dtype=np.float64)
                if values.ndim != 2 or values.shape[1] == 0:
                    values = None
            except DptuneError:  # no test-split values for these configurations
                values = None
        row_of = {int(c): i for i, c in enumerate(ids)}
        for m in [x for x in members if x in cfg]:
            c = cfg[m]
            status = "recommended" if m == rec else "same" if c == cfg[rec] else "compared"
            mean = p = np.nan
            sig = False
            if values is not None:
                mean = float(values[row_of[c]].mean())
                if status == "compared":
                    p = float(paired_pvalues(values[row_of[cfg[rec]]], values[row_of[c]])[0])
                    sig = bool(p < alpha)
            elif status == "compared":
                status = "no_test"
            rows.append({"algorithm": alg, "cutoff": int(cutoff), "family": family,
                         "judge": judge, "metric": m, "config_id": c,
                         "params": params.get(c, ""), "recommended_config": cfg[rec],
                         "status": status, "test_mean": mean, "p": p, "significant": sig,
                         "n_test_users": 0 if users is None or values is None else len(users)})
    return pd.DataFrame(rows, columns=DOWNSTREAM_COLUMNS)
