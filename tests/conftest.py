"""Shared fixtures: the session's swept stores, the experiments they run, and the PostgreSQL
test server.

Each distinct swept store a test reads is built once per test run (the two pytest-xdist
workers share it: :func:`_shared_store`), here, by a fixture named for what it holds; every one
is read only (a test that changes a store copies it first, e.g. ``shutil.copytree`` into its
``tmp_path``), and at the end of the session each is checked unchanged, file by file, so that a
test that wrote into one fails instead of leaking into the next reader:

- :func:`tiny_swept`: ``tiny_experiment`` (ml-latest-small, 2 folds, UserKNN k in [10, 20, 40]
  and a 2 x 2 BPR-MF grid: 6 units, 14 configuration x fold results), swept and analysed by
  ``dptune run``;
- :func:`tiny_swept_every_stage`: the quickstart's UserKNN grid and a 2 x 2 x 2 BPR-MF grid
  through every stage (cutoffs 1, 5, 10, the test split, a 5-seed noise floor, a bootstrap),
  swept and analysed by ``dptune run``;
- :func:`grid_3x3_swept`: the tiny experiment with a 3 x 3 BPR-MF grid (9 units), swept to
  its full grid, not analysed;
- :func:`knn_swept`: UserKNN alone (k in [10, 20, 40, 80]), swept and analysed;
- :func:`subset_swept`: an 80-user subset of the embedded data, BPR-MF and ItemKNN, the
  validation units alone (no noise floor), not analysed;
- :func:`synthetic_swept`: :data:`SYNTH_EXPERIMENT` (120 synthetic users, the test split, a
  2-seed noise floor), swept and not analysed.

``tiny_experiment`` writes the tiny experiment's TOML into a fresh directory;
:func:`frames_result` is an analysis result built by hand from DataFrames (for
``Report.from_result`` without a store); ``pg_url`` is the URL in ``DPTUNE_TEST_PG_URL`` (``bash
.ci/run`` starts a server and sets it), and the test is skipped, with the reason, when it is
unset or the server does not answer.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path


def _cache_bytecode() -> None:
    """Let this run cache compiled bytecode, whatever the environment says.

    The suite starts a few hundred Python processes (each ``dptune`` command it runs, the
    sweeps' worker pools, the distributed workers), and pytest rewrites every test module's
    asserts. Where writing bytecode is turned off (``PYTHONDONTWRITEBYTECODE``, which some
    containers set), each of them compiled dptune's modules from source again, and each pytest
    worker rewrote every test module again on every run. Nothing a test checks depends on it."""
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


_cache_bytecode()


def _share_the_cores() -> None:
    """Give each pytest-xdist worker its share of the cores, as a sweep gives its worker
    processes (:func:`dptune._parallel.threads_per_job`: processes x threads <= cores): numba's
    and the BLAS/OpenMP thread pools of this worker and of the processes it starts hold
    ``cores // workers`` threads (an explicit setting in the environment is kept).

    Set here, before numpy and numba are imported, since they read it when they start. Left at
    their defaults (one thread per core in each of the two workers), the analysis's parallel
    kernels waited at their barriers for a thread that the other worker's process held, and the
    idle OpenMP threads spun beside it: the default run took 680 s of CPU instead of 480 s."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers:
        return
    from dptune._parallel import threads_per_job

    threads = str(threads_per_job(int(workers)))
    for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                 "MKL_NUM_THREADS"):
        os.environ.setdefault(name, threads)


_share_the_cores()

import numpy as np  # noqa: E402 - after the thread counts it reads
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

KNN_GRID = """
[params.k]
values = [10, 20, 40]
"""


def bpr_grid(factors, iterations, learning_rates) -> str:
    """A BPR-MF grid file of these values, with the paper's regularisation derived from the
    learning rate (user ``lr / 20``, item ``lr / 200``)."""
    return ('family = "bpr-mf"\n'
            f"[params.factors]\nvalues = {list(factors)}\n"
            f"[params.iterations]\nvalues = {list(iterations)}\n"
            f"[params.learning_rate]\nvalues = {list(learning_rates)}\n"
            "[derived]\n"
            'user_reg = { from = "learning_rate", scale = 0.05 }\n'
            'item_reg = { from = "learning_rate", scale = 0.005 }\n')


