"""Noise floor of discriminative power: A/A pairs of one configuration trained with several seeds.

Pairs of *identical* configurations trained with different seeds give the
p-value curve of "no real difference"; a metric whose DP curve is not clearly below that floor
does not discriminate configurations better than re-training with another seed would.

The training half runs in the sweep stage (:mod:`dptune.sweeper._noise`, ``dptune run`` after the
sweep): the best configurations of every stochastic algorithm re-trained with ``S`` seeds on
every validation fold, one part per (algorithm, configuration, fold) in
``<results>/noise_floor.parquet/`` (:mod:`dptune.store._noise_parts`). This module is the
analysis half:

- :func:`noise_floor_table` (read by :func:`dptune.analyze`).
  Per part and metric@N, the ``S`` seeds' per-user values ``v[s, u]`` give the ``S (S - 1) / 2``
  A/A p-values of :func:`aa_pvalues` (the analysis' paired test). Per fold the A/A p-values of
  all selected
  configurations are pooled and sorted decreasingly (``c_f``, length ``K``); the curve is
  resampled to the DP's ``P`` positions by quantile interpolation,
  ``r_f[j] = interp((j + 1/2) / P; (i + 1/2) / K -> c_f[i])``, then averaged over folds
  position by position (mean, sd with ``ddof=1``) exactly like the DP curve. The floor is

  ``floor_per_25 = 25 * mean_f(pbar_f)``, ``pbar_f`` = mean A/A p-value of fold ``f``,

  on the scale of every DP of the report (DP per 25 pairs), with ``floor_per_25_sd = 25 *
  sd_f(pbar_f)``. Under an exactly true null the A/A p-values are uniform and the floor is
  12.5; seed-to-seed differences of the trained models push it lower. :func:`compare_with_floor`
  flags a metric whose DP is not clearly below the floor, given both estimates' uncertainty.
  :func:`aa_band` gives Figure 1's grey band: per algorithm and cutoff, the lowest and highest
  A/A curve over the metrics at each position, and their mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dptune.analysis.dp.fold_loop import FoldCurves
from dptune.analysis.dp.paired_tests import PairedTest
from dptune.analysis.dp.pairs import scope_seed
from dptune.analysis.dp.scale import REFERENCE_P
from dptune.errors import input_error
from dptune.store._noise_parts import (
    NOISE_DIR,
    noise_part_meta,
    noise_part_paths,
    rank_configs,
    read_noise_values,
)
from dptune.store._store import ResultStore
from dptune.vocab import RULE_MARGIN, RULE_PLAIN, fold_key, metric_key

__all__ = ["NoiseFloor", "aa_pvalues", "noise_floor_table", "check_noise_complete",
           "compare_with_floor", "aa_band", "PVALUE_COLUMNS", "CURVE_COLUMNS", "FLOOR_COLUMNS",
           "VERSUS_COLUMNS", "BAND_COLUMNS", "RULE_MARGIN", "RULE_PLAIN"]

PVALUE_COLUMNS = ["algorithm", "config_id", "metric", "cutoff", "fold", "seed_a", "seed_b", "p",
                  "n_users"]
CURVE_COLUMNS = ["algorithm", "cutoff", "metric", "position", "mean", "sd"]
FLOOR_COLUMNS = ["algorithm", "metric", "cutoff", "n_configs", "n_seeds", "n_folds",
                 "n_aa_pairs", "n_positions", "floor_mean_p", "floor_per_25", "floor_per_25_sd",
                 "test"]
VERSUS_COLUMNS = ["algorithm", "metric", "cutoff", "dp_per_25", "ci_low", "ci_high",
                  "floor_per_25", "floor_per_25_sd", "floor_ci_low", "floor_ci_high", "floor_mean_p",
                  "ratio", "margin", "flagged", "rule"]
BAND_COLUMNS = ["algorithm", "cutoff", "position", "low", "high", "mean"]
# noise_floor.csv's ``rule`` values (RULE_MARGIN, RULE_PLAIN) are in the vocabulary, where the
# report reads them.


def aa_pvalues(values_by_seed: np.ndarray, test: PairedTest, seed: int = 0) -> np.ndarray:
    """A/A p-values of all seed pairs ``(s, t)``, ``s < t``, in lexicographic order ``(0,1),
    (0,2), ..., (S-2, S-1)``: ``values_by_seed`` is ``(S, n_users)`` (one configuration trained
    with S seeds), tested with the analysis' paired test (``seed`` seeds a resampling test)."""
    v = np.asarray(values_by_seed, dtype=np.float64)
    if v.ndim != 2:
        raise input_error("noise floor", "values_by_seed",
                          f"expected (seeds, users), got shape {v.shape}")
    s_idx, t_idx = np.triu_indices(v.shape[0], k=1)
    return test.pvalues(v, s_idx, t_idx, None, seed=seed)


