"""Figure 1 of the report (averaged p-value curves per metric, one panel per algorithm), the DP
figure beside the verdict (each metric's DP with its interval, one panel per algorithm) and the
one reproducible figure saver every dptune figure goes through.
"""

from __future__ import annotations

import contextlib
import io
import math
import textwrap
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import ScaledTranslation

from dptune._atomic import write_bytes
from dptune.analysis.result import MetricFamilies
from dptune.report._format import (
    NO_INTERVAL_WHY,
    UNSAMPLED,
    fmt,
    one_fold,
    ordered_algorithms,
    ordered_metrics,
    pair_count_text,
    pct,
    shown_algorithm,
    unmarked,
    unsampled_share,
    verdict_choices,
)
from dptune.report._inputs import (
    CURVE_INPUT,
    DP_INPUT,
    NOISE_INPUT,
    has_intervals,
    require,
    scope_all,
)
from dptune.vocab import display_algorithm, display_metric, metric_color, metric_key, same_values

__all__ = [
    "PANEL_SIZE",
    "FIG_DPI",
    "MAX_PANEL_COLUMNS",
    "TEXT_WIDTH",
    "COLUMN_WIDTH",
    "MIN_PANEL_WIDTH",
    "FONT_SIZES",
    "figure1",
    "dp_figure",
    "dp_figure_caption",
    "figure_pixel_size",
    "figure_width",
    "save_figure",
    "palette_png",
]

#: The widest a figure is drawn, in inches: the text width of a two-column paper (ACM's
#: ``acmart`` 7.0 in, IEEE's ``IEEEtran`` 7.16 in). Every figure is drawn at the size it is
#: printed, so that placed at its natural size (``\includegraphics{figure1.png}``: the PNG
#: says its dpi) or at ``\linewidth`` of a paper's full width its text prints at the sizes of
#: :data:`FONT_SIZES`; drawn wider (13.8 in before) it had to be scaled to half, its 8-10 pt
#: text printing at 4-5 pt.
TEXT_WIDTH: float = 7.0
#: The width of a one-panel figure, in inches: one column of a two-column paper (ACM 3.33 in,
#: IEEE 3.5 in), so that it prints unscaled in either.
COLUMN_WIDTH: float = 3.33
#: The narrowest a panel is drawn, in inches: its axis labels, tick labels and legend (the
#: longest entry, "Precision@10, DP per 25 pairs 1.855 (identical to nDCG@10)", broken in two)
#: fit it at :data:`FONT_SIZES`. Panels per row: as many as fit :data:`TEXT_WIDTH`.
MIN_PANEL_WIDTH: float = 3.3
#: Panels per row: ``floor(TEXT_WIDTH / MIN_PANEL_WIDTH)`` = 2; more panels wrap into rows.
MAX_PANEL_COLUMNS: int = int(TEXT_WIDTH // MIN_PANEL_WIDTH)
#: Size of one Figure 1 panel in inches (width, height): a figure of ``n >= 2`` panels is
#: :data:`TEXT_WIDTH` wide (``min(n, 2)`` panels per row) and ``ceil(n / 2)`` panels high, a
#: one-panel figure :data:`COLUMN_WIDTH` wide (:func:`figure_width`).
PANEL_SIZE: tuple[float, float] = (TEXT_WIDTH / MAX_PANEL_COLUMNS, 3.9)
#: The figures' dpi: the PNG's pixels per printed inch (a figure of two or more panels is 1400
#: pixels wide); the SVG, drawn at the same size in inches, is the one to print sharper.
FIG_DPI: int = 200
#: The font size in points of each kind of text of the report's figures, as printed at their
#: drawn size (at least 7 pt, the smallest that venues' figure guidelines accept; the text of a
#: paper is 9-10 pt): set on every text artist (and in an rc context around the figure's
#: construction), never in matplotlib's global state.
FONT_SIZES: dict[str, float] = {
    "suptitle": 9.0,
    "title": 8.0,
    "label": 8.0,
    "tick": 7.0,
    "legend": 7.0,
}
_SVG_HASH_SALT = "dptune-report"
#: One marker per metric position in the table order, so that overlapping curves stay apart.
MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "*")
_BAND_ALPHA = 0.10


