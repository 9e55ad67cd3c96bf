"""The analysis result: every table the analysis computes for one result store, as data.

:func:`dptune.analyze` returns an :class:`AnalysisResult`; it holds DataFrames only (no
Markdown, no figures) so that computing stays separate from writing. Its parts: the DP
(:class:`DPResult`: the paper's DP, its curves, the bootstrap interval and ranking), the A/A noise
floor (:class:`dptune.analysis.noise.NoiseFloor`), the best configurations, Table 1's data set
row, importance and the verdict, with the options and the manifest they were computed from.
``dptune.Report.build`` / ``dptune.Report.from_result`` render it (tables, figures, report.md /
report.html); :meth:`AnalysisResult.write_data` writes the data files (dp.csv, curves.csv, ...)
that a report lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dptune._atomic import atomic_path
from dptune.analysis.options import AnalysisOptions
from dptune.vocab import CSV_FLOAT

if TYPE_CHECKING:
    from dptune.analysis.noise import NoiseFloor

__all__ = ["AnalysisResult", "DPResult", "DATA_FILES", "write_table"]

#: Data file written for each table of the result, keyed by its attribute path (``dp.table`` is
#: ``result.dp.table``), in writing order; a table that is None is not written. The tables of
#: every single p-value (one row per pair, metric@N and fold: millions of rows on a large grid)
#: are Parquet, the others CSV.
DATA_FILES: dict[str, str] = {
    "dp.pairs": "pairs.csv",
    "dp.pvalues": "pvalues.parquet",
    "dp.table": "dp.csv",
    "dp.curves": "curves.csv",
    "noise.versus_dp": "noise_floor.csv",
    "noise.curves": "noise_curves.csv",
    "noise.pvalues": "noise_pvalues.parquet",
    "importance": "importance.csv",
    "best": "best_configs.csv",
    "verdict": "verdict.csv",
    "dp.interval": "robust_dp.csv",
    "dp.ranking": "robust_ranking.csv",
}


@dataclass(frozen=True)
class DPResult:
    """The DP part of an analysis: which pairs were tested, their p-values, the DP they give,
    and how sure that DP is.

    - ``pairs``, ``pvalues``, ``table`` (dp.csv: the paper's DP per algorithm, scope, metric and
      cutoff), ``curves``: as :class:`dptune.analysis.dp.tables.Analysis` documents them
      (``table`` is its ``dp``).
    - ``interval``: the DP of scope ``all`` per (algorithm, metric, cutoff) on the same pairs
      (mean p-value, DP per 25 pairs and its bootstrap interval; robust_dp.csv), or None
      without a pair. The verdict and the DP figure read it.
    - ``ranking``: P(A more discriminative than B) for every stability repeat of the bootstrap
      (robust_ranking.csv), or None.
    - ``without``: algorithm -> the reason it has no DP (e.g. a single configuration), so that
      the report names every algorithm of the study.
    """

    pairs: pd.DataFrame
    pvalues: pd.DataFrame
    table: pd.DataFrame
    curves: pd.DataFrame
    interval: pd.DataFrame | None = None
    ranking: pd.DataFrame | None = None
    without: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AnalysisResult:
    """Everything computed by the analysis of one store (long DataFrames, sorted, reproducible).

    Frozen: :func:`dptune.analyze` builds it once, from parts computed in order (DP and its
    bootstrap, selection, noise floor, importance, then the verdict that cites them);
    ``dataclasses.replace(result, ...)`` gives a changed copy (``result.dp`` and
    ``result.noise`` are frozen too, and are replaced the same way).

    - ``dp``: the DP part (:class:`DPResult`): pairs, p-values, dp.csv, curves, the bootstrap
      interval and ranking, and the algorithms without DP.
    - ``best``: the best configuration per metric@cutoff (validation mean, test value), or None.
    - ``datasets``: Table 1 rows (dataset, users, items, ratings, sparsity), or None.
    - ``noise``: the A/A noise floor (:class:`dptune.analysis.noise.NoiseFloor`: A/A p-values,
      curves, the floor per metric@N, the configurations and seeds re-trained, and
      ``versus_dp``, DP beside its floor), or None without noise-floor runs.
    - ``importance``: fANOVA / PED-ANOVA importances, or None when off.
    - ``verdict``: one row per (algorithm, cutoff) with the recommended tuning metric and its
      evidence, or None (columns in ``docs/statistics.md`` section 13).
    - ``options``: the validated :class:`dptune.AnalysisOptions` used (``seed`` resolved); the
      primary metric@N (:attr:`primary`) and the verdict's families come from them.
    - ``manifest``: the store's manifest (data set, split, evaluation, seeds, versions).
    """

    dp: DPResult
    best: pd.DataFrame | None = None
    datasets: pd.DataFrame | None = None
    noise: NoiseFloor | None = None
    importance: pd.DataFrame | None = None
    verdict: pd.DataFrame | None = None
    options: AnalysisOptions = field(default_factory=AnalysisOptions)
    manifest: Mapping[str, Any] = field(default_factory=dict)

    @property
    def primary(self) -> tuple[str, int]:
        """The primary metric and cutoff of the options (Table 5, the best configurations,
        importance, Figure 1's main cutoff)."""
        return (str(self.options.primary_metric), int(self.options.primary_cutoff))

    # Shown in a notebook: the verdict and the DP figure. Rendering belongs to the report, so
    # these two display hooks are the one place where the analysis calls into dptune.report.
    def _repr_markdown_(self) -> str:
        """The verdict as Markdown (:func:`dptune.report._notebook.result_markdown`)."""
        from dptune.report._notebook import result_markdown

        return result_markdown(self)

    def _repr_html_(self) -> str:
        """The verdict and the DP figure of the primary cutoff as HTML
        (:func:`dptune.report._notebook.result_html`)."""
        from dptune.report._notebook import result_html

        return result_html(self)

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
