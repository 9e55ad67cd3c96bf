"""The design of a sweep: the order in which it visits each algorithm's units, its rounds, its
budget, and what a stopped store holds of the full grid.

- :func:`design_order` (``_order``): the pure, seeded order of a grid of units, every prefix of
  whole rounds balanced and holding pairs of every scope early (the construction and its
  guarantees are in that module's docstring and ``docs/design.md``);
- :func:`experiment_design`, :class:`Design`, :class:`AlgorithmDesign`, :class:`DesignUnit`
  (``_design``): an experiment's units in design order;
- :func:`budget_rounds`, :func:`projection` (``_budget``): a budget in whole rounds, and the
  projected time of a run from the cost model (:mod:`dptune.sweeper._cost`);
- :func:`read_design` (``_record``): the reading API of a results directory, for the analysis::

      design = read_design("results/anelli2019-ml1m-design")
      d = design.algorithms["bpr-mf"]
      d.total_units, d.budget_units          # 225, 15
      [u.config_ids for u in d.complete_units()]
      d.frame()                              # one row per unit of the full grid
"""

from dptune.sweeper.design._budget import (
    TEST_UNITS,
    Projection,
    budget_rounds,
    hours_text,
    projection,
)
from dptune.sweeper.design._design import (
    AlgorithmDesign,
    Design,
    DesignUnit,
    algorithm_design,
    experiment_design,
)
from dptune.sweeper.design._order import METHOD, Order, design_order, round_size
from dptune.sweeper.design._record import (
    DESIGN_FILE,
    experiment_budget,
    read_design,
    recorded_design,
    resolve_design,
    sweep_design,
    write_design,
)

__all__ = [
    "METHOD",
    "Order",
    "design_order",
    "round_size",
    "DesignUnit",
    "AlgorithmDesign",
    "Design",
    "algorithm_design",
    "experiment_design",
    "Projection",
    "projection",
    "TEST_UNITS",
    "budget_rounds",
    "hours_text",
    "DESIGN_FILE",
    "experiment_budget",
    "resolve_design",
    "sweep_design",
    "write_design",
    "recorded_design",
    "read_design",
]