def _plain(text: str) -> str:
    """A name as text a figure shows as written: its dollar signs escaped, so that matplotlib
    does not read the part between two as mathtext (an algorithm named ``cost $5 vs $10`` lost
    its dollars and spaces; one named ``a$^$b`` stopped the report with a parse error)."""
    return unmarked(text).replace("$", "\\$")


def _panel_grid(n_panels: int) -> tuple[int, int]:
    """(rows, columns) of the panel grid for ``n_panels`` algorithms."""
    ncols = max(1, min(n_panels, MAX_PANEL_COLUMNS))
    return max(1, math.ceil(n_panels / ncols)), ncols


def figure_width(n_panels: int) -> float:
    """Width in inches of a figure of ``n_panels`` panels side by side or wrapped in rows:
    :data:`COLUMN_WIDTH` for one panel, else :data:`TEXT_WIDTH` (never wider)."""
    return COLUMN_WIDTH if _panel_grid(n_panels)[1] == 1 else TEXT_WIDTH


def figure_pixel_size(n_panels: int) -> tuple[int, int]:
    """Pixel (height, width) of a Figure 1 PNG with ``n_panels`` panels (for callers and tests):
    its size in inches (:func:`figure_width` by ``PANEL_SIZE[1]`` a row) times :data:`FIG_DPI`."""
    nrows, _ = _panel_grid(n_panels)
    return (
        round(PANEL_SIZE[1] * nrows * FIG_DPI),
        round(figure_width(n_panels) * FIG_DPI),
    )


def _rc() -> contextlib.AbstractContextManager[None]:
    """The rc settings a figure is built in: :data:`FONT_SIZES` for text no call sizes."""
    return matplotlib.rc_context({
        "font.size": FONT_SIZES["label"],
        "axes.titlesize": FONT_SIZES["title"],
        "axes.labelsize": FONT_SIZES["label"],
        "xtick.labelsize": FONT_SIZES["tick"],
        "ytick.labelsize": FONT_SIZES["tick"],
        "legend.fontsize": FONT_SIZES["legend"],
        "figure.titlesize": FONT_SIZES["suptitle"],
    })


def figure1(
    curves: pd.DataFrame,
    dp: pd.DataFrame,
    cutoff: int,
    noise_band: pd.DataFrame | None = None,
) -> Figure:
    """Figure 1 for one cutoff: per algorithm, each metric's averaged p-value curve.

    x = pair rank 1..P (p-values sorted decreasing), y = mean p-value over folds with a shaded
    band of +-1 fold-to-fold sd clipped to [0, 1]; the legend gives each metric's DP per 25
    pairs (``dp_per_25`` of ``dp``, scope ``all``), the panel title P. Every metric has its own colour and marker; a
    curve identical to another (e.g. MRR, nDCG and Precision at N = 1) is dashed over it and
    its legend says "identical to X", X the first of them in the vocabulary's order (nDCG,
    Precision, Recall, MRR, EFD, EPC), as the verdict and Table 4 name ties. A given ``noise_band`` (the A/A band of the
    result's noise floor, :attr:`dptune.analysis.noise.NoiseFloor.band`: columns ``algorithm,
    cutoff, position, low, high, mean``) is drawn as one grey band per panel, its mean dashed.
    Built on :class:`matplotlib.figure.Figure` directly (no pyplot state, Agg rendering), at
    its printed size: :func:`figure_width` wide (at most :data:`TEXT_WIDTH`, two panels a row),
    its text at :data:`FONT_SIZES`.
    """
    with _rc():
        return _figure1(curves, dp, cutoff, noise_band)


