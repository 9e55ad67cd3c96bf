"""A store that holds some of its grid's units: which ones, how its pairs stand for the full
grid's, and the bootstrap over units.

A *unit* is what one training run computes: for BPR-MF one (factors, learning rate) run with
its iteration snapshots, for a KNN grid the whole neighbour list, for a cornac or Python model
one configuration. The manifest lists the units of the full grid (the configuration ids of
each); the trials say which units have their results in every validation fold. A store holds
a subset of them when its sweep had a budget (a prefix of the design order), was stopped, or is
still running on other workers. Units with results in some validation folds only are left out.

**The estimand.** The DP of a scope estimates the scope's mean p-value over the pairs of the
*full grid* (every pair, or a uniform sample of them: the same expectation). With a subset of
units the pairs come from the units present, which do not represent the full grid's pairs
evenly: two configurations of one unit (a *within-unit* pair: BPR-MF iterations of one run)
are a larger share of a small sample's pairs than of the grid's, and two units that share a
value of a unit hyperparameter (factors or learning rate) are included with other
probabilities than two that share none. The design order makes the inclusion probability of a
pair of units depend only on which unit hyperparameters they share (``docs/design.md``), so the
pairs are post-stratified by that:

    stratum(a, b) = the set of unit hyperparameters on which a and b agree
                    (every one and the same unit: a within-unit pair)

and, with ``N_s / N`` the full grid's share of the scope's pairs in stratum ``s`` (counted
without listing them: ``N_eq(S) = sum over the groups of configurations agreeing on S of
C(n_g, 2)``, then ``N_s = sum_{T >= S} (-1)^{|T - S|} N_eq(T)``) and ``n_s`` the scope's
pairs in ``s`` among the ``P`` pairs tested, each pair ``j`` of stratum ``s`` gets the weight

    w_j = P (N_s / N') / n_s,      N' = sum of N_s over the strata with a pair tested,

so that ``(1/P) sum_j w_j p_j = sum_s (N_s / N') pbar_s``: every stratum at its share of the
full grid. The full grid's pairs in strata with no pair tested (``unsampled share``: the
full grid's share of the strata with no pair among the units present; with one round of a
two-hyperparameter design, the pairs of units that share a value) cannot be estimated; a scope
with such a share gets no interval and no claim (:data:`UNSAMPLED_TOLERANCE`). A stratum that
the units present hold but the sample of pairs missed (it is then a small share of the pairs
there) passes its share on to the others. With every unit present every weight is 1 and nothing changes.

**The bootstrap over units.** The ``m`` units present are a sample of the ``M`` of the grid,
drawn without replacement; each bootstrap replicate also resamples them: multiplicities
``c_r ~ Multinomial(m, 1/m)`` rescaled to ``u_r = 1 + sqrt(1 - m/M) (c_r - 1)`` (mean 1, the
finite-population factor, never negative), shared by every scope and metric of the algorithm
so that the replicates stay paired. A within-unit pair of unit ``a`` weighs ``u_ra``, a pair of
units ``a != b`` weighs ``u_ra u_rb`` (the bootstrap of a statistic over pairs of units), times
the pair-sampling weight; within each stratum the weights are normalised back to the
stratum's share, so each replicate is the same post-stratified estimator on resampled units
and users. The claims read these replicates as they are (conservative); the interval reads
them with a spread put together from the users', pairs' and units' parts of the variance,
each counted once (:func:`grid_sample_scale`, :func:`unit_variance`): resampling the three at
once counts every pair's own part and noise several times. Its bias and coverage of the full
grid's value are measured by simulation (``docs/statistics.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis.source import ResultSource
from dptune.errors import input_error

__all__ = ["UNSAMPLED_TOLERANCE", "GRID_SAMPLE_COLUMNS", "UnitSample", "unit_sample",
           "PairDesign", "pair_design", "unit_multipliers", "design_replicate_weights",
           "NOISE_ROWS", "unit_variance", "replicate_pvalues", "grid_sample_scale",
           "grid_sample_interval"]

#: A scope whose full-grid pairs in unsampled strata exceed this share gets no interval and no
#: claim (its DP is the estimate over the strata sampled, flagged). Zero: any unsampled stratum.
UNSAMPLED_TOLERANCE = 0.0

#: grid_sample.csv: one row per algorithm of a store holding a subset of its grid's units.
GRID_SAMPLE_COLUMNS = ["algorithm", "units", "units_total", "units_partial", "configs",
                       "configs_total", "unit_hyperparameters"]


@dataclass(frozen=True)
class UnitSample:
    """Which units of one algorithm's full grid the analysis uses.

    ``units``: the configuration ids of every unit of the full grid (the manifest's order);
    ``present``: indices of the units with results in every validation fold (sorted);
    ``partial``: how many units have results in some validation folds only (left out);
    ``configs``: the full grid's configurations (``config_id`` and the hyperparameters);
    ``unit_hyperparameters``: the hyperparameters constant within every unit."""

    algorithm: str
    units: tuple[tuple[int, ...], ...]
    present: np.ndarray
    partial: int
    configs: pd.DataFrame
    unit_hyperparameters: tuple[str, ...]

    @property
    def complete(self) -> bool:
        """Whether every unit of the grid is present (the analysis is the full grid's)."""
        return len(self.present) == len(self.units)

    @property
    def present_configs(self) -> np.ndarray:
        """The configuration ids of the units present, sorted."""
        if not len(self.present):
            return np.zeros(0, dtype=np.int64)
        return np.sort(np.concatenate([np.asarray(self.units[k], dtype=np.int64)
                                       for k in self.present]))

    def unit_of(self) -> dict[int, int]:
        """Configuration id -> index of its unit."""
        return {int(c): k for k, u in enumerate(self.units) for c in u}

    @cached_property
    def codes(self) -> pd.DataFrame:
        """Per configuration id (the index): an integer code of each unit hyperparameter's
        value and, last, of its unit (columns ``0 .. d``); computed once."""
        cfg = self.configs.set_index("config_id")
        out = pd.DataFrame(index=cfg.index)
        for i, h in enumerate(self.unit_hyperparameters):
            out[i] = pd.factorize(cfg[h].astype(str))[0]
        unit_of = self.unit_of()
        out[len(self.unit_hyperparameters)] = [unit_of[int(c)] for c in cfg.index]
        return out

    @cached_property
    def position(self) -> np.ndarray:
        """Unit index -> its position among the units present (-1: absent)."""
        pos = np.full(len(self.units), -1, dtype=np.int64)
        pos[self.present] = np.arange(len(self.present))
        return pos

    @cached_property
    def counts(self) -> dict[str, tuple[dict[int, int], dict[int, int]]]:
        """Cache of the stratum counts of each scope's pairs, in the full grid and among the
        units present (filled by :func:`pair_design`)."""
        return {}

    def row(self) -> dict[str, Any]:
        """Its grid_sample.csv row (:data:`GRID_SAMPLE_COLUMNS`)."""
        return {"algorithm": self.algorithm, "units": len(self.present),
                "units_total": len(self.units), "units_partial": self.partial,
                "configs": len(self.present_configs), "configs_total": len(self.configs),
                "unit_hyperparameters": ",".join(self.unit_hyperparameters)}


def _unit_hyperparameters(configs: pd.DataFrame, hyperparameters: Sequence[str],
                          units: Sequence[Sequence[int]]) -> tuple[str, ...]:
    """The hyperparameters with one value within every unit (and more than one in the grid)."""
    label = np.empty(len(configs), dtype=np.int64)
    pos = pd.Series(np.arange(len(configs)), index=configs["config_id"].to_numpy())
    for k, u in enumerate(units):
        label[pos.loc[list(u)].to_numpy()] = k
    out = []
    for h in hyperparameters:
        col = configs[h].astype(str)
        if col.nunique() > 1 and (col.groupby(label).nunique() <= 1).all():
            out.append(h)
    return tuple(out)


def unit_sample(store: ResultSource, algorithm: str) -> UnitSample | None:
    """The units of ``algorithm`` a result store holds, or None when the store does not say
    (a per-user table, a store without units in its manifest that holds every configuration).

    A store that lists its units (``manifest()["algorithms"][i]["units"]``) and its trials
    (``trials()``: algorithm, config_id, fold, unit) gives a :class:`UnitSample`. A store that
    does not list them but lacks configurations of its grid is refused: which pairs stand for
    which of the full grid cannot be known."""
    configs = store.configs(algorithm)
    trials_of = getattr(store, "trials", None)
    units = None
    manifest = getattr(store, "manifest", None)
    if callable(manifest):
        try:
            for a in manifest().get("algorithms", []):
                if a.get("name") == algorithm and a.get("units") is not None:
                    units = tuple(tuple(int(c) for c in u) for u in a["units"])
        except (OSError, ValueError, TypeError, AttributeError):
            units = None
    if not callable(trials_of):
        return None
    trials = trials_of()
    if not {"algorithm", "config_id", "fold", "unit"} <= set(trials.columns):
        return None  # a store that does not say which units it holds (a test double)
    trials = trials[(trials["algorithm"] == algorithm) & (trials["fold"].astype(str) != "test")]
    folds = [str(f) for f in store.folds(algorithm) if str(f) != "test"]
    held = set(trials["config_id"].astype(int))
    if units is None:
        if held >= set(configs["config_id"].astype(int)):
            return None
        raise input_error("store", f"{algorithm}: units", "the store holds "
                          f"{len(held)} of the grid's {len(configs)} configurations and its "
                          "manifest does not list the grid's units; finish the sweep "
                          "(dptune run) to analyse it")
    by_unit = trials.assign(unit=trials["unit"].astype(str), fold=trials["fold"].astype(str))
    folds_of = by_unit.groupby("unit")["fold"].agg(lambda s: set(s))
    present, partial = [], 0
    for k in range(len(units)):
        have = folds_of.get(f"u{k:05d}", set())
        if folds and set(folds) <= have:
            present.append(k)
        elif have:
            partial += 1
    hps = list(store.hyperparameters(algorithm))
    return UnitSample(algorithm, units, np.asarray(present, dtype=np.int64), partial,
                      configs.reset_index(drop=True),
                      _unit_hyperparameters(configs, hps, units))


def _stratum_counts(codes: np.ndarray) -> dict[int, int]:
    """Pairs of the configurations ``codes`` (one row each, ``d + 1`` columns) by the exact set
    of columns they agree on (a bit mask), by inclusion-exclusion over group counts."""
    n, d = codes.shape
    eq: dict[int, int] = {}
    for mask in range(1 << d):
        cols = [b for b in range(d) if mask >> b & 1]
        if not cols:
            eq[mask] = n * (n - 1) // 2
            continue
        _, counts = np.unique(codes[:, cols], axis=0, return_counts=True)
        eq[mask] = int((counts * (counts - 1) // 2).sum())
    exact = {}
    for mask in range(1 << d):
        total = 0
        for sup in range(1 << d):
            if sup & mask == mask:
                total += (-1) ** bin(sup ^ mask).count("1") * eq[sup]
        if total:
            exact[mask] = total
    return exact


@dataclass(frozen=True)
class PairDesign:
    """How one scope's pairs (in the order given) stand for the full grid's pairs.

    ``weights`` ``(P,)``: the post-stratification weights (mean 1); ``strata`` ``(P,)``: each
    pair's stratum; ``share`` stratum -> its share of the sampled strata (``N_s / N'``);
    ``unit_a``, ``unit_b`` ``(P,)``: the positions of the pair's units among the units present;
    ``unsampled``: the full grid's share of the scope's pairs in strata with no pair among the
    units present; ``units``, ``units_total``: the units present and the full grid's (``m``,
    ``M``)."""

    weights: np.ndarray
    strata: np.ndarray
    share: dict[int, float]
    unit_a: np.ndarray
    unit_b: np.ndarray
    unsampled: float
    units: int
    units_total: int

    @property
    def gets_interval(self) -> bool:
        """Whether the scope's unsampled share allows an interval and claims."""
        return self.unsampled <= UNSAMPLED_TOLERANCE

    @cached_property
    def clusters(self) -> int:
        """How many independent draws of the sample of units the pairs rest on: the distinct
        units of the within-unit pairs plus the distinct pairs of units of the others. Every
        pair of one pair of units shares what those two training runs are (for a one-at-a-time
        scope of a unit hyperparameter, the two values compared), so however many pairs a
        scope holds, what another sample of units would change is read off this many draws."""
        lo, hi = np.minimum(self.unit_a, self.unit_b), np.maximum(self.unit_a, self.unit_b)
        return int(len(np.unique(lo.astype(np.int64) * max(self.units, 1) + hi)))

    @property
    def few_draws(self) -> bool:
        """Whether the pairs rest on fewer independent draws of units (:attr:`clusters`) than
        the units present (a one-at-a-time scope of a unit hyperparameter): its interval then
        takes Student's t at that many less one (:func:`grid_sample_scale`) and is the logit
        hull (:func:`grid_sample_interval`)."""
        return self.clusters < self.units


def pair_design(sample: UnitSample, pairs: np.ndarray, kind: str, hyperparameter: str = "",
                value: str = "") -> PairDesign:
    """The :class:`PairDesign` of a scope's ``pairs`` (module docstring). ``kind``: ``all``
    (the full grid's pairs), ``value`` (those among the configurations with ``hyperparameter``
    = ``value``, in the canonical text of :func:`dptune.analysis.dp.pairs.format_value`) or
    ``only`` (pairs differing in ``hyperparameter`` alone: one stratum, weights 1)."""
    from dptune.analysis.dp.pairs import format_value

    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    codes = sample.codes
    d = codes.shape[1]
    ca = codes.loc[pairs[:, 0]].to_numpy()
    cb = codes.loc[pairs[:, 1]].to_numpy()
    strata = ((ca == cb) * (1 << np.arange(d))).sum(axis=1).astype(np.int64)
    unit_a, unit_b = sample.position[ca[:, -1]], sample.position[cb[:, -1]]
    n_p = len(pairs)
    m, m_total = len(sample.present), len(sample.units)
    if kind == "only" or not n_p:
        return PairDesign(np.ones(n_p), strata, {int(s): 1.0 for s in np.unique(strata)},
                          unit_a, unit_b, 0.0, m, m_total)
    key = f"{hyperparameter}={value}" if kind == "value" else "all"
    if key not in sample.counts:
        population = codes
        if kind == "value":
            text = sample.configs.set_index("config_id")[hyperparameter].map(format_value)
            population = codes.loc[text.index[text == value]]
        here = population.loc[population.index.isin(sample.present_configs)]
        sample.counts[key] = (_stratum_counts(population.to_numpy()),
                              _stratum_counts(here.to_numpy()))
    full, present = sample.counts[key]
    total = sum(full.values())
    tested, n_s = np.unique(strata, return_counts=True)
    covered = sum(full.get(int(s), 0) for s in tested)
    share = {int(s): full.get(int(s), 0) / covered for s in tested}
    per = {int(s): share[int(s)] / int(c) for s, c in zip(tested, n_s, strict=True)}
    weights = n_p * np.array([per[int(s)] for s in strata])
    # strata with no pair among the units present cannot be estimated; one that the units hold
    # but the sample of pairs missed (a small share of the pairs there) passes its share on
    unsampled = sum(n for s, n in full.items() if s not in present)
    return PairDesign(weights, strata, share, unit_a, unit_b,
                      max(0.0, unsampled / total) if total else 0.0, m, m_total)


def unit_multipliers(n_boot: int, m: int, total: int, seed: int) -> np.ndarray:
    """``(B, m)`` bootstrap multipliers of the ``m`` units present out of ``total``:
    ``1 + sqrt(1 - m/total) (c - 1)``, ``c ~ Multinomial(m, 1/m)`` per replicate
    (``SeedSequence(seed, spawn_key=(2,))``); all 1 when every unit is present."""
    if m >= total or m == 0:
        return np.ones((int(n_boot), int(m)))
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(2,)))
    c = rng.multinomial(int(m), np.full(int(m), 1.0 / m), size=int(n_boot)).astype(np.float64)
    return 1.0 + np.sqrt(1.0 - m / total) * (c - 1.0)


def design_replicate_weights(design: PairDesign, units: np.ndarray,
                             pair_weights: np.ndarray) -> np.ndarray:
    """``(B, P)`` replicate weights of a scope's pairs: the pair-sampling weights times the
    unit multipliers (``units`` ``(B, m)``: a within-unit pair ``u_a``, a pair of two units
    ``u_a u_b``), normalised within each stratum to ``P x`` its share, so that ``(1/P) sum_j
    v_rj p_rj`` is the post-stratified estimator of replicate ``r``. A stratum whose pairs all
    get weight 0 in a replicate passes its share to the others in that replicate."""
    n_boot, n_p = pair_weights.shape
    ua, ub = units[:, design.unit_a], units[:, design.unit_b]
    raw = pair_weights * np.where(design.unit_a == design.unit_b, ua, ua * ub)
    out = np.zeros((n_boot, n_p))
    kept = np.zeros(n_boot)
    for s, share in design.share.items():
        cols = design.strata == s
        tot = raw[:, cols].sum(axis=1)
        ok = tot > 0
        out[np.ix_(ok, np.flatnonzero(cols))] = (raw[np.ix_(ok, np.flatnonzero(cols))]
                                                  * (share / tot[ok])[:, None])
        kept += np.where(ok, share, 0.0)
    return n_p * out / np.where(kept > 0, kept, 1.0)[:, None]


#: Replicates whose per-pair p-values give the noise that :func:`grid_sample_scale` takes out
#: of the units' part (an average over them; its own error is a few percent of that part).
NOISE_ROWS = 200


def unit_variance(design: PairDesign, p: np.ndarray) -> np.ndarray:
    """The units' part of the variance of a scope's post-stratified mean p-value: what drawing
    another sample of units would change, estimated without the pairs' own parts; ``p``
    ``(P,)`` or ``(R, P)`` (each row one set of the scope's p-values, in the design's pair
    order), one value per row.

    With ``c_j = share_s / n_s`` the weight of pair ``j`` in the estimate ``sum_s share_s
    pbar_s``, ``e_j = p_j - pbar_s`` its deviation from its stratum's mean and ``I_k = sum_{j
    holds k} c_j e_j`` the first-order effect of unit ``k`` (a pair of two units counts in
    both, a within-unit pair in its one unit), resampling the ``m`` units present out of ``M``
    gives ``(1 - m/M) sum_k I_k^2`` (the multinomial bootstrap over units). Each ``I_k^2``
    holds the squares ``(c_j e_j)^2`` of the unit's own pairs: the part of a pair's p-value
    that is its own (how far *these two* configurations are apart beyond their units' effects,
    and the users' noise on them), which the estimate holds once, through its sample of pairs,
    not through its units. Without them what is left are products of two different pairs that
    share unit ``k``; ``D_k`` adds back, for two pairs of one stratum, that stratum's variance
    over its number of pairs (the deviations are taken from the sample's own stratum means,
    which pulls each product down by that much on average). The sum is then rescaled by
    ``T / E``: ``T = sum_k C_k^2`` (``C_k = sum_{j holds k} c_j``) is what the first-order
    variance holds for unit effects of variance 1, and ``E`` what the sum gives for them in
    expectation (the same sum on each unit's effect alone, unit by unit), the exact correction
    for the design's pairs and the centring (``docs/statistics.md`` section 16; checked against
    the definition written pair of pairs by pair of pairs in
    ``tests/analysis/dp/test_units.py``):

        V_units = (1 - m/M) (T / E) sum_k (I_k^2 - sum_{j holds k} (c_j e_j)^2 + D_k)

    A unit with a single pair adds nothing (nothing to pair it with). With 4 units or fewer,
    or when ``E`` is not positive, the diagonal is kept: ``(1 - m/M) sum_k I_k^2``, which
    counts the pairs' own parts too (wider, never narrower). It can be negative when the
    units' effects are small; :func:`grid_sample_scale` keeps ``max(0, .)``.
    """
    p = np.atleast_2d(np.asarray(p, dtype=np.float64))
    m = design.units
    if not p.shape[1] or m >= design.units_total:
        return np.zeros(p.shape[0])
    finite = 1.0 - m / design.units_total
    sums, effect = _unit_sums(design, p)
    # the same sums for one unit's effect alone, unit by unit: their total is the expectation
    # of the sums when every unit has an independent effect of variance 1
    between = design.unit_a != design.unit_b
    alone = np.zeros((m, len(between)))
    alone[design.unit_a, np.arange(len(between))] = 1.0
    alone[design.unit_b[between], np.flatnonzero(between)] += 1.0
    expected = float(_unit_sums(design, alone)[0].sum())
    target = float((_unit_weights(design) ** 2).sum())
    if m <= 4 or not expected > 0.0:
        return finite * (effect ** 2).sum(axis=0)
    return finite * sums * (target / expected)


def _unit_weights(design: PairDesign) -> np.ndarray:
    """``C_k = sum_{j holds k} c_j``: each unit's weight in the estimate."""
    c = np.zeros(len(design.strata))
    for s, share in design.share.items():
        cols = design.strata == s
        c[cols] = share / cols.sum()
    return _per_unit(design, c)


def _per_unit(design: PairDesign, values: np.ndarray) -> np.ndarray:
    """Sum of ``values`` (first axis: the pairs) over the pairs that hold each unit."""
    between = np.flatnonzero(design.unit_a != design.unit_b)
    out = np.zeros((design.units,) + values.shape[1:])
    np.add.at(out, design.unit_a, values)
    np.add.at(out, design.unit_b[between], values[between])
    return out


def _unit_sums(design: PairDesign, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(S, I)`` of :func:`unit_variance` for the rows of ``p`` ``(R, P)``: ``S_r = sum_k
    (I_rk^2 - sum_{j holds k} (c_j e_rj)^2 + D_rk)`` and the effects ``I`` ``(m, R)``."""
    n_rows = p.shape[0]
    ce = np.zeros_like(p)
    centring = np.zeros((design.units, n_rows))
    for s, share in design.share.items():
        cols = design.strata == s
        n_s = int(cols.sum())
        block = p[:, cols]
        ce[:, cols] = (share / n_s) * (block - block.mean(axis=1, keepdims=True))
        if n_s > 1:
            held = _per_unit(design, cols.astype(np.float64))
            centring += ((share / n_s) ** 2 * held * (held - 1.0) / n_s)[:, None] \
                * block.var(axis=1, ddof=1)
    effect = _per_unit(design, ce.T)
    own = _per_unit(design, (ce ** 2).T)
    return (effect ** 2 - own + centring).sum(axis=0), effect


def replicate_pvalues(folds: Sequence[Any], centres: Sequence[np.ndarray],
                      n_boot: int) -> np.ndarray:
    """``(B, P)``: every replicate's p-value of every pair, averaged over the folds
    (:func:`dptune.analysis.dp.bootstrap.fold_replicate_pvalues`). The replicate of pair
    weights ``v`` ``(B, P)`` is ``(v * this).sum(axis=1) / P``: the pair weights are the same in
    every fold."""
    from dptune.analysis.dp import bootstrap

    out: np.ndarray | None = None
    for f, c in zip(folds, centres, strict=True):
        each = bootstrap.fold_replicate_pvalues(f, c, n_boot)
        out = each if out is None else out + each
    assert out is not None
    return out / len(folds)


def grid_sample_scale(folds: Sequence[Any], design: PairDesign, pair_weights: np.ndarray,
                      replicates: np.ndarray, centres: Sequence[np.ndarray],
                      p_reps: np.ndarray) -> float:
    """``s = sqrt(V / V*)``: by how much the errors of the replicates that resample users,
    units and pairs at once (``replicates``, their mean p-values ``pbar*``: variance ``V*``)
    must shrink to have the variance ``V`` of the estimate of a store holding a subset of its
    grid's units. The interval reads them as the full grid's are read, with this ``s`` in place
    of :func:`dptune.analysis.dp.bootstrap.ungrouped_scale`.

    Why: the three resamplings are crossed, and each counts what varies from pair to pair once
    more. A pair's p-value is the sum of its units' effects, its own part (how far its two
    configurations are apart beyond their units' effects) and the users' noise on it. A pair
    of units weighs ``u_a u_b``, so the unit multipliers count the own part and the noise of
    every pair through both its units, the pair multipliers count the noise once more, and the
    users' resampling counts it as it should; on the synthetic grid of ``docs/statistics.md``
    the interval was twice as wide as the estimate's error. The variance is therefore put
    together from its components, each counted once:

    - **users**: the replicates with the units and pairs fixed (every pair at its
      post-stratification weight; from every replicate's p-value of every pair,
      :func:`dptune.analysis.dp.bootstrap.fold_replicate_pvalues`), extrapolated to ungrouped
      users as the full grid's are (:func:`dptune.analysis.dp.bootstrap.ungrouped_scale`): the
      users' part, the noise on every pair included;
    - **pairs**: the pair multipliers alone (``pair_weights``, normalised within the strata) on
      the point p-values, less their mean on the p-value deviations of each of the first
      :data:`NOISE_ROWS` user replicates from the mean of all (the users' noise on every
      pair, which the users' part holds already): the pair sample's part, kept at 0 or more;
    - **units**: :func:`unit_variance` of the point p-values (pairs' own parts dropped) less its
      mean over the same deviations (the users' noise on pairs that share a configuration),
      kept at 0 or more.

    ``V = users + pairs + units``; ``s^2 = V / V*`` kept in ``[MIN_VARIANCE_RATIO, 1]``. All
    on the mean-p scale (a ratio of variances, the same to first order on any smooth scale;
    the users' part reads :func:`dptune.analysis.dp.bootstrap.ungrouped_scale` on the arcsine
    scale). ``p_reps``: :func:`replicate_pvalues` of the folds (the users'
    replicates with the pairs at their design weights, and the noise). 1 when the replicates
    do not vary.

    **Few units.** Every part of ``V`` is read off the ``m`` units present (which units are
    there moves the users' and the pairs' parts as well as the units'), so ``V`` is itself an
    estimate with about ``m - 1`` degrees of freedom: with one round of 15 units its spread
    over designs was that of a chi-square with 13, and a sample whose units happen to be alike
    gives a high estimate and a small ``V`` at once. Read with the normal quantile, the interval
    covered 89.75-92.7% at one round of a 15 x 15 grid, its misses mostly above the truth. The
    returned scale is therefore ``s t_(m-1) / z``
    (:func:`dptune.analysis.dp.bootstrap.small_sample_factor`: Student's t over the normal
    quantile at ``(1 + 0.95) / 2``; 1.094 at 15 units, 1.043 at 30, 1.02 at
    60, 1 for the full grid, which never comes here). A scope whose pairs rest on fewer
    independent draws of units than ``m`` (:attr:`PairDesign.clusters`: a one-at-a-time scope
    of a unit hyperparameter, whose pairs come from the few pairs of units present that share
    every other value, 6 or 7 at one round of BPR-MF's grid) takes ``t`` at that many less one:
    with ``m - 1`` its interval covered 82.5% (2 pairs of units) and 89.5% (3) of the full
    grid's value at one round of a 6 x 6 grid (``docs/statistics.md`` section 12)."""
    from dptune.analysis.dp import bootstrap

    reps = np.asarray(replicates, dtype=np.float64)
    total = float(np.var(reps, ddof=1)) if len(reps) > 1 else 0.0
    if not total > 0.0:
        return 1.0
    n_boot, n_p = pair_weights.shape
    fixed = np.broadcast_to(design.weights, (n_boot, n_p))
    fixed_reps = p_reps @ design.weights / n_p
    users = float(np.var(fixed_reps, ddof=1)) * bootstrap.ungrouped_scale(
        folds, fixed, fixed_reps, centres) ** 2
    point = np.mean([f.p for f in folds], axis=0)
    pairs_only = design_replicate_weights(design, np.ones((n_boot, design.units)),
                                          pair_weights)
    k = min(NOISE_ROWS, n_boot)
    noise = (p_reps[:k] - p_reps.mean(axis=0)) * np.sqrt(n_boot / (n_boot - 1.0)) \
        if n_boot > 1 else p_reps * 0
    pairs = float(np.var(pairs_only @ point / n_p, ddof=1)) - float(
        np.var(pairs_only[:NOISE_ROWS] @ noise.T / n_p, axis=0, ddof=1).mean())
    units = float(unit_variance(design, point)[0] - unit_variance(design, noise).mean())
    variance = users + max(pairs, 0.0) + max(units, 0.0)
    factor = bootstrap.small_sample_factor(
        variance, [(variance, min(design.units, design.clusters) - 1)])
    return float(np.sqrt(np.clip(variance / total, bootstrap.MIN_VARIANCE_RATIO, 1.0))) * factor


def grid_sample_interval(estimate: float, replicates: np.ndarray, scale: float,
                         level: float = 0.95, few_draws: bool = False) -> tuple[float, float]:
    """The ``level`` interval of a grid sample's mean p-value, read off the variance its
    spread is put together from: ``pbar +- h``, ``h = z_((1 + level) / 2) * scale *
    sd(pbar*_r)``, clipped to [0, 1], with ``scale`` :func:`grid_sample_scale` (which holds the
    Student's t factor of the draws of units the pairs rest on, so the half-width is
    ``t_(min(m, clusters) - 1) * sqrt(users + pairs + units)``).

    ``few_draws``: the scope's pairs rest on fewer independent draws of units than the units
    present (:attr:`PairDesign.clusters` below ``m``: a one-at-a-time scope of a unit
    hyperparameter). Its interval is then the hull of that one and of the same half-width read
    on the logit scale, ``expit(logit(pbar) +- h / (pbar (1 - pbar)))`` (a mean p-value of 0 or
    1, or ``h = 0``, has only the first). Why: on so few draws the estimate's error is skewed
    either way. Where one hyperparameter is much stronger than the others, a round whose pairs
    of units hold its widest gaps gives p-values near 0, a low estimate and a narrow interval at
    once (correlation +0.78), and the raw interval ended below the full grid's value 14.0% of
    the time (85.8% coverage at one round of BPR-MF's shape). The logit reading, whose upper end
    grows with the estimate's relative error, brought that to 5.8%, but where the effects are
    equal the correlation has the other sign and it left more intervals above. The hull keeps
    each side's longer end: such intervals covered 92.8-97.8% in every case measured, never
    less than either reading (``docs/statistics.md`` section 12).

    Why not the full grid's basic bootstrap quantiles (:func:`dptune.analysis.dp.
    bootstrap.dp_interval`, arcsine scale; the logit scale when this was measured): here the replicates' spread is rescaled to a variance assembled
    from its components, so only their variance carries information, not their quantiles; and
    with few units the estimate's standardised error is skewed upwards (a round whose units
    happen to be alike gives a high estimate and a small variance at once) while the logit
    interval is the longer above the estimate. At one round of a 15 x 15 grid of 14
    configurations per unit (2,400 designs) the logit quantiles left 4.7% of the intervals
    entirely above the truth, this reading 3.6%, with the same coverage on the 10 x 10 grid
    (docs/statistics.md section 16)."""
    from scipy import stats

    reps = np.asarray(replicates, dtype=np.float64)
    if reps.ndim != 1 or reps.size < 2 or not np.all(np.isfinite(reps)):
        raise input_error("grid sample", "replicates",
                          "need a 1-D array of at least 2 finite values")
    if not 0.0 <= float(estimate) <= 1.0:
        raise input_error("grid sample", "estimate",
                          f"must be a mean p-value in [0, 1], got {estimate}")
    if not (0.0 < float(scale) and np.isfinite(scale)) or not 0.0 < float(level) < 1.0:
        raise input_error("grid sample", "scale",
                          f"need a positive scale and a level in (0, 1), got {scale}, {level}")
    half = float(stats.norm.ppf((1.0 + level) / 2.0)) * float(scale) * float(np.std(reps, ddof=1))
    p = float(estimate)
    lo, hi = float(np.clip(p - half, 0.0, 1.0)), float(np.clip(p + half, 0.0, 1.0))
    if few_draws and 0.0 < p < 1.0 and half > 0.0:
        from scipy.special import expit, logit

        spread = half / (p * (1.0 - p))
        lo = min(lo, float(expit(logit(p) - spread)))
        hi = max(hi, float(expit(logit(p) + spread)))
    return lo, hi


