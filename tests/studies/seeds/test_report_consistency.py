"""The split-seed study's report says each number once: the hold-out's shares in the settings
table as in the caption and the figure's title, and DPs equal in exact arithmetic as one value
in the ranks and Kendall's tau."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from studies.seeds.seeds_experiment import tiny_seeds_experiment as _exp

from dptune.studies.seeds.report import _settings_section, summary_table
from dptune.studies.seeds.runs import SeedPlan
from dptune.studies.seeds.settings import load_seed_experiment, resolve_configs


@pytest.mark.parametrize("ratio, shares", [(0.8, "80/20"), (0.755, "75.5/24.5"),
                                           (0.001, "0.1/99.9"), (0.07, "7/93")])
def test_the_holdout_shares_are_one_text(tmp_path: Path, ratio, shares) -> None:
    """The settings table rounded the shares to whole percent (0.755 read 76/24, 0.001 read
    0/100: no training data) while the summary's caption and the figure gave them as they are
    (75.5/24.5, 0.1/99.9)."""
    exp, st = load_seed_experiment(_exp(tmp_path, f"[seeds]\ntrain_ratio = {ratio}\n",
                                        bpr=False))
    plan = SeedPlan(exp=exp, settings=st, configs=resolve_configs(exp, {}), seeds=(1, 2),
                    grid_algorithms=(), grid_seeds=0, cache=tmp_path)
    trials = pd.DataFrame({"algorithm": ["userknn"], "split": ["holdout"], "fit_seconds": [1.0]})
    text = "\n".join(_settings_section(plan, "toy", trials))
    assert f"per-user random {shares} |" in text, text
    summary = pd.DataFrame({"dataset": [], "metric": [], "holm_family": []})
    assert f"random {shares} hold-out (HO)" in summary_table(summary, 2, st).caption


def _grid(dps: dict[int, list[float]]) -> pd.DataFrame:
    """A grid part of seeds ``dps`` keys, each with the DPs of nDCG@10, Precision@10, Recall@10."""
    rows = []
    for seed, values in dps.items():
        for m, v in zip(("ndcg", "precision", "recall"), values, strict=True):
            rows.append({"dataset": "d", "algorithm": "a", "seed_index": seed, "seed": seed,
                         "metric": m, "cutoff": 10, "dp_per_25": v, "n_pairs": 5})
    return pd.DataFrame(rows)


def test_dps_one_ulp_apart_share_their_rank() -> None:
    """``dp_rank`` ranked the raw floats: two DPs equal in exact arithmetic but one ulp apart
    (summed in another order) got ranks 1 and 2, so one metric was "the most discriminative"
    in a seed where it ties; the rule of every other table (:func:`dptune.vocab.tie_value`)
    makes them one value."""
    from dptune.studies.seeds.stats import dp_ranks

    x = 0.2
    grid = _grid({0: [x, np.nextafter(x, 1.0), 3.0]})
    assert dp_ranks(grid).tolist() == [1, 1, 3]


def test_kendall_tau_reads_ulp_apart_dps_as_ties() -> None:
    """Two seeds whose DPs differ only in the last bit rank the metrics the same: tau 1, not
    the tau of a tie broken one way in one seed and the other way in the other."""
    from dptune.studies.seeds.stats import kendall_table

    x = 0.2
    up = np.nextafter(x, 1.0)
    grid = _grid({0: [x, up, 3.0], 1: [up, x, 3.0]})
    tau = kendall_table(grid).set_index("cutoff")["tau"]
    assert tau["10"] == pytest.approx(1.0) and tau["all"] == pytest.approx(1.0)


def test_the_figure_shows_a_data_set_named_with_dollars(tmp_path: Path) -> None:
    """A data set is named after its file: ``d$x_$.csv`` put ``$x_$`` into the title, which
    matplotlib read as mathtext; saving the figure, after every model of the study had
    trained, stopped with a parse error."""
    from dptune.report import save_figure
    from dptune.studies.seeds.figure import seeds_figure

    rows = [{"dataset": "d$x_$", "algorithm": "a$b", "split": s, "seed": i, "metric": "ndcg",
             "cutoff": 10, "value": 0.1 + i / 100, "pct_of_mean": 99.0 + i, "seed_index": i,
             "config_id": 0} for s in ("holdout", "cv") for i in range(3)]
    fig = seeds_figure(pd.DataFrame(rows), ["ndcg"])
    files = save_figure(fig, tmp_path / "seeds_figure", creator="dptune")
    assert {f.suffix for f in files} == {".png", ".svg"}
    assert "d$x_$" in (tmp_path / "seeds_figure.svg").read_text()