@dataclass(frozen=True)
class NoiseFloor:
    """Result of :func:`noise_floor_table`, and the noise part of an analysis result.

    Frozen: :func:`noise_floor_table` computes the floor, and :func:`dptune.analyze` adds the
    comparison with DP by ``dataclasses.replace`` (it needs the DP table, which this module
    does not compute).

    - ``pvalues``: ``algorithm, config_id, metric, cutoff, fold, seed_a, seed_b, p, n_users``:
      every A/A p-value (seed indices ``seed_a < seed_b``; noise_pvalues.parquet).
    - ``curves``: ``algorithm, cutoff, metric, position, mean, sd``: the A/A curve resampled to the
      DP's ``P`` positions and averaged over folds (Figure 1's dashed line; noise_curves.csv).
    - ``floor``: ``algorithm, metric, cutoff, n_configs, n_seeds, n_folds, n_aa_pairs,
      n_positions, floor_mean_p, floor_per_25, floor_per_25_sd, test``: the floor per metric@N before
      it is
      joined to DP.
    - ``configs``: ``algorithm -> config ids`` whose A/A pairs were tested (ascending);
      ``seeds``: ``algorithm -> the most seeds of one of its runs`` (a configuration on a fold),
      in the manifest's algorithm order: the report's "Runs" line.
    - ``versus_dp``: DP beside its floor with the flag (:func:`compare_with_floor`;
      noise_floor.csv), or None before it is compared.
    - ``band``: Figure 1's grey band, :func:`aa_band` of ``curves`` (``algorithm, cutoff,
      position, low, high, mean``); computed from ``curves`` when not given.
    """

    pvalues: pd.DataFrame
    curves: pd.DataFrame
    floor: pd.DataFrame
    configs: dict[str, list[int]] = field(default_factory=dict)
    seeds: dict[str, int] = field(default_factory=dict)
    versus_dp: pd.DataFrame | None = None
    band: pd.DataFrame | None = None

    def __post_init__(self) -> None:
        if self.band is None:
            object.__setattr__(self, "band", aa_band(self.curves))

    @property
    def empty(self) -> bool:
        """Whether no A/A p-value was computed."""
        return self.floor.empty


def aa_band(curves: pd.DataFrame) -> pd.DataFrame:
    """Figure 1's A/A band from the A/A curves (``algorithm, cutoff, metric, position, mean``):
    per (algorithm, cutoff) and position, the lowest (``low``) and highest (``high``) A/A
    curve over the metrics and their mean (``mean``), so that a panel draws one grey band and
    one dashed line instead of one line per metric. Columns :data:`BAND_COLUMNS`, positions
    0-based as in the curves."""
    parts = []
    need = {"algorithm", "cutoff", "metric", "position", "mean"}
    if len(curves) and need <= set(curves.columns):
        keys = curves.assign(algorithm=curves["algorithm"].astype(str),
                             metric=curves["metric"].astype(str),
                             cutoff=curves["cutoff"].astype("int64"),
                             position=curves["position"].astype("int64"))
        for (alg, cutoff), g in keys.groupby(["algorithm", "cutoff"], sort=False):
            wide = g.pivot_table(index="position", columns="metric", values="mean").sort_index()
            parts.append(pd.DataFrame({
                "algorithm": str(alg), "cutoff": int(cutoff),
                "position": wide.index.to_numpy(dtype="int64"),
                "low": wide.min(axis=1).to_numpy(), "high": wide.max(axis=1).to_numpy(),
                "mean": wide.mean(axis=1).to_numpy()}))
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object if c == "algorithm" else "int64"
                                          if c in ("cutoff", "position") else float)
                             for c in BAND_COLUMNS})
    return pd.concat(parts, ignore_index=True)[BAND_COLUMNS]