BPR_GRID = bpr_grid([8, 16], [1, 2], [0.05])

# A 3 x 3 BPR-MF grid (9 units of 2 iterations): a design order of rounds of 3 units.
BPR_3x3 = bpr_grid([8, 16, 32], [1, 2], [0.05, 0.1, 0.2])

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


#: The synthetic experiment of the fault-injection and Ctrl-C tests (``{sweep}``: a ``[sweep]``
#: section or nothing): 2 folds, cutoffs 5 and 10, the test split, a 2-seed noise floor, no
#: bootstrap; UserKNN with 2 configurations and a 2 x 2 BPR-MF grid.
SYNTH_EXPERIMENT = """
name = "{name}"
seed = 7
[data]
source = "{data}"
[split]
folds = 2
[evaluation]
cutoffs = [5, 10]
[analysis]
pairs = 3
noise_seeds = 2
bootstrap = 0
stability = 0
importance = false
{sweep}[[algorithms]]
name = "userknn"
type = "userknn"
grid = "{knn}"
[[algorithms]]
name = "bpr-mf"
type = "bpr-mf"
grid = "{bpr}"
"""
SYNTH_KNN = "[params.k]\nvalues = [5, 10]\n"
SYNTH_BPR = bpr_grid([4, 8], [1, 2], [0.05])


def write_synthetic_ratings(path: Path, n_users: int, n_items: int, max_ratings: int) -> Path:
    """A seeded synthetic ratings CSV (user, item, rating, timestamp): each of ``n_users``
    users rates 12 to ``max_ratings - 1`` distinct items of ``n_items`` with ratings 1-5, at
    increasing timestamps; returns ``path``."""
    rng = np.random.default_rng(0)
    rows = []
    for u in range(n_users):
        items = rng.choice(n_items, size=int(rng.integers(12, max_ratings)), replace=False)
        rows += [(u, int(i), float(rng.integers(1, 6)), 1000 + 10 * k + u)
                 for k, i in enumerate(items)]
    pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"]).to_csv(path, index=False)
    return path


def write_synthetic_experiment(directory: Path, name: str, sweep: str = "") -> Path:
    """Write the synthetic data set (120 users with 12-29 ratings each over 80 items, seeded),
    the grids and :data:`SYNTH_EXPERIMENT` into ``directory``; return the TOML's path."""
    data = write_synthetic_ratings(directory / "ratings.csv", 120, 80, 30)
    (directory / "knn.toml").write_text(SYNTH_KNN)
    (directory / "bpr.toml").write_text(SYNTH_BPR)
    cfg = directory / f"{name}.toml"
    cfg.write_text(SYNTH_EXPERIMENT.format(name=name, data=data, knn=directory / "knn.toml",
                                           bpr=directory / "bpr.toml", sweep=sweep))
    return cfg

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


