"""Shared fixtures: a tiny experiment on the embedded data, and the PostgreSQL test server.

``tiny_experiment`` writes an experiment TOML (ml-latest-small, 2 folds, UserKNN k in
[10, 20, 40] and a 2 x 2 BPR-MF grid: 6 units, 14 configuration x fold results) into a
directory; ``pg_url`` is the URL in ``DPTUNE_TEST_PG_URL`` (``bash .ci/run`` starts a server and
sets it), and the test is skipped, with the reason, when it is unset or the server does not answer.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

KNN_GRID = """
[params.k]
values = [10, 20, 40]
"""

BPR_GRID = """
family = "bpr-mf"
[params.factors]
values = [8, 16]
[params.iterations]
values = [1, 2]
[params.learning_rate]
values = [0.05]
[derived]
user_reg = { from = "learning_rate", scale = 0.05 }
item_reg = { from = "learning_rate", scale = 0.005 }
"""

EXPERIMENT = """
name = "{name}"
seed = 7
[data]
source = "{source}"
[split]
folds = 2
[evaluation]
test_split = false
[analysis]
pairs = 5
noise_seeds = 0
[sweep]
jobs = 1
[[algorithms]]
name = "userknn"
type = "userknn"
grid = "{knn}"
[[algorithms]]
name = "bpr-mf"
type = "bpr-mf"
grid = "{bpr}"
"""

# validation units of EXPERIMENT: 1 UserKNN unit + 2 BPR-MF units (factors 8 / 16), per fold
UNITS = 6
RESULTS = (3 + 4) * 2  # configurations x folds


def write_experiment(directory: Path, name: str = "tiny", source: str = "ml-latest-small",
                     knn: str = KNN_GRID, bpr: str = BPR_GRID, extra: str = "") -> Path:
    """Write the grids and the experiment TOML into ``directory``; return the TOML's path."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "knn.toml").write_text(knn)
    (directory / "bpr.toml").write_text(bpr)
    cfg = directory / f"{name}.toml"
    cfg.write_text(EXPERIMENT.format(name=name, source=source, knn=directory / "knn.toml",
                                     bpr=directory / "bpr.toml") + extra)
    return cfg


@pytest.fixture
def tiny_experiment(tmp_path: Path) -> Path:
    """The tiny experiment's TOML in a fresh directory."""
    return write_experiment(tmp_path / "exp")


def _pg_problem(url: str) -> str | None:
    """Why the server at ``url`` cannot be used, or None when it answers."""
    try:
        import sqlalchemy
    except ImportError as err:  # pragma: no cover - sqlalchemy comes with optuna
        return f"sqlalchemy missing ({err})"
    try:
        engine = sqlalchemy.create_engine(url, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text("select 1"))
        engine.dispose()
    except Exception as err:  # noqa: BLE001 - any failure means: skip with the reason
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return first
    return None


@pytest.fixture(scope="session")
def pg_url() -> str:
    """URL of the PostgreSQL test server (``DPTUNE_TEST_PG_URL``); skips when there is none."""
    url = os.environ.get("DPTUNE_TEST_PG_URL", "").strip()
    if not url:
        pytest.skip("no PostgreSQL server: DPTUNE_TEST_PG_URL is not set "
                    "(bash .ci/run installs and starts one)")
    problem = _pg_problem(url)
    if problem:
        pytest.skip(f"PostgreSQL server in DPTUNE_TEST_PG_URL not reachable: {problem}")
    return url
