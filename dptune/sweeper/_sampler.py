"""The order in which workers take grid points: the design's (:mod:`dptune.sweeper.design`).

:class:`DesignSampler` is optuna's ``GridSampler`` (same search space, same seeded grid ids, so
studies and their trials stay compatible) whose next point is the first one the design order
still needs: the units in design order, restricted to the rounds of the budget, and within a
unit its folds in a random order (reseeded per process, so that workers starting together take
different folds of the same unit). A point is free when no trial has it, else it is only handed
out when every point of the budget has a trial (the worker then waits for, or defers to, its
live owner: :mod:`dptune.sweeper._claims`). Every fold of a unit is taken before the next unit's,
so a sweep spread over any number of workers follows the design and a stopped one holds whole
units (but the ones in progress).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from optuna.samplers import GridSampler
from optuna.trial import TrialState

from dptune.sweeper._plan import _key

if TYPE_CHECKING:
    from optuna.study import Study
    from optuna.trial import FrozenTrial

__all__ = ["DesignSampler"]


class DesignSampler(GridSampler):
    """``GridSampler`` over ``search_space`` handing out the points of ``units`` in order:
    ``units[j]`` lists the grid points (parameter dicts, one per fold) of the j-th unit of the
    design order within the budget."""

    def __init__(self, search_space: Mapping[str, Sequence[Any]], seed: int,
                 units: Sequence[Sequence[Mapping[str, Any]]]) -> None:
        super().__init__(search_space, seed=seed)
        ids = {_key(dict(zip(self._param_names, g, strict=True))): i
               for i, g in enumerate(self._all_grids)}
        self._units = [[ids[_key(dict(p))] for p in points] for points in units]
        self._allowed = sorted({i for u in self._units for i in u})

    def _states(self, study: Study) -> tuple[set[int], set[int]]:
        """Grid ids with a finished trial and with a running one (this search space only)."""
        finished, running = set(), set()
        for t in study._storage.get_all_trials(study._study_id, deepcopy=False):
            attrs = t.system_attrs
            if "grid_id" not in attrs or not self._same_search_space(attrs["search_space"]):
                continue
            if t.state.is_finished():
                finished.add(attrs["grid_id"])
            elif t.state == TrialState.RUNNING:
                running.add(attrs["grid_id"])
        return finished, running

    def _next(self, study: Study) -> int:
        """The grid id the design needs next (see the module docstring)."""
        finished, running = self._states(study)
        for taken in (finished | running, finished):
            for unit in self._units:
                free = [i for i in unit if i not in taken]
                if free:
                    return int(self._rng.rng.choice(free))
        return self._allowed[0] if self._allowed else 0  # all done: re-evaluated, then skipped

    def has_free_point(self, study: Study) -> bool:
        """Whether a point of the budget has no trial at all (finished or running): what the
        next trial would get, rather than a point that a running trial holds."""
        finished, running = self._states(study)
        return any(i not in finished and i not in running for i in self._allowed)

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        """Give a new trial the grid point the design needs next (a queued trial keeps its own)."""
        if "grid_id" in trial.system_attrs or "fixed_params" in trial.system_attrs:
            return
        grid_id = self._next(study)
        study._storage.set_trial_system_attr(trial._trial_id, "search_space", self._search_space)
        study._storage.set_trial_system_attr(trial._trial_id, "grid_id", grid_id)

    def _get_unvisited_grid_ids(self, study: Study) -> list[int]:
        """The budget's grid ids without a finished or running trial (else without a finished
        one): what ``GridSampler`` stops the study on when none is left."""
        finished, running = self._states(study)
        left = [i for i in self._allowed if i not in finished and i not in running]
        return left or [i for i in self._allowed if i not in finished]
