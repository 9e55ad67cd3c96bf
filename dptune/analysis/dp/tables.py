"""The tables of the DP analysis: their columns, the store protocol the analysis reads, and
:class:`Analysis`, the result of :func:`dptune.analysis.dp.engine.analyze`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from dptune.vocab import METRICS

__all__ = ["METRIC_ORDER", "PAIRS_COLUMNS", "PVALUES_COLUMNS", "DP_COLUMNS", "CURVES_COLUMNS",
           "ResultStoreLike", "Analysis"]

#: Order of metrics in every output table (:data:`dptune.vocab.METRICS`).
METRIC_ORDER: tuple[str, ...] = METRICS

PAIRS_COLUMNS = ["algorithm", "scope", "pair_index", "config_a", "config_b", "seed"]
PVALUES_COLUMNS = [
    "algorithm",
    "scope",
    "metric",
    "cutoff",
    "fold",
    "pair_index",
    "p",
    "n_users",
]
DP_COLUMNS = [
    "algorithm",
    "scope",
    "metric",
    "cutoff",
    "dp",
    "dp_plus_sd",
    "dp_minus_sd",
    "n_pairs",
    "n_folds",
    "sakai",
    "sakai_sd",
]
CURVES_COLUMNS = ["algorithm", "scope", "metric", "cutoff", "position", "mean", "sd"]



class ResultStoreLike(Protocol):
    """What :func:`analyze` needs from a result store (``dptune.store._store.ResultStore``)."""

    def algorithms(self) -> list[str]: ...
    def configs(self, algorithm: str) -> pd.DataFrame: ...
    def hyperparameters(self, algorithm: str) -> list[str]: ...
    def folds(self, algorithm: str) -> list[str]: ...
    def metric_cutoffs(self, algorithm: str) -> list[tuple[str, int]]: ...
    def read_matrix(
        self, algorithm: str, metric: str, cutoff: int, fold: str, config_ids: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass
class Analysis:
    """Result of :func:`analyze`: long tables, sorted by (algorithm, scope, metric, cutoff, ...).

    Algorithms follow the store's order, scopes the generation order of :func:`scope_pairs`,
    metrics :data:`METRIC_ORDER`, cutoffs ascending, folds numerically.

    - ``pairs``: ``algorithm, scope, pair_index, config_a, config_b, seed`` (seed of the scope).
    - ``pvalues``: ``algorithm, scope, metric, cutoff, fold, pair_index, p, n_users`` -- raw,
      uncorrected p of the pair on the fold and the number of users it was computed on.
    - ``dp``: ``algorithm, scope, metric, cutoff, dp, dp_plus_sd, dp_minus_sd, n_pairs, n_folds,
      sakai, sakai_sd, test, correction, alpha``.
    - ``curves``: ``algorithm, scope, metric, cutoff, position, mean, sd``; ``position`` 0 is the
      largest averaged p-value.
    """

    pairs: pd.DataFrame
    pvalues: pd.DataFrame
    dp: pd.DataFrame
    curves: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def tables(self) -> dict[str, pd.DataFrame]:
        """Attribute name -> table, in the order :meth:`write` writes them."""
        return {"pairs": self.pairs, "pvalues": self.pvalues, "dp": self.dp,
                "curves": self.curves}

    def write(self, out_dir: str | Path) -> list[Path]:
        """Write pairs.csv, pvalues.parquet, dp.csv and curves.csv into ``out_dir``, as
        :meth:`dptune.AnalysisResult.write_data` writes them (a re-run writes the same bytes)."""
        from dptune.analysis.result import DATA_FILES, write_table

        out = Path(out_dir)
        # an analysis result holds these four tables in its DP part, ``dp`` as ``dp.table``
        keys = {"pairs": "dp.pairs", "pvalues": "dp.pvalues", "dp": "dp.table",
                "curves": "dp.curves"}
        return [write_table(t, out / DATA_FILES[keys[name]]) for name, t in self.tables().items()]


def _pvalue_frame(
    alg: str, scope: str, recs: list[tuple[str, int, str, np.ndarray, int]], n_p: int
) -> pd.DataFrame:
    """The ``pvalues`` rows of one scope, ``recs`` = (metric, cutoff, fold, p, n_users) in
    (fold, metric@N) order, as one frame (the same columns and dtypes as one frame per record,
    concatenated, at a fraction of the cost)."""
    n = len(recs)
    return pd.DataFrame(
        {
            "algorithm": alg,
            "scope": scope,
            "metric": np.repeat(np.array([r[0] for r in recs], dtype=object), n_p),
            "cutoff": np.repeat(np.array([r[1] for r in recs], dtype=np.int64), n_p),
            "fold": np.repeat(np.array([r[2] for r in recs], dtype=object), n_p),
            "pair_index": np.tile(np.arange(n_p), n),
            "p": np.concatenate([np.asarray(r[3], dtype=np.float64) for r in recs]),
            "n_users": np.repeat(np.array([r[4] for r in recs], dtype=np.int64), n_p),
        }
    )


def _frame(rows: list[tuple], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns)


def _concat(parts: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]