def _positions(n_pairs: int | Mapping[tuple[str, str, int], int], key: tuple[str, str, int]) -> int:
    if isinstance(n_pairs, Mapping):
        return int(n_pairs.get(key, 0))
    return int(n_pairs)


def check_noise_complete(store: ResultStore) -> None:
    """Refuse, before any work, a noise floor that a stopped run left with some folds only:
    every configuration with noise-floor parts must have one on each validation fold of its
    algorithm. An interrupted noise-floor stage left such a floor, which the analysis read
    as a floor of fewer folds while the report said every fold. One line naming the folder,
    the configuration and its folds, and the ways on: ``dptune run`` finishes it, or the
    analysis leaves the floor out (``--noise-seeds 0``)."""
    root = Path(store.root)
    parts = noise_part_paths(root)
    if not parts:
        return
    have: dict[tuple[str, int], set[str]] = {}
    for path in parts:
        meta = noise_part_meta(path)
        have.setdefault((str(meta["algorithm"]), int(meta["config_id"])), set()).add(
            str(meta["fold"]))
    for (alg, cid), folds in sorted(have.items()):
        if alg not in store.algorithms():
            continue
        every = [f for f in store.folds(alg) if f != "test"]
        missing = [f for f in every if f not in folds]
        if missing:
            raise input_error(root / NOISE_DIR, None, f"the noise floor of {alg} configuration "
                              f"{cid} has {len(every) - len(missing)} of its {len(every)} "
                              f"validation folds (fold {', '.join(missing)} missing: a run "
                              "stopped during it); dptune run finishes it, or leave the floor "
                              "out with --noise-seeds 0")


