"""The report's figures are drawn at the size they are printed: at most a two-column paper's text
width (7.0 in), panels wrapped into rows so that each stays at least 3.3 in wide, and every text
at 7 pt or more at that size.

Drawn 13.8 in wide (three 4.6 in panels a row) with 8-12 pt text, Figure 1 placed at a paper's
text width printed its legends at 4 pt and its tick labels at 5 pt. A figure wider than the text
width is scaled down to it (``\\includegraphics[width=\\linewidth]``), so the size that counts is
a text's font size times ``min(1, 7.0 / figure width)``. The inputs are small synthetic frames
with the columns the dp stage writes.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from dptune.analysis.result import MetricFamilies  # noqa: E402
from dptune.report import figure1  # noqa: E402
from dptune.report._figures import dp_figure  # noqa: E402

#: A two-column paper's text width (ACM's), the narrowest readable panel and the smallest
#: printed text, in inches and points: the numbers the figures are held to.
PRINTED_WIDTH = 7.0
MIN_PANEL = 3.3
MIN_PT = 7.0
METRICS = ("ndcg", "precision", "recall", "mrr", "efd", "epc")
ALGORITHMS = ("itemknn", "userknn", "bpr-mf", "cornac:VAECF", "cornac:NeuMF", "cornac:EASE",
              "cornac:MF", "cornac:BiVAECF")
P = 8
CUTOFF = 10


def _dp(algorithms: tuple[str, ...]) -> pd.DataFrame:
    """dp.csv rows of scope ``all`` at N = 10, with 95% intervals (the DP figure's whiskers)."""
    rows = []
    for a, alg in enumerate(algorithms):
        for m, metric in enumerate(METRICS):
            per_25 = 0.6 + 0.2 * m + 0.05 * a
            rows.append({
                "algorithm": alg, "scope": "all", "metric": metric, "cutoff": CUTOFF,
                "n_pairs": 1000, "n_possible_pairs": 21945, "n_folds": 5,
                "mean_p": per_25 / 25, "mean_p_sd": 0.01, "dp_per_25": per_25,
                "dp_per_25_plus_sd": per_25 * 1.5, "dp_per_25_minus_sd": per_25 * 0.5,
                "ci_low": per_25 * 0.7, "ci_high": per_25 * 1.4, "dp_sum": per_25 * 40,
                "sakai": 0.5, "sakai_sd": 0.1, "no_evidence": False, "repeats": 1,
                "test": "t", "correction": "none", "alpha": 0.05,
            })
    return pd.DataFrame(rows)


def _curves(algorithms: tuple[str, ...]) -> pd.DataFrame:
    """Averaged p-value curves, MRR's and Precision's identical to nDCG's (the legend's longest
    entries: "Precision@10, DP per 25 pairs 1.000 (identical to nDCG@10)")."""
    rows = []
    for alg in algorithms:
        for m, metric in enumerate(METRICS):
            shift = 0 if metric in ("ndcg", "precision", "mrr") else m
            mean = np.linspace(0.95 - 0.05 * shift, 0.0, P)
            rows += [{"algorithm": alg, "scope": "all", "metric": metric, "cutoff": CUTOFF,
                      "position": pos, "mean": float(mean[pos]), "sd": 0.1}
                     for pos in range(P)]
    return pd.DataFrame(rows)


def _noise(algorithms: tuple[str, ...]) -> pd.DataFrame:
    """Figure 1's A/A band (``NOISE_INPUT``)."""
    x = np.arange(P)
    return pd.DataFrame([{"algorithm": alg, "cutoff": CUTOFF, "position": int(pos),
                          "low": 0.8 - 0.05 * pos, "high": 0.95 - 0.05 * pos,
                          "mean": 0.9 - 0.05 * pos} for alg in algorithms for pos in x])


def _verdict(algorithms: tuple[str, ...]) -> pd.DataFrame:
    """The verdict's choices (the DP figure's stars and bold labels)."""
    return pd.DataFrame([{"algorithm": alg, "cutoff": CUTOFF, "family": fam,
                          "recommended": rec, "identical": (), "choices": choices}
                         for alg in algorithms
                         for fam, rec, choices in (("accuracy", "ndcg", ("ndcg", "precision")),
                                                   ("novelty", "efd", ("efd",)))])


FAMILIES = MetricFamilies.of_metrics(METRICS, [("accuracy", ["ndcg", "precision", "recall",
                                                             "mrr"]),
                                               ("novelty", ["efd", "epc"])], "ndcg")


def _figures(n: int) -> dict[str, object]:
    algs = ALGORITHMS[:n]
    return {"figure1": figure1(_curves(algs), _dp(algs), CUTOFF, _noise(algs)),
            "dp_figure": dp_figure(_dp(algs), _verdict(algs), CUTOFF, FAMILIES)}


def _columns(fig) -> int:
    """Panels per row of a figure's grid."""
    return fig.axes[0].get_subplotspec().get_gridspec().ncols


def test_the_size_constants_say_the_printed_size() -> None:
    from dptune.report import _figures as f

    assert f.TEXT_WIDTH == PRINTED_WIDTH
    assert f.MIN_PANEL_WIDTH >= MIN_PANEL
    assert f.MAX_PANEL_COLUMNS * f.MIN_PANEL_WIDTH <= f.TEXT_WIDTH
    assert f.COLUMN_WIDTH >= f.MIN_PANEL_WIDTH
    assert min(f.FONT_SIZES.values()) >= MIN_PT
    assert f.PANEL_SIZE[0] * f.MAX_PANEL_COLUMNS <= f.TEXT_WIDTH


@pytest.mark.parametrize("n", range(1, 9))
def test_a_figure_fits_the_text_width_with_panels_wide_enough(n: int) -> None:
    """1..8 algorithms: the figure is at most 7.0 in wide, every panel at least 3.3 in (more
    panels wrap into rows), and the PNG's pixels follow from its inches."""
    from dptune.report import FIG_DPI, figure_pixel_size

    for name, fig in _figures(n).items():
        width = fig.get_figwidth()
        assert width <= PRINTED_WIDTH + 1e-9, (name, n, width)
        assert width / _columns(fig) >= MIN_PANEL - 1e-9, (name, n, width, _columns(fig))
        visible = [ax for ax in fig.axes if ax.get_visible()]
        assert len(visible) == n, (name, n)
    h, w = figure_pixel_size(n)
    fig = _figures(n)["figure1"]
    assert (h, w) == tuple(round(x * FIG_DPI) for x in fig.get_size_inches()[::-1])
    assert w <= PRINTED_WIDTH * FIG_DPI


@pytest.mark.parametrize("n", [1, 3])
def test_every_text_prints_at_7_pt_or_more_and_inside_its_figure(n: int) -> None:
    """Every non-empty text of a drawn Figure 1 and DP figure (titles, tick and axis labels,
    legend entries) is at least 7 pt once the figure is placed at the text width (scaled down
    when wider), lies inside the figure, and no legend covers an axes."""
    for name, fig in _figures(n).items():
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
        scale = min(1.0, PRINTED_WIDTH / fig.get_figwidth())
        texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
        assert len(texts) > 12, (name, len(texts))  # tick labels, titles and legend entries
        small = sorted({(t.get_text(), round(t.get_fontsize() * scale, 2)) for t in texts
                        if t.get_fontsize() * scale < MIN_PT - 1e-9})
        assert not small, (name, n, small[:5])
        box = fig.bbox
        # tick labels past an axis' limits exist but are not drawn: the layout places the rest
        ticks = {id(t) for ax in fig.axes for t in (*ax.get_xticklabels(which="both"),
                                                    *ax.get_yticklabels(which="both"))}
        for t in texts:
            if id(t) in ticks:
                continue
            ext = t.get_window_extent(renderer)
            assert (ext.x0 >= box.x0 - 1 and ext.x1 <= box.x1 + 1 and ext.y0 >= box.y0 - 1
                    and ext.y1 <= box.y1 + 1), (name, n, t.get_text(), ext, box)
        axes = [ax for ax in fig.axes if ax.get_visible()]
        legends = [ax.get_legend() for ax in axes if ax.get_legend() is not None]
        assert len(legends) == (n if name == "figure1" else 0)
        for leg in legends:
            lb = leg.get_window_extent(renderer)
            for ax in axes:
                assert not lb.overlaps(ax.bbox), (name, n)  # below the panels, over no curve
            for other in legends:
                if other is not leg:
                    assert not lb.overlaps(other.get_window_extent(renderer)), (name, n)
