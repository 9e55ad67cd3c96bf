"""DP on one scale (dptune.analysis.dp.scale) and the scopes' pairs under every pair seed."""

import numpy as np
import pandas as pd
import pytest

from dptune.analysis.dp.pairs import sample_pairs, scope_pairs, scope_seed, scopes
from dptune.analysis.dp.scale import bootstrap_seed, n_possible_pairs, per_reference
from dptune.errors import DptuneError


def test_pairs_all_when_few_else_a_seeded_sample_under_every_repeat():
    ids = np.arange(15) * 3
    configs = pd.DataFrame({"config_id": ids, "k": ids})
    (whole,) = scopes(configs, ["k"], 1000)
    assert (whole.name, whole.n_possible, whole.n_pairs, whole.sampled) == ("all", 105, 105,
                                                                           False)
    pairs = whole.pairs(0, seed=4)
    assert len({tuple(r) for r in pairs}) == 105
    # repeats of the stability check: the same set of pairs when all are used
    assert {tuple(r) for r in whole.pairs(3, seed=4)} == {tuple(r) for r in pairs}
    big = np.arange(200)
    (s,) = scopes(pd.DataFrame({"config_id": big, "k": big}), ["k"], 1000)
    assert s.sampled and s.n_possible == n_possible_pairs(200)
    s0 = s.pairs(0, seed=4)
    assert len(s0) == 1000 and np.all(s0[:, 0] < s0[:, 1])
    # repeat 0 is the tables' pairs (one pair set for every number of the scope)
    assert np.array_equal(s0, sample_pairs(big, 1000, scope_seed(4, "all")))
    assert np.array_equal(s0, scope_pairs(pd.DataFrame({"config_id": big, "k": big}), ["k"],
                                          1000, 4)["all"])
    s1 = s.pairs(1, seed=4)
    assert np.array_equal(s1, sample_pairs(big, 1000, scope_seed(4, "all|robust|1")))
    assert not np.array_equal(np.sort(s0, axis=0), np.sort(s1, axis=0))
    assert bootstrap_seed(4, 0) != bootstrap_seed(4, 1)


def test_every_scope_counts_its_possible_pairs():
    cfg = pd.DataFrame([(i, f, lr) for i, (f, lr) in enumerate(
        [(f, lr) for f in (10, 20, 40) for lr in (0.1, 0.01)])],
        columns=["config_id", "factors", "lr"])
    found = {s.name: s for s in scopes(cfg, ["factors", "lr"], 1000, 2)}
    assert found["all"].n_possible == 15
    assert found["factors=10"].n_possible == 1 and found["lr=0.1"].n_possible == 3
    assert found["only:factors"].n_possible == 6  # 3 factor values, 2 lr groups: 2 x 3 pairs
    assert found["only:lr"].n_possible == 3
    assert found["only:factors"].sampled and found["only:factors"].n_pairs == 2
    assert not found["only:lr"].sampled or found["only:lr"].n_pairs == 2


def test_dp_per_25_pairs_is_the_paper_dp_bit_for_bit_at_p_25():
    rng = np.random.default_rng(3)
    dp = rng.uniform(0, 25, 50)
    assert np.array_equal(per_reference(dp, np.full(50, 25)), dp)
    assert per_reference(3.0, 15) == pytest.approx(5.0)  # 3 / 15 = 0.2 per pair -> 5 per 25
    assert per_reference(10.0, 1000) == pytest.approx(0.25)
    with pytest.raises(DptuneError, match="n_pairs"):
        per_reference(1.0, 0)
