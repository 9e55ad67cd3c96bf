"""fANOVA, vectorised over the leaves of each tree (Hutter, Hoos & Leyton-Brown 2014).

optuna's ``FanovaImportanceEvaluator`` walks every tree in Python once per grid cell, about 13 s
per metric on the 3,150 BPR-MF configurations of the paper's grid (six metrics: most of ``dptune
analyze`` on ML-1M). The functions below fit the same scikit-learn forest to the same inputs and
evaluate the same decomposition with array operations over the leaves; the test suite checks
them against optuna's evaluator (``evaluator="fanova-optuna"``) to 1e-9.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["fanova_inputs", "fanova_study", "fanova_importances", "tree_marginal_variances"]


def _objective(target: Callable[[Any], float] | None) -> Callable[[Any], float]:
    """What is explained: ``target(trial)`` when given (optuna's ``target`` convention), else
    the trial's value."""
    return (lambda t: float(t.value)) if target is None else (lambda t: float(target(t)))


def fanova_inputs(study: Any, params: Sequence[str],
                  target: Callable[[Any], float] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """``X, y, bounds, groups`` of the fANOVA of ``study`` over ``params``, as optuna encodes them
    for importance (no log or step transform): a number is one column bounded by its
    distribution's ``[low, high]``; a categorical with ``k`` choices is ``k`` one-hot columns
    bounded by ``[0, 1]``; ``groups[j]`` are the columns of ``params[j]``. ``y`` is the trial's
    value, or ``target(trial)`` when given. Complete trials with a finite ``y`` only, in trial
    order."""
    from optuna.distributions import CategoricalDistribution
    from optuna.trial import TrialState

    objective = _objective(target)
    trials = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
              if set(params) <= set(t.params) and math.isfinite(objective(t))]
    dists = {h: trials[0].distributions[h] for h in params} if trials else {}
    bounds: list[tuple[float, float]] = []
    groups: list[np.ndarray] = []
    for h in params:
        d = dists[h]
        k = len(d.choices) if isinstance(d, CategoricalDistribution) else 1
        groups.append(np.arange(len(bounds), len(bounds) + k))
        bounds += [(0.0, 1.0)] * k if isinstance(d, CategoricalDistribution) else [(d.low, d.high)]
    X = np.zeros((len(trials), len(bounds)), dtype=np.float64)
    for i, t in enumerate(trials):
        for h, cols in zip(params, groups, strict=True):
            d = dists[h]
            if isinstance(d, CategoricalDistribution):
                X[i, cols[0] + int(d.to_internal_repr(t.params[h]))] = 1.0
            else:
                X[i, cols[0]] = float(t.params[h])
    y = np.array([objective(t) for t in trials], dtype=np.float64)
    return X, y, np.array(bounds, dtype=np.float64).reshape(-1, 2), groups


def fanova_study(study: Any, params: Sequence[str], seed: int = 0, n_trees: int = 64,
                 max_depth: int = 64, target: Callable[[Any], float] | None = None) -> np.ndarray:
    """Unnormalised fANOVA importance of each of ``params`` in ``study`` (optuna's
    ``FanovaImportanceEvaluator(n_trees, max_depth, seed)``) for the trials' values, or for
    ``target(trial)`` when given; a parameter with a single value gets 0; NaN for all when no
    tree has variance or fewer than two trials."""
    params = list(params)
    if not params:
        return np.zeros(0)
    trials = study.get_trials(deepcopy=False)
    single = [trials[0].distributions[h].single() for h in params] if trials else []
    free = [h for h, s in zip(params, single, strict=True) if not s]
    out = np.zeros(len(params))
    if not free:
        return out
    X, y, bounds, groups = fanova_inputs(study, free, target)
    if len(y) <= 1:
        return out
    imp = fanova_importances(X, y, bounds, groups, seed=seed, n_trees=n_trees,
                             max_depth=max_depth)
    out[[params.index(h) for h in free]] = imp
    return out if np.isfinite(imp).all() else np.full(len(params), np.nan)


def fanova_importances(X: np.ndarray, y: np.ndarray, bounds: np.ndarray,
                       groups: Sequence[np.ndarray], seed: int = 0, n_trees: int = 64,
                       max_depth: int = 64) -> np.ndarray:
    """fANOVA main-effect importance of each column group (Hutter, Hoos & Leyton-Brown 2014).

    A random forest (scikit-learn, ``n_trees`` trees, ``max_depth``, bootstrap, ``seed``: as in
    optuna) is fitted to ``(X, y)``; each tree ``t`` contributes ``max(V_t(g), 0) / V_t`` when
    its total variance ``V_t > 0`` (:func:`tree_marginal_variances`), and the importance of
    ``g`` is the mean of these fractions over those trees (NaN when there is none).
    """
    from sklearn.ensemble import RandomForestRegressor

    forest = RandomForestRegressor(n_estimators=int(n_trees), max_depth=int(max_depth),
                                   min_samples_split=2, min_samples_leaf=1,
                                   random_state=None if seed is None else int(seed))
    forest.fit(X, y)
    fractions = []
    for est in forest.estimators_:
        t = est.tree_
        total, marginal = tree_marginal_variances(t.children_left, t.children_right, t.feature,
                                                  t.threshold, t.value[:, 0, 0], bounds, groups)
        if total > 0.0:
            fractions.append(np.clip(marginal, 0.0, None) / total)
    if not fractions:
        return np.full(len(groups), np.nan)
    return np.mean(np.array(fractions), axis=0)


_CELL_BLOCK = 1 << 22  # cells x leaves per block of the membership matrix (32 MiB as float64)


def tree_marginal_variances(left: np.ndarray, right: np.ndarray, feature: np.ndarray,
                            threshold: np.ndarray, value: np.ndarray, bounds: np.ndarray,
                            groups: Sequence[np.ndarray]) -> tuple[float, np.ndarray]:
    """Total variance ``V`` of one regression tree over the box ``bounds`` and the variance
    ``V(g)`` of its marginal prediction along each column group ``g``.

    The tree is given as scikit-learn arrays (``feature < 0`` marks a leaf; a sample goes left
    when ``x[feature] <= threshold``). Leaf ``L`` has value ``v_L`` and box ``B_L`` (``bounds``
    cut by the splits on its path), volume ``|B_L|``:

    - ``V = sum_L |B_L| (v_L - vbar)^2 / sum_L |B_L|`` with ``vbar`` the volume-weighted mean;
    - along ``g``, the tree's thresholds on each column of ``g`` cut ``bounds`` into cells; at
      the centre ``p`` of a cell of size ``s(p)`` the marginal prediction is
      ``a(p) = sum_{L: p in B_L} w_L v_L / sum_{L: p in B_L} w_L`` with ``w_L = |B_L| / |B_L|_g``
      (the leaf's volume outside ``g``), weighted ``s(p) sum_{L: p in B_L} w_L``;
      ``V(g)`` is the weighted variance of ``a(p)``.
    """
    left = np.asarray(left)
    right = np.asarray(right)
    feature = np.asarray(feature)
    threshold = np.asarray(threshold, dtype=np.float64)
    n, d = feature.size, bounds.shape[0]
    lo = np.empty((n, d))  # box of each node
    hi = np.empty((n, d))
    plo = np.full((n, d), -np.inf)  # the same, unbounded: which cells reach the node
    phi = np.full((n, d), np.inf)
    lo[0], hi[0] = bounds[:, 0], bounds[:, 1]
    frontier = np.zeros(1, dtype=np.int64)
    while frontier.size:  # one step per depth level
        node = frontier[feature[frontier] >= 0]
        f, thr = feature[node], threshold[node]
        for child, box, cut in ((left[node], hi, phi), (right[node], lo, plo)):
            for arr in (lo, hi, plo, phi):
                arr[child] = arr[node]
            box[child, f] = thr
            cut[child, f] = thr
        frontier = np.concatenate((left[node], right[node]))
    leaf = np.flatnonzero(feature < 0)
    v = np.asarray(value, dtype=np.float64)[leaf]
    width = hi[leaf] - lo[leaf]
    vol = np.prod(width, axis=1)
    total = float(np.average((v - np.average(v, weights=vol)) ** 2, weights=vol))
    marginal = np.empty(len(groups))
    for j, cols in enumerate(groups):
        cols = np.asarray(cols)
        centres, sizes = [], []
        for c in cols:
            edges = np.concatenate(([bounds[c, 0]], np.unique(threshold[feature == c]),
                                    [bounds[c, 1]]))
            centres.append(0.5 * (edges[1:] + edges[:-1]))
            sizes.append(np.diff(edges))
        p = np.stack([g.ravel() for g in np.meshgrid(*centres, indexing="ij")], axis=1)
        s = np.prod(np.stack([g.ravel() for g in np.meshgrid(*sizes, indexing="ij")], axis=1),
                    axis=1)
        w = vol / np.prod(width[:, cols], axis=1)
        if cols.size == 1:  # a number: each leaf covers one run of consecutive cells
            sw, swv = _interval_sums(p[:, 0], plo[leaf, cols[0]], phi[leaf, cols[0]], w, v)
        else:  # a categorical's one-hot columns
            sw, swv = _box_sums(p, plo[leaf][:, cols], phi[leaf][:, cols], w, v)
        a = swv / sw
        weight = sw * s
        marginal[j] = float(np.average((a - np.average(a, weights=weight)) ** 2, weights=weight))
    return total, marginal


def _interval_sums(centres: np.ndarray, low: np.ndarray, high: np.ndarray, w: np.ndarray,
                   v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sum_{L: low_L < p <= high_L} w_L`` and the same of ``w_L v_L`` at each of the sorted
    cell ``centres`` ``p``: what the cells x leaves membership matrix gives one column, from a
    difference array over the cells (each leaf adds its weight where its run of cells starts
    and takes it back where it ends), in time linear in cells + leaves instead of their
    product (a hyperparameter of thousands of values on a grid of thousands of configurations).
    The running sums are carried in extended precision, so that the weights the leaves take
    back leave no rounding of the ones still running."""
    m = centres.size
    start = np.searchsorted(centres, low, side="right")  # first cell with p > low
    end = np.maximum(np.searchsorted(centres, high, side="right"), start)  # past last p <= high
    out = []
    for weights in (w, w * v):
        diff = (np.bincount(start, weights=weights, minlength=m + 1).astype(np.longdouble)
                - np.bincount(end, weights=weights, minlength=m + 1).astype(np.longdouble))
        out.append(np.cumsum(diff)[:m].astype(np.float64))
    return out[0], out[1]


def _box_sums(centres: np.ndarray, low: np.ndarray, high: np.ndarray, w: np.ndarray,
              v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sum_{L: low_L < p <= high_L} w_L`` and the same of ``w_L v_L`` at each cell centre
    ``p`` (a row of ``centres``; ``low``, ``high``: one row per leaf, one column per column of
    the group), from the cells x leaves membership matrix, in blocks of cells."""
    sw = np.empty(centres.shape[0])
    swv = np.empty(centres.shape[0])
    n_leaves = low.shape[0]
    step = max(1, _CELL_BLOCK // max(n_leaves, 1))  # a categorical of k choices has 2^k cells
    for b0 in range(0, centres.shape[0], step):
        q = centres[b0:b0 + step]
        inside = np.ones((q.shape[0], n_leaves), dtype=bool)
        for k in range(centres.shape[1]):
            inside &= (low[:, k] < q[:, k, None]) & (q[:, k, None] <= high[:, k])
        mass = inside.astype(np.float64)
        sw[b0:b0 + step] = mass @ w
        swv[b0:b0 + step] = mass @ (w * v)
    return sw, swv
