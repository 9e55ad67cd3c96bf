"""Where the command line finds the API functions it calls, in one place.

The API is being regrouped (issue 15: the analysis front functions move to ``dptune._api``, the
noise floor's training to ``dptune.sweep``, the studies' front functions to
``dptune.studies``); each name is taken from its new home when it is there, else from the
former one.
"""

from __future__ import annotations

try:
    from dptune._api import analyze_results, analyze_runs
except ImportError:  # before the API regroup
    from dptune.analysis._analyze import analyze_results, analyze_runs

try:
    from dptune.sweep._noise import run_noise_floor
except ImportError:  # before the API regroup
    from dptune.analysis._noise import run_noise_floor

try:
    from dptune.studies import run_seeds_study, run_slices_study
except ImportError:  # before the studies' split
    from dptune.studies.seeds import run_seed_study as run_seeds_study
    from dptune.studies.slices import slice_analysis as run_slices_study

__all__ = ["analyze_results", "analyze_runs", "run_noise_floor", "run_seeds_study", "run_slices_study"]