def noise_floor_table(
    results: str | Path | ResultStore,
    options: Any,
    n_pairs: int | Mapping[tuple[str, str, int], int] = 25,
) -> NoiseFloor:
    """A/A p-values, fold-averaged A/A curves and the floor from the noise-floor parts of
    ``results`` (a results directory, or its :class:`ResultStore` to reuse its part index),
    under ``options`` (a validated :class:`dptune.AnalysisOptions`: its paired test, seed,
    ``noise_seeds`` and ``noise_configs``, and the primary metric@N that ranks the
    configurations).

    ``n_pairs`` is the positions ``P`` of the curve, or a mapping ``(algorithm, metric, cutoff)
    -> P`` (the ``n_pairs`` of the DP row the floor is compared with; keys missing from it are
    left out). Seed indices ``< noise_seeds`` are kept, and per algorithm the best
    ``noise_configs`` configurations present by the primary metric. The resampling tests are
    seeded by :func:`dptune.analysis.dp.pairs.scope_seed` ``(seed,
    "noise|<algorithm>|<config>|<fold>")``. See the module docstring for the formulas.
    """
    test: PairedTest = options.paired_test
    seed = int(options.seed)
    max_seeds, max_configs = options.noise_seeds, options.noise_configs
    primary = (options.primary_metric, options.primary_cutoff)
    store = results if isinstance(results, ResultStore) else ResultStore(results)
    root = store.root
    parts = noise_part_paths(root)
    empty = NoiseFloor(pd.DataFrame(columns=PVALUE_COLUMNS), pd.DataFrame(columns=CURVE_COLUMNS),
                       pd.DataFrame(columns=FLOOR_COLUMNS))
    if not parts:
        return empty
    man = store.manifest()
    order = {a["name"]: i for i, a in enumerate(man["algorithms"])}
    metas = [(p, noise_part_meta(p)) for p in parts]
    metas = [(p, m) for p, m in metas if m["algorithm"] in order]
    chosen: dict[str, list[int]] = {}
    for alg in sorted({m["algorithm"] for _, m in metas}, key=order.__getitem__):
        present = sorted({int(m["config_id"]) for _, m in metas if m["algorithm"] == alg})
        ranked = [c for c in rank_configs(store, alg, *primary) if c in present]
        present = sorted(ranked[: int(max_configs)])
        chosen[alg] = present

    pv_parts: list[pd.DataFrame] = []
    seeds_used: dict[str, int] = {}
    # what the A/A pairs tested: per algorithm its configurations and the most seeds of a run
    tested: dict[str, set[int]] = {}
    run_seeds: dict[tuple[str, int, str], set[int]] = {}
    # (alg, metric, cutoff) -> fold -> list of A/A p-value arrays
    pooled: dict[tuple[str, str, int], dict[str, list[np.ndarray]]] = {}
    for path, meta in sorted(metas, key=lambda pm: (order[pm[1]["algorithm"]],
                                                     int(pm[1]["config_id"]),
                                                     fold_key(pm[1]["fold"]))):
        alg, cid, fold = meta["algorithm"], int(meta["config_id"]), str(meta["fold"])
        if cid not in chosen.get(alg, []):
            continue
        keep = [int(s) for s in meta["seed_indices"] if int(s) < int(max_seeds)]
        if len(keep) < 2:
            continue
        seeds_used[alg] = max(seeds_used.get(alg, 0), len(keep))
        t_seed = scope_seed(seed, f"noise|{alg}|{cid}|{fold}")
        for metric in meta["metrics"]:
            for cutoff in meta["cutoffs"]:
                seeds_idx, v = read_noise_values(path, meta, metric, cutoff, keep)
                p = aa_pvalues(v, test, seed=t_seed)
                sa, sb = np.triu_indices(v.shape[0], k=1)
                if len(p):
                    tested.setdefault(alg, set()).add(cid)
                    run_seeds.setdefault((alg, cid, fold), set()).update(
                        int(x) for x in (*seeds_idx[sa], *seeds_idx[sb]))
                pv_parts.append(pd.DataFrame({
                    "algorithm": alg, "config_id": cid, "metric": metric, "cutoff": int(cutoff),
                    "fold": fold, "seed_a": seeds_idx[sa].astype(int),
                    "seed_b": seeds_idx[sb].astype(int), "p": p, "n_users": v.shape[1],
                }))
                key = (alg, str(metric), int(cutoff))
                pooled.setdefault(key, {}).setdefault(fold, []).append(p)

    curve_parts: list[pd.DataFrame] = []
    floor_rows: list[dict[str, Any]] = []
    keys = sorted(pooled, key=lambda k: (order[k[0]], metric_key(k[1], k[2])))
    for key in keys:
        alg, metric, cutoff = key
        n_pos = _positions(n_pairs, key)
        if n_pos < 1:
            continue
        folds = sorted(pooled[key], key=fold_key)
        fold_p = [np.concatenate(pooled[key][f]) for f in folds]
        # the fold loop's accumulator: each fold's curve (resampled to the DP's positions),
        # averaged over the folds, and the folds' mean p-values
        acc = FoldCurves(len(folds), n_pos, options.alpha)
        for i, p in enumerate(fold_p):
            acc.add(i, p)
        s = acc.summary()
        curve_parts.append(pd.DataFrame({
            "algorithm": alg, "cutoff": cutoff, "metric": metric,
            "position": np.arange(n_pos), "mean": s["curve_mean"], "sd": s["curve_sd"],
        }))
        floor_rows.append({
            "algorithm": alg, "metric": metric, "cutoff": cutoff,
            "n_configs": len(chosen[alg]), "n_seeds": seeds_used[alg], "n_folds": len(folds),
            "n_aa_pairs": int(sum(len(p) for p in fold_p)), "n_positions": n_pos,
            "floor_mean_p": s["mean_p"], "floor_per_25": REFERENCE_P * s["mean_p"],
            "floor_per_25_sd": REFERENCE_P * s["mean_p_sd"], "test": test.name,
        })
    pvalues = (pd.concat(pv_parts, ignore_index=True)[PVALUE_COLUMNS] if pv_parts
               else empty.pvalues)
    curves_df = (pd.concat(curve_parts, ignore_index=True)[CURVE_COLUMNS] if curve_parts
                 else empty.curves)
    floor = pd.DataFrame(floor_rows, columns=FLOOR_COLUMNS)
    most = {a: max(len(seen) for (b, _, _), seen in run_seeds.items() if b == a)
            for a in chosen if a in tested}
    return NoiseFloor(pvalues, curves_df, floor,
                      {a: sorted(tested[a]) for a in chosen if a in tested}, most)


