"""The analysis result: every table the analysis computes for one result store, as data.

:func:`dptune.analyze` returns an :class:`AnalysisResult`; it holds DataFrames only (no
Markdown, no figures) so that computing stays separate from writing. ``dptune.Report.build``
renders it (tables, figures, report.md / report.html); :meth:`AnalysisResult.write_data` writes
the data files (dp.csv, curves.csv, ...) that a report lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dptune._atomic import atomic_path
from dptune.vocab import CSV_FLOAT

__all__ = ["AnalysisResult", "DATA_FILES", "write_table"]

#: Data file written for each non-empty table attribute, in writing order. The tables of every
#: single p-value (one row per pair, metric@N and fold: millions of rows on a large grid) are
#: Parquet, the others CSV.
DATA_FILES: dict[str, str] = {
    "pairs": "pairs.csv",
    "pvalues": "pvalues.parquet",
    "dp": "dp.csv",
    "curves": "curves.csv",
    "noise_floor": "noise_floor.csv",
    "noise_curves": "noise_curves.csv",
    "noise_pvalues": "noise_pvalues.parquet",
    "importance": "importance.csv",
    "best": "best_configs.csv",
    "verdict": "verdict.csv",
    "robust": "robust_dp.csv",
    "robust_ranking": "robust_ranking.csv",
}


@dataclass(frozen=True)
class AnalysisResult:
    """Everything computed by the analysis of one store (long DataFrames, sorted, reproducible).

    Frozen: :func:`dptune.analyze` builds it once, from parts computed in order (DP and its
    bootstrap, selection, noise floor, importance, then the verdict that cites them);
    ``dataclasses.replace(result, ...)`` gives a changed copy.

    - ``options``: the validated :class:`dptune.AnalysisOptions` used (``seed`` resolved).
    - ``manifest``: the store's manifest (data set, split, evaluation, seeds, versions).
    - ``pairs``, ``pvalues``, ``dp``, ``curves``: as :class:`dptune.analysis.dp.tables.Analysis`
      documents them (dp.csv is the paper's DP per algorithm, scope, metric and cutoff).
    - ``noise_floor`` (DP beside its A/A floor, :func:`compare_with_floor`), ``noise_curves``,
      ``noise_pvalues``: None without noise-floor runs. ``aa_floor``: the A/A floor per
      (algorithm, metric, cutoff) before it is joined to DP (``NoiseFloor.floor``);
      ``noise_configs``: algorithm -> the configuration ids re-trained with several seeds;
      ``noise_seed_counts``: algorithm -> the number of seeds used.
    - ``importance``: fANOVA / PED-ANOVA importances, or None when off.
    - ``best``: the best configuration per metric@cutoff (validation mean, test value).
    - ``datasets``: Table 1 rows (dataset, users, items, ratings, sparsity).
    - ``without_dp``: algorithm -> the reason it has no DP (e.g. a single configuration).
    - ``verdict``: one row per (algorithm, cutoff) with the recommended tuning metric and its
      evidence, or None (columns in ``docs/statistics.md`` section 13).
    - ``robust``: the DP of scope ``all`` per (algorithm, metric, cutoff) on the tables' own
      pairs (mean p-value, DP per 25 pairs and its bootstrap interval); ``robust_ranking``:
      P(A more discriminative than B) for every stability repeat; None without a pair.
    """

    options: Any
    manifest: Mapping[str, Any]
    primary: tuple[str, int]
    pairs: pd.DataFrame
    pvalues: pd.DataFrame
    dp: pd.DataFrame
    curves: pd.DataFrame
    best: pd.DataFrame
    datasets: pd.DataFrame
    noise_floor: pd.DataFrame | None = None
    noise_curves: pd.DataFrame | None = None
    noise_pvalues: pd.DataFrame | None = None
    importance: pd.DataFrame | None = None
    without_dp: dict[str, str] = field(default_factory=dict)
    verdict: pd.DataFrame | None = None
    robust: pd.DataFrame | None = None
    robust_ranking: pd.DataFrame | None = None
    aa_floor: pd.DataFrame | None = None
    noise_configs: dict[str, list[int]] = field(default_factory=dict)
    noise_seed_counts: dict[str, int] = field(default_factory=dict)

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
        """The non-empty data tables by attribute name, in :data:`DATA_FILES` order."""
        out = {}
        for name in DATA_FILES:
            df = getattr(self, name)
            if df is not None:
                out[name] = df
        return out

    def write_data(self, out: str | Path) -> list[Path]:
        """Write every data table into ``out`` (atomically, :func:`write_table`); return the
        paths."""
        out = Path(out)
        return [write_table(df, out / DATA_FILES[name]) for name, df in self.tables().items()]


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