def _figure1(curves: pd.DataFrame, dp: pd.DataFrame, cutoff: int,
             noise_band: pd.DataFrame | None) -> Figure:
    curves = require(curves, CURVE_INPUT, "curves")
    dp = require(dp, DP_INPUT, "dp")
    noise = require(noise_band, NOISE_INPUT, "noise_band") if noise_band is not None else None
    cutoff = int(cutoff)
    c = curves[(curves["scope"] == "all") & (curves["cutoff"] == cutoff)]
    algorithms = ordered_algorithms(c["algorithm"].unique())
    nrows, ncols = _panel_grid(len(algorithms))
    fig = Figure(
        figsize=(figure_width(len(algorithms)), PANEL_SIZE[1] * nrows), dpi=FIG_DPI,
        layout="constrained",
    )
    panel_width = fig.get_figwidth() / ncols
    axes = fig.subplots(nrows, ncols, squeeze=False)
    dp_all = scope_all(dp)
    dp_all = dp_all[dp_all["cutoff"] == cutoff]
    extra_colors: list[str] = []
    for ax, alg in zip(axes.flat, algorithms, strict=False):
        ca = c[c["algorithm"] == alg]
        # positions are 0-based (dp.analyze, noise); the plot shows 1-based pair ranks
        max_pos = int(ca["position"].max()) + 1
        metrics = ordered_metrics(ca["metric"].unique())
        series = {m: ca[ca["metric"] == m].sort_values("position") for m in metrics}
        means = {m: s["mean"].to_numpy(dtype=float) for m, s in series.items()}
        for k, m in enumerate(metrics):
            s = series[m]
            x = s["position"].to_numpy(dtype=float) + 1.0
            y = means[m]
            sd = np.nan_to_num(s["sd"].to_numpy(dtype=float), nan=0.0)
            hit = dp_all[(dp_all["algorithm"] == alg) & (dp_all["metric"] == m)]["dp_per_25"]
            color = metric_color(m, extra_colors)
            # identical curves are named as the verdict and Table 4 name them: after the first
            # of them in the vocabulary's order (their tie rule)
            first = min((o for o in metrics
                         if same_values(means[o], y)),
                        key=lambda o: metric_key(o, cutoff))
            same = _plain(display_metric(first, cutoff)) if first != m else None
            name = _plain(display_metric(m, cutoff))
            label = f"{name}, DP per 25 pairs {fmt(hit.iloc[0])}" if len(hit) else name
            if same is None:
                ax.fill_between(
                    x,
                    np.clip(y - sd, 0.0, 1.0),
                    np.clip(y + sd, 0.0, 1.0),
                    color=color,
                    alpha=_BAND_ALPHA,
                    linewidth=0,
                )
            else:
                label = _legend_label(label, f"(identical to {same})", panel_width)
            ax.plot(
                x,
                y,
                color=color,
                linewidth=1.6,
                # a curve identical to another one is dashed over it, so both stay visible
                linestyle=(k % 3 * 2, (4, 4)) if same else "-",
                zorder=2.2 if same else 2.0,
                marker=MARKERS[k % len(MARKERS)],
                markersize=3.5,
                markevery=max(1, len(x) // 12),
                label=label,
            )
        if noise is not None:
            _draw_noise(ax, noise[(noise["algorithm"] == alg) & (noise["cutoff"] == cutoff)])
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # pair ranks are whole numbers
        if max_pos > 1:
            ax.set_xlim(1, max_pos)
        else:
            ax.set_xlim(0.5, 1.5)
        ax.set_ylim(0.0, 1.0)
        ax.tick_params(labelsize=FONT_SIZES["tick"])
        ax.set_xlabel("Pair rank (p-values sorted in decreasing order)",
                      fontsize=FONT_SIZES["label"])
        ax.set_ylabel("p-value (mean over folds)", fontsize=FONT_SIZES["label"])
        ra = dp_all[dp_all["algorithm"] == alg]
        possible = (ra["n_possible_pairs"].max() if len(ra) and "n_possible_pairs" in ra
                    else None)
        # the pairs said as the DP figure and the text say them ("P = 1000 of 21945")
        ax.set_title(_fitted(fig, f"{_plain(display_algorithm(alg))} (N = {cutoff}, "
                             f"{pair_count_text(max_pos, possible)} pairs)",
                             FONT_SIZES["title"], ncols, _Y_LABELS), fontsize=FONT_SIZES["title"])
        ax.grid(True, alpha=0.3, linewidth=0.5)
        # below the panel, so that no curve hides behind it: a fixed distance under the axes
        # (its tick labels and x label), whatever the panel's height
        ax.legend(
            fontsize=FONT_SIZES["legend"],
            loc="upper center",
            bbox_to_anchor=(0.5, 0.0),
            bbox_transform=ax.transAxes + ScaledTranslation(0.0, -_BELOW_AXES,
                                                            fig.dpi_scale_trans),
            frameon=False,
            handlelength=_HANDLE_LENGTH,
            borderaxespad=0.0,
        )
    for ax in list(axes.flat)[len(algorithms) :]:
        ax.set_visible(False)
    title = (f"Averaged p-value curves (one fold, no sd; cutoff {cutoff})" if one_fold(dp) else
             f"Averaged p-value curves with ±1 sd across folds (cutoff {cutoff})")
    # one or two lines (one panel): its height is the one figure_pixel_size gives
    _suptitle(fig, title, grow=False)
    return fig


def _suptitle(fig: Figure, title: str, grow: bool = True) -> None:
    """``title`` over the figure, broken into lines that fit its width (:func:`_fitted`); with
    ``grow`` the figure taller by each line past the first (the DP figure's title takes two to
    four lines), so that its panels keep their height."""
    text = _fitted(fig, title, FONT_SIZES["suptitle"])
    fig.suptitle(text, fontsize=FONT_SIZES["suptitle"])
    if grow:
        fig.set_figheight(fig.get_figheight() + text.count("\n") * 1.2 * FONT_SIZES["suptitle"] / 72)


#: Inches of a Figure 1 panel's width its y axis' tick and axis labels take at :data:`FONT_SIZES`
#: (a panel's title fits the rest).
_Y_LABELS = 0.6
#: Figure 1's legend handles, in font sizes: long enough to show a dashed curve's dashes.
_HANDLE_LENGTH = 3.0
#: Inches from a Figure 1 panel's axes down to its legend: its tick marks and labels and its
#: x label at :data:`FONT_SIZES`, and a gap.
_BELOW_AXES = (3.5 + 3.5 + 1.2 * FONT_SIZES["tick"] + 4.0 + 1.2 * FONT_SIZES["label"] + 5.0) / 72


def _legend_label(label: str, tail: str, panel_width: float) -> str:
    """``label`` and ``tail`` on one line when the legend entry fits the panel's width (its text
    about 0.53 em a character, the handle and pads 4.6 em), else ``tail`` on a second line: a
    panel two to a row of :data:`TEXT_WIDTH` is too narrow for "Precision@10, DP per 25 pairs
    1.855 (identical to nDCG@10)" at :data:`FONT_SIZES`."""
    one = f"{label} {tail}"
    size = FONT_SIZES["legend"]
    if (0.53 * len(one) + _HANDLE_LENGTH + 1.6) * size / 72 <= panel_width - 0.15:
        return one
    return f"{label}\n{tail}"


def _fitted(fig: Figure, title: str, fontsize: float, panels: int = 0,
            margin: float = 1.0) -> str:
    """``title`` broken into lines that fit the figure's width at ``fontsize`` points (about
    0.55 em a character), or with ``panels`` side by side, one panel's width less its axis
    labels (``margin``, about an inch): a one-panel figure (outside data has one algorithm)
    is narrower than the titles, which were cut off at both sides, and a panel's title
    ("BPR-MF (N = 10, P = 1000 of 21945 pairs)") ran past its panel's edge."""
    width = fig.get_figwidth() / panels - margin if panels else fig.get_figwidth()
    per_line = max(20, int(width * 72 / (0.55 * fontsize)))
    return textwrap.fill(title, per_line)


#: Size of one DP-figure panel in inches (width; height: a margin for the titles and the x
#: axis, and a row per metric and one more): as Figure 1's, :func:`figure_width` by
#: :data:`MAX_PANEL_COLUMNS` (a one-panel figure is :data:`COLUMN_WIDTH` wide).
DP_PANEL_WIDTH = PANEL_SIZE[0]
_DP_ROW_HEIGHT = 0.3
_DP_MARGIN = 1.1
#: Inches of a DP-figure panel's width its metric labels take ("Precision@10" in bold).
_DP_Y_LABELS = 0.9


def _dp_rows(dp: pd.DataFrame, cutoff: int) -> pd.DataFrame:
    r = dp[(dp["scope"] == "all") & (dp["cutoff"] == int(cutoff))]
    return r.dropna(subset=["dp_per_25"])


def dp_figure(dp: pd.DataFrame, verdict: pd.DataFrame | None, cutoff: int,
              families: MetricFamilies | None = None) -> Figure:
    """The DP figure of one cutoff, beside the verdict: per algorithm (one panel), each metric's
    DP per 25 pairs (dot) with its 95% interval (whisker), metrics top to bottom in table order and
    grouped by ``families`` (the result's
    :attr:`~dptune.analysis.result.AnalysisResult.metric_families`; a line between families,
    one group without them); the verdict's choices of each
    family (its recommended metric and the metrics not significantly less discriminative,
    verdict.csv ``choices``) are stars with bold labels (none where the verdict recommends none:
    too few pairs, no evidence); a metric without evidence (every p-value 1) is grey. Every
    panel has the same x scale, from 0 to the largest interval end of the figure, so that
    panels compare at a glance. Lower = more discriminative. ``dp``: dp.csv (scope ``all`` is
    drawn). Without intervals (the bootstrap off, or a paired test without one) the verdict
    tests no difference: the title says so, and the stars are the metrics it offers untested.
    Drawn at its printed size, as :func:`figure1`: at most :data:`TEXT_WIDTH` wide, two panels
    a row, its text at :data:`FONT_SIZES`."""
    with _rc():
        return _dp_figure(dp, verdict, cutoff, families)


def _dp_figure(dp: pd.DataFrame, verdict: pd.DataFrame | None, cutoff: int,
               families: MetricFamilies | None) -> Figure:
    rows = _dp_rows(dp, cutoff)
    interval = has_intervals(dp)
    algorithms = ordered_algorithms(rows["algorithm"].unique())
    nrows, ncols = _panel_grid(len(algorithms))
    n_metrics = max(1, rows.groupby("algorithm")["metric"].nunique().max()) if len(rows) else 1
    height = _DP_MARGIN + _DP_ROW_HEIGHT * (n_metrics + 1)
    fig = Figure(figsize=(figure_width(len(algorithms)), height * nrows), dpi=FIG_DPI,
                 layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    v = verdict if verdict is not None else pd.DataFrame(columns=["algorithm", "cutoff"])
    v = v[v["cutoff"] == int(cutoff)] if len(v) else v
    ends = pd.to_numeric(pd.concat([rows[c] for c in ("dp_per_25", "ci_low", "ci_high")]),
                         errors="coerce") if len(rows) else pd.Series(dtype=float)
    finite = ends[np.isfinite(ends)]
    xmax = 1.05 * float(finite.max()) if len(finite) and float(finite.max()) > 0 else 1.0
    for ax, alg in zip(axes.flat, algorithms, strict=False):
        ra = rows[rows["algorithm"] == alg].set_index("metric")
        va = v[v["algorithm"] == alg] if len(v) else v
        order, breaks, rec = _dp_order(list(ra.index), va, families)
        y = np.arange(len(order))[::-1].astype(float)
        for yi, m in zip(y, order, strict=True):
            r = ra.loc[m]
            grey = bool(r.get("no_evidence", False))
            color = "0.6" if grey else metric_color(m, [])
            lo, hi = float(r["ci_low"]), float(r["ci_high"])
            if np.isfinite(lo) and np.isfinite(hi):
                ax.plot([lo, hi], [yi, yi], color=color, linewidth=2.0, solid_capstyle="butt")
                ax.plot([lo, lo, np.nan, hi, hi], [yi - 0.15, yi + 0.15, np.nan, yi - 0.15,
                                                   yi + 0.15], color=color, linewidth=1.2)
            star = m in rec
            ax.plot([float(r["dp_per_25"])], [yi], marker="*" if star else "o",
                    markersize=11 if star else 5.5, color=color, markeredgecolor="black",
                    markeredgewidth=0.6, linestyle="none")
        for b in breaks:
            ax.axhline(y[b] - 0.5, color="0.5", linewidth=0.8, linestyle="--")
        ax.set_yticks(y)
        labels = ax.set_yticklabels([_plain(display_metric(m, cutoff)) for m in order])
        for lab, m in zip(labels, order, strict=True):
            if m in rec:
                lab.set_fontweight("bold")
        ax.set_ylim(-0.7, len(order) - 0.3)
        ax.set_xlim(0.0, xmax)
        ax.tick_params(labelsize=FONT_SIZES["tick"])
        ax.set_xlabel(_dp_xlabel(fig, interval, ncols), fontsize=FONT_SIZES["label"])
        pairs = int(ra["n_pairs"].max()) if len(ra) else 0
        possible = (ra["n_possible_pairs"].max() if len(ra) and "n_possible_pairs" in ra
                    else None)
        share = float(unsampled_share(ra).max()) if len(ra) else 0.0
        ax.set_title(_fitted(fig, f"{_plain(display_algorithm(alg))} (N = {cutoff}, "
                             f"{pair_count_text(pairs, possible)} pairs"
                             + (f"; {UNSAMPLED} {pct(share)} of the grid's pairs uncovered)"
                                if share > 0 else ")"), FONT_SIZES["title"], ncols, _DP_Y_LABELS),
                     fontsize=FONT_SIZES["title"])
        ax.grid(True, axis="x", alpha=0.3, linewidth=0.5)
    for ax in list(axes.flat)[len(algorithms):]:
        ax.set_visible(False)
    title = (f"DP of each metric with its 95% interval (cutoff {cutoff}); star: recommended "
             "per family (several: no significant difference)" if interval else
             f"DP of each metric, no interval (cutoff {cutoff}); star: the metrics offered per "
             "family (no difference tested)")
    _suptitle(fig, f"{title}; dashed line: between families")
    return fig


def _dp_xlabel(fig: Figure, interval: bool, ncols: int) -> str:
    """The DP figure's x label, "(lower: more discriminative)" on a line of its own where a
    panel is too narrow for one line (two to a row: its y labels take an inch)."""
    head = "DP per 25 pairs" + (", 95% interval" if interval else "")
    one = f"{head} (lower: more discriminative)"
    fits = _fitted(fig, one, FONT_SIZES["label"], ncols) == one
    return one if fits else f"{head}\n(lower: more discriminative)"


def _dp_order(metrics: list[str], verdict: pd.DataFrame,
              families: MetricFamilies | None
              ) -> tuple[list[str], list[int], set[str]]:
    """Metrics grouped by family (table order inside a family), the indices after which a new
    family starts, and the verdict's recommended metrics."""
    order: list[str] = []
    breaks: list[int] = []
    groups = families.of(metrics) if families is not None else [("", list(metrics))]
    for _, ms in groups:
        if order:
            breaks.append(len(order) - 1)
        order += ms
    rec: set[str] = set()
    if verdict is not None and len(verdict) and "recommended" in verdict.columns:
        for r in verdict.to_dict("records"):
            rec |= set(verdict_choices(r))
    return order, breaks, rec


def dp_figure_caption(dp: pd.DataFrame, cutoff: int, stem_title: str = "DP figure") -> str:
    """The caption of :func:`dp_figure`: what is drawn and P, the pairs of each algorithm; with
    no interval (the bootstrap off, or a paired test without one) no difference is tested, and
    the caption says the stars are the metrics offered untested. Its names are spans
    (:func:`dptune.report._format.name_span`), rendered by the text it is put in."""
    rows = _dp_rows(dp, cutoff)
    pairs = []
    uncovered = bool(len(rows)) and bool((unsampled_share(rows) > 0).any())
    for alg in ordered_algorithms(rows["algorithm"].unique()):
        ra = rows[rows["algorithm"] == alg]
        n = int(ra["n_pairs"].max())
        possible = int(ra["n_possible_pairs"].max()) if "n_possible_pairs" in ra.columns else n
        pairs.append(f"{shown_algorithm(alg)} P = {n}"
                     + ("" if n >= possible else f" of {possible}"))
    stars = ("with its 95% interval at N = {n}, one panel per algorithm, all on one x scale "
             "(lower = more discriminative); star and bold label: the verdict's recommended "
             "metric of each family and every metric not significantly less discriminative than "
             "it (equal choices)" if has_intervals(dp) else
             f"without an interval ({NO_INTERVAL_WHY})" + " at N = {n}, one panel per algorithm, all on one x scale "
             "(lower = more discriminative); star and bold label: the metrics the verdict "
             "offers in each family, with no difference tested (the lowest DP alone does not "
             "make a metric the better one)").format(n=cutoff)
    return (f"{stem_title}: DP per 25 pairs of each metric {stars}; grey: no evidence; "
            "pairs of "
            f"configurations: {', '.join(pairs)}."
            + (f" {UNSAMPLED} in a panel's title: the share of the full grid's pairs (pairs of "
               "units that share a value of a unit hyperparameter) for which the units of a grid "
               "sample hold no stand-in; that panel's DPs are those of the pairs there are, "
               "without interval or recommendation." if uncovered else ""))


def _draw_noise(ax: object, band: pd.DataFrame) -> None:
    """The A/A noise floor of one panel as one grey band (the analysis' A/A band: from the
    lowest to the highest A/A curve over the metrics at each pair rank), with their mean as a
    dashed line (one legend entry instead of one dashed line per metric)."""
    if band.empty:
        return
    band = band.sort_values("position", kind="stable")
    x = band["position"].to_numpy(dtype=float) + 1.0
    ax.fill_between(x, band["low"].to_numpy(), band["high"].to_numpy(), color="0.5",
                    alpha=0.18, linewidth=0, hatch="///", edgecolor="0.6")
    ax.plot(x, band["mean"].to_numpy(), color="0.25", linestyle="--", linewidth=1.2,
            label="A/A noise floor (range over metrics, mean dashed)")


def save_figure(
    fig: Figure, stem: Path, creator: str = "dptune.report", png: bytes | None = None
) -> list[Path]:
    """Save ``fig`` as ``stem.png`` (at the figure's own dpi) and ``stem.svg`` reproducibly (no
    dates, fixed SVG ids; ``creator`` is the SVG's Creator field), for every figure dptune
    writes. ``png``: the PNG's bytes when already rendered by :func:`palette_png` (the report's
    figures, which report.html inlines too): that draw fixed the figure's layout, so the SVG
    shows the PNG's layout and is not laid out again; without it the PNG is the figure's RGBA
    pixels (the studies' figures)."""
    png_path, svg = stem.with_suffix(".png"), stem.with_suffix(".svg")
    with matplotlib.rc_context({"svg.hashsalt": _SVG_HASH_SALT, "svg.fonttype": "path"}):
        if png is not None:
            write_bytes(png_path, png, fsync=False)
        else:
            fig.savefig(png_path, format="png", dpi=fig.dpi, metadata={"Software": None})
        fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": creator})
    return [png_path, svg]


def palette_png(fig: Figure) -> bytes:
    """``fig`` drawn once at its own dpi and encoded as a palette PNG: its RGB pixels reduced
    to 256 colours by Pillow's maximum-coverage quantiser, without dithering, so the bytes are
    deterministic (zlib's default level: about 7 times faster than Pillow's ``optimize``, for
    files 10-16% larger). Its one metadata is its resolution (the figure's dpi, a ``pHYs``
    chunk), so that a document that includes it without a width (LaTeX's
    ``includegraphics``, a word processor) sizes it as drawn, not at 72 dpi.

    Maximum coverage, not median cut: on the figures of ML-1M and ML-100K reports its largest
    colour error is 3-18 of 255 where median cut's is 49-66 (some anti-aliased pixels of a
    curve or band shifted visibly), in 50-75% of median cut's time and with 5-20% smaller
    files; its mean error is 0.04-0.9 of 255 (median cut's 0.01-0.15).
    ``tests/report/test_report.py`` bounds both errors on a figure.

    The draw fixes the figure's layout (its layout engine is removed afterwards): constrained
    layout run again on a drawn figure can move a panel by a pixel, so without this the SVG
    saved next (:func:`save_figure`) and the PNG would differ, and each draw would pay for the
    layout again. Removed, not set to "none": matplotlib draws a figure that has any layout
    engine, its "none" placeholder included, once more before saving it, a whole draw that
    changes nothing (a third of the SVG's time)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from PIL import Image

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    # None falls back to the rc layout when one is set: held off, it removes the engine
    with matplotlib.rc_context({"figure.autolayout": False,
                                "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)
    rgb = np.asarray(canvas.buffer_rgba())[..., :3]
    quantized = Image.fromarray(rgb).quantize(colors=256, method=Image.Quantize.MAXCOVERAGE,
                                              dither=Image.Dither.NONE)
    out = io.BytesIO()
    quantized.save(out, format="PNG", dpi=(fig.dpi, fig.dpi))
    return out.getvalue()