#: The test files that take longest, longest first (measured with ``--durations``). The default
#: run gives each file to one of two workers (addopts: ``-n 2 --dist loadfile
#: --no-loadscope-reorder``) in the order collected, as :func:`_rank` sorts it: these files
#: first, in this order, then every other file, so that the short files fill the end of the run
#: on both workers. The second file's first test sweeps nothing, so that the first worker alone
#: compiles the models' numba kernels on a cold cache (its first store) and the second loads
#: them from numba's on-disk cache; the distributed sweeps come third, after that compilation
#: (their worker processes would compile the same kernels again), and mostly wait on heartbeats
#: while the other worker computes. Only the order changes; no test depends on it.
LONGEST_FIRST = (
    "test_cli.py", "studies/simulations/test_grid_sample_study.py", "sweeper/test_distributed.py",
    "analysis/test_grid_sample.py", "test_api.py", "analysis/test_analyze.py",
    "report/test_report_object.py", "store/test_faults.py",
    "analysis/verdict/test_verdict_analysis.py", "report/test_report.py", "test_ctrl_c.py",
    "bench/test_bench.py", "studies/simulations/test_coverage_study.py", "studies/simulations/test_error_rates_study.py",
    "store/test_per_user_dp.py", "studies/slices/test_slices.py", "engine/test_bpr_engine.py",
    "sweeper/test_part_writer.py", "analysis/dp/test_units.py",
    "models/test_readme_own_sections.py", "analysis/dp/test_dp.py", "test_bad_input.py",
    "studies/seeds/test_seeds.py", "report/test_html_browser.py", "models/test_cornac_sweep.py",
    "bench/test_gpu.py", "sweeper/test_budget.py", "analysis/importance/test_importance.py",
    "sweeper/test_warmup.py", "models/test_python_sweep.py", "test_per_user.py",
    "models/test_models.py",
)


