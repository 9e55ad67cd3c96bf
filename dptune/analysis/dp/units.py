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
and users. Its bias and coverage of the full grid's value are measured by simulation
(``docs/statistics.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from dptune.errors import input_error

__all__ = ["UNSAMPLED_TOLERANCE", "GRID_SAMPLE_COLUMNS", "UnitSample", "unit_sample",
           "PairDesign", "pair_design", "unit_multipliers", "design_replicate_weights"]

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


def unit_sample(store: Any, algorithm: str) -> UnitSample | None:
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
    units present."""

    weights: np.ndarray
    strata: np.ndarray
    share: dict[int, float]
    unit_a: np.ndarray
    unit_b: np.ndarray
    unsampled: float

    @property
    def gets_interval(self) -> bool:
        """Whether the scope's unsampled share allows an interval and claims."""
        return self.unsampled <= UNSAMPLED_TOLERANCE


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
    if kind == "only" or not n_p:
        return PairDesign(np.ones(n_p), strata, {int(s): 1.0 for s in np.unique(strata)},
                          unit_a, unit_b, 0.0)
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
                      max(0.0, unsampled / total) if total else 0.0)


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
