"""The test-split check's "significant", measured: ``downstream.csv`` calls a metric's choice
significantly different from the recommended metric's when a paired two-sided t-test over the
test users gives ``p < alpha``, one test per metric. Its stated error rate is ``alpha`` per
comparison. Here two configurations of the same law on the test split (the choice does not
matter) go through :func:`downstream_table` itself, many times over, under three population
shapes; the share called significant must be ``alpha`` within its Monte Carlo error. A real
difference must be found, so the check cannot pass by never calling anything significant.

The shapes (``n`` test users, configurations 0 and 1):

- per-user effects: ``x_k(u) = b_u + sqrt(0.5) z_ku + sqrt(0.5) e_ku``, all standard normal: a
  user's level ``b_u`` is shared by both configurations and each configuration adds the user's
  own response ``z_ku`` to it;
- clipped: the same read as a metric bounded in [0, 1] with about a quarter of the values 0
  (:func:`dptune.studies.simulations.error_rates.clip_metric`);
- ranking-like: most users score 0 (a hit with probability ``q_u ~ Beta(0.5, 2)``, about 20%),
  the others a value ``~ Beta(2, 3)``, as a top-N metric on sparse relevance.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dptune.analysis.verdict.downstream import downstream_table
from dptune.studies.simulations.error_rates import clip_metric

ALPHA = 0.05
USERS = 150
CHUNK = 50


def _per_user(rng: np.random.Generator, shift: float) -> np.ndarray:
    b, z, e = rng.standard_normal((1, USERS)), rng.standard_normal((2, USERS)), \
        rng.standard_normal((2, USERS))
    x = b + np.sqrt(0.5) * z + np.sqrt(0.5) * e
    x[1] += shift
    return x


def _ranking(rng: np.random.Generator, shift: float) -> np.ndarray:
    q = rng.beta(0.5, 2.0, (1, USERS))
    hit = rng.random((2, USERS)) < np.minimum(1.0, q * np.array([[1.0], [1.0 + shift]]))
    return hit * rng.beta(2.0, 3.0, (2, USERS))


SHAPES = {
    "per-user effects": _per_user,
    "clipped": lambda rng, shift: clip_metric(_per_user(rng, shift)),
    "ranking-like": _ranking,
}


def _significant_share(draw, shift: float, seed: int, runs: int) -> tuple[float, pd.DataFrame]:
    """``runs`` test splits drawn by ``draw``, each one algorithm whose accuracy family's
    recommended metric (nDCG@10) selects configuration 0 and Recall@10 configuration 1: the
    share of Recall@10's rows that :func:`downstream_table` calls significant (called on
    ``CHUNK`` algorithms at a time)."""
    rng = np.random.default_rng(seed)
    tables = {f"run{r}": draw(rng, shift) for r in range(runs)}

    def read(algorithm, metric, cutoff, ids):
        assert (metric, cutoff, list(ids)) == ("ndcg", 10, [0, 1])  # the family's judge
        return np.arange(USERS), tables[algorithm]

    names = list(tables)
    out = []
    for start in range(0, runs, CHUNK):
        chunk = names[start:start + CHUNK]
        best = pd.DataFrame([{"algorithm": a, "metric": m, "cutoff": 10, "config_id": c,
                              "params": f"c={c}"}
                             for a in chunk for m, c in (("ndcg", 0), ("recall", 1))])
        out.append(downstream_table(best, {(a, 10, "accuracy"): "ndcg" for a in chunk}, read,
                                    {"accuracy": "ndcg"}, alpha=ALPHA))
    compared = pd.concat(out, ignore_index=True).query("status == 'compared'")
    assert len(compared) == runs and (compared["n_test_users"] == USERS).all()
    return float(compared["significant"].mean()), compared


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_choice_that_does_not_matter_is_significant_at_rate_alpha(shape: str) -> None:
    runs = 1000
    rate, compared = _significant_share(SHAPES[shape], 0.0, seed=7, runs=runs)
    se = np.sqrt(ALPHA * (1 - ALPHA) / runs)  # 0.69 points
    assert abs(rate - ALPHA) <= 2.5 * se, (shape, rate)
    # the p-values are those of the test named, not merely thresholded well
    assert (compared["significant"] == (compared["p"] < ALPHA)).all()


@pytest.mark.parametrize(("shape", "shift"), [("per-user effects", 0.35), ("clipped", 0.35),
                                              ("ranking-like", 0.8)])
def test_a_choice_that_matters_is_found(shape: str, shift: float) -> None:
    rate, _ = _significant_share(SHAPES[shape], shift, seed=8, runs=200)
    assert rate >= 0.7, (shape, rate)
