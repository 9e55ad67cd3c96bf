"""The engine's two reuse axes against a naive loop (neighbours: one similarity for every k;
iterations: one BPR-MF run with snapshots) and the single-core unit costs of the projection
(:func:`measure_unit_costs`; :func:`measure_scale_costs` for the scale plan, with the evaluation
split into its phases and the peak memory of each part)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from dptune.bench._fold import evaluate_model
from dptune.bench._plans import Plan, ScalePlan
from dptune.bench._timing import (
    best_of,
    clock,
    grid_values,
    log,
    peak_memory_gib,
    reset_peak_memory,
    timed,
)

#: Users per scoring block of :func:`dptune.metrics.evaluate` (its default).
EVAL_BLOCK = 1024


def _steps(it: Any) -> Any:
    """Iterate ``it`` yielding ``(CPU seconds spent producing the item, item)``."""
    it = iter(it)
    while True:
        t0 = clock()
        try:
            item = next(it)
        except StopIteration:
            return
        yield clock() - t0, item


def bench_neighbours(fd: Any, ks: Sequence[int]) -> dict[str, Any]:
    """UserKNN along ``ks``: dptune (the family: one similarity) vs a fresh fit per k.

    The two are interleaved configuration by configuration (dptune's step, then the naive fit
    of the same ``k``), so that both see the same conditions on a machine whose speed drifts.
    """
    from dptune.models import KNNFamily, UserKNN

    configs = [{"k": int(k)} for k in ks]
    rows = []
    fit_total = eval_total = naive_fit = naive_eval = 0.0
    identical = True
    for t_fit, (idx, model) in _steps(KNNFamily("userknn").fit_unit(fd.train, configs, 0)):
        te, vals = timed(lambda model=model: evaluate_model(model, fd))
        fit_total += t_fit
        eval_total += te
        nf, naive = timed(lambda idx=idx: UserKNN(configs[idx]["k"]).fit(fd.train))
        ne, nvals = timed(lambda naive=naive: evaluate_model(naive, fd))
        naive_fit += nf
        naive_eval += ne
        identical &= bool(np.array_equal(vals, nvals, equal_nan=True))
        rows.append({"k": configs[idx]["k"], "dptune_fit": t_fit, "dptune_eval": te,
                     "naive_fit": nf, "naive_eval": ne})
    dptune_total = fit_total + eval_total
    naive_total = naive_fit + naive_eval
    return {
        "ks": list(ks), "dptune_seconds": dptune_total, "naive_seconds": naive_total,
        "dptune_fit_seconds": fit_total, "naive_fit_seconds": naive_fit,
        "speedup": naive_total / dptune_total, "fit_speedup": naive_fit / fit_total,
        "identical": identical, "rows": rows,
    }


def bench_iterations(fd: Any, factors: int, lr: float, iterations: Sequence[int],
                     seed: int = 7) -> dict[str, Any]:
    """BPR-MF along ``iterations``: one run with snapshots vs a fresh fit per value.

    Interleaved like :func:`bench_neighbours`: dptune trains on to the next iteration value
    and evaluates, then the naive loop fits that value from scratch and evaluates.
    """
    from dptune.models import BPRMF, BPRFamily

    configs = [{"factors": factors, "iterations": int(i), "learning_rate": lr,
                "user_reg": lr / 20, "item_reg": lr / 200} for i in iterations]
    train_t = eval_t = naive_train = naive_eval = 0.0
    identical = True
    for t_fit, (idx, model) in _steps(BPRFamily().fit_unit(fd.train, configs, seed)):
        te, vals = timed(lambda model=model: evaluate_model(model, fd))
        train_t += t_fit
        eval_t += te
        n_it = configs[idx]["iterations"]
        nf, naive = timed(lambda n_it=n_it: BPRMF(factors, lr, lr / 20, lr / 200, epochs=n_it,
                                                   seed=seed).fit(fd.train))
        ne, nvals = timed(lambda naive=naive: evaluate_model(naive, fd))
        naive_train += nf
        naive_eval += ne
        identical &= bool(np.array_equal(vals, nvals, equal_nan=True))
    dptune_total = train_t + eval_t
    naive_total = naive_train + naive_eval
    return {
        "factors": factors, "learning_rate": lr, "iterations": list(iterations),
        "epochs_dptune": max(iterations), "epochs_naive": int(sum(iterations)),
        "dptune_seconds": dptune_total, "dptune_train": train_t, "dptune_eval": eval_t,
        "naive_seconds": naive_total, "naive_train": naive_train, "naive_eval": naive_eval,
        "speedup": naive_total / dptune_total, "train_speedup": naive_train / train_t,
        "identical": identical,
    }


def eval_and_bound(model: Any, fd: Any, repeats: int, block: int = 1024) -> tuple[float, float]:
    """(evaluation time, score + argpartition time) for ``fd.users`` in blocks of ``block``."""
    users = fd.users
    n_items = fd.train.shape[1]
    k = 10

    def bound() -> None:
        for s in range(0, len(users), block):
            scores = model.score(users[s:s + block])
            np.argpartition(scores, n_items - k, axis=1)

    t_eval = best_of(lambda: evaluate_model(model, fd), repeats)
    t_bound = best_of(bound, repeats)
    return t_eval, t_bound


def measure_unit_costs(fd: Any, plan: Plan, knn_neighbours: dict[str, Any] | None) -> dict[str, Any]:
    """Single-core unit costs on ``fd``: BPR epoch and evaluation per factor size, KNN fit and
    evaluation per k, and writing one BPR part."""
    from dptune.models import BPRMF, ItemKNN, UserKNN

    X = fd.train
    lr = plan.learning_rate
    bpr = []
    for f in plan.cost_factors:
        model = BPRMF(f, lr, lr / 20, lr / 200, epochs=0, seed=3).fit(X)
        model.partial_fit(X, 1)  # warm (compiled kernel loaded, pages touched)
        n_ep = 3 if f < 200 else 2
        per_epoch = best_of(lambda model=model, n_ep=n_ep: model.partial_fit(X, n_ep),
                             plan.repeats) / n_ep
        t_eval, t_bound = eval_and_bound(model, fd, plan.repeats)
        bpr.append({"factors": f, "epoch_seconds": per_epoch,
                    "updates_per_second": X.nnz / per_epoch, "eval_seconds": t_eval,
                    "bound_seconds": t_bound})
        log(f"  BPR factors={f}: epoch {per_epoch:.3f} s ({X.nnz / per_epoch / 1e6:.2f} M "
             f"updates/s), eval {t_eval:.3f} s, bound {t_bound:.3f} s")
    knn = {}
    for name, cls in (("userknn", UserKNN), ("itemknn", ItemKNN)):
        kmax = max(plan.cost_ks)
        t_fit, model = timed(lambda cls=cls, kmax=kmax: cls(kmax).fit(X))
        evals = {}
        bounds = {}
        for k in plan.cost_ks:
            if k == min(plan.cost_ks):  # the bound only where it is informative (ties)
                evals[k], bounds[k] = eval_and_bound(model.with_k(k), fd, 1)
            else:
                mk = model.with_k(k)
                evals[k] = timed(lambda mk=mk: evaluate_model(mk, fd))[0]
        knn[name] = {"fit_seconds": t_fit, "eval_seconds": evals, "bound_seconds": bounds}
        log(f"  {name}: fit(k={kmax}) {t_fit:.2f} s, eval {', '.join(f'k={k} {v:.2f} s' for k, v in evals.items())}")
    if knn_neighbours is not None:  # measured on every k of the grid: use them
        knn["userknn"]["eval_all_k"] = {r["k"]: r["dptune_eval"] for r in knn_neighbours["rows"]}
    return {"bpr": bpr, "knn": knn, "write_part_seconds": write_part_cost(fd, plan.repeats),
            "nnz": int(X.nnz), "users": int(len(fd.users)), "items": int(X.shape[1])}


def write_part_cost(fd: Any, repeats: int) -> float:
    """CPU seconds of writing one BPR-MF part (14 configurations, every user of ``fd``)."""
    from dptune.store import ResultStore, UnitResult

    n_it = len(grid_values()["iterations"])
    rng = np.random.default_rng(0)
    vals = tuple(rng.random((6, 3, len(fd.users)), dtype=np.float32) for _ in range(n_it))
    res = UnitResult("bpr-mf", "0", "u00000", 1, ("ndcg", "precision", "recall", "mrr", "efd", "epc"),
                     (1, 5, 10), fd.users, tuple(range(n_it)), vals, (0.0,) * n_it, (0.0,) * n_it)
    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(tmp).create()
        return best_of(lambda: store.write_unit(res), repeats)


def eval_phases(model: Any, fd: Any, users: np.ndarray) -> dict[str, float]:
    """CPU seconds of the phases of :func:`dptune.metrics.evaluate` for ``users``, block by block
    as it runs them: ``score`` (``model.score``), ``topn`` (masking the training items and
    :func:`dptune.metrics.top_n` to the largest cutoff) and ``metrics``
    (:func:`dptune.metrics.metrics_from_topn`)."""
    from dptune.metrics import metrics_from_topn, top_n

    train = fd.train
    out = {"score": 0.0, "topn": 0.0, "metrics": 0.0}
    for s in range(0, len(users), EVAL_BLOCK):
        ub = users[s:s + EVAL_BLOCK]
        t0 = clock()
        scores = model.score(ub)
        t1 = clock()
        tr = train[ub]
        rows = np.repeat(np.arange(ub.size), np.diff(tr.indptr))
        scores[rows, tr.indices] = -np.inf
        top = top_n(scores, 10)
        t2 = clock()
        metrics_from_topn(top, fd.relevant[ub], (1, 5, 10), fd.efd, fd.epc)
        t3 = clock()
        out["score"] += t1 - t0
        out["topn"] += t2 - t1
        out["metrics"] += t3 - t2
    return out


def _scaled(parts: dict[str, float], factor: float) -> dict[str, float]:
    return {k: v * factor for k, v in parts.items()}


def measure_scale_costs(fd: Any, plan: ScalePlan, seed: int = 0) -> dict[str, Any]:
    """Single-core unit costs on fold ``fd`` with the evaluation split into its phases and the
    peak resident memory of each part (what one sweep worker holds: the fold plus one model).

    BPR-MF, per factor size of the plan: one epoch (the minimum of ``plan.repeats`` after a
    warm-up epoch) and the phases of evaluating one configuration, measured on ``eval_users``
    users drawn at random and scaled to the fold's users. KNN, per family: the similarity at
    the largest ``k`` of the grid (training), then the evaluation of every ``k`` as the sweep
    runs it (:class:`dptune.models._knn._GrowingK`: the first blocks of users keep float64
    partial sums that grow along ``k`` within its memory budget, the rest are scored directly
    for each ``k``): both paths are measured on one block each and weighted by the fold's users
    that take them; the neighbour weights of each path are built once per ``k`` (timed apart,
    counted once, as scoring).
    """
    from dptune.models import BPRMF, ItemKNN, UserKNN
    from dptune.models._knn import _GrowingK, _KView

    X = fd.train
    n_users, n_items = len(fd.users), X.shape[1]
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(fd.users, size=min(plan.eval_users, n_users), replace=False))
    factor = n_users / len(sample)
    lr = plan.learning_rate
    bpr = []
    for f in plan.cost_factors:
        reset_peak_memory()
        model = BPRMF(f, lr, lr / 20, lr / 200, epochs=0, seed=3).fit(X)
        model.partial_fit(X, 1)  # warm (compiled kernel loaded, pages touched)
        epoch = best_of(lambda model=model: model.partial_fit(X, 1), plan.repeats)
        parts = _scaled(eval_phases(model, fd, sample), factor)
        bpr.append({"factors": f, "epoch_seconds": epoch, "updates_per_second": X.nnz / epoch,
                    "eval_seconds": sum(parts.values()), "eval_parts": parts,
                    "peak_gib": peak_memory_gib()})
        log(f"  BPR factors={f}: epoch {epoch:.3f} s, eval {sum(parts.values()):.2f} s "
            f"(score {parts['score']:.2f}, top-N {parts['topn']:.2f}, metrics "
            f"{parts['metrics']:.2f}), peak {bpr[-1]['peak_gib']:.2f} GiB")
        del model
    ks = sorted(plan.ks) if plan.ks is not None else sorted(grid_values()["k"])
    cached_blocks = (1 << 30) // max(1, EVAL_BLOCK * n_items * 8)  # _GrowingK's budget
    cached_users = min(n_users, cached_blocks * EVAL_BLOCK)
    knn = {}
    for name, cls in (("userknn", UserKNN), ("itemknn", ItemKNN)):
        reset_peak_memory()
        t_fit, model = timed(lambda cls=cls: cls(max(ks)).fit(X))
        growing = _GrowingK(model)
        block_g, block_d = sample[:EVAL_BLOCK], sample[EVAL_BLOCK:2 * EVAL_BLOCK]
        if block_d.size == 0:
            block_d = block_g
        parts = {"score": 0.0, "topn": 0.0, "metrics": 0.0}
        per_k = {}
        k_prev = 0
        for k in ks:
            # the weights of a k are built once per k, not once per block: timed apart and
            # counted once (as scoring); the phases are per user
            build_g = timed(lambda k=k, k_prev=k_prev, gr=growing: gr._band(k_prev, k))[0]
            g = eval_phases(_KView(growing, k), fd, block_g)
            direct = model.with_k(k)
            build_d = timed(lambda m=direct: m.weights_t_ if isinstance(m, ItemKNN)
                            else m.weights_)[0]
            d = eval_phases(direct, fd, block_d)
            k_parts = {p: g[p] / block_g.size * cached_users
                       + d[p] / block_d.size * (n_users - cached_users) for p in parts}
            k_parts["score"] += build_g + (build_d if cached_users < n_users else 0.0)
            k_prev = k
            per_k[k] = sum(k_parts.values())
            for p in parts:
                parts[p] += k_parts[p]
        knn[name] = {"fit_seconds": t_fit, "eval_seconds": per_k, "eval_all_k": per_k,
                     "eval_parts": parts, "bound_seconds": {}, "peak_gib": peak_memory_gib(),
                     "neighbour_bytes": int(model.neighbors_.nbytes + model.neighbor_sims_.nbytes)}
        log(f"  {name}: similarity (k={max(ks)}) {t_fit:.2f} s, evaluate every k "
            f"{sum(per_k.values()):.2f} s, peak {knn[name]['peak_gib']:.2f} GiB")
        del model, growing
    reset_peak_memory()
    t_write = write_part_cost(fd, plan.repeats)
    return {"bpr": bpr, "knn": knn, "write_part_seconds": t_write, "nnz": int(X.nnz),
            "users": int(n_users), "items": int(n_items), "eval_users_measured": int(len(sample)),
            "cached_users": int(cached_users), "write_peak_gib": peak_memory_gib()}
