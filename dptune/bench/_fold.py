"""The benchmark's data: an experiment on one data set and its validation fold 0, built as the
sweep builds it, and the evaluation call the measurements time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dptune.bench._plans import Plan


def bench_experiment(dataset: str, workdir: Path, plan: Plan, label: str | None = None) -> Any:
    """An experiment on ``dataset`` (a data set name or a file) with the paper's split and the
    plan's mini-grid (grid files written to ``workdir``); its fold 0 is the data of every
    comparison. ``label`` names the experiment (default: ``dataset``)."""
    from dptune.config import load_experiment
    from dptune.data import KNOWN_DATASETS

    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "mini-knn.toml").write_text(
        f"[params.k]\nvalues = {list(plan.mini_knn)}\n")
    (workdir / "mini-bpr.toml").write_text(
        'family = "bpr-mf"\n'
        f"[params.factors]\nvalues = {list(plan.mini_factors)}\n"
        f"[params.iterations]\nvalues = {list(plan.mini_iterations)}\n"
        f"[params.learning_rate]\nvalues = {[float(x) for x in plan.mini_lrs]}\n"
        "[derived]\n"
        'user_reg = { from = "learning_rate", scale = 0.05 }\n'
        'item_reg = { from = "learning_rate", scale = 0.005 }\n')
    name = f"bench-{label or dataset}"
    if dataset not in KNOWN_DATASETS and Path(dataset).exists():  # a file: absolute, as the experiment is written to ``workdir``
        dataset = str(Path(dataset).resolve())
    (workdir / f"{name}.toml").write_text(
        f'name = "{name}"\nseed = 42\n'
        f'[data]\nsource = "{dataset}"\n'
        '[split]\nmethod = "temporal"\ntrain_ratio = 0.8\nmin_user_interactions = 5\n'
        'folds = 10\nfold_method = "user_stratified"\n'
        '[evaluation]\ncutoffs = [1, 5, 10]\nrelevance_threshold = 4.0\n'
        '[sweep]\njobs = 2\n'
        '[[algorithms]]\nname = "userknn"\ntype = "userknn"\n'
        f'grid = "{workdir / "mini-knn.toml"}"\n'
        '[[algorithms]]\nname = "bpr-mf"\ntype = "bpr-mf"\n'
        f'grid = "{workdir / "mini-bpr.toml"}"\n')
    return load_experiment(workdir / f"{name}.toml")


def fold0(exp: Any) -> Any:
    """Validation fold 0 of the experiment, as the sweep builds it (data fetched if needed)."""
    from dptune.data import fetch
    from dptune.sweeper import prepare

    if exp.data.source in ("ml-100k", "ml-1m"):
        fetch(exp.data.source)
    return prepare(exp).fold("0")


def evaluate_model(model: Any, fd: Any) -> np.ndarray:
    """Per-user values of every metric@N of ``model`` on fold ``fd`` (the sweep's evaluation call)."""
    from dptune.metrics import evaluate

    return evaluate(model, fd.users, fd.train, fd.relevant, (1, 5, 10), fd.efd, fd.epc)


def warm_up(fd: Any) -> None:
    """Load the compiled kernels and touch the code paths once, outside every timing."""
    from dptune.metrics import evaluate
    from dptune.models import BPRMF, ItemKNN, UserKNN

    small = fd.train[: min(300, fd.train.shape[0])]
    users = fd.users[fd.users < small.shape[0]][:64]
    for model in (UserKNN(5).fit(small), ItemKNN(5).fit(small),
                  BPRMF(4, 0.05, 0.0025, 0.00025, epochs=1).fit(small)):
        evaluate(model, users, small, fd.relevant[: small.shape[0]], (1, 5, 10), fd.efd, fd.epc)
