"""Progress of a sweep's validation units, shared by ``dptune run``'s local workers
(:mod:`dptune.sweeper._local`) and ``dptune worker`` (:mod:`dptune.sweeper._worker`): a tqdm bar
of finished parts (a unit on one fold) with the ETA, fed by polling the result store while the
work runs in a thread (:func:`dptune._parallel.in_background`), and the line shown while the
numba kernels are compiled before that bar starts its clock (:func:`compile_kernels`).

The bar counts the parts in the store, not the units this process computed, so with any number
of workers on one results directory each bar shows the whole sweep's progress.
"""

from __future__ import annotations

from typing import Any

from dptune._parallel import in_background
from dptune.config import Experiment
from dptune.store._store import ResultStore
from dptune.sweeper._plan import Task
from dptune.sweeper.design import Design

#: Seconds between two updates of a bar (each reads which parts the store has).
POLL_SECONDS = 0.5


class Progress:
    """A tqdm bar (done/total tasks and ETA) fed by counting finished parts in the store, with
    ``m of M units`` per algorithm in its postfix (units whose every fold is done, of the full
    grid's) when ``design`` is given. The bar counts parts (a unit on one fold), not units, and
    says so: "12/33 part" beside "bpr-mf 3 of 9 units"."""

    def __init__(self, store: ResultStore, tasks: list[Task], desc: str, enabled: bool,
                 design: Design | None = None):
        self.store, self.tasks, self.enabled, self.design = store, tasks, enabled, design
        self.bar = None
        if enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=len(tasks), desc=desc, unit="part", dynamic_ncols=True,
                            smoothing=0.1, initial=self.count())
            self.update()

    def written(self) -> list[bool]:
        """Whether each task's part is in the store (one check of each part)."""
        return [self.store.has_part(t.algorithm, t.fold, t.unit) for t in self.tasks]

    def count(self, written: list[bool] | None = None) -> int:
        """Tasks whose part is in the store (``written``: :meth:`written`, already read)."""
        return sum(self.written() if written is None else written)

    def units(self, written: list[bool] | None = None) -> str:
        """``bpr-mf 3 of 225 units (budget 15), userknn 1 of 1``: complete units per algorithm
        (``written``: :meth:`written`, already read)."""
        if self.design is None:
            return ""
        if written is None:
            written = self.written()
        done: dict[tuple[str, str], int] = {}
        for t, w in zip(self.tasks, written, strict=True):
            if w:
                done[t.algorithm, t.unit] = done.get((t.algorithm, t.unit), 0) + 1
        k = len(self.design.folds)
        complete: dict[str, int] = {}
        for (a, _), n in done.items():
            if n == k:
                complete[a] = complete.get(a, 0) + 1
        out = []
        for name, d in self.design.algorithms.items():
            m = complete.get(name, 0)
            budget = f" (budget {d.budget_units})" if d.budget_units < d.total_units else ""
            out.append(f"{name} {m} of {d.total_units} units{budget}")
        return ", ".join(out)

    def update(self) -> None:
        """Read the store once (every part checked once, not once for the count and again
        for the units: a poll of a sweep of 100,000 parts took seconds) and redraw."""
        if self.bar is not None:
            written = self.written()
            self.bar.n = self.count(written)
            units = self.units(written)
            if units:
                self.bar.set_postfix_str(units, refresh=False)
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.update()
            self.bar.close()


#: Seconds the kernels may take to load before the compiling line is shown (loading them from
#: numba's cache takes well under a second; compiling them, the first time, tens of seconds).
COMPILING_AFTER_S = 1.0
COMPILING = "compiling kernels (first run only)"


def compile_kernels(exp: Experiment, progress: bool) -> None:
    """Compile (first run) or load the experiment's numba kernels here, before the validation
    bar starts its clock (:mod:`dptune.sweeper._warmup`), so that its ETA is that of the units
    alone. With ``progress``, a line ``<name>: compiling kernels (first run only)`` with the
    elapsed time is shown while it takes longer than :data:`COMPILING_AFTER_S`."""
    import time

    from dptune.sweeper._warmup import kernel_types, warm_kernels

    if not kernel_types(exp):
        return
    start = time.monotonic()
    line: list[Any] = []

    def poll() -> None:
        if not progress or time.monotonic() - start < COMPILING_AFTER_S:
            return
        if not line:
            from tqdm import tqdm

            line.append(tqdm(total=None, desc=f"{exp.name}: {COMPILING}", dynamic_ncols=True,
                             bar_format="{desc} {elapsed}"))
            line[0].start_t -= time.monotonic() - start  # the elapsed time since the start
        line[0].refresh()

    try:
        in_background(lambda: warm_kernels(exp), poll, interval=0.25)
    finally:
        if line:
            line[0].close()
