"""Projection of the paper's full ML-1M grid from measured single-core unit costs."""

from __future__ import annotations

from typing import Any

import numpy as np

from dptune.bench._plans import CORES, FULL_FOLDS, TEST_UNITS_BPR
from dptune.bench._timing import grid_values


def project_full_grid(costs: dict[str, Any], scale_train: float = 1.0,
                      scale_eval: float = 1.0) -> dict[str, Any]:
    """Hours of the paper's ML-1M grid on :data:`CORES` cores from single-core unit costs.

    ``scale_*`` convert costs measured on another data set to ML-1M (1.0 on ML-1M itself).
    """
    g = grid_values()
    factors = np.asarray(g["factors"], dtype=np.float64)
    n_lr, n_it, ks = len(g["learning_rate"]), len(g["iterations"]), g["k"]
    max_it = max(g["iterations"])
    fx = np.array([r["factors"] for r in costs["bpr"]], dtype=np.float64)
    epoch = np.array([r["epoch_seconds"] for r in costs["bpr"]]) * scale_train
    ev = np.array([r["eval_seconds"] for r in costs["bpr"]]) * scale_eval
    epoch_f = np.interp(factors, fx, epoch)
    eval_f = np.interp(factors, fx, ev)
    units = len(factors) * n_lr * FULL_FOLDS
    train_s = float(epoch_f.sum()) * max_it * n_lr * FULL_FOLDS
    train_naive_s = float(epoch_f.sum()) * sum(g["iterations"]) * n_lr * FULL_FOLDS
    eval_s = float(eval_f.sum()) * n_it * n_lr * FULL_FOLDS
    write_s = costs["write_part_seconds"] * scale_eval * (units + 2 * FULL_FOLDS)
    knn_s = 0.0
    knn_detail = {}
    for name, c in costs["knn"].items():
        if "eval_all_k" in c and set(c["eval_all_k"]) >= set(ks):
            evals = sum(c["eval_all_k"][k] for k in ks)
        else:
            kx = np.array(sorted(c["eval_seconds"]), dtype=np.float64)
            ky = np.array([c["eval_seconds"][k] for k in sorted(c["eval_seconds"])])
            evals = float(np.interp(np.asarray(ks, dtype=np.float64), kx, ky).sum())
        per_fold = (c["fit_seconds"] + evals) * scale_eval
        knn_detail[name] = per_fold
        knn_s += per_fold * FULL_FOLDS
    unit_mean = (train_s + eval_s) / units
    test_s = TEST_UNITS_BPR * unit_mean / 0.9 + sum(knn_detail.values()) / 0.9
    total = train_s + eval_s + write_s + knn_s + test_s
    return {
        "hours": total / CORES / 3600.0,
        "core_hours": total / 3600.0,
        "train_core_hours": train_s / 3600.0,
        "train_core_hours_without_reuse": train_naive_s / 3600.0,
        "eval_core_hours": eval_s / 3600.0,
        "write_core_hours": write_s / 3600.0,
        "knn_core_hours": knn_s / 3600.0,
        "test_split_core_hours": test_s / 3600.0,
        "epoch_seconds_by_factors": dict(zip(g["factors"], epoch_f.tolist(), strict=True)),
        "eval_seconds_by_factors": dict(zip(g["factors"], eval_f.tolist(), strict=True)),
        "iterations_speedup_full_grid": (train_naive_s + eval_s) / (train_s + eval_s),
        "knn_per_fold_seconds": knn_detail,
    }
