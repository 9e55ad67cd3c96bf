"""The sweep's cost model: projected seconds of a unit, a configuration and a whole run, from
single-core unit costs measured by the benchmark (``python -m dptune.bench``).

The costs (:data:`REFERENCE_COSTS`) are CPU seconds of single-threaded work on one validation
fold of a reference data set, in the form :func:`dptune.bench.measure_unit_costs` returns them:
BPR-MF epoch and evaluation times at a few factor sizes, the KNN similarities and their
evaluation per ``k``, and writing one part. They are carried to another fold shape (training
interactions ``nnz``, evaluated users ``U``, items ``I``) by the work each step does:

- BPR-MF epoch: ``epoch(f) * (nnz / nnz_ref) ** e`` (one SGD update per training interaction,
  each dearer on a larger training set: ``e`` = ``epoch_nnz_exponent`` = 1.3, from the
  training runs of one design round measured on ML-100K and ML-1M by two workers on the same
  machine: 1.33 at 20-113 factors, 1.19 at 640), ``epoch(f)`` interpolated
  linearly between the measured factor sizes (held flat beyond them);
- evaluating one configuration (score every item for every user, top-N, metrics):
  ``eval(f) * (U * I) / (U_ref * I_ref)``;
- a BPR-MF unit of configurations ``(f, lr, it_1 < ... < it_n)`` on one fold:
  ``it_n * epoch(f) + n * eval(f) + write * n / 14 + task`` (one training run with a snapshot
  at each iteration value; the part of 14 configurations measured took ``write``, scaled by
  ``U``; ``task``: a unit's fixed cost, reading its fold, recording its trial and part);
- a KNN unit (every ``k``): the similarity at the largest ``k`` scaled by
  ``nnz * U / (nnz_ref * U_ref)`` (UserKNN) or ``nnz * I / (nnz_ref * I_ref)`` (ItemKNN), plus
  the evaluation of each ``k`` (interpolated over the measured ``k``), scaled by ``U * I``,
  plus ``write`` and ``task`` as above;
- one configuration trained alone (a noise-floor seed): ``it * epoch(f) + eval(f)`` for
  BPR-MF; the deterministic KNN have none.

A run does more than its units (:data:`OVERHEAD_COSTS`, wall-clock seconds, measured stage by
stage on the same 2-core machine, docs/performance.md "Projections"):

- start-up: ``startup + load * R`` (interpreter and imports, then reading and splitting the
  ``R`` ratings of the data set);
- first-run compilation of the numba kernels (:meth:`CostModel.compile_seconds`): the
  evaluation's, each built-in model's and the analysis's, each only while numba's on-disk
  cache does not hold it yet (:func:`dptune.sweeper._warmup.cold_kernels`);
- the analysis and the report: ``a + sum over algorithms of (c * F + b * C * U * F * M + t)``
  with ``F`` validation folds, ``C`` configurations swept, ``U`` users evaluated and ``M``
  metric@N, and ``t`` for an algorithm of more than one free hyperparameter (its importance
  and dominance figures); the constants are a least-squares fit of ``dptune analyze`` on five
  result stores of 48 to 350 configurations (each within 10 % of its measurement).

A sweep on a device (``[sweep] device = "cuda"``) is priced by :data:`DEVICE_COSTS` instead
(:meth:`CostModel.for_device`): wall-clock seconds of the device engine on one device, in the
same form, with three differences the device's measurements showed. A device's epoch costs
about the same per training interaction on both shapes measured, so ``e`` is 1; its evaluation
is not linear in ``U * I`` (launches and transfers weigh as much as the arithmetic on ML-1M):
``eval(f) * ((U * I) / (U_ref * I_ref)) ** v`` with ``v`` = ``eval_size_exponent`` = 0.4, the
median over the grid's factor sizes of the exponent that carries ML-1M's measured evaluation to
the Amazon Movies shape's (0.35 to 0.47; the shapes differ 82-fold in ``U * I``); and the host
writes a unit's part while the device computes the next one (``writes_overlap``), so a unit costs
``max(compute, write) + task`` instead of their sum. The units of a device run take turns on the
one device: a projection counts them one after the other whatever the worker processes
(:meth:`CostModel.workers`).

Other model types (cornac, implicit, Python models) have no cost model: their projection is
``None`` and a time budget cannot be converted for them. A projection assumes the work spreads
evenly over the ``jobs`` worker processes (one core each) and idle cores; on a machine shared
with other work it is optimistic (the benchmark measured the same work 2.1 times slower under a
load of 15 on two cores).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["REFERENCE_COSTS", "DEVICE_COSTS", "OVERHEAD_COSTS", "FoldShape", "SweepShape",
           "CostModel", "shape_from_manifest"]

#: Single-core unit costs on validation fold 0 of ML-1M (the paper's split: 717,995 training
#: interactions, 5,815 users evaluated, 3,706 items), measured by ``python -m dptune.bench``
#: on the 2-core machine of ``reports/benchmarks.md`` (AMD EPYC, 2026-11-22, load 0.4).
REFERENCE_COSTS: dict[str, Any] = {
    "bpr": [
        {"factors": 10, "epoch_seconds": 0.152, "eval_seconds": 0.057},
        {"factors": 113, "epoch_seconds": 0.239, "eval_seconds": 0.098},
        {"factors": 905, "epoch_seconds": 0.733, "eval_seconds": 0.433},
        {"factors": 1809, "epoch_seconds": 1.265, "eval_seconds": 0.804},
    ],
    "knn": {
        "userknn": {"fit_seconds": 3.18,
                    "eval_seconds": {10: 0.14, 14: 0.06, 20: 0.07, 28: 0.08, 40: 0.09, 57: 0.09,
                                     80: 0.09, 113: 0.10, 160: 0.13, 226: 0.14, 320: 0.16,
                                     452: 0.21, 640: 0.25, 905: 0.32, 1809: 0.87}},
        "itemknn": {"fit_seconds": 1.29, "eval_seconds": {10: 0.12, 113: 0.30, 1809: 3.00}},
    },
    "write_part_seconds": 0.27,
    "task_seconds": 0.2,
    "epoch_nnz_exponent": 1.3,
    "nnz": 717995,
    "users": 5815,
    "items": 3706,
}

#: Wall-clock seconds of the device engine's work on validation fold 0 of ML-1M (the same fold as
#: :data:`REFERENCE_COSTS`), per device (``[sweep] device``): ``python -m dptune.bench gpu`` on
#: one NVIDIA H100 80GB (reports/benchmarks-gpu.md, 2026-11-26; the epoch kernel with two
#: atomic reads per value and step, before the kernel that reads each value once): the BPR-MF
#: epoch and the evaluation of one configuration at six of the grid's factor sizes, the KNN
#: similarities on the device machine's host and their device evaluation per ``k`` (without the
#: first ``k``'s, which held the compilation), writing one part on that host. ``task_seconds``
#: is the host's (:data:`REFERENCE_COSTS`), not measured there. The module docstring gives
#: ``eval_size_exponent``, ``writes_overlap`` and why a device's units are counted one after the
#: other.
DEVICE_COSTS: dict[str, dict[str, Any]] = {
    "cuda": {
        "bpr": [
            {"factors": 10, "epoch_seconds": 0.0020, "eval_seconds": 0.038},
            {"factors": 80, "epoch_seconds": 0.0022, "eval_seconds": 0.032},
            {"factors": 226, "epoch_seconds": 0.0044, "eval_seconds": 0.034},
            {"factors": 452, "epoch_seconds": 0.0064, "eval_seconds": 0.028},
            {"factors": 905, "epoch_seconds": 0.0134, "eval_seconds": 0.032},
            {"factors": 1809, "epoch_seconds": 0.0264, "eval_seconds": 0.040},
        ],
        "knn": {
            "userknn": {"fit_seconds": 13.45, "eval_seconds": {14: 0.042, 113: 0.050,
                                                               1809: 0.043}},
            "itemknn": {"fit_seconds": 1.78, "eval_seconds": {14: 0.057, 113: 0.056,
                                                              1809: 0.082}},
        },
        "write_part_seconds": 0.67,
        "task_seconds": 0.2,
        "epoch_nnz_exponent": 1.0,
        "eval_size_exponent": 0.4,
        "writes_overlap": True,
        "nnz": 717995,
        "users": 5815,
        "items": 3706,
    },
}

#: Wall-clock seconds of a run's work outside its units (module docstring), measured on the
#: 2-core machine of ``REFERENCE_COSTS`` (idle, 2026-11-28): ``dptune run`` timed stage by stage
#: on the quickstart, ML-100K and ML-1M (start-up, compilation with numba's cache emptied and
#: full), ``dptune analyze`` on five result stores (analysis and report).
OVERHEAD_COSTS: dict[str, Any] = {
    "startup_seconds": 2.0,
    "load_seconds_per_rating": 2.7e-6,
    "compile_seconds": {"evaluation": 0.5, "knn": 6.5, "bpr": 0.6, "analysis": 4.5},
    "analysis_seconds": 2.0,
    "analysis_seconds_per_fold": 0.2,
    "analysis_seconds_per_value": 5.4e-8,
    "analysis_seconds_tuned": 7.4,
}

#: Configurations of the part whose writing time ``write_part_seconds`` is.
_WRITE_CONFIGS = 14


@dataclass(frozen=True)
class FoldShape:
    """What a fold's cost depends on: training interactions, users evaluated, items."""

    nnz: float
    users: float
    items: float


