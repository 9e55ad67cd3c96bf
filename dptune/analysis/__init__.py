"""Analysis: a result store and :class:`AnalysisOptions` in, an :class:`AnalysisResult` out.

:func:`analyze` (``dptune.analyze``) is the front door; this package exports it, its options
(:class:`AnalysisOptions`, :func:`validate_options`) and its result (:class:`AnalysisResult`,
:data:`DATA_FILES`) and nothing else. Every other name is imported from the module that
defines it. Where each number comes from:

- ``analysis/pipeline.py``: :func:`analyze`, the glue that runs the pieces below in order.
- ``analysis/options.py``: :class:`AnalysisOptions` and :func:`validate_options`, the one place
  analysis options are checked.
- ``analysis/result.py``: :class:`AnalysisResult` (every table as a DataFrame, the contract with
  the report) and the data files it writes.
- ``analysis/dp/``: the DP estimator: pairs and scopes, the paired tests (strategy objects),
  the one fold loop (``fold_loop.py``: pairs.csv, pvalues.parquet, dp.csv, curves.csv), DP per
  25 pairs, its bootstrap interval, the comparisons behind every claim and their stability,
  degenerate cases. See its ``__init__``. (The simulation studies that measure the interval's
  coverage and the claims' error rates are in ``dptune/studies/``.)
- ``analysis/noise.py``: the A/A noise floor (noise_floor.csv, noise_curves.csv,
  noise_pvalues.parquet).
- ``analysis/importance/``: fANOVA / PED-ANOVA importance (importance.csv).
- ``analysis/verdict/``: the families of metrics, the claims (comparisons.csv), the dominant
  hyperparameter (dominance.csv), the downstream check (downstream.csv) and the verdict
  (verdict.csv).
- ``analysis/selection.py``: the configuration each metric@N selects (best_configs.csv), Table
  1's row.
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
