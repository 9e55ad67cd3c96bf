"""Store: the per-user result store (Parquet parts) and external runs (TREC files)."""

from dptune.store._frame import FrameStore
from dptune.store._noise_parts import (
    NOISE_DIR,
    deterministic_algorithms,
    noise_part_name,
    noise_part_paths,
    noise_trials,
    rank_configs,
    write_noise_part,
)
from dptune.store._outside import check_outside_store, results_dir_of
from dptune.store._per_user_file import PER_USER_COLUMNS
from dptune.store._runs import read_runs
from dptune.store._schema import NOISE_SCHEMA
from dptune.store._store import (
    FoldBuffer,
    FoldSlice,
    ResultStore,
    UnitResult,
    part_name,
)
from dptune.store._trec import (
    evaluate_run,
    read_qrels,
    read_run,
    read_train,
    write_per_user,
)

__all__ = [
    "UnitResult",
    "part_name",
    "ResultStore",
    "FoldBuffer",
    "FoldSlice",
    "read_run",
    "read_qrels",
    "read_train",
    "evaluate_run",
    "write_per_user",
    "read_runs",
    "FrameStore",
    "PER_USER_COLUMNS",
    "NOISE_DIR",
    "NOISE_SCHEMA",
    "deterministic_algorithms",
    "rank_configs",
    "noise_part_name",
    "noise_part_paths",
    "noise_trials",
    "write_noise_part",
    "check_outside_store",
    "results_dir_of",
]