@dataclass(frozen=True)
class SweepShape:
    """A validation fold's shape, the test split's (training on the whole training part), the
    number of validation folds and the ratings the data set is read from (its start-up)."""

    validation: FoldShape
    test: FoldShape
    folds: int
    ratings: float = 0.0


def shape_from_manifest(manifest: Mapping[str, Any]) -> SweepShape:
    """The shape of a sweep from its manifest (:func:`dptune.sweeper.build_manifest`): a
    validation fold trains on ``(k - 1) / k`` of the training part and evaluates the mean of
    the folds' users; the test split trains on all of it."""
    split, data = manifest["split"], manifest["dataset"]
    k = int(split["folds"])
    users = {str(f): float(n) for f, n in (split.get("users_evaluated") or {}).items()}
    val = [users[f] for f in users if f != "test"]
    mean_users = float(np.mean(val)) if val else 0.0
    train = float(split["train_interactions"])
    items = float(data["items"])
    return SweepShape(validation=FoldShape(train * (k - 1) / k, mean_users, items),
                      test=FoldShape(train, users.get("test", mean_users), items), folds=k,
                      ratings=float(data.get("ratings") or 0.0))


class CostModel:
    """Projected single-core seconds of units and configurations on any fold shape, from unit
    costs measured on a reference fold (default :data:`REFERENCE_COSTS`; the module docstring
    gives the scaling)."""

    def __init__(self, costs: Mapping[str, Any] = REFERENCE_COSTS,
                 overheads: Mapping[str, Any] = OVERHEAD_COSTS, device: str = "cpu") -> None:
        self.costs = costs
        self.overheads = overheads
        self.device = device
        bpr = sorted(costs["bpr"], key=lambda r: r["factors"])
        self._fx = np.array([r["factors"] for r in bpr], dtype=np.float64)
        self._epoch = np.array([r["epoch_seconds"] for r in bpr], dtype=np.float64)
        self._eval = np.array([r["eval_seconds"] for r in bpr], dtype=np.float64)
        self._ref = FoldShape(float(costs["nnz"]), float(costs["users"]), float(costs["items"]))

    @classmethod
    def for_device(cls, device: str) -> CostModel:
        """The cost model of a sweep on ``device`` (``[sweep] device``): :data:`REFERENCE_COSTS`
        on ``cpu``, :data:`DEVICE_COSTS` on a device."""
        if device == "cpu":
            return cls()
        return cls(DEVICE_COSTS[device], device=device)

    def workers(self, jobs: int) -> int:
        """How many units run at once with ``jobs`` worker processes: ``jobs`` on the CPU (one
        core each), 1 on a device, which the workers take turns on."""
        return int(jobs) if self.device == "cpu" else 1

    def _scales(self, fold: FoldShape) -> tuple[float, float]:
        """(training scale (nnz / nnz_ref) ** e, evaluation scale (U * I / (U_ref * I_ref)) ** v)."""
        r = self._ref
        e = float(self.costs.get("epoch_nnz_exponent", 1.0))
        v = float(self.costs.get("eval_size_exponent", 1.0))
        return (fold.nnz / r.nnz) ** e, ((fold.users * fold.items) / (r.users * r.items)) ** v

    def _bpr(self, factors: float, fold: FoldShape) -> tuple[float, float]:
        """(epoch seconds, evaluation seconds of one configuration) at ``factors``."""
        s_train, s_eval = self._scales(fold)
        f = float(factors)
        return (float(np.interp(f, self._fx, self._epoch)) * s_train,
                float(np.interp(f, self._fx, self._eval)) * s_eval)

    def _unit(self, compute: float, n_configs: int, fold: FoldShape) -> float:
        """A unit of ``compute`` seconds with its part of ``n_configs`` configurations written
        (in series, or beside the next unit's computation where ``writes_overlap``) and its
        fixed cost."""
        write = (float(self.costs["write_part_seconds"]) * n_configs / _WRITE_CONFIGS
                 * fold.users / self._ref.users)
        both = max(compute, write) if self.costs.get("writes_overlap") else compute + write
        return both + float(self.costs.get("task_seconds", 0.0))

    def unit_seconds(self, algorithm_type: str, configs: Sequence[Mapping[str, Any]],
                     fold: FoldShape) -> float | None:
        """Projected single-core seconds of one unit (``configs``: its configurations) on a fold
        of shape ``fold``, its part written and its fixed cost included; ``None`` for a model
        type without a cost model."""
        compute = self.compute_seconds(algorithm_type, configs, fold)
        if compute is None or not configs:
            return compute
        return self._unit(compute, len(configs), fold)

    def compute_seconds(self, algorithm_type: str, configs: Sequence[Mapping[str, Any]],
                        fold: FoldShape) -> float | None:
        """Projected seconds of one unit's training and evaluation alone (what its part records
        as the configurations' ``fit_seconds`` and ``eval_seconds``); ``None`` without a cost
        model."""
        if not configs:
            return 0.0
        if algorithm_type == "bpr-mf":
            epoch, ev = self._bpr(configs[0]["factors"], fold)
            its = max(int(c["iterations"]) for c in configs)
            return its * epoch + len(configs) * ev
        if algorithm_type in ("userknn", "itemknn"):
            c = self.costs["knn"][algorithm_type]
            r = self._ref
            s_fit = fold.nnz / r.nnz * ((fold.users / r.users) if algorithm_type == "userknn"
                                         else (fold.items / r.items))
            _, s_eval = self._scales(fold)
            kx = np.array(sorted(c["eval_seconds"]), dtype=np.float64)
            ky = np.array([c["eval_seconds"][k] for k in sorted(c["eval_seconds"])])
            ks = np.array([float(cfg["k"]) for cfg in configs])
            evals = float(np.interp(ks, kx, ky).sum())
            return c["fit_seconds"] * s_fit + evals * s_eval
        return None

    def config_seconds(self, algorithm_type: str, config: Mapping[str, Any],
                       fold: FoldShape) -> float | None:
        """Projected single-core seconds of one configuration trained and evaluated alone (a
        noise-floor seed); ``None`` without a cost model."""
        if algorithm_type == "bpr-mf":
            epoch, ev = self._bpr(config["factors"], fold)
            return int(config["iterations"]) * epoch + ev
        if algorithm_type in ("userknn", "itemknn"):
            return self.unit_seconds(algorithm_type, [config], fold)
        return None

    def startup_seconds(self, ratings: float) -> float:
        """Wall-clock seconds from the command to the first unit, without compilation: the
        interpreter and imports, then reading and splitting ``ratings`` ratings."""
        o = self.overheads
        return float(o["startup_seconds"]) + float(o["load_seconds_per_rating"]) * ratings

    def compile_seconds(self, kernels: Sequence[str]) -> float:
        """Wall-clock seconds of compiling the numba kernels ``kernels`` on a first run: names
        of ``OVERHEAD_COSTS["compile_seconds"]`` (``evaluation``, ``knn``, ``bpr``,
        ``analysis``; :func:`dptune.sweeper._warmup.cold_kernels` says which are cold)."""
        table = self.overheads["compile_seconds"]
        return sum(float(table[k]) for k in set(kernels) if k in table)

    def analysis_seconds(self, algorithms: Sequence[tuple[int, int]], fold: FoldShape,
                         folds: int, metric_cutoffs: int) -> float:
        """Wall-clock seconds of the analysis and the report of a run whose ``algorithms`` are
        ``(configurations swept, free hyperparameters)`` pairs, ``folds`` validation folds of
        shape ``fold`` and ``metric_cutoffs`` metric@N (module docstring)."""
        o = self.overheads
        out = float(o["analysis_seconds"])
        for configs, free in algorithms:
            out += float(o["analysis_seconds_per_fold"]) * folds
            out += (float(o["analysis_seconds_per_value"]) * configs * fold.users * folds
                    * metric_cutoffs)
            if free > 1 and configs > 1:
                out += float(o["analysis_seconds_tuned"])
        return out
