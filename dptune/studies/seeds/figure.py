"""Figure of the split-seed study (Wegmeth et al. 2023, Figure 1 style): each seed's accuracy
as % of the mean over seeds, hold-out against cross-validation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dptune.report import display_algorithm, display_metric
from dptune.report._figures import _plain
from dptune.studies.seeds.settings import SeedSettings

__all__ = ["seeds_figure"]


def _hbox(ax: Any, data: list[np.ndarray], positions: list[float]) -> None:
    """Horizontal box plots (quartiles, whiskers to 1.5 IQR, no fliers) on any matplotlib."""
    kw = dict(positions=positions, widths=0.55, showfliers=False, patch_artist=True,
              medianprops={"color": "black"}, boxprops={"facecolor": "0.9"})
    try:
        ax.boxplot(data, orientation="horizontal", **kw)
    except TypeError:  # matplotlib < 3.10
        ax.boxplot(data, vert=False, **kw)


def seeds_figure(per_seed: pd.DataFrame, metrics: Sequence[str],
                 settings: SeedSettings | None = None) -> Any:
    """One panel per algorithm x metric x cutoff: the seeds' % of mean for hold-out (top row) and
    CV (bottom row), box plot (quartiles, whiskers to 1.5 IQR) with every seed as a dot; the
    title names the study's splits (``settings``, the defaults when none). Names are shown as
    written (dollar signs escaped: :func:`dptune.report._figures._plain`)."""
    settings = settings if settings is not None else SeedSettings()
    from matplotlib.figure import Figure

    algs = list(dict.fromkeys(per_seed["algorithm"]))
    cutoffs = sorted(per_seed["cutoff"].unique())
    cols = [(m, c) for m in metrics for c in cutoffs]
    fig = Figure(figsize=(2.5 * len(cols), 1.7 * len(algs) + 0.6), dpi=100, layout="constrained")
    axes = fig.subplots(len(algs), len(cols), squeeze=False, sharex=True)
    rng = np.random.default_rng(0)
    colors = {"holdout": "#d62728", "cv": "#1f77b4"}
    for r, alg in enumerate(algs):
        for k, (m, c) in enumerate(cols):
            ax = axes[r, k]
            g = per_seed[(per_seed["algorithm"] == alg) & (per_seed["metric"] == m)
                         & (per_seed["cutoff"] == c)]
            data, pos = [], []
            for y, s in ((1.0, "holdout"), (0.0, "cv")):
                x = g.loc[g["split"] == s, "pct_of_mean"].to_numpy(float)
                x = x[np.isfinite(x)]
                data.append(x)
                pos.append(y)
                ax.scatter(x, y + rng.uniform(-0.18, 0.18, len(x)), s=7, color=colors[s],
                           alpha=0.75, zorder=3, linewidths=0)
            if all(len(d) for d in data):
                _hbox(ax, data, pos)
            ax.axvline(100.0, color="0.5", linewidth=0.7, linestyle=":")
            ax.set_yticks([1.0, 0.0], ["HO", "CV"])
            ax.set_ylim(-0.6, 1.6)
            ax.grid(True, axis="x", alpha=0.3, linewidth=0.5)
            ax.set_title(f"{_plain(display_algorithm(alg))} · {display_metric(m, int(c))}",
                         fontsize=8)
            ax.tick_params(labelsize=7)
            if r == len(algs) - 1:
                ax.set_xlabel("% of mean over seeds", fontsize=7)
    n = int(per_seed["seed_index"].nunique())
    # names as written: a data set named after its file (d$x_$.csv) was read as mathtext, and
    # the figure, the last step of a study, stopped with a parse error
    ds = _plain(", ".join(dict.fromkeys(per_seed["dataset"])))
    fig.suptitle(f"{ds}: accuracy of each data-split seed relative to the mean over {n} seeds "
                 f"({settings.design_text()})", fontsize=9)
    return fig