def compare_with_floor(dp: pd.DataFrame, floor: pd.DataFrame) -> pd.DataFrame:
    """DP (scope ``all``) beside its noise floor, both as DP per 25 pairs, with the flag.

    The floor is itself an estimate: ``F`` folds' mean A/A p-values, whose spread over folds is
    ``floor_per_25_sd``. Its 95% interval is ``floor_per_25 -+ h_floor``,

        h_floor = t_{F-1, 0.975} floor_per_25_sd / sqrt(F),

    clipped to [0, 25] (``floor_ci_low``, ``floor_ci_high``; none with one fold). With a
    bootstrap interval of DP, a metric is **clearly below** its floor when the difference is
    larger than the two estimates' uncertainties together,

        floor_per_25 - dp_per_25 > margin = sqrt(h_dp^2 + h_floor^2),
        h_dp = max(0, ci_high - dp_per_25),

    the upper half-width of DP's 95% interval (the side the claim rests on; 0 for an interval
    that ends below its estimate, whose upper side adds no uncertainty): a one-sided test
    of "DP below the floor" at about 2.5%, which
    :mod:`dptune.studies.simulations.noise_floor` measures when a metric's DP is in truth its
    floor. A floor of one fold has no spread to read, so nothing is clearly below it. Without
    a bootstrap there is no margin: the DP is compared with the floor as it is (no error rate). ``flagged`` is the negation (the metric does not clearly separate
    configurations better than re-training with another seed would); ``rule`` says which of the
    two decided (:data:`RULE_MARGIN`, :data:`RULE_PLAIN`); ``floor_mean_p`` is the floor's mean
    A/A p-value (``mean_p`` is always a DP's); ``ratio = dp_per_25 /
    floor_per_25``. Columns :data:`VERSUS_COLUMNS`.
    """
    from scipy import stats

    all_dp = dp[dp["scope"] == "all"]
    cols = ["algorithm", "metric", "cutoff", "dp_per_25", "ci_low", "ci_high"]
    merged = floor.merge(all_dp[cols], on=["algorithm", "metric", "cutoff"], how="inner")
    n_folds = merged["n_folds"].astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = stats.t.ppf(0.975, n_folds - 1.0)
        h_floor = t * merged["floor_per_25_sd"].astype(float) / np.sqrt(n_folds)
    h_floor = h_floor.where(n_folds >= 2)
    merged["floor_ci_low"] = (merged["floor_per_25"] - h_floor).clip(lower=0.0)
    merged["floor_ci_high"] = (merged["floor_per_25"] + h_floor).clip(upper=REFERENCE_P)
    has_ci = merged["ci_high"].notna()
    h_dp = (merged["ci_high"] - merged["dp_per_25"]).clip(lower=0.0)
    merged["margin"] = np.sqrt(h_dp**2 + h_floor**2).where(has_ci)
    difference = merged["floor_per_25"] - merged["dp_per_25"]
    below = np.where(has_ci, difference > merged["margin"], difference > 0)
    merged["ratio"] = merged["dp_per_25"] / merged["floor_per_25"]
    merged["flagged"] = ~below.astype(bool)
    merged["rule"] = np.where(has_ci, RULE_MARGIN, RULE_PLAIN)
    return merged[VERSUS_COLUMNS].reset_index(drop=True)
