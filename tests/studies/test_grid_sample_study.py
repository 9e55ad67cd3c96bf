"""The grid sample, measured (dptune/studies/_grid_sample.py): the DP of the first units of a
design order estimates the full grid's without bias, and its interval holds the full grid's
value about 95% of the time.

Quick (default run): a 10 x 10 grid of 3-configuration units at 20% and 50% of its units, 120
replications. Full (``-m slow``): the table of ``docs/statistics.md``, a 40 x 40 grid at 5%,
10%, 25% and 50% of its units, 200 replications per case.

What the claim is: |bias| below a quarter of the interval's half-width at every budget;
coverage within two Monte Carlo sds of 95% on either side (the interval is neither too narrow
nor, as it was before its variance was put together from components counted once, too wide);
and the half-width at most 1.3 times 1.96 sds of the estimate (it was 1.45-1.53 times when the
crossed resampling of users, units and pairs counted each pair's own part several times)."""

from __future__ import annotations

import numpy as np
import pytest

from dptune.studies._grid_sample import (
    FULL_GRID_CASES,
    QUICK_GRID_CASES,
    GridCase,
    grid_sample_study,
    replicate,
)


def _check(df):
    assert len(df) and (df["bias_over_half_width"] < 0.25).all(), df
    mc = 2 * np.sqrt(0.95 * 0.05 / df["replications"])
    assert (df["coverage"] >= 0.95 - mc).all(), df
    assert (df["coverage"] <= 0.95 + mc).all(), df
    assert (df["mean_half_width"] > 0).all()
    assert (df["mean_half_width"] <= 1.3 * 1.96 * df["estimate_sd"]).all(), df


def test_quick_grid_sample_study():
    _check(grid_sample_study(QUICK_GRID_CASES, replications=120, seed=11))


@pytest.mark.slow
def test_documented_grid_sample_study():
    df = grid_sample_study(FULL_GRID_CASES, replications=200, seed=2026)
    print(df.to_string())
    _check(df)


def test_a_replication_is_reproducible_and_every_unit_is_the_full_grid():
    case = GridCase("4 x 4 units x 2", 4, 4, 2, 60, 2, 1.0, (2, 4), pairs=200, bootstrap=50)
    a, b = replicate(case, 5), replicate(case, 5)
    assert a == b
    # four rounds of a 4 x 4 grid hold every unit: the grid sample is the full grid
    assert a[4][0] == pytest.approx(a["full"], rel=1e-12)
