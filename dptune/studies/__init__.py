"""Studies beyond the paper, and the simulations that measure the analysis.

- ``seeds/``: the split-seed study, hold-out vs k-fold cross-validation over data-split seeds
  (Wegmeth et al. 2023); :func:`run_seeds_study`, ``dptune seeds``.
- ``slices/``: the user-slice study, metrics, miss rate and DP per log-scaled user slice
  (EvalRS 2022); :func:`run_slices_study`, ``dptune slices``.
- ``simulations/``: Monte Carlo studies on synthetic populations, run by the tests and quoted
  in ``docs/statistics.md``: the DP interval's coverage (``coverage``), the claims' false-claim
  rate and power and the dominance answer's error rates (``error_rates``), and the DP of a
  subset of a grid's units (``grid_sample``).

The command line parses its flags and calls the two front functions, the only names this
package exports; everything else is imported from its module.
"""

from dptune.studies.seeds.study import run_seeds_study
from dptune.studies.slices.study import run_slices_study

__all__ = ["run_seeds_study", "run_slices_study"]
