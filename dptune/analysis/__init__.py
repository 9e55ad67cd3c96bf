"""Analysis: a result store and :class:`AnalysisOptions` in, an :class:`AnalysisResult` out.

:func:`analyze` (``dptune.analyze``) is the front door; this package exports it, its options
(:class:`AnalysisOptions`, :func:`validate_options`) and its result (:class:`AnalysisResult`,
:data:`DATA_FILES`) and nothing else. Every other name is imported from the module that
defines it. Where each number comes from:

- ``analysis/pipeline.py``: :func:`analyze`, the glue that runs the pieces below in order.
- ``analysis/options.py``: :class:`AnalysisOptions` and :func:`validate_options`, the one place
  analysis options are checked.
- ``analysis/result.py``: :class:`AnalysisResult` (every table as a DataFrame, the contract with
  the report; its DP part is a :class:`~dptune.analysis.result.DPResult`, its noise part a
  :class:`~dptune.analysis.noise.NoiseFloor`) and the data files it writes (dp.csv,
  curves.csv, ...).
- ``analysis/route.py``: the one DP route of :func:`analyze`: the tables' DP and, fed from the
  same fold reads, the bootstrap pass, then the verdict.
- ``analysis/dp/``: the DP estimator (pairs, paired tests, curves, DP per 25 pairs, its
  bootstrap interval, stability, degenerate cases, the fold loop over the store, the
  interval's measured coverage): pairs.csv, pvalues.parquet, dp.csv, curves.csv,
  robust_dp.csv, robust_ranking.csv. See its ``__init__``.
- ``analysis/noise.py``: the A/A noise floor (noise_floor.csv, noise_curves.csv,
  noise_pvalues.parquet).
- ``analysis/importance/``: fANOVA / PED-ANOVA importance and the DP-based dominance
  (importance.csv).
- ``analysis/verdict/``: the verdict (verdict.csv): its rules, the downstream check on the test
  split and the dominant hyperparameter, and the glue that feeds them.
- ``analysis/selection.py``: the configuration each metric@N selects (best_configs.csv), Table
  1's row, why an algorithm has no DP.
- ``analysis/subgrid.py``: the paper's sub-grid around the best configuration.
"""

from dptune.analysis.options import AnalysisOptions, validate_options
from dptune.analysis.pipeline import analyze
from dptune.analysis.result import DATA_FILES, AnalysisResult

__all__ = [
    "analyze",
    "AnalysisOptions",
    "validate_options",
    "AnalysisResult",
    "DATA_FILES",
]
