"""The analysis result: every number the analysis computes for one result store, as data.

:func:`dptune.analyze` returns an :class:`AnalysisResult`: typed, numeric tables only (no prose,
no Markdown, no figures), so that computing stays separate from writing. Its parts: the DP
estimate (:class:`dptune.analysis.dp.tables.DPEstimate`: pairs, p-values, dp.csv with every DP
on the one scale and its interval, curves), the comparisons behind every claim, the dominant
hyperparameter, the downstream check, the verdict, the A/A noise floor
(:class:`dptune.analysis.noise.NoiseFloor`), the best configurations, Table 1's data set row
and importance, with the options, the manifest and the configurations they were computed from.
``dptune.Report.build`` / ``dptune.Report.from_result`` render it (tables, figures, report.md /
report.html); :meth:`AnalysisResult.write_data` writes the data files a report lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dptune._atomic import atomic_path
from dptune.analysis.dp.tables import DPEstimate
from dptune.analysis.options import AnalysisOptions
from dptune.errors import check_path
from dptune.vocab import CSV_FLOAT

if TYPE_CHECKING:
    from dptune.analysis.noise import NoiseFloor

__all__ = ["AnalysisResult", "DATA_FILES", "write_table"]

#: Data file written for each table of the result, keyed by its attribute path (``dp.table`` is
#: ``result.dp.table``), in writing order; a table that is None is not written. The tables of
#: every single p-value (one row per pair, metric@N and fold: millions of rows on a large grid)
#: are Parquet, the others CSV.
DATA_FILES: dict[str, str] = {
    "dp.pairs": "pairs.csv",
    "dp.pvalues": "pvalues.parquet",
    "dp.table": "dp.csv",
    "dp.curves": "curves.csv",
    "dp.grid_sample": "grid_sample.csv",
    "comparisons": "comparisons.csv",
    "dominance": "dominance.csv",
    "downstream": "downstream.csv",
    "noise.versus_dp": "noise_floor.csv",
    "noise.curves": "noise_curves.csv",
    "noise.pvalues": "noise_pvalues.parquet",
    "importance": "importance.csv",
    "best": "best_configs.csv",
    "verdict": "verdict.csv",
}


@dataclass(frozen=True)
class AnalysisResult:
    """Everything computed by the analysis of one store (long DataFrames, sorted, reproducible).

    Frozen: :func:`dptune.analyze` builds it once, from parts computed in order (the fold loop,
    selection, noise floor, importance, then the comparisons, dominance, downstream check and
    verdict that cite them); ``dataclasses.replace(result, ...)`` gives a changed copy.

    - ``dp``: the DP estimate (:class:`~dptune.analysis.dp.tables.DPEstimate`): pairs,
      p-values, dp.csv (every DP per 25 pairs with P beside it and, for scopes ``all`` and
      ``only:<h>``, its 95% interval), curves, the bootstrap's paired replicates and the
      algorithms without DP.
    - ``comparisons``: comparisons.csv, the test behind every "significantly" (metrics within
      a family, hyperparameters within a metric@N; family-wise error rate ``alpha``).
    - ``dominance``: dominance.csv, the dominant hyperparameter per algorithm and metric@N.
    - ``downstream``: downstream.csv, the choices of a family's metrics compared on the test
      split.
    - ``verdict``: verdict.csv, one row per (algorithm, cutoff, family of metrics).
    - ``best``: the best configuration per metric@cutoff (validation mean, test value), or None.
    - ``datasets``: Table 1 rows (dataset, users, items, ratings, sparsity), or None.
    - ``noise``: the A/A noise floor (:class:`dptune.analysis.noise.NoiseFloor`), or None.
    - ``importance``: fANOVA / PED-ANOVA importances, or None when off.
    - ``options``: the validated :class:`dptune.AnalysisOptions` used (``seed`` resolved).
    - ``manifest``: the store's manifest (data set, split, evaluation, seeds, versions).
    - ``configurations``: every configuration of the store (``algorithm, config_id`` and the
      hyperparameter columns; a per-user table's ``system`` names), or None (a result built by
      hand). The report names configurations by it, so that it renders a result without the
      store; it is not a data file.
    """

    dp: DPEstimate
    comparisons: pd.DataFrame | None = None
    dominance: pd.DataFrame | None = None
    downstream: pd.DataFrame | None = None
    verdict: pd.DataFrame | None = None
    best: pd.DataFrame | None = None
    datasets: pd.DataFrame | None = None
    noise: NoiseFloor | None = None
    importance: pd.DataFrame | None = None
    options: AnalysisOptions = field(default_factory=AnalysisOptions)
    manifest: Mapping[str, Any] = field(default_factory=dict)
    configurations: pd.DataFrame | None = None

    @property
    def primary(self) -> tuple[str, int]:
        """The primary metric and cutoff of the options: it picks the noise-floor
        configurations, orders Table 5 and the one-at-a-time table, and is Figure 1's main
        cutoff."""
        return (str(self.options.primary_metric), int(self.options.primary_cutoff))

    def __repr__(self) -> str:
        algs = list(dict.fromkeys(self.dp.table["algorithm"])) if len(self.dp.table) else []
        n = 0 if self.verdict is None else len(self.verdict)
        return (f"AnalysisResult(algorithms={algs}, dp rows={len(self.dp.table)}, "
                f"verdict rows={n}; render with dptune.Report.from_result(result))")

    def tables(self) -> dict[str, pd.DataFrame]:
        """The data tables that are not None, by attribute path (``dp.table``), in
        :data:`DATA_FILES` order."""
        out = {}
        for path in DATA_FILES:
            df: Any = self
            for name in path.split("."):
                df = getattr(df, name)
                if df is None:
                    break
            if df is not None:
                out[path] = df
        return out

    def write_data(self, out: str | Path) -> list[Path]:
        """Write every data table into ``out`` (atomically, :func:`write_table`); return the
        paths."""
        check_path(out, "write_data", "out", "the folder to write into")
        out = Path(out)
        return [write_table(df, out / DATA_FILES[key]) for key, df in self.tables().items()]


def write_table(df: pd.DataFrame, path: Path) -> Path:
    """Write one data table atomically, by the file's suffix: ``.csv`` with floats as
    ``%.10g``, ``\\n`` line ends and no index; ``.parquet`` (zstd, every float64 exact, no
    index). The same table writes the same bytes again."""
    with atomic_path(path, fsync=False) as tmp:
        if path.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp,
                           compression="zstd")
        else:
            df.to_csv(tmp, index=False, float_format=CSV_FLOAT, lineterminator="\n")
    return path
