"""Studies beyond the paper: the split-seed study and the user-slice study.

:func:`run_seeds_study` (hold-out vs k-fold CV over data-split seeds, Wegmeth et al. 2023) and
:func:`run_slices_study` (metrics, miss rate and DP per log-scaled user slice, EvalRS 2022) are
the front functions; the command line (``dptune seeds``, ``dptune slices``) parses its flags
and calls them. Each study is split into settings, computation, figure and report modules.

The simulations that measure the analysis, run by the tests and ``docs/statistics.md`` only, are
imported from their modules (this package does not re-export them): ``_coverage`` (the DP
interval's coverage), ``_error_rates`` (the claims' false-claim rate and power, the dominance
answer's error rates) and ``_grid_sample`` (the DP of a subset of a grid's units).
"""

from dptune.studies._seeds import run_seeds_study, seeds_folder_name
from dptune.studies._seeds_figure import seeds_figure
from dptune.studies._seeds_report import seeds_report_md, summary_table
from dptune.studies._seeds_runs import SeedPlan, grid_rows, read_defaults, study_ratings
from dptune.studies._seeds_settings import (
    SPLIT_NAMES,
    SPLITS,
    SeedSettings,
    default_config,
    load_seed_experiment,
    parse_seed_settings,
    resolve_configs,
    split_seeds,
)
from dptune.studies._seeds_stats import (
    PER_SEED_COLUMNS,
    grid_stability,
    kendall_table,
    pct_of_mean,
    per_seed_table,
    pooled_tests,
    summarize,
)
from dptune.studies._slices import run_slices_study
from dptune.studies._slices_bins import (
    KIND_NAMES,
    SLICE_KINDS,
    assign_slices,
    bin_bounds,
    bin_label,
    log_bin,
    members_by_slice,
    user_features,
)
from dptune.studies._slices_dp import main_pairs, slice_dp, slice_metrics
from dptune.studies._slices_figure import slices_figure
from dptune.studies._slices_report import slices_report_md

__all__ = [
    "run_seeds_study",
    "seeds_folder_name",
    "SPLITS",
    "SPLIT_NAMES",
    "SeedSettings",
    "parse_seed_settings",
    "load_seed_experiment",
    "split_seeds",
    "default_config",
    "resolve_configs",
    "SeedPlan",
    "study_ratings",
    "read_defaults",
    "grid_rows",
    "PER_SEED_COLUMNS",
    "pct_of_mean",
    "per_seed_table",
    "summarize",
    "pooled_tests",
    "kendall_table",
    "grid_stability",
    "seeds_figure",
    "summary_table",
    "seeds_report_md",
    "run_slices_study",
    "SLICE_KINDS",
    "KIND_NAMES",
    "log_bin",
    "bin_bounds",
    "bin_label",
    "user_features",
    "assign_slices",
    "members_by_slice",
    "main_pairs",
    "slice_dp",
    "slice_metrics",
    "slices_figure",
    "slices_report_md",
]
