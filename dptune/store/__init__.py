"""Store: the per-user result store (Parquet parts) and external runs (TREC files)."""

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
]
