"""Figure of the slice study: DP per log-scaled slice, one line per metric."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dptune.metrics import METRICS
from dptune.report import display_algorithm, display_metric
from dptune.report._figures import MARKERS, _plain
from dptune.studies.slices.bins import SLICE_KINDS
from dptune.vocab import METRIC_COLORS

__all__ = ["slices_figure", "users_text"]

def slices_figure(dp_table: pd.DataFrame, cutoff: int) -> Any:
    """DP per slice per metric at ``cutoff``: rows = slice kinds, one panel per algorithm; x = the
    log-scaled bins (with mean users per fold), y = DP per 25 pairs (25 × the mean p-value, so
    that panels with different P share a scale; lower = more discriminative). Only the ranked
    slices are drawn (``ranked``: enough users in every fold)."""
    from matplotlib.figure import Figure

    d = dp_table[(dp_table["cutoff"] == cutoff) & dp_table["slice_kind"].isin(SLICE_KINDS)]
    algs = list(dict.fromkeys(d["algorithm"]))
    kinds = [k for k in SLICE_KINDS if k in set(d["slice_kind"])]
    n_pairs_of = d.groupby("algorithm")["n_pairs"].max()  # of every slice, drawn or not
    d = d[d["ranked"].astype(bool)]
    fig = Figure(figsize=(4.6 * max(1, len(algs)), 3.4 * max(1, len(kinds))), dpi=100,
                 layout="constrained")
    axes = fig.subplots(max(1, len(kinds)), max(1, len(algs)), squeeze=False)
    for r, kind in enumerate(kinds):
        for c, alg in enumerate(algs):
            ax = axes[r, c]
            g = d[(d["algorithm"] == alg) & (d["slice_kind"] == kind)].sort_values("bin")
            bins = list(dict.fromkeys(g["slice"]))
            x = np.arange(len(bins))
            # a marker of its own per metric, as in Figure 1: the lines stay apart in greyscale
            for k, m in enumerate([m for m in METRICS if m in set(g["metric"])]):
                gm = g[g["metric"] == m].set_index("slice").reindex(bins)
                ax.plot(x, gm["dp_per_25"].to_numpy(float), marker=MARKERS[k % len(MARKERS)],
                        markersize=3.5, linewidth=1.4,
                        color=METRIC_COLORS.get(m, "0.3"), label=display_metric(m, cutoff))
            n_users = g.drop_duplicates("slice").set_index("slice").reindex(bins)["n_users_mean"]
            ax.set_xticks(x, [f"{b} n={users_text(v)}" for b, v in zip(bins, n_users, strict=True)],
                          fontsize=6.5, rotation=40, ha="right", rotation_mode="anchor")
            n_pairs = int(n_pairs_of.get(alg, 0))
            ax.set_ylim(0, 25 * 1.02)  # 25 x a mean p-value: at most 25
            ax.set_ylabel(f"DP per 25 pairs (P = {n_pairs})", fontsize=8)
            ax.set_title(f"{_plain(display_algorithm(alg))}: {kind}", fontsize=9)
            ax.grid(True, alpha=0.3, linewidth=0.5)
            if not bins:
                ax.text(0.5, 0.5, "no slice with enough users", transform=ax.transAxes,
                        ha="center", va="center", fontsize=8)
    drawn = [ax for ax in axes.flat if ax.get_lines()]
    if drawn:  # the legend in the first panel with lines (one with none would warn, and be empty)
        drawn[0].legend(fontsize=7, ncol=2)
    fig.suptitle(f"DP per 25 pairs per slice at N = {cutoff} (log-scaled bins; lower = more discriminative; "
                 f"n = mean users per fold)", fontsize=10)
    return fig


def users_text(v: float) -> str:
    """A mean user count: no decimals from 10 on, one below."""
    return f"{v:.0f}" if v >= 10 else f"{v:.1f}"
