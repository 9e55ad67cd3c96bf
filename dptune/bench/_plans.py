"""What a benchmark run measures: the plans (full ML-1M, --small ML-100K, --tiny for the
tests), the scale plans (unit costs on ML-1M and on the Amazon Movies shape), the printed line
keys and the constants of the target store and machine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Repository root (the grids of Table 2 live in ``grids/``).
REPO = Path(__file__).resolve().parents[2]
#: Users evaluated per validation fold of ML-1M in the full store (about 5,500).
FULL_USERS = 5500
#: Folds of the paper's cross-validation.
FULL_FOLDS = 10
#: Cores of the target machine.
CORES = 2
#: Best configurations retrained on the test split (one per metric@cutoff: 6 x 3), upper bound.
TEST_UNITS_BPR = 18
#: Wall-clock hours on :data:`CORES` cores of the budget the scale plan sizes
#: (:func:`dptune.bench._projection.budget_in`).
BUDGET_HOURS = 3.0

LINE_KEYS = (
    "speedup iterations",
    "speedup neighbours",
    "speedup mini_grid",
    "eval_vs_bound",
    "projected_full_grid_hours",
    "analyze_seconds_projected",
    "analyze_peak_gib_projected",
    "analyze_seconds_full_store_wall",  # only when the store measured is the full one
    "analyze_peak_gib_full_store",
    "analyze_command_seconds_full_store",  # `dptune analyze` itself, default options
    "analyze_command_peak_gib_full_store",
)  # the scale plan prints ``projected_full_grid_hours <data set>``, ``worker_peak_gib ...`` and
#   ``budget_3h_units <data set>`` (BPR-MF units of the budget that fits in BUDGET_HOURS)


@dataclass(frozen=True)
class Plan:
    """What one benchmark run measures (data sets, slices, repeats)."""

    name: str
    dataset: str  # the comparisons (speedups, eval_vs_bound)
    projection_dataset: str  # unit costs for the full-grid projection
    ks: tuple[int, ...] | None  # None = every k of grids/knn.toml
    iteration_factors: int
    iterations: tuple[int, ...] | None  # None = every iterations value of grids/bpr-mf.toml
    learning_rate: float
    cost_factors: tuple[int, ...]
    cost_ks: tuple[int, ...]
    mini_knn: tuple[int, ...]
    mini_factors: tuple[int, ...]
    mini_lrs: tuple[float, ...]
    mini_iterations: tuple[int, ...]
    analyze_scale: float
    repeats: int = 2


# learning rates of Table 2 (2 ** -3.3219 = 0.1, 2 ** -4.3219 = 0.05, 2 ** -6.3219 = 0.0125)
_LR = {k: 2.0 ** (-2.3219 - k) for k in range(15)}

PLANS: dict[str, Plan] = {
    "full": Plan(
        name="full", dataset="ml-1m", projection_dataset="ml-1m", ks=None,
        iteration_factors=452, iterations=None, learning_rate=_LR[3],
        cost_factors=(10, 113, 905, 1809), cost_ks=(10, 113, 1809),
        mini_knn=(10, 80, 640), mini_factors=(10, 113), mini_lrs=(_LR[1], _LR[3]),
        mini_iterations=(1, 4, 16, 64), analyze_scale=0.1,
    ),
    "small": Plan(
        name="small", dataset="ml-100k", projection_dataset="ml-1m", ks=None,
        iteration_factors=452, iterations=None, learning_rate=_LR[3],
        cost_factors=(10, 113, 905, 1809), cost_ks=(10, 113, 1809),
        mini_knn=(10, 80, 640), mini_factors=(10, 113), mini_lrs=(_LR[1], _LR[3]),
        mini_iterations=(1, 4, 16, 64), analyze_scale=0.01, repeats=1,
    ),
    "tiny": Plan(
        name="tiny", dataset="ml-latest-small", projection_dataset="ml-latest-small",
        ks=(10, 40, 160), iteration_factors=10, iterations=(1, 2, 4), learning_rate=_LR[1],
        cost_factors=(10, 40), cost_ks=(10, 160), mini_knn=(10, 40), mini_factors=(10,),
        mini_lrs=(_LR[1],), mini_iterations=(1, 2), analyze_scale=0.001, repeats=1,
    ),
}


@dataclass(frozen=True)
class ScalePlan:
    """Unit costs on several data sets and the full-grid projection of each (``amazon`` mode).

    ``datasets`` are data set names (``ml-1m``...) or ``synth:<preset>`` for a synthetic data set
    of :data:`dptune.data._synth.PRESETS` (``synth:tiny`` is :data:`TINY_SYNTH`, for the tests);
    ``eval_users`` users (one or two blocks of 1,024) are evaluated and the cost scaled to the
    fold's users, since evaluation is linear in users.
    """

    name: str
    datasets: tuple[str, ...]
    cost_factors: tuple[int, ...]
    ks: tuple[int, ...] | None  # None = every k of grids/knn.toml
    eval_users: int = 1024
    learning_rate: float = _LR[3]
    repeats: int = 1


#: The shape of ``synth:tiny`` (the tests' scale plan).
TINY_SYNTH = {"users": 120, "items": 900, "ratings": 4000}

SCALE_PLANS: dict[str, ScalePlan] = {
    "amazon": ScalePlan(name="amazon", datasets=("ml-1m", "synth:amazon-movies"),
                        cost_factors=(10, 113, 452, 1809), ks=None),
    "amazon-tiny": ScalePlan(name="amazon-tiny", datasets=("ml-latest-small", "synth:tiny"),
                             cost_factors=(10, 40), ks=(10, 40, 160), eval_users=64),
}