def _rank(item: pytest.Item) -> int:
    """The place of ``item``'s file: the files of :data:`LONGEST_FIRST` in its order, then
    every other file."""
    try:
        name = item.path.relative_to(Path(__file__).parent).as_posix()
    except ValueError:
        return len(LONGEST_FIRST)
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the files by :func:`_rank` (a stable sort: the files of one rank, and the tests
    within a file, keep the order collected)."""
    items.sort(key=_rank)


def tree_digest(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes), folders included as empty entries:
    equal before and after a command when it changed nothing there."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"")
            for p in sorted(root.rglob("*"))}


def assert_claims_hold(df: pd.DataFrame, alpha: float = 0.05, min_power: float = 0.5) -> None:
    """A claims study's summary under another population shape (a row per case, the
    simulation studies' ``weaker``, ``false_rows``, ``false_rows_se``, ``power`` and
    ``clipped``): every case clipped; in the null cases (no truly weaker metric) a false claim
    in at most ``alpha`` of the rows within two Monte Carlo sds; a truly weaker metric named in
    at least ``min_power`` of them."""
    text = df.to_string()
    assert df["clipped"].all(), text
    null = df[df["weaker"] == 0]
    assert (null["false_rows"] - 2 * null["false_rows_se"] <= alpha).all(), text
    assert df.loc[df["weaker"] > 0, "power"].min() >= min_power, text


def one_error_line(err: str) -> str:
    """``err`` (a command's stderr) is exactly one ``dptune: ...`` line, no traceback; returns
    it."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("dptune: ") and "Traceback" not in err, err
    return lines[0]


#: A BPR-MF grid of three exponent ranges of 9,999 values each (10^12 configurations), whose
#: first value (factors = 1.001) is not an integer: too large to expand, and wrong at once.
HUGE_BPR = """family = "bpr-mf"
[params.factors]
base = 1.001
exponent = {start = 1, stop = 9999, step = 1}
[params.iterations]
base = 1.001
exponent = {start = 1, stop = 9999, step = 1}
[params.learning_rate]
base = 1.001
exponent = {start = 1, stop = 9999, step = 1}
[derived]
user_reg = { from = "learning_rate", scale = 0.05 }
item_reg = { from = "learning_rate", scale = 0.005 }
"""


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the file ``path`` (created if missing) while the block runs."""
    import fcntl

    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def _shared_store(factory: pytest.TempPathFactory, name: str,
                  build: Callable[[Path], None]) -> Iterator[Path]:
    """The folder ``name``, filled by ``build`` once per test run and yielded read only.

    With pytest-xdist the workers share it: the first that needs it builds it in the run's
    temporary folder while the others wait for it (a lock file beside it), so a store is swept
    once however many workers read it; a build that failed is started again by the next one
    (where ``fcntl`` is missing, Windows, each worker builds its own). After the session every
    file in it is checked unchanged, so that a test that changed it fails instead of leaking
    into the next reader (a test that changes a store copies it first)."""
    base = factory.getbasetemp()
    shared = bool(os.environ.get("PYTEST_XDIST_WORKER")) and os.name == "posix"
    if shared:
        base = base.parent  # the run's folder, above each worker's own
    d, built = base / name, base / f"{name}.built"
    with _locked(base / f"{name}.lock") if shared else nullcontext():
        if not built.exists():
            if d.exists():
                shutil.rmtree(d)
            d.mkdir()
            build(d)
            built.touch()
    before = tree_digest(d)
    yield d
    after = tree_digest(d)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"a test changed the shared store {name}: {changed[:10]}"


@pytest.fixture(scope="session")
def tiny_swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The tiny experiment (:func:`write_experiment`'s defaults, name "tiny") swept and analysed
    once per test run by ``dptune run``: ``exp/tiny.toml``, ``results/`` (the store) and
    ``reports/`` (the analysis) in the returned directory. Read only (:func:`_shared_store`)."""
    from dptune.cli import main

    def build(d: Path) -> None:
        cfg = write_experiment(d / "exp")
        assert main(["run", str(cfg), "--results", str(d / "results"), "--reports",
                     str(d / "reports"), "--no-progress"]) == 0

    with _shared_store(tmp_path_factory, "tiny_swept", build) as d:
        yield d


def write_grid_3x3_experiment(directory: Path, name: str = "sample") -> Path:
    """The tiny experiment with the 3 x 3 BPR-MF grid (:data:`BPR_3x3`: 9 units of 2
    iterations, rounds of 3 units), 200 pairs and a bootstrap of 200, so that a grid sample's
    claims are tested; return the TOML's path."""
    cfg = write_experiment(directory, name, bpr=BPR_3x3)
    cfg.write_text(cfg.read_text().replace("pairs = 5", "pairs = 200\nbootstrap = 200"))
    return cfg


@pytest.fixture(scope="session")
def grid_3x3_swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """:func:`write_grid_3x3_experiment` swept once per test run to its full grid, never
    stopped, by ``dptune run --no-analyze``: ``exp/sample.toml`` and ``results/`` in the
    returned directory. Read only (:func:`_shared_store`)."""
    from dptune.cli import main

    def build(d: Path) -> None:
        cfg = write_grid_3x3_experiment(d / "exp")
        assert main(["run", str(cfg), "--results", str(d / "results"), "--no-analyze",
                     "--no-progress"]) == 0

    with _shared_store(tmp_path_factory, "grid_3x3_swept", build) as d:
        yield d


#: The experiment of :func:`tiny_swept_every_stage` (``{root}``: the repository, ``{bpr}``:
#: its BPR-MF grid, :data:`EVERY_STAGE_BPR`): every stage at its default, the test split and
#: the noise floor (5 seeds) included, but a bootstrap of 200 replicates (the default 1000 is
#: :func:`tiny_swept`'s).
EVERY_STAGE_EXPERIMENT = """
name = "tiny"
seed = 7
[split]
folds = 2
[evaluation]
cutoffs = [1, 5, 10]
[analysis]
pairs = 5
bootstrap = 200
[sweep]
jobs = 1
[[algorithms]]
name = "userknn"
type = "userknn"
grid = "{root}/grids/quickstart-knn.toml"
[[algorithms]]
name = "bpr-mf"
type = "bpr-mf"
grid = "{bpr}"
"""
EVERY_STAGE_BPR = bpr_grid([8, 16], [1, 3], [0.05, 0.1])


@pytest.fixture(scope="session")
def tiny_swept_every_stage(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """:data:`EVERY_STAGE_EXPERIMENT` (6 UserKNN and 8 BPR-MF configurations, 2 folds, the
    test split, a 5-seed noise floor, a bootstrap of 200) swept and analysed once per
    test run by ``dptune run``: ``tiny.toml``, ``bpr.toml``, ``results/`` and ``reports/`` in the
    returned directory. Read only (:func:`_shared_store`)."""
    from dptune.cli import main

    def build(d: Path) -> None:
        (d / "bpr.toml").write_text(EVERY_STAGE_BPR)
        cfg = d / "tiny.toml"
        cfg.write_text(EVERY_STAGE_EXPERIMENT.replace("{root}", str(ROOT))
                       .replace("{bpr}", str(d / "bpr.toml")))
        assert main(["run", str(cfg), "--results", str(d / "results"), "--reports",
                     str(d / "reports"), "--no-progress"]) == 0

    with _shared_store(tmp_path_factory, "tiny_swept_every_stage", build) as d:
        yield d


#: The experiment of :func:`knn_swept` (``{grid}``: its UserKNN grid).
KNN_EXPERIMENT = """
name = "tiny-slices"
seed = 7
[split]
folds = 2
[evaluation]
cutoffs = [1, 5, 10]
test_split = false
[analysis]
pairs = 5
[[algorithms]]
name = "userknn"
type = "userknn"
grid = "{grid}"
"""


@pytest.fixture(scope="session")
def knn_swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """:data:`KNN_EXPERIMENT` (UserKNN alone, k in [10, 20, 40, 80], 2 folds, no test split)
    swept and analysed once per session: ``tiny.toml``, ``knn.toml``, ``results/`` and
    ``reports/`` in the returned directory. Read only (:func:`_shared_store`)."""
    from dptune._api import analyze_results
    from dptune.config import load_experiment
    from dptune.sweeper import run_experiment

    def build(d: Path) -> None:
        (d / "knn.toml").write_text("[params.k]\nvalues = [10, 20, 40, 80]\n")
        cfg = d / "tiny.toml"
        cfg.write_text(KNN_EXPERIMENT.format(grid=d / "knn.toml"))
        run_experiment(load_experiment(cfg), d / "results", jobs=1, progress=False)
        analyze_results(d / "results", d / "reports")

    with _shared_store(tmp_path_factory, "knn_swept", build) as d:
        yield d


#: The experiment of :func:`subset_swept` (``{data}``, ``{knn}``, ``{bpr}``: its files): 2
#: folds, cutoffs 5 and 10, no test split.
SUBSET_EXPERIMENT = """
name = "tiny-noise"
seed = 3
[data]
source = "{data}"
format = "ml-csv"
[split]
folds = 2
[evaluation]
cutoffs = [5, 10]
test_split = false
[analysis]
pairs = 3
[[algorithms]]
name = "bpr-mf"
type = "bpr-mf"
grid = "{bpr}"
[[algorithms]]
name = "itemknn"
type = "itemknn"
grid = "{knn}"
"""


def write_subset_ratings(path: Path, n_users: int) -> Path:
    """The ratings of the embedded data's first ``n_users`` users, as an ml-csv file."""
    from dptune.data._dataset import load_dataset

    ds = load_dataset("ml-latest-small")
    keep = ds.ratings[ds.ratings["user"] < n_users]
    pd.DataFrame({"userId": ds.user_ids[keep["user"].to_numpy()],
                  "movieId": ds.item_ids[keep["item"].to_numpy()],
                  "rating": keep["rating"].to_numpy(),
                  "timestamp": keep["timestamp"].to_numpy()}).to_csv(path, index=False)
    return path


@pytest.fixture(scope="session")
def subset_swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """:data:`SUBSET_EXPERIMENT` on the embedded data's first 80 users (BPR-MF with 4 factors
    and 1 or 3 iterations, ItemKNN k in [5, 10]) swept once per test run by
    ``run_experiment``: the validation units alone (no noise floor), not analysed:
    ``tiny.toml``, its data and grids, and ``results/`` in the returned directory. Read only
    (:func:`_shared_store`)."""
    from dptune.config import load_experiment
    from dptune.sweeper._local import run_experiment

    def build(d: Path) -> None:
        write_subset_ratings(d / "ratings.csv", 80)
        (d / "bpr.toml").write_text(bpr_grid([4], [1, 3], [0.05]))
        (d / "knn.toml").write_text('family = "itemknn"\n[params.k]\nvalues = [5, 10]\n')
        (d / "tiny.toml").write_text(SUBSET_EXPERIMENT.format(
            data=d / "ratings.csv", bpr=d / "bpr.toml", knn=d / "knn.toml"))
        run_experiment(load_experiment(d / "tiny.toml"), d / "results", progress=False)

    with _shared_store(tmp_path_factory, "subset_swept", build) as d:
        yield d


@pytest.fixture(scope="session")
def synthetic_swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """:func:`write_synthetic_experiment` (name "synthetic", ``jobs = 1``) swept once per
    test run, not analysed: ``synthetic.toml``, its data and grids, and ``results/`` in the
    returned directory. Read only (:func:`_shared_store`)."""
    from dptune.sweeper._run import run_sweep

    def build(d: Path) -> None:
        cfg = write_synthetic_experiment(d, "synthetic", sweep="[sweep]\njobs = 1\n")
        run_sweep(cfg, d / "results", jobs=1, progress=False)

    with _shared_store(tmp_path_factory, "synthetic_swept", build) as d:
        yield d


def frames_result(dp, curves, *, datasets=None, best=None, noise_curves=None, verdict=None,
                  primary=("ndcg", 10), split=None, **parts):
    """An :class:`~dptune.analysis.AnalysisResult` of the given DP table and curves, as a caller
    without a store builds it: no pairs or p-values (empty frames), ``noise_curves`` as the A/A
    curves of a noise floor, ``primary`` as the options' metric@N, ``split`` as the manifest's;
    ``parts``: further fields (``comparisons``, ``dominance``, ``downstream``)."""
    import pandas as pd

    from dptune.analysis.dp.tables import PAIRS_COLUMNS, PVALUES_COLUMNS, DPEstimate
    from dptune.analysis.noise import FLOOR_COLUMNS, PVALUE_COLUMNS, NoiseFloor
    from dptune.analysis.options import AnalysisOptions
    from dptune.analysis.result import AnalysisResult

    noise = None
    if noise_curves is not None:
        noise = NoiseFloor(pvalues=pd.DataFrame(columns=PVALUE_COLUMNS), curves=noise_curves,
                           floor=pd.DataFrame(columns=FLOOR_COLUMNS))
    return AnalysisResult(
        dp=DPEstimate(pairs=pd.DataFrame(columns=PAIRS_COLUMNS),
                      pvalues=pd.DataFrame(columns=PVALUES_COLUMNS), table=dp, curves=curves),
        datasets=datasets, best=best, noise=noise, verdict=verdict, **parts,
        options=AnalysisOptions(primary_metric=primary[0], primary_cutoff=primary[1]),
        manifest={} if split is None else {"split": split})


#: Users of :func:`write_runs`: ids that differ only in how they are written, and ``NA``.
RUN_USERS = ("0042", "42", "u7", "NA")


#: Mean p-values of :func:`one_algorithm_frames`' metrics: two accuracy, two novelty.
ONE_ALGORITHM_P = (("ndcg", 0.1), ("recall", 0.3), ("epc", 0.2), ("efd", 0.25))


def one_algorithm_frames(algorithm: str = "knn"):
    """dp.csv and curves.csv of one algorithm (scope all, N = 10, 15 pairs, 3 folds, an
    interval around each DP), for a result built without a store (:func:`frames_result`)."""
    import pandas as pd

    dp = pd.DataFrame([{"algorithm": algorithm, "scope": "all", "metric": m, "cutoff": 10,
                        "n_pairs": 15, "n_possible_pairs": 15, "n_folds": 3, "mean_p": p,
                        "mean_p_sd": 0.01, "dp_per_25": 25 * p, "dp_per_25_plus_sd": 30 * p,
                        "dp_per_25_minus_sd": 20 * p, "ci_low": 25 * p * 0.5,
                        "ci_high": 25 * p * 1.5, "dp_sum": 15 * p, "sakai": 0.5,
                        "sakai_sd": 0.1, "no_evidence": False, "repeats": 1, "test": "t",
                        "correction": "none", "alpha": 0.05}
                       for m, p in ONE_ALGORITHM_P])
    curves = pd.DataFrame([{"algorithm": algorithm, "scope": "all", "metric": m, "cutoff": 10,
                            "position": i, "mean": 0.5, "sd": 0.1}
                           for m, _ in ONE_ALGORITHM_P for i in range(15)])
    return dp, curves


def one_algorithm_result(algorithm: str = "knn"):
    """:func:`frames_result` of :func:`one_algorithm_frames`, with its verdict (no claims)."""
    import pandas as pd

    from dptune.analysis.verdict.claims import CLAIM_COLUMNS
    from dptune.analysis.verdict.rules import verdict_table

    dp, curves = one_algorithm_frames(algorithm)
    none = pd.DataFrame(columns=CLAIM_COLUMNS)
    return frames_result(dp, curves, verdict=verdict_table(dp, none), comparisons=none)


def write_runs(root: Path, systems: tuple[str, ...], folds: tuple[str, ...] | None = None,
               users: tuple[str, ...] = RUN_USERS, seed: int = 0) -> tuple[Path, Path, Path]:
    """``root/runs`` (one run file per system; with ``folds``, one sub-folder per fold),
    ``root/qrels.txt`` and ``root/train.txt``: every user has relevant items."""
    rng = np.random.default_rng(seed)
    items = [f"i{k}" for k in range(30)]
    qrels = [f"{u} 0 {i} {rng.integers(3, 6)}" for u in users
             for i in rng.choice(items, 6, replace=False)]
    train = [f"{u} {i}" for u in users for i in rng.choice(items, 3, replace=False)]
    (root / "qrels.txt").write_text("\n".join(qrels) + "\n")
    (root / "train.txt").write_text("\n".join(train) + "\n")
    for fold in folds or ("",):
        d = root / "runs" / fold
        d.mkdir(parents=True, exist_ok=True)
        for s in systems:
            lines = [f"{u} Q0 {i} {r} {20 - r + rng.random():.6f} {s}" for u in users
                     for r, i in enumerate(rng.permutation(items)[:10], 1)]
            (d / s).write_text("\n".join(lines) + "\n")
    return root / "runs", root / "qrels.txt", root / "train.txt"


#: Run by :func:`ranx_scores` in a fresh process: ranx's per-query scores as JSON.
_RANX_SCRIPT = """
import json, sys
import ranx
a = json.load(sys.stdin)
qrels, run = ranx.Qrels(a["qrels"]), ranx.Run(a["run"])
ranx.evaluate(qrels, run, a["metrics"], **a["options"])
print(json.dumps({m: {q: float(v) for q, v in run.scores[m].items()} for m in a["metrics"]}))
"""


def ranx_scores(qrels: dict, run: dict, metrics: list[str],
                **options) -> dict[str, dict[str, float]]:
    """ranx's score of every query for each of ``metrics`` (``"ndcg@10"``...): ``qrels``
    (query -> item -> relevance) and ``run`` (query -> item -> score) as ``ranx.Qrels`` and
    ``ranx.Run``, ``ranx.evaluate(qrels, run, metrics, **options)``, the scores read from the
    run. Skips when ranx is not installed.

    ranx's own code runs in a fresh process with numba's JIT off (``NUMBA_DISABLE_JIT=1``: the
    interpreter runs the same functions, on a few dozen queries in a second) instead of
    compiling its kernels, about 40 s of CPU on a fresh clone's cold numba cache."""
    import importlib.util
    import json
    import subprocess
    import sys

    if importlib.util.find_spec("ranx") is None:
        pytest.skip("ranx is not installed")
    proc = subprocess.run([sys.executable, "-c", _RANX_SCRIPT],
                          input=json.dumps({"qrels": qrels, "run": run, "metrics": metrics,
                                            "options": options}),
                          env=dict(os.environ, NUMBA_DISABLE_JIT="1"), capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


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
