"""A cornac sweep costs its own fits: every unit fitted once, no noise floor for deterministic
models, scoring through the batched path (issue: EASE retrained 15 times for the noise floor)."""

from __future__ import annotations

import pandas as pd

from dptune.cli import main
from dptune.models import CornacModel

EXPERIMENT = """
name = "cornac-small"
seed = 3
[data]
source = "ml-latest-small"
kcore = 50
[split]
folds = 3
[analysis]
pairs = 3
[[algorithms]]
name = "ease"
type = "cornac:EASE"
grid = "{grid}"
[[algorithms]]
name = "bpr"
type = "cornac:BPR"
grid = "{bpr}"
[[algorithms]]
name = "mostpop"
type = "cornac:MostPop"
"""


def test_cornac_sweep_fits_each_unit_once_and_no_floor_for_deterministic(tmp_path, monkeypatch):
    (tmp_path / "ease.toml").write_text("[params.lamb]\nvalues = [100.0, 500.0]\n")
    (tmp_path / "bpr.toml").write_text("[params.k]\nvalues = [4, 8]\n[params.max_iter]\n"
                                       "values = [5]\n")
    cfg = tmp_path / "exp.toml"
    cfg.write_text(EXPERIMENT.replace("{grid}", str(tmp_path / "ease.toml"))
                   .replace("{bpr}", str(tmp_path / "bpr.toml")))
    fits: list[tuple[str, str, int]] = []
    models: list[CornacModel] = []
    real_fit = CornacModel.fit

    def counting_fit(self, X):
        out = real_fit(self, X)
        fits.append((self.name, repr(self.params), self.seed))
        models.append(out)
        return out

    monkeypatch.setattr(CornacModel, "fit", counting_fit)
    rc = main(["run", str(cfg), "--results", str(tmp_path / "r"), "--reports",
               str(tmp_path / "q"), "--no-progress", "--noise-seeds", "2"])
    assert rc == 0
    trials = pd.read_csv(tmp_path / "r" / "trials.csv")
    noise = pd.read_csv(tmp_path / "r" / "noise_trials.csv")
    assert set(noise["algorithm"]) == {"bpr"}  # EASE and MostPop are deterministic
    fitted = pd.Series([name for name, _, _ in fits]).value_counts().to_dict()
    per_alg = trials.groupby("algorithm").size()
    # every (configuration, fold) of the sweep fitted once; BPR also for its noise floor
    assert fitted == {"EASE": per_alg["ease"], "MostPop": per_alg["mostpop"],
                      "BPR": per_alg["bpr"] + len(noise)}
    assert per_alg["ease"] >= 2 * 3 and per_alg["mostpop"] == 3 + 1
    assert len(set(fits)) == len(fits)  # no (model, configuration, seed) fitted twice
    assert all(model.batched_ for model in models)  # all scored a block of users at a time
